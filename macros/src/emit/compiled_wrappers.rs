//! The public derivatives of a function on the compiled path: the same
//! signatures as the tape's (`wrappers.rs`, `higher.rs`), their bodies
//! calling the generated forward pass and adjoint:
//!
//! * reverse mode on the machine float, the adjoints of slice parameters
//!   written straight into the `Grad`'s fields;
//! * forward mode: the forward pass on dual numbers, recording nothing;
//! * forward-over-reverse: both passes on dual numbers.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::Ident;

use super::compiled::{self, Keeps, ADJ_FN, FWD_FN, FWD_UNVALUED_FN};
use super::Generator;
use crate::analyze::mode::GradientMode;
use crate::names::items;
use crate::signature::{BufferOutput, ParamKind};

/// A parameter of a user type, borrowed (the wrappers take it as the
/// function does: by value or by reference).
fn struct_ref(param: &crate::signature::Param) -> TokenStream {
    let name = &param.name;
    match &param.kind {
        ParamKind::Structured {
            passing: crate::signature::Passing::Value,
            ..
        } => quote!(&#name),
        _ => quote!(#name),
    }
}

/// Which scalar the passes run on.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Scalar {
    Machine,
    Dual,
    /// Dual numbers with a chunk of tangents (`DualVec`), of a width.
    Chunk(Width),
    /// The adjoints of vector reverse mode (`Lanes`), of a width: only the
    /// adjoints' type, the values stay on the machine float.
    Lanes(Width),
    /// Values with the set of inputs they depend on (`Tracer`).
    Trace,
}

/// The width of a chunk pass: `CHUNK` tangents, or `HALF_CHUNK` for a last
/// chunk with few directions left (see `Generator::by_width`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Width {
    Full,
    Half,
    /// (Only for the rows of `jacobian`, where two outputs are common.)
    Quarter,
}

impl Width {
    /// The width, a constant expression.
    pub(super) fn lanes(self) -> TokenStream {
        match self {
            Width::Full => quote!(::deltad::__private::CHUNK),
            Width::Half => quote!(::deltad::__private::HALF_CHUNK),
            Width::Quarter => quote!(::deltad::__private::QUARTER_CHUNK),
        }
    }
}

/// Whether `grad` may run the adjoint alone (`Generator::adjoint_alone`).
pub(super) enum Alone {
    Never,
    Always,
    /// Where the forward passes of the callees keep nothing (their consts
    /// say it, see `compiled/keeps.rs`).
    IfCalleesKeepNothing,
}

impl Generator<'_> {
    pub(super) fn scalar_type(&self, scalar: Scalar) -> TokenStream {
        let prim = &self.prim;
        match scalar {
            Scalar::Machine => quote!(#prim),
            Scalar::Dual => quote!(::deltad::__private::Dual<#prim>),
            Scalar::Chunk(width) => {
                let lanes = width.lanes();
                quote!(::deltad::__private::DualVec<#prim, { #lanes }>)
            }
            Scalar::Lanes(width) => {
                let lanes = width.lanes();
                quote!(::deltad::__private::Lanes<#prim, { #lanes }>)
            }
            Scalar::Trace => quote!(::deltad::__private::Tracer<#prim>),
        }
    }

    /// The type of the forward pass's result on `scalar`: the scalar, or a
    /// `Vec` / array of it.
    pub(super) fn pass_output_type(&self, scalar: Scalar) -> TokenStream {
        let s = self.scalar_type(scalar);
        if let Some(ty) = self.signature.struct_output() {
            return quote!(::deltad::__private::TwinOf<#ty, #s>);
        }
        match self.signature.buffer_output() {
            None => s,
            Some(BufferOutput::Vec) => quote!(::std::vec::Vec<#s>),
            Some(BufferOutput::Array(len)) => quote!([#s; #len]),
        }
    }

    /// The local holding a parameter's dual inputs.
    fn dual_input(&self, name: &Ident) -> Ident {
        let name = syn::ext::IdentExt::unraw(name).to_string();
        format_ident!("__deltad_dual_{}", name, span = Span::mixed_site())
    }

    /// The local holding a parameter's dual adjoints.
    fn dual_adjoint(&self, name: &Ident) -> Ident {
        let name = syn::ext::IdentExt::unraw(name).to_string();
        format_ident!("__deltad_dual_adj_{}", name, span = Span::mixed_site())
    }

    /// The arguments of one call of a compiled pass. `last`: the call that
    /// may move by-value parameters (the others clone them). Of reals and
    /// buffers of reals, `Machine` passes the parameters as they are, which
    /// a nested derivative's passes on the caller's dual values also take.
    pub(super) fn pass_args(&self, scalar: Scalar, last: bool) -> Vec<TokenStream> {
        self.signature
            .params
            .iter()
            .map(|param| {
                let name = &param.name;
                let elements = crate::types::user_elements(&param.kind).is_some();
                match (&param.kind, scalar == Scalar::Machine) {
                    (ParamKind::Structured { .. }, true) if elements => {
                        let twin = self.twin_local(name);
                        quote!(&#twin[..])
                    }
                    (ParamKind::Structured { .. }, false) if elements => {
                        let input = self.dual_input(name);
                        quote!(&#input[..])
                    }
                    (ParamKind::Structured { .. }, true) => {
                        let twin = self.twin_local(name);
                        quote!(&#twin)
                    }
                    (ParamKind::Structured { .. }, false) => {
                        let input = self.dual_input(name);
                        quote!(&#input)
                    }
                    (ParamKind::Real, true) => quote!(#name),
                    (ParamKind::Array { .. }, true) => quote!(&#name),
                    (ParamKind::ArrayRef { .. }, true) => quote!(#name),
                    (kind, true) if kind.is_active() => quote!(&#name[..]),
                    (ParamKind::Real, false) => {
                        let input = self.dual_input(name);
                        quote!(#input)
                    }
                    (ParamKind::Array { .. } | ParamKind::ArrayRef { .. }, false) => {
                        let input = self.dual_input(name);
                        quote!(&#input)
                    }
                    (kind, false) if kind.is_active() => {
                        let input = self.dual_input(name);
                        quote!(&#input[..])
                    }
                    _ => super::plain_argument(param, last),
                }
            })
            .collect()
    }

    /// The statements making the dual inputs of type `dual`, tangents from
    /// the `TangentSeeds` local `seeds` in input leaf order (`Seeds` for
    /// `Dual`, `ChunkSeeds` for `DualVec`). (Reals and buffers of reals over
    /// any scalar: the machine float here, the caller's dual values in a
    /// nested `jvp`, `compiled_nested.rs`.)
    ///
    /// With `reusing` (a local `Reusing` record), buffers of reals are made
    /// in the memory it holds; [`Self::give_back_dual_inputs`] returns them.
    pub(super) fn compiled_dual_inputs(
        &self,
        seeds: &Ident,
        dual: &TokenStream,
        reusing: Option<&Ident>,
    ) -> Vec<TokenStream> {
        let prim = &self.prim;
        let seed = |value: TokenStream| quote!(::deltad::__private::TangentSeeds::seed(&mut #seeds, #value));
        self.signature
            .params
            .iter()
            .filter_map(|param| {
                let name = &param.name;
                let input = self.dual_input(name);
                match &param.kind {
                    kind if crate::types::user_elements(kind).is_some() => {
                        let elem = crate::types::user_elements(kind);
                        Some(quote! {
                            let #input: ::std::vec::Vec<::deltad::__private::TwinOf<#elem, #dual>> =
                                #name.iter().map(|__deltad_e| ::deltad::__private::twin_duals::<#prim, #elem, _>(__deltad_e, &mut #seeds)).collect();
                        })
                    }
                    ParamKind::Structured { value, .. } => {
                        let borrowed = struct_ref(param);
                        Some(quote! {
                            let #input: ::deltad::__private::TwinOf<#value, #dual> =
                                ::deltad::__private::twin_duals::<#prim, #value, _>(#borrowed, &mut #seeds);
                        })
                    }
                    ParamKind::Real => {
                        let seeded = seed(quote!(#name));
                        Some(quote!(let #input: #dual = #seeded;))
                    }
                    ParamKind::Array { len } | ParamKind::ArrayRef { len, .. } => {
                        let values = match param.kind {
                            ParamKind::Array { .. } => quote!(&#name),
                            _ => quote!(&*#name),
                        };
                        Some(quote! {
                            let #input: [#dual; #len] =
                                ::deltad::__private::TangentSeeds::seed_array(&mut #seeds, #values);
                        })
                    }
                    kind if seeded_buffer(kind) => {
                        let empty = match reusing {
                            Some(record) => quote!(#record.empty(#name.len())),
                            None => quote!(::std::vec::Vec::with_capacity(#name.len())),
                        };
                        Some(quote! {
                            let mut #input: ::std::vec::Vec<#dual> = #empty;
                            ::deltad::__private::TangentSeeds::seed_all(&mut #seeds, &#name[..], &mut #input);
                        })
                    }
                    _ => None,
                }
            })
            .collect()
    }

    /// The statements giving the buffers of reals made by
    /// [`Self::compiled_dual_inputs`] back to the `Reusing` record
    /// `reusing`, once the pass that read them is over.
    pub(super) fn give_back_dual_inputs(&self, reusing: &Ident) -> Vec<TokenStream> {
        self.signature
            .params
            .iter()
            .filter(|param| seeded_buffer(&param.kind))
            .map(|param| {
                let input = self.dual_input(&param.name);
                quote!(#reusing.give_back(#input);)
            })
            .collect()
    }

    /// The sinks of the adjoints: into the `Grad` `grad` (machine floats),
    /// or into the dual adjoint locals.
    fn pass_sinks(&self, scalar: Scalar, grad: &Ident) -> Vec<TokenStream> {
        let s = self.scalar_type(scalar);
        self.signature
            .params
            .iter()
            .map(|param| {
                let name = &param.name;
                let elements = crate::types::user_elements(&param.kind).is_some();
                match (&param.kind, scalar == Scalar::Machine) {
                    (ParamKind::Structured { .. }, true) if elements => {
                        let adjoint = self.twin_adjoint_local(name);
                        quote!(&mut #adjoint[..])
                    }
                    (ParamKind::Structured { .. }, false) if elements => {
                        let adjoint = self.dual_adjoint(name);
                        quote!(&mut #adjoint[..])
                    }
                    (ParamKind::Structured { .. }, true) => {
                        let adjoint = self.twin_adjoint_local(name);
                        quote!(&mut #adjoint)
                    }
                    (ParamKind::Structured { .. }, false) => {
                        let adjoint = self.dual_adjoint(name);
                        quote!(&mut #adjoint)
                    }
                    (ParamKind::Real, true) => quote!(&mut #grad.#name),
                    (kind, true) if kind.is_active() => quote!(&mut #grad.#name[..]),
                    (ParamKind::Real, false) => {
                        let adjoint = self.dual_adjoint(name);
                        quote!(&mut #adjoint)
                    }
                    (kind, false) if kind.is_active() => {
                        let adjoint = self.dual_adjoint(name);
                        quote!(&mut #adjoint[..])
                    }
                    _ => quote!(::deltad::__private::Discard::<#s>::new()),
                }
            })
            .collect()
    }

    /// `Grad` with zeros shaped like the parameters (a buffer of a user
    /// type's field empty: the run sets it, `struct_passes`).
    fn zero_grad(&self) -> TokenStream {
        let grad = Ident::new(items::GRAD, Span::call_site());
        let fields = self.signature.params.iter().filter_map(|param| {
            let name = &param.name;
            Some(match &param.kind {
                // (Set after the adjoint runs: `struct_passes`.)
                kind if crate::types::user_elements(kind).is_some() => {
                    quote!(#name: ::std::vec::Vec::new())
                }
                ParamKind::Structured { value, .. } => {
                    let prim = &self.prim;
                    let borrowed = struct_ref(param);
                    quote!(#name: ::deltad::__private::zeros_like::<#prim, #value>(#borrowed))
                }
                ParamKind::Real => quote!(#name: 0.0),
                ParamKind::Array { len } | ParamKind::ArrayRef { len, .. } => {
                    quote!(#name: [0.0; #len])
                }
                kind if kind.is_active() => quote!(#name: ::std::vec![0.0; #name.len()]),
                _ => return None,
            })
        });
        let phantom = self
            .no_active_params()
            .then(|| quote!(__deltad_element: ::core::marker::PhantomData,));
        quote!(#grad { #(#fields,)* #phantom })
    }

    /// The result in the user's type, from the forward pass's result
    /// `value` on the machine float (a user type's twin converted).
    fn user_result(&self, value: TokenStream) -> TokenStream {
        let prim = &self.prim;
        match self.signature.struct_output() {
            Some(ty) => quote!(::deltad::__private::twin_value::<#prim, #ty>(&#value)),
            None => value,
        }
    }

    /// The number of reals of the result `value`, the seed selecting real
    /// `k` of it, and one of zeros (a buffer or a user type's twin).
    fn result_seeds(&self, value: &Ident, k: &Ident) -> (TokenStream, TokenStream, TokenStream) {
        let prim = &self.prim;
        match self.signature.struct_output() {
            Some(ty) => (
                quote!(::deltad::__private::twin_leaf_count::<#prim, #ty>(&#value)),
                quote!(::deltad::__private::twin_unit::<#prim, #ty>(&#value, #k)),
                quote!(::deltad::__private::twin_zeros_like::<#prim, #prim, #ty>(&#value)),
            ),
            None => {
                let count = quote!(::deltad::__private::ResultBuffer::elements(&#value).len());
                (
                    count.clone(),
                    quote!(::deltad::__private::unit_seed::<#prim, _>(#count, #k)),
                    quote!(::deltad::__private::zeros::<#prim, _>(#count)),
                )
            }
        }
    }

    fn no_active_params(&self) -> bool {
        !self.signature.params.iter().any(|p| p.kind.is_active())
    }

    /// The local holding a parameter of a user type as a twin of machine
    /// floats.
    fn twin_local(&self, name: &Ident) -> Ident {
        let name = syn::ext::IdentExt::unraw(name).to_string();
        format_ident!("__deltad_twin_{}", name, span = Span::mixed_site())
    }

    /// The local holding the adjoint twin of a parameter of a user type.
    fn twin_adjoint_local(&self, name: &Ident) -> Ident {
        let name = syn::ext::IdentExt::unraw(name).to_string();
        format_ident!("__deltad_twin_adj_{}", name, span = Span::mixed_site())
    }

    /// For a reverse evaluation on the machine float: the twins of the
    /// parameters of user types and their zero adjoints (before), and the
    /// adjoints added into the `Grad` `grad` (after; `accumulate` false: a
    /// `Grad` of zeros, whose fields of user types are set instead).
    fn struct_passes(&self, grad: &Ident, accumulate: bool) -> (TokenStream, TokenStream) {
        let prim = &self.prim;
        let mut before = Vec::new();
        let mut after = Vec::new();
        for param in &self.signature.params {
            let ParamKind::Structured { value, .. } = &param.kind else {
                continue;
            };
            let name = &param.name;
            let (twin, adjoint) = (self.twin_local(name), self.twin_adjoint_local(name));
            before.push(self.struct_value(param, value));
            if let Some(elem) = crate::types::user_elements(&param.kind) {
                // The values themselves read as twins, and the gradient's
                // values written as twins, where the type is laid out as
                // its twin (else copies, in buffers the thread keeps for
                // the next call).
                before.push(quote! {
                    let mut #adjoint = ::deltad::__private::adjoint_twins_of::<#prim, #elem>(
                        &mut #grad.#name, &#name[..], #accumulate,
                    );
                });
                after.push(quote! {
                    #adjoint.finish::<#prim>();
                    ::core::mem::drop(#twin);
                });
                continue;
            }
            let borrowed = struct_ref(param);
            before.push(quote! {
                let mut #adjoint: ::deltad::__private::TwinOf<#value, #prim> =
                    ::deltad::__private::twin_zeros::<#prim, #value>(#borrowed);
            });
            after.push(if accumulate {
                quote! {
                    ::deltad::__private::add_twin_gradient::<#prim, #value>(&mut #grad.#name, &#adjoint);
                }
            } else {
                quote! {
                    #grad.#name = ::deltad::__private::twin_gradient_owned::<#prim, #value>(#adjoint);
                }
            });
        }
        (quote!(#(#before)*), quote!(#(#after)*))
    }

    /// The runtime function lending a stack to the passes: a new empty one
    /// where the forward pass keeps nothing, else the pool's.
    pub(super) fn stack_provider(&self) -> Ident {
        let name = if self.keeps.nothing() {
            "with_empty_stack"
        } else {
            "with_stack"
        };
        Ident::new(name, Span::call_site())
    }

    /// Runs `body` with a stack of `scalar`s named by the returned ident (a
    /// new empty one if the forward pass keeps nothing, else the pool's).
    fn with_stack(&self, scalar: Scalar, body: TokenStream) -> (Ident, TokenStream) {
        let s = self.scalar_type(scalar);
        let stack = Ident::new("__deltad_stack", Span::mixed_site());
        let with = self.stack_provider();
        (
            stack.clone(),
            quote! {
                ::deltad::__private::#with::<#s, _>(|#stack| { #body })
            },
        )
    }

    /// The one differentiated parameter, if it is a real, the result is a
    /// real and the gradient is computed in forward mode
    /// (`analyze/mode.rs`), and whether the derivative is checked.
    fn forward_input(&self) -> Option<(&Ident, bool)> {
        let compiled = self.compiled?;
        let mut active = self.signature.params.iter().filter(|p| p.kind.is_active());
        let input = active.next()?;
        let one_real = active.next().is_none()
            && matches!(input.kind, ParamKind::Real)
            && matches!(self.signature.output, crate::signature::Output::Real);
        if !one_real {
            return None;
        }
        match crate::analyze::mode::gradient_mode(&compiled.function) {
            GradientMode::Reverse => None,
            GradientMode::Forward => Some((&input.name, false)),
            GradientMode::ForwardChecked => Some((&input.name, true)),
        }
    }

    /// One forward-mode evaluation: the forward pass on dual numbers whose
    /// input's tangent is 1, adding `seed` times the result's tangent into
    /// the `Grad` `grad`; the value. Where a derivative is `checked` and
    /// not finite, the reverse evaluation `reverse` instead.
    fn compiled_forward(
        &self,
        input: &Ident,
        seed: TokenStream,
        grad: &Ident,
        reverse: Option<TokenStream>,
    ) -> TokenStream {
        let prim = &self.prim;
        let fwd = Ident::new(FWD_FN, Span::call_site());
        let dual = self.dual_input(input);
        let args = self.pass_args(Scalar::Dual, true);
        let add = quote! {
            #grad.#input += #seed * __deltad_result.tangent;
            __deltad_result.value
        };
        let result = match reverse {
            None => add,
            Some(reverse) => quote! {
                if __deltad_result.tangent.is_finite() {
                    #add
                } else {
                    #reverse
                }
            },
        };
        quote! {{
            let #dual = ::deltad::__private::Dual::<#prim>::new(
                #input,
                <#prim as ::deltad::__private::Primitive>::ONE,
            );
            let __deltad_result: ::deltad::__private::Dual<#prim> =
                #fwd(&mut ::deltad::__private::NoRecord, #(#args),*);
            #result
        }}
    }

    /// One gradient evaluation on the machine float with output adjoint
    /// `seed`, adding the gradient into the `Grad` `grad`; the value, or
    /// `()` where the caller does not read it (`value`) and the adjoint
    /// runs alone (`adjoint_alone`). Forward mode where it computes the
    /// same gradient for less.
    fn compiled_reverse(
        &self,
        seed: TokenStream,
        grad: &Ident,
        accumulate: bool,
        value_read: bool,
    ) -> TokenStream {
        match self.forward_input() {
            Some((input, false)) => self.compiled_forward(input, seed, grad, None),
            Some((input, true)) => {
                let reverse = self.reverse_passes(seed.clone(), grad, accumulate, true);
                self.compiled_forward(input, seed, grad, Some(reverse))
            }
            None => self.reverse_passes(seed, grad, accumulate, value_read),
        }
    }

    /// `compiled_reverse` in reverse mode.
    fn reverse_passes(
        &self,
        seed: TokenStream,
        grad: &Ident,
        accumulate: bool,
        value_read: bool,
    ) -> TokenStream {
        let (fwd, adj) = (
            Ident::new(FWD_FN, Span::call_site()),
            Ident::new(ADJ_FN, Span::call_site()),
        );
        let fwd_args = self.pass_args(Scalar::Machine, false);
        let adj_args = self.pass_args(Scalar::Machine, true);
        let sinks = self.pass_sinks(Scalar::Machine, grad);
        let stack = Ident::new("__deltad_stack", Span::mixed_site());
        let value = Ident::new("__deltad_value", Span::mixed_site());
        let output = self.pass_output_type(Scalar::Machine);
        // A buffer result's seed: checked against the result, copied into
        // the adjoint's own buffer; a user type's: its twin.
        let prim = &self.prim;
        let seed = match self.signature.buffer_output() {
            None if self.signature.struct_output().is_some() => {
                let ty = self.signature.struct_output();
                quote!(::deltad::__private::twin_values::<#prim, #ty>(#seed))
            }
            None => seed,
            Some(_) => quote! {
                ::deltad::__private::seed_of(
                    &#seed[..],
                    ::deltad::__private::ResultBuffer::elements(&#value).len(),
                )
            },
        };
        let adjoint = quote! {
            #adj(&mut *#stack, #(#adj_args,)* #seed, #(#sinks),*);
            #stack.assert_emptied();
        };
        let passes = if value_read {
            quote! {
                let #value: #output = #fwd(&mut *#stack, #(#fwd_args),*);
                #adjoint
                #value
            }
        } else {
            self.alone_or(
                adjoint.clone(),
                quote! {
                    let _: #output = #fwd(&mut *#stack, #(#fwd_args),*);
                    #adjoint
                },
            )
        };
        let (_, run) = self.with_stack(Scalar::Machine, passes);
        let (before, after) = self.struct_passes(grad, accumulate);
        if before.is_empty() {
            return run;
        }
        quote! {{
            #before
            let #value = #run;
            #after
            #value
        }}
    }

    /// `tape_stats`: what one forward pass keeps on a fresh stack, and the
    /// stack's size once the adjoint has run too.
    pub(super) fn compiled_stats_body(&self) -> TokenStream {
        let prim = &self.prim;
        let (fwd, adj) = (
            Ident::new(FWD_FN, Span::call_site()),
            Ident::new(ADJ_FN, Span::call_site()),
        );
        let fwd_args = self.pass_args(Scalar::Machine, false);
        let adj_args = self.pass_args(Scalar::Machine, true);
        let stack = Ident::new("__deltad_stack", Span::mixed_site());
        let value = Ident::new("__deltad_value", Span::mixed_site());
        let kept = Ident::new("__deltad_kept", Span::mixed_site());
        let output = self.pass_output_type(Scalar::Machine);
        let seed = if matches!(self.signature.output, crate::signature::Output::Real) {
            quote!(<#prim as ::deltad::__private::Primitive>::ONE)
        } else {
            let unused = Ident::new("__deltad_k", Span::mixed_site());
            self.result_seeds(&value, &unused).2
        };
        let sinks = self
            .signature
            .params
            .iter()
            .map(|_| quote!(::deltad::__private::Discard::<#prim>::new()));
        let unused = Ident::new("__deltad_unused", Span::mixed_site());
        let (before, _) = self.struct_passes(&unused, false);
        // (A `Grad` for the adjoints of buffers of user types to go to.)
        let unused_grad = (!before.is_empty()).then(|| {
            let (zero, grad_type) = (self.zero_grad(), self.grad_type());
            quote!(let mut #unused: #grad_type = #zero;)
        });
        quote! {
            #unused_grad
            #before
            let mut #stack = ::deltad::__private::Stack::<#prim>::new();
            let #value: #output = #fwd(&mut #stack, #(#fwd_args),*);
            let mut #kept = ::deltad::__private::TapeStats::of_stack(#stack.stats());
            #adj(&mut #stack, #(#adj_args,)* #seed, #(#sinks),*);
            #kept.peak_bytes = #stack.stats().bytes_reserved;
            #kept
        }
    }

    /// Whether `grad` may run the adjoint alone: where the forward pass
    /// keeps nothing for it (so the adjoint reads only the arguments), and
    /// does nothing else that can be seen (no printing or assertions, no
    /// `&mut` results), so its only product is the value, which `grad`
    /// drops. (Reverse mode only: a forward-mode gradient is one pass
    /// anyway.)
    pub(super) fn adjoint_alone(&self) -> Alone {
        let Some(compiled) = self.compiled else {
            return Alone::Never;
        };
        let mut effects = false;
        compiled.function.body.each_stmt(&mut |stmt| {
            effects |= matches!(stmt.kind, crate::ir::StmtKind::Effect(_));
        });
        let possible = !effects
            && self.forward_input().is_none()
            && matches!(self.signature.output, crate::signature::Output::Real)
            && !self
                .signature
                .params
                .iter()
                .any(|p| matches!(p.kind, ParamKind::InOut { .. }));
        match &self.keeps {
            _ if !possible => Alone::Never,
            Keeps::Nothing => Alone::Always,
            Keeps::Something => Alone::Never,
            Keeps::IfCallees(_) => Alone::IfCalleesKeepNothing,
        }
    }

    /// True if the forward pass keeps something for the adjoint, as an
    /// expression (a const where its callees decide).
    pub(super) fn keeps_value(&self) -> TokenStream {
        match &self.keeps {
            Keeps::Nothing => quote!(false),
            Keeps::Something => quote!(true),
            Keeps::IfCallees(_) => {
                let keeps = compiled::keeps_const();
                quote!(#keeps)
            }
        }
    }

    /// `alone` where the adjoint may run alone (`adjoint_alone`), else
    /// `both`; where what the callees keep decides, both, chosen by the
    /// const that says it (the compiler keeps one).
    pub(super) fn alone_or(&self, alone: TokenStream, both: TokenStream) -> TokenStream {
        match self.adjoint_alone() {
            Alone::Always => alone,
            Alone::Never => both,
            Alone::IfCalleesKeepNothing => {
                let keeps = compiled::keeps_const();
                quote!(if #keeps { #both } else { #alone })
            }
        }
    }

    /// `grad`'s body where the adjoint runs alone (`adjoint_alone`): the
    /// gradient without computing the value.
    pub(super) fn compiled_grad_body(&self) -> Option<TokenStream> {
        if matches!(self.adjoint_alone(), Alone::Never) {
            return None;
        }
        let prim = &self.prim;
        let grad = Ident::new("__deltad_grad", Span::mixed_site());
        let zero = self.zero_grad();
        let one = quote!(<#prim as ::deltad::__private::Primitive>::ONE);
        let run = self.compiled_reverse(one, &grad, false, false);
        Some(quote! {
            let mut #grad = #zero;
            #run;
            #grad
        })
    }

    pub(super) fn compiled_value_and_grad_body(&self, seed: Option<&Ident>) -> TokenStream {
        let prim = &self.prim;
        let grad = Ident::new("__deltad_grad", Span::mixed_site());
        let zero = self.zero_grad();
        let seed = match seed {
            Some(seed) => quote!(#seed),
            None => quote!(<#prim as ::deltad::__private::Primitive>::ONE),
        };
        let run = self.compiled_reverse(seed, &grad, false, true);
        let result = self.user_result(quote!(__deltad_result));
        quote! {
            let mut #grad = #zero;
            let __deltad_result = #run;
            (#result, #grad)
        }
    }

    pub(super) fn compiled_grad_into_body(&self) -> TokenStream {
        let prim = &self.prim;
        let into = self.names.grad_into();
        let checks = self.signature.params.iter().filter_map(|param| {
            let name = &param.name;
            let field = syn::ext::IdentExt::unraw(name).to_string();
            match &param.kind {
                ParamKind::Slice { .. } | ParamKind::VecRef { .. } | ParamKind::Vec => {
                    Some(quote! {
                        if #into.#name.is_empty() {
                            #into.#name.resize(#name.len(), 0.0);
                        }
                        ::core::assert_eq!(
                            #into.#name.len(),
                            #name.len(),
                            "deltad: grad_into: `grad.{}` has {} entries but the argument has {}",
                            #field,
                            #into.#name.len(),
                            #name.len()
                        );
                    })
                }
                _ => None,
            }
        });
        let run = self.compiled_reverse(
            quote!(<#prim as ::deltad::__private::Primitive>::ONE),
            &into,
            true,
            true,
        );
        quote! {
            #(#checks)*
            #run
        }
    }

    /// `jacobian` on the compiled path: one forward pass, then one reverse
    /// sweep per chunk of up to `CHUNK` output reals, their adjoints in the
    /// lanes of a `Lanes` (vector reverse mode: what the sweep evaluates
    /// again, its partials and the values it pops are shared by the rows of
    /// a chunk), each from a copy of what the forward pass kept; with
    /// `choose`, forward chunks (`jacobian_fwd`) instead where the output
    /// has more reals than the input (known after the forward pass, which is
    /// then the only work wasted).
    pub(super) fn compiled_jacobian_body(&self, choose: bool) -> TokenStream {
        if matches!(self.signature.output, crate::signature::Output::Real) {
            let body = self.compiled_value_and_grad_body(None);
            return quote! {
                let (__deltad_value, __deltad_row) = { #body };
                (__deltad_value, ::std::vec![__deltad_row])
            };
        }
        let prim = &self.prim;
        let (fwd, adj) = (
            Ident::new(FWD_FN, Span::call_site()),
            Ident::new(ADJ_FN, Span::call_site()),
        );
        let fwd_args = self.pass_args(Scalar::Machine, false);
        let adj_args = self.pass_args(Scalar::Machine, false);
        let output = self.pass_output_type(Scalar::Machine);
        let (stack, value, kept, rows, count, first, lane) = (
            Ident::new("__deltad_stack", Span::mixed_site()),
            Ident::new("__deltad_value", Span::mixed_site()),
            Ident::new("__deltad_kept", Span::mixed_site()),
            Ident::new("__deltad_rows", Span::mixed_site()),
            Ident::new("__deltad_count", Span::mixed_site()),
            Ident::new("__deltad_first", Span::mixed_site()),
            Ident::new("__deltad_lane", Span::mixed_site()),
        );
        let values = self.struct_values();
        let (count_of, _, _) = self.result_seeds(&value, &first);
        let result = self.user_result(quote!(#value));
        let switch = choose.then(|| {
            let inputs = self.input_count();
            let forward = self.call_jacobian_fwd();
            quote! {
                if #count > #inputs {
                    return #forward;
                }
            }
        });
        let grad = Ident::new(items::GRAD, Span::call_site());
        let phantom = self
            .no_active_params()
            .then(|| quote!(__deltad_element: ::core::marker::PhantomData,));
        // The rows `first..` of one chunk, on adjoints of a width.
        let chunk = |width: Width| {
            let dual = self.scalar_type(Scalar::Lanes(width));
            let lanes = width.lanes();
            let locals = self.dual_adjoint_locals(&dual);
            let fields = self.dual_adjoint_fields(&dual, &quote!(0[#lane]));
            let sinks = self.pass_sinks(Scalar::Lanes(width), &grad);
            let seed = match self.signature.struct_output() {
                Some(ty) => {
                    quote!(::deltad::__private::twin_lane_seed::<#prim, #dual, #ty>(&#value, #first))
                }
                None => quote!(::deltad::__private::lane_seed::<#prim, #dual, _>(#count, #first)),
            };
            quote! {{
                #(#locals)*
                #adj(&mut *#stack, #(#adj_args,)* #seed, #(#sinks),*);
                for #lane in 0..::core::cmp::min(#lanes, #count - #first) {
                    #rows.push(#grad { #(#fields,)* #phantom });
                }
            }}
        };
        let (full, half, quarter) = (
            chunk(Width::Full),
            chunk(Width::Half),
            chunk(Width::Quarter),
        );
        let (_, run) = self.with_stack(
            Scalar::Machine,
            quote! {
                #values
                let #value: #output = #fwd(&mut *#stack, #(#fwd_args),*);
                let #count = #count_of;
                #switch
                let mut #rows = ::std::vec::Vec::with_capacity(#count);
                let mut __deltad_chunk = |#stack: &mut ::deltad::__private::Stack<#prim>, #first: usize| {
                    if #count - #first > ::deltad::__private::HALF_CHUNK {
                        #full
                    } else if #count - #first > ::deltad::__private::QUARTER_CHUNK {
                        #half
                    } else {
                        #quarter
                    }
                };
                if #count <= ::deltad::__private::CHUNK {
                    __deltad_chunk(&mut *#stack, 0);
                } else {
                    // A copy of what the forward pass kept, in a second
                    // pooled stack, for the chunks after the first.
                    ::deltad::__private::with_stack::<#prim, _>(|#kept| {
                        ::core::clone::Clone::clone_from(&mut *#kept, &*#stack);
                        let mut #first = 0;
                        while #first < #count {
                            if #first > 0 {
                                ::core::clone::Clone::clone_from(&mut *#stack, &*#kept);
                            }
                            __deltad_chunk(&mut *#stack, #first);
                            #first += ::deltad::__private::CHUNK;
                        }
                    });
                }
                (#result, #rows)
            },
        );
        run
    }

    /// The parameters of user types as twins of machine floats, for the
    /// passes on them (`twin_local`).
    fn struct_values(&self) -> TokenStream {
        let values = self
            .signature
            .params
            .iter()
            .filter_map(|param| match &param.kind {
                ParamKind::Structured { value, .. } => Some(self.struct_value(param, value)),
                _ => None,
            });
        quote!(#(#values)*)
    }

    /// A parameter of the user type `value` (or a buffer of them) as its
    /// twin of machine floats, in `twin_local`: the values themselves where
    /// a buffer's type is laid out as its twin.
    fn struct_value(&self, param: &crate::signature::Param, value: &syn::Type) -> TokenStream {
        let prim = &self.prim;
        let (name, twin) = (&param.name, self.twin_local(&param.name));
        match crate::types::user_elements(&param.kind) {
            Some(elem) => quote! {
                let #twin = ::deltad::__private::twins_of::<#prim, #elem>(&#name[..]);
            },
            None => {
                let borrowed = struct_ref(param);
                quote! {
                    let #twin: ::deltad::__private::TwinOf<#value, #prim> =
                        ::deltad::__private::twin_values::<#prim, #value>(#borrowed);
                }
            }
        }
    }

    /// `jvp`: the forward pass on dual numbers whose tangents come from
    /// `tangent`, recording nothing.
    pub(super) fn compiled_jvp_body(&self, tangent: &Ident) -> TokenStream {
        let prim = &self.prim;
        let flatten = Ident::new(items::FLATTEN_FN, Span::call_site());
        let fwd = Ident::new(FWD_FN, Span::call_site());
        let seeds = self.names.local("seeds");
        let inputs = self.compiled_dual_inputs(&seeds, &self.scalar_type(Scalar::Dual), None);
        let args = self.pass_args(Scalar::Dual, true);
        let dual_output = self.pass_output_type(Scalar::Dual);
        let split = match self.signature.buffer_output() {
            None if self.signature.struct_output().is_some() => {
                let ty = self.signature.struct_output();
                let dual = quote!(::deltad::__private::Dual<#prim>);
                quote! {(
                    ::deltad::__private::twin_gradient::<#dual, #ty>(&__deltad_result, |__deltad_d| __deltad_d.value),
                    ::deltad::__private::twin_gradient::<#dual, #ty>(&__deltad_result, |__deltad_d| __deltad_d.tangent),
                )}
            }
            None => quote!((__deltad_result.value, __deltad_result.tangent)),
            Some(_) => {
                let output = self.pass_output_type(Scalar::Machine);
                quote!(::deltad::__private::split_dual::<#prim, _, #output>(&__deltad_result))
            }
        };
        quote! {
            let mut __deltad_flat = ::std::vec::Vec::new();
            #flatten(#tangent, &mut __deltad_flat);
            let mut #seeds = ::deltad::__private::Seeds::<#prim>::from_flat(__deltad_flat);
            #(#inputs)*
            let __deltad_result: #dual_output =
                #fwd(&mut ::deltad::__private::NoRecord, #(#args),*);
            #split
        }
    }

    /// Per differentiated parameter, a local of adjoints on `dual` (the
    /// sinks `pass_sinks` gives a pass on a scalar other than the machine
    /// float), zeros.
    fn dual_adjoint_locals(&self, dual: &TokenStream) -> Vec<TokenStream> {
        let zero = quote!(<#dual as ::deltad::__private::Scalar>::zero());
        let mut locals = Vec::new();
        for param in &self.signature.params {
            let name = &param.name;
            let adjoint = self.dual_adjoint(name);
            locals.push(match &param.kind {
                kind if crate::types::user_elements(kind).is_some() => {
                    let elem = crate::types::user_elements(kind);
                    quote! {
                        let mut #adjoint: ::std::vec::Vec<::deltad::__private::TwinOf<#elem, #dual>> =
                            ::deltad::__private::twins_zeros::<#dual, #elem>(&#name[..]);
                    }
                }
                ParamKind::Structured { value, .. } => {
                    let borrowed = struct_ref(param);
                    quote! {
                        let mut #adjoint: ::deltad::__private::TwinOf<#value, #dual> =
                            ::deltad::__private::twin_zeros::<#dual, #value>(#borrowed);
                    }
                }
                ParamKind::Real => quote!(let mut #adjoint: #dual = #zero;),
                ParamKind::Array { len } | ParamKind::ArrayRef { len, .. } => {
                    quote!(let mut #adjoint: [#dual; #len] = [#zero; #len];)
                }
                kind if kind.is_active() => {
                    quote!(let mut #adjoint: ::std::vec::Vec<#dual> = ::std::vec![#zero; #name.len()];)
                }
                _ => continue,
            });
        }
        locals
    }

    /// The `Grad` fields of `part` (`value`, `tangent`, `tangents[lane]`) of
    /// each dual adjoint in the locals of `dual_adjoint_locals`.
    fn dual_adjoint_fields(&self, dual: &TokenStream, part: &TokenStream) -> Vec<TokenStream> {
        let mut fields = Vec::new();
        for param in &self.signature.params {
            let name = &param.name;
            let adjoint = self.dual_adjoint(name);
            fields.push(match &param.kind {
                kind if crate::types::user_elements(kind).is_some() => {
                    let elem = crate::types::user_elements(kind);
                    quote! {
                        #name: ::deltad::__private::twins_gradient::<#dual, #elem>(
                            &#adjoint,
                            |__deltad_d| __deltad_d.#part,
                        )
                    }
                }
                ParamKind::Structured { value, .. } => quote! {
                    #name: ::deltad::__private::twin_gradient::<#dual, #value>(
                        &#adjoint,
                        |__deltad_d| __deltad_d.#part,
                    )
                },
                ParamKind::Real => quote!(#name: #adjoint.#part),
                ParamKind::Array { .. } | ParamKind::ArrayRef { .. } => {
                    quote!(#name: ::core::array::from_fn(|__deltad_k| #adjoint[__deltad_k].#part))
                }
                kind if kind.is_active() => {
                    quote!(#name: #adjoint.iter().map(|__deltad_d| __deltad_d.#part).collect())
                }
                _ => continue,
            });
        }
        fields
    }

    /// Pushes every dual adjoint real of the locals of `dual_adjoint_locals`
    /// onto `__deltad_flat`, in leaf order.
    fn dual_adjoint_leaves(&self, dual: &TokenStream) -> Vec<TokenStream> {
        let mut flat = Vec::new();
        for param in &self.signature.params {
            let name = &param.name;
            let adjoint = self.dual_adjoint(name);
            flat.push(match &param.kind {
                kind if crate::types::user_elements(kind).is_some() => {
                    let elem = crate::types::user_elements(kind);
                    quote! {
                        for __deltad_e in &#adjoint {
                            ::deltad::__private::twin_leaves::<#dual, #elem>(__deltad_e, &mut __deltad_flat);
                        }
                    }
                }
                ParamKind::Structured { value, .. } => quote! {
                    ::deltad::__private::twin_leaves::<#dual, #value>(&#adjoint, &mut __deltad_flat);
                },
                ParamKind::Real => quote!(__deltad_flat.push(#adjoint);),
                kind if kind.is_active() => {
                    quote!(__deltad_flat.extend_from_slice(&#adjoint[..]);)
                }
                _ => continue,
            });
        }
        flat
    }

    /// One forward-over-reverse evaluation on `scalar` (`Dual` or
    /// `Chunk`) with tangents from the `TangentSeeds` local `seeds`: an
    /// expression `(Grad of the adjoints' values (the gradient), H·v)`,
    /// H·v a `Grad` of the adjoints' tangents for `Dual`, a `Vec` of one
    /// `Grad` per tangent of the chunk for `Chunk`. On `Trace` (inputs from
    /// `TraceSeeds`): the gradient's reals in leaf order, each carrying the
    /// inputs it depends on (the Hessian's rows' patterns).
    pub(super) fn compiled_forward_over_reverse(
        &self,
        seeds: &Ident,
        scalar: Scalar,
    ) -> TokenStream {
        let dual = self.scalar_type(scalar);
        let tangent = match scalar {
            Scalar::Chunk(_) => quote!(tangents[__deltad_lane]),
            _ => quote!(tangent),
        };
        // The forward pass's value is not read: only the adjoint's.
        let (fwd, adj) = (
            Ident::new(FWD_UNVALUED_FN, Span::call_site()),
            Ident::new(ADJ_FN, Span::call_site()),
        );
        let inputs = self.compiled_dual_inputs(seeds, &dual, None);
        let adjoints = self.dual_adjoint_locals(&dual);
        // The `Grad` fields of the adjoints' tangents (H·v) and values (the
        // gradient).
        let fields = self.dual_adjoint_fields(&dual, &tangent);
        let value_fields = self.dual_adjoint_fields(&dual, &quote!(value));
        // Every adjoint real in leaf order, into `__deltad_flat` (`Trace`).
        let flat = self.dual_adjoint_leaves(&dual);
        let grad = Ident::new(items::GRAD, Span::call_site());
        let grad_type = self.grad_type();
        let phantom = self
            .no_active_params()
            .then(|| quote!(__deltad_element: ::core::marker::PhantomData,));
        let fwd_args = self.pass_args(scalar, false);
        // Repeated (Hessian rows): every call clones by-value parameters.
        let adj_args = self.pass_args(scalar, false);
        let unused = Ident::new("__deltad_unused", Span::mixed_site());
        let sinks = self.pass_sinks(scalar, &unused);
        let stack = Ident::new("__deltad_stack", Span::mixed_site());
        // Nothing reads the value: where the forward pass keeps nothing
        // and has no effect, the adjoint runs alone (as in `grad`).
        let forward = self.alone_or(
            TokenStream::new(),
            quote!(let _ = #fwd(&mut *#stack, #(#fwd_args),*);),
        );
        let (_, run) = self.with_stack(
            scalar,
            quote! {
                #forward
                #adj(&mut *#stack, #(#adj_args,)* <#dual as ::deltad::__private::Scalar>::one(), #(#sinks),*);
            },
        );
        if scalar == Scalar::Trace {
            return quote! {{
                #(#inputs)*
                #(#adjoints)*
                #run;
                let mut __deltad_flat: ::std::vec::Vec<#dual> = ::std::vec::Vec::new();
                #(#flat)*
                __deltad_flat
            }};
        }
        let hv = match scalar {
            Scalar::Chunk(width) => {
                let lanes = width.lanes();
                quote! {
                (0..#lanes)
                    .map(|__deltad_lane| -> #grad_type { #grad { #(#fields,)* #phantom } })
                    .collect::<::std::vec::Vec<#grad_type>>()
                }
            }
            _ => quote!(#grad { #(#fields,)* #phantom }),
        };
        quote! {{
            #(#inputs)*
            #(#adjoints)*
            #run;
            let __deltad_gradient: #grad_type = #grad { #(#value_fields,)* #phantom };
            let __deltad_hv = #hv;
            (__deltad_gradient, __deltad_hv)
        }}
    }
}

/// True if a parameter's dual inputs are a `Vec` of the dual scalar: a
/// buffer of reals (a slice, a `Vec`; not an array, a real or a user type).
fn seeded_buffer(kind: &ParamKind) -> bool {
    !matches!(
        kind,
        ParamKind::Structured { .. }
            | ParamKind::Real
            | ParamKind::Array { .. }
            | ParamKind::ArrayRef { .. }
    ) && kind.is_active()
}
