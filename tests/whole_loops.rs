//! Loops recorded as a whole (straight-line bodies): every value equals the
//! plain function's bit for bit, every gradient matches finite differences,
//! including loops over iterators of unknown length, zero iterations, states
//! that swap, invariants and elements read through patterns.
#![allow(clippy::all)]

mod common;
use common::*;
use deltad::differentiate;

#[differentiate]
fn states_and_invariants(x: &[f64], p: f64, q: f64, n: usize) -> f64 {
    let mut a = p; // active initial state
    let mut b = 1.0; // constant initial state
    let mut c = 0.0;
    for i in 0..n {
        let k = i % x.len(); // an inactive statement
        let t = x[k] * p - q; // invariants p, q; element x[k]
        let u = t.sin() * a;
        a = b * 0.5 + u; // states read before and after their update
        b = a.tanh() + t;
        c += a * b - x[(k + 1) % x.len()];
    }
    a + b * c
}

#[test]
fn states_invariants_elements() {
    let x = [0.3, -0.7, 1.1, 0.4];
    for n in [0, 1, 5, 9] {
        let (value, g) = states_and_invariants::value_and_grad(&x, 0.8, -0.3, n);
        assert_eq!(
            value.to_bits(),
            states_and_invariants(&x, 0.8, -0.3, n).to_bits(),
            "n = {n}"
        );
        let mut flat = x.to_vec();
        flat.extend([0.8, -0.3]);
        let mut analytic = g.x.clone();
        analytic.extend([g.p, g.q]);
        check_gradient(
            |v| states_and_invariants(&v[..4], v[4], v[5], n),
            &flat,
            &analytic,
            "states",
        );
    }
}

#[differentiate]
fn swap_states(x: f64, y: f64, n: usize) -> f64 {
    let mut a = x;
    let mut b = y;
    for _ in 0..n {
        let t = a;
        a = b;
        b = t * 1.5 + b;
    }
    a * b
}

#[test]
fn swapping_states() {
    for n in [0, 1, 2, 7] {
        let (value, g) = swap_states::value_and_grad(0.6, -1.2, n);
        assert_eq!(value.to_bits(), swap_states(0.6, -1.2, n).to_bits());
        check_gradient(
            |v| swap_states(v[0], v[1], n),
            &[0.6, -1.2],
            &[g.x, g.y],
            "swap",
        );
    }
}

#[differentiate]
fn patterns(w: &[f64], v: &[f64], #[no_grad] c: &[f64]) -> f64 {
    let mut s = 0.0;
    for (i, wi) in w.iter().enumerate() {
        s += wi * (i as f64 + 1.0) * c[i];
    }
    let mut d = 0.0;
    for (a, b) in w.iter().zip(v.iter()) {
        d += a * b;
    }
    let mut p = 1.0;
    for &x in v {
        p *= 1.0 + x * x;
    }
    // An iterator of unknown length: recorded in stretches.
    let mut f = 0.0;
    for x in w.chunks(7).flatten() {
        f = f * 0.5 + x;
    }
    s + d * p + f
}

#[test]
fn loop_patterns_and_unknown_lengths() {
    let mut rng = Rng::new(11);
    let w = rng.vec(300, -1.0, 1.0);
    let v = rng.vec(300, -0.5, 0.5);
    let c = rng.vec(300, 0.0, 1.0);
    let (value, g) = patterns::value_and_grad(&w, &v, &c);
    assert_eq!(value.to_bits(), patterns(&w, &v, &c).to_bits());
    let mut flat = w.clone();
    flat.extend(&v);
    let mut analytic = g.w.clone();
    analytic.extend(&g.v);
    check_gradient(
        |p| patterns(&p[..300], &p[300..], &c),
        &flat,
        &analytic,
        "patterns",
    );
}

#[differentiate]
fn dead_values(x: &[f64]) -> f64 {
    let mut used = 0.0;
    let mut dead = 0.0;
    for i in 0..x.len() {
        used += x[i] * 2.0;
        dead += x[i].ln(); // infinite partial at 0, but `dead` never reaches the output
    }
    let unused = x[0].sqrt(); // the same outside a loop
    let _ = unused;
    let _ = dead;
    used
}

#[test]
fn values_that_do_not_reach_the_output_contribute_exactly_zero() {
    let g = dead_values::grad(&[0.0, 1.0, 0.0]);
    assert_eq!(g.x, vec![2.0, 2.0, 2.0]);
}

/// The Taylor series of 1/x (seed 000 §4.1): the partial derivative of the
/// new `prev` with respect to the old one, -(x - 1), depends only on the
/// invariant `x`, so it is stored once for the whole loop; the one with
/// respect to `x`, -prev, is stored once per iteration though two states use it.
/// (On the tape: what it stores is what this test is about.)
#[differentiate(tape)]
fn taylor(x: f64, iters: usize) -> f64 {
    let mut prev = 1.0;
    let mut acc = 1.0;
    for _ in 0..iters {
        prev = prev * -(x - 1.0);
        acc = prev + acc;
    }
    acc
}

/// d/dx Σ_{i≤n} (1 - x)^i by hand.
fn taylor_derivative(x: f64, n: usize) -> f64 {
    (1..=n)
        .map(|i| -(i as f64) * (1.0 - x).powi(i as i32 - 1))
        .sum()
}

#[test]
fn partials_that_only_depend_on_invariants_are_stored_once() {
    for n in [0, 1, 2, 10, 200] {
        let (value, g) = taylor::value_and_grad(0.7, n);
        assert_eq!(value.to_bits(), taylor(0.7, n).to_bits(), "n = {n}");
        let expected = taylor_derivative(0.7, n);
        assert!(
            (g.x - expected).abs() <= 1e-12 * expected.abs().max(1.0),
            "n = {n}: {} vs {expected}",
            g.x
        );
    }
    // One stored partial (8 bytes) per iteration, whatever the length.
    let bytes = |n| taylor::tape_stats(0.7, n).bytes_used;
    assert_eq!(bytes(2000) - bytes(1000), 8 * 1000);
}
