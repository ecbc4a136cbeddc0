//! Conversions the generated code inserts where plain and dual values meet.
//!
//! * [`Lift`]: a real value (or collection of them) that the activity analysis
//!   found flowing into a differentiated slot becomes a dual value; a machine
//!   float becomes a constant, a dual value stays as it is.
//! * [`Arg`]: an argument of a call between `#[differentiate]` functions
//!   becomes the callee's parameter type (separate compilation, seed 004
//!   §8.1): dual values pass through (borrowed where possible), constants are
//!   lifted, anything else must already have the parameter's type.
//! * [`Primal`]: the machine value of a dual value, for `as` casts.

use std::borrow::Cow;

use crate::real::Real;
use crate::scalar::{Primitive, Scalar};
use crate::tape::Tape;

/// Turns a real value, or a collection of them, into dual values.
#[diagnostic::on_unimplemented(
    message = "deltad cannot use `{Self}` as a differentiated value",
    label = "this value flows into a variable that depends on a differentiated input",
    note = "deltad makes a variable differentiable when any value assigned to it depends on a differentiated input; all values assigned to it must then be real numbers of the function's precision (or collections of them)"
)]
pub trait Lift<'t, S> {
    /// The dual-valued counterpart of `Self`.
    type Output;
    /// Converts; machine floats become constants.
    fn lift(self) -> Self::Output;
}

/// Lifts `value` onto `tape`'s scalar type (the tape only fixes the type).
#[inline(always)]
pub fn lift<'t, S: Scalar, T: Lift<'t, S>>(_tape: &'t Tape<S>, value: T) -> T::Output {
    value.lift()
}

impl<'t, S: Scalar> Lift<'t, S> for Real<'t, S> {
    type Output = Real<'t, S>;
    #[inline(always)]
    fn lift(self) -> Real<'t, S> {
        self
    }
}

impl<'t, S: Scalar> Lift<'t, S> for &Real<'t, S> {
    type Output = Real<'t, S>;
    #[inline(always)]
    fn lift(self) -> Real<'t, S> {
        *self
    }
}

impl<'t, S: Scalar> Lift<'t, S> for &mut Real<'t, S> {
    type Output = Real<'t, S>;
    #[inline(always)]
    fn lift(self) -> Real<'t, S> {
        *self
    }
}

macro_rules! lift_machine_float {
    ($($p:ident)*) => {$(
        impl<'t, S: Scalar<Prim = $p> + 't> Lift<'t, S> for $p {
            type Output = Real<'t, S>;
            #[inline(always)]
            fn lift(self) -> Real<'t, S> {
                Real::from_prim(self)
            }
        }
        impl<'t, S: Scalar<Prim = $p> + 't> Lift<'t, S> for &$p {
            type Output = Real<'t, S>;
            #[inline(always)]
            fn lift(self) -> Real<'t, S> {
                Real::from_prim(*self)
            }
        }
        impl<'t, S: Scalar<Prim = $p> + 't> Lift<'t, S> for &mut $p {
            type Output = Real<'t, S>;
            #[inline(always)]
            fn lift(self) -> Real<'t, S> {
                Real::from_prim(*self)
            }
        }
    )*};
}
lift_machine_float!(f64 f32);

macro_rules! lift_discrete {
    ($($t:ty),*) => {$(
        /// Discrete data stays as it is.
        impl<'t, S> Lift<'t, S> for $t {
            type Output = $t;
            #[inline(always)]
            fn lift(self) -> $t {
                self
            }
        }
    )*};
}
lift_discrete!(
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    bool,
    char,
    String,
    ()
);

impl<'t, S, T: Lift<'t, S>> Lift<'t, S> for Vec<T> {
    type Output = Vec<T::Output>;
    fn lift(self) -> Self::Output {
        self.into_iter().map(Lift::lift).collect()
    }
}

impl<'a, 't, S, T> Lift<'t, S> for &'a [T]
where
    &'a T: Lift<'t, S>,
{
    type Output = Vec<<&'a T as Lift<'t, S>>::Output>;
    fn lift(self) -> Self::Output {
        self.iter().map(Lift::lift).collect()
    }
}

impl<'a, 't, S, T> Lift<'t, S> for &'a Vec<T>
where
    &'a T: Lift<'t, S>,
{
    type Output = Vec<<&'a T as Lift<'t, S>>::Output>;
    fn lift(self) -> Self::Output {
        self.iter().map(Lift::lift).collect()
    }
}

impl<'t, S, T: Lift<'t, S>, const N: usize> Lift<'t, S> for [T; N] {
    type Output = [T::Output; N];
    fn lift(self) -> Self::Output {
        self.map(Lift::lift)
    }
}

impl<'a, 't, S, T, const N: usize> Lift<'t, S> for &'a [T; N]
where
    &'a T: Lift<'t, S>,
{
    type Output = [<&'a T as Lift<'t, S>>::Output; N];
    fn lift(self) -> Self::Output {
        self.each_ref().map(Lift::lift)
    }
}

impl<'t, S, T: Lift<'t, S>> Lift<'t, S> for Option<T> {
    type Output = Option<T::Output>;
    fn lift(self) -> Self::Output {
        self.map(Lift::lift)
    }
}

impl<'t, S, T: Lift<'t, S>, E> Lift<'t, S> for Result<T, E> {
    type Output = Result<T::Output, E>;
    fn lift(self) -> Self::Output {
        self.map(Lift::lift)
    }
}

macro_rules! lift_tuple {
    ($(($($t:ident $v:ident),+))*) => {$(
        impl<'t, S, $($t: Lift<'t, S>),+> Lift<'t, S> for ($($t,)+) {
            type Output = ($($t::Output,)+);
            fn lift(self) -> Self::Output {
                let ($($v,)+) = self;
                ($($v.lift(),)+)
            }
        }
    )*};
}
lift_tuple! {
    (A a)
    (A a, B b)
    (A a, B b, C c)
    (A a, B b, C c, D d)
    (A a, B b, C c, D d, E e)
    (A a, B b, C c, D d, E e, F f)
}

/// Converts an argument of a call between `#[differentiate]` functions to the
/// callee's parameter type in its recording pass.
#[diagnostic::on_unimplemented(
    message = "this argument cannot be passed to the differentiated callee's parameter of type `{Target}`",
    label = "found `{Self}`",
    note = "an argument that depends on a differentiated input can only go to a parameter the callee differentiates (f64/f32, slices, Vecs and arrays of them without #[no_grad]); a constant argument is converted as needed"
)]
pub trait Arg<Target> {
    /// Converts.
    fn arg(self) -> Target;
}

/// Converts `value` to the parameter type the call expects.
#[inline(always)]
pub fn arg<T: Arg<U>, U>(value: T) -> U {
    value.arg()
}

#[diagnostic::do_not_recommend]
impl<T> Arg<T> for T {
    #[inline(always)]
    fn arg(self) -> T {
        self
    }
}

#[diagnostic::do_not_recommend]
impl<'t, S: Scalar> Arg<Real<'t, S>> for &Real<'t, S> {
    #[inline(always)]
    fn arg(self) -> Real<'t, S> {
        *self
    }
}

#[diagnostic::do_not_recommend]
impl<'t, S: Scalar> Arg<Real<'t, S>> for &mut Real<'t, S> {
    #[inline(always)]
    fn arg(self) -> Real<'t, S> {
        *self
    }
}

/// Borrowed dual values for a `&[f64]` parameter.
#[diagnostic::do_not_recommend]
impl<'a, 't, S: Scalar> Arg<Cow<'a, [Real<'t, S>]>> for &'a [Real<'t, S>] {
    #[inline(always)]
    fn arg(self) -> Cow<'a, [Real<'t, S>]> {
        Cow::Borrowed(self)
    }
}
#[diagnostic::do_not_recommend]
impl<'a, 't, S: Scalar> Arg<Cow<'a, [Real<'t, S>]>> for &'a mut [Real<'t, S>] {
    #[inline(always)]
    fn arg(self) -> Cow<'a, [Real<'t, S>]> {
        Cow::Borrowed(self)
    }
}
#[diagnostic::do_not_recommend]
impl<'a, 't, S: Scalar> Arg<Cow<'a, [Real<'t, S>]>> for &'a Vec<Real<'t, S>> {
    #[inline(always)]
    fn arg(self) -> Cow<'a, [Real<'t, S>]> {
        Cow::Borrowed(self)
    }
}
#[diagnostic::do_not_recommend]
impl<'a, 't, S: Scalar> Arg<Cow<'a, [Real<'t, S>]>> for &'a mut Vec<Real<'t, S>> {
    #[inline(always)]
    fn arg(self) -> Cow<'a, [Real<'t, S>]> {
        Cow::Borrowed(self)
    }
}
#[diagnostic::do_not_recommend]
impl<'a, 't, S: Scalar, const N: usize> Arg<Cow<'a, [Real<'t, S>]>> for &'a [Real<'t, S>; N] {
    #[inline(always)]
    fn arg(self) -> Cow<'a, [Real<'t, S>]> {
        Cow::Borrowed(self)
    }
}

/// A reference to a reference (`&w` for a `w: &[f64]`), as rustc's
/// auto-deref would pass it.
#[diagnostic::do_not_recommend]
impl<'a, 'b: 'a, 't, S: Scalar, T: ?Sized> Arg<Cow<'a, [Real<'t, S>]>> for &'a &'b T
where
    &'a T: Arg<Cow<'a, [Real<'t, S>]>>,
{
    #[inline(always)]
    fn arg(self) -> Cow<'a, [Real<'t, S>]> {
        let inner: &'a T = self;
        inner.arg()
    }
}
#[diagnostic::do_not_recommend]
impl<'a, 'b: 'a, 't, S: Scalar, T: ?Sized> Arg<Real<'t, S>> for &'a &'b T
where
    &'a T: Arg<Real<'t, S>>,
{
    #[inline(always)]
    fn arg(self) -> Real<'t, S> {
        let inner: &'a T = self;
        inner.arg()
    }
}

/// Deref coercions rustc would apply to a direct call: `&Vec<T>` and
/// `&[T; N]` for a `&[T]` parameter (constant data, typically).
#[diagnostic::do_not_recommend]
impl<'a, T> Arg<&'a [T]> for &'a Vec<T> {
    #[inline(always)]
    fn arg(self) -> &'a [T] {
        self
    }
}
#[diagnostic::do_not_recommend]
impl<'a, T, const N: usize> Arg<&'a [T]> for &'a [T; N] {
    #[inline(always)]
    fn arg(self) -> &'a [T] {
        self
    }
}
#[diagnostic::do_not_recommend]
impl<'a> Arg<&'a str> for &'a String {
    #[inline(always)]
    fn arg(self) -> &'a str {
        self
    }
}

/// A buffer of dual values for a `&mut [f64]` parameter.
#[diagnostic::do_not_recommend]
impl<'a, T> Arg<&'a mut [T]> for &'a mut Vec<T> {
    #[inline(always)]
    fn arg(self) -> &'a mut [T] {
        self
    }
}
#[diagnostic::do_not_recommend]
impl<'a, T, const N: usize> Arg<&'a mut [T]> for &'a mut [T; N] {
    #[inline(always)]
    fn arg(self) -> &'a mut [T] {
        self
    }
}

/// Borrowed dual values for a `&Vec<f64>` parameter.
#[diagnostic::do_not_recommend]
impl<'a, 't, S: Scalar> Arg<Cow<'a, Vec<Real<'t, S>>>> for &'a Vec<Real<'t, S>> {
    #[inline(always)]
    fn arg(self) -> Cow<'a, Vec<Real<'t, S>>> {
        Cow::Borrowed(self)
    }
}
#[diagnostic::do_not_recommend]
impl<'a, 't, S: Scalar> Arg<Cow<'a, Vec<Real<'t, S>>>> for &'a mut Vec<Real<'t, S>> {
    #[inline(always)]
    fn arg(self) -> Cow<'a, Vec<Real<'t, S>>> {
        Cow::Borrowed(self)
    }
}

/// Borrowed dual values for a `&[f64; N]` parameter.
#[diagnostic::do_not_recommend]
impl<'a, 't, S: Scalar, const N: usize> Arg<Cow<'a, [Real<'t, S>; N]>> for &'a [Real<'t, S>; N] {
    #[inline(always)]
    fn arg(self) -> Cow<'a, [Real<'t, S>; N]> {
        Cow::Borrowed(self)
    }
}
#[diagnostic::do_not_recommend]
impl<'a, 't, S: Scalar, const N: usize> Arg<Cow<'a, [Real<'t, S>; N]>>
    for &'a mut [Real<'t, S>; N]
{
    #[inline(always)]
    fn arg(self) -> Cow<'a, [Real<'t, S>; N]> {
        Cow::Borrowed(self)
    }
}

macro_rules! constant_arguments {
    ($($p:ident)*) => {$(
        #[diagnostic::do_not_recommend]
        impl<'t, S: Scalar<Prim = $p>> Arg<Real<'t, S>> for $p {
            #[inline(always)]
            fn arg(self) -> Real<'t, S> {
                Real::from_prim(self)
            }
        }
        #[diagnostic::do_not_recommend]
        impl<'t, S: Scalar<Prim = $p>> Arg<Real<'t, S>> for &$p {
            #[inline(always)]
            fn arg(self) -> Real<'t, S> {
                Real::from_prim(*self)
            }
        }
        #[diagnostic::do_not_recommend]
        impl<'a, 't, S: Scalar<Prim = $p>> Arg<Cow<'a, [Real<'t, S>]>> for &[$p] {
            fn arg(self) -> Cow<'a, [Real<'t, S>]> {
                Cow::Owned(self.iter().map(|&x| Real::from_prim(x)).collect())
            }
        }
        #[diagnostic::do_not_recommend]
        impl<'a, 't, S: Scalar<Prim = $p>> Arg<Cow<'a, [Real<'t, S>]>> for &mut [$p] {
            fn arg(self) -> Cow<'a, [Real<'t, S>]> {
                Cow::Owned(self.iter().map(|&x| Real::from_prim(x)).collect())
            }
        }
        #[diagnostic::do_not_recommend]
        impl<'a, 't, S: Scalar<Prim = $p>> Arg<Cow<'a, [Real<'t, S>]>> for &Vec<$p> {
            fn arg(self) -> Cow<'a, [Real<'t, S>]> {
                Cow::Owned(self.iter().map(|&x| Real::from_prim(x)).collect())
            }
        }
        #[diagnostic::do_not_recommend]
        impl<'a, 't, S: Scalar<Prim = $p>, const N: usize> Arg<Cow<'a, [Real<'t, S>]>> for &[$p; N] {
            fn arg(self) -> Cow<'a, [Real<'t, S>]> {
                Cow::Owned(self.iter().map(|&x| Real::from_prim(x)).collect())
            }
        }
        #[diagnostic::do_not_recommend]
        impl<'a, 't, S: Scalar<Prim = $p>> Arg<Cow<'a, Vec<Real<'t, S>>>> for &Vec<$p> {
            fn arg(self) -> Cow<'a, Vec<Real<'t, S>>> {
                Cow::Owned(self.iter().map(|&x| Real::from_prim(x)).collect())
            }
        }
        #[diagnostic::do_not_recommend]
        impl<'a, 't, S: Scalar<Prim = $p>, const N: usize> Arg<Cow<'a, [Real<'t, S>; N]>> for &[$p; N] {
            fn arg(self) -> Cow<'a, [Real<'t, S>; N]> {
                Cow::Owned(self.map(Real::from_prim))
            }
        }
    )*};
}
constant_arguments!(f64 f32);

/// The machine value of a real, for `as` casts in the user's code.
pub trait Primal {
    /// `f64` or `f32`.
    type Prim;
    /// The value without its derivative.
    fn primal(self) -> Self::Prim;
}

/// The machine value of `value` (for `value as usize` and the like).
#[inline(always)]
pub fn primal<T: Primal>(value: T) -> T::Prim {
    value.primal()
}

impl<S: Scalar> Primal for Real<'_, S> {
    type Prim = S::Prim;
    #[inline(always)]
    fn primal(self) -> S::Prim {
        self.to_prim()
    }
}

impl<S: Scalar> Primal for &Real<'_, S> {
    type Prim = S::Prim;
    #[inline(always)]
    fn primal(self) -> S::Prim {
        self.to_prim()
    }
}

macro_rules! primal_discrete {
    ($($t:ty),*) => {$(
        impl Primal for $t {
            type Prim = $t;
            #[inline(always)]
            fn primal(self) -> $t {
                self
            }
        }
    )*};
}
primal_discrete!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, bool, char);

impl Primal for f64 {
    type Prim = f64;
    #[inline(always)]
    fn primal(self) -> f64 {
        self
    }
}

impl Primal for f32 {
    type Prim = f32;
    #[inline(always)]
    fn primal(self) -> f32 {
        self
    }
}

/// A constant operand of fused code: a machine float of the function's
/// precision, converted to the tape's scalar. Deliberately not implemented
/// for dual values: if an operand the activity analysis judged constant were
/// a dual value, this fails to compile instead of dropping its derivative.
#[diagnostic::on_unimplemented(
    message = "deltad expected a constant real here, found `{Self}`",
    label = "deltad judged this operand constant"
)]
pub trait Constant<S> {
    /// The value as a scalar of the tape.
    fn constant_value(self) -> S;
}

/// The value of the constant operand `value`.
#[inline(always)]
pub fn constant<S, T: Constant<S>>(value: T) -> S {
    value.constant_value()
}

macro_rules! constant_operands {
    ($($p:ident)*) => {$(
        impl<S: Scalar<Prim = $p>> Constant<S> for $p {
            #[inline(always)]
            fn constant_value(self) -> S {
                S::from_prim(self)
            }
        }
        impl<S: Scalar<Prim = $p>> Constant<S> for &$p {
            #[inline(always)]
            fn constant_value(self) -> S {
                S::from_prim(*self)
            }
        }
    )*};
}
constant_operands!(f64 f32);

/// The operand of a cast to the function's float that the recording pass
/// judged differentiated: a dual value as it is, or, where it was plain data
/// after all (an integer field of a value of a user type, whose type the
/// macro cannot see: `p.n as f64`), its value as a constant.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be cast to a real of this function's precision",
    label = "cast to the function's float here"
)]
pub trait CastReal<'t, S> {
    /// The value as a dual value.
    fn cast_real(self) -> Real<'t, S>;
}

/// `value as f64` (or `f32`) in a recording pass (`CastReal`).
#[inline(always)]
pub fn cast_real<'t, S, T: CastReal<'t, S>>(value: T) -> Real<'t, S> {
    value.cast_real()
}

impl<'t, S: Scalar> CastReal<'t, S> for Real<'t, S> {
    #[inline(always)]
    fn cast_real(self) -> Real<'t, S> {
        self
    }
}

macro_rules! cast_reals {
    ($($t:ident)*) => {$(
        impl<'t, S: Scalar> CastReal<'t, S> for $t {
            #[inline(always)]
            fn cast_real(self) -> Real<'t, S> {
                Real::constant(S::from_prim(<S::Prim as Primitive>::from_f64(self as f64)))
            }
        }
    )*};
}
cast_reals!(f64 f32 i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize);

/// A field of a `Grad` literal of dual values (a nested `jvp`'s tangent)
/// given by a constant: a real, or a `Vec` or array of them, lifted to
/// dual values; a value already of the field's type as it is. (Separate
/// from `Arg`, whose conversions of owned buffers would make calls to
/// generic parameters ambiguous.)
pub trait GradField<Target> {
    /// Converts.
    fn grad_field(self) -> Target;
}

/// Converts a `Grad` field's value to the field's type.
#[inline(always)]
pub fn grad_field<T: GradField<U>, U>(value: T) -> U {
    value.grad_field()
}

#[diagnostic::do_not_recommend]
impl<T> GradField<T> for T {
    #[inline(always)]
    fn grad_field(self) -> T {
        self
    }
}

macro_rules! constant_grad_fields {
    ($($p:ident)*) => {$(
        #[diagnostic::do_not_recommend]
        impl<'t, S: Scalar<Prim = $p>> GradField<Real<'t, S>> for $p {
            #[inline(always)]
            fn grad_field(self) -> Real<'t, S> {
                Real::from_prim(self)
            }
        }
        #[diagnostic::do_not_recommend]
        impl<'t, S: Scalar<Prim = $p>> GradField<Vec<Real<'t, S>>> for Vec<$p> {
            fn grad_field(self) -> Vec<Real<'t, S>> {
                self.into_iter().map(Real::from_prim).collect()
            }
        }
        #[diagnostic::do_not_recommend]
        impl<'t, S: Scalar<Prim = $p>, const N: usize> GradField<[Real<'t, S>; N]> for [$p; N] {
            fn grad_field(self) -> [Real<'t, S>; N] {
                self.map(Real::from_prim)
            }
        }
    )*};
}
constant_grad_fields!(f64 f32);

/// An argument of a call through `deltad::generic!` (a function generic
/// over its number type, called on dual values): every real becomes the
/// same dual type (a machine float, or a buffer of them, constants), dual
/// values and discrete values stay as they are. The converted arguments are
/// held by the call site and passed on through [`GenericPass`].
#[diagnostic::on_unimplemented(
    message = "`deltad::generic!` cannot pass `{Self}` to a function generic over its number type",
    label = "this argument",
    note = "it passes reals, slices, `Vec`s and arrays of reals (differentiated or constant), and integers or `bool`s"
)]
pub trait GenericArg<'t, S> {
    /// What the call site holds.
    type Output: GenericPass;
    /// Converts.
    fn generic_arg(self) -> Self::Output;
}

/// Converts an argument of a call through `deltad::generic!` on `tape`'s
/// scalar type (the tape only fixes the type).
#[inline(always)]
pub fn generic_arg<'t, S: Scalar, T: GenericArg<'t, S>>(_tape: &'t Tape<S>, value: T) -> T::Output {
    value.generic_arg()
}

/// What a converted argument of `deltad::generic!` gives the function: a
/// dual value, or a borrow of a buffer of them.
pub trait GenericPass {
    /// The argument as the function takes it.
    type Passed<'b>
    where
        Self: 'b;
    /// Passes it.
    fn pass(&self) -> Self::Passed<'_>;
}

impl<'t, S: Scalar> GenericArg<'t, S> for Real<'t, S> {
    type Output = Real<'t, S>;
    #[inline(always)]
    fn generic_arg(self) -> Real<'t, S> {
        self
    }
}

impl<'t, S: Scalar> GenericArg<'t, S> for &Real<'t, S> {
    type Output = Real<'t, S>;
    #[inline(always)]
    fn generic_arg(self) -> Real<'t, S> {
        *self
    }
}

impl<'a, 't, S: Scalar> GenericArg<'t, S> for &'a [Real<'t, S>] {
    type Output = &'a [Real<'t, S>];
    #[inline(always)]
    fn generic_arg(self) -> &'a [Real<'t, S>] {
        self
    }
}

impl<'a, 't, S: Scalar> GenericArg<'t, S> for &'a Vec<Real<'t, S>> {
    type Output = &'a [Real<'t, S>];
    #[inline(always)]
    fn generic_arg(self) -> &'a [Real<'t, S>] {
        self.as_slice()
    }
}

impl<'a, 't, S: Scalar, const N: usize> GenericArg<'t, S> for &'a [Real<'t, S>; N] {
    type Output = &'a [Real<'t, S>; N];
    #[inline(always)]
    fn generic_arg(self) -> &'a [Real<'t, S>; N] {
        self
    }
}

macro_rules! generic_machine_float {
    ($($p:ident)*) => {$(
        impl<'t, S: Scalar<Prim = $p> + 't> GenericArg<'t, S> for $p {
            type Output = Real<'t, S>;
            #[inline(always)]
            fn generic_arg(self) -> Real<'t, S> {
                Real::from_prim(self)
            }
        }
        /// Constants, as dual values the call site holds.
        impl<'t, S: Scalar<Prim = $p> + 't> GenericArg<'t, S> for &[$p] {
            type Output = Vec<Real<'t, S>>;
            fn generic_arg(self) -> Vec<Real<'t, S>> {
                self.iter().map(|&v| Real::from_prim(v)).collect()
            }
        }
        impl<'t, S: Scalar<Prim = $p> + 't> GenericArg<'t, S> for &Vec<$p> {
            type Output = Vec<Real<'t, S>>;
            fn generic_arg(self) -> Vec<Real<'t, S>> {
                self.as_slice().generic_arg()
            }
        }
        impl<'t, S: Scalar<Prim = $p> + 't, const N: usize> GenericArg<'t, S> for &[$p; N] {
            type Output = [Real<'t, S>; N];
            fn generic_arg(self) -> [Real<'t, S>; N] {
                self.map(Real::from_prim)
            }
        }
    )*};
}
generic_machine_float!(f64 f32);

macro_rules! generic_discrete {
    ($($t:ty),*) => {$(
        impl<'t, S> GenericArg<'t, S> for $t {
            type Output = $t;
            #[inline(always)]
            fn generic_arg(self) -> $t {
                self
            }
        }
        impl GenericPass for $t {
            type Passed<'b> = $t;
            #[inline(always)]
            fn pass(&self) -> $t {
                *self
            }
        }
    )*};
}
generic_discrete!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, bool);

/// A number a call through `deltad::generic!` or `deltad::generic_fwd!`
/// passes on: the tape's value, or the forward chunk's.
pub trait GenericNumber: Copy {}

impl<S: Scalar> GenericNumber for Real<'_, S> {}
impl<S: Scalar, const N: usize> GenericNumber for crate::dual_vec::DualVec<S, N> {}

impl<E: GenericNumber> GenericPass for E {
    type Passed<'b>
        = E
    where
        Self: 'b;
    #[inline(always)]
    fn pass(&self) -> E {
        *self
    }
}

impl<'a, E: GenericNumber> GenericPass for &'a [E] {
    type Passed<'b>
        = &'a [E]
    where
        Self: 'b;
    #[inline(always)]
    fn pass(&self) -> &'a [E] {
        self
    }
}

impl<'a, E: GenericNumber, const N: usize> GenericPass for &'a [E; N] {
    type Passed<'b>
        = &'a [E; N]
    where
        Self: 'b;
    #[inline(always)]
    fn pass(&self) -> &'a [E; N] {
        self
    }
}

impl<E: GenericNumber> GenericPass for Vec<E> {
    type Passed<'b>
        = &'b [E]
    where
        Self: 'b;
    #[inline(always)]
    fn pass(&self) -> &[E] {
        self
    }
}

impl<E: GenericNumber, const N: usize> GenericPass for [E; N] {
    type Passed<'b>
        = &'b [E; N]
    where
        Self: 'b;
    #[inline(always)]
    fn pass(&self) -> &[E; N] {
        self
    }
}
