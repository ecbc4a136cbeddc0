//! Sparse Jacobians and Hessians: `jacobian_pattern` (the sparsity
//! pattern, its columns coloured) and `sparse_jacobian` (one compressed
//! evaluation per colour); `hessian_pattern` (symmetric, star-coloured)
//! and `sparse_hessian`.
//!
//! On the compiled path the Jacobian's pattern comes from one forward pass
//! on `Tracer` (each value carries the inputs it depends on), the
//! Hessian's from the forward pass and adjoint on `Tracer` (each gradient
//! real's dependencies are its Hessian row), and the matrices from one
//! pass on `DualVec` per chunk of 8 colours (forward-over-reverse for the
//! Hessian). On the tape path the Jacobian's pattern comes from the
//! recorded graph, the Hessian's is dense, and each colour takes one pass
//! on the tape's dual numbers.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::Ident;

use super::compiled_wrappers::Scalar;
use super::Generator;
use crate::names::items;

impl Generator<'_> {
    /// `jacobian_pattern` and `sparse_jacobian` (where `jvps` exists).
    pub(super) fn sparse_jacobians(&self, stub: bool) -> TokenStream {
        if !self.has_forward_chunks() {
            return TokenStream::new();
        }
        let prim = &self.prim;
        let output_type = self.output_type();
        let (pattern_fn, sparse_fn) = (
            Ident::new(items::JACOBIAN_PATTERN_FN, Span::call_site()),
            Ident::new(items::SPARSE_JACOBIAN_FN, Span::call_site()),
        );
        let pattern = Ident::new("pattern", Span::mixed_site());
        let fn_name = self.fn_name();
        let compiled = self.compiled.is_some();
        let pattern_doc = format!(
            "The sparsity pattern of the Jacobian of `{fn_name}` at the given arguments: which \
             output reals (rows) depend on which differentiated input reals (columns), with a \
             colouring of the columns (no two columns of one colour share a row).\n\n{} A \
             dependency counts whatever its coefficient's value at this point, but control flow \
             takes the way it takes here: where branches change which inputs an output reads, \
             detect the pattern where the structure is fixed (or take \
             `SparsityPattern::union` over representative points). Detect once; pass it to \
             every `sparse_jacobian` call.",
            if compiled {
                "One pass of the forward pass on values that carry the set of inputs they \
                 depend on."
            } else {
                "From one recording's graph (`tape_graph`); a loop or call recorded as a whole \
                 makes its outputs depend on everything it reads."
            }
        );
        let sparse_doc = format!(
            "The Jacobian of `{fn_name}` over `pattern` (from `jacobian_pattern`), in compressed \
             sparse rows, and the value.\n\n{} The cost depends on the number of colours, not on \
             the number of inputs: a banded Jacobian takes a fixed number of passes at any size. \
             `to_dense()` gives the dense rows, as `jacobian` orders them.\n\n# Panics\n\nIf \
             `pattern` has other dimensions than this function's inputs and outputs here.",
            if compiled {
                "One forward pass per 8 colours (dual numbers carrying 8 tangents, tangent k \
                 seeding the columns of one colour)."
            } else {
                "One forward pass per colour."
            }
        );
        let (pattern_body, sparse_body) = if stub {
            (
                quote!(::core::unreachable!()),
                quote!(::core::unreachable!()),
            )
        } else if compiled {
            (
                self.compiled_pattern_body(),
                self.compiled_sparse_body(&pattern),
            )
        } else {
            (self.tape_pattern_body(), self.tape_sparse_body(&pattern))
        };
        self.pattern_and_matrix(
            (&pattern_fn, &pattern_doc, pattern_body),
            (&sparse_fn, &sparse_doc, sparse_body),
            quote!((#output_type, ::deltad::__private::SparseMatrix<#prim>)),
        )
    }

    /// `hessian_pattern` and `sparse_hessian` (where `hessian` exists).
    pub(super) fn sparse_hessians(&self, stub: bool) -> TokenStream {
        let prim = &self.prim;
        let (pattern_fn, sparse_fn) = (
            Ident::new(items::HESSIAN_PATTERN_FN, Span::call_site()),
            Ident::new(items::SPARSE_HESSIAN_FN, Span::call_site()),
        );
        let pattern = Ident::new("pattern", Span::mixed_site());
        let fn_name = self.fn_name();
        let compiled = self.compiled.is_some();
        let pattern_doc = format!(
            "The sparsity pattern of the Hessian of `{fn_name}` at the given arguments \
             (symmetric: an entry (i, j) where ∂²`{fn_name}`/∂x_i∂x_j may be nonzero), with a \
             star colouring (every entry is read from one of its two compressed columns; an \
             arrow-shaped Hessian takes two colours).\n\n{} As for `jacobian_pattern`, \
             control flow takes the way it takes at these arguments.",
            if compiled {
                "One pass of the forward pass and the adjoint on values that carry the set of \
                 inputs they depend on: the gradient's reals' sets are the rows."
            } else {
                "This function takes the tape, where the pattern is not traced: it is dense."
            }
        );
        let sparse_doc = format!(
            "The Hessian of `{fn_name}` over `pattern` (from `hessian_pattern`), in compressed \
             sparse rows (both triangles).\n\n{}\n\n# Panics\n\nIf `pattern` is not \
             symmetric or has another size than this function's input.",
            if compiled {
                "One forward-over-reverse pass per 8 colours (dual numbers carrying 8 tangents, \
                 tangent k seeding the columns of one colour)."
            } else {
                "One forward-over-reverse pass per colour."
            }
        );
        let count = self.input_count();
        let flatten = Ident::new(items::FLATTEN_FN, Span::call_site());
        let seeds = self.names.local("seeds");
        let (pattern_body, sparse_body) = if stub {
            (
                quote!(::core::unreachable!()),
                quote!(::core::unreachable!()),
            )
        } else {
            let pattern_body = if compiled {
                let pass = self.compiled_forward_over_reverse(&seeds, Scalar::Trace);
                quote! {
                    ::deltad::__private::TraceSeeds::hessian_pattern::<#prim>(#count, |__deltad_trace| {
                        let mut #seeds = __deltad_trace;
                        #pass
                    })
                }
            } else {
                quote! {
                    let __deltad_n: usize = #count;
                    ::deltad::__private::SparsityPattern::symmetric(
                        __deltad_n,
                        (0..__deltad_n).map(|_| 0..__deltad_n),
                    )
                }
            };
            // The compressed columns of one chunk (compiled) or colour
            // (tape), from `__deltad_start`.
            let (step, columns) = if compiled {
                // (The local the loop below defines.)
                let lanes = Ident::new("__deltad_lanes", Span::call_site());
                let columns = self.by_width(&lanes, |width| {
                    let pass = self.compiled_forward_over_reverse(&seeds, Scalar::Chunk(width));
                    let colours = width.lanes();
                    quote! {
                        let mut #seeds = ::deltad::__private::ColourSeeds::<{ #colours }>::new(#pattern, __deltad_start);
                        #pass.1
                    }
                });
                (quote!(::deltad::__private::CHUNK), columns)
            } else {
                let pass = self.forward_over_reverse(&seeds, true);
                (
                    quote!(1usize),
                    quote! {{
                        let mut #seeds = ::deltad::__private::Seeds::from_flat(#pattern.colour_seed::<#prim>(__deltad_start));
                        ::std::vec![#pass.1]
                    }},
                )
            };
            let sparse_body = quote! {
                let __deltad_n: usize = #count;
                #pattern.check_columns(__deltad_n);
                ::core::assert!(#pattern.is_symmetric(), "deltad: sparse_hessian takes the pattern hessian_pattern gives (a symmetric one)");
                let __deltad_colours = #pattern.colours();
                let mut __deltad_compressed = ::std::vec::Vec::new();
                let mut __deltad_start = 0usize;
                while __deltad_start < __deltad_colours {
                    let __deltad_lanes = ::core::cmp::Ord::min(#step, __deltad_colours - __deltad_start);
                    let __deltad_columns = #columns;
                    for (__deltad_k, __deltad_hv) in __deltad_columns.iter().take(__deltad_lanes).enumerate() {
                        let mut __deltad_flat = ::std::vec::Vec::new();
                        #flatten(__deltad_hv, &mut __deltad_flat);
                        ::deltad::__private::store_column(
                            &__deltad_flat, __deltad_start + __deltad_k, __deltad_colours, &mut __deltad_compressed,
                        );
                    }
                    __deltad_start += #step;
                }
                ::deltad::__private::SparseMatrix::from_compressed(#pattern, __deltad_n, &__deltad_compressed)
            };
            (pattern_body, sparse_body)
        };
        self.pattern_and_matrix(
            (&pattern_fn, &pattern_doc, pattern_body),
            (&sparse_fn, &sparse_doc, sparse_body),
            quote!(::deltad::__private::SparseMatrix<#prim>),
        )
    }

    /// `pattern_fn(<the arguments>) -> SparsityPattern` and
    /// `sparse_fn(<the arguments>, pattern) -> returns`, each with its doc
    /// and body.
    fn pattern_and_matrix(
        &self,
        (pattern_fn, pattern_doc, pattern_body): (&Ident, &str, TokenStream),
        (sparse_fn, sparse_doc, sparse_body): (&Ident, &str, TokenStream),
        returns: TokenStream,
    ) -> TokenStream {
        let generics = self.fn_generics();
        let where_clause = super::clone_where_clause(self.signature);
        let params = self.wrapper_params();
        let pattern = Ident::new("pattern", Span::mixed_site());
        quote! {
            #[doc = #pattern_doc]
            #[inline]
            pub fn #pattern_fn #generics (#(#params),*) -> ::deltad::__private::SparsityPattern #where_clause {
                #pattern_body
            }

            #[doc = #sparse_doc]
            #[inline]
            pub fn #sparse_fn #generics (#(#params,)* #pattern: &::deltad::__private::SparsityPattern) -> #returns #where_clause {
                #sparse_body
            }
        }
    }

    fn compiled_pattern_body(&self) -> TokenStream {
        let prim = &self.prim;
        let count = self.input_count();
        let result = Ident::new("__deltad_result", Span::mixed_site());
        let pass = self.compiled_seeded_pass(Scalar::Trace, quote!(__deltad_trace), None);
        let reals = self.pass_reals(&result, Scalar::Trace);
        quote! {
            ::deltad::__private::TraceSeeds::pattern::<#prim>(#count, |__deltad_trace| {
                let #result = #pass;
                (#reals).into_owned()
            })
        }
    }

    fn compiled_sparse_body(&self, pattern: &Ident) -> TokenStream {
        let prim = &self.prim;
        let count = self.input_count();
        let (colours, compressed) = (
            Ident::new("__deltad_colours", Span::call_site()),
            Ident::new("__deltad_compressed", Span::call_site()),
        );
        let passes = self.compiled_column_passes(&colours, &compressed, |width| {
            let lanes = width.lanes();
            quote!(::deltad::__private::ColourSeeds::<{ #lanes }>::new(#pattern, __deltad_start))
        });
        quote! {
            #pattern.check_columns(#count);
            let #colours = #pattern.colours();
            let mut #compressed: ::std::vec::Vec<#prim> = ::std::vec::Vec::new();
            let mut __deltad_m = 0usize;
            let __deltad_value = #passes;
            let __deltad_jacobian = ::deltad::__private::SparseMatrix::from_compressed(
                #pattern, __deltad_m, &#compressed,
            );
            (__deltad_value, __deltad_jacobian)
        }
    }

    fn tape_pattern_body(&self) -> TokenStream {
        let graph_fn = Ident::new(items::TAPE_GRAPH_FN, Span::call_site());
        let args = self.signature.params.iter().map(|p| &p.name);
        quote! {
            ::deltad::__private::SparsityPattern::from_graph(&#graph_fn(#(#args),*))
        }
    }

    fn tape_sparse_body(&self, pattern: &Ident) -> TokenStream {
        let prim = &self.prim;
        let count = self.input_count();
        let seeds = self.names.local("seeds");
        let pass = self.tape_forward(&seeds, true);
        let results_type = self.results_type();
        quote! {
            #pattern.check_columns(#count);
            let __deltad_colours = #pattern.colours();
            let mut __deltad_compressed: ::std::vec::Vec<#prim> = ::std::vec::Vec::new();
            let mut __deltad_m = 0usize;
            let __deltad_value = ::deltad::__private::chunked_passes(
                __deltad_colours,
                1,
                |__deltad_colour, __deltad_first| {
                    let mut #seeds = ::deltad::__private::Seeds::from_flat(#pattern.colour_seed::<#prim>(__deltad_colour));
                    let (__deltad_v, __deltad_tangent) = #pass;
                    let __deltad_column =
                        ::deltad::__private::flatten_value::<#prim, #results_type>(&__deltad_tangent);
                    __deltad_m = __deltad_column.len();
                    ::deltad::__private::store_column(
                        &__deltad_column, __deltad_colour, __deltad_colours, &mut __deltad_compressed,
                    );
                    __deltad_first.then_some(__deltad_v)
                },
            );
            let __deltad_jacobian = ::deltad::__private::SparseMatrix::from_compressed(
                #pattern, __deltad_m, &__deltad_compressed,
            );
            (__deltad_value, __deltad_jacobian)
        }
    }
}
