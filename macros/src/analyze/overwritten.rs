//! New local buffers whose first values are never read.
//!
//! `let mut v = vec![0.0; n];` followed at once by writes that set every
//! element before anything else names `v` — `v[0] = ..`, `v[1] = ..` at the
//! literal indices from 0 up, then a loop `for i in k..n` over the rest of
//! its length whose body sets `v[i]` and names `v` nowhere else, or a
//! buffer of rows, `vec![0.0; C * n]` (`C` a literal), set by
//! `for i in 0..n { for j in 0..C { v[C * i + j] = .. } }` — never reads
//! the values it was made with. The forward pass then makes it in
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
use crate::analyze::saves::{declarations, same_value, whole_length};
use crate::ir::{
    ArithOp, AssignOp, Block, Expr, ExprKind, Function, NewBuffer, Place, Stmt, StmtKind, VarId,
    VarKind,
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
                    if self.plain_write(stmt, var).and_then(Expr::int_literal) != Some(set) {
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
                    let every = |at: &Expr| matches!(at.kind, ExprKind::Var(v) if v == *index);
                    return range.start.int_literal() == Some(set)
                        && self.loop_sets_once(stmt, var)
                        && (whole_length(var, &range.end, self.positions, &self.declarations)
                            && self.sets_each(body, var, every)
                            || set == 0 && self.sets_rows(body, var, *index, &range.end));
                }
                _ => return false,
            }
        }
        false
    }

    /// True if `stmt` is a loop `for i in ..` (forwards, over a half-open
    /// range, with no jump) whose body names `var` once and leaves `i` and
    /// `var`'s old values alone.
    fn loop_sets_once(&self, stmt: &Stmt, var: VarId) -> bool {
        let StmtKind::For {
            var: Some(index),
            range,
            body,
            ..
        } = &stmt.kind
        else {
            return false;
        };
        !self.plan.kept_before[stmt.id].contains(&var)
            && !range.inclusive
            && !range.reversed
            && !body.has_jump()
            && !assigns(body, *index)
            && mentions(body, var) == 1
    }

    /// True if `var` is made `rows * C` long (`C` a literal, `rows` the
    /// same value as `rows_end`) and a statement of `body` itself, before
    /// any that may leave it, is `for j in 0..C` setting `var[C * row + j]`
    /// (so the loop over `row in 0..rows` sets every element).
    fn sets_rows(&self, body: &Block, var: VarId, row: VarId, rows_end: &Expr) -> bool {
        let Some(ExprKind::NewBuffer(NewBuffer::Repeat { len, .. })) =
            self.declarations[var].map(|init| &init.kind)
        else {
            return false;
        };
        let Some(width) = row_count(len, rows_end, self.positions) else {
            return false;
        };
        for stmt in &body.stmts {
            if let StmtKind::For {
                var: Some(column),
                range,
                body: inner,
                ..
            } = &stmt.kind
            {
                if range.start.int_literal() == Some(0)
                    && range.end.int_literal() == Some(width)
                    && *column != row
                    && self.loop_sets_once(stmt, var)
                    && !assigns(inner, row)
                    && self.sets_each(inner, var, |at| row_major(at, row, *column) == Some(width))
                {
                    return true;
                }
            }
            if self.plan.exits[stmt.id] {
                return false;
            }
        }
        false
    }

    /// True if a statement of `body` itself, before any that may leave it,
    /// sets `var[at]` with `every(at)` (keeping nothing).
    fn sets_each(&self, body: &Block, var: VarId, every: impl Fn(&Expr) -> bool) -> bool {
        for stmt in &body.stmts {
            if self.plain_write(stmt, var).is_some_and(&every) {
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

/// `C` if `len` is `C * rows` or `rows * C`, `C` an integer literal and
/// `rows` the same value as `rows_end`.
fn row_count(len: &Expr, rows_end: &Expr, positions: &Positions) -> Option<usize> {
    let ExprKind::Arith(ArithOp::Mul, a, b) = &len.kind else {
        return None;
    };
    [(a, b), (b, a)].into_iter().find_map(|(width, rows)| {
        width
            .int_literal()
            .filter(|_| same_value(rows, rows_end, positions))
    })
}

/// `C` if `at` is `C * row + column` (the factors and terms in either
/// order), `C` an integer literal.
fn row_major(at: &Expr, row: VarId, column: VarId) -> Option<usize> {
    let is = |e: &Expr, var: VarId| matches!(e.kind, ExprKind::Var(v) if v == var);
    let ExprKind::Arith(ArithOp::Add, a, b) = &at.kind else {
        return None;
    };
    let (scaled, _) = [(a, b), (b, a)]
        .into_iter()
        .find(|(_, last)| is(last, column))?;
    let ExprKind::Arith(ArithOp::Mul, x, y) = &scaled.kind else {
        return None;
    };
    [(x, y), (y, x)]
        .into_iter()
        .find_map(|(width, r)| width.int_literal().filter(|_| is(r, row)))
}

/// True if `expr` or a subexpression names `var`.
fn names(expr: &Expr, var: VarId) -> bool {
    let mut found = false;
    expr.each_subexpr(&mut |e| e.each_named(&mut |v| found |= v == var));
    found
}
