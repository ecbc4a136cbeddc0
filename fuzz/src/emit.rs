//! Prints a `Program` as a Rust module: the `#[differentiate]` functions and
//! a `run` function that checks the entry function at random points through
//! the generated crate's `check` module.

use crate::ast::*;

/// The module source of one program.
pub fn program(p: &Program) -> String {
    let mut w = Writer::default();
    w.line("#![allow(unused, unreachable_code, clippy::all)]");
    w.line("use crate::check::{check_chunks, check_point, check_rows, Outcome, Rng};");
    w.line("use deltad::differentiate;");
    if p.uses_struct {
        w.line("use deltad::Differentiable;");
        w.line("");
        structs(&mut w);
    }
    for f in &p.funcs {
        w.line("");
        func(&mut w, f, "#[differentiate]");
    }
    // The same functions forced onto the tape: the other engine, checked
    // against the first.
    w.line("");
    w.line("pub mod tape {");
    w.indent += 1;
    w.line("use super::*;");
    w.line("use deltad::differentiate;");
    for f in &p.funcs {
        w.line("");
        func(&mut w, f, "#[differentiate(tape)]");
    }
    w.indent -= 1;
    w.line("}");
    w.line("");
    paired(&mut w, p.entry());
    w.line("");
    let derivatives_inside = ["::grad(", "::value_and_grad(", "::vjp(", "::jvp("]
        .iter()
        .any(|call| func_text(p.entry()).contains(call));
    run(&mut w, p.entry(), derivatives_inside);
    w.out
}

/// The source of one function.
fn func_text(f: &Func) -> String {
    let mut w = Writer::default();
    func(&mut w, f, "");
    w.out
}

/// The user types of programs that use them.
fn structs(w: &mut Writer) {
    w.line("#[derive(Differentiable, Clone, Debug)]");
    w.line("pub struct Pt {");
    w.line("    pub a: f64,");
    w.line("    pub b: f64,");
    w.line("}");
    w.line("");
    w.line("#[derive(Differentiable, Clone, Debug)]");
    w.line("pub struct Ws {");
    w.line("    pub w: Vec<f64>,");
    w.line("    pub c: f64,");
    w.line("}");
}

/// The functions alone (for reproducers).
pub fn functions(p: &Program) -> String {
    let mut w = Writer::default();
    if p.uses_struct {
        structs(&mut w);
        w.line("");
    }
    for f in &p.funcs {
        func(&mut w, f, "#[differentiate]");
        w.line("");
    }
    w.out
}

#[derive(Default)]
struct Writer {
    out: String,
    indent: usize,
}

impl Writer {
    fn line(&mut self, text: &str) {
        if !text.is_empty() {
            for _ in 0..self.indent {
                self.out.push_str("    ");
            }
        }
        self.out.push_str(text);
        self.out.push('\n');
    }
}

fn param_decl(p: &Param) -> String {
    match p.ty {
        ParamTy::Real => format!("{}: f64", p.name),
        ParamTy::NoGradReal => format!("#[no_grad] {}: f64", p.name),
        ParamTy::Slice(_) => format!("{}: &[f64]", p.name),
        ParamTy::Int(_) => format!("{}: usize", p.name),
        ParamTy::Struct => format!("{}: &Pt", p.name),
        ParamTy::Structs(_) => format!("{}: &[Pt]", p.name),
        ParamTy::Weights(_) => format!("{}: &Ws", p.name),
        ParamTy::Array(n) => format!("{}: [f64; {n}]", p.name),
        ParamTy::Func => format!("{}: F", p.name),
    }
}

/// `paired`: the entry's value and twice it, a function of two outputs
/// whose Jacobian (`jacobian_rev`) runs the entry's adjoint once on two
/// lanes of adjoints (vector reverse mode), through every callee.
fn paired(w: &mut Writer, f: &Func) {
    let params: Vec<String> = f.params.iter().map(param_decl).collect();
    let names: Vec<&str> = f.params.iter().map(|p| p.name.as_str()).collect();
    w.line("#[differentiate]");
    w.line(&format!(
        "pub fn paired({}) -> [f64; 2] {{",
        params.join(", ")
    ));
    w.indent += 1;
    w.line(&format!("let v = {}({});", f.name, names.join(", ")));
    w.line("[v, 2.0 * v]");
    w.indent -= 1;
    w.line("}");
}

fn func(w: &mut Writer, f: &Func, attribute: &str) {
    let params: Vec<String> = f.params.iter().map(param_decl).collect();
    w.line(attribute);
    let ret = if f.ret_b.is_some() { "Pt" } else { "f64" };
    let generics = if f.params.iter().any(|p| p.ty == ParamTy::Func) {
        "<F: Fn(f64) -> f64>"
    } else {
        ""
    };
    w.line(&format!(
        "pub fn {}{generics}({}) -> {ret} {{",
        f.name,
        params.join(", ")
    ));
    w.indent += 1;
    block(w, &f.body);
    match &f.ret_b {
        Some(b) => w.line(&format!("Pt {{ a: {}, b: {} }}", expr(&f.ret), expr(b))),
        None => w.line(&expr(&f.ret)),
    }
    w.indent -= 1;
    w.line("}");
}

fn block(w: &mut Writer, stmts: &[Stmt]) {
    for s in stmts {
        stmt(w, s);
    }
}

fn braced(w: &mut Writer, head: &str, body: &[Stmt], tail: &str) {
    w.line(&format!("{head} {{"));
    w.indent += 1;
    block(w, body);
    w.indent -= 1;
    w.line(&format!("}}{tail}"));
}

fn op_str(op: AssignOp) -> &'static str {
    match op {
        AssignOp::Set => "=",
        AssignOp::Add => "+=",
        AssignOp::Sub => "-=",
        AssignOp::Mul => "*=",
        AssignOp::Div => "/=",
    }
}

fn stmt(w: &mut Writer, s: &Stmt) {
    match s {
        Stmt::Let {
            name,
            mutable,
            annotate,
            value,
        } => {
            let m = if *mutable { "mut " } else { "" };
            let ty = if *annotate || value.is_literal_typed() {
                ": f64"
            } else {
                ""
            };
            w.line(&format!("let {m}{name}{ty} = {};", expr(value)));
        }
        Stmt::LetBuf {
            name,
            len,
            fill,
            annotate,
        } => {
            if *annotate {
                w.line(&format!(
                    "let mut {name}: Vec<f64> = vec![{}; {len}];",
                    constant(*fill)
                ));
            } else {
                w.line(&format!("let mut {name} = vec![{:?}_f64; {len}];", fill));
            }
        }
        Stmt::LetCopy {
            name,
            source,
            method,
        } => {
            w.line(&format!("let mut {name} = {source}.{method}();"));
        }
        Stmt::LetCollect {
            name,
            source,
            v,
            body,
            turbofish,
        } => {
            let map = format!("{source}.iter().map(|&{v}| {})", expr(body));
            if *turbofish {
                w.line(&format!("let mut {name} = {map}.collect::<Vec<f64>>();"));
            } else {
                w.line(&format!("let mut {name}: Vec<f64> = {map}.collect();"));
            }
        }
        Stmt::LetPush {
            name,
            typed,
            capacity,
            var,
            start,
            count,
            body,
            value,
        } => {
            let n = match count {
                Count::Lit(n) => n.to_string(),
                Count::Len(s) => format!("{s}.len()"),
            };
            let (annotation, turbofish) = match typed {
                1 => (": Vec<f64>", ""),
                2 => ("", "::<f64>"),
                _ => ("", ""),
            };
            let made = if *capacity {
                format!("Vec{turbofish}::with_capacity({n})")
            } else {
                format!("Vec{turbofish}::new()")
            };
            w.line(&format!("let mut {name}{annotation} = {made};"));
            w.line(&format!("for {var} in {start}..{n} {{"));
            w.indent += 1;
            block(w, body);
            w.line(&format!("{name}.push({});", expr(value)));
            w.indent -= 1;
            w.line("}");
        }
        Stmt::Replace { name, with } => match with {
            Replacement::Copy { source, method } => {
                w.line(&format!("{name} = {source}.{method}();"));
            }
            Replacement::Moved { temp, var, value } => {
                w.line("{");
                w.line(&format!("    let mut {temp} = vec![0.0; {name}.len()];"));
                w.line(&format!("    for {var} in 0..{temp}.len() {{"));
                w.line(&format!("        {temp}[{var}] = {};", expr(value)));
                w.line("    }");
                w.line(&format!("    {name} = {temp};"));
                w.line("}");
            }
        },
        Stmt::LetCall { name, call } => {
            w.line(&format!("let {name} = {};", expr(call)));
        }
        Stmt::ForStructs { elem, slice, body } => {
            braced(w, &format!("for {elem} in {slice}.iter()"), body, "");
        }
        Stmt::LetStruct { name, a, b } => {
            w.line(&format!(
                "let {name} = Pt {{ a: {}, b: {} }};",
                expr(a),
                expr(b)
            ));
        }
        Stmt::LetClosure { name, param, body } => {
            let body = if body.is_literal_typed() {
                format!("({} as f64)", expr(body))
            } else {
                expr(body)
            };
            w.line(&format!("let {name} = |{param}: f64| {body};"));
        }
        Stmt::Assign { name, op, value } => {
            w.line(&format!("{name} {} {};", op_str(*op), expr(value)));
        }
        Stmt::BufAssign {
            name,
            index: index @ IExpr::At(..),
            op,
            value,
        } => {
            w.line(&format!(
                "{name}[{}] {} {};",
                iexpr(index),
                op_str(*op),
                expr(value)
            ));
        }
        Stmt::BufAssign {
            name,
            index,
            op,
            value,
        } => {
            // The index is computed first: `b[i % b.len()] op= v` does not
            // compile once deltad makes the elements dual values (reported
            // by this fuzzer; see tests/fuzz_regressions/known_rejections.md).
            w.line("{");
            w.line(&format!("    let at = {} % {name}.len();", iexpr(index)));
            w.line(&format!("    {name}[at] {} {};", op_str(*op), expr(value)));
            w.line("}");
        }
        Stmt::Refill {
            name,
            var,
            start,
            value,
        } => {
            w.line(&format!("for {var} in {start}..{name}.len() {{"));
            w.line(&format!("    {name}[{var}] = {};", expr(value)));
            w.line("}");
        }
        Stmt::If { cond: c, then, els } => {
            if els.is_empty() {
                braced(w, &format!("if {}", cond(c)), then, "");
            } else {
                braced(w, &format!("if {}", cond(c)), then, " else {");
                w.indent += 1;
                block(w, els);
                w.indent -= 1;
                w.line("}");
            }
        }
        Stmt::Match { scrut, arms } => {
            w.line(&format!("match {} % {} {{", iexpr(scrut), arms.len()));
            w.indent += 1;
            for (i, arm) in arms.iter().enumerate() {
                let pat = if i + 1 == arms.len() {
                    "_".to_string()
                } else {
                    i.to_string()
                };
                braced(w, &format!("{pat} =>"), arm, "");
            }
            w.indent -= 1;
            w.line("}");
        }
        Stmt::For {
            var,
            count,
            attr,
            body,
        } => {
            match attr {
                LoopAttr::None => {}
                LoopAttr::Checkpoint => w.line("#[checkpoint]"),
                LoopAttr::Preaccumulate => w.line("#[preaccumulate]"),
            }
            let n = match count {
                Count::Lit(n) => n.to_string(),
                Count::Len(s) => format!("{s}.len()"),
            };
            braced(w, &format!("for {var} in 0..{n}"), body, "");
        }
        Stmt::Stencil {
            var,
            start,
            count,
            gap,
            body,
        } => {
            let end = match (count, gap) {
                (Count::Lit(n), _) => n.to_string(),
                (Count::Len(s), 0) => format!("{s}.len()"),
                (Count::Len(s), g) => format!("{s}.len() - {g}"),
            };
            braced(w, &format!("for {var} in {start}..{end}"), body, "");
        }
        Stmt::ForSlice {
            elem,
            index,
            slice,
            body,
        } => {
            let head = match index {
                Some(j) => format!("for ({j}, &{elem}) in {slice}.iter().enumerate()"),
                None => format!("for &{elem} in {slice}.iter()"),
            };
            braced(w, &head, body, "");
        }
        Stmt::While {
            counter,
            limit,
            body,
        } => {
            w.line(&format!("let mut {counter} = 0;"));
            w.line(&format!("while {counter} < {limit} {{"));
            w.indent += 1;
            w.line(&format!("{counter} += 1;"));
            block(w, body);
            w.indent -= 1;
            w.line("}");
        }
        Stmt::Loop {
            counter,
            limit,
            body,
        } => {
            w.line(&format!("let mut {counter} = 0;"));
            w.line("loop {");
            w.indent += 1;
            w.line(&format!("{counter} += 1;"));
            w.line(&format!("if {counter} > {limit} {{"));
            w.line("    break;");
            w.line("}");
            block(w, body);
            w.indent -= 1;
            w.line("}");
        }
        Stmt::Break => w.line("break;"),
        Stmt::Continue => w.line("continue;"),
        Stmt::Return(e) => w.line(&format!("return {};", expr(e))),
    }
}

fn constant(c: f64) -> String {
    if c < 0.0 || (c == 0.0 && c.is_sign_negative()) {
        format!("({c:?})")
    } else {
        format!("{c:?}")
    }
}

pub fn iexpr(e: &IExpr) -> String {
    match e {
        IExpr::Lit(n) => n.to_string(),
        IExpr::Var(v) => v.clone(),
        IExpr::Add(a, n) => format!("({} + {n})", iexpr(a)),
        IExpr::At(v, 0) => v.clone(),
        IExpr::At(v, c) if *c > 0 => format!("({v} + {c})"),
        IExpr::At(v, c) => format!("({v} - {})", c.unsigned_abs()),
    }
}

fn cmp_str(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Lt => "<",
        CmpOp::Gt => ">",
        CmpOp::Le => "<=",
        CmpOp::Ge => ">=",
    }
}

pub fn cond(c: &Cond) -> String {
    match c {
        Cond::Cmp(op, a, b) => format!("{} {} {}", expr(a), cmp_str(*op), expr(b)),
        Cond::ICmp(op, a, b) => format!("{} {} {}", iexpr(a), cmp_str(*op), iexpr(b)),
        Cond::Not(a) => format!("!({})", cond(a)),
        Cond::And(a, b) => format!("({} && {})", cond(a), cond(b)),
        Cond::Or(a, b) => format!("({} || {})", cond(a), cond(b)),
    }
}

/// A method call on `recv`: path style when asked, or when the receiver is
/// an untyped literal expression (a method call on `{float}` is ambiguous).
fn method(name: &str, recv: &Expr, args: &[String], style: Style) -> String {
    if style == Style::Path || recv.is_literal_typed() {
        let mut all = vec![expr(recv)];
        all.extend(args.iter().cloned());
        format!("f64::{name}({})", all.join(", "))
    } else {
        format!("{}.{name}({})", expr(recv), args.join(", "))
    }
}

/// The arguments of a call to a generated helper.
fn call_args(args: &[Arg]) -> Vec<String> {
    args.iter()
        .map(|a| match a {
            Arg::Real(e) => expr(e),
            Arg::Slice { name, buffer: true } => format!("&{name}"),
            Arg::Slice {
                name,
                buffer: false,
            } => name.clone(),
            Arg::Struct(name) => format!("&{name}"),
            Arg::Array(elems) => {
                let elems: Vec<String> = elems.iter().map(expr).collect();
                format!("[{}]", elems.join(", "))
            }
            Arg::Closure { param, body } => format!("|{param}: f64| {}", expr(body)),
            Arg::PassedOn => "&func".to_string(),
        })
        .collect()
}

pub fn expr(e: &Expr) -> String {
    match e {
        Expr::Const(c) => constant(*c),
        Expr::Var(v) => v.clone(),
        Expr::IntAsReal(i) => format!("({} as f64)", iexpr(i)),
        Expr::Index(s, i @ IExpr::At(..)) => format!("{s}[{}]", iexpr(i)),
        Expr::Index(s, i) => format!("{s}[{} % {s}.len()]", iexpr(i)),
        Expr::Field(s, f) => format!("{s}.{f}"),
        Expr::ElemField(s, i, f) => format!("{s}[{} % {s}.len()].{f}", iexpr(i)),
        Expr::FieldElem(s, i) => format!("{s}.w[{} % {s}.w.len()]", iexpr(i)),
        Expr::CallField(call, f) => format!("{}.{f}", expr(call)),
        Expr::Neg(a) => format!("(-{})", expr(a)),
        Expr::Bin(op, a, b) => {
            let o = match op {
                BinOp::Add => "+",
                BinOp::Sub => "-",
                BinOp::Mul => "*",
                BinOp::Div => "/",
            };
            format!("({} {o} {})", expr(a), expr(b))
        }
        Expr::Unary(name, a, style) => method(name, a, &[], *style),
        Expr::Multi(name, a, args, style) => {
            let args: Vec<String> = args.iter().map(expr).collect();
            method(name, a, &args, *style)
        }
        Expr::Powi(a, n) => method("powi", a, &[n.to_string()], Style::Method),
        Expr::SinCos(a, k) => format!("{}.{k}", method("sin_cos", a, &[], Style::Method)),
        Expr::Call(name, args) => format!("{name}({})", call_args(args).join(", ")),
        Expr::Derivative(call, derivative) => {
            let Expr::Call(name, args) = &**call else {
                return "0.0".into();
            };
            let mut args = call_args(args);
            let read = |r: &Read| {
                let index = if r.element { "[0]" } else { "" };
                format!(".{}{index}", r.field)
            };
            // Half the derivatives (by the arguments' text) are bound by a
            // `let` in a block and read from it, as users write them too.
            let in_let = args.iter().map(String::len).sum::<usize>() % 2 == 1;
            match derivative {
                Derivative::Grad(r) if in_let => {
                    format!(
                        "{{ let dg = {name}::grad({}); dg{} }}",
                        args.join(", "),
                        read(r)
                    )
                }
                Derivative::Grad(r) => format!("{name}::grad({}){}", args.join(", "), read(r)),
                Derivative::Value if in_let => format!(
                    "{{ let (dv, _) = {name}::value_and_grad({}); dv }}",
                    args.join(", ")
                ),
                Derivative::Value => format!("{name}::value_and_grad({}).0", args.join(", ")),
                Derivative::Vjp(seed, r) => {
                    args.push(expr(seed));
                    if in_let {
                        format!(
                            "{{ let (_, dg) = {name}::vjp({}); dg{} }}",
                            args.join(", "),
                            read(r)
                        )
                    } else {
                        format!("{name}::vjp({}).1{}", args.join(", "), read(r))
                    }
                }
                Derivative::Jvp(tangents) => {
                    let fields: Vec<String> = tangents
                        .iter()
                        .map(|t| {
                            let value = match &t.value {
                                TangentValue::Real(e) => expr(e),
                                TangentValue::Slice(e, arg) => {
                                    format!("vec![{}; {arg}.len()]", expr(e))
                                }
                                TangentValue::Array(elems) => {
                                    let elems: Vec<String> = elems.iter().map(expr).collect();
                                    format!("[{}]", elems.join(", "))
                                }
                            };
                            format!("{}: {value}", t.field)
                        })
                        .collect();
                    args.push(format!("&{name}::Grad {{ {} }}", fields.join(", ")));
                    if in_let {
                        format!("{{ let (_, dt) = {name}::jvp({}); dt }}", args.join(", "))
                    } else {
                        format!("{name}::jvp({}).1", args.join(", "))
                    }
                }
            }
        }
        Expr::ClosureCall(name, a) => format!("{name}({})", expr(a)),
        Expr::IfElse(c, a, b) => {
            format!("(if {} {{ {} }} else {{ {} }})", cond(c), expr(a), expr(b))
        }
        Expr::MatchInt(s, arms) => {
            let mut text = format!("(match {} % {} {{ ", iexpr(s), arms.len());
            for (i, arm) in arms.iter().enumerate() {
                if i + 1 == arms.len() {
                    text.push_str(&format!("_ => {} ", expr(arm)));
                } else {
                    text.push_str(&format!("{i} => {}, ", expr(arm)));
                }
            }
            text.push_str("})");
            text
        }
        Expr::MatchBool(c, a, b) => format!(
            "(match {} {{ true => {}, false => {} }})",
            cond(c),
            expr(a),
            expr(b)
        ),
        Expr::Chain(src, chain) => match chain {
            Chain::MapSum { v, body } => {
                format!("{src}.iter().map(|&{v}| {}).sum::<f64>()", expr(body))
            }
            Chain::ZipSum { other, v, w, body } => format!(
                "{src}.iter().zip({other}.iter()).map(|(&{v}, &{w})| {}).sum::<f64>()",
                expr(body)
            ),
            Chain::EnumSum { j, v, body } => format!(
                "{src}.iter().enumerate().map(|({j}, &{v})| {}).sum::<f64>()",
                expr(body)
            ),
            Chain::Fold { acc, v, init, body } => {
                let init = if init.is_literal_typed() {
                    format!("({} as f64)", expr(init))
                } else {
                    expr(init)
                };
                format!("{src}.iter().fold({init}, |{acc}, &{v}| {})", expr(body))
            }
            Chain::Product { v, body } => {
                format!("{src}.iter().map(|&{v}| {}).product::<f64>()", expr(body))
            }
            Chain::FilterSum { threshold, v, body } => format!(
                "{src}.iter().filter(|{v}| **{v} > {}).map(|&{v}| {}).sum::<f64>()",
                constant(*threshold),
                expr(body)
            ),
            Chain::Max => format!("{src}.iter().copied().fold(f64::NEG_INFINITY, f64::max)"),
        },
    }
}

/// The harness entry of a program: draws points from the program's seed and
/// checks `f` at each through `crate::check::check_point`.
fn run(w: &mut Writer, f: &Func, derivatives_inside: bool) {
    // Arguments of `f` built from a flat point `p`, and the `Grad` built from
    // a flat tangent `s`; the flattening order is the parameter order.
    let mut args = Vec::new();
    let mut tangent = Vec::new();
    let mut flatten = Vec::new();
    let mut draws = Vec::new();
    let mut at = 0usize;
    for p in &f.params {
        let n = &p.name;
        match p.ty {
            ParamTy::Real => {
                args.push(format!("p[{at}]"));
                tangent.push(format!("{n}: s[{at}]"));
                flatten.push(format!("flat.push(g.{n});"));
                at += 1;
            }
            ParamTy::Slice(len) => {
                args.push(format!("&p[{at}..{}]", at + len));
                tangent.push(format!("{n}: s[{at}..{}].to_vec()", at + len));
                flatten.push(format!("flat.extend_from_slice(&g.{n});"));
                at += len;
            }
            ParamTy::Struct => {
                args.push(format!("&Pt {{ a: p[{at}], b: p[{}] }}", at + 1));
                tangent.push(format!("{n}: Pt {{ a: s[{at}], b: s[{}] }}", at + 1));
                flatten.push(format!("flat.push(g.{n}.a);"));
                flatten.push(format!("flat.push(g.{n}.b);"));
                at += 2;
            }
            ParamTy::Structs(len) => {
                let elems = |v: &str| {
                    (0..len)
                        .map(|k| {
                            let i = at + 2 * k;
                            format!("Pt {{ a: {v}[{i}], b: {v}[{}] }}", i + 1)
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                args.push(format!("&[{}]", elems("p")));
                tangent.push(format!("{n}: vec![{}]", elems("s")));
                flatten.push(format!(
                    "for e in &g.{n} {{ flat.push(e.a); flat.push(e.b); }}"
                ));
                at += 2 * len;
            }
            ParamTy::Weights(len) => {
                let (end, c) = (at + len, at + len);
                args.push(format!("&Ws {{ w: p[{at}..{end}].to_vec(), c: p[{c}] }}"));
                tangent.push(format!(
                    "{n}: Ws {{ w: s[{at}..{end}].to_vec(), c: s[{c}] }}"
                ));
                flatten.push(format!("flat.extend_from_slice(&g.{n}.w);"));
                flatten.push(format!("flat.push(g.{n}.c);"));
                at += len + 1;
            }
            ParamTy::Array(len) => {
                let elems = |v: &str| {
                    (at..at + len)
                        .map(|i| format!("{v}[{i}]"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                args.push(format!("[{}]", elems("p")));
                tangent.push(format!("{n}: [{}]", elems("s")));
                flatten.push(format!("flat.extend_from_slice(&g.{n});"));
                at += len;
            }
            ParamTy::Int(bound) => {
                draws.push(format!("let {n}: usize = rng.below({bound});"));
                args.push(n.clone());
            }
            ParamTy::NoGradReal => {
                draws.push(format!("let {n}: f64 = rng.uniform(-1.5, 1.5);"));
                args.push(n.clone());
            }
            // (Helpers only: `params(false)` gives the entry none.)
            ParamTy::Func => unreachable!("the entry takes no functions"),
        }
    }
    let args = args.join(", ");
    let name = &f.name;
    w.line("pub fn run(seed: u64, points: usize, out: &mut Outcome) {");
    w.indent += 1;
    w.line("let mut rng = Rng::new(seed);");
    w.line("for _ in 0..points {");
    w.indent += 1;
    for d in &draws {
        w.line(d);
    }
    w.line(&format!("let x = rng.vec({at}, -1.5, 1.5);"));
    w.line(&format!("let eval = |p: &[f64]| {name}({args});"));
    // The same closures for the function as generated and for its copy
    // forced onto the tape.
    let grad_of_s = |module: &str| format!("&{module}{name}::Grad {{ {} }}", tangent.join(", "));
    for (module, prefix) in [("", ""), ("tape::", "tape_")] {
        w.line(&format!(
            "let {prefix}flatten = |g: {module}{name}::Grad| {{ let mut flat: Vec<f64> = Vec::new(); {} flat }};",
            flatten.join(" ")
        ));
        w.line(&format!(
            "let {prefix}value_and_grad = |p: &[f64]| {{ let (v, g) = {module}{name}::value_and_grad({args}); (v, {prefix}flatten(g)) }};"
        ));
        w.line(&format!(
            "let {prefix}hvp = |p: &[f64], s: &[f64]| {prefix}flatten({module}{name}::hvp({args}, {}));",
            grad_of_s(module)
        ));
    }
    w.line(&format!(
        "out.compiled = {name}::tape_stats({args_at_x}).compiled;",
        args_at_x = args.replace("p[", "x[").replace("&p[", "&x[")
    ));
    w.line(&format!(
        "let jvp = |p: &[f64], s: &[f64]| {name}::jvp({args}, {});",
        grad_of_s("")
    ));
    w.line(&format!(
        "let vjp = |p: &[f64], t: f64| {{ let (v, g) = {name}::vjp({args}, t); (v, flatten(g)) }};"
    ));
    w.line(&format!(
        "let grad = |p: &[f64]| flatten({name}::grad({args}));"
    ));
    w.line(&format!("out.derivatives_inside = {derivatives_inside};"));
    // Many tangents per pass, Jacobians by forward chunks, sparse Jacobians
    // over detected patterns (on both engines), Hessian-vector products by
    // chunks.
    let tangents = tangent.join(", ");
    w.line(&format!(
        "let jvps = |p: &[f64], ss: &[Vec<f64>]| {{ let ts: Vec<{name}::Grad> = ss.iter().map(|s| {name}::Grad {{ {tangents} }}).collect(); {name}::jvps({args}, &ts) }};"
    ));
    w.line(&format!(
        "let hvps = |p: &[f64], ss: &[Vec<f64>]| {{ let ts: Vec<{name}::Grad> = ss.iter().map(|s| {name}::Grad {{ {tangents} }}).collect(); {name}::hvps({args}, &ts).into_iter().map(flatten).collect::<Vec<Vec<f64>>>() }};"
    ));
    w.line(&format!(
        "let jacobian_fwd = |p: &[f64]| {{ let (v, rows) = {name}::jacobian_fwd({args}); (v, rows.into_iter().map(flatten).collect::<Vec<Vec<f64>>>()) }};"
    ));
    for (module, prefix) in [("", ""), ("tape::", "tape_")] {
        w.line(&format!(
            "let {prefix}sparse = |p: &[f64]| {{ let pattern = {module}{name}::jacobian_pattern({args}); let (v, j) = {module}{name}::sparse_jacobian({args}, &pattern); (v, j.to_dense(), (0..pattern.nrows()).map(|i| pattern.row(i).to_vec()).collect::<Vec<Vec<usize>>>()) }};"
        ));
    }
    for (module, prefix) in [("", ""), ("tape::", "tape_")] {
        w.line(&format!(
            "let {prefix}sparse_hessian = |p: &[f64]| {{ let pattern = {module}{name}::hessian_pattern({args}); let h = {module}{name}::sparse_hessian({args}, &pattern); (h.to_dense(), (0..pattern.nrows()).map(|i| pattern.row(i).to_vec()).collect::<Vec<Vec<usize>>>()) }};"
        ));
    }
    w.line(&format!(
        "let paired = |p: &[f64]| {{ let (v, rows) = paired::jacobian_rev({args}); (v, rows.into_iter().map(|g: paired::Grad| {{ let mut flat: Vec<f64> = Vec::new(); {} flat }}).collect::<Vec<Vec<f64>>>()) }};",
        flatten.join(" ")
    ));
    w.line("let failures = out.failures.len();");
    w.line(
        "check_point(&x, &eval, &value_and_grad, &grad, &tape_value_and_grad, &jvp, &vjp, &hvp, &tape_hvp, &mut rng, out);",
    );
    w.line(
        "if out.failures.len() == failures { check_chunks(&x, &eval, &value_and_grad, &jvp, &jvps, &hvp, &hvps, &jacobian_fwd, &sparse, &tape_sparse, &sparse_hessian, &tape_sparse_hessian, &mut rng, out); }",
    );
    w.line("if out.failures.len() == failures { check_rows(&x, &eval, &value_and_grad, &paired, out); }");
    w.indent -= 1;
    w.line("}");
    w.indent -= 1;
    w.line("}");
}
