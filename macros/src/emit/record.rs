//! The recording pass `__record`: the user's body computing with dual
//! values, or, for a custom primitive, the primal function and one binding
//! per output real with the user's partial derivatives (paper §8.2).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::visit_mut::VisitMut;
use syn::{Ident, Lifetime};

use super::Generator;
use crate::functions::ToReal;
use crate::names::items;
use crate::signature::{Output, ParamKind, Passing};

/// What the recording pass runs.
pub(super) enum Body {
    Rewritten(syn::Block),
    Custom(syn::Path),
    /// One binding whose partials the compiled adjoint computes.
    Compiled,
    Stub,
}

/// The recording pass's signature, piece by piece (the forwarding methods
/// reuse it).
pub(super) struct RecordSignature {
    /// Lifetime, const and function type parameters of the user's function,
    /// with `Fn` bounds in dual values.
    pub user_generics: Vec<TokenStream>,
    /// One per parameter: its type in the recording pass, and for structured
    /// parameters the generic parameter declaration it needs.
    pub params: Vec<RecordParam>,
    pub where_clause: Option<syn::WhereClause>,
    pub output: TokenStream,
}

pub(super) struct RecordParam {
    pub ty: TokenStream,
    pub generic: Option<TokenStream>,
}

impl Generator<'_> {
    pub(super) fn record_signature(&self) -> RecordSignature {
        let (lifetime, scalar, prim) = (&self.names.lifetime, &self.names.scalar, &self.prim);
        let real = self.names.real_type();
        let mut to_real = ToReal { names: &self.names };
        let mut user_generics: Vec<TokenStream> =
            self.signature.generics.iter().map(|g| quote!(#g)).collect();
        for param in &self.signature.function_generics {
            let mut param = param.clone();
            to_real.visit_generic_param_mut(&mut param);
            user_generics.push(quote!(#param));
        }
        let mut where_clause = self.signature.where_clause.clone();
        if let Some(where_clause) = &mut where_clause {
            to_real.visit_where_clause_mut(where_clause);
        }
        let cow_lifetime = |lt: &Option<Lifetime>| match lt {
            Some(lt) => quote!(#lt),
            None => quote!('_),
        };
        let params = self
            .signature
            .params
            .iter()
            .enumerate()
            .map(|(index, param)| {
                let plain = |ty: TokenStream| RecordParam { ty, generic: None };
                if let Some((value, _)) = self.converted_param(&param.kind) {
                    let generic = format_ident!("__DeltadA{}", index);
                    return RecordParam {
                        ty: quote!(#generic),
                        generic: Some(quote! {
                            #generic: ::deltad::__private::IntoDual<#lifetime, #scalar, #prim, #value>
                        }),
                    };
                }
                match &param.kind {
                    ParamKind::Real => plain(quote!(#real)),
                    ParamKind::Slice { lifetime: lt } => {
                        let lt = cow_lifetime(lt);
                        plain(quote!(::deltad::__private::Cow<#lt, [#real]>))
                    }
                    ParamKind::VecRef { lifetime: lt } => {
                        let lt = cow_lifetime(lt);
                        plain(quote!(::deltad::__private::Cow<#lt, ::std::vec::Vec<#real>>))
                    }
                    ParamKind::ArrayRef { lifetime: lt, len } => {
                        let lt = cow_lifetime(lt);
                        plain(quote!(::deltad::__private::Cow<#lt, [#real; #len]>))
                    }
                    ParamKind::InOut { value, passing } => {
                        let dual = |ty: &syn::Type| {
                            quote!(::deltad::__private::DualOf<#lifetime, #scalar, #prim, #ty>)
                        };
                        let lt = match &param.ty {
                            syn::Type::Reference(r) => r.lifetime.clone(),
                            _ => None,
                        };
                        match passing {
                            Passing::Slice { elem } => {
                                let elem = dual(elem);
                                plain(quote!(&#lt mut [#elem]))
                            }
                            _ => {
                                let value = dual(value);
                                plain(quote!(&#lt mut #value))
                            }
                        }
                    }
                    ParamKind::Function { .. } => {
                        let mut ty = param.ty.clone();
                        to_real.visit_type_mut(&mut ty);
                        plain(quote!(#ty))
                    }
                    ParamKind::Constant
                    | ParamKind::Discrete
                    | ParamKind::Structured { .. }
                    | ParamKind::Vec
                    | ParamKind::Array { .. } => {
                        let ty = &param.ty;
                        plain(quote!(#ty))
                    }
                }
            })
            .collect();
        let output = match &self.signature.output {
            Output::Real => quote!(#real),
            Output::Structured(ty) => {
                quote!(::deltad::__private::DualOf<#lifetime, #scalar, #prim, #ty>)
            }
            Output::Unit => quote!(()),
        };
        RecordSignature {
            user_generics,
            params,
            where_clause,
            output,
        }
    }

    /// A parameter the recording pass takes through `IntoDual`: its owned
    /// value type and how it is passed. Structured parameters, and `Vec<f64>`
    /// and `[f64; N]` by value: a constant array or `Vec` then goes to the
    /// callee as it is and the callee lifts it, so that a caller need not
    /// know whether the parameter is spelled `[f64; 3]` or through an alias.
    fn converted_param(&self, kind: &ParamKind) -> Option<(syn::Type, Passing)> {
        let prim = &self.prim;
        match kind {
            ParamKind::Structured { value, passing } => Some((value.clone(), passing.clone())),
            ParamKind::Vec => Some((syn::parse_quote!(::std::vec::Vec<#prim>), Passing::Value)),
            ParamKind::Array { len } => Some((syn::parse_quote!([#prim; #len]), Passing::Value)),
            _ => None,
        }
    }

    /// The name a parameter is received under, and the statements that turn
    /// it into what the body uses (`by_name`: bind to the parameter's name
    /// rather than the user's pattern).
    pub(super) fn receive(&self, index: usize, by_name: bool) -> (TokenStream, TokenStream) {
        let param = &self.signature.params[index];
        let real = self.names.real_type();
        let name = &param.name;
        let pat = if by_name {
            quote!(#name)
        } else {
            let pat = &param.pat;
            quote!(#pat)
        };
        let hidden = self.names.local(&format!("param_{}", param.name));
        let rebind = |ty: TokenStream| (quote!(#hidden), quote!(let #pat: #ty = &*#hidden;));
        match &param.kind {
            ParamKind::Slice { .. } => rebind(quote!(&[#real])),
            ParamKind::VecRef { .. } => rebind(quote!(&::std::vec::Vec<#real>)),
            ParamKind::ArrayRef { len, .. } => rebind(quote!(&[#real; #len])),
            _ => self.receive_converted(index, pat, &hidden),
        }
    }

    /// Receives a parameter taken through `IntoDual` (see `converted_param`):
    /// converted to dual values and bound to the user's pattern.
    fn receive_converted(
        &self,
        index: usize,
        pat: TokenStream,
        hidden: &Ident,
    ) -> (TokenStream, TokenStream) {
        let (lifetime, scalar, prim) = (&self.names.lifetime, &self.names.scalar, &self.prim);
        let param = &self.signature.params[index];
        let Some((value, passing)) = self.converted_param(&param.kind) else {
            return (pat, TokenStream::new());
        };
        let generic = format_ident!("__DeltadA{}", index);
        let conversion = quote!(::deltad::__private::IntoDual<#lifetime, #scalar, #prim, #value>);
        let dual =
            |ty: &syn::Type| quote!(::deltad::__private::DualOf<#lifetime, #scalar, #prim, #ty>);
        let converted = quote!(<#generic as #conversion>::into_dual(#hidden));
        let owned = self.names.local(&format!("owned_{}", param.name));
        let ty = dual(&value);
        let statements = match &passing {
            Passing::Value => quote!(let #pat: #ty = #converted;),
            Passing::Ref | Passing::View => quote! {
                let #owned: #ty = #converted;
                let #pat: &#ty = &#owned;
            },
            Passing::Slice { elem } => {
                let elem_ty = dual(elem);
                quote! {
                    let #owned: #ty = #converted;
                    let #pat: &[#elem_ty] = &#owned[..];
                }
            }
        };
        (quote!(#hidden), statements)
    }

    /// The parameter declarations of a function with the recording pass's
    /// signature, and the statements receiving them (see `receive`).
    pub(super) fn received(
        &self,
        signature: &RecordSignature,
        by_name: bool,
    ) -> (Vec<TokenStream>, Vec<TokenStream>) {
        signature
            .params
            .iter()
            .enumerate()
            .map(|(index, param)| {
                let (name, statements) = self.receive(index, by_name);
                let ty = &param.ty;
                (quote!(#name: #ty), statements)
            })
            .unzip()
    }

    pub(super) fn record(&self, body: Body) -> TokenStream {
        let record_fn = Ident::new(items::RECORD_FN, Span::call_site());
        let (tape, lifetime, scalar, prim) = (
            &self.names.tape,
            &self.names.lifetime,
            &self.names.scalar,
            &self.prim,
        );
        let signature = self.record_signature();
        let (params, receives) =
            self.received(&signature, matches!(body, Body::Custom(_) | Body::Compiled));
        let body = match body {
            Body::Rewritten(block) => {
                let stmts = &block.stmts;
                quote!(#(#receives)* #(#stmts)*)
            }
            Body::Custom(derivative) => {
                let custom = self.custom_body(&derivative);
                quote!(#(#receives)* #custom)
            }
            Body::Compiled => {
                let node = self.compiled_node_body();
                quote!(#(#receives)* #node)
            }
            Body::Stub => quote!(::core::unreachable!()),
        };
        let RecordSignature {
            user_generics,
            params: record_params,
            where_clause,
            output,
        } = signature;
        let structured_generics = record_params.iter().filter_map(|p| p.generic.as_ref());
        quote! {
            #[doc(hidden)]
            pub fn #record_fn<#lifetime, #(#user_generics,)* #scalar: ::deltad::__private::Scalar<Prim = #prim> + #lifetime #(, #structured_generics)*>(
                #tape: &#lifetime ::deltad::__private::Tape<#scalar>,
                #(#params),*
            ) -> #output #where_clause {
                #body
            }
        }
    }

    /// A custom primitive's recording pass: the primal function on the
    /// machine values, the user's derivative rows, and one binding per output
    /// real whose terms are the row's partial derivatives times the input
    /// bindings.
    fn custom_body(&self, derivative: &syn::Path) -> TokenStream {
        let (tape, scalar, prim) = (&self.names.tape, &self.names.scalar, &self.prim);
        let diff =
            |ty: &dyn quote::ToTokens| quote!(<#ty as ::deltad::__private::Differentiable<#prim>>);
        let inputs = self.names.local("inputs");
        let row = self.names.local("row");
        let coefficients = self.names.local("coefficients");
        let mut machine = Vec::new();
        let mut primal_args = Vec::new();
        let mut derivative_args = Vec::new();
        let mut leaves = Vec::new();
        let input_values = self.names.local("input_values");
        for param in &self.signature.params {
            let name = &param.name;
            let value = self.names.local(&format!("machine_{}", param.name));
            let to_prim = quote!(::deltad::__private::Real::to_prim);
            let (compute, arg): (TokenStream, TokenStream) = match &param.kind {
                ParamKind::Real => (quote!(#name.to_prim()), quote!(#value)),
                ParamKind::Slice { .. } => (
                    quote!(#name.iter().map(#to_prim).collect::<::std::vec::Vec<#prim>>()),
                    quote!(&#value[..]),
                ),
                ParamKind::VecRef { .. } => (
                    quote!(#name.iter().map(#to_prim).collect::<::std::vec::Vec<#prim>>()),
                    quote!(&#value),
                ),
                ParamKind::Vec => (
                    quote!(#name.iter().map(#to_prim).collect::<::std::vec::Vec<#prim>>()),
                    quote!(::core::clone::Clone::clone(&#value)),
                ),
                ParamKind::Array { .. } => (quote!(#name.each_ref().map(#to_prim)), quote!(#value)),
                ParamKind::ArrayRef { .. } => {
                    (quote!(#name.each_ref().map(#to_prim)), quote!(&#value))
                }
                ParamKind::Structured { value: ty, passing } => {
                    let d = diff(ty);
                    let twin = match passing {
                        Passing::Value => quote!(&#name),
                        Passing::Ref | Passing::View => quote!(#name),
                        Passing::Slice { .. } => {
                            let owned = self.names.local(&format!("owned_{}", param.name));
                            quote!(&#owned)
                        }
                    };
                    let arg = match passing {
                        Passing::Value => quote!(::core::clone::Clone::clone(&#value)),
                        Passing::Ref => quote!(&#value),
                        Passing::View => quote!(#value.view()),
                        Passing::Slice { .. } => quote!(&#value[..]),
                    };
                    (quote!(#d::from_twin(#d::primal(#twin))), arg)
                }
                ParamKind::InOut { .. } => {
                    // Rejected before the recording pass is generated.
                    continue;
                }
                ParamKind::Constant | ParamKind::Discrete | ParamKind::Function { .. } => {
                    primal_args.push(quote!(::core::clone::Clone::clone(&#name)));
                    derivative_args.push(quote!(#name));
                    continue;
                }
            };
            machine.push(quote!(let #value = #compute;));
            primal_args.push(arg.clone());
            derivative_args.push(arg);
            // The input bindings and the matching entries of a row, in the
            // same leaf order.
            match &param.kind {
                ParamKind::Real => leaves.push(quote! {
                    #inputs.push(#name.id());
                    #input_values.push(#name.value());
                }),
                ParamKind::Structured { value: ty, passing } => {
                    let twin = match passing {
                        Passing::Value => quote!(&#name),
                        Passing::Ref | Passing::View => quote!(#name),
                        Passing::Slice { .. } => {
                            let owned = self.names.local(&format!("owned_{}", param.name));
                            quote!(&#owned)
                        }
                    };
                    leaves.push(quote! {
                        ::deltad::__private::input_leaves::<#prim, #ty, #scalar>(#twin, &mut #inputs, &mut #input_values);
                    });
                }
                _ => leaves.push(quote! {
                    #inputs.extend(#name.iter().map(|r| r.id()));
                    #input_values.extend(#name.iter().map(|r| r.value()));
                }),
            }
        }
        let primal = &self.target.primal;
        let output_type = self.output_type();
        let rows = match &self.signature.output {
            Output::Real => quote!(::std::vec![#derivative(#(#derivative_args),*)]),
            Output::Structured(_) | Output::Unit => quote!(#derivative(#(#derivative_args),*)),
        };
        let grad = Ident::new(items::GRAD, Span::call_site());
        let derivative_name = quote!(#derivative).to_string().replace(' ', "");
        let flatten = Ident::new(items::FLATTEN_FN, Span::call_site());
        quote! {
            #(#machine)*
            let __deltad_value: #output_type = #primal(#(#primal_args),*);
            let __deltad_rows: ::std::vec::Vec<#grad> = #rows;
            let mut #inputs: ::std::vec::Vec<::core::option::Option<::deltad::__private::DeltaId>> =
                ::std::vec::Vec::new();
            let mut #input_values: ::std::vec::Vec<#scalar> = ::std::vec::Vec::new();
            #(#leaves)*
            let __deltad_coefficient_rows: ::std::vec::Vec<::std::vec::Vec<#prim>> = __deltad_rows
                .iter()
                .map(|#row| {
                    let mut #coefficients = ::std::vec::Vec::with_capacity(#inputs.len());
                    #flatten(#row, &mut #coefficients);
                    #coefficients
                })
                .collect();
            ::deltad::__private::custom_output::<#prim, #scalar, #output_type>(
                #tape,
                &__deltad_value,
                &#inputs,
                &#input_values,
                &__deltad_coefficient_rows,
                #derivative_name,
            )
        }
    }
}
