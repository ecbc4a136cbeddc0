//! Turns a copy of the user's body into the recording pass.
//!
//! Arithmetic and the `f64` methods need no rewriting: they are overloaded on
//! the runtime's dual value. The rewrite only inserts what rustc cannot infer
//! from the operators alone, guided by the activity analysis:
//!
//! * `lift(tape, e)` where a plain real value flows into a variable, element,
//!   return value or branch that the analysis made a dual value;
//! * `callee::__record(tape, arg(a), ...)` for calls with an active argument;
//! * `primal(e) as usize` for casts of dual values, and dropped `as f64`;
//! * `lift(tape, x).max(y)` where a plain receiver meets a dual argument;
//! * dual value types in `let` annotations and turbofishes.
//!
//! It walks top-down, passing the shape the context expects (`want`) to the
//! expressions in tail position. Nodes are rewritten after their children, and
//! only by replacing a node in its own slot, so the analysis's per-node shapes
//! stay valid for every node not yet visited.

use proc_macro2::{Span, TokenStream};
use quote::{quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{Block, Expr, GenericArgument, Ident, Local, Pat, PathArguments, Stmt, Type};

use crate::emit::TwinAlias;
use crate::errors::Errors;
use crate::macro_args::{MacroArgs, MacroTable};
use crate::methods::{self, MacroKind};
use crate::names::Names;
use crate::shape::Shape;
use crate::signature::float_name;
use crate::syntax::{self, CallKind};
use crate::tape::activity::Activity;

pub(crate) struct Rewriter<'a> {
    pub activity: &'a Activity,
    pub macros: &'a mut MacroTable,
    pub errors: &'a Errors,
    pub names: &'a Names,
    pub return_shape: Shape,
    frames: Vec<Frame>,
    /// Counter for the temporaries of fused code.
    pub(crate) next_temp: usize,
    /// Variables currently summed into accumulators (innermost last).
    pub(crate) accumulators: Vec<crate::tape::fusion::Accumulation>,
    /// Aliases for the dual twins of the user types the body builds or
    /// matches, by the type's path as written.
    twin_aliases: Vec<(String, TwinAlias)>,
}

struct Frame {
    label: Option<String>,
    is_loop: bool,
    want: Option<Shape>,
}

impl<'a> Rewriter<'a> {
    pub(crate) fn new(
        activity: &'a Activity,
        macros: &'a mut MacroTable,
        errors: &'a Errors,
        names: &'a Names,
        return_shape: Shape,
    ) -> Self {
        Rewriter {
            activity,
            macros,
            errors,
            names,
            return_shape,
            frames: Vec::new(),
            next_temp: 0,
            accumulators: Vec::new(),
            twin_aliases: Vec::new(),
        }
    }

    /// The twin aliases the rewrite used, for the emitter.
    pub(crate) fn twin_aliases(&mut self) -> Vec<TwinAlias> {
        std::mem::take(&mut self.twin_aliases)
            .into_iter()
            .map(|(_, alias)| alias)
            .collect()
    }

    /// The alias naming the dual twin of the user type at `type_path`.
    fn twin_alias(&mut self, type_path: &syn::Path) -> Ident {
        let mut path = type_path.clone();
        for segment in &mut path.segments {
            segment.arguments = PathArguments::None;
        }
        let key = path.to_token_stream().to_string();
        if let Some((_, alias)) = self.twin_aliases.iter().find(|(k, _)| *k == key) {
            return alias.name.clone();
        }
        let span = type_path
            .segments
            .last()
            .map_or_else(Span::call_site, |s| s.ident.span());
        let name = Ident::new(&format!("__DeltadTwin{}", self.twin_aliases.len()), span);
        self.twin_aliases.push((
            key,
            TwinAlias {
                name: name.clone(),
                path,
            },
        ));
        name
    }

    /// The path of the twin for a struct, tuple struct or variant path:
    /// `Vec3` becomes `Alias`, `Shape::Circle` becomes `Alias::Circle`.
    /// Returns also whether the path names an enum variant.
    fn twin_path(&mut self, path: &syn::Path) -> (syn::Path, bool) {
        let segments: Vec<&syn::PathSegment> = path.segments.iter().collect();
        let is_camel = |s: &syn::PathSegment| {
            s.ident
                .to_string()
                .starts_with(|c: char| c.is_ascii_uppercase())
        };
        let is_variant =
            segments.len() >= 2 && segments[segments.len() - 2..].iter().all(|s| is_camel(s));
        if is_variant {
            let mut type_path = path.clone();
            let variant = type_path.segments.pop().map(|p| p.into_value());
            type_path.segments.pop_punct();
            let alias = self.twin_alias(&type_path);
            let variant = variant.map(|v| v.ident);
            (syn::parse_quote!(#alias::#variant), true)
        } else {
            let alias = self.twin_alias(path);
            (syn::parse_quote!(#alias), false)
        }
    }

    /// Rewrites the function body, whose value is returned.
    pub(crate) fn body(&mut self, block: &mut Block) {
        let want = self.return_shape.clone();
        self.block(block, Some(&want));
    }

    fn block(&mut self, block: &mut Block, want: Option<&Shape>) {
        self.fused_block(block, want);
    }

    /// Rewrites one statement; `is_tail` if it is the block's value.
    pub(crate) fn stmt(&mut self, stmt: &mut Stmt, want: Option<&Shape>, is_tail: bool) {
        match stmt {
            Stmt::Local(local) => self.local(local),
            Stmt::Expr(expr, None) if is_tail => self.expr(expr, want),
            Stmt::Expr(expr, _) => self.expr(expr, None),
            Stmt::Macro(stmt) => self.macro_call(&mut stmt.mac, None),
            Stmt::Item(_) => {}
        }
    }

    fn local(&mut self, local: &mut Local) {
        let checkpointed = crate::syntax::is_checkpointed(&local.attrs);
        local
            .attrs
            .retain(|a| !a.path().is_ident(crate::syntax::CHECKPOINT));
        if checkpointed {
            self.checkpointed_call(local);
            self.pattern(&mut local.pat);
            return;
        }
        let want = self.activity.pat(&local.pat);
        if let Some(init) = &mut local.init {
            self.expr(&mut init.expr, Some(&want));
            if let Some((_, diverge)) = &mut init.diverge {
                self.expr(diverge, None);
            }
        }
        self.pattern(&mut local.pat);
    }

    /// `#[checkpoint] let y = f(..);`: the call of a `#[differentiate]`
    /// function records through `f::__checkpointed` (see
    /// `emit/checkpointed.rs`) instead of `f::__record`.
    fn checkpointed_call(&mut self, local: &mut Local) {
        let Some(init) = &mut local.init else {
            self.errors.at(&local.pat, "#[checkpoint] on a `let` checkpoints the call of a `#[differentiate]` function it binds: `let y = f(..);`");
            return;
        };
        let active = self.activity.expr(&init.expr).is_active();
        let want = self.activity.pat(&local.pat);
        let written = init.expr.to_token_stream();
        self.expr(&mut init.expr, Some(&want));
        if !active {
            if let Some((_, diverge)) = &mut init.diverge {
                self.expr(diverge, None);
            }
            // Nothing differentiated flows through the call.
            return;
        }
        let record = crate::names::items::RECORD_PUBLIC;
        let renamed = match &mut *init.expr {
            Expr::Call(call) => match &mut *call.func {
                Expr::Path(path) => match path.path.segments.last_mut() {
                    Some(last) if last.ident == record => {
                        last.ident =
                            Ident::new(crate::names::items::CHECKPOINTED_PUBLIC, last.ident.span());
                        true
                    }
                    _ => false,
                },
                _ => false,
            },
            _ => false,
        };
        if !renamed {
            self.errors.at(&written, "#[checkpoint] on a `let` checkpoints the call of a `#[differentiate]` function it binds (`let y = f(..);`, not a method or an expression)");
        }
        if let Some((_, diverge)) = &mut init.diverge {
            self.expr(diverge, None);
        }
    }

    /// Rewrites a pattern that binds parts of a value: `f64` becomes the dual
    /// value type in annotations of active bindings, and struct and variant
    /// paths matched against dual values become their twins.
    pub(crate) fn pattern(&mut self, pat: &mut Pat) {
        let active = self.activity.pat(pat).is_active();
        match pat {
            Pat::Type(typed) => {
                let shape = self.activity.pat(&typed.pat);
                rewrite_type(&mut typed.ty, &shape, self.names);
                self.pattern(&mut typed.pat);
            }
            Pat::Tuple(tuple) => tuple.elems.iter_mut().for_each(|p| self.pattern(p)),
            Pat::Paren(paren) => self.pattern(&mut paren.pat),
            Pat::Reference(reference) => self.pattern(&mut reference.pat),
            Pat::Slice(slice) => slice.elems.iter_mut().for_each(|p| self.pattern(p)),
            Pat::Or(or) => or.cases.iter_mut().for_each(|p| self.pattern(p)),
            Pat::Ident(ident) => {
                if let Some((_, sub)) = &mut ident.subpat {
                    self.pattern(sub);
                }
            }
            Pat::Struct(structure) => {
                for field in &mut structure.fields {
                    self.pattern(&mut field.pat);
                }
                if active && structure.qself.is_none() && is_user_type_path(&structure.path) {
                    structure.path = self.twin_path(&structure.path).0;
                }
            }
            Pat::TupleStruct(tuple) => {
                tuple.elems.iter_mut().for_each(|p| self.pattern(p));
                if active && tuple.qself.is_none() && is_user_type_path(&tuple.path) {
                    let (path, is_variant) = self.twin_path(&tuple.path);
                    if is_variant {
                        tuple.path = path;
                    } else {
                        // A tuple struct cannot be matched through an alias
                        // with parentheses: use the braced form.
                        let fields = tuple.elems.iter().enumerate().map(|(index, elem)| {
                            let index = syn::Index::from(index);
                            quote::quote!(#index: #elem)
                        });
                        let tokens = quote::quote!(#path { #(#fields),* });
                        if let Ok(braced) = syn::parse::Parser::parse2(Pat::parse_single, tokens) {
                            *pat = braced;
                        }
                    }
                }
            }
            Pat::Path(path) if active && path.qself.is_none() && is_user_type_path(&path.path) => {
                path.path = self.twin_path(&path.path).0;
            }
            _ => {}
        }
    }

    /// Rewrites `expr`; `want` is the shape its context stores it as.
    pub(crate) fn expr(&mut self, expr: &mut Expr, want: Option<&Shape>) {
        let shape = self.activity.expr(expr);
        // Real arithmetic becomes fused code recording one binding; its value
        // is a dual value already, so it never needs lifting.
        if self.is_fusion_root(expr) {
            return self.fuse_expression(expr);
        }
        if self.fuse_compound_assignment(expr) {
            return;
        }
        // Branching expressions pass the expected shape to their tails; when
        // the context expects nothing, their own (joined) shape is expected
        // of every branch, so all branches agree on a type.
        let tails_want = want
            .cloned()
            .or_else(|| shape.is_active().then(|| shape.clone()));
        let tails_want = tails_want.as_ref();
        match expr {
            Expr::Paren(paren) => return self.expr(&mut paren.expr, want),
            Expr::Group(group) => return self.expr(&mut group.expr, want),
            Expr::Block(block) => {
                let label = block.label.as_ref().map(|l| l.name.ident.to_string());
                self.with_frame(label, false, tails_want, |this| {
                    this.block(&mut block.block, tails_want)
                });
                return;
            }
            Expr::Unsafe(block) => return self.block(&mut block.block, tails_want),
            Expr::Const(_) => {}
            Expr::If(branch) => {
                self.expr(&mut branch.cond, None);
                self.block(&mut branch.then_branch, tails_want);
                if let Some((_, otherwise)) = &mut branch.else_branch {
                    self.expr(otherwise, tails_want);
                }
                return;
            }
            Expr::Match(matching) => {
                self.expr(&mut matching.expr, None);
                for arm in &mut matching.arms {
                    self.pattern(&mut arm.pat);
                    if let Some((_, guard)) = &mut arm.guard {
                        self.expr(guard, None);
                    }
                    self.expr(&mut arm.body, tails_want);
                }
                return;
            }
            Expr::Loop(looping) => {
                let label = looping.label.as_ref().map(|l| l.name.ident.to_string());
                self.with_frame(label, true, tails_want, |this| {
                    this.block(&mut looping.body, None)
                });
                return;
            }
            Expr::While(looping) => {
                let label = looping.label.as_ref().map(|l| l.name.ident.to_string());
                self.expr(&mut looping.cond, None);
                self.with_frame(label, true, None, |this| {
                    this.block(&mut looping.body, None)
                });
            }
            Expr::ForLoop(looping) => {
                let label = looping.label.as_ref().map(|l| l.name.ident.to_string());
                self.expr(&mut looping.expr, None);
                self.pattern(&mut looping.pat);
                self.with_frame(label, true, None, |this| {
                    this.block(&mut looping.body, None)
                });
            }
            Expr::Break(jump) => {
                let label = jump.label.as_ref().map(|l| l.ident.to_string());
                let frame_want = self.frame_want(label.as_deref());
                if let Some(value) = &mut jump.expr {
                    self.expr(value, frame_want.as_ref());
                }
            }
            Expr::Return(ret) => {
                let want = self.return_shape.clone();
                if let Some(value) = &mut ret.expr {
                    self.expr(value, Some(&want));
                }
            }
            Expr::Let(binding) => {
                let want = self.activity.pat(&binding.pat);
                self.expr(&mut binding.expr, Some(&want));
                self.pattern(&mut binding.pat);
            }
            Expr::Tuple(tuple) => {
                for (index, elem) in tuple.elems.iter_mut().enumerate() {
                    let part = tails_want.map(|w| w.component(index));
                    self.expr(elem, part.as_ref());
                }
                return;
            }
            Expr::Array(array) => {
                let elem_want = tails_want.map(Shape::elem);
                for elem in &mut array.elems {
                    self.expr(elem, elem_want.as_ref());
                }
                return;
            }
            Expr::Repeat(repeat) => {
                let elem_want = tails_want.map(Shape::elem);
                self.expr(&mut repeat.expr, elem_want.as_ref());
                self.expr(&mut repeat.len, None);
                return;
            }
            Expr::Macro(mac) => {
                let is_vec = self
                    .macros
                    .get(&mac.mac)
                    .is_some_and(|call| call.kind == MacroKind::Vec);
                self.macro_call(&mut mac.mac, tails_want);
                if is_vec {
                    return;
                }
            }
            Expr::Assign(assign) => {
                let target = self.activity.expr(&assign.left);
                self.expr(&mut assign.left, None);
                self.expr(&mut assign.right, Some(&target));
            }
            Expr::Binary(binary) => {
                self.expr(&mut binary.left, None);
                self.expr(&mut binary.right, None);
            }
            Expr::Unary(unary) => self.expr(&mut unary.expr, None),
            Expr::Reference(reference) => self.expr(&mut reference.expr, None),
            Expr::Index(index) => {
                self.expr(&mut index.expr, None);
                self.expr(&mut index.index, None);
            }
            Expr::Field(field) => self.expr(&mut field.base, None),
            Expr::Try(attempt) => self.expr(&mut attempt.expr, None),
            Expr::Range(range) => {
                if let Some(start) = &mut range.start {
                    self.expr(start, None);
                }
                if let Some(end) = &mut range.end {
                    self.expr(end, None);
                }
            }
            Expr::Struct(_) => self.struct_literal(expr),
            Expr::Closure(_) => return self.closure(expr),
            Expr::Path(path) => {
                // `f64::max` passed as a function (`fold(.., f64::max)`):
                // a closure calling the method works on dual values too.
                if let CallKind::FloatMath(name) = syntax::classify_call(&path.path) {
                    if path.qself.is_none() {
                        let arity = methods::math_arity(&name);
                        let span = path.span();
                        let params: Vec<Ident> = (0..arity)
                            .map(|i| {
                                quote::format_ident!("__deltad_a{}", i, span = Span::mixed_site())
                            })
                            .collect();
                        let method = Ident::new(&name, span);
                        let (first, rest) = params.split_at(1);
                        *expr = self.gen_expr(
                            quote_spanned!(span=> (|#(#params),*| #(#first)*.#method(#(#rest),*))),
                        );
                        return;
                    }
                }
            }
            Expr::Cast(_) => self.cast(expr),
            Expr::Call(_) => self.call(expr, want),
            Expr::MethodCall(_) => self.method_call(expr),
            _ => {}
        }
        if let Some(want) = want {
            if shape.needs_lift_to(want) {
                self.lift(expr);
            }
        }
    }

    /// A struct literal holding dual values builds the type's dual twin:
    /// `Vec3 { x: a, .. }` becomes `Alias { x: arg(a), .. }`, each field
    /// converted to the twin's field type.
    fn struct_literal(&mut self, expr: &mut Expr) {
        let active = self.activity.expr(expr).is_active();
        let Expr::Struct(structure) = expr else {
            return;
        };
        let field_active: Vec<bool> = structure
            .fields
            .iter()
            .map(|field| self.activity.expr(&field.expr).is_active())
            .collect();
        for field in &mut structure.fields {
            self.expr(&mut field.expr, None);
        }
        let rest_inactive = structure
            .rest
            .as_ref()
            .is_some_and(|rest| !self.activity.expr(rest).is_active());
        if let Some(rest) = &mut structure.rest {
            self.expr(rest, None);
        }
        if !active || structure.qself.is_some() || !is_user_type_path(&structure.path) {
            return;
        }
        // `f::Grad { .. }` (a tangent for a nested `jvp`) stays a `Grad`,
        // of dual values; a user type becomes its twin.
        if !is_generated_grad_path(&structure.path) {
            structure.path = self.twin_path(&structure.path).0;
        }
        for (field, active) in structure.fields.iter_mut().zip(field_active) {
            field.colon_token.get_or_insert_with(Default::default);
            let value = take(&mut field.expr);
            // A differentiated value is already of the twin's field type (a
            // `collect()` then takes its type from the field); a constant
            // is converted to it.
            field.expr = if active {
                value
            } else if is_generated_grad_path(&structure.path) {
                self.gen_expr(
                    quote_spanned!(value.span()=> ::deltad::__private::grad_field(#value)),
                )
            } else {
                self.gen_expr(quote_spanned!(value.span()=> ::deltad::__private::arg(#value)))
            };
        }
        if rest_inactive {
            if let Some(rest) = &mut structure.rest {
                self.lift(rest);
            }
        }
    }

    /// A closure: its parameters' annotations and its body follow the shapes
    /// it is called with.
    fn closure(&mut self, expr: &mut Expr) {
        let key: &Expr = expr;
        let shapes = self.activity.closure(key as *const Expr).cloned();
        let Expr::Closure(closure) = expr else { return };
        for input in &mut closure.inputs {
            self.pattern(input);
        }
        let ret = shapes.map(|s| s.ret);
        if let (syn::ReturnType::Type(_, ty), Some(ret)) = (&mut closure.output, &ret) {
            rewrite_type(ty, ret, self.names);
        }
        self.expr(&mut closure.body, ret.as_ref().filter(|r| r.is_active()));
    }

    /// Replaces `expr` with `lift(tape, expr)`. A bare `None` holds no reals
    /// and takes its type from where it goes, so it stays as written (lifting
    /// it would leave its type parameter to infer).
    fn lift(&self, expr: &mut Expr) {
        if is_none_literal(expr) {
            return;
        }
        let span = expr.span();
        let tape = &self.names.tape;
        let mut inner = take(expr);
        // A `collect()` whose type the `let`'s annotation gave (`let v:
        // Vec<f64> = .. .collect();`) gets it from the lifted value no
        // more: a `Vec`, the one collection holding reals that lifts.
        if let Expr::MethodCall(call) = &mut inner {
            if call.method == "collect" && call.turbofish.is_none() && call.args.is_empty() {
                call.turbofish = Some(syn::parse_quote!(::<::std::vec::Vec<_>>));
            }
        }
        // Parenthesized: after `break 'label`, a leading `::` would be misread.
        *expr = self.gen_expr(quote_spanned!(span=> (::deltad::__private::lift(#tape, #inner))));
    }

    fn with_frame(
        &mut self,
        label: Option<String>,
        is_loop: bool,
        want: Option<&Shape>,
        body: impl FnOnce(&mut Self),
    ) {
        self.frames.push(Frame {
            label,
            is_loop,
            want: want.cloned(),
        });
        body(self);
        self.frames.pop();
    }

    fn frame_want(&self, label: Option<&str>) -> Option<Shape> {
        self.frames
            .iter()
            .rev()
            .find(|frame| match label {
                Some(label) => frame.label.as_deref() == Some(label),
                None => frame.is_loop,
            })
            .and_then(|frame| frame.want.clone())
    }

    /// `x as usize` of a dual value casts its machine value; `x as f64` of a
    /// dual value of the function's precision is the value itself.
    fn cast(&mut self, expr: &mut Expr) {
        let Expr::Cast(cast) = expr else { return };
        let active = self.activity.expr(&cast.expr).is_active();
        // (Taken before the operand is rewritten into generated tokens.)
        let written = cast.to_token_stream();
        self.expr(&mut cast.expr, None);
        if !active {
            return;
        }
        if let Type::Ptr(_) = &*cast.ty {
            self.errors.at(
                &*cast,
                "deltad cannot take raw pointers to differentiated values",
            );
            return;
        }
        match float_name(&cast.ty) {
            // (`cast_real`: the operand may be plain data after all, an
            // integer field of a user type's value.)
            Some(name) if name == self.names.precision.name() => {
                let inner = take(&mut cast.expr);
                *expr = self.gen_expr(
                    quote_spanned!(inner.span()=> (::deltad::__private::cast_real(#inner))),
                );
            }
            Some(name) => self.errors.at(
                written,
                crate::errors::other_precision_cast(self.names.precision.name(), &name),
            ),
            None => {
                let inner = take(&mut cast.expr);
                let ty = &cast.ty;
                let span = inner.span();
                *expr = self
                    .gen_expr(quote_spanned!(span=> (::deltad::__private::primal(#inner) as #ty)));
            }
        }
    }

    fn call(&mut self, expr: &mut Expr, want: Option<&Shape>) {
        let expr_key: &Expr = expr;
        let expr_key = expr_key as *const Expr;
        let Expr::Call(call) = expr else { return };
        let arg_shapes: Vec<Shape> = call
            .args
            .iter()
            .map(|arg| self.activity.expr(arg))
            .collect();
        let active: Vec<bool> = arg_shapes.iter().map(Shape::is_active).collect();
        for arg in &mut call.args {
            self.expr(arg, None);
        }
        let any_active = active.iter().any(|&a| a);
        let calls_a_value = self.activity.calls_local_value(expr_key);
        let Expr::Path(function) = &mut *call.func else {
            if any_active {
                self.errors.at(&call.func, CALL_THROUGH_VALUE);
            }
            return;
        };
        if calls_a_value {
            // A local closure or function parameter: arguments become what
            // its parameters are.
            match self.activity.local_call_params(expr_key) {
                Some(params) => {
                    let params = params.to_vec();
                    for ((arg, shape), param) in call.args.iter_mut().zip(&arg_shapes).zip(&params)
                    {
                        if shape.needs_lift_to(param) {
                            self.lift(arg);
                        }
                    }
                }
                None if any_active => self.errors.at(&function.path, CALL_THROUGH_VALUE),
                None => {}
            }
            return;
        }
        match syntax::classify_call(&function.path) {
            CallKind::FloatMath(name) if any_active => {
                let span = function.path.span();
                let mut args = std::mem::take(&mut call.args).into_iter();
                let Some(first) = args.next() else { return };
                let rest: Vec<Expr> = args.collect();
                let method = syn::Ident::new(&name, span);
                let tape = &self.names.tape;
                *expr = self.gen_expr(quote_spanned!(span=>
                    (::deltad::__private::lift(#tape, #first).#method(#(#rest),*))
                ));
            }
            CallKind::EmptyContainer => {
                if let Some(want) = want.filter(|w| w.is_active()) {
                    for segment in &mut function.path.segments {
                        if let PathArguments::AngleBracketed(args) = &mut segment.arguments {
                            for arg in &mut args.args {
                                if let GenericArgument::Type(ty) = arg {
                                    rewrite_type(ty, &want.elem(), self.names);
                                }
                            }
                        }
                    }
                }
            }
            CallKind::Derivative(name) if any_active => {
                let Some((_, _, public)) = crate::names::items::NESTED
                    .iter()
                    .find(|(d, _, _)| *d == name)
                else {
                    return;
                };
                let span = function.path.span();
                let mut module = function.path.clone();
                module.segments.pop();
                module.segments.pop_punct();
                let nested = Ident::new(public, span);
                let tape = &self.names.tape;
                let last = call.args.len().saturating_sub(1);
                let args =
                    call.args
                        .iter()
                        .zip(&arg_shapes)
                        .enumerate()
                        .map(|(i, (arg, shape))| {
                            // A `vjp`'s seed and a `jvp`'s tangent go to generic
                            // parameters that take them constant or differentiated.
                            if (name == "vjp" || name == "jvp") && i == last {
                                quote_spanned!(arg.span()=> #arg)
                            } else {
                                callee_arg(arg, shape)
                            }
                        });
                *expr = self.gen_expr(quote_spanned!(span=> #module::#nested(#tape, #(#args),*)));
            }
            CallKind::Constructor if any_active && is_user_type_path(&function.path) => {
                let (path, is_variant) = self.twin_path(&function.path);
                let span = function.path.span();
                let args: Vec<TokenStream> = call
                    .args
                    .iter()
                    .map(|arg| quote_spanned!(arg.span()=> ::deltad::__private::arg(#arg)))
                    .collect();
                *expr = if is_variant {
                    self.gen_expr(quote_spanned!(span=> #path(#(#args),*)))
                } else {
                    // A tuple struct is built through the alias with braces.
                    let indices = (0..args.len()).map(syn::Index::from);
                    self.gen_expr(quote_spanned!(span=> #path { #(#indices: #args),* }))
                };
            }
            CallKind::PrimitiveAssociated if any_active => {
                self.errors.at(&function.path, format!(
                    "deltad cannot pass a differentiated value to `{}`: only the `f64`/`f32` methods with derivative rules take differentiated values",
                    function.path.to_token_stream()
                ));
            }
            CallKind::User if any_active && methods::builds_array(&function.path) => {
                self.errors.at(&function.path, format!(
                    "deltad cannot build a nalgebra or ndarray value from differentiated values (`{}`): their element types must be `'static`, which dual values are not; compute with the operations of the differentiated parameters (see `deltad::nalgebra`, `deltad::ndarray`), or collect the values into a `Vec`; generic nalgebra code (over `RealField`) runs on dual values called through `deltad::generic_fwd!`",
                    function.path.to_token_stream()
                ));
            }
            CallKind::User if any_active => {
                if let Some(last) = function.path.segments.last() {
                    if !last.arguments.is_none() {
                        self.errors.at(&function.path, "deltad cannot differentiate calls with explicit generic arguments yet: let rustc infer them");
                        return;
                    }
                }
                let span = function.path.span();
                let tape = &self.names.tape;
                let args = call
                    .args
                    .iter()
                    .zip(&arg_shapes)
                    .map(|(arg, shape)| callee_arg(arg, shape));
                let path = &function.path;
                *expr = match associated_function(path) {
                    // `Type::function(..)`: a method of a `#[differentiate]`
                    // impl block, through its hidden forwarder.
                    Some((type_path, function)) => {
                        let forward = quote::format_ident!(
                            "{}{}",
                            crate::names::items::FORWARD_PREFIX,
                            function,
                            span = function.span()
                        );
                        self.gen_expr(
                            quote_spanned!(span=> #type_path::#forward(#tape, #(#args),*)),
                        )
                    }
                    None => {
                        let record = syn::Ident::new(crate::names::items::RECORD_PUBLIC, span);
                        self.gen_expr(quote_spanned!(span=> #path::#record(#tape, #(#args),*)))
                    }
                };
            }
            _ => {}
        }
    }

    fn method_call(&mut self, expr: &mut Expr) {
        let call_shape = self.activity.expr(expr);
        let Expr::MethodCall(call) = expr else { return };
        let name = call.method.to_string();
        let name = name.as_str();
        let receiver = self.activity.expr(&call.receiver);
        let arg_shapes: Vec<Shape> = call
            .args
            .iter()
            .map(|arg| self.activity.expr(arg))
            .collect();
        let args_active = arg_shapes.iter().any(Shape::is_active);
        self.expr(&mut call.receiver, None);
        let last = call.args.len().saturating_sub(1);
        for (index, arg) in call.args.iter_mut().enumerate() {
            let want = if methods::STORE_ELEMENT.contains(&name) && index == last {
                Some(receiver.elem())
            } else if name == "unwrap_or" || (name == "fold" && index == 0) {
                Some(call_shape.clone())
            } else {
                None
            };
            self.expr(arg, want.as_ref());
        }

        if methods::is_math_method(name) {
            if !receiver.is_active() && args_active {
                self.lift(&mut call.receiver);
            }
            return;
        }
        if receiver == Shape::Real && !is_known_real_method(name) {
            self.errors.at(&call.method, format!(
                "deltad does not know a derivative for the method `{name}` of a differentiated value: use the `f64` methods ({}), or move this computation into a `#[differentiate]` function",
                "sin, exp, ln, sqrt, powi, powf, abs, max, ..."
            ));
            return;
        }
        if methods::is_array_shape(&receiver)
            && !methods::is_library_method(name)
            && !methods::ARRAY_METHODS.contains(&name)
            && !methods::NDARRAY_METHODS.contains(&name)
        {
            self.errors.at(&call.method, format!(
                "deltad does not know a derivative for the method `{name}` of a differentiated vector or matrix: nalgebra's and ndarray's {} are supported, and ndarray's {}, as are element access, `iter`, `map`, `sum` and the arithmetic operators; compute the rest element by element",
                methods::ARRAY_METHODS.join(", "),
                methods::NDARRAY_METHODS.join(", ")
            ));
            return;
        }
        // A differentiated `.sum()`/`.product()` without a turbofish is of
        // the function's float (as rustc infers it wherever the plain code
        // compiles): its dual type, so that nothing is left to infer.
        if (name == "sum" || name == "product")
            && call.args.is_empty()
            && call.turbofish.is_none()
            && call_shape == Shape::Real
            && is_iterator_chain(&call.receiver)
        {
            let mut real = self.names.real_type();
            set_span(&mut real, call.method.span());
            call.turbofish = Some(syn::parse_quote!(::<#real>));
            return;
        }
        if (methods::REDUCE.contains(&name) || name == "collect") && call_shape.is_active() {
            if let Some(turbofish) = &mut call.turbofish {
                for arg in &mut turbofish.args {
                    if let GenericArgument::Type(ty) = arg {
                        rewrite_type(ty, &call_shape, self.names);
                    }
                }
            }
        }
        // A method deltad does not know, with a dual receiver or argument: a
        // method of a `#[differentiate]` impl block, called through its
        // hidden forwarder with the tape.
        if (receiver.is_active() || args_active) && !methods::is_library_method(name) {
            if call.turbofish.is_some() {
                self.errors.at(&call.method, "deltad cannot differentiate method calls with explicit generic arguments yet: let rustc infer them");
                return;
            }
            let forward = quote::format_ident!(
                "{}{}",
                crate::names::items::FORWARD_PREFIX,
                call.method,
                span = call.method.span()
            );
            call.method = forward;
            let tape = &self.names.tape;
            let args: Vec<Expr> = std::mem::take(&mut call.args).into_iter().collect();
            call.args.push(self.gen_expr(quote::quote!(#tape)));
            for (arg, shape) in args.iter().zip(&arg_shapes) {
                call.args.push(self.gen_expr(callee_arg(arg, shape)));
            }
        }
    }

    fn macro_call(&mut self, mac: &mut syn::Macro, want: Option<&Shape>) {
        let Some(mut call) = self.macros.take(mac) else {
            return;
        };
        match &mut call.args {
            MacroArgs::List(items) => {
                let elem_want = want.map(Shape::elem);
                for item in items.iter_mut() {
                    self.expr(item, elem_want.as_ref());
                }
            }
            MacroArgs::Repeat(elem, len) => {
                let elem_want = want.map(Shape::elem);
                self.expr(elem, elem_want.as_ref());
                self.expr(len, None);
            }
            MacroArgs::Exprs(items) if call.kind == MacroKind::Condition => {
                // The machine values of the differentiated reals.
                for item in items.iter_mut() {
                    let shape = self.activity.expr(item);
                    self.expr(item, None);
                    match shape {
                        Shape::Real => {
                            let value = take(item);
                            *item = self.gen_expr(
                                quote_spanned!(value.span()=> ::deltad::__private::primal(#value)),
                            );
                        }
                        shape if shape.is_active() => self.errors.at(
                            &*item,
                            "deltad runs a macro used as a condition on the machine values of its arguments, which it takes for reals only: pass the reals this macro compares (or compute the condition in a `let` first)",
                        ),
                        _ => {}
                    }
                }
            }
            MacroArgs::Exprs(items) if matches!(call.kind, MacroKind::Generic { .. }) => {
                // The callee is generic over its number type: every real
                // argument becomes the same dual type (constants too, held
                // here while the call borrows them); in forward mode, the
                // held arguments become the chunk's dual values for each
                // pass.
                let forward = call.kind == (MacroKind::Generic { forward: true });
                for item in items.iter_mut() {
                    let Expr::Call(generic_call) = item else {
                        continue;
                    };
                    for arg in generic_call.args.iter_mut() {
                        self.expr(arg, None);
                    }
                    let span = generic_call.span();
                    let func = &generic_call.func;
                    let args = generic_call.args.iter();
                    let held = syn::Ident::new("__deltad_generic_args", Span::mixed_site());
                    let indices = (0..generic_call.args.len()).map(syn::Index::from);
                    let tape = &self.names.tape;
                    let indices: Vec<syn::Index> = indices.collect();
                    let call = if forward {
                        let duals = syn::Ident::new("__deltad_generic_duals", Span::mixed_site());
                        let seeds = syn::Ident::new("__deltad_seeds", Span::mixed_site());
                        quote_spanned!(span=> ::deltad::__private::generic_forward(#tape, |#seeds| {
                            let #duals = (#(::deltad::__private::ForwardArg::forward(&#held.#indices, #seeds),)*);
                            #func(#(::deltad::__private::GenericPass::pass(&#duals.#indices)),*)
                        }))
                    } else {
                        quote_spanned!(span=> #func(#(::deltad::__private::GenericPass::pass(&#held.#indices)),*))
                    };
                    *item = self.gen_expr(quote_spanned!(span=> {
                        let #held = (#(::deltad::__private::generic_arg(#tape, #args),)*);
                        #call
                    }));
                }
            }
            MacroArgs::Exprs(items) => {
                for item in items.iter_mut() {
                    self.expr(item, None);
                }
            }
            MacroArgs::Opaque => {}
        }
        // Macro arguments are printed back as tokens, which the relocation of
        // the body's paths does not see: relocate them now.
        match &mut call.args {
            MacroArgs::List(items) | MacroArgs::Exprs(items) => {
                items.iter_mut().for_each(crate::relocate::expr)
            }
            MacroArgs::Repeat(elem, len) => {
                crate::relocate::expr(elem);
                crate::relocate::expr(len);
            }
            MacroArgs::Opaque => {}
        }
        if let Some(tokens) = call.args.to_tokens() {
            mac.tokens = tokens;
        }
    }
}

const CALL_THROUGH_VALUE: &str = "deltad cannot differentiate calls through function values (function pointers, closures from outside the function): call a `#[differentiate]` function by its name, or define the closure in this function";

/// Methods a dual value (or an `Option` of one, which shapes do not tell
/// apart) has besides the derivative rules.
fn is_known_real_method(name: &str) -> bool {
    methods::INACTIVE_RESULT.contains(&name)
        || methods::SAME_SHAPE.contains(&name)
        || matches!(
            name,
            "unwrap_or"
                | "unwrap_or_else"
                | "map"
                | "map_or"
                | "map_or_else"
                | "and_then"
                | "or"
                | "or_else"
                | "ok_or"
                | "filter"
                | "is_some_and"
                | "take"
                | "replace"
        )
        || matches!(
            name,
            "clone" | "to_owned" | "into" | "borrow" | "value" | "to_prim" | "is_active" | "id"
        )
}

impl Rewriter<'_> {
    /// Parses generated code. Failing to parse is a bug in deltad, reported
    /// as a compile error (a proc macro must never panic); the tokens are
    /// kept so rustc shows what was generated.
    pub(crate) fn gen_expr(&self, tokens: TokenStream) -> Expr {
        match syn::parse2(tokens.clone()) {
            Ok(expr) => expr,
            Err(error) => {
                self.errors.at_span(error.span(), format!("deltad generated code it cannot parse (please report this bug): {error}: `{tokens}`"));
                Expr::Verbatim(tokens)
            }
        }
    }

    /// Parses a generated statement (see `gen_expr`).
    pub(crate) fn gen_stmt(&self, tokens: TokenStream) -> Stmt {
        match syn::parse2(tokens.clone()) {
            Ok(stmt) => stmt,
            Err(error) => {
                self.errors.at_span(error.span(), format!("deltad generated code it cannot parse (please report this bug): {error}: `{tokens}`"));
                Stmt::Expr(Expr::Verbatim(tokens), None)
            }
        }
    }
}

/// An argument of a call to another differentiated function's recording
/// pass: converted by `arg` to the parameter's type (a constant lifted to a
/// dual value, `&Vec<Real>` to the slice a slice parameter takes), except a
/// nested collection or a tuple of dual values, which only a structured
/// parameter takes: its parameter is generic, so the value goes as it is
/// (`arg` could not tell which of its conversions a generic parameter wants),
/// and a closure, whose signature rustc then takes from the parameter's
/// bound (through `arg` an untyped `|x| ..` given to `F: Fn(&f64) -> f64`
/// would not take references of every lifetime).
fn callee_arg(arg: &Expr, shape: &Shape) -> TokenStream {
    if matches!(arg, Expr::Closure(_)) {
        return quote_spanned!(arg.span()=> #arg);
    }
    let structured = match shape {
        Shape::Elems(inner) => matches!(**inner, Shape::Elems(_) | Shape::Tuple(_)),
        Shape::Tuple(_) => true,
        _ => false,
    };
    if structured && shape.is_active() {
        quote_spanned!(arg.span()=> #arg)
    } else {
        quote_spanned!(arg.span()=> ::deltad::__private::arg(#arg))
    }
}

/// `Type::function` (a path whose second-to-last segment names a type and
/// whose last names a function): the type's path and the function.
fn associated_function(path: &syn::Path) -> Option<(syn::Path, &Ident)> {
    let count = path.segments.len();
    if count < 2 {
        return None;
    }
    let function = &path.segments[count - 1].ident;
    let owner = &path.segments[count - 2].ident;
    let is_type = owner
        .to_string()
        .starts_with(|c: char| c.is_ascii_uppercase());
    if !is_type
        || function
            .to_string()
            .starts_with(|c: char| c.is_ascii_uppercase())
    {
        return None;
    }
    let mut type_path = path.clone();
    type_path.segments.pop();
    type_path.segments.pop_punct();
    Some((type_path, function))
}

/// True for a path naming a user struct, tuple struct or enum variant (as
/// opposed to `Some`, `Ok`, `Err`, `None` and other standard names).
pub(crate) fn is_user_type_path(path: &syn::Path) -> bool {
    let Some(last) = path.segments.last() else {
        return false;
    };
    let name = last.ident.to_string();
    if !name.starts_with(|c: char| c.is_ascii_uppercase())
        || matches!(name.as_str(), "Some" | "None" | "Ok" | "Err" | "Self")
    {
        return false;
    }
    let parent = path
        .segments
        .len()
        .checked_sub(2)
        .map(|i| path.segments[i].ident.to_string());
    !matches!(
        parent.as_deref(),
        Some("Option" | "Result" | "Ordering" | "Self")
    )
}

/// True for `f::Grad`: the `Grad` of a `#[differentiate]` function `f`
/// (a lower-case module, then `Grad`).
fn is_generated_grad_path(path: &syn::Path) -> bool {
    let segments: Vec<&syn::PathSegment> = path.segments.iter().collect();
    match segments.as_slice() {
        [.., module, last] => {
            last.ident == "Grad"
                && module
                    .ident
                    .to_string()
                    .starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        }
        _ => false,
    }
}

/// Moves `expr` out, leaving a placeholder to be overwritten.
fn take(expr: &mut Expr) -> Expr {
    std::mem::replace(expr, Expr::Verbatim(TokenStream::new()))
}

/// True if `expr` is a chain of iterator methods started by `iter()` (or a
/// sibling) or by a range: an iterator of the standard library, whose
/// `sum`/`product` take the accumulator's type (nalgebra's and ndarray's
/// `sum()` on a vector take none).
fn is_iterator_chain(expr: &Expr) -> bool {
    match expr {
        Expr::Paren(inner) => is_iterator_chain(&inner.expr),
        Expr::Range(_) => true,
        Expr::MethodCall(call) => {
            matches!(
                call.method.to_string().as_str(),
                "iter" | "into_iter" | "iter_mut" | "windows" | "chunks" | "chunks_exact"
            ) || is_iterator_chain(&call.receiver)
        }
        _ => false,
    }
}

/// Replaces the function's float type by the dual value type in the parts of
/// `ty` that `shape` says are active.
pub(crate) fn rewrite_type(ty: &mut Type, shape: &Shape, names: &Names) {
    if !shape.is_active() {
        return;
    }
    match ty {
        Type::Path(path) if path.qself.is_none() => {
            if float_name(&Type::Path(path.clone())).as_deref() == Some(names.precision.name()) {
                let mut real = names.real_type();
                set_span(&mut real, path.span());
                *ty = real;
                return;
            }
            let Some(last) = path.path.segments.last_mut() else {
                return;
            };
            let is_container = matches!(
                last.ident.to_string().as_str(),
                "Vec" | "VecDeque" | "Box" | "Option" | "Rc" | "Arc"
            );
            if let PathArguments::AngleBracketed(args) = &mut last.arguments {
                let is_option = last.ident == "Option";
                for arg in &mut args.args {
                    if let GenericArgument::Type(inner) = arg {
                        let inner_shape = if is_container && !is_option {
                            shape.elem()
                        } else {
                            shape.clone()
                        };
                        rewrite_type(inner, &inner_shape, names);
                    }
                }
            }
        }
        Type::Reference(reference) => rewrite_type(&mut reference.elem, shape, names),
        Type::Slice(slice) => rewrite_type(&mut slice.elem, &shape.elem(), names),
        Type::Array(array) => rewrite_type(&mut array.elem, &shape.elem(), names),
        Type::Paren(paren) => rewrite_type(&mut paren.elem, shape, names),
        Type::Group(group) => rewrite_type(&mut group.elem, shape, names),
        Type::Tuple(tuple) => {
            for (index, elem) in tuple.elems.iter_mut().enumerate() {
                rewrite_type(elem, &shape.component(index), names);
            }
        }
        _ => {}
    }
}

/// Gives the generated type the span of the user's type it replaces, so type
/// errors point at the user's annotation.
fn set_span(ty: &mut Type, span: Span) {
    let tokens: TokenStream = ty
        .to_token_stream()
        .into_iter()
        .map(|mut token| {
            token.set_span(span.resolved_at(token.span()));
            token
        })
        .collect();
    if let Ok(respanned) = syn::parse2(tokens) {
        *ty = respanned;
    }
}

/// `None`, `Option::None` or a longer path ending in `Option::None`.
pub(crate) fn is_none_literal(expr: &Expr) -> bool {
    let Expr::Path(path) = expr else { return false };
    let segments = syntax::segment_names(&path.path);
    path.qself.is_none()
        && path.path.segments.iter().all(|s| s.arguments.is_none())
        && match segments.as_slice() {
            [only] => only == "None",
            [.., parent, last] => parent == "Option" && last == "None",
            [] => false,
        }
}
