//! Parameters that are functions: `f: F` with `F: Fn(f64) -> f64` (or
//! `FnMut`/`FnOnce`, in the generics or the `where` clause) and
//! `f: impl Fn(f64) -> f64`.
//!
//! A function differentiated with such a parameter is called from other
//! `#[differentiate]` functions with a closure they define: in the recording
//! pass the bound reads `Fn(Real) -> Real`, and the closure, compiled as part
//! of the caller's recording pass, records its operations on the same tape.
//! It has no `grad` of its own: a closure written in plain code computes with
//! machine floats, which carry no derivative.

use std::collections::HashMap;

use syn::visit_mut::VisitMut;
use syn::{
    GenericParam, PathArguments, ReturnType, Signature, Type, TypeParamBound, WherePredicate,
};

use crate::names::Names;
use crate::shape::Shape;
use crate::signature::float_name;
use crate::types::shape_of;

/// The parameter and result shapes of a function parameter's `Fn` bound.
#[derive(Clone, Debug)]
pub(crate) struct FnShape {
    pub params: Vec<Shape>,
    pub ret: Shape,
    /// How the compiled passes call it, if they can.
    pub compiled: Option<CompiledFn>,
}

/// A function parameter the compiled passes call: through an object with
/// passes of its own (a caller's closure), each argument a real or a slice
/// of reals, the result a real or a `Vec` of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CompiledFn {
    pub args: Vec<FnValue>,
    pub ret: FnValue,
}

/// An argument or the result of a [`CompiledFn`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FnValue {
    /// `f64` (or `f32`).
    Real,
    /// `&[f64]`: an argument.
    Slice,
    /// `Vec<f64>`: a result.
    Vec,
}

impl CompiledFn {
    /// The compiled form of `Fn(inputs) -> output`, if it has one.
    fn of<'a>(
        inputs: impl IntoIterator<Item = &'a Type>,
        output: &ReturnType,
    ) -> Option<CompiledFn> {
        let real = |ty: &Type| float_name(ty).is_some();
        let args = inputs
            .into_iter()
            .map(|ty| match ty {
                _ if real(ty) => Some(FnValue::Real),
                Type::Reference(r) if r.mutability.is_none() => match &*r.elem {
                    Type::Slice(slice) if real(&slice.elem) => Some(FnValue::Slice),
                    _ => None,
                },
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        let ret = match output {
            ReturnType::Type(_, ty) if real(ty) => FnValue::Real,
            ReturnType::Type(_, ty) if crate::signature::vec_of_float(ty) => FnValue::Vec,
            _ => return None,
        };
        Some(CompiledFn { args, ret })
    }
}

/// The `Fn(..) -> ..` bound among `bounds`, as shapes.
fn fn_bound<'a>(bounds: impl IntoIterator<Item = &'a TypeParamBound>) -> Option<FnShape> {
    bounds.into_iter().find_map(|bound| {
        let TypeParamBound::Trait(trait_bound) = bound else {
            return None;
        };
        let last = trait_bound.path.segments.last()?;
        if !matches!(last.ident.to_string().as_str(), "Fn" | "FnMut" | "FnOnce") {
            return None;
        }
        let PathArguments::Parenthesized(args) = &last.arguments else {
            return None;
        };
        Some(FnShape {
            params: args.inputs.iter().map(shape_of).collect(),
            ret: match &args.output {
                ReturnType::Default => Shape::Inactive,
                ReturnType::Type(_, ty) => shape_of(ty),
            },
            compiled: CompiledFn::of(&args.inputs, &args.output),
        })
    })
}

/// The type parameters of `sig` bounded by `Fn(..)`, by name.
pub(crate) fn function_type_params(sig: &Signature) -> HashMap<String, FnShape> {
    let mut found = HashMap::new();
    for param in &sig.generics.params {
        if let GenericParam::Type(ty) = param {
            if let Some(shape) = fn_bound(&ty.bounds) {
                found.insert(ty.ident.to_string(), shape);
            }
        }
    }
    if let Some(where_clause) = &sig.generics.where_clause {
        for predicate in &where_clause.predicates {
            let WherePredicate::Type(predicate) = predicate else {
                continue;
            };
            let Type::Path(path) = &predicate.bounded_ty else {
                continue;
            };
            if let (Some(ident), Some(shape)) = (path.path.get_ident(), fn_bound(&predicate.bounds))
            {
                found.insert(ident.to_string(), shape);
            }
        }
    }
    found
}

/// The shapes of a parameter of type `ty` if it is a function: `F`, `&F`
/// for a function type parameter `F`, or `impl Fn(..)`.
pub(crate) fn function_param(ty: &Type, type_params: &HashMap<String, FnShape>) -> Option<FnShape> {
    match ty {
        Type::Path(path) if path.qself.is_none() => {
            let ident = path.path.get_ident()?;
            type_params.get(&ident.to_string()).cloned()
        }
        Type::Reference(reference) if reference.mutability.is_none() => {
            function_param(&reference.elem, type_params)
        }
        Type::ImplTrait(bound) => fn_bound(&bound.bounds),
        Type::Paren(paren) => function_param(&paren.elem, type_params),
        _ => None,
    }
}

/// Replaces the function's float by the dual value type everywhere in a
/// signature fragment (the `Fn` bounds of the recording pass).
pub(crate) struct ToReal<'n> {
    pub names: &'n Names,
}

impl VisitMut for ToReal<'_> {
    fn visit_type_mut(&mut self, ty: &mut Type) {
        if float_name(ty).as_deref() == Some(self.names.precision.name()) {
            *ty = self.names.real_type();
            return;
        }
        syn::visit_mut::visit_type_mut(self, ty);
    }
}
