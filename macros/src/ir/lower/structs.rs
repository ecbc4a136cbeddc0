//! Values of user types (`#[derive(Differentiable)]` structs, tuple
//! structs), which the macro knows by the fields the body names:
//!
//! * a parameter is held whole (its twin), and each field the body reads
//!   (`p.mass`, `p.pos.x`) becomes a variable of its own, bound once per
//!   value and path ([`Origin::Field`]), whose type the analysis infers from
//!   its uses;
//! * a local built by a struct literal (`let q = Pt { a: x, b: 2.0 };`) is
//!   its fields: one local variable per field, read and assigned by name
//!   (`q.a`, `q.b += 1.0`), nested literals nested the same way;
//! * a local a call returns (`let r = f(..);`) is held whole, with a local
//!   per field the body reads, bound right after the call;
//! * a buffer parameter of a user type (`ps: &[Particle]`) is read by its
//!   elements' fields (`ps[i].mass`, or `p.mass` for `p` an element a loop
//!   or a `let` names), each read a local of its own, bound where it is
//!   read.

use syn::spanned::Spanned;
use syn::Expr as SynExpr;

use super::stmts::strip;
use super::{Lowered, Lowerer, Unsupported};
use crate::ir::{
    Expr, ExprKind, FieldLeaf, Origin, StmtKind, StructField, StructValue, Var, VarId, VarKind,
};

/// A local built by a struct literal: the type's path as written and the
/// variable of each field, in the order written.
#[derive(Clone)]
pub(super) struct Literal {
    path: syn::Path,
    fields: Vec<(syn::Member, VarId)>,
}

impl Literal {
    fn get(&self, member: &syn::Member) -> Option<VarId> {
        let key = member_key(member);
        self.fields
            .iter()
            .find(|(m, _)| member_key(m) == key)
            .map(|(_, var)| *var)
    }
}

/// A field of a local of a user type a call returned (the members leading
/// to it) and the local holding its value.
pub(super) type FieldLocal = (Vec<syn::Member>, VarId);

/// A member as a key: its name, or its index for tuple structs.
fn member_key(member: &syn::Member) -> String {
    match member {
        syn::Member::Named(ident) => syn::ext::IdentExt::unraw(ident).to_string(),
        syn::Member::Unnamed(index) => index.index.to_string(),
    }
}

impl Lowerer {
    /// `base.a.b` (also `(*base).a`) of a variable of a user type: the
    /// variable and the members, outermost first.
    pub(super) fn field_chain(&self, expr: &SynExpr) -> Option<(VarId, Vec<syn::Member>)> {
        let mut members = Vec::new();
        let mut at = expr;
        loop {
            match strip(at) {
                SynExpr::Field(field) => {
                    members.push(field.member.clone());
                    at = &field.base;
                }
                SynExpr::Unary(unary) if matches!(unary.op, syn::UnOp::Deref(_)) => {
                    at = &unary.expr;
                }
                SynExpr::Path(path) if path.qself.is_none() && !members.is_empty() => {
                    let var = self.resolve_path(&path.path)?;
                    if self.kind(var) != VarKind::Struct {
                        return None;
                    }
                    members.reverse();
                    return Some((var, members));
                }
                _ => return None,
            }
        }
    }

    /// `buffer[index]` of a buffer parameter of a user type: the buffer and
    /// the indexing.
    fn element_index<'e>(&self, expr: &'e SynExpr) -> Option<(VarId, &'e syn::ExprIndex)> {
        let SynExpr::Index(index) = strip(expr) else {
            return None;
        };
        let SynExpr::Path(path) = strip(&index.expr) else {
            return None;
        };
        let buffer = self.resolve_path(&path.path)?;
        (self.kind(buffer) == VarKind::Structs).then_some((buffer, index))
    }

    /// `buffer[index].a.b` of a buffer parameter of a user type: the
    /// buffer, the index and the members, outermost first.
    pub(super) fn elem_field_chain<'e>(
        &self,
        expr: &'e SynExpr,
    ) -> Option<(VarId, &'e SynExpr, Vec<syn::Member>)> {
        let mut members = Vec::new();
        let mut at = expr;
        while let SynExpr::Field(field) = strip(at) {
            members.push(field.member.clone());
            at = &field.base;
        }
        let (buffer, index) = self.element_index(at)?;
        if members.is_empty() {
            return None;
        }
        members.reverse();
        Some((buffer, &*index.index, members))
    }

    /// A field of an element of a buffer parameter of a user type, read
    /// into a local of its own: the local.
    pub(super) fn elem_field(
        &mut self,
        buffer: VarId,
        index: Expr,
        members: Vec<syn::Member>,
        span: proc_macro2::Span,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> VarId {
        let read = ExprKind::Field {
            base: buffer,
            index: Some(Box::new(index)),
            members,
            elem: None,
        };
        self.read_into_local(read, span, out)
    }

    /// `let temp = read;` (a read of a field): the temporary.
    pub(super) fn read_into_local(
        &mut self,
        read: ExprKind,
        span: proc_macro2::Span,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> VarId {
        let temp = self.temp(span);
        self.vars[temp].mutable = false;
        out.push(self.stmt(
            span,
            StmtKind::Let {
                var: temp,
                init: Some(Expr::new(read, span)),
            },
        ));
        temp
    }

    /// `p.a.b` of a parameter `p` of a user type (held whole by the passes,
    /// so a field of it that is a buffer can be read by element): `p` and
    /// the members.
    pub(super) fn param_field_chain(&self, expr: &SynExpr) -> Option<(VarId, Vec<syn::Member>)> {
        let (base, members) = self.field_chain(expr)?;
        let held = matches!(self.vars[base].origin, Origin::Param(_))
            && self.element_of(base).is_none()
            && !self.literals.contains_key(&base);
        held.then_some((base, members))
    }

    /// An element of the buffer field `members` of the parameter `base`
    /// (`p.w[i]`), read into a local of its own: the local.
    pub(super) fn field_elem(
        &mut self,
        base: VarId,
        members: Vec<syn::Member>,
        elem: Expr,
        span: proc_macro2::Span,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> VarId {
        let read = ExprKind::Field {
            base,
            index: None,
            members,
            elem: Some(Box::new(elem)),
        };
        self.read_into_local(read, span, out)
    }

    /// The element of a buffer of a user type a variable names (a loop's
    /// element, `let p = &ps[i];`): the buffer and the index's variable.
    pub(super) fn element_of(&self, var: VarId) -> Option<(VarId, VarId)> {
        self.elements.get(&var).copied()
    }

    /// `&ps[i]` or `ps[i]` of a buffer of a user type: the buffer and the
    /// variable holding the index (the index's own variable when it keeps
    /// its value, a loop's index or an immutable local; else a temporary
    /// holding its value).
    pub(super) fn element_named(
        &mut self,
        init: &SynExpr,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<Option<(VarId, VarId)>> {
        let at = match strip(init) {
            SynExpr::Reference(reference) if reference.mutability.is_none() => {
                strip(&reference.expr)
            }
            other => other,
        };
        let Some((buffer, index)) = self.element_index(at) else {
            return Ok(None);
        };
        if let SynExpr::Path(at) = strip(&index.index) {
            if let Some(var) = self.resolve_path(&at.path) {
                let fixed = !self.vars[var].mutable
                    && matches!(
                        self.vars[var].origin,
                        Origin::LoopIndex | Origin::Local | Origin::Param(_)
                    )
                    && self.kind(var) == VarKind::Scalar;
                if fixed {
                    return Ok(Some((buffer, var)));
                }
            }
        }
        let span = index.index.span();
        let value = self.value(&index.index, out)?;
        let temp = self.temp(span);
        self.vars[temp].mutable = false;
        out.push(self.stmt(
            span,
            StmtKind::Let {
                var: temp,
                init: Some(value),
            },
        ));
        Ok(Some((buffer, temp)))
    }

    /// A new immutable local `name` of a user type.
    fn struct_local(&mut self, name: &syn::Ident) -> VarId {
        self.new_var(Var {
            name: name.clone(),
            mutable: false,
            origin: Origin::Local,
            kind: VarKind::Struct,
            array: false,
            annotation: None,
            span: name.span(),
        })
    }

    /// Binds `name` to the element `index` (a variable nothing assigns
    /// again) of the buffer of a user type `buffer`.
    pub(super) fn bind_element(&mut self, name: &syn::Ident, buffer: VarId, index: VarId) -> VarId {
        let var = self.struct_local(name);
        self.elements.insert(var, (buffer, index));
        self.bind(name, var);
        var
    }

    /// The variable of field `members` of `base` (one per value and path).
    pub(super) fn field_leaf(
        &mut self,
        base: VarId,
        members: Vec<syn::Member>,
        span: proc_macro2::Span,
    ) -> VarId {
        let key =
            |members: &[syn::Member]| members.iter().map(member_key).collect::<Vec<_>>().join("_");
        let wanted = key(&members);
        if let Some(&var) = self.field_vars.iter().find(|&&var| {
            let Origin::Field(id) = self.vars[var].origin else {
                return false;
            };
            self.fields[id].base == base && key(&self.fields[id].members) == wanted
        }) {
            return var;
        }
        let base_name = syn::ext::IdentExt::unraw(&self.vars[base].name).to_string();
        let name = quote::format_ident!(
            "__deltad_field_{}_{}_{}",
            base_name,
            wanted,
            self.fields.len(),
            span = proc_macro2::Span::mixed_site()
        );
        self.fields.push(FieldLeaf { base, members });
        let var = self.new_var(Var {
            name,
            mutable: false,
            origin: Origin::Field(self.fields.len() - 1),
            kind: VarKind::Scalar,
            array: false,
            annotation: None,
            span,
        });
        self.field_vars.push(var);
        var
    }
}

impl Lowerer {
    /// The value of field `members` of `base`: for a local built by a
    /// literal, the field's own variable; for a parameter, its field
    /// variable. A local built by a literal named whole (or a nested one)
    /// is not a value the compiled path has.
    pub(super) fn field(
        &mut self,
        base: VarId,
        members: Vec<syn::Member>,
        span: proc_macro2::Span,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<VarId> {
        if let Some((buffer, index)) = self.element_of(base) {
            let index = Expr::new(ExprKind::Var(index), span);
            return Ok(self.elem_field(buffer, index, members, span, out));
        }
        if let Some((_, fields)) = self.call_fields.iter().find(|(var, _)| *var == base) {
            let key: Vec<String> = members.iter().map(member_key).collect();
            return fields
                .iter()
                .find(|(path, _)| path.iter().map(member_key).collect::<Vec<_>>() == key)
                .map(|(_, var)| *var)
                .ok_or_else(|| whole_value(span));
        }
        if !self.literals.contains_key(&base) {
            return Ok(self.field_leaf(base, members, span));
        }
        let mut at = base;
        for member in &members {
            let literal = self.literals.get(&at).ok_or_else(|| {
                Unsupported::new(span, "this is not a field of the struct literal")
            })?;
            at = literal
                .get(member)
                .ok_or_else(|| Unsupported::new(span, "the struct literal has no such field"))?;
        }
        if self.kind(at) == VarKind::Struct {
            return Err(whole_value(span));
        }
        Ok(at)
    }

    /// `let [mut] name = other;` of a local built by a literal: a copy,
    /// field by field.
    pub(super) fn let_struct_copy(
        &mut self,
        name: &syn::Ident,
        mutable: bool,
        source: VarId,
        span: proc_macro2::Span,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<VarId> {
        let source = self.literals[&source].clone();
        let mut fields = Vec::new();
        for (member, field) in source.fields {
            let field_name = member_name(name, &member);
            let var = if self.is_literal(field) {
                self.let_struct_copy(&field_name, mutable, field, span, out)?
            } else {
                let value = Expr::new(ExprKind::Var(field), span);
                self.let_scalar(&field_name, mutable, value, out)
            };
            fields.push((member, var));
        }
        let literal = Literal {
            path: source.path,
            fields,
        };
        Ok(self.new_literal(name, mutable, literal))
    }

    fn new_literal(&mut self, name: &syn::Ident, mutable: bool, literal: Literal) -> VarId {
        let var = self.new_var(Var {
            name: name.clone(),
            mutable,
            origin: Origin::Local,
            kind: VarKind::Struct,
            array: false,
            annotation: None,
            span: name.span(),
        });
        self.literals.insert(var, literal);
        self.bind(name, var);
        var
    }

    /// The local built by a literal that `init` names (`q`, `*q`).
    pub(super) fn literal_named(&self, init: &SynExpr) -> Option<VarId> {
        let SynExpr::Path(path) = strip(init) else {
            return None;
        };
        let var = self.resolve_path(&path.path)?;
        self.is_literal(var).then_some(var)
    }

    /// `p` or `*p` of a parameter of a user type.
    pub(super) fn struct_alias(&self, init: &SynExpr) -> Option<VarId> {
        let mut at = strip(init);
        if let SynExpr::Unary(unary) = at {
            if matches!(unary.op, syn::UnOp::Deref(_)) {
                at = strip(&unary.expr);
            }
        }
        let SynExpr::Path(path) = at else {
            return None;
        };
        let var = self.resolve_path(&path.path)?;
        (self.kind(var) == VarKind::Struct && !self.is_literal(var)).then_some(var)
    }

    /// True for a local built by a struct literal.
    pub(super) fn is_literal(&self, var: VarId) -> bool {
        self.literals.contains_key(&var)
    }

    /// `let [mut] name = Type { a: .., b: .. };`: a local per field (in the
    /// order written, which is the order Rust evaluates them), bound to the
    /// struct's name.
    pub(super) fn let_struct_literal(
        &mut self,
        name: &syn::Ident,
        mutable: bool,
        literal: &syn::ExprStruct,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<VarId> {
        if let Some(rest) = &literal.rest {
            return Err(Unsupported::new(
                rest.span(),
                "a struct literal with `..base` is not on the compiled path yet: name every field",
            ));
        }
        let mut fields = Vec::new();
        for field in &literal.fields {
            let field_name = member_name(name, &field.member);
            let var = match strip(&field.expr) {
                SynExpr::Struct(inner) if inner.qself.is_none() => {
                    self.let_struct_literal(&field_name, mutable, inner, out)?
                }
                value => {
                    if self.new_buffer(value)?.is_some() {
                        return Err(Unsupported::new(
                            value.span(),
                            "a field holding a buffer in a struct literal is not on the compiled path yet",
                        ));
                    }
                    let value = self.value(value, out)?;
                    let untyped = untyped_float(&value);
                    let var = self.let_scalar(&field_name, mutable, value, out);
                    // The field's type, which the literal leaves open
                    // (`Pt { a: 1.5, .. }`): a real of the function's
                    // precision (a differentiable type has one precision).
                    if untyped {
                        let float = self.precision.ident(field_name.span());
                        self.vars[var].annotation = Some(syn::parse_quote!(#float));
                    }
                    var
                }
            };
            fields.push((field.member.clone(), var));
        }
        let literal = Literal {
            path: literal.path.clone(),
            fields,
        };
        Ok(self.new_literal(name, mutable, literal))
    }

    /// `name = Type { a: .., b: .. };` of a local built by a literal: every
    /// field's new value computed first, then assigned.
    pub(super) fn assign_struct_literal(
        &mut self,
        target: VarId,
        literal: &syn::ExprStruct,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        let span = literal.span();
        let new = self.let_struct_literal(&new_name(), false, literal, out)?;
        self.assign_fields(target, new, false, span, out)
    }

    /// `name = other;` of locals built by literals: a copy of `other`'s
    /// fields first (`other` may read `name`), then assigned.
    pub(super) fn assign_struct_copy(
        &mut self,
        target: VarId,
        source: VarId,
        span: proc_macro2::Span,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        let new = self.let_struct_copy(&new_name(), false, source, span, out)?;
        self.assign_fields(target, new, false, span, out)
    }

    /// The value of a user type a `return` or the body's tail gives the
    /// function's result (`target`): a struct literal, or a local built by
    /// one. The result's fields are variables of their own, made at the
    /// first value and assigned once on each path.
    pub(super) fn struct_into(
        &mut self,
        target: VarId,
        expr: &SynExpr,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        let span = expr.span();
        let source = match strip(expr) {
            SynExpr::Struct(literal) if literal.qself.is_none() => {
                self.let_struct_literal(&new_name(), false, literal, out)?
            }
            other => self.literal_named(other).ok_or_else(|| whole_value(span))?,
        };
        if !self.is_literal(target) {
            let name = self.vars[target].name.clone();
            let fields = self.result_fields(&name, source);
            self.literals.insert(target, fields);
        }
        self.assign_fields(target, source, true, span, out)
    }

    /// Fields for the result shaped like the local `like`.
    fn result_fields(&mut self, parent: &syn::Ident, like: VarId) -> Literal {
        let like = self.literals[&like].clone();
        let mut fields = Vec::new();
        for (member, field) in like.fields {
            let name = member_name(parent, &member);
            let nested = self
                .is_literal(field)
                .then(|| self.result_fields(&name, field));
            let var = self.new_var(Var {
                name,
                mutable: true,
                origin: Origin::Result,
                kind: if nested.is_some() {
                    VarKind::Struct
                } else {
                    VarKind::Scalar
                },
                array: false,
                annotation: None,
                span: proc_macro2::Span::call_site(),
            });
            if let Some(nested) = nested {
                self.literals.insert(var, nested);
            }
            fields.push((member, var));
        }
        Literal {
            path: like.path,
            fields,
        }
    }

    /// Assigns each field of `new` to the same field of `target` (`first`:
    /// the result's fields, assigned once per path).
    fn assign_fields(
        &mut self,
        target: VarId,
        new: VarId,
        first: bool,
        span: proc_macro2::Span,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        let (Some(old), Some(new_fields)) = (
            self.literals.get(&target).cloned(),
            self.literals.get(&new).cloned(),
        ) else {
            return Err(whole_value(span));
        };
        if old.fields.len() != new_fields.fields.len() {
            return Err(whole_value(span));
        }
        for (member, old_var) in old.fields {
            let new_var = new_fields.get(&member).ok_or_else(|| whole_value(span))?;
            if self.kind(old_var) == VarKind::Struct {
                self.assign_fields(old_var, new_var, first, span, out)?;
                continue;
            }
            let value = Expr::new(ExprKind::Var(new_var), span);
            out.push(self.stmt(
                span,
                StmtKind::Assign {
                    place: crate::ir::Place::Var(old_var),
                    op: crate::ir::AssignOp::Set,
                    value,
                    first,
                },
            ));
        }
        Ok(())
    }

    /// The result of a function returning a user type, as its fields.
    pub(super) fn struct_value(&self, var: VarId) -> Option<StructValue> {
        let literal = self.literals.get(&var)?;
        let fields = literal
            .fields
            .iter()
            .map(|(member, field)| {
                let field = match self.struct_value(*field) {
                    Some(nested) => StructField::Struct(nested),
                    None => StructField::Var(*field),
                };
                (member.clone(), field)
            })
            .collect();
        Some(StructValue {
            path: literal.path.clone(),
            fields,
        })
    }
}

/// True for a value of unsuffixed float literals alone (`1.5`, `-0.5 * 2.0`),
/// whose type Rust leaves open until something fixes it.
fn untyped_float(expr: &Expr) -> bool {
    match &expr.kind {
        ExprKind::Lit(syn::Lit::Float(float)) => float.suffix().is_empty(),
        ExprKind::Neg(a) => untyped_float(a),
        ExprKind::Arith(_, a, b) => untyped_float(a) && untyped_float(b),
        _ => false,
    }
}

/// The variable of field `member` of a local `name` built by a literal.
fn member_name(name: &syn::Ident, member: &syn::Member) -> syn::Ident {
    quote::format_ident!(
        "__deltad_{}_{}",
        syn::ext::IdentExt::unraw(name).to_string(),
        member_key(member),
        span = proc_macro2::Span::mixed_site()
    )
}

/// The name of a value built before it is assigned.
fn new_name() -> syn::Ident {
    quote::format_ident!("__deltad_new", span = proc_macro2::Span::mixed_site())
}

/// `arg` without the shared borrows and dereferences around it (`&q`,
/// `*q`, `&*q`: `q`).
fn without_borrows(arg: &SynExpr) -> &SynExpr {
    match strip(arg) {
        SynExpr::Reference(reference) if reference.mutability.is_none() => {
            without_borrows(&reference.expr)
        }
        SynExpr::Unary(unary) if matches!(unary.op, syn::UnOp::Deref(_)) => {
            without_borrows(&unary.expr)
        }
        other => other,
    }
}

/// The compiled path reads values of user types by their fields.
pub(super) fn whole_value(span: proc_macro2::Span) -> Unsupported {
    Unsupported::new(
        span,
        "a value of a user type used whole (passed on, returned, compared..) is not on the compiled path yet: the compiled path reads its fields",
    )
}

impl Lowerer {
    /// For `let name = f(..);` whose later statements read fields of
    /// `name` (`name.x`, `name.pos.y`): those fields. `None` if the value is
    /// not a call of a user function, no field is read, or a later `let`
    /// binds the name again (the fields read would not all be this value's).
    pub(super) fn struct_call_fields(
        &self,
        name: &syn::Ident,
        init: &SynExpr,
        rest: &[syn::Stmt],
    ) -> Option<Vec<Vec<syn::Member>>> {
        let SynExpr::Call(call) = strip(init) else {
            return None;
        };
        let SynExpr::Path(path) = strip(&call.func) else {
            return None;
        };
        if path.qself.is_some()
            || !matches!(
                crate::syntax::classify_call(&path.path),
                crate::syntax::CallKind::User
            )
        {
            return None;
        }
        struct Reads<'n> {
            name: &'n syn::Ident,
            paths: Vec<Vec<syn::Member>>,
            rebound: bool,
        }
        impl<'ast> syn::visit::Visit<'ast> for Reads<'_> {
            fn visit_expr_field(&mut self, field: &'ast syn::ExprField) {
                let mut members = Vec::new();
                let mut at: &SynExpr = &SynExpr::Field(field.clone());
                while let SynExpr::Field(f) = strip(at) {
                    members.push(f.member.clone());
                    at = &f.base;
                }
                if let SynExpr::Path(path) = strip(at) {
                    if path.path.is_ident(self.name) {
                        members.reverse();
                        if matches!(members[0], syn::Member::Named(_))
                            && !self.paths.contains(&members)
                        {
                            self.paths.push(members);
                        }
                        return;
                    }
                }
                syn::visit::visit_expr_field(self, field);
            }
            fn visit_pat_ident(&mut self, pat: &'ast syn::PatIdent) {
                self.rebound |= pat.ident == *self.name;
                syn::visit::visit_pat_ident(self, pat);
            }
        }
        let mut reads = Reads {
            name,
            paths: Vec::new(),
            rebound: false,
        };
        for stmt in rest {
            // A later `let` of the same name ends this value's scope (its
            // value may still read this one).
            if let syn::Stmt::Local(local) = stmt {
                let pat = match &local.pat {
                    syn::Pat::Type(typed) => &*typed.pat,
                    other => other,
                };
                if matches!(pat, syn::Pat::Ident(ident) if ident.ident == *name) {
                    if let Some(init) = &local.init {
                        syn::visit::Visit::visit_expr(&mut reads, &init.expr);
                    }
                    break;
                }
            }
            syn::visit::Visit::visit_stmt(&mut reads, stmt);
        }
        (!reads.rebound && !reads.paths.is_empty()).then_some(reads.paths)
    }

    /// `let name = f(..);` of a user type (`struct_call_fields`): the call's
    /// `let`, then a `let` per field the body reads.
    pub(super) fn let_struct_call(
        &mut self,
        name: &syn::Ident,
        mutable: bool,
        init: &SynExpr,
        paths: Vec<Vec<syn::Member>>,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        let span = init.span();
        if mutable {
            return Err(Unsupported::new(
                name.span(),
                "a `mut` local of a user type that a call returns is not on the compiled path yet",
            ));
        }
        let SynExpr::Call(call) = strip(init) else {
            return Err(whole_value(span));
        };
        let Some(call_ir) = self.user_call(call, out)? else {
            return Err(whole_value(span));
        };
        let var = self.struct_local(name);
        out.push(self.stmt(
            span,
            StmtKind::Let {
                var,
                init: Some(Expr::new(ExprKind::Call(call_ir), span)),
            },
        ));
        let mut fields = Vec::new();
        for members in paths {
            let key: Vec<String> = members.iter().map(member_key).collect();
            let field_name = quote::format_ident!(
                "__deltad_{}_{}",
                syn::ext::IdentExt::unraw(name).to_string(),
                key.join("_"),
                span = proc_macro2::Span::mixed_site()
            );
            let field = self.new_var(Var {
                name: field_name,
                mutable: false,
                origin: Origin::Local,
                kind: VarKind::Scalar,
                array: false,
                annotation: None,
                span,
            });
            let read = ExprKind::Field {
                base: var,
                index: None,
                members: members.clone(),
                elem: None,
            };
            out.push(self.stmt(
                span,
                StmtKind::Let {
                    var: field,
                    init: Some(Expr::new(read, span)),
                },
            ));
            fields.push((members, field));
        }
        self.call_fields.push((var, fields));
        self.bind(name, var);
        Ok(())
    }

    /// `f(..).a.b` of a user function returning a user type: the call's
    /// result in a local of its own, and the field in another (its
    /// variable).
    pub(super) fn call_field(
        &mut self,
        expr: &SynExpr,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<Option<VarId>> {
        let mut members = Vec::new();
        let mut at = expr;
        while let SynExpr::Field(field) = strip(at) {
            members.push(field.member.clone());
            at = &field.base;
        }
        members.reverse();
        let SynExpr::Call(call) = strip(at) else {
            return Ok(None);
        };
        let is_user = matches!(strip(&call.func), SynExpr::Path(path) if path.qself.is_none()
            && matches!(crate::syntax::classify_call(&path.path), crate::syntax::CallKind::User));
        if !is_user || !matches!(members.first(), Some(syn::Member::Named(_))) {
            return Ok(None);
        }
        let name = quote::format_ident!(
            "__deltad_call{}",
            self.call_fields.len(),
            span = proc_macro2::Span::mixed_site()
        );
        self.with_scope(|this| this.let_struct_call(&name, false, at, vec![members.clone()], out))?;
        let (_, fields) = self
            .call_fields
            .last()
            .expect("the call's local was just made");
        Ok(Some(fields[0].1))
    }

    /// An argument of a user type built from fields: a local built by a
    /// struct literal (`q`, `&q`, `*q`), or a literal written in place
    /// (`&Pt { a: x, b: 1.0 }`, which becomes such a local first). `None`
    /// for other arguments.
    pub(super) fn literal_arg(
        &mut self,
        arg: &SynExpr,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<Option<StructValue>> {
        let at = without_borrows(arg);
        let var = match at {
            SynExpr::Struct(literal) if literal.qself.is_none() => {
                self.let_struct_literal(&new_name(), false, literal, out)?
            }
            SynExpr::Path(path) => match self.resolve_path(&path.path) {
                Some(var) if self.is_literal(var) => var,
                _ => return Ok(None),
            },
            _ => return Ok(None),
        };
        Ok(self.struct_value(var))
    }

    /// An argument naming a value of a user type whole (`p`, `&p`, `*p`,
    /// `&ps[i]`): a parameter, a call's result or an element of a buffer
    /// parameter, passed to the callee as the twin the passes hold. `None`
    /// for other arguments.
    pub(super) fn struct_arg(
        &mut self,
        arg: &SynExpr,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<Option<(VarId, Option<Expr>)>> {
        let at = without_borrows(arg);
        if let Some((buffer, index)) = self.element_index(at) {
            let at = self.expr(&index.index, out)?;
            return Ok(Some((buffer, Some(at))));
        }
        match at {
            SynExpr::Path(path) => {
                let Some(var) = self.resolve_path(&path.path) else {
                    return Ok(None);
                };
                if let Some((buffer, index)) = self.element_of(var) {
                    let index = Expr::new(ExprKind::Var(index), arg.span());
                    return Ok(Some((buffer, Some(index))));
                }
                let whole = match self.kind(var) {
                    VarKind::Struct => !self.is_literal(var),
                    VarKind::Structs => true,
                    _ => false,
                };
                Ok(whole.then_some((var, None)))
            }
            _ => Ok(None),
        }
    }
}
