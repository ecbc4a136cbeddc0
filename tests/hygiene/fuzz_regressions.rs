//! Inputs the front-end fuzzer (`macros/src/expand/fuzz.rs`) found the
//! macro emitting unparseable code for: a function without parameters (its
//! nested `vjp`/`jvp` had `tape, , seed`), and a loop that is the block's
//! tail expression while the loop's sums are kept in accumulators (their
//! finishing statements came after the tail).
#![allow(unused_assignments, unused_variables, clippy::all)]

use deltad::differentiate;

#[differentiate]
fn no_parameters() -> f64 {
    2.5
}

#[differentiate]
fn tail_loop(x: &[f64]) -> f64 {
    let mut s = 0.0;
    let mut i = 0;
    loop {
        s += x[i] * x[i];
        i += 1;
        if i == x.len() {
            break x[0] * 3.0 + x[1].sin();
        }
    }
}

#[differentiate]
fn caller(x: f64) -> f64 {
    x * no_parameters() + tail_loop(&[x, x])
}

fn main() {
    assert_eq!(no_parameters(), 2.5);
    let (value, _grad) = no_parameters::value_and_grad();
    assert_eq!(value, 2.5);
    let x = [0.5, 2.0, -1.0];
    let g = tail_loop::grad(&x);
    assert_eq!(tail_loop(&x), 1.5 + 2.0f64.sin());
    assert_eq!(g.x, vec![3.0, 2.0f64.cos(), 0.0]);
    // caller = 2.5 x + 3 x + sin x
    let g = caller::grad(0.3);
    assert!((g.x - (5.5 + 0.3f64.cos())).abs() < 1e-15);
}
