//! The entries through which a caller on the compiled path takes a
//! derivative of this function inside its own code: `f::vjp(x, w, s).1.x`
//! (and `f::grad(x, w).x`, the seed 1) becomes a call of `f::__vjp_x` with
//! the seed `s` as one more argument, a callee with the compiled convention
//! of its own (`__fwd`, `__adj`, the parameter markers, `__Out`, the keeps
//! consts), so the caller's passes treat it as any other call:
//!
//! * its forward pass is this function's forward pass and adjoint (seeded
//!   with `s`) on the caller's scalars, returning the field `x` of s·∇f (it
//!   keeps nothing);
//! * its adjoint, given the adjoint `v` of that field, adds s·Hᵀv = s·Hv
//!   (the Hessian is symmetric) into the arguments' adjoints and ∇ₓf·v into
//!   the seed's: this function's forward pass and adjoint on dual numbers
//!   whose tangents are `v` in the parameter `x` (forward over reverse: the
//!   adjoints' tangents and the value's tangent), one pass per adjoint
//!   lane.
//!
//! For functions of reals, buffers of reals and plain data returning a real
//! (both engines: the passes used are the compiled convention's).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::Ident;

use super::compiled::{keeps_const, ADJ_FN, FWD_FN};
use super::Generator;
use crate::signature::{ParamKind, Signature};

/// True if the function gets the entries.
pub(crate) fn has_nested_entries(signature: &Signature) -> bool {
    super::bridge::has_compiled_convention(signature)
        && signature.is_flat_to_real()
        && !signature.takes_functions()
        && !signature.has_in_out()
        // (Plain data the passes take again: borrowed or a primitive.)
        && signature
            .params
            .iter()
            .all(|p| p.kind.is_active() || taken_again(&p.ty))
        // (A length given by a const parameter cannot be named where the
        // entries' result types are.)
        && !signature
            .generics
            .iter()
            .any(|g| matches!(g, syn::GenericParam::Const(_)))
}

fn fwd_entry(name: &Ident) -> Ident {
    format_ident!("__deltad_vjp_fwd_{}", syn::ext::IdentExt::unraw(name))
}

fn adj_entry(name: &Ident) -> Ident {
    format_ident!("__deltad_vjp_adj_{}", syn::ext::IdentExt::unraw(name))
}

/// The entries' modules, next to the function's markers (`impl_module`
/// holds the entries).
pub(crate) fn entry_modules(signature: &Signature, impl_module: &Ident) -> TokenStream {
    if !has_nested_entries(signature) {
        return TokenStream::new();
    }
    let markers: Vec<Ident> = (0..signature.params.len())
        .map(|i| format_ident!("__P{}", i))
        .collect();
    let seed_marker = format_ident!("__P{}", signature.params.len());
    let keeps = super::compiled::keeps_exports_false();
    let modules = signature
        .params
        .iter()
        .filter(|param| param.kind.is_active())
        .map(|param| {
            let module = crate::names::vjp_entry_module(&param.name);
            let (fwd, adj) = (fwd_entry(&param.name), adj_entry(&param.name));
            let out = match &param.kind {
                ParamKind::Real => quote!(S),
                ParamKind::Array { len } | ParamKind::ArrayRef { len, .. } => quote!([S; #len]),
                _ => quote!(::std::vec::Vec<S>),
            };
            quote! {
                #[doc(hidden)]
                pub mod #module {
                    #[doc(hidden)]
                    pub use super::{#(#markers),*};
                    #[doc(hidden)]
                    pub type #seed_marker = ::deltad::__private::RealParam;
                    #[doc(hidden)]
                    pub use super::#impl_module::{#fwd as __fwd, #adj as __adj};
                    #[doc(hidden)]
                    pub type __Out<S> = #out;
                    #keeps
                }
            }
        });
    quote!(#(#modules)*)
}

impl Generator<'_> {
    /// The entries themselves, in the module of the generated items.
    pub(super) fn nested_entries(&self, stub: bool) -> TokenStream {
        if !has_nested_entries(self.signature) {
            return TokenStream::new();
        }
        let mut out = TokenStream::new();
        for (k, param) in self.signature.params.iter().enumerate() {
            if param.kind.is_active() {
                out.extend(self.vjp_entries(k, stub));
            }
        }
        out
    }

    /// The forward pass and the adjoint of parameter `k`'s field of a
    /// `vjp`.
    fn vjp_entries(&self, k: usize, stub: bool) -> TokenStream {
        let prim = &self.prim;
        let s = Ident::new("__DeltadS", Span::call_site());
        let a = Ident::new("__DeltadA", Span::call_site());
        let generics: Vec<TokenStream> =
            self.signature.generics.iter().map(|g| quote!(#g)).collect();
        let where_clause = &self.signature.where_clause;
        let (fwd, adj) = (
            Ident::new(FWD_FN, Span::call_site()),
            Ident::new(ADJ_FN, Span::call_site()),
        );
        let keeps = keeps_const();
        let stack = Ident::new("__deltad_stack", Span::mixed_site());
        let rec = Ident::new("__deltad_rec", Span::mixed_site());
        let out = Ident::new("__deltad_out", Span::mixed_site());
        let lane = Ident::new("__deltad_lane", Span::mixed_site());
        let params = &self.signature.params;
        let name_k = &params[k].name;
        let (fwd_name, adj_name) = (fwd_entry(name_k), adj_entry(name_k));
        // The parameters as the compiled passes take them.
        let declared: Vec<TokenStream> = params
            .iter()
            .map(|param| {
                let name = &param.name;
                match &param.kind {
                    ParamKind::Real => quote!(#name: #s),
                    ParamKind::Array { len } | ParamKind::ArrayRef { len, .. } => {
                        quote!(#name: &[#s; #len])
                    }
                    kind if kind.is_active() => quote!(#name: &[#s]),
                    _ => {
                        let ty = &param.ty;
                        quote!(#name: #ty)
                    }
                }
            })
            .collect();
        // Passed to a pass that is not the last to take them.
        let again: Vec<TokenStream> = params
            .iter()
            .map(|param| super::plain_argument(param, !is_plain(&param.kind)))
            .collect();
        let last: Vec<TokenStream> = params
            .iter()
            .map(|param| super::plain_argument(param, true))
            .collect();
        let (out_type, out_adjoint) = match &params[k].kind {
            ParamKind::Real => (quote!(#s), quote!(#a)),
            ParamKind::Array { len } | ParamKind::ArrayRef { len, .. } => {
                (quote!([#s; #len]), quote!([#a; #len]))
            }
            _ => (quote!(::std::vec::Vec<#s>), quote!(::std::vec::Vec<#a>)),
        };
        let seed = Ident::new("__deltad_seed", Span::mixed_site());
        let sink_types: Vec<Ident> = (0..=params.len())
            .map(|i| format_ident!("__DeltadK{}", i))
            .collect();
        let sink_names: Vec<Ident> = (0..=params.len())
            .map(|i| format_ident!("__deltad_sink{}", i, span = Span::mixed_site()))
            .collect();
        let (seed_sink, seed_sink_type) = (&sink_names[params.len()], &sink_types[params.len()]);
        let sink_bounds = params
            .iter()
            .zip(&sink_types)
            .map(|(param, ty)| match &param.kind {
                ParamKind::Real => quote!(#ty: ::deltad::__private::ScalarSink<#a>),
                kind if kind.is_active() => quote!(#ty: ::deltad::__private::SliceSink<#a>),
                _ => quote!(#ty),
            })
            .chain(std::iter::once(
                quote!(#seed_sink_type: ::deltad::__private::ScalarSink<#a>),
            ));
        let sinks_declared = sink_names
            .iter()
            .zip(&sink_types)
            .map(|(name, ty)| quote!(mut #name: #ty));
        let fwd_generics = quote!(<#(#generics,)* #s: ::deltad::__private::Scalar<Prim = #prim>, __DeltadR: ::deltad::__private::Record<#s>>);
        let adj_generics = quote!(<#(#generics,)* #s: ::deltad::__private::Scalar<Prim = #prim>, #a: ::deltad::__private::Cotangent<#s>, #(#sink_bounds),*>);
        let attrs = quote! {
            #[doc(hidden)]
            #[inline]
            #[allow(unused_mut, unused_variables, unused_parens, clippy::all)]
        };
        if stub {
            return quote! {
                #attrs
                pub fn #fwd_name #fwd_generics (#rec: &mut __DeltadR, #(#declared,)* #seed: #s) -> #out_type #where_clause {
                    ::core::unreachable!()
                }
                #attrs
                pub fn #adj_name #adj_generics (#stack: &mut ::deltad::__private::Stack<#s>, #(#declared,)* #seed: #s, #out: #out_adjoint, #(#sinks_declared),*) #where_clause {
                    ::core::unreachable!()
                }
            };
        }

        // The forward pass: s·∇f on the caller's scalars, the field of
        // parameter `k` kept.
        let zero = quote!(<#s as ::deltad::__private::Scalar>::zero());
        let gradient = Ident::new("__deltad_gradient", Span::mixed_site());
        let make_gradient = match &params[k].kind {
            ParamKind::Real => quote!(let mut #gradient: #s = #zero;),
            ParamKind::Array { len } | ParamKind::ArrayRef { len, .. } => {
                quote!(let mut #gradient: [#s; #len] = [#zero; #len];)
            }
            _ => {
                quote!(let mut #gradient: ::std::vec::Vec<#s> = ::std::vec![#zero; #name_k.len()];)
            }
        };
        let fwd_sinks = params.iter().enumerate().map(|(j, param)| {
            if j != k {
                quote!(::deltad::__private::Discard::<#s>::new())
            } else if matches!(param.kind, ParamKind::Real) {
                quote!(&mut #gradient)
            } else {
                quote!(&mut #gradient[..])
            }
        });
        let fwd_body = quote! {
            let _ = #rec;
            #make_gradient
            ::deltad::__private::with_stack::<#s, _>(|#stack| {
                // (A forward pass that keeps nothing is not needed: the
                // adjoint reads only the arguments.)
                if #keeps {
                    let _ = #fwd(&mut *#stack, #(#again),*);
                }
                #adj(&mut *#stack, #(#last,)* #seed, #(#fwd_sinks),*);
            });
            #gradient
        };

        // The adjoint: forward over reverse along the field's adjoint, one
        // pass per lane.
        let dual = quote!(::deltad::__private::Dual<#s>);
        let dual_zero = quote!(<#dual as ::deltad::__private::Scalar>::zero());
        let value = Ident::new("__deltad_value", Span::mixed_site());
        let mut inputs = Vec::new();
        let mut dual_again = Vec::new();
        let mut adjoints = Vec::new();
        let mut dual_sinks = Vec::new();
        let mut gives = Vec::new();
        for (j, param) in params.iter().enumerate() {
            let name = &param.name;
            let input = format_ident!("__deltad_input{}", j, span = Span::mixed_site());
            let adjoint = format_ident!("__deltad_adjoint{}", j, span = Span::mixed_site());
            let sink = &sink_names[j];
            let tangent = |at: TokenStream| {
                if j == k {
                    quote!(::deltad::__private::Cotangent::<#s>::lane(#at, #lane))
                } else {
                    zero.clone()
                }
            };
            match &param.kind {
                ParamKind::Real => {
                    let t = tangent(quote!(#out));
                    inputs.push(
                        quote!(let #input: #dual = ::deltad::__private::Dual::new(#name, #t);),
                    );
                    dual_again.push(quote!(#input));
                    adjoints.push(quote!(let mut #adjoint: #dual = #dual_zero;));
                    dual_sinks.push(quote!(&mut #adjoint));
                    gives.push(quote! {
                        ::deltad::__private::ScalarSink::add(
                            &mut #sink,
                            <#a as ::deltad::__private::Cotangent<#s>>::from_lane(#lane, #adjoint.tangent),
                        );
                    });
                }
                kind if kind.is_active() => {
                    let t = tangent(quote!(#out[__deltad_i]));
                    let (make, zeros) = match kind {
                        ParamKind::Array { len } | ParamKind::ArrayRef { len, .. } => (
                            quote!(let #input: [#dual; #len] = ::core::array::from_fn(|__deltad_i| ::deltad::__private::Dual::new(#name[__deltad_i], #t));),
                            quote!(let mut #adjoint: [#dual; #len] = [#dual_zero; #len];),
                        ),
                        _ => (
                            quote!(let #input: ::std::vec::Vec<#dual> = (0..#name.len()).map(|__deltad_i| ::deltad::__private::Dual::new(#name[__deltad_i], #t)).collect();),
                            quote!(let mut #adjoint: ::std::vec::Vec<#dual> = ::std::vec![#dual_zero; #name.len()];),
                        ),
                    };
                    inputs.push(make);
                    let passed = match kind {
                        ParamKind::Array { .. } | ParamKind::ArrayRef { .. } => quote!(&#input),
                        _ => quote!(&#input[..]),
                    };
                    dual_again.push(passed);
                    adjoints.push(zeros);
                    dual_sinks.push(quote!(&mut #adjoint[..]));
                    gives.push(quote! {
                        for (__deltad_i, __deltad_a) in #adjoint.iter().enumerate() {
                            *::deltad::__private::SliceSink::at(&mut #sink, __deltad_i) +=
                                <#a as ::deltad::__private::Cotangent<#s>>::from_lane(#lane, __deltad_a.tangent);
                        }
                    });
                }
                _ => {
                    // (Cloned: the lanes take it again.)
                    dual_again.push(super::plain_argument(param, false));
                    dual_sinks.push(quote!(::deltad::__private::Discard::<#dual>::new()));
                }
            }
        }
        let adj_body = quote! {
            let _ = &mut *#stack;
            for #lane in 0..<#a as ::deltad::__private::Cotangent<#s>>::LANES {
                #(#inputs)*
                #(#adjoints)*
                // (The value's tangent ∇ₓf·v is the seed's adjoint.)
                let mut #value: #dual = #dual_zero;
                <#s as ::deltad::__private::Scalar>::with_dual_stack(|#stack| {
                    if #keeps || !::deltad::__private::ScalarSink::discards(&#seed_sink) {
                        #value = #fwd(&mut *#stack, #(#dual_again),*);
                    }
                    #adj(&mut *#stack, #(#dual_again,)* ::deltad::__private::Dual::new(#seed, #zero), #(#dual_sinks),*);
                });
                #(#gives)*
                ::deltad::__private::ScalarSink::add(
                    &mut #seed_sink,
                    <#a as ::deltad::__private::Cotangent<#s>>::from_lane(#lane, #value.tangent),
                );
            }
        };
        quote! {
            #attrs
            pub fn #fwd_name #fwd_generics (#rec: &mut __DeltadR, #(#declared,)* #seed: #s) -> #out_type #where_clause {
                #fwd_body
            }
            #attrs
            pub fn #adj_name #adj_generics (#stack: &mut ::deltad::__private::Stack<#s>, #(#declared,)* #seed: #s, #out: #out_adjoint, #(#sinks_declared),*) #where_clause {
                #adj_body
            }
        }
    }
}

/// True for a type whose values the passes can take more than once: a
/// reference or a primitive.
fn taken_again(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Reference(_) => true,
        syn::Type::Path(path) if path.qself.is_none() => path
            .path
            .get_ident()
            .is_some_and(|name| crate::methods::is_primitive_type_name(&name.to_string())),
        _ => false,
    }
}

/// True for a parameter passed as written (constant or discrete data).
fn is_plain(kind: &ParamKind) -> bool {
    !kind.is_active()
}
