//! A compiled function called from a recording pass, through buffers the
//! tape lends: the values of its differentiated arguments, the bindings
//! they come from, and the room for the partial derivatives its adjoint
//! computes. In steady state such a call allocates nothing; it records one
//! binding whose terms are the partials.

use core::ops::Range;

use crate::compiled::{with_empty_stack, Stack};
use crate::dual::Dual;
use crate::loops::NO_ID;
use crate::real::Real;
use crate::scalar::Scalar;
use crate::tape::{DeltaId, Tape};

/// The gathered inputs of one call; `values` holds the values of buffer
/// arguments, then (after `split`) one adjoint per input real, in the
/// order of `ids`.
pub struct CompiledCall<'t, S> {
    tape: &'t Tape<S>,
    values: Vec<S>,
    ids: Vec<u32>,
}

impl<'t, S: Scalar> CompiledCall<'t, S> {
    /// Starts gathering, in the tape's lent buffers.
    #[inline]
    pub fn new(tape: &'t Tape<S>) -> Self {
        let (values, ids) = tape.take_scratch();
        CompiledCall { tape, values, ids }
    }

    /// A real argument: its binding, and its value for the passes.
    #[inline]
    pub fn real(&mut self, real: Real<'t, S>) -> S {
        self.ids.push(real.raw_id());
        real.value()
    }

    /// The bindings of a buffer argument whose values the caller keeps (an
    /// array, passed by value to the passes).
    #[inline]
    pub fn ids_of(&mut self, reals: &[Real<'t, S>]) {
        self.ids.extend(reals.iter().map(Real::raw_id));
    }

    /// A buffer argument: its bindings, and where `values` holds its values.
    #[inline]
    pub fn buffer(&mut self, reals: &[Real<'t, S>]) -> Range<usize> {
        let start = self.values.len();
        self.values.extend(reals.iter().map(|real| real.value()));
        self.ids_of(reals);
        start..self.values.len()
    }

    /// True if every input real is a constant: the result is one too.
    #[inline]
    pub fn all_constant(&self) -> bool {
        self.ids.iter().all(|&id| id == NO_ID)
    }

    /// The gathered values, and zeroed adjoints of the input reals in the
    /// order they were gathered.
    #[inline]
    pub fn split(&mut self) -> (&[S], &mut [S]) {
        let gathered = self.values.len();
        self.values.resize(gathered + self.ids.len(), S::zero());
        let (values, adjoints) = self.values.split_at_mut(gathered);
        (values, adjoints)
    }

    /// The result with value `value`: one binding whose terms are the
    /// adjoints `split` lent (the partials; constant inputs and exact zeros
    /// left out), or a constant if none is left. Gives the buffers back.
    #[inline]
    pub fn finish(self, value: S) -> Real<'t, S> {
        let CompiledCall { tape, values, ids } = self;
        let result = tape.with_partials(value, &ids, &values[values.len() - ids.len()..]);
        tape.return_scratch(values, ids);
        result
    }
}

impl<S: Scalar> Tape<S> {
    /// A result with value `value` and terms `partials[j] · ids[j]` (see
    /// `push_partials`), or a constant if no term is left.
    pub(crate) fn with_partials<'t>(
        &'t self,
        value: S,
        ids: &[u32],
        partials: &[S],
    ) -> Real<'t, S> {
        match self.push_partials(ids, partials) {
            Some(id) => Real::with_id(self, value, id),
            None => Real::constant(value),
        }
    }

    /// Records one binding with terms `partials[j] · ids[j]`, leaving out
    /// constants (`NO_ID`) and exact zeros; `None` if no term is left.
    pub(crate) fn push_partials(&self, ids: &[u32], partials: &[S]) -> Option<DeltaId> {
        let kept = |(&id, partial): (&u32, &S)| id != NO_ID && !partial.is_zero();
        if !ids.iter().zip(partials).any(kept) {
            return None;
        }
        // (Only comparisons run inside: nothing that could record on this
        // tape while it is appended to.)
        Some(self.append(|b| {
            let mut writer = b.open(ids.len());
            for (&id, &partial) in ids.iter().zip(partials) {
                if kept((&id, &partial)) {
                    // SAFETY: `open` reserved room for every input.
                    unsafe { writer.term(partial, DeltaId(id)) };
                }
            }
            b.close(writer)
        }))
    }
}

/// Runs `f` with a stack of dual numbers: the pool's if the forward pass
/// `keeps` values on it, else a new empty one.
fn with_dual_stack<S: Scalar, R>(keeps: bool, f: impl FnOnce(&mut Stack<Dual<S>>) -> R) -> R {
    if keeps {
        Dual::<S>::with_stack(f)
    } else {
        with_empty_stack(f)
    }
}

/// The most input reals for which a nested reverse derivative of a
/// compiled function is preaccumulated (`nested_reverse`); beyond, its
/// adjoint is recorded as it runs. (Measured on GradBench's `saddle` and
/// `particle`: at 4 input reals, a function of 8 operations took 14% longer
/// preaccumulated; at 3, one of about 20 took half the time.)
pub const NESTED_PREACCUMULATE_MAX: usize = 3;

/// True if one of the reals of `inputs` or `more` has a binding.
#[inline]
pub fn any_active<S: Scalar>(inputs: &[Real<'_, S>], more: &[Real<'_, S>]) -> bool {
    inputs.iter().chain(more).any(Real::is_active)
}

/// A reverse derivative taken inside a recording pass, of a compiled
/// function with `inputs.len() <= NESTED_PREACCUMULATE_MAX` input reals (in
/// parameter order) and output adjoint `seed`: the value and the inputs'
/// adjoints, each recorded as one binding whose terms are its partial
/// derivatives with respect to the inputs and the seed (the Hessian's rows,
/// and the gradient for the seed). `pass` runs the forward pass and the
/// adjoint on dual numbers; one run per input real that has a binding (its
/// tangent 1, the others 0) gives the column of every result's partials
/// along it, instead of recording each operation of the adjoint on the
/// tape and sweeping it back. `keeps`: the forward pass keeps values on
/// the stack for the adjoint (else the runs need no stack memory).
pub fn nested_reverse<'t, S: Scalar>(
    tape: &'t Tape<S>,
    inputs: &[Real<'t, S>],
    seed: Real<'t, S>,
    keeps: bool,
    mut pass: impl FnMut(&mut Stack<Dual<S>>, &[Dual<S>], Dual<S>, &mut [Dual<S>]) -> Dual<S>,
) -> (Real<'t, S>, [Real<'t, S>; NESTED_PREACCUMULATE_MAX]) {
    const MAX: usize = NESTED_PREACCUMULATE_MAX;
    let n = inputs.len();
    assert!(n <= MAX, "deltad: too many inputs to preaccumulate");
    let (zero, one) = (S::zero(), S::one());
    let mut duals = [Dual::new(zero, zero); MAX];
    for (dual, input) in duals.iter_mut().zip(inputs) {
        dual.value = input.value();
    }
    // The directions: the inputs with a binding, then the seed if it has one.
    let mut directions = [0usize; MAX + 1];
    let mut ids = [NO_ID; MAX + 1];
    let mut d = 0;
    for (j, real) in inputs.iter().chain(core::iter::once(&seed)).enumerate() {
        if real.is_active() {
            directions[d] = j;
            ids[d] = real.raw_id();
            d += 1;
        }
    }
    // partials[k][c]: result k (0 the value, 1 + i input i's adjoint)
    // along direction c.
    let mut partials = [[zero; MAX + 1]; MAX + 1];
    let mut values = [zero; MAX + 1];
    let mut adjoints = [Dual::new(zero, zero); MAX];
    let runs = |stack: &mut Stack<Dual<S>>| {
        for c in 0..d.max(1) {
            let direction = (c < d).then(|| directions[c]);
            if let Some(j) = direction.filter(|&j| j < n) {
                duals[j].tangent = one;
            }
            let seed_tangent = if direction == Some(n) { one } else { zero };
            adjoints[..n].fill(Dual::new(zero, zero));
            let out = pass(
                stack,
                &duals[..n],
                Dual::new(seed.value(), seed_tangent),
                &mut adjoints[..n],
            );
            if c == 0 {
                values[0] = out.value;
                for i in 0..n {
                    values[1 + i] = adjoints[i].value;
                }
            }
            if direction.is_some() {
                partials[0][c] = out.tangent;
                for i in 0..n {
                    partials[1 + i][c] = adjoints[i].tangent;
                }
            }
            if let Some(j) = direction.filter(|&j| j < n) {
                duals[j].tangent = zero;
            }
        }
    };
    with_dual_stack(keeps, runs);
    let result = |k: usize| tape.with_partials(values[k], &ids[..d], &partials[k][..d]);
    let mut gradient = [Real::constant(zero); MAX];
    for (i, adjoint) in gradient.iter_mut().enumerate().take(n) {
        *adjoint = result(1 + i);
    }
    (result(0), gradient)
}

/// The most input reals for which a nested `jvp` of a compiled function is
/// preaccumulated (`nested_forward`); beyond, its forward pass on dual
/// numbers is recorded as it runs.
pub const NESTED_FORWARD_MAX: usize = 16;

/// A `jvp` taken inside a recording pass, of a compiled function with a
/// real result and `inputs.len() <= NESTED_FORWARD_MAX` input reals (in
/// parameter order), along `tangents` (one per input real): the value and
/// the tangent, each recorded as one binding. One forward-over-reverse run
/// (`pass`: the forward pass and the adjoint on dual numbers whose
/// tangents are `tangents`, output adjoint 1) gives them all: the value
/// f(x) and its partials ∇f, the tangent ∇f·v and its partials H·v (with
/// respect to the inputs) and ∇f (with respect to the tangents).
pub fn nested_forward<'t, S: Scalar>(
    tape: &'t Tape<S>,
    inputs: &[Real<'t, S>],
    tangents: &[Real<'t, S>],
    keeps: bool,
    pass: impl FnOnce(&mut Stack<Dual<S>>, &[Dual<S>], Dual<S>, &mut [Dual<S>]) -> Dual<S>,
) -> (Real<'t, S>, Real<'t, S>) {
    const MAX: usize = NESTED_FORWARD_MAX;
    let n = inputs.len();
    assert!(
        n <= MAX && tangents.len() == n,
        "deltad: too many inputs to preaccumulate"
    );
    let zero = S::zero();
    let mut duals = [Dual::new(zero, zero); MAX];
    for ((dual, input), tangent) in duals.iter_mut().zip(inputs).zip(tangents) {
        *dual = Dual::new(input.value(), tangent.value());
    }
    let mut adjoints = [Dual::new(zero, zero); MAX];
    let seed = Dual::new(S::one(), zero);
    let run = |stack: &mut Stack<Dual<S>>| pass(stack, &duals[..n], seed, &mut adjoints[..n]);
    let out = with_dual_stack(keeps, run);
    let mut ids = [NO_ID; 2 * MAX];
    let mut partials = [zero; 2 * MAX];
    for i in 0..n {
        ids[i] = inputs[i].raw_id();
        partials[i] = adjoints[i].value;
    }
    let value = tape.with_partials(out.value, &ids[..n], &partials[..n]);
    for i in 0..n {
        partials[i] = adjoints[i].tangent;
        ids[n + i] = tangents[i].raw_id();
        partials[n + i] = adjoints[i].value;
    }
    let tangent = tape.with_partials(out.tangent, &ids[..2 * n], &partials[..2 * n]);
    (value, tangent)
}
