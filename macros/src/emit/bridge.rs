//! The compiled passes of a function that stays on the tape, so compiled
//! callers can call it (they cannot know which path a callee took): its
//! forward pass runs the recording pass on constants (nothing recorded);
//! its adjoint records it on a fresh tape of the caller's scalar, sweeps it
//! with the output's adjoint, and adds the inputs' adjoints into the sinks.
//! A function value (a compiled caller's closure) is given to the recording
//! pass as a closure on the tape calling its `__on_tape` (one binding per
//! output real, whose partials its compiled passes compute), the reals it
//! captures made inputs of the fresh tape at the parameter's place, their
//! adjoints read back into it (`__add_captured`).

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
            p.kind.is_flat()
                || (structured && matches!(p.kind, ParamKind::Structured { .. }))
                || is_struct_param(&p.kind)
                || crate::types::user_elements(&p.kind).is_some()
                || matches!(
                    p.kind,
                    ParamKind::Function {
                        compiled: Some(_),
                        ..
                    }
                )
        })
}

impl Generator<'_> {
    pub(super) fn bridge(&self, stub: bool) -> TokenStream {
        if !has_compiled_convention(self.signature) {
            return TokenStream::new();
        }
        let prim = &self.prim;
        let s = Ident::new("__DeltadS", Span::call_site());
        let a = Ident::new("__DeltadA", Span::call_site());
        let lane = Ident::new("__deltad_bridge_lane", Span::mixed_site());
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
        // (The function parameters' types, which differ between the passes.)
        let mut fwd_fn_generics = Vec::new();
        let mut adj_fn_generics = Vec::new();
        let mut fn_params: Vec<(usize, TokenStream, TokenStream)> = Vec::new();
        for (index, param) in self.signature.params.iter().enumerate() {
            let name = &param.name;
            let sink = sink(index);
            let sink_type = format_ident!("__DeltadK{}", index);
            let input = format_ident!("__deltad_bridge_in{}", index, span = Span::mixed_site());
            let reader = quote!(__deltad_reader);
            // A function value: called on the tape through its
            // `__on_tape`, the reals it captures inputs of the tape.
            if let ParamKind::Function {
                compiled: Some(shape),
                ..
            } = &param.kind
            {
                let generic = super::compiled::function_generic(index);
                let module = crate::names::function_param_module(index);
                fwd_fn_generics.push(quote!(#generic: #module::Fwd<#s>));
                adj_fn_generics.push(quote!(#generic: #module::Adj<#s, #a>));
                fn_params.push((
                    params.len(),
                    quote!(#name: &#generic),
                    quote!(#name: &mut #generic),
                ));
                params.push(TokenStream::new());
                let args: Vec<Ident> = (0..shape.args.len())
                    .map(|k| format_ident!("__deltad_a{}", k, span = Span::mixed_site()))
                    .collect();
                constants.push(quote!(|#(#args),*| #name.__on_tape(#tape, &[], #(#args),*)));
                inputs.push(quote! {
                    let #input: ::std::vec::Vec<#real<'_, #s>> = {
                        let mut __deltad_values = ::std::vec::Vec::new();
                        #name.__captured(&mut __deltad_values);
                        __deltad_values.iter().map(|&__deltad_v| ::deltad::__private::input(#tape, __deltad_v)).collect()
                    };
                });
                input_args
                    .push(quote!(|#(#args),*| #name.__on_tape(#tape, &#input[..], #(#args),*)));
                reads.push(quote!(#name.__add_captured(&mut #reader);));
                continue;
            }
            sinks.push(quote!(mut #sink: #sink_type));
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
                        ::deltad::__private::HeldSink::<#value, #s, #a, #generic>::read(&mut #sink, &#name, &mut #reader);
                    });
                    sink_bounds.push(
                        quote!(#sink_type: ::deltad::__private::HeldSink<#value, #s, #a, #generic>),
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
                    reads.push(
                        quote!(#opaque::read_adjoint::<#a>(&#name, &mut #reader, &mut #sink);),
                    );
                    sink_bounds.push(quote!(#sink_type: ::deltad::__private::SliceSink<#a>));
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
                            ::deltad::__private::read_twin_adjoint::<#s, #a, #elem>(
                                __deltad_e,
                                &mut #reader,
                                &mut ::deltad::__private::SinkAt(&mut #sink, __deltad_k),
                            );
                        }
                    });
                    let adjoint_twin = quote!(::deltad::__private::TwinOf<#elem, #a>);
                    sink_bounds
                        .push(quote!(#sink_type: ::deltad::__private::TwinsSink<#adjoint_twin>));
                }
                ParamKind::Real => {
                    params.push(quote!(#name: #s));
                    constants.push(quote!(#real::constant(#name)));
                    inputs.push(quote!(let #input = ::deltad::__private::input(#tape, #name);));
                    input_args.push(quote!(#input));
                    reads.push(
                        quote!(::deltad::__private::ScalarSink::add(&mut #sink, #reader.cotangent::<#a>());),
                    );
                    sink_bounds.push(quote!(#sink_type: ::deltad::__private::ScalarSink<#a>));
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
                            *::deltad::__private::SliceSink::at(&mut #sink, __deltad_k) += #reader.cotangent::<#a>();
                        }
                    });
                    sink_bounds.push(quote!(#sink_type: ::deltad::__private::SliceSink<#a>));
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
                quote!(<#opaque_output as ::deltad::__private::Differentiable<#prim>>::Twin<#a>),
                quote! {
                    let __deltad_seed = <#opaque_output as ::deltad::__private::Differentiable<#prim>>::map_twin(
                        &#out,
                        &mut |__deltad_a: &#a| ::deltad::__private::Cotangent::<#s>::lane(*__deltad_a, #lane),
                    );
                    ::deltad::__private::seed_opaque_and_sweep::<#s, #opaque_output>(#tape, &__deltad_output, &__deltad_seed, #adjoints);
                },
            ),
            // (A user type's twin, or the buffer an alias names: see the
            // runtime's `HeldResult`.)
            None if struct_output.is_some() => {
                let form = quote!(<#struct_output as ::deltad::__private::HeldAs>::Form);
                let held = quote!(<#form as ::deltad::__private::HeldResult<#struct_output, #s>>);
                let held_adjoint =
                    quote!(<#form as ::deltad::__private::HeldResult<#struct_output, #a>>);
                (
                    quote!(#held::Held),
                    quote!(#held_adjoint::Held),
                    quote! {
                        let __deltad_seed = <#form as ::deltad::__private::HeldLanes<#struct_output, #s, #a>>::held_lane(&#out, #lane);
                        #held::seed_held_and_sweep(#tape, &__deltad_output, &__deltad_seed, #adjoints);
                    },
                )
            }
            None => (
                quote!(#s),
                quote!(#a),
                quote!(#tape.gradient_into(__deltad_output.id(), ::deltad::__private::Cotangent::<#s>::lane(#out, #lane), #adjoints);),
            ),
            Some(buffer) => (
                match &buffer {
                    BufferOutput::Vec => quote!(::std::vec::Vec<#s>),
                    BufferOutput::Array(len) => quote!([#s; #len]),
                },
                match &buffer {
                    BufferOutput::Vec => quote!(::std::vec::Vec<#a>),
                    BufferOutput::Array(len) => quote!([#a; #len]),
                },
                quote!(::deltad::__private::seed_buffer_and_sweep(#tape, &__deltad_output, &#out[..], #lane, #adjoints);),
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
        // One recording, and a sweep per lane of the adjoints (one for a
        // gradient; a compiled caller's vector reverse mode carries more).
        let adj_body = body(quote! {
            let _ = &#stack;
            <#s as ::deltad::__private::Scalar>::with_tape(|#tape, #adjoints| {
                #(#inputs)*
                let __deltad_output = #record(#tape, #(#input_args),*);
                #(#recycle)*
                for #lane in 0..<#a as ::deltad::__private::Cotangent<#s>>::LANES {
                    #sweep
                    let mut __deltad_reader = ::deltad::__private::GradReader::new(&#adjoints[..]).in_lane(#lane);
                    let _ = &mut __deltad_reader;
                    #(#reads)*
                }
            })
        });
        let keeps = super::compiled::keeps_something();
        let function_modules = super::compiled::function_param_modules(self.signature);
        let (mut fwd_params, mut adj_params) = (params.clone(), params);
        for (at, fwd, adj) in fn_params {
            fwd_params[at] = fwd;
            adj_params[at] = adj;
        }
        quote! {
            #keeps
            #function_modules

            #[doc(hidden)]
            #[inline]
            #[allow(unused_mut, unused_variables, clippy::all)]
            pub fn #fwd_fn<#(#generics,)* #(#struct_generics,)* #(#fwd_fn_generics,)* #s: ::deltad::__private::Scalar<Prim = #prim>, __DeltadR: ::deltad::__private::Record<#s>>(
                #stack: &mut __DeltadR,
                #(#fwd_params),*
            ) -> #output #where_clause {
                #fwd_body
            }

            #[doc(hidden)]
            #[inline]
            #[allow(unused_mut, unused_variables, clippy::all)]
            pub fn #adj_fn<#(#generics,)* #(#struct_generics,)* #(#adj_fn_generics,)* #s: ::deltad::__private::Scalar<Prim = #prim>, #a: ::deltad::__private::Cotangent<#s>, #(#sink_bounds),*>(
                #stack: &mut ::deltad::__private::Stack<#s>,
                #(#adj_params,)*
                #out: #output_adjoint,
                #(#sinks),*
            ) #where_clause {
                #adj_body
            }
        }
    }
}
