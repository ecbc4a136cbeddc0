//! Dense vectors and matrices of other crates as differentiated values:
//! the kernels both adaptors share (cargo features `nalgebra`, `ndarray`).
//!
//! `nalgebra`'s and `ndarray`'s element types must be `'static`
//! (`nalgebra::Scalar`, `ndarray::LinalgScalar`), and a dual value
//! `Real<'t, S>` borrows its tape, so a `DVector<Real<'t>>` cannot do
//! arithmetic. Each supported type therefore has a runtime *twin*
//! ([`nalgebra::MatrixTwin`], [`ndarray::Array1Twin`],
//! [`ndarray::Array2Twin`]) holding its elements in a `Vec` and providing the
//! methods and operators users call. The macro binds a parameter of type
//! `DVector<f64>` to its twin (through `Differentiable`), so the user's
//! ordinary nalgebra/ndarray code runs on dual values unchanged.
//!
//! Reductions and products are recorded as *one binding per result* with a
//! term per element (a dot product of length n: one binding with 2n terms;
//! a matrix-vector product: one binding per row), as the vector primitives
//! of `vector.rs` are; element-wise arithmetic records one binding per
//! element through `Real`'s operators.

#[cfg(feature = "nalgebra")]
pub mod nalgebra;
#[cfg(feature = "ndarray")]
pub mod ndarray;

use std::borrow::Cow;

use crate::loops::NO_ID;
use crate::real::Real;
use crate::scalar::Scalar;
use crate::tape::Tape;

/// The elements of an operand: dual values, or plain numbers (constants).
#[doc(hidden)]
pub enum Elems<'a, 't, S: Scalar> {
    /// Dual values.
    Dual(&'a [Real<'t, S>]),
    /// Plain numbers: constants.
    Plain(Cow<'a, [S::Prim]>),
}

impl<'t, S: Scalar> Elems<'_, 't, S> {
    pub(crate) fn len(&self) -> usize {
        match self {
            Elems::Dual(values) => values.len(),
            Elems::Plain(values) => values.len(),
        }
    }

    #[inline(always)]
    pub(crate) fn value(&self, i: usize) -> S {
        match self {
            Elems::Dual(values) => values[i].value(),
            Elems::Plain(values) => S::from_prim(values[i]),
        }
    }

    #[inline(always)]
    fn id(&self, i: usize) -> u32 {
        match self {
            Elems::Dual(values) => values[i].raw_id(),
            Elems::Plain(_) => NO_ID,
        }
    }

    /// Element `i` as a dual value (constants have no tape).
    #[inline(always)]
    pub(crate) fn real(&self, i: usize) -> Real<'t, S> {
        match self {
            Elems::Dual(values) => values[i],
            Elems::Plain(values) => Real::from_prim(values[i]),
        }
    }

    /// The tape of the first dual value that has one.
    pub(crate) fn tape(&self) -> Option<&'t Tape<S>> {
        match self {
            Elems::Dual(values) => values.iter().find_map(Real::tape),
            Elems::Plain(_) => None,
        }
    }
}

/// Records one binding whose terms are `terms(push)`'s pushes (coefficient,
/// id; constants' `NO_ID` are skipped) on `tape`, or returns a constant if
/// there is no tape (no operand is active).
fn record<'t, S: Scalar>(
    tape: Option<&'t Tape<S>>,
    value: S,
    terms: impl FnOnce(&mut dyn FnMut(S, u32)),
) -> Real<'t, S> {
    let Some(tape) = tape else {
        return Real::constant(value);
    };
    let (mut coefs, mut args) = tape.take_scratch();
    terms(&mut |coef, id| {
        if id != NO_ID {
            coefs.push(coef);
            args.push(id);
        }
    });
    let id = tape.push_collected(&coefs, &args);
    tape.return_scratch(coefs, args);
    Real::with_id(tape, value, id)
}

/// Σ x_i, left to right: one binding.
pub(crate) fn sum<'t, S: Scalar>(x: &Elems<'_, 't, S>) -> Real<'t, S> {
    let value = (0..x.len()).fold(S::zero(), |total, i| total + x.value(i));
    record(x.tape(), value, |push| {
        for i in 0..x.len() {
            push(S::one(), x.id(i));
        }
    })
}

/// Σ a_i b_i, left to right: one binding.
pub(crate) fn dot<'t, S: Scalar>(
    what: &str,
    a: &Elems<'_, 't, S>,
    b: &Elems<'_, 't, S>,
) -> Real<'t, S> {
    assert_eq!(
        a.len(),
        b.len(),
        "deltad: {what}: the operands have {} and {} elements",
        a.len(),
        b.len()
    );
    let value = (0..a.len()).fold(S::zero(), |total, i| total + a.value(i) * b.value(i));
    record(a.tape().or(b.tape()), value, |push| {
        for i in 0..a.len() {
            push(b.value(i), a.id(i));
            push(a.value(i), b.id(i));
        }
    })
}

/// Σ x_i²: one binding with partials 2 x_i.
#[cfg_attr(not(feature = "nalgebra"), allow(dead_code))]
pub(crate) fn norm_squared<'t, S: Scalar>(x: &Elems<'_, 't, S>) -> Real<'t, S> {
    let value = (0..x.len()).fold(S::zero(), |total, i| total + x.value(i) * x.value(i));
    let two = S::one() + S::one();
    record(x.tape(), value, |push| {
        for i in 0..x.len() {
            push(two * x.value(i), x.id(i));
        }
    })
}

/// √(Σ x_i²): one binding with partials x_i / ‖x‖ (NaN at the zero vector,
/// as for `norm_squared().sqrt()`).
#[cfg_attr(not(feature = "nalgebra"), allow(dead_code))]
pub(crate) fn norm<'t, S: Scalar>(x: &Elems<'_, 't, S>) -> Real<'t, S> {
    let squared = (0..x.len()).fold(S::zero(), |total, i| total + x.value(i) * x.value(i));
    let value = squared.sqrt();
    record(x.tape(), value, |push| {
        for i in 0..x.len() {
            push(x.value(i) / value, x.id(i));
        }
    })
}

/// Where element (i, j) of a dense matrix is stored: `i * row + j * column`.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// The distance between rows.
    pub row: usize,
    /// The distance between columns.
    pub column: usize,
}

impl Layout {
    /// Column-major storage (nalgebra).
    pub(crate) fn column_major(rows: usize, cols: usize) -> Layout {
        Layout {
            rows,
            cols,
            row: 1,
            column: rows,
        }
    }

    /// Row-major storage (ndarray's standard layout).
    #[cfg_attr(not(feature = "ndarray"), allow(dead_code))]
    pub(crate) fn row_major(rows: usize, cols: usize) -> Layout {
        Layout {
            rows,
            cols,
            row: cols,
            column: 1,
        }
    }

    /// The same storage read as the transposed matrix.
    pub(crate) fn transposed(self) -> Layout {
        Layout {
            rows: self.cols,
            cols: self.rows,
            row: self.column,
            column: self.row,
        }
    }

    #[inline(always)]
    fn at(&self, i: usize, j: usize) -> usize {
        i * self.row + j * self.column
    }
}

/// The product a·b, element (i, j) one binding with a term per element of
/// row i of `a` and column j of `b`; the result in `out` storage order
/// (column-major if `column_major`, else row-major).
pub(crate) fn matmul<'t, S: Scalar>(
    a: &Elems<'_, 't, S>,
    a_layout: Layout,
    b: &Elems<'_, 't, S>,
    b_layout: Layout,
    column_major: bool,
) -> Vec<Real<'t, S>> {
    assert_eq!(
        a_layout.cols, b_layout.rows,
        "deltad: matrix product of a {}×{} and a {}×{} matrix",
        a_layout.rows, a_layout.cols, b_layout.rows, b_layout.cols
    );
    let tape = a.tape().or(b.tape());
    let (rows, cols, inner) = (a_layout.rows, b_layout.cols, a_layout.cols);
    let entry = |i: usize, j: usize| {
        let value = (0..inner).fold(S::zero(), |total, k| {
            total + a.value(a_layout.at(i, k)) * b.value(b_layout.at(k, j))
        });
        record(tape, value, |push| {
            for k in 0..inner {
                let (x, y) = (a_layout.at(i, k), b_layout.at(k, j));
                push(b.value(y), a.id(x));
                push(a.value(x), b.id(y));
            }
        })
    };
    let mut out = Vec::with_capacity(rows * cols);
    if column_major {
        for j in 0..cols {
            for i in 0..rows {
                out.push(entry(i, j));
            }
        }
    } else {
        for i in 0..rows {
            for j in 0..cols {
                out.push(entry(i, j));
            }
        }
    }
    out
}

/// The elements of a stored matrix re-read in the other storage order
/// (a transpose that keeps the storage order): no recording.
pub(crate) fn relayout<T: Clone>(data: &[T], from: Layout, column_major: bool) -> Vec<T> {
    let mut out = Vec::with_capacity(data.len());
    if column_major {
        for j in 0..from.cols {
            for i in 0..from.rows {
                out.push(data[from.at(i, j)].clone());
            }
        }
    } else {
        for i in 0..from.rows {
            for j in 0..from.cols {
                out.push(data[from.at(i, j)].clone());
            }
        }
    }
    out
}

/// Element-wise `op` of two operands of the same length, one binding per
/// element through `Real`'s operators.
pub(crate) fn zip_with<'t, S: Scalar>(
    what: &str,
    a: &Elems<'_, 't, S>,
    b: &Elems<'_, 't, S>,
    op: impl Fn(Real<'t, S>, Real<'t, S>) -> Real<'t, S>,
) -> Vec<Real<'t, S>> {
    assert_eq!(
        a.len(),
        b.len(),
        "deltad: {what}: the operands have {} and {} elements",
        a.len(),
        b.len()
    );
    (0..a.len()).map(|i| op(a.real(i), b.real(i))).collect()
}
