//! IEEE edge cases: NaN and infinite inputs, `0 · ∞`, overflow and underflow
//! in the reverse sweep, the conventions at non-differentiable points, and
//! empty inputs. Every case checks the value against the primal function and
//! the gradient (reverse mode) and tangent (forward mode, `jvp`) against the
//! documented outcome. The table in `docs/edge-cases.md` lists the same cases.

// Index loops are what deltad's loop handling is tested on.
#![allow(clippy::needless_range_loop)]

use deltad::differentiate;

const NAN: f64 = f64::NAN;
const INF: f64 = f64::INFINITY;

/// Equal as IEEE values, with NaN equal to NaN (the sign of zero ignored).
#[track_caller]
fn same(actual: f64, expected: f64, what: &str) {
    assert!(
        actual == expected || (actual.is_nan() && expected.is_nan()),
        "{what}: got {actual:e}, expected {expected:e}"
    );
}

/// The value (against the primal), the gradient and the tangents of a
/// one-argument function at `x`.
macro_rules! check1 {
    ($f:ident, $x:expr => grad $g:expr, tangent $t:expr) => {{
        let x: f64 = $x;
        let (value, g) = $f::value_and_grad(x);
        let what = format!("{} at {x:e}", stringify!($f));
        same(value, $f(x), &format!("{what}: value"));
        same(g.x, $g, &format!("{what}: gradient"));
        let (forward_value, tangent) = $f::jvp(x, &$f::Grad { x: 1.0 });
        same(forward_value, $f(x), &format!("{what}: jvp value"));
        same(tangent, $t, &format!("{what}: tangent"));
    }};
}

/// Same for two arguments `(x, y)`: gradient `(gx, gy)`, tangents along
/// `(1, 0)` and `(0, 1)`.
macro_rules! check2 {
    ($f:ident, $x:expr, $y:expr => grad $gx:expr, $gy:expr; tangents $tx:expr, $ty:expr) => {{
        let (x, y): (f64, f64) = ($x, $y);
        let (value, g) = $f::value_and_grad(x, y);
        let what = format!("{} at ({x:e}, {y:e})", stringify!($f));
        same(value, $f(x, y), &format!("{what}: value"));
        same(g.x, $gx, &format!("{what}: ∂x"));
        same(g.y, $gy, &format!("{what}: ∂y"));
        let (_, tx) = $f::jvp(x, y, &$f::Grad { x: 1.0, y: 0.0 });
        let (_, ty) = $f::jvp(x, y, &$f::Grad { x: 0.0, y: 1.0 });
        same(tx, $tx, &format!("{what}: tangent x"));
        same(ty, $ty, &format!("{what}: tangent y"));
    }};
}

#[differentiate]
fn product(x: f64, y: f64) -> f64 {
    x * y
}

#[differentiate]
fn exp_times(x: f64, y: f64) -> f64 {
    x.exp() * y
}

#[differentiate]
fn square_root(x: f64) -> f64 {
    x.sqrt()
}

#[differentiate]
fn log(x: f64) -> f64 {
    x.ln()
}

#[test]
fn nan_propagates_into_value_and_derivatives() {
    check2!(product, NAN, 2.0 => grad 2.0, NAN; tangents 2.0, NAN);
    check2!(exp_times, 1.0, NAN => grad NAN, 1f64.exp(); tangents NAN, 1f64.exp());
    check1!(square_root, NAN => grad NAN, tangent NAN);
    check1!(log, NAN => grad NAN, tangent NAN);
}

#[test]
fn infinities_propagate() {
    check2!(product, INF, 2.0 => grad 2.0, INF; tangents 2.0, INF);
    check2!(product, -INF, 2.0 => grad 2.0, -INF; tangents 2.0, -INF);
    check1!(square_root, INF => grad 0.0, tangent 0.0);
    check1!(log, INF => grad 0.0, tangent 0.0);
    check1!(log, 0.0 => grad INF, tangent INF);
}

#[test]
fn zero_times_infinity_matches_the_primal() {
    // The value is NaN, as the primal's; the partials are the other factor.
    check2!(product, 0.0, INF => grad INF, 0.0; tangents INF, 0.0);
    check2!(product, INF, 0.0 => grad 0.0, INF; tangents 0.0, INF);
    // exp(1000) = ∞, times 0: NaN value; ∂x = 0 · ∞ = NaN, ∂y = ∞.
    check2!(exp_times, 1000.0, 0.0 => grad NAN, INF; tangents NAN, INF);
}

#[differentiate]
fn zero_times_sqrt(x: f64) -> f64 {
    0.0 * x.sqrt()
}

#[differentiate(tape)]
fn zero_times_sqrt_tape(x: f64) -> f64 {
    0.0 * x.sqrt()
}

#[differentiate]
fn zero_times_sqrt_in_branch(x: f64) -> f64 {
    let s = x.sqrt();
    let zero = 0.0;
    if s > -1.0 {
        zero * s
    } else {
        s
    }
}

/// A zero factor times an infinite partial (`sqrt` at 0): the chain rule's
/// `0 · ∞` is NaN in forward mode. The compiled adjoint skips the
/// contributions through such a partial when the adjoint reaching it is
/// exactly 0: the gradient is 0. The tape skips a binding whose adjoint is
/// exactly 0, so there it is 0 where the zero factor is a separate binding,
/// NaN inside one fused expression.
#[test]
fn zero_factor_times_infinite_partial() {
    check1!(zero_times_sqrt, 0.0 => grad 0.0, tangent NAN);
    check1!(zero_times_sqrt_tape, 0.0 => grad NAN, tangent NAN);
    check1!(zero_times_sqrt_in_branch, 0.0 => grad 0.0, tangent NAN);
    // Away from 0 both are exactly 0.
    check1!(zero_times_sqrt, 4.0 => grad 0.0, tangent 0.0);
    check1!(zero_times_sqrt_in_branch, 4.0 => grad 0.0, tangent 0.0);
}

#[differentiate]
fn reciprocal_of_reciprocal(x: f64) -> f64 {
    1.0 / (1.0 / x)
}

#[differentiate]
fn tiny_scale(x: f64) -> f64 {
    x * 1e-200 * 1e-200
}

#[differentiate]
fn huge_scale(x: f64) -> f64 {
    x * 1e200 * 1e200
}

#[differentiate]
fn unused_singular(x: f64, y: f64) -> f64 {
    let s = x.sqrt() + x.ln();
    let _ = s;
    y * 2.0
}

#[test]
fn overflow_and_underflow_in_the_sweep() {
    // 1/x overflows for a subnormal x: the value is 1/∞ = 0 and the partials
    // (-1/u² = -0 and -1/x² = -∞) multiply to NaN.
    check1!(reciprocal_of_reciprocal, 1e-310 => grad NAN, tangent NAN);
    // Products of tiny partials underflow to 0, as the value does.
    check1!(tiny_scale, 1.0 => grad 0.0, tangent 0.0);
    check1!(tiny_scale, 1e300 => grad 0.0, tangent 0.0);
    // Products of huge partials overflow to ∞, as the value does.
    check1!(huge_scale, 1.0 => grad INF, tangent INF);
    check1!(huge_scale, -1.0 => grad INF, tangent INF);
    // A singular value that does not reach the output contributes exactly 0.
    check2!(unused_singular, 0.0, 1.0 => grad 0.0, 2.0; tangents 0.0, 2.0);
    check2!(unused_singular, -1.0, 1.0 => grad 0.0, 2.0; tangents 0.0, 2.0);
}

#[differentiate]
fn absolute(x: f64) -> f64 {
    x.abs()
}

#[differentiate]
fn larger(x: f64, y: f64) -> f64 {
    x.max(y)
}

#[differentiate]
fn smaller(x: f64, y: f64) -> f64 {
    x.min(y)
}

#[differentiate]
fn clamped(x: f64) -> f64 {
    x.clamp(0.0, 1.0)
}

#[differentiate]
fn branch(x: f64) -> f64 {
    if x > 0.0 {
        x * x
    } else {
        -x
    }
}

#[differentiate]
fn rounding(x: f64) -> f64 {
    x.floor() + x.ceil() + x.round() + x.trunc() + x.signum()
}

#[differentiate]
fn square_powi(x: f64) -> f64 {
    x.powi(2)
}

#[differentiate]
fn zeroth_powi(x: f64) -> f64 {
    x.powi(0)
}

#[differentiate]
fn power(x: f64, y: f64) -> f64 {
    x.powf(y)
}

#[differentiate]
fn norm(x: f64, y: f64) -> f64 {
    x.hypot(y)
}

#[test]
fn non_differentiable_points_follow_the_conventions() {
    // abs: 0 at ±0 (the minimal-norm subgradient), NaN at NaN.
    check1!(absolute, 0.0 => grad 0.0, tangent 0.0);
    check1!(absolute, -0.0 => grad 0.0, tangent 0.0);
    check1!(absolute, -INF => grad -1.0, tangent -1.0);
    check1!(absolute, NAN => grad NAN, tangent NAN);
    // max/min: a tie passes the receiver's derivative; a NaN operand is
    // ignored, as the value ignores it.
    check2!(larger, 1.0, 1.0 => grad 1.0, 0.0; tangents 1.0, 0.0);
    check2!(larger, 0.0, -0.0 => grad 1.0, 0.0; tangents 1.0, 0.0);
    check2!(larger, NAN, 1.0 => grad 0.0, 1.0; tangents 0.0, 1.0);
    check2!(larger, 1.0, NAN => grad 1.0, 0.0; tangents 1.0, 0.0);
    check2!(smaller, 1.0, 1.0 => grad 1.0, 0.0; tangents 1.0, 0.0);
    check2!(smaller, NAN, 1.0 => grad 0.0, 1.0; tangents 0.0, 1.0);
    // clamp: x's derivative on the closed interval, the bound's outside.
    check1!(clamped, 0.0 => grad 1.0, tangent 1.0);
    check1!(clamped, 1.0 => grad 1.0, tangent 1.0);
    check1!(clamped, 2.0 => grad 0.0, tangent 0.0);
    check1!(clamped, NAN => grad 1.0, tangent 1.0);
    // Comparisons: the branch the primal takes is differentiated; at the
    // switching point that is the `else` branch of `x > 0`; NaN compares
    // false.
    check1!(branch, 0.0 => grad -1.0, tangent -1.0);
    check1!(branch, NAN => grad -1.0, tangent -1.0);
    // Piecewise constant functions: derivative 0 everywhere, jumps included.
    check1!(rounding, 0.5 => grad 0.0, tangent 0.0);
    check1!(rounding, 2.0 => grad 0.0, tangent 0.0);
    check1!(rounding, NAN => grad 0.0, tangent 0.0);
    // sqrt at 0: +∞, the one-sided limit; outside the domain NaN.
    check1!(square_root, 0.0 => grad INF, tangent INF);
    check1!(square_root, -1.0 => grad NAN, tangent NAN);
    // ln outside its domain: NaN value, the formula 1/x as derivative.
    check1!(log, -1.0 => grad -1.0, tangent -1.0);
    // powi: n x^(n-1); x^0 is constant (0, also at x = 0).
    check1!(square_powi, 0.0 => grad 0.0, tangent 0.0);
    check1!(zeroth_powi, 0.0 => grad 0.0, tangent 0.0);
    check1!(zeroth_powi, NAN => grad 0.0, tangent 0.0);
    // powf at base 0: the limits of y x^(y-1), and 0 in the exponent where
    // the value is 0; at 0^0 (not differentiable: 0^y jumps at y = 0) the
    // formulas give 0·∞ = NaN and 1·ln 0 = -∞.
    check2!(power, 0.0, 2.0 => grad 0.0, 0.0; tangents 0.0, 0.0);
    check2!(power, 0.0, 0.5 => grad INF, 0.0; tangents INF, 0.0);
    check2!(power, 0.0, -1.0 => grad -INF, -INF; tangents -INF, -INF);
    check2!(power, 0.0, 0.0 => grad NAN, -INF; tangents NAN, -INF);
    check2!(power, 2.0, 0.0 => grad 0.0, 2f64.ln(); tangents 0.0, 2f64.ln());
    // hypot at the origin: 0.
    check2!(norm, 0.0, 0.0 => grad 0.0, 0.0; tangents 0.0, 0.0);
}

#[differentiate]
fn sum_of_squares(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x {
        s += v * v;
    }
    s
}

#[differentiate]
fn iterator_sum(x: &[f64], w: f64) -> f64 {
    x.iter().map(|v| v * w).sum::<f64>()
}

#[differentiate]
fn first_n(x: &[f64], y: &[f64], n: usize) -> f64 {
    let mut s = 1.0;
    for i in 0..n {
        s = s * x[i] + y[i].sin();
    }
    s
}

#[differentiate]
fn checkpointed(x: f64, v: &[f64], steps: usize) -> f64 {
    let mut p = x;
    #[checkpoint]
    for _ in 0..steps {
        p = p * v[0] + 0.5 * p.sin();
    }
    p * x
}

#[differentiate]
fn preaccumulated(x: &[f64], w: f64) -> f64 {
    let mut total = 0.0;
    #[preaccumulate]
    for i in 0..x.len() {
        let z = x[i] * w;
        total += z.tanh();
    }
    total + w
}

#[differentiate]
fn while_never(x: f64, limit: f64) -> f64 {
    let mut y = x;
    while y > limit {
        y *= 0.5;
    }
    y * 3.0
}

#[test]
fn empty_inputs_and_zero_iterations_give_zero_gradients() {
    let empty: [f64; 0] = [];
    let (value, g) = sum_of_squares::value_and_grad(&empty);
    assert_eq!((value, g.x.len()), (0.0, 0));
    let (value, tangent) = sum_of_squares::jvp(&empty, &sum_of_squares::Grad { x: vec![] });
    assert_eq!((value, tangent), (0.0, 0.0));

    let (value, g) = iterator_sum::value_and_grad(&empty, 2.0);
    assert_eq!((value, g.x.len(), g.w), (0.0, 0, 0.0));

    // Zero iterations over non-empty inputs: zeros, sized like the inputs.
    let x = [1.0, 2.0, 3.0];
    let (value, g) = first_n::value_and_grad(&x, &x, 0);
    assert_eq!(value, 1.0);
    assert_eq!(g.x, vec![0.0; 3]);
    assert_eq!(g.y, vec![0.0; 3]);
    let tangent = first_n::Grad {
        x: vec![1.0; 3],
        y: vec![1.0; 3],
    };
    assert_eq!(first_n::jvp(&x, &x, 0, &tangent), (1.0, 0.0));

    let (value, g) = checkpointed::value_and_grad(1.5, &x, 0);
    assert_eq!(value, 1.5 * 1.5);
    assert_eq!((g.x, g.v.clone()), (3.0, vec![0.0; 3]));

    let (value, g) = preaccumulated::value_and_grad(&empty, 0.7);
    assert_eq!((value, g.x.len(), g.w), (0.7, 0, 1.0));

    let (value, g) = while_never::value_and_grad(1.0, 5.0);
    assert_eq!((value, g.x, g.limit), (3.0, 3.0, 0.0));
}
