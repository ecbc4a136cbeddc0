//! `ode`: y' = f(y) with f(y)_0 = x_0 and f(y)_i = x_i y_(i-1), from y(0) = 0
//! to t = 2 by `s` steps of the classical fourth-order Runge-Kutta method.
//! `primal` is y(2); `gradient` the derivative of its last component with
//! respect to x (a vector-Jacobian product). (`#[checkpoint] let next =
//! step(..)` would keep each step's input instead of its tape: 2 GB less at
//! n = 10⁵, s = 100, but 1.5-3x slower here, so it is not used.)

use deltad::differentiate;
use serde_json::Value;

use super::{unknown, Evaluated};
use crate::input;
use crate::protocol::{timed, Runs};

/// f(y).
#[differentiate]
pub fn slope(x: &[f64], y: &[f64]) -> Vec<f64> {
    let mut z = vec![0.0; x.len()];
    z[0] = x[0];
    for i in 1..x.len() {
        z[i] = x[i] * y[i - 1];
    }
    z
}

/// One Runge-Kutta step of size `h` from `y`. (`h` is the method's step, a
/// constant: `#[no_grad]`, so the derivative keeps nothing for it, such as the
/// slopes its derivative with respect to `h` would read.)
#[differentiate]
pub fn step(x: &[f64], y: &[f64], #[no_grad] h: f64) -> Vec<f64> {
    let n = y.len();
    let k1 = slope(x, y);
    let mut stage = vec![0.0; n];
    for i in 0..n {
        stage[i] = y[i] + h / 2.0 * k1[i];
    }
    let k2 = slope(x, &stage);
    for i in 0..n {
        stage[i] = y[i] + h / 2.0 * k2[i];
    }
    let k3 = slope(x, &stage);
    for i in 0..n {
        stage[i] = y[i] + h * k3[i];
    }
    let k4 = slope(x, &stage);
    let mut next = vec![0.0; n];
    for i in 0..n {
        next[i] = y[i] + h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
    }
    next
}

/// y(2) after `s` steps.
#[differentiate]
pub fn solve(x: &[f64], s: usize) -> Vec<f64> {
    let h = 2.0 / s as f64;
    let mut y = vec![0.0; x.len()];
    for _ in 0..s {
        let next = step(x, &y, h);
        y = next;
    }
    y
}

pub fn evaluate(function: &str, input: &Value) -> Evaluated {
    let x = input::vector(input, "x")?;
    let s = input::count(input, "s")?;
    if x.is_empty() || s == 0 {
        return Err("`x` must be non-empty and `s` positive".into());
    }
    let runs = Runs::of(input)?;
    match function {
        "primal" => {
            let (y, times) = timed(runs, || solve(&x, s));
            Ok((Value::from(y), times))
        }
        "gradient" => {
            let mut seed = vec![0.0; x.len()];
            seed[x.len() - 1] = 1.0;
            let (g, times) = timed(runs, || solve::vjp(&x, s, &seed).1);
            Ok((Value::from(g.x), times))
        }
        _ => Err(unknown("ode", function)),
    }
}
