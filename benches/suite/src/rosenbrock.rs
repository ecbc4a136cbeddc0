//! The n-dimensional Rosenbrock function
//! f(x) = Σ_i 100 (x_(i+1) - x_i²)² + (1 - x_i)².

use ad_trait::reverse_ad::adr::adr;
use ad_trait::AD;
use deltad::differentiate;

#[differentiate]
pub fn rosenbrock(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = x[i + 1] - x[i] * x[i];
        let b = 1.0 - x[i];
        s += 100.0 * a * a + b * b;
    }
    s
}

/// The same function written generically over num-traits, as a library
/// would (its derivatives are made of its copy for `f64`).
#[differentiate]
pub fn rosenbrock_generic<T: num_traits::Float + num_traits::FromPrimitive>(x: &[T]) -> T {
    let mut s = T::zero();
    for i in 0..x.len() - 1 {
        let a = x[i + 1] - x[i] * x[i];
        let b = T::one() - x[i];
        s = s + T::from_f64(100.0).unwrap() * a * a + b * b;
    }
    s
}

/// The same function on the tape (the engine before the compiled path).
#[differentiate(tape)]
pub fn rosenbrock_tape(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = x[i + 1] - x[i] * x[i];
        let b = 1.0 - x[i];
        s += 100.0 * a * a + b * b;
    }
    s
}

pub fn hand(x: &[f64]) -> (f64, Vec<f64>) {
    let mut g = vec![0.0; x.len()];
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = x[i + 1] - x[i] * x[i];
        let b = 1.0 - x[i];
        s += 100.0 * a * a + b * b;
        g[i] += -400.0 * a * x[i] - 2.0 * b;
        g[i + 1] += 200.0 * a;
    }
    (s, g)
}

pub fn with_reverse(x: &[f64]) -> Vec<f64> {
    use reverse::Gradient;
    let tape = reverse::Tape::new();
    let x = tape.add_vars(x);
    let mut s = tape.add_var(0.0) * 0.0;
    for i in 0..x.len() - 1 {
        let a = x[i + 1] - x[i] * x[i];
        let b = 1.0 - x[i];
        s = s + 100.0 * a * a + b * b;
    }
    s.grad().wrt(&x)
}

fn generic<T: AD>(x: &[T]) -> T {
    let mut s = T::constant(0.0);
    for i in 0..x.len() - 1 {
        let a = x[i + 1] - x[i] * x[i];
        let b = T::constant(1.0) - x[i];
        s = s + T::constant(100.0) * a * a + b * b;
    }
    s
}

pub fn with_ad_trait(x: &[f64]) -> Vec<f64> {
    let vars: Vec<adr> = x
        .iter()
        .enumerate()
        .map(|(i, &v)| adr::new_variable(v, i == 0))
        .collect();
    let grad = generic(&vars).get_backwards_mode_grad();
    vars.iter().map(|v| grad.wrt(v)).collect()
}

pub fn input(n: usize) -> Vec<f64> {
    (0..n).map(|i| (i as f64 * 0.37).sin()).collect()
}

pub fn check() {
    let x = input(257);
    let (value, hand_grad) = hand(&x);
    let (deltad_value, g) = rosenbrock::value_and_grad(&x);
    assert!((deltad_value - value).abs() <= 1e-12 * value.abs());
    crate::assert_gradient("rosenbrock deltad", &g.x, &hand_grad, 1e-12);
    crate::assert_gradient(
        "rosenbrock deltad-generic",
        &rosenbrock_generic::grad(&x).x,
        &hand_grad,
        1e-12,
    );
    crate::assert_gradient(
        "rosenbrock deltad-tape",
        &rosenbrock_tape::grad(&x).x,
        &hand_grad,
        1e-12,
    );
    crate::assert_gradient("rosenbrock reverse", &with_reverse(&x), &hand_grad, 1e-12);
    crate::assert_gradient("rosenbrock ad_trait", &with_ad_trait(&x), &hand_grad, 1e-12);
}
