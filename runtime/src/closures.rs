//! Derivatives of closures: for code the macro cannot see, typically a
//! function of another crate written generically over num-traits' `Float`,
//! called on deltad's dual values (which implement num-traits with the
//! `num-traits` feature, on by default):
//!
//! ```
//! use num_traits::{Float, FromPrimitive};
//!
//! // A library's function, generic over its number type.
//! fn rosenbrock<T: Float + FromPrimitive>(x: &[T]) -> T {
//!     let (a, b) = (T::one(), T::from_f64(100.0).unwrap());
//!     x.windows(2)
//!         .map(|w| (a - w[0]).powi(2) + b * (w[1] - w[0].powi(2)).powi(2))
//!         .fold(T::zero(), |s, t| s + t)
//! }
//!
//! let x = [0.5, -0.3, 1.2];
//! let g = deltad::gradient(|x| rosenbrock(x), &x);
//! let h = deltad::hessian(|x| rosenbrock(x), &x);
//! let (_, along) = deltad::jvp(|x| rosenbrock(x), &x, &[1.0, 0.0, 0.0]);
//! assert!((along - g[0]).abs() < 1e-12);
//! assert!((h[0][0] - (2.0 - 400.0 * (x[1] - 3.0 * x[0] * x[0]))).abs() < 1e-12);
//! ```
//!
//! The closure is called once per derivative with the inputs as dual values:
//! [`Real`] on a tape for the reverse-mode [`gradient`] (one recording, one
//! sweep), [`Dual`] for [`jvp`] (one pass), `Real` on a tape of `Dual`s for
//! [`hvp`] (forward over reverse) and one `hvp` per input for [`hessian`].
//! It is generic code's own arithmetic that is differentiated, so these cost
//! what a tape costs; a function the macro can see is faster under
//! `#[differentiate]`.
//!
//! Code that needs a `'static` number type, such as nalgebra's `RealField`
//! (feature `nalgebra`), cannot run on `Real`, which borrows its tape:
//! [`gradient_fwd`] and [`hessian_fwd`] differentiate it in forward mode,
//! on [`DualVec`]s of 8 tangents (one pass per chunk of inputs for a
//! gradient, one per input and chunk for a Hessian), and [`jvp`] on
//! `Dual`s.

use crate::dual::Dual;
use crate::dual_vec::DualVec;
use crate::forward::{chunked_passes, CHUNK};
use crate::real::Real;
use crate::scalar::{Primitive, Scalar};
use crate::tape::Tape;
use crate::wrapper::input_slice;

/// The gradient of `f` at `x` (reverse mode: one recording and one sweep).
#[inline]
pub fn gradient<P, F>(f: F, x: &[P]) -> Vec<P>
where
    P: Primitive,
    F: for<'t> Fn(&[Real<'t, P>]) -> Real<'t, P>,
{
    value_and_gradient(f, x).1
}

/// The value and the gradient of `f` at `x`.
pub fn value_and_gradient<P, F>(f: F, x: &[P]) -> (P, Vec<P>)
where
    P: Primitive,
    F: for<'t> Fn(&[Real<'t, P>]) -> Real<'t, P>,
{
    P::with_tape(|tape, adjoints| {
        let (value, gradient) = record_and_sweep(tape, adjoints, x, &f);
        (value, gradient.to_vec())
    })
}

/// The value of `f` at `x` and its derivative along `tangent` (forward
/// mode: one pass on dual numbers).
pub fn jvp<P, F>(f: F, x: &[P], tangent: &[P]) -> (P, P)
where
    P: Primitive,
    F: Fn(&[Dual<P>]) -> Dual<P>,
{
    let output = f(&duals(x, tangent, "tangent"));
    (output.value, output.tangent)
}

/// The Hessian of `f` at `x` times `v` (forward over reverse: one
/// recording on dual numbers whose tangents are `v`, one sweep).
pub fn hvp<P, F>(f: F, x: &[P], v: &[P]) -> Vec<P>
where
    P: Primitive,
    F: for<'t> Fn(&[Real<'t, Dual<P>>]) -> Real<'t, Dual<P>>,
{
    let seeded = duals(x, v, "direction");
    P::with_dual_tape(|tape, adjoints| {
        let (_, gradient) = record_and_sweep(tape, adjoints, &seeded, &f);
        gradient.iter().map(|g| g.tangent).collect()
    })
}

/// The Hessian of `f` at `x`, row by row (one [`hvp`] per input).
pub fn hessian<P, F>(f: F, x: &[P]) -> Vec<Vec<P>>
where
    P: Primitive,
    F: for<'t> Fn(&[Real<'t, Dual<P>>]) -> Real<'t, Dual<P>>,
{
    let mut unit = vec![P::ZERO; x.len()];
    (0..x.len())
        .map(|i| {
            unit[i] = P::ONE;
            let row = hvp(&f, x, &unit);
            unit[i] = P::ZERO;
            row
        })
        .collect()
}

/// The gradient of `f` at `x` in forward mode: one pass per chunk of
/// 8 inputs, each carrying a tangent per input of the chunk.
pub fn gradient_fwd<P, F>(f: F, x: &[P]) -> Vec<P>
where
    P: Primitive,
    F: Fn(&[DualVec<P, CHUNK>]) -> DualVec<P, CHUNK>,
{
    value_and_gradient_fwd(f, x).1
}

/// The value and the gradient of `f` at `x` in forward mode (see
/// [`gradient_fwd`]).
pub fn value_and_gradient_fwd<P, F>(f: F, x: &[P]) -> (P, Vec<P>)
where
    P: Primitive,
    F: Fn(&[DualVec<P, CHUNK>]) -> DualVec<P, CHUNK>,
{
    let mut gradient = vec![P::ZERO; x.len()];
    let value = by_chunks(x, P::ONE, &f, |start, output| {
        let end = (start + CHUNK).min(x.len());
        gradient[start..end].copy_from_slice(&output.tangents[..end - start]);
        output.value
    });
    (value, gradient)
}

/// The Hessian of `f` at `x` in forward mode, row by row: row `i` is the
/// gradient (in chunks, as [`gradient_fwd`]) of `f`'s derivative along
/// input `i`, each input a [`Dual`] whose tangent is 1 for input `i`.
pub fn hessian_fwd<P, F>(f: F, x: &[P]) -> Vec<Vec<P>>
where
    P: Primitive,
    F: Fn(&[DualVec<Dual<P>, CHUNK>]) -> DualVec<Dual<P>, CHUNK>,
{
    let mut along: Vec<Dual<P>> = x.iter().map(|&v| Dual::new(v, P::ZERO)).collect();
    (0..x.len())
        .map(|i| {
            along[i].tangent = P::ONE;
            let mut row = vec![P::ZERO; x.len()];
            by_chunks(&along, Dual::new(P::ONE, P::ZERO), &f, |start, output| {
                for (entry, lane) in row[start..].iter_mut().zip(&output.tangents) {
                    *entry = lane.tangent;
                }
            });
            along[i].tangent = P::ZERO;
            row
        })
        .collect()
}

/// Runs `f` once per chunk of 8 inputs of `x` (once if `x` is
/// empty), the chunk's inputs seeded with `one` in their own lane, and
/// hands each output to `read` with the chunk's first input; returns what
/// `read` returned for the first chunk.
fn by_chunks<S: Scalar, R>(
    x: &[S],
    one: S,
    f: impl Fn(&[DualVec<S, CHUNK>]) -> DualVec<S, CHUNK>,
    mut read: impl FnMut(usize, DualVec<S, CHUNK>) -> R,
) -> R {
    let mut inputs: Vec<DualVec<S, CHUNK>> = x.iter().map(|&v| DualVec::constant(v)).collect();
    chunked_passes(x.len(), CHUNK, |start, _| {
        let end = (start + CHUNK).min(x.len());
        for (k, input) in inputs[start..end].iter_mut().enumerate() {
            input.tangents[k] = one;
        }
        let read = read(start, f(&inputs));
        for input in &mut inputs[start..end] {
            *input = DualVec::constant(input.value);
        }
        Some(read)
    })
}

/// Records `f` at `x` on `tape`, sweeps from its output with seed 1 and
/// returns the value and the inputs' adjoints.
fn record_and_sweep<'a, S, F>(
    tape: &Tape<S>,
    adjoints: &'a mut Vec<S>,
    x: &[S],
    f: &F,
) -> (S, &'a [S])
where
    S: Scalar,
    F: for<'t> Fn(&[Real<'t, S>]) -> Real<'t, S>,
{
    let inputs = input_slice(tape, x);
    let first = inputs.first().and_then(Real::id).map_or(0, |id| id.index());
    let output = f(&inputs);
    tape.keep_input_buffer(inputs);
    tape.gradient_into(output.id(), S::one(), adjoints);
    (output.value(), &adjoints[first..first + x.len()])
}

/// The dual numbers with values `x` and tangents `tangent` (`what` it is,
/// for the message if the lengths differ).
fn duals<P: Primitive>(x: &[P], tangent: &[P], what: &str) -> Vec<Dual<P>> {
    assert_eq!(
        x.len(),
        tangent.len(),
        "deltad: the {what} has {} reals where the input has {}",
        tangent.len(),
        x.len()
    );
    x.iter()
        .zip(tangent)
        .map(|(&x, &t)| Dual::new(x, t))
        .collect()
}
