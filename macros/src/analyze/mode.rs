//! Which mode computes the gradient of a function with one real input.
//!
//! Reverse mode costs a forward pass that keeps values plus an adjoint;
//! with one real input, forward mode gives the same derivative in one pass
//! on dual numbers that keeps nothing (as a hand-written tangent would).
//! It is chosen when it also agrees with reverse mode at the points where
//! IEEE arithmetic runs out: the compiled adjoint skips what flows through
//! an infinite partial (`sqrt` at 0) under an exactly zero adjoint, forward
//! mode multiplies it out (NaN), so a function with such a method keeps
//! reverse mode; so does one that calls other functions, whose bodies the
//! macro does not see here.

use crate::ir::{ExprKind, Function};

/// True if the gradient of `function` (one real input, a real result) is
/// computed in forward mode.
pub(crate) fn forward_gradient(function: &Function) -> bool {
    let mut forward = true;
    function.body.each_stmt(&mut |stmt| {
        stmt.each_expr(&mut |expr| {
            expr.each_subexpr(&mut |e| match &e.kind {
                ExprKind::Call(_) => forward = false,
                ExprKind::Math { math, .. } if math.singular() => forward = false,
                _ => {}
            })
        })
    });
    forward
}
