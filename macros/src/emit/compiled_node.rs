//! The recording pass of a function on the compiled path, for callers on
//! the tape: its forward pass and adjoint run at once on the tape's scalar,
//! and the call is recorded as one binding per output real whose terms are
//! the partial derivatives (the other direction, compiled callers of a
//! function on the tape, is `bridge.rs`).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::Ident;

use super::compiled::{ADJ_FN, FWD_FN};
use super::Generator;
use crate::signature::{BufferOutput, ParamKind, Passing};

impl Generator<'_> {
    /// The recording pass of a compiled function, for callers on the tape:
    /// the forward pass and the adjoint run at once on the tape's scalar,
    /// and the function is recorded as one binding whose terms are its
    /// partial derivatives (with only constant inputs, nothing is recorded
    /// and the forward pass runs alone). The tape's scalar may be a dual
    /// number or a value of an outer tape: forward mode and nested
    /// derivatives through the node work as through any binding.
    pub(super) fn compiled_node_body(&self) -> TokenStream {
        if let Some(body) = self.compiled_call_body() {
            return body;
        }
        let with = self.stack_provider();
        let tape = &self.names.tape;
        let s = &self.names.scalar;
        let (fwd, adj) = (
            Ident::new(FWD_FN, Span::call_site()),
            Ident::new(ADJ_FN, Span::call_site()),
        );
        let ids = Ident::new("__deltad_ids", Span::mixed_site());
        let partials = Ident::new("__deltad_partials", Span::mixed_site());
        let stack = Ident::new("__deltad_stack", Span::mixed_site());
        let value = Ident::new("__deltad_value", Span::mixed_site());
        let zero = quote!(<#s as ::deltad::__private::Scalar>::zero());
        let mut values = Vec::new();
        let mut fwd_args = Vec::new();
        let mut adj_args = Vec::new();
        let mut gradients = Vec::new();
        let mut sinks = Vec::new();
        let mut collect = Vec::new();
        for param in &self.signature.params {
            let name = &param.name;
            let local = format_ident!(
                "__deltad_v_{}",
                syn::ext::IdentExt::unraw(name).to_string(),
                span = Span::mixed_site()
            );
            let gradient = format_ident!(
                "__deltad_g_{}",
                syn::ext::IdentExt::unraw(name).to_string(),
                span = Span::mixed_site()
            );
            match &param.kind {
                ParamKind::Real => {
                    values.push(quote! {
                        let #local: #s = #name.value();
                        #ids.push(#name.id());
                    });
                    fwd_args.push(quote!(#local));
                    adj_args.push(quote!(#local));
                    gradients.push(quote!(let mut #gradient: #s = #zero;));
                    sinks.push(quote!(&mut #gradient));
                    collect.push(quote!(#partials.push(#gradient);));
                }
                ParamKind::Array { len } | ParamKind::ArrayRef { len, .. } => {
                    values.push(quote! {
                        let #local: [#s; #len] = ::core::array::from_fn(|__deltad_k| #name[__deltad_k].value());
                        #ids.extend(#name.iter().map(|__deltad_r| __deltad_r.id()));
                    });
                    fwd_args.push(quote!(&#local));
                    adj_args.push(quote!(&#local));
                    gradients.push(
                        quote!(let mut #gradient: ::std::vec::Vec<#s> = ::std::vec![#zero; #len];),
                    );
                    sinks.push(quote!(&mut #gradient[..]));
                    collect.push(quote!(#partials.extend_from_slice(&#gradient);));
                }
                kind if crate::types::user_elements(kind).is_some() => {
                    let prim = &self.prim;
                    let elem = crate::types::user_elements(kind);
                    values.push(quote! {
                        let #local: ::std::vec::Vec<::deltad::__private::TwinOf<#elem, #s>> = #name
                            .iter()
                            .map(|__deltad_e| ::deltad::__private::twin_of_recorded::<#s, #elem>(__deltad_e))
                            .collect();
                        for __deltad_e in #name.iter() {
                            <#elem as ::deltad::__private::Differentiable<#prim>>::leaves(__deltad_e, &mut #ids);
                        }
                    });
                    fwd_args.push(quote!(&#local[..]));
                    adj_args.push(quote!(&#local[..]));
                    gradients.push(quote! {
                        let mut #gradient: ::std::vec::Vec<::deltad::__private::TwinOf<#elem, #s>> = #local
                            .iter()
                            .map(::deltad::__private::twin_zeros_like::<#s, #s, #elem>)
                            .collect();
                    });
                    sinks.push(quote!(&mut #gradient[..]));
                    collect.push(quote! {
                        for __deltad_e in &#gradient {
                            ::deltad::__private::twin_leaves::<#s, #elem>(__deltad_e, &mut #partials);
                        }
                    });
                }
                ParamKind::Structured { value, passing } => {
                    let prim = &self.prim;
                    let borrowed = match passing {
                        Passing::Value => quote!(&#name),
                        _ => quote!(#name),
                    };
                    values.push(quote! {
                        let #local: ::deltad::__private::TwinOf<#value, #s> =
                            ::deltad::__private::twin_of_recorded::<#s, #value>(#borrowed);
                        <#value as ::deltad::__private::Differentiable<#prim>>::leaves(#borrowed, &mut #ids);
                    });
                    fwd_args.push(quote!(&#local));
                    adj_args.push(quote!(&#local));
                    gradients.push(quote! {
                        let mut #gradient: ::deltad::__private::TwinOf<#value, #s> =
                            ::deltad::__private::twin_zeros_like::<#s, #s, #value>(&#local);
                    });
                    sinks.push(quote!(&mut #gradient));
                    collect.push(quote! {
                        ::deltad::__private::twin_leaves::<#s, #value>(&#gradient, &mut #partials);
                    });
                }
                kind if kind.is_active() => {
                    values.push(quote! {
                        let #local: ::std::vec::Vec<#s> = #name.iter().map(|__deltad_r| __deltad_r.value()).collect();
                        #ids.extend(#name.iter().map(|__deltad_r| __deltad_r.id()));
                    });
                    fwd_args.push(quote!(&#local[..]));
                    adj_args.push(quote!(&#local[..]));
                    gradients.push(quote!(let mut #gradient: ::std::vec::Vec<#s> = ::std::vec![#zero; #local.len()];));
                    sinks.push(quote!(&mut #gradient[..]));
                    collect.push(quote!(#partials.extend_from_slice(&#gradient);));
                }
                _ => {
                    fwd_args.push(super::plain_argument(param, false));
                    adj_args.push(super::plain_argument(param, true));
                    sinks.push(quote!(::deltad::__private::Discard::<#s>::new()));
                }
            }
        }
        let plain_args = fwd_args.clone();
        if let Some(ty) = self.signature.struct_output() {
            // One binding per real of the result, as for a buffer result.
            let (kept, count, k, seed, outputs, leaves) = (
                Ident::new("__deltad_kept", Span::mixed_site()),
                Ident::new("__deltad_count", Span::mixed_site()),
                Ident::new("__deltad_k", Span::mixed_site()),
                Ident::new("__deltad_seed", Span::mixed_site()),
                Ident::new("__deltad_outputs", Span::mixed_site()),
                Ident::new("__deltad_leaves", Span::mixed_site()),
            );
            let real = quote!(::deltad::__private::Real);
            let twin = quote!(::deltad::__private::TwinOf<#ty, #s>);
            return quote! {
                let mut #ids: ::std::vec::Vec<::core::option::Option<::deltad::__private::DeltaId>> =
                    ::std::vec::Vec::new();
                #(#values)*
                if #ids.iter().all(::core::option::Option::is_none) {
                    let #value: #twin = #fwd(&mut ::deltad::__private::NoRecord, #(#plain_args),*);
                    let mut #leaves: ::std::vec::Vec<#s> = ::std::vec::Vec::new();
                    ::deltad::__private::twin_leaves::<#s, #ty>(&#value, &mut #leaves);
                    let #outputs: ::std::vec::Vec<#real<'_, #s>> =
                        #leaves.iter().map(|&__deltad_v| #real::constant(__deltad_v)).collect();
                    return ::deltad::__private::twin_of_outputs::<#s, #ty>(&#value, &#outputs);
                }
                let (#value, #outputs) = ::deltad::__private::with_stack::<#s, _>(|#stack| {
                    let #value: #twin = #fwd(&mut *#stack, #(#fwd_args),*);
                    let mut #leaves: ::std::vec::Vec<#s> = ::std::vec::Vec::new();
                    ::deltad::__private::twin_leaves::<#s, #ty>(&#value, &mut #leaves);
                    let #count = #leaves.len();
                    ::deltad::__private::with_stack::<#s, _>(|#kept| {
                    ::core::clone::Clone::clone_from(&mut *#kept, &*#stack);
                    let mut #outputs: ::std::vec::Vec<#real<'_, #s>> = ::std::vec::Vec::with_capacity(#count);
                    for #k in 0..#count {
                        if #k > 0 {
                            ::core::clone::Clone::clone_from(&mut *#stack, &*#kept);
                        }
                        #(#gradients)*
                        let #seed: #twin = ::deltad::__private::twin_unit::<#s, #ty>(&#value, #k);
                        #adj(&mut *#stack, #(#plain_args,)* #seed, #(#sinks),*);
                        let mut #partials: ::std::vec::Vec<#s> = ::std::vec::Vec::with_capacity(#ids.len());
                        #(#collect)*
                        #outputs.push(::deltad::__private::compiled_output(#tape, #leaves[#k], &#ids, &#partials));
                    }
                    (#value, #outputs)
                    })
                });
                ::deltad::__private::twin_of_outputs::<#s, #ty>(&#value, &#outputs)
            };
        }
        if let Some(buffer) = self.signature.buffer_output() {
            // One binding per output real, each with its partials: one
            // forward pass, then the adjoint per output real from a copy of
            // what the forward pass kept.
            let output = match buffer {
                BufferOutput::Vec => quote!(::std::vec::Vec<#s>),
                BufferOutput::Array(len) => quote!([#s; #len]),
            };
            let (kept, count, k, seed, outputs) = (
                Ident::new("__deltad_kept", Span::mixed_site()),
                Ident::new("__deltad_count", Span::mixed_site()),
                Ident::new("__deltad_k", Span::mixed_site()),
                Ident::new("__deltad_seed", Span::mixed_site()),
                Ident::new("__deltad_outputs", Span::mixed_site()),
            );
            let real = quote!(::deltad::__private::Real);
            let elements = quote!(::deltad::__private::ResultBuffer::elements);
            let from_elements = quote!(::deltad::__private::ResultBuffer::from_elements);
            return quote! {
                let mut #ids: ::std::vec::Vec<::core::option::Option<::deltad::__private::DeltaId>> =
                    ::std::vec::Vec::new();
                #(#values)*
                if #ids.iter().all(::core::option::Option::is_none) {
                    let #value: #output = #fwd(&mut ::deltad::__private::NoRecord, #(#plain_args),*);
                    let #value = #elements(&#value);
                    return #from_elements(#value.len(), |#k| #real::constant(#value[#k]));
                }
                let #outputs: ::std::vec::Vec<#real<'_, #s>> = ::deltad::__private::with_stack::<#s, _>(|#stack| {
                    let #value: #output = #fwd(&mut *#stack, #(#fwd_args),*);
                    let #value = #elements(&#value);
                    let #count = #value.len();
                    ::deltad::__private::with_stack::<#s, _>(|#kept| {
                    ::core::clone::Clone::clone_from(&mut *#kept, &*#stack);
                    let mut #outputs = ::std::vec::Vec::with_capacity(#count);
                    for #k in 0..#count {
                        if #k > 0 {
                            ::core::clone::Clone::clone_from(&mut *#stack, &*#kept);
                        }
                        #(#gradients)*
                        let #seed = ::deltad::__private::unit_seed::<#s, _>(#count, #k);
                        #adj(&mut *#stack, #(#plain_args,)* #seed, #(#sinks),*);
                        let mut #partials: ::std::vec::Vec<#s> = ::std::vec::Vec::with_capacity(#ids.len());
                        #(#collect)*
                        #outputs.push(::deltad::__private::compiled_output(#tape, #value[#k], &#ids, &#partials));
                    }
                    #outputs
                    })
                });
                #from_elements(#outputs.len(), |#k| #outputs[#k])
            };
        }
        quote! {
            let mut #ids: ::std::vec::Vec<::core::option::Option<::deltad::__private::DeltaId>> =
                ::std::vec::Vec::new();
            #(#values)*
            if #ids.iter().all(::core::option::Option::is_none) {
                let #value: #s = #fwd(&mut ::deltad::__private::NoRecord, #(#plain_args),*);
                return ::deltad::__private::Real::constant(#value);
            }
            #(#gradients)*
            let #value: #s = ::deltad::__private::#with::<#s, _>(|#stack| {
                let #value: #s = #fwd(&mut *#stack, #(#fwd_args),*);
                #adj(&mut *#stack, #(#adj_args,)* <#s as ::deltad::__private::Scalar>::one(), #(#sinks),*);
                #value
            });
            let mut #partials: ::std::vec::Vec<#s> = ::std::vec::Vec::with_capacity(#ids.len());
            #(#collect)*
            ::deltad::__private::compiled_output(#tape, #value, &#ids, &#partials)
        }
    }

    /// The common case of `compiled_node_body`: a real result, and
    /// arguments that are reals, buffers of reals or plain data. Their
    /// values, bindings and partials go through buffers the tape lends
    /// (`CompiledCall`), so a call allocates nothing.
    fn compiled_call_body(&self) -> Option<TokenStream> {
        let simple = self.signature.is_flat_to_real();
        if !simple {
            return None;
        }
        let tape = &self.names.tape;
        let s = &self.names.scalar;
        let with = self.stack_provider();
        let (fwd, adj) = (
            Ident::new(FWD_FN, Span::call_site()),
            Ident::new(ADJ_FN, Span::call_site()),
        );
        let call = Ident::new("__deltad_call", Span::mixed_site());
        let rest = Ident::new("__deltad_rest", Span::mixed_site());
        let stack = Ident::new("__deltad_stack", Span::mixed_site());
        let value = Ident::new("__deltad_value", Span::mixed_site());
        let local = |prefix: &str, name: &Ident| self.names.param_local(prefix, name);
        let mut gather = Vec::new();
        let mut views = Vec::new();
        let mut fwd_args = Vec::new();
        let mut adj_args = Vec::new();
        for param in &self.signature.params {
            let name = &param.name;
            let v = local("v", name);
            match &param.kind {
                ParamKind::Real => {
                    gather.push(quote!(let #v: #s = #call.real(#name);));
                    fwd_args.push(quote!(#v));
                }
                ParamKind::Array { len } | ParamKind::ArrayRef { len, .. } => {
                    gather.push(quote! {
                        let #v: [#s; #len] = ::core::array::from_fn(|__deltad_k| #name[__deltad_k].value());
                        #call.ids_of(&#name[..]);
                    });
                    fwd_args.push(quote!(&#v));
                }
                kind if kind.is_active() => {
                    let range = local("r", name);
                    gather.push(quote!(let #range = #call.buffer(&#name[..]);));
                    views.push(quote!(let #v: &[#s] = &__deltad_values[#range];));
                    fwd_args.push(quote!(#v));
                }
                _ => {
                    fwd_args.push(super::plain_argument(param, false));
                    adj_args.push(super::plain_argument(param, true));
                    continue;
                }
            }
            adj_args.push(fwd_args.last().cloned().expect("pushed above"));
        }
        let (splits, sinks) = self.flat_sinks(&quote!(#s), &rest, |name| {
            let v = local("v", name);
            quote!(#v.len())
        });
        Some(quote! {
            let mut #call = ::deltad::__private::CompiledCall::new(#tape);
            #(#gather)*
            let __deltad_constant = #call.all_constant();
            let (__deltad_values, #rest) = #call.split();
            #(#views)*
            let #value: #s = if __deltad_constant {
                #fwd(&mut ::deltad::__private::NoRecord, #(#fwd_args),*)
            } else {
                #(#splits)*
                ::deltad::__private::#with::<#s, _>(|#stack| {
                    let #value: #s = #fwd(&mut *#stack, #(#fwd_args),*);
                    #adj(&mut *#stack, #(#adj_args,)* <#s as ::deltad::__private::Scalar>::one(), #(#sinks),*);
                    #value
                })
            };
            #call.finish(#value)
        })
    }

    /// The sinks of the adjoints of the parameters, pieces of one slice of
    /// adjoints of `scalar`s (named `rest`, in the order the input reals
    /// are gathered: a real's one, a buffer's `len()`): the statements
    /// splitting it, and the sinks (constant data's discarded).
    pub(super) fn flat_sinks(
        &self,
        scalar: &TokenStream,
        rest: &Ident,
        len: impl Fn(&Ident) -> TokenStream,
    ) -> (Vec<TokenStream>, Vec<TokenStream>) {
        let mut splits = Vec::new();
        let mut sinks = Vec::new();
        for param in &self.signature.params {
            let name = &param.name;
            let adjoint = self.names.param_local("g", name);
            let len = match &param.kind {
                ParamKind::Real => {
                    sinks.push(quote!(&mut #adjoint[0]));
                    quote!(1)
                }
                kind if kind.is_active() => {
                    sinks.push(quote!(#adjoint));
                    len(name)
                }
                _ => {
                    sinks.push(quote!(::deltad::__private::Discard::<#scalar>::new()));
                    continue;
                }
            };
            splits.push(quote!(let (#adjoint, #rest) = #rest.split_at_mut(#len);));
        }
        (splits, sinks)
    }
}
