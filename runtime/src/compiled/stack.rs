//! The stack a compiled forward pass pushes onto and its adjoint pops from.
//!
//! Three typed lanes: reals of the scalar type `S`; 64-bit words for
//! discrete values (loop trip counts, exit points, `match` arms, indices,
//! integer variables), each value going in as the [`Bits`] of its own type
//! and coming out as that type again; and single bits for the decisions of
//! `if`s, 64 to a word (a loop that tests a condition per iteration keeps
//! one bit for it, not a word). The stack is LIFO across
//! calls: a callee's forward pass pushes on top of its caller's, and its
//! adjoint, called at the mirrored point of the caller's adjoint, pops
//! exactly what it pushed.

use core::cell::RefCell;
use std::thread::LocalKey;

use super::spares::Spares;
use crate::dual::Dual;
use crate::scalar::Scalar;

/// What a forward pass keeps for its adjoint: a [`Stack`], or [`NoRecord`]
/// when no adjoint will run (forward mode, values needed only for a
/// decision), in which case the pushes compile to nothing.
pub trait Record<S> {
    /// Room reserved in advance, written without a call (see [`Reserved`]).
    type Reserved<'a>: Reserved<S>
    where
        Self: 'a;
    /// Keeps one real.
    fn real(&mut self, value: S);
    /// Keeps the reals of a buffer, in order.
    fn reals(&mut self, values: &[S]);
    /// Keeps a whole buffer the forward pass has no further use for (a
    /// local `Vec` at the end of its scope), by moving it: nothing is
    /// copied, and the adjoint gets it back from [`Stack::pop_buffer`].
    /// (Where no adjoint will run, the memory serves the next buffers:
    /// [`Reusing`](super::Reusing).)
    fn buffer(&mut self, values: Vec<S>);
    /// Keeps the whole of `values`, which a loop is about to overwrite
    /// element by element without reading it, by moving it (like
    /// [`buffer`](Self::buffer)), and leaves in its place a buffer of the
    /// same length whose elements the loop writes. (Nothing where no
    /// adjoint will run: the loop writes over the elements in place.)
    fn swap_out(&mut self, values: &mut Vec<S>);
    /// Keeps a discrete value (see [`Bits`]).
    fn bits(&mut self, bits: u64);
    /// Keeps a decision, as one bit.
    fn flag(&mut self, set: bool);
    /// Room for `reals` more reals, `words` more words and `flags` more
    /// decisions: a loop whose iterations keep a bounded number of values
    /// reserves them all before it starts, so its pushes need no allocation
    /// (and no call, which would make the optimiser keep the loop's values
    /// in memory).
    fn reserve(&mut self, reals: usize, words: usize, flags: usize) -> Self::Reserved<'_>;
    /// A new local buffer of `len` copies of `value` (`vec![value; len]`),
    /// in memory an adjoint or an earlier pass gave back if there is some
    /// (see [`Stack::filled`], [`Reusing`](super::Reusing)).
    #[inline(always)]
    fn filled(&mut self, value: S, len: usize) -> Vec<S>
    where
        S: Clone,
    {
        super::repeated(value, len)
    }
    /// A new local buffer of `len` elements that the pass overwrites whole
    /// before it reads any (`let mut v = vec![value; len];` followed by a
    /// loop setting every `v[i]`): in memory given back, as
    /// [`filled`](Self::filled), but with the values found there; `value`
    /// only where there are none.
    #[inline(always)]
    fn scratch(&mut self, value: S, len: usize) -> Vec<S>
    where
        S: Clone,
    {
        self.filled(value, len)
    }
    /// A local buffer the forward pass is done with and does not keep (at
    /// the end of its block): its memory, still in the cache, serves the
    /// next buffer the pass makes (dropped where nothing keeps memory).
    #[inline(always)]
    fn done_with(&mut self, values: Vec<S>) {
        drop(values);
    }
}

/// Pushes into room reserved in advance. Pushing more than was reserved
/// panics.
pub trait Reserved<S> {
    /// Keeps one real.
    fn real(&mut self, value: S);
    /// Keeps several reals, in order (the values a block pushes when it
    /// ends: one check of the room for all of them).
    fn reals(&mut self, values: &[S]);
    /// Keeps a discrete value.
    fn bits(&mut self, bits: u64);
    /// Keeps a decision.
    fn flag(&mut self, set: bool);
}

/// The record of a forward pass whose adjoint will not run.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoRecord;

impl<S> Record<S> for NoRecord {
    type Reserved<'a> = NoRecord;
    #[inline(always)]
    fn real(&mut self, _: S) {}
    #[inline(always)]
    fn reals(&mut self, _: &[S]) {}
    #[inline(always)]
    fn buffer(&mut self, _: Vec<S>) {}
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
}

impl<S> Reserved<S> for NoRecord {
    #[inline(always)]
    fn real(&mut self, _: S) {}
    #[inline(always)]
    fn reals(&mut self, _: &[S]) {}
    #[inline(always)]
    fn bits(&mut self, _: u64) {}
    #[inline(always)]
    fn flag(&mut self, _: bool) {}
}

/// The values a compiled forward pass keeps for its adjoint. (`Clone`:
/// a Jacobian runs the adjoint once per output real from a copy of what one
/// forward pass kept; `clone_from` reuses the copy's buffers.)
#[derive(Debug)]
pub struct Stack<S> {
    reals: Vec<S>,
    bits: Vec<u64>,
    /// The decisions, bit `i % 64` of word `i / 64` for the `i`-th. Pops
    /// only count down, so there are at least `flag_count.div_ceil(64)`
    /// words; the bits from `flag_count` on are stale, and pushes
    /// overwrite them.
    flags: Vec<u64>,
    flag_count: usize,
    /// Whole buffers kept by [`Record::buffer`], a lane of their own (the
    /// adjoint pops them in the reverse order of their pushes, as it does
    /// the other lanes).
    buffers: Vec<Vec<S>>,
    /// The capacity of the buffers kept now, and its peak since the stack
    /// was last cleared (they leave the stack as the adjoint pops them).
    buffered_room: usize,
    buffered_room_peak: usize,
    /// Long buffers the passes are done with, for the next ones they make
    /// (not part of what is kept: see [`Stack::filled`]).
    spares: Spares<S>,
}

impl<S: Clone> Clone for Stack<S> {
    fn clone(&self) -> Self {
        let mut copy = Stack::default();
        copy.clone_from(self);
        copy
    }
    /// (The copies of whole buffers are made in this stack's spare ones,
    /// and what it held goes to its spares: a Jacobian copying the forward
    /// pass's record once per output allocates nothing after the first.)
    fn clone_from(&mut self, source: &Self) {
        self.reals.clone_from(&source.reals);
        self.bits.clone_from(&source.bits);
        self.flags.clone_from(&source.flags);
        self.flag_count = source.flag_count;
        for buffer in self.buffers.drain(..) {
            self.spares.give_back(buffer);
        }
        let spares = &mut self.spares;
        self.buffers
            .extend(source.buffers.iter().map(|buffer| spares.copy_of(buffer)));
        // (The copies' capacities, which the pops take off.)
        self.buffered_room = self.buffers.iter().map(Vec::capacity).sum();
        self.buffered_room_peak = source.buffered_room_peak.max(self.buffered_room);
    }
}

impl<S> Default for Stack<S> {
    fn default() -> Self {
        Stack {
            reals: Vec::new(),
            bits: Vec::new(),
            flags: Vec::new(),
            flag_count: 0,
            buffers: Vec::new(),
            buffered_room: 0,
            buffered_room_peak: 0,
            spares: Spares::default(),
        }
    }
}

/// What a stack holds: the memory one forward pass keeps for its adjoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StackStats {
    /// Reals kept.
    pub reals: usize,
    /// Discrete words kept (trip counts, exit points, arms, indices).
    pub words: usize,
    /// Decisions kept (one bit each).
    pub decisions: usize,
    /// Bytes the kept values occupy.
    pub bytes_used: usize,
    /// Bytes the stack's buffers have reserved (for the whole buffers it
    /// keeps, the most they held at once).
    pub bytes_reserved: usize,
}

impl<S: Scalar> Record<S> for Stack<S> {
    type Reserved<'a>
        = StackRoom<'a, S>
    where
        S: 'a;
    #[inline(always)]
    fn real(&mut self, value: S) {
        self.reals.push(value);
    }
    #[inline]
    fn reserve(&mut self, reals: usize, words: usize, flags: usize) -> StackRoom<'_, S> {
        self.reals.reserve(reals);
        self.bits.reserve(words);
        // The room keeps the last, partly filled word of decisions itself
        // until it is dropped (if it takes any decisions: most loops'
        // rooms, often reserved once per iteration of an outer loop, do not
        // touch the decisions at all).
        let flag_count = self.flag_count;
        let mut pending = 0;
        if flags != 0 {
            let (full, filled) = (flag_count / 64, flag_count % 64);
            if let Some(word) = self.flags.get(full) {
                pending = word & ((1 << filled) - 1);
            }
            self.flags.truncate(full);
            self.flags.reserve((flag_count + flags).div_ceil(64) - full);
        }
        StackRoom {
            reals_end: self.reals.len() + reals,
            words_end: self.bits.len() + words,
            flags_end: flag_count + flags,
            flag_count,
            pending,
            stack: self,
        }
    }
    #[inline(always)]
    fn reals(&mut self, values: &[S]) {
        self.reals.extend_from_slice(values);
    }
    #[inline(always)]
    fn filled(&mut self, value: S, len: usize) -> Vec<S> {
        Stack::filled(self, value, len)
    }
    #[inline(always)]
    fn scratch(&mut self, value: S, len: usize) -> Vec<S> {
        self.spares.scratch(value, len)
    }
    #[inline(always)]
    fn done_with(&mut self, values: Vec<S>) {
        self.spares.give_back(values);
    }
    #[inline(always)]
    fn buffer(&mut self, values: Vec<S>) {
        self.buffered_room += values.capacity();
        self.buffered_room_peak = self.buffered_room_peak.max(self.buffered_room);
        self.buffers.push(values);
    }
    #[inline(always)]
    fn swap_out(&mut self, values: &mut Vec<S>) {
        let fresh = self.spares.scratch(S::zero(), values.len());
        Record::buffer(self, core::mem::replace(values, fresh));
    }
    #[inline(always)]
    fn bits(&mut self, bits: u64) {
        self.bits.push(bits);
    }
    #[inline(always)]
    fn flag(&mut self, set: bool) {
        let at = self.flag_count;
        let (word, bit) = (at / 64, at % 64);
        if bit == 0 {
            self.flags.truncate(word);
            self.flags.push(u64::from(set));
        } else if let Some(word) = self.flags.get_mut(word) {
            *word = (*word & !(1 << bit)) | (u64::from(set) << bit);
        }
        self.flag_count = at + 1;
    }
}

/// Room reserved on a [`Stack`]. It holds the decisions pushed into it
/// until a word of them is full (a loop's decisions then stay in
/// registers), and gives the stack the last, partly filled word when it
/// is dropped.
pub struct StackRoom<'a, S> {
    stack: &'a mut Stack<S>,
    reals_end: usize,
    words_end: usize,
    flags_end: usize,
    /// The stack's count of decisions, this room's included.
    flag_count: usize,
    /// The decisions of the word being filled (bits at and above
    /// `flag_count % 64` are 0).
    pending: u64,
}

impl<S> Drop for StackRoom<'_, S> {
    #[inline(always)]
    fn drop(&mut self) {
        if self.flags_end == self.stack.flag_count {
            // Room for no decisions.
            return;
        }
        if self.flag_count % 64 != 0 {
            self.stack.flags.push(self.pending);
        }
        self.stack.flag_count = self.flag_count;
    }
}

impl<S: Scalar> Reserved<S> for StackRoom<'_, S> {
    #[inline(always)]
    fn real(&mut self, value: S) {
        let len = self.stack.reals.len();
        if len >= self.reals_end {
            overflow();
        }
        // SAFETY: `reserve` made the capacity at least `reals_end`, so the
        // slot at `len < reals_end` is allocated; it is written before the
        // length grows over it.
        unsafe {
            self.stack.reals.as_mut_ptr().add(len).write(value);
            self.stack.reals.set_len(len + 1);
        }
    }
    #[inline(always)]
    fn reals(&mut self, values: &[S]) {
        let len = self.stack.reals.len();
        if len + values.len() > self.reals_end {
            overflow();
        }
        // SAFETY: as in `real`, for the slots `len..len + values.len()`,
        // all below `reals_end`.
        unsafe {
            let end = self.stack.reals.as_mut_ptr().add(len);
            core::ptr::copy_nonoverlapping(values.as_ptr(), end, values.len());
            self.stack.reals.set_len(len + values.len());
        }
    }
    #[inline(always)]
    fn bits(&mut self, bits: u64) {
        let len = self.stack.bits.len();
        if len >= self.words_end {
            overflow();
        }
        // SAFETY: as in `real`.
        unsafe {
            self.stack.bits.as_mut_ptr().add(len).write(bits);
            self.stack.bits.set_len(len + 1);
        }
    }
    #[inline(always)]
    fn flag(&mut self, set: bool) {
        let at = self.flag_count;
        if at >= self.flags_end {
            overflow();
        }
        let bit = at % 64;
        self.pending |= u64::from(set) << bit;
        self.flag_count = at + 1;
        if bit == 63 {
            let flags = &mut self.stack.flags;
            let len = flags.len();
            // SAFETY: the stack holds the full words below `at`, `at / 64`
            // of them (`len`); `reserve` made the capacity at least
            // `flags_end.div_ceil(64) > at / 64` words. The word is written
            // before the length grows over it.
            unsafe {
                flags.as_mut_ptr().add(len).write(self.pending);
                flags.set_len(len + 1);
            }
            self.pending = 0;
        }
    }
}

#[cold]
#[inline(never)]
fn overflow() -> ! {
    panic!("deltad: a loop kept more values than it reserved (this is a bug in deltad)")
}

#[cold]
#[inline(never)]
fn underflow() -> ! {
    panic!(
        "deltad: the adjoint read more values than its forward pass kept (this is a bug in deltad)"
    )
}

impl<S: Scalar> Stack<S> {
    /// An empty stack.
    pub fn new() -> Self {
        Self::default()
    }

    /// The real pushed last.
    #[inline(always)]
    pub fn pop_real(&mut self) -> S {
        match self.reals.pop() {
            Some(value) => value,
            None => underflow(),
        }
    }

    /// The last `N` reals pushed, in the order they were pushed (the
    /// values a block pushed when it ended, by [`Record::reals`]).
    #[inline(always)]
    pub fn pop_real_array<const N: usize>(&mut self) -> [S; N] {
        let mut values = [S::zero(); N];
        self.pop_reals_into(&mut values);
        values
    }

    /// The last `len` reals pushed, in the order they were pushed (a buffer
    /// kept by [`Record::reals`]).
    #[inline]
    pub fn pop_reals(&mut self, len: usize) -> Vec<S> {
        let Some(start) = self.reals.len().checked_sub(len) else {
            underflow()
        };
        let popped = self.spares.copy_of(&self.reals[start..]);
        self.reals.truncate(start);
        popped
    }

    /// The last `len` reals, into `into` (its contents replaced, its
    /// allocation reused: a variable's old contents put back).
    #[inline]
    pub fn pop_reals_into_vec(&mut self, into: &mut Vec<S>, len: usize) {
        let Some(start) = self.reals.len().checked_sub(len) else {
            underflow()
        };
        into.clear();
        into.extend_from_slice(&self.reals[start..]);
        self.reals.truncate(start);
    }

    /// `len` copies of `value` in a buffer of its own (a new local buffer,
    /// an adjoint's storage): a long one in the memory of a buffer given
    /// back by [`give_back`](Self::give_back) if there is one, which this
    /// stack keeps for its next call (see `spares.rs`).
    #[inline(always)]
    pub fn filled(&mut self, value: S, len: usize) -> Vec<S> {
        self.spares.filled(value, len)
    }

    /// Gives a buffer the adjoint is done with back, for
    /// [`filled`](Self::filled).
    #[inline]
    pub fn give_back(&mut self, buffer: Vec<S>) {
        self.spares.give_back(buffer);
    }

    /// The buffer kept last by [`Record::buffer`].
    #[inline]
    pub fn pop_buffer(&mut self) -> Vec<S> {
        match self.buffers.pop() {
            Some(values) => {
                self.buffered_room -= values.capacity();
                values
            }
            None => underflow(),
        }
    }

    /// The last `len` reals pushed, written into `into` (which has `len`
    /// elements) in the order they were pushed.
    #[inline]
    pub fn pop_reals_into(&mut self, into: &mut [S]) {
        let Some(start) = self.reals.len().checked_sub(into.len()) else {
            underflow()
        };
        into.copy_from_slice(&self.reals[start..]);
        self.reals.truncate(start);
    }

    /// Puts back the elements of `buffer` that [`keep_range`] kept, for
    /// the same range. The forward pass completed, so it kept exactly
    /// `start..end` (nothing where that is empty); the range is not cut
    /// here: a buffer shorter than it now panics rather than take other
    /// values off the stack.
    #[inline(always)]
    pub fn restore_range(&mut self, buffer: &mut [S], start: usize, end: usize) {
        if start < end {
            self.pop_reals_into(&mut buffer[start..end]);
        }
    }

    /// The discrete value pushed last, as the type it was pushed as.
    #[inline(always)]
    pub fn pop_bits<T: Bits>(&mut self) -> T {
        match self.bits.pop() {
            Some(bits) => T::from_bits(bits),
            None => underflow(),
        }
    }

    /// The decision pushed last.
    #[inline(always)]
    pub fn pop_flag(&mut self) -> bool {
        // From an empty stack `at` wraps around, past every word: one test
        // catches both.
        let at = self.flag_count.wrapping_sub(1);
        self.flag_count = at;
        match self.flags.get(at / 64) {
            Some(bits) => (bits >> (at % 64)) & 1 == 1,
            None => underflow(),
        }
    }

    /// True if any of the stack's buffers has memory.
    #[inline(always)]
    fn holds_memory(&self) -> bool {
        self.reals.capacity() != 0
            || self.bits.capacity() != 0
            || self.flags.capacity() != 0
            || self.buffers.capacity() != 0
            || self.spares.bytes() != 0
    }

    /// Checks, in debug builds and for deltad's fuzzer (the
    /// `spare-every-buffer` feature), that an adjoint took back everything
    /// its forward pass kept: a value left behind would be read by the next
    /// adjoint of a caller as one of its own.
    #[inline(always)]
    pub fn assert_emptied(&self) {
        if cfg!(any(debug_assertions, feature = "spare-every-buffer")) {
            assert!(
                self.is_empty(),
                "deltad: the adjoint left values its forward pass kept (this is a bug in deltad)"
            );
        }
    }

    /// True if nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.reals.is_empty()
            && self.bits.is_empty()
            && self.flag_count == 0
            && self.buffers.is_empty()
    }

    /// What the stack holds now.
    pub fn stats(&self) -> StackStats {
        let real = core::mem::size_of::<S>();
        let buffered: usize = self.buffers.iter().map(Vec::len).sum();
        let reals = self.reals.len() + buffered;
        StackStats {
            reals,
            words: self.bits.len(),
            decisions: self.flag_count,
            bytes_used: reals * real + (self.bits.len() + self.flag_count.div_ceil(64)) * 8,
            bytes_reserved: (self.reals.capacity() + self.buffered_room_peak) * real
                + (self.bits.capacity() + self.flags.capacity()) * 8,
        }
    }

    fn clear(&mut self) {
        self.reals.clear();
        self.bits.clear();
        self.flags.clear();
        self.flag_count = 0;
        self.buffers.clear();
        self.buffered_room = 0;
        self.buffered_room_peak = 0;
    }

    /// Gives back reserved memory above `bytes` (words and decisions first
    /// get at most a quarter of it each); spare buffers are freed first,
    /// down to what the rest leaves.
    fn trim(&mut self, bytes: usize) {
        let reserved = self.stats().bytes_reserved;
        self.spares.trim(bytes.saturating_sub(reserved));
        if reserved <= bytes {
            return;
        }
        let real = core::mem::size_of::<S>().max(1);
        self.bits.shrink_to(self.bits.capacity().min(bytes / 4 / 8));
        self.flags
            .shrink_to(self.flags.capacity().min(bytes / 4 / 8));
        let left = bytes - (self.bits.capacity() + self.flags.capacity()) * 8;
        self.reals.shrink_to(self.reals.capacity().min(left / real));
    }
}

/// A local buffer kept whole at the end of its scope, for the adjoint: a
/// long `Vec` is moved onto the stack's buffer lane (nothing copied either
/// way); a short one's reals, and an array's, go onto the real lane (a
/// copy costs less than an allocation kept alive per buffer, which the
/// next buffer of a loop could have reused).
pub trait KeptWhole<S>: Sized {
    /// Keeps the buffer.
    fn keep<R: Record<S>>(self, rec: &mut R);
    /// The buffer of this kind kept last.
    fn pop_kept(stack: &mut Stack<S>) -> Self;
    /// Gives the memory of a buffer the forward pass is done with and does
    /// not keep to `rec` (see [`Record::done_with`]; nothing for an array).
    fn done_with<R: Record<S>>(self, rec: &mut R);
    /// Gives the buffer's memory back to `stack` once the adjoint is done
    /// with it (see [`Stack::give_back`]; nothing for an array).
    fn give_back(&mut self, stack: &mut Stack<S>);
}

/// Gives the memory of `values`, a local buffer the forward pass is done
/// with and does not keep, to `rec` ([`KeptWhole::done_with`]).
#[inline(always)]
pub fn done_with<S, R: Record<S>, B: KeptWhole<S>>(rec: &mut R, values: B) {
    values.done_with(rec);
}

/// From this many elements on, a kept `Vec` is moved, not copied (from one
/// on with the `spare-every-buffer` feature, the fuzzer's).
const MOVED_FROM_LEN: usize = if cfg!(feature = "spare-every-buffer") {
    1
} else {
    256
};
/// The word after a moved `Vec` (after a copied one: its length).
const MOVED: u64 = u64::MAX;

impl<S: Scalar> KeptWhole<S> for Vec<S> {
    #[inline(always)]
    fn keep<R: Record<S>>(self, rec: &mut R) {
        if self.len() >= MOVED_FROM_LEN {
            rec.buffer(self);
            rec.bits(MOVED);
        } else {
            rec.reals(&self);
            rec.bits(self.len() as u64);
        }
    }
    #[inline(always)]
    fn pop_kept(stack: &mut Stack<S>) -> Self {
        match stack.pop_bits::<u64>() {
            MOVED => stack.pop_buffer(),
            len => stack.pop_reals(len as usize),
        }
    }
    #[inline(always)]
    fn give_back(&mut self, stack: &mut Stack<S>) {
        stack.give_back(core::mem::take(self));
    }
    #[inline(always)]
    fn done_with<R: Record<S>>(self, rec: &mut R) {
        rec.done_with(self);
    }
}

impl<S: Scalar, const N: usize> KeptWhole<S> for [S; N] {
    #[inline(always)]
    fn keep<R: Record<S>>(self, rec: &mut R) {
        rec.reals(&self);
    }
    #[inline(always)]
    fn pop_kept(stack: &mut Stack<S>) -> Self {
        let mut values = [S::zero(); N];
        stack.pop_reals_into(&mut values);
        values
    }
    #[inline(always)]
    fn give_back(&mut self, _: &mut Stack<S>) {}
    #[inline(always)]
    fn done_with<R: Record<S>>(self, _: &mut R) {}
}

/// A buffer whose elements `start..end` a loop is about to overwrite one by
/// one, without reading them (`analyze/loop_saves.rs`): they are kept before
/// the loop, in one copy, and the adjoint puts them back after running the
/// loop backwards. Where the loop overwrites the whole of a long `Vec`, the
/// `Vec` itself is kept, moved, and the loop writes into other memory
/// ([`Record::swap_out`]); the adjoint moves it back. The range is cut to
/// the buffer, so that a loop running past its end panics where the plain
/// function does (at its first write there), before any adjoint.
pub trait KeptRange<S> {
    /// Keeps the elements `start..end`, before the loop.
    fn keep_range<R: Record<S>>(&mut self, rec: &mut R, start: usize, end: usize);
    /// Puts back the elements `start..end` kept last, after the loop ran
    /// backwards (the buffer has the length it had when they were kept).
    fn restore_range(&mut self, stack: &mut Stack<S>, start: usize, end: usize);
}

/// True if a loop over `start..end` overwrites the whole of a `Vec` of
/// `len` elements, long enough to be kept by moving it.
#[inline(always)]
fn overwrites_whole(len: usize, start: usize, end: usize) -> bool {
    start == 0 && end >= len && len >= MOVED_FROM_LEN
}

impl<S: Scalar> KeptRange<S> for Vec<S> {
    #[inline(always)]
    fn keep_range<R: Record<S>>(&mut self, rec: &mut R, start: usize, end: usize) {
        if overwrites_whole(self.len(), start, end) {
            rec.swap_out(self);
        } else {
            self.as_mut_slice().keep_range(rec, start, end);
        }
    }
    #[inline(always)]
    fn restore_range(&mut self, stack: &mut Stack<S>, start: usize, end: usize) {
        if overwrites_whole(self.len(), start, end) {
            let kept = stack.pop_buffer();
            stack.give_back(core::mem::replace(self, kept));
        } else {
            self.as_mut_slice().restore_range(stack, start, end);
        }
    }
}

impl<S: Scalar> KeptRange<S> for &mut [S] {
    #[inline(always)]
    fn keep_range<R: Record<S>>(&mut self, rec: &mut R, start: usize, end: usize) {
        let end = end.min(self.len());
        rec.reals(&self[start.min(end)..end]);
    }
    #[inline(always)]
    fn restore_range(&mut self, stack: &mut Stack<S>, start: usize, end: usize) {
        let end = end.min(self.len());
        stack.restore_range(self, start.min(end), end);
    }
}

impl<S: Scalar, const N: usize> KeptRange<S> for [S; N] {
    #[inline(always)]
    fn keep_range<R: Record<S>>(&mut self, rec: &mut R, start: usize, end: usize) {
        self.as_mut_slice().keep_range(rec, start, end);
    }
    #[inline(always)]
    fn restore_range(&mut self, stack: &mut Stack<S>, start: usize, end: usize) {
        self.as_mut_slice().restore_range(stack, start, end);
    }
}

/// A discrete value as a 64-bit word and back: integers up to 64 bits,
/// `bool`, `char` and the machine floats (constant reals a forward pass keeps).
pub trait Bits: Copy {
    /// The value as a word.
    fn to_bits(self) -> u64;
    /// The value the word was made from.
    fn from_bits(bits: u64) -> Self;
}

macro_rules! integer_bits {
    ($($t:ty)*) => {$(
        impl Bits for $t {
            #[inline(always)]
            fn to_bits(self) -> u64 {
                self as u64
            }
            #[inline(always)]
            fn from_bits(bits: u64) -> Self {
                bits as $t
            }
        }
    )*};
}
integer_bits!(u8 u16 u32 u64 usize i8 i16 i32 i64 isize);

impl Bits for bool {
    #[inline(always)]
    fn to_bits(self) -> u64 {
        u64::from(self)
    }
    #[inline(always)]
    fn from_bits(bits: u64) -> Self {
        bits != 0
    }
}

impl Bits for char {
    #[inline(always)]
    fn to_bits(self) -> u64 {
        u64::from(u32::from(self))
    }
    #[inline(always)]
    fn from_bits(bits: u64) -> Self {
        char::from_u32(bits as u32).unwrap_or(char::REPLACEMENT_CHARACTER)
    }
}

impl Bits for f64 {
    #[inline(always)]
    fn to_bits(self) -> u64 {
        f64::to_bits(self)
    }
    #[inline(always)]
    fn from_bits(bits: u64) -> Self {
        f64::from_bits(bits)
    }
}

impl Bits for f32 {
    #[inline(always)]
    fn to_bits(self) -> u64 {
        u64::from(f32::to_bits(self))
    }
    #[inline(always)]
    fn from_bits(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
}

/// A stack kept for the next call keeps at most this many bytes reserved
/// (a bigger one gives the rest back; the next call that needs more grows
/// it again, faulting in only the part above this).
pub(crate) const KEEP_AT_MOST_BYTES: usize = 1 << 30;
/// At most this many stacks are kept per thread and scalar type.
const KEEP_AT_MOST_STACKS: usize = 8;

/// A thread's stacks for reuse, boxed: a call takes one and gives it back
/// by moving a pointer (moving the stack itself, its lanes and spares,
/// cost a small function's gradient more than its passes: `memmove` was
/// 38% of a loop of `grad` calls of a three-real function).
pub(crate) type StackPool<S> = RefCell<Vec<Box<Stack<S>>>>;

thread_local! {
    pub(crate) static F64_STACKS: StackPool<f64> = const { RefCell::new(Vec::new()) };
    pub(crate) static F32_STACKS: StackPool<f32> = const { RefCell::new(Vec::new()) };
    pub(crate) static DUAL_F64_STACKS: StackPool<Dual<f64>> = const { RefCell::new(Vec::new()) };
    pub(crate) static DUAL_F32_STACKS: StackPool<Dual<f32>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` with an empty stack from `pool`, then gives the stack back.
#[inline]
pub(crate) fn with_pooled_stack<S: Scalar, R>(
    pool: &'static LocalKey<StackPool<S>>,
    f: impl FnOnce(&mut Stack<S>) -> R,
) -> R {
    // `try_with`: during thread teardown the pool may be gone; then allocate.
    let mut stack: Box<Stack<S>> = pool
        .try_with(|stacks| stacks.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_default();
    let result = f(&mut stack);
    stack.clear();
    stack.spares.trim_to_requested();
    stack.trim(KEEP_AT_MOST_BYTES);
    let _ = pool.try_with(|stacks| {
        let mut stacks = stacks.borrow_mut();
        if stacks.len() < KEEP_AT_MOST_STACKS {
            stacks.push(stack);
        }
    });
    result
}

/// Frees the stacks the calling thread keeps for reuse.
pub(crate) fn release_pooled_stacks() {
    fn release<S>(pool: &'static LocalKey<StackPool<S>>) {
        let _ = pool.try_with(|stacks| stacks.borrow_mut().clear());
    }
    release(&F64_STACKS);
    release(&F32_STACKS);
    release(&DUAL_F64_STACKS);
    release(&DUAL_F32_STACKS);
    super::reusing::release_pooled_spares();
}

/// The number of iterations per segment of a checkpointed loop of `total`
/// iterations: ⌈√(total/2)⌉ (at least 1), so that about √(2·total)
/// snapshots of the state are kept and one segment is run again at a time.
pub fn checkpoint_segment(total: usize) -> usize {
    let target = total.div_ceil(2);
    let mut segment = (target as f64).sqrt() as usize;
    while segment * segment < target {
        segment += 1;
    }
    segment.max(1)
}

/// Runs `f` with a new empty stack that never allocates unless something is
/// pushed: for passes whose forward pass keeps nothing, which then skip the
/// per-thread pool (its cost is most of a small function's gradient).
#[inline(always)]
pub fn with_empty_stack<S: Scalar, R>(f: impl FnOnce(&mut Stack<S>) -> R) -> R {
    let mut stack = core::mem::ManuallyDrop::new(Stack::default());
    let result = f(&mut stack);
    // Dropped only if something was pushed after all: where the passes
    // keep nothing, the optimiser sees that every buffer is still without
    // memory and removes the drop (a call to it costs more than a small
    // function's whole gradient).
    if stack.holds_memory() {
        // SAFETY: `stack` is not used again.
        unsafe { core::mem::ManuallyDrop::drop(&mut stack) }
    }
    result
}

/// Runs `f` with an empty stack of `S` (reused per thread for the machine
/// floats and their dual numbers).
#[inline]
pub fn with_stack<S: Scalar, R>(f: impl FnOnce(&mut Stack<S>) -> R) -> R {
    S::with_stack(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trimmed_stack_keeps_at_most_the_limit() {
        let mut stack = Stack::<f64>::new();
        stack.reserve(1000, 1000, 1000);
        stack.trim(4000);
        let stats = stack.stats();
        assert!(stats.bytes_reserved <= 4000, "{stats:?}");
        assert!(stats.bytes_reserved >= 3000, "{stats:?}");
        // Under the limit nothing changes.
        let mut small = Stack::<f64>::new();
        small.reserve(10, 10, 10);
        let before = small.stats().bytes_reserved;
        small.trim(4000);
        assert_eq!(small.stats().bytes_reserved, before);
    }

    #[test]
    fn a_pooled_stack_keeps_no_more_spares_than_its_call_requested() {
        // Each call takes one long buffer and gives back two (as a forward
        // pass giving back its locals does): without the cut the spares
        // would grow by one buffer per call.
        let long = 4 * super::super::spares::SPARE_FROM_LEN;
        let spare_bytes =
            || F64_STACKS.with(|stacks| stacks.borrow().last().map(|stack| stack.spares.bytes()));
        for _ in 0..5 {
            with_pooled_stack(&F64_STACKS, |stack| {
                let taken = stack.filled(0.0, long);
                stack.give_back(taken);
                stack.give_back(vec![1.0; long]);
            });
        }
        assert_eq!(spare_bytes(), Some(long * 8));
    }

    #[test]
    fn values_come_back_in_reverse_order_with_their_types() {
        let mut stack = Stack::<f64>::new();
        stack.real(1.5);
        stack.reals(&[2.0, 3.0]);
        stack.bits(Bits::to_bits(-7i32));
        stack.bits(Bits::to_bits(true));
        stack.bits(Bits::to_bits(usize::MAX));
        assert_eq!(stack.pop_bits::<usize>(), usize::MAX);
        assert!(stack.pop_bits::<bool>());
        assert_eq!(stack.pop_bits::<i32>(), -7);
        assert_eq!(stack.pop_reals(2), vec![2.0, 3.0]);
        assert_eq!(stack.pop_real(), 1.5);
        assert!(stack.is_empty());
    }

    #[test]
    fn reserved_room_takes_pushes_without_allocating() {
        let mut stack = Stack::<f64>::new();
        stack.real(1.0);
        {
            let mut room = stack.reserve(2, 1, 0);
            room.real(2.0);
            room.bits(7);
            room.real(3.0);
        }
        assert_eq!(stack.pop_bits::<u64>(), 7);
        assert_eq!(stack.pop_reals(3), vec![1.0, 2.0, 3.0]);
    }

    #[test]
    fn decisions_come_back_in_reverse_order_across_words() {
        // Pushes and pops interleaved over several words, into reserved
        // room and not, against a `Vec<bool>` kept alongside.
        let mut stack = Stack::<f64>::new();
        let mut expected = Vec::new();
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut coin = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state & 1 == 1
        };
        for round in 0..40 {
            let pushes = 1 + (round * 37) % 150;
            if round % 2 == 0 {
                let mut room = stack.reserve(0, 0, pushes);
                for _ in 0..pushes {
                    let set = coin();
                    room.flag(set);
                    expected.push(set);
                }
            } else {
                for _ in 0..pushes {
                    let set = coin();
                    stack.flag(set);
                    expected.push(set);
                }
            }
            assert_eq!(stack.stats().decisions, expected.len());
            assert_eq!(stack.stats().bytes_used, expected.len().div_ceil(64) * 8);
            let pops = (round * 53) % (expected.len() + 1);
            for _ in 0..pops {
                assert_eq!(stack.pop_flag(), expected.pop().unwrap());
            }
        }
        while let Some(set) = expected.pop() {
            assert_eq!(stack.pop_flag(), set);
        }
        assert!(stack.is_empty());
    }

    #[test]
    #[should_panic(expected = "more values than it reserved")]
    fn flagging_past_the_room_panics() {
        let mut stack = Stack::<f64>::new();
        let mut room = stack.reserve(0, 0, 1);
        room.flag(true);
        room.flag(false);
    }

    #[test]
    #[should_panic(expected = "more values than it reserved")]
    fn pushing_past_the_room_panics() {
        let mut stack = Stack::<f64>::new();
        let mut room = stack.reserve(1, 0, 0);
        room.real(1.0);
        room.real(2.0);
    }

    #[test]
    #[should_panic(expected = "more values than its forward pass kept")]
    fn reading_past_the_bottom_panics() {
        Stack::<f64>::new().pop_real();
    }

    #[test]
    #[should_panic(expected = "read more values than its forward pass kept")]
    fn reading_a_decision_past_the_bottom_panics() {
        let mut stack = Stack::<f64>::new();
        stack.flag(true);
        assert!(stack.pop_flag());
        stack.pop_flag();
    }

    #[test]
    fn pooled_stacks_come_back_empty() {
        with_stack::<f64, _>(|stack| stack.real(1.0));
        with_stack::<f64, _>(|stack| assert!(stack.is_empty()));
        release_pooled_stacks();
    }
}
