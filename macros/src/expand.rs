//! The expansion of `#[differentiate]`: parse, validate, analyze, rewrite,
//! emit. Never panics on user input; on any error it emits the function
//! unchanged, the errors, and stub gradient items with the right signatures.

use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};
use syn::{Item, ItemFn};

use crate::emit::{self, Bodies, RecordingPass, Target};
use crate::errors::Errors;
use crate::macro_args::MacroTable;
use crate::names::Names;
use crate::options::{EnginePath, Options};
use crate::shape::Shape;
use crate::signature::{self, Output, Signature};
use crate::tape::activity;
use crate::tape::rewrite::Rewriter;
use crate::{analyze, check, impl_block, ir, relocate, types};

pub fn differentiate(attr: TokenStream, item: TokenStream) -> TokenStream {
    let errors = Errors::default();
    let options = Options::parse(attr, &errors);
    match syn::parse2::<Item>(item.clone()) {
        Ok(Item::Fn(function)) => free_function(function, &options, &errors),
        Ok(Item::Impl(block)) => {
            if options.custom.is_some() {
                errors.at_span(Span::call_site(), "`custom` goes on a method of the `impl` block, as `#[differentiate(custom = ..)]`");
            }
            let name = block.self_ty.to_token_stream().to_string();
            let expansion = impl_block::expand(block, &errors);
            show_expansion(&name, &expansion);
            expansion
        }
        _ => {
            // A method inside an `impl` block arrives here as a function with
            // a receiver, which `Item` does not parse.
            let message = match syn::parse2::<syn::ImplItemFn>(item.clone()) {
                Ok(_) => "to differentiate methods, put #[differentiate] on the `impl` block: a module with the derivatives cannot be emitted inside an `impl`",
                Err(_) => "#[differentiate] applies to functions and `impl` blocks",
            };
            errors.at_span(Span::call_site(), message);
            let errors = errors.to_compile_errors();
            quote!(#errors #item)
        }
    }
}

fn free_function(mut function: ItemFn, options: &Options, errors: &Errors) -> TokenStream {
    let no_grad = signature::strip_no_grad(&mut function);
    if let Some(receiver) = function.sig.receiver() {
        errors.at(
            receiver,
            "to differentiate methods, put #[differentiate] on the `impl` block",
        );
        let errors = errors.to_compile_errors();
        return quote!(#errors #function);
    }
    let name = function.sig.ident.clone();
    // The function is emitted as written; its derivatives are made of its
    // copy for the float (if it is generic over its number type) with its
    // conversions into the float written as casts.
    let original = function.clone();
    let number_params = match crate::generic::derivative_copy(
        &function,
        options.float.as_ref(),
        "function",
        errors,
    ) {
        Some((copy, count)) => {
            function = copy;
            count
        }
        None => 0,
    };
    let primal_name = syn::Ident::new("__deltad_primal", Span::call_site());
    let mut primal_copy = function.clone();
    primal_copy.sig.ident = primal_name.clone();
    primal_copy.vis = syn::Visibility::Inherited;
    primal_copy
        .attrs
        .retain(|a| a.path().is_ident("cfg") || a.path().is_ident("allow"));
    relocate::body(&mut primal_copy.block);
    crate::syntax::strip_markers(&mut primal_copy.block);
    let target = Target {
        function: &function,
        module: name.clone(),
        vis: &function.vis,
        primal: quote!(#primal_name),
        primal_copy: Some(primal_copy),
        method: None,
    };
    let (module, signature_ok) = derivatives(&target, &no_grad, options, errors);
    let mut emitted = original;
    crate::syntax::strip_markers(&mut emitted.block);
    let original = emit::original(&emitted);
    let errors = errors.to_compile_errors();
    // The gradient items use a copy of the function, not the function itself:
    // mark the function used so that a caller who only asks for gradients
    // does not get a dead-code warning for it.
    // (A function with type or const parameters, `impl Trait` ones too,
    // cannot be named without arguments.)
    let cfgs = emit::cfg_attrs(&function);
    let only_lifetimes = function
        .sig
        .generics
        .params
        .iter()
        .all(|p| matches!(p, syn::GenericParam::Lifetime(_)))
        && !function.sig.inputs.iter().any(|input| match input {
            syn::FnArg::Typed(param) => crate::syntax::mentions_impl_trait(&param.ty),
            syn::FnArg::Receiver(_) => false,
        });
    // (A function generic over its number type is named for `f64`.)
    let for_f64 = (number_params > 0).then(|| {
        let f64s = (0..number_params).map(|_| quote!(f64));
        quote!(::<#(#f64s),*>)
    });
    let mark_used = (only_lifetimes && signature_ok).then(|| {
        quote! {
            #(#cfgs)*
            #[allow(clippy::let_underscore_untyped)]
            const _: () = {
                let _ = #name #for_f64;
            };
        }
    });
    let expansion = quote! {
        #errors
        #original
        #mark_used
        #module
    };
    show_expansion(&name.to_string(), &expansion);
    expansion
}

/// The derivative module of one function (free, or a method turned into a
/// free function by `impl_block`); also whether its signature was usable.
pub(crate) fn derivatives(
    target: &Target,
    no_grad: &[bool],
    options: &Options,
    errors: &Errors,
) -> (TokenStream, bool) {
    let function = target.function;
    let signature = signature::analyze(function, no_grad, errors);
    // The function's own body is checked for what neither engine takes
    // (`unsafe`, unknown macros..) first; then the compiled path is tried,
    // and only if it does not apply is the body rewritten into the tape's
    // recording pass (whose own rules then apply).
    let validated = match (&options.custom, &signature) {
        (None, Some(signature)) => validate(function, signature, errors),
        _ => false,
    };
    let compiled = match (&options.custom, &signature) {
        (Some(_), _) => Err((
            None,
            "it is a custom primitive (its derivative is the one given)".to_string(),
        )),
        (None, Some(signature)) if validated && errors.is_empty() => {
            compile(target, signature, options)
        }
        _ => Err((None, "its signature or body has errors".to_string())),
    };
    let bodies = match (&options.custom, &signature) {
        (Some(derivative), Some(signature)) => custom_body(derivative, signature, errors),
        // (With function parameters, tape callers record through the
        // tape's own recording pass: their closures record on the tape.)
        _ if compiled.is_ok() && !signature.as_ref().is_some_and(|s| s.takes_functions()) => {
            Bodies::Compiled
        }
        _ if validated => match recording_pass(function, signature.as_ref(), errors) {
            Some(pass) => Bodies::Real(pass),
            None => Bodies::Stub,
        },
        _ => Bodies::Stub,
    };
    let engine = match &compiled {
        Ok(compiled) => emit::Engine::Compiled(compiled),
        Err((span, reason)) => {
            if let Some((EnginePath::Compiled, flag)) = &options.path {
                if errors.is_empty() {
                    errors.at_span(
                        span.unwrap_or_else(|| flag.span()),
                        format!("#[differentiate(compiled)]: this function cannot take the compiled path: {reason}"),
                    );
                }
            }
            emit::Engine::Tape(reason.clone())
        }
    };
    show_engine(&target.function.sig.ident, &compiled);
    let bodies = if errors.is_empty() {
        bodies
    } else {
        Bodies::Stub
    };
    (
        emit::module(target, signature.as_ref(), bodies, &engine),
        signature.is_some(),
    )
}

/// The recording pass of a custom primitive: the user's derivative.
fn custom_body(derivative: &syn::Path, signature: &Signature, errors: &Errors) -> Bodies {
    if signature.takes_functions() {
        errors.at(
            derivative,
            "a custom derivative cannot be given for a function with function parameters",
        );
    }
    if signature
        .params
        .iter()
        .any(|p| matches!(p.kind, crate::signature::ParamKind::InOut { .. }))
    {
        errors.at(derivative, "a custom derivative cannot be given for a function with `&mut` results: return the results instead");
    }
    let mut derivative = derivative.clone();
    relocate::path(&mut derivative);
    Bodies::Custom(derivative)
}

/// Checks the body for what neither engine takes (errors at their spans),
/// and `#[preaccumulate]` loops against their contract (on both engines, so
/// that code does not become wrong by changing engine); true if there was
/// nothing to report.
fn validate(function: &ItemFn, signature: &Signature, errors: &Errors) -> bool {
    let body: Box<syn::Block> = function.block.clone();
    let macros = MacroTable::build(&body, errors);
    check::body(&body, errors);
    // A real-valued function whose body's value is by its form a
    // collection or a tuple does not type-check: rustc says so at the
    // user's code, and deltad says it once in the same terms, where the
    // generated code would say it again in deltad's types.
    if matches!(signature.output, Output::Real) {
        if let Some(tail) = crate::value_kind::tail_not_a_real(function) {
            errors.at(
                tail,
                "the function returns a real, but this value is a collection or a tuple",
            );
        }
    }
    if errors.is_empty() && crate::tape::preaccumulate::used(&body) {
        let activity = activity::analyze(signature, &body, &macros);
        let params: Vec<String> = signature
            .params
            .iter()
            .map(|p| p.name.to_string())
            .collect();
        crate::tape::preaccumulate::check(&body, &params, &activity, errors);
    }
    errors.is_empty()
}

/// Lowers and analyzes the function for the compiled path, or says why it
/// stays on the tape (with the construct's span where there is one).
fn compile(
    target: &Target,
    signature: &Signature,
    options: &Options,
) -> Result<emit::compiled::Compiled, (Option<Span>, String)> {
    if let Some((EnginePath::Tape, _)) = options.path {
        return Err((
            None,
            "`#[differentiate(tape)]` asks for the tape".to_string(),
        ));
    }
    if !emit::compiled_path_signature(signature) {
        return Err((
            None,
            "its parameters or result are not on the compiled path yet (it takes reals, slices, `Vec`s and arrays of reals and plain values, and returns a real, or a `Vec` or array of reals)".to_string(),
        ));
    }
    let mut body = target.function.block.clone();
    relocate::body(&mut body);
    compile_body(signature, &body)
}

/// Lowers and analyzes a relocated body, and the closures it passes to
/// callees, each a function of its own.
fn compile_body(
    signature: &Signature,
    body: &syn::Block,
) -> Result<emit::compiled::Compiled, (Option<Span>, String)> {
    let function = ir::lower(signature, body).map_err(|u| (Some(u.span), u.message))?;
    let analysis = analyze::analyze(&function, signature).map_err(|u| (Some(u.span), u.message))?;
    let mut closures = Vec::new();
    for closure in &function.closures {
        let mut item = closure.item.clone();
        let mut no_grad = closure.no_grad.clone();
        let at = Some(closure.span);
        for &(index, var) in &closure.untyped {
            let name = &function.vars[var].name;
            let ty: syn::Type = match &analysis.types[var] {
                analyze::Ty::Real => {
                    let float = signature.precision.ident(Span::call_site());
                    syn::parse_quote!(#float)
                }
                analyze::Ty::Bool => syn::parse_quote!(bool),
                analyze::Ty::Named(ty) => {
                    no_grad[index] = true;
                    syn::parse_str(ty).map_err(|e| (at, e.to_string()))?
                }
                _ => return Err((at, format!("this closure reads `{name}`, whose type the compiled path does not know here: annotate its `let`"))),
            };
            if let Some(syn::FnArg::Typed(param)) = item.sig.inputs.iter_mut().nth(index) {
                *param.ty = ty;
            }
        }
        relocate::one_deeper(&mut item);
        let errors = Errors::default();
        let signature = signature::analyze(&item, &no_grad, &errors)
            .filter(|_| errors.is_empty())
            .ok_or((
                at,
                "this closure's parameters or result are not on the compiled path".to_string(),
            ))?;
        let compiled = compile_body(&signature, &item.block)?;
        closures.push(emit::compiled::ClosurePasses {
            signature,
            compiled,
        });
    }
    Ok(emit::compiled::Compiled {
        function,
        analysis,
        closures,
    })
}

/// The environment variable that makes the macro say which engine each
/// function took (and why not the compiled one) on the compiler's standard
/// error: any value.
const SHOW_ENGINE: &str = "DELTAD_ENGINE";

fn show_engine<T>(name: &syn::Ident, compiled: &Result<T, (Option<Span>, String)>) {
    if std::env::var_os(SHOW_ENGINE).is_none() {
        return;
    }
    match compiled {
        Ok(_) => eprintln!("deltad: `{name}`: compiled"),
        Err((span, reason)) => {
            let at = span
                .and_then(|s| s.source_text())
                .map(|text| {
                    let text: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
                    let short: String = text.chars().take(60).collect();
                    format!(" (at `{short}`)")
                })
                .unwrap_or_default();
            eprintln!("deltad: `{name}`: tape, because {reason}{at}");
        }
    }
}

/// The environment variable that prints expansions: a function name, a
/// comma-separated list of names, or `*` for every function.
const SHOW_EXPANSION: &str = "DELTAD_EXPAND";

/// Prints the expansion of `name` to the compiler's standard error if
/// `DELTAD_EXPAND` asks for it.
fn show_expansion(name: &str, expansion: &TokenStream) {
    let Ok(wanted) = std::env::var(SHOW_EXPANSION) else {
        return;
    };
    if !wanted
        .split(',')
        .any(|w| w.trim() == "*" || w.trim() == name)
    {
        return;
    }
    let text = match syn::parse2::<syn::File>(expansion.clone()) {
        Ok(file) => prettyplease::unparse(&file),
        Err(_) => expansion.to_string(),
    };
    eprintln!("// ===== #[differentiate] expansion of `{name}` =====\n{text}");
}

/// The recording pass: the user's body with the rewrites of `rewrite.rs`,
/// relocated two modules down. `None` after any error.
fn recording_pass(
    function: &ItemFn,
    signature: Option<&Signature>,
    errors: &Errors,
) -> Option<RecordingPass> {
    // The body lives on the heap from here on: the analysis (and the table
    // of macro arguments) identifies nodes by address, and nothing below
    // moves them before the rewrite visits them.
    let mut body: Box<syn::Block> = function.block.clone();
    crate::tape::loops::split_sin_cos_in_checkpoints(&mut body);
    crate::tape::function_args::wrap_function_arguments(&mut body);
    crate::tape::slices::type_slice_indices(&mut body);
    let mut macros = MacroTable::build(&body, errors);
    let signature = signature?;
    let activity = activity::analyze(signature, &body, &macros);
    let names = Names::new(signature.precision);
    let return_shape = match &signature.output {
        Output::Real => Shape::Real,
        Output::Structured(ty) => types::shape_of(ty),
        Output::Unit => Shape::Inactive,
    };
    let mut rewriter = Rewriter::new(&activity, &mut macros, errors, &names, return_shape);
    rewriter.body(&mut body);
    let mut twin_aliases = rewriter.twin_aliases();
    relocate::body(&mut body);
    for alias in &mut twin_aliases {
        relocate::path(&mut alias.path);
    }
    Some(RecordingPass {
        body: *body,
        twin_aliases,
    })
}

#[cfg(test)]
mod fuzz;

#[cfg(test)]
mod read_by_format_strings {
    use proc_macro2::TokenStream;

    /// The expansion of a function whose buffer of rows a loop sets, with
    /// `print` at the top of the loop's body.
    fn rows_with(print: &str) -> String {
        let source = format!(
            "fn rows(x: &[f64]) -> f64 {{
                let m = x.len() / 3;
                let mut r = vec![0.0; 3 * m];
                for i in 0..m {{
                    {print}
                    for j in 0..3 {{
                        r[3 * i + j] = x[3 * i + j] * 2.0;
                    }}
                }}
                let mut s = 0.0;
                for i in 0..3 * m {{
                    s += r[i];
                }}
                s
            }}"
        );
        let tokens: TokenStream = source.parse().expect("the function parses");
        super::differentiate(TokenStream::new(), tokens).to_string()
    }

    /// A buffer a format string reads inline (`{r:?}`) before its rows are
    /// set keeps its fill, as one read through an argument does: made
    /// without it, the print would show what the memory held.
    #[test]
    fn a_buffer_a_format_string_reads_keeps_its_fill() {
        let scratch = "Record :: scratch";
        assert!(rows_with("").contains(scratch));
        assert!(rows_with(r#"let w = 3; println!("{w}");"#).contains(scratch));
        for print in [
            r#"if i == 0 { println!("{r:?}"); }"#,
            r#"if i == 0 { println!("{:?}", r); }"#,
            r#"if i == 0 { eprint!("{0:?} {r:>8?}", 1); }"#,
        ] {
            assert!(!rows_with(print).contains(scratch), "{print}");
        }
    }
}

#[cfg(test)]
mod robustness {
    //! The expansion never panics, whatever tokens it is given: mutated
    //! versions of real functions either expand to code that parses or carry
    //! a `compile_error!`.

    use proc_macro2::{TokenStream, TokenTree};

    pub(super) const CORPUS: &[&str] = &[
        "fn loss(w: &[f64], b: f64, #[no_grad] x: &[f64], n: usize) -> f64 { let mut s = 0.0; for i in 0..n { let z = w[i] * x[i] + b; s += if z > 0.0 { z * z } else { z.exp() - 1.0 }; } s / n as f64 }",
        "fn det(m: &[f64], n: usize) -> f64 { if n == 1 { return m[0]; } let mut total = 0.0; let mut sign = 1.0; for col in 0..n { let mut minor = Vec::with_capacity(n); for row in 1..n { for c in 0..n { if c != col { minor.push(m[row * n + c]); } } } total += sign * m[col] * det(&minor, n - 1); sign = -sign; } total }",
        "fn f<const N: usize>(a: [f64; N], x: f64) -> f64 { let v = vec![0.0; N]; let mut t = x.max(a[0]).powi(2); 'l: loop { t = t.sin(); if t < 0.1 { break 'l; } } match N { 0 => t, _ => t * a[N - 1] } }",
        "fn g(x: f32, y: f32) -> f32 { let (a, b) = (x * y, y.atan2(x)); println!(\"{} {}\", a, b); a.mul_add(b, 1.0) + f32::hypot(x, y) }",
        "fn h(v: Vec<f64>, w: &Vec<f64>) -> f64 { let mut s = 0.0; for (a, b) in v.iter().zip(w.iter()) { s += a * b; } while let Some(q) = v.last() { s -= q; break; } s }",
        "impl Vec3 { fn dot(&self, o: &Vec3) -> f64 { self.x * o.x + self.y * o.y } fn new(x: f64) -> Self { Self { x, y: 0.0 } } fn n(#[no_grad] &self, k: f64) -> f64 { self.dot(self) * k } }",
        "fn m(s: &[Vec<f64>], t: (f64, Vec3), out: &mut [f64]) -> (f64, Vec3) { let f = |x: f64| x * t.0; let v: f64 = s.iter().map(|r| r.iter().sum::<f64>()).sum(); out[0] = f(v); match t.1 { Vec3 { x, .. } => (x, Vec3 { x: v, y: 1.0 }) } }",
        "fn u(x: f64) -> f64 { use std::f64::consts::PI; use crate::m::sq as s; use super::{a, b::*}; use self::m::{c as d, self}; x * PI + s(x) }",
        "fn c(x: &[f64]) -> Shape { let m = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max); match Shape::Circle(m) { Shape::Circle(r) => Shape::Rect { w: r, h: x[0] }, other => other } }",
    ];

    /// A small deterministic generator (SplitMix64).
    pub(super) struct Rng(pub(super) u64);

    impl Rng {
        pub(super) fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        pub(super) fn below(&mut self, n: usize) -> usize {
            (self.next() % n.max(1) as u64) as usize
        }
    }

    fn flatten(tokens: TokenStream, out: &mut Vec<TokenTree>) {
        out.extend(tokens);
    }

    /// One random edit of the token tree, at any depth.
    fn mutate(tokens: TokenStream, rng: &mut Rng) -> TokenStream {
        let mut trees: Vec<TokenTree> = Vec::new();
        flatten(tokens, &mut trees);
        if trees.is_empty() {
            return TokenStream::new();
        }
        let at = rng.below(trees.len());
        match rng.below(6) {
            0 => {
                trees.remove(at);
            }
            1 => {
                let copy = trees[at].clone();
                trees.insert(at, copy);
            }
            2 if at + 1 < trees.len() => trees.swap(at, at + 1),
            3 => {
                if let TokenTree::Group(group) = &trees[at] {
                    let inner = mutate(group.stream(), rng);
                    let mut replaced = proc_macro2::Group::new(group.delimiter(), inner);
                    replaced.set_span(group.span());
                    trees[at] = TokenTree::Group(replaced);
                }
            }
            4 => {
                let words = [
                    "return", "break", "unsafe", "async", "move", "self", "crate", "f64", "loop",
                    "as", "_", "mut", "ref",
                ];
                let word = words[rng.below(words.len())];
                if let Some(token) = word
                    .parse::<TokenStream>()
                    .ok()
                    .and_then(|t| t.into_iter().next())
                {
                    trees[at] = token;
                }
            }
            _ => trees.truncate(at),
        }
        trees.into_iter().collect()
    }

    /// The macro's own compile-time cost: expanding a 500-line function.
    /// Timing, so not run by default:
    ///     cargo test -p deltad-macros --release -- --ignored --nocapture expansion_time
    #[test]
    #[ignore]
    fn expansion_time_of_a_500_line_function() {
        let blocks = std::env::var("DELTAD_BLOCKS")
            .ok()
            .and_then(|b| b.parse().ok())
            .unwrap_or(49);
        let source = crate::big_function::big_function("big", "", blocks);
        let lines = source.lines().count();
        let tokens: TokenStream = source.parse().expect("the generated function parses");
        let runs = 20;
        let start = std::time::Instant::now();
        for _ in 0..runs {
            let output = super::differentiate(TokenStream::new(), tokens.clone());
            assert!(!output.to_string().contains("compile_error"));
        }
        let each = start.elapsed() / runs;
        println!("expanding a {lines}-line function: {each:?} per expansion");
    }

    #[test]
    fn mutated_functions_never_panic() {
        let mut rng = Rng(SEED);
        let mut inputs = 0;
        for source in CORPUS {
            let original: TokenStream = source.parse().expect("corpus parses");
            // The unmutated function expands to code that parses.
            let output = super::differentiate(TokenStream::new(), original.clone());
            assert!(syn::parse2::<syn::File>(output).is_ok(), "{source}");
            for _ in 0..600 {
                let mut tokens = original.clone();
                for _ in 0..=rng.below(3) {
                    tokens = mutate(tokens, &mut rng);
                }
                inputs += 1;
                let result = std::panic::catch_unwind(|| {
                    super::differentiate(TokenStream::new(), tokens.clone())
                });
                let output = result.unwrap_or_else(|_| panic!("expansion panicked on: {tokens}"));
                let text = output.to_string();
                let parses = syn::parse2::<syn::File>(output).is_ok();
                assert!(
                    parses || text.contains("compile_error"),
                    "neither valid code nor an error for: {tokens}"
                );
            }
        }
        assert_eq!(inputs, CORPUS.len() * 600);
    }

    /// Fixed, so a failure reproduces.
    const SEED: u64 = 0x5eed_de17_ad00_0001;
}
