//! The runtime of compiled adjoints.
//!
//! For a function in the compiled subset, `#[differentiate]` generates two
//! functions generic over the [`Scalar`](crate::Scalar) `S`:
//!
//! * a *forward pass* `__fwd`, the function's own computation on `S`, which
//!   pushes onto a [`Stack`] only what the adjoint needs and cannot
//!   recompute: values of variables and elements before they are
//!   overwritten, values a block's variables have when it ends, branch
//!   decisions, loop trip counts and exit points;
//! * an *adjoint* `__adj`, the statements in reverse, with scalar adjoints
//!   as local variables and the adjoints of slice parameters written straight
//!   into the caller's buffers ([`SliceSink`]), popping what the forward
//!   pass pushed.
//!
//! This is the paper's `eval` of Delta bindings (Krawiec et al., POPL 2022,
//! §5.3.3) specialised at compile time: the structure of every binding is the
//! generated code, and only values are kept at run time.
//!
//! Calls between differentiated functions go through [`PassActive`] and
//! [`PassConstant`] (arguments converted by the callee's parameter kind,
//! which the caller does not know) and through sinks, one per parameter.

mod buffers;
mod cotangent;
mod held;
mod opaque;
mod params;
mod result_use;
mod reusing;
mod spares;
mod stack;
mod streamed;
mod structs;
mod views;

pub use buffers::{
    buffer_lanes_into, buffer_part, copy_into, lane_seed, lift_buffer, put_at, recorded_values,
    repeated, result_ids, seed_buffer_and_sweep, seed_of, split_dual, unit_seed, zeros, LiftBuffer,
    ResultBuffer,
};

pub use cotangent::{Cotangent, Lanes};
pub use held::{AsBuffer, AsTwin, HeldAs, HeldLanes, HeldResult, HeldSink, HeldValue};
pub use opaque::{
    opaque_values, seed_opaque_and_sweep, ActiveArg, ConstantArg, OpaqueArg, OpaqueParam,
};
pub use params::{
    lifted, machine_value, ArrayParam, Discard, PassActive, PassConstant, PassOwned, PlainParam,
    RealParam, Reborrow, ScalarSink, SliceParam, SliceSink,
};
pub use result_use::{ResultUse, Unvalued, Valued};
pub use reusing::Reusing;
pub use stack::{
    checkpoint_segment, done_with, with_empty_stack, with_stack, Bits, KeptRange, KeptWhole,
    NoRecord, Record, Reserved, Stack, StackStats,
};
pub(crate) use stack::{
    release_pooled_stacks, with_pooled_stack, DUAL_F32_STACKS, DUAL_F64_STACKS, F32_STACKS,
    F64_STACKS,
};
pub use structs::{
    add_twin_gradient, adjoint_twins_of, leaf_constant, read_twin_adjoint, seed_recorded_and_sweep,
    twin_duals, twin_gradient, twin_gradient_owned, twin_lane_seed, twin_leaf_count, twin_leaves,
    twin_of_outputs, twin_of_recorded, twin_of_value, twin_on_tape, twin_unit, twin_value,
    twin_values, twin_zeros, twin_zeros_like, twins_gradient, twins_of, twins_values, twins_zeros,
    zeros_like, Active, CopyActive, CopyPlain, FromConstant, LeafCopy, Owned, PlainRead,
    ReadActive, ReadPlain, RealLeaf, SetLeaf, SinkAt, SinkRef, StructArg, StructParam,
    StructValueParam, StructsParam, TwinOf, TwinSink, TwinsSink,
};
pub use views::{loop_span, loop_window};
