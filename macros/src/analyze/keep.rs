//! What the forward pass keeps of expensive math methods (`exp`, the
//! trigonometric and hyperbolic functions, `sqrt`, `powf`, ...) in the
//! value of a `let` or of an assignment (`=`, `+=`, `-=`) whose adjoint
//! propagates through them: their partials, and their value too where the
//! adjoint reads it (a factor of a product whose other factor is
//! differentiated, a divisor, an argument of a cheap method such as `ln`).
//! Pushing a real costs less than an `exp`, and the adjoint then needs
//! neither the method's arguments (which may have been overwritten since)
//! nor the call.
//!
//! Of `max` and `min`, whose partials are 1 for the operand they return
//! and 0 for the other, it keeps which operand that was: one decision bit
//! instead of both operands (a running maximum `m = m.max(v)` would
//! otherwise keep every old `m`, as the adjoint reads it).

use crate::analyze::activity::is_active;
use crate::ir::math::Rule;
use crate::ir::{ArithOp, Expr, ExprKind};

/// A math node whose partials the forward pass keeps.
#[derive(Clone, Copy)]
pub(crate) struct Kept<'a> {
    pub node: &'a Expr,
    /// Its value is kept too (the adjoint reads it).
    pub value: bool,
    /// A `max` or `min`: which operand it returned is kept (a decision),
    /// not its partials.
    pub choice: bool,
}

/// The math nodes of `value` whose partials are kept, in evaluation order
/// (the order the forward pass pushes them in).
pub(crate) fn kept_partials<'a>(value: &'a Expr, active: &[bool]) -> Vec<Kept<'a>> {
    let mut kept = Vec::new();
    collect(value, false, active, &mut kept);
    kept
}

/// Collects the kept nodes of `expr`; `read`: the adjoint reads its value.
fn collect<'a>(expr: &'a Expr, read: bool, active: &[bool], kept: &mut Vec<Kept<'a>>) {
    if !is_active(expr, active) {
        return;
    }
    match &expr.kind {
        ExprKind::Neg(a) | ExprKind::Cast(a, _) => collect(a, read, active, kept),
        ExprKind::Arith(ArithOp::Add | ArithOp::Sub, a, b) => {
            collect(a, read, active, kept);
            collect(b, read, active, kept);
        }
        // ∂(a·b)/∂a reads b.
        ExprKind::Arith(ArithOp::Mul, a, b) => {
            collect(a, read || is_active(b, active), active, kept);
            collect(b, read || is_active(a, active), active, kept);
        }
        // ∂(a/b)/∂a = 1/b reads b; ∂(a/b)/∂b reads a too.
        ExprKind::Arith(ArithOp::Div, a, b) => {
            collect(a, read || is_active(b, active), active, kept);
            collect(b, true, active, kept);
        }
        ExprKind::Arith(ArithOp::Rem, a, b) => {
            collect(a, true, active, kept);
            collect(b, true, active, kept);
        }
        ExprKind::Math { math, args, .. } if math.rule != Rule::Constant => {
            // Kept partials read no argument; a cheap method's rule reads
            // all of them.
            let choice = chooses(math.name);
            let keeps = choice || expensive(math.name);
            for (i, arg) in args.iter().enumerate() {
                if math.real_arg(i) {
                    collect(arg, !keeps, active, kept);
                }
            }
            if keeps {
                kept.push(Kept {
                    node: expr,
                    value: read,
                    choice,
                });
            }
        }
        _ => {}
    }
}

/// True if evaluating `value` calls an expensive math method on a
/// differentiated value. The adjoint pops such a `let`'s value, which the
/// forward pass keeps, instead of calling the method again: the forward pass
/// runs anyway (it keeps the method's partials), and a pushed real costs less
/// than a `sin` (ba's camera model: its rotation's `sqrt`, `sin` and `cos`
/// were evaluated again by every reverse sweep of a Jacobian).
pub(crate) fn calls_expensive(value: &Expr, active: &[bool]) -> bool {
    let mut found = false;
    value.each_subexpr(&mut |e| {
        if let ExprKind::Math { math, .. } = &e.kind {
            found |= math.rule != Rule::Constant && expensive(math.name) && is_active(e, active);
        }
    });
    found
}

/// Math methods that return one of their two operands.
fn chooses(name: &str) -> bool {
    matches!(name, "max" | "min")
}

/// Math methods whose partials cost more to compute than to keep.
fn expensive(name: &str) -> bool {
    matches!(
        name,
        "exp"
            | "exp2"
            | "exp_m1"
            | "sin"
            | "cos"
            | "tan"
            | "sinh"
            | "cosh"
            | "tanh"
            | "asin"
            | "acos"
            | "asinh"
            | "acosh"
            | "atanh"
            | "sqrt"
            | "cbrt"
            | "powf"
            | "hypot"
    )
}

/// What is kept of `expr` (a math node in a value whose partials are
/// kept), if anything.
pub(crate) fn kept_node<'a>(expr: &Expr, kept: &[Kept<'a>]) -> Option<Kept<'a>> {
    kept.iter().copied().find(|k| std::ptr::eq(k.node, expr))
}
