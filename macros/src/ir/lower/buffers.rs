//! Values that are whole buffers: `vec![..]` and array literals, a buffer
//! variable (moved, `.clone()`d, `.to_vec()`d: its elements are copied), a call of a differentiated
//! function that returns a `Vec` or an array, and control flow whose
//! branches yield buffers. They are the values of buffer `let`s, of
//! assignments to whole buffer variables (`y = next;`), and of a function
//! whose result is a buffer.
//!
//! The macro does not know types, so which `let name = f(..);` makes a
//! buffer is read from how the block uses `name` after it: indexed
//! (`name[i]`), its length or elements asked for, passed by reference, put
//! into a buffer variable, or returned as a buffer result.

use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::Expr as SynExpr;

use super::stmts::strip;
use super::{Lowered, Lowerer, Unsupported};
use crate::ir::{Expr, ExprKind, Origin, StmtKind, Var, VarId, VarKind};

/// True for `x.to_vec()`, a `Vec` whatever `x` is.
pub(super) fn is_to_vec(expr: &SynExpr) -> bool {
    matches!(strip(expr), SynExpr::MethodCall(call) if call.method == "to_vec" && call.args.is_empty())
}

impl Lowerer {
    /// A new local `Vec` of reals named `name`, of type `ty`.
    pub(super) fn new_vec(&mut self, name: &syn::Ident, ty: syn::Type) -> VarId {
        self.new_var(Var {
            name: name.clone(),
            mutable: true,
            origin: Origin::Local,
            kind: VarKind::Buffer,
            array: false,
            annotation: Some(ty),
            span: name.span(),
        })
    }

    /// `let var = vec![0.0; len];`, at `span`.
    pub(super) fn let_zeros(
        &mut self,
        var: VarId,
        len: Expr,
        span: proc_macro2::Span,
        out: &mut Vec<crate::ir::Stmt>,
    ) {
        let zero = syn::LitFloat::new("0.0", span);
        let elem = Expr::new(ExprKind::Lit(syn::Lit::Float(zero)), span);
        let init = Expr::new(
            ExprKind::NewBuffer(crate::ir::NewBuffer::Repeat {
                elem: Box::new(elem),
                len: Box::new(len),
            }),
            span,
        );
        out.push(self.stmt(
            span,
            StmtKind::Let {
                var,
                init: Some(init),
            },
        ));
    }

    /// Lowers `expr`, a buffer value (see the module's docs).
    pub(super) fn buffer_value(
        &mut self,
        expr: &SynExpr,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<Expr> {
        let span = expr.span();
        if let Some(new) = self.new_buffer(expr)? {
            return Ok(Expr::new(ExprKind::NewBuffer(new), span));
        }
        match strip(expr) {
            SynExpr::Path(path) if path.qself.is_none() => {
                if let Some(var) = self.resolve_path(&path.path) {
                    if self.kind(var) == VarKind::Buffer {
                        return Ok(Expr::new(ExprKind::Var(var), span));
                    }
                }
            }
            SynExpr::MethodCall(call)
                if call.args.is_empty()
                    && matches!(
                        call.method.to_string().as_str(),
                        "clone" | "to_vec" | "to_owned"
                    ) =>
            {
                if let Some(var) = self.buffer_var(&call.receiver) {
                    return Ok(Expr::new(ExprKind::Var(var), span));
                }
            }
            SynExpr::Call(call) => {
                if let Some(crate::ir::FnArg::Param(var)) = self.function_param_arg(&call.func) {
                    let call = self.function_param_call(call, var, out)?;
                    return Ok(Expr::new(ExprKind::Call(call), span));
                }
                if let Some(call) = self.user_call(call, out)? {
                    return Ok(Expr::new(ExprKind::Call(call), span));
                }
            }
            SynExpr::Field(_) => {
                if let Some(call) = self.nested_call(expr, out)? {
                    return Ok(Expr::new(ExprKind::Call(call), span));
                }
            }
            other if super::stmts::is_control_flow(other) => {
                let temp = self.buffer_temp(span);
                out.push(self.stmt(
                    span,
                    StmtKind::Let {
                        var: temp,
                        init: None,
                    },
                ));
                self.value_into(other, temp, out)?;
                return Ok(Expr::new(ExprKind::Var(temp), span));
            }
            _ => {}
        }
        Err(Unsupported::new(
            span,
            "this buffer value is not on the compiled path yet (it takes `vec![..]`, array literals, buffer variables, `.clone()`, and calls of differentiated functions)",
        ))
    }

    /// The buffer variable `expr` names, if it names one.
    pub(super) fn buffer_var(&self, expr: &SynExpr) -> Option<crate::ir::VarId> {
        match strip(expr) {
            SynExpr::Path(path) if path.qself.is_none() => self
                .resolve_path(&path.path)
                .filter(|var| self.kind(*var) == VarKind::Buffer),
            _ => None,
        }
    }

    /// A fresh buffer temporary.
    pub(super) fn buffer_temp(&mut self, span: proc_macro2::Span) -> crate::ir::VarId {
        let temp = self.temp(span);
        self.vars[temp].kind = VarKind::Buffer;
        temp
    }

    /// True if `init`, the value of `let name = init;` followed by `rest`,
    /// is a buffer: a buffer value by its form, or (for calls and control
    /// flow, whose result types the macro cannot see) by how `rest` uses
    /// `name`.
    ///
    /// A value the rest only borrows (`g(&name)`) could be a buffer or a
    /// value of a user type: the compiled path cannot tell which, so such a
    /// function takes the tape.
    pub(super) fn is_buffer_value(
        &self,
        name: &syn::Ident,
        init: &SynExpr,
        rest: &[syn::Stmt],
    ) -> Lowered<bool> {
        let by_uses = || {
            match self.used_as_buffer(name, rest) {
            Uses::Buffer => Ok(true),
            Uses::None => Ok(false),
            Uses::Borrowed => Err(Unsupported::new(
                name.span(),
                format!(
                    "`{name}` is only borrowed after this `let`, so the compiled path cannot tell whether the value is a buffer or a value of a user type"
                ),
            )),
        }
        };
        match strip(init) {
            SynExpr::Path(_) => Ok(self.buffer_var(init).is_some()),
            SynExpr::MethodCall(call)
                if call.args.is_empty()
                    && matches!(
                        call.method.to_string().as_str(),
                        "clone" | "to_vec" | "to_owned"
                    ) =>
            {
                Ok(self.buffer_var(&call.receiver).is_some())
            }
            SynExpr::Call(_) => by_uses(),
            other if super::nested::is_nested_read(other) => by_uses(),
            other if super::stmts::is_control_flow(other) => {
                if self.yields_buffer(other) {
                    Ok(true)
                } else {
                    by_uses()
                }
            }
            _ => Ok(false),
        }
    }

    /// True if a branch of the control flow `expr` ends in a buffer value
    /// by its form.
    fn yields_buffer(&self, expr: &SynExpr) -> bool {
        let tail = |block: &syn::Block| match block.stmts.last() {
            Some(syn::Stmt::Expr(tail, None)) => self.yields_buffer(tail),
            Some(syn::Stmt::Macro(mac)) if mac.semi_token.is_none() => mac
                .mac
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == "vec"),
            _ => false,
        };
        match strip(expr) {
            SynExpr::If(if_expr) => {
                tail(&if_expr.then_branch)
                    || if_expr
                        .else_branch
                        .as_ref()
                        .is_some_and(|(_, els)| self.yields_buffer(els))
            }
            SynExpr::Match(m) => m.arms.iter().any(|arm| self.yields_buffer(&arm.body)),
            SynExpr::Block(block) => tail(&block.block),
            SynExpr::Array(_) | SynExpr::Repeat(_) => true,
            SynExpr::Macro(mac) => mac
                .mac
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == "vec"),
            other => self.buffer_var(other).is_some(),
        }
    }

    /// How `rest` uses `name` before binding it again.
    fn used_as_buffer(&self, name: &syn::Ident, rest: &[syn::Stmt]) -> Uses {
        let mut uses = BufferUses {
            name: syn::ext::IdentExt::unraw(name).to_string(),
            lowerer: self,
            found: false,
            borrowed: false,
        };
        for stmt in rest {
            if let syn::Stmt::Local(local) = stmt {
                // The value is still this binding's.
                if let Some(init) = &local.init {
                    uses.visit_expr(&init.expr);
                }
                if binds(&local.pat, &uses.name) {
                    break;
                }
                continue;
            }
            uses.visit_stmt(stmt);
            // A tail returning it from a function with a buffer result.
            if let syn::Stmt::Expr(tail, None) = stmt {
                if self.returns_buffer && names(tail, &uses.name) {
                    uses.found = true;
                }
            }
        }
        if uses.found {
            Uses::Buffer
        } else if uses.borrowed {
            Uses::Borrowed
        } else {
            Uses::None
        }
    }
}

/// How the statements after a `let` use its name.
enum Uses {
    /// As a buffer: indexed, measured, iterated, assigned to a buffer,
    /// returned as the buffer result.
    Buffer,
    /// Only borrowed (`&name`), which a buffer and a value of a user type
    /// both can be.
    Borrowed,
    None,
}

/// True if the pattern binds `name`.
pub(super) fn binds(pat: &syn::Pat, name: &str) -> bool {
    struct Binds<'a>(&'a str, bool);
    impl<'ast> Visit<'ast> for Binds<'_> {
        fn visit_pat_ident(&mut self, pat: &'ast syn::PatIdent) {
            self.1 |= syn::ext::IdentExt::unraw(&pat.ident) == self.0;
        }
    }
    let mut binds = Binds(name, false);
    binds.visit_pat(pat);
    binds.1
}

/// True if `expr` is the plain name `name`.
pub(super) fn names(expr: &SynExpr, name: &str) -> bool {
    matches!(strip(expr), SynExpr::Path(path) if path.qself.is_none()
        && path.path.get_ident().is_some_and(|i| syn::ext::IdentExt::unraw(i) == name))
}

struct BufferUses<'a> {
    name: String,
    lowerer: &'a Lowerer,
    found: bool,
    borrowed: bool,
}

impl<'ast> Visit<'ast> for BufferUses<'_> {
    fn visit_expr(&mut self, expr: &'ast SynExpr) {
        match expr {
            SynExpr::Index(index) if names(&index.expr, &self.name) => self.found = true,
            SynExpr::MethodCall(call)
                if names(&call.receiver, &self.name)
                    && matches!(
                        call.method.to_string().as_str(),
                        "len" | "iter" | "as_slice" | "to_vec" | "is_empty" | "first" | "last"
                    ) =>
            {
                self.found = true
            }
            SynExpr::Reference(reference) if names(&reference.expr, &self.name) => {
                self.borrowed = true
            }
            SynExpr::Assign(assign)
                if names(&assign.right, &self.name)
                    && self.lowerer.buffer_var(&assign.left).is_some() =>
            {
                self.found = true
            }
            SynExpr::Return(ret)
                if self.lowerer.returns_buffer
                    && ret.expr.as_ref().is_some_and(|e| names(e, &self.name)) =>
            {
                self.found = true
            }
            _ => {}
        }
        syn::visit::visit_expr(self, expr);
    }

    fn visit_item(&mut self, _: &'ast syn::Item) {}

    /// The expressions of a macro's arguments (`vec![a, b]`,
    /// `println!("{}", a)`, `vec![a; n]`), where they parse as such.
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        use syn::parse::Parser;
        let list = syn::punctuated::Punctuated::<SynExpr, syn::Token![,]>::parse_terminated;
        if let Ok(args) = list.parse2(mac.tokens.clone()) {
            for arg in &args {
                self.visit_expr(arg);
            }
            return;
        }
        let repeat = |input: syn::parse::ParseStream| {
            let elem: SynExpr = input.parse()?;
            input.parse::<syn::Token![;]>()?;
            let len: SynExpr = input.parse()?;
            Ok((elem, len))
        };
        if let Ok((elem, len)) = repeat.parse2(mac.tokens.clone()) {
            self.visit_expr(&elem);
            self.visit_expr(&len);
        }
    }
}
