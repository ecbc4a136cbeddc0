//! Checkpointed loops: reverse mode in memory that grows like the square root
//! of the number of iterations (seed 000 §3.6, seed 003 §3.4: run once
//! without recording, keep what is needed to run again, re-run with
//! recording during the reverse sweep).
//!
//! A loop marked `#[checkpoint]` (of the kind `loops.rs` records as a whole)
//! runs forward on plain scalars, keeping only the state at the start of
//! every `interval`-th iteration. Its generated `step` function recomputes one
//! iteration (and, on request, its local partial derivatives) from the state
//! and the loop's environment (the values of its invariants and constants).
//! During the reverse sweep the loop is visited segment by segment, from the
//! last: the segment is recomputed from its checkpoint with its partial
//! derivatives, and the loop's generated reverse function runs over it,
//! carrying the state's adjoints from segment to segment.
//!
//! The interval doubles (and every other checkpoint is dropped) whenever
//! there are more than twice as many checkpoints as iterations per segment,
//! so for n iterations about √(2n) checkpoints of the state are kept and a
//! segment of about √(n/2) iterations is recomputed at a time: peak memory
//! O(√n · (state + partials per iteration)), and every iteration is computed
//! twice in total (forward, then again during the sweep).

use crate::loops::{LoopData, NO_ID};
use crate::real::Real;
use crate::scalar::Scalar;
use crate::tape::{DeltaId, Tape};

/// One iteration of a checkpointed loop: `step(environment, state,
/// partials)` advances `state` by one iteration and, when `partials` is
/// given, writes that iteration's local partial derivatives into it.
pub type Step<S> = fn(&[S], &mut [S], Option<&mut [S]>);

/// What the reverse sweep needs to re-run a checkpointed loop.
pub(crate) struct CheckpointData<S> {
    environment: Vec<S>,
    /// The state at the start of segment `s`: `checkpoints[s*K..(s+1)*K]`.
    checkpoints: Vec<S>,
    interval: usize,
    iterations: usize,
    states: usize,
    invariants: usize,
    slots: usize,
    /// Outputs (K, filled in when recorded), inputs (K), invariants (J).
    ids: Vec<u32>,
    step: Step<S>,
    reverse: fn(&LoopData<S>, &mut [S]),
}

impl<S> CheckpointData<S> {
    /// Scalars and ids held.
    pub(crate) fn sizes(&self) -> (usize, usize) {
        (
            self.environment.len() + self.checkpoints.len() + self.interval * self.slots,
            self.ids.len(),
        )
    }

    /// The tape ids of the outputs, to be filled in when recorded.
    pub(crate) fn output_ids(&mut self) -> &mut [u32] {
        &mut self.ids[..self.states]
    }

    /// The ids this loop reads (inputs and invariants).
    pub(crate) fn input_ids(&self) -> &[u32] {
        &self.ids[self.states..]
    }
}

impl<S: Scalar> CheckpointData<S> {
    /// The reverse sweep of the loop: adds the adjoints of its outputs,
    /// propagated back through every iteration, to its inputs.
    pub(crate) fn reverse(&self, adjoints: &mut [S]) {
        let (k, j) = (self.states, self.invariants);
        let mut state_adjoints: Vec<S> = self.ids[..k]
            .iter()
            .map(|&id| adjoints[id as usize])
            .collect();
        if state_adjoints.iter().all(Scalar::is_zero) {
            return;
        }
        let mut invariant_adjoints = vec![S::zero(); j];
        // A segment's local data uses ids into a small scratch array:
        // outputs 0..K, inputs K..2K, invariants 2K..2K+J.
        let scratch_ids: Vec<u32> = (0..(2 * k + j) as u32).collect();
        let mut scratch = vec![S::zero(); 2 * k + j];
        let mut data = LoopData::with_parts(
            Vec::with_capacity(self.interval * self.slots),
            scratch_ids,
            k,
            j,
        );
        let segments = self.iterations.div_ceil(self.interval.max(1));
        let mut state = vec![S::zero(); k];
        for segment in (0..segments).rev() {
            let first = segment * self.interval;
            let length = self.interval.min(self.iterations - first);
            state.copy_from_slice(&self.checkpoints[segment * k..(segment + 1) * k]);
            data.reset(length, self.slots);
            for iteration in 0..length {
                let slots = data.slots_mut(iteration, self.slots);
                (self.step)(&self.environment, &mut state, Some(slots));
            }
            scratch[..k].copy_from_slice(&state_adjoints);
            for value in &mut scratch[k..] {
                *value = S::zero();
            }
            (self.reverse)(&data, &mut scratch);
            state_adjoints.copy_from_slice(&scratch[k..2 * k]);
            for (total, adjoint) in invariant_adjoints.iter_mut().zip(&scratch[2 * k..]) {
                *total += *adjoint;
            }
        }
        for (&id, adjoint) in self.ids[k..2 * k].iter().zip(&state_adjoints) {
            if id != NO_ID {
                adjoints[id as usize] += *adjoint;
            }
        }
        for (&id, adjoint) in self.ids[2 * k..].iter().zip(&invariant_adjoints) {
            if id != NO_ID {
                adjoints[id as usize] += *adjoint;
            }
        }
    }
}

/// Records a checkpointed loop; used by generated code.
pub struct CheckpointRecorder<'t, S> {
    tape: &'t Tape<S>,
    data: CheckpointData<S>,
    /// Iterations since the last checkpoint.
    since: usize,
}

impl<'t, S: Scalar> CheckpointRecorder<'t, S> {
    /// Starts a loop whose state before it is `states`, whose invariants are
    /// `invariants` (their values come first in `environment`, then the
    /// constants of the body), with `slots` partial derivatives per
    /// iteration.
    pub fn start<const K: usize, const J: usize>(
        tape: &'t Tape<S>,
        states: [&Real<'t, S>; K],
        invariants: [&Real<'t, S>; J],
        environment: Vec<S>,
        slots: usize,
        step: Step<S>,
        reverse: fn(&LoopData<S>, &mut [S]),
    ) -> Self {
        let mut ids = vec![NO_ID; K];
        ids.extend(states.map(Real::raw_id));
        ids.extend(invariants.map(Real::raw_id));
        CheckpointRecorder {
            tape,
            data: CheckpointData {
                environment,
                checkpoints: Vec::new(),
                interval: 1,
                iterations: 0,
                states: K,
                invariants: J,
                slots,
                ids,
                step,
                reverse,
            },
            since: 0,
        }
    }

    /// Called with the state before every iteration: keeps it if it starts a
    /// segment.
    #[inline]
    pub fn before_iteration(&mut self, state: &[S]) {
        if self.since == 0 {
            self.data.checkpoints.extend_from_slice(state);
            let kept = self.data.checkpoints.len() / self.data.states.max(1);
            if kept > 2 * self.data.interval {
                self.thin();
            }
        }
        self.since += 1;
        if self.since == self.data.interval {
            self.since = 0;
        }
        self.data.iterations += 1;
    }

    /// Doubles the interval, keeping every other checkpoint.
    #[cold]
    fn thin(&mut self) {
        let k = self.data.states;
        let kept = self.data.checkpoints.len() / k.max(1);
        let mut write = 0;
        for read in (0..kept).step_by(2) {
            self.data
                .checkpoints
                .copy_within(read * k..(read + 1) * k, write * k);
            write += 1;
        }
        self.data.checkpoints.truncate(write * k);
        self.data.interval *= 2;
        // The segment being filled started at an even checkpoint only if the
        // iterations so far are a multiple of the new interval.
        self.since = self.data.iterations % self.data.interval;
    }

    /// Ends the loop: the state after it, as dual values, given its values.
    pub fn finish<const K: usize>(self, values: [S; K]) -> [Real<'t, S>; K] {
        let CheckpointRecorder { tape, data, .. } = self;
        let inputs: [u32; K] = core::array::from_fn(|k| data.ids[K + k]);
        let anything_active = data.input_ids().iter().any(|&id| id != NO_ID);
        if data.iterations == 0 || !anything_active || tape.is_forward_only() {
            return core::array::from_fn(|k| match inputs[k] {
                NO_ID => Real::constant(values[k]),
                id => Real::with_id(tape, values[k], DeltaId(id)),
            });
        }
        let first = tape.push_checkpointed(data);
        core::array::from_fn(|k| Real::with_id(tape, values[k], first.offset(k)))
    }
}
