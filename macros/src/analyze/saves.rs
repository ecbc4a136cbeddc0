//! Which writes of restored variables keep the value they overwrite.
//!
//! A restored variable's writes save the old value so that the adjoint,
//! walking backwards, can put it back before it reads the variable. But
//! the adjoint only needs the value of element `v[k]` where it reads it,
//! and running backwards, `v[k]` holds the forward value of a point `p`
//! exactly when the first write of `v[k]` after `p` put its old value back.
//! So a write needs to save only if it can be the first write of an element
//! after a read of the adjoint. It cannot when, on every path from every
//! such read to it, the whole variable is written again first: a scalar
//! assigned, or a buffer assigned element by element by a loop over all of
//! its indices (`for j in 0..n { v[j] = .. }` with `v = vec![..; n]`).
//! Typical case: scratch buffers rebuilt in each iteration of a loop and
//! then updated in place (`t[j] = ..` for every `j`, then `t[b] += ..`):
//! only the rebuild saves.
//!
//! A forward dataflow over the structured body: per restored variable,
//! *dirty* if the adjoint may have read it since it was last wholly
//! written. Variables with writes the adjoint undoes by arithmetic (integer
//! counters) keep every save: undoing needs the value after the write.

use crate::analyze::positions::Positions;
use crate::analyze::reverse::Plan;
use crate::ir::{
    AssignOp, Block, ExprKind, Function, LoopId, NewBuffer, Place, Stmt, StmtId, StmtKind, VarId,
    VarKind,
};

/// Per statement: the write saves the value it overwrites.
pub(crate) fn decide(
    function: &Function,
    plan: &Plan,
    reads: &[(VarId, StmtId)],
    positions: &Positions,
) -> Vec<bool> {
    let mut reads_at = vec![Vec::new(); function.stmt_count];
    for &(var, at) in reads {
        reads_at[at].push(var);
    }
    let mut elidable: Vec<bool> = plan.restored.clone();
    function.body.each_stmt(&mut |stmt| {
        if let StmtKind::Assign { place, .. } = &stmt.kind {
            if plan.inverted[stmt.id] {
                elidable[place.var()] = false;
            }
        }
    });
    let declarations = declarations(function);
    let mut covers = vec![Vec::new(); function.stmt_count];
    function.body.each_stmt(&mut |stmt| {
        covers[stmt.id] = covered(stmt, function, plan, positions, &declarations);
    });
    let mut dataflow = Dataflow {
        plan,
        reads_at,
        elidable,
        covers,
        saves: vec![false; function.stmt_count],
    };
    let start = vec![false; function.vars.len()];
    dataflow.block(&function.body, start);
    dataflow.saves
}

type Dirty = Vec<bool>;

/// Where control goes from a block: on (normally), and the states at the
/// `break`s and `continue`s leaving it.
struct Flow {
    normal: Option<Dirty>,
    breaks: Vec<(LoopId, Dirty)>,
    continues: Vec<(LoopId, Dirty)>,
}

struct Dataflow<'a> {
    plan: &'a Plan,
    reads_at: Vec<Vec<VarId>>,
    /// Restored variables whose saves may be left out.
    elidable: Vec<bool>,
    /// Per `for` statement: the buffers it writes wholly.
    covers: Vec<Vec<VarId>>,
    saves: Vec<bool>,
}

fn join(a: &mut Dirty, b: &Dirty) {
    for (x, y) in a.iter_mut().zip(b) {
        *x |= *y;
    }
}

impl Dataflow<'_> {
    fn block(&mut self, block: &Block, mut state: Dirty) -> Flow {
        let mut flow = Flow {
            normal: None,
            breaks: Vec::new(),
            continues: Vec::new(),
        };
        for stmt in &block.stmts {
            let after = self.stmt(stmt, state, &mut flow);
            match after {
                Some(next) => state = next,
                None => return flow,
            }
        }
        flow.normal = Some(state);
        flow
    }

    /// The state after `stmt` (`None` if control does not go on), adding
    /// its jumps to `flow`.
    fn stmt(&mut self, stmt: &Stmt, mut state: Dirty, flow: &mut Flow) -> Option<Dirty> {
        for &var in &self.reads_at[stmt.id] {
            state[var] = true;
        }
        match &stmt.kind {
            StmtKind::Let { var, .. } => state[*var] = false,
            StmtKind::Assign { place, first, .. } => {
                let var = place.var();
                if self.plan.restored[var] && !*first && !self.plan.inverted[stmt.id] {
                    self.saves[stmt.id] |= !self.elidable[var] || state[var];
                }
                if matches!(place, Place::Var(_)) {
                    state[var] = false;
                }
            }
            StmtKind::If { then, els, .. } => {
                let then = self.block(then, state.clone());
                let els = match els {
                    Some(els) => self.block(els, state),
                    None => Flow {
                        normal: Some(state),
                        breaks: Vec::new(),
                        continues: Vec::new(),
                    },
                };
                return self.merge(vec![then, els], flow);
            }
            StmtKind::Match { arms, .. } => {
                let arms = arms
                    .iter()
                    .map(|arm| self.block(&arm.body, state.clone()))
                    .collect();
                return self.merge(arms, flow);
            }
            StmtKind::For { id, body, .. }
            | StmtKind::While { id, body, .. }
            | StmtKind::Loop { id, body } => {
                let endless = matches!(stmt.kind, StmtKind::Loop { .. });
                let mut head = state.clone();
                let mut exits = Vec::new();
                loop {
                    let inner = self.block(body, head.clone());
                    let mut next = state.clone();
                    if let Some(end) = &inner.normal {
                        join(&mut next, end);
                    }
                    exits.clear();
                    for (target, at) in inner.continues {
                        if target == *id {
                            join(&mut next, &at);
                        } else {
                            flow.continues.push((target, at));
                        }
                    }
                    for (target, at) in inner.breaks {
                        if target == *id {
                            exits.push(at);
                        } else {
                            flow.breaks.push((target, at));
                        }
                    }
                    join(&mut next, &head);
                    if next == head {
                        break;
                    }
                    head = next;
                }
                // Left when the condition fails (not for `loop`), or by a
                // `break`.
                let mut after: Option<Dirty> = (!endless).then(|| head.clone());
                for at in exits {
                    match &mut after {
                        Some(after) => join(after, &at),
                        None => after = Some(at),
                    }
                }
                if let Some(after) = &mut after {
                    for &var in &self.covers[stmt.id] {
                        after[var] = false;
                    }
                }
                return after;
            }
            StmtKind::Break { target } => {
                flow.breaks.push((*target, state));
                return None;
            }
            StmtKind::Continue { target } => {
                flow.continues.push((*target, state));
                return None;
            }
            StmtKind::Return => return None,
            StmtKind::Block(block) => {
                let inner = self.block(block, state);
                return self.merge(vec![inner], flow);
            }
            StmtKind::Effect(_) => {}
        }
        Some(state)
    }

    /// Joins the branches' normal ends; their jumps go on in `flow`.
    fn merge(&self, branches: Vec<Flow>, flow: &mut Flow) -> Option<Dirty> {
        let mut after: Option<Dirty> = None;
        for branch in branches {
            flow.breaks.extend(branch.breaks);
            flow.continues.extend(branch.continues);
            if let Some(end) = branch.normal {
                match &mut after {
                    Some(after) => join(after, &end),
                    None => after = Some(end),
                }
            }
        }
        after
    }
}

/// The local buffers the `for` statement `stmt` assigns wholly: `for j in
/// 0..n` whose body, before anything that may leave it, sets `v[j]`, where
/// `n` is `v`'s length (`v.len()`, or the length expression of its `vec!`
/// when that reads only variables never assigned). The loop has no `break`
/// or `return` inside.
fn covered(
    stmt: &Stmt,
    function: &Function,
    plan: &Plan,
    positions: &Positions,
    declarations: &[Option<&crate::ir::Expr>],
) -> Vec<VarId> {
    let StmtKind::For {
        var: Some(index),
        range,
        body,
        ..
    } = &stmt.kind
    else {
        return Vec::new();
    };
    let zero =
        matches!(&range.start.kind, ExprKind::Lit(syn::Lit::Int(i)) if i.base10_digits() == "0");
    if !zero || range.inclusive || plan.exits[stmt.id] {
        return Vec::new();
    }
    let mut jumps = false;
    body.each_stmt(&mut |s| {
        jumps |= matches!(s.kind, StmtKind::Break { .. } | StmtKind::Return);
    });
    if jumps {
        return Vec::new();
    }
    let mut covered = Vec::new();
    for inner in &body.stmts {
        if let StmtKind::Assign {
            place: Place::Elem(var, at),
            op: AssignOp::Set,
            ..
        } = &inner.kind
        {
            let by_index = matches!(at.kind, ExprKind::Var(v) if v == *index);
            let local = function.vars[*var].kind == VarKind::Buffer
                && !matches!(function.vars[*var].origin, crate::ir::Origin::Param(_));
            if by_index && local && whole_length(*var, &range.end, positions, declarations) {
                covered.push(*var);
            }
        }
        if plan.exits[inner.id] {
            break;
        }
    }
    covered
}

/// Per variable: the value of its `let`, if it has one.
pub(crate) fn declarations(function: &Function) -> Vec<Option<&crate::ir::Expr>> {
    let mut declarations = vec![None; function.vars.len()];
    function.body.each_stmt(&mut |stmt| {
        if let StmtKind::Let { var, init } = &stmt.kind {
            declarations[*var] = init.as_ref();
        }
    });
    declarations
}

/// True if `end` is the length of buffer `var`.
pub(crate) fn whole_length(
    var: VarId,
    end: &crate::ir::Expr,
    positions: &Positions,
    declarations: &[Option<&crate::ir::Expr>],
) -> bool {
    if matches!(end.kind, ExprKind::Len(v) if v == var) {
        return true;
    }
    let Some(init) = declarations[var] else {
        return false;
    };
    match &init.kind {
        ExprKind::NewBuffer(NewBuffer::List(elems)) => {
            end.int_literal::<usize>() == Some(elems.len())
        }
        ExprKind::NewBuffer(NewBuffer::Repeat { len, .. }) => same_value(len, end, positions),
        _ => false,
    }
}

/// True if `a` and `b` are the same expression of variables never assigned
/// (so they have the same value wherever both are evaluated).
pub(crate) fn same_value(a: &crate::ir::Expr, b: &crate::ir::Expr, positions: &Positions) -> bool {
    use crate::ir::ExprKind as K;
    match (&a.kind, &b.kind) {
        (K::Lit(x), K::Lit(y)) => {
            quote::ToTokens::to_token_stream(x).to_string()
                == quote::ToTokens::to_token_stream(y).to_string()
        }
        (K::Var(x), K::Var(y)) => x == y && positions.writes[*x].is_empty(),
        (K::Len(x), K::Len(y)) => x == y,
        (K::Arith(o, a1, a2), K::Arith(p, b1, b2)) => {
            o == p && same_value(a1, b1, positions) && same_value(a2, b2, positions)
        }
        (K::Cast(x, tx), K::Cast(y, ty)) => {
            same_value(x, y, positions)
                && quote::ToTokens::to_token_stream(tx).to_string()
                    == quote::ToTokens::to_token_stream(ty).to_string()
        }
        _ => false,
    }
}
