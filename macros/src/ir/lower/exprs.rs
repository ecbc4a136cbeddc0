//! Expressions: arithmetic, math methods, element reads, casts, calls,
//! vector primitives, new buffers; control flow and calls inside them are
//! hoisted into temporaries.

use syn::spanned::Spanned;
use syn::Expr as SynExpr;

use super::stmts::{is_control_flow, strip};
use super::{Lowered, Lowerer, Unsupported};
use crate::ir::{
    ArithOp, BufferRef, Call, CallArg, Expr, ExprKind, FnArg, Math, NewBuffer, Origin, Primitive,
    StmtKind, VarId, VarKind,
};

impl Lowerer {
    /// Lowers a value expression; statements it needs first (hoisted calls
    /// and control flow) go to `out`.
    pub(super) fn expr(&mut self, expr: &SynExpr, out: &mut Vec<crate::ir::Stmt>) -> Lowered<Expr> {
        let span = expr.span();
        let new = |kind| Ok(Expr::new(kind, span));
        match expr {
            SynExpr::Paren(paren) => self.expr(&paren.expr, out),
            SynExpr::Group(group) => self.expr(&group.expr, out),
            SynExpr::Lit(lit) => match &lit.lit {
                syn::Lit::Int(_) | syn::Lit::Float(_) | syn::Lit::Bool(_) => {
                    new(ExprKind::Lit(lit.lit.clone()))
                }
                _ => self.opaque(expr),
            },
            SynExpr::Path(path) if path.qself.is_none() => match self.resolve_path(&path.path) {
                Some(var) => {
                    if self.kind(var) == VarKind::Closure {
                        return Err(Unsupported::new(
                            span,
                            "a closure used other than by calling it (passed on, stored) is not on the compiled path yet",
                        ));
                    }
                    if self.kind(var) == VarKind::Buffer {
                        return Err(Unsupported::new(
                            span,
                            "a buffer used as a value (moved, compared, printed..) is not on the compiled path yet",
                        ));
                    }
                    if matches!(self.kind(var), VarKind::Struct | VarKind::Structs) {
                        return Err(Unsupported::new(
                            span,
                            "a value of a user type used whole (passed on, returned, compared..) is not on the compiled path yet: the compiled path reads its fields",
                        ));
                    }
                    new(ExprKind::Var(var))
                }
                None => self.opaque(expr),
            },
            SynExpr::Unary(unary) => match unary.op {
                syn::UnOp::Neg(_) => new(ExprKind::Neg(Box::new(self.expr(&unary.expr, out)?))),
                syn::UnOp::Not(_) => new(ExprKind::Not(Box::new(self.expr(&unary.expr, out)?))),
                syn::UnOp::Deref(_) => {
                    // `*x` (`**x`) of a name bound to an element: the element.
                    let inner = match strip(&unary.expr) {
                        SynExpr::Path(_) | SynExpr::Unary(_) => self.expr(&unary.expr, out).ok(),
                        _ => None,
                    };
                    match inner.map(|e| e.kind) {
                        Some(ExprKind::Var(var)) if self.by_ref.contains(&var) => {
                            new(ExprKind::Var(var))
                        }
                        // `*data` of a plain reference: plain code.
                        Some(ExprKind::Var(var)) if self.plain.contains(&var) => self.opaque(expr),
                        _ => Err(Unsupported::new(
                            span,
                            "dereferencing is not on the compiled path yet, except of an element a loop or a closure takes (`for x in v.iter()`, `.map(|x| *x)`)",
                        )),
                    }
                }
                _ => self.opaque(expr),
            },
            SynExpr::Binary(binary) => {
                let arith = match binary.op {
                    syn::BinOp::Add(_) => Some(ArithOp::Add),
                    syn::BinOp::Sub(_) => Some(ArithOp::Sub),
                    syn::BinOp::Mul(_) => Some(ArithOp::Mul),
                    syn::BinOp::Div(_) => Some(ArithOp::Div),
                    syn::BinOp::Rem(_) => Some(ArithOp::Rem),
                    _ => None,
                };
                if let Some(op) = arith {
                    let left = self.expr(&binary.left, out)?;
                    let right = self.expr(&binary.right, out)?;
                    return new(ExprKind::Arith(op, Box::new(left), Box::new(right)));
                }
                let compare = matches!(
                    binary.op,
                    syn::BinOp::Lt(_)
                        | syn::BinOp::Le(_)
                        | syn::BinOp::Gt(_)
                        | syn::BinOp::Ge(_)
                        | syn::BinOp::Eq(_)
                        | syn::BinOp::Ne(_)
                );
                let left = self.expr(&binary.left, out)?;
                let short_circuit = matches!(binary.op, syn::BinOp::And(_) | syn::BinOp::Or(_));
                let right = if short_circuit {
                    // The right operand runs only sometimes: what it needs
                    // first stays behind the left one, in an `if`.
                    let mut hoisted = Vec::new();
                    let right = self.expr(&binary.right, &mut hoisted)?;
                    if !hoisted.is_empty() {
                        let and = matches!(binary.op, syn::BinOp::And(_));
                        return self.short_circuit(left, right, hoisted, and, span, out);
                    }
                    right
                } else {

                    self.expr(&binary.right, out)?
                };
                if compare {
                    new(ExprKind::Compare(binary.op, Box::new(left), Box::new(right)))
                } else {
                    new(ExprKind::Logic(binary.op, Box::new(left), Box::new(right)))
                }
            }
            SynExpr::Cast(cast) => {
                let inner = self.expr(&cast.expr, out)?;
                new(ExprKind::Cast(Box::new(inner), (*cast.ty).clone()))
            }
            SynExpr::Index(index) => self.index(index, out),
            SynExpr::MethodCall(call) => self.method_call(call, out),
            SynExpr::Call(call) => self.call(call, out),
            SynExpr::Field(field) => {
                // `x.sin_cos().0` / `.1`.
                if let (SynExpr::MethodCall(call), syn::Member::Unnamed(index)) =
                    (strip(&field.base), &field.member)
                {
                    if call.method == "sin_cos" && call.args.is_empty() && index.index < 2 {
                        let receiver = self.expr(&call.receiver, out)?;
                        let name = if index.index == 0 { "sin" } else { "cos" };
                        let math = Math::named(name).expect("sin and cos are math");
                        return new(ExprKind::Math {
                            math,
                            args: vec![receiver],
                            path_style: None,
                        });
                    }
                }
                if let Some((buffer, index, members)) = self.elem_field_chain(expr) {
                    let index = self.expr(index, out)?;
                    let var = self.elem_field(buffer, index, members, span, out);
                    return new(ExprKind::Var(var));
                }
                if let Some((base, members)) = self.field_chain(expr) {
                    return new(ExprKind::Var(self.field(base, members, span, out)?));
                }
                if let Some(call) = self.nested_call(expr, out)? {
                    let temp = self.let_temp(Expr::new(ExprKind::Call(call), span), span, out);
                    return new(ExprKind::Var(temp));
                }
                if let Some(var) = self.call_field(expr, out)? {
                    return new(ExprKind::Var(var));
                }
                self.opaque(expr)
            }
            _ if is_control_flow(expr) => {
                let temp = self.temp(span);
                out.push(self.stmt(
                    span,
                    StmtKind::Let {
                        var: temp,
                        init: None,
                    },
                ));
                self.value_into(expr, temp, out)?;
                new(ExprKind::Var(temp))
            }
            SynExpr::Macro(mac) => {
                let name = mac
                    .mac
                    .path
                    .segments
                    .last()
                    .map(|s| s.ident.to_string())
                    .unwrap_or_default();
                if name == "vec" {
                    return Err(Unsupported::new(
                        span,
                        "`vec![..]` is on the compiled path only as the value of a `let`",
                    ));
                }
                if name == "generic" || name == "generic_fwd" {
                    return Err(Unsupported::new(
                        span,
                        format!("calls through `deltad::{name}!` are not on the compiled path yet"),
                    ));
                }
                self.opaque(expr)
            }
            SynExpr::Closure(_) => Err(Unsupported::new(
                span,
                "closures are not on the compiled path yet",
            )),
            SynExpr::Try(_) => Err(Unsupported::new(
                span,
                "`?` is not on the compiled path yet",
            )),
            SynExpr::Reference(_) => Err(Unsupported::new(
                span,
                "references are on the compiled path only as arguments of calls",
            )),
            SynExpr::Assign(_) => Err(Unsupported::new(
                span,
                "an assignment used as a value is not on the compiled path",
            )),
            SynExpr::Return(_) | SynExpr::Break(_) | SynExpr::Continue(_) => Err(Unsupported::new(
                span,
                "`return`, `break` and `continue` inside an expression are not on the compiled path yet: put them in their own statement",
            )),
            SynExpr::ForLoop(_) | SynExpr::While(_) => Err(Unsupported::new(
                span,
                "a loop used as a value is not on the compiled path",
            )),
            _ => self.opaque(expr),
        }
    }

    /// `left && right` (`and`) or `left || right` whose right operand needs
    /// the statements `hoisted` first: an `if` on `left` that runs them only
    /// when `right` is evaluated.
    fn short_circuit(
        &mut self,
        left: Expr,
        right: Expr,
        hoisted: Vec<crate::ir::Stmt>,
        and: bool,
        span: proc_macro2::Span,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<Expr> {
        let temp = self.temp(span);
        out.push(self.stmt(
            span,
            StmtKind::Let {
                var: temp,
                init: None,
            },
        ));
        let assign = |this: &mut Self, value: Expr| {
            this.stmt(
                span,
                StmtKind::Assign {
                    place: crate::ir::Place::Var(temp),
                    op: crate::ir::AssignOp::Set,
                    value,
                    first: true,
                },
            )
        };
        let mut evaluated = self.new_block();
        evaluated.stmts = hoisted;
        let right_assign = assign(self, right);
        evaluated.stmts.push(right_assign);
        let mut decided = self.new_block();
        let constant: syn::LitBool = syn::LitBool::new(!and, span);
        let decided_assign = assign(
            self,
            Expr::new(ExprKind::Lit(syn::Lit::Bool(constant)), span),
        );
        decided.stmts.push(decided_assign);
        let (then, els) = if and {
            (evaluated, decided)
        } else {
            (decided, evaluated)
        };
        out.push(self.stmt(
            span,
            StmtKind::If {
                cond: left,
                then,
                els: Some(els),
            },
        ));
        Ok(Expr::new(ExprKind::Var(temp), span))
    }

    fn index(&mut self, index: &syn::ExprIndex, out: &mut Vec<crate::ir::Stmt>) -> Lowered<Expr> {
        let span = index.span();
        let base = match strip(&index.expr) {
            SynExpr::Path(path) if path.qself.is_none() => self.resolve_path(&path.path),
            _ => None,
        };
        match base {
            Some(var) if self.kind(var) == VarKind::Buffer => {
                if crate::syntax::is_range(&index.index) {
                    return Err(Unsupported::new(
                        span,
                        "a range of a buffer is on the compiled path only as an argument `&v[a..b]`",
                    ));
                }
                let at = self.expr(&index.index, out)?;
                Ok(Expr::new(ExprKind::Elem(var, Box::new(at)), span))
            }
            Some(var) if self.kind(var) == VarKind::Structs => Err(Unsupported::new(
                span,
                "an element of a buffer of a user type is on the compiled path when the body reads its fields or passes it to a differentiated function",
            )),
            _ => match self.param_field_chain(&index.expr) {
                Some((base, members)) => {
                    if crate::syntax::is_range(&index.index) {
                        return Err(Unsupported::new(
                            span,
                            "a range of a field is not on the compiled path yet: index its elements",
                        ));
                    }
                    let elem = self.expr(&index.index, out)?;
                    let var = self.field_elem(base, members, elem, span, out);
                    Ok(Expr::new(ExprKind::Var(var), span))
                }
                None => self.opaque(&SynExpr::Index(index.clone())),
            },
        }
    }

    fn method_call(
        &mut self,
        call: &syn::ExprMethodCall,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<Expr> {
        let span = call.span();
        let name = call.method.to_string();
        if call.turbofish.is_none() {
            if let Some(math) = Math::named(&name) {
                if call.args.len() + 1 == math.arity() {
                    let mut args = vec![self.expr(&call.receiver, out)?];
                    for arg in &call.args {
                        args.push(self.expr(arg, out)?);
                    }
                    return Ok(Expr::new(
                        ExprKind::Math {
                            math,
                            args,
                            path_style: None,
                        },
                        span,
                    ));
                }
            }
        }
        if let Some(lowered) = self.chain(call, out)? {
            return Ok(lowered);
        }
        let receiver_var = match strip(&call.receiver) {
            SynExpr::Path(path) if path.qself.is_none() => self.resolve_path(&path.path),
            _ => None,
        };
        if let Some(var) = receiver_var {
            if matches!(self.kind(var), VarKind::Buffer | VarKind::Structs) {
                return match name.as_str() {
                    "len" if call.args.is_empty() => Ok(Expr::new(ExprKind::Len(var), span)),
                    "is_empty" if call.args.is_empty() => {
                        let len = Expr::new(ExprKind::Len(var), span);
                        let zero = Expr::new(
                            ExprKind::Lit(syn::Lit::Int(syn::LitInt::new("0usize", span))),
                            span,
                        );
                        Ok(Expr::new(
                            ExprKind::Compare(
                                syn::BinOp::Eq(syn::Token![==](span)),
                                Box::new(len),
                                Box::new(zero),
                            ),
                            span,
                        ))
                    }
                    _ => Err(Unsupported::new(
                        span,
                        format!("the method `{name}` of a buffer is not on the compiled path yet (iterator chains are not either: write the loop)"),
                    )),
                };
            }
            if matches!(name.as_str(), "clone" | "to_owned") && call.args.is_empty() {
                return Ok(Expr::new(ExprKind::Var(var), span));
            }
        }
        self.opaque(&SynExpr::MethodCall(call.clone()))
    }

    fn call(&mut self, call: &syn::ExprCall, out: &mut Vec<crate::ir::Stmt>) -> Lowered<Expr> {
        let span = call.span();
        let SynExpr::Path(path) = strip(&call.func) else {
            return self.opaque(&SynExpr::Call(call.clone()));
        };
        if path.qself.is_some() {
            return self.opaque(&SynExpr::Call(call.clone()));
        }
        let path = &path.path;
        if path.segments.len() == 1 && self.resolve_path(path).is_some() {
            if let Some(def) = self.closure_named(&call.func) {
                let args: Vec<SynExpr> = call.args.iter().cloned().collect();
                return self.call_closure(&def, &args, span, out);
            }
            if let Some(FnArg::Param(var)) = self.function_param_arg(&call.func) {
                let call_ir = self.function_param_call(call, var, out)?;
                let temp = self.let_temp(Expr::new(ExprKind::Call(call_ir), span), span, out);
                return Ok(Expr::new(ExprKind::Var(temp), span));
            }
            return Err(Unsupported::new(
                span,
                "calling a function value is not on the compiled path yet",
            ));
        }
        let names = crate::syntax::segment_names(path);
        // `f64::sin(x)`, `f64::max(a, b)`.
        if names.len() == 2 && crate::methods::is_float_type_name(&names[0]) {
            if let Some(math) = Math::named(&names[1]) {
                if call.args.len() == math.arity() {
                    let mut args = Vec::new();
                    for arg in &call.args {
                        args.push(self.expr(arg, out)?);
                    }
                    return Ok(Expr::new(
                        ExprKind::Math {
                            math,
                            args,
                            path_style: Some(path.clone()),
                        },
                        span,
                    ));
                }
            }
            return self.opaque(&SynExpr::Call(call.clone()));
        }
        // `deltad::sum(&v)`, `deltad::dot(&a, &b)`, `deltad::log_sum_exp(&v)`.
        if names.len() == 2 && names[0] == "deltad" {
            let primitive = match names[1].as_str() {
                "sum" => Some((Primitive::Sum, 1)),
                "dot" => Some((Primitive::Dot, 2)),
                "log_sum_exp" => Some((Primitive::LogSumExp, 1)),
                _ => None,
            };
            if let Some((primitive, arity)) = primitive {
                if call.args.len() != arity {
                    return self.opaque(&SynExpr::Call(call.clone()));
                }
                let mut buffers = Vec::new();
                for arg in &call.args {
                    match self.buffer_ref(arg, out)? {
                        Some(buffer) => buffers.push(buffer),
                        None => {
                            return Err(Unsupported::new(
                                arg.span(),
                                "the vector primitives take a local buffer or a slice parameter (or a range of one) on the compiled path",
                            ))
                        }
                    }
                }
                return Ok(Expr::new(ExprKind::Primitive(primitive, buffers), span));
            }
        }
        let Some(call_ir) = self.user_call(call, out)? else {
            return self.opaque(&SynExpr::Call(call.clone()));
        };
        // A call's value always lives in a temporary of its own, so the
        // adjoint has one statement to mirror the call at.
        let temp = self.let_temp(Expr::new(ExprKind::Call(call_ir), span), span, out);
        Ok(Expr::new(ExprKind::Var(temp), span))
    }

    /// A call of a function deltad may differentiate (a user function, not
    /// a method path of a float type or a vector primitive), with its
    /// arguments lowered; `None` for calls deltad leaves as plain code.
    pub(super) fn user_call(
        &mut self,
        call: &syn::ExprCall,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<Option<Call>> {
        let span = call.span();
        let SynExpr::Path(path) = strip(&call.func) else {
            return Ok(None);
        };
        if path.qself.is_some() {
            return Ok(None);
        }
        let path = &path.path;
        match crate::syntax::classify_call(path) {
            crate::syntax::CallKind::User => {}
            crate::syntax::CallKind::Derivative(_) => {
                return Err(Unsupported::new(span, super::nested::DERIVATIVES))
            }
            _ => return Ok(None),
        }
        if path.segments.len() == 1 && self.resolve_path(path).is_some() {
            return Ok(None);
        }
        if path.segments.iter().any(|s| !s.arguments.is_empty()) {
            return Err(Unsupported::new(
                span,
                "calls with generic arguments are not on the compiled path yet",
            ));
        }
        let mut args = Vec::new();
        let mut captures = Vec::new();
        for (param, arg) in call.args.iter().enumerate() {
            if let Some(FnArg::Param(var)) = self.function_param_arg(arg) {
                let span = arg.span();
                self.passed_fns.push(crate::ir::PassedFn {
                    var,
                    to: crate::ir::PassedTo::Callee {
                        callee: path.clone(),
                        param,
                    },
                    span,
                });
                let adapter = self.passed_fns.len() - 1;
                args.push(CallArg::Function(FnArg::Passed { var, adapter, span }));
                continue;
            }
            if let Some(closure) = self.closure_arg(arg, path, param)? {
                args.push(CallArg::Function(FnArg::Closure {
                    closure: closure.closure,
                    captures: Vec::new(),
                    span: closure.span,
                }));
                captures.push((param, closure.captures));
                continue;
            }
            args.push(self.call_arg(arg, out)?);
        }
        // A closure's captures: arguments after the callee's own.
        for (param, taken) in captures {
            let range = args.len()..args.len() + taken.len();
            args.extend(taken);
            if let CallArg::Function(FnArg::Closure { captures, .. }) = &mut args[param] {
                *captures = range.collect();
            }
        }
        reject_struct_passed_twice(&args)?;
        Ok(Some(Call {
            path: path.clone(),
            checkpoint: false,
            args,
            written: Box::new(SynExpr::Call(call.clone())),
            read: Vec::new(),
        }))
    }

    /// A call of the function parameter `var` (`f(&x)`): a call of the
    /// generated module through which the passes call it, the function
    /// its first argument.
    pub(super) fn function_param_call(
        &mut self,
        call: &syn::ExprCall,
        var: VarId,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<Call> {
        let Origin::Param(index) = self.vars[var].origin else {
            unreachable!("function variables are parameters");
        };
        let mut args = vec![CallArg::Function(FnArg::Param(var))];
        for arg in &call.args {
            args.push(self.call_arg(arg, out)?);
        }
        if let Some(value) = args.iter().find_map(|arg| match arg {
            CallArg::Struct { span, .. } | CallArg::Literal { span, .. } => Some(*span),
            _ => None,
        }) {
            return Err(Unsupported::new(
                value,
                "function parameters are on the compiled path when they take reals and slices of reals",
            ));
        }
        let module = crate::names::function_param_module(index);
        Ok(Call {
            path: syn::parse_quote!(#module),
            checkpoint: false,
            args,
            written: Box::new(SynExpr::Call(call.clone())),
            read: Vec::new(),
        })
    }

    /// One argument of a call of a function deltad may differentiate.
    fn call_arg(&mut self, arg: &SynExpr, out: &mut Vec<crate::ir::Stmt>) -> Lowered<CallArg> {
        if let Some(value) = self.literal_arg(arg, out)? {
            let leaves = value
                .leaves()
                .into_iter()
                .map(|(_, var)| Expr::new(ExprKind::Var(var), arg.span()))
                .collect();
            return Ok(CallArg::Literal {
                value,
                leaves,
                by_ref: matches!(strip(arg), SynExpr::Reference(_)),
                span: arg.span(),
            });
        }
        if let Some((var, index)) = self.struct_arg(arg, out)? {
            return Ok(CallArg::Struct {
                var,
                index: index.map(Box::new),
                span: arg.span(),
            });
        }
        if let Some(buffer) = self.buffer_ref(arg, out)? {
            return Ok(CallArg::Buffer(buffer));
        }
        // `[a, b, c]` by value, and `&[a, b, c]` with differentiated
        // elements: a buffer of its own.
        if let Some(buffer) = self.literal_buffer_arg(arg, out)? {
            return Ok(CallArg::Buffer(buffer));
        }
        if let SynExpr::Reference(reference) = strip(arg) {
            if reference.mutability.is_some() {
                return Err(Unsupported::new(
                    arg.span(),
                    "`&mut` arguments are not on the compiled path yet",
                ));
            }
            // A reference to plain data (`&data`): passed as written.
            let value = self.opaque(arg)?;
            return Ok(CallArg::Plain(value));
        }
        Ok(CallArg::Value(self.expr(arg, out)?))
    }

    /// True if `expr` reads a variable of the body (else it is constant
    /// data written in place).
    /// An argument that lists a buffer's elements: an array or `Vec` by
    /// value (`[a, b, c]`, `[x; 3]`, `vec![..]`), passed as a buffer of its
    /// own like a local (a constant one too: the callee's parameter may
    /// differentiate it), or `&[a, b, c]` / `&vec![..]` reading variables (a
    /// reference to constant elements is passed as written).
    fn literal_buffer_arg(
        &mut self,
        arg: &SynExpr,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<Option<BufferRef>> {
        let (elements, by_value) = match strip(arg) {
            SynExpr::Reference(reference) if reference.mutability.is_none() => {
                (&*reference.expr, false)
            }
            value @ (SynExpr::Array(_) | SynExpr::Repeat(_) | SynExpr::Macro(_)) => (value, true),
            _ => return Ok(None),
        };
        let new = match strip(elements) {
            // Elements with calls or control flow: each computed in a
            // `let` of its own first, as the user would write them.
            SynExpr::Array(array) if array.elems.iter().any(calls_or_branches) => {
                NewBuffer::List(self.lower_into_temps(&array.elems, out)?)
            }
            _ => match self.new_buffer(elements)? {
                Some(new) => new,
                None => return Ok(None),
            },
        };
        let elements_expr = Expr::new(ExprKind::NewBuffer(new), arg.span());
        if !by_value && !self.reads_variables(&elements_expr) {
            return Ok(None);
        }
        let temp = self.buffer_temp(arg.span());
        self.vars[temp].array = matches!(strip(elements), SynExpr::Array(_) | SynExpr::Repeat(_));
        out.push(self.stmt(
            arg.span(),
            StmtKind::Let {
                var: temp,
                init: Some(elements_expr),
            },
        ));
        Ok(Some(BufferRef {
            var: temp,
            range: None,
            by_value,
            span: arg.span(),
        }))
    }

    fn reads_variables(&self, expr: &Expr) -> bool {
        let mut reads = false;
        expr.each_subexpr(&mut |e| {
            reads |= match &e.kind {
                ExprKind::Var(_) | ExprKind::Elem(..) | ExprKind::Len(_) => true,
                ExprKind::Opaque { reads, .. } => !reads.is_empty(),
                _ => false,
            }
        });
        reads
    }

    /// A buffer argument: `&v`, `v` (a slice parameter), `&v[a..b]`,
    /// `v.as_slice()`. `None` if `arg` is not one.
    pub(super) fn buffer_ref(
        &mut self,
        arg: &SynExpr,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<Option<BufferRef>> {
        let span = arg.span();
        let (inner, referenced) = match strip(arg) {
            SynExpr::Reference(reference) if reference.mutability.is_none() => {
                (strip(&reference.expr), true)
            }
            other => (other, false),
        };
        let buffer = |this: &Self, expr: &SynExpr| match strip(expr) {
            SynExpr::Path(path) if path.qself.is_none() => this
                .resolve_path(&path.path)
                .filter(|var| this.kind(*var) == VarKind::Buffer),
            _ => None,
        };
        match inner {
            SynExpr::Path(_) => Ok(buffer(self, inner).map(|var| BufferRef {
                var,
                range: None,
                by_value: !referenced && !matches!(self.vars[var].origin, Origin::Param(_)),
                span,
            })),
            SynExpr::MethodCall(call)
                if call.method == "as_slice" && call.args.is_empty() && !referenced =>
            {
                Ok(buffer(self, &call.receiver).map(|var| BufferRef {
                    var,
                    range: None,
                    by_value: false,
                    span,
                }))
            }
            SynExpr::Index(index) if referenced => {
                let Some(var) = buffer(self, &index.expr) else {
                    return Ok(None);
                };
                let SynExpr::Range(range) = strip(&index.index) else {
                    return Ok(None);
                };
                if matches!(range.limits, syn::RangeLimits::Closed(_)) {
                    return Err(Unsupported::new(
                        range.span(),
                        "inclusive ranges of buffers are not on the compiled path yet: write `a..b + 1`",
                    ));
                }
                let start = match &range.start {
                    Some(start) => Some(Box::new(self.expr(start, out)?)),
                    None => None,
                };
                let end = match &range.end {
                    Some(end) => Some(Box::new(self.expr(end, out)?)),
                    None => None,
                };
                Ok(Some(BufferRef {
                    var,
                    range: Some((start, end)),
                    by_value: false,
                    span,
                }))
            }
            _ => Ok(None),
        }
    }

    /// The buffer a `let` makes, if its value is `vec![..]` or an array
    /// literal.
    pub(super) fn new_buffer(&mut self, init: &SynExpr) -> Lowered<Option<NewBuffer>> {
        let mut hoisted = Vec::new();
        let made = match strip(init) {
            SynExpr::Macro(mac)
                if mac
                    .mac
                    .path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "vec") =>
            {
                let args = mac
                    .mac
                    .parse_body_with(crate::macro_args::parse_vec_args)
                    .map_err(|e| Unsupported::new(e.span(), e.to_string()))?;
                match args {
                    crate::macro_args::MacroArgs::Repeat(elem, len) => NewBuffer::Repeat {
                        elem: Box::new(self.expr(&elem, &mut hoisted)?),
                        len: Box::new(self.expr(&len, &mut hoisted)?),
                    },
                    crate::macro_args::MacroArgs::List(items) => {
                        let mut elems = Vec::new();
                        for item in &items {
                            elems.push(self.expr(item, &mut hoisted)?);
                        }
                        NewBuffer::List(elems)
                    }
                    _ => return Ok(None),
                }
            }
            SynExpr::Repeat(repeat) => NewBuffer::Repeat {
                elem: Box::new(self.expr(&repeat.expr, &mut hoisted)?),
                len: Box::new(self.expr(&repeat.len, &mut hoisted)?),
            },
            SynExpr::Array(array) => {
                let mut elems = Vec::new();
                for item in &array.elems {
                    elems.push(self.expr(item, &mut hoisted)?);
                }
                NewBuffer::List(elems)
            }
            _ => return Ok(None),
        };
        let calls = made.elems().iter().any(|e| e.has_call());
        if !hoisted.is_empty() || calls {
            return Err(Unsupported::new(
                init.span(),
                "calls and control flow inside `vec![..]` are not on the compiled path yet: compute the values in `let`s first",
            ));
        }
        Ok(Some(made))
    }
}

/// True if `expr` holds a call or control flow (which a buffer's elements
/// written in place cannot: they are computed in `let`s of their own).
fn calls_or_branches(expr: &SynExpr) -> bool {
    struct Finds(bool);
    impl<'ast> syn::visit::Visit<'ast> for Finds {
        fn visit_expr(&mut self, expr: &'ast SynExpr) {
            match expr {
                SynExpr::Call(_)
                | SynExpr::If(_)
                | SynExpr::Match(_)
                | SynExpr::Block(_)
                | SynExpr::Macro(_)
                | SynExpr::Loop(_)
                | SynExpr::While(_)
                | SynExpr::ForLoop(_) => self.0 = true,
                _ => syn::visit::visit_expr(self, expr),
            }
        }
    }
    let mut finds = Finds(false);
    syn::visit::Visit::visit_expr(&mut finds, expr);
    finds.0
}

/// A value of a user type, or elements of one buffer of them, passed to
/// two parameters of one call (`pdot(p, p)`, `pair(&ps[i], &ps[j])`): the
/// callee's adjoint would add into the one adjoint through two borrows at
/// once, which the compiled passes do not split yet (a buffer of reals
/// passed twice they do: the second argument's adjoint goes through a
/// buffer of its own).
fn reject_struct_passed_twice(args: &[CallArg]) -> Lowered<()> {
    let mut passed: Vec<VarId> = Vec::new();
    for arg in args {
        if let CallArg::Struct { var, span, .. } = arg {
            if passed.contains(var) {
                return Err(Unsupported::new(
                    *span,
                    "passing one value of a user type (or elements of one buffer of them) to two parameters of a call is not on the compiled path yet: without `compiled`, the function takes the tape, which accepts it",
                ));
            }
            passed.push(*var);
        }
    }
    Ok(())
}
