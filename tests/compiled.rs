//! The compiled path against the tape: each function is written twice, the
//! first compiled (`#[differentiate(compiled)]`: a compile error if it
//! fell back to the tape), the second forced onto the tape. Values must be
//! equal bit for bit (both run the user's arithmetic in the same order);
//! gradients, `jvp`s and Hessians must agree to rounding (relative 1e-12:
//! the two engines add the same partial products in different orders, each
//! sum rounded once per term), and the gradients also match central finite
//! differences (tolerance in `common`).
//!
//! The functions cover what the compiled path's analyses decide: values the
//! adjoint evaluates again or keeps, variables restored before they are
//! overwritten, decisions kept or evaluated again, loops counted or run
//! backwards, blocks left early (`break`, `continue`, `return`, labels),
//! shadowing, buffers and their elements, calls between compiled functions
//! and into functions on the tape.
#![allow(clippy::all)]

mod common;
use common::*;
use deltad::differentiate;

/// Checks values, gradients (against the tape and finite differences) of
/// `$compiled` and `$tape` at the given arguments; `$flat`/`$grad_flat`
/// flatten the differentiated arguments and the `Grad`.
macro_rules! agree {
    ($compiled:ident, $tape:ident, ($($arg:expr),*), $what:expr) => {{
        let (value, g) = $compiled::value_and_grad($($arg),*);
        let (tape_value, tape_g) = $tape::value_and_grad($($arg),*);
        assert_eq!(value.to_bits(), $compiled($($arg),*).to_bits(), "{}: value", $what);
        assert_eq!(value.to_bits(), tape_value.to_bits(), "{}: value on the tape", $what);
        (g, tape_g)
    }};
}

fn same(a: &[f64], b: &[f64], what: &str) {
    assert_close_tol(a, b, 1e-12, what);
}

#[differentiate(compiled)]
fn loss(w: &[f64], b: f64, #[no_grad] x: &[f64], n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        let z = w[i] * x[i] + b;
        s += if z > 0.0 { z * z } else { z.exp() - 1.0 };
    }
    s / n as f64
}

#[differentiate(tape)]
fn loss_tape(w: &[f64], b: f64, #[no_grad] x: &[f64], n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        let z = w[i] * x[i] + b;
        s += if z > 0.0 { z * z } else { z.exp() - 1.0 };
    }
    s / n as f64
}

#[test]
fn branches_in_a_loop() {
    let (w, x) = ([0.5, -1.0, 2.0, 0.1], [1.0, 2.0, -0.5, 3.0]);
    for b in [-2.0, 0.3, 1.5] {
        let (g, t) = agree!(loss, loss_tape, (&w, b, &x, 4), "loss");
        same(&g.w, &t.w, "w");
        same(&[g.b], &[t.b], "b");
        let mut point = w.to_vec();
        point.push(b);
        let mut got = g.w.clone();
        got.push(g.b);
        check_gradient(|p| loss(&p[..4], p[4], &x, 4), &point, &got, "loss");
    }
}

/// Loop-carried state whose old value the adjoint needs (`prev`).
#[differentiate(compiled)]
fn taylor(x: f64, iters: usize) -> f64 {
    let mut prev = 1.0;
    let mut acc = 1.0;
    for _ in 0..iters {
        prev = prev * -(x - 1.0);
        acc = prev + acc;
    }
    acc
}

#[differentiate(tape)]
fn taylor_tape(x: f64, iters: usize) -> f64 {
    let mut prev = 1.0;
    let mut acc = 1.0;
    for _ in 0..iters {
        prev = prev * -(x - 1.0);
        acc = prev + acc;
    }
    acc
}

#[test]
fn overwritten_state_is_restored() {
    for n in [0, 1, 2, 10, 300] {
        let (g, t) = agree!(taylor, taylor_tape, (0.7, n), "taylor");
        same(&[g.x], &[t.x], "x");
        let by_hand: f64 = (1..=n)
            .map(|i| -(i as f64) * 0.3f64.powi(i as i32 - 1))
            .sum();
        assert_close(&[g.x], &[by_hand], "by hand");
    }
    // One real per iteration: the old `prev`.
    let kept = |n| taylor::tape_stats(0.7, n);
    assert!(kept(10).compiled);
    assert_eq!(kept(2000).reals - kept(1000).reals, 1000);
}

/// Every kind of exit, counted loops, a `while` and a `loop`.
#[differentiate(compiled)]
fn exits(x: &[f64], k: f64) -> f64 {
    let mut s = 0.0;
    let mut t = k;
    for i in 0..x.len() {
        if x[i] > 2.0 {
            break;
        }
        t = t * x[i] + 1.0;
        if t > 100.0 {
            return t.ln();
        }
        let u = t.sin();
        s += u * x[i];
        if s < -3.0 {
            continue;
        }
        s *= 1.01;
    }
    let mut c = 0;
    while c < 3 {
        c += 1;
        s = s * k + x[c % x.len()];
    }
    loop {
        s = s / 2.0;
        if s.abs() < 1.0 {
            break;
        }
    }
    s + t
}

#[differentiate(tape)]
fn exits_tape(x: &[f64], k: f64) -> f64 {
    let mut s = 0.0;
    let mut t = k;
    for i in 0..x.len() {
        if x[i] > 2.0 {
            break;
        }
        t = t * x[i] + 1.0;
        if t > 100.0 {
            return t.ln();
        }
        let u = t.sin();
        s += u * x[i];
        if s < -3.0 {
            continue;
        }
        s *= 1.01;
    }
    let mut c = 0;
    while c < 3 {
        c += 1;
        s = s * k + x[c % x.len()];
    }
    loop {
        s = s / 2.0;
        if s.abs() < 1.0 {
            break;
        }
    }
    s + t
}

#[test]
fn early_exits_replay_in_reverse() {
    let points = [
        [0.3, 1.2, 0.7, 1.9, 0.1],
        [0.3, 1.2, 2.7, 1.9, 0.1],
        [1.5, 1.9, 1.99, 1.9, 1.8],
        [-1.5, -1.9, -1.99, -1.9, -1.8],
    ];
    for x in points {
        for k in [0.5, 3.0, 9.0, -4.0] {
            let (g, t) = agree!(exits, exits_tape, (&x, k), "exits");
            same(&g.x, &t.x, "x");
            same(&[g.k], &[t.k], "k");
            let mut point = x.to_vec();
            point.push(k);
            let mut got = g.x.clone();
            got.push(g.k);
            check_gradient(|p| exits(&p[..5], p[4 + 1]), &point, &got, "exits");
            let h = exits::hessian(&x, k);
            let ht = exits_tape::hessian(&x, k);
            for (row, row_t) in h.iter().zip(&ht) {
                same(&row.x, &row_t.x, "hessian x");
                same(&[row.k], &[row_t.k], "hessian k");
            }
        }
    }
}

/// Labeled loops, a `break` out of two loops and a loop whose value is
/// used.
#[differentiate(compiled)]
fn labels(x: &[f64], y: f64) -> f64 {
    let mut s = y;
    'outer: for i in 0..x.len() {
        for j in 0..x.len() {
            if x[i] * x[j] > 3.0 {
                break 'outer;
            }
            if j > i {
                continue 'outer;
            }
            s = s * 0.9 + x[i] * x[j] * y;
        }
    }
    let mut n = 0;
    let r = loop {
        n += 1;
        s = s.sin() + y;
        if n == 3 {
            break s * 2.0;
        }
    };
    r + s
}

#[differentiate(tape)]
fn labels_tape(x: &[f64], y: f64) -> f64 {
    let mut s = y;
    'outer: for i in 0..x.len() {
        for j in 0..x.len() {
            if x[i] * x[j] > 3.0 {
                break 'outer;
            }
            if j > i {
                continue 'outer;
            }
            s = s * 0.9 + x[i] * x[j] * y;
        }
    }
    let mut n = 0;
    let r = loop {
        n += 1;
        s = s.sin() + y;
        if n == 3 {
            break s * 2.0;
        }
    };
    r + s
}

#[test]
fn labeled_breaks_and_loop_values() {
    for x in [[0.5, 1.0, 1.5, 1.8], [0.5, 1.0, 2.5, 0.2]] {
        let (g, t) = agree!(labels, labels_tape, (&x, 0.8), "labels");
        same(&g.x, &t.x, "x");
        same(&[g.y], &[t.y], "y");
    }
}

/// Shadowing: every `let` names a value the adjoint reads, and later ones
/// hide earlier ones (also a parameter's name).
#[differentiate(compiled)]
fn shadowing(x: f64, y: f64) -> f64 {
    let x = x * y;
    let y = x.sin() + y;
    let x = x * y;
    let z = {
        let w = x * 2.0;
        w.exp()
    };
    x + z * y
}

#[differentiate(tape)]
fn shadowing_tape(x: f64, y: f64) -> f64 {
    let x = x * y;
    let y = x.sin() + y;
    let x = x * y;
    let z = {
        let w = x * 2.0;
        w.exp()
    };
    x + z * y
}

#[test]
fn shadowed_names_mean_what_they_meant() {
    let (g, t) = agree!(shadowing, shadowing_tape, (0.3, 0.8), "shadowing");
    same(&[g.x, g.y], &[t.x, t.y], "gradient");
    check_gradient(
        |p| shadowing(p[0], p[1]),
        &[0.3, 0.8],
        &[g.x, g.y],
        "shadowing",
    );
}

/// Local buffers and arrays written and read, vector primitives on ranges.
#[differentiate(compiled)]
fn buffers(x: &[f64], y: f64) -> f64 {
    let n = x.len();
    let mut b = vec![0.0; n];
    for i in 0..n {
        b[i] = x[i] * y;
    }
    for i in 1..n {
        b[i] += b[i - 1] * b[i];
    }
    let mut m = [1.0, 2.0, y];
    m[1] *= x[0];
    m[2] /= b[1];
    deltad::dot(&b, x) + deltad::log_sum_exp(&m) + deltad::sum(&b[1..])
}

#[differentiate(tape)]
fn buffers_tape(x: &[f64], y: f64) -> f64 {
    let n = x.len();
    let mut b = vec![0.0; n];
    for i in 0..n {
        b[i] = x[i] * y;
    }
    for i in 1..n {
        b[i] += b[i - 1] * b[i];
    }
    let mut m = [1.0, 2.0, y];
    m[1] *= x[0];
    m[2] /= b[1];
    deltad::dot(&b, x) + deltad::log_sum_exp(&m) + deltad::sum(&b[1..])
}

#[test]
fn buffers_and_vector_primitives() {
    let x = [0.3, -1.2, 0.7, 1.9, 0.1];
    let (g, t) = agree!(buffers, buffers_tape, (&x, 0.8), "buffers");
    same(&g.x, &t.x, "x");
    same(&[g.y], &[t.y], "y");
    let mut point = x.to_vec();
    point.push(0.8);
    let mut got = g.x.clone();
    got.push(g.y);
    check_gradient(|p| buffers(&p[..5], p[5]), &point, &got, "buffers");
}

/// Element loops, math methods with several operands.
#[differentiate(compiled)]
fn helper(a: f64, v: &[f64]) -> f64 {
    let mut s = 0.0;
    for &e in v.iter() {
        s += e * a;
    }
    for (i, e) in v.iter().enumerate() {
        s += (i as f64) * e.sin();
    }
    for (p, q) in v.iter().zip(v.iter()) {
        s += p * q.cos();
    }
    s.powf(1.5) + a.max(0.5).atan2(s) + a.hypot(s).mul_add(a, 1.0)
}

#[differentiate(tape)]
fn helper_tape(a: f64, v: &[f64]) -> f64 {
    let mut s = 0.0;
    for &e in v.iter() {
        s += e * a;
    }
    for (i, e) in v.iter().enumerate() {
        s += (i as f64) * e.sin();
    }
    for (p, q) in v.iter().zip(v.iter()) {
        s += p * q.cos();
    }
    s.powf(1.5) + a.max(0.5).atan2(s) + a.hypot(s).mul_add(a, 1.0)
}

/// Calls: of a compiled function (differentiated, constant and mixed
/// arguments, sub-slices), of a function on the tape, in a loop.
#[differentiate(compiled)]
fn caller(a: f64, v: &[f64]) -> f64 {
    let mut total = 0.0;
    for i in 0..3 {
        total += helper(a * i as f64, v) * 0.5;
    }
    total + helper_tape(a, &v[1..]) + loss(v, a, &[1.0, 2.0, 3.0], 2) + helper(2.0, &[1.0, 3.0])
}

#[differentiate(tape)]
fn caller_tape(a: f64, v: &[f64]) -> f64 {
    let mut total = 0.0;
    for i in 0..3 {
        total += helper(a * i as f64, v) * 0.5;
    }
    total + helper_tape(a, &v[1..]) + loss(v, a, &[1.0, 2.0, 3.0], 2) + helper(2.0, &[1.0, 3.0])
}

#[test]
fn calls_between_engines() {
    let v = [0.3, 1.2, 0.7, 1.9, 0.1];
    let (g, t) = agree!(helper, helper_tape, (0.8, &v), "helper");
    same(&g.v, &t.v, "helper v");
    let (g, t) = agree!(caller, caller_tape, (0.8, &v), "caller");
    same(&g.v, &t.v, "caller v");
    same(&[g.a], &[t.a], "caller a");
    let mut point = vec![0.8];
    point.extend(&v);
    let mut got = vec![g.a];
    got.extend(&g.v);
    check_gradient(|p| caller(p[0], &p[1..]), &point, &got, "caller");
}

/// Forward mode, Hessians and `grad_into` on the compiled path.
#[differentiate(compiled)]
fn rosenbrock(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = x[i + 1] - x[i] * x[i];
        let b = 1.0 - x[i];
        s += 100.0 * a * a + b * b;
    }
    s
}

#[differentiate(tape)]
fn rosenbrock_tape(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = x[i + 1] - x[i] * x[i];
        let b = 1.0 - x[i];
        s += 100.0 * a * a + b * b;
    }
    s
}

#[test]
fn forward_mode_second_order_and_grad_into() {
    let x = [0.3, -1.2, 0.7, 1.9, 0.1];
    let (g, t) = agree!(rosenbrock, rosenbrock_tape, (&x), "rosenbrock");
    same(&g.x, &t.x, "gradient");
    let tangent = [1.0, 0.5, -0.3, 0.2, 0.9];
    let (value, dot) = rosenbrock::jvp(
        &x,
        &rosenbrock::Grad {
            x: tangent.to_vec(),
        },
    );
    assert_eq!(value, rosenbrock(&x));
    let expected: f64 = g.x.iter().zip(&tangent).map(|(a, b)| a * b).sum();
    same(&[dot], &[expected], "jvp against the gradient");
    let h = rosenbrock::hessian(&x);
    let ht = rosenbrock_tape::hessian(&x);
    for (row, row_t) in h.iter().zip(&ht) {
        same(&row.x, &row_t.x, "hessian row");
    }
    let hv = rosenbrock::hvp(
        &x,
        &rosenbrock::Grad {
            x: tangent.to_vec(),
        },
    );
    let expected: Vec<f64> = h
        .iter()
        .map(|row| row.x.iter().zip(&tangent).map(|(a, b)| a * b).sum())
        .collect();
    same(&hv.x, &expected, "hvp against the Hessian");
    let mut sum = rosenbrock::Grad::default();
    rosenbrock::grad_into(&x, &mut sum);
    rosenbrock::grad_into(&x, &mut sum);
    let twice: Vec<f64> = g.x.iter().map(|v| 2.0 * v).collect();
    same(&sum.x, &twice, "grad_into adds");
    let (_, rows) = rosenbrock::jacobian(&x);
    same(&rows[0].x, &g.x, "jacobian");
    rosenbrock::check_derivatives(&x).assert_within(1e-6);
}

/// A value the adjoint reads after the variable changes, of a written
/// integer type; an integer counter the adjoint counts back down.
#[differentiate(compiled)]
fn integers(x: &[f64]) -> f64 {
    let mut index: usize = 0;
    let mut s = 0.0;
    let mut k = 3;
    while k > 0 {
        s += x[index] * x[(index + k) % x.len()];
        index = (index * 7 + 1) % x.len();
        k -= 1;
    }
    s
}

#[differentiate(tape)]
fn integers_tape(x: &[f64]) -> f64 {
    let mut index: usize = 0;
    let mut s = 0.0;
    let mut k = 3;
    while k > 0 {
        s += x[index] * x[(index + k) % x.len()];
        index = (index * 7 + 1) % x.len();
        k -= 1;
    }
    s
}

#[test]
fn integer_state_is_restored() {
    let x = [0.3, -1.2, 0.7, 1.9, 0.1];
    let (g, t) = agree!(integers, integers_tape, (&x), "integers");
    same(&g.x, &t.x, "x");
}

/// f32, a `match`, casts, a value the adjoint pops (`d`, from a call).
#[differentiate(compiled)]
fn single(x: f32, y: f32, mode: usize) -> f32 {
    let d = square32(x) + y;
    let scale = match mode % 3 {
        0 => d * 2.0,
        1 => d.sqrt(),
        _ => (x * 10.0) as i32 as f32 + d,
    };
    scale * d
}

#[differentiate(compiled)]
fn square32(x: f32) -> f32 {
    x * x
}

#[test]
fn single_precision_match_and_casts() {
    for mode in 0..3 {
        let (value, g) = single::value_and_grad(0.73, 1.3, mode);
        assert_eq!(value, single(0.73, 1.3, mode));
        let h = 1e-3f64;
        let f = |x: f64, y: f64| single(x as f32, y as f32, mode) as f64;
        let gx = (f(0.73 + h, 1.3) - f(0.73 - h, 1.3)) / (2.0 * h);
        let gy = (f(0.73, 1.3 + h) - f(0.73, 1.3 - h)) / (2.0 * h);
        // f32 rounding in the differences: 1e-2 relative.
        assert!(
            (g.x as f64 - gx).abs() <= 1e-2 * gx.abs().max(1.0),
            "{mode}: {} vs {gx}",
            g.x
        );
        assert!(
            (g.y as f64 - gy).abs() <= 1e-2 * gy.abs().max(1.0),
            "{mode}: {} vs {gy}",
            g.y
        );
    }
}

/// A value the forward pass keeps: nothing for a function the adjoint can
/// evaluate again, one real for each overwritten state.
#[test]
fn what_the_forward_pass_keeps() {
    let x: Vec<f64> = (0..100).map(|i| (i as f64 * 0.1).sin()).collect();
    let stats = rosenbrock::tape_stats(&x);
    assert!(stats.compiled);
    assert_eq!((stats.reals, stats.words, stats.bytes_used), (0, 0, 0));
    let tape = rosenbrock_tape::tape_stats(&x);
    assert!(!tape.compiled && tape.bindings > 100);
}

/// Closures (inlined where called) and iterator chains (lowered to loops).
#[differentiate(compiled)]
fn chains(x: f64, s: &[f64], w: &[f64]) -> f64 {
    let f = |t: f64| (t + x).atan();
    let a = s.iter().map(|&v| v * f(v)).sum::<f64>();
    let b = s.iter().zip(w.iter()).map(|(&v, &u)| v * u).sum::<f64>();
    let c = s
        .iter()
        .enumerate()
        .map(|(j, &v)| (j as f64) * v.sin())
        .sum::<f64>();
    let d = s.iter().fold(0.5, |acc, &v| acc * 0.5 + (v * x).tanh());
    let e = s.iter().map(|&v| 1.0 + v * v * x).product::<f64>();
    let g = s.iter().filter(|v| **v > 0.1).map(|&v| v * x).sum::<f64>();
    let h = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let k = (0..s.len()).map(|i| s[i] * w[i] * x).sum::<f64>();
    a + b + c + d + e + g + h + k + f(w[0])
}

#[differentiate(tape)]
fn chains_tape(x: f64, s: &[f64], w: &[f64]) -> f64 {
    let f = |t: f64| (t + x).atan();
    let a = s.iter().map(|&v| v * f(v)).sum::<f64>();
    let b = s.iter().zip(w.iter()).map(|(&v, &u)| v * u).sum::<f64>();
    let c = s
        .iter()
        .enumerate()
        .map(|(j, &v)| (j as f64) * v.sin())
        .sum::<f64>();
    let d = s.iter().fold(0.5, |acc, &v| acc * 0.5 + (v * x).tanh());
    let e = s.iter().map(|&v| 1.0 + v * v * x).product::<f64>();
    let g = s.iter().filter(|v| **v > 0.1).map(|&v| v * x).sum::<f64>();
    let h = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let k = (0..s.len()).map(|i| s[i] * w[i] * x).sum::<f64>();
    a + b + c + d + e + g + h + k + f(w[0])
}

#[test]
fn closures_and_iterator_chains() {
    let (s, w) = ([0.3, -0.2, 0.9, 0.05], [1.1, 0.4, -0.7, 2.0]);
    for x in [0.7, -1.3] {
        let (g, t) = agree!(chains, chains_tape, (x, &s, &w), "chains");
        same(&[g.x], &[t.x], "x");
        same(&g.s, &t.s, "s");
        same(&g.w, &t.w, "w");
        let mut point = vec![x];
        point.extend(&s);
        point.extend(&w);
        let mut got = vec![g.x];
        got.extend(&g.s);
        got.extend(&g.w);
        check_gradient(|p| chains(p[0], &p[1..5], &p[5..]), &point, &got, "chains");
    }
}

/// The same function twice: compiled (`#[differentiate(compiled)]`) and on
/// the tape, under the two names given.
macro_rules! both {
    ($compiled:ident, $tape:ident, fn ($($params:tt)*) -> $ret:ty $body:block) => {
        #[differentiate(compiled)]
        fn $compiled($($params)*) -> $ret $body
        #[differentiate(tape)]
        fn $tape($($params)*) -> $ret $body
    };
}

// A `let` that calls an expensive method, read by later adjoints (`c` and
// `s` by the products, `theta` by a division and a product): the forward
// pass keeps its value beside the method's partial, and each reverse sweep
// pops it instead of calling the method again (a Jacobian takes one sweep
// per row).
both!(turn, turn_tape, fn(r: &[f64], x: &[f64]) -> Vec<f64> {
    let theta = (r[0] * r[0] + r[1] * r[1]).sqrt();
    let (c, s) = (theta.cos(), theta.sin());
    vec![c * x[0] - s * x[1] / theta, s * x[0] + c * x[1] * theta]
});

#[test]
fn values_of_expensive_lets_are_kept() {
    let (r, x) = ([0.3, -0.4], [1.5, 0.7]);
    // The partials of `sqrt`, `cos` and `sin`, and the values of `theta`,
    // `c` and `s`.
    let stats = turn::tape_stats(&r, &x);
    assert!(stats.compiled);
    assert_eq!(stats.reals, 6);
    let (value, rows) = turn::jacobian_rev(&r, &x);
    let (tape_value, tape_rows) = turn_tape::jacobian(&r, &x);
    same(&value, &tape_value, "turn value");
    assert_eq!(rows.len(), 2);
    let mut point = r.to_vec();
    point.extend(x);
    for (i, (row, tape_row)) in rows.iter().zip(&tape_rows).enumerate() {
        same(&row.r, &tape_row.r, "turn row r");
        same(&row.x, &tape_row.x, "turn row x");
        let mut got = row.r.clone();
        got.extend(&row.x);
        check_gradient(|p| turn(&p[..2], &p[2..])[i], &point, &got, "turn row");
    }
}

// A stencil: `x[i - 1]`, `x[i]`, `x[i + 1]` (the neighbours read only where
// they exist, so their indices are out of bounds at the ends where the
// reads do not happen), and a read two ahead in a branch.
both!(stencil, stencil_tape, fn(x: &[f64], k: f64) -> f64 {
    let n = x.len();
    let mut s = 0.0;
    for i in 0..n {
        let left = if i > 0 { x[i - 1] } else { 0.0 };
        let right = if i + 1 < n { x[i + 1] } else { 0.0 };
        s += (left - 2.0 * x[i] + right).powi(2) * k + x[i] * x[i].sin();
        if i + 2 < n && x[i] > 0.0 {
            s += x[i + 2] * x[i];
        }
    }
    s
});

// A loop run backwards in the forward pass (so forwards in the adjoint).
both!(backwards, backwards_tape, fn(x: &[f64]) -> f64 {
    let mut s = 1.0;
    for i in (1..x.len()).rev() {
        s = s * 0.5 + x[i] * x[i - 1] + (x[i] - x[i - 1]).powi(2);
    }
    s
});

// An element read in an inner loop (its adjoint summed over the whole
// inner loop), an inner loop that may not run, and an early exit.
both!(nested_reads, nested_reads_tape, fn(w: &[f64], x: &[f64], m: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..w.len() {
        for j in 0..m.min(x.len()) {
            s += w[i] * x[j] * w[i];
        }
        if s > 40.0 {
            break;
        }
        s += w[i].exp();
    }
    s
});

#[test]
fn element_adjoints_kept_in_locals() {
    let mut rng = Rng::new(17);
    for n in [0, 1, 2, 3, 7] {
        let x = rng.vec(n, -1.0, 1.0);
        for k in [0.5, -2.0] {
            let (g, t) = agree!(stencil, stencil_tape, (&x, k), "stencil");
            same(&g.x, &t.x, "stencil x");
            same(&[g.k], &[t.k], "stencil k");
            let mut point = x.clone();
            point.push(k);
            let mut got = g.x.clone();
            got.push(g.k);
            check_gradient(|p| stencil(&p[..n], p[n]), &point, &got, "stencil");
        }
        if n > 0 {
            let (g, t) = agree!(backwards, backwards_tape, (&x), "backwards");
            same(&g.x, &t.x, "backwards x");
            check_gradient(|p| backwards(p), &x, &g.x, "backwards");
        }
    }
    let (w, x) = (rng.vec(5, -1.0, 1.5), rng.vec(4, -1.0, 1.0));
    for m in [0, 2, 4, 9] {
        let (g, t) = agree!(nested_reads, nested_reads_tape, (&w, &x, m), "nested");
        same(&g.w, &t.w, "nested w");
        same(&g.x, &t.x, "nested x");
        let mut point = w.clone();
        point.extend(&x);
        let mut got = g.w.clone();
        got.extend(&g.x);
        check_gradient(
            |p| nested_reads(&p[..5], &p[5..], m),
            &point,
            &got,
            "nested",
        );
    }
    // Large values: the early exit is taken.
    let big = vec![3.0; 5];
    let (g, t) = agree!(
        nested_reads,
        nested_reads_tape,
        (&big, &x, 4),
        "nested exit"
    );
    same(&g.w, &t.w, "nested exit w");
}

// Kept partials: the forward pass keeps the partials of expensive methods
// whose value the adjoint does not read (`exp` in a sum, `sqrt` scaled by
// a constant, `tanh` and `powf` of a state overwritten right after, `cos`
// and `hypot`); a method whose value the adjoint reads (`sin` and `cbrt`
// times `y`, `sqrt` divided by `y`) keeps its value too. `sqrt` at 0 under
// a zero adjoint gives 0, not NaN, kept or not.
both!(kept, kept_tape, fn(x: &[f64], y: f64) -> f64 {
    let mut s = 0.0;
    let mut t = y;
    for i in 0..x.len() {
        let e = (x[i] - y).exp();
        s += e.sqrt() * 2.0 + (t * x[i]).sin() * y;
        t = (t * 0.5).tanh() + (x[i] * x[i] + 1.0).powf(y);
        s -= t.cos().hypot(y);
    }
    s.cbrt() * y + (s * s + 1.0).sqrt() / y
});

both!(kept_at_zero, kept_at_zero_tape, fn(x: f64, w: f64) -> f64 {
    let mut s = 0.0;
    s += x.sqrt() * 0.0;
    let r = x.sqrt();
    s + r * 0.0 + w * w
});

#[test]
fn expensive_partials_are_kept() {
    let mut rng = Rng::new(29);
    for n in [0, 1, 4] {
        let x = rng.vec(n, -1.0, 1.0);
        for y in [0.7, 1.9] {
            let (g, t) = agree!(kept, kept_tape, (&x, y), "kept");
            same(&g.x, &t.x, "kept x");
            same(&[g.y], &[t.y], "kept y");
            let mut point = x.clone();
            point.push(y);
            let mut got = g.x.clone();
            got.push(g.y);
            check_gradient(|p| kept(&p[..n], p[n]), &point, &got, "kept");
            let tangent = rng.vec(n, -1.0, 1.0);
            let hv = kept::hvp(
                &x,
                y,
                &kept::Grad {
                    x: tangent.clone(),
                    y: 0.3,
                },
            );
            let hv_tape = kept_tape::hvp(&x, y, &kept_tape::Grad { x: tangent, y: 0.3 });
            same(&hv.x, &hv_tape.x, "kept hvp x");
            same(&[hv.y], &[hv_tape.y], "kept hvp y");
        }
    }
    // Per iteration: the partials of `exp`, `sqrt`, `sin`, `tanh`, `powf`
    // (two), `cos` and `hypot` (two), the value of `sin`, and `t` before it
    // is overwritten (`t * x[i]` reads it): 11 reals.
    let x = rng.vec(10, -1.0, 1.0);
    let per_iteration = kept::tape_stats(&x, 0.7).reals - kept::tape_stats(&x[..9], 0.7).reals;
    assert_eq!(per_iteration, 11);
    let g = kept_at_zero::grad(0.0, 1.5);
    assert_eq!((g.x, g.w), (0.0, 3.0));
    // On the tape, `x.sqrt() * 0.0` inside one expression is 0 · ∞.
    let g = kept_at_zero_tape::grad(0.0, 1.5);
    assert!(g.x.is_nan() && g.w == 3.0);
}

// Scratch buffers rebuilt in each iteration, then updated in place and
// read: only the rebuild keeps the values it overwrites (`t`, as GMM's
// transformed point). `z` is read by the updates, so its rebuild keeps its
// values; `u` is rebuilt only partly (its last element carries over), so
// all of its writes keep theirs; `acc` is a scalar rebuilt, then updated.
both!(scratch, scratch_tape, fn(w: &[f64], x: &[f64], d: usize) -> f64 {
    let mut t = vec![0.0; d];
    let mut z = vec![0.0; d];
    let mut u = vec![0.0; d];
    let mut acc = 0.0;
    let mut total = 0.0;
    for i in 0..x.len() / d {
        total += acc * acc * 0.1;
        for j in 0..d {
            z[j] = x[i * d + j] - w[j];
            t[j] = w[j] * z[j];
        }
        for j in 0..d - 1 {
            u[j] = z[j] * z[j];
        }
        for a in 0..d {
            for b in a + 1..d {
                t[b] += w[a] * z[a];
                u[b] -= t[a] * 0.25;
            }
        }
        acc = t[0];
        acc += t[d - 1] * t[d - 1];
        acc *= 0.5;
        for j in 0..d {
            total += t[j] * t[j] + u[j] * acc;
        }
    }
    total
});

#[test]
fn scratch_buffers_keep_only_what_the_adjoint_reads() {
    let mut rng = Rng::new(23);
    let d = 4;
    let w = rng.vec(d, -1.0, 1.0);
    for points in [0, 1, 3] {
        let x = rng.vec(points * d, -1.0, 1.0);
        let (g, t) = agree!(scratch, scratch_tape, (&w, &x, d), "scratch");
        same(&g.w, &t.w, "scratch w");
        check_gradient(|p| scratch(p, &x, d), &w, &g.w, "scratch");
        let h = scratch::hessian(&w, &x, d);
        let ht = scratch_tape::hessian(&w, &x, d);
        for (row, row_t) in h.iter().zip(&ht) {
            same(&row.x, &row_t.x, "scratch hessian");
        }
    }
    // Per point (d = 4): the rebuilds of `t` and `z` (4 values each), `u`'s
    // writes (3 + 6) and `acc` before its rebuild and its `*=`: 19 reals, not
    // the 26 of saving every write.
    let x = rng.vec(10 * d, -1.0, 1.0);
    let per_point =
        scratch::tape_stats(&w, &x, d).reals - scratch::tape_stats(&w, &x[..9 * d], d).reals;
    assert_eq!(per_point, 19);
}

// Buffer results: `Vec` and arrays, from new buffers, buffer variables,
// calls, branches and early returns; whole-buffer assignments (one that
// changes the length too); array literals with differentiated elements as
// arguments; a compiled function calling a function on the tape that
// returns a buffer, and the tape variants calling compiled ones.

#[differentiate(compiled)]
fn slope(x: &[f64], y: &[f64]) -> Vec<f64> {
    let mut z = vec![0.0; x.len()];
    z[0] = x[0];
    for i in 1..x.len() {
        z[i] = x[i] * y[i - 1];
    }
    z
}

#[differentiate(tape)]
fn halve(y: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; y.len()];
    for i in 0..y.len() {
        out[i] = 0.5 * y[i] * y[i].cos();
    }
    out
}

both!(step, step_tape, fn(x: &[f64], y: &[f64], h: f64) -> Vec<f64> {
    let n = y.len();
    let k1 = slope(x, y);
    let mut stage = vec![0.0; n];
    for i in 0..n {
        stage[i] = y[i] + h / 2.0 * k1[i];
    }
    let k2 = slope(x, &stage);
    let mut next = vec![0.0; n];
    for i in 0..n {
        next[i] = y[i] + h * (k1[i] + k2[i]) / 2.0;
    }
    if h > 1.0 {
        return halve(&next);
    }
    next
});

both!(solve, solve_tape, fn(x: &[f64], s: usize) -> Vec<f64> {
    let h = 2.0 / s as f64;
    let mut y = vec![0.0; x.len()];
    for _ in 0..s {
        let next = step(x, &y, h);
        y = next;
    }
    let scale = if y[0] > 0.0 { vec![y[0], 2.0] } else { vec![1.0, y[0], 3.0] };
    let mut out = y.clone();
    out[0] *= scale[0];
    out = scale;
    out[0] *= y[y.len() - 1];
    out
});

#[differentiate(compiled)]
fn rotate(r: &[f64; 3], x: &[f64; 3]) -> [f64; 3] {
    let t = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
    if t != 0.0 {
        let theta = t.sqrt();
        let (c, s) = (theta.cos(), theta.sin());
        let w = [r[0] / theta, r[1] / theta, r[2] / theta];
        let cross = [
            w[1] * x[2] - w[2] * x[1],
            w[2] * x[0] - w[0] * x[2],
            w[0] * x[1] - w[1] * x[0],
        ];
        let dot = w[0] * x[0] + w[1] * x[1] + w[2] * x[2];
        [
            x[0] * c + cross[0] * s + w[0] * dot * (1.0 - c),
            x[1] * c + cross[1] * s + w[1] * dot * (1.0 - c),
            x[2] * c + cross[2] * s + w[2] * dot * (1.0 - c),
        ]
    } else {
        [x[0] + r[1] * x[2] - r[2] * x[1], x[1], x[2]]
    }
}

both!(project, project_tape, fn(cam: &[f64; 6], x: &[f64; 3], w: f64) -> [f64; 2] {
    let centred = [x[0] - cam[3], x[1] - cam[4], x[2] - cam[5]];
    let rotated = rotate(&[cam[0], cam[1], cam[2]], &centred);
    [w * rotated[0] / rotated[2], w * rotated[1] / rotated[2]]
});

/// Buffers a scope keeps whole at its end (call results, `vec![..]`
/// locals): long ones are moved onto the stack, short ones copied. Either
/// way they count in what `tape_stats` reports, the peak included (read
/// after the adjoint has taken the moved ones back), and the gradient is
/// the same.
#[test]
fn buffers_kept_whole_count_in_the_stats() {
    for n in [4, 300] {
        let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
        let y: Vec<f64> = (0..n).map(|i| (i as f64 * 0.21).cos()).collect();
        let stats = step::tape_stats(&x, &y, 0.1);
        assert!(stats.compiled);
        // k1 and k2 (read by the adjoint of `next` for h's derivative),
        // `stage` (read by the adjoint of the second `slope`) and `next`
        // (read by the adjoint of `halve` on the other path): n reals each,
        // and a word each (a length, or the mark of a moved buffer); and the
        // branch taken.
        assert_eq!((stats.reals, stats.words), (4 * n, 5), "{stats:?}");
        assert_eq!(stats.bytes_used, 8 * (stats.reals + stats.words));
        assert!(stats.peak_bytes >= stats.bytes_used, "{stats:?}");
        let seed: Vec<f64> = (0..n).map(|i| 1.0 - i as f64 / n as f64).collect();
        let (value, g) = step::vjp(&x, &y, 0.1, &seed);
        let (tape_value, t) = step_tape::vjp(&x, &y, 0.1, &seed);
        assert_eq!(value, tape_value);
        same(&g.x, &t.x, "step vjp x");
        same(&g.y, &t.y, "step vjp y");
        same(&[g.h], &[t.h], "step vjp h");
    }
}

/// The Jacobians of `$compiled` and `$tape` at the given arguments agree;
/// `$flat` flattens a `Grad` `$g` (of either) for the comparison.
macro_rules! same_jacobians {
    ($compiled:ident, $tape:ident, ($($arg:expr),*), |$g:ident| $flat:expr) => {{
        let (value, rows) = $compiled::jacobian($($arg),*);
        let (tape_value, tape_rows) = $tape::jacobian($($arg),*);
        assert_eq!(value, $compiled($($arg),*));
        assert_eq!(value, tape_value);
        assert_eq!(rows.len(), tape_rows.len());
        for (row, tape_row) in rows.iter().zip(&tape_rows) {
            let ours = { let $g = row; $flat };
            let theirs = { let $g = tape_row; $flat };
            same(&ours, &theirs, stringify!($compiled));
        }
        rows
    }};
}

#[test]
fn buffer_results() {
    let x = [0.3, -0.5, 0.7, 1.1];
    let y = [0.2, 0.1, -0.4, 0.9];
    for h in [0.1, 1.5] {
        let rows = same_jacobians!(step, step_tape, (&x, &y, h), |g| {
            let mut flat = g.x.clone();
            flat.extend(&g.y);
            flat.push(g.h);
            flat
        });
        // Row i against finite differences of output i.
        let mut point = x.to_vec();
        point.extend(y);
        point.push(h);
        for (i, row) in rows.iter().enumerate() {
            let mut got = row.x.clone();
            got.extend(&row.y);
            got.push(row.h);
            check_gradient(|p| step(&p[..4], &p[4..8], p[8])[i], &point, &got, "step");
        }
        // jvp against the Jacobian.
        let tangent = step::Grad {
            x: vec![0.3, 0.1, -0.2, 0.5],
            y: vec![1.0, -1.0, 0.5, 0.25],
            h: 0.7,
        };
        let (value, dot) = step::jvp(&x, &y, h, &tangent);
        assert_eq!(value, step(&x, &y, h));
        let expected: Vec<f64> = rows
            .iter()
            .map(|r| {
                let mut sum = r.h * tangent.h;
                for k in 0..4 {
                    sum += r.x[k] * tangent.x[k] + r.y[k] * tangent.y[k];
                }
                sum
            })
            .collect();
        same(&dot, &expected, "step jvp");
    }
    for (s, input) in [(3, [-0.3, 0.2, 0.4, 0.6]), (6, [0.3, 0.2, 0.4, 0.6])] {
        // Results of 3 and 2 reals (the two branches).
        let seed: Vec<f64> = (0..solve(&input, s).len())
            .map(|k| 0.5 - k as f64)
            .collect();
        let (value, g) = solve::vjp(&input, s, &seed);
        let (tape_value, t) = solve_tape::vjp(&input, s, &seed);
        assert_eq!(value, tape_value);
        same(&g.x, &t.x, "solve vjp");
        let f = |p: &[f64]| {
            let out = solve(p, s);
            out.iter().zip(&seed).map(|(a, b)| a * b).sum::<f64>()
        };
        check_gradient(f, &input, &g.x, "solve");
    }
    let cam = [0.1, -0.2, 0.3, 0.5, 0.4, -2.0];
    for w in [0.9, -1.3] {
        let rows = same_jacobians!(project, project_tape, (&cam, &[0.3, 0.2, 1.5], w), |g| {
            let mut flat = g.cam.to_vec();
            flat.extend(g.x);
            flat.push(g.w);
            flat
        });
        assert_eq!(rows.len(), 2);
    }
    // Zero rotation: the other branch.
    same_jacobians!(
        project,
        project_tape,
        (&[0.0, 0.0, 0.0, 0.5, 0.4, -2.0], &[0.3, 0.2, 1.5], 1.0),
        |g| {
            let mut flat = g.cam.to_vec();
            flat.extend(g.x);
            flat
        }
    );
}

#[test]
#[should_panic(expected = "the seed has 3 reals but the result has 4")]
fn a_seed_of_the_wrong_length_is_an_error() {
    let x = [0.3, -0.5, 0.7, 1.1];
    let _ = slope::vjp(&x, &x, &vec![1.0, 2.0, 3.0]);
}

// Checkpointed loops whose bodies the tape could not checkpoint: branches,
// calls, an inner loop, a buffer in the state, `continue`, and exits that
// leave the loop (`break` out of two loops, `return`). The same function
// with `#[checkpoint]` removed (`plain`) gives every derivative to the last
// bit: each iteration's forward and adjoint code runs as in the plain loop.

#[differentiate(compiled)]
fn mix(a: f64, v: &[f64]) -> f64 {
    (a * v[0]).tanh() + v[1] * v[2] * 0.1
}

macro_rules! checkpointed_and_plain {
    ($checkpointed:ident, $plain:ident, $tape:ident, $($attr:tt)*) => {
        #[differentiate(compiled)]
        fn $checkpointed(x: &[f64], k: f64, steps: usize) -> f64 {
            let mut state = vec![x[0], x[1], 0.0];
            let mut total = 0.0;
            'outer: for round in 0..2 {
                $($attr)*
                for i in 0..steps {
                    if state[0] > 50.0 {
                        break 'outer;
                    }
                    if state[1] < -40.0 {
                        return total * k;
                    }
                    let a = if i % 3 == 0 { state[0].sin() * k } else { mix(k, &state) };
                    for j in 0..2 {
                        state[j] += 0.01 * a * (j as f64 + 1.0);
                    }
                    if a > 10.0 {
                        continue;
                    }
                    state[2] = state[0] * state[1];
                    total += state[2] * x[i % x.len()] + round as f64;
                }
            }
            total + state[0] * state[2]
        }
    };
}

checkpointed_and_plain!(long_run, long_run_plain_checkpointed, long_run_unused, #[checkpoint]);
checkpointed_and_plain!(long_run_plain, long_run_unused2, long_run_unused3,);

#[differentiate(tape)]
fn long_run_tape(x: &[f64], k: f64, steps: usize) -> f64 {
    let mut state = vec![x[0], x[1], 0.0];
    let mut total = 0.0;
    'outer: for round in 0..2 {
        for i in 0..steps {
            if state[0] > 50.0 {
                break 'outer;
            }
            if state[1] < -40.0 {
                return total * k;
            }
            let a = if i % 3 == 0 {
                state[0].sin() * k
            } else {
                mix(k, &state)
            };
            for j in 0..2 {
                state[j] += 0.01 * a * (j as f64 + 1.0);
            }
            if a > 10.0 {
                continue;
            }
            state[2] = state[0] * state[1];
            total += state[2] * x[i % x.len()] + round as f64;
        }
    }
    total + state[0] * state[2]
}

/// Checkpointed calls, of a real and of a buffer result, in a loop.
#[differentiate(compiled)]
fn checkpointed_calls(x: &[f64], k: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..3 {
        #[checkpoint]
        let t = taylor(x[0] * k, 20 + i);
        #[checkpoint]
        let z = slope(x, &[t, k, s, 1.0]);
        s += z[1] * t + z[3];
    }
    s
}

#[differentiate(compiled)]
fn checkpointed_calls_plain(x: &[f64], k: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..3 {
        let t = taylor(x[0] * k, 20 + i);
        let z = slope(x, &[t, k, s, 1.0]);
        s += z[1] * t + z[3];
    }
    s
}

#[test]
fn checkpointed_loops_and_calls_on_the_compiled_path() {
    let x = [0.3, -0.2, 0.25, 0.1];
    for steps in [0, 1, 5, 40, 200] {
        for k in [0.7, 3.0, -9.0] {
            let (value, g) = long_run::value_and_grad(&x, k, steps);
            let (plain_value, p) = long_run_plain::value_and_grad(&x, k, steps);
            let (tape_value, t) = long_run_tape::value_and_grad(&x, k, steps);
            assert_eq!(value.to_bits(), long_run(&x, k, steps).to_bits());
            assert_eq!(value.to_bits(), plain_value.to_bits());
            assert_eq!(value.to_bits(), tape_value.to_bits());
            assert_eq!(g.x, p.x, "{steps} {k}");
            assert_eq!(g.k.to_bits(), p.k.to_bits(), "{steps} {k}");
            same(&g.x, &t.x, "long run x");
            same(&[g.k], &[t.k], "long run k");
            let mut point = x.to_vec();
            point.push(k);
            let mut got = g.x.clone();
            got.push(g.k);
            check_gradient(|p| long_run(&p[..4], p[4], steps), &point, &got, "long run");
        }
    }
    // Forward-over-reverse through the checkpointed loop.
    let h = long_run::hessian(&x, 0.7, 40);
    let hp = long_run_plain::hessian(&x, 0.7, 40);
    for (row, row_p) in h.iter().zip(&hp) {
        same(&row.x, &row_p.x, "hessian");
    }
    let (value, g) = checkpointed_calls::value_and_grad(&x, 0.8);
    let (plain_value, p) = checkpointed_calls_plain::value_and_grad(&x, 0.8);
    assert_eq!(value, plain_value);
    assert_eq!(g.x, p.x);
    assert_eq!(g.k, p.k);
    // What the forward pass keeps: less with the calls checkpointed
    // (`taylor` keeps a real per iteration).
    let kept = checkpointed_calls::tape_stats(&x, 0.8);
    let kept_plain = checkpointed_calls_plain::tape_stats(&x, 0.8);
    assert!(
        kept.bytes_used < kept_plain.bytes_used,
        "{kept:?} vs {kept_plain:?}"
    );
}

// Negations are undone, not kept: `sign` (a constant real) and `y` (a
// differentiated one) flip in every iteration.
both!(alternating, alternating_tape, fn(x: &[f64]) -> f64 {
    let mut sign = 1.0;
    let mut y = x[0];
    let mut total = 0.0;
    for i in 0..x.len() {
        total += sign * x[i] * x[i] * y;
        sign = -sign;
        y = -y;
        y += x[i] * 0.5;
    }
    total + y * y
});

#[test]
fn negations_are_undone() {
    let x = [0.3, -1.2, 0.7, 1.9, 0.1];
    let (g, t) = agree!(alternating, alternating_tape, (&x), "alternating");
    same(&g.x, &t.x, "alternating");
    check_gradient(|p| alternating(p), &x, &g.x, "alternating");
    // `y += ..` keeps the old `y` (the adjoint reads it in `.. * y`); the
    // negations keep nothing.
    let kept = |n: usize| alternating::tape_stats(&vec![0.5; n]).reals;
    assert_eq!(kept(20) - kept(10), 10);
}

// One real input: `grad` runs forward mode (one pass on dual numbers,
// nothing kept), so it equals `jvp` with tangent 1 bit for bit, and the
// hand-derived derivative to rounding. With a method whose partial can be
// infinite (`sqrt`) it stays in reverse mode, whose zero adjoint skips the
// infinite partial: at 0, `0.0 * x.sqrt()` has gradient 0, not NaN.
#[differentiate(compiled)]
fn one_input(x: f64, #[no_grad] c: f64, n: usize) -> f64 {
    let mut s = 0.0;
    let mut p = 1.0;
    for k in 0..n {
        p *= x * c;
        s += if k % 2 == 0 { p.sin() } else { p * x };
    }
    s
}

#[differentiate(compiled)]
fn one_singular_input(x: f64) -> f64 {
    0.0 * x.sqrt() + x * x
}

#[test]
fn one_real_input_runs_forward_mode() {
    for x in [-0.7, 0.2, 1.3] {
        let (value, g) = one_input::value_and_grad(x, 0.9, 5);
        assert_eq!(value.to_bits(), one_input(x, 0.9, 5).to_bits());
        let (_, tangent) = one_input::jvp(x, 0.9, 5, &one_input::Grad { x: 1.0 });
        assert_eq!(g.x.to_bits(), tangent.to_bits());
        // Hand-derived: p_k = (x c)^(k+1), terms sin(p_k) (k even) and
        // p_k x (k odd).
        let mut want = 0.0;
        for k in 0..5 {
            let e = (k + 1) as f64;
            let p = (x * 0.9f64).powi(k + 1);
            let dp = e * p / x;
            want += if k % 2 == 0 { p.cos() * dp } else { dp * x + p };
        }
        assert!(
            (g.x - want).abs() <= 1e-12 * want.abs().max(1.0),
            "{} vs {want}",
            g.x
        );
        // `grad_into` adds, `vjp` scales by the seed.
        let mut into = one_input::Grad { x: 1.0 };
        one_input::grad_into(x, 0.9, 5, &mut into);
        assert_eq!(into.x, 1.0 + g.x);
        assert_eq!(one_input::vjp(x, 0.9, 5, 2.0).1.x, 2.0 * g.x);
    }
    assert_eq!(one_singular_input::grad(0.0).x, 0.0);
}

// Plain values taken apart by `let` patterns (an array of indices, a
// struct, a nested tuple) and `.is_empty()` of a buffer, on the compiled
// path: the indices they give pick which reals the gradient goes to.
#[derive(Clone, Copy)]
struct Span2 {
    from: usize,
    to: usize,
}

/// Not `Copy` (nor `Clone`): destructuring copies the parts it binds.
struct Labelled {
    label: String,
    at: usize,
}

#[differentiate(compiled)]
fn picked(
    x: &[f64],
    weights: &[f64],
    #[no_grad] triples: &[[usize; 3]],
    #[no_grad] span: Span2,
    #[no_grad] labelled: &Labelled,
) -> f64 {
    let Labelled { at, .. } = *labelled;
    let [first, second]: [usize; 2] = [at, at + 1];
    let mut s = x[first] * x[second] * labelled.label.len() as f64;
    for t in 0..triples.len() {
        let [a, b, mut c] = triples[t];
        if c >= x.len() {
            c = x.len() - 1;
        }
        let w = if weights.is_empty() { 1.0 } else { weights[t] };
        s += w * x[a] * x[b] + (x[c] - x[a]).powi(2);
    }
    let Span2 { from, to } = span;
    let ((lo, _), hi) = ((from, 0u8), to);
    for i in lo..hi {
        s += x[i].sin();
    }
    s
}

#[test]
fn destructured_plain_values_and_is_empty() {
    let x = [0.3, -1.1, 0.8, 1.7, -0.4];
    let triples = [[0, 1, 2], [3, 3, 4], [4, 0, 9]];
    let span = Span2 { from: 1, to: 4 };
    let labelled = || Labelled {
        label: "ab".to_string(),
        at: 2,
    };
    let f = |p: &[f64]| picked(&p[..5], &p[5..], &triples, span, &labelled());
    let weighted: Vec<f64> = x.iter().copied().chain([0.5, 2.0, -1.5]).collect();
    let g = picked::grad(&x, &[0.5, 2.0, -1.5], &triples, span, &labelled());
    let got: Vec<f64> = g.x.iter().chain(&g.weights).copied().collect();
    check_gradient(f, &weighted, &got, "picked");
    let g = picked::grad(&x, &[], &triples, span, &labelled());
    check_gradient(
        |p| picked(p, &[], &triples, span, &labelled()),
        &x,
        &g.x,
        "picked, no weights",
    );
    assert!(g.weights.is_empty());
}

// Reductions whose float type the context gives (a `let` annotation, the
// result of a real-valued function, a `return`), with a typed closure
// literal given to `map`.
both!(typed_sums, typed_sums_tape, fn(v: &[f64], t: f64) -> f64 {
    let act = |u: &f64| (u * t).tanh();
    let squares: f64 = v.iter().map(|u: &f64| u * u).sum();
    let activated: f64 = v.iter().map(|u| act(u)).sum();
    if squares > 100.0 {
        return v.iter().map(|u| u * t).product();
    }
    let waves: f64 = v.iter().map(|u| u.sin() * t).sum();
    if waves > 0.0 {
        squares * activated
    } else {
        v.iter().map(|u| u * activated).sum()
    }
});

/// A named closure with a typed parameter given to `map` (compiled only:
/// the tape does not take it yet).
#[differentiate(compiled)]
fn named_typed_closure(v: &[f64], t: f64) -> f64 {
    let act = |u: &f64| (u * t).tanh();
    let s: f64 = v.iter().map(act).sum();
    s * t
}

#[test]
fn reductions_typed_by_their_context() {
    let mut rng = Rng::new(23);
    for n in [0, 1, 4] {
        for scale in [1.0, 20.0] {
            let v: Vec<f64> = rng.vec(n, -1.0, 1.0).iter().map(|x| x * scale).collect();
            let t = 0.7;
            let (g, tape) = agree!(typed_sums, typed_sums_tape, (&v, t), "typed sums");
            same(&g.v, &tape.v, "typed sums v");
            same(&[g.t], &[tape.t], "typed sums t");
            let mut point = v.clone();
            point.push(t);
            let mut got = g.v.clone();
            got.push(g.t);
            check_gradient(|p| typed_sums(&p[..n], p[n]), &point, &got, "typed sums");
            let g = named_typed_closure::grad(&v, t);
            let mut got = g.v.clone();
            got.push(g.t);
            check_gradient(
                |p| named_typed_closure(&p[..n], p[n]),
                &point,
                &got,
                "named closure",
            );
        }
    }
}

// An element borrowed and dereferenced (`let r = &x[0]; *r`).
both!(borrowed_element, borrowed_element_tape, fn(x: &[f64], t: f64) -> f64 {
    let r = &x[0];
    let s = &x[x.len() - 1];
    *r * 2.0 * x[1] + (*s * t).sin() + r * t
});

#[test]
fn elements_borrowed_and_dereferenced() {
    let x = [0.75, -1.5, 2.25];
    let t = 0.4;
    let (g, tape) = agree!(borrowed_element, borrowed_element_tape, (&x, t), "borrowed");
    same(&g.x, &tape.x, "borrowed x");
    // 2 x0 x1 + sin(x2 t) + x0 t.
    let c = (x[2] * t).cos();
    same(
        &g.x,
        &[2.0 * x[1] + t, 2.0 * x[0], c * t],
        "borrowed x by hand",
    );
    same(&[g.t], &[c * x[2] + x[0]], "borrowed t by hand");
}

/// A counted loop whose bound is overwritten after it: the adjoint cannot
/// count the range again, so the forward pass keeps the trip count, in the
/// room it reserved for the loop (it kept one word too few before).
#[differentiate(compiled)]
fn bound_overwritten(x: f64, y: f64) -> f64 {
    let mut ra = x;
    let mut rm = 2.0;
    let mut n = 3;
    for _ in 0..n {
        ra += rm * y;
        rm *= 0.5 + x;
    }
    let t = n + 1;
    n = t;
    ra * rm + n as f64
}

#[differentiate(tape)]
fn bound_overwritten_tape(x: f64, y: f64) -> f64 {
    let mut ra = x;
    let mut rm = 2.0;
    let mut n = 3;
    for _ in 0..n {
        ra += rm * y;
        rm *= 0.5 + x;
    }
    let t = n + 1;
    n = t;
    ra * rm + n as f64
}

#[test]
fn trip_count_of_a_loop_whose_bound_is_overwritten() {
    for (x, y) in [(0.5, 0.25), (-0.3, 1.7)] {
        let (g, t) = agree!(bound_overwritten, bound_overwritten_tape, (x, y), "bound");
        same(&[g.x, g.y], &[t.x, t.y], "x, y");
        check_gradient(
            |p| bound_overwritten(p[0], p[1]),
            &[x, y],
            &[g.x, g.y],
            "bound",
        );
    }
}

// A closure reading a variable whose name a later `let` hides, called
// where the new variable is in scope (and once more after a second
// closure is defined and the name hidden again, and where the hiding
// variable's block has ended).
both!(hidden_capture, hidden_capture_tape, fn(x: f64, y: f64) -> f64 {
    let scale = x * y;
    let f = |t: f64| scale * t.sin();
    let g = |t: f64| t * scale;
    let first = {
        let scale = y + 1.0;
        f(scale) + g(x) * scale
    };
    let scale = x.exp();
    let second = f(scale) * g(y);
    first + second + f(1.0) * scale
});

#[test]
fn closures_read_variables_a_later_let_hides() {
    for (x, y) in [(0.3, -0.8), (1.2, 0.5)] {
        let (value, g) = hidden_capture::value_and_grad(x, y);
        let (tape_value, t) = hidden_capture_tape::value_and_grad(x, y);
        assert_eq!(value.to_bits(), tape_value.to_bits());
        same(&[g.x, g.y], &[t.x, t.y], "hidden capture");
        check_gradient(
            |p| hidden_capture(p[0], p[1]),
            &[x, y],
            &[g.x, g.y],
            "hidden capture",
        );
    }
    assert!(hidden_capture::tape_stats(0.3, -0.8).compiled);
}

// A `move` closure holds the values its captured scalars had where it was
// defined, whatever they become before the call (the compiled path read
// them at the call: a wrong value and gradient, 4x² / 4 instead of 3x / 3
// here).
both!(moved_capture, moved_capture_tape, fn(x: f64, y: f64) -> f64 {
    let mut a = x;
    let f = move |t: f64| a * t + y;
    a = 2.0 * x;
    let y = a * a;
    f(1.0) + a + y
});

#[test]
fn move_closures_hold_the_values_of_their_definition() {
    for (x, y) in [(1.5, 0.2), (-0.4, 2.0)] {
        let (value, g) = moved_capture::value_and_grad(x, y);
        assert_eq!(value.to_bits(), moved_capture(x, y).to_bits());
        let (tape_value, t) = moved_capture_tape::value_and_grad(x, y);
        assert_eq!(value.to_bits(), tape_value.to_bits());
        // f(1.0) = x + y; a = 2x; the last y = 4x²: ∂/∂x = 1 + 2 + 8x, ∂/∂y = 1.
        same(&[g.x, g.y], &[3.0 + 8.0 * x, 1.0], "move closure");
        same(
            &[t.x, t.y],
            &[3.0 + 8.0 * x, 1.0],
            "move closure on the tape",
        );
    }
    assert!(moved_capture::tape_stats(1.5, 0.2).compiled);
}

// Arrays written in place as arguments, and local buffers passed by value:
// `[1.0, 0.0, 0.0]` and `[k, 1.0, 0.0]` to a differentiated array parameter
// (were a type error at the argument), `[0.0, t, 0.0]` and `[t; 3]` with
// differentiated elements (were on the tape), constants by value to
// `#[no_grad]` array and `Vec` parameters (a local array was a type error).
#[differentiate]
fn cross3(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

#[differentiate]
fn weighted3(a: [f64; 3], #[no_grad] w: [f64; 3]) -> f64 {
    a[0] * w[0] + a[1] * w[1] + a[2] * w[2]
}

#[differentiate]
fn weighted_vec(v: Vec<f64>, #[no_grad] w: Vec<f64>) -> f64 {
    let mut s = 0.0;
    for i in 0..v.len() {
        s += v[i] * w[i];
    }
    s
}

#[differentiate]
fn dot_vecs(v: Vec<f64>, u: Vec<f64>) -> f64 {
    let mut s = 0.0;
    for i in 0..v.len() {
        s += v[i] * u[i];
    }
    s
}

both!(arrays_in_place, arrays_in_place_tape, fn(a: [f64; 3], t: f64, n: usize) -> f64 {
    let w = [1.0, 2.0, 3.0];
    let e = [1.0, 0.0, 0.0];
    let d = cross3(e, a);
    let f = cross3([0.0, 1.0, 0.0], a);
    let g = cross3(a, [0.0, t, 0.0]);
    let k = n as f64;
    let h = cross3([k, 1.0, 0.0], a);
    let r = cross3([t; 3], a);
    let q = cross3(
        [
            t.sin(),
            if t > 0.0 { t } else { 2.0 * t },
            weighted3(a, [1.0, 0.0, 0.0]),
        ],
        a,
    );
    let ws = vec![1.0, 2.0];
    let vs = vec![t, a[0]];
    let cs = vec![3.0, -1.0];
    let us = vec![a[1], t];
    weighted3(a, [1.0, 2.0, 3.0]) * t
        + weighted3(a, w)
        + weighted3(a, [k, 1.0, 1.0])
        + d[2] * f[0]
        + g[0] * h[1]
        + r[2]
        + weighted_vec(vs, ws)
        + dot_vecs(cs, us)
        + q[0] * q[2]
});

#[test]
fn arrays_written_in_place_and_buffers_by_value_are_passed() {
    for (a, t, n) in [([1.0, 2.0, 3.0], 2.0, 2), ([-0.5, 0.25, 1.5], -1.25, 5)] {
        let (value, g) = arrays_in_place::value_and_grad(a, t, n);
        assert_eq!(value.to_bits(), arrays_in_place(a, t, n).to_bits());
        let (_, tape) = arrays_in_place_tape::value_and_grad(a, t, n);
        same(
            &[g.a[0], g.a[1], g.a[2], g.t],
            &[tape.a[0], tape.a[1], tape.a[2], tape.t],
            "engines",
        );
        let point = [a[0], a[1], a[2], t];
        check_gradient(
            |p| arrays_in_place([p[0], p[1], p[2]], p[3], n),
            &point,
            &[g.a[0], g.a[1], g.a[2], g.t],
            "arrays in place",
        );
    }
    assert!(arrays_in_place::tape_stats([1.0, 2.0, 3.0], 2.0, 2).compiled);
}

// A running minimum over a loop (k-means' cost, with a nonlinear term so
// that the Hessian is not constant): each comparison is a decision the
// forward pass keeps as one bit, and forward-over-reverse drops the
// tangent of the function's value (and so of every distance, which only
// flows into it and into comparisons) without changing H·v.
both!(nearest, nearest_tape, fn(c: &[f64], #[no_grad] p: &[f64], d: usize) -> f64 {
    let k = c.len() / d;
    let n = p.len() / d;
    let mut total = 0.0;
    for i in 0..n {
        let mut best = f64::INFINITY;
        for j in 0..k {
            let mut distance = 0.0;
            for e in 0..d {
                let difference = p[i * d + e] - c[j * d + e];
                distance += difference * difference;
            }
            if distance < best {
                best = distance;
            }
        }
        total += best * best.sqrt();
    }
    total
});

#[test]
fn decisions_are_kept_as_bits_and_hvp_ignores_the_value() {
    let mut rng = Rng::new(47);
    let (d, k) = (3, 5);
    for n in [1, 7, 30] {
        let c = rng.vec(k * d, -1.0, 1.0);
        let p = rng.vec(n * d, -1.5, 1.5);
        let (g, t) = agree!(nearest, nearest_tape, (&c, &p, d), "nearest");
        same(&g.c, &t.c, "nearest c");
        check_gradient(|c| nearest(c, &p, d), &c, &g.c, "nearest");
        // H·v against the tape's forward-over-reverse, and against central
        // differences of the gradient along v (the cost is smooth near c:
        // no distance ties at these random points).
        let v = rng.vec(k * d, -1.0, 1.0);
        let (gradient, hv) = nearest::grad_and_hvp(&c, &p, d, &nearest::Grad { c: v.clone() });
        same(&gradient.c, &g.c, "grad_and_hvp's gradient");
        let hv_tape = nearest_tape::hvp(&c, &p, d, &nearest_tape::Grad { c: v.clone() });
        same(&hv.c, &hv_tape.c, "nearest hvp");
        let h = 1e-5;
        let along = |s: f64| {
            let moved: Vec<f64> = c.iter().zip(&v).map(|(c, v)| c + s * v).collect();
            nearest::grad(&moved, &p, d).c
        };
        let differences = central_difference(along, h);
        // Central differences of a smooth gradient: error O(h²) ≈ 1e-10
        // times the third derivatives, plus rounding ≈ 1e-16 / h.
        assert_close_tol(&hv.c, &differences, 1e-6, "nearest hvp against differences");
        // One bit per comparison; nothing else is a decision or a word.
        let stats = nearest::tape_stats(&c, &p, d);
        assert_eq!((stats.decisions, stats.words), (n * k, 0), "{stats:?}");
        assert_eq!(stats.bytes_used, 8 * (stats.reals + (n * k).div_ceil(64)));
    }
}

// A running maximum and minimum (`m = m.max(v)`): the forward pass keeps
// which operand each `max`/`min` returned, one bit, instead of every old
// `m` that the adjoint would otherwise read.
both!(spread, spread_tape, fn(x: &[f64]) -> f64 {
    let mut largest = f64::NEG_INFINITY;
    let mut smallest = f64::INFINITY;
    for &v in x {
        largest = largest.max(v);
        smallest = v.min(smallest);
    }
    let mut total = 0.0;
    for &v in x {
        total += (v - largest).exp();
    }
    total.ln() + largest - smallest * smallest
});

#[test]
fn max_and_min_keep_which_operand_they_returned() {
    let mut rng = Rng::new(53);
    for n in [1, 5, 64, 65, 200] {
        let mut x = rng.vec(n, -2.0, 2.0);
        let (g, t) = agree!(spread, spread_tape, (&x), "spread");
        same(&g.x, &t.x, "spread x");
        check_gradient(|x| spread(x), &x, &g.x, "spread");
        let stats = spread::tape_stats(&x);
        // Two decisions per element; the partial of each `exp`, and the
        // final `total` and `smallest` (read by `ln` and the product).
        assert_eq!((stats.decisions, stats.reals), (2 * n, n + 2), "{stats:?}");
        // Ties at the maximum and the minimum (not differentiable there:
        // the engines agree on which operand gets the adjoint).
        if n > 3 {
            let (top, bottom) = (
                x.iter().copied().fold(f64::MIN, f64::max),
                x.iter().copied().fold(f64::MAX, f64::min),
            );
            x[1] = top;
            x[2] = bottom;
            let (g, t) = agree!(spread, spread_tape, (&x), "spread with ties");
            same(&g.x, &t.x, "spread with ties");
        }
    }
    // All equal.
    let x = [1.0, 1.0, 1.0];
    let (g, t) = agree!(spread, spread_tape, (&x), "spread of ties");
    same(&g.x, &t.x, "spread of ties");
}

/// A stencil whose forward pass keeps nothing: the adjoint evaluates the
/// branch conditions and the values it needs again from the arguments.
#[differentiate]
fn stencil_keeping_nothing(x: &[f64], k: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let d = x[i + 1] - k * x[i] * x[i];
        if x[i] > 0.0 {
            s += d * d;
        } else {
            s -= d * x[i] * 0.5;
        }
    }
    s
}

/// The same stencil, checking its arguments first.
#[differentiate]
fn stencil_checking_its_arguments(x: &[f64], k: f64) -> f64 {
    assert!(x.len() > 2, "at least three points");
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let d = x[i + 1] - k * x[i] * x[i];
        s += d * d;
    }
    s
}

#[test]
fn grad_runs_the_adjoint_alone_where_the_forward_pass_keeps_nothing() {
    let x = [0.3, -0.7, 1.1, 0.4, -0.2, 0.9];
    let k = 0.8;
    // Nothing kept: `grad` needs only the adjoint, which reads the
    // arguments; it gives what `value_and_grad` gives, to the bit, and
    // agrees with central differences and with the tape.
    let stats = stencil_keeping_nothing::tape_stats(&x, k);
    assert!(stats.compiled && stats.bytes_used == 0, "{stats:?}");
    let g = stencil_keeping_nothing::grad(&x, k);
    let (value, with_value) = stencil_keeping_nothing::value_and_grad(&x, k);
    assert_eq!(value, stencil_keeping_nothing(&x, k));
    assert_eq!(g.x, with_value.x);
    assert_eq!(g.k, with_value.k);
    // The parameters and the gradient's fields as one list, `k` last.
    let flat = |x: &[f64], k: f64| -> Vec<f64> { x.iter().copied().chain([k]).collect() };
    let f = |p: &[f64]| stencil_keeping_nothing(&p[..x.len()], p[x.len()]);
    check_gradient(f, &flat(&x, k), &flat(&g.x, g.k), "stencil");
    // A second point where other branches are taken.
    let y = [-0.3, 0.7, -1.1, -0.4, 0.2, 0.9];
    let g = stencil_keeping_nothing::grad(&y, k);
    check_gradient(f, &flat(&y, k), &flat(&g.x, g.k), "stencil, other branches");
    // Forward over reverse runs the adjoint alone too: each Hessian row
    // against central differences of the gradient (step 1e-6: error
    // O(1e-10) for these O(1) third derivatives).
    let rows = stencil_keeping_nothing::hessian(&y, k);
    for (i, row) in rows.iter().enumerate() {
        let at = |shift: f64| {
            let mut p = flat(&y, k);
            p[i] += shift;
            let g = stencil_keeping_nothing::grad(&p[..y.len()], p[y.len()]);
            flat(&g.x, g.k)
        };
        let expected = central_difference(at, 1e-6);
        assert_close(&flat(&row.x, row.k), &expected, "Hessian row");
    }
}

#[test]
#[should_panic(expected = "at least three points")]
fn grad_still_checks_the_arguments_a_function_asserts() {
    // An assertion is something the forward pass does besides its value,
    // so `grad` runs it: the derivative panics where the function does.
    let _ = stencil_checking_its_arguments::grad(&[1.0, 2.0], 0.5);
}

/// A straight-line helper whose forward pass keeps nothing (its adjoint
/// evaluates its few products again).
#[differentiate(compiled)]
fn pair_energy(a: f64, b: f64) -> f64 {
    let d = a - b;
    d * d * (a + b) + a * b
}

/// A helper whose forward pass keeps the states it overwrites.
#[differentiate(compiled)]
fn iterated(a: f64) -> f64 {
    let mut s = a;
    for _ in 0..3 {
        s = s.sin() * s + 0.5;
    }
    s
}

/// Keeps nothing of its own; what its callees keep decides.
#[differentiate(compiled)]
fn chain_energy(x: &[f64]) -> f64 {
    let mut total = 0.0;
    for i in 1..x.len() {
        total += pair_energy(x[i - 1], x[i]);
    }
    total
}

#[differentiate(compiled)]
fn chain_iterated(x: &[f64]) -> f64 {
    let mut total = 0.0;
    for i in 0..x.len() {
        total += iterated(x[i]) * x[i];
    }
    total
}

/// Calls nested three deep (`depth2` -> `depth1` -> `chain_energy` ->
/// `pair_energy`), as deep as the consts see, and four deep.
#[differentiate(compiled)]
fn depth1(x: &[f64]) -> f64 {
    chain_energy(x) * 0.5
}
#[differentiate(compiled)]
fn depth2(x: &[f64]) -> f64 {
    depth1(x) + x[0]
}
#[differentiate(compiled)]
fn depth3(x: &[f64]) -> f64 {
    depth2(x) - x[2]
}

/// Mutual recursion: each function's consts read the other's a level
/// down, never their own.
#[differentiate(compiled)]
fn even_steps(x: f64, n: usize) -> f64 {
    if n == 0 {
        return x;
    }
    odd_steps(x * 1.1, n - 1).sin()
}
#[differentiate(compiled)]
fn odd_steps(x: f64, n: usize) -> f64 {
    if n == 0 {
        return x * x;
    }
    even_steps(x + 0.3, n - 1) * x
}

/// Whether a function keeps something is known through its callees: where
/// none keeps anything, `grad` runs the adjoint alone (its gradient must
/// still be the one `value_and_grad` computes with both passes, and the
/// finite differences'); where one does, both passes run.
#[test]
fn what_callees_keep_decides_whether_the_adjoint_runs_alone() {
    assert!(!pair_energy::__KEEPS_3 && !chain_energy::__KEEPS_3);
    assert!(iterated::__KEEPS_3 && chain_iterated::__KEEPS_3);
    assert!(!depth2::__KEEPS_3, "four levels see through three calls");
    assert!(depth3::__KEEPS_3, "beyond them, something is assumed kept");
    assert!(even_steps::__KEEPS_3 && odd_steps::__KEEPS_3);
    let x = [0.3, -0.8, 1.2, 0.1, -0.4];
    macro_rules! alone_and_both {
        ($f:ident) => {{
            let what = stringify!($f);
            let alone = $f::grad(&x).x;
            let (value, both) = $f::value_and_grad(&x);
            assert_eq!(value.to_bits(), $f(&x).to_bits(), "{what}: value");
            // The same adjoint on the same arguments: the same bits.
            assert_eq!(alone, both.x, "{what}: grad against value_and_grad");
            check_gradient($f, &x, &alone, what);
        }};
    }
    alone_and_both!(chain_energy);
    alone_and_both!(chain_iterated);
    alone_and_both!(depth2);
    alone_and_both!(depth3);
    for n in 0..5 {
        let g = even_steps::grad(0.4, n).x;
        let expected = central_difference(|h| vec![even_steps(0.4 + h, n)], 1e-6);
        assert_close(&[g], &expected, "even_steps");
    }
}

/// One real input, a call and a method with an infinite partial at 0
/// (`sqrt`): forward mode, its derivative checked.
#[differentiate(compiled)]
fn one_input_checked(x: f64) -> f64 {
    let s = (x * x + 1.0).sqrt();
    pair_energy(x, 0.5) * s + 0.0 * (x - 1.0).sqrt()
}

#[differentiate(tape)]
fn one_input_checked_tape(x: f64) -> f64 {
    let s = (x * x + 1.0).sqrt();
    pair_energy(x, 0.5) * s + 0.0 * (x - 1.0).sqrt()
}

/// Forward mode's derivative where it is finite; reverse mode's where it
/// is not (at 1, `0.0 * sqrt(x - 1)` has the partial ∞ under a zero
/// factor: NaN in forward mode, 0 in the compiled adjoint, which `grad`
/// must return, so at 1 the gradient is the first term's).
#[test]
fn one_input_with_singular_methods_is_forward_mode_checked() {
    for x in [1.5, 2.0, 3.25] {
        let (value, g) = one_input_checked::value_and_grad(x);
        assert_eq!(value.to_bits(), one_input_checked(x).to_bits());
        let tape = one_input_checked_tape::grad(x).x;
        assert!(
            (g.x - tape).abs() <= 1e-12 * tape.abs().max(1.0),
            "{x}: {} vs {tape}",
            g.x
        );
        let expected = central_difference(|h| vec![one_input_checked(x + h)], 1e-6);
        assert_close(&[g.x], &expected, "one_input_checked");
        let mut sum = one_input_checked::Grad::default();
        one_input_checked::grad_into(x, &mut sum);
        one_input_checked::grad_into(x, &mut sum);
        assert_eq!(sum.x, 2.0 * g.x);
    }
    // At 1, by hand: p = (x - 0.5)²(x + 0.5) + 0.5x = 0.875,
    // p' = 2(x - 0.5)(x + 0.5) + (x - 0.5)² + 0.5 = 2.25, s = √2, and
    // f' = p's + px/s.
    let g = one_input_checked::grad(1.0).x;
    let sqrt2 = 2f64.sqrt();
    let expected = 2.25 * sqrt2 + 0.875 / sqrt2;
    assert!(
        (g - expected).abs() <= 1e-14 * expected,
        "{g} vs {expected}"
    );
    let tangent = one_input_checked::Grad { x: 1.0 };
    assert!(one_input_checked::jvp(1.0, &tangent).1.is_nan());
}

/// A `.sum()`/`.product()` without a turbofish whose type only a later use
/// fixes (the value returned), as rustc infers it: of the function's float,
/// on both engines.
#[differentiate]
fn reduced_untyped(x: &[f64]) -> f64 {
    let s = x.iter().sum();
    s
}

#[differentiate]
fn reduced_untyped_on_tape(x: &[f64], w: f64) -> f64 {
    let p: f64;
    p = x.iter().filter(|v| **v > 0.0).product();
    w * p
}

#[test]
fn reductions_typed_by_a_later_use() {
    let x = [1.5, 2.0, -0.5, 3.0];
    assert_eq!(reduced_untyped::grad(&x).x, vec![1.0; 4]);
    let g = reduced_untyped_on_tape::grad(&x, 3.0);
    // w·Π of the positive elements: 3 · (1.5 · 2 · 3).
    assert_eq!(g.x, vec![3.0 * 6.0, 3.0 * 4.5, 0.0, 3.0 * 3.0]);
    assert_eq!(g.w, 9.0);
}

/// Conversions into the float (`f64::from`, `.into()`, `as`) keep a
/// differentiated value's derivative, on both engines.
#[differentiate]
fn converted(x: f64, v: &[f64], k: u32) -> f64 {
    let y: f64 = x.into();
    let z = x as f64;
    let w = f64::from(v[0]) + f64::from(k) + f64::from(0.5f32);
    y * z + w * x
}

#[differentiate(tape)]
fn converted_on_tape(x: f64, v: &[f64], k: u32) -> f64 {
    let y: f64 = x.into();
    let z = x as f64;
    let w = f64::from(v[0]) + f64::from(k) + f64::from(0.5f32);
    y * z + w * x
}

#[test]
fn conversions_into_the_float_keep_derivatives() {
    let (x, v, k) = (3.0, [2.0], 4);
    // ∂/∂x = 2x + w, ∂/∂v₀ = x, with w = v₀ + k + 0.5.
    let expected = (2.0 * x + (v[0] + 4.0 + 0.5), x);
    let g = converted::grad(x, &v, k);
    assert_eq!((g.x, g.v[0]), expected);
    let g = converted_on_tape::grad(x, &v, k);
    assert_eq!((g.x, g.v[0]), expected);
    assert_eq!(converted(x, &v, k), 9.0 + 6.5 * 3.0);
}

// Loops whose buffers are indexed only at the loop variable, every
// iteration: the adjoint narrows them to the range before the reversed
// loop. Around them, the cases it must leave alone: a buffer shorter than
// the range indexed only inside a branch or after a `continue` (narrowing
// it would panic), an empty range, an inclusive and a reversed one.
both!(narrowing, narrowing_tape, fn(x: &[f64], n: usize, m: usize) -> f64 {
    let mut a = vec![0.0; x.len()];
    for i in 0..n {
        a[i] = x[i] * x[i] + 1.0;
    }
    let mut b = vec![0.0; m];
    for i in 0..n {
        if i < m {
            b[i] = a[i] * x[i];
        }
    }
    let mut c = vec![0.0; m];
    for i in 0..n {
        if i >= m {
            continue;
        }
        c[i] = b[i].sin() + a[i];
    }
    for i in n..n {
        a[i] = 0.0;
    }
    let mut total = 0.0;
    for i in 0..=m - 1 {
        total += c[i] * b[i];
    }
    for i in (0..n).rev() {
        total += a[i] * x[i] / (1.0 + total * total);
    }
    total
});

// The same loops called with a constant buffer, whose adjoint the callee
// drops (its sink narrows like any other), and with a differentiated one.
both!(narrowing_called, narrowing_called_tape, fn(x: &[f64], #[no_grad] c: &[f64], n: usize) -> f64 {
    narrowing(c, n, 2) * x[0] + narrowing(x, n, 1)
});

#[test]
fn loops_indexed_at_their_variable_are_narrowed_safely() {
    let c = [0.9, 0.4, -0.6, 1.3, 0.8, 2.0];
    for n in [0, 3, 5] {
        let x = [0.3, -0.7, 1.1, 0.5, -0.2];
        let g = narrowing_called::grad(&x, &c, n);
        let tape = narrowing_called_tape::grad(&x, &c, n);
        assert_close_tol(&g.x, &tape.x, 1e-12, "a caller, compiled against the tape");
        let fd = finite_difference(|x| narrowing_called(x, &c, n), &x);
        assert_close(&g.x, &fd, "a caller, against finite differences");
    }
    let x = [0.3, -0.7, 1.1, 0.5, -0.2];
    for (n, m) in [(5, 3), (4, 4), (5, 1), (3, 2)] {
        let g = narrowing::grad(&x, n, m);
        let tape = narrowing_tape::grad(&x, n, m);
        assert_close_tol(&g.x, &tape.x, 1e-12, "compiled against the tape");
        let fd = finite_difference(|x| narrowing(x, n, m), &x);
        assert_close(&g.x, &fd, "compiled against finite differences");
        assert_eq!(narrowing(&x, n, m), narrowing_tape(&x, n, m));
    }
}

// Loops that overwrite a scratch buffer element by element at their
// variable, and do nothing else with it, keep its old elements in one copy
// before the loop; the adjoint puts them back after running the loop
// backwards. Here inside another loop (plain and, on the compiled path,
// `#[checkpoint]`ed), over ranges that start late, end early or are empty,
// with the buffer read between the loops.
macro_rules! stages {
    ($(#[$engine:meta])* $name:ident $(, #[$attr:meta])?) => {
        $(#[$engine])*
        fn $name(x: &[f64], lo: usize, hi: usize) -> f64 {
            let n = x.len();
            let mut stage = vec![0.0; n];
            let mut scaled = vec![0.0; n];
            for i in 0..n {
                stage[i] = x[i].sin();
            }
            let mut total = 0.0;
            $(#[$attr])?
            for round in 0..3 {
                let mut s = 0.0;
                for i in 0..n {
                    s += stage[i] * stage[i] * x[i];
                }
                total += (s * s + 1.0).sqrt();
                let c = round as f64 + 0.5;
                for i in lo..hi {
                    stage[i] = x[i] * c + total;
                }
                for i in 0..n {
                    scaled[i] = (0.3 * stage[i]).exp() * x[i];
                }
                total += 0.1 * scaled[n - 1] * scaled[0];
            }
            total
        }
    };
}
stages!(
    #[differentiate(compiled)]
    stages_in_place
);
stages!(
    #[differentiate(tape)]
    stages_in_place_tape
);
stages!(#[differentiate(compiled)] stages_checkpointed, #[checkpoint]);

#[test]
fn loops_overwriting_a_buffer_keep_its_elements_in_one_copy() {
    let x = [0.3, -0.7, 1.1, 0.5, -0.2, 0.9];
    for (lo, hi) in [(0, 6), (1, 5), (2, 2), (4, 1), (5, 6)] {
        let tape = stages_in_place_tape::grad(&x, lo, hi).x;
        let fd = finite_difference(|x| stages_in_place_tape(x, lo, hi), &x);
        assert_close(
            &tape,
            &fd,
            &format!("{lo}..{hi}: the tape, finite differences"),
        );
        for (name, g) in [
            ("plain", stages_in_place::grad(&x, lo, hi).x),
            ("checkpointed", stages_checkpointed::grad(&x, lo, hi).x),
        ] {
            assert_close_tol(&g, &tape, 1e-12, &format!("{name} {lo}..{hi}: the tape"));
        }
    }
}

// A buffer overwritten whole after a loop wrote all of its elements
// (so the assignment keeps nothing of its contents) by one of another
// length: the adjoint gives it its old length back before the reverse of
// that loop puts its old elements back (it indexed past the new length).
both!(reassigned_shorter, reassigned_shorter_tape, fn(x: &[f64]) -> f64 {
    let n = x.len();
    let mut t = vec![0.0; n];
    let mut s = 0.0;
    for k in 0..3 {
        for j in 0..n {
            t[j] = x[j] * (k as f64 + 1.0);
        }
        s += t[0] * t[n - 1];
    }
    for j in 0..n {
        t[j] = x[j] * 0.5;
    }
    t = vec![x[0]; 1];
    s + t[0] * t[0]
});

#[test]
fn a_buffer_reassigned_with_another_length_gets_its_length_back() {
    let x = [0.5, -1.0, 2.0, 0.3];
    let g = reassigned_shorter::grad(&x).x;
    let tape = reassigned_shorter_tape::grad(&x).x;
    assert_close_tol(&g, &tape, 1e-12, "compiled against the tape");
    let fd = finite_difference(reassigned_shorter, &x);
    assert_close(&g, &fd, "against finite differences");
}

// Long local buffers (past the length from which the adjoint gives the
// memory of the buffers it is done with back to the stack, for the next
// buffer a pass makes): slopes a callee returns, stages made per step, a
// whole reassignment, an early exit in some steps and not others, a
// shadowing `let`. The first call leaves spare buffers with the thread's
// stack, the later ones run on them: every call must give the same
// gradient, that of the tape and of finite differences (a buffer given
// back while still read, or handed out with old contents, would not).
macro_rules! long_steps {
    ($name:ident, $slope:ident, $engine:ident) => {
        #[differentiate($engine)]
        fn $slope(x: &[f64], y: &[f64]) -> Vec<f64> {
            let mut z = vec![0.0; x.len()];
            z[0] = x[0];
            for i in 1..x.len() {
                z[i] = x[i] * y[i - 1].sin();
            }
            z
        }

        #[differentiate($engine)]
        fn $name(x: &[f64], steps: usize, #[no_grad] limit: f64) -> f64 {
            let n = x.len();
            let mut y = vec![0.1; n];
            let mut total = 0.0;
            for k in 0..steps {
                let k1 = $slope(x, &y);
                let mut stage = vec![0.0; n];
                for i in 0..n {
                    stage[i] = y[i] + 0.01 * k1[i];
                }
                if stage[0] > limit {
                    return total + stage[1] * stage[n - 1];
                }
                let k2 = $slope(x, &stage);
                let mut next = vec![0.0; n];
                for i in 0..n {
                    next[i] = stage[i] + 0.01 * k2[i];
                }
                y = next;
                total += y[k % n] * stage[(k + 1) % n];
            }
            let y = $slope(x, &y);
            total + y[n - 1] * y[n / 2]
        }
    };
}
long_steps!(long_steps, long_slope, compiled);
long_steps!(long_steps_tape, long_slope_tape, tape);

#[differentiate(compiled)]
fn long_states(x: &[f64]) -> Vec<f64> {
    let mut y = long_slope(x, x);
    for _ in 0..2 {
        let next = long_slope(x, &y);
        y = next;
    }
    y
}

#[differentiate(tape)]
fn long_states_tape(x: &[f64]) -> Vec<f64> {
    let mut y = long_slope_tape(x, x);
    for _ in 0..2 {
        let next = long_slope_tape(x, &y);
        y = next;
    }
    y
}

#[test]
fn long_buffers_reuse_the_memory_the_adjoint_gives_back() {
    let mut rng = Rng::new(11);
    let mut x = rng.vec(300, -1.0, 1.0);
    // stage[0] is 0.1 + 0.01 x[0] (2k + 1) at step k: 0.105, 0.115, ...
    x[0] = 0.5;
    for (limit, what) in [(1.0, "no exit"), (0.12, "exit at step 2")] {
        let tape = long_steps_tape::grad(&x, 4, limit).x;
        let fd = finite_difference(|x| long_steps_tape(x, 4, limit), &x);
        assert_close(&tape, &fd, &format!("{what}: the tape, finite differences"));
        for call in 0..3 {
            let g = long_steps::grad(&x, 4, limit).x;
            assert_close_tol(&g, &tape, 1e-12, &format!("{what}, call {call}: the tape"));
        }
        let v = rng.vec(300, -1.0, 1.0);
        let hv = long_steps::hvp(&x, 4, limit, &long_steps::Grad { x: v.clone() }).x;
        let hv_tape = long_steps_tape::hvp(&x, 4, limit, &long_steps_tape::Grad { x: v }).x;
        assert_close_tol(
            &hv,
            &hv_tape,
            1e-10,
            &format!("{what}: Hessian-vector product"),
        );
    }
    // A Jacobian runs the adjoint once per output from copies of one
    // record, made in the spare buffers of the copy.
    let x = &x[..260];
    let (value, rows) = long_states::jacobian(x);
    let (tape_value, tape_rows) = long_states_tape::jacobian(x);
    assert_eq!(value, tape_value);
    for (k, (row, tape_row)) in rows.iter().zip(&tape_rows).enumerate() {
        assert_close_tol(&row.x, &tape_row.x, 1e-12, &format!("Jacobian row {k}"));
    }
}

// New long buffers whose elements a loop then sets, made in spare memory
// as it is, without the fill (`a`: every element set, the first before the
// loop), beside ones that must keep their fill: an element the loop leaves
// (`b`, `e`), elements read before they are set (`c`), writes under a
// condition (`d`). And long buffers the forward pass is done with, whose
// memory serves its next ones. The calls before leave spare buffers of
// other values with the thread's stack: a buffer wrongly made without its
// fill would read them (checked by making every `vec![..]` so: the value
// and the gradient then differ).
macro_rules! partly_set {
    ($name:ident, $engine:ident) => {
        #[differentiate($engine)]
        fn $name(x: &[f64]) -> f64 {
            let n = x.len();
            let mut a = vec![0.0; n];
            a[0] = x[0];
            for i in 1..n {
                a[i] = x[i] * x[i - 1];
            }
            let mut b = vec![0.5; n];
            for i in 1..n {
                b[i] = a[i].sin();
            }
            let mut c = vec![0.25; n];
            for i in 0..n {
                c[i] = c[i] + a[i] * b[i];
            }
            let mut d = vec![0.125; n];
            for i in 0..n {
                if x[i] > 0.0 {
                    d[i] = c[i] * x[i];
                }
            }
            let mut e = vec![2.0; n];
            for i in 0..n - 1 {
                e[i] = d[i] + b[i];
            }
            let mut s = 0.0;
            for i in 0..n {
                s += a[i] + b[i] * c[i] + d[i] * e[i];
            }
            s
        }
    };
}
partly_set!(partly_set, compiled);
partly_set!(partly_set_tape, tape);

#[test]
fn new_buffers_set_whole_need_no_fill_and_others_keep_theirs() {
    let mut rng = Rng::new(12);
    let x = rng.vec(300, -1.0, 1.0);
    let tape = partly_set_tape::grad(&x).x;
    let fd = finite_difference(partly_set_tape, &x);
    assert_close(&tape, &fd, "the tape, finite differences");
    let tangent = partly_set::Grad {
        x: rng.vec(300, -1.0, 1.0),
    };
    let expected_dot: f64 = tape.iter().zip(&tangent.x).map(|(g, t)| g * t).sum();
    for call in 0..3 {
        // Spare buffers of other values, for the calls below.
        let _ = long_steps::grad(&rng.vec(300, 2.0, 3.0), 3, 10.0);
        let (value, g) = partly_set::value_and_grad(&x);
        assert_eq!(value, partly_set(&x), "call {call}: the value");
        assert_close_tol(&g.x, &tape, 1e-12, &format!("call {call}: the tape"));
        let (value, dot) = partly_set::jvp(&x, &tangent);
        assert_eq!(value, partly_set(&x), "call {call}: jvp's value");
        near(dot, expected_dot, 1e-10, &format!("call {call}: jvp"));
        let hv = partly_set::hvp(&x, &tangent).x;
        let hv_tape = partly_set_tape::hvp(
            &x,
            &partly_set_tape::Grad {
                x: tangent.x.clone(),
            },
        )
        .x;
        assert_close_tol(&hv, &hv_tape, 1e-10, &format!("call {call}: hvp"));
    }
}

// Buffers of rows (`C` reals per row, `C` a literal) set row by row by
// two nested loops, made the same way without their fill (`r`, and `u`
// with its index and length written the other way round), beside ones
// that must keep it: a column the inner loop leaves (`q`), writes under a
// condition (`w`). (Checked as above: with every row buffer made without
// its fill, the value and the gradient differ.)
macro_rules! rows_set {
    ($name:ident, $engine:ident) => {
        #[differentiate($engine)]
        fn $name(x: &[f64]) -> f64 {
            let m = x.len() / 3;
            let mut r = vec![0.0; 3 * m];
            for i in 0..m {
                let s = x[3 * i].sin();
                for j in 0..3 {
                    r[3 * i + j] = s * x[3 * i + j];
                }
            }
            let mut u = vec![0.0; m * 4];
            for i in 0..m {
                for j in 0..4 {
                    u[j + i * 4] = r[3 * i + j % 3] * x[(i + j) % x.len()];
                }
            }
            let mut q = vec![0.5; 3 * m];
            for i in 0..m {
                for j in 0..2 {
                    q[3 * i + j] = r[3 * i + j].cos();
                }
            }
            let mut w = vec![0.25; 3 * m];
            for i in 0..m {
                for j in 0..3 {
                    if x[3 * i + j] > 0.0 {
                        w[3 * i + j] = q[3 * i + j] * x[3 * i + j];
                    }
                }
            }
            let mut s = 0.0;
            for i in 0..3 * m {
                s += r[i] * q[i] + w[i] * w[i];
            }
            for i in 0..4 * m {
                s += 0.5 * u[i];
            }
            s
        }
    };
}
rows_set!(rows_set, compiled);
rows_set!(rows_set_tape, tape);

#[test]
fn buffers_of_rows_set_whole_need_no_fill_and_others_keep_theirs() {
    let mut rng = Rng::new(13);
    let x = rng.vec(300, -1.0, 1.0);
    let tape = rows_set_tape::grad(&x).x;
    let fd = finite_difference(rows_set_tape, &x);
    assert_close(&tape, &fd, "the tape, finite differences");
    let tangents: Vec<rows_set::Grad> = (0..3)
        .map(|_| rows_set::Grad {
            x: rng.vec(300, -1.0, 1.0),
        })
        .collect();
    for call in 0..3 {
        // Spare buffers of other values, for the calls below.
        let _ = long_steps::grad(&rng.vec(300, 2.0, 3.0), 3, 10.0);
        let (value, g) = rows_set::value_and_grad(&x);
        assert_eq!(value, rows_set(&x), "call {call}: the value");
        assert_close_tol(&g.x, &tape, 1e-12, &format!("call {call}: the tape"));
        let (value, dots) = rows_set::jvps(&x, &tangents);
        assert_eq!(value, rows_set(&x), "call {call}: jvps's value");
        for (k, (dot, tangent)) in dots.iter().zip(&tangents).enumerate() {
            let expected: f64 = tape.iter().zip(&tangent.x).map(|(g, t)| g * t).sum();
            near(*dot, expected, 1e-10, &format!("call {call}: jvps {k}"));
        }
    }
}

// A local buffer moved into a variable by the last statement of its block
// (`y = next;`, as a time-stepping loop writes it): the forward pass moves
// it, keeping the old contents whole where the adjoint reads them, and the
// adjoint moves the variable's adjoint into the buffer's. Lengths that
// change, short buffers (kept by copy) and long ones (moved), a branch's
// block, the buffer made by a call or by `vec![..]`, and buffers whose
// values the adjoint also reads (kept at the end of their block, so copied
// as before).
macro_rules! moved_states {
    ($name:ident, $grow:ident, $engine:ident) => {
        #[differentiate($engine)]
        fn $grow(y: &[f64], a: f64) -> Vec<f64> {
            let mut out = vec![0.0; y.len() + 1];
            for i in 0..y.len() {
                out[i] = (y[i] * a).sin() + y[i];
            }
            out[y.len()] = a * y[0];
            out
        }

        #[differentiate($engine)]
        fn $name(x: &[f64], steps: usize) -> f64 {
            let mut y = vec![0.0; x.len()];
            for i in 0..x.len() {
                y[i] = x[i];
            }
            let mut total = 0.0;
            for k in 0..steps {
                if k % 3 == 1 {
                    // Longer by one, from a call.
                    let next = $grow(&y, x[k % x.len()]);
                    y = next;
                } else if k % 3 == 2 {
                    // Shorter by one, from `vec![..]`, its values read too.
                    let mut next = vec![0.0; y.len() - 1];
                    for i in 0..next.len() {
                        next[i] = y[i] * y[i + 1] * 0.5 + x[i % x.len()];
                    }
                    total += next[0] * next[next.len() - 1];
                    y = next;
                } else {
                    // The same length, the old contents read by the adjoint.
                    let mut next = vec![0.0; y.len()];
                    for i in 0..y.len() {
                        next[i] = (y[i] + y[(i + 1) % y.len()]).cos();
                    }
                    y = next;
                }
                total += y[k % y.len()];
            }
            let mut s = 0.0;
            for v in &y {
                s += v * v;
            }
            s + total
        }
    };
}
moved_states!(moved_states, grow, compiled);
moved_states!(moved_states_tape, grow_tape, tape);

#[test]
fn buffers_moved_at_the_end_of_their_block() {
    let mut rng = Rng::new(23);
    // 4 reals (kept by copy) and 300 (moved whole).
    for n in [4, 300] {
        let x = rng.vec(n, -1.0, 1.0);
        for steps in [0, 1, 5] {
            let what = format!("n = {n}, {steps} steps");
            let (g, tape_g) = agree!(moved_states, moved_states_tape, (&x, steps), &what);
            same(&g.x, &tape_g.x, &format!("{what}: the tape"));
            let fd = finite_difference(|x| moved_states(x, steps), &x);
            assert_close(&g.x, &fd, &format!("{what}: finite differences"));
            let v = rng.vec(n, -1.0, 1.0);
            let (_, jv) = moved_states::jvp(&x, steps, &moved_states::Grad { x: v.clone() });
            let dot: f64 = g.x.iter().zip(&v).map(|(a, b)| a * b).sum();
            near(jv, dot, 1e-12 * (1.0 + dot.abs()), &format!("{what}: jvp"));
            let hv = moved_states::hvp(&x, steps, &moved_states::Grad { x: v.clone() }).x;
            let hv_tape = moved_states_tape::hvp(&x, steps, &moved_states_tape::Grad { x: v }).x;
            assert_close_tol(
                &hv,
                &hv_tape,
                1e-10,
                &format!("{what}: Hessian-vector product"),
            );
        }
    }
}

// A work buffer a loop overwrites whole (kept by moving it when it is
// long: the loop writes into other memory, and the adjoint moves it back)
// or in part (its elements there kept in one copy), read between the
// rounds, and an array overwritten the same ways.
both!(overwritten, overwritten_tape, fn(x: &[f64], rounds: usize) -> f64 {
    let n = x.len();
    let mut work = vec![0.0; n];
    let mut small = [0.0; 3];
    let mut total = 0.0;
    for r in 0..rounds {
        let scale = r as f64 + 1.0;
        for i in 0..n {
            work[i] = x[i] * scale + x[(i + r) % n];
        }
        for k in 0..3 {
            small[k] = work[k] * x[n - 1 - k];
        }
        for i in 0..n {
            total += work[i] * work[(i + 1) % n] * small[i % 3];
        }
        for i in 1..n / 2 {
            work[i] = x[i] * x[n - 1 - i];
        }
        for k in 1..3 {
            small[k] = x[k] * scale;
        }
        for i in 0..n {
            total += work[i] * work[n - 1 - i] * small[(i + r) % 3];
        }
    }
    total
});

#[test]
fn buffers_overwritten_whole_or_in_part_by_loops() {
    let mut rng = Rng::new(29);
    // 6 reals (kept by copy) and 300 (the whole buffer moved).
    for n in [6, 300] {
        let x = rng.vec(n, -1.0, 1.0);
        for rounds in [0, 1, 3] {
            let what = format!("n = {n}, {rounds} rounds");
            let (g, tape_g) = agree!(overwritten, overwritten_tape, (&x, rounds), &what);
            same(&g.x, &tape_g.x, &format!("{what}: the tape"));
            let fd = finite_difference(|x| overwritten(x, rounds), &x);
            assert_close(&g.x, &fd, &format!("{what}: finite differences"));
            let v = rng.vec(n, -1.0, 1.0);
            let hv = overwritten::hvp(&x, rounds, &overwritten::Grad { x: v.clone() }).x;
            let hv_tape = overwritten_tape::hvp(&x, rounds, &overwritten_tape::Grad { x: v }).x;
            assert_close_tol(
                &hv,
                &hv_tape,
                1e-10,
                &format!("{what}: Hessian-vector product"),
            );
        }
    }
}

// Copies of parameters the function writes (`let mut y = x.to_vec();`, a
// `&Vec` parameter's `.clone()`, an array's `.to_vec()`, a result that is
// a copy, copies assigned in a loop) and whole buffers assigned in a loop
// that keeps values (a call's result, a local's copy): these did not
// compile on the compiled path (a parameter's copy was a copy of the
// reference; the loop reserved room for its pushes, which a whole buffer's
// exceed).
both!(copy_written, copy_written_tape, fn(x: &[f64], w: &Vec<f64>, a: &[f64; 3]) -> f64 {
    let mut y = x.to_vec();
    y[0] = y[0] * y[1];
    let mut v = w.clone();
    for i in 0..v.len() {
        v[i] = v[i] * y[i % y.len()];
    }
    let mut b = a.to_vec();
    b[2] = b[0] * b[1];
    let mut s = v[0] * b[2];
    for k in 0..3 {
        if k == 1 {
            y = w.to_vec();
        } else {
            y = x.to_owned();
        }
        y[1] = y[1] * y[0];
        s += y[1] * y[0] + y[0];
    }
    s
});

both!(copy_result, copy_result_tape, fn(x: &[f64]) -> Vec<f64> {
    x.to_vec()
});

#[differentiate(compiled)]
fn swap_scaled(x: &[f64], y: &[f64]) -> Vec<f64> {
    vec![x[0] * y[1], x[1] * y[0]]
}

#[differentiate(tape)]
fn swap_scaled_tape(x: &[f64], y: &[f64]) -> Vec<f64> {
    vec![x[0] * y[1], x[1] * y[0]]
}

macro_rules! whole_in_loops {
    ($name:ident, $swap:ident, $engine:ident) => {
        #[differentiate($engine)]
        fn $name(x: &[f64]) -> f64 {
            let mut y = vec![1.0, 2.0];
            let z = vec![x[0] * 2.0, x[1]];
            let mut s = 0.0;
            for k in 0..3 {
                y = $swap(x, &y);
                y[1] = y[1] * y[0];
                s += y[1] * y[0];
                if k == 1 {
                    y = z.clone();
                    y[0] = y[0] * y[1];
                }
                s += y[0] * y[0];
            }
            s
        }
    };
}
whole_in_loops!(whole_in_loops, swap_scaled, compiled);
whole_in_loops!(whole_in_loops_tape, swap_scaled_tape, tape);

#[test]
fn copies_of_parameters_and_whole_buffers_assigned_in_loops() {
    let (x, w, a) = ([0.7, -1.3], vec![0.4, 1.1, -0.6], [1.5, -0.8, 0.3]);
    let (g, tape_g) = agree!(copy_written, copy_written_tape, (&x, &w, &a), "copies");
    same(&g.x, &tape_g.x, "copies: x");
    same(&g.w, &tape_g.w, "copies: w");
    same(&g.a, &tape_g.a, "copies: a");
    let mut point = x.to_vec();
    point.extend(&w);
    point.extend(a);
    let mut got = g.x.clone();
    got.extend(&g.w);
    got.extend(g.a);
    check_gradient(
        |p| copy_written(&p[..2], &p[2..5].to_vec(), &[p[5], p[6], p[7]]),
        &point,
        &got,
        "copies",
    );

    let (value, rows) = copy_result::jacobian(&x);
    assert_eq!(value, x.to_vec());
    for (i, row) in rows.iter().enumerate() {
        let unit: Vec<f64> = (0..2).map(|j| if i == j { 1.0 } else { 0.0 }).collect();
        assert_eq!(row.x, unit, "the copy's Jacobian, row {i}");
    }

    let (g, tape_g) = agree!(whole_in_loops, whole_in_loops_tape, (&x), "whole in loops");
    same(&g.x, &tape_g.x, "whole in loops");
    check_gradient(|x| whole_in_loops(x), &x, &g.x, "whole in loops");
}

// A buffer passed to two parameters of one call (`dot(x, x)`, a local
// twice, two overlapping ranges of one buffer, the vector primitive): the
// callee's adjoint adds the second argument's adjoint into a buffer of its
// own, added into the buffer's after the call (both arguments borrowing
// the one adjoint did not compile).
macro_rules! passed_twice {
    ($name:ident, $dot:ident, $engine:ident) => {
        #[differentiate($engine)]
        fn $dot(a: &[f64], b: &[f64]) -> f64 {
            let mut s = 0.0;
            for i in 0..a.len() {
                s += a[i] * b[i].sin();
            }
            s
        }

        #[differentiate($engine)]
        fn $name(x: &[f64], y: f64) -> f64 {
            let v = vec![y, y * x[0], x[2]];
            $dot(x, x) + $dot(&v, &v) * $dot(&x[..2], &x[1..3]) + deltad::dot(&x, &x) * y
        }
    };
}
passed_twice!(passed_twice, dot_sin, compiled);
passed_twice!(passed_twice_tape, dot_sin_tape, tape);

#[derive(deltad::Differentiable, Clone, Copy, Debug)]
struct Bead {
    at: f64,
    charge: f64,
}

#[differentiate]
fn coupling(a: &Bead, b: &Bead) -> f64 {
    a.charge * b.charge / (1.0 + (a.at - b.at) * (a.at - b.at))
}

// The same with values of a user type: not on the compiled path yet (a
// compile error with `compiled`, tests/ui/compiled-struct-fields.rs), so on
// the tape.
#[differentiate]
fn bead_energy(beads: &[Bead], own: &Bead) -> f64 {
    coupling(&beads[0], &beads[1]) + coupling(own, own)
}

#[test]
fn a_value_passed_to_two_parameters_of_a_call() {
    let x = [0.3, -0.8, 1.2, 0.5];
    let (y, v) = (0.7, [0.2, -0.4, 0.9, 0.1]);
    let (g, tape) = agree!(passed_twice, passed_twice_tape, (&x, y), "passed twice");
    assert_close_tol(&g.x, &tape.x, 1e-12, "x: the tape");
    near(g.y, tape.y, 1e-12, "y: the tape");
    check_gradient(|x| passed_twice(x, y), &x, &g.x, "x: finite differences");
    near(
        g.y,
        central(|y| passed_twice(&x, y), y),
        1e-6,
        "y: finite differences",
    );
    let hv = passed_twice::hvp(
        &x,
        y,
        &passed_twice::Grad {
            x: v.to_vec(),
            y: 0.3,
        },
    );
    let hv_tape = passed_twice_tape::hvp(
        &x,
        y,
        &passed_twice_tape::Grad {
            x: v.to_vec(),
            y: 0.3,
        },
    );
    assert_close_tol(&hv.x, &hv_tape.x, 1e-12, "Hessian-vector product x");
    near(hv.y, hv_tape.y, 1e-12, "Hessian-vector product y");

    let beads = [
        Bead {
            at: 0.2,
            charge: 1.5,
        },
        Bead {
            at: -0.6,
            charge: -0.8,
        },
    ];
    let own = Bead {
        at: 0.4,
        charge: 2.0,
    };
    let g = bead_energy::grad(&beads, &own);
    // d/da.charge of a.charge b.charge / (1 + d²), d = a.at - b.at, and
    // d/da.at = -2 d a.charge b.charge / (1 + d²)²; `own` with itself: d = 0.
    let (a, b) = (beads[0], beads[1]);
    let d = a.at - b.at;
    let q = 1.0 + d * d;
    let expected = [
        -2.0 * d * a.charge * b.charge / (q * q),
        b.charge / q,
        2.0 * d * a.charge * b.charge / (q * q),
        a.charge / q,
    ];
    let got = [
        g.beads[0].at,
        g.beads[0].charge,
        g.beads[1].at,
        g.beads[1].charge,
    ];
    assert_close_tol(&got, &expected, 1e-14, "beads: by hand");
    assert_close_tol(
        &[g.own.at, g.own.charge],
        &[0.0, 2.0 * own.charge],
        1e-14,
        "own: by hand",
    );
}

// Loops whose buffers are narrowed to the range's end before the loop (the
// forward pass and the adjoint re-borrow what the body indexes only at its
// variable in every iteration): an element read only when `&&`'s left side
// holds is not read in every iteration (here the range runs past the
// buffer), and a buffer the body declares is not the one of that name
// before the loop (here a shorter one).
both!(guarded_reads, guarded_reads_tape, fn(x: &[f64], n: usize) -> f64 {
    let m = x.len();
    let mut s = 0.0;
    for i in 0..n {
        let inside = i < m && x[i] > 0.0;
        if inside {
            s += x[i] * x[i];
        }
    }
    s
});

both!(inner_buffers, inner_buffers_tape, fn(x: &[f64]) -> f64 {
    let t = vec![x[0]; 1];
    let mut s = t[0];
    for i in 0..x.len() {
        let t = vec![x[i] * 2.0; x.len()];
        s += t[i] * x[i];
    }
    s
});

#[test]
fn narrowed_loops_keep_to_what_every_iteration_indexes() {
    let x = [0.5, -0.3, 1.2, 0.8];
    let n = x.len() + 2;
    let (g, tape) = agree!(guarded_reads, guarded_reads_tape, (&x, n), "guarded reads");
    assert_close_tol(&g.x, &tape.x, 1e-12, "guarded reads: the tape");
    check_gradient(
        |x| guarded_reads(x, n),
        &x,
        &g.x,
        "guarded reads: finite differences",
    );
    let (g, tape) = agree!(inner_buffers, inner_buffers_tape, (&x), "inner buffers");
    assert_close_tol(&g.x, &tape.x, 1e-12, "inner buffers: the tape");
    check_gradient(inner_buffers, &x, &g.x, "inner buffers: finite differences");
}

// Iterator chains collected into a `Vec` of reals: a new buffer whose
// elements a loop sets (maps of one buffer, of zipped ones, with their
// indices, of a range), read, written and collected again in a loop; and a
// chain over constants collected into a buffer that later holds
// differentiated values (on the tape, the constants are lifted).
both!(collected, collected_tape, fn(x: &[f64], w: &[f64], n: usize) -> f64 {
    let c = vec![0.5, -1.5, 2.0];
    let v: Vec<f64> = x.iter().map(|a| a.sin()).collect();
    let z = x.iter().zip(w).map(|(a, b)| a * b).collect::<Vec<f64>>();
    let r: Vec<f64> = (0..n).map(|i| v[i % v.len()] * (i as f64 + 0.5)).collect();
    let e: Vec<f64> = w.iter().enumerate().map(|(i, b)| b * (i as f64 + 1.0)).collect();
    let mut k: Vec<f64> = c.iter().map(|a| a * 2.0).collect();
    k[1] = k[1] * x[2];
    let mut s = 0.0;
    for j in 0..2 {
        let m: Vec<f64> = e.iter().map(|a| a * z[j] + k[1]).collect();
        s += m[j] * m[m.len() - 1];
    }
    s + v.iter().sum::<f64>() + z[0] * z[z.len() - 1] + r.iter().sum::<f64>() + k[0] * k[1]
});

#[test]
fn iterator_chains_collected_into_buffers() {
    let (x, w) = ([0.3, -0.7, 1.1], [2.0, 0.5, -1.0, 4.0]);
    for n in [0, 1, 5] {
        assert!(collected::tape_stats(&x, &w, n).compiled);
        let (value, g) = collected::value_and_grad(&x, &w, n);
        assert_eq!(value, collected(&x, &w, n));
        let tape = collected_tape::grad(&x, &w, n);
        same(&g.x, &tape.x, "x against the tape");
        same(&g.w, &tape.w, "w against the tape");
        let fd_x = finite_difference(|p| collected(p, &w, n), &x);
        assert_close(&g.x, &fd_x, "x against central differences");
        let fd_w = finite_difference(|p| collected(&x, p, n), &w);
        assert_close(&g.w, &fd_w, "w against central differences");
        // Forward mode by the dot product, and second order against the tape.
        let (tx, tw) = (vec![0.1, 0.2, -0.3], vec![0.5, -0.1, 0.0, 0.2]);
        let tangent = collected::Grad {
            x: tx.clone(),
            w: tw.clone(),
        };
        let along: f64 =
            g.x.iter()
                .zip(&tx)
                .chain(g.w.iter().zip(&tw))
                .map(|(a, b)| a * b)
                .sum();
        near(collected::jvp(&x, &w, n, &tangent).1, along, 1e-12, "jvp");
        let h = collected::hvp(&x, &w, n, &tangent);
        let h_tape = collected_tape::hvp(&x, &w, n, &collected_tape::Grad { x: tx, w: tw });
        assert_close_tol(&h.x, &h_tape.x, 1e-12, "hvp x");
        assert_close_tol(&h.w, &h_tape.w, 1e-12, "hvp w");
    }
}

// Element writes whose adjoints leave their element's adjoint as it was,
// as nothing reads it again (`resets.rs`: each element written once: `z`,
// its first element apart from the loop's; `v`, shifted by one; `t`, new in
// each iteration), beside ones that must reset it: an element written
// twice (`w[1]`), a loop inside another (`u`), an element added to before
// it is set (`p`), a literal index inside a loop's range (`q[2]`).
both!(written_once, written_once_tape, fn(x: &[f64]) -> f64 {
    let n = x.len();
    let mut z = vec![0.0; n];
    z[0] = x[0] * 2.0;
    for i in 1..n {
        z[i] = x[i] * z[i - 1].sin();
    }
    let mut w = vec![1.0; n];
    for i in 0..n {
        w[i] = z[i].cos() * x[i];
    }
    w[1] = w[1] * x[0];
    let mut v = vec![0.0; n];
    v[0] = x[n - 1];
    for i in 0..n - 1 {
        v[i + 1] = w[i] + x[i] * x[i];
    }
    let mut s = 0.0;
    for k in 0..n {
        let mut t = vec![0.0; 2];
        t[0] = v[k] * v[k];
        t[1] = t[0] * x[k];
        s += t[0] + t[1];
    }
    let mut u = vec![0.0; n];
    for _ in 0..3 {
        for i in 0..n {
            u[i] = u[i] * 0.5 + z[i] * x[i];
        }
    }
    let mut p = vec![0.0; n];
    for i in 0..n {
        p[i] += v[i] * 3.0;
        s += p[i] * p[i];
        p[i] = x[i] * p[i];
    }
    let mut q = vec![0.0; n];
    q[2] = x[1] * x[2];
    s += q[2] * q[2];
    for i in 1..n {
        q[i] = q[i].sin() + v[i];
    }
    for i in 0..n {
        s += u[i] * w[i] + p[i] * q[i];
    }
    s
});

#[test]
fn element_adjoints_are_reset_where_an_earlier_write_reads_them() {
    let mut rng = Rng::new(31);
    let x = rng.vec(7, -1.0, 1.0);
    let (g, tape_g) = agree!(written_once, written_once_tape, (&x), "written once");
    same(&g.x, &tape_g.x, "written once: the tape");
    check_gradient(written_once, &x, &g.x, "written once");
    let tangent = rng.vec(7, -1.0, 1.0);
    let dot: f64 = g.x.iter().zip(&tangent).map(|(g, t)| g * t).sum();
    let (_, along) = written_once::jvp(&x, &written_once::Grad { x: tangent.clone() });
    near(along, dot, 1e-12, "written once: jvp against the gradient");
    let hv = written_once::hvp(&x, &written_once::Grad { x: tangent.clone() }).x;
    let tape_hv = written_once_tape::hvp(&x, &written_once_tape::Grad { x: tangent }).x;
    assert_close_tol(&hv, &tape_hv, 1e-10, "written once: hvp");
}

// Loops whose bounds their bodies change and whose variables the adjoint
// reads (`b` assigned whole inside a loop over `0..b.len()`; `m` counted
// down inside a loop over `(1..=m).rev()`, which may be left early): each
// keeps its bounds with its trip count, and the adjoint runs back over
// them.
both!(moving_bounds, moving_bounds_tape, fn(x: &[f64], s: &[f64], limit: f64) -> f64 {
    let mut b = x.to_vec();
    let mut total = 0.0;
    for i in 0..b.len() {
        total += b[i % b.len()] * (i as f64 + 1.0).sqrt() * x[i % x.len()];
        b = s.to_vec();
    }
    let mut m = x.len() - 1;
    for j in (1..=m).rev() {
        total += x[j % x.len()].sin() * j as f64 * b[j % b.len()];
        if m > 1 {
            m -= 1;
        }
        if total > limit {
            break;
        }
    }
    total + b[0] * m as f64
});

#[test]
fn loops_whose_bounds_change_keep_them() {
    let mut rng = Rng::new(41);
    for (n, k, limit) in [(5, 3, 100.0), (4, 6, 100.0), (6, 2, 0.5)] {
        let (x, s) = (rng.vec(n, 0.2, 1.0), rng.vec(k, -1.0, 1.0));
        let what = format!("moving bounds, n = {n}, k = {k}, limit = {limit}");
        let (g, tape_g) = agree!(moving_bounds, moving_bounds_tape, (&x, &s, limit), &what);
        same(&g.x, &tape_g.x, &what);
        same(&g.s, &tape_g.s, &what);
        let mut got = g.x.clone();
        got.extend(&g.s);
        let point = [x.clone(), s.clone()].concat();
        check_gradient(
            |p| moving_bounds(&p[..n], &p[n..], limit),
            &point,
            &got,
            &what,
        );
    }
}

// Loops that index buffers at their variable plus literals (`y[i - 1]`,
// `w[i + 2]`), over reversed and inclusive ranges and a range that may be
// empty with a negative offset: each takes views of the elements it reaches
// in both passes and runs a counter from zero over them (no bounds check
// per element); an empty loop takes none. The loop over `(1..n - 1).rev()`
// reads `z` at `i - 1` and `i + 1` only: the rolling window of `z`'s
// adjoints carries an element through the unread offset between, which
// the adjoint once dropped at the loop's end (`z[2]`'s share of `w[1]`).
both!(stencils, stencils_tape, fn(x: &[f64], y: &[f64], m: usize) -> f64 {
    let n = x.len();
    let mut z = vec![0.0; n];
    z[0] = x[0];
    for i in 1..n {
        z[i] = x[i] * y[i - 1];
    }
    let mut w = vec![0.0; n + 2];
    for i in (1..n - 1).rev() {
        w[i + 2] = z[i - 1] * x[i + 1] + y[i].sin();
        w[i] += z[i + 1] * 0.5;
    }
    let mut s = 0.0;
    for i in 2..=n - 1 {
        s += w[i] * x[i - 2] + x[i] * y[i - 1] * y[i];
    }
    for i in m..n {
        s += x[i - 1] * z[i] * w[i + 1];
    }
    s
});

#[test]
fn loops_index_views_at_offsets() {
    let mut rng = Rng::new(43);
    for (n, m) in [(4, 1), (7, 3), (9, 12), (6, 6)] {
        let (x, y) = (rng.vec(n, -1.0, 1.0), rng.vec(n, -1.0, 1.0));
        let what = format!("stencils, n = {n}, m = {m}");
        let (g, tape_g) = agree!(stencils, stencils_tape, (&x, &y, m), &what);
        same(&g.x, &tape_g.x, &what);
        same(&g.y, &tape_g.y, &what);
        let mut got = g.x.clone();
        got.extend(&g.y);
        let point = [x.clone(), y.clone()].concat();
        check_gradient(|p| stencils(&p[..n], &p[n..], m), &point, &got, &what);
        let (tx, ty) = (rng.vec(n, -1.0, 1.0), rng.vec(n, -1.0, 1.0));
        let dot: f64 = [&g.x[..], &g.y[..]]
            .concat()
            .iter()
            .zip([&tx[..], &ty[..]].concat())
            .map(|(g, t)| g * t)
            .sum();
        let direction = stencils::Grad {
            x: tx.clone(),
            y: ty.clone(),
        };
        let (_, along) = stencils::jvp(&x, &y, m, &direction);
        near(
            along,
            dot,
            1e-12,
            &format!("{what}: jvp against the gradient"),
        );
        let hv = stencils::hvp(&x, &y, m, &direction);
        let tape_hv = stencils_tape::hvp(&x, &y, m, &stencils_tape::Grad { x: tx, y: ty });
        assert_close_tol(&hv.x, &tape_hv.x, 1e-10, &format!("{what}: hvp"));
        assert_close_tol(&hv.y, &tape_hv.y, 1e-10, &format!("{what}: hvp"));
    }
}

// `Vec`s built by pushing once per iteration of a loop over a range from a
// literal (`0..n`, `1..n`, `2..m` that may be empty) or over buffers'
// elements (a loop with `_` too), typed or not: new buffers of the loop's
// length, set element by element, on the compiled path.
both!(pushed, pushed_tape, fn(x: &[f64], g: &[f64], eta: f64, m: usize) -> f64 {
    let mut next = Vec::new();
    for k in 0..x.len() {
        next.push(x[k] - eta * g[k]);
    }
    let mut squares: Vec<f64> = Vec::with_capacity(x.len());
    for (a, b) in x.iter().zip(next.iter()) {
        let d = a - b;
        let e = if d > 0.0 { d } else { -d };
        squares.push(e * d + a.sin());
    }
    let mut scaled = vec![];
    let n = 3;
    for _ in 0..n {
        let s = eta.sin();
        scaled.push(s * 2.0);
    }
    let mut total = 0.0;
    for i in 0..squares.len() {
        total += next[i] * squares[i];
    }
    let mut terms = Vec::new();
    for k in 0..m {
        let mut t = next[k % next.len()];
        for j in 0..2 {
            if j == 1 {
                break;
            }
            t *= g[j % g.len()].cos();
        }
        terms.push(t);
    }
    let mut differences = Vec::new();
    for i in 1..x.len() {
        differences.push(next[i] - next[i - 1]);
    }
    let mut later: Vec<f64> = Vec::new();
    for i in 2..m {
        later.push(x[i % x.len()] * differences.len() as f64);
    }
    total
        + scaled[1] * next[0]
        + terms.iter().sum::<f64>()
        + differences.iter().map(|d| d * d).sum::<f64>()
        + later.iter().sum::<f64>()
});

#[test]
fn vecs_built_by_pushing() {
    let mut rng = Rng::new(47);
    for (n, m) in [(1, 0), (4, 3), (7, 9), (2, 1)] {
        let (x, g) = (rng.vec(n, -1.0, 1.0), rng.vec(n, -1.0, 1.0));
        let eta = 0.3;
        let what = format!("pushed, n = {n}, m = {m}");
        let (grad, tape_grad) = agree!(pushed, pushed_tape, (&x, &g, eta, m), &what);
        same(&grad.x, &tape_grad.x, &what);
        same(&grad.g, &tape_grad.g, &what);
        near(grad.eta, tape_grad.eta, 1e-12, &what);
        let mut got = grad.x.clone();
        got.extend(&grad.g);
        got.push(grad.eta);
        let point = [x.clone(), g.clone(), vec![eta]].concat();
        check_gradient(
            |p| pushed(&p[..n], &p[n..2 * n], p[2 * n], m),
            &point,
            &got,
            &what,
        );
        let (tx, tg) = (rng.vec(n, -1.0, 1.0), rng.vec(n, -1.0, 1.0));
        let direction = pushed::Grad {
            x: tx.clone(),
            g: tg.clone(),
            eta: 0.5,
        };
        let tape_direction = pushed_tape::Grad {
            x: tx,
            g: tg,
            eta: 0.5,
        };
        let hv = pushed::hvp(&x, &g, eta, m, &direction);
        let tape_hv = pushed_tape::hvp(&x, &g, eta, m, &tape_direction);
        assert_close_tol(&hv.x, &tape_hv.x, 1e-10, &format!("{what}: hvp"));
        assert_close_tol(&hv.g, &tape_hv.g, 1e-10, &format!("{what}: hvp"));
        near(hv.eta, tape_hv.eta, 1e-10, &format!("{what}: hvp"));
    }
}

// Central differences, `x[i + 1] - x[i - 1]`, and a wider stencil with two
// unread offsets between its ends: the rolling window of `x`'s adjoints
// carries each element through the offsets the loop does not read, and
// adds what it holds when the loop ends (it once dropped that: the
// gradient's second component was 0).
both!(centred, centred_tape, fn(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 1..x.len() - 1 {
        let d = x[i + 1] - x[i - 1];
        s += d * d;
    }
    for i in 2..x.len() - 1 {
        s += (x[i + 1] * x[i - 2]).sin();
    }
    s
});

#[test]
fn central_differences_carry_adjoints_through_unread_offsets() {
    let mut rng = Rng::new(53);
    for n in [3, 4, 6, 9] {
        let x = rng.vec(n, -1.0, 1.0);
        let what = format!("centred differences, n = {n}");
        let (g, tape_g) = agree!(centred, centred_tape, (&x), &what);
        same(&g.x, &tape_g.x, &what);
        check_gradient(centred, &x, &g.x, &what);
    }
}
