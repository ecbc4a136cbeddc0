//! Forward mode: dual numbers `value + tangent·ε` (ε² = 0).
//!
//! [`Dual`] is a [`Scalar`], so the recording pass runs on it unchanged:
//!
//! * with *constant* inputs whose values are dual numbers, nothing is
//!   recorded and every value carries its directional derivative: forward
//!   mode (`jvp`), in constant memory;
//! * with *active* inputs whose values are dual numbers, the reverse sweep
//!   runs on dual adjoints: forward-over-reverse, whose tangents are
//!   Hessian-vector products (`hvp`).
//!
//! Derivative rules are those of `math.rs`. A zero tangent stays exactly
//! zero, even through a rule whose derivative is infinite there (`sqrt` at
//! 0), as reverse mode skips zero adjoints.

use core::fmt;
use core::ops::{Add, Div, Mul, Neg, Rem, Sub};

use crate::math::{constant_rules, multi_rules, unary_rules};
use crate::scalar::Scalar;

/// A dual number: a value and its tangent (the derivative along one
/// direction). Nesting (`Dual<Dual<f64>>`, `Dual<Real<..>>`) gives higher
/// derivatives; each level is its own type, so tangents of different levels
/// cannot be confused.
#[derive(Clone, Copy, Default)]
pub struct Dual<S> {
    /// The value.
    pub value: S,
    /// The derivative of the value along the direction being pushed forward.
    pub tangent: S,
}

impl<S: Scalar> Dual<S> {
    /// `value + tangent·ε`.
    #[inline(always)]
    pub fn new(value: S, tangent: S) -> Self {
        Dual { value, tangent }
    }

    /// A constant: tangent zero.
    #[inline(always)]
    pub fn constant(value: S) -> Self {
        Dual {
            value,
            tangent: S::zero(),
        }
    }

    /// Applies a rule `x ↦ (f(x), f'(x))` (derivative computed only for a
    /// nonzero tangent).
    #[inline(always)]
    fn chain(self, rule: impl FnOnce(S) -> (S, S)) -> Self {
        let (value, derivative) = rule(self.value);
        let tangent = if self.tangent.is_zero() {
            S::zero()
        } else {
            derivative * self.tangent
        };
        Dual { value, tangent }
    }

    /// Applies a two-operand rule `(f, ∂f/∂self, ∂f/∂other)`.
    #[inline(always)]
    fn chain2(self, other: Self, rule: impl FnOnce(S, S) -> (S, S, S)) -> Self {
        let (value, d_self, d_other) = rule(self.value, other.value);
        Dual::new(
            value,
            combine([(d_self, self.tangent), (d_other, other.tangent)]),
        )
    }
}

/// Σ partial · tangent over the operands with a nonzero tangent (an
/// operand whose tangent is zero contributes 0 even where its partial is
/// infinite). The product is computed for every operand and dropped by a
/// select, not a branch: the optimiser keeps the loop straight.
#[inline(always)]
fn combine<S: Scalar, const N: usize>(terms: [(S, S); N]) -> S {
    let term = |(partial, operand_tangent): (S, S)| {
        let term = partial * operand_tangent;
        // (A finite partial times a zero tangent is zero already.)
        if operand_tangent.is_zero() && !partial.surely_finite() {
            S::zero()
        } else {
            term
        }
    };
    // The first term starts the sum (not a zero added to it: the sum of
    // one term is then that term, with no addition on the loop's chain).
    let mut terms = terms.into_iter();
    let Some(first) = terms.next() else {
        return S::zero();
    };
    let mut tangent = term(first);
    for next in terms {
        tangent += term(next);
    }
    tangent
}

impl<S: Scalar> Add for Dual<S> {
    type Output = Self;
    #[inline(always)]
    fn add(self, rhs: Self) -> Self {
        Dual::new(self.value + rhs.value, self.tangent + rhs.tangent)
    }
}

impl<S: Scalar> Sub for Dual<S> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, rhs: Self) -> Self {
        Dual::new(self.value - rhs.value, self.tangent - rhs.tangent)
    }
}

impl<S: Scalar> Mul for Dual<S> {
    type Output = Self;
    #[inline(always)]
    fn mul(self, rhs: Self) -> Self {
        let tangent = combine([(rhs.value, self.tangent), (self.value, rhs.tangent)]);
        Dual::new(self.value * rhs.value, tangent)
    }
}

impl<S: Scalar> Div for Dual<S> {
    type Output = Self;
    #[inline(always)]
    fn div(self, rhs: Self) -> Self {
        let value = self.value / rhs.value;
        let tangent = combine([
            (rhs.value.recip(), self.tangent),
            (-value / rhs.value, rhs.tangent),
        ]);
        Dual::new(value, tangent)
    }
}

impl<S: Scalar> Rem for Dual<S> {
    type Output = Self;
    #[inline(always)]
    fn rem(self, rhs: Self) -> Self {
        let (value, d_x, d_y) = multi_rules::rem(self.value, rhs.value);
        Dual::new(value, combine([(d_x, self.tangent), (d_y, rhs.tangent)]))
    }
}

impl<S: Scalar> Neg for Dual<S> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        Dual::new(-self.value, -self.tangent)
    }
}

/// What every forward-mode dual type shares, given its generics, its type,
/// its constant constructor, and `chain` (a unary rule) and `chain2` (a
/// binary rule) methods: compound assignment, comparisons and printing by
/// value, `Sum` and `Product`, the sealed marker; and (`@elementary`, inside
/// its `Scalar` impl) the elementary functions through `chain`/`chain2`.
macro_rules! forward_dual {
    ([$($generics:tt)*] $ty:ty, $constant:path) => {
        forward_dual!(@assign [$($generics)*] $ty, AddAssign add_assign +);
        forward_dual!(@assign [$($generics)*] $ty, SubAssign sub_assign -);
        forward_dual!(@assign [$($generics)*] $ty, MulAssign mul_assign *);
        forward_dual!(@assign [$($generics)*] $ty, DivAssign div_assign /);
        forward_dual!(@assign [$($generics)*] $ty, RemAssign rem_assign %);

        /// Comparisons look at values only.
        impl<$($generics)*> PartialEq for $ty {
            fn eq(&self, other: &Self) -> bool {
                self.value == other.value
            }
        }

        impl<$($generics)*> PartialOrd for $ty {
            fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
                self.value.partial_cmp(&other.value)
            }
        }

        impl<$($generics)*> core::fmt::Display for $ty {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                core::fmt::Display::fmt(&self.value, f)
            }
        }

        impl<$($generics)*> crate::scalar::sealed::Sealed for $ty {}

        /// From -0.0, as the standard library's float `Sum` (and `Real`'s).
        impl<$($generics)*> core::iter::Sum for $ty {
            fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
                iter.fold(-$constant(S::zero()), |total, x| total + x)
            }
        }

        impl<'a, $($generics)*> core::iter::Sum<&'a $ty> for $ty {
            fn sum<I: Iterator<Item = &'a Self>>(iter: I) -> Self {
                iter.copied().sum()
            }
        }

        impl<$($generics)*> core::iter::Product for $ty {
            fn product<I: Iterator<Item = Self>>(iter: I) -> Self {
                iter.fold($constant(S::one()), |total, x| total * x)
            }
        }

        impl<'a, $($generics)*> core::iter::Product<&'a $ty> for $ty {
            fn product<I: Iterator<Item = &'a Self>>(iter: I) -> Self {
                iter.copied().product()
            }
        }
    };
    (@assign [$($generics:tt)*] $ty:ty, $trait:ident $method:ident $op:tt) => {
        impl<$($generics)*> core::ops::$trait for $ty {
            #[inline(always)]
            fn $method(&mut self, rhs: Self) {
                *self = *self $op rhs;
            }
        }
    };
    (@elementary) => {
        forward_dual!(@unary unary_rules: sin cos tan asin acos atan sinh cosh tanh asinh acosh
            atanh exp exp2 exp_m1 ln log2 log10 ln_1p sqrt cbrt recip abs fract);
        forward_dual!(@unary constant_rules: floor ceil round round_ties_even trunc signum);
        forward_dual!(@binary atan2 powf hypot copysign rem_euclid div_euclid max min);

        #[inline(always)]
        fn powi(self, n: i32) -> Self {
            self.chain(|x| multi_rules::powi(x, n))
        }
    };
    (@unary $rules:ident: $($name:ident)*) => {$(
        #[inline(always)]
        fn $name(self) -> Self {
            self.chain($rules::$name)
        }
    )*};
    (@binary $($name:ident)*) => {$(
        #[inline(always)]
        fn $name(self, other: Self) -> Self {
            self.chain2(other, multi_rules::$name)
        }
    )*};
}
pub(crate) use forward_dual;

forward_dual!([S: Scalar] Dual<S>, Dual::constant);

impl<S: Scalar> fmt::Debug for Dual<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} + {:?}ε", self.value, self.tangent)
    }
}

impl<S: Scalar> Scalar for Dual<S> {
    type Detached = Dual<S::Detached>;

    #[inline(always)]
    fn detach(self) -> Self::Detached {
        Dual::new(self.value.detach(), self.tangent.detach())
    }
    #[inline(always)]
    fn attach(value: Self::Detached) -> Self {
        Dual::new(S::attach(value.value), S::attach(value.tangent))
    }
    type Prim = S::Prim;
    const NESTED: bool = true;

    #[inline(always)]
    fn from_prim(value: S::Prim) -> Self {
        Dual::constant(S::from_prim(value))
    }
    #[inline(always)]
    fn to_prim(self) -> S::Prim {
        self.value.to_prim()
    }
    fn with_tape<R>(f: impl FnOnce(&crate::tape::Tape<Self>, &mut Vec<Self>) -> R) -> R {
        S::with_dual_tape(f)
    }
    fn with_stack<R>(f: impl FnOnce(&mut crate::compiled::Stack<Self>) -> R) -> R {
        S::with_dual_stack(f)
    }

    fn first_order(self) -> Option<(S::Prim, S::Prim)> {
        if S::NESTED {
            return None;
        }
        Some((self.value.to_prim(), self.tangent.to_prim()))
    }
    fn from_first_order(value: S::Prim, tangent: S::Prim) -> Option<Self> {
        if S::NESTED {
            return None;
        }
        Some(Dual::new(S::from_prim(value), S::from_prim(tangent)))
    }
    /// Zero only with a zero tangent: an adjoint `0 + tε` still carries a
    /// second-order contribution.
    #[inline(always)]
    fn is_zero(&self) -> bool {
        self.value.is_zero() && self.tangent.is_zero()
    }

    forward_dual!(@elementary);
    #[inline(always)]
    fn mul_add(self, a: Self, b: Self) -> Self {
        let (value, d_x, d_a, d_b) = multi_rules::mul_add(self.value, a.value, b.value);
        Dual::new(
            value,
            combine([(d_x, self.tangent), (d_a, a.tangent), (d_b, b.tangent)]),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tangents_follow_the_chain_rule() {
        let x = Dual::new(0.5f64, 1.0);
        let y = (x * x).sin() / x;
        let expected = (2.0 * 0.5 * (0.25f64).cos() * 0.5 - (0.25f64).sin()) / 0.25;
        // The chain rule reproduces the same libm calls, so natively the
        // tangent is within a rounding or two of `expected`; libm's sin/cos
        // are not correctly rounded, though, and differ by a few ulps across
        // platforms (Miri models that by perturbing each call), so allow
        // 16 ulps of the result.
        assert!((y.tangent - expected).abs() <= 16.0 * f64::EPSILON * expected.abs());
        let z = Dual::new(0.0f64, 0.0).sqrt();
        assert_eq!(
            z.tangent, 0.0,
            "a zero tangent stays zero through an infinite derivative"
        );
        let nested = Dual::new(Dual::new(2.0f64, 1.0), Dual::new(1.0, 0.0));
        let cube = nested * nested * nested;
        // d²/dx² x³ = 6x at 2.
        assert_eq!(cube.tangent.tangent, 12.0);
    }
}
