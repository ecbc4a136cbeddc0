//! Per-thread reuse of tapes, so a gradient call in steady state allocates
//! nothing but what it returns.
//!
//! The pool is touched once at the start and once at the end of a gradient
//! call, never while recording. Each thread has its own pool (no locks, no
//! contention); nested gradient calls take further tapes from it.

use core::cell::RefCell;
use std::thread::LocalKey;

use crate::dual::Dual;
use crate::tape::Tape;

/// A tape and the adjoint array that goes with it, boxed: a call takes
/// them from the pool and gives them back by moving a pointer (moving the
/// tape's buffers themselves, a few hundred bytes copied several times,
/// was a third of the gradient of a small function on the tape).
pub(crate) type Pooled<S> = Box<(Tape<S>, Vec<S>)>;

/// Tapes above this size are freed rather than kept for the next call.
/// Below it, a thread keeps its tapes (steady-state calls then allocate
/// nothing, and touch no fresh pages) until it exits or calls
/// [`release_pooled_tapes`].
const KEEP_AT_MOST_BYTES: usize = 1 << 30;
/// At most this many tapes are kept per thread and scalar type.
const KEEP_AT_MOST_TAPES: usize = 8;

pub(crate) type Pool<S> = RefCell<Vec<Pooled<S>>>;

thread_local! {
    pub(crate) static F64_TAPES: Pool<f64> = const { RefCell::new(Vec::new()) };
    pub(crate) static F32_TAPES: Pool<f32> = const { RefCell::new(Vec::new()) };
    pub(crate) static DUAL_F64_TAPES: Pool<Dual<f64>> = const { RefCell::new(Vec::new()) };
    pub(crate) static DUAL_F32_TAPES: Pool<Dual<f32>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` with a cleared tape and adjoint buffer from `pool`, then returns
/// them to it.
pub(crate) fn with_pooled_tape<S, R>(
    pool: &'static LocalKey<Pool<S>>,
    f: impl FnOnce(&Tape<S>, &mut Vec<S>) -> R,
) -> R {
    // `try_with`: during thread teardown the pool may be gone; then allocate.
    let mut pooled: Pooled<S> = pool
        .try_with(|tapes| tapes.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_default();
    let (tape, adjoints) = &mut *pooled;
    let result = f(tape, adjoints);
    let stats = tape.stats();
    if stats.bytes_reserved + adjoints.capacity() * core::mem::size_of::<S>() <= KEEP_AT_MOST_BYTES
    {
        tape.clear();
        adjoints.clear();
        let _ = pool.try_with(|tapes| {
            let mut tapes = tapes.borrow_mut();
            if tapes.len() < KEEP_AT_MOST_TAPES {
                tapes.push(pooled);
            }
        });
    }
    result
}

/// Frees the tapes the calling thread keeps for reuse (of every scalar
/// type), the compiled passes' stacks with the buffers their adjoints
/// gave back, and the buffers of forward mode's chunk passes. Gradient
/// calls keep their tape's or stack's buffers, and `jvps`, `jacobian_fwd`
/// and the sparse Jacobians the long buffers of their passes (per lane
/// width), up to 1 GiB each, so that later calls allocate nothing; call
/// this after a large derivative that will not be repeated soon to return
/// that memory.
///
/// ```
/// #[deltad::differentiate]
/// fn total(x: &[f64]) -> f64 {
///     let mut s = 0.0;
///     for v in x {
///         s += v.sin();
///     }
///     s
/// }
///
/// let big = vec![0.1; 1_000_000];
/// let g = total::grad(&big); // the thread now keeps this tape for reuse
/// deltad::release_pooled_tapes(); // give the memory back
/// assert_eq!(g.x.len(), big.len());
/// ```
pub fn release_pooled_tapes() {
    fn release<S>(pool: &'static LocalKey<Pool<S>>) {
        let _ = pool.try_with(|tapes| tapes.borrow_mut().clear());
    }
    release(&F64_TAPES);
    release(&F32_TAPES);
    release(&DUAL_F64_TAPES);
    release(&DUAL_F32_TAPES);
    crate::compiled::release_pooled_stacks();
    let _ = TWIN_BUFFERS.try_with(|buffers| buffers.borrow_mut().clear());
}

thread_local! {
    /// Buffers of twins (values of user types in compiled passes), of any
    /// type, kept for the next gradient call.
    static TWIN_BUFFERS: RefCell<Vec<Box<dyn core::any::Any>>> = const { RefCell::new(Vec::new()) };
}

/// At most this many twin buffers are kept per thread.
const KEEP_AT_MOST_TWIN_BUFFERS: usize = 16;

/// An empty `Vec` of `X`, with the capacity of one a previous call gave
/// back if there is one: the wrappers' twins of buffers of user types, so
/// that a gradient call in steady state neither allocates them nor touches
/// fresh pages.
pub fn pooled_vec<X: 'static>() -> Vec<X> {
    TWIN_BUFFERS
        .try_with(|buffers| {
            let mut buffers = buffers.borrow_mut();
            // The buffer is taken out of its box, which stays in the pool
            // (empty) for the buffer's return: no allocation either way.
            buffers.iter_mut().find_map(|b| {
                let buffer = b.downcast_mut::<Vec<X>>()?;
                (buffer.capacity() > 0).then(|| core::mem::take(buffer))
            })
        })
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Gives a buffer from [`pooled_vec`] back (cleared; up to 1 GiB kept).
pub fn give_back_vec<X: 'static>(mut buffer: Vec<X>) {
    if buffer.capacity() == 0 || buffer.capacity() * core::mem::size_of::<X>() > KEEP_AT_MOST_BYTES
    {
        return;
    }
    buffer.clear();
    let _ = TWIN_BUFFERS.try_with(|buffers| {
        let mut buffers = buffers.borrow_mut();
        let empty = buffers.iter().position(|b| {
            b.downcast_ref::<Vec<X>>()
                .is_some_and(|v| v.capacity() == 0)
        });
        match empty {
            Some(at) => {
                if let Some(slot) = buffers[at].downcast_mut::<Vec<X>>() {
                    *slot = buffer;
                }
            }
            None if buffers.len() < KEEP_AT_MOST_TWIN_BUFFERS => buffers.push(Box::new(buffer)),
            None => {}
        }
    });
}
