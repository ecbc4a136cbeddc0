//! Vector forward mode and the choice of mode for Jacobians:
//!
//! * `jvps`: the derivative along many tangents; on the compiled path one
//!   forward pass on `DualVec` per chunk of `CHUNK` tangents;
//! * `jacobian_fwd`: the Jacobian by columns, chunks of unit tangents;
//! * `jacobian_rev`: by rows, one reverse sweep per chunk of `CHUNK` output
//!   reals on the compiled path, their adjoints the lanes of `Lanes`
//!   (`compiled_wrappers.rs`), one per output real on the tape;
//! * `jacobian`: forward chunks where the function has fewer input reals
//!   than output reals, reverse sweeps otherwise (compiled path).
//!
//! On the tape path `jvps` and `jacobian_fwd` take one forward pass per
//! tangent (the tape's dual numbers carry one tangent).

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::Ident;

use super::compiled::FWD_FN;
use super::compiled_wrappers::{Scalar, Width};
use super::Generator;
use crate::names::items;
use crate::signature::{BufferOutput, Output, ParamKind};

impl Generator<'_> {
    /// True if `jvps` and `jacobian_fwd` exist: the function may be called
    /// many times (no `&mut` results) and has a result.
    pub(super) fn has_forward_chunks(&self) -> bool {
        super::has_check(self.signature) && !matches!(self.signature.output, Output::Unit)
    }

    /// True if `jacobian` may switch to forward chunks: they exist, the
    /// function is compiled, and calling it many times adds no `Clone`
    /// bound that `jacobian` itself does not have.
    pub(super) fn jacobian_chooses(&self) -> bool {
        self.has_forward_chunks()
            && self.compiled.is_some()
            && !matches!(self.signature.output, Output::Real)
            && self.signature.params.iter().all(|p| {
                matches!(p.kind, ParamKind::Function { .. })
                    || p.kind.is_active()
                    || super::surely_clone(&p.ty)
            })
    }

    /// `jvps` and `jacobian_fwd`.
    pub(super) fn forward_chunks(&self, stub: bool) -> TokenStream {
        if !self.has_forward_chunks() {
            return TokenStream::new();
        }
        let generics = self.fn_generics();
        let where_clause = super::clone_where_clause(self.signature);
        let params = self.wrapper_params();
        let grad_type = self.grad_type();
        let output_type = self.output_type();
        let results_type = self.results_type();
        let (jvps_fn, jvps_into_fn, jacobian_fwd_fn) = (
            Ident::new(items::JVPS_FN, Span::call_site()),
            Ident::new(items::JVPS_INTO_FN, Span::call_site()),
            Ident::new(items::JACOBIAN_FWD_FN, Span::call_site()),
        );
        let tangents = Ident::new("tangents", Span::mixed_site());
        let out = Ident::new("out", Span::mixed_site());
        let fn_name = self.fn_name();
        let jvps_doc = format!(
            "Forward mode along many directions: the value of `{fn_name}` and, for each \
             tangent, the derivative of its results along it (J·tangent), shaped like the \
             results.\n\nEach tangent gives one direction per differentiated parameter, in a \
             `Grad`. {}",
            if self.compiled.is_some() {
                "One pass of the forward pass per chunk of 8 tangents (dual numbers carrying \
                 8 tangents: the values and the local derivatives are computed once per \
                 chunk); nothing is recorded."
            } else {
                "One forward pass on dual numbers per tangent; nothing is recorded."
            }
        );
        let jacobian_fwd_doc = format!(
            "The Jacobian of `{fn_name}` by forward mode: its value and one `Grad` per real of \
             the output, as `jacobian` returns them.\n\n{}",
            if self.compiled.is_some() {
                "One forward pass per 8 input reals (a chunk of 8 unit tangents): the mode \
                 of choice when the function has fewer input reals than output reals."
            } else {
                "One forward pass per input real (this function takes the tape; on it the \
                 dual numbers carry one tangent)."
            }
        );
        let jvps_into_doc = format!(
            "[`jvps`](Self::jvps) written into `out`: the derivative along `tangents[k]` in \
             `out[k]` (`out` made as long as `tangents`), in the memory of the results `out` \
             holds where they are `Vec`s; the value of `{fn_name}` returned. Called again \
             with the same `out`, it allocates no new results."
        );
        let (jvps_into_body, jacobian_fwd_body) = if stub {
            (
                quote!(::core::unreachable!()),
                quote!(::core::unreachable!()),
            )
        } else if self.compiled.is_some() {
            (
                self.compiled_jvps_body(&tangents, &out),
                self.compiled_jacobian_fwd_body(),
            )
        } else {
            (
                self.tape_jvps_body(&tangents, &out),
                self.tape_jacobian_fwd_body(),
            )
        };
        let checks = self.each_tangent_checks(&quote!(#tangents));
        let jvps_into_body = if stub || checks.is_empty() {
            jvps_into_body
        } else {
            quote!(#checks #jvps_into_body)
        };
        let args = self.signature.params.iter().map(|p| &p.name);
        let jvps_body = quote! {
            let mut #out = ::std::vec::Vec::with_capacity(#tangents.len());
            let __deltad_value = #jvps_into_fn(#(#args,)* #tangents, &mut #out);
            (__deltad_value, #out)
        };
        quote! {
            #[doc = #jvps_doc]
            #[inline]
            pub fn #jvps_fn #generics (#(#params,)* #tangents: &[#grad_type]) -> (#output_type, ::std::vec::Vec<#results_type>) #where_clause {
                #jvps_body
            }

            #[doc = #jvps_into_doc]
            #[inline]
            pub fn #jvps_into_fn #generics (#(#params,)* #tangents: &[#grad_type], #out: &mut ::std::vec::Vec<#results_type>) -> #output_type #where_clause {
                #jvps_into_body
            }

            #[doc = #jacobian_fwd_doc]
            #[inline]
            pub fn #jacobian_fwd_fn #generics (#(#params),*) -> (#output_type, ::std::vec::Vec<#grad_type>) #where_clause {
                #jacobian_fwd_body
            }
        }
    }

    /// A call of `jacobian_fwd` with the wrapper's own arguments (for
    /// `jacobian`'s choice).
    pub(super) fn call_jacobian_fwd(&self) -> TokenStream {
        let jacobian_fwd_fn = Ident::new(items::JACOBIAN_FWD_FN, Span::call_site());
        let args = self.signature.params.iter().map(|p| &p.name);
        quote!(#jacobian_fwd_fn(#(#args),*))
    }

    /// One forward pass on `scalar` (`Chunk`: `DualVec`, `Trace`: `Tracer`)
    /// with inputs from the `TangentSeeds` expression `seeds`: a block whose
    /// value is the pass's result. With `reusing` (a local `Reusing`
    /// record, one of [`Self::reusing_records`]), the pass makes its inputs
    /// and buffers in the memory the passes before it gave back, and gives
    /// its inputs back.
    pub(super) fn compiled_seeded_pass(
        &self,
        scalar: Scalar,
        seeds: TokenStream,
        reusing: Option<&Ident>,
    ) -> TokenStream {
        let local = Ident::new("__deltad_seeds", Span::mixed_site());
        let fwd = Ident::new(FWD_FN, Span::call_site());
        let inputs = self.compiled_dual_inputs(&local, &self.scalar_type(scalar), reusing);
        let args = self.pass_args(scalar, false);
        let output = self.pass_output_type(scalar);
        let (record, give_backs) = match reusing {
            Some(record) => (quote!(&mut #record), self.give_back_dual_inputs(record)),
            None => (quote!(&mut ::deltad::__private::NoRecord), Vec::new()),
        };
        quote! {{
            let mut #local = #seeds;
            #(#inputs)*
            let __deltad_result: #output = #fwd(#record, #(#args),*);
            #(#give_backs)*
            __deltad_result
        }}
    }

    /// The local `Reusing` record of the chunk passes of `width`. (Chunk
    /// passes have the widths of [`Self::by_width`], full and half; the
    /// quarter width is vector reverse mode's, which runs on a stack.)
    fn reusing(width: Width) -> Ident {
        let name = match width {
            Width::Full => "__deltad_reusing_full",
            Width::Half | Width::Quarter => "__deltad_reusing_half",
        };
        Ident::new(name, Span::mixed_site())
    }

    /// The statements declaring the `Reusing` records of the chunk passes
    /// of both widths [`Self::by_width`] generates: the memory of one pass's
    /// long buffers is the next pass's (and the next call's).
    fn reusing_records(&self) -> TokenStream {
        let records = [Width::Full, Width::Half].map(|width| {
            let (record, dual) = (Self::reusing(width), self.scalar_type(Scalar::Chunk(width)));
            quote! {
                let mut #record = ::deltad::__private::Reusing::<#dual>::pooled();
            }
        });
        quote!(#(#records)*)
    }

    /// The statement giving the result `result` of a chunk pass of `width`
    /// back to its `Reusing` record, once it has been read: a `Vec` of
    /// reals. (The buffers inside a result of a user type are not given
    /// back: they go to the allocator, as before.)
    fn give_back_result(&self, result: &Ident, width: Width) -> TokenStream {
        if !matches!(self.signature.buffer_output(), Some(BufferOutput::Vec)) {
            return TokenStream::new();
        }
        let record = Self::reusing(width);
        quote!(#record.give_back(#result);)
    }

    /// The output in the user's type from a chunk pass's result `result` on
    /// `scalar`, each real made by `part` (a closure of one `DualVec`).
    pub(super) fn chunk_part(
        &self,
        scalar: Scalar,
        result: &Ident,
        part: TokenStream,
    ) -> TokenStream {
        let prim = &self.prim;
        let chunk = self.scalar_type(scalar);
        if let Some(ty) = self.signature.struct_output() {
            return quote!(::deltad::__private::twin_gradient::<#chunk, #ty>(&#result, #part));
        }
        match self.signature.buffer_output() {
            None => quote!((#part)(#result)),
            Some(_) => {
                let output = self.pass_output_type(Scalar::Machine);
                quote! {
                    ::deltad::__private::buffer_part::<#chunk, #prim, _, #output>(
                        &#result,
                        |__deltad_d: &#chunk| (#part)(*__deltad_d),
                    )
                }
            }
        }
    }

    /// The output reals of a pass's result `result` on `scalar`, in output
    /// leaf order, as a `Cow<[_]>` (borrowed from a real or buffer result).
    pub(super) fn pass_reals(&self, result: &Ident, scalar: Scalar) -> TokenStream {
        let s = self.scalar_type(scalar);
        if let Some(ty) = self.signature.struct_output() {
            return quote! {{
                let mut __deltad_reals = ::std::vec::Vec::new();
                ::deltad::__private::twin_leaves::<#s, #ty>(&#result, &mut __deltad_reals);
                ::deltad::__private::Cow::<[#s]>::Owned(__deltad_reals)
            }};
        }
        match self.signature.buffer_output() {
            None => {
                quote!(::deltad::__private::Cow::<[#s]>::Borrowed(::core::slice::from_ref(&#result)))
            }
            Some(_) => quote!(::deltad::__private::Cow::<[#s]>::Borrowed(&#result[..])),
        }
    }

    /// `body(width)` for the width of the chunk being evaluated: the full
    /// chunk, or half of it where the directions left (`lanes`, a local)
    /// fit in half, so that a last chunk of few directions costs about half
    /// a full one. Both are generated; `lanes` picks one at run time.
    pub(super) fn by_width(
        &self,
        lanes: &Ident,
        body: impl Fn(Width) -> TokenStream,
    ) -> TokenStream {
        let (full, half) = (body(Width::Full), body(Width::Half));
        quote! {
            if #lanes > ::deltad::__private::HALF_CHUNK { #full } else { #half }
        }
    }

    /// `ChunkSeeds::<_, width>::` followed by `seeds` (a constructor call).
    pub(super) fn chunk_seeds(&self, width: Width, seeds: TokenStream) -> TokenStream {
        let prim = &self.prim;
        let lanes = width.lanes();
        quote!(::deltad::__private::ChunkSeeds::<#prim, { #lanes }>::#seeds)
    }

    fn compiled_jvps_body(&self, tangents: &Ident, out: &Ident) -> TokenStream {
        let prim = &self.prim;
        let pieces = Ident::new(items::PIECES_FN, Span::call_site());
        let per = self.piece_count();
        let result = Ident::new("__deltad_result", Span::mixed_site());
        let lanes = Ident::new("__deltad_lanes", Span::mixed_site());
        let chunk = self.by_width(&lanes, |width| {
            let scalar = Scalar::Chunk(width);
            let dual = self.scalar_type(scalar);
            let pass = self.compiled_seeded_pass(
                scalar,
                self.chunk_seeds(
                    width,
                    quote!(given(&__deltad_directions[..#lanes * #per], #lanes, __deltad_start)),
                ),
                Some(&Self::reusing(width)),
            );
            let give_back = self.give_back_result(&result, width);
            let value = self.chunk_part(scalar, &result, quote!(|__deltad_d: #dual| __deltad_d.value));
            // A buffer result's lanes in one sweep over it; the others lane
            // by lane.
            let push_lanes = match self.signature.buffer_output() {
                Some(_) if self.signature.struct_output().is_none() => {
                    let output = self.pass_output_type(Scalar::Machine);
                    let width = width.lanes();
                    quote! {
                        ::deltad::__private::buffer_lanes_into::<#prim, { #width }, _, #output>(
                            &#result,
                            #lanes,
                            #out,
                            __deltad_start,
                        );
                    }
                }
                _ => {
                    let lane = self.chunk_part(
                        scalar,
                        &result,
                        quote!(|__deltad_d: #dual| __deltad_d.tangents[__deltad_lane]),
                    );
                    quote! {
                        for __deltad_lane in 0..#lanes {
                            ::deltad::__private::put_at(#out, __deltad_start + __deltad_lane, #lane);
                        }
                    }
                }
            };
            quote! {
                let #result = #pass;
                #push_lanes
                let __deltad_value = __deltad_first.then(|| #value);
                #give_back
                __deltad_value
            }
        });
        let records = self.reusing_records();
        quote! {
            // The tangents of the chunk being evaluated, in pieces.
            let mut __deltad_directions: [::deltad::__private::Cow<'_, [#prim]>; ::deltad::__private::CHUNK * #per] =
                ::core::array::from_fn(|_| ::deltad::__private::Cow::Borrowed(&[][..]));
            #records
            let __deltad_value = ::deltad::__private::chunked_passes(
                #tangents.len(),
                ::deltad::__private::CHUNK,
                |__deltad_start, __deltad_first| {
                    let #lanes = ::core::cmp::Ord::min(
                        ::deltad::__private::CHUNK,
                        #tangents.len().saturating_sub(__deltad_start),
                    );
                    ::deltad::__private::direction_pieces(
                        #tangents, __deltad_start, #lanes, &mut __deltad_directions, #per,
                        |__deltad_t, __deltad_out| #pieces(__deltad_t, __deltad_out),
                    );
                    #chunk
                },
            );
            #out.truncate(#tangents.len());
            __deltad_value
        }
    }

    fn compiled_jacobian_fwd_body(&self) -> TokenStream {
        let prim = &self.prim;
        let count = self.input_count();
        let rows = self.rows_from_matrix();
        let (n, matrix) = (
            Ident::new("__deltad_n", Span::call_site()),
            Ident::new("__deltad_matrix", Span::call_site()),
        );
        let passes = self.compiled_column_passes(&n, &matrix, |width| {
            self.chunk_seeds(width, quote!(unit_block(__deltad_start)))
        });
        quote! {
            let #n: usize = #count;
            let mut #matrix: ::std::vec::Vec<#prim> = ::std::vec::Vec::new();
            let mut __deltad_m = 0usize;
            let __deltad_value = #passes;
            (__deltad_value, #rows)
        }
    }

    /// One chunk pass per `CHUNK` of the `columns` directions (a local of
    /// their count), seeded by `seeds(width)` from `__deltad_start`: each
    /// pass's output tangents become columns of `matrix` (a local `Vec`,
    /// row by row, `columns` wide), the output's real count goes into the
    /// local `__deltad_m`; the expression's value is the function's value.
    pub(super) fn compiled_column_passes(
        &self,
        columns: &Ident,
        matrix: &Ident,
        seeds: impl Fn(Width) -> TokenStream,
    ) -> TokenStream {
        let result = Ident::new("__deltad_result", Span::mixed_site());
        let lanes = Ident::new("__deltad_lanes", Span::mixed_site());
        let chunk = self.by_width(&lanes, |width| {
            let scalar = Scalar::Chunk(width);
            let dual = self.scalar_type(scalar);
            let pass = self.compiled_seeded_pass(scalar, seeds(width), Some(&Self::reusing(width)));
            let value = self.chunk_part(
                scalar,
                &result,
                quote!(|__deltad_d: #dual| __deltad_d.value),
            );
            let reals = self.pass_reals(&result, scalar);
            let give_back = self.give_back_result(&result, width);
            quote! {
                let #result = #pass;
                let __deltad_reals = #reals;
                __deltad_m = __deltad_reals.len();
                ::deltad::__private::store_columns(
                    &__deltad_reals, __deltad_start, #columns, &mut #matrix,
                );
                ::core::mem::drop(__deltad_reals);
                let __deltad_value = __deltad_first.then(|| #value);
                #give_back
                __deltad_value
            }
        });
        let records = self.reusing_records();
        quote! {{
            #records
            ::deltad::__private::chunked_passes(
                #columns,
                ::deltad::__private::CHUNK,
                |__deltad_start, __deltad_first| {
                    let #lanes = ::core::cmp::Ord::min(::deltad::__private::CHUNK, #columns - __deltad_start);
                    #chunk
                },
            )
        }}
    }

    /// The rows of the Jacobian as `Grad`s, from the locals
    /// `__deltad_matrix` (row by row, `__deltad_n` columns) and
    /// `__deltad_m` (rows).
    fn rows_from_matrix(&self) -> TokenStream {
        let grad_type = self.grad_type();
        let reader = self.names.local("reader");
        let fields = self.inputs(&reader).fields;
        let row = self.grad_value(
            &reader,
            &quote!(&__deltad_matrix[__deltad_i * __deltad_n..(__deltad_i + 1) * __deltad_n]),
            &fields,
        );
        quote! {
            (0..__deltad_m)
                .map(|__deltad_i| -> #grad_type { #row })
                .collect::<::std::vec::Vec<#grad_type>>()
        }
    }

    fn tape_jvps_body(&self, tangents: &Ident, out: &Ident) -> TokenStream {
        let prim = &self.prim;
        let flatten = Ident::new(items::FLATTEN_FN, Span::call_site());
        let seeds = self.names.local("seeds");
        let pass = self.tape_forward(&seeds, true);
        quote! {
            let __deltad_value = ::deltad::__private::chunked_passes(
                #tangents.len(),
                1,
                |__deltad_k, __deltad_first| {
                    let mut #seeds = match #tangents.get(__deltad_k) {
                        ::core::option::Option::Some(__deltad_t) => {
                            let mut __deltad_flat = ::std::vec::Vec::new();
                            #flatten(__deltad_t, &mut __deltad_flat);
                            ::deltad::__private::Seeds::from_flat(__deltad_flat)
                        }
                        // No tangent: one pass along zero (a unit vector
                        // past the inputs) for the value.
                        ::core::option::Option::None => ::deltad::__private::Seeds::<#prim>::unit(usize::MAX),
                    };
                    let (__deltad_v, __deltad_tangent) = #pass;
                    if __deltad_k < #tangents.len() {
                        ::deltad::__private::put_at(#out, __deltad_k, __deltad_tangent);
                    }
                    __deltad_first.then_some(__deltad_v)
                },
            );
            #out.truncate(#tangents.len());
            __deltad_value
        }
    }

    fn tape_jacobian_fwd_body(&self) -> TokenStream {
        let prim = &self.prim;
        let seeds = self.names.local("seeds");
        let pass = self.tape_forward(&seeds, true);
        let results_type = self.results_type();
        let count = self.input_count();
        let rows = self.rows_from_matrix();
        quote! {
            let __deltad_n: usize = #count;
            let mut __deltad_matrix: ::std::vec::Vec<#prim> = ::std::vec::Vec::new();
            let mut __deltad_m = 0usize;
            let __deltad_value = ::deltad::__private::chunked_passes(
                __deltad_n,
                1,
                |__deltad_j, __deltad_first| {
                    // (With no input, a unit vector past the inputs: zero.)
                    let mut #seeds = ::deltad::__private::Seeds::<#prim>::unit(__deltad_j);
                    let (__deltad_v, __deltad_tangent) = #pass;
                    let __deltad_column =
                        ::deltad::__private::flatten_value::<#prim, #results_type>(&__deltad_tangent);
                    __deltad_m = __deltad_column.len();
                    ::deltad::__private::store_column(
                        &__deltad_column, __deltad_j, __deltad_n, &mut __deltad_matrix,
                    );
                    __deltad_first.then_some(__deltad_v)
                },
            );
            (__deltad_value, #rows)
        }
    }
}
