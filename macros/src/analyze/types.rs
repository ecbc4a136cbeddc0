//! The types of plain (not differentiated) variables, as far as the macro
//! can tell them: the forward pass can only keep a plain value for the
//! adjoint if the adjoint can name its type. A small inference over the
//! IR: written types, literals' suffixes, `.len()`, casts, and operands of
//! one operator or comparison having one type.

use crate::ir::{Expr, ExprKind, Function, Origin, Place, StmtKind, VarId, VarKind};
use crate::signature::{ParamKind, Signature};

/// What the macro knows of a plain value's type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    Unknown,
    /// An integer of a type rustc decides (an unsuffixed literal).
    Int,
    /// A real of the function's precision.
    Real,
    Bool,
    /// An integer type (or `char`), by name.
    Named(String),
    /// Several types were seen: the macro cannot tell.
    Conflict,
}

const INTEGERS: &[&str] = &[
    "u8", "u16", "u32", "u64", "usize", "i8", "i16", "i32", "i64", "isize",
];

impl Ty {
    fn join(&self, other: &Ty) -> Ty {
        use Ty::*;
        match (self, other) {
            (Unknown, x) | (x, Unknown) => x.clone(),
            (Int, Named(n)) | (Named(n), Int) if INTEGERS.contains(&n.as_str()) => Named(n.clone()),
            (a, b) if a == b => a.clone(),
            _ => Conflict,
        }
    }

    /// The type written as `ty`.
    pub(crate) fn of_type(ty: &syn::Type) -> Ty {
        if crate::signature::float_name(ty).is_some() {
            return Ty::Real;
        }
        match ty {
            syn::Type::Path(path) if path.qself.is_none() => match path.path.get_ident() {
                Some(ident) if ident == "bool" => Ty::Bool,
                Some(ident)
                    if INTEGERS.contains(&ident.to_string().as_str()) || ident == "char" =>
                {
                    Ty::Named(ident.to_string())
                }
                _ => Ty::Unknown,
            },
            syn::Type::Paren(paren) => Ty::of_type(&paren.elem),
            _ => Ty::Unknown,
        }
    }

    /// True for integer types (known or not).
    pub(crate) fn is_integer(&self) -> bool {
        match self {
            Ty::Int => true,
            Ty::Named(name) => INTEGERS.contains(&name.as_str()),
            _ => false,
        }
    }
}

/// The type of every variable (`Ty::Real` for differentiated ones too:
/// `active` says which are known to be, a differentiated call's result
/// among them).
pub(crate) fn infer(function: &Function, signature: &Signature, active: &[bool]) -> Vec<Ty> {
    let mut types = vec![Ty::Unknown; function.vars.len()];
    for (var, info) in function.vars.iter().enumerate() {
        if active.get(var).copied().unwrap_or(false) && info.kind == VarKind::Scalar {
            types[var] = Ty::Real;
        }
    }
    for (param, &var) in signature.params.iter().zip(&function.params) {
        types[var] = match param.kind {
            ParamKind::Real => Ty::Real,
            _ if function.vars[var].kind == VarKind::Buffer => Ty::Real,
            _ => Ty::of_type(&param.ty),
        };
    }
    for (var, info) in function.vars.iter().enumerate() {
        if info.kind == VarKind::Buffer {
            types[var] = Ty::Real;
        }
        if let (Some(annotation), false) =
            (&info.annotation, matches!(info.origin, Origin::Param(_)))
        {
            if info.kind == VarKind::Scalar {
                types[var] = Ty::of_type(annotation);
            }
        }
    }
    // The result of a real-valued function is a real.
    if matches!(signature.output, crate::signature::Output::Real) {
        types[function.result] = Ty::Real;
    }
    let mut inference = Inference { types };
    let classes = field_classes(function, signature);
    for _ in 0..16 {
        let before = inference.types.clone();
        function.body.each_stmt(&mut |stmt| inference.stmt(stmt));
        inference.unify(&classes);
        if before == inference.types {
            break;
        }
    }
    inference.types
}

/// The field each variable holding a field of a value of a user type reads,
/// as a key equal for reads of the same field of the same type: the type
/// as the signature writes it (a parameter's, an element's of a buffer
/// parameter, the result's) or the function whose result it is, and the
/// members. (`p.x` and `ps[i].x` for `p: &Pt, ps: &[Pt]` hold one type;
/// keys from the signature name types in one scope.)
fn field_classes(function: &Function, signature: &Signature) -> Vec<Option<String>> {
    let written = |ty: &syn::Type| quote::ToTokens::to_token_stream(ty).to_string();
    let key = |ty: String, members: &[syn::Member]| {
        let members: Vec<String> = members
            .iter()
            .map(|m| quote::ToTokens::to_token_stream(m).to_string())
            .collect();
        Some(format!("{ty} . {}", members.join(" . ")))
    };
    // The written type of each parameter of a user type, and of the
    // elements of each buffer of one.
    let param_type = |var: VarId, element: bool| -> Option<String> {
        let Origin::Param(n) = function.vars[var].origin else {
            return None;
        };
        let kind = &signature.params.get(n)?.kind;
        if element {
            return crate::types::user_elements(kind).map(written);
        }
        match kind {
            ParamKind::Structured { value, .. } => Some(written(value)),
            _ => None,
        }
    };
    let mut classes = vec![None; function.vars.len()];
    for (var, info) in function.vars.iter().enumerate() {
        if let Origin::Field(id) = info.origin {
            let field = &function.fields[id];
            classes[var] = param_type(field.base, false).and_then(|ty| key(ty, &field.members));
        }
    }
    let mut callee = vec![None; function.vars.len()];
    function.body.each_stmt(&mut |stmt| {
        let StmtKind::Let {
            var,
            init: Some(init),
        } = &stmt.kind
        else {
            return;
        };
        match &init.kind {
            ExprKind::Call(call) => {
                let path = quote::ToTokens::to_token_stream(&call.path).to_string();
                callee[*var] = Some(format!("fn {path}"));
            }
            ExprKind::Field {
                base,
                index,
                members,
                elem,
            } => {
                let ty = match (index, elem) {
                    (Some(_), _) => param_type(*base, true),
                    (None, Some(_)) => param_type(*base, false),
                    (None, None) => callee[*base].clone(),
                };
                // The elements of a buffer field: a class of their own.
                let class = ty.and_then(|ty| key(ty, members));
                classes[*var] = match elem {
                    Some(_) => class.map(|class| format!("{class} [..]")),
                    None => class,
                };
            }
            _ => {}
        }
    });
    if let (Some(value), crate::signature::Output::Structured(ty)) =
        (&function.result_struct, &signature.output)
    {
        for (members, var) in value.leaves() {
            classes[var] = key(written(ty), &members);
        }
    }
    classes
}

struct Inference {
    types: Vec<Ty>,
}

impl Inference {
    /// Variables holding the same field have one type.
    fn unify(&mut self, classes: &[Option<String>]) {
        let mut joined: std::collections::HashMap<&str, Ty> = std::collections::HashMap::new();
        for (var, class) in classes.iter().enumerate() {
            if let Some(class) = class {
                let ty = joined.entry(class).or_insert(Ty::Unknown);
                *ty = ty.join(&self.types[var]);
            }
        }
        for (var, class) in classes.iter().enumerate() {
            if let Some(class) = class {
                self.types[var] = joined[class.as_str()].clone();
            }
        }
    }

    fn stmt(&mut self, stmt: &crate::ir::Stmt) {
        stmt.each_expr(&mut |expr| self.constrain_inside(expr));
        match &stmt.kind {
            StmtKind::Let {
                var,
                init: Some(init),
            } => {
                let ty = self.type_of(init);
                self.join(*var, &ty);
                let ty = self.types[*var].clone();
                self.constrain(init, &ty);
            }
            StmtKind::Assign { place, value, .. } => match place {
                Place::Var(var) => {
                    let ty = self.type_of(value);
                    self.join(*var, &ty);
                    let ty = self.types[*var].clone();
                    self.constrain(value, &ty);
                }
                Place::Elem(_, index) => self.constrain(index, &Ty::Named("usize".into())),
            },
            StmtKind::For { var, range, .. } => {
                let ty = self.type_of(&range.start).join(&self.type_of(&range.end));
                self.constrain(&range.start, &ty);
                self.constrain(&range.end, &ty);
                if let Some(var) = var {
                    self.join(*var, &ty);
                }
            }
            _ => {}
        }
    }

    fn join(&mut self, var: usize, ty: &Ty) {
        self.types[var] = self.types[var].join(ty);
    }

    fn type_of(&self, expr: &Expr) -> Ty {
        match &expr.kind {
            ExprKind::Lit(syn::Lit::Int(int)) => match int.suffix() {
                "" => Ty::Int,
                suffix => Ty::Named(suffix.to_string()),
            },
            ExprKind::Lit(syn::Lit::Float(_)) => Ty::Real,
            ExprKind::Lit(syn::Lit::Bool(_)) => Ty::Bool,
            ExprKind::Lit(_) => Ty::Unknown,
            ExprKind::Var(var) => self.types[*var].clone(),
            ExprKind::Len(_) => Ty::Named("usize".into()),
            ExprKind::Cast(_, ty) => Ty::of_type(ty),
            ExprKind::Neg(a) | ExprKind::Not(a) => self.type_of(a),
            ExprKind::Arith(_, a, b) => self.type_of(a).join(&self.type_of(b)),
            ExprKind::Logic(op, a, b) => match op {
                syn::BinOp::And(_) | syn::BinOp::Or(_) => Ty::Bool,
                syn::BinOp::Shl(_) | syn::BinOp::Shr(_) => self.type_of(a),
                _ => self.type_of(a).join(&self.type_of(b)),
            },
            ExprKind::Compare(..) => Ty::Bool,
            ExprKind::Math { args, .. } => args.first().map_or(Ty::Unknown, |a| self.type_of(a)),
            ExprKind::Elem(..) | ExprKind::Primitive(..) => Ty::Real,
            ExprKind::Call(_)
            | ExprKind::NewBuffer(_)
            | ExprKind::Opaque { .. }
            | ExprKind::Field { .. } => Ty::Unknown,
        }
    }

    /// `expr` must have type `ty`: its variables (through arithmetic) do.
    fn constrain(&mut self, expr: &Expr, ty: &Ty) {
        if matches!(ty, Ty::Unknown | Ty::Conflict) {
            return;
        }
        match &expr.kind {
            ExprKind::Var(var) if self.types[*var] != Ty::Real => self.join(*var, ty),

            ExprKind::Neg(a) => self.constrain(a, ty),
            ExprKind::Arith(_, a, b) => {
                self.constrain(a, ty);
                self.constrain(b, ty);
            }
            // A math method's value has its receiver's type, and so have
            // its other real operands.
            ExprKind::Math { math, args, .. } => {
                for (index, arg) in args.iter().enumerate() {
                    if math.real_arg(index) {
                        self.constrain(arg, ty);
                    }
                }
            }
            _ => {}
        }
    }

    /// The constraints inside an expression: indices are `usize`, operands
    /// of one operator or comparison have one type.
    fn constrain_inside(&mut self, expr: &Expr) {
        expr.each_subexpr(&mut |e| match &e.kind {
            ExprKind::Elem(_, index) => self.pending(index, Ty::Named("usize".into())),
            ExprKind::Arith(_, a, b) | ExprKind::Compare(_, a, b) => {
                let ty = self.type_of(a).join(&self.type_of(b));
                self.pending(a, ty.clone());
                self.pending(b, ty);
            }
            // Only floats have these methods: the receiver is a real.
            ExprKind::Math { math, args, .. } if !math.integers_have_it() => {
                if let Some(receiver) = args.first() {
                    self.pending(receiver, Ty::Real);
                }
            }
            ExprKind::Primitive(_, buffers) => {
                for buffer in buffers {
                    if let Some((start, end)) = &buffer.range {
                        for bound in [start, end].into_iter().flatten() {
                            self.pending(bound, Ty::Named("usize".into()));
                        }
                    }
                }
            }
            _ => {}
        });
    }

    fn pending(&mut self, expr: &Expr, ty: Ty) {
        // `each_subexpr` holds a shared borrow of the expression only.
        self.constrain(expr, &ty);
    }
}
