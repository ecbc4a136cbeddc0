//! nalgebra's number traits (simba's `RealField` and `ComplexField`, with
//! approx's comparisons) for the forward-mode dual values [`Dual`] and
//! [`DualVec`] (cargo feature `nalgebra`), so that code written generically
//! over `T: RealField` — a Cholesky solve, a Kalman update, a rotation —
//! runs on them and its derivatives come from their arithmetic.
//!
//! Every method goes through the same rule as num-traits' method of that
//! name (`generic.rs`) and the `#[differentiate]` macro's `f64` method;
//! the complex-number views of a real (`real`, `imaginary`, `conjugate`,
//! `modulus`, `argument`) are those of `f64`'s own impl. Comparisons
//! (`relative_eq`, `ulps_eq`, ...) read values, as `==` does.
//!
//! The tape value [`Real`](crate::Real) cannot be a `RealField`: simba asks
//! its numbers to be `'static + Send + Sync`, and a `Real` borrows the tape
//! it is recorded on. Generic nalgebra code is differentiated in forward
//! mode instead (`deltad::gradient_fwd`, `deltad::jvp`,
//! `deltad::hessian_fwd`, and `deltad::generic_fwd!` inside differentiated
//! functions).

use approx::{AbsDiffEq, RelativeEq, UlpsEq};
use num_traits::{Float, FromPrimitive};
use simba::scalar::{ComplexField, Field, RealField, SubsetOf};
use simba::simd::SimdValue;

use crate::dual::Dual;
use crate::dual_vec::DualVec;
use crate::generic::{binary_methods, unary_methods};
use crate::scalar::{Primitive, Scalar};

macro_rules! real_field_for {
    ($ty:ty, [$($params:tt)*]) => {
        impl<$($params)*> SimdValue for $ty {
            const LANES: usize = 1;
            type Element = Self;
            type SimdBool = bool;

            #[inline(always)]
            fn splat(val: Self) -> Self {
                val
            }
            #[inline(always)]
            fn extract(&self, _: usize) -> Self {
                *self
            }
            #[inline(always)]
            unsafe fn extract_unchecked(&self, _: usize) -> Self {
                *self
            }
            #[inline(always)]
            fn replace(&mut self, _: usize, val: Self) {
                *self = val
            }
            #[inline(always)]
            unsafe fn replace_unchecked(&mut self, _: usize, val: Self) {
                *self = val
            }
            #[inline(always)]
            fn select(self, cond: bool, other: Self) -> Self {
                if cond {
                    self
                } else {
                    other
                }
            }
        }

        impl<$($params)*> Field for $ty where S::Prim: Float + FromPrimitive {}

        impl<$($params)*> SubsetOf<$ty> for $ty {
            #[inline(always)]
            fn to_superset(&self) -> Self {
                *self
            }
            #[inline(always)]
            fn from_superset_unchecked(element: &Self) -> Self {
                *element
            }
            #[inline(always)]
            fn is_in_subset(_: &Self) -> bool {
                true
            }
        }

        /// A machine float is the constant of that value; a dual value is
        /// in the floats' subset when it carries no derivative.
        impl<$($params)*> SubsetOf<$ty> for f64 {
            #[inline(always)]
            fn to_superset(&self) -> $ty {
                <$ty as Scalar>::from_prim(<S::Prim as Primitive>::from_f64(*self))
            }
            #[inline(always)]
            fn from_superset_unchecked(element: &$ty) -> f64 {
                element.to_prim().to_f64()
            }
            #[inline(always)]
            fn is_in_subset(element: &$ty) -> bool {
                Scalar::is_zero(&(*element - <$ty as Scalar>::from_prim(element.to_prim())))
            }
        }

        impl<$($params)*> SubsetOf<$ty> for f32 {
            #[inline(always)]
            fn to_superset(&self) -> $ty {
                <$ty as Scalar>::from_prim(<S::Prim as Primitive>::from_f64(f64::from(*self)))
            }
            #[inline(always)]
            fn from_superset_unchecked(element: &$ty) -> f32 {
                element.to_prim().to_f64() as f32
            }
            #[inline(always)]
            fn is_in_subset(element: &$ty) -> bool {
                <f64 as SubsetOf<$ty>>::is_in_subset(element)
            }
        }

        /// Comparisons of the values, as approx's for the machine float.
        impl<$($params)*> AbsDiffEq for $ty {
            type Epsilon = Self;
            fn default_epsilon() -> Self {
                Self::from_prim(S::Prim::EPSILON)
            }
            fn abs_diff_eq(&self, other: &Self, epsilon: Self) -> bool {
                values_within(self.to_prim(), other.to_prim(), epsilon.to_prim())
            }
        }

        impl<$($params)*> RelativeEq for $ty {
            fn default_max_relative() -> Self {
                Self::from_prim(S::Prim::EPSILON)
            }
            fn relative_eq(&self, other: &Self, epsilon: Self, max_relative: Self) -> bool {
                values_relatively_equal(
                    self.to_prim(),
                    other.to_prim(),
                    epsilon.to_prim(),
                    max_relative.to_prim(),
                )
            }
        }

        impl<$($params)*> UlpsEq for $ty {
            fn default_max_ulps() -> u32 {
                4
            }
            fn ulps_eq(&self, other: &Self, epsilon: Self, max_ulps: u32) -> bool {
                values_ulps_apart(self.to_prim(), other.to_prim(), epsilon.to_prim(), max_ulps)
            }
        }

        impl<$($params)*> ComplexField for $ty
        where
            S::Prim: Float + FromPrimitive,
        {
            type RealField = Self;

            #[inline(always)]
            fn from_real(re: Self) -> Self {
                re
            }
            #[inline(always)]
            fn real(self) -> Self {
                self
            }
            /// Zero, a constant.
            #[inline(always)]
            fn imaginary(self) -> Self {
                <Self as Scalar>::zero()
            }
            #[inline(always)]
            fn modulus(self) -> Self {
                <Self as Scalar>::abs(self)
            }
            #[inline(always)]
            fn modulus_squared(self) -> Self {
                self * self
            }
            /// 0 for a value ≥ 0, else π: a constant, as `f64`'s.
            #[inline(always)]
            fn argument(self) -> Self {
                if self >= <Self as Scalar>::zero() {
                    <Self as Scalar>::zero()
                } else {
                    Self::from_prim(<S::Prim as Primitive>::from_f64(core::f64::consts::PI))
                }
            }
            #[inline(always)]
            fn norm1(self) -> Self {
                <Self as Scalar>::abs(self)
            }
            #[inline(always)]
            fn scale(self, factor: Self) -> Self {
                self * factor
            }
            #[inline(always)]
            fn unscale(self, factor: Self) -> Self {
                self / factor
            }
            #[inline(always)]
            fn conjugate(self) -> Self {
                self
            }
            #[inline(always)]
            fn sin_cos(self) -> (Self, Self) {
                (<Self as Scalar>::sin(self), <Self as Scalar>::cos(self))
            }
            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                <Self as Scalar>::mul_add(self, a, b)
            }
            /// ln(self) / ln(base).
            #[inline(always)]
            fn log(self, base: Self) -> Self {
                <Self as Scalar>::ln(self) / <Self as Scalar>::ln(base)
            }
            #[inline(always)]
            fn powi(self, n: i32) -> Self {
                <Self as Scalar>::powi(self, n)
            }
            /// `powf`: the exponent of a real is real.
            #[inline(always)]
            fn powc(self, n: Self) -> Self {
                <Self as Scalar>::powf(self, n)
            }
            /// Of the value.
            #[inline(always)]
            fn is_finite(&self) -> bool {
                Primitive::is_finite(self.to_prim())
            }
            /// `None` below zero, as `f64`'s.
            #[inline(always)]
            fn try_sqrt(self) -> Option<Self> {
                (self >= <Self as Scalar>::zero()).then(|| <Self as Scalar>::sqrt(self))
            }
            unary_methods!(signum abs floor ceil round trunc fract recip sin cos tan asin acos
                atan sinh cosh tanh asinh acosh atanh log2 log10 ln ln_1p sqrt exp exp2 exp_m1
                cbrt);
            binary_methods!(hypot powf);
        }

        impl<$($params)*> RealField for $ty
        where
            S::Prim: Float + FromPrimitive,
        {
            /// Of the value.
            #[inline(always)]
            fn is_sign_positive(&self) -> bool {
                !Primitive::is_sign_negative(self.to_prim())
            }
            /// Of the value.
            #[inline(always)]
            fn is_sign_negative(&self) -> bool {
                Primitive::is_sign_negative(self.to_prim())
            }
            /// `max(min)` then `min(max)`, with their rules.
            #[inline(always)]
            fn clamp(self, min: Self, max: Self) -> Self {
                <Self as Scalar>::min(<Self as Scalar>::max(self, min), max)
            }
            binary_methods!(copysign max min atan2);
            /// The machine float's lowest finite value, a constant.
            fn min_value() -> Option<Self> {
                Some(Self::from_prim(S::Prim::MIN))
            }
            /// The machine float's largest finite value, a constant.
            fn max_value() -> Option<Self> {
                Some(Self::from_prim(S::Prim::MAX))
            }
            constants!(pi: PI, two_pi: TAU, frac_pi_2: FRAC_PI_2, frac_pi_3: FRAC_PI_3,
                frac_pi_4: FRAC_PI_4, frac_pi_6: FRAC_PI_6, frac_pi_8: FRAC_PI_8,
                frac_1_pi: FRAC_1_PI, frac_2_pi: FRAC_2_PI, frac_2_sqrt_pi: FRAC_2_SQRT_PI,
                e: E, log2_e: LOG2_E, log10_e: LOG10_E, ln_2: LN_2, ln_10: LN_10);
        }
    };
}

/// Each constant is `f64`'s, rounded to the machine float.
macro_rules! constants {
    ($($name:ident: $constant:ident),*) => {$(
        #[inline(always)]
        fn $name() -> Self {
            Self::from_prim(<S::Prim as Primitive>::from_f64(core::f64::consts::$constant))
        }
    )*};
}

/// `|a - b| ≤ epsilon`.
fn values_within<P: Primitive>(a: P, b: P, epsilon: P) -> bool {
    (if a > b { a - b } else { b - a }) <= epsilon
}

/// Equal, or within `epsilon`, or within `max_relative` of the larger
/// magnitude (never for an infinity against another value).
fn values_relatively_equal<P: Primitive>(a: P, b: P, epsilon: P, max_relative: P) -> bool {
    if a == b {
        return true;
    }
    if a.is_infinite() || b.is_infinite() {
        return false;
    }
    let difference = (a - b).abs();
    if difference <= epsilon {
        return true;
    }
    difference <= a.abs().max(b.abs()) * max_relative
}

/// Within `epsilon`, or of one sign and at most `max_ulps` floats apart.
fn values_ulps_apart<P: Primitive>(a: P, b: P, epsilon: P, max_ulps: u32) -> bool {
    if values_within(a, b, epsilon) {
        return true;
    }
    if a.is_sign_negative() != b.is_sign_negative() {
        return a == b;
    }
    a.bits().abs_diff(b.bits()) <= u64::from(max_ulps)
}

real_field_for!(Dual<S>, [S: Scalar + Send + Sync + 'static]);
real_field_for!(DualVec<S, N>, [S: Scalar + Send + Sync + 'static, const N: usize]);
