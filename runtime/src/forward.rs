//! The pieces of the generated forward-mode and second-order functions:
//! where input tangents come from, and reading values and tangents back.

use crate::differentiable::Differentiable;
use crate::dual::Dual;
use crate::real::Real;
use crate::scalar::{Primitive, Scalar};

/// The tangent of each input real, in input leaf order: a flat list (the
/// user's tangent, flattened: machine floats, or values of an enclosing
/// derivative for a `jvp` taken inside differentiated code), or a unit
/// vector (a Hessian row).
pub struct Seeds<E> {
    flat: Vec<E>,
    /// The unit vector's input, and its one and zero.
    unit: Option<(usize, E, E)>,
    next: usize,
}

impl<E: Copy> Seeds<E> {
    /// Tangents from a flat list, one per input real.
    pub fn from_flat(flat: Vec<E>) -> Self {
        Seeds {
            flat,
            unit: None,
            next: 0,
        }
    }

    /// The tangent of the next input real.
    #[inline]
    pub fn next_tangent(&mut self) -> E {
        let index = self.next;
        self.next += 1;
        match self.unit {
            Some((unit, one, zero)) => {
                if index == unit {
                    one
                } else {
                    zero
                }
            }
            None => *self.flat.get(index).unwrap_or_else(|| {
                panic!(
                    "deltad: the tangent has fewer reals ({}) than the differentiated inputs",
                    self.flat.len()
                )
            }),
        }
    }
}

impl<P: Primitive> Seeds<P> {
    /// The unit tangent of input real `index`.
    pub fn unit(index: usize) -> Self {
        Seeds {
            flat: Vec::new(),
            unit: Some((index, P::ONE, P::ZERO)),
            next: 0,
        }
    }
}

/// The values of a result computed on dual numbers, in the user's type.
pub fn forward_value<P: Primitive, R: Differentiable<P>>(result: &R::Twin<Real<'_, Dual<P>>>) -> R {
    R::from_twin(R::map_twin(result, &mut |real| real.value().value))
}

/// The tangents of a result computed on dual numbers, in the user's type.
pub fn forward_tangent<P: Primitive, R: Differentiable<P>>(
    result: &R::Twin<Real<'_, Dual<P>>>,
) -> R {
    R::from_twin(R::map_twin(result, &mut |real| real.value().tangent))
}

/// The value and tangent parts of dual adjoints.
pub fn split_duals<P: Primitive>(adjoints: &[Dual<P>]) -> (Vec<P>, Vec<P>) {
    adjoints.iter().map(|a| (a.value, a.tangent)).unzip()
}

/// A tangent given at level `S`: a machine float (a constant) or a value of
/// level `S` itself.
pub trait Tangent<S> {
    /// The tangent at level `S`.
    fn at_level(self) -> S;
}

impl<'t, S: Scalar> Tangent<Real<'t, S>> for Real<'t, S> {
    #[inline(always)]
    fn at_level(self) -> Real<'t, S> {
        self
    }
}

macro_rules! constant_tangents {
    ($($p:ident)*) => {$(
        impl<S: Scalar<Prim = $p>> Tangent<S> for $p {
            #[inline(always)]
            fn at_level(self) -> S {
                S::from_prim(self)
            }
        }
    )*};
}
constant_tangents!(f64 f32);

/// A constant dual value of a nested scalar: `value + tangent·ε`, the
/// tangent given at level `S` (or as a machine float).
#[inline]
pub fn dual_constant<'t, S: Scalar, E: Tangent<S>>(value: S, tangent: E) -> Real<'t, Dual<S>> {
    Real::constant(dual_input(value, tangent))
}

/// A dual number of a nested scalar, `value + tangent·ε`, as a compiled
/// forward pass takes it (the tangent given at level `S` or as a machine
/// float).
#[inline]
pub fn dual_input<S: Scalar, E: Tangent<S>>(value: S, tangent: E) -> Dual<S> {
    Dual::new(value, tangent.at_level())
}
