//! Long buffers the compiled passes are done with, kept with their stack
//! for the next buffer a pass makes.
//!
//! A gradient of code on long `Vec`s (a time-stepping loop whose steps
//! make their stages and slopes afresh) allocates a buffer per local
//! `vec![..]` in the forward pass and per adjoint of one in the adjoint,
//! and frees each soon after. The C allocator gives the memory of such
//! frees back to the system as soon as enough of it lies at the top of
//! its heap, and the next allocation takes fresh pages from it again: one
//! page fault per 4 KiB touched, which cost more than the arithmetic
//! (ode at n = 10⁴: a third of the gradient's time). The adjoint gives
//! these buffers back to the stack instead (its adjoints' storage, and the
//! buffers the forward pass moved onto the stack once it has put them
//! back), and the stack, pooled per thread, hands them out again: to the
//! adjoint's next storage, to the next call's forward pass. Short buffers
//! are left to the allocator, which reuses them without a fault.

/// Buffers of at least this many elements are kept when given back (every
/// one with the `spare-every-buffer` feature, the fuzzer's).
pub(crate) const SPARE_FROM_LEN: usize = if cfg!(feature = "spare-every-buffer") {
    1
} else {
    256
};

/// How many of the last spare buffers a request looks through for one long
/// enough.
const SEARCHED: usize = 8;

/// The spare buffers of a [`Stack`](super::Stack).
#[derive(Debug)]
pub(crate) struct Spares<S> {
    buffers: Vec<Vec<S>>,
    /// The capacity of `buffers`, in elements.
    room: usize,
}

impl<S> Default for Spares<S> {
    fn default() -> Self {
        Spares {
            buffers: Vec::new(),
            room: 0,
        }
    }
}

impl<S: Clone> Spares<S> {
    /// `len` copies of `value` in a buffer of its own: a spare one if
    /// `len` is long enough to be worth it and there is one. (Inlined, with
    /// the spares looked through out of line: the caller's optimiser sees
    /// the buffer's length, and a short buffer's allocation.)
    #[inline(always)]
    pub(crate) fn filled(&mut self, value: S, len: usize) -> Vec<S> {
        let mut buffer = if len < SPARE_FROM_LEN {
            Vec::with_capacity(len.max(1))
        } else {
            self.spare_or_new(len)
        };
        buffer.resize(len, value);
        buffer
    }

    /// An empty buffer with room for `len` elements: a spare one if there
    /// is one, else a new one.
    #[inline(never)]
    fn spare_or_new(&mut self, len: usize) -> Vec<S> {
        self.take(len).unwrap_or_else(|| Vec::with_capacity(len))
    }

    /// A copy of `elements` in a buffer of its own (a spare one, as
    /// [`filled`](Self::filled)).
    #[inline]
    pub(crate) fn copy_of(&mut self, elements: &[S]) -> Vec<S> {
        match self.take(elements.len()) {
            Some(mut buffer) => {
                buffer.extend_from_slice(elements);
                buffer
            }
            None => elements.to_vec(),
        }
    }
}

impl<S> Spares<S> {
    /// An empty spare buffer with room for `len` elements, if `len` is long
    /// enough: the last given back that has the room (most likely still in
    /// the cache), among the last few. (One without the room would be
    /// reallocated, which copies its whole old allocation.)
    #[inline]
    fn take(&mut self, len: usize) -> Option<Vec<S>> {
        if len < SPARE_FROM_LEN {
            return None;
        }
        let first = self.buffers.len().saturating_sub(SEARCHED);
        let at = first
            + self.buffers[first..]
                .iter()
                .rposition(|buffer| buffer.capacity() >= len)?;
        let buffer = self.buffers.swap_remove(at);
        self.room -= buffer.capacity();
        Some(buffer)
    }

    /// Keeps `buffer` for a later one if it is long (emptied), else frees it.
    #[inline]
    pub(crate) fn give_back(&mut self, mut buffer: Vec<S>) {
        if buffer.capacity() >= SPARE_FROM_LEN {
            buffer.clear();
            self.room += buffer.capacity();
            self.buffers.push(buffer);
        }
    }

    /// The bytes the spare buffers hold.
    pub(crate) fn bytes(&self) -> usize {
        self.room * core::mem::size_of::<S>()
    }

    /// Frees spare buffers, the first given back first, until at most
    /// `bytes` are held.
    pub(crate) fn trim(&mut self, bytes: usize) {
        let mut freed = 0;
        while self.bytes() > bytes && freed < self.buffers.len() {
            self.room -= self.buffers[freed].capacity();
            freed += 1;
        }
        self.buffers.drain(..freed);
    }
}

#[cfg(all(test, not(feature = "spare-every-buffer")))]
mod tests {
    use super::*;

    #[test]
    fn long_buffers_are_handed_out_again_and_short_ones_are_not_kept() {
        let mut spares = Spares::<f64>::default();
        let long = spares.filled(1.0, SPARE_FROM_LEN);
        let at = long.as_ptr();
        spares.give_back(long);
        spares.give_back(vec![0.0; SPARE_FROM_LEN - 1]);
        assert_eq!(spares.bytes(), SPARE_FROM_LEN * 8);
        // A short buffer is never taken from the spares.
        assert_eq!(spares.filled(2.0, 3), vec![2.0; 3]);
        let again = spares.filled(2.0, SPARE_FROM_LEN);
        assert_eq!(again.as_ptr(), at);
        assert_eq!(again, vec![2.0; SPARE_FROM_LEN]);
        assert_eq!(spares.bytes(), 0);
        // One too short for the request stays a spare.
        spares.give_back(again);
        let longer = spares.filled(4.0, 2 * SPARE_FROM_LEN);
        assert_ne!(longer.as_ptr(), at);
        assert_eq!(spares.bytes(), SPARE_FROM_LEN * 8);
        let copy = spares.copy_of(&[3.0; SPARE_FROM_LEN]);
        assert_eq!(copy, vec![3.0; SPARE_FROM_LEN]);
    }

    #[test]
    fn trimming_frees_the_oldest_spares_first() {
        let mut spares = Spares::<f64>::default();
        spares.give_back(Vec::with_capacity(1000));
        spares.give_back(Vec::with_capacity(SPARE_FROM_LEN));
        spares.trim(SPARE_FROM_LEN * 8);
        assert_eq!(spares.bytes(), SPARE_FROM_LEN * 8);
        spares.trim(0);
        assert_eq!(spares.bytes(), 0);
    }
}
