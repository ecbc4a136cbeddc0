//! The annotated function's signature: which parameters are differentiated
//! (active), with what shape, and the function's precision.
//!
//! The rule (the public contract): a parameter is active when its type holds
//! reals (`f64`/`f32`, slices, `Vec`s, arrays, tuples and `Option`s of them,
//! types deriving `Differentiable`, by value or shared reference) and it is
//! not marked `#[no_grad]`. `#[no_grad]` parameters are constant data;
//! parameters of plain discrete types (integers, `bool`, strings and standard
//! containers of them) pass through.

use proc_macro2::Span;
use quote::{format_ident, ToTokens};
use syn::{
    Expr, FnArg, GenericArgument, GenericParam, Ident, ItemFn, Lifetime, Pat, PathArguments,
    ReturnType, Type, TypePath,
};

use crate::errors::Errors;
use crate::methods::is_float_type_name;
use crate::shape::Shape;

/// The name of the marker attribute for constant parameters.
pub(crate) const NO_GRAD: &str = "no_grad";

/// `f64` or `f32`: the machine float a function is differentiated in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Precision {
    F64,
    F32,
}

impl Precision {
    pub(crate) fn from_name(name: &str) -> Option<Precision> {
        match name {
            "f64" => Some(Precision::F64),
            "f32" => Some(Precision::F32),
            _ => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Precision::F64 => "f64",
            Precision::F32 => "f32",
        }
    }

    /// The type as tokens, at `span`.
    pub(crate) fn ident(self, span: Span) -> Ident {
        Ident::new(self.name(), span)
    }
}

/// How a parameter takes part in differentiation.
#[derive(Clone)]
pub(crate) enum ParamKind {
    /// `f64`.
    Real,
    /// `&[f64]`.
    Slice { lifetime: Option<Lifetime> },
    /// `&Vec<f64>`.
    VecRef { lifetime: Option<Lifetime> },
    /// `Vec<f64>`.
    Vec,
    /// `[f64; N]`.
    Array { len: Expr },
    /// `&[f64; N]`.
    ArrayRef {
        lifetime: Option<Lifetime>,
        len: Expr,
    },
    /// Any other differentiable type (nested collections, tuples, `Option`,
    /// user types): handled through the runtime's `Differentiable` trait.
    Structured {
        /// The owned type whose gradient is returned (`Vec<E>` for `&[E]`).
        value: Type,
        passing: Passing,
    },
    /// `&mut T` holding reals: its contents on entry are inputs (the `Grad`
    /// field is their derivative), its contents on return are results.
    /// `value` is the owned type (`Vec<E>` for `&mut [E]`); `passing` is
    /// `Ref` or `Slice`.
    InOut { value: Type, passing: Passing },
    /// A function (`f: F` with `F: Fn(f64) -> f64`, or `impl Fn`): called
    /// with dual values in the recording pass; no gradient field.
    Function {
        params: Vec<Shape>,
        ret: Shape,
        /// How the compiled passes call it, if they can.
        compiled: Option<crate::functions::CompiledFn>,
    },
    /// `#[no_grad]`: constant data, passed as is.
    Constant,
    /// No floats in the type: passed as is.
    Discrete,
}

/// How a structured parameter is passed.
#[derive(Clone)]
pub(crate) enum Passing {
    /// `T`.
    Value,
    /// `&T`.
    Ref,
    /// `&[E]` (the value type is `Vec<E>`).
    Slice { elem: Box<Type> },
    /// An ndarray view, `ArrayView1<'_, f64>` / `ArrayView2<'_, f64>` (the
    /// value type is the owned array): received like `&T`, its value read
    /// with `to_owned()`, and a value of `T` given as one with `view()`.
    View,
}

impl ParamKind {
    /// A real, a buffer of reals, or data with no derivative: a kind the
    /// compiled passes take as plain scalars and slices of them.
    pub(crate) fn is_flat(&self) -> bool {
        matches!(
            self,
            ParamKind::Real
                | ParamKind::Slice { .. }
                | ParamKind::VecRef { .. }
                | ParamKind::Vec
                | ParamKind::Array { .. }
                | ParamKind::ArrayRef { .. }
                | ParamKind::Constant
                | ParamKind::Discrete
        )
    }

    pub(crate) fn is_active(&self) -> bool {
        !matches!(
            self,
            ParamKind::Constant | ParamKind::Discrete | ParamKind::Function { .. }
        )
    }

    /// The activity shape of the parameter's value in the recording pass.
    pub(crate) fn shape(&self) -> Shape {
        match self {
            ParamKind::Real => Shape::Real,
            ParamKind::Slice { .. }
            | ParamKind::VecRef { .. }
            | ParamKind::Vec
            | ParamKind::Array { .. }
            | ParamKind::ArrayRef { .. } => Shape::elems(Shape::Real),
            ParamKind::Structured { value, .. } | ParamKind::InOut { value, .. } => {
                crate::types::shape_of(value)
            }
            ParamKind::Constant | ParamKind::Discrete | ParamKind::Function { .. } => {
                Shape::Inactive
            }
        }
    }
}

/// What the function returns.
#[derive(Clone)]
pub(crate) enum Output {
    /// `f64`/`f32`: `grad` and `value_and_grad` exist.
    Real,
    /// Any other differentiable type: `vjp` and `jacobian` only.
    Structured(Box<Type>),
    /// Nothing (`()`): the results are in `&mut` parameters.
    Unit,
}

/// One parameter of the annotated function.
pub(crate) struct Param {
    /// The user's pattern (`x`, `mut x`, or a destructuring pattern for
    /// discrete parameters).
    pub pat: Pat,
    /// The user's type.
    pub ty: Type,
    /// The name used in generated signatures and as the `Grad` field: the
    /// user's identifier, or `__deltad_argN` for other patterns.
    pub name: Ident,
    pub kind: ParamKind,
}

/// The validated signature.
pub(crate) struct Signature {
    pub params: Vec<Param>,
    pub precision: Precision,
    pub output: Output,
    /// Lifetime and const parameters of the function, kept on generated items.
    pub generics: Vec<GenericParam>,
    /// Type parameters bounded by `Fn(..)`: kept on the recording pass only.
    pub function_generics: Vec<GenericParam>,
    pub where_clause: Option<syn::WhereClause>,
}

/// A result that is a buffer of reals: `Vec<f64>` or `[f64; N]` (`f32`
/// too).
#[derive(Clone)]
pub(crate) enum BufferOutput {
    Vec,
    Array(Expr),
}

impl Signature {
    /// Flat parameters (`ParamKind::is_flat`) and a real result.
    pub(crate) fn is_flat_to_real(&self) -> bool {
        matches!(self.output, Output::Real) && self.params.iter().all(|p| p.kind.is_flat())
    }

    /// The output as a buffer of reals, if it is one.
    pub(crate) fn buffer_output(&self) -> Option<BufferOutput> {
        let Output::Structured(ty) = &self.output else {
            return None;
        };
        let mut ty: &Type = ty;
        while let Type::Group(syn::TypeGroup { elem, .. })
        | Type::Paren(syn::TypeParen { elem, .. }) = ty
        {
            ty = elem;
        }
        if vec_of_float(ty) {
            return Some(BufferOutput::Vec);
        }
        match ty {
            Type::Array(array) if float_name(&array.elem).is_some() => {
                Some(BufferOutput::Array(array.len.clone()))
            }
            _ => None,
        }
    }

    /// The result's type, if it is a user type (a struct deriving
    /// `Differentiable`).
    pub(crate) fn struct_output(&self) -> Option<&Type> {
        match &self.output {
            Output::Structured(ty) if crate::types::is_user_type(ty) => Some(ty),
            _ => None,
        }
    }

    /// A result whose type the macro cannot see into (see
    /// `types::is_opaque_type`).
    pub(crate) fn opaque_output(&self) -> Option<&Type> {
        match &self.output {
            Output::Structured(ty) if crate::types::is_opaque_type(ty) => Some(ty),
            _ => None,
        }
    }

    /// For a result `Result<f64, E>` (of the function's precision): `E`.
    /// `grad` and `value_and_grad` then return `Result`s.
    pub(crate) fn fallible_real(&self) -> Option<&Type> {
        let Output::Structured(ty) = &self.output else {
            return None;
        };
        let Type::Path(path) = &**ty else {
            return None;
        };
        let last = path.path.segments.last()?;
        if last.ident != "Result" || path.qself.is_some() {
            return None;
        }
        let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
            return None;
        };
        match args.args.iter().collect::<Vec<_>>().as_slice() {
            [syn::GenericArgument::Type(ok), syn::GenericArgument::Type(error)]
                if float_name(ok).as_deref() == Some(self.precision.name()) =>
            {
                Some(error)
            }
            _ => None,
        }
    }

    /// True if a parameter is a function: then only the recording pass is
    /// generated (see `functions.rs`).
    pub(crate) fn takes_functions(&self) -> bool {
        self.params
            .iter()
            .any(|p| matches!(p.kind, ParamKind::Function { .. }))
    }

    /// True if the function writes results into `&mut` parameters.
    pub(crate) fn has_in_out(&self) -> bool {
        self.params
            .iter()
            .any(|p| matches!(p.kind, ParamKind::InOut { .. }))
    }

    /// True if calls of this function can be checkpointed: no `&mut`
    /// results (a re-run would repeat their effect), no function
    /// parameters, and no constants that borrow (they cannot be kept).
    pub(crate) fn calls_can_be_checkpointed(&self) -> bool {
        !self.takes_functions() && !self.has_in_out() && !self.keeps_borrowed_constants()
    }

    /// True if a constant parameter's type names a lifetime below its
    /// outermost reference (`View<'a>`, `&[&'a str]`): a checkpointed call
    /// keeps its constant arguments as owned `'static` copies, which such a
    /// type cannot give, so calls of this function are not checkpointable.
    fn keeps_borrowed_constants(&self) -> bool {
        struct FindsLifetime(bool);
        impl<'ast> syn::visit::Visit<'ast> for FindsLifetime {
            fn visit_lifetime(&mut self, _: &'ast syn::Lifetime) {
                self.0 = true;
            }
        }
        self.params.iter().any(|p| {
            if !matches!(p.kind, ParamKind::Constant | ParamKind::Discrete) {
                return false;
            }
            let target = match &p.ty {
                syn::Type::Reference(reference) => &*reference.elem,
                other => other,
            };
            let mut finder = FindsLifetime(false);
            syn::visit::Visit::visit_type(&mut finder, target);
            finder.0
        })
    }
}

/// Removes `#[no_grad]` markers from `item`'s parameters, returning which
/// parameters carried one (in order). Other attributes stay.
pub(crate) fn strip_no_grad(item: &mut ItemFn) -> Vec<bool> {
    item.sig
        .inputs
        .iter_mut()
        .map(|arg| {
            let attrs = match arg {
                FnArg::Typed(typed) => &mut typed.attrs,
                FnArg::Receiver(receiver) => &mut receiver.attrs,
            };
            let before = attrs.len();
            attrs.retain(|attr| !attr.path().is_ident(NO_GRAD));
            attrs.len() != before
        })
        .collect()
}

/// Validates the signature of `item` (already stripped of markers; `no_grad`
/// says which parameters had one). Every problem is reported to `errors`;
/// returns `None` if the signature cannot be used.
pub(crate) fn analyze(item: &ItemFn, no_grad: &[bool], errors: &Errors) -> Option<Signature> {
    let sig = &item.sig;
    let mut ok = true;
    let mut reject = |at: &dyn ToTokens, message: &str| {
        errors.at(at, message);
        ok = false;
    };

    if let Some(token) = &sig.asyncness {
        reject(token, "deltad cannot differentiate `async fn`: write the numeric part as a plain `fn` and call it from the async code");
    }
    if let Some(token) = &sig.unsafety {
        reject(token, "deltad cannot differentiate `unsafe fn`: keep the unsafe operations outside the differentiated function");
    }
    if let Some(variadic) = &sig.variadic {
        reject(variadic, "deltad cannot differentiate variadic functions");
    }

    let function_types = crate::functions::function_type_params(sig);
    let mut generics = Vec::new();
    let mut function_generics = Vec::new();
    for param in &sig.generics.params {
        match param {
            GenericParam::Lifetime(_) | GenericParam::Const(_) => generics.push(param.clone()),
            GenericParam::Type(ty) if function_types.contains_key(&ty.ident.to_string()) => {
                function_generics.push(param.clone())
            }
            GenericParam::Type(ty) => reject(ty, &format!("deltad cannot differentiate functions generic over this type: type parameters are supported for functions (`F: Fn(..)`) and for the function's number type (bounded by num-traits' `Float`, `FloatConst`, `FromPrimitive`, ... or simba's `RealField`); lifetime and const parameters are too. Write the function for the type it is used with, or bound `{param}` by `num_traits::Float` if it is the number type", param = ty.ident)),
        }
    }

    let mut params = Vec::new();
    for (index, (arg, &constant)) in sig.inputs.iter().zip(no_grad).enumerate() {
        let typed = match arg {
            // Rejected by `expand` before the signature is analyzed.
            FnArg::Receiver(_) => continue,
            FnArg::Typed(typed) => typed,
        };
        let ty = (*typed.ty).clone();
        let function = crate::functions::function_param(&ty, &function_types);
        let kind = if let Some(function) = function {
            ParamKind::Function {
                params: function.params,
                ret: function.ret,
                compiled: function.compiled,
            }
        } else if constant {
            ParamKind::Constant
        } else {
            match classify(&ty) {
                Ok(kind) => kind,
                Err(message) => {
                    reject(&typed.ty, &message);
                    continue;
                }
            }
        };
        let name = match &*typed.pat {
            Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => pat.ident.clone(),
            other if kind.is_active() => {
                reject(other, "name this parameter with a plain identifier: deltad names its gradient field after it");
                continue;
            }
            _ => format_ident!("__deltad_arg{}", index, span = Span::mixed_site()),
        };
        params.push(Param {
            pat: (*typed.pat).clone(),
            ty,
            name,
            kind,
        });
    }

    let has_in_out = params
        .iter()
        .any(|p: &Param| matches!(p.kind, ParamKind::InOut { .. }));
    let returns_unit = match &sig.output {
        ReturnType::Default => true,
        ReturnType::Type(_, ty) => matches!(&**ty, Type::Tuple(t) if t.elems.is_empty()),
    };
    let output = match &sig.output {
        _ if returns_unit && has_in_out => Some(Output::Unit),
        _ if returns_unit => {
            reject(&sig.ident, "deltad differentiates functions with results: this function returns nothing and has no `&mut` parameter holding reals");
            None
        }
        ReturnType::Default => None,
        ReturnType::Type(_, ty) if float_name(ty).is_some() => Some(Output::Real),
        ReturnType::Type(_, ty) if matches!(**ty, Type::ImplTrait(_)) => {
            reject(ty, "deltad cannot differentiate a function returning `impl Trait` (a closure would escape the recording pass): return values, or take the closure as a parameter `f: F` with `F: Fn(..)`");
            None
        }
        ReturnType::Type(_, ty) => match crate::types::check_differentiable(ty) {
            Ok(()) => Some(Output::Structured(ty.clone())),
            Err(message) => {
                reject(
                    ty,
                    &message.replace(
                        "mark the parameter #[no_grad] if it only holds constant data",
                        "return a differentiable value",
                    ),
                );
                None
            }
        },
    };
    // The precision: the float the return type names, else the first one an
    // active parameter names, else `f64`.
    let named_in_output = match &sig.output {
        ReturnType::Type(_, ty) => first_float_name(ty),
        ReturnType::Default => None,
    };
    let precision_name = named_in_output
        .or_else(|| {
            params
                .iter()
                .filter(|p| p.kind.is_active())
                .find_map(|p| first_float_name(&p.ty))
        })
        .unwrap_or_else(|| "f64".to_string());
    let precision = Precision::from_name(&precision_name);

    if let Some(precision) = precision {
        for param in params.iter().filter(|p| p.kind.is_active()) {
            if let Some(name) = first_float_name(&param.ty) {
                if name != precision.name() {
                    reject(&param.ty, &format!("this parameter is `{name}` but the function is differentiated in `{}`: deltad differentiates one precision per function (convert with `as` outside, or mark the parameter #[no_grad])", precision.name()));
                }
            }
        }
    }

    if !ok {
        return None;
    }
    Some(Signature {
        params,
        precision: precision?,
        output: output?,
        generics,
        function_generics,
        where_clause: sig.generics.where_clause.clone(),
    })
}

/// Classifies a parameter type without `#[no_grad]`.
fn classify(ty: &Type) -> Result<ParamKind, String> {
    if crate::types::is_discrete(ty) {
        return Ok(ParamKind::Discrete);
    }
    match ty {
        Type::Paren(inner) => classify(&inner.elem),
        Type::Group(inner) => classify(&inner.elem),
        _ if float_name(ty).is_some() => Ok(ParamKind::Real),
        Type::Array(array) if float_name(&array.elem).is_some() => Ok(ParamKind::Array {
            len: array.len.clone(),
        }),
        _ if vec_of_float(ty) => Ok(ParamKind::Vec),
        Type::Reference(reference) => {
            let lifetime = reference.lifetime.clone();
            if reference.mutability.is_some() {
                return in_out(&reference.elem);
            }
            match &*reference.elem {
                Type::Slice(slice) if float_name(&slice.elem).is_some() => {
                    Ok(ParamKind::Slice { lifetime })
                }
                Type::Array(array) if float_name(&array.elem).is_some() => {
                    Ok(ParamKind::ArrayRef {
                        lifetime,
                        len: array.len.clone(),
                    })
                }
                elem if vec_of_float(elem) => Ok(ParamKind::VecRef { lifetime }),
                Type::Slice(slice) => {
                    crate::types::check_differentiable(&slice.elem)?;
                    let elem = (*slice.elem).clone();
                    Ok(ParamKind::Structured {
                        value: syn::parse_quote!(::std::vec::Vec<#elem>),
                        passing: Passing::Slice {
                            elem: Box::new(elem),
                        },
                    })
                }
                elem => {
                    crate::types::check_differentiable(elem)?;
                    Ok(ParamKind::Structured {
                        value: elem.clone(),
                        passing: Passing::Ref,
                    })
                }
            }
        }
        _ if crate::types::owned_of_view(ty).is_some() => Ok(ParamKind::Structured {
            value: crate::types::owned_of_view(ty).unwrap_or_else(|| ty.clone()),
            passing: Passing::View,
        }),
        _ => {
            crate::types::check_differentiable(ty)?;
            Ok(ParamKind::Structured {
                value: ty.clone(),
                passing: Passing::Value,
            })
        }
    }
}

/// A `&mut` parameter holding reals: contents in, contents out.
fn in_out(elem: &Type) -> Result<ParamKind, String> {
    match elem {
        Type::Slice(slice) => {
            crate::types::check_differentiable(&slice.elem)?;
            let elem = (*slice.elem).clone();
            Ok(ParamKind::InOut {
                value: syn::parse_quote!(::std::vec::Vec<#elem>),
                passing: Passing::Slice {
                    elem: Box::new(elem),
                },
            })
        }
        elem => {
            crate::types::check_differentiable(elem)?;
            Ok(ParamKind::InOut {
                value: elem.clone(),
                passing: Passing::Ref,
            })
        }
    }
}

/// `f64` or `f32` if `ty` is exactly that primitive.
pub(crate) fn float_name(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(TypePath { qself: None, path }) => {
            let ident = path.get_ident()?.to_string();
            is_float_type_name(&ident).then_some(ident)
        }
        Type::Paren(inner) => float_name(&inner.elem),
        Type::Group(inner) => float_name(&inner.elem),
        _ => None,
    }
}

/// True for `Vec<f64>` / `Vec<f32>` (also written with a path to `Vec`).
pub(crate) fn vec_of_float(ty: &Type) -> bool {
    let Type::Path(TypePath { qself: None, path }) = ty else {
        return false;
    };
    let Some(last) = path.segments.last() else {
        return false;
    };
    if last.ident != "Vec" {
        return false;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return false;
    };
    matches!(
        args.args.first(),
        Some(GenericArgument::Type(elem)) if args.args.len() == 1 && float_name(elem).is_some()
    )
}

fn first_float_name(ty: &Type) -> Option<String> {
    struct Finder(Option<String>);
    impl<'ast> syn::visit::Visit<'ast> for Finder {
        fn visit_path_segment(&mut self, segment: &'ast syn::PathSegment) {
            if self.0.is_none() && is_float_type_name(&segment.ident.to_string()) {
                self.0 = Some(segment.ident.to_string());
            }
            syn::visit::visit_path_segment(self, segment);
        }
    }
    let mut finder = Finder(None);
    syn::visit::Visit::visit_type(&mut finder, ty);
    finder.0
}
