//! New local buffers whose first values are never read.
//!
//! `let mut v = vec![0.0; n];` followed at once by writes that set every
//! element before anything else names `v` — `v[0] = ..`, `v[1] = ..` at the
//! literal indices from 0 up, then a loop `for i in k..n` over the rest of
//! its length whose body sets `v[i]` and names `v` nowhere else — never
//! reads the values it was made with. The forward pass then makes it in
//! spare memory as that memory is (`Record::scratch`), without filling it
//! first: a time-stepping loop over long buffers (ode's stages and slopes)
//! spent a sixth of its gradient on such fills.
//!
//! Only writes that keep nothing for the adjoint qualify (a kept old value
//! would be whatever the memory held), in a loop with no jump (every
//! iteration writes) whose variable the body does not assign.

use crate::analyze::loop_saves::{assigns, mentions};
use crate::analyze::positions::Positions;
use crate::analyze::reverse::Plan;
use crate::analyze::saves::{declarations, whole_length};
use crate::ir::{
    AssignOp, Block, Expr, ExprKind, Function, NewBuffer, Place, Stmt, StmtKind, VarId, VarKind,
};

/// Per statement: a `let` of a new buffer whose elements are all set
/// before any is read.
pub(crate) fn decide(function: &Function, plan: &Plan, positions: &Positions) -> Vec<bool> {
    let mut scratch = vec![false; function.stmt_count];
    let checker = Checker {
        function,
        plan,
        positions,
        declarations: declarations(function),
    };
    let mut blocks = vec![&function.body];
    function
        .body
        .each_stmt(&mut |stmt| blocks.extend(stmt.blocks()));
    for block in blocks {
        for (at, stmt) in block.stmts.iter().enumerate() {
            if let StmtKind::Let {
                var,
                init: Some(init),
            } = &stmt.kind
            {
                scratch[stmt.id] =
                    checker.made_then_overwritten(*var, init, &block.stmts[at + 1..]);
            }
        }
    }
    scratch
}

struct Checker<'a> {
    function: &'a Function,
    plan: &'a Plan,
    positions: &'a Positions,
    declarations: Vec<Option<&'a Expr>>,
}

impl Checker<'_> {
    /// True if `var`, made by `init`, has all its elements set by the
    /// first statements of `after` before any of them reads it.
    fn made_then_overwritten(&self, var: VarId, init: &Expr, after: &[Stmt]) -> bool {
        let info = &self.function.vars[var];
        if info.kind != VarKind::Buffer
            || info.array
            || !matches!(init.kind, ExprKind::NewBuffer(NewBuffer::Repeat { .. }))
        {
            return false;
        }
        // The elements `0..set` are set.
        let mut set = 0;
        for stmt in after {
            if self.plan.exits[stmt.id] {
                return false;
            }
            match &stmt.kind {
                StmtKind::Assign { .. } => {
                    if self.plain_write(stmt, var).and_then(literal) != Some(set) {
                        return false;
                    }
                    set += 1;
                }
                StmtKind::For {
                    var: Some(index),
                    range,
                    body,
                    ..
                } => {
                    return literal(&range.start) == Some(set)
                        && !self.plan.kept_before[stmt.id].contains(&var)
                        && !range.inclusive
                        && !range.reversed
                        && whole_length(var, &range.end, self.positions, &self.declarations)
                        && !body.has_jump()
                        && !assigns(body, *index)
                        && mentions(body, var) == 1
                        && self.sets_each(body, var, *index);
                }
                _ => return false,
            }
        }
        false
    }

    /// True if a statement of `body` itself, before any that may leave it,
    /// sets `var[index]` (keeping nothing).
    fn sets_each(&self, body: &Block, var: VarId, index: VarId) -> bool {
        for stmt in &body.stmts {
            let at = self.plain_write(stmt, var);
            if at.is_some_and(|at| matches!(at.kind, ExprKind::Var(v) if v == index)) {
                return true;
            }
            if self.plan.exits[stmt.id] {
                return false;
            }
        }
        false
    }

    /// The index `at` if `stmt` is `var[at] = value`, where neither the
    /// index nor the value names `var`, and the write keeps nothing.
    fn plain_write<'s>(&self, stmt: &'s Stmt, var: VarId) -> Option<&'s Expr> {
        let StmtKind::Assign {
            place: Place::Elem(buffer, at),
            op: AssignOp::Set,
            value,
            ..
        } = &stmt.kind
        else {
            return None;
        };
        let plain =
            *buffer == var && !self.plan.saves[stmt.id] && !names(at, var) && !names(value, var);
        plain.then_some(&**at)
    }
}

/// The value of an integer literal.
fn literal(expr: &Expr) -> Option<usize> {
    match &expr.kind {
        ExprKind::Lit(syn::Lit::Int(i)) => i.base10_parse().ok(),
        _ => None,
    }
}

/// True if `expr` or a subexpression names `var`.
fn names(expr: &Expr, var: VarId) -> bool {
    let mut found = false;
    expr.each_subexpr(&mut |e| e.each_named(&mut |v| found |= v == var));
    found
}
