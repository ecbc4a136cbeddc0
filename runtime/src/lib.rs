//! Runtime of [deltad](https://docs.rs/deltad): the tape of Delta bindings,
//! the dual value that records onto it, the derivative rules of the `f64` and
//! `f32` methods, and the reverse sweep.
//!
//! Users depend on the `deltad` crate, which re-exports what is public here;
//! the items under `__private` exist for the code `#[differentiate]` generates.

#![warn(missing_docs)]
// Every `unsafe` block states why it is sound (`// SAFETY: ...`), every
// `unsafe fn` its contract (`# Safety`).
#![deny(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

mod accumulate;
mod check;
mod checkpoint;
mod checkpointed_call;
mod closures;
mod compiled;
mod compiled_call;
mod convert;
mod custom;
mod differentiable;
mod dual;
mod dual_vec;
mod forward;
#[cfg(feature = "num-traits")]
mod generic;
mod generic_forward;
mod graph;
#[cfg(any(feature = "nalgebra", feature = "ndarray"))]
mod linalg;
mod loops;
mod math;
mod ops;
mod pool;
mod preaccumulate;
mod real;
#[cfg(feature = "nalgebra")]
mod real_field;
mod scalar;
mod sparsity;
mod tape;
mod vector;
mod wrapper;

pub use check::{DerivativeCheck, Mismatch};
pub use closures::{
    gradient, gradient_fwd, hessian, hessian_fwd, hvp, jvp, value_and_gradient,
    value_and_gradient_fwd,
};
pub use compiled::StackStats;
pub use differentiable::{Differentiable, DualOf, GradElement, IntoDual};
pub use dual::Dual;
pub use dual_vec::DualVec;
pub use graph::{GraphEdge, GraphNode, GraphTerm, InputLabel, NodeKind, TapeGraph};
pub use math::IntoReal;
pub use pool::release_pooled_tapes;
pub use real::Real;
pub use scalar::{Primitive, Scalar};
pub use sparsity::{SparseMatrix, SparsityPattern, Tracer};
pub use tape::{DeltaId, Tape, TapeStats};
pub use vector::{dot, log_sum_exp, sum};

/// num-traits itself (cargo feature `num-traits`, on by default), the version
/// whose `Float` family [`Dual`] and [`Real`] implement.
#[cfg(feature = "num-traits")]
pub use num_traits;

/// nalgebra's `DVector`, `DMatrix` and `SMatrix` (`SVector`, `Vector3`, ...)
/// as differentiated values (cargo feature `nalgebra`, nalgebra 0.35).
///
/// A parameter of type `DVector<f64>`, `DMatrix<f64>` or `SMatrix<f64, R, C>`
/// (by value or by reference) is differentiated; its `Grad` field has the
/// same type. Functions may also return these types (`vjp`, `jacobian`,
/// `jvp`). In the recording pass the value is a [`MatrixTwin`] of dual
/// values, which supports the common operations with nalgebra's own syntax:
///
/// | operation | recorded as |
/// |---|---|
/// | `a.dot(&b)`, `a.norm()`, `a.norm_squared()` (`magnitude`, `magnitude_squared`), `a.sum()`, `a.mean()` | one binding with a term per element |
/// | `&m * &v`, `&a * &b` (matrix-vector and matrix-matrix products), `a.tr_mul(&b)` | one binding per element of the result |
/// | `a + b`, `a - b`, `-a`, `a * k`, `k * a`, `a / k`, `a.scale(k)`, `a.component_mul(&b)`, `a.component_div(&b)`, `a.cross(&b)`, `a.normalize()`, `+=`, `-=`, `*=` | one binding per element |
/// | `v[i]`, `m[(i, j)]`, `a.iter()`, `a.map(f)`, `a.len()`, `a.nrows()`, `a.ncols()`, `a.shape()`, `a.transpose()`, `a.clone()` | nothing (the elements are dual values) |
///
/// Operands may mix dual twins and plain nalgebra values (constants), by
/// value or by reference; both sides of a product or sum must have the same
/// dimension types (`Dyn` with `Dyn`, `Const<N>` with `Const<N>`).
/// The twins of static matrices are `Copy`, as nalgebra's are. Other
/// methods are compile errors that name the supported ones. Constructing
/// nalgebra values from dual values inside a differentiated function
/// (`DVector::from_vec(vec![x, y])`) is a compile error: nalgebra's element
/// types must be `'static`. Views (`DVectorView`) work as constant operands;
/// a differentiated view parameter is a compile error.
///
/// This module also re-exports nalgebra itself, so `deltad::nalgebra::DVector`
/// is the type deltad supports, whatever nalgebra version a crate uses
/// elsewhere.
#[cfg(feature = "nalgebra")]
pub mod nalgebra {
    #[doc(inline)]
    pub use crate::linalg::nalgebra::*;
    #[doc(no_inline)]
    pub use ::nalgebra::*;
}

/// ndarray's `Array1` and `Array2` as differentiated values (cargo feature
/// `ndarray`, ndarray 0.17).
///
/// A parameter of type `Array1<f64>` or `Array2<f64>` (by value or by
/// reference) is differentiated; its `Grad` field has the same type.
/// Functions may also return these types (`vjp`, `jacobian`, `jvp`). In the
/// recording pass the value is an [`Array1Twin`] / [`Array2Twin`] of dual
/// values, which supports the common operations with ndarray's own syntax:
///
/// | operation | recorded as |
/// |---|---|
/// | `a.dot(&b)` (vector·vector, matrix·vector, vector·matrix, matrix·matrix), `a.sum()`, `a.mean()` | one binding per real of the result, with a term per element involved |
/// | `a + b`, `a - b`, `a * b`, `a / b` (element-wise, same shape), the same with a scalar on either side, `-a`, `+=`, `-=`, `*=` | one binding per element |
/// | `a[i]`, `m[[i, j]]`, `m[(i, j)]`, `a.iter()`, `a.map(f)`, `a.len()`, `m.nrows()`, `m.ncols()`, `m.dim()`, `m.t()`, `a.clone()` | nothing (the elements are dual values) |
///
/// Operands may mix dual twins and plain ndarray arrays or views (constants;
/// `x.dot(&w)` with a constant `x` works too), by value or by reference.
/// Not supported: broadcasting (operands of an element-wise operation must
/// have the same shape), arrays of other dimensions, `ArrayView`
/// *parameters* that are differentiated (pass `&Array1<f64>`; views are fine
/// as constant data), and building arrays from dual values inside a
/// differentiated function (`Array1::from_vec(vec![x, y])`).
///
/// This module also re-exports ndarray itself (`deltad::ndarray::Array1`).
#[cfg(feature = "ndarray")]
pub mod ndarray {
    #[doc(inline)]
    pub use crate::linalg::ndarray::*;
    #[doc(no_inline)]
    pub use ::ndarray::*;
}

/// Items used by generated code only. Not part of the API: no semver promise.
#[doc(hidden)]
pub mod __private {
    pub use crate::accumulate::Accumulator;
    pub use crate::check::{
        flatten_value, leaf_of, perturb, real_count, unflatten_value, DerivativeCheck,
    };
    pub use crate::checkpoint::{CheckpointRecorder, Step};
    pub use crate::checkpointed_call::{checkpointed_call, CallArgs, OwnedConstant, Rerun};
    pub use crate::compiled::{
        add_twin_gradient, adjoint_twins_of, leaf_constant, read_twin_adjoint,
        seed_recorded_and_sweep, twin_duals, twin_gradient, twin_gradient_owned, twin_lane_seed,
        twin_leaf_count, twin_leaves, twin_of_outputs, twin_of_recorded, twin_of_value,
        twin_on_tape, twin_unit, twin_value, twin_values, twin_zeros, twin_zeros_like,
        twins_gradient, twins_of, twins_values, twins_zeros, zeros_like, Active, CopyActive,
        CopyPlain, FromConstant, LeafCopy, Owned, PlainRead, ReadActive, ReadPlain, RealLeaf,
        SetLeaf, SinkAt, SinkRef, StructArg, StructParam, StructValueParam, StructsParam, TwinOf,
        TwinSink, TwinsSink,
    };
    pub use crate::compiled::{
        buffer_lanes_into, buffer_part, checkpoint_segment, copy_into, done_with, lane_seed,
        lift_buffer, lifted, loop_span, loop_window, machine_value, opaque_values, put_at,
        recorded_values, repeated, result_ids, seed_buffer_and_sweep, seed_of,
        seed_opaque_and_sweep, split_dual, unit_seed, with_empty_stack, with_stack, zeros,
        ActiveArg, ArrayParam, AsBuffer, AsTwin, Bits, ConstantArg, Cotangent, Discard, HeldAs,
        HeldLanes, HeldResult, HeldSink, HeldValue, KeptRange, KeptWhole, Lanes, LiftBuffer,
        NoRecord, OpaqueArg, OpaqueParam, PassActive, PassConstant, PassOwned, PlainParam,
        RealParam, Reborrow, Record, Reserved, ResultBuffer, ResultUse, Reusing, ScalarSink,
        SliceParam, SliceSink, Stack, Unvalued, Valued,
    };
    pub use crate::compiled_call::{
        any_active, nested_forward, nested_reverse, CompiledCall, NESTED_FORWARD_MAX,
        NESTED_PREACCUMULATE_MAX,
    };
    pub use crate::convert::{
        arg, cast_real, constant, generic_arg, grad_field, lift, primal, Arg, CastReal, Constant,
        GenericArg, GenericPass, GradField, Lift, Primal,
    };
    pub use crate::custom::{compiled_output, custom_output, input_leaves};
    pub use crate::differentiable::{
        into_dual, Differentiable, DualOf, GradElement, IntoDual, TwinLayout,
    };
    pub use crate::dual::Dual;
    pub use crate::dual_vec::DualVec;
    pub use crate::forward::{
        check_tangent, check_tangent_shape, chunked_passes, direction_pieces, dual_constant,
        dual_input, forward_tangent, forward_value, split_duals, store_column, store_columns,
        ChunkSeeds, Seeds, Tangent, TangentSeeds, CHUNK, HALF_CHUNK, QUARTER_CHUNK,
    };
    pub use crate::generic_forward::{generic_forward, ForwardArg, ForwardSeeds};
    pub use crate::graph::{InputLabel, TapeGraph};
    pub use crate::loops::{LoopData, LoopRecorder, NO_ID};
    pub use crate::math::{constant_rules, multi_rules, unary_rules, IntoReal};
    pub use crate::preaccumulate::{Poison, Preaccumulator};
    pub use crate::real::Real;
    pub use crate::scalar::{Primitive, Scalar};
    pub use crate::sparsity::{ColourSeeds, SparseMatrix, SparsityPattern, TraceSeeds, Tracer};
    pub use crate::tape::{DeltaId, Tape, TapeStats};
    pub use crate::vector::compiled as vector;
    pub use crate::vector::Operand;
    pub use crate::wrapper::{
        add_gathered, input, input_array, input_slice, output_leaves, output_value, seed_and_sweep,
        sweep_from, GradReader,
    };
    pub use std::borrow::Cow;

    /// Traits the generated code has in scope: methods of plain values of
    /// other crates (constants) called with dual arguments (`c.dot(&v)`).
    pub mod methods {
        #[cfg(feature = "nalgebra")]
        pub use crate::linalg::nalgebra::ConstantMatrixMethods as _;
        #[cfg(feature = "ndarray")]
        pub use crate::linalg::ndarray::ConstantArrayMethods as _;
    }
}
