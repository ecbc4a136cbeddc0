//! Functions differentiated in a crate of edition 2024 (`gen` is reserved,
//! `impl Trait` captures every lifetime in scope, tail-expression
//! temporaries and `if let` scrutinees are dropped earlier);
//! `tests/derivatives.rs` checks them against hand-written derivatives.

use deltad::{Differentiable, differentiate};

#[derive(Differentiable, Clone, Debug, PartialEq)]
pub enum Shape {
    Circle(f64),
    Rect { w: f64, h: f64 },
}

#[differentiate]
pub fn area(s: &Shape) -> f64 {
    match s {
        Shape::Circle(r) => std::f64::consts::PI * r * r,
        Shape::Rect { w, h } => w * h,
    }
}

/// Calls a function generic over its integrand with closures.
#[differentiate]
pub fn integrate<F: Fn(f64) -> f64>(f: F, a: f64, b: f64, n: usize) -> f64 {
    let h = (b - a) / n as f64;
    let mut s = 0.5 * (f(a) + f(b));
    for i in 1..n {
        s += f(a + i as f64 * h);
    }
    s * h
}

/// ∫_0^1 (k x)² dx by the trapezoidal rule, plus an `if let` on an `Option`.
#[differentiate]
pub fn quadrature(k: f64, extra: Option<f64>) -> f64 {
    let base = integrate(|x| (k * x) * (k * x), 0.0, 1.0, 4);
    if let Some(e) = extra {
        base + e.sin()
    } else {
        base
    }
}

/// Parameters whose names are keywords of this edition.
#[differentiate]
pub fn keywords(r#gen: f64, r#try: &[f64]) -> f64 {
    let r#async = r#gen * r#try[0];
    r#async.sqrt() + r#try[1]
}
