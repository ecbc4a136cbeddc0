//! Derivatives taken inside differentiated code: `f::grad(..)`,
//! `f::value_and_grad(..)`, `f::vjp(..)` and `f::jvp(..)` called with dual
//! values (an optimiser inside an objective) become calls of the hidden
//! `__nested_*` functions here.
//!
//! They take the arguments as the recording pass does (dual values of the
//! caller's tape, scalar `S`) and run `f`'s recording pass on a fresh inner
//! tape whose scalar is the caller's dual value type `Real<'t, S>`: the inner
//! sweep's arithmetic is then itself recorded by (or, in forward mode,
//! carried through) the caller. The four combinations of forward and reverse
//! mode inside and outside are all instances, because `S` may itself be a
//! dual number. Each nesting level is its own type (`Real<'i, Real<'t, S>>`,
//! `Dual<Real<'t, S>>`), and values of different tapes cannot mix: the
//! derivatives of different levels cannot be confused.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::Ident;

use super::Generator;
use crate::names::items;
use crate::signature::{Output, ParamKind, Passing};

/// Which nested function.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Nested {
    Grad,
    ValueAndGrad,
    Vjp,
    Jvp,
}

impl Generator<'_> {
    pub(super) fn nested(&self, stub: bool) -> TokenStream {
        let mut out = TokenStream::new();
        let kinds: &[Nested] = if self.seed_by_value() {
            &[Nested::Grad, Nested::ValueAndGrad, Nested::Vjp, Nested::Jvp]
        } else {
            &[Nested::Vjp, Nested::Jvp]
        };
        for &kind in kinds {
            out.extend(self.nested_fn(kind, stub));
        }
        out
    }

    fn nested_fn(&self, kind: Nested, stub: bool) -> TokenStream {
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
        let where_clause = &signature.where_clause;
        let outer = quote!(::deltad::__private::Real<#lifetime, #scalar>);
        let grad = Ident::new(items::GRAD, Span::call_site());
        let consts = self.const_names();
        let grad_type = quote!(#grad<#(#consts,)* #outer>);
        let results_type = self.results_type();
        let output_type = self.output_type();
        let dual_of =
            |ty: &TokenStream| quote!(::deltad::__private::DualOf<#lifetime, #scalar, #prim, #ty>);
        let seed = Ident::new("seed", Span::mixed_site());
        let (name, extra, ret) = match kind {
            Nested::Grad => (items::NESTED_GRAD_FN, quote!(), grad_type.clone()),
            Nested::ValueAndGrad => (
                items::NESTED_VALUE_AND_GRAD_FN,
                quote!(),
                quote!((#outer, #grad_type)),
            ),
            // The seed: constant (`1.0`, `&v`) or computed from
            // differentiated values (a dual twin of the results).
            Nested::Vjp => (items::NESTED_VJP_FN, quote!(, #seed: __DeltadSeed), {
                let out = dual_of(&output_type);
                quote!((#out, #grad_type))
            }),
            // The tangent: constant (a `Grad` of machine floats) or, where
            // `Grad` is generic, computed from differentiated values.
            Nested::Jvp => (
                items::NESTED_JVP_FN,
                if self.grad_is_generic() {
                    quote!(, #seed: &#grad<#(#consts,)* __DeltadTan>)
                } else {
                    let tangent_type = self.grad_type();
                    quote!(, #seed: &#tangent_type)
                },
                {
                    let out = dual_of(&output_type);
                    let results = dual_of(&results_type);
                    quote!((#out, #results))
                },
            ),
        };
        let name = Ident::new(name, Span::call_site());
        let seed_generic = match kind {
            Nested::Vjp => Some(
                quote!(, __DeltadSeed: ::deltad::__private::IntoDual<#lifetime, #scalar, #prim, #results_type>),
            ),
            Nested::Jvp if self.grad_is_generic() => Some(
                quote!(, __DeltadTan: ::core::marker::Copy + ::deltad::__private::GradElement<Prim = #prim> + ::deltad::__private::Tangent<#outer>),
            ),
            _ => None,
        };
        let body = if stub {
            quote!(::core::unreachable!())
        } else {
            let body = self
                .compiled_nested_body(kind, &seed)
                .unwrap_or_else(|| self.nested_body(kind, &seed));
            quote!(#(#receives)* #body)
        };
        quote! {
            #[doc(hidden)]
            pub fn #name<#lifetime, #(#user_generics,)* #scalar: ::deltad::__private::Scalar<Prim = #prim> + #lifetime #(, #generics)* #seed_generic>(
                #tape: &#lifetime ::deltad::__private::Tape<#scalar>
                #(, #params)*
                #extra
            ) -> #ret #where_clause {
                #body
            }
        }
    }

    fn nested_body(&self, kind: Nested, seed: &Ident) -> TokenStream {
        let (lifetime, scalar, prim) = (&self.names.lifetime, &self.names.scalar, &self.prim);
        let outer = quote!(::deltad::__private::Real<#lifetime, #scalar>);
        let inner = self.names.local("inner");
        let reader = self.names.local("reader");
        let output = self.names.local("output");
        let seeds = self.names.local("seeds");
        let record_fn = Ident::new(items::RECORD_FN, Span::call_site());
        let flatten = Ident::new(items::FLATTEN_FN, Span::call_site());
        let forward = kind == Nested::Jvp;
        // The inner scalar: the outer dual value, or a dual number of it.
        let inner_scalar = if forward {
            quote!(::deltad::__private::Dual<#outer>)
        } else {
            quote!(#outer)
        };
        let inner_real = quote!(::deltad::__private::Real<'_, #inner_scalar>);
        let leaf = |x: TokenStream| {
            if forward {
                quote!(::deltad::__private::dual_constant(#x, #seeds.next_tangent()))
            } else {
                quote!(::deltad::__private::input(&#inner, #x))
            }
        };
        let mut prepare = Vec::new();
        let mut args = Vec::new();
        let mut fields = Vec::new();
        let mut in_outs = Vec::new();
        for param in &self.signature.params {
            let name = &param.name;
            let input = format_ident!("__deltad_inner_{}", name, span = Span::mixed_site());
            let diff = |ty: &syn::Type| quote!(<#ty as ::deltad::__private::Differentiable<#prim>>);
            let v = Ident::new("value", Span::mixed_site());
            let one = leaf(quote!(*#v));
            match &param.kind {
                ParamKind::Real => {
                    let make = leaf(quote!(#name));
                    prepare.push(quote!(let #input = #make;));
                    args.push(quote!(#input));
                    fields.push(quote!(#name: #reader.scalar()));
                }
                ParamKind::Slice { .. } | ParamKind::VecRef { .. } | ParamKind::Vec => {
                    prepare.push(quote! {
                        let #input: ::std::vec::Vec<_> = #name.iter().map(|#v| #one).collect();
                    });
                    args.push(match &param.kind {
                        ParamKind::Vec => quote!(#input),
                        _ => quote!(::deltad::__private::Cow::Owned(#input)),
                    });
                    fields.push(quote!(#name: #reader.vec(#name.len())));
                }
                ParamKind::Array { .. } | ParamKind::ArrayRef { .. } => {
                    prepare.push(quote!(let #input = #name.each_ref().map(|#v| #one);));
                    args.push(match &param.kind {
                        ParamKind::Array { .. } => quote!(#input),
                        _ => quote!(::deltad::__private::Cow::Owned(#input)),
                    });
                    fields.push(quote!(#name: #reader.array()));
                }
                ParamKind::Structured { value, passing } | ParamKind::InOut { value, passing } => {
                    let d = diff(value);
                    // The received dual twin (for `&[E]`, the owned `Vec`).
                    let twin = match (&param.kind, passing) {
                        (ParamKind::InOut { .. }, Passing::Slice { elem }) => {
                            let e = diff(elem);
                            prepare.push(quote! {
                                let mut #input: ::std::vec::Vec<_> = #name.iter().map(|element| #e::map_twin(element, &mut |#v: &#outer| #one)).collect();
                            });
                            args.push(quote!(&mut #input[..]));
                            fields.push(quote! {
                                #name: #name.iter().map(|element| #e::map_twin(element, &mut |_: &#outer| #reader.scalar())).collect()
                            });
                            in_outs.push((name, true, input.clone()));
                            continue;
                        }
                        (_, Passing::Slice { .. }) => {
                            let owned = self.names.local(&format!("owned_{}", param.name));
                            quote!(&#owned)
                        }
                        (_, Passing::Value) => quote!(&#name),
                        (_, Passing::Ref) => quote!(&*#name),
                        (_, Passing::View) => quote!(&#name.to_owned()),
                    };
                    prepare.push(
                        quote!(let mut #input = #d::map_twin(#twin, &mut |#v: &#outer| #one);),
                    );
                    if matches!(param.kind, ParamKind::InOut { .. }) {
                        args.push(quote!(&mut #input));
                        in_outs.push((name, false, input.clone()));
                    } else {
                        args.push(quote!(#input));
                    }
                    fields.push(
                        quote!(#name: #d::map_twin(#twin, &mut |_: &#outer| #reader.scalar())),
                    );
                }
                ParamKind::Constant | ParamKind::Discrete | ParamKind::Function { .. } => {
                    args.push(quote!(#name));
                }
            }
        }
        let grad = Ident::new(items::GRAD, Span::call_site());
        let phantom = (!self.signature.params.iter().any(|p| p.kind.is_active()))
            .then(|| quote!(__deltad_element: ::core::marker::PhantomData));
        let grad_value = |adjoints: TokenStream| {
            quote! {{
                let mut #reader = ::deltad::__private::GradReader::new(#adjoints);
                let _ = &mut #reader;
                #grad { #(#fields,)* #phantom }
            }}
        };
        // The results, as in the wrappers: the returned value (unless `()`),
        // then the contents of each `&mut` parameter.
        let results = self.names.local("results");
        let mut parts = Vec::new();
        if !matches!(self.signature.output, Output::Unit) {
            parts.push(quote!(#output));
        }
        let back_to_outer = |x: TokenStream| {
            if forward {
                quote!(#x.value().value)
            } else {
                quote!(#x.value())
            }
        };
        // The new contents of `&mut` parameters, as outer dual values.
        let write_back: Vec<TokenStream> = in_outs
            .iter()
            .map(|(name, slice, input)| {
                let value = back_to_outer(quote!(r));
                let param = self
                    .signature
                    .params
                    .iter()
                    .find(|p| &p.name == *name)
                    .expect("in-out parameters come from the signature");
                let ParamKind::InOut { value: ty, passing } = &param.kind else {
                    return TokenStream::new();
                };
                if *slice {
                    let Passing::Slice { elem } = passing else {
                        return TokenStream::new();
                    };
                    let e = quote!(<#elem as ::deltad::__private::Differentiable<#prim>>);
                    quote! {
                        for (slot, inner) in #name.iter_mut().zip(#input.iter()) {
                            *slot = #e::map_twin(inner, &mut |r: &#inner_real| #value);
                        }
                    }
                } else {
                    let d = quote!(<#ty as ::deltad::__private::Differentiable<#prim>>);
                    quote!(*#name = #d::map_twin(&#input, &mut |r: &#inner_real| #value);)
                }
            })
            .collect();
        for (_, _, input) in &in_outs {
            parts.push(quote!(::core::clone::Clone::clone(&#input)));
        }
        let bind = if parts.len() == 1 {
            quote!(let #results = #(#parts)*;)
        } else {
            quote!(let #results = (#(#parts,)*);)
        };
        let output_type = self.output_type();
        let results_type = self.results_type();
        let output_value = |map: TokenStream| {
            if matches!(self.signature.output, Output::Unit) {
                return quote!(());
            }
            quote!(<#output_type as ::deltad::__private::Differentiable<#prim>>::map_twin(&#output, &mut |r: &#inner_real| #map))
        };
        let tail = match kind {
            Nested::Grad | Nested::ValueAndGrad => {
                let grad = grad_value(quote!(&__deltad_adjoints[..]));
                let value = quote!(#output.value());
                let result = if kind == Nested::Grad {
                    quote!(#grad)
                } else {
                    quote!((#value, #grad))
                };
                quote! {
                    let mut __deltad_adjoints: ::std::vec::Vec<#outer> = ::std::vec::Vec::new();
                    #inner.gradient_into(#output.id(), <#outer as ::deltad::__private::Scalar>::one(), &mut __deltad_adjoints);
                    #(#write_back)*
                    #result
                }
            }
            Nested::Vjp => {
                let grad = grad_value(quote!(&__deltad_adjoints[..]));
                let value = output_value(quote!(r.value()));
                quote! {
                    let __deltad_value = #value;
                    #bind
                    let mut __deltad_adjoints: ::std::vec::Vec<#outer> =
                        ::std::vec![<#outer as ::deltad::__private::Scalar>::zero(); #inner.len()];
                    let __deltad_seed: ::deltad::__private::DualOf<#lifetime, #scalar, #prim, #results_type> =
                        ::deltad::__private::IntoDual::into_dual(#seed);
                    <#results_type as ::deltad::__private::Differentiable<#prim>>::seed(&#results, &__deltad_seed, &mut __deltad_adjoints);
                    #inner.reverse_sweep(&mut __deltad_adjoints);
                    #(#write_back)*
                    (__deltad_value, #grad)
                }
            }
            Nested::Jvp => {
                let value = output_value(quote!(r.value().value));
                quote! {
                    let __deltad_value = #value;
                    #bind
                    let __deltad_tangent = <#results_type as ::deltad::__private::Differentiable<#prim>>::map_twin(&#results, &mut |r: &#inner_real| r.value().tangent);
                    #(#write_back)*
                    (__deltad_value, __deltad_tangent)
                }
            }
        };
        let make_inner = if forward {
            quote!(::deltad::__private::Tape::<#inner_scalar>::forward_only())
        } else {
            quote!(::deltad::__private::Tape::<#inner_scalar>::new())
        };
        let seeds_setup = forward.then(|| {
            quote! {
                let mut __deltad_flat = ::std::vec::Vec::new();
                #flatten(#seed, &mut __deltad_flat);
                let mut #seeds = ::deltad::__private::Seeds::from_flat(__deltad_flat);
            }
        });
        quote! {
            #seeds_setup
            let #inner = #make_inner;
            #(#prepare)*
            let #output = #record_fn(&#inner, #(#args),*);
            #tail
        }
    }
}
