//! Fields of values of user types whose type the analysis cannot tell.
//!
//! The macro does not see a user type's fields: it infers each field's type
//! from how the body uses it (`types.rs`). A field used as a real is
//! differentiated; one used as an integer, an index or a `bool` is plain
//! data. A field whose type stays unknown is plain in the passes, which is
//! right only where a real and a plain value behave alike: compared,
//! tested, printed, or copied into a variable used the same way. Anywhere
//! else (an argument, a cast, plain code) a real would lose its derivative,
//! so the function stays on the tape, with the place and what to write.
//!
//! One use is taken whatever the type: a field of a parameter copied
//! unchanged into a field of the result (`Pt { a: p.b, .. }`), the same one
//! on every path. The result's field is then the parameter's field, copied
//! as it is, and its adjoint goes back to it where it is a differentiated
//! real (`runtime`'s `LeafCopy`).

use super::Ty;
use crate::ir::{
    Block, CallArg, EffectArg, Expr, ExprKind, Function, Origin, Place, StmtKind, Unsupported,
    VarId,
};

/// A field of the result that is a copy of a field of a parameter: the
/// result's field variable and the parameter's field variable.
pub(crate) type PassThrough = (VarId, VarId);

/// Checks the uses of fields of unknown type; returns the result's fields
/// that copy a parameter's.
pub(crate) fn check(function: &Function, types: &[Ty]) -> Result<Vec<PassThrough>, Unsupported> {
    let known = |ty: &Ty| matches!(ty, Ty::Real | Ty::Int | Ty::Named(_) | Ty::Bool);
    // Fields of parameters, and the locals holding fields of calls' results
    // and of elements of buffers.
    let mut read_fields: Vec<bool> = function
        .vars
        .iter()
        .map(|info| matches!(info.origin, Origin::Field(_)))
        .collect();
    function.body.each_stmt(&mut |stmt| {
        if let StmtKind::Let {
            var,
            init:
                Some(Expr {
                    kind: ExprKind::Field { .. },
                    ..
                }),
        } = &stmt.kind
        {
            read_fields[*var] = true;
        }
    });
    let mut unknown: Vec<bool> = (0..function.vars.len())
        .map(|var| read_fields[var] && !known(&types[var]))
        .collect();
    if !unknown.contains(&true) {
        return Ok(Vec::new());
    }
    // Copies of such fields are such values too.
    loop {
        let mut changed = false;
        function.body.each_stmt(&mut |stmt| {
            let (var, value) = match &stmt.kind {
                StmtKind::Let {
                    var,
                    init: Some(value),
                } => (*var, value),
                StmtKind::Assign {
                    place: Place::Var(var),
                    value,
                    ..
                } => (*var, value),
                _ => return,
            };
            if matches!(value.kind, ExprKind::Var(v) if unknown[v]) && !unknown[var] {
                unknown[var] = true;
                changed = true;
            }
        });
        if !changed {
            break;
        }
    }
    // A field of a result of a user type takes its value whatever its type
    // is: an unknown one there would be a derivative lost, unless it is a
    // parameter's field copied as it is.
    let mut pass_through = Vec::new();
    if let Some(value) = &function.result_struct {
        for (_, var) in value.leaves() {
            if !unknown[var] {
                continue;
            }
            match copied_field(function, var) {
                Some(field) => pass_through.push((var, field)),
                None => return Err(unknown_result(function, var)),
            }
        }
    }
    let mut problem = None;
    check_block(&function.body, function, &unknown, &mut problem);
    problem.map_or(Ok(pass_through), Err)
}

/// How the user wrote the value `var` holds: its name, or for the local
/// the macro made of a call's result (`f(..).b`), the call.
fn value_name(function: &Function, var: VarId) -> String {
    let name = syn::ext::IdentExt::unraw(&function.vars[var].name).to_string();
    if !function.vars[var].named_by_macro() {
        return name;
    }
    match function.let_value(var).map(|value| &value.kind) {
        Some(ExprKind::Call(call)) => {
            let path = &call.path;
            format!("{}(..)", quote::quote!(#path)).replace(' ', "")
        }
        _ => name,
    }
}

/// The variable `var` was made a copy of by a `let`, followed through
/// copies, while `var`'s name is the macro's (a field of a struct literal
/// written in place).
fn copied_from(function: &Function, var: VarId) -> VarId {
    let mut at = var;
    for _ in 0..function.vars.len() {
        if !function.vars[at].named_by_macro() {
            break;
        }
        match function.let_value(at).map(|value| &value.kind) {
            Some(ExprKind::Var(from)) => at = *from,
            _ => break,
        }
    }
    at
}

/// The parameter's field every assignment of the result's field `var`
/// copies (through locals that are copies and never change), if there is
/// one.
fn copied_field(function: &Function, var: VarId) -> Option<VarId> {
    let mut definitions: Vec<Option<&Expr>> = vec![None; function.vars.len()];
    let mut assigned = vec![false; function.vars.len()];
    let mut sources = Vec::new();
    function.body.each_stmt(&mut |stmt| match &stmt.kind {
        StmtKind::Let {
            var: v,
            init: Some(init),
        } => definitions[*v] = Some(init),
        StmtKind::Assign {
            place: Place::Var(target),
            value,
            ..
        } => {
            assigned[*target] = true;
            if *target == var {
                sources.push(value);
            }
        }
        _ => {}
    });
    let mut field = None;
    for source in sources {
        let mut at = source;
        let found = loop {
            let ExprKind::Var(v) = at.kind else {
                return None;
            };
            if let Origin::Field(id) = function.vars[v].origin {
                let base = function.fields[id].base;
                if !matches!(function.vars[base].origin, Origin::Param(_)) {
                    return None;
                }
                break v;
            }
            if assigned[v] {
                return None;
            }
            at = definitions[v]?;
        };
        if field.is_some_and(|f| f != found) {
            return None;
        }
        field = Some(found);
    }
    field
}

/// The first field read whose copy reaches the result field `var`.
fn unknown_result(function: &Function, var: VarId) -> Unsupported {
    let mut source = None;
    function.body.each_stmt(&mut |stmt| {
        if let StmtKind::Assign {
            place: Place::Var(target),
            value,
            ..
        } = &stmt.kind
        {
            if *target == var && source.is_none() {
                source = Some(value.clone());
            }
        }
    });
    match source {
        Some(value) => {
            let mut origin = value.clone();
            // Follow copies back to the field.
            for _ in 0..function.vars.len() {
                let ExprKind::Var(v) = origin.kind else {
                    break;
                };
                if matches!(function.vars[v].origin, Origin::Field(_)) {
                    return unknown_use(&value, v, function);
                }
                let mut next = None;
                function.body.each_stmt(&mut |stmt| {
                    if let StmtKind::Let {
                        var,
                        init: Some(init),
                    } = &stmt.kind
                    {
                        if *var == v && next.is_none() {
                            next = Some(init.clone());
                        }
                    }
                });
                match next {
                    Some(next) => origin = next,
                    None => break,
                }
            }
            unknown_use(&value, var, function)
        }
        None => Unsupported::new(
            function.vars[var].span,
            "deltad cannot tell whether a field of the result is a real",
        ),
    }
}

fn check_block(
    block: &Block,
    function: &Function,
    unknown: &[bool],
    problem: &mut Option<Unsupported>,
) {
    block.each_stmt(&mut |stmt| {
        let mut visit = |expr: &Expr, allowed: bool| {
            check_expr(expr, allowed, function, unknown, problem);
        };
        match &stmt.kind {
            StmtKind::Let {
                init: Some(value), ..
            }
            | StmtKind::Assign {
                place: Place::Var(_),
                value,
                ..
            } => visit(value, true),
            StmtKind::Assign {
                place: Place::Elem(_, index),
                value,
                ..
            } => {
                visit(index, false);
                visit(value, false);
            }
            StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => visit(cond, true),
            StmtKind::Match { scrutinee, arms } => {
                visit(scrutinee, true);
                for guard in arms.iter().filter_map(|arm| arm.guard.as_ref()) {
                    visit(guard, true);
                }
            }
            StmtKind::For { range, .. } => {
                visit(&range.start, false);
                visit(&range.end, false);
            }
            StmtKind::Effect(effect) => {
                for arg in &effect.args {
                    if let EffectArg::Expr(e) = arg {
                        visit(e, true);
                    }
                }
            }
            _ => {}
        }
    });
}

/// `allowed`: a field of unknown type may be `expr` itself here.
fn check_expr(
    expr: &Expr,
    allowed: bool,
    function: &Function,
    unknown: &[bool],
    problem: &mut Option<Unsupported>,
) {
    if problem.is_some() {
        return;
    }
    let mut child = |e: &Expr, allowed: bool| check_expr(e, allowed, function, unknown, problem);
    match &expr.kind {
        ExprKind::Var(var) => {
            if unknown[*var] && !allowed {
                *problem = Some(unknown_use(expr, *var, function));
            }
        }
        ExprKind::Compare(_, a, b) | ExprKind::Logic(_, a, b) => {
            child(a, true);
            child(b, true);
        }
        ExprKind::Not(a) => child(a, true),
        ExprKind::Opaque { reads, .. } => {
            if let Some(&var) = reads.iter().find(|&&v| unknown[v]) {
                *problem = Some(unknown_use(expr, var, function));
            }
        }
        ExprKind::Call(call) => {
            for arg in &call.args {
                match arg {
                    CallArg::Value(e) | CallArg::Plain(e) => child(e, false),
                    // (A field of a literal goes into the twin of the
                    // callee's type, which needs its type known.)
                    CallArg::Literal { leaves, .. } => leaves.iter().for_each(|e| child(e, false)),
                    CallArg::Buffer(_) | CallArg::Struct { .. } | CallArg::Function(_) => {}
                }
            }
            for e in expr.children() {
                child(e, false);
            }
        }
        _ => {
            for e in expr.children() {
                child(e, false);
            }
        }
    }
}

fn unknown_use(expr: &Expr, var: VarId, function: &Function) -> Unsupported {
    // A field of a literal written in place has a name of the macro's: the
    // field it copies is the one to name.
    let var = copied_from(function, var);
    let path = |base: VarId, index: bool, members: &[syn::Member], elem: bool| {
        let members: Vec<String> = members
            .iter()
            .map(|m| match m {
                syn::Member::Named(ident) => ident.to_string(),
                syn::Member::Unnamed(index) => index.index.to_string(),
            })
            .collect();
        let element = if index { "[..]" } else { "" };
        let elem = if elem { "[..]" } else { "" };
        format!(
            "{}{element}.{}{elem}",
            value_name(function, base),
            members.join(".")
        )
    };
    // A field of a call's result or of an element: the local holding it;
    // an element of a buffer field: the field.
    let mut read = None;
    let mut element_of = None;
    function.body.each_stmt(&mut |stmt| {
        if let StmtKind::Let {
            var: v,
            init:
                Some(Expr {
                    kind:
                        ExprKind::Field {
                            base,
                            index,
                            members,
                            elem,
                        },
                    ..
                }),
        } = &stmt.kind
        {
            if *v == var {
                read = Some(path(*base, index.is_some(), members, elem.is_some()));
                if elem.is_some() {
                    element_of = Some(path(*base, index.is_some(), members, false));
                }
            }
        }
    });
    let described = match function.vars[var].origin {
        Origin::Field(id) => {
            let field = &function.fields[id];
            path(field.base, false, &field.members, false)
        }
        _ => read.unwrap_or_else(|| function.vars[var].name.to_string()),
    };
    if let Some(field) = element_of {
        return Unsupported::new(
            expr.span,
            format!(
                "deltad cannot tell whether the elements of the field `{field}` are reals here: write the type where one is first read (`let value: f64 = {field}[i];`, or `usize`..); elements of user types in a field are not on the compiled path yet"
            ),
        );
    }
    Unsupported::new(
        expr.span,
        format!(
            "deltad cannot tell whether the field `{described}` is a real here: write its type where it is first read (`let value: f64 = {described};`, or `usize`..)"
        ),
    )
}
