//! Arithmetic operators on [`Real`]: each records one binding with the
//! operation's local partial derivatives (or nothing, for constants and for
//! operations whose derivative is exactly 1 in their only active operand).
//!
//! Every combination the user's code can write is covered: dual op dual, dual
//! op machine float and machine float op dual, by value and by reference, and
//! the compound assignments. Integer arithmetic never reaches these impls, so
//! it stays plain integer arithmetic.

use core::iter::{Product, Sum};
use core::ops::{
    Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Rem, RemAssign, Sub, SubAssign,
};

use crate::real::Real;
use crate::scalar::Scalar;
use crate::tape::DeltaId;

/// The local derivatives of each operator, written once.
impl<'t, S: Scalar> Real<'t, S> {
    #[inline(always)]
    fn add_real(self, b: Self) -> Self {
        self.binary(b, self.value + b.value, S::one, S::one)
    }
    #[inline(always)]
    fn add_const(self, c: S) -> Self {
        self.same_delta(self.value + c)
    }
    #[inline(always)]
    fn const_add(c: S, b: Self) -> Self {
        b.same_delta(c + b.value)
    }

    #[inline(always)]
    fn sub_real(self, b: Self) -> Self {
        self.binary(b, self.value - b.value, S::one, || -S::one())
    }
    #[inline(always)]
    fn sub_const(self, c: S) -> Self {
        self.same_delta(self.value - c)
    }
    #[inline(always)]
    fn const_sub(c: S, b: Self) -> Self {
        b.unary(c - b.value, || -S::one())
    }

    #[inline(always)]
    fn mul_real(self, b: Self) -> Self {
        self.binary(b, self.value * b.value, || b.value, || self.value)
    }
    #[inline(always)]
    fn mul_const(self, c: S) -> Self {
        self.unary(self.value * c, || c)
    }
    #[inline(always)]
    fn const_mul(c: S, b: Self) -> Self {
        b.unary(c * b.value, || c)
    }

    #[inline(always)]
    fn div_real(self, b: Self) -> Self {
        let quotient = self.value / b.value;
        self.binary(b, quotient, || S::one() / b.value, || -quotient / b.value)
    }
    #[inline(always)]
    fn div_const(self, c: S) -> Self {
        self.unary(self.value / c, || S::one() / c)
    }
    #[inline(always)]
    fn const_div(c: S, b: Self) -> Self {
        let quotient = c / b.value;
        b.unary(quotient, || -quotient / b.value)
    }

    // x % y = x - trunc(x / y) * y: d/dx = 1, d/dy = -trunc(x / y).
    #[inline(always)]
    fn rem_real(self, b: Self) -> Self {
        let (x, y) = (self.value, b.value);
        self.binary(b, x % y, S::one, || -(x / y).trunc())
    }
    #[inline(always)]
    fn rem_const(self, c: S) -> Self {
        self.same_delta(self.value % c)
    }
    #[inline(always)]
    fn const_rem(c: S, b: Self) -> Self {
        let y = b.value;
        b.unary(c % y, || -(c / y).trunc())
    }
}

impl<S: Scalar> Neg for Real<'_, S> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        self.unary(-self.value, || -S::one())
    }
}

impl<'t, S: Scalar> Neg for &Real<'t, S> {
    type Output = Real<'t, S>;
    #[inline(always)]
    fn neg(self) -> Real<'t, S> {
        -*self
    }
}

macro_rules! operator {
    ($Op:ident $op:ident, $OpAssign:ident $op_assign:ident, $real:ident, $with_const:ident, $const_with:ident) => {
        impl<'t, S: Scalar> $Op for Real<'t, S> {
            type Output = Real<'t, S>;
            #[inline(always)]
            fn $op(self, rhs: Self) -> Real<'t, S> {
                self.$real(rhs)
            }
        }
        impl<'t, S: Scalar> $Op<&Real<'t, S>> for Real<'t, S> {
            type Output = Real<'t, S>;
            #[inline(always)]
            fn $op(self, rhs: &Real<'t, S>) -> Real<'t, S> {
                self.$real(*rhs)
            }
        }
        impl<'t, S: Scalar> $Op<Real<'t, S>> for &Real<'t, S> {
            type Output = Real<'t, S>;
            #[inline(always)]
            fn $op(self, rhs: Real<'t, S>) -> Real<'t, S> {
                (*self).$real(rhs)
            }
        }
        impl<'t, S: Scalar> $Op<&Real<'t, S>> for &Real<'t, S> {
            type Output = Real<'t, S>;
            #[inline(always)]
            fn $op(self, rhs: &Real<'t, S>) -> Real<'t, S> {
                (*self).$real(*rhs)
            }
        }
        impl<S: Scalar> $OpAssign for Real<'_, S> {
            #[inline(always)]
            fn $op_assign(&mut self, rhs: Self) {
                *self = self.$real(rhs);
            }
        }
        impl<'t, S: Scalar> $OpAssign<&Real<'t, S>> for Real<'t, S> {
            #[inline(always)]
            fn $op_assign(&mut self, rhs: &Real<'t, S>) {
                *self = self.$real(*rhs);
            }
        }
        operator!(@machine_float f64, $Op $op, $OpAssign $op_assign, $with_const, $const_with);
        operator!(@machine_float f32, $Op $op, $OpAssign $op_assign, $with_const, $const_with);
    };
    (@machine_float $p:ident, $Op:ident $op:ident, $OpAssign:ident $op_assign:ident, $with_const:ident, $const_with:ident) => {
        impl<'t, S: Scalar<Prim = $p>> $Op<$p> for Real<'t, S> {
            type Output = Real<'t, S>;
            #[inline(always)]
            fn $op(self, rhs: $p) -> Real<'t, S> {
                self.$with_const(S::from_prim(rhs))
            }
        }
        impl<'t, S: Scalar<Prim = $p>> $Op<&$p> for Real<'t, S> {
            type Output = Real<'t, S>;
            #[inline(always)]
            fn $op(self, rhs: &$p) -> Real<'t, S> {
                self.$with_const(S::from_prim(*rhs))
            }
        }
        impl<'t, S: Scalar<Prim = $p>> $Op<$p> for &Real<'t, S> {
            type Output = Real<'t, S>;
            #[inline(always)]
            fn $op(self, rhs: $p) -> Real<'t, S> {
                (*self).$with_const(S::from_prim(rhs))
            }
        }
        impl<'t, S: Scalar<Prim = $p>> $Op<&$p> for &Real<'t, S> {
            type Output = Real<'t, S>;
            #[inline(always)]
            fn $op(self, rhs: &$p) -> Real<'t, S> {
                (*self).$with_const(S::from_prim(*rhs))
            }
        }
        impl<'t, S: Scalar<Prim = $p>> $Op<Real<'t, S>> for $p {
            type Output = Real<'t, S>;
            #[inline(always)]
            fn $op(self, rhs: Real<'t, S>) -> Real<'t, S> {
                Real::$const_with(S::from_prim(self), rhs)
            }
        }
        impl<'t, S: Scalar<Prim = $p>> $Op<&Real<'t, S>> for $p {
            type Output = Real<'t, S>;
            #[inline(always)]
            fn $op(self, rhs: &Real<'t, S>) -> Real<'t, S> {
                Real::$const_with(S::from_prim(self), *rhs)
            }
        }
        impl<'t, S: Scalar<Prim = $p>> $Op<Real<'t, S>> for &$p {
            type Output = Real<'t, S>;
            #[inline(always)]
            fn $op(self, rhs: Real<'t, S>) -> Real<'t, S> {
                Real::$const_with(S::from_prim(*self), rhs)
            }
        }
        impl<'t, S: Scalar<Prim = $p>> $Op<&Real<'t, S>> for &$p {
            type Output = Real<'t, S>;
            #[inline(always)]
            fn $op(self, rhs: &Real<'t, S>) -> Real<'t, S> {
                Real::$const_with(S::from_prim(*self), *rhs)
            }
        }
        impl<S: Scalar<Prim = $p>> $OpAssign<$p> for Real<'_, S> {
            #[inline(always)]
            fn $op_assign(&mut self, rhs: $p) {
                *self = self.$with_const(S::from_prim(rhs));
            }
        }
        impl<S: Scalar<Prim = $p>> $OpAssign<&$p> for Real<'_, S> {
            #[inline(always)]
            fn $op_assign(&mut self, rhs: &$p) {
                *self = self.$with_const(S::from_prim(*rhs));
            }
        }
    };
}

operator!(Add add, AddAssign add_assign, add_real, add_const, const_add);
operator!(Sub sub, SubAssign sub_assign, sub_real, sub_const, const_sub);
operator!(Mul mul, MulAssign mul_assign, mul_real, mul_const, const_mul);
operator!(Div div, DivAssign div_assign, div_real, div_const, const_div);
operator!(Rem rem, RemAssign rem_assign, rem_real, rem_const, const_rem);

/// A sum of dual values as one binding with a unit term per active summand
/// (instead of one binding per addition).
///
/// Starts from -0.0, as the standard library's float `Sum` does (so an empty
/// sum is -0.0 and a sum of -0.0s keeps its sign, exactly like the primal:
/// found by the fuzzer, where `atan2` of two empty sums differed by π).
fn sum_of<'t, S: Scalar>(values: impl Iterator<Item = Real<'t, S>>) -> Real<'t, S> {
    let mut total = -S::zero();
    let mut tape = None;
    let mut terms: Vec<(S, DeltaId)> = Vec::new();
    for value in values {
        total += value.value;
        if let Some(id) = value.id() {
            tape = value.tape;
            terms.push((S::one(), id));
        }
    }
    match tape {
        Some(tape) => Real::with_id(tape, total, tape.push_terms(terms)),
        None => Real::constant(total),
    }
}

impl<'t, S: Scalar> Sum for Real<'t, S> {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        sum_of(iter)
    }
}

impl<'a, 't, S: Scalar> Sum<&'a Real<'t, S>> for Real<'t, S> {
    fn sum<I: Iterator<Item = &'a Self>>(iter: I) -> Self {
        sum_of(iter.copied())
    }
}

impl<'t, S: Scalar> Product for Real<'t, S> {
    fn product<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Real::constant(S::one()), |acc, x| acc * x)
    }
}

impl<'a, 't, S: Scalar> Product<&'a Real<'t, S>> for Real<'t, S> {
    fn product<I: Iterator<Item = &'a Self>>(iter: I) -> Self {
        iter.fold(Real::constant(S::one()), |acc, x| acc * *x)
    }
}
