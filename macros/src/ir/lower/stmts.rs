//! Statements: `let`, assignments, control flow, macros, and values
//! assigned through control flow (`value_into`).

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::Expr as SynExpr;

use super::{Lowered, Lowerer, Unsupported};
use crate::ir::{
    AssignOp, Block, Effect, EffectArg, Expr, ExprKind, Origin, Place, StmtKind, Var, VarId,
    VarKind,
};

impl Lowerer {
    /// Lowers one statement of a block into `out`; a tail expression's
    /// value goes to `target`.
    pub(super) fn stmt_into(
        &mut self,
        stmt: &syn::Stmt,
        rest: &[syn::Stmt],
        target: Option<VarId>,
        out: &mut Block,
    ) -> Lowered<()> {
        let tail = rest.is_empty();
        match stmt {
            syn::Stmt::Local(local) => self.local(local, rest, &mut out.stmts),
            syn::Stmt::Item(item) => {
                out.items.push(item.clone());
                Ok(())
            }
            syn::Stmt::Expr(expr, None) if tail => match target {
                Some(target) => self.value_into(expr, target, &mut out.stmts),
                None => self.expr_stmt(expr, &mut out.stmts),
            },
            syn::Stmt::Expr(expr, _) => self.expr_stmt(expr, &mut out.stmts),
            syn::Stmt::Macro(mac) => {
                if tail && mac.semi_token.is_none() && target.is_some() {
                    return Err(Unsupported::new(
                        mac.span(),
                        "a macro as the value of a block is not on the compiled path yet",
                    ));
                }
                self.macro_stmt(&mac.mac, &mut out.stmts)
            }
        }
    }

    fn local(
        &mut self,
        local: &syn::Local,
        rest: &[syn::Stmt],
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        let span = local.span();
        if let Some(attr) = local
            .attrs
            .iter()
            .find(|a| a.path().is_ident(crate::syntax::CHECKPOINT))
        {
            return self.checkpointed_call(local, attr, rest, out);
        }
        if let Some(init) = &local.init {
            if init.diverge.is_some() {
                return Err(Unsupported::new(
                    span,
                    "`let .. else` is not on the compiled path yet",
                ));
            }
        }
        let Some(init) = &local.init else {
            return Err(Unsupported::new(
                span,
                "a `let` without a value is not on the compiled path yet: give the variable its value where it is declared",
            ));
        };
        let init = &*init.expr;
        let (pat, annotation) = match &local.pat {
            syn::Pat::Type(typed) => (&*typed.pat, Some((*typed.ty).clone())),
            other => (other, None),
        };
        match pat {
            syn::Pat::Ident(ident) if ident.by_ref.is_none() && ident.subpat.is_none() => {
                let mutable = ident.mutability.is_some();
                // `let mut v = Vec::new();` that a loop pushes into.
                if mutable && self.let_pushed(ident, annotation.as_ref(), init, rest)? {
                    return Ok(());
                }
                if let SynExpr::Struct(literal) = strip(init) {
                    if literal.qself.is_none() {
                        return self
                            .let_struct_literal(&ident.ident, mutable, literal, out)
                            .map(drop);
                    }
                }
                if let Some(paths) = self.struct_call_fields(&ident.ident, init, rest) {
                    return self.let_struct_call(&ident.ident, mutable, init, paths, out);
                }
                if let Some(source) = self.literal_named(init) {
                    return self
                        .let_struct_copy(&ident.ident, mutable, source, init.span(), out)
                        .map(drop);
                }
                // `let p = &ps[i];` of a buffer of a user type, `i` a variable
                // nothing assigns again: a name for the element.
                if !mutable {
                    if let Some((buffer, index)) = self.element_named(init, out)? {
                        self.bind_element(&ident.ident, buffer, index);
                        return Ok(());
                    }
                }
                // `let q = p;` / `let q = *p;` of a parameter of a user type:
                // the same value, under another name.
                if let Some(var) = self.struct_alias(init) {
                    if !mutable {
                        self.bind(&ident.ident, var);
                        return Ok(());
                    }
                }
                if let Some(target) = self.borrowed_real(init) {
                    if !mutable && annotation.is_none() {
                        return self.let_borrowed(&ident.ident, target, out);
                    }
                }
                // `<chain>.collect()` into a `Vec` of reals.
                if self
                    .let_collect(&ident.ident, annotation.as_ref(), init, out)?
                    .is_some()
                {
                    return Ok(());
                }
                // Annotated `Vec<f64>` / `[f64; N]`, or a buffer by its value's
                // form or its uses.
                let annotated_buffer = annotation
                    .as_ref()
                    .is_some_and(crate::types::is_real_buffer_type);
                if annotated_buffer || self.is_buffer_value(&ident.ident, init, rest)? {
                    return self.let_buffer(&ident.ident, mutable, annotation, init, out);
                }
                self.let_ident(&ident.ident, mutable, annotation, init, out)
            }
            syn::Pat::Wild(_) => {
                // `let _ = e;`: evaluated for its effects.
                self.expr_stmt(init, out)
            }
            syn::Pat::Tuple(tuple) => self.let_tuple(tuple, annotation, init, out),
            other => self.let_pattern(other, annotation, init, out),
        }
    }

    /// The element `x[i]` in `&x[i]`, of a buffer of reals.
    fn borrowed_real<'e>(&self, init: &'e SynExpr) -> Option<&'e SynExpr> {
        let SynExpr::Reference(reference) = strip(init) else {
            return None;
        };
        let SynExpr::Index(index) = strip(&reference.expr) else {
            return None;
        };
        if crate::syntax::is_range(&index.index) {
            return None;
        }
        let SynExpr::Path(buffer) = strip(&index.expr) else {
            return None;
        };
        let var = self.resolve_path(&buffer.path)?;
        (reference.mutability.is_none() && self.vars[var].kind == VarKind::Buffer)
            .then_some(&*reference.expr)
    }

    /// `let r = &x[i];`: the borrow checker keeps `x[i]` unchanged while `r`
    /// lives, so `r` is the element's value, and `*r` is `r`.
    fn let_borrowed(
        &mut self,
        name: &syn::Ident,
        target: &SynExpr,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        self.let_ident(name, false, None, target, out)?;
        if let Some(var) = self.resolve(name) {
            self.by_ref.insert(var);
        }
        Ok(())
    }

    fn let_ident(
        &mut self,
        name: &syn::Ident,
        mutable: bool,
        annotation: Option<syn::Type>,
        init: &SynExpr,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        let span = name.span();
        if let SynExpr::Closure(closure) = strip(init) {
            if mutable || annotation.is_some() {
                return Err(Unsupported::new(
                    span,
                    "a `mut` or annotated closure variable is not on the compiled path yet",
                ));
            }
            return self.define_closure(name, closure, out);
        }
        let readers = self.alias_hidden_captures(name, out);
        let buffer = self.new_buffer(init)?;
        let array =
            buffer.is_some() && matches!(strip(init), SynExpr::Repeat(_) | SynExpr::Array(_));
        let kind = if buffer.is_some() {
            VarKind::Buffer
        } else {
            VarKind::Scalar
        };
        let value = match buffer {
            Some(new) => Expr::new(ExprKind::NewBuffer(new), init.span()),
            None => self.value(init, out)?,
        };
        let local = Local {
            mutable,
            kind,
            array,
            annotation,
        };
        self.let_local(name, local, value, span, out);
        if let Some(var) = self.resolve(name) {
            self.aliases_hidden_by(&readers, var);
        }
        Ok(())
    }

    /// `#[checkpoint] let name = f(..);`: a call of a differentiated
    /// function, its value a real (or a buffer).
    fn checkpointed_call(
        &mut self,
        local: &syn::Local,
        attr: &syn::Attribute,
        rest: &[syn::Stmt],
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        let not_a_call = || {
            Unsupported::new(
                attr.span(),
                "#[checkpoint] on a `let` checkpoints the call of a `#[differentiate]` function it binds (`let y = f(..);`)",
            )
        };
        let (Some(init), syn::Pat::Ident(ident)) = (&local.init, &local.pat) else {
            return Err(not_a_call());
        };
        let SynExpr::Call(call) = strip(&init.expr) else {
            return Err(not_a_call());
        };
        if ident.by_ref.is_some() || ident.subpat.is_some() || init.diverge.is_some() {
            return Err(not_a_call());
        }
        let Some(mut lowered) = self.user_call(call, out)? else {
            return Err(not_a_call());
        };
        lowered.checkpoint = true;
        let buffer = self.is_buffer_value(&ident.ident, &init.expr, rest)?;
        let variable = Local {
            mutable: ident.mutability.is_some(),
            kind: if buffer {
                VarKind::Buffer
            } else {
                VarKind::Scalar
            },
            array: false,
            annotation: None,
        };
        let value = Expr::new(ExprKind::Call(lowered), init.expr.span());
        self.let_local(&ident.ident, variable, value, local.span(), out);
        Ok(())
    }

    /// `let name = init;` where `init` is a whole buffer (`buffers.rs`).
    fn let_buffer(
        &mut self,
        name: &syn::Ident,
        mutable: bool,
        annotation: Option<syn::Type>,
        init: &SynExpr,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        let value = self.buffer_value(init, out)?;
        let array = match &value.kind {
            // (`.to_vec()` of an array is a `Vec`.)
            ExprKind::Var(_) if super::buffers::is_to_vec(init) => false,
            ExprKind::Var(source) => self.vars[*source].array,
            ExprKind::NewBuffer(_) => {
                matches!(strip(init), SynExpr::Repeat(_) | SynExpr::Array(_))
            }
            _ => matches!(annotation, Some(syn::Type::Array(_))),
        };
        let local = Local {
            mutable,
            kind: VarKind::Buffer,
            array,
            annotation,
        };
        self.let_local(name, local, value, name.span(), out);
        Ok(())
    }

    /// `let (a, b) = (x, y);` and `let (s, c) = x.sin_cos();`.
    fn let_tuple(
        &mut self,
        pattern: &syn::PatTuple,
        annotation: Option<syn::Type>,
        init: &SynExpr,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        // Other tuples (nested patterns, a tuple value that is not written
        // out) can only be plain values taken apart.
        let mut other = || {
            self.let_pattern(
                &syn::Pat::Tuple(pattern.clone()),
                annotation.clone(),
                init,
                out,
            )
        };
        let mut names = Vec::new();
        for elem in &pattern.elems {
            match elem {
                syn::Pat::Ident(ident) if ident.by_ref.is_none() && ident.subpat.is_none() => {
                    names.push(Some((ident.ident.clone(), ident.mutability.is_some())))
                }
                syn::Pat::Wild(_) => names.push(None),
                _ => return other(),
            }
        }
        // The values, each into a temporary first: a part may name a
        // variable the pattern shadows.
        let values: Vec<Expr> = match strip(init) {
            SynExpr::Tuple(tuple) if tuple.elems.len() == names.len() => {
                self.lower_into_temps(&tuple.elems, out)?
            }
            SynExpr::MethodCall(call)
                if call.method == "sin_cos" && call.args.is_empty() && names.len() == 2 =>
            {
                let receiver = self.expr(&call.receiver, out)?;
                let temp = self.temp(call.receiver.span());
                out.push(self.stmt(
                    call.span(),
                    StmtKind::Let {
                        var: temp,
                        init: Some(receiver),
                    },
                ));
                ["sin", "cos"]
                    .iter()
                    .map(|name| {
                        let math = crate::ir::Math::named(name).expect("sin and cos are math");
                        Expr::new(
                            ExprKind::Math {
                                math,
                                args: vec![Expr::new(ExprKind::Var(temp), call.span())],
                                path_style: None,
                            },
                            call.span(),
                        )
                    })
                    .collect()
            }
            _ => return other(),
        };
        for (name, value) in names.into_iter().zip(values) {
            let Some((name, mutable)) = name else {
                continue;
            };
            self.let_scalar(&name, mutable, value, out);
        }
        Ok(())
    }

    /// `let [mut] name = value;` of a new scalar local, bound to `name`.
    pub(super) fn let_scalar(
        &mut self,
        name: &syn::Ident,
        mutable: bool,
        value: Expr,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> VarId {
        let local = Local {
            mutable,
            kind: VarKind::Scalar,
            array: false,
            annotation: None,
        };
        self.let_local(name, local, value, name.span(), out)
    }

    /// A new local variable `name`, its `let` with `value` (at `span`)
    /// pushed and its name bound.
    fn let_local(
        &mut self,
        name: &syn::Ident,
        local: Local,
        value: Expr,
        span: proc_macro2::Span,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> VarId {
        let var = self.new_var(Var {
            name: name.clone(),
            mutable: local.mutable,
            origin: Origin::Local,
            kind: local.kind,
            array: local.array,
            annotation: local.annotation,
            span: name.span(),
        });
        if local.kind == VarKind::Scalar && self.evidently_real(&value) {
            self.reals.insert(var);
        }
        out.push(self.stmt(
            span,
            StmtKind::Let {
                var,
                init: Some(value),
            },
        ));
        self.bind(name, var);
        var
    }

    /// Lowers `expr`, whose value goes to `target` (on every path that does
    /// not leave early): branches assign their tails, other expressions
    /// are one assignment.
    pub(super) fn value_into(
        &mut self,
        expr: &SynExpr,
        target: VarId,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        let span = expr.span();
        match expr {
            SynExpr::Paren(paren) => self.value_into(&paren.expr, target, out),
            SynExpr::Group(group) => self.value_into(&group.expr, target, out),
            SynExpr::If(_) | SynExpr::Match(_) | SynExpr::Block(_) | SynExpr::Loop(_) => {
                self.control_flow(expr, Some(target), out)
            }
            SynExpr::Return(_) | SynExpr::Break(_) | SynExpr::Continue(_) => {
                self.expr_stmt(expr, out)
            }
            SynExpr::Macro(mac) if is_diverging(&mac.mac) => self.macro_stmt(&mac.mac, out),
            _ if self.kind(target) == VarKind::Struct => self.struct_into(target, expr, out),
            _ => {
                let value = if self.kind(target) == VarKind::Buffer {
                    self.buffer_value(expr, out)?
                } else {
                    self.expr(expr, out)?
                };
                out.push(self.stmt(
                    span,
                    StmtKind::Assign {
                        place: Place::Var(target),
                        op: AssignOp::Set,
                        value,
                        first: true,
                    },
                ));
                Ok(())
            }
        }
    }

    /// An expression evaluated as a statement.
    pub(super) fn expr_stmt(
        &mut self,
        expr: &SynExpr,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        let span = expr.span();
        if let Some(pushed) = self.push_stmt(expr, out) {
            return pushed;
        }
        match expr {
            SynExpr::Paren(paren) => self.expr_stmt(&paren.expr, out),
            SynExpr::Group(group) => self.expr_stmt(&group.expr, out),
            SynExpr::Assign(assign) => {
                self.assign(&assign.left, AssignOp::Set, &assign.right, span, out)
            }
            SynExpr::Binary(binary) => match compound_op(&binary.op) {
                Some(op) => self.assign(&binary.left, op, &binary.right, span, out),
                None => self.discard(expr, out),
            },
            SynExpr::If(_) | SynExpr::Match(_) | SynExpr::Block(_) | SynExpr::Loop(_) => {
                self.control_flow(expr, None, out)
            }
            SynExpr::ForLoop(for_loop) => self.for_loop(for_loop, out),
            SynExpr::While(while_loop) => self.while_loop(while_loop, out),
            SynExpr::Break(brk) => {
                let frame = self.loop_target(brk.label.as_ref(), span)?;
                let (target, loop_target) = (frame.id, frame.target);
                if let Some(value) = &brk.expr {
                    let Some(loop_target) = loop_target else {
                        return Err(Unsupported::new(
                            span,
                            "`break` with a value out of a loop whose value is not used",
                        ));
                    };
                    self.value_into(value, loop_target, out)?;
                }
                out.push(self.stmt(span, StmtKind::Break { target }));
                Ok(())
            }
            SynExpr::Continue(cont) => {
                let target = self.loop_target(cont.label.as_ref(), span)?.id;
                out.push(self.stmt(span, StmtKind::Continue { target }));
                Ok(())
            }
            SynExpr::Return(ret) => {
                let Some(value) = &ret.expr else {
                    return Err(Unsupported::new(
                        span,
                        "`return` without a value in a function with a result",
                    ));
                };
                let result = self.result_var();
                self.value_into(value, result, out)?;
                out.push(self.stmt(span, StmtKind::Return));
                Ok(())
            }
            SynExpr::Macro(mac) => self.macro_stmt(&mac.mac, out),
            _ => self.discard(expr, out),
        }
    }

    fn result_var(&self) -> VarId {
        self.vars
            .iter()
            .position(|var| var.origin == Origin::Result)
            .expect("the result variable exists before the body is lowered")
    }

    /// An expression whose value is dropped: only the calls it makes
    /// (hoisted into `out`) remain.
    fn discard(&mut self, expr: &SynExpr, out: &mut Vec<crate::ir::Stmt>) -> Lowered<()> {
        self.expr(expr, out).map(drop)
    }

    fn assign(
        &mut self,
        left: &SynExpr,
        op: AssignOp,
        right: &SynExpr,
        span: Span,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        let place = self.place(left, out)?;
        let var = place.var();
        if self.kind(var) == VarKind::Struct {
            return match (strip(right), op) {
                (SynExpr::Struct(literal), AssignOp::Set)
                    if literal.qself.is_none() && self.vars[var].mutable =>
                {
                    self.assign_struct_literal(var, literal, out)
                }
                (value, AssignOp::Set) if self.vars[var].mutable && self.is_literal(var) => {
                    match self.literal_named(value) {
                        Some(source) => self.assign_struct_copy(var, source, span, out),
                        None => Err(super::structs::whole_value(span)),
                    }
                }
                _ => Err(super::structs::whole_value(span)),
            };
        }
        if !self.vars[var].mutable && self.vars[var].origin != Origin::Temp {
            // rustc rejects this in the function itself; nothing to lower.
            return Err(Unsupported::new(
                left.span(),
                "assignment to an immutable variable",
            ));
        }
        if matches!(place, Place::Var(_)) && self.kind(var) == VarKind::Buffer {
            if op != AssignOp::Set {
                return Err(Unsupported::new(
                    span,
                    "a compound assignment to a whole buffer is not on the compiled path yet: update its elements",
                ));
            }
            let value = self.buffer_value(right, out)?;
            out.push(self.stmt(
                span,
                StmtKind::Assign {
                    place,
                    op,
                    value,
                    first: false,
                },
            ));
            return Ok(());
        }
        let value = self.value(right, out)?;
        out.push(self.stmt(
            span,
            StmtKind::Assign {
                place,
                op,
                value,
                first: false,
            },
        ));
        Ok(())
    }

    /// The value of `expr` as one IR expression: control flow (`if`,
    /// `match`, blocks) goes through a temporary assigned on every path.
    pub(super) fn value(
        &mut self,
        expr: &SynExpr,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<Expr> {
        if !is_control_flow(expr) {
            return self.expr(expr, out);
        }
        let temp = self.temp(expr.span());
        out.push(self.stmt(
            expr.span(),
            StmtKind::Let {
                var: temp,
                init: None,
            },
        ));
        self.value_into(expr, temp, out)?;
        Ok(Expr::new(ExprKind::Var(temp), expr.span()))
    }

    fn place(&mut self, expr: &SynExpr, out: &mut Vec<crate::ir::Stmt>) -> Lowered<Place> {
        match expr {
            SynExpr::Paren(paren) => self.place(&paren.expr, out),
            SynExpr::Path(path) if path.qself.is_none() => match self.resolve_path(&path.path) {
                Some(var) => Ok(Place::Var(var)),
                None => Err(Unsupported::new(
                    expr.span(),
                    "assignment to something that is not a local variable",
                )),
            },
            SynExpr::Index(index) => {
                let base = match strip(&index.expr) {
                    SynExpr::Path(path) if path.qself.is_none() => self.resolve_path(&path.path),
                    _ => None,
                };
                match base {
                    Some(var) if self.kind(var) == VarKind::Buffer => {
                        if crate::syntax::is_range(&index.index) {
                            return Err(Unsupported::new(
                                index.index.span(),
                                "assigning a range of a buffer is not on the compiled path yet",
                            ));
                        }
                        let at = self.expr(&index.index, out)?;
                        Ok(Place::Elem(var, Box::new(at)))
                    }
                    _ => Err(Unsupported::new(
                        expr.span(),
                        "assignment into this container is not on the compiled path yet (only elements of slices, `Vec`s and arrays of reals)",
                    )),
                }
            }
            SynExpr::Field(_) => match self.field_chain(expr) {
                Some((base, members)) if self.is_literal(base) => {
                    Ok(Place::Var(self.field(base, members, expr.span(), out)?))
                }
                _ => Err(Unsupported::new(
                    expr.span(),
                    "assignment to a field is on the compiled path only for locals built by a struct literal",
                )),
            },
            _ => Err(Unsupported::new(
                expr.span(),
                "assignment to this place is not on the compiled path yet",
            )),
        }
    }

    /// `if`, `match`, blocks and `loop`, as statements; with `target`, the
    /// value of every branch is assigned to it.
    pub(super) fn control_flow(
        &mut self,
        expr: &SynExpr,
        target: Option<VarId>,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        let span = expr.span();
        match expr {
            SynExpr::If(if_expr) => {
                if let SynExpr::Let(_) = &*if_expr.cond {
                    return Err(Unsupported::new(
                        if_expr.cond.span(),
                        "`if let` is not on the compiled path yet",
                    ));
                }
                let cond = self.condition(&if_expr.cond, out)?;
                let then = self.block_into(&if_expr.then_branch, target)?;
                let els = match &if_expr.else_branch {
                    Some((_, els)) => {
                        let mut block = self.new_block();
                        self.with_scope(|this| match &**els {
                            SynExpr::Block(b) if b.label.is_none() => {
                                block = this.block_into(&b.block, target)?;
                                Ok(())
                            }
                            other => match target {
                                Some(target) => this.value_into(other, target, &mut block.stmts),
                                None => this.expr_stmt(other, &mut block.stmts),
                            },
                        })?;
                        Some(block)
                    }
                    None if target.is_some() => {
                        return Err(Unsupported::new(
                            span,
                            "an `if` without `else` has no value",
                        ))
                    }
                    None => None,
                };
                out.push(self.stmt(span, StmtKind::If { cond, then, els }));
                Ok(())
            }
            SynExpr::Match(match_expr) => self.match_stmt(match_expr, target, out),
            SynExpr::Block(block) => {
                if block.label.is_some() {
                    return Err(Unsupported::new(
                        span,
                        "labeled blocks are not on the compiled path yet",
                    ));
                }
                let block = self.block_into(&block.block, target)?;
                out.push(self.stmt(span, StmtKind::Block(block)));
                Ok(())
            }
            SynExpr::Loop(loop_expr) => self.loop_stmt(loop_expr, target, out),
            _ => unreachable!("control_flow is called on control flow"),
        }
    }

    /// A condition (of `if`, `while`, a guard): a plain expression, with
    /// nothing hoisted out of it unless `out` may receive statements.
    pub(super) fn condition(
        &mut self,
        cond: &SynExpr,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<Expr> {
        self.expr(cond, out)
    }

    fn match_stmt(
        &mut self,
        match_expr: &syn::ExprMatch,
        target: Option<VarId>,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        let span = match_expr.span();
        let scrutinee = self.expr(&match_expr.expr, out)?;
        let mut arms = Vec::new();
        for arm in &match_expr.arms {
            let lowered = self.with_scope(|this| {
                let vars = this.bind_pattern(&arm.pat)?;
                let guard = match &arm.guard {
                    Some((_, guard)) => {
                        let mut hoisted = Vec::new();
                        let guard = this.condition(guard, &mut hoisted)?;
                        if !hoisted.is_empty() {
                            return Err(Unsupported::new(
                                arm.guard.as_ref().map_or(span, |(_, g)| g.span()),
                                "calls and control flow in a `match` guard are not on the compiled path yet",
                            ));
                        }
                        Some(guard)
                    }
                    None => None,
                };
                let mut body = this.new_block();
                match &*arm.body {
                    SynExpr::Block(block) if block.label.is_none() => {
                        body = this.block_into(&block.block, target)?;
                    }
                    other => match target {
                        Some(target) => this.value_into(other, target, &mut body.stmts)?,
                        None => this.expr_stmt(other, &mut body.stmts)?,
                    },
                }
                Ok(crate::ir::Arm {
                    pat: arm.pat.clone(),
                    vars,
                    guard,
                    body,
                })
            })?;
            arms.push(lowered);
        }
        out.push(self.stmt(span, StmtKind::Match { scrutinee, arms }));
        Ok(())
    }

    /// Binds the names a `match` pattern introduces (plain values).
    fn bind_pattern(&mut self, pat: &syn::Pat) -> Lowered<Vec<VarId>> {
        struct Names(Vec<(syn::Ident, bool)>, Option<Span>);
        impl<'ast> syn::visit::Visit<'ast> for Names {
            fn visit_pat_ident(&mut self, pat: &'ast syn::PatIdent) {
                if pat.by_ref.is_some() {
                    self.1 = Some(pat.span());
                }
                self.0.push((pat.ident.clone(), pat.mutability.is_some()));
                syn::visit::visit_pat_ident(self, pat);
            }
        }
        let mut names = Names(Vec::new(), None);
        syn::visit::Visit::visit_pat(&mut names, pat);
        if let Some(span) = names.1 {
            return Err(Unsupported::new(
                span,
                "`ref` bindings are not on the compiled path yet",
            ));
        }
        let mut vars = Vec::new();
        for (name, mutable) in names.0 {
            // A single uppercase-initial identifier is a unit variant or a
            // constant, not a binding: leave it to rustc.
            if name
                .to_string()
                .starts_with(|c: char| c.is_ascii_uppercase())
            {
                continue;
            }
            let var = self.new_var(Var {
                name: name.clone(),
                mutable,
                origin: Origin::Pattern,
                kind: VarKind::Scalar,
                array: false,
                annotation: None,
                span: name.span(),
            });
            self.bind(&name, var);
            vars.push(var);
        }
        Ok(vars)
    }

    /// A macro in statement position: `vec!` makes no sense here; the
    /// formatting and assertion macros are effects of the forward pass.
    pub(super) fn macro_stmt(
        &mut self,
        mac: &syn::Macro,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        use crate::methods::MacroKind;
        let name = mac
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        let kind = crate::methods::macro_kind(&name);
        let mut captures = Vec::new();
        let args = match kind {
            Some(MacroKind::Exprs | MacroKind::Diverging) => {
                let parsed = mac
                    .parse_body_with(
                        syn::punctuated::Punctuated::<SynExpr, syn::Token![,]>::parse_terminated,
                    )
                    .map_err(|e| Unsupported::new(e.span(), e.to_string()))?;
                let mut args = Vec::new();
                for arg in parsed {
                    if let SynExpr::Lit(lit) = &arg {
                        // A name the format string reads inline is read as
                        // an argument would be (a buffer printed whole
                        // leaves the compiled path the same way).
                        if let syn::Lit::Str(format) = &lit.lit {
                            for name in format_captures(&format.value()) {
                                let name = syn::Ident::new(&name, format.span());
                                let mut hoisted = Vec::new();
                                captures.push(self.expr(&syn::parse_quote!(#name), &mut hoisted)?);
                            }
                        }
                        args.push(EffectArg::Tokens(quote::quote!(#lit)));
                        continue;
                    }
                    // Nothing is hoisted out of a macro: its arguments are
                    // evaluated only when it runs.
                    let mut hoisted = Vec::new();
                    let value = self.expr(&arg, &mut hoisted)?;
                    if !hoisted.is_empty() || value.has_call() {
                        return Err(Unsupported::new(
                            arg.span(),
                            "calls and control flow in macro arguments are not on the compiled path yet: compute the value in a `let` first",
                        ));
                    }
                    args.push(EffectArg::Expr(value));
                }
                args
            }
            Some(MacroKind::Opaque) => Vec::new(),
            _ => {
                return Err(Unsupported::new(
                    mac.span(),
                    format!("`{name}!` as a statement is not on the compiled path"),
                ))
            }
        };
        out.push(self.stmt(
            mac.span(),
            StmtKind::Effect(Effect {
                mac: mac.clone(),
                args,
                captures,
            }),
        ));
        Ok(())
    }
}

/// The names a format string reads inline: `{name}`, `{name:..}` and the
/// `name$` of a width or precision (`{{` is a brace, positions and empty
/// braces name nothing).
fn format_captures(format: &str) -> Vec<String> {
    let is_name = |s: &str| {
        s != "_"
            && s.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    let mut names = Vec::new();
    let mut rest = format;
    while let Some(open) = rest.find('{') {
        rest = &rest[open + 1..];
        if let Some(after) = rest.strip_prefix('{') {
            rest = after;
            continue;
        }
        let Some(close) = rest.find('}') else { break };
        let (argument, spec) = rest[..close]
            .split_once(':')
            .unwrap_or((&rest[..close], ""));
        let argument = argument.trim();
        if is_name(argument) {
            names.push(argument.to_string());
        }
        let parts: Vec<&str> = spec.split('$').collect();
        for part in &parts[..parts.len() - 1] {
            let name = part.trim_start_matches(|c: char| !(c.is_alphanumeric() || c == '_'));
            let name = &name[name
                .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
                .map_or(0, |at| at + 1)..];
            if is_name(name) {
                names.push(name.to_string());
            }
        }
        rest = &rest[close + 1..];
    }
    names
}

/// The compound assignment operator of `op`, if it is one.
fn compound_op(op: &syn::BinOp) -> Option<AssignOp> {
    Some(match op {
        syn::BinOp::AddAssign(_) => AssignOp::Add,
        syn::BinOp::SubAssign(_) => AssignOp::Sub,
        syn::BinOp::MulAssign(_) => AssignOp::Mul,
        syn::BinOp::DivAssign(_) => AssignOp::Div,
        syn::BinOp::RemAssign(_) => AssignOp::Rem,
        _ => return None,
    })
}

/// True for expressions that become statements when their value is used.
pub(super) fn is_control_flow(expr: &SynExpr) -> bool {
    match expr {
        SynExpr::If(_) | SynExpr::Match(_) | SynExpr::Loop(_) => true,
        SynExpr::Block(block) => block.label.is_none(),
        SynExpr::Paren(paren) => is_control_flow(&paren.expr),
        SynExpr::Group(group) => is_control_flow(&group.expr),
        _ => false,
    }
}

fn is_diverging(mac: &syn::Macro) -> bool {
    mac.path.segments.last().is_some_and(|s| {
        matches!(
            s.ident.to_string().as_str(),
            "panic" | "unreachable" | "todo" | "unimplemented"
        )
    })
}

/// `expr` without parentheses and invisible groups.
pub(super) fn strip(expr: &SynExpr) -> &SynExpr {
    match expr {
        SynExpr::Paren(paren) => strip(&paren.expr),
        SynExpr::Group(group) => strip(&group.expr),
        other => other,
    }
}

/// What a new local variable is (see `let_local`).
struct Local {
    mutable: bool,
    kind: VarKind,
    array: bool,
    annotation: Option<syn::Type>,
}

#[cfg(test)]
mod tests {
    #[test]
    fn format_strings_name_the_variables_they_capture() {
        assert_eq!(
            super::format_captures("{a} {b:?} {{c}} {} {0} {:>w$.p$} {d:0>width$}"),
            ["a", "b", "w", "p", "d", "width"]
        );
        assert!(super::format_captures("no {{braces}} here").is_empty());
    }
}
