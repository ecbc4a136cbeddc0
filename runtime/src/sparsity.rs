//! Sparse Jacobians and Hessians: the sparsity pattern, a colouring of its
//! columns, and the matrix in compressed sparse rows.
//!
//! * **Detection.** [`Tracer`] is a scalar whose every value carries the set
//!   of input reals it depends on. The compiled forward pass runs on it
//!   once (values computed as on the machine float, so branches take the
//!   way they take at the given point); the sets of the output reals are
//!   the rows of the pattern. A dependency counts whatever its coefficient's
//!   value (`x * y` at `y = 0` still depends on `x`); piecewise-constant
//!   functions (`floor`, `round`, `signum`, ...) and the sign operand of
//!   `copysign` carry none. A function on the tape gets its pattern from
//!   its recorded graph ([`SparsityPattern::from_graph`]), where a loop or
//!   call recorded as a whole makes each of its outputs depend on all it
//!   reads (a superset: still valid, only less sparse).
//! * **Colouring.** Columns that share no row can be seeded together: a
//!   greedy distance-1 colouring of the column intersection graph, columns
//!   in order, each taking the smallest colour unused by its neighbours.
//!   A Hessian's pattern is symmetric and takes a star colouring (no path
//!   of four vertices two-coloured), fewer colours, each entry read from
//!   the compressed column of either of its indices (Gebremedhin, Manne and
//!   Pothen, "What color is your Jacobian?", SIAM Review 2005). The
//!   Hessian's pattern comes from the forward pass and adjoint on
//!   [`Tracer`]: the set of each gradient real is a row.
//! * **Evaluation.** One forward pass per chunk of colours, the tangent of
//!   each colour the sum of its columns' unit vectors; entry `(i, j)` is
//!   then tangent `colour(j)` of output `i`.
//!
//! The pattern holds where control flow takes the same way as at the point
//! it was detected at; a function whose branches change which inputs an
//! output reads has a pattern per region. Detect it once where the
//! structure is fixed (or take the union over representative points with
//! [`SparsityPattern::union`]) and pass it to every `sparse_jacobian` call.

use core::cell::RefCell;
use core::cmp::Ordering;
use core::fmt;
use core::iter::{Product, Sum};
use core::ops::{
    Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Rem, RemAssign, Sub, SubAssign,
};
use std::sync::Arc;

use crate::dual_vec::DualVec;
use crate::forward::TangentSeeds;
use crate::graph::{NodeKind, TapeGraph};
use crate::scalar::{sealed, Primitive, Scalar};

// ---------------------------------------------------------------------------
// Dependency sets: a union DAG in a per-thread arena.

/// A node of the dependency DAG: no input, one input, or the union of two
/// nodes. Sets are resolved only for the outputs, by a walk of the DAG, so
/// tracing costs one node per operation.
#[derive(Clone, Copy)]
enum SetNode {
    Empty,
    Input(u32),
    Union(u32, u32),
}

thread_local! {
    static SETS: RefCell<Vec<SetNode>> = const { RefCell::new(Vec::new()) };
}

/// The empty set.
const EMPTY: u32 = 0;

fn union(a: u32, b: u32) -> u32 {
    if a == b || b == EMPTY {
        return a;
    }
    if a == EMPTY {
        return b;
    }
    SETS.with(|sets| {
        let mut sets = sets.borrow_mut();
        sets.push(SetNode::Union(a, b));
        (sets.len() - 1) as u32
    })
}

fn singleton(input: usize) -> u32 {
    SETS.with(|sets| {
        let mut sets = sets.borrow_mut();
        sets.push(SetNode::Input(input as u32));
        (sets.len() - 1) as u32
    })
}

/// Runs `f` with a fresh arena of dependency sets (the previous one is
/// restored after, so detections may nest).
fn with_fresh_sets<R>(f: impl FnOnce() -> R) -> R {
    let saved = SETS.with(|sets| core::mem::replace(&mut *sets.borrow_mut(), vec![SetNode::Empty]));
    let result = f();
    SETS.with(|sets| *sets.borrow_mut() = saved);
    result
}

/// The inputs of each set in `roots`, sorted, resolved by walks of the DAG
/// (a node visited once per root).
fn resolve(roots: &[u32]) -> Vec<Vec<u32>> {
    SETS.with(|sets| {
        let sets = sets.borrow();
        let mut seen = vec![usize::MAX; sets.len()];
        let mut stack = Vec::new();
        roots
            .iter()
            .enumerate()
            .map(|(root_index, &root)| {
                let mut inputs = Vec::new();
                stack.push(root);
                while let Some(node) = stack.pop() {
                    let slot = &mut seen[node as usize];
                    if *slot == root_index {
                        continue;
                    }
                    *slot = root_index;
                    match sets[node as usize] {
                        SetNode::Empty => {}
                        SetNode::Input(input) => inputs.push(input),
                        SetNode::Union(a, b) => {
                            stack.push(a);
                            stack.push(b);
                        }
                    }
                }
                inputs.sort_unstable();
                inputs.dedup();
                inputs
            })
            .collect()
    })
}

// ---------------------------------------------------------------------------
// The tracing scalar.

/// A value and the set of input reals it depends on: the scalar a forward
/// pass runs on to detect a Jacobian's sparsity pattern.
#[derive(Clone, Copy)]
pub struct Tracer<P> {
    value: P,
    deps: u32,
}

impl<P: Primitive> Tracer<P> {
    #[inline]
    fn with(value: P, deps: u32) -> Self {
        Tracer { value, deps }
    }

    /// The value.
    pub fn value(&self) -> P {
        self.value
    }
}

/// The inputs of a traced pass: input real `k` (in leaf order) depends on
/// itself alone.
#[derive(Default)]
pub struct TraceSeeds {
    next: usize,
}

impl<P: Primitive> TangentSeeds<P> for TraceSeeds {
    type Dual = Tracer<P>;
    #[inline]
    fn seed(&mut self, value: P) -> Tracer<P> {
        let deps = singleton(self.next);
        self.next += 1;
        Tracer::with(value, deps)
    }
}

impl TraceSeeds {
    /// Runs a traced pass: `pass` makes its inputs from a `TraceSeeds` and
    /// returns the output reals; their dependency sets are the rows of the
    /// pattern, of `columns` input reals.
    pub fn pattern<P: Primitive>(
        columns: usize,
        pass: impl FnOnce(TraceSeeds) -> Vec<Tracer<P>>,
    ) -> SparsityPattern {
        with_fresh_sets(|| {
            let outputs = pass(TraceSeeds::default());
            let roots: Vec<u32> = outputs.iter().map(|t| t.deps).collect();
            SparsityPattern::from_rows(columns, resolve(&roots))
        })
    }

    /// Runs a traced forward-over-reverse pass: `pass` makes its inputs
    /// from a `TraceSeeds` and returns the gradient's reals (the adjoints of
    /// the inputs, in leaf order); the inputs each depends on are the
    /// Hessian's row patterns, symmetrised.
    pub fn hessian_pattern<P: Primitive>(
        inputs: usize,
        pass: impl FnOnce(TraceSeeds) -> Vec<Tracer<P>>,
    ) -> SparsityPattern {
        with_fresh_sets(|| {
            let gradient = pass(TraceSeeds::default());
            let roots: Vec<u32> = gradient.iter().map(|t| t.deps).collect();
            let rows = resolve(&roots);
            SparsityPattern::symmetric(
                inputs,
                rows.into_iter()
                    .map(|row| row.into_iter().map(|j| j as usize)),
            )
        })
    }
}

macro_rules! traced_binary_ops {
    ($($trait:ident $method:ident $assign:ident $assign_method:ident $op:tt),*) => {$(
        impl<P: Primitive> $trait for Tracer<P> {
            type Output = Self;
            #[inline]
            fn $method(self, rhs: Self) -> Self {
                Tracer::with(self.value $op rhs.value, union(self.deps, rhs.deps))
            }
        }
        impl<P: Primitive> $assign for Tracer<P> {
            #[inline]
            fn $assign_method(&mut self, rhs: Self) {
                *self = *self $op rhs;
            }
        }
    )*};
}
traced_binary_ops!(
    Add add AddAssign add_assign +,
    Sub sub SubAssign sub_assign -,
    Mul mul MulAssign mul_assign *,
    Div div DivAssign div_assign /,
    Rem rem RemAssign rem_assign %
);

impl<P: Primitive> Neg for Tracer<P> {
    type Output = Self;
    #[inline]
    fn neg(self) -> Self {
        Tracer::with(-self.value, self.deps)
    }
}

/// Comparisons look at values only.
impl<P: Primitive> PartialEq for Tracer<P> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<P: Primitive> PartialOrd for Tracer<P> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        self.value.partial_cmp(&other.value)
    }
}

impl<P: Primitive> fmt::Debug for Tracer<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} (traced)", self.value)
    }
}

impl<P: Primitive> fmt::Display for Tracer<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.value, f)
    }
}

impl<P: Primitive> Sum for Tracer<P> {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Tracer::from_prim(-P::ZERO), |total, x| total + x)
    }
}

impl<P: Primitive> Product for Tracer<P> {
    fn product<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Tracer::from_prim(P::ONE), |total, x| total * x)
    }
}

impl<P: Primitive> sealed::Sealed for Tracer<P> {}

macro_rules! traced_unary {
    ($($name:ident)*) => {$(
        #[inline]
        fn $name(self) -> Self {
            Tracer::with(self.value.$name(), self.deps)
        }
    )*};
}

macro_rules! traced_constant {
    ($($name:ident)*) => {$(
        /// Piecewise constant: no dependency.
        #[inline]
        fn $name(self) -> Self {
            Tracer::with(self.value.$name(), EMPTY)
        }
    )*};
}

macro_rules! traced_binary {
    ($($name:ident)*) => {$(
        #[inline]
        fn $name(self, other: Self) -> Self {
            Tracer::with(self.value.$name(other.value), union(self.deps, other.deps))
        }
    )*};
}

impl<P: Primitive> Scalar for Tracer<P> {
    type Prim = P;
    type Detached = Self;

    #[inline]
    fn detach(self) -> Self {
        self
    }
    #[inline]
    fn attach(value: Self) -> Self {
        value
    }
    const NESTED: bool = true;

    #[inline]
    fn from_prim(value: P) -> Self {
        Tracer::with(value, EMPTY)
    }
    #[inline]
    fn to_prim(self) -> P {
        self.value
    }
    #[inline]
    fn is_zero(&self) -> bool {
        self.value.is_zero() && self.deps == EMPTY
    }

    traced_unary!(sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh exp exp2 exp_m1
        ln log2 log10 ln_1p sqrt cbrt recip abs fract);
    traced_constant!(floor ceil round round_ties_even trunc signum);
    traced_binary!(atan2 powf hypot rem_euclid max min);

    #[inline]
    fn div_euclid(self, rhs: Self) -> Self {
        // Piecewise constant.
        Tracer::with(self.value.div_euclid(rhs.value), EMPTY)
    }
    #[inline]
    fn copysign(self, sign: Self) -> Self {
        // The sign operand's derivative is zero.
        Tracer::with(self.value.copysign(sign.value), self.deps)
    }
    #[inline]
    fn powi(self, n: i32) -> Self {
        Tracer::with(self.value.powi(n), self.deps)
    }
    #[inline]
    fn mul_add(self, a: Self, b: Self) -> Self {
        Tracer::with(
            self.value.mul_add(a.value, b.value),
            union(union(self.deps, a.deps), b.deps),
        )
    }
}

// ---------------------------------------------------------------------------
// The pattern and its colouring.

/// Which entries of a Jacobian may be nonzero, in compressed sparse rows:
/// row `i`'s columns are `columns[row_starts[i]..row_starts[i + 1]]`,
/// ascending. Reusable across calls (a solver can keep its symbolic
/// factorisation): `sparse_jacobian` takes it by reference. Cloning it is
/// cheap (its arrays are shared), and it may be sent to other threads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SparsityPattern {
    ncols: usize,
    row_starts: Arc<[usize]>,
    columns: Arc<[usize]>,
    colouring: Arc<Colouring>,
    symmetric: bool,
}

/// A colouring of a pattern's columns, and where each entry is read from
/// the compressed matrix (rows × colours: row i, colour c is row i of the
/// product with the sum of colour c's unit vectors).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Colouring {
    colour_of: Vec<usize>,
    count: usize,
    /// For each entry, its position `row * count + colour` in the
    /// compressed matrix.
    source: Vec<usize>,
}

impl SparsityPattern {
    /// The pattern with the given rows (each a set of column indices below
    /// `ncols`, in any order, duplicates allowed), coloured.
    ///
    /// # Panics
    ///
    /// If a column index is not below `ncols`.
    pub fn new(
        ncols: usize,
        rows: impl IntoIterator<Item = impl IntoIterator<Item = usize>>,
    ) -> Self {
        let rows: Vec<Vec<u32>> = rows
            .into_iter()
            .map(|row| {
                let mut row: Vec<u32> = row
                    .into_iter()
                    .map(|j| {
                        assert!(
                            j < ncols,
                            "deltad: column {j} in a pattern of {ncols} columns"
                        );
                        j as u32
                    })
                    .collect();
                row.sort_unstable();
                row.dedup();
                row
            })
            .collect();
        SparsityPattern::from_rows(ncols, rows)
    }

    fn from_rows(ncols: usize, rows: Vec<Vec<u32>>) -> Self {
        let (row_starts, columns) = compressed_rows(&rows);
        let colouring = Colouring::distance_one(ncols, &row_starts, &columns);
        SparsityPattern {
            ncols,
            row_starts: row_starts.into(),
            columns: columns.into(),
            colouring: Arc::new(colouring),
            symmetric: false,
        }
    }

    /// The pattern of a symmetric matrix (a Hessian), symmetrised (an entry
    /// `(i, j)` implies `(j, i)`), with a star colouring: every path on
    /// four vertices of its graph takes at least three colours, so each
    /// entry is read from one of its two compressed columns (an arrow
    /// pattern takes two colours where a column colouring takes n).
    ///
    /// # Panics
    ///
    /// If a column index is not below `n`.
    pub fn symmetric(
        n: usize,
        rows: impl IntoIterator<Item = impl IntoIterator<Item = usize>>,
    ) -> Self {
        let mut full: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (i, row) in rows.into_iter().enumerate() {
            assert!(i < n, "deltad: row {i} in a symmetric pattern of {n} rows");
            for j in row {
                assert!(
                    j < n,
                    "deltad: column {j} in a symmetric pattern of {n} columns"
                );
                full[i].push(j as u32);
                full[j].push(i as u32);
            }
        }
        for row in &mut full {
            row.sort_unstable();
            row.dedup();
        }
        SparsityPattern::symmetric_from_rows(n, full)
    }

    fn symmetric_from_rows(n: usize, rows: Vec<Vec<u32>>) -> Self {
        let (row_starts, columns) = compressed_rows(&rows);
        let colouring = Colouring::star(n, &row_starts, &columns)
            .unwrap_or_else(|| Colouring::distance_one(n, &row_starts, &columns));
        SparsityPattern {
            ncols: n,
            row_starts: row_starts.into(),
            columns: columns.into(),
            colouring: Arc::new(colouring),
            symmetric: true,
        }
    }

    /// True for the pattern of a symmetric matrix (a Hessian's).
    pub fn is_symmetric(&self) -> bool {
        self.symmetric
    }

    /// The pattern of a recorded graph (`f::tape_graph(..)`): the inputs
    /// each output real depends on, through every term whatever its
    /// coefficient; a loop or call recorded as a whole makes each of its
    /// outputs depend on everything it reads.
    pub fn from_graph(graph: &TapeGraph) -> Self {
        let ncols = graph.inputs().count();
        with_fresh_sets(|| {
            let mut set_of = vec![EMPTY; graph.len()];
            let mut next_input = 0;
            for node in graph.nodes() {
                let set = match &node.kind {
                    NodeKind::Input => {
                        next_input += 1;
                        singleton(next_input - 1)
                    }
                    NodeKind::Linear | NodeKind::Accumulated { .. } => node
                        .terms
                        .iter()
                        .fold(EMPTY, |set, term| union(set, set_of[term.argument])),
                    NodeKind::Loop { reads, .. }
                    | NodeKind::CheckpointedLoop { reads, .. }
                    | NodeKind::CheckpointedCall { reads, .. } => reads
                        .iter()
                        .fold(EMPTY, |set, &read| union(set, set_of[read])),
                    NodeKind::Produced { by, .. } => set_of[*by],
                };
                set_of[node.id] = set;
            }
            let roots: Vec<u32> = graph
                .outputs()
                .iter()
                .map(|output| output.map_or(EMPTY, |id| set_of[id]))
                .collect();
            SparsityPattern::from_rows(ncols, resolve(&roots))
        })
    }

    /// The union of two patterns of the same shape (a pattern valid in the
    /// regions of both, for a function whose branches change it).
    ///
    /// # Panics
    ///
    /// If the shapes differ.
    pub fn union(&self, other: &SparsityPattern) -> SparsityPattern {
        assert_eq!(
            (self.nrows(), self.ncols()),
            (other.nrows(), other.ncols()),
            "deltad: the union of patterns of different shapes"
        );
        SparsityPattern::new(
            self.ncols,
            (0..self.nrows()).map(|i| {
                self.row(i)
                    .iter()
                    .chain(other.row(i))
                    .copied()
                    .collect::<Vec<_>>()
            }),
        )
    }

    /// Rows: the output reals.
    pub fn nrows(&self) -> usize {
        self.row_starts.len() - 1
    }

    /// Columns: the differentiated input reals, in leaf order.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// The number of entries that may be nonzero.
    pub fn nnz(&self) -> usize {
        self.columns.len()
    }

    /// The columns of row `i`, ascending.
    pub fn row(&self, i: usize) -> &[usize] {
        &self.columns[self.row_starts[i]..self.row_starts[i + 1]]
    }

    /// Where each row starts in [`column_indices`](Self::column_indices)
    /// (`nrows() + 1` offsets: CSR's row pointer).
    pub fn row_starts(&self) -> &[usize] {
        &self.row_starts
    }

    /// The column of each entry, row by row (CSR's column indices).
    pub fn column_indices(&self) -> &[usize] {
        &self.columns
    }

    /// The number of colours: forward passes of one tangent each that the
    /// Jacobian takes (a chunk of 8 per pass on the compiled path).
    pub fn colours(&self) -> usize {
        self.colouring.count
    }

    /// The colour of each column.
    pub fn colour_of(&self) -> &[usize] {
        &self.colouring.colour_of
    }

    /// The tangent that seeds colour `colour`: 1 for its columns, 0
    /// elsewhere.
    pub fn colour_seed<P: Primitive>(&self, colour: usize) -> Vec<P> {
        self.colouring
            .colour_of
            .iter()
            .map(|&c| if c == colour { P::ONE } else { P::ZERO })
            .collect()
    }

    /// Panics unless the pattern has `inputs` columns (the differentiated
    /// input reals of the function it is used for).
    pub fn check_columns(&self, inputs: usize) {
        assert_eq!(
            self.ncols, inputs,
            "deltad: the sparsity pattern has {} columns, the function {} differentiated input reals",
            self.ncols, inputs
        );
    }
}

/// Rows as CSR offsets and column indices.
fn compressed_rows(rows: &[Vec<u32>]) -> (Vec<usize>, Vec<usize>) {
    let mut row_starts = Vec::with_capacity(rows.len() + 1);
    let mut columns = Vec::with_capacity(rows.iter().map(Vec::len).sum());
    row_starts.push(0);
    for row in rows {
        columns.extend(row.iter().map(|&j| j as usize));
        row_starts.push(columns.len());
    }
    (row_starts, columns)
}

impl Colouring {
    /// Greedy distance-1 colouring of the column intersection graph:
    /// columns in order, each the smallest colour no column sharing a row
    /// with it has. Every entry `(i, j)` is then row `i` of colour `j`'s
    /// compressed column.
    fn distance_one(ncols: usize, row_starts: &[usize], columns: &[usize]) -> Colouring {
        // The rows of each column (the pattern's transpose).
        let mut col_starts = vec![0usize; ncols + 1];
        for &j in columns {
            col_starts[j + 1] += 1;
        }
        for j in 0..ncols {
            col_starts[j + 1] += col_starts[j];
        }
        let mut rows_of = vec![0usize; columns.len()];
        let mut fill = col_starts.clone();
        for i in 0..row_starts.len() - 1 {
            for &j in &columns[row_starts[i]..row_starts[i + 1]] {
                rows_of[fill[j]] = i;
                fill[j] += 1;
            }
        }
        const NONE: usize = usize::MAX;
        let mut colour_of = vec![NONE; ncols];
        // `forbidden[c] == j`: colour c is taken by a neighbour of column j.
        let mut forbidden: Vec<usize> = Vec::new();
        let mut count = 0;
        for j in 0..ncols {
            for &i in &rows_of[col_starts[j]..col_starts[j + 1]] {
                for &k in &columns[row_starts[i]..row_starts[i + 1]] {
                    let c = colour_of[k];
                    if c != NONE {
                        forbidden[c] = j;
                    }
                }
            }
            let colour = (0..count).find(|&c| forbidden[c] != j).unwrap_or(count);
            if colour == count {
                count += 1;
                forbidden.push(NONE);
            }
            colour_of[j] = colour;
        }
        let source = (0..row_starts.len() - 1)
            .flat_map(|i| {
                let colour_of = &colour_of;
                columns[row_starts[i]..row_starts[i + 1]]
                    .iter()
                    .map(move |&j| i * count + colour_of[j])
            })
            .collect();
        Colouring {
            colour_of,
            count,
            source,
        }
    }

    /// Greedy star colouring of a symmetric pattern's graph (vertices in
    /// order; a vertex avoids its neighbours' colours, the colours two
    /// steps away through a vertex not coloured yet, and any colour that
    /// would make a path of four vertices two-coloured), with each entry's
    /// source: row `i` of colour `c_j` where `j` is the only column of its
    /// colour in row `i`, else row `j` of colour `c_i` (symmetry). `None`
    /// if some entry has neither (the caller falls back to a distance-1
    /// colouring, whose entries all have the first).
    fn star(n: usize, row_starts: &[usize], columns: &[usize]) -> Option<Colouring> {
        const NONE: usize = usize::MAX;
        let neighbours = |v: usize| {
            columns[row_starts[v]..row_starts[v + 1]]
                .iter()
                .copied()
                .filter(move |&w| w != v)
        };
        let mut colour_of = vec![NONE; n];
        let mut forbidden: Vec<usize> = Vec::new();
        let mut count = 0;
        for v in 0..n {
            for w in neighbours(v) {
                let cw = colour_of[w];
                if cw != NONE {
                    forbidden[cw] = v;
                }
                for x in neighbours(w).filter(|&x| x != v) {
                    let cx = colour_of[x];
                    if cx == NONE {
                        continue;
                    }
                    if cw == NONE || neighbours(x).any(|y| y != w && colour_of[y] == cw) {
                        forbidden[cx] = v;
                    }
                }
            }
            let colour = (0..count).find(|&c| forbidden[c] != v).unwrap_or(count);
            if colour == count {
                count += 1;
                forbidden.push(NONE);
            }
            colour_of[v] = colour;
        }
        // How many columns of each colour row i has (a stamp per colour).
        let mut stamp = vec![NONE; count];
        let mut tally = vec![0usize; count];
        let unique = |i: usize, colour: usize, stamp: &mut Vec<usize>, tally: &mut Vec<usize>| {
            if stamp[colour] != i {
                for &k in &columns[row_starts[i]..row_starts[i + 1]] {
                    let c = colour_of[k];
                    if stamp[c] != i {
                        stamp[c] = i;
                        tally[c] = 0;
                    }
                    tally[c] += 1;
                }
            }
            tally[colour] == 1
        };
        let mut source = Vec::with_capacity(columns.len());
        for i in 0..n {
            for &j in &columns[row_starts[i]..row_starts[i + 1]] {
                if unique(i, colour_of[j], &mut stamp, &mut tally) {
                    source.push(i * count + colour_of[j]);
                } else if unique(j, colour_of[i], &mut stamp, &mut tally) {
                    source.push(j * count + colour_of[i]);
                } else {
                    return None;
                }
            }
        }
        Some(Colouring {
            colour_of,
            count,
            source,
        })
    }
}

// ---------------------------------------------------------------------------
// Compressed evaluation.

/// Tangents for a forward pass over a chunk of colours: tangent `k` of
/// input real `j` is 1 where `j` has colour `start + k`.
pub struct ColourSeeds<'a, const N: usize> {
    colour_of: &'a [usize],
    start: usize,
    next: usize,
}

impl<'a, const N: usize> ColourSeeds<'a, N> {
    /// Colours `start..start + N` of `pattern`.
    pub fn new(pattern: &'a SparsityPattern, start: usize) -> Self {
        ColourSeeds {
            colour_of: pattern.colour_of(),
            start,
            next: 0,
        }
    }
}

impl<P: Primitive, const N: usize> TangentSeeds<P> for ColourSeeds<'_, N> {
    type Dual = DualVec<P, N>;
    #[inline]
    fn seed(&mut self, value: P) -> DualVec<P, N> {
        let colour = self.colour_of.get(self.next).copied().unwrap_or_else(|| {
            panic!(
                "deltad: the sparsity pattern has {} columns, fewer than the differentiated inputs",
                self.colour_of.len()
            )
        });
        self.next += 1;
        DualVec::new(
            value,
            core::array::from_fn(|k| {
                if colour == self.start + k {
                    P::ONE
                } else {
                    P::ZERO
                }
            }),
        )
    }
}

/// A Jacobian or Hessian in compressed sparse rows over a
/// [`SparsityPattern`]: the entry of `pattern.column_indices()[e]` in its
/// row is `values()[e]`.
#[derive(Clone, Debug, PartialEq)]
pub struct SparseMatrix<P> {
    pattern: SparsityPattern,
    values: Vec<P>,
}

impl<P: Primitive> SparseMatrix<P> {
    /// Its pattern.
    pub fn pattern(&self) -> &SparsityPattern {
        &self.pattern
    }

    /// The entries, row by row, in the pattern's order (CSR's values).
    pub fn values(&self) -> &[P] {
        &self.values
    }

    /// Entry `(i, j)` (zero outside the pattern).
    pub fn get(&self, i: usize, j: usize) -> P {
        let row = self.pattern.row(i);
        match row.binary_search(&j) {
            Ok(k) => self.values[self.pattern.row_starts[i] + k],
            Err(_) => P::ZERO,
        }
    }

    /// The matrix over `pattern` from its compressed form, `rows × colours`
    /// entries row by row: entry `(i, c)` is row `i` of the product with the
    /// sum of colour `c`'s unit vectors (a Jacobian-vector or Hessian-vector
    /// product).
    ///
    /// # Panics
    ///
    /// If the function has another number of output reals, `rows`, than
    /// the pattern has rows, or `compressed` does not have `rows × colours`
    /// entries.
    pub fn from_compressed(pattern: &SparsityPattern, rows: usize, compressed: &[P]) -> Self {
        assert_eq!(
            rows,
            pattern.nrows(),
            "deltad: the sparsity pattern has {} rows, the function {} output reals",
            pattern.nrows(),
            rows
        );
        assert_eq!(
            compressed.len(),
            pattern.nrows() * pattern.colours(),
            "deltad: a compressed matrix of {} entries for {} rows and {} colours",
            compressed.len(),
            pattern.nrows(),
            pattern.colours()
        );
        SparseMatrix {
            pattern: pattern.clone(),
            values: pattern
                .colouring
                .source
                .iter()
                .map(|&k| compressed[k])
                .collect(),
        }
    }

    /// The dense matrix, row by row (`nrows` rows of `ncols` entries).
    pub fn to_dense(&self) -> Vec<Vec<P>> {
        (0..self.pattern.nrows())
            .map(|i| {
                let mut row = vec![P::ZERO; self.pattern.ncols];
                let start = self.pattern.row_starts[i];
                for (k, &j) in self.pattern.row(i).iter().enumerate() {
                    row[j] = self.values[start + k];
                }
                row
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colourings_are_valid_and_tight_on_bands() {
        // Tridiagonal, 10 columns: 3 colours.
        let n = 10;
        let pattern = SparsityPattern::new(
            n,
            (0..n).map(|i| (i.saturating_sub(1)..(i + 2).min(n)).collect::<Vec<_>>()),
        );
        assert_eq!(pattern.colours(), 3);
        assert_eq!(pattern.nnz(), 3 * n - 2);
        assert_valid(&pattern);
        // Dense: one colour per column.
        let dense = SparsityPattern::new(4, (0..3).map(|_| 0..4));
        assert_eq!(dense.colours(), 4);
        assert_valid(&dense);
        // Arbitrary rows.
        let scattered = SparsityPattern::new(
            12,
            (0..20).map(|i| vec![(i * 7) % 12, (i * i + 3) % 12, (5 * i + 1) % 12]),
        );
        assert_valid(&scattered);
    }

    fn assert_valid(pattern: &SparsityPattern) {
        for i in 0..pattern.nrows() {
            let row = pattern.row(i);
            for (a, &j) in row.iter().enumerate() {
                for &k in &row[a + 1..] {
                    assert_ne!(
                        pattern.colour_of()[j],
                        pattern.colour_of()[k],
                        "columns {j} and {k} share row {i} and a colour"
                    );
                }
            }
        }
    }

    /// A symmetric matrix on `pattern` is recovered exactly from its
    /// compressed columns (each colour's sum of columns), with as few
    /// colours as a star colouring needs.
    fn assert_recovers(pattern: &SparsityPattern) {
        let n = pattern.ncols();
        let entry = |i: usize, j: usize| ((i.min(j) * 31 + i.max(j) * 17) % 13) as f64 + 1.0;
        let mut compressed = vec![0.0f64; n * pattern.colours()];
        for i in 0..n {
            for &j in pattern.row(i) {
                compressed[i * pattern.colours() + pattern.colour_of()[j]] += entry(i, j);
            }
        }
        let recovered = SparseMatrix::from_compressed(pattern, n, &compressed);
        for i in 0..n {
            for &j in pattern.row(i) {
                assert_eq!(recovered.get(i, j), entry(i, j), "entry ({i}, {j})");
            }
        }
    }

    #[test]
    fn star_colourings_recover_symmetric_matrices() {
        let n = 12;
        // Arrow: two colours (a column colouring needs n).
        let arrow = SparsityPattern::symmetric(n, (0..n).map(|i| vec![0, i]));
        assert_eq!(arrow.colours(), 2);
        assert_recovers(&arrow);
        // Tridiagonal: three.
        let band = SparsityPattern::symmetric(
            n,
            (0..n).map(|i| (i.saturating_sub(1)..(i + 2).min(n)).collect::<Vec<_>>()),
        );
        assert_eq!(band.colours(), 3);
        assert_recovers(&band);
        // Scattered, and dense.
        for seed in 0..20usize {
            let rows = (0..n)
                .map(|i| (0..3).map(move |k| (i * 7 + k * 5 + seed * seed * 3 + k * i * seed) % n));
            assert_recovers(&SparsityPattern::symmetric(n, rows));
        }
        let dense = SparsityPattern::symmetric(5, (0..5).map(|_| 0..5));
        assert_eq!(dense.colours(), 5);
        assert_recovers(&dense);
    }

    #[test]
    fn tracing_finds_dependencies_whatever_the_values() {
        let pattern = TraceSeeds::pattern::<f64>(3, |mut seeds| {
            let x: Vec<Tracer<f64>> = [1.0, 0.0, 2.0].iter().map(|&v| seeds.seed(v)).collect();
            vec![
                x[0] * x[1],         // x[1] = 0: still depends on x[0]
                x[2].floor() + x[1], // floor carries nothing
                x[0].sin().copysign(x[2]),
                Tracer::from_prim(4.0),
            ]
        });
        assert_eq!(pattern.row(0), &[0, 1]);
        assert_eq!(pattern.row(1), &[1]);
        assert_eq!(pattern.row(2), &[0]);
        assert_eq!(pattern.row(3), &[] as &[usize]);
    }
}
