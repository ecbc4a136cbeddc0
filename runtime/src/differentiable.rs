//! Values with real leaves: the paper's arbitrary first-order types S and T
//! (seed 004 §9, Fig. 16).
//!
//! A [`Differentiable<P>`] type (`P` is its machine float, `f64` or `f32`)
//! has a *twin* with the same structure where every real leaf is replaced by
//! a `T`: `f64`'s twin is `T` itself, `Vec<E>`'s is `Vec<E::Twin<T>>`, a
//! tuple's the tuple of twins, a user struct's a generated struct (see
//! `#[derive(Differentiable)]`). Discrete leaves (integers, `bool`, strings)
//! are kept as they are.
//!
//! The wrapper of the paper is written with these operations: `input`
//! (initVars: a fresh input per leaf), `constant` (initZeros' dual: Zero
//! deltas), `seed` (the dot with δt), `adjoint` (lookup), `value`, and
//! `from_twin` to hand a gradient back in the user's own type.

use crate::compiled::Active;
use crate::real::Real;
use crate::scalar::{Primitive, Scalar};
use crate::tape::{DeltaId, Tape};
use crate::wrapper::GradReader;

/// A type whose real leaves (of machine float `P`) can be differentiated.
///
/// Implemented for `f64`/`f32`, discrete data (integers, `bool`, `char`,
/// `String`, `()`), `Vec`s, arrays, `Option`s, `Result`s (the `Ok` value's reals) and tuples (up to 8) of
/// differentiable types, and user types through
/// `#[derive(Differentiable)]`.
///
/// A derived type can be a parameter and a result of differentiated
/// functions; its gradient has the type itself, fields marked `#[no_grad]`
/// (and discrete fields) keep their value:
///
/// ```
/// use deltad::{differentiate, Differentiable};
///
/// #[derive(Differentiable, Clone, Debug, PartialEq)]
/// struct Particle {
///     position: [f64; 2],
///     mass: f64,
///     #[no_grad]
///     name: String,
/// }
///
/// #[differentiate]
/// fn kinetic_energy(p: &Particle, velocity: f64) -> f64 {
///     0.5 * p.mass * velocity * velocity
/// }
///
/// # fn main() {
/// let p = Particle { position: [0.0, 1.0], mass: 2.0, name: "a".into() };
/// let g = kinetic_energy::grad(&p, 3.0);
/// assert_eq!(g.p, Particle { position: [0.0, 0.0], mass: 4.5, name: "a".into() });
/// assert_eq!(g.velocity, 6.0);
/// # }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a differentiable type",
    label = "deltad cannot differentiate through this type",
    note = "derive `Differentiable` for your own types (`#[derive(Differentiable)]`); mark a parameter #[no_grad] if it only holds constant data"
)]
pub trait Differentiable<P: Primitive>: Sized {
    /// The same structure with every real leaf replaced by a `T`.
    type Twin<T>;

    /// Each real leaf a fresh input on `tape`, in leaf order.
    fn input<'t, S: Scalar<Prim = P>>(&self, tape: &'t Tape<S>) -> Self::Twin<Real<'t, S>>;

    /// Each real leaf made by `leaf` from its machine value, in leaf order
    /// (`input` and `constant` are special cases; custom derivatives build
    /// their outputs with it).
    fn build<T>(&self, leaf: &mut impl FnMut(P) -> T) -> Self::Twin<T>;

    /// The twin with every real leaf mapped by `leaf`, in leaf order
    /// (discrete leaves are kept).
    fn map_twin<In, Out>(
        twin: &Self::Twin<In>,
        leaf: &mut impl FnMut(&In) -> Out,
    ) -> Self::Twin<Out>;

    /// The machine values of a dual twin, in a twin of machine floats.
    fn primal<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>) -> Self::Twin<P>;

    /// Appends the real leaves of `twin` to `out`, in leaf order.
    fn flatten_twin<T: Copy>(twin: &Self::Twin<T>, out: &mut Vec<T>);

    /// Each real leaf a constant (no derivative).
    fn constant<'t, S: Scalar<Prim = P> + 't>(&self) -> Self::Twin<Real<'t, S>>;

    /// The values of a dual twin.
    fn value<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>) -> Self::Twin<S>;

    /// The adjoint of every leaf of a dual twin (0 for constants).
    fn adjoint<S: Scalar<Prim = P>>(
        dual: &Self::Twin<Real<'_, S>>,
        adjoints: &[S],
    ) -> Self::Twin<S>;

    /// Adds `seed`'s leaves to the adjoints of `dual`'s leaves.
    fn seed<S: Scalar<Prim = P>>(
        dual: &Self::Twin<Real<'_, S>>,
        seed: &Self::Twin<S>,
        adjoints: &mut [S],
    );

    /// The binding of every leaf of a dual twin, in leaf order (`None` for
    /// constants).
    fn leaves<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>, out: &mut Vec<Option<DeltaId>>);

    /// A twin shaped like `dual` with every leaf `fill`.
    fn filled<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>, fill: S) -> Self::Twin<S>;

    /// Sets leaf number `*index` (counting down) to `value`: used to build
    /// unit seeds for Jacobian rows. Returns true once the leaf was reached.
    fn set_leaf<S: Scalar<Prim = P>>(twin: &mut Self::Twin<S>, index: &mut usize, value: S)
        -> bool;

    /// A twin shaped like `self` whose real leaves are read from `reader`, in
    /// leaf order (the adjoints of inputs created by [`input`](Self::input)).
    fn gather<S: Scalar<Prim = P>>(&self, reader: &mut GradReader<'_, S>) -> Self::Twin<S>;

    /// The user's type from a twin of machine floats (a gradient, a value).
    fn from_twin(twin: Self::Twin<P>) -> Self;

    /// The twin of machine floats of this value (a seed given in the user's type).
    fn to_twin(&self) -> Self::Twin<P>;

    /// The user's type from a compiled adjoint's twin of machine floats, by
    /// value (a parameter's gradient into its `Grad`): buffers move where
    /// their elements' twins are laid out as the elements, no copy.
    #[doc(hidden)]
    fn from_active_twin(twin: Self::Twin<Active<P>>) -> Self {
        Self::from_twin(Self::map_twin(&twin, &mut |leaf: &Active<P>| leaf.0))
    }

    /// True if `other` is shaped like `self`, so that their reals
    /// correspond leaf by leaf: the same lengths of the buffers inside, the
    /// same variants (a tangent given in the user's type is checked against
    /// its parameter so). By default, the same number of reals.
    fn same_shape(&self, other: &Self) -> bool {
        crate::check::real_count(self) == crate::check::real_count(other)
    }

    /// Set where a value of `Self` is laid out exactly as its twin in a
    /// compiled pass on machine floats, `Self::Twin<Active<P>>` (checked by
    /// `#[derive(Differentiable)]`): the pass then reads a buffer of values
    /// as their twins, and adds a buffer's gradient into the values of a
    /// `Grad`, with no copies. Leave it `None` in a hand-written
    /// implementation.
    #[doc(hidden)]
    const TWIN_LAYOUT: Option<TwinLayout> = None;
}

/// The proof behind [`Differentiable::TWIN_LAYOUT`]: made only where the
/// layouts were checked.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct TwinLayout(());

impl TwinLayout {
    /// # Safety
    ///
    /// For the type `T` whose `TWIN_LAYOUT` this becomes, with machine
    /// float `P`: `T` and `T::Twin<Active<P>>` have the same size and
    /// alignment, and each field of one lies at the offset of the same
    /// field of the other, with the same type or (recursively) a type
    /// whose own `TWIN_LAYOUT` is set (so every real `P` of `T` lies where
    /// the twin has an `Active<P>`, which is `repr(transparent)`).
    pub const unsafe fn checked() -> TwinLayout {
        TwinLayout(())
    }
}

/// `lookup` for one leaf.
#[inline(always)]
fn adjoint_of<S: Scalar>(real: &Real<'_, S>, adjoints: &[S]) -> S {
    match real.id() {
        Some(id) => adjoints[id.index()],
        None => S::zero(),
    }
}

macro_rules! float_leaf {
    ($($p:ident)*) => {$(
        impl Differentiable<$p> for $p {
            type Twin<T> = T;

            // SAFETY: the twin is `Active<$p>`, `repr(transparent)` over `$p`.
            const TWIN_LAYOUT: Option<TwinLayout> = Some(unsafe { TwinLayout::checked() });

            #[inline]
            fn input<'t, S: Scalar<Prim = $p>>(&self, tape: &'t Tape<S>) -> Real<'t, S> {
                Real::input(tape, S::from_prim(*self))
            }
            #[inline]
            fn build<T>(&self, leaf: &mut impl FnMut($p) -> T) -> T {
                leaf(*self)
            }
            #[inline]
            fn map_twin<In, Out>(twin: &In, leaf: &mut impl FnMut(&In) -> Out) -> Out {
                leaf(twin)
            }
            #[inline]
            fn primal<S: Scalar<Prim = $p>>(dual: &Real<'_, S>) -> $p {
                dual.to_prim()
            }
            #[inline]
            fn flatten_twin<T: Copy>(twin: &T, out: &mut Vec<T>) {
                out.push(*twin);
            }
            #[inline]
            fn constant<'t, S: Scalar<Prim = $p> + 't>(&self) -> Real<'t, S> {
                Real::from_prim(*self)
            }
            #[inline]
            fn value<S: Scalar<Prim = $p>>(dual: &Real<'_, S>) -> S {
                dual.value()
            }
            #[inline]
            fn adjoint<S: Scalar<Prim = $p>>(dual: &Real<'_, S>, adjoints: &[S]) -> S {
                adjoint_of(dual, adjoints)
            }
            #[inline]
            fn seed<S: Scalar<Prim = $p>>(dual: &Real<'_, S>, seed: &S, adjoints: &mut [S]) {
                if let Some(id) = dual.id() {
                    adjoints[id.index()] += *seed;
                }
            }
            fn leaves<S: Scalar<Prim = $p>>(dual: &Real<'_, S>, out: &mut Vec<Option<DeltaId>>) {
                out.push(dual.id());
            }
            fn filled<S: Scalar<Prim = $p>>(_dual: &Real<'_, S>, fill: S) -> S {
                fill
            }
            #[inline]
            fn gather<S: Scalar<Prim = $p>>(&self, reader: &mut GradReader<'_, S>) -> S {
                reader.scalar()
            }
            fn set_leaf<S: Scalar<Prim = $p>>(twin: &mut S, index: &mut usize, value: S) -> bool {
                if *index == 0 {
                    *twin = value;
                    true
                } else {
                    *index -= 1;
                    false
                }
            }
            #[inline]
            fn from_twin(twin: $p) -> $p {
                twin
            }
            #[inline]
            fn to_twin(&self) -> $p {
                *self
            }
            #[inline]
            fn same_shape(&self, _: &$p) -> bool {
                true
            }
            #[inline]
            fn from_active_twin(twin: Active<$p>) -> $p {
                twin.0
            }
        }
    )*};
}
float_leaf!(f64 f32);

macro_rules! discrete_leaf {
    ($($t:ty),*) => {$(
        /// Discrete data: kept as it is, no derivative.
        impl<P: Primitive> Differentiable<P> for $t {
            type Twin<T> = $t;

            // SAFETY: the twin is the type itself.
            const TWIN_LAYOUT: Option<TwinLayout> = Some(unsafe { TwinLayout::checked() });

            fn input<S: Scalar<Prim = P>>(&self, _tape: &Tape<S>) -> $t {
                self.clone()
            }
            fn build<T>(&self, _leaf: &mut impl FnMut(P) -> T) -> $t {
                self.clone()
            }
            fn map_twin<In, Out>(twin: &$t, _leaf: &mut impl FnMut(&In) -> Out) -> $t {
                twin.clone()
            }
            fn primal<S: Scalar<Prim = P>>(dual: &$t) -> $t {
                dual.clone()
            }
            fn flatten_twin<T: Copy>(_twin: &$t, _out: &mut Vec<T>) {}
            fn constant<'t, S: Scalar<Prim = P> + 't>(&self) -> $t {
                self.clone()
            }
            fn value<S: Scalar<Prim = P>>(dual: &$t) -> $t {
                dual.clone()
            }
            fn adjoint<S: Scalar<Prim = P>>(dual: &$t, _adjoints: &[S]) -> $t {
                dual.clone()
            }
            fn seed<S: Scalar<Prim = P>>(_dual: &$t, _seed: &$t, _adjoints: &mut [S]) {}
            fn leaves<S: Scalar<Prim = P>>(_dual: &$t, _out: &mut Vec<Option<DeltaId>>) {}
            fn filled<S: Scalar<Prim = P>>(dual: &$t, _fill: S) -> $t {
                dual.clone()
            }
            fn set_leaf<S: Scalar<Prim = P>>(_twin: &mut $t, _index: &mut usize, _value: S) -> bool {
                false
            }
            fn gather<S: Scalar<Prim = P>>(&self, _reader: &mut GradReader<'_, S>) -> $t {
                self.clone()
            }
            fn from_twin(twin: $t) -> $t {
                twin
            }
            fn to_twin(&self) -> $t {
                self.clone()
            }
            fn same_shape(&self, _: &$t) -> bool {
                true
            }
            fn from_active_twin(twin: $t) -> $t {
                twin
            }
        }
    )*};
}
discrete_leaf!(
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    bool,
    char,
    String,
    ()
);

impl<P: Primitive, E: Differentiable<P>> Differentiable<P> for Vec<E> {
    type Twin<T> = Vec<E::Twin<T>>;

    fn input<'t, S: Scalar<Prim = P>>(&self, tape: &'t Tape<S>) -> Self::Twin<Real<'t, S>> {
        self.iter().map(|e| e.input(tape)).collect()
    }
    fn build<T>(&self, leaf: &mut impl FnMut(P) -> T) -> Self::Twin<T> {
        self.iter().map(|e| e.build(leaf)).collect()
    }
    fn map_twin<In, Out>(
        twin: &Self::Twin<In>,
        leaf: &mut impl FnMut(&In) -> Out,
    ) -> Self::Twin<Out> {
        twin.iter().map(|e| E::map_twin(e, leaf)).collect()
    }
    fn primal<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>) -> Self::Twin<P> {
        dual.iter().map(E::primal).collect()
    }
    fn flatten_twin<T: Copy>(twin: &Self::Twin<T>, out: &mut Vec<T>) {
        for t in twin {
            E::flatten_twin(t, out);
        }
    }
    fn constant<'t, S: Scalar<Prim = P> + 't>(&self) -> Self::Twin<Real<'t, S>> {
        self.iter().map(|e| e.constant()).collect()
    }
    fn value<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>) -> Self::Twin<S> {
        dual.iter().map(E::value).collect()
    }
    fn adjoint<S: Scalar<Prim = P>>(
        dual: &Self::Twin<Real<'_, S>>,
        adjoints: &[S],
    ) -> Self::Twin<S> {
        dual.iter().map(|e| E::adjoint(e, adjoints)).collect()
    }
    fn seed<S: Scalar<Prim = P>>(
        dual: &Self::Twin<Real<'_, S>>,
        seed: &Self::Twin<S>,
        adjoints: &mut [S],
    ) {
        assert_eq!(
            dual.len(),
            seed.len(),
            "deltad: the seed has {} elements where the output has {}",
            seed.len(),
            dual.len()
        );
        for (d, s) in dual.iter().zip(seed) {
            E::seed(d, s, adjoints);
        }
    }
    fn leaves<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>, out: &mut Vec<Option<DeltaId>>) {
        for d in dual {
            E::leaves(d, out);
        }
    }
    fn filled<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>, fill: S) -> Self::Twin<S> {
        dual.iter().map(|d| E::filled(d, fill)).collect()
    }
    fn set_leaf<S: Scalar<Prim = P>>(
        twin: &mut Self::Twin<S>,
        index: &mut usize,
        value: S,
    ) -> bool {
        twin.iter_mut().any(|t| E::set_leaf(t, index, value))
    }
    fn gather<S: Scalar<Prim = P>>(&self, reader: &mut GradReader<'_, S>) -> Self::Twin<S> {
        self.iter().map(|e| e.gather(reader)).collect()
    }
    fn from_twin(twin: Self::Twin<P>) -> Self {
        twin.into_iter().map(E::from_twin).collect()
    }
    fn to_twin(&self) -> Self::Twin<P> {
        self.iter().map(E::to_twin).collect()
    }
    fn same_shape(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().zip(other).all(|(a, b)| a.same_shape(b))
    }
    fn from_active_twin(twin: Self::Twin<Active<P>>) -> Self {
        // (Collected in place where the layouts allow: no allocation.)
        twin.into_iter().map(E::from_active_twin).collect()
    }
}

impl<P: Primitive, E: Differentiable<P>, const N: usize> Differentiable<P> for [E; N] {
    type Twin<T> = [E::Twin<T>; N];

    // An array of `E` is laid out as an array of its twins where `E` is:
    // the same element size, the same stride.
    const TWIN_LAYOUT: Option<TwinLayout> = E::TWIN_LAYOUT;

    fn input<'t, S: Scalar<Prim = P>>(&self, tape: &'t Tape<S>) -> Self::Twin<Real<'t, S>> {
        self.each_ref().map(|e| e.input(tape))
    }
    fn build<T>(&self, leaf: &mut impl FnMut(P) -> T) -> Self::Twin<T> {
        self.each_ref().map(|e| e.build(leaf))
    }
    fn map_twin<In, Out>(
        twin: &Self::Twin<In>,
        leaf: &mut impl FnMut(&In) -> Out,
    ) -> Self::Twin<Out> {
        twin.each_ref().map(|e| E::map_twin(e, leaf))
    }
    fn primal<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>) -> Self::Twin<P> {
        dual.each_ref().map(E::primal)
    }
    fn flatten_twin<T: Copy>(twin: &Self::Twin<T>, out: &mut Vec<T>) {
        for t in twin {
            E::flatten_twin(t, out);
        }
    }
    fn constant<'t, S: Scalar<Prim = P> + 't>(&self) -> Self::Twin<Real<'t, S>> {
        self.each_ref().map(|e| e.constant())
    }
    fn value<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>) -> Self::Twin<S> {
        dual.each_ref().map(E::value)
    }
    fn adjoint<S: Scalar<Prim = P>>(
        dual: &Self::Twin<Real<'_, S>>,
        adjoints: &[S],
    ) -> Self::Twin<S> {
        dual.each_ref().map(|e| E::adjoint(e, adjoints))
    }
    fn seed<S: Scalar<Prim = P>>(
        dual: &Self::Twin<Real<'_, S>>,
        seed: &Self::Twin<S>,
        adjoints: &mut [S],
    ) {
        for (d, s) in dual.iter().zip(seed) {
            E::seed(d, s, adjoints);
        }
    }
    fn leaves<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>, out: &mut Vec<Option<DeltaId>>) {
        for d in dual {
            E::leaves(d, out);
        }
    }
    fn filled<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>, fill: S) -> Self::Twin<S> {
        dual.each_ref().map(|d| E::filled(d, fill))
    }
    fn set_leaf<S: Scalar<Prim = P>>(
        twin: &mut Self::Twin<S>,
        index: &mut usize,
        value: S,
    ) -> bool {
        twin.iter_mut().any(|t| E::set_leaf(t, index, value))
    }
    fn gather<S: Scalar<Prim = P>>(&self, reader: &mut GradReader<'_, S>) -> Self::Twin<S> {
        self.each_ref().map(|e| e.gather(reader))
    }
    fn from_twin(twin: Self::Twin<P>) -> Self {
        twin.map(E::from_twin)
    }
    fn to_twin(&self) -> Self::Twin<P> {
        self.each_ref().map(E::to_twin)
    }
    fn same_shape(&self, other: &Self) -> bool {
        self.iter().zip(other).all(|(a, b)| a.same_shape(b))
    }
    fn from_active_twin(twin: Self::Twin<Active<P>>) -> Self {
        twin.map(E::from_active_twin)
    }
}

impl<P: Primitive, E: Differentiable<P>> Differentiable<P> for Option<E> {
    type Twin<T> = Option<E::Twin<T>>;

    fn input<'t, S: Scalar<Prim = P>>(&self, tape: &'t Tape<S>) -> Self::Twin<Real<'t, S>> {
        self.as_ref().map(|e| e.input(tape))
    }
    fn build<T>(&self, leaf: &mut impl FnMut(P) -> T) -> Self::Twin<T> {
        self.as_ref().map(|e| e.build(leaf))
    }
    fn map_twin<In, Out>(
        twin: &Self::Twin<In>,
        leaf: &mut impl FnMut(&In) -> Out,
    ) -> Self::Twin<Out> {
        twin.as_ref().map(|e| E::map_twin(e, leaf))
    }
    fn primal<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>) -> Self::Twin<P> {
        dual.as_ref().map(E::primal)
    }
    fn flatten_twin<T: Copy>(twin: &Self::Twin<T>, out: &mut Vec<T>) {
        if let Some(t) = twin {
            E::flatten_twin(t, out);
        }
    }
    fn constant<'t, S: Scalar<Prim = P> + 't>(&self) -> Self::Twin<Real<'t, S>> {
        self.as_ref().map(|e| e.constant())
    }
    fn value<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>) -> Self::Twin<S> {
        dual.as_ref().map(E::value)
    }
    fn adjoint<S: Scalar<Prim = P>>(
        dual: &Self::Twin<Real<'_, S>>,
        adjoints: &[S],
    ) -> Self::Twin<S> {
        dual.as_ref().map(|e| E::adjoint(e, adjoints))
    }
    fn seed<S: Scalar<Prim = P>>(
        dual: &Self::Twin<Real<'_, S>>,
        seed: &Self::Twin<S>,
        adjoints: &mut [S],
    ) {
        if let (Some(d), Some(s)) = (dual, seed) {
            E::seed(d, s, adjoints);
        }
    }
    fn leaves<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>, out: &mut Vec<Option<DeltaId>>) {
        if let Some(d) = dual {
            E::leaves(d, out);
        }
    }
    fn filled<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>, fill: S) -> Self::Twin<S> {
        dual.as_ref().map(|d| E::filled(d, fill))
    }
    fn set_leaf<S: Scalar<Prim = P>>(
        twin: &mut Self::Twin<S>,
        index: &mut usize,
        value: S,
    ) -> bool {
        twin.as_mut().is_some_and(|t| E::set_leaf(t, index, value))
    }
    fn gather<S: Scalar<Prim = P>>(&self, reader: &mut GradReader<'_, S>) -> Self::Twin<S> {
        self.as_ref().map(|e| e.gather(reader))
    }
    fn from_twin(twin: Self::Twin<P>) -> Self {
        twin.map(E::from_twin)
    }
    fn to_twin(&self) -> Self::Twin<P> {
        self.as_ref().map(E::to_twin)
    }
    fn same_shape(&self, other: &Self) -> bool {
        match (self, other) {
            (Some(a), Some(b)) => a.same_shape(b),
            (a, b) => a.is_none() && b.is_none(),
        }
    }
    fn from_active_twin(twin: Self::Twin<Active<P>>) -> Self {
        twin.map(E::from_active_twin)
    }
}

/// `Result<T, E>`: the `Ok` value's reals; the error is plain data (cloned
/// where a twin is made from a reference).
impl<P: Primitive, T: Differentiable<P>, E: Clone> Differentiable<P> for Result<T, E> {
    type Twin<X> = Result<T::Twin<X>, E>;

    fn input<'t, S: Scalar<Prim = P>>(&self, tape: &'t Tape<S>) -> Self::Twin<Real<'t, S>> {
        self.as_ref().map(|t| t.input(tape)).map_err(E::clone)
    }
    fn build<X>(&self, leaf: &mut impl FnMut(P) -> X) -> Self::Twin<X> {
        self.as_ref().map(|t| t.build(leaf)).map_err(E::clone)
    }
    fn map_twin<In, Out>(
        twin: &Self::Twin<In>,
        leaf: &mut impl FnMut(&In) -> Out,
    ) -> Self::Twin<Out> {
        twin.as_ref()
            .map(|t| T::map_twin(t, leaf))
            .map_err(E::clone)
    }
    fn primal<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>) -> Self::Twin<P> {
        dual.as_ref().map(T::primal).map_err(E::clone)
    }
    fn flatten_twin<X: Copy>(twin: &Self::Twin<X>, out: &mut Vec<X>) {
        if let Ok(t) = twin {
            T::flatten_twin(t, out);
        }
    }
    fn constant<'t, S: Scalar<Prim = P> + 't>(&self) -> Self::Twin<Real<'t, S>> {
        self.as_ref().map(|t| t.constant()).map_err(E::clone)
    }
    fn value<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>) -> Self::Twin<S> {
        dual.as_ref().map(T::value).map_err(E::clone)
    }
    fn adjoint<S: Scalar<Prim = P>>(
        dual: &Self::Twin<Real<'_, S>>,
        adjoints: &[S],
    ) -> Self::Twin<S> {
        dual.as_ref()
            .map(|t| T::adjoint(t, adjoints))
            .map_err(E::clone)
    }
    fn seed<S: Scalar<Prim = P>>(
        dual: &Self::Twin<Real<'_, S>>,
        seed: &Self::Twin<S>,
        adjoints: &mut [S],
    ) {
        if let (Ok(d), Ok(s)) = (dual, seed) {
            T::seed(d, s, adjoints);
        }
    }
    fn leaves<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>, out: &mut Vec<Option<DeltaId>>) {
        if let Ok(d) = dual {
            T::leaves(d, out);
        }
    }
    fn filled<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>, fill: S) -> Self::Twin<S> {
        dual.as_ref().map(|d| T::filled(d, fill)).map_err(E::clone)
    }
    fn set_leaf<S: Scalar<Prim = P>>(
        twin: &mut Self::Twin<S>,
        index: &mut usize,
        value: S,
    ) -> bool {
        twin.as_mut().is_ok_and(|t| T::set_leaf(t, index, value))
    }
    fn gather<S: Scalar<Prim = P>>(&self, reader: &mut GradReader<'_, S>) -> Self::Twin<S> {
        self.as_ref().map(|t| t.gather(reader)).map_err(E::clone)
    }
    fn from_twin(twin: Self::Twin<P>) -> Self {
        twin.map(T::from_twin)
    }
    fn to_twin(&self) -> Self::Twin<P> {
        self.as_ref().map(T::to_twin).map_err(E::clone)
    }
    fn same_shape(&self, other: &Self) -> bool {
        match (self, other) {
            (Ok(a), Ok(b)) => a.same_shape(b),
            (a, b) => a.is_err() && b.is_err(),
        }
    }
    fn from_active_twin(twin: Self::Twin<Active<P>>) -> Self {
        twin.map(T::from_active_twin)
    }
}

macro_rules! tuple {
    ($(($($t:ident $i:tt),+))*) => {$(
        impl<P: Primitive, $($t: Differentiable<P>),+> Differentiable<P> for ($($t,)+) {
            type Twin<T> = ($($t::Twin<T>,)+);

            fn input<'t, S: Scalar<Prim = P>>(&self, tape: &'t Tape<S>) -> Self::Twin<Real<'t, S>> {
                ($(self.$i.input(tape),)+)
            }
            fn build<T>(&self, leaf: &mut impl FnMut(P) -> T) -> Self::Twin<T> {
                ($(self.$i.build(leaf),)+)
            }
            fn map_twin<In, Out>(twin: &Self::Twin<In>, leaf: &mut impl FnMut(&In) -> Out) -> Self::Twin<Out> {
                ($($t::map_twin(&twin.$i, leaf),)+)
            }
            fn primal<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>) -> Self::Twin<P> {
                ($($t::primal(&dual.$i),)+)
            }
            fn flatten_twin<T: Copy>(twin: &Self::Twin<T>, out: &mut Vec<T>) {
                $($t::flatten_twin(&twin.$i, out);)+
            }
            fn constant<'t, S: Scalar<Prim = P> + 't>(&self) -> Self::Twin<Real<'t, S>> {
                ($(self.$i.constant(),)+)
            }
            fn value<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>) -> Self::Twin<S> {
                ($($t::value(&dual.$i),)+)
            }
            fn adjoint<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>, adjoints: &[S]) -> Self::Twin<S> {
                ($($t::adjoint(&dual.$i, adjoints),)+)
            }
            fn seed<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>, seed: &Self::Twin<S>, adjoints: &mut [S]) {
                $($t::seed(&dual.$i, &seed.$i, adjoints);)+
            }
            fn leaves<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>, out: &mut Vec<Option<DeltaId>>) {
                $($t::leaves(&dual.$i, out);)+
            }
            fn filled<S: Scalar<Prim = P>>(dual: &Self::Twin<Real<'_, S>>, fill: S) -> Self::Twin<S> {
                ($($t::filled(&dual.$i, fill),)+)
            }
            fn set_leaf<S: Scalar<Prim = P>>(twin: &mut Self::Twin<S>, index: &mut usize, value: S) -> bool {
                $(if $t::set_leaf(&mut twin.$i, index, value) { return true; })+
                false
            }
            fn gather<S: Scalar<Prim = P>>(&self, reader: &mut GradReader<'_, S>) -> Self::Twin<S> {
                ($(self.$i.gather(reader),)+)
            }
            fn from_twin(twin: Self::Twin<P>) -> Self {
                ($($t::from_twin(twin.$i),)+)
            }
            fn to_twin(&self) -> Self::Twin<P> {
                ($(self.$i.to_twin(),)+)
            }
            fn same_shape(&self, other: &Self) -> bool {
                true $(&& self.$i.same_shape(&other.$i))+
            }
            fn from_active_twin(twin: Self::Twin<Active<P>>) -> Self {
                ($($t::from_active_twin(twin.$i),)+)
            }
        }
    )*};
}
tuple! {
    (A 0)
    (A 0, B 1)
    (A 0, B 1, C 2)
    (A 0, B 1, C 2, D 3)
    (A 0, B 1, C 2, D 3, E 4)
    (A 0, B 1, C 2, D 3, E 4, F 5)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7)
}

/// The dual twin of a value of type `P`-structured type `U`, as the
/// recording pass holds it.
pub type DualOf<'t, S, P, U> = <U as Differentiable<P>>::Twin<Real<'t, S>>;

/// The element type of a `Grad` struct: `f64`/`f32` for the gradients users
/// ask for, where a parameter's gradient field has the parameter's own type;
/// a dual value when derivatives are nested, where it is the dual twin.
pub trait GradElement: Sized {
    /// The machine float.
    type Prim: Primitive;
    /// The gradient field type for a parameter of type `U`.
    type Of<U: Differentiable<Self::Prim>>;
    /// Converts a twin of `Self` to the field type.
    fn field<U: Differentiable<Self::Prim>>(twin: U::Twin<Self>) -> Self::Of<U>;
}

impl GradElement for f64 {
    type Prim = f64;
    type Of<U: Differentiable<f64>> = U;
    fn field<U: Differentiable<f64>>(twin: U::Twin<f64>) -> U {
        U::from_twin(twin)
    }
}

impl GradElement for f32 {
    type Prim = f32;
    type Of<U: Differentiable<f32>> = U;
    fn field<U: Differentiable<f32>>(twin: U::Twin<f32>) -> U {
        U::from_twin(twin)
    }
}

impl<'a, S: Scalar> GradElement for Real<'a, S> {
    type Prim = S::Prim;
    type Of<U: Differentiable<S::Prim>> = U::Twin<Real<'a, S>>;
    fn field<U: Differentiable<S::Prim>>(twin: U::Twin<Real<'a, S>>) -> U::Twin<Real<'a, S>> {
        twin
    }
}

/// Converts an argument of a call into the dual twin a structured parameter
/// of the callee expects (`U` is the parameter's declared type): dual values
/// pass through, plain values become constants. Implemented leaf by leaf
/// (machine floats, dual values, discrete data, user types through their
/// derive) and through containers, so any mix converts.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed where the differentiated callee expects a `{U}`",
    label = "expected a `{U}` or its differentiated counterpart",
    note = "if the callee's type derives `Differentiable`, pass a value of that type; plain data is passed as constants"
)]
pub trait IntoDual<'t, S, P: Primitive, U: Differentiable<P>> {
    /// The dual twin.
    fn into_dual(self) -> U::Twin<Real<'t, S>>;
}

macro_rules! float_into_dual {
    ($($p:ident)*) => {$(
        impl<'t, S: Scalar<Prim = $p>> IntoDual<'t, S, $p, $p> for $p {
            #[inline(always)]
            fn into_dual(self) -> Real<'t, S> {
                Real::from_prim(self)
            }
        }
        impl<'t, S: Scalar<Prim = $p>> IntoDual<'t, S, $p, $p> for Real<'t, S> {
            #[inline(always)]
            fn into_dual(self) -> Real<'t, S> {
                self
            }
        }
    )*};
}
float_into_dual!(f64 f32);

macro_rules! discrete_into_dual {
    ($($t:ty),*) => {$(
        impl<'t, S: Scalar, P: Primitive> IntoDual<'t, S, P, $t> for $t {
            #[inline(always)]
            fn into_dual(self) -> $t {
                self
            }
        }
    )*};
}
discrete_into_dual!(
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    bool,
    char,
    String,
    ()
);

impl<'t, S, P: Primitive, U: Differentiable<P>, D: IntoDual<'t, S, P, U> + Clone>
    IntoDual<'t, S, P, U> for &D
{
    #[inline]
    fn into_dual(self) -> U::Twin<Real<'t, S>> {
        self.clone().into_dual()
    }
}

impl<'t, S, P: Primitive, E: Differentiable<P>, D: IntoDual<'t, S, P, E>> IntoDual<'t, S, P, Vec<E>>
    for Vec<D>
{
    fn into_dual(self) -> Vec<E::Twin<Real<'t, S>>> {
        self.into_iter().map(IntoDual::into_dual).collect()
    }
}

impl<'t, S, P: Primitive, E: Differentiable<P>, D: IntoDual<'t, S, P, E> + Clone>
    IntoDual<'t, S, P, Vec<E>> for &[D]
{
    fn into_dual(self) -> Vec<E::Twin<Real<'t, S>>> {
        self.iter().map(|d| d.clone().into_dual()).collect()
    }
}

impl<'t, S, P: Primitive, E: Differentiable<P>, D: IntoDual<'t, S, P, E>, const N: usize>
    IntoDual<'t, S, P, [E; N]> for [D; N]
{
    fn into_dual(self) -> [E::Twin<Real<'t, S>>; N] {
        self.map(IntoDual::into_dual)
    }
}

impl<'t, S, P: Primitive, E: Differentiable<P>, D: IntoDual<'t, S, P, E>>
    IntoDual<'t, S, P, Option<E>> for Option<D>
{
    fn into_dual(self) -> Option<E::Twin<Real<'t, S>>> {
        self.map(IntoDual::into_dual)
    }
}

impl<'t, S, P: Primitive, T: Differentiable<P>, D: IntoDual<'t, S, P, T>, E: Clone>
    IntoDual<'t, S, P, Result<T, E>> for Result<D, E>
{
    fn into_dual(self) -> Result<T::Twin<Real<'t, S>>, E> {
        self.map(IntoDual::into_dual)
    }
}

macro_rules! tuple_into_dual {
    ($(($($u:ident $d:ident $i:tt),+))*) => {$(
        impl<'t, S, P: Primitive, $($u: Differentiable<P>, $d: IntoDual<'t, S, P, $u>),+>
            IntoDual<'t, S, P, ($($u,)+)> for ($($d,)+)
        {
            fn into_dual(self) -> ($($u::Twin<Real<'t, S>>,)+) {
                ($(self.$i.into_dual(),)+)
            }
        }
    )*};
}
tuple_into_dual! {
    (A DA 0)
    (A DA 0, B DB 1)
    (A DA 0, B DB 1, C DC 2)
    (A DA 0, B DB 1, C DC 2, D DD 3)
    (A DA 0, B DB 1, C DC 2, D DD 3, E DE 4)
    (A DA 0, B DB 1, C DC 2, D DD 3, E DE 4, F DF 5)
    (A DA 0, B DB 1, C DC 2, D DD 3, E DE 4, F DF 5, G DG 6)
    (A DA 0, B DB 1, C DC 2, D DD 3, E DE 4, F DF 5, G DG 6, H DH 7)
}

/// Converts `value` into the dual twin of a `U` (see [`IntoDual`]).
#[inline(always)]
pub fn into_dual<'t, S, P: Primitive, U: Differentiable<P>, D: IntoDual<'t, S, P, U>>(
    value: D,
) -> U::Twin<Real<'t, S>> {
    value.into_dual()
}
