//! `s![..]` (ndarray's slicing macro) on a differentiated array: the
//! integer literals in it are typed `isize` before the analyses run. The
//! twins' `slice` method returns a vector or a matrix by the slice's output
//! dimension, which rustc cannot compute from an index of a still-unsuffixed
//! integer type (`s![1, ..]`) before the method called on the result needs
//! it; on ndarray's own arrays, whose methods do not depend on the
//! dimension, the literal defaults to `i32` and gives the same slice.

use proc_macro2::{Group, Literal, TokenStream, TokenTree};
use syn::visit_mut::VisitMut;

pub(crate) fn type_slice_indices(body: &mut syn::Block) {
    TypeIndices.visit_block_mut(body);
}

struct TypeIndices;

impl VisitMut for TypeIndices {
    fn visit_macro_mut(&mut self, mac: &mut syn::Macro) {
        if mac.path.is_ident("s") {
            mac.tokens = typed(mac.tokens.clone());
        }
    }
}

fn typed(tokens: TokenStream) -> TokenStream {
    tokens
        .into_iter()
        .map(|token| match token {
            TokenTree::Literal(literal) => {
                let text = literal.to_string();
                let digits =
                    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit() || b == b'_');
                match text.replace('_', "").parse::<isize>() {
                    Ok(value) if digits => {
                        let mut typed = Literal::isize_suffixed(value);
                        typed.set_span(literal.span());
                        TokenTree::Literal(typed)
                    }
                    _ => TokenTree::Literal(literal),
                }
            }
            TokenTree::Group(group) => {
                let mut inner = Group::new(group.delimiter(), typed(group.stream()));
                inner.set_span(group.span());
                TokenTree::Group(inner)
            }
            other => other,
        })
        .collect()
}
