//! Activity over the IR: which variables hold values that depend on a
//! differentiated input (the forward pass computes them on `S`, and the
//! adjoint gives them adjoints). A fixed point: a variable is active when
//! any value assigned to it is.

use super::Ty;
use crate::ir::{
    Block, CallArg, Expr, ExprKind, Function, NewBuffer, Origin, Place, StmtKind, Unsupported,
    VarId,
};
use crate::signature::Signature;

pub(crate) fn analyze(function: &Function, signature: &Signature, types: &[Ty]) -> Vec<bool> {
    let mut active = vec![false; function.vars.len()];
    for (param, &var) in signature.params.iter().zip(&function.params) {
        active[var] = param.kind.is_active();
    }
    // A field of a differentiated value of a user type is differentiated
    // where the body uses it as a real (a `#[no_grad]` real field too: the
    // passes read it as a constant and drop its adjoint).
    for (var, info) in function.vars.iter().enumerate() {
        if let Origin::Field(id) = info.origin {
            active[var] = active[function.fields[id].base] && types[var] == Ty::Real;
        }
    }
    // The result is always a scalar of the pass (a constant result is lifted).
    active[function.result] = true;
    loop {
        let mut changed = false;
        let mut mark = |var: VarId, value: bool, active: &mut Vec<bool>| {
            if value && !active[var] {
                active[var] = true;
                changed = true;
            }
        };
        function.body.each_stmt(&mut |stmt| match &stmt.kind {
            // A field of a call's result: differentiated where it is a real.
            StmtKind::Let {
                var,
                init:
                    Some(Expr {
                        kind: ExprKind::Field { base, .. },
                        ..
                    }),
            } => {
                let value = active[*base] && types[*var] == Ty::Real;
                mark(*var, value, &mut active);
            }
            StmtKind::Let {
                var,
                init: Some(init),
            } => {
                let value = is_active(init, &active);
                mark(*var, value, &mut active);
            }
            StmtKind::Assign { place, value, .. } => {
                let value = is_active(value, &active);
                mark(place.var(), value, &mut active);
            }
            _ => {}
        });
        if !changed {
            break;
        }
    }
    active
}

/// True if `expr` computes a value that depends on an active variable.
pub(crate) fn is_active(expr: &Expr, active: &[bool]) -> bool {
    match &expr.kind {
        ExprKind::Lit(_) | ExprKind::Len(_) | ExprKind::Opaque { .. } => false,
        ExprKind::Var(var) | ExprKind::Elem(var, _) => active[*var],
        ExprKind::Field { base, .. } => active[*base],
        ExprKind::Neg(a) => is_active(a, active),
        ExprKind::Not(_) | ExprKind::Compare(..) | ExprKind::Logic(..) => false,
        ExprKind::Arith(_, a, b) => is_active(a, active) || is_active(b, active),
        ExprKind::Math { math, args, .. } => args
            .iter()
            .enumerate()
            .any(|(i, arg)| math.real_arg(i) && is_active(arg, active)),
        ExprKind::Cast(inner, ty) => is_float_type(ty) && is_active(inner, active),
        ExprKind::Call(call) => call.args.iter().any(|arg| match arg {
            CallArg::Value(value) => is_active(value, active),
            CallArg::Plain(_) => false,
            // (A function may hold differentiated values it captured.)
            CallArg::Function(_) => true,
            CallArg::Buffer(buffer) => active[buffer.var],
            CallArg::Struct { var, .. } => active[*var],
            CallArg::Literal { leaves, .. } => leaves.iter().any(|leaf| is_active(leaf, active)),
        }),
        ExprKind::Primitive(_, buffers) => buffers.iter().any(|b| active[b.var]),
        ExprKind::NewBuffer(new) => match new {
            NewBuffer::Repeat { elem, .. } => is_active(elem, active),
            NewBuffer::List(elems) => elems.iter().any(|e| is_active(e, active)),
        },
    }
}

/// True for `f64` and `f32`.
pub(crate) fn is_float_type(ty: &syn::Type) -> bool {
    crate::signature::float_name(ty).is_some()
}

/// The uses of active values the compiled path cannot express: plain Rust
/// reading a differentiated variable, casts to the other precision,
/// patterns on differentiated values.
pub(crate) fn check(
    function: &Function,
    active: &[bool],
    precision: crate::signature::Precision,
) -> Result<(), Unsupported> {
    let mut problem: Option<Unsupported> = None;
    let mut report = |span, message: String| {
        if problem.is_none() {
            problem = Some(Unsupported::new(span, message));
        }
    };
    check_block(&function.body, function, active, precision, &mut report);
    match problem {
        Some(problem) => Err(problem),
        None => Ok(()),
    }
}

fn check_block(
    block: &Block,
    function: &Function,
    active: &[bool],
    precision: crate::signature::Precision,
    report: &mut dyn FnMut(proc_macro2::Span, String),
) {
    block.each_stmt(&mut |stmt| {
        stmt.each_expr(&mut |expr| check_expr(expr, function, active, precision, report));
        match &stmt.kind {
            StmtKind::Let {
                init: Some(init), ..
            } => check_expr(init, function, active, precision, report),
            StmtKind::Match { scrutinee, .. } if is_active(scrutinee, active) => report(
                scrutinee.span,
                "matching on a differentiated value is not on the compiled path yet: compare it instead".into(),
            ),
            StmtKind::Assign {
                place: Place::Elem(_, index),
                ..
            } => check_expr(index, function, active, precision, report),
            _ => {}
        }
    });
}

fn check_expr(
    expr: &Expr,
    function: &Function,
    active: &[bool],
    precision: crate::signature::Precision,
    report: &mut dyn FnMut(proc_macro2::Span, String),
) {
    expr.each_subexpr(&mut |e| match &e.kind {
        ExprKind::Opaque { reads, .. } => {
            if let Some(&var) = reads.iter().find(|v| active[**v]) {
                report(
                    e.span,
                    format!(
                        "this use of the differentiated value `{}` is not on the compiled path yet",
                        function.vars[var].name
                    ),
                );
            }
        }
        ExprKind::Cast(inner, ty) if is_active(inner, active) => {
            if let Some(name) = crate::signature::float_name(ty) {
                if name != precision.name() {
                    report(
                        e.span,
                        crate::errors::other_precision_cast(precision.name(), &name),
                    );
                }
            }
        }
        _ => {}
    });
}
