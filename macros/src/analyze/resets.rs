//! Which element writes leave their element's adjoint as they found it.
//!
//! The adjoint of `v[e] = x` reads the adjoint of `v[e]` (what flowed into
//! the value written) and resets it to zero, because what the adjoint
//! adds into `v[e]`'s adjoint from then on belongs to the value `v[e]`
//! held before the write, which an earlier write put there and whose
//! adjoint reads it in turn. Where no write of `v[e]` can run before this
//! one, nothing reads that adjoint again, and the reset is a store to a
//! dead value: in a loop that fills a new buffer (`z[i] = x[i] * y[i - 1]`
//! for every `i`), one store per element in the adjoint's hottest loop.
//!
//! A write `v[index] = ..` of a local buffer `v` keeps its element's
//! adjoint (no reset) when
//! * `v`'s adjoint is read by nothing but the adjoints of writes of its
//!   elements: `v` is never assigned whole, and its `let` reads no
//!   differentiated value (`vec![0.0; n]`);
//! * the write runs at most once per element per `v`: it is in no loop
//!   inside `v`'s scope, or in exactly one `for` loop over a range whose
//!   variable the index is, plus or minus a literal;
//! * every other write of `v`'s elements writes other elements: the indices
//!   of both are literals or a `for` loop's variable plus or minus a
//!   literal, and the ranges they cover (from the loops' literal bounds)
//!   do not meet.

use std::collections::HashMap;

use crate::analyze::positions::Positions;
use crate::ir::{
    AssignOp, Block, Expr, ExprKind, Function, Origin, Place, StmtId, StmtKind, VarId, VarKind,
};

/// An enclosing loop: for a `for` loop over a range, its variable and
/// range.
#[derive(Clone, Copy)]
struct Enclosing<'a> {
    index: Option<(VarId, &'a crate::ir::RangeIter)>,
}

/// A write of an element, with the loops around it.
struct Write<'a> {
    stmt: StmtId,
    op: AssignOp,
    index: &'a Expr,
    loops: Vec<Enclosing<'a>>,
}

/// Per statement: an element write whose adjoint need not reset the
/// element's adjoint.
pub(crate) fn decide(function: &Function, active: &[bool], positions: &Positions) -> Vec<bool> {
    let mut no_reset = vec![false; function.stmt_count];
    let mut walk = Walk {
        writes: HashMap::new(),
        declared_in: vec![None; function.vars.len()],
        inits: vec![None; function.vars.len()],
    };
    walk.block(&function.body, &mut Vec::new());
    for (var, writes) in &walk.writes {
        let info = &function.vars[*var];
        let local = matches!(info.origin, Origin::Local | Origin::Temp);
        let Some(depth) = walk.declared_in[*var] else {
            continue;
        };
        // (A new buffer's elements read no differentiated value; its
        // length does not matter.)
        let constant_init = walk.inits[*var].is_some_and(|init| {
            let ExprKind::NewBuffer(new) = &init.kind else {
                return false;
            };
            let mut constant = true;
            for elem in new.elems() {
                elem.each_subexpr(&mut |e| {
                    if !matches!(e.kind, ExprKind::Len(_)) {
                        e.each_named(&mut |v| constant &= !active[v]);
                    }
                });
            }
            constant
        });
        let whole = !positions.whole_writes[*var].is_empty();
        if !local || info.kind != VarKind::Buffer || whole || !constant_init {
            continue;
        }
        for write in writes {
            if write.op != AssignOp::Set || !once_per_element(write, depth) {
                continue;
            }
            let span = covered(write);
            let apart = writes
                .iter()
                .filter(|other| other.stmt != write.stmt)
                .all(|other| disjoint(span, covered(other)));
            no_reset[write.stmt] = apart;
        }
    }
    no_reset
}

struct Walk<'a> {
    writes: HashMap<VarId, Vec<Write<'a>>>,
    /// Per variable declared by a `let`: how many loops enclose it.
    declared_in: Vec<Option<usize>>,
    inits: Vec<Option<&'a Expr>>,
}

impl<'a> Walk<'a> {
    fn block(&mut self, block: &'a Block, loops: &mut Vec<Enclosing<'a>>) {
        for stmt in &block.stmts {
            match &stmt.kind {
                StmtKind::Let { var, init } => {
                    self.declared_in[*var] = Some(loops.len());
                    self.inits[*var] = init.as_ref();
                }
                StmtKind::Assign {
                    place: Place::Elem(var, index),
                    op,
                    ..
                } => self.writes.entry(*var).or_default().push(Write {
                    stmt: stmt.id,
                    op: *op,
                    index,
                    loops: loops.clone(),
                }),
                StmtKind::For {
                    var, range, body, ..
                } => {
                    loops.push(Enclosing {
                        index: var.map(|v| (v, range)),
                    });
                    self.block(body, loops);
                    loops.pop();
                    continue;
                }
                StmtKind::While { body, .. } | StmtKind::Loop { body, .. } => {
                    loops.push(Enclosing { index: None });
                    self.block(body, loops);
                    loops.pop();
                    continue;
                }
                _ => {}
            }
            for inner in stmt.blocks() {
                self.block(inner, loops);
            }
        }
    }
}

/// True if `write` runs at most once per element of a buffer declared
/// inside `depth` loops: in no loop inside them, or in one `for` loop whose
/// variable (plus or minus a literal) is the index.
fn once_per_element(write: &Write, depth: usize) -> bool {
    let inside = write.loops.get(depth..).unwrap_or(&[]);
    match inside {
        [] => true,
        [only] => matches!(
            (only.index, offset_of(write.index)),
            (Some((var, _)), Some((Some(v), _))) if v == var
        ),
        _ => false,
    }
}

/// `index` as a loop variable (or none: a literal) plus an offset.
fn offset_of(index: &Expr) -> Option<(Option<VarId>, i128)> {
    if let Some(c) = index.int_literal() {
        return Some((None, c));
    }
    index.offset_of().map(|(var, c)| (Some(var), i128::from(c)))
}

/// The elements `write` may set, as `[low, high)` (`high` unbounded:
/// `None`).
fn covered(write: &Write) -> (i128, Option<i128>) {
    const ANY: (i128, Option<i128>) = (i128::MIN, None);
    let Some((var, offset)) = offset_of(write.index) else {
        return ANY;
    };
    let Some(var) = var else {
        return (offset, Some(offset + 1));
    };
    let Some(range) = write
        .loops
        .iter()
        .rev()
        .find_map(|l| l.index.filter(|(v, _)| *v == var).map(|(_, range)| range))
    else {
        return ANY;
    };
    let Some(start) = range.start.int_literal::<i128>() else {
        return ANY;
    };
    let end = range
        .end
        .int_literal::<i128>()
        .map(|end| end + i128::from(range.inclusive) + offset);
    (start + offset, end)
}

fn disjoint(a: (i128, Option<i128>), b: (i128, Option<i128>)) -> bool {
    let before =
        |x: (i128, Option<i128>), y: (i128, Option<i128>)| x.1.is_some_and(|end| end <= y.0);
    before(a, b) || before(b, a)
}
