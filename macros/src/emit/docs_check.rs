//! Every item a user can name in a generated module carries a doc comment,
//! so the user's own rustdoc explains what `grad`, `Grad`, `jvp`, ... compute
//! for their function. (`missing_docs` cannot check this: rustc does not lint
//! items that come from a macro expansion.)

use quote::quote;
use syn::{Attribute, Item, ItemMod, UseTree};

fn has_doc(attrs: &[Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("doc") && matches!(a.meta, syn::Meta::NameValue(_)))
}

fn is_hidden(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("doc")
            && a.parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "hidden")
    })
}

/// The generated module `name` in the expansion of `item`.
fn generated_module(item: proc_macro2::TokenStream, name: &str) -> ItemMod {
    let expansion = crate::expand::differentiate(quote!(), item);
    let file: syn::File = syn::parse2(expansion).expect("the expansion parses");
    file.items
        .into_iter()
        .find_map(|item| match item {
            Item::Mod(m) if m.ident == name => Some(m),
            _ => None,
        })
        .expect("the generated module")
}

/// The names `(defined, exported)` the module re-exports without hiding.
fn public_exports(module: &ItemMod) -> Vec<(String, String)> {
    let mut exports = Vec::new();
    for item in &module.content.as_ref().expect("inline module").1 {
        let Item::Use(u) = item else { continue };
        if is_hidden(&u.attrs) {
            continue;
        }
        let mut tree = &u.tree;
        while let UseTree::Path(p) = tree {
            tree = &p.tree;
        }
        if let UseTree::Rename(r) = tree {
            exports.push((r.ident.to_string(), r.rename.to_string()));
        }
    }
    exports
}

/// Asserts that every publicly exported item of the generated module (and
/// every field of its `Grad`) is documented; returns the exported names.
fn assert_documented(item: proc_macro2::TokenStream, name: &str) -> Vec<String> {
    let module = generated_module(item, name);
    assert!(has_doc(&module.attrs), "module `{name}` has no doc comment");
    let inner = module
        .content
        .as_ref()
        .unwrap()
        .1
        .iter()
        .find_map(|item| match item {
            Item::Mod(m) if m.ident == crate::names::items::IMPL_MODULE => Some(m),
            _ => None,
        });
    let definitions = &inner
        .expect("the implementation module")
        .content
        .as_ref()
        .unwrap()
        .1;
    let mut names = Vec::new();
    for (defined, exported) in public_exports(&module) {
        let found = definitions.iter().find_map(|item| match item {
            Item::Fn(f) if f.sig.ident == defined => Some(has_doc(&f.attrs)),
            Item::Struct(s) if s.ident == defined => {
                for field in &s.fields {
                    assert!(
                        has_doc(&field.attrs),
                        "`{name}::{exported}` field {:?} has no doc comment",
                        field.ident
                    );
                }
                Some(has_doc(&s.attrs))
            }
            _ => None,
        });
        assert_eq!(found, Some(true), "`{name}::{exported}` has no doc comment");
        names.push(exported);
    }
    names
}

#[test]
fn generated_items_are_documented() {
    let names = assert_documented(
        quote! {
            pub fn loss(w: &[f64], b: f64, #[no_grad] x: &[f64]) -> f64 {
                let mut s = 0.0;
                for i in 0..w.len() { s += (w[i] * x[i] + b).powi(2); }
                s
            }
        },
        "loss",
    );
    for expected in [
        "Grad",
        "grad",
        "value_and_grad",
        "grad_into",
        "vjp",
        "jacobian",
        "jacobian_rev",
        "jacobian_fwd",
        "jacobian_pattern",
        "sparse_jacobian",
        "jvp",
        "jvps",
        "hvp",
        "hvps",
        "grad_and_hvp",
        "hessian",
        "hessian_diagonal",
        "laplacian",
        "hessian_pattern",
        "sparse_hessian",
        "check_derivatives",
        "tape_stats",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "`{expected}` is not exported: {names:?}"
        );
    }

    // Structured outputs: no grad/value_and_grad, but vjp and jacobian.
    let names = assert_documented(
        quote! { pub fn pair(x: f64, y: &mut [f64]) -> (f64, f64) { y[0] *= x; (x.sin(), x.cos()) } },
        "pair",
    );
    assert!(names.iter().any(|n| n == "jacobian") && !names.iter().any(|n| n == "grad"));
}
