//! Whole buffers as values: `let y = x;`, `y = next;`, `let k = f(..);`
//! with `f` returning a `Vec` or an array, `y = vec![..];`, and the result
//! of a function returning a buffer.
//!
//! Forward: the new contents are computed first (a call's forward pass may
//! keep values), then the old contents are kept if the plan says so (or,
//! for a `Vec`, just its length, which the adjoint needs to size the
//! adjoint of the old contents), then the variable gets the new contents
//! (a buffer variable's elements are copied, reusing the allocation).
//!
//! Adjoint: the old contents are put back, the adjoint of the new contents
//! is taken out of the variable's adjoint and given to the value (added
//! element by element into a source buffer's adjoint, passed to a callee's
//! adjoint as its output's adjoint, propagated into a new buffer's
//! elements), and the variable's adjoint restarts from zeros of the old
//! length.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

use super::adjoint_expr::ExprAdjoint;
use super::forward::Contents;
use super::values::Side;
use super::{names, Passes, Recording};
use crate::analyze::Establish;
use crate::ir::{AssignOp, Expr, ExprKind, NewBuffer, Origin, Place, StmtId, StmtKind, VarId};

impl Passes<'_> {
    /// The forward value of the whole buffer `value`, for variable `var`.
    pub(crate) fn whole_value(&self, var: VarId, value: &Expr) -> TokenStream {
        let s = &self.scalar;
        let lift = |tokens: TokenStream| {
            if self.active(var) && !self.is_active(value) {
                quote!(::deltad::__private::lift_buffer::<#s, _>(#tokens))
            } else {
                tokens
            }
        };
        match &value.kind {
            ExprKind::NewBuffer(new) => self.new_buffer(var, new, Side::Forward, Contents::Filled),
            ExprKind::Var(source)
                if var == self.function.result && self.moves_into_result(*source) =>
            {
                let source = self.name(*source);
                lift(quote!(#source))
            }
            ExprKind::Var(source) => lift(self.buffer_copy(var, *source)),
            ExprKind::Call(call) if self.is_active(value) => {
                let rec = if self.useful(var) && !call.checkpoint {
                    self.rec()
                } else {
                    quote!(&mut ::deltad::__private::NoRecord)
                };
                let fwd = self.callee(&call.path, "__fwd");
                let args = self.call_args(call, Side::Forward);
                quote!(#fwd(#rec, #(#args),*))
            }
            ExprKind::Call(call) => lift(self.plain_call(call, Side::Forward)),
            _ => unreachable!("the lowering makes only these buffer values"),
        }
    }

    /// A copy of the buffer `source` for the variable `var`: owned where
    /// `var` is mutable or the result (`let mut y = x.to_vec();`, whose elements it
    /// writes: a pass takes a parameter as a slice, which `Clone` would
    /// copy as a reference), else as `Clone` makes it (`let y = x;` of a
    /// parameter stays a slice, as in the function).
    pub(crate) fn buffer_copy(&self, var: VarId, source: VarId) -> TokenStream {
        let source = self.name(source);
        let declared = &self.function.vars[var];
        if (declared.mutable || var == self.function.result) && !declared.array {
            quote!(<[_]>::to_vec(&#source[..]))
        } else {
            quote!(::core::clone::Clone::clone(&#source))
        }
    }

    /// True if the function's result may take the buffer `source` by
    /// moving it: the result is assigned where the function returns, so a
    /// local `Vec` is not read again in the forward pass unless the scope's
    /// end keeps it for the adjoint. (Not where a checkpointed loop runs
    /// again in the adjoint, which goes on to read its variables.)
    fn moves_into_result(&self, source: VarId) -> bool {
        let plan = &self.analysis.plan;
        let declared = &self.function.vars[source];
        matches!(declared.origin, Origin::Local | Origin::Temp)
            && self.is_buffer(source)
            && !declared.array
            && plan.establish[source] != Establish::Pop
            && plan.establish_len[source] != Establish::Pop
            && self.recording.get() != Recording::Replay
    }

    /// True if the adjoint of the local buffer `var` is made where the
    /// result's adjoint moves into it rather than at its `let` (no zeros
    /// made only to be dropped): `var` is declared in the function's
    /// outermost block, and the block's last statement, which the adjoint
    /// runs first, assigns it to the result.
    pub(crate) fn adjoint_made_at_result(&self, var: VarId) -> bool {
        let body = &self.function.body.stmts;
        let declared_outermost = body.iter().any(
            |stmt| matches!(&stmt.kind, StmtKind::Let { var: declared, .. } if *declared == var),
        );
        let moved_last = body.last().is_some_and(|stmt| {
            matches!(
                &stmt.kind,
                StmtKind::Assign { place: Place::Var(target), op: AssignOp::Set, value, .. }
                    if *target == self.function.result
                        && matches!(value.kind, ExprKind::Var(source) if source == var)
                        && self.is_active(value)
            )
        });
        declared_outermost
            && moved_last
            && self.useful(var)
            && self.useful(self.function.result)
            && self.moves_into_result(var)
            && !self.function.vars[self.function.result].array
    }

    /// True if the local buffer `var` moves into another variable as its
    /// block ends (`analyze/moves.rs`), and nothing after keeps it or its
    /// length: the forward pass moves it, and the adjoint makes its adjoint
    /// there, out of the other's.
    pub(crate) fn moved_at_end(&self, var: VarId) -> bool {
        let plan = &self.analysis.plan;
        plan.moved[var]
            && plan.establish[var] == Establish::None
            && plan.establish_len[var] != Establish::Pop
    }

    /// True if the whole-buffer assignment `stmt` to `var` keeps the old
    /// length for the adjoint (a `Vec` whose contents are not kept anyway):
    /// for its adjoint, and for its value where earlier writes put its
    /// elements back (a restored variable whose contents this assignment
    /// need not keep, since they were all written again just before: the
    /// adjoint gives the buffer its old length back, and the reverse of
    /// those writes its old elements).
    pub(crate) fn keeps_length(&self, stmt: StmtId, var: VarId, first: bool) -> bool {
        !first
            && (self.useful(var) || self.analysis.plan.restored[var] || self.tracks_length(var))
            && !self.function.vars[var].array
            && !self.analysis.plan.saves[stmt]
    }

    /// See `Plan::tracks_length`.
    fn tracks_length(&self, var: VarId) -> bool {
        self.analysis.plan.tracks_length(self.function, var)
    }

    /// The forward pass of `var = value;` (whole buffer).
    pub(crate) fn fwd_whole_assign(
        &self,
        stmt: StmtId,
        var: VarId,
        value: &Expr,
        first: bool,
    ) -> TokenStream {
        let name = self.name(var);
        let new = format_ident!("__deltad_value", span = Span::mixed_site());
        let length = self
            .keeps_length(stmt, var, first)
            .then(|| self.push_bits(quote!(#name.len())));
        let saves = self.analysis.plan.saves[stmt];
        // A local buffer moved as its block ends: moved, and the old
        // contents, if kept, kept whole.
        if let ExprKind::Var(source) = &value.kind {
            if self.moved_at_end(*source) {
                let (source, rec) = (self.name(*source), self.rec());
                let assign = if saves {
                    quote!(::deltad::__private::KeptWhole::keep(::core::mem::replace(&mut #name, #source), #rec);)
                } else {
                    quote!(#name = #source;)
                };
                return quote!({
                    #length
                    #assign
                });
            }
        }
        let save = saves.then(|| self.push_var(var));
        // A buffer variable copied into one of the same kind: the elements
        // are copied into the existing allocation.
        if let ExprKind::Var(source) = &value.kind {
            if self.active(*source) == self.active(var) && !first {
                let source = self.name(*source);
                return quote!({
                    #length
                    #save
                    ::deltad::__private::copy_into(&#source[..], &mut #name);
                });
            }
        }
        let value = self.whole_value(var, value);
        quote!({
            let #new = #value;
            #length
            #save
            #name = #new;
        })
    }

    /// The type of a local buffer that the end of its scope keeps whole
    /// (`KeptWhole`: a `Vec` moved onto the stack, not copied): one made by
    /// `vec![..]` or returned by a call (a `Vec` or an array, as the callee
    /// returns it). `None`: its elements are kept one by one.
    pub(crate) fn kept_whole_type(&self, var: VarId, init: Option<&Expr>) -> Option<TokenStream> {
        if !self.active(var) || !self.is_buffer(var) || self.function.vars[var].array {
            return None;
        }
        let s = &self.scalar;
        match init.map(|i| &i.kind) {
            Some(ExprKind::NewBuffer(_)) => Some(quote!(::std::vec::Vec<#s>)),
            Some(ExprKind::Call(call)) => {
                let path = &call.path;
                Some(quote!(#path::__Out<#s>))
            }
            _ => None,
        }
    }

    /// The zeros a local buffer's adjoint starts from: an array where the
    /// buffer is an array literal (no allocation), the kind of the
    /// callee's result for a call's result (an array for an array: the
    /// callee's adjoint takes it), else a `Vec` of its length.
    pub(crate) fn adjoint_storage(&self, var: VarId, init: Option<&Expr>) -> TokenStream {
        let zero = self.zero();
        let len = self.length(var, Side::Adjoint);
        match init.map(|i| &i.kind) {
            Some(ExprKind::NewBuffer(NewBuffer::List(elems))) if self.function.vars[var].array => {
                let count = elems.len();
                quote!([#zero; #count])
            }
            Some(ExprKind::NewBuffer(NewBuffer::Repeat { len, .. }))
                if self.function.vars[var].array =>
            {
                let len = self.value(len, Side::Adjoint);
                quote!([#zero; #len])
            }
            // (In memory the adjoint gave back if there is some: see
            // `Stack::filled`.)
            Some(ExprKind::Call(call)) => {
                let (a, path, stack) = (&self.cotangent, &call.path, names::stack());
                quote!(<#path::__Out<#a> as ::deltad::__private::ResultBuffer<#a>>::zeros_on(&mut *#stack, #len))
            }
            _ => {
                let (s, a, stack) = (&self.scalar, &self.cotangent, names::stack());
                quote!(<#a as ::deltad::__private::Cotangent<#s>>::zeros_on(&mut *#stack, #len))
            }
        }
    }

    /// The adjoint of `let var = value;` (whole buffer, not a new buffer).
    pub(crate) fn rev_whole_let(&self, var: VarId, value: &Expr) -> TokenStream {
        let adjoint = self.adjoint(var);
        self.give_adjoint(
            value,
            quote!(::deltad::__private::ResultBuffer::take(&mut #adjoint)),
            &adjoint,
        )
    }

    /// The adjoint of `var = value;` (whole buffer): restore, give the
    /// adjoint of the new contents to the value, restart from zeros.
    pub(crate) fn rev_whole_assign(
        &self,
        stmt: StmtId,
        var: VarId,
        value: &Expr,
        first: bool,
    ) -> TokenStream {
        let name = self.name(var);
        let adjoint = self.adjoint(var);
        let taken = format_ident!("__deltad_taken", span = Span::mixed_site());
        let old_length = format_ident!("__deltad_old_len", span = Span::mixed_site());
        let moved = match value.kind {
            ExprKind::Var(source) if self.moved_at_end(source) => Some(source),
            _ => None,
        };
        let restore = if self.analysis.plan.saves[stmt] {
            let restore = match moved {
                Some(source) => self.restore_whole(var, source),
                None => self.restore_buffer(var),
            };
            quote!(#restore let #old_length: usize = #name.len();)
        } else if self.keeps_length(stmt, var, first) {
            let pop = self.pop_bits(quote!(usize));
            // The buffer the adjoint holds gets its old length back: for
            // the old elements earlier writes put back (restored), and for
            // statements before that read its length (a loop over it)
            // even where none of its old values is read.
            let plan = &self.analysis.plan;
            let resize = (plan.restored[var] || plan.needed(var))
                .then(|| quote!(#name.resize(#old_length, ::deltad::__private::Scalar::zero());));
            // The length statements before this one read.
            let track = self.tracks_length(var).then(|| {
                let local = self.length_local(var);
                quote!(#local = #old_length;)
            });
            quote!(let #old_length: usize = #pop; #resize #track)
        } else {
            quote!(let #old_length: usize = #adjoint.len();)
        };
        if !self.useful(var) {
            return quote!({ #restore });
        }
        let a = &self.cotangent;
        let stack = names::stack();
        if let Some(source) = moved {
            // Its adjoint is made here: the adjoint of what it became.
            let target = self.adjoint(source);
            return quote!({
                #restore
                #target = ::core::mem::replace(
                    &mut #adjoint,
                    ::deltad::__private::ResultBuffer::<#a>::zeros_on(&mut *#stack, #old_length),
                );
            });
        }
        let mut give = self.give_adjoint(value, quote!(#taken), &taken);
        // (A callee's adjoint takes the buffer and gives it back itself.)
        if !matches!(value.kind, ExprKind::Call(_)) {
            give = quote!({ #give } ::deltad::__private::ResultBuffer::give_back(&mut #taken, &mut *#stack););
        }
        // The result is assigned where the function returns, so its
        // assignment is the first the adjoint runs back: every adjoint is
        // still zero, and a local buffer's may be the result's, moved.
        if let ExprKind::Var(source) = &value.kind {
            if var == self.function.result
                && self.moves_into_result(*source)
                && self.is_active(value)
                && self.useful(*source)
            {
                let target = self.adjoint(*source);
                give = if self.adjoint_made_at_result(*source) {
                    // Not made yet: the result's adjoint, or zeros made here.
                    let len = self.length(*source, Side::Adjoint);
                    let init = self.function.let_value(*source);
                    let storage = self.adjoint_storage(*source, init);
                    quote! {
                        if #taken.len() == #len {
                            #target = #taken;
                        } else {
                            #target = #storage;
                            #give
                        }
                    }
                } else {
                    quote! {
                        if #taken.len() == #target.len() {
                            #target = #taken;
                        } else {
                            #give
                        }
                    }
                };
            }
        }
        // The first value of a variable: its adjoint is not read again.
        let take = if first {
            quote!(::deltad::__private::ResultBuffer::take(&mut #adjoint))
        } else {
            quote!(::core::mem::replace(
                &mut #adjoint,
                ::deltad::__private::ResultBuffer::<#a>::zeros_on(&mut *#stack, #old_length),
            ))
        };
        quote!({
            #restore
            let mut #taken = #take;
            #give
        })
    }

    /// Puts the value of `var` (pushed by `push_var`) back from the stack.
    pub(crate) fn restore_var(&self, var: VarId) -> TokenStream {
        if self.is_buffer(var) {
            return self.restore_buffer(var);
        }
        let name = self.name(var);
        let pop = if self.active(var) {
            let stack = names::stack();
            quote!(#stack.pop_real())
        } else {
            let ty = self.plain_type(var);
            self.pop_bits(ty)
        };
        quote!(#name = #pop;)
    }

    /// Puts the old contents of buffer `var` back from the stack.
    /// Puts back the old contents of `var`, kept whole where `source`
    /// moved into it (the variable's memory goes back to the stack).
    fn restore_whole(&self, var: VarId, source: VarId) -> TokenStream {
        let (name, s, stack) = (self.name(var), &self.scalar, names::stack());
        let ty = self
            .kept_whole_type(source, self.function.let_value(source))
            .expect("a moved buffer is made by `vec![..]` or a call");
        quote! {
            ::deltad::__private::KeptWhole::<#s>::give_back(&mut #name, &mut *#stack);
            #name = <#ty as ::deltad::__private::KeptWhole<#s>>::pop_kept(#stack);
        }
    }

    fn restore_buffer(&self, var: VarId) -> TokenStream {
        let name = self.name(var);
        let stack = names::stack();
        let len = format_ident!("__deltad_popped_len", span = Span::mixed_site());
        let pop_len = self.pop_bits(quote!(usize));
        if self.active(var) {
            if self.function.vars[var].array {
                return quote! {
                    let #len: usize = #pop_len;
                    #stack.pop_reals_into(&mut #name[..#len]);
                };
            }
            return quote! {
                let #len: usize = #pop_len;
                #stack.pop_reals_into_vec(&mut #name, #len);
            };
        }
        let prim = &self.prim;
        let element = self.pop_bits(quote!(#prim));
        let resize = (!self.function.vars[var].array).then(|| quote!(#name.resize(#len, 0.0);));
        quote! {
            let #len: usize = #pop_len;
            #resize
            for __deltad_k in (0..#len).rev() {
                #name[__deltad_k] = #element;
            }
        }
    }

    /// Gives the adjoint of a whole buffer value (`adjoint`, an owned
    /// `Vec` named `local` where it must be read element by element) to
    /// the value.
    /// `for k in 0..local.len() { adjoint[start + k] += local[k] }`: the
    /// adjoints in the local buffer `local` added into those of buffer
    /// `var` from element `start` (0 without one), through its sink if it
    /// is a parameter.
    pub(super) fn add_adjoints(
        &self,
        var: VarId,
        start: Option<&syn::Ident>,
        local: &syn::Ident,
    ) -> TokenStream {
        let target = self.adjoint(var);
        let k = format_ident!("__deltad_k", span = Span::mixed_site());
        let at = match start {
            Some(start) => quote!(#start + #k),
            None => quote!(#k),
        };
        let add = if self.is_param(var) {
            quote!(*::deltad::__private::SliceSink::at(&mut #target, #at) += #local[#k];)
        } else {
            quote!(#target[#at] += #local[#k];)
        };
        quote! {
            for #k in 0..#local.len() {
                #add
            }
        }
    }

    fn give_adjoint(&self, value: &Expr, adjoint: TokenStream, local: &syn::Ident) -> TokenStream {
        if !self.is_active(value) {
            return TokenStream::new();
        }
        match &value.kind {
            ExprKind::Var(source) => self.add_adjoints(*source, None, local),
            ExprKind::Call(call) => self.rev_call(call, adjoint),
            ExprKind::NewBuffer(new) => {
                let mut adjoint_expr = ExprAdjoint::new(self);
                match new {
                    NewBuffer::Repeat { elem, .. } => {
                        let a = &self.cotangent;
                        let total = format_ident!("__deltad_total", span = Span::mixed_site());
                        adjoint_expr.push(quote! {
                            let #total: #a = #local.iter().fold(
                                (-<#a as ::deltad::__private::Scalar>::zero()),
                                |__deltad_a, __deltad_b| __deltad_a + *__deltad_b,
                            );
                        });
                        adjoint_expr.propagate(elem, quote!(#total));
                    }
                    NewBuffer::List(elems) => {
                        for (k, elem) in elems.iter().enumerate() {
                            adjoint_expr.propagate(elem, quote!(#local[#k]));
                        }
                    }
                }
                adjoint_expr.finish()
            }
            _ => unreachable!("the lowering makes only these buffer values"),
        }
    }
}
