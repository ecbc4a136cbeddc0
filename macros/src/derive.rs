//! `#[derive(Differentiable)]`: makes a user struct or enum a differentiable
//! type (a parameter, local, return value or field of other differentiable
//! types), with the gradient coming back in the same type.
//!
//! Next to `Name` it emits a *twin* `__deltad_twin_Name<T>` with the same
//! fields and variants, each field of type `<F as Differentiable<P>>::Twin<T>`
//! (so `f64` fields become `T`, `Vec<f64>` fields `Vec<T>`, fields of other
//! differentiable types their twins); fields marked `#[no_grad]` keep their
//! type and are constant data. The recording pass computes with
//! `__deltad_twin_Name<Real<..>>`; the macro rewrites `Name { .. }` and
//! `Name::Variant(..)` in differentiated code to the twin.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::{Data, DeriveInput, Fields, Ident, Type};

use crate::errors::Errors;

/// The twin's name for a type named `name`.
pub(crate) fn twin_name(name: &Ident) -> Ident {
    format_ident!("__deltad_twin_{}", name, span = name.span())
}

pub fn derive(input: TokenStream) -> TokenStream {
    let errors = Errors::default();
    let mut input: DeriveInput = match syn::parse2(input) {
        Ok(input) => input,
        Err(error) => return error.to_compile_error(),
    };
    name_self(&mut input);
    if !input.generics.params.is_empty() {
        errors.at(
            &input.generics,
            "#[derive(Differentiable)] does not support generic types yet: write the type with concrete `f64`/`f32` fields",
        );
        return errors.to_compile_errors();
    }
    let precision = precision(&input, &errors);
    let body = match &input.data {
        Data::Struct(data) => Shape::Struct(&data.fields),
        Data::Enum(data) => Shape::Enum(data.variants.iter().collect()),
        Data::Union(data) => {
            errors.at(
                data.union_token,
                "#[derive(Differentiable)] cannot derive for unions",
            );
            return errors.to_compile_errors();
        }
    };
    // (A bare trait object or `impl Trait` is no field's type in valid Rust;
    // the generated code names field types in qualified paths, where such
    // a type does not parse.)
    let fields: Vec<&syn::Field> = match &input.data {
        Data::Struct(data) => data.fields.iter().collect(),
        Data::Enum(data) => data.variants.iter().flat_map(|v| v.fields.iter()).collect(),
        Data::Union(_) => Vec::new(),
    };
    for field in fields {
        if matches!(
            field.ty,
            syn::Type::TraitObject(_) | syn::Type::ImplTrait(_)
        ) {
            errors.at(
                &field.ty,
                "#[derive(Differentiable)] takes fields of sized types: a trait object or `impl Trait` is not one (box it in a type of your own)",
            );
        }
    }
    if !errors.is_empty() {
        return errors.to_compile_errors();
    }
    Generator {
        name: &input.ident,
        twin: twin_name(&input.ident),
        vis: &input.vis,
        precision,
    }
    .generate(&body)
}

/// `Self` in the field types (`[f64; Self::N]`) named as the type itself:
/// the twin and the impls for it are other types, where `Self` means them.
fn name_self(input: &mut DeriveInput) {
    struct Namer(Ident);
    impl syn::visit_mut::VisitMut for Namer {
        fn visit_path_mut(&mut self, path: &mut syn::Path) {
            if let Some(first) = path.segments.first_mut() {
                if first.ident == "Self" {
                    first.ident = Ident::new(&self.0.to_string(), first.ident.span());
                }
            }
            syn::visit_mut::visit_path_mut(self, path);
        }
    }
    let mut namer = Namer(input.ident.clone());
    syn::visit_mut::VisitMut::visit_data_mut(&mut namer, &mut input.data);
}

/// The precision of the type's reals: the float its fields mention (`f64`
/// if none does).
fn precision(input: &DeriveInput, errors: &Errors) -> Ident {
    let mut found: Option<(String, Span)> = None;
    let mut check = |ty: &Type| {
        struct Finder(Vec<(String, Span)>);
        impl<'ast> syn::visit::Visit<'ast> for Finder {
            fn visit_ident(&mut self, ident: &'ast Ident) {
                let name = ident.to_string();
                if name == "f64" || name == "f32" {
                    self.0.push((name, ident.span()));
                }
            }
        }
        let mut finder = Finder(Vec::new());
        syn::visit::Visit::visit_type(&mut finder, ty);
        for (name, span) in finder.0 {
            match &found {
                Some((first, _)) if *first != name => errors.at_span(
                    span,
                    format!("a differentiable type has one precision: this field is `{name}` but another is `{first}`"),
                ),
                Some(_) => {}
                None => found = Some((name, span)),
            }
        }
    };
    let mut fields: Vec<&syn::Field> = Vec::new();
    match &input.data {
        Data::Struct(data) => fields.extend(data.fields.iter()),
        Data::Enum(data) => fields.extend(data.variants.iter().flat_map(|v| v.fields.iter())),
        Data::Union(_) => {}
    }
    for field in fields {
        if !is_no_grad(field) {
            check(&field.ty);
        }
    }
    let name = found.map_or_else(|| "f64".to_string(), |(name, _)| name);
    Ident::new(&name, Span::call_site())
}

fn is_no_grad(field: &syn::Field) -> bool {
    field.attrs.iter().any(|a| a.path().is_ident("no_grad"))
}

enum Shape<'a> {
    Struct(&'a Fields),
    Enum(Vec<&'a syn::Variant>),
}

struct Generator<'a> {
    name: &'a Ident,
    twin: Ident,
    vis: &'a syn::Visibility,
    precision: Ident,
}

/// One field: how to name it in patterns and constructors, and its type.
struct FieldInfo<'a> {
    /// `x` for named fields, `0` for tuple fields.
    member: syn::Member,
    /// A binding name for patterns.
    binding: Ident,
    ty: &'a Type,
    constant: bool,
    vis: &'a syn::Visibility,
}

fn fields_of(fields: &Fields) -> Vec<FieldInfo<'_>> {
    fields
        .iter()
        .enumerate()
        .map(|(index, field)| FieldInfo {
            member: match &field.ident {
                Some(ident) => syn::Member::Named(ident.clone()),
                None => syn::Member::Unnamed(syn::Index::from(index)),
            },
            binding: format_ident!("__deltad_f{}", index, span = Span::mixed_site()),
            ty: &field.ty,
            constant: is_no_grad(field),
            vis: &field.vis,
        })
        .collect()
}

impl Generator<'_> {
    fn twin_field_type(&self, field: &FieldInfo, element: &TokenStream) -> TokenStream {
        let (ty, p) = (field.ty, &self.precision);
        if field.constant {
            quote!(#ty)
        } else {
            quote!(<#ty as ::deltad::__private::Differentiable<#p>>::Twin<#element>)
        }
    }

    /// A twin type's fields declaration (`{ x: T, .. }` or `(T, ..)`).
    fn declare(&self, fields: &Fields) -> TokenStream {
        let element = quote!(__DeltadT);
        let infos = fields_of(fields);
        match fields {
            Fields::Named(_) => {
                let decls = infos.iter().map(|f| {
                    let (vis, member, ty) = (f.vis, &f.member, self.twin_field_type(f, &element));
                    quote!(#vis #member: #ty)
                });
                quote!({ #(#decls),* })
            }
            Fields::Unnamed(_) => {
                let decls = infos.iter().map(|f| {
                    let (vis, ty) = (f.vis, self.twin_field_type(f, &element));
                    quote!(#vis #ty)
                });
                quote!((#(#decls),*))
            }
            Fields::Unit => quote!(),
        }
    }

    /// A pattern binding every field of a value (`{ x: __f0, .. }`).
    fn pattern(fields: &Fields) -> TokenStream {
        let infos = fields_of(fields);
        match fields {
            Fields::Named(_) => {
                let parts = infos.iter().map(|f| {
                    let (member, binding) = (&f.member, &f.binding);
                    quote!(#member: #binding)
                });
                quote!({ #(#parts),* })
            }
            Fields::Unnamed(_) => {
                let parts = infos.iter().map(|f| &f.binding);
                quote!((#(#parts),*))
            }
            Fields::Unit => quote!(),
        }
    }

    /// A constructor from one expression per field.
    fn construct(fields: &Fields, values: Vec<TokenStream>) -> TokenStream {
        let infos = fields_of(fields);
        match fields {
            Fields::Named(_) => {
                let parts = infos.iter().zip(values).map(|(f, v)| {
                    let member = &f.member;
                    quote!(#member: #v)
                });
                quote!({ #(#parts),* })
            }
            Fields::Unnamed(_) => quote!((#(#values),*)),
            Fields::Unit => quote!(),
        }
    }

    /// `match value { Name::V pattern => Twin::V constructor, .. }` (or the
    /// struct form): applies `leaf` to every differentiable field binding and
    /// `constant` to the others.
    fn map(
        &self,
        shape: &Shape,
        value: TokenStream,
        from: &TokenStream,
        to: &TokenStream,
        leaf: impl Fn(&FieldInfo) -> TokenStream,
        constant: impl Fn(&FieldInfo) -> TokenStream,
    ) -> TokenStream {
        let arm = |path_from: TokenStream, path_to: TokenStream, fields: &Fields| {
            let pattern = Self::pattern(fields);
            let values = fields_of(fields)
                .iter()
                .map(|f| if f.constant { constant(f) } else { leaf(f) })
                .collect();
            let constructor = Self::construct(fields, values);
            quote!(#path_from #pattern => #path_to #constructor)
        };
        match shape {
            Shape::Struct(fields) => {
                let arm = arm(quote!(#from), quote!(#to), fields);
                quote!(match #value { #arm })
            }
            Shape::Enum(variants) => {
                let arms = variants.iter().map(|v| {
                    let ident = &v.ident;
                    arm(quote!(#from::#ident), quote!(#to::#ident), &v.fields)
                });
                quote!(match #value { #(#arms,)* })
            }
        }
    }

    /// Runs `action` on every differentiable field binding of `value`.
    fn each(
        &self,
        shape: &Shape,
        value: TokenStream,
        path: &TokenStream,
        action: impl Fn(&FieldInfo) -> TokenStream,
    ) -> TokenStream {
        let arm = |path: TokenStream, fields: &Fields| {
            let pattern = Self::pattern(fields);
            let actions = fields_of(fields)
                .iter()
                .filter(|f| !f.constant)
                .map(&action)
                .collect::<Vec<_>>();
            let unused = fields_of(fields)
                .into_iter()
                .map(|f| f.binding)
                .collect::<Vec<_>>();
            quote!(#path #pattern => { #(let _ = &#unused;)* #(#actions)* })
        };
        match shape {
            Shape::Struct(fields) => {
                let arm = arm(quote!(#path), fields);
                quote!(match #value { #arm })
            }
            Shape::Enum(variants) => {
                let arms = variants.iter().map(|v| {
                    let ident = &v.ident;
                    arm(quote!(#path::#ident), &v.fields)
                });
                quote!(match #value { #(#arms,)* })
            }
        }
    }

    /// The body of `same_shape(&self, other)`: the same variant, and each
    /// differentiated field shaped like the other's.
    fn same_shape_body(&self, shape: &Shape, diff: &TokenStream) -> TokenStream {
        let arm = |path: TokenStream, fields: &Fields| {
            let infos: Vec<FieldInfo> = fields_of(fields)
                .into_iter()
                .filter(|f| !f.constant)
                .collect();
            let side = |suffix: &str| -> Vec<Ident> {
                infos
                    .iter()
                    .map(|f| format_ident!("{}{}", f.binding, suffix, span = Span::mixed_site()))
                    .collect()
            };
            let (left, right) = (side("_l"), side("_r"));
            let members: Vec<&syn::Member> = infos.iter().map(|f| &f.member).collect();
            let checks = infos.iter().zip(&left).zip(&right).map(|((f, l), r)| {
                let ty = f.ty;
                quote!(&& <#ty as #diff>::same_shape(#l, #r))
            });
            quote! {
                (#path { #(#members: #left,)* .. }, #path { #(#members: #right,)* .. }) => true #(#checks)*
            }
        };
        match shape {
            Shape::Struct(fields) => {
                let name = self.name;
                let arm = arm(quote!(#name), fields);
                quote!(match (self, other) { #arm })
            }
            Shape::Enum(variants) => {
                let name = self.name;
                let arms = variants.iter().map(|v| {
                    let ident = &v.ident;
                    arm(quote!(#name::#ident), &v.fields)
                });
                quote!(match (self, other) { #(#arms,)* _ => false })
            }
        }
    }

    fn generate(&self, shape: &Shape) -> TokenStream {
        let Generator {
            name,
            twin,
            vis,
            precision: p,
        } = self;
        let private = quote!(::deltad::__private);
        let diff = quote!(#private::Differentiable<#p>);
        let name_path = quote!(#name);
        let twin_path = quote!(#twin);

        // The twin type.
        let declaration = match shape {
            Shape::Struct(fields) => {
                let body = self.declare(fields);
                let semi = if matches!(fields, Fields::Named(_)) {
                    quote!()
                } else {
                    quote!(;)
                };
                quote!(#vis struct #twin<__DeltadT> #body #semi)
            }
            Shape::Enum(variants) => {
                let variants = variants.iter().map(|v| {
                    let ident = &v.ident;
                    let body = self.declare(&v.fields);
                    quote!(#ident #body)
                });
                quote!(#vis enum #twin<__DeltadT> { #(#variants,)* })
            }
        };
        // Bounds only for the fields whose twin type depends on the element
        // type: a bound on a concrete type that does not hold is an error.
        let all_fields: Vec<FieldInfo> = match shape {
            Shape::Struct(fields) => fields_of(fields),
            Shape::Enum(variants) => variants.iter().flat_map(|v| fields_of(&v.fields)).collect(),
        };
        let all_field_types: Vec<TokenStream> = all_fields
            .iter()
            .filter(|f| !f.constant)
            .map(|f| self.twin_field_type(f, &quote!(__DeltadT)))
            .collect();
        let copy_impl = all_fields.iter().all(|f| likely_copy(f.ty)).then(|| {
            quote! {
                #[automatically_derived]
                impl<__DeltadT> ::core::marker::Copy for #twin<__DeltadT>
                where
                    #(#all_field_types: ::core::marker::Copy,)*
                {}
            }
        });
        let clone_body = self.map(
            shape,
            quote!(self),
            &twin_path,
            &twin_path,
            |f| {
                let b = &f.binding;
                quote!(::core::clone::Clone::clone(#b))
            },
            |f| {
                let b = &f.binding;
                quote!(::core::clone::Clone::clone(#b))
            },
        );
        let debug_body = self.debug_body(shape);

        // Differentiable: each method maps the value (`self`, a `dual` twin
        // or a `twin`) field by field, calling the field type's method on
        // differentiable fields and cloning constant ones.
        let leafwise = |value: TokenStream,
                        from: &TokenStream,
                        to: &TokenStream,
                        call: TokenStream,
                        rest: TokenStream,
                        owned: bool| {
            // `from_twin` consumes its twin (`owned`): constant fields move;
            // every other method reads through references and clones them.
            self.map(
                shape,
                value,
                from,
                to,
                |f| {
                    let (b, ty) = (&f.binding, f.ty);
                    quote!(<#ty as #diff>::#call(#b #rest))
                },
                |f| {
                    let b = &f.binding;
                    if owned {
                        quote!(#b)
                    } else {
                        quote!(::core::clone::Clone::clone(#b))
                    }
                },
            )
        };
        let (user, dual, twin_value) = (quote!(self), quote!(dual), quote!(twin));
        // `call` is the method, `rest` its arguments after the field.
        let input = leafwise(
            user.clone(),
            &name_path,
            &twin_path,
            quote!(input),
            quote!(, tape),
            false,
        );
        let build = leafwise(
            user.clone(),
            &name_path,
            &twin_path,
            quote!(build::<__DeltadT>),
            quote!(, leaf),
            false,
        );
        let map_twin = leafwise(
            twin_value.clone(),
            &twin_path,
            &twin_path,
            quote!(map_twin::<__DeltadIn, __DeltadOut>),
            quote!(, leaf),
            false,
        );
        let primal = leafwise(
            dual.clone(),
            &twin_path,
            &twin_path,
            quote!(primal::<__DeltadS>),
            quote!(),
            false,
        );
        let constant = leafwise(
            user.clone(),
            &name_path,
            &twin_path,
            quote!(constant::<__DeltadS>),
            quote!(),
            false,
        );
        let value = leafwise(
            dual.clone(),
            &twin_path,
            &twin_path,
            quote!(value::<__DeltadS>),
            quote!(),
            false,
        );
        let adjoint = leafwise(
            dual.clone(),
            &twin_path,
            &twin_path,
            quote!(adjoint::<__DeltadS>),
            quote!(, adjoints),
            false,
        );
        let filled = leafwise(
            dual,
            &twin_path,
            &twin_path,
            quote!(filled::<__DeltadS>),
            quote!(, fill),
            false,
        );
        let gather = leafwise(
            user.clone(),
            &name_path,
            &twin_path,
            quote!(gather::<__DeltadS>),
            quote!(, reader),
            false,
        );
        let from_twin = leafwise(
            twin_value,
            &twin_path,
            &name_path,
            quote!(from_twin),
            quote!(),
            true,
        );
        let from_active_twin = leafwise(
            quote!(twin),
            &twin_path,
            &name_path,
            quote!(from_active_twin),
            quote!(),
            true,
        );
        let to_twin = leafwise(
            user,
            &name_path,
            &twin_path,
            quote!(to_twin),
            quote!(),
            false,
        );
        let flatten = self.each(shape, quote!(twin), &twin_path, |f| {
            let (b, ty) = (&f.binding, f.ty);
            quote!(<#ty as #diff>::flatten_twin::<__DeltadT>(#b, out);)
        });
        let leaves = self.each(shape, quote!(dual), &twin_path, |f| {
            let (b, ty) = (&f.binding, f.ty);
            quote!(<#ty as #diff>::leaves::<__DeltadS>(#b, out);)
        });
        let set_leaf = self.each(shape, quote!(twin), &twin_path, |f| {
            let (b, ty) = (&f.binding, f.ty);
            quote!(if <#ty as #diff>::set_leaf::<__DeltadS>(#b, index, value) { return true; })
        });
        let seed = self.seed_body(shape, &diff);
        let twin_layout = self.twin_layout(shape, &diff);
        let same_shape = self.same_shape_body(shape, &diff);

        quote! {
            #[doc(hidden)]
            #[allow(non_camel_case_types, dead_code, missing_docs)]
            #declaration

            #[automatically_derived]
            impl<__DeltadT> ::core::clone::Clone for #twin<__DeltadT>
            where
                #(#all_field_types: ::core::clone::Clone,)*
            {
                fn clone(&self) -> Self {
                    #clone_body
                }
            }

            #copy_impl

            #[automatically_derived]
            impl<__DeltadT> ::core::fmt::Debug for #twin<__DeltadT>
            where
                #(#all_field_types: ::core::fmt::Debug,)*
            {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    #debug_body
                }
            }

            #[automatically_derived]
            #[allow(unused_variables, clippy::all)]
            impl #diff for #name {
                type Twin<__DeltadT> = #twin<__DeltadT>;

                #twin_layout

                fn input<'t, __DeltadS: #private::Scalar<Prim = #p>>(&self, tape: &'t #private::Tape<__DeltadS>) -> #twin<#private::Real<'t, __DeltadS>> {
                    #input
                }
                fn build<__DeltadT>(&self, leaf: &mut impl ::core::ops::FnMut(#p) -> __DeltadT) -> #twin<__DeltadT> {
                    #build
                }
                fn map_twin<__DeltadIn, __DeltadOut>(twin: &#twin<__DeltadIn>, leaf: &mut impl ::core::ops::FnMut(&__DeltadIn) -> __DeltadOut) -> #twin<__DeltadOut> {
                    #map_twin
                }
                fn primal<__DeltadS: #private::Scalar<Prim = #p>>(dual: &#twin<#private::Real<'_, __DeltadS>>) -> #twin<#p> {
                    #primal
                }
                fn flatten_twin<__DeltadT: ::core::marker::Copy>(twin: &#twin<__DeltadT>, out: &mut ::std::vec::Vec<__DeltadT>) {
                    #flatten
                }
                fn constant<'t, __DeltadS: #private::Scalar<Prim = #p> + 't>(&self) -> #twin<#private::Real<'t, __DeltadS>> {
                    #constant
                }
                fn value<__DeltadS: #private::Scalar<Prim = #p>>(dual: &#twin<#private::Real<'_, __DeltadS>>) -> #twin<__DeltadS> {
                    #value
                }
                fn adjoint<__DeltadS: #private::Scalar<Prim = #p>>(dual: &#twin<#private::Real<'_, __DeltadS>>, adjoints: &[__DeltadS]) -> #twin<__DeltadS> {
                    #adjoint
                }
                fn seed<__DeltadS: #private::Scalar<Prim = #p>>(dual: &#twin<#private::Real<'_, __DeltadS>>, seed: &#twin<__DeltadS>, adjoints: &mut [__DeltadS]) {
                    #seed
                }
                fn leaves<__DeltadS: #private::Scalar<Prim = #p>>(dual: &#twin<#private::Real<'_, __DeltadS>>, out: &mut ::std::vec::Vec<::core::option::Option<#private::DeltaId>>) {
                    #leaves
                }
                fn filled<__DeltadS: #private::Scalar<Prim = #p>>(dual: &#twin<#private::Real<'_, __DeltadS>>, fill: __DeltadS) -> #twin<__DeltadS> {
                    #filled
                }
                fn set_leaf<__DeltadS: #private::Scalar<Prim = #p>>(twin: &mut #twin<__DeltadS>, index: &mut usize, value: __DeltadS) -> bool {
                    #set_leaf
                    false
                }
                fn gather<__DeltadS: #private::Scalar<Prim = #p>>(&self, reader: &mut #private::GradReader<'_, __DeltadS>) -> #twin<__DeltadS> {
                    #gather
                }
                fn from_twin(twin: #twin<#p>) -> Self {
                    #from_twin
                }
                fn to_twin(&self) -> #twin<#p> {
                    #to_twin
                }
                fn from_active_twin(twin: #twin<#private::Active<#p>>) -> Self {
                    #from_active_twin
                }
                #[allow(unreachable_patterns)]
                fn same_shape(&self, other: &Self) -> bool {
                    #same_shape
                }
            }

            /// Compiled callers hold values of this type as its twin.
            #[automatically_derived]
            impl #private::HeldAs for #name {
                type Form = #private::AsTwin;
            }

            #[automatically_derived]
            impl<'t, __DeltadS: #private::Scalar<Prim = #p>> #private::IntoDual<'t, __DeltadS, #p, #name> for #name {
                fn into_dual(self) -> #twin<#private::Real<'t, __DeltadS>> {
                    <#name as #diff>::constant::<__DeltadS>(&self)
                }
            }

            #[automatically_derived]
            impl<'t, __DeltadS: #private::Scalar<Prim = #p>> #private::IntoDual<'t, __DeltadS, #p, #name> for #twin<#private::Real<'t, __DeltadS>> {
                fn into_dual(self) -> #twin<#private::Real<'t, __DeltadS>> {
                    self
                }
            }

            #[automatically_derived]
            impl<'t, __DeltadS: #private::Scalar<Prim = #p> + 't> #private::Lift<'t, __DeltadS> for #name {
                type Output = #twin<#private::Real<'t, __DeltadS>>;
                fn lift(self) -> Self::Output {
                    <#name as #diff>::constant::<__DeltadS>(&self)
                }
            }

            #[automatically_derived]
            impl<'t, __DeltadS: #private::Scalar<Prim = #p> + 't> #private::Lift<'t, __DeltadS> for &#name {
                type Output = #twin<#private::Real<'t, __DeltadS>>;
                fn lift(self) -> Self::Output {
                    <#name as #diff>::constant::<__DeltadS>(self)
                }
            }

            #[automatically_derived]
            impl<'t, __DeltadS: #private::Scalar<Prim = #p> + 't> #private::Arg<#twin<#private::Real<'t, __DeltadS>>> for #name {
                fn arg(self) -> #twin<#private::Real<'t, __DeltadS>> {
                    <#name as #diff>::constant::<__DeltadS>(&self)
                }
            }

            #[automatically_derived]
            impl<'t, __DeltadS: #private::Scalar<Prim = #p> + 't> #private::Lift<'t, __DeltadS> for #twin<#private::Real<'t, __DeltadS>> {
                type Output = Self;
                fn lift(self) -> Self {
                    self
                }
            }

            #[automatically_derived]
            impl<'t, __DeltadS: #private::Scalar<Prim = #p> + 't> #private::Lift<'t, __DeltadS> for &#twin<#private::Real<'t, __DeltadS>>
            where
                #twin<#private::Real<'t, __DeltadS>>: ::core::clone::Clone,
            {
                type Output = #twin<#private::Real<'t, __DeltadS>>;
                fn lift(self) -> Self::Output {
                    ::core::clone::Clone::clone(self)
                }
            }
        }
    }

    /// `seed` walks the dual and the seed together; enum variants must agree.
    /// `Differentiable::TWIN_LAYOUT` for a struct: set where the struct is
    /// laid out as its twin of machine floats, field by field (checked by
    /// the compiler: sizes, alignments, `offset_of!` each field, and the
    /// layouts of differentiated fields' own types). Not for enums.
    fn twin_layout(&self, shape: &Shape, diff: &TokenStream) -> TokenStream {
        let Shape::Struct(fields) = shape else {
            return TokenStream::new();
        };
        let (twin, p) = (&self.twin, &self.precision);
        let machine_twin = quote!(#twin<::deltad::__private::Active<#p>>);
        let checks = fields_of(fields).into_iter().map(|f| {
            let (member, ty) = (&f.member, f.ty);
            let offsets = quote! {
                ::core::mem::offset_of!(Self, #member) == ::core::mem::offset_of!(#machine_twin, #member)
            };
            if f.constant {
                offsets
            } else {
                quote!(#offsets && <#ty as #diff>::TWIN_LAYOUT.is_some())
            }
        });
        quote! {
            const TWIN_LAYOUT: ::core::option::Option<::deltad::__private::TwinLayout> =
                if ::core::mem::size_of::<Self>() == ::core::mem::size_of::<#machine_twin>()
                    && ::core::mem::align_of::<Self>() == ::core::mem::align_of::<#machine_twin>()
                    #(&& #checks)*
                {
                    // SAFETY: the layouts were compared just above, as
                    // `TwinLayout::checked` asks.
                    ::core::option::Option::Some(unsafe { ::deltad::__private::TwinLayout::checked() })
                } else {
                    ::core::option::Option::None
                };
        }
    }

    fn seed_body(&self, shape: &Shape, diff: &TokenStream) -> TokenStream {
        let twin = &self.twin;
        let arm = |path: TokenStream, fields: &Fields| {
            let infos = fields_of(fields);
            let dual_bindings: Vec<Ident> = infos
                .iter()
                .map(|f| format_ident!("__deltad_d{}", f.binding, span = Span::mixed_site()))
                .collect();
            let seed_bindings: Vec<Ident> = infos
                .iter()
                .map(|f| format_ident!("__deltad_s{}", f.binding, span = Span::mixed_site()))
                .collect();
            let pattern = |bindings: &[Ident]| match fields {
                Fields::Named(_) => {
                    let parts = infos.iter().zip(bindings).map(|(f, b)| {
                        let member = &f.member;
                        quote!(#member: #b)
                    });
                    quote!({ #(#parts),* })
                }
                Fields::Unnamed(_) => quote!((#(#bindings),*)),
                Fields::Unit => quote!(),
            };
            let (dual_pattern, seed_pattern) = (pattern(&dual_bindings), pattern(&seed_bindings));
            let actions = infos
                .iter()
                .zip(dual_bindings.iter().zip(&seed_bindings))
                .filter(|(f, _)| !f.constant)
                .map(|(f, (d, s))| {
                    let ty = f.ty;
                    quote!(<#ty as #diff>::seed::<__DeltadS>(#d, #s, adjoints);)
                });
            let all: Vec<&Ident> = dual_bindings.iter().chain(&seed_bindings).collect();
            quote!((#path #dual_pattern, #path #seed_pattern) => { #(let _ = &#all;)* #(#actions)* })
        };
        match shape {
            Shape::Struct(fields) => {
                let arm = arm(quote!(#twin), fields);
                quote!(match (dual, seed) { #arm })
            }
            Shape::Enum(variants) => {
                let arms = variants.iter().map(|v| {
                    let ident = &v.ident;
                    arm(quote!(#twin::#ident), &v.fields)
                });
                quote!(match (dual, seed) {
                    #(#arms,)*
                    _ => ::core::panic!("deltad: the seed's variant differs from the output's"),
                })
            }
        }
    }

    /// `Debug` shows the twin under the user's type name.
    fn debug_body(&self, shape: &Shape) -> TokenStream {
        let (name, twin) = (self.name.to_string(), &self.twin);
        let arm = |path: TokenStream, label: String, fields: &Fields| {
            let pattern = Self::pattern(fields);
            let infos = fields_of(fields);
            let bindings = infos.iter().map(|f| &f.binding);
            // Constant (`#[no_grad]`) fields are left out: they need not be `Debug`.
            let shown: Vec<&FieldInfo> = infos.iter().filter(|f| !f.constant).collect();
            let shown_bindings = shown.iter().map(|f| &f.binding);
            let all = bindings.collect::<Vec<_>>();
            match fields {
                Fields::Named(_) => {
                    let names = shown.iter().map(|f| match &f.member {
                        syn::Member::Named(ident) => syn::ext::IdentExt::unraw(ident).to_string(),
                        syn::Member::Unnamed(index) => index.index.to_string(),
                    });
                    quote!(#path #pattern => { #(let _ = &#all;)* f.debug_struct(#label)#(.field(#names, #shown_bindings))*.finish() })
                }
                Fields::Unnamed(_) => {
                    quote!(#path #pattern => { #(let _ = &#all;)* f.debug_tuple(#label)#(.field(#shown_bindings))*.finish() })
                }
                Fields::Unit => quote!(#path => f.write_str(#label)),
            }
        };
        match shape {
            Shape::Struct(fields) => {
                let arm = arm(quote!(#twin), name, fields);
                quote!(match self { #arm })
            }
            Shape::Enum(variants) => {
                let arms = variants.iter().map(|v| {
                    let ident = &v.ident;
                    arm(quote!(#twin::#ident), format!("{name}::{ident}"), &v.fields)
                });
                quote!(match self { #(#arms,)* })
            }
        }
    }
}

/// True if `ty` is surely `Copy` (then the twin is `Copy` when its element
/// type is): floats, integers, `bool`, `char`, arrays and tuples of them, and
/// paths that are not a known non-`Copy` standard type (other differentiable
/// types; their twins' own `Copy` impls decide).
fn likely_copy(ty: &Type) -> bool {
    match ty {
        Type::Array(array) => likely_copy(&array.elem),
        Type::Tuple(tuple) => tuple.elems.iter().all(likely_copy),
        Type::Paren(paren) => likely_copy(&paren.elem),
        Type::Path(path) => path.path.segments.last().is_some_and(|last| {
            !matches!(
                last.ident.to_string().as_str(),
                "String"
                    | "Vec"
                    | "VecDeque"
                    | "Box"
                    | "Rc"
                    | "Arc"
                    | "HashMap"
                    | "BTreeMap"
                    | "HashSet"
                    | "BTreeSet"
                    | "Option"
                    | "Cell"
                    | "RefCell"
            )
        }),
        _ => false,
    }
}
