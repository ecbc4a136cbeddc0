//! The derivative rules of the `f64`/`f32` methods, as methods of [`Real`].
//!
//! Each rule gives the value and the local partial derivatives in terms of the
//! operand `x` and the result `y`; the derivative is only computed when an
//! operand is active. Conventions at points where a function is not
//! differentiable (documented in the crate docs and tested):
//!
//! * `abs` has derivative 0 at 0 (the minimal-norm subgradient).
//! * `max`/`min` pass the derivative of the operand they return; on a tie
//!   that is the receiver (`x.max(y)` with `x == y` is `x`); a NaN operand is
//!   ignored, as the value ignores it.
//! * `clamp` passes the derivative of `x` when `min <= x <= max`, else of the
//!   bound it returns.
//! * `floor`, `ceil`, `round`, `round_ties_even`, `trunc`, `signum` and
//!   `div_euclid` are piecewise constant: derivative 0 everywhere.
//! * `sqrt` and `cbrt` at 0 and `powf` with base 0 have infinite derivatives,
//!   as in the limit; `powf`'s derivative in the exponent is 0 where the value
//!   is 0; `hypot` at (0, 0) has derivative 0.

use crate::real::Real;
use crate::scalar::{Primitive, Scalar};

/// Something usable as a real operand of a method on [`Real`]: another dual
/// value or a machine float (a constant).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a real number of this function's precision",
    label = "expected a real value (the function's `f64` or `f32`)"
)]
pub trait IntoReal<'t, S> {
    /// Converts to a dual value; machine floats become constants.
    fn into_real(self) -> Real<'t, S>;
}

impl<'t, S: Scalar> IntoReal<'t, S> for Real<'t, S> {
    #[inline(always)]
    fn into_real(self) -> Real<'t, S> {
        self
    }
}

impl<'t, S: Scalar> IntoReal<'t, S> for &Real<'t, S> {
    #[inline(always)]
    fn into_real(self) -> Real<'t, S> {
        *self
    }
}

impl<'t, S: Scalar> IntoReal<'t, S> for &mut Real<'t, S> {
    #[inline(always)]
    fn into_real(self) -> Real<'t, S> {
        *self
    }
}

macro_rules! machine_float_operand {
    ($($p:ident)*) => {$(
        impl<'t, S: Scalar<Prim = $p>> IntoReal<'t, S> for $p {
            #[inline(always)]
            fn into_real(self) -> Real<'t, S> {
                Real::from_prim(self)
            }
        }
        impl<'t, S: Scalar<Prim = $p>> IntoReal<'t, S> for &$p {
            #[inline(always)]
            fn into_real(self) -> Real<'t, S> {
                Real::from_prim(*self)
            }
        }
    )*};
}
machine_float_operand!(f64 f32);

/// `S` constant from a primitive constant.
#[inline(always)]
pub(crate) fn k<S: Scalar>(value: S::Prim) -> S {
    S::from_prim(value)
}

/// `S` constant from an `f64` literal.
#[inline(always)]
pub(crate) fn lit<S: Scalar>(value: f64) -> S {
    S::from_prim(<S::Prim as Primitive>::from_f64(value))
}

macro_rules! unary_rules {
    ($(
        $(#[$doc:meta])*
        $name:ident: |$x:ident, $y:ident| $derivative:expr;
    )*) => {
        impl<'t, S: Scalar> Real<'t, S> {
            $(
                $(#[$doc])*
                #[inline]
                pub fn $name(self) -> Self {
                    let $x = self.value;
                    let $y = Scalar::$name($x);
                    self.unary($y, || $derivative)
                }
            )*
        }

        /// The same rules on plain scalars: `(value, derivative)`, used by
        /// the code `#[differentiate]` fuses at compile time.
        pub mod unary_rules {
            #[allow(unused_imports)]
            use super::{k, lit};
            use crate::scalar::{Primitive, Scalar};
            $(
                $(#[$doc])*
                #[inline(always)]
                #[allow(unused_variables)]
                pub fn $name<S: Scalar>($x: S) -> (S, S) {
                    let $y = Scalar::$name($x);
                    ($y, $derivative)
                }
            )*
        }
    };
}

unary_rules! {
    /// Sine; derivative `cos x`.
    sin: |x, _y| x.cos();
    /// Cosine; derivative `-sin x`.
    cos: |x, _y| -x.sin();
    /// Tangent; derivative `1 + tan² x`.
    tan: |_x, y| S::one() + y * y;
    /// Arcsine; derivative `1 / sqrt(1 - x²)`.
    asin: |x, _y| (S::one() - x * x).sqrt().recip();
    /// Arccosine; derivative `-1 / sqrt(1 - x²)`.
    acos: |x, _y| -(S::one() - x * x).sqrt().recip();
    /// Arctangent; derivative `1 / (1 + x²)`.
    atan: |x, _y| (S::one() + x * x).recip();
    /// Hyperbolic sine; derivative `cosh x`.
    sinh: |x, _y| x.cosh();
    /// Hyperbolic cosine; derivative `sinh x`.
    cosh: |x, _y| x.sinh();
    /// Hyperbolic tangent; derivative `1 - tanh² x`.
    tanh: |_x, y| S::one() - y * y;
    /// Inverse hyperbolic sine; derivative `1 / sqrt(x² + 1)`.
    asinh: |x, _y| (x * x + S::one()).sqrt().recip();
    /// Inverse hyperbolic cosine; derivative `1 / sqrt((x - 1)(x + 1))`.
    acosh: |x, _y| ((x - S::one()) * (x + S::one())).sqrt().recip();
    /// Inverse hyperbolic tangent; derivative `1 / (1 - x²)`.
    atanh: |x, _y| (S::one() - x * x).recip();
    /// `e^x`; derivative `e^x`.
    exp: |_x, y| y;
    /// `2^x`; derivative `ln 2 · 2^x`.
    exp2: |_x, y| y * k::<S>(<S::Prim as Primitive>::LN_2);
    /// `e^x - 1`; derivative `e^x`.
    exp_m1: |_x, y| y + S::one();
    /// Natural logarithm; derivative `1 / x`.
    ln: |x, _y| x.recip();
    /// Base-2 logarithm; derivative `1 / (x ln 2)`.
    log2: |x, _y| (x * k::<S>(<S::Prim as Primitive>::LN_2)).recip();
    /// Base-10 logarithm; derivative `1 / (x ln 10)`.
    log10: |x, _y| (x * k::<S>(<S::Prim as Primitive>::LN_10)).recip();
    /// `ln(1 + x)`; derivative `1 / (1 + x)`.
    ln_1p: |x, _y| (S::one() + x).recip();
    /// Square root; derivative `1 / (2 sqrt x)` (infinite at 0).
    sqrt: |_x, y| (y + y).recip();
    /// Cube root; derivative `1 / (3 cbrt² x)` (infinite at 0).
    cbrt: |_x, y| (lit::<S>(3.0) * y * y).recip();
    /// `1 / x`; derivative `-1 / x²`.
    recip: |_x, y| -(y * y);
    /// Absolute value; derivative `signum x`, 0 at 0, NaN at NaN.
    abs: |x, _y| if x > S::zero() {
        S::one()
    } else if x < S::zero() {
        -S::one()
    } else {
        // 0 for ±0, NaN for NaN.
        x * S::zero()
    };
    /// Fractional part; derivative 1.
    fract: |_x, _y| S::one();
}

macro_rules! piecewise_constant {
    ($($(#[$doc:meta])* $name:ident)*) => {
        impl<'t, S: Scalar> Real<'t, S> {
            $(
                $(#[$doc])*
                #[inline]
                pub fn $name(self) -> Self {
                    Real::constant(Scalar::$name(self.value))
                }
            )*
        }
    };
}

piecewise_constant! {
    /// Largest integer not above `x`; derivative 0.
    floor
    /// Smallest integer not below `x`; derivative 0.
    ceil
    /// Nearest integer, ties away from zero; derivative 0.
    round
    /// Nearest integer, ties to even; derivative 0.
    round_ties_even
    /// Integer part; derivative 0.
    trunc
    /// Sign as ±1 (NaN for NaN); derivative 0.
    signum
}

/// The rules with more than one operand (or a parameter), on plain scalars:
/// `(value, partial derivative per operand)`. The methods of [`Real`] and the
/// code `#[differentiate]` fuses at compile time both use these, so every
/// derivative formula is written once.
pub mod multi_rules {
    use super::{k, lit};
    use crate::scalar::{Primitive, Scalar};

    /// `x^n`; derivative `n x^(n-1)` (0 for `n == 0`, also at `x = 0`
    /// where `0 · 0^-1` would be NaN: `x^0` is the constant 1).
    #[inline(always)]
    pub fn powi<S: Scalar>(x: S, n: i32) -> (S, S) {
        let derivative = if n == 0 {
            S::zero()
        } else {
            lit::<S>(f64::from(n)) * x.powi(n.wrapping_sub(1))
        };
        (x.powi(n), derivative)
    }

    /// Degrees from radians.
    #[inline(always)]
    pub fn to_degrees<S: Scalar>(x: S) -> (S, S) {
        let factor = k::<S>(<S::Prim as Primitive>::DEGREES_PER_RADIAN);
        (x * factor, factor)
    }

    /// Radians from degrees.
    #[inline(always)]
    pub fn to_radians<S: Scalar>(x: S) -> (S, S) {
        let factor = k::<S>(<S::Prim as Primitive>::RADIANS_PER_DEGREE);
        (x * factor, factor)
    }

    /// `x^e`; partials `e x^(e-1)` and `x^e ln x` (0 where `x^e` is 0).
    #[inline(always)]
    pub fn powf<S: Scalar>(x: S, e: S) -> (S, S, S) {
        let y = x.powf(e);
        let d_e = if y.is_zero() { S::zero() } else { y * x.ln() };
        (y, e * x.powf(e - S::one()), d_e)
    }

    /// `atan2(y, x)`; partials `x / (x² + y²)` and `-y / (x² + y²)`, 0 at
    /// the origin (like `hypot`; 0/0 there would turn the whole gradient
    /// into NaN even where the angle's inputs have zero derivative).
    #[inline(always)]
    pub fn atan2<S: Scalar>(y: S, x: S) -> (S, S, S) {
        let squared_norm = x * x + y * y;
        if squared_norm.is_zero() {
            return (y.atan2(x), S::zero(), S::zero());
        }
        (y.atan2(x), x / squared_norm, -y / squared_norm)
    }

    /// `sqrt(x² + y²)`; partials `x / h` and `y / h`, 0 at the origin.
    #[inline(always)]
    pub fn hypot<S: Scalar>(x: S, y: S) -> (S, S, S) {
        let h = x.hypot(y);
        if h.is_zero() {
            (h, S::zero(), S::zero())
        } else {
            (h, x / h, y / h)
        }
    }

    /// `log_b x`; partials `1 / (x ln b)` and `-log_b x / (b ln b)`.
    #[inline(always)]
    pub fn log<S: Scalar>(x: S, b: S) -> (S, S, S) {
        let ln_b = b.ln();
        let y = x.ln() / ln_b;
        (y, (x * ln_b).recip(), -y / (b * ln_b))
    }

    /// `|x|` with the sign of `sign`; partials ±1 and 0.
    #[inline(always)]
    pub fn copysign<S: Scalar>(x: S, sign: S) -> (S, S, S) {
        let flips = x.to_prim().is_sign_negative() != sign.to_prim().is_sign_negative();
        let d_x = if flips { -S::one() } else { S::one() };
        (x.copysign(sign), d_x, S::zero())
    }

    /// Euclidean remainder; partials 1 and `-div_euclid(x, y)`.
    #[inline(always)]
    pub fn rem_euclid<S: Scalar>(x: S, y: S) -> (S, S, S) {
        (x.rem_euclid(y), S::one(), -x.div_euclid(y))
    }

    /// Euclidean division: piecewise constant.
    #[inline(always)]
    pub fn div_euclid<S: Scalar>(x: S, y: S) -> (S, S, S) {
        (x.div_euclid(y), S::zero(), S::zero())
    }

    /// `x % y`; partials 1 and `-trunc(x / y)`.
    #[inline(always)]
    pub fn rem<S: Scalar>(x: S, y: S) -> (S, S, S) {
        (x % y, S::one(), -(x / y).trunc())
    }

    /// True if `a.max(b)` returns `a` (ties and a NaN `b` pick `a`).
    #[inline(always)]
    pub fn max_picks_first<S: Scalar>(a: S, b: S) -> bool {
        b.to_prim().is_nan() || (!a.to_prim().is_nan() && a >= b)
    }

    /// True if `a.min(b)` returns `a` (ties and a NaN `b` pick `a`).
    #[inline(always)]
    pub fn min_picks_first<S: Scalar>(a: S, b: S) -> bool {
        b.to_prim().is_nan() || (!a.to_prim().is_nan() && a <= b)
    }

    /// The larger operand; partials select it.
    #[inline(always)]
    pub fn max<S: Scalar>(a: S, b: S) -> (S, S, S) {
        select2(max_picks_first(a, b), a, b)
    }

    /// The smaller operand; partials select it.
    #[inline(always)]
    pub fn min<S: Scalar>(a: S, b: S) -> (S, S, S) {
        select2(min_picks_first(a, b), a, b)
    }

    #[inline(always)]
    fn select2<S: Scalar>(first: bool, a: S, b: S) -> (S, S, S) {
        if first {
            (a, S::one(), S::zero())
        } else {
            (b, S::zero(), S::one())
        }
    }

    /// Which of `x`, `min`, `max` `x.clamp(min, max)` returns (0, 1 or 2);
    /// panics unless `min <= max`, as `f64::clamp` does.
    #[inline(always)]
    pub fn clamp_pick<S: Scalar>(x: S, min: S, max: S) -> usize {
        assert!(
            min <= max,
            "min > max, or either was NaN. min = {min:?}, max = {max:?}"
        );
        if x < min {
            1
        } else if x > max {
            2
        } else {
            0
        }
    }

    /// `x` restricted to `[min, max]`; partials select the value returned.
    #[inline(always)]
    pub fn clamp<S: Scalar>(x: S, min: S, max: S) -> (S, S, S, S) {
        let (zero, one) = (S::zero(), S::one());
        match clamp_pick(x, min, max) {
            1 => (min, zero, one, zero),
            2 => (max, zero, zero, one),
            _ => (x, one, zero, zero),
        }
    }

    /// `x * a + b` with one rounding; partials `a`, `x` and 1.
    #[inline(always)]
    pub fn mul_add<S: Scalar>(x: S, a: S, b: S) -> (S, S, S, S) {
        (x.mul_add(a, b), a, x, S::one())
    }
}

/// The zero-derivative rules on plain scalars, for fused code.
pub mod constant_rules {
    use crate::scalar::Scalar;

    macro_rules! constant_rules {
        ($($name:ident)*) => {$(
            /// Piecewise constant: derivative 0.
            #[inline(always)]
            pub fn $name<S: Scalar>(x: S) -> (S, S) {
                (x.$name(), S::zero())
            }
        )*};
    }
    constant_rules!(floor ceil round round_ties_even trunc signum);
}

impl<'t, S: Scalar> Real<'t, S> {
    /// Applies a two-operand rule, computing the partials only when an
    /// operand is active.
    #[inline(always)]
    fn rule2(self, other: Self, rule: impl FnOnce(S, S) -> (S, S, S)) -> Self {
        let (value, d_self, d_other) = rule(self.value, other.value);
        self.binary(other, value, || d_self, || d_other)
    }

    /// Degrees from radians; derivative `180 / π`.
    #[inline]
    pub fn to_degrees(self) -> Self {
        let (value, derivative) = multi_rules::to_degrees(self.value);
        self.unary(value, || derivative)
    }

    /// Radians from degrees; derivative `π / 180`.
    #[inline]
    pub fn to_radians(self) -> Self {
        let (value, derivative) = multi_rules::to_radians(self.value);
        self.unary(value, || derivative)
    }

    /// `x^n` for an integer `n`; derivative `n x^(n-1)`.
    #[inline]
    pub fn powi(self, n: i32) -> Self {
        if !self.is_active() {
            return Real::constant(self.value.powi(n));
        }
        let (value, derivative) = multi_rules::powi(self.value, n);
        self.unary(value, || derivative)
    }

    /// `(sin x, cos x)`.
    #[inline]
    pub fn sin_cos(self) -> (Self, Self) {
        (self.sin(), self.cos())
    }

    /// `x^e`; derivatives `e x^(e-1)` and `x^e ln x` (0 where `x^e` is 0).
    #[inline]
    pub fn powf(self, exponent: impl IntoReal<'t, S>) -> Self {
        let exponent = exponent.into_real();
        if !self.is_active() && !exponent.is_active() {
            return Real::constant(self.value.powf(exponent.value));
        }
        self.rule2(exponent, multi_rules::powf)
    }

    /// Four-quadrant arctangent of `self / other` (`self` is y);
    /// derivatives `x / (x² + y²)` and `-y / (x² + y²)`.
    #[inline]
    pub fn atan2(self, other: impl IntoReal<'t, S>) -> Self {
        self.rule2(other.into_real(), multi_rules::atan2)
    }

    /// `sqrt(x² + y²)`; derivatives `x / h` and `y / h`, 0 at the origin.
    #[inline]
    pub fn hypot(self, other: impl IntoReal<'t, S>) -> Self {
        self.rule2(other.into_real(), multi_rules::hypot)
    }

    /// Logarithm in base `base`; derivatives `1 / (x ln b)` and `-log_b x / (b ln b)`.
    #[inline]
    pub fn log(self, base: impl IntoReal<'t, S>) -> Self {
        self.rule2(base.into_real(), multi_rules::log)
    }

    /// `|x|` with the sign of `sign`; derivative ±1 in `x`, 0 in `sign`.
    #[inline]
    pub fn copysign(self, sign: impl IntoReal<'t, S>) -> Self {
        let (value, d_x, _) = multi_rules::copysign(self.value, sign.into_real().value);
        self.unary(value, || d_x)
    }

    /// Euclidean remainder; derivatives 1 and `-div_euclid(x, y)`.
    #[inline]
    pub fn rem_euclid(self, rhs: impl IntoReal<'t, S>) -> Self {
        self.rule2(rhs.into_real(), multi_rules::rem_euclid)
    }

    /// Euclidean division; piecewise constant, derivative 0.
    #[inline]
    pub fn div_euclid(self, rhs: impl IntoReal<'t, S>) -> Self {
        Real::constant(self.value.div_euclid(rhs.into_real().value))
    }

    /// The larger operand (ignoring NaN, as `f64::max`); the derivative is
    /// that of the operand returned, the receiver on a tie.
    #[inline]
    pub fn max(self, other: impl IntoReal<'t, S>) -> Self {
        let other = other.into_real();
        if multi_rules::max_picks_first(self.value, other.value) {
            self
        } else {
            other
        }
    }

    /// The smaller operand (ignoring NaN, as `f64::min`); the derivative is
    /// that of the operand returned, the receiver on a tie.
    #[inline]
    pub fn min(self, other: impl IntoReal<'t, S>) -> Self {
        let other = other.into_real();
        if multi_rules::min_picks_first(self.value, other.value) {
            self
        } else {
            other
        }
    }

    /// `x` restricted to `[min, max]`, as `f64::clamp` (which panics unless
    /// `min <= max`); the derivative is that of the value returned.
    #[inline]
    pub fn clamp(self, min: impl IntoReal<'t, S>, max: impl IntoReal<'t, S>) -> Self {
        let (min, max) = (min.into_real(), max.into_real());
        match multi_rules::clamp_pick(self.value, min.value, max.value) {
            1 => min,
            2 => max,
            _ => self,
        }
    }

    /// `x * a + b` with one rounding; derivatives `a`, `x` and 1.
    #[inline]
    pub fn mul_add(self, a: impl IntoReal<'t, S>, b: impl IntoReal<'t, S>) -> Self {
        let (a, b) = (a.into_real(), b.into_real());
        let (value, d_x, d_a, d_b) = multi_rules::mul_add(self.value, a.value, b.value);
        self.ternary(a, b, value, || (d_x, d_a, d_b))
    }
}

/// Nesting: a dual value is itself a scalar of an inner tape.
impl<S: Scalar> crate::scalar::sealed::Sealed for Real<'_, S> {}

macro_rules! delegate_to_inherent {
    (unary: $($name:ident)*; binary: $($name2:ident)*) => {
        $(
            #[inline(always)]
            fn $name(self) -> Self {
                Real::$name(self)
            }
        )*
        $(
            #[inline(always)]
            fn $name2(self, other: Self) -> Self {
                Real::$name2(self, other)
            }
        )*
    };
}

impl<S: Scalar> Scalar for Real<'_, S> {
    type Prim = S::Prim;
    const NESTED: bool = true;
    /// A tape's value cannot leave its tape: never called (`DETACHES`).
    type Detached = S::Detached;
    const DETACHES: bool = false;

    fn detach(self) -> Self::Detached {
        unreachable!("deltad: a tape's value has no detached form")
    }
    fn attach(_: Self::Detached) -> Self {
        unreachable!("deltad: a tape's value has no detached form")
    }

    #[inline(always)]
    fn from_prim(value: S::Prim) -> Self {
        Real::from_prim(value)
    }
    #[inline(always)]
    fn to_prim(self) -> S::Prim {
        self.value.to_prim()
    }
    /// Zero only if the value is zero *and* has no derivative: an adjoint of
    /// an inner tape with value 0 can still carry an outer derivative.
    #[inline(always)]
    fn is_zero(&self) -> bool {
        !self.is_active() && self.value.is_zero()
    }

    delegate_to_inherent!(
        unary: sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh exp exp2 exp_m1 ln
            log2 log10 ln_1p sqrt cbrt recip abs signum floor ceil round round_ties_even trunc
            fract;
        binary: atan2 powf hypot copysign rem_euclid div_euclid max min
    );

    #[inline(always)]
    fn powi(self, n: i32) -> Self {
        Real::powi(self, n)
    }
    #[inline(always)]
    fn mul_add(self, a: Self, b: Self) -> Self {
        Real::mul_add(self, a, b)
    }
}
