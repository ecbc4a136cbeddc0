//! Local buffers, and calls between `#[differentiate]` functions: active,
//! constant and mixed arguments, recursion, paths into other modules.
// The functions below are written the way users write them, not the way
// clippy would: deltad must accept all of them.
#![allow(clippy::all)]

mod common;
use common::*;
use deltad::differentiate;

#[differentiate]
fn buffers(w: &[f64], n: usize) -> f64 {
    let mut v = vec![0.0; n];
    for i in 0..n {
        v[i] = w[i % w.len()] * (i as f64);
        v[i] += 1.0;
    }
    let mut u = Vec::with_capacity(n);
    for i in 0..n {
        u.push(v[i] * v[n - 1 - i]);
    }
    u.push(0.5); // an inactive push into an active buffer
    let mut a = [0.0; 3];
    a[0] = w[0];
    a[2] += w[1] * 2.0;
    let lens = (u.len() + v.len()) as f64;
    let mut s = 0.0;
    for x in &u {
        s += x;
    }
    s + a[0] * a[2] + lens
}

#[differentiate]
fn buffer_from_data(w: &[f64], #[no_grad] data: &[f64]) -> f64 {
    let mut v = data.to_vec(); // constant data, made active by the writes below
    v[0] = w[0];
    let mut t: Vec<f64> = Vec::new();
    t.push(w[1]);
    t.extend_from_slice(&v);
    let mut s = 0.0;
    for x in t.iter() {
        s += x * x;
    }
    s
}

#[test]
fn vec_with_capacity_push_index_writes() {
    let w = [0.4, -1.2, 0.9];
    let (value, g) = buffers::value_and_grad(&w, 5);
    assert_eq!(value, buffers(&w, 5));
    check_gradient(|p| buffers(p, 5), &w, &g.w, "buffers");
    let data = [3.0, 1.0, 2.0];
    let g = buffer_from_data::grad(&w, &data);
    check_gradient(|p| buffer_from_data(p, &data), &w, &g.w, "buffer from data");
}

#[differentiate]
fn square(x: f64) -> f64 {
    x * x
}

#[differentiate]
fn weighted(w: &[f64], #[no_grad] c: &[f64], scale: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..w.len() {
        s += w[i] * c[i];
    }
    s * scale
}

#[differentiate]
fn caller(x: f64, w: &[f64], #[no_grad] data: &[f64]) -> f64 {
    let a = square(x); // active argument
    let b = square(3.0); // constant argument: the plain function
    let c = weighted(w, data, x); // mixed: active slice and scalar, constant data
    let d = weighted(&[1.0, 2.0, 3.0], data, x); // a constant array literal lifted
    let e = weighted(data, data, x * x); // constant slices lifted, scalar active
    let f = square(w[0]) + square(a);
    a + b + c + d + e + f
}

#[test]
fn calls_with_active_constant_and_mixed_arguments() {
    let w = [0.4, -1.2, 0.9];
    let data = [1.0, 2.0, 3.0];
    let x = 0.7;
    let (value, g) = caller::value_and_grad(x, &w, &data);
    assert_eq!(value, caller(x, &w, &data));
    let mut flat = vec![x];
    flat.extend(&w);
    let mut analytic = vec![g.x];
    analytic.extend(&g.w);
    check_gradient(|p| caller(p[0], &p[1..], &data), &flat, &analytic, "caller");
}

/// Determinant by expansion in minors (recursive), as in the classic AD
/// benchmark.
#[differentiate]
fn det(m: &[f64], n: usize) -> f64 {
    if n == 1 {
        return m[0];
    }
    let mut total = 0.0;
    let mut sign = 1.0;
    for col in 0..n {
        let mut minor = Vec::with_capacity((n - 1) * (n - 1));
        for row in 1..n {
            for c in 0..n {
                if c != col {
                    minor.push(m[row * n + c]);
                }
            }
        }
        total += sign * m[col] * det(&minor, n - 1);
        sign = -sign;
    }
    total
}

#[test]
fn recursive_determinant_gradient_is_the_cofactor_matrix() {
    let mut rng = Rng::new(7);
    let n = 4;
    let m = rng.vec(n * n, -1.0, 1.0);
    let (value, g) = det::value_and_grad(&m, n);
    assert_eq!(value, det(&m, n));
    check_gradient(|p| det(p, n), &m, &g.m, "det");
    // Jacobi's formula: d det / d m_ij = cofactor_ij; so sum_j m_ij g_ij = det.
    for i in 0..n {
        let row: f64 = (0..n).map(|j| m[i * n + j] * g.m[i * n + j]).sum();
        assert!((row - value).abs() < 1e-12, "row {i}: {row} vs {value}");
    }
}

mod geometry {
    use deltad::differentiate;

    #[differentiate]
    pub fn norm2(v: &[f64]) -> f64 {
        let mut s = 0.0;
        for x in v {
            s += x * x;
        }
        s.sqrt()
    }

    pub mod inner {
        use deltad::differentiate;

        #[differentiate]
        pub(crate) fn dist(a: &[f64], b: &[f64]) -> f64 {
            let mut d = Vec::new();
            for i in 0..a.len() {
                d.push(a[i] - b[i]);
            }
            super::norm2(&d)
        }
    }
}

#[differentiate]
fn via_paths(a: &[f64], b: &[f64]) -> f64 {
    geometry::inner::dist(a, b) + crate::geometry::norm2(a) + self::square(b[0])
}

#[test]
fn calls_through_module_paths() {
    let a = [1.0, 2.0, -0.5];
    let b = [0.3, -0.7, 0.2];
    let g = via_paths::grad(&a, &b);
    let mut flat = a.to_vec();
    flat.extend(&b);
    let mut analytic = g.a.clone();
    analytic.extend(&g.b);
    check_gradient(|p| via_paths(&p[..3], &p[3..]), &flat, &analytic, "paths");
}

// ----- arguments in every form rustc accepts ---------------------------------

#[differentiate]
fn gated(h: f64, x: f64, w: &[f64]) -> f64 {
    (w[0] * h + w[1] * x).tanh()
}

macro_rules! argument_forms {
    ($name:ident, $engine:meta) => {
        /// `&w` of a slice parameter (a `&&[f64]` rustc derefs), `&*w`,
        /// `&w[..]`, and a local `Vec` as `&v`, `&v[..]` and `v.as_slice()`.
        #[$engine]
        fn $name(xs: &[f64], w: &[f64]) -> f64 {
            let v = vec![w[1], w[0]];
            let mut h = 0.0;
            for t in 0..xs.len() {
                h = gated(h, xs[t], &w) + gated(h, xs[t], &*w) * gated(h, xs[t], &w[..]);
                h += gated(h, xs[t], &v) * gated(h, xs[t], &v[..]) - gated(h, xs[t], v.as_slice());
            }
            h
        }
    };
}
argument_forms!(argument_forms_compiled, differentiate);
argument_forms!(argument_forms_tape, differentiate(tape));

#[test]
fn arguments_in_the_forms_rustc_accepts() {
    let (xs, w) = ([0.5, -0.2, 0.9], [0.3, 0.7]);
    let compiled = argument_forms_compiled::grad(&xs, &w);
    let tape = argument_forms_tape::grad(&xs, &w);
    let mut point = xs.to_vec();
    point.extend(w);
    let mut got = compiled.xs.clone();
    got.extend(&compiled.w);
    check_gradient(
        |p| argument_forms_compiled(&p[..3], &p[3..]),
        &point,
        &got,
        "argument forms",
    );
    assert_close_tol(&tape.xs, &compiled.xs, 1e-12, "argument forms on the tape");
    assert_close_tol(&tape.w, &compiled.w, 1e-12, "argument forms on the tape");
}

// ----- a local buffer written through `iter_mut()` adaptors -----------------

#[differentiate]
fn written_through_adaptors(x: &[f64], t: f64) -> f64 {
    let mut doubled = vec![0.0; x.len()];
    for (o, xi) in doubled.iter_mut().zip(x) {
        *o = 2.0 * *xi * t;
    }
    let mut weighted = vec![0.0; x.len()];
    for (i, (xi, o)) in x.iter().zip(weighted.iter_mut()).enumerate() {
        *o = xi * xi * i as f64;
    }
    let mut squares = vec![0.0; x.len()];
    squares
        .iter_mut()
        .enumerate()
        .for_each(|(i, o)| *o = x[i] * doubled[i]);
    doubled.iter().sum::<f64>() + weighted.iter().sum::<f64>() + squares.iter().sum::<f64>()
}

#[test]
fn local_buffers_written_through_iter_mut_adaptors() {
    let (x, t) = ([0.5, -1.5, 2.0], 0.75);
    let g = written_through_adaptors::grad(&x, t);
    // Σ 2 x_i t + Σ i x_i² + Σ 2 x_i² t.
    let expected: Vec<f64> = (0..3)
        .map(|i| 2.0 * t + 2.0 * i as f64 * x[i] + 4.0 * x[i] * t)
        .collect();
    assert_close_tol(&g.x, &expected, 1e-15, "iter_mut adaptors");
    let dt: f64 = x.iter().map(|v| 2.0 * v + 2.0 * v * v).sum();
    assert_close_tol(&[g.t], &[dt], 1e-15, "iter_mut adaptors t");
}

/// A 2×2 rotation by `a`, row-major.
#[differentiate]
fn rotation2(a: f64) -> Vec<f64> {
    vec![a.cos(), -a.sin(), a.sin(), a.cos()]
}

/// The norm of `R(a) v` squared plus `a·v₀`.
#[differentiate]
fn rotated_norm(r: &[f64], v: &[f64], a: f64) -> f64 {
    let x = r[0] * v[0] + r[1] * v[1];
    let y = r[2] * v[0] + r[3] * v[1];
    x * x + y * y + a * v[0]
}

/// A local whose only uses are borrows (`rotated_norm(&r, ..)`): annotated
/// `Vec<f64>`, it is a buffer on the compiled path (unannotated, the macro
/// cannot tell a buffer from a value of a user type and takes the tape).
#[differentiate(compiled)]
fn annotated_buffer_local(a: f64, v: &[f64]) -> f64 {
    let r: Vec<f64> = rotation2(a * v[1]);
    rotated_norm(&r, v, a)
}

#[test]
fn a_local_annotated_as_a_buffer_takes_the_compiled_path() {
    let (a, v) = (0.3, [1.5, -0.4]);
    let g = annotated_buffer_local::grad(a, &v);
    let mut flat = vec![g.a];
    flat.extend(&g.v);
    let fd = finite_difference(|p| annotated_buffer_local(p[0], &p[1..]), &[a, v[0], v[1]]);
    assert_close(&flat, &fd, "annotated buffer local");
}
