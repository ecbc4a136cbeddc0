//! Names the generated code uses: paths into the runtime (always absolute,
//! through the facade's hidden `__private` module) and generated identifiers
//! (with `__deltad` prefixes, locals with mixed-site hygiene so they can
//! neither capture nor be captured by the user's names).

use proc_macro2::Span;
use quote::format_ident;
use syn::{parse_quote, Ident, Lifetime, Type};

use crate::signature::Precision;

pub(crate) struct Names {
    /// The recording pass's tape parameter.
    pub tape: Ident,
    /// The lifetime of the tape borrow in the recording pass.
    pub lifetime: Lifetime,
    /// The recording pass's scalar type parameter.
    pub scalar: Ident,
    pub precision: Precision,
}

impl Names {
    pub(crate) fn new(precision: Precision) -> Names {
        Names {
            tape: Ident::new("__deltad_tape", Span::mixed_site()),
            lifetime: Lifetime::new("'__deltad_t", Span::call_site()),
            scalar: Ident::new("__DeltadS", Span::call_site()),
            precision,
        }
    }

    /// The dual value type of the recording pass.
    pub(crate) fn real_type(&self) -> Type {
        let (lifetime, scalar) = (&self.lifetime, &self.scalar);
        parse_quote!(::deltad::__private::Real<#lifetime, #scalar>)
    }

    /// A fresh mixed-site identifier for a generated local. `name` may be
    /// built from user identifiers, raw ones (`r#try`) included: their
    /// `r#` is dropped (a raw identifier and its plain spelling are the
    /// same name, so nothing can collide).
    pub(crate) fn local(&self, name: &str) -> Ident {
        let name = name.replace("r#", "");
        format_ident!("__deltad_{}", name, span = Span::mixed_site())
    }

    /// A fresh mixed-site identifier for a generated local that belongs to
    /// parameter `param` (`__deltad_<prefix>_<param>`).
    pub(crate) fn param_local(&self, prefix: &str, param: &Ident) -> Ident {
        self.local(&format!("{prefix}_{param}"))
    }

    /// The `Grad` parameter of `grad_into` (hygienic: a user parameter
    /// named `grad` stays distinct).
    pub(crate) fn grad_into(&self) -> Ident {
        Ident::new("grad", Span::mixed_site())
    }
}

/// Names of the items inside the generated module (re-exported under their
/// public names, so the user's own names in the function body never collide).
/// The module of the entry through which compiled callers take the
/// gradient's field of parameter `name` (`f::grad(..).name`,
/// `f::vjp(.., seed).1.name`).
pub(crate) fn vjp_entry_module(name: &Ident) -> Ident {
    quote::format_ident!("__vjp_{}", syn::ext::IdentExt::unraw(name))
}

/// The module of the entry through which compiled callers take a `jvp`'s
/// tangent (`f::jvp(.., &t).1`).
pub(crate) const JVP_ENTRY_MODULE: &str = "__jvp";

/// The module, in the implementation module, through which the compiled
/// passes call the function parameter `index` (its traits, markers and
/// passes taking the function as their first argument).
pub(crate) fn function_param_module(index: usize) -> Ident {
    quote::format_ident!("__deltad_fn{}", index)
}

/// The name under which a function's module exports
/// [`function_param_module`] to callers passing closures.
pub(crate) fn function_param_export(index: usize) -> Ident {
    quote::format_ident!("__F{}", index)
}

pub(crate) mod items {
    pub const IMPL_MODULE: &str = "__deltad_impl";
    pub const GRAD: &str = "__DeltadGrad";
    pub const GRAD_FN: &str = "__deltad_grad";
    pub const VALUE_AND_GRAD_FN: &str = "__deltad_value_and_grad";
    pub const GRAD_INTO_FN: &str = "__deltad_grad_into";
    pub const VJP_FN: &str = "__deltad_vjp";
    pub const JACOBIAN_FN: &str = "__deltad_jacobian";
    pub const JACOBIAN_REV_FN: &str = "__deltad_jacobian_rev";
    pub const JACOBIAN_FWD_FN: &str = "__deltad_jacobian_fwd";
    pub const JVPS_FN: &str = "__deltad_jvps";
    pub const JVPS_INTO_FN: &str = "__deltad_jvps_into";
    pub const JACOBIAN_PATTERN_FN: &str = "__deltad_jacobian_pattern";
    pub const SPARSE_JACOBIAN_FN: &str = "__deltad_sparse_jacobian";
    pub const HESSIAN_PATTERN_FN: &str = "__deltad_hessian_pattern";
    pub const SPARSE_HESSIAN_FN: &str = "__deltad_sparse_hessian";
    pub const CHECK_FN: &str = "__deltad_check";
    pub const TAPE_STATS_FN: &str = "__deltad_tape_stats";
    pub const TAPE_GRAPH_FN: &str = "__deltad_tape_graph";
    pub const CHECKPOINTED_FN: &str = "__deltad_checkpointed";
    /// The public name of `CHECKPOINTED_FN`, called by other annotated functions.
    pub const CHECKPOINTED_PUBLIC: &str = "__checkpointed";
    pub const REBUILD_FN: &str = "__deltad_rebuild";
    pub const RERUN_FN: &str = "__deltad_rerun";
    pub const JVP_FN: &str = "__deltad_jvp";
    pub const HVP_FN: &str = "__deltad_hvp";
    pub const HVPS_FN: &str = "__deltad_hvps";
    pub const GRAD_AND_HVP_FN: &str = "__deltad_grad_and_hvp";
    pub const HESSIAN_FN: &str = "__deltad_hessian";
    pub const HESSIAN_DIAGONAL_FN: &str = "__deltad_hessian_diagonal";
    pub const LAPLACIAN_FN: &str = "__deltad_laplacian";
    pub const NESTED_GRAD_FN: &str = "__deltad_nested_grad";
    pub const NESTED_VALUE_AND_GRAD_FN: &str = "__deltad_nested_value_and_grad";
    pub const NESTED_VJP_FN: &str = "__deltad_nested_vjp";
    pub const NESTED_JVP_FN: &str = "__deltad_nested_jvp";
    /// The public names of the nested derivatives, by derivative name.
    pub const NESTED: &[(&str, &str, &str)] = &[
        ("grad", NESTED_GRAD_FN, "__nested_grad"),
        (
            "value_and_grad",
            NESTED_VALUE_AND_GRAD_FN,
            "__nested_value_and_grad",
        ),
        ("vjp", NESTED_VJP_FN, "__nested_vjp"),
        ("jvp", NESTED_JVP_FN, "__nested_jvp"),
    ];
    /// Flattens a `Grad` into its reals (tangents, custom derivative rows).
    pub const FLATTEN_FN: &str = "__deltad_flatten";
    /// A `Grad`'s reals in pieces, borrowed where they are flat (tangents
    /// of a chunked forward pass).
    pub const PIECES_FN: &str = "__deltad_pieces";
    pub const RECORD_FN: &str = "__deltad_record";
    /// The prefix of the hidden methods through which differentiated code
    /// calls differentiated methods.
    pub const FORWARD_PREFIX: &str = "__deltad_";
    /// The public name of the recording pass, called by other annotated functions.
    pub const RECORD_PUBLIC: &str = "__record";
    /// The element type parameter of `Grad`.
    pub const GRAD_ELEMENT: &str = "__DeltadT";
}
