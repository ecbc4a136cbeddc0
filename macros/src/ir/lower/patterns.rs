//! `let` with a destructuring pattern (`let [a, b, c] = mesh.triangles[t];`,
//! `let Point { x, y } = p;`) over a plain value: the value goes to a
//! temporary once, and each name the pattern binds is its own plain
//! variable, read out of the temporary by the same pattern.

use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::Expr as SynExpr;

use super::{Lowered, Lowerer, Unsupported};
use crate::ir::{Expr, ExprKind, StmtKind};

impl Lowerer {
    /// Lowers `let pattern = init;` where `init` is a plain value (no reals
    /// of the function in it) and `pattern` binds names by value.
    pub(super) fn let_pattern(
        &mut self,
        pattern: &syn::Pat,
        annotation: Option<syn::Type>,
        init: &SynExpr,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        let unsupported = || {
            Unsupported::new(
                pattern.span(),
                "this pattern in `let` is not on the compiled path yet: bind one name, a tuple of names, or destructure a plain (not differentiated) value",
            )
        };
        let mut bindings = Bindings::default();
        bindings.visit_pat(pattern);
        if bindings.by_reference {
            return Err(unsupported());
        }
        // The temporary holds a reference to the value, and each name
        // takes its part out of `*temp`, a place: as in `let PATTERN =
        // value;`, only the parts the pattern binds are copied, never the
        // whole value moved or cloned.
        let value = self.expr(init, out)?;
        let span = value.span;
        let value = match value.kind {
            ExprKind::Opaque { expr, reads } => Expr::new(
                ExprKind::Opaque {
                    expr: Box::new(syn::parse_quote_spanned!(span=> &(#expr))),
                    reads,
                },
                span,
            ),
            ExprKind::Var(var) if self.plain.contains(&var) => {
                let name = &self.vars[var].name;
                Expr::new(
                    ExprKind::Opaque {
                        expr: Box::new(syn::parse_quote_spanned!(span=> &#name)),
                        reads: vec![var],
                    },
                    span,
                )
            }
            _ => return Err(unsupported()),
        };
        let temp = self.temp(init.span());
        self.plain.insert(temp);
        let annotation = annotation.map(|ty| quote::quote!(: #ty));
        out.push(self.stmt(
            init.span(),
            StmtKind::Let {
                var: temp,
                init: Some(value),
            },
        ));
        let temp_name = self.vars[temp].name.clone();
        for (name, mutable) in bindings.names {
            // `{ let PATTERN = *temp; name }`: the pattern as written, so
            // that rustc checks it against the value's type.
            let read: SynExpr = syn::parse_quote_spanned! {name.span()=>
                {
                    #[allow(unused_variables, unused_mut)]
                    let #pattern #annotation = *#temp_name;
                    #name
                }
            };
            let value = Expr::new(
                ExprKind::Opaque {
                    expr: Box::new(read),
                    reads: vec![temp],
                },
                name.span(),
            );
            let var = self.let_scalar(&name, mutable, value, out);
            if !mutable {
                self.plain.insert(var);
            }
        }
        Ok(())
    }
}

/// The names a pattern binds, and whether any binds by reference.
#[derive(Default)]
struct Bindings {
    names: Vec<(syn::Ident, bool)>,
    by_reference: bool,
}

impl<'ast> Visit<'ast> for Bindings {
    fn visit_pat_ident(&mut self, ident: &'ast syn::PatIdent) {
        if ident.by_ref.is_some() {
            self.by_reference = true;
        }
        self.names
            .push((ident.ident.clone(), ident.mutability.is_some()));
        syn::visit::visit_pat_ident(self, ident);
    }
}
