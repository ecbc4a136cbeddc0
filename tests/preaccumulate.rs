//! `#[preaccumulate]` loops: on the tape, each iteration differentiated on
//! its own and forgotten. Values are bit for bit the plain function's;
//! gradients equal those of the same loop without the attribute (and finite
//! differences); the tape holds one iteration, whatever the number of
//! iterations. On the compiled path the attribute is accepted and changes
//! nothing (the adjoint keeps no tape to shorten): the functions without
//! `tape` here take that path.
#![allow(clippy::all)]

mod common;
use common::*;
use deltad::differentiate;

/// Σ_i lse_k(α_k - ½‖s_k ⊙ (x_i - μ_k)‖²) with scratch buffers declared
/// outside the loop, as numeric code usually has them. On the tape.
#[differentiate(tape)]
fn mixture(alpha: &[f64], mu: &[f64], s: &[f64], #[no_grad] x: &[f64], d: usize) -> f64 {
    let k = alpha.len();
    let n = x.len() / d;
    let mut centered = vec![0.0; d];
    let mut terms = vec![0.0; k];
    let mut total = 0.0;
    #[preaccumulate]
    for i in 0..n {
        for c in 0..k {
            let mut squares = 0.0;
            for j in 0..d {
                centered[j] = s[c * d + j] * (x[i * d + j] - mu[c * d + j]);
                squares += centered[j] * centered[j];
            }
            terms[c] = alpha[c] - 0.5 * squares;
        }
        total += deltad::log_sum_exp(&terms);
    }
    total - n as f64 * deltad::log_sum_exp(alpha)
}

/// The same function without the attribute (compiled).
#[differentiate]
fn mixture_plain(alpha: &[f64], mu: &[f64], s: &[f64], #[no_grad] x: &[f64], d: usize) -> f64 {
    let k = alpha.len();
    let n = x.len() / d;
    let mut centered = vec![0.0; d];
    let mut terms = vec![0.0; k];
    let mut total = 0.0;
    for i in 0..n {
        for c in 0..k {
            let mut squares = 0.0;
            for j in 0..d {
                centered[j] = s[c * d + j] * (x[i * d + j] - mu[c * d + j]);
                squares += centered[j] * centered[j];
            }
            terms[c] = alpha[c] - 0.5 * squares;
        }
        total += deltad::log_sum_exp(&terms);
    }
    total - n as f64 * deltad::log_sum_exp(alpha)
}

/// The same without the attribute, on the tape: the tape grows with the
/// points.
#[differentiate(tape)]
fn mixture_on_tape(alpha: &[f64], mu: &[f64], s: &[f64], #[no_grad] x: &[f64], d: usize) -> f64 {
    let k = alpha.len();
    let n = x.len() / d;
    let mut centered = vec![0.0; d];
    let mut terms = vec![0.0; k];
    let mut total = 0.0;
    for i in 0..n {
        for c in 0..k {
            let mut squares = 0.0;
            for j in 0..d {
                centered[j] = s[c * d + j] * (x[i * d + j] - mu[c * d + j]);
                squares += centered[j] * centered[j];
            }
            terms[c] = alpha[c] - 0.5 * squares;
        }
        total += deltad::log_sum_exp(&terms);
    }
    total - n as f64 * deltad::log_sum_exp(alpha)
}

/// With the attribute, compiled.
#[differentiate(compiled)]
fn mixture_compiled(alpha: &[f64], mu: &[f64], s: &[f64], #[no_grad] x: &[f64], d: usize) -> f64 {
    let k = alpha.len();
    let n = x.len() / d;
    let mut centered = vec![0.0; d];
    let mut terms = vec![0.0; k];
    let mut total = 0.0;
    #[preaccumulate]
    for i in 0..n {
        for c in 0..k {
            let mut squares = 0.0;
            for j in 0..d {
                centered[j] = s[c * d + j] * (x[i * d + j] - mu[c * d + j]);
                squares += centered[j] * centered[j];
            }
            terms[c] = alpha[c] - 0.5 * squares;
        }
        total += deltad::log_sum_exp(&terms);
    }
    total - n as f64 * deltad::log_sum_exp(alpha)
}

fn data(points: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let wave = |n: usize, f: f64| (0..n).map(|i| (i as f64 * f).sin()).collect::<Vec<f64>>();
    let (d, k) = (3, 4);
    (
        wave(k, 0.7),
        wave(k * d, 1.3),
        wave(k * d, 0.4).iter().map(|v| 1.0 + 0.5 * v).collect(),
        wave(points * d, 2.1),
    )
}

#[test]
fn gradients_equal_the_plain_loops() {
    let (alpha, mu, s, x) = data(25);
    let (value, g) = mixture::value_and_grad(&alpha, &mu, &s, &x, 3);
    let (plain_value, plain) = mixture_plain::value_and_grad(&alpha, &mu, &s, &x, 3);
    assert_eq!(value.to_bits(), mixture(&alpha, &mu, &s, &x, 3).to_bits());
    assert_eq!(value.to_bits(), plain_value.to_bits());
    assert_close(&g.alpha, &plain.alpha, "alpha");
    assert_close(&g.mu, &plain.mu, "mu");
    assert_close(&g.s, &plain.s, "s");
    let mut point = alpha.clone();
    point.extend(&mu);
    point.extend(&s);
    let reference = finite_difference(|p| mixture(&p[..4], &p[4..16], &p[16..], &x, 3), &point);
    let mut got = g.alpha.clone();
    got.extend(&g.mu);
    got.extend(&g.s);
    assert_close(&got, &reference, "finite differences");
    let (compiled_value, compiled) = mixture_compiled::value_and_grad(&alpha, &mu, &s, &x, 3);
    assert_eq!(compiled_value.to_bits(), value.to_bits());
    assert_close(&compiled.alpha, &g.alpha, "compiled alpha");
    assert_close(&compiled.mu, &g.mu, "compiled mu");
    assert_close(&compiled.s, &g.s, "compiled s");
}

#[test]
fn the_tape_holds_one_iteration() {
    let stats = |points| {
        let (alpha, mu, s, x) = data(points);
        (
            mixture::tape_stats(&alpha, &mu, &s, &x, 3).bindings,
            mixture_on_tape::tape_stats(&alpha, &mu, &s, &x, 3).bindings,
        )
    };
    let (few, few_plain) = stats(10);
    let (many, many_plain) = stats(1000);
    assert_eq!(
        few, many,
        "the preaccumulated tape grows with the iterations"
    );
    assert!(many_plain > 50 * many, "{many_plain} vs {many}");
    assert!(few_plain > few);
}

#[test]
fn forward_mode_and_second_order_agree_with_the_plain_loops() {
    let (alpha, mu, s, x) = data(7);
    let tangent = mixture::Grad {
        alpha: vec![1.0, -0.5, 0.25, 2.0],
        mu: (0..12).map(|i| (i as f64 * 0.3).cos()).collect(),
        s: (0..12).map(|i| (i as f64 * 0.9).sin()).collect(),
    };
    let plain_tangent = mixture_plain::Grad {
        alpha: tangent.alpha.clone(),
        mu: tangent.mu.clone(),
        s: tangent.s.clone(),
    };
    let (_, jvp) = mixture::jvp(&alpha, &mu, &s, &x, 3, &tangent);
    let (_, plain_jvp) = mixture_plain::jvp(&alpha, &mu, &s, &x, 3, &plain_tangent);
    assert!((jvp - plain_jvp).abs() <= 1e-12 * plain_jvp.abs().max(1.0));
    let hvp = mixture::hvp(&alpha, &mu, &s, &x, 3, &tangent);
    let plain_hvp = mixture_plain::hvp(&alpha, &mu, &s, &x, 3, &plain_tangent);
    assert_close(&hvp.alpha, &plain_hvp.alpha, "hvp alpha");
    assert_close(&hvp.mu, &plain_hvp.mu, "hvp mu");
    assert_close(&hvp.s, &plain_hvp.s, "hvp s");
}

/// Two sums, a `continue`, and a preaccumulated loop inside another.
#[differentiate]
#[allow(unused_assignments)]
fn two_sums(w: &[f64], #[no_grad] x: &[f64]) -> f64 {
    let mut fit = 0.0;
    let mut penalty = 0.0;
    let mut scratch = 0.0;
    #[preaccumulate]
    for i in 0..x.len() {
        if x[i] < -0.9 {
            continue;
        }
        scratch = (w[i % w.len()] * x[i]).tanh();
        fit += scratch * scratch;
        let mut inner = 0.0;
        #[preaccumulate]
        for j in 0..w.len() {
            inner += (w[j] - x[i]).powi(2);
        }
        penalty -= inner.sqrt();
    }
    fit * 2.0 + penalty
}

fn two_sums_by_hand(w: &[f64], x: &[f64]) -> Vec<f64> {
    let mut g = vec![0.0; w.len()];
    for i in 0..x.len() {
        if x[i] < -0.9 {
            continue;
        }
        let k = i % w.len();
        let t = (w[k] * x[i]).tanh();
        g[k] += 2.0 * 2.0 * t * (1.0 - t * t) * x[i];
        let inner: f64 = w.iter().map(|w| (w - x[i]).powi(2)).sum();
        for j in 0..w.len() {
            g[j] -= (w[j] - x[i]) / inner.sqrt();
        }
    }
    g
}

#[test]
fn several_sums_continue_and_nesting() {
    let w = [0.3, -1.2, 0.8];
    let x: Vec<f64> = (0..40).map(|i| (i as f64 * 0.77).sin()).collect();
    let (value, g) = two_sums::value_and_grad(&w, &x);
    assert_eq!(value.to_bits(), two_sums(&w, &x).to_bits());
    assert_close(&g.w, &two_sums_by_hand(&w, &x), "by hand");
}

/// Reads, in each iteration, what the previous one left in `carry`: not a
/// sum, so this loop cannot be preaccumulated, and the tape says so at run
/// time.
#[differentiate(tape)]
fn carries_a_value(w: &[f64]) -> f64 {
    let mut carry = vec![1.0];
    let mut total = 0.0;
    #[preaccumulate]
    for i in 0..w.len() {
        let next = carry[0] * w[i];
        carry[0] = next;
        total += next;
    }
    total
}

#[test]
#[should_panic(expected = "read a value computed in one of its earlier iterations")]
fn reading_an_earlier_iteration_panics() {
    carries_a_value::grad(&[0.5, 2.0, 3.0]);
}

/// The same, compiled: the attribute does not change what is computed, so
/// the derivative is exact.
#[differentiate]
fn carries_a_value_compiled(w: &[f64]) -> f64 {
    let mut carry = vec![1.0];
    let mut total = 0.0;
    #[preaccumulate]
    for i in 0..w.len() {
        let next = carry[0] * w[i];
        carry[0] = next;
        total += next;
    }
    total
}

#[test]
fn compiled_loops_may_read_earlier_iterations() {
    // total = w0 + w0 w1 + w0 w1 w2.
    let w = [0.5, 2.0, 3.0];
    let g = carries_a_value_compiled::grad(&w);
    let expected = [1.0 + w[1] + w[1] * w[2], w[0] + w[0] * w[2], w[0] * w[1]];
    assert_close(&g.w, &expected, "by hand");
}

#[test]
fn the_plain_function_is_untouched() {
    // One iteration reads only the value from before the loop: fine.
    let (value, g) = carries_a_value::value_and_grad(&[0.5]);
    assert_eq!(value, 0.5);
    assert_eq!(g.w, vec![1.0]);
    assert_eq!(carries_a_value(&[0.5, 2.0, 3.0]), 0.5 + 1.0 + 3.0);
}

/// The README's example: softmax regression's negative log-likelihood.
#[differentiate]
fn nll(w: &[f64], #[no_grad] x: &[f64], #[no_grad] y: &[f64], d: usize) -> f64 {
    let mut scores = vec![0.0; 3];
    let mut total = 0.0;
    #[preaccumulate]
    for i in 0..y.len() {
        for k in 0..3 {
            scores[k] = deltad::dot(&w[k * d..(k + 1) * d], &x[i * d..(i + 1) * d]);
        }
        total += deltad::log_sum_exp(&scores) - scores[y[i] as usize];
    }
    total
}

#[test]
fn the_readme_example_matches_finite_differences() {
    let d = 2;
    let w = [0.2, -0.4, 0.7, 0.1, -0.3, 0.5];
    let x: Vec<f64> = (0..20).map(|i| (i as f64 * 0.61).sin()).collect();
    let y: Vec<f64> = (0..10).map(|i| (i % 3) as f64).collect();
    let (value, g) = nll::value_and_grad(&w, &x, &y, d);
    assert_eq!(value.to_bits(), nll(&w, &x, &y, d).to_bits());
    let reference = finite_difference(|p| nll(p, &x, &y, d), &w);
    assert_close(&g.w, &reference, "nll");
}

/// A `#[preaccumulate]` loop through which nothing differentiated passes
/// (its sums depend on a `#[no_grad]` parameter only): an ordinary loop on
/// the tape, as on the compiled path (found by the fuzzer; was rejected
/// with "this loop adds to none").
#[differentiate(tape)]
fn constant_sums(w: &[f64], #[no_grad] c: f64) -> f64 {
    let mut total = 0.0;
    #[preaccumulate]
    for i in 0..w.len() {
        total -= (c * i as f64).cos();
    }
    w[0] * total
}

#[test]
fn a_loop_with_constant_sums_is_an_ordinary_loop() {
    let w = [1.5, 2.0];
    let c = 0.3;
    let (value, g) = constant_sums::value_and_grad(&w, c);
    assert_eq!(value.to_bits(), constant_sums(&w, c).to_bits());
    // ∂/∂w0 = total, ∂/∂w1 = 0.
    let total = -(1.0 + c.cos());
    assert_close(&g.w, &[total, 0.0], "constant sums");
}
