//! The arguments of the macros deltad can see through, parsed once.
//!
//! An attribute macro sees `vec![..]` and `println!(..)` as token streams.
//! Their arguments are parsed into expressions before the analysis, kept in
//! this table (keyed by the macro node) so that the analysis and the rewrite
//! see the very same expression nodes, and printed back after the rewrite.

use std::collections::{HashMap, HashSet};

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::visit::Visit;
use syn::{Expr, Macro, Token};

use crate::errors::Errors;
use crate::methods::{macro_kind, MacroKind};

/// Parsed arguments of one macro invocation.
pub(crate) enum MacroArgs {
    /// `vec![a, b, c]`.
    List(Vec<Expr>),
    /// `vec![elem; len]`.
    Repeat(Box<Expr>, Box<Expr>),
    /// Comma-separated expressions of a formatting or assertion macro.
    Exprs(Vec<Expr>),
    /// Nothing deltad needs to see.
    Opaque,
}

impl MacroArgs {
    /// The tokens to put back between the macro's delimiters.
    pub(crate) fn to_tokens(&self) -> Option<TokenStream> {
        match self {
            MacroArgs::List(items) | MacroArgs::Exprs(items) => Some(quote!(#(#items),*)),
            MacroArgs::Repeat(elem, len) => Some(quote!(#elem; #len)),
            MacroArgs::Opaque => None,
        }
    }
}

/// A parsed invocation.
pub(crate) struct MacroCall {
    pub kind: MacroKind,
    pub args: MacroArgs,
}

/// Parsed arguments of every supported macro in a function body.
#[derive(Default)]
pub(crate) struct MacroTable {
    calls: HashMap<usize, Box<MacroCall>>,
}

fn key(mac: &Macro) -> usize {
    mac as *const Macro as usize
}

impl MacroTable {
    /// Parses the macros of `block` (not those inside nested items), reporting
    /// unsupported macros and unparsable arguments.
    pub(crate) fn build(block: &syn::Block, errors: &Errors) -> MacroTable {
        let mut conditions = Conditions::default();
        conditions.visit_block(block);
        let mut builder = Builder {
            table: MacroTable::default(),
            errors,
            conditions: conditions.0,
        };
        builder.visit_block(block);
        builder.table
    }

    pub(crate) fn get(&self, mac: &Macro) -> Option<&MacroCall> {
        self.calls.get(&key(mac)).map(|call| &**call)
    }

    /// Removes the entry of `mac` (each macro is rewritten once).
    pub(crate) fn take(&mut self, mac: &Macro) -> Option<Box<MacroCall>> {
        self.calls.remove(&key(mac))
    }
}

struct Builder<'e> {
    table: MacroTable,
    errors: &'e Errors,
    /// The macros used as conditions.
    conditions: HashSet<usize>,
}

/// Finds the macros used as conditions: the condition of an `if` or a
/// `while`, a match guard, and the operands of `!`, `&&` and `||` there.
#[derive(Default)]
struct Conditions(HashSet<usize>);

impl Conditions {
    fn condition(&mut self, expr: &Expr) {
        match expr {
            Expr::Macro(mac) => {
                self.0.insert(key(&mac.mac));
            }
            Expr::Paren(paren) => self.condition(&paren.expr),
            Expr::Group(group) => self.condition(&group.expr),
            Expr::Unary(unary) if matches!(unary.op, syn::UnOp::Not(_)) => {
                self.condition(&unary.expr)
            }
            Expr::Binary(binary) if matches!(binary.op, syn::BinOp::And(_) | syn::BinOp::Or(_)) => {
                self.condition(&binary.left);
                self.condition(&binary.right);
            }
            _ => {}
        }
    }
}

impl<'ast> Visit<'ast> for Conditions {
    fn visit_expr_if(&mut self, branch: &'ast syn::ExprIf) {
        self.condition(&branch.cond);
        syn::visit::visit_expr_if(self, branch);
    }
    fn visit_expr_while(&mut self, looping: &'ast syn::ExprWhile) {
        self.condition(&looping.cond);
        syn::visit::visit_expr_while(self, looping);
    }
    fn visit_arm(&mut self, arm: &'ast syn::Arm) {
        if let Some((_, guard)) = &arm.guard {
            self.condition(guard);
        }
        syn::visit::visit_arm(self, arm);
    }
    fn visit_item(&mut self, _item: &'ast syn::Item) {}
}

impl<'ast> Visit<'ast> for Builder<'_> {
    fn visit_macro(&mut self, mac: &'ast Macro) {
        let name = mac
            .path
            .segments
            .last()
            .map(|segment| segment.ident.to_string())
            .unwrap_or_default();
        let kind = macro_kind(&name).or_else(|| {
            self.conditions
                .contains(&key(mac))
                .then_some(MacroKind::Condition)
        });
        let Some(kind) = kind else {
            self.errors.at(
                &mac.path,
                format!(
                    "deltad cannot see inside the macro `{}!`: it supports `vec!`, the formatting and assertion macros, `dbg!`, `matches!`, `panic!`-like macros, and any macro used as a condition (`if m!(..)`); expand this macro by hand or move it out of the differentiated function",
                    mac.path.to_token_stream()
                ),
            );
            return;
        };
        let parsed = match kind {
            MacroKind::Vec => mac.parse_body_with(parse_vec_args),
            MacroKind::Exprs | MacroKind::Diverging | MacroKind::Condition => {
                Punctuated::<Expr, Token![,]>::parse_terminated
                    .parse2(mac.tokens.clone())
                    .map(|args| MacroArgs::Exprs(args.into_iter().collect()))
            }
            MacroKind::Opaque => Ok(MacroArgs::Opaque),
            MacroKind::Generic { .. } => parse_generic_call(mac, &name),
        };
        match parsed {
            Ok(args) => {
                // Nested macros inside the arguments are visited too.
                match &args {
                    MacroArgs::List(items) | MacroArgs::Exprs(items) => {
                        items.iter().for_each(|item| self.visit_expr(item))
                    }
                    MacroArgs::Repeat(elem, len) => {
                        self.visit_expr(elem);
                        self.visit_expr(len);
                    }
                    MacroArgs::Opaque => {}
                }
                self.table
                    .calls
                    .insert(key(mac), Box::new(MacroCall { kind, args }));
            }
            Err(error) => self.errors.push(syn::Error::new(
                error.span(),
                format!("deltad could not read the arguments of `{name}!`: {error}"),
            )),
        }
    }

    // Nested items are compiled as they are: their macros are not ours.
    fn visit_item(&mut self, _item: &'ast syn::Item) {}
}

pub(crate) fn parse_vec_args(input: ParseStream) -> syn::Result<MacroArgs> {
    if input.is_empty() {
        return Ok(MacroArgs::List(Vec::new()));
    }
    let first: Expr = input.parse()?;
    if input.peek(Token![;]) {
        input.parse::<Token![;]>()?;
        let len: Expr = input.parse()?;
        return Ok(MacroArgs::Repeat(Box::new(first), Box::new(len)));
    }
    let mut items = vec![first];
    while !input.is_empty() {
        input.parse::<Token![,]>()?;
        if input.is_empty() {
            break;
        }
        items.push(input.parse()?);
    }
    Ok(MacroArgs::List(items))
}

/// The one call `deltad::generic!` (or `generic_fwd!`, `name`) takes:
/// `f(args)` with `f` a path.
fn parse_generic_call(mac: &Macro, name: &str) -> syn::Result<MacroArgs> {
    let call: Expr = mac.parse_body()?;
    match &call {
        Expr::Call(c) if matches!(&*c.func, Expr::Path(_)) => Ok(MacroArgs::Exprs(vec![call])),
        _ => Err(syn::Error::new_spanned(
            &call,
            format!("`deltad::{name}!` takes one call of a function generic over its number type: `deltad::{name}!(f(x, 2.0))`"),
        )),
    }
}
