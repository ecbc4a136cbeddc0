//! Nested derivatives: derivatives taken inside differentiated code, in all
//! four combinations of forward and reverse mode, and the classic
//! perturbation confusion examples. GradBench's `saddle` and `particle`, each
//! in its four variants (nested gradient descent), are in the GradBench tool
//! (`gradbench/src/evals`) and tested there against GradBench's values.
#![allow(clippy::all)]

mod common;
use common::*;
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

/// At 4 input reals the nested `jvp` is preaccumulated (one
/// forward-over-reverse run gives the partials of its value and tangent);
/// at 20, more than `NESTED_FORWARD_MAX`, its operations are recorded.
#[test]
fn nested_jvp_tangents_constant_and_differentiated() {
    nested_jvp_tangents(&[0.3, -1.2, 0.8, 2.0]);
    let long: Vec<f64> = (0..20).map(|i| (i as f64 * 0.7).sin() * 1.5).collect();
    nested_jvp_tangents(&long);
}

fn nested_jvp_tangents(x: &[f64]) {
    let n = x.len();
    let g = chain_energy::grad(x);
    let hx = chain_energy::hvp(x, &chain_energy::Grad { x: x.to_vec() });
    let got = along_itself::grad(x);
    let expected: Vec<f64> = (0..n).map(|i| hx.x[i] + g.x[i]).collect();
    for i in 0..n {
        assert!(
            (got.x[i] - expected[i]).abs() < 1e-13,
            "{:?} vs {expected:?}",
            got.x
        );
    }
    // d/ds: ∂f/∂x0 · x0; d/dx: H v + ∇f0 · s e0 (v depends on x0).
    let s = 0.7;
    let mut v = vec![1.0; n];
    v[0] = s * x[0];
    let hv = chain_energy::hvp(x, &chain_energy::Grad { x: v });
    let got = along_mixed::grad(x, s);
    assert!((got.s - g.x[0] * x[0]).abs() < 1e-14);
    let mut expected = hv.x.clone();
    expected[0] += g.x[0] * s;
    for i in 0..n {
        assert!(
            (got.x[i] - expected[i]).abs() < 1e-13,
            "{:?} vs {expected:?}",
            got.x
        );
    }
}

// ----- nested derivatives of a compiled function -----------------------------

/// The same function on both engines: a real, a slice, an array, a `Vec`,
/// constant data and a count. Nested derivatives of the compiled one run
/// its forward pass and adjoint on the caller's dual values; of the tape
/// one, an inner tape.
macro_rules! mixed_inner {
    ($name:ident, $engine:ident) => {
        #[differentiate($engine)]
        fn $name(
            a: f64,
            x: &[f64],
            w: [f64; 2],
            v: Vec<f64>,
            #[no_grad] c: &[f64],
            n: usize,
        ) -> f64 {
            let mut s = a * w[0];
            for i in 0..n {
                s += (x[i] * v[i]).sin() * w[1] + c[i] * x[i] * x[i];
            }
            s * a.exp()
        }
    };
}
mixed_inner!(mixed_compiled, compiled);
mixed_inner!(mixed_tape, tape);

/// Equal to rounding: the two engines sum the same terms in other orders.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * (1.0 + b.abs())
}

/// Every nested derivative of the inner function at arguments built from
/// `t` and `y`, combined into one real: its derivatives with respect to
/// `t` and `y` take second derivatives of the inner function.
macro_rules! mixed_outer {
    ($name:ident, $inner:ident) => {
        #[differentiate]
        fn $name(t: f64, y: &[f64]) -> f64 {
            let c = [0.5, -0.25, 2.0];
            let x = vec![y[0] * t, y[1], y[2] + t];
            let w = [t * t, y[0]];
            let v = vec![1.5, t, y[1] * y[2]];
            let g = $inner::grad(t, &x, w, v.clone(), &c, 3);
            let (value, h) = $inner::value_and_grad(t, &x, w, v.clone(), &c, 3);
            let (_, k) = $inner::vjp(t, &x, w, v.clone(), &c, 3, y[0] - t);
            let direction = $inner::Grad {
                a: 1.0,
                x: vec![t, 0.0, y[1]],
                w: [0.5, y[2]],
                v: vec![0.0, 1.0, t],
            };
            let (same, tangent) = $inner::jvp(t, &x, w, v, &c, 3, &direction);
            g.a * y[2]
                + g.x[0] * g.x[2]
                + g.w[1]
                + g.v[1] * t
                + value * h.x[1]
                + h.w[0]
                + k.a * k.v[2]
                + k.x[0]
                + same * tangent
        }
    };
}
mixed_outer!(outer_of_compiled, mixed_compiled);
mixed_outer!(outer_of_tape, mixed_tape);

#[test]
fn nested_derivatives_of_a_compiled_function_match_the_tape() {
    let (t, y) = (0.6, [0.9, -0.4, 1.3]);
    // The value and the derivatives (reverse over each nested kind).
    let (value, g) = outer_of_compiled::value_and_grad(t, &y);
    let (tape_value, tape_g) = outer_of_tape::value_and_grad(t, &y);
    assert!(close(value, tape_value), "{value} vs {tape_value}");
    assert!(close(g.t, tape_g.t), "{} vs {}", g.t, tape_g.t);
    for i in 0..3 {
        assert!(close(g.y[i], tape_g.y[i]), "{:?} vs {:?}", g.y, tape_g.y);
    }
    // Forward over each nested kind, along a direction of (t, y).
    let direction = outer_of_compiled::Grad {
        t: 0.3,
        y: vec![-1.0, 0.5, 2.0],
    };
    let (_, tangent) = outer_of_compiled::jvp(t, &y, &direction);
    let (_, tape_tangent) = outer_of_tape::jvp(
        t,
        &y,
        &outer_of_tape::Grad {
            t: direction.t,
            y: direction.y.clone(),
        },
    );
    assert!(close(tangent, tape_tangent), "{tangent} vs {tape_tangent}");
    // And the gradient against central differences (h = 1e-5: truncation
    // ~h² times third derivatives of order 10, rounding ~1e-16/h).
    let h = 1e-5;
    let fd = (outer_of_compiled::value_and_grad(t + h, &y).0
        - outer_of_compiled::value_and_grad(t - h, &y).0)
        / (2.0 * h);
    assert!(
        (g.t - fd).abs() < 1e-7 * (1.0 + fd.abs()),
        "{} vs {fd}",
        g.t
    );
    let dot: f64 = direction.t * g.t + (0..3).map(|i| direction.y[i] * g.y[i]).sum::<f64>();
    assert!(close(tangent, dot), "{tangent} vs {dot}");
}

/// A function of three input reals: few enough that a nested reverse
/// derivative of the compiled one is preaccumulated (forward-over-reverse
/// runs give the partials of the value and of each adjoint, recorded as
/// one binding each), where the tape one records and sweeps an inner tape.
macro_rules! small_inner {
    ($name:ident, $engine:ident) => {
        #[differentiate($engine)]
        fn $name(a: f64, x: &[f64], w: [f64; 1], #[no_grad] c: f64) -> f64 {
            (a * x[0]).sin() * w[0] + c * x[0] * x[0] * w[0] * w[0] + a.exp() * x[0]
        }
    };
}
small_inner!(small_compiled, compiled);
small_inner!(small_tape, tape);

macro_rules! small_outer {
    ($name:ident, $inner:ident) => {
        #[differentiate]
        fn $name(t: f64, y: &[f64]) -> f64 {
            let x = vec![y[0] * t];
            let w = [y[0] - y[1]];
            let g = $inner::grad(t, &x, w, 0.75);
            let (value, h) = $inner::value_and_grad(y[1], &x, w, -1.5);
            let (other, k) = $inner::vjp(t, &x, [0.5], 0.25, y[0] * t);
            let constant = $inner::grad(0.5, &[1.0], [3.0], 1.0);
            g.a * y[1]
                + g.x[0] * g.w[0]
                + value * h.x[0]
                + h.w[0] * h.a
                + other * k.x[0]
                + k.a
                + k.w[0]
                + constant.x[0] * t
        }
    };
}
small_outer!(small_outer_of_compiled, small_compiled);
small_outer!(small_outer_of_tape, small_tape);
#[test]
fn preaccumulated_nested_derivatives_match_the_tape() {
    let (t, y) = (0.4, [1.1, -0.7]);
    let (value, g) = small_outer_of_compiled::value_and_grad(t, &y);
    let (tape_value, tape_g) = small_outer_of_tape::value_and_grad(t, &y);
    assert!(close(value, tape_value), "{value} vs {tape_value}");
    assert!(close(g.t, tape_g.t), "{} vs {}", g.t, tape_g.t);
    for i in 0..2 {
        assert!(close(g.y[i], tape_g.y[i]), "{:?} vs {:?}", g.y, tape_g.y);
    }
    // Third derivatives: the Hessian of the outer function (forward over
    // the outer reverse over the inner reverse).
    let v = small_outer_of_compiled::Grad {
        t: 0.6,
        y: vec![-0.3, 1.2],
    };
    let hv = small_outer_of_compiled::hvp(t, &y, &v);
    let tape_hv = small_outer_of_tape::hvp(
        t,
        &y,
        &small_outer_of_tape::Grad {
            t: v.t,
            y: v.y.clone(),
        },
    );
    assert!(close(hv.t, tape_hv.t), "{} vs {}", hv.t, tape_hv.t);
    for i in 0..2 {
        assert!(
            close(hv.y[i], tape_hv.y[i]),
            "{:?} vs {:?}",
            hv.y,
            tape_hv.y
        );
    }
    // Forward over the nested reverse derivatives.
    let (_, tangent) = small_outer_of_compiled::jvp(t, &y, &v);
    let dot = v.t * g.t + v.y[0] * g.y[0] + v.y[1] * g.y[1];
    assert!(close(tangent, dot), "{tangent} vs {dot}");
    // And against central differences of the gradient (h = 1e-5).
    let h = 1e-5;
    let at = |s: f64| {
        small_outer_of_compiled::grad(t + s * v.t, &[y[0] + s * v.y[0], y[1] + s * v.y[1]])
    };
    let fd = (at(h).t - at(-h).t) / (2.0 * h);
    assert!(
        (hv.t - fd).abs() < 1e-6 * (1.0 + fd.abs()),
        "{} vs {fd}",
        hv.t
    );
}

// ----- nested gradients in compiled code ------------------------------------

/// Every gradient field and value of the inner function at arguments built
/// from `t` and `y`: a `let` of the gradient read field by field, a field
/// of a gradient written in place, `value_and_grad` with and without its
/// value, `vjp` with a differentiated and a constant seed, `jvp` along
/// constant tangents, read inside a loop and a branch.
macro_rules! gradient_outer {
    ($name:ident, $inner:ident, $engine:ident) => {
        #[differentiate($engine)]
        fn $name(t: f64, y: &[f64]) -> f64 {
            let c = [0.5, -0.25, 2.0];
            let x = vec![y[0] * t, y[1], y[2] + t];
            let w = [t * t, y[0]];
            let g = $inner::grad(t, &x, w, vec![1.5, t, y[1] * y[2]], &c, 3);
            let gx = $inner::grad(t, &x, w, vec![1.5, t, y[1]], &c, 3).x;
            let (value, h) = $inner::value_and_grad(y[1], &x, w, vec![t, t, y[2]], &c, 2);
            let (_, k) = $inner::value_and_grad(t, &w, [y[2], 1.0], vec![y[0], t, 0.5], &c, 2);
            // A seed computed from differentiated values, and a constant one.
            let (scaled, q) = $inner::vjp(t, &x, w, vec![0.5, t, 1.0], &c, 3, y[0] - t);
            let qa = $inner::vjp(y[2], &x, w, vec![1.0, 1.0, t], &c, 3, 2.5).1.a;
            let mut s = g.a * y[2] + gx[0] * g.x[2] + g.w[1] + g.v[1] * t;
            s += scaled * q.x[1] + q.v[2] * qa + q.w[0];
            // Tangents of `jvp`s along constant tangents.
            let (same, tangent) = $inner::jvp(
                t,
                &x,
                w,
                vec![0.25, y[0], t],
                &c,
                3,
                &$inner::Grad {
                    a: 1.0,
                    x: vec![0.5, 0.0, -1.0],
                    w: [0.5, 2.0],
                    v: vec![0.0, 1.0, 0.25],
                },
            );
            let slope = $inner::jvp(
                y[1],
                &x,
                [t, 1.0],
                vec![1.0, t, t],
                &c,
                2,
                &$inner::Grad {
                    a: 0.0,
                    x: vec![1.0, 1.0, 0.0],
                    w: [0.0, 0.0],
                    v: vec![0.0, -1.0, 0.0],
                },
            )
            .1;
            s += same * tangent + slope * y[2];
            for i in 0..3 {
                s += h.x[i] * k.v[i] * value;
            }
            if k.w[0] > 0.0 {
                let pair = vec![k.a, h.a];
                s += pair[1] * k.w[1];
            }
            s
        }
    };
}
gradient_outer!(gradients_compiled_of_compiled, mixed_compiled, compiled);
gradient_outer!(gradients_compiled_of_tape, mixed_tape, compiled);
gradient_outer!(gradients_tape_of_compiled, mixed_compiled, tape);

/// Euler steps under the force -∇p of a potential `p` that depends on the
/// control `w` (GradBench's `particle` without its optimiser), differentiated
/// through the steps: the step's gradient is a call whose adjoint is a
/// Hessian-vector product of `p`.
#[differentiate]
fn potential(x: &[f64], w: f64) -> f64 {
    let a = ((x[0] - 10.0) * (x[0] - 10.0) + (x[1] - 10.0 + w) * (x[1] - 10.0 + w)).sqrt();
    let b = ((x[0] - 10.0) * (x[0] - 10.0) + x[1] * x[1]).sqrt();
    1.0 / a + 1.0 / b + w * w * x[0]
}

macro_rules! flight {
    ($name:ident, $engine:ident) => {
        #[differentiate($engine)]
        fn $name(w: f64, steps: usize) -> f64 {
            let mut x = vec![0.0, 8.0];
            let mut v = vec![0.75, 0.0];
            for _ in 0..steps {
                let force = potential::grad(&x, w);
                x = vec![x[0] + 0.1 * v[0], x[1] + 0.1 * v[1]];
                v = vec![
                    v[0] - 0.1 * force.x[0] + 0.01 * force.w,
                    v[1] - 0.1 * force.x[1],
                ];
            }
            x[0] * x[0] + x[1]
        }
    };
}
flight!(flight_compiled, compiled);
flight!(flight_tape, tape);

#[test]
fn nested_gradients_in_compiled_code_match_the_tape() {
    let (t, y) = (0.6, [0.9, -0.4, 1.3]);
    let (value, g) = gradients_compiled_of_compiled::value_and_grad(t, &y);
    let (a, b) = (
        gradients_compiled_of_tape::value_and_grad(t, &y),
        gradients_tape_of_compiled::value_and_grad(t, &y),
    );
    for (other_value, other_t, other_y) in [(a.0, a.1.t, a.1.y), (b.0, b.1.t, b.1.y)] {
        assert!(close(value, other_value), "{value} vs {other_value}");
        assert!(close(g.t, other_t), "{} vs {other_t}", g.t);
        for i in 0..3 {
            assert!(close(g.y[i], other_y[i]), "{:?} vs {other_y:?}", g.y);
        }
    }
    // Central differences (h = 1e-5: truncation ~h² times third
    // derivatives of order 10, rounding ~1e-16/h).
    let h = 1e-5;
    let at = |s: f64, k: usize| {
        let mut y = y;
        let t = if k == 3 { t + s } else { t };
        if k < 3 {
            y[k] += s;
        }
        gradients_compiled_of_compiled::value_and_grad(t, &y).0
    };
    for (k, exact) in [(0, g.y[0]), (1, g.y[1]), (2, g.y[2]), (3, g.t)] {
        let fd = (at(h, k) - at(-h, k)) / (2.0 * h);
        assert!(
            (exact - fd).abs() < 1e-7 * (1.0 + fd.abs()),
            "input {k}: {exact} vs {fd}"
        );
    }
    // Second order through the nested gradients (forward over reverse over
    // forward over reverse), against the tape, and forward mode against the
    // gradient.
    let v = gradients_compiled_of_compiled::Grad {
        t: 0.3,
        y: vec![-1.0, 0.5, 2.0],
    };
    let hv = gradients_compiled_of_compiled::hvp(t, &y, &v);
    let tape_hv = gradients_tape_of_compiled::hvp(
        t,
        &y,
        &gradients_tape_of_compiled::Grad {
            t: v.t,
            y: v.y.clone(),
        },
    );
    assert!(close(hv.t, tape_hv.t), "{} vs {}", hv.t, tape_hv.t);
    for i in 0..3 {
        assert!(
            close(hv.y[i], tape_hv.y[i]),
            "{:?} vs {:?}",
            hv.y,
            tape_hv.y
        );
    }
    let (_, tangent) = gradients_compiled_of_compiled::jvp(t, &y, &v);
    let dot = v.t * g.t + (0..3).map(|i| v.y[i] * g.y[i]).sum::<f64>();
    assert!(close(tangent, dot), "{tangent} vs {dot}");
}

#[test]
fn a_simulation_under_a_gradient_force_differentiates_through_its_steps() {
    let w = 0.3;
    for steps in [0, 1, 20] {
        let (value, g) = flight_compiled::value_and_grad(w, steps);
        let (tape_value, tape_g) = flight_tape::value_and_grad(w, steps);
        assert!(close(value, tape_value), "{value} vs {tape_value}");
        assert!(close(g.w, tape_g.w), "{} vs {}", g.w, tape_g.w);
        // Central differences (h = 1e-5, as above).
        let h = 1e-5;
        let fd = (flight_compiled(w + h, steps) - flight_compiled(w - h, steps)) / (2.0 * h);
        assert!(
            (g.w - fd).abs() < 1e-7 * (1.0 + fd.abs()),
            "{} vs {fd}",
            g.w
        );
        let hv = flight_compiled::hvp(w, steps, &flight_compiled::Grad { w: 1.0 }).w;
        let tape_hv = flight_tape::hvp(w, steps, &flight_tape::Grad { w: 1.0 }).w;
        assert!(close(hv, tape_hv), "{hv} vs {tape_hv}");
    }
}

/// A callee whose array lengths are a const parameter.
#[differentiate]
fn weighted_squares<const N: usize>(a: [f64; N], b: &[f64; N]) -> f64 {
    let mut s = 0.0;
    for i in 0..N {
        s += a[i] * b[i] * b[i];
    }
    s
}

macro_rules! const_outer {
    ($name:ident, $engine:ident) => {
        #[differentiate($engine)]
        fn $name(a: [f64; 3], b: &[f64]) -> f64 {
            let g = weighted_squares::grad(a, &[b[0], b[1] * b[2], 1.5]);
            let along = weighted_squares::jvp(
                a,
                &[b[2], b[0], b[1]],
                &weighted_squares::Grad {
                    a: [1.0, 0.0, -2.0],
                    b: [0.0, 0.5, 0.0],
                },
            )
            .1;
            g.a[1] * g.b[0] + g.b[2] * along
        }
    };
}
const_outer!(const_outer_compiled, compiled);
const_outer!(const_outer_tape, tape);

#[test]
fn nested_derivatives_of_a_function_with_const_lengths() {
    let (a, b) = ([0.4, -1.2, 0.7], [1.1, 0.3, -0.8]);
    // (The callee itself, untouched.)
    let plain: f64 = (0..3).map(|i| a[i] * b[i] * b[i]).sum();
    assert!(close(weighted_squares(a, &b), plain));
    let (value, g) = const_outer_compiled::value_and_grad(a, &b);
    let (tape_value, tape_g) = const_outer_tape::value_and_grad(a, &b);
    assert!(close(value, tape_value), "{value} vs {tape_value}");
    for i in 0..3 {
        assert!(close(g.a[i], tape_g.a[i]), "{:?} vs {:?}", g.a, tape_g.a);
        assert!(close(g.b[i], tape_g.b[i]), "{:?} vs {:?}", g.b, tape_g.b);
    }
    // Central differences along b[1] (h = 1e-5, as above).
    let h = 1e-5;
    let at = |s: f64| const_outer_compiled(a, &[b[0], b[1] + s, b[2]]);
    let fd = (at(h) - at(-h)) / (2.0 * h);
    assert!(
        (g.b[1] - fd).abs() < 1e-7 * (1.0 + fd.abs()),
        "{} vs {fd}",
        g.b[1]
    );
}

/// Constant data taken by value (`Scale`, not `&Scale`): the callee's passes
/// would need it twice, so a caller taking its derivative stays on the tape
/// (and compiles).
#[derive(Clone)]
struct Scale {
    factor: f64,
}

#[differentiate]
fn scaled(x: &[f64], #[no_grad] scale: Scale) -> f64 {
    scale.factor * x[0] * x[1]
}

#[differentiate]
fn scaled_slope(x: &[f64], #[no_grad] scale: Scale) -> f64 {
    let g = scaled::grad(x, scale).x;
    g[0] * x[1]
}

#[test]
fn a_derivative_of_a_callee_taking_constant_data_by_value() {
    // s·x₁·x₁: ∂/∂x₀ = 0, ∂/∂x₁ = 2·s·x₁.
    let g = scaled_slope::grad(&[1.0, 2.0], Scale { factor: 3.0 });
    assert_eq!(g.x, vec![0.0, 12.0]);
    assert_eq!(scaled(&[1.0, 2.0], Scale { factor: 3.0 }), 6.0);
}

#[differentiate]
fn bowl(x: &[f64], w: f64) -> f64 {
    w * x[0] * x[0] * x[1] + (x[1] * w).sin()
}

/// A `jvp`'s tangent held in a `let` of a `Grad` literal that the next
/// statement alone reads (as GradBench's forward variants write it): the
/// literal is taken as written in place, on the compiled path (and the
/// same function on the tape).
macro_rules! forces_by_local_tangents {
    ($name:ident, $engine:ident) => {
        #[differentiate($engine)]
        fn $name(x: &[f64], w: f64) -> f64 {
            let mut force: Vec<f64> = Vec::new();
            for k in 0..2 {
                let direction = bowl::Grad {
                    x: if k == 0 {
                        vec![1.0, 0.0]
                    } else {
                        vec![0.0, 1.0]
                    },
                    w: 0.0,
                };
                force.push(bowl::jvp(x, w, &direction).1);
            }
            force[0] * x[1] + force[1] * force[1]
        }
    };
}
forces_by_local_tangents!(forces_by_local_tangents, compiled);
forces_by_local_tangents!(forces_by_local_tangents_tape, tape);

#[test]
fn a_jvp_along_a_tangent_held_in_a_local() {
    for (x, w) in [([0.5, -1.2], 0.7), ([2.0, 0.3], -1.5)] {
        let (value, g) = forces_by_local_tangents::value_and_grad(&x, w);
        let (value_t, g_t) = forces_by_local_tangents_tape::value_and_grad(&x, w);
        assert_eq!(value, forces_by_local_tangents(&x, w));
        near(value, value_t, 1e-13, "value against the tape");
        let mut got = g.x.clone();
        got.push(g.w);
        let mut got_t = g_t.x.clone();
        got_t.push(g_t.w);
        assert_close_tol(&got, &got_t, 1e-12, "against the tape");
        let reference = finite_difference(
            |p| forces_by_local_tangents(&p[..2], p[2]),
            &[x[0], x[1], w],
        );
        assert_close(&got, &reference, "against central differences");
    }
}

/// A tangent's `let` whose variable the next statement changes before its
/// `jvp`: not written in place (it would read the new value), so the
/// function keeps the tangent's value as its `let` made it.
#[differentiate]
fn tangent_then_changed(x: &[f64], w: f64) -> f64 {
    let mut v = 1.0;
    let direction = bowl::Grad {
        x: vec![v, 0.0],
        w: 0.0,
    };
    let slope = {
        v = 3.0;
        bowl::jvp(x, w, &direction).1
    };
    slope * v
}

#[test]
fn a_tangent_is_read_as_its_let_made_it() {
    let (x, w) = ([0.5, -1.2], 0.7);
    let (value, g) = tangent_then_changed::value_and_grad(&x, w);
    assert_eq!(value, tangent_then_changed(&x, w));
    near(
        value,
        3.0 * bowl::grad(&x, w).x[0],
        1e-12,
        "the slope along the first axis",
    );
    let mut got = g.x.clone();
    got.push(g.w);
    let reference = finite_difference(|p| tangent_then_changed(&p[..2], p[2]), &[x[0], x[1], w]);
    assert_close(&got, &reference, "against central differences");
}
