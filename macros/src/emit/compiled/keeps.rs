//! Whether a forward pass keeps anything for its adjoint: the macro sees
//! its own pushes, but not what the forward passes of its callees keep,
//! which their own expansions know. So each compiled function states it in
//! consts next to its passes, and a caller's consts read its callees'.
//!
//! A function that keeps nothing lets `grad` run the adjoint alone (the
//! value is not needed, and the adjoint reads only the arguments): see
//! `Generator::adjoint_alone`.
//!
//! Recursion (direct or through other functions) would make the consts
//! refer to themselves, which Rust rejects; so they come in levels:
//! `__KEEPS_0` is true wherever a callee's forward pass gets the record,
//! and `__KEEPS_k` reads the callees' `__KEEPS_{k-1}`. Level k is exact for
//! calls nested k deep and errs towards "keeps something" below (always
//! safe: the forward pass then runs before the adjoint, as without it).

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::{format_ident, quote};
use syn::Ident;

/// The number of levels of `__KEEPS_k` consts: calls nested this deep are
/// seen through.
const LEVELS: usize = 4;

/// The name of the const the wrappers read: the deepest level.
pub(crate) fn keeps_const() -> Ident {
    level_const(LEVELS - 1)
}

fn level_const(level: usize) -> Ident {
    format_ident!("__DELTAD_KEEPS_{}", level)
}

/// The name a function's module exports level `level` under, for callers.
fn level_export(level: usize) -> Ident {
    format_ident!("__KEEPS_{}", level)
}

/// What a forward pass keeps for its adjoint.
pub(crate) enum Keeps {
    /// Nothing: it never names its record.
    Nothing,
    /// Something of its own (pushes, reserved room, snapshots).
    Something,
    /// Only what the forward passes of these callees keep, which their
    /// consts say.
    IfCallees(Vec<syn::Path>),
}

impl Keeps {
    /// What the forward pass `forward` keeps, its record named `record`.
    /// `paths_resolve`: the paths of its callees mean at the module's level
    /// what they mean in the body (which declares no items: no `use` in a
    /// block that the consts could not see).
    pub(crate) fn of(forward: &TokenStream, record: &Ident, paths_resolve: bool) -> Keeps {
        let mut uses = Uses::default();
        uses.scan(forward.clone(), &record.to_string());
        if uses.callees.is_empty() && uses.own == 0 {
            return Keeps::Nothing;
        }
        if uses.own > 0 || !paths_resolve {
            return Keeps::Something;
        }
        let mut paths: Vec<syn::Path> = Vec::new();
        for path in uses.callees {
            let text = quote!(#path).to_string();
            if !paths.iter().any(|p| quote!(#p).to_string() == text) {
                paths.push(path);
            }
        }
        Keeps::IfCallees(paths)
    }

    /// True if the forward pass surely keeps nothing.
    pub(crate) fn nothing(&self) -> bool {
        matches!(self, Keeps::Nothing)
    }

    /// The consts `__DELTAD_KEEPS_0..` of a function whose forward pass
    /// keeps `self`.
    pub(crate) fn consts(&self) -> TokenStream {
        let consts = (0..LEVELS).map(|level| {
            let name = level_const(level);
            let value = match self {
                Keeps::Nothing => quote!(false),
                Keeps::Something => quote!(true),
                Keeps::IfCallees(_) if level == 0 => quote!(true),
                Keeps::IfCallees(paths) => {
                    let below = level_export(level - 1);
                    let reads = paths.iter().map(|path| quote!(#path::#below));
                    quote!(false #(|| #reads)*)
                }
            };
            quote! {
                #[doc(hidden)]
                pub const #name: bool = #value;
            }
        });
        quote!(#(#consts)*)
    }
}

/// The consts of a function whose forward pass is not generated as code
/// (the tape's bridge): it keeps something.
pub(crate) fn keeps_something() -> TokenStream {
    Keeps::Something.consts()
}

/// The exports of the consts from a function's module (`impl_module`).
pub(crate) fn exports(impl_module: &Ident) -> TokenStream {
    let exports = (0..LEVELS).map(|level| {
        let (name, export) = (level_const(level), level_export(level));
        quote! {
            #[doc(hidden)]
            pub use self::#impl_module::#name as #export;
        }
    });
    quote!(#(#exports)*)
}

/// The consts of a callee whose forward pass keeps nothing, in its
/// module (a derivative's entry: `nested_entries.rs`).
pub(crate) fn exports_nothing() -> TokenStream {
    exports_known(false)
}

/// The consts of a callee whose forward pass may keep something, which
/// the macro cannot see (a function parameter: `functions.rs`).
pub(crate) fn exports_something() -> TokenStream {
    exports_known(true)
}

fn exports_known(keeps: bool) -> TokenStream {
    let exports = (0..LEVELS).map(|level| {
        let export = level_export(level);
        quote! {
            #[doc(hidden)]
            pub const #export: bool = #keeps;
        }
    });
    quote!(#(#exports)*)
}

/// The uses of the record in a forward pass.
#[derive(Default)]
struct Uses {
    /// The callees whose forward pass gets it (`callee::__fwd(&mut *record, ..)`).
    callees: Vec<syn::Path>,
    /// How many other uses.
    own: usize,
}

impl Uses {
    fn scan(&mut self, stream: TokenStream, record: &str) {
        let trees: Vec<TokenTree> = stream.into_iter().collect();
        for (at, tree) in trees.iter().enumerate() {
            match tree {
                TokenTree::Ident(ident) if *ident == record => self.own += 1,
                TokenTree::Group(group) => {
                    let inner: Vec<TokenTree> = group.stream().into_iter().collect();
                    let gives_record = group.delimiter() == Delimiter::Parenthesis
                        && matches!(
                            inner.as_slice(),
                            [TokenTree::Punct(amp), TokenTree::Ident(m), TokenTree::Punct(star), TokenTree::Ident(r), ..]
                                if amp.as_char() == '&' && *m == "mut" && star.as_char() == '*' && *r == record
                        );
                    // (`Record::filled(&mut *rec, ..)` or `scratch`, a new
                    // local buffer, keeps nothing: without a record it is
                    // allocated; nor does `done_with(&mut *rec, v)`, memory
                    // given back, which is then dropped.)
                    let memory_only = ["filled", "scratch", "done_with"];
                    let fills = gives_record
                        && matches!(trees[..at].last(), Some(TokenTree::Ident(f)) if memory_only.iter().any(|m| f == m));
                    match gives_record.then(|| callee_path(&trees[..at])).flatten() {
                        Some(path) => {
                            self.callees.push(path);
                            self.scan(inner[4..].iter().cloned().collect(), record);
                        }
                        None if fills => self.scan(inner[4..].iter().cloned().collect(), record),
                        None => self.scan(group.stream(), record),
                    }
                }
                _ => {}
            }
        }
    }
}

/// The path `p` of a call `p::__fwd` whose tokens `before` ends with.
fn callee_path(before: &[TokenTree]) -> Option<syn::Path> {
    let [.., TokenTree::Ident(fwd)] = before else {
        return None;
    };
    if *fwd != "__fwd" {
        return None;
    }
    // Back over `ident ::` pairs to the path's first segment.
    let colons = |a: &TokenTree, b: &TokenTree| matches!((a, b), (TokenTree::Punct(a), TokenTree::Punct(b)) if a.as_char() == ':' && b.as_char() == ':');
    let mut start = before.len() - 1;
    while start >= 3
        && colons(&before[start - 2], &before[start - 1])
        && matches!(&before[start - 3], TokenTree::Ident(_))
    {
        start -= 3;
    }
    // A path the walk cannot read whole (generic arguments, a qualified
    // self type) is not taken apart: the caller then counts the use as its
    // own.
    let read_whole = match start.checked_sub(1).map(|i| &before[i]) {
        Some(TokenTree::Punct(p)) => !matches!(p.as_char(), ':' | '>' | '<'),
        _ => true,
    };
    // (Nor a path from `Self`, which means nothing where the consts are.)
    let from_self = matches!(&before[start], TokenTree::Ident(first) if *first == "Self");
    if start + 1 == before.len() || !read_whole || from_self {
        return None;
    }
    let path: TokenStream = before[start..before.len() - 3].iter().cloned().collect();
    syn::parse2(path).ok()
}
