//! The parameter contract: which parameters are differentiated, and the shape
//! of their gradient fields.
// The functions below are written the way users write them, not the way
// clippy would: deltad must accept all of them.
#![allow(clippy::all)]

mod common;
use common::*;
use deltad::differentiate;

#[differentiate]
fn scalar_params(x: f64, y: f64) -> f64 {
    x * x * y + y.sin()
}

#[test]
fn scalar_parameters_get_scalar_fields() {
    let (value, g) = scalar_params::value_and_grad(1.5, -0.5);
    assert_eq!(value, scalar_params(1.5, -0.5));
    // Hand-written derivative: (2xy, x² + cos y).
    assert_close(
        &[g.x, g.y],
        &[2.0 * 1.5 * -0.5, 1.5 * 1.5 + (-0.5f64).cos()],
        "grad",
    );
}

#[differentiate]
fn issue_example(w: &[f64], b: f64, #[no_grad] x: &[f64], n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        let z = w[i] * x[i] + b;
        s += if z > 0.0 { z * z } else { z.exp() - 1.0 };
    }
    s / n as f64
}

#[test]
fn the_issue_example_matches_finite_differences() {
    let mut rng = Rng::new(1);
    let n = 8;
    let w = rng.vec(n, -1.0, 1.0);
    let x = rng.vec(n, -2.0, 2.0);
    let b = 0.3;
    let (value, g) = issue_example::value_and_grad(&w, b, &x, n);
    assert_eq!(value, issue_example(&w, b, &x, n));
    let g2 = issue_example::grad(&w, b, &x, n);
    assert_eq!(g, g2);
    assert_eq!(g.w.len(), w.len());
    let mut flat = w.clone();
    flat.push(b);
    let mut analytic = g.w.clone();
    analytic.push(g.b);
    check_gradient(
        |p| issue_example(&p[..n], p[n], &x, n),
        &flat,
        &analytic,
        "issue example",
    );
}

#[differentiate]
fn every_container(
    a: &[f64],
    v: &Vec<f64>,
    owned: Vec<f64>,
    arr: [f64; 3],
    arr_ref: &[f64; 2],
    k: i32,
    flag: bool,
) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * v[i % v.len()];
    }
    let mut t = 1.0;
    for x in owned.iter() {
        t *= x;
    }
    let mut u = 0.0;
    for x in arr {
        u += x.powi(k);
    }
    let w = arr_ref[0] / arr_ref[1];
    if flag {
        s + t + u + w
    } else {
        s - t - u - w
    }
}

#[test]
fn slices_vecs_and_arrays_get_same_shaped_fields() {
    let a = [0.5, -1.5, 2.0];
    let v = vec![1.0, 3.0];
    let owned = vec![0.7, 1.3, -0.4];
    let arr = [1.1, -0.9, 0.4];
    let arr_ref = [2.0, 0.5];
    for flag in [true, false] {
        let (value, g) =
            every_container::value_and_grad(&a, &v, owned.clone(), arr, &arr_ref, 3, flag);
        assert_eq!(
            value,
            every_container(&a, &v, owned.clone(), arr, &arr_ref, 3, flag)
        );
        let g_a: &Vec<f64> = &g.a;
        let g_v: &Vec<f64> = &g.v;
        let g_owned: &Vec<f64> = &g.owned;
        let g_arr: [f64; 3] = g.arr;
        let g_arr_ref: [f64; 2] = g.arr_ref;
        let analytic: Vec<f64> = g_a
            .iter()
            .chain(g_v)
            .chain(g_owned)
            .chain(&g_arr)
            .chain(&g_arr_ref)
            .copied()
            .collect();
        let flat: Vec<f64> = a
            .iter()
            .chain(&v)
            .chain(&owned)
            .chain(&arr)
            .chain(&arr_ref)
            .copied()
            .collect();
        check_gradient(
            |p| {
                every_container(
                    &p[0..3],
                    &p[3..5].to_vec(),
                    p[5..8].to_vec(),
                    [p[8], p[9], p[10]],
                    &[p[11], p[12]],
                    3,
                    flag,
                )
            },
            &flat,
            &analytic,
            "every container",
        );
    }
}

#[differentiate]
fn only_constants(#[no_grad] x: f64, #[no_grad] data: &[f64], n: usize) -> f64 {
    x * data[n]
}

#[test]
fn no_grad_and_discrete_parameters_get_no_field() {
    let (value, g) = only_constants::value_and_grad(2.0, &[1.0, 3.0], 1);
    assert_eq!(value, 6.0);
    // `Grad` has no fields.
    assert_eq!(format!("{g:?}"), "Grad");
}

#[differentiate]
fn const_generic<const N: usize>(a: [f64; N], b: &[f64; N]) -> f64 {
    let mut s = 0.0;
    for i in 0..N {
        s += a[i] * b[i] * b[i];
    }
    s
}

#[test]
fn const_generic_arrays() {
    let a = [1.0, 2.0, 3.0, 4.0];
    let b = [0.5, -1.0, 1.5, 2.0];
    let (value, g): (f64, const_generic::Grad<4>) = const_generic::value_and_grad(a, &b);
    assert_eq!(value, const_generic(a, &b));
    for i in 0..4 {
        assert_close(
            &[g.a[i], g.b[i]],
            &[b[i] * b[i], 2.0 * a[i] * b[i]],
            "const generic",
        );
    }
}

#[differentiate]
fn with_lifetime<'a>(w: &'a [f64], tag: &'a str) -> f64 {
    let scale = tag.len() as f64;
    w[0] * scale + w[w.len() - 1]
}

#[test]
fn lifetime_parameters_are_kept() {
    let g = with_lifetime::grad(&[1.0, 2.0, 3.0], "abcd");
    assert_eq!(g.w, vec![4.0, 0.0, 1.0]);
}

#[differentiate]
fn mutable_params(mut x: f64, mut w: Vec<f64>) -> f64 {
    x = x * 2.0;
    w[0] = w[0] * x;
    w.push(x);
    let mut s = 0.0;
    for v in &w {
        s += v * v;
    }
    s
}

#[test]
fn mutable_parameters_are_differentiated_through_their_updates() {
    let w = vec![1.5, -0.5];
    let g = mutable_params::grad(0.75, w.clone());
    let mut flat = w.clone();
    flat.insert(0, 0.75);
    let mut analytic = vec![g.x];
    analytic.extend(&g.w);
    check_gradient(
        |p| mutable_params(p[0], p[1..].to_vec()),
        &flat,
        &analytic,
        "mutable params",
    );
}

#[test]
fn the_function_itself_is_unchanged() {
    // Calling the annotated function directly is the plain function.
    assert_eq!(scalar_params(2.0, 0.0), 0.0);
    assert_eq!(only_constants(2.0, &[1.0, 3.0], 0), 2.0);
}

// ----- Parameters whose type is an alias --------------------------------------
// A constant array or `Vec` given to a parameter spelled through a type alias
// (the macro sees the alias, not `[f64; 3]`): the callee converts it.

type Vector3<T> = [T; 3];
type Samples = Vec<f64>;

#[differentiate]
fn cross(a: Vector3<f64>, b: Vector3<f64>) -> Vector3<f64> {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

#[differentiate]
fn weighted_sum(v: Samples, w: Samples) -> f64 {
    let mut s = 0.0;
    for i in 0..v.len() {
        s += v[i] * w[i];
    }
    s
}

#[differentiate]
fn through_aliases(a: Vector3<f64>, t: f64) -> f64 {
    let c = cross([1.0, 0.0, 0.0], a);
    let d = cross(a, [0.0, t, 0.0]);
    let plain: [f64; 3] = [0.0, 0.0, 2.0];
    let e = cross(plain, a);
    c[0] + 2.0 * c[1]
        + 3.0 * c[2]
        + d[2] * e[0]
        + weighted_sum(vec![1.0, 2.0, 3.0], vec![a[0], a[1], t])
}

#[test]
fn constant_arrays_and_vecs_go_to_parameters_typed_by_aliases() {
    let (a, t) = ([0.5, 1.5, 2.5], 0.75);
    // e1 × a = (0, -a2, a1); a × (0, t, 0) = (-a2 t, 0, a0 t);
    // (0, 0, 2) × a = (-2 a1, 2 a0, 0); f = -2 a2 + 3 a1 + a0 t (-2 a1) + a0 + 2 a1 + 3 t.
    let expected_value =
        -2.0 * a[2] + 3.0 * a[1] - 2.0 * a[0] * t * a[1] + a[0] + 2.0 * a[1] + 3.0 * t;
    let (value, g) = through_aliases::value_and_grad(a, t);
    assert_close(&[value], &[expected_value], "value");
    assert_close(
        &[g.a[0], g.a[1], g.a[2], g.t],
        &[
            -2.0 * t * a[1] + 1.0,
            3.0 - 2.0 * a[0] * t + 2.0,
            -2.0,
            -2.0 * a[0] * a[1] + 3.0,
        ],
        "grad",
    );
}

/// The same calls from a function whose own parameters are spelled out (on
/// the compiled path, whose passes call the aliased functions' bridges).
#[differentiate]
fn through_aliases_spelled(a: [f64; 3], t: f64) -> f64 {
    let k = 2.0;
    let c = cross([1.0, 0.0, 0.0], a);
    let d = cross(a, [0.0, t, 0.0]);
    let weights = vec![1.0, 2.0, 3.0];
    let values = vec![a[0], a[1], t];
    let scaled = cross([k, 1.0, 0.0], a);
    c[1] * d[2]
        + scaled[2]
        + norm_squared3(a)
        + norm_squared3([k, 1.0, 0.0])
        + weighted_sum(weights, vec![1.0, 1.0, 1.0])
        + weighted_sum(vec![1.0, 2.0, 3.0], values)
        + point_product([t, a[2]])
        + point_product([k, 3.0])
}

type Point = [f64; 2];

/// (An alias without type arguments reads like a user type's name.)
#[differentiate]
fn point_product(p: Point) -> f64 {
    p[0] * p[1]
}

#[differentiate]
fn norm_squared3(a: Vector3<f64>) -> f64 {
    a[0] * a[0] + a[1] * a[1] + a[2] * a[2]
}

#[test]
fn aliased_parameters_from_a_caller_on_the_compiled_path() {
    for (a, t) in [([0.5, 1.5, 2.5], 0.75), ([-1.0, 0.25, 2.0], -1.5)] {
        // c1 = -a2, d2 = a0 t, (k, 1, 0) × a = (a2, -k a2, k a1 - a0):
        // f = -a2 a0 t + 2 a1 - a0 + |a|² + 5 + 6 + (a0 + 2 a1 + 3 t) + t a2 + 6.
        let expected = -a[2] * a[0] * t + 2.0 * a[1] - a[0]
            + a[0] * a[0]
            + a[1] * a[1]
            + a[2] * a[2]
            + 11.0
            + a[0]
            + 2.0 * a[1]
            + 3.0 * t
            + t * a[2]
            + 6.0;
        let (value, g) = through_aliases_spelled::value_and_grad(a, t);
        assert_close(&[value], &[expected], "value");
        assert_close(
            &[g.a[0], g.a[1], g.a[2], g.t],
            &[
                -a[2] * t + 2.0 * a[0],
                4.0 + 2.0 * a[1],
                -a[0] * t + 2.0 * a[2] + t,
                -a[2] * a[0] + 3.0 + a[2],
            ],
            "grad",
        );
    }
    assert!(through_aliases_spelled::tape_stats([0.5, 1.5, 2.5], 0.75).compiled);
}

/// Results spelled through aliases, used by a caller on the compiled path.
#[differentiate]
fn point_of(t: f64) -> Point {
    [t, 2.0 * t]
}

#[differentiate]
fn vector_of(t: f64, s: f64) -> Vector3<f64> {
    [t * s, s, t]
}

#[differentiate]
fn aliased_results(t: f64, s: f64) -> f64 {
    let p = point_of(t);
    let v = vector_of(t, s);
    p[0] * p[1] + v[0] * v[1] + v[2]
}

#[test]
fn aliased_results_on_the_compiled_path() {
    for (t, s) in [(1.5, -0.5), (0.25, 2.0)] {
        // f = 2t² + t s² + t.
        let (value, g) = aliased_results::value_and_grad(t, s);
        assert_close(&[value], &[2.0 * t * t + t * s * s + t], "value");
        assert_close(&[g.t, g.s], &[4.0 * t + s * s + 1.0, 2.0 * t * s], "grad");
    }
    assert!(aliased_results::tape_stats(1.5, -0.5).compiled);
}
