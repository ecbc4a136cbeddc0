//! The twins of ndarray's types, their operations and `Differentiable`
//! impls (documented in `crate::ndarray`).

use ::core::ops::{Add, AddAssign, Div, Index, IndexMut, Mul, MulAssign, Neg, Sub, SubAssign};
use ::std::borrow::Cow;

use ::ndarray::{Array1, Array2, ArrayBase, Data, Ix1, Ix2};

use super::{Elems, Layout};
use crate::convert::Lift;
use crate::differentiable::{Differentiable, IntoDual};
use crate::real::Real;
use crate::scalar::{Primitive, Scalar};
use crate::tape::{DeltaId, Tape};
use crate::wrapper::GradReader;

/// The twin of an `Array1`: its elements (dual values in a recording pass,
/// machine floats for gradients and seeds).
///
/// ```
/// use deltad::differentiate;
/// // `deltad::ndarray` in user code:
/// use deltad_runtime::ndarray::{array, Array1, Array2};
///
/// // Least squares ‖X w - y‖² with constant data X, y.
/// #[differentiate]
/// fn loss(w: &Array1<f64>, #[no_grad] x: &Array2<f64>, #[no_grad] y: &Array1<f64>) -> f64 {
///     let r = x.dot(w) - y;
///     r.dot(&r)
/// }
///
/// fn main() {
///     let x = array![[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]];
///     let y = array![1.0, 0.0, -1.0];
///     let w = array![0.5, -0.25];
///     let g = loss::grad(&w, &x, &y);
///     // ∇ = 2 Xᵀ (X w - y)
///     assert_eq!(g.w, 2.0 * x.t().dot(&(x.dot(&w) - &y)));
/// }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Array1Twin<T> {
    data: Vec<T>,
}

/// The twin of an `Array2`: its elements in row-major (logical) order and
/// its dimensions.
#[derive(Clone, Debug, PartialEq)]
pub struct Array2Twin<T> {
    data: Vec<T>,
    dim: [usize; 2],
}

impl<T> Array1Twin<T> {
    /// The dimensions, as a list.
    fn shape_dims(&self) -> [usize; 1] {
        [self.data.len()]
    }

    /// A twin from its elements.
    pub fn from_vec(data: Vec<T>) -> Self {
        Array1Twin { data }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True if there are no elements.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The number of elements (ndarray's `dim` of a 1-D array).
    pub fn dim(&self) -> usize {
        self.data.len()
    }

    /// The elements.
    pub fn iter(&self) -> ::core::slice::Iter<'_, T> {
        self.data.iter()
    }

    /// The elements.
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }

    /// The twin with `f` applied to (a reference to) every element
    /// (ndarray's `map`).
    pub fn map<U>(&self, f: impl FnMut(&T) -> U) -> Array1Twin<U> {
        Array1Twin {
            data: self.data.iter().map(f).collect(),
        }
    }
}

impl<T> Array2Twin<T> {
    /// The dimensions, as a list.
    fn shape_dims(&self) -> [usize; 2] {
        self.dim
    }

    /// A twin from its elements in row-major order. Panics if their number is
    /// not `rows * cols`.
    pub fn from_row_major(data: Vec<T>, (rows, cols): (usize, usize)) -> Self {
        assert_eq!(
            data.len(),
            rows * cols,
            "deltad: {} elements for a {rows}×{cols} array",
            data.len()
        );
        Array2Twin {
            data,
            dim: [rows, cols],
        }
    }

    /// The number of rows.
    pub fn nrows(&self) -> usize {
        self.dim[0]
    }

    /// The number of columns.
    pub fn ncols(&self) -> usize {
        self.dim[1]
    }

    /// (rows, columns).
    pub fn dim(&self) -> (usize, usize) {
        (self.dim[0], self.dim[1])
    }

    /// [rows, columns].
    pub fn shape(&self) -> &[usize] {
        &self.dim
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True if there are no elements.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The elements in row-major order.
    pub fn iter(&self) -> ::core::slice::Iter<'_, T> {
        self.data.iter()
    }

    /// The elements in row-major order.
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }

    /// The twin with `f` applied to (a reference to) every element
    /// (ndarray's `map`).
    pub fn map<U>(&self, f: impl FnMut(&T) -> U) -> Array2Twin<U> {
        Array2Twin {
            data: self.data.iter().map(f).collect(),
            dim: self.dim,
        }
    }

    fn layout(&self) -> Layout {
        Layout::row_major(self.dim[0], self.dim[1])
    }

    fn linear(&self, [i, j]: [usize; 2]) -> usize {
        assert!(
            i < self.dim[0] && j < self.dim[1],
            "deltad: index [{i}, {j}] out of bounds of a {}×{} array",
            self.dim[0],
            self.dim[1]
        );
        i * self.dim[1] + j
    }
}

impl<T> Index<usize> for Array1Twin<T> {
    type Output = T;
    fn index(&self, index: usize) -> &T {
        &self.data[index]
    }
}

impl<T> IndexMut<usize> for Array1Twin<T> {
    fn index_mut(&mut self, index: usize) -> &mut T {
        &mut self.data[index]
    }
}

impl<T> Index<[usize; 2]> for Array2Twin<T> {
    type Output = T;
    fn index(&self, index: [usize; 2]) -> &T {
        &self.data[self.linear(index)]
    }
}

impl<T> IndexMut<[usize; 2]> for Array2Twin<T> {
    fn index_mut(&mut self, index: [usize; 2]) -> &mut T {
        let at = self.linear(index);
        &mut self.data[at]
    }
}

impl<T> Index<(usize, usize)> for Array2Twin<T> {
    type Output = T;
    fn index(&self, (i, j): (usize, usize)) -> &T {
        &self[[i, j]]
    }
}

impl<T> IndexMut<(usize, usize)> for Array2Twin<T> {
    fn index_mut(&mut self, (i, j): (usize, usize)) -> &mut T {
        &mut self[[i, j]]
    }
}

impl<'a, T> IntoIterator for &'a Array1Twin<T> {
    type Item = &'a T;
    type IntoIter = ::core::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.data.iter()
    }
}

impl<'a, T> IntoIterator for &'a Array2Twin<T> {
    type Item = &'a T;
    type IntoIter = ::core::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.data.iter()
    }
}

/// An operand of a twin's method or operator: a twin of dual values or a
/// plain ndarray array or view (a constant), by value or by reference.
/// `Dim` is `Ix1` or `Ix2`.
pub trait ArrayOperand<'t, S: Scalar> {
    /// `Ix1` or `Ix2`.
    type Dim;
    /// The elements and where each is (a 1-D operand is a column).
    #[doc(hidden)]
    fn elems(&self) -> (Elems<'_, 't, S>, Layout);
}

impl<'t, S: Scalar> ArrayOperand<'t, S> for Array1Twin<Real<'t, S>> {
    type Dim = Ix1;
    fn elems(&self) -> (Elems<'_, 't, S>, Layout) {
        (Elems::Dual(&self.data), Layout::column_major(self.len(), 1))
    }
}

impl<'t, S: Scalar> ArrayOperand<'t, S> for Array2Twin<Real<'t, S>> {
    type Dim = Ix2;
    fn elems(&self) -> (Elems<'_, 't, S>, Layout) {
        (Elems::Dual(&self.data), self.layout())
    }
}

impl<'t, S: Scalar, St: Data<Elem = S::Prim>> ArrayOperand<'t, S> for ArrayBase<St, Ix1> {
    type Dim = Ix1;
    fn elems(&self) -> (Elems<'_, 't, S>, Layout) {
        let data = match self.as_slice() {
            Some(slice) => Cow::Borrowed(slice),
            None => Cow::Owned(self.iter().copied().collect()),
        };
        (Elems::Plain(data), Layout::column_major(self.len(), 1))
    }
}

impl<'t, S: Scalar, St: Data<Elem = S::Prim>> ArrayOperand<'t, S> for ArrayBase<St, Ix2> {
    type Dim = Ix2;
    fn elems(&self) -> (Elems<'_, 't, S>, Layout) {
        let (rows, cols) = self.dim();
        // `as_slice` is the row-major (standard layout) case only.
        let data = match self.as_slice() {
            Some(slice) => Cow::Borrowed(slice),
            None => Cow::Owned(self.iter().copied().collect()),
        };
        (Elems::Plain(data), Layout::row_major(rows, cols))
    }
}

impl<'t, S: Scalar, T: ArrayOperand<'t, S> + ?Sized> ArrayOperand<'t, S> for &T {
    type Dim = T::Dim;
    fn elems(&self) -> (Elems<'_, 't, S>, Layout) {
        (**self).elems()
    }
}

/// A twin of the dimension `D` (`Ix1` → [`Array1Twin`], `Ix2` →
/// [`Array2Twin`]) from row-major dual values.
#[doc(hidden)]
pub trait TwinOf<'t, S: Scalar> {
    type Twin;
    fn twin(data: Vec<Real<'t, S>>, layout: Layout) -> Self::Twin;
}

impl<'t, S: Scalar + 't> TwinOf<'t, S> for Ix1 {
    type Twin = Array1Twin<Real<'t, S>>;
    fn twin(data: Vec<Real<'t, S>>, _layout: Layout) -> Self::Twin {
        Array1Twin { data }
    }
}

impl<'t, S: Scalar + 't> TwinOf<'t, S> for Ix2 {
    type Twin = Array2Twin<Real<'t, S>>;
    fn twin(data: Vec<Real<'t, S>>, layout: Layout) -> Self::Twin {
        Array2Twin {
            data,
            dim: [layout.rows, layout.cols],
        }
    }
}

/// What `a.dot(&b)` gives for `a` of dimension `Self` and `b` of dimension
/// `Rhs`: a real (vector·vector), a vector (matrix·vector, vector·matrix)
/// or a matrix (matrix·matrix).
#[doc(hidden)]
pub trait DotDims<'t, S: Scalar, Rhs> {
    type Output;
    fn dot(a: (Elems<'_, 't, S>, Layout), b: (Elems<'_, 't, S>, Layout)) -> Self::Output;
}

impl<'t, S: Scalar + 't> DotDims<'t, S, Ix1> for Ix1 {
    type Output = Real<'t, S>;
    fn dot(a: (Elems<'_, 't, S>, Layout), b: (Elems<'_, 't, S>, Layout)) -> Real<'t, S> {
        super::dot("dot", &a.0, &b.0)
    }
}

impl<'t, S: Scalar + 't> DotDims<'t, S, Ix1> for Ix2 {
    type Output = Array1Twin<Real<'t, S>>;
    fn dot(a: (Elems<'_, 't, S>, Layout), b: (Elems<'_, 't, S>, Layout)) -> Self::Output {
        Array1Twin {
            data: super::matmul(&a.0, a.1, &b.0, b.1, false),
        }
    }
}

impl<'t, S: Scalar + 't> DotDims<'t, S, Ix2> for Ix1 {
    type Output = Array1Twin<Real<'t, S>>;
    fn dot(a: (Elems<'_, 't, S>, Layout), b: (Elems<'_, 't, S>, Layout)) -> Self::Output {
        // The vector as a row.
        Array1Twin {
            data: super::matmul(&a.0, a.1.transposed(), &b.0, b.1, false),
        }
    }
}

impl<'t, S: Scalar + 't> DotDims<'t, S, Ix2> for Ix2 {
    type Output = Array2Twin<Real<'t, S>>;
    fn dot(a: (Elems<'_, 't, S>, Layout), b: (Elems<'_, 't, S>, Layout)) -> Self::Output {
        let dim = [a.1.rows, b.1.cols];
        Array2Twin {
            data: super::matmul(&a.0, a.1, &b.0, b.1, false),
            dim,
        }
    }
}

type DotOf<'t, S, A, B> =
    <<A as ArrayOperand<'t, S>>::Dim as DotDims<'t, S, <B as ArrayOperand<'t, S>>::Dim>>::Output;

/// `a.dot(&b)` for any operands.
fn dot_any<'t, S: Scalar + 't, A: ArrayOperand<'t, S>, B: ArrayOperand<'t, S>>(
    a: &A,
    b: &B,
) -> DotOf<'t, S, A, B>
where
    A::Dim: DotDims<'t, S, B::Dim>,
{
    <A::Dim as DotDims<'t, S, B::Dim>>::dot(a.elems(), b.elems())
}

/// Element-wise `op` of two operands of the same shape.
fn elementwise<'t, S: Scalar + 't, A: ArrayOperand<'t, S>, B: ArrayOperand<'t, S, Dim = A::Dim>>(
    what: &str,
    a: &A,
    b: &B,
    op: impl Fn(Real<'t, S>, Real<'t, S>) -> Real<'t, S>,
) -> <A::Dim as TwinOf<'t, S>>::Twin
where
    A::Dim: TwinOf<'t, S>,
{
    let (x, la) = a.elems();
    let (y, lb) = b.elems();
    assert!(
        la.rows == lb.rows && la.cols == lb.cols,
        "deltad: {what} of arrays of shapes {}×{} and {}×{} (deltad does not broadcast)",
        la.rows,
        la.cols,
        lb.rows,
        lb.cols
    );
    // Operands list their elements in logical (row-major) order.
    let data = super::zip_with(what, &x, &y, op);
    <A::Dim as TwinOf<'t, S>>::twin(data, Layout::row_major(la.rows, la.cols))
}

/// `op(a_i, k)` element by element.
fn with_scalar<'t, S: Scalar + 't, A: ArrayOperand<'t, S>>(
    a: &A,
    k: Real<'t, S>,
    op: impl Fn(Real<'t, S>, Real<'t, S>) -> Real<'t, S>,
) -> <A::Dim as TwinOf<'t, S>>::Twin
where
    A::Dim: TwinOf<'t, S>,
{
    let (x, layout) = a.elems();
    let data = (0..x.len()).map(|i| op(x.real(i), k)).collect();
    <A::Dim as TwinOf<'t, S>>::twin(data, Layout::row_major(layout.rows, layout.cols))
}

macro_rules! twin_methods {
    ($(($twin:ident, $dim:ty))*) => {$(
        /// The methods a differentiated function calls on a twin of dual
        /// values. Methods deltad does not know are called through hidden
        /// `__deltad_` forwarders (the macro rewrites `a.dot(&b)` to
        /// `a.__deltad_dot(tape, &b)`).
        impl<'t, S: Scalar> $twin<Real<'t, S>> {
            /// The sum of the elements: one binding.
            pub fn sum(&self) -> Real<'t, S> {
                super::sum(&Elems::Dual(&self.data))
            }

            #[doc(hidden)]
            pub fn __deltad_sum(&self, _tape: &'t Tape<S>) -> Real<'t, S> {
                self.sum()
            }

            #[doc(hidden)]
            pub fn __deltad_mean(&self, _tape: &'t Tape<S>) -> Option<Real<'t, S>> {
                if self.data.is_empty() {
                    return None;
                }
                let n = S::from_prim(<S::Prim as Primitive>::from_f64(self.data.len() as f64));
                Some(self.sum() / Real::constant(n))
            }

            #[doc(hidden)]
            pub fn __deltad_dot<O: ArrayOperand<'t, S>>(
                &self,
                _tape: &'t Tape<S>,
                other: O,
            ) -> DotOf<'t, S, Self, O>
            where
                <Self as ArrayOperand<'t, S>>::Dim: DotDims<'t, S, O::Dim>,
            {
                dot_any(self, &other)
            }

            /// `mapv`: each element mapped by `f` (the operations `f`
            /// performs are recorded, one per element).
            #[doc(hidden)]
            pub fn __deltad_mapv(
                &self,
                _tape: &'t Tape<S>,
                mut f: impl FnMut(Real<'t, S>) -> Real<'t, S>,
            ) -> Self {
                let mut mapped = self.clone();
                for element in &mut mapped.data {
                    *element = f(*element);
                }
                mapped
            }

            /// `mapv_into`: as `mapv`, reusing the twin.
            #[doc(hidden)]
            pub fn __deltad_mapv_into(
                mut self,
                _tape: &'t Tape<S>,
                mut f: impl FnMut(Real<'t, S>) -> Real<'t, S>,
            ) -> Self {
                for element in &mut self.data {
                    *element = f(*element);
                }
                self
            }

            /// `mapv_inplace`: each element replaced by `f` of it.
            #[doc(hidden)]
            pub fn __deltad_mapv_inplace(
                &mut self,
                _tape: &'t Tape<S>,
                mut f: impl FnMut(Real<'t, S>) -> Real<'t, S>,
            ) {
                for element in &mut self.data {
                    *element = f(*element);
                }
            }

            /// `view`: the twin itself, borrowed (a view of a differentiated
            /// array reads its dual values).
            #[doc(hidden)]
            pub fn __deltad_view(&self, _tape: &'t Tape<S>) -> &Self {
                self
            }

            /// `slice(s![..])`: a copy of the selected elements (a view of
            /// a differentiated array reads its dual values), shaped as the
            /// slice says: ranges keep an axis, indices drop it, `NewAxis`
            /// adds one of length 1.
            #[doc(hidden)]
            pub fn __deltad_slice<I>(
                &self,
                _tape: &'t Tape<S>,
                info: I,
            ) -> <I::OutDim as TwinOf<'t, S>>::Twin
            where
                I: ::ndarray::SliceArg<$dim>,
                I::OutDim: TwinOf<'t, S>,
            {
                let (data, dims) = slice_elements(&self.data, &self.shape_dims(), info.as_ref());
                let layout = match dims.as_slice() {
                    [rows, cols] => Layout::row_major(*rows, *cols),
                    [len] => Layout::row_major(1, *len),
                    _ => Layout::row_major(1, data.len()),
                };
                <I::OutDim as TwinOf<'t, S>>::twin(data, layout)
            }

            /// `into_shape_with_order`: the elements in their logical
            /// (row-major) order, in a vector or a matrix of the given shape;
            /// an error if the number of elements differs.
            #[doc(hidden)]
            pub fn __deltad_into_shape_with_order<E: TwinShape<'t, S>>(
                self,
                _tape: &'t Tape<S>,
                shape: E,
            ) -> Result<E::Twin, ::ndarray::ShapeError> {
                shape.reshape(self.data)
            }
        }
    )*};
}
twin_methods!((Array1Twin, Ix1)(Array2Twin, Ix2));

/// The elements `elems` select of a row-major array of dimensions `dims`,
/// in row-major order, and the dimensions of the result (ndarray's rules:
/// negative indices count from the end, a negative step walks the range
/// from its end).
fn slice_elements<T: Copy>(
    data: &[T],
    dims: &[usize],
    elems: &[::ndarray::SliceInfoElem],
) -> (Vec<T>, Vec<usize>) {
    use ::ndarray::SliceInfoElem;
    let absolute = |len: usize, index: isize| -> usize {
        if index < 0 {
            len.checked_sub(index.unsigned_abs()).unwrap_or_else(|| {
                panic!("deltad: slice index {index} out of bounds of an axis of length {len}")
            })
        } else {
            index.unsigned_abs()
        }
    };
    // Per input axis, the indices it keeps.
    let mut picks: Vec<Vec<usize>> = Vec::new();
    let mut out_dims = Vec::new();
    let mut axis = 0;
    for elem in elems {
        match *elem {
            SliceInfoElem::NewAxis => out_dims.push(1),
            SliceInfoElem::Index(index) => {
                let len = dims[axis];
                let at = absolute(len, index);
                assert!(
                    at < len,
                    "deltad: slice index {index} out of bounds of an axis of length {len}"
                );
                picks.push(vec![at]);
                axis += 1;
            }
            SliceInfoElem::Slice { start, end, step } => {
                let len = dims[axis];
                let start = absolute(len, start);
                let end = absolute(len, end.unwrap_or(len as isize)).max(start);
                assert!(
                    end <= len,
                    "deltad: slice end {end} past the end of an axis of length {len}"
                );
                assert!(step != 0, "deltad: a slice's step must not be zero");
                let stride = step.unsigned_abs();
                let kept: Vec<usize> = if step > 0 {
                    (start..end).step_by(stride).collect()
                } else {
                    (start..end).rev().step_by(stride).collect()
                };
                out_dims.push(kept.len());
                picks.push(kept);
                axis += 1;
            }
        }
    }
    // Axes the slice does not name are kept whole.
    while axis < dims.len() {
        picks.push((0..dims[axis]).collect());
        out_dims.push(dims[axis]);
        axis += 1;
    }
    let mut selected = Vec::new();
    match picks.as_slice() {
        [rows] => selected.extend(rows.iter().map(|&i| data[i])),
        [rows, cols] => {
            for &i in rows {
                selected.extend(cols.iter().map(|&j| data[i * dims[1] + j]));
            }
        }
        _ => {}
    }
    (selected, out_dims)
}

/// The dimension type of an owned array (for the views' impls).
#[doc(hidden)]
pub trait HasDim {
    type Dim;
}

impl<P> HasDim for Array1<P> {
    type Dim = Ix1;
}

impl<P> HasDim for Array2<P> {
    type Dim = Ix2;
}

/// A shape `into_shape_with_order` takes (`n`, `(n,)` or `(rows, cols)`)
/// and the twin of that shape.
#[doc(hidden)]
pub trait TwinShape<'t, S: Scalar> {
    type Twin;
    fn reshape(self, data: Vec<Real<'t, S>>) -> Result<Self::Twin, ::ndarray::ShapeError>;
}

fn incompatible_shape() -> ::ndarray::ShapeError {
    ::ndarray::ShapeError::from_kind(::ndarray::ErrorKind::IncompatibleShape)
}

impl<'t, S: Scalar + 't> TwinShape<'t, S> for usize {
    type Twin = Array1Twin<Real<'t, S>>;
    fn reshape(self, data: Vec<Real<'t, S>>) -> Result<Self::Twin, ::ndarray::ShapeError> {
        if data.len() != self {
            return Err(incompatible_shape());
        }
        Ok(Array1Twin { data })
    }
}

impl<'t, S: Scalar + 't> TwinShape<'t, S> for (usize,) {
    type Twin = Array1Twin<Real<'t, S>>;
    fn reshape(self, data: Vec<Real<'t, S>>) -> Result<Self::Twin, ::ndarray::ShapeError> {
        self.0.reshape(data)
    }
}

impl<'t, S: Scalar + 't> TwinShape<'t, S> for (usize, usize) {
    type Twin = Array2Twin<Real<'t, S>>;
    fn reshape(self, data: Vec<Real<'t, S>>) -> Result<Self::Twin, ::ndarray::ShapeError> {
        if self.0.checked_mul(self.1) != Some(data.len()) {
            return Err(incompatible_shape());
        }
        Ok(Array2Twin {
            data,
            dim: [self.0, self.1],
        })
    }
}

impl<'t, S: Scalar + 't> TwinShape<'t, S> for [usize; 2] {
    type Twin = Array2Twin<Real<'t, S>>;
    fn reshape(self, data: Vec<Real<'t, S>>) -> Result<Self::Twin, ::ndarray::ShapeError> {
        (self[0], self[1]).reshape(data)
    }
}

impl<'t, S: Scalar> Array2Twin<Real<'t, S>> {
    #[doc(hidden)]
    pub fn __deltad_t(&self, _tape: &'t Tape<S>) -> Self {
        Array2Twin {
            data: super::relayout(&self.data, self.layout().transposed(), false),
            dim: [self.dim[1], self.dim[0]],
        }
    }

    #[doc(hidden)]
    pub fn __deltad_reversed_axes(&self, tape: &'t Tape<S>) -> Self {
        self.__deltad_t(tape)
    }

    #[doc(hidden)]
    pub fn __deltad_nrows(&self, _tape: &'t Tape<S>) -> usize {
        self.nrows()
    }

    #[doc(hidden)]
    pub fn __deltad_ncols(&self, _tape: &'t Tape<S>) -> usize {
        self.ncols()
    }

    #[doc(hidden)]
    pub fn __deltad_dim(&self, _tape: &'t Tape<S>) -> (usize, usize) {
        self.dim()
    }

    #[doc(hidden)]
    pub fn __deltad_shape(&self, _tape: &'t Tape<S>) -> &[usize] {
        self.shape()
    }
}

impl<'t, S: Scalar> Array1Twin<Real<'t, S>> {
    #[doc(hidden)]
    pub fn __deltad_dim(&self, _tape: &'t Tape<S>) -> usize {
        self.dim()
    }
}

/// Methods of plain arrays (constants) called with a dual argument in a
/// differentiated function (`x.dot(&w)` with constant data `x`); the
/// generated code has this trait in scope.
#[doc(hidden)]
pub trait ConstantArrayMethods<'t, S: Scalar + 't>: ArrayOperand<'t, S> + Sized {
    fn __deltad_dot<O: ArrayOperand<'t, S>>(
        &self,
        _tape: &'t Tape<S>,
        other: O,
    ) -> DotOf<'t, S, Self, O>
    where
        Self::Dim: DotDims<'t, S, O::Dim>,
    {
        dot_any(self, &other)
    }
}

impl<'t, S: Scalar + 't, St: Data<Elem = S::Prim>> ConstantArrayMethods<'t, S>
    for ArrayBase<St, Ix1>
{
}
impl<'t, S: Scalar + 't, St: Data<Elem = S::Prim>> ConstantArrayMethods<'t, S>
    for ArrayBase<St, Ix2>
{
}

// Operators: element-wise, between a twin of dual values (by value or
// reference) and a twin or a plain array, or a plain array and a twin; and
// with a scalar on either side.

macro_rules! elementwise_operators {
    ($($trait:ident $method:ident;)*) => {$(
        elementwise_operators!(@twin $trait $method Array1Twin Ix1);
        elementwise_operators!(@twin $trait $method Array2Twin Ix2);
    )*};
    (@twin $trait:ident $method:ident $twin:ident $ix:ident) => {
        elementwise_operators!(@rhs $trait $method $twin<Real<'t, S>>; $twin<Real<'t, S>>, $twin<Real<'t, S>>, []);
        elementwise_operators!(@rhs $trait $method $twin<Real<'t, S>>; $twin<Real<'t, S>>, &$twin<Real<'t, S>>, []);
        elementwise_operators!(@rhs $trait $method $twin<Real<'t, S>>; &$twin<Real<'t, S>>, $twin<Real<'t, S>>, []);
        elementwise_operators!(@rhs $trait $method $twin<Real<'t, S>>; &$twin<Real<'t, S>>, &$twin<Real<'t, S>>, []);
        elementwise_operators!(@rhs $trait $method $twin<Real<'t, S>>; $twin<Real<'t, S>>, ArrayBase<St, $ix>, [St: Data<Elem = S::Prim>]);
        elementwise_operators!(@rhs $trait $method $twin<Real<'t, S>>; $twin<Real<'t, S>>, &ArrayBase<St, $ix>, [St: Data<Elem = S::Prim>]);
        elementwise_operators!(@rhs $trait $method $twin<Real<'t, S>>; &$twin<Real<'t, S>>, ArrayBase<St, $ix>, [St: Data<Elem = S::Prim>]);
        elementwise_operators!(@rhs $trait $method $twin<Real<'t, S>>; &$twin<Real<'t, S>>, &ArrayBase<St, $ix>, [St: Data<Elem = S::Prim>]);
        impl<'t, S: Scalar, St: Data<Elem = S::Prim>> $trait<$twin<Real<'t, S>>> for ArrayBase<St, $ix> {
            type Output = $twin<Real<'t, S>>;
            fn $method(self, rhs: $twin<Real<'t, S>>) -> Self::Output {
                elementwise(stringify!($method), &self, &rhs, |x, y| x.$method(y))
            }
        }
        impl<'t, S: Scalar, St: Data<Elem = S::Prim>> $trait<&$twin<Real<'t, S>>> for ArrayBase<St, $ix> {
            type Output = $twin<Real<'t, S>>;
            fn $method(self, rhs: &$twin<Real<'t, S>>) -> Self::Output {
                elementwise(stringify!($method), &self, rhs, |x, y| x.$method(y))
            }
        }
        impl<'t, S: Scalar, St: Data<Elem = S::Prim>> $trait<$twin<Real<'t, S>>> for &ArrayBase<St, $ix> {
            type Output = $twin<Real<'t, S>>;
            fn $method(self, rhs: $twin<Real<'t, S>>) -> Self::Output {
                elementwise(stringify!($method), self, &rhs, |x, y| x.$method(y))
            }
        }
        impl<'t, S: Scalar, St: Data<Elem = S::Prim>> $trait<&$twin<Real<'t, S>>> for &ArrayBase<St, $ix> {
            type Output = $twin<Real<'t, S>>;
            fn $method(self, rhs: &$twin<Real<'t, S>>) -> Self::Output {
                elementwise(stringify!($method), self, rhs, |x, y| x.$method(y))
            }
        }
        impl<'t, S: Scalar> $trait<Real<'t, S>> for $twin<Real<'t, S>> {
            type Output = $twin<Real<'t, S>>;
            fn $method(self, k: Real<'t, S>) -> Self::Output {
                with_scalar(&self, k, |x, k| x.$method(k))
            }
        }
        impl<'t, S: Scalar> $trait<Real<'t, S>> for &$twin<Real<'t, S>> {
            type Output = $twin<Real<'t, S>>;
            fn $method(self, k: Real<'t, S>) -> Self::Output {
                with_scalar(self, k, |x, k| x.$method(k))
            }
        }
        impl<'t, S: Scalar> $trait<$twin<Real<'t, S>>> for Real<'t, S> {
            type Output = $twin<Real<'t, S>>;
            fn $method(self, a: $twin<Real<'t, S>>) -> Self::Output {
                with_scalar(&a, self, |x, k| k.$method(x))
            }
        }
        impl<'t, S: Scalar> $trait<&$twin<Real<'t, S>>> for Real<'t, S> {
            type Output = $twin<Real<'t, S>>;
            fn $method(self, a: &$twin<Real<'t, S>>) -> Self::Output {
                with_scalar(a, self, |x, k| k.$method(x))
            }
        }
        elementwise_operators!(@float $trait $method $twin f64);
        elementwise_operators!(@float $trait $method $twin f32);
    };
    (@rhs $trait:ident $method:ident $out:ty; $lhs:ty, $rhs:ty, [$($gen:tt)*]) => {
        impl<'t, S: Scalar, $($gen)*> $trait<$rhs> for $lhs {
            type Output = $out;
            fn $method(self, rhs: $rhs) -> Self::Output {
                elementwise(stringify!($method), &self, &rhs, |x, y| x.$method(y))
            }
        }
    };
    (@float $trait:ident $method:ident $twin:ident $p:ident) => {
        impl<'t, S: Scalar<Prim = $p>> $trait<$p> for $twin<Real<'t, S>> {
            type Output = $twin<Real<'t, S>>;
            fn $method(self, k: $p) -> Self::Output {
                with_scalar(&self, Real::from_prim(k), |x, k| x.$method(k))
            }
        }
        impl<'t, S: Scalar<Prim = $p>> $trait<$p> for &$twin<Real<'t, S>> {
            type Output = $twin<Real<'t, S>>;
            fn $method(self, k: $p) -> Self::Output {
                with_scalar(self, Real::from_prim(k), |x, k| x.$method(k))
            }
        }
        impl<'t, S: Scalar<Prim = $p>> $trait<$twin<Real<'t, S>>> for $p {
            type Output = $twin<Real<'t, S>>;
            fn $method(self, a: $twin<Real<'t, S>>) -> Self::Output {
                with_scalar(&a, Real::from_prim(self), |x, k| k.$method(x))
            }
        }
        impl<'t, S: Scalar<Prim = $p>> $trait<&$twin<Real<'t, S>>> for $p {
            type Output = $twin<Real<'t, S>>;
            fn $method(self, a: &$twin<Real<'t, S>>) -> Self::Output {
                with_scalar(a, Real::from_prim(self), |x, k| k.$method(x))
            }
        }
    };
}
elementwise_operators! {
    Add add;
    Sub sub;
    Mul mul;
    Div div;
}

macro_rules! assign_operators {
    ($($twin:ident $ix:ident;)*) => {$(
        impl<'t, S: Scalar, O: ArrayOperand<'t, S, Dim = $ix>> AddAssign<O> for $twin<Real<'t, S>> {
            fn add_assign(&mut self, rhs: O) {
                *self = elementwise("add_assign", &*self, &rhs, |x, y| x + y);
            }
        }
        impl<'t, S: Scalar, O: ArrayOperand<'t, S, Dim = $ix>> SubAssign<O> for $twin<Real<'t, S>> {
            fn sub_assign(&mut self, rhs: O) {
                *self = elementwise("sub_assign", &*self, &rhs, |x, y| x - y);
            }
        }
        impl<'t, S: Scalar> MulAssign<Real<'t, S>> for $twin<Real<'t, S>> {
            fn mul_assign(&mut self, k: Real<'t, S>) {
                *self = with_scalar(&*self, k, |x, k| x * k);
            }
        }
        impl<'t, S: Scalar> Neg for $twin<Real<'t, S>> {
            type Output = Self;
            fn neg(self) -> Self {
                self.map(|x| -*x)
            }
        }
        impl<'t, S: Scalar> Neg for &$twin<Real<'t, S>> {
            type Output = $twin<Real<'t, S>>;
            fn neg(self) -> Self::Output {
                self.map(|x| -*x)
            }
        }
    )*};
}
assign_operators! {
    Array1Twin Ix1;
    Array2Twin Ix2;
}

// The `Differentiable` impls: leaves in logical (row-major) order.

fn adjoint_of<S: Scalar>(real: &Real<'_, S>, adjoints: &[S]) -> S {
    match real.id() {
        Some(id) => adjoints[id.index()],
        None => S::zero(),
    }
}

macro_rules! differentiable_array {
    ($($ty:ident, $twin:ident, |$self_:ident, $data:ident| $make:expr, |$twin_data:ident, $t:ident| $build:expr;)*) => {$(
        /// Compiled callers hold one as its twin (as a user type's).
        impl<P> crate::compiled::HeldAs for $ty<P> {
            type Form = crate::compiled::AsTwin;
        }

        impl<P: Primitive> Differentiable<P> for $ty<P> {
            type Twin<T> = $twin<T>;

            fn input<'t, S: Scalar<Prim = P>>(&self, tape: &'t Tape<S>) -> Self::Twin<Real<'t, S>> {
                self.build(&mut |x| Real::input(tape, S::from_prim(x)))
            }
            fn build<T>(&self, leaf: &mut impl FnMut(P) -> T) -> Self::Twin<T> {
                let $self_ = self;
                let $data: Vec<T> = self.iter().map(|x| leaf(*x)).collect();
                $make
            }
            fn map_twin<In, Out>(
                twin: &Self::Twin<In>,
                leaf: &mut impl FnMut(&In) -> Out,
            ) -> Self::Twin<Out> {
                twin.map(leaf)
            }
            fn primal<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>) -> Self::Twin<P> {
                dual.map(Real::to_prim)
            }
            fn flatten_twin<T: Copy>(twin: &Self::Twin<T>, out: &mut Vec<T>) {
                out.extend_from_slice(&twin.data);
            }
            fn constant<'t, S: Scalar<Prim = P> + 't>(&self) -> Self::Twin<Real<'t, S>> {
                self.build(&mut Real::from_prim)
            }
            fn value<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>) -> Self::Twin<S> {
                dual.map(Real::value)
            }
            fn adjoint<S: Scalar<Prim = P>>(
                dual: &Self::Twin<Real<'_, S>>,
                adjoints: &[S],
            ) -> Self::Twin<S> {
                dual.map(|x| adjoint_of(x, adjoints))
            }
            fn seed<S: Scalar<Prim = P>>(
                dual: &Self::Twin<Real<'_, S>>,
                seed: &Self::Twin<S>,
                adjoints: &mut [S],
            ) {
                assert_eq!(
                    dual.len(),
                    seed.len(),
                    "deltad: the seed has {} elements where the output has {}",
                    seed.len(),
                    dual.len()
                );
                for (d, s) in dual.data.iter().zip(&seed.data) {
                    if let Some(id) = d.id() {
                        adjoints[id.index()] += *s;
                    }
                }
            }
            fn leaves<S: Scalar<Prim = P>>(
                dual: &Self::Twin<Real<'_, S>>,
                out: &mut Vec<Option<DeltaId>>,
            ) {
                out.extend(dual.data.iter().map(Real::id));
            }
            fn filled<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>, fill: S) -> Self::Twin<S> {
                dual.map(|_| fill)
            }
            fn set_leaf<S: Scalar<Prim = P>>(
                twin: &mut Self::Twin<S>,
                index: &mut usize,
                value: S,
            ) -> bool {
                if *index < twin.len() {
                    twin.data[*index] = value;
                    true
                } else {
                    *index -= twin.len();
                    false
                }
            }
            fn gather<S: Scalar<Prim = P>>(&self, reader: &mut GradReader<'_, S>) -> Self::Twin<S> {
                self.build(&mut |_| reader.scalar())
            }
            fn from_twin($t: Self::Twin<P>) -> Self {
                let $twin_data = $t.data;
                $build
            }
            fn to_twin(&self) -> Self::Twin<P> {
                self.build(&mut |x| x)
            }
            fn same_shape(&self, other: &Self) -> bool {
                self.shape() == other.shape()
            }
        }

        impl<'t, S: Scalar<Prim = P>, P: Primitive> IntoDual<'t, S, P, $ty<P>> for $ty<P> {
            fn into_dual(self) -> $twin<Real<'t, S>> {
                self.build(&mut Real::from_prim)
            }
        }

        /// A view of constants, for a differentiated view parameter (which
        /// stands for the owned array).
        impl<'a, 't, S: Scalar<Prim = P>, P: Primitive> IntoDual<'t, S, P, $ty<P>> for ArrayBase<::ndarray::ViewRepr<&'a P>, <$ty<P> as HasDim>::Dim> {
            fn into_dual(self) -> $twin<Real<'t, S>> {
                self.to_owned().build(&mut Real::from_prim)
            }
        }

        impl<'t, S: Scalar<Prim = P>, P: Primitive> IntoDual<'t, S, P, $ty<P>> for $twin<Real<'t, S>> {
            fn into_dual(self) -> $twin<Real<'t, S>> {
                self
            }
        }

        impl<'t, S: Scalar<Prim = P> + 't, P: Primitive> Lift<'t, S> for $ty<P> {
            type Output = $twin<Real<'t, S>>;
            fn lift(self) -> Self::Output {
                self.build(&mut Real::from_prim)
            }
        }

        impl<'t, S: Scalar<Prim = P> + 't, P: Primitive> Lift<'t, S> for &$ty<P> {
            type Output = $twin<Real<'t, S>>;
            fn lift(self) -> Self::Output {
                self.build(&mut Real::from_prim)
            }
        }

        impl<'t, S: Scalar> Lift<'t, S> for $twin<Real<'t, S>> {
            type Output = Self;
            fn lift(self) -> Self {
                self
            }
        }

        impl<'t, S: Scalar> Lift<'t, S> for &$twin<Real<'t, S>> {
            type Output = $twin<Real<'t, S>>;
            fn lift(self) -> Self::Output {
                self.clone()
            }
        }
    )*};
}

differentiable_array! {
    Array1, Array1Twin, |_array, data| Array1Twin { data }, |data, twin| Array1::from_vec(data);
    Array2, Array2Twin, |array, data| {
        let (rows, cols) = array.dim();
        Array2Twin { data, dim: [rows, cols] }
    }, |data, twin| {
        let dim = (twin.dim[0], twin.dim[1]);
        Array2::from_shape_vec(dim, data).expect("deltad: a twin's elements fill its shape")
    };
}
