//! Views before a loop and its reverse (`analyze::narrow`): the buffers the
//! loop indexes only at its variable plus a literal, and in the adjoint
//! their adjoints (parameters' sinks too), taken as slices of the elements
//! the loop reaches (`loop_window` in the runtime). The loop then runs a
//! counter `j` from zero and indexes the views at `j` plus a constant, its
//! own variable being `lo + j`: the optimiser sees every index in bounds.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

use super::values::Side;
use super::Passes;
use crate::analyze::narrow::indexed_only_at;
use crate::analyze::Establish;
use crate::ir::{Block, Expr, LoopId, Origin, StmtKind, VarId};

/// A buffer the loop being emitted indexes through a view.
pub(crate) struct View {
    var: VarId,
    /// The loop's variable.
    index: VarId,
    /// The lowest offset: the view's element 0 is `lo + low`.
    low: i64,
    /// The values are read through the view.
    value: bool,
    /// The adjoints are added through the view.
    adjoint: bool,
}

/// The views a loop takes: the `let`s taking them, run before the loop
/// once its span is known (`loop_over_views`).
pub(crate) struct Views {
    lets: Vec<TokenStream>,
    /// How many views it pushed onto `Passes::views`.
    count: usize,
}

fn counter() -> Ident {
    format_ident!("__deltad_j", span = Span::mixed_site())
}

fn span_locals() -> (Ident, Ident) {
    (
        format_ident!("__deltad_lo", span = Span::mixed_site()),
        format_ident!("__deltad_n", span = Span::mixed_site()),
    )
}

impl Passes<'_> {
    /// The views of loop `id` (variable `index`), in effect for the code
    /// emitted until [`end_views`](Self::end_views).
    /// For its reverse (`Side::Adjoint`): the values the adjoint reads, and
    /// the adjoints. For its forward pass: the buffers, read or written, if
    /// the loop runs its whole range (no `break`, `continue` or `return` in
    /// the body) and prints nothing (a format string may name a buffer
    /// whole, `{x:?}`); besides the bounds checks, this keeps each buffer's
    /// address in a register: a buffer made of memory an adjoint gave back
    /// (`Stack::filled`) may, for all the optimiser knows, hold the very
    /// `Vec` it belongs to, which it would load again after every store.
    /// `None`: no view (the loop is emitted as written).
    pub(crate) fn take_views(
        &self,
        id: LoopId,
        index: Option<VarId>,
        body: &Block,
        side: Side,
    ) -> Option<Views> {
        let index = index?;
        if side == Side::Forward {
            let mut effects = false;
            body.each_stmt(&mut |stmt| effects |= matches!(stmt.kind, StmtKind::Effect(_)));
            if effects || body.has_jump() {
                return None;
            }
        }
        let (lo, n) = span_locals();
        let mut lets = Vec::new();
        let mut views = Vec::new();
        for indexed in indexed_only_at(id, index, body) {
            let var = indexed.var;
            if !self.is_buffer(var) {
                continue;
            }
            let name = self.name(var);
            let (low, high) = (indexed.low as isize, indexed.high as isize);
            let window = quote!(::deltad::__private::loop_window(#lo, #n, #low, #high));
            let mut view = View {
                var,
                index,
                low: indexed.low,
                value: false,
                adjoint: false,
            };
            if side == Side::Forward {
                lets.push(if indexed.written {
                    quote!(let #name = &mut #name[#window];)
                } else {
                    quote!(let #name = &#name[#window];)
                });
                view.value = true;
                views.push(view);
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
                lets.push(quote!(let #name = &#name[#window];));
                view.value = true;
            }
            // The adjoints of a local buffer, or the sink of a parameter
            // whose length cannot change (the adjoint checked the sink's
            // capacity against that length); not those of a buffer only
            // read at several offsets, which a rolling window of locals
            // may hold instead (`promote.rs`).
            if self.useful(var) && (indexed.written || indexed.one_offset()) {
                let adjoint = self.adjoint(var);
                if !param {
                    lets.push(quote!(let #adjoint = &mut #adjoint[#window];));
                    view.adjoint = true;
                } else if !self.function.vars[var].mutable {
                    lets.push(quote! {
                        let mut #adjoint = {
                            let __deltad_w = #window;
                            ::deltad::__private::SliceSink::part(&mut #adjoint, __deltad_w.start, __deltad_w.end)
                        };
                    });
                    view.adjoint = true;
                }
            }
            if view.value || view.adjoint {
                views.push(view);
            }
        }
        if views.is_empty() {
            return None;
        }
        let count = views.len();
        self.views.borrow_mut().extend(views);
        Some(Views { lets, count })
    }

    /// Ends the views [`take_views`](Self::take_views) took.
    pub(crate) fn end_views(&self, views: &Option<Views>) {
        if let Some(views) = views {
            let mut all = self.views.borrow_mut();
            let kept = all.len() - views.count;
            all.truncate(kept);
        }
    }

    /// The loop `label for pattern in walk body` over the views: the span
    /// of `walk` (bound to the name `walk`), the views, and a counter run
    /// upwards or (`descending`) downwards, the loop's variable `pattern`
    /// its offset from the range's lowest value.
    pub(crate) fn loop_over_views(
        &self,
        views: &Views,
        label: TokenStream,
        pattern: TokenStream,
        walk: &Ident,
        descending: bool,
        body: TokenStream,
    ) -> TokenStream {
        let (lo, n) = span_locals();
        let j = counter();
        let lets = &views.lets;
        let counted = if descending {
            quote!((0..#n).rev())
        } else {
            quote!(0..#n)
        };
        // (An empty range takes no views.)
        quote! {
            let (#lo, #n): (usize, usize) = ::deltad::__private::loop_span(&#walk);
            if #n != 0 {
                #(#lets)*
                #label for #j in #counted {
                    let #pattern: usize = #lo + #j;
                    #body
                }
            }
        }
    }

    /// The index of `var[index]` in the view the loop being emitted takes of
    /// its values (or, `adjoint`, of its adjoints), if it takes one.
    pub(crate) fn view_index(
        &self,
        var: VarId,
        index: &Expr,
        adjoint: bool,
    ) -> Option<TokenStream> {
        let views = self.views.borrow();
        let view = views.iter().rev().find(|v| v.var == var)?;
        if !(if adjoint { view.adjoint } else { view.value }) {
            return None;
        }
        let (index_var, offset) = index.offset_of()?;
        if index_var != view.index {
            return None;
        }
        let k = usize::try_from(offset - view.low).ok()?;
        let j = counter();
        Some(if k == 0 {
            quote!(#j)
        } else {
            quote!((#j + #k))
        })
    }

    /// The index of `var[index]` as the code emitted here reads it:
    /// through a view, or as written.
    pub(crate) fn element_index(
        &self,
        var: VarId,
        index: &Expr,
        adjoint: bool,
        side: Side,
    ) -> TokenStream {
        self.view_index(var, index, adjoint)
            .unwrap_or_else(|| self.value(index, side))
    }
}
