//! Vector primitives: functions of a whole slice recorded as *one* binding
//! with a term per element (the paper's §8.2 primitives with many
//! arguments), instead of a binding per operation.
//!
//! Each primitive is a plain generic function (what the user's function
//! calls) and, under the same name, a module with the `__record` function
//! `#[differentiate]` calls in the recording pass, exactly as for a
//! differentiated user function. Both compute the value with the same
//! operations in the same order, so the value a gradient call reports is the
//! plain function's, bit for bit. Slice operands may mix dual values and
//! plain numbers (constants); nothing is allocated in steady state (the
//! terms are collected in the tape's scratch buffers).

use crate::convert::Arg;
use crate::loops::NO_ID;
use crate::real::Real;
use crate::scalar::{Primitive, Scalar};
use crate::tape::Tape;

/// A slice operand of a vector primitive in a recording pass.
pub enum Operand<'a, 't, S: Scalar> {
    /// Dual values.
    Dual(&'a [Real<'t, S>]),
    /// Plain numbers: constants.
    Plain(&'a [S::Prim]),
}

impl<'t, S: Scalar> Operand<'_, 't, S> {
    fn len(&self) -> usize {
        match self {
            Operand::Dual(values) => values.len(),
            Operand::Plain(values) => values.len(),
        }
    }

    #[inline(always)]
    fn value(&self, i: usize) -> S {
        match self {
            Operand::Dual(values) => values[i].value(),
            Operand::Plain(values) => S::from_prim(values[i]),
        }
    }

    #[inline(always)]
    fn id(&self, i: usize) -> u32 {
        match self {
            Operand::Dual(values) => values[i].raw_id(),
            Operand::Plain(_) => NO_ID,
        }
    }

    /// The tape of the first dual value that has one.
    fn tape(&self) -> Option<&'t Tape<S>> {
        match self {
            Operand::Dual(values) => values.iter().find_map(Real::tape),
            Operand::Plain(_) => None,
        }
    }
}

macro_rules! dual_operands {
    ($($source:ty),*) => {$(
        #[diagnostic::do_not_recommend]
        impl<'a, 't, S: Scalar> Arg<Operand<'a, 't, S>> for $source {
            #[inline(always)]
            fn arg(self) -> Operand<'a, 't, S> {
                Operand::Dual(&self[..])
            }
        }
    )*};
}
dual_operands!(
    &'a [Real<'t, S>],
    &'a mut [Real<'t, S>],
    &'a Vec<Real<'t, S>>,
    &'a mut Vec<Real<'t, S>>,
    &'a &'a [Real<'t, S>]
);

#[diagnostic::do_not_recommend]
impl<'a, 't, S: Scalar, const N: usize> Arg<Operand<'a, 't, S>> for &'a [Real<'t, S>; N] {
    #[inline(always)]
    fn arg(self) -> Operand<'a, 't, S> {
        Operand::Dual(&self[..])
    }
}

macro_rules! plain_operands {
    ($($p:ident)*) => {$(
        #[diagnostic::do_not_recommend]
        impl<'a, 't, S: Scalar<Prim = $p>> Arg<Operand<'a, 't, S>> for &'a [$p] {
            #[inline(always)]
            fn arg(self) -> Operand<'a, 't, S> {
                Operand::Plain(self)
            }
        }
        #[diagnostic::do_not_recommend]
        impl<'a, 't, S: Scalar<Prim = $p>> Arg<Operand<'a, 't, S>> for &'a Vec<$p> {
            #[inline(always)]
            fn arg(self) -> Operand<'a, 't, S> {
                Operand::Plain(self)
            }
        }
        #[diagnostic::do_not_recommend]
        impl<'a, 't, S: Scalar<Prim = $p>> Arg<Operand<'a, 't, S>> for &'a &'a [$p] {
            #[inline(always)]
            fn arg(self) -> Operand<'a, 't, S> {
                Operand::Plain(self)
            }
        }
        #[diagnostic::do_not_recommend]
        impl<'a, 't, S: Scalar<Prim = $p>, const N: usize> Arg<Operand<'a, 't, S>> for &'a [$p; N] {
            #[inline(always)]
            fn arg(self) -> Operand<'a, 't, S> {
                Operand::Plain(self)
            }
        }
    )*};
}
plain_operands!(f64 f32);

/// Records one binding whose terms are `terms(push)`'s pushes (coefficient,
/// id; constants' `NO_ID` are skipped), on `tape`, or returns a constant if
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

/// Σ v_i over `len` values, left to right.
#[inline(always)]
fn sum_of<S: Scalar>(len: usize, value: impl Fn(usize) -> S) -> S {
    // From -0.0, like the standard library's float `Sum`.
    (0..len).fold(-S::zero(), |total, i| total + value(i))
}

/// Σ a_i b_i, left to right.
#[inline(always)]
fn dot_of<S: Scalar>(len: usize, a: impl Fn(usize) -> S, b: impl Fn(usize) -> S) -> S {
    (0..len).fold(S::zero(), |total, i| total + a(i) * b(i))
}

/// ln Σ exp(v_i), shifted by the largest v_i so nothing overflows: the value
/// and the shift. An empty slice gives -∞; a largest value of ±∞ or NaN is
/// the value itself.
#[inline(always)]
fn log_sum_exp_of<S: Scalar>(len: usize, value: impl Fn(usize) -> S) -> S {
    let largest = shift_of(len, &value);
    if !largest.to_prim().is_finite() {
        return largest;
    }
    let total = sum_of(len, |i| (value(i) - largest).exp());
    total.ln() + largest
}

/// The shift of [`log_sum_exp_of`]: the largest value, or the first NaN
/// (-∞ for none).
#[inline(always)]
fn shift_of<S: Scalar>(len: usize, value: impl Fn(usize) -> S) -> S {
    let mut largest = S::from_prim(<S::Prim as Primitive>::from_f64(f64::NEG_INFINITY));
    for i in 0..len {
        let v = value(i);
        if v.to_prim() > largest.to_prim() || v.to_prim().is_nan() {
            largest = v;
        }
    }
    largest
}

/// The sum of the elements, as one binding with a term per element.
///
/// In a `#[differentiate]` function on the tape this records a single
/// binding (one term per differentiated element) however long the slice is;
/// a compiled adjoint adds the sum's adjoint to each element's directly;
/// elsewhere it is an ordinary sum, left to right.
///
/// ```
/// #[deltad::differentiate]
/// fn mean(x: &[f64]) -> f64 {
///     deltad::sum(x) / x.len() as f64
/// }
///
/// assert_eq!(deltad::sum(&[1.0, 2.0, 3.0]), 6.0);
/// assert_eq!(mean::grad(&[1.0, 2.0, 3.0, 4.0]).x, vec![0.25; 4]);
///
/// #[deltad::differentiate(tape)]
/// fn mean_on_tape(x: &[f64]) -> f64 {
///     deltad::sum(x) / x.len() as f64
/// }
/// assert_eq!(mean_on_tape::tape_stats(&[1.0; 100]).bindings, 102); // inputs, the sum, the division
/// ```
pub fn sum<P: Primitive>(values: &[P]) -> P {
    sum_of(values.len(), |i| values[i])
}

/// The dot product Σ a_i b_i, as one binding with a term per element.
///
/// Panics if the slices differ in length.
///
/// ```
/// #[deltad::differentiate]
/// fn score(w: &[f64], #[no_grad] x: &[f64]) -> f64 {
///     deltad::dot(w, x)
/// }
///
/// let x = [1.0, -2.0, 0.5];
/// assert_eq!(score(&[1.0, 1.0, 1.0], &x), -0.5);
/// assert_eq!(score::grad(&[1.0, 1.0, 1.0], &x).w, x.to_vec()); // ∂(w·x)/∂w = x
/// ```
pub fn dot<P: Primitive>(a: &[P], b: &[P]) -> P {
    assert_same_length(a.len(), b.len());
    dot_of(a.len(), |i| a[i], |i| b[i])
}

/// ln Σ exp(v_i), computed stably (shifted by the largest element), as one
/// binding whose terms are the softmax weights exp(v_i - value).
///
/// An empty slice gives -∞.
///
/// ```
/// #[deltad::differentiate]
/// fn lse(v: &[f64]) -> f64 {
///     deltad::log_sum_exp(v)
/// }
///
/// let v = [1000.0, 1000.0]; // no overflow: shifted by the largest element
/// assert!((lse(&v) - (1000.0 + 2.0_f64.ln())).abs() < 1e-12);
/// // the softmax weights, exp(v_i - value): 1/2 up to the rounding of value
/// assert!(lse::grad(&v).v.iter().all(|w| (w - 0.5).abs() < 1e-12));
/// ```
pub fn log_sum_exp<P: Primitive>(values: &[P]) -> P {
    log_sum_exp_of(values.len(), |i| values[i])
}

fn assert_same_length(a: usize, b: usize) {
    assert_eq!(a, b, "deltad::dot: the slices have different lengths");
}

/// The recording pass of [`sum()`], called by generated code.
#[doc(hidden)]
pub mod sum {
    use super::*;

    #[doc(hidden)]
    pub fn __record<'t, S: Scalar>(tape: &'t Tape<S>, values: Operand<'_, 't, S>) -> Real<'t, S> {
        let _ = tape;
        let value = sum_of(values.len(), |i| values.value(i));
        record(values.tape(), value, |push| {
            for i in 0..values.len() {
                push(S::one(), values.id(i));
            }
        })
    }
}

/// The recording pass of [`dot()`], called by generated code.
#[doc(hidden)]
pub mod dot {
    use super::*;

    #[doc(hidden)]
    pub fn __record<'t, S: Scalar>(
        tape: &'t Tape<S>,
        a: Operand<'_, 't, S>,
        b: Operand<'_, 't, S>,
    ) -> Real<'t, S> {
        let _ = tape;
        assert_same_length(a.len(), b.len());
        let value = dot_of(a.len(), |i| a.value(i), |i| b.value(i));
        record(a.tape().or(b.tape()), value, |push| {
            for i in 0..a.len() {
                push(b.value(i), a.id(i));
                push(a.value(i), b.id(i));
            }
        })
    }
}

/// The recording pass of [`log_sum_exp()`], called by generated code.
#[doc(hidden)]
pub mod log_sum_exp {
    use super::*;

    #[doc(hidden)]
    pub fn __record<'t, S: Scalar>(tape: &'t Tape<S>, values: Operand<'_, 't, S>) -> Real<'t, S> {
        let _ = tape;
        let value = log_sum_exp_of(values.len(), |i| values.value(i));
        if !value.to_prim().is_finite() {
            return Real::constant(value);
        }
        record(values.tape(), value, |push| {
            for i in 0..values.len() {
                push((values.value(i) - value).exp(), values.id(i));
            }
        })
    }
}

/// The vector primitives on the compiled path: values on any scalar (the
/// same operations in the same order as the plain functions), and their
/// adjoints added into sinks.
pub mod compiled {
    use super::{assert_same_length, dot_of, log_sum_exp_of, shift_of, sum_of};
    use crate::compiled::{Cotangent, SliceSink};
    use crate::scalar::{Primitive, Scalar};

    /// Σ v_i.
    #[inline]
    pub fn sum<S: Scalar>(values: &[S]) -> S {
        sum_of(values.len(), |i| values[i])
    }

    /// Σ a_i b_i.
    #[inline]
    pub fn dot<S: Scalar>(a: &[S], b: &[S]) -> S {
        assert_same_length(a.len(), b.len());
        dot_of(a.len(), |i| a[i], |i| b[i])
    }

    /// ln Σ exp(v_i).
    #[inline]
    pub fn log_sum_exp<S: Scalar>(values: &[S]) -> S {
        log_sum_exp_of(values.len(), |i| values[i])
    }

    /// Adds `adjoint` to the adjoint of each of `len` elements.
    #[inline]
    pub fn sum_adjoint<S: Scalar>(len: usize, sink: &mut impl SliceSink<S>, adjoint: S) {
        for i in 0..len {
            *sink.at(i) += adjoint;
        }
    }

    /// Adds `adjoint · b_i` to a's adjoints and `adjoint · a_i` to b's.
    #[inline]
    pub fn dot_adjoint<S: Scalar, A: Cotangent<S>>(
        a: &[S],
        b: &[S],
        sink_a: &mut impl SliceSink<A>,
        sink_b: &mut impl SliceSink<A>,
        adjoint: A,
    ) {
        for i in 0..a.len() {
            *sink_a.at(i) += adjoint * b[i];
            *sink_b.at(i) += adjoint * a[i];
        }
    }

    /// Adds `adjoint · exp(v_i - lse(v))` (the softmax weights) to the
    /// adjoints; nothing where the value is not finite (as on the tape).
    ///
    /// The weights are `exp(v_i - m) / Σ_j exp(v_j - m)` with `m` the
    /// largest `v_i`: no logarithm, and for up to `HELD_WEIGHTS` (32) values
    /// each exponential is taken once and held (a hand-written adjoint of
    /// a mixture takes each twice).
    #[inline]
    pub fn log_sum_exp_adjoint<S: Scalar, A: Cotangent<S>>(
        values: &[S],
        sink: &mut impl SliceSink<A>,
        adjoint: A,
    ) {
        let largest = shift_of(values.len(), |i| values[i]);
        if !Primitive::is_finite(largest.to_prim()) {
            return;
        }
        if values.len() <= HELD_WEIGHTS {
            let mut held = [S::zero(); HELD_WEIGHTS];
            for (h, &v) in held.iter_mut().zip(values) {
                *h = (v - largest).exp();
            }
            let scale = adjoint / sum_of(values.len(), |i| held[i]);
            for (i, &h) in held[..values.len()].iter().enumerate() {
                *sink.at(i) += scale * h;
            }
        } else {
            let scale = adjoint / sum_of(values.len(), |i| (values[i] - largest).exp());
            for (i, &v) in values.iter().enumerate() {
                *sink.at(i) += scale * (v - largest).exp();
            }
        }
    }

    /// How many exponentials [`log_sum_exp_adjoint`] holds on the machine
    /// stack (more are taken twice).
    const HELD_WEIGHTS: usize = 32;
}
