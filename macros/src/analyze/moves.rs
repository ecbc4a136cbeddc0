//! Local buffers that move into another variable as their block ends:
//! `let next = step(x, &y); ..; y = next;` with `y = next` the last
//! statement of the block declaring `next`. Rust moves the `Vec` there
//! (nothing reads `next` again), so the forward pass can too, and the
//! adjoint can move `y`'s adjoint into `next`'s instead of adding it into
//! zeros made for `next` at its `let` (which would need `next`'s length).
//!
//! Only where the block always reaches that statement (no `break`,
//! `continue` or `return` in it) and outside `#[checkpoint]` loops (whose
//! iterations run again in the adjoint, reading their variables).

use crate::ir::{AssignOp, Block, ExprKind, Function, Origin, Place, StmtKind, VarId, VarKind};

/// Per variable: a local buffer moved into another by the last statement
/// of the block declaring it, both useful (differentiated, flowing into the
/// result: the adjoint of the one moved into comes to the other).
pub(crate) fn moved_at_end(function: &Function, useful: &[bool]) -> Vec<bool> {
    let mut moved = vec![false; function.vars.len()];
    visit(function, useful, &function.body, &mut moved);
    moved
}

fn visit(function: &Function, useful: &[bool], block: &Block, moved: &mut Vec<bool>) {
    if let Some(source) = moved_source(function, useful, block) {
        moved[source] = true;
    }
    for stmt in &block.stmts {
        if let StmtKind::For { id, .. } = &stmt.kind {
            if function.loops[*id].checkpoint {
                continue;
            }
        }
        for inner in stmt.blocks() {
            visit(function, useful, inner, moved);
        }
    }
}

/// The local buffer `block`'s last statement moves into another variable,
/// if it does.
fn moved_source(function: &Function, useful: &[bool], block: &Block) -> Option<VarId> {
    let StmtKind::Assign {
        place: Place::Var(target),
        op: AssignOp::Set,
        value,
        first: false,
    } = &block.stmts.last()?.kind
    else {
        return None;
    };
    let ExprKind::Var(source) = value.kind else {
        return None;
    };
    let (target, declared) = (*target, &function.vars);
    let local_vec = |var: VarId| {
        declared[var].kind == VarKind::Buffer
            && !declared[var].array
            && declared[var].origin == Origin::Local
            && useful[var]
    };
    let made_here = block.stmts.iter().any(|stmt| {
        matches!(
            &stmt.kind,
            StmtKind::Let { var, init: Some(init) }
                if *var == source
                    && matches!(init.kind, ExprKind::NewBuffer(_) | ExprKind::Call(_))
        )
    });
    (source != target
        && target != function.result
        && local_vec(source)
        && local_vec(target)
        && made_here
        && !block.has_jump())
    .then_some(source)
}
