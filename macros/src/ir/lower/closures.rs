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
use super::{resolve_in, Lowered, Lowerer, Unsupported};
use crate::ir::{Expr, ExprKind, Origin, StmtKind, Var, VarId, VarKind};

/// A closure of the body: what inlining it needs.
#[derive(Clone)]
pub(super) struct ClosureDef {
    pub params: Vec<syn::Pat>,
    pub body: SynExpr,
    /// The names in scope where it was defined.
    pub scopes: Vec<Vec<(String, VarId)>>,
    /// Copies of variables it reads made where a later `let` hides their
    /// names (the emitted code names variables, so the inlined body reads
    /// the copy while that `let`'s variable is the name's meaning).
    pub aliases: Vec<Alias>,
    /// For a `move` closure: the copies of the scalars it captures, made at
    /// its definition, which it reads instead of the variables.
    pub held: Vec<(String, VarId)>,
}

/// A copy of a variable a closure reads, made before a `let` hides it.
#[derive(Clone)]
pub(super) struct Alias {
    pub name: String,
    pub copy: VarId,
    /// The variable of the hiding `let` (set once it exists).
    pub hidden_by: Option<VarId>,
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
    /// Registers `let name = |..| body;`. A `move` closure holds copies of
    /// the scalars it captures, made here: it reads them as they are now,
    /// whatever the variables become before it is called.
    pub(super) fn define_closure(
        &mut self,
        name: &syn::Ident,
        closure: &syn::ExprClosure,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        check_body(&closure.body)?;
        let mut held: Vec<(String, VarId)> = Vec::new();
        if closure.capture.is_some() {
            let own = own_names(closure);
            for key in names_in(&closure.body) {
                if own.contains(&key) || held.iter().any(|(k, _)| *k == key) {
                    continue;
                }
                let Some(var) = resolve_in(&self.scopes, &key) else {
                    continue;
                };
                if self.vars[var].kind != VarKind::Scalar {
                    continue;
                }
                if assigns(&closure.body, &key) {
                    return Err(Unsupported::new(
                        closure.span(),
                        format!("a `move` closure assigning `{key}`, which it captures, is not on the compiled path yet"),
                    ));
                }
                let copy = self.copy_for_closures(&key, var, name.span(), out);
                held.push((key, copy));
            }
        }
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
                aliases: Vec::new(),
                held,
            },
        );
        self.bind(name, var);
        Ok(())
    }

    /// `let copy = var;` (a variable of its own, whose name is unique in
    /// the emitted code), for closures to read instead of `var`.
    fn copy_for_closures(
        &mut self,
        key: &str,
        var: VarId,
        span: Span,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> VarId {
        let name = quote::format_ident!(
            "__deltad_captured_{}_{}",
            key,
            self.vars.len(),
            span = Span::mixed_site()
        );
        let copy = self.new_var(Var {
            name,
            mutable: false,
            origin: Origin::Temp,
            kind: VarKind::Scalar,
            array: false,
            annotation: self.vars[var].annotation.clone(),
            span,
        });
        out.push(self.stmt(
            span,
            StmtKind::Let {
                var: copy,
                init: Some(Expr::new(ExprKind::Var(var), span)),
            },
        ));
        copy
    }

    /// Before `let name = ..` hides a scalar variable that a closure defined
    /// earlier reads (and does not assign): a copy of it, which calls of the
    /// closure made while the new variable is in scope read instead. The
    /// closures given copies, to be told the hiding variable.
    pub(super) fn alias_hidden_captures(
        &mut self,
        name: &syn::Ident,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Vec<VarId> {
        let Some(hidden) = self.resolve(name) else {
            return Vec::new();
        };
        if self.vars[hidden].kind != VarKind::Scalar {
            return Vec::new();
        }
        let key = syn::ext::IdentExt::unraw(name).to_string();
        let capturing: Vec<(VarId, &ClosureDef)> = self
            .closures
            .iter()
            .filter(|(_, def)| {
                resolve_in(&def.scopes, &key) == Some(hidden)
                    && names_in(&def.body).iter().any(|n| n == &key)
                    && !def.held.iter().any(|(name, _)| *name == key)
            })
            .map(|(&closure, def)| (closure, def))
            .collect();
        // (A closure that assigns it must change the variable itself.)
        if capturing.iter().any(|(_, def)| assigns(&def.body, &key)) {
            return Vec::new();
        }
        let mut readers: Vec<VarId> = capturing.iter().map(|(closure, _)| *closure).collect();
        readers.sort_unstable();
        if readers.is_empty() {
            return readers;
        }
        let copy = self.copy_for_closures(&key, hidden, name.span(), out);
        for closure in &readers {
            if let Some(def) = self.closures.get_mut(closure) {
                def.aliases.push(Alias {
                    name: key.clone(),
                    copy,
                    hidden_by: None,
                });
            }
        }
        readers
    }

    /// Tells the closures `readers` which variable hides the name they
    /// were given a copy of last.
    pub(super) fn aliases_hidden_by(&mut self, readers: &[VarId], hidden_by: VarId) {
        for closure in readers {
            if let Some(alias) = self
                .closures
                .get_mut(closure)
                .and_then(|def| def.aliases.last_mut())
            {
                alias.hidden_by = Some(hidden_by);
            }
        }
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
            aliases: Vec::new(),
            held: Vec::new(),
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
        // Copies of the variables whose names a `let` hides here.
        let copies: Vec<(String, VarId)> = def
            .aliases
            .iter()
            .filter(|alias| {
                alias.hidden_by.is_some()
                    && resolve_in(&self.scopes, &alias.name) == alias.hidden_by
            })
            .map(|alias| (alias.name.clone(), alias.copy))
            .chain(def.held.iter().cloned())
            .collect();
        self.check_captures(def, &copies, span)?;
        let result = self.temp(span);
        out.push(self.stmt(
            span,
            StmtKind::Let {
                var: result,
                init: None,
            },
        ));
        let mut scopes = def.scopes.clone();
        scopes.push(copies);
        let saved = std::mem::replace(&mut self.scopes, scopes);
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
    /// (`copies`: names the inlined body reads through a copy.)
    fn check_captures(
        &self,
        def: &ClosureDef,
        copies: &[(String, VarId)],
        span: Span,
    ) -> Lowered<()> {
        for key in names_in(&def.body) {
            if copies.iter().any(|(name, _)| *name == key) {
                continue;
            }
            let Some(captured) = resolve_in(&def.scopes, &key) else {
                continue;
            };
            if resolve_in(&self.scopes, &key) != Some(captured) {
                return Err(Unsupported::new(
                    span,
                    format!("this closure uses `{key}`, which a later `let` hides where the closure is called: not on the compiled path yet"),
                ));
            }
        }
        Ok(())
    }
}

/// The single names a closure's body mentions (paths and identifiers in
/// macros).
fn names_in(body: &SynExpr) -> Vec<String> {
    struct Names(Vec<String>);
    impl<'ast> Visit<'ast> for Names {
        fn visit_expr_path(&mut self, path: &'ast syn::ExprPath) {
            if let Some(ident) = path.path.get_ident() {
                self.0.push(syn::ext::IdentExt::unraw(ident).to_string());
            }
        }
        fn visit_macro(&mut self, mac: &'ast syn::Macro) {
            for token in mac.tokens.clone() {
                if let proc_macro2::TokenTree::Ident(ident) = token {
                    self.0.push(syn::ext::IdentExt::unraw(&ident).to_string());
                }
            }
        }
    }
    let mut names = Names(Vec::new());
    names.visit_expr(body);
    names.0
}

/// The names a closure binds itself: its parameters' and its `let`s'.
fn own_names(closure: &syn::ExprClosure) -> Vec<String> {
    struct Bound(Vec<String>);
    impl<'ast> Visit<'ast> for Bound {
        fn visit_pat_ident(&mut self, pat: &'ast syn::PatIdent) {
            self.0
                .push(syn::ext::IdentExt::unraw(&pat.ident).to_string());
            syn::visit::visit_pat_ident(self, pat);
        }
    }
    let mut bound = Bound(Vec::new());
    for input in &closure.inputs {
        bound.visit_pat(input);
    }
    bound.visit_expr(&closure.body);
    bound.0
}

/// True if `body` assigns the name `name` (`name = ..`, `name += ..`, ..), or
/// takes it by `&mut`.
fn assigns(body: &SynExpr, name: &str) -> bool {
    struct Assigns<'n>(&'n str, bool);
    impl Assigns<'_> {
        fn names(&self, expr: &SynExpr) -> bool {
            matches!(strip(expr), SynExpr::Path(path)
                if path.path.get_ident().is_some_and(|i| syn::ext::IdentExt::unraw(i) == self.0))
        }
    }
    impl<'ast> Visit<'ast> for Assigns<'_> {
        fn visit_expr_assign(&mut self, assign: &'ast syn::ExprAssign) {
            self.1 |= self.names(&assign.left);
            syn::visit::visit_expr_assign(self, assign);
        }
        fn visit_expr_binary(&mut self, binary: &'ast syn::ExprBinary) {
            self.1 |= crate::syntax::is_compound_assignment(&binary.op) && self.names(&binary.left);
            syn::visit::visit_expr_binary(self, binary);
        }
        fn visit_expr_reference(&mut self, reference: &'ast syn::ExprReference) {
            self.1 |= reference.mutability.is_some() && self.names(&reference.expr);
            syn::visit::visit_expr_reference(self, reference);
        }
        fn visit_macro(&mut self, _: &'ast syn::Macro) {
            // (A macro may assign anything it names.)
            self.1 = true;
        }
    }
    let mut found = Assigns(name, false);
    found.visit_expr(body);
    found.1
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
