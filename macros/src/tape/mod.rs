//! The tape engine's recording pass, for functions that stay on the tape:
//! the body rewritten (`rewrite.rs`) so that it records Delta bindings on a
//! run-time tape, guided by an activity analysis over the syn tree
//! (`activity.rs`), with arithmetic fused at compile time (`fusion.rs`),
//! straight-line loops recorded as a whole (`loops.rs`) and
//! `#[preaccumulate]` loops swept one iteration at a time
//! (`preaccumulate.rs`, whose contract check also runs for compiled
//! functions).

pub(crate) mod activity;
pub(crate) mod function_args;
pub(crate) mod fusion;
pub(crate) mod loops;
pub(crate) mod preaccumulate;
pub(crate) mod rewrite;
pub(crate) mod slices;
