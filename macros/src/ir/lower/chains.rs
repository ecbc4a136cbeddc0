//! Iterator chains over buffers and ranges, lowered into loops:
//!
//! ```text
//! x.iter().zip(w.iter()).map(|(a, b)| a * b).sum::<f64>()
//! → let acc = -0.0; for i in 0..min(x.len(), w.len()) { let a = x[i]; let b = w[i]; acc += a * b; }
//! ```
//!
//! Sources: `v.iter()` (`.copied()`, `.cloned()`), `&v`, a range `a..b`;
//! adapters: `enumerate`, `zip`, `map`, `filter`, `rev`; reductions: `sum`,
//! `product` (of reals), `fold`; and `collect` into a `Vec` of reals as the
//! value of a `let` (a new buffer of the chain's length, its elements set
//! by the loop: no `filter`, no `rev`, a range from 0). The operations happen in the order the
//! standard library's do (`sum` of floats starts from -0.0, `fold` applies
//! its function left to right), so values are bit for bit the plain code's.

use proc_macro2::Span;
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::Expr as SynExpr;

use super::closures::{Bound, ClosureDef};
use super::loops::Walked;
use super::stmts::strip;
use super::{Lowered, Lowerer, Unsupported};
use crate::ir::{AssignOp, Expr, ExprKind, Math, Place, RangeIter, StmtKind, VarId, VarKind};

/// Where a chain's items come from.
enum Source {
    /// The elements of buffers, zipped (one buffer without `zip`): buffer
    /// variables or buffer fields of parameters.
    Buffers(Vec<Walked>),
    /// The values of a range.
    Range(Box<RangeIter>),
}

/// One step between the source and the reduction.
enum Adapter {
    Enumerate,
    Map(Function),
    Filter(Function),
}

/// A function given to an adapter or a fold.
enum Function {
    Closure(ClosureDef),
    /// `f64::max`, `f64::sin`, ... (a math method by path).
    Math(Math, syn::Path),
}

struct Chain {
    source: Source,
    adapters: Vec<Adapter>,
    reversed: bool,
}

/// What an item is while the loop body is being built.
#[derive(Clone)]
enum Item {
    /// An element of a buffer (a reference to it, for closures).
    Element(Expr),
    /// A value (an index, a mapped value).
    Value(Expr),
    Tuple(Vec<Item>),
}

impl Item {
    fn bound(self) -> Bound {
        match self {
            Item::Element(e) => Bound::Ref(e),
            Item::Value(e) => Bound::Value(e),
            Item::Tuple(parts) => Bound::Tuple(parts.into_iter().map(Item::bound).collect()),
        }
    }

    fn expr(self, span: Span) -> Lowered<Expr> {
        match self {
            Item::Element(e) | Item::Value(e) => Ok(e),
            Item::Tuple(_) => Err(Unsupported::new(
                span,
                "reducing tuples is not on the compiled path yet: `map` them to a value first",
            )),
        }
    }
}

/// The reduction ending a chain.
enum Reduction {
    /// Of reals of the float type given (the accumulator's type, as the
    /// turbofish `sum::<f64>()` gives it).
    Sum(syn::Type),
    Product(syn::Type),
    Fold {
        init: Box<SynExpr>,
        function: Box<Function>,
    },
    /// Into the elements of a new buffer, in order (`collect`).
    Collect(VarId),
}

impl Lowerer {
    /// `call` as a reduction of a chain, lowered into a loop whose value is
    /// returned; `None` if `call` is not one deltad lowers (left to the
    /// caller, which keeps it as plain code).
    pub(super) fn chain(
        &mut self,
        call: &syn::ExprMethodCall,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<Option<Expr>> {
        let span = call.span();
        let name = call.method.to_string();
        let reduction = match name.as_str() {
            "sum" | "product" if call.args.is_empty() => {
                // Of reals only: an integer sum starts from 0, a float one
                // from -0.0.
                let float = match &call.turbofish {
                    Some(turbofish) if turbofish.args.len() == 1 => match turbofish.args.first() {
                        Some(syn::GenericArgument::Type(ty))
                            if crate::signature::float_name(ty).is_some() =>
                        {
                            Some(ty.clone())
                        }
                        _ => None,
                    },
                    _ => None,
                };
                // Without a turbofish, a reduction of a buffer's elements
                // (filtered or not) is of the function's float, as rustc
                // infers it wherever the code compiles (`Sum<&f64>` is
                // implemented for `f64` alone).
                let float = match float {
                    Some(float) => float,
                    None if call.turbofish.is_none()
                        && self.reduces_elements(&call.receiver)? =>
                    {
                        let float = self.precision.ident(call.method.span());
                        syn::parse_quote!(#float)
                    }
                    None => return Ok(None),
                };
                if name == "sum" {
                    Reduction::Sum(float)
                } else {
                    Reduction::Product(float)
                }
            }
            "fold" if call.args.len() == 2 => {
                let Some(function) = self.function(&call.args[1])? else {
                    return Ok(None);
                };
                Reduction::Fold {
                    init: Box::new(call.args[0].clone()),
                    function: Box::new(function),
                }
            }
            _ => return Ok(None),
        };
        let Some(chain) = self.parse_chain(&call.receiver)? else {
            return Ok(None);
        };
        self.lower_chain(chain, reduction, span, out).map(Some)
    }

    /// True if the chain ending at `expr` yields a buffer's elements
    /// themselves (reals: `x.iter()`, `x.iter().copied()`, filtered).
    fn reduces_elements(&mut self, expr: &SynExpr) -> Lowered<bool> {
        let Some(chain) = self.parse_chain(expr)? else {
            return Ok(false);
        };
        // (A buffer that may hold differentiated values: of the function's
        // float; a constant one may be of another.)
        // (A field's elements may be of any type.)
        Ok(matches!(&chain.source, Source::Buffers(buffers)
                if matches!(buffers[..], [Walked::Buffer(b)] if !self.plain.contains(&b)))
            && chain
                .adapters
                .iter()
                .all(|a| matches!(a, Adapter::Filter(_))))
    }

    /// A function argument: a closure literal, a closure variable, or a
    /// math method by path (`f64::max`).
    fn function(&self, expr: &SynExpr) -> Lowered<Option<Function>> {
        if let Some(def) = self.closure_literal(expr)? {
            return Ok(Some(Function::Closure(def)));
        }
        if let Some(def) = self.closure_named(expr) {
            return Ok(Some(Function::Closure(def)));
        }
        if let SynExpr::Path(path) = strip(expr) {
            let names = crate::syntax::segment_names(&path.path);
            if names.len() == 2 && crate::methods::is_float_type_name(&names[0]) {
                if let Some(math) = Math::named(&names[1]) {
                    return Ok(Some(Function::Math(math, path.path.clone())));
                }
            }
        }
        Ok(None)
    }

    /// The source and adapters of the chain ending at `expr`.
    fn parse_chain(&mut self, expr: &SynExpr) -> Lowered<Option<Chain>> {
        let expr = strip(expr);
        if let SynExpr::Range(range) = expr {
            let (Some(start), Some(end)) = (&range.start, &range.end) else {
                return Ok(None);
            };
            let mut hoisted = Vec::new();
            let start = self.expr(start, &mut hoisted)?;
            let end = self.expr(end, &mut hoisted)?;
            if !hoisted.is_empty() {
                return Ok(None);
            }
            return Ok(Some(Chain {
                source: Source::Range(Box::new(RangeIter {
                    start,
                    end,
                    inclusive: matches!(range.limits, syn::RangeLimits::Closed(_)),
                    reversed: false,
                })),
                adapters: Vec::new(),
                reversed: false,
            }));
        }
        if let Some(walked) = self.buffer_source(expr) {
            return Ok(Some(Chain {
                source: Source::Buffers(vec![walked]),
                adapters: Vec::new(),
                reversed: false,
            }));
        }
        let SynExpr::MethodCall(call) = expr else {
            return Ok(None);
        };
        let name = call.method.to_string();
        let Some(mut chain) = self.parse_chain(&call.receiver)? else {
            return Ok(None);
        };
        match (name.as_str(), call.args.len()) {
            ("iter" | "into_iter" | "copied" | "cloned", 0) => {}
            ("rev", 0) if chain.adapters.is_empty() && !chain.reversed => chain.reversed = true,
            ("enumerate", 0) => chain.adapters.push(Adapter::Enumerate),
            ("zip", 1) if chain.adapters.is_empty() && !chain.reversed => {
                let Source::Buffers(buffers) = &mut chain.source else {
                    return Ok(None);
                };
                let Some(other) = self.zip_source(&call.args[0]) else {
                    return Ok(None);
                };
                buffers.push(other);
            }
            ("map", 1) | ("filter", 1) => {
                let Some(function) = self.function(&call.args[0])? else {
                    return Ok(None);
                };
                chain.adapters.push(if name == "map" {
                    Adapter::Map(function)
                } else {
                    Adapter::Filter(function)
                });
            }
            _ => return Ok(None),
        }
        Ok(Some(chain))
    }

    /// A buffer as a source: `v` (a slice), `&v`, a buffer field of a
    /// parameter (`p.w`, `&p.w`).
    fn buffer_source(&self, expr: &SynExpr) -> Option<Walked> {
        match Walked::named(self, expr)? {
            Walked::Buffer(var) if self.kind(var) != VarKind::Buffer => None,
            walked => Some(walked),
        }
    }

    /// The buffer `zip` takes: `w.iter()`, `&w`, `w`, `w.iter().copied()`.
    fn zip_source(&self, expr: &SynExpr) -> Option<Walked> {
        match strip(expr) {
            SynExpr::MethodCall(call)
                if call.args.is_empty()
                    && matches!(
                        call.method.to_string().as_str(),
                        "iter" | "into_iter" | "copied" | "cloned"
                    ) =>
            {
                self.zip_source(&call.receiver)
            }
            other => self.buffer_source(other),
        }
    }

    /// `let name = <chain>.collect::<Vec<f64>>();` (or annotated
    /// `let name: Vec<f64> = ..`): a new buffer of the chain's length whose
    /// elements a loop sets. `None` (left to the caller) if `init` is not
    /// such a chain, or if the name shadows a variable.
    pub(super) fn let_collect(
        &mut self,
        name: &syn::Ident,
        annotation: Option<&syn::Type>,
        init: &SynExpr,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<Option<VarId>> {
        let SynExpr::MethodCall(call) = strip(init) else {
            return Ok(None);
        };
        if call.method != "collect" || !call.args.is_empty() {
            return Ok(None);
        }
        // A `Vec` of reals, as written: in the turbofish or the annotation.
        let turbofish = call.turbofish.as_ref().and_then(|t| match t.args.first() {
            Some(syn::GenericArgument::Type(ty)) if t.args.len() == 1 => Some(ty.clone()),
            _ => None,
        });
        let is_vec_of_reals = |ty: &syn::Type| {
            crate::types::is_real_buffer_type(ty) && !matches!(ty, syn::Type::Array(_))
        };
        let written = match (turbofish, annotation) {
            (Some(ty), _) if is_vec_of_reals(&ty) => ty,
            (None, Some(ty)) if is_vec_of_reals(ty) => ty.clone(),
            _ => return Ok(None),
        };
        // (A name shadowing a variable would hide it from the loop, which
        // the passes write with the names as they are.)
        if self.resolve_path(&syn::Path::from(name.clone())).is_some() {
            return Ok(None);
        }
        let Some(chain) = self.parse_chain(&call.receiver)? else {
            return Ok(None);
        };
        let filtered = chain
            .adapters
            .iter()
            .any(|a| matches!(a, Adapter::Filter(_)));
        // Its length: the shortest buffer's, or a range's from 0.
        let len = match &chain.source {
            Source::Buffers(buffers) => Walked::shortest(buffers, self, call.span()),
            Source::Range(range)
                if range.start.int_literal::<u64>() == Some(0) && !range.inclusive =>
            {
                range.end.clone()
            }
            Source::Range(_) => return Ok(None),
        };
        if filtered || chain.reversed || len.has_call() {
            return Ok(None);
        }
        let span = init.span();
        let var = self.new_vec(name, written);
        self.let_zeros(var, len, span, out);
        self.chain_loop(chain, &Reduction::Collect(var), None, span, out)?;
        self.bind(name, var);
        Ok(Some(var))
    }

    fn lower_chain(
        &mut self,
        chain: Chain,
        reduction: Reduction,
        span: Span,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<Expr> {
        // The accumulator, with its first value.
        let accumulator = self.temp(span);
        if let Reduction::Sum(float) | Reduction::Product(float) = &reduction {
            self.vars[accumulator].annotation = Some(float.clone());
        }
        let init = match &reduction {
            Reduction::Sum(_) => Expr::new(
                ExprKind::Neg(Box::new(Expr::new(
                    ExprKind::Lit(syn::parse_quote!(0.0)),
                    span,
                ))),
                span,
            ),
            Reduction::Product(_) => Expr::new(ExprKind::Lit(syn::parse_quote!(1.0)), span),
            Reduction::Fold { init, .. } => self.expr(init, out)?,
            Reduction::Collect(_) => unreachable!("a collected chain is lowered by `let_collect`"),
        };
        out.push(self.stmt(
            span,
            StmtKind::Let {
                var: accumulator,
                init: Some(init),
            },
        ));
        self.chain_loop(chain, &reduction, Some(accumulator), span, out)?;
        Ok(Expr::new(ExprKind::Var(accumulator), span))
    }

    /// The loop of a chain, its body ending with the reduction of each
    /// item into `accumulator` (or, collecting, the buffer's element).
    fn chain_loop(
        &mut self,
        chain: Chain,
        reduction: &Reduction,
        accumulator: Option<VarId>,
        span: Span,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        let id = self.enter_loop(None, None);
        let index = self.loop_index(id, span);
        let body = self.with_scope(|this| {
            let mut body = this.new_block();
            let index_expr = || Expr::new(ExprKind::Var(index), span);
            // (A field's element is read into a local first.)
            let mut stmts = std::mem::take(&mut body.stmts);
            let mut item = match &chain.source {
                Source::Range(_) => Item::Value(index_expr()),
                Source::Buffers(buffers) => {
                    let mut elements = Vec::new();
                    for walked in buffers {
                        let element = walked.element(index_expr());
                        let element = match walked {
                            Walked::Buffer(_) => Expr::new(element, span),
                            Walked::Field(..) => {
                                let local = this.read_into_local(element, span, &mut stmts);
                                Expr::new(ExprKind::Var(local), span)
                            }
                        };
                        elements.push(Item::Element(element));
                    }
                    if elements.len() == 1 {
                        elements.into_iter().next().expect("one element")
                    } else {
                        Item::Tuple(elements)
                    }
                }
            };
            // The adapters, innermost first; a filter wraps the rest of
            // the body in its `if`.
            let mut filters: Vec<(Expr, Vec<crate::ir::Stmt>)> = Vec::new();
            for adapter in &chain.adapters {
                match adapter {
                    Adapter::Enumerate => {
                        item = Item::Tuple(vec![Item::Value(index_expr()), item]);
                    }
                    Adapter::Map(function) => {
                        let value = this.apply(function, vec![item], span, &mut stmts)?;
                        item = Item::Value(value);
                    }
                    Adapter::Filter(function) => {
                        let keep = this.apply(
                            function,
                            vec![by_reference(item.clone())],
                            span,
                            &mut stmts,
                        )?;
                        filters.push((keep, std::mem::take(&mut stmts)));
                    }
                }
            }
            let accumulator = || accumulator.expect("a reduction into an accumulator");
            match reduction {
                Reduction::Collect(buffer) => {
                    let value = item.expr(span)?;
                    stmts.push(this.stmt(
                        span,
                        StmtKind::Assign {
                            place: Place::Elem(*buffer, Box::new(index_expr())),
                            op: AssignOp::Set,
                            value,
                            first: false,
                        },
                    ));
                }
                Reduction::Sum(_) | Reduction::Product(_) => {
                    let op = if matches!(reduction, Reduction::Sum(_)) {
                        AssignOp::Add
                    } else {
                        AssignOp::Mul
                    };
                    let value = item.expr(span)?;
                    stmts.push(this.stmt(
                        span,
                        StmtKind::Assign {
                            place: Place::Var(accumulator()),
                            op,
                            value,
                            first: false,
                        },
                    ));
                }
                Reduction::Fold { function, .. } => {
                    let acc = Item::Value(Expr::new(ExprKind::Var(accumulator()), span));
                    let value = this.apply(function, vec![acc, item], span, &mut stmts)?;
                    stmts.push(this.stmt(
                        span,
                        StmtKind::Assign {
                            place: Place::Var(accumulator()),
                            op: AssignOp::Set,
                            value,
                            first: false,
                        },
                    ));
                }
            }
            // Wrap the statements after each filter in its `if`, innermost
            // filter last.
            while let Some((keep, before)) = filters.pop() {
                let mut then = this.new_block();
                then.stmts = stmts;
                let mut wrapped = before;
                wrapped.push(this.stmt(
                    span,
                    StmtKind::If {
                        cond: keep,
                        then,
                        els: None,
                    },
                ));
                stmts = wrapped;
            }
            body.stmts = stmts;
            Ok(body)
        });
        self.exit_loop();
        let body = body?;
        let range = match chain.source {
            Source::Range(mut range) => {
                range.reversed = chain.reversed;
                *range
            }
            Source::Buffers(buffers) => {
                let end = Walked::shortest(&buffers, self, span);
                let zero: syn::LitInt = syn::parse_quote!(0usize);
                RangeIter {
                    start: Expr::new(ExprKind::Lit(syn::Lit::Int(zero)), span),
                    end,
                    inclusive: false,
                    reversed: chain.reversed,
                }
            }
        };
        out.push(self.stmt(
            span,
            StmtKind::For {
                id,
                var: Some(index),
                range,
                body,
            },
        ));
        Ok(())
    }

    /// `function` applied to `items` (its parameters, in order).
    fn apply(
        &mut self,
        function: &Function,
        items: Vec<Item>,
        span: Span,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<Expr> {
        match function {
            Function::Closure(def) => {
                let bound = items.into_iter().map(Item::bound).collect();
                self.inline(def, bound, span, out)
            }
            Function::Math(math, path) => {
                if items.len() != math.arity() {
                    return Err(Unsupported::new(
                        span,
                        "a math method given the wrong number of values",
                    ));
                }
                let args = items
                    .into_iter()
                    .map(|item| item.expr(span))
                    .collect::<Lowered<Vec<Expr>>>()?;
                Ok(Expr::new(
                    ExprKind::Math {
                        math: *math,
                        args,
                        path_style: Some(path.clone()),
                    },
                    span,
                ))
            }
        }
    }
}

/// The item as `filter` sees it: a reference to it.
fn by_reference(item: Item) -> Item {
    match item {
        Item::Value(e) => Item::Element(e),
        other => other,
    }
}

/// Gives a `.sum()`/`.product()` without a turbofish the float type its
/// context fixes, as the turbofish rustc would infer (`let s: f64 =
/// v.iter().sum();`; the body's value and `return`s of a real-valued
/// function, `result`), so the chain is lowered like `.sum::<f64>()`.
pub(super) fn type_reductions(body: &mut syn::Block, result: Option<&syn::Ident>) {
    struct Typer<'a> {
        result: Option<&'a syn::Ident>,
        /// Inside a closure, whose `return`s are not the function's.
        closures: usize,
    }
    impl syn::visit_mut::VisitMut for Typer<'_> {
        fn visit_local_mut(&mut self, local: &mut syn::Local) {
            if let (syn::Pat::Type(typed), Some(init)) = (&local.pat, &mut local.init) {
                if crate::signature::float_name(&typed.ty).is_some() {
                    type_reduction(&mut init.expr, &typed.ty.to_token_stream());
                }
            }
            syn::visit_mut::visit_local_mut(self, local);
        }
        fn visit_expr_return_mut(&mut self, ret: &mut syn::ExprReturn) {
            if let (Some(result), Some(value), 0) = (self.result, &mut ret.expr, self.closures) {
                type_tail(value, result);
            }
            syn::visit_mut::visit_expr_return_mut(self, ret);
        }
        fn visit_expr_closure_mut(&mut self, closure: &mut syn::ExprClosure) {
            self.closures += 1;
            syn::visit_mut::visit_expr_closure_mut(self, closure);
            self.closures -= 1;
        }
        fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    }
    if let Some(result) = result {
        if let Some(syn::Stmt::Expr(tail, None)) = body.stmts.last_mut() {
            type_tail(tail, result);
        }
    }
    let mut typer = Typer {
        result,
        closures: 0,
    };
    syn::visit_mut::VisitMut::visit_block_mut(&mut typer, body);
}

/// Types the reductions that are the value of `expr` (through blocks and
/// the branches of `if` and `match`).
fn type_tail(expr: &mut SynExpr, float: &syn::Ident) {
    match expr {
        SynExpr::Paren(paren) => type_tail(&mut paren.expr, float),
        SynExpr::Block(block) => {
            if let Some(syn::Stmt::Expr(tail, None)) = block.block.stmts.last_mut() {
                type_tail(tail, float);
            }
        }
        SynExpr::If(branch) => {
            if let Some(syn::Stmt::Expr(tail, None)) = branch.then_branch.stmts.last_mut() {
                type_tail(tail, float);
            }
            if let Some((_, otherwise)) = &mut branch.else_branch {
                type_tail(otherwise, float);
            }
        }
        SynExpr::Match(choice) => {
            for arm in &mut choice.arms {
                type_tail(&mut arm.body, float);
            }
        }
        other => type_reduction(other, &float.to_token_stream()),
    }
}

/// `e.sum()` → `e.sum::<F>()` (and `product`).
fn type_reduction(expr: &mut SynExpr, float: &proc_macro2::TokenStream) {
    let mut expr = expr;
    while let SynExpr::Paren(paren) = expr {
        expr = &mut paren.expr;
    }
    if let SynExpr::MethodCall(call) = expr {
        let name = call.method.to_string();
        if (name == "sum" || name == "product") && call.args.is_empty() && call.turbofish.is_none()
        {
            call.turbofish = Some(syn::parse_quote!(::<#float>));
        }
    }
}
