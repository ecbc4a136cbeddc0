//! Values whose form alone proves they are not a real: the tail of a
//! function declared to return one that is a collection or a tuple by its
//! syntax, not by the analysis (whose shapes of library types, nalgebra's
//! and ndarray's, are not proof of a type error).

use syn::{Expr, ItemFn};

use crate::methods::is_float_type_name;

/// The value of `function`'s body if its form proves it is not a real
/// (a collection or tuple literal, `.collect::<Vec<..>>()`, arithmetic on a
/// parameter declared as a slice, `Vec` or array, which no crate can give an
/// `Add`): rustc rejects the function itself there.
pub(crate) fn tail_not_a_real(function: &ItemFn) -> Option<&Expr> {
    let Some(syn::Stmt::Expr(tail, None)) = function.block.stmts.last() else {
        return None;
    };
    not_a_real(tail, function).then_some(tail)
}

fn not_a_real(expr: &Expr, function: &ItemFn) -> bool {
    match expr {
        Expr::Paren(inner) => not_a_real(&inner.expr, function),
        Expr::Array(_) | Expr::Repeat(_) => true,
        Expr::Tuple(tuple) => tuple.elems.len() != 1 || tuple.elems.trailing_punct(),
        Expr::Macro(mac) => mac.mac.path.is_ident("vec"),
        Expr::MethodCall(call) => {
            call.method == "collect"
                && call.turbofish.as_ref().is_some_and(|turbofish| {
                    turbofish.args.iter().any(|arg| {
                        matches!(arg, syn::GenericArgument::Type(syn::Type::Path(path))
                            if path.path.segments.last().is_some_and(|s| s.ident == "Vec"))
                    })
                })
        }
        Expr::Binary(binary) => {
            use syn::BinOp::*;
            matches!(binary.op, Add(_) | Sub(_) | Mul(_) | Div(_) | Rem(_))
                && (buffer_param(&binary.left, function) || buffer_param(&binary.right, function))
        }
        _ => false,
    }
}

/// True if `expr` names a parameter declared as a slice, a `Vec` or an
/// array of `f64`/`f32` (or a reference to one).
fn buffer_param(expr: &Expr, function: &ItemFn) -> bool {
    let Expr::Path(path) = expr else {
        return false;
    };
    let Some(name) = path.path.get_ident() else {
        return false;
    };
    function.sig.inputs.iter().any(|input| match input {
        syn::FnArg::Typed(typed) => {
            matches!(&*typed.pat, syn::Pat::Ident(pat) if pat.ident == *name)
                && buffer_of_floats(&typed.ty)
        }
        syn::FnArg::Receiver(_) => false,
    })
}

fn buffer_of_floats(ty: &syn::Type) -> bool {
    let float = |ty: &syn::Type| {
        matches!(ty, syn::Type::Path(path)
            if path.path.get_ident().is_some_and(|name| is_float_type_name(&name.to_string())))
    };
    match ty {
        syn::Type::Reference(reference) => buffer_of_floats(&reference.elem),
        syn::Type::Slice(slice) => float(&slice.elem),
        syn::Type::Array(array) => float(&array.elem),
        syn::Type::Path(path) => path.path.segments.last().is_some_and(|segment| {
            segment.ident == "Vec"
                && matches!(&segment.arguments, syn::PathArguments::AngleBracketed(args)
                    if args.args.len() == 1
                        && matches!(&args.args[0], syn::GenericArgument::Type(elem) if float(elem)))
        }),
        _ => false,
    }
}
