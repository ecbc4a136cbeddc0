//! Partial derivatives the forward pass keeps instead of the adjoint
//! computing them again: those of expensive math methods (`exp`, the
//! trigonometric and hyperbolic functions, `sqrt`, `powf`, ...) in the value
//! of a `let` or of an assignment (`=`, `+=`, `-=`) whose adjoint propagates
//! through them. Pushing one real costs less than an `exp`, and the adjoint
//! then needs neither the method's arguments (which may have been
//! overwritten since) nor the call.

use crate::analyze::activity::is_active;
use crate::ir::math::Rule;
use crate::ir::{ArithOp, Expr, ExprKind};

/// The math nodes of `value` whose partials are kept, in evaluation order
/// (the order the forward pass pushes them in). A node whose value the
/// adjoint reads anyway (an operand of a product with a differentiated
/// other operand, a divisor, an argument of a method whose partials are
/// computed) is not kept: its partials come almost free with its value.
pub(crate) fn kept_partials<'a>(value: &'a Expr, active: &[bool]) -> Vec<&'a Expr> {
    let mut kept = Vec::new();
    collect(value, active, &mut kept);
    kept
}

/// Collects the kept nodes of `expr`, whose value the adjoint does not
/// read.
fn collect<'a>(expr: &'a Expr, active: &[bool], kept: &mut Vec<&'a Expr>) {
    if !is_active(expr, active) {
        return;
    }
    match &expr.kind {
        ExprKind::Neg(a) | ExprKind::Cast(a, _) => collect(a, active, kept),
        ExprKind::Arith(ArithOp::Add | ArithOp::Sub, a, b) => {
            collect(a, active, kept);
            collect(b, active, kept);
        }
        // ∂(a·b)/∂a reads b: an operand is collected if the other is
        // constant.
        ExprKind::Arith(ArithOp::Mul, a, b) => {
            if !is_active(b, active) {
                collect(a, active, kept);
            }
            if !is_active(a, active) {
                collect(b, active, kept);
            }
        }
        // ∂(a/b)/∂a = 1/b; the divisor's value is read.
        ExprKind::Arith(ArithOp::Div, a, b) if !is_active(b, active) => collect(a, active, kept),
        ExprKind::Math { math, args, .. }
            if math.rule != Rule::Constant && expensive(math.name) =>
        {
            for (i, arg) in args.iter().enumerate() {
                if math.real_arg(i) {
                    collect(arg, active, kept);
                }
            }
            kept.push(expr);
        }
        _ => {}
    }
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

/// True if `expr` (a math node in a value whose partials are kept) is
/// kept.
pub(crate) fn is_kept(expr: &Expr, kept: &[&Expr]) -> bool {
    kept.iter().any(|k| std::ptr::eq(*k, expr))
}
