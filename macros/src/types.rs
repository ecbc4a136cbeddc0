//! What the macro can tell from a type as written: whether it holds reals,
//! whether it is plain discrete data, which structure its reals have, and
//! which types deltad cannot differentiate through.
//!
//! Only syntax is available here; a user type (`Vec3`) is assumed to be
//! differentiable (`#[derive(Differentiable)]`), and rustc checks it.

use quote::ToTokens;
use syn::{GenericArgument, PathArguments, Type, TypePath};

use crate::methods::is_float_type_name;
use crate::shape::Shape;

/// Leaf types that are plain discrete data.
const DISCRETE_LEAVES: &[&str] = &[
    "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "bool",
    "char", "str", "String", "Ordering", "Duration",
];

/// Standard containers: discrete when their type arguments are.
const STD_CONTAINERS: &[&str] = &[
    "Vec",
    "Option",
    "Box",
    "Rc",
    "Arc",
    "HashMap",
    "BTreeMap",
    "HashSet",
    "BTreeSet",
    "VecDeque",
    "Range",
    "RangeInclusive",
    "Result",
    "Cow",
    "Cell",
    "RefCell",
];

/// Containers a differentiable type can be built from (besides tuples,
/// arrays and slices).
/// (`Result<T, E>`: the reals of `T`; the error is plain data.)
const DIFFERENTIABLE_CONTAINERS: &[&str] = &["Vec", "Option", "Result"];

/// True if the type is plain data: no reals, no user types.
pub(crate) fn is_discrete(ty: &Type) -> bool {
    match ty {
        Type::Path(TypePath { qself: None, path }) => {
            let Some(last) = path.segments.last() else {
                return false;
            };
            let name = last.ident.to_string();
            if DISCRETE_LEAVES.contains(&name.as_str()) {
                return true;
            }
            if !STD_CONTAINERS.contains(&name.as_str()) {
                return false;
            }
            match &last.arguments {
                PathArguments::AngleBracketed(args) => args.args.iter().all(|arg| match arg {
                    GenericArgument::Type(ty) => is_discrete(ty),
                    GenericArgument::Lifetime(_) | GenericArgument::Const(_) => true,
                    _ => false,
                }),
                PathArguments::None => true,
                PathArguments::Parenthesized(_) => false,
            }
        }
        Type::Reference(reference) => is_discrete(&reference.elem),
        Type::Slice(slice) => is_discrete(&slice.elem),
        Type::Array(array) => is_discrete(&array.elem),
        Type::Tuple(tuple) => tuple.elems.iter().all(is_discrete),
        Type::Paren(paren) => is_discrete(&paren.elem),
        Type::Group(group) => is_discrete(&group.elem),
        Type::Never(_) => true,
        _ => false,
    }
}

/// The activity shape of a differentiated value of type `ty` in the
/// recording pass.
pub(crate) fn shape_of(ty: &Type) -> Shape {
    match ty {
        _ if is_discrete(ty) => Shape::Inactive,
        Type::Path(TypePath { qself: None, path }) => {
            let Some(last) = path.segments.last() else {
                return Shape::Opaque;
            };
            let name = last.ident.to_string();
            if is_float_type_name(&name) && path.segments.len() == 1 {
                return Shape::Real;
            }
            if let Some(shape) = array_shape(&name) {
                return shape;
            }
            match (
                &last.arguments,
                DIFFERENTIABLE_CONTAINERS.contains(&name.as_str()),
            ) {
                (PathArguments::AngleBracketed(args), true)
                    if args.args.len() == 1 || (name == "Result" && args.args.len() == 2) =>
                {
                    match &args.args[0] {
                        GenericArgument::Type(elem) => Shape::elems(shape_of(elem)),
                        _ => Shape::Opaque,
                    }
                }
                _ => Shape::Opaque,
            }
        }
        Type::Reference(reference) => shape_of(&reference.elem),
        Type::Slice(slice) => Shape::elems(shape_of(&slice.elem)),
        Type::Array(array) => Shape::elems(shape_of(&array.elem)),
        Type::Tuple(tuple) if tuple.elems.is_empty() => Shape::Inactive,
        Type::Tuple(tuple) => Shape::Tuple(tuple.elems.iter().map(shape_of).collect()),
        Type::Paren(paren) => shape_of(&paren.elem),
        Type::Group(group) => shape_of(&group.elem),
        _ => Shape::Opaque,
    }
}

/// True for `Vec<f64>`, `[f64; N]` (or `f32`): a local annotated with one of
/// these types is a buffer of reals, whatever its value's form.
pub(crate) fn is_real_buffer_type(ty: &Type) -> bool {
    let is_float = |ty: &Type| {
        matches!(ty, Type::Path(TypePath { qself: None, path })
            if path.segments.len() == 1 && is_float_type_name(&path.segments[0].ident.to_string()))
    };
    match ty {
        Type::Array(array) => is_float(&array.elem),
        Type::Paren(paren) => is_real_buffer_type(&paren.elem),
        Type::Path(TypePath { qself: None, path }) => {
            let Some(last) = path.segments.last() else {
                return false;
            };
            match &last.arguments {
                PathArguments::AngleBracketed(args)
                    if last.ident == "Vec" && args.args.len() == 1 =>
                {
                    matches!(&args.args[0], GenericArgument::Type(elem) if is_float(elem))
                }
                _ => false,
            }
        }
        _ => false,
    }
}

/// True for a type that can only be a user type: a path without type
/// arguments that names no float, discrete type, standard container or
/// nalgebra/ndarray type (a type deriving `Differentiable`, or an alias;
/// rustc checks what it is).
pub(crate) fn is_user_type(ty: &Type) -> bool {
    match ty {
        Type::Paren(paren) => is_user_type(&paren.elem),
        Type::Group(group) => is_user_type(&group.elem),
        Type::Path(TypePath { qself: None, path }) => {
            let Some(last) = path.segments.last() else {
                return false;
            };
            let name = last.ident.to_string();
            last.arguments.is_empty()
                && !is_discrete(ty)
                && !is_float_type_name(&name)
                && !STD_CONTAINERS.contains(&name.as_str())
                && array_shape(&name).is_none()
                && !is_view_type_name(&name)
                && name != "Self"
        }
        _ => false,
    }
}

/// True for a type the macro cannot see into: a path with type arguments
/// naming none of the standard containers (an alias such as `type
/// Vector3<T> = [T; 3]`, or another crate's generic type). Compiled callers
/// hold such a value as what rustc knows it to be.
pub(crate) fn is_opaque_type(ty: &Type) -> bool {
    match ty {
        Type::Paren(paren) => is_opaque_type(&paren.elem),
        Type::Group(group) => is_opaque_type(&group.elem),
        Type::Path(TypePath { qself: None, path }) => {
            let Some(last) = path.segments.last() else {
                return false;
            };
            let name = last.ident.to_string();
            matches!(last.arguments, PathArguments::AngleBracketed(_))
                && !is_discrete(ty)
                && !STD_CONTAINERS.contains(&name.as_str())
                && name != "Self"
        }
        _ => false,
    }
}

/// For a parameter that is a buffer of values of a user type (`&[Pt]`,
/// `Vec<Pt>`, `&Vec<Pt>`): the element type.
pub(crate) fn user_elements(kind: &crate::signature::ParamKind) -> Option<&Type> {
    use crate::signature::{ParamKind, Passing};
    let elem = match kind {
        ParamKind::Structured {
            passing: Passing::Slice { elem },
            ..
        } => &**elem,
        ParamKind::Structured {
            value: Type::Path(TypePath { qself: None, path }),
            passing: Passing::Value | Passing::Ref,
        } => {
            let last = path.segments.last()?;
            if last.ident != "Vec" {
                return None;
            }
            match &last.arguments {
                PathArguments::AngleBracketed(args) if args.args.len() == 1 => {
                    match args.args.first()? {
                        GenericArgument::Type(elem) => elem,
                        _ => return None,
                    }
                }
                _ => return None,
            }
        }
        _ => return None,
    };
    is_user_type(elem).then_some(elem)
}

/// For ndarray's `ArrayView1<'_, E>` and `ArrayView2<'_, E>`: the owned
/// array (`Array1<E>`, `Array2<E>`), the value a differentiated view stands
/// for.
pub(crate) fn owned_of_view(ty: &Type) -> Option<Type> {
    let Type::Path(TypePath { qself: None, path }) = ty else {
        return None;
    };
    let last = path.segments.last()?;
    let owned = match last.ident.to_string().as_str() {
        "ArrayView1" => "Array1",
        "ArrayView2" => "Array2",
        _ => return None,
    };
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    let elem = args.args.iter().find_map(|arg| match arg {
        GenericArgument::Type(elem) => Some(elem),
        _ => None,
    })?;
    crate::signature::float_name(elem)?;
    let mut owned_path = path.clone();
    let segment = owned_path.segments.last_mut()?;
    segment.ident = syn::Ident::new(owned, segment.ident.span());
    segment.arguments = PathArguments::AngleBracketed(syn::parse_quote!(<#elem>));
    Some(Type::Path(TypePath {
        qself: None,
        path: owned_path,
    }))
}

/// True for the names of ndarray's and nalgebra's views (borrowed arrays).
fn is_view_type_name(name: &str) -> bool {
    const NALGEBRA: &[&str] = &[
        "Matrix",
        "DMatrix",
        "SMatrix",
        "Vector",
        "DVector",
        "SVector",
        "RowVector",
        "RowDVector",
        "RowSVector",
    ];
    name.starts_with("ArrayView")
        || name.starts_with("CowArray")
        || NALGEBRA.iter().any(|prefix| {
            name.strip_prefix(prefix).is_some_and(|rest| {
                rest.trim_start_matches(|c: char| c.is_ascii_digit() || c == 'x')
                    .starts_with("View")
            })
        })
}

/// True for the names of nalgebra's and ndarray's vector and matrix types.
pub(crate) fn is_array_type_name(name: &str) -> bool {
    array_shape(name).is_some()
}

/// nalgebra's and ndarray's vectors and matrices (features `nalgebra`,
/// `ndarray` of the runtime): vectors are arrays of reals, matrices arrays
/// of arrays (see `methods::array_result`), by the type's name.
fn array_shape(name: &str) -> Option<Shape> {
    if name == "Matrix" || name == "Array" {
        return None;
    }
    let vector = matches!(name, "DVector" | "SVector" | "Array1")
        || name
            .strip_prefix("Vector")
            .is_some_and(|n| n.len() == 1 && n.as_bytes()[0].is_ascii_digit());
    let matrix = matches!(name, "DMatrix" | "SMatrix" | "Array2")
        || name.strip_prefix("Matrix").is_some_and(|n| {
            let b = n.as_bytes();
            (b.len() == 1 && b[0].is_ascii_digit())
                || (b.len() == 3 && b[0].is_ascii_digit() && b[1] == b'x' && b[2].is_ascii_digit())
        });
    if vector {
        Some(Shape::elems(Shape::Real))
    } else if matrix {
        Some(Shape::elems(Shape::elems(Shape::Real)))
    } else {
        None
    }
}

/// Checks that `ty` (an owned value type) can be differentiable: tuples,
/// arrays, `Vec`s and `Option`s of reals, discrete data and user types.
/// Returns the reason if not.
pub(crate) fn check_differentiable(ty: &Type) -> Result<(), String> {
    if is_discrete(ty) {
        return Ok(());
    }
    let written = || ty.to_token_stream().to_string();
    match ty {
        Type::Path(TypePath { qself: None, path }) => {
            let Some(last) = path.segments.last() else {
                return Ok(());
            };
            let name = last.ident.to_string();
            if is_view_type_name(&name) {
                return Err(format!(
                    "deltad cannot differentiate a view (`{}`) here: its derivative would need storage of its own; take the owned type by reference (`&Array1<f64>`, `&DVector<f64>`), or ndarray's `ArrayView1`/`ArrayView2` of `f64` or `f32` by value, or mark the parameter #[no_grad] if it only holds constant data",
                    written()
                ));
            }
            if STD_CONTAINERS.contains(&name.as_str())
                && !DIFFERENTIABLE_CONTAINERS.contains(&name.as_str())
            {
                return Err(format!(
                    "deltad cannot differentiate through a `{name}` (in `{}`): differentiated values are reals, tuples, arrays, slices, `Vec`s, `Option`s, `Result`s and types deriving `Differentiable`; mark the parameter #[no_grad] if it only holds constant data",
                    written()
                ));
            }
            match &last.arguments {
                PathArguments::AngleBracketed(args) => {
                    for arg in &args.args {
                        if let GenericArgument::Type(inner) = arg {
                            check_differentiable(inner)?;
                        }
                    }
                    Ok(())
                }
                PathArguments::None => Ok(()),
                PathArguments::Parenthesized(_) => Err(format!(
                    "deltad cannot differentiate a value of type `{}`",
                    written()
                )),
            }
        }
        Type::Path(_) => Err(format!(
            "deltad cannot differentiate a value of the qualified type `{}`: name the type directly",
            written()
        )),
        Type::Array(array) => check_differentiable(&array.elem),
        Type::Tuple(tuple) => tuple.elems.iter().try_for_each(check_differentiable),
        Type::Paren(paren) => check_differentiable(&paren.elem),
        Type::Group(group) => check_differentiable(&group.elem),
        Type::Reference(_) | Type::Slice(_) => Err(format!(
            "deltad cannot differentiate a reference inside a value (`{}`): use owned values (`Vec<f64>` for `&[f64]`) inside tuples and collections",
            written()
        )),
        Type::TraitObject(_) => Err(format!(
            "deltad cannot differentiate through a trait object (`{}`): it cannot see which reals it holds; pass the concrete type, or mark the parameter #[no_grad] if it only holds constant data",
            written()
        )),
        Type::BareFn(_) => Err(format!(
            "deltad cannot differentiate through a function pointer (`{}`): pass a `#[differentiate]` function's result, or a closure to a function generic over `F: Fn(..)`",
            written()
        )),
        Type::Ptr(_) => Err(format!(
            "deltad cannot differentiate through a raw pointer (`{}`)",
            written()
        )),
        Type::ImplTrait(_) => Err(
            "deltad cannot differentiate an `impl Trait` parameter: only `impl Fn(..)` closures are supported".into(),
        ),
        _ => Err(format!(
            "deltad cannot differentiate a value of type `{}`",
            written()
        )),
    }
}

/// True for a type whose values can be passed more than once as they are:
/// a reference or a primitive (a derivative taken inside differentiated
/// code runs the callee's passes more than once on its constant data).
pub(crate) fn passed_again(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Reference(_) => true,
        syn::Type::Path(path) if path.qself.is_none() => path
            .path
            .get_ident()
            .is_some_and(|name| crate::methods::is_primitive_type_name(&name.to_string())),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    #[test]
    fn discrete_types_are_recognised_structurally() {
        let discrete: Vec<Type> = vec![
            parse_quote!(usize),
            parse_quote!(&str),
            parse_quote!(Vec<(usize, bool)>),
            parse_quote!(std::collections::HashMap<String, Vec<u8>>),
            parse_quote!([i32; 4]),
        ];
        for ty in &discrete {
            assert!(is_discrete(ty), "{}", ty.to_token_stream());
        }
        let not: Vec<Type> = vec![
            parse_quote!(f64),
            parse_quote!(Vec3),
            parse_quote!(Option<f32>),
            parse_quote!(&dyn Fn(usize) -> usize),
        ];
        for ty in &not {
            assert!(!is_discrete(ty), "{}", ty.to_token_stream());
        }
    }

    #[test]
    fn shapes_follow_the_nesting() {
        let ty: Type = parse_quote!(Vec<[f64; 3]>);
        assert_eq!(shape_of(&ty), Shape::elems(Shape::elems(Shape::Real)));
        let ty: Type = parse_quote!((f64, usize, Vec3));
        assert_eq!(
            shape_of(&ty),
            Shape::Tuple(vec![Shape::Real, Shape::Inactive, Shape::Opaque])
        );
    }

    #[test]
    fn nalgebra_and_ndarray_types_are_arrays_of_reals() {
        let vector = Shape::elems(Shape::Real);
        let matrix = Shape::elems(vector.clone());
        for (ty, shape) in [
            (parse_quote!(DVector<f64>), &vector),
            (parse_quote!(&nalgebra::Vector3<f64>), &vector),
            (parse_quote!(SVector<f32, 4>), &vector),
            (parse_quote!(Array1<f64>), &vector),
            (parse_quote!(DMatrix<f64>), &matrix),
            (parse_quote!(Matrix2x3<f64>), &matrix),
            (parse_quote!(Array2<f64>), &matrix),
        ] as [(Type, &Shape); 7]
        {
            assert_eq!(&shape_of(&ty), shape, "{}", ty.to_token_stream());
        }
        let ty: Type = parse_quote!(VectorField);
        assert_eq!(shape_of(&ty), Shape::Opaque);
        assert!(is_view_type_name("DVectorView") && is_view_type_name("MatrixView2x3"));
        assert!(is_view_type_name("ArrayView1") && !is_view_type_name("CameraViewMatrix"));
    }

    #[test]
    fn unsupported_containers_are_named() {
        let ty: Type = parse_quote!(HashMap<String, f64>);
        assert!(check_differentiable(&ty).unwrap_err().contains("HashMap"));
        let ty: Type = parse_quote!(Vec<Vec<f64>>);
        assert!(check_differentiable(&ty).is_ok());
    }
}
