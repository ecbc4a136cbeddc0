//! Parameters of types named without type arguments, which the macro of a
//! callee cannot tell apart: a user type (`#[derive(Differentiable)]`),
//! which compiled callers hold as its twin, or an alias of reals, arrays or
//! `Vec`s of them (`type Point = [f64; 2]`), which they hold as that buffer
//! of scalars. The type's [`HeldAs`] says which; the bridge of a function on
//! the tape takes either form through [`HeldValue`] and [`HeldSink`].

use core::borrow::Borrow;

use super::cotangent::Cotangent;
use super::opaque::{buffer_dual, buffer_leaf_count, read_buffer_adjoint};
use super::params::SliceSink;
use super::structs::{
    read_twin_adjoint, seed_recorded_and_sweep, twin_of_recorded, twin_on_tape, twin_zeros_like,
    Active, Owned, TwinOf, TwinSink,
};
use crate::differentiable::{Differentiable, DualOf};
use crate::scalar::Scalar;
use crate::tape::Tape;
use crate::wrapper::GradReader;

/// How compiled callers hold a value of the type: [`AsTwin`] or
/// [`AsBuffer`].
pub trait HeldAs {
    /// [`AsTwin`] or [`AsBuffer`].
    type Form;
}

/// Held as the twin of a user type (`#[derive(Differentiable)]` says so).
pub struct AsTwin;
/// Held as the buffer of scalars it is (reals, arrays and `Vec`s of them).
pub struct AsBuffer;

macro_rules! held_as_buffer {
    ($($p:ty)*) => {$(
        impl HeldAs for $p {
            type Form = AsBuffer;
        }
    )*};
}
held_as_buffer!(f64 f32);

impl<E: HeldAs, const N: usize> HeldAs for [E; N] {
    type Form = E::Form;
}

impl<E: HeldAs> HeldAs for Vec<E> {
    type Form = E::Form;
}

impl<E> HeldAs for Option<E> {
    type Form = AsTwin;
}

impl<T, E> HeldAs for Result<T, E> {
    type Form = AsTwin;
}

macro_rules! held_as_twin_tuples {
    ($(($($t:ident),+))*) => {$(
        impl<$($t),+> HeldAs for ($($t,)+) {
            type Form = AsTwin;
        }
    )*};
}
held_as_twin_tuples! {
    (A)
    (A, B)
    (A, B, C)
    (A, B, C, D)
    (A, B, C, D, E)
    (A, B, C, D, E, F)
    (A, B, C, D, E, F, G)
    (A, B, C, D, E, F, G, H)
}

/// An argument for a parameter of type `V` of a function on the tape, as a
/// compiled caller holds it.
#[diagnostic::on_unimplemented(
    message = "this argument does not match the parameter of the called function",
    label = "the called function takes a `{V}` here",
    note = "a parameter's type is read as written: a user type needs `#[derive(Differentiable)]`, and an alias stands for the reals, arrays or `Vec`s it names"
)]
pub trait HeldValue<V: Differentiable<S::Prim>, S: Scalar> {
    /// The value on `tape`: its reals fresh inputs (`inputs`) or constants.
    fn dual<'t>(&self, tape: &'t Tape<S>, inputs: bool) -> DualOf<'t, S, S::Prim, V>
    where
        S: 't;
}

/// [`HeldValue`] for the form `F` of `V`. (The bridges name `HeldValue`,
/// whose blanket impl picks the form: a bound on the bridge's own type
/// parameter, so that a type without [`HeldAs`] is an error only where a
/// compiled caller passes one, not in the function's definition.)
pub trait HeldValueAs<V: Differentiable<S::Prim>, S: Scalar, F> {
    /// See [`HeldValue::dual`].
    fn dual<'t>(&self, tape: &'t Tape<S>, inputs: bool) -> DualOf<'t, S, S::Prim, V>
    where
        S: 't;
}

#[diagnostic::do_not_recommend]
impl<V, S, B> HeldValue<V, S> for B
where
    V: Differentiable<S::Prim> + HeldAs,
    S: Scalar,
    B: HeldValueAs<V, S, V::Form>,
{
    #[inline]
    fn dual<'t>(&self, tape: &'t Tape<S>, inputs: bool) -> DualOf<'t, S, S::Prim, V>
    where
        S: 't,
    {
        HeldValueAs::<V, S, V::Form>::dual(self, tape, inputs)
    }
}

impl<V, S, B> HeldValueAs<V, S, AsTwin> for B
where
    V: Differentiable<S::Prim>,
    S: Scalar,
    B: Borrow<TwinOf<V, S>>,
{
    #[inline]
    fn dual<'t>(&self, tape: &'t Tape<S>, inputs: bool) -> DualOf<'t, S, S::Prim, V>
    where
        S: 't,
    {
        twin_on_tape::<S, V>(tape, self.borrow(), inputs)
    }
}

/// A differentiated buffer, borrowed: its scalars.
impl<V, S, X> HeldValueAs<V, S, AsBuffer> for &X
where
    V: Differentiable<S::Prim>,
    S: Scalar,
    X: Borrow<V::Twin<S>> + ?Sized,
{
    #[inline]
    fn dual<'t>(&self, tape: &'t Tape<S>, inputs: bool) -> DualOf<'t, S, S::Prim, V>
    where
        S: 't,
    {
        buffer_dual::<V, S>((**self).borrow(), tape, inputs)
    }
}

/// A constant, as the parameter's marker made it: a twin of constants.
impl<V, S, T> HeldValueAs<V, S, AsBuffer> for Owned<T>
where
    V: Differentiable<S::Prim>,
    S: Scalar,
    T: Borrow<TwinOf<V, S>>,
{
    #[inline]
    fn dual<'t>(&self, tape: &'t Tape<S>, inputs: bool) -> DualOf<'t, S, S::Prim, V>
    where
        S: 't,
    {
        twin_on_tape::<S, V>(tape, self.0.borrow(), inputs)
    }
}

/// Where the adjoint of a parameter of type `V` held as `B` goes: the
/// caller's twin of adjoints, or its buffer.
#[diagnostic::on_unimplemented(
    message = "this argument does not match the parameter of the called function",
    label = "the called function takes a `{V}` here"
)]
pub trait HeldSink<V: Differentiable<S::Prim>, S: Scalar, A, B> {
    /// Reads the adjoints of the inputs `held`'s dual made (in leaf order)
    /// and adds them in (adjoints `A`, in the reader's lane).
    fn read(&mut self, held: &B, reader: &mut GradReader<'_, S>);
}

/// [`HeldSink`] for the form `F` of `V`.
pub trait HeldSinkAs<V: Differentiable<S::Prim>, S: Scalar, A, B, F> {
    /// See [`HeldSink::read`].
    fn read(&mut self, held: &B, reader: &mut GradReader<'_, S>);
}

#[diagnostic::do_not_recommend]
impl<V, S, A, B, K> HeldSink<V, S, A, B> for K
where
    V: Differentiable<S::Prim> + HeldAs,
    S: Scalar,
    K: HeldSinkAs<V, S, A, B, V::Form>,
{
    #[inline]
    fn read(&mut self, held: &B, reader: &mut GradReader<'_, S>) {
        HeldSinkAs::<V, S, A, B, V::Form>::read(self, held, reader)
    }
}

impl<V, S, A, B, K> HeldSinkAs<V, S, A, B, AsTwin> for K
where
    V: Differentiable<S::Prim>,
    S: Scalar,
    A: Cotangent<S>,
    B: Borrow<TwinOf<V, S>>,
    K: TwinSink<TwinOf<V, A>>,
{
    #[inline]
    fn read(&mut self, held: &B, reader: &mut GradReader<'_, S>) {
        read_twin_adjoint::<S, A, V>(held.borrow(), reader, self);
    }
}

impl<V, S, A, B, K> HeldSinkAs<V, S, A, B, AsBuffer> for K
where
    V: Differentiable<S::Prim>,
    S: Scalar,
    A: Cotangent<S>,
    B: HeldValueAs<V, S, AsBuffer> + HeldLeaves<V, S>,
    K: SliceSink<A>,
{
    #[inline]
    fn read(&mut self, held: &B, reader: &mut GradReader<'_, S>) {
        read_buffer_adjoint(held.leaf_count(), reader, self);
    }
}

/// The number of reals of a value held as a buffer.
pub trait HeldLeaves<V: Differentiable<S::Prim>, S: Scalar> {
    /// How many reals.
    fn leaf_count(&self) -> usize;
}

impl<V, S, X> HeldLeaves<V, S> for &X
where
    V: Differentiable<S::Prim>,
    S: Scalar,
    X: Borrow<V::Twin<S>> + ?Sized,
{
    fn leaf_count(&self) -> usize {
        buffer_leaf_count::<V, S>((**self).borrow())
    }
}

impl<V, S, T> HeldLeaves<V, S> for Owned<T>
where
    V: Differentiable<S::Prim>,
    S: Scalar,
    T: Borrow<TwinOf<V, S>>,
{
    fn leaf_count(&self) -> usize {
        let mut leaves = Vec::new();
        V::flatten_twin(self.0.borrow(), &mut leaves);
        leaves.len()
    }
}

/// A result of type `V`, named without type arguments, as compiled callers
/// hold it: implemented by the form (`<V as HeldAs>::Form`), a user type's
/// twin or an alias's buffer.
pub trait HeldResult<V: Differentiable<S::Prim>, S: Scalar> {
    /// What callers hold.
    type Held;
    /// The values of the recorded result.
    fn held_of_recorded(dual: &DualOf<'_, S, S::Prim, V>) -> Self::Held;
    /// Seeds the recorded result with `out` (shaped like it) and sweeps.
    fn seed_held_and_sweep<'t>(
        tape: &'t Tape<S>,
        dual: &DualOf<'t, S, S::Prim, V>,
        out: &Self::Held,
        adjoints: &mut Vec<S>,
    ) where
        S: 't;
    /// A value shaped like `like` with every real 0.
    fn held_zeros_like(like: &Self::Held) -> Self::Held;
}

/// A result held with adjoints `A` seen one lane at a time (a compiled
/// caller's vector reverse mode, through a callee on the tape).
pub trait HeldLanes<V: Differentiable<S::Prim>, S: Scalar, A: Cotangent<S>>:
    HeldResult<V, S> + HeldResult<V, A>
{
    /// Adjoint `lane` of each real of `held`.
    fn held_lane(
        held: &<Self as HeldResult<V, A>>::Held,
        lane: usize,
    ) -> <Self as HeldResult<V, S>>::Held;
    /// Adjoints shaped like `like`, every one 0.
    fn held_adjoint_zeros(
        like: &<Self as HeldResult<V, S>>::Held,
    ) -> <Self as HeldResult<V, A>>::Held;
}

impl<V: Differentiable<S::Prim>, S: Scalar, A: Cotangent<S>> HeldLanes<V, S, A> for AsTwin {
    #[inline]
    fn held_lane(held: &TwinOf<V, A>, lane: usize) -> TwinOf<V, S> {
        V::map_twin(held, &mut |leaf: &Active<A>| Active(leaf.0.lane(lane)))
    }
    #[inline]
    fn held_adjoint_zeros(like: &TwinOf<V, S>) -> TwinOf<V, A> {
        twin_zeros_like::<S, A, V>(like)
    }
}

impl<V: Differentiable<S::Prim>, S: Scalar, A: Cotangent<S>> HeldLanes<V, S, A> for AsBuffer {
    #[inline]
    fn held_lane(held: &V::Twin<A>, lane: usize) -> V::Twin<S> {
        V::map_twin(held, &mut |leaf: &A| leaf.lane(lane))
    }
    #[inline]
    fn held_adjoint_zeros(like: &V::Twin<S>) -> V::Twin<A> {
        V::map_twin(like, &mut |_: &S| A::zero())
    }
}

impl<V: Differentiable<S::Prim>, S: Scalar> HeldResult<V, S> for AsTwin {
    type Held = TwinOf<V, S>;
    #[inline]
    fn held_of_recorded(dual: &DualOf<'_, S, S::Prim, V>) -> TwinOf<V, S> {
        twin_of_recorded::<S, V>(dual)
    }
    #[inline]
    fn seed_held_and_sweep<'t>(
        tape: &'t Tape<S>,
        dual: &DualOf<'t, S, S::Prim, V>,
        out: &TwinOf<V, S>,
        adjoints: &mut Vec<S>,
    ) where
        S: 't,
    {
        seed_recorded_and_sweep::<S, V>(tape, dual, out, adjoints)
    }
    #[inline]
    fn held_zeros_like(like: &TwinOf<V, S>) -> TwinOf<V, S> {
        twin_zeros_like::<S, S, V>(like)
    }
}

impl<V: Differentiable<S::Prim>, S: Scalar> HeldResult<V, S> for AsBuffer {
    type Held = V::Twin<S>;
    #[inline]
    fn held_of_recorded(dual: &DualOf<'_, S, S::Prim, V>) -> V::Twin<S> {
        V::value(dual)
    }
    #[inline]
    fn seed_held_and_sweep<'t>(
        tape: &'t Tape<S>,
        dual: &DualOf<'t, S, S::Prim, V>,
        out: &V::Twin<S>,
        adjoints: &mut Vec<S>,
    ) where
        S: 't,
    {
        super::opaque::seed_opaque_and_sweep::<S, V>(tape, dual, out, adjoints)
    }
    #[inline]
    fn held_zeros_like(like: &V::Twin<S>) -> V::Twin<S> {
        V::map_twin(like, &mut |_: &S| S::zero())
    }
}
