//! A `Vec` of reals built by pushing: `let mut v = Vec::new();` (or
//! `Vec::with_capacity(n)`, `vec![]`) whose first use is a `for` loop over
//! a range from a literal `c` (`c..n`) or over buffers' elements that
//! pushes one element in every iteration (`v.push(e);`, a statement of the
//! loop's body itself, with nothing that leaves the loop; no other use of
//! `v` in the loop). It is a new buffer of the loop's length
//! (`n.saturating_sub(c)`), made where the loop starts, whose element
//! `i - c` iteration `i` sets: the passes see an ordinary buffer. Other
//! pushes keep the function on the tape.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::Expr as SynExpr;

use super::stmts::strip;
use super::{Lowered, Lowerer, Unsupported};
use crate::ir::{ArithOp, AssignOp, Expr, ExprKind, Place, RangeIter, StmtKind, VarId};

/// The loops a `Vec` may be built by.
const RANGES: &str = "a `Vec` built by `push` is on the compiled path when the loop runs forwards over a range from a literal (`0..n`, `1..n`) or over buffers' elements";

/// A buffer being built by the pushes of a loop.
pub(super) struct Pushed {
    var: VarId,
    /// The loop (its syntax, by address), and where it starts.
    by: *const syn::ExprForLoop,
    span: Span,
    /// The loop's index while its body is lowered, and the range's first
    /// value if a literal (the element's index is the index minus it).
    index: Option<(VarId, Option<u64>)>,
    /// Its element type is written (`Vec<f64>`).
    typed: bool,
}

impl Lowerer {
    /// `let mut v = Vec::new();` whose first use in `rest` is a loop pushing
    /// into it: `v` is bound to a buffer the loop will make, and `true`;
    /// `false` for another value. An empty `Vec` used otherwise is not
    /// on the compiled path.
    pub(super) fn let_pushed(
        &mut self,
        pat: &syn::PatIdent,
        annotation: Option<&syn::Type>,
        init: &SynExpr,
        rest: &[syn::Stmt],
    ) -> Lowered<bool> {
        let name = &pat.ident;
        let Some(turbofish) = empty_vec(init) else {
            return Ok(false);
        };
        let Some(by) = pushing_loop(name, rest) else {
            // (`vec![]` is a buffer of no elements, as before.)
            if matches!(strip(init), SynExpr::Macro(_)) {
                return Ok(false);
            }
            return Err(Unsupported::new(
                init.span(),
                format!(
                    "an empty `Vec` is on the compiled path when the next statement naming `{name}` is a `for` loop over a range from a literal (`0..n`, `1..n`) or over buffers' elements that pushes one element in every iteration (`{name}.push(..);` in the loop's body itself, no `break`, `continue` or `return` in the loop, no other use of `{name}` in it)"
                ),
            ));
        };
        let span = by.for_token.span;
        let by: *const syn::ExprForLoop = by;
        let real = |ty: &syn::Type| {
            crate::types::is_real_buffer_type(ty) && !matches!(ty, syn::Type::Array(_))
        };
        let typed = annotation.is_some_and(real)
            || turbofish.is_some_and(|element| crate::analyze::activity::is_float_type(&element));
        let prim = self.precision.ident(name.span());
        let var = self.new_vec(name, syn::parse_quote!(::std::vec::Vec<#prim>));
        self.bind(name, var);
        self.pushed.push(Pushed {
            var,
            by,
            span,
            index: None,
            typed,
        });
        Ok(true)
    }

    /// True if loop `by` builds a `Vec` by pushing.
    pub(super) fn builds(&self, by: &syn::ExprForLoop) -> bool {
        self.pushed.iter().any(|p| std::ptr::eq(p.by, by))
    }

    /// The buffers loop `by` builds: their index is `index` while its body
    /// is lowered, counted from `first` (the range's first value, if a
    /// literal).
    pub(super) fn start_pushes(&mut self, by: &syn::ExprForLoop, index: VarId, first: Option<u64>) {
        for pushed in &mut self.pushed {
            if std::ptr::eq(pushed.by, by) {
                pushed.index = Some((index, first));
            }
        }
    }

    /// After loop `by` (over `range`): the new buffers it built, made
    /// before it, of its length.
    pub(super) fn end_pushes(
        &mut self,
        by: &syn::ExprForLoop,
        range: &RangeIter,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        let built: Vec<&Pushed> = self
            .pushed
            .iter()
            .filter(|p| std::ptr::eq(p.by, by))
            .collect();
        let Some(pushed) = built.first() else {
            return Ok(());
        };
        // (`start_pushes` read the range's first value.)
        let (span, first) = (pushed.span, pushed.index.and_then(|(_, first)| first));
        let built: Vec<VarId> = built.iter().map(|p| p.var).collect();
        self.pushed.retain(|p| !std::ptr::eq(p.by, by));
        let unsupported = || Unsupported::new(span, RANGES);
        let Some(first) = first else {
            return Err(unsupported());
        };
        if range.inclusive || range.reversed || range.end.has_call() {
            return Err(unsupported());
        }
        // The length: the range's end, less its start (none if the end is
        // below it).
        let len = if first == 0 {
            range.end.clone()
        } else {
            let end = self.let_temp(range.end.clone(), span, out);
            let name = &self.vars[end].name;
            let first = syn::LitInt::new(&format!("{first}usize"), span);
            Expr::new(
                ExprKind::Opaque {
                    // (Typed: a literal end leaves the temporary's integer
                    // type open to a method call.)
                    expr: Box::new(syn::parse_quote!(usize::saturating_sub(#name, #first))),
                    reads: vec![end],
                },
                span,
            )
        };
        for var in built {
            self.let_zeros(var, len.clone(), span, out);
        }
        Ok(())
    }

    /// `v.push(e);` of a buffer a loop builds: its element at the loop's
    /// index. `None`: not such a push.
    pub(super) fn push_stmt(
        &mut self,
        expr: &SynExpr,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Option<Lowered<()>> {
        let SynExpr::MethodCall(call) = strip(expr) else {
            return None;
        };
        if call.method != "push" || call.args.len() != 1 {
            return None;
        }
        let SynExpr::Path(receiver) = strip(&call.receiver) else {
            return None;
        };
        let var = self.resolve_path(&receiver.path)?;
        let pushed = self.pushed.iter().find(|p| p.var == var)?;
        let (index, typed) = (pushed.index?, pushed.typed);
        Some(self.push_value(var, index, typed, &call.args[0], expr.span(), out))
    }

    fn push_value(
        &mut self,
        var: VarId,
        (index, first): (VarId, Option<u64>),
        typed: bool,
        value: &SynExpr,
        span: Span,
        out: &mut Vec<crate::ir::Stmt>,
    ) -> Lowered<()> {
        let Some(first) = first else {
            return Err(Unsupported::new(span, RANGES));
        };
        let value = self.expr(value, out)?;
        if !typed && !self.evidently_real(&value) {
            return Err(Unsupported::new(
                span,
                format!(
                    "the compiled path builds `Vec`s of reals by pushing, and this value does not show that it is a real: if it is, write `Vec<f64>` where `{}` is declared",
                    self.vars[var].name
                ),
            ));
        }
        let mut at = Expr::new(ExprKind::Var(index), span);
        if first > 0 {
            let first = syn::LitInt::new(&format!("{first}usize"), span);
            let first = Expr::new(ExprKind::Lit(syn::Lit::Int(first)), span);
            at = Expr::new(
                ExprKind::Arith(ArithOp::Sub, Box::new(at), Box::new(first)),
                span,
            );
        }
        out.push(self.stmt(
            span,
            StmtKind::Assign {
                place: Place::Elem(var, Box::new(at)),
                op: AssignOp::Set,
                value,
                first: false,
            },
        ));
        Ok(())
    }

    /// True if `expr` is surely a real: it reads an element of a buffer, a
    /// real parameter or annotated local, a local whose first value is
    /// surely a real, a float literal, a float-only method, a call (of a
    /// differentiated function), or a cast to a float.
    pub(super) fn evidently_real(&self, expr: &Expr) -> bool {
        match &expr.kind {
            ExprKind::Lit(lit) => matches!(lit, syn::Lit::Float(_)),
            ExprKind::Elem(..) | ExprKind::Call(_) => true,
            ExprKind::Var(var) => {
                self.reals.contains(var)
                    || self.vars[*var]
                        .annotation
                        .as_ref()
                        .is_some_and(crate::analyze::activity::is_float_type)
            }
            ExprKind::Cast(_, ty) => crate::analyze::activity::is_float_type(ty),
            ExprKind::Math { math, args, .. } => {
                // (Some math methods are integers' too.)
                let shared = ["abs", "max", "min", "signum", "clamp", "pow", "rem_euclid"];
                !shared.contains(&math.name) || args.iter().any(|a| self.evidently_real(a))
            }
            ExprKind::Neg(a) => self.evidently_real(a),
            ExprKind::Arith(_, a, b) => self.evidently_real(a) || self.evidently_real(b),
            _ => false,
        }
    }
}

/// `Vec::new()`, `Vec::with_capacity(n)` (`n` read without calls) or
/// `vec![]`: `Some` of the element type the turbofish writes, if any.
fn empty_vec(init: &SynExpr) -> Option<Option<syn::Type>> {
    match strip(init) {
        SynExpr::Macro(mac) if mac.mac.path.is_ident("vec") && mac.mac.tokens.is_empty() => {
            Some(None)
        }
        SynExpr::Call(call) => {
            let SynExpr::Path(path) = strip(&call.func) else {
                return None;
            };
            let segments: Vec<&syn::PathSegment> = path.path.segments.iter().collect();
            let [vec, constructor] = segments[..] else {
                return None;
            };
            if vec.ident != "Vec" {
                return None;
            }
            let element = match &vec.arguments {
                syn::PathArguments::None => None,
                syn::PathArguments::AngleBracketed(args) => match args.args.first() {
                    Some(syn::GenericArgument::Type(ty)) if args.args.len() == 1 => {
                        Some(ty.clone())
                    }
                    _ => return None,
                },
                syn::PathArguments::Parenthesized(_) => return None,
            };
            let plain_capacity = |e: &SynExpr| {
                let mut calls = Calls(false);
                calls.visit_expr(e);
                !calls.0
            };
            match (constructor.ident.to_string().as_str(), call.args.len()) {
                ("new", 0) => Some(element),
                ("with_capacity", 1) if plain_capacity(&call.args[0]) => Some(element),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Finds calls (other than `len()`) and macros.
struct Calls(bool);

impl<'ast> Visit<'ast> for Calls {
    fn visit_expr_call(&mut self, _: &'ast syn::ExprCall) {
        self.0 = true;
    }
    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        if call.method != "len" || !call.args.is_empty() {
            self.0 = true;
        }
        self.visit_expr(&call.receiver);
    }
    fn visit_macro(&mut self, _: &'ast syn::Macro) {
        self.0 = true;
    }
}

/// The loop that pushes into `name`: the first statement of `rest` that
/// names it, a `for` loop whose body's only use of it is one statement
/// `name.push(e);` of the body itself, before which nothing leaves the
/// loop (no `return`, `?`, or `break`/`continue` of it anywhere in it).
fn pushing_loop<'s>(name: &syn::Ident, rest: &'s [syn::Stmt]) -> Option<&'s syn::ExprForLoop> {
    let first = rest.iter().find(|stmt| {
        let mut names = Names::new(name);
        names.visit_stmt(stmt);
        names.found
    })?;
    let syn::Stmt::Expr(SynExpr::ForLoop(for_loop), _) = first else {
        return None;
    };
    if !for_loop.attrs.is_empty() || names_it(name, |n| n.visit_expr(&for_loop.expr)) {
        return None;
    }
    let mut pushes = 0;
    for stmt in &for_loop.body.stmts {
        if !names_it(name, |n| n.visit_stmt(stmt)) {
            continue;
        }
        let syn::Stmt::Expr(SynExpr::MethodCall(call), Some(_)) = stmt else {
            return None;
        };
        let receiver_is =
            matches!(strip(&call.receiver), SynExpr::Path(p) if p.path.is_ident(name));
        if call.method != "push"
            || !receiver_is
            || call.args.len() != 1
            || names_it(name, |n| n.visit_expr(&call.args[0]))
        {
            return None;
        }
        pushes += 1;
    }
    let mut exits = Exits::default();
    exits.visit_block(&for_loop.body);
    (pushes == 1 && !exits.found).then_some(for_loop)
}

fn names_it(name: &syn::Ident, visit: impl FnOnce(&mut Names)) -> bool {
    let mut names = Names::new(name);
    visit(&mut names);
    names.found
}

/// Finds a name: a path or a macro's tokens (`println!("{v:?}")` too).
struct Names {
    name: String,
    found: bool,
}

impl Names {
    fn new(name: &syn::Ident) -> Names {
        Names {
            name: syn::ext::IdentExt::unraw(name).to_string(),
            found: false,
        }
    }
}

impl<'ast> Visit<'ast> for Names {
    fn visit_ident(&mut self, ident: &'ast syn::Ident) {
        if syn::ext::IdentExt::unraw(ident) == self.name {
            self.found = true;
        }
    }
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        // (An argument, or a format string's `{v}`, `{v:?}`.)
        self.found |= tokens_name(mac.tokens.clone(), &self.name);
    }
}

fn tokens_name(tokens: proc_macro2::TokenStream, name: &str) -> bool {
    tokens.into_iter().any(|tree| match tree {
        proc_macro2::TokenTree::Ident(ident) => syn::ext::IdentExt::unraw(&ident) == name,
        proc_macro2::TokenTree::Literal(literal) => {
            let text = literal.to_string();
            text.contains(&format!("{{{name}}}")) || text.contains(&format!("{{{name}:"))
        }
        proc_macro2::TokenTree::Group(group) => tokens_name(group.stream(), name),
        proc_macro2::TokenTree::Punct(_) => false,
    })
}

/// Finds what may leave a loop early: `return`, `?`, a labelled `break` or
/// `continue`, an unlabelled one outside loops nested in it (closures
/// are their own).
#[derive(Default)]
struct Exits {
    depth: usize,
    found: bool,
}

impl<'ast> Visit<'ast> for Exits {
    fn visit_expr_return(&mut self, _: &'ast syn::ExprReturn) {
        self.found = true;
    }
    fn visit_expr_try(&mut self, _: &'ast syn::ExprTry) {
        self.found = true;
    }
    fn visit_expr_break(&mut self, brk: &'ast syn::ExprBreak) {
        if brk.label.is_some() || self.depth == 0 {
            self.found = true;
        }
    }
    fn visit_expr_continue(&mut self, cont: &'ast syn::ExprContinue) {
        if cont.label.is_some() || self.depth == 0 {
            self.found = true;
        }
    }
    fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
    fn visit_expr_for_loop(&mut self, inner: &'ast syn::ExprForLoop) {
        self.depth += 1;
        syn::visit::visit_expr_for_loop(self, inner);
        self.depth -= 1;
    }
    fn visit_expr_while(&mut self, inner: &'ast syn::ExprWhile) {
        self.depth += 1;
        syn::visit::visit_expr_while(self, inner);
        self.depth -= 1;
    }
    fn visit_expr_loop(&mut self, inner: &'ast syn::ExprLoop) {
        self.depth += 1;
        syn::visit::visit_expr_loop(self, inner);
        self.depth -= 1;
    }
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        // (A macro may hide a `return`; the standard ones do not.)
        let known = [
            "assert",
            "assert_eq",
            "assert_ne",
            "debug_assert",
            "debug_assert_eq",
            "debug_assert_ne",
            "println",
            "eprintln",
            "print",
            "eprint",
            "format",
            "write",
            "writeln",
            "vec",
            "matches",
            "dbg",
            "panic",
            "unreachable",
            "todo",
            "unimplemented",
        ];
        if !known.iter().any(|m| mac.path.is_ident(m)) {
            self.found = true;
        }
    }
}
