//! The buffers a `for` loop over a range reads and writes only at its
//! variable plus a literal (`b[i]`, `b[i + 1]`, `b[i - 1]`; never
//! `b[2 * i]`, `b.len()` or `b` whole), at their lowest and their highest
//! offset at least once in every iteration (a statement of the body itself,
//! not inside a branch or the right operand of `&&` or `||`, in a body no
//! `continue` leaves early, whose loop variable is never assigned), and
//! declared before the loop.
//!
//! Every iteration of the forward pass indexed such a buffer at both ends
//! of its offsets, so the elements from the first iteration's lowest to the
//! last iteration's highest exist: the passes can take that window of the
//! buffer (and of its adjoint) before the loop and index it from zero,
//! which tells the optimiser that no index in the loop is out of bounds (no
//! check per element, and loops it can vectorise).

use crate::ir::{Block, ExprKind, LoopId, Place, StmtKind, VarId};

/// A buffer the loop indexes only at its variable plus a literal.
pub(crate) struct Indexed {
    pub var: VarId,
    /// The loop's body writes some of its elements.
    pub written: bool,
    /// The lowest and the highest offset it is indexed at.
    pub low: i64,
    pub high: i64,
}

impl Indexed {
    /// Indexed at one offset only (a buffer read at several the adjoint
    /// may keep in a rolling window of locals instead).
    pub(crate) fn one_offset(&self) -> bool {
        self.low == self.high
    }
}

/// The buffers `body` (of loop `id`, whose variable is `index`) indexes
/// only at `index` plus a literal, in every iteration at the lowest and the
/// highest.
pub(crate) fn indexed_only_at(id: LoopId, index: VarId, body: &Block) -> Vec<Indexed> {
    let mut at_index: Vec<(VarId, i64)> = Vec::new();
    let mut elsewhere: Vec<VarId> = Vec::new();
    let mut written: Vec<VarId> = Vec::new();
    let mut refused = false;
    let offset = |e: &crate::ir::Expr| match e.offset_of() {
        Some((v, c)) if v == index => Some(c),
        _ => None,
    };
    body.each_stmt(&mut |stmt| {
        match &stmt.kind {
            StmtKind::Continue { target } if *target == id => refused = true,
            // (The loop variable assigned: no index is known.)
            StmtKind::Assign {
                place: Place::Var(var),
                ..
            } if *var == index => refused = true,
            StmtKind::Assign { place, .. } => match place {
                Place::Elem(var, at) => match offset(at) {
                    Some(c) => {
                        at_index.push((*var, c));
                        written.push(*var);
                    }
                    None => elsewhere.push(*var),
                },
                Place::Var(var) => elsewhere.push(*var),
            },
            _ => {}
        }
        stmt.each_expr(&mut |expr| {
            expr.each_subexpr(&mut |e| {
                let indexed = match &e.kind {
                    ExprKind::Elem(var, at) => offset(at).map(|c| (*var, c)),
                    _ => None,
                };
                match indexed {
                    Some(indexed) => at_index.push(indexed),
                    None => e.each_named(&mut |var| elsewhere.push(var)),
                }
            })
        });
    });
    if refused {
        return Vec::new();
    }
    // Indexed in every iteration: by a statement of the body itself.
    let mut every: Vec<(VarId, i64)> = Vec::new();
    for stmt in &body.stmts {
        if let StmtKind::Assign {
            place: Place::Elem(var, at),
            ..
        } = &stmt.kind
        {
            every.extend(offset(at).map(|c| (*var, c)));
        }
        if matches!(stmt.kind, StmtKind::Let { .. } | StmtKind::Assign { .. }) {
            stmt.each_expr(&mut |expr| surely_indexed(expr, &offset, &mut every));
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
    for &(var, _) in &at_index {
        if elsewhere.contains(&var)
            || declared.contains(&var)
            || indexed.iter().any(|i| i.var == var)
        {
            continue;
        }
        let offsets = at_index.iter().filter(|(v, _)| *v == var).map(|(_, c)| *c);
        let (low, high) = (offsets.clone().min(), offsets.max());
        let (Some(low), Some(high)) = (low, high) else {
            continue;
        };
        if !every.contains(&(var, low)) || !every.contains(&(var, high)) {
            continue;
        }
        indexed.push(Indexed {
            var,
            written: written.contains(&var),
            low,
            high,
        });
    }
    indexed
}

/// The buffers `expr` indexes at the loop's variable plus an offset
/// whenever it is evaluated, with the offsets: not in the right operand of
/// `&&` or `||`, which may be skipped (`i < m && x[i] > 0.0` reads `x[i]`
/// only for `i < m`).
fn surely_indexed(
    expr: &crate::ir::Expr,
    offset: &dyn Fn(&crate::ir::Expr) -> Option<i64>,
    out: &mut Vec<(VarId, i64)>,
) {
    match &expr.kind {
        ExprKind::Elem(var, at) => out.extend(offset(at).map(|c| (*var, c))),
        ExprKind::Logic(_, first, _) => return surely_indexed(first, offset, out),
        _ => {}
    }
    for child in expr.children() {
        surely_indexed(child, offset, out);
    }
}
