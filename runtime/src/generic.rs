//! num-traits' number traits for deltad's dual values (cargo feature
//! `num-traits`, on by default): [`Dual`], [`DualVec`] and [`Real`] are `Float`,
//! `FloatConst`, `FromPrimitive`, `NumCast`, `Signed`, ... (and through
//! num-traits' blanket impl `num_traits::real::Real`), so code written
//! generically over num-traits runs on them and its derivatives come from
//! their arithmetic.
//!
//! Every method with a derivative goes through the same rule the
//! `#[differentiate]` macro uses for the `f64` method of that name (see
//! docs/edge-cases.md for the rules at non-differentiable points: `abs`,
//! `max`, `min`, `floor`, ...). Conversions *into* the number
//! (`from_f64`, `NumCast::from`, `T::PI()`, ...) make constants;
//! conversions *out of* it (`to_f64`, `to_i64`, ...) and the tests
//! (`is_nan`, `classify`, comparisons) read its value and carry no
//! derivative, as they would in any dual-number library. There is no
//! `Into<f64>` for these types on purpose: generic code that leaves its
//! number type for `f64` would silently lose the derivative, so it does not
//! compile instead.

use core::num::FpCategory;

use num_traits::{Float, FloatConst, FromPrimitive, Num, NumCast, One, Signed, ToPrimitive, Zero};

use crate::dual::Dual;
use crate::dual_vec::DualVec;
use crate::real::Real;
use crate::scalar::{Primitive, Scalar};

macro_rules! num_traits_for {
    ($ty:ty, [$($params:tt)*]) => {
        impl<$($params)*> Zero for $ty {
            #[inline]
            fn zero() -> Self {
                <Self as Scalar>::zero()
            }
            /// By value, as `==` compares (a zero value with a nonzero
            /// derivative is zero).
            #[inline]
            fn is_zero(&self) -> bool {
                *self == <Self as Scalar>::zero()
            }
        }

        impl<$($params)*> One for $ty {
            #[inline]
            fn one() -> Self {
                <Self as Scalar>::one()
            }
        }

        impl<$($params)*> Num for $ty
        where
            S::Prim: Num,
        {
            type FromStrRadixErr = <S::Prim as Num>::FromStrRadixErr;
            fn from_str_radix(text: &str, radix: u32) -> Result<Self, Self::FromStrRadixErr> {
                <S::Prim as Num>::from_str_radix(text, radix).map(Self::from_prim)
            }
        }

        impl<$($params)*> ToPrimitive for $ty
        where
            S::Prim: ToPrimitive,
        {
            fn to_i64(&self) -> Option<i64> {
                ToPrimitive::to_i64(&self.to_prim())
            }
            fn to_u64(&self) -> Option<u64> {
                ToPrimitive::to_u64(&self.to_prim())
            }
            fn to_i128(&self) -> Option<i128> {
                ToPrimitive::to_i128(&self.to_prim())
            }
            fn to_u128(&self) -> Option<u128> {
                ToPrimitive::to_u128(&self.to_prim())
            }
            fn to_f32(&self) -> Option<f32> {
                ToPrimitive::to_f32(&self.to_prim())
            }
            fn to_f64(&self) -> Option<f64> {
                ToPrimitive::to_f64(&self.to_prim())
            }
        }

        impl<$($params)*> NumCast for $ty
        where
            S::Prim: NumCast,
        {
            fn from<I: ToPrimitive>(n: I) -> Option<Self> {
                <S::Prim as NumCast>::from(n).map(Self::from_prim)
            }
        }

        impl<$($params)*> FromPrimitive for $ty
        where
            S::Prim: FromPrimitive,
        {
            fn from_i64(n: i64) -> Option<Self> {
                <S::Prim as FromPrimitive>::from_i64(n).map(Self::from_prim)
            }
            fn from_u64(n: u64) -> Option<Self> {
                <S::Prim as FromPrimitive>::from_u64(n).map(Self::from_prim)
            }
            fn from_i128(n: i128) -> Option<Self> {
                <S::Prim as FromPrimitive>::from_i128(n).map(Self::from_prim)
            }
            fn from_u128(n: u128) -> Option<Self> {
                <S::Prim as FromPrimitive>::from_u128(n).map(Self::from_prim)
            }
            fn from_f32(n: f32) -> Option<Self> {
                <S::Prim as FromPrimitive>::from_f32(n).map(Self::from_prim)
            }
            fn from_f64(n: f64) -> Option<Self> {
                <S::Prim as FromPrimitive>::from_f64(n).map(Self::from_prim)
            }
        }

        impl<$($params)*> Signed for $ty
        where
            S::Prim: Num,
        {
            fn abs(&self) -> Self {
                <Self as Scalar>::abs(*self)
            }
            fn abs_sub(&self, other: &Self) -> Self {
                positive_difference(*self, *other)
            }
            fn signum(&self) -> Self {
                <Self as Scalar>::signum(*self)
            }
            fn is_positive(&self) -> bool {
                *self > <Self as Scalar>::zero()
            }
            fn is_negative(&self) -> bool {
                *self < <Self as Scalar>::zero()
            }
        }

        impl<$($params)*> FloatConst for $ty
        where
            S::Prim: FloatConst,
        {
            float_consts!(E FRAC_1_PI FRAC_1_SQRT_2 FRAC_2_PI FRAC_2_SQRT_PI FRAC_PI_2 FRAC_PI_3
                FRAC_PI_4 FRAC_PI_6 FRAC_PI_8 LN_10 LN_2 LOG10_E LOG2_E PI SQRT_2 TAU LOG10_2
                LOG2_10);
        }

        impl<$($params)*> Float for $ty
        where
            S::Prim: Float,
        {
            float_constants!(nan infinity neg_infinity neg_zero min_value min_positive_value
                max_value epsilon);
            value_tests!(is_nan is_infinite is_finite is_normal is_subnormal is_sign_positive
                is_sign_negative);
            unary_methods!(floor ceil round trunc fract abs signum recip sqrt exp exp2 ln log2
                log10 cbrt sin cos tan asin acos atan exp_m1 ln_1p sinh cosh tanh asinh acosh
                atanh);
            binary_methods!(powf max min hypot atan2 copysign);

            fn classify(self) -> FpCategory {
                self.to_prim().classify()
            }
            fn mul_add(self, a: Self, b: Self) -> Self {
                <Self as Scalar>::mul_add(self, a, b)
            }
            fn powi(self, n: i32) -> Self {
                <Self as Scalar>::powi(self, n)
            }
            /// ln(self) / ln(base).
            fn log(self, base: Self) -> Self {
                <Self as Scalar>::ln(self) / <Self as Scalar>::ln(base)
            }
            fn abs_sub(self, other: Self) -> Self {
                positive_difference(self, other)
            }
            fn sin_cos(self) -> (Self, Self) {
                (<Self as Scalar>::sin(self), <Self as Scalar>::cos(self))
            }
            /// Of the value.
            fn integer_decode(self) -> (u64, i16, i8) {
                self.to_prim().integer_decode()
            }
            /// `self · (180/π)`, the factor rounded as the machine float's
            /// `to_degrees` rounds it.
            fn to_degrees(self) -> Self {
                self * Self::from_prim(<S::Prim as Float>::to_degrees(S::Prim::ONE))
            }
            /// `self · (π/180)`, likewise.
            fn to_radians(self) -> Self {
                self * Self::from_prim(<S::Prim as Float>::to_radians(S::Prim::ONE))
            }
        }
    };
}

macro_rules! float_consts {
    ($($name:ident)*) => {$(
        #[allow(non_snake_case)]
        fn $name() -> Self {
            Self::from_prim(<S::Prim as FloatConst>::$name())
        }
    )*};
}

macro_rules! float_constants {
    ($($name:ident)*) => {$(
        fn $name() -> Self {
            Self::from_prim(<S::Prim as Float>::$name())
        }
    )*};
}

macro_rules! value_tests {
    ($($name:ident)*) => {$(
        /// Of the value.
        fn $name(self) -> bool {
            <S::Prim as Float>::$name(self.to_prim())
        }
    )*};
}

/// Trait methods that are the `Scalar` method of their name (here and in
/// `real_field.rs`).
macro_rules! unary_methods {
    ($($name:ident)*) => {$(
        #[inline(always)]
        fn $name(self) -> Self {
            <Self as Scalar>::$name(self)
        }
    )*};
}
#[cfg(feature = "nalgebra")]
pub(crate) use unary_methods;

/// The same for methods of two numbers.
macro_rules! binary_methods {
    ($($name:ident)*) => {$(
        #[inline(always)]
        fn $name(self, other: Self) -> Self {
            <Self as Scalar>::$name(self, other)
        }
    )*};
}
#[cfg(feature = "nalgebra")]
pub(crate) use binary_methods;

/// `self - other` where it is positive, else 0 (NaN if either is NaN), as
/// the C `fdim` num-traits' `abs_sub` follows.
fn positive_difference<S: Scalar>(x: S, other: S) -> S {
    if x <= other {
        S::zero()
    } else {
        x - other
    }
}

num_traits_for!(Dual<S>, [S: Scalar]);
num_traits_for!(Real<'t, S>, ['t, S: Scalar]);
num_traits_for!(DualVec<S, N>, [S: Scalar, const N: usize]);
