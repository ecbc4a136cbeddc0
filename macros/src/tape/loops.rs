//! Loops recorded as a whole (the runtime's `loops.rs` has the idea).
//!
//! A `for` loop qualifies when its body is straight-line: `let`s of reals
//! computed by arithmetic, updates of real variables (`s = ...`, `s += ...`),
//! and statements that do not touch those reals; and when every real operand
//! of that arithmetic is one of: a real variable of the loop (the *state*:
//! declared before the loop and updated in it), a `let` of the body, a real
//! the loop pattern binds, a real variable the loop does not change (an
//! *invariant*), an element `v[i]` of a slice the loop does not change, or a
//! constant.
//!
//! Such a loop becomes a forward loop on plain scalars that stores each
//! iteration's local partial derivatives, and a generated reverse function
//! that walks the iterations backwards with the state's adjoints in locals.
//! Any other loop keeps the per-statement recording of `fusion.rs`.

use std::collections::HashSet;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, ToTokens};
use syn::visit::Visit;
use syn::visit_mut::VisitMut;
use syn::{BinOp, Expr, ExprForLoop, Ident, Pat, Stmt};

use crate::shape::Shape;
use crate::syntax::{self, CallKind};
use crate::tape::fusion::{collect_idents, Run, Sym, Terms};
use crate::tape::rewrite::Rewriter;

/// What an operand of the loop body's arithmetic is to the reverse loop.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Role {
    /// State variable `k` (its value at the start of the iteration).
    State(usize),
    /// Loop-invariant real `j`.
    Invariant(usize),
    /// The `m`-th element read in each iteration.
    Element(usize),
}

/// The result of checking a loop.
struct Plan {
    /// State variables, in order of first update.
    states: Vec<Ident>,
    /// Pattern identifiers that bind reals (read as elements each iteration).
    pattern_reals: Vec<Ident>,
    /// Marked `#[checkpoint]` (see the runtime's `checkpoint.rs`).
    checkpointed: bool,
}

/// An early exit at the start of a checkpointed loop's body:
/// `if condition { break; }` or `if condition { return value; }`.
pub(crate) struct Exit {
    /// Boxed as in the body: the analysis knows nodes by address.
    condition: Box<Expr>,
    action: ExitAction,
}

enum ExitAction {
    Break,
    Return(Option<Box<Expr>>),
}

/// What stands where the early exit was: an empty item.
fn exit_placeholder() -> Stmt {
    Stmt::Item(syn::Item::Verbatim(TokenStream::new()))
}

fn is_exit_placeholder(stmt: &Stmt) -> bool {
    matches!(stmt, Stmt::Item(syn::Item::Verbatim(tokens)) if tokens.is_empty())
}

/// Takes out the early exit the body starts with, if any.
fn take_exit(body: &mut syn::Block) -> Option<Exit> {
    let Some(Stmt::Expr(Expr::If(branch), _)) = body.stmts.first() else {
        return None;
    };
    if branch.else_branch.is_some() || branch.then_branch.stmts.len() != 1 {
        return None;
    }
    let jump = match &branch.then_branch.stmts[0] {
        Stmt::Expr(expr, _) => expr,
        _ => return None,
    };
    let action_ok = match jump {
        Expr::Break(b) => b.label.is_none() && b.expr.is_none(),
        Expr::Return(_) => true,
        _ => false,
    };
    if !action_ok {
        return None;
    }
    // Replaced in place, not removed: the analysis knows the statements
    // after it by their addresses.
    let Stmt::Expr(Expr::If(branch), _) = std::mem::replace(&mut body.stmts[0], exit_placeholder())
    else {
        return None;
    };
    let Stmt::Expr(jump, _) = branch.then_branch.stmts.into_iter().next()? else {
        return None;
    };
    let action = match jump {
        Expr::Return(ret) => ExitAction::Return(ret.expr),
        _ => ExitAction::Break,
    };
    Some(Exit {
        condition: branch.cond,
        action,
    })
}

/// What the leaves of a loop body are, collected while they are prepared.
struct LoopLeaves {
    roles: Vec<(usize, Role)>,
    elements: Vec<Ident>,
    /// Invariant operands (expressions evaluated once before the loop) and
    /// their leaves.
    invariants: Vec<(TokenStream, usize)>,
    /// Their dual and scalar value locals.
    invariant_values: Vec<(Ident, Ident)>,
    /// For checkpointed loops: the names that change from one iteration to
    /// the next, and the variables the body mutates. A slice element whose
    /// index mentions none of them is an invariant, read once.
    hoist_elements: Option<(HashSet<String>, HashSet<String>)>,
}

impl Rewriter<'_> {
    /// If `stmt` is a loop this module handles, the statements replacing it.
    pub(crate) fn whole_loop(&mut self, stmt: &mut Stmt) -> Option<Vec<Stmt>> {
        let Stmt::Expr(Expr::ForLoop(looping), _) = stmt else {
            return None;
        };
        let checkpointed = crate::syntax::is_checkpointed(&looping.attrs);
        // A checkpointed loop may leave early from its first statement.
        let exit = if checkpointed {
            take_exit(&mut looping.body)
        } else {
            None
        };
        let Some(plan) = self.plan(looping) else {
            if checkpointed {
                self.errors.at(looping.for_token, "deltad can checkpoint a `for` loop whose body is straight-line real arithmetic: `let`s of reals and updates of real variables declared before the loop (`x = ..`, `x += ..`), reading those, variables the loop does not change, and constants; no other statements, calls, branches or early exits");
            }
            return None;
        };
        Some(self.generate(looping, plan, exit))
    }

    // ----- checking --------------------------------------------------------

    fn plan(&self, looping: &ExprForLoop) -> Option<Plan> {
        let body_tokens = looping.body.to_token_stream();
        let checkpointed = !looping.attrs.is_empty();
        if !runs_to_end(&body_tokens)
            || !looping
                .attrs
                .iter()
                .all(|a| a.path().is_ident(crate::syntax::CHECKPOINT))
        {
            return None;
        }
        let mut pattern_reals = Vec::new();
        self.pattern_reals(&looping.pat, &mut pattern_reals)?;

        // Names whose value can differ between iterations: what the body
        // changes, the loop pattern's bindings and the body's own `let`s.
        let mut mutated = mutated_roots(&looping.body);
        collect_idents(&looping.pat.to_token_stream(), &mut mutated);
        for stmt in &looping.body.stmts {
            if let Stmt::Local(local) = stmt {
                collect_idents(&local.pat.to_token_stream(), &mut mutated);
            }
        }
        let pattern_names: HashSet<String> = pattern_reals.iter().map(|i| i.to_string()).collect();
        // The state: real variables the body updates but does not declare
        // (as reals: a name declared as plain data cannot be a real state).
        let declared: HashSet<String> = looping
            .body
            .stmts
            .iter()
            .filter_map(|stmt| match stmt {
                Stmt::Local(local) if self.activity.pat(&local.pat) == Shape::Real => {
                    simple_binding(&local.pat).map(|i| i.to_string())
                }
                _ => None,
            })
            .collect();
        let mut states: Vec<Ident> = Vec::new();
        for stmt in &looping.body.stmts {
            if let Stmt::Expr(expr, Some(_)) = stmt {
                if let Some((target, _)) = self.update(expr) {
                    let name = target.to_string();
                    if pattern_names.contains(&name) {
                        return None;
                    }
                    if !declared.contains(&name) && !states.iter().any(|s| *s == name) {
                        states.push(target);
                    }
                }
            }
        }
        let state_names: HashSet<String> = states.iter().map(|s| s.to_string()).collect();
        // A variable an enclosing loop is summing into stays with that sum.
        if state_names.iter().any(|name| self.is_accumulating(name)) {
            return None;
        }
        // A loop that only sums into its state (a reduction: `s += ..` and no
        // other mention of `s`) is better recorded by `fusion.rs`'s
        // accumulators: one binding whose terms are the summands', with no
        // reverse function to call.
        if !checkpointed
            && states
                .iter()
                .all(|state| self.only_accumulates(looping, state))
        {
            return None;
        }
        let all_reals: HashSet<String> = state_names
            .iter()
            .cloned()
            .chain(pattern_names.iter().cloned())
            .chain(declared.iter().cloned())
            .collect();

        let mut locals: HashSet<String> = pattern_names.clone();
        let mut seen: HashSet<String> = HashSet::new();
        let mut any_real = false;
        for stmt in &looping.body.stmts {
            let mut mentioned = HashSet::new();
            collect_idents(&stmt.to_token_stream(), &mut mentioned);
            let reals: HashSet<String> = locals.union(&state_names).cloned().collect();
            match stmt {
                Stmt::Local(local) => {
                    let ident = simple_binding(&local.pat)?;
                    let name = ident.to_string();
                    // No shadowing of anything the body already used.
                    if seen.contains(&name) || reals.contains(&name) {
                        return None;
                    }
                    let init = local.init.as_ref()?;
                    if init.diverge.is_some() || !local.attrs.is_empty() {
                        return None;
                    }
                    match self.activity.pat(&local.pat) {
                        Shape::Real => {
                            self.check_tree(&init.expr, &reals, &mutated)?;
                            locals.insert(name);
                            any_real = true;
                        }
                        Shape::Inactive if mentioned.is_disjoint(&all_reals) => {}
                        _ => return None,
                    }
                }
                Stmt::Expr(expr, Some(_)) => match self.update(expr) {
                    Some((_, value)) => {
                        self.check_tree(value, &reals, &mutated)?;
                        any_real = true;
                    }
                    // Anything else must not touch the loop's reals.
                    None if mentioned.is_disjoint(&all_reals) && !has_macro(expr) => {}
                    None => return None,
                },
                Stmt::Item(_) => {}
                _ => return None,
            }
            seen.extend(mentioned);
        }
        if !any_real || states.is_empty() {
            return None;
        }
        Some(Plan {
            states,
            pattern_reals,
            checkpointed,
        })
    }

    /// The identifiers of `pat` that bind reals; `None` if the pattern binds
    /// anything else active.
    fn pattern_reals(&self, pat: &Pat, reals: &mut Vec<Ident>) -> Option<()> {
        match pat {
            Pat::Ident(ident) if ident.subpat.is_none() => match self.activity.pat(pat) {
                Shape::Real => reals.push(ident.ident.clone()),
                shape if !shape.is_active() => {}
                _ => return None,
            },
            Pat::Tuple(tuple) => {
                for elem in &tuple.elems {
                    self.pattern_reals(elem, reals)?;
                }
            }
            Pat::Reference(reference) => self.pattern_reals(&reference.pat, reals)?,
            Pat::Paren(paren) => self.pattern_reals(&paren.pat, reals)?,
            Pat::Wild(_) => {}
            _ => return None,
        }
        Some(())
    }

    /// `target = value` / `target op= value` for a real variable `target`.
    fn update<'e>(&self, expr: &'e Expr) -> Option<(Ident, &'e Expr)> {
        let (target, value) = match expr {
            Expr::Assign(assign) if assign.attrs.is_empty() => (&*assign.left, &*assign.right),
            Expr::Binary(binary)
                if binary.attrs.is_empty()
                    && matches!(
                        binary.op,
                        BinOp::AddAssign(_)
                            | BinOp::SubAssign(_)
                            | BinOp::MulAssign(_)
                            | BinOp::DivAssign(_)
                            | BinOp::RemAssign(_)
                    ) =>
            {
                (&*binary.left, &*binary.right)
            }
            _ => return None,
        };
        let Expr::Path(path) = target else {
            return None;
        };
        let ident = path.path.get_ident()?;
        (path.qself.is_none() && self.activity.expr(target) == Shape::Real)
            .then(|| (ident.clone(), value))
    }

    /// Checks that `expr` is arithmetic over operands the loop can record.
    fn check_tree(
        &self,
        expr: &Expr,
        reals: &HashSet<String>,
        mutated: &HashSet<String>,
    ) -> Option<()> {
        let shape = self.activity.expr(expr);
        let mut mentioned = HashSet::new();
        collect_idents(&expr.to_token_stream(), &mut mentioned);
        if !shape.is_active() {
            // A constant: it must not read the loop's reals (they are plain
            // scalars inside the loop).
            return mentioned.is_disjoint(reals).then_some(());
        }
        if shape == Shape::Opaque {
            // A differentiated value of a type the analysis does not see (a
            // field of a struct, a call's result): an operand of real
            // arithmetic is a real. An invariant if the loop changes nothing
            // it reads (read once before the loop, like the others).
            return (crate::tape::fusion::is_pure(expr)
                && mentioned.is_disjoint(reals)
                && mentioned.is_disjoint(mutated))
            .then_some(());
        }
        match expr {
            Expr::Paren(paren) => self.check_tree(&paren.expr, reals, mutated),
            Expr::Group(group) => self.check_tree(&group.expr, reals, mutated),
            Expr::Path(path) => {
                let name = path.path.get_ident()?.to_string();
                // A real of the loop, or an invariant the loop never changes.
                (path.qself.is_none()
                    && (reals.contains(&name) || !mutated.contains(&name))
                    && shape == Shape::Real)
                    .then_some(())
            }
            Expr::Index(index) => {
                let Expr::Path(base) = &*index.expr else {
                    return None;
                };
                let base = base.path.get_ident()?.to_string();
                let mut in_index = HashSet::new();
                collect_idents(&index.index.to_token_stream(), &mut in_index);
                let ok = shape == Shape::Real
                    && crate::tape::fusion::is_pure(&index.index)
                    && !mutated.contains(&base)
                    && !reals.contains(&base)
                    && !self.activity.expr(&index.index).is_active()
                    && in_index.is_disjoint(reals)
                    && !syntax::is_range(&index.index);
                ok.then_some(())
            }
            _ if shape == Shape::Real && self.is_fusion_root(expr) => match expr {
                Expr::Binary(binary) => {
                    self.check_tree(&binary.left, reals, mutated)?;
                    self.check_tree(&binary.right, reals, mutated)
                }
                Expr::Unary(unary) => self.check_tree(&unary.expr, reals, mutated),
                Expr::MethodCall(call) => {
                    self.check_tree(&call.receiver, reals, mutated)?;
                    for arg in &call.args {
                        self.check_operand(call.method == "powi", arg, reals, mutated)?;
                    }
                    Some(())
                }
                Expr::Call(call) => {
                    let Expr::Path(function) = &*call.func else {
                        return None;
                    };
                    let CallKind::FloatMath(name) = syntax::classify_call(&function.path) else {
                        return None;
                    };
                    for (index, arg) in call.args.iter().enumerate() {
                        self.check_operand(name == "powi" && index == 1, arg, reals, mutated)?;
                    }
                    Some(())
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// A method argument: an integer parameter (`powi`'s) or a real operand.
    fn check_operand(
        &self,
        integer: bool,
        arg: &Expr,
        reals: &HashSet<String>,
        mutated: &HashSet<String>,
    ) -> Option<()> {
        if integer {
            let mut mentioned = HashSet::new();
            collect_idents(&arg.to_token_stream(), &mut mentioned);
            (!self.activity.expr(arg).is_active() && mentioned.is_disjoint(reals)).then_some(())
        } else {
            self.check_tree(arg, reals, mutated)
        }
    }

    // ----- generating ------------------------------------------------------

    fn generate(&mut self, looping: &mut ExprForLoop, plan: Plan, exit: Option<Exit>) -> Vec<Stmt> {
        let scalar = self.names.scalar.clone();
        let recorder = self.temp_ident("loop");
        let reverse = self.temp_ident("reverse");
        let state_values: Vec<Ident> = plan.states.iter().map(|_| self.temp_ident("s")).collect();

        self.expr(&mut looping.expr, None);
        let mut run = Run::default();
        let mut leaves = LoopLeaves {
            roles: Vec::new(),
            elements: Vec::new(),
            invariants: Vec::new(),
            invariant_values: Vec::new(),
            hoist_elements: None,
        };
        if plan.checkpointed {
            run.hoist_constants();
            let mut variant: HashSet<String> = HashSet::new();
            collect_idents(&looping.pat.to_token_stream(), &mut variant);
            variant.extend(plan.states.iter().map(|s| s.to_string()));
            for stmt in &looping.body.stmts {
                if let Stmt::Local(local) = stmt {
                    collect_idents(&local.pat.to_token_stream(), &mut variant);
                }
            }
            leaves.hoist_elements = Some((variant, mutated_roots(&looping.body)));
        }
        // The state at the start of an iteration: leaves whose values are the
        // scalar locals carried by the forward loop.
        for (k, (state, value)) in plan.states.iter().zip(&state_values).enumerate() {
            let marker = self.temp_ident("state");
            let leaf = run.add_leaf(Some(marker), value.clone());
            leaves.roles.push((leaf, Role::State(k)));
            run.bind(state.to_string(), Sym::Leaf(leaf));
        }
        // Reals bound by the pattern: read at the start of each iteration.
        for ident in &plan.pattern_reals {
            let sym = self.element_leaf(ident.to_token_stream(), &mut run, &mut leaves);
            run.bind(ident.to_string(), sym);
        }

        for stmt in &mut looping.body.stmts {
            match stmt {
                Stmt::Local(local) if self.activity.pat(&local.pat) == Shape::Real => {
                    let Some(init) = &mut local.init else {
                        continue;
                    };
                    self.prepare_leaves(&mut init.expr, &mut run, &mut leaves);
                    let sym = self.tree(&mut init.expr, &mut run);
                    if let Some(ident) = simple_binding(&local.pat) {
                        run.bind(ident.to_string(), sym);
                    }
                }
                Stmt::Expr(expr, Some(_)) if self.update(expr).is_some() => {
                    let Some((target, _)) = self.update(expr) else {
                        continue;
                    };
                    let sym = match expr {
                        Expr::Assign(assign) => {
                            self.prepare_leaves(&mut assign.right, &mut run, &mut leaves);
                            self.tree(&mut assign.right, &mut run)
                        }
                        Expr::Binary(binary) => {
                            self.prepare_leaves(&mut binary.right, &mut run, &mut leaves);
                            let Some(current) = run.lookup(&target.to_string()).cloned() else {
                                continue;
                            };
                            let value = self.tree(&mut binary.right, &mut run);
                            self.compound(&mut run, &binary.op, current, value)
                        }
                        _ => continue,
                    };
                    run.bind(target.to_string(), sym);
                }
                exit if is_exit_placeholder(exit) => {}
                other => {
                    if plan.checkpointed {
                        self.errors.at(&*other, "a checkpointed loop is re-run during the reverse sweep from the values of its differentiated reals, so its body may only compute those: this statement does something else (it changes a plain value or has an effect); move it out of the loop, or compute it from a differentiated real");
                    }
                    self.stmt(other, None, false);
                    let taken = std::mem::replace(other, crate::tape::fusion::placeholder());
                    run.push_code(taken);
                    // The statement may change what pure leaves read.
                    run.forget_pure_leaves();
                }
            }
        }

        // End of an iteration: the local Jacobian of the new state. Equal
        // partials are stored once; partials computed only from invariants
        // and constants are *fixed*: stored once, not per iteration
        // (checkpointed loops recompute their partials, so they keep one
        // list).
        let mut slots = Slots::default();
        if !plan.checkpointed {
            let seeds = leaves
                .invariant_values
                .iter()
                .flat_map(|(real, value)| [real.to_string(), value.to_string()])
                .collect();
            slots.invariant = invariant_temporaries(run.code(), seeds);
        }
        // Per state k: (role, how the reverse reads the partial).
        let mut jacobian: Vec<Vec<(Role, Partial)>> = Vec::new();
        let mut new_values = Vec::new();
        let one = quote!(<#scalar as ::deltad::__private::Scalar>::one());
        for state in &plan.states {
            let Some(sym) = run.lookup(&state.to_string()).cloned() else {
                jacobian.push(Vec::new());
                new_values.push(quote!(0));
                continue;
            };
            let (value, terms) = match self.terms(&mut run, &sym) {
                Terms::Leaf(real) => (quote!(#real.value()), vec![(real, one.clone())]),
                Terms::Sum(value, terms) => (quote!(#value), terms),
            };
            let value = match &sym {
                Sym::Leaf(index) => {
                    let v = run.leaf_value(*index);
                    quote!(#v)
                }
                _ => value,
            };
            new_values.push(value);
            let mut row = Vec::new();
            for (real, partial) in terms {
                let Some(role) = run.role_of(&real, &leaves.roles) else {
                    self.errors.at(looping.for_token, "deltad internal error: an operand of this loop has no role (please report this bug)");
                    continue;
                };
                row.push((role, slots.partial(partial, &one)));
            }
            jacobian.push(row);
        }
        let Slots {
            per_iteration: slots,
            fixed,
            ..
        } = slots;
        // The partials may read the state's old values: store them first.
        if plan.checkpointed {
            run.push_code(self.gen_stmt(quote! {
                if let ::core::option::Option::Some(slots) = __deltad_slots {
                    slots.copy_from_slice(&[#(#slots),*]);
                }
            }));
        } else {
            let element_ids = leaves.elements.iter().map(|leaf| quote!(#leaf.raw_id()));
            run.push_code(self.gen_stmt(
                quote!(#recorder.iteration([#(#fixed),*], [#(#slots),*], [#(#element_ids),*]);),
            ));
        }
        let next_values: Vec<Ident> = plan
            .states
            .iter()
            .map(|_| self.temp_ident("next"))
            .collect();
        for (next, value) in next_values.iter().zip(&new_values) {
            run.push_code(self.gen_stmt(quote!(let #next = #value;)));
        }
        for (state_value, next) in state_values.iter().zip(&next_values) {
            run.push_code(self.gen_stmt(quote!(#state_value = #next;)));
        }

        let body_stmts = run.take_code();
        let hoisted = run.take_hoisted();
        let reverse_fn = self.reverse_function(
            &reverse,
            &plan,
            &jacobian,
            [slots.len(), fixed.len()],
            leaves.elements.len(),
            leaves.invariants.len(),
        );

        let mut out = Vec::new();
        // Invariants are read once, before the loop.
        for ((expr, _), (real, value)) in leaves.invariants.iter().zip(&leaves.invariant_values) {
            let real_type = self.names.real_type();
            out.push(self.gen_stmt(
                quote!(let #real: #real_type = ::deltad::__private::IntoReal::into_real((#expr));),
            ));
            out.push(self.gen_stmt(quote!(let #value = #real.value();)));
        }
        if plan.checkpointed {
            out.extend(self.checkpointed_loop(
                looping,
                &plan,
                &leaves,
                &hoisted,
                &state_values,
                body_stmts,
                slots.len(),
                &reverse,
                exit,
            ));
            out.push(reverse_fn);
            return out;
        }
        looping.body.stmts = body_stmts;
        let states = &plan.states;
        let tape = self.names.tape.clone();
        let fixed_count = fixed.len();
        let invariant_reals: Vec<&Ident> = leaves
            .invariant_values
            .iter()
            .map(|(real, _)| real)
            .collect();
        out.push(self.gen_stmt(quote!(
            let mut #recorder = ::deltad::__private::LoopRecorder::start(#tape, [#(&#states),*], [#(&#invariant_reals),*], #fixed_count);
        )));
        for (state, value) in states.iter().zip(&state_values) {
            out.push(self.gen_stmt(quote!(let mut #value = #state.value();)));
        }
        // No call that can return may sit in the loop, or the compiler keeps
        // the loop's values in memory instead of registers. With an exact
        // length (ranges, slices), room for every iteration is made first.
        // Otherwise the loop runs in stretches that fit the buffers, which
        // grow between stretches.
        let iterator = self.temp_ident("iter");
        let room = self.temp_ident("room");
        let label = syn::Lifetime::new("'__deltad_stretches", Span::mixed_site());
        let iter_expr = &looping.expr;
        let pat = &looping.pat;
        let body = &looping.body;
        let ns = slots.len();
        let ne = leaves.elements.len();
        out.push(self.gen_stmt(quote!(
            let mut #iterator = ::core::iter::IntoIterator::into_iter(#iter_expr);
        )));
        out.push(self.gen_stmt(quote!(
            match ::core::iter::Iterator::size_hint(&#iterator) {
                (lower, ::core::option::Option::Some(upper)) if lower == upper => {
                    #recorder.grow::<#ns, #ne>(lower);
                    for #pat in #iterator #body
                }
                (lower, _) => {
                    #recorder.grow::<#ns, #ne>(lower);
                    #label: loop {
                        let #room = #recorder.room::<#ns, #ne>();
                        for _ in 0..#room {
                            let #pat = match ::core::iter::Iterator::next(&mut #iterator) {
                                ::core::option::Option::Some(item) => item,
                                ::core::option::Option::None => break #label,
                            };
                            #body
                        }
                        #recorder.grow::<#ns, #ne>(0);
                    }
                }
            }
        )));
        let outputs = self.temp_ident("outputs");
        out.push(self.gen_stmt(quote!(
            let #outputs = #recorder.finish([#(#state_values),*], #reverse::<#scalar>);
        )));
        for (k, state) in states.iter().enumerate() {
            out.push(self.gen_stmt(quote!(#state = #outputs[#k];)));
        }
        out.push(reverse_fn);
        out
    }

    /// A checkpointed loop: the body becomes a `step` function of the loop's
    /// environment (invariant and constant values) and state, which the
    /// forward loop calls and the reverse sweep calls again segment by
    /// segment, with the partials (see the runtime's `checkpoint.rs`).
    #[allow(clippy::too_many_arguments)]
    fn checkpointed_loop(
        &mut self,
        looping: &ExprForLoop,
        plan: &Plan,
        leaves: &LoopLeaves,
        hoisted: &[(Ident, TokenStream)],
        state_values: &[Ident],
        body: Vec<Stmt>,
        slot_count: usize,
        reverse: &Ident,
        exit: Option<Exit>,
    ) -> Vec<Stmt> {
        let (scalar, tape, prim) = (
            self.names.scalar.clone(),
            self.names.tape.clone(),
            self.names.precision.ident(Span::call_site()),
        );
        if !leaves.elements.is_empty() {
            self.errors.at(looping.for_token, "deltad cannot checkpoint a loop that reads a different element of a slice in each iteration (the elements would have to be kept): read them before the loop, or do not checkpoint it");
        }
        if let Some((variant, _)) = &leaves.hoist_elements {
            for (_, expr) in hoisted {
                let mut mentioned = HashSet::new();
                collect_idents(expr, &mut mentioned);
                if !mentioned.is_disjoint(variant) {
                    self.errors.at(expr, "a checkpointed loop is re-run from its state alone: this value changes from one iteration to the next without being a real the loop updates; compute it from a real state variable instead");
                }
            }
        }
        let step = self.temp_ident("step");
        let environment = self.temp_ident("environment");
        let recorder = self.temp_ident("checkpoints");
        let state = self.temp_ident("state");
        let k_count = plan.states.len();
        let j_count = leaves.invariants.len();
        let invariant_values: Vec<&Ident> =
            leaves.invariant_values.iter().map(|(_, v)| v).collect();
        let invariant_reals: Vec<&Ident> = leaves.invariant_values.iter().map(|(r, _)| r).collect();
        let constants: Vec<&Ident> = hoisted.iter().map(|(value, _)| value).collect();
        let constant_exprs = hoisted.iter().map(
            |(value, expr)| quote!(let #value: #scalar = ::deltad::__private::constant((#expr));),
        );
        let ks: Vec<usize> = (0..k_count).collect();
        let js: Vec<usize> = (0..j_count).collect();
        let cs: Vec<usize> = (j_count..j_count + constants.len()).collect();
        let states = &plan.states;
        let iter_expr = &looping.expr;
        let pat = &looping.pat;
        let step_fn = quote! {
            #[allow(unused_variables, unused_mut, clippy::all)]
            fn #step<#scalar: ::deltad::__private::Scalar<Prim = #prim>>(
                #environment: &[#scalar],
                #state: &mut [#scalar],
                __deltad_slots: ::core::option::Option<&mut [#scalar]>,
            ) {
                #(let mut #state_values: #scalar = #state[#ks];)*
                #(let #invariant_values: #scalar = #environment[#js];)*
                #(let #constants: #scalar = #environment[#cs];)*
                #(#body)*
                #(#state[#ks] = #state_values;)*
            }
        };
        let mut out = vec![self.gen_stmt(step_fn)];
        for stmt in constant_exprs {
            out.push(self.gen_stmt(stmt));
        }
        out.push(self.gen_stmt(quote! {
            let #environment: ::std::vec::Vec<#scalar> =
                ::std::vec![#(#invariant_values,)* #(#constants),*];
        }));
        out.push(self.gen_stmt(quote! {
            let mut #recorder = ::deltad::__private::CheckpointRecorder::start(
                #tape,
                [#(&#states),*],
                [#(&#invariant_reals),*],
                ::core::clone::Clone::clone(&#environment),
                #slot_count,
                #step::<#scalar>,
                #reverse::<#scalar>,
            );
        }));
        out.push(self.gen_stmt(quote! {
            let mut #state: [#scalar; #k_count] = [#(#states.value()),*];
        }));
        let outputs = self.temp_ident("outputs");
        let exit_check = exit.map(|exit| {
            // The condition sees the state as constants with the current
            // values (only the values matter for a branch).
            let real_type = self.names.real_type();
            let (mut condition, action) = (exit.condition, exit.action);
            self.expr(&mut condition, None);
            let action = match action {
                ExitAction::Break => quote!(break;),
                ExitAction::Return(value) => {
                    let mut value = value;
                    if let Some(value) = &mut value {
                        let want = self.return_shape.clone();
                        self.expr(value, Some(&want));
                    }
                    quote! {
                        let #outputs = #recorder.finish(#state);
                        #(let #states: #real_type = #outputs[#ks];)*
                        return #value;
                    }
                }
            };
            quote! {{
                #(let #states: #real_type = ::deltad::__private::Real::constant(#state[#ks]);)*
                if #condition {
                    #action
                }
            }}
        });
        out.push(self.gen_stmt(quote! {
            for #pat in #iter_expr {
                #exit_check
                #recorder.before_iteration(&#state);
                #step::<#scalar>(&#environment, &mut #state, ::core::option::Option::None);
            }
        }));
        out.push(self.gen_stmt(quote!(let #outputs = #recorder.finish(#state);)));
        for (k, state) in states.iter().enumerate() {
            out.push(self.gen_stmt(quote!(#state = #outputs[#k];)));
        }
        out
    }

    fn temp_ident(&mut self, prefix: &str) -> Ident {
        self.next_temp += 1;
        format_ident!(
            "__deltad_{}{}",
            prefix,
            self.next_temp,
            span = Span::mixed_site()
        )
    }

    /// Creates the leaves of `expr` that the loop treats specially (element
    /// reads and invariants) before the tree is built, so `tree` finds them.
    fn prepare_leaves(&mut self, expr: &mut Expr, run: &mut Run, leaves: &mut LoopLeaves) {
        let shape = self.activity.expr(expr);
        match expr {
            Expr::Paren(paren) => self.prepare_leaves(&mut paren.expr, run, leaves),
            Expr::Group(group) => self.prepare_leaves(&mut group.expr, run, leaves),
            // An invariant of a type the analysis does not see
            // (`check_tree`): one leaf, found by its tokens.
            _ if shape == Shape::Opaque => {
                self.expr(expr, None);
                let tokens = expr.to_token_stream();
                let key = tokens.to_string();
                if run.pure_leaf(&key).is_some() || run.lookup(&key).is_some() {
                    return;
                }
                let sym = self.invariant_leaf(tokens, key.clone(), run, leaves);
                run.remember_pure_leaf(key, sym);
            }
            Expr::Path(path) if shape == Shape::Real => {
                let Some(ident) = path.path.get_ident().cloned() else {
                    return;
                };
                let name = ident.to_string();
                if run.lookup(&name).is_some() {
                    return;
                }
                // An invariant: hoisted before the loop (under the user's
                // identifier, which keeps its hygiene inside macros).
                self.invariant_leaf(quote!(#ident), name, run, leaves);
            }
            Expr::Index(_) if shape == Shape::Real => {
                self.expr(expr, None);
                let key = expr.to_token_stream().to_string();
                if run.pure_leaf(&key).is_some() {
                    return;
                }
                let taken = std::mem::replace(expr, Expr::Verbatim(TokenStream::new()));
                let tokens = taken.to_token_stream();
                let invariant = leaves
                    .hoist_elements
                    .as_ref()
                    .is_some_and(|(variant, mutated)| {
                        let mut mentioned = HashSet::new();
                        collect_idents(&tokens, &mut mentioned);
                        mentioned.is_disjoint(variant) && mentioned.is_disjoint(mutated)
                    });
                let sym = if invariant {
                    self.invariant_leaf(tokens, key.clone(), run, leaves)
                } else {
                    self.element_leaf(tokens, run, leaves)
                };
                run.remember_pure_leaf(key, sym);
                // Put the expression back so `tree` finds it by its tokens.
                *expr = taken;
            }
            Expr::Binary(binary) => {
                self.prepare_leaves(&mut binary.left, run, leaves);
                self.prepare_leaves(&mut binary.right, run, leaves);
            }
            Expr::Unary(unary) => self.prepare_leaves(&mut unary.expr, run, leaves),
            Expr::MethodCall(call) => {
                self.prepare_leaves(&mut call.receiver, run, leaves);
                for arg in &mut call.args {
                    self.prepare_leaves(arg, run, leaves);
                }
            }
            Expr::Call(call) => {
                for arg in &mut call.args {
                    self.prepare_leaves(arg, run, leaves);
                }
            }
            _ => {}
        }
    }

    /// A real operand the loop does not change, evaluated once before it.
    fn invariant_leaf(
        &mut self,
        expr: TokenStream,
        key: String,
        run: &mut Run,
        leaves: &mut LoopLeaves,
    ) -> Sym {
        let j = leaves.invariants.len();
        let real = self.temp_ident("inv");
        let value = self.temp_ident("invv");
        let leaf = run.add_leaf(Some(real.clone()), value.clone());
        leaves.roles.push((leaf, Role::Invariant(j)));
        leaves.invariants.push((expr, leaf));
        leaves.invariant_values.push((real, value));
        run.bind(key, Sym::Leaf(leaf));
        Sym::Leaf(leaf)
    }

    fn element_leaf(&mut self, tokens: TokenStream, run: &mut Run, leaves: &mut LoopLeaves) -> Sym {
        let sym = self.active_leaf(tokens, run);
        if let Sym::Leaf(index) = sym {
            if let Some(real) = run.leaf_real(index) {
                leaves
                    .roles
                    .push((index, Role::Element(leaves.elements.len())));
                leaves.elements.push(real);
            }
        }
        sym
    }

    /// The reverse function of the loop: walks the iterations backwards,
    /// carrying the adjoints of the state in locals. As in the tape's sweep,
    /// a state whose adjoint is exactly zero contributes nothing (even where
    /// its partial derivatives are infinite).
    fn reverse_function(
        &mut self,
        name: &Ident,
        plan: &Plan,
        jacobian: &[Vec<(Role, Partial)>],
        [slot_count, fixed_count]: [usize; 2],
        element_count: usize,
        invariant_count: usize,
    ) -> Stmt {
        let fixed: Vec<Ident> = (0..fixed_count).map(|k| format_ident!("f{}", k)).collect();
        let fixed_indices = 0..fixed_count;
        let k_count = plan.states.len();
        let adjoint: Vec<Ident> = (0..k_count).map(|k| format_ident!("a{}", k)).collect();
        let next: Vec<Ident> = (0..k_count).map(|k| format_ident!("b{}", k)).collect();
        let invariant: Vec<Ident> = (0..invariant_count)
            .map(|j| format_ident!("i{}", j))
            .collect();
        // Per state k (the source of the contributions), what its adjoint
        // adds to the previous state, the invariants and the elements.
        let per_state: Vec<TokenStream> = jacobian
            .iter()
            .enumerate()
            .map(|(k, row)| {
                let a = &adjoint[k];
                let updates = row.iter().map(|(role, partial)| {
                    let contribution = match partial {
                        Partial::One => quote!(#a),
                        Partial::MinusOne => quote!(-#a),
                        Partial::Slot(i) => quote!(#a * slots[#i]),
                        Partial::Fixed(i) => {
                            let f = &fixed[*i];
                            quote!(#a * #f)
                        }
                    };
                    match role {
                        Role::State(target) => {
                            let b = &next[*target];
                            quote!(#b += #contribution;)
                        }
                        Role::Invariant(j) => {
                            let i = &invariant[*j];
                            quote!(#i += #contribution;)
                        }
                        Role::Element(m) => quote! {
                            let id = elements[#m];
                            if id != ::deltad::__private::NO_ID {
                                adjoints[id as usize] += #contribution;
                            }
                        },
                    }
                });
                quote! {
                    if !::deltad::__private::Scalar::is_zero(&#a) {
                        #(#updates)*
                    }
                }
            })
            .collect();
        let outputs = (0..k_count).map(|k| quote!(adjoints[data.output(#k)]));
        let ks = 0..k_count;
        let js = 0..invariant_count;
        let tokens = quote! {
            #[allow(unused_variables, unused_mut, clippy::all)]
            fn #name<S: ::deltad::__private::Scalar>(
                data: &::deltad::__private::LoopData<S>,
                adjoints: &mut [S],
            ) {
                #(let mut #adjoint: S = #outputs;)*
                #(let mut #invariant: S = S::zero();)*
                #(let #fixed: S = data.fixed_slot(#fixed_indices);)*
                for (slots, elements) in data.reversed::<#slot_count, #element_count>() {
                    #(let mut #next: S = S::zero();)*
                    #(#per_state)*
                    #(#adjoint = #next;)*
                }
                #(
                    if let Some(id) = data.input(#ks) {
                        adjoints[id] += #adjoint;
                    }
                )*
                #(
                    if let Some(id) = data.invariant(#js) {
                        adjoints[id] += #invariant;
                    }
                )*
            }
        };
        self.gen_stmt(tokens)
    }

    /// The value of `current op value` for a compound update.
    fn compound(&mut self, run: &mut Run, op: &BinOp, current: Sym, value: Sym) -> Sym {
        let arith = crate::tape::fusion::compound_to_arithmetic(op);
        match arith {
            Some(arith) => self.arithmetic(run, arith, current, value),
            None => current,
        }
    }
}

/// How the reverse loop reads a partial derivative.
enum Partial {
    One,
    MinusOne,
    /// Stored per iteration.
    Slot(usize),
    /// Stored once (see `Slots`).
    Fixed(usize),
}

/// The partial derivatives a loop stores, each distinct expression once.
#[derive(Default)]
struct Slots {
    per_iteration: Vec<TokenStream>,
    fixed: Vec<TokenStream>,
    /// Temporaries of the body whose values are the same in every iteration.
    invariant: HashSet<String>,
}

impl Slots {
    /// How the reverse loop reads `partial` (`one` is the scalar's 1).
    fn partial(&mut self, partial: TokenStream, one: &TokenStream) -> Partial {
        let text = partial.to_string();
        if text == one.to_string() || text == format!("({})", one) {
            return Partial::One;
        }
        if text == quote!((-#one)).to_string() {
            return Partial::MinusOne;
        }
        let (list, fixed) = if mentions_only(&partial, &self.invariant) {
            (&mut self.fixed, true)
        } else {
            (&mut self.per_iteration, false)
        };
        let index = match list.iter().position(|p| p.to_string() == text) {
            Some(index) => index,
            None => {
                list.push(partial);
                list.len() - 1
            }
        };
        if fixed {
            Partial::Fixed(index)
        } else {
            Partial::Slot(index)
        }
    }
}

/// The temporaries `let`-bound in `code` whose values depend only on `seeds`
/// (names of values the loop does not change) and constants: computed by
/// generated code (`__deltad_` names) that mentions no other variable.
fn invariant_temporaries(code: &[Stmt], seeds: HashSet<String>) -> HashSet<String> {
    let mut invariant = seeds;
    for stmt in code {
        let Stmt::Local(local) = stmt else {
            continue;
        };
        let Some(init) = &local.init else {
            continue;
        };
        if init.diverge.is_some() {
            continue;
        }
        let mut names = Vec::new();
        if !generated_names(&local.pat, &mut names) {
            continue;
        }
        if mentions_only(&init.expr.to_token_stream(), &invariant) {
            invariant.extend(names);
        }
    }
    invariant
}

/// The names a pattern of generated temporaries binds (`x`, `x: T`,
/// `(x, y)`); false for any other pattern.
fn generated_names(pat: &Pat, names: &mut Vec<String>) -> bool {
    match pat {
        Pat::Ident(ident) if ident.subpat.is_none() => {
            let name = ident.ident.to_string();
            let generated = name.starts_with("__deltad_");
            names.push(name);
            generated
        }
        Pat::Type(typed) => generated_names(&typed.pat, names),
        Pat::Tuple(tuple) => tuple.elems.iter().all(|p| generated_names(p, names)),
        _ => false,
    }
}

/// True if every variable `tokens` reads is in `allowed`: identifiers after
/// `::` or `.` (paths, methods, fields), generated type parameters, keywords
/// and primitive types are not variables; any other identifier is.
fn mentions_only(tokens: &TokenStream, allowed: &HashSet<String>) -> bool {
    let mut previous: Option<char> = None;
    let mut previous_colon = false;
    for token in tokens.clone() {
        match &token {
            proc_macro2::TokenTree::Ident(ident) => {
                let name = ident.to_string();
                let structural = previous == Some('.')
                    || (previous == Some(':') && previous_colon)
                    || name.starts_with("__Deltad")
                    || matches!(
                        name.as_str(),
                        "as" | "f64"
                            | "f32"
                            | "i32"
                            | "i64"
                            | "u32"
                            | "u64"
                            | "usize"
                            | "isize"
                            | "true"
                            | "false"
                    );
                if !structural && !allowed.contains(&name) {
                    return false;
                }
                previous = None;
                previous_colon = false;
            }
            proc_macro2::TokenTree::Punct(punct) => {
                // `::` is two `:` puncts, the first one joint.
                previous_colon = previous == Some(':') && punct.as_char() == ':';
                previous = Some(punct.as_char());
            }
            proc_macro2::TokenTree::Group(group) => {
                if !mentions_only(&group.stream(), allowed) {
                    return false;
                }
                previous = None;
                previous_colon = false;
            }
            proc_macro2::TokenTree::Literal(_) => {
                previous = None;
                previous_colon = false;
            }
        }
    }
    true
}

/// The identifier of a `let` pattern `x` or `x: T` (also `mut x`).
fn simple_binding(pat: &Pat) -> Option<&Ident> {
    match pat {
        Pat::Ident(ident) if ident.by_ref.is_none() && ident.subpat.is_none() => Some(&ident.ident),
        Pat::Type(typed) => simple_binding(&typed.pat),
        _ => None,
    }
}

/// False if the tokens can leave the loop body early.
fn runs_to_end(tokens: &TokenStream) -> bool {
    tokens.clone().into_iter().all(|token| match token {
        proc_macro2::TokenTree::Ident(ident) => {
            !(ident == "return" || ident == "break" || ident == "continue")
        }
        proc_macro2::TokenTree::Punct(punct) => punct.as_char() != '?',
        proc_macro2::TokenTree::Group(group) => runs_to_end(&group.stream()),
        proc_macro2::TokenTree::Literal(_) => true,
    })
}

fn has_macro(expr: &Expr) -> bool {
    struct Finder(bool);
    impl<'ast> Visit<'ast> for Finder {
        fn visit_macro(&mut self, _: &'ast syn::Macro) {
            self.0 = true;
        }
    }
    let mut finder = Finder(false);
    finder.visit_expr(expr);
    finder.0
}

/// The variables the body may change: roots of assignment targets, of
/// `&mut` borrows and of method-call receivers.
fn mutated_roots(block: &syn::Block) -> HashSet<String> {
    struct Roots(HashSet<String>);
    fn root(expr: &Expr) -> Option<String> {
        match expr {
            Expr::Path(path) => path.path.get_ident().map(|i| i.to_string()),
            Expr::Index(index) => root(&index.expr),
            Expr::Field(field) => root(&field.base),
            Expr::Paren(paren) => root(&paren.expr),
            Expr::Unary(unary) => root(&unary.expr),
            Expr::MethodCall(call) => root(&call.receiver),
            _ => None,
        }
    }
    impl<'ast> Visit<'ast> for Roots {
        fn visit_expr_assign(&mut self, assign: &'ast syn::ExprAssign) {
            self.0.extend(root(&assign.left));
            syn::visit::visit_expr_assign(self, assign);
        }
        fn visit_expr_binary(&mut self, binary: &'ast syn::ExprBinary) {
            if crate::syntax::is_compound_assignment(&binary.op) {
                self.0.extend(root(&binary.left));
            }
            syn::visit::visit_expr_binary(self, binary);
        }
        fn visit_expr_reference(&mut self, reference: &'ast syn::ExprReference) {
            if reference.mutability.is_some() {
                self.0.extend(root(&reference.expr));
            }
            syn::visit::visit_expr_reference(self, reference);
        }
        fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
            if !reads_only(&call.method.to_string()) {
                self.0.extend(root(&call.receiver));
            }
            syn::visit::visit_expr_method_call(self, call);
        }
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    let mut roots = Roots(HashSet::new());
    roots.visit_block(block);
    roots.0
}

/// Methods that only read their receiver.
pub(crate) fn reads_only(method: &str) -> bool {
    use crate::methods::{ELEMENT, INACTIVE_RESULT, SAME_SHAPE};
    let mutating = matches!(
        method,
        "iter_mut"
            | "as_mut"
            | "as_mut_slice"
            | "as_deref_mut"
            | "borrow_mut"
            | "get_mut"
            | "first_mut"
            | "last_mut"
            | "pop"
            | "swap_remove"
            | "remove"
            | "into_iter"
    );
    // Iterator adaptors and consumers consume the iterator, not the
    // collection it borrows: `iter_mut`, `drain`, `into_iter` are caught
    // where they are called, and writes inside closures are visited on
    // their own.
    const ITERATOR: &[&str] = &[
        "map",
        "filter",
        "filter_map",
        "flat_map",
        "map_while",
        "take_while",
        "skip_while",
        "enumerate",
        "zip",
        "chain",
        "flatten",
        "inspect",
        "peekable",
        "scan",
        "fold",
        "reduce",
        "sum",
        "product",
        "any",
        "all",
        "find",
        "position",
        "max_by",
        "min_by",
        "max_by_key",
        "min_by_key",
        "for_each",
        "unzip",
        "partition",
    ];
    !mutating
        && (ITERATOR.contains(&method)
            || INACTIVE_RESULT.contains(&method)
            || SAME_SHAPE.contains(&method)
            || ELEMENT.contains(&method)
            || crate::methods::is_math_method(method))
}

/// In the bodies of `#[checkpoint]` loops, `e.sin_cos().0` becomes `e.sin()`
/// and `e.sin_cos().1` becomes `e.cos()`: the same values bit for bit (std
/// computes the pair as the two calls), written as the arithmetic such a
/// loop may hold. Runs before the analyses (they know nodes by address).
pub(crate) fn split_sin_cos_in_checkpoints(body: &mut syn::Block) {
    struct Checkpoints;
    impl VisitMut for Checkpoints {
        fn visit_expr_for_loop_mut(&mut self, looping: &mut ExprForLoop) {
            if crate::syntax::is_checkpointed(&looping.attrs) {
                SplitSinCos.visit_block_mut(&mut looping.body);
            }
            syn::visit_mut::visit_expr_for_loop_mut(self, looping);
        }
    }
    Checkpoints.visit_block_mut(body);
}

struct SplitSinCos;

impl VisitMut for SplitSinCos {
    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, expr);
        let Expr::Field(field) = expr else { return };
        let syn::Member::Unnamed(index) = &field.member else {
            return;
        };
        let method = match index.index {
            0 => "sin",
            1 => "cos",
            _ => return,
        };
        let Expr::MethodCall(call) = &*field.base else {
            return;
        };
        if call.method != "sin_cos" || !call.args.is_empty() || call.turbofish.is_some() {
            return;
        }
        let mut single = call.clone();
        single.method = Ident::new(method, call.method.span());
        *expr = Expr::MethodCall(single);
    }
}
