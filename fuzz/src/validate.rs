//! Scope and kind checks for edited programs: the shrinker only tries
//! candidates in which every name is bound with the right kind, assignments
//! target mutable reals, jumps are inside loops, calls match their callee's
//! parameters and no buffer is written while it is iterated over.

use crate::ast::*;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Real {
        mutable: bool,
    },
    Int,
    Slice,
    Buf,
    Struct,
    Structs,
    /// A `&Ws` parameter.
    Weights,
    Closure,
}

struct Env<'p> {
    vars: Vec<(String, Kind)>,
    funcs: &'p [Func],
    loops: usize,
    frozen: Vec<String>,
    uses_struct: bool,
    /// The function returns a `Pt` (no `return` of a real).
    returns_struct: bool,
}

/// True when `p` passes the checks.
pub fn valid(p: &Program) -> bool {
    let Some(entry) = p.funcs.last() else {
        return false;
    };
    if entry.name != "f"
        || !entry.params.iter().any(|q| {
            matches!(
                q.ty,
                ParamTy::Real | ParamTy::Slice(_) | ParamTy::Struct | ParamTy::Array(_)
            )
        })
    {
        return false;
    }
    for (i, f) in p.funcs.iter().enumerate() {
        let mut env = Env {
            vars: Vec::new(),
            funcs: &p.funcs[..i],
            loops: 0,
            frozen: Vec::new(),
            uses_struct: p.uses_struct,
            returns_struct: f.ret_b.is_some(),
        };
        for q in &f.params {
            let kind = match q.ty {
                ParamTy::Real | ParamTy::NoGradReal => Kind::Real { mutable: false },
                ParamTy::Slice(_) | ParamTy::Array(_) => Kind::Slice,
                ParamTy::Int(_) => Kind::Int,
                ParamTy::Struct if p.uses_struct => Kind::Struct,
                ParamTy::Structs(n) if p.uses_struct && n > 0 => Kind::Structs,
                ParamTy::Weights(n) if p.uses_struct && n > 0 => Kind::Weights,
                ParamTy::Struct | ParamTy::Structs(_) | ParamTy::Weights(_) => return false,
                ParamTy::Func => Kind::Closure,
            };
            env.vars.push((q.name.clone(), kind));
        }
        if !env.block(&f.body) || !env.expr(&f.ret) {
            return false;
        }
        if let Some(b) = &f.ret_b {
            if !p.uses_struct || !env.expr(b) {
                return false;
            }
        }
    }
    true
}

impl Env<'_> {
    fn lookup(&self, name: &str) -> Option<Kind> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, k)| *k)
    }

    fn is(&self, name: &str, pred: impl Fn(Kind) -> bool) -> bool {
        self.lookup(name).is_some_and(pred)
    }

    fn real(&self, name: &str) -> bool {
        self.is(name, |k| matches!(k, Kind::Real { .. }))
    }

    fn seq(&self, name: &str) -> bool {
        self.is(name, |k| matches!(k, Kind::Slice | Kind::Buf))
    }

    fn block(&mut self, stmts: &[Stmt]) -> bool {
        let mark = self.vars.len();
        let ok = stmts.iter().all(|s| self.stmt(s));
        self.vars.truncate(mark);
        ok
    }

    fn in_loop(&mut self, bind: &[(String, Kind)], body: &[Stmt]) -> bool {
        let mark = self.vars.len();
        self.vars.extend(bind.iter().cloned());
        self.loops += 1;
        let ok = self.block(body);
        self.loops -= 1;
        self.vars.truncate(mark);
        ok
    }

    fn stmt(&mut self, s: &Stmt) -> bool {
        match s {
            Stmt::Let {
                name,
                mutable,
                value,
                ..
            } => {
                let ok = self.expr(value);
                self.vars
                    .push((name.clone(), Kind::Real { mutable: *mutable }));
                ok
            }
            Stmt::LetBuf { name, len, .. } => {
                self.vars.push((name.clone(), Kind::Buf));
                *len > 0
            }
            Stmt::LetCopy { name, source, .. } => {
                let ok = self.is(source, |k| matches!(k, Kind::Slice | Kind::Buf));
                self.vars.push((name.clone(), Kind::Buf));
                ok
            }
            Stmt::LetCollect {
                name,
                source,
                v,
                body,
                ..
            } => {
                let ok = self.is(source, |k| matches!(k, Kind::Slice | Kind::Buf))
                    && self.with(&[(v, Kind::Real { mutable: false })], body);
                self.vars.push((name.clone(), Kind::Buf));
                ok
            }
            Stmt::Replace { name, with } => {
                if !self.is(name, |k| k == Kind::Buf) || self.frozen.contains(name) {
                    return false;
                }
                match with {
                    Replacement::Copy { source, .. } => {
                        self.is(source, |k| matches!(k, Kind::Slice | Kind::Buf))
                    }
                    Replacement::Moved { var, value, .. } => {
                        let saved = self.vars.clone();
                        self.vars.push((var.clone(), Kind::Int));
                        let ok = self.expr(value);
                        self.vars = saved;
                        ok
                    }
                }
            }
            Stmt::LetStruct { name, a, b } => {
                let ok = self.uses_struct && self.expr(a) && self.expr(b);
                self.vars.push((name.clone(), Kind::Struct));
                ok
            }
            Stmt::LetCall { name, call } => {
                let ok = self.struct_call(call);
                self.vars.push((name.clone(), Kind::Struct));
                ok
            }
            Stmt::ForStructs { elem, slice, body } => {
                self.is(slice, |k| k == Kind::Structs)
                    && self.in_loop(&[(elem.clone(), Kind::Struct)], body)
            }
            Stmt::LetClosure { name, param, body } => {
                let ok = self.closure(param, body);
                self.vars.push((name.clone(), Kind::Closure));
                ok
            }
            Stmt::Assign { name, value, .. } => {
                self.expr(value) && self.is(name, |k| k == Kind::Real { mutable: true })
            }
            Stmt::BufAssign {
                name, index, value, ..
            } => {
                self.is(name, |k| k == Kind::Buf)
                    && !self.frozen.contains(name)
                    && self.iexpr(index)
                    && self.expr(value)
            }
            Stmt::Refill {
                name, var, value, ..
            } => {
                if !self.is(name, |k| k == Kind::Buf) || self.frozen.contains(name) {
                    return false;
                }
                let saved = self.vars.clone();
                self.vars.push((var.clone(), Kind::Int));
                let ok = self.expr(value);
                self.vars = saved;
                ok
            }
            Stmt::If { cond, then, els } => self.cond(cond) && self.block(then) && self.block(els),
            Stmt::Match { scrut, arms } => {
                arms.len() >= 2 && self.iexpr(scrut) && arms.iter().all(|a| self.block(a))
            }
            Stmt::For {
                var,
                count,
                body,
                attr,
            } => {
                // deltad rejects empty checkpointed loops by design; keeping
                // them out stops shrinking from drifting to that rejection.
                if *attr == LoopAttr::Checkpoint && body.is_empty() {
                    return false;
                }
                let count_ok = match count {
                    Count::Lit(_) => true,
                    Count::Len(s) => self.seq(s),
                };
                let bind = if var == "_" {
                    Vec::new()
                } else {
                    vec![(var.clone(), Kind::Int)]
                };
                count_ok && self.in_loop(&bind, body)
            }
            Stmt::LetPush {
                name,
                var,
                count,
                body,
                value,
                ..
            } => {
                let count_ok = match count {
                    Count::Lit(_) => true,
                    Count::Len(s) => self.seq(s),
                };
                // (The value is read with the loop's variable in scope.)
                let bind = [(var.clone(), Kind::Int)];
                let mark = self.vars.len();
                self.vars.extend(bind.iter().cloned());
                let value_ok = self.expr(value);
                self.vars.truncate(mark);
                let ok = count_ok && value_ok && self.in_loop(&bind, body);
                self.vars.push((name.clone(), Kind::Buf));
                ok
            }
            // (The shrinker changes no length nor these bounds: the body's
            // direct indices stay in bounds.)
            Stmt::Stencil {
                var, count, body, ..
            } => {
                let count_ok = match count {
                    Count::Lit(_) => true,
                    Count::Len(s) => self.seq(s),
                };
                count_ok && self.in_loop(&[(var.clone(), Kind::Int)], body)
            }
            Stmt::ForSlice {
                elem,
                index,
                slice,
                body,
            } => {
                if !self.seq(slice) {
                    return false;
                }
                let mut bind = Vec::new();
                if let Some(j) = index {
                    bind.push((j.clone(), Kind::Int));
                }
                bind.push((elem.clone(), Kind::Real { mutable: false }));
                self.frozen.push(slice.clone());
                let ok = self.in_loop(&bind, body);
                self.frozen.pop();
                ok
            }
            Stmt::While { counter, body, .. } | Stmt::Loop { counter, body, .. } => {
                self.in_loop(&[(counter.clone(), Kind::Int)], body)
            }
            Stmt::Break | Stmt::Continue => self.loops > 0,
            Stmt::Return(e) => !self.returns_struct && self.expr(e),
        }
    }

    /// A call of an earlier function with arguments of its parameters'
    /// kinds, returning a `Pt` if `structure` (else a real).
    fn call(&self, name: &str, args: &[Arg], structure: bool) -> bool {
        let Some(f) = self.funcs.iter().find(|f| f.name == name) else {
            return false;
        };
        f.ret_b.is_some() == structure
            && f.params.len() == args.len()
            && f.params.iter().zip(args).all(|(p, a)| match (p.ty, a) {
                (ParamTy::Real, Arg::Real(e)) => self.expr(e),
                (ParamTy::Slice(_), Arg::Slice { name, buffer }) => {
                    let want = if *buffer { Kind::Buf } else { Kind::Slice };
                    self.is(name, |k| k == want)
                }
                (ParamTy::Struct, Arg::Struct(name)) => self.is(name, |k| k == Kind::Struct),
                (ParamTy::Array(n), Arg::Array(elems)) => {
                    elems.len() == n && elems.iter().all(|e| self.expr(e))
                }
                (ParamTy::Func, Arg::Closure { param, body }) => self.closure(param, body),
                (ParamTy::Func, Arg::PassedOn) => self
                    .vars
                    .iter()
                    .any(|(n, k)| n == "func" && *k == Kind::Closure),
                _ => false,
            })
    }

    /// A closure's body: it sees its parameter and immutable reals only.
    fn closure(&self, param: &str, body: &Expr) -> bool {
        let mut vars: Vec<(String, Kind)> = self
            .vars
            .iter()
            .map(|(n, k)| {
                let k = match k {
                    Kind::Real { mutable: false } => *k,
                    _ => Kind::Closure, // not readable as a real
                };
                (n.clone(), k)
            })
            .collect();
        vars.push((param.to_string(), Kind::Real { mutable: false }));
        let inner = Env {
            vars,
            funcs: self.funcs,
            loops: 0,
            frozen: Vec::new(),
            uses_struct: self.uses_struct,
            returns_struct: false,
        };
        inner.expr(body) && !has_seq_access(body)
    }

    /// A derivative of a call of an earlier function returning a real,
    /// whose parameters all have `Grad` fields of the kinds read (reals,
    /// slices, arrays; no `Pt`).
    fn derivative(&self, call: &Expr, derivative: &Derivative) -> bool {
        let Expr::Call(name, args) = call else {
            return false;
        };
        let Some(f) = self.funcs.iter().find(|f| &f.name == name) else {
            return false;
        };
        if !self.call(name, args, false)
            || f.params
                .iter()
                .any(|p| matches!(p.ty, ParamTy::Struct | ParamTy::Structs(_)))
        {
            return false;
        }
        // The differentiated parameters (their `Grad` fields), with the
        // argument each is given.
        let fields: Vec<(&String, ParamTy, &Arg)> = f
            .params
            .iter()
            .zip(args)
            .filter(|(p, _)| matches!(p.ty, ParamTy::Real | ParamTy::Slice(_) | ParamTy::Array(_)))
            .map(|(p, a)| (&p.name, p.ty, a))
            .collect();
        let read = |r: &Read| {
            fields
                .iter()
                .any(|(name, ty, _)| **name == r.field && r.element == !matches!(ty, ParamTy::Real))
        };
        match derivative {
            Derivative::Grad(r) => read(r),
            Derivative::Value => true,
            Derivative::Vjp(seed, r) => self.expr(seed) && read(r),
            Derivative::Jvp(tangents) => {
                tangents.len() == fields.len()
                    && tangents.iter().zip(&fields).all(|(t, (name, ty, arg))| {
                        t.field == **name
                            && match (&t.value, ty, arg) {
                                (TangentValue::Real(e), ParamTy::Real, _) => self.expr(e),
                                (
                                    TangentValue::Slice(e, of),
                                    ParamTy::Slice(_),
                                    Arg::Slice { name, .. },
                                ) => of == name && self.expr(e),
                                (TangentValue::Array(elems), ParamTy::Array(n), _) => {
                                    elems.len() == *n && elems.iter().all(|e| self.expr(e))
                                }
                                _ => false,
                            }
                    })
            }
        }
    }

    /// `e` is a call of a function returning a `Pt`.
    fn struct_call(&self, e: &Expr) -> bool {
        match e {
            Expr::Call(name, args) => self.uses_struct && self.call(name, args, true),
            _ => false,
        }
    }

    fn iexpr(&self, e: &IExpr) -> bool {
        match e {
            IExpr::Lit(_) => true,
            IExpr::Var(v) => self.is(v, |k| k == Kind::Int),
            IExpr::Add(a, _) => self.iexpr(a),
            IExpr::At(v, _) => self.is(v, |k| k == Kind::Int),
        }
    }

    fn cond(&self, c: &Cond) -> bool {
        match c {
            Cond::Cmp(_, a, b) => self.expr(a) && self.expr(b),
            Cond::ICmp(_, a, b) => self.iexpr(a) && self.iexpr(b),
            Cond::Not(a) => self.cond(a),
            Cond::And(a, b) | Cond::Or(a, b) => self.cond(a) && self.cond(b),
        }
    }

    fn with(&self, bind: &[(&String, Kind)], e: &Expr) -> bool {
        let mut inner = Env {
            vars: self.vars.clone(),
            funcs: self.funcs,
            loops: 0,
            frozen: self.frozen.clone(),
            uses_struct: self.uses_struct,
            returns_struct: self.returns_struct,
        };
        inner
            .vars
            .extend(bind.iter().map(|(n, k)| ((*n).clone(), *k)));
        inner.expr(e)
    }

    fn expr(&self, e: &Expr) -> bool {
        let real = Kind::Real { mutable: false };
        match e {
            Expr::Const(_) => true,
            Expr::Var(v) => self.real(v),
            Expr::IntAsReal(i) => self.iexpr(i),
            Expr::Index(s, i) => self.seq(s) && self.iexpr(i),
            Expr::Field(s, f) => match *f {
                "c" => self.is(s, |k| k == Kind::Weights),
                _ => self.is(s, |k| k == Kind::Struct),
            },
            Expr::FieldElem(s, i) => self.is(s, |k| k == Kind::Weights) && self.iexpr(i),
            Expr::ElemField(s, i, _) => self.is(s, |k| k == Kind::Structs) && self.iexpr(i),
            Expr::CallField(call, _) => self.struct_call(call),
            Expr::Neg(a) | Expr::Unary(_, a, _) | Expr::Powi(a, _) | Expr::SinCos(a, _) => {
                self.expr(a)
            }
            Expr::Bin(_, a, b) => self.expr(a) && self.expr(b),
            Expr::Multi(_, a, args, _) => self.expr(a) && args.iter().all(|x| self.expr(x)),
            Expr::Call(name, args) => self.call(name, args, false),
            Expr::Derivative(call, derivative) => self.derivative(call, derivative),
            Expr::ClosureCall(name, a) => self.is(name, |k| k == Kind::Closure) && self.expr(a),
            Expr::IfElse(c, a, b) | Expr::MatchBool(c, a, b) => {
                self.cond(c) && self.expr(a) && self.expr(b)
            }
            Expr::MatchInt(s, arms) => {
                arms.len() >= 2 && self.iexpr(s) && arms.iter().all(|a| self.expr(a))
            }
            Expr::Chain(src, chain) => {
                let weights = |s: &str| {
                    s.strip_suffix(".w")
                        .is_some_and(|base| self.is(base, |k| k == Kind::Weights))
                };
                (self.seq(src) || weights(src))
                    && match chain {
                        Chain::MapSum { v, body } | Chain::Product { v, body } => {
                            self.with(&[(v, real)], body)
                        }
                        Chain::FilterSum { v, body, .. } => self.with(&[(v, real)], body),
                        Chain::ZipSum { other, v, w, body } => {
                            self.seq(other) && self.with(&[(v, real), (w, real)], body)
                        }
                        Chain::EnumSum { j, v, body } => {
                            self.with(&[(j, Kind::Int), (v, real)], body)
                        }
                        Chain::Fold { acc, v, init, body } => {
                            self.expr(init) && self.with(&[(acc, real), (v, real)], body)
                        }
                        Chain::Max => true,
                    }
            }
        }
    }
}

/// Closure bodies the generator writes read no slices (their borrows would
/// outlive writes to buffers).
fn has_seq_access(e: &Expr) -> bool {
    let mut found = false;
    crate::shrink::visit_expr(e, &mut |x| {
        if matches!(
            x,
            Expr::Index(..)
                | Expr::Chain(..)
                | Expr::Call(..)
                | Expr::ElemField(..)
                | Expr::FieldElem(..)
        ) {
            found = true;
        }
    });
    found
}
