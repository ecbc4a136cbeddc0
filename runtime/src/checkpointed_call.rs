//! Checkpointed calls on the tape (`#[checkpoint] let y = f(..)`): the call
//! runs without recording, keeping its arguments; the reverse sweep re-runs
//! it with recording on a fresh tape and sweeps that.
//!
//! The differentiated arguments are kept in blocks (one per buffer-like
//! parameter, one per run of scalar parameters). A block that holds the same
//! bindings as the same block of the previous checkpointed call (a recurrent
//! cell's weights, called at every step) is shared with it instead of
//! copied, so arguments that do not change across the steps of a loop are
//! kept once. (A binding's value never changes, so the same bindings are
//! the same values, whatever the scalar: also an outer level's dual value.
//! Blocks holding constants, which have no binding, are always copied.)

use core::any::Any;
use std::rc::Rc;

use crate::differentiable::Differentiable;
use crate::loops::NO_ID;
use crate::real::Real;
use crate::scalar::{Primitive, Scalar};
use crate::tape::{DeltaId, Tape};

/// Re-runs a checkpointed call's recording pass on `tape`, its inputs made
/// from `reals` in order and its other arguments from `constants`; returns
/// the bindings of the output's reals, in leaf order.
pub type Rerun<S> = fn(&Tape<S>, &[S], &dyn Any) -> Vec<Option<DeltaId>>;

/// One block of a call's differentiated arguments: the range
/// `start..end` of this call's own kept values and bindings, or of an
/// earlier call's that it shares.
struct Block<S> {
    shared: Option<Kept<S>>,
    start: u32,
    end: u32,
}

/// Values and bindings kept by one call (for its blocks that it does not
/// share with an earlier call).
struct Kept<S> {
    values: Rc<[S]>,
    ids: Rc<[u32]>,
}

impl<S> Clone for Kept<S> {
    fn clone(&self) -> Self {
        Kept {
            values: Rc::clone(&self.values),
            ids: Rc::clone(&self.ids),
        }
    }
}

/// What the reverse sweep needs to re-run a checkpointed call: the values
/// of its differentiated arguments, owned copies of the others, and the
/// callee's `Rerun`.
pub(crate) struct CallData<S> {
    own: Kept<S>,
    blocks: Vec<Block<S>>,
    /// Output ids (filled in when recorded).
    outputs: Vec<u32>,
    constants: Box<dyn Any>,
    rerun: Rerun<S>,
}

impl<S> CallData<S> {
    /// The scalars and ids this call adds to the tape's memory.
    pub(crate) fn sizes(&self) -> (usize, usize) {
        let own = self.own.values.len();
        (own, self.outputs.len() + own)
    }

    /// Where `block`'s values and bindings are kept.
    fn kept<'a>(&'a self, block: &'a Block<S>) -> &'a Kept<S> {
        block.shared.as_ref().unwrap_or(&self.own)
    }

    fn block_values<'a>(&'a self, block: &'a Block<S>) -> &'a [S] {
        &self.kept(block).values[block.start as usize..block.end as usize]
    }

    fn block_ids<'a>(&'a self, block: &'a Block<S>) -> &'a [u32] {
        &self.kept(block).ids[block.start as usize..block.end as usize]
    }

    /// The bindings of the differentiated arguments' reals, in order.
    pub(crate) fn input_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.blocks
            .iter()
            .flat_map(|block| self.block_ids(block).iter().copied())
    }

    pub(crate) fn output_count(&self) -> usize {
        self.outputs.len()
    }

    /// Numbers the outputs `first`, `first + 1`, ...
    pub(crate) fn set_outputs(&mut self, first: u32) {
        for (k, id) in self.outputs.iter_mut().enumerate() {
            *id = first + k as u32;
        }
    }
}

impl<S: Scalar> CallData<S> {
    /// Re-runs the call with recording on a fresh tape, seeds its outputs
    /// with the adjoints of this call's outputs, sweeps it, and adds the
    /// adjoints of its inputs to this call's inputs.
    pub(crate) fn reverse(&self, adjoints: &mut [S]) {
        let seeds: Vec<S> = self
            .outputs
            .iter()
            .map(|&id| adjoints[id as usize])
            .collect();
        if seeds.iter().all(Scalar::is_zero) {
            return;
        }
        S::with_tape(|inner, inner_adjoints| {
            // The adjoints' buffer holds the arguments' values until the
            // re-run has read them.
            inner_adjoints.clear();
            for block in &self.blocks {
                inner_adjoints.extend_from_slice(self.block_values(block));
            }
            let leaves = (self.rerun)(inner, inner_adjoints, &*self.constants);
            inner_adjoints.clear();
            inner_adjoints.resize(inner.len(), S::zero());
            for (leaf, seed) in leaves.iter().zip(&seeds) {
                if let Some(id) = leaf {
                    inner_adjoints[id.index()] += *seed;
                }
            }
            inner.reverse_sweep(inner_adjoints);
            // The rerun made one input per real, first: bindings 0, 1, ...
            for (index, id) in self.input_ids().enumerate() {
                if id != NO_ID {
                    adjoints[id as usize] += inner_adjoints[index];
                }
            }
        });
    }
}

/// The differentiated arguments of a checkpointed call, gathered by the
/// generated code: their values and bindings, block by block, in buffers
/// the tape lends.
pub struct CallArgs<S> {
    values: Vec<S>,
    ids: Vec<u32>,
    /// Where each block ends (in the ids of a second lent pair).
    ends: (Vec<S>, Vec<u32>),
}

impl<S: Scalar> CallArgs<S> {
    /// Empty, in buffers lent by `tape`.
    pub fn new(tape: &Tape<S>) -> Self {
        let (values, ids) = tape.take_scratch();
        CallArgs {
            values,
            ids,
            ends: tape.take_scratch(),
        }
    }

    /// Appends one real: its value and binding.
    #[inline]
    pub fn push(&mut self, value: S, id: u32) {
        self.values.push(value);
        self.ids.push(id);
    }

    /// Ends the current block.
    pub fn end_block(&mut self) {
        self.ends.1.push(self.values.len() as u32);
    }

    /// The values pushed so far.
    pub fn values(&self) -> &[S] {
        &self.values
    }

    /// Gives the buffers back to `tape`.
    fn give_back(self, tape: &Tape<S>) {
        tape.return_scratch(self.values, self.ids);
        tape.return_scratch(self.ends.0, self.ends.1);
    }
}

/// Records a checkpointed call whose output has the values `values`: the
/// output as dual values of `tape` (one binding per real, whose derivative
/// the sweep computes by re-running the call).
pub fn checkpointed_call<'t, P: Primitive, S: Scalar<Prim = P> + 't, R: Differentiable<P>>(
    tape: &'t Tape<S>,
    values: R::Twin<S>,
    mut args: CallArgs<S>,
    constants: Box<dyn Any>,
    rerun: Rerun<S>,
) -> R::Twin<Real<'t, S>> {
    let anything_active = args.ids.iter().any(|&id| id != NO_ID);
    if !anything_active || tape.is_forward_only() {
        args.give_back(tape);
        return R::map_twin(&values, &mut |&value| Real::constant(value));
    }
    let mut outputs = 0;
    R::map_twin(&values, &mut |_: &S| outputs += 1);
    let (blocks, own) = tape.with_last_checkpointed_call(|earlier| blocks(&mut args, earlier));
    args.give_back(tape);
    let data = CallData {
        own,
        blocks,
        outputs: vec![NO_ID; outputs],
        constants,
        rerun,
    };
    let first = tape.push_checkpointed_call(data);
    let mut next = 0;
    R::map_twin(&values, &mut |&value| {
        let real = Real::with_id(tape, value, first.offset(next));
        next += 1;
        real
    })
}

/// The blocks of a call's arguments, sharing those that hold the same
/// bindings as the same block of `earlier`, the others kept in this call's
/// own allocation (whose values and ids it returns too).
fn blocks<S: Copy>(
    args: &mut CallArgs<S>,
    earlier: Option<&CallData<S>>,
) -> (Vec<Block<S>>, Kept<S>) {
    let mut blocks = Vec::with_capacity(args.ends.1.len());
    // The blocks not shared move to the front of the buffers, in order.
    let mut own = 0;
    let mut start = 0;
    for (k, &end) in args.ends.1.iter().enumerate() {
        let range = start as usize..end as usize;
        let ids = &args.ids[range.clone()];
        let old = earlier.and_then(|data| data.blocks.get(k).map(|old| (data, old)));
        match old.filter(|(data, old)| data.block_ids(old) == ids && !ids.contains(&NO_ID)) {
            Some((data, old)) => blocks.push(Block {
                shared: Some(data.kept(old).clone()),
                start: old.start,
                end: old.end,
            }),
            None => {
                args.values.copy_within(range.clone(), own);
                args.ids.copy_within(range, own);
                let length = end - start;
                blocks.push(Block {
                    shared: None,
                    start: own as u32,
                    end: own as u32 + length,
                });
                own += length as usize;
            }
        }
        start = end;
    }
    let kept = Kept {
        values: Rc::from(&args.values[..own]),
        ids: Rc::from(&args.ids[..own]),
    };
    (blocks, kept)
}

/// An argument that is not differentiated, kept by a checkpointed call for
/// its re-run: an owned copy, and a view of it as the argument.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be kept for re-running a checkpointed call",
    note = "the arguments of a checkpointed call that are not differentiated are copied (they must be `Clone` and own their data)"
)]
pub trait OwnedConstant<S> {
    /// The owned copy.
    type Owned: Any;
    /// Copies the argument.
    fn owned(&self) -> Self::Owned;
    /// The argument, from its copy.
    fn view(owned: &Self::Owned) -> &Self;
    /// The argument by value, from its copy (for sized arguments; unsized
    /// ones are passed by reference, through `view`).
    fn again(owned: &Self::Owned) -> Self
    where
        Self: Sized,
    {
        let _ = owned;
        unreachable!("deltad: only sized arguments are kept by value")
    }
}

impl<S, T: Clone + 'static> OwnedConstant<S> for T {
    type Owned = T;
    fn owned(&self) -> T {
        self.clone()
    }
    fn view(owned: &T) -> &T {
        owned
    }
    fn again(owned: &T) -> T {
        owned.clone()
    }
}

impl<S, T: Clone + 'static> OwnedConstant<S> for [T] {
    type Owned = Vec<T>;
    fn owned(&self) -> Vec<T> {
        self.to_vec()
    }
    fn view(owned: &Vec<T>) -> &[T] {
        owned
    }
}

impl<S> OwnedConstant<S> for str {
    type Owned = String;
    fn owned(&self) -> String {
        self.to_string()
    }
    fn view(owned: &String) -> &str {
        owned
    }
}
