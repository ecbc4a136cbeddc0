//! The twins of nalgebra's types, their operations and `Differentiable`
//! impls (documented in `crate::nalgebra`).

use ::core::ops::{Add, AddAssign, Div, Index, IndexMut, Mul, MulAssign, Neg, Sub, SubAssign};
use ::std::borrow::Cow;

use ::nalgebra::{Const, DMatrix, DVector, Dim, Dyn, Matrix, RawStorage, SMatrix, U1};

use super::{Elems, Layout};
use crate::convert::Lift;
use crate::differentiable::{Differentiable, IntoDual};
use crate::real::Real;
use crate::scalar::{Primitive, Scalar};
use crate::tape::{DeltaId, Tape};
use crate::wrapper::GradReader;

/// The twin of a nalgebra matrix or vector: its elements (dual values in a
/// recording pass, machine floats for gradients and seeds) in column-major
/// order, as nalgebra stores them, and its dimensions.
///
/// ```
/// use deltad::differentiate;
/// // `deltad::nalgebra` in user code:
/// use deltad_runtime::nalgebra::{DMatrix, DVector};
///
/// // ‖M v‖² / 2: the recording pass computes on `MatrixTwin`s.
/// #[differentiate]
/// fn energy(m: &DMatrix<f64>, v: &DVector<f64>) -> f64 {
///     let w = m * v;
///     0.5 * w.norm_squared()
/// }
///
/// fn main() {
///     let m = DMatrix::from_row_slice(2, 2, &[1.0, 2.0, 0.0, 1.0]);
///     let v = DVector::from_vec(vec![1.0, -1.0]);
///     let g = energy::grad(&m, &v);
///     // ∇_v = Mᵀ M v, ∇_M = (M v) vᵀ.
///     assert_eq!(g.v, m.transpose() * (&m * &v));
///     assert_eq!(g.m, (&m * &v) * v.transpose());
/// }
/// ```
pub struct MatrixTwin<T, R: TwinRows<C>, C: Dim> {
    data: R::Buffer<T>,
    nrows: R,
    ncols: C,
}

/// Where a twin with `Self` rows and `C` columns keeps its elements: a `Vec`
/// for dynamic dimensions, an array for static ones (so the twins of static
/// vectors and matrices are `Copy`, as nalgebra's are).
pub trait TwinRows<C: Dim>: Dim {
    /// The elements' buffer, in column-major order.
    type Buffer<T>: AsRef<[T]> + AsMut<[T]>;
    /// The buffer of `items` (exactly `nrows * ncols` of them).
    #[doc(hidden)]
    fn buffer<T>(items: impl Iterator<Item = T>, nrows: Self, ncols: C) -> Self::Buffer<T>;
}

impl TwinRows<U1> for Dyn {
    type Buffer<T> = Vec<T>;
    fn buffer<T>(items: impl Iterator<Item = T>, _nrows: Dyn, _ncols: U1) -> Vec<T> {
        items.collect()
    }
}

impl TwinRows<Dyn> for Dyn {
    type Buffer<T> = Vec<T>;
    fn buffer<T>(items: impl Iterator<Item = T>, _nrows: Dyn, _ncols: Dyn) -> Vec<T> {
        items.collect()
    }
}

impl<const R: usize, const C: usize> TwinRows<Const<C>> for Const<R> {
    type Buffer<T> = ArrayBuffer<T, R, C>;
    fn buffer<T>(
        mut items: impl Iterator<Item = T>,
        _nrows: Const<R>,
        _ncols: Const<C>,
    ) -> ArrayBuffer<T, R, C> {
        let mut next = || {
            items
                .next()
                .expect("deltad: too few elements for a static matrix")
        };
        ArrayBuffer(::core::array::from_fn(|_| {
            ::core::array::from_fn(|_| next())
        }))
    }
}

/// The elements of a static twin: `C` columns of `R`.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ArrayBuffer<T, const R: usize, const C: usize>([[T; R]; C]);

impl<T, const R: usize, const C: usize> AsRef<[T]> for ArrayBuffer<T, R, C> {
    fn as_ref(&self) -> &[T] {
        self.0.as_flattened()
    }
}

impl<T, const R: usize, const C: usize> AsMut<[T]> for ArrayBuffer<T, R, C> {
    fn as_mut(&mut self) -> &mut [T] {
        self.0.as_flattened_mut()
    }
}

impl<T: Clone, R: TwinRows<C>, C: Dim> Clone for MatrixTwin<T, R, C>
where
    R::Buffer<T>: Clone,
{
    fn clone(&self) -> Self {
        MatrixTwin {
            data: self.data.clone(),
            nrows: self.nrows,
            ncols: self.ncols,
        }
    }
}

impl<T: Copy, const R: usize, const C: usize> Copy for MatrixTwin<T, Const<R>, Const<C>> {}

impl<T: ::core::fmt::Debug, R: TwinRows<C>, C: Dim> ::core::fmt::Debug for MatrixTwin<T, R, C> {
    fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
        f.debug_struct("MatrixTwin")
            .field("nrows", &self.nrows())
            .field("ncols", &self.ncols())
            .field("column_major", &self.as_slice())
            .finish()
    }
}

impl<T: PartialEq, R: TwinRows<C>, C: Dim> PartialEq for MatrixTwin<T, R, C> {
    fn eq(&self, other: &Self) -> bool {
        self.shape() == other.shape() && self.as_slice() == other.as_slice()
    }
}

/// The twin of a `DVector`.
pub type DVectorTwin<T> = MatrixTwin<T, Dyn, U1>;
/// The twin of a `DMatrix`.
pub type DMatrixTwin<T> = MatrixTwin<T, Dyn, Dyn>;
/// The twin of an `SMatrix` (`SVector<T, N>` is `SMatrixTwin<T, N, 1>`).
pub type SMatrixTwin<T, const R: usize, const C: usize> = MatrixTwin<T, Const<R>, Const<C>>;

impl<T, R: TwinRows<C>, C: Dim> MatrixTwin<T, R, C> {
    fn new(items: impl IntoIterator<Item = T>, nrows: R, ncols: C) -> Self {
        MatrixTwin {
            data: R::buffer(items.into_iter(), nrows, ncols),
            nrows,
            ncols,
        }
    }

    /// A twin from its elements in column-major order. Panics if their
    /// number is not `nrows * ncols`.
    pub fn from_column_major(data: Vec<T>, nrows: R, ncols: C) -> Self {
        assert_eq!(
            data.len(),
            nrows.value() * ncols.value(),
            "deltad: {} elements for a {}×{} matrix",
            data.len(),
            nrows.value(),
            ncols.value()
        );
        MatrixTwin::new(data, nrows, ncols)
    }

    /// The number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows.value()
    }

    /// The number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols.value()
    }

    /// (rows, columns).
    pub fn shape(&self) -> (usize, usize) {
        (self.nrows(), self.ncols())
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    /// True if there are no elements.
    pub fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }

    /// The elements in column-major order.
    pub fn iter(&self) -> ::core::slice::Iter<'_, T> {
        self.as_slice().iter()
    }

    /// The elements in column-major order.
    pub fn as_slice(&self) -> &[T] {
        self.data.as_ref()
    }

    fn as_mut_slice(&mut self) -> &mut [T] {
        self.data.as_mut()
    }

    /// The twin with `f` applied to every element (nalgebra's `map`).
    pub fn map<U>(&self, f: impl FnMut(T) -> U) -> MatrixTwin<U, R, C>
    where
        T: Clone,
    {
        MatrixTwin::new(
            self.as_slice().iter().cloned().map(f),
            self.nrows,
            self.ncols,
        )
    }

    fn map_ref<U>(&self, f: impl FnMut(&T) -> U) -> MatrixTwin<U, R, C> {
        MatrixTwin::new(self.as_slice().iter().map(f), self.nrows, self.ncols)
    }

    fn layout(&self) -> Layout {
        Layout::column_major(self.nrows(), self.ncols())
    }

    fn linear(&self, (i, j): (usize, usize)) -> usize {
        assert!(
            i < self.nrows() && j < self.ncols(),
            "deltad: index ({i}, {j}) out of bounds of a {}×{} matrix",
            self.nrows(),
            self.ncols()
        );
        i + j * self.nrows()
    }
}

impl<T, R: TwinRows<C>, C: Dim> Index<usize> for MatrixTwin<T, R, C> {
    type Output = T;
    fn index(&self, index: usize) -> &T {
        &self.as_slice()[index]
    }
}

impl<T, R: TwinRows<C>, C: Dim> IndexMut<usize> for MatrixTwin<T, R, C> {
    fn index_mut(&mut self, index: usize) -> &mut T {
        &mut self.as_mut_slice()[index]
    }
}

impl<T, R: TwinRows<C>, C: Dim> Index<(usize, usize)> for MatrixTwin<T, R, C> {
    type Output = T;
    fn index(&self, index: (usize, usize)) -> &T {
        &self.as_slice()[self.linear(index)]
    }
}

impl<T, R: TwinRows<C>, C: Dim> IndexMut<(usize, usize)> for MatrixTwin<T, R, C> {
    fn index_mut(&mut self, index: (usize, usize)) -> &mut T {
        let at = self.linear(index);
        &mut self.as_mut_slice()[at]
    }
}

impl<'a, T, R: TwinRows<C>, C: Dim> IntoIterator for &'a MatrixTwin<T, R, C> {
    type Item = &'a T;
    type IntoIter = ::core::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

/// An operand of a twin's method or operator: a twin of dual values or a
/// plain nalgebra matrix (a constant), by value or by reference.
pub trait MatrixOperand<'t, S: Scalar, R: Dim, C: Dim> {
    /// The elements in column-major order and the dimensions.
    #[doc(hidden)]
    fn elems(&self) -> (Elems<'_, 't, S>, R, C);
}

impl<'t, S: Scalar, R: TwinRows<C>, C: Dim> MatrixOperand<'t, S, R, C>
    for MatrixTwin<Real<'t, S>, R, C>
{
    fn elems(&self) -> (Elems<'_, 't, S>, R, C) {
        (Elems::Dual(self.as_slice()), self.nrows, self.ncols)
    }
}

impl<'t, S, R, C, St> MatrixOperand<'t, S, R, C> for Matrix<S::Prim, R, C, St>
where
    S: Scalar,
    S::Prim: ::nalgebra::Scalar,
    R: Dim,
    C: Dim,
    St: RawStorage<S::Prim, R, C>,
{
    fn elems(&self) -> (Elems<'_, 't, S>, R, C) {
        let (nrows, ncols) = self.shape_generic();
        // Copied: plain operands are constants, read once.
        let data = Cow::Owned(self.iter().copied().collect());
        (Elems::Plain(data), nrows, ncols)
    }
}

impl<'t, S: Scalar, R: TwinRows<C>, C: Dim, T: MatrixOperand<'t, S, R, C> + ?Sized>
    MatrixOperand<'t, S, R, C> for &T
{
    fn elems(&self) -> (Elems<'_, 't, S>, R, C) {
        (**self).elems()
    }
}

fn check_same<R: TwinRows<C>, C: Dim>(what: &str, a: (R, C), b: (R, C)) {
    assert!(
        a.0.value() == b.0.value() && a.1.value() == b.1.value(),
        "deltad: {what} of a {}×{} and a {}×{} matrix",
        a.0.value(),
        a.1.value(),
        b.0.value(),
        b.1.value()
    );
}

/// `a ⊙ b` element by element, as a twin shaped like `a`.
fn elementwise<'t, S: Scalar + 't, R: TwinRows<C>, C: Dim>(
    what: &str,
    a: &impl MatrixOperand<'t, S, R, C>,
    b: &impl MatrixOperand<'t, S, R, C>,
    op: impl Fn(Real<'t, S>, Real<'t, S>) -> Real<'t, S>,
) -> MatrixTwin<Real<'t, S>, R, C> {
    let (x, r, c) = a.elems();
    let (y, r2, c2) = b.elems();
    check_same(what, (r, c), (r2, c2));
    MatrixTwin::new(super::zip_with(what, &x, &y, op), r, c)
}

/// The cross product of two 3-vectors (columns or rows), shaped like `a`.
fn cross<'t, S: Scalar + 't, R: TwinRows<C>, C: Dim>(
    a: &impl MatrixOperand<'t, S, R, C>,
    b: &impl MatrixOperand<'t, S, R, C>,
) -> MatrixTwin<Real<'t, S>, R, C> {
    let (x, r, c) = a.elems();
    let (y, r2, c2) = b.elems();
    check_same("cross", (r, c), (r2, c2));
    assert_eq!(
        x.len(),
        3,
        "deltad: cross product of vectors of {} elements",
        x.len()
    );
    let (x, y) = (|i| x.real(i), |i| y.real(i));
    let data = [
        x(1) * y(2) - x(2) * y(1),
        x(2) * y(0) - x(0) * y(2),
        x(0) * y(1) - x(1) * y(0),
    ];
    MatrixTwin::new(data, r, c)
}

/// The matrix product `a b`.
fn product<'t, S: Scalar, R: TwinRows<C2>, C: Dim, C2: Dim>(
    a: &impl MatrixOperand<'t, S, R, C>,
    b: &impl MatrixOperand<'t, S, C, C2>,
) -> MatrixTwin<Real<'t, S>, R, C2> {
    let (x, r, c) = a.elems();
    let (y, r2, c2) = b.elems();
    let data = super::matmul(
        &x,
        Layout::column_major(r.value(), c.value()),
        &y,
        Layout::column_major(r2.value(), c2.value()),
        true,
    );
    MatrixTwin::new(data, r, c2)
}

/// `a` with every element combined with the scalar `k`.
fn with_scalar<'t, S: Scalar + 't, R: TwinRows<C>, C: Dim>(
    a: &impl MatrixOperand<'t, S, R, C>,
    k: Real<'t, S>,
    op: impl Fn(Real<'t, S>, Real<'t, S>) -> Real<'t, S>,
) -> MatrixTwin<Real<'t, S>, R, C> {
    let (x, r, c) = a.elems();
    MatrixTwin::new((0..x.len()).map(|i| op(x.real(i), k)), r, c)
}

/// The methods a differentiated function calls on a twin of dual values.
/// Methods deltad does not know are called through hidden `__deltad_`
/// forwarders (the macro rewrites `v.dot(&w)` to
/// `v.__deltad_dot(tape, w)`), so both spellings are here.
impl<'t, S: Scalar, R: TwinRows<C>, C: Dim> MatrixTwin<Real<'t, S>, R, C> {
    /// The sum of the elements: one binding.
    pub fn sum(&self) -> Real<'t, S> {
        super::sum(&Elems::Dual(self.as_slice()))
    }

    #[doc(hidden)]
    pub fn __deltad_dot<R2: Dim, C2: Dim>(
        &self,
        _tape: &'t Tape<S>,
        other: impl MatrixOperand<'t, S, R2, C2>,
    ) -> Real<'t, S> {
        let (y, _, _) = other.elems();
        super::dot("dot", &Elems::Dual(self.as_slice()), &y)
    }

    #[doc(hidden)]
    pub fn __deltad_norm_squared(&self, _tape: &'t Tape<S>) -> Real<'t, S> {
        super::norm_squared(&Elems::Dual(self.as_slice()))
    }

    #[doc(hidden)]
    pub fn __deltad_magnitude_squared(&self, tape: &'t Tape<S>) -> Real<'t, S> {
        self.__deltad_norm_squared(tape)
    }

    #[doc(hidden)]
    pub fn __deltad_norm(&self, _tape: &'t Tape<S>) -> Real<'t, S> {
        super::norm(&Elems::Dual(self.as_slice()))
    }

    #[doc(hidden)]
    pub fn __deltad_magnitude(&self, tape: &'t Tape<S>) -> Real<'t, S> {
        self.__deltad_norm(tape)
    }

    #[doc(hidden)]
    pub fn __deltad_normalize(&self, tape: &'t Tape<S>) -> Self {
        let norm = self.__deltad_norm(tape);
        with_scalar(self, norm, |x, k| x / k)
    }

    #[doc(hidden)]
    pub fn __deltad_sum(&self, _tape: &'t Tape<S>) -> Real<'t, S> {
        self.sum()
    }

    #[doc(hidden)]
    pub fn __deltad_mean(&self, _tape: &'t Tape<S>) -> Real<'t, S> {
        let n = S::from_prim(<S::Prim as Primitive>::from_f64(self.len() as f64));
        self.sum() / Real::constant(n)
    }

    #[doc(hidden)]
    pub fn __deltad_scale(&self, _tape: &'t Tape<S>, k: Real<'t, S>) -> Self {
        with_scalar(self, k, |x, k| x * k)
    }

    #[doc(hidden)]
    pub fn __deltad_component_mul(
        &self,
        _tape: &'t Tape<S>,
        other: impl MatrixOperand<'t, S, R, C>,
    ) -> Self {
        elementwise("component_mul", self, &other, |x, y| x * y)
    }

    /// The cross product of 3-vectors.
    #[doc(hidden)]
    pub fn __deltad_cross(
        &self,
        _tape: &'t Tape<S>,
        other: impl MatrixOperand<'t, S, R, C>,
    ) -> Self {
        cross(self, &other)
    }

    #[doc(hidden)]
    pub fn __deltad_component_div(
        &self,
        _tape: &'t Tape<S>,
        other: impl MatrixOperand<'t, S, R, C>,
    ) -> Self {
        elementwise("component_div", self, &other, |x, y| x / y)
    }

    #[doc(hidden)]
    pub fn __deltad_transpose(&self, _tape: &'t Tape<S>) -> MatrixTwin<Real<'t, S>, C, R>
    where
        C: TwinRows<R>,
    {
        MatrixTwin::new(
            super::relayout(self.as_slice(), self.layout().transposed(), true),
            self.ncols,
            self.nrows,
        )
    }

    /// `selfᵀ other`.
    #[doc(hidden)]
    pub fn __deltad_tr_mul<C2: Dim>(
        &self,
        tape: &'t Tape<S>,
        other: impl MatrixOperand<'t, S, R, C2>,
    ) -> MatrixTwin<Real<'t, S>, C, C2>
    where
        C: TwinRows<R> + TwinRows<C2>,
    {
        product(&self.__deltad_transpose(tape), &other)
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
    pub fn __deltad_shape(&self, _tape: &'t Tape<S>) -> (usize, usize) {
        self.shape()
    }
}

/// Methods of plain nalgebra matrices (constants) called with a dual
/// argument in a differentiated function (`c.dot(&v)` with `c` constant);
/// the generated code has this trait in scope.
#[doc(hidden)]
pub trait ConstantMatrixMethods<'t, S: Scalar + 't, R: Dim, C: Dim>:
    MatrixOperand<'t, S, R, C> + Sized
{
    fn __deltad_dot<R2: Dim, C2: Dim>(
        &self,
        _tape: &'t Tape<S>,
        other: impl MatrixOperand<'t, S, R2, C2>,
    ) -> Real<'t, S> {
        let (x, _, _) = self.elems();
        let (y, _, _) = other.elems();
        super::dot("dot", &x, &y)
    }

    fn __deltad_component_mul(
        &self,
        _tape: &'t Tape<S>,
        other: impl MatrixOperand<'t, S, R, C>,
    ) -> MatrixTwin<Real<'t, S>, R, C>
    where
        R: TwinRows<C>,
    {
        elementwise("component_mul", self, &other, |x, y| x * y)
    }

    fn __deltad_cross(
        &self,
        _tape: &'t Tape<S>,
        other: impl MatrixOperand<'t, S, R, C>,
    ) -> MatrixTwin<Real<'t, S>, R, C>
    where
        R: TwinRows<C>,
    {
        cross(self, &other)
    }

    fn __deltad_component_div(
        &self,
        _tape: &'t Tape<S>,
        other: impl MatrixOperand<'t, S, R, C>,
    ) -> MatrixTwin<Real<'t, S>, R, C>
    where
        R: TwinRows<C>,
    {
        elementwise("component_div", self, &other, |x, y| x / y)
    }

    fn __deltad_scale(&self, _tape: &'t Tape<S>, k: Real<'t, S>) -> MatrixTwin<Real<'t, S>, R, C>
    where
        R: TwinRows<C>,
    {
        with_scalar(self, k, |x, k| x * k)
    }

    fn __deltad_tr_mul<C2: Dim>(
        &self,
        _tape: &'t Tape<S>,
        other: impl MatrixOperand<'t, S, R, C2>,
    ) -> MatrixTwin<Real<'t, S>, C, C2>
    where
        C: TwinRows<C2>,
    {
        let (x, r, c) = self.elems();
        let (y, r2, c2) = other.elems();
        let data = super::matmul(
            &x,
            Layout::column_major(r.value(), c.value()).transposed(),
            &y,
            Layout::column_major(r2.value(), c2.value()),
            true,
        );
        MatrixTwin::new(data, c, c2)
    }
}

impl<'t, S, R, C, St> ConstantMatrixMethods<'t, S, R, C> for Matrix<S::Prim, R, C, St>
where
    S: Scalar + 't,
    S::Prim: ::nalgebra::Scalar,
    R: Dim,
    C: Dim,
    St: RawStorage<S::Prim, R, C>,
{
}

// Operators. The operand kinds: a twin of dual values (by value or
// reference) with a twin or a plain matrix, and a plain matrix with a twin.

macro_rules! binary_operators {
    ($trait:ident $method:ident: $($lhs:ty, $rhs:ty, [$($gen:tt)*];)*) => {$(
        impl<'t, S: Scalar, R: TwinRows<C>, C: Dim, $($gen)*> $trait<$rhs> for $lhs
        where
            S::Prim: ::nalgebra::Scalar,
        {
            type Output = MatrixTwin<Real<'t, S>, R, C>;
            fn $method(self, rhs: $rhs) -> Self::Output {
                elementwise(stringify!($method), &self, &rhs, |x, y| x.$method(y))
            }
        }
    )*};
}

macro_rules! elementwise_operators {
    ($($trait:ident $method:ident;)*) => {$(
        binary_operators! {
            $trait $method:
            MatrixTwin<Real<'t, S>, R, C>, MatrixTwin<Real<'t, S>, R, C>, [];
            MatrixTwin<Real<'t, S>, R, C>, &MatrixTwin<Real<'t, S>, R, C>, [];
            &MatrixTwin<Real<'t, S>, R, C>, MatrixTwin<Real<'t, S>, R, C>, [];
            &MatrixTwin<Real<'t, S>, R, C>, &MatrixTwin<Real<'t, S>, R, C>, [];
            MatrixTwin<Real<'t, S>, R, C>, Matrix<S::Prim, R, C, St>, [St: RawStorage<S::Prim, R, C>];
            MatrixTwin<Real<'t, S>, R, C>, &Matrix<S::Prim, R, C, St>, [St: RawStorage<S::Prim, R, C>];
            &MatrixTwin<Real<'t, S>, R, C>, Matrix<S::Prim, R, C, St>, [St: RawStorage<S::Prim, R, C>];
            &MatrixTwin<Real<'t, S>, R, C>, &Matrix<S::Prim, R, C, St>, [St: RawStorage<S::Prim, R, C>];
            Matrix<S::Prim, R, C, St>, MatrixTwin<Real<'t, S>, R, C>, [St: RawStorage<S::Prim, R, C>];
            Matrix<S::Prim, R, C, St>, &MatrixTwin<Real<'t, S>, R, C>, [St: RawStorage<S::Prim, R, C>];
            &Matrix<S::Prim, R, C, St>, MatrixTwin<Real<'t, S>, R, C>, [St: RawStorage<S::Prim, R, C>];
            &Matrix<S::Prim, R, C, St>, &MatrixTwin<Real<'t, S>, R, C>, [St: RawStorage<S::Prim, R, C>];
        }
    )*};
}
elementwise_operators! {
    Add add;
    Sub sub;
}

macro_rules! product_operators {
    ($($lhs:ty, $rhs:ty, [$($gen:tt)*];)*) => {$(
        impl<'t, S: Scalar, R: TwinRows<C> + TwinRows<C2>, C: TwinRows<C2>, C2: Dim, $($gen)*> Mul<$rhs> for $lhs
        where
            S::Prim: ::nalgebra::Scalar,
        {
            type Output = MatrixTwin<Real<'t, S>, R, C2>;
            fn mul(self, rhs: $rhs) -> Self::Output {
                product(&self, &rhs)
            }
        }
    )*};
}
product_operators! {
    MatrixTwin<Real<'t, S>, R, C>, MatrixTwin<Real<'t, S>, C, C2>, [];
    MatrixTwin<Real<'t, S>, R, C>, &MatrixTwin<Real<'t, S>, C, C2>, [];
    &MatrixTwin<Real<'t, S>, R, C>, MatrixTwin<Real<'t, S>, C, C2>, [];
    &MatrixTwin<Real<'t, S>, R, C>, &MatrixTwin<Real<'t, S>, C, C2>, [];
    MatrixTwin<Real<'t, S>, R, C>, Matrix<S::Prim, C, C2, St>, [St: RawStorage<S::Prim, C, C2>];
    MatrixTwin<Real<'t, S>, R, C>, &Matrix<S::Prim, C, C2, St>, [St: RawStorage<S::Prim, C, C2>];
    &MatrixTwin<Real<'t, S>, R, C>, Matrix<S::Prim, C, C2, St>, [St: RawStorage<S::Prim, C, C2>];
    &MatrixTwin<Real<'t, S>, R, C>, &Matrix<S::Prim, C, C2, St>, [St: RawStorage<S::Prim, C, C2>];
    Matrix<S::Prim, R, C, St>, MatrixTwin<Real<'t, S>, C, C2>, [St: RawStorage<S::Prim, R, C>];
    Matrix<S::Prim, R, C, St>, &MatrixTwin<Real<'t, S>, C, C2>, [St: RawStorage<S::Prim, R, C>];
    &Matrix<S::Prim, R, C, St>, MatrixTwin<Real<'t, S>, C, C2>, [St: RawStorage<S::Prim, R, C>];
    &Matrix<S::Prim, R, C, St>, &MatrixTwin<Real<'t, S>, C, C2>, [St: RawStorage<S::Prim, R, C>];
}

macro_rules! scalar_operators {
    ($($trait:ident $method:ident;)*) => {$(
        impl<'t, S: Scalar, R: TwinRows<C>, C: Dim> $trait<Real<'t, S>> for MatrixTwin<Real<'t, S>, R, C> {
            type Output = MatrixTwin<Real<'t, S>, R, C>;
            fn $method(self, k: Real<'t, S>) -> Self::Output {
                with_scalar(&self, k, |x, k| x.$method(k))
            }
        }
        impl<'t, S: Scalar, R: TwinRows<C>, C: Dim> $trait<Real<'t, S>> for &MatrixTwin<Real<'t, S>, R, C> {
            type Output = MatrixTwin<Real<'t, S>, R, C>;
            fn $method(self, k: Real<'t, S>) -> Self::Output {
                with_scalar(self, k, |x, k| x.$method(k))
            }
        }
        impl<'t, S: Scalar, R: TwinRows<C>, C: Dim> $trait<&Real<'t, S>> for MatrixTwin<Real<'t, S>, R, C> {
            type Output = MatrixTwin<Real<'t, S>, R, C>;
            fn $method(self, k: &Real<'t, S>) -> Self::Output {
                with_scalar(&self, *k, |x, k| x.$method(k))
            }
        }
        impl<'t, S: Scalar, R: TwinRows<C>, C: Dim> $trait<&Real<'t, S>> for &MatrixTwin<Real<'t, S>, R, C> {
            type Output = MatrixTwin<Real<'t, S>, R, C>;
            fn $method(self, k: &Real<'t, S>) -> Self::Output {
                with_scalar(self, *k, |x, k| x.$method(k))
            }
        }
    )*};
}
scalar_operators! {
    Mul mul;
    Div div;
}

macro_rules! float_operators {
    ($($p:ident)*) => {$(
        impl<'t, S: Scalar<Prim = $p>, R: TwinRows<C>, C: Dim> Mul<$p> for MatrixTwin<Real<'t, S>, R, C> {
            type Output = MatrixTwin<Real<'t, S>, R, C>;
            fn mul(self, k: $p) -> Self::Output {
                with_scalar(&self, Real::from_prim(k), |x, k| x * k)
            }
        }
        impl<'t, S: Scalar<Prim = $p>, R: TwinRows<C>, C: Dim> Mul<$p> for &MatrixTwin<Real<'t, S>, R, C> {
            type Output = MatrixTwin<Real<'t, S>, R, C>;
            fn mul(self, k: $p) -> Self::Output {
                with_scalar(self, Real::from_prim(k), |x, k| x * k)
            }
        }
        impl<'t, S: Scalar<Prim = $p>, R: TwinRows<C>, C: Dim> Div<$p> for MatrixTwin<Real<'t, S>, R, C> {
            type Output = MatrixTwin<Real<'t, S>, R, C>;
            fn div(self, k: $p) -> Self::Output {
                with_scalar(&self, Real::from_prim(k), |x, k| x / k)
            }
        }
        impl<'t, S: Scalar<Prim = $p>, R: TwinRows<C>, C: Dim> Div<$p> for &MatrixTwin<Real<'t, S>, R, C> {
            type Output = MatrixTwin<Real<'t, S>, R, C>;
            fn div(self, k: $p) -> Self::Output {
                with_scalar(self, Real::from_prim(k), |x, k| x / k)
            }
        }
        impl<'t, S: Scalar<Prim = $p>, R: TwinRows<C>, C: Dim> Mul<MatrixTwin<Real<'t, S>, R, C>> for $p {
            type Output = MatrixTwin<Real<'t, S>, R, C>;
            fn mul(self, a: MatrixTwin<Real<'t, S>, R, C>) -> Self::Output {
                with_scalar(&a, Real::from_prim(self), |x, k| k * x)
            }
        }
        impl<'t, S: Scalar<Prim = $p>, R: TwinRows<C>, C: Dim> Mul<&MatrixTwin<Real<'t, S>, R, C>> for $p {
            type Output = MatrixTwin<Real<'t, S>, R, C>;
            fn mul(self, a: &MatrixTwin<Real<'t, S>, R, C>) -> Self::Output {
                with_scalar(a, Real::from_prim(self), |x, k| k * x)
            }
        }
        impl<'t, S: Scalar<Prim = $p>, R: TwinRows<C>, C: Dim> MulAssign<$p> for MatrixTwin<Real<'t, S>, R, C> {
            fn mul_assign(&mut self, k: $p) {
                *self = with_scalar(&*self, Real::from_prim(k), |x, k| x * k);
            }
        }
    )*};
}
float_operators!(f64 f32);

impl<'t, S: Scalar, R: TwinRows<C>, C: Dim> Mul<MatrixTwin<Real<'t, S>, R, C>> for Real<'t, S> {
    type Output = MatrixTwin<Real<'t, S>, R, C>;
    fn mul(self, a: MatrixTwin<Real<'t, S>, R, C>) -> Self::Output {
        with_scalar(&a, self, |x, k| k * x)
    }
}

impl<'t, S: Scalar, R: TwinRows<C>, C: Dim> Mul<&MatrixTwin<Real<'t, S>, R, C>> for Real<'t, S> {
    type Output = MatrixTwin<Real<'t, S>, R, C>;
    fn mul(self, a: &MatrixTwin<Real<'t, S>, R, C>) -> Self::Output {
        with_scalar(a, self, |x, k| k * x)
    }
}

impl<'t, S: Scalar, R: TwinRows<C>, C: Dim> MulAssign<Real<'t, S>>
    for MatrixTwin<Real<'t, S>, R, C>
{
    fn mul_assign(&mut self, k: Real<'t, S>) {
        *self = with_scalar(&*self, k, |x, k| x * k);
    }
}

impl<'t, S: Scalar, R: TwinRows<C>, C: Dim> Neg for MatrixTwin<Real<'t, S>, R, C> {
    type Output = Self;
    fn neg(self) -> Self {
        self.map(|x| -x)
    }
}

impl<'t, S: Scalar, R: TwinRows<C>, C: Dim> Neg for &MatrixTwin<Real<'t, S>, R, C> {
    type Output = MatrixTwin<Real<'t, S>, R, C>;
    fn neg(self) -> Self::Output {
        self.map(|x| -x)
    }
}

impl<'t, S: Scalar, R: TwinRows<C>, C: Dim, O: MatrixOperand<'t, S, R, C>> AddAssign<O>
    for MatrixTwin<Real<'t, S>, R, C>
{
    fn add_assign(&mut self, rhs: O) {
        *self = elementwise("add_assign", &*self, &rhs, |x, y| x + y);
    }
}

impl<'t, S: Scalar, R: TwinRows<C>, C: Dim, O: MatrixOperand<'t, S, R, C>> SubAssign<O>
    for MatrixTwin<Real<'t, S>, R, C>
{
    fn sub_assign(&mut self, rhs: O) {
        *self = elementwise("sub_assign", &*self, &rhs, |x, y| x - y);
    }
}

// The `Differentiable` impls: leaves in column-major order.

fn adjoint_of<S: Scalar>(real: &Real<'_, S>, adjoints: &[S]) -> S {
    match real.id() {
        Some(id) => adjoints[id.index()],
        None => S::zero(),
    }
}

macro_rules! differentiable_matrix {
    ($($ty:ty, $r:ty, $c:ty, [$($gen:tt)*], |$data:ident, $nrows:ident, $ncols:ident| $build:expr;)*) => {$(
        /// Compiled callers hold one as its twin (as a user type's).
        impl<P, $($gen)*> crate::compiled::HeldAs for $ty {
            type Form = crate::compiled::AsTwin;
        }

        impl<P: Primitive + ::nalgebra::Scalar, $($gen)*> Differentiable<P> for $ty {
            type Twin<T> = MatrixTwin<T, $r, $c>;

            fn input<'t, S: Scalar<Prim = P>>(&self, tape: &'t Tape<S>) -> Self::Twin<Real<'t, S>> {
                self.build(&mut |x| Real::input(tape, S::from_prim(x)))
            }
            fn build<T>(&self, leaf: &mut impl FnMut(P) -> T) -> Self::Twin<T> {
                let (nrows, ncols) = self.shape_generic();
                MatrixTwin::new(self.iter().map(|x| leaf(*x)), nrows, ncols)
            }
            fn map_twin<In, Out>(
                twin: &Self::Twin<In>,
                leaf: &mut impl FnMut(&In) -> Out,
            ) -> Self::Twin<Out> {
                twin.map_ref(leaf)
            }
            fn primal<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>) -> Self::Twin<P> {
                dual.map_ref(Real::to_prim)
            }
            fn flatten_twin<T: Copy>(twin: &Self::Twin<T>, out: &mut Vec<T>) {
                out.extend_from_slice(twin.as_slice());
            }
            fn constant<'t, S: Scalar<Prim = P> + 't>(&self) -> Self::Twin<Real<'t, S>> {
                self.build(&mut Real::from_prim)
            }
            fn value<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>) -> Self::Twin<S> {
                dual.map_ref(Real::value)
            }
            fn adjoint<S: Scalar<Prim = P>>(
                dual: &Self::Twin<Real<'_, S>>,
                adjoints: &[S],
            ) -> Self::Twin<S> {
                dual.map_ref(|x| adjoint_of(x, adjoints))
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
                for (d, s) in dual.as_slice().iter().zip(seed.as_slice()) {
                    if let Some(id) = d.id() {
                        adjoints[id.index()] += *s;
                    }
                }
            }
            fn leaves<S: Scalar<Prim = P>>(
                dual: &Self::Twin<Real<'_, S>>,
                out: &mut Vec<Option<DeltaId>>,
            ) {
                out.extend(dual.as_slice().iter().map(Real::id));
            }
            fn filled<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>, fill: S) -> Self::Twin<S> {
                dual.map_ref(|_| fill)
            }
            fn set_leaf<S: Scalar<Prim = P>>(
                twin: &mut Self::Twin<S>,
                index: &mut usize,
                value: S,
            ) -> bool {
                if *index < twin.len() {
                    twin.as_mut_slice()[*index] = value;
                    true
                } else {
                    *index -= twin.len();
                    false
                }
            }
            fn gather<S: Scalar<Prim = P>>(&self, reader: &mut GradReader<'_, S>) -> Self::Twin<S> {
                self.build(&mut |_| reader.scalar())
            }
            fn from_twin(twin: Self::Twin<P>) -> Self {
                let MatrixTwin { data: $data, nrows: $nrows, ncols: $ncols } = twin;
                $build
            }
            fn to_twin(&self) -> Self::Twin<P> {
                self.build(&mut |x| x)
            }
            fn same_shape(&self, other: &Self) -> bool {
                self.shape() == other.shape()
            }
        }

        impl<'t, S: Scalar<Prim = P>, P: Primitive + ::nalgebra::Scalar, $($gen)*> IntoDual<'t, S, P, $ty> for $ty {
            fn into_dual(self) -> MatrixTwin<Real<'t, S>, $r, $c> {
                self.build(&mut Real::from_prim)
            }
        }

        impl<'t, S: Scalar<Prim = P>, P: Primitive + ::nalgebra::Scalar, $($gen)*> IntoDual<'t, S, P, $ty>
            for MatrixTwin<Real<'t, S>, $r, $c>
        {
            fn into_dual(self) -> MatrixTwin<Real<'t, S>, $r, $c> {
                self
            }
        }

        impl<'t, S: Scalar<Prim = P> + 't, P: Primitive + ::nalgebra::Scalar, $($gen)*> Lift<'t, S> for $ty {
            type Output = MatrixTwin<Real<'t, S>, $r, $c>;
            fn lift(self) -> Self::Output {
                self.build(&mut Real::from_prim)
            }
        }

        impl<'t, S: Scalar<Prim = P> + 't, P: Primitive + ::nalgebra::Scalar, $($gen)*> Lift<'t, S> for &$ty {
            type Output = MatrixTwin<Real<'t, S>, $r, $c>;
            fn lift(self) -> Self::Output {
                self.build(&mut Real::from_prim)
            }
        }
    )*};
}

differentiable_matrix! {
    DVector<P>, Dyn, U1, [], |data, _nrows, _ncols| DVector::from_vec(data);
    DMatrix<P>, Dyn, Dyn, [], |data, nrows, ncols| DMatrix::from_vec(nrows.value(), ncols.value(), data);
    SMatrix<P, R, C>, Const<R>, Const<C>, [const R: usize, const C: usize], |data, _nrows, _ncols| SMatrix::from_column_slice(data.as_ref());
}

impl<'t, S: Scalar, R: TwinRows<C>, C: Dim> Lift<'t, S> for MatrixTwin<Real<'t, S>, R, C> {
    type Output = Self;
    fn lift(self) -> Self {
        self
    }
}

impl<'t, S: Scalar, R: TwinRows<C>, C: Dim> Lift<'t, S> for &MatrixTwin<Real<'t, S>, R, C>
where
    MatrixTwin<Real<'t, S>, R, C>: Clone,
{
    type Output = MatrixTwin<Real<'t, S>, R, C>;
    fn lift(self) -> Self::Output {
        self.clone()
    }
}
