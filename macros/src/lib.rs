//! Procedural macros of [deltad](https://docs.rs/deltad). Use them through
//! the `deltad` crate, which documents them.

mod analyze;
#[cfg(test)]
mod big_function;
mod check;
mod conversions;
mod derive;
mod emit;
mod errors;
mod expand;
mod functions;
mod generic;
mod impl_block;
mod ir;
mod macro_args;
mod methods;
mod names;
mod options;
mod relocate;
mod shape;
mod signature;
mod syntax;
mod tape;
mod types;
mod value_kind;

use proc_macro::TokenStream;

/// Generates reverse-mode gradients next to a numeric function.
///
/// ```
/// use deltad::differentiate;
///
/// #[differentiate]
/// fn norm_squared(v: &[f64]) -> f64 {
///     let mut s = 0.0;
///     for x in v {
///         s += x * x;
///     }
///     s
/// }
///
/// let (value, g) = norm_squared::value_and_grad(&[1.0, 2.0]);
/// assert_eq!(value, 5.0);
/// assert_eq!(g.v, vec![2.0, 4.0]);
/// ```
///
/// The function is emitted unchanged (minus `#[no_grad]` markers on
/// parameters). Next to it, a module of the same name holds `grad`,
/// `value_and_grad` and `struct Grad`; the crate documentation of `deltad`
/// describes them, the supported code, and the errors.
#[proc_macro_attribute]
pub fn differentiate(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::differentiate(attr.into(), item.into()).into()
}

/// Makes a struct or enum with real fields differentiable: usable as a
/// parameter, local or return value of `#[differentiate]` functions, with its
/// gradient coming back in the same type. Fields marked `#[no_grad]` are
/// constant data. See the `deltad` crate documentation.
#[proc_macro_derive(Differentiable, attributes(no_grad))]
pub fn derive_differentiable(input: TokenStream) -> TokenStream {
    derive::derive(input.into()).into()
}
