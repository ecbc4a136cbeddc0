//! `#[differentiate]` on an `impl` block: every method gets a derivative
//! module next to the block, named `<type in snake case>_<method>`
//! (`impl Quaternion { fn rotate(..) }` gives `quaternion_rotate::grad`,
//! `::vjp`, ...). The receiver is the first parameter, `self_`: a
//! differentiated value with a gradient field `self_` unless it is marked
//! `#[no_grad]` (`fn f(#[no_grad] &self, ..)`, constant data). Methods marked
//! `#[no_grad]` are left alone; `#[differentiate(custom = ..)]` on a method
//! gives it a custom derivative.
//!
//! Each method is turned into a free function (`self` becomes `self_`,
//! `Self` the type) and differentiated as one; hidden forwarding methods
//! (see `emit/forward.rs`) let other differentiated code call it.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{format_ident, quote, ToTokens};
use syn::{FnArg, ImplItem, ItemFn, ItemImpl, Type};

use crate::emit::{MethodTarget, Target};
use crate::errors::Errors;
use crate::expand::derivatives;
use crate::options::Options;
use crate::signature::{self, NO_GRAD};

pub(crate) fn expand(block: ItemImpl, errors: &Errors) -> TokenStream {
    let mut cleaned = block.clone();
    if let Some((_, path, _)) = &block.trait_ {
        errors.at(path, "#[differentiate] applies to inherent `impl` blocks (`impl Type { .. }`), not to trait implementations: differentiate a free function and call it from the trait method");
        return finish(errors, &cleaned, Vec::new());
    }
    if !block.generics.params.is_empty() {
        errors.at(
            &block.generics,
            "#[differentiate] does not support generic `impl` blocks yet",
        );
        strip_markers(&mut cleaned, errors);
        return finish(errors, &cleaned, Vec::new());
    }
    let Some(type_name) = type_name(&block.self_ty) else {
        errors.at(
            &block.self_ty,
            "#[differentiate] applies to `impl` blocks of named types",
        );
        return finish(errors, &cleaned, Vec::new());
    };
    let mut modules = Vec::new();
    for item in &block.items {
        let ImplItem::Fn(method) = item else { continue };
        if method.attrs.iter().any(|a| a.path().is_ident(NO_GRAD)) {
            continue;
        }
        let mut options = Options::default();
        for attr in method
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("differentiate"))
        {
            let tokens = match &attr.meta {
                syn::Meta::List(list) => list.tokens.clone(),
                _ => TokenStream::new(),
            };
            options = Options::parse(tokens, errors);
        }
        let Some((function, no_grad, receiver)) = free_function(method, &block.self_ty, errors)
        else {
            continue;
        };
        // Its derivatives are made of its copy for the float, as a free
        // function's.
        let Some((function, _)) =
            crate::generic::derivative_copy(&function, options.float.as_ref(), "method", errors)
        else {
            continue;
        };
        let method_name = &method.sig.ident;
        let module = format_ident!(
            "{}_{}",
            snake_case(&type_name.to_string()),
            syn::ext::IdentExt::unraw(method_name),
            span = method_name.span()
        );
        let mut self_type = (*block.self_ty).clone();
        crate::relocate::type_(&mut self_type);
        let twin = match (&receiver, &self_type) {
            (Receiver::Differentiated, Type::Path(path)) => {
                let mut path = path.path.clone();
                if let Some(last) = path.segments.last_mut() {
                    last.ident = crate::derive::twin_name(&last.ident);
                }
                Some(path)
            }
            _ => None,
        };
        let target = Target {
            function: &function,
            module,
            vis: &method.vis,
            primal: quote!(<#self_type>::#method_name),
            primal_copy: None,
            method: Some(MethodTarget {
                name: method_name.clone(),
                self_type: self_type.clone(),
                twin,
                has_receiver: !matches!(receiver, Receiver::None),
            }),
        };
        let (module, _) = derivatives(&target, &no_grad, &options, errors);
        modules.push(module);
    }
    strip_markers(&mut cleaned, errors);
    finish(errors, &cleaned, modules)
}

fn finish(errors: &Errors, block: &ItemImpl, modules: Vec<TokenStream>) -> TokenStream {
    let errors = errors.to_compile_errors();
    quote! {
        #errors
        #block
        #(#modules)*
    }
}

/// Removes deltad's markers from the emitted block: `#[no_grad]` on
/// parameters and methods, `#[differentiate(..)]` on methods.
fn strip_markers(block: &mut ItemImpl, _errors: &Errors) {
    for item in &mut block.items {
        let ImplItem::Fn(method) = item else { continue };
        crate::syntax::strip_markers(&mut method.block);
        method
            .attrs
            .retain(|a| !a.path().is_ident(NO_GRAD) && !a.path().is_ident("differentiate"));
        for input in &mut method.sig.inputs {
            let attrs = match input {
                FnArg::Receiver(receiver) => &mut receiver.attrs,
                FnArg::Typed(typed) => &mut typed.attrs,
            };
            attrs.retain(|a| !a.path().is_ident(NO_GRAD));
        }
    }
}

/// The last segment of the type's path (`Vec3` for `geo::Vec3`).
fn type_name(ty: &Type) -> Option<syn::Ident> {
    match ty {
        Type::Path(path) if path.qself.is_none() => {
            let last = path.path.segments.last()?;
            last.arguments.is_none().then(|| last.ident.clone())
        }
        _ => None,
    }
}

enum Receiver {
    None,
    Constant,
    Differentiated,
}

/// The method as a free function whose first parameter `self_` is the
/// receiver; also which parameters carry `#[no_grad]`.
fn free_function(
    method: &syn::ImplItemFn,
    self_type: &Type,
    errors: &Errors,
) -> Option<(ItemFn, Vec<bool>, Receiver)> {
    let self_name = syn::Ident::new("self_", Span::call_site());
    let mut sig = method.sig.clone();
    let mut receiver = Receiver::None;
    let mut inputs = syn::punctuated::Punctuated::new();
    for input in std::mem::take(&mut sig.inputs) {
        match input {
            FnArg::Receiver(r) => {
                if r.mutability.is_some() && r.reference.is_some() {
                    errors.at(&r, "deltad cannot differentiate methods taking `&mut self`: return the new value instead");
                    return None;
                }
                if r.colon_token.is_some() {
                    errors.at(&r, "deltad differentiates methods taking `self` or `&self`");
                    return None;
                }
                let constant = r.attrs.iter().any(|a| a.path().is_ident(NO_GRAD));
                receiver = if constant {
                    Receiver::Constant
                } else {
                    Receiver::Differentiated
                };
                let mutability = &r.mutability;
                let ty = match &r.reference {
                    Some((and, lifetime)) => quote!(#and #lifetime #self_type),
                    None => quote!(#self_type),
                };
                let attrs = &r.attrs;
                let pat = if r.reference.is_some() {
                    quote!(#self_name)
                } else {
                    quote!(#mutability #self_name)
                };
                let typed: FnArg = syn::parse_quote!(#(#attrs)* #pat: #ty);
                inputs.push(typed);
            }
            FnArg::Typed(typed) => inputs.push(FnArg::Typed(typed)),
        }
    }
    sig.inputs = inputs;
    let sig_tokens = replace_self(sig.to_token_stream(), self_type, &self_name);
    let block_tokens = replace_self(method.block.to_token_stream(), self_type, &self_name);
    let vis = &method.vis;
    let attrs = method
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg") || a.path().is_ident("allow"));
    let function: ItemFn = match syn::parse2(quote!(#(#attrs)* #vis #sig_tokens #block_tokens)) {
        Ok(function) => function,
        Err(error) => {
            errors.push(error);
            return None;
        }
    };
    let mut function = function;
    let no_grad = signature::strip_no_grad(&mut function);
    Some((function, no_grad, receiver))
}

/// `self` (not followed by `::`) becomes `self_name`, `Self` the type.
fn replace_self(tokens: TokenStream, self_type: &Type, self_name: &syn::Ident) -> TokenStream {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Vec::with_capacity(trees.len());
    for (index, tree) in trees.iter().enumerate() {
        let followed_by_path = matches!(
            (trees.get(index + 1), trees.get(index + 2)),
            (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) if a.as_char() == ':' && b.as_char() == ':'
        );
        match tree {
            TokenTree::Ident(ident) if ident == "self" && !followed_by_path => {
                let mut renamed = self_name.clone();
                renamed.set_span(ident.span());
                out.push(TokenTree::Ident(renamed));
            }
            TokenTree::Ident(ident) if ident == "Self" => {
                let ty = quote!(#self_type);
                out.extend(ty.into_iter().map(|mut t| {
                    t.set_span(ident.span());
                    t
                }));
            }
            TokenTree::Group(group) => {
                let inner = replace_self(group.stream(), self_type, self_name);
                let mut replaced = proc_macro2::Group::new(group.delimiter(), inner);
                replaced.set_span(group.span());
                out.push(TokenTree::Group(replaced));
            }
            other => out.push(other.clone()),
        }
    }
    out.into_iter().collect()
}

/// `Quaternion` → `quaternion`, `BundleAdjustment` → `bundle_adjustment`,
/// `GMMParams` → `gmm_params`.
fn snake_case(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let previous = i.checked_sub(1).map(|p| chars[p]);
            let next = chars.get(i + 1);
            let boundary = match previous {
                Some(p) if p.is_lowercase() || p.is_ascii_digit() => true,
                Some(p) if p.is_uppercase() => next.is_some_and(|n| n.is_lowercase()),
                _ => false,
            };
            if boundary {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::snake_case;

    #[test]
    fn type_names_become_snake_case() {
        assert_eq!(snake_case("Quaternion"), "quaternion");
        assert_eq!(snake_case("Vec3"), "vec3");
        assert_eq!(snake_case("BundleAdjustment"), "bundle_adjustment");
        assert_eq!(snake_case("GMMParams"), "gmm_params");
    }
}
