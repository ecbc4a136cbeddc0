//! Compile-time fusion (seed 004 §8.7, Fig. 15): one Delta binding per
//! straight-line real computation instead of one per operation.
//!
//! The macro sees whole expressions and statements. For an arithmetic tree
//! whose value is a differentiated real (`a * b.sin() + c`), it emits plain
//! scalar code for the value, the local partial derivatives of every
//! operation, and a reverse sweep *at compile time* over the tree, so the
//! partial derivative of the result with respect to each operand (leaf) is a
//! plain expression; then one binding with one term per active leaf.
//!
//! Across statements, a real `let` whose variable is used by only one later
//! statement of the block is not recorded at all: it is composed symbolically
//! into that statement's fused code (a *run* of statements). Assignments to
//! variables, and `let`s used more than once, are recorded where they stand.
//! Everything is still evaluated in the original order: only the recording of
//! a composed `let` is deferred, and it is recorded after all (at the end of
//! the run) if some statement needs it other than through plain arithmetic.
//! A run ends at any statement that could observe a deferred value or leave
//! the block early (`return`, `break`, `continue`, `?`).

use std::collections::{HashMap, HashSet};

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{format_ident, quote, ToTokens};
use syn::{BinOp, Block, Expr, Ident, Pat, Stmt, UnOp};

use crate::methods;
use crate::shape::Shape;
use crate::syntax::{self, CallKind};
use crate::tape::rewrite::Rewriter;

/// An operand of fused code.
#[derive(Clone, Debug)]
pub(crate) enum Sym {
    /// A value computed outside the fused code (a variable, an element, a
    /// call): a dual value if `Leaf::real` is set, else a constant.
    Leaf(usize),
    /// An operation of the fused code.
    Node(usize),
    /// A constant (scalar-valued temporary).
    Const(Ident),
}

struct Leaf {
    /// The dual value, for leaves the analysis found active.
    real: Option<Ident>,
    /// Its scalar value.
    value: Ident,
}

/// The local partial derivative of a node with respect to one operand.
enum Partial {
    Zero,
    One,
    MinusOne,
    /// A scalar-valued temporary.
    Expr(Ident),
}

struct Node {
    value: Ident,
    operands: Vec<(Sym, Partial)>,
}

/// A `let` whose recording the run defers.
struct Entry {
    name: String,
    /// The user's pattern (mutability, type), for when it is recorded.
    pat: Pat,
    sym: Sym,
}

/// Fused code being generated.
#[derive(Default)]
pub(crate) struct Run {
    code: Vec<Stmt>,
    leaves: Vec<Leaf>,
    nodes: Vec<Node>,
    entries: Vec<Entry>,
    /// Variables standing for operands directly (the loops of `loops.rs`).
    bindings: Vec<(String, Sym)>,
    /// Side-effect-free leaf expressions already evaluated, by their tokens.
    pure_leaves: HashMap<String, Sym>,
    /// When set (checkpointed loops), constant leaves are collected here, as
    /// (value local, expression), instead of being computed in the code.
    hoisted: Option<Vec<(Ident, TokenStream)>>,
}

impl Run {
    pub(crate) fn lookup(&self, name: &str) -> Option<&Sym> {
        self.entries
            .iter()
            .rev()
            .find(|e| e.name == name)
            .map(|e| &e.sym)
            .or_else(|| {
                self.bindings
                    .iter()
                    .rev()
                    .find(|(n, _)| n == name)
                    .map(|(_, s)| s)
            })
    }

    /// Makes `name` stand for `sym` in the code that follows.
    pub(crate) fn bind(&mut self, name: String, sym: Sym) {
        self.bindings.push((name, sym));
    }

    /// A leaf whose dual value (if any) and scalar value are in these locals.
    pub(crate) fn add_leaf(&mut self, real: Option<Ident>, value: Ident) -> usize {
        self.leaves.push(Leaf { real, value });
        self.leaves.len() - 1
    }

    pub(crate) fn leaf_value(&self, leaf: usize) -> Ident {
        self.leaves[leaf].value.clone()
    }

    pub(crate) fn leaf_real(&self, leaf: usize) -> Option<Ident> {
        self.leaves[leaf].real.clone()
    }

    /// The role of the leaf whose dual value is `real`.
    pub(crate) fn role_of(
        &self,
        real: &Ident,
        roles: &[(usize, crate::tape::loops::Role)],
    ) -> Option<crate::tape::loops::Role> {
        let leaf = self
            .leaves
            .iter()
            .position(|l| l.real.as_ref() == Some(real))?;
        roles
            .iter()
            .find(|(l, _)| *l == leaf)
            .map(|(_, role)| *role)
    }

    /// From now on, constant leaves are collected rather than computed.
    pub(crate) fn hoist_constants(&mut self) {
        self.hoisted = Some(Vec::new());
    }

    /// The constant leaves collected since `hoist_constants`.
    pub(crate) fn take_hoisted(&mut self) -> Vec<(Ident, TokenStream)> {
        self.hoisted.take().unwrap_or_default()
    }

    pub(crate) fn push_code(&mut self, stmt: Stmt) {
        self.code.push(stmt);
    }

    /// The code generated so far.
    pub(crate) fn code(&self) -> &[Stmt] {
        &self.code
    }

    pub(crate) fn take_code(&mut self) -> Vec<Stmt> {
        std::mem::take(&mut self.code)
    }

    pub(crate) fn pure_leaf(&self, key: &str) -> Option<&Sym> {
        self.pure_leaves.get(key)
    }

    pub(crate) fn remember_pure_leaf(&mut self, key: String, sym: Sym) {
        self.pure_leaves.insert(key, sym);
    }

    pub(crate) fn forget_pure_leaves(&mut self) {
        self.pure_leaves.clear();
    }

    /// Forgets the evaluated leaves whose expression mentions `name`.
    pub(crate) fn forget_pure_leaves_naming(&mut self, name: &str) {
        self.pure_leaves.retain(|key, _| {
            !key.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|word| word == name)
        });
    }

    fn names(&self) -> HashSet<String> {
        self.entries.iter().map(|e| e.name.clone()).collect()
    }

    fn is_empty(&self) -> bool {
        self.code.is_empty() && self.entries.is_empty()
    }
}

/// A variable summed into an accumulator inside a loop.
pub(crate) struct Accumulation {
    name: String,
    /// The accumulator and the local holding the sum's value.
    acc: (Ident, Ident),
    /// Additions to the variable in the loop, and those sent to `acc`.
    expected: usize,
    redirected: usize,
}

/// The real variables a loop adds to (`v += ...` / `v -= ...`), with counts.
struct AccumulationTargets<'a> {
    activity: &'a crate::tape::activity::Activity,
    /// Per variable: the mentions of it the updates account for, and the
    /// number of updates.
    counts: Vec<(Ident, usize, usize)>,
}

impl AccumulationTargets<'_> {
    fn count(&mut self, target: Ident, mentions: usize) {
        match self.counts.iter_mut().find(|(v, _, _)| *v == target) {
            Some((_, total, updates)) => {
                *total += mentions;
                *updates += 1;
            }
            None => self.counts.push((target, mentions, 1)),
        }
    }
}

impl<'ast> syn::visit::Visit<'ast> for AccumulationTargets<'_> {
    fn visit_expr_binary(&mut self, binary: &'ast syn::ExprBinary) {
        if matches!(binary.op, BinOp::AddAssign(_) | BinOp::SubAssign(_))
            && self.activity.expr(&binary.left) == Shape::Real
        {
            if let Some(target) = path_ident(&binary.left) {
                self.count(target, 1);
            }
        }
        syn::visit::visit_expr_binary(self, binary);
    }

    fn visit_expr_assign(&mut self, assign: &'ast syn::ExprAssign) {
        if self.activity.expr(&assign.left) == Shape::Real {
            if let Some(target) = path_ident(&assign.left) {
                if accumulated_term(&target, &assign.right).is_some() {
                    // `v = v + e` mentions `v` twice.
                    self.count(target, 2);
                }
            }
        }
        syn::visit::visit_expr_assign(self, assign);
    }

    fn visit_item(&mut self, _item: &'ast syn::Item) {}
}

/// For `v = v + e`, `v = e + v` and `v = v - e`: `e` and whether it is
/// subtracted.
fn accumulated_term<'e>(target: &Ident, value: &'e Expr) -> Option<(&'e Expr, bool)> {
    let Expr::Binary(binary) = strip_parens(value) else {
        return None;
    };
    let is_target = |e: &Expr| path_ident(strip_parens(e)).as_ref() == Some(target);
    match binary.op {
        BinOp::Add(_) if is_target(&binary.left) => Some((&binary.right, false)),
        BinOp::Add(_) if is_target(&binary.right) => Some((&binary.left, false)),
        BinOp::Sub(_) if is_target(&binary.left) => Some((&binary.right, true)),
        _ => None,
    }
}

/// The added term of `v = v + e` (see `accumulated_term`), mutably.
fn accumulated_term_mut<'e>(target: &Ident, value: &'e mut Expr) -> Option<&'e mut Expr> {
    let which = match accumulated_term(target, value) {
        Some((term, _)) => {
            let Expr::Binary(binary) = strip_parens(value) else {
                return None;
            };
            std::ptr::eq(term, &*binary.left)
        }
        None => return None,
    };
    let mut value = value;
    while let Expr::Paren(_) | Expr::Group(_) = value {
        value = match value {
            Expr::Paren(paren) => &mut paren.expr,
            Expr::Group(group) => &mut group.expr,
            _ => return None,
        };
    }
    let Expr::Binary(binary) = value else {
        return None;
    };
    Some(if which {
        &mut binary.left
    } else {
        &mut binary.right
    })
}

fn strip_parens(expr: &Expr) -> &Expr {
    match expr {
        Expr::Paren(paren) => strip_parens(&paren.expr),
        Expr::Group(group) => strip_parens(&group.expr),
        other => other,
    }
}

/// True if the tokens contain `break 'label` or `continue 'label`.
fn has_labeled_jump(tokens: &TokenStream) -> bool {
    let tokens: Vec<TokenTree> = tokens.clone().into_iter().collect();
    tokens.windows(2).any(|pair| {
        matches!(&pair[0], TokenTree::Ident(i) if i == "break" || i == "continue")
            && matches!(&pair[1], TokenTree::Punct(p) if p.as_char() == '\'')
    }) || tokens.iter().any(|token| match token {
        TokenTree::Group(group) => has_labeled_jump(&group.stream()),
        _ => false,
    })
}

/// How many times the identifier `name` occurs in `tokens`.
pub(crate) fn count_ident(tokens: &TokenStream, name: &str) -> usize {
    tokens
        .clone()
        .into_iter()
        .map(|token| match token {
            TokenTree::Ident(ident) => usize::from(ident == name),
            TokenTree::Group(group) => count_ident(&group.stream(), name),
            _ => 0,
        })
        .sum()
}

/// What a statement is to a run.
enum StmtKind {
    /// `let x = <real>;`
    Let,
    /// `x = <real>;` or `x op= <real>;` for a real variable `x`.
    Assign,
    /// `v[i] = <real>;` or `v[i] op= <real>;`.
    PlaceWrite,
    /// Anything else.
    Other,
}

impl Rewriter<'_> {
    fn temp(&mut self, prefix: &str) -> Ident {
        self.next_temp += 1;
        format_ident!(
            "__deltad_{}{}",
            prefix,
            self.next_temp,
            span = Span::mixed_site()
        )
    }

    fn scalar(&self) -> TokenStream {
        let scalar = &self.names.scalar;
        quote!(<#scalar as ::deltad::__private::Scalar>)
    }

    // ----- which expressions are fused ---------------------------------------

    /// True if `expr` is an operation of a differentiated real that fusion
    /// handles (the root of a fused tree).
    pub(crate) fn is_fusion_root(&self, expr: &Expr) -> bool {
        if self.activity.expr(expr) != Shape::Real {
            return false;
        }
        match expr {
            Expr::Binary(binary) => is_arithmetic(&binary.op),
            Expr::Unary(unary) => matches!(unary.op, UnOp::Neg(_)),
            Expr::MethodCall(call) => fusible_method(&call.method.to_string()),
            Expr::Call(call) => match &*call.func {
                Expr::Path(path) => matches!(
                    syntax::classify_call(&path.path),
                    CallKind::FloatMath(name) if fusible_method(&name)
                ),
                _ => false,
            },
            Expr::Paren(paren) => self.is_fusion_root(&paren.expr),
            _ => false,
        }
    }

    /// Replaces the real arithmetic expression `expr` by a block that
    /// computes it and records one binding.
    pub(crate) fn fuse_expression(&mut self, expr: &mut Expr) {
        let mut run = Run::default();
        let sym = self.tree(expr, &mut run);
        let result = self.materialize(&mut run, &sym);
        let code = run.code;
        *expr = self.gen_expr(quote!({ #(#code)* #result }));
    }

    /// `target op= value` for a real `target` without side effects, as
    /// `target = <fused target op value>`.
    pub(crate) fn fuse_compound_assignment(&mut self, expr: &mut Expr) -> bool {
        if let Expr::Assign(assign) = expr {
            // `v = v + e` in a loop summing into `v`.
            let Some(target) = path_ident(&assign.left) else {
                return false;
            };
            if !self.is_accumulator(&target) {
                return false;
            }
            let Some((_, subtract)) = accumulated_term(&target, &assign.right) else {
                return false;
            };
            let Some(acc) = self.accumulator_for(&target, &BinOp::AddAssign(Default::default()))
            else {
                return false;
            };
            let Some(term) = accumulated_term_mut(&target, &mut assign.right) else {
                return false;
            };
            let mut run = Run::default();
            let value = self.tree(term, &mut run);
            let add = self.accumulate(&mut run, &acc, subtract, &value);
            let code = run.code;
            *expr = self.gen_expr(quote!({ #(#code)* #add }));
            return true;
        }
        let Expr::Binary(binary) = expr else {
            return false;
        };
        let Some(op) = compound_to_arithmetic(&binary.op) else {
            return false;
        };
        if self.activity.expr(&binary.left) != Shape::Real || !is_pure(&binary.left) {
            return false;
        }
        if let Some(target) = path_ident(&binary.left) {
            if let Some(acc) = self.accumulator_for(&target, &binary.op) {
                let mut run = Run::default();
                let value = self.tree(&mut binary.right, &mut run);
                let add = self.accumulate(&mut run, &acc, matches!(op, Arith::Sub), &value);
                let code = run.code;
                *expr = self.gen_expr(quote!({ #(#code)* #add }));
                return true;
            }
        }
        self.expr(&mut binary.left, None);
        let target = (*binary.left).clone();
        let mut run = Run::default();
        let current = self.active_leaf(target.to_token_stream(), &mut run);
        let value = self.tree(&mut binary.right, &mut run);
        let sym = self.arithmetic(&mut run, op, current, value);
        let result = self.materialize(&mut run, &sym);
        let code = run.code;
        *expr = self.gen_expr(quote!(#target = { #(#code)* #result }));
        true
    }

    // ----- blocks: runs of statements ------------------------------------

    /// Rewrites the statements of `block`, fusing runs of straight-line real
    /// computations; the last expression (the block's value) gets `want`.
    pub(crate) fn fused_block(&mut self, block: &mut Block, want: Option<&Shape>) {
        let count = block.stmts.len();
        let uses = uses(&block.stmts);
        let mut out: Vec<Stmt> = Vec::with_capacity(count);
        let mut run = Run::default();
        for index in 0..count {
            let stmt = &mut block.stmts[index];
            let is_tail = index + 1 == count && matches!(stmt, Stmt::Expr(_, None));
            let kind = if is_tail {
                StmtKind::Other
            } else {
                self.stmt_kind(stmt)
            };
            let fusible = !matches!(kind, StmtKind::Other);
            let conflicts = !run.entries.is_empty() && {
                let names = run.names();
                if !may_run_past(stmt) {
                    true
                } else if fusible {
                    self.leaf_names_conflict(stmt, &names)
                } else {
                    mentions_any(&stmt.to_token_stream(), &names)
                }
            };
            // The block's value must come after everything the run records.
            if conflicts || is_tail {
                self.flush(&mut run, &uses, index, &mut out);
            }
            match kind {
                StmtKind::Let => self.fuse_let(stmt, &mut run, &uses, index),
                StmtKind::Assign => self.fuse_assign(stmt, &mut run),
                StmtKind::PlaceWrite => self.fuse_place_write(stmt, &mut run),
                StmtKind::Other => {
                    let replacement = match self.preaccumulated_loop(stmt) {
                        Some(replacement) => Some(replacement),
                        None => self.whole_loop(stmt),
                    };
                    // A statement the run does not fuse may shadow or assign
                    // any name: the leaves the run has evaluated are stale
                    // (found by the fuzzer, see tests/fuzz_regressions.rs).
                    run.forget_pure_leaves();
                    if let Some(replacement) = replacement {
                        let target = if run.is_empty() {
                            &mut out
                        } else {
                            &mut run.code
                        };
                        target.extend(replacement);
                        continue;
                    }
                    let (prologue, epilogue) = self.start_accumulators(stmt);
                    self.stmt(stmt, if is_tail { want } else { None }, is_tail);
                    let finished = self.finish_accumulators(stmt, epilogue);
                    let mut stmt = std::mem::replace(stmt, placeholder());
                    // A tail expression (a loop whose value the block
                    // returns) must stay last: its value is kept while the
                    // accumulators finish.
                    let mut tail = None;
                    if let (true, false, Stmt::Expr(expr, None)) =
                        (is_tail, finished.is_empty(), &stmt)
                    {
                        let value = Ident::new("__deltad_tail", Span::mixed_site());
                        tail = Some(Stmt::Expr(syn::parse_quote!(#value), None));
                        stmt = syn::parse_quote!(let #value = #expr;);
                    }
                    let target = if run.is_empty() {
                        &mut out
                    } else {
                        &mut run.code
                    };
                    target.extend(prologue);
                    target.push(stmt);
                    target.extend(finished);
                    target.extend(tail);
                }
            }
        }
        // A run at the end of the block: its variables are not used inside
        // the block any more, but assignments must still happen.
        self.flush(&mut run, &uses, count, &mut out);
        block.stmts = out;
    }

    // ----- accumulators ------------------------------------------------------

    /// For a loop that only ever adds to some real variables (`s += ...`,
    /// `s -= ...`, and no other mention of `s`), starts an accumulator per
    /// variable: the statements to put before the loop, and the variables.
    pub(crate) fn start_accumulators(&mut self, stmt: &Stmt) -> (Vec<Stmt>, Vec<Ident>) {
        let Stmt::Expr(expr @ (Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_)), _) = stmt else {
            return (Vec::new(), Vec::new());
        };
        let tokens = expr.to_token_stream();
        if has_labeled_jump(&tokens) {
            return (Vec::new(), Vec::new());
        }
        let mut targets = AccumulationTargets {
            activity: self.activity,
            counts: Vec::new(),
        };
        syn::visit::Visit::visit_expr(&mut targets, expr);
        let mut prologue = Vec::new();
        let mut variables = Vec::new();
        for (variable, mentions, updates) in targets.counts {
            let name = variable.to_string();
            let already = self.accumulators.iter().any(|a| a.name == name);
            if already || count_ident(&tokens, &name) != mentions {
                continue;
            }
            let acc = self.temp("acc");
            let acc_value = self.temp("accv");
            let tape = &self.names.tape;
            prologue.push(self.gen_stmt(quote!(
                let mut #acc = ::deltad::__private::Accumulator::start(#tape, &#variable);
            )));
            prologue.push(self.gen_stmt(quote!(let mut #acc_value = #variable.value();)));
            self.accumulators.push(Accumulation {
                name,
                acc: (acc, acc_value),
                expected: updates,
                redirected: 0,
            });
            variables.push(variable);
        }
        (prologue, variables)
    }

    /// Ends the accumulators of `variables`: the statements to put after the
    /// loop. Every addition must have gone to its accumulator.
    pub(crate) fn finish_accumulators(&mut self, stmt: &Stmt, variables: Vec<Ident>) -> Vec<Stmt> {
        let mut epilogue = Vec::new();
        for variable in variables.into_iter().rev() {
            let Some(accumulation) = self.accumulators.pop() else {
                break;
            };
            if accumulation.redirected != accumulation.expected {
                self.errors.at(stmt, format!("deltad internal error: {} of {} updates of `{variable}` were accumulated (please report this bug)", accumulation.redirected, accumulation.expected));
            }
            let (acc, acc_value) = &accumulation.acc;
            epilogue.push(self.gen_stmt(quote!(#variable = #acc.finish(#acc_value);)));
        }
        epilogue
    }

    /// True if the loop `looping` only ever adds to `variable` (the
    /// condition for an accumulator).
    pub(crate) fn only_accumulates(&self, looping: &syn::ExprForLoop, variable: &Ident) -> bool {
        let mut targets = AccumulationTargets {
            activity: self.activity,
            counts: Vec::new(),
        };
        // The loop itself, not a copy: the analysis knows nodes by address.
        syn::visit::Visit::visit_expr_for_loop(&mut targets, looping);
        let tokens = looping.to_token_stream();
        !has_labeled_jump(&tokens)
            && targets.counts.iter().any(|(target, mentions, _)| {
                target == variable && count_ident(&tokens, &variable.to_string()) == *mentions
            })
    }

    /// The accumulator collecting the sum into `variable`, if one does.
    pub(crate) fn accumulator_of(&self, variable: &Ident) -> Option<Ident> {
        let name = variable.to_string();
        self.accumulators
            .iter()
            .rev()
            .find(|a| a.name == name)
            .map(|a| a.acc.0.clone())
    }

    fn is_accumulator(&self, target: &Ident) -> bool {
        self.is_accumulating(&target.to_string())
    }

    /// True if an enclosing loop sums into the variable `name`.
    pub(crate) fn is_accumulating(&self, name: &str) -> bool {
        self.accumulators.iter().any(|a| a.name == name)
    }

    /// The accumulator receiving `target op= ...`, if any.
    fn accumulator_for(&mut self, target: &Ident, op: &BinOp) -> Option<(Ident, Ident)> {
        if !matches!(op, BinOp::AddAssign(_) | BinOp::SubAssign(_)) {
            return None;
        }
        let name = target.to_string();
        let accumulation = self
            .accumulators
            .iter_mut()
            .rev()
            .find(|a| a.name == name)?;
        accumulation.redirected += 1;
        Some(accumulation.acc.clone())
    }

    fn stmt_kind(&self, stmt: &Stmt) -> StmtKind {
        match stmt {
            Stmt::Local(local) if local.attrs.is_empty() => {
                let simple = match &local.pat {
                    Pat::Ident(ident) => ident.by_ref.is_none() && ident.subpat.is_none(),
                    Pat::Type(typed) => matches!(&*typed.pat,
                        Pat::Ident(ident) if ident.by_ref.is_none() && ident.subpat.is_none()),
                    _ => false,
                };
                let real_binding = self.activity.pat(&local.pat) == Shape::Real;
                let scalar_init = local.init.as_ref().is_some_and(|init| {
                    init.diverge.is_none()
                        && !is_enum_value(&init.expr)
                        && matches!(
                            self.activity.expr(&init.expr),
                            Shape::Real | Shape::Inactive | Shape::Opaque
                        )
                });
                // `let t: f64 = iter.sum();`: the annotation is what fixes
                // the type of a generic result; such a let stays a statement.
                let needs_annotation = matches!(&local.pat, Pat::Type(_))
                    && local.init.as_ref().is_some_and(|init| {
                        !self.is_fusion_root(&init.expr) && !is_pure(&init.expr)
                    });
                if simple && real_binding && scalar_init && !needs_annotation {
                    StmtKind::Let
                } else {
                    StmtKind::Other
                }
            }
            Stmt::Expr(expr, Some(_)) => {
                let (target, is_assignment) = match expr {
                    Expr::Assign(assign) if assign.attrs.is_empty() => (&*assign.left, true),
                    Expr::Binary(binary)
                        if binary.attrs.is_empty()
                            && compound_to_arithmetic(&binary.op).is_some() =>
                    {
                        (&*binary.left, false)
                    }
                    _ => return StmtKind::Other,
                };
                if let Expr::Assign(assign) = expr {
                    if is_enum_value(&assign.right) {
                        return StmtKind::Other;
                    }
                }
                if self.activity.expr(target) != Shape::Real {
                    return StmtKind::Other;
                }
                match target {
                    Expr::Path(path) if path.qself.is_none() && path.path.get_ident().is_some() => {
                        StmtKind::Assign
                    }
                    Expr::Index(_) if is_assignment || is_pure(target) => StmtKind::PlaceWrite,
                    _ => StmtKind::Other,
                }
            }
            _ => StmtKind::Other,
        }
    }

    /// True if a fusible statement would need a value of the run outside plain
    /// arithmetic (inside a call, an index, a condition...).
    fn leaf_names_conflict(&self, stmt: &Stmt, names: &HashSet<String>) -> bool {
        let mut found = HashSet::new();
        match stmt {
            Stmt::Local(local) => {
                if let Some(init) = &local.init {
                    self.leaf_idents(&init.expr, &mut found);
                }
            }
            Stmt::Expr(Expr::Assign(assign), _) => {
                if !matches!(&*assign.left, Expr::Path(_)) {
                    collect_idents(&assign.left.to_token_stream(), &mut found);
                }
                self.leaf_idents(&assign.right, &mut found);
            }
            Stmt::Expr(Expr::Binary(binary), _) => {
                if !matches!(&*binary.left, Expr::Path(_)) {
                    collect_idents(&binary.left.to_token_stream(), &mut found);
                }
                self.leaf_idents(&binary.right, &mut found);
            }
            other => collect_idents(&other.to_token_stream(), &mut found),
        }
        !found.is_disjoint(names)
    }

    /// The identifiers appearing in the leaves of the tree `expr` (not those
    /// used directly as operands).
    fn leaf_idents(&self, expr: &Expr, found: &mut HashSet<String>) {
        match expr {
            Expr::Paren(paren) => self.leaf_idents(&paren.expr, found),
            Expr::Group(group) => self.leaf_idents(&group.expr, found),
            Expr::Path(path) if path.qself.is_none() && path.path.get_ident().is_some() => {}
            Expr::Lit(_) => {}
            _ if self.activity.expr(expr).is_active() && self.is_fusion_root(expr) => match expr {
                Expr::Binary(binary) => {
                    self.leaf_idents(&binary.left, found);
                    self.leaf_idents(&binary.right, found);
                }
                Expr::Unary(unary) => self.leaf_idents(&unary.expr, found),
                Expr::MethodCall(call) => {
                    self.leaf_idents(&call.receiver, found);
                    for arg in &call.args {
                        self.leaf_idents(arg, found);
                    }
                }
                Expr::Call(call) => {
                    for arg in &call.args {
                        self.leaf_idents(arg, found);
                    }
                }
                other => collect_idents(&other.to_token_stream(), found),
            },
            other => collect_idents(&other.to_token_stream(), found),
        }
    }

    fn fuse_let(&mut self, stmt: &mut Stmt, run: &mut Run, uses: &Uses, index: usize) {
        let Stmt::Local(local) = stmt else { return };
        let Some(init) = &mut local.init else { return };
        let sym = self.tree(&mut init.expr, run);
        self.pattern(&mut local.pat);
        let ident = match &local.pat {
            Pat::Ident(ident) => ident.ident.clone(),
            Pat::Type(typed) => match &*typed.pat {
                Pat::Ident(ident) => ident.ident.clone(),
                _ => return,
            },
            _ => return,
        };
        let name = ident.to_string();
        run.entries.retain(|e| e.name != name);
        // A `let` that shadows a name: leaves read through the old binding
        // must not stand for the new one (found by the fuzzer, see
        // tests/fuzz_regressions.rs).
        run.forget_pure_leaves_naming(&name);
        if uses.statements_from(&name, index + 1) == 1 {
            // Used by one later statement: compose it there if possible.
            run.entries.push(Entry {
                name,
                pat: local.pat.clone(),
                sym,
            });
        } else {
            let value = self.materialize(run, &sym);
            let pat = &local.pat;
            run.code.push(self.gen_stmt(quote!(let #pat = #value;)));
        }
        *stmt = placeholder();
    }

    fn fuse_assign(&mut self, stmt: &mut Stmt, run: &mut Run) {
        let Stmt::Expr(expr, _) = stmt else { return };
        let (target, sym) = match expr {
            Expr::Assign(assign) => {
                if let Some(target) = path_ident(&assign.left) {
                    if self.is_accumulator(&target) {
                        let subtract = accumulated_term(&target, &assign.right)
                            .is_some_and(|(_, subtract)| subtract);
                        if let Some(term) = accumulated_term_mut(&target, &mut assign.right) {
                            let acc = self
                                .accumulator_for(&target, &BinOp::AddAssign(Default::default()));
                            if let Some(acc) = acc {
                                let value = self.tree(term, run);
                                let add = self.accumulate(run, &acc, subtract, &value);
                                run.code.push(add);
                                *stmt = placeholder();
                                return;
                            }
                        }
                    }
                }
                let sym = self.tree(&mut assign.right, run);
                (path_ident(&assign.left), sym)
            }
            Expr::Binary(binary) => {
                let Some(op) = compound_to_arithmetic(&binary.op) else {
                    return;
                };
                let Some(target) = path_ident(&binary.left) else {
                    return;
                };
                if let Some(acc) = self.accumulator_for(&target, &binary.op) {
                    let value = self.tree(&mut binary.right, run);
                    let subtract = matches!(op, Arith::Sub);
                    let stmt_out = self.accumulate(run, &acc, subtract, &value);
                    run.code.push(stmt_out);
                    *stmt = placeholder();
                    return;
                }
                let current = match run.lookup(&target.to_string()) {
                    Some(sym) => sym.clone(),
                    None => self.active_leaf(target.to_token_stream(), run),
                };
                let value = self.tree(&mut binary.right, run);
                (Some(target), self.arithmetic(run, op, current, value))
            }
            _ => return,
        };
        let Some(target) = target else { return };
        let value = self.materialize(run, &sym);
        let name = target.to_string();
        match run.entries.iter().position(|e| e.name == name) {
            // Assigning a `let` whose declaration was deferred: declare it now.
            Some(position) => {
                let entry = run.entries.remove(position);
                let pat = &entry.pat;
                run.code.push(self.gen_stmt(quote!(let #pat = #value;)));
            }
            None => run.code.push(self.gen_stmt(quote!(#target = #value;))),
        }
        // The variable has a new value: leaves that read it are stale.
        run.pure_leaves.clear();
        *stmt = placeholder();
    }

    fn fuse_place_write(&mut self, stmt: &mut Stmt, run: &mut Run) {
        let Stmt::Expr(expr, _) = stmt else { return };
        let (place, sym) = match expr {
            Expr::Assign(assign) => {
                let sym = self.tree(&mut assign.right, run);
                self.expr(&mut assign.left, None);
                ((*assign.left).clone(), sym)
            }
            Expr::Binary(binary) => {
                let Some(op) = compound_to_arithmetic(&binary.op) else {
                    return;
                };
                self.expr(&mut binary.left, None);
                let place = (*binary.left).clone();
                let current = self.active_leaf(place.to_token_stream(), run);
                let value = self.tree(&mut binary.right, run);
                (place, self.arithmetic(run, op, current, value))
            }
            _ => return,
        };
        let value = self.materialize(run, &sym);
        run.code.push(self.gen_stmt(quote!(#place = #value;)));
        // The write may change what earlier pure leaves read.
        run.pure_leaves.clear();
        *stmt = placeholder();
    }

    /// Ends a run: records the deferred `let`s still needed (used by a later
    /// statement) and moves the run's code to `out`.
    fn flush(&mut self, run: &mut Run, uses: &Uses, next_index: usize, out: &mut Vec<Stmt>) {
        let entries = std::mem::take(&mut run.entries);
        for entry in entries {
            if uses.statements_from(&entry.name, next_index) > 0 {
                let value = self.materialize(run, &entry.sym);
                let pat = &entry.pat;
                run.code.push(self.gen_stmt(quote!(let #pat = #value;)));
            }
        }
        out.append(&mut run.code);
        *run = Run::default();
    }

    // ----- trees -----------------------------------------------------------

    /// The operand computing `expr` in fused code.
    pub(crate) fn tree(&mut self, expr: &mut Expr, run: &mut Run) -> Sym {
        if let Expr::Path(path) = &*expr {
            if let Some(ident) = path.path.get_ident() {
                if path.qself.is_none() {
                    if let Some(sym) = run.lookup(&ident.to_string()) {
                        return sym.clone();
                    }
                }
            }
        }
        let shape = self.activity.expr(expr);
        match expr {
            Expr::Paren(paren) => return self.tree(&mut paren.expr, run),
            Expr::Group(group) => return self.tree(&mut group.expr, run),
            // `*r` of a variable: the variable, which `into_real` takes by
            // reference or by value (`let r = &x[0];` may be fused into a
            // value).
            Expr::Unary(unary)
                if matches!(unary.op, UnOp::Deref(_))
                    && matches!(&*unary.expr, Expr::Path(_))
                    && shape == Shape::Real =>
            {
                return self.tree(&mut unary.expr, run)
            }
            _ => {}
        }
        if shape != Shape::Real || !self.is_fusion_root(expr) {
            return self.leaf(expr, run);
        }
        match expr {
            Expr::Binary(binary) => {
                let Some(op) = arithmetic_op(&binary.op) else {
                    return self.leaf(expr, run);
                };
                let left = self.tree(&mut binary.left, run);
                let right = self.tree(&mut binary.right, run);
                self.arithmetic(run, op, left, right)
            }
            Expr::Unary(unary) => {
                let operand = self.tree(&mut unary.expr, run);
                let value = self.temp("n");
                let x = self.value_of(run, &operand);
                run.code.push(self.gen_stmt(quote!(let #value = -#x;)));
                self.node(run, value, vec![(operand, Partial::MinusOne)])
            }
            Expr::MethodCall(call) => {
                let name = call.method.to_string();
                let receiver = self.tree(&mut call.receiver, run);
                self.math(run, &name, receiver, call.args.iter_mut().collect())
            }
            Expr::Call(call) => {
                let Expr::Path(path) = &*call.func else {
                    return self.leaf(expr, run);
                };
                let CallKind::FloatMath(name) = syntax::classify_call(&path.path) else {
                    return self.leaf(expr, run);
                };
                let mut args = call.args.iter_mut();
                let Some(first) = args.next() else {
                    return self.leaf(expr, run);
                };
                let receiver = self.tree(first, run);
                self.math(run, &name, receiver, args.collect())
            }
            _ => self.leaf(expr, run),
        }
    }

    /// An operand computed outside the fused code.
    fn leaf(&mut self, expr: &mut Expr, run: &mut Run) -> Sym {
        let key = is_pure(expr).then(|| expr.to_token_stream().to_string());
        if let Some(sym) = key.as_ref().and_then(|key| run.pure_leaves.get(key)) {
            return sym.clone();
        }
        let active = self.activity.expr(expr).is_active();
        self.expr(expr, None);
        let taken = std::mem::replace(expr, Expr::Verbatim(TokenStream::new()));
        let sym = if active {
            self.active_leaf(taken.to_token_stream(), run)
        } else {
            let value = self.temp("c");
            let scalar = &self.names.scalar;
            match &mut run.hoisted {
                Some(hoisted) => hoisted.push((value.clone(), taken.to_token_stream())),
                None => run.code.push(self.gen_stmt(quote!(
                    let #value: #scalar = ::deltad::__private::constant((#taken));
                ))),
            }
            Sym::Const(value)
        };
        if let Some(key) = key {
            run.pure_leaves.insert(key, sym.clone());
        }
        sym
    }

    /// A leaf holding a dual value (or a machine float, which becomes a constant).
    pub(crate) fn active_leaf(&mut self, tokens: TokenStream, run: &mut Run) -> Sym {
        let real = self.temp("l");
        let value = self.temp("v");
        let real_type = self.names.real_type();
        run.code.push(self.gen_stmt(quote!(
            let #real: #real_type = ::deltad::__private::IntoReal::into_real((#tokens));
        )));
        run.code
            .push(self.gen_stmt(quote!(let #value = #real.value();)));
        run.leaves.push(Leaf {
            real: Some(real),
            value,
        });
        Sym::Leaf(run.leaves.len() - 1)
    }

    fn value_of(&self, run: &Run, sym: &Sym) -> Ident {
        match sym {
            Sym::Leaf(index) => run.leaves[*index].value.clone(),
            Sym::Node(index) => run.nodes[*index].value.clone(),
            Sym::Const(ident) => ident.clone(),
        }
    }

    fn node(&mut self, run: &mut Run, value: Ident, operands: Vec<(Sym, Partial)>) -> Sym {
        run.nodes.push(Node { value, operands });
        Sym::Node(run.nodes.len() - 1)
    }

    pub(crate) fn arithmetic(&mut self, run: &mut Run, op: Arith, left: Sym, right: Sym) -> Sym {
        let (a, b) = (self.value_of(run, &left), self.value_of(run, &right));
        let value = self.temp("n");
        let one = self.scalar();
        let (partial_left, partial_right) = match op {
            Arith::Add => {
                run.code.push(self.gen_stmt(quote!(let #value = #a + #b;)));
                (Partial::One, Partial::One)
            }
            Arith::Sub => {
                run.code.push(self.gen_stmt(quote!(let #value = #a - #b;)));
                (Partial::One, Partial::MinusOne)
            }
            Arith::Mul => {
                run.code.push(self.gen_stmt(quote!(let #value = #a * #b;)));
                (Partial::Expr(b.clone()), Partial::Expr(a.clone()))
            }
            Arith::Div => {
                let (d_a, d_b) = (self.temp("d"), self.temp("d"));
                run.code.push(self.gen_stmt(quote!(let #value = #a / #b;)));
                run.code
                    .push(self.gen_stmt(quote!(let #d_a = #one::one() / #b;)));
                run.code
                    .push(self.gen_stmt(quote!(let #d_b = -#value / #b;)));
                (Partial::Expr(d_a), Partial::Expr(d_b))
            }
            Arith::Rem => {
                let (d_a, d_b) = (self.temp("d"), self.temp("d"));
                run.code.push(self.gen_stmt(quote!(
                    let (#value, #d_a, #d_b) = ::deltad::__private::multi_rules::rem(#a, #b);
                )));
                (Partial::Expr(d_a), Partial::Expr(d_b))
            }
        };
        self.node(
            run,
            value,
            vec![(left, partial_left), (right, partial_right)],
        )
    }

    /// A math method applied to `receiver` with `args`.
    fn math(&mut self, run: &mut Run, name: &str, receiver: Sym, args: Vec<&mut Expr>) -> Sym {
        let x = self.value_of(run, &receiver);
        let value = self.temp("n");
        if methods::UNARY_MATH.contains(&name) && args.is_empty() {
            let method = Ident::new(name, Span::call_site());
            if CONSTANT_RULES.contains(&name) {
                run.code.push(self.gen_stmt(quote!(
                    let (#value, _) = ::deltad::__private::constant_rules::#method(#x);
                )));
                return self.node(run, value, vec![(receiver, Partial::Zero)]);
            }
            let module = if matches!(name, "to_degrees" | "to_radians") {
                quote!(multi_rules)
            } else {
                quote!(unary_rules)
            };
            let derivative = self.temp("d");
            run.code.push(self.gen_stmt(quote!(
                let (#value, #derivative) = ::deltad::__private::#module::#method(#x);
            )));
            return self.node(run, value, vec![(receiver, Partial::Expr(derivative))]);
        }
        let method = Ident::new(name, Span::call_site());
        if name == "powi" {
            let Some(n) = args.into_iter().next() else {
                return receiver;
            };
            self.expr(n, None);
            let derivative = self.temp("d");
            run.code.push(self.gen_stmt(quote!(
                let (#value, #derivative) = ::deltad::__private::multi_rules::powi(#x, #n);
            )));
            return self.node(run, value, vec![(receiver, Partial::Expr(derivative))]);
        }
        let mut operands = vec![receiver];
        for arg in args {
            operands.push(self.tree(arg, run));
        }
        let values: Vec<Ident> = operands.iter().map(|s| self.value_of(run, s)).collect();
        let derivatives: Vec<Ident> = operands.iter().map(|_| self.temp("d")).collect();
        run.code.push(self.gen_stmt(quote!(
            let (#value, #(#derivatives),*) = ::deltad::__private::multi_rules::#method(#(#values),*);
        )));
        let operands = operands
            .into_iter()
            .zip(derivatives)
            .map(|(sym, derivative)| (sym, Partial::Expr(derivative)))
            .collect();
        self.node(run, value, operands)
    }

    /// A dual-value expression for `sym`: for a node, the compile-time
    /// reverse sweep over the nodes it depends on, and one binding with a term
    /// per active leaf.
    fn materialize(&mut self, run: &mut Run, sym: &Sym) -> TokenStream {
        let real_type = self.names.real_type();
        match self.terms(run, sym) {
            Terms::Leaf(real) => quote!(#real),
            Terms::Sum(value, terms) if terms.is_empty() => {
                quote!(<#real_type>::constant(#value))
            }
            // Straight-line recording for up to 8 operands, a loop beyond.
            Terms::Sum(value, terms) if terms.len() <= 8 => {
                let fused = format_ident!("fused{}", terms.len());
                let terms = terms
                    .iter()
                    .map(|(real, partial)| quote!((#real, #partial)));
                quote!(<#real_type>::#fused(#value, #(#terms),*))
            }
            Terms::Sum(value, terms) => {
                let terms = terms
                    .iter()
                    .map(|(real, partial)| quote!((#real, #partial)));
                quote!(<#real_type>::fused(#value, [#(#terms),*]))
            }
        }
    }

    /// A statement adding (or subtracting) `sym` to the accumulator `acc`,
    /// whose value is kept in a separate local.
    fn accumulate(
        &mut self,
        run: &mut Run,
        acc: &(Ident, Ident),
        subtract: bool,
        sym: &Sym,
    ) -> Stmt {
        let (value, terms) = match self.terms(run, sym) {
            Terms::Leaf(real) => {
                let one = self.scalar();
                let value = quote!(#real.value());
                (value, vec![(real, quote!(#one::one()))])
            }
            Terms::Sum(value, terms) => (quote!(#value), terms),
        };
        let (acc, acc_value) = acc;
        let sign = subtract.then(|| quote!(-));
        let update = if subtract { quote!(-=) } else { quote!(+=) };
        let terms = terms
            .iter()
            .map(|(real, partial)| quote!((#real, #sign(#partial))));
        self.gen_stmt(quote!({
            #acc_value #update #value;
            #acc.add([#(#terms),*]);
        }))
    }

    /// The value of `sym` and its partial derivative with respect to each
    /// active leaf, from a reverse sweep at compile time over the nodes it
    /// depends on (or the leaf itself).
    pub(crate) fn terms(&mut self, run: &mut Run, sym: &Sym) -> Terms {
        let real_type = self.names.real_type();
        let root = match sym {
            Sym::Leaf(index) => {
                let leaf = &run.leaves[*index];
                return match &leaf.real {
                    Some(real) => Terms::Leaf(real.clone()),
                    None => {
                        let value = leaf.value.clone();
                        let real = self.temp("l");
                        run.code.push(
                            self.gen_stmt(quote!(let #real = <#real_type>::constant(#value);)),
                        );
                        Terms::Leaf(real)
                    }
                };
            }
            Sym::Const(value) => return Terms::Sum(value.clone(), Vec::new()),
            Sym::Node(index) => *index,
        };
        // Nodes are created operands-first, so a node's operands have smaller
        // indices: visiting indices downwards is a reverse topological order.
        let mut reachable = vec![false; root + 1];
        reachable[root] = true;
        for index in (0..=root).rev() {
            if !reachable[index] {
                continue;
            }
            for (operand, _) in &run.nodes[index].operands {
                if let Sym::Node(n) = operand {
                    reachable[*n] = true;
                }
            }
        }
        let one = self.scalar();
        let mut node_adjoints: HashMap<usize, Vec<Coefficient>> = HashMap::new();
        let mut leaf_adjoints: Vec<(usize, Vec<Coefficient>)> = Vec::new();
        for index in (0..=root).rev() {
            if !reachable[index] {
                continue;
            }
            let adjoint = if index == root {
                Coefficient::One
            } else {
                let Some(parts) = node_adjoints.remove(&index) else {
                    continue;
                };
                match Coefficient::simple(&parts) {
                    // A single simple contribution is used as it is: no
                    // temporary, so `1 * p` never appears and equal partials
                    // are spelled the same (loops store each once).
                    Some(simple) => simple,
                    None => {
                        let temp = self.temp("a");
                        let sum = Coefficient::sum(&parts, &one);
                        run.code.push(self.gen_stmt(quote!(let #temp = #sum;)));
                        Coefficient::Value(quote!(#temp))
                    }
                }
            };
            for (operand, partial) in &run.nodes[index].operands {
                let contribution = match partial {
                    Partial::Zero => continue,
                    Partial::One => adjoint.clone(),
                    Partial::MinusOne => adjoint.negated(),
                    Partial::Expr(p) => adjoint.times(p),
                };
                match operand {
                    Sym::Node(n) => node_adjoints.entry(*n).or_default().push(contribution),
                    Sym::Leaf(l) if run.leaves[*l].real.is_some() => {
                        match leaf_adjoints.iter_mut().find(|(k, _)| k == l) {
                            Some((_, parts)) => parts.push(contribution),
                            None => leaf_adjoints.push((*l, vec![contribution])),
                        }
                    }
                    _ => {}
                }
            }
        }
        leaf_adjoints.sort_by_key(|(leaf, _)| *leaf);
        let terms = leaf_adjoints
            .into_iter()
            .filter_map(|(leaf, parts)| {
                let real = run.leaves[leaf].real.clone()?;
                Some((real, Coefficient::sum(&parts, &one)))
            })
            .collect();
        Terms::Sum(run.nodes[root].value.clone(), terms)
    }
}

/// A coefficient of the compile-time reverse sweep: an adjoint or a
/// contribution to one.
#[derive(Clone)]
enum Coefficient {
    One,
    MinusOne,
    /// A scalar expression: a temporary, or a product or negation of them.
    Value(TokenStream),
}

impl Coefficient {
    fn negated(&self) -> Coefficient {
        match self {
            Coefficient::One => Coefficient::MinusOne,
            Coefficient::MinusOne => Coefficient::One,
            Coefficient::Value(v) => Coefficient::Value(quote!(-#v)),
        }
    }

    /// `self * p` for a partial derivative held in the temporary `p`.
    fn times(&self, p: &Ident) -> Coefficient {
        match self {
            Coefficient::One => Coefficient::Value(quote!(#p)),
            Coefficient::MinusOne => Coefficient::Value(quote!(-#p)),
            Coefficient::Value(v) => Coefficient::Value(quote!(#v * #p)),
        }
    }

    /// The coefficient itself if `parts` is one coefficient that is a
    /// constant, a temporary or its negation.
    fn simple(parts: &[Coefficient]) -> Option<Coefficient> {
        let [only] = parts else {
            return None;
        };
        match only {
            Coefficient::Value(v) => {
                let tokens: Vec<TokenTree> = v.clone().into_iter().collect();
                let simple = match tokens.as_slice() {
                    [TokenTree::Ident(_)] => true,
                    [TokenTree::Punct(minus), TokenTree::Ident(_)] => minus.as_char() == '-',
                    _ => false,
                };
                simple.then(|| only.clone())
            }
            constant => Some(constant.clone()),
        }
    }

    /// The sum of `parts` as a scalar expression; `one` is the scalar type's
    /// path to `one()`.
    fn sum(parts: &[Coefficient], one: &TokenStream) -> TokenStream {
        let parts = parts.iter().map(|part| match part {
            Coefficient::One => quote!(#one::one()),
            Coefficient::MinusOne => quote!((-#one::one())),
            Coefficient::Value(v) => v.clone(),
        });
        quote!(#(#parts)+*)
    }
}

/// What a fused value is made of.
pub(crate) enum Terms {
    /// Exactly a dual value computed elsewhere.
    Leaf(Ident),
    /// A value with partial derivatives with respect to dual values.
    Sum(Ident, Vec<(Ident, TokenStream)>),
}

/// Arithmetic operators fused code handles.
#[derive(Clone, Copy)]
pub(crate) enum Arith {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

fn arithmetic_op(op: &BinOp) -> Option<Arith> {
    Some(match op {
        BinOp::Add(_) => Arith::Add,
        BinOp::Sub(_) => Arith::Sub,
        BinOp::Mul(_) => Arith::Mul,
        BinOp::Div(_) => Arith::Div,
        BinOp::Rem(_) => Arith::Rem,
        _ => return None,
    })
}

fn is_arithmetic(op: &BinOp) -> bool {
    arithmetic_op(op).is_some()
}

pub(crate) fn compound_to_arithmetic(op: &BinOp) -> Option<Arith> {
    Some(match op {
        BinOp::AddAssign(_) => Arith::Add,
        BinOp::SubAssign(_) => Arith::Sub,
        BinOp::MulAssign(_) => Arith::Mul,
        BinOp::DivAssign(_) => Arith::Div,
        BinOp::RemAssign(_) => Arith::Rem,
        _ => return None,
    })
}

/// Piecewise-constant methods (derivative 0).
const CONSTANT_RULES: &[&str] = &[
    "floor",
    "ceil",
    "round",
    "round_ties_even",
    "trunc",
    "signum",
];

/// Math methods fused code computes (all but `sin_cos`, which returns a pair).
fn fusible_method(name: &str) -> bool {
    methods::is_math_method(name) && name != "sin_cos"
}

/// True if evaluating `expr` twice (or reusing its value) is the same as
/// evaluating it once: variables, literals, elements at such indices.
pub(crate) fn is_pure(expr: &Expr) -> bool {
    match expr {
        Expr::Path(path) => path.qself.is_none(),
        Expr::Lit(_) => true,
        Expr::Paren(paren) => is_pure(&paren.expr),
        Expr::Group(group) => is_pure(&group.expr),
        Expr::Index(index) => is_pure(&index.expr) && is_pure(&index.index),
        Expr::Field(field) => is_pure(&field.base),
        Expr::Unary(unary) => is_pure(&unary.expr),
        Expr::Reference(reference) => reference.mutability.is_none() && is_pure(&reference.expr),
        Expr::Binary(binary) => {
            !syntax::is_compound_assignment(&binary.op)
                && is_pure(&binary.left)
                && is_pure(&binary.right)
        }
        Expr::Cast(cast) => is_pure(&cast.expr),
        Expr::MethodCall(call) => {
            call.method == "len" && call.args.is_empty() && is_pure(&call.receiver)
        }
        _ => false,
    }
}

fn path_ident(expr: &Expr) -> Option<Ident> {
    match expr {
        Expr::Path(path) if path.qself.is_none() => path.path.get_ident().cloned(),
        _ => None,
    }
}

pub(crate) fn placeholder() -> Stmt {
    Stmt::Expr(Expr::Verbatim(TokenStream::new()), Some(Default::default()))
}

/// False if the statement may leave the block early (so a run cannot span it).
fn may_run_past(stmt: &Stmt) -> bool {
    fn scan(tokens: TokenStream) -> bool {
        tokens.into_iter().all(|token| match token {
            TokenTree::Ident(ident) => {
                !(ident == "return" || ident == "break" || ident == "continue")
            }
            TokenTree::Punct(punct) => punct.as_char() != '?',
            TokenTree::Group(group) => scan(group.stream()),
            TokenTree::Literal(_) => true,
        })
    }
    !matches!(stmt, Stmt::Item(_)) && scan(stmt.to_token_stream())
}

pub(crate) fn collect_idents(tokens: &TokenStream, found: &mut HashSet<String>) {
    for token in tokens.clone() {
        match token {
            TokenTree::Ident(ident) => {
                found.insert(ident.to_string());
            }
            TokenTree::Group(group) => collect_idents(&group.stream(), found),
            _ => {}
        }
    }
}

fn mentions_any(tokens: &TokenStream, names: &HashSet<String>) -> bool {
    let mut found = HashSet::new();
    collect_idents(tokens, &mut found);
    !found.is_disjoint(names)
}

/// Which statements of a block mention each identifier.
pub(crate) struct Uses(HashMap<String, Vec<usize>>);

impl Uses {
    /// The number of statements from `index` on that mention `name`.
    fn statements_from(&self, name: &str, index: usize) -> usize {
        self.0
            .get(name)
            .map_or(0, |at| at.iter().filter(|&&i| i >= index).count())
    }
}

fn uses(stmts: &[Stmt]) -> Uses {
    let mut uses: HashMap<String, Vec<usize>> = HashMap::new();
    for (index, stmt) in stmts.iter().enumerate() {
        let mut found = HashSet::new();
        collect_idents(&stmt.to_token_stream(), &mut found);
        for name in found {
            uses.entry(name).or_default().push(index);
        }
    }
    Uses(uses)
}

/// `Some(..)`, `None` and other variant or tuple-struct constructions: the
/// activity analysis gives them their payload's shape, but they are not
/// reals, so a statement producing one is not fused arithmetic.
fn is_enum_value(expr: &Expr) -> bool {
    match strip_parens(expr) {
        Expr::Call(call) => matches!(
            &*call.func,
            Expr::Path(path) if matches!(
                crate::syntax::classify_call(&path.path),
                crate::syntax::CallKind::Constructor
            )
        ),
        other => crate::tape::rewrite::is_none_literal(other),
    }
}
