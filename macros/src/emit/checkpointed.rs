//! Checkpointed calls: `#[checkpoint] let y = f(..);` in differentiated code
//! calls `f::__checkpointed`, which runs `f` without recording, keeps the
//! values of its differentiated arguments and owned copies of the others,
//! and records one special binding whose reverse re-runs `f` with recording
//! (see the runtime's `checkpoint.rs`). Checkpointed calls nest: `f` may
//! itself contain checkpointed calls and loops.
//!
//! Three functions per differentiated function:
//!
//! * `__deltad_rebuild(tape, reals, constants, record)`: the arguments from
//!   what was kept (input bindings for the reals, or constants when not
//!   recording), then the recording pass;
//! * `__deltad_rerun`: `rebuild` with recording, returning the output's
//!   bindings (the runtime's `Rerun` function pointer);
//! * `__deltad_checkpointed(tape, <arguments as the recording pass takes
//!   them>)`: keeps the arguments, computes the value without recording,
//!   records the call.
//!
//! Arguments that are not differentiated must be `Clone` and own their data
//! (`OwnedConstant`): a bound checked where a call is checkpointed.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::Ident;

use super::Generator;
use crate::names::items;
use crate::signature::{ParamKind, Passing};

impl Generator<'_> {
    /// True if calls of this function can be checkpointed (see
    /// `Signature::calls_can_be_checkpointed`).
    pub(super) fn has_checkpointed(&self) -> bool {
        self.signature.calls_can_be_checkpointed()
    }

    pub(super) fn checkpointed(&self, stub: bool) -> TokenStream {
        if !self.has_checkpointed() {
            return TokenStream::new();
        }
        let (tape, lifetime, scalar, prim) = (
            &self.names.tape,
            &self.names.lifetime,
            &self.names.scalar,
            &self.prim,
        );
        let signature = self.record_signature();
        let (params, receives) = self.received(&signature, true);
        let generics: Vec<&TokenStream> = signature
            .params
            .iter()
            .filter_map(|p| p.generic.as_ref())
            .collect();
        let user_generics = &signature.user_generics;
        let consts = self.const_names();
        let where_clause = &signature.where_clause;
        let output = &signature.output;
        let output_type = self.output_type();
        let names = |name: &str| Ident::new(name, Span::call_site());
        let (checkpointed_fn, rebuild_fn, rerun_fn, record_fn) = (
            names(items::CHECKPOINTED_FN),
            names(items::REBUILD_FN),
            names(items::RERUN_FN),
            names(items::RECORD_FN),
        );
        let real = self.names.real_type();
        let reals = Ident::new("reals", Span::mixed_site());
        let args = Ident::new("args", Span::mixed_site());
        let constants = Ident::new("constants", Span::mixed_site());
        let record = Ident::new("record", Span::mixed_site());
        let cursor = Ident::new("cursor", Span::mixed_site());
        let diff =
            |ty: &dyn quote::ToTokens| quote!(<#ty as ::deltad::__private::Differentiable<#prim>>);

        // Per parameter: how `checkpointed` keeps it (reals, and an entry of
        // the constants tuple), and how `rebuild` makes the argument again.
        let mut keep = Vec::new();
        let mut constant_entries = Vec::new();
        let mut constant_types = Vec::new();
        let mut bounds = Vec::new();
        let mut rebuild_args = Vec::new();
        let leaf = quote! {{
            let value = #reals[#cursor];
            #cursor += 1;
            if #record {
                ::deltad::__private::input(#tape, value)
            } else {
                ::deltad::__private::Real::constant(value)
            }
        }};
        // The reals are kept in blocks (`ends`): one per parameter that is
        // not a real, one per run of real parameters, so that a block that
        // repeats from call to call is kept once.
        let end_block = quote!(#args.end_block(););
        let mut scalars_pending = false;
        for param in &self.signature.params {
            let name = &param.name;
            let entry = syn::Index::from(constant_entries.len());
            let is_real = matches!(param.kind, ParamKind::Real);
            let blocked = !matches!(param.kind, ParamKind::Constant | ParamKind::Discrete);
            if scalars_pending && blocked && !is_real {
                keep.push(end_block.clone());
                scalars_pending = false;
            }
            let push_reals = |iter: TokenStream| {
                quote! {
                    for real in #iter {
                        #args.push(real.value(), real.raw_id());
                    }
                }
            };
            match &param.kind {
                ParamKind::Real => {
                    keep.push(quote!(#args.push(#name.value(), #name.raw_id());));
                    rebuild_args.push(leaf.clone());
                }
                ParamKind::Slice { .. } | ParamKind::VecRef { .. } | ParamKind::Vec => {
                    keep.push(push_reals(quote!(#name.iter())));
                    constant_entries.push(quote!(#name.len()));
                    constant_types.push(quote!(usize));
                    let made = quote! {
                        (0..#constants.#entry).map(|_| #leaf).collect::<::std::vec::Vec<#real>>()
                    };
                    rebuild_args.push(match &param.kind {
                        ParamKind::Vec => made,
                        _ => quote!(::deltad::__private::Cow::Owned(#made)),
                    });
                }
                ParamKind::Array { len } | ParamKind::ArrayRef { len, .. } => {
                    keep.push(push_reals(quote!(#name.iter())));
                    let made = quote!(::core::array::from_fn::<#real, { #len }, _>(|_| #leaf));
                    rebuild_args.push(match &param.kind {
                        ParamKind::Array { .. } => made,
                        _ => quote!(::deltad::__private::Cow::Owned(#made)),
                    });
                }
                ParamKind::Structured { value, passing } => {
                    let d = diff(value);
                    let twin = match passing {
                        Passing::Value => quote!(&#name),
                        Passing::Ref | Passing::View => quote!(#name),
                        Passing::Slice { .. } => {
                            let owned = self.names.local(&format!("owned_{}", param.name));
                            quote!(&#owned)
                        }
                    };
                    keep.push(quote! {
                        #d::map_twin(#twin, &mut |real: &::deltad::__private::Real<'_, #scalar>| {
                            #args.push(real.value(), real.raw_id());
                        });
                    });
                    // The structure (lengths, variants, discrete data) is
                    // kept as a value of the user's type.
                    constant_entries.push(quote!(#d::from_twin(#d::primal(#twin))));
                    constant_types.push(quote!(#value));
                    rebuild_args.push(quote!(#d::build(&#constants.#entry, &mut |_| #leaf)));
                }
                ParamKind::Constant | ParamKind::Discrete => {
                    let (target, source, argument) = match &param.ty {
                        syn::Type::Reference(reference) => {
                            let target = &reference.elem;
                            (
                                quote!(#target),
                                quote!(#name),
                                quote!(<#target as ::deltad::__private::OwnedConstant<#scalar>>::view(&#constants.#entry)),
                            )
                        }
                        ty => (
                            quote!(#ty),
                            quote!(&#name),
                            quote!(<#ty as ::deltad::__private::OwnedConstant<#scalar>>::again(&#constants.#entry)),
                        ),
                    };
                    bounds.push(quote!(#target: ::deltad::__private::OwnedConstant<#scalar>));
                    constant_entries.push(quote!(<#target as ::deltad::__private::OwnedConstant<#scalar>>::owned(#source)));
                    constant_types.push(
                        quote!(<#target as ::deltad::__private::OwnedConstant<#scalar>>::Owned),
                    );
                    rebuild_args.push(argument);
                }
                ParamKind::InOut { .. } | ParamKind::Function { .. } => return TokenStream::new(),
            }
            if is_real {
                scalars_pending = true;
            } else if blocked {
                keep.push(end_block.clone());
            }
        }
        if scalars_pending {
            keep.push(end_block);
        }
        let constants_type = quote!((#(#constant_types,)*));
        // The function's own `where` clause, and the bounds on arguments
        // kept by copy (only the latter for the helpers, which do not have
        // the function's lifetime parameters).
        let own_bounds = quote!(#(#bounds,)*);
        // (Each predicate with its comma: a `where` without predicates is
        // valid Rust.)
        let predicates = where_clause
            .iter()
            .flat_map(|clause| clause.predicates.iter());
        let where_clause = quote!(where #(#predicates,)* #own_bounds);
        let helper_where = quote!(where #own_bounds);
        let body = |body: TokenStream| {
            if stub {
                quote!(::core::unreachable!())
            } else {
                body
            }
        };
        let checkpointed_body = body(quote! {
            #(#receives)*
            let mut #args = ::deltad::__private::CallArgs::new(#tape);
            #(#keep)*
            let #constants: #constants_type = (#(#constant_entries,)*);
            let __deltad_values = {
                let scratch = ::deltad::__private::Tape::<#scalar>::forward_only();
                let output = #rebuild_fn::<#(#consts,)* #scalar>(&scratch, #args.values(), &#constants, false);
                <#output_type as ::deltad::__private::Differentiable<#prim>>::map_twin(
                    &output,
                    &mut |real: &::deltad::__private::Real<'_, #scalar>| real.value(),
                )
            };
            ::deltad::__private::checkpointed_call::<#prim, #scalar, #output_type>(
                #tape,
                __deltad_values,
                #args,
                ::std::boxed::Box::new(#constants),
                #rerun_fn::<#(#consts,)* #scalar>,
            )
        });
        // The recording pass's const and structured generic arguments, given
        // explicitly: nothing in the rebuilt arguments fixes the consts.
        let inferred = generics.iter().map(|_| quote!(_));
        let rebuild_body = body(quote! {
            let mut #cursor = 0usize;
            #record_fn::<#(#consts,)* #scalar #(, #inferred)*>(#tape, #(#rebuild_args),*)
        });
        let rerun_body = body(quote! {
            let #constants = #constants
                .downcast_ref::<#constants_type>()
                .expect("deltad: a checkpointed call's kept arguments have the type it was recorded with");
            let output = #rebuild_fn::<#(#consts,)* #scalar>(#tape, #reals, #constants, true);
            let mut leaves = ::std::vec::Vec::new();
            <#output_type as ::deltad::__private::Differentiable<#prim>>::leaves::<#scalar>(&output, &mut leaves);
            leaves
        });
        let const_generics = self.const_params();
        quote! {
            #[doc(hidden)]
            pub fn #checkpointed_fn<#lifetime, #(#user_generics,)* #scalar: ::deltad::__private::Scalar<Prim = #prim> + #lifetime #(, #generics)*>(
                #tape: &#lifetime ::deltad::__private::Tape<#scalar>,
                #(#params),*
            ) -> #output #where_clause {
                #checkpointed_body
            }

            #[doc(hidden)]
            #[allow(unused_variables, unused_mut)]
            fn #rebuild_fn<#lifetime, #(#const_generics,)* #scalar: ::deltad::__private::Scalar<Prim = #prim> + #lifetime>(
                #tape: &#lifetime ::deltad::__private::Tape<#scalar>,
                #reals: &[#scalar],
                #constants: &#constants_type,
                #record: bool,
            ) -> #output #helper_where {
                #rebuild_body
            }

            #[doc(hidden)]
            fn #rerun_fn<#(#const_generics,)* #scalar: ::deltad::__private::Scalar<Prim = #prim>>(
                #tape: &::deltad::__private::Tape<#scalar>,
                #reals: &[#scalar],
                #constants: &dyn ::core::any::Any,
            ) -> ::std::vec::Vec<::core::option::Option<::deltad::__private::DeltaId>> #helper_where {
                #rerun_body
            }
        }
    }
}
