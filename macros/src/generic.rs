//! Functions generic over their number type, as num-traits code is written
//! (`fn f<T: Float + FromPrimitive>(x: &[T], a: T) -> T`): the function is
//! emitted as written, and its derivatives are made of a copy written for
//! `f64`, so they take `f64` arguments (`f::grad(&x, 2.0)`); with
//! `#[differentiate(f32)]`, for `f32` (below, `f64` stands for either).
//!
//! The copy replaces each such type parameter by `f64`, and the associated
//! functions generic code calls on it by what they are for `f64`: constants
//! (`T::one()` is `1.0`, `T::PI()` is `std::f64::consts::PI`,
//! `T::epsilon()` is `f64::EPSILON`), conversions into the number
//! (`T::from_f64(c).unwrap()`, `T::from(n).unwrap()`: `(c as f64)`, an
//! identity or an integer's conversion, so a differentiated value converted
//! keeps its derivative) and math functions (`T::sin(x)` is `f64::sin(x)`).
//! Everything else in the body is used as written.

use proc_macro2::{Delimiter, Group, Ident, Spacing, Span, TokenStream, TokenTree};
use quote::{quote_spanned, ToTokens};
use syn::{GenericParam, ItemFn, Type, TypeParamBound, WherePredicate};

use crate::errors::Errors;

/// The copy of `function` (a free function, or a method as one: `item`
/// says which, for the message) its derivatives are made of: written for
/// the float `float` chooses (`f64` by default) where `function` is generic
/// over its number type, and its conversions into the float written as
/// casts (`conversions.rs`); with how many number type parameters it had.
/// `None` where the copy cannot be made (the error reported).
pub(crate) fn derivative_copy(
    function: &ItemFn,
    float: Option<&Ident>,
    item: &str,
    errors: &Errors,
) -> Option<(ItemFn, usize)> {
    let params = number_params(&function.sig);
    let mut copy = if params.is_empty() {
        if let Some(float) = float {
            errors.at(float, format!("`{float}` chooses the float the derivatives of a {item} generic over its number type take; this {item} is not generic: write it for `{float}`"));
        }
        function.clone()
    } else {
        let default = Ident::new("f64", Span::call_site());
        match for_float(function, &params, float.unwrap_or(&default)) {
            Ok(copy) => copy,
            Err(error) => {
                errors.at_span(error.span(), error.to_string());
                return None;
            }
        }
    };
    crate::conversions::as_casts(&mut copy);
    Some((copy, params.len()))
}

/// The type parameters of `sig` bounded (inline or in the `where` clause)
/// by a number trait of num-traits, simba or nalgebra.
fn number_params(sig: &syn::Signature) -> Vec<Ident> {
    sig.generics
        .params
        .iter()
        .filter_map(|param| match param {
            GenericParam::Type(ty) if is_number_type_param(sig, ty) => Some(ty.ident.clone()),
            _ => None,
        })
        .collect()
}

/// True if the type parameter `ty` is bounded by a number trait.
fn is_number_type_param(sig: &syn::Signature, ty: &syn::TypeParam) -> bool {
    let numeric = |bounds: &syn::punctuated::Punctuated<TypeParamBound, syn::Token![+]>| {
        bounds.iter().any(|bound| match bound {
            TypeParamBound::Trait(t) => t
                .path
                .segments
                .last()
                .is_some_and(|s| NUMBER_TRAITS.contains(&s.ident.to_string().as_str())),
            _ => false,
        })
    };
    let in_where = sig.generics.where_clause.iter().any(|clause| {
        clause.predicates.iter().any(|predicate| match predicate {
            WherePredicate::Type(p) => bounds_param(&p.bounded_ty, &ty.ident) && numeric(&p.bounds),
            _ => false,
        })
    });
    numeric(&ty.bounds) || in_where
}

const NUMBER_TRAITS: &[&str] = &[
    "Float",
    "FloatCore",
    "FloatConst",
    "Real",
    "RealField",
    "ComplexField",
    "Num",
    "NumCast",
    "NumAssign",
    "NumOps",
    "FromPrimitive",
    "Signed",
];

fn bounds_param(ty: &Type, param: &Ident) -> bool {
    matches!(ty, Type::Path(path) if path.qself.is_none() && path.path.is_ident(param))
}

/// The copy of `function` written for `float` (`f64` or `f32`; see the
/// module's docs).
fn for_float(function: &ItemFn, params: &[Ident], float: &Ident) -> syn::Result<ItemFn> {
    let mut copy = function.clone();
    let generics = &mut copy.sig.generics;
    generics.params = generics
        .params
        .iter()
        .filter(|p| !matches!(p, GenericParam::Type(ty) if params.contains(&ty.ident)))
        .cloned()
        .collect();
    if let Some(clause) = &mut generics.where_clause {
        clause.predicates = clause
            .predicates
            .iter()
            .filter(|p| {
                !matches!(p, WherePredicate::Type(t)
                    if params.iter().any(|param| bounds_param(&t.bounded_ty, param)))
            })
            .cloned()
            .collect();
        if clause.predicates.is_empty() {
            generics.where_clause = None;
        }
    }
    if generics.params.is_empty() {
        generics.lt_token = None;
        generics.gt_token = None;
    }
    syn::parse2(substitute(copy.into_token_stream(), params, float))
}

/// The tokens with every number type parameter written for `float`.
fn substitute(tokens: TokenStream, params: &[Ident], float: &Ident) -> TokenStream {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = TokenStream::new();
    let mut i = 0;
    while i < trees.len() {
        match &trees[i] {
            TokenTree::Group(group) => {
                let mut new =
                    Group::new(group.delimiter(), substitute(group.stream(), params, float));
                new.set_span(group.span());
                out.extend([TokenTree::Group(new)]);
                i += 1;
            }
            // (Not a name inside a path, `a::T`, or a field, `x.T`.)
            TokenTree::Ident(ident)
                if params.contains(ident) && !follows_path_or_dot(&trees[..i]) =>
            {
                let (tokens, used) = associated(&trees[i..], ident.span(), params, float);
                out.extend(tokens);
                i += used;
            }
            tree => {
                out.extend([tree.clone()]);
                i += 1;
            }
        }
    }
    out
}

/// True if `before` ends with `::` or `.`.
fn follows_path_or_dot(before: &[TokenTree]) -> bool {
    let punct = |tree: Option<&TokenTree>, c: char| matches!(tree, Some(TokenTree::Punct(p)) if p.as_char() == c);
    let n = before.len();
    punct(before.last(), '.')
        || (n >= 2 && punct(before.get(n - 1), ':') && punct(before.get(n - 2), ':'))
}

/// `T` at the start of `trees` (followed by what it is followed by): the
/// tokens for `float` and how many trees they replace.
fn associated(
    trees: &[TokenTree],
    span: Span,
    params: &[Ident],
    float: &Ident,
) -> (TokenStream, usize) {
    let float_type = Ident::new(&float.to_string(), span).into_token_stream();
    let (Some(name), Some(args)) = (path_name(trees), trees.get(4)) else {
        return (float_type, 1);
    };
    let args = match args {
        TokenTree::Group(g) if g.delimiter() == Delimiter::Parenthesis => g.stream(),
        _ => return (float_type, 1),
    };
    let name_text = name.to_string();
    if args.is_empty() {
        if let Some(constant) = constant(&name_text, span, float) {
            return (constant, 5);
        }
    }
    if CONVERSIONS.contains(&name_text.as_str()) && !args.is_empty() {
        let args = substitute(args, params, float);
        // `T::from_f64(c).unwrap()` (or `.expect(..)`): the number itself.
        if unwrapped(&trees[5..]) {
            let converted = quote_spanned!(span=> ((#args) as #float_type));
            return (converted, 8);
        }
        let trait_name = if name_text == "from" {
            quote_spanned!(span=> NumCast)
        } else {
            quote_spanned!(span=> FromPrimitive)
        };
        let call =
            quote_spanned!(span=> <#float_type as ::deltad::num_traits::#trait_name>::#name(#args));
        return (call, 5);
    }
    (float_type, 1)
}

/// The identifier `name` in `T :: name`, if the trees start so.
fn path_name(trees: &[TokenTree]) -> Option<&Ident> {
    let colon = |tree: Option<&TokenTree>, spacing: Spacing| matches!(tree, Some(TokenTree::Punct(p)) if p.as_char() == ':' && p.spacing() == spacing);
    if !(colon(trees.get(1), Spacing::Joint) && colon(trees.get(2), Spacing::Alone)) {
        return None;
    }
    match trees.get(3) {
        Some(TokenTree::Ident(name)) => Some(name),
        _ => None,
    }
}

/// True if the trees start with `.unwrap()` or `.expect(..)`.
fn unwrapped(trees: &[TokenTree]) -> bool {
    matches!(
        (trees.first(), trees.get(1), trees.get(2)),
        (Some(TokenTree::Punct(dot)), Some(TokenTree::Ident(method)), Some(TokenTree::Group(g)))
            if dot.as_char() == '.'
                && (method == "unwrap" || method == "expect")
                && g.delimiter() == Delimiter::Parenthesis
    )
}

/// The conversions into the number: `T::from(n)`, `T::from_f64(c)`, ...
const CONVERSIONS: &[&str] = &[
    "from",
    "from_f64",
    "from_f32",
    "from_i8",
    "from_i16",
    "from_i32",
    "from_i64",
    "from_i128",
    "from_isize",
    "from_u8",
    "from_u16",
    "from_u32",
    "from_u64",
    "from_u128",
    "from_usize",
];

/// `T::name()` for a constant of num-traits (`Zero`, `One`, `Float`,
/// `FloatConst`) or simba (`RealField`'s lowercase constants), for `float`.
fn constant(name: &str, span: Span, float: &Ident) -> Option<TokenStream> {
    let tokens = |text: &str| -> TokenStream {
        let parsed: TokenStream = text.parse().unwrap_or_default();
        respan(parsed, span)
    };
    let consts = |name: &str| tokens(&format!("::std::{float}::consts::{name}"));
    Some(match name {
        "zero" => tokens("0.0"),
        "one" => tokens("1.0"),
        "neg_zero" => tokens("(-0.0)"),
        "epsilon" => tokens(&format!("{float}::EPSILON")),
        "max_value" => tokens(&format!("{float}::MAX")),
        "min_value" => tokens(&format!("{float}::MIN")),
        "min_positive_value" => tokens(&format!("{float}::MIN_POSITIVE")),
        "infinity" => tokens(&format!("{float}::INFINITY")),
        "neg_infinity" => tokens(&format!("{float}::NEG_INFINITY")),
        "nan" => tokens(&format!("{float}::NAN")),
        "E" | "FRAC_1_PI" | "FRAC_1_SQRT_2" | "FRAC_2_PI" | "FRAC_2_SQRT_PI" | "FRAC_PI_2"
        | "FRAC_PI_3" | "FRAC_PI_4" | "FRAC_PI_6" | "FRAC_PI_8" | "LN_10" | "LN_2" | "LOG10_E"
        | "LOG2_E" | "PI" | "SQRT_2" | "TAU" | "LOG10_2" | "LOG2_10" => consts(name),
        "pi" => consts("PI"),
        "two_pi" => consts("TAU"),
        "e" | "frac_pi_2" | "frac_pi_3" | "frac_pi_4" | "frac_pi_6" | "frac_pi_8" | "frac_1_pi"
        | "frac_2_pi" | "frac_2_sqrt_pi" | "log2_e" | "log10_e" | "ln_2" | "ln_10" => {
            consts(&name.to_uppercase())
        }
        _ => return None,
    })
}

fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tree| {
            if let TokenTree::Group(g) = &tree {
                let mut new = Group::new(g.delimiter(), respan(g.stream(), span));
                new.set_span(span);
                return TokenTree::Group(new);
            }
            tree.set_span(span);
            tree
        })
        .collect()
}
