//! Sparse Jacobians: `jacobian_pattern` (the sparsity pattern, coloured)
//! and `sparse_jacobian` (one compressed evaluation per colour).
//!
//! On the compiled path the pattern comes from one forward pass on
//! `Tracer` (each value carries the inputs it depends on) and the Jacobian
//! from one forward pass on `DualVec` per chunk of 8 colours. On the tape
//! path the pattern comes from the recorded graph, and each colour takes
//! one forward pass on the tape's dual numbers.

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
        let generics = self.fn_generics();
        let where_clause = super::clone_where_clause(self.signature);
        let params = self.wrapper_params();
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
        quote! {
            #[doc = #pattern_doc]
            #[inline]
            pub fn #pattern_fn #generics (#(#params),*) -> ::deltad::__private::SparsityPattern #where_clause {
                #pattern_body
            }

            #[doc = #sparse_doc]
            #[inline]
            pub fn #sparse_fn #generics (#(#params,)* #pattern: &::deltad::__private::SparsityPattern) -> (#output_type, ::deltad::__private::SparseJacobian<#prim>) #where_clause {
                #sparse_body
            }
        }
    }

    fn compiled_pattern_body(&self) -> TokenStream {
        let prim = &self.prim;
        let count = self.input_count();
        let result = Ident::new("__deltad_result", Span::mixed_site());
        let pass = self.compiled_seeded_pass(Scalar::Trace, quote!(__deltad_trace));
        let reals = self.pass_reals(&result, Scalar::Trace);
        quote! {
            ::deltad::__private::TraceSeeds::pattern::<#prim>(#count, |__deltad_trace| {
                let #result = #pass;
                #reals
            })
        }
    }

    fn compiled_sparse_body(&self, pattern: &Ident) -> TokenStream {
        let prim = &self.prim;
        let count = self.input_count();
        let result = Ident::new("__deltad_result", Span::mixed_site());
        let chunk = self.scalar_type(Scalar::Chunk);
        let pass = self.compiled_seeded_pass(
            Scalar::Chunk,
            quote!(::deltad::__private::ColourSeeds::<{ ::deltad::__private::CHUNK }>::new(#pattern, __deltad_start)),
        );
        let value = self.chunk_part(&result, quote!(|__deltad_d: #chunk| __deltad_d.value));
        let reals = self.pass_reals(&result, Scalar::Chunk);
        quote! {
            #pattern.check_columns(#count);
            let mut __deltad_jacobian = ::deltad::__private::SparseJacobian::<#prim>::zeros(#pattern);
            let mut __deltad_start = 0usize;
            let mut __deltad_value = ::core::option::Option::None;
            while __deltad_value.is_none() || __deltad_start < #pattern.colours() {
                let #result = #pass;
                __deltad_jacobian.store_colours(&#reals, __deltad_start);
                if __deltad_value.is_none() {
                    __deltad_value = ::core::option::Option::Some(#value);
                }
                __deltad_start += ::deltad::__private::CHUNK;
            }
            match __deltad_value {
                ::core::option::Option::Some(__deltad_value) => (__deltad_value, __deltad_jacobian),
                ::core::option::Option::None => ::core::unreachable!(),
            }
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
            let mut __deltad_jacobian = ::deltad::__private::SparseJacobian::<#prim>::zeros(#pattern);
            let mut __deltad_colour = 0usize;
            let mut __deltad_value = ::core::option::Option::None;
            while __deltad_value.is_none() || __deltad_colour < #pattern.colours() {
                let mut #seeds = ::deltad::__private::Seeds::from_flat(#pattern.colour_seed::<#prim>(__deltad_colour));
                let (__deltad_v, __deltad_tangent) = #pass;
                let __deltad_column =
                    ::deltad::__private::flatten_value::<#prim, #results_type>(&__deltad_tangent);
                __deltad_jacobian.store_colour(&__deltad_column, __deltad_colour);
                __deltad_value.get_or_insert(__deltad_v);
                __deltad_colour += 1;
            }
            match __deltad_value {
                ::core::option::Option::Some(__deltad_value) => (__deltad_value, __deltad_jacobian),
                ::core::option::Option::None => ::core::unreachable!(),
            }
        }
    }
}
