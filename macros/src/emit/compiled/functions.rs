//! Functions passed as values between compiled passes.
//!
//! A function parameter `f: F` (`F: Fn(&[f64]) -> f64`) is taken by the
//! passes as an object with passes of its own: the forward pass takes
//! `&impl Fwd<S>`, the adjoint `&mut impl Adj<S, A>`, traits the callee
//! declares in a module per such parameter (`__deltad_fn{i}`, exported as
//! `__F{i}`), with the convention of a callee (markers, `__Out`, keeps
//! consts, `__fwd`/`__adj` taking the function first): so a call `f(&x)`
//! is an ordinary call for every analysis.
//!
//! A caller passing a closure compiles it as a function of its own (its
//! parameters, then its captured variables: `ClosurePasses`) in a module
//! `__deltad_closure{n}`, with two structs holding the captures' values
//! (`Fwd`) and also their adjoints' sinks (`Adj`), which implement the
//! callee's traits by calling the closure's passes.
//!
//! The function's own function parameter passed on to a callee, or read
//! by such a closure (a function parameter of the closure's), is given as
//! an adapter (`__deltad_passed{n}`, holding it shared or exclusive) that
//! implements the callee's (or the closure's) traits by calling its own.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;

use super::{flat_sink_bound, keeps, Passes, Side};
use crate::functions::{CompiledFn, FnValue};
use crate::ir::{Call, CallArg, FnArg, PassedTo};
use crate::signature::{ParamKind, Signature};

/// The argument and result types of a function value's passes, on reals
/// `s`.
fn value_type(value: FnValue, s: &TokenStream) -> TokenStream {
    match value {
        FnValue::Real => quote!(#s),
        FnValue::Slice => quote!(&[#s]),
        FnValue::Vec => quote!(::std::vec::Vec<#s>),
    }
}

/// The bound of the sink of an argument's adjoint.
fn sink_bound(value: FnValue, a: &TokenStream) -> TokenStream {
    match value {
        FnValue::Real => quote!(::deltad::__private::ScalarSink<#a>),
        _ => quote!(::deltad::__private::SliceSink<#a>),
    }
}

/// `prefix0`, `prefix1`, .. : `count` generated names.
fn numbered(prefix: &str, count: usize) -> Vec<Ident> {
    (0..count)
        .map(|k| format_ident!("{}{}", prefix, k))
        .collect()
}

/// The generic type through which the passes take function parameter
/// `index`.
pub(crate) fn function_generic(index: usize) -> Ident {
    format_ident!("__DeltadF{}", index)
}

/// The function parameters compiled passes call: index and shape.
pub(crate) fn function_params(signature: &Signature) -> impl Iterator<Item = (usize, &CompiledFn)> {
    signature
        .params
        .iter()
        .enumerate()
        .filter_map(|(index, param)| match &param.kind {
            ParamKind::Function {
                compiled: Some(shape),
                ..
            } => Some((index, shape)),
            _ => None,
        })
}

/// The pieces of a function value's methods, for a shape: its arguments'
/// names, types (on reals `s`, and on the tape's reals), the bounds of
/// their adjoints' sinks (adjoints `a`), and the tape's result type.
struct ShapeTypes {
    names: Vec<Ident>,
    sinks: Vec<Ident>,
    sink_types: Vec<Ident>,
    types: Vec<TokenStream>,
    bounds: Vec<TokenStream>,
    tape_types: Vec<TokenStream>,
    tape_out: TokenStream,
}

impl ShapeTypes {
    fn of(shape: &CompiledFn, s: &TokenStream, a: &TokenStream) -> ShapeTypes {
        let count = shape.args.len();
        let real = quote!(::deltad::__private::Real<'t, #s>);
        ShapeTypes {
            names: numbered("a", count),
            sinks: numbered("j", count),
            sink_types: numbered("J", count),
            types: shape.args.iter().map(|v| value_type(*v, s)).collect(),
            bounds: shape.args.iter().map(|v| sink_bound(*v, a)).collect(),
            tape_types: shape.args.iter().map(|v| value_type(*v, &real)).collect(),
            tape_out: value_type(shape.ret, &real),
        }
    }
}

/// The modules of the function parameters (see the module's docs).
pub(crate) fn function_param_modules(signature: &Signature) -> TokenStream {
    let prim = signature.precision.ident(Span::call_site());
    let modules = function_params(signature).map(|(index, shape)| {
        let module = crate::names::function_param_module(index);
        let (s, a) = (quote!(S), quote!(A));
        let markers = shape.args.iter().enumerate().map(|(k, value)| {
            let name = format_ident!("__P{}", k + 1);
            let marker = match value {
                FnValue::Real => quote!(::deltad::__private::RealParam),
                _ => quote!(::deltad::__private::SliceParam),
            };
            quote!(#[doc(hidden)] pub type #name = #marker;)
        });
        let out = value_type(shape.ret, &s);
        let real = quote!(::deltad::__private::Real<'t, S>);
        let ShapeTypes {
            names,
            sinks,
            sink_types,
            types,
            bounds,
            tape_types,
            tape_out,
        } = ShapeTypes::of(shape, &s, &a);
        let keeps = keeps::exports_something();
        quote! {
            #[doc(hidden)]
            pub mod #module {
                #[doc(hidden)]
                pub type __P0 = ::deltad::__private::PlainParam;
                #(#markers)*
                #[doc(hidden)]
                pub type __Out<S> = #out;
                #keeps

                /// The forward pass of a function value.
                pub trait Fwd<S: ::deltad::__private::Scalar<Prim = #prim>> {
                    /// Its forward pass.
                    fn __fwd<R: ::deltad::__private::Record<S>>(&self, rec: &mut R, #(#names: #types),*) -> __Out<S>;
                    /// Appends the values of the differentiated reals it
                    /// captures (for a callee on the tape: `bridge.rs`).
                    fn __captured(&self, values: &mut ::std::vec::Vec<S>);
                    /// A call recorded on a tape as one binding per output
                    /// real, the captured reals being `lifted`, inputs of the
                    /// tape made from `__captured`'s values (or, if empty,
                    /// constants).
                    fn __on_tape<'t>(&self, tape: &'t ::deltad::__private::Tape<S>, lifted: &[#real], #(#names: #tape_types),*) -> #tape_out where S: 't;
                }

                /// The adjoint of a function value.
                pub trait Adj<S: ::deltad::__private::Scalar<Prim = #prim>, A: ::deltad::__private::Cotangent<S>>: Fwd<S> {
                    /// Its adjoint.
                    fn __adj<#(#sink_types: #bounds),*>(&mut self, stack: &mut ::deltad::__private::Stack<S>, #(#names: #types,)* out: __Out<A>, #(#sinks: #sink_types),*);
                    /// Adds the adjoints of the captured reals, read in
                    /// `__captured`'s order.
                    fn __add_captured(&mut self, reader: &mut ::deltad::__private::GradReader<'_, S>);
                }

                #[doc(hidden)]
                #[inline(always)]
                pub fn __fwd<S: ::deltad::__private::Scalar<Prim = #prim>, R: ::deltad::__private::Record<S>, F: Fwd<S>>(rec: &mut R, f: &F, #(#names: #types),*) -> __Out<S> {
                    f.__fwd(rec, #(#names),*)
                }

                #[doc(hidden)]
                #[inline(always)]
                pub fn __adj<S: ::deltad::__private::Scalar<Prim = #prim>, A: ::deltad::__private::Cotangent<S>, F: Adj<S, A>, #(#sink_types: #bounds),*>(stack: &mut ::deltad::__private::Stack<S>, f: &mut F, #(#names: #types,)* out: __Out<A>, #(#sinks: #sink_types),*) {
                    f.__adj(stack, #(#names,)* out, #(#sinks),*)
                }
            }
        }
    });
    quote!(#(#modules)*)
}

/// For a function taking functions that took the tape path and whose other
/// parameters or result have no compiled convention (so no `bridge.rs`):
/// the modules of its function parameters and passes that never run: a
/// compiled caller passing it closures checks its `__TAKES_CLOSURES` first,
/// in a const, whose failure is the compile error saying why
/// (`closure_checks`).
pub(crate) fn tape_callee_passes(signature: &Signature) -> TokenStream {
    let modules = function_param_modules(signature);
    let count = signature.params.len();
    let sinks = signature
        .params
        .iter()
        .filter(|p| !matches!(p.kind, ParamKind::Function { .. }))
        .count();
    let (args, arg_types) = (numbered("a", count), numbered("T", count));
    let (sink_names, sink_types) = (numbered("k", sinks), numbered("K", sinks));
    let (fwd, adj) = (
        Ident::new(super::FWD_FN, Span::call_site()),
        Ident::new(super::ADJ_FN, Span::call_site()),
    );
    let keeps = keeps::keeps_something();
    let prim = signature.precision.ident(Span::call_site());
    quote! {
        #modules
        #keeps
        #[doc(hidden)]
        pub fn #fwd<S: ::deltad::__private::Scalar<Prim = #prim>, R, #(#arg_types),*>(_: &mut R, #(#args: #arg_types),*) -> super::__Out<S> {
            ::core::unreachable!("a compiled caller's const check fails to compile first")
        }
        #[doc(hidden)]
        pub fn #adj<S, O, #(#arg_types,)* #(#sink_types),*>(_: &mut ::deltad::__private::Stack<S>, #(#args: #arg_types,)* _: O, #(#sink_names: #sink_types),*) {
            ::core::unreachable!("a compiled caller's const check fails to compile first")
        }
    }
}

impl Passes<'_> {
    /// The generic parameters of the function parameters, with the trait
    /// of the forward pass or of the adjoint.
    pub(crate) fn function_generics(&self, side: Side) -> Vec<TokenStream> {
        let (s, a) = (&self.scalar, &self.cotangent);
        function_params(self.signature)
            .map(|(index, _)| {
                let generic = function_generic(index);
                let module = crate::names::function_param_module(index);
                match side {
                    Side::Forward => quote!(#generic: #module::Fwd<#s>),
                    Side::Adjoint => quote!(#generic: #module::Adj<#s, #a>),
                }
            })
            .collect()
    }

    /// The marker path of the call's argument `i`: the callee's, or for a
    /// closure's capture the closure function's.
    pub(crate) fn marker(&self, call: &Call, i: usize, span: Span) -> TokenStream {
        for arg in &call.args {
            if let CallArg::Function(FnArg::Closure {
                closure, captures, ..
            }) = arg
            {
                if let Some(k) = captures.iter().position(|&c| c == i) {
                    let module = closure_module(*closure);
                    let own = self.function.closures[*closure].own;
                    let marker = format_ident!("__P{}", own + k, span = span);
                    return quote_spanned!(span=> #module::#marker);
                }
            }
        }
        let marker = format_ident!("__P{}", i, span = span);
        let path = &call.path;
        quote_spanned!(span=> #path::#marker)
    }

    /// The arguments of the callee's pass from each argument's value
    /// (`values`, by `call.args`): the captures of closures go into the
    /// closures' structs, in place of the closures; with `sinks` (the
    /// adjoint's call, by `call.args`), the closures take their captures'
    /// sinks too, and the sinks the callee takes are returned.
    pub(crate) fn callee_args(
        &self,
        call: &Call,
        values: &[TokenStream],
        side: Side,
        sinks: Option<&[TokenStream]>,
    ) -> (Vec<TokenStream>, Vec<TokenStream>) {
        let captured: Vec<usize> = call
            .args
            .iter()
            .flat_map(|arg| match arg {
                CallArg::Function(FnArg::Closure { captures, .. }) => captures.clone(),
                _ => Vec::new(),
            })
            .collect();
        let mut args = Vec::new();
        let mut callee_sinks = Vec::new();
        for (i, arg) in call.args.iter().enumerate() {
            if captured.contains(&i) {
                continue;
            }
            match arg {
                CallArg::Function(FnArg::Param(var)) => {
                    let name = self.name(*var);
                    args.push(match (side, sinks) {
                        (Side::Adjoint, Some(_)) => quote!(&mut *#name),
                        _ => quote!(&*#name),
                    });
                }
                CallArg::Function(FnArg::Closure {
                    closure,
                    captures,
                    span,
                }) => {
                    let module = closure_module(*closure);
                    let fields = numbered("c", captures.len());
                    // (A function parameter it reads: through its adapter,
                    // which has no sink.)
                    let captured = captures.iter().map(|&c| match &call.args[c] {
                        CallArg::Function(FnArg::Passed { var, adapter, span }) => {
                            let name = self.name(*var);
                            let passed = passed_module(*adapter);
                            match sinks {
                                Some(_) => quote_spanned!(*span=> #passed::Adj(&mut *#name)),
                                None => quote_spanned!(*span=> #passed::Fwd(&*#name)),
                            }
                        }
                        _ => values[c].clone(),
                    });
                    args.push(match sinks {
                        Some(sinks) => {
                            let sink_fields = numbered("k", captures.len());
                            let capture_sinks = captures.iter().map(|&c| match &call.args[c] {
                                CallArg::Function(_) => quote!(()),
                                _ => sinks[c].clone(),
                            });
                            quote_spanned!(*span=> &mut #module::Adj { #(#fields: #captured,)* #(#sink_fields: #capture_sinks,)* })
                        }
                        None => quote_spanned!(*span=> &#module::Fwd { #(#fields: #captured),* }),
                    });
                }
                CallArg::Function(FnArg::Passed { var, adapter, span }) => {
                    let name = self.name(*var);
                    let module = passed_module(*adapter);
                    args.push(match (side, sinks) {
                        (Side::Adjoint, Some(_)) => {
                            quote_spanned!(*span=> &mut #module::Adj(&mut *#name))
                        }
                        _ => quote_spanned!(*span=> &#module::Fwd(&*#name)),
                    });
                }
                _ => {
                    args.push(values[i].clone());
                    if let Some(sinks) = sinks {
                        callee_sinks.push(sinks[i].clone());
                    }
                }
            }
        }
        (args, callee_sinks)
    }

    /// For each function parameter the body passes on to a callee, a module
    /// with two adapters holding it (`Fwd`: shared, `Adj`: exclusive) that
    /// implement the callee's traits by calling its own.
    pub(crate) fn passed_items(&self) -> TokenStream {
        let prim = &self.prim;
        let items = self.function.passed.iter().enumerate().map(|(n, passed)| {
            let crate::ir::Origin::Param(index) = self.function.vars[passed.var].origin else {
                unreachable!("function variables are parameters")
            };
            let Some((_, shape)) = function_params(self.signature).find(|&(i, _)| i == index) else {
                unreachable!("a function parameter called on the compiled path has passes")
            };
            let own = crate::names::function_param_module(index);
            let module = passed_module(n);
            // (The traits of the callee's parameter, or of the closure's.)
            let traits = match &passed.to {
                PassedTo::Callee { callee, param } => {
                    let export = crate::names::function_param_export(*param);
                    quote!(#callee::#export)
                }
                PassedTo::Closure { closure, param } => {
                    let closure = closure_module(*closure);
                    let module = crate::names::function_param_module(*param);
                    quote!(#closure::#module)
                }
            };
            let span = passed.span;
            let (fwd_trait, adj_trait) = (
                quote_spanned!(span=> #traits::Fwd),
                quote_spanned!(span=> #traits::Adj),
            );
            let out = quote!(#traits::__Out);
            let (s, a) = (quote!(__DeltadS), quote!(__DeltadA));
            let real = quote!(::deltad::__private::Real<'t, #s>);
            let ShapeTypes {
                names,
                sinks,
                sink_types,
                types,
                bounds,
                tape_types,
                tape_out,
            } = ShapeTypes::of(shape, &s, &a);
            let forward = quote! {
                #[inline(always)]
                fn __fwd<__DeltadR: ::deltad::__private::Record<#s>>(&self, rec: &mut __DeltadR, #(#names: #types),*) -> #out<#s> {
                    <F as #own::Fwd<#s>>::__fwd(&*self.0, rec, #(#names),*)
                }
                fn __captured(&self, values: &mut ::std::vec::Vec<#s>) {
                    <F as #own::Fwd<#s>>::__captured(&*self.0, values)
                }
                fn __on_tape<'t>(&self, tape: &'t ::deltad::__private::Tape<#s>, lifted: &[#real], #(#names: #tape_types),*) -> #tape_out where #s: 't {
                    <F as #own::Fwd<#s>>::__on_tape(&*self.0, tape, lifted, #(#names),*)
                }
            };
            quote! {
                #[doc(hidden)]
                pub mod #module {
                    #[doc(hidden)]
                    pub struct Fwd<'a, F>(pub &'a F);
                    #[doc(hidden)]
                    pub struct Adj<'a, F>(pub &'a mut F);
                }
                impl<'a, #s: ::deltad::__private::Scalar<Prim = #prim>, F: #own::Fwd<#s>> #fwd_trait<#s> for #module::Fwd<'a, F> {
                    #forward
                }
                impl<'a, #s: ::deltad::__private::Scalar<Prim = #prim>, F: #own::Fwd<#s>> #fwd_trait<#s> for #module::Adj<'a, F> {
                    #forward
                }
                impl<'a, #s: ::deltad::__private::Scalar<Prim = #prim>, #a: ::deltad::__private::Cotangent<#s>, F: #own::Adj<#s, #a>> #adj_trait<#s, #a> for #module::Adj<'a, F> {
                    #[inline(always)]
                    fn __adj<#(#sink_types: #bounds),*>(&mut self, stack: &mut ::deltad::__private::Stack<#s>, #(#names: #types,)* out: #out<#a>, #(#sinks: #sink_types),*) {
                        <F as #own::Adj<#s, #a>>::__adj(&mut *self.0, stack, #(#names,)* out, #(#sinks),*)
                    }
                    fn __add_captured(&mut self, reader: &mut ::deltad::__private::GradReader<'_, #s>) {
                        <F as #own::Adj<#s, #a>>::__add_captured(&mut *self.0, reader)
                    }
                }
            }
        });
        quote!(#(#items)*)
    }

    /// The modules of the closures the body passes to callees, and the
    /// implementations of the callees' traits for their structs.
    pub(crate) fn closure_items(&self) -> TokenStream {
        let items = self.closures.iter().enumerate().map(|(n, closure)| {
            let mut passes = Passes::new(&closure.compiled, &closure.signature);
            passes.closure_record = self.closure_record;
            let (items, _) = passes.items();
            // Its recording pass, for a callee on the tape (`__on_tape`).
            // (A closure calling a function parameter has none: its callee
            // took the compiled path, `closure_asserts`.)
            let record = self
                .closure_record
                .filter(|_| !closure.signature.takes_functions())
                .map(|record| record(closure));
            let markers = Passes::markers(&closure.signature);
            let def = &self.function.closures[n];
            let module = closure_module(n);
            let captures = closure.signature.params.len() - def.own;
            let (c, k) = (numbered("C", captures), numbered("K", captures));
            let (c_fields, k_fields) = (numbered("c", captures), numbered("k", captures));
            let trait_impls = self.closure_impls(n, &passes);
            quote! {
                #[doc(hidden)]
                #[allow(non_snake_case, unused_imports)]
                pub mod #module {
                    use super::*;
                    use ::deltad::__private::methods::*;
                    use ::core::iter::{Iterator as _, IntoIterator as _, DoubleEndedIterator as _, ExactSizeIterator as _};
                    use ::core::clone::Clone as _;
                    #items
                    #record
                    #markers
                    #[doc(hidden)]
                    pub struct Fwd<#(#c),*> { #(pub #c_fields: #c),* }
                    #[doc(hidden)]
                    pub struct Adj<#(#c,)* #(#k),*> { #(pub #c_fields: #c,)* #(pub #k_fields: #k),* }
                }
                #trait_impls
            }
        });
        quote!(#(#items)*)
    }

    /// The implementations of the callee's traits for closure `n`'s
    /// structs: its own parameters then its captures, given to its passes.
    fn closure_impls(&self, n: usize, passes: &Passes<'_>) -> TokenStream {
        let def = &self.function.closures[n];
        let signature = passes.signature;
        let module = closure_module(n);
        let own = def.own;
        let callee = &def.callee;
        let traits = crate::names::function_param_export(def.param);
        let prim = &self.prim;
        let (s, a) = (quote!(__DeltadS), quote!(__DeltadA));
        let (s_ident, a_ident) = (
            Ident::new("__DeltadS", Span::call_site()),
            Ident::new("__DeltadA", Span::call_site()),
        );
        let (own_params, capture_params) = signature.params.split_at(own);
        // The function parameters it reads: each its adapters' module
        // (`passed_items`) and the caller's module of its traits.
        let adapters: Vec<Option<(Ident, Ident)>> = (0..capture_params.len())
            .map(|k| {
                self.function
                    .passed
                    .iter()
                    .enumerate()
                    .find_map(|(at, passed)| {
                        match (&passed.to, self.function.vars[passed.var].origin) {
                            (
                                PassedTo::Closure { closure, param },
                                crate::ir::Origin::Param(index),
                            ) if *closure == n && *param == own + k => Some((
                                passed_module(at),
                                crate::names::function_param_module(index),
                            )),
                            _ => None,
                        }
                    })
            })
            .collect();
        let g_types = numbered("__DeltadG", capture_params.len());
        let lifetime = adapters
            .iter()
            .any(Option::is_some)
            .then(|| quote!('__deltad_p,));
        // The types of the captures in the structs (a function's: its
        // adapter, shared in `Fwd`, exclusive in `Adj`), and of the
        // closure's own parameters: as the closure's passes take them.
        let capture_types = |adapter: &str| -> Vec<TokenStream> {
            let adapter = Ident::new(adapter, Span::call_site());
            capture_params
                .iter()
                .zip(&adapters)
                .zip(&g_types)
                .map(|((param, passed), g)| match passed {
                    Some((module, _)) => quote!(#module::#adapter<'__deltad_p, #g>),
                    None => super::flat_param_type(param, &s_ident),
                })
                .collect()
        };
        let (fwd_types, adj_types) = (capture_types("Fwd"), capture_types("Adj"));
        let g_bounds = |side: Side| -> Vec<TokenStream> {
            adapters
                .iter()
                .zip(&g_types)
                .filter_map(|(passed, g)| {
                    let (_, caller) = passed.as_ref()?;
                    Some(match side {
                        Side::Forward => quote!(#g: #caller::Fwd<#s>),
                        Side::Adjoint => quote!(#g: #caller::Adj<#s, #a>),
                    })
                })
                .collect()
        };
        let (g_fwd, g_adj) = (g_bounds(Side::Forward), g_bounds(Side::Adjoint));
        let k_types = numbered("K", capture_params.len());
        let capture_bounds: Vec<TokenStream> = capture_params
            .iter()
            .zip(&k_types)
            .map(|(param, ty)| {
                let bound = flat_sink_bound(&param.kind, &a_ident);
                quote!(#ty #bound)
            })
            .collect();
        // The captures as the closure's passes take them, and the sinks of
        // their adjoints (none for a function).
        let fwd_captures: Vec<TokenStream> = adapters
            .iter()
            .zip(numbered("c", capture_params.len()))
            .map(|(passed, c)| match passed {
                Some(_) => quote!(&self.#c),
                None => quote!(self.#c),
            })
            .collect();
        let adj_captures: Vec<TokenStream> = adapters
            .iter()
            .zip(numbered("c", capture_params.len()))
            .map(|(passed, c)| match passed {
                Some(_) => quote!(&mut self.#c),
                None => quote!(self.#c),
            })
            .collect();
        let capture_sinks: Vec<TokenStream> = adapters
            .iter()
            .zip(numbered("k", capture_params.len()))
            .filter(|(passed, _)| passed.is_none())
            .map(|(_, k)| quote!(::deltad::__private::Reborrow(&mut self.#k)))
            .collect();
        let own_types: Vec<TokenStream> = own_params
            .iter()
            .map(|param| super::flat_param_type(param, &s_ident))
            .collect();
        let own_bounds: Vec<TokenStream> = own_params
            .iter()
            .map(|param| flat_sink_bound(&param.kind, &a_ident))
            .collect();
        let (own_names, own_sinks, own_sink_types) =
            (numbered("a", own), numbered("j", own), numbered("J", own));
        let (c_fields, k_fields) = (
            numbered("c", capture_params.len()),
            numbered("k", capture_params.len()),
        );
        let span = def.span;
        let fwd_trait = quote_spanned!(span=> #callee::#traits::Fwd);
        let adj_trait = quote_spanned!(span=> #callee::#traits::Adj);
        let out = quote!(#callee::#traits::__Out);
        let tape_methods = closure_tape_methods(signature, own, &c_fields, &module);
        let forward = quote! {
            #[inline(always)]
            fn __fwd<__DeltadR: ::deltad::__private::Record<#s>>(&self, rec: &mut __DeltadR, #(#own_names: #own_types),*) -> #out<#s> {
                #module::__deltad_fwd(rec, #(#own_names,)* #(#fwd_captures),*)
            }
            #tape_methods
        };
        let add_captured = capture_params.iter().zip(&c_fields).zip(&k_fields).filter(|((param, _), _)| param.kind.is_active() || matches!(param.kind, ParamKind::Function { .. })).map(|((param, c), k)| match param.kind {
            ParamKind::Real => quote!(::deltad::__private::ScalarSink::add(&mut self.#k, reader.cotangent::<#a>());),
            ParamKind::Function { .. } => {
                let index = signature.params.iter().position(|p| std::ptr::eq(p, param)).unwrap_or_default();
                let traits = crate::names::function_param_module(index);
                quote!(#module::#traits::Adj::<#s, #a>::__add_captured(&mut self.#c, reader);)
            }
            _ => quote! {
                for __deltad_k in 0..self.#c.len() {
                    *::deltad::__private::SliceSink::at(&mut self.#k, __deltad_k) += reader.cotangent::<#a>();
                }
            },
        });
        quote! {
            impl<#lifetime #s: ::deltad::__private::Scalar<Prim = #prim>, #(#g_fwd),*> #fwd_trait<#s> for #module::Fwd<#(#fwd_types),*> {
                #forward
            }
            impl<#lifetime #s: ::deltad::__private::Scalar<Prim = #prim>, #(#g_fwd,)* #(#k_types),*> #fwd_trait<#s> for #module::Adj<#(#adj_types,)* #(#k_types),*> {
                #forward
            }
            impl<#lifetime #s: ::deltad::__private::Scalar<Prim = #prim>, #a: ::deltad::__private::Cotangent<#s>, #(#g_adj,)* #(#capture_bounds),*> #adj_trait<#s, #a> for #module::Adj<#(#adj_types,)* #(#k_types),*> {
                #[inline(always)]
                fn __adj<#(#own_sink_types #own_bounds),*>(&mut self, stack: &mut ::deltad::__private::Stack<#s>, #(#own_names: #own_types,)* out: #out<#a>, #(#own_sinks: #own_sink_types),*) {
                    #module::__deltad_adj(stack, #(#own_names,)* #(#adj_captures,)* out, #(#own_sinks,)* #(#capture_sinks),*)
                }
                fn __add_captured(&mut self, reader: &mut ::deltad::__private::GradReader<'_, #s>) {
                    let _ = &reader;
                    #(#add_captured)*
                }
            }
        }
    }
}

/// The methods of a closure's structs that let a callee on the tape call
/// it (`bridge.rs`): the values of the reals it captures, and a call
/// recorded by the closure's recording pass, its captures the tape's inputs
/// `lifted` made from those values, or constants where there are none.
fn closure_tape_methods(
    signature: &Signature,
    own: usize,
    fields: &[Ident],
    module: &Ident,
) -> TokenStream {
    let (own_params, captures) = signature.params.split_at(own);
    let own = own_params;
    let s = quote!(__DeltadS);
    let real = quote!(::deltad::__private::Real);
    let out = match signature.buffer_output() {
        Some(_) => quote!(::std::vec::Vec<#real<'t, #s>>),
        None => quote!(#real<'t, #s>),
    };
    let cow = quote!(::deltad::__private::Cow);
    let own_names = numbered("a", own.len());
    let own_types = own.iter().map(|param| match param.kind {
        ParamKind::Real => quote!(#real<'t, #s>),
        ParamKind::Vec => quote!(::std::vec::Vec<#real<'t, #s>>),
        _ => quote!(&[#real<'t, #s>]),
    });
    let own_args = own
        .iter()
        .zip(&own_names)
        .map(|(param, name)| match param.kind {
            ParamKind::Real | ParamKind::Vec => quote!(#name),
            _ => quote!(#cow::Borrowed(#name)),
        });
    let mut captured = Vec::new();
    let mut capture_args = Vec::new();
    for (k, (param, c)) in captures.iter().zip(fields).enumerate() {
        match param.kind {
            // (A function parameter it reads: the reals that captures.)
            ParamKind::Function { .. } => {
                let traits = crate::names::function_param_module(own.len() + k);
                captured.push(quote!(#module::#traits::Fwd::<#s>::__captured(&self.#c, values);));
            }
            ParamKind::Real => {
                captured.push(quote!(values.push(self.#c);));
                capture_args.push(quote! {
                    if lifted.is_empty() {
                        #real::constant(self.#c)
                    } else {
                        __deltad_at += 1;
                        lifted[__deltad_at - 1]
                    }
                });
            }
            ref kind if kind.is_active() => {
                captured.push(quote!(values.extend_from_slice(&self.#c[..]);));
                capture_args.push(quote! {
                    if lifted.is_empty() {
                        #cow::Owned(self.#c.iter().map(|&__deltad_v| #real::constant(__deltad_v)).collect())
                    } else {
                        __deltad_at += self.#c.len();
                        #cow::Borrowed(&lifted[__deltad_at - self.#c.len()..__deltad_at])
                    }
                });
            }
            _ => capture_args.push(quote!(self.#c)),
        }
    }
    let record = Ident::new(crate::names::items::RECORD_FN, Span::call_site());
    // (A closure calling a function parameter has no recording pass: its
    // callee took the compiled path, so the bridge never calls it,
    // `closure_asserts`.)
    let on_tape = if signature.takes_functions() {
        quote! {
            let _ = (tape, #(#own_names),*);
            ::core::unreachable!("a compiled caller's const check fails to compile first")
        }
    } else {
        quote!(#module::#record(tape, #(#own_args,)* #(#capture_args),*))
    };
    quote! {
        fn __captured(&self, values: &mut ::std::vec::Vec<#s>) {
            let _ = &values;
            #(#captured)*
        }
        fn __on_tape<'t>(&self, tape: &'t ::deltad::__private::Tape<#s>, lifted: &[#real<'t, #s>], #(#own_names: #own_types),*) -> #out where #s: 't {
            let mut __deltad_at = 0usize;
            let _ = (&lifted, &mut __deltad_at);
            #on_tape
        }
    }
}

/// For each closure a compiled function passes (its closures' too), a
/// check that the callee's compiled passes can be called (its own or the
/// bridge's: else they never run), in a const next to the function: a
/// failure is the message, at the closure.
pub(crate) fn closure_checks(compiled: &super::Compiled) -> TokenStream {
    // (The body is relocated two modules down.)
    let checks = closure_asserts(compiled, 2);
    if checks.is_empty() {
        return TokenStream::new();
    }
    quote!(const _: () = { #checks };)
}

/// The checks of `compiled`'s closures and theirs, its paths relocated
/// `levels` modules down (a closure's body one more than its caller's).
fn closure_asserts(compiled: &super::Compiled, levels: usize) -> TokenStream {
    let given = compiled
        .function
        .closures
        .iter()
        .map(|def| (&def.callee, def.span));
    let passed = compiled.function.passed.iter().filter_map(|p| match &p.to {
        PassedTo::Callee { callee, .. } => Some((callee, p.span)),
        PassedTo::Closure { .. } => None,
    });
    let checks = given.chain(passed).map(|(callee, span)| {
        // (The callee's path as the user wrote it: the function's module
        // is where the const is.)
        let mut callee = callee.clone();
        crate::relocate::back(&mut callee, levels);
        let name = quote!(#callee).to_string().replace(' ', "");
        let message = format!("`{name}` cannot be given functions by a function on the compiled path: its parameters or result keep it on the tape (`DELTAD_ENGINE=1 cargo build` says which); write `#[differentiate(tape)]` on this function");
        quote_spanned! {span=>
            ::core::assert!(#callee::__TAKES_CLOSURES, #message);
        }
    });
    // A closure calling a function parameter has no recording pass (see
    // `closure_tape_methods`): its callee must have taken the compiled path.
    let compiled_callees = compiled
        .function
        .closures
        .iter()
        .zip(&compiled.closures)
        .filter(|(_, closure)| closure.signature.takes_functions())
        .map(|(def, _)| {
            let mut callee = def.callee.clone();
            crate::relocate::back(&mut callee, levels);
            let name = quote!(#callee).to_string().replace(' ', "");
            let message = format!("`{name}` took the tape path, so this closure, which calls a function parameter, cannot be given to it on the compiled path (`DELTAD_ENGINE=1 cargo build` says why it took the tape); write `#[differentiate(tape)]` on this function");
            quote_spanned! {def.span=>
                ::core::assert!(#callee::__COMPILED, #message);
            }
        });
    let inner = compiled
        .closures
        .iter()
        .map(|closure| closure_asserts(&closure.compiled, levels + 1));
    quote!(#(#checks)* #(#compiled_callees)* #(#inner)*)
}

/// The module of the adapters of the function parameter the body passes
/// on in `Function::passed[n]`.
fn passed_module(n: usize) -> Ident {
    format_ident!("__deltad_passed{}", n)
}

/// The module of the body's closure `n`.
pub(crate) fn closure_module(n: usize) -> Ident {
    format_ident!("__deltad_closure{}", n)
}
