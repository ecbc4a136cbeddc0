//! Nested derivatives: derivatives taken inside differentiated code, in all
//! four combinations of forward and reverse mode, and the classic
//! perturbation confusion examples. GradBench's `saddle` and `particle`, each
//! in its four variants (nested gradient descent), are in the GradBench tool
//! (`gradbench/src/evals`) and tested there against GradBench's values.
#![allow(clippy::all)]

use deltad::differentiate;

// ----- perturbation confusion ----------------------------------------------

#[differentiate]
fn add(x: f64, y: f64) -> f64 {
    x + y
}

/// x · ∂/∂y (x + y), the inner derivative by reverse mode.
#[differentiate]
fn x_times_inner_reverse(x: f64, y: f64) -> f64 {
    x * add::grad(x, y).y
}

/// x · ∂/∂y (x + y), the inner derivative by forward mode.
#[differentiate]
fn x_times_inner_forward(x: f64, y: f64) -> f64 {
    x * add::jvp(x, y, &add::Grad { x: 0.0, y: 1.0 }).1
}

/// Seed 001 §3.5.1: d/dx (x · d/dy (x + y)) is 1 everywhere (not 4 at
/// (2, 2)); seed 003 §3.2: the same at x = 1, y = 1.
#[test]
fn derivative_of_x_times_an_inner_derivative_is_one() {
    for (x, y) in [(2.0, 2.0), (1.0, 1.0), (-3.5, 0.25)] {
        let reverse_reverse = x_times_inner_reverse::grad(x, y).x;
        let reverse_forward = x_times_inner_forward::grad(x, y).x;
        let forward_reverse =
            x_times_inner_reverse::jvp(x, y, &x_times_inner_reverse::Grad { x: 1.0, y: 0.0 }).1;
        let forward_forward =
            x_times_inner_forward::jvp(x, y, &x_times_inner_forward::Grad { x: 1.0, y: 0.0 }).1;
        assert_eq!(
            [
                reverse_reverse,
                reverse_forward,
                forward_reverse,
                forward_forward
            ],
            [1.0; 4],
            "at ({x}, {y})"
        );
    }
}

/// λx. jvp (λy. x + y) 3 1 : the inner tangent is 1 whatever x is.
#[differentiate]
fn inner_tangent(x: f64) -> f64 {
    add::jvp(x, 3.0, &add::Grad { x: 0.0, y: 1.0 }).1
}

/// λx. ∂/∂y (x + y) at y = 3, by reverse mode.
#[differentiate]
fn inner_gradient(x: f64) -> f64 {
    add::grad(x, 3.0).y
}

/// Seed 002, Example 5: jvp (λx. jvp (λy. x + y) 3 1) 2 1 = (1, 0).
#[test]
fn the_tangent_of_an_inner_tangent_is_zero() {
    assert_eq!(
        inner_tangent::jvp(2.0, &inner_tangent::Grad { x: 1.0 }),
        (1.0, 0.0)
    );
    assert_eq!(
        inner_tangent::value_and_grad(2.0),
        (1.0, inner_tangent::Grad { x: 0.0 })
    );
    assert_eq!(
        inner_gradient::jvp(2.0, &inner_gradient::Grad { x: 1.0 }),
        (1.0, 0.0)
    );
    assert_eq!(
        inner_gradient::value_and_grad(2.0),
        (1.0, inner_gradient::Grad { x: 0.0 })
    );
}

// ----- the seed of a nested `vjp` ---------------------------------------------

#[differentiate]
fn cube(x: f64) -> f64 {
    x * x * x
}

#[differentiate]
fn cube_components(x: f64) -> Vec<f64> {
    vec![x * x * x, x.sin()]
}

/// x · vjp(cube, x, seed) with seeds that are literals, typed literals,
/// locals, constant parameters and differentiated values (and a vector
/// seed by reference).
#[differentiate]
fn seeded(x: f64, #[no_grad] s: f64) -> f64 {
    let literal = x * cube::vjp(x, 1.0).1.x;
    let typed = x * cube::vjp(x, 2.0_f64).1.x;
    let local = 0.5;
    let by_local = x * cube::vjp(x, local).1.x;
    let constant = x * cube::vjp(x, s).1.x;
    let seed = x * 2.0;
    let differentiated = x * cube::vjp(x, seed).1.x;
    let vector = cube_components::vjp(x, &vec![x, 1.0]).1.x;
    literal + typed + by_local + constant + differentiated + vector
}

#[test]
fn nested_vjp_seeds_constant_and_differentiated() {
    let (x, s) = (0.7_f64, 1.5);
    // vjp(cube, x, w) = 3x²w: x·3x²·(1 + 2 + 0.5 + s) = 3x³(3.5 + s);
    // with w = 2x: 6x⁴; the vector seed [x, 1]: 3x²·x + cos x.
    let value = 3.0 * x.powi(3) * (3.5 + s) + 6.0 * x.powi(4) + 3.0 * x.powi(3) + x.cos();
    let derivative = 9.0 * x * x * (3.5 + s) + 24.0 * x.powi(3) + 9.0 * x * x - x.sin();
    let (got_value, g) = seeded::value_and_grad(x, s);
    assert!((got_value - value).abs() < 1e-14 * value.abs());
    assert!(
        (g.x - derivative).abs() < 1e-13 * derivative.abs(),
        "{} vs {derivative}",
        g.x
    );
}

// ----- the tangent of a nested `jvp` ----------------------------------------

#[differentiate]
fn chain_energy(x: &[f64]) -> f64 {
    let mut e = 0.0;
    for i in 0..x.len() - 1 {
        e += x[i].sin() * x[i + 1] + 0.5 * x[i] * x[i];
    }
    e
}

/// ∇f(x)·x by forward mode, with the tangent `x` itself (a differentiated
/// tangent): its gradient is H x + ∇f.
#[differentiate]
fn along_itself(x: &[f64]) -> f64 {
    chain_energy::jvp(x, &chain_energy::Grad { x: x.to_vec() }).1
}

/// ∇f(x)·v with a tangent mixing constants and a differentiated value.
#[differentiate]
fn along_mixed(x: &[f64], s: f64) -> f64 {
    let mut v = vec![1.0; x.len()];
    v[0] = s * x[0];
    chain_energy::jvp(x, &chain_energy::Grad { x: v }).1
}

#[test]
fn nested_jvp_tangents_constant_and_differentiated() {
    let x = [0.3, -1.2, 0.8, 2.0];
    let g = chain_energy::grad(&x);
    let hx = chain_energy::hvp(&x, &chain_energy::Grad { x: x.to_vec() });
    let got = along_itself::grad(&x);
    let expected: Vec<f64> = (0..4).map(|i| hx.x[i] + g.x[i]).collect();
    for i in 0..4 {
        assert!(
            (got.x[i] - expected[i]).abs() < 1e-13,
            "{:?} vs {expected:?}",
            got.x
        );
    }
    // d/ds: ∂f/∂x0 · x0; d/dx: H v + ∇f0 · s e0 (v depends on x0).
    let s = 0.7;
    let mut v = vec![1.0; 4];
    v[0] = s * x[0];
    let hv = chain_energy::hvp(&x, &chain_energy::Grad { x: v });
    let got = along_mixed::grad(&x, s);
    assert!((got.s - g.x[0] * x[0]).abs() < 1e-14);
    let mut expected = hv.x.clone();
    expected[0] += g.x[0] * s;
    for i in 0..4 {
        assert!(
            (got.x[i] - expected[i]).abs() < 1e-13,
            "{:?} vs {expected:?}",
            got.x
        );
    }
}
