//! Shrinking a failing program to a small reproducer.
//!
//! Each round lists every one-step simplification of the program (drop a
//! helper or a parameter, delete a statement, replace a compound statement by
//! its body, replace an expression by one of its operands or by `1.0`,
//! simplify a condition, run a loop once), keeps the candidates that are
//! valid (`validate`) and smaller, compiles them all as one batch, and moves
//! to the first that still fails the same way. It stops when none does.

use crate::ast::*;
use crate::batch::{self, Status};
use std::path::PathBuf;

/// Candidates compiled per round.
const PER_ROUND: usize = 150;
const MAX_ROUNDS: usize = 40;

pub fn shrink(
    p: &Program,
    status: &Status,
    points: usize,
    log: &mut dyn FnMut(&str),
) -> std::io::Result<Program> {
    let class = status.class();
    let dir = crate::programs_dir().join("shrink");
    let mut best = p.clone();
    for round in 0..MAX_ROUNDS {
        let size = size(&best);
        let mut cands: Vec<Program> = Vec::new();
        for c in candidates(&best) {
            if cands.len() >= PER_ROUND {
                break;
            }
            if size_of_smaller(&c, size) && crate::validate::valid(&c) && !cands.contains(&c) {
                cands.push(c);
            }
        }
        if cands.is_empty() {
            break;
        }
        for (i, c) in cands.iter_mut().enumerate() {
            c.name = format!("c{i}");
        }
        let report = batch::run(&dir, &cands, points)?;
        let hit = report
            .results
            .iter()
            .position(|r| r.status.class() == class);
        match hit {
            Some(i) => {
                best = cands[i].clone();
                best.name = p.name.clone();
                log(&format!(
                    "  shrink round {round}: size {size} -> {} ({} candidates)",
                    self::size(&best),
                    cands.len()
                ));
            }
            None => break,
        }
    }
    Ok(best)
}

fn size_of_smaller(c: &Program, than: usize) -> bool {
    size(c) < than
}

/// A size measure: statements, expression nodes (names count twice so that
/// replacing a name by a constant is progress), parameters.
pub fn size(p: &Program) -> usize {
    let mut n = 0;
    for f in &p.funcs {
        n += 1 + f.params.len();
        let mut stmts = 0;
        visit_stmts(&f.body, &mut |_| stmts += 1, &mut |e| {
            n += match e {
                Expr::Const(_) => 1,
                _ => 2,
            }
        });
        n += stmts;
        visit_expr(&f.ret, &mut |e| {
            n += match e {
                Expr::Const(_) => 1,
                _ => 2,
            }
        });
    }
    n + usize::from(p.uses_struct)
}

/// Writes the reproducer of a shrunk program under
/// `target/fuzz-programs/reproducers/`.
pub fn write_reproducer(p: &Program, status: &Status) -> std::io::Result<PathBuf> {
    let dir = crate::programs_dir().join("reproducers");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("{}.rs", p.name));
    let text = format!(
        "// Reproducer of {} (seed {}), shrunk.\n// Failure: {:?}\n\n{}",
        p.name,
        p.seed,
        status,
        crate::emit::functions(p)
    );
    std::fs::write(&path, text)?;
    Ok(path)
}

// ------------------------------------------------------------ candidates

/// Every one-step simplification of `p` (unfiltered).
pub fn candidates(p: &Program) -> Vec<Program> {
    let mut out = Vec::new();
    // Drop a helper.
    for i in 0..p.funcs.len().saturating_sub(1) {
        let mut c = p.clone();
        c.funcs.remove(i);
        out.push(c);
    }
    // Drop a parameter (and the arguments passed to it).
    for (i, f) in p.funcs.iter().enumerate() {
        for j in 0..f.params.len() {
            let mut c = p.clone();
            let name = c.funcs[i].name.clone();
            c.funcs[i].params.remove(j);
            for g in c.funcs.iter_mut() {
                edit_calls(g, &name, j);
            }
            out.push(c);
        }
    }
    if p.uses_struct {
        let mut c = p.clone();
        c.uses_struct = false;
        out.push(c);
    }
    // Local edits, in traversal order.
    let total = {
        let mut c = p.clone();
        let mut m = Mutator::new(usize::MAX);
        m.program(&mut c);
        m.seen
    };
    for k in 0..total {
        let mut c = p.clone();
        let mut m = Mutator::new(k);
        m.program(&mut c);
        if m.applied {
            out.push(c);
        }
    }
    out
}

/// Removes argument `j` of every call to `name` in `f`.
fn edit_calls(f: &mut Func, name: &str, j: usize) {
    let mut fix = |e: &mut Expr| {
        if let Expr::Call(callee, args) = e {
            if callee == name && j < args.len() {
                args.remove(j);
            }
        }
    };
    visit_stmts_mut(&mut f.body, &mut fix);
    visit_expr_mut(&mut f.ret, &mut fix);
}

/// Applies edit number `target` of the traversal.
struct Mutator {
    target: usize,
    seen: usize,
    applied: bool,
}

impl Mutator {
    fn new(target: usize) -> Mutator {
        Mutator {
            target,
            seen: 0,
            applied: false,
        }
    }

    fn offer<T>(&mut self, node: &mut T, alts: Vec<T>) {
        if self.applied {
            return;
        }
        let n = alts.len();
        if self.target >= self.seen && self.target < self.seen + n {
            if let Some(a) = alts.into_iter().nth(self.target - self.seen) {
                *node = a;
            }
            self.applied = true;
        }
        self.seen += n;
    }

    fn program(&mut self, p: &mut Program) {
        for f in p.funcs.iter_mut() {
            self.stmts(&mut f.body);
            self.expr(&mut f.ret);
        }
    }

    fn stmts(&mut self, v: &mut Vec<Stmt>) {
        if self.applied {
            return;
        }
        let mut alts = Vec::new();
        for i in 0..v.len() {
            let mut c = v.clone();
            c.remove(i);
            alts.push(c);
        }
        for i in 0..v.len() {
            for body in bodies(&v[i]) {
                let mut c = v.clone();
                c.splice(i..=i, body);
                alts.push(c);
            }
        }
        self.offer(v, alts);
        for s in v.iter_mut() {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &mut Stmt) {
        if self.applied {
            return;
        }
        let alts = match s {
            Stmt::If { cond, then, els } if !els.is_empty() => vec![Stmt::If {
                cond: cond.clone(),
                then: then.clone(),
                els: Vec::new(),
            }],
            Stmt::For {
                var,
                count,
                attr,
                body,
            } if *count != Count::Lit(1) => vec![Stmt::For {
                var: var.clone(),
                count: Count::Lit(1),
                attr: *attr,
                body: body.clone(),
            }],
            Stmt::For {
                var,
                count,
                attr,
                body,
            } if *attr != LoopAttr::None => vec![Stmt::For {
                var: var.clone(),
                count: count.clone(),
                attr: LoopAttr::None,
                body: body.clone(),
            }],
            Stmt::While {
                counter,
                limit,
                body,
            } if *limit > 1 => vec![Stmt::While {
                counter: counter.clone(),
                limit: 1,
                body: body.clone(),
            }],
            Stmt::Loop {
                counter,
                limit,
                body,
            } if *limit > 1 => vec![Stmt::Loop {
                counter: counter.clone(),
                limit: 1,
                body: body.clone(),
            }],
            Stmt::Match { scrut, arms } if arms.len() > 2 => {
                let mut a = arms.clone();
                a.pop();
                vec![Stmt::Match {
                    scrut: scrut.clone(),
                    arms: a,
                }]
            }
            _ => Vec::new(),
        };
        self.offer(s, alts);
        match s {
            Stmt::Let { value, .. } | Stmt::Assign { value, .. } | Stmt::Return(value) => {
                self.expr(value)
            }
            Stmt::BufAssign { value, .. }
            | Stmt::Refill { value, .. }
            | Stmt::Replace {
                with: Replacement::Moved { value, .. },
                ..
            } => self.expr(value),
            Stmt::LetStruct { a, b, .. } => {
                self.expr(a);
                self.expr(b);
            }
            Stmt::LetClosure { body, .. } => self.expr(body),
            Stmt::LetCall { call, .. } => self.expr(call),
            Stmt::If { cond, then, els } => {
                self.cond(cond);
                self.stmts(then);
                self.stmts(els);
            }
            Stmt::Match { arms, .. } => {
                for a in arms {
                    self.stmts(a);
                }
            }
            Stmt::For { body, .. }
            | Stmt::Stencil { body, .. }
            | Stmt::ForSlice { body, .. }
            | Stmt::ForStructs { body, .. }
            | Stmt::While { body, .. }
            | Stmt::Loop { body, .. } => self.stmts(body),
            Stmt::LetPush { body, value, .. } => {
                self.stmts(body);
                self.expr(value);
            }
            Stmt::LetBuf { .. }
            | Stmt::LetCopy { .. }
            | Stmt::LetCollect { .. }
            | Stmt::Replace { .. }
            | Stmt::Break
            | Stmt::Continue => {}
        }
    }

    fn cond(&mut self, c: &mut Cond) {
        if self.applied {
            return;
        }
        let alts = match c {
            Cond::Not(a) => vec![(**a).clone()],
            Cond::And(a, b) | Cond::Or(a, b) => vec![(**a).clone(), (**b).clone()],
            _ => Vec::new(),
        };
        self.offer(c, alts);
        match c {
            Cond::Cmp(_, a, b) => {
                self.expr(a);
                self.expr(b);
            }
            Cond::ICmp(..) => {}
            Cond::Not(a) => self.cond(a),
            Cond::And(a, b) | Cond::Or(a, b) => {
                self.cond(a);
                self.cond(b);
            }
        }
    }

    fn expr(&mut self, e: &mut Expr) {
        if self.applied {
            return;
        }
        let mut alts = Vec::new();
        if !matches!(e, Expr::Const(_)) {
            alts.push(Expr::Const(1.0));
        }
        alts.extend(children(e).into_iter().cloned());
        self.offer(e, alts);
        for child in children_mut(e) {
            self.expr(child);
        }
        match e {
            Expr::IfElse(c, ..) | Expr::MatchBool(c, ..) => self.cond(c),
            _ => {}
        }
    }
}

/// The statement lists a compound statement could be replaced by.
fn bodies(s: &Stmt) -> Vec<Vec<Stmt>> {
    match s {
        Stmt::If { then, els, .. } => vec![then.clone(), els.clone()],
        Stmt::Match { arms, .. } => arms.clone(),
        Stmt::For { body, .. }
        | Stmt::Stencil { body, .. }
        | Stmt::ForSlice { body, .. }
        | Stmt::While { body, .. }
        | Stmt::Loop { body, .. }
        | Stmt::ForStructs { body, .. } => vec![body.clone()],
        _ => Vec::new(),
    }
}

/// The real operands of an expression (not closure bodies, whose variables
/// are bound inside).
fn children(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::Neg(a) | Expr::Unary(_, a, _) | Expr::Powi(a, _) | Expr::SinCos(a, _) => vec![a],
        Expr::Bin(_, a, b) => vec![a, b],
        Expr::Multi(_, a, args, _) => {
            let mut v: Vec<&Expr> = vec![a];
            v.extend(args.iter());
            v
        }
        Expr::Call(_, args) => args
            .iter()
            .flat_map(|a| match a {
                Arg::Real(e) => vec![e],
                Arg::Array(elems) => elems.iter().collect(),
                // (A closure's body reads its parameter: not hoisted.)
                Arg::Slice { .. } | Arg::Struct(_) | Arg::Closure { .. } | Arg::PassedOn => {
                    Vec::new()
                }
            })
            .collect(),
        Expr::CallField(call, _) => vec![call],
        Expr::Derivative(call, derivative) => {
            let mut v: Vec<&Expr> = vec![call];
            match derivative {
                Derivative::Vjp(seed, _) => v.push(seed),
                Derivative::Jvp(tangents) => {
                    for t in tangents {
                        match &t.value {
                            TangentValue::Real(e) | TangentValue::Slice(e, _) => v.push(e),
                            TangentValue::Array(elems) => v.extend(elems.iter()),
                        }
                    }
                }
                Derivative::Grad(_) | Derivative::Value => {}
            }
            v
        }
        Expr::ClosureCall(_, a) => vec![a],
        Expr::IfElse(_, a, b) | Expr::MatchBool(_, a, b) => vec![a, b],
        Expr::MatchInt(_, arms) => arms.iter().collect(),
        Expr::Chain(_, Chain::Fold { init, .. }) => vec![init],
        _ => Vec::new(),
    }
}

fn children_mut(e: &mut Expr) -> Vec<&mut Expr> {
    match e {
        Expr::Neg(a) | Expr::Unary(_, a, _) | Expr::Powi(a, _) | Expr::SinCos(a, _) => vec![a],
        Expr::Bin(_, a, b) => vec![a, b],
        Expr::Multi(_, a, args, _) => {
            let mut v: Vec<&mut Expr> = vec![a];
            v.extend(args.iter_mut());
            v
        }
        Expr::Call(_, args) => args
            .iter_mut()
            .flat_map(|a| match a {
                Arg::Real(e) => vec![e],
                Arg::Array(elems) => elems.iter_mut().collect(),
                // (A closure's body reads its parameter: not hoisted.)
                Arg::Slice { .. } | Arg::Struct(_) | Arg::Closure { .. } | Arg::PassedOn => {
                    Vec::new()
                }
            })
            .collect(),
        Expr::CallField(call, _) => vec![call],
        Expr::Derivative(call, derivative) => {
            let mut v: Vec<&mut Expr> = vec![call];
            match derivative {
                Derivative::Vjp(seed, _) => v.push(seed),
                Derivative::Jvp(tangents) => {
                    for t in tangents {
                        match &mut t.value {
                            TangentValue::Real(e) | TangentValue::Slice(e, _) => v.push(e),
                            TangentValue::Array(elems) => v.extend(elems.iter_mut()),
                        }
                    }
                }
                Derivative::Grad(_) | Derivative::Value => {}
            }
            v
        }
        Expr::ClosureCall(_, a) => vec![a],
        Expr::IfElse(_, a, b) | Expr::MatchBool(_, a, b) => vec![a, b],
        Expr::MatchInt(_, arms) => arms.iter_mut().collect(),
        Expr::Chain(_, chain) => match chain {
            Chain::Fold { init, body, .. } => vec![init, body],
            Chain::MapSum { body, .. }
            | Chain::ZipSum { body, .. }
            | Chain::EnumSum { body, .. }
            | Chain::Product { body, .. }
            | Chain::FilterSum { body, .. } => vec![body],
            Chain::Max => Vec::new(),
        },
        _ => Vec::new(),
    }
}

// -------------------------------------------------------------- visitors

/// Calls `f` on `e` and every expression inside it (conditions included).
pub fn visit_expr(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    match e {
        Expr::IfElse(c, ..) | Expr::MatchBool(c, ..) => visit_cond(c, f),
        Expr::Chain(_, chain) => match chain {
            Chain::Fold { init, body, .. } => {
                visit_expr(init, f);
                visit_expr(body, f);
            }
            Chain::MapSum { body, .. }
            | Chain::ZipSum { body, .. }
            | Chain::EnumSum { body, .. }
            | Chain::Product { body, .. }
            | Chain::FilterSum { body, .. } => visit_expr(body, f),
            Chain::Max => {}
        },
        _ => {}
    }
    if !matches!(e, Expr::Chain(..)) {
        for c in children(e) {
            visit_expr(c, f);
        }
    }
}

fn visit_cond(c: &Cond, f: &mut dyn FnMut(&Expr)) {
    match c {
        Cond::Cmp(_, a, b) => {
            visit_expr(a, f);
            visit_expr(b, f);
        }
        Cond::ICmp(..) => {}
        Cond::Not(a) => visit_cond(a, f),
        Cond::And(a, b) | Cond::Or(a, b) => {
            visit_cond(a, f);
            visit_cond(b, f);
        }
    }
}

fn visit_stmts(v: &[Stmt], s: &mut dyn FnMut(&Stmt), e: &mut dyn FnMut(&Expr)) {
    for st in v {
        s(st);
        match st {
            Stmt::Let { value, .. }
            | Stmt::Assign { value, .. }
            | Stmt::Return(value)
            | Stmt::BufAssign { value, .. }
            | Stmt::Refill { value, .. }
            | Stmt::Replace {
                with: Replacement::Moved { value, .. },
                ..
            } => visit_expr(value, e),
            Stmt::LetStruct { a, b, .. } => {
                visit_expr(a, e);
                visit_expr(b, e);
            }
            Stmt::LetClosure { body, .. } => visit_expr(body, e),
            Stmt::LetCall { call, .. } => visit_expr(call, e),
            Stmt::If { cond, then, els } => {
                visit_cond(cond, e);
                visit_stmts(then, s, e);
                visit_stmts(els, s, e);
            }
            Stmt::Match { arms, .. } => {
                for a in arms {
                    visit_stmts(a, s, e);
                }
            }
            Stmt::For { body, .. }
            | Stmt::Stencil { body, .. }
            | Stmt::ForSlice { body, .. }
            | Stmt::ForStructs { body, .. }
            | Stmt::While { body, .. }
            | Stmt::Loop { body, .. } => visit_stmts(body, s, e),
            Stmt::LetPush { body, value, .. } => {
                visit_stmts(body, s, e);
                visit_expr(value, e);
            }
            Stmt::LetBuf { .. }
            | Stmt::LetCopy { .. }
            | Stmt::LetCollect { .. }
            | Stmt::Replace { .. }
            | Stmt::Break
            | Stmt::Continue => {}
        }
    }
}

fn visit_expr_mut(e: &mut Expr, f: &mut dyn FnMut(&mut Expr)) {
    f(e);
    match e {
        Expr::IfElse(c, ..) | Expr::MatchBool(c, ..) => visit_cond_mut(c, f),
        _ => {}
    }
    for c in children_mut(e) {
        visit_expr_mut(c, f);
    }
}

fn visit_cond_mut(c: &mut Cond, f: &mut dyn FnMut(&mut Expr)) {
    match c {
        Cond::Cmp(_, a, b) => {
            visit_expr_mut(a, f);
            visit_expr_mut(b, f);
        }
        Cond::ICmp(..) => {}
        Cond::Not(a) => visit_cond_mut(a, f),
        Cond::And(a, b) | Cond::Or(a, b) => {
            visit_cond_mut(a, f);
            visit_cond_mut(b, f);
        }
    }
}

fn visit_stmts_mut(v: &mut [Stmt], f: &mut dyn FnMut(&mut Expr)) {
    for st in v {
        match st {
            Stmt::Let { value, .. }
            | Stmt::Assign { value, .. }
            | Stmt::Return(value)
            | Stmt::BufAssign { value, .. }
            | Stmt::Refill { value, .. }
            | Stmt::Replace {
                with: Replacement::Moved { value, .. },
                ..
            } => visit_expr_mut(value, f),
            Stmt::LetStruct { a, b, .. } => {
                visit_expr_mut(a, f);
                visit_expr_mut(b, f);
            }
            Stmt::LetClosure { body, .. } => visit_expr_mut(body, f),
            Stmt::LetCall { call, .. } => visit_expr_mut(call, f),
            Stmt::If { cond, then, els } => {
                visit_cond_mut(cond, f);
                visit_stmts_mut(then, f);
                visit_stmts_mut(els, f);
            }
            Stmt::Match { arms, .. } => {
                for a in arms {
                    visit_stmts_mut(a, f);
                }
            }
            Stmt::For { body, .. }
            | Stmt::Stencil { body, .. }
            | Stmt::ForSlice { body, .. }
            | Stmt::ForStructs { body, .. }
            | Stmt::While { body, .. }
            | Stmt::Loop { body, .. } => visit_stmts_mut(body, f),
            Stmt::LetPush { body, value, .. } => {
                visit_stmts_mut(body, f);
                visit_expr_mut(value, f);
            }
            Stmt::LetBuf { .. }
            | Stmt::LetCopy { .. }
            | Stmt::LetCollect { .. }
            | Stmt::Replace { .. }
            | Stmt::Break
            | Stmt::Continue => {}
        }
    }
}
