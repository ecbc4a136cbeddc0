//! nalgebra's number traits (simba's `RealField`, `ComplexField`) on
//! deltad's forward dual values (feature `nalgebra`): code written
//! generically over `T: RealField`, as nalgebra code is, differentiated
//! without being annotated, through `deltad::jvp` (`Dual`),
//! `deltad::gradient_fwd` (`DualVec`) and `deltad::hessian_fwd` (`DualVec`
//! of `Dual`), and through `deltad::generic_fwd!` from a differentiated
//! function.
//!
//! Oracles: the same generic code run on `f64` (values bit for bit),
//! central differences of it (first derivatives, h = 1e-6: truncation
//! ~h²|f'''|/6 and rounding ~1e-16|f|/h, both below 1e-8 for these O(1)
//! functions, so 1e-6 leaves room), central differences of the first
//! derivatives (second ones, 1e-5), and the jvp/gradient identity
//! ⟨∇f, v⟩ = f'(x; v) between the two forward engines (1e-12: the same
//! rules, summed in another order).
#![cfg(feature = "nalgebra")]
#![allow(clippy::needless_range_loop)]

use deltad::nalgebra::{self, ComplexField, DMatrix, DVector, RealField};

mod common;
use common::{central, finite_difference, near};

/// Each case is a function of one real generic over `RealField`; the test
/// runs it on `f64` and on each forward engine.
macro_rules! cases {
    ($($name:ident at $x:literal: |$v:ident| $body:expr;)*) => {$(
        #[test]
        fn $name() {
            fn case<T: RealField + Copy>($v: T) -> T {
                $body
            }
            let x: f64 = $x;
            let what = stringify!($name);
            let slope = central(case::<f64>, x);
            let (value, tangent) = deltad::jvp(|v| case(v[0]), &[x], &[1.0]);
            assert_eq!(value.to_bits(), case(x).to_bits(), "{what}: value");
            near(tangent, slope, 1e-6, what);
            let (value, gradient) = deltad::value_and_gradient_fwd(|v| case(v[0]), &[x]);
            assert_eq!(value.to_bits(), case(x).to_bits(), "{what}: value in chunks");
            assert_eq!(gradient[0].to_bits(), tangent.to_bits(), "{what}: chunk against jvp");
            let curvature = deltad::hessian_fwd(|v| case(v[0]), &[x])[0][0];
            let second = central(|y| deltad::gradient_fwd(|v| case(v[0]), &[y])[0], x);
            near(curvature, second, 1e-5, &format!("{what}: second derivative"));
        }
    )*};
}

cases! {
    trigonometry at 0.4: |x| x.sin() * x.cos() + x.tan() + x.sin_cos().0 + x.sinh_cosh().1;
    inverse_trigonometry at 0.3: |x| x.asin() + x.acos() * x.atan() + x.atan2(T::one() + x);
    hyperbolic at 0.7: |x| x.sinh() + x.cosh() * x.tanh() + x.asinh() + (x + T::one()).acosh() + x.atanh();
    exponentials_and_logarithms at 1.7: |x| x.exp() + x.exp2() + x.exp_m1() + x.ln() + x.log2() + x.log10() + x.ln_1p() + x.log(T::from_f64(3.0).unwrap());
    roots_and_powers at 2.3: |x| x.sqrt() + x.cbrt() + x.powi(3) + x.powf(x) + x.powc(T::from_f64(1.5).unwrap()) + x.recip() + x.try_sqrt().unwrap();
    hypot_and_mul_add at 0.9: |x| x.hypot(T::from_f64(2.0).unwrap() * x) + x.mul_add(x, T::one());
    order at 0.6: |x| RealField::max(x, x * x) + RealField::min(x, T::one() - x) + x.clamp(T::zero(), T::one()) * x + ComplexField::abs(-x) + x.copysign(-T::one());
    piecewise_constant at 1.6: |x| x * (x.floor() + x.ceil() + x.round() + x.trunc()) + x.fract() + ComplexField::signum(x) * x;
    complex_views at 0.8: |x| x.modulus() + x.modulus_squared() + x.norm1() + x.scale(x) + x.unscale(T::one() + x) + T::from_real(x).real() + x.conjugate() + x.imaginary() + x.argument() + (-x).argument() + x.to_polar().0 + x.to_exp().1 * x;
    cardinal_functions at 0.7: |x| x.sinc() + x.sinhc() + x.cosc() + x.coshc();
    constants at 0.2: |x| x * (T::pi() + T::two_pi() + T::frac_pi_2() + T::frac_pi_3() + T::frac_pi_4() + T::frac_pi_6() + T::frac_pi_8() + T::frac_1_pi() + T::frac_2_pi() + T::frac_2_sqrt_pi() + T::e() + T::log2_e() + T::log10_e() + T::ln_2() + T::ln_10()) + RealField::min(x, T::max_value().unwrap()) + nalgebra::convert::<f64, T>(0.5) * x;
}

/// Tests and conversions out read the value; a value with no derivative is
/// in the floats' subset, one with a derivative is not.
#[test]
fn tests_and_conversions_read_the_value() {
    use deltad::Dual;
    let x = Dual::new(-2.5, 1.0);
    assert!(x.is_sign_negative() && !x.is_sign_positive() && ComplexField::is_finite(&x));
    assert_eq!(nalgebra::try_convert::<Dual<f64>, f64>(x), None);
    assert_eq!(
        nalgebra::try_convert::<Dual<f64>, f64>(Dual::new(-2.5, 0.0)),
        Some(-2.5)
    );
    assert_eq!((-x).try_sqrt().map(|r| r.value), Some(2.5f64.sqrt()));
    assert!(x.try_sqrt().is_none());
}

/// One update of a Kalman filter, written over `T: RealField` with
/// nalgebra's own Cholesky factorisation: the posterior mean and
/// covariance after measuring `z = H x + v`, `v ~ N(0, R)`, and the
/// innovation's negative log-likelihood (up to a constant).
fn kalman_update<T: RealField + Copy>(
    x: &DVector<T>,
    p: &DMatrix<T>,
    z: &DVector<T>,
    h: &DMatrix<T>,
    r: &DMatrix<T>,
) -> (DVector<T>, DMatrix<T>, T) {
    let innovation = z - h * x;
    let s = h * p * h.transpose() + r;
    let cholesky = s
        .cholesky()
        .expect("the innovation covariance is positive definite");
    let gain = p * h.transpose() * cholesky.inverse();
    let mean = x + &gain * &innovation;
    let covariance = (DMatrix::identity(x.len(), x.len()) - &gain * h) * p;
    let log_det = cholesky
        .l()
        .diagonal()
        .iter()
        .fold(T::zero(), |sum, d| sum + d.ln());
    let half = T::from_f64(0.5).unwrap();
    let nll = innovation.dot(&cholesky.solve(&innovation)) * half + log_det;
    (mean, covariance, nll)
}

/// A scalar of the update's results, from a flat parameter vector: the
/// prior mean (2), the prior covariance's Cholesky factor (3), the
/// measurement (2) and the measurement noise's scale (1).
fn kalman_objective<T: RealField + Copy>(theta: &[T]) -> T {
    let c = |v: f64| T::from_f64(v).unwrap();
    let x = DVector::from_column_slice(&theta[0..2]);
    let l = DMatrix::from_row_slice(2, 2, &[theta[2], T::zero(), theta[3], theta[4]]);
    let p = &l * l.transpose();
    let z = DVector::from_column_slice(&theta[5..7]);
    let h = DMatrix::from_row_slice(2, 2, &[c(1.0), c(0.5), c(-0.3), c(2.0)]);
    let r = DMatrix::identity(2, 2) * (theta[7] * theta[7]);
    let (mean, covariance, nll) = kalman_update(&x, &p, &z, &h, &r);
    nll + mean.norm_squared() + covariance.trace()
}

const THETA: [f64; 8] = [0.3, -1.2, 1.1, 0.4, 0.9, 0.7, -0.5, 0.6];

#[test]
fn a_generic_kalman_update_in_forward_mode() {
    let (value, g) = deltad::value_and_gradient_fwd(kalman_objective, &THETA);
    assert_eq!(value.to_bits(), kalman_objective(&THETA).to_bits());
    let fd = finite_difference(kalman_objective::<f64>, &THETA);
    for (i, (&g, &fd)) in g.iter().zip(&fd).enumerate() {
        near(g, fd, 1e-6, &format!("gradient {i}"));
    }
    let v = [0.5, -1.0, 0.25, 2.0, -0.75, 1.5, 0.1, -0.3];
    let (_, along) = deltad::jvp(kalman_objective, &THETA, &v);
    let inner: f64 = g.iter().zip(&v).map(|(g, v)| g * v).sum();
    near(along, inner, 1e-12, "jvp against the gradient");
    let h = deltad::hessian_fwd(kalman_objective, &THETA);
    for i in 0..THETA.len() {
        let row = finite_difference(|t| deltad::gradient_fwd(kalman_objective, t)[i], &THETA);
        for j in 0..THETA.len() {
            near(h[i][j], row[j], 1e-5, &format!("hessian ({i}, {j})"));
            near(h[i][j], h[j][i], 1e-12, &format!("symmetry ({i}, {j})"));
        }
    }
}

/// More inputs than one chunk: each chunk's lanes land on their inputs.
#[test]
fn gradients_span_several_chunks() {
    fn f<T: RealField + Copy>(x: &[T]) -> T {
        let v = DVector::from_column_slice(x);
        let weights = DVector::from_fn(x.len(), |i, _| T::from_usize(i + 1).unwrap());
        (v.dot(&weights)).sin() + v.norm_squared() * v[0]
    }
    for n in [1, 7, 8, 9, 17] {
        let x: Vec<f64> = (0..n).map(|i| 0.1 * i as f64 - 0.4).collect();
        let g = deltad::gradient_fwd(f, &x);
        let fd = finite_difference(f::<f64>, &x);
        for i in 0..n {
            near(g[i], fd[i], 1e-6, &format!("n = {n}, input {i}"));
        }
        let h = deltad::hessian_fwd(f, &x);
        let expected_last = {
            let s: f64 = x.iter().enumerate().map(|(i, v)| (i + 1) as f64 * v).sum();
            // ∂²/∂x_{n-1}² of sin(w·x) + |x|² x₀.
            -(n as f64).powi(2) * s.sin() + if n == 1 { 6.0 * x[0] } else { 2.0 * x[0] }
        };
        near(
            h[n - 1][n - 1],
            expected_last,
            1e-12,
            &format!("n = {n}, last diagonal"),
        );
    }
    let (value, g) = deltad::value_and_gradient_fwd(|_: &[_]| nalgebra::convert(2.0), &[]);
    assert_eq!((value, g.len()), (2.0, 0));
}

/// The Kalman objective called un-annotated from a differentiated function
/// through `generic_fwd!` (8 inputs: one pass), with differentiated code
/// around it.
#[deltad::differentiate]
fn weighted_filter(theta: &[f64], weight: f64) -> f64 {
    weight * deltad::generic_fwd!(kalman_objective(theta)) + theta[0].sin()
}

/// Two chunks of inputs (a constant argument between the differentiated
/// ones, numbered across arguments), and an integer argument.
fn spread<T: RealField + Copy>(head: T, scale: &[T], rest: &[T], power: i32) -> T {
    let v = DVector::from_fn(rest.len(), |i, _| rest[i] * scale[i % scale.len()]);
    (v.norm_squared() + head).powi(power) / (T::one() + head * head)
}

#[deltad::differentiate]
fn spread_twice(x: &[f64], #[no_grad] scale: &[f64]) -> f64 {
    deltad::generic_fwd!(spread(x[0], scale, x, 2)) * x[1]
}

#[test]
fn a_generic_call_in_forward_mode_from_differentiated_code() {
    let (weight, value) = (1.5, kalman_objective(&THETA));
    let g = weighted_filter::grad(&THETA, weight);
    let inner = deltad::gradient_fwd(kalman_objective, &THETA);
    for i in 0..THETA.len() {
        let expected = weight * inner[i] + if i == 0 { THETA[0].cos() } else { 0.0 };
        near(g.theta[i], expected, 1e-12, &format!("gradient {i}"));
    }
    near(g.weight, value, 1e-12, "gradient of the weight");
    // Second order: the macro's forward-over-reverse Hessian runs the call
    // on chunks of dual values; row `weight` is the inner gradient.
    let h = weighted_filter::hessian(&THETA, weight);
    let inner_h = deltad::hessian_fwd(kalman_objective, &THETA);
    for i in 0..THETA.len() {
        for j in 0..THETA.len() {
            let sine = if i == 0 && j == 0 {
                -THETA[0].sin()
            } else {
                0.0
            };
            near(
                h[i].theta[j],
                weight * inner_h[i][j] + sine,
                1e-10,
                &format!("hessian ({i}, {j})"),
            );
        }
        near(
            h[THETA.len()].theta[i],
            inner[i],
            1e-12,
            &format!("hessian (weight, {i})"),
        );
    }

    let x: Vec<f64> = (0..11).map(|i| 0.3 - 0.07 * i as f64).collect();
    let scale = [1.0, -2.0, 0.5];
    let g = spread_twice::grad(&x, &scale).x;
    let fd = finite_difference(|x| spread_twice(x, &scale), &x);
    for i in 0..x.len() {
        near(g[i], fd[i], 1e-6, &format!("two chunks, input {i}"));
    }
    let v: Vec<f64> = (0..11).map(|i| (i as f64 * 0.7).sin()).collect();
    let (_, along) = spread_twice::jvp(&x, &scale, &spread_twice::Grad { x: v.clone() });
    let inner: f64 = g.iter().zip(&v).map(|(g, v)| g * v).sum();
    near(along, inner, 1e-12, "jvp against the gradient");
}
