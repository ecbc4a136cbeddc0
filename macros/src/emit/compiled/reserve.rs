//! Room reserved before a loop for all the values its iterations push.
//!
//! A `for` loop over a range knows its trip count before it starts. If one
//! iteration pushes at most a fixed number of values (no call, which pushes
//! what its callee needs; no inner loop that pushes; no buffer pushed
//! whole; no early exit), the forward pass reserves room for all of them
//! before the loop and pushes into it without allocating. That keeps calls
//! out of the loop, so the optimiser can keep the loop's values in
//! registers.

use super::Passes;
use crate::analyze::{Establish, LoopPlan};
use crate::ir::{Block, ExprKind, Stmt, StmtKind};

/// An upper bound on the pushes of one execution: (reals, words).
type Pushes = Option<(usize, usize)>;

impl Passes<'_> {
    /// For a `for` statement whose iterations push a bounded number of
    /// values (and at least one): that bound per iteration.
    pub(crate) fn room_per_iteration(&self, stmt: &Stmt) -> Option<(usize, usize)> {
        let plan = &self.analysis.plan;
        let StmtKind::For { body, .. } = &stmt.kind else {
            return None;
        };
        if plan.exits[stmt.id] || has_jump(body) || !plan.has_reverse[stmt.id] {
            return None;
        }
        // Nothing is kept inside a checkpointed loop's forward pass.
        if self.recording.get() == super::Recording::Silent {
            return None;
        }
        self.block_pushes(body)
            .filter(|&(reals, words)| reals + words > 0)
    }

    pub(crate) fn block_pushes(&self, block: &Block) -> Pushes {
        let plan = &self.analysis.plan;
        let mut total = (0, 0);
        for stmt in &block.stmts {
            let (reals, words) = self.stmt_pushes(stmt)?;
            total = (total.0 + reals, total.1 + words);
        }
        // The block's end: its popped variables.
        for stmt in &block.stmts {
            let StmtKind::Let { var, .. } = &stmt.kind else {
                continue;
            };
            if plan.establish[*var] == Establish::Pop {
                if self.is_buffer(*var) {
                    return None;
                }
                if self.active(*var) {
                    total.0 += 1;
                } else {
                    total.1 += 1;
                }
            } else if plan.establish_len[*var] == Establish::Pop {
                total.1 += 1;
            }
        }
        if plan.codes[block.id] {
            total.1 += 1;
        }
        Some(total)
    }

    fn stmt_pushes(&self, stmt: &Stmt) -> Pushes {
        let plan = &self.analysis.plan;
        let max = |a: (usize, usize), b: (usize, usize)| (a.0.max(b.0), a.1.max(b.1));
        Some(match &stmt.kind {
            StmtKind::Let {
                var,
                init: Some(init),
            } if matches!(init.kind, ExprKind::Call(_)) && self.useful(*var) => {
                if self.is_active(init) {
                    return None;
                }
                (0, 0)
            }
            // A value whose adjoint runs: its kept partials.
            StmtKind::Let {
                var,
                init: Some(init),
            } if self.let_keeps(*var, init) => (self.kept_count(init), 0),
            StmtKind::Let { .. } | StmtKind::Effect(_) => (0, 0),
            StmtKind::Assign {
                place, op, value, ..
            } => {
                let var = place.var();
                let kept = if self.assign_keeps(var, *op) {
                    self.kept_count(value)
                } else {
                    0
                };
                let saved = plan.saves[stmt.id];
                match (saved, self.active(var)) {
                    (false, _) => (kept, 0),
                    (true, true) => (kept + 1, 0),
                    (true, false) => (kept, 1),
                }
            }
            StmtKind::If { then, els, .. } => {
                let decision =
                    usize::from(plan.has_reverse[stmt.id] && plan.push_decision[stmt.id]);
                let then = self.block_pushes(then)?;
                let els = match els {
                    Some(els) => self.block_pushes(els)?,
                    None => (0, 0),
                };
                let branches = max(then, els);
                (branches.0, branches.1 + decision)
            }
            StmtKind::Match { arms, .. } => {
                let mut most = (0, 0);
                for arm in arms {
                    most = max(most, self.block_pushes(&arm.body)?);
                }
                (most.0, most.1 + usize::from(plan.has_reverse[stmt.id]))
            }
            StmtKind::For { id, body, .. }
            | StmtKind::While { id, body, .. }
            | StmtKind::Loop { id, body } => {
                // An inner loop may only be free of pushes.
                let counted = plan.has_reverse[stmt.id] && plan.loops[*id] == LoopPlan::Counted;
                if counted || self.block_pushes(body)? != (0, 0) {
                    return None;
                }
                (0, 0)
            }
            StmtKind::Block(block) => self.block_pushes(block)?,
            StmtKind::Break { .. } | StmtKind::Continue { .. } | StmtKind::Return => return None,
        })
    }
}

/// True if `block` holds a `break`, `continue` or `return` anywhere.
fn has_jump(block: &Block) -> bool {
    let mut found = false;
    block.each_stmt(&mut |s| {
        found |= matches!(
            s.kind,
            StmtKind::Break { .. } | StmtKind::Continue { .. } | StmtKind::Return
        )
    });
    found
}
