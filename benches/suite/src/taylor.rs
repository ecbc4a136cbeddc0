//! The Taylor series of 1/x around 1 (seed 000 §4.1): a_0 = 1,
//! a_i = -(x - 1) a_(i-1), summed; the derivative at x = 0.5.
#![allow(clippy::assign_op_pattern)]

use ad_trait::reverse_ad::adr::adr;
use ad_trait::AD;
use deltad::differentiate;
use num_dual::Dual64;

#[differentiate]
pub fn taylor(x: f64, iters: usize) -> f64 {
    let mut prev = 1.0;
    let mut acc = 1.0;
    for _ in 0..iters {
        prev = prev * -(x - 1.0);
        acc = prev + acc;
    }
    acc
}

/// The same function on the tape.
#[differentiate(tape)]
pub fn taylor_tape(x: f64, iters: usize) -> f64 {
    let mut prev = 1.0;
    let mut acc = 1.0;
    for _ in 0..iters {
        prev = prev * -(x - 1.0);
        acc = prev + acc;
    }
    acc
}

/// Tangents carried along: one input, so forward propagation is the optimal
/// adjoint.
pub fn hand(x: f64, iters: usize) -> (f64, f64) {
    let c = -(x - 1.0);
    let (mut prev, mut d_prev) = (1.0, 0.0);
    let (mut acc, mut d_acc) = (1.0, 0.0);
    for _ in 0..iters {
        d_prev = d_prev * c - prev;
        prev *= c;
        acc += prev;
        d_acc += d_prev;
    }
    (acc, d_acc)
}

pub fn with_reverse(x: f64, iters: usize) -> f64 {
    use reverse::Gradient;
    let tape = reverse::Tape::new();
    let x = tape.add_var(x);
    let mut prev = tape.add_var(1.0) * 1.0;
    let mut acc = prev;
    for _ in 0..iters {
        prev = prev * -(x - 1.0);
        acc = prev + acc;
    }
    acc.grad().wrt(&x)
}

fn generic<T: AD>(x: T, iters: usize) -> T {
    let mut prev = T::constant(1.0);
    let mut acc = T::constant(1.0);
    for _ in 0..iters {
        prev = prev * -(x - T::constant(1.0));
        acc = prev + acc;
    }
    acc
}

pub fn with_ad_trait(x: f64, iters: usize) -> f64 {
    let x = adr::new_variable(x, true);
    generic(x, iters).get_backwards_mode_grad().wrt(&x)
}

pub fn with_num_dual(x: f64, iters: usize) -> f64 {
    let x = Dual64::new(x, 1.0);
    let mut prev = Dual64::from(1.0);
    let mut acc = Dual64::from(1.0);
    for _ in 0..iters {
        prev = prev * -(x - 1.0);
        acc = prev + acc;
    }
    acc.eps
}

pub fn check() {
    for iters in [10usize, 1000] {
        let (value, hand_grad) = hand(0.5, iters);
        let (deltad_value, g) = taylor::value_and_grad(0.5, iters);
        assert!((deltad_value - value).abs() <= 1e-12 * value.abs());
        for (what, got) in [
            ("deltad", g.x),
            ("deltad-tape", taylor_tape::grad(0.5, iters).x),
            ("reverse", with_reverse(0.5, iters)),
            ("ad_trait", with_ad_trait(0.5, iters)),
            ("num-dual", with_num_dual(0.5, iters)),
        ] {
            crate::assert_gradient(&format!("taylor {what}"), &[got], &[hand_grad], 1e-10);
        }
    }
}
