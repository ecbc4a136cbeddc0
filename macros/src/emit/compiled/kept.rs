//! Kept partials and values (`analyze/keep.rs`) in the emitted passes:
//! the forward pass evaluates each kept math node through its rule before
//! the value that contains it, pushes its partials (of `max`/`min`: which
//! operand was returned, as a decision) and its value where the adjoint
//! reads it, and uses the value; the adjoint pops them (in reverse) into
//! locals its expression adjoint uses instead of calling the rule again.

use std::collections::HashMap;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

use super::reserve::Pushes;
use super::values::Side;
use super::Passes;
use crate::analyze::keep::kept_partials;
use crate::ir::math::Rule;
use crate::ir::{AssignOp, Expr, ExprKind, VarId};

/// The locals the adjoint pops what was kept into, per math node (by
/// address): its partials, and its value if that was kept too.
pub(crate) type KeptPartials = HashMap<*const Expr, (Vec<syn::Ident>, Option<syn::Ident>)>;

impl Passes<'_> {
    /// The forward value of `value` (of a statement whose adjoint runs) as a
    /// scalar of the pass when `scalar`: the statements evaluating its kept
    /// math nodes and pushing what is kept (partials, then the value), and
    /// the value using them.
    pub(crate) fn value_keeping(&self, value: &Expr, scalar: bool) -> (TokenStream, TokenStream) {
        let kept = kept_partials(value, &self.analysis.active);
        if kept.is_empty() {
            let value = if scalar {
                self.scalar_value(value, Side::Forward)
            } else {
                self.value(value, Side::Forward)
            };
            return (TokenStream::new(), value);
        }
        let mut locals: HashMap<*const Expr, syn::Ident> = HashMap::new();
        let mut before = Vec::new();
        for kept in &kept {
            let ExprKind::Math { math, args, .. } = &kept.node.kind else {
                continue;
            };
            let values: Vec<TokenStream> = args
                .iter()
                .enumerate()
                .map(|(i, arg)| {
                    if math.real_arg(i) {
                        self.scalar_with(arg, &mut |e| self.value_with_locals(e, &locals))
                    } else {
                        self.value_with_locals(arg, &locals)
                    }
                })
                .collect();
            let local = self.fresh_kept("value");
            let partials: Vec<syn::Ident> = (0..real_arity(math, args.len()))
                .map(|_| self.fresh_kept("partial"))
                .collect();
            let name = syn::Ident::new(math.name, Span::call_site());
            let module = match math.rule {
                Rule::Unary => quote!(unary_rules),
                _ => quote!(multi_rules),
            };
            let pushes: Vec<TokenStream> = if kept.choice {
                // The first operand's partial is 1 exactly when it was
                // returned.
                let first = &partials[0];
                vec![self.push_flag(quote!(!::deltad::__private::Scalar::is_zero(&#first)))]
            } else {
                partials
                    .iter()
                    .map(|p| self.push_real(quote!(#p)))
                    .collect()
            };
            let value_push = kept.value.then(|| self.push_real(quote!(#local)));
            before.push(quote! {
                let (#local, #(#partials),*) = ::deltad::__private::#module::#name(#(#values),*);
                #(#pushes)*
                #value_push
            });
            locals.insert(kept.node as *const Expr, local);
        }
        let value = if scalar {
            self.scalar_with(value, &mut |e| self.value_with_locals(e, &locals))
        } else {
            self.value_with_locals(value, &locals)
        };
        (quote!(#(#before)*), value)
    }

    /// The value of `expr` with the nodes in `locals` replaced by them.
    fn value_with_locals(
        &self,
        expr: &Expr,
        locals: &HashMap<*const Expr, syn::Ident>,
    ) -> TokenStream {
        if let Some(local) = locals.get(&(expr as *const Expr)) {
            return quote!(#local);
        }
        self.value_with(expr, Side::Forward, &mut |e| {
            self.value_with_locals(e, locals)
        })
    }

    /// The adjoint's pops of what was kept for `value` (last pushed
    /// first), and the locals they go to.
    pub(crate) fn pop_kept(&self, value: &Expr) -> (TokenStream, KeptPartials) {
        let kept = kept_partials(value, &self.analysis.active);
        let mut map = KeptPartials::new();
        let mut pops = Vec::new();
        let s = &self.scalar;
        let stack = super::names::stack();
        for kept in kept.iter().rev() {
            let ExprKind::Math { math, args, .. } = &kept.node.kind else {
                continue;
            };
            let value = kept.value.then(|| {
                let local = self.fresh_kept("value");
                pops.push(quote!(let #local: #s = #stack.pop_real();));
                local
            });
            let partials: Vec<syn::Ident> = (0..real_arity(math, args.len()))
                .map(|_| self.fresh_kept("partial"))
                .collect();
            if kept.choice {
                let (first, second) = (&partials[0], &partials[1]);
                let (one, zero) = (
                    quote!(<#s as ::deltad::__private::Scalar>::one()),
                    quote!(<#s as ::deltad::__private::Scalar>::zero()),
                );
                pops.push(quote! {
                    let (#first, #second): (#s, #s) = if #stack.pop_flag() {
                        (#one, #zero)
                    } else {
                        (#zero, #one)
                    };
                });
            } else {
                for partial in partials.iter().rev() {
                    pops.push(quote!(let #partial: #s = #stack.pop_real();));
                }
            }
            map.insert(kept.node as *const Expr, (partials, value));
        }
        (quote!(#(#pops)*), map)
    }

    /// True if `let var = init;` keeps the partials of `init`'s expensive
    /// methods: a value whose adjoint runs, computed by an expression (not
    /// a call, a new buffer or a whole buffer). The forward pass and the
    /// room reserved for a loop's pushes both ask this.
    pub(crate) fn let_keeps(&self, var: VarId, init: &Expr) -> bool {
        self.useful(var)
            && !matches!(init.kind, ExprKind::Call(_) | ExprKind::NewBuffer(_))
            && !(self.is_buffer(var) && matches!(init.kind, ExprKind::Var(_)))
    }

    /// True if an assignment `var op= value;` keeps the partials of
    /// `value`'s expensive methods (the forward pass and `reserve.rs`).
    pub(crate) fn assign_keeps(&self, var: VarId, op: AssignOp) -> bool {
        self.useful(var) && matches!(op, AssignOp::Set | AssignOp::Add | AssignOp::Sub)
    }

    /// What the forward pass keeps for `value`.
    pub(crate) fn kept_pushes(&self, value: &Expr) -> Pushes {
        let mut pushes = Pushes::default();
        for kept in kept_partials(value, &self.analysis.active) {
            if let ExprKind::Math { math, args, .. } = &kept.node.kind {
                if kept.choice {
                    pushes.flags += 1;
                } else {
                    pushes.reals += real_arity(math, args.len());
                }
                pushes.reals += usize::from(kept.value);
            }
        }
        pushes
    }

    fn fresh_kept(&self, what: &str) -> syn::Ident {
        let n = self.next_local.get();
        self.next_local.set(n + 1);
        format_ident!("__deltad_kept_{}{}", what, n, span = Span::mixed_site())
    }
}

/// How many real operands (partials) the math method has.
fn real_arity(math: &crate::ir::Math, args: usize) -> usize {
    (0..args).filter(|&i| math.real_arg(i)).count()
}
