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
//! * `A = DualVec<S, N>`: `N` adjoints per value in its tangents (its value
//!   part stays zero), so one reverse sweep computes `N` rows of a Jacobian
//!   (vector reverse mode): the sweep's own work (the values it evaluates
//!   again, the partials, the stack it pops) is done once for all `N`.
//!
//! A lane whose adjoint is zero stays exactly zero through a partial that is
//! infinite (`DualVec`'s rule for zero tangents), as the sweep of that row
//! alone skips the contribution.

use core::ops::{Div, Mul};

use crate::dual_vec::DualVec;
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
}

impl<S: Scalar, const N: usize> Cotangent<S> for DualVec<S, N> {
    const LANES: usize = N;
    #[inline(always)]
    fn lane(self, lane: usize) -> S {
        self.tangents[lane]
    }
    #[inline(always)]
    fn from_lane(lane: usize, value: S) -> Self {
        let mut tangents = [S::zero(); N];
        tangents[lane] = value;
        DualVec::new(S::zero(), tangents)
    }
}
