//! The adjoint: the statements in reverse.
//!
//! A block's reverse starts at the mirror of its end: it pops where the
//! block was left (if it can be left early), declares the adjoints of its
//! variables, and establishes the values of its variables the adjoint
//! reads (popped or evaluated again), in the order they were declared.
//! Statements after an early exit point are reversed only if the block got
//! past it; a `let` that shadows a name opens a nested scope, so every name
//! in the adjoint means what it means at the mirrored point of the forward
//! pass (and the shadowing `let`'s own adjoint is emitted outside it).

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

use super::adjoint_expr::ExprAdjoint;
use super::forward::{bound_locals, count_local, decision_local, Contents};
use super::promote::Rolled;
use super::values::Side;
use super::{names, sink, Passes};
use crate::analyze::{Establish, LoopPlan};
use crate::ir::{
    AssignOp, Block, ExprKind, NewBuffer, Origin, Place, Stmt, StmtKind, VarId, VarKind,
};

impl Passes<'_> {
    pub(crate) fn adjoint_body(&self) -> TokenStream {
        let a = &self.cotangent;
        let out = names::out();
        let result_adjoint = self.adjoint(self.function.result);
        let adjoint_type = self.output_adjoint_type();
        let mut params = Vec::new();
        let mut adds = Vec::new();
        let mut visible = Vec::new();
        for (index, &var) in self.function.params.iter().enumerate() {
            visible.push(self.name(var).to_string());
            if self.active(var) && self.function.vars[var].kind == VarKind::Scalar {
                let adjoint = self.adjoint(var);
                let sink = sink(index);
                params.push(
                    quote!(let mut #adjoint: #a = (-<#a as ::deltad::__private::Scalar>::zero());),
                );
                adds.push(quote!(::deltad::__private::ScalarSink::add(&mut #sink, #adjoint);));
            }
        }
        // The differentiated fields of parameters of user types: adjoints
        // in locals, added to the parameter's sink at the end.
        let mut field_adds: Vec<Vec<TokenStream>> = vec![Vec::new(); self.function.params.len()];
        for var in self.active_fields().collect::<Vec<_>>() {
            let adjoint = self.adjoint(var);
            params.push(
                quote!(let mut #adjoint: #a = (-<#a as ::deltad::__private::Scalar>::zero());),
            );
            let crate::ir::Origin::Field(id) = self.function.vars[var].origin else {
                continue;
            };
            let base = self.function.fields[id].base;
            if let Origin::Param(index) = self.function.vars[base].origin {
                let members = &self.function.fields[id].members;
                let twin = names::ident("__deltad_twin");
                field_adds[index].push(quote! {
                    ::deltad::__private::RealLeaf::<#a>::accumulate(&mut #twin #(.#members)*, #adjoint);
                });
            }
        }
        for (index, field_adds) in field_adds.iter().enumerate() {
            if field_adds.is_empty() {
                continue;
            }
            let sink = sink(index);
            let twin = names::ident("__deltad_twin");
            adds.push(quote! {
                ::deltad::__private::TwinSink::with(&mut #sink, |#twin| { #(#field_adds)* });
            });
        }
        // A result's field that copies a parameter's: its adjoint goes back
        // there, where the field is a differentiated real.
        if let Some(value) = &self.function.result_struct {
            for (members, var) in value.leaves() {
                let Some(&(_, field)) = self.analysis.pass_through.iter().find(|(m, _)| *m == var)
                else {
                    continue;
                };
                let crate::ir::Origin::Field(id) = self.function.vars[field].origin else {
                    continue;
                };
                let leaf = &self.function.fields[id];
                let Origin::Param(index) = self.function.vars[leaf.base].origin else {
                    continue;
                };
                let (sink, twin) = (sink(index), names::ident("__deltad_twin"));
                let field_members = &leaf.members;
                adds.push(quote! {
                    ::deltad::__private::TwinSink::with(&mut #sink, |#twin| {
                        use ::deltad::__private::{CopyActive as _, CopyPlain as _};
                        (&mut ::deltad::__private::LeafCopy(
                            &mut #twin #(.#field_members)*,
                            &#out #(.#members)*,
                        ))
                            .add_adjoint();
                    });
                });
            }
        }
        // A result of a user type: the adjoints of its fields, from `out`'s.
        if let Some(value) = &self.function.result_struct {
            for (members, var) in value.leaves() {
                if self.active(var) {
                    let adjoint = self.adjoint(var);
                    params.push(quote! {
                        let mut #adjoint: #a = ::deltad::__private::RealLeaf::<#a>::adjoint(&#out #(.#members)*);
                    });
                }
            }
        }
        let prologue = self.struct_prologue();
        let body = self.rev_block(&self.function.body, &mut visible);
        // Each buffer's sink takes as many adjoints as the buffer has
        // elements (checked once: the loops index both without checks).
        let lengths = self
            .function
            .params
            .iter()
            .enumerate()
            .filter_map(|(index, &var)| {
                if !(self.active(var) && self.is_buffer(var)) {
                    return None;
                }
                let (name, sink) = (self.name(var), sink(index));
                Some(quote! {
                    ::core::assert!(
                        ::deltad::__private::SliceSink::capacity(&#sink) >= #name.len(),
                        "deltad: an adjoint buffer is shorter than its argument"
                    );
                })
            });
        // (A result of a user type has its fields' adjoints instead.)
        let result_adjoint = self
            .function
            .result_struct
            .is_none()
            .then(|| quote!(let mut #result_adjoint: #adjoint_type = #out;));
        // The result's adjoint (a buffer the caller made) given back when
        // the body is done with it (see `give_backs`).
        let give_back_result = (self.function.result_struct.is_none()
            && self.is_buffer(self.function.result))
        .then(|| {
            let (adjoint, stack) = (self.adjoint(self.function.result), names::stack());
            quote!(::deltad::__private::ResultBuffer::give_back(&mut #adjoint, &mut *#stack);)
        });
        quote! {
            #prologue
            #result_adjoint
            #(#lengths)*
            #(#params)*
            #body
            #give_back_result
            #(#adds)*
        }
    }

    /// `stack.pop_bits::<T>()`.
    pub(crate) fn pop_bits(&self, ty: TokenStream) -> TokenStream {
        let stack = names::stack();
        quote!(#stack.pop_bits::<#ty>())
    }

    fn pop_real(&self) -> TokenStream {
        let stack = names::stack();
        quote!(#stack.pop_real())
    }

    /// The zero adjoints start from and are reset to: `-0.0`, the identity
    /// of addition (`-0.0 + a == a` for every `a`, also `+0.0`), so the
    /// optimiser drops the addition that follows a reset (`+0.0 + a` is not
    /// `a` when `a` is `-0.0`). The `Grad`s users see start from `+0.0`, so
    /// an exactly zero derivative there is `+0.0`.
    pub(crate) fn zero(&self) -> TokenStream {
        let a = &self.cotangent;
        quote!((-<#a as ::deltad::__private::Scalar>::zero()))
    }

    /// The reverse of a block (nothing if it has no adjoint work).
    pub(crate) fn rev_block(&self, block: &Block, visible: &mut Vec<String>) -> TokenStream {
        if !self.block_has_reverse(block) {
            return TokenStream::new();
        }
        let plan = &self.analysis.plan;
        let items = &block.items;
        let code = plan.codes[block.id].then(|| {
            let code = code_local(block.id);
            let pop = self.pop_bits(quote!(usize));
            quote!(let #code: usize = #pop;)
        });
        // Adjoints of the block's variables: unique names, so all of them
        // are declared here (buffers get their storage where their length
        // is known).
        let mut adjoints = Vec::new();
        for stmt in &block.stmts {
            let StmtKind::Let { var, .. } = &stmt.kind else {
                continue;
            };
            if !self.useful(*var) {
                continue;
            }
            let adjoint = self.adjoint(*var);
            // (A buffer's and a user type's adjoint get their storage where
            // the value's shape is known, `prelude`.)
            if self.is_buffer(*var) || self.function.vars[*var].kind == VarKind::Struct {
                adjoints.push(quote!(let mut #adjoint;));
            } else {
                let a = &self.cotangent;
                let zero = self.zero();
                adjoints.push(quote!(let mut #adjoint: #a = #zero;));
            }
        }
        let depth = visible.len();
        let segments = self.with_promoted(block, || self.segment(block, 0, true, visible));
        visible.truncate(depth);
        quote!({ #(#items)* #code #(#adjoints)* #segments })
    }

    pub(crate) fn block_has_reverse(&self, block: &Block) -> bool {
        let plan = &self.analysis.plan;
        block.stmts.iter().any(|s| {
            plan.has_reverse[s.id]
                || matches!(s.kind, StmtKind::Let { var, .. }
                    if plan.establish[var] == Establish::Pop || plan.establish_len[var] == Establish::Pop)
        })
    }

    /// The statements `from..` of `block` in reverse, in a scope that
    /// establishes their variables. `rev_first`: whether the statement at
    /// `from` is reversed here (a shadowing `let` is reversed by the
    /// caller, outside this scope).
    fn segment(
        &self,
        block: &Block,
        from: usize,
        rev_first: bool,
        visible: &mut Vec<String>,
    ) -> TokenStream {
        let plan = &self.analysis.plan;
        let stmts = &block.stmts;
        // A `let` shadowing a visible name: its value lives in a nested
        // scope, its own adjoint (reading the shadowed name) outside it.
        let shadows = |visible: &Vec<String>, k: usize| {
            self.declared_name(&stmts[k])
                .is_some_and(|name| visible.contains(&name))
        };
        if rev_first && shadows(visible, from) {
            let inner = self.segment(block, from, false, visible);
            let own = self.rev_stmt(&stmts[from], visible);
            return quote!({ #inner #own });
        }
        // The segment ends at a statement that can leave the block, or
        // before a `let` that shadows a visible name.
        let mut end = from;
        let mut names_here: Vec<String> = Vec::new();
        loop {
            if let Some(name) = self.declared_name(&stmts[end]) {
                names_here.push(name);
            }
            if plan.exits[stmts[end].id] || end + 1 == stmts.len() {
                break;
            }
            if let Some(next) = self.declared_name(&stmts[end + 1]) {
                if visible.contains(&next) || names_here.contains(&next) {
                    break;
                }
            }
            end += 1;
        }
        let prelude = self.preludes(&stmts[from..=end]);
        visible.extend(names_here);
        let nested = (end + 1 < stmts.len()).then(|| {
            let inner = self.segment(block, end + 1, true, visible);
            if plan.exits[stmts[end].id] {
                let code = code_local(block.id);
                quote!(if #code > #end { #inner })
            } else {
                inner
            }
        });
        let reversed: Vec<TokenStream> = (from..=end)
            .rev()
            .filter(|&k| k != from || rev_first)
            .map(|k| self.rev_stmt(&stmts[k], visible))
            .collect();
        let reaches_end = block.id == self.function.body.id && end + 1 == stmts.len();
        let give_backs = self.give_backs(&stmts[from..=end], rev_first, reaches_end);
        quote!({ #(#prelude)* #nested #(#reversed)* #(#give_backs)* })
    }

    /// Where the scopes of the `let`s of `stmts` end in reverse (their
    /// reverse done): the memory of the buffers the adjoint made for them
    /// (a value popped or made again, an adjoint's storage) given back to
    /// the stack, for the next buffer a pass makes (`Stack::give_back`).
    /// Not for the first if its reverse comes after (`rev_first` false: a
    /// shadowing `let`), nor for an adjoint made at the result unless
    /// `reaches_end`, the segment holding the function's last statement,
    /// which makes it (else an exit may skip that statement).
    fn give_backs(&self, stmts: &[Stmt], rev_first: bool, reaches_end: bool) -> Vec<TokenStream> {
        let plan = &self.analysis.plan;
        let (s, stack) = (&self.scalar, names::stack());
        let mut gives = Vec::new();
        for (k, stmt) in stmts.iter().enumerate() {
            let StmtKind::Let { var, init } = &stmt.kind else {
                continue;
            };
            let var = *var;
            if (k == 0 && !rev_first) || !self.is_buffer(var) {
                continue;
            }
            let made_here = match plan.establish[var] {
                Establish::Pop => true,
                Establish::Recompute => {
                    matches!(init.as_ref().map(|i| &i.kind), Some(ExprKind::NewBuffer(_)))
                }
                _ => false,
            };
            if made_here && self.active(var) {
                let name = self.name(var);
                gives.push(quote!(::deltad::__private::KeptWhole::<#s>::give_back(&mut #name, &mut *#stack);));
            }
            if self.useful(var) && (reaches_end || !self.adjoint_made_at_result(var)) {
                let adjoint = self.adjoint(var);
                gives.push(quote!(::deltad::__private::ResultBuffer::give_back(&mut #adjoint, &mut *#stack);));
            }
        }
        gives
    }

    /// The user name a statement declares (temporaries have unique names).
    fn declared_name(&self, stmt: &Stmt) -> Option<String> {
        match &stmt.kind {
            StmtKind::Let { var, .. } if self.function.vars[*var].origin == Origin::Local => {
                Some(syn::ext::IdentExt::unraw(self.name(*var)).to_string())
            }
            _ => None,
        }
    }

    /// The preludes of `stmts`, in order; consecutive variables that pop a
    /// real each pop them together.
    fn preludes(&self, stmts: &[Stmt]) -> Vec<TokenStream> {
        let mut preludes = Vec::new();
        let mut reals: Vec<Ident> = Vec::new();
        for stmt in stmts {
            if let StmtKind::Let { var, .. } = &stmt.kind {
                if self.popped_real(*var) {
                    reals.push(self.name(*var).clone());
                    continue;
                }
            }
            preludes.push(self.pop_reals(&mut reals));
            preludes.push(self.prelude(stmt));
        }
        preludes.push(self.pop_reals(&mut reals));
        preludes
    }

    /// Pops the values of the variables `reals` (popped first first; and
    /// empties it): one alone, several at once (they were pushed together,
    /// or in the same order).
    fn pop_reals(&self, reals: &mut Vec<Ident>) -> TokenStream {
        let s = &self.scalar;
        let pop = match &reals[..] {
            [] => TokenStream::new(),
            [one] => {
                let pop = self.pop_real();
                quote!(let mut #one: #s = #pop;)
            }
            several => {
                let stack = names::stack();
                let count = several.len();
                // In the order they were pushed: the last popped first.
                let names = several.iter().rev();
                quote!(let [#(mut #names),*]: [#s; #count] = #stack.pop_real_array::<#count>();)
            }
        };
        reals.clear();
        pop
    }

    /// What entering a `let`'s scope in reverse does: the variable's value
    /// (popped or evaluated again), its length, its adjoint's storage.
    fn prelude(&self, stmt: &Stmt) -> TokenStream {
        let plan = &self.analysis.plan;
        let StmtKind::Let { var, init } = &stmt.kind else {
            return TokenStream::new();
        };
        let var = *var;
        let name = self.name(var);
        let value = match plan.establish[var] {
            // A local of a user type a call returned: the call's forward pass
            // again, and the adjoint twin shaped like its value.
            Establish::Recompute if self.function.vars[var].kind == VarKind::Struct => {
                let Some(ExprKind::Call(call)) = init.as_ref().map(|i| &i.kind) else {
                    unreachable!("locals of user types are calls' results");
                };
                // (A call without differentiated arguments is plain code, in
                // the user's type, as in the forward pass.)
                if !self.active(var) {
                    let plain = self.plain_call(call, Side::Adjoint);
                    return quote!(let #name = #plain;);
                }
                let (s, a) = (&self.scalar, &self.cotangent);
                let fwd = self.callee(&call.path, "__fwd");
                let zeros_like = self.callee(&call.path, "__zeros_like");
                let args = self.call_args(call, Side::Adjoint);
                let adjoint = self.adjoint(var);
                let storage = self
                    .useful(var)
                    .then(|| quote!(#adjoint = #zeros_like::<#s, #a>(&#name);));
                quote! {
                    let #name = #fwd(&mut ::deltad::__private::NoRecord, #(#args),*);
                    #storage
                }
            }
            Establish::Recompute => {
                let init = init.as_ref().expect("a recomputed `let` has a value");
                let value = match &init.kind {
                    ExprKind::NewBuffer(new) => {
                        self.new_buffer(var, new, Side::Adjoint, Contents::Filled)
                    }
                    // A copy of a buffer: the source stays (it may be read
                    // again).
                    ExprKind::Var(source) if self.is_buffer(var) => self.buffer_copy(var, *source),
                    ExprKind::Field { .. } => self.field_value(var, init, Side::Adjoint),
                    _ if self.active(var) => self.scalar_value(init, Side::Adjoint),
                    _ => self.value(init, Side::Adjoint),
                };
                let annotation = match (&self.function.vars[var].annotation, self.active(var)) {
                    (Some(ty), false) => quote!(: #ty),
                    _ => TokenStream::new(),
                };
                quote!(let mut #name #annotation = #value;)
            }
            Establish::Pop => match self.kept_whole_type(var, init.as_ref()) {
                Some(ty) => {
                    let (s, stack) = (&self.scalar, names::stack());
                    quote!(let mut #name = <#ty as ::deltad::__private::KeptWhole<#s>>::pop_kept(#stack);)
                }
                None => self.pop_var(var, init.as_ref()),
            },
            Establish::None | Establish::Available => TokenStream::new(),
        };
        let length = match plan.establish_len[var] {
            Establish::Recompute if plan.establish[var] == Establish::None => {
                let local = self.length_local(var);
                let length = match init.as_ref().map(|i| &i.kind) {
                    Some(ExprKind::NewBuffer(NewBuffer::List(elems))) => {
                        let count = elems.len();
                        quote!(#count)
                    }
                    Some(ExprKind::NewBuffer(NewBuffer::Repeat { len, .. })) => {
                        self.value(len, Side::Adjoint)
                    }
                    _ => unreachable!("only new buffers have their length evaluated again"),
                };
                quote!(let mut #local: usize = #length;)
            }
            Establish::Pop if plan.establish[var] == Establish::None => {
                let local = self.length_local(var);
                let pop = self.pop_bits(quote!(usize));
                // (Set back by the reverse of each whole assignment.)
                quote!(let mut #local: usize = #pop;)
            }
            _ => TokenStream::new(),
        };
        let storage = (self.useful(var) && self.is_buffer(var)).then(|| {
            let adjoint = self.adjoint(var);
            // (Made where the result's adjoint moves into it, or where the
            // buffer moves into another variable, if it does: the compiler
            // checks that this comes before every use.)
            if self.adjoint_made_at_result(var) || self.moved_at_end(var) {
                return TokenStream::new();
            }
            let storage = self.adjoint_storage(var, init.as_ref());
            quote!(#adjoint = #storage;)
        });
        quote!(#value #length #storage)
    }

    /// `let mut name = <popped>;` (`init`: the value of its `let`, which
    /// gives an array's length).
    fn pop_var(&self, var: VarId, init: Option<&crate::ir::Expr>) -> TokenStream {
        let name = self.name(var);
        let stack = names::stack();
        if self.is_buffer(var) {
            let len = format_ident!("__deltad_popped_len", span = Span::mixed_site());
            let pop_len = self.pop_bits(quote!(usize));
            // An array: made with its length, then filled (a `Vec` would
            // not be the type its uses expect).
            let array_len = match init.map(|init| &init.kind) {
                Some(ExprKind::NewBuffer(NewBuffer::List(elems)))
                    if self.function.vars[var].array =>
                {
                    let count = elems.len();
                    Some(quote!(#count))
                }
                Some(ExprKind::NewBuffer(NewBuffer::Repeat { len, .. }))
                    if self.function.vars[var].array =>
                {
                    Some(self.value(len.as_ref(), Side::Adjoint))
                }
                _ => None,
            };
            if let Some(count) = array_len {
                let (s, prim) = (&self.scalar, &self.prim);
                let zero = quote!(<#s as ::deltad::__private::Scalar>::zero());
                if self.active(var) {
                    return quote! {
                        let #len: usize = #pop_len;
                        let mut #name: [#s; #count] = [#zero; #count];
                        #stack.pop_reals_into(&mut #name[..#len]);
                    };
                }
                let element = self.pop_bits(quote!(#prim));
                return quote! {
                    let #len: usize = #pop_len;
                    let mut #name: [#prim; #count] = [0.0; #count];
                    for __deltad_k in (0..#len).rev() {
                        #name[__deltad_k] = #element;
                    }
                };
            }
            if self.active(var) {
                return quote! {
                    let #len: usize = #pop_len;
                    let mut #name = #stack.pop_reals(#len);
                };
            }
            let prim = &self.prim;
            let element = self.pop_bits(quote!(#prim));
            return quote! {
                let #len: usize = #pop_len;
                let mut #name: ::std::vec::Vec<#prim> = ::std::vec![0.0; #len];
                for __deltad_k in (0..#len).rev() {
                    #name[__deltad_k] = #element;
                }
            };
        }
        if self.active(var) {
            let s = &self.scalar;
            let pop = self.pop_real();
            quote!(let mut #name: #s = #pop;)
        } else {
            let ty = self.plain_type(var);
            let pop = self.pop_bits(ty.clone());
            quote!(let mut #name: #ty = #pop;)
        }
    }

    /// The reverse of one statement.
    fn rev_stmt(&self, stmt: &Stmt, visible: &mut Vec<String>) -> TokenStream {
        let plan = &self.analysis.plan;
        if !plan.has_reverse[stmt.id] {
            return TokenStream::new();
        }
        match &stmt.kind {
            StmtKind::Let {
                var,
                init: Some(init),
            } if self.useful(*var) => self.rev_let(*var, init),
            StmtKind::Let { .. } => TokenStream::new(),
            StmtKind::Assign {
                place: Place::Var(var),
                value,
                first,
                ..
            } if self.is_buffer(*var) => self.rev_whole_assign(stmt.id, *var, value, *first),
            StmtKind::Assign {
                place,
                op,
                value,
                first,
            } => self.rev_assign(stmt.id, place, *op, value, *first),
            StmtKind::If { cond, then, els } => {
                let decision = decision_local(stmt.id);
                let value = if plan.push_decision[stmt.id] {
                    let stack = names::stack();
                    quote!(#stack.pop_flag())
                } else {
                    self.value(cond, Side::Adjoint)
                };
                let then = self.rev_block(then, visible);
                let els = els.as_ref().map(|b| self.rev_block(b, visible));
                quote! {
                    let #decision: bool = #value;
                    if #decision { #then } else { #els }
                }
            }
            StmtKind::Match { arms, .. } => {
                let arm = format_ident!("__deltad_arm", span = Span::mixed_site());
                let pop = self.pop_bits(quote!(usize));
                let arms = arms.iter().enumerate().map(|(index, arm)| {
                    let body = self.rev_block(&arm.body, visible);
                    quote!(#index => { #body })
                });
                quote! {
                    match #pop {
                        #(#arms,)*
                        #arm => ::core::unreachable!("deltad: no such arm {}", #arm),
                    }
                }
            }
            StmtKind::For {
                id,
                var,
                range,
                body,
            } => {
                let loop_body = body;
                let index_name = var.map(|v| self.name(v).clone());
                let pattern = match (&index_name, plan.index_needed[*id]) {
                    (Some(name), true) => quote!(#name),
                    _ => quote!(_),
                };
                let depth = visible.len();
                if let Some(name) = &index_name {
                    visible.push(name.to_string());
                }
                let windowed = match var {
                    Some(index)
                        if plan.loops[*id] == LoopPlan::Reversed && plan.index_needed[*id] =>
                    {
                        Some(*index)
                    }
                    _ => None,
                };
                let views = match plan.loops[*id] {
                    LoopPlan::Reversed => self.take_views(*id, *var, loop_body, Side::Adjoint),
                    _ => None,
                };
                let (body, rolled) = match windowed {
                    Some(index) => self.with_windows(index, body, !range.reversed, || {
                        self.rev_block(body, visible)
                    }),
                    None => (self.rev_block(body, visible), Default::default()),
                };
                self.end_views(&views);
                visible.truncate(depth);
                let guard = |reversed: TokenStream| match self.nonzero_inflow(loop_body) {
                    Some(nonzero) => quote!(if #nonzero { #reversed }),
                    None => reversed,
                };
                match plan.loops[*id] {
                    LoopPlan::Checkpointed => {
                        self.rev_checkpointed(*id, *var, range, loop_body, body)
                    }
                    LoopPlan::Reversed => {
                        let walk = format_ident!("__deltad_walk", span = Span::mixed_site());
                        let Rolled {
                            before,
                            each,
                            after,
                        } = rolled;
                        let looped = match &views {
                            Some(views) => self.loop_over_views(
                                views,
                                TokenStream::new(),
                                pattern.clone(),
                                &walk,
                                !range.reversed,
                                quote!({ #body #each }),
                            ),
                            None if range.reversed => quote!(for #pattern in #walk { #body #each }),
                            None => quote!(for #pattern in #walk.rev() { #body #each }),
                        };
                        let range = self.range(range, Side::Adjoint);
                        let reversed = guard(quote!({
                            #before
                            let #walk = #range;
                            { #looped }
                            #after
                        }));
                        let kept_before = &plan.kept_before[stmt.id];
                        if kept_before.is_empty() {
                            return reversed;
                        }
                        // The elements kept before the loop, put back after it.
                        let stack = names::stack();
                        let restores = kept_before.iter().rev().map(|&var| {
                            let name = self.name(var);
                            quote!(::deltad::__private::KeptRange::restore_range(&mut #name, &mut *#stack, #walk.start, #walk.end);)
                        });
                        quote!({
                            #reversed
                            let #walk = #range;
                            #(#restores)*
                        })
                    }
                    LoopPlan::Counted => {
                        let count = count_local(*id);
                        let pop = self.pop_bits(quote!(usize));
                        // Its bounds, where it keeps them (pushed after the
                        // trip count).
                        let bounds = self.bounds_kept(stmt.id, *id).then(|| {
                            let (lo, hi) = bound_locals(*id);
                            let ty = self.bounds_type(*var);
                            let (pop_lo, pop_hi) =
                                (self.pop_bits(ty.clone()), self.pop_bits(ty.clone()));
                            quote!(let #hi: #ty = #pop_hi; let #lo: #ty = #pop_lo;)
                        });
                        if plan.index_needed[*id] {
                            let range = self.loop_walk(stmt.id, *id, range, Side::Adjoint);
                            let walk = format_ident!("__deltad_walk", span = Span::mixed_site());
                            let j = format_ident!("__deltad_j", span = Span::mixed_site());
                            let looped = guard(quote! {
                                let #walk = #range;
                                for #j in (0..#count).rev() {
                                    let #pattern = ::core::iter::Iterator::nth(
                                        &mut ::core::clone::Clone::clone(&#walk), #j
                                    ).expect("deltad: the loop ran this iteration");
                                    #body
                                }
                            });
                            quote! {
                                #bounds
                                let #count: usize = #pop;
                                #looped
                            }
                        } else {
                            let looped = guard(quote!(for _ in 0..#count { #body }));
                            quote! {
                                let #count: usize = #pop;
                                #looped
                            }
                        }
                    }
                }
            }
            StmtKind::While { id, body, .. } | StmtKind::Loop { id, body } => {
                let count = count_local(*id);
                let pop = self.pop_bits(quote!(usize));
                let nonzero = self.nonzero_inflow(body);
                let body = self.rev_block(body, visible);
                let looped = quote!(for _ in 0..#count { #body });
                let looped = match nonzero {
                    Some(nonzero) => quote!(if #nonzero { #looped }),
                    None => looped,
                };
                quote! {
                    let #count: usize = #pop;
                    #looped
                }
            }
            StmtKind::Block(block) => self.rev_block(block, visible),
            StmtKind::Break { .. }
            | StmtKind::Continue { .. }
            | StmtKind::Return
            | StmtKind::Effect(_) => TokenStream::new(),
        }
    }

    /// The reverse of `let var = init;` (`var` useful).
    fn rev_let(&self, var: VarId, init: &crate::ir::Expr) -> TokenStream {
        let adjoint = self.adjoint(var);
        match &init.kind {
            ExprKind::Call(_) | ExprKind::Var(_) if self.is_buffer(var) => {
                self.rev_whole_let(var, init)
            }
            ExprKind::Call(call) => {
                if !self.is_active(init) {
                    return TokenStream::new();
                }
                // (A local of a user type: its adjoint twin, given away.)
                self.rev_call(call, quote!(#adjoint))
            }
            ExprKind::NewBuffer(new) => {
                let mut adjoint_expr = ExprAdjoint::new(self);
                match new {
                    NewBuffer::Repeat { elem, .. } => {
                        if self.is_active(elem) {
                            let a = &self.cotangent;
                            let total = format_ident!("__deltad_total", span = Span::mixed_site());
                            adjoint_expr.push(quote! {
                                let #total: #a = #adjoint.iter().fold(
                                    (-<#a as ::deltad::__private::Scalar>::zero()),
                                    |__deltad_a, __deltad_b| __deltad_a + *__deltad_b,
                                );
                            });
                            adjoint_expr.propagate(elem, quote!(#total));
                        }
                    }
                    NewBuffer::List(elems) => {
                        for (k, elem) in elems.iter().enumerate() {
                            adjoint_expr.propagate(elem, quote!(#adjoint[#k]));
                        }
                    }
                }
                adjoint_expr.finish()
            }
            _ => {
                let (pops, kept) = self.pop_kept(init);
                let mut adjoint_expr = ExprAdjoint::new(self).with_kept(kept);
                adjoint_expr.propagate(init, quote!(#adjoint));
                let propagate = adjoint_expr.finish();
                quote!(#pops #propagate)
            }
        }
    }

    /// The reverse of a call: the callee's adjoint at the mirrored point,
    /// with the arguments it was called with and the sinks of the
    /// arguments' adjoints.
    pub(crate) fn rev_call(&self, call: &crate::ir::Call, adjoint: TokenStream) -> TokenStream {
        let (s, a) = (&self.scalar, &self.cotangent);
        let adj = self.callee(&call.path, "__adj");
        let values = self.call_arg_values(call, Side::Adjoint);
        let stack = names::stack();
        let mut before = Vec::new();
        let mut sinks = Vec::new();
        let mut after = ExprAdjoint::new(self);
        // The buffers whose adjoints an argument borrows for the call.
        let mut lent: Vec<VarId> = Vec::new();
        for (i, arg) in call.args.iter().enumerate() {
            match arg {
                crate::ir::CallArg::Value(value) if self.is_active(value) => {
                    // The argument's adjoint, then propagated into its
                    // expression.
                    let local = format_ident!("__deltad_arg{}", i, span = Span::mixed_site());
                    let zero = self.zero();
                    before.push(quote!(let mut #local: #a = #zero;));
                    sinks.push(quote!(&mut #local));
                    after.propagate(value, quote!(#local));
                }
                // A buffer passed again (`dot(x, x)`): the callee adds into
                // a buffer of its own for this argument, added into the
                // buffer's adjoint after the call (the first argument
                // borrows that adjoint for the call).
                crate::ir::CallArg::Buffer(buffer)
                    if self.active(buffer.var) && lent.contains(&buffer.var) =>
                {
                    let local = format_ident!("__deltad_arg{}", i, span = Span::mixed_site());
                    let start = format_ident!("__deltad_start{}", i, span = Span::mixed_site());
                    let (from, to) =
                        self.bounds(buffer, Side::Adjoint, &mut |e| self.value(e, Side::Adjoint));
                    before.push(quote! {
                        let #start: usize = #from;
                        let mut #local: ::std::vec::Vec<#a> =
                            <#a as ::deltad::__private::Cotangent<#s>>::zeros_on(&mut *#stack, #to - #start);
                    });
                    sinks.push(quote!(&mut #local[..]));
                    let add = self.add_adjoints(buffer.var, Some(&start), &local);
                    after.push(quote! {
                        #add
                        <#a as ::deltad::__private::Cotangent<#s>>::give_back(&mut *#stack, #local);
                    });
                }
                crate::ir::CallArg::Buffer(buffer) if self.active(buffer.var) => {
                    lent.push(buffer.var);
                    sinks.push(self.buffer_sink(buffer));
                }
                // A local built by a literal: the callee adds into an
                // adjoint twin of its own, whose leaves then go to the
                // fields' variables.
                crate::ir::CallArg::Literal { value, leaves, .. }
                    if leaves.iter().any(|leaf| self.is_active(leaf)) =>
                {
                    let local = format_ident!("__deltad_arg{}", i, span = Span::mixed_site());
                    let twin = self.twin_of_literal(value);
                    let ty = &value.path;
                    before.push(quote! {
                        let mut #local = ::deltad::__private::twin_zeros_like::<#s, #a, #ty>(&#twin);
                    });
                    sinks.push(quote!(&mut #local));
                    for ((members, _), leaf) in value.leaves().into_iter().zip(leaves) {
                        if self.is_active(leaf) {
                            after.propagate(
                                leaf,
                                quote!(::deltad::__private::RealLeaf::<#a>::adjoint(&#local #(.#members)*)),
                            );
                        }
                    }
                }
                // A value of a user type passed whole: the callee adds into
                // this function's own sink (a parameter's) or adjoint twin.
                crate::ir::CallArg::Struct { var, index, .. } if self.active(*var) => {
                    match self.function.vars[*var].origin {
                        // An element of a buffer parameter.
                        Origin::Param(param) if index.is_some() => {
                            let sink = sink(param);
                            let at =
                                self.value(index.as_deref().expect("an element"), Side::Adjoint);
                            sinks.push(quote!(::deltad::__private::SinkAt(&mut #sink, #at)));
                        }
                        Origin::Param(index) => {
                            let sink = sink(index);
                            sinks.push(quote!(::deltad::__private::SinkRef(&mut #sink)));
                        }
                        _ => {
                            let adjoint = self.adjoint(*var);
                            sinks.push(quote!(&mut #adjoint));
                        }
                    }
                }
                _ => sinks.push(quote!(::deltad::__private::Discard::<#a>::new())),
            }
        }
        let after = after.finish();
        // A checkpointed call's forward pass kept nothing: it runs again,
        // keeping its values, right before its adjoint.
        let rerun = call.checkpoint.then(|| {
            let fwd = self.callee(&call.path, "__fwd");
            let args = self.call_args(call, Side::Adjoint);
            quote!(let _ = #fwd(&mut *#stack, #(#args),*);)
        });
        // (Closures take their captures' sinks.)
        let (args, sinks) = self.callee_args(call, &values, Side::Adjoint, Some(&sinks));
        quote! {
            {
                #(#before)*
                #rerun
                #adj(&mut *#stack, #(#args,)* #adjoint, #(#sinks),*);
                #after
            }
        }
    }

    /// The sink of a differentiated buffer reference's adjoints.
    pub(crate) fn buffer_sink(&self, buffer: &crate::ir::BufferRef) -> TokenStream {
        let adjoint = self.adjoint(buffer.var);
        let (start, end) =
            self.bounds(buffer, Side::Adjoint, &mut |e| self.value(e, Side::Adjoint));
        if self.is_param(buffer.var) {
            quote!(::deltad::__private::SliceSink::part(&mut #adjoint, #start, #end))
        } else {
            quote!(&mut #adjoint[#start..#end])
        }
    }

    fn rev_assign(
        &self,
        stmt: crate::ir::StmtId,
        place: &Place,
        op: AssignOp,
        value: &crate::ir::Expr,
        first: bool,
    ) -> TokenStream {
        let plan = &self.analysis.plan;
        let var = place.var();
        let name = self.name(var);
        let at = format_ident!("__deltad_at", span = Span::mixed_site());
        let (target, target_adjoint, index) = match place {
            Place::Var(_) => {
                let adjoint = self.adjoint(var);
                (quote!(#name), quote!(#adjoint), None)
            }
            Place::Elem(_, index) => {
                // (Through the loop's views of the values or the adjoints,
                // where it takes them.)
                let value_at = self.view_index(var, index, false).unwrap_or(quote!(#at));
                let adjoint_at = self.view_index(var, index, true).unwrap_or(quote!(#at));
                let index = self.value(index, Side::Adjoint);
                let adjoint = self.adjoint(var);
                let element_adjoint = if self.is_param(var) {
                    quote!((*::deltad::__private::SliceSink::at(&mut #adjoint, #adjoint_at)))
                } else {
                    quote!(#adjoint[#adjoint_at])
                };
                (quote!(#name[#value_at]), element_adjoint, Some(index))
            }
        };
        // Put the old value back first: the partials read it.
        let restore = if plan.inverted[stmt] && !first {
            match op {
                // `x = -x`.
                AssignOp::Set => quote!(#target = -#target;),
                AssignOp::Add => {
                    let value = self.value(value, Side::Adjoint);
                    quote!(#target -= #value;)
                }
                _ => {
                    let value = self.value(value, Side::Adjoint);
                    quote!(#target += #value;)
                }
            }
        } else if plan.saves[stmt] {
            if self.active(var) {
                let pop = self.pop_real();
                quote!(#target = #pop;)
            } else {
                let ty = if self.is_buffer(var) {
                    let prim = &self.prim;
                    quote!(#prim)
                } else {
                    self.plain_type(var)
                };
                let pop = self.pop_bits(ty);
                quote!(#target = #pop;)
            }
        } else {
            TokenStream::new()
        };
        let propagate = if self.useful(var) {
            let (s, a) = (&self.scalar, &self.cotangent);
            let t = format_ident!("__deltad_t", span = Span::mixed_site());
            // The partials kept for the value, popped after the restore.
            let (pops, kept) = match op {
                AssignOp::Set | AssignOp::Add | AssignOp::Sub => self.pop_kept(value),
                _ => Default::default(),
            };
            let mut adjoint_expr = ExprAdjoint::new(self).with_kept(kept);
            let (take, propagate) = match op {
                AssignOp::Set => {
                    let zero = self.zero();
                    adjoint_expr.propagate(value, quote!(#t));
                    // (Not where nothing reads the element's adjoint
                    // again: `resets.rs`.)
                    let reset = (!plan.no_reset[stmt]).then(|| quote!(#target_adjoint = #zero;));
                    (
                        quote!(let #t: #a = #target_adjoint; #reset),
                        adjoint_expr.finish(),
                    )
                }
                AssignOp::Add => {
                    adjoint_expr.propagate(value, quote!(#t));
                    (quote!(let #t: #a = #target_adjoint;), adjoint_expr.finish())
                }
                AssignOp::Sub => {
                    adjoint_expr.propagate(value, quote!((-#t)));
                    (quote!(let #t: #a = #target_adjoint;), adjoint_expr.finish())
                }
                AssignOp::Mul | AssignOp::Div | AssignOp::Rem => {
                    // target = old ∘ value: the target's adjoint is scaled
                    // by ∂/∂old, the value's gets ∂/∂value.
                    let old = format_ident!("__deltad_old", span = Span::mixed_site());
                    let w = adjoint_expr.scalar_value_of(value);
                    let (d_old, d_value) = (
                        format_ident!("__deltad_d_old", span = Span::mixed_site()),
                        format_ident!("__deltad_d_value", span = Span::mixed_site()),
                    );
                    let rule = match op {
                        AssignOp::Mul => quote!((#w, #old)),
                        AssignOp::Div => quote! {{
                            let __deltad_inverse = <#s as ::deltad::__private::Scalar>::one() / #w;
                            (__deltad_inverse, -((#old / #w) * __deltad_inverse))
                        }},
                        _ => quote! {{
                            let (_, __deltad_a, __deltad_b) = ::deltad::__private::multi_rules::rem(#old, #w);
                            (__deltad_a, __deltad_b)
                        }},
                    };
                    adjoint_expr.push(quote!(let (#d_old, #d_value): (#s, #s) = #rule;));
                    adjoint_expr.push(quote!(#target_adjoint = #t * #d_old;));
                    adjoint_expr.propagate(value, quote!((#t * #d_value)));
                    let old_value = if self.active(var) {
                        quote!(#target)
                    } else {
                        self.lift(quote!(#target))
                    };
                    (
                        quote!(let #t: #a = #target_adjoint; let #old: #s = #old_value;),
                        adjoint_expr.finish(),
                    )
                }
            };
            quote!(#pops #take #propagate)
        } else {
            TokenStream::new()
        };
        let index = index.map(|index| quote!(let #at: usize = #index;));
        quote!({ #index #restore #propagate })
    }
}

/// The local holding where block `id` was left.
fn code_local(id: crate::ir::BlockId) -> syn::Ident {
    format_ident!("__deltad_code{}", id, span = Span::mixed_site())
}
