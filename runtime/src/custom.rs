//! Custom primitives (paper §8.2, Fig. 14): a function whose partial
//! derivatives the user supplies records one binding per output real,
//! Σ_j ∂f_i/∂x_j · δx_j over the input bindings x_j.

use crate::differentiable::Differentiable;
use crate::loops::NO_ID;
use crate::real::Real;
use crate::scalar::{Primitive, Scalar};
use crate::tape::{DeltaId, Tape};

/// The input leaves of a structured parameter of a custom primitive: their
/// bindings and their values, in leaf order.
pub fn input_leaves<P: Primitive, U: Differentiable<P>, S: Scalar>(
    twin: &U::Twin<Real<'_, S>>,
    ids: &mut Vec<Option<DeltaId>>,
    values: &mut Vec<S>,
) {
    U::map_twin(twin, &mut |real| {
        ids.push(real.id());
        values.push(real.value());
    });
}

/// The dual output of a custom primitive with machine value `value`.
///
/// In reverse mode (machine-float scalars), output real `i` gets one binding
/// with terms `rows[i][j] · inputs[j]` (constant inputs and zero partials
/// are left out). In forward mode (first-order dual numbers, nothing
/// recorded), its tangent is `Σ_j rows[i][j] · tangent_j`. Anything deeper
/// (a Hessian through the primitive) would need the derivative of the
/// partials, which the user did not give: it panics.
pub fn custom_output<'t, P: Primitive, S: Scalar<Prim = P> + 't, R: Differentiable<P>>(
    tape: &'t Tape<S>,
    value: &R,
    inputs: &[Option<DeltaId>],
    input_values: &[S],
    rows: &[Vec<P>],
    derivative: &str,
) -> R::Twin<Real<'t, S>> {
    let forward = S::NESTED;
    let tangents: Vec<P> = if forward {
        let first_order = inputs.iter().all(Option::is_none)
            && input_values.iter().all(|v| v.first_order().is_some());
        if !first_order {
            panic!(
                "deltad: the custom derivative `{derivative}` gives first derivatives only, which \
                 cannot be differentiated again (a Hessian, or a gradient inside a gradient, \
                 through this function)"
            );
        }
        input_values
            .iter()
            .map(|v| v.first_order().map_or(P::ZERO, |(_, t)| t))
            .collect()
    } else {
        Vec::new()
    };
    let mut next = 0;
    let output = value.build(&mut |leaf| {
        let row = rows.get(next);
        next += 1;
        let Some(row) = row else {
            return Real::from_prim(leaf);
        };
        assert_eq!(
            row.len(),
            inputs.len(),
            "deltad: a row of `{derivative}` has {} partial derivatives where the function has {} differentiated inputs",
            row.len(),
            inputs.len()
        );
        if forward {
            let tangent = row
                .iter()
                .zip(&tangents)
                .fold(P::ZERO, |sum, (&partial, &t)| if t == P::ZERO { sum } else { sum + partial * t });
            let dual = S::from_first_order(leaf, tangent).unwrap_or_else(|| S::from_prim(leaf));
            return Real::constant(dual);
        }
        let terms: Vec<(S, DeltaId)> = inputs
            .iter()
            .zip(row)
            .filter_map(|(input, &partial)| match input {
                Some(id) if partial != P::ZERO => Some((S::from_prim(partial), *id)),
                _ => None,
            })
            .collect();
        if terms.is_empty() {
            Real::from_prim(leaf)
        } else {
            Real::with_id(tape, S::from_prim(leaf), tape.push_terms(terms))
        }
    });
    assert_eq!(
        next,
        rows.len(),
        "deltad: `{derivative}` returned {} rows for an output with {next} reals (one row per output real, in the order of `jacobian`)",
        rows.len()
    );
    output
}

/// The output of a compiled function called from a recording pass: one
/// binding whose terms are the partial derivatives its generated adjoint
/// computed, `partials[j]` for input `inputs[j]` (constant inputs, and
/// exactly zero partials, left out). A function of constants is a constant.
pub fn compiled_output<'t, S: Scalar>(
    tape: &'t Tape<S>,
    value: S,
    inputs: &[Option<DeltaId>],
    partials: &[S],
) -> Real<'t, S> {
    let ids: Vec<u32> = inputs
        .iter()
        .map(|input| input.map_or(NO_ID, |id| id.0))
        .collect();
    tape.with_partials(value, &ids, partials)
}
