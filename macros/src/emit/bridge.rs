//! The compiled passes of a function that stays on the tape, so compiled
//! callers can call it (they cannot know which path a callee took): its
//! forward pass runs the recording pass on constants (nothing recorded);
//! its adjoint records it on a fresh tape of the caller's scalar, sweeps it
//! with the output's adjoint, and adds the inputs' adjoints into the sinks.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::Ident;

use super::compiled::{sink, ADJ_FN, FWD_FN};
use super::Generator;
use crate::names::items;
use crate::signature::{BufferOutput, Output, ParamKind, Passing, Signature};

/// True if the function's compiled passes can be called: its parameters
/// and result have compiled-pass conventions (reals, buffers of reals,
/// values and buffers of user types as twins, plain values; a real, buffer
/// or user type result). A parameter of another structured type (a tuple, a
/// nested collection) is passed as plain data: a compiled caller has no
/// differentiated values of those types to pass.
pub(crate) fn has_compiled_convention(signature: &Signature) -> bool {
    compiled_conventions(signature, true)
}

/// True if the compiled path can take the function's signature (the
/// conventions; of structured parameters, only user types, by value or
/// by reference).
pub(crate) fn compiled_path_signature(signature: &Signature) -> bool {
    compiled_conventions(signature, false)
}

/// True for a parameter of a user type (by value or by reference), which
/// the compiled path takes as its twin.
pub(crate) fn is_struct_param(kind: &ParamKind) -> bool {
    matches!(
        kind,
        ParamKind::Structured { value, passing: Passing::Value | Passing::Ref }
            if crate::types::is_user_type(value)
    )
}

/// True for a parameter of a type the macro cannot see into (by value or
/// by reference), which the bridge takes as its compiled callers hold it.
pub(crate) fn is_opaque_param(kind: &ParamKind) -> bool {
    matches!(
        kind,
        ParamKind::Structured { value, passing: Passing::Value | Passing::Ref }
            if crate::types::is_opaque_type(value)
    )
}

fn compiled_conventions(signature: &Signature, structured: bool) -> bool {
    // (An array result whose length is a const parameter has no type
    // callers could name without the parameter.)
    let const_generic = signature
        .generics
        .iter()
        .any(|g| matches!(g, syn::GenericParam::Const(_)));
    let output = match signature.buffer_output() {
        Some(BufferOutput::Array(_)) => !const_generic,
        Some(BufferOutput::Vec) => true,
        None => {
            matches!(signature.output, Output::Real)
                || signature.struct_output().is_some()
                || (structured && signature.opaque_output().is_some())
        }
    };
    output
        && signature.params.iter().all(|p| {
            matches!(
                p.kind,
                ParamKind::Real
                    | ParamKind::Slice { .. }
                    | ParamKind::VecRef { .. }
                    | ParamKind::Vec
                    | ParamKind::Array { .. }
                    | ParamKind::ArrayRef { .. }
                    | ParamKind::Constant
                    | ParamKind::Discrete
            ) || (structured && matches!(p.kind, ParamKind::Structured { .. }))
                || is_struct_param(&p.kind)
                || crate::types::user_elements(&p.kind).is_some()
        })
}

impl Generator<'_> {
    pub(super) fn bridge(&self, stub: bool) -> TokenStream {
        if !has_compiled_convention(self.signature) {
            return TokenStream::new();
        }
        let prim = &self.prim;
        let s = Ident::new("__DeltadS", Span::call_site());
        let generics: Vec<TokenStream> =
            self.signature.generics.iter().map(|g| quote!(#g)).collect();
        let where_clause = &self.signature.where_clause;
        let record = Ident::new(items::RECORD_FN, Span::call_site());
        let (fwd_fn, adj_fn) = (
            Ident::new(FWD_FN, Span::call_site()),
            Ident::new(ADJ_FN, Span::call_site()),
        );
        let tape = Ident::new("__deltad_bridge_tape", Span::mixed_site());
        let adjoints = Ident::new("__deltad_bridge_adjoints", Span::mixed_site());
        let stack = Ident::new("__deltad_stack", Span::mixed_site());
        let out = Ident::new("__deltad_out", Span::mixed_site());
        let real = quote!(::deltad::__private::Real);
        let mut params = Vec::new();
        let mut constants = Vec::new();
        let mut inputs = Vec::new();
        let mut input_args = Vec::new();
        let mut reads = Vec::new();
        let mut recycle = Vec::new();
        let mut sink_bounds = Vec::new();
        let mut sinks = Vec::new();
        let mut struct_generics = Vec::new();
        for (index, param) in self.signature.params.iter().enumerate() {
            let name = &param.name;
            let sink = sink(index);
            let sink_type = format_ident!("__DeltadK{}", index);
            let input = format_ident!("__deltad_bridge_in{}", index, span = Span::mixed_site());
            sinks.push(quote!(mut #sink: #sink_type));
            let reader = quote!(__deltad_reader);
            match &param.kind {
                // A value of a user type: its twin, as compiled passes take
                // it (callers cannot know which path a callee took), or, for
                // an alias of a buffer that reads like a user type's name,
                // that buffer (see the runtime's `HeldValue`).
                ParamKind::Structured { value, .. } if is_struct_param(&param.kind) => {
                    let generic = format_ident!("__DeltadB{}", index);
                    let held = quote!(<#generic as ::deltad::__private::HeldValue<#value, #s>>);
                    struct_generics
                        .push(quote!(#generic: ::deltad::__private::HeldValue<#value, #s>));
                    params.push(quote!(#name: #generic));
                    constants.push(quote!(#held::dual(&#name, #tape, false)));
                    inputs.push(quote!(let #input = #held::dual(&#name, #tape, true);));
                    input_args.push(quote!(#input));
                    reads.push(quote! {
                        ::deltad::__private::HeldSink::<#value, #s, #generic>::read(&mut #sink, &#name, &mut #reader);
                    });
                    sink_bounds.push(
                        quote!(#sink_type: ::deltad::__private::HeldSink<#value, #s, #generic>),
                    );
                }
                // A value of a type the macro cannot see into: as the
                // caller holds it (see the runtime's `OpaqueArg`).
                ParamKind::Structured { value, .. } if is_opaque_param(&param.kind) => {
                    let generic = format_ident!("__DeltadB{}", index);
                    let opaque = quote!(<#generic as ::deltad::__private::OpaqueArg<#value, #s>>);
                    struct_generics
                        .push(quote!(#generic: ::deltad::__private::OpaqueArg<#value, #s>));
                    params.push(quote!(#name: #generic));
                    constants.push(quote!(#opaque::dual(&#name, #tape, false)));
                    inputs.push(quote!(let #input = #opaque::dual(&#name, #tape, true);));
                    input_args.push(quote!(#input));
                    reads.push(quote!(#opaque::read_adjoint(&#name, &mut #reader, &mut #sink);));
                    sink_bounds.push(quote!(#sink_type: ::deltad::__private::SliceSink<#s>));
                }
                kind if crate::types::user_elements(kind).is_some() => {
                    let elem = crate::types::user_elements(kind);
                    let twin = quote!(::deltad::__private::TwinOf<#elem, #s>);
                    params.push(quote!(#name: &[#twin]));
                    let on_tape = |inputs: bool| {
                        quote! {
                            #name
                                .iter()
                                .map(|__deltad_e| ::deltad::__private::twin_on_tape::<#s, #elem>(#tape, __deltad_e, #inputs))
                                .collect::<::std::vec::Vec<_>>()
                        }
                    };
                    constants.push(on_tape(false));
                    inputs.push({
                        let made = on_tape(true);
                        quote!(let #input = #made;)
                    });
                    input_args.push(quote!(#input));
                    reads.push(quote! {
                        for (__deltad_k, __deltad_e) in #name.iter().enumerate() {
                            ::deltad::__private::read_twin_adjoint::<#s, #elem>(
                                __deltad_e,
                                &mut #reader,
                                &mut ::deltad::__private::SinkAt(&mut #sink, __deltad_k),
                            );
                        }
                    });
                    sink_bounds.push(quote!(#sink_type: ::deltad::__private::TwinsSink<#twin>));
                }
                ParamKind::Real => {
                    params.push(quote!(#name: #s));
                    constants.push(quote!(#real::constant(#name)));
                    inputs.push(quote!(let #input = ::deltad::__private::input(#tape, #name);));
                    input_args.push(quote!(#input));
                    reads.push(
                        quote!(::deltad::__private::ScalarSink::add(&mut #sink, #reader.scalar());),
                    );
                    sink_bounds.push(quote!(#sink_type: ::deltad::__private::ScalarSink<#s>));
                }
                // (A structured parameter is plain data here.)
                kind if kind.is_active() && !matches!(kind, ParamKind::Structured { .. }) => {
                    params.push(match kind {
                        ParamKind::Array { len } | ParamKind::ArrayRef { len, .. } => {
                            quote!(#name: &[#s; #len])
                        }
                        _ => quote!(#name: &[#s]),
                    });
                    let consts =
                        quote!(#name.iter().map(|&__deltad_e| #real::constant(__deltad_e)));
                    let (constant, made, arg) = match kind {
                        ParamKind::Slice { .. } => (
                            quote!(::deltad::__private::Cow::Owned(#consts.collect())),
                            quote!(::deltad::__private::input_slice(#tape, #name)),
                            quote!(::deltad::__private::Cow::Borrowed(&#input[..])),
                        ),
                        ParamKind::VecRef { .. } => (
                            quote!(::deltad::__private::Cow::Owned(#consts.collect())),
                            quote!(::deltad::__private::input_slice(#tape, #name)),
                            quote!(::deltad::__private::Cow::Borrowed(&#input)),
                        ),
                        ParamKind::Vec => (
                            quote!(#consts.collect::<::std::vec::Vec<_>>()),
                            quote!(::deltad::__private::input_slice(#tape, #name)),
                            quote!(::core::clone::Clone::clone(&#input)),
                        ),
                        ParamKind::Array { len } => (
                            quote!(::core::array::from_fn::<_, { #len }, _>(|__deltad_k| #real::constant(#name[__deltad_k]))),
                            quote!(::deltad::__private::input_array(#tape, ::core::array::from_fn::<_, { #len }, _>(|__deltad_k| #name[__deltad_k]))),
                            quote!(#input),
                        ),
                        ParamKind::ArrayRef { len, .. } => (
                            quote!(::deltad::__private::Cow::Owned(::core::array::from_fn::<_, { #len }, _>(|__deltad_k| #real::constant(#name[__deltad_k])))),
                            quote!(::deltad::__private::input_array(#tape, ::core::array::from_fn::<_, { #len }, _>(|__deltad_k| #name[__deltad_k]))),
                            quote!(::deltad::__private::Cow::Borrowed(&#input)),
                        ),
                        _ => unreachable!("has_compiled_convention"),
                    };
                    constants.push(constant);
                    inputs.push(quote!(let #input = #made;));
                    input_args.push(arg);
                    if matches!(
                        kind,
                        ParamKind::Slice { .. } | ParamKind::VecRef { .. } | ParamKind::Vec
                    ) {
                        recycle.push(quote!(#tape.keep_input_buffer(#input);));
                    }
                    reads.push(quote! {
                        for __deltad_k in 0..#name.len() {
                            *::deltad::__private::SliceSink::at(&mut #sink, __deltad_k) += #reader.scalar();
                        }
                    });
                    sink_bounds.push(quote!(#sink_type: ::deltad::__private::SliceSink<#s>));
                }
                _ => {
                    let ty = &param.ty;
                    params.push(quote!(#name: #ty));
                    // A structured parameter's value as a twin of constants
                    // (which needs no `Clone` of the user's type).
                    let passed = match &param.kind {
                        ParamKind::Structured { value, passing } => {
                            let constant = |ty: &syn::Type, of: TokenStream| quote!(<#ty as ::deltad::__private::Differentiable<#prim>>::constant::<#s>(#of));
                            match passing {
                                Passing::Value => constant(value, quote!(&#name)),
                                Passing::Ref => constant(value, quote!(#name)),
                                Passing::View => constant(value, quote!(&#name.to_owned())),
                                Passing::Slice { elem } => {
                                    let each = constant(elem, quote!(__deltad_e));
                                    quote!(#name.iter().map(|__deltad_e| #each).collect::<::std::vec::Vec<_>>())
                                }
                            }
                        }
                        _ => quote!(#name),
                    };
                    constants.push(passed.clone());
                    input_args.push(passed);
                    sink_bounds.push(quote!(#sink_type));
                }
            }
        }
        let body = |body: TokenStream| {
            if stub {
                quote!(::core::unreachable!())
            } else {
                body
            }
        };
        let struct_output = self.signature.struct_output();
        let opaque_output = self.signature.opaque_output();
        let (output, output_adjoint, sweep) = match self.signature.buffer_output() {
            None if opaque_output.is_some() => (
                quote!(<#opaque_output as ::deltad::__private::Differentiable<#prim>>::Twin<#s>),
                quote!(<#opaque_output as ::deltad::__private::Differentiable<#prim>>::Twin<#s>),
                quote!(::deltad::__private::seed_opaque_and_sweep::<#s, #opaque_output>(#tape, &__deltad_output, &#out, #adjoints);),
            ),
            // (A user type's twin, or the buffer an alias names: see the
            // runtime's `HeldResult`.)
            None if struct_output.is_some() => {
                let held = quote!(<<#struct_output as ::deltad::__private::HeldAs>::Form as ::deltad::__private::HeldResult<#struct_output, #s>>);
                (
                    quote!(#held::Held),
                    quote!(#held::Held),
                    quote!(#held::seed_held_and_sweep(#tape, &__deltad_output, &#out, #adjoints);),
                )
            }
            None => (
                quote!(#s),
                quote!(#s),
                quote!(#tape.gradient_into(__deltad_output.id(), #out, #adjoints);),
            ),
            Some(buffer) => (
                match &buffer {
                    BufferOutput::Vec => quote!(::std::vec::Vec<#s>),
                    BufferOutput::Array(len) => quote!([#s; #len]),
                },
                match &buffer {
                    BufferOutput::Vec => quote!(::std::vec::Vec<#s>),
                    BufferOutput::Array(len) => quote!([#s; #len]),
                },
                quote!(::deltad::__private::seed_buffer_and_sweep(#tape, &__deltad_output, &#out[..], #adjoints);),
            ),
        };
        let value = match self.signature.buffer_output() {
            None if opaque_output.is_some() => quote! {
                ::deltad::__private::opaque_values::<#s, #opaque_output>(&#record(#tape, #(#constants),*))
            },
            None if struct_output.is_some() => quote! {
                <<#struct_output as ::deltad::__private::HeldAs>::Form as ::deltad::__private::HeldResult<#struct_output, #s>>::held_of_recorded(&#record(#tape, #(#constants),*))
            },
            None => quote!(#record(#tape, #(#constants),*).value()),
            Some(_) => quote! {
                ::deltad::__private::recorded_values::<#s, _, #output>(&#record(#tape, #(#constants),*))
            },
        };
        let fwd_body = body(quote! {
            let _ = &#stack;
            let #tape = &::deltad::__private::Tape::<#s>::forward_only();
            #value
        });
        let adj_body = body(quote! {
            let _ = &#stack;
            <#s as ::deltad::__private::Scalar>::with_tape(|#tape, #adjoints| {
                #(#inputs)*
                let __deltad_output = #record(#tape, #(#input_args),*);
                #(#recycle)*
                #sweep
                let mut __deltad_reader = ::deltad::__private::GradReader::new(&#adjoints[..]);
                let _ = &mut __deltad_reader;
                #(#reads)*
            })
        });
        quote! {
            #[doc(hidden)]
            #[inline]
            #[allow(unused_mut, unused_variables, clippy::all)]
            pub fn #fwd_fn<#(#generics,)* #(#struct_generics,)* #s: ::deltad::__private::Scalar<Prim = #prim>, __DeltadR: ::deltad::__private::Record<#s>>(
                #stack: &mut __DeltadR,
                #(#params),*
            ) -> #output #where_clause {
                #fwd_body
            }

            #[doc(hidden)]
            #[inline]
            #[allow(unused_mut, unused_variables, clippy::all)]
            pub fn #adj_fn<#(#generics,)* #(#struct_generics,)* #s: ::deltad::__private::Scalar<Prim = #prim>, #(#sink_bounds),*>(
                #stack: &mut ::deltad::__private::Stack<#s>,
                #(#params,)*
                #out: #output_adjoint,
                #(#sinks),*
            ) #where_clause {
                #adj_body
            }
        }
    }
}

impl Generator<'_> {
    /// The recording pass of a compiled function, for callers on the tape:
    /// the forward pass and the adjoint run at once on the tape's scalar,
    /// and the function is recorded as one binding whose terms are its
    /// partial derivatives (with only constant inputs, nothing is recorded
    /// and the forward pass runs alone). The tape's scalar may be a dual
    /// number or a value of an outer tape: forward mode and nested
    /// derivatives through the node work as through any binding.
    pub(super) fn compiled_node_body(&self) -> TokenStream {
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
                            .map(::deltad::__private::twin_zeros_like::<#s, #elem>)
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
                            ::deltad::__private::twin_zeros_like::<#s, #value>(&#local);
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
                    let by_reference = matches!(param.ty, syn::Type::Reference(_));
                    fwd_args.push(if by_reference {
                        quote!(#name)
                    } else {
                        quote!(::core::clone::Clone::clone(&#name))
                    });
                    adj_args.push(quote!(#name));
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
            let #value: #s = ::deltad::__private::with_stack::<#s, _>(|#stack| {
                let #value: #s = #fwd(&mut *#stack, #(#fwd_args),*);
                #adj(&mut *#stack, #(#adj_args,)* <#s as ::deltad::__private::Scalar>::one(), #(#sinks),*);
                #value
            });
            let mut #partials: ::std::vec::Vec<#s> = ::std::vec::Vec::with_capacity(#ids.len());
            #(#collect)*
            ::deltad::__private::compiled_output(#tape, #value, &#ids, &#partials)
        }
    }
}
