//! Where statements are, and which writes of a variable can run after a
//! given statement: the facts behind "this value is still there when the
//! adjoint reads it" (settled) and "this value must be saved before it is
//! overwritten" (restored).

use crate::ir::{Block, BlockId, Function, Stmt, StmtId, StmtKind, VarId};

/// One step of a path: a statement, its block and its index there.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Step {
    pub block: BlockId,
    pub index: usize,
    pub stmt: StmtId,
}

pub(crate) struct Positions {
    /// For each statement, the path from the body to it (itself last).
    pub path: Vec<Vec<Step>>,
    /// The block each variable is declared in (the body for parameters and
    /// the result, a loop's body for its variable, an arm's body for its
    /// pattern's names).
    pub declared_in: Vec<BlockId>,
    /// The statements writing each variable (assignments, element
    /// assignments), not its declaration.
    pub writes: Vec<Vec<StmtId>>,
    /// The statements assigning each variable whole (`v = ..;`).
    pub whole_writes: Vec<Vec<StmtId>>,
    /// True for loop statements.
    is_loop: Vec<bool>,
}

impl Positions {
    pub(crate) fn new(function: &Function) -> Positions {
        let mut positions = Positions {
            path: vec![Vec::new(); function.stmt_count],
            declared_in: vec![function.body.id; function.vars.len()],
            writes: vec![Vec::new(); function.vars.len()],
            whole_writes: vec![Vec::new(); function.vars.len()],
            is_loop: vec![false; function.stmt_count],
        };
        positions.walk_block(&function.body, &mut Vec::new());
        positions
    }

    fn walk_block(&mut self, block: &Block, path: &mut Vec<Step>) {
        for (index, stmt) in block.stmts.iter().enumerate() {
            path.push(Step {
                block: block.id,
                index,
                stmt: stmt.id,
            });
            self.walk_stmt(stmt, block, path);
            path.pop();
        }
    }

    fn walk_stmt(&mut self, stmt: &Stmt, block: &Block, path: &mut Vec<Step>) {
        self.path[stmt.id] = path.clone();
        match &stmt.kind {
            StmtKind::Let { var, .. } => self.declared_in[*var] = block.id,
            StmtKind::Assign { place, .. } => {
                self.writes[place.var()].push(stmt.id);
                if let crate::ir::Place::Var(var) = place {
                    self.whole_writes[*var].push(stmt.id);
                }
            }
            StmtKind::For { var, body, .. } => {
                if let Some(var) = var {
                    self.declared_in[*var] = body.id;
                }
                self.is_loop[stmt.id] = true;
            }
            StmtKind::While { .. } | StmtKind::Loop { .. } => self.is_loop[stmt.id] = true,
            StmtKind::Match { arms, .. } => {
                for arm in arms {
                    for &var in &arm.vars {
                        self.declared_in[var] = arm.body.id;
                    }
                }
            }
            _ => {}
        }
        for inner in stmt.blocks() {
            self.walk_block(inner, path);
        }
    }

    /// True if the write `write` can run after `point` while the variable
    /// declared in `scope` is alive: later in a common block, inside
    /// `point` itself (or `write` is `point`), or in a later iteration of a
    /// loop around both that lies inside the variable's scope.
    pub(crate) fn after(&self, write: StmtId, point: StmtId, scope: BlockId) -> bool {
        let (w, p) = (&self.path[write], &self.path[point]);
        let mut in_scope = false;
        let mut i = 0;
        loop {
            match (w.get(i), p.get(i)) {
                (Some(ws), Some(ps)) if ws == ps => {
                    in_scope |= ws.block == scope;
                    let both_inside = w.len() > i + 1 && p.len() > i + 1;
                    if in_scope && both_inside && self.is_loop[ws.stmt] {
                        return true;
                    }
                    i += 1;
                }
                // The write is the point, or inside it.
                (None, None) | (Some(_), None) => return true,
                (None, Some(_)) => return false,
                (Some(ws), Some(ps)) => return ws.block == ps.block && ws.index > ps.index,
            }
        }
    }

    /// True if a statement assigns buffer `var` whole inside `point` (a
    /// loop whose range reads `var.len()`: the length when the adjoint
    /// comes back to the loop is not the one it started with).
    pub(crate) fn reassigned_inside(&self, var: VarId, point: StmtId) -> bool {
        let p = &self.path[point];
        self.whole_writes[var].iter().any(|&write| {
            let w = &self.path[write];
            w.len() >= p.len() && w[..p.len()] == p[..]
        })
    }

    /// True if no write of `var` can run after `point`: the value `var`
    /// had at `point` is still there when the adjoint comes back to it.
    pub(crate) fn settled(&self, var: VarId, point: StmtId) -> bool {
        let scope = self.declared_in[var];
        !self.writes[var]
            .iter()
            .any(|&write| self.after(write, point, scope))
    }
}
