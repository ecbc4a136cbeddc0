//! Accumulates every error of one expansion so the user sees them all in one
//! compile, each at its own span (as serde's `Ctxt` does).

use std::cell::RefCell;

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;

#[derive(Default)]
pub(crate) struct Errors {
    errors: RefCell<Vec<syn::Error>>,
}

impl Errors {
    /// Reports `message` at the tokens of `at`.
    pub(crate) fn at(&self, at: impl ToTokens, message: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(at, message));
    }

    /// Reports `message` at `span`.
    pub(crate) fn at_span(&self, span: Span, message: impl std::fmt::Display) {
        self.push(syn::Error::new(span, message));
    }

    pub(crate) fn push(&self, error: syn::Error) {
        self.errors.borrow_mut().push(error);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.errors.borrow().is_empty()
    }

    /// All errors as `compile_error!` invocations.
    pub(crate) fn to_compile_errors(&self) -> TokenStream {
        self.errors
            .borrow()
            .iter()
            .map(syn::Error::to_compile_error)
            .collect()
    }
}

/// The message for a differentiated value cast to the other float type.
pub(crate) fn other_precision_cast(precision: &str, other: &str) -> String {
    format!(
        "deltad cannot convert a differentiated `{precision}` to `{other}`: a function is differentiated in one precision; keep this value in `{precision}` (and convert the function's result with `as` where you call it), or mark the inputs it depends on #[no_grad]"
    )
}
