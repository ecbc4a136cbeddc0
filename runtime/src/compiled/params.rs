//! Passing values between compiled forward passes and adjoints.
//!
//! A caller knows whether each of its arguments is differentiated; the
//! callee knows the kind of each of its parameters. Every differentiated
//! function exports one marker type per parameter ([`RealParam`],
//! [`SliceParam`], [`PlainParam`]), and the caller converts each argument
//! through [`PassActive`] or [`PassConstant`] of that marker: a constant
//! real given to a differentiated parameter is lifted, a differentiated value
//! given to a `#[no_grad]` parameter is a type error with a deltad message.
//!
//! Adjoints flow back through sinks, one per parameter: [`ScalarSink`] for
//! reals, [`SliceSink`] for buffers, and [`Discard`] where the caller's
//! argument is constant (or the parameter is not differentiated).

use std::borrow::Cow;

use crate::scalar::Scalar;

/// The constant `x` as a scalar of the compiled pass.
#[inline(always)]
pub fn lifted<S: Scalar>(x: S::Prim) -> S {
    S::from_prim(x)
}

/// The machine value of a scalar of the compiled pass (for casts and
/// decisions, which use values only).
#[inline(always)]
pub fn machine_value<S: Scalar>(x: S) -> S::Prim {
    x.to_prim()
}

/// The marker of a differentiated real parameter.
pub struct RealParam;
/// The marker of a differentiated buffer parameter (`&[f64]`, `&Vec<f64>`,
/// `Vec<f64>`, arrays), passed to compiled passes as a slice.
pub struct SliceParam;
/// The marker of a differentiated array parameter (`[f64; N]`,
/// `&[f64; N]`), passed to compiled passes as `&[S; N]`.
pub struct ArrayParam;
/// The marker of a parameter without derivatives (`#[no_grad]`, discrete).
pub struct PlainParam;

/// A differentiated argument `T` passed to a parameter with marker `Self`.
#[diagnostic::on_unimplemented(
    message = "this differentiated argument does not fit the called function's parameter",
    label = "this argument depends on a differentiated input, but the parameter is `#[no_grad]` or takes another kind of value",
    note = "pass what the parameter's type says (a real, a slice, an array..); to a `#[no_grad]` parameter pass a constant, or remove `#[no_grad]`"
)]
pub trait PassActive<T> {
    /// What the callee's compiled pass takes.
    type Out;
    /// The argument as the callee takes it.
    fn pass(value: T) -> Self::Out;
}

/// A constant argument `T` passed to a parameter with marker `Self`.
#[diagnostic::on_unimplemented(
    message = "this argument does not match the parameter of the called function",
    label = "a constant of this type cannot be passed here"
)]
pub trait PassConstant<S, T> {
    /// What the callee's compiled pass takes.
    type Out;
    /// The argument as the callee takes it (constants of differentiated
    /// parameters are lifted).
    fn pass(value: T) -> Self::Out;
}

impl<S: Scalar> PassActive<S> for RealParam {
    type Out = S;
    #[inline(always)]
    fn pass(value: S) -> S {
        value
    }
}

impl<S: Scalar> PassConstant<S, S::Prim> for RealParam {
    type Out = S;
    #[inline(always)]
    fn pass(value: S::Prim) -> S {
        S::from_prim(value)
    }
}

impl<'a, S: Scalar> PassActive<&'a [S]> for SliceParam {
    type Out = &'a [S];
    #[inline(always)]
    fn pass(value: &'a [S]) -> &'a [S] {
        value
    }
}

impl<'a, S: Scalar> PassActive<&'a Vec<S>> for SliceParam {
    type Out = &'a [S];
    #[inline(always)]
    fn pass(value: &'a Vec<S>) -> &'a [S] {
        value
    }
}

impl<'a, S: Scalar, const N: usize> PassActive<&'a [S; N]> for SliceParam {
    type Out = &'a [S];
    #[inline(always)]
    fn pass(value: &'a [S; N]) -> &'a [S] {
        value
    }
}

impl<'a, S: Scalar + 'a> PassConstant<S, &'a [S::Prim]> for SliceParam {
    type Out = Cow<'a, [S]>;
    #[inline(always)]
    fn pass(value: &'a [S::Prim]) -> Cow<'a, [S]> {
        S::lift_slice(value)
    }
}

impl<'a, S: Scalar + 'a> PassConstant<S, &'a Vec<S::Prim>> for SliceParam {
    type Out = Cow<'a, [S]>;
    #[inline(always)]
    fn pass(value: &'a Vec<S::Prim>) -> Cow<'a, [S]> {
        S::lift_slice(value)
    }
}

impl<'a, S: Scalar + 'a, const N: usize> PassConstant<S, &'a [S::Prim; N]> for SliceParam {
    type Out = Cow<'a, [S]>;
    #[inline(always)]
    fn pass(value: &'a [S::Prim; N]) -> Cow<'a, [S]> {
        S::lift_slice(value)
    }
}

impl<'a, S: Scalar, const N: usize> PassActive<&'a [S; N]> for ArrayParam {
    type Out = &'a [S; N];
    #[inline(always)]
    fn pass(value: &'a [S; N]) -> &'a [S; N] {
        value
    }
}

impl<'a, S: Scalar + 'a, const N: usize> PassConstant<S, &'a [S::Prim; N]> for ArrayParam {
    type Out = Cow<'a, [S; N]>;
    #[inline(always)]
    fn pass(value: &'a [S::Prim; N]) -> Cow<'a, [S; N]> {
        Cow::Owned(value.map(S::from_prim))
    }
}

impl<S, T> PassConstant<S, T> for PlainParam {
    type Out = T;
    #[inline(always)]
    fn pass(value: T) -> T {
        value
    }
}

/// A constant buffer the caller owns (a local array or `Vec`, or an array
/// written in place), passed by value to a parameter with marker `Self`,
/// given here by reference: a differentiated parameter takes it lifted (a
/// copy in `slot`, which the caller provides for the call, where the scalar
/// is not the machine float), a `#[no_grad]` one takes a copy of the value.
#[diagnostic::on_unimplemented(
    message = "this argument does not match the parameter of the called function",
    label = "a buffer of this type cannot be passed by value here"
)]
pub trait PassOwned<'a, S, T> {
    /// What a differentiated parameter keeps the lifted value in.
    type Slot: 'a;
    /// What the callee's compiled pass takes.
    type Out;
    /// The argument as the callee takes it.
    fn pass_owned(value: &'a T, slot: &'a mut Option<Self::Slot>) -> Self::Out;
}

impl<'a, S: Scalar + 'a, const N: usize> PassOwned<'a, S, [S::Prim; N]> for ArrayParam {
    type Slot = [S; N];
    type Out = &'a [S; N];
    #[inline(always)]
    fn pass_owned(value: &'a [S::Prim; N], slot: &'a mut Option<[S; N]>) -> &'a [S; N] {
        slot.insert(value.map(S::from_prim))
    }
}

impl<'a, S: Scalar + 'a> PassOwned<'a, S, Vec<S::Prim>> for SliceParam {
    type Slot = Vec<S>;
    type Out = &'a [S];
    #[inline(always)]
    fn pass_owned(value: &'a Vec<S::Prim>, slot: &'a mut Option<Vec<S>>) -> &'a [S] {
        match S::lift_slice(value) {
            Cow::Borrowed(lifted) => lifted,
            Cow::Owned(lifted) => slot.insert(lifted),
        }
    }
}

impl<'a, S, T: Clone> PassOwned<'a, S, T> for PlainParam {
    type Slot = ();
    type Out = T;
    #[inline(always)]
    fn pass_owned(value: &'a T, _: &'a mut Option<()>) -> T {
        value.clone()
    }
}

/// Where the adjoint of a real parameter goes.
pub trait ScalarSink<S> {
    /// Adds `adjoint` to the destination.
    fn add(&mut self, adjoint: S);
    /// True if the sink drops what it is given ([`Discard`]): the adjoint
    /// need not be computed.
    #[inline(always)]
    fn discards(&self) -> bool {
        false
    }
}

impl<S: Scalar> ScalarSink<S> for &mut S {
    #[inline(always)]
    fn add(&mut self, adjoint: S) {
        **self += adjoint;
    }
}

/// Where the adjoints of a buffer parameter go: element by element.
pub trait SliceSink<S> {
    /// A sink for the elements `start..end`.
    type Part<'a>: SliceSink<S>
    where
        Self: 'a;
    /// The adjoint of element `index`, to add to.
    fn at(&mut self, index: usize) -> &mut S;
    /// How many elements the sink takes (`usize::MAX` for [`Discard`]): the
    /// adjoint checks it once against its buffer's length, so that the
    /// compiler can drop the bounds checks of `at` in its loops.
    fn capacity(&self) -> usize;
    /// The sink of the elements `start..end` (a sub-slice passed on).
    fn part(&mut self, start: usize, end: usize) -> Self::Part<'_>;
}

impl<S: Scalar> SliceSink<S> for &mut [S] {
    type Part<'a>
        = &'a mut [S]
    where
        Self: 'a;
    #[inline(always)]
    fn at(&mut self, index: usize) -> &mut S {
        &mut self[index]
    }
    #[inline(always)]
    fn capacity(&self) -> usize {
        <[S]>::len(self)
    }
    #[inline(always)]
    fn part(&mut self, start: usize, end: usize) -> &mut [S] {
        &mut self[start..end]
    }
}

/// A sink that drops what it is given: the adjoint of a constant argument.
#[derive(Clone, Copy, Debug)]
pub struct Discard<S> {
    scratch: S,
}

impl<S: Scalar> Discard<S> {
    /// A new sink.
    #[inline(always)]
    pub fn new() -> Self {
        Discard { scratch: S::zero() }
    }
}

impl<S: Scalar> Default for Discard<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: Scalar> ScalarSink<S> for Discard<S> {
    #[inline(always)]
    fn add(&mut self, _: S) {}
    #[inline(always)]
    fn discards(&self) -> bool {
        true
    }
}

impl<S: Scalar> SliceSink<S> for Discard<S> {
    type Part<'a>
        = Discard<S>
    where
        Self: 'a;
    #[inline(always)]
    fn at(&mut self, _: usize) -> &mut S {
        &mut self.scratch
    }
    #[inline(always)]
    fn capacity(&self) -> usize {
        usize::MAX
    }
    #[inline(always)]
    fn part(&mut self, _: usize, _: usize) -> Discard<S> {
        Discard::new()
    }
}

/// A sink lent for one call by its holder (a closure's captured variable's
/// sink, which the closure's adjoint takes at every call).
pub struct Reborrow<'a, K>(pub &'a mut K);

impl<S, K: ScalarSink<S>> ScalarSink<S> for Reborrow<'_, K> {
    #[inline(always)]
    fn add(&mut self, adjoint: S) {
        self.0.add(adjoint)
    }
    #[inline(always)]
    fn discards(&self) -> bool {
        self.0.discards()
    }
}

impl<S, K: SliceSink<S>> SliceSink<S> for Reborrow<'_, K> {
    type Part<'b>
        = K::Part<'b>
    where
        Self: 'b;
    #[inline(always)]
    fn at(&mut self, index: usize) -> &mut S {
        self.0.at(index)
    }
    #[inline(always)]
    fn capacity(&self) -> usize {
        self.0.capacity()
    }
    #[inline(always)]
    fn part(&mut self, start: usize, end: usize) -> K::Part<'_> {
        self.0.part(start, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dual::Dual;

    #[test]
    fn constants_are_lifted_for_differentiated_parameters() {
        let lifted: Dual<f64> = <RealParam as PassConstant<Dual<f64>, f64>>::pass(2.0);
        assert_eq!((lifted.value, lifted.tangent), (2.0, 0.0));
        let data = vec![1.0, 2.0];
        let slice = <SliceParam as PassConstant<f64, &Vec<f64>>>::pass(&data);
        assert!(
            matches!(slice, Cow::Borrowed(_)),
            "f64 constants are not copied"
        );
        let duals = <SliceParam as PassConstant<Dual<f64>, &[f64]>>::pass(&data[..]);
        assert_eq!(duals[1].value, 2.0);
        let plain: usize = <PlainParam as PassConstant<f64, usize>>::pass(3);
        assert_eq!(plain, 3);
    }

    #[test]
    fn sinks_add_or_discard() {
        let mut total = 1.0;
        ScalarSink::add(&mut (&mut total), 2.0);
        assert_eq!(total, 3.0);
        let mut buffer = [0.0; 3];
        let mut sink: &mut [f64] = &mut buffer;
        *sink.at(1) += 4.0;
        *sink.part(1, 3).at(1) += 5.0;
        assert_eq!(buffer, [0.0, 4.0, 5.0]);
        let mut discard = Discard::<f64>::new();
        *SliceSink::at(&mut discard, 7) += 1.0;
        ScalarSink::add(&mut discard, 1.0);
    }
}
