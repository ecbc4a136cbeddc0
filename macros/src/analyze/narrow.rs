//! The buffers a `for` loop over a range reads and writes only at its
//! variable (`b[i]`, never `b[i + 1]`, `b.len()` or `b` whole), at least
//! once in every iteration (a statement of the body itself, not inside a
//! branch or the right operand of `&&` or `||`, in a body no `continue`
//! leaves early, whose loop variable is never assigned), and declared
//! before the loop.
//!
//! Every iteration of the forward pass indexed such a buffer at `i`, so
//! its length is past the range's end: the adjoint can narrow it (and its
//! adjoint) to `..end` before the reversed loop, which tells the optimiser
//! that no index in the loop is out of bounds (no check per element, and
//! loops it can vectorise).

use crate::ir::{Block, ExprKind, LoopId, Place, StmtKind, VarId};

/// A buffer the loop indexes only at its variable.
pub(crate) struct Indexed {
    pub var: VarId,
    /// The loop's body writes some of its elements.
    pub written: bool,
}

/// The buffers `body` (of loop `id`, whose variable is `index`) indexes
/// only at `index`, in every iteration.
pub(crate) fn indexed_only_at(id: LoopId, index: VarId, body: &Block) -> Vec<Indexed> {
    let mut at_index: Vec<VarId> = Vec::new();
    let mut elsewhere: Vec<VarId> = Vec::new();
    let mut written: Vec<VarId> = Vec::new();
    let mut refused = false;
    let is_index = |e: &crate::ir::Expr| matches!(e.kind, ExprKind::Var(v) if v == index);
    body.each_stmt(&mut |stmt| {
        match &stmt.kind {
            StmtKind::Continue { target } if *target == id => refused = true,
            // (The loop variable assigned: no index is known.)
            StmtKind::Assign {
                place: Place::Var(var),
                ..
            } if *var == index => refused = true,
            StmtKind::Assign { place, .. } => match place {
                Place::Elem(var, at) if is_index(at) => {
                    at_index.push(*var);
                    written.push(*var);
                }
                _ => elsewhere.push(place.var()),
            },
            _ => {}
        }
        stmt.each_expr(&mut |expr| {
            expr.each_subexpr(&mut |e| match &e.kind {
                ExprKind::Elem(var, at) if is_index(at) => at_index.push(*var),
                _ => e.each_named(&mut |var| elsewhere.push(var)),
            })
        });
    });
    if refused {
        return Vec::new();
    }
    // Indexed in every iteration: by a statement of the body itself.
    let mut every: Vec<VarId> = Vec::new();
    for stmt in &body.stmts {
        if let StmtKind::Assign {
            place: Place::Elem(var, at),
            ..
        } = &stmt.kind
        {
            if is_index(at) {
                every.push(*var);
            }
        }
        if matches!(stmt.kind, StmtKind::Let { .. } | StmtKind::Assign { .. }) {
            stmt.each_expr(&mut |expr| surely_indexed(expr, &is_index, &mut every));
        }
    }
    // (A buffer the body declares is not there before the loop.)
    let mut declared: Vec<VarId> = Vec::new();
    body.each_stmt(&mut |stmt| {
        if let StmtKind::Let { var, .. } = stmt.kind {
            declared.push(var);
        }
    });
    let mut indexed: Vec<Indexed> = Vec::new();
    for var in at_index {
        if elsewhere.contains(&var)
            || !every.contains(&var)
            || declared.contains(&var)
            || indexed.iter().any(|i| i.var == var)
        {
            continue;
        }
        indexed.push(Indexed {
            var,
            written: written.contains(&var),
        });
    }
    indexed
}

/// The buffers `expr` indexes at the loop's variable whenever it is
/// evaluated: not in the right operand of `&&` or `||`, which may be
/// skipped (`i < m && x[i] > 0.0` reads `x[i]` only for `i < m`).
fn surely_indexed(
    expr: &crate::ir::Expr,
    is_index: &dyn Fn(&crate::ir::Expr) -> bool,
    out: &mut Vec<VarId>,
) {
    match &expr.kind {
        ExprKind::Elem(var, at) if is_index(at) => out.push(*var),
        ExprKind::Logic(_, first, _) => return surely_indexed(first, is_index, out),
        _ => {}
    }
    for child in expr.children() {
        surely_indexed(child, is_index, out);
    }
}
