//! Functions differentiated in a crate of edition 2018 (closures capture
//! whole variables, `try` and `async` are keywords, no `TryFrom` in the
//! prelude); `tests/derivatives.rs` checks them against hand-written
//! derivatives.

// Index loops are what deltad's loop handling is tested on.
#![allow(clippy::needless_range_loop)]

use deltad::{differentiate, Differentiable};

#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Vec2 {
    pub x: f64,
    pub y: f64,
}

#[differentiate]
impl Vec2 {
    pub fn dot(&self, other: &Vec2) -> f64 {
        self.x * other.x + self.y * other.y
    }
}

/// ⟨R(angle) v, (1, 2)⟩.
#[differentiate]
pub fn rotated_dot(v: &Vec2, angle: f64) -> f64 {
    let (s, c) = (angle.sin(), angle.cos());
    let r = Vec2 {
        x: c * v.x - s * v.y,
        y: s * v.x + c * v.y,
    };
    r.dot(&Vec2 { x: 1.0, y: 2.0 })
}

/// Σ tanh(w_i t), through a closure that captures `t`.
#[differentiate]
pub fn closures(w: &[f64], t: f64) -> f64 {
    let scale = |x: f64| x * t;
    w.iter().map(|x| scale(*x).tanh()).sum::<f64>()
}

/// Σ_{i<n, x_i ≥ 0} x_i³ + ln Π (1 + x_k²).
#[differentiate]
pub fn loops(x: &[f64], n: usize) -> f64 {
    let mut s = 0.0;
    let mut i = 0;
    while i < n {
        if x[i] < 0.0 {
            i += 1;
            continue;
        }
        s += x[i].powi(3);
        i += 1;
    }
    let mut p = 1.0;
    for k in 0..x.len() {
        p *= 1.0 + x[k] * x[k];
    }
    s + p.ln()
}

/// Parameters whose names are keywords of this edition.
#[differentiate]
pub fn keywords(r#try: f64, r#async: &[f64]) -> f64 {
    let r#dyn = r#try * r#async[0];
    r#dyn + r#async[1].exp()
}
