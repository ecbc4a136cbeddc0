//! Loops whose adjoint is zero are skipped.
//!
//! The adjoint of a loop adds into the adjoints of what the loop reads,
//! each contribution a product of a partial and an adjoint that flows in
//! through the variables the loop assigns. If those adjoints are all zero
//! when the adjoint reaches the loop, every contribution is zero, and the
//! loop's reverse is skipped — provided it has nothing else to do: it pops
//! nothing (its forward pass pushed nothing) and undoes no integer
//! counter. (A zero adjoint times an infinite partial is then 0, not NaN:
//! the tape's rule for bindings whose adjoint is zero.) The inner loop of
//! a nearest-neighbour search, whose adjoint is nonzero for the nearest
//! candidate only, then costs its reverse once per point, not once per
//! candidate.

use proc_macro2::TokenStream;
use quote::quote;

use super::Passes;
use crate::ir::{Block, StmtKind};

impl Passes<'_> {
    /// The condition under which the reverse of a loop with body `body`
    /// has work to do (some adjoint flowing into it is not zero), when the
    /// loop can be skipped otherwise.
    pub(crate) fn nonzero_inflow(&self, body: &Block) -> Option<TokenStream> {
        let plan = &self.analysis.plan;
        if !self
            .block_pushes(body)
            .is_some_and(|pushes| pushes.is_none())
        {
            return None;
        }
        let mut declared = Vec::new();
        let mut assigned = Vec::new();
        let mut undone = false;
        body.each_stmt(&mut |stmt| match &stmt.kind {
            StmtKind::Let { var, .. } => declared.push(*var),
            StmtKind::For { var: Some(var), .. } => declared.push(*var),
            StmtKind::Match { arms, .. } => {
                for arm in arms {
                    declared.extend(arm.vars.iter().copied());
                }
            }
            StmtKind::Assign { place, .. } => {
                undone |= plan.inverted[stmt.id];
                assigned.push(place.var());
            }
            _ => {}
        });
        if undone {
            return None;
        }
        assigned.sort_unstable();
        assigned.dedup();
        let inflow: Vec<_> = assigned
            .into_iter()
            .filter(|v| !declared.contains(v) && self.useful(*v))
            .collect();
        if inflow.is_empty() || inflow.iter().any(|&v| self.is_buffer(v)) {
            return None;
        }
        let tests = inflow.iter().map(|&v| {
            let adjoint = self.adjoint(v);
            quote!(!::deltad::__private::Scalar::is_zero(&#adjoint))
        });
        Some(quote!(#(#tests)||*))
    }
}
