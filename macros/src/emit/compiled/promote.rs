//! Element adjoints kept in locals (registers) instead of memory.
//!
//! The adjoint of `x[i]` read several times in a loop body (or in a loop
//! nested in it) would be a read-modify-write of memory at every read, each
//! waiting for the one before; a hand-written adjoint sums the
//! contributions first. Two forms:
//!
//! * **Per block.** When a block of the adjoint adds into the adjoint of
//!   `x[e]`, with `e` an index whose value cannot change within the block
//!   (it reads only variables declared outside the block and not assigned
//!   in it), the block declares a local for it, the contributions go there,
//!   and the block's end adds the local into the element once. An inner
//!   loop's contributions to `w[i]` then stay in a register over the whole
//!   inner loop.
//! * **Stencils.** In a loop over `i` run backwards, the adjoints of
//!   `x[i + c]` for several offsets `c` (`x[i]` and `x[i + 1]`) live in a
//!   window of locals that rolls with the loop: at the end of each
//!   iteration the element no later iteration touches is added into memory
//!   and the window shifts by one. Every element's adjoint is then one
//!   memory update, where per-iteration sums would update neighbouring
//!   elements in consecutive iterations (the optimiser merges the two
//!   updates into one wide one, which the next iteration's load of the
//!   shared element then has to wait for).
//!
//! Only buffers whose element adjoints the code in question never reads
//! qualify (no element of them is assigned there): the adjoint of a
//! read-only element is only ever added to, so the sums differ from the
//! direct ones by the order of the additions alone. A read that does not
//! happen in every execution of the block (inside a branch, after an early
//! exit) may have an index that is out of bounds when it does not happen:
//! its local is added into memory only when it is not zero, which it only
//! is if the read happened (adding a zero would change nothing anyway).

use std::collections::HashSet;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, ToTokens};
use syn::Ident;

use super::values::Side;
use super::Passes;
use crate::ir::{Block, Expr, ExprKind, Place, StmtKind, VarId};

/// An element adjoint kept in a local over a block.
pub(crate) struct Promoted {
    var: VarId,
    key: String,
    index: Expr,
    local: Ident,
    /// The block reads the element whenever it runs to its end.
    certain: bool,
    /// Some statement added into it (else it is not declared).
    used: bool,
}

/// The adjoints of `var[i + c]` in a loop over `i`, one local per offset
/// `c` from `first` on.
pub(crate) struct Window {
    var: VarId,
    index_var: VarId,
    first: i64,
    locals: Vec<Ident>,
    /// Per offset: read in every iteration.
    certain: Vec<bool>,
    /// Per offset: read at all.
    read: Vec<bool>,
    used: bool,
}

/// The code a loop's windows add around its reverse.
#[derive(Default)]
pub(crate) struct Rolled {
    /// Before the loop: the windows' locals.
    pub before: TokenStream,
    /// At the end of each iteration: the finished elements into memory,
    /// the windows shifted.
    pub each: TokenStream,
    /// After the loop: what the windows still hold, into memory.
    pub after: TokenStream,
}

impl Passes<'_> {
    /// The local holding the adjoint of `var[index]`, if an enclosing loop's
    /// window or block keeps it in one.
    pub(crate) fn promoted(&self, var: VarId, index: &Expr) -> Option<Ident> {
        if let Some((index_var, offset)) = index.offset_of() {
            let mut windows = self.windows.borrow_mut();
            let found = windows
                .iter_mut()
                .rev()
                .find(|w| w.var == var && w.index_var == index_var);
            if let Some(window) = found {
                let at = offset - window.first;
                if at >= 0 && (at as usize) < window.locals.len() {
                    window.used = true;
                    return Some(window.locals[at as usize].clone());
                }
            }
        }
        let key = index_key(index)?;
        let mut promoted = self.promoted.borrow_mut();
        let found = promoted.iter_mut().find(|p| p.var == var && p.key == key)?;
        found.used = true;
        Some(found.local.clone())
    }

    fn fresh_local(&self, prefix: &str) -> Ident {
        let n = self.next_local.get();
        self.next_local.set(n + 1);
        format_ident!("__deltad_{}{}", prefix, n, span = Span::mixed_site())
    }

    /// `memory += local`, or only if the local is not zero.
    fn flush(&self, var: VarId, index: TokenStream, local: &Ident, certain: bool) -> TokenStream {
        let adjoint = self.adjoint(var);
        let add = if self.is_param(var) {
            quote!(*::deltad::__private::SliceSink::at(&mut #adjoint, #index) += #local;)
        } else {
            quote!(#adjoint[#index] += #local;)
        };
        if certain {
            add
        } else {
            quote! {
                if !::deltad::__private::Scalar::is_zero(&#local) { #add }
            }
        }
    }

    fn zero_local(&self, local: &Ident) -> TokenStream {
        let a = &self.cotangent;
        quote!(let mut #local: #a = (-<#a as ::deltad::__private::Scalar>::zero());)
    }

    /// Emits the reverse of `block` with `body`, the element adjoints that
    /// it (with what is nested in it) adds into kept in locals declared
    /// before and added into the elements after. (Kept also where a block
    /// adds into one only once: adding into `-0.0` first changes nothing,
    /// and the optimiser removes it.)
    pub(crate) fn with_promoted(
        &self,
        block: &Block,
        body: impl FnOnce() -> TokenStream,
    ) -> TokenStream {
        let fresh = self.promotable(block);
        if fresh.is_empty() {
            return body();
        }
        let depth = self.promoted.borrow().len();
        self.promoted.borrow_mut().extend(fresh);
        let body = body();
        let used: Vec<Promoted> = self
            .promoted
            .borrow_mut()
            .drain(depth..)
            .filter(|p| p.used)
            .collect();
        if used.is_empty() {
            return body;
        }
        let declare = used.iter().map(|p| self.zero_local(&p.local));
        let flush = used.iter().map(|p| {
            let index = self.element_index(p.var, &p.index, true, Side::Adjoint);
            self.flush(p.var, index, &p.local, p.certain)
        });
        quote!({ #(#declare)* #body #(#flush)* })
    }

    /// The element adjoints `block` may add into that no enclosing block
    /// or window keeps yet and that may be kept over it.
    fn promotable(&self, block: &Block) -> Vec<Promoted> {
        let (declared, written) = declared_and_written(block);
        let certain = certain_reads(block, &self.analysis.plan.exits);
        // Every element read of an active buffer.
        let mut reads: Vec<(VarId, String, &Expr)> = Vec::new();
        block.each_stmt(&mut |stmt| {
            stmt.each_expr(&mut |expr| {
                expr.each_subexpr(&mut |e| {
                    let ExprKind::Elem(var, index) = &e.kind else {
                        return;
                    };
                    if !(self.active(*var) && self.is_buffer(*var))
                        || written.contains(var)
                        || declared.contains(var)
                    {
                        return;
                    }
                    let Some(key) = index_key(index) else { return };
                    if !reads.iter().any(|r| r.0 == *var && r.1 == key) {
                        reads.push((*var, key, index));
                    }
                })
            })
        });
        let taken = self.promoted.borrow();
        let windows = self.windows.borrow();
        let mut fresh = Vec::new();
        for (var, key, index) in reads {
            if taken.iter().any(|p| p.var == var && p.key == key) {
                continue;
            }
            if let Some((index_var, _)) = index.offset_of() {
                if windows
                    .iter()
                    .any(|w| w.var == var && w.index_var == index_var)
                {
                    continue;
                }
            }
            if !reads_only_outside(index, &declared, &written) {
                continue;
            }
            fresh.push(Promoted {
                var,
                certain: certain.contains(&(var, key.clone())),
                key,
                index: index.clone(),
                local: self.fresh_local("acc"),
                used: false,
            });
        }
        fresh
    }

    /// The windows of a loop over `index_var` whose body is `body`, run
    /// backwards if `descending` (else forwards), set up while `reverse`
    /// emits the reverse of the body.
    pub(crate) fn with_windows(
        &self,
        index_var: VarId,
        body: &Block,
        descending: bool,
        reverse: impl FnOnce() -> TokenStream,
    ) -> (TokenStream, Rolled) {
        let fresh = self.stencils(index_var, body);
        let depth = self.windows.borrow().len();
        self.windows.borrow_mut().extend(fresh);
        let reversed = reverse();
        let used: Vec<Window> = self
            .windows
            .borrow_mut()
            .drain(depth..)
            .filter(|w| w.used)
            .collect();
        let index = self.name(index_var);
        let last = self.fresh_local("last");
        let mut rolled = Rolled {
            before: TokenStream::new(),
            each: TokenStream::new(),
            after: TokenStream::new(),
        };
        if used.is_empty() {
            return (reversed, rolled);
        }
        let mut before = vec![quote!(let mut #last: usize = 0;)];
        let mut each = Vec::new();
        let mut after = Vec::new();
        for window in &used {
            before.extend(window.locals.iter().map(|l| self.zero_local(l)));
            let n = window.locals.len();
            // The element no later iteration touches: the highest offset
            // when running backwards, the lowest when running forwards.
            let lead = if descending { n - 1 } else { 0 };
            let offset = window.first + lead as i64;
            let at = offset_index(quote!(#index), offset);
            each.push(self.flush(window.var, at, &window.locals[lead], window.certain[lead]));
            let a = &self.cotangent;
            let shifted: Vec<TokenStream> = if descending {
                (1..n)
                    .rev()
                    .map(|k| {
                        let (to, from) = (&window.locals[k], &window.locals[k - 1]);
                        quote!(#to = #from;)
                    })
                    .collect()
            } else {
                (0..n - 1)
                    .map(|k| {
                        let (to, from) = (&window.locals[k], &window.locals[k + 1]);
                        quote!(#to = #from;)
                    })
                    .collect()
            };
            let emptied = &window.locals[if descending { 0 } else { n - 1 }];
            each.push(quote! {
                #(#shifted)*
                #emptied = (-<#a as ::deltad::__private::Scalar>::zero());
            });
            // After the last iteration `last`, local k holds the element
            // the iteration before it would have had at offset k: shifted
            // by one.
            for k in 0..n {
                if k == (if descending { 0 } else { n - 1 }) {
                    continue;
                }
                // (What it holds has shifted through the offsets between:
                // it may come from any read offset on the source's side,
                // read there or not.)
                let source = if descending { k - 1 } else { k + 1 };
                let feeding = if descending {
                    &window.read[..=source]
                } else {
                    &window.read[source..]
                };
                if !feeding.iter().any(|&read| read) {
                    continue;
                }
                let step = if descending { -1 } else { 1 };
                let at = offset_index(quote!(#last), window.first + k as i64 + step);
                after.push(self.flush(window.var, at, &window.locals[k], false));
            }
        }
        each.push(quote!(#last = #index;));
        rolled.before = quote!(#(#before)*);
        rolled.each = quote!(#(#each)*);
        rolled.after = quote!(#(#after)*);
        (reversed, rolled)
    }

    /// The windows a loop over `index_var` with body `body` may keep: per
    /// active buffer not written in the body, read at two or more offsets
    /// `i + c`.
    fn stencils(&self, index_var: VarId, body: &Block) -> Vec<Window> {
        let (declared, written) = declared_and_written(body);
        if written.contains(&index_var) || declared.contains(&index_var) {
            return Vec::new();
        }
        let certain = certain_reads(body, &self.analysis.plan.exits);
        let mut offsets: Vec<(VarId, Vec<(i64, bool)>)> = Vec::new();
        body.each_stmt(&mut |stmt| {
            stmt.each_expr(&mut |expr| {
                expr.each_subexpr(&mut |e| {
                    let ExprKind::Elem(var, index) = &e.kind else {
                        return;
                    };
                    if !(self.active(*var) && self.is_buffer(*var))
                        || written.contains(var)
                        || declared.contains(var)
                    {
                        return;
                    }
                    let Some((v, offset)) = index.offset_of() else {
                        return;
                    };
                    if v != index_var {
                        return;
                    }
                    let sure = index_key(index).is_some_and(|key| certain.contains(&(*var, key)));
                    let entry = match offsets.iter_mut().find(|o| o.0 == *var) {
                        Some(entry) => entry,
                        None => {
                            offsets.push((*var, Vec::new()));
                            offsets.last_mut().expect("just pushed")
                        }
                    };
                    match entry.1.iter_mut().find(|o| o.0 == offset) {
                        Some(o) => o.1 |= sure,
                        None => entry.1.push((offset, sure)),
                    }
                })
            })
        });
        let taken = self.windows.borrow();
        offsets
            .into_iter()
            .filter(|(var, seen)| {
                // A window of a few locals at most.
                let low = seen.iter().map(|o| o.0).min().unwrap_or(0);
                let high = seen.iter().map(|o| o.0).max().unwrap_or(0);
                seen.len() >= 2
                    && high - low < 8
                    && !taken
                        .iter()
                        .any(|w| w.var == *var && w.index_var == index_var)
            })
            .map(|(var, seen)| {
                let first = seen.iter().map(|o| o.0).min().unwrap_or(0);
                let last = seen.iter().map(|o| o.0).max().unwrap_or(0);
                let n = (last - first + 1) as usize;
                let mut certain = vec![false; n];
                let mut read = vec![false; n];
                for (offset, sure) in seen {
                    let k = (offset - first) as usize;
                    read[k] = true;
                    certain[k] = sure;
                }
                Window {
                    var,
                    index_var,
                    first,
                    locals: (0..n).map(|_| self.fresh_local("win")).collect(),
                    certain,
                    read,
                    used: false,
                }
            })
            .collect()
    }
}

/// `index + offset` as a `usize` (wrapping: computed only where the element
/// was read, so it is in bounds).
fn offset_index(index: TokenStream, offset: i64) -> TokenStream {
    match offset {
        0 => index,
        o if o > 0 => {
            let o = o as usize;
            quote!((#index).wrapping_add(#o))
        }
        o => {
            let o = o.unsigned_abs() as usize;
            quote!((#index).wrapping_sub(#o))
        }
    }
}

/// The variables `block` declares (at any depth) and those it assigns.
fn declared_and_written(block: &Block) -> (HashSet<VarId>, HashSet<VarId>) {
    let mut declared = HashSet::new();
    let mut written = HashSet::new();
    block.each_stmt(&mut |stmt| match &stmt.kind {
        StmtKind::Let { var, .. } => {
            declared.insert(*var);
        }
        StmtKind::For { var: Some(var), .. } => {
            declared.insert(*var);
        }
        StmtKind::Match { arms, .. } => {
            for arm in arms {
                declared.extend(arm.vars.iter().copied());
            }
        }
        StmtKind::Assign { place, .. } => {
            written.insert(place.var());
            if let Place::Elem(var, _) = place {
                written.insert(*var);
            }
        }
        _ => {}
    });
    (declared, written)
}

/// True if `index` reads only variables declared outside the block and not
/// assigned in it (and calls nothing).
fn reads_only_outside(index: &Expr, declared: &HashSet<VarId>, written: &HashSet<VarId>) -> bool {
    let mut stable = true;
    index.each_subexpr(&mut |e| {
        let read: &[VarId] = match &e.kind {
            ExprKind::Var(v) | ExprKind::Len(v) | ExprKind::Elem(v, _) => std::slice::from_ref(v),
            ExprKind::Opaque { reads, .. } => reads,
            ExprKind::Call(_) => {
                stable = false;
                &[]
            }
            _ => &[],
        };
        stable &= read
            .iter()
            .all(|v| !declared.contains(v) && !written.contains(v));
    });
    stable
}

/// The element reads (buffer, index key) that happen whenever `block` runs
/// to its end: in its own statements up to the first that may leave it,
/// outside the right operands of `&&` and `||`.
fn certain_reads(block: &Block, exits: &[bool]) -> HashSet<(VarId, String)> {
    fn visit(expr: &Expr, out: &mut HashSet<(VarId, String)>) {
        match &expr.kind {
            ExprKind::Logic(syn::BinOp::And(_) | syn::BinOp::Or(_), a, _) => {
                visit(a, out);
            }
            ExprKind::Elem(var, index) => {
                if let Some(key) = index_key(index) {
                    out.insert((*var, key));
                }
                visit(index, out);
            }
            _ => {
                for child in expr.children() {
                    visit(child, out);
                }
            }
        }
    }
    let mut out = HashSet::new();
    for stmt in &block.stmts {
        stmt.each_expr(&mut |expr| visit(expr, &mut out));
        if exits[stmt.id] {
            break;
        }
    }
    out
}

/// A key identifying an index expression by its structure and the
/// variables it reads (not their names, which shadowing may reuse); `None`
/// for expressions with calls.
fn index_key(expr: &Expr) -> Option<String> {
    Some(match &expr.kind {
        ExprKind::Lit(lit) => lit.to_token_stream().to_string(),
        ExprKind::Var(var) => format!("v{var}"),
        ExprKind::Len(var) => format!("len{var}"),
        ExprKind::Neg(a) => format!("-({})", index_key(a)?),
        ExprKind::Not(a) => format!("!({})", index_key(a)?),
        ExprKind::Cast(a, ty) => format!("({} as {})", index_key(a)?, ty.to_token_stream()),
        ExprKind::Arith(op, a, b) => format!("({} {op:?} {})", index_key(a)?, index_key(b)?),
        ExprKind::Compare(op, a, b) | ExprKind::Logic(op, a, b) => format!(
            "({} {} {})",
            index_key(a)?,
            op.to_token_stream(),
            index_key(b)?
        ),
        ExprKind::Elem(var, index) => format!("v{var}[{}]", index_key(index)?),
        ExprKind::Opaque { expr, reads } => {
            format!("opaque({}; {reads:?})", expr.to_token_stream())
        }
        ExprKind::Math { .. }
        | ExprKind::Call(_)
        | ExprKind::Primitive(..)
        | ExprKind::NewBuffer(_)
        | ExprKind::Field { .. } => return None,
    })
}
