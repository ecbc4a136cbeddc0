//! Closures defined in the body: never emitted as closures, but inlined
//! where they are called, their body lowered in the scope of their
//! definition with the parameters bound to the arguments. (A closure used
//! any other way, passed on or stored, is outside the compiled subset.)

use std::collections::HashMap;

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::Expr as SynExpr;

use super::stmts::strip;
use super::{Lowered, Lowerer, Unsupported};
use crate::ir::{Expr, ExprKind, Origin, StmtKind, Var, VarId, VarKind};

/// A closure of the body: what inlining it needs.
#[derive(Clone)]
pub(super) struct ClosureDef {
    pub params: Vec<syn::Pat>,
    pub body: SynExpr,
    /// The names in scope where it was defined.
    pub scopes: Vec<Vec<(String, VarId)>>,
}

/// What a closure's parameter receives.
pub(super) enum Bound {
    /// A value (lowered, evaluated once).
    Value(Expr),
    /// A reference to an element or a value (`|v| *v > 0.0` in `filter`):
    /// bound like a value, and `*v` reads it.
    Ref(Expr),
    /// A tuple (of an `enumerate` or `zip` item).
    Tuple(Vec<Bound>),
    /// A buffer passed to a closure taking a slice.
    Buffer(VarId),
}

impl Lowerer {
    /// Registers `let name = |..| body;`.
    pub(super) fn define_closure(
        &mut self,
        name: &syn::Ident,
        closure: &syn::ExprClosure,
    ) -> Lowered<()> {
        check_body(&closure.body)?;
        let var = self.new_var(Var {
            name: name.clone(),
            mutable: false,
            origin: Origin::Local,
            kind: VarKind::Closure,
            array: false,
            annotation: None,
            span: name.span(),
        });
        self.closures.insert(
            var,
            ClosureDef {
                params: closure.inputs.iter().cloned().collect(),
                body: (*closure.body).clone(),
                scopes: self.scopes.clone(),
            },
        );
        self.bind(name, var);
        Ok(())
    }

    /// The closure `callee` names, if it is a closure variable.
    pub(super) fn closure_named(&self, callee: &SynExpr) -> Option<ClosureDef> {
        let SynExpr::Path(path) = strip(callee) else {
            return None;
        };
        let var = self.resolve_path(&path.path)?;
        self.closures.get(&var).cloned()
    }

    /// A closure literal (`|x| x * x`) as a definition in the current scope.
    pub(super) fn closure_literal(&self, expr: &SynExpr) -> Lowered<Option<ClosureDef>> {
        let SynExpr::Closure(closure) = strip(expr) else {
            return Ok(None);
        };
        check_body(&closure.body)?;
        Ok(Some(ClosureDef {
            params: closure.inputs.iter().cloned().collect(),
            body: (*closure.body).clone(),
            scopes: self.scopes.clone(),
        }))
    }

    /// A call of a closure variable: the arguments evaluated in order, then
    /// the body inlined.
    pub(super) fn call_closure(
        &mut self,
        def: &ClosureDef,
        args: &[SynExpr],
        span: Span,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<Expr> {
        if args.len() != def.params.len() {
            return Err(Unsupported::new(
                span,
                "a closure called with the wrong number of arguments",
            ));
        }
        let mut bound = Vec::new();
        for arg in args {
            if let Some(buffer) = self.buffer_ref(arg, out)? {
                if buffer.range.is_some() {
                    return Err(Unsupported::new(
                        arg.span(),
                        "a range of a buffer passed to a closure is not on the compiled path yet",
                    ));
                }
                bound.push(Bound::Buffer(buffer.var));
                continue;
            }
            let value = self.expr(arg, out)?;
            bound.push(Bound::Value(self.frozen(value, arg.span(), out)));
        }
        self.inline(def, bound, span, out)
    }

    /// `value` in a temporary of its own, unless it is already a variable.
    pub(super) fn frozen(
        &mut self,
        value: Expr,
        span: Span,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Expr {
        if matches!(value.kind, ExprKind::Var(_) | ExprKind::Lit(_)) {
            return value;
        }
        let temp = self.temp(span);
        out.push(self.stmt(
            span,
            StmtKind::Let {
                var: temp,
                init: Some(value),
            },
        ));
        Expr::new(ExprKind::Var(temp), span)
    }

    /// The body of `def` with its parameters bound, as a block assigning
    /// its value to a temporary; the temporary's value.
    pub(super) fn inline(
        &mut self,
        def: &ClosureDef,
        bound: Vec<Bound>,
        span: Span,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<Expr> {
        self.check_captures(def, span)?;
        let result = self.temp(span);
        out.push(self.stmt(
            span,
            StmtKind::Let {
                var: result,
                init: None,
            },
        ));
        let saved = std::mem::replace(&mut self.scopes, def.scopes.clone());
        let lowered = self.with_scope(|this| {
            let mut block = this.new_block();
            for (pat, value) in def.params.iter().zip(bound) {
                this.bind_param(pat, value, &mut block.stmts)?;
            }
            this.value_into(&def.body, result, &mut block.stmts)?;
            Ok(block)
        });
        self.scopes = saved;
        let block = lowered?;
        out.push(self.stmt(span, StmtKind::Block(block)));
        Ok(Expr::new(ExprKind::Var(result), span))
    }

    /// Binds a closure parameter's pattern to what it receives.
    fn bind_param(
        &mut self,
        pat: &syn::Pat,
        value: Bound,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        let unsupported = |pat: &syn::Pat| {
            Unsupported::new(
                pat.span(),
                "this closure parameter pattern is not on the compiled path yet",
            )
        };
        let (pat, annotation) = match pat {
            syn::Pat::Type(typed) => (&*typed.pat, Some((*typed.ty).clone())),
            other => (other, None),
        };
        match (pat, value) {
            (syn::Pat::Wild(_), _) => Ok(()),
            (syn::Pat::Ident(ident), Bound::Buffer(buffer))
                if ident.by_ref.is_none() && ident.subpat.is_none() =>
            {
                // The parameter names the argument's buffer itself.
                self.bind(&ident.ident, buffer);
                Ok(())
            }
            (syn::Pat::Ident(ident), value @ (Bound::Value(_) | Bound::Ref(_)))
                if ident.by_ref.is_none() && ident.subpat.is_none() =>
            {
                let by_ref = matches!(value, Bound::Ref(_));
                let (Bound::Value(expr) | Bound::Ref(expr)) = value else {
                    unreachable!("matched above")
                };
                let annotation = annotation.filter(|ty| !matches!(ty, syn::Type::Reference(_)));
                let var = self.new_var(Var {
                    name: ident.ident.clone(),
                    mutable: ident.mutability.is_some(),
                    origin: Origin::Local,
                    kind: VarKind::Scalar,
                    array: false,
                    annotation,
                    span: ident.ident.span(),
                });
                let span = ident.ident.span();
                out.push(self.stmt(
                    span,
                    StmtKind::Let {
                        var,
                        init: Some(expr),
                    },
                ));
                if by_ref {
                    self.by_ref.insert(var);
                }
                self.bind(&ident.ident, var);
                Ok(())
            }
            (syn::Pat::Reference(reference), Bound::Ref(expr) | Bound::Value(expr))
                if reference.mutability.is_none() =>
            {
                self.bind_param(&reference.pat, Bound::Value(expr), out)
            }
            (syn::Pat::Reference(reference), Bound::Tuple(parts))
                if reference.mutability.is_none() =>
            {
                self.bind_param(&reference.pat, Bound::Tuple(parts), out)
            }
            (syn::Pat::Tuple(tuple), Bound::Tuple(parts)) if tuple.elems.len() == parts.len() => {
                for (pat, part) in tuple.elems.iter().zip(parts) {
                    self.bind_param(pat, part, out)?;
                }
                Ok(())
            }
            (syn::Pat::Paren(paren), value) => self.bind_param(&paren.pat, value, out),
            (other, _) => Err(unsupported(other)),
        }
    }

    /// The names a closure's body takes from its surroundings must mean
    /// at the call what they meant at the definition: the inlined body
    /// names them.
    fn check_captures(&self, def: &ClosureDef, span: Span) -> Lowered<()> {
        struct Names(Vec<syn::Ident>);
        impl<'ast> Visit<'ast> for Names {
            fn visit_expr_path(&mut self, path: &'ast syn::ExprPath) {
                if let Some(ident) = path.path.get_ident() {
                    self.0.push(ident.clone());
                }
            }
            fn visit_macro(&mut self, mac: &'ast syn::Macro) {
                for token in mac.tokens.clone() {
                    if let proc_macro2::TokenTree::Ident(ident) = token {
                        self.0.push(ident);
                    }
                }
            }
        }
        let mut names = Names(Vec::new());
        names.visit_expr(&def.body);
        let resolve = |scopes: &[Vec<(String, VarId)>], name: &str| {
            scopes
                .iter()
                .rev()
                .flat_map(|scope| scope.iter().rev())
                .find(|(n, _)| n == name)
                .map(|(_, var)| *var)
        };
        for ident in names.0 {
            let key = syn::ext::IdentExt::unraw(&ident).to_string();
            let Some(captured) = resolve(&def.scopes, &key) else {
                continue;
            };
            if resolve(&self.scopes, &key) != Some(captured) {
                return Err(Unsupported::new(
                    span,
                    format!("this closure uses `{key}`, which a later `let` hides where the closure is called: not on the compiled path yet"),
                ));
            }
        }
        Ok(())
    }
}

/// A closure body deltad can inline: no `return` or `?` (which would leave
/// the closure, not the function).
fn check_body(body: &SynExpr) -> Lowered<()> {
    struct Check(Option<Span>);
    impl<'ast> Visit<'ast> for Check {
        fn visit_expr_return(&mut self, expr: &'ast syn::ExprReturn) {
            self.0.get_or_insert(expr.span());
        }
        fn visit_expr_try(&mut self, expr: &'ast syn::ExprTry) {
            self.0.get_or_insert(expr.span());
        }
        fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    let mut check = Check(None);
    check.visit_expr(body);
    match check.0 {
        Some(span) => Err(Unsupported::new(
            span,
            "`return` and `?` in a closure are not on the compiled path yet",
        )),
        None => Ok(()),
    }
}

/// Closures of the body, by their variable.
pub(super) type Closures = HashMap<VarId, ClosureDef>;
