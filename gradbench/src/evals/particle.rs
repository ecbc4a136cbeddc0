//! `particle`: the control w for which a charged particle, fired from
//! (0, 8) with velocity (0.75, 0) past two charges at (10, 10 - w) and
//! (10, 0), crosses the x axis at the origin: gradient descent on the
//! squared miss, through an Euler simulation whose force is itself a
//! gradient. The four functions take the outer derivative (through the
//! whole simulation) and the inner one (the force) by forward (`f`) or
//! reverse (`r`) mode.

use deltad::differentiate;
use serde_json::Value;

use super::solver::{argmin, unit, Mode};
use super::{unknown, Evaluated};
use crate::protocol::{timed, Runs};

/// The potential of two unit charges at (10, 10 - w) and (10, 0).
#[differentiate]
pub fn potential(x: &[f64], w: f64) -> f64 {
    let a = ((x[0] - 10.0) * (x[0] - 10.0) + (x[1] - 10.0 + w) * (x[1] - 10.0 + w)).sqrt();
    let b = ((x[0] - 10.0) * (x[0] - 10.0) + x[1] * x[1]).sqrt();
    1.0 / a + 1.0 / b
}

/// The square of where the particle crosses the x axis: its path from
/// (0, 8) with velocity (0.75, 0) by naive Euler steps of 0.1 under the
/// force -`gradient`(x), until the next step would cross.
#[differentiate]
pub fn miss<G: Fn(&[f64]) -> Vec<f64>>(gradient: G) -> f64 {
    let dt = 1e-1;
    let mut x = vec![0.0, 8.0];
    let mut velocity = vec![0.75, 0.0];
    loop {
        let force = gradient(&x);
        let next = vec![x[0] + dt * velocity[0], x[1] + dt * velocity[1]];
        if next[1] > 0.0 {
            x = next;
            velocity = vec![velocity[0] - dt * force[0], velocity[1] - dt * force[1]];
        } else {
            let final_dt = -x[1] / velocity[1];
            let crossing = x[0] + final_dt * velocity[0];
            return crossing * crossing;
        }
    }
}

/// The miss with the force ∇p by reverse mode (the whole of it compiled:
/// the closure too).
#[differentiate(compiled)]
pub fn miss_reverse(w: f64) -> f64 {
    miss(|x: &[f64]| -> Vec<f64> { potential::grad(x, w).x })
}

/// The miss with the force ∇p by forward mode (one tangent per coordinate;
/// the whole of it compiled: the closure too).
#[differentiate(compiled)]
pub fn miss_forward(w: f64) -> f64 {
    miss(|x: &[f64]| -> Vec<f64> {
        let mut force: Vec<f64> = Vec::new();
        for k in 0..2 {
            let direction = potential::Grad {
                x: unit(2, k),
                w: 0.0,
            };
            force.push(potential::jvp(x, w, &direction).1);
        }
        force
    })
}

/// GradBench `particle`: the control w that makes the particle cross the
/// origin, by gradient descent on the squared miss.
pub fn particle(outer: Mode, inner: Mode, w0: f64) -> f64 {
    let objective = |w: &[f64]| match inner {
        Mode::Reverse => miss_reverse(w[0]),
        Mode::Forward => miss_forward(w[0]),
    };
    let gradient = |w: &[f64]| -> Vec<f64> {
        vec![match (outer, inner) {
            (Mode::Reverse, Mode::Reverse) => miss_reverse::grad(w[0]).w,
            (Mode::Reverse, Mode::Forward) => miss_forward::grad(w[0]).w,
            (Mode::Forward, Mode::Reverse) => {
                miss_reverse::jvp(w[0], &miss_reverse::Grad { w: 1.0 }).1
            }
            (Mode::Forward, Mode::Forward) => {
                miss_forward::jvp(w[0], &miss_forward::Grad { w: 1.0 }).1
            }
        }]
    };
    argmin(objective, gradient, &[w0])[0]
}

pub fn evaluate(function: &str, input: &Value) -> Evaluated {
    let w = crate::input::number(input, "w")?;
    let (outer, inner) = Mode::pair(function).ok_or_else(|| unknown("particle", function))?;
    let runs = Runs::of(input)?;
    let (w, times) = timed(runs, || particle(outer, inner, w));
    Ok((Value::from(w), times))
}
