//! Saves of a loop's overwritten elements taken as one copy of the range.
//!
//! A `for` loop over `a..b` whose body overwrites a restored buffer at its
//! variable (`stage[i] = ..`, a statement of the body itself) and does
//! nothing else with that buffer overwrites exactly the elements `a..b`,
//! each once, and none of them is read in between. So instead of saving
//! each old element before its write (one push per iteration, a pop and a
//! store per iteration of the reversed loop, which keep both loops scalar),
//! the forward pass keeps the elements `a..b` in one copy before the loop,
//! and the adjoint puts them back in one copy after the reversed loop:
//! nothing in the reversed loop reads the buffer, and what runs after it
//! reads the values from before the loop, as it would have.
//!
//! Only loops every iteration of which runs whole (no `break`, `continue`
//! or `return` in the body, a range the adjoint evaluates again), and only
//! where the loop then keeps nothing per iteration: its body holds such
//! writes and `let`s of scalars the adjoint evaluates again, and neither
//! calls nor keeps partials. Where other values are still pushed in the
//! loop (and popped in the reversed one), the loops stay scalar anyway,
//! and a copy of a short range costs more than the pushes it replaces.

use crate::analyze::keep::kept_partials;
use crate::analyze::reverse::{Establish, LoopPlan, Plan};
use crate::ir::{
    AssignOp, Block, Expr, ExprKind, Function, Origin, Place, StmtId, StmtKind, VarId, VarKind,
};

/// Per statement (`for` loops): the buffers whose overwritten elements the
/// loop keeps in one copy before it, in the order kept. The writes of those
/// buffers in the loop no longer save (`plan.saves` updated).
pub(crate) fn decide(function: &Function, plan: &mut Plan, active: &[bool]) -> Vec<Vec<VarId>> {
    let mut kept_before = vec![Vec::new(); function.stmt_count];
    let mut found: Vec<(StmtId, VarId, StmtId)> = Vec::new();
    function.body.each_stmt(&mut |stmt| {
        let StmtKind::For {
            id,
            var: Some(index),
            range,
            body,
        } = &stmt.kind
        else {
            return;
        };
        if plan.loops[*id] != LoopPlan::Reversed
            || !plan.has_reverse[stmt.id]
            || plan.exits[stmt.id]
            || range.reversed
            || range.inclusive
            || body.has_jump()
            || assigns(body, *index)
        {
            return;
        }
        // Nothing computed here is kept: no call, no kept partial.
        let plain = |value: &Expr| !value.has_call() && kept_partials(value, active).is_empty();
        let mut writes = Vec::new();
        for inner in &body.stmts {
            match &inner.kind {
                StmtKind::Assign {
                    place: Place::Elem(buffer, at),
                    op: AssignOp::Set,
                    value,
                    ..
                } => {
                    let var = &function.vars[*buffer];
                    let eligible = plan.saves[inner.id]
                        && !plan.inverted[inner.id]
                        && active[*buffer]
                        && var.kind == VarKind::Buffer
                        && var.origin == Origin::Local
                        && matches!(at.kind, ExprKind::Var(v) if v == *index)
                        && mentions(body, *buffer) == 1
                        && plain(value);
                    if !eligible {
                        return;
                    }
                    writes.push((stmt.id, *buffer, inner.id));
                }
                StmtKind::Let {
                    var,
                    init: Some(init),
                } if function.vars[*var].kind == VarKind::Scalar
                    && plan.establish[*var] != Establish::Pop
                    && plain(init) => {}
                _ => return,
            }
        }
        found.extend(writes);
    });
    for (for_stmt, buffer, write) in found {
        plan.saves[write] = false;
        kept_before[for_stmt].push(buffer);
    }
    kept_before
}

/// True if `body` assigns `var` whole.
pub(crate) fn assigns(body: &Block, var: VarId) -> bool {
    let mut found = false;
    body.each_stmt(&mut |stmt| {
        found |= matches!(&stmt.kind, StmtKind::Assign { place: Place::Var(v), .. } if *v == var);
    });
    found
}

/// How often `body` names `var` (declared, written, read, its length,
/// passed on).
pub(crate) fn mentions(body: &Block, var: VarId) -> usize {
    let mut count = 0;
    body.each_stmt(&mut |stmt| {
        match &stmt.kind {
            StmtKind::Let { var: v, .. } | StmtKind::For { var: Some(v), .. } if *v == var => {
                count += 1
            }
            StmtKind::Assign { place, .. } if place.var() == var => count += 1,
            StmtKind::Match { arms, .. } => {
                count += arms.iter().filter(|arm| arm.vars.contains(&var)).count();
            }
            _ => {}
        }
        stmt.each_expr(&mut |expr| {
            expr.each_subexpr(&mut |e| e.each_named(&mut |v| count += usize::from(v == var)))
        });
    });
    count
}
