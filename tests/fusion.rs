//! Compile-time fusion and loop accumulators change how derivatives are
//! recorded, never what is computed: every value here must equal the plain
//! function's bit for bit, and every gradient must match finite differences.

#![allow(clippy::all)]

mod common;
use common::*;
use deltad::differentiate;

#[differentiate]
fn accumulations(x: &[f64], s0: f64, n: usize) -> f64 {
    let mut a = s0; // active initial value
    let mut b = 0.0; // constant initial value
    let mut c = 1.0;
    let mut d = 0.0;
    for i in 0..n {
        let k = i % x.len();
        a += x[k] * x[k];
        b -= x[k].sin();
        c = c + x[k] * 0.5; // v = v + e
        d = x[k].exp() + d; // v = e + v
        if x[k] > 0.0 {
            a -= 0.25 * x[k];
        }
        for j in 0..2 {
            b += x[(k + j) % x.len()] * (j as f64);
        }
    }
    let mut e = 0.0;
    let mut i = 0;
    while i < x.len() {
        if i == 3 {
            break;
        }
        e = e - x[i].cos();
        i += 1;
    }
    let mut never = s0;
    for _ in 0..0 {
        never += 1.0;
    }
    a * b + c * d + e + never
}

#[test]
fn loop_accumulators() {
    let x = [0.3, -0.7, 1.1, 0.4, -0.2];
    for n in [0, 1, 7, 12] {
        let (value, g) = accumulations::value_and_grad(&x, 0.8, n);
        assert_eq!(
            value.to_bits(),
            accumulations(&x, 0.8, n).to_bits(),
            "n = {n}"
        );
        let mut flat = x.to_vec();
        flat.push(0.8);
        let mut analytic = g.x.clone();
        analytic.push(g.s0);
        check_gradient(
            |p| accumulations(&p[..5], p[5], n),
            &flat,
            &analytic,
            "accumulators",
        );
    }
}

#[differentiate]
fn runs_of_statements(x: f64, y: f64, w: &[f64]) -> f64 {
    let a = x * y; // used once: composed into `b`
    let b = a.sin() + y; // used twice: recorded
    let c = b * b - a; // `a` used again: recorded
    let mut t = c * 2.0; // deferred, then assigned: declared on assignment
    t += x;
    let u = {
        let inner = t * t;
        inner + 1.0
    };
    let z = u.sqrt(); // used in a call argument below
    let v = w[0] * z;
    let mut buf = vec![0.0; 3];
    buf[0] = v * 2.0;
    buf[1] += buf[0] * x;
    buf[2] = buf[1] - b;
    let shadow = x;
    let shadow = shadow * 3.0 + shadow;
    square(z) + buf[2] + shadow + t
}

#[differentiate]
fn square(x: f64) -> f64 {
    x * x
}

#[test]
fn statement_runs() {
    let w = [0.5, 2.0];
    for (x, y) in [(0.3, 1.2), (-1.5, 0.4)] {
        let (value, g) = runs_of_statements::value_and_grad(x, y, &w);
        assert_eq!(value.to_bits(), runs_of_statements(x, y, &w).to_bits());
        let mut analytic = vec![g.x, g.y];
        analytic.extend(&g.w);
        check_gradient(
            |p| runs_of_statements(p[0], p[1], &p[2..]),
            &[x, y, w[0], w[1]],
            &analytic,
            "runs",
        );
    }
}

#[differentiate]
fn expression_positions(x: f64, w: &[f64]) -> f64 {
    let mut s = square(x * 2.0 + w[0]); // fused argument
    if (x * x).sin() > 0.0 {
        // fused condition operand
        s += w[1];
    }
    let pick = if x > 0.0 { x * w[0] } else { -x * w[1] }; // fused branches
    s + pick + [x * 3.0, w[0]][0] * (x - 1.0).powi(3)
}

#[test]
fn expressions_in_every_position() {
    let w = [0.7, -1.3];
    for x in [0.4, -0.9, 2.2] {
        // Opaque to the optimiser: with constant arguments it evaluates the
        // primal's `powi` at compile time, which may round differently
        // from the multiplications it becomes at run time.
        let x = std::hint::black_box(x);
        let (value, g) = expression_positions::value_and_grad(x, &w);
        assert_eq!(value.to_bits(), expression_positions(x, &w).to_bits());
        let mut analytic = vec![g.x];
        analytic.extend(&g.w);
        check_gradient(
            |p| expression_positions(p[0], &p[1..]),
            &[x, w[0], w[1]],
            &analytic,
            "expressions",
        );
    }
}

#[differentiate]
fn dot_and_norm(a: &[f64], b: &[f64]) -> f64 {
    let mut dot = 0.0;
    let mut norm = 0.0;
    for i in 0..a.len() {
        dot += a[i] * b[i];
        norm += a[i] * a[i];
    }
    dot / norm.sqrt()
}

#[test]
fn dot_products_are_accumulated() {
    let mut rng = Rng::new(3);
    let a = rng.vec(50, -1.0, 1.0);
    let b = rng.vec(50, -1.0, 1.0);
    let (value, g) = dot_and_norm::value_and_grad(&a, &b);
    assert_eq!(value.to_bits(), dot_and_norm(&a, &b).to_bits());
    let norm: f64 = a.iter().map(|v| v * v).sum::<f64>().sqrt();
    let dot: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    for i in 0..50 {
        // d/db_i = a_i / |a|; d/da_i = b_i / |a| - dot a_i / |a|^3.
        assert_close(&[g.b[i]], &[a[i] / norm], "d/db");
        assert_close(
            &[g.a[i]],
            &[b[i] / norm - dot * a[i] / norm.powi(3)],
            "d/da",
        );
    }
}
