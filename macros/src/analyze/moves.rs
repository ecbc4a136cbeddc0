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
//!
//! And the local buffers nothing moves: named only by element, length or
//! reference, never as a whole value. The forward pass still has them
//! where their block ends, and gives their memory to its record for the
//! next buffer it makes (a time-stepping loop's slopes, dropped at the end
//! of each step, become the next step's: memory still in the cache, where
//! the allocator's or the spares' next buffer is not).

use crate::ir::{
    AssignOp, Block, CallArg, ExprKind, Function, Origin, Place, StmtKind, VarId, VarKind,
};

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

/// Per variable: a local `Vec` that no expression names whole (the
/// forward pass owns it until its block ends).
pub(crate) fn never_moved(function: &Function) -> Vec<bool> {
    let mut never = function
        .vars
        .iter()
        .map(|var| var.kind == VarKind::Buffer && !var.array && var.origin == Origin::Local)
        .collect::<Vec<_>>();
    function.body.each_stmt(&mut |stmt| {
        if let StmtKind::Match { arms, .. } = &stmt.kind {
            for arm in arms {
                arm.vars.iter().for_each(|&var| never[var] = false);
            }
        }
        stmt.each_expr(&mut |expr| {
            expr.each_subexpr(&mut |e| match &e.kind {
                ExprKind::Var(var) => never[*var] = false,
                ExprKind::Opaque { reads, .. } => reads.iter().for_each(|&var| never[var] = false),
                // (`f(v)`: given by value as written.)
                ExprKind::Call(call) => {
                    for arg in &call.args {
                        if let CallArg::Buffer(buffer) = arg {
                            never[buffer.var] &= !buffer.by_value;
                        }
                    }
                }
                _ => {}
            })
        });
    });
    never
}
