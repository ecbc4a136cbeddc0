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
//! back), and so does the forward pass with its local buffers that it
//! does not keep, where their block ends (a step's slopes serve the next
//! step's, still in the cache); the stack, pooled per thread, hands them
//! out again: to the adjoint's next storage, to the forward pass's next
//! buffers and the next call's. Short buffers
//! are left to the allocator, which reuses them without a fault. (Chunks
//! of forward mode, which keep nothing, reuse theirs through
//! [`Reusing`](super::Reusing).)

/// Buffers of at least this many elements are kept when given back (every
/// one with the `spare-every-buffer` feature, the fuzzer's).
pub(crate) const SPARE_FROM_LEN: usize = if cfg!(feature = "spare-every-buffer") {
    1
} else {
    256
};

/// How many of the last spare buffers a request looks through for one long
/// enough.
pub(crate) const SEARCHED: usize = 8;

/// The spare buffers of a [`Stack`](super::Stack) or a
/// [`Reusing`](super::Reusing) record.
#[derive(Debug)]
pub(crate) struct Spares<S> {
    buffers: Vec<Vec<S>>,
    /// The capacity of `buffers`, in elements.
    room: usize,
    /// The elements of the long buffers requested since
    /// [`trim_to_requested`](Self::trim_to_requested).
    requested: usize,
}

impl<S> Default for Spares<S> {
    fn default() -> Self {
        Spares {
            buffers: Vec::new(),
            room: 0,
            requested: 0,
        }
    }
}

impl<S: Clone> Spares<S> {
    /// `len` copies of `value` in a buffer of its own: a spare one if
    /// `len` is long enough to be worth it and there is one. (Inlined, the
    /// search of the spares too: the caller's optimiser sees the buffer's
    /// length and a short buffer's allocation, and the buffer's pointer and
    /// length stay values of its own. Returned from a call, the buffer went
    /// through memory whose address the call had been given, which every
    /// store into the buffer might then have changed: a loop over it
    /// reloaded them after each store, 8% of a sparse Jacobian's time at
    /// n = 1000.)
    #[inline(always)]
    pub(crate) fn filled(&mut self, value: S, len: usize) -> Vec<S> {
        if len < SPARE_FROM_LEN {
            return super::repeated(value, len);
        }
        let mut buffer = self.empty(len);
        buffer.resize(len, value);
        buffer
    }

    /// A buffer of `len` elements whose values do not matter, because the
    /// caller writes each before reading it: a spare one keeps the values
    /// it was given back with, and only elements past them are set to
    /// `value` (a long buffer that a loop overwrites whole is not zeroed
    /// first: a sixth of ode's gradient at n = 10⁴ was such fills of
    /// memory no cache held any more). (Inlined: see
    /// [`filled`](Self::filled).)
    #[inline(always)]
    pub(crate) fn scratch(&mut self, value: S, len: usize) -> Vec<S> {
        if len < SPARE_FROM_LEN {
            return super::repeated(value, len);
        }
        let mut buffer = self.take(len).unwrap_or_else(|| Vec::with_capacity(len));
        if buffer.len() >= len {
            buffer.truncate(len);
        } else {
            buffer.resize(len, value);
        }
        buffer
    }

    /// An empty buffer with room for `len` elements: a spare one if `len`
    /// is long enough and there is one, else a new one. (Inlined: see
    /// [`filled`](Self::filled).)
    #[inline(always)]
    pub(crate) fn empty(&mut self, len: usize) -> Vec<S> {
        match self.take(len) {
            Some(mut buffer) => {
                buffer.clear();
                buffer
            }
            None => Vec::with_capacity(len),
        }
    }

    /// A copy of `elements` in a buffer of its own (a spare one, as
    /// [`filled`](Self::filled)).
    #[inline]
    pub(crate) fn copy_of(&mut self, elements: &[S]) -> Vec<S> {
        match self.take(elements.len()) {
            Some(mut buffer) => {
                buffer.clear();
                buffer.extend_from_slice(elements);
                buffer
            }
            None => elements.to_vec(),
        }
    }
}

impl<S> Spares<S> {
    /// A spare buffer with room for `len` elements (holding the values it
    /// was given back with), if `len` is long
    /// enough: among the last few given back, the one with the least room
    /// that suffices, the last given back of those (most likely still in
    /// the cache). (One without the room would be reallocated, which copies
    /// its whole old allocation; one with much more would leave the next,
    /// longer request none: a forward pass's seeded inputs must not take
    /// the memory of the result the pass before gave back.)
    #[inline(always)]
    fn take(&mut self, len: usize) -> Option<Vec<S>> {
        if len < SPARE_FROM_LEN {
            return None;
        }
        self.requested += len;
        let first = self.buffers.len().saturating_sub(SEARCHED);
        let (at, _) = self.buffers[first..]
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, buffer)| buffer.capacity() >= len)
            .min_by_key(|(_, buffer)| buffer.capacity())?;
        let at = first + at;
        let buffer = self.buffers.swap_remove(at);
        self.room -= buffer.capacity();
        Some(buffer)
    }

    /// Keeps `buffer` for a later one if it is long (with its values, for
    /// [`scratch`](Self::scratch)), else frees it.
    #[inline]
    pub(crate) fn give_back(&mut self, buffer: Vec<S>) {
        if buffer.capacity() >= SPARE_FROM_LEN {
            self.room += buffer.capacity();
            self.buffers.push(buffer);
        }
    }

    /// Frees all but the last `count` spare buffers given back (a request
    /// looks at the last few only: older ones would be held for nothing).
    #[inline]
    pub(crate) fn keep_last(&mut self, count: usize) {
        if self.buffers.len() > count {
            let older = self.buffers.len() - count;
            self.room -= self.buffers[..older]
                .iter()
                .map(Vec::capacity)
                .sum::<usize>();
            self.buffers.drain(..older);
        }
    }

    /// Frees spare buffers, the first given back first, until they hold
    /// no more than the long buffers requested since the last call (a
    /// call's passes give back about what they took, but where they give
    /// back more, its forward pass's locals for instance, the spares would
    /// otherwise grow with every call, and the memory they hold would be
    /// new pages to the next requests, which find only the last few).
    pub(crate) fn trim_to_requested(&mut self) {
        self.trim(self.requested * core::mem::size_of::<S>());
        self.requested = 0;
    }

    /// The bytes the spare buffers hold.
    pub(crate) fn bytes(&self) -> usize {
        self.room * core::mem::size_of::<S>()
    }

    /// Frees spare buffers, the first given back first, until at most
    /// `bytes` are held.
    pub(crate) fn trim(&mut self, bytes: usize) {
        if self.bytes() <= bytes {
            return;
        }
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
    fn a_scratch_buffer_keeps_the_values_of_its_memory() {
        let mut spares = Spares::<f64>::default();
        // No spare: `len` copies of the value.
        assert_eq!(
            spares.scratch(1.0, SPARE_FROM_LEN),
            vec![1.0; SPARE_FROM_LEN]
        );
        let mut given = vec![2.0; SPARE_FROM_LEN + 2];
        given.reserve(10);
        let at = given.as_ptr();
        spares.give_back(given);
        // Shorter: the spare's first values, nothing written.
        let shorter = spares.scratch(0.0, SPARE_FROM_LEN);
        assert_eq!((shorter.as_ptr(), shorter.len()), (at, SPARE_FROM_LEN));
        assert!(shorter.iter().all(|&v| v == 2.0));
        spares.give_back(shorter);
        // Longer: the values it holds, then the value.
        let longer = spares.scratch(0.0, SPARE_FROM_LEN + 4);
        assert_eq!(longer.as_ptr(), at);
        assert_eq!(&longer[..SPARE_FROM_LEN], &[2.0; SPARE_FROM_LEN][..]);
        assert_eq!(&longer[SPARE_FROM_LEN..], &[0.0; 4]);
        // A filled one is filled whatever the spare held.
        spares.give_back(longer);
        assert_eq!(
            spares.filled(3.0, SPARE_FROM_LEN),
            vec![3.0; SPARE_FROM_LEN]
        );
    }

    #[test]
    fn spares_are_cut_to_what_the_last_call_requested() {
        let mut spares = Spares::<f64>::default();
        for _ in 0..3 {
            spares.give_back(vec![1.0; SPARE_FROM_LEN]);
        }
        // One request (served by a spare), one short one (not counted).
        let taken = spares.scratch(0.0, SPARE_FROM_LEN);
        let _ = spares.filled(0.0, 3);
        assert_eq!(spares.bytes(), 2 * SPARE_FROM_LEN * 8);
        spares.trim_to_requested();
        assert_eq!(spares.bytes(), SPARE_FROM_LEN * 8);
        // Given back after the cut: held until the next one, which cuts
        // to nothing, nothing having been requested.
        spares.give_back(taken);
        assert_eq!(spares.bytes(), 2 * SPARE_FROM_LEN * 8);
        spares.trim_to_requested();
        assert_eq!(spares.bytes(), 0);
    }

    #[test]
    fn a_request_takes_the_spare_with_the_least_room_that_suffices() {
        let mut spares = Spares::<f64>::default();
        let (short, long) = (
            Vec::with_capacity(2 * SPARE_FROM_LEN),
            Vec::with_capacity(3 * SPARE_FROM_LEN),
        );
        let (short_at, long_at) = (short.as_ptr(), long.as_ptr());
        spares.give_back(short);
        spares.give_back(long);
        // The long one, given back last, is left for a longer request.
        let first = spares.filled(0.0, 2 * SPARE_FROM_LEN);
        assert_eq!(first.as_ptr(), short_at);
        let second = spares.filled(0.0, 3 * SPARE_FROM_LEN);
        assert_eq!(second.as_ptr(), long_at);
        // Of two with the same room, the one given back last.
        let (older, newer) = (Vec::with_capacity(1000), Vec::with_capacity(1000));
        let newer_at = newer.as_ptr();
        spares.give_back(older);
        spares.give_back(newer);
        let taken = spares.filled(0.0, SPARE_FROM_LEN);
        assert_eq!(taken.as_ptr(), newer_at);
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
