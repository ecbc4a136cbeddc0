//! Which mode computes the gradient of a function with one real input.
//!
//! Reverse mode costs a forward pass that keeps values plus an adjoint;
//! with one real input, forward mode gives the same derivative in one pass
//! on dual numbers that keeps nothing (as a hand-written tangent would).
//! The two agree except where IEEE arithmetic runs out: the compiled
//! adjoint skips what flows through an infinite partial (`sqrt` at 0)
//! under an exactly zero adjoint, forward mode multiplies it out (NaN).
//! A derivative that forward mode gets finite never went through such a
//! partial (tangents are sums of products of partials: once infinite, they
//! stay infinite or NaN), so it is reverse mode's too; a function with a
//! method whose partial can be infinite, or that calls other functions
//! (whose bodies the macro does not see here), gets its derivative checked:
//! where it is not finite, reverse mode computes it again.

use crate::ir::{ExprKind, Function, StmtKind};

/// How the gradient of a function with one real input and a real result
/// is computed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum GradientMode {
    Reverse,
    /// Forward mode, which agrees with reverse mode everywhere.
    Forward,
    /// Forward mode, and reverse mode again where its derivative is not
    /// finite.
    ForwardChecked,
}

/// How the gradient of `function` (one real input, a real result) is
/// computed. (Reverse mode where the function has effects that running it
/// twice would repeat, and a check might.)
pub(crate) fn gradient_mode(function: &Function) -> GradientMode {
    let (mut checked, mut effects) = (false, false);
    function.body.each_stmt(&mut |stmt| {
        effects |= matches!(stmt.kind, StmtKind::Effect(_));
        stmt.each_expr(&mut |expr| {
            expr.each_subexpr(&mut |e| match &e.kind {
                ExprKind::Call(_) => checked = true,
                ExprKind::Math { math, .. } if math.singular() => checked = true,
                _ => {}
            })
        })
    });
    match (checked, effects) {
        (false, _) => GradientMode::Forward,
        (true, false) => GradientMode::ForwardChecked,
        (true, true) => GradientMode::Reverse,
    }
}
