//! The vector primitives `deltad::sum`, `deltad::dot` and
//! `deltad::log_sum_exp`: one binding per call, values equal to the plain
//! function's, gradients checked against hand-written ones (and finite
//! differences through a caller), also under forward mode and second order.
#![allow(clippy::all)]

mod common;
use common::*;
use deltad::differentiate;

/// -Σ_i lse_k(w_k · x_i + b_k) + Σ w ... a softmax-regression-like objective.
#[differentiate]
fn objective(w: &[f64], b: &[f64], #[no_grad] x: &[f64], dims: usize) -> f64 {
    let classes = b.len();
    let points = x.len() / dims;
    let mut scores = vec![0.0; classes];
    let mut total = 0.0;
    for i in 0..points {
        for k in 0..classes {
            scores[k] =
                deltad::dot(&w[k * dims..(k + 1) * dims], &x[i * dims..(i + 1) * dims]) + b[k];
        }
        total += deltad::log_sum_exp(&scores);
    }
    total + 0.5 * deltad::sum(w) * deltad::sum(b)
}

fn plain_point(w: &[f64], b: &[f64], x: &[f64], dims: usize) -> f64 {
    let classes = b.len();
    let mut total = 0.0;
    for point in x.chunks(dims) {
        let scores: Vec<f64> = (0..classes)
            .map(|k| {
                w[k * dims..(k + 1) * dims]
                    .iter()
                    .zip(point)
                    .map(|(w, x)| w * x)
                    .sum::<f64>()
                    + b[k]
            })
            .collect();
        let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        total += m + scores.iter().map(|s| (s - m).exp()).sum::<f64>().ln();
    }
    total + 0.5 * w.iter().sum::<f64>() * b.iter().sum::<f64>()
}

/// The gradient by hand: ∂/∂s_k = softmax_k per point.
fn hand(w: &[f64], b: &[f64], x: &[f64], dims: usize) -> (Vec<f64>, Vec<f64>) {
    let classes = b.len();
    let (sw, sb): (f64, f64) = (w.iter().sum(), b.iter().sum());
    let mut gw = vec![0.5 * sb; w.len()];
    let mut gb = vec![0.5 * sw; b.len()];
    for point in x.chunks(dims) {
        let scores: Vec<f64> = (0..classes)
            .map(|k| {
                w[k * dims..(k + 1) * dims]
                    .iter()
                    .zip(point)
                    .map(|(w, x)| w * x)
                    .sum::<f64>()
                    + b[k]
            })
            .collect();
        let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = scores.iter().map(|s| (s - m).exp()).sum();
        for k in 0..classes {
            let p = (scores[k] - m).exp() / z;
            gb[k] += p;
            for j in 0..dims {
                gw[k * dims + j] += p * point[j];
            }
        }
    }
    (gw, gb)
}

fn data() -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let w = vec![0.3, -0.2, 0.8, 0.1, -0.5, 0.4];
    let b = vec![0.05, -0.1, 0.2];
    let x = vec![1.0, 2.0, -0.5, 0.3, 0.7, -1.2, 2.5, 0.0];
    (w, b, x)
}

#[test]
fn values_and_gradients_match_hand_written_ones() {
    let (w, b, x) = data();
    let (value, g) = objective::value_and_grad(&w, &b, &x, 2);
    assert_eq!(value.to_bits(), objective(&w, &b, &x, 2).to_bits());
    assert!((value - plain_point(&w, &b, &x, 2)).abs() < 1e-12);
    let (gw, gb) = hand(&w, &b, &x, 2);
    assert_close(&g.w, &gw, "w");
    assert_close(&g.b, &gb, "b");
}

#[test]
fn gradients_match_hand_written_ones_for_many_classes() {
    // The log-sum-exp adjoint holds up to 32 exponentials and takes them
    // again beyond: both sides of that line, with scores far apart (weights
    // that underflow next to ones that do not) and a second-order check.
    for classes in [31, 32, 33, 70] {
        let dims = 3;
        let w: Vec<f64> = (0..classes * dims)
            .map(|i| 4.0 * (i as f64 * 0.37).sin())
            .collect();
        let b: Vec<f64> = (0..classes).map(|k| (k as f64 * 0.9).cos()).collect();
        let x: Vec<f64> = (0..4 * dims)
            .map(|i| 3.0 * (i as f64 * 0.61).cos())
            .collect();
        let (value, g) = objective::value_and_grad(&w, &b, &x, dims);
        assert!((value - plain_point(&w, &b, &x, dims)).abs() < 1e-12 * value.abs().max(1.0));
        let (gw, gb) = hand(&w, &b, &x, dims);
        assert_close_tol(&g.w, &gw, 1e-12, "w");
        assert_close_tol(&g.b, &gb, 1e-12, "b");
        let tangent = objective::Grad {
            w: (0..w.len()).map(|i| (i as f64 * 0.23).sin()).collect(),
            b: (0..classes).map(|k| (k as f64 * 0.41).cos()).collect(),
        };
        let hv = objective::hvp(&w, &b, &x, dims, &tangent);
        let shifted = |s: f64| {
            let w2: Vec<f64> = w.iter().zip(&tangent.w).map(|(w, t)| w + s * t).collect();
            let b2: Vec<f64> = b.iter().zip(&tangent.b).map(|(b, t)| b + s * t).collect();
            objective::value_and_grad(&w2, &b2, &x, dims).1.b
        };
        assert_close(&hv.b, &central_difference(shifted, 1e-5), "hvp b");
    }
}

#[test]
fn each_call_is_one_binding_whatever_the_length() {
    // Two points and three classes in 2 and in 40 dimensions: the same
    // number of bindings besides the inputs.
    let recorded = |dims: usize| {
        let w: Vec<f64> = (0..3 * dims).map(|i| (i as f64 * 0.37).sin()).collect();
        let x: Vec<f64> = (0..2 * dims).map(|i| (i as f64 * 0.11).cos()).collect();
        let stats = objective::tape_stats(&w, &[0.1, 0.2, 0.3], &x, dims);
        stats.bindings - stats.inputs
    };
    assert_eq!(recorded(2), recorded(40));
}

#[test]
fn forward_mode_and_second_order_agree_with_reverse_mode() {
    let (w, b, x) = data();
    let (_, g) = objective::value_and_grad(&w, &b, &x, 2);
    let tangent = objective::Grad {
        w: vec![1.0, 0.5, -0.25, 0.0, 2.0, 1.0],
        b: vec![0.5, -1.0, 0.25],
    };
    let (_, directional) = objective::jvp(&w, &b, &x, 2, &tangent);
    let expected: f64 =
        g.w.iter()
            .zip(&tangent.w)
            .chain(g.b.iter().zip(&tangent.b))
            .map(|(g, t)| g * t)
            .sum();
    assert!(
        (directional - expected).abs() < 1e-12,
        "{directional} vs {expected}"
    );
    // H·v against central differences of the gradient along v.
    let hv = objective::hvp(&w, &b, &x, 2, &tangent);
    let h = 1e-5;
    let shifted = |s: f64| {
        let w2: Vec<f64> = w.iter().zip(&tangent.w).map(|(w, t)| w + s * t).collect();
        let b2: Vec<f64> = b.iter().zip(&tangent.b).map(|(b, t)| b + s * t).collect();
        objective::value_and_grad(&w2, &b2, &x, 2).1.w
    };
    let fd = central_difference(shifted, h);
    assert_close(&hv.w, &fd, "hvp w");
}

#[test]
fn plain_calls_behave_like_the_obvious_loops() {
    assert_eq!(deltad::sum(&[1.0, 2.0, 3.5]), 6.5);
    assert_eq!(deltad::dot(&[1.0, 2.0], &[3.0, -1.0]), 1.0);
    assert_eq!(deltad::log_sum_exp::<f64>(&[]), f64::NEG_INFINITY);
    let big = deltad::log_sum_exp(&[1000.0, 1000.0]);
    assert!((big - (1000.0 + 2f64.ln())).abs() < 1e-12);
}
