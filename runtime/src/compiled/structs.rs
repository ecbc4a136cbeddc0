//! Values of user types (`#[derive(Differentiable)]` structs, tuples) in
//! compiled passes.
//!
//! A compiled pass holds such a value as its twin (see
//! [`Differentiable`]) whose real leaves are [`Active`]`<S>`: the macro does
//! not know the type's fields, so it reads a field the user code reads
//! (`p.mass`) and lets the field's type decide. A differentiated field is
//! an `Active<S>`; a `#[no_grad]` real field stays a machine float; a
//! discrete field stays what it is. [`RealLeaf`] reads either kind of real
//! field as a scalar of the pass and adds adjoints to the first kind only.
//! The wrapper `Active` keeps a differentiated leaf a type of its own even
//! where `S` is the machine float, so it never passes for a constant one,
//! and a differentiated field used as plain data is a type error, never a
//! derivative lost.
//!
//! The adjoint of a parameter of such a type is a twin of the same shape
//! (zeros where the value has reals, the value's own discrete data
//! elsewhere), reached through a [`TwinSink`].

use std::fmt;
use std::ops::Deref;

use super::cotangent::Cotangent;
use super::params::{Discard, PassActive, PassConstant, PassOwned};
use crate::differentiable::Differentiable;
use crate::forward::TangentSeeds;
use crate::real::Real;
use crate::scalar::{Primitive, Scalar};
use crate::tape::Tape;

/// A differentiated real leaf of a user type's twin in a compiled pass.
#[repr(transparent)]
#[derive(Clone, Copy, Default)]
pub struct Active<S>(pub S);

impl<S: PartialEq> PartialEq for Active<S> {
    #[inline(always)]
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl<S: PartialOrd> PartialOrd for Active<S> {
    #[inline(always)]
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        self.0.partial_cmp(&other.0)
    }
}

impl<S: fmt::Debug> fmt::Debug for Active<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<S: fmt::Display> fmt::Display for Active<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The twin of `T` in a compiled pass on scalars `S`.
pub type TwinOf<T, S> = <T as Differentiable<<S as Scalar>::Prim>>::Twin<Active<S>>;

/// A real field of a user type's twin, read as a scalar of the pass: a
/// differentiated leaf ([`Active`]) or a `#[no_grad]` machine float (a
/// constant, whose adjoint goes nowhere).
#[diagnostic::on_unimplemented(
    message = "deltad expected a real here, found `{Self}`",
    label = "this field is not a real",
    note = "mark the function #[differentiate(tape)] and report the case"
)]
pub trait RealLeaf<S> {
    /// The leaf's value as a scalar of the pass.
    fn scalar(&self) -> S;
    /// Adds `adjoint` to the leaf (an adjoint twin's leaf).
    fn accumulate(&mut self, adjoint: S);
    /// The adjoint the leaf holds (an adjoint twin's leaf; 0 for a
    /// constant one, whose value is not an adjoint).
    fn adjoint(&self) -> S;
}

/// A differentiated real field of a twin, given a value of the pass (a
/// field of a local built by a literal). A `#[no_grad]` field cannot take a
/// differentiated value: that would drop its derivative unseen.
#[diagnostic::on_unimplemented(
    message = "a differentiated value goes into a field without derivatives",
    label = "this field is `#[no_grad]` or not a real, and its value depends on a differentiated input",
    note = "give the field a constant, or remove `#[no_grad]` from it"
)]
pub trait SetLeaf {
    /// The scalar of the pass.
    type Scalar;
    /// Gives the leaf the value `value`.
    fn set(&mut self, value: Self::Scalar);
}

impl<S: Scalar> SetLeaf for Active<S> {
    type Scalar = S;
    #[inline(always)]
    fn set(&mut self, value: S) {
        self.0 = value;
    }
}

/// A leaf of a twin made from a value without derivatives: a
/// differentiated leaf gets the real lifted, any other (a `#[no_grad]` real,
/// plain data) the value itself (the field's type decides which).
pub trait FromConstant<V> {
    /// The leaf holding `value`.
    fn from_constant(value: V) -> Self;
}

impl<T> FromConstant<T> for T {
    #[inline(always)]
    fn from_constant(value: T) -> T {
        value
    }
}

macro_rules! active_from {
    ($($p:ident)*) => {$(
        impl<S: Scalar<Prim = $p>> FromConstant<$p> for Active<S> {
            #[inline(always)]
            fn from_constant(value: $p) -> Self {
                Active(S::from_prim(value))
            }
        }
    )*};
}
active_from!(f64 f32);

/// The leaf of a twin field holding the constant `value` (its type decides
/// whether the constant is lifted).
#[inline(always)]
pub fn leaf_constant<P, L: FromConstant<P>>(value: P) -> L {
    L::from_constant(value)
}

impl<S: Scalar> RealLeaf<S> for Active<S> {
    #[inline(always)]
    fn scalar(&self) -> S {
        self.0
    }
    #[inline(always)]
    fn accumulate(&mut self, adjoint: S) {
        self.0 += adjoint;
    }
    #[inline(always)]
    fn adjoint(&self) -> S {
        self.0
    }
}

macro_rules! constant_leaf {
    ($($p:ident)*) => {$(
        impl<S: Scalar<Prim = $p>> RealLeaf<S> for $p {
            #[inline(always)]
            fn scalar(&self) -> S {
                S::from_prim(*self)
            }
            #[inline(always)]
            fn accumulate(&mut self, _adjoint: S) {}
            #[inline(always)]
            fn adjoint(&self) -> S {
                S::zero()
            }
        }
    )*};
}
constant_leaf!(f64 f32);

/// The twin of `value` with its reals as scalars of the pass.
#[inline]
pub fn twin_values<S: Scalar, T: Differentiable<S::Prim>>(value: &T) -> TwinOf<T, S> {
    value.build(&mut |x| Active(S::from_prim(x)))
}

/// The twin of `value` with every real 0 (an adjoint to add into).
#[inline]
pub fn twin_zeros<S: Scalar, T: Differentiable<S::Prim>>(value: &T) -> TwinOf<T, S> {
    value.build(&mut |_| Active(S::zero()))
}

/// The twin of `value` on dual numbers whose tangents come from `seeds`
/// (in leaf order).
#[inline]
pub fn twin_duals<P: Primitive, T: Differentiable<P>, K: TangentSeeds<P>>(
    value: &T,
    seeds: &mut K,
) -> TwinOf<T, K::Dual>
where
    K::Dual: Scalar<Prim = P>,
{
    value.build(&mut |x| Active(seeds.seed(x)))
}

/// `value` with every real 0: a `Grad` field before the adjoint's run sets
/// it (made in one sweep, not through a twin).
#[inline]
pub fn zeros_like<P: Primitive, T: Differentiable<P>>(value: &T) -> T {
    T::from_twin(value.build(&mut |_| P::ZERO))
}

/// The value in the user's type whose reals are the adjoint twin's, by
/// value: buffers move into it (no copy) where their elements are laid out
/// as their twins.
#[inline]
pub fn twin_gradient_owned<P, T>(adjoint: TwinOf<T, P>) -> T
where
    P: Primitive + Scalar<Prim = P>,
    T: Differentiable<P>,
{
    T::from_active_twin(adjoint)
}

/// The value in the user's type whose reals are `part` of the adjoint
/// twin's leaves (the value itself, a dual number's value or tangent); its
/// discrete data are the twin's.
#[inline]
pub fn twin_gradient<S: Scalar, T: Differentiable<S::Prim>>(
    adjoint: &TwinOf<T, S>,
    mut part: impl FnMut(S) -> S::Prim,
) -> T {
    T::from_twin(T::map_twin(adjoint, &mut |leaf: &Active<S>| part(leaf.0)))
}

/// A field of a result that copies a parameter's field of a type the macro
/// cannot see: `(&mut LeafCopy(&mut parameter_adjoint.f, &result_adjoint.g))
/// .add_adjoint()` adds the result's adjoint into the parameter's where
/// the field is a differentiated real ([`CopyActive`]), and does nothing
/// for any other field ([`CopyPlain`]): method resolution picks the first
/// for `Active` leaves, by autoref the second for the others.
pub struct LeafCopy<'a, L>(pub &'a mut L, pub &'a L);

/// The adjoint of a copied differentiated real: added.
pub trait CopyActive {
    /// Adds the result's adjoint into the parameter's.
    fn add_adjoint(&mut self);
}

impl<S: Scalar> CopyActive for LeafCopy<'_, Active<S>> {
    #[inline(always)]
    fn add_adjoint(&mut self) {
        self.0 .0 += self.1 .0;
    }
}

/// The adjoint of a copied plain field: none.
pub trait CopyPlain {
    /// Does nothing.
    fn add_adjoint(&mut self);
}

impl<L> CopyPlain for &mut LeafCopy<'_, L> {
    #[inline(always)]
    fn add_adjoint(&mut self) {}
}

/// A field of a user type's twin read where it is not differentiated (a
/// value nothing derives from): `(&PlainRead(&twin.f)).plain()` gives a
/// differentiated real leaf's machine value ([`ReadActive`]) and a copy of
/// any other field ([`ReadPlain`]), method resolution picking the first for
/// `Active` leaves and, by autoref, the second for the others.
pub struct PlainRead<'a, L>(pub &'a L);

/// The machine value of a differentiated real leaf.
pub trait ReadActive {
    /// The machine float.
    type Value;
    /// Reads it.
    fn plain(&self) -> Self::Value;
}

impl<S: Scalar> ReadActive for PlainRead<'_, Active<S>> {
    type Value = S::Prim;
    #[inline(always)]
    fn plain(&self) -> S::Prim {
        self.0 .0.to_prim()
    }
}

/// A copy of any other field.
pub trait ReadPlain {
    /// The field's type.
    type Value;
    /// Copies it.
    fn plain(&self) -> Self::Value;
}

impl<L: Clone> ReadPlain for &PlainRead<'_, L> {
    type Value = L;
    #[inline(always)]
    fn plain(&self) -> L {
        self.0.clone()
    }
}

/// The twin of `value` on the pass's scalars, its differentiated reals
/// lifted (a local built by a literal and passed whole: its differentiated
/// fields are set on the twin next).
#[inline]
pub fn twin_of_value<S: Scalar, T: Differentiable<S::Prim>>(value: &T) -> TwinOf<T, S> {
    value.build(&mut |leaf| Active(S::from_prim(leaf)))
}

/// The value in the user's type of a twin of the pass (a result).
#[inline]
pub fn twin_value<S: Scalar, T: Differentiable<S::Prim>>(twin: &TwinOf<T, S>) -> T {
    twin_gradient(twin, |x: S| x.to_prim())
}

/// A twin shaped like `like` whose real leaf number `unit` (in leaf order)
/// is 1 and the others 0: the seed of a Jacobian's row (the one-lane
/// `twin_lane_seed`).
pub fn twin_unit<S: Scalar, T: Differentiable<S::Prim>>(
    like: &TwinOf<T, S>,
    unit: usize,
) -> TwinOf<T, S> {
    twin_lane_seed::<S, S, T>(like, unit)
}

/// The seeds of the reals `first..` of a result of a user type, one per
/// lane of the adjoints `A` (see `lane_seed`), shaped like `like`.
pub fn twin_lane_seed<S: Scalar, A: Cotangent<S>, T: Differentiable<S::Prim>>(
    like: &TwinOf<T, S>,
    first: usize,
) -> TwinOf<T, A> {
    let mut index: usize = 0;
    T::map_twin(like, &mut |_: &Active<S>| {
        let leaf = match index.checked_sub(first) {
            Some(lane) if lane < A::LANES => A::from_lane(lane, S::one()),
            _ => A::zero(),
        };
        index += 1;
        Active(leaf)
    })
}

/// How many real leaves a twin has.
pub fn twin_leaf_count<S: Scalar, T: Differentiable<S::Prim>>(twin: &TwinOf<T, S>) -> usize {
    let mut count = 0;
    let _ = T::map_twin(twin, &mut |_: &Active<S>| count += 1);
    count
}

/// The twin of dual values a compiled function's result takes on a tape:
/// its real leaves `outputs` (in leaf order), its discrete data `value`'s.
pub fn twin_of_outputs<'t, S: Scalar, T: Differentiable<S::Prim>>(
    value: &TwinOf<T, S>,
    outputs: &[Real<'t, S>],
) -> T::Twin<Real<'t, S>> {
    let mut next = outputs.iter();
    T::map_twin(value, &mut |_: &Active<S>| {
        *next
            .next()
            .expect("deltad: as many outputs as the result has reals")
    })
}

/// Seeds the reals of a recorded result with the adjoint twin `out` in a
/// fresh adjoint array and sweeps the tape (the compiled passes of a
/// function on the tape).
pub fn seed_recorded_and_sweep<'t, S: Scalar + 't, T: Differentiable<S::Prim>>(
    tape: &'t Tape<S>,
    dual: &T::Twin<Real<'t, S>>,
    out: &TwinOf<T, S>,
    adjoints: &mut Vec<S>,
) {
    adjoints.clear();
    adjoints.resize(tape.len(), S::zero());
    T::seed(
        dual,
        &T::map_twin(out, &mut |leaf: &Active<S>| leaf.0),
        adjoints,
    );
    tape.reverse_sweep(adjoints);
}

/// Adds the reals of the adjoint twin to those of `grad` (`grad_into`).
pub fn add_twin_gradient<S: Scalar, T: Differentiable<S::Prim>>(
    grad: &mut T,
    adjoint: &TwinOf<T, S>,
) {
    // The leaves in a buffer from the per-thread pool: `grad_into` of a
    // buffer of a type not laid out as its twin runs this per element.
    let mut adds: Vec<S::Prim> = crate::pool::pooled_vec();
    T::flatten_twin(
        &T::map_twin(adjoint, &mut |leaf: &Active<S>| leaf.0.to_prim()),
        &mut adds,
    );
    let mut leaves = adds.iter();
    let sum = grad.build(&mut |x| x + leaves.next().copied().unwrap_or(S::Prim::ZERO));
    *grad = T::from_twin(sum);
    crate::pool::give_back_vec(adds);
}

/// The twin in a compiled pass of a value recorded on a tape (the values
/// of its dual reals), for a compiled function called from the tape.
#[inline]
pub fn twin_of_recorded<S: Scalar, T: Differentiable<S::Prim>>(
    dual: &T::Twin<Real<'_, S>>,
) -> TwinOf<T, S> {
    T::map_twin(dual, &mut |real: &Real<'_, S>| Active(real.value()))
}

/// The dual twin of a compiled pass's twin on a tape: every real a fresh
/// input (in leaf order), or a constant (`inputs` false).
pub fn twin_on_tape<'t, S: Scalar, T: Differentiable<S::Prim>>(
    tape: &'t Tape<S>,
    twin: &TwinOf<T, S>,
    inputs: bool,
) -> T::Twin<Real<'t, S>> {
    T::map_twin(twin, &mut |leaf: &Active<S>| {
        if inputs {
            Real::input(tape, leaf.0)
        } else {
            Real::constant(leaf.0)
        }
    })
}

/// Reads the adjoints of the inputs `twin_on_tape` made for `twin` (in leaf
/// order) and adds them into the sink (a twin of adjoints `A`, in the
/// reader's lane): the reader moves on whether or not the sink keeps them.
pub fn read_twin_adjoint<S: Scalar, A: Cotangent<S>, T: Differentiable<S::Prim>>(
    twin: &TwinOf<T, S>,
    reader: &mut crate::wrapper::GradReader<'_, S>,
    sink: &mut impl TwinSink<TwinOf<T, A>>,
) {
    let mut adjoints = Vec::new();
    let _ = T::map_twin(twin, &mut |_: &Active<S>| {
        adjoints.push(reader.cotangent::<A>())
    });
    sink.with(|into| {
        let mut next = adjoints.into_iter();
        *into = T::map_twin(into, &mut |leaf: &Active<A>| {
            Active(leaf.0 + next.next().unwrap_or_else(A::zero))
        });
    });
}

/// A twin shaped like `twin` with every real 0.
#[inline]
pub fn twin_zeros_like<S: Scalar, A: Cotangent<S>, T: Differentiable<S::Prim>>(
    twin: &TwinOf<T, S>,
) -> TwinOf<T, A> {
    T::map_twin(twin, &mut |_: &Active<S>| Active(A::zero()))
}

/// The values of a twin's reals, in leaf order (the bridge's partials).
pub fn twin_leaves<S: Scalar, T: Differentiable<S::Prim>>(twin: &TwinOf<T, S>, out: &mut Vec<S>) {
    T::flatten_twin(&T::map_twin(twin, &mut |leaf: &Active<S>| leaf.0), out);
}

/// Where the adjoint of a parameter of a user type goes: the adjoint twin
/// the caller owns, or nowhere ([`Discard`]).
pub trait TwinSink<T> {
    /// Runs `f` on the adjoint twin, if there is one.
    fn with(&mut self, f: impl FnOnce(&mut T));
}

impl<T> TwinSink<T> for &mut T {
    #[inline(always)]
    fn with(&mut self, f: impl FnOnce(&mut T)) {
        f(self)
    }
}

/// Where the adjoints of a buffer of values of a user type go (`&[Pt]`):
/// element by element.
pub trait TwinsSink<T> {
    /// Runs `f` on the adjoint twin of element `index`, if there is one.
    fn with_at(&mut self, index: usize, f: impl FnOnce(&mut T));
}

impl<T> TwinsSink<T> for &mut [T] {
    #[inline(always)]
    fn with_at(&mut self, index: usize, f: impl FnOnce(&mut T)) {
        f(&mut self[index])
    }
}

impl<S, T> TwinsSink<T> for Discard<S> {
    #[inline(always)]
    fn with_at(&mut self, _index: usize, _f: impl FnOnce(&mut T)) {}
}

/// The sink of one element of a buffer of values of a user type (an
/// element passed to a callee).
pub struct SinkAt<'a, K>(pub &'a mut K, pub usize);

impl<T, K: TwinsSink<T>> TwinSink<T> for SinkAt<'_, K> {
    #[inline(always)]
    fn with(&mut self, f: impl FnOnce(&mut T)) {
        self.0.with_at(self.1, f)
    }
}

/// The twins of a buffer of values of a user type with their reals as
/// scalars of the pass.
pub fn twins_values<S: Scalar, T: Differentiable<S::Prim>>(values: &[T]) -> Vec<TwinOf<T, S>> {
    values.iter().map(twin_values::<S, T>).collect()
}

/// `twins_values` into a buffer from the per-thread pool (give it back with
/// [`give_back_vec`](crate::pool::give_back_vec)).
fn pooled_twins_values<S: Scalar + 'static, T: Differentiable<S::Prim> + 'static>(
    values: &[T],
) -> Vec<TwinOf<T, S>>
where
    TwinOf<T, S>: 'static,
{
    pooled_twins(values, twin_values::<S, T>)
}

/// `twins_zeros` into a buffer from the per-thread pool.
fn pooled_twins_zeros<S: Scalar + 'static, T: Differentiable<S::Prim> + 'static>(
    values: &[T],
) -> Vec<TwinOf<T, S>>
where
    TwinOf<T, S>: 'static,
{
    pooled_twins(values, twin_zeros::<S, T>)
}

/// A twin per value, made by `make`, in a buffer from the per-thread pool.
fn pooled_twins<S: Scalar + 'static, T: Differentiable<S::Prim> + 'static>(
    values: &[T],
    make: impl FnMut(&T) -> TwinOf<T, S>,
) -> Vec<TwinOf<T, S>>
where
    TwinOf<T, S>: 'static,
{
    let mut twins = crate::pool::pooled_vec::<TwinOf<T, S>>();
    twins.extend(values.iter().map(make));
    twins
}

/// The twins of a buffer of values of a user type in a pass on its machine
/// float: the values themselves, read as twins, where the type's layout is
/// its twin's ([`Differentiable::TWIN_LAYOUT`]), else copies in a buffer
/// from the per-thread pool (given back when dropped).
pub enum Twins<'a, X: 'static> {
    Read(&'a [X]),
    Pooled(Vec<X>),
}

impl<X: 'static> core::ops::Deref for Twins<'_, X> {
    type Target = [X];
    #[inline(always)]
    fn deref(&self) -> &[X] {
        match self {
            Twins::Read(twins) => twins,
            Twins::Pooled(twins) => twins,
        }
    }
}

impl<X: 'static> Drop for Twins<'_, X> {
    fn drop(&mut self) {
        if let Twins::Pooled(twins) = self {
            crate::pool::give_back_vec(core::mem::take(twins));
        }
    }
}

/// `Twins` of `values`, for a pass on `P`.
#[inline]
pub fn twins_of<P, T>(values: &[T]) -> Twins<'_, TwinOf<T, P>>
where
    P: Primitive + Scalar<Prim = P> + 'static,
    T: Differentiable<P> + 'static,
    TwinOf<T, P>: 'static,
{
    match T::TWIN_LAYOUT {
        // SAFETY: `TwinOf<T, P>` is `T::Twin<Active<P>>` (`P` is its own
        // machine float), laid out as `T` (`TWIN_LAYOUT`'s proof): the
        // same elements, read with the same lifetime, only shared.
        Some(_) => Twins::Read(unsafe {
            core::slice::from_raw_parts(values.as_ptr().cast::<TwinOf<T, P>>(), values.len())
        }),
        None => Twins::Pooled(pooled_twins_values::<P, T>(values)),
    }
}

/// The adjoint twins of a buffer of values of a user type in a pass on its
/// machine float, for the gradient `grad` of the buffer: `grad` itself,
/// written as twins, where the type's layout is its twin's, else zero twins
/// from the per-thread pool, which [`AdjointTwins::finish`] adds into
/// `grad`.
pub enum AdjointTwins<'a, T, X: 'static> {
    InPlace(&'a mut [X]),
    Pooled {
        grad: &'a mut Vec<T>,
        values: &'a [T],
        twins: Vec<X>,
        accumulate: bool,
    },
}

impl<T, X: 'static> core::ops::Deref for AdjointTwins<'_, T, X> {
    type Target = [X];
    #[inline(always)]
    fn deref(&self) -> &[X] {
        match self {
            AdjointTwins::InPlace(twins) => twins,
            AdjointTwins::Pooled { twins, .. } => twins,
        }
    }
}

impl<T, X: 'static> core::ops::DerefMut for AdjointTwins<'_, T, X> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [X] {
        match self {
            AdjointTwins::InPlace(twins) => twins,
            AdjointTwins::Pooled { twins, .. } => twins,
        }
    }
}

/// `AdjointTwins` for the gradient `grad` of `values`, for a pass on `P`:
/// `grad` is set to zeros shaped like `values` first unless `accumulate`
/// (`grad_into`, which adds into it; zeros too if it is empty, a `Grad`
/// from `Default`).
#[inline]
pub fn adjoint_twins_of<'a, P, T>(
    grad: &'a mut Vec<T>,
    values: &'a [T],
    accumulate: bool,
) -> AdjointTwins<'a, T, TwinOf<T, P>>
where
    P: Primitive + Scalar<Prim = P> + 'static,
    T: Differentiable<P> + 'static,
    TwinOf<T, P>: 'static,
{
    if T::TWIN_LAYOUT.is_none() {
        return AdjointTwins::Pooled {
            grad,
            values,
            twins: pooled_twins_zeros::<P, T>(values),
            accumulate,
        };
    }
    if !accumulate || grad.is_empty() {
        grad.clear();
        grad.extend(
            values
                .iter()
                .map(|v| twin_gradient::<P, T>(&twin_zeros::<P, T>(v), |x| x)),
        );
    }
    assert_eq!(
        grad.len(),
        values.len(),
        "deltad: the gradient of a buffer has {} elements where the argument has {}",
        grad.len(),
        values.len()
    );
    // SAFETY: as in `twins_of`; the twins are written only through this
    // borrow of `grad`, with values of their own types (`Active<P>`
    // leaves where `T` has reals `P`; its other fields as they are).
    AdjointTwins::InPlace(unsafe {
        core::slice::from_raw_parts_mut(grad.as_mut_ptr().cast::<TwinOf<T, P>>(), grad.len())
    })
}

impl<T, X: 'static> AdjointTwins<'_, T, X> {
    /// Puts the adjoints in the gradient where they were not written there
    /// (added to it, or replacing it).
    pub fn finish<P>(self)
    where
        P: Primitive + Scalar<Prim = P>,
        T: Differentiable<P, Twin<Active<P>> = X>,
    {
        let AdjointTwins::Pooled {
            grad,
            values,
            twins,
            accumulate,
        } = self
        else {
            return;
        };
        if accumulate {
            add_twins_gradient::<P, T>(grad, values, &twins);
        } else {
            *grad = twins_gradient::<P, T>(&twins, |x| x);
        }
        crate::pool::give_back_vec(twins);
    }
}

/// Zero adjoint twins for a buffer of values of a user type.
pub fn twins_zeros<S: Scalar, T: Differentiable<S::Prim>>(values: &[T]) -> Vec<TwinOf<T, S>> {
    values.iter().map(twin_zeros::<S, T>).collect()
}

/// Adds the adjoint twins of a buffer's elements into the gradients `grad`
/// (zeros shaped like `values` first, if `grad` is empty: a `Grad` reused
/// from `Default`).
fn add_twins_gradient<S: Scalar, T: Differentiable<S::Prim>>(
    grad: &mut Vec<T>,
    values: &[T],
    adjoints: &[TwinOf<T, S>],
) {
    if grad.is_empty() {
        grad.extend(
            values
                .iter()
                .map(|v| twin_gradient::<S, T>(&twin_zeros::<S, T>(v), |x: S| x.to_prim())),
        );
    }
    assert_eq!(
        grad.len(),
        adjoints.len(),
        "deltad: the gradient of a buffer has {} elements where the argument has {}",
        grad.len(),
        adjoints.len()
    );
    for (g, a) in grad.iter_mut().zip(adjoints) {
        add_twin_gradient::<S, T>(g, a);
    }
}

/// The values in the user's type whose reals are `part` of each adjoint
/// twin's (a buffer's gradient, a Hessian row).
pub fn twins_gradient<S: Scalar, T: Differentiable<S::Prim>>(
    adjoints: &[TwinOf<T, S>],
    mut part: impl FnMut(S) -> S::Prim,
) -> Vec<T> {
    adjoints
        .iter()
        .map(|a| twin_gradient::<S, T>(a, &mut part))
        .collect()
}

/// A caller's own sink passed on to a callee (a parameter of a user type
/// given whole to another differentiated function).
pub struct SinkRef<'a, K>(pub &'a mut K);

impl<T, K: TwinSink<T>> TwinSink<T> for SinkRef<'_, K> {
    #[inline(always)]
    fn with(&mut self, f: impl FnOnce(&mut T)) {
        self.0.with(f)
    }
}

impl<T, K: TwinsSink<T>> TwinsSink<T> for SinkRef<'_, K> {
    #[inline(always)]
    fn with_at(&mut self, index: usize, f: impl FnOnce(&mut T)) {
        self.0.with_at(index, f)
    }
}

impl<S, T> TwinSink<T> for Discard<S> {
    #[inline(always)]
    fn with(&mut self, _f: impl FnOnce(&mut T)) {}
}

/// What the compiled passes take for a parameter of a user type `V`: its
/// twin, borrowed or made for the call.
#[diagnostic::on_unimplemented(
    message = "this argument does not match the parameter of the called function",
    label = "the parameter's type `{V}` is taken for a user type, and this argument is not a value of one",
    note = "a parameter spelled through an alias without type arguments (`type Point = [f64; 2]`) reads like a user type: write the type itself in the called function's signature (`[f64; 2]`), or give the alias a type argument (`type Point<T> = [T; 2]`)"
)]
pub trait StructArg<V: Differentiable<S::Prim>, S: Scalar> {
    /// The twin.
    fn twin(&self) -> &TwinOf<V, S>;
}

#[diagnostic::do_not_recommend]
impl<V: Differentiable<S::Prim>, S: Scalar, B: std::borrow::Borrow<TwinOf<V, S>>> StructArg<V, S>
    for B
{
    #[inline(always)]
    fn twin(&self) -> &TwinOf<V, S> {
        self.borrow()
    }
}

/// A value the callee borrows, made for the call (a constant argument's
/// twin).
pub struct Owned<T>(pub T);

impl<T> Deref for Owned<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> std::borrow::Borrow<T> for Owned<T> {
    #[inline(always)]
    fn borrow(&self) -> &T {
        &self.0
    }
}

/// The marker of a differentiated parameter of a user type taken by
/// reference (`p: &Particle`): compiled passes take its twin by reference.
pub struct StructParam;
/// The marker of a differentiated parameter of a user type taken by value
/// (`p: Particle`): compiled passes borrow its twin too.
pub struct StructValueParam;
/// The marker of a differentiated buffer of values of a user type
/// (`&[Particle]`, `Vec<Particle>`): compiled passes take a slice of
/// twins.
pub struct StructsParam;

impl<'a, T> PassActive<&'a [T]> for StructsParam {
    type Out = &'a [T];
    #[inline(always)]
    fn pass(value: &'a [T]) -> &'a [T] {
        value
    }
}

impl<'a, S: Scalar, T: Differentiable<S::Prim>> PassConstant<S, &'a [T]> for StructsParam {
    type Out = Owned<Vec<TwinOf<T, S>>>;
    #[inline(always)]
    fn pass(value: &'a [T]) -> Owned<Vec<TwinOf<T, S>>> {
        Owned(twins_values(value))
    }
}

impl<'a, S: Scalar, T: Differentiable<S::Prim>, const N: usize> PassConstant<S, &'a [T; N]>
    for StructsParam
{
    type Out = Owned<Vec<TwinOf<T, S>>>;
    #[inline(always)]
    fn pass(value: &'a [T; N]) -> Owned<Vec<TwinOf<T, S>>> {
        Owned(twins_values(value))
    }
}

impl<'a, S: Scalar, T: Differentiable<S::Prim>> PassConstant<S, &'a Vec<T>> for StructsParam {
    type Out = Owned<Vec<TwinOf<T, S>>>;
    #[inline(always)]
    fn pass(value: &'a Vec<T>) -> Owned<Vec<TwinOf<T, S>>> {
        Owned(twins_values(value))
    }
}

impl<'a, T> PassActive<&'a T> for StructParam {
    type Out = &'a T;
    #[inline(always)]
    fn pass(value: &'a T) -> &'a T {
        value
    }
}

impl<'a, S: Scalar, T: Differentiable<S::Prim>> PassConstant<S, &'a T> for StructParam {
    type Out = Owned<TwinOf<T, S>>;
    #[inline(always)]
    fn pass(value: &'a T) -> Owned<TwinOf<T, S>> {
        Owned(twin_values(value))
    }
}

impl<'a, T> PassActive<&'a T> for StructValueParam {
    type Out = &'a T;
    #[inline(always)]
    fn pass(value: &'a T) -> &'a T {
        value
    }
}

impl<S: Scalar, T: Differentiable<S::Prim>> PassConstant<S, T> for StructValueParam {
    type Out = Owned<TwinOf<T, S>>;
    #[inline(always)]
    fn pass(value: T) -> Owned<TwinOf<T, S>> {
        Owned(twin_values(&value))
    }
}

impl<'a, S: Scalar, T: Differentiable<S::Prim>> PassOwned<'a, S, T> for StructValueParam {
    type Slot = ();
    type Out = Owned<TwinOf<T, S>>;
    #[inline(always)]
    fn pass_owned(value: &'a T, _: &'a mut Option<()>) -> Owned<TwinOf<T, S>> {
        Owned(twin_values(value))
    }
}

impl<'a, S: Scalar + 'a, T: Differentiable<S::Prim>> PassOwned<'a, S, Vec<T>> for StructsParam
where
    TwinOf<T, S>: 'a,
{
    type Slot = Vec<TwinOf<T, S>>;
    type Out = &'a [TwinOf<T, S>];
    #[inline(always)]
    fn pass_owned(
        value: &'a Vec<T>,
        slot: &'a mut Option<Vec<TwinOf<T, S>>>,
    ) -> &'a [TwinOf<T, S>] {
        slot.insert(twins_values(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dual::Dual;

    #[test]
    fn leaves_read_and_accumulate() {
        let mut active = Active(2.0_f64);
        assert_eq!(RealLeaf::<f64>::scalar(&active), 2.0);
        RealLeaf::<f64>::accumulate(&mut active, 3.0);
        assert_eq!(active.0, 5.0);
        let mut constant = 7.0_f64;
        let lifted: Dual<f64> = RealLeaf::scalar(&constant);
        assert_eq!((lifted.value, lifted.tangent), (7.0, 0.0));
        RealLeaf::<f64>::accumulate(&mut constant, 1.0);
        assert_eq!(constant, 7.0, "a constant leaf takes no adjoint");
    }

    #[test]
    fn twins_of_tuples_round_trip() {
        let value = (1.5_f64, vec![2.0_f64, 3.0], 4_usize);
        let twin: TwinOf<(f64, Vec<f64>, usize), f64> = twin_values(&value);
        assert_eq!(((twin.0).0, (twin.1)[1].0, twin.2), (1.5, 3.0, 4));
        let mut adjoint: TwinOf<(f64, Vec<f64>, usize), f64> = twin_zeros(&value);
        (adjoint.1)[0].0 = 1.0;
        adjoint.0 .0 = 2.0;
        let gradient: (f64, Vec<f64>, usize) = twin_gradient(&adjoint, |x: f64| x);
        assert_eq!(gradient, (2.0, vec![1.0, 0.0], 4));
        // Zeros shaped like the value, its discrete data kept.
        assert_eq!(zeros_like::<f64, _>(&value), (0.0, vec![0.0, 0.0], 4));
        let mut sum = (1.0, vec![1.0, 1.0], 4_usize);
        add_twin_gradient::<f64, _>(&mut sum, &adjoint);
        assert_eq!(sum, (3.0, vec![2.0, 1.0], 4));
        let mut leaves = Vec::new();
        twin_leaves::<f64, (f64, Vec<f64>, usize)>(&adjoint, &mut leaves);
        assert_eq!(leaves, vec![2.0, 1.0, 0.0]);
    }

    #[test]
    fn sinks_run_or_drop() {
        let mut twin = (Active(1.0_f64), 2_usize);
        let mut sink = &mut twin;
        TwinSink::with(&mut sink, |t: &mut (Active<f64>, usize)| t.0 .0 += 1.0);
        assert_eq!(twin.0 .0, 2.0);
        let mut discard = Discard::<f64>::new();
        TwinSink::<(Active<f64>, usize)>::with(&mut discard, |_| panic!("discarded"));
    }
}
