//! Derivatives taken inside differentiated code (`nested.rs`) of a function
//! on the compiled path: its forward pass and adjoint run on the caller's
//! dual values (the outer tape's `Real<'t, S>`, or a dual number of it for
//! `jvp`), with no inner tape. The adjoint's arithmetic is then itself
//! recorded by the caller's tape, which is reverse over reverse without
//! the inner recording: no inner bindings, no inner sweep, no copies of
//! the arguments.
//!
//! Covers functions whose parameters are reals, buffers of reals and
//! constant or discrete data, and whose result is a real; the others keep
//! the inner tape.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::Ident;

use super::compiled::{ADJ_FN, FWD_FN};
use super::compiled_wrappers::Scalar;
use super::nested::Nested;
use super::Generator;
use crate::names::items;
use crate::signature::ParamKind;

impl Generator<'_> {
    /// The body of a nested derivative through the compiled passes, where
    /// the function's parameters and result allow it; `seed` names the
    /// `vjp` seed or the `jvp` tangent.
    pub(super) fn compiled_nested_body(&self, kind: Nested, seed: &Ident) -> Option<TokenStream> {
        self.compiled?;
        let supported = self.signature.is_flat_to_real();
        if !supported {
            return None;
        }
        Some(match kind {
            Nested::Jvp => self.compiled_nested_forward(seed),
            _ => self.compiled_nested_reverse(kind, seed),
        })
    }

    /// `grad`, `value_and_grad` and `vjp`: the forward pass (unless the
    /// adjoint runs alone) and the adjoint on the outer dual values, the
    /// adjoints of the parameters in locals that become the `Grad`.
    fn compiled_nested_reverse(&self, kind: Nested, seed: &Ident) -> TokenStream {
        let (lifetime, scalar, prim) = (&self.names.lifetime, &self.names.scalar, &self.prim);
        let outer = quote!(::deltad::__private::Real<#lifetime, #scalar>);
        let zero = quote!(<#outer as ::deltad::__private::Scalar>::zero());
        let (fwd, adj) = (
            Ident::new(FWD_FN, Span::call_site()),
            Ident::new(ADJ_FN, Span::call_site()),
        );
        let mut adjoints = Vec::new();
        let mut sinks = Vec::new();
        let mut fields = Vec::new();
        for param in &self.signature.params {
            let name = &param.name;
            let adjoint = self.names.param_local("nested_adj", name);
            let (make, sink) = match &param.kind {
                ParamKind::Real => (quote!(#zero), quote!(&mut #adjoint)),
                ParamKind::Array { len } | ParamKind::ArrayRef { len, .. } => {
                    (quote!([#zero; #len]), quote!(&mut #adjoint[..]))
                }
                kind if kind.is_active() => (
                    quote!(::std::vec![#zero; #name.len()]),
                    quote!(&mut #adjoint[..]),
                ),
                _ => {
                    sinks.push(quote!(::deltad::__private::Discard::<#outer>::new()));
                    continue;
                }
            };
            adjoints.push(quote!(let mut #adjoint = #make;));
            sinks.push(sink);
            fields.push(quote!(#name: #adjoint));
        }
        let stack = Ident::new("__deltad_stack", Span::mixed_site());
        let value = Ident::new("__deltad_value", Span::mixed_site());
        let output_seed = Ident::new("__deltad_output_seed", Span::mixed_site());
        let seed_value = match kind {
            Nested::Vjp => {
                let results = self.results_type();
                quote! {
                    let #output_seed: ::deltad::__private::DualOf<#lifetime, #scalar, #prim, #results> =
                        ::deltad::__private::IntoDual::into_dual(#seed);
                }
            }
            _ => quote!(let #output_seed = <#outer as ::deltad::__private::Scalar>::one();),
        };
        let fwd_args = self.pass_args(Scalar::Machine, false);
        let adj_args = self.pass_args(Scalar::Machine, true);
        let adjoint = quote!(#adj(&mut *#stack, #(#adj_args,)* #output_seed, #(#sinks),*););
        let result = nested_result(kind, &value, &fields);
        let both = quote! {{
            #(#adjoints)*
            let #value: #outer = ::deltad::__private::with_stack::<#outer, _>(|#stack| {
                let #value: #outer = #fwd(&mut *#stack, #(#fwd_args),*);
                #adjoint
                #value
            });
            #result
        }};
        let direct = if kind == Nested::Grad {
            let alone = quote! {{
                #(#adjoints)*
                ::deltad::__private::with_stack::<#outer, _>(|#stack| { #adjoint });
                #result
            }};
            self.alone_or(alone, both)
        } else {
            both
        };
        let preaccumulated = self.nested_reverse_preaccumulated(kind, &output_seed);
        let choice = self.preaccumulated_or(preaccumulated, TokenStream::new(), direct);
        quote! {
            #seed_value
            #choice
        }
    }

    /// `jvp`: the forward pass on dual numbers of the outer dual values,
    /// recording nothing of its own, the tangents from `tangent` in input
    /// order.
    fn compiled_nested_forward(&self, tangent: &Ident) -> TokenStream {
        let (lifetime, scalar) = (&self.names.lifetime, &self.names.scalar);
        let outer = quote!(::deltad::__private::Real<#lifetime, #scalar>);
        let fwd = Ident::new(FWD_FN, Span::call_site());
        let flatten = Ident::new(items::FLATTEN_FN, Span::call_site());
        let seeds = Ident::new("__deltad_seeds", Span::mixed_site());
        let inputs =
            self.compiled_dual_inputs(&seeds, &quote!(::deltad::__private::Dual<#outer>), None);
        let args = self.pass_args(Scalar::Dual, true);
        let seeds_from_tangent = quote! {
            let mut #seeds = {
                let mut __deltad_tangents = ::std::vec::Vec::new();
                #flatten(#tangent, &mut __deltad_tangents);
                ::deltad::__private::Seeds::from_flat(__deltad_tangents)
            };
        };
        let preaccumulated = self.nested_forward_preaccumulated(&seeds);
        self.preaccumulated_or(
            preaccumulated,
            seeds_from_tangent,
            quote! {
                #(#inputs)*
                let __deltad_result: ::deltad::__private::Dual<#outer> =
                    #fwd(&mut ::deltad::__private::NoRecord, #(#args),*);
                (__deltad_result.value, __deltad_result.tangent)
            },
        )
    }
}

/// What a nested derivative returns: the `Grad` of `fields` (`name: value`),
/// after the value (`value`) for `value_and_grad` and `vjp`.
pub(super) fn nested_result(kind: Nested, value: &Ident, fields: &[TokenStream]) -> TokenStream {
    let grad = Ident::new(items::GRAD, Span::call_site());
    let phantom = fields
        .is_empty()
        .then(|| quote!(__deltad_element: ::core::marker::PhantomData));
    let grad_value = quote!(#grad { #(#fields,)* #phantom });
    match kind {
        Nested::Grad => grad_value,
        _ => quote!((#value, #grad_value)),
    }
}
