//! Forward mode and second order: `jvp` (the recording pass on constant dual
//! numbers: nothing is recorded, every value carries its tangent) and
//! `hvp`, `hessian`, `hessian_diagonal`, `laplacian` (forward-over-reverse:
//! the recording pass and the reverse sweep on dual numbers, whose adjoint
//! tangents are Hessian-vector products).

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::Ident;

use super::compiled_wrappers::Scalar;
use super::{Generator, InputMode, Inputs};
use crate::names::items;
use crate::signature::{Output, ParamKind, Passing};

impl Generator<'_> {
    /// True if the second-order functions exist: a real-valued function
    /// without `&mut` results (they require its by-value parameters without
    /// derivatives to be `Clone`: the Hessian runs one pass per input real).
    pub(super) fn has_second_order(&self) -> bool {
        matches!(self.signature.output, Output::Real)
            && !self.has_in_out()
            && super::has_check(self.signature)
    }

    pub(super) fn higher_order(&self, stub: bool) -> TokenStream {
        let jvp = self.jvp(stub);
        let chunks = self.forward_chunks(stub);
        let sparse = self.sparse_jacobians(stub);
        let second = self.has_second_order().then(|| {
            let second = self.second_order(stub);
            let sparse = self.sparse_hessians(stub);
            quote!(#second #sparse)
        });
        let flatten = self.flatten_grad();
        let pieces = self.grad_pieces();
        quote! {
            #jvp
            #chunks
            #sparse
            #second
            #flatten
            #pieces
        }
    }

    /// True if `Grad`'s element type is its every real's type (no field of
    /// a structured parameter's own type), so a `Grad` of another element
    /// type (dual values of an enclosing derivative) can be flattened.
    pub(super) fn grad_is_generic(&self) -> bool {
        !self.signature.params.iter().any(|p| {
            matches!(
                p.kind,
                ParamKind::Structured { .. } | ParamKind::InOut { .. }
            )
        })
    }

    /// `__deltad_flatten(grad, out)`: a `Grad`'s reals in input leaf order
    /// (tangents given as a `Grad`, custom derivative rows); of any element
    /// type `E` where `grad_is_generic`, of machine floats otherwise.
    fn flatten_grad(&self) -> TokenStream {
        let prim = &self.prim;
        let flatten = Ident::new(items::FLATTEN_FN, Span::call_site());
        let pushes = self.piece_params().map(|param| {
            let name = &param.name;
            match &param.kind {
                ParamKind::Real => quote!(out.push(grad.#name);),
                ParamKind::Structured { value, .. } | ParamKind::InOut { value, .. } => {
                    let d = quote!(<#value as ::deltad::__private::Differentiable<#prim>>);
                    quote!(#d::flatten_twin(&#d::to_twin(&grad.#name), out);)
                }
                _ => quote!(out.extend_from_slice(&grad.#name[..]);),
            }
        });
        let params = &self.signature.generics;
        let (element, element_param) = if self.grad_is_generic() {
            let element = Ident::new("__DeltadE", Span::call_site());
            let param = quote!(#element: ::core::marker::Copy + ::deltad::__private::GradElement<Prim = #prim>);
            (quote!(#element), Some(param))
        } else {
            (quote!(#prim), None)
        };
        let grad = Ident::new(items::GRAD, Span::call_site());
        let consts = self.const_names();
        let where_clause = &self.signature.where_clause;
        quote! {
            #[doc(hidden)]
            #[inline]
            pub fn #flatten<#(#params,)* #element_param>(
                grad: &#grad<#(#consts,)* #element>,
                out: &mut ::std::vec::Vec<#element>,
            ) #where_clause {
                #(#pushes)*
            }
        }
    }

    /// The differentiated parameters, in order: the fields of a `Grad`
    /// that [`Self::flatten_grad`] and [`Self::grad_pieces`] read.
    fn piece_params(&self) -> impl Iterator<Item = &crate::signature::Param> {
        self.signature.params.iter().filter(|param| {
            !matches!(
                param.kind,
                ParamKind::Constant | ParamKind::Discrete | ParamKind::Function { .. }
            )
        })
    }

    /// The number of pieces of a `Grad`: one per differentiated parameter.
    pub(super) fn piece_count(&self) -> usize {
        self.piece_params().count()
    }

    /// `__deltad_pieces(grad, out)`: a `Grad` of machine floats as pieces
    /// that, put end to end, are its reals in input leaf order, written
    /// into `out` (one per differentiated parameter): its flat fields
    /// borrowed where they are, the reals of a user type's field copied
    /// out (the directions of chunked forward passes, which must not copy
    /// long tangents).
    fn grad_pieces(&self) -> TokenStream {
        let prim = &self.prim;
        let pieces = Ident::new(items::PIECES_FN, Span::call_site());
        let writes = self.piece_params().enumerate().map(|(at, param)| {
            let name = &param.name;
            let piece = match &param.kind {
                ParamKind::Real => quote! {
                    ::deltad::__private::Cow::Borrowed(::core::slice::from_ref(&grad.#name))
                },
                ParamKind::Structured { value, .. } | ParamKind::InOut { value, .. } => {
                    let d = quote!(<#value as ::deltad::__private::Differentiable<#prim>>);
                    quote! {{
                        let mut __deltad_flat = ::std::vec::Vec::new();
                        #d::flatten_twin(&#d::to_twin(&grad.#name), &mut __deltad_flat);
                        ::deltad::__private::Cow::Owned(__deltad_flat)
                    }}
                }
                _ => quote!(::deltad::__private::Cow::Borrowed(&grad.#name[..])),
            };
            quote!(out[#at] = #piece;)
        });
        let params = &self.signature.generics;
        let grad = Ident::new(items::GRAD, Span::call_site());
        let consts = self.const_names();
        let where_clause = &self.signature.where_clause;
        quote! {
            #[doc(hidden)]
            #[inline]
            pub fn #pieces<'__deltad_g, #(#params,)*>(
                grad: &'__deltad_g #grad<#(#consts,)* #prim>,
                out: &mut [::deltad::__private::Cow<'__deltad_g, [#prim]>],
            ) #where_clause {
                #(#writes)*
            }
        }
    }

    fn jvp(&self, stub: bool) -> TokenStream {
        let generics = self.fn_generics();
        let where_clause = &self.signature.where_clause;
        let params = self.wrapper_params();
        let grad_type = self.grad_type();
        let output_type = self.output_type();
        let results_type = self.results_type();
        let jvp_fn = Ident::new(items::JVP_FN, Span::call_site());
        let flatten = Ident::new(items::FLATTEN_FN, Span::call_site());
        let tangent = Ident::new("tangent", Span::mixed_site());
        let fn_name = self.fn_name();
        let doc = format!(
            "Forward mode: the value of `{fn_name}` and the derivative of its results along \
             `tangent` (J·tangent), shaped like the results.\n\n`tangent` gives one direction \
             per differentiated parameter, in a `Grad` (shaped like the parameters). One pass \
             of `{fn_name}` on dual numbers; nothing is recorded."
        );
        let checks = self.tangent_checks(&quote!(#tangent), &quote!(::core::option::Option::None));
        let body = if stub {
            quote!(::core::unreachable!())
        } else if self.compiled.is_some() {
            let body = self.compiled_jvp_body(&tangent);
            quote!(#checks #body)
        } else {
            let seeds = self.names.local("seeds");
            let pass = self.tape_forward(&seeds, false);
            quote! {
                #checks
                let mut __deltad_flat = ::std::vec::Vec::new();
                #flatten(#tangent, &mut __deltad_flat);
                let mut #seeds = ::deltad::__private::Seeds::from_flat(__deltad_flat);
                #pass
            }
        };
        quote! {
            #[doc = #doc]
            #[inline]
            pub fn #jvp_fn #generics (#(#params,)* #tangent: &#grad_type) -> (#output_type, #results_type) #where_clause {
                #body
            }
        }
    }

    /// One forward pass on the tape's dual numbers (recording nothing),
    /// tangents from the `Seeds` local `seeds`: a block ending in
    /// `(value, tangent)`, the tangent shaped like the results. `repeated`:
    /// one of many passes (by-value parameters are cloned).
    pub(super) fn tape_forward(&self, seeds: &Ident, repeated: bool) -> TokenStream {
        let prim = &self.prim;
        let results_type = self.results_type();
        let tape = &self.names.tape;
        let reader = self.names.local("reader");
        let output = self.names.local("output");
        let results = self.names.local("results");
        let record_fn = Ident::new(items::RECORD_FN, Span::call_site());
        let mode = InputMode::Dual {
            seeds,
            active: false,
            repeated,
        };
        let mut inputs = self.inputs_in(&reader, &mode);
        let (bind, write_back, value) = self.results(
            &output,
            &mut inputs,
            &quote!(::deltad::__private::forward_value),
        );
        let Inputs {
            prepare,
            record_args,
            ..
        } = inputs;
        quote! {{
            let #tape = &::deltad::__private::Tape::<::deltad::__private::Dual<#prim>>::forward_only();
            #(#prepare)*
            let #output = #record_fn(#tape, #(#record_args),*);
            #bind
            let __deltad_value = #value;
            let __deltad_tangent = ::deltad::__private::forward_tangent::<#prim, #results_type>(&#results);
            #write_back
            (__deltad_value, __deltad_tangent)
        }}
    }

    /// One forward-over-reverse pass with tangents from the `Seeds` local
    /// `seeds`: statements ending in `(gradient, H·tangent)`, two `Grad`s
    /// (the values and the tangents of the adjoints).
    pub(super) fn forward_over_reverse(&self, seeds: &Ident, repeated: bool) -> TokenStream {
        let prim = &self.prim;
        let grad_type = self.grad_type();
        let (tape, adjoints) = (&self.names.tape, self.names.local("adjoints"));
        let reader = self.names.local("reader");
        let output = self.names.local("output");
        let record_fn = Ident::new(items::RECORD_FN, Span::call_site());
        let mode = InputMode::Dual {
            seeds,
            active: true,
            repeated,
        };
        let Inputs {
            prepare,
            record_args,
            fields,
            ..
        } = self.inputs_in(&reader, &mode);
        let hv = self.grad_value(&reader, &quote!(&__deltad_tangents[..]), &fields);
        let gradient = self.grad_value(&reader, &quote!(&__deltad_values[..]), &fields);
        quote! {
            <::deltad::__private::Dual<#prim> as ::deltad::__private::Scalar>::with_tape(|#tape, #adjoints| {
                #(#prepare)*
                let #output = #record_fn(#tape, #(#record_args),*);
                ::deltad::__private::sweep_from(#tape, &#output, #adjoints);
                let (__deltad_values, __deltad_tangents) = ::deltad::__private::split_duals(&#adjoints[..]);
                let __deltad_gradient: #grad_type = #gradient;
                let __deltad_hv: #grad_type = #hv;
                (__deltad_gradient, __deltad_hv)
            })
        }
    }

    /// The number of differentiated input reals, from the parameters.
    pub(super) fn input_count(&self) -> TokenStream {
        let counts = self
            .signature
            .params
            .iter()
            .filter_map(|param| self.param_count(param));
        quote!(0usize #(+ #counts)*)
    }

    /// The number of input reals of `param` (none: not differentiated).
    fn param_count(&self, param: &crate::signature::Param) -> Option<TokenStream> {
        let prim = &self.prim;
        let name = &param.name;
        let count = |value: &syn::Type, of: TokenStream| quote!(::deltad::__private::real_count::<#prim, #value>(#of));
        Some(match &param.kind {
            ParamKind::Real => quote!(1usize),
            ParamKind::Structured { value, passing } | ParamKind::InOut { value, passing } => {
                match borrowed_value(name, passing) {
                    Ok(borrowed) => count(value, borrowed),
                    Err(elem) => {
                        let each = count(elem, quote!(e));
                        quote!(#name.iter().map(|e| #each).sum::<usize>())
                    }
                }
            }
            ParamKind::Constant | ParamKind::Discrete | ParamKind::Function { .. } => return None,
            _ => quote!(#name.len()),
        })
    }

    /// [`tangent_checks`](Self::tangent_checks) for each of the slice of
    /// `Grad`s `tangents`, naming a misshapen one by its place (nothing
    /// where no parameter needs a check).
    pub(super) fn each_tangent_checks(&self, tangents: &TokenStream) -> TokenStream {
        let each = quote!(__deltad_t);
        let checks = self.tangent_checks(&each, &quote!(::core::option::Option::Some(__deltad_k)));
        if checks.is_empty() {
            return checks;
        }
        quote! {
            for (__deltad_k, #each) in #tangents.iter().enumerate() {
                #checks
            }
        }
    }

    /// Statements that panic unless the `Grad` `tangent` holds as many
    /// reals for each parameter as the parameter (`index`, an
    /// `Option<usize>`: which of many tangents it is, for the message). A
    /// tangent shaped otherwise would be read across the parameters'
    /// boundaries, a wrong direction rather than an error.
    /// (Within a parameter of a nested or user type, the reals must also
    /// lie in buffers of the same lengths: `Differentiable::same_shape`.)
    pub(super) fn tangent_checks(&self, tangent: &TokenStream, index: &TokenStream) -> TokenStream {
        let prim = &self.prim;
        let checks = self.signature.params.iter().filter_map(|param| {
            let name = &param.name;
            let label = name.to_string();
            let (got, inside) = match &param.kind {
                // Shaped by their types.
                ParamKind::Real | ParamKind::Array { .. } | ParamKind::ArrayRef { .. } => {
                    return None
                }
                ParamKind::Structured { value, passing } | ParamKind::InOut { value, passing } => {
                    let field = quote!(#tangent.#name);
                    let diff = |ty: &syn::Type| quote!(<#ty as ::deltad::__private::Differentiable<#prim>>);
                    let same = match borrowed_value(name, passing) {
                        Ok(borrowed) => {
                            let diff = diff(value);
                            quote!(#diff::same_shape(&#field, #borrowed))
                        }
                        Err(elem) => {
                            let diff = diff(elem);
                            quote! {
                                #field.len() == #name.len()
                                    && #name.iter().zip(#field.iter()).all(|(p, t)| #diff::same_shape(t, p))
                            }
                        }
                    };
                    (
                        quote!(::deltad::__private::real_count::<#prim, #value>(&#field)),
                        Some(quote!(::deltad::__private::check_tangent_shape(#same, #index, #label);)),
                    )
                }
                _ => (quote!(#tangent.#name.len()), None),
            };
            let expected = self.param_count(param)?;
            Some(quote! {
                ::deltad::__private::check_tangent(#got, #expected, #index, #label);
                #inside
            })
        });
        quote!(#(#checks)*)
    }

    fn second_order(&self, stub: bool) -> TokenStream {
        let generics = self.fn_generics();
        let where_clause = super::clone_where_clause(self.signature);
        let params = self.wrapper_params();
        let prim = &self.prim;
        let grad_type = self.grad_type();
        let name_of = |name: &str| Ident::new(name, Span::call_site());
        let grad_and_hvp_fn = name_of(items::GRAD_AND_HVP_FN);
        let (hvp_fn, hessian_fn, diagonal_fn, laplacian_fn, flatten) = (
            name_of(items::HVP_FN),
            name_of(items::HESSIAN_FN),
            name_of(items::HESSIAN_DIAGONAL_FN),
            name_of(items::LAPLACIAN_FN),
            name_of(items::FLATTEN_FN),
        );
        let fn_name = self.fn_name();
        let v = Ident::new("v", Span::mixed_site());
        let vs = Ident::new("vs", Span::mixed_site());
        let hvps_fn = name_of(items::HVPS_FN);
        let seeds = self.names.local("seeds");
        let reader = self.names.local("reader");
        let body = |body: TokenStream| {
            if stub {
                quote!(::core::unreachable!())
            } else {
                body
            }
        };
        let compiled = self.compiled.is_some();
        let (once, repeated) = if compiled {
            let pass = self.compiled_forward_over_reverse(&seeds, Scalar::Dual);
            (pass.clone(), pass)
        } else {
            (
                self.forward_over_reverse(&seeds, false),
                self.forward_over_reverse(&seeds, true),
            )
        };
        let chunk = ::quote::quote!(::deltad::__private::CHUNK);
        // Hessian-vector products as an iterator of `Grad`s: compiled, one
        // pass per chunk of directions, seeded by the `ChunkSeeds`
        // constructor call `chunk_seeds`; on the tape, one pass each,
        // seeded by `seeds_of`.
        let hvps_of = |count: TokenStream, chunk_seeds: TokenStream, seeds_of: TokenStream| {
            if compiled {
                // (Call-site: the seeds' tokens name it.)
                let lanes = Ident::new("__deltad_lanes", Span::call_site());
                let pass = self.by_width(&lanes, |width| {
                    let pass = self.compiled_forward_over_reverse(&seeds, Scalar::Chunk(width));
                    let seeds_of = self.chunk_seeds(width, chunk_seeds.clone());
                    quote! {
                        let mut #seeds = #seeds_of;
                        #pass.1
                    }
                });
                quote! {
                    (0..#count).step_by(#chunk).flat_map(|__deltad_start| {
                        let #lanes = ::core::cmp::Ord::min(#chunk, #count - __deltad_start);
                        let __deltad_chunk: ::std::vec::Vec<#grad_type> = #pass;
                        __deltad_chunk.into_iter().take(#lanes)
                    })
                }
            } else {
                quote! {
                    (0..#count).map(|__deltad_start| -> #grad_type {
                        let mut #seeds = #seeds_of;
                        #repeated.1
                    })
                }
            }
        };
        let count = self.input_count();
        // The diagonal as a `Grad`, read from a flat list.
        let fields = self.inputs(&reader).fields;
        let diagonal_grad = self.grad_value(&reader, &quote!(&__deltad_diagonal[..]), &fields);
        let v_checks = self.tangent_checks(&quote!(#v), &quote!(::core::option::Option::None));
        let hvp_body = body(quote! {
            #v_checks
            let mut __deltad_flat = ::std::vec::Vec::new();
            #flatten(#v, &mut __deltad_flat);
            let mut #seeds = ::deltad::__private::Seeds::from_flat(__deltad_flat);
            #once.1
        });
        let grad_and_hvp_body = body(quote! {
            #v_checks
            let mut __deltad_flat = ::std::vec::Vec::new();
            #flatten(#v, &mut __deltad_flat);
            let mut #seeds = ::deltad::__private::Seeds::from_flat(__deltad_flat);
            let (__deltad_gradient, __deltad_hv) = #once;
            (__deltad_gradient, __deltad_hv)
        });
        let rows = hvps_of(
            count.clone(),
            quote!(unit_block(__deltad_start)),
            quote!(::deltad::__private::Seeds::<#prim>::unit(__deltad_start)),
        );
        let per = self.piece_count();
        let hvps = hvps_of(
            quote!(#vs.len()),
            quote!(given(
                &__deltad_directions[__deltad_start * #per..(__deltad_start + __deltad_lanes) * #per],
                __deltad_lanes,
                __deltad_start
            )),
            quote!(::deltad::__private::Seeds::from_flat(
                __deltad_directions[__deltad_start].clone()
            )),
        );
        // The directions: compiled, in pieces read where `vs` holds them;
        // on the tape, flat.
        let directions = if compiled {
            let pieces = name_of(items::PIECES_FN);
            quote! {
                let mut __deltad_directions: ::std::vec::Vec<::deltad::__private::Cow<'_, [#prim]>> =
                    ::std::vec![::deltad::__private::Cow::Borrowed(&[][..]); #vs.len() * #per];
                for (__deltad_k, __deltad_v) in #vs.iter().enumerate() {
                    #pieces(__deltad_v, &mut __deltad_directions[__deltad_k * #per..(__deltad_k + 1) * #per]);
                }
            }
        } else {
            quote! {
                let __deltad_directions: ::std::vec::Vec<::std::vec::Vec<#prim>> = #vs
                    .iter()
                    .map(|__deltad_v| {
                        let mut __deltad_flat = ::std::vec::Vec::new();
                        #flatten(__deltad_v, &mut __deltad_flat);
                        __deltad_flat
                    })
                    .collect();
            }
        };
        let vs_checks = self.each_tangent_checks(&quote!(#vs));
        let hvps_body = body(quote! {
            #vs_checks
            #directions
            #hvps.collect()
        });
        let hessian_body = body(quote!(#rows.collect()));
        let diagonal = quote! {
            let __deltad_diagonal: ::std::vec::Vec<#prim> = #rows
                .enumerate()
                .map(|(i, row)| {
                    let mut flat = ::std::vec::Vec::new();
                    #flatten(&row, &mut flat);
                    flat[i]
                })
                .collect();
        };
        let diagonal_body = body(quote! {
            #diagonal
            #diagonal_grad
        });
        let laplacian_body = body(quote! {
            #diagonal
            __deltad_diagonal.iter().copied().sum()
        });
        let per = if compiled {
            "one forward-over-reverse pass per 8 input reals (dual numbers carrying 8 tangents)"
        } else {
            "one forward-over-reverse pass per input real"
        };
        let docs = [
            format!("The Hessian of `{fn_name}` times `v` (shaped like the parameters, in a `Grad`): one forward-over-reverse pass (the reverse sweep on dual numbers)."),
            format!("The Hessian of `{fn_name}`: row i is the gradient of ∂`{fn_name}`/∂x_i, for the differentiated input reals x_i in leaf order; {per}."),
            format!("The diagonal of the Hessian of `{fn_name}` (∂²`{fn_name}`/∂x_i²), shaped like the parameters; {per}."),
            format!("The Laplacian of `{fn_name}`: the trace of its Hessian; {per}."),
            format!("The Hessian of `{fn_name}` times each of `vs` (each shaped like the parameters, in a `Grad`), in order; {}.", if compiled {
                "one forward-over-reverse pass per 8 of them (dual numbers carrying 8 tangents)"
            } else {
                "one forward-over-reverse pass each"
            }),
        ];
        let [hvp_doc, hessian_doc, diagonal_doc, laplacian_doc, hvps_doc] = &docs;
        let grad_and_hvp_doc = format!(
            "The gradient of `{fn_name}` and its Hessian times `v`, from the one forward-over-reverse pass `hvp` runs (the gradient is the values of the adjoints whose tangents are H·v): the price of `hvp` alone."
        );
        quote! {
            #[doc = #hvp_doc]
            #[inline]
            pub fn #hvp_fn #generics (#(#params,)* #v: &#grad_type) -> #grad_type #where_clause {
                #hvp_body
            }

            #[doc = #hvps_doc]
            #[inline]
            pub fn #hvps_fn #generics (#(#params,)* #vs: &[#grad_type]) -> ::std::vec::Vec<#grad_type> #where_clause {
                #hvps_body
            }

            #[doc = #grad_and_hvp_doc]
            #[inline]
            pub fn #grad_and_hvp_fn #generics (#(#params,)* #v: &#grad_type) -> (#grad_type, #grad_type) #where_clause {
                #grad_and_hvp_body
            }

            #[doc = #hessian_doc]
            #[inline]
            pub fn #hessian_fn #generics (#(#params),*) -> ::std::vec::Vec<#grad_type> #where_clause {
                #hessian_body
            }

            #[doc = #diagonal_doc]
            #[inline]
            pub fn #diagonal_fn #generics (#(#params),*) -> #grad_type #where_clause {
                #diagonal_body
            }

            #[doc = #laplacian_doc]
            #[inline]
            pub fn #laplacian_fn #generics (#(#params),*) -> #prim #where_clause {
                #laplacian_body
            }
        }
    }
}

/// A structured parameter `name` passed as `passing`, as a reference to a
/// value of its type; for a slice of them (read element by element), the
/// elements' type instead.
fn borrowed_value<'a>(name: &Ident, passing: &'a Passing) -> Result<TokenStream, &'a syn::Type> {
    match passing {
        Passing::Value => Ok(quote!(&#name)),
        Passing::Ref => Ok(quote!(&*#name)),
        Passing::View => Ok(quote!(&#name.to_owned())),
        Passing::Slice { elem } => Err(elem),
    }
}
