//! The forward pass: the body computing on `S`, pushing what the plan says
//! the adjoint needs:
//!
//! * before a write of a restored variable or element, its old value;
//! * when a block ends (normally or by an exit), the values of its
//!   variables the adjoint pops, then, if it can be left early, where it
//!   was left (the index of the statement, or its length);
//! * after an `if` whose condition the adjoint cannot evaluate again, the
//!   decision; after a `match`, the arm; after a counted loop, its trip
//!   count.
//!
//! An exit (`break`, `continue`, `return`) pushes, for every construct it
//! leaves, what that construct's end would have pushed.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

use super::values::Side;
use super::{names, Passes, Recording};
use crate::analyze::{Establish, LoopPlan};
use crate::ir::{
    AssignOp, Block, BlockId, CallArg, Effect, EffectArg, ExprKind, LoopId, NewBuffer, Place,
    RangeIter, Stmt, StmtId, StmtKind, VarId,
};

/// A construct the statement being emitted is inside.
#[derive(Clone, Copy)]
pub(crate) enum Frame {
    Block { id: BlockId, index: usize },
    If { stmt: StmtId, branch: bool },
    Match { stmt: StmtId, arm: usize },
    Loop { id: LoopId, stmt: StmtId },
}

impl Passes<'_> {
    pub(crate) fn forward_body(&self) -> TokenStream {
        let mut frames = Vec::new();
        let body = self.fwd_block(&self.function.body, &mut frames);
        let prologue = self.struct_prologue();
        let declarations = self.result_declarations();
        let value = self.returned_value();
        quote! {
            #prologue
            #declarations
            #body
            #value
        }
    }

    /// The declarations of the variables the result is assigned to: the
    /// result, or a user type's fields.
    pub(crate) fn result_declarations(&self) -> TokenStream {
        match &self.function.result_struct {
            Some(value) => {
                let fields = value.leaves().into_iter().map(|(_, var)| {
                    let name = self.name(var);
                    quote!(let mut #name;)
                });
                quote!(#(#fields)*)
            }
            None => {
                let result = self.name(self.function.result);
                let output = self.output_type();
                quote!(let mut #result: #output;)
            }
        }
    }

    /// The result's value: the result variable, or a user type's twin built
    /// from its fields.
    pub(crate) fn result_value(&self) -> TokenStream {
        match &self.function.result_struct {
            Some(value) => self.twin_literal(value),
            None => {
                let result = self.name(self.function.result);
                quote!(#result)
            }
        }
    }

    /// What the forward pass returns: the result, given to its
    /// `ResultUse` where it is a real (forward-over-reverse drops its
    /// derivatives, and with them the code computing only those).
    fn returned_value(&self) -> TokenStream {
        let value = self.result_value();
        let real = self.function.result_struct.is_none()
            && self.signature.struct_output().is_none()
            && self.signature.buffer_output().is_none()
            && self.recording.get() != Recording::Replay;
        if real {
            let result_use = names::result_use();
            quote!(::deltad::__private::ResultUse::result(#result_use, #value))
        } else {
            value
        }
    }

    /// A value of a user type built from its fields' variables, in the
    /// user's type (`Pt { a: .., b: .. }`; a differentiated field as its
    /// machine value).
    pub(crate) fn plain_literal(&self, value: &crate::ir::StructValue) -> TokenStream {
        let path = &value.path;
        let fields = value.fields.iter().map(|(member, field)| match field {
            crate::ir::StructField::Struct(nested) => {
                let nested = self.plain_literal(nested);
                quote!(#member: #nested)
            }
            crate::ir::StructField::Var(var) => {
                let name = self.name(*var);
                // (Copied: the local's fields may be read again.)
                if self.active(*var) {
                    quote!(#member: ::deltad::__private::Scalar::to_prim(#name))
                } else {
                    quote!(#member: ::core::clone::Clone::clone(&#name))
                }
            }
        });
        quote!(#path { #(#fields),* })
    }

    /// Where the value a `let` gives `var` is written (else the variable's
    /// own span).
    fn let_value_span(&self, var: VarId) -> Span {
        self.function
            .let_value(var)
            .map_or(self.function.vars[var].span, |value| value.span)
    }

    /// The twin of a local built by a literal, passed whole: the value in
    /// the user's type made into a twin, then its differentiated fields set
    /// (so that a type without `#[derive(Differentiable)]` is an error about
    /// that; a differentiated value into a `#[no_grad]` field is one too, as
    /// on the tape).
    pub(crate) fn twin_of_literal(&self, value: &crate::ir::StructValue) -> TokenStream {
        let s = &self.scalar;
        let path = &value.path;
        let plain = self.plain_literal(value);
        let twin = format_ident!("__deltad_twin", span = Span::mixed_site());
        let sets = value
            .leaves()
            .into_iter()
            .filter(|(_, var)| self.active(*var))
            .map(|(members, var)| {
                let name = self.name(var);
                // (At the field's value: a field that cannot take it is the
                // user's error there.)
                let span = self.let_value_span(var);
                quote_spanned!(span=> ::deltad::__private::SetLeaf::set(&mut #twin #(.#members)*, #name);)
            });
        quote!({
            let mut #twin = ::deltad::__private::twin_of_value::<#s, #path>(&#plain);
            #(#sets)*
            #twin
        })
    }

    /// The twin of a value of a user type built from its fields' variables
    /// (`__deltad_twin_Pt::<Active<S>> { a: .., b: .. }`): a differentiated
    /// field as an `Active`, a value without derivatives as the field's type
    /// takes it (a real lifted into a differentiated field, else as it is).
    pub(crate) fn twin_literal(&self, value: &crate::ir::StructValue) -> TokenStream {
        let s = &self.scalar;
        let mut path = value.path.clone();
        if let Some(last) = path.segments.last_mut() {
            last.ident = crate::derive::twin_name(&last.ident);
            last.arguments = syn::PathArguments::None;
        }
        let fields = value.fields.iter().map(|(member, field)| {
            let value = match field {
                crate::ir::StructField::Struct(nested) => self.twin_literal(nested),
                crate::ir::StructField::Var(var) => {
                    let name = self.name(*var);
                    // A copy of a parameter's field: that field as it is.
                    if let Some(&(_, field)) =
                        self.analysis.pass_through.iter().find(|(m, _)| m == var)
                    {
                        let place = self.field_place(field);
                        return quote!(#member: ::core::clone::Clone::clone(&#place));
                    }
                    if self.active(*var) {
                        quote!(::deltad::__private::Active(#name))
                    } else {
                        quote!(::deltad::__private::leaf_constant(#name))
                    }
                }
            };
            quote!(#member: #value)
        });
        quote!(#path::<::deltad::__private::Active<#s>> { #(#fields),* })
    }

    /// `rec`, reborrowed.
    pub(crate) fn rec(&self) -> TokenStream {
        match self.recording.get() {
            Recording::Main => {
                let rec = names::record();
                quote!(&mut *#rec)
            }
            Recording::Silent => quote!(&mut ::deltad::__private::NoRecord),
            Recording::Replay => {
                let stack = names::stack();
                quote!(&mut *#stack)
            }
        }
    }

    /// Pushes a real.
    pub(crate) fn push_real(&self, value: TokenStream) -> TokenStream {
        self.push_to("real", value)
    }

    /// Pushes the decision `value` (a `bool`) as one bit.
    pub(crate) fn push_flag(&self, value: TokenStream) -> TokenStream {
        self.push_to("flag", value)
    }

    /// Pushes a discrete value as a word.
    pub(crate) fn push_bits(&self, value: TokenStream) -> TokenStream {
        self.push_to("bits", quote!(::deltad::__private::Bits::to_bits(#value)))
    }

    /// `value` pushed by the `Record`/`Reserved` method `lane` (into the
    /// loop's reserved room where there is one; nothing where nothing is
    /// kept).
    fn push_to(&self, lane: &str, value: TokenStream) -> TokenStream {
        if self.recording.get() == Recording::Silent {
            return TokenStream::new();
        }
        let lane = syn::Ident::new(lane, Span::call_site());
        if self.in_room.get() {
            let room = names::room();
            return quote!(::deltad::__private::Reserved::#lane(&mut #room, #value););
        }
        let rec = self.rec();
        quote!(::deltad::__private::Record::#lane(#rec, #value);)
    }

    pub(crate) fn fwd_block(&self, block: &Block, frames: &mut Vec<Frame>) -> TokenStream {
        let items = &block.items;
        frames.push(Frame::Block {
            id: block.id,
            index: 0,
        });
        let mut stmts = Vec::new();
        let shadowed = self.shadowings(block);
        for (index, stmt) in block.stmts.iter().enumerate() {
            if let Some(Frame::Block { index: i, .. }) = frames.last_mut() {
                *i = index;
            }
            // A variable the block's end pushes, about to be shadowed: keep
            // it under a name of its own.
            let mut keeps = Vec::new();
            let mut moved = false;
            let mut keep = |var: VarId| {
                let (name, keep) = (self.name(var), kept_local(var));
                keeps.push(quote!(let #keep = #name;));
                moved |= self.function.vars[var].kind != crate::ir::VarKind::Scalar;
            };
            for (position, earlier) in block.stmts[..index].iter().enumerate() {
                let StmtKind::Let { var, .. } = &earlier.kind else {
                    continue;
                };
                if self.pushed_at_end(*var) && shadowed[position] == Some(index) {
                    keep(*var);
                }
            }
            // The same for a variable of an enclosing block, which an exit
            // from inside this one pushes.
            if let StmtKind::Let { var: shadowing, .. } = &stmt.kind {
                let outer = &frames[..frames.len() - 1];
                for var in self.enclosing_declared(outer) {
                    if self.pushed_at_end(var) && self.same_name(var, *shadowing) {
                        keep(var);
                    }
                }
            }
            let forward = self.fwd_stmt(stmt, frames);
            match &stmt.kind {
                // A buffer or a value of a user type is moved to where it
                // is kept: after the shadowing value, which may read it, is
                // made (in a block of its own, where the new name hides it).
                StmtKind::Let { var, init: Some(_) } if moved => {
                    let name = self.name(*var);
                    let mut_token = self.function.vars[*var].mutable.then(|| quote!(mut));
                    let value = format_ident!("__deltad_shadowing", span = Span::mixed_site());
                    stmts.push(quote!(let #value = { #forward #name };));
                    stmts.extend(keeps);
                    stmts.push(quote!(let #mut_token #name = #value;));
                }
                _ => {
                    stmts.extend(keeps);
                    stmts.push(forward);
                }
            }
        }
        frames.pop();
        let epilogue = self.epilogue(block, block.stmts.len(), &[]);
        quote!({ #(#items)* #(#stmts)* #epilogue })
    }

    /// The variables declared at the top level of the blocks of `frames`
    /// before the statement each is at.
    fn enclosing_declared(&self, frames: &[Frame]) -> Vec<VarId> {
        frames
            .iter()
            .filter_map(|frame| match *frame {
                Frame::Block { id, index } => Some((self.block(id), index)),
                _ => None,
            })
            .flat_map(|(block, index)| {
                block.stmts[..index]
                    .iter()
                    .filter_map(|stmt| match stmt.kind {
                        StmtKind::Let { var, .. } => Some(var),
                        _ => None,
                    })
            })
            .collect()
    }

    fn same_name(&self, a: VarId, b: VarId) -> bool {
        a != b && syn::ext::IdentExt::unraw(self.name(a)) == syn::ext::IdentExt::unraw(self.name(b))
    }

    /// What block `block` pushes when left before statement `index`
    /// (`index` = its length: at its normal end): the values of its
    /// variables declared before that the adjoint pops (last declared
    /// first), then where it was left.
    pub(crate) fn epilogue(&self, block: &Block, index: usize, hiding: &[VarId]) -> TokenStream {
        let plan = &self.analysis.plan;
        let mut pushes = Vec::new();
        let mut reals = Vec::new();
        let shadowed = self.shadowings(block);
        for (position, stmt) in block.stmts[..index].iter().enumerate().rev() {
            let StmtKind::Let { var, init } = &stmt.kind else {
                continue;
            };
            // Shadowed before `index`, or by a variable of a block inside
            // (`hiding`, left by an exit): under the name it was kept as.
            let hidden = matches!(shadowed[position], Some(at) if at < index)
                || hiding.iter().any(|&other| self.same_name(*var, other));
            let name = if hidden {
                let keep = kept_local(*var);
                quote!(#keep)
            } else {
                let name = self.name(*var);
                quote!(#name)
            };
            if self.popped_real(*var) {
                // Consecutive reals go in one push.
                reals.push(name);
                continue;
            }
            pushes.push(self.push_reals(&mut reals));
            if plan.establish[*var] == Establish::Pop {
                // The variable goes out of scope here: a buffer goes whole.
                if self.kept_whole_type(*var, init.as_ref()).is_some() {
                    let rec = self.rec();
                    pushes.push(quote!(::deltad::__private::KeptWhole::keep(#name, #rec);));
                } else {
                    pushes.push(self.push_value(*var, &name));
                }
            } else if plan.establish_len[*var] == Establish::Pop {
                pushes.push(self.push_bits(quote!(#name.len())));
            }
            if self.gives_back_at_end(*var, init.as_ref()) && !hidden {
                let rec = self.rec();
                pushes.push(quote!(::deltad::__private::done_with(#rec, #name);));
            }
        }
        pushes.push(self.push_reals(&mut reals));
        if plan.codes[block.id] {
            pushes.push(self.push_bits(quote!(#index)));
        }
        quote!(#(#pushes)*)
    }

    /// True if the block declaring local buffer `var` gives its memory to
    /// the record when it ends: the forward pass still has it (nothing
    /// moves it), does not keep it for the adjoint, and can reach the
    /// record (not in a loop's reserved room, which holds it).
    fn gives_back_at_end(&self, var: VarId, init: Option<&crate::ir::Expr>) -> bool {
        let plan = &self.analysis.plan;
        plan.never_moved[var]
            && plan.establish[var] != Establish::Pop
            && !self.in_room.get()
            && self.kept_whole_type(var, init).is_some()
    }

    /// Pushes the values `reals` (and empties it): one real alone, several
    /// in one push.
    fn push_reals(&self, reals: &mut Vec<TokenStream>) -> TokenStream {
        let push = match &reals[..] {
            [] => TokenStream::new(),
            [one] => self.push_real(one.clone()),
            several => self.push_to("reals", quote!(&[#(#several),*])),
        };
        reals.clear();
        push
    }

    /// Per statement of `block`: for a `let`, the index of the first later
    /// `let` of the block that hides its name, if one does (one pass over
    /// the block, from its end).
    pub(crate) fn shadowings(&self, block: &Block) -> Vec<Option<usize>> {
        let mut next_of_name: std::collections::HashMap<String, usize> = Default::default();
        let mut shadowed = vec![None; block.stmts.len()];
        for (k, stmt) in block.stmts.iter().enumerate().rev() {
            if let StmtKind::Let { var, .. } = &stmt.kind {
                let name = syn::ext::IdentExt::unraw(self.name(*var)).to_string();
                shadowed[k] = next_of_name.insert(name, k);
            }
        }
        shadowed
    }

    /// True if the block declaring `var` pushes its value as one real when
    /// it ends, and the adjoint pops it so (a differentiated scalar).
    pub(crate) fn popped_real(&self, var: VarId) -> bool {
        self.analysis.plan.establish[var] == Establish::Pop
            && self.function.vars[var].kind == crate::ir::VarKind::Scalar
            && self.active(var)
    }

    /// True if the block declaring `var` pushes it when it ends.
    fn pushed_at_end(&self, var: VarId) -> bool {
        let plan = &self.analysis.plan;
        plan.establish[var] == Establish::Pop || plan.establish_len[var] == Establish::Pop
    }

    /// Pushes the whole value of a variable (a buffer: its elements, then
    /// its length).
    pub(crate) fn push_var(&self, var: VarId) -> TokenStream {
        let name = self.name(var);
        self.push_value(var, &quote!(#name))
    }

    /// Pushes the value of `var`, named `name` here.
    fn push_value(&self, var: VarId, name: &TokenStream) -> TokenStream {
        if self.is_buffer(var) {
            let length = self.push_bits(quote!(#name.len()));
            let rec = self.rec();
            let elements = if self.active(var) {
                quote!(::deltad::__private::Record::reals(#rec, &#name[..]);)
            } else {
                let element = format_ident!("__deltad_element", span = Span::mixed_site());
                let push = self.push_bits(quote!(*#element));
                quote!(for #element in #name.iter() { #push })
            };
            return quote!(#elements #length);
        }
        if self.active(var) {
            self.push_real(quote!(#name))
        } else {
            self.push_bits(quote!(#name))
        }
    }

    /// What an exit pushes for every construct it leaves, innermost first,
    /// up to `target`'s body (`None`: the function).
    fn exit_chain(&self, frames: &[Frame], target: Option<LoopId>) -> TokenStream {
        let plan = &self.analysis.plan;
        let mut pushes = Vec::new();
        let outer = self.recording.get();
        for (depth, frame) in frames.iter().enumerate().rev() {
            if let Frame::Loop { id, stmt } = *frame {
                // A checkpointed loop run again in the adjoint: what
                // lies outside it was kept by the forward pass.
                if self.replaying.get() == Some(id) {
                    break;
                }
                if Some(id) != target
                    && plan.loops[id] == LoopPlan::Checkpointed
                    && plan.has_reverse[stmt]
                {
                    // Leaving a checkpointed loop: its end, and what lies
                    // outside it, on the forward pass's record.
                    pushes.push(self.loop_end(id));
                    self.recording.set(Recording::Main);
                    continue;
                }
            }
            match *frame {
                Frame::Block { id, index } => {
                    let hiding = self.enclosing_declared(&frames[depth + 1..]);
                    pushes.push(self.epilogue(self.block(id), index, &hiding));
                }
                Frame::If { stmt, branch } => {
                    if plan.has_reverse[stmt] && plan.push_decision[stmt] {
                        pushes.push(self.push_flag(quote!(#branch)));
                    }
                }
                Frame::Match { stmt, arm } => {
                    if plan.has_reverse[stmt] {
                        pushes.push(self.push_bits(quote!(#arm)));
                    }
                }
                Frame::Loop { id, stmt } => {
                    if Some(id) == target {
                        break;
                    }
                    if plan.has_reverse[stmt] && plan.loops[id] == LoopPlan::Counted {
                        pushes.push(self.counted_end(id));
                    }
                }
            }
        }
        self.recording.set(outer);
        quote!(#(#pushes)*)
    }

    /// `break` or `continue` to `target` (or `return`, with `None`) in the
    /// iterations of a checkpointed loop run again in the adjoint, when it
    /// leaves that loop: the end of the segment's run.
    fn leaves_replay(&self, target: Option<LoopId>) -> Option<TokenStream> {
        let replayed = self.replaying.get()?;
        if target == Some(replayed) || target.is_some_and(|t| self.inside_replayed(t)) {
            return None;
        }
        Some(self.replay_break(replayed))
    }

    fn fwd_stmt(&self, stmt: &Stmt, frames: &mut Vec<Frame>) -> TokenStream {
        let plan = &self.analysis.plan;
        match &stmt.kind {
            StmtKind::Let { var, init: None } => {
                let name = self.name(*var);
                quote!(let mut #name;)
            }
            StmtKind::Let {
                var,
                init: Some(init),
            } => self.fwd_let(stmt.id, *var, init),
            StmtKind::Assign {
                place: Place::Var(var),
                value,
                first,
                ..
            } if self.is_buffer(*var) => self.fwd_whole_assign(stmt.id, *var, value, *first),
            StmtKind::Assign {
                place, op, value, ..
            } => self.fwd_assign(stmt.id, place, *op, value),
            StmtKind::If { cond, then, els } => {
                let cond = self.value(cond, Side::Forward);
                frames.push(Frame::If {
                    stmt: stmt.id,
                    branch: true,
                });
                let then = self.fwd_block(then, frames);
                frames.pop();
                frames.push(Frame::If {
                    stmt: stmt.id,
                    branch: false,
                });
                let els = els.as_ref().map(|els| {
                    let els = self.fwd_block(els, frames);
                    quote!(else #els)
                });
                frames.pop();
                let els = els.unwrap_or_default();
                if plan.has_reverse[stmt.id] && plan.push_decision[stmt.id] {
                    let decision = decision_local(stmt.id);
                    let push = self.push_flag(quote!(#decision));
                    quote! {
                        let #decision: bool = #cond;
                        if #decision #then #els
                        #push
                    }
                } else {
                    quote!(if #cond #then #els)
                }
            }
            StmtKind::Match { scrutinee, arms } => {
                let scrutinee = self.value(scrutinee, Side::Forward);
                let record = plan.has_reverse[stmt.id];
                let arms: Vec<TokenStream> = arms
                    .iter()
                    .enumerate()
                    .map(|(index, arm)| {
                        frames.push(Frame::Match {
                            stmt: stmt.id,
                            arm: index,
                        });
                        let body = self.fwd_block(&arm.body, frames);
                        frames.pop();
                        let pat = &arm.pat;
                        let guard = arm.guard.as_ref().map(|g| {
                            let g = self.value(g, Side::Forward);
                            quote!(if #g)
                        });
                        if record {
                            quote!(#pat #guard => { #body #index })
                        } else {
                            quote!(#pat #guard => #body)
                        }
                    })
                    .collect();
                if record {
                    let arm = format_ident!("__deltad_arm{}", stmt.id, span = Span::mixed_site());
                    let push = self.push_bits(quote!(#arm));
                    quote! {
                        let #arm: usize = match #scrutinee { #(#arms,)* };
                        #push
                    }
                } else {
                    quote!(match #scrutinee { #(#arms,)* })
                }
            }
            StmtKind::For {
                id,
                var,
                range,
                body,
            } => self.fwd_for(stmt, id, var, range, body, frames),
            StmtKind::While { id, cond, body } => {
                let cond = self.value(cond, Side::Forward);
                self.fwd_loop(
                    stmt.id,
                    *id,
                    frames,
                    body,
                    |label, body| quote!(#label while #cond #body),
                )
            }
            StmtKind::Loop { id, body } => self.fwd_loop(
                stmt.id,
                *id,
                frames,
                body,
                |label, body| quote!(#label loop #body),
            ),
            StmtKind::Break { target } => {
                let chain = self.exit_chain(frames, Some(*target));
                if let Some(leave) = self.leaves_replay(Some(*target)) {
                    return quote!({ #chain #leave });
                }
                let label = self.label(*target);
                quote!({ #chain break #label; })
            }
            StmtKind::Continue { target } => {
                let chain = self.exit_chain(frames, Some(*target));
                if let Some(leave) = self.leaves_replay(Some(*target)) {
                    return quote!({ #chain #leave });
                }
                let label = self.label(*target);
                quote!({ #chain continue #label; })
            }
            StmtKind::Return => {
                let chain = self.exit_chain(frames, None);
                if let Some(leave) = self.leaves_replay(None) {
                    return quote!({ #chain #leave });
                }
                let result = self.returned_value();
                quote!({ #chain return #result; })
            }
            StmtKind::Block(block) => self.fwd_block(block, frames),
            StmtKind::Effect(effect) => self.effect(effect),
        }
    }

    /// A `for` loop. Bounds the body changes, kept with the trip count, are
    /// evaluated once into locals, which the loop runs over.
    fn fwd_for(
        &self,
        stmt: &Stmt,
        id: &LoopId,
        var: &Option<VarId>,
        range: &RangeIter,
        body: &Block,
        frames: &mut Vec<Frame>,
    ) -> TokenStream {
        let walk = self.loop_walk(stmt.id, *id, range, Side::Forward);
        let looped = self.fwd_for_over(stmt, id, var, walk, body, frames);
        if !self.bounds_kept(stmt.id, *id) {
            return looped;
        }
        let (lo, hi) = bound_locals(*id);
        let ty = self.bounds_type(*var);
        let (start, end) = (
            self.value(&range.start, Side::Forward),
            self.value(&range.end, Side::Forward),
        );
        quote!({ let #lo: #ty = #start; let #hi: #ty = #end; #looped })
    }

    /// What `for` loop `id` (statement `stmt`) runs over on `side`: its
    /// range (reversed if written so), over its kept bounds where it keeps
    /// them.
    pub(crate) fn loop_walk(
        &self,
        stmt: StmtId,
        id: LoopId,
        range: &RangeIter,
        side: Side,
    ) -> TokenStream {
        if self.bounds_kept(stmt, id) {
            return bounds_range(id, range.inclusive, range.reversed);
        }
        let walk = self.range(range, side);
        if range.reversed {
            quote!(#walk.rev())
        } else {
            walk
        }
    }

    /// The type of the kept bounds of a loop with variable `var`: the
    /// variable's.
    pub(crate) fn bounds_type(&self, var: Option<VarId>) -> TokenStream {
        var.map_or_else(|| quote!(usize), |v| self.plain_type(v))
    }

    /// True if `for` loop `id` (statement `stmt`) keeps its bounds.
    pub(crate) fn bounds_kept(&self, stmt: StmtId, id: LoopId) -> bool {
        let plan = &self.analysis.plan;
        plan.bounds_kept[id] && plan.has_reverse[stmt] && plan.loops[id] == LoopPlan::Counted
    }

    /// What a counted loop pushes where it ends (normally or by an exit):
    /// its trip count, and its bounds where it keeps them.
    fn counted_end(&self, id: LoopId) -> TokenStream {
        let count = count_local(id);
        let push = self.push_bits(quote!(#count));
        if !self.analysis.plan.bounds_kept[id] {
            return push;
        }
        let (lo, hi) = bound_locals(id);
        let (lo, hi) = (self.push_bits(quote!(#lo)), self.push_bits(quote!(#hi)));
        quote!(#push #lo #hi)
    }

    /// [`fwd_for`](Self::fwd_for) over `range` (tokens).
    fn fwd_for_over(
        &self,
        stmt: &Stmt,
        id: &LoopId,
        var: &Option<VarId>,
        range: TokenStream,
        body: &Block,
        frames: &mut Vec<Frame>,
    ) -> TokenStream {
        let plan = &self.analysis.plan;
        let pattern = match var {
            Some(var) => {
                let name = self.name(*var);
                quote!(#name)
            }
            None => quote!(_),
        };
        if plan.loops[*id] == LoopPlan::Checkpointed && plan.has_reverse[stmt.id] {
            return self.fwd_checkpointed(stmt.id, *id, pattern, range, body, frames);
        }
        let walk = format_ident!("__deltad_walk", span = Span::mixed_site());
        // (Such a loop keeps nothing per iteration: it has no room.)
        let kept_before = self.keep_before(stmt.id, &walk);
        let room = self.room_per_iteration(stmt);
        if room.is_none() {
            let views = self.take_views(*id, *var, body, Side::Forward);
            if !kept_before.is_empty() || views.is_some() {
                let descending =
                    matches!(&stmt.kind, StmtKind::For { range, .. } if range.reversed);
                let looped =
                    self.fwd_loop(stmt.id, *id, frames, body, |label, body| match &views {
                        Some(views) => self.loop_over_views(
                            views,
                            label,
                            pattern.clone(),
                            &walk,
                            descending,
                            body,
                        ),
                        None => quote!(#label for #pattern in #walk #body),
                    });
                self.end_views(&views);
                return quote! {{
                    let #walk = #range;
                    #kept_before
                    { #looped }
                }};
            }
        }
        if let Some(pushes) = room {
            let (reals, words, flags) = (pushes.reals, pushes.words, pushes.flags);
            // Room for every push of the loop, reserved before it
            // (and for its trip count, pushed after it, when the
            // adjoint cannot count the range again).
            // (Its bounds too, where it keeps them.)
            let counted = plan.has_reverse[stmt.id] && plan.loops[*id] == LoopPlan::Counted;
            let own = usize::from(counted) + 2 * usize::from(counted && plan.bounds_kept[*id]);
            let count = format_ident!("__deltad_iterations", span = Span::mixed_site());
            let (rec, room) = (self.rec(), names::room());
            self.in_room.set(true);
            let looped = self.fwd_loop(
                stmt.id,
                *id,
                frames,
                body,
                |label, body| quote!(#label for #pattern in #walk #body),
            );
            self.in_room.set(false);
            return quote! {{
                let #walk = #range;
                let #count: usize = ::core::iter::Iterator::size_hint(&#walk).0;
                let mut #room = ::deltad::__private::Record::reserve(#rec, #count * #reals, #count * #words + #own, #count * #flags);
                #looped
            }};
        }
        self.fwd_loop(
            stmt.id,
            *id,
            frames,
            body,
            |label, body| quote!(#label for #pattern in #range #body),
        )
    }

    /// The elements of the buffers a `for` loop over `walk` overwrites one
    /// by one, kept in one copy before it (`analyze/loop_saves.rs`).
    fn keep_before(&self, stmt: StmtId, walk: &Ident) -> TokenStream {
        if self.recording.get() == Recording::Silent {
            return TokenStream::new();
        }
        let rec = self.rec();
        let keeps = self.analysis.plan.kept_before[stmt].iter().map(|&var| {
            let name = self.name(var);
            quote!(::deltad::__private::KeptRange::keep_range(&mut #name, #rec, #walk.start, #walk.end);)
        });
        quote!(#(#keeps)*)
    }

    /// A loop, counting its iterations when the adjoint needs the count.
    fn fwd_loop(
        &self,
        stmt: StmtId,
        id: LoopId,
        frames: &mut Vec<Frame>,
        body: &Block,
        make: impl FnOnce(TokenStream, TokenStream) -> TokenStream,
    ) -> TokenStream {
        let plan = &self.analysis.plan;
        let counted = plan.has_reverse[stmt] && plan.loops[id] == LoopPlan::Counted;
        frames.push(Frame::Loop { id, stmt });
        let body = self.fwd_block(body, frames);
        frames.pop();
        let label = self.function.loops[id]
            .label
            .as_ref()
            .map(|l| quote!(#l:))
            .unwrap_or_default();
        if !counted {
            return make(label, body);
        }
        let count = count_local(id);
        let push = self.counted_end(id);
        let body = quote!({ #count += 1; #body });
        let looped = make(label, body);
        quote! {
            let mut #count: usize = 0;
            #looped
            #push
        }
    }

    fn label(&self, target: LoopId) -> TokenStream {
        match &self.function.loops[target].label {
            Some(label) => quote!(#label),
            None => TokenStream::new(),
        }
    }

    /// `start..end`, `start..=end`, possibly reversed.
    pub(crate) fn range(&self, range: &RangeIter, side: Side) -> TokenStream {
        let start = self.value(&range.start, side);
        let end = self.value(&range.end, side);
        if range.inclusive {
            quote!((#start..=#end))
        } else {
            quote!((#start..#end))
        }
    }

    fn fwd_let(&self, id: StmtId, var: VarId, init: &crate::ir::Expr) -> TokenStream {
        let name = self.name(var);
        let mutable = self.function.vars[var].mutable;
        let mut_token = mutable.then(|| quote!(mut));
        let value = match &init.kind {
            ExprKind::Call(_) | ExprKind::Var(_) if self.is_buffer(var) => {
                self.whole_value(var, init)
            }
            ExprKind::Call(call) => {
                if !self.is_active(init) {
                    let plain = self.plain_call(call, Side::Forward);
                    if self.active(var) {
                        self.lift(plain)
                    } else {
                        plain
                    }
                } else {
                    // A checkpointed call keeps nothing: the adjoint runs
                    // it again.
                    let rec = if self.useful(var) && !call.checkpoint {
                        self.rec()
                    } else {
                        quote!(&mut ::deltad::__private::NoRecord)
                    };
                    let fwd = self.callee(&call.path, "__fwd");
                    let args = self.call_args(call, Side::Forward);
                    quote!(#fwd(#rec, #(#args),*))
                }
            }
            ExprKind::NewBuffer(new) if self.analysis.plan.scratch[id] => {
                self.new_buffer(var, new, Side::Forward, Contents::Overwritten)
            }
            ExprKind::NewBuffer(new) => self.new_buffer(var, new, Side::Forward, Contents::Filled),
            ExprKind::Field { .. } => self.field_value(var, init, Side::Forward),
            // A value whose adjoint runs: its expensive partials kept.
            _ if self.let_keeps(var, init) => {
                let (before, value) = self.value_keeping(init, true);
                return quote!(#before let #mut_token #name = #value;);
            }
            _ if self.active(var) => self.scalar_value(init, Side::Forward),
            _ => self.value(init, Side::Forward),
        };
        let annotation = match (&self.function.vars[var].annotation, self.active(var)) {
            (Some(ty), false) => quote!(: #ty),
            _ => TokenStream::new(),
        };
        quote!(let #mut_token #name #annotation = #value;)
    }

    /// The value of the local `var` holding a field of a call's result: a
    /// scalar of the pass where it is differentiated, else the field's
    /// value as it is.
    /// `read` is the `let`'s `ExprKind::Field`: `base[index].a.b[elem]`.
    pub(crate) fn field_value(
        &self,
        var: VarId,
        read: &crate::ir::Expr,
        side: Side,
    ) -> TokenStream {
        let ExprKind::Field {
            base,
            index,
            members,
            elem,
        } = &read.kind
        else {
            unreachable!("a field read");
        };
        let s = &self.scalar;
        let name = self.name(*base);
        let index = index.as_deref().map(|index| {
            let index = self.value(index, side);
            quote!([#index])
        });
        let elem = elem.as_deref().map(|elem| {
            let elem = self.value(elem, side);
            quote!([#elem])
        });
        let place = quote!(#name #index #(.#members)* #elem);
        if self.active(var) {
            quote!(::deltad::__private::RealLeaf::<#s>::scalar(&#place))
        } else {
            self.plain_field(place)
        }
    }

    /// The value of a field of a value of a user type, at `place`, where
    /// it is not differentiated: a differentiated value's twin holds its
    /// reals as scalars of the pass, read as machine floats; any other
    /// field is copied (`PlainRead` tells them apart by the field's type).
    pub(crate) fn plain_field(&self, place: TokenStream) -> TokenStream {
        quote! {{
            #[allow(unused_imports)]
            use ::deltad::__private::{ReadActive as _, ReadPlain as _};
            (&::deltad::__private::PlainRead(&#place)).plain()
        }}
    }

    /// A new local buffer: `vec![..]` with its elements as scalars of the
    /// pass if the buffer is differentiated.
    pub(crate) fn new_buffer(
        &self,
        var: VarId,
        new: &NewBuffer,
        side: Side,
        contents: Contents,
    ) -> TokenStream {
        let element = |e: &crate::ir::Expr| {
            if self.active(var) {
                self.scalar_value(e, side)
            } else {
                self.value(e, side)
            }
        };
        let array = self.function.vars[var].array;
        match new {
            NewBuffer::Repeat { elem, len } => {
                let elem = element(elem);
                let len = self.value(len, side);
                if array {
                    return quote!([#elem; #len]);
                }
                // A differentiated buffer in memory an adjoint gave back if
                // there is some (see `Stack::filled`), except in a loop
                // whose room holds the record.
                let value = format_ident!("__deltad_elem", span = Span::mixed_site());
                let count = format_ident!("__deltad_len", span = Span::mixed_site());
                let filled = match side {
                    _ if !self.active(var) => None,
                    Side::Forward if self.in_room.get() => None,
                    Side::Forward => {
                        let rec = self.rec();
                        let make = match contents {
                            Contents::Filled => quote!(filled),
                            Contents::Overwritten => quote!(scratch),
                        };
                        Some(quote!(::deltad::__private::Record::#make(#rec, #value, #count)))
                    }
                    Side::Adjoint => {
                        let stack = names::stack();
                        Some(quote!(#stack.filled(#value, #count)))
                    }
                };
                match filled {
                    Some(filled) => quote!({
                        let (#value, #count) = (#elem, #len);
                        #filled
                    }),
                    None => quote!(::deltad::__private::repeated(#elem, #len)),
                }
            }
            NewBuffer::List(elems) => {
                let elems = elems.iter().map(element);
                if array {
                    quote!([#(#elems),*])
                } else {
                    quote!(::std::vec![#(#elems),*])
                }
            }
        }
    }

    /// The path of a callee's generated item: `path::item`.
    pub(crate) fn callee(&self, path: &syn::Path, item: &str) -> TokenStream {
        let item = syn::Ident::new(item, Span::call_site());
        quote!(#path::#item)
    }

    /// A call computing a plain value (no argument differentiated), on the
    /// machine values: the callee as written, its scalar arguments as the
    /// lowering computed them (control flow in them was hoisted and ran
    /// already, on the pass's scalars), the others as written.
    pub(crate) fn plain_call(&self, call: &crate::ir::Call, side: Side) -> TokenStream {
        let syn::Expr::Call(written) = &*call.written else {
            let written = &call.written;
            return quote!(#written);
        };
        let func = &written.func;
        let args = call
            .args
            .iter()
            .zip(&written.args)
            .map(|(arg, as_written)| match arg {
                CallArg::Value(value) => self.value(value, side),
                // A list of elements (`[a, b]`, `&vec![..]`): the buffer the
                // lowering built of them (they may call closures, which are
                // inlined, not defined).
                CallArg::Buffer(buffer)
                    if self.function.vars[buffer.var].origin == crate::ir::Origin::Temp =>
                {
                    let name = self.name(buffer.var);
                    if buffer.by_value {
                        quote!(::core::clone::Clone::clone(&#name))
                    } else {
                        quote!(&#name)
                    }
                }
                CallArg::Plain(_)
                | CallArg::Buffer(_)
                | CallArg::Struct { .. }
                | CallArg::Function(_) => quote!(#as_written),
                // (The local is its fields here: the value is built again,
                // by reference where it was passed by reference.)
                CallArg::Literal { value, by_ref, .. } => {
                    let literal = self.plain_literal(value);
                    if *by_ref {
                        quote!(&#literal)
                    } else {
                        literal
                    }
                }
            });
        let read = &call.read;
        quote!(#func(#(#args),*) #(.#read)*)
    }

    /// The arguments of a call of a callee's compiled pass, each converted
    /// by the callee's parameter marker.
    pub(crate) fn call_args(&self, call: &crate::ir::Call, side: Side) -> Vec<TokenStream> {
        let values = self.call_arg_values(call, side);
        self.callee_args(call, &values, side, None).0
    }

    /// Each argument of a call (by `call.args`) converted by its
    /// parameter's marker (nothing for a function: see `callee_args`).
    pub(crate) fn call_arg_values(&self, call: &crate::ir::Call, side: Side) -> Vec<TokenStream> {
        let s = &self.scalar;
        call.args
            .iter()
            .enumerate()
            .map(|(i, arg)| {
                let (value, active, buffer, span) = match arg {
                    CallArg::Function(_) => return TokenStream::new(),
                    CallArg::Value(value) => (
                        self.value(value, side),
                        self.is_active(value),
                        false,
                        value.span,
                    ),
                    CallArg::Plain(value) => (self.value(value, side), false, true, value.span),
                    CallArg::Buffer(buffer) => (
                        self.buffer_arg(buffer, side),
                        self.active(buffer.var),
                        true,
                        buffer.span,
                    ),
                    // (Its twin, built from the fields' variables.)
                    // (Without a differentiated field: the value itself, as
                    // a constant is passed, to a parameter with or without
                    // derivatives.)
                    CallArg::Literal {
                        value,
                        leaves,
                        span,
                        ..
                    } => {
                        if leaves.iter().any(|leaf| self.is_active(leaf)) {
                            let twin = self.twin_of_literal(value);
                            (quote!(&#twin), true, false, *span)
                        } else {
                            let plain = self.plain_literal(value);
                            (quote!(&#plain), false, false, *span)
                        }
                    }
                    // (The twin the pass holds, borrowed.)
                    CallArg::Struct { var, index, span } => {
                        let name = self.name(*var);
                        let borrowed = match index {
                            Some(index) => {
                                let index = self.value(index, side);
                                quote!(&#name[#index])
                            }
                            None if self.is_param(*var) => quote!(#name),
                            None => quote!(&#name),
                        };
                        (borrowed, self.active(*var), false, *span)
                    }
                };
                let marker = self.marker(call, i, span);
                // A constant buffer the caller owns, passed by value: its
                // copy lifted into a slot the call holds (or given as it is
                // to a `#[no_grad]` parameter).
                if let CallArg::Buffer(buffer) = arg {
                    if buffer.by_value && buffer.range.is_none() && !active {
                        let name = self.name(buffer.var);
                        return quote_spanned!(span=> <#marker as ::deltad::__private::PassOwned<'_, #s, _>>::pass_owned(
                            &#name,
                            &mut ::core::option::Option::None,
                        ));
                    }
                }
                // (The scalar of an active argument is its own; a constant's
                // is the pass's.)
                let conversion = if active {
                    quote_spanned!(span=> ::deltad::__private::PassActive<_>)
                } else {
                    quote_spanned!(span=> ::deltad::__private::PassConstant<#s, _>)
                };
                // At the argument: a conversion that does not exist is the
                // user's error there.
                let passed = quote_spanned!(span=> <#marker as #conversion>::pass(#value));
                if buffer {
                    quote_spanned!(span=> &*#passed)
                } else {
                    passed
                }
            })
            .collect()
    }

    fn fwd_assign(
        &self,
        stmt: StmtId,
        place: &Place,
        op: AssignOp,
        value: &crate::ir::Expr,
    ) -> TokenStream {
        let plan = &self.analysis.plan;
        let var = place.var();
        let name = self.name(var);
        // A value whose adjoint runs: its expensive partials kept.
        let (kept, value) = if self.assign_keeps(var, op) {
            self.value_keeping(value, self.active(var))
        } else if self.active(var) {
            (TokenStream::new(), self.scalar_value(value, Side::Forward))
        } else {
            (TokenStream::new(), self.value(value, Side::Forward))
        };
        let op = assign_op(op);
        let save = plan.saves[stmt];
        // The value first: `x[i] += x[j]` on a scalar type with operator
        // traits would borrow `x` mutably before reading it.
        let new = format_ident!("__deltad_value", span = Span::mixed_site());
        match place {
            Place::Var(_) => {
                let save = save.then(|| self.push_var(var));
                quote!({ #kept let #new = #value; #save #name #op #new; })
            }
            Place::Elem(_, index) => {
                let index_value = self.element_index(var, index, false, Side::Forward);
                let at = format_ident!("__deltad_at", span = Span::mixed_site());
                let save = save.then(|| {
                    if self.active(var) {
                        self.push_real(quote!(#name[#at]))
                    } else {
                        self.push_bits(quote!(#name[#at]))
                    }
                });
                quote!({
                    let #at: usize = #index_value;
                    #kept
                    let #new = #value;
                    #save
                    #name[#at] #op #new;
                })
            }
        }
    }

    fn effect(&self, effect: &Effect) -> TokenStream {
        let mac = &effect.mac;
        if effect.args.is_empty() {
            return quote!(#mac;);
        }
        let path = &mac.path;
        let args = effect.args.iter().map(|arg| match arg {
            EffectArg::Expr(expr) => self.value(expr, Side::Forward),
            EffectArg::Tokens(tokens) => tokens.clone(),
        });
        quote!(#path!(#(#args),*);)
    }

    /// The block with id `id`.
    pub(crate) fn block(&self, id: BlockId) -> &Block {
        fn find(block: &Block, id: BlockId) -> Option<&Block> {
            if block.id == id {
                return Some(block);
            }
            block
                .stmts
                .iter()
                .flat_map(|s| s.blocks())
                .find_map(|b| find(b, id))
        }
        find(&self.function.body, id).expect("every block id is a block")
    }
}

pub(crate) fn assign_op(op: AssignOp) -> TokenStream {
    match op {
        AssignOp::Set => quote!(=),
        AssignOp::Add => quote!(+=),
        AssignOp::Sub => quote!(-=),
        AssignOp::Mul => quote!(*=),
        AssignOp::Div => quote!(/=),
        AssignOp::Rem => quote!(%=),
    }
}

/// The name a shadowed variable is kept under for the block's end.
fn kept_local(var: VarId) -> syn::Ident {
    format_ident!("__deltad_kept{}", var, span = Span::mixed_site())
}

/// The iteration counter of loop `id`.
pub(crate) fn count_local(id: LoopId) -> syn::Ident {
    format_ident!("__deltad_count{}", id, span = Span::mixed_site())
}

/// The locals holding the bounds of loop `id`, where it keeps them.
pub(crate) fn bound_locals(id: LoopId) -> (syn::Ident, syn::Ident) {
    (
        format_ident!("__deltad_lo{}", id, span = Span::mixed_site()),
        format_ident!("__deltad_hi{}", id, span = Span::mixed_site()),
    )
}

/// The range over loop `id`'s kept bounds.
fn bounds_range(id: LoopId, inclusive: bool, reversed: bool) -> TokenStream {
    let (lo, hi) = bound_locals(id);
    let range = if inclusive {
        quote!((#lo..=#hi))
    } else {
        quote!((#lo..#hi))
    };
    if reversed {
        quote!(#range.rev())
    } else {
        range
    }
}

/// The decision of the `if` statement `stmt`.
pub(crate) fn decision_local(stmt: StmtId) -> syn::Ident {
    format_ident!("__deltad_decision{}", stmt, span = Span::mixed_site())
}

/// What a new local buffer must hold when it is made.
#[derive(Clone, Copy)]
pub(crate) enum Contents {
    /// The values it is made with (`vec![value; len]`).
    Filled,
    /// Any values: each element is set before it is read
    /// (`analyze/overwritten.rs`).
    Overwritten,
}
