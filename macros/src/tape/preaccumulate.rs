//! `#[preaccumulate]` loops: differentiated one iteration at a time (the
//! runtime's `preaccumulate.rs` has the idea).
//!
//! At compile time the macro checks what it can: the loop is a `for` loop
//! with no early exit; it adds to at least one sum of reals declared before
//! it, and reads those sums nowhere else (the accumulators of `fusion.rs`);
//! every other differentiated variable declared outside it that it writes is
//! a scratch variable: not a parameter, and not mentioned anywhere else but
//! in its declaration. The generated loop ends the previous iteration and
//! poisons the scratch variables at the top of each iteration, so a read of
//! a value an earlier iteration left in them panics at run time.

use std::collections::HashSet;

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::visit::Visit;
use syn::{Block, Expr, ExprForLoop, Ident, Pat, Stmt};

use crate::errors::Errors;
use crate::tape::activity::Activity;
use crate::tape::fusion::count_ident;
use crate::tape::rewrite::Rewriter;

fn marked(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident(crate::syntax::PREACCUMULATE))
}

/// True if the body has a `#[preaccumulate]` anywhere.
pub(crate) fn used(body: &Block) -> bool {
    struct Finder(bool);
    impl<'ast> Visit<'ast> for Finder {
        fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
            self.0 |= attr.path().is_ident(crate::syntax::PREACCUMULATE);
        }
    }
    let mut finder = Finder(false);
    finder.visit_block(body);
    finder.0
}

/// Checks every `#[preaccumulate]` in the body (`params`: the function's
/// parameter names).
pub(crate) fn check(body: &Block, params: &[String], activity: &Activity, errors: &Errors) {
    struct Finder<'a> {
        body: &'a Block,
        params: &'a [String],
        activity: &'a Activity,
        errors: &'a Errors,
    }
    impl<'ast> Visit<'ast> for Finder<'_> {
        fn visit_expr_for_loop(&mut self, looping: &'ast ExprForLoop) {
            if marked(&looping.attrs) {
                check_loop(looping, self.body, self.params, self.activity, self.errors);
            }
            syn::visit::visit_expr_for_loop(self, looping);
        }
        fn visit_expr(&mut self, expr: &'ast Expr) {
            let attrs: &[syn::Attribute] = match expr {
                Expr::While(e) => &e.attrs,
                Expr::Loop(e) => &e.attrs,
                Expr::Block(e) => &e.attrs,
                Expr::Call(e) => &e.attrs,
                Expr::MethodCall(e) => &e.attrs,
                Expr::If(e) => &e.attrs,
                _ => &[],
            };
            if let Some(attr) = attrs
                .iter()
                .find(|a| a.path().is_ident(crate::syntax::PREACCUMULATE))
            {
                self.errors
                    .at(attr, "#[preaccumulate] goes on a `for` loop");
            }
            syn::visit::visit_expr(self, expr);
        }
        fn visit_local(&mut self, local: &'ast syn::Local) {
            if let Some(attr) = local
                .attrs
                .iter()
                .find(|a| a.path().is_ident(crate::syntax::PREACCUMULATE))
            {
                self.errors
                    .at(attr, "#[preaccumulate] goes on a `for` loop");
            }
            syn::visit::visit_local(self, local);
        }
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    Finder {
        body,
        params,
        activity,
        errors,
    }
    .visit_block(body);
}

fn check_loop(
    looping: &ExprForLoop,
    function: &Block,
    params: &[String],
    activity: &Activity,
    errors: &Errors,
) {
    let body = looping.body.to_token_stream();
    if let Some(exit) = early_exit(&body) {
        errors.at(
            looping.for_token,
            format!("a #[preaccumulate] loop is differentiated one iteration at a time, so it cannot leave the function early: it contains `{exit}`"),
        );
    }
    let whole = function.to_token_stream();
    let in_loop = looping.to_token_stream();
    for (name, site) in scratch_variables(looping, activity) {
        if params.contains(&name) {
            errors.at(
                site,
                format!("a #[preaccumulate] loop passes values on only through sums, but it writes the parameter `{name}`, whose contents are results of the function"),
            );
            continue;
        }
        let outside = count_ident(&whole, &name) - count_ident(&in_loop, &name);
        if outside != declarations(function, &name) {
            errors.at(
                site,
                format!("a #[preaccumulate] loop passes values on only through sums, but `{name}`, which it writes, is also used outside the loop; declare it inside the loop, or remove #[preaccumulate]"),
            );
        }
    }
}

/// `return`, `?` or a labeled jump out of the loop, if the body has one.
fn early_exit(tokens: &TokenStream) -> Option<&'static str> {
    let trees: Vec<proc_macro2::TokenTree> = tokens.clone().into_iter().collect();
    for (i, tree) in trees.iter().enumerate() {
        match tree {
            proc_macro2::TokenTree::Ident(ident) if ident == "return" => return Some("return"),
            proc_macro2::TokenTree::Ident(ident) if ident == "break" || ident == "continue" => {
                if matches!(trees.get(i + 1), Some(proc_macro2::TokenTree::Punct(p)) if p.as_char() == '\'')
                {
                    return Some("a labeled jump");
                }
            }
            proc_macro2::TokenTree::Punct(p) if p.as_char() == '?' => return Some("?"),
            proc_macro2::TokenTree::Group(group) => {
                if let Some(exit) = early_exit(&group.stream()) {
                    return Some(exit);
                }
            }
            _ => {}
        }
    }
    None
}

/// How many `let` patterns in `block` bind `name`.
fn declarations(block: &Block, name: &str) -> usize {
    struct Count<'a>(&'a str, usize);
    impl<'ast> Visit<'ast> for Count<'_> {
        fn visit_pat_ident(&mut self, pat: &'ast syn::PatIdent) {
            if pat.ident == self.0 {
                self.1 += 1;
            }
            syn::visit::visit_pat_ident(self, pat);
        }
        fn visit_local(&mut self, local: &'ast syn::Local) {
            self.visit_pat(&local.pat);
            if let Some(init) = &local.init {
                self.visit_expr(&init.expr);
            }
        }
        // Only `let` patterns count: other patterns are uses of the name
        // as far as the count of mentions goes.
        fn visit_expr_for_loop(&mut self, looping: &'ast ExprForLoop) {
            self.visit_expr(&looping.expr);
            self.visit_block(&looping.body);
        }
        fn visit_expr_closure(&mut self, closure: &'ast syn::ExprClosure) {
            self.visit_expr(&closure.body);
        }
        fn visit_arm(&mut self, arm: &'ast syn::Arm) {
            self.visit_expr(&arm.body);
        }
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    let mut count = Count(name, 0);
    count.visit_block(block);
    count.1
}

/// The identifier `name` as the user wrote it at `site` (its span keeps
/// its hygiene inside the user's macros).
fn user_ident(name: &str, site: &Expr) -> Ident {
    crate::syntax::find_ident(quote::ToTokens::to_token_stream(site), name)
        .unwrap_or_else(|| Ident::new(name, proc_macro2::Span::call_site()))
}

/// The differentiated variables declared outside `looping` that its body
/// writes, other than the sums it adds to (`s += ..` only), with a write
/// site each.
pub(crate) fn scratch_variables(looping: &ExprForLoop, activity: &Activity) -> Vec<(String, Expr)> {
    struct Writes<'a> {
        activity: &'a Activity,
        declared: HashSet<String>,
        found: Vec<(String, Expr, bool)>,
    }
    fn root(expr: &Expr) -> Option<&Expr> {
        match expr {
            Expr::Path(path) if path.path.get_ident().is_some() => Some(expr),
            Expr::Index(index) => root(&index.expr),
            Expr::Field(field) => root(&field.base),
            Expr::Paren(paren) => root(&paren.expr),
            Expr::Unary(unary) => root(&unary.expr),
            Expr::Reference(reference) => root(&reference.expr),
            Expr::MethodCall(call) => root(&call.receiver),
            _ => None,
        }
    }
    impl Writes<'_> {
        fn write(&mut self, place: &Expr, additive: bool) {
            let Some(root) = root(place) else {
                return;
            };
            let Expr::Path(path) = root else {
                return;
            };
            let Some(ident) = path.path.get_ident() else {
                return;
            };
            let name = ident.to_string();
            if self.declared.contains(&name) || !self.activity.expr(place).is_active() {
                return;
            }
            // A scalar only ever added to is a sum (an accumulator), as long
            // as every write of it is an addition and the analysis knows it
            // is a real (the accumulators of `fusion.rs` take exactly those;
            // a variable also assigned a call's result is not one, and
            // would otherwise be left holding a value of a forgotten
            // iteration: found by the fuzzer).
            let scalar = matches!(place, Expr::Path(_))
                && self.activity.expr(place) == crate::shape::Shape::Real;
            match self.found.iter_mut().find(|(n, _, _)| *n == name) {
                Some((_, _, sum)) => *sum &= additive && scalar,
                None => self.found.push((name, place.clone(), additive && scalar)),
            }
        }
    }
    impl<'ast> Visit<'ast> for Writes<'_> {
        fn visit_expr_assign(&mut self, assign: &'ast syn::ExprAssign) {
            self.write(&assign.left, false);
            syn::visit::visit_expr_assign(self, assign);
        }
        fn visit_expr_binary(&mut self, binary: &'ast syn::ExprBinary) {
            use syn::BinOp::*;
            match binary.op {
                AddAssign(_) | SubAssign(_) => self.write(&binary.left, true),
                MulAssign(_) | DivAssign(_) | RemAssign(_) => self.write(&binary.left, false),
                _ => {}
            }
            syn::visit::visit_expr_binary(self, binary);
        }
        fn visit_expr_reference(&mut self, reference: &'ast syn::ExprReference) {
            if reference.mutability.is_some() {
                self.write(&reference.expr, false);
            }
            syn::visit::visit_expr_reference(self, reference);
        }
        fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
            if !crate::tape::loops::reads_only(&call.method.to_string()) {
                self.write(&call.receiver, false);
            }
            syn::visit::visit_expr_method_call(self, call);
        }
        fn visit_local(&mut self, local: &'ast syn::Local) {
            declare(&local.pat, &mut self.declared);
            syn::visit::visit_local(self, local);
        }
        fn visit_expr_for_loop(&mut self, looping: &'ast ExprForLoop) {
            declare(&looping.pat, &mut self.declared);
            syn::visit::visit_expr_for_loop(self, looping);
        }
        fn visit_expr_closure(&mut self, closure: &'ast syn::ExprClosure) {
            for input in &closure.inputs {
                declare(input, &mut self.declared);
            }
            syn::visit::visit_expr_closure(self, closure);
        }
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    fn declare(pat: &Pat, declared: &mut HashSet<String>) {
        let mut names = HashSet::new();
        crate::tape::fusion::collect_idents(&pat.to_token_stream(), &mut names);
        declared.extend(names);
    }
    let mut writes = Writes {
        activity,
        declared: HashSet::new(),
        found: Vec::new(),
    };
    declare(&looping.pat, &mut writes.declared);
    writes.visit_block(&looping.body);
    writes
        .found
        .into_iter()
        .filter(|(_, _, sum)| !sum)
        .map(|(name, site, _)| (name, site))
        .collect()
}

impl Rewriter<'_> {
    /// If `stmt` is a `#[preaccumulate]` loop, the statements replacing it.
    pub(crate) fn preaccumulated_loop(&mut self, stmt: &mut Stmt) -> Option<Vec<Stmt>> {
        let Stmt::Expr(Expr::ForLoop(looping), _) = stmt else {
            return None;
        };
        if !marked(&looping.attrs) {
            return None;
        }
        looping
            .attrs
            .retain(|a| !a.path().is_ident(crate::syntax::PREACCUMULATE));
        let scratch: Vec<Ident> = scratch_variables(looping, self.activity)
            .into_iter()
            .map(|(name, site)| user_ident(&name, &site))
            .collect();
        let for_token = looping.for_token;
        let (prologue, sums) = self.start_accumulators(stmt);
        if sums.is_empty() && scratch.is_empty() {
            // Nothing differentiated leaves the loop: an ordinary loop (as
            // on the compiled path, the attribute changes nothing).
            return None;
        }
        if sums.is_empty() {
            self.errors.at(for_token, "a #[preaccumulate] loop passes its results on through sums (`total += ..`, for a real `total` declared before the loop and read nowhere in it); this loop adds to none");
        }
        let accumulators: Vec<Ident> = sums
            .iter()
            .filter_map(|sum| self.accumulator_of(sum))
            .collect();
        self.stmt(stmt, None, false);
        let recorder = self.names.local("preaccumulator");
        let tape = self.names.tape.clone();
        if let Stmt::Expr(Expr::ForLoop(looping), _) = stmt {
            let top = vec![
                self.gen_stmt(quote!(#recorder.next_iteration([#(&mut #accumulators),*]);)),
                self.gen_stmt(quote!({ #(#recorder.poison(&mut #scratch);)* })),
            ];
            looping.body.stmts.splice(0..0, top);
        }
        let finished = self.finish_accumulators(stmt, sums);
        let looping = std::mem::replace(stmt, crate::tape::fusion::placeholder());
        let mut out = prologue;
        out.push(self.gen_stmt(quote!(
            let mut #recorder = ::deltad::__private::Preaccumulator::start(#tape, [#(&#accumulators),*]);
        )));
        out.push(looping);
        out.push(self.gen_stmt(quote!(#recorder.finish([#(&mut #accumulators),*]);)));
        out.extend(finished);
        Some(out)
    }
}
