//! Calls through `deltad::generic_fwd!`: a function generic over its number
//! type that the macro cannot see, run in forward mode on [`DualVec`]s and
//! recorded on the tape as one binding.
//!
//! `deltad::generic!` runs such a function on the tape's own values, which
//! borrow the tape; code that needs a `'static` number type (nalgebra's
//! `RealField`) cannot take them. Here the call's differentiated inputs
//! (the reals of its arguments that have a delta) are numbered in argument
//! order, and the function runs once per chunk of [`CHUNK`] of them, each
//! input of the chunk carrying a tangent in its own lane; the value and the
//! partials become one binding with a term per input, as a hand-written
//! preaccumulation would.

use core::marker::PhantomData;

use crate::convert::GenericPass;
use crate::dual_vec::DualVec;
use crate::forward::CHUNK;
use crate::real::Real;
use crate::scalar::Scalar;
use crate::tape::{DeltaId, Tape};

/// Which inputs the current pass seeds: the call's differentiated inputs
/// are numbered as the arguments are converted, and those numbered
/// `start..start + CHUNK` get a unit tangent in lane `number - start`.
pub struct ForwardSeeds<S> {
    next: usize,
    start: usize,
    /// The differentiated inputs, numbered by the first pass (`start` 0).
    ids: Vec<DeltaId>,
    scalar: PhantomData<S>,
}

impl<S: Scalar> ForwardSeeds<S> {
    /// `real` as a dual value of this pass.
    fn dual(&mut self, real: &Real<'_, S>) -> DualVec<S::Detached, CHUNK> {
        let mut dual = DualVec::constant(real.value().detach());
        let Some(id) = real.id() else {
            return dual;
        };
        if self.start == 0 {
            self.ids.push(id);
        }
        if let Some(lane) = self.next.checked_sub(self.start).filter(|&k| k < CHUNK) {
            dual.tangents[lane] = S::Detached::one();
        }
        self.next += 1;
        dual
    }
}

/// An argument of `deltad::generic_fwd!` as the tape holds it (what
/// `GenericArg` made of it), converted for one forward pass.
pub trait ForwardArg<S> {
    /// The argument on dual values.
    type Output: GenericPass;
    /// Converts, numbering its differentiated reals.
    fn forward(&self, seeds: &mut ForwardSeeds<S>) -> Self::Output;
}

impl<S: Scalar> ForwardArg<S> for Real<'_, S> {
    type Output = DualVec<S::Detached, CHUNK>;
    #[inline(always)]
    fn forward(&self, seeds: &mut ForwardSeeds<S>) -> DualVec<S::Detached, CHUNK> {
        seeds.dual(self)
    }
}

impl<S: Scalar> ForwardArg<S> for &[Real<'_, S>] {
    type Output = Vec<DualVec<S::Detached, CHUNK>>;
    fn forward(&self, seeds: &mut ForwardSeeds<S>) -> Vec<DualVec<S::Detached, CHUNK>> {
        self.iter().map(|real| seeds.dual(real)).collect()
    }
}

impl<S: Scalar> ForwardArg<S> for Vec<Real<'_, S>> {
    type Output = Vec<DualVec<S::Detached, CHUNK>>;
    fn forward(&self, seeds: &mut ForwardSeeds<S>) -> Vec<DualVec<S::Detached, CHUNK>> {
        self.as_slice().forward(seeds)
    }
}

impl<S: Scalar, const N: usize> ForwardArg<S> for [Real<'_, S>; N] {
    type Output = [DualVec<S::Detached, CHUNK>; N];
    fn forward(&self, seeds: &mut ForwardSeeds<S>) -> [DualVec<S::Detached, CHUNK>; N] {
        self.each_ref().map(|real| seeds.dual(real))
    }
}

impl<S: Scalar, const N: usize> ForwardArg<S> for &[Real<'_, S>; N] {
    type Output = [DualVec<S::Detached, CHUNK>; N];
    fn forward(&self, seeds: &mut ForwardSeeds<S>) -> [DualVec<S::Detached, CHUNK>; N] {
        (*self).forward(seeds)
    }
}

macro_rules! forward_discrete {
    ($($t:ty),*) => {$(
        impl<S> ForwardArg<S> for $t {
            type Output = $t;
            #[inline(always)]
            fn forward(&self, _: &mut ForwardSeeds<S>) -> $t {
                *self
            }
        }
    )*};
}
forward_discrete!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, bool);

/// Runs `call` (the function on its arguments converted by
/// [`ForwardArg::forward`]) once per chunk of its differentiated inputs
/// and records its value as one binding with the partials it found.
pub fn generic_forward<'t, S: Scalar>(
    tape: &'t Tape<S>,
    call: impl Fn(&mut ForwardSeeds<S>) -> DualVec<S::Detached, CHUNK>,
) -> Real<'t, S> {
    let mut seeds = ForwardSeeds {
        next: 0,
        start: 0,
        ids: Vec::new(),
        scalar: PhantomData,
    };
    const {
        assert!(
            S::DETACHES,
            "`deltad::generic_fwd!` cannot run in a derivative nested inside a recording (its values borrow the outer tape): use `deltad::generic!` there"
        )
    };
    let first = call(&mut seeds);
    let value = S::attach(first.value);
    let count = seeds.ids.len();
    if count == 0 {
        return Real::constant(value);
    }
    let mut partials = Vec::with_capacity(count);
    let mut output = first;
    loop {
        let lanes = (count - seeds.start).min(CHUNK);
        partials.extend(output.tangents[..lanes].iter().map(|&t| S::attach(t)));
        seeds.start += lanes;
        if seeds.start == count {
            break;
        }
        seeds.next = 0;
        output = call(&mut seeds);
    }
    let id = tape.push_terms(partials.into_iter().zip(seeds.ids));
    Real::with_id(tape, value, id)
}
