//! Nested derivatives of a compiled function with few input reals,
//! preaccumulated (`compiled_nested.rs` chooses): instead of recording
//! every operation of the derivative on the caller's tape, forward-over-
//! reverse runs of the passes on the tape's scalar give each result's
//! partial derivatives, and each result is recorded as one binding
//! (`nested_reverse`, `nested_forward` in the runtime). The input reals
//! are copied in parameter order into a fixed array (`flat`), and one
//! closure runs the passes on them flat.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::Ident;

use super::compiled::{ADJ_FN, FWD_FN};
use super::compiled_nested::nested_result;
use super::nested::Nested;
use super::Generator;
use crate::signature::ParamKind;

/// The pieces of a preaccumulated nested derivative.
pub(super) struct Preaccumulated {
    /// The number of input reals, and the most that fit.
    count: TokenStream,
    max: TokenStream,
    /// Statements copying the input reals (and, for `jvp`, their tangents)
    /// into fixed arrays.
    gather: TokenStream,
    /// True if one of them (or the seed) has a binding.
    active: TokenStream,
    body: TokenStream,
}

impl Generator<'_> {
    /// `grad`, `value_and_grad` or `vjp` with output adjoint `output_seed`.
    pub(super) fn nested_reverse_preaccumulated(
        &self,
        kind: Nested,
        output_seed: &Ident,
    ) -> Preaccumulated {
        let max = quote!(::deltad::__private::NESTED_PREACCUMULATE_MAX);
        let (count, gather, fields) = self.gather_flat(&max, None);
        let (flat, at, value, adjoints) = (
            self.names.local("flat"),
            self.names.local("at"),
            self.names.local("value"),
            self.names.local("adjoints"),
        );
        let (tape, keeps, pass) = (&self.names.tape, self.keeps_value(), self.flat_pass());
        let fields: Vec<TokenStream> = fields
            .iter()
            .map(|(name, field)| quote!(#name: #field))
            .collect();
        let result = nested_result(kind, &value, &fields);
        Preaccumulated {
            count,
            max,
            gather,
            active: quote! {
                ::deltad::__private::any_active(&#flat[..#at], ::core::slice::from_ref(&#output_seed))
            },
            body: quote! {
                let (#value, #adjoints) = ::deltad::__private::nested_reverse(
                    #tape, &#flat[..#at], #output_seed, #keeps, #pass,
                );
                #result
            },
        }
    }

    /// The nested derivative preaccumulated where the caller records on a
    /// tape (not forward mode), the input reals fit and one of them has a
    /// binding, and else `direct`; `setup` runs before gathering (and again
    /// before `direct` if they did not fit).
    pub(super) fn preaccumulated_or(
        &self,
        preaccumulated: Preaccumulated,
        setup: TokenStream,
        direct: TokenStream,
    ) -> TokenStream {
        let Preaccumulated {
            count,
            max,
            gather,
            active,
            body,
        } = preaccumulated;
        let tape = &self.names.tape;
        let label = syn::Lifetime::new("'__deltad_nested", Span::mixed_site());
        quote! {
            #label: {
                if !#tape.is_forward_only() && #count <= #max {
                    #setup
                    #gather
                    if #active {
                        break #label { #body };
                    }
                }
                #setup
                #direct
            }
        }
    }

    /// `jvp` along the tangents `seeds` gives in input order (a `Seeds`).
    pub(super) fn nested_forward_preaccumulated(&self, seeds: &Ident) -> Preaccumulated {
        let max = quote!(::deltad::__private::NESTED_FORWARD_MAX);
        let tangents = self.names.local("tangents");
        let (count, gather, _) = self.gather_flat(&max, Some((&tangents, seeds)));
        let (flat, at) = (self.names.local("flat"), self.names.local("at"));
        let (tape, keeps, pass) = (&self.names.tape, self.keeps_value(), self.flat_pass());
        Preaccumulated {
            count,
            max,
            gather,
            active: quote!(::deltad::__private::any_active(&#flat[..#at], &#tangents[..#at])),
            body: quote! {
                ::deltad::__private::nested_forward(#tape, &#flat[..#at], &#tangents[..#at], #keeps, #pass)
            },
        }
    }

    /// The number of input reals; statements copying them into
    /// `__deltad_flat` (a fixed array of `max` outer dual values), each
    /// parameter's offset into `__deltad_at_<name>` (and, given `tangents`,
    /// the next tangents of `seeds` into that array); and each
    /// differentiated parameter's `Grad` field read from the flat adjoints.
    fn gather_flat(
        &self,
        max: &TokenStream,
        tangents: Option<(&Ident, &Ident)>,
    ) -> (TokenStream, TokenStream, Vec<(Ident, TokenStream)>) {
        let (lifetime, scalar) = (&self.names.lifetime, &self.names.scalar);
        let outer = quote!(::deltad::__private::Real<#lifetime, #scalar>);
        let (flat, at, adjoints, k) = (
            self.names.local("flat"),
            self.names.local("at"),
            self.names.local("adjoints"),
            self.names.local("k"),
        );
        let tangent = |index: TokenStream| match tangents {
            Some((tangents, seeds)) => quote! {
                #tangents[#index] = ::deltad::__private::Tangent::<#outer>::at_level(#seeds.next_tangent());
            },
            None => TokenStream::new(),
        };
        let mut lens = Vec::new();
        let mut copies = Vec::new();
        let mut fields = Vec::new();
        for param in self.signature.params.iter().filter(|p| p.kind.is_active()) {
            let name = &param.name;
            let offset = self.names.param_local("at", name);
            if matches!(param.kind, ParamKind::Real) {
                let tangent = tangent(quote!(#at));
                lens.push(quote!(1));
                copies.push(quote! {
                    let #offset = #at;
                    #flat[#at] = #name;
                    #tangent
                    #at += 1;
                });
                fields.push((name.clone(), quote!(#adjoints[#offset])));
                continue;
            }
            let tangent = tangent(quote!(#at + #k));
            lens.push(quote!(#name.len()));
            copies.push(quote! {
                let #offset = #at;
                for #k in 0..#name.len() {
                    #flat[#at + #k] = #name[#k];
                    #tangent
                }
                #at += #name.len();
            });
            fields.push((
                name.clone(),
                match &param.kind {
                    ParamKind::Array { .. } | ParamKind::ArrayRef { .. } => {
                        quote!(::core::array::from_fn(|#k| #adjoints[#offset + #k]))
                    }
                    _ => quote!(#adjoints[#offset..#offset + #name.len()].to_vec()),
                },
            ));
        }
        let zero = quote!(<#outer as ::deltad::__private::Scalar>::zero());
        let tangents = tangents.map(|(tangents, _)| quote!(let mut #tangents = [#zero; #max];));
        let gather = quote! {
            let mut #flat = [#zero; #max];
            #tangents
            let mut #at = 0usize;
            #(#copies)*
        };
        (quote!((0usize #(+ #lens)*)), gather, fields)
    }

    /// The closure running the forward pass and the adjoint on dual numbers
    /// of the tape's scalar, the input reals and their adjoints flat (in
    /// the order and at the offsets `gather_flat` gives them).
    fn flat_pass(&self) -> TokenStream {
        let scalar = &self.names.scalar;
        let dual = quote!(::deltad::__private::Dual<#scalar>);
        let (fwd, adj) = (
            Ident::new(FWD_FN, Span::call_site()),
            Ident::new(ADJ_FN, Span::call_site()),
        );
        let (stack, inputs, seed, sinks, rest, value, k) = (
            self.names.local("stack"),
            self.names.local("inputs"),
            self.names.local("seed"),
            self.names.local("sinks"),
            self.names.local("rest"),
            self.names.local("value"),
            self.names.local("k"),
        );
        let mut arrays = Vec::new();
        let mut args = Vec::new();
        for param in &self.signature.params {
            let name = &param.name;
            let offset = self.names.param_local("at", name);
            args.push(match &param.kind {
                ParamKind::Real => quote!(#inputs[#offset]),
                ParamKind::Array { len } | ParamKind::ArrayRef { len, .. } => {
                    let array = self.names.param_local("array", name);
                    arrays.push(quote! {
                        let #array: [#dual; #len] = ::core::array::from_fn(|#k| #inputs[#offset + #k]);
                    });
                    quote!(&#array)
                }
                kind if kind.is_active() => quote!(&#inputs[#offset..#offset + #name.len()]),
                _ => super::plain_argument(param, false),
            });
        }
        let (splits, pass_sinks) = self.flat_sinks(&dual, &rest, |name| quote!(#name.len()));
        quote! {
            |#stack: &mut ::deltad::__private::Stack<#dual>, #inputs: &[#dual], #seed: #dual, #sinks: &mut [#dual]| {
                #(#arrays)*
                let #rest = #sinks;
                #(#splits)*
                let #value = #fwd(&mut *#stack, #(#args),*);
                #adj(&mut *#stack, #(#args,)* #seed, #(#pass_sinks),*);
                #value
            }
        }
    }
}
