//! What the macro knows about method and function names.
//!
//! Only names matter here; types stay with rustc. A method is classified by
//! what it does to the activity of its receiver and arguments.

use crate::shape::Shape;

/// `f64`/`f32` methods with derivative rules, taking only the receiver.
pub(crate) const UNARY_MATH: &[&str] = &[
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "exp",
    "exp2",
    "exp_m1",
    "ln",
    "log2",
    "log10",
    "ln_1p",
    "sqrt",
    "cbrt",
    "recip",
    "abs",
    "signum",
    "floor",
    "ceil",
    "round",
    "round_ties_even",
    "trunc",
    "fract",
    "to_degrees",
    "to_radians",
];

/// `f64`/`f32` methods with derivative rules and real arguments besides the
/// receiver (`powi`'s argument is an integer).
pub(crate) const MULTI_MATH: &[&str] = &[
    "atan2",
    "powf",
    "powi",
    "hypot",
    "log",
    "copysign",
    "rem_euclid",
    "div_euclid",
    "max",
    "min",
    "clamp",
    "mul_add",
];

/// Methods whose result is plain data whatever the activity of the receiver.
pub(crate) const INACTIVE_RESULT: &[&str] = &[
    "is_nan",
    "is_finite",
    "is_infinite",
    "is_normal",
    "is_subnormal",
    "is_sign_positive",
    "is_sign_negative",
    "total_cmp",
    "partial_cmp",
    "cmp",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "len",
    "is_empty",
    "capacity",
    "count",
    "contains",
    "starts_with",
    "ends_with",
    "is_some",
    "is_none",
    "is_ok",
    "is_err",
    "to_string",
];

/// Methods returning the receiver's shape (views, clones, iterators over the
/// same elements, unwrapping).
pub(crate) const SAME_SHAPE: &[&str] = &[
    "iter",
    "collect",
    "iter_mut",
    "into_iter",
    "clone",
    "to_vec",
    "to_owned",
    "as_slice",
    "as_mut_slice",
    "as_ref",
    "as_mut",
    "as_deref",
    "as_deref_mut",
    "copied",
    "cloned",
    "rev",
    "skip",
    "take",
    "step_by",
    "by_ref",
    "unwrap",
    "expect",
    "unwrap_or_default",
    "borrow",
    "borrow_mut",
    "into_boxed_slice",
    "into_vec",
    "cycle",
];

/// Methods returning one element of the receiver (wrapped in `Option` or a
/// reference, which shapes do not distinguish).
pub(crate) const ELEMENT: &[&str] = &[
    "first",
    "last",
    "get",
    "get_mut",
    "first_mut",
    "last_mut",
    "pop",
    "next",
    "next_back",
    "nth",
    "nth_back",
    "swap_remove",
    "remove",
];

/// Methods storing their last argument as an element of the receiver.
pub(crate) const STORE_ELEMENT: &[&str] = &[
    "push",
    "insert",
    "resize",
    "fill",
    "push_back",
    "push_front",
];

/// Methods storing the elements of their argument into the receiver.
pub(crate) const STORE_ELEMENTS: &[&str] = &[
    "extend",
    "extend_from_slice",
    "append",
    "copy_from_slice",
    "clone_from_slice",
    "swap_with_slice",
];

/// Methods returning a container of pieces of the receiver.
pub(crate) const SUBSLICES: &[&str] = &[
    "windows",
    "chunks",
    "chunks_exact",
    "rchunks",
    "rchunks_exact",
    "chunks_mut",
    "chunks_exact_mut",
    "split",
    "split_mut",
];

/// Iterator reductions whose result is one element (`sum::<f64>()`).
pub(crate) const REDUCE: &[&str] = &["sum", "product"];

/// Macros the macro can see through, and how their arguments look.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum MacroKind {
    /// `vec![a, b]`, `vec![x; n]`.
    Vec,
    /// Comma-separated expressions (format strings are literals): print,
    /// format, write, assert families, `dbg!`.
    Exprs,
    /// Diverges after formatting its arguments: `panic!`, `unreachable!`...
    Diverging,
    /// Arguments are not expressions and hold no values deltad must see:
    /// `matches!`, `cfg!`, `stringify!`, `concat!`, `line!`...
    Opaque,
    /// `deltad::generic!(f(args))`: a call of a function generic over its
    /// number type (another crate's), run on dual values so that its own
    /// arithmetic records the derivative (on the tape); `generic_fwd!`
    /// (`forward`) runs it in forward mode and records one binding.
    Generic { forward: bool },
    /// Another macro used as a condition (of `if`, `while` or a match guard,
    /// also under `!`, `&&` and `||`): a condition carries no derivative, so
    /// the macro runs on the machine values of its comma-separated arguments.
    Condition,
}

pub(crate) fn macro_kind(name: &str) -> Option<MacroKind> {
    Some(match name {
        "vec" => MacroKind::Vec,
        "generic" => MacroKind::Generic { forward: false },
        "generic_fwd" => MacroKind::Generic { forward: true },
        "println" | "print" | "eprintln" | "eprint" | "format" | "write" | "writeln" | "assert"
        | "assert_eq" | "assert_ne" | "debug_assert" | "debug_assert_eq" | "debug_assert_ne"
        | "dbg" | "format_args" => MacroKind::Exprs,
        "panic" | "unreachable" | "todo" | "unimplemented" => MacroKind::Diverging,
        "matches" | "s" | "cfg" | "stringify" | "concat" | "line" | "column" | "file"
        | "module_path" | "env" | "option_env" | "include_str" | "include_bytes" => {
            MacroKind::Opaque
        }
        _ => return None,
    })
}

/// How many values (receiver included) a math method takes.
pub(crate) fn math_arity(name: &str) -> usize {
    match name {
        "clamp" | "mul_add" => 3,
        _ if MULTI_MATH.contains(&name) => 2,
        _ => 1,
    }
}

pub(crate) fn is_math_method(name: &str) -> bool {
    UNARY_MATH.contains(&name) || MULTI_MATH.contains(&name) || name == "sin_cos"
}

/// True for the primitive float type names.
pub(crate) fn is_float_type_name(name: &str) -> bool {
    name == "f64" || name == "f32"
}

/// True for primitive type names whose associated functions are not user code.
pub(crate) fn is_primitive_type_name(name: &str) -> bool {
    matches!(
        name,
        "f64"
            | "f32"
            | "i8"
            | "i16"
            | "i32"
            | "i64"
            | "i128"
            | "isize"
            | "u8"
            | "u16"
            | "u32"
            | "u64"
            | "u128"
            | "usize"
            | "bool"
            | "char"
            | "str"
    )
}

/// nalgebra/ndarray methods whose result is shaped like their receiver.
const ARRAY_SAME_SHAPE: &[&str] = &[
    "view",
    "transpose",
    "t",
    "reversed_axes",
    "normalize",
    "scale",
    "component_mul",
    "component_div",
    "cross",
];

/// nalgebra/ndarray methods whose result is a vector or a matrix, or (for
/// `dot`) a real when both operands are vectors.
const ARRAY_PRODUCTS: &[&str] = &["dot", "tr_mul"];

/// The nalgebra/ndarray methods a differentiated vector or matrix has
/// besides the standard ones (`len`, `iter`, `sum`, `map`, ...): the
/// runtime's twins have their hidden forwarders.
pub(crate) const ARRAY_METHODS: &[&str] = &[
    "dot",
    "norm",
    "norm_squared",
    "magnitude",
    "magnitude_squared",
    "normalize",
    "mean",
    "scale",
    "component_mul",
    "component_div",
    "cross",
    "transpose",
    "tr_mul",
    "t",
    "reversed_axes",
    "nrows",
    "ncols",
    "shape",
    "dim",
];

/// ndarray's methods of a differentiated array besides `ARRAY_METHODS`
/// (element-wise maps, views, slices and reshaping; the runtime's ndarray
/// twins have their forwarders).
pub(crate) const NDARRAY_METHODS: &[&str] = &[
    "mapv",
    "mapv_into",
    "mapv_inplace",
    "view",
    "slice",
    "into_shape_with_order",
];

/// True for a call building a nalgebra or ndarray value (`DVector::from_vec`,
/// `Array1::from`), which cannot hold dual values.
pub(crate) fn builds_array(path: &syn::Path) -> bool {
    let mut segments = path.segments.iter().rev();
    let (Some(_function), Some(ty)) = (segments.next(), segments.next()) else {
        return false;
    };
    crate::types::is_array_type_name(&ty.ident.to_string())
}

/// True for the shape of a nalgebra/ndarray vector or matrix (see
/// `types::shape_of`): arrays of reals, which unlike slices and `Vec`s have
/// arithmetic operators.
pub(crate) fn is_array_shape(shape: &Shape) -> bool {
    match shape {
        Shape::Elems(inner) => matches!(**inner, Shape::Real) || is_array_shape(inner),
        _ => false,
    }
}

/// The shape of arithmetic on arrays: a matrix if an operand may be one,
/// else a vector. The analysis cannot tell a matrix-vector product from a
/// matrix-matrix one, so it errs towards more structure: a vector or a real
/// judged a matrix only loses fusion (indexing it gives a value judged a
/// vector, never a real, so it is never put into fused scalar code).
pub(crate) fn array_result<'a>(operands: impl IntoIterator<Item = &'a Shape>) -> Shape {
    let matrix = operands
        .into_iter()
        .any(|shape| matches!(shape, Shape::Elems(inner) if is_array_shape(inner)));
    if matrix {
        Shape::elems(Shape::elems(Shape::Real))
    } else {
        Shape::elems(Shape::Real)
    }
}

/// The shape of a nalgebra/ndarray method's result, for methods with an
/// array receiver or argument.
pub(crate) fn array_method(name: &str, receiver: &Shape, args: &[Shape]) -> Option<Shape> {
    let arrays = std::iter::once(receiver).chain(args).any(is_array_shape);
    if !arrays {
        return None;
    }
    if ARRAY_SAME_SHAPE.contains(&name) {
        return Some(array_result(std::iter::once(receiver).chain(args)));
    }
    // (A vector or a matrix, by the slice or the shape: judged a matrix.)
    if name == "slice" || name == "into_shape_with_order" {
        return Some(Shape::elems(Shape::elems(Shape::Real)));
    }
    if ARRAY_PRODUCTS.contains(&name) {
        let vector = |shape: &Shape| *shape == Shape::elems(Shape::Real);
        if name == "dot" && vector(receiver) && args.iter().all(vector) {
            return Some(Shape::Real);
        }
        return Some(Shape::elems(Shape::elems(Shape::Real)));
    }
    None
}

/// Methods with a closure argument that the analysis follows (see
/// `activity.rs`), and other standard methods a dual value or a collection
/// of them can have.
const OTHER_LIBRARY: &[&str] = &[
    "map",
    "for_each",
    "filter",
    "take_while",
    "skip_while",
    "filter_map",
    "flat_map",
    "map_while",
    "inspect",
    "find",
    "max_by_key",
    "min_by_key",
    "any",
    "all",
    "position",
    "rposition",
    "sort_by_key",
    "sort_unstable_by_key",
    "is_some_and",
    "retain",
    "max_by",
    "min_by",
    "reduce",
    "sort_by",
    "sort_unstable_by",
    "and_then",
    "unwrap_or_else",
    "or_else",
    "map_or_else",
    "fold",
    "map_or",
    "unwrap_or",
    "enumerate",
    "zip",
    "chain",
    "flatten",
    "split_at",
    "split_at_mut",
    "split_first",
    "split_last",
    "max",
    "min",
    "swap",
    "reverse",
    "sort",
    "sort_unstable",
    "truncate",
    "clear",
    "drain",
    "dedup",
    "last",
    "iter",
    "value",
    "to_prim",
    "into",
    "try_into",
    "from",
    "as_slice",
    "concat",
    "join",
    "or",
    "ok_or",
    "ok",
    "err",
    "take",
    "replace",
    "get_or_insert_with",
    "entry",
    "keys",
    "values",
    "len",
    "sum",
    "product",
    "collect",
    "unzip",
    "partition",
    "scan",
    "peekable",
    "peek",
    "windows",
    "chunks",
    "copied",
    "cloned",
    "rev",
    "skip",
    "step_by",
    "first",
    "split_off",
    "resize_with",
    "extend_from_within",
    "rotate_left",
    "rotate_right",
    "fill_with",
    "binary_search_by",
];

/// True for the standard library methods deltad knows (anything else called
/// on a differentiated value is taken to be a `#[differentiate]` method).
pub(crate) fn is_library_method(name: &str) -> bool {
    is_math_method(name)
        || [
            INACTIVE_RESULT,
            SAME_SHAPE,
            ELEMENT,
            STORE_ELEMENT,
            STORE_ELEMENTS,
            SUBSLICES,
            REDUCE,
            OTHER_LIBRARY,
        ]
        .iter()
        .any(|list| list.contains(&name))
}
