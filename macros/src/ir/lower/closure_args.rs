//! Function values passed to callees' function parameters: the function's
//! own function parameter passed on (`descend(loss, x)`), and closures
//! written at the call (`argmin(|p: &[f64]| -f(q, p), start)`). A closure
//! becomes a function of its own ([`ClosureFn`]), which the passes compile:
//! its parameters as written, then one parameter per variable of the body
//! it reads, which the call passes as arguments after the callee's own.

use std::collections::HashSet;

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::Expr as SynExpr;

use super::stmts::strip;
use super::{Lowered, Lowerer, Unsupported};
use crate::ir::{BufferRef, CallArg, ClosureFn, Expr, ExprKind, FnArg, VarId, VarKind};

/// A closure argument: the function value, and the arguments its captures
/// take (appended to the call's).
pub(super) struct ClosureArg {
    pub closure: usize,
    pub span: Span,
    pub captures: Vec<CallArg>,
}

impl Lowerer {
    /// The caller's own function parameter passed on, as a function
    /// argument (`None` if `arg` is not one).
    pub(super) fn function_param_arg(&self, arg: &SynExpr) -> Option<FnArg> {
        let path = match strip(arg) {
            SynExpr::Path(path) => path,
            // (`&f`, which is a function too.)
            SynExpr::Reference(reference) if reference.mutability.is_none() => {
                match strip(&reference.expr) {
                    SynExpr::Path(path) => path,
                    _ => return None,
                }
            }
            _ => return None,
        };
        let var = self.resolve_path(&path.path)?;
        (self.kind(var) == VarKind::Function).then_some(FnArg::Param(var))
    }

    /// A closure written as the argument for the callee's parameter
    /// `param` (`None` if `arg` is not a closure).
    pub(super) fn closure_arg(
        &mut self,
        arg: &SynExpr,
        callee: &syn::Path,
        param: usize,
    ) -> Lowered<Option<ClosureArg>> {
        let SynExpr::Closure(closure) = strip(arg) else {
            return Ok(None);
        };
        let float = self.precision.ident(Span::call_site());
        let mut params: Vec<TokenStream> = Vec::new();
        let mut own_names = HashSet::new();
        let mut no_grad = Vec::new();
        for input in &closure.inputs {
            let annotated = match input {
                syn::Pat::Type(typed) => match &*typed.pat {
                    syn::Pat::Ident(ident) if ident.by_ref.is_none() && ident.subpat.is_none() => {
                        Some((ident.ident.clone(), &*typed.ty))
                    }
                    _ => None,
                },
                _ => None,
            };
            let Some((name, ty)) = annotated else {
                return Err(Unsupported::new(
                    input.span(),
                    format!("a closure passed to a function on the compiled path names its parameters with their types: `|x: {float}|` or `|x: &[{float}]|`"),
                ));
            };
            // (The arguments function values take on the compiled path:
            // `functions.rs`'s `CompiledFn`; a callee's parameter taking
            // others has no passes a closure could implement.)
            if !is_real_or_slice(ty) {
                return Err(Unsupported::new(
                    ty.span(),
                    format!("a closure passed to a function on the compiled path takes reals and slices of reals (`|x: {float}|`, `|x: &[{float}]|`)"),
                ));
            }
            own_names.insert(name.to_string());
            params.push(quote!(#name: #ty));
            no_grad.push(false);
        }
        // (The results function values give on the compiled path: a real or
        // a `Vec` of reals, `CompiledFn` again.)
        let other_result = match &closure.output {
            syn::ReturnType::Type(_, ty) => {
                crate::signature::float_name(ty).is_none() && !crate::signature::vec_of_float(ty)
            }
            syn::ReturnType::Default => !returns_vec(&closure.body) && !may_be_real(&closure.body),
        };
        if other_result {
            return Err(Unsupported::new(
                closure.span(),
                format!("a closure passed to a function on the compiled path returns a real or a `Vec<{float}>`"),
            ));
        }
        let output = match &closure.output {
            syn::ReturnType::Type(_, ty) => quote!(#ty),
            syn::ReturnType::Default if returns_vec(&closure.body) => {
                quote!(::std::vec::Vec<#float>)
            }
            syn::ReturnType::Default => quote!(#float),
        };
        // The variables it reads, in the order it first names them.
        let names = Names::in_expr(&closure.body);
        // (Its captures are its arguments: writes to them would not reach
        // the caller's variables.)
        let mut assigned = Assigned::default();
        assigned.visit_expr(&closure.body);
        if let Some(name) = assigned.roots.iter().find(|name| {
            !own_names.contains(*name)
                && !assigned.bound.contains(name)
                && super::resolve_in(&self.scopes, name).is_some()
        }) {
            return Err(Unsupported::new(
                closure.span(),
                format!("a closure passed to a function that assigns to `{name}`, a variable of the caller, is not on the compiled path yet"),
            ));
        }
        let mut captures = Vec::new();
        let mut captured: Vec<VarId> = Vec::new();
        let mut untyped = Vec::new();
        for name in names {
            if own_names.contains(&name) {
                continue;
            }
            let Some(var) = super::resolve_in(&self.scopes, &name) else {
                continue;
            };
            if captured.contains(&var) {
                continue;
            }
            captured.push(var);
            let ident = format_ident!("{}", name, span = closure.span());
            let span = closure.span();
            let (ty, plain, arg) = match self.kind(var) {
                VarKind::Buffer => (
                    quote!(&[#float]),
                    false,
                    CallArg::Buffer(BufferRef {
                        var,
                        range: None,
                        by_value: false,
                        span,
                    }),
                ),
                VarKind::Scalar => {
                    let value = CallArg::Value(Expr::new(ExprKind::Var(var), span));
                    let annotation = self.vars[var].annotation.clone();
                    let real = annotation
                        .as_ref()
                        .is_some_and(|ty| crate::signature::float_name(ty).is_some())
                        || self.reals.contains(&var);
                    match annotation {
                        _ if real && !self.plain.contains(&var) => (quote!(#float), false, value),
                        // (Its type from the analysis: see `ClosureFn::untyped`.)
                        None if !self.plain.contains(&var) => {
                            untyped.push((params.len(), var));
                            (quote!(_), false, value)
                        }
                        Some(ty) if crate::types::passed_again(&ty) => (quote!(#ty), true, value),
                        Some(_) => return Err(Unsupported::new(
                            span,
                            format!("this closure reads `{name}`, constant data neither borrowed nor a primitive, which a closure passed to a function does not take on the compiled path yet"),
                        )),
                        None => return Err(Unsupported::new(
                            span,
                            format!("this closure reads `{name}`, whose type the compiled path does not know here: annotate its `let`"),
                        )),
                    }
                }
                // The function parameter, through an adapter implementing
                // the closure's traits for it.
                VarKind::Function => {
                    let crate::ir::Origin::Param(index) = self.vars[var].origin else {
                        return Err(Unsupported::new(span, "a closure calling a function that is not a parameter is not on the compiled path yet"));
                    };
                    let Some(shape) = self.param_shapes[index].clone() else {
                        return Err(Unsupported::new(span, "a closure calling a function parameter that takes other values than reals and slices of reals is not on the compiled path yet"));
                    };
                    let value = |v: crate::functions::FnValue| match v {
                        crate::functions::FnValue::Real => quote!(#float),
                        crate::functions::FnValue::Slice => quote!(&[#float]),
                        crate::functions::FnValue::Vec => quote!(::std::vec::Vec<#float>),
                    };
                    let args = shape.args.iter().map(|&v| value(v));
                    let ret = value(shape.ret);
                    self.passed_fns.push(crate::ir::PassedFn {
                        var,
                        to: crate::ir::PassedTo::Closure {
                            closure: self.closure_fns.len(),
                            param: params.len(),
                        },
                        span,
                    });
                    let adapter = self.passed_fns.len() - 1;
                    (
                        quote!(impl Fn(#(#args),*) -> #ret),
                        false,
                        CallArg::Function(FnArg::Passed { var, adapter, span }),
                    )
                }
                VarKind::Closure => {
                    return Err(Unsupported::new(
                        span,
                        "a closure passed to a function calling a closure of the body is not on the compiled path yet",
                    ))
                }
                VarKind::Struct | VarKind::Structs => {
                    return Err(Unsupported::new(
                        span,
                        "a closure passed to a function reading values of user types is not on the compiled path yet",
                    ))
                }
            };
            params.push(quote!(#ident: #ty));
            no_grad.push(plain);
            captures.push(arg);
        }
        let own_count = closure.inputs.len();
        let body = &closure.body;
        let name = format_ident!("__deltad_closure{}", self.closure_fns.len());
        let item: syn::ItemFn = syn::parse2(quote! {
            fn #name(#(#params),*) -> #output {
                #body
            }
        })
        .map_err(|e| Unsupported::new(closure.span(), e.to_string()))?;
        self.closure_fns.push(ClosureFn {
            item,
            no_grad,
            callee: callee.clone(),
            param,
            own: own_count,
            untyped,
            span: closure.span(),
        });
        Ok(Some(ClosureArg {
            closure: self.closure_fns.len() - 1,
            span: closure.span(),
            captures,
        }))
    }
}

/// True for a real or a shared slice of reals, the arguments function
/// values take on the compiled path.
fn is_real_or_slice(ty: &syn::Type) -> bool {
    use crate::signature::float_name;
    match ty {
        syn::Type::Reference(r) if r.mutability.is_none() => {
            matches!(&*r.elem, syn::Type::Slice(slice) if float_name(&slice.elem).is_some())
        }
        ty => float_name(ty).is_some(),
    }
}

/// False if a closure's value is by its form not a real: an array, a tuple
/// or a unit.
fn may_be_real(body: &SynExpr) -> bool {
    match strip(body) {
        SynExpr::Array(_) | SynExpr::Repeat(_) | SynExpr::Tuple(_) => false,
        SynExpr::Block(block) => match block.block.stmts.last() {
            Some(syn::Stmt::Expr(tail, None)) => may_be_real(tail),
            _ => false,
        },
        _ => true,
    }
}

/// True if a closure's value is by its form a `Vec`: a `collect()`, a
/// `to_vec()`, `vec![..]`, or a local its block makes so.
fn returns_vec(body: &SynExpr) -> bool {
    let vec_value = |expr: &SynExpr| match strip(expr) {
        SynExpr::MethodCall(call) => call.method == "collect" || call.method == "to_vec",
        SynExpr::Macro(mac) => mac.mac.path.is_ident("vec"),
        SynExpr::Call(call) => matches!(
            strip(&call.func),
            SynExpr::Path(path) if path.path.segments.len() == 2
                && path.path.segments[0].ident == "Vec"
        ),
        _ => false,
    };
    match strip(body) {
        SynExpr::Block(block) => {
            let Some(syn::Stmt::Expr(tail, None)) = block.block.stmts.last() else {
                return false;
            };
            if vec_value(tail) {
                return true;
            }
            let SynExpr::Path(path) = strip(tail) else {
                return false;
            };
            block.block.stmts.iter().any(|stmt| match stmt {
                syn::Stmt::Local(local) => match &local.pat {
                    syn::Pat::Ident(ident) => {
                        path.path.is_ident(&ident.ident)
                            && local
                                .init
                                .as_ref()
                                .is_some_and(|init| vec_value(&init.expr))
                    }
                    // (`let v: Vec<f64> = ..`: by its type.)
                    syn::Pat::Type(typed) => {
                        matches!(&*typed.pat, syn::Pat::Ident(ident) if path.path.is_ident(&ident.ident))
                            && crate::signature::vec_of_float(&typed.ty)
                    }
                    _ => false,
                },
                _ => false,
            })
        }
        other => vec_value(other),
    }
}

/// The variables code assigns to (`x = ..`, `x += ..`, `x[i] = ..`,
/// `x.a = ..`), by the name at the root of the place.
/// Names bound inside the code are left out (`bound`): its own locals.
#[derive(Default)]
struct Assigned {
    roots: Vec<String>,
    bound: Vec<String>,
}

impl Assigned {
    fn place(&mut self, place: &SynExpr) {
        match strip(place) {
            SynExpr::Path(path) => {
                if let Some(ident) = path.path.get_ident() {
                    self.roots.push(ident.to_string());
                }
            }
            SynExpr::Index(index) => self.place(&index.expr),
            SynExpr::Field(field) => self.place(&field.base),
            SynExpr::Unary(unary) if matches!(unary.op, syn::UnOp::Deref(_)) => {
                self.place(&unary.expr)
            }
            _ => {}
        }
    }
}

impl<'ast> Visit<'ast> for Assigned {
    fn visit_expr_assign(&mut self, assign: &'ast syn::ExprAssign) {
        self.place(&assign.left);
        syn::visit::visit_expr_assign(self, assign);
    }

    fn visit_pat_ident(&mut self, pat: &'ast syn::PatIdent) {
        self.bound.push(pat.ident.to_string());
        syn::visit::visit_pat_ident(self, pat);
    }

    fn visit_expr_binary(&mut self, binary: &'ast syn::ExprBinary) {
        if crate::syntax::is_compound_assignment(&binary.op) {
            self.place(&binary.left);
        }
        syn::visit::visit_expr_binary(self, binary);
    }
}

/// The single-segment names code reads (macros' tokens too), in order.
#[derive(Default)]
pub(super) struct Names {
    found: Vec<String>,
}

impl Names {
    /// The names `expr` reads.
    pub(super) fn in_expr(expr: &SynExpr) -> Vec<String> {
        let mut names = Names::default();
        names.visit_expr(expr);
        names.found
    }

    /// The names `stmts` read.
    pub(super) fn in_stmts(stmts: &[syn::Stmt]) -> Vec<String> {
        let mut names = Names::default();
        for stmt in stmts {
            names.visit_stmt(stmt);
        }
        names.found
    }

    fn tokens(&mut self, tokens: TokenStream) {
        for token in tokens {
            match token {
                TokenTree::Ident(ident) => self.found.push(ident.to_string()),
                TokenTree::Group(group) => self.tokens(group.stream()),
                _ => {}
            }
        }
    }
}

impl<'ast> Visit<'ast> for Names {
    fn visit_expr_path(&mut self, path: &'ast syn::ExprPath) {
        if let Some(ident) = path.path.get_ident() {
            self.found.push(ident.to_string());
        }
        syn::visit::visit_expr_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone());
    }
}
