//! Parameters and results whose type the macro cannot see into: a type
//! alias (`type Vector3<T> = [T; 3]`) or another crate's generic type. The
//! macro of the callee cannot tell how its compiled callers hold such a
//! value; the callers hold it as what it is to rustc (`[S; 3]` for the
//! alias), so the callee's compiled passes take and return the value with
//! its reals replaced by the pass's scalars: `Twin<S>` of the type's
//! [`Differentiable`] impl, which is that same shape.
//!
//! A caller converts each argument through the parameter's marker,
//! [`OpaqueParam`], which wraps it as [`ActiveArg`] (its reals are inputs)
//! or [`ConstantArg`] (a value of the type itself); the callee's passes take
//! any [`OpaqueArg`].

use core::borrow::Borrow;
use core::ops::Deref;

use super::cotangent::Cotangent;
use super::params::{PassActive, PassConstant, PassOwned, SliceSink};
use crate::differentiable::{Differentiable, DualOf};
use crate::real::Real;
use crate::scalar::Scalar;
use crate::tape::Tape;
use crate::wrapper::GradReader;

/// The marker of a differentiated parameter of a type the macro cannot see
/// into.
pub struct OpaqueParam;

/// A differentiated argument for an [`OpaqueParam`]: the value with its
/// reals as scalars of the pass (`&[S; 3]` for a `Vector3<f64>` that is
/// `[f64; 3]`).
pub struct ActiveArg<T>(pub T);

/// A constant argument for an [`OpaqueParam`]: a value of the parameter's
/// type (or a reference to one).
pub struct ConstantArg<T>(pub T);

// (Callers borrow buffer arguments as `&*passed`: both wrappers deref to
// themselves, so that the borrow is of the wrapper.)
impl<T> Deref for ActiveArg<T> {
    type Target = Self;
    #[inline(always)]
    fn deref(&self) -> &Self {
        self
    }
}

impl<T> Deref for ConstantArg<T> {
    type Target = Self;
    #[inline(always)]
    fn deref(&self) -> &Self {
        self
    }
}

impl<T> PassActive<T> for OpaqueParam {
    type Out = ActiveArg<T>;
    #[inline(always)]
    fn pass(value: T) -> ActiveArg<T> {
        ActiveArg(value)
    }
}

impl<S, T> PassConstant<S, T> for OpaqueParam {
    type Out = ConstantArg<T>;
    #[inline(always)]
    fn pass(value: T) -> ConstantArg<T> {
        ConstantArg(value)
    }
}

impl<'a, S, T: 'a> PassOwned<'a, S, T> for OpaqueParam {
    type Slot = ();
    type Out = ConstantArg<&'a T>;
    #[inline(always)]
    fn pass_owned(value: &'a T, _: &'a mut Option<()>) -> ConstantArg<&'a T> {
        ConstantArg(value)
    }
}

/// What the compiled passes of a callee take for a parameter of type `V`
/// whose type the macro cannot see into.
#[diagnostic::on_unimplemented(
    message = "this argument does not match the parameter of the called function",
    label = "the parameter's type is `{V}`, spelled through a name the caller's reals cannot be matched to",
    note = "pass a value of the parameter's own type (an array or `Vec` of reals for an alias of one)"
)]
pub trait OpaqueArg<V: Differentiable<S::Prim>, S: Scalar> {
    /// The value on `tape`: its reals fresh inputs (`inputs`) or constants.
    fn dual<'t>(&self, tape: &'t Tape<S>, inputs: bool) -> DualOf<'t, S, S::Prim, V>
    where
        S: 't;
    /// Reads the adjoints of the inputs `dual` made (in leaf order) and adds
    /// them into `sink`.
    fn read_adjoint<A: Cotangent<S>>(
        &self,
        reader: &mut GradReader<'_, S>,
        sink: &mut impl SliceSink<A>,
    );
}

impl<V, S, T> OpaqueArg<V, S> for ActiveArg<T>
where
    V: Differentiable<S::Prim>,
    S: Scalar,
    T: Borrow<V::Twin<S>>,
{
    #[inline]
    fn dual<'t>(&self, tape: &'t Tape<S>, inputs: bool) -> DualOf<'t, S, S::Prim, V>
    where
        S: 't,
    {
        buffer_dual::<V, S>(self.0.borrow(), tape, inputs)
    }

    #[inline]
    fn read_adjoint<A: Cotangent<S>>(
        &self,
        reader: &mut GradReader<'_, S>,
        sink: &mut impl SliceSink<A>,
    ) {
        read_buffer_adjoint(buffer_leaf_count::<V, S>(self.0.borrow()), reader, sink)
    }
}

/// The dual value of a value held as the scalars of its reals
/// (`V::Twin<S>`): each real a fresh input on `tape` (`inputs`) or a
/// constant.
pub(super) fn buffer_dual<'t, V: Differentiable<S::Prim>, S: Scalar + 't>(
    held: &V::Twin<S>,
    tape: &'t Tape<S>,
    inputs: bool,
) -> DualOf<'t, S, S::Prim, V> {
    V::map_twin(held, &mut |&value: &S| {
        if inputs {
            Real::input(tape, value)
        } else {
            Real::constant(value)
        }
    })
}

/// How many reals a value held as their scalars has.
pub(super) fn buffer_leaf_count<V: Differentiable<S::Prim>, S: Scalar>(held: &V::Twin<S>) -> usize {
    let mut leaves = Vec::new();
    V::flatten_twin(held, &mut leaves);
    leaves.len()
}

/// Adds the adjoints of the next `count` inputs into `sink`, element by
/// element (in the reader's lane).
pub(super) fn read_buffer_adjoint<S: Scalar, A: Cotangent<S>>(
    count: usize,
    reader: &mut GradReader<'_, S>,
    sink: &mut impl SliceSink<A>,
) {
    for k in 0..count {
        *sink.at(k) += reader.cotangent::<A>();
    }
}

impl<V, S, T> OpaqueArg<V, S> for ConstantArg<T>
where
    V: Differentiable<S::Prim>,
    S: Scalar,
    T: Borrow<V>,
{
    #[inline]
    fn dual<'t>(&self, _: &'t Tape<S>, _: bool) -> DualOf<'t, S, S::Prim, V>
    where
        S: 't,
    {
        self.0.borrow().constant()
    }

    #[inline]
    fn read_adjoint<A: Cotangent<S>>(&self, _: &mut GradReader<'_, S>, _: &mut impl SliceSink<A>) {}
}

impl<V, S, A> OpaqueArg<V, S> for &A
where
    V: Differentiable<S::Prim>,
    S: Scalar,
    A: OpaqueArg<V, S>,
{
    #[inline]
    fn dual<'t>(&self, tape: &'t Tape<S>, inputs: bool) -> DualOf<'t, S, S::Prim, V>
    where
        S: 't,
    {
        (**self).dual(tape, inputs)
    }

    #[inline]
    fn read_adjoint<C: Cotangent<S>>(
        &self,
        reader: &mut GradReader<'_, S>,
        sink: &mut impl SliceSink<C>,
    ) {
        (**self).read_adjoint(reader, sink)
    }
}

/// The values of a recorded result of a type the macro cannot see into,
/// with the result's shape (`[S; 3]` for a `Vector3<f64>` that is
/// `[f64; 3]`).
#[inline]
pub fn opaque_values<S: Scalar, V: Differentiable<S::Prim>>(
    dual: &DualOf<'_, S, S::Prim, V>,
) -> V::Twin<S> {
    V::value(dual)
}

/// Seeds a recorded result of a type the macro cannot see into with `out`
/// (shaped like it) and sweeps the tape.
pub fn seed_opaque_and_sweep<'t, S: Scalar + 't, V: Differentiable<S::Prim>>(
    tape: &'t Tape<S>,
    dual: &DualOf<'t, S, S::Prim, V>,
    out: &V::Twin<S>,
    adjoints: &mut Vec<S>,
) {
    adjoints.clear();
    adjoints.resize(tape.len(), S::zero());
    V::seed(dual, out, adjoints);
    tape.reverse_sweep(adjoints);
}
