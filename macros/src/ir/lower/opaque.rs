//! Expressions the lowering does not interpret: kept as written, with the
//! local variables they read. They may read locals but never change them
//! (no assignment, no `&mut`, no method that could mutate a `mut` local), so
//! the analyses see every write in the IR.

use proc_macro2::{TokenStream, TokenTree};
use syn::spanned::Spanned;
use syn::visit::Visit;

use super::{Lowered, Lowerer, Unsupported};
use crate::ir::{Expr, ExprKind, VarId};

/// Methods that only read their receiver: allowed on `mut` locals.
const READ_ONLY: &[&str] = &[
    "len",
    "is_empty",
    "abs",
    "pow",
    "powi",
    "min",
    "max",
    "signum",
    "rem_euclid",
    "div_euclid",
    "is_nan",
    "is_finite",
    "is_infinite",
    "is_normal",
    "is_subnormal",
    "is_sign_positive",
    "is_sign_negative",
    "to_bits",
    "count_ones",
    "count_zeros",
    "leading_zeros",
    "trailing_zeros",
    "is_power_of_two",
    "next_power_of_two",
    "isqrt",
    "ilog2",
    "ilog10",
    "saturating_add",
    "saturating_sub",
    "saturating_mul",
    "wrapping_add",
    "wrapping_sub",
    "wrapping_mul",
    "checked_add",
    "checked_sub",
    "checked_mul",
    "checked_div",
    "abs_diff",
    "to_string",
    "clone",
    "is_some",
    "is_none",
    "contains",
    "get",
    "first",
    "last",
    "iter",
    "copied",
    "cloned",
    "sum",
    "product",
    "min_by",
    "max_by",
    "partial_cmp",
    "total_cmp",
    "cmp",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "unwrap",
    "expect",
    "unwrap_or",
    "map",
    "count",
];

impl Lowerer {
    /// `expr` kept as written, or unsupported if it could change a local.
    pub(super) fn opaque(&mut self, expr: &syn::Expr) -> Lowered<Expr> {
        let mut reads = Reads {
            lowerer: self,
            reads: Vec::new(),
            problem: None,
        };
        reads.visit_expr(expr);
        if let Some(problem) = reads.problem {
            return Err(problem);
        }
        let reads = reads.reads;
        Ok(Expr::new(
            ExprKind::Opaque {
                expr: Box::new(expr.clone()),
                reads,
            },
            expr.span(),
        ))
    }
}

struct Reads<'a> {
    lowerer: &'a Lowerer,
    reads: Vec<VarId>,
    problem: Option<Unsupported>,
}

impl Reads<'_> {
    fn local(&self, expr: &syn::Expr) -> Option<VarId> {
        match expr {
            syn::Expr::Path(path) if path.qself.is_none() => self.lowerer.resolve_path(&path.path),
            syn::Expr::Paren(paren) => self.local(&paren.expr),
            _ => None,
        }
    }

    fn mentions_local(&self, expr: &syn::Expr) -> bool {
        let mut inner = Reads {
            lowerer: self.lowerer,
            reads: Vec::new(),
            problem: None,
        };
        inner.visit_expr(expr);
        !inner.reads.is_empty()
    }

    fn reject(&mut self, span: proc_macro2::Span, message: &str) {
        if self.problem.is_none() {
            self.problem = Some(Unsupported::new(span, message));
        }
    }

    fn read(&mut self, var: VarId) {
        if !self.reads.contains(&var) {
            self.reads.push(var);
        }
    }

    fn scan_tokens(&mut self, tokens: &TokenStream) {
        for token in tokens.clone() {
            match token {
                TokenTree::Ident(ident) => {
                    if let Some(var) = self.lowerer.resolve(&ident) {
                        if self.lowerer.is_literal(var) || self.lowerer.element_of(var).is_some() {
                            self.reject(
                                ident.span(),
                                &super::structs::whole_value(ident.span()).message,
                            );
                        }
                        self.read(var);
                    }
                }
                TokenTree::Group(group) => self.scan_tokens(&group.stream()),
                TokenTree::Literal(literal) => {
                    // Inline format arguments: `{x}`, `{x:.3}`.
                    let text = literal.to_string();
                    if text.starts_with('"') {
                        for name in inline_format_names(&text) {
                            let ident = syn::Ident::new(&name, literal.span());
                            if let Some(var) = self.lowerer.resolve(&ident) {
                                self.read(var);
                            }
                        }
                    }
                }
                TokenTree::Punct(_) => {}
            }
        }
    }
}

/// The identifiers named inside `{..}` of a format string.
fn inline_format_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '{' {
            continue;
        }
        if chars.peek() == Some(&'{') {
            chars.next();
            continue;
        }
        let name: String = chars
            .clone()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.starts_with(|c: char| c.is_alphabetic() || c == '_') {
            names.push(name);
        }
    }
    names
}

impl<'ast> Visit<'ast> for Reads<'_> {
    fn visit_expr_path(&mut self, path: &'ast syn::ExprPath) {
        if path.qself.is_none() {
            if let Some(var) = self.lowerer.resolve_path(&path.path) {
                if self.lowerer.vars[var].kind == crate::ir::VarKind::Closure {
                    self.reject(
                        path.span(),
                        "a closure used in plain code (passed on, stored) is not on the compiled path yet",
                    );
                }
                // A local built by a struct literal exists only as its
                // fields' variables, a name of a buffer's element not at all.
                if self.lowerer.is_literal(var) || self.lowerer.element_of(var).is_some() {
                    self.reject(
                        path.span(),
                        &super::structs::whole_value(path.span()).message,
                    );
                }
                self.read(var);
            }
        }
        syn::visit::visit_expr_path(self, path);
    }

    fn visit_expr_assign(&mut self, assign: &'ast syn::ExprAssign) {
        if self.mentions_local(&assign.left) {
            self.reject(
                assign.span(),
                "an assignment inside this expression is not on the compiled path: write it as its own statement",
            );
        }
        syn::visit::visit_expr_assign(self, assign);
    }

    fn visit_expr_binary(&mut self, binary: &'ast syn::ExprBinary) {
        if crate::syntax::is_compound_assignment(&binary.op) && self.mentions_local(&binary.left) {
            self.reject(
                binary.span(),
                "an assignment inside this expression is not on the compiled path: write it as its own statement",
            );
        }
        syn::visit::visit_expr_binary(self, binary);
    }

    fn visit_expr_reference(&mut self, reference: &'ast syn::ExprReference) {
        if reference.mutability.is_some() && self.mentions_local(&reference.expr) {
            self.reject(
                reference.span(),
                "`&mut` of a local variable is not on the compiled path yet",
            );
        }
        syn::visit::visit_expr_reference(self, reference);
    }

    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        // The length of a field of a value of a user type: plain, whatever
        // the field holds (its twin has the same length).
        if matches!(call.method.to_string().as_str(), "len" | "is_empty")
            && call.args.is_empty()
            && self
                .lowerer
                .field_chain(&call.receiver)
                .is_some_and(|(base, _)| !self.lowerer.is_literal(base))
        {
            return;
        }
        if let Some(var) = self.local(&call.receiver) {
            let name = call.method.to_string();
            if self.lowerer.vars[var].mutable && !READ_ONLY.contains(&name.as_str()) {
                self.reject(
                    call.span(),
                    &format!("the method `{name}` of a `mut` local variable is not on the compiled path yet"),
                );
            }
        }
        syn::visit::visit_expr_method_call(self, call);
    }

    fn visit_expr_closure(&mut self, closure: &'ast syn::ExprClosure) {
        if self.mentions_local(&closure.body) {
            self.reject(
                closure.span(),
                "closures that use local variables are not on the compiled path yet",
            );
        }
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.scan_tokens(&mac.tokens);
    }

    // Nested items cannot see locals.
    fn visit_item(&mut self, _: &'ast syn::Item) {}
}
