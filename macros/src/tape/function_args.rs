//! A function given by name to an element-wise array method (`a.mapv(f)`,
//! `a.mapv_inplace(log_logistic)`, `a.mapv(f64::exp)`) becomes the closure
//! `|v| f(v)` before the analyses run, so that the call inside is
//! differentiated like any call: a `#[differentiate]` function through its
//! recording pass, an `f64` method through its rule. Names bound in the
//! body (closures in `let`s) are left as they are: the analysis follows
//! those itself.

use std::collections::HashSet;

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;
use syn::{Expr, Pat};

/// The array methods that map elements by a function.
const ELEMENT_MAPS: &[&str] = &["mapv", "mapv_into", "mapv_inplace"];

pub(crate) fn wrap_function_arguments(body: &mut syn::Block) {
    let mut bound = BoundNames::default();
    bound.visit_block(body);
    Wrap { bound: bound.names }.visit_block_mut(body);
}

/// Names bound by patterns in the body.
#[derive(Default)]
struct BoundNames {
    names: HashSet<String>,
}

impl<'ast> Visit<'ast> for BoundNames {
    fn visit_pat(&mut self, pat: &'ast Pat) {
        if let Pat::Ident(ident) = pat {
            self.names.insert(ident.ident.to_string());
        }
        syn::visit::visit_pat(self, pat);
    }
}

struct Wrap {
    bound: HashSet<String>,
}

impl VisitMut for Wrap {
    fn visit_expr_method_call_mut(&mut self, call: &mut syn::ExprMethodCall) {
        syn::visit_mut::visit_expr_method_call_mut(self, call);
        if !ELEMENT_MAPS.contains(&call.method.to_string().as_str()) || call.args.len() != 1 {
            return;
        }
        let Some(Expr::Path(function)) = call.args.first() else {
            return;
        };
        let local = function.qself.is_none()
            && function
                .path
                .get_ident()
                .is_some_and(|name| self.bound.contains(&name.to_string()));
        if local {
            return;
        }
        let span = function.span();
        let element = syn::Ident::new("__deltad_element", Span::mixed_site().located_at(span));
        let wrapped: Expr = syn::parse_quote_spanned!(span=> |#element| #function(#element));
        if let Some(arg) = call.args.first_mut() {
            *arg = wrapped;
        }
    }
}
