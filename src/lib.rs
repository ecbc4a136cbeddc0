//! Compile-time reverse-mode automatic differentiation for Rust.
//!
//! Put `#[differentiate]` on an ordinary numeric function. The function stays
//! exactly as written; next to it, the macro generates a module of the same
//! name with its gradient:
//!
//! ```
//! use deltad::differentiate;
//!
//! #[differentiate]
//! fn loss(w: &[f64], b: f64, #[no_grad] x: &[f64], n: usize) -> f64 {
//!     let mut s = 0.0;
//!     for i in 0..n {
//!         let z = w[i] * x[i] + b;
//!         s += if z > 0.0 { z * z } else { z.exp() - 1.0 };
//!     }
//!     s / n as f64
//! }
//!
//! let (w, b, x) = ([0.5, -1.0], 0.1, [1.0, 2.0]);
//! let (value, g) = loss::value_and_grad(&w, b, &x, 2);
//! assert_eq!(value, loss(&w, b, &x, 2));
//! // g.w: Vec<f64> with one entry per element of w; g.b: f64.
//! assert_eq!(g.w.len(), 2);
//! assert!((g.w[0] - 0.6).abs() < 1e-12); // d/dw0 of (0.6)² / 2
//! let g = loss::grad(&w, b, &x, 2);
//! # let _ = g;
//! ```
//!
//! # What is generated
//!
//! For `fn f(...) -> T`, a module `f` (with the function's visibility) holds:
//!
//! * `grad(<the same arguments>) -> Grad` and `value_and_grad(<the same
//!   arguments>) -> (f64, Grad)`, for real-valued functions; `grad_into(<the
//!   same arguments>, &mut grad) -> f64` adds the gradient to a `Grad` the
//!   caller keeps (sums over batches; no allocation);
//! * `vjp(<the same arguments>, seed) -> (T, Grad)`: the value and the
//!   gradient of ⟨seed, f(..)⟩, `seed` shaped like the output;
//! * `jacobian(<the same arguments>) -> (T, Vec<Grad>)`: one `Grad` per real
//!   of the output, in the output's leaf order (elements by index, fields and
//!   tuple components in declaration order, depth first), from one recording
//!   and one reverse sweep per row;
//! * `jvp(<the same arguments>, &tangent) -> (T, T)`: forward mode, the
//!   derivative of the results along `tangent` (a `Grad`), on dual numbers;
//! * `hvp(.., &v) -> Grad`, `hessian(..) -> Vec<Grad>`,
//!   `hessian_diagonal(..) -> Grad`, `laplacian(..) -> f64`: second order by
//!   forward-over-reverse, for real-valued functions;
//! * `check_derivatives(<the same arguments>) -> DerivativeCheck`: the
//!   Jacobian against central finite differences of `f` itself;
//! * `struct Grad`: one public field per *differentiated* parameter, named
//!   after it, in parameter order, shaped like the parameter (`Default`:
//!   zeros and empty `Vec`s).
//!
//! A parameter is differentiated unless it is marked `#[no_grad]` (constant
//! data: no field, and it never touches the tape) or its type holds no reals
//! (integers, `bool`, strings and standard containers of them are passed
//! through). Differentiated types: `f64`/`f32`; slices, `Vec`s and arrays of
//! them (field `Vec<f64>` for slices and `Vec`s, `[f64; N]` for arrays);
//! nested collections, tuples and `Option`s of differentiated types (field of
//! the same type); types with `#[derive(Differentiable)]` (field of the same
//! type); each by value or shared reference. A `&mut` parameter holding reals
//! is an input (its contents on entry; the field is their derivative) and a
//! result (its contents on return). A parameter `f: F` with
//! `F: Fn(f64) -> f64` is called with dual values; such a function is
//! differentiated when other differentiated functions call it with closures,
//! and has no `grad` of its own. A function is differentiated in one
//! precision.
//!
//! ```
//! use deltad::{differentiate, Differentiable};
//!
//! #[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
//! struct Vec2 {
//!     x: f64,
//!     y: f64,
//! }
//!
//! #[differentiate]
//! fn rotate(v: &Vec2, angle: f64) -> Vec2 {
//!     let (s, c) = angle.sin_cos();
//!     Vec2 { x: c * v.x - s * v.y, y: s * v.x + c * v.y }
//! }
//!
//! # fn main() {
//! let v = Vec2 { x: 1.0, y: 0.0 };
//! let (rotated, rows) = rotate::jacobian(&v, 0.0);
//! assert_eq!(rotated, v);
//! assert_eq!(rows[1].angle, 1.0); // ∂y/∂angle = x at angle 0
//! let (_, g) = rotate::vjp(&v, 0.0, &Vec2 { x: 0.0, y: 1.0 });
//! assert_eq!(g.v, Vec2 { x: 0.0, y: 1.0 });
//! rotate::check_derivatives(&v, 0.3).assert_within(1e-6);
//! # }
//! ```
//!
//! Inside differentiated code, `g::grad(..)`, `g::value_and_grad(..)`,
//! `g::vjp(..)` and `g::jvp(..)` are differentiated through (nested
//! derivatives, forward or reverse inside and outside); each nesting level is
//! its own type, so derivatives of different levels cannot be confused.
//!
//! `#[checkpoint]` on a `for` loop with a straight-line body keeps only √n
//! checkpoints of its state and re-runs segments during the reverse sweep
//! (memory O(√n), each iteration computed twice); `#[checkpoint] let y =
//! f(..);` keeps `f`'s arguments and re-runs it during the sweep.
//! `#[preaccumulate]` on a `for` loop whose iterations pass values on only
//! through sums (`total += ..`, a loss over data points) differentiates each
//! iteration as it ends and forgets it: the tape holds one iteration.
//! `f::tape_stats(..)` reports what one recording keeps; `f::tape_graph(..)`
//! returns the recorded bindings themselves as a [`TapeGraph`] (a listing when
//! printed, Graphviz DOT by [`TapeGraph::to_dot`]).
//!
//! [`sum()`], [`dot()`] and [`log_sum_exp()`] are recorded as one binding with a
//! term per element.
//!
//! `#[differentiate]` on an `impl` block differentiates its methods: method
//! `m` of `Type` gets the module `<type in snake case>_m`, whose functions
//! take the receiver first (`Grad` field `self_`; constant with
//! `#[no_grad] &self`). `#[differentiate(custom = df)]` makes a function a
//! primitive with user-given partial derivatives: `df` takes the same
//! arguments and returns `Grad` (real output) or one `Grad` per output real.
//!
//! # Supported code
//!
//! Locals with and without type annotations, shadowing, `let mut` and
//! compound assignment, blocks, `if`/`else` and `match` (also as
//! expressions, also on enums and `Option`s), loops of every kind with
//! `break` (also with values and labels) and `continue`, early `return`;
//! local buffers (`vec![0.0; n]`, `Vec::with_capacity` and `push`, indexing
//! reads and writes, `.len()`); tuples, struct literals and patterns of
//! derived types; closures, also capturing differentiated values, and
//! iterator chains (`map zip enumerate filter sum product fold max_by min_by
//! collect`); the `f64`/`f32` methods `sin cos tan asin acos atan atan2 sinh
//! cosh tanh asinh acosh atanh exp exp2 exp_m1 ln log log2 log10 ln_1p sqrt
//! cbrt powi powf hypot recip mul_add abs min max clamp signum floor ceil
//! round round_ties_even trunc fract copysign rem_euclid div_euclid
//! to_degrees to_radians sin_cos`, as methods and as paths (`f64::sin(x)`,
//! also passed as functions); `%`; casts (`i as f64`, `x as usize` uses the
//! value); `std::f64::consts`; and calls to other `#[differentiate]`
//! functions and methods, recursion included, with any mix of differentiated
//! and constant arguments.
//!
//! Functions (and methods) generic over their number type, as num-traits
//! code is written (`fn f<T: Float + FromPrimitive>(x: &[T]) -> T`), stay
//! generic; their derivatives are made of their copy for `f64`. Generic
//! code the macro cannot see (another crate's) is differentiated through
//! deltad's dual values, which implement num-traits' `Float` family (cargo
//! feature `num-traits`, on by default): from a differentiated function with
//! [`generic!`], or from anywhere through a closure with [`gradient`],
//! [`value_and_gradient`], [`jvp`], [`hvp`] and [`hessian`]. With the
//! `nalgebra` feature the forward dual values are nalgebra numbers too
//! (simba's `RealField`): code generic over `RealField` is differentiated in
//! forward mode, with [`generic_fwd!`], [`gradient_fwd`], [`hessian_fwd`] and
//! [`jvp`].
//!
//! Anything else is a compile error at the construct, saying what is not
//! supported and what to write instead: `unsafe`, `async`, trait objects and
//! maps holding reals, generic type parameters other than `F: Fn(..)` and a
//! number type, returning closures, `&mut self` methods, calls to functions
//! that are not `#[differentiate]` with a differentiated argument (but see
//! [`generic!`]), unknown macros.
//!
//! # How it works
//!
//! The generated code runs a copy of the function in which every value that
//! depends on a differentiated input is a [`Real`]: its value and a reference
//! to a *Delta binding* on a [`Tape`] (Krawiec et al., *Provably correct,
//! asymptotically efficient, higher-order reverse-mode automatic
//! differentiation*, POPL 2022). Each binding records the local partial
//! derivatives of one computation; one reverse sweep over the tape (the
//! paper's array-based `eval`) then gives the gradient. Time and memory are
//! linear in the running time of the function. The macro *fuses* straight-line
//! real computations at compile time: one binding per expression or run of
//! statements, one per loop sum. Constants, `#[no_grad]` data and integer code
//! never touch the tape. [`how_it_works`] walks through one function step by
//! step, with the paper's section for each part.
//!
//! # Limits
//!
//! Code the macro cannot differentiate is a compile error at the construct,
//! never a wrong derivative. For example, a call to a function that is not
//! `#[differentiate]` with a differentiated argument:
//!
//! ```compile_fail
//! fn helper(x: f64) -> f64 {
//!     x * 2.0
//! }
//!
//! #[deltad::differentiate]
//! fn f(x: f64) -> f64 {
//!     helper(x) // error: cannot find module `helper`; put #[differentiate] on it
//! }
//! # fn main() {}
//! ```
//!
//! generic numeric type parameters (write the function for `f64` or `f32`):
//!
//! ```compile_fail
//! #[deltad::differentiate]
//! fn square<T: std::ops::Mul<Output = T> + Copy>(x: T) -> T {
//!     x * x
//! }
//! # fn main() {}
//! ```
//!
//! `unsafe` code, `async` functions, methods taking `&mut self`:
//!
//! ```compile_fail
//! #[deltad::differentiate]
//! fn first(x: &[f64]) -> f64 {
//!     unsafe { *x.get_unchecked(0) }
//! }
//! # fn main() {}
//! ```
//!
//! reals held in maps, boxes or trait objects (mark such parameters
//! `#[no_grad]` when they only hold constant data):
//!
//! ```compile_fail
//! use std::collections::HashMap;
//!
//! #[deltad::differentiate]
//! fn total(prices: &HashMap<String, f64>) -> f64 {
//!     prices.values().sum()
//! }
//! # fn main() {}
//! ```
//!
//! and changing the precision of a differentiated value:
//!
//! ```compile_fail
//! #[deltad::differentiate]
//! fn narrow(x: f64) -> f64 {
//!     let y = x as f32;
//!     (y * y) as f64
//! }
//! # fn main() {}
//! ```
//!
//! The same parameter marked `#[no_grad]` compiles, and has no `Grad` field:
//!
//! ```
//! use std::collections::HashMap;
//!
//! #[deltad::differentiate]
//! fn weighted(w: f64, #[no_grad] prices: &HashMap<String, f64>) -> f64 {
//!     let mut total = 0.0;
//!     for p in prices.values() {
//!         total += w * p;
//!     }
//!     total
//! }
//!
//! # fn main() {
//! let prices = HashMap::from([("a".to_string(), 2.0), ("b".to_string(), 3.0)]);
//! assert_eq!(weighted::grad(1.5, &prices).w, 5.0);
//! # }
//! ```
//!
//! # Conventions at non-differentiable points
//!
//! * `abs` has derivative 0 at 0.
//! * `max`/`min` pass the derivative of the operand they return; on a tie,
//!   the receiver's (`x.max(y)` with `x == y` is `x`); a NaN operand is
//!   ignored, as by `f64::max`.
//! * `clamp(lo, hi)` passes the derivative of `x` when `lo <= x <= hi`, else
//!   of the bound returned.
//! * `floor`, `ceil`, `round`, `round_ties_even`, `trunc`, `signum` and
//!   `div_euclid` have derivative 0.
//! * `sqrt` and `cbrt` at 0 have infinite derivative, `hypot` and `atan2` at
//!   (0, 0) have derivative 0, and `powf`'s derivative in the exponent is 0 where the
//!   value is 0.
//! * A value that does not reach the output contributes exactly 0, even where
//!   its own derivative is infinite or NaN.
//!
//! # Seeing the generated code
//!
//! Set `DELTAD_EXPAND` to a function name (or a comma-separated list, or `*`)
//! while compiling, and the macro prints that function's expansion, formatted,
//! to the compiler's standard error:
//!
//! ```text
//! DELTAD_EXPAND=loss cargo build
//! ```

#![warn(missing_docs)]

#[doc(inline)]
pub use deltad_macros::{differentiate, Differentiable};
#[cfg(feature = "num-traits")]
#[doc(inline)]
pub use deltad_runtime::num_traits;
pub use deltad_runtime::{dot, log_sum_exp, release_pooled_tapes, sum};
pub use deltad_runtime::{
    gradient, gradient_fwd, hessian, hessian_fwd, hvp, jvp, value_and_gradient,
    value_and_gradient_fwd,
};
pub use deltad_runtime::{
    DeltaId, DerivativeCheck, Differentiable, Dual, DualOf, DualVec, GradElement, IntoDual,
    IntoReal, Mismatch, Primitive, Real, Scalar, Tape, TapeStats,
};
pub use deltad_runtime::{GraphEdge, GraphNode, GraphTerm, InputLabel, NodeKind, TapeGraph};
pub use deltad_runtime::{SparseMatrix, SparsityPattern};

/// A call of a function generic over its number type (num-traits' `Float`,
/// ...) that `#[differentiate]` cannot see into, typically another crate's.
///
/// Inside a differentiated function, `deltad::generic!(f(x, 2.0))` runs `f`
/// on deltad's dual values (which implement num-traits' `Float` family), so
/// that its own arithmetic records the derivative: every real argument
/// becomes the same dual type (constants too), slices of differentiated
/// values and integers pass as they are, and the result is a real. The
/// function then takes the tape (see the README's *Generic code*).
/// Elsewhere, the macro is the call itself.
///
/// ```
/// use num_traits::{Float, FromPrimitive};
///
/// // Another crate's function, generic over its number type.
/// fn rosenbrock<T: Float + FromPrimitive>(x: &[T], a: T) -> T {
///     let hundred = T::from_f64(100.0).unwrap();
///     (0..x.len() - 1)
///         .map(|i| (a - x[i]).powi(2) + hundred * (x[i + 1] - x[i] * x[i]).powi(2))
///         .fold(T::zero(), |s, t| s + t)
/// }
///
/// #[deltad::differentiate]
/// fn loss(x: &[f64], scale: f64) -> f64 {
///     scale * deltad::generic!(rosenbrock(x, 1.0))
/// }
///
/// fn main() {
///     let g = loss::grad(&[0.5, -0.3], 2.0);
///     let expected = 2.0 * (-400.0 * 0.5 * (-0.3 - 0.25) - 2.0 * (1.0 - 0.5));
///     assert!((g.x[0] - expected).abs() < 1e-12);
///     assert_eq!(loss(&[1.0, 1.0], 2.0), 0.0);
/// }
/// ```
#[macro_export]
macro_rules! generic {
    ($($call:tt)*) => {
        $($call)*
    };
}

/// A call of a function generic over its number type, differentiated in
/// forward mode: for code that needs a `'static` number type, such as
/// nalgebra's `RealField`, which the tape's values are not.
///
/// Inside a differentiated function, `deltad::generic_fwd!(f(x, 2.0))`
/// takes the same arguments as [`generic!`], but runs `f` on [`DualVec`]s
/// once per chunk of 8 of its differentiated input reals, each of them
/// seeded in its own lane, and records the result as one binding whose
/// terms are the partials found (one pass for up to 8 inputs: cheap for
/// small routines, a pass per 8 inputs for large ones, where `generic!` is
/// the better choice). Elsewhere, the macro is the call itself.
///
/// ```
/// use num_traits::Float;
///
/// // Generic code, for example over nalgebra's `RealField` (which the
/// // forward dual values implement with the `nalgebra` feature).
/// fn softplus_sum<T: Float>(x: &[T], scale: T) -> T {
///     x.iter().fold(T::zero(), |sum, &v| sum + (T::one() + (scale * v).exp()).ln())
/// }
///
/// #[deltad::differentiate]
/// fn loss(x: &[f64], #[no_grad] scale: f64) -> f64 {
///     deltad::generic_fwd!(softplus_sum(x, scale)) * x[0]
/// }
///
/// fn main() {
///     let (x, scale) = ([0.5, -1.0], 2.0);
///     let g = loss::grad(&x, scale);
///     let sigmoid = |v: f64| 1.0 / (1.0 + (-scale * v).exp());
///     let expected = softplus_sum(&x, scale) + x[0] * scale * sigmoid(x[0]);
///     assert!((g.x[0] - expected).abs() < 1e-12);
///     assert!((g.x[1] - x[0] * scale * sigmoid(x[1])).abs() < 1e-12);
/// }
/// ```
#[macro_export]
macro_rules! generic_fwd {
    ($($call:tt)*) => {
        $($call)*
    };
}

/// Items used by the code `#[differentiate]` generates. Not part of the API.
#[doc(hidden)]
pub use deltad_runtime::__private;

#[cfg(feature = "nalgebra")]
#[doc(inline)]
pub use deltad_runtime::nalgebra;
#[cfg(feature = "ndarray")]
#[doc(inline)]
pub use deltad_runtime::ndarray;

#[cfg(feature = "argmin")]
pub mod argmin_support;

#[doc = include_str!("../docs/how-it-works.md")]
pub mod how_it_works {}
