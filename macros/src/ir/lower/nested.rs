//! Derivatives taken inside the function, as calls: the field
//! `f::vjp(args, s).1.x` of a function with a real result is a call of the
//! callee `f::__vjp_x` with the seed as one more argument (`f::grad(args).x`
//! and `f::value_and_grad(args).1.x` with the seed 1), whose compiled passes
//! `f`'s expansion generates (`emit/nested_entries.rs`), and
//! `f::value_and_grad(args).0` (`f::vjp(args, s).0`) a call of `f`; every
//! pass then treats them as calls.
//!
//! Before lowering, [`rewrite`] takes the `let`s that name a gradient apart:
//! `let g = f::grad(args);` whose later statements read only its fields
//! (`g.x`, `g.w`) becomes a `let` per field read (`let g_x = f::grad(args).x;`),
//! the reads naming those locals; `let (v, g) = f::value_and_grad(args);`
//! and `f::vjp(args, s)` likewise, `v` a call of `f`.

use proc_macro2::TokenTree;
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;
use syn::Expr as SynExpr;

use super::buffers::{binds, names};
use super::closure_args::Names;
use super::stmts::strip;
use super::{Lowered, Lowerer, Unsupported};
use crate::ir::Call;

/// What a derivative the compiled path does not take says.
pub(super) const DERIVATIVES: &str = "this derivative, taken inside a differentiated function, is not on the compiled path yet: it takes the fields of gradients of functions with a real result (`f::grad(..).x`, `f::value_and_grad(..).1.x`, `f::vjp(.., seed).1.x`, or a `let` of one then `g.x`), tangents of `jvp`s (`f::jvp(.., &t).1`, `t` constant) and their values (`.0`)";

/// A derivative call: the function's path and the derivative's name.
fn derivative(expr: &SynExpr) -> Option<(&syn::ExprCall, syn::Path, String)> {
    let SynExpr::Call(call) = strip(expr) else {
        return None;
    };
    let SynExpr::Path(path) = strip(&call.func) else {
        return None;
    };
    if path.qself.is_some() {
        return None;
    }
    let crate::syntax::CallKind::Derivative(kind) = crate::syntax::classify_call(&path.path) else {
        return None;
    };
    if path.path.segments.iter().any(|s| !s.arguments.is_empty()) {
        return None;
    }
    let mut function = path.path.clone();
    function.segments.pop();
    function.segments.pop_punct();
    Some((call, function, kind))
}

/// What a field expression of a derivative call reads; `seeded`: the
/// call's last argument is a `vjp`'s seed.
enum Read<'e> {
    /// A field of the gradient: `f::grad(..).x`, `f::value_and_grad(..).1.x`,
    /// `f::vjp(.., s).1.x`.
    Gradient {
        call: &'e syn::ExprCall,
        function: syn::Path,
        member: syn::Member,
        seeded: bool,
    },
    /// The tangent of a `jvp`: `f::jvp(.., &t).1`.
    Tangent {
        call: &'e syn::ExprCall,
        function: syn::Path,
    },
    /// The value: `f::value_and_grad(..).0`, `f::vjp(..).0`, `f::jvp(..).0`.
    Value {
        call: &'e syn::ExprCall,
        function: syn::Path,
        seeded: bool,
    },
}

fn read(expr: &SynExpr) -> Option<Read<'_>> {
    let SynExpr::Field(field) = strip(expr) else {
        return None;
    };
    let index = |member: &syn::Member| match member {
        syn::Member::Unnamed(index) => Some(index.index),
        syn::Member::Named(_) => None,
    };
    if let Some((call, function, kind)) = derivative(&field.base) {
        let seeded = kind == "vjp" || kind == "jvp";
        return match (kind.as_str(), index(&field.member)) {
            ("jvp", Some(1)) => Some(Read::Tangent { call, function }),
            ("grad", None) => Some(Read::Gradient {
                call,
                function,
                member: field.member.clone(),
                seeded,
            }),
            ("value_and_grad" | "vjp" | "jvp", Some(0)) => Some(Read::Value {
                call,
                function,
                seeded,
            }),
            _ => None,
        };
    }
    let SynExpr::Field(inner) = strip(&field.base) else {
        return None;
    };
    let (call, function, kind) = derivative(&inner.base)?;
    match (kind.as_str(), index(&inner.member), index(&field.member)) {
        ("value_and_grad" | "vjp", Some(1), None) => Some(Read::Gradient {
            call,
            function,
            member: field.member.clone(),
            seeded: kind == "vjp",
        }),
        _ => None,
    }
}

/// True if `expr` reads a derivative call's field or value (a call of a
/// value the compiled passes take, whatever its type).
pub(super) fn is_nested_read(expr: &SynExpr) -> bool {
    read(expr).is_some()
}

/// `path` with one more segment `name`.
fn joined(path: &syn::Path, name: syn::Ident) -> syn::Path {
    let mut path = path.clone();
    path.segments.push(syn::PathSegment::from(name));
    path
}

/// `call` calling `path` with `args`.
fn call_of(call: &syn::ExprCall, path: syn::Path, args: Vec<SynExpr>) -> syn::ExprCall {
    let mut call = call.clone();
    *call.func = SynExpr::Path(syn::ExprPath {
        attrs: Vec::new(),
        qself: None,
        path,
    });
    call.args = args.into_iter().collect();
    call
}

impl Lowerer {
    /// The call a derivative's field or value is (see the module's docs);
    /// `None` if `expr` is not one.
    pub(super) fn nested_call(
        &mut self,
        expr: &SynExpr,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<Option<Call>> {
        let Some(read) = read(expr) else {
            // (Another part of a derivative: `g::jvp(..).1`, ...)
            let mut at = strip(expr);
            while let SynExpr::Field(field) = at {
                at = strip(&field.base);
            }
            if derivative(at).is_some() {
                return Err(Unsupported::new(at.span(), DERIVATIVES));
            }
            return Ok(None);
        };
        // The arguments without a `vjp`'s seed, and the seed (1 for `grad`
        // and `value_and_grad`).
        let (call, seeded) = match &read {
            Read::Gradient { call, seeded, .. } | Read::Value { call, seeded, .. } => {
                (*call, *seeded)
            }
            Read::Tangent { call, function } => {
                return self.tangent_call(call, function, out).map(Some);
            }
        };
        let mut args: Vec<SynExpr> = call.args.iter().cloned().collect();
        let seed = if seeded {
            let Some(seed) = args.pop() else {
                return Ok(None);
            };
            // (A seed by reference or a buffer: the function's result is
            // not a real, and it has no entries.)
            if matches!(strip(&seed), SynExpr::Reference(_)) || self.buffer_var(&seed).is_some() {
                return Err(Unsupported::new(seed.span(), DERIVATIVES));
            }
            seed
        } else {
            let one = syn::LitFloat::new("1.0", call.span());
            syn::parse_quote_spanned!(call.span()=> #one)
        };
        let (as_call, written, members) = match read {
            Read::Gradient {
                function, member, ..
            } => {
                let syn::Member::Named(name) = &member else {
                    return Ok(None);
                };
                args.push(seed);
                let entry = joined(&function, crate::names::vjp_entry_module(name));
                let vjp = joined(&function, syn::Ident::new("vjp", call.func.span()));
                let one: syn::Member = syn::parse_quote_spanned!(member.span()=> 1);
                (
                    call_of(call, entry, args.clone()),
                    // Plain code (no argument differentiated) takes the `vjp`
                    // as written.
                    Some(call_of(call, vjp, args)),
                    vec![one, member],
                )
            }
            Read::Value { function, .. } => (call_of(call, function, args), None, Vec::new()),
            Read::Tangent { .. } => unreachable!("taken above"),
        };
        let Some(mut lowered) = self.user_call(&as_call, out)? else {
            return Ok(None);
        };
        self.reject_user_types(&lowered)?;
        if let Some(written) = written {
            *lowered.written = SynExpr::Call(written);
        }
        lowered.read = members;
        Ok(Some(lowered))
    }
}

impl Lowerer {
    /// `f::jvp(args, t).1`: a call of the entry `f::__jvp` with the tangent
    /// `t` as one more argument, plain data (a tangent computed from
    /// differentiated values keeps the function on the tape).
    fn tangent_call(
        &mut self,
        call: &syn::ExprCall,
        function: &syn::Path,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<Call> {
        let mut args: Vec<SynExpr> = call.args.iter().cloned().collect();
        let Some(tangent) = args.pop() else {
            return Err(Unsupported::new(call.span(), DERIVATIVES));
        };
        // (Written in place, `&f::Grad { .. }`, or a reference to a
        // parameter: a local built by a struct literal is its fields.)
        let in_place = match strip(&tangent) {
            SynExpr::Reference(reference) => match strip(&reference.expr) {
                SynExpr::Struct(_) => true,
                SynExpr::Path(path) => self.resolve_path(&path.path).is_some_and(|var| {
                    matches!(self.vars[var].origin, crate::ir::Origin::Param(_))
                }),
                _ => false,
            },
            _ => false,
        };
        if !in_place {
            return Err(Unsupported::new(
                tangent.span(),
                "the tangent of a `jvp` taken inside a differentiated function is on the compiled path written in place (`&f::Grad { .. }`), in a `let` of a literal that only the next statement reads, or as a parameter",
            ));
        }
        let entry = joined(
            function,
            syn::Ident::new(crate::names::JVP_ENTRY_MODULE, call.func.span()),
        );
        let Some(mut lowered) = self.user_call(&call_of(call, entry, args), out)? else {
            return Err(Unsupported::new(call.span(), DERIVATIVES));
        };
        self.reject_user_types(&lowered)?;
        lowered
            .args
            .push(crate::ir::CallArg::Plain(self.opaque(&tangent)?));
        *lowered.written = SynExpr::Call(call.clone());
        lowered.read = vec![syn::parse_quote_spanned!(call.span()=> 1)];
        Ok(lowered)
    }
}

impl Lowerer {
    /// An error for a call passing values the callee's entries cannot take
    /// (it has none): values of user types, and constant data that is not
    /// borrowed or primitive (or whose type the macro cannot see).
    fn reject_user_types(&self, call: &Call) -> Lowered<()> {
        let user_type = call.args.iter().find_map(|arg| match arg {
            crate::ir::CallArg::Struct { span, .. } | crate::ir::CallArg::Literal { span, .. } => {
                Some(*span)
            }
            crate::ir::CallArg::Value(value) => match &value.kind {
                crate::ir::ExprKind::Opaque { .. } => Some(value.span),
                crate::ir::ExprKind::Var(var) if self.plain.contains(var) => {
                    let typed = self.vars[*var]
                        .annotation
                        .as_ref()
                        .is_none_or(crate::types::passed_again);
                    (!typed).then_some(value.span)
                }
                _ => None,
            },
            _ => None,
        });
        match user_type {
            Some(span) => Err(Unsupported::new(
                span,
                "a derivative of a function taking values of user types or constant data by value, taken inside a differentiated function, is not on the compiled path yet",
            )),
            None => Ok(()),
        }
    }
}

/// Takes apart the `let`s naming a gradient in `body` (see the module's
/// docs).
pub(super) fn rewrite(body: &syn::Block) -> syn::Block {
    let mut body = body.clone();
    Lets { next: 0 }.visit_block_mut(&mut body);
    body
}

struct Lets {
    next: usize,
}

impl VisitMut for Lets {
    fn visit_block_mut(&mut self, block: &mut syn::Block) {
        let mut at = 0;
        while at < block.stmts.len() {
            let (before, rest) = block.stmts.split_at_mut(at + 1);
            if let Some(replacement) = self.take_apart(&before[at], rest) {
                let count = replacement.len();
                block.stmts.splice(at..at + 1, replacement);
                at += count;
            } else {
                at += 1;
            }
        }
        syn::visit_mut::visit_block_mut(self, block);
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

impl Lets {
    /// The statements replacing `stmt` if it is a `let` naming a gradient
    /// whose fields alone `rest` reads (`rest` then reads locals).
    fn take_apart(&mut self, stmt: &syn::Stmt, rest: &mut [syn::Stmt]) -> Option<Vec<syn::Stmt>> {
        let syn::Stmt::Local(local) = stmt else {
            return None;
        };
        if !local.attrs.is_empty() {
            return None;
        }
        let init = local.init.as_ref()?;
        if init.diverge.is_some() {
            return None;
        }
        if inline_tangent(local, rest) {
            return Some(Vec::new());
        }
        let (call, function, kind) = derivative(&init.expr)?;
        // The value's name and the other's (`_` for one not wanted).
        let (value, other) = match (&local.pat, kind.as_str()) {
            (syn::Pat::Ident(ident), "grad") => (None, Some(plain_name(ident)?)),
            (syn::Pat::Tuple(tuple), "value_and_grad" | "vjp" | "jvp")
                if tuple.elems.len() == 2 =>
            {
                (tuple_name(&tuple.elems[0])?, tuple_name(&tuple.elems[1])?)
            }
            _ => return None,
        };
        let mut lets: Vec<syn::Stmt> = Vec::new();
        if let Some(value) = value {
            // (The value: the function's, without a `vjp`'s seed or a
            // `jvp`'s tangent.)
            let mut args: Vec<&SynExpr> = call.args.iter().collect();
            if kind == "vjp" || kind == "jvp" {
                args.pop()?;
            }
            lets.push(
                syn::parse_quote_spanned!(local.span()=> let #value = #function(#(#args),*);),
            );
        }
        // A `jvp`'s tangent: `let t = f::jvp(..).1;`.
        if kind == "jvp" {
            if let Some(tangent) = other {
                lets.push(syn::parse_quote_spanned!(local.span()=> let #tangent = #call.1;));
            }
            return Some(lets);
        }
        let gradient = other;
        let fields = match &gradient {
            Some(gradient) => fields_read(gradient, rest)?,
            None => Vec::new(),
        };
        // The gradient's field `x` as written: `f::grad(..).x`, else
        // `.1.x` of the call.
        let derivative = &init.expr;
        let read = |member: &syn::Member| -> SynExpr {
            if kind == "grad" {
                syn::parse_quote_spanned!(member.span()=> #derivative.#member)
            } else {
                syn::parse_quote_spanned!(member.span()=> #derivative.1.#member)
            }
        };
        let mut names = Vec::new();
        for member in &fields {
            let syn::Member::Named(field) = member else {
                return None;
            };
            let local_name = quote::format_ident!(
                "__deltad_gradient{}_{}",
                self.next,
                syn::ext::IdentExt::unraw(field),
                span = member.span()
            );
            let value = read(member);
            lets.push(syn::parse_quote_spanned!(member.span()=> let #local_name = #value;));
            names.push((field.clone(), local_name));
        }
        self.next += 1;
        if let Some(gradient) = &gradient {
            let name = syn::ext::IdentExt::unraw(gradient).to_string();
            let mut reads = Reads {
                name: &name,
                names: &names,
                done: false,
            };
            for stmt in rest.iter_mut() {
                if reads.done {
                    break;
                }
                reads.visit_stmt_mut(stmt);
            }
        }
        Some(lets)
    }
}

/// `let t = f::Grad { .. };` whose one use is the tangent `&t` of a `jvp`
/// in the next statement: the literal is written in place there (a
/// tangent written in place is a constant the entry `f::__jvp` takes),
/// and the `let` goes. True if it did.
fn inline_tangent(local: &syn::Local, rest: &mut [syn::Stmt]) -> bool {
    let syn::Pat::Ident(ident) = &local.pat else {
        return false;
    };
    let Some(name) = plain_name(ident) else {
        return false;
    };
    let Some(init) = &local.init else {
        return false;
    };
    let SynExpr::Struct(literal) = strip(&init.expr) else {
        return false;
    };
    if literal
        .path
        .segments
        .last()
        .is_none_or(|s| s.ident != "Grad")
        || literal.rest.is_some()
    {
        return false;
    }
    let Some((next, later)) = rest.split_first_mut() else {
        return false;
    };
    let name = syn::ext::IdentExt::unraw(&name).to_string();
    let in_next = Names::in_stmts(std::slice::from_ref(next));
    let uses = |names: &[String]| names.iter().filter(|n| **n == name).count();
    if uses(&in_next) != 1 || uses(&Names::in_stmts(later)) != 0 {
        return false;
    }
    // (The literal is then evaluated where the `jvp` reads it: the next
    // statement names none of the variables it reads, so none of them has
    // changed by then.)
    if Names::in_expr(&init.expr)
        .iter()
        .any(|read| in_next.contains(read))
    {
        return false;
    }
    let mut place = Place {
        name: &name,
        literal: &init.expr,
        done: false,
    };
    place.visit_stmt_mut(next);
    place.done
}

/// Writes the literal in place of `&name` as the last argument of a
/// `jvp` call.
struct Place<'a> {
    name: &'a str,
    literal: &'a SynExpr,
    done: bool,
}

impl VisitMut for Place<'_> {
    fn visit_expr_call_mut(&mut self, call: &mut syn::ExprCall) {
        syn::visit_mut::visit_expr_call_mut(self, call);
        let is_jvp = matches!(
            strip(&call.func),
            SynExpr::Path(path) if path.path.segments.last().is_some_and(|s| s.ident == "jvp")
        );
        let Some(last) = call.args.last_mut() else {
            return;
        };
        if !is_jvp {
            return;
        }
        if let SynExpr::Reference(reference) = last {
            if reference.mutability.is_none() && names(&reference.expr, self.name) {
                let literal = self.literal;
                *reference.expr = syn::parse_quote_spanned!(literal.span()=> #literal);
                self.done = true;
            }
        }
    }
}

/// The name a part of a tuple pattern binds: `Some(None)` for `_`.
fn tuple_name(pat: &syn::Pat) -> Option<Option<syn::Ident>> {
    match pat {
        syn::Pat::Wild(_) => Some(None),
        syn::Pat::Ident(ident) => plain_name(ident).map(Some),
        _ => None,
    }
}

/// The name a plain `let` pattern binds (no `mut`, `ref` or subpattern).
fn plain_name(ident: &syn::PatIdent) -> Option<syn::Ident> {
    (ident.by_ref.is_none() && ident.mutability.is_none() && ident.subpat.is_none())
        .then(|| ident.ident.clone())
}

/// The fields of `name` that `rest` reads (`name.x`), in order, until a
/// `let` binds the name again; `None` if `rest` uses `name` otherwise.
fn fields_read(name: &syn::Ident, rest: &[syn::Stmt]) -> Option<Vec<syn::Member>> {
    struct Uses<'n> {
        name: &'n str,
        fields: Vec<syn::Member>,
        other: bool,
    }
    impl<'ast> Visit<'ast> for Uses<'_> {
        fn visit_expr(&mut self, expr: &'ast SynExpr) {
            if let SynExpr::Field(field) = expr {
                if names(&field.base, self.name) {
                    if !self.fields.contains(&field.member) {
                        self.fields.push(field.member.clone());
                    }
                    return;
                }
            }
            if names(expr, self.name) {
                self.other = true;
            }
            syn::visit::visit_expr(self, expr);
        }
        // (Bound again inside: a closure's parameter, an inner `let`, a
        // pattern; its reads there would be another value's.)
        fn visit_pat_ident(&mut self, pat: &'ast syn::PatIdent) {
            self.other |= syn::ext::IdentExt::unraw(&pat.ident) == self.name;
            syn::visit::visit_pat_ident(self, pat);
        }
        fn visit_macro(&mut self, mac: &'ast syn::Macro) {
            // (In a macro's tokens: `name.x` a field read, any other
            // `name` another use.)
            token_reads(
                mac.tokens.clone(),
                self.name,
                &mut self.fields,
                &mut self.other,
            );
        }
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    let name = &syn::ext::IdentExt::unraw(name).to_string();
    let mut uses = Uses {
        name,
        fields: Vec::new(),
        other: false,
    };
    for stmt in rest {
        if let syn::Stmt::Local(local) = stmt {
            if let Some(init) = &local.init {
                uses.visit_expr(&init.expr);
                if let Some((_, diverge)) = &init.diverge {
                    uses.visit_expr(diverge);
                }
            }
            if binds(&local.pat, name) {
                break;
            }
            continue;
        }
        uses.visit_stmt(stmt);
    }
    (!uses.other && !uses.fields.is_empty()).then_some(uses.fields)
}

/// Replaces the reads `name.x` with the locals `names` holds, until a
/// `let` binds the name again.
struct Reads<'a> {
    name: &'a str,
    names: &'a [(syn::Ident, syn::Ident)],
    done: bool,
}

impl VisitMut for Reads<'_> {
    fn visit_expr_mut(&mut self, expr: &mut SynExpr) {
        if let SynExpr::Field(field) = expr {
            if let (true, syn::Member::Named(member)) =
                (names(&field.base, self.name), &field.member)
            {
                if let Some((_, local)) = self.names.iter().find(|(f, _)| f == member) {
                    let span = field.span();
                    let local = syn::Ident::new(&local.to_string(), span);
                    *expr = syn::parse_quote_spanned!(span=> #local);
                    return;
                }
            }
        }
        syn::visit_mut::visit_expr_mut(self, expr);
    }

    fn visit_macro_mut(&mut self, mac: &mut syn::Macro) {
        mac.tokens = replace_tokens(mac.tokens.clone(), self.name, self.names);
    }

    fn visit_local_mut(&mut self, local: &mut syn::Local) {
        if let Some(init) = &mut local.init {
            self.visit_expr_mut(&mut init.expr);
        }
        self.done |= binds(&local.pat, self.name);
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// The reads `name.x` in a macro's tokens (into `fields`); `other` set
/// where `name` stands otherwise.
fn token_reads(
    tokens: proc_macro2::TokenStream,
    name: &str,
    fields: &mut Vec<syn::Member>,
    other: &mut bool,
) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    for (at, tree) in trees.iter().enumerate() {
        match tree {
            TokenTree::Ident(ident) if syn::ext::IdentExt::unraw(ident) == name => {
                match field_after(&trees, at) {
                    Some(field) => {
                        let member = syn::Member::Named(field);
                        if !fields.contains(&member) {
                            fields.push(member);
                        }
                    }
                    None => *other = true,
                }
            }
            TokenTree::Group(group) => token_reads(group.stream(), name, fields, other),
            _ => {}
        }
    }
}

/// The field `x` of `name . x` at `at` (`name` there), not preceded by
/// `.` (a field of something else named alike).
fn field_after(trees: &[TokenTree], at: usize) -> Option<syn::Ident> {
    if at > 0 && matches!(&trees[at - 1], TokenTree::Punct(p) if p.as_char() == '.') {
        return None;
    }
    match (trees.get(at + 1), trees.get(at + 2)) {
        (Some(TokenTree::Punct(dot)), Some(TokenTree::Ident(field)))
            if dot.as_char() == '.' && dot.spacing() == proc_macro2::Spacing::Alone =>
        {
            Some(field.clone())
        }
        _ => None,
    }
}

/// `tokens` with each `name.x` of a field `names` holds replaced by its
/// local.
fn replace_tokens(
    tokens: proc_macro2::TokenStream,
    name: &str,
    names: &[(syn::Ident, syn::Ident)],
) -> proc_macro2::TokenStream {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Vec::new();
    let mut at = 0;
    while at < trees.len() {
        match &trees[at] {
            TokenTree::Ident(ident) if syn::ext::IdentExt::unraw(ident) == name => {
                let local = field_after(&trees, at)
                    .and_then(|field| names.iter().find(|(f, _)| *f == field));
                if let Some((_, local)) = local {
                    out.push(TokenTree::Ident(syn::Ident::new(
                        &local.to_string(),
                        ident.span(),
                    )));
                    at += 3;
                    continue;
                }
                out.push(trees[at].clone());
            }
            TokenTree::Group(group) => {
                let mut replaced = proc_macro2::Group::new(
                    group.delimiter(),
                    replace_tokens(group.stream(), name, names),
                );
                replaced.set_span(group.span());
                out.push(TokenTree::Group(replaced));
            }
            other => out.push(other.clone()),
        }
        at += 1;
    }
    out.into_iter().collect()
}
