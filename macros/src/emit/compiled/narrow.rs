//! Narrowing before a reversed loop (`analyze::narrow`): the buffers the
//! loop indexes only at its variable, and their adjoints (parameters'
//! sinks too), re-borrowed as slices of the range's end, so that the
//! optimiser sees every index in bounds.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

use super::Passes;
use crate::analyze::narrow::indexed_only_at;
use crate::analyze::Establish;
use crate::ir::{Block, LoopId, Origin, VarId};

impl Passes<'_> {
    /// The re-borrows that narrow what loop `id` (variable `index`, over
    /// the range `walk`) indexes only at its variable, for its reverse.
    pub(crate) fn narrowed(
        &self,
        id: LoopId,
        index: Option<VarId>,
        walk: &Ident,
        body: &Block,
    ) -> TokenStream {
        let Some(index) = index else {
            return TokenStream::new();
        };
        let bound = format_ident!("__deltad_bound", span = Span::mixed_site());
        let mut lets = Vec::new();
        for indexed in indexed_only_at(id, index, body) {
            let var = indexed.var;
            if !self.is_buffer(var) {
                continue;
            }
            let param = matches!(self.function.vars[var].origin, Origin::Param(_));
            // The values, where the adjoint has them and only reads them.
            let held = param
                || matches!(
                    self.analysis.plan.establish[var],
                    Establish::Pop | Establish::Recompute
                );
            if held && !indexed.written {
                let name = self.name(var);
                lets.push(quote!(let #name = &#name[..#bound];));
            }
            // The adjoints of a local buffer, or the sink of a parameter
            // whose length cannot change (the adjoint checked the sink's
            // capacity against that length).
            if self.useful(var) {
                let adjoint = self.adjoint(var);
                if !param {
                    lets.push(quote!(let #adjoint = &mut #adjoint[..#bound];));
                } else if !self.function.vars[var].mutable {
                    lets.push(quote!(let mut #adjoint = ::deltad::__private::SliceSink::part(&mut #adjoint, 0, #bound);));
                }
            }
        }
        with_bound(&bound, walk, lets)
    }

    /// The same for the forward pass of loop `id`: the buffers it indexes
    /// only at its variable re-borrowed as slices of the range's end, read
    /// or written. Besides the bounds checks, this keeps each buffer's
    /// address in a register: a buffer made of memory an adjoint gave back
    /// (`Stack::filled`) may, for all the optimiser knows, hold the very
    /// `Vec` it belongs to, which it would load again after every store.
    /// Only for loops that run their whole range (no `break`, `continue`
    /// or `return` in the body).
    pub(crate) fn narrowed_forward(
        &self,
        id: LoopId,
        index: Option<VarId>,
        walk: &Ident,
        body: &Block,
    ) -> TokenStream {
        let Some(index) = index else {
            return TokenStream::new();
        };
        if body.has_jump() {
            return TokenStream::new();
        }
        let bound = format_ident!("__deltad_bound", span = Span::mixed_site());
        let lets = indexed_only_at(id, index, body)
            .into_iter()
            .filter(|indexed| self.is_buffer(indexed.var))
            .map(|indexed| {
                let name = self.name(indexed.var);
                if indexed.written {
                    quote!(let #name = &mut #name[..#bound];)
                } else {
                    quote!(let #name = &#name[..#bound];)
                }
            })
            .collect();
        with_bound(&bound, walk, lets)
    }
}

/// `lets` after `bound`, one past the last value of the range `walk` (0
/// for an empty range, which indexes nothing); nothing without `lets`.
fn with_bound(bound: &Ident, walk: &Ident, lets: Vec<TokenStream>) -> TokenStream {
    if lets.is_empty() {
        return TokenStream::new();
    }
    quote! {
        let #bound: usize = ::core::iter::Iterator::max(::core::clone::Clone::clone(&#walk))
            .map_or(0, |__deltad_last: usize| __deltad_last + 1);
        #(#lets)*
    }
}
