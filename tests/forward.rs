//! Forward mode: `jvp` checked against reverse mode by the dot-product
//! identity <δt, J δs> = <Jᵀ δt, δs> (J δs from `jvp`, Jᵀ δt from `vjp`),
//! and against central finite differences, for every input and output shape.
#![allow(clippy::all)]

mod common;
use common::*;
use deltad::{differentiate, Differentiable};

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[differentiate]
fn mixed(x: &[f64], s: f64, m: [f64; 2]) -> f64 {
    let mut total = s.sin() * m[0];
    for (i, v) in x.iter().enumerate() {
        total += (v * s).exp() / (1.0 + i as f64) + v.powi(3) * m[1];
    }
    total.ln_1p()
}

#[test]
fn jvp_of_a_real_function_is_the_gradient_along_the_tangent() {
    let mut rng = Rng::new(41);
    let x = rng.vec(4, -0.5, 0.5);
    let (s, m) = (0.7, [0.3, -0.2]);
    let g = mixed::grad(&x, s, m);
    for _ in 0..5 {
        let tangent = mixed::Grad {
            x: rng.vec(4, -1.0, 1.0),
            s: rng.uniform(-1.0, 1.0),
            m: [rng.uniform(-1.0, 1.0), rng.uniform(-1.0, 1.0)],
        };
        let (value, directional) = mixed::jvp(&x, s, m, &tangent);
        assert_eq!(value, mixed(&x, s, m));
        let reverse = dot(&g.x, &tangent.x) + g.s * tangent.s + dot(&g.m, &tangent.m);
        assert_close(&[directional], &[reverse], "jvp = <∇f, v>");
    }
}

#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Body {
    pub position: [f64; 2],
    pub velocity: [f64; 2],
    pub mass: f64,
}

/// One explicit Euler step of a body in a central field: a struct in, a
/// struct and a tuple out.
#[differentiate]
fn step(body: &Body, dt: f64) -> (Body, f64) {
    let r2 = body.position[0] * body.position[0] + body.position[1] * body.position[1];
    let r = r2.sqrt();
    let force = -body.mass / r2;
    let mut velocity = [0.0; 2];
    let mut position = [0.0; 2];
    for k in 0..2 {
        velocity[k] = body.velocity[k] + dt * force * body.position[k] / r;
        position[k] = body.position[k] + dt * velocity[k];
    }
    let energy =
        0.5 * body.mass * (velocity[0] * velocity[0] + velocity[1] * velocity[1]) - body.mass / r;
    (
        Body {
            position,
            velocity,
            mass: body.mass,
        },
        energy,
    )
}

fn flat_body(b: &Body) -> Vec<f64> {
    vec![
        b.position[0],
        b.position[1],
        b.velocity[0],
        b.velocity[1],
        b.mass,
    ]
}

#[test]
fn jvp_and_vjp_of_a_structured_function_agree() {
    let mut rng = Rng::new(42);
    let body = Body {
        position: [1.0, 0.5],
        velocity: [-0.2, 0.8],
        mass: 1.3,
    };
    let dt = 0.05;
    for _ in 0..5 {
        let ds = rng.vec(6, -1.0, 1.0);
        let tangent = step::Grad {
            body: Body {
                position: [ds[0], ds[1]],
                velocity: [ds[2], ds[3]],
                mass: ds[4],
            },
            dt: ds[5],
        };
        let (value, (d_body, d_energy)) = step::jvp(&body, dt, &tangent);
        assert_eq!(value, step(&body, dt));
        let dt_seed = (
            Body {
                position: [rng.uniform(-1.0, 1.0), rng.uniform(-1.0, 1.0)],
                velocity: [rng.uniform(-1.0, 1.0), rng.uniform(-1.0, 1.0)],
                mass: rng.uniform(-1.0, 1.0),
            },
            rng.uniform(-1.0, 1.0),
        );
        let (_, g) = step::vjp(&body, dt, &dt_seed);
        let mut forward = flat_body(&d_body);
        forward.push(d_energy);
        let mut seed = flat_body(&dt_seed.0);
        seed.push(dt_seed.1);
        let mut reverse = flat_body(&g.body);
        reverse.push(g.dt);
        assert_close(
            &[dot(&seed, &forward)],
            &[dot(&reverse, &ds)],
            "<δt, J δs> = <Jᵀ δt, δs>",
        );
    }
}

#[differentiate]
fn scale_into(x: &[f64], k: f64, out: &mut [f64]) {
    for i in 0..x.len() {
        out[i] = out[i] * 0.5 + k * x[i] * x[i];
    }
}

#[test]
fn jvp_with_output_parameters() {
    let x = [1.0, 2.0, 3.0];
    let mut out = [1.0, 1.0, 1.0];
    let tangent = scale_into::Grad {
        x: vec![1.0, 0.0, -1.0],
        k: 0.5,
        out: vec![2.0, 0.0, 0.0],
    };
    let ((), d_out) = scale_into::jvp(&x, 2.0, &mut out, &tangent);
    let mut expected = [1.0, 1.0, 1.0];
    scale_into(&x, 2.0, &mut expected);
    assert_eq!(out, expected, "the wrapper writes the results");
    // Hand-written: d out_i = 0.5 d out0_i + x_i² dk + 2 k x_i dx_i.
    let hand: Vec<f64> = (0..3)
        .map(|i| 0.5 * tangent.out[i] + x[i] * x[i] * tangent.k + 2.0 * 2.0 * x[i] * tangent.x[i])
        .collect();
    assert_close(&d_out, &hand, "d out");
}

#[test]
fn jvp_matches_finite_differences_along_the_tangent() {
    let x = [0.2, -0.4, 0.9];
    let v = [0.3, 1.0, -0.5];
    let (_, directional) = mixed::jvp(
        &x,
        0.7,
        [0.3, -0.2],
        &mixed::Grad {
            x: v.to_vec(),
            s: 0.0,
            m: [0.0, 0.0],
        },
    );
    let h = 1e-6;
    let at = |t: f64| {
        let moved: Vec<f64> = x.iter().zip(&v).map(|(a, d)| a + t * d).collect();
        mixed(&moved, 0.7, [0.3, -0.2])
    };
    assert_close(
        &[directional],
        &[(at(h) - at(-h)) / (2.0 * h)],
        "central difference",
    );
}

#[differentiate]
fn f32_function(x: &[f32], a: f32) -> f32 {
    let mut s = 0.0;
    for v in x {
        s += (v * a).tanh();
    }
    s
}

#[test]
fn forward_mode_in_f32() {
    let x = [0.5f32, -1.0, 2.0];
    let g = f32_function::grad(&x, 0.8);
    let (_, d) = f32_function::jvp(
        &x,
        0.8,
        &f32_function::Grad {
            x: vec![1.0, 1.0, 1.0],
            a: 0.0,
        },
    );
    let expected: f32 = g.x.iter().sum();
    assert!(
        (d - expected).abs() <= 1e-6 * expected.abs().max(1.0),
        "{d} vs {expected}"
    );
}

/// `deltad::Dual` is exported from the facade, as the README says: a user
/// pushes a tangent through code of their own (x³ sin x at x = 0.8, along
/// the tangent 2: 2·(3x² sin x + x³ cos x)).
#[test]
fn dual_is_exported_for_users_own_code() {
    use deltad::{Dual, Scalar};
    fn own<S: Scalar>(x: S) -> S {
        x * x * x * x.sin()
    }
    let x = 0.8_f64;
    let d = own(Dual::new(x, 2.0));
    let expected = 2.0 * (3.0 * x * x * x.sin() + x * x * x * x.cos());
    assert_eq!(d.value, own(x));
    assert!((d.tangent - expected).abs() <= 1e-15 * expected.abs());
    assert_eq!(Dual::constant(3.0).tangent, 0.0);
}
