//! `saddle`: the saddle point of f(x, y) = x₀² + x₁² - y₀² - y₁², as
//! min over x of max over y of f (nested optimisation), then the argmax over
//! y at that x. The four functions `ff`, `fr`, `rf`, `rr` take the outer and
//! inner gradients by forward (`f`) or reverse (`r`) mode: the inner
//! gradients are derivatives inside a differentiated function.

use deltad::differentiate;
use serde_json::Value;

use super::solver::{argmin, unit, Mode};
use super::{unknown, Evaluated};
use crate::protocol::{timed, Runs};

#[differentiate]
pub fn saddle_f(p1: &[f64], p2: &[f64]) -> f64 {
    (p1[0] * p1[0] + p1[1] * p1[1]) - (p2[0] * p2[0] + p2[1] * p2[1])
}

/// max over p2 of f(p1, p2), the inner gradients by reverse mode (the
/// whole of it compiled: the closures too).
#[differentiate(compiled)]
pub fn max_over_p2_reverse(p1: &[f64], #[no_grad] start: &[f64]) -> f64 {
    let best: Vec<f64> = argmin(
        |p2: &[f64]| -saddle_f(p1, p2),
        |p2: &[f64]| {
            let g = saddle_f::grad(p1, p2).p2;
            let descent: Vec<f64> = g.iter().map(|v| -v).collect();
            descent
        },
        start,
    );
    saddle_f(p1, &best)
}

/// max over p2 of f(p1, p2), the inner gradients by forward mode (the
/// whole of it compiled: the closures too).
#[differentiate(compiled)]
pub fn max_over_p2_forward(p1: &[f64], #[no_grad] start: &[f64]) -> f64 {
    let best: Vec<f64> = argmin(
        |p2: &[f64]| -saddle_f(p1, p2),
        |p2: &[f64]| -> Vec<f64> {
            let mut g: Vec<f64> = Vec::new();
            for k in 0..2 {
                let direction = saddle_f::Grad {
                    p1: vec![0.0, 0.0],
                    p2: unit(2, k),
                };
                g.push(-saddle_f::jvp(p1, p2, &direction).1);
            }
            g
        },
        start,
    );
    saddle_f(p1, &best)
}

/// GradBench `saddle`: min over p1 of max over p2, then the argmax at the
/// argmin; `outer` is the mode of the outer gradients, `inner` of the inner.
pub fn saddle(outer: Mode, inner: Mode, start: [f64; 2]) -> [f64; 4] {
    let objective = |p1: &[f64]| match inner {
        Mode::Reverse => max_over_p2_reverse(p1, &start),
        Mode::Forward => max_over_p2_forward(p1, &start),
    };
    let gradient = |p1: &[f64]| -> Vec<f64> {
        match (outer, inner) {
            (Mode::Reverse, Mode::Reverse) => max_over_p2_reverse::grad(p1, &start).p1,
            (Mode::Reverse, Mode::Forward) => max_over_p2_forward::grad(p1, &start).p1,
            (Mode::Forward, Mode::Reverse) => (0..2)
                .map(|k| {
                    max_over_p2_reverse::jvp(
                        p1,
                        &start,
                        &max_over_p2_reverse::Grad { p1: unit(2, k) },
                    )
                    .1
                })
                .collect(),
            (Mode::Forward, Mode::Forward) => (0..2)
                .map(|k| {
                    max_over_p2_forward::jvp(
                        p1,
                        &start,
                        &max_over_p2_forward::Grad { p1: unit(2, k) },
                    )
                    .1
                })
                .collect(),
        }
    };
    let p1 = argmin(objective, gradient, &start);
    let p2 = argmin(
        |p2: &[f64]| -saddle_f(&p1, p2),
        |p2: &[f64]| -> Vec<f64> {
            let g = match outer {
                Mode::Reverse => saddle_f::grad(&p1, p2).p2,
                Mode::Forward => (0..2)
                    .map(|k| {
                        saddle_f::jvp(
                            &p1,
                            p2,
                            &saddle_f::Grad {
                                p1: vec![0.0; 2],
                                p2: unit(2, k),
                            },
                        )
                        .1
                    })
                    .collect(),
            };
            g.iter().map(|v| -v).collect()
        },
        &start,
    );
    [p1[0], p1[1], p2[0], p2[1]]
}

pub fn evaluate(function: &str, input: &Value) -> Evaluated {
    let start =
        crate::input::vector(input, "start").or_else(|_| crate::input::vector(input, "w"))?;
    let [x, y] = start[..] else {
        return Err("`start` must hold two numbers".into());
    };
    let (outer, inner) = Mode::pair(function).ok_or_else(|| unknown("saddle", function))?;
    let runs = Runs::of(input)?;
    let (point, times) = timed(runs, || saddle(outer, inner, [x, y]));
    Ok((Value::from(point.to_vec()), times))
}
