//! Vector forward mode: dual numbers carrying a chunk of `N` tangents,
//! `value + Σₖ tangentₖ·εₖ` (εⱼεₖ = 0).
//!
//! One pass on [`DualVec`] computes `N` directional derivatives: the value
//! and every elementary derivative once, then `N` products. That is how
//! `jvps` and `jacobian_fwd` take `N` columns of a Jacobian per pass, and,
//! under a reverse sweep (forward-over-reverse), how `hessian` takes `N`
//! Hessian-vector products per pass.
//!
//! Each tangent follows the rules of [`Dual`](crate::Dual): a zero tangent
//! stays exactly zero, even through a rule whose derivative is infinite
//! there (`sqrt` at 0). Nesting works as for `Dual`: the value and the
//! tangents may themselves be dual values of an outer level.

use core::fmt;
use core::ops::{Add, Div, Mul, Neg, Rem, Sub};

use crate::dual::forward_dual;
use crate::math::{constant_rules, multi_rules, unary_rules};
use crate::scalar::Scalar;

/// A dual number with `N` tangents: the derivatives of one value along `N`
/// directions at once.
#[derive(Clone, Copy)]
pub struct DualVec<S, const N: usize> {
    /// The value.
    pub value: S,
    /// The derivative of the value along each of the `N` directions.
    pub tangents: [S; N],
}

impl<S: Scalar, const N: usize> DualVec<S, N> {
    /// `value + Σₖ tangents[k]·εₖ`.
    #[inline(always)]
    pub fn new(value: S, tangents: [S; N]) -> Self {
        DualVec { value, tangents }
    }

    /// A constant: every tangent zero.
    #[inline(always)]
    pub fn constant(value: S) -> Self {
        DualVec {
            value,
            tangents: [S::zero(); N],
        }
    }

    /// Tangent `k` of the chunk.
    #[inline(always)]
    pub fn tangent(&self, k: usize) -> S {
        self.tangents[k]
    }

    /// Applies a rule `x ↦ (f(x), f'(x))` to the value and scales every
    /// tangent by the derivative.
    #[inline(always)]
    fn chain(self, rule: impl FnOnce(S) -> (S, S)) -> Self {
        let (value, derivative) = rule(self.value);
        DualVec {
            value,
            tangents: scaled(derivative, &self.tangents),
        }
    }

    /// A two-operand rule `(f, ∂f/∂self, ∂f/∂other)`.
    #[inline(always)]
    fn chain2(self, other: Self, rule: impl FnOnce(S, S) -> (S, S, S)) -> Self {
        let (value, d_self, d_other) = rule(self.value, other.value);
        DualVec {
            value,
            tangents: combined(d_self, &self.tangents, d_other, &other.tangents),
        }
    }
}

/// `partial · tangent` for each tangent, a zero tangent giving zero even
/// where the partial is infinite (the test is skipped when the partial is
/// surely finite, so the common case is a plain, vectorisable product).
#[inline(always)]
fn scaled<S: Scalar, const N: usize>(partial: S, tangents: &[S; N]) -> [S; N] {
    if partial.surely_finite() {
        return core::array::from_fn(|k| partial * tangents[k]);
    }
    core::array::from_fn(|k| {
        if tangents[k].is_zero() {
            S::zero()
        } else {
            partial * tangents[k]
        }
    })
}

/// `a · ta + b · tb` lane by lane, with `scaled`'s rule for zero tangents.
#[inline(always)]
fn combined<S: Scalar, const N: usize>(a: S, ta: &[S; N], b: S, tb: &[S; N]) -> [S; N] {
    let (ta, tb) = (scaled(a, ta), scaled(b, tb));
    core::array::from_fn(|k| ta[k] + tb[k])
}

impl<S: Scalar, const N: usize> Default for DualVec<S, N> {
    fn default() -> Self {
        DualVec::constant(S::zero())
    }
}

impl<S: Scalar, const N: usize> Add for DualVec<S, N> {
    type Output = Self;
    #[inline(always)]
    fn add(self, rhs: Self) -> Self {
        DualVec {
            value: self.value + rhs.value,
            tangents: core::array::from_fn(|k| self.tangents[k] + rhs.tangents[k]),
        }
    }
}

impl<S: Scalar, const N: usize> Sub for DualVec<S, N> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, rhs: Self) -> Self {
        DualVec {
            value: self.value - rhs.value,
            tangents: core::array::from_fn(|k| self.tangents[k] - rhs.tangents[k]),
        }
    }
}

impl<S: Scalar, const N: usize> Mul for DualVec<S, N> {
    type Output = Self;
    #[inline(always)]
    fn mul(self, rhs: Self) -> Self {
        DualVec {
            value: self.value * rhs.value,
            tangents: combined(rhs.value, &self.tangents, self.value, &rhs.tangents),
        }
    }
}

impl<S: Scalar, const N: usize> Div for DualVec<S, N> {
    type Output = Self;
    #[inline(always)]
    fn div(self, rhs: Self) -> Self {
        let value = self.value / rhs.value;
        DualVec {
            value,
            tangents: combined(
                rhs.value.recip(),
                &self.tangents,
                -value / rhs.value,
                &rhs.tangents,
            ),
        }
    }
}

impl<S: Scalar, const N: usize> Rem for DualVec<S, N> {
    type Output = Self;
    #[inline(always)]
    fn rem(self, rhs: Self) -> Self {
        self.chain2(rhs, multi_rules::rem)
    }
}

impl<S: Scalar, const N: usize> Neg for DualVec<S, N> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        DualVec {
            value: -self.value,
            tangents: core::array::from_fn(|k| -self.tangents[k]),
        }
    }
}

forward_dual!([S: Scalar, const N: usize] DualVec<S, N>, DualVec::constant);

impl<S: Scalar, const N: usize> fmt::Debug for DualVec<S, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.value)?;
        for (k, tangent) in self.tangents.iter().enumerate() {
            write!(f, " + {tangent:?}ε{k}")?;
        }
        Ok(())
    }
}

impl<S: Scalar, const N: usize> Scalar for DualVec<S, N> {
    type Prim = S::Prim;
    type Detached = DualVec<S::Detached, N>;

    #[inline(always)]
    fn detach(self) -> Self::Detached {
        DualVec::new(self.value.detach(), self.tangents.map(S::detach))
    }
    #[inline(always)]
    fn attach(value: Self::Detached) -> Self {
        DualVec::new(S::attach(value.value), value.tangents.map(S::attach))
    }
    const NESTED: bool = true;

    #[inline(always)]
    fn from_prim(value: S::Prim) -> Self {
        DualVec::constant(S::from_prim(value))
    }
    #[inline(always)]
    fn to_prim(self) -> S::Prim {
        self.value.to_prim()
    }
    /// Zero only with every tangent zero (an adjoint `0 + Σ tₖεₖ` still
    /// carries second-order contributions).
    #[inline(always)]
    fn is_zero(&self) -> bool {
        self.value.is_zero() && self.tangents.iter().all(Scalar::is_zero)
    }

    forward_dual!(@elementary);
    #[inline(always)]
    fn mul_add(self, a: Self, b: Self) -> Self {
        let (value, d_x, d_a, d_b) = multi_rules::mul_add(self.value, a.value, b.value);
        let (tx, ta, tb) = (
            scaled(d_x, &self.tangents),
            scaled(d_a, &a.tangents),
            scaled(d_b, &b.tangents),
        );
        DualVec {
            value,
            tangents: core::array::from_fn(|k| tx[k] + ta[k] + tb[k]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dual::Dual;

    /// Each lane equals a `Dual` pass along the same direction, bit for bit
    /// (the same rules in the same order).
    #[test]
    fn every_lane_is_a_dual_pass() {
        fn f<S: Scalar<Prim = f64>>(x: S, y: S) -> S {
            let a = (x * y).sin() / x.sqrt() + x.powi(3).atan2(y) - y.exp().ln_1p();
            a.hypot(x).mul_add(y, x.max(y)) % (y + S::from_prim(3.0))
        }
        let (x, y) = (0.7f64, 1.3);
        let directions = [(1.0, 0.0), (0.0, 1.0), (0.5, -2.0), (0.0, 0.0)];
        let chunk: DualVec<f64, 4> = f(
            DualVec::new(x, directions.map(|d| d.0)),
            DualVec::new(y, directions.map(|d| d.1)),
        );
        for (k, (dx, dy)) in directions.into_iter().enumerate() {
            let single = f(Dual::new(x, dx), Dual::new(y, dy));
            assert_eq!(chunk.value, single.value);
            assert_eq!(chunk.tangents[k], single.tangent, "lane {k}");
        }
    }

    #[test]
    fn a_zero_tangent_stays_zero_through_an_infinite_derivative() {
        let z = DualVec::new(0.0f64, [0.0, 1.0]).sqrt();
        assert_eq!(z.tangents[0], 0.0);
        assert!(z.tangents[1].is_infinite());
    }

    /// Nested over `Dual`: second derivatives along every direction pair.
    #[test]
    fn nests_over_dual() {
        // f(x, y) = x² y; ∂²f/∂x∂(x, y) = (2y, 2x).
        let (x0, y0) = (1.5f64, -0.5);
        let x = DualVec::new(
            Dual::new(x0, 1.0),
            [Dual::new(1.0, 0.0), Dual::new(0.0, 0.0)],
        );
        let y = DualVec::new(
            Dual::new(y0, 0.0),
            [Dual::new(0.0, 0.0), Dual::new(1.0, 0.0)],
        );
        let f = x * x * y;
        assert_eq!(f.tangents[0].value, 2.0 * x0 * y0);
        assert_eq!(f.tangents[1].value, x0 * x0);
        assert_eq!(f.tangents[0].tangent, 2.0 * y0);
        assert_eq!(f.tangents[1].tangent, 2.0 * x0);
    }
}
