//! The recording pass lives two modules below the user's function
//! (`<fn name>::__deltad_impl`), which glob-imports the user's module. Paths
//! relative to the module (`super::x`, `self::x`) are moved down accordingly.

use syn::visit_mut::VisitMut;
use syn::{parse_quote, Block, Path, PathSegment};

pub(crate) fn body(block: &mut Block) {
    Relocate.visit_block_mut(block);
}

pub(crate) fn expr(expr: &mut syn::Expr) {
    Relocate.visit_expr_mut(expr);
}

pub(crate) fn type_(ty: &mut syn::Type) {
    Relocate.visit_type_mut(ty);
}

pub(crate) fn path(path: &mut Path) {
    Relocate.visit_path_mut(path);
}

struct Relocate;

/// Moves a relative path two modules down; returns how many segments it
/// gained in front (for qualified paths).
fn relocate(path: &mut Path) -> usize {
    if path.leading_colon.is_some() {
        return 0;
    }
    let Some(first) = path.segments.first() else {
        return 0;
    };
    let supers: [PathSegment; 2] = [parse_quote!(super), parse_quote!(super)];
    if first.ident == "super" {
        let rest = std::mem::take(&mut path.segments);
        path.segments.extend(supers);
        path.segments.extend(rest);
        2
    } else if first.ident == "self" && path.segments.len() > 1 {
        let rest: Vec<PathSegment> = std::mem::take(&mut path.segments)
            .into_iter()
            .skip(1)
            .collect();
        path.segments.extend(supers);
        path.segments.extend(rest);
        1
    } else {
        0
    }
}

impl Relocate {
    /// A path that may be qualified (`<T as super::Trait>::f`): the trait part
    /// moves, and the qualified self type is visited on its own.
    fn qualified(&mut self, qself: Option<&mut syn::QSelf>, path: &mut Path) {
        let Some(qself) = qself else {
            return self.visit_path_mut(path);
        };
        self.visit_type_mut(&mut qself.ty);
        if qself.position > 0 {
            qself.position += relocate(path);
        }
        for segment in &mut path.segments {
            self.visit_path_arguments_mut(&mut segment.arguments);
        }
    }
}

impl VisitMut for Relocate {
    fn visit_expr_path_mut(&mut self, expr: &mut syn::ExprPath) {
        self.qualified(expr.qself.as_mut(), &mut expr.path);
    }

    fn visit_type_path_mut(&mut self, ty: &mut syn::TypePath) {
        self.qualified(ty.qself.as_mut(), &mut ty.path);
    }

    fn visit_path_mut(&mut self, path: &mut Path) {
        relocate(path);
        for segment in &mut path.segments {
            self.visit_path_arguments_mut(&mut segment.arguments);
        }
    }

    fn visit_item_use_mut(&mut self, item: &mut syn::ItemUse) {
        if item.leading_colon.is_some() {
            return;
        }
        relocate_use(&mut item.tree);
    }

    fn visit_visibility_mut(&mut self, _vis: &mut syn::Visibility) {}
}

/// Moves a `use` tree's relative paths (`super::..`, `self::..`, in groups
/// too) two modules down.
fn relocate_use(tree: &mut syn::UseTree) {
    match tree {
        syn::UseTree::Path(path) if path.ident == "super" => {
            let path = path.clone();
            *tree = parse_quote!(super::super::#path);
        }
        syn::UseTree::Path(path) if path.ident == "self" => {
            let placeholder = syn::UseTree::Glob(syn::UseGlob {
                star_token: Default::default(),
            });
            let rest = std::mem::replace(&mut *path.tree, placeholder);
            *tree = parse_quote!(super::super::#rest);
        }
        syn::UseTree::Group(group) => group.items.iter_mut().for_each(relocate_use),
        _ => {}
    }
}

/// Moves a path relocated `levels` modules down back to the user's module
/// (a relative path loses the `super`s it gained; `self::x`, relocated
/// `super::super::x`, becomes `x`, which names the same item there).
pub(crate) fn back(path: &mut Path, levels: usize) {
    let supers = path
        .segments
        .iter()
        .take(levels)
        .filter(|s| s.ident == "super")
        .count();
    if path.leading_colon.is_none() && supers == levels {
        let rest: Vec<PathSegment> = std::mem::take(&mut path.segments)
            .into_iter()
            .skip(levels)
            .collect();
        path.segments.extend(rest);
    }
}

/// Moves an item whose paths are already relocated one more module down
/// (a closure's function, compiled in a module of its own below the
/// implementation module): every path starting with `super` gains one.
pub(crate) fn one_deeper(item: &mut syn::ItemFn) {
    Deeper.visit_item_fn_mut(item);
}

struct Deeper;

impl VisitMut for Deeper {
    fn visit_path_mut(&mut self, path: &mut Path) {
        if path.leading_colon.is_none() && path.segments.first().is_some_and(|s| s.ident == "super")
        {
            path.segments.insert(0, parse_quote!(super));
        }
        syn::visit_mut::visit_path_mut(self, path);
    }

    fn visit_item_use_mut(&mut self, item: &mut syn::ItemUse) {
        if let syn::UseTree::Path(path) = &item.tree {
            if item.leading_colon.is_none() && path.ident == "super" {
                let tree = item.tree.clone();
                item.tree = parse_quote!(super::#tree);
            }
        }
    }

    fn visit_visibility_mut(&mut self, _vis: &mut syn::Visibility) {}
}
