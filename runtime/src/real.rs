//! The dual value the generated recording pass computes with.

use core::cmp::Ordering;
use core::fmt;

use crate::scalar::{Primitive, Scalar};
use crate::tape::{DeltaId, Tape};

/// A real number together with its Delta: the paper's dual number `(r, d)`
/// with the invariant that `d` is `Zero` or `Var id` (seed 004, §5.2).
///
/// A constant (`Zero` delta) has no tape; an active value knows the tape it
/// was recorded on and its binding id there. Copying a `Real` copies a
/// reference to the shared binding, never the computation behind it, so
/// sharing is preserved however often a value is used.
///
/// The generated code uses `Real` where the user's code has `f64`/`f32` that
/// depend on a differentiated input. Arithmetic and the `f64` methods are
/// overloaded, so the user's code runs unchanged on it.
///
/// ```
/// use deltad::{Real, Tape};
///
/// let tape = Tape::<f64>::new();
/// let x = Real::input(&tape, 0.5);
/// let c = Real::constant(2.0); // no tape: never recorded
/// let y = (c * x).exp();
/// assert!((y.value() - 1.0_f64.exp()).abs() < 1e-12);
/// assert!(y.is_active() && !c.is_active());
///
/// let mut adjoints = Vec::new();
/// tape.gradient_into(y.id(), 1.0, &mut adjoints);
/// assert!((adjoints[0] - 2.0 * 1.0_f64.exp()).abs() < 1e-12); // d/dx e^(2x) at 0.5
/// ```
#[derive(Clone, Copy)]
pub struct Real<'t, S> {
    pub(crate) value: S,
    pub(crate) id: DeltaId,
    pub(crate) tape: Option<&'t Tape<S>>,
}

/// Id stored in constants; never read, since constants have no tape.
const NO_ID: DeltaId = DeltaId(u32::MAX);

impl<'t, S: Scalar> Real<'t, S> {
    /// A constant: its derivative with respect to everything is zero.
    #[inline(always)]
    pub fn constant(value: S) -> Self {
        Real {
            value,
            id: NO_ID,
            tape: None,
        }
    }

    /// A constant from a machine float.
    #[inline(always)]
    pub fn from_prim(value: S::Prim) -> Self {
        Self::constant(S::from_prim(value))
    }

    /// A fresh independent variable on `tape` (the paper's `initVars`).
    #[inline]
    pub fn input(tape: &'t Tape<S>, value: S) -> Self {
        Real {
            value,
            id: tape.push_input(),
            tape: Some(tape),
        }
    }

    /// A dual value for the existing binding `id` of `tape`.
    #[inline(always)]
    pub(crate) fn with_id(tape: &'t Tape<S>, value: S, id: DeltaId) -> Self {
        Real {
            value,
            id,
            tape: Some(tape),
        }
    }

    /// The value (the primal).
    #[inline(always)]
    pub fn value(&self) -> S {
        self.value
    }

    /// The machine value at the bottom of all nesting levels.
    #[inline(always)]
    pub fn to_prim(&self) -> S::Prim {
        self.value.to_prim()
    }

    /// The binding this value refers to, or `None` for a constant.
    #[inline(always)]
    pub fn id(&self) -> Option<DeltaId> {
        self.tape.map(|_| self.id)
    }

    /// The binding id, or `NO_ID` for a constant (for compact storage).
    #[inline(always)]
    pub fn raw_id(&self) -> u32 {
        match self.tape {
            Some(_) => self.id.0,
            None => crate::loops::NO_ID,
        }
    }

    /// The tape this value was recorded on, or `None` for a constant.
    #[inline(always)]
    pub fn tape(&self) -> Option<&'t Tape<S>> {
        self.tape
    }

    /// True if the value depends on an input (its delta is not `Zero`).
    #[inline(always)]
    pub fn is_active(&self) -> bool {
        self.tape.is_some()
    }

    /// A value with the same delta as `self` (local derivative exactly 1).
    #[inline(always)]
    pub(crate) fn same_delta(self, value: S) -> Self {
        Real { value, ..self }
    }

    /// `value = f(self)` with local derivative `derivative()`: one binding
    /// with one term, or nothing for a constant.
    #[inline(always)]
    pub(crate) fn unary(self, value: S, derivative: impl FnOnce() -> S) -> Self {
        match self.tape {
            None => Real::constant(value),
            Some(tape) => Real {
                value,
                id: tape.push1(derivative(), self.id),
                tape: Some(tape),
            },
        }
    }

    /// `value = f(self, other)` with partial derivatives `d_self()` and
    /// `d_other()`: one binding with a term per active operand.
    #[inline(always)]
    pub(crate) fn binary(
        self,
        other: Self,
        value: S,
        d_self: impl FnOnce() -> S,
        d_other: impl FnOnce() -> S,
    ) -> Self {
        match (self.tape, other.tape) {
            (Some(tape), Some(other_tape)) => {
                debug_assert!(
                    core::ptr::eq(tape, other_tape),
                    "deltad: dual values of two different tapes were combined"
                );
                Real {
                    value,
                    id: tape.push2(d_self(), self.id, d_other(), other.id),
                    tape: Some(tape),
                }
            }
            (Some(_), None) => self.unary(value, d_self),
            (None, Some(_)) => other.unary(value, d_other),
            (None, None) => Real::constant(value),
        }
    }

    /// `value = f(self, a, b)` with three partial derivatives.
    #[inline]
    pub(crate) fn ternary(
        self,
        a: Self,
        b: Self,
        value: S,
        partials: impl FnOnce() -> (S, S, S),
    ) -> Self {
        let Some(tape) = self.tape.or(a.tape).or(b.tape) else {
            return Real::constant(value);
        };
        let (d_self, d_a, d_b) = partials();
        let id = tape.push_some([(d_self, self.id()), (d_a, a.id()), (d_b, b.id())]);
        Real {
            value,
            id: id.unwrap_or(NO_ID),
            tape: Some(tape),
        }
    }

    /// The dual value of a fused computation: `value` with the given partial
    /// derivative with respect to each operand, recorded as one binding.
    #[inline(always)]
    pub fn fused<const N: usize>(value: S, operands: [(Self, S); N]) -> Self {
        let mut tape = None;
        #[allow(clippy::needless_range_loop)]
        for i in 0..N {
            if operands[i].0.tape.is_some() {
                tape = operands[i].0.tape;
                break;
            }
        }
        let Some(tape) = tape else {
            return Real::constant(value);
        };
        let mut terms = [(S::zero(), None); N];
        #[allow(clippy::needless_range_loop)]
        for i in 0..N {
            let (operand, partial) = operands[i];
            terms[i] = (partial, operand.id());
        }
        Real {
            value,
            id: tape.append_binding(terms),
            tape: Some(tape),
        }
    }
}

/// `Real::fused1` .. `Real::fused8`: a fused computation with that many
/// operands, straight-line (the general [`Real::fused`] loops over an array).
macro_rules! fused_arity {
    ($($name:ident: $($operand:ident $partial:ident),+;)*) => {
        impl<'t, S: Scalar> Real<'t, S> {
            $(
                /// The dual value of a fused computation: `value` with the
                /// given partial derivative with respect to each operand.
                #[inline(always)]
                #[allow(clippy::too_many_arguments)]
                pub fn $name(value: S, $(($operand, $partial): (Self, S)),+) -> Self {
                    let Some(tape) = None$(.or($operand.tape))+ else {
                        return Real::constant(value);
                    };
                    let id = tape.append(|bindings| {
                        let mut writer = bindings.open([$(stringify!($operand)),+].len());
                        $(
                            if $operand.tape.is_some() {
                                // SAFETY: `open` reserved one term per operand.
                                unsafe { writer.term($partial, $operand.id) };
                            }
                        )+
                        bindings.close(writer)
                    });
                    Real { value, id, tape: Some(tape) }
                }
            )*
        }
    };
}

fused_arity! {
    fused1: a da;
    fused2: a da, b db;
    fused3: a da, b db, c dc;
    fused4: a da, b db, c dc, d dd;
    fused5: a da, b db, c dc, d dd, e de;
    fused6: a da, b db, c dc, d dd, e de, f df;
    fused7: a da, b db, c dc, d dd, e de, f df, g dg;
    fused8: a da, b db, c dc, d dd, e de, f df, g dg, h dh;
}

impl<S: Scalar> fmt::Debug for Real<'_, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.id() {
            Some(id) => write!(f, "Real({:?} @ {})", self.value, id.index()),
            None => write!(f, "Real({:?})", self.value),
        }
    }
}

impl<S: Scalar> fmt::Display for Real<'_, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.value, f)
    }
}

impl<S: Scalar> Default for Real<'_, S> {
    fn default() -> Self {
        Real::constant(S::zero())
    }
}

impl<S: Scalar> PartialEq for Real<'_, S> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<S: Scalar> PartialOrd for Real<'_, S> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        self.value.partial_cmp(&other.value)
    }
}

macro_rules! compare_with_machine_float {
    ($($p:ident)*) => {$(
        impl<S: Scalar<Prim = $p>> PartialEq<$p> for Real<'_, S> {
            fn eq(&self, other: &$p) -> bool {
                self.value == S::from_prim(*other)
            }
        }
        impl<S: Scalar<Prim = $p>> PartialEq<Real<'_, S>> for $p {
            fn eq(&self, other: &Real<'_, S>) -> bool {
                S::from_prim(*self) == other.value
            }
        }
        impl<S: Scalar<Prim = $p>> PartialOrd<$p> for Real<'_, S> {
            fn partial_cmp(&self, other: &$p) -> Option<Ordering> {
                self.value.partial_cmp(&S::from_prim(*other))
            }
        }
        impl<S: Scalar<Prim = $p>> PartialOrd<Real<'_, S>> for $p {
            fn partial_cmp(&self, other: &Real<'_, S>) -> Option<Ordering> {
                S::from_prim(*self).partial_cmp(&other.value)
            }
        }
        impl<'t, S: Scalar<Prim = $p>> From<$p> for Real<'t, S> {
            fn from(value: $p) -> Self {
                Real::from_prim(value)
            }
        }
    )*};
}
compare_with_machine_float!(f64 f32);

impl<'t, S: Scalar> Real<'t, S> {
    /// True if the value is NaN.
    pub fn is_nan(&self) -> bool {
        self.to_prim().is_nan()
    }
    /// True if the value is neither infinite nor NaN.
    pub fn is_finite(&self) -> bool {
        self.to_prim().is_finite()
    }
    /// True if the value is positive or negative infinity.
    pub fn is_infinite(&self) -> bool {
        self.to_prim().is_infinite()
    }
    /// True if the value is neither zero, infinite, subnormal nor NaN.
    pub fn is_normal(&self) -> bool {
        self.to_prim().is_normal()
    }
    /// True if the value is subnormal.
    pub fn is_subnormal(&self) -> bool {
        self.to_prim().is_subnormal()
    }
    /// True if the sign bit is clear.
    pub fn is_sign_positive(&self) -> bool {
        !self.to_prim().is_sign_negative()
    }
    /// True if the sign bit is set.
    pub fn is_sign_negative(&self) -> bool {
        self.to_prim().is_sign_negative()
    }
    /// IEEE total order of the values, as `f64::total_cmp`.
    pub fn total_cmp(&self, other: &Self) -> Ordering {
        self.to_prim().total_cmp(&other.to_prim())
    }
}
