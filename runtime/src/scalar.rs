//! The number types a tape can hold.
//!
//! A [`Scalar`] is what the generated code computes with *underneath* the
//! dual values: `f64` or `f32` for a first-order gradient, or a dual value of
//! an outer tape when derivatives are nested. Every elementary function the
//! derivative rules need is a trait method, so a rule is written once and works
//! at every nesting level.

use core::fmt::{Debug, Display};
use core::ops::{
    Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Rem, RemAssign, Sub, SubAssign,
};

use crate::compiled::Stack;
use crate::dual::Dual;
use crate::tape::Tape;

pub(crate) mod sealed {
    /// Scalars are a closed set: the tape's soundness argument (see
    /// `tape.rs`) relies on knowing what their arithmetic can touch.
    pub trait Sealed {}
}

/// A real number the tape records, differentiates and accumulates adjoints in.
///
/// Implemented for `f64`, `f32` and for [`Real`](crate::Real) itself (a value
/// of an outer tape), which is how nested derivatives work. The trait is
/// sealed: the set of scalars is fixed by this crate.
pub trait Scalar:
    Copy
    + Debug
    + Display
    + PartialEq
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Rem<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + DivAssign
    + RemAssign
    + sealed::Sealed
{
    /// The machine float at the bottom of this scalar (`f64` or `f32`).
    type Prim: Primitive;

    /// True for dual values of an outer tape (nested differentiation).
    const NESTED: bool = false;

    /// This number as a value that borrows no tape (`'static`, `Send`,
    /// `Sync`), for generic code that asks for such numbers (nalgebra's
    /// `RealField`, through `deltad::generic_fwd!`): the same number for
    /// every scalar but a tape's value, which has none (`DETACHES` false;
    /// [`detach`](Scalar::detach) and [`attach`](Scalar::attach) are never
    /// called on it: the caller checks `DETACHES` at compile time).
    #[doc(hidden)]
    type Detached: Scalar<Prim = Self::Prim> + Send + Sync + 'static;
    #[doc(hidden)]
    const DETACHES: bool = true;
    #[doc(hidden)]
    fn detach(self) -> Self::Detached;
    #[doc(hidden)]
    fn attach(value: Self::Detached) -> Self;

    /// For a first-order forward dual number over the machine float (and the
    /// machine float itself, with tangent 0): its value and tangent.
    /// `None` for scalars that carry more (nested levels, tape values).
    #[doc(hidden)]
    fn first_order(self) -> Option<(Self::Prim, Self::Prim)> {
        None
    }

    /// The inverse of `first_order`: the scalar with this value and tangent,
    /// if this scalar type is a first-order forward dual number.
    #[doc(hidden)]
    fn from_first_order(_value: Self::Prim, _tangent: Self::Prim) -> Option<Self> {
        None
    }

    /// A constant of this scalar type (no derivative at any level).
    fn from_prim(value: Self::Prim) -> Self;
    /// The machine value at the bottom of all nesting levels.
    fn to_prim(self) -> Self::Prim;
    /// Exact test for zero, used by the reverse sweep to skip bindings whose
    /// adjoint is zero (their contribution is exactly zero, even where a
    /// local partial derivative is infinite).
    fn is_zero(&self) -> bool;

    /// True if this value is surely finite at every level (a machine float
    /// that is neither infinite nor NaN; `false` where that is not known):
    /// a product with it and a zero is then zero, with no mask needed.
    #[doc(hidden)]
    #[inline(always)]
    fn surely_finite(&self) -> bool {
        false
    }

    /// Additive identity.
    fn zero() -> Self {
        Self::from_prim(Self::Prim::ZERO)
    }
    /// Multiplicative identity.
    fn one() -> Self {
        Self::from_prim(Self::Prim::ONE)
    }

    // The elementary functions the derivative rules are written in. For the
    // machine floats they are the inherent `std` methods; for dual values they
    // record their own derivatives.
    /// As `f64::sin`.
    fn sin(self) -> Self;
    /// As `f64::cos`.
    fn cos(self) -> Self;
    /// As `f64::tan`.
    fn tan(self) -> Self;
    /// As `f64::asin`.
    fn asin(self) -> Self;
    /// As `f64::acos`.
    fn acos(self) -> Self;
    /// As `f64::atan`.
    fn atan(self) -> Self;
    /// As `f64::atan2`.
    fn atan2(self, other: Self) -> Self;
    /// As `f64::sinh`.
    fn sinh(self) -> Self;
    /// As `f64::cosh`.
    fn cosh(self) -> Self;
    /// As `f64::tanh`.
    fn tanh(self) -> Self;
    /// As `f64::asinh`.
    fn asinh(self) -> Self;
    /// As `f64::acosh`.
    fn acosh(self) -> Self;
    /// As `f64::atanh`.
    fn atanh(self) -> Self;
    /// As `f64::exp`.
    fn exp(self) -> Self;
    /// As `f64::exp2`.
    fn exp2(self) -> Self;
    /// As `f64::exp_m1`.
    fn exp_m1(self) -> Self;
    /// As `f64::ln`.
    fn ln(self) -> Self;
    /// As `f64::log2`.
    fn log2(self) -> Self;
    /// As `f64::log10`.
    fn log10(self) -> Self;
    /// As `f64::ln_1p`.
    fn ln_1p(self) -> Self;
    /// As `f64::sqrt`.
    fn sqrt(self) -> Self;
    /// As `f64::cbrt`.
    fn cbrt(self) -> Self;
    /// As `f64::powi`.
    fn powi(self, n: i32) -> Self;
    /// As `f64::powf`.
    fn powf(self, exponent: Self) -> Self;
    /// As `f64::recip`.
    fn recip(self) -> Self;
    /// As `f64::abs`.
    fn abs(self) -> Self;
    /// As `f64::signum`.
    fn signum(self) -> Self;
    /// As `f64::floor`.
    fn floor(self) -> Self;
    /// As `f64::ceil`.
    fn ceil(self) -> Self;
    /// As `f64::round`.
    fn round(self) -> Self;
    /// As `f64::round_ties_even`.
    fn round_ties_even(self) -> Self;
    /// As `f64::trunc`.
    fn trunc(self) -> Self;
    /// As `f64::fract`.
    fn fract(self) -> Self;
    /// As `f64::mul_add`.
    fn mul_add(self, a: Self, b: Self) -> Self;
    /// As `f64::hypot`.
    fn hypot(self, other: Self) -> Self;
    /// As `f64::copysign`.
    fn copysign(self, sign: Self) -> Self;
    /// As `f64::rem_euclid`.
    fn rem_euclid(self, rhs: Self) -> Self;
    /// As `f64::div_euclid`.
    fn div_euclid(self, rhs: Self) -> Self;
    /// As `f64::max`.
    fn max(self, other: Self) -> Self;
    /// As `f64::min`.
    fn min(self, other: Self) -> Self;

    /// Runs `f` with an empty tape of this scalar type and an adjoint buffer.
    /// Machine floats and their dual numbers reuse per-thread buffers; other
    /// scalars allocate.
    #[doc(hidden)]
    fn with_tape<R>(f: impl FnOnce(&Tape<Self>, &mut Vec<Self>) -> R) -> R {
        let tape = Tape::new();
        let mut adjoints = Vec::new();
        f(&tape, &mut adjoints)
    }

    /// `with_tape` for the dual numbers over this scalar.
    #[doc(hidden)]
    fn with_dual_tape<R>(f: impl FnOnce(&Tape<Dual<Self>>, &mut Vec<Dual<Self>>) -> R) -> R {
        let tape = Tape::new();
        let mut adjoints = Vec::new();
        f(&tape, &mut adjoints)
    }

    /// Runs `f` with an empty stack for compiled adjoints. Machine floats
    /// and their dual numbers reuse per-thread stacks; other scalars
    /// allocate.
    #[doc(hidden)]
    fn with_stack<R>(f: impl FnOnce(&mut Stack<Self>) -> R) -> R {
        f(&mut Stack::new())
    }

    /// `with_stack` for the dual numbers over this scalar.
    #[doc(hidden)]
    fn with_dual_stack<R>(f: impl FnOnce(&mut Stack<Dual<Self>>) -> R) -> R {
        f(&mut Stack::new())
    }

    /// Constants of the machine float as scalars of this type (borrowed when
    /// this type is the machine float itself).
    #[doc(hidden)]
    fn lift_slice(values: &[Self::Prim]) -> std::borrow::Cow<'_, [Self]> {
        std::borrow::Cow::Owned(values.iter().map(|&value| Self::from_prim(value)).collect())
    }
}

/// The machine floats at the bottom of every scalar: `f64` and `f32`.
///
/// A function is differentiated in the precision it is written in:
///
/// ```
/// #[deltad::differentiate]
/// fn cube(x: f32) -> f32 {
///     x * x * x
/// }
///
/// let g: f32 = cube::grad(2.0).x;
/// assert_eq!(g, 12.0);
/// ```
pub trait Primitive: Scalar<Prim = Self> + Default + Send + Sync + 'static {
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// ln 2.
    const LN_2: Self;
    /// ln 10.
    const LN_10: Self;
    /// 180 / π.
    const DEGREES_PER_RADIAN: Self;
    /// π / 180.
    const RADIANS_PER_DEGREE: Self;
    /// The name of the type, for messages.
    const NAME: &'static str;
    /// The machine epsilon.
    const EPSILON: Self;
    /// The largest finite value.
    const MAX: Self;
    /// The lowest finite value.
    const MIN: Self;

    /// Rounds an `f64` to this type (used for constants in derivative rules).
    fn from_f64(value: f64) -> Self;
    /// Widens or keeps this value as an `f64`.
    fn to_f64(self) -> f64;
    /// True if the value is NaN.
    fn is_nan(self) -> bool;
    /// True if the value is neither infinite nor NaN.
    fn is_finite(self) -> bool;
    /// True if the value is infinite.
    fn is_infinite(self) -> bool;
    /// True if the value is neither zero, infinite, subnormal nor NaN.
    fn is_normal(self) -> bool;
    /// True if the value is subnormal.
    fn is_subnormal(self) -> bool;
    /// True if the sign bit is set (also for `-0.0` and NaNs with the bit).
    fn is_sign_negative(self) -> bool;
    /// IEEE 754 total order.
    fn total_cmp(&self, other: &Self) -> core::cmp::Ordering;
    /// The bits of the value, widened: floats of one sign that are next to
    /// each other have bits next to each other (for comparisons in units in
    /// the last place).
    fn bits(self) -> u64;
}

macro_rules! machine_float {
    ($t:ident, $pool:ident, $dual_pool:ident, $stacks:ident, $dual_stacks:ident) => {
        impl sealed::Sealed for $t {}

        impl Scalar for $t {
            type Prim = $t;
            type Detached = $t;

            #[inline(always)]
            fn detach(self) -> $t {
                self
            }
            #[inline(always)]
            fn attach(value: $t) -> $t {
                value
            }

            #[inline(always)]
            fn from_prim(value: $t) -> $t {
                value
            }
            #[inline(always)]
            fn to_prim(self) -> $t {
                self
            }
            #[inline(always)]
            fn is_zero(&self) -> bool {
                *self == 0.0
            }
            #[inline(always)]
            fn surely_finite(&self) -> bool {
                self.is_finite()
            }
            fn first_order(self) -> Option<($t, $t)> {
                Some((self, 0.0))
            }
            #[inline(always)]
            fn zero() -> $t {
                0.0
            }
            #[inline(always)]
            fn one() -> $t {
                1.0
            }

            machine_float!(@forward $t: sin cos tan asin acos atan sinh cosh tanh asinh acosh
                atanh exp exp2 exp_m1 ln log2 log10 ln_1p sqrt cbrt recip abs signum floor ceil
                round round_ties_even trunc fract);
            machine_float!(@forward2 $t: atan2 powf hypot copysign rem_euclid div_euclid max min);

            #[inline(always)]
            fn powi(self, n: i32) -> $t {
                <$t>::powi(self, n)
            }
            #[inline(always)]
            fn mul_add(self, a: $t, b: $t) -> $t {
                <$t>::mul_add(self, a, b)
            }

            fn with_tape<R>(f: impl FnOnce(&Tape<$t>, &mut Vec<$t>) -> R) -> R {
                crate::pool::with_pooled_tape(&crate::pool::$pool, f)
            }

            fn with_dual_tape<R>(f: impl FnOnce(&Tape<Dual<$t>>, &mut Vec<Dual<$t>>) -> R) -> R {
                crate::pool::with_pooled_tape(&crate::pool::$dual_pool, f)
            }

            #[inline]
            fn with_stack<R>(f: impl FnOnce(&mut Stack<$t>) -> R) -> R {
                crate::compiled::with_pooled_stack(&crate::compiled::$stacks, f)
            }

            #[inline]
            fn with_dual_stack<R>(f: impl FnOnce(&mut Stack<Dual<$t>>) -> R) -> R {
                crate::compiled::with_pooled_stack(&crate::compiled::$dual_stacks, f)
            }

            #[inline(always)]
            fn lift_slice(values: &[$t]) -> std::borrow::Cow<'_, [$t]> {
                std::borrow::Cow::Borrowed(values)
            }
        }

        impl Primitive for $t {
            const ZERO: $t = 0.0;
            const ONE: $t = 1.0;
            const LN_2: $t = core::$t::consts::LN_2;
            const LN_10: $t = core::$t::consts::LN_10;
            const DEGREES_PER_RADIAN: $t = 180.0 / core::$t::consts::PI;
            const RADIANS_PER_DEGREE: $t = core::$t::consts::PI / 180.0;
            const NAME: &'static str = stringify!($t);
            const EPSILON: $t = <$t>::EPSILON;
            const MAX: $t = <$t>::MAX;
            const MIN: $t = <$t>::MIN;

            #[inline(always)]
            fn from_f64(value: f64) -> $t {
                value as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
            #[inline(always)]
            fn is_infinite(self) -> bool {
                <$t>::is_infinite(self)
            }
            #[inline(always)]
            fn is_normal(self) -> bool {
                <$t>::is_normal(self)
            }
            #[inline(always)]
            fn is_subnormal(self) -> bool {
                <$t>::is_subnormal(self)
            }
            #[inline(always)]
            fn is_sign_negative(self) -> bool {
                <$t>::is_sign_negative(self)
            }
            #[inline(always)]
            fn total_cmp(&self, other: &$t) -> core::cmp::Ordering {
                <$t>::total_cmp(self, other)
            }
            #[inline(always)]
            fn bits(self) -> u64 {
                u64::from(<$t>::to_bits(self))
            }
        }
    };
    (@forward $t:ident: $($name:ident)*) => {
        $(
            #[inline(always)]
            fn $name(self) -> $t {
                <$t>::$name(self)
            }
        )*
    };
    (@forward2 $t:ident: $($name:ident)*) => {
        $(
            #[inline(always)]
            fn $name(self, other: $t) -> $t {
                <$t>::$name(self, other)
            }
        )*
    };
}

machine_float!(f64, F64_TAPES, DUAL_F64_TAPES, F64_STACKS, DUAL_F64_STACKS);
machine_float!(f32, F32_TAPES, DUAL_F32_TAPES, F32_STACKS, DUAL_F32_STACKS);
