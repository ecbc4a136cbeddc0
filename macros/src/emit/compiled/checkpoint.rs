//! Checkpointed loops and calls on the compiled path.
//!
//! A `#[checkpoint]` loop runs forward keeping nothing of its iterations:
//! at the start of every segment of ⌈√(n/2)⌉ iterations it keeps a
//! snapshot of its *state* (the variables from outside the loop that its
//! body assigns), and at its end the trip count and the segment length. The
//! adjoint takes the segments from the last: it puts the segment's snapshot
//! back, runs the segment's iterations forward again keeping what they keep
//! (the body's forward code, emitted a second time into the adjoint), and
//! then runs those iterations backwards. Memory: about √(2n) snapshots and
//! one segment's values; every iteration runs twice forward.
//!
//! A checkpointed call `#[checkpoint] let y = f(..);` runs `f`'s forward
//! pass keeping nothing; the adjoint runs it again (keeping its values)
//! right before `f`'s adjoint.
//!
//! Forward code is emitted in one of three [`Recording`] modes: the main
//! pass, silent (inside a checkpointed loop of the main pass: nothing is
//! kept), and replay (inside the adjoint: kept on the adjoint's stack).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

use super::forward::{count_local, Frame};
use super::values::Side;
use super::{Passes, Recording};
use crate::ir::{Block, LoopId, RangeIter, StmtId, StmtKind, VarId};

impl Passes<'_> {
    /// Runs `emit` with forward code kept as `mode` says.
    pub(crate) fn recording_as<T>(&self, mode: Recording, emit: impl FnOnce() -> T) -> T {
        let before = self.recording.replace(mode);
        let result = emit();
        self.recording.set(before);
        result
    }

    /// The variables from outside a checkpointed loop's body that it
    /// assigns: its state.
    fn loop_state(&self, body: &Block) -> Vec<VarId> {
        let outside = crate::analyze::reverse::outside_uses(body);
        let mut written = Vec::new();
        body.each_stmt(&mut |stmt| {
            if let StmtKind::Assign { place, .. } = &stmt.kind {
                written.push(place.var());
            }
        });
        outside
            .into_iter()
            .filter(|&v| {
                written.contains(&v) && self.function.vars[v].origin != crate::ir::Origin::Result
            })
            .collect()
    }

    /// The label of a checkpointed loop's segments run again in the
    /// adjoint: the user's, else one of its own (exits leaving the loop
    /// become `break`s to it).
    fn replay_label(&self, id: LoopId) -> TokenStream {
        match &self.function.loops[id].label {
            Some(label) => quote!(#label),
            None => {
                let label =
                    syn::Lifetime::new(&format!("'__deltad_replay{id}"), Span::mixed_site());
                quote!(#label)
            }
        }
    }

    /// True if loop `id` lies inside the checkpointed loop being run
    /// again.
    pub(crate) fn inside_replayed(&self, id: LoopId) -> bool {
        let Some(replayed) = self.replaying.get() else {
            return false;
        };
        let mut inside = false;
        self.function.body.each_stmt(&mut |stmt| {
            let StmtKind::For {
                id: outer, body, ..
            } = &stmt.kind
            else {
                return;
            };
            if *outer != replayed {
                return;
            }
            body.each_stmt(&mut |inner| {
                if let StmtKind::For { id: l, .. }
                | StmtKind::While { id: l, .. }
                | StmtKind::Loop { id: l, .. } = &inner.kind
                {
                    inside |= *l == id;
                }
            });
        });
        inside
    }

    /// Ends the run of a segment of checkpointed loop `id` again.
    pub(crate) fn replay_break(&self, id: LoopId) -> TokenStream {
        let label = self.replay_label(id);
        quote!(break #label;)
    }

    /// The forward pass of a checkpointed `for` loop.
    pub(crate) fn fwd_checkpointed(
        &self,
        stmt: StmtId,
        id: LoopId,
        pattern: TokenStream,
        walk: TokenStream,
        body: &Block,
        frames: &mut Vec<Frame>,
    ) -> TokenStream {
        let (count, segment, total) = loop_locals(id);
        let label = self.function.loops[id]
            .label
            .as_ref()
            .map(|l| quote!(#l:))
            .unwrap_or_default();
        let snapshot: Vec<TokenStream> = self
            .loop_state(body)
            .into_iter()
            .map(|var| self.push_var(var))
            .collect();
        frames.push(Frame::Loop { id, stmt });
        let body = self.recording_as(Recording::Silent, || self.fwd_block(body, frames));
        frames.pop();
        let end = self.loop_end(id);
        let walk_local = format_ident!("__deltad_walk", span = Span::mixed_site());
        quote! {{
            let #walk_local = #walk;
            let #total: usize = ::core::iter::Iterator::size_hint(&#walk_local).0;
            let #segment: usize = ::deltad::__private::checkpoint_segment(#total);
            let mut #count: usize = 0;
            #label for #pattern in #walk_local {
                if #count % #segment == 0 {
                    #(#snapshot)*
                }
                #count += 1;
                #body
            }
            #end
        }}
    }

    /// What a checkpointed loop's forward pass keeps when the loop ends
    /// (normally or by an exit leaving it): its trip count and segment
    /// length, on the main record.
    pub(crate) fn loop_end(&self, id: LoopId) -> TokenStream {
        let (count, segment, _) = loop_locals(id);
        self.recording_as(Recording::Main, || {
            let count = self.push_bits(quote!(#count));
            let segment = self.push_bits(quote!(#segment));
            quote!(#count #segment)
        })
    }

    /// The adjoint of a checkpointed `for` loop: per segment from the
    /// last, the snapshot back, the iterations again, then backwards.
    pub(crate) fn rev_checkpointed(
        &self,
        id: LoopId,
        var: Option<VarId>,
        range: &RangeIter,
        body: &Block,
        reversed_body: TokenStream,
    ) -> TokenStream {
        let (count, segment, _) = loop_locals(id);
        let pop = || self.pop_bits(quote!(usize));
        let (pop_segment, pop_count) = (pop(), pop());
        let walk = {
            let range_tokens = self.range(range, Side::Adjoint);
            if range.reversed {
                quote!(#range_tokens.rev())
            } else {
                range_tokens
            }
        };
        let pattern = match var {
            Some(var) => {
                let name = self.name(var);
                quote!(#name)
            }
            None => quote!(_),
        };
        let restore: Vec<TokenStream> = self
            .loop_state(body)
            .into_iter()
            .rev()
            .map(|var| self.restore_var(var))
            .collect();
        let label = self.replay_label(id);
        let mut frames = vec![Frame::Loop {
            id,
            stmt: usize::MAX,
        }];
        let replayed = self.recording_as(Recording::Replay, || {
            self.replaying.set(Some(id));
            let block = self.fwd_block(body, &mut frames);
            self.replaying.set(None);
            block
        });
        // `return` inside: the result's value is assigned on the way out.
        let mut returns = false;
        body.each_stmt(&mut |s| returns |= matches!(s.kind, StmtKind::Return));
        let result = returns.then(|| self.result_declarations());
        let (walk_local, segments, s, start, end, j) = (
            format_ident!("__deltad_walk", span = Span::mixed_site()),
            format_ident!("__deltad_segments", span = Span::mixed_site()),
            format_ident!("__deltad_s", span = Span::mixed_site()),
            format_ident!("__deltad_start", span = Span::mixed_site()),
            format_ident!("__deltad_end", span = Span::mixed_site()),
            format_ident!("__deltad_j", span = Span::mixed_site()),
        );
        let index = match (var, self.analysis.plan.index_needed[id]) {
            (Some(_), true) => quote! {
                let #pattern = ::core::iter::Iterator::nth(
                    &mut ::core::clone::Clone::clone(&#walk_local), #j
                ).expect("deltad: the checkpointed loop ran this iteration");
            },
            _ => TokenStream::new(),
        };
        quote! {{
            let #segment: usize = #pop_segment;
            let #count: usize = #pop_count;
            let #walk_local = #walk;
            let #segments: usize = #count.div_ceil(#segment.max(1));
            #result
            for #s in (0..#segments).rev() {
                let #start = #s * #segment;
                let #end = ::core::cmp::min(#start + #segment, #count);
                #(#restore)*
                #label: for #pattern in ::core::iter::Iterator::take(
                    ::core::iter::Iterator::skip(::core::clone::Clone::clone(&#walk_local), #start),
                    #end - #start,
                ) {
                    #replayed
                }
                for #j in (#start..#end).rev() {
                    #index
                    #reversed_body
                }
            }
        }}
    }
}

/// The locals of checkpointed loop `id`: its trip count, segment length and
/// its range's length.
fn loop_locals(id: LoopId) -> (syn::Ident, syn::Ident, syn::Ident) {
    (
        count_local(id),
        format_ident!("__deltad_segment{}", id, span = Span::mixed_site()),
        format_ident!("__deltad_total{}", id, span = Span::mixed_site()),
    )
}
