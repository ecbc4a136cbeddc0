//! The pieces of the generated forward-mode and second-order functions:
//! where input tangents come from, and reading values and tangents back.

use std::borrow::Cow;

use crate::differentiable::Differentiable;
use crate::dual::Dual;
use crate::dual_vec::DualVec;
use crate::real::Real;
use crate::scalar::{Primitive, Scalar};

/// The tangent of each input real, in input leaf order: a flat list (the
/// user's tangent, flattened: machine floats, or values of an enclosing
/// derivative for a `jvp` taken inside differentiated code), or a unit
/// vector (a Hessian row).
pub struct Seeds<E> {
    flat: Vec<E>,
    /// The unit vector's input, and its one and zero.
    unit: Option<(usize, E, E)>,
    next: usize,
}

impl<E: Copy> Seeds<E> {
    /// Tangents from a flat list, one per input real.
    pub fn from_flat(flat: Vec<E>) -> Self {
        Seeds {
            flat,
            unit: None,
            next: 0,
        }
    }

    /// The tangent of the next input real.
    #[inline]
    pub fn next_tangent(&mut self) -> E {
        let index = self.next;
        self.next += 1;
        match self.unit {
            Some((unit, one, zero)) => {
                if index == unit {
                    one
                } else {
                    zero
                }
            }
            None => *self.flat.get(index).unwrap_or_else(|| {
                panic!(
                    "deltad: the tangent has fewer reals ({}) than the differentiated inputs",
                    self.flat.len()
                )
            }),
        }
    }
}

impl<P: Primitive> Seeds<P> {
    /// The unit tangent of input real `index`.
    pub fn unit(index: usize) -> Self {
        Seeds {
            flat: Vec::new(),
            unit: Some((index, P::ONE, P::ZERO)),
            next: 0,
        }
    }
}

/// The values of a result computed on dual numbers, in the user's type.
pub fn forward_value<P: Primitive, R: Differentiable<P>>(result: &R::Twin<Real<'_, Dual<P>>>) -> R {
    R::from_twin(R::map_twin(result, &mut |real| real.value().value))
}

/// The tangents of a result computed on dual numbers, in the user's type.
pub fn forward_tangent<P: Primitive, R: Differentiable<P>>(
    result: &R::Twin<Real<'_, Dual<P>>>,
) -> R {
    R::from_twin(R::map_twin(result, &mut |real| real.value().tangent))
}

/// The value and tangent parts of dual adjoints.
pub fn split_duals<P: Primitive>(adjoints: &[Dual<P>]) -> (Vec<P>, Vec<P>) {
    adjoints.iter().map(|a| (a.value, a.tangent)).unzip()
}

/// A tangent given at level `S`: a machine float (a constant) or a value of
/// level `S` itself.
pub trait Tangent<S> {
    /// The tangent at level `S`.
    fn at_level(self) -> S;
}

impl<'t, S: Scalar> Tangent<Real<'t, S>> for Real<'t, S> {
    #[inline(always)]
    fn at_level(self) -> Real<'t, S> {
        self
    }
}

macro_rules! constant_tangents {
    ($($p:ident)*) => {$(
        impl<S: Scalar<Prim = $p>> Tangent<S> for $p {
            #[inline(always)]
            fn at_level(self) -> S {
                S::from_prim(self)
            }
        }
    )*};
}
constant_tangents!(f64 f32);

/// A constant dual value of a nested scalar: `value + tangent·ε`, the
/// tangent given at level `S` (or as a machine float).
#[inline]
pub fn dual_constant<'t, S: Scalar, E: Tangent<S>>(value: S, tangent: E) -> Real<'t, Dual<S>> {
    Real::constant(dual_input(value, tangent))
}

/// A dual number of a nested scalar, `value + tangent·ε`, as a compiled
/// forward pass takes it (the tangent given at level `S` or as a machine
/// float).
#[inline]
pub fn dual_input<S: Scalar, E: Tangent<S>>(value: S, tangent: E) -> Dual<S> {
    Dual::new(value, tangent.at_level())
}

/// Panics unless a tangent's field for parameter `param` holds as many
/// reals (`got`) as the parameter (`expected`): a tangent shaped otherwise
/// would be read across the parameters' boundaries. `tangent` is its place
/// among many (`jvps`, `hvps`).
#[inline]
pub fn check_tangent(got: usize, expected: usize, tangent: Option<usize>, param: &str) {
    if got != expected {
        misshapen_tangent(got, expected, tangent, param);
    }
}

/// Panics unless a tangent's field for parameter `param`, of a nested or
/// user type, is shaped like the parameter (`same`, from
/// [`Differentiable::same_shape`](crate::Differentiable::same_shape)): with
/// as many reals in all but buffers of other lengths inside, its reals
/// would be read for other leaves.
#[inline]
pub fn check_tangent_shape(same: bool, tangent: Option<usize>, param: &str) {
    if !same {
        misshapen_inside(tangent, param);
    }
}

#[cold]
#[inline(never)]
fn misshapen_inside(tangent: Option<usize>, param: &str) -> ! {
    let which = which_tangent(tangent);
    panic!(
        "deltad: {which} is shaped otherwise than `{param}` inside (as many reals, in buffers of other lengths)"
    )
}

/// "the tangent", or "tangent k" for one of many.
fn which_tangent(tangent: Option<usize>) -> String {
    tangent.map_or_else(|| "the tangent".to_string(), |k| format!("tangent {k}"))
}

#[cold]
#[inline(never)]
fn misshapen_tangent(got: usize, expected: usize, tangent: Option<usize>, param: &str) -> ! {
    let which = which_tangent(tangent);
    panic!("deltad: {which} has {got} reals for `{param}`, which has {expected}")
}

/// Where the dual inputs of a forward pass get their tangents: each input
/// real, in input leaf order, becomes a dual value of type `Dual`.
pub trait TangentSeeds<V> {
    /// The dual values the forward pass runs on.
    type Dual;
    /// The dual value of the next input real, whose value is `value`.
    fn seed(&mut self, value: V) -> Self::Dual;
    /// The dual values of the next `values.len()` input reals (a buffer
    /// parameter's), appended to `out`.
    #[inline]
    fn seed_all(&mut self, values: &[V], out: &mut Vec<Self::Dual>)
    where
        V: Copy,
    {
        seed_each(self, values, out);
    }

    /// The dual values of the next `L` input reals (an array parameter's).
    #[inline]
    fn seed_array<const L: usize>(&mut self, values: &[V; L]) -> [Self::Dual; L]
    where
        V: Copy,
    {
        core::array::from_fn(|i| self.seed(values[i]))
    }
}

/// [`TangentSeeds::seed_all`] one input at a time.
#[inline]
fn seed_each<V: Copy, T: TangentSeeds<V> + ?Sized>(
    seeds: &mut T,
    values: &[V],
    out: &mut Vec<T::Dual>,
) {
    out.extend(values.iter().map(|&value| seeds.seed(value)));
}

impl<S: Scalar, E: Copy + Tangent<S>> TangentSeeds<S> for Seeds<E> {
    type Dual = Dual<S>;
    #[inline]
    fn seed(&mut self, value: S) -> Dual<S> {
        dual_input(value, self.next_tangent())
    }
}

/// The number of tangents a chunked forward pass carries (`jvps`,
/// `jacobian_fwd`, `hessian`): enough to amortise the value's computation,
/// few enough to stay in registers.
pub const CHUNK: usize = 8;

/// The width of a last chunk with at most this many directions left: half
/// a chunk's lanes, so that 3 colours or 28 directions (8 + 8 + 8 + 4) do
/// not pay for lanes of zeros.
pub const HALF_CHUNK: usize = CHUNK / 2;

/// The lanes of the adjoints of a Jacobian's last rows when at most two are
/// left (`jacobian`, vector reverse mode: a small function's two outputs).
pub const QUARTER_CHUNK: usize = CHUNK / 4;

/// Tangents for a forward pass on [`DualVec`]: `N` directions at once.
pub struct ChunkSeeds<'a, P: Clone, const N: usize> {
    directions: Directions<'a, P>,
    /// The first direction of the chunk.
    start: usize,
    /// The next input real.
    next: usize,
    /// Per given direction, where it was last read.
    cursors: [Cursor; N],
}

enum Directions<'a, P: Clone> {
    /// The unit vectors: direction `d` is input real `d`.
    Unit,
    /// Directions each in pieces (see [`ChunkSeeds::given`]).
    Given(Pieces<'a, P>),
}

/// Directions each in `per_direction` pieces, one after the other.
#[derive(Clone, Copy)]
struct Pieces<'a, P: Clone> {
    pieces: &'a [Cow<'a, [P]>],
    per_direction: usize,
    directions: usize,
}

impl<'a, P: Clone> Pieces<'a, P> {
    fn of(&self, k: usize) -> &'a [Cow<'a, [P]>] {
        &self.pieces[k * self.per_direction..(k + 1) * self.per_direction]
    }
}

/// A piece of a given direction and the input real its first real is the
/// tangent of: input reals are seeded in order, so a direction's pieces are
/// walked once.
#[derive(Clone, Copy, Default)]
struct Cursor {
    piece: usize,
    first: usize,
}

impl<'a, P: Primitive, const N: usize> ChunkSeeds<'a, P, N> {
    /// Directions `start..start + N` of the identity: the Jacobian's
    /// columns `start..start + N` (zero past the last input).
    pub fn unit_block(start: usize) -> Self {
        ChunkSeeds {
            directions: Directions::Unit,
            start,
            next: 0,
            cursors: [Cursor::default(); N],
        }
    }

    /// The `directions` directions of one chunk (at most `N`; zero past the
    /// last), the first of which is direction `first` of the caller's (for
    /// messages). Each is given in pieces, the same number for each, one
    /// direction's after the other in `pieces`: put end to end, a
    /// direction's pieces hold one tangent per input real (a `Grad`'s
    /// fields, read where the caller holds them: [`direction_pieces`]).
    pub fn given(pieces: &'a [Cow<'a, [P]>], directions: usize, first: usize) -> Self {
        let per_direction = pieces.len().checked_div(directions).unwrap_or(0);
        ChunkSeeds {
            directions: Directions::Given(Pieces {
                pieces,
                per_direction,
                directions,
            }),
            start: first,
            next: 0,
            cursors: [Cursor::default(); N],
        }
    }

    /// The piece of direction `k` of `chunk` holding the tangent of input
    /// `input` (not before the last one asked for), and where in it.
    #[inline]
    fn locate(&mut self, chunk: Pieces<'a, P>, k: usize, input: usize) -> Option<(&'a [P], usize)> {
        let pieces = chunk.of(k);
        let cursor = &mut self.cursors[k];
        while let Some(piece) = pieces.get(cursor.piece) {
            if input < cursor.first + piece.len() {
                return Some((piece, input - cursor.first));
            }
            cursor.first += piece.len();
            cursor.piece += 1;
        }
        None
    }

    /// The tangents of the next input real.
    #[inline]
    fn next_tangents(&mut self) -> [P; N] {
        let input = self.next;
        self.next += 1;
        match self.directions {
            Directions::Unit => core::array::from_fn(|k| {
                if self.start + k == input {
                    P::ONE
                } else {
                    P::ZERO
                }
            }),
            Directions::Given(chunk) => {
                let mut tangents = [P::ZERO; N];
                for (k, tangent) in tangents.iter_mut().enumerate().take(chunk.directions) {
                    match self.locate(chunk, k, input) {
                        Some((piece, at)) => *tangent = piece[at],
                        None => self.too_short(k, chunk),
                    }
                }
                tangents
            }
        }
    }

    /// Panics: direction `k` of `chunk` has too few reals.
    #[cold]
    #[inline(never)]
    fn too_short(&self, k: usize, chunk: Pieces<'_, P>) -> ! {
        let len: usize = chunk.of(k).iter().map(|piece| piece.len()).sum();
        panic!(
            "deltad: tangent {} has fewer reals ({len}) than the differentiated inputs",
            self.start + k
        )
    }
}

/// The pieces of tangents `start..start + lanes` of `tangents`, by `pieces`
/// (a `Grad`'s fields in input leaf order, borrowed where they are flat,
/// written into a slice of `per_tangent`) into `chunk`, one tangent's after
/// the other: one chunk's directions for [`ChunkSeeds::given`], made when
/// its pass runs (in memory the caller reuses from chunk to chunk).
pub fn direction_pieces<'a, P: Clone, T>(
    tangents: &'a [T],
    start: usize,
    lanes: usize,
    chunk: &mut [Cow<'a, [P]>],
    per_tangent: usize,
    pieces: impl Fn(&'a T, &mut [Cow<'a, [P]>]),
) {
    for (k, tangent) in tangents[start..start + lanes].iter().enumerate() {
        pieces(tangent, &mut chunk[k * per_tangent..(k + 1) * per_tangent]);
    }
}

impl<P: Primitive, const N: usize> TangentSeeds<P> for ChunkSeeds<'_, P, N> {
    type Dual = DualVec<P, N>;
    #[inline]
    fn seed(&mut self, value: P) -> DualVec<P, N> {
        DualVec::new(value, self.next_tangents())
    }

    /// (Given directions are cut to these inputs once, not looked up per
    /// input: a long buffer's seeding cost more than its pass.)
    #[inline]
    fn seed_all(&mut self, values: &[P], out: &mut Vec<DualVec<P, N>>) {
        let Some(lanes) = self.next_lanes(values.len()) else {
            seed_each(self, values, out);
            return;
        };
        if lanes.iter().all(|lane| lane.len() == values.len()) {
            // Every lane given, each exactly as long as the values.
            let lanes = lanes.map(|lane| &lane[..values.len()]);
            out.extend(
                values
                    .iter()
                    .enumerate()
                    .map(|(i, &value)| DualVec::new(value, core::array::from_fn(|k| lanes[k][i]))),
            );
        } else {
            out.extend(
                values
                    .iter()
                    .enumerate()
                    .map(|(i, &value)| DualVec::new(value, lane_tangents(&lanes, i))),
            );
        }
    }

    #[inline]
    fn seed_array<const L: usize>(&mut self, values: &[P; L]) -> [DualVec<P, N>; L] {
        match self.next_lanes(L) {
            Some(lanes) => {
                core::array::from_fn(|i| DualVec::new(values[i], lane_tangents(&lanes, i)))
            }
            None => core::array::from_fn(|i| self.seed(values[i])),
        }
    }
}

impl<'a, P: Primitive, const N: usize> ChunkSeeds<'a, P, N> {
    /// The tangents of the next `len` input reals in each given direction,
    /// each cut from one piece (empty past the chunk's last direction),
    /// the inputs then seeded; `None` (nothing seeded) for unit directions,
    /// and where the inputs span pieces or pass a direction's end (to be
    /// seeded one by one, which names a direction too short).
    #[inline]
    fn next_lanes(&mut self, len: usize) -> Option<[&'a [P]; N]> {
        let Directions::Given(chunk) = self.directions else {
            return None;
        };
        let mut lanes: [&[P]; N] = [&[]; N];
        for (k, lane) in lanes.iter_mut().enumerate().take(chunk.directions) {
            let (piece, at) = self.locate(chunk, k, self.next)?;
            *lane = piece.get(at..at + len)?;
        }
        self.next += len;
        Some(lanes)
    }
}

/// The tangents of input `i` of lanes cut by `next_lanes` (zero where a
/// lane is empty).
#[inline]
fn lane_tangents<P: Primitive, const N: usize>(lanes: &[&[P]; N], i: usize) -> [P; N] {
    core::array::from_fn(|k| lanes[k].get(i).copied().unwrap_or(P::ZERO))
}

/// Columns `start..` of a Jacobian from the output reals of one chunked
/// forward pass (in output leaf order): `matrix` holds `rows × columns`
/// entries row by row, and gets tangent `k` of output `i` at
/// `(i, start + k)` for every `start + k < columns`. `matrix` is sized on
/// the first chunk.
pub fn store_columns<P: Primitive, const N: usize>(
    outputs: &[DualVec<P, N>],
    start: usize,
    columns: usize,
    matrix: &mut Vec<P>,
) {
    if matrix.is_empty() {
        matrix.resize(outputs.len() * columns, P::ZERO);
    }
    let width = N.min(columns.saturating_sub(start));
    for (row, output) in matrix.chunks_exact_mut(columns.max(1)).zip(outputs) {
        row[start..start + width].copy_from_slice(&output.tangents[..width]);
    }
}

/// Column `column` of a matrix of `columns` columns, row by row in
/// `matrix` (sized on the first column stored), from one flat column of
/// values (one forward pass's tangents, one Hessian-vector product).
/// Nothing is stored for `column >= columns` (a pass made for the value
/// alone).
pub fn store_column<P: Primitive>(
    values: &[P],
    column: usize,
    columns: usize,
    matrix: &mut Vec<P>,
) {
    if matrix.is_empty() {
        matrix.resize(values.len() * columns, P::ZERO);
    }
    if column < columns {
        for (row, &value) in matrix.chunks_exact_mut(columns).zip(values) {
            row[column] = value;
        }
    }
}

/// Runs `pass(start, first)` for `start` = 0, `step`, 2 `step`, ... below
/// `total`, and at least once (the first pass, `first` true, gives the
/// value even when there is nothing to differentiate); returns the value
/// the first pass gave. (`jvps`, `jacobian_fwd`, the sparse Jacobians: one
/// pass per chunk of directions.)
///
/// # Panics
///
/// If the first pass gives no value.
pub fn chunked_passes<V>(
    total: usize,
    step: usize,
    mut pass: impl FnMut(usize, bool) -> Option<V>,
) -> V {
    let value =
        pass(0, true).expect("deltad: the first pass of a chunked derivative gives the value");
    let mut start = step;
    while start < total {
        pass(start, false);
        start += step;
    }
    value
}
