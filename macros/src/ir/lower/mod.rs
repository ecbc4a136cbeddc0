//! Lowering: the validated, relocated function body → the IR.
//!
//! Names are resolved with the body's own scopes; control flow that yields
//! a value goes through a temporary assigned on every path; calls and
//! control flow inside arithmetic are hoisted into temporaries before the
//! statement that uses them (in evaluation order). Anything outside the
//! compiled subset is an [`Unsupported`] at its span: the function then
//! stays on the tape (or, with `#[differentiate(compiled)]`, the user gets
//! that message as a compile error).

use std::collections::HashSet;

use proc_macro2::Span;
use quote::format_ident;
use syn::spanned::Spanned;
use syn::{Ident, Lifetime};

use super::{
    Block, Expr, ExprKind, Function, LoopId, LoopInfo, Origin, Stmt, StmtKind, Var, VarId, VarKind,
};
use crate::signature::{ParamKind, Signature};

mod buffers;
mod chains;
mod closure_args;
mod closures;
mod exprs;
mod loops;
mod nested;
mod opaque;
mod patterns;
mod pushes;
mod stmts;
mod structs;

/// Why a function body is not in the compiled subset, at the construct.
#[derive(Debug)]
pub(crate) struct Unsupported {
    pub span: Span,
    pub message: String,
}

impl Unsupported {
    pub(crate) fn new(span: Span, message: impl Into<String>) -> Unsupported {
        Unsupported {
            span,
            message: message.into(),
        }
    }
}

pub(crate) type Lowered<T> = Result<T, Unsupported>;

/// Lowers `body` (relocated) of a function with `signature`.
pub(crate) fn lower(signature: &Signature, body: &syn::Block) -> Lowered<Function> {
    let mut lowerer = Lowerer {
        vars: Vec::new(),
        scopes: vec![Vec::new()],
        loops: Vec::new(),
        loop_stack: Vec::new(),
        next_stmt: 0,
        next_temp: 0,
        next_block: 0,
        by_ref: HashSet::new(),
        closures: closures::Closures::new(),
        closure_fns: Vec::new(),
        passed_fns: Vec::new(),
        param_shapes: signature
            .params
            .iter()
            .map(|param| match &param.kind {
                ParamKind::Function { compiled, .. } => compiled.clone(),
                _ => None,
            })
            .collect(),
        returns_buffer: signature.buffer_output().is_some(),
        precision: signature.precision,
        plain: HashSet::new(),
        fields: Vec::new(),
        field_vars: Vec::new(),
        literals: std::collections::HashMap::new(),
        call_fields: Vec::new(),
        elements: std::collections::HashMap::new(),
        pushed: Vec::new(),
        reals: HashSet::new(),
    };
    let mut params = Vec::new();
    let mut prologue = Vec::new();
    for (index, param) in signature.params.iter().enumerate() {
        let kind = match &param.kind {
            ParamKind::Real => VarKind::Scalar,
            ParamKind::Slice { .. }
            | ParamKind::VecRef { .. }
            | ParamKind::Vec
            | ParamKind::Array { .. }
            | ParamKind::ArrayRef { .. } => VarKind::Buffer,
            ParamKind::Constant | ParamKind::Discrete if is_float_buffer(&param.ty) => {
                VarKind::Buffer
            }
            ParamKind::Constant | ParamKind::Discrete => VarKind::Scalar,
            ParamKind::Structured { value, passing }
                if !matches!(passing, crate::signature::Passing::Slice { .. })
                    && crate::types::is_user_type(value) =>
            {
                VarKind::Struct
            }
            kind if crate::types::user_elements(kind).is_some() => VarKind::Structs,
            ParamKind::Structured { .. } => {
                return Err(Unsupported::new(
                    param.ty.span(),
                    "parameters of nested collections, tuples, `Option` and slices of user types are not on the compiled path yet",
                ))
            }
            ParamKind::InOut { .. } => {
                return Err(Unsupported::new(
                    param.ty.span(),
                    "`&mut` parameters are not on the compiled path yet",
                ))
            }
            ParamKind::Function { compiled, .. } => {
                if compiled.is_none() {
                    return Err(Unsupported::new(
                        param.ty.span(),
                        "function parameters are on the compiled path when they take reals and slices of reals and return a real or a `Vec` of reals",
                    ));
                }
                VarKind::Function
            }
        };
        let (mutable, name) = match &param.pat {
            syn::Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => {
                (pat.mutability.is_some(), pat.ident.clone())
            }
            other => return Err(Unsupported::new(
                other.span(),
                "parameters bound by patterns are not on the compiled path yet: name the parameter",
            )),
        };
        let array = matches!(
            param.kind,
            ParamKind::Array { .. } | ParamKind::ArrayRef { .. }
        );
        let var = lowerer.new_var(Var {
            name: name.clone(),
            mutable: false,
            origin: Origin::Param(index),
            kind,
            array,
            annotation: Some(param.ty.clone()),
            span: name.span(),
        });
        params.push(var);
        if matches!(param.kind, ParamKind::Constant | ParamKind::Discrete) {
            lowerer.plain.insert(var);
        }
        // (`mut f: F`, which an `FnMut` needs to be called, is the function
        // itself: the passes call it through `&mut` in the adjoint anyway.)
        if mutable && kind != VarKind::Function {
            if kind == VarKind::Buffer {
                return Err(Unsupported::new(
                    name.span(),
                    "`mut` buffer parameters are not on the compiled path yet",
                ));
            }
            // `mut x: f64` is `let mut x = x;` at the top of the body.
            let local = lowerer.new_var(Var {
                name: name.clone(),
                mutable: true,
                origin: Origin::Local,
                kind,
                array: false,
                annotation: None,
                span: name.span(),
            });
            let init = Expr::new(super::ExprKind::Var(var), name.span());
            prologue.push(lowerer.stmt(
                name.span(),
                StmtKind::Let {
                    var: local,
                    init: Some(init),
                },
            ));
            lowerer.bind(&name, local);
        } else {
            lowerer.bind(&name, var);
        }
    }
    let buffer_output = signature.buffer_output();
    let struct_output = matches!(
        &signature.output,
        crate::signature::Output::Structured(ty) if crate::types::is_user_type(ty)
    );
    let result = lowerer.new_var(Var {
        name: Ident::new("__deltad_result", Span::mixed_site()),
        mutable: false,
        origin: Origin::Result,
        kind: if buffer_output.is_some() {
            VarKind::Buffer
        } else if struct_output {
            VarKind::Struct
        } else {
            VarKind::Scalar
        },
        array: matches!(
            buffer_output,
            Some(crate::signature::BufferOutput::Array(_))
        ),
        annotation: None,
        span: Span::call_site(),
    });
    let mut body = nested::rewrite(body);
    let result_float = matches!(signature.output, crate::signature::Output::Real)
        .then(|| signature.precision.ident(Span::call_site()));
    chains::type_reductions(&mut body, result_float.as_ref());
    let mut body = lowerer.block_into(&body, Some(result))?;
    prologue.append(&mut body.stmts);
    body.stmts = prologue;
    let result_struct = lowerer.struct_value(result);
    if struct_output && result_struct.is_none() {
        return Err(Unsupported::new(
            Span::call_site(),
            "a function returning a user type is on the compiled path when it returns struct literals",
        ));
    }
    Ok(Function {
        vars: lowerer.vars,
        params,
        body,
        result,
        loops: lowerer.loops,
        stmt_count: lowerer.next_stmt,
        block_count: lowerer.next_block,
        fields: lowerer.fields,
        result_struct,
        closures: lowerer.closure_fns,
        passed: lowerer.passed_fns,
    })
}

/// True for `&[f64]`, `Vec<f64>`, `[f64; N]` and references to them (also
/// `f32`): constant parameters indexed like buffers.
fn is_float_buffer(ty: &syn::Type) -> bool {
    let ty = match ty {
        syn::Type::Reference(r) if r.mutability.is_none() => &*r.elem,
        other => other,
    };
    let float = |ty: &syn::Type| crate::signature::float_name(ty).is_some();
    match ty {
        syn::Type::Slice(slice) => float(&slice.elem),
        syn::Type::Array(array) => float(&array.elem),
        syn::Type::Path(path) => {
            let Some(last) = path.path.segments.last() else {
                return false;
            };
            if last.ident != "Vec" {
                return false;
            }
            match &last.arguments {
                syn::PathArguments::AngleBracketed(args) => {
                    args.args.len() == 1
                        && matches!(args.args.first(), Some(syn::GenericArgument::Type(t)) if float(t))
                }
                _ => false,
            }
        }
        _ => false,
    }
}

struct LoopFrame {
    id: LoopId,
    label: Option<Lifetime>,
    /// Where `break value` puts its value (a loop used as an expression).
    target: Option<VarId>,
}

pub(super) struct Lowerer {
    vars: Vec<Var>,
    /// Names in scope, innermost scope last; later bindings shadow.
    scopes: Vec<Vec<(String, VarId)>>,
    loops: Vec<LoopInfo>,
    loop_stack: Vec<LoopFrame>,
    next_stmt: usize,
    next_temp: usize,
    next_block: usize,
    /// Variables bound to a reference to an element (`for x in v.iter()`):
    /// `*x` reads the element.
    by_ref: HashSet<VarId>,
    /// The closures of the body (inlined where called).
    closures: closures::Closures,
    /// The closures passed to callees' function parameters, as functions.
    closure_fns: Vec<crate::ir::ClosureFn>,
    /// The function parameters passed on to callees.
    passed_fns: Vec<crate::ir::PassedFn>,
    /// The shapes of the function parameters (by parameter index), as the
    /// passes take them.
    param_shapes: Vec<Option<crate::functions::CompiledFn>>,
    /// The function's result is a buffer (`Vec` or array of reals).
    returns_buffer: bool,
    /// The function's machine float.
    precision: crate::signature::Precision,
    /// Variables that never hold a differentiated value: constant and
    /// discrete parameters, names taken out of plain values by patterns.
    plain: HashSet<VarId>,
    /// The fields of values of user types the body reads.
    fields: Vec<crate::ir::FieldLeaf>,
    /// Their variables.
    field_vars: Vec<VarId>,
    /// Names of elements of buffers of a user type: the buffer and the
    /// index's variable.
    elements: std::collections::HashMap<VarId, (VarId, VarId)>,
    /// The locals of user types calls return, and their fields' variables.
    call_fields: Vec<(VarId, Vec<structs::FieldLocal>)>,
    /// The locals built by struct literals, and their fields' variables.
    literals: std::collections::HashMap<VarId, structs::Literal>,
    /// The `Vec`s loops build by pushing (`pushes.rs`).
    pushed: Vec<pushes::Pushed>,
    /// Scalar locals whose first value is surely a real (`pushes.rs`).
    reals: HashSet<VarId>,
}

impl Lowerer {
    fn new_var(&mut self, var: Var) -> VarId {
        self.vars.push(var);
        self.vars.len() - 1
    }

    /// A fresh temporary (scalar), not bound to any user name.
    fn temp(&mut self, span: Span) -> VarId {
        let name = format_ident!("__deltad_t{}", self.next_temp, span = Span::mixed_site());
        self.next_temp += 1;
        self.new_var(Var {
            name,
            mutable: true,
            origin: Origin::Temp,
            kind: VarKind::Scalar,
            array: false,
            annotation: None,
            span,
        })
    }

    /// `let t = value;` of a fresh temporary `t`, pushed onto `out`: the
    /// temporary.
    fn let_temp(&mut self, value: Expr, span: Span, out: &mut Vec<Stmt>) -> VarId {
        let temp = self.temp(span);
        let stmt = self.stmt(
            span,
            StmtKind::Let {
                var: temp,
                init: Some(value),
            },
        );
        out.push(stmt);
        temp
    }

    /// Each of `items` lowered into a `let` of a fresh temporary of its
    /// own, in order (tuple parts, array elements written in place): the
    /// temporaries, read.
    fn lower_into_temps<'e>(
        &mut self,
        items: impl IntoIterator<Item = &'e syn::Expr>,
        out: &mut Vec<Stmt>,
    ) -> Lowered<Vec<Expr>> {
        let mut temps = Vec::new();
        for item in items {
            let value = self.expr(item, out)?;
            let temp = self.let_temp(value, item.span(), out);
            temps.push(Expr::new(ExprKind::Var(temp), item.span()));
        }
        Ok(temps)
    }

    /// A new empty block.
    fn new_block(&mut self) -> Block {
        let id = self.next_block;
        self.next_block += 1;
        Block {
            id,
            stmts: Vec::new(),
            items: Vec::new(),
        }
    }

    fn stmt(&mut self, span: Span, kind: StmtKind) -> Stmt {
        let id = self.next_stmt;
        self.next_stmt += 1;
        Stmt { id, span, kind }
    }

    fn bind(&mut self, name: &Ident, var: VarId) {
        let key = syn::ext::IdentExt::unraw(name).to_string();
        self.scopes
            .last_mut()
            .expect("a scope is open")
            .push((key, var));
    }

    fn resolve(&self, name: &Ident) -> Option<VarId> {
        resolve_in(&self.scopes, &syn::ext::IdentExt::unraw(name).to_string())
    }

    /// The variable a path names, if it is one local name.
    fn resolve_path(&self, path: &syn::Path) -> Option<VarId> {
        path.get_ident().and_then(|ident| self.resolve(ident))
    }

    fn with_scope<T>(&mut self, f: impl FnOnce(&mut Self) -> Lowered<T>) -> Lowered<T> {
        self.scopes.push(Vec::new());
        let result = f(self);
        self.scopes.pop();
        result
    }

    fn kind(&self, var: VarId) -> VarKind {
        self.vars[var].kind
    }

    /// Lowers a block; its tail (if any) is assigned to `target`.
    pub(super) fn block_into(
        &mut self,
        block: &syn::Block,
        target: Option<VarId>,
    ) -> Lowered<Block> {
        self.with_scope(|this| {
            let mut out = this.new_block();
            let count = block.stmts.len();
            for (index, stmt) in block.stmts.iter().enumerate() {
                this.stmt_into(stmt, &block.stmts[index + 1..], target, &mut out)?;
            }
            if count == 0 {
                if let Some(target) = target {
                    return Err(Unsupported::new(
                        block.span(),
                        format!(
                            "an empty block has no value to assign to `{}`",
                            this.vars[target].name
                        ),
                    ));
                }
            }
            Ok(out)
        })
    }

    fn enter_loop(&mut self, label: Option<&syn::Label>, target: Option<VarId>) -> LoopId {
        let id = self.loops.len();
        let label = label.map(|l| l.name.clone());
        self.loops.push(LoopInfo {
            label: label.clone(),
            checkpoint: false,
        });
        self.loop_stack.push(LoopFrame { id, label, target });
        id
    }

    fn exit_loop(&mut self) {
        self.loop_stack.pop();
    }

    /// The loop a `break`/`continue` with `label` leaves.
    fn loop_target(&self, label: Option<&Lifetime>, span: Span) -> Lowered<&LoopFrame> {
        let found = match label {
            None => self.loop_stack.last(),
            Some(label) => self
                .loop_stack
                .iter()
                .rev()
                .find(|frame| frame.label.as_ref().is_some_and(|l| l.ident == label.ident)),
        };
        found.ok_or_else(|| {
            Unsupported::new(
                span,
                "`break` out of a labeled block is not on the compiled path yet",
            )
        })
    }
}

/// The variable `name` means in `scopes` (innermost binding first).
fn resolve_in(scopes: &[Vec<(String, VarId)>], name: &str) -> Option<VarId> {
    scopes
        .iter()
        .rev()
        .flat_map(|scope| scope.iter().rev())
        .find(|(n, _)| n == name)
        .map(|(_, var)| *var)
}
