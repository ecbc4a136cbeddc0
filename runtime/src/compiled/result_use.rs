//! Whether the caller of a forward pass uses the derivatives its result
//! carries.
//!
//! Forward-over-reverse (`hvp`, `hessian`) runs the forward pass on dual
//! numbers only for what it keeps for the adjoint: the tangent of the
//! function's own value is never read. Given [`Unvalued`], the forward pass
//! returns its result's machine value alone, so every tangent that only
//! flowed into it (a running minimum's, a sum's) is dead code the optimiser
//! removes: what is left of the forward pass on dual numbers is what the
//! adjoint needs.

use crate::scalar::Scalar;

/// What a forward pass does with its result before returning it.
pub trait ResultUse: Copy {
    /// The value returned for `value`.
    fn result<S: Scalar>(self, value: S) -> S;
}

/// The caller uses the result and its derivatives (every pass but
/// forward-over-reverse).
#[derive(Clone, Copy, Debug, Default)]
pub struct Valued;

impl ResultUse for Valued {
    #[inline(always)]
    fn result<S: Scalar>(self, value: S) -> S {
        value
    }
}

/// The caller reads only the result's machine value: its derivatives at
/// every level are dropped.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unvalued;

impl ResultUse for Unvalued {
    #[inline(always)]
    fn result<S: Scalar>(self, value: S) -> S {
        S::from_prim(value.to_prim())
    }
}
