//! What the adjoint needs from the forward pass, and how it gets each
//! thing: the plan both passes are emitted from.
//!
//! * Usefulness: an active variable is useful if its value flows into the
//!   result through arithmetic; only useful statements have adjoint code.
//! * Reads: the values the adjoint reads (operands of nonlinear
//!   operations, indices, call arguments, conditions and bounds it
//!   evaluates again), each at the statement that reads it.
//! * A read is *settled* if no write of the variable can run after that
//!   statement (positions.rs): the value is still there. Otherwise the
//!   variable is *restored*: every write saves the old value (or, for an
//!   integer `+= k`, the adjoint undoes it), and the adjoint puts it back
//!   at the mirrored point.
//! * A block's variables the adjoint reads are *established* when the
//!   adjoint enters the block: evaluated again (a `let` of settled values,
//!   no call), or pushed by the forward pass when the block ends and popped.
//! * Control flow: an `if`'s decision is evaluated again if its condition
//!   is settled, else kept; a `match` keeps its arm; a `for` over a range
//!   with settled bounds and no early exit runs backwards over the same
//!   range, other loops keep their trip count (and a `for` loop whose body
//!   changes its bounds, its bounds, where the adjoint reads its variable);
//!   a block that can be left early keeps where it was left.

use crate::analyze::keep::Kept;
use crate::analyze::positions::Positions;
use crate::analyze::types::Ty;
use crate::ir::{
    ArithOp, AssignOp, Block, BufferRef, CallArg, Expr, ExprKind, Function, LoopId, NewBuffer,
    Origin, Place, Primitive, Stmt, StmtId, StmtKind, Unsupported, VarId, VarKind,
};

/// How the adjoint has a variable's value (or a buffer's length).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Establish {
    /// Not needed.
    None,
    /// Always there: a parameter, a loop variable.
    Available,
    /// Its `let` is evaluated again.
    Recompute,
    /// Pushed when its block ends, popped when the adjoint enters it.
    Pop,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LoopPlan {
    /// A `for` over a range the adjoint evaluates again: it runs backwards.
    Reversed,
    /// The trip count is kept; the loop variable, if the adjoint uses it,
    /// is the range's value at each count.
    Counted,
    /// `#[checkpoint]`: the forward pass keeps the state at the start of
    /// every segment of iterations and the trip count; the adjoint runs
    /// each segment forward again (keeping what its iterations keep), then
    /// backwards.
    Checkpointed,
}

/// The plan of the compiled passes.
pub(crate) struct Plan {
    /// Per variable: active, and its value flows into the result.
    pub useful: Vec<bool>,
    pub establish: Vec<Establish>,
    /// Per local buffer whose length the adjoint reads without its values.
    pub establish_len: Vec<Establish>,
    pub restored: Vec<bool>,
    /// Per statement: a write that keeps the value it overwrites for the
    /// adjoint (of a restored variable, unless undone by arithmetic or not
    /// needed: `saves.rs` decides, after the rest of the plan).
    pub saves: Vec<bool>,
    /// Per statement (`for` loops): buffers whose elements the loop
    /// overwrites, kept in one copy before it (`loop_saves.rs`).
    pub kept_before: Vec<Vec<VarId>>,
    /// Per statement (`let` of a new buffer): every element is set before
    /// any is read, so the forward pass makes it without filling it
    /// (`overwritten.rs`).
    pub scratch: Vec<bool>,
    /// Per statement: an integer `+= k`/`-= k` the adjoint undoes.
    pub inverted: Vec<bool>,
    /// Per statement (`if`): the decision is kept (else evaluated again).
    pub push_decision: Vec<bool>,
    pub loops: Vec<LoopPlan>,
    /// Per statement: it may leave its block early.
    pub exits: Vec<bool>,
    /// Per statement: the adjoint has something to do for it.
    pub has_reverse: Vec<bool>,
    /// Per block: where it was left is kept.
    pub codes: Vec<bool>,
    /// Per loop: the adjoint needs the loop variable.
    pub index_needed: Vec<bool>,
    /// Per loop (a counted `for` whose variable the adjoint needs): its
    /// bounds, which its body changes, are kept with its trip count.
    pub bounds_kept: Vec<bool>,
    /// Per local buffer: moved into another variable by the last statement
    /// of its block (`moves.rs`), where the adjoint makes its adjoint, by
    /// moving, unless the adjoint has its values or keeps its length.
    pub moved: Vec<bool>,
    /// Per local buffer: nothing moves it (`moves.rs`), so the forward
    /// pass gives its memory back where its block ends, unless it keeps it.
    pub never_moved: Vec<bool>,
    /// Per statement (an element set): the adjoint leaves the element's
    /// adjoint as it read it, as nothing reads it again (`resets.rs`).
    pub no_reset: Vec<bool>,
}

impl Plan {
    /// True if the adjoint reads the length of local buffer `var` from a
    /// local of its own (its values are not there), which the reverse of
    /// each whole assignment sets back to the length before it.
    pub(crate) fn tracks_length(&self, function: &Function, var: VarId) -> bool {
        let info = &function.vars[var];
        info.kind == VarKind::Buffer
            && !matches!(info.origin, Origin::Param(_))
            && self.establish[var] == Establish::None
            && self.establish_len[var] != Establish::None
    }

    pub(crate) fn needed(&self, var: VarId) -> bool {
        self.establish[var] != Establish::None
    }
}

/// A value the adjoint reads: `var` at statement `at` (`length`: only the
/// length of a buffer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Read {
    var: VarId,
    at: StmtId,
    length: bool,
}

struct Planner<'a> {
    function: &'a Function,
    active: &'a [bool],
    positions: &'a Positions,
    types: &'a [Ty],
    plan: Plan,
    reads: Vec<Read>,
    forced: Vec<bool>,
    /// The statement declaring each variable (its `let`, or the loop).
    declaration: Vec<Option<StmtId>>,
    stmts: Vec<Option<&'a Stmt>>,
}

/// The plan, and the values the adjoint reads: (variable, the statement
/// before which it reads it).
pub(crate) fn plan(
    function: &Function,
    active: &[bool],
    positions: &Positions,
    types: &[Ty],
) -> Result<(Plan, Vec<(VarId, StmtId)>), Unsupported> {
    let vars = function.vars.len();
    let stmts = function.stmt_count;
    let mut planner = Planner {
        function,
        active,
        positions,
        types,
        plan: Plan {
            useful: vec![false; vars],
            establish: vec![Establish::None; vars],
            establish_len: vec![Establish::None; vars],
            restored: vec![false; vars],
            saves: vec![false; stmts],
            kept_before: vec![Vec::new(); stmts],
            scratch: vec![false; stmts],
            inverted: vec![false; stmts],
            push_decision: vec![false; stmts],
            loops: vec![LoopPlan::Reversed; function.loops.len()],
            exits: vec![false; stmts],
            has_reverse: vec![false; stmts],
            codes: vec![false; function.block_count],
            index_needed: vec![false; function.loops.len()],
            bounds_kept: vec![false; function.loops.len()],
            moved: Vec::new(),
            never_moved: super::moves::never_moved(function),
            no_reset: vec![false; stmts],
        },
        reads: Vec::new(),
        forced: vec![false; vars],
        declaration: vec![None; vars],
        stmts: vec![None; stmts],
    };
    function.body.each_stmt(&mut |stmt| {
        planner.stmts[stmt.id] = Some(stmt);
        match &stmt.kind {
            StmtKind::Let { var, .. } => planner.declaration[*var] = Some(stmt.id),
            StmtKind::For { var: Some(var), .. } => planner.declaration[*var] = Some(stmt.id),
            _ => {}
        }
    });
    planner.usefulness();
    planner.plan.moved = super::moves::moved_at_end(function, &planner.plan.useful);
    planner.exits();
    planner.statement_reads();
    planner.settle()?;
    // Restorations make statements adjoint work, whose reads may need
    // values (and restorations) in turn: to a fixed point.
    loop {
        let before = planner.reads.len();
        planner.restore()?;
        if planner.reads.len() == before {
            break;
        }
    }
    // A buffer whose values the adjoint has has its length too.
    for var in 0..vars {
        if planner.plan.establish[var] != Establish::None {
            planner.plan.establish_len[var] = Establish::None;
        }
    }
    let value_reads: Vec<(VarId, StmtId)> = planner
        .reads
        .iter()
        .filter(|r| !r.length)
        .map(|r| (r.var, r.at))
        .collect();
    Ok((planner.plan, value_reads))
}

impl<'a> Planner<'a> {
    /// True if some statement assigns buffer `var` whole (`v = w.to_vec();`).
    fn assigned_whole(&self, var: VarId) -> bool {
        let mut found = false;
        self.function.body.each_stmt(&mut |stmt| {
            found |= matches!(
                &stmt.kind,
                StmtKind::Assign { place: Place::Var(v), .. } if *v == var
            );
        });
        found
    }

    fn stmt(&self, id: StmtId) -> &'a Stmt {
        self.stmts[id].expect("every statement id is a statement")
    }

    /// Backwards from the result: the active variables whose values flow
    /// into it.
    fn usefulness(&mut self) {
        let useful = &mut self.plan.useful;
        useful[self.function.result] = true;
        // A result of a user type: its fields.
        if let Some(value) = &self.function.result_struct {
            for (_, var) in value.leaves() {
                useful[var] = self.active[var];
            }
        }
        loop {
            let mut changed = false;
            self.function.body.each_stmt(&mut |stmt| {
                let (target, value) = match &stmt.kind {
                    StmtKind::Let {
                        var,
                        init: Some(init),
                    } => (*var, init),
                    StmtKind::Assign { place, value, .. } => (place.var(), value),
                    _ => return,
                };
                if !useful[target] {
                    return;
                }
                active_operands(value, self.active, &mut |var| {
                    if !useful[var] {
                        useful[var] = true;
                        changed = true;
                    }
                });
            });
            if !changed {
                break;
            }
        }
    }

    /// Which statements and blocks can be left early.
    fn exits(&mut self) {
        let function = self.function;
        let mut exit_stmts = Vec::new();
        function.body.each_stmt(&mut |stmt| {
            let target = match &stmt.kind {
                StmtKind::Break { target } | StmtKind::Continue { target } => Some(*target),
                StmtKind::Return => None,
                _ => return,
            };
            exit_stmts.push((stmt.id, target));
        });
        for (exit, target) in exit_stmts {
            let target_stmt = target.map(|t| self.loop_stmt(t));
            for step in self.positions.path[exit].iter().rev() {
                if Some(step.stmt) == target_stmt {
                    break;
                }
                self.plan.exits[step.stmt] = true;
            }
            if let Some(target) = target {
                if matches!(self.stmt(exit).kind, StmtKind::Break { .. }) {
                    self.plan.loops[target] = LoopPlan::Counted;
                }
            }
        }
        // A loop left by an exit of its body that goes further counts too.
        for (id, plan) in self.plan.loops.iter_mut().enumerate() {
            let stmt = self.stmts.iter().flatten().find(|s| loop_id(s) == Some(id));
            if let Some(stmt) = stmt {
                if self.plan.exits[stmt.id] || !matches!(stmt.kind, StmtKind::For { .. }) {
                    *plan = LoopPlan::Counted;
                }
            }
        }
    }

    fn loop_stmt(&self, id: LoopId) -> StmtId {
        self.stmts
            .iter()
            .flatten()
            .find(|s| loop_id(s) == Some(id))
            .map(|s| s.id)
            .expect("every loop has its statement")
    }

    /// The reads of the adjoint code of each useful statement; a
    /// checkpointed loop with adjoint work reads (to run its iterations
    /// again) every variable from outside that its body uses.
    fn statement_reads(&mut self) {
        let function = self.function;
        function.body.each_stmt(&mut |stmt| self.reads_of(stmt));
        function.body.each_stmt(&mut |stmt| {
            let StmtKind::For { id, body, .. } = &stmt.kind else {
                return;
            };
            if !function.loops[*id].checkpoint || !self.has_useful(body) {
                return;
            }
            for var in outside_uses(body) {
                // The loop's own variable is there; the result is only
                // assigned on the way out (`return`).
                if Some(var) == loop_var(stmt)
                    || function.vars[var].origin == crate::ir::Origin::Result
                {
                    continue;
                }
                self.reads.push(Read {
                    var,
                    at: stmt.id,
                    length: false,
                });
            }
        });
    }

    /// True if `block` assigns a useful variable.
    fn has_useful(&self, block: &Block) -> bool {
        let mut useful = false;
        block.each_stmt(&mut |stmt| match &stmt.kind {
            StmtKind::Let { var, .. } => useful |= self.plan.useful[*var],
            StmtKind::Assign { place, .. } => useful |= self.plan.useful[place.var()],
            _ => {}
        });
        useful
    }

    fn reads_of(&mut self, stmt: &Stmt) {
        let at = stmt.id;
        if let StmtKind::Let { var, .. } = &stmt.kind {
            // A useful buffer's adjoint is allocated with its length
            // (one moved at its block's end takes its adjoint there).
            if self.plan.useful[*var]
                && self.function.vars[*var].kind == VarKind::Buffer
                && !self.plan.moved[*var]
            {
                self.reads.push(Read {
                    var: *var,
                    at,
                    length: true,
                });
            }
        }
        match &stmt.kind {
            StmtKind::Let {
                var,
                init: Some(init),
            } if self.plan.useful[*var] => self.value_reads(init, at),
            StmtKind::Assign {
                place, op, value, ..
            } if self.plan.useful[place.var()] => {
                if let Place::Elem(_, index) = place {
                    self.all(index, at);
                }
                match op {
                    AssignOp::Set | AssignOp::Add | AssignOp::Sub => self.value_reads(value, at),
                    AssignOp::Mul | AssignOp::Div | AssignOp::Rem => {
                        // The old value of the target is read: restored.
                        self.forced[place.var()] = true;
                        self.reads.push(Read {
                            var: place.var(),
                            at,
                            length: false,
                        });
                        self.all(value, at);
                    }
                }
            }
            _ => {}
        }
    }

    /// The reads of the adjoint of the value of a `let` or an assignment
    /// (a call and a new buffer are whole values, not expressions).
    fn value_reads(&mut self, value: &Expr, at: StmtId) {
        match &value.kind {
            ExprKind::Call(call) => {
                for arg in &call.args {
                    match arg {
                        CallArg::Value(value) | CallArg::Plain(value) => self.all(value, at),
                        // (The adjoint builds the twin again from the fields.)
                        CallArg::Literal { leaves, .. } => {
                            for leaf in leaves {
                                self.all(leaf, at);
                            }
                        }
                        CallArg::Buffer(buffer) => self.buffer(buffer, at, true),
                        // (A function parameter; a closure's captures are
                        // arguments of their own.)
                        CallArg::Function(_) => {}
                        CallArg::Struct { var, index, .. } => {
                            self.reads.push(Read {
                                var: *var,
                                at,
                                length: false,
                            });
                            if let Some(index) = index {
                                self.all(index, at);
                            }
                        }
                    }
                }
            }
            ExprKind::NewBuffer(NewBuffer::Repeat { elem, .. }) => self.adjoint(elem, at),
            ExprKind::NewBuffer(NewBuffer::List(elems)) => {
                for elem in elems {
                    self.adjoint(elem, at)
                }
            }
            _ => {
                let kept = crate::analyze::keep::kept_partials(value, self.active);
                self.adjoint_kept(value, at, &kept)
            }
        }
    }

    /// Every variable `expr` reads, at `at`.
    fn all(&mut self, expr: &Expr, at: StmtId) {
        expr.each_subexpr(&mut |e| match &e.kind {
            ExprKind::Var(var) => self.reads.push(Read {
                var: *var,
                at,
                length: false,
            }),
            ExprKind::Elem(var, _) => self.reads.push(Read {
                var: *var,
                at,
                length: false,
            }),
            ExprKind::Len(var) => self.reads.push(Read {
                var: *var,
                at,
                length: true,
            }),
            ExprKind::Field { base, .. } => self.reads.push(Read {
                var: *base,
                at,
                length: false,
            }),
            ExprKind::Opaque { reads, .. } => {
                for &var in reads {
                    self.reads.push(Read {
                        var,
                        at,
                        length: false,
                    })
                }
            }
            ExprKind::Primitive(_, buffers) => {
                for buffer in buffers {
                    self.reads.push(Read {
                        var: buffer.var,
                        at,
                        length: false,
                    })
                }
            }
            _ => {}
        });
        // Bounds of buffer ranges inside are subexpressions: visited above.
    }

    /// A buffer argument: its values (`values`) and the bounds of its range.
    fn buffer(&mut self, buffer: &BufferRef, at: StmtId, values: bool) {
        self.reads.push(Read {
            var: buffer.var,
            at,
            length: !values,
        });
        if let Some((start, end)) = &buffer.range {
            for bound in [start, end].into_iter().flatten() {
                self.all(bound, at);
            }
        }
    }

    /// The reads of the adjoint of the active expression `expr`.
    fn adjoint(&mut self, expr: &Expr, at: StmtId) {
        self.adjoint_kept(expr, at, &[]);
    }

    /// The reads of the adjoint of `expr` when the forward pass keeps what
    /// `kept` says of its math nodes (their arguments are not read for
    /// them).
    fn adjoint_kept(&mut self, expr: &Expr, at: StmtId, kept: &[Kept]) {
        if !crate::analyze::activity::is_active(expr, self.active) {
            return;
        }
        match &expr.kind {
            ExprKind::Var(_) | ExprKind::Lit(_) | ExprKind::Opaque { .. } | ExprKind::Len(_) => {}
            // A field of a call's result: its adjoint goes into the result's
            // adjoint twin, shaped like the result (which the adjoint has).
            ExprKind::Field { .. } => self.all(expr, at),
            ExprKind::Elem(_, index) => self.all(index, at),
            ExprKind::Neg(a) | ExprKind::Cast(a, _) => self.adjoint_kept(a, at, kept),
            ExprKind::Arith(ArithOp::Add | ArithOp::Sub, a, b) => {
                self.adjoint_kept(a, at, kept);
                self.adjoint_kept(b, at, kept);
            }
            ExprKind::Arith(ArithOp::Mul, a, b) => {
                // ∂(a·b)/∂a = b, ∂(a·b)/∂b = a.
                if crate::analyze::activity::is_active(a, self.active) {
                    self.values_kept(b, at, kept);
                    self.adjoint_kept(a, at, kept);
                }
                if crate::analyze::activity::is_active(b, self.active) {
                    self.values_kept(a, at, kept);
                    self.adjoint_kept(b, at, kept);
                }
            }
            ExprKind::Arith(ArithOp::Div, a, b) => {
                // ∂(a/b)/∂a = 1/b, ∂(a/b)/∂b = -(a/b)/b.
                self.values_kept(b, at, kept);
                self.adjoint_kept(a, at, kept);
                if crate::analyze::activity::is_active(b, self.active) {
                    self.values_kept(a, at, kept);
                    self.adjoint_kept(b, at, kept);
                }
            }
            ExprKind::Arith(_, a, b) => {
                self.values_kept(a, at, kept);
                self.values_kept(b, at, kept);
                self.adjoint_kept(a, at, kept);
                self.adjoint_kept(b, at, kept);
            }
            ExprKind::Math { math, args, .. } => {
                if math.rule == crate::ir::math::Rule::Constant {
                    return;
                }
                // Kept partials read no argument; a rule reads them all.
                let partials_kept = crate::analyze::keep::kept_node(expr, kept).is_some();
                for (i, arg) in args.iter().enumerate() {
                    if !partials_kept {
                        self.values_kept(arg, at, kept);
                    }
                    if math.real_arg(i) {
                        self.adjoint_kept(arg, at, kept);
                    }
                }
            }
            ExprKind::Primitive(primitive, buffers) => {
                let values = *primitive != Primitive::Sum;
                for buffer in buffers {
                    self.buffer(buffer, at, values);
                }
            }
            ExprKind::Not(_) | ExprKind::Compare(..) | ExprKind::Logic(..) => {}
            ExprKind::Call(_) | ExprKind::NewBuffer(_) => {
                unreachable!("calls and new buffers are the whole value of a `let`")
            }
        }
    }

    /// The reads of the value of `expr` when the values of the math nodes
    /// `kept` says are kept are popped, not computed.
    fn values_kept(&mut self, expr: &Expr, at: StmtId, kept: &[Kept]) {
        if crate::analyze::keep::kept_node(expr, kept).is_some_and(|k| k.value) {
            return;
        }
        if kept.is_empty() {
            return self.all(expr, at);
        }
        match &expr.kind {
            ExprKind::Var(_)
            | ExprKind::Elem(..)
            | ExprKind::Len(_)
            | ExprKind::Opaque { .. }
            | ExprKind::Primitive(..) => {
                // Leaves (an element's index is read in full).
                self.all(expr, at);
            }
            _ => {
                for child in expr.children() {
                    self.values_kept(child, at, kept);
                }
            }
        }
    }

    /// Decides, to a fixed point, how the adjoint has every value it reads,
    /// and which decisions and trip counts the forward pass keeps.
    fn settle(&mut self) -> Result<(), Unsupported> {
        let mut done = 0;
        loop {
            // New reads since the last round decide new establishments.
            while done < self.reads.len() {
                let read = self.reads[done];
                done += 1;
                self.establish(read)?;
            }
            let before = self.reads.len();
            self.control_flow()?;
            if self.reads.len() == before {
                break;
            }
        }
        Ok(())
    }

    fn establish(&mut self, read: Read) -> Result<(), Unsupported> {
        let var = read.var;
        let info = &self.function.vars[var];
        if read.length {
            if matches!(info.origin, Origin::Param(_))
                || self.plan.establish[var] != Establish::None
            {
                return Ok(());
            }
            if self.plan.establish_len[var] != Establish::None {
                return Ok(());
            }
            let declaration = self.declaration[var].map(|d| self.stmt(d));
            let length = declaration.and_then(|d| match &d.kind {
                StmtKind::Let {
                    init: Some(init), ..
                } => match &init.kind {
                    ExprKind::NewBuffer(NewBuffer::List(_)) => Some(None),
                    ExprKind::NewBuffer(NewBuffer::Repeat { len, .. }) => Some(Some(&**len)),
                    _ => None,
                },
                _ => None,
            });
            let at = declaration.map(|d| d.id);
            // A buffer assigned whole may change length: the adjoint starts
            // from the last one, kept.
            let length = length.filter(|_| !self.assigned_whole(var));
            self.plan.establish_len[var] = match (length, at) {
                (Some(None), _) => Establish::Recompute,
                (Some(Some(len)), Some(at)) if self.settled_expr(len, at) && !len.has_call() => {
                    self.all(len, at);
                    Establish::Recompute
                }
                _ => Establish::Pop,
            };
            return Ok(());
        }
        if self.plan.establish[var] != Establish::None {
            return Ok(());
        }
        self.plan.establish[var] = match info.origin {
            Origin::Param(_) | Origin::LoopIndex | Origin::Field(_) => Establish::Available,
            Origin::Pattern => {
                return Err(Unsupported::new(
                    info.span,
                    format!(
                        "the derivative reads `{}`, a name bound by a `match` pattern: not on the compiled path yet",
                        info.name
                    ),
                ))
            }
            Origin::Result => Establish::Pop,
            // A local of a user type a call returned: the call's forward
            // pass runs again (the adjoint needs the value's shape, and its
            // fields).
            Origin::Local if info.kind == VarKind::Struct => {
                let declaration = self.declaration[var].map(|d| self.stmt(d));
                match declaration.map(|d| (&d.kind, d.id)) {
                    Some((
                        StmtKind::Let {
                            init: Some(init), ..
                        },
                        at,
                    )) if self.settled_expr(init, at) => {
                        self.value_reads(init, at);
                        Establish::Recompute
                    }
                    _ => {
                        return Err(Unsupported::new(
                            info.span,
                            format!(
                                "the derivative needs `{}` again, and the arguments of the call that made it change afterwards: not on the compiled path yet",
                                info.name
                            ),
                        ))
                    }
                }
            }
            Origin::Local | Origin::Temp => {
                let declaration = self.declaration[var].map(|d| self.stmt(d));
                let recompute = declaration.and_then(|d| match &d.kind {
                    StmtKind::Let {
                        init: Some(init), ..
                    } if self.positions.writes[var].is_empty()
                        && !init.has_call()
                        && !(info.kind == VarKind::Scalar
                            && self.active[var]
                            && crate::analyze::keep::calls_expensive(init, self.active))
                        && self.settled_expr(init, d.id) =>
                    {
                        Some((init, d.id))
                    }
                    _ => None,
                });
                match recompute {
                    Some((init, at)) => {
                        self.all(init, at);
                        Establish::Recompute
                    }
                    None => {
                        self.pushable(var)?;
                        Establish::Pop
                    }
                }
            }
        };
        Ok(())
    }

    /// True if every variable `expr` reads is settled at `at` (lengths of
    /// buffers never change).
    fn settled_expr(&self, expr: &Expr, at: StmtId) -> bool {
        let mut settled = true;
        expr.each_subexpr(&mut |e| match &e.kind {
            ExprKind::Var(var) | ExprKind::Elem(var, _) => {
                settled &= self.positions.settled(*var, at)
            }
            // A length is restored with its buffer by the reverse of the
            // whole assignments after `at`, not of those inside it.
            ExprKind::Len(var) => settled &= !self.positions.reassigned_inside(*var, at),
            ExprKind::Opaque { reads, .. } => {
                settled &= reads.iter().all(|v| self.positions.settled(*v, at))
            }
            ExprKind::Primitive(_, buffers) => {
                settled &= buffers.iter().all(|b| self.positions.settled(b.var, at))
            }
            ExprKind::Field { base, .. } => settled &= self.positions.settled(*base, at),
            ExprKind::Call(call) => {
                for arg in &call.args {
                    match arg {
                        CallArg::Buffer(buffer) => {
                            settled &= self.positions.settled(buffer.var, at)
                        }
                        CallArg::Struct { var, .. } => settled &= self.positions.settled(*var, at),
                        // (The fields are variables read, as values are.)
                        CallArg::Value(_)
                        | CallArg::Plain(_)
                        | CallArg::Literal { .. }
                        | CallArg::Function(_) => {}
                    }
                }
            }
            _ => {}
        });
        settled
    }

    /// Fails unless the adjoint can name the type of `var`'s values.
    fn pushable(&self, var: VarId) -> Result<(), Unsupported> {
        if self.active[var] || self.function.vars[var].kind == VarKind::Buffer {
            return Ok(());
        }
        match &self.types[var] {
            Ty::Real | Ty::Bool | Ty::Named(_) => Ok(()),
            _ => {
                let info = &self.function.vars[var];
                // (A value the macro named has no `let` to annotate.)
                let message = if info.named_by_macro() {
                    "the derivative needs this value after the variables it reads change, and its type is not written: compute it in a `let` with its type (`let n: usize = ..;`)".to_string()
                } else {
                    format!(
                        "the derivative needs the value of `{}` after it changes, and its type is not written: annotate it (`let {}: usize = ..`)",
                        info.name, info.name
                    )
                };
                Err(Unsupported::new(info.span, message))
            }
        }
    }

    /// Decisions, trip counts and exit codes, given what the adjoint does.
    fn control_flow(&mut self) -> Result<(), Unsupported> {
        let function = self.function;
        self.plan.has_reverse = vec![false; function.stmt_count];
        let mut has_reverse = std::mem::take(&mut self.plan.has_reverse);
        self.block_reverse(&function.body, &mut has_reverse);
        self.plan.has_reverse = has_reverse;
        let mut new_reads = Vec::new();
        let mut problem = None;
        function.body.each_stmt(&mut |stmt| {
            if !self.plan.has_reverse[stmt.id] {
                return;
            }
            match &stmt.kind {
                StmtKind::If { cond, .. } => {
                    let settled = self.settled_expr(cond, stmt.id);
                    self.plan.push_decision[stmt.id] = !settled;
                    if settled {
                        new_reads.push((cond, stmt.id));
                    }
                }
                StmtKind::For { id, var, range, .. } if function.loops[*id].checkpoint => {
                    // Run again segment by segment: the range again, the
                    // loop variable at any iteration.
                    let settled = self.settled_expr(&range.start, stmt.id)
                        && self.settled_expr(&range.end, stmt.id);
                    if !settled {
                        problem.get_or_insert_with(|| Unsupported::new(
                            stmt.span,
                            "a checkpointed loop whose bounds change inside it is not on the compiled path",
                        ));
                        return;
                    }
                    self.plan.loops[*id] = LoopPlan::Checkpointed;
                    self.plan.index_needed[*id] = var.is_some_and(|v| self.plan.needed(v));
                    new_reads.push((&range.start, stmt.id));
                    new_reads.push((&range.end, stmt.id));
                }
                StmtKind::For { id, var, range, .. } => {
                    let settled = self.settled_expr(&range.start, stmt.id)
                        && self.settled_expr(&range.end, stmt.id);
                    if !settled {
                        self.plan.loops[*id] = LoopPlan::Counted;
                    }
                    let index_needed = var.is_some_and(|v| self.plan.needed(v));
                    self.plan.index_needed[*id] = index_needed;
                    if self.plan.loops[*id] == LoopPlan::Reversed || index_needed {
                        // The bounds kept (with the loop variable's type
                        // known, to push them as).
                        if !settled && var.is_some_and(|v| matches!(self.types[v], Ty::Named(_))) {
                            self.plan.bounds_kept[*id] = true;
                            return;
                        }
                        if !settled {
                            problem.get_or_insert_with(|| Unsupported::new(
                                stmt.span,
                                "the derivative needs this loop's variable, and the loop's bounds change inside it: not on the compiled path yet",
                            ));
                            return;
                        }
                        new_reads.push((&range.start, stmt.id));
                        new_reads.push((&range.end, stmt.id));
                    }
                }
                _ => {}
            }
        });
        if let Some(problem) = problem {
            return Err(problem);
        }
        for (expr, at) in new_reads {
            let before = self.reads.len();
            self.all(expr, at);
            // Keep only reads not already recorded.
            let fresh: Vec<Read> = self.reads.drain(before..).collect();
            for read in fresh {
                if !self.reads.contains(&read) {
                    self.reads.push(read);
                }
            }
        }
        // Blocks that can be left early and have adjoint work keep codes.
        let mut codes = vec![false; function.block_count];
        self.block_codes(&function.body, &mut codes);
        self.plan.codes = codes;
        Ok(())
    }

    fn block_codes(&self, block: &Block, codes: &mut Vec<bool>) {
        let work = self.block_has_reverse(block);
        // Where the block was left is kept if it can be left at two places
        // or more: not when its only exit is a jump that ends it.
        let exits: Vec<usize> = (0..block.stmts.len())
            .filter(|&k| self.plan.exits[block.stmts[k].id])
            .collect();
        let ends_in_its_only_jump = exits.len() == 1
            && exits[0] + 1 == block.stmts.len()
            && matches!(
                block.stmts[exits[0]].kind,
                StmtKind::Break { .. } | StmtKind::Continue { .. } | StmtKind::Return
            );
        codes[block.id] = work && !exits.is_empty() && !ends_in_its_only_jump;
        for stmt in &block.stmts {
            for inner in stmt.blocks() {
                self.block_codes(inner, codes);
            }
        }
    }

    /// True if the adjoint does something for `block`: a statement with
    /// adjoint code, or a variable to pop.
    pub(crate) fn block_has_reverse(&self, block: &Block) -> bool {
        block.stmts.iter().any(|s| {
            self.plan.has_reverse[s.id]
                || matches!(s.kind, StmtKind::Let { var, .. } if self.plan.establish[var] == Establish::Pop || self.plan.establish_len[var] == Establish::Pop)
        })
    }

    /// Computes `has_reverse` bottom-up; returns whether `block` has any.
    fn block_reverse(&self, block: &Block, has_reverse: &mut Vec<bool>) -> bool {
        let mut any = false;
        for stmt in &block.stmts {
            let own = match &stmt.kind {
                StmtKind::Let { var, .. } => {
                    self.plan.useful[*var]
                        || self.plan.establish[*var] == Establish::Pop
                        || self.plan.establish_len[*var] == Establish::Pop
                }
                StmtKind::Assign { place, .. } => {
                    let var = place.var();
                    // (A buffer assigned whole whose length the adjoint reads
                    // from a local: the reverse sets the length back.)
                    let tracked = matches!(place, Place::Var(_))
                        && self.plan.tracks_length(self.function, var);
                    self.plan.useful[var] || self.plan.restored[var] || self.forced[var] || tracked
                }
                _ => false,
            };
            let mut inner = false;
            for inner_block in stmt.blocks() {
                inner |= self.block_reverse(inner_block, has_reverse);
            }
            has_reverse[stmt.id] = own || inner;
            any |= own || inner;
        }
        any
    }

    /// Restored variables: read where they are not settled, or read before
    /// their own compound update.
    fn restore(&mut self) -> Result<(), Unsupported> {
        // To a fixed point: the adjoint of an element write of a restored
        // buffer evaluates its index (to put the old value back), which
        // may read variables that then need restoring in turn.
        loop {
            for var in 0..self.function.vars.len() {
                let unsettled = self
                    .reads
                    .iter()
                    .any(|r| r.var == var && !r.length && !self.positions.settled(var, r.at));
                if unsettled || self.forced[var] {
                    self.plan.restored[var] = true;
                }
            }
            let before = self.reads.len();
            for var in 0..self.function.vars.len() {
                if !self.plan.restored[var] || self.plan.useful[var] {
                    // A useful variable's element writes read their index
                    // already (`reads_of`).
                    continue;
                }
                for &write in &self.positions.writes[var] {
                    let stmt = self.stmt(write);
                    if let StmtKind::Assign {
                        place: Place::Elem(_, index),
                        ..
                    } = &stmt.kind
                    {
                        let start = self.reads.len();
                        self.all(index, write);
                        let fresh: Vec<Read> = self.reads.drain(start..).collect();
                        for read in fresh {
                            if !self.reads.contains(&read) {
                                self.reads.push(read);
                            }
                        }
                    }
                }
            }
            if self.reads.len() == before {
                break;
            }
        }
        // Integer increments and negations are undone instead of saved
        // (exactly: no rounding).
        for var in 0..self.function.vars.len() {
            if !self.plan.restored[var] {
                continue;
            }
            let integer = !self.active[var] && self.types[var].is_integer();
            for &write in &self.positions.writes[var] {
                let stmt = self.stmt(write);
                let increment = integer
                    && matches!(&stmt.kind, StmtKind::Assign { place: Place::Var(_), op: AssignOp::Add | AssignOp::Sub, value, .. }
                        if matches!(value.kind, ExprKind::Lit(syn::Lit::Int(_))));
                let invertible = increment || is_negation(stmt);
                if invertible {
                    self.plan.inverted[write] = true;
                } else {
                    self.pushable(var)?;
                }
            }
        }
        // With restorations known, statements writing restored variables
        // have adjoint work: the control-flow facts and the values their
        // reads need again.
        self.settle()
    }
}

/// True for `x = -x;`.
pub(crate) fn is_negation(stmt: &Stmt) -> bool {
    match &stmt.kind {
        StmtKind::Assign {
            place: Place::Var(var),
            op: AssignOp::Set,
            value,
            first: false,
        } => {
            matches!(&value.kind, ExprKind::Neg(inner) if matches!(inner.kind, ExprKind::Var(v) if v == *var))
        }
        _ => false,
    }
}

fn loop_var(stmt: &Stmt) -> Option<VarId> {
    match &stmt.kind {
        StmtKind::For { var, .. } => *var,
        _ => None,
    }
}

/// The variables declared outside `body` that it uses (reads or writes).
pub(crate) fn outside_uses(body: &Block) -> Vec<VarId> {
    let mut declared = std::collections::HashSet::new();
    let mut used = Vec::new();
    body.each_stmt(&mut |stmt| {
        match &stmt.kind {
            StmtKind::Let { var, .. } => {
                declared.insert(*var);
            }
            StmtKind::For { var: Some(var), .. } => {
                declared.insert(*var);
            }
            StmtKind::Match { arms, .. } => {
                for arm in arms {
                    declared.extend(arm.vars.iter().copied());
                }
            }
            StmtKind::Assign { place, .. } => used.push(place.var()),
            _ => {}
        }
        stmt.each_expr(&mut |expr| {
            expr.each_subexpr(&mut |e| match &e.kind {
                ExprKind::Var(v) | ExprKind::Elem(v, _) | ExprKind::Len(v) => used.push(*v),
                ExprKind::Opaque { reads, .. } => used.extend(reads.iter().copied()),
                ExprKind::Call(call) => {
                    for arg in &call.args {
                        if let CallArg::Buffer(buffer) = arg {
                            used.push(buffer.var);
                        }
                    }
                }
                ExprKind::Primitive(_, buffers) => used.extend(buffers.iter().map(|b| b.var)),
                _ => {}
            })
        });
    });
    let mut outside: Vec<VarId> = used.into_iter().filter(|v| !declared.contains(v)).collect();
    outside.sort_unstable();
    outside.dedup();
    outside
}

fn loop_id(stmt: &Stmt) -> Option<LoopId> {
    match &stmt.kind {
        StmtKind::For { id, .. } | StmtKind::While { id, .. } | StmtKind::Loop { id, .. } => {
            Some(*id)
        }
        _ => None,
    }
}

/// The active variables whose adjoints the adjoint of `expr` adds to.
pub(crate) fn active_operands(expr: &Expr, active: &[bool], f: &mut dyn FnMut(VarId)) {
    if !crate::analyze::activity::is_active(expr, active) {
        return;
    }
    match &expr.kind {
        ExprKind::Var(var) | ExprKind::Elem(var, _) | ExprKind::Field { base: var, .. } => f(*var),
        ExprKind::Neg(a) | ExprKind::Cast(a, _) => active_operands(a, active, f),
        ExprKind::Arith(_, a, b) => {
            active_operands(a, active, f);
            active_operands(b, active, f);
        }
        ExprKind::Math { math, args, .. } => {
            for (i, arg) in args.iter().enumerate() {
                if math.real_arg(i) {
                    active_operands(arg, active, f);
                }
            }
        }
        ExprKind::Call(call) => {
            for arg in &call.args {
                match arg {
                    CallArg::Value(value) => active_operands(value, active, f),
                    CallArg::Plain(_) | CallArg::Function(_) => {}
                    CallArg::Buffer(buffer) if active[buffer.var] => f(buffer.var),
                    CallArg::Buffer(_) => {}
                    CallArg::Struct { var, .. } if active[*var] => f(*var),
                    CallArg::Struct { .. } => {}
                    CallArg::Literal { leaves, .. } => {
                        for leaf in leaves {
                            active_operands(leaf, active, f);
                        }
                    }
                }
            }
        }
        ExprKind::Primitive(_, buffers) => {
            for buffer in buffers {
                if active[buffer.var] {
                    f(buffer.var)
                }
            }
        }
        ExprKind::NewBuffer(new) => {
            for elem in new.elems() {
                active_operands(elem, active, f);
            }
        }
        ExprKind::Lit(_)
        | ExprKind::Len(_)
        | ExprKind::Opaque { .. }
        | ExprKind::Not(_)
        | ExprKind::Compare(..)
        | ExprKind::Logic(..) => {}
    }
}
