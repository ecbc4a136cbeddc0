//! The tape of Delta bindings and the array-based reverse sweep.
//!
//! This is the paper's `Delta` language (Krawiec et al., POPL 2022, Fig. 7 and
//! 11) stored flat. Every binding is `Let id = Add (Scale c1 (Var a1)) (Scale c2
//! (Var a2)) ...`: a short list of *terms* (coefficient, argument id). A
//! binding's id is its position in creation order, so `Let` is implicit and
//! sharing is preserved by construction. `Zero` is never stored: a constant
//! carries no id at all (see [`Real`](crate::Real)). Inputs are bindings with
//! no terms.
//!
//! Layout is struct-of-arrays: `coefs[k]`/`args[k]` are term `k`, and
//! `ends[i]` is one past the last term of binding `i`, so binding `i` owns the
//! terms `ends[i-1]..ends[i]` (12 bytes per `f64` term, 4 per binding). Every
//! argument is an earlier binding, so walking the bindings backwards is a
//! reverse topological order.
//!
//! [`Tape::reverse_sweep`] is the paper's `eval` with a mutable array
//! (§5.3.3): one backward pass over the bindings doing
//! `adjoint[argument] += coefficient * adjoint[binding]` for each term. Time
//! and memory are linear in the number of terms recorded (Theorem 5).

use core::cell::UnsafeCell;
use core::fmt;

use crate::checkpoint::CheckpointData;
use crate::checkpointed_call::CallData;
use crate::loops::LoopData;
use crate::real::Real;
use crate::scalar::Scalar;

/// The index of a binding on a tape: bindings are named by their position,
/// which makes the paper's `Let` implicit. [`Real::id`](crate::Real::id)
/// gives a dual value's binding (none for a constant).
///
/// ```
/// use deltad::{Real, Tape};
///
/// let tape = Tape::<f64>::new();
/// let x = Real::input(&tape, 1.0);
/// let y = x * 2.0;
/// assert_eq!(x.id().unwrap().index(), 0);
/// assert_eq!(y.id().unwrap().index(), 1);
/// assert_eq!(Real::<f64>::constant(5.0).id(), None);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[repr(transparent)]
pub struct DeltaId(pub(crate) u32);

impl DeltaId {
    /// The position of the binding on its tape.
    #[inline(always)]
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The id `offset` places after this one.
    #[inline(always)]
    pub(crate) fn offset(self, offset: usize) -> DeltaId {
        DeltaId(self.0 + offset as u32)
    }
}

/// The most bindings (and terms) one tape holds: ids and term offsets are `u32`.
const LIMIT: usize = (u32::MAX - 1) as usize;

/// The bindings themselves, without interior mutability.
///
/// Invariants: `args.len() == coefs.len()`; `ends` is non-decreasing and its
/// last entry is `args.len()`; every argument of binding `i` is `< i`. The
/// reverse sweep relies on them to index without bounds checks.
pub(crate) struct Bindings<S> {
    coefs: Vec<S>,
    args: Vec<u32>,
    ends: Vec<u32>,
    inputs: u32,
    /// Bindings with more to them than inline terms, by increasing id (see
    /// `Special`).
    specials: Vec<Special<S>>,
    /// Buffers lent to accumulators, kept for reuse.
    scratch: Vec<(Vec<S>, Vec<u32>)>,
    /// Allocations for the dual inputs of slice parameters, kept for reuse.
    input_buffers: InputBuffers<S>,
}

/// Allocations for the dual inputs of slice parameters (`Vec<Real<'_, S>>`),
/// kept empty between calls so that calls in steady state allocate none.
/// `Real<'t, S>` has one layout whatever `'t`, which is what lets an
/// allocation made while one tape was borrowed serve the next borrow.
pub(crate) struct InputBuffers<S> {
    /// (pointer, capacity) of empty allocations for `Real<'_, S>` elements.
    free: Vec<(core::ptr::NonNull<u8>, usize)>,
    element: core::marker::PhantomData<S>,
}

impl<S> InputBuffers<S> {
    /// An empty buffer, with the capacity of one kept earlier if any.
    fn take<'t>(&mut self) -> Vec<Real<'t, S>> {
        match self.free.pop() {
            // SAFETY: the pointer and capacity come from a `Vec<Real<'_, S>>`
            // (see `keep`), whose layout does not depend on the lifetime;
            // the length is 0, so no element of another lifetime is exposed.
            Some((pointer, capacity)) => unsafe {
                Vec::from_raw_parts(pointer.as_ptr().cast::<Real<'t, S>>(), 0, capacity)
            },
            None => Vec::new(),
        }
    }

    /// Keeps `buffer`'s allocation (its elements are dropped: they are `Copy`).
    fn keep(&mut self, buffer: Vec<Real<'_, S>>) {
        let mut buffer = core::mem::ManuallyDrop::new(buffer);
        buffer.clear();
        let capacity = buffer.capacity();
        if let Some(pointer) = core::ptr::NonNull::new(buffer.as_mut_ptr().cast::<u8>()) {
            if capacity > 0 {
                self.free.push((pointer, capacity));
                return;
            }
        }
        // Nothing allocated (or a zero-sized element type): nothing to keep.
        // SAFETY: `buffer` was not dropped before and is not used again.
        unsafe { core::mem::ManuallyDrop::drop(&mut buffer) };
    }
}

impl<S> Drop for InputBuffers<S> {
    fn drop(&mut self) {
        for (pointer, capacity) in self.free.drain(..) {
            // SAFETY: as in `take`; the vector is empty and frees the
            // allocation with the layout it was made with.
            drop(unsafe {
                Vec::from_raw_parts(pointer.as_ptr().cast::<Real<'_, S>>(), 0, capacity)
            });
        }
    }
}

impl<S> Default for Bindings<S> {
    fn default() -> Self {
        Bindings {
            coefs: Vec::new(),
            args: Vec::new(),
            ends: Vec::new(),
            inputs: 0,
            specials: Vec::new(),
            scratch: Vec::new(),
            input_buffers: InputBuffers {
                free: Vec::new(),
                element: core::marker::PhantomData,
            },
        }
    }
}

impl<S> Bindings<S> {
    pub(crate) fn clear(&mut self) {
        self.coefs.clear();
        self.args.clear();
        self.ends.clear();
        self.inputs = 0;
        for special in self.specials.drain(..) {
            let (mut coefs, mut args) = match special.kind {
                SpecialKind::Terms { coefs, args } => (coefs, args),
                SpecialKind::Loop { data, .. } => (data.slots, data.ids),
                SpecialKind::Checkpointed(_) | SpecialKind::CheckpointedCall(_) => continue,
            };
            coefs.clear();
            args.clear();
            self.scratch.push((coefs, args));
        }
    }

    /// Forgets the bindings from `len` on (keeping the buffers, and the
    /// buffers of forgotten special bindings for reuse).
    pub(crate) fn truncate(&mut self, len: usize) {
        if len >= self.ends.len() {
            return;
        }
        self.ends.truncate(len);
        let terms = self.ends.last().map_or(0, |&end| end as usize);
        self.coefs.truncate(terms);
        self.args.truncate(terms);
        while self
            .specials
            .last()
            .is_some_and(|special| special.binding as usize >= len)
        {
            let Some(special) = self.specials.pop() else {
                break;
            };
            let (mut coefs, mut args) = match special.kind {
                SpecialKind::Terms { coefs, args } => (coefs, args),
                SpecialKind::Loop { data, .. } => (data.slots, data.ids),
                SpecialKind::Checkpointed(_) | SpecialKind::CheckpointedCall(_) => continue,
            };
            coefs.clear();
            args.clear();
            self.scratch.push((coefs, args));
        }
    }

    /// Makes room for one binding with up to `terms` terms.
    #[inline(always)]
    pub(crate) fn reserve(&mut self, terms: usize) {
        if self.ends.len() == self.ends.capacity()
            || self.coefs.capacity() - self.coefs.len() < terms
        {
            self.grow(terms);
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, terms: usize) {
        if self.ends.len() >= LIMIT || self.args.len() + terms >= LIMIT {
            tape_full();
        }
        // Each array doubles when it is the one that is full (growing both
        // whenever either fills would compound).
        if self.ends.len() == self.ends.capacity() {
            let bindings = self.ends.capacity().max(1024);
            self.ends.reserve(bindings);
        }
        if self.coefs.capacity() - self.coefs.len() < terms {
            let more_terms = self.coefs.capacity().max(terms).max(2048);
            self.coefs.reserve(more_terms);
            self.args.reserve(more_terms);
        }
    }

    /// Starts a binding with up to `terms` terms: reserves room and returns
    /// a writer for its terms.
    #[inline(always)]
    pub(crate) fn open(&mut self, terms: usize) -> Writer<S> {
        self.reserve(terms);
        Writer {
            coefs: self.coefs.as_mut_ptr(),
            args: self.args.as_mut_ptr(),
            id: self.ends.len() as u32,
            at: self.args.len(),
            #[cfg(debug_assertions)]
            start: self.args.len(),
            #[cfg(debug_assertions)]
            room: terms,
        }
    }

    /// Closes the binding `writer` wrote.
    #[inline(always)]
    pub(crate) fn close(&mut self, writer: Writer<S>) -> DeltaId {
        let Writer { id, at, .. } = writer;
        // SAFETY: `open` reserved room for the terms and one more entry of
        // `ends`; the writer initialized every term before `at` (it only
        // advances after writing) and never more than it reserved.
        unsafe {
            self.coefs.set_len(at);
            self.args.set_len(at);
            self.ends.as_mut_ptr().add(id as usize).write(at as u32);
            self.ends.set_len(id as usize + 1);
        }
        DeltaId(id)
    }

    /// Appends `count` inputs (bindings without terms); returns the first id.
    pub(crate) fn push_inputs(&mut self, count: usize) -> DeltaId {
        if self.ends.len() + count >= LIMIT {
            tape_full();
        }
        let first = self.ends.len() as u32;
        let end = self.args.len() as u32;
        self.ends.resize(self.ends.len() + count, end);
        self.inputs += count as u32;
        DeltaId(first)
    }

    /// Appends one binding whose terms are the present arguments of `terms`.
    /// Every argument must be a binding already on this tape.
    #[inline(always)]
    fn push<const N: usize>(&mut self, terms: [(S, Option<DeltaId>); N]) -> DeltaId
    where
        S: Copy,
    {
        let mut writer = self.open(N);
        // Indexing (not `into_iter`) so the loop unrolls over the constant `N`.
        #[allow(clippy::needless_range_loop)]
        for i in 0..N {
            if let (coef, Some(arg)) = terms[i] {
                // SAFETY: `open(N)` reserved room for `N` terms.
                unsafe { writer.term(coef, arg) };
            }
        }
        self.close(writer)
    }

    fn bytes_reserved(&self) -> usize {
        let specials: usize = self
            .specials
            .iter()
            .map(|special| {
                let (scalars, ids) = special.kind.sizes(true);
                scalars * core::mem::size_of::<S>() + ids * 4
            })
            .sum();
        self.coefs.capacity() * core::mem::size_of::<S>()
            + (self.args.capacity() + self.ends.capacity()) * core::mem::size_of::<u32>()
            + specials
    }

    fn bytes_used(&self) -> usize {
        let specials: usize = self
            .specials
            .iter()
            .map(|special| {
                let (scalars, ids) = special.kind.sizes(false);
                scalars * core::mem::size_of::<S>() + ids * 4
            })
            .sum();
        self.coefs.len() * core::mem::size_of::<S>()
            + (self.args.len() + self.ends.len()) * core::mem::size_of::<u32>()
            + specials
    }

    /// Terms kept outside the inline arrays (sums collected over loops).
    fn external_terms(&self) -> usize {
        self.specials
            .iter()
            .map(|special| match &special.kind {
                SpecialKind::Terms { args, .. } => args.len(),
                SpecialKind::Loop { .. }
                | SpecialKind::Checkpointed(_)
                | SpecialKind::CheckpointedCall(_) => 0,
            })
            .sum()
    }
}

/// Writes `first`, `first + 1`, ... into `ids`.
fn consecutive_ids(ids: &mut [u32], first: u32) {
    for (k, id) in ids.iter_mut().enumerate() {
        *id = first + k as u32;
    }
}

/// A binding with more than inline terms.
pub(crate) struct Special<S> {
    binding: u32,
    kind: SpecialKind<S>,
}

pub(crate) enum SpecialKind<S> {
    /// Terms collected over a loop (`accumulate.rs`), in their own buffers:
    /// the binding's terms are its inline terms followed by these.
    Terms { coefs: Vec<S>, args: Vec<u32> },
    /// A loop recorded as a whole (`loops.rs`): its outputs are the bindings
    /// after this one, and `reverse` propagates their adjoints back to the
    /// loop's inputs.
    Loop {
        data: LoopData<S>,
        reverse: fn(&LoopData<S>, &mut [S]),
    },
    /// A checkpointed loop (`checkpoint.rs`): like `Loop`, but re-run
    /// segment by segment during the sweep.
    Checkpointed(Box<CheckpointData<S>>),
    /// A checkpointed call (`checkpoint.rs`): re-run with recording during
    /// the sweep.
    CheckpointedCall(Box<CallData<S>>),
}

impl<S> SpecialKind<S> {
    /// How many scalars and ids the special binding holds, or has reserved
    /// (for a checkpointed loop, with its recomputation buffer).
    fn sizes(&self, reserved: bool) -> (usize, usize) {
        let pick = |len: usize, capacity: usize| if reserved { capacity } else { len };
        match self {
            SpecialKind::Terms { coefs, args } => (
                pick(coefs.len(), coefs.capacity()),
                pick(args.len(), args.capacity()),
            ),
            SpecialKind::Loop { data, .. } => (
                pick(data.slots.len(), data.slots.capacity()),
                pick(data.ids.len(), data.ids.capacity()),
            ),
            SpecialKind::Checkpointed(data) => data.sizes(),
            SpecialKind::CheckpointedCall(data) => data.sizes(),
        }
    }
}

/// One binding read back from a tape (`Tape::views`): its terms as
/// (coefficient, argument) pairs, inline and collected ones alike, and what
/// more it is if it is a special binding.
pub(crate) struct BindingView<S> {
    pub(crate) terms: Vec<(S, u32)>,
    pub(crate) special: Option<SpecialView>,
}

/// What a special binding is, read back: the bindings it reads and the
/// number of output bindings that follow it (for loops and calls).
pub(crate) enum SpecialView {
    /// A sum collected over a loop; `collected` of its terms were collected.
    Accumulated { collected: usize },
    /// A loop recorded as a whole.
    Loop {
        iterations: usize,
        reads: Vec<u32>,
        outputs: usize,
    },
    /// A checkpointed loop.
    CheckpointedLoop { reads: Vec<u32>, outputs: usize },
    /// A checkpointed call.
    CheckpointedCall { reads: Vec<u32>, outputs: usize },
}

/// Writes the terms of one binding straight into the tape's buffers (see
/// `Bindings::open`). Holding the buffer pointers in locals lets the compiler
/// keep them in registers across the writes.
pub(crate) struct Writer<S> {
    coefs: *mut S,
    args: *mut u32,
    id: u32,
    at: usize,
    #[cfg(debug_assertions)]
    start: usize,
    #[cfg(debug_assertions)]
    room: usize,
}

impl<S> Writer<S> {
    /// Appends the term `coef * arg`; `arg` must be an earlier binding.
    ///
    /// # Safety
    /// At most as many terms as `open` reserved may be written.
    #[inline(always)]
    pub(crate) unsafe fn term(&mut self, coef: S, arg: DeltaId) {
        if arg.0 >= self.id {
            invalid_argument(arg.0);
        }
        #[cfg(debug_assertions)]
        debug_assert!(self.at - self.start < self.room);
        // SAFETY: the caller stays within the reserved room.
        unsafe {
            self.coefs.add(self.at).write(coef);
            self.args.add(self.at).write(arg.0);
        }
        self.at += 1;
    }

    /// The id the binding will have.
    #[inline(always)]
    pub(crate) fn id(&self) -> u32 {
        self.id
    }
}

#[cold]
#[inline(never)]
fn mixed_tapes() -> ! {
    panic!("deltad: a dual value of another tape was used in this computation")
}

/// The id a `#[preaccumulate]` loop gives the values of its earlier
/// iterations that it can no longer differentiate (see `preaccumulate.rs`).
pub(crate) const STALE_ID: u32 = u32::MAX - 1;

/// One past the newest of the bindings `ids` (0 if there is none): one
/// past `NO_ID` wraps to 0, so constants never count. (A maximum
/// vectorizes; a filter would not.)
fn newest_of(ids: impl IntoIterator<Item = u32>) -> u32 {
    ids.into_iter()
        .fold(0u32, |newest, id| newest.max(id.wrapping_add(1)))
}

/// An argument that is not an earlier binding: a value of another tape, or
/// of an earlier iteration of a `#[preaccumulate]` loop.
#[cold]
#[inline(never)]
pub(crate) fn invalid_argument(arg: u32) -> ! {
    if arg == STALE_ID {
        panic!(
            "deltad: a #[preaccumulate] loop read a value computed in one of its earlier \
             iterations (through a variable declared outside the loop). Such a loop's \
             iterations may only pass values on through sums (`total += ..`): remove \
             #[preaccumulate] from this loop."
        )
    }
    mixed_tapes()
}

#[cold]
#[inline(never)]
fn tape_full() -> ! {
    panic!("deltad: a tape holds at most {LIMIT} bindings and terms; this computation recorded more (split it into smaller gradient computations, or use checkpointing)")
}

/// A record of Delta bindings for one gradient computation.
///
/// Dual values ([`Real`](crate::Real)) hold a shared reference to the tape they
/// were recorded on, so ordinary operator syntax records bindings. A tape is
/// therefore shared (`&Tape`) while recording and appends through interior
/// mutability; it is `!Sync`, so it never leaves its thread while borrowed.
///
/// `#[differentiate]` manages tapes for you. Used by hand, a tape records
/// whatever arithmetic runs on its [`Real`](crate::Real)s, and
/// [`Tape::gradient_into`] (the paper's `eval`) differentiates it:
///
/// ```
/// use deltad::{Real, Tape};
///
/// let tape = Tape::<f64>::new();
/// let x = Real::input(&tape, 3.0);
/// let y = Real::input(&tape, 2.0);
/// let z = x * y + x.sin(); // two inputs, three bindings: x·y, sin x, the sum
/// assert_eq!(tape.stats().bindings, 5);
///
/// let mut adjoints = Vec::new();
/// tape.gradient_into(z.id(), 1.0, &mut adjoints);
/// let (dx, dy) = (adjoints[x.id().unwrap().index()], adjoints[y.id().unwrap().index()]);
/// assert!((dx - (2.0 + 3.0_f64.cos())).abs() < 1e-12); // ∂z/∂x = y + cos x
/// assert_eq!(dy, 3.0); // ∂z/∂y = x
/// ```
pub struct Tape<S> {
    bindings: UnsafeCell<Bindings<S>>,
    /// For forward mode: every value is a constant (its dual-number value
    /// carries the tangent), so loops need not store their local Jacobians.
    forward_only: bool,
}

impl<S> Default for Tape<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S> fmt::Debug for Tape<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stats = self.stats();
        f.debug_struct("Tape")
            .field("bindings", &stats.bindings)
            .field("inputs", &stats.inputs)
            .field("terms", &stats.terms)
            .finish()
    }
}

/// Sizes of a tape, for measuring memory claims.
///
/// Every `#[differentiate]` function `f` has `f::tape_stats(args)`, which
/// records `f` once and reports what the reverse sweep would need:
///
/// ```
/// #[deltad::differentiate]
/// fn norm2(x: &[f64]) -> f64 {
///     let mut s = 0.0;
///     for i in 0..x.len() {
///         s += x[i] * x[i];
///     }
///     s
/// }
///
/// // compiled: the adjoint evaluates `x[i] * x[i]` again, nothing is kept
/// let stats = norm2::tape_stats(&[1.0, 2.0, 3.0]);
/// assert!(stats.compiled);
/// assert_eq!((stats.bindings, stats.reals, stats.bytes_used), (0, 0, 0));
///
/// #[deltad::differentiate(tape)]
/// fn norm2_on_tape(x: &[f64]) -> f64 {
///     let mut s = 0.0;
///     for i in 0..x.len() {
///         s += x[i] * x[i];
///     }
///     s
/// }
///
/// let stats = norm2_on_tape::tape_stats(&[1.0, 2.0, 3.0]);
/// // three inputs and one binding for the whole sum, with a term per element
/// assert_eq!((stats.bindings, stats.inputs, stats.terms), (4, 3, 3));
/// assert!(stats.bytes_used <= stats.bytes_reserved);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TapeStats {
    /// True if the function took the compiled path: nothing is recorded on
    /// a tape, and `reals`, `words`, `decisions` and the bytes count what
    /// its forward pass keeps on the stack for its adjoint.
    pub compiled: bool,
    /// Bindings recorded, inputs included.
    pub bindings: usize,
    /// Bindings that are inputs (no terms).
    pub inputs: usize,
    /// Terms (coefficient, argument) over all bindings.
    pub terms: usize,
    /// Compiled path: reals the forward pass keeps for the adjoint.
    pub reals: usize,
    /// Compiled path: discrete words the forward pass keeps (trip counts,
    /// exit points, `match` arms, indices).
    pub words: usize,
    /// Compiled path: decisions of `if`s the forward pass keeps (one bit
    /// each, 64 to a word of `bytes_used`).
    pub decisions: usize,
    /// Bytes the recorded terms (or the kept values) occupy.
    pub bytes_used: usize,
    /// Bytes the tape's (or the stack's) buffers have reserved (at least
    /// `bytes_used`).
    pub bytes_reserved: usize,
    /// Compiled path: bytes the stack reserved over the forward pass and
    /// the adjoint together, run on a fresh stack: the memory a gradient
    /// takes (a checkpointed loop keeps its snapshots through the forward
    /// pass, and one segment's values while the adjoint runs it again).
    pub peak_bytes: usize,
}

impl TapeStats {
    /// The statistics of what a compiled forward pass kept.
    pub fn of_stack(stack: crate::compiled::StackStats) -> TapeStats {
        TapeStats {
            compiled: true,
            reals: stack.reals,
            words: stack.words,
            decisions: stack.decisions,
            bytes_used: stack.bytes_used,
            bytes_reserved: stack.bytes_reserved,
            ..TapeStats::default()
        }
    }
}

impl<S> Tape<S> {
    /// An empty tape.
    pub fn new() -> Self {
        Self::from_bindings(Bindings::default())
    }

    /// A tape for forward mode: values on it are constants whose dual-number
    /// values carry tangents; loops skip storing their local Jacobians.
    pub fn forward_only() -> Self {
        Tape {
            forward_only: true,
            ..Self::new()
        }
    }

    /// True for a tape made by [`forward_only`](Self::forward_only).
    #[inline(always)]
    pub fn is_forward_only(&self) -> bool {
        self.forward_only
    }

    pub(crate) fn from_bindings(bindings: Bindings<S>) -> Self {
        Tape {
            bindings: UnsafeCell::new(bindings),
            forward_only: false,
        }
    }

    /// Shared view of the bindings.
    #[inline(always)]
    fn read(&self) -> &Bindings<S> {
        // SAFETY: the only mutable access is `append`, which holds its `&mut`
        // just for a few `Vec` writes of already computed values and calls no
        // code that could reach this tape; `Tape` is `!Sync`, so no other
        // thread runs `append` meanwhile. Readers never keep the reference
        // across a call to `append` on the same tape: `reverse_sweep` runs
        // scalar arithmetic while reading, and that arithmetic only records on
        // tapes of *other* types (a `Real<'_, T>` records on a `Tape<T>`, never
        // on the `Tape<Real<'_, T>>` being swept; `Scalar` is sealed).
        unsafe { &*self.bindings.get() }
    }

    /// Appends through the shared reference.
    #[inline(always)]
    pub(crate) fn append<R>(&self, write: impl FnOnce(&mut Bindings<S>) -> R) -> R {
        // SAFETY: see `read`. The closures passed here only write plain data
        // (coefficients and ids computed beforehand) into the buffers.
        write(unsafe { &mut *self.bindings.get() })
    }

    /// Number of bindings recorded so far (inputs included).
    pub fn len(&self) -> usize {
        self.read().ends.len()
    }

    /// True if nothing has been recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sizes of what has been recorded.
    pub fn stats(&self) -> TapeStats {
        let b = self.read();
        TapeStats {
            bindings: b.ends.len(),
            inputs: b.inputs as usize,
            terms: b.args.len() + b.external_terms(),
            bytes_used: b.bytes_used(),
            bytes_reserved: b.bytes_reserved(),
            ..TapeStats::default()
        }
    }

    /// The terms of binding `id` as (coefficient, argument) pairs; an input has
    /// none. Returns a copy, so the caller may keep recording while holding it.
    pub fn terms(&self, id: DeltaId) -> Vec<(S, DeltaId)>
    where
        S: Copy,
    {
        let b = self.read();
        let i = id.index();
        let start = if i == 0 { 0 } else { b.ends[i - 1] as usize };
        let end = b.ends[i] as usize;
        let inline = (start..end).map(|k| (b.coefs[k], DeltaId(b.args[k])));
        let external = b
            .specials
            .iter()
            .filter(|special| special.binding == id.0)
            .flat_map(|special| match &special.kind {
                SpecialKind::Terms { coefs, args } => coefs
                    .iter()
                    .zip(args)
                    .map(|(&c, &a)| (c, DeltaId(a)))
                    .collect(),
                SpecialKind::Loop { .. }
                | SpecialKind::Checkpointed(_)
                | SpecialKind::CheckpointedCall(_) => Vec::new(),
            });
        inline.chain(external).collect()
    }

    /// Every binding as it was recorded, for reading the tape back (the
    /// tape graph, `graph.rs`): copies, so recording may go on meanwhile.
    pub(crate) fn views(&self) -> Vec<BindingView<S>>
    where
        S: Scalar,
    {
        let b = self.read();
        let mut views: Vec<BindingView<S>> = (0..b.ends.len())
            .map(|i| {
                let start = if i == 0 { 0 } else { b.ends[i - 1] as usize };
                let end = b.ends[i] as usize;
                BindingView {
                    terms: (start..end).map(|k| (b.coefs[k], b.args[k])).collect(),
                    special: None,
                }
            })
            .collect();
        for special in &b.specials {
            let marker = special.binding;
            // Ids read by a special binding: earlier bindings only (`NO_ID`
            // marks constants), each once.
            let reads = |ids: &[u32]| {
                let mut reads: Vec<u32> = ids.iter().copied().filter(|&id| id < marker).collect();
                reads.sort_unstable();
                reads.dedup();
                reads
            };
            let view = &mut views[marker as usize];
            match &special.kind {
                SpecialKind::Terms { coefs, args } => {
                    view.terms
                        .extend(coefs.iter().copied().zip(args.iter().copied()));
                    view.special = Some(SpecialView::Accumulated {
                        collected: args.len(),
                    });
                }
                SpecialKind::Loop { data, .. } => {
                    // The outputs come first in `ids`, numbered from the
                    // binding after the marker; the loop's state inputs that
                    // follow are earlier bindings, so the count is exact.
                    let outputs = data
                        .ids
                        .iter()
                        .enumerate()
                        .take_while(|&(k, &id)| id as usize == marker as usize + 1 + k)
                        .count();
                    view.special = Some(SpecialView::Loop {
                        iterations: data.iterations(),
                        reads: reads(&data.ids[outputs..]),
                        outputs,
                    });
                }
                SpecialKind::Checkpointed(data) => {
                    let inputs = data.input_ids();
                    view.special = Some(SpecialView::CheckpointedLoop {
                        reads: reads(inputs),
                        outputs: data.sizes().1 - inputs.len(),
                    });
                }
                SpecialKind::CheckpointedCall(data) => {
                    let inputs: Vec<u32> = data.input_ids().collect();
                    view.special = Some(SpecialView::CheckpointedCall {
                        reads: reads(&inputs),
                        outputs: data.output_count(),
                    });
                }
            }
        }
        views
    }

    /// Records a new input (a `Var` with no terms).
    #[inline]
    pub fn push_input(&self) -> DeltaId
    where
        S: Copy,
    {
        self.append(|b| {
            b.inputs += 1;
            b.push::<0>([])
        })
    }

    /// Records `count` new inputs with consecutive ids; returns the first.
    pub fn push_inputs(&self, count: usize) -> DeltaId {
        self.append(|b| b.push_inputs(count))
    }

    /// Records `coef * arg`.
    #[inline(always)]
    pub fn push1(&self, coef: S, arg: DeltaId) -> DeltaId
    where
        S: Copy,
    {
        self.append(|b| b.push([(coef, Some(arg))]))
    }

    /// Records `c1 * a1 + c2 * a2`.
    #[inline(always)]
    pub fn push2(&self, c1: S, a1: DeltaId, c2: S, a2: DeltaId) -> DeltaId
    where
        S: Copy,
    {
        self.append(|b| b.push([(c1, Some(a1)), (c2, Some(a2))]))
    }

    /// Records one binding with a term for each present argument: the terms
    /// of a fused computation, whose operands may or may not be active at run
    /// time. Returns `None` (and records nothing) if no argument is present.
    #[inline(always)]
    pub fn push_some<const N: usize>(&self, terms: [(S, Option<DeltaId>); N]) -> Option<DeltaId>
    where
        S: Copy,
    {
        if terms.iter().all(|(_, arg)| arg.is_none()) {
            return None;
        }
        Some(self.append(|b| b.push(terms)))
    }

    /// Records one binding with a term for each present argument, of which
    /// the caller knows there is at least one (else the binding is an input).
    #[inline(always)]
    pub(crate) fn append_binding<const N: usize>(&self, terms: [(S, Option<DeltaId>); N]) -> DeltaId
    where
        S: Copy,
    {
        self.append(|b| b.push(terms))
    }

    /// Lends an empty pair of buffers for collecting terms.
    pub(crate) fn take_scratch(&self) -> (Vec<S>, Vec<u32>) {
        self.append(|b| b.scratch.pop()).unwrap_or_default()
    }

    /// An empty buffer for dual inputs, reusing an earlier allocation.
    pub(crate) fn take_input_buffer(&self) -> Vec<Real<'_, S>> {
        self.append(|b| b.input_buffers.take())
    }

    /// Keeps the allocation of a buffer of dual inputs for later calls.
    pub fn keep_input_buffer(&self, buffer: Vec<Real<'_, S>>) {
        self.append(|b| b.input_buffers.keep(buffer));
    }

    /// Takes back buffers lent by `take_scratch`.
    pub(crate) fn return_scratch(&self, mut coefs: Vec<S>, mut args: Vec<u32>) {
        coefs.clear();
        args.clear();
        self.append(|b| b.scratch.push((coefs, args)));
    }

    /// Records one binding: a term with coefficient 1 on `initial` (if any)
    /// and the collected terms `coefs[k] * args[k]`, which the tape keeps in
    /// the given buffers (no copy).
    pub(crate) fn push_external(
        &self,
        initial: Option<DeltaId>,
        coefs: Vec<S>,
        args: Vec<u32>,
    ) -> DeltaId
    where
        S: Copy + Scalar,
    {
        assert_eq!(coefs.len(), args.len(), "deltad: unpaired collected terms");
        self.append(|b| {
            let mut writer = b.open(1);
            // Every collected argument must be an earlier binding (the sweep
            // indexes with them unchecked). (A maximum vectorizes; `any` would not.)
            let id = writer.id();
            let newest = args.iter().fold(0, |max, &arg| max.max(arg));
            if newest >= id && !args.is_empty() {
                invalid_argument(newest);
            }
            if let Some(initial) = initial {
                // SAFETY: `open(1)` reserved room for one term.
                unsafe { writer.term(S::one(), initial) };
            }
            let id = b.close(writer);
            b.specials.push(Special {
                binding: id.0,
                kind: SpecialKind::Terms { coefs, args },
            });
            id
        })
    }

    /// Records a special binding followed by `outputs` output bindings:
    /// `newest` is `newest_of` the ids it reads (checked to be earlier
    /// bindings of this tape, for the sweep's unchecked indexing), `make`
    /// builds it given the id of the first output (the outputs have
    /// consecutive ids). Returns the id of the first output.
    fn push_special(
        &self,
        newest: u32,
        outputs: usize,
        make: impl FnOnce(u32) -> SpecialKind<S>,
    ) -> DeltaId
    where
        S: Copy,
    {
        self.append(|b| {
            let writer = b.open(0);
            let marker = b.close(writer);
            if newest > marker.0 {
                invalid_argument(newest.wrapping_sub(1));
            }
            let first = b.push_inputs(outputs);
            b.inputs -= outputs as u32;
            b.specials.push(Special {
                binding: marker.0,
                kind: make(first.0),
            });
            first
        })
    }

    /// Records a loop recorded as a whole: a binding for the loop, then one
    /// binding per output (`outputs` of them), whose ids are written to the
    /// first entries of `data.ids`. Returns the id of the first output.
    pub(crate) fn push_loop(
        &self,
        mut data: LoopData<S>,
        outputs: usize,
        reverse: fn(&LoopData<S>, &mut [S]),
    ) -> DeltaId
    where
        S: Copy,
    {
        let newest = newest_of(data.ids[outputs..].iter().copied());
        self.push_special(newest, outputs, |first| {
            consecutive_ids(&mut data.ids[..outputs], first);
            SpecialKind::Loop { data, reverse }
        })
    }

    /// Records a checkpointed loop, as `push_loop` does a loop.
    pub(crate) fn push_checkpointed(&self, mut data: CheckpointData<S>) -> DeltaId
    where
        S: Copy,
    {
        let newest = newest_of(data.input_ids().iter().copied());
        let outputs = data.output_ids().len();
        self.push_special(newest, outputs, |first| {
            consecutive_ids(data.output_ids(), first);
            SpecialKind::Checkpointed(Box::new(data))
        })
    }

    /// Runs `look` on the most recent checkpointed call among the last few
    /// special bindings (the call a new one may share its arguments with).
    pub(crate) fn with_last_checkpointed_call<R>(
        &self,
        look: impl FnOnce(Option<&CallData<S>>) -> R,
    ) -> R {
        // A loop's step may record a few other special bindings between two
        // calls; looking further back would make recording quadratic.
        const LOOK_BACK: usize = 4;
        let b = self.read();
        let last =
            b.specials
                .iter()
                .rev()
                .take(LOOK_BACK)
                .find_map(|special| match &special.kind {
                    SpecialKind::CheckpointedCall(data) => Some(&**data),
                    _ => None,
                });
        look(last)
    }

    /// Records a checkpointed call.
    pub(crate) fn push_checkpointed_call(&self, mut data: CallData<S>) -> DeltaId
    where
        S: Copy,
    {
        let newest = newest_of(data.input_ids());
        self.push_special(newest, data.output_count(), |first| {
            data.set_outputs(first);
            SpecialKind::CheckpointedCall(Box::new(data))
        })
    }

    /// Records one binding with the terms `coefs[k] * args[k]`, copied from
    /// buffers the caller filled (the vector primitives).
    pub(crate) fn push_collected(&self, coefs: &[S], args: &[u32]) -> DeltaId
    where
        S: Copy + Scalar,
    {
        self.push_collected_after(None, coefs, args)
    }

    /// `push_collected` with a first term of coefficient 1 on `initial`,
    /// if any (an accumulated sum's value before the loop).
    pub(crate) fn push_collected_after(
        &self,
        initial: Option<DeltaId>,
        coefs: &[S],
        args: &[u32],
    ) -> DeltaId
    where
        S: Copy + Scalar,
    {
        assert_eq!(coefs.len(), args.len(), "deltad: unpaired collected terms");
        self.append(|b| {
            b.reserve(coefs.len() + 1);
            let id = b.ends.len() as u32;
            // Every argument must be an earlier binding (the sweep indexes
            // with them unchecked). (A maximum vectorizes; `any` would not.)
            let newest = args.iter().fold(0, |max, &arg| max.max(arg));
            if !args.is_empty() && newest >= id {
                invalid_argument(newest);
            }
            if let Some(initial) = initial {
                b.coefs.push(S::one());
                b.args.push(initial.0);
            }
            b.coefs.extend_from_slice(coefs);
            b.args.extend_from_slice(args);
            b.ends.push(b.args.len() as u32);
            DeltaId(id)
        })
    }

    /// Records one binding with any number of terms.
    pub fn push_terms(&self, terms: impl IntoIterator<Item = (S, DeltaId)>) -> DeltaId
    where
        S: Copy,
    {
        // Collect first: the iterator may compute coefficients with scalar
        // arithmetic, which must not run while the tape is being appended to.
        let terms: Vec<(S, DeltaId)> = terms.into_iter().collect();
        self.append(|b| {
            b.reserve(terms.len());
            let id = b.ends.len();
            for &(coef, arg) in &terms {
                if arg.index() >= id {
                    invalid_argument(arg.0);
                }
                b.coefs.push(coef);
                b.args.push(arg.0);
            }
            b.ends.push(b.args.len() as u32);
            DeltaId(id as u32)
        })
    }

    /// Forgets the bindings from `len` on: only for bindings no live dual
    /// value refers to (a `#[preaccumulate]` loop's finished iteration).
    pub(crate) fn truncate(&self, len: usize) {
        self.append(|b| b.truncate(len));
    }

    /// Forgets everything recorded, keeping the buffers.
    pub fn clear(&mut self) {
        self.bindings.get_mut().clear();
    }
}

impl<S: Scalar> Tape<S> {
    /// The reverse sweep (the paper's `eval`).
    ///
    /// `adjoints` must hold one entry per binding (see [`Tape::len`]), seeded
    /// by the caller: usually zero everywhere but 1 at the output. On return
    /// every entry holds the derivative of the seeded combination of outputs
    /// with respect to that binding; the entries of the inputs are the
    /// gradient. Terms whose binding's adjoint is exactly zero are skipped, so
    /// a value that does not reach the output contributes exactly zero even
    /// where its local derivative is infinite or NaN.
    pub fn reverse_sweep(&self, adjoints: &mut [S]) {
        self.reverse_sweep_from(adjoints, 0);
    }

    /// The reverse sweep over the bindings from `first` on: their adjoints
    /// are propagated to the bindings they refer to (earlier ones included),
    /// and the sweep stops before binding `first`.
    pub(crate) fn reverse_sweep_from(&self, adjoints: &mut [S], first: usize) {
        let b = self.read();
        let count = b.ends.len();
        assert_eq!(
            adjoints.len(),
            count,
            "deltad: reverse_sweep needs one adjoint per binding"
        );
        let (coefs, args, ends) = (&b.coefs[..], &b.args[..], &b.ends[..]);
        // The special bindings, visited from the last.
        let mut specials = b.specials.len();
        let mut next_special = match specials {
            0 => usize::MAX,
            n => b.specials[n - 1].binding as usize,
        };
        let mut end = args.len();
        for binding in (first..count).rev() {
            // SAFETY: `binding < count == adjoints.len() == ends.len()`.
            let adjoint = unsafe { *adjoints.get_unchecked(binding) };
            if binding == next_special {
                specials -= 1;
                match &b.specials[specials].kind {
                    SpecialKind::Terms {
                        coefs: ext_coefs,
                        args: ext_args,
                    } => {
                        if !adjoint.is_zero() {
                            for (&coef, &arg) in ext_coefs.iter().zip(ext_args) {
                                // SAFETY: `push_external` checked every
                                // argument is `< binding < adjoints.len()`.
                                unsafe {
                                    *adjoints.get_unchecked_mut(arg as usize) += coef * adjoint
                                };
                            }
                        }
                    }
                    SpecialKind::Loop { data, reverse } => reverse(data, adjoints),
                    SpecialKind::Checkpointed(data) => data.reverse(adjoints),
                    SpecialKind::CheckpointedCall(data) => data.reverse(adjoints),
                }
                next_special = match specials {
                    0 => usize::MAX,
                    n => b.specials[n - 1].binding as usize,
                };
            }
            if end == 0 {
                if specials == 0 {
                    // The bindings below hold no terms (inputs): done.
                    break;
                }
                continue;
            }
            // SAFETY: by the invariants of `Bindings`, `start <= end <=
            // args.len() == coefs.len()` and every argument of `binding` is
            // `< binding < adjoints.len()`.
            unsafe {
                let start = if binding == 0 {
                    0
                } else {
                    *ends.get_unchecked(binding - 1) as usize
                };
                if !adjoint.is_zero() {
                    for k in start..end {
                        let arg = *args.get_unchecked(k) as usize;
                        let contribution = *coefs.get_unchecked(k) * adjoint;
                        *adjoints.get_unchecked_mut(arg) += contribution;
                    }
                }
                end = start;
            }
        }
    }

    /// Seeds `output` with `seed` in a fresh adjoint array and sweeps.
    ///
    /// `adjoints` is resized to the tape's length and overwritten; pass the
    /// same vector across calls to avoid allocating.
    pub fn gradient_into(&self, output: Option<DeltaId>, seed: S, adjoints: &mut Vec<S>) {
        adjoints.clear();
        adjoints.resize(self.len(), S::zero());
        if let Some(output) = output {
            adjoints[output.index()] = seed;
            self.reverse_sweep(adjoints);
        }
    }
}
