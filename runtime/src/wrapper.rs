//! The pieces of the generated gradient functions: the paper's wrapper
//! (seed 004, Fig. 10 and 16). `initVars` gives every real input a fresh
//! binding; the recording pass runs; the output is seeded with 1 and the
//! reverse sweep runs; `lookup` reads the inputs' adjoints back in order.

use crate::compiled::Cotangent;
use crate::differentiable::Differentiable;
use crate::real::Real;
use crate::scalar::{Primitive, Scalar};
use crate::tape::{DeltaId, Tape};

/// A fresh input for a scalar parameter.
#[inline]
pub fn input<S: Scalar>(tape: &Tape<S>, value: S) -> Real<'_, S> {
    Real::input(tape, value)
}

/// Fresh inputs for each element of a slice parameter.
/// The buffer comes from the tape's kept allocations; give it back with
/// [`Tape::keep_input_buffer`] when the recording pass is done with it.
pub fn input_slice<'t, S: Scalar>(tape: &'t Tape<S>, values: &[S]) -> Vec<Real<'t, S>> {
    let first = tape.push_inputs(values.len());
    let mut inputs = tape.take_input_buffer();
    inputs.extend(
        values
            .iter()
            .enumerate()
            .map(|(offset, &value)| Real::with_id(tape, value, first.offset(offset))),
    );
    inputs
}

/// Fresh inputs for each element of an array parameter.
pub fn input_array<S: Scalar, const N: usize>(tape: &Tape<S>, values: [S; N]) -> [Real<'_, S>; N] {
    values.map(|value| Real::input(tape, value))
}

/// Runs the reverse sweep from `output` with seed 1 into `adjoints`.
#[inline]
pub fn sweep_from<S: Scalar>(tape: &Tape<S>, output: &Real<'_, S>, adjoints: &mut Vec<S>) {
    tape.gradient_into(output.id(), S::one(), adjoints);
}

/// Seeds the reals of `output` with the matching reals of `seed` in a fresh
/// adjoint array and runs the reverse sweep (the paper's `dot` with δt).
pub fn seed_and_sweep<'t, P: Primitive, R: Differentiable<P>>(
    tape: &'t Tape<P>,
    output: &R::Twin<Real<'t, P>>,
    seed: &R,
    adjoints: &mut Vec<P>,
) {
    adjoints.clear();
    adjoints.resize(tape.len(), P::zero());
    R::seed(output, &seed.to_twin(), adjoints);
    tape.reverse_sweep(adjoints);
}

/// The machine value of a recorded output, in the user's type.
pub fn output_value<P: Primitive, R: Differentiable<P>>(output: &R::Twin<Real<'_, P>>) -> R {
    R::from_twin(R::value(output))
}

/// The binding of every real of a recorded output, in leaf order (`None`
/// for reals that do not depend on an input): the rows of a Jacobian.
pub fn output_leaves<P: Primitive, R: Differentiable<P>>(
    output: &R::Twin<Real<'_, P>>,
) -> Vec<Option<DeltaId>> {
    let mut leaves = Vec::new();
    R::leaves(output, &mut leaves);
    leaves
}

/// Reads the adjoints of the inputs back, in the order they were created.
pub struct GradReader<'a, S> {
    adjoints: &'a [S],
    next: usize,
    /// Which adjoint of a [`Cotangent`] the adjoints read are (a compiled
    /// caller's vector reverse mode takes one sweep per lane here).
    lane: usize,
}

impl<'a, S: Scalar> GradReader<'a, S> {
    /// Starts at the first binding (the first input).
    pub fn new(adjoints: &'a [S]) -> Self {
        GradReader {
            adjoints,
            next: 0,
            lane: 0,
        }
    }

    /// The reader of the adjoints of `lane`.
    pub fn in_lane(self, lane: usize) -> Self {
        GradReader { lane, ..self }
    }

    /// The adjoint of the next scalar input, as that lane of a `C`.
    #[inline]
    pub fn cotangent<C: Cotangent<S>>(&mut self) -> C {
        C::from_lane(self.lane, self.scalar())
    }

    /// The adjoint of the next scalar input.
    #[inline]
    pub fn scalar(&mut self) -> S {
        let value = self.adjoints[self.next];
        self.next += 1;
        value
    }

    /// The adjoints of the next `len` inputs (a slice parameter).
    pub fn vec(&mut self, len: usize) -> Vec<S> {
        let values = self.adjoints[self.next..self.next + len].to_vec();
        self.next += len;
        values
    }

    /// The adjoints of the next `N` inputs (an array parameter).
    pub fn array<const N: usize>(&mut self) -> [S; N] {
        core::array::from_fn(|_| self.scalar())
    }

    /// Adds the adjoints of the next `len` inputs (a slice parameter) to
    /// `target`, the `Grad` field `field`; an empty `target` is first
    /// sized with zeros.
    pub fn add_to_vec(&mut self, target: &mut Vec<S>, len: usize, field: &str) {
        if target.is_empty() {
            target.resize(len, S::zero());
        }
        assert_eq!(
            target.len(),
            len,
            "deltad: grad_into: `grad.{field}` has {} entries but the argument has {len}",
            target.len()
        );
        self.add_to_slice(target);
    }

    /// Adds the adjoints of the next `target.len()` inputs to `target`.
    pub fn add_to_slice(&mut self, target: &mut [S]) {
        let adjoints = &self.adjoints[self.next..self.next + target.len()];
        for (total, &adjoint) in target.iter_mut().zip(adjoints) {
            *total += adjoint;
        }
        self.next += target.len();
    }
}

/// Adds `gathered` (a derivative of a structured parameter, just read from
/// the adjoints) to `target`, the `Grad` field `field`, leaf by leaf; a
/// `target` without leaves (an empty `Vec`) takes `gathered` as it is.
pub fn add_gathered<P: Primitive, T: Differentiable<P>>(target: &mut T, gathered: T, field: &str) {
    let mut added = Vec::new();
    T::flatten_twin(&gathered.to_twin(), &mut added);
    let current = target.to_twin();
    let mut leaves = Vec::new();
    T::flatten_twin(&current, &mut leaves);
    if leaves.is_empty() {
        *target = gathered;
        return;
    }
    assert_eq!(
        leaves.len(),
        added.len(),
        "deltad: grad_into: `grad.{field}` has {} reals but the argument has {}",
        leaves.len(),
        added.len()
    );
    let mut next = added.iter();
    let sum = T::map_twin(&current, &mut |leaf: &P| match next.next() {
        Some(&adjoint) => *leaf + adjoint,
        None => *leaf,
    });
    *target = T::from_twin(sum);
}
