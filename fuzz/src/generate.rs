//! The random program generator.
//!
//! Programs are drawn from the language `#[differentiate]` supports and are
//! valid Rust by construction: every name read is in scope with the right
//! kind, every index is reduced modulo the length, every loop is bounded,
//! math methods only see arguments inside their domains (`ln` of `x * x +
//! 0.5`, `asin` of `0.9 * sin(x)`, ...). Each expression carries a rough
//! bound on its magnitude; growing values are squashed (`tanh`, `atan`,
//! `x / (1 + x²)`) so values and gradients stay finite.

use crate::ast::*;
use crate::rng::Rng;

/// Values larger than this (by the rough bound) are squashed.
const CAP: f64 = 20.0;

/// Generates program `name` from `seed`.
pub fn program(name: &str, seed: u64) -> Program {
    let mut rng = Rng::new(seed);
    let uses_struct = rng.chance(0.25);
    let helpers = rng.weighted(&[(0usize, 4), (1, 4), (2, 2)]);
    let mut g = Gen {
        rng,
        vars: Vec::new(),
        helpers: Vec::new(),
        fresh: 0,
        loop_levels: Vec::new(),
        mode: Mode::Normal,
        write_floor: 0,
        allow_return: true,
        budget: 0,
        uses_struct,
        checkpoint: false,
        stencils: Vec::new(),
        takes_function: false,
        in_closure_body: false,
    };
    let mut funcs = Vec::new();
    for h in 0..helpers {
        let f = g.helper(&format!("h{h}"));
        funcs.push(f);
    }
    funcs.push(g.entry());
    Program {
        name: name.to_string(),
        seed,
        uses_struct,
        funcs,
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Real,
    /// Integer below the bound.
    Int(usize),
    /// Slice parameter (length, 0 when unknown).
    Slice(usize),
    Buf(usize),
    Struct,
    /// `&[Pt]` parameter (its length).
    Structs(usize),
    /// `&Ws` parameter (its weights' length).
    Weights(usize),
    Closure,
}

#[derive(Clone, Debug)]
struct Var {
    name: String,
    kind: Kind,
    bound: f64,
    mutable: bool,
    /// A closure may capture it (it is never assigned).
    capturable: bool,
    /// Not readable here (the accumulators of a `#[preaccumulate]` loop).
    hidden: bool,
    /// A buffer being iterated over: not writable.
    frozen: bool,
    /// Surely differentiated (a real parameter without `#[no_grad]`).
    active: bool,
    /// Surely constant (a `#[no_grad]` parameter).
    plain: bool,
}

#[derive(Clone)]
struct HelperSig {
    name: String,
    params: Vec<ParamTy>,
    /// The parameters' names (`Grad` fields of the differentiated ones).
    names: Vec<String>,
    bound: f64,
    /// Returns a `Pt` (its fields are read, `h(..).a`).
    returns_struct: bool,
}

#[derive(Clone, Debug, PartialEq)]
enum Mode {
    Normal,
    /// The body of a loop recorded as a whole / checkpointed: straight-line
    /// real arithmetic; only the state variables are assigned.
    Straight(Vec<String>),
    /// Inside a `#[preaccumulate]` loop: no return, no break of the loop.
    Preacc,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum LoopKind {
    /// A loop `break`/`continue` may leave.
    Plain,
    /// A loop pushing into a `Vec` in every iteration: nothing leaves it.
    Pushing,
    /// A `#[preaccumulate]` loop: `continue` only.
    Preacc,
}

struct Gen {
    rng: Rng,
    vars: Vec<Var>,
    helpers: Vec<HelperSig>,
    fresh: usize,
    /// Loops enclosing the current statement, innermost last.
    loop_levels: Vec<LoopKind>,
    mode: Mode,
    /// Variables below this index are read-only (inside `#[preaccumulate]`).
    write_floor: usize,
    allow_return: bool,
    /// Statements left for the current function.
    budget: usize,
    uses_struct: bool,
    /// Inside a `#[checkpoint]` loop body: every value computed there must
    /// be a differentiated real, so no constants alone and no path-style
    /// calls on constants.
    checkpoint: bool,
    /// The `Stencil` loops enclosing the current statement.
    stencils: Vec<Stencil>,
    /// The function being generated takes a function (`ParamTy::Func`).
    takes_function: bool,
    /// A closure's body is being generated (`closure_body`).
    in_closure_body: bool,
}

/// A `Stencil` loop: its variable and the buffers its body may index
/// directly, each with the offsets that stay in bounds.
struct Stencil {
    var: String,
    buffers: Vec<(String, i64, i64)>,
}

#[derive(Clone, Copy, PartialEq)]
enum S {
    Let,
    Assign,
    LetBuf,
    BufAssign,
    Refill,
    LetCopy,
    LetCollect,
    LetPush,
    Replace,
    LetStruct,
    LetCall,
    ForStructs,
    LetClosure,
    If,
    Match,
    For,
    Stencil,
    ForSlice,
    While,
    Loop,
    WholeLoop,
    Preacc,
    Jump,
    Return,
}

impl Gen {
    fn name(&mut self, prefix: &str) -> String {
        self.fresh += 1;
        format!("{prefix}{}", self.fresh)
    }

    fn declare(&mut self, name: &str, kind: Kind, bound: f64, mutable: bool) {
        self.vars.push(Var {
            name: name.to_string(),
            kind,
            bound,
            mutable,
            capturable: !mutable,
            hidden: false,
            frozen: false,
            active: false,
            plain: false,
        });
    }

    /// Indices of the variables visible here (the latest binding of each name).
    fn visible(&self) -> Vec<usize> {
        let mut seen: Vec<&str> = Vec::new();
        let mut out = Vec::new();
        for (i, v) in self.vars.iter().enumerate().rev() {
            if seen.contains(&v.name.as_str()) {
                continue;
            }
            seen.push(&v.name);
            if !v.hidden {
                out.push(i);
            }
        }
        out.reverse();
        out
    }

    fn visible_where(&self, pred: impl Fn(&Var) -> bool) -> Vec<usize> {
        self.visible()
            .into_iter()
            .filter(|&i| pred(&self.vars[i]))
            .collect()
    }

    fn params(&mut self, helper: bool) -> Vec<Param> {
        let mut params = Vec::new();
        let reals = self.rng.range(1, 3);
        for i in 0..reals {
            params.push(Param {
                name: format!("x{i}"),
                ty: ParamTy::Real,
            });
        }
        // (A helper with two slices is sometimes passed one buffer twice.)
        let slices = if helper {
            self.rng.weighted(&[(0usize, 7), (1, 2), (2, 1)])
        } else {
            self.rng.weighted(&[(0usize, 3), (1, 4), (2, 2)])
        };
        for i in 0..slices {
            let len = self.rng.range(1, 5);
            params.push(Param {
                name: format!("s{i}"),
                ty: ParamTy::Slice(len),
            });
        }
        if self.rng.chance(if helper { 0.25 } else { 0.1 }) {
            let len = self.rng.range(1, 4);
            params.push(Param {
                name: "arr".into(),
                ty: ParamTy::Array(len),
            });
        }
        if helper && self.uses_struct && self.rng.chance(0.4) {
            params.push(Param {
                name: "q".into(),
                ty: ParamTy::Struct,
            });
        }
        if helper && self.rng.chance(0.3) {
            params.push(Param {
                name: "func".into(),
                ty: ParamTy::Func,
            });
        }
        if !helper && self.uses_struct && self.rng.chance(0.4) {
            let len = self.rng.range(1, 4);
            params.push(Param {
                name: "ps".into(),
                ty: ParamTy::Structs(len),
            });
        }
        if !helper && self.uses_struct && self.rng.chance(0.4) {
            let len = self.rng.range(1, 5);
            params.push(Param {
                name: "ws".into(),
                ty: ParamTy::Weights(len),
            });
        }
        if !helper {
            if self.rng.chance(0.3) {
                params.push(Param {
                    name: "k".into(),
                    ty: ParamTy::Int(4),
                });
            }
            if self.rng.chance(0.25) {
                params.push(Param {
                    name: "c".into(),
                    ty: ParamTy::NoGradReal,
                });
            }
            if self.uses_struct {
                params.push(Param {
                    name: "pt".into(),
                    ty: ParamTy::Struct,
                });
            }
        }
        // Shuffle a little so parameter kinds appear in any order.
        for i in (1..params.len()).rev() {
            if self.rng.chance(0.3) {
                let j = self.rng.below(i + 1);
                params.swap(i, j);
            }
        }
        params
    }

    fn begin_function(&mut self, params: &[Param], helper: bool) {
        self.vars.clear();
        self.loop_levels.clear();
        self.mode = Mode::Normal;
        self.write_floor = 0;
        self.allow_return = true;
        self.budget = if helper {
            self.rng.range(2, 6)
        } else {
            self.rng.range(4, 14)
        };
        for p in params {
            let (kind, bound) = match p.ty {
                ParamTy::Real | ParamTy::NoGradReal => (Kind::Real, if helper { 2.0 } else { 1.5 }),
                ParamTy::Slice(len) => (Kind::Slice(if helper { 0 } else { len }), 2.0),
                ParamTy::Array(len) => (Kind::Slice(len), 2.0),
                ParamTy::Int(n) => (Kind::Int(n), n as f64),
                ParamTy::Struct => (Kind::Struct, 1.5),
                ParamTy::Structs(n) => (Kind::Structs(n), 1.5),
                ParamTy::Weights(n) => (Kind::Weights(n), 1.5),
                // (Closures given to it are squashed to about 3.)
                ParamTy::Func => (Kind::Closure, 3.0),
            };
            self.declare(&p.name, kind, bound, false);
            let v = self.vars.last_mut().expect("just declared");
            v.active = matches!(p.ty, ParamTy::Real | ParamTy::Array(_));
            v.plain = p.ty == ParamTy::NoGradReal;
        }
    }

    /// A variable surely differentiated here, if one is visible.
    fn active_var(&mut self) -> Option<Expr> {
        let active = self.visible_where(|v| v.active && v.kind == Kind::Real);
        if active.is_empty() {
            return None;
        }
        let i = *self.rng.pick(&active);
        Some(Expr::Var(self.vars[i].name.clone()))
    }

    fn helper(&mut self, name: &str) -> Func {
        let params = self.params(true);
        self.begin_function(&params, true);
        self.takes_function = params.iter().any(|p| p.ty == ParamTy::Func);
        // Some helpers return a `Pt` (then they cannot `return` a real).
        let returns_struct = self.uses_struct && self.rng.chance(0.35);
        self.allow_return = !returns_struct;
        let body = self.top_block(2);
        let (ret, bound) = self.real_capped(3);
        let ret_b = returns_struct.then(|| self.real_capped(3).0);
        self.helpers.push(HelperSig {
            name: name.to_string(),
            params: params.iter().map(|p| p.ty).collect(),
            names: params.iter().map(|p| p.name.clone()).collect(),
            bound,
            returns_struct,
        });
        Func {
            name: name.to_string(),
            params,
            body,
            ret,
            ret_b,
        }
    }

    fn entry(&mut self) -> Func {
        let params = self.params(false);
        self.begin_function(&params, false);
        self.takes_function = false;
        let body = self.top_block(3);
        let (ret, _) = self.real_capped(3);
        Func {
            name: "f".into(),
            params,
            body,
            ret,
            ret_b: None,
        }
    }

    // ---------------------------------------------------------------- blocks

    /// A function body: statements until the budget is spent.
    fn top_block(&mut self, depth: usize) -> Vec<Stmt> {
        let mut out = Vec::new();
        while self.budget > 0 {
            self.budget -= 1;
            let mut s = self.stmt(depth);
            out.append(&mut s);
        }
        out
    }

    /// A block of statements in a new scope.
    fn block(&mut self, depth: usize) -> Vec<Stmt> {
        let mark = self.vars.len();
        let n = self.rng.range(1, 4).min(self.budget.max(1));
        let mut out = Vec::new();
        for _ in 0..n {
            if self.budget == 0 {
                break;
            }
            self.budget -= 1;
            let mut s = self.stmt(depth);
            out.append(&mut s);
        }
        self.vars.truncate(mark);
        out
    }

    fn in_loop(&self) -> bool {
        !self.loop_levels.is_empty()
    }

    fn stmt(&mut self, depth: usize) -> Vec<Stmt> {
        let straight = matches!(self.mode, Mode::Straight(_));
        let has_mut = !self.assignable_reals().is_empty();
        let has_buf = !self.writable_bufs().is_empty();
        let has_seq = !self.sequences().is_empty();
        let nested = depth > 0 && !straight;
        let loops_ok = nested && self.loop_levels.len() < 2;
        let normal = self.mode == Mode::Normal;
        let choices = [
            (S::Let, 30),
            (S::Assign, if has_mut { 22 } else { 0 }),
            (S::LetBuf, if straight { 0 } else { 4 }),
            (S::BufAssign, if has_buf && !straight { 10 } else { 0 }),
            (
                S::Refill,
                if has_buf && !straight && self.loop_levels.len() < 2 {
                    4
                } else {
                    0
                },
            ),
            (
                S::LetCopy,
                if !straight && !self.copyable().is_empty() {
                    3
                } else {
                    0
                },
            ),
            (
                S::LetCollect,
                if !straight && !self.copyable().is_empty() {
                    3
                } else {
                    0
                },
            ),
            (S::LetPush, if loops_ok && normal { 4 } else { 0 }),
            (S::Replace, if has_buf && !straight { 8 } else { 0 }),
            (
                S::LetStruct,
                if self.uses_struct && !straight { 4 } else { 0 },
            ),
            (
                S::LetCall,
                if !straight && self.helpers.iter().any(|h| h.returns_struct) {
                    3
                } else {
                    0
                },
            ),
            (
                S::ForStructs,
                if loops_ok
                    && !self
                        .visible_where(|v| matches!(v.kind, Kind::Structs(_)))
                        .is_empty()
                {
                    4
                } else {
                    0
                },
            ),
            (S::LetClosure, if straight { 0 } else { 4 }),
            (S::If, if nested { 10 } else { 0 }),
            (S::Match, if nested { 4 } else { 0 }),
            (S::For, if loops_ok { 8 } else { 0 }),
            (
                S::Stencil,
                if loops_ok && normal && !self.known_lengths(2).is_empty() {
                    8
                } else {
                    0
                },
            ),
            (S::ForSlice, if loops_ok && has_seq { 5 } else { 0 }),
            (S::While, if loops_ok { 3 } else { 0 }),
            (S::Loop, if loops_ok { 3 } else { 0 }),
            (S::WholeLoop, if loops_ok && normal { 4 } else { 0 }),
            (S::Preacc, if loops_ok && normal { 4 } else { 0 }),
            (
                S::Jump,
                if self.in_loop()
                    && !straight
                    && self.loop_levels.last() != Some(&LoopKind::Pushing)
                {
                    5
                } else {
                    0
                },
            ),
            (
                S::Return,
                if self.allow_return && !straight { 3 } else { 0 },
            ),
        ];
        match self.rng.weighted(&choices) {
            S::Let => vec![self.let_stmt()],
            S::Assign => vec![self.assign()],
            S::LetBuf => vec![self.let_buf()],
            S::BufAssign => vec![self.buf_assign()],
            S::Refill => vec![self.refill()],
            S::LetCopy => vec![self.let_copy()],
            S::LetCollect => vec![self.let_collect()],
            S::LetPush => vec![self.let_push(depth)],
            S::Replace => vec![self.replace()],
            S::LetStruct => {
                let (a, _) = self.real_capped(2);
                let (b, _) = self.real_capped(2);
                let name = self.name("q");
                self.declare(&name, Kind::Struct, CAP, false);
                vec![Stmt::LetStruct { name, a, b }]
            }
            S::LetCall => {
                let structs: Vec<usize> = (0..self.helpers.len())
                    .filter(|&h| self.helpers[h].returns_struct)
                    .collect();
                let h = *self.rng.pick(&structs);
                match self.call_of(h, depth.max(1)) {
                    Some(call) => {
                        let name = self.name("r");
                        let bound = self.helpers[h].bound;
                        self.declare(&name, Kind::Struct, bound, false);
                        vec![Stmt::LetCall { name, call }]
                    }
                    None => vec![self.let_stmt()],
                }
            }
            S::ForStructs => {
                let structs = self.visible_where(|v| matches!(v.kind, Kind::Structs(_)));
                let slice = self.vars[*self.rng.pick(&structs)].name.clone();
                let elem = self.name("e");
                self.enter_loop(4, LoopKind::Plain);
                let mark = self.vars.len();
                self.declare(&elem, Kind::Struct, 1.5, false);
                let body = self.block(depth - 1);
                self.vars.truncate(mark);
                self.loop_levels.pop();
                vec![Stmt::ForStructs { elem, slice, body }]
            }
            S::LetClosure => vec![self.let_closure()],
            S::If => {
                let c = self.cond(2);
                let then = self.block(depth - 1);
                let els = if self.rng.chance(0.5) {
                    self.block(depth - 1)
                } else {
                    Vec::new()
                };
                vec![Stmt::If { cond: c, then, els }]
            }
            S::Match => {
                let scrut = self.iexpr();
                let n = self.rng.range(2, 3);
                let arms = (0..n).map(|_| self.block(depth - 1)).collect();
                vec![Stmt::Match { scrut, arms }]
            }
            S::For => self.for_loop(depth),
            S::Stencil => self.stencil_loop(depth),
            S::ForSlice => self.for_slice(depth),
            S::While | S::Loop => {
                let limit = self.rng.range(1, 5);
                let counter = self.name("n");
                self.enter_loop(limit, LoopKind::Plain);
                self.declare(&counter, Kind::Int(limit + 1), 0.0, true);
                let body = self.block(depth - 1);
                self.vars.retain(|v| v.name != counter);
                self.loop_levels.pop();
                if self.rng.chance(0.5) {
                    vec![Stmt::While {
                        counter,
                        limit,
                        body,
                    }]
                } else {
                    vec![Stmt::Loop {
                        counter,
                        limit,
                        body,
                    }]
                }
            }
            S::WholeLoop => self.whole_loop(),
            S::Preacc => self.preacc_loop(depth),
            S::Jump => {
                let inner = *self.loop_levels.last().expect("in a loop");
                let jump = if inner == LoopKind::Plain && self.rng.chance(0.5) {
                    Stmt::Break
                } else {
                    Stmt::Continue
                };
                let c = self.cond(1);
                vec![Stmt::If {
                    cond: c,
                    then: vec![jump],
                    els: Vec::new(),
                }]
            }
            S::Return => {
                let c = self.cond(1);
                let (e, _) = self.real_capped(2);
                vec![Stmt::If {
                    cond: c,
                    then: vec![Stmt::Return(e)],
                    els: Vec::new(),
                }]
            }
        }
    }

    /// Entering a loop of `trips` iterations: every mutable value declared
    /// outside may grow by a bounded amount per iteration.
    fn enter_loop(&mut self, trips: usize, kind: LoopKind) {
        for v in self.vars.iter_mut() {
            if v.mutable && matches!(v.kind, Kind::Real | Kind::Buf(_)) {
                v.bound = v.bound.max(2.0) + trips as f64;
            }
        }
        self.loop_levels.push(kind);
    }

    fn let_stmt(&mut self) -> Stmt {
        let (value, bound) = self.real_capped(3);
        // No shadowing in straight-line loop bodies: the state variables
        // must stay assignable.
        let shadow = match self.mode {
            Mode::Straight(_) => Vec::new(),
            _ => self.visible_where(|v| v.kind == Kind::Real),
        };
        let name = if !shadow.is_empty() && self.rng.chance(0.2) {
            let i = *self.rng.pick(&shadow);
            self.vars[i].name.clone()
        } else {
            self.name("v")
        };
        let mutable = self.rng.chance(0.5);
        self.declare(&name, Kind::Real, bound, mutable);
        Stmt::Let {
            name,
            mutable,
            annotate: self.rng.chance(0.2),
            value,
        }
    }

    fn assignable_reals(&self) -> Vec<usize> {
        let states = match &self.mode {
            Mode::Straight(states) => Some(states.clone()),
            _ => None,
        };
        self.visible()
            .into_iter()
            .filter(|&i| {
                let v = &self.vars[i];
                v.kind == Kind::Real
                    && v.mutable
                    && i >= self.write_floor
                    && states.as_ref().is_none_or(|s| s.contains(&v.name))
            })
            .collect()
    }

    /// A buffer that can be written here, and its name.
    fn pick_writable_buf(&mut self) -> (usize, String) {
        let candidates = self.writable_bufs();
        let i = *self.rng.pick(&candidates);
        (i, self.vars[i].name.clone())
    }

    fn writable_bufs(&self) -> Vec<usize> {
        self.visible()
            .into_iter()
            .filter(|&i| {
                let v = &self.vars[i];
                matches!(v.kind, Kind::Buf(_)) && !v.frozen && i >= self.write_floor
            })
            .collect()
    }

    /// Slices and buffers that can be read.
    fn sequences(&self) -> Vec<usize> {
        self.visible_where(|v| matches!(v.kind, Kind::Slice(_) | Kind::Buf(_)))
    }

    /// A value bounded by 1 (or by `scale`), built from `e`.
    fn squash(&mut self, e: Expr, bound: f64) -> (Expr, f64) {
        let pick = if bound > 4.0 {
            self.rng.below(3)
        } else {
            self.rng.below(5)
        };
        match pick {
            0 => (Expr::unary("tanh", e), 1.0),
            1 => (Expr::unary("atan", e), 1.6),
            2 => {
                let square = Expr::bin(BinOp::Mul, e.clone(), e.clone());
                let den = Expr::bin(BinOp::Add, Expr::Const(1.0), square);
                (Expr::bin(BinOp::Div, e, den), 0.5)
            }
            3 => (Expr::unary("sin", e), 1.0),
            _ => (Expr::unary("cos", e), 1.0),
        }
    }

    /// `v op= value` keeping `v` bounded.
    fn assign(&mut self) -> Stmt {
        let candidates = self.assignable_reals();
        let i = *self.rng.pick(&candidates);
        let name = self.vars[i].name.clone();
        let old = self.vars[i].bound;
        let in_loop = self.in_loop();
        let op = self.rng.weighted(&[
            (AssignOp::Set, 3),
            (AssignOp::Add, 4),
            (AssignOp::Sub, 2),
            (AssignOp::Mul, 2),
            (AssignOp::Div, 1),
        ]);
        let (e, be) = self.real(2);
        let (value, bound) = match op {
            AssignOp::Set if in_loop => {
                let (s, bs) = self.squash(e, be);
                let k = self.rng.constant(0.5, 2.0);
                (Expr::bin(BinOp::Mul, Expr::Const(k), s), old.max(bs * k))
            }
            AssignOp::Set => {
                let (e, be) = self.cap(e, be);
                (e, old.max(be))
            }
            AssignOp::Add | AssignOp::Sub if in_loop => {
                let (s, bs) = self.squash(e, be);
                (Expr::bin(BinOp::Mul, s, Expr::Const(0.5)), old + bs * 0.5)
            }
            AssignOp::Add | AssignOp::Sub => {
                let (e, be) = self.cap(e, be);
                (e, old + be)
            }
            AssignOp::Mul if in_loop || old * be > CAP => {
                let (s, bs) = self.squash(e, be);
                (s, old * bs.max(1.0))
            }
            AssignOp::Mul => (e, old * be),
            AssignOp::Div => {
                let square = Expr::bin(BinOp::Mul, e.clone(), e);
                (Expr::bin(BinOp::Add, Expr::Const(1.0), square), old)
            }
        };
        self.vars[i].bound = bound;
        Stmt::Assign { name, op, value }
    }

    fn let_buf(&mut self) -> Stmt {
        let name = self.name("b");
        let len = self.rng.range(1, 6);
        let fill = self.rng.constant(-1.0, 1.0);
        self.declare(&name, Kind::Buf(len), 1.0, true);
        Stmt::LetBuf {
            name,
            len,
            fill,
            annotate: self.rng.chance(0.5),
        }
    }

    fn buf_assign(&mut self) -> Stmt {
        let (i, name) = self.pick_writable_buf();
        let old = self.vars[i].bound;
        let index = self.stencil_index(&name).unwrap_or_else(|| self.iexpr());
        let op = self
            .rng
            .weighted(&[(AssignOp::Set, 3), (AssignOp::Add, 3), (AssignOp::Mul, 1)]);
        // `b[i] += <reads b>` does not compile once the elements are dual
        // values (reported by this fuzzer; see tests/fuzz_regressions.rs):
        // the right side of a compound update does not read the buffer.
        let compound = op != AssignOp::Set;
        if compound {
            self.vars[i].hidden = true;
        }
        let (e, be) = self.real(2);
        self.vars[i].hidden = false;
        let (value, bound) = match op {
            AssignOp::Set => {
                let (e, be) = if self.in_loop() {
                    self.squash(e, be)
                } else {
                    self.cap(e, be)
                };
                (e, old.max(be))
            }
            AssignOp::Add => {
                let (s, bs) = self.squash(e, be);
                (s, old + bs)
            }
            _ => {
                let (s, bs) = self.squash(e, be);
                (s, old * bs.max(1.0))
            }
        };
        self.vars[i].bound = bound;
        Stmt::BufAssign {
            name,
            index,
            op,
            value,
        }
    }

    /// A loop overwriting a buffer from `start` on, element by element at
    /// its variable (`start` past the end: no iteration).
    fn refill(&mut self) -> Stmt {
        let (i, name) = self.pick_writable_buf();
        let len = self.seq_len(i);
        let start = self.rng.range(0, len + 1);
        let (var, value) = self.element_value(i, len);
        Stmt::Refill {
            name,
            var,
            start,
            value,
        }
    }

    /// The value a loop over `len` elements writes into buffer `i` at its
    /// variable (returned with it), bounding the buffer's elements.
    fn element_value(&mut self, i: usize, len: usize) -> (String, Expr) {
        self.enter_loop(len, LoopKind::Plain);
        let var = self.name("i");
        self.declare(&var, Kind::Int(len.max(1)), len as f64, false);
        let (e, be) = self.real(2);
        let (value, be) = self.squash(e, be);
        self.vars.retain(|v| v.name != var);
        self.loop_levels.pop();
        self.vars[i].bound = self.vars[i].bound.max(be);
        (var, value)
    }

    /// The length of a slice or buffer (0 when unknown).
    fn seq_len(&self, i: usize) -> usize {
        match self.vars[i].kind {
            Kind::Slice(n) | Kind::Buf(n) => n,
            _ => 0,
        }
    }

    /// Slices and buffers of known length, which a copy can take.
    fn copyable(&self) -> Vec<usize> {
        self.sequences()
            .into_iter()
            .filter(|&i| self.seq_len(i) > 0)
            .collect()
    }

    /// A method that copies the slice or buffer `i`.
    fn copy_method(&mut self, i: usize) -> &'static str {
        // (`arr`, an array parameter, is read like a slice, but its
        // `to_owned()` is an array.)
        let other = match self.vars[i].kind {
            Kind::Slice(_) if self.vars[i].name != "arr" => "to_owned",
            Kind::Slice(_) => "to_vec",
            _ => "clone",
        };
        if self.rng.chance(0.5) {
            "to_vec"
        } else {
            other
        }
    }

    /// A slice or buffer of known length to copy or map: its variable,
    /// name, length and bound.
    fn pick_copyable(&mut self) -> (usize, String, usize, f64) {
        let sources = self.copyable();
        let i = *self.rng.pick(&sources);
        let (len, bound) = (self.seq_len(i), self.vars[i].bound);
        (i, self.vars[i].name.clone(), len, bound)
    }

    fn let_copy(&mut self) -> Stmt {
        let (i, source, len, bound) = self.pick_copyable();
        let method = self.copy_method(i);
        let name = self.name("b");
        self.declare(&name, Kind::Buf(len), bound, true);
        Stmt::LetCopy {
            name,
            source,
            method,
        }
    }

    /// A new buffer collected from a map over another's elements.
    fn let_collect(&mut self) -> Stmt {
        let (_, source, len, bound) = self.pick_copyable();
        let mark = self.vars.len();
        let v = self.name("u");
        self.declare(&v, Kind::Real, bound, false);
        let (body, body_bound) = self.real_capped(2);
        self.vars.truncate(mark);
        let name = self.name("b");
        self.declare(&name, Kind::Buf(len), body_bound, true);
        Stmt::LetCollect {
            name,
            source,
            v,
            body,
            turbofish: self.rng.chance(0.5),
        }
    }

    /// A whole buffer replaced: by a copy of another (whose length it
    /// takes), or by a new buffer filled by a loop and moved into it.
    fn replace(&mut self) -> Stmt {
        let (i, name) = self.pick_writable_buf();
        let len = self.seq_len(i);
        let others: Vec<usize> = self.copyable().into_iter().filter(|&j| j != i).collect();
        if !others.is_empty() && self.rng.chance(0.5) {
            let j = *self.rng.pick(&others);
            let source = self.vars[j].name.clone();
            let method = self.copy_method(j);
            self.vars[i].bound = self.vars[i].bound.max(self.vars[j].bound);
            // (On other paths it keeps its length: the shorter is known.)
            self.vars[i].kind = Kind::Buf(len.min(self.seq_len(j)));
            return Stmt::Replace {
                name,
                with: Replacement::Copy { source, method },
            };
        }
        let (var, value) = self.element_value(i, len);
        let temp = self.name("t");
        Stmt::Replace {
            name,
            with: Replacement::Moved { temp, var, value },
        }
    }

    /// A closure given to a function parameter: like `let_closure`'s, its
    /// value squashed to about 3.
    fn closure_arg(&mut self) -> Arg {
        // (Or, in a function taking a function, that function passed on.)
        if self.takes_function && self.rng.chance(0.7) {
            return Arg::PassedOn;
        }
        let (param, body, bound) = self.closure_body();
        let (body, _) = if bound > 3.0 {
            self.squash(body, bound)
        } else {
            (body, bound)
        };
        Arg::Closure { param, body }
    }

    /// A closure's parameter and body, and the body's bound: the body sees
    /// the parameter and captures only variables that are never assigned
    /// (so the closure's borrow cannot conflict).
    fn closure_body(&mut self) -> (String, Expr, f64) {
        let param = self.name("t");
        let saved = self.vars.clone();
        let saved_mode = self.mode.clone();
        // (The function's own function parameter stays: a closure may call
        // it.)
        for v in self.vars.iter_mut() {
            let own_function = v.name == "func";
            if !v.capturable
                || matches!(v.kind, Kind::Buf(_))
                || (v.kind == Kind::Closure && !own_function)
            {
                v.hidden = true;
            }
        }
        self.mode = Mode::Straight(Vec::new());
        self.declare(&param, Kind::Real, CAP, false);
        self.in_closure_body = true;
        let (body, bound) = self.real_capped(2);
        self.in_closure_body = false;
        self.vars = saved;
        self.mode = saved_mode;
        (param, body, bound)
    }

    fn let_closure(&mut self) -> Stmt {
        let name = self.name("c");
        let (param, body, bound) = self.closure_body();
        self.declare(&name, Kind::Closure, bound, false);
        Stmt::LetClosure { name, param, body }
    }

    fn for_loop(&mut self, depth: usize) -> Vec<Stmt> {
        let seqs = self.sequences();
        let (count, trips) = if !seqs.is_empty() && self.rng.chance(0.4) {
            let i = *self.rng.pick(&seqs);
            let v = &self.vars[i];
            let len = match v.kind {
                Kind::Slice(0) => 5,
                Kind::Slice(n) | Kind::Buf(n) => n,
                _ => 5,
            };
            (Count::Len(v.name.clone()), len)
        } else {
            let n = self.rng.range(0, 5);
            (Count::Lit(n), n)
        };
        let var = self.name("i");
        self.enter_loop(trips, LoopKind::Plain);
        self.declare(&var, Kind::Int(trips.max(1)), trips as f64, false);
        let body = self.block(depth - 1);
        self.vars.retain(|v| v.name != var);
        self.loop_levels.pop();
        vec![Stmt::For {
            var,
            count,
            attr: LoopAttr::None,
            body,
        }]
    }

    /// Slices and buffers of known length at least `min`.
    fn known_lengths(&self, min: usize) -> Vec<usize> {
        self.sequences()
            .into_iter()
            .filter(|&i| self.seq_len(i) >= min)
            .collect()
    }

    /// `for i in start..end` over part of a slice or buffer of known length
    /// (sometimes none of it), whose body may index every buffer of known
    /// length at `i` plus offsets that stay in bounds (`b[i - 1]`,
    /// `b[i + 2]`), without reducing them modulo the length.
    fn stencil_loop(&mut self, depth: usize) -> Vec<Stmt> {
        let anchors = self.known_lengths(2);
        let a = *self.rng.pick(&anchors);
        let len = self.seq_len(a);
        let (start, gap) = if self.rng.chance(0.1) {
            let start = self.rng.range(1, 2);
            (start, len - start)
        } else {
            let start = self.rng.range(0, 2.min(len - 1));
            (start, self.rng.range(0, 2.min(len - 1 - start)))
        };
        let end = len - gap;
        // Every buffer read at `i + c` for `i` in `start..end`.
        let buffers = self
            .known_lengths(1)
            .into_iter()
            .map(|b| {
                let high = self.seq_len(b) as i64 - end as i64;
                (self.vars[b].name.clone(), -(start as i64), high)
            })
            .filter(|&(_, low, high)| low <= high)
            .collect();
        let count = if self.rng.chance(0.5) {
            Count::Lit(end)
        } else {
            Count::Len(self.vars[a].name.clone())
        };
        let gap = if matches!(count, Count::Lit(_)) {
            0
        } else {
            gap
        };
        let var = self.name("i");
        self.enter_loop(end.saturating_sub(start), LoopKind::Plain);
        self.declare(&var, Kind::Int(end.max(1)), end as f64, false);
        self.stencils.push(Stencil {
            var: var.clone(),
            buffers,
        });
        let body = self.block(depth - 1);
        self.stencils.pop();
        self.vars.retain(|v| v.name != var);
        self.loop_levels.pop();
        vec![Stmt::Stencil {
            var,
            start,
            count,
            gap,
            body,
        }]
    }

    /// A direct index of buffer `name` in an enclosing `Stencil` loop, if
    /// one may index it (most of the time when it may).
    fn stencil_index(&mut self, name: &str) -> Option<IExpr> {
        let found = self.stencils.iter().rev().find_map(|s| {
            let &(_, low, high) = s.buffers.iter().find(|(b, ..)| b == name)?;
            Some((s.var.clone(), low, high))
        });
        let (var, low, high) = found?;
        if !self.rng.chance(0.75) {
            return None;
        }
        let offset = low + self.rng.below((high - low + 1) as usize) as i64;
        Some(IExpr::At(var, offset))
    }

    /// `let mut b = Vec::new();` and a loop over `start..count` whose body
    /// (which leaves it nowhere) ends with `b.push(value);`.
    fn let_push(&mut self, depth: usize) -> Stmt {
        let seqs = self.known_lengths(1);
        let (count, trips) = if !seqs.is_empty() && self.rng.chance(0.4) {
            let i = *self.rng.pick(&seqs);
            (Count::Len(self.vars[i].name.clone()), self.seq_len(i))
        } else {
            // (Not empty: the buffer's elements are read modulo its length.)
            let n = self.rng.range(1, 5);
            (Count::Lit(n), n)
        };
        // (From a literal, leaving at least one element.)
        let start = self.rng.range(0, 2.min(trips - 1));
        let var = self.name("i");
        let saved_return = self.allow_return;
        self.allow_return = false;
        self.enter_loop(trips, LoopKind::Pushing);
        self.declare(&var, Kind::Int(trips.max(1)), trips as f64, false);
        let body = self.block(depth - 1);
        let (e, be) = self.real(2);
        let (value, bound) = self.squash(e, be);
        self.vars.retain(|v| v.name != var);
        self.loop_levels.pop();
        self.allow_return = saved_return;
        let name = self.name("b");
        self.declare(&name, Kind::Buf(trips - start), bound, true);
        Stmt::LetPush {
            name,
            typed: self.rng.below(3) as u8,
            capacity: self.rng.chance(0.3),
            var,
            start,
            count,
            body,
            value,
        }
    }

    fn for_slice(&mut self, depth: usize) -> Vec<Stmt> {
        let seqs = self.sequences();
        let i = *self.rng.pick(&seqs);
        let slice = self.vars[i].name.clone();
        let (len, bound) = match self.vars[i].kind {
            Kind::Slice(0) => (5, self.vars[i].bound),
            Kind::Slice(n) | Kind::Buf(n) => (n, self.vars[i].bound),
            _ => (5, CAP),
        };
        // Nested loops may iterate the same buffer: the outer one keeps it
        // frozen.
        let was_frozen = std::mem::replace(&mut self.vars[i].frozen, true);
        self.enter_loop(len, LoopKind::Plain);
        let elem = self.name("e");
        let index = if self.rng.chance(0.5) {
            let j = self.name("j");
            self.declare(&j, Kind::Int(len), len as f64, false);
            Some(j)
        } else {
            None
        };
        self.declare(&elem, Kind::Real, bound, false);
        let body = self.block(depth - 1);
        self.vars
            .retain(|v| v.name != elem && Some(&v.name) != index.as_ref());
        self.loop_levels.pop();
        if let Some(v) = self.vars.iter_mut().rev().find(|v| v.name == slice) {
            v.frozen = was_frozen;
        }
        vec![Stmt::ForSlice {
            elem,
            index,
            slice,
            body,
        }]
    }

    /// State variables and a loop over them with a straight-line body: a
    /// loop deltad records as a whole, `#[checkpoint]`ed half the time.
    fn whole_loop(&mut self) -> Vec<Stmt> {
        let Some(active) = self.active_var() else {
            return vec![self.let_stmt()];
        };
        let mut out = Vec::new();
        let n_states = self.rng.range(1, 2);
        let mut states = Vec::new();
        for _ in 0..n_states {
            // States start differentiated (deltad rejects checkpointing a
            // loop over constants).
            let (value, _) = self.real_capped(2);
            let (value, _) = self.squash(Expr::bin(BinOp::Add, value, active.clone()), 2.0 * CAP);
            let name = self.name("w");
            self.declare(&name, Kind::Real, 2.0, true);
            out.push(Stmt::Let {
                name: name.clone(),
                mutable: true,
                annotate: self.rng.chance(0.2),
                value,
            });
            states.push(name);
        }
        let checkpoint = self.rng.chance(0.5);
        let trips = if checkpoint {
            self.rng.range(1, 40)
        } else {
            self.rng.range(0, 12)
        };
        let saved_mode = std::mem::replace(&mut self.mode, Mode::Straight(states.clone()));
        self.checkpoint = checkpoint;
        self.enter_loop(trips, LoopKind::Plain);
        let mark = self.vars.len();
        let mut body = Vec::new();
        // Checkpointed bodies stay minimal: richer straight-line bodies are
        // often rejected ("deltad can checkpoint a `for` loop whose body is
        // straight-line real arithmetic ..."; reported by this fuzzer).
        let extra = if checkpoint { 0 } else { self.rng.range(1, 4) };
        if self.rng.chance(0.3) {
            let s = self.rng.pick(&states).clone();
            let c = self.rng.constant(-1.0, 1.0);
            // `if .. { return v; }` as a checkpointed loop's first statement
            // is rejected in some bodies (reported by this fuzzer; see
            // tests/fuzz_regressions.rs), so checkpointed loops only `break`.
            let jump = if self.allow_return && !checkpoint && self.rng.chance(0.4) {
                let (e, _) = self.real_capped(2);
                Stmt::Return(e)
            } else {
                Stmt::Break
            };
            body.push(Stmt::If {
                cond: Cond::Cmp(CmpOp::Gt, Expr::Var(s), Expr::Const(c)),
                then: vec![jump],
                els: Vec::new(),
            });
        }
        for _ in 0..extra {
            if self.rng.chance(0.4) {
                let s = self.rng.pick(&states).clone();
                let (e, be) = self.real_capped(2);
                let name = self.name("v");
                self.declare(&name, Kind::Real, be + 2.0, false);
                body.push(Stmt::Let {
                    name,
                    mutable: false,
                    annotate: self.rng.chance(0.2),
                    value: Expr::bin(BinOp::Add, e, Expr::Var(s)),
                });
            } else {
                body.push(self.assign());
            }
        }
        // Every state changes in the loop.
        for s in &states {
            let (e, be) = self.real(2);
            let e = Expr::bin(BinOp::Add, e, Expr::Var(s.clone()));
            let (e, _) = self.squash(e, be + 2.0);
            body.push(Stmt::Assign {
                name: s.clone(),
                op: AssignOp::Add,
                value: Expr::bin(BinOp::Mul, Expr::Const(0.5), e),
            });
        }
        self.vars.truncate(mark);
        self.loop_levels.pop();
        self.mode = saved_mode;
        self.checkpoint = false;
        out.push(Stmt::For {
            var: "_".into(),
            count: Count::Lit(trips),
            attr: if checkpoint {
                LoopAttr::Checkpoint
            } else {
                LoopAttr::None
            },
            body,
        });
        out
    }

    /// Accumulators and a `#[preaccumulate]` loop summing into them.
    fn preacc_loop(&mut self, depth: usize) -> Vec<Stmt> {
        // Each sum gets a differentiated term (deltad rejects a
        // preaccumulated loop whose sums are all constant).
        let Some(active) = self.active_var() else {
            return vec![self.let_stmt()];
        };
        let mut out = Vec::new();
        let mut accs = Vec::new();
        for _ in 0..self.rng.range(1, 2) {
            let name = self.name("acc");
            out.push(Stmt::Let {
                name: name.clone(),
                mutable: true,
                annotate: self.rng.chance(0.3),
                value: Expr::Const(0.0),
            });
            self.declare(&name, Kind::Real, 0.0, true);
            accs.push(name);
        }
        let trips = self.rng.range(0, 6);
        let var = self.name("i");
        let saved_mode = std::mem::replace(&mut self.mode, Mode::Preacc);
        let saved_floor = self.write_floor;
        let saved_return = self.allow_return;
        self.allow_return = false;
        for v in self.vars.iter_mut() {
            if accs.contains(&v.name) {
                v.hidden = true;
            }
        }
        self.loop_levels.push(LoopKind::Preacc);
        self.declare(&var, Kind::Int(trips.max(1)), trips as f64, false);
        self.write_floor = self.vars.len();
        let mut body = self.block(depth - 1);
        self.vars.retain(|v| v.name != var);
        for acc in &accs {
            let (e, be) = self.real(2);
            let (e, _) = self.squash(Expr::bin(BinOp::Mul, e, active.clone()), be * 2.0);
            body.push(Stmt::Assign {
                name: acc.clone(),
                op: if self.rng.chance(0.7) {
                    AssignOp::Add
                } else {
                    AssignOp::Sub
                },
                value: e,
            });
        }
        self.loop_levels.pop();
        self.write_floor = saved_floor;
        self.allow_return = saved_return;
        self.mode = saved_mode;
        for v in self.vars.iter_mut() {
            if accs.contains(&v.name) {
                v.hidden = false;
                v.bound = trips as f64 + 1.0;
            }
        }
        out.push(Stmt::For {
            var,
            count: Count::Lit(trips),
            attr: LoopAttr::Preaccumulate,
            body,
        });
        out
    }

    // ----------------------------------------------------------- expressions

    fn iexpr(&mut self) -> IExpr {
        let ints = self.visible_where(|v| matches!(v.kind, Kind::Int(_)));
        if ints.is_empty() || self.rng.chance(0.15) {
            return IExpr::Lit(self.rng.range(0, 4));
        }
        let i = *self.rng.pick(&ints);
        let v = IExpr::Var(self.vars[i].name.clone());
        if self.rng.chance(0.3) {
            IExpr::Add(Box::new(v), self.rng.range(1, 3))
        } else {
            v
        }
    }

    fn cond(&mut self, depth: usize) -> Cond {
        let op = *self.rng.pick(&[CmpOp::Lt, CmpOp::Gt, CmpOp::Le, CmpOp::Ge]);
        let ints = !self
            .visible_where(|v| matches!(v.kind, Kind::Int(_)))
            .is_empty();
        let pick = if depth == 0 {
            0
        } else {
            self.rng.weighted(&[
                (0, 8),
                (1, if ints { 3 } else { 0 }),
                (2, 1),
                (3, 1),
                (4, 1),
            ])
        };
        match pick {
            0 => {
                let (a, _) = self.real(1);
                let b = if self.rng.chance(0.5) {
                    Expr::Const(self.rng.constant(-1.0, 1.0))
                } else {
                    self.real(1).0
                };
                Cond::Cmp(op, a, b)
            }
            1 => {
                let a = self.iexpr();
                Cond::ICmp(op, a, IExpr::Lit(self.rng.range(0, 3)))
            }
            2 => Cond::Not(Box::new(self.cond(depth - 1))),
            3 => Cond::And(
                Box::new(self.cond(depth - 1)),
                Box::new(self.cond(depth - 1)),
            ),
            _ => Cond::Or(
                Box::new(self.cond(depth - 1)),
                Box::new(self.cond(depth - 1)),
            ),
        }
    }

    /// A real expression, squashed if it may exceed `CAP`.
    fn real_capped(&mut self, depth: usize) -> (Expr, f64) {
        let (e, b) = self.real(depth);
        self.cap(e, b)
    }

    fn cap(&mut self, e: Expr, b: f64) -> (Expr, f64) {
        if b > CAP {
            self.squash(e, b)
        } else {
            (e, b)
        }
    }

    fn leaf(&mut self) -> (Expr, f64) {
        let straight = matches!(self.mode, Mode::Straight(_));
        let reals = self.visible_where(|v| v.kind == Kind::Real);
        let seqs = if straight {
            Vec::new()
        } else {
            self.sequences()
        };
        let structs = if straight {
            Vec::new()
        } else {
            self.visible_where(|v| matches!(v.kind, Kind::Struct | Kind::Structs(_)))
        };
        let ints = if straight {
            Vec::new()
        } else {
            self.visible_where(|v| matches!(v.kind, Kind::Int(_)))
        };
        let weights = if straight {
            Vec::new()
        } else {
            self.visible_where(|v| matches!(v.kind, Kind::Weights(_)))
        };
        let reals: Vec<usize> = if self.checkpoint {
            reals.into_iter().filter(|&i| !self.vars[i].plain).collect()
        } else {
            reals
        };
        let pick = self.rng.weighted(&[
            (
                0,
                if self.checkpoint && !reals.is_empty() {
                    0
                } else {
                    2
                },
            ),
            (1, if reals.is_empty() { 0 } else { 8 }),
            (2, if seqs.is_empty() { 0 } else { 4 }),
            (3, if structs.is_empty() { 0 } else { 2 }),
            (4, if ints.is_empty() { 0 } else { 1 }),
            (5, if weights.is_empty() { 0 } else { 2 }),
        ]);
        match pick {
            1 => {
                let i = *self.rng.pick(&reals);
                (Expr::Var(self.vars[i].name.clone()), self.vars[i].bound)
            }
            2 => {
                let i = *self.rng.pick(&seqs);
                let (name, bound) = (self.vars[i].name.clone(), self.vars[i].bound);
                let index = self.stencil_index(&name).unwrap_or_else(|| self.iexpr());
                (Expr::Index(name, index), bound)
            }
            3 => {
                let i = *self.rng.pick(&structs);
                let field = if self.rng.chance(0.5) { "a" } else { "b" };
                let (name, bound) = (self.vars[i].name.clone(), self.vars[i].bound);
                let e = match self.vars[i].kind {
                    Kind::Structs(_) => Expr::ElemField(name, self.iexpr(), field),
                    _ => Expr::Field(name, field),
                };
                (e, bound)
            }
            4 => {
                let i = *self.rng.pick(&ints);
                let bound = match self.vars[i].kind {
                    Kind::Int(n) => n as f64,
                    _ => 5.0,
                };
                (
                    Expr::IntAsReal(IExpr::Var(self.vars[i].name.clone())),
                    bound,
                )
            }
            5 => {
                // A `&Ws` parameter: an element of its buffer field, or its
                // real field.
                let i = *self.rng.pick(&weights);
                let (name, bound) = (self.vars[i].name.clone(), self.vars[i].bound);
                let e = if self.rng.chance(0.75) {
                    Expr::FieldElem(name, self.iexpr())
                } else {
                    Expr::Field(name, "c")
                };
                (e, bound)
            }
            _ => {
                let c = self.rng.constant(-2.0, 2.0);
                (Expr::Const(c), c.abs())
            }
        }
    }

    fn real(&mut self, depth: usize) -> (Expr, f64) {
        if depth == 0 || self.rng.chance(0.25) {
            return self.leaf();
        }
        let normal = !matches!(self.mode, Mode::Straight(_));
        let closures = self.visible_where(|v| v.kind == Kind::Closure);
        let seqs = self.sequences();
        let callable = !self.helpers.is_empty() && normal;
        let pick = self.rng.weighted(&[
            (0, 14),
            (1, 2),
            (2, 12),
            (3, if callable { 3 } else { 0 }),
            // (In a closure's body, the only visible closure is the
            // function's own function parameter.)
            (
                4,
                if (normal || self.in_closure_body) && !closures.is_empty() {
                    3
                } else {
                    0
                },
            ),
            (5, if normal { 2 } else { 0 }),
            (6, if normal { 2 } else { 0 }),
            (7, if normal && !seqs.is_empty() { 3 } else { 0 }),
        ]);
        match pick {
            0 => {
                let op = *self
                    .rng
                    .pick(&[BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div]);
                let (a, ba) = self.real(depth - 1);
                let (b, bb) = self.real(depth - 1);
                match op {
                    BinOp::Add | BinOp::Sub => (Expr::bin(op, a, b), ba + bb),
                    BinOp::Mul => {
                        let e = Expr::bin(op, a, b);
                        self.cap(e, ba * bb)
                    }
                    BinOp::Div => {
                        if self.rng.chance(0.5) {
                            let square = Expr::bin(BinOp::Mul, b.clone(), b);
                            let den = Expr::bin(BinOp::Add, Expr::Const(1.0), square);
                            (Expr::bin(BinOp::Div, a, den), ba)
                        } else {
                            let den =
                                Expr::bin(BinOp::Add, Expr::unary("abs", b), Expr::Const(0.5));
                            (Expr::bin(BinOp::Div, a, den), ba * 2.0)
                        }
                    }
                }
            }
            1 => {
                let (a, ba) = self.real(depth - 1);
                (Expr::Neg(Box::new(a)), ba)
            }
            2 => {
                let (a, ba) = self.real(depth - 1);
                self.math(a, ba, depth)
            }
            3 => self.call(depth),
            4 => {
                let i = *self.rng.pick(&closures);
                let (name, bound) = (self.vars[i].name.clone(), self.vars[i].bound);
                let (a, _) = self.real_capped(depth - 1);
                (Expr::ClosureCall(name, Box::new(a)), bound)
            }
            5 => {
                let c = self.cond(1);
                let (a, ba) = self.real(depth - 1);
                let (b, bb) = self.real(depth - 1);
                if self.rng.chance(0.7) {
                    (
                        Expr::IfElse(Box::new(c), Box::new(a), Box::new(b)),
                        ba.max(bb),
                    )
                } else {
                    (
                        Expr::MatchBool(Box::new(c), Box::new(a), Box::new(b)),
                        ba.max(bb),
                    )
                }
            }
            6 => {
                let scrut = self.iexpr();
                let n = self.rng.range(2, 3);
                let mut arms = Vec::new();
                let mut bound: f64 = 0.0;
                for _ in 0..n {
                    let (a, ba) = self.real(depth - 1);
                    bound = bound.max(ba);
                    arms.push(a);
                }
                (Expr::MatchInt(scrut, arms), bound)
            }
            _ => self.chain(depth),
        }
    }

    /// A call to an earlier helper, with arguments of any activity (a
    /// helper returning a `Pt` read by one of its fields).
    fn call(&mut self, depth: usize) -> (Expr, f64) {
        let h = self.rng.below(self.helpers.len());
        // Sometimes a derivative of the helper instead (not in
        // `#[preaccumulate]` loops; not in a helper taking a function: one
        // whose tangent is computed from differentiated values takes its
        // function to the tape, where it takes no compiled closure).
        if self.mode == Mode::Normal && !self.takes_function && self.rng.chance(0.1) {
            if let Some(derivative) = self.derivative_of(h, depth) {
                return derivative;
            }
        }
        let Some(call) = self.call_of(h, depth) else {
            return self.leaf();
        };
        let bound = self.helpers[h].bound;
        if self.helpers[h].returns_struct {
            let field = if self.rng.chance(0.5) { "a" } else { "b" };
            return (Expr::CallField(Box::new(call), field), bound);
        }
        (call, bound)
    }

    /// A derivative of helper `h` taken here (`h::grad(..).x0`,
    /// `h::jvp(.., &h::Grad { .. }).1`, ..), squashed: `None` where no call
    /// fits or the helper has a `Pt` parameter or result.
    fn derivative_of(&mut self, h: usize, depth: usize) -> Option<(Expr, f64)> {
        let sig = self.helpers[h].clone();
        // (A function taking functions has no derivatives of its own.)
        if sig.returns_struct
            || sig
                .params
                .iter()
                .any(|p| matches!(p, ParamTy::Struct | ParamTy::Structs(_) | ParamTy::Func))
        {
            return None;
        }
        let call = self.call_of(h, depth)?;
        let Expr::Call(_, args) = &call else {
            return None;
        };
        let fields: Vec<(String, ParamTy, Arg)> = sig
            .names
            .iter()
            .zip(&sig.params)
            .zip(args)
            .filter(|((_, ty), _)| {
                matches!(ty, ParamTy::Real | ParamTy::Slice(_) | ParamTy::Array(_))
            })
            .map(|((name, ty), arg)| (name.clone(), *ty, arg.clone()))
            .collect();
        if fields.is_empty() {
            return None;
        }
        let (field, ty, _) = self.rng.pick(&fields).clone();
        let read = Read {
            element: !matches!(ty, ParamTy::Real),
            field,
        };
        let inner = depth.max(1) - 1;
        let derivative = match self.rng.below(4) {
            0 => Derivative::Grad(read),
            1 => Derivative::Value,
            2 => Derivative::Vjp(Box::new(self.real_capped(inner).0), read),
            _ => {
                let mut tangents = Vec::new();
                for (field, ty, arg) in fields {
                    let value = match (ty, arg) {
                        (ParamTy::Slice(_), Arg::Slice { name, .. }) => {
                            TangentValue::Slice(self.real_capped(inner).0, name)
                        }
                        (ParamTy::Array(n), _) => {
                            TangentValue::Array((0..n).map(|_| self.real_capped(inner).0).collect())
                        }
                        _ => TangentValue::Real(self.real_capped(inner).0),
                    };
                    tangents.push(Tangent { field, value });
                }
                Derivative::Jvp(tangents)
            }
        };
        let e = Expr::Derivative(Box::new(call), derivative);
        Some(self.squash(e, sig.bound * 4.0))
    }

    /// A call of helper `h` (`None` if no value fits one of its
    /// parameters here).
    fn call_of(&mut self, h: usize, depth: usize) -> Option<Expr> {
        let params = self.helpers[h].params.clone();
        // (An array parameter, `arr`, is read like a slice but is not one:
        // it is not passed to slice parameters.)
        let seqs: Vec<usize> = self
            .sequences()
            .into_iter()
            .filter(|&i| self.vars[i].name != "arr")
            .collect();
        let structs = self.visible_where(|v| v.kind == Kind::Struct);
        if params.iter().any(|p| matches!(p, ParamTy::Slice(_))) && seqs.is_empty() {
            return None;
        }
        if params.iter().any(|p| matches!(p, ParamTy::Struct)) && structs.is_empty() {
            return None;
        }
        let mut args = Vec::new();
        for p in params {
            match p {
                ParamTy::Slice(_) => {
                    let i = *self.rng.pick(&seqs);
                    let v = &self.vars[i];
                    args.push(Arg::Slice {
                        name: v.name.clone(),
                        buffer: matches!(v.kind, Kind::Buf(_)),
                    });
                }
                ParamTy::Struct => {
                    let i = *self.rng.pick(&structs);
                    args.push(Arg::Struct(self.vars[i].name.clone()));
                }
                ParamTy::Array(len) => {
                    let elems = (0..len)
                        .map(|_| {
                            let (e, b) = self.real(depth.max(1) - 1);
                            if b > 3.0 {
                                self.squash(e, b).0
                            } else {
                                e
                            }
                        })
                        .collect();
                    args.push(Arg::Array(elems));
                }
                ParamTy::Func => args.push(self.closure_arg()),
                _ => {
                    let (e, b) = self.real(depth.max(1) - 1);
                    // Helpers assume arguments of magnitude about 2.
                    let (e, _) = if b > 3.0 { self.squash(e, b) } else { (e, b) };
                    args.push(Arg::Real(e));
                }
            }
        }
        Some(Expr::Call(self.helpers[h].name.clone(), args))
    }

    /// An iterator chain over a slice or buffer.
    fn chain(&mut self, depth: usize) -> (Expr, f64) {
        let seqs = self.sequences();
        let mut i = *self.rng.pick(&seqs);
        // Sometimes the buffer field of a `&Ws` parameter (`ws.w.iter()`).
        let weights = self.visible_where(|v| matches!(v.kind, Kind::Weights(_)));
        if !weights.is_empty() && self.rng.chance(0.3) {
            i = *self.rng.pick(&weights);
        }
        let src = match self.vars[i].kind {
            Kind::Weights(_) => format!("{}.w", self.vars[i].name),
            _ => self.vars[i].name.clone(),
        };
        let eb = self.vars[i].bound;
        let len = match self.vars[i].kind {
            Kind::Slice(0) => 5.0,
            Kind::Slice(n) | Kind::Buf(n) | Kind::Weights(n) => n as f64,
            _ => 5.0,
        };
        let mark = self.vars.len();
        let v = self.name("u");
        self.declare(&v, Kind::Real, eb, false);
        let pick = self.rng.below(7);
        let out = match pick {
            0 => {
                let (body, bb) = self.real_capped(depth - 1);
                (
                    Chain::MapSum {
                        v,
                        body: Box::new(body),
                    },
                    bb * len,
                )
            }
            1 => {
                let j = *self.rng.pick(&seqs);
                let other = self.vars[j].name.clone();
                let w = self.name("u");
                let wb = self.vars[j].bound;
                self.declare(&w, Kind::Real, wb, false);
                let (body, bb) = self.real_capped(depth - 1);
                (
                    Chain::ZipSum {
                        other,
                        v,
                        w,
                        body: Box::new(body),
                    },
                    bb * len,
                )
            }
            2 => {
                let j = self.name("j");
                self.declare(&j, Kind::Int(len as usize), len, false);
                let (body, bb) = self.real_capped(depth - 1);
                (
                    Chain::EnumSum {
                        j,
                        v,
                        body: Box::new(body),
                    },
                    bb * len,
                )
            }
            3 => {
                self.vars.truncate(mark);
                let (init, _) = self.real_capped(depth - 1);
                let acc = self.name("a");
                self.declare(&acc, Kind::Real, 2.0, false);
                self.declare(&v, Kind::Real, eb, false);
                // The step reads the accumulator, as folds do (deltad needs
                // the closure's result to be a dual value like the initial
                // one).
                let (body, bb) = self.real(depth - 1);
                let step = Expr::bin(
                    BinOp::Add,
                    Expr::bin(BinOp::Mul, Expr::Var(acc.clone()), Expr::Const(0.5)),
                    body,
                );
                let (body, _) = self.squash(step, bb + 1.0);
                (
                    Chain::Fold {
                        acc,
                        v,
                        init: Box::new(init),
                        body: Box::new(body),
                    },
                    2.0,
                )
            }
            4 => {
                let (body, bb) = self.real(depth - 1);
                let (body, _) = self.squash(body, bb);
                let body = Expr::bin(
                    BinOp::Add,
                    Expr::Const(1.0),
                    Expr::bin(BinOp::Mul, Expr::Const(0.5), body),
                );
                (
                    Chain::Product {
                        v,
                        body: Box::new(body),
                    },
                    1.5f64.powf(len),
                )
            }
            5 => {
                let threshold = self.rng.constant(-1.0, 1.0);
                let (body, bb) = self.real_capped(depth - 1);
                (
                    Chain::FilterSum {
                        threshold,
                        v,
                        body: Box::new(body),
                    },
                    bb * len,
                )
            }
            _ => (Chain::Max, eb),
        };
        self.vars.truncate(mark);
        let (chain, bound) = out;
        self.cap(Expr::Chain(src, chain), bound)
    }

    /// A math method applied to `a` (magnitude at most `ba`), with its
    /// argument moved into the method's domain.
    fn math(&mut self, a: Expr, ba: f64, depth: usize) -> (Expr, f64) {
        const ALL: &[&str] = &[
            "sin",
            "cos",
            "tan",
            "asin",
            "acos",
            "atan",
            "sinh",
            "cosh",
            "tanh",
            "asinh",
            "acosh",
            "atanh",
            "exp",
            "exp2",
            "exp_m1",
            "ln",
            "log2",
            "log10",
            "ln_1p",
            "sqrt",
            "cbrt",
            "recip",
            "abs",
            "signum",
            "floor",
            "ceil",
            "round",
            "round_ties_even",
            "trunc",
            "fract",
            "to_degrees",
            "to_radians",
            "atan2",
            "powf",
            "powi",
            "hypot",
            "log",
            "copysign",
            "rem_euclid",
            "div_euclid",
            "max",
            "min",
            "clamp",
            "mul_add",
            "sin_cos",
        ];
        let name: &'static str = ALL[self.rng.below(ALL.len())];
        let style = if !self.checkpoint && self.rng.chance(0.2) {
            Style::Path
        } else {
            Style::Method
        };
        let un = |name: &'static str, e: Expr| Expr::Unary(name, Box::new(e), style);
        // x * x + c: positive, at least c.
        let positive = |e: &Expr, c: f64| {
            Expr::bin(
                BinOp::Add,
                Expr::bin(BinOp::Mul, e.clone(), e.clone()),
                Expr::Const(c),
            )
        };
        let scaled_sin =
            |e: Expr, k: f64| Expr::bin(BinOp::Mul, Expr::unary("sin", e), Expr::Const(k));
        match name {
            "sin" | "cos" | "tanh" => (un(name, a), 1.0),
            "atan" => (un(name, a), 1.6),
            "asinh" => (un(name, a), (ba + 1.0).ln() + 1.0),
            "tan" => (un(name, Expr::unary("sin", a)), 1.6),
            "asin" | "acos" | "atanh" => (un(name, scaled_sin(a, 0.9)), 3.2),
            "sinh" | "cosh" | "exp" | "exp2" | "exp_m1" => {
                let (a, ba) = if ba > 3.0 {
                    self.squash(a, ba)
                } else {
                    (a, ba)
                };
                (un(name, a), ba.exp() + 1.0)
            }
            "acosh" => (un(name, positive(&a, 1.5)), (ba * ba + 3.0).ln() + 1.0),
            "ln" | "log2" | "log10" => (un(name, positive(&a, 0.5)), 2.0 * (ba + 1.0).ln() + 2.0),
            "ln_1p" => (
                un(name, Expr::bin(BinOp::Mul, a.clone(), a)),
                2.0 * (ba + 1.0).ln() + 1.0,
            ),
            "sqrt" | "cbrt" => (un(name, positive(&a, 0.5)), ba + 1.0),
            "recip" => (un(name, positive(&a, 0.5)), 2.0),
            "abs" | "signum" | "floor" | "ceil" | "round" | "round_ties_even" | "trunc"
            | "fract" => (un(name, a), ba + 1.0),
            "to_degrees" => {
                let (a, ba) = self.squash(a, ba);
                (un(name, a), 60.0 * ba)
            }
            "to_radians" => (un(name, a), ba),
            "sin_cos" => (Expr::SinCos(Box::new(a), self.rng.below(2)), 1.0),
            "powi" => {
                let n = *self.rng.pick(&[-2, -1, 0, 1, 2, 3, 4]);
                if n < 0 {
                    (Expr::Powi(Box::new(positive(&a, 1.0)), n), 1.0)
                } else if ba.powi(n) > CAP {
                    let (a, ba) = self.squash(a, ba);
                    (Expr::Powi(Box::new(a), n), ba.powi(n))
                } else {
                    (Expr::Powi(Box::new(a), n), ba.powi(n))
                }
            }
            _ => {
                let (b, bb) = self.real(depth.saturating_sub(2));
                let multi =
                    |args: Vec<Expr>, recv: Expr| Expr::Multi(name, Box::new(recv), args, style);
                match name {
                    "atan2" => (multi(vec![b], a), 3.2),
                    "powf" => {
                        let (e, _) = self.squash(b, bb);
                        (multi(vec![e], positive(&a, 0.5)), ba * ba + 1.0)
                    }
                    "hypot" => (multi(vec![b], a), ba + bb),
                    "log" => (
                        multi(vec![positive(&b, 2.0)], positive(&a, 0.5)),
                        2.0 * (ba + 1.0).ln() + 2.0,
                    ),
                    "copysign" => (multi(vec![b], a), ba),
                    "rem_euclid" => (multi(vec![positive(&b, 0.5)], a), bb * bb + 0.5),
                    "div_euclid" => (multi(vec![positive(&b, 0.5)], a), 2.0 * ba + 1.0),
                    "max" | "min" => (multi(vec![b], a), ba.max(bb)),
                    "clamp" => {
                        let lo = self.rng.constant(-1.5, 0.0);
                        let hi = self.rng.constant(0.0, 1.5);
                        (multi(vec![Expr::Const(lo), Expr::Const(hi)], a), 1.5)
                    }
                    _ => {
                        let (c, bc) = self.real(depth.saturating_sub(2));
                        let e = multi(vec![b, c], a);
                        self.cap(e, ba * bb + bc)
                    }
                }
            }
        }
    }
}
