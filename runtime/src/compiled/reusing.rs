//! The record of forward passes that run one after another and whose
//! adjoint will not run: the chunks of `jvps`, `jacobian_fwd` and the sparse
//! Jacobians, each a forward pass on a few lanes of tangents.
//!
//! Such a pass keeps nothing, but on long buffers it makes as many as a
//! gradient's forward pass does: its seeded inputs, its local buffers, its
//! result. Each chunk made them afresh, and the C allocator, given them
//! back between chunks, handed out fresh pages for the next: at GradBench's
//! `ht` with 10⁵ points (a result of 3·10⁵ reals on 8 lanes, 21.6 MB per
//! chunk) a third of the Jacobian's time went to page faults. [`Reusing`]
//! keeps long buffers a pass is done with, as a [`Stack`]'s spares do: the
//! seeded inputs and the `Vec` result (given back by the caller once read)
//! and the local buffers a gradient's forward pass would move onto its
//! stack (the others are freed, as before). They serve the next pass's
//! local buffers (`Record::filled`) and inputs, and, when the record is
//! dropped, the next call's: the thread keeps them (one set per scalar
//! type, up to 1 GiB; `release_pooled_tapes` frees them), as it keeps the
//! stacks of gradients.
//!
//! [`Stack`]: super::Stack

use core::any::Any;
use core::cell::RefCell;

use super::spares::{Spares, SEARCHED};
use super::stack::{NoRecord, Record, KEEP_AT_MOST_BYTES};

/// A record that keeps nothing for an adjoint and hands the long buffers
/// given back to it (by the pass, at the end of their scope, or by the
/// caller, once it has read a result) to the next buffers a pass makes.
///
/// It takes the thread's spares when a pass first asks it for memory (a
/// pass that makes no buffer never does: `jvps` of a function of reals and
/// arrays).
#[derive(Debug)]
pub struct Reusing<S: 'static> {
    spares: Option<Spares<S>>,
}

thread_local! {
    /// The spares of the last `Reusing` record dropped on this thread, one
    /// per scalar type.
    static POOLED_SPARES: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
}

impl<S: 'static> Reusing<S> {
    /// A record with the memory the last one of this scalar type dropped
    /// on this thread held (taken when first needed).
    #[inline]
    pub fn pooled() -> Self {
        Reusing { spares: None }
    }

    /// The record's spares, the thread's taken on the first call.
    #[inline]
    fn spares(&mut self) -> &mut Spares<S> {
        self.spares.get_or_insert_with(|| {
            POOLED_SPARES
                .try_with(|pool| {
                    let mut pool = pool.borrow_mut();
                    let at = pool.iter().position(|spares| spares.is::<Spares<S>>())?;
                    pool.swap_remove(at).downcast::<Spares<S>>().ok()
                })
                .ok()
                .flatten()
                .map_or_else(Spares::default, |spares| *spares)
        })
    }
}

impl<S: 'static> Drop for Reusing<S> {
    /// (Its spares go to the thread's pool, unless it holds some of this
    /// scalar type already: a record dropped inside another's calls.)
    fn drop(&mut self) {
        let Some(mut spares) = self.spares.take() else {
            return;
        };
        spares.trim(KEEP_AT_MOST_BYTES);
        if spares.bytes() == 0 {
            return;
        }
        let _ = POOLED_SPARES.try_with(|pool| {
            let mut pool = pool.borrow_mut();
            if !pool.iter().any(|kept| kept.is::<Spares<S>>()) {
                pool.push(Box::new(spares));
            }
        });
    }
}

/// Frees the spares the `Reusing` records of the calling thread left.
pub(crate) fn release_pooled_spares() {
    let _ = POOLED_SPARES.try_with(|pool| pool.borrow_mut().clear());
}

impl<S: Clone> Reusing<S> {
    /// Keeps `buffer`'s memory for a later buffer if it is long. (Of the
    /// spares, the last few are kept: a pass may give back more than it
    /// took, a callee's result made by the allocator, and the spares of the
    /// passes of one call would otherwise grow by that much per pass.)
    #[inline]
    pub fn give_back(&mut self, buffer: Vec<S>) {
        let spares = self.spares();
        spares.give_back(buffer);
        spares.keep_last(2 * SEARCHED);
    }

    /// An empty buffer with room for `len` elements: a spare one if there
    /// is one long enough (for a pass's seeded inputs).
    #[inline]
    pub fn empty(&mut self, len: usize) -> Vec<S> {
        self.spares().empty(len)
    }
}

impl<S: Clone> Record<S> for Reusing<S> {
    type Reserved<'a>
        = NoRecord
    where
        S: 'a;
    #[inline(always)]
    fn real(&mut self, _: S) {}
    #[inline(always)]
    fn reals(&mut self, _: &[S]) {}
    /// (A buffer a pass is done with: its memory goes to the next.)
    #[inline(always)]
    fn buffer(&mut self, values: Vec<S>) {
        self.give_back(values);
    }
    #[inline(always)]
    fn swap_out(&mut self, _: &mut Vec<S>) {}
    #[inline(always)]
    fn bits(&mut self, _: u64) {}
    #[inline(always)]
    fn flag(&mut self, _: bool) {}
    #[inline(always)]
    fn reserve(&mut self, _: usize, _: usize, _: usize) -> NoRecord {
        NoRecord
    }
    #[inline(always)]
    fn filled(&mut self, value: S, len: usize) -> Vec<S> {
        self.spares().filled(value, len)
    }
    #[inline(always)]
    fn scratch(&mut self, value: S, len: usize) -> Vec<S> {
        self.spares().scratch(value, len)
    }
    #[inline(always)]
    fn done_with(&mut self, values: Vec<S>) {
        self.give_back(values);
    }
}

#[cfg(all(test, not(feature = "spare-every-buffer")))]
mod tests {
    use super::*;

    #[test]
    fn a_pass_gets_the_memory_the_one_before_gave_back() {
        let mut record = Reusing::<f64>::pooled();
        let first = Record::filled(&mut record, 1.0, 1000);
        let at = first.as_ptr();
        record.give_back(first);
        let inputs = record.empty(1000);
        assert_eq!((inputs.as_ptr(), inputs.len()), (at, 0));
        Record::buffer(&mut record, inputs);
        let again = Record::filled(&mut record, 2.0, 700);
        assert_eq!(again.as_ptr(), at);
        assert_eq!(again, vec![2.0; 700]);
        // A short buffer is left to the allocator.
        record.give_back(vec![0.0; 3]);
        assert_eq!(record.spares().bytes(), 0);
        // The next call's record gets the memory, once.
        record.give_back(again);
        drop(record);
        let mut next = Reusing::<f64>::pooled();
        let from_pool = Record::filled(&mut next, 0.0, 1000);
        assert_eq!(from_pool.as_ptr(), at);
        assert_eq!(Reusing::<f64>::pooled().spares().bytes(), 0);
        // A record never asked for memory takes none.
        next.give_back(from_pool);
        drop(next);
        drop(Reusing::<f64>::pooled());
        let mut after = Reusing::<f64>::pooled();
        let from_pool = Record::filled(&mut after, 0.0, 1000);
        assert_eq!(from_pool.as_ptr(), at);
        let mut next = after;
        // Of many given back, the last few are kept.
        let mut many = Reusing::<f64>::pooled();
        for _ in 0..5 * SEARCHED {
            many.give_back(vec![0.0; 1000]);
        }
        assert_eq!(many.spares().bytes(), 2 * SEARCHED * 1000 * 8);
        drop(many);
        // Released, it is gone.
        next.give_back(from_pool);
        drop(next);
        release_pooled_spares();
        assert_eq!(Reusing::<f64>::pooled().spares().bytes(), 0);
    }
}
