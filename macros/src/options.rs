//! The arguments of `#[differentiate(...)]`.
//!
//! * `custom = path`: the function is a primitive with its own derivative
//!   (paper §8.2): `path` takes the function's arguments and returns its
//!   gradient (`Grad`) for a real output, or one `Grad` per real of the
//!   output (the rows of the Jacobian) for a structured output. Calls record
//!   one binding per output real, whose partial derivatives are those rows.
//! * `compiled`: the function must take the compiled path (a generated
//!   adjoint); anything that would keep it on the tape is a compile error
//!   at the construct.
//! * `tape`: the function takes the tape path even if it is in the compiled
//!   subset (for comparing the two, and for `tape_graph`-centred work).
//! * `f32` (or `f64`, the default): for a function generic over its number
//!   type, the float its derivatives take.

use proc_macro2::TokenStream;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Ident, Path, Token};

use crate::errors::Errors;

#[derive(Default, Clone)]
pub(crate) struct Options {
    /// The derivative function of a custom primitive.
    pub custom: Option<Path>,
    /// Which engine the function must take, if the user chose.
    pub path: Option<(EnginePath, Ident)>,
    /// The float the derivatives of a function generic over its number
    /// type take (`f32` or `f64`), if the user chose.
    pub float: Option<Ident>,
}

/// The engine a function's derivatives run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EnginePath {
    /// Generated forward pass and adjoint.
    Compiled,
    /// The recording pass and the tape.
    Tape,
}

/// `name = value` or a flag `name`.
struct Setting {
    name: Ident,
    value: Option<Path>,
}

impl Parse for Setting {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let name: Ident = input.parse()?;
        if !input.peek(Token![=]) {
            return Ok(Setting { name, value: None });
        }
        input.parse::<Token![=]>()?;
        let value: Path = input.parse()?;
        Ok(Setting {
            name,
            value: Some(value),
        })
    }
}

impl Options {
    /// Parses the attribute's arguments, reporting problems to `errors`.
    pub(crate) fn parse(tokens: TokenStream, errors: &Errors) -> Options {
        let mut options = Options::default();
        if tokens.is_empty() {
            return options;
        }
        let parser = Punctuated::<Setting, Token![,]>::parse_terminated;
        let settings = match syn::parse::Parser::parse2(parser, tokens.clone()) {
            Ok(settings) => settings,
            Err(_) => {
                errors.at(
                    &tokens,
                    "#[differentiate] takes no arguments, or `custom = path::to::derivative`, `compiled`, `tape`, `f32`, `f64`",
                );
                return options;
            }
        };
        for setting in settings {
            let name = setting.name.to_string();
            match (name.as_str(), setting.value) {
                ("custom", Some(value)) if options.custom.is_none() => options.custom = Some(value),
                ("custom", Some(_)) => errors.at(&setting.name, "`custom` is given twice"),
                ("compiled" | "tape", None) if options.path.is_none() => {
                    let path = if name == "compiled" {
                        EnginePath::Compiled
                    } else {
                        EnginePath::Tape
                    };
                    options.path = Some((path, setting.name));
                }
                ("compiled" | "tape", None) => errors.at(
                    &setting.name,
                    "choose one of `compiled` and `tape`, once",
                ),
                ("f32" | "f64", None) if options.float.is_none() => {
                    options.float = Some(setting.name)
                }
                ("f32" | "f64", None) => errors.at(
                    &setting.name,
                    "choose one of `f32` and `f64`, once",
                ),
                ("custom", None) => errors.at(
                    &setting.name,
                    "`custom` needs the derivative function: `custom = path::to::derivative`",
                ),
                (_, value) => errors.at(
                    &setting.name,
                    format!(
                        "unknown #[differentiate] argument `{}{}`: the arguments are `custom = path::to::derivative`, `compiled` (a compile error unless the function takes the compiled path), `tape` (use the tape even if the compiled path would do) and `f32`/`f64` (the float the derivatives of a function generic over its number type take)",
                        setting.name,
                        if value.is_some() { " = .." } else { "" }
                    ),
                ),
            }
        }
        options
    }
}
