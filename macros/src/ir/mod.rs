//! The IR of the compiled path: a small structured form of the
//! differentiable subset of a function body, which the analyses read and
//! from which the forward pass and the adjoint are emitted.
//!
//! * Variables are resolved: every binding of the body is one [`Var`]
//!   (shadowing gives a new one), referred to by [`VarId`]. Reals are
//!   scalars or elements of buffers (slice and `Vec` parameters, local
//!   `vec![..]` and arrays); everything else (integers, bools, constant
//!   data of any type) is carried along as plain Rust.
//! * Statements are structured: `let`, assignment and compound assignment
//!   to a variable or an element, `if`, `match`, `for` over a range, `while`,
//!   `loop`, `break`/`continue` (to a resolved loop), `return`, nested
//!   blocks, and effects the adjoint ignores (printing, assertions).
//! * Expressions are trees without control flow: arithmetic, comparisons,
//!   math methods, element reads, casts, calls of differentiated functions
//!   and vector primitives, and opaque plain expressions. Control flow that
//!   yields a value (`let y = if c { a } else { b };`, a block's tail, `return
//!   e`) is lowered into statements assigning a variable, so every value an
//!   adjoint needs lives in a variable.
//!
//! Every node keeps its span, so an analysis can point at the construct
//! that keeps a function off the compiled path.

use proc_macro2::Span;
use syn::{Ident, Lifetime};

mod lower;
pub(crate) mod math;

pub(crate) use lower::{lower, Unsupported};
pub(crate) use math::Math;

pub(crate) type VarId = usize;
pub(crate) type LoopId = usize;
pub(crate) type StmtId = usize;
pub(crate) type BlockId = usize;

/// A lowered function body.
pub(crate) struct Function {
    pub vars: Vec<Var>,
    /// The variable of each parameter of the signature, in order.
    pub params: Vec<VarId>,
    pub body: Block,
    /// The variable the function's result is assigned to (by the body's
    /// tail and by every `return`).
    pub result: VarId,
    pub loops: Vec<LoopInfo>,
    /// Statement ids are `0..stmt_count`.
    pub stmt_count: usize,
    /// Block ids are `0..block_count`.
    pub block_count: usize,
    /// The fields read of values of user types, by [`Origin::Field`].
    pub fields: Vec<FieldLeaf>,
    /// For a function returning a user type: the result's fields, each a
    /// variable assigned by every `return` and the body's tail.
    pub result_struct: Option<StructValue>,
    /// The closures the body passes to function parameters of its callees,
    /// each a function of its own: [`FnArg::Closure`]'s `closure`.
    pub closures: Vec<ClosureFn>,
    /// The function's own function parameters it passes on to callees'
    /// function parameters: [`FnArg::Passed`]'s `adapter`.
    pub passed: Vec<PassedFn>,
}

/// A function parameter passed on to a callee's function parameter
/// (`line_search(f, x)` in a function taking `f`), or read by a closure
/// the body passes to a callee (`argmin(|t: f64| f(..), ..)`): the passes
/// give the callee (or the closure) an adapter implementing its traits by
/// calling the function parameter's.
#[derive(Clone)]
pub(crate) struct PassedFn {
    /// The function parameter (a [`VarKind::Function`] variable).
    pub var: VarId,
    pub to: PassedTo,
    pub span: Span,
}

/// Whose function parameter a [`PassedFn`] is given to.
#[derive(Clone)]
pub(crate) enum PassedTo {
    /// A callee's (relocated) parameter.
    Callee { callee: syn::Path, param: usize },
    /// Parameter `param` of `Function::closures[closure]` (its captures
    /// are its last parameters).
    Closure { closure: usize, param: usize },
}

/// A closure passed to a callee's function parameter, as the function the
/// passes compile: its parameters, then one per variable it captures (the
/// call passes them, [`FnArg::Closure`]'s `captures`), `#[no_grad]` where
/// the captured variable is plain data.
#[derive(Clone)]
pub(crate) struct ClosureFn {
    pub item: syn::ItemFn,
    pub no_grad: Vec<bool>,
    /// The callee (relocated) and its parameter the closure is given to.
    pub callee: syn::Path,
    pub param: usize,
    /// The number of its own parameters (its captures follow).
    pub own: usize,
    /// The parameters (by index) of captured locals whose type the
    /// lowering does not know (`_` in `item`), and their variables: typed
    /// from the caller's analysis before the closure is compiled.
    pub untyped: Vec<(usize, VarId)>,
    pub span: Span,
}

impl Function {
    /// The value the `let` of `var` gives it, if it has one.
    pub(crate) fn let_value(&self, var: VarId) -> Option<&Expr> {
        let mut value = None;
        self.body.each_stmt(&mut |stmt| {
            if let StmtKind::Let {
                var: v,
                init: Some(init),
            } = &stmt.kind
            {
                if *v == var {
                    value = Some(init);
                }
            }
        });
        value
    }
}

/// A value of a user type built from variables: the type's path as written
/// in its struct literal, and each field's variable (or nested value).
#[derive(Clone)]
pub(crate) struct StructValue {
    pub path: syn::Path,
    pub fields: Vec<(syn::Member, StructField)>,
}

#[derive(Clone)]
pub(crate) enum StructField {
    Var(VarId),
    Struct(StructValue),
}

impl StructValue {
    /// Every field variable, with the members leading to it.
    pub(crate) fn leaves(&self) -> Vec<(Vec<syn::Member>, VarId)> {
        let mut out = Vec::new();
        for (member, field) in &self.fields {
            match field {
                StructField::Var(var) => out.push((vec![member.clone()], *var)),
                StructField::Struct(nested) => {
                    for (mut members, var) in nested.leaves() {
                        members.insert(0, member.clone());
                        out.push((members, var));
                    }
                }
            }
        }
        out
    }
}

/// A field of a value of a user type that the body reads (`p.mass`,
/// `p.pos.x`): a variable of its own ([`Origin::Field`]) whose type the
/// analysis infers from how the body uses it.
pub(crate) struct FieldLeaf {
    /// The variable holding the value (a [`VarKind::Struct`]).
    pub base: VarId,
    /// The members from the value to the field, outermost first.
    pub members: Vec<syn::Member>,
}

pub(crate) type FieldId = usize;

impl Var {
    /// True for a variable the macro made and named (a temporary, a field
    /// of a literal written in place, a call's result read inline), which
    /// messages must not name.
    pub(crate) fn named_by_macro(&self) -> bool {
        self.name.to_string().starts_with("__deltad")
    }
}

/// One binding.
pub(crate) struct Var {
    /// The user's identifier (with its span, so plain code naming it
    /// resolves), or a generated one for temporaries.
    pub name: Ident,
    /// Declared `mut` (temporaries assigned on several paths count too).
    pub mutable: bool,
    pub origin: Origin,
    pub kind: VarKind,
    /// A buffer that is an array (`[x; N]`, `[a, b]`, an array parameter).
    pub array: bool,
    /// The type written in the `let`, if any.
    pub annotation: Option<syn::Type>,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Parameter number `n` of the signature.
    Param(usize),
    /// A `let` of the body.
    Local,
    /// The variable of a `for` loop over a range.
    LoopIndex,
    /// A value the lowering named: a hoisted call or control-flow value.
    Temp,
    /// The function's result.
    Result,
    /// A name bound by a `match` arm's pattern.
    Pattern,
    /// A field of a value of a user type (`Function::fields`): read where
    /// the body reads it, never assigned.
    Field(FieldId),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VarKind {
    /// A single value: a real or anything discrete.
    Scalar,
    /// A buffer of reals of fixed length: a slice, `Vec` or array
    /// parameter, or a local `vec![..]` / array.
    Buffer,
    /// A closure of the body: inlined where it is called, never a value.
    Closure,
    /// A value of a user type (`#[derive(Differentiable)]`), held whole as
    /// its twin: a parameter, read through its fields.
    Struct,
    /// A buffer of values of a user type (`&[Particle]`): a parameter,
    /// read through its elements' fields.
    Structs,
    /// A function parameter (`f: F` with `F: Fn(&[f64]) -> f64`): the
    /// passes take it as an object with compiled passes of its own (a
    /// caller's closure), which its calls call.
    Function,
}

/// A loop, for `break` and `continue`.
pub(crate) struct LoopInfo {
    pub label: Option<Lifetime>,
    /// `#[checkpoint]` (a `for` loop): the forward pass keeps snapshots of
    /// the loop's state instead of what its iterations keep, and the
    /// adjoint re-runs it segment by segment.
    pub checkpoint: bool,
}

pub(crate) struct Block {
    pub id: BlockId,
    pub stmts: Vec<Stmt>,
    /// Items declared in the block (`use`, `const`, nested `fn`): both
    /// passes declare them where the body does.
    pub items: Vec<syn::Item>,
}

pub(crate) struct Stmt {
    pub id: StmtId,
    pub span: Span,
    pub kind: StmtKind,
}

// IR nodes are built once per expansion and walked by reference: their
// sizes do not matter, and boxing every block would only add noise.
#[allow(clippy::large_enum_variant)]
pub(crate) enum StmtKind {
    /// `let var = init;`, or `let var;` for a temporary every path assigns
    /// before reading (the value of `if`, `match`, a loop).
    Let {
        var: VarId,
        init: Option<Expr>,
    },
    /// `place = value`, `place += value`, ... `first`: the first assignment
    /// of a `let var;` temporary on its path (nothing is overwritten).
    Assign {
        place: Place,
        op: AssignOp,
        value: Expr,
        first: bool,
    },
    If {
        cond: Expr,
        then: Block,
        els: Option<Block>,
    },
    Match {
        scrutinee: Expr,
        arms: Vec<Arm>,
    },
    For {
        id: LoopId,
        /// The loop variable (`None` for `_`).
        var: Option<VarId>,
        range: RangeIter,
        body: Block,
    },
    While {
        id: LoopId,
        cond: Expr,
        body: Block,
    },
    Loop {
        id: LoopId,
        body: Block,
    },
    Break {
        target: LoopId,
    },
    Continue {
        target: LoopId,
    },
    /// Leaves the function; the result variable was assigned just before.
    Return,
    /// A nested block `{ .. }`.
    Block(Block),
    /// A macro the forward pass runs and the adjoint ignores (printing,
    /// assertions, `panic!`).
    Effect(Effect),
}

/// A `match` arm. Patterns match plain values; the names they bind are
/// `vars`.
pub(crate) struct Arm {
    pub pat: syn::Pat,
    pub vars: Vec<VarId>,
    pub guard: Option<Expr>,
    pub body: Block,
}

/// `start..end` or `start..=end`, possibly `.rev()`.
pub(crate) struct RangeIter {
    pub start: Expr,
    pub end: Expr,
    pub inclusive: bool,
    pub reversed: bool,
}

/// A macro statement: `path!(args..)` with its expression arguments
/// lowered (`None` for non-expression tokens kept as written).
pub(crate) struct Effect {
    pub mac: syn::Macro,
    pub args: Vec<EffectArg>,
    /// The variables its format strings name inline (`{r}`, `{r:?}`,
    /// `{:w$}`): read by it, though not among its arguments (so the
    /// analyses see the reads; never emitted).
    pub captures: Vec<Expr>,
}

#[allow(clippy::large_enum_variant)]
pub(crate) enum EffectArg {
    Expr(Expr),
    /// A format string or other literal tokens.
    Tokens(proc_macro2::TokenStream),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AssignOp {
    Set,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

pub(crate) enum Place {
    Var(VarId),
    /// `buffer[index]`.
    Elem(VarId, Box<Expr>),
}

impl Place {
    pub(crate) fn var(&self) -> VarId {
        match self {
            Place::Var(var) | Place::Elem(var, _) => *var,
        }
    }
}

#[derive(Clone)]
pub(crate) struct Expr {
    pub span: Span,
    pub kind: ExprKind,
}

#[derive(Clone)]
pub(crate) enum ExprKind {
    /// A literal as written (`2.0`, `3`, `true`).
    Lit(syn::Lit),
    Var(VarId),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Arith(ArithOp, Box<Expr>, Box<Expr>),
    Compare(syn::BinOp, Box<Expr>, Box<Expr>),
    /// `&&`, `||`, and bit operators on plain values.
    Logic(syn::BinOp, Box<Expr>, Box<Expr>),
    /// A math method: receiver first, then its arguments (`powi`'s is an
    /// integer). `path_style`: written `f64::sin(x)`.
    Math {
        math: Math,
        args: Vec<Expr>,
        path_style: Option<syn::Path>,
    },
    /// `buffer[index]`.
    Elem(VarId, Box<Expr>),
    /// `buffer.len()`.
    Len(VarId),
    /// `expr as ty`.
    Cast(Box<Expr>, syn::Type),
    /// A call of a function deltad may differentiate.
    Call(Call),
    /// `deltad::sum(&v)`, `deltad::dot(&a, &b)`, `deltad::log_sum_exp(&v)`.
    Primitive(Primitive, Vec<BufferRef>),
    /// A new local buffer (only as the value of a `let`).
    NewBuffer(NewBuffer),
    /// A field of a local of a user type that a call returned (see
    /// `Function::call_fields`), of an element of a buffer of values of a
    /// user type (`index`), or an element of a buffer field of a parameter
    /// (`elem`): only as the value of a `let`.
    Field {
        base: VarId,
        index: Option<Box<Expr>>,
        members: Vec<syn::Member>,
        /// An element of the buffer the members name (`p.w[i]` of a
        /// parameter `p`), read after them.
        elem: Option<Box<Expr>>,
    },
    /// An expression the lowering does not interpret: plain Rust computing
    /// a value without derivatives. `reads` are the variables it names.
    Opaque {
        expr: Box<syn::Expr>,
        reads: Vec<VarId>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Primitive {
    Sum,
    Dot,
    LogSumExp,
}

/// The bounds of `buffer[start..end]` (`None` where a `..` form omits one).
pub(crate) type Bounds = (Option<Box<Expr>>, Option<Box<Expr>>);

/// A buffer, or a range of it, passed by reference.
#[derive(Clone)]
pub(crate) struct BufferRef {
    pub var: VarId,
    /// `buffer[start..end]`: each bound absent for `..` forms.
    pub range: Option<Bounds>,
    /// Passed by value (`f(v)` for a local `v`, `f([a, b])`): a buffer the
    /// caller owns, which a `#[no_grad]` parameter takes by value.
    pub by_value: bool,
    pub span: Span,
}

#[derive(Clone)]
pub(crate) struct Call {
    /// The function as written (relocated).
    pub path: syn::Path,
    /// `#[checkpoint] let y = f(..);`: the forward pass keeps nothing of
    /// the callee; the adjoint runs its forward pass again first.
    pub checkpoint: bool,
    pub args: Vec<CallArg>,
    /// The call expression as written (relocated), for plain calls.
    pub written: Box<syn::Expr>,
    /// The members of `written`'s value the call is (a derivative's field
    /// taken inside: `path` the entry `f::__vjp_x`, `written` the
    /// `f::vjp(..)` whose `.1.x` this is).
    pub read: Vec<syn::Member>,
}

#[derive(Clone)]
pub(crate) enum CallArg {
    /// A scalar value.
    Value(Expr),
    /// A reference to plain data (`&data`, `&[1.0, 2.0]`), passed as
    /// written.
    Plain(Expr),
    /// A buffer or part of one, by reference.
    Buffer(BufferRef),
    /// A value of a user type passed whole: a parameter or a call's result,
    /// or (`index`) an element of a buffer of them.
    Struct {
        var: VarId,
        index: Option<Box<Expr>>,
        span: Span,
    },
    /// A function: the caller's own function parameter passed on, or a
    /// closure.
    Function(FnArg),
    /// A local built by a struct literal (or a literal written in place),
    /// passed whole: the passes build its twin from the fields' variables,
    /// `leaves` (one variable read each, in the order of
    /// [`StructValue::leaves`]).
    Literal {
        value: StructValue,
        leaves: Vec<Expr>,
        /// Written `&q` (else `q` or `*q`: by value).
        by_ref: bool,
        span: Span,
    },
}

/// A function passed to a callee's function parameter.
#[derive(Clone)]
pub(crate) enum FnArg {
    /// The function's own function parameter.
    Param(VarId),
    /// A closure written at the call: `Function::closures[closure]`, whose
    /// captured variables are the call's arguments `captures` (after the
    /// callee's own).
    Closure {
        closure: usize,
        captures: Vec<usize>,
        span: Span,
    },
    /// The function's own function parameter passed on to a callee:
    /// `Function::passed[adapter]`.
    Passed {
        var: VarId,
        adapter: usize,
        span: Span,
    },
}

#[derive(Clone)]
pub(crate) enum NewBuffer {
    /// `vec![elem; len]` or `[elem; len]`.
    Repeat { elem: Box<Expr>, len: Box<Expr> },
    /// `vec![a, b, ..]` or `[a, b, ..]`.
    List(Vec<Expr>),
}

impl NewBuffer {
    pub(crate) fn elems(&self) -> Vec<&Expr> {
        match self {
            NewBuffer::Repeat { elem, .. } => vec![elem],
            NewBuffer::List(elems) => elems.iter().collect(),
        }
    }
}

impl Expr {
    pub(crate) fn new(kind: ExprKind, span: Span) -> Expr {
        Expr { span, kind }
    }

    /// The value of an integer literal, if it is one that fits `N`.
    pub(crate) fn int_literal<N>(&self) -> Option<N>
    where
        N: std::str::FromStr,
        N::Err: std::fmt::Display,
    {
        match &self.kind {
            ExprKind::Lit(syn::Lit::Int(int)) => int.base10_parse().ok(),
            _ => None,
        }
    }

    /// An index `i`, `i + c`, `c + i` or `i - c` (`c` an integer literal):
    /// the variable and the offset.
    pub(crate) fn offset_of(&self) -> Option<(VarId, i64)> {
        match &self.kind {
            ExprKind::Var(var) => Some((*var, 0)),
            ExprKind::Arith(ArithOp::Add, a, b) => match (&a.kind, &b.kind) {
                (ExprKind::Var(var), _) => Some((*var, b.int_literal()?)),
                (_, ExprKind::Var(var)) => Some((*var, a.int_literal()?)),
                _ => None,
            },
            ExprKind::Arith(ArithOp::Sub, a, b) => match &a.kind {
                ExprKind::Var(var) => Some((*var, b.int_literal::<i64>()?.checked_neg()?)),
                _ => None,
            },
            _ => None,
        }
    }

    /// True if the expression calls a function (whose forward pass may
    /// keep values, so it cannot be evaluated again freely).
    pub(crate) fn has_call(&self) -> bool {
        let mut found = false;
        self.each_subexpr(&mut |e| found |= matches!(e.kind, ExprKind::Call(_)));
        found
    }

    /// Calls `f` on each variable this expression itself names (not its
    /// subexpressions): a variable read, the buffer of an element or a
    /// length, the base of a field, what an opaque expression reads, the
    /// buffers and values of user types passed to a call or a vector
    /// primitive.
    pub(crate) fn each_named(&self, f: &mut dyn FnMut(VarId)) {
        match &self.kind {
            ExprKind::Var(var) | ExprKind::Elem(var, _) | ExprKind::Len(var) => f(*var),
            ExprKind::Field { base, .. } => f(*base),
            ExprKind::Opaque { reads, .. } => reads.iter().for_each(|&var| f(var)),
            ExprKind::Primitive(_, buffers) => buffers.iter().for_each(|b| f(b.var)),
            ExprKind::Call(call) => {
                for arg in &call.args {
                    match arg {
                        CallArg::Buffer(buffer) => f(buffer.var),
                        CallArg::Struct { var, .. } => f(*var),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }

    /// Calls `f` on this expression and every subexpression.
    pub(crate) fn each_subexpr<'a>(&'a self, f: &mut dyn FnMut(&'a Expr)) {
        f(self);
        for child in self.children() {
            child.each_subexpr(f);
        }
    }

    /// The direct subexpressions, in evaluation order (the bounds of buffer
    /// ranges included).
    pub(crate) fn children(&self) -> Vec<&Expr> {
        let mut out = Vec::new();
        match &self.kind {
            ExprKind::Lit(_) | ExprKind::Var(_) | ExprKind::Len(_) | ExprKind::Opaque { .. } => {}
            ExprKind::Field { index, elem, .. } => {
                out.extend(index.as_deref());
                out.extend(elem.as_deref());
            }
            ExprKind::Neg(a) | ExprKind::Not(a) | ExprKind::Cast(a, _) => out.push(&**a),
            ExprKind::Arith(_, a, b) | ExprKind::Compare(_, a, b) | ExprKind::Logic(_, a, b) => {
                out.push(&**a);
                out.push(&**b);
            }
            ExprKind::Math { args, .. } => out.extend(args),
            ExprKind::Elem(_, index) => out.push(&**index),
            ExprKind::Call(call) => {
                for arg in &call.args {
                    match arg {
                        CallArg::Value(e) | CallArg::Plain(e) => out.push(e),
                        CallArg::Buffer(b) => b.each_bound(&mut |e| out.push(e)),
                        CallArg::Struct { index, .. } => out.extend(index.as_deref()),
                        CallArg::Literal { leaves, .. } => out.extend(leaves),
                        CallArg::Function(_) => {}
                    }
                }
            }
            ExprKind::Primitive(_, buffers) => {
                for b in buffers {
                    b.each_bound(&mut |e| out.push(e));
                }
            }
            ExprKind::NewBuffer(new) => match new {
                NewBuffer::Repeat { elem, len } => {
                    out.push(&**elem);
                    out.push(&**len);
                }
                NewBuffer::List(elems) => out.extend(elems),
            },
        }
        out
    }
}

impl BufferRef {
    fn each_bound<'a>(&'a self, f: &mut dyn FnMut(&'a Expr)) {
        if let Some((start, end)) = &self.range {
            for bound in [start, end].into_iter().flatten() {
                f(bound);
            }
        }
    }
}

impl Block {
    /// True if the block holds a `break`, `continue` or `return` anywhere.
    pub(crate) fn has_jump(&self) -> bool {
        let mut found = false;
        self.each_stmt(&mut |s| {
            found |= matches!(
                s.kind,
                StmtKind::Break { .. } | StmtKind::Continue { .. } | StmtKind::Return
            )
        });
        found
    }

    /// Calls `f` on every statement of the block, nested ones included, in
    /// order (a statement before the statements inside it).
    pub(crate) fn each_stmt<'a>(&'a self, f: &mut dyn FnMut(&'a Stmt)) {
        for stmt in &self.stmts {
            stmt.each_stmt(f);
        }
    }
}

impl Stmt {
    /// This statement and every statement nested in it.
    pub(crate) fn each_stmt<'a>(&'a self, f: &mut dyn FnMut(&'a Stmt)) {
        f(self);
        for block in self.blocks() {
            block.each_stmt(f);
        }
    }

    /// The blocks directly inside this statement.
    pub(crate) fn blocks(&self) -> Vec<&Block> {
        match &self.kind {
            StmtKind::If { then, els, .. } => std::iter::once(then).chain(els).collect(),
            StmtKind::Match { arms, .. } => arms.iter().map(|arm| &arm.body).collect(),
            StmtKind::For { body, .. }
            | StmtKind::While { body, .. }
            | StmtKind::Loop { body, .. } => {
                vec![body]
            }
            StmtKind::Block(block) => vec![block],
            _ => Vec::new(),
        }
    }

    /// Calls `f` on every expression directly in this statement (not in
    /// nested blocks).
    pub(crate) fn each_expr<'a>(&'a self, f: &mut dyn FnMut(&'a Expr)) {
        match &self.kind {
            StmtKind::Let { init, .. } => init.iter().for_each(f),
            StmtKind::Assign { place, value, .. } => {
                if let Place::Elem(_, index) = place {
                    f(index);
                }
                f(value);
            }
            StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => f(cond),
            StmtKind::Match { scrutinee, arms } => {
                f(scrutinee);
                arms.iter().filter_map(|arm| arm.guard.as_ref()).for_each(f);
            }
            StmtKind::For { range, .. } => {
                f(&range.start);
                f(&range.end);
            }
            StmtKind::Effect(effect) => {
                for arg in &effect.args {
                    if let EffectArg::Expr(e) = arg {
                        f(e);
                    }
                }
                effect.captures.iter().for_each(f);
            }
            StmtKind::Loop { .. }
            | StmtKind::Break { .. }
            | StmtKind::Continue { .. }
            | StmtKind::Return
            | StmtKind::Block(_) => {}
        }
    }
}
