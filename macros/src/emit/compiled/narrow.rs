//! Narrowing before a loop and its reverse (`analyze::narrow`): the
//! buffers the loop indexes only at its variable, and in the adjoint their
//! adjoints (parameters' sinks too), re-borrowed as slices of the range's
//! end, so that the optimiser sees every index in bounds.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

use super::values::Side;
use super::Passes;
use crate::analyze::narrow::indexed_only_at;
use crate::analyze::Establish;
use crate::ir::{Block, LoopId, Origin, StmtKind, VarId};

impl Passes<'_> {
    /// The re-borrows that narrow what loop `id` (variable `index`, over
    /// the range `walk`) indexes only at its variable. For its reverse
    /// (`Side::Adjoint`): the values the adjoint reads, and the adjoints.
    /// For its forward pass: the buffers, read or written, if the loop
    /// runs its whole range (no `break`, `continue` or `return` in the
    /// body) and prints nothing (a format string may name a buffer whole,
    /// `{x:?}`); besides the bounds checks, this keeps each buffer's address
    /// in a register: a buffer made of memory an adjoint gave back
    /// (`Stack::filled`) may, for all the optimiser knows, hold the very
    /// `Vec` it belongs to, which it would load again after every store.
    pub(crate) fn narrowed(
        &self,
        id: LoopId,
        index: Option<VarId>,
        walk: &Ident,
        body: &Block,
        side: Side,
    ) -> TokenStream {
        let Some(index) = index else {
            return TokenStream::new();
        };
        if side == Side::Forward {
            let mut effects = false;
            body.each_stmt(&mut |stmt| effects |= matches!(stmt.kind, StmtKind::Effect(_)));
            if effects || body.has_jump() {
                return TokenStream::new();
            }
        }
        let bound = format_ident!("__deltad_bound", span = Span::mixed_site());
        let mut lets = Vec::new();
        for indexed in indexed_only_at(id, index, body) {
            let var = indexed.var;
            if !self.is_buffer(var) {
                continue;
            }
            let name = self.name(var);
            if side == Side::Forward {
                lets.push(if indexed.written {
                    quote!(let #name = &mut #name[..#bound];)
                } else {
                    quote!(let #name = &#name[..#bound];)
                });
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
        if lets.is_empty() {
            return TokenStream::new();
        }
        // One past the range's last value (0 for an empty range, which
        // indexes nothing).
        quote! {
            let #bound: usize = ::core::iter::Iterator::max(::core::clone::Clone::clone(&#walk))
                .map_or(0, |__deltad_last: usize| __deltad_last + 1);
            #(#lets)*
        }
    }
}
