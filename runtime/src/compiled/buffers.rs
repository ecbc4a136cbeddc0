//! Buffers of reals as whole values of compiled passes: a function's `Vec`
//! or array result, a buffer of constants lifted into the pass's scalars,
//! and the conversions the wrappers need (dual results split into values
//! and tangents, recorded results read and seeded on a tape).

use super::cotangent::Cotangent;
use super::stack::Stack;
use crate::dual::Dual;
use crate::dual_vec::DualVec;
use crate::real::Real;
use crate::scalar::{Primitive, Scalar};
use crate::tape::{DeltaId, Tape};

/// A buffer of machine floats (`Vec<P>`, `[P; N]`) as a buffer of scalars
/// of a pass.
pub trait LiftBuffer<S> {
    /// The same buffer of scalars.
    type Lifted;
    /// Each element lifted.
    fn lift_buffer(self) -> Self::Lifted;
}

impl<S: Scalar> LiftBuffer<S> for Vec<S::Prim> {
    type Lifted = Vec<S>;
    #[inline]
    fn lift_buffer(self) -> Vec<S> {
        self.into_iter().map(S::from_prim).collect()
    }
}

impl<S: Scalar, const N: usize> LiftBuffer<S> for [S::Prim; N] {
    type Lifted = [S; N];
    #[inline]
    fn lift_buffer(self) -> [S; N] {
        self.map(S::from_prim)
    }
}

/// `buffer` with every element lifted into `S`.
#[inline]
pub fn lift_buffer<S, B: LiftBuffer<S>>(buffer: B) -> B::Lifted {
    buffer.lift_buffer()
}

/// A buffer assigned a copy of another (`y = x.to_vec();`, `y = z.clone();`):
/// the elements copied into its memory (a `Vec` takes the other's length).
pub trait CopyInto<S> {
    /// `source`'s elements copied in.
    fn copy_from(&mut self, source: &[S]);
}

impl<S: Clone> CopyInto<S> for Vec<S> {
    #[inline]
    fn copy_from(&mut self, source: &[S]) {
        self.clear();
        self.extend_from_slice(source);
    }
}

impl<S: Clone, const N: usize> CopyInto<S> for [S; N] {
    #[inline]
    fn copy_from(&mut self, source: &[S]) {
        self.clone_from_slice(source);
    }
}

/// `source`'s elements copied into `target` (see [`CopyInto`]).
#[inline]
pub fn copy_into<S, T: CopyInto<S> + ?Sized>(source: &[S], target: &mut T) {
    target.copy_from(source);
}

/// A buffer of scalars `S` as a whole value (a result, an adjoint): a
/// `Vec` or an array.
pub trait ResultBuffer<S>: Sized {
    /// The elements.
    fn elements(&self) -> &[S];
    /// A buffer of `len` elements, each made by `element`.
    fn from_elements(len: usize, element: impl FnMut(usize) -> S) -> Self;
    /// The contents, leaving something empty (a `Vec`) or the same (an
    /// array) behind: for an adjoint that is not read again.
    fn take(&mut self) -> Self;
    /// The buffer's memory as an empty `Vec` to fill again (a `Vec`'s own
    /// allocation; nothing for an array), leaving the buffer empty.
    fn take_memory(&mut self) -> Vec<S> {
        Vec::new()
    }
    /// A buffer holding `elements` (moved into a `Vec` result, copied into
    /// an array).
    fn from_vec(elements: Vec<S>) -> Self
    where
        S: Copy,
    {
        Self::from_elements(elements.len(), |k| elements[k])
    }
    /// `len` zeros (`-0.0`) for an adjoint, a `Vec` of them in memory given
    /// back to `stack` if there is some ([`Cotangent::zeros_on`]).
    fn zeros_on<T: Scalar>(stack: &mut Stack<T>, len: usize) -> Self
    where
        S: Cotangent<T>;
    /// Gives the memory of an adjoint's buffer back to `stack` once the
    /// adjoint is done with it ([`Cotangent::give_back`]; nothing for an
    /// array).
    fn give_back<T: Scalar>(&mut self, stack: &mut Stack<T>)
    where
        S: Cotangent<T>;
}

impl<S: Copy> ResultBuffer<S> for Vec<S> {
    #[inline]
    fn elements(&self) -> &[S] {
        self
    }
    #[inline]
    fn from_elements(len: usize, element: impl FnMut(usize) -> S) -> Self {
        (0..len).map(element).collect()
    }
    #[inline]
    fn take(&mut self) -> Self {
        core::mem::take(self)
    }
    #[inline]
    fn take_memory(&mut self) -> Vec<S> {
        let mut memory = core::mem::take(self);
        memory.clear();
        memory
    }
    #[inline]
    fn from_vec(elements: Vec<S>) -> Self {
        elements
    }
    #[inline(always)]
    fn zeros_on<T: Scalar>(stack: &mut Stack<T>, len: usize) -> Self
    where
        S: Cotangent<T>,
    {
        S::zeros_on(stack, len)
    }
    #[inline(always)]
    fn give_back<T: Scalar>(&mut self, stack: &mut Stack<T>)
    where
        S: Cotangent<T>,
    {
        S::give_back(stack, core::mem::take(self));
    }
}

impl<S: Copy, const N: usize> ResultBuffer<S> for [S; N] {
    #[inline]
    fn elements(&self) -> &[S] {
        self
    }
    #[inline]
    fn from_elements(len: usize, element: impl FnMut(usize) -> S) -> Self {
        assert_eq!(len, N, "deltad: an array result has a fixed length");
        core::array::from_fn(element)
    }
    #[inline]
    fn take(&mut self) -> Self {
        *self
    }
    #[inline(always)]
    fn zeros_on<T: Scalar>(_: &mut Stack<T>, len: usize) -> Self
    where
        S: Cotangent<T>,
    {
        Self::from_elements(len, |_| -S::zero())
    }
    #[inline(always)]
    fn give_back<T: Scalar>(&mut self, _: &mut Stack<T>)
    where
        S: Cotangent<T>,
    {
    }
}

/// `vec![value; len]` for a local buffer of the compiled passes, always
/// in an allocation of its own (room for one element when `len` is 0): a
/// `vec!` of a length that may be 0 starts from a shared dangling pointer,
/// so the optimiser cannot tell that stores into another buffer leave it
/// alone, and keeps its loads in the loops that write one (which then stay
/// scalar).
#[inline(always)]
pub fn repeated<T: Clone>(value: T, len: usize) -> Vec<T> {
    let mut buffer = Vec::with_capacity(len.max(1));
    buffer.resize(len, value);
    buffer
}

/// A buffer of `len` zeros (`-0.0`, the identity of addition) of the kind
/// `B`.
#[inline]
pub fn zeros<S: Scalar, B: ResultBuffer<S>>(len: usize) -> B {
    B::from_elements(len, |_| -S::zero())
}

/// The seed of output real `k` of `len`: 1 there, 0 elsewhere (the
/// one-lane `lane_seed`).
#[inline]
pub fn unit_seed<S: Scalar, B: ResultBuffer<S>>(len: usize, k: usize) -> B {
    lane_seed::<S, S, B>(len, k)
}

/// The seeds of output reals `first..`, one per lane of the adjoints `A`
/// (vector reverse mode): lane `j` of real `first + j` is 1, the rest 0.
#[inline]
pub fn lane_seed<S: Scalar, A: Cotangent<S>, B: ResultBuffer<A>>(len: usize, first: usize) -> B {
    B::from_elements(len, |k| match k.checked_sub(first) {
        Some(lane) if lane < A::LANES => A::from_lane(lane, S::one()),
        _ => A::zero(),
    })
}

/// The values and tangents of a buffer result computed on dual numbers
/// (`jvp`), as two buffers of the same kind.
pub fn split_dual<P, B, V>(result: &B) -> (V, V)
where
    P: Primitive,
    B: ResultBuffer<Dual<P>>,
    V: ResultBuffer<P>,
{
    (
        buffer_part(result, |d: &Dual<P>| d.value),
        buffer_part(result, |d: &Dual<P>| d.tangent),
    )
}

/// One part of every element of a buffer result on dual values (the
/// values, or tangent `k` of a chunk), as a buffer of the machine float.
pub fn buffer_part<S, P, B, V>(result: &B, part: impl Fn(&S) -> P) -> V
where
    P: Primitive,
    B: ResultBuffer<S>,
    V: ResultBuffer<P>,
{
    let elements = result.elements();
    V::from_elements(elements.len(), |k| part(&elements[k]))
}

/// The first `lanes` tangents of every element of a buffer result on
/// [`DualVec`], as one buffer per tangent, written to
/// `out[start..start + lanes]` in the memory of the buffers there (pushed
/// where `out` is shorter): one sweep over the result by blocks (not one
/// sweep per tangent, which reads a long result `lanes` times from memory).
pub fn buffer_lanes_into<P, const N: usize, B, V>(
    result: &B,
    lanes: usize,
    out: &mut Vec<V>,
    start: usize,
) where
    P: Primitive,
    B: ResultBuffer<DualVec<P, N>>,
    V: ResultBuffer<P>,
{
    let elements = result.elements();
    let mut columns: Vec<Vec<P>> = (start..start + lanes)
        .map(|at| {
            let mut column = out.get_mut(at).map_or_else(Vec::new, V::take_memory);
            column.reserve(elements.len());
            column
        })
        .collect();
    if !super::streamed::write_lanes(elements, &mut columns) {
        // By blocks that stay in the cache while every column takes its part.
        for block in elements.chunks(256) {
            for (k, column) in columns.iter_mut().enumerate() {
                column.extend(block.iter().map(|element| element.tangents[k]));
            }
        }
    }
    for (k, column) in columns.into_iter().enumerate() {
        put_at(out, start + k, V::from_vec(column));
    }
}

/// `out[at] = value`, or `value` pushed where `out` has `at` elements (a
/// derivative of a `*_into` function written into the caller's `Vec`).
#[inline]
pub fn put_at<T>(out: &mut Vec<T>, at: usize, value: T) {
    match out.get_mut(at) {
        Some(slot) => *slot = value,
        None => {
            debug_assert_eq!(at, out.len(), "deltad: results are written in order");
            out.push(value);
        }
    }
}

/// The values of a recorded buffer result (of dual values on `tape`).
pub fn recorded_values<'t, S, B, V>(result: &B) -> V
where
    S: Scalar + 't,
    B: ResultBuffer<Real<'t, S>>,
    V: ResultBuffer<S>,
{
    let elements = result.elements();
    V::from_elements(elements.len(), |k| elements[k].value())
}

/// Adds adjoint `lane` of `seed[k]` to the adjoint of element `k` of the
/// recorded buffer result, for every `k`, then sweeps the tape (`adjoints`
/// sized to it).
pub fn seed_buffer_and_sweep<'t, S, A, B>(
    tape: &'t Tape<S>,
    result: &B,
    seed: &[A],
    lane: usize,
    adjoints: &mut Vec<S>,
) where
    S: Scalar + 't,
    A: Cotangent<S>,
    B: ResultBuffer<Real<'t, S>>,
{
    let elements = result.elements();
    assert_eq!(
        elements.len(),
        seed.len(),
        "deltad: the adjoint of a buffer result has a length other than the result's"
    );
    adjoints.clear();
    adjoints.resize(tape.len(), S::zero());
    for (element, &adjoint) in elements.iter().zip(seed) {
        if let Some(id) = element.id() {
            adjoints[id.index()] += adjoint.lane(lane);
        }
    }
    tape.reverse_sweep(adjoints);
}

/// The bindings of a buffer result's elements, `None` for constants.
pub fn result_ids<'t, S, B>(result: &B) -> Vec<Option<DeltaId>>
where
    S: Scalar + 't,
    B: ResultBuffer<Real<'t, S>>,
{
    result.elements().iter().map(|e| e.id()).collect()
}

/// Checks that a seed shaped like a buffer result has as many reals as the
/// result, and copies it into the adjoint the compiled adjoint takes.
pub fn seed_of<S: Copy, B: ResultBuffer<S>>(seed: &[S], result_len: usize) -> B {
    assert_eq!(
        seed.len(),
        result_len,
        "deltad: the seed has {} reals but the result has {}",
        seed.len(),
        result_len
    );
    B::from_elements(seed.len(), |k| seed[k])
}

#[cfg(test)]
mod tests {
    use super::repeated;

    /// `vec![value; len]`, but always in an allocation of its own.
    #[test]
    fn repeated_is_vec_in_its_own_allocation() {
        assert_eq!(repeated(-0.0f64, 3), vec![-0.0; 3]);
        assert!(repeated(-0.0f64, 3).iter().all(|v| v.is_sign_negative()));
        let empty = repeated(1.5f64, 0);
        assert!(empty.is_empty() && empty.capacity() >= 1);
        assert_eq!(repeated(vec![1.0f64], 2), vec![vec![1.0], vec![1.0]]);
    }
}
