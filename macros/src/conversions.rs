//! Conversions into the function's float written as casts, so that both
//! engines follow a differentiated value through them: `f64::from(e)` (and
//! `f32::from`) is `(e) as f64`, and `let y: f64 = e.into();` is
//! `let y: f64 = (e) as f64;`. For the numbers these conversions take
//! (`f32`, the integers that fit, the float itself) the cast gives the same
//! value; on the float itself it is the identity, whose derivative is 1.
//! (Generic code's `T::from(e).unwrap()` is written so by `generic.rs`.)

use syn::visit_mut::VisitMut;
use syn::{Expr, ItemFn, Pat, Type};

use crate::methods::is_float_type_name;

/// Rewrites the conversions of `function`'s body (not of nested items).
pub(crate) fn as_casts(function: &mut ItemFn) {
    Casts.visit_block_mut(&mut function.block);
}

struct Casts;

impl VisitMut for Casts {
    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, expr);
        if let Expr::Call(call) = expr {
            let Expr::Path(path) = &*call.func else {
                return;
            };
            let segments = crate::syntax::segment_names(&path.path);
            let float = match segments.as_slice() {
                [float, from] if from == "from" && is_float_type_name(float) => float,
                _ => return,
            };
            // `f64::from(true)` has no cast.
            if call.args.len() != 1
                || matches!(&call.args[0], Expr::Lit(l) if matches!(l.lit, syn::Lit::Bool(_)))
            {
                return;
            }
            let value = &call.args[0];
            let float = syn::Ident::new(float, path.path.segments[0].ident.span());
            *expr = syn::parse_quote_spanned!(call.paren_token.span.join()=> ((#value) as #float));
        }
    }

    fn visit_local_mut(&mut self, local: &mut syn::Local) {
        syn::visit_mut::visit_local_mut(self, local);
        let (Pat::Type(typed), Some(init)) = (&local.pat, &mut local.init) else {
            return;
        };
        let Type::Path(ty) = &*typed.ty else {
            return;
        };
        if !ty
            .path
            .get_ident()
            .is_some_and(|i| is_float_type_name(&i.to_string()))
        {
            return;
        }
        if let Expr::MethodCall(call) = &*init.expr {
            if call.method == "into" && call.args.is_empty() && call.turbofish.is_none() {
                let receiver = &call.receiver;
                *init.expr = syn::parse_quote_spanned!(call.method.span()=> ((#receiver) as #ty));
            }
        }
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}
