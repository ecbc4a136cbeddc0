//! Jacobians by every strategy: forward chunks (`jacobian_fwd`), reverse
//! sweeps (`jacobian_rev`) and `jacobian`'s choice between them, and
//! `jvps` (many tangents per pass) against one `jvp` per tangent, on
//! functions with dense, banded, block-diagonal, arrow-shaped and random
//! sparse structure, of every output shape, on both engines.
//!
//! References: the two modes compute the same sums of products in
//! different orders, so they agree to rounding (a relative 1e-12 of the
//! row's scale; the entries are sums of at most a few dozen terms of
//! magnitude O(1–10), whose rounding errors are ~1e-15 each); each lane of a
//! chunk runs the very operations of a one-tangent `jvp`, so `jvps` equals
//! `jvp` exactly; and the reverse rows are checked against central
//! differences (`common`).

#![allow(clippy::needless_range_loop)] // index loops are the differentiated code under test

mod common;

use deltad::{differentiate, Differentiable};

/// 2 inputs, 9 outputs (more outputs than inputs: forward mode is chosen).
#[differentiate]
fn curve(x: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; 9];
    for i in 0..9 {
        let t = i as f64 * 0.25;
        out[i] = (x[0] * t).sin() * x[1] + t * t * x[0].exp();
    }
    out
}

/// Tridiagonal: out[i] = x[i-1] - 2 x[i]² + x[i+1]·x[i].
#[differentiate]
fn banded(x: &[f64]) -> Vec<f64> {
    let n = x.len();
    let mut out = vec![0.0; n];
    for i in 0..n {
        let mut v = -2.0 * x[i] * x[i];
        if i > 0 {
            v += x[i - 1];
        }
        if i + 1 < n {
            v += x[i + 1] * x[i];
        }
        out[i] = v;
    }
    out
}

/// Blocks of 3: each block's outputs depend on its own inputs only.
#[differentiate]
fn blocks(x: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; x.len()];
    let mut b = 0;
    while b + 3 <= x.len() {
        let (u, v, w) = (x[b], x[b + 1], x[b + 2]);
        out[b] = u * v;
        out[b + 1] = v.sin() + w;
        out[b + 2] = (u - w).exp();
        b += 3;
    }
    out
}

/// Arrow: every output reads x[0]; output 0 reads every input.
#[differentiate]
fn arrow(x: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; x.len()];
    let mut total = 0.0;
    for i in 0..x.len() {
        total += x[i] * x[i];
    }
    out[0] = total;
    for i in 1..x.len() {
        out[i] = x[0] * x[i] + x[i].cos();
    }
    out
}

/// A random sparse pattern, fixed by `links` (each output reads three
/// inputs picked by a fixed table).
#[differentiate]
fn scattered(x: &[f64], #[no_grad] links: &[usize]) -> Vec<f64> {
    let mut out = vec![0.0; links.len() / 3];
    for r in 0..out.len() {
        let (a, b, c) = (links[3 * r], links[3 * r + 1], links[3 * r + 2]);
        out[r] = x[a] * x[b] - x[c].tanh();
    }
    out
}

/// Dense, an array result.
#[differentiate]
fn dense(x: &[f64; 4]) -> [f64; 5] {
    let s = x[0] + 2.0 * x[1] - x[2] * x[3];
    [
        s.sin(),
        s * s,
        x[0] * x[1] * x[2],
        (x[3] - x[0]).exp(),
        s / (1.0 + x[1] * x[1]),
    ]
}

#[derive(Clone, Copy, Debug, PartialEq, Differentiable)]
struct Pair {
    a: f64,
    b: f64,
}

/// A struct result from a struct and a real.
#[differentiate]
fn pair(p: &Pair, s: f64) -> Pair {
    Pair {
        a: p.a * s + p.b.sin(),
        b: p.a.hypot(p.b) * s,
    }
}

/// A real result (one row).
#[differentiate]
fn energy(x: &[f64]) -> f64 {
    let mut e = 0.0;
    for i in 0..x.len() {
        e += (x[i] * (i as f64 + 1.0)).sin() * x[i];
    }
    e
}

/// On the tape (`Vec::push` onto a local built in a loop keeps it there).
#[differentiate]
fn taped(x: &[f64]) -> Vec<f64> {
    let mut out = Vec::new();
    for i in 0..x.len() {
        out.push(x[i] * x[(i + 1) % x.len()]);
    }
    out.push(x.iter().map(|v| v * v).sum());
    out
}

fn points(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| 0.3 + 0.17 * i as f64 - 0.011 * (i * i) as f64)
        .collect()
}

/// Asserts two Jacobians (flat rows) agree to rounding.
fn assert_same(label: &str, a: &[Vec<f64>], b: &[Vec<f64>]) {
    assert_eq!(a.len(), b.len(), "{label}: row counts");
    for (i, (ra, rb)) in a.iter().zip(b).enumerate() {
        assert_eq!(ra.len(), rb.len(), "{label}: row {i} length");
        let scale = ra.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        for (j, (x, y)) in ra.iter().zip(rb).enumerate() {
            assert!(
                (x - y).abs() <= 1e-12 * scale,
                "{label}: J[{i}][{j}] = {x} by one mode, {y} by the other"
            );
        }
    }
}

/// Flat rows of slice-gradient Jacobians.
fn rows_x<G>(rows: Vec<G>, field: impl Fn(&G) -> Vec<f64>) -> Vec<Vec<f64>> {
    rows.iter().map(field).collect()
}

macro_rules! modes_agree {
    ($f:ident, $n:expr $(, $extra:expr)*) => {{
        let x = points($n);
        let (v_fwd, fwd) = $f::jacobian_fwd(&x $(, $extra)*);
        let (v_rev, rev) = $f::jacobian_rev(&x $(, $extra)*);
        let (v_any, any) = $f::jacobian(&x $(, $extra)*);
        let primal = $f(&x $(, $extra)*);
        assert_eq!(v_fwd, primal, "{}: forward value", stringify!($f));
        assert_eq!(v_rev, primal, "{}: reverse value", stringify!($f));
        assert_eq!(v_any, primal, "{}: chosen value", stringify!($f));
        let (fwd, rev, any) = (
            rows_x(fwd, |g| g.x.clone()),
            rows_x(rev, |g| g.x.clone()),
            rows_x(any, |g| g.x.clone()),
        );
        assert_same(stringify!($f), &fwd, &rev);
        assert_same(stringify!($f), &any, &rev);
        // The reverse rows against central differences of each output.
        for (i, row) in rev.iter().enumerate() {
            let fd = common::finite_difference(|p| $f(p $(, $extra)*)[i], &x);
            common::assert_close(row, &fd, &format!("{} row {i}", stringify!($f)));
        }
        rev
    }};
}

#[test]
fn forward_and_reverse_jacobians_agree_on_every_structure() {
    modes_agree!(curve, 2);
    // Across chunk boundaries: n = 1, 7, 8, 9, 17 inputs.
    for n in [1, 7, 8, 9, 17] {
        let rev = modes_agree!(banded, n);
        for (i, row) in rev.iter().enumerate() {
            for (j, &d) in row.iter().enumerate() {
                if (i as isize - j as isize).abs() > 1 {
                    assert_eq!(d, 0.0, "banded n={n}: J[{i}][{j}] off the band");
                }
            }
        }
    }
    modes_agree!(blocks, 12);
    modes_agree!(arrow, 10);
    let links: Vec<usize> = (0..30).map(|k| (k * 7 + k * k * 3) % 11).collect();
    modes_agree!(scattered, 11, &links);
    // A real result: one row, the gradient.
    let x = points(13);
    let (value, fwd) = energy::jacobian_fwd(&x);
    assert_eq!(value, energy(&x));
    let (_, rev) = energy::jacobian(&x);
    assert_same("energy", &[fwd[0].x.clone()], &[rev[0].x.clone()]);
    assert_same("energy (grad)", &[fwd[0].x.clone()], &[energy::grad(&x).x]);
    modes_agree!(taped, 10);
}

#[test]
fn forward_and_reverse_jacobians_agree_on_arrays_and_structs() {
    let x = [0.4, -1.1, 0.8, 0.25];
    let (vf, fwd) = dense::jacobian_fwd(&x);
    let (vr, rev) = dense::jacobian_rev(&x);
    let (va, any) = dense::jacobian(&x);
    assert_eq!(vf, dense(&x));
    assert_eq!(vr, vf);
    assert_eq!(va, vf);
    let flat = |rows: &[dense::Grad]| rows.iter().map(|g| g.x.to_vec()).collect::<Vec<_>>();
    assert_same("dense", &flat(&fwd), &flat(&rev));
    assert_same("dense (chosen)", &flat(&any), &flat(&rev));

    let p = Pair { a: 0.7, b: -0.3 };
    let (vf, fwd) = pair::jacobian_fwd(&p, 1.9);
    let (vr, rev) = pair::jacobian_rev(&p, 1.9);
    let (va, any) = pair::jacobian(&p, 1.9);
    assert_eq!(vf, pair(&p, 1.9));
    assert_eq!(vr, vf);
    assert_eq!(va, vf);
    let flat = |rows: &[pair::Grad]| {
        rows.iter()
            .map(|g| vec![g.p.a, g.p.b, g.s])
            .collect::<Vec<_>>()
    };
    assert_same("pair", &flat(&fwd), &flat(&rev));
    assert_same("pair (chosen)", &flat(&any), &flat(&rev));
}

/// A tangent too short for the inputs is named by its place among all the
/// tangents, in whichever chunk it falls.
#[test]
#[should_panic(expected = "tangent 9 has 5 reals for `x`, which has 6")]
fn a_short_tangent_is_named() {
    let x = points(6);
    let tangents: Vec<banded::Grad> = (0..10)
        .map(|k| banded::Grad {
            x: vec![1.0; if k == 9 { 5 } else { 6 }],
        })
        .collect();
    banded::jvps(&x, &tangents);
}

/// Of two misshapen tangents, the first is named.
#[test]
#[should_panic(expected = "tangent 1 has 4 reals for `x`, which has 6")]
fn the_first_misshapen_tangent_is_named() {
    let x = points(6);
    let tangents: Vec<banded::Grad> = [6, 4, 3, 6]
        .into_iter()
        .map(|len| banded::Grad { x: vec![1.0; len] })
        .collect();
    banded::jvps(&x, &tangents);
}

/// Two slices, on the tape.
#[differentiate(tape)]
fn two_slices(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i % b.len()];
    }
    s * s
}

/// Rows of reals: a structured parameter.
#[differentiate]
fn nested_rows(rows: &[Vec<f64>]) -> f64 {
    let mut s = 0.0;
    for row in rows {
        for x in row {
            s += x * x * x;
        }
    }
    s
}

/// Weights and biases of other lengths: a user type holding buffers.
#[derive(Clone, Debug, PartialEq, Differentiable)]
struct Layer {
    w: Vec<f64>,
    b: Vec<f64>,
}

/// A layer's energy at `x`, compiled.
#[differentiate(compiled)]
fn layer_energy(layer: &Layer, x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..layer.w.len() {
        let z = layer.w[i] * x[i] + layer.b[i % layer.b.len()];
        s += z.tanh() * z;
    }
    s
}

/// The same on the tape.
#[differentiate(tape)]
fn layer_energy_tape(layer: &Layer, x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..layer.w.len() {
        let z = layer.w[i] * x[i] + layer.b[i % layer.b.len()];
        s += z.tanh() * z;
    }
    s
}

/// The message of the panic `f` raises.
fn panic_message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let payload = std::panic::catch_unwind(f).expect_err("a misshapen tangent must be refused");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// A tangent with another number of reals for a parameter than the
/// parameter has, even with as many reals in all, is refused, naming the
/// parameter, by every function taking tangents on both engines: read end
/// to end, it would be another direction (`a` one real too long and `b` one
/// too short would move a real from one parameter to the other). Within
/// one parameter of a nested or user type, the buffers inside must have the
/// parameter's lengths too (`misshapen_insides_are_refused`).
#[test]
fn misshapen_tangents_are_refused() {
    let v = points(7);
    let (s, a, p) = (0.8, [0.3, -1.2, 2.0], Pair { a: 0.7, b: -0.3 });
    let long = every_kind::Grad {
        s: 1.0,
        v: vec![1.0; 8],
        a: [0.0; 3],
        p: Pair { a: 0.0, b: 0.0 },
    };
    let expected = "the tangent has 8 reals for `v`, which has 7";
    let message = panic_message(|| {
        every_kind::jvp(s, &v, a, &p, &long);
    });
    assert!(message.contains(expected), "jvp: {message}");
    let mut many = vec![long.clone(); 3];
    many[0].v.pop();
    let message = panic_message(|| {
        every_kind::jvps(s, &v, a, &p, &many);
    });
    assert!(
        message.contains("tangent 1 has 8 reals for `v`, which has 7"),
        "jvps: {message}"
    );
    let energy = every_kind_energy::Grad {
        s: 1.0,
        v: vec![1.0; 6],
        a: [0.0; 3],
        p: Pair { a: 0.0, b: 0.0 },
    };
    let expected = "the tangent has 6 reals for `v`, which has 7";
    let message = panic_message(|| {
        every_kind_energy::hvp(s, &v, a, &p, &energy);
    });
    assert!(message.contains(expected), "hvp: {message}");
    let message = panic_message(|| {
        every_kind_energy::grad_and_hvp(s, &v, a, &p, &energy);
    });
    assert!(message.contains(expected), "grad_and_hvp: {message}");
    let message = panic_message(|| {
        every_kind_energy::hvps(s, &v, a, &p, std::slice::from_ref(&energy));
    });
    assert!(
        message.contains("tangent 0 has 6 reals for `v`, which has 7"),
        "hvps: {message}"
    );
    // On the tape: as many reals in all, split otherwise.
    let (x, y) = (points(4), points(3));
    let split = two_slices::Grad {
        a: vec![1.0; 5],
        b: vec![1.0; 2],
    };
    let expected = "the tangent has 5 reals for `a`, which has 4";
    let message = panic_message(|| {
        two_slices::jvp(&x, &y, &split);
    });
    assert!(message.contains(expected), "tape jvp: {message}");
    let message = panic_message(|| {
        two_slices::hvp(&x, &y, &split);
    });
    assert!(message.contains(expected), "tape hvp: {message}");
    let message = panic_message(|| {
        two_slices::jvps(&x, &y, std::slice::from_ref(&split));
    });
    assert!(
        message.contains("tangent 0 has 5 reals for `a`, which has 4"),
        "tape jvps: {message}"
    );
    // A structured parameter: its reals counted.
    let rows = vec![points(3), points(3)];
    let short = nested_rows::Grad {
        rows: vec![vec![1.0; 3], vec![1.0; 2]],
    };
    let message = panic_message(|| {
        nested_rows::jvp(&rows, &short);
    });
    assert!(
        message.contains("the tangent has 5 reals for `rows`, which has 6"),
        "nested jvp: {message}"
    );
    // Well shaped, accepted.
    let fine = two_slices::Grad {
        a: vec![1.0; 4],
        b: vec![1.0; 3],
    };
    assert_eq!(
        two_slices::jvps(&x, &y, std::slice::from_ref(&fine)).1[0],
        two_slices::jvp(&x, &y, &fine).1
    );
}

/// A tangent of a nested or user type with as many reals as its parameter
/// but buffers of other lengths inside is refused, naming the parameter, on
/// both engines; one shaped like its parameter gives the derivative along
/// it (against central differences).
#[test]
fn misshapen_insides_are_refused() {
    let expected =
        |which: &str, param: &str| format!("{which} is shaped otherwise than `{param}` inside");
    // Rows of 3 and 3 reals, a tangent of rows of 2 and 4.
    let rows = vec![points(3), points(3)];
    let split = nested_rows::Grad {
        rows: vec![vec![1.0; 2], vec![1.0; 4]],
    };
    let message = panic_message(|| {
        nested_rows::jvp(&rows, &split);
    });
    assert!(
        message.contains(&expected("the tangent", "rows")),
        "nested jvp: {message}"
    );
    let message = panic_message(|| {
        nested_rows::jvps(&rows, &[split.clone(), split.clone()]);
    });
    assert!(
        message.contains(&expected("tangent 0", "rows")),
        "nested jvps: {message}"
    );
    let message = panic_message(|| {
        nested_rows::hvp(&rows, &split);
    });
    assert!(
        message.contains(&expected("the tangent", "rows")),
        "nested hvp: {message}"
    );
    // A user type: `w` of 3 reals and `b` of 1, a tangent of 2 and 2.
    let layer = Layer {
        w: vec![0.3, -0.7, 1.1],
        b: vec![0.2],
    };
    let x = points(3);
    let split = |w: usize, b: usize| Layer {
        w: vec![0.5; w],
        b: vec![-0.25; b],
    };
    // Tangents along `layer` alone, for each engine.
    let compiled = |w, b| layer_energy::Grad {
        layer: split(w, b),
        x: vec![0.0; 3],
    };
    let tape = |w, b| layer_energy_tape::Grad {
        layer: split(w, b),
        x: vec![0.0; 3],
    };
    let message = panic_message(|| {
        layer_energy::jvp(&layer, &x, &compiled(2, 2));
    });
    assert!(
        message.contains(&expected("the tangent", "layer")),
        "struct jvp: {message}"
    );
    let message = panic_message(|| {
        layer_energy::hvps(&layer, &x, &[compiled(3, 1), compiled(2, 2)]);
    });
    assert!(
        message.contains(&expected("tangent 1", "layer")),
        "struct hvps: {message}"
    );
    let message = panic_message(|| {
        layer_energy_tape::jvp(&layer, &x, &tape(2, 2));
    });
    assert!(
        message.contains(&expected("the tangent", "layer")),
        "tape jvp: {message}"
    );
    // Shaped like the parameter: the derivative along it, on both engines.
    let energy = |w: &[f64], b: f64| {
        layer_energy(
            &Layer {
                w: w.to_vec(),
                b: vec![b],
            },
            &x,
        )
    };
    let h = 1e-6;
    let along = |t: f64| {
        let w: Vec<f64> = layer.w.iter().map(|w| w + 0.5 * t).collect();
        energy(&w, layer.b[0] - 0.25 * t)
    };
    let central = (along(h) - along(-h)) / (2.0 * h);
    let (_, compiled) = layer_energy::jvp(&layer, &x, &compiled(3, 1));
    let (_, tape) = layer_energy_tape::jvp(&layer, &x, &tape(3, 1));
    // (Central differences with h = 1e-6 on values of order 1: error about
    // h² + ε/h, below 1e-8.)
    assert!(
        (compiled - central).abs() < 1e-7,
        "{compiled} against {central}"
    );
    assert!((tape - compiled).abs() < 1e-12, "{tape} against {compiled}");
}

#[test]
fn many_tangents_in_chunks_equal_one_jvp_each() {
    // Partial and whole chunks: a last chunk of at most half a chunk's
    // directions (1, 4, 12 = 8 + 4, 19 = 8 + 8 + 3) runs on half the lanes,
    // one of more (5, 13) on all of them.
    let x = points(6);
    for count in [0, 1, 4, 5, 8, 12, 13, 19] {
        let tangents: Vec<banded::Grad> = (0..count)
            .map(|k| banded::Grad {
                x: (0..6).map(|j| ((k * 5 + j * 3) % 7) as f64 - 3.0).collect(),
            })
            .collect();
        let (value, many) = banded::jvps(&x, &tangents);
        assert_eq!(value, banded(&x));
        assert_eq!(many.len(), count);
        for (t, d) in tangents.iter().zip(&many) {
            let (_, one) = banded::jvp(&x, t);
            assert_eq!(d, &one, "a lane of a chunk is a jvp");
        }
        let (value, many) = taped::jvps(
            &x,
            &tangents
                .iter()
                .map(|t| taped::Grad { x: t.x.clone() })
                .collect::<Vec<_>>(),
        );
        assert_eq!(value, taped(&x));
        assert_eq!(many.len(), count);
    }
    // Real and struct results.
    let tangents: Vec<energy::Grad> = (0..10)
        .map(|k| energy::Grad {
            x: (0..6).map(|j| if j == k % 6 { 1.0 } else { 0.5 }).collect(),
        })
        .collect();
    let (_, many) = energy::jvps(&x, &tangents);
    for (t, d) in tangents.iter().zip(&many) {
        assert_eq!(*d, energy::jvp(&x, t).1);
    }
    let p = Pair { a: 0.7, b: -0.3 };
    let tangents: Vec<pair::Grad> = (0..3)
        .map(|k| pair::Grad {
            p: Pair {
                a: k as f64,
                b: 1.0 - k as f64,
            },
            s: 0.5 * k as f64,
        })
        .collect();
    let (_, many) = pair::jvps(&p, 1.9, &tangents);
    for (t, d) in tangents.iter().zip(&many) {
        assert_eq!(*d, pair::jvp(&p, 1.9, t).1);
    }
}

/// Every kind of parameter at once: chunked passes read each tangent's
/// fields where the tangent holds them (a real, a slice, an array; a
/// struct's reals copied out).
#[differentiate(compiled)]
fn every_kind(s: f64, v: &[f64], a: [f64; 3], p: &Pair) -> Vec<f64> {
    let mut out = vec![0.0; v.len()];
    for i in 0..v.len() {
        out[i] = v[i] * s + a[i % 3] * p.a - (v[i] * p.b).sin();
    }
    out
}

/// Its sum of squares: a real for `hvps`.
#[differentiate(compiled)]
fn every_kind_energy(s: f64, v: &[f64], a: [f64; 3], p: &Pair) -> f64 {
    let r = every_kind(s, v, a, p);
    let mut e = 0.0;
    for i in 0..r.len() {
        e += r[i] * r[i];
    }
    e
}

#[test]
fn chunked_passes_read_tangents_of_every_parameter_kind() {
    let v = points(7);
    let (s, a, p) = (0.8, [0.3, -1.2, 2.0], Pair { a: 0.7, b: -0.3 });
    let direction = |k: usize, j: usize| ((k * 5 + j * 3) % 7) as f64 - 3.0;
    // 11 tangents: a full chunk of 8, then a half chunk.
    let tangents: Vec<every_kind::Grad> = (0..11)
        .map(|k| every_kind::Grad {
            s: direction(k, 0),
            v: (0..7).map(|j| direction(k, j + 1)).collect(),
            a: [direction(k, 8), direction(k, 9), direction(k, 10)],
            p: Pair {
                a: direction(k, 11),
                b: direction(k, 12),
            },
        })
        .collect();
    let (value, many) = every_kind::jvps(s, &v, a, &p, &tangents);
    assert_eq!(value, every_kind(s, &v, a, &p));
    let one: Vec<Vec<f64>> = tangents
        .iter()
        .map(|t| every_kind::jvp(s, &v, a, &p, t).1)
        .collect();
    assert_same("jvps", &many, &one);
    let vs: Vec<every_kind_energy::Grad> = tangents
        .iter()
        .map(|t| every_kind_energy::Grad {
            s: t.s,
            v: t.v.clone(),
            a: t.a,
            p: t.p,
        })
        .collect();
    let flat = |g: &every_kind_energy::Grad| {
        let mut flat = vec![g.s];
        flat.extend(&g.v);
        flat.extend(g.a);
        flat.extend([g.p.a, g.p.b]);
        flat
    };
    let many: Vec<Vec<f64>> = every_kind_energy::hvps(s, &v, a, &p, &vs)
        .iter()
        .map(flat)
        .collect();
    let one: Vec<Vec<f64>> = vs
        .iter()
        .map(|t| flat(&every_kind_energy::hvp(s, &v, a, &p, t)))
        .collect();
    assert_same("hvps", &many, &one);
}

/// `jvps_into` writes what `jvps` returns into the caller's `Vec`: in the
/// memory of the `Vec` results already there (called again, no new
/// results), grown or cut to the tangents' count; for `Vec`, array, real and
/// struct results, on both engines.
#[test]
fn jvps_into_writes_into_the_results_it_is_given() {
    let x = points(6);
    let tangents = |count: usize| -> Vec<banded::Grad> {
        (0..count)
            .map(|k| banded::Grad {
                x: (0..6).map(|j| ((k * 3 + j) % 5) as f64 - 2.0).collect(),
            })
            .collect()
    };
    let mut out: Vec<Vec<f64>> = Vec::new();
    for count in [13, 13, 4, 19] {
        let t = tangents(count);
        let before: Vec<*const f64> = out.iter().map(|column| column.as_ptr()).collect();
        let value = banded::jvps_into(&x, &t, &mut out);
        assert_eq!(value, banded(&x));
        assert_eq!(out, banded::jvps(&x, &t).1, "{count} tangents");
        // The results that were there kept their memory.
        for (k, at) in before.iter().enumerate().take(count) {
            assert_eq!(out[k].as_ptr(), *at, "result {k} of {count} moved");
        }
        let taped_t: Vec<taped::Grad> = t.iter().map(|t| taped::Grad { x: t.x.clone() }).collect();
        let mut taped_out = vec![vec![1.0; 2]; 30];
        let value = taped::jvps_into(&x, &taped_t, &mut taped_out);
        assert_eq!(value, taped(&x));
        assert_eq!(taped_out, taped::jvps(&x, &taped_t).1, "on the tape");
    }
    let y = [0.3, -1.1, 0.8, 0.5];
    let t: Vec<dense::Grad> = (0..11)
        .map(|k| dense::Grad {
            x: [k as f64, 1.0, -0.5 * k as f64, 2.0],
        })
        .collect();
    let mut out = vec![[9.0; 5]; 3];
    dense::jvps_into(&y, &t, &mut out);
    assert_eq!(out, dense::jvps(&y, &t).1);
    let t: Vec<energy::Grad> = (0..9)
        .map(|k| energy::Grad {
            x: (0..6).map(|j| (j * k % 4) as f64).collect(),
        })
        .collect();
    let mut out = vec![7.0; 20];
    energy::jvps_into(&x, &t, &mut out);
    assert_eq!(out, energy::jvps(&x, &t).1);
    let p = Pair { a: 0.7, b: -0.3 };
    let t = [pair::Grad {
        p: Pair { a: 1.0, b: 0.5 },
        s: -2.0,
    }];
    let mut out = Vec::new();
    pair::jvps_into(&p, 1.9, &t, &mut out);
    assert_eq!(out, pair::jvps(&p, 1.9, &t).1);
}

/// Long buffers (300 reals, past the length from which a chunk pass's
/// buffers are kept for the next pass): a callee's result, a local buffer
/// the forward pass is done with, a shadowing `let`, and the result.
#[differentiate]
fn smoothed(x: &[f64]) -> Vec<f64> {
    let n = x.len();
    let mut s = vec![0.0; n];
    for i in 0..n {
        s[i] = (x[i] * x[(i + 1) % n]).sin();
    }
    s
}

#[differentiate]
fn long_stages(x: &[f64], w: f64) -> Vec<f64> {
    let n = x.len();
    let s = smoothed(x);
    let mut t = vec![0.0; n];
    for i in 0..n {
        t[i] = s[i] * w + x[(i + 7) % n];
    }
    let t = smoothed(&t);
    let mut out = vec![0.0; n];
    for i in 0..n {
        out[i] = t[i] * s[(i + 3) % n] - x[i] * w;
    }
    out
}

#[test]
fn chunk_passes_reuse_the_memory_of_the_passes_before() {
    let x: Vec<f64> = (0..300).map(|j| 0.8 * (0.37 * j as f64).sin()).collect();
    let w = 0.7;
    // 19 tangents: two full chunks and a half one; three calls in a row,
    // the later ones on the memory the earlier ones left.
    let tangents: Vec<long_stages::Grad> = (0..19)
        .map(|k| long_stages::Grad {
            x: (0..300)
                .map(|j| ((k * 5 + j * 3) % 7) as f64 - 3.0)
                .collect(),
            w: k as f64 * 0.25,
        })
        .collect();
    for call in 0..3 {
        let (value, many) = long_stages::jvps(&x, w, &tangents);
        assert_eq!(value, long_stages(&x, w), "call {call}: value");
        for (k, (t, d)) in tangents.iter().zip(&many).enumerate() {
            assert_eq!(d, &long_stages::jvp(&x, w, t).1, "call {call}: tangent {k}");
        }
    }
    // Columns in chunks (a long result, 301 input reals), against the rows
    // by reverse sweeps and central differences.
    let (_, fwd) = long_stages::jacobian_fwd(&x, w);
    let (_, rev) = long_stages::jacobian_rev(&x, w);
    let flat = |rows: &[long_stages::Grad]| {
        rows.iter()
            .map(|g| g.x.iter().copied().chain([g.w]).collect())
            .collect::<Vec<Vec<f64>>>()
    };
    assert_same("long_stages", &flat(&fwd), &flat(&rev));
    let point: Vec<f64> = x.iter().copied().chain([w]).collect();
    for i in [0, 150, 299] {
        let fd = common::finite_difference(|p| long_stages(&p[..300], p[300])[i], &point);
        common::assert_close(&flat(&rev)[i], &fd, &format!("long_stages row {i}"));
    }
    let pattern = long_stages::jacobian_pattern(&x, w);
    let (_, sparse) = long_stages::sparse_jacobian(&x, w, &pattern);
    assert_same("long_stages (sparse)", &sparse.to_dense(), &flat(&rev));
}

/// A real function with a dense Hessian of 11 inputs (a partial chunk).
#[differentiate]
fn coupled(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        for j in 0..x.len() {
            s += (x[i] * x[j] * 0.1).sin() * (i + 2 * j) as f64;
        }
    }
    s + x.iter().map(|v| v.exp()).sum::<f64>()
}

#[test]
fn hessians_in_chunks_equal_one_hvp_per_row() {
    for n in [1, 8, 11] {
        let x = points(n);
        let hessian = coupled::hessian(&x);
        assert_eq!(hessian.len(), n);
        let units: Vec<coupled::Grad> = (0..n)
            .map(|i| coupled::Grad {
                x: (0..n).map(|j| if i == j { 1.0 } else { 0.0 }).collect(),
            })
            .collect();
        let by_hvp: Vec<Vec<f64>> = units.iter().map(|u| coupled::hvp(&x, u).x).collect();
        let rows: Vec<Vec<f64>> = hessian.iter().map(|g| g.x.clone()).collect();
        assert_same("hessian", &rows, &by_hvp);
        // Symmetric to rounding.
        let transposed: Vec<Vec<f64>> = (0..n)
            .map(|j| rows.iter().map(|r| r[j]).collect())
            .collect();
        assert_same("hessian symmetry", &rows, &transposed);
        // hvps along arbitrary directions, against one hvp each.
        let vs: Vec<coupled::Grad> = (0..(n + 3))
            .map(|k| coupled::Grad {
                x: (0..n).map(|j| ((k * 3 + j) % 5) as f64 - 2.0).collect(),
            })
            .collect();
        let many: Vec<Vec<f64>> = coupled::hvps(&x, &vs).into_iter().map(|g| g.x).collect();
        let one: Vec<Vec<f64>> = vs.iter().map(|v| coupled::hvp(&x, v).x).collect();
        assert_same("hvps", &many, &one);
        // The diagonal and the Laplacian from the same rows.
        let diagonal = coupled::hessian_diagonal(&x).x;
        for i in 0..n {
            assert_eq!(diagonal[i], rows[i][i]);
        }
        let trace: f64 = diagonal.iter().sum();
        assert_eq!(coupled::laplacian(&x), trace);
    }
}

/// Asserts no two columns of one colour share a row.
fn assert_valid_colouring(pattern: &deltad::SparsityPattern) {
    for i in 0..pattern.nrows() {
        let row = pattern.row(i);
        for (a, &j) in row.iter().enumerate() {
            for &k in &row[a + 1..] {
                assert_ne!(
                    pattern.colour_of()[j],
                    pattern.colour_of()[k],
                    "row {i}: columns {j} and {k}"
                );
            }
        }
    }
}

/// The sparse Jacobian over the detected pattern equals the dense reverse
/// one to rounding, and every nonzero of the dense one is in the pattern.
macro_rules! sparse_agrees {
    ($f:ident, $x:expr $(, $extra:expr)*) => {{
        let x = $x;
        let pattern = $f::jacobian_pattern(&x $(, $extra)*);
        assert_valid_colouring(&pattern);
        let (value, sparse) = $f::sparse_jacobian(&x $(, $extra)*, &pattern);
        assert_eq!(value, $f(&x $(, $extra)*));
        let (_, rev) = $f::jacobian_rev(&x $(, $extra)*);
        let dense: Vec<Vec<f64>> = rev.iter().map(|g| g.x.clone()).collect();
        for (i, row) in dense.iter().enumerate() {
            for (j, &d) in row.iter().enumerate() {
                if d != 0.0 {
                    assert!(pattern.row(i).contains(&j), "{}: J[{i}][{j}] = {d} outside the pattern", stringify!($f));
                }
            }
        }
        assert_same(stringify!($f), &sparse.to_dense(), &dense);
        pattern
    }};
}

#[test]
fn sparse_jacobians_over_detected_patterns() {
    // Tridiagonal: exactly the band, three colours at any size.
    for n in [1, 2, 9, 40] {
        let pattern = sparse_agrees!(banded, points(n));
        assert_eq!(pattern.nnz(), 3 * n - 2, "banded n={n}");
        assert_eq!(pattern.colours(), n.min(3), "banded n={n}");
    }
    // Block-diagonal: three colours, each row two entries.
    let pattern = sparse_agrees!(blocks, points(12));
    assert_eq!(pattern.colours(), 3);
    assert_eq!(pattern.nnz(), 24);
    // Arrow: row 0 is dense, so every column gets its own colour.
    let pattern = sparse_agrees!(arrow, points(10));
    assert_eq!(pattern.row(0).len(), 10);
    assert_eq!(pattern.row(5), &[0, 5]);
    // Random sparse, and dense.
    let links: Vec<usize> = (0..30).map(|k| (k * 7 + k * k * 3) % 11).collect();
    let pattern = sparse_agrees!(scattered, points(11), &links);
    for r in 0..10 {
        let mut expected = vec![links[3 * r], links[3 * r + 1], links[3 * r + 2]];
        expected.sort_unstable();
        expected.dedup();
        assert_eq!(pattern.row(r), &expected[..], "scattered row {r}");
    }
    sparse_agrees!(curve, points(2));
    // On the tape: the pattern from the recorded graph.
    let pattern = sparse_agrees!(taped, points(10));
    assert_eq!(pattern.row(3), &[3, 4]);
    assert_eq!(pattern.row(10).len(), 10);
}

#[test]
fn sparse_jacobians_of_arrays_and_structs() {
    let x = [0.4, -1.1, 0.8, 0.25];
    let pattern = dense::jacobian_pattern(&x);
    let (_, sparse) = dense::sparse_jacobian(&x, &pattern);
    let (_, rev) = dense::jacobian_rev(&x);
    let rows: Vec<Vec<f64>> = rev.iter().map(|g| g.x.to_vec()).collect();
    assert_same("dense", &sparse.to_dense(), &rows);
    assert_eq!(pattern.row(2), &[0, 1, 2]);

    let p = Pair { a: 0.7, b: -0.3 };
    let pattern = pair::jacobian_pattern(&p, 1.9);
    let (value, sparse) = pair::sparse_jacobian(&p, 1.9, &pattern);
    assert_eq!(value, pair(&p, 1.9));
    let (_, rev) = pair::jacobian_rev(&p, 1.9);
    let rows: Vec<Vec<f64>> = rev.iter().map(|g| vec![g.p.a, g.p.b, g.s]).collect();
    assert_same("pair", &sparse.to_dense(), &rows);
}

#[test]
#[should_panic(
    expected = "the sparsity pattern has 5 columns, the function 6 differentiated input reals"
)]
fn a_pattern_of_other_dimensions_is_refused() {
    let pattern = banded::jacobian_pattern(&points(5));
    let _ = banded::sparse_jacobian(&points(6), &pattern);
}

/// Reals, arrays and slices together: chunked Hessian rows read each
/// parameter's adjoint tangents lane by lane (an array's elements once read
/// the lane of their own index).
#[differentiate]
fn mixed(a: f64, v: [f64; 2], w: &[f64]) -> f64 {
    a * a * v[0] + (v[1] * w[0]).sin() + w[1].exp() * a
}

#[test]
fn chunked_hessians_of_reals_arrays_and_slices() {
    let (a, v, w) = (0.5, [1.5, -0.5], [0.25, 0.75]);
    let flat = |g: &mixed::Grad| vec![g.a, g.v[0], g.v[1], g.w[0], g.w[1]];
    let rows: Vec<Vec<f64>> = mixed::hessian(a, v, &w).iter().map(flat).collect();
    let by_hvp: Vec<Vec<f64>> = (0..5)
        .map(|i| {
            let mut u = mixed::Grad {
                a: 0.0,
                v: [0.0; 2],
                w: vec![0.0; 2],
            };
            match i {
                0 => u.a = 1.0,
                1 | 2 => u.v[i - 1] = 1.0,
                _ => u.w[i - 3] = 1.0,
            }
            flat(&mixed::hvp(a, v, &w, &u))
        })
        .collect();
    assert_same("mixed hessian", &rows, &by_hvp);
    // Row of v0 by hand: ∂/∂v0 of (a² v0 + ...) = a²: (2a, 0, 0, 0, 0).
    assert_eq!(rows[1], vec![2.0 * a, 0.0, 0.0, 0.0, 0.0]);
}

/// Rosenbrock's chain: a tridiagonal Hessian.
#[differentiate]
fn chain(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        s += 100.0 * (x[i + 1] - x[i] * x[i]).powi(2) + (1.0 - x[i]).powi(2);
    }
    s
}

/// An arrow-shaped Hessian: x₀ couples to every input, the others only to
/// themselves.
#[differentiate]
fn hub(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 1..x.len() {
        s += (x[0] * x[i]).sin() + x[i].powi(4);
    }
    s
}

/// The same chain on the tape (its Hessian pattern is dense there).
#[differentiate(tape)]
fn chain_taped(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        s += 100.0 * (x[i + 1] - x[i] * x[i]).powi(2) + (1.0 - x[i]).powi(2);
    }
    s
}

macro_rules! sparse_hessian_agrees {
    ($f:ident, $x:expr) => {{
        let x = $x;
        let pattern = $f::hessian_pattern(&x);
        assert!(pattern.is_symmetric());
        let sparse = $f::sparse_hessian(&x, &pattern);
        let dense: Vec<Vec<f64>> = $f::hessian(&x).iter().map(|g| g.x.clone()).collect();
        for (i, row) in dense.iter().enumerate() {
            for (j, &h) in row.iter().enumerate() {
                if h != 0.0 {
                    assert!(
                        pattern.row(i).contains(&j),
                        "{}: H[{i}][{j}] = {h} outside the pattern",
                        stringify!($f)
                    );
                }
            }
        }
        assert_same(stringify!($f), &sparse.to_dense(), &dense);
        pattern
    }};
}

#[test]
fn sparse_hessians_over_star_coloured_patterns() {
    for n in [2, 3, 10, 30] {
        let pattern = sparse_hessian_agrees!(chain, points(n));
        assert_eq!(pattern.nnz(), 3 * n - 2, "chain n={n}");
        // A path of 2 or 3 vertices takes 2 colours, a longer one 3 (a path
        // of four vertices may not be two-coloured).
        assert_eq!(pattern.colours(), if n <= 3 { 2 } else { 3 }, "chain n={n}");
    }
    let pattern = sparse_hessian_agrees!(hub, points(20));
    assert_eq!(pattern.colours(), 2);
    assert_eq!(pattern.nnz(), 20 + 2 * 19);
    let pattern = sparse_hessian_agrees!(coupled, points(9));
    assert_eq!(pattern.nnz(), 81);
    let pattern = sparse_hessian_agrees!(chain_taped, points(7));
    assert_eq!(pattern.nnz(), 49, "on the tape the pattern is dense");
}

/// Which input output 1 reads depends on a branch.
#[differentiate]
fn switching(x: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; 3];
    out[0] = x[0] * x[1];
    if x[0] > 0.0 {
        out[1] = x[2].sin();
    } else {
        out[1] = x[3].exp();
    }
    out[2] = x[3] * x[2];
    out
}

/// The documented behaviour of a pattern that depends on a branch: it is
/// the pattern where it was detected; in the other region it misses the
/// entries the other branch reads (and `sparse_jacobian` leaves them zero),
/// while the union of the two regions' patterns gives the Jacobian in both.
#[test]
fn patterns_that_depend_on_a_branch() {
    let (positive, negative) = ([0.5, 1.0, 0.3, -0.2], [-0.5, 1.0, 0.3, -0.2]);
    let here = switching::jacobian_pattern(&positive);
    let there = switching::jacobian_pattern(&negative);
    assert_eq!(here.row(1), &[2]);
    assert_eq!(there.row(1), &[3]);
    let dense = |x: &[f64]| -> Vec<Vec<f64>> {
        switching::jacobian_rev(x)
            .1
            .into_iter()
            .map(|g| g.x)
            .collect()
    };
    // Detected at one point, used at the other: the other branch's entry
    // is outside the pattern, so it is not computed.
    let (_, wrong) = switching::sparse_jacobian(&negative, &here);
    assert_eq!(wrong.get(1, 3), 0.0);
    assert_ne!(dense(&negative)[1][3], 0.0);
    // The union holds in both regions.
    let both = here.union(&there);
    assert_eq!(both.row(1), &[2, 3]);
    for x in [positive, negative] {
        let (_, jacobian) = switching::sparse_jacobian(&x, &both);
        assert_same("switching", &jacobian.to_dense(), &dense(&x));
    }
}

#[test]
fn patterns_and_sparse_matrices_cross_threads() {
    fn send<T: Send + Sync>(_: &T) {}
    let pattern = banded::jacobian_pattern(&points(5));
    let (_, jacobian) = banded::sparse_jacobian(&points(5), &pattern);
    send(&pattern);
    send(&jacobian);
    let copy = pattern.clone();
    assert_eq!(copy, pattern);
}

#[test]
#[should_panic(expected = "the sparsity pattern has 10 rows, the function 9 output reals")]
fn a_pattern_of_other_rows_is_refused() {
    let links: Vec<usize> = (0..30).map(|k| (k * 7 + k * k * 3) % 11).collect();
    let pattern = scattered::jacobian_pattern(&points(11), &links);
    let _ = scattered::sparse_jacobian(&points(11), &links[..27], &pattern);
}

/// On the tape, called from a compiled function: the caller's vector
/// reverse mode sweeps its tape once per lane.
#[differentiate(tape)]
fn mixed_on_tape(x: &[f64], p: &Pair) -> Vec<f64> {
    vec![
        x[0] * p.a + x[1].sin(),
        x[1] * p.b,
        (x[0] * x[1]).exp() * p.a,
    ]
}

/// Four outputs through a tape callee, one with an infinite partial at
/// `x[2] = 0` (`sqrt`).
#[differentiate]
fn through_tape(x: &[f64], p: &Pair) -> Vec<f64> {
    let m = mixed_on_tape(x, p);
    vec![m[0] * x[2], m[1] + m[2], m[2] * m[0], x[2].sqrt()]
}

/// Rows of `n` outputs of a banded map (2, 3, 4, 5, 8, 9, 12 and 17 rows:
/// every lane width and several chunks).
#[differentiate]
fn rows_of(x: &[f64], n: usize) -> Vec<f64> {
    let mut out = vec![0.0; n];
    for i in 0..n {
        let (a, b) = (x[i % x.len()], x[(i + 1) % x.len()]);
        out[i] = a * b.cos() + (a - b) * (i as f64 + 1.0);
    }
    out
}

#[test]
fn vector_reverse_rows_equal_one_vjp_each() {
    let p = Pair { a: 0.7, b: -0.3 };
    for x in [[0.4, -1.1, 0.6], [0.4, -1.1, 0.0]] {
        let (value, rows) = through_tape::jacobian_rev(&x, &p);
        assert_eq!(value, through_tape(&x, &p));
        assert_eq!(rows.len(), 4);
        for (i, row) in rows.iter().enumerate() {
            let seed: Vec<f64> = (0..4).map(|k| if k == i { 1.0 } else { 0.0 }).collect();
            let (_, one) = through_tape::vjp(&x, &p, &seed);
            // The same sweep's arithmetic lane by lane: equal, and a row
            // whose adjoint at `sqrt` is zero stays finite at x[2] = 0.
            assert_eq!(row.x, one.x, "row {i} at {x:?}");
            assert_eq!((row.p.a, row.p.b), (one.p.a, one.p.b), "row {i} at {x:?}");
        }
        assert_eq!(
            rows[3].x[2],
            if x[2] == 0.0 {
                f64::INFINITY
            } else {
                0.5 / x[2].sqrt()
            }
        );
        assert!(rows[..3].iter().all(|r| r.x.iter().all(|d| d.is_finite())));
        if x[2] != 0.0 {
            for (i, row) in rows.iter().enumerate() {
                let fd = common::finite_difference(|y| through_tape(y, &p)[i], &x);
                common::assert_close(&row.x, &fd, &format!("through_tape row {i}"));
            }
        }
    }
    let x = points(6);
    for n in [2, 3, 4, 5, 8, 9, 12, 17] {
        let (value, rows) = rows_of::jacobian_rev(&x, n);
        assert_eq!(value, rows_of(&x, n));
        assert_eq!(rows.len(), n);
        for (i, row) in rows.iter().enumerate() {
            let seed: Vec<f64> = (0..n).map(|k| if k == i { 1.0 } else { 0.0 }).collect();
            assert_eq!(
                row.x,
                rows_of::vjp(&x, n, &seed).1.x,
                "rows_of n={n} row {i}"
            );
            let fd = common::finite_difference(|y| rows_of(y, n)[i], &x);
            common::assert_close(&row.x, &fd, &format!("rows_of n={n} row {i}"));
        }
    }
}
