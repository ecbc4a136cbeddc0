//! num-traits' `Float` family on deltad's dual values: every method, on
//! `Dual` (forward mode), `Real` (reverse mode) and `Real` over `Dual`
//! (second order), against the same generic code run on `f64`: values
//! equal bit for bit, first derivatives against central differences of the
//! `f64` code, second derivatives against central differences of the first.

use deltad::num_traits::{Float, FloatConst, FromPrimitive, NumCast, Signed, ToPrimitive, Zero};

mod common;
use common::{central, near};

/// Each case is a generic function of one real; the test runs it on every
/// number type.
macro_rules! cases {
    ($($name:ident at $x:literal: |$v:ident| $body:expr;)*) => {$(
        #[test]
        fn $name() {
            fn case<T: Float + FloatConst + FromPrimitive + Signed + std::iter::Sum + std::iter::Product>(
                $v: T,
            ) -> T {
                $body
            }
            let x: f64 = $x;
            let what = stringify!($name);
            // Forward mode.
            let (value, tangent) = deltad::jvp(|v| case(v[0]), &[x], &[1.0]);
            assert_eq!(value.to_bits(), case(x).to_bits(), "{what}: value");
            let slope = central(case::<f64>, x);
            near(tangent, slope, 1e-6, what);
            // Reverse mode.
            let (value, gradient) = deltad::value_and_gradient(|v| case(v[0]), &[x]);
            assert_eq!(value.to_bits(), case(x).to_bits(), "{what}: value on the tape");
            near(gradient[0], slope, 1e-6, what);
            // The modes add the chain rule's terms in different orders.
            near(gradient[0], tangent, 1e-14, &format!("{what}: both modes"));
            // Second order.
            let curvature = deltad::hessian(|v| case(v[0]), &[x])[0][0];
            let second = central(
                |y| deltad::gradient(|v| case(v[0]), &[y])[0],
                x,
            );
            near(curvature, second, 1e-5, &format!("{what}: second derivative"));
        }
    )*};
}

cases! {
    sin_cos_tan at 0.4: |x| x.sin() * x.cos() + x.tan() + x.sin_cos().0;
    inverse_trigonometry at 0.3: |x| x.asin() + x.acos() * x.atan() + x.atan2(T::one() + x);
    hyperbolic at 0.7: |x| x.sinh() + x.cosh() * x.tanh();
    inverse_hyperbolic at 0.5: |x| x.asinh() + (x + T::one()).acosh() + x.atanh();
    exponentials at 0.8: |x| x.exp() + x.exp2() + x.exp_m1();
    logarithms at 1.7: |x| x.ln() + x.log2() + x.log10() + x.ln_1p() + x.log(T::from_f64(3.0).unwrap());
    roots_and_powers at 2.3: |x| x.sqrt() + x.cbrt() + x.powi(3) + x.powf(T::from(1.5).unwrap()) + x.recip();
    powers_with_a_variable_exponent at 1.3: |x| x.powf(x) + T::from_f64(2.0).unwrap().powf(x);
    hypot_and_mul_add at 0.9: |x| x.hypot(T::from_f64(2.0).unwrap() * x) + x.mul_add(x, T::one());
    max_min_abs_sub at 0.6: |x| x.max(x * x) + x.min(T::one() - x) + Float::abs_sub(x, T::zero()) + Signed::abs(&(-x));
    piecewise_constant at 1.6: |x| x * (x.floor() + x.ceil() + x.round() + x.trunc()) + x.fract() + Float::signum(x) * x;
    sign_and_copysign at 0.6: |x| Float::abs(x) + x.copysign(-T::one()) + Signed::signum(&x) * x;
    angles at 0.5: |x| x.to_degrees() + x.to_radians() * T::PI() + T::E() * x + T::FRAC_PI_2().sin() * x;
    conversions_in at 1.1: |x| x * T::from_f64(2.5).unwrap() + <T as NumCast>::from(3_i32).unwrap() + T::from_usize(4).unwrap() * x;
    sums_and_products at 0.7: |x| [x, x * x, x.sin()].iter().copied().sum::<T>() + [x, T::one() + x].iter().copied().product::<T>();
    constants at 0.2: |x| x * (T::one() + T::zero() + T::epsilon() + T::SQRT_2() + T::LN_2()) + T::min_positive_value() * T::zero() + T::neg_zero() + x.min(T::max_value()) + x.max(T::min_value());
}

/// Conversions out of the number, and tests, read its value.
#[test]
fn conversions_out_and_tests_read_the_value() {
    let (value, _) = deltad::jvp(
        |v| {
            let x = v[0];
            assert_eq!(x.to_f64(), Some(2.75));
            assert_eq!(x.to_i64(), Some(2));
            assert!(x.is_finite() && x.is_normal() && !x.is_nan() && x.is_sign_positive());
            assert_eq!(x.classify(), std::num::FpCategory::Normal);
            assert_eq!(x.integer_decode(), 2.75f64.integer_decode());
            assert!(!Zero::is_zero(&x) && Signed::is_positive(&x));
            x
        },
        &[2.75],
        &[1.0],
    );
    assert_eq!(value, 2.75);
    let g = deltad::gradient(
        |v| {
            assert!(v[0].is_infinite() && v[0].is_sign_negative());
            v[1] * v[1]
        },
        &[f64::NEG_INFINITY, 3.0],
    );
    assert_eq!(g, vec![0.0, 6.0]);
}
