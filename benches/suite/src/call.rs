//! Per-call overhead: the gradient of one product, `x · y` (two inputs, so
//! deltad takes reverse mode). What a call costs beyond its arithmetic:
//! setting up the stack or tape, the passes, the `Grad`.

use ad_trait::reverse_ad::adr::adr;
use deltad::differentiate;

#[differentiate]
pub fn product(x: f64, y: f64) -> f64 {
    x * y
}

#[differentiate(tape)]
pub fn product_tape(x: f64, y: f64) -> f64 {
    x * y
}

/// The value and the gradient (y, x).
pub fn hand(x: f64, y: f64) -> (f64, [f64; 2]) {
    (x * y, [y, x])
}

pub fn with_reverse(x: f64, y: f64) -> [f64; 2] {
    use reverse::Gradient;
    let tape = reverse::Tape::new();
    let (vx, vy) = (tape.add_var(x), tape.add_var(y));
    let grad = (vx * vy).grad();
    [grad.wrt(&vx), grad.wrt(&vy)]
}

pub fn with_ad_trait(x: f64, y: f64) -> [f64; 2] {
    let vx = adr::new_variable(x, true);
    let vy = adr::new_variable(y, false);
    let grad = (vx * vy).get_backwards_mode_grad();
    [grad.wrt(&vx), grad.wrt(&vy)]
}

pub fn check() {
    let (x, y) = (0.7, -1.3);
    let (value, hand_grad) = hand(x, y);
    let (deltad_value, g) = product::value_and_grad(x, y);
    assert_eq!(deltad_value, value);
    crate::assert_gradient("call deltad", &[g.x, g.y], &hand_grad, 1e-15);
    let g = product_tape::grad(x, y);
    crate::assert_gradient("call deltad-tape", &[g.x, g.y], &hand_grad, 1e-15);
    crate::assert_gradient("call reverse", &with_reverse(x, y), &hand_grad, 1e-15);
    crate::assert_gradient("call ad_trait", &with_ad_trait(x, y), &hand_grad, 1e-15);
}
