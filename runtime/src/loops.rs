//! Loops recorded as a whole.
//!
//! A `for` loop whose body is straight-line real arithmetic (the common inner
//! loop of numeric code) does not need a binding per operation or even per
//! statement. `#[differentiate]` compiles such a loop into a forward loop that
//! stores, per iteration, the local partial derivatives of the loop's state
//! (the real variables it updates) with respect to the previous state, to the
//! values it reads from slices (`elements`) and to values that do not change
//! during the loop (`invariants`); and a *reverse loop*, a plain function
//! generated for this loop, that walks the iterations backwards carrying the
//! state's adjoints in registers. On the tape the whole loop is one special
//! binding followed by one binding per output (the state after the loop).
//!
//! This is the paper's Delta of the loop with the per-iteration Delta terms
//! stored as a dense local Jacobian: the same derivative, without ids for
//! values that only live inside one iteration.

use crate::real::Real;
use crate::scalar::Scalar;
use crate::tape::{DeltaId, Tape};

/// The id stored for an operand that is a constant (it has no binding).
pub const NO_ID: u32 = u32::MAX;

/// What the reverse loop of one loop needs.
///
/// `ids` holds, in order: the ids of the `states` outputs, of the `states`
/// inputs (the state before the loop), of the `invariants`, then for each
/// iteration its element ids. `slots` holds first the `fixed` partial
/// derivatives that are the same in every iteration (they depend only on
/// invariants and constants), then each iteration's stored partials.
pub struct LoopData<S> {
    pub(crate) slots: Vec<S>,
    pub(crate) ids: Vec<u32>,
    iterations: usize,
    states: usize,
    invariants: usize,
    fixed: usize,
}

impl<S: Scalar> LoopData<S> {
    /// Data for `states` states and `invariants` invariants with these ids
    /// (outputs, inputs, invariants, then elements) and no iterations yet.
    pub(crate) fn with_parts(
        slots: Vec<S>,
        ids: Vec<u32>,
        states: usize,
        invariants: usize,
    ) -> Self {
        LoopData {
            slots,
            ids,
            iterations: 0,
            states,
            invariants,
            fixed: 0,
        }
    }

    /// Makes room for exactly `iterations` iterations (their partials to be
    /// written with `slots_mut`).
    pub(crate) fn reset(&mut self, iterations: usize, per_iteration: usize) {
        self.slots.clear();
        self.slots.resize(iterations * per_iteration, S::zero());
        self.iterations = iterations;
    }

    /// The partials of `iteration`, to write.
    pub(crate) fn slots_mut(&mut self, iteration: usize, per_iteration: usize) -> &mut [S] {
        &mut self.slots[iteration * per_iteration..(iteration + 1) * per_iteration]
    }

    /// Iterations recorded.
    #[inline(always)]
    pub fn iterations(&self) -> usize {
        self.iterations
    }

    /// The binding of output `k` (the state variable `k` after the loop).
    #[inline(always)]
    pub fn output(&self, k: usize) -> usize {
        self.ids[k] as usize
    }

    /// The binding of state variable `k` before the loop, if it had one.
    #[inline(always)]
    pub fn input(&self, k: usize) -> Option<usize> {
        present(self.ids[self.states + k])
    }

    /// The binding of invariant `j`, if it has one.
    #[inline(always)]
    pub fn invariant(&self, j: usize) -> Option<usize> {
        present(self.ids[2 * self.states + j])
    }

    /// The fixed partial derivative `k` (the same in every iteration).
    #[inline(always)]
    pub fn fixed_slot(&self, k: usize) -> S {
        self.slots[..self.fixed][k]
    }

    /// The iterations from the last to the first: each one's `NS` stored
    /// partials and `NE` element ids (`NO_ID` for constants).
    #[inline(always)]
    pub fn reversed<const NS: usize, const NE: usize>(
        &self,
    ) -> impl Iterator<Item = (&[S; NS], &[u32; NE])> + '_ {
        let slots = &self.slots[self.fixed..];
        let elements = &self.ids[2 * self.states + self.invariants..];
        let n = self.iterations;
        // Checked once, so the loop below indexes without checks.
        assert!(
            slots.len() >= n * NS && elements.len() >= n * NE,
            "deltad: a loop's stored partials do not match its reverse function"
        );
        (0..n).rev().map(move |i| {
            // SAFETY: `i < n`, and the assertion above gives room for `n`
            // iterations of `NS` slots and `NE` ids, so both ranges are in
            // bounds; `[T; N]` has the layout and alignment of `N`
            // consecutive `T`s; the borrows are shared, of `slots` and
            // `elements`, which outlive the iterator.
            unsafe {
                (
                    &*slots.as_ptr().add(i * NS).cast::<[S; NS]>(),
                    &*elements.as_ptr().add(i * NE).cast::<[u32; NE]>(),
                )
            }
        })
    }
}

#[cold]
#[inline(never)]
fn no_room() -> ! {
    panic!("deltad: a loop's iterator yielded more items than its `size_hint` promised")
}

#[inline(always)]
fn present(id: u32) -> Option<usize> {
    (id != NO_ID).then_some(id as usize)
}

/// Records a loop as a whole (see the module docs); used by generated code.
pub struct LoopRecorder<'t, S> {
    tape: &'t Tape<S>,
    data: LoopData<S>,
    /// False on a forward-only tape: nothing can be active, nothing is stored.
    recording: bool,
}

impl<'t, S: Scalar> LoopRecorder<'t, S> {
    /// Starts recording a loop whose state before the loop is `states`,
    /// whose loop-invariant operands are `invariants`, and which stores
    /// `fixed` partial derivatives that are the same in every iteration.
    pub fn start<const K: usize, const J: usize>(
        tape: &'t Tape<S>,
        states: [&Real<'t, S>; K],
        invariants: [&Real<'t, S>; J],
        fixed: usize,
    ) -> Self {
        let (mut slots, mut ids) = tape.take_scratch();
        slots.resize(fixed, S::zero());
        ids.extend([NO_ID; K]);
        ids.extend(states.map(Real::raw_id));
        ids.extend(invariants.map(Real::raw_id));
        LoopRecorder {
            tape,
            data: LoopData {
                slots,
                ids,
                iterations: 0,
                states: K,
                invariants: J,
                fixed,
            },
            recording: !tape.is_forward_only(),
        }
    }

    /// How many more iterations of `NS` slots and `NE` element ids fit
    /// without growing.
    #[inline(always)]
    pub fn room<const NS: usize, const NE: usize>(&self) -> usize {
        if !self.recording {
            return 1 << 20;
        }
        let slots = self.data.slots.capacity() - self.data.slots.len();
        let ids = self.data.ids.capacity() - self.data.ids.len();
        let by_slots = slots.checked_div(NS).unwrap_or(usize::MAX);
        let by_ids = ids.checked_div(NE).unwrap_or(usize::MAX);
        by_slots.min(by_ids).min(1 << 20)
    }

    /// Makes room for at least `iterations` more iterations (for a first
    /// call with 0, and later calls, room for as many as so far, at least 64).
    #[inline(never)]
    pub fn grow<const NS: usize, const NE: usize>(&mut self, iterations: usize) {
        let iterations = if iterations == 0 {
            self.data.iterations.max(64)
        } else {
            iterations
        };
        self.data.slots.reserve(NS * iterations);
        self.data.ids.reserve(NE * iterations);
    }

    /// Records one iteration: the fixed partial derivatives (the same in
    /// every iteration; written over the previous iteration's), its stored
    /// partial derivatives and the ids of the elements it read. The
    /// generated loop asks for `room` first, so this never grows the
    /// buffers: no call that could return sits in the loop, and the compiler
    /// keeps the loop's values in registers.
    #[inline(always)]
    pub fn iteration<const NF: usize, const NS: usize, const NE: usize>(
        &mut self,
        fixed: [S; NF],
        slots: [S; NS],
        elements: [u32; NE],
    ) {
        if !self.recording {
            return;
        }
        if NF > 0 {
            self.data.slots[..NF].copy_from_slice(&fixed);
        }
        let (slot_len, id_len) = (self.data.slots.len(), self.data.ids.len());
        if self.data.slots.capacity() - slot_len < NS || self.data.ids.capacity() - id_len < NE {
            no_room();
        }
        // SAFETY: both buffers have room for this iteration (checked above),
        // and exactly the written entries are added to their lengths.
        unsafe {
            let slot_end = self.data.slots.as_mut_ptr().add(slot_len);
            for (i, slot) in slots.into_iter().enumerate() {
                slot_end.add(i).write(slot);
            }
            self.data.slots.set_len(slot_len + NS);
            let id_end = self.data.ids.as_mut_ptr().add(id_len);
            for (i, id) in elements.into_iter().enumerate() {
                id_end.add(i).write(id);
            }
            self.data.ids.set_len(id_len + NE);
        }
        self.data.iterations += 1;
    }

    /// Ends the loop: the state after it, as dual values, given its values.
    pub fn finish<const K: usize>(
        self,
        values: [S; K],
        reverse: fn(&LoopData<S>, &mut [S]),
    ) -> [Real<'t, S>; K] {
        let LoopRecorder { tape, data, .. } = self;
        let inputs: [u32; K] = core::array::from_fn(|k| data.ids[K + k]);
        let anything_active = data.ids[K..].iter().any(|&id| id != NO_ID);
        if data.iterations == 0 || !anything_active {
            // Nothing to record: the state after the loop has the derivative
            // of the state before it (or none).
            tape.return_scratch(data.slots, data.ids);
            return core::array::from_fn(|k| match inputs[k] {
                NO_ID => Real::constant(values[k]),
                id => Real::with_id(tape, values[k], DeltaId(id)),
            });
        }
        let first = tape.push_loop(data, K, reverse);
        core::array::from_fn(|k| Real::with_id(tape, values[k], first.offset(k)))
    }
}
