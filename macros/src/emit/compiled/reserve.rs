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
use crate::ir::{Block, ExprKind, Place, Stmt, StmtKind};

/// What one execution pushes at most on each lane of the stack.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Pushes {
    pub(crate) reals: usize,
    pub(crate) words: usize,
    /// Decisions (one bit each).
    pub(crate) flags: usize,
}

impl Pushes {
    const NONE: Pushes = Pushes {
        reals: 0,
        words: 0,
        flags: 0,
    };

    fn reals(reals: usize) -> Pushes {
        Pushes {
            reals,
            ..Pushes::NONE
        }
    }

    fn words(words: usize) -> Pushes {
        Pushes {
            words,
            ..Pushes::NONE
        }
    }

    fn flags(flags: usize) -> Pushes {
        Pushes {
            flags,
            ..Pushes::NONE
        }
    }

    pub(crate) fn is_none(self) -> bool {
        self == Pushes::NONE
    }

    /// The pushes of one execution that runs one of `self` and `other`.
    fn either(self, other: Pushes) -> Pushes {
        Pushes {
            reals: self.reals.max(other.reals),
            words: self.words.max(other.words),
            flags: self.flags.max(other.flags),
        }
    }
}

impl core::ops::Add for Pushes {
    type Output = Pushes;
    fn add(self, other: Pushes) -> Pushes {
        Pushes {
            reals: self.reals + other.reals,
            words: self.words + other.words,
            flags: self.flags + other.flags,
        }
    }
}

impl Passes<'_> {
    /// For a `for` statement whose iterations push a bounded number of
    /// values (and at least one): that bound per iteration.
    pub(crate) fn room_per_iteration(&self, stmt: &Stmt) -> Option<Pushes> {
        let plan = &self.analysis.plan;
        let StmtKind::For { body, .. } = &stmt.kind else {
            return None;
        };
        if plan.exits[stmt.id] || body.has_jump() || !plan.has_reverse[stmt.id] {
            return None;
        }
        // Nothing is kept inside a checkpointed loop's forward pass.
        if self.recording.get() == super::Recording::Silent {
            return None;
        }
        self.block_pushes(body).filter(|pushes| !pushes.is_none())
    }

    /// An upper bound on what one execution of `block` pushes (`None`: no
    /// bound known when it starts).
    pub(crate) fn block_pushes(&self, block: &Block) -> Option<Pushes> {
        let plan = &self.analysis.plan;
        let mut total = Pushes::NONE;
        for stmt in &block.stmts {
            total = total + self.stmt_pushes(stmt)?;
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
                    total.reals += 1;
                } else {
                    total.words += 1;
                }
            } else if plan.establish_len[*var] == Establish::Pop {
                total.words += 1;
            }
        }
        if plan.codes[block.id] {
            total.words += 1;
        }
        Some(total)
    }

    fn stmt_pushes(&self, stmt: &Stmt) -> Option<Pushes> {
        let plan = &self.analysis.plan;
        Some(match &stmt.kind {
            StmtKind::Let {
                var,
                init: Some(init),
            } if matches!(init.kind, ExprKind::Call(_)) && self.useful(*var) => {
                if self.is_active(init) {
                    return None;
                }
                Pushes::NONE
            }
            // A value whose adjoint runs: its kept partials.
            StmtKind::Let {
                var,
                init: Some(init),
            } if self.let_keeps(*var, init) => self.kept_pushes(init),
            StmtKind::Let { .. } | StmtKind::Effect(_) => Pushes::NONE,
            // A whole buffer: its old contents (kept whole) and a callee's
            // pushes have no bound; its old length is one word.
            StmtKind::Assign {
                place: Place::Var(var),
                op,
                value,
                first,
            } if self.is_buffer(*var) => {
                let call = matches!(value.kind, ExprKind::Call(_)) && self.is_active(value);
                if plan.saves[stmt.id] || call {
                    return None;
                }
                let kept = if self.assign_keeps(*var, *op) {
                    self.kept_pushes(value)
                } else {
                    Pushes::NONE
                };
                kept + Pushes::words(usize::from(self.keeps_length(stmt.id, *var, *first)))
            }
            StmtKind::Assign {
                place, op, value, ..
            } => {
                let var = place.var();
                let kept = if self.assign_keeps(var, *op) {
                    self.kept_pushes(value)
                } else {
                    Pushes::NONE
                };
                let saved = plan.saves[stmt.id];
                match (saved, self.active(var)) {
                    (false, _) => kept,
                    (true, true) => kept + Pushes::reals(1),
                    (true, false) => kept + Pushes::words(1),
                }
            }
            StmtKind::If { then, els, .. } => {
                let decision =
                    usize::from(plan.has_reverse[stmt.id] && plan.push_decision[stmt.id]);
                let then = self.block_pushes(then)?;
                let els = match els {
                    Some(els) => self.block_pushes(els)?,
                    None => Pushes::NONE,
                };
                then.either(els) + Pushes::flags(decision)
            }
            StmtKind::Match { arms, .. } => {
                let mut most = Pushes::NONE;
                for arm in arms {
                    most = most.either(self.block_pushes(&arm.body)?);
                }
                most + Pushes::words(usize::from(plan.has_reverse[stmt.id]))
            }
            StmtKind::For { id, body, .. }
            | StmtKind::While { id, body, .. }
            | StmtKind::Loop { id, body } => {
                // An inner loop may only be free of pushes.
                let counted = plan.has_reverse[stmt.id] && plan.loops[*id] == LoopPlan::Counted;
                let kept_before = !plan.kept_before[stmt.id].is_empty();
                if counted || kept_before || !self.block_pushes(body)?.is_none() {
                    return None;
                }
                Pushes::NONE
            }
            StmtKind::Block(block) => self.block_pushes(block)?,
            StmtKind::Break { .. } | StmtKind::Continue { .. } | StmtKind::Return => return None,
        })
    }
}
