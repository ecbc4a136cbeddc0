//! Loops: `for` over a range or over a buffer's elements (as a range of
//! indices), `while`, `loop`.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::Expr as SynExpr;

use super::stmts::strip;
use super::{Lowered, Lowerer, Unsupported};
use crate::ir::{Expr, ExprKind, Math, Origin, RangeIter, StmtKind, Var, VarId, VarKind};

/// How a `for` loop walks: a range, or buffers' elements.
enum Walk {
    Range(Box<RangeIter>),
    /// The elements of `buffers` (zipped), optionally with their index
    /// (`enumerate`).
    Elements {
        buffers: Vec<Walked>,
        enumerate: bool,
        reversed: bool,
    },
}

/// A buffer whose elements a loop or an iterator chain walks: a buffer
/// variable, or a buffer field of a parameter of a user type (`p.w`: the
/// parameter and members).
#[derive(Clone)]
pub(super) enum Walked {
    Buffer(VarId),
    Field(VarId, Vec<syn::Member>),
}

impl Walked {
    /// The number of elements.
    pub(super) fn len(&self, lowerer: &Lowerer, span: Span) -> Expr {
        match self {
            Walked::Buffer(buffer) => Expr::new(ExprKind::Len(*buffer), span),
            // Plain, whatever the field holds (its twin has its length).
            Walked::Field(base, members) => {
                let base = &lowerer.vars[*base].name;
                Expr::new(
                    ExprKind::Opaque {
                        expr: Box::new(syn::parse_quote!(#base #(.#members)*.len())),
                        reads: Vec::new(),
                    },
                    span,
                )
            }
        }
    }

    /// The number of elements of zipped buffers: the shortest one's.
    pub(super) fn shortest(walked: &[Walked], lowerer: &Lowerer, span: Span) -> Expr {
        let mut end = walked[0].len(lowerer, span);
        for other in &walked[1..] {
            end = Expr::new(
                ExprKind::Math {
                    math: Math::named("min").expect("min is math"),
                    args: vec![end, other.len(lowerer, span)],
                    path_style: None,
                },
                span,
            );
        }
        end
    }

    /// Element `index` (an `ExprKind::Field` read for a field: only as the
    /// value of a `let`).
    pub(super) fn element(&self, index: Expr) -> ExprKind {
        match self {
            Walked::Buffer(buffer) => ExprKind::Elem(*buffer, Box::new(index)),
            Walked::Field(base, members) => ExprKind::Field {
                base: *base,
                index: None,
                members: members.clone(),
                elem: Some(Box::new(index)),
            },
        }
    }

    /// The buffer or field `expr` names (`v`, `&v`, `p.w`, `&p.w`).
    pub(super) fn named(lowerer: &Lowerer, expr: &SynExpr) -> Option<Walked> {
        let expr = match strip(expr) {
            SynExpr::Reference(reference) if reference.mutability.is_none() => {
                strip(&reference.expr)
            }
            other => other,
        };
        if let Some((base, members)) = lowerer.param_field_chain(expr) {
            return Some(Walked::Field(base, members));
        }
        let SynExpr::Path(path) = expr else {
            return None;
        };
        let var = lowerer.resolve_path(&path.path)?;
        matches!(lowerer.kind(var), VarKind::Buffer | VarKind::Structs)
            .then_some(Walked::Buffer(var))
    }
}

impl Lowerer {
    pub(super) fn for_loop(
        &mut self,
        for_loop: &syn::ExprForLoop,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        let span = for_loop.span();
        let checkpoint = crate::syntax::is_checkpointed(&for_loop.attrs);
        let walk = self.walk(&for_loop.expr, out)?;
        let id = self.enter_loop(for_loop.label.as_ref(), None);
        self.loops[id].checkpoint = checkpoint;
        let result = self.with_scope(|this| match walk {
            Walk::Range(range) => {
                let var = match &*for_loop.pat {
                    syn::Pat::Wild(_) => None,
                    syn::Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => {
                        let var = this.new_var(Var {
                            name: pat.ident.clone(),
                            mutable: false,
                            origin: Origin::LoopIndex,
                            kind: VarKind::Scalar,
                            array: false,
                            annotation: None,
                            span: pat.ident.span(),
                        });
                        if pat.mutability.is_some() {
                            return Err(Unsupported::new(
                                pat.span(),
                                "a `mut` loop variable is not on the compiled path yet",
                            ));
                        }
                        this.bind(&pat.ident, var);
                        Some(var)
                    }
                    other => {
                        return Err(Unsupported::new(
                            other.span(),
                            "this loop pattern is not on the compiled path yet",
                        ))
                    }
                };
                // (A loop building a `Vec` by pushing needs its index.)
                let var = match var {
                    None if this.builds(for_loop) => Some(this.loop_index(id, span)),
                    var => var,
                };
                if let Some(index) = var {
                    this.start_pushes(for_loop, index, range.start.int_literal());
                }
                let body = this.block_into(&for_loop.body, None)?;
                Ok(StmtKind::For {
                    id,
                    var,
                    range: *range,
                    body,
                })
            }
            Walk::Elements {
                buffers,
                enumerate,
                reversed,
            } => this.element_loop(id, for_loop, &buffers, enumerate, reversed),
        });
        self.exit_loop();
        let kind = result?;
        if let StmtKind::For { range, .. } = &kind {
            self.end_pushes(for_loop, range, out)?;
        }
        out.push(self.stmt(span, kind));
        Ok(())
    }

    /// A loop over the elements of buffers, as a loop over indices whose
    /// body first binds the pattern to the elements.
    fn element_loop(
        &mut self,
        id: crate::ir::LoopId,
        for_loop: &syn::ExprForLoop,
        buffers: &[Walked],
        enumerate: bool,
        reversed: bool,
    ) -> Lowered<StmtKind> {
        let span = for_loop.span();
        let index = self.loop_index(id, span);
        // (Elements are walked from the first.)
        self.start_pushes(for_loop, index, Some(0));
        let unsupported = |pat: &syn::Pat| {
            Unsupported::new(
                pat.span(),
                "this loop pattern is not on the compiled path yet: bind names (`x`, `&x`, `(i, x)`, `(a, b)`)",
            )
        };
        // The pattern's parts: (index part?, element parts).
        let (index_pat, element_pats): (Option<&syn::Pat>, Vec<&syn::Pat>) = {
            let parts: Vec<&syn::Pat> = match &*for_loop.pat {
                syn::Pat::Tuple(tuple) => tuple.elems.iter().collect(),
                other => vec![other],
            };
            match (enumerate, buffers.len()) {
                (false, 1) => (None, vec![&*for_loop.pat]),
                (false, n) if parts.len() == n => (None, parts),
                (true, 1) if parts.len() == 2 => (Some(parts[0]), vec![parts[1]]),
                (true, n) if parts.len() == 2 => {
                    let syn::Pat::Tuple(inner) = parts[1] else {
                        return Err(unsupported(&for_loop.pat));
                    };
                    if inner.elems.len() != n {
                        return Err(unsupported(&for_loop.pat));
                    }
                    (Some(parts[0]), inner.elems.iter().collect())
                }
                _ => return Err(unsupported(&for_loop.pat)),
            }
        };
        let mut lets = Vec::new();
        let mut elements = Vec::new();
        let index_expr = || Expr::new(ExprKind::Var(index), span);
        if let Some(pat) = index_pat {
            if let Some((name, _)) = self
                .pattern_name(pat, false)
                .ok_or_else(|| unsupported(pat))?
            {
                let var = self.new_var(Var {
                    name: name.clone(),
                    mutable: false,
                    origin: Origin::Local,
                    kind: VarKind::Scalar,
                    array: false,
                    annotation: None,
                    span: name.span(),
                });
                lets.push((name, var, index_expr()));
            }
        }
        for (pat, walked) in element_pats.iter().zip(buffers) {
            let Some(named) = self.pattern_name(pat, true) else {
                return Err(unsupported(pat));
            };
            let Some((name, by_value)) = named else {
                continue;
            };
            // An element of a buffer of a user type: a name for it, read by
            // its fields.
            if let Walked::Buffer(buffer) = walked {
                if self.kind(*buffer) == VarKind::Structs {
                    elements.push((name, *buffer));
                    continue;
                }
            }
            // (Of a buffer field: read like `p.w[i]`.)
            let elem = walked.element(index_expr());
            let var = self.new_var(Var {
                name: name.clone(),
                mutable: false,
                origin: Origin::Local,
                kind: VarKind::Scalar,
                array: false,
                annotation: None,
                span: name.span(),
            });
            if !by_value {
                self.by_ref.insert(var);
            }
            let span = name.span();
            lets.push((name, var, Expr::new(elem, span)));
        }
        for (name, buffer) in elements {
            self.bind_element(&name, buffer, index);
        }
        let mut stmts = Vec::new();
        for (name, var, init) in lets {
            stmts.push(self.stmt(
                name.span(),
                StmtKind::Let {
                    var,
                    init: Some(init),
                },
            ));
            self.bind(&name, var);
        }
        let mut body = self.block_into(&for_loop.body, None)?;
        stmts.append(&mut body.stmts);
        body.stmts = stmts;
        // The number of elements: the shortest buffer's length.
        let end = Walked::shortest(buffers, self, span);
        let zero: syn::LitInt = syn::parse_quote!(0usize);
        Ok(StmtKind::For {
            id,
            var: Some(index),
            range: RangeIter {
                start: Expr::new(ExprKind::Lit(syn::Lit::Int(zero)), span),
                end,
                inclusive: false,
                reversed,
            },
            body,
        })
    }

    /// A generated index variable for loop `id`.
    pub(super) fn loop_index(&mut self, id: crate::ir::LoopId, span: Span) -> VarId {
        let name = quote::format_ident!("__deltad_index{}", id, span = Span::mixed_site());
        self.new_var(Var {
            name,
            mutable: false,
            origin: Origin::LoopIndex,
            kind: VarKind::Scalar,
            array: false,
            annotation: None,
            span,
        })
    }

    /// The name a loop pattern binds: `x` (a reference to the element,
    /// when `element`), `&x` (the value), `_` (nothing). `None` for other
    /// patterns.
    #[allow(clippy::option_option)]
    fn pattern_name(&self, pat: &syn::Pat, element: bool) -> Option<Option<(syn::Ident, bool)>> {
        match pat {
            syn::Pat::Wild(_) => Some(None),
            syn::Pat::Ident(ident)
                if ident.by_ref.is_none()
                    && ident.subpat.is_none()
                    && ident.mutability.is_none() =>
            {
                Some(Some((ident.ident.clone(), !element)))
            }
            syn::Pat::Reference(reference) if element && reference.mutability.is_none() => {
                match &*reference.pat {
                    syn::Pat::Ident(ident)
                        if ident.by_ref.is_none()
                            && ident.subpat.is_none()
                            && ident.mutability.is_none() =>
                    {
                        Some(Some((ident.ident.clone(), true)))
                    }
                    syn::Pat::Wild(_) => Some(None),
                    _ => None,
                }
            }
            syn::Pat::Paren(paren) => self.pattern_name(&paren.pat, element),
            _ => None,
        }
    }

    /// What a `for` loop iterates over.
    fn walk(&mut self, iter: &SynExpr, out: &mut Vec<crate::ir::Stmt>) -> Lowered<Walk> {
        let unsupported = || {
            Unsupported::new(
                iter.span(),
                "this loop is not on the compiled path yet: loop over a range (`a..b`, `(a..b).rev()`) or a buffer's elements (`v.iter()`, `.enumerate()`, `.zip(..)`)",
            )
        };
        match strip(iter) {
            SynExpr::Range(range) => {
                let (Some(start), Some(end)) = (&range.start, &range.end) else {
                    return Err(unsupported());
                };
                let mut hoisted = Vec::new();
                let start = self.expr(start, &mut hoisted)?;
                let end = self.expr(end, &mut hoisted)?;
                out.append(&mut hoisted);
                Ok(Walk::Range(Box::new(RangeIter {
                    start,
                    end,
                    inclusive: matches!(range.limits, syn::RangeLimits::Closed(_)),
                    reversed: false,
                })))
            }
            SynExpr::MethodCall(call) if call.args.is_empty() => {
                let name = call.method.to_string();
                match name.as_str() {
                    "rev" => match self.walk(&call.receiver, out)? {
                        Walk::Range(mut range) if !range.reversed => {
                            range.reversed = true;
                            Ok(Walk::Range(range))
                        }
                        Walk::Elements {
                            buffers,
                            enumerate,
                            reversed: false,
                        } => Ok(Walk::Elements {
                            buffers,
                            enumerate,
                            reversed: true,
                        }),
                        _ => Err(unsupported()),
                    },
                    "iter" | "copied" | "cloned" | "into_iter" => {
                        match self.walk(&call.receiver, out) {
                            Ok(walk @ Walk::Elements { .. }) => Ok(walk),
                            _ => self.buffer_walk(&call.receiver).ok_or_else(unsupported),
                        }
                    }
                    "enumerate" => match self.walk(&call.receiver, out)? {
                        Walk::Elements {
                            buffers,
                            enumerate: false,
                            reversed: false,
                        } => Ok(Walk::Elements {
                            buffers,
                            enumerate: true,
                            reversed: false,
                        }),
                        _ => Err(unsupported()),
                    },
                    _ => Err(unsupported()),
                }
            }
            SynExpr::MethodCall(call) if call.method == "zip" && call.args.len() == 1 => {
                let Walk::Elements {
                    mut buffers,
                    enumerate: false,
                    reversed: false,
                } = self.walk(&call.receiver, out)?
                else {
                    return Err(unsupported());
                };
                let other = match self.walk(&call.args[0], out) {
                    Ok(Walk::Elements {
                        buffers: other,
                        enumerate: false,
                        reversed: false,
                    }) if other.len() == 1 => other[0].clone(),
                    _ => return Err(unsupported()),
                };
                buffers.push(other);
                Ok(Walk::Elements {
                    buffers,
                    enumerate: false,
                    reversed: false,
                })
            }
            other => self.buffer_walk(other).ok_or_else(unsupported),
        }
    }

    /// `v` or `&v` for a buffer `v`: its elements.
    fn buffer_walk(&self, expr: &SynExpr) -> Option<Walk> {
        Walked::named(self, expr).map(|walked| Walk::Elements {
            buffers: vec![walked],
            enumerate: false,
            reversed: false,
        })
    }

    pub(super) fn while_loop(
        &mut self,
        while_loop: &syn::ExprWhile,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        let span = while_loop.span();
        if let SynExpr::Let(_) = &*while_loop.cond {
            return Err(Unsupported::new(
                while_loop.cond.span(),
                "`while let` is not on the compiled path yet",
            ));
        }
        let mut hoisted = Vec::new();
        let cond = self.condition(&while_loop.cond, &mut hoisted)?;
        if !hoisted.is_empty() || cond.has_call() {
            return Err(Unsupported::new(
                while_loop.cond.span(),
                "calls and control flow in a `while` condition are not on the compiled path yet",
            ));
        }
        let id = self.enter_loop(while_loop.label.as_ref(), None);
        let body = self.block_into(&while_loop.body, None);
        self.exit_loop();
        let body = body?;
        out.push(self.stmt(span, StmtKind::While { id, cond, body }));
        Ok(())
    }

    pub(super) fn loop_stmt(
        &mut self,
        loop_expr: &syn::ExprLoop,
        target: Option<VarId>,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        let span = loop_expr.span();
        let id = self.enter_loop(loop_expr.label.as_ref(), target);
        let body = self.block_into(&loop_expr.body, None);
        self.exit_loop();
        let body = body?;
        out.push(self.stmt(span, StmtKind::Loop { id, body }));
        Ok(())
    }
}
