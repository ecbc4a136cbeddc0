//! Analyses over the IR, run in order: the types of values and activity
//! (which values are differentiated), which inform each other to a fixed
//! point (a differentiated value is a real; a field used as a real is
//! differentiated); the fields of user types whose type stays unknown;
//! positions (which writes can run after a statement); and the reverse plan
//! (what the adjoint reads and how the forward pass keeps it for it,
//! which new buffers it makes without filling them, and which element
//! writes leave their element's adjoint unreset). Each only reads the
//! IR.

pub(crate) mod activity;
pub(crate) mod fields;
pub(crate) mod keep;
pub(crate) mod loop_saves;
pub(crate) mod mode;
pub(crate) mod moves;
pub(crate) mod narrow;
pub(crate) mod overwritten;
pub(crate) mod positions;
pub(crate) mod resets;
pub(crate) mod reverse;
pub(crate) mod saves;
pub(crate) mod types;

use crate::ir::{Function, Unsupported};
use crate::signature::Signature;

pub(crate) use reverse::{Establish, LoopPlan, Plan};
pub(crate) use types::Ty;

/// Everything the emitters need to know about a lowered function.
pub(crate) struct Analysis {
    pub active: Vec<bool>,
    pub types: Vec<Ty>,
    pub plan: Plan,
    /// The result's fields that copy a parameter's field of unknown type.
    pub pass_through: Vec<fields::PassThrough>,
}

pub(crate) fn analyze(function: &Function, signature: &Signature) -> Result<Analysis, Unsupported> {
    // Types and activity inform each other (a field compared with a
    // differentiated value is a real, a real field read makes values
    // differentiated): to a fixed point.
    let mut types = types::infer(function, signature, &[]);
    let mut active = activity::analyze(function, signature, &types);
    // (Both only grow; the bound is a guard.)
    for _ in 0..function.vars.len() + 1 {
        let refined = types::infer(function, signature, &active);
        if refined == types {
            break;
        }
        types = refined;
        active = activity::analyze(function, signature, &types);
    }
    let pass_through = fields::check(function, &types)?;
    activity::check(function, &active, signature.precision)?;
    let positions = positions::Positions::new(function);
    let (mut plan, reads) = reverse::plan(function, &active, &positions, &types)?;
    plan.saves = saves::decide(function, &plan, &reads, &positions);
    plan.kept_before = loop_saves::decide(function, &mut plan, &active);
    plan.scratch = overwritten::decide(function, &plan, &positions);
    plan.no_reset = resets::decide(function, &active, &positions);
    Ok(Analysis {
        active,
        types,
        plan,
        pass_through,
    })
}
