//! Hidden methods through which differentiated code calls differentiated
//! methods.
//!
//! The rewrite cannot know the type of a receiver, so a call `v.norm()` in
//! differentiated code becomes `v.__deltad_norm(tape)`, and method lookup
//! finds the right one:
//!
//! * on the user's type (`impl Vec3`), for receivers that are plain values
//!   (and for associated functions, called as `Vec3::__deltad_new(tape, ..)`);
//! * on the type's dual twin (`impl __deltad_twin_Vec3<Real<..>>`), for
//!   receivers that are dual values; only for methods whose receiver is
//!   differentiated.
//!
//! Both call the recording pass of the method's module.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::Ident;

use super::Generator;
use crate::names::items;
use crate::signature::ParamKind;

impl Generator<'_> {
    pub(super) fn forwarders(&self) -> TokenStream {
        let Some(method) = &self.target.method else {
            return TokenStream::new();
        };
        let record_fn = Ident::new(items::RECORD_FN, Span::call_site());
        let forward = format_ident!("{}{}", items::FORWARD_PREFIX, method.name);
        let (tape, lifetime, scalar, prim) = (
            &self.names.tape,
            &self.names.lifetime,
            &self.names.scalar,
            &self.prim,
        );
        let signature = self.record_signature();
        let skip = usize::from(method.has_receiver);
        let names: Vec<Ident> = (skip..signature.params.len())
            .map(|i| format_ident!("__deltad_p{}", i))
            .collect();
        let params: Vec<TokenStream> = signature.params[skip..]
            .iter()
            .zip(&names)
            .map(|(param, name)| {
                let ty = &param.ty;
                quote!(#name: #ty)
            })
            .collect();
        let generics: Vec<&TokenStream> = signature.params[skip..]
            .iter()
            .filter_map(|p| p.generic.as_ref())
            .collect();
        let user_generics = &signature.user_generics;
        let where_clause = &signature.where_clause;
        let output = &signature.output;
        let self_type = &method.self_type;
        let scalar_bound = quote!(::deltad::__private::Scalar<Prim = #prim> + #lifetime);

        if !method.has_receiver {
            return quote! {
                impl #self_type {
                    #[doc(hidden)]
                    #[inline]
                    pub fn #forward<#lifetime, #(#user_generics,)* #scalar: #scalar_bound #(, #generics)*>(
                        #tape: &#lifetime ::deltad::__private::Tape<#scalar>,
                        #(#params),*
                    ) -> #output #where_clause {
                        #record_fn(#tape, #(#names),*)
                    }
                }
            };
        }
        // A receiver passed by value without derivatives is cloned; a
        // differentiated receiver (a plain value here: the method is called
        // on the user's type, not on its twin) becomes a twin of constants,
        // which needs no `Clone`.
        let receiver = match (&self.signature.params[0].kind, &self.signature.params[0].ty) {
            (ParamKind::Constant, syn::Type::Reference(_)) => quote!(self),
            (ParamKind::Constant, _) => quote!(::core::clone::Clone::clone(self)),
            (ParamKind::Structured { value, .. }, _) => quote! {
                <#value as ::deltad::__private::Differentiable<#prim>>::constant::<#scalar>(self)
            },
            _ => quote!(self),
        };
        let on_user_type = quote! {
            impl #self_type {
                #[doc(hidden)]
                #[inline]
                pub fn #forward<#lifetime, #(#user_generics,)* #scalar: #scalar_bound #(, #generics)*>(
                    &self,
                    #tape: &#lifetime ::deltad::__private::Tape<#scalar>,
                    #(#params),*
                ) -> #output #where_clause {
                    #record_fn(#tape, #receiver, #(#names),*)
                }
            }
        };
        let on_twin = method.twin.as_ref().map(|twin| {
            quote! {
                impl<#lifetime, #scalar: #scalar_bound> #twin<::deltad::__private::Real<#lifetime, #scalar>> {
                    #[doc(hidden)]
                    #[inline]
                    pub fn #forward<#(#user_generics,)* #(#generics),*>(
                        &self,
                        #tape: &#lifetime ::deltad::__private::Tape<#scalar>,
                        #(#params),*
                    ) -> #output #where_clause {
                        #record_fn(#tape, self, #(#names),*)
                    }
                }
            }
        });
        quote! {
            #on_user_type
            #on_twin
        }
    }
}
