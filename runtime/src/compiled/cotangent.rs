//! What the adjoints of a compiled adjoint are made of.
//!
//! A compiled adjoint is generic over its scalar `S` (the values of the
//! forward pass) and, apart from it, over the type `A` of its adjoints: a
//! [`Cotangent<S>`]. The adjoints only ever take sums and products with
//! partials (`A + A`, `A * S`, `A / S`), so `A` may carry more than one
//! adjoint:
//!
//! * `A = S`: one adjoint per value (a gradient, a `vjp`, and through dual
//!   `S`, forward-over-reverse);
//! * `A = Lanes<S, N>`: `N` adjoints per value, so one reverse sweep
//!   computes `N` rows of a Jacobian (vector reverse mode): the sweep's own
//!   work (the values it evaluates again, the partials, the stack it pops)
//!   is done once for all `N`.
//!
//! A lane whose adjoint is zero stays exactly zero through a partial that is
//! infinite, as the sweep of that row alone skips the contribution.

use core::ops::{Div, Mul};

use super::stack::Stack;
use crate::scalar::Scalar;

/// The type of the adjoints of a compiled adjoint whose values are `S`.
pub trait Cotangent<S: Scalar>:
    Scalar<Prim = S::Prim> + Mul<S, Output = Self> + Div<S, Output = Self>
{
    /// How many adjoints a value carries.
    const LANES: usize;
    /// Adjoint `lane`.
    fn lane(self, lane: usize) -> S;
    /// `value` as adjoint `lane`, the others zero.
    fn from_lane(lane: usize, value: S) -> Self;
    /// A buffer of `len` zeros (`-0.0`) for an adjoint, in memory the
    /// adjoint gave back to `stack` if the adjoints are the stack's
    /// scalars (see [`Stack::filled`]).
    #[doc(hidden)]
    #[inline(always)]
    fn zeros_on(stack: &mut Stack<S>, len: usize) -> Vec<Self> {
        let _ = stack;
        super::repeated(-Self::zero(), len)
    }
    /// Gives an adjoint's buffer back to `stack` (kept if the adjoints are
    /// the stack's scalars, else freed).
    #[doc(hidden)]
    #[inline(always)]
    fn give_back(stack: &mut Stack<S>, buffer: Vec<Self>) {
        let _ = (stack, buffer);
    }
}

impl<S: Scalar> Cotangent<S> for S {
    const LANES: usize = 1;
    #[inline(always)]
    fn lane(self, _: usize) -> S {
        self
    }
    #[inline(always)]
    fn from_lane(_: usize, value: S) -> S {
        value
    }
    #[inline(always)]
    fn zeros_on(stack: &mut Stack<S>, len: usize) -> Vec<S> {
        stack.filled(-S::zero(), len)
    }
    #[inline(always)]
    fn give_back(stack: &mut Stack<S>, buffer: Vec<S>) {
        stack.give_back(buffer);
    }
}

/// `N` adjoints of a compiled adjoint at once, lane by lane: the
/// [`Cotangent`] of vector reverse mode (`jacobian_rev`).
///
/// Its arithmetic is lane by lane; a product with a partial (`Lanes * S`)
/// keeps a zero lane zero where the partial is infinite, as the sweep of that
/// lane alone skips the contribution. As a [`Scalar`] (which twins and sinks
/// of adjoints need) every method works lane by lane, and comparisons and
/// `to_prim` look at lane 0: adjoints are only added and scaled.
#[derive(Clone, Copy)]
pub struct Lanes<S, const N: usize>(pub [S; N]);

impl<S: Scalar, const N: usize> Lanes<S, N> {
    #[inline(always)]
    fn map(self, f: impl Fn(S) -> S) -> Self {
        Lanes(core::array::from_fn(|k| f(self.0[k])))
    }

    #[inline(always)]
    fn zip(self, other: Self, f: impl Fn(S, S) -> S) -> Self {
        Lanes(core::array::from_fn(|k| f(self.0[k], other.0[k])))
    }
}

macro_rules! lanes_op {
    ($($trait:ident $method:ident $assign:ident $assign_method:ident),*) => {$(
        impl<S: Scalar, const N: usize> core::ops::$trait for Lanes<S, N> {
            type Output = Self;
            #[inline(always)]
            fn $method(self, rhs: Self) -> Self {
                self.zip(rhs, |a, b| core::ops::$trait::$method(a, b))
            }
        }
        impl<S: Scalar, const N: usize> core::ops::$assign for Lanes<S, N> {
            #[inline(always)]
            fn $assign_method(&mut self, rhs: Self) {
                *self = core::ops::$trait::$method(*self, rhs);
            }
        }
    )*};
}

lanes_op!(
    Add add AddAssign add_assign,
    Sub sub SubAssign sub_assign,
    Mul mul MulAssign mul_assign,
    Div div DivAssign div_assign,
    Rem rem RemAssign rem_assign
);

impl<S: Scalar, const N: usize> core::ops::Neg for Lanes<S, N> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        self.map(|a| -a)
    }
}

/// Each lane scaled by a partial; a zero lane stays zero (see the type).
impl<S: Scalar, const N: usize> Mul<S> for Lanes<S, N> {
    type Output = Self;
    #[inline(always)]
    fn mul(self, partial: S) -> Self {
        if partial.surely_finite() {
            return self.map(|a| a * partial);
        }
        self.map(|a| if a.is_zero() { S::zero() } else { a * partial })
    }
}

impl<S: Scalar, const N: usize> Div<S> for Lanes<S, N> {
    type Output = Self;
    #[inline(always)]
    fn div(self, rhs: S) -> Self {
        self.map(|a| a / rhs)
    }
}

impl<S: Scalar, const N: usize> PartialEq for Lanes<S, N> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

/// Lane 0 (see the type).
impl<S: Scalar, const N: usize> PartialOrd for Lanes<S, N> {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        self.0[0].partial_cmp(&other.0[0])
    }
}

impl<S: Scalar, const N: usize> core::fmt::Debug for Lanes<S, N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.0.iter()).finish()
    }
}

impl<S: Scalar, const N: usize> core::fmt::Display for Lanes<S, N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(self, f)
    }
}

impl<S: Scalar, const N: usize> crate::scalar::sealed::Sealed for Lanes<S, N> {}

macro_rules! lanewise {
    (unary: $($name:ident)*) => {$(
        #[inline(always)]
        fn $name(self) -> Self {
            self.map(S::$name)
        }
    )*};
    (binary: $($name:ident)*) => {$(
        #[inline(always)]
        fn $name(self, other: Self) -> Self {
            self.zip(other, S::$name)
        }
    )*};
}

impl<S: Scalar, const N: usize> Scalar for Lanes<S, N> {
    type Prim = S::Prim;
    type Detached = Lanes<S::Detached, N>;

    #[inline(always)]
    fn detach(self) -> Self::Detached {
        Lanes(self.0.map(S::detach))
    }
    #[inline(always)]
    fn attach(value: Self::Detached) -> Self {
        Lanes(value.0.map(S::attach))
    }

    #[inline(always)]
    fn from_prim(value: S::Prim) -> Self {
        Lanes([S::from_prim(value); N])
    }
    #[inline(always)]
    fn to_prim(self) -> S::Prim {
        self.0[0].to_prim()
    }
    #[inline(always)]
    fn is_zero(&self) -> bool {
        self.0.iter().all(Scalar::is_zero)
    }

    lanewise!(unary: sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh exp exp2 exp_m1
        ln log2 log10 ln_1p sqrt cbrt recip abs signum floor ceil round round_ties_even trunc
        fract);
    lanewise!(binary: atan2 powf hypot copysign rem_euclid div_euclid max min);

    #[inline(always)]
    fn powi(self, n: i32) -> Self {
        self.map(|a| a.powi(n))
    }
    #[inline(always)]
    fn mul_add(self, a: Self, b: Self) -> Self {
        Lanes(core::array::from_fn(|k| self.0[k].mul_add(a.0[k], b.0[k])))
    }
}

impl<S: Scalar, const N: usize> Cotangent<S> for Lanes<S, N> {
    const LANES: usize = N;
    #[inline(always)]
    fn lane(self, lane: usize) -> S {
        self.0[lane]
    }
    #[inline(always)]
    fn from_lane(lane: usize, value: S) -> Self {
        let mut lanes = [S::zero(); N];
        lanes[lane] = value;
        Lanes(lanes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An adjoint's steps (sums, products and quotients with partials) on
    /// lanes equal the same steps on each lane's scalar, bit for bit.
    #[test]
    fn each_lane_runs_the_scalar_steps() {
        fn steps<S: Scalar<Prim = f64>, A: Cotangent<S>>(seed: A, p: S, q: S) -> A {
            let a = seed * p + seed / q;
            let mut b = -(a * q) - seed;
            b += a * (p * q);
            b
        }
        let (p, q) = (0.7f64, -1.3);
        let seeds = [1.0, -0.25, 3.5];
        let lanes: Lanes<f64, 3> = steps(Lanes(seeds), p, q);
        for (k, &seed) in seeds.iter().enumerate() {
            let single: f64 = steps(seed, p, q);
            assert_eq!(lanes.0[k], single, "lane {k}");
        }
    }

    /// A zero lane stays zero through an infinite partial (its own sweep
    /// would skip the contribution); the others get the infinity.
    #[test]
    fn a_zero_lane_stays_zero_through_an_infinite_partial() {
        let scaled = Lanes([0.0f64, 2.0]) * f64::INFINITY;
        assert_eq!(scaled.0[0], 0.0);
        assert_eq!(scaled.0[1], f64::INFINITY);
        assert!(!Lanes([0.0f64, 1e-300]).is_zero());
        assert!(Lanes([0.0f64, -0.0]).is_zero());
        let seed: Lanes<f64, 3> = Cotangent::<f64>::from_lane(1, 4.0);
        assert_eq!(seed.0, [0.0, 4.0, 0.0]);
    }
}
