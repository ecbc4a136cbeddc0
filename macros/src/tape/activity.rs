//! Activity analysis: which values in the body depend on a differentiated
//! input, computed as a fixed point over the whole body.
//!
//! A variable (a binding) is active when any value assigned to it is (loops
//! feed values back, hence the fixed point). The analysis resolves names with
//! its own scopes, gives every binding a shape, and records the final shape of
//! every expression and pattern of the body, keyed by node, for the rewrite.
//! It only reads the syntax tree.

use std::collections::{HashMap, HashSet};

use syn::{Block, Expr, Pat, Stmt};

use crate::macro_args::{MacroArgs, MacroTable};
use crate::methods::{self, MacroKind};
use crate::shape::Shape;
use crate::signature::{Param, Signature};
use crate::syntax;

/// The shapes of every expression and pattern of the body.
#[derive(Default)]
pub(crate) struct Activity {
    exprs: HashMap<usize, Shape>,
    pats: HashMap<usize, Shape>,
    /// Calls whose callee is a local variable (a closure or function value).
    local_calls: HashSet<usize>,
    /// For calls of local closures and function parameters: the shapes of
    /// the callee's parameters (arguments are lifted to them).
    local_call_params: HashMap<usize, Vec<Shape>>,
    /// The parameter and result shapes of every closure of the body.
    closures: HashMap<usize, ClosureShapes>,
}

/// What the analysis knows about one closure: the join of the shapes it is
/// called with, and of the shapes it returns.
#[derive(Clone, Debug)]
pub(crate) struct ClosureShapes {
    pub params: Vec<Shape>,
    pub ret: Shape,
}

impl Activity {
    /// The shape of `expr` (which must be a node of the analyzed body).
    pub(crate) fn expr(&self, expr: &Expr) -> Shape {
        self.exprs
            .get(&(expr as *const Expr as usize))
            .cloned()
            .unwrap_or(Shape::Inactive)
    }

    /// True if the call expression at `call` calls a local variable.
    pub(crate) fn calls_local_value(&self, call: *const Expr) -> bool {
        self.local_calls.contains(&(call as usize))
    }

    /// The shapes of the parameters of the local closure or function called
    /// by the call expression at `call`, if it is one.
    pub(crate) fn local_call_params(&self, call: *const Expr) -> Option<&[Shape]> {
        self.local_call_params
            .get(&(call as usize))
            .map(Vec::as_slice)
    }

    /// The shapes of the closure expression at `closure`.
    pub(crate) fn closure(&self, closure: *const Expr) -> Option<&ClosureShapes> {
        self.closures.get(&(closure as usize))
    }

    /// The shape of the values bound by `pat`.
    pub(crate) fn pat(&self, pat: &Pat) -> Shape {
        self.pats
            .get(&(pat as *const Pat as usize))
            .cloned()
            .unwrap_or(Shape::Any)
    }
}

/// True if `expr` is by its form a real: a float literal, arithmetic,
/// a negation, a math method or a float type's function (`f64::exp(..)`,
/// `f64::sin_cos(..).0`), a parameter declared with the float type
/// (`reals`), in parentheses or a block's tail.
fn evidently_real(expr: &Expr, reals: &HashSet<String>) -> bool {
    let real = |e: &Expr| evidently_real(e, reals);
    let float_math = |e: &Expr| match e {
        Expr::Call(call) => matches!(
            &*call.func,
            Expr::Path(path) if matches!(syntax::classify_call(&path.path), syntax::CallKind::FloatMath(_))
        ),
        _ => false,
    };
    match expr {
        Expr::Lit(lit) => matches!(lit.lit, syn::Lit::Float(_)),
        Expr::Path(path) => path
            .path
            .get_ident()
            .is_some_and(|ident| reals.contains(&ident.to_string())),
        Expr::Paren(paren) => real(&paren.expr),
        Expr::Group(group) => real(&group.expr),
        Expr::Block(block) => match block.block.stmts.last() {
            Some(syn::Stmt::Expr(tail, None)) => real(tail),
            _ => false,
        },
        Expr::Unary(unary) => matches!(unary.op, syn::UnOp::Neg(_)) && real(&unary.expr),
        Expr::Binary(binary) => {
            matches!(
                binary.op,
                syn::BinOp::Add(_) | syn::BinOp::Sub(_) | syn::BinOp::Mul(_) | syn::BinOp::Div(_)
            ) && (real(&binary.left) || real(&binary.right))
        }
        // (Integers have some of the math methods: those need a real
        // receiver.)
        Expr::MethodCall(call) => {
            let method = call.method.to_string();
            const INTEGERS_HAVE: &[&str] = &[
                "abs",
                "max",
                "min",
                "pow",
                "signum",
                "clamp",
                "rem_euclid",
                "div_euclid",
            ];
            crate::methods::is_math_method(&method)
                && (!INTEGERS_HAVE.contains(&method.as_str()) || real(&call.receiver))
        }
        // `f64::sin_cos(x).0`, `x.sin_cos().0`.
        Expr::Field(field) => {
            matches!(field.member, syn::Member::Unnamed(_))
                && (float_math(&field.base)
                    || matches!(&*field.base, Expr::MethodCall(call) if call.method == "sin_cos"))
        }
        other => float_math(other),
    }
}

/// Passes after which the analysis stops even if not stable. Shapes only grow
/// and their height is bounded by the nesting of the code, so real code
/// stabilises in a handful of passes.
const MAX_PASSES: usize = 64;

/// Analyzes `body` with the parameters of `signature`.
pub(crate) fn analyze(signature: &Signature, body: &Block, macros: &MacroTable) -> Activity {
    let mut analyzer = Analyzer {
        macros,
        bindings: Vec::new(),
        next_binding: 0,
        scopes: Vec::new(),
        frames: Vec::new(),
        or_alternative: None,
        changed: false,
        activity: Activity::default(),
        closures: HashMap::new(),
        reals: signature
            .params
            .iter()
            .filter(|param| {
                crate::signature::float_name(&param.ty).as_deref()
                    == Some(signature.precision.name())
            })
            .map(|param| param.name.to_string())
            .collect(),
    };
    for _ in 0..MAX_PASSES {
        analyzer.changed = false;
        analyzer.next_binding = 0;
        analyzer.activity = Activity::default();
        analyzer.scopes = vec![Vec::new()];
        for param in &signature.params {
            analyzer.bind_param(param);
        }
        analyzer.block(body);
        if !analyzer.changed {
            break;
        }
    }
    analyzer.activity.closures = analyzer.closures.clone();
    analyzer.activity
}

/// A place a value can be stored into: a variable and a path inside it.
#[derive(Clone, Debug)]
struct Place {
    binding: usize,
    steps: Vec<Step>,
}

/// The places the items of a `for` loop alias: each item (`v.iter_mut()`),
/// or some tuple components (`.enumerate()`, `.zip(..)`).
enum ItemAlias {
    Elem(Place),
    Tuple(Vec<Option<ItemAlias>>),
}

#[derive(Clone, Copy, Debug)]
enum Step {
    /// An element of a container.
    Elem,
    /// A tuple component.
    Field(usize),
}

struct Binding {
    shape: Shape,
    /// For `let r = &mut place` and `for x in place.iter_mut()`: writes through
    /// this binding are writes into `place`.
    alias: Option<Place>,
    /// What calling this variable does, if it holds a closure of the body or
    /// is a function parameter.
    callee: Option<Callee>,
}

/// A callable local variable.
#[derive(Clone, Debug)]
pub(crate) enum Callee {
    /// A closure of the body, by node address.
    Closure(usize),
    /// A parameter `f: F` with `F: Fn(A..) -> R`: fixed shapes.
    Function { params: Vec<Shape>, ret: Shape },
}

enum FrameKind {
    /// `loop`, `while`, `for`: an unlabeled `break` targets the innermost.
    Loop,
    /// A labeled block.
    Block,
}

struct Frame {
    kind: FrameKind,
    label: Option<String>,
    breaks: Shape,
}

struct Analyzer<'m> {
    macros: &'m MacroTable,
    /// Shapes of all bindings, by creation order (stable across passes).
    bindings: Vec<Binding>,
    next_binding: usize,
    scopes: Vec<Vec<(String, usize)>>,
    frames: Vec<Frame>,
    /// While binding the second and later alternatives of an or-pattern: the
    /// bindings the first alternative created, by name.
    or_alternative: Option<HashMap<String, usize>>,
    changed: bool,
    activity: Activity,
    /// Closure shapes, kept across passes (they only grow).
    closures: HashMap<usize, ClosureShapes>,
    /// The parameters and locals declared with the function's float type
    /// (by name, whatever the scope: a wrong guess lifts a value of another
    /// type, a compile error).
    reals: HashSet<String>,
}

impl Analyzer<'_> {
    // ----- bindings and scopes -------------------------------------------

    fn new_binding(&mut self, name: String, shape: &Shape, alias: Option<Place>) -> usize {
        if let Some(existing) = self.or_alternative.as_ref().and_then(|map| map.get(&name)) {
            let id = *existing;
            self.widen(id, shape);
            return id;
        }
        let id = self.next_binding;
        self.next_binding += 1;
        if id == self.bindings.len() {
            self.bindings.push(Binding {
                shape: Shape::Never,
                alias: None,
                callee: None,
            });
        }
        self.widen(id, shape);
        if alias.is_some() {
            self.bindings[id].alias = alias;
        }
        if let Some(scope) = self.scopes.last_mut() {
            scope.push((name, id));
        }
        id
    }

    fn lookup(&self, name: &str) -> Option<usize> {
        self.scopes
            .iter()
            .rev()
            .flat_map(|scope| scope.iter().rev())
            .find(|(n, _)| n == name)
            .map(|(_, id)| *id)
    }

    fn widen(&mut self, id: usize, shape: &Shape) {
        let joined = self.bindings[id].shape.join(shape);
        if joined != self.bindings[id].shape {
            self.bindings[id].shape = joined;
            self.changed = true;
        }
    }

    fn scoped<R>(&mut self, body: impl FnOnce(&mut Self) -> R) -> R {
        self.scopes.push(Vec::new());
        let result = body(self);
        self.scopes.pop();
        result
    }

    fn bind_param(&mut self, param: &Param) {
        self.bind(&param.pat, &param.kind.shape(), None);
        if let (crate::signature::ParamKind::Function { params, ret, .. }, Pat::Ident(ident)) =
            (&param.kind, &param.pat)
        {
            if let Some(id) = self.lookup(&ident.ident.to_string()) {
                self.bindings[id].callee = Some(Callee::Function {
                    params: params.clone(),
                    ret: ret.clone(),
                });
            }
        }
    }

    // ----- closures ------------------------------------------------------

    /// Visits the closure `expr` (called with arguments of shapes `args`, if
    /// known here) and returns the shape of its result.
    fn closure(&mut self, expr: &Expr, args: Option<&[Shape]>) -> Shape {
        self.closure_aliasing(expr, args, None)
    }

    /// A closure whose first parameter may alias places (`for_each` over
    /// `v.iter_mut()`).
    fn closure_aliasing(
        &mut self,
        expr: &Expr,
        args: Option<&[Shape]>,
        mut alias: Option<ItemAlias>,
    ) -> Shape {
        let Expr::Closure(closure) = expr else {
            // A closure variable given by name (`.map(act)`): called with
            // those arguments.
            if let (Some(key), Some(args)) = (self.named_closure(expr), args) {
                self.expr(expr);
                return self.call_closure(key, args).1;
            }
            return self.expr(expr);
        };
        let key = expr as *const Expr as usize;
        let count = closure.inputs.len();
        let mut shapes = self
            .closures
            .get(&key)
            .cloned()
            .unwrap_or_else(|| ClosureShapes {
                params: vec![Shape::Inactive; count],
                ret: Shape::Never,
            });
        if let Some(args) = args {
            for (param, arg) in shapes.params.iter_mut().zip(args) {
                *param = param.join(arg);
            }
        }
        let ret = self.scoped(|this| {
            for (input, shape) in closure.inputs.iter().zip(&shapes.params) {
                this.bind_item(input, shape, alias.take());
            }
            this.expr(&closure.body)
        });
        shapes.ret = shapes.ret.join(&ret);
        self.store_closure(key, shapes.clone());
        let value = if shapes.ret.is_active() {
            Shape::Opaque
        } else {
            Shape::Inactive
        };
        self.activity.exprs.insert(key, value);
        shapes.ret
    }

    fn store_closure(&mut self, key: usize, shapes: ClosureShapes) {
        let changed = match self.closures.get(&key) {
            Some(old) => old.params != shapes.params || old.ret != shapes.ret,
            None => true,
        };
        if changed {
            self.closures.insert(key, shapes);
            self.changed = true;
        }
    }

    /// The closure a path names, if it is a closure variable of the body.
    fn named_closure(&self, expr: &Expr) -> Option<usize> {
        let Expr::Path(path) = expr else {
            return None;
        };
        let ident = path.path.get_ident()?;
        let binding = self.lookup(&ident.to_string())?;
        match self.bindings[binding].callee {
            Some(Callee::Closure(key)) => Some(key),
            _ => None,
        }
    }

    /// Widens the parameters of the closure at `key` with a call's arguments.
    fn call_closure(&mut self, key: usize, args: &[Shape]) -> (Vec<Shape>, Shape) {
        let Some(mut shapes) = self.closures.get(&key).cloned() else {
            return (Vec::new(), Shape::Opaque);
        };
        for (param, arg) in shapes.params.iter_mut().zip(args) {
            *param = param.join(arg);
        }
        self.store_closure(key, shapes.clone());
        (shapes.params, shapes.ret)
    }

    // ----- patterns ------------------------------------------------------

    /// Binds the variables of `pat` to parts of a value of shape `shape`.
    fn bind(&mut self, pat: &Pat, shape: &Shape, alias: Option<Place>) {
        let bound = match pat {
            Pat::Ident(ident) => {
                let id = self.new_binding(ident.ident.to_string(), shape, alias.clone());
                if let Some((_, sub)) = &ident.subpat {
                    self.bind(sub, shape, alias);
                }
                self.bindings[id].shape.clone()
            }
            Pat::Tuple(tuple) => {
                let parts = tuple
                    .elems
                    .iter()
                    .enumerate()
                    .map(|(index, elem)| {
                        let alias = alias.clone().map(|place| place.then(Step::Field(index)));
                        self.bind(elem, &shape.component(index), alias);
                        self.activity.pat(elem)
                    })
                    .collect();
                Shape::Tuple(parts)
            }
            Pat::TupleStruct(tuple) => {
                if tuple.elems.len() == 1 {
                    // `Some(x)`, `Ok(x)`: the payload has the value's shape.
                    self.bind(&tuple.elems[0], shape, alias);
                } else {
                    for (index, elem) in tuple.elems.iter().enumerate() {
                        self.bind(elem, &shape.component(index), None);
                    }
                }
                shape.clone()
            }
            Pat::Path(_) => shape.clone(),
            Pat::Struct(structure) => {
                let field_shape = shape.scalar();
                for field in &structure.fields {
                    self.bind(&field.pat, &field_shape, None);
                }
                shape.clone()
            }
            Pat::Reference(reference) => {
                self.bind(&reference.pat, shape, alias);
                self.activity.pat(&reference.pat)
            }
            Pat::Paren(paren) => {
                self.bind(&paren.pat, shape, alias);
                self.activity.pat(&paren.pat)
            }
            Pat::Type(typed) => {
                // `let x: f64 = <part of a dual struct>` is a dual real.
                let shape = match crate::signature::float_name(&typed.ty) {
                    Some(_) if shape.is_active() => Shape::Real,
                    _ => shape.clone(),
                };
                self.bind(&typed.pat, &shape, alias);
                self.activity.pat(&typed.pat)
            }
            Pat::Slice(slice) => {
                let elem = shape.elem();
                for part in &slice.elems {
                    let is_rest = matches!(part, Pat::Rest(_))
                        || matches!(part, Pat::Ident(i) if matches!(i.subpat.as_ref().map(|s| &*s.1), Some(Pat::Rest(_))));
                    let part_shape = if is_rest { shape.clone() } else { elem.clone() };
                    self.bind(part, &part_shape, None);
                }
                shape.clone()
            }
            Pat::Or(or) => {
                let mut cases = or.cases.iter();
                if let Some(first) = cases.next() {
                    let start = self.scopes.last().map_or(0, Vec::len);
                    self.bind(first, shape, alias.clone());
                    let created: HashMap<String, usize> = self
                        .scopes
                        .last()
                        .map(|scope| scope[start..].iter().cloned().collect())
                        .unwrap_or_default();
                    let outer = self.or_alternative.replace(created);
                    for case in cases {
                        self.bind(case, shape, alias.clone());
                    }
                    self.or_alternative = outer;
                    self.activity.pat(first)
                } else {
                    Shape::Any
                }
            }
            _ => Shape::Any,
        };
        self.activity.pats.insert(pat as *const Pat as usize, bound);
    }

    // ----- places --------------------------------------------------------

    /// The variable and path an assignment target or `&mut` borrow denotes.
    fn place(&self, expr: &Expr) -> Option<Place> {
        match expr {
            Expr::Path(path) => {
                let ident = path.path.get_ident()?;
                if path.qself.is_some() {
                    return None;
                }
                let binding = self.lookup(&ident.to_string())?;
                Some(Place {
                    binding,
                    steps: Vec::new(),
                })
            }
            Expr::Index(index) => {
                let base = self.place(&index.expr)?;
                Some(if syntax::is_range(&index.index) {
                    base
                } else {
                    base.then(Step::Elem)
                })
            }
            Expr::Field(field) => {
                let base = self.place(&field.base)?;
                match &field.member {
                    syn::Member::Unnamed(index) => {
                        Some(base.then(Step::Field(index.index as usize)))
                    }
                    syn::Member::Named(_) => Some(base),
                }
            }
            Expr::Unary(unary) if matches!(unary.op, syn::UnOp::Deref(_)) => {
                self.place(&unary.expr)
            }
            Expr::Reference(reference) => self.place(&reference.expr),
            Expr::Paren(paren) => self.place(&paren.expr),
            Expr::Group(group) => self.place(&group.expr),
            Expr::MethodCall(call) => {
                let name = call.method.to_string();
                let base = self.place(&call.receiver)?;
                if methods::SAME_SHAPE.contains(&name.as_str()) {
                    Some(base)
                } else if methods::ELEMENT.contains(&name.as_str()) {
                    Some(base.then(Step::Elem))
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// Records that a value of shape `shape` is stored into `target`.
    fn store(&mut self, target: &Expr, shape: &Shape) {
        if let Some(place) = self.place(target) {
            self.store_at(place, shape);
        }
    }

    fn store_at(&mut self, place: Place, shape: &Shape) {
        let current = self.bindings[place.binding].shape.clone();
        let updated = update(&current, &place.steps, shape);
        self.widen(place.binding, &updated);
        if let Some(alias) = self.bindings[place.binding].alias.clone() {
            let mut steps = alias.steps;
            steps.extend(place.steps);
            self.store_at(
                Place {
                    binding: alias.binding,
                    steps,
                },
                shape,
            );
        }
    }

    /// For `for x in v.iter_mut()` and the like: the places an item aliases
    /// (through `enumerate` and `zip`, by tuple component).
    fn item_alias(&self, iterable: &Expr) -> Option<ItemAlias> {
        match iterable {
            Expr::Reference(reference) if reference.mutability.is_some() => Some(ItemAlias::Elem(
                self.place(&reference.expr)?.then(Step::Elem),
            )),
            Expr::MethodCall(call) => match call.method.to_string().as_str() {
                "iter_mut" => Some(ItemAlias::Elem(
                    self.place(&call.receiver)?.then(Step::Elem),
                )),
                "enumerate" => {
                    let inner = self.item_alias(&call.receiver)?;
                    Some(ItemAlias::Tuple(vec![None, Some(inner)]))
                }
                "zip" if call.args.len() == 1 => {
                    let (left, right) = (
                        self.item_alias(&call.receiver),
                        self.item_alias(&call.args[0]),
                    );
                    (left.is_some() || right.is_some()).then(|| ItemAlias::Tuple(vec![left, right]))
                }
                "rev" | "skip" | "take" | "step_by" => self.item_alias(&call.receiver),
                _ => None,
            },
            Expr::Paren(paren) => self.item_alias(&paren.expr),
            _ => None,
        }
    }

    /// Binds a loop pattern to an item of shape `item`, whose parts may
    /// alias places (writes through them are writes to those places).
    fn bind_item(&mut self, pat: &Pat, item: &Shape, alias: Option<ItemAlias>) {
        match (alias, pat) {
            (Some(ItemAlias::Tuple(parts)), Pat::Tuple(tuple))
                if tuple.elems.len() == parts.len() =>
            {
                let mut shapes = Vec::new();
                for (index, (elem, part)) in tuple.elems.iter().zip(parts).enumerate() {
                    self.bind_item(elem, &item.component(index), part);
                    shapes.push(self.activity.pat(elem));
                }
                self.activity
                    .pats
                    .insert(pat as *const Pat as usize, Shape::Tuple(shapes));
            }
            (Some(ItemAlias::Elem(place)), _) => self.bind(pat, item, Some(place)),
            _ => self.bind(pat, item, None),
        }
    }

    // ----- statements and blocks -----------------------------------------

    fn block(&mut self, block: &Block) -> Shape {
        self.scoped(|this| this.stmts(&block.stmts))
    }

    fn stmts(&mut self, stmts: &[Stmt]) -> Shape {
        let mut shape = Shape::Inactive;
        for (index, stmt) in stmts.iter().enumerate() {
            let is_last = index + 1 == stmts.len();
            shape = match stmt {
                Stmt::Local(local) => {
                    // (A local declared with the float type: a real, for
                    // `evidently_real`.)
                    if let Pat::Type(typed) = &local.pat {
                        if let (Pat::Ident(ident), Some(_)) =
                            (&*typed.pat, crate::signature::float_name(&typed.ty))
                        {
                            self.reals.insert(ident.ident.to_string());
                        }
                    }
                    let init = match &local.init {
                        Some(init) => {
                            let shape = self.expr(&init.expr);
                            if let Some((_, diverge)) = &init.diverge {
                                self.expr(diverge);
                            }
                            shape
                        }
                        None => Shape::Never,
                    };
                    let alias = local.init.as_ref().and_then(|init| match &*init.expr {
                        Expr::Reference(r) if r.mutability.is_some() => self.place(&r.expr),
                        _ => None,
                    });
                    self.bind(&local.pat, &init, alias);
                    if let (Some(init), Pat::Ident(ident)) = (&local.init, &local.pat) {
                        if let Expr::Closure(_) = &*init.expr {
                            if let Some(id) = self.lookup(&ident.ident.to_string()) {
                                let key = &*init.expr as *const Expr as usize;
                                self.bindings[id].callee = Some(Callee::Closure(key));
                            }
                        }
                    }
                    Shape::Inactive
                }
                Stmt::Expr(expr, semi) => {
                    let shape = self.expr(expr);
                    match semi {
                        None if is_last => shape,
                        _ if syntax::diverges(expr) => Shape::Never,
                        _ => Shape::Inactive,
                    }
                }
                Stmt::Macro(stmt) => {
                    let shape = self.macro_call(&stmt.mac);
                    if shape == Shape::Never {
                        Shape::Never
                    } else {
                        Shape::Inactive
                    }
                }
                Stmt::Item(_) => Shape::Inactive,
            };
        }
        shape
    }

    // ----- expressions ---------------------------------------------------

    fn expr(&mut self, expr: &Expr) -> Shape {
        let shape = self.expr_shape(expr);
        self.activity
            .exprs
            .insert(expr as *const Expr as usize, shape.clone());
        shape
    }

    fn expr_shape(&mut self, expr: &Expr) -> Shape {
        match expr {
            Expr::Lit(_) => Shape::Inactive,
            // `None` holds no reals and takes its type from where it goes.
            Expr::Path(_) if crate::tape::rewrite::is_none_literal(expr) => Shape::Any,
            Expr::Path(path) => match path.path.get_ident() {
                Some(ident) if path.qself.is_none() => match self.lookup(&ident.to_string()) {
                    Some(id) => self.bindings[id].shape.clone(),
                    None => Shape::Inactive,
                },
                _ => Shape::Inactive,
            },
            Expr::Paren(paren) => self.expr(&paren.expr),
            Expr::Group(group) => self.expr(&group.expr),
            Expr::Unary(unary) => {
                let inner = self.expr(&unary.expr);
                match unary.op {
                    // `-v` of a nalgebra/ndarray vector is a vector.
                    syn::UnOp::Neg(_) if methods::is_array_shape(&inner) => inner,
                    syn::UnOp::Neg(_) => inner.scalar(),
                    syn::UnOp::Not(_) => Shape::Inactive,
                    _ => inner,
                }
            }
            Expr::Reference(reference) => self.expr(&reference.expr),
            Expr::Binary(binary) => self.binary(binary),
            Expr::Assign(assign) => {
                let value = self.expr(&assign.right);
                self.expr(&assign.left);
                self.store(&assign.left, &value);
                Shape::Inactive
            }
            Expr::Index(index) => {
                let base = self.expr(&index.expr);
                self.expr(&index.index);
                if syntax::is_range(&index.index) {
                    base
                } else {
                    base.elem()
                }
            }
            Expr::Field(field) => {
                let base = self.expr(&field.base);
                match &field.member {
                    syn::Member::Unnamed(index) => base.component(index.index as usize),
                    syn::Member::Named(_) => base.scalar(),
                }
            }
            Expr::Tuple(tuple) => {
                if tuple.elems.is_empty() {
                    Shape::Inactive
                } else {
                    Shape::Tuple(tuple.elems.iter().map(|elem| self.expr(elem)).collect())
                }
            }
            Expr::Array(array) => Shape::elems(self.join_all(array.elems.iter())),
            Expr::Repeat(repeat) => {
                self.expr(&repeat.len);
                Shape::elems(self.expr(&repeat.expr))
            }
            Expr::Block(block) => self.labeled_block(block),
            Expr::Unsafe(block) => self.block(&block.block),
            Expr::Const(block) => self.block(&block.block),
            Expr::If(branch) => self.if_expr(branch),
            Expr::Match(matching) => {
                let scrutinee = self.expr(&matching.expr);
                let alias = self.place(&matching.expr);
                let mut shape = Shape::Never;
                for arm in &matching.arms {
                    let arm_shape = self.scoped(|this| {
                        this.bind(&arm.pat, &scrutinee, alias.clone());
                        if let Some((_, guard)) = &arm.guard {
                            this.expr(guard);
                        }
                        this.expr(&arm.body)
                    });
                    shape = shape.join(&arm_shape);
                }
                shape
            }
            Expr::Let(binding) => {
                let value = self.expr(&binding.expr);
                let alias = self.place(&binding.expr);
                self.bind(&binding.pat, &value, alias);
                Shape::Inactive
            }
            Expr::While(looping) => {
                self.with_frame(FrameKind::Loop, &looping.label, |this| {
                    this.scoped(|this| {
                        this.expr(&looping.cond);
                        this.block(&looping.body);
                    })
                });
                Shape::Inactive
            }
            Expr::Loop(looping) => self.with_frame(FrameKind::Loop, &looping.label, |this| {
                this.block(&looping.body);
            }),
            Expr::ForLoop(looping) => {
                let iterable = self.expr(&looping.expr);
                let alias = self.item_alias(&looping.expr);
                let item = iterable.elem();
                self.with_frame(FrameKind::Loop, &looping.label, |this| {
                    this.scoped(|this| {
                        this.bind_item(&looping.pat, &item, alias);
                        this.block(&looping.body);
                    })
                });
                Shape::Inactive
            }
            Expr::Break(jump) => {
                let value = match &jump.expr {
                    Some(value) => self.expr(value),
                    None => Shape::Inactive,
                };
                let label = jump.label.as_ref().map(|l| l.ident.to_string());
                if let Some(frame) = self.frame(label.as_deref()) {
                    frame.breaks = frame.breaks.join(&value);
                }
                Shape::Never
            }
            Expr::Continue(_) => Shape::Never,
            Expr::Return(ret) => {
                if let Some(value) = &ret.expr {
                    self.expr(value);
                }
                Shape::Never
            }
            Expr::Cast(cast) => {
                let inner = self.expr(&cast.expr);
                match crate::signature::float_name(&cast.ty) {
                    Some(_) => inner.scalar(),
                    None => Shape::Inactive,
                }
            }
            Expr::Range(range) => {
                if let Some(start) = &range.start {
                    self.expr(start);
                }
                if let Some(end) = &range.end {
                    self.expr(end);
                }
                Shape::Inactive
            }
            Expr::Call(call) => {
                if let Expr::Path(function) = &*call.func {
                    let local = match function.path.get_ident() {
                        Some(ident) if function.qself.is_none() => self.lookup(&ident.to_string()),
                        _ => None,
                    };
                    if let Some(binding) = local {
                        let key = expr as *const Expr as usize;
                        self.activity.local_calls.insert(key);
                        self.expr(&call.func);
                        let args: Vec<Shape> = call.args.iter().map(|arg| self.expr(arg)).collect();
                        let (params, ret) = match self.bindings[binding].callee.clone() {
                            Some(Callee::Closure(closure)) => self.call_closure(closure, &args),
                            Some(Callee::Function { params, ret }) => (params, ret),
                            None => {
                                return if args.iter().any(Shape::is_active) {
                                    Shape::Opaque
                                } else {
                                    Shape::Inactive
                                }
                            }
                        };
                        self.activity.local_call_params.insert(key, params);
                        return ret;
                    }
                }
                self.call(call)
            }
            Expr::MethodCall(call) => self.method_call(call),
            Expr::Macro(mac) => self.macro_call(&mac.mac),
            Expr::Struct(structure) => {
                // A struct holding a dual value is the type's dual twin.
                let mut active = false;
                for field in &structure.fields {
                    active |= self.expr(&field.expr).is_active();
                }
                if let Some(rest) = &structure.rest {
                    active |= self.expr(rest).is_active();
                }
                if active {
                    Shape::Opaque
                } else {
                    Shape::Inactive
                }
            }
            Expr::Try(attempt) => self.expr(&attempt.expr),
            Expr::Closure(_) => {
                let ret = self.closure(expr, None);
                if ret.is_active() {
                    Shape::Opaque
                } else {
                    Shape::Inactive
                }
            }
            _ => Shape::Inactive,
        }
    }

    fn join_all<'a>(&mut self, exprs: impl Iterator<Item = &'a Expr>) -> Shape {
        let mut shape = Shape::Any;
        for expr in exprs {
            shape = shape.join(&self.expr(expr));
        }
        shape
    }

    fn binary(&mut self, binary: &syn::ExprBinary) -> Shape {
        use syn::BinOp::*;
        let right = self.expr(&binary.right);
        let left = self.expr(&binary.left);
        match binary.op {
            // nalgebra/ndarray vectors and matrices have arithmetic: their
            // results are arrays too (see `methods::array_result`).
            Add(_) | Sub(_) | Mul(_) | Div(_) | Rem(_)
                if methods::is_array_shape(&left) || methods::is_array_shape(&right) =>
            {
                methods::array_result([&left, &right])
            }
            AddAssign(_) | SubAssign(_) | MulAssign(_) | DivAssign(_) | RemAssign(_)
                if methods::is_array_shape(&left) || methods::is_array_shape(&right) =>
            {
                let value = methods::array_result([&left, &right]);
                self.store(&binary.left, &value);
                Shape::Inactive
            }
            Add(_) | Sub(_) | Mul(_) | Div(_) | Rem(_) => {
                // Arithmetic on active values is real arithmetic: the other
                // differentiated values (slices, `Vec`s, tuples, the twins of
                // structured types) have no arithmetic operators, so an
                // active operand of unknown structure (a field, a call's
                // result) is a dual real. (If it is not, the fused code's
                // `IntoReal` bound says so at compile time.)
                match left.join(&right).scalar() {
                    Shape::Opaque => Shape::Real,
                    joined => joined,
                }
            }
            AddAssign(_) | SubAssign(_) | MulAssign(_) | DivAssign(_) | RemAssign(_) => {
                // Real arithmetic, as above.
                let value = match right.scalar() {
                    Shape::Opaque => Shape::Real,
                    value => value,
                };
                self.store(&binary.left, &value);
                Shape::Inactive
            }
            _ => Shape::Inactive,
        }
    }

    fn if_expr(&mut self, branch: &syn::ExprIf) -> Shape {
        let then = self.scoped(|this| {
            this.expr(&branch.cond);
            this.block(&branch.then_branch)
        });
        match &branch.else_branch {
            Some((_, otherwise)) => then.join(&self.expr(otherwise)),
            None => Shape::Inactive,
        }
    }

    fn labeled_block(&mut self, block: &syn::ExprBlock) -> Shape {
        match &block.label {
            Some(label) => {
                let label = Some(label.clone());
                self.with_frame(FrameKind::Block, &label, |this| this.block(&block.block))
            }
            None => self.block(&block.block),
        }
    }

    /// Runs `body` inside a loop or labeled-block frame; the result joins the
    /// body's own shape (for blocks) with the values of `break`s to it.
    fn with_frame<R: IntoShape>(
        &mut self,
        kind: FrameKind,
        label: &Option<syn::Label>,
        body: impl FnOnce(&mut Self) -> R,
    ) -> Shape {
        let is_loop = matches!(kind, FrameKind::Loop);
        self.frames.push(Frame {
            kind,
            label: label.as_ref().map(|l| l.name.ident.to_string()),
            breaks: Shape::Never,
        });
        let own = body(self).into_shape();
        let frame = self.frames.pop().map(|f| f.breaks).unwrap_or(Shape::Never);
        if is_loop {
            frame
        } else {
            frame.join(&own)
        }
    }

    fn frame(&mut self, label: Option<&str>) -> Option<&mut Frame> {
        self.frames.iter_mut().rev().find(|frame| match label {
            Some(label) => frame.label.as_deref() == Some(label),
            None => matches!(frame.kind, FrameKind::Loop),
        })
    }

    fn call(&mut self, call: &syn::ExprCall) -> Shape {
        let args = self.call_args(call.args.iter(), false);
        let any_active = args.iter().any(Shape::is_active);
        let Expr::Path(function) = &*call.func else {
            self.expr(&call.func);
            return if any_active {
                Shape::Opaque
            } else {
                Shape::Inactive
            };
        };
        self.call_of(call, function, args, any_active)
    }

    /// The shapes of the arguments of a call of a differentiated function
    /// (or method: its receiver `receiver_active`). A closure passed to it:
    /// when the call is recorded (an argument, the receiver, or what the
    /// closure captures, is differentiated), the callee calls it with dual
    /// values.
    fn call_args<'e>(
        &mut self,
        call_args: impl Iterator<Item = &'e Expr> + Clone,
        receiver_active: bool,
    ) -> Vec<Shape> {
        let mut args: Vec<Shape> = call_args
            .clone()
            .map(|arg| match arg {
                Expr::Closure(_) => Shape::Inactive,
                other => self.expr(other),
            })
            .collect();
        let others_active = receiver_active || args.iter().any(Shape::is_active);
        for (index, arg) in call_args.enumerate() {
            if let Expr::Closure(closure) = arg {
                let ret = self.closure(arg, None);
                if others_active || ret.is_active() {
                    // (A parameter typed as plain data stays plain.)
                    let params: Vec<Shape> = closure
                        .inputs
                        .iter()
                        .map(|input| match input {
                            syn::Pat::Type(typed) if crate::types::is_discrete(&typed.ty) => {
                                Shape::Inactive
                            }
                            _ => Shape::Opaque,
                        })
                        .collect();
                    let ret = self.closure(arg, Some(&params));
                    args[index] = Shape::Opaque;
                    // A constant real result (`|t: f64| 0.5`): the callee
                    // takes a dual value, so the body is lifted.
                    let key = arg as *const Expr as usize;
                    if !ret.is_active() && evidently_real(&closure.body, &self.reals) {
                        if let Some(mut shapes) = self.closures.get(&key).cloned() {
                            shapes.ret = Shape::Real;
                            self.store_closure(key, shapes);
                        }
                    }
                }
            }
        }
        args
    }

    /// A call of the function at `function`, its arguments' shapes `args`.
    fn call_of(
        &mut self,
        call: &syn::ExprCall,
        function: &syn::ExprPath,
        args: Vec<Shape>,
        any_active: bool,
    ) -> Shape {
        match syntax::classify_call(&function.path) {
            syntax::CallKind::FloatMath(name) => {
                if name == "sin_cos" && any_active {
                    Shape::Tuple(vec![Shape::Real, Shape::Real])
                } else if any_active {
                    Shape::Real
                } else {
                    Shape::Inactive
                }
            }
            syntax::CallKind::EmptyContainer => Shape::elems(Shape::Any),
            syntax::CallKind::Default => Shape::Any,
            // `Err(e)`: the `Ok` type adapts to its use, like `None`'s.
            syntax::CallKind::Constructor
                if function
                    .path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "Err") =>
            {
                Shape::Any
            }
            syntax::CallKind::Constructor => match args.as_slice() {
                [single] if !crate::tape::rewrite::is_user_type_path(&function.path) => {
                    single.clone()
                }
                _ if any_active => Shape::Opaque,
                _ => Shape::Inactive,
            },
            syntax::CallKind::Swap => {
                if let [a, b] = (call.args.iter().collect::<Vec<_>>())[..] {
                    self.store(a, &args[1]);
                    self.store(b, &args[0]);
                }
                Shape::Inactive
            }
            syntax::CallKind::Replace => {
                if let (Some(dest), Some(value)) = (call.args.first(), args.get(1)) {
                    self.store(dest, value);
                }
                args.first().cloned().unwrap_or(Shape::Inactive)
            }
            syntax::CallKind::Take => args.first().cloned().unwrap_or(Shape::Inactive),
            syntax::CallKind::Drop | syntax::CallKind::PrimitiveAssociated => Shape::Inactive,
            syntax::CallKind::Derivative(name) if any_active => match name.as_str() {
                "grad" => Shape::Opaque,
                "value_and_grad" => Shape::Tuple(vec![Shape::Real, Shape::Opaque]),
                _ => Shape::Tuple(vec![Shape::Opaque, Shape::Opaque]),
            },
            syntax::CallKind::Derivative(_) => Shape::Inactive,
            syntax::CallKind::User => {
                if any_active {
                    self.activate_mut_args(call.args.iter());
                    Shape::Opaque
                } else {
                    Shape::Inactive
                }
            }
        }
    }

    fn method_call(&mut self, call: &syn::ExprMethodCall) -> Shape {
        let receiver = self.expr(&call.receiver);
        if let Some(shape) = self.adaptor(call, &receiver) {
            return shape;
        }
        let name = call.method.to_string();
        let name = name.as_str();
        // (A differentiated method given closures calls them as a function
        // does.)
        let args: Vec<Shape> = if !methods::is_library_method(name)
            && call.args.iter().any(|arg| matches!(arg, Expr::Closure(_)))
        {
            self.call_args(call.args.iter(), receiver.is_active())
        } else {
            call.args.iter().map(|arg| self.expr(arg)).collect()
        };
        let any_active = receiver.is_active() || args.iter().any(Shape::is_active);
        if name == "sin_cos" {
            return if any_active {
                Shape::Tuple(vec![Shape::Real, Shape::Real])
            } else {
                Shape::Inactive
            };
        }
        if methods::is_math_method(name) {
            return if any_active {
                Shape::Real
            } else {
                Shape::Inactive
            };
        }
        if let Some(shape) = methods::array_method(name, &receiver, &args) {
            return shape;
        }
        if methods::INACTIVE_RESULT.contains(&name) {
            return Shape::Inactive;
        }
        if methods::SAME_SHAPE.contains(&name) {
            return receiver;
        }
        if methods::ELEMENT.contains(&name) {
            return receiver.elem();
        }
        if methods::STORE_ELEMENT.contains(&name) {
            if let Some(value) = args.last() {
                self.store(&call.receiver, &Shape::elems(value.clone()));
            }
            return Shape::Inactive;
        }
        if methods::STORE_ELEMENTS.contains(&name) {
            if let Some(values) = args.last() {
                self.store(&call.receiver, values);
            }
            return Shape::Inactive;
        }
        if methods::SUBSLICES.contains(&name) {
            return Shape::elems(receiver);
        }
        if methods::REDUCE.contains(&name) {
            return receiver.elem().scalar();
        }
        match name {
            "enumerate" => Shape::elems(Shape::Tuple(vec![Shape::Inactive, receiver.elem()])),
            "zip" => Shape::elems(Shape::Tuple(vec![
                receiver.elem(),
                args.first().map_or(Shape::Inactive, Shape::elem),
            ])),
            "chain" => receiver.join(args.first().unwrap_or(&Shape::Any)),
            "flatten" => receiver.elem(),
            "split_at" | "split_at_mut" => Shape::Tuple(vec![receiver.clone(), receiver]),
            "split_first" | "split_last" => Shape::Tuple(vec![receiver.elem(), receiver]),
            "unwrap_or" => receiver.join(args.first().unwrap_or(&Shape::Any)),
            _ if any_active => {
                // A recorded method writes dual values into `&mut` arguments.
                if !methods::is_library_method(name) {
                    self.activate_mut_args(call.args.iter());
                }
                Shape::Opaque
            }
            _ => Shape::Inactive,
        }
    }

    /// A recorded call writes dual values into its `&mut place` arguments.
    fn activate_mut_args<'e>(&mut self, args: impl Iterator<Item = &'e Expr>) {
        for arg in args {
            if let Expr::Reference(reference) = arg {
                if reference.mutability.is_some() {
                    let current = self.expr(&reference.expr);
                    self.store(&reference.expr, &current.activated());
                }
            }
        }
    }

    /// Iterator, `Option` and slice methods taking a closure: the closure's
    /// parameters get the receiver's element shapes.
    fn adaptor(&mut self, call: &syn::ExprMethodCall, receiver: &Shape) -> Option<Shape> {
        let name = call.method.to_string();
        let elem = receiver.elem();
        let closure_at = |index: usize| match call.args.get(index) {
            Some(Expr::Closure(_)) => true,
            Some(other) => self.named_closure(other).is_some(),
            None => false,
        };
        let args: Vec<&Expr> = call.args.iter().collect();
        let array = methods::is_array_shape(receiver);
        Some(match (name.as_str(), args.as_slice()) {
            // (Element-wise maps of a differentiated vector or matrix: the
            // closure takes each real.)
            ("mapv" | "mapv_into", [f]) if array && closure_at(0) => {
                self.closure(f, Some(&[Shape::Real]));
                methods::array_result([receiver])
            }
            ("mapv_inplace", [f]) if array && closure_at(0) => {
                self.closure(f, Some(&[Shape::Real]));
                Shape::Inactive
            }
            ("map", [f]) if closure_at(0) => Shape::elems(self.closure(f, Some(&[elem]))),
            ("filter_map" | "flat_map" | "map_while", [f]) if closure_at(0) => {
                Shape::elems(self.closure(f, Some(&[elem])).elem())
            }
            ("filter" | "take_while" | "skip_while" | "inspect" | "skip_while_mut", [f])
                if closure_at(0) =>
            {
                self.closure(f, Some(&[elem]));
                receiver.clone()
            }
            ("find" | "max_by_key" | "min_by_key", [f]) if closure_at(0) => {
                self.closure(f, Some(std::slice::from_ref(&elem)));
                elem
            }
            ("for_each", [f]) if closure_at(0) => {
                let alias = self.item_alias(&call.receiver);
                self.closure_aliasing(f, Some(&[elem]), alias);
                Shape::Inactive
            }
            (
                "any"
                | "all"
                | "position"
                | "rposition"
                | "sort_by_key"
                | "sort_unstable_by_key"
                | "is_some_and"
                | "retain",
                [f],
            ) if closure_at(0) => {
                self.closure(f, Some(&[elem]));
                Shape::Inactive
            }
            ("max_by" | "min_by" | "reduce", [f]) if closure_at(0) => {
                self.closure(f, Some(&[elem.clone(), elem.clone()]));
                elem
            }
            ("sort_by" | "sort_unstable_by", [f]) if closure_at(0) => {
                self.closure(f, Some(&[elem.clone(), elem]));
                Shape::Inactive
            }
            ("and_then", [f]) if closure_at(0) => self.closure(f, Some(&[elem])),
            ("unwrap_or_else" | "or_else" | "map_or_else", _) if closure_at(0) => {
                let mut result = receiver.clone();
                for arg in &args {
                    let ret = match arg {
                        Expr::Closure(c) if c.inputs.is_empty() => self.closure(arg, Some(&[])),
                        Expr::Closure(_) => self.closure(arg, Some(std::slice::from_ref(&elem))),
                        other => self.expr(other),
                    };
                    result = result.join(&ret);
                }
                result
            }
            ("fold", [init, f]) if closure_at(1) => {
                let init = self.expr(init);
                let key = self.named_closure(f).unwrap_or(*f as *const Expr as usize);
                let previous = self
                    .closures
                    .get(&key)
                    .map_or(Shape::Never, |c| c.ret.clone());
                let accumulator = init.join(&previous);
                let ret = self.closure(f, Some(&[accumulator, elem]));
                init.join(&ret)
            }
            ("map_or", [default, f]) if closure_at(1) => {
                let default = self.expr(default);
                default.join(&self.closure(f, Some(&[elem])))
            }
            _ => return None,
        })
    }

    fn macro_call(&mut self, mac: &syn::Macro) -> Shape {
        let Some(call) = self.macros.get(mac) else {
            return Shape::Inactive;
        };
        match (&call.kind, &call.args) {
            (MacroKind::Vec, MacroArgs::List(items)) => Shape::elems(self.join_all(items.iter())),
            (MacroKind::Vec, MacroArgs::Repeat(elem, len)) => {
                self.expr(len);
                Shape::elems(self.expr(elem))
            }
            // A real, differentiated if any argument is.
            (MacroKind::Generic { .. }, MacroArgs::Exprs(items)) => {
                let mut active = false;
                for item in items {
                    if let Expr::Call(call) = item {
                        for arg in &call.args {
                            active |= self.expr(arg).is_active();
                        }
                    }
                }
                if active {
                    Shape::Real
                } else {
                    Shape::Inactive
                }
            }
            (kind, MacroArgs::Exprs(items)) => {
                let shapes: Vec<Shape> = items.iter().map(|item| self.expr(item)).collect();
                let is_dbg = mac.path.is_ident("dbg");
                match kind {
                    MacroKind::Diverging => Shape::Never,
                    _ if is_dbg && shapes.len() == 1 => shapes[0].clone(),
                    _ if is_dbg && shapes.len() > 1 => Shape::Tuple(shapes),
                    _ => Shape::Inactive,
                }
            }
            (MacroKind::Diverging, _) => Shape::Never,
            _ => Shape::Inactive,
        }
    }
}

impl Place {
    fn then(mut self, step: Step) -> Place {
        self.steps.push(step);
        self
    }
}

/// `current` with the part at `steps` widened by `value`.
fn update(current: &Shape, steps: &[Step], value: &Shape) -> Shape {
    let Some((step, rest)) = steps.split_first() else {
        return current.join(value);
    };
    match step {
        Step::Elem => Shape::elems(update(&current.elem(), rest, value)),
        Step::Field(index) => match current {
            Shape::Tuple(parts) if *index < parts.len() => {
                let mut parts = parts.clone();
                parts[*index] = update(&parts[*index], rest, value);
                Shape::Tuple(parts)
            }
            _ if value.is_active() => Shape::Opaque,
            _ => current.clone(),
        },
    }
}

/// Lets `with_frame` take bodies returning a shape or nothing.
trait IntoShape {
    fn into_shape(self) -> Shape;
}

impl IntoShape for Shape {
    fn into_shape(self) -> Shape {
        self
    }
}

impl IntoShape for () {
    fn into_shape(self) -> Shape {
        Shape::Never
    }
}
