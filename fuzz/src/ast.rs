//! The generated programs as data: functions, statements and expressions of
//! the language `#[differentiate]` supports. The generator builds these, the
//! shrinker edits them, `emit` prints them as Rust.

/// A program: helper functions first (each may call the ones before it),
/// then the entry function `f`, which the harness checks.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// Module name in the generated crate (`p17`).
    pub name: String,
    /// Seed the program was generated from (and its input points are drawn from).
    pub seed: u64,
    /// Whether the module defines the derived struct `Pt { a, b }`.
    pub uses_struct: bool,
    pub funcs: Vec<Func>,
}

impl Program {
    pub fn entry(&self) -> &Func {
        self.funcs.last().expect("a program has an entry function")
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Func {
    pub name: String,
    pub params: Vec<Param>,
    pub body: Vec<Stmt>,
    pub ret: Expr,
    /// A helper returning `Pt { a: ret, b: ret_b }` instead of a real.
    pub ret_b: Option<Expr>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    pub ty: ParamTy,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ParamTy {
    /// `x: f64`, differentiated.
    Real,
    /// `#[no_grad] c: f64`: constant data.
    NoGradReal,
    /// `x: &[f64]` of the given length (the harness passes that many values).
    Slice(usize),
    /// `k: usize`, drawn below the given bound.
    Int(usize),
    /// `p: &Pt`, the derived struct.
    Struct,
    /// `ps: &[Pt]` of the given length.
    Structs(usize),
    /// `ws: &Ws`, the derived struct with a buffer field `w` (of the given
    /// length) and a real `c`.
    Weights(usize),
    /// `a: [f64; N]` of a helper, given an array written in place.
    Array(usize),
    /// `func: F` of a helper, `F: Fn(f64) -> f64`: called in its body
    /// (`func(x)`), given a closure written at the call.
    Func,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AssignOp {
    Set,
    Add,
    Sub,
    Mul,
    Div,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CmpOp {
    Lt,
    Gt,
    Le,
    Ge,
}

/// Loop annotations.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LoopAttr {
    None,
    Checkpoint,
    Preaccumulate,
}

/// How many times a `for` loop runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Count {
    Lit(usize),
    /// `name.len()` of a slice or buffer.
    Len(String),
}

/// What a whole buffer is replaced with.
#[derive(Clone, Debug, PartialEq)]
pub enum Replacement {
    /// `source.method()`: a copy of a slice or buffer of the same length.
    Copy {
        source: String,
        method: &'static str,
    },
    /// `{ let mut temp = vec![0.0; name.len()]; for var in 0..temp.len() {
    /// temp[var] = value; } name = temp; }`: a new buffer moved into it as
    /// its block ends.
    Moved {
        temp: String,
        var: String,
        value: Expr,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `let [mut] name[: f64] = value;`
    Let {
        name: String,
        mutable: bool,
        annotate: bool,
        value: Expr,
    },
    /// `let mut name = vec![fill; len];` (or `let mut name: Vec<f64> = ...`)
    LetBuf {
        name: String,
        len: usize,
        fill: f64,
        annotate: bool,
    },
    /// `let mut name = source.method();`: a copy of a slice or a buffer
    /// (`to_vec`, `to_owned`, `clone`).
    LetCopy {
        name: String,
        source: String,
        method: &'static str,
    },
    /// `let mut name: Vec<f64> = source.iter().map(|&v| body).collect();`
    /// (or `.collect::<Vec<f64>>()`, `turbofish`): a new buffer of the
    /// source's length.
    LetCollect {
        name: String,
        source: String,
        v: String,
        body: Expr,
        turbofish: bool,
    },
    /// `let mut name = Vec::new();` (typed or not, or `with_capacity`) and
    /// `for var in start..count { body; name.push(value); }`: a buffer built
    /// by pushing once per iteration (the body leaves the loop nowhere).
    LetPush {
        name: String,
        /// `Vec<f64>` written: 0 not, 1 in the annotation, 2 as a turbofish.
        typed: u8,
        capacity: bool,
        var: String,
        start: usize,
        count: Count,
        body: Vec<Stmt>,
        value: Expr,
    },
    /// `name = ..;`: the whole buffer replaced (by a value of its length).
    Replace {
        name: String,
        with: Replacement,
    },
    /// `let name = Pt { a, b };`
    LetStruct {
        name: String,
        a: Expr,
        b: Expr,
    },
    /// `let name = helper(..);` of a helper returning a `Pt`.
    LetCall {
        name: String,
        call: Expr,
    },
    /// `let name = |param: f64| body;`
    LetClosure {
        name: String,
        param: String,
        body: Expr,
    },
    /// `name op= value;`
    Assign {
        name: String,
        op: AssignOp,
        value: Expr,
    },
    /// `name[index % name.len()] op= value;`
    BufAssign {
        name: String,
        index: IExpr,
        op: AssignOp,
        value: Expr,
    },
    /// `for var in start..name.len() { name[var] = value; }`: a buffer
    /// overwritten element by element at the loop's variable.
    Refill {
        name: String,
        var: String,
        start: usize,
        value: Expr,
    },
    If {
        cond: Cond,
        then: Vec<Stmt>,
        els: Vec<Stmt>,
    },
    /// `match scrut % arms.len() { 0 => {..}, 1 => {..}, _ => {..} }`
    Match {
        scrut: IExpr,
        arms: Vec<Vec<Stmt>>,
    },
    /// `for var in start..count - gap { body }`, whose body indexes buffers
    /// of known lengths directly at `var` plus offsets (`IExpr::At`); the
    /// range may be empty.
    Stencil {
        var: String,
        start: usize,
        count: Count,
        gap: usize,
        body: Vec<Stmt>,
    },
    /// `[#[attr]] for var in 0..count { body }` (`var` may be `_`).
    For {
        var: String,
        count: Count,
        attr: LoopAttr,
        body: Vec<Stmt>,
    },
    /// `for &elem in slice.iter() {..}` or `for (index, &elem) in slice.iter().enumerate() {..}`
    ForSlice {
        elem: String,
        index: Option<String>,
        slice: String,
        body: Vec<Stmt>,
    },
    /// `for elem in structs.iter() {..}` over a `&[Pt]` parameter.
    ForStructs {
        elem: String,
        slice: String,
        body: Vec<Stmt>,
    },
    /// `let mut counter = 0; while counter < limit { counter += 1; body }`
    While {
        counter: String,
        limit: usize,
        body: Vec<Stmt>,
    },
    /// `let mut counter = 0; loop { counter += 1; if counter > limit { break; } body }`
    Loop {
        counter: String,
        limit: usize,
        body: Vec<Stmt>,
    },
    Break,
    Continue,
    Return(Expr),
}

/// Integer expressions (indices, match scrutinees, loop bounds).
#[derive(Clone, Debug, PartialEq)]
pub enum IExpr {
    Lit(usize),
    Var(String),
    Add(Box<IExpr>, usize),
    /// `var + offset` (or `var - offset`) of a `Stencil` loop's variable,
    /// used as an index without reduction: in bounds by construction.
    At(String, i64),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Cond {
    Cmp(CmpOp, Expr, Expr),
    ICmp(CmpOp, IExpr, IExpr),
    Not(Box<Cond>),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
}

/// Method call style: `x.sin()` or `f64::sin(x)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Style {
    Method,
    Path,
}

/// An argument of a call to a generated helper.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Real(Expr),
    /// A slice parameter (`x`) or a local buffer (`&b0`).
    Slice {
        name: String,
        buffer: bool,
    },
    /// `&q` of a `Pt` (a parameter, a local, a loop's element).
    Struct(String),
    /// `[e0, e1, ..]`, by value, for an array parameter.
    Array(Vec<Expr>),
    /// `|param: f64| body`, for a function parameter.
    Closure {
        param: String,
        body: Expr,
    },
    /// `&func`: the calling function's own function parameter passed on.
    PassedOn,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Chain {
    /// `src.iter().map(|&v| body).sum::<f64>()`
    MapSum { v: String, body: Box<Expr> },
    /// `src.iter().zip(other.iter()).map(|(&v, &w)| body).sum::<f64>()`
    ZipSum {
        other: String,
        v: String,
        w: String,
        body: Box<Expr>,
    },
    /// `src.iter().enumerate().map(|(j, &v)| body).sum::<f64>()`
    EnumSum {
        j: String,
        v: String,
        body: Box<Expr>,
    },
    /// `src.iter().fold(init, |acc, &v| body)`
    Fold {
        acc: String,
        v: String,
        init: Box<Expr>,
        body: Box<Expr>,
    },
    /// `src.iter().map(|&v| body).product::<f64>()`
    Product { v: String, body: Box<Expr> },
    /// `src.iter().filter(|v| **v > threshold).map(|&v| body).sum::<f64>()`
    FilterSum {
        threshold: f64,
        v: String,
        body: Box<Expr>,
    },
    /// `src.iter().copied().fold(f64::NEG_INFINITY, f64::max)`
    Max,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Const(f64),
    Var(String),
    /// `(i as f64)`
    IntAsReal(IExpr),
    /// `name[index % name.len()]` on a slice parameter or a buffer.
    Index(String, IExpr),
    /// `q.a` / `q.b` on a struct.
    Field(String, &'static str),
    /// `ps[i % ps.len()].a` of a `&[Pt]` parameter.
    ElemField(String, IExpr, &'static str),
    /// `ws.w[i % ws.w.len()]` of a `&Ws` parameter.
    FieldElem(String, IExpr),
    /// `helper(..).a` of a helper returning a `Pt` (the inner `Call`).
    CallField(Box<Expr>, &'static str),
    Neg(Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    /// A math method without arguments besides the receiver.
    Unary(&'static str, Box<Expr>, Style),
    /// A math method with real arguments.
    Multi(&'static str, Box<Expr>, Vec<Expr>, Style),
    /// `x.powi(n)`
    Powi(Box<Expr>, i32),
    /// `x.sin_cos().0` / `.1`
    SinCos(Box<Expr>, usize),
    /// A call to a generated helper.
    Call(String, Vec<Arg>),
    /// A derivative of a generated helper taken inside the function (the
    /// inner `Call` gives the helper and its arguments).
    Derivative(Box<Expr>, Derivative),
    /// A call to a local closure.
    ClosureCall(String, Box<Expr>),
    IfElse(Box<Cond>, Box<Expr>, Box<Expr>),
    /// `match scrut % arms.len() { 0 => .., _ => .. }`
    MatchInt(IExpr, Vec<Expr>),
    /// `match cond { true => a, false => b }`
    MatchBool(Box<Cond>, Box<Expr>, Box<Expr>),
    /// An iterator chain over a slice or buffer `src`.
    Chain(String, Chain),
}

impl Expr {
    pub fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Bin(op, Box::new(a), Box::new(b))
    }

    pub fn unary(name: &'static str, a: Expr) -> Expr {
        Expr::Unary(name, Box::new(a), Style::Method)
    }

    /// True when the expression's type is an unsuffixed float literal's
    /// (`{float}`): it names no variable, so a method call on it would be
    /// ambiguous and a `let` of it needs `: f64`. (Methods on such
    /// receivers are printed in path style, `f64::sin(..)`, which is typed.)
    pub fn is_literal_typed(&self) -> bool {
        match self {
            Expr::Const(_) => true,
            Expr::Neg(a) => a.is_literal_typed(),
            Expr::Bin(_, a, b) => a.is_literal_typed() && b.is_literal_typed(),
            Expr::IfElse(_, a, b) | Expr::MatchBool(_, a, b) => {
                a.is_literal_typed() && b.is_literal_typed()
            }
            Expr::MatchInt(_, arms) => arms.iter().all(Expr::is_literal_typed),
            _ => false,
        }
    }
}

/// Which derivative of a helper, and which real of it is read.
#[derive(Clone, Debug, PartialEq)]
pub enum Derivative {
    /// `h::grad(..)` read at a field.
    Grad(Read),
    /// `h::value_and_grad(..).0`.
    Value,
    /// `h::vjp(.., seed).1` read at a field.
    Vjp(Box<Expr>, Read),
    /// `h::jvp(.., &h::Grad { .. }).1`: a tangent per differentiated
    /// parameter, in order.
    Jvp(Vec<Tangent>),
}

/// A field of a helper's `Grad`: `.x0`, or element 0 of a buffer's.
#[derive(Clone, Debug, PartialEq)]
pub struct Read {
    pub field: String,
    pub element: bool,
}

/// The tangent of one differentiated parameter in a nested `jvp`.
#[derive(Clone, Debug, PartialEq)]
pub struct Tangent {
    pub field: String,
    pub value: TangentValue,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TangentValue {
    /// A real parameter's.
    Real(Expr),
    /// A slice parameter's: `vec![e; arg.len()]`, `arg` the slice passed.
    Slice(Expr, String),
    /// An array parameter's: `[e0, e1, ..]`.
    Array(Vec<Expr>),
}
