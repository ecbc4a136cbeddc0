//! The entries through which a caller on the compiled path takes a
//! derivative of this function inside its own code, each a callee with the
//! compiled convention of its own (`__fwd`, `__adj`, the parameter markers,
//! `__Out`, the keeps consts), so the caller's passes treat it as any
//! other call:
//!
//! * `f::vjp(x, w, s).1.x` (and `f::grad(x, w).x`, the seed 1) is a call of
//!   `f::__vjp_x` with the seed `s` as one more argument. Its forward pass is
//!   this function's forward pass and adjoint (seeded with `s`) on the
//!   caller's scalars, returning the field `x` of s·∇f (it keeps nothing).
//!   Its adjoint, given the adjoint `v` of that field, adds s·Hᵀv = s·Hv (the
//!   Hessian is symmetric) into the arguments' adjoints and ∇ₓf·v into the
//!   seed's: this function's forward pass and adjoint on dual numbers whose
//!   tangents are `v` in the parameter `x` (forward over reverse: the
//!   adjoints' tangents and the value's tangent), one run per adjoint lane.
//! * `f::jvp(x, w, &t).1`, the tangent `t` constant, is a call of `f::__jvp`
//!   with `t` as one more argument. Its forward pass is this function's on
//!   dual numbers whose tangents are `t`; its adjoint, given the adjoint `u`
//!   of the result ∇f·t, adds u·Ht into the arguments' adjoints (one forward
//!   over reverse run along `t`).
//!
//! For functions of reals, buffers of reals and plain data returning a real
//! (both engines: the passes used are the compiled convention's). A field
//! of an array parameter is a `Vec` here (its length may be a const
//! parameter, which an entry's module cannot name).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::Ident;

use super::compiled::{flat_param_type, flat_sink_bound, keeps_const, ADJ_FN, FWD_FN};
use super::Generator;
use crate::names::items;
use crate::signature::{ParamKind, Signature};

/// True if the function gets the entries.
pub(crate) fn has_nested_entries(signature: &Signature) -> bool {
    super::bridge::has_compiled_convention(signature)
        && signature.is_flat_to_real()
        && !signature.takes_functions()
        && !signature.has_in_out()
        // (Plain data the passes take again: borrowed or a primitive.)
        && signature
            .params
            .iter()
            .all(|p| p.kind.is_active() || crate::types::passed_again(&p.ty))
}

fn ident(name: &str) -> Ident {
    Ident::new(name, Span::call_site())
}

fn vjp_fwd(name: &Ident) -> Ident {
    format_ident!("__deltad_vjp_fwd_{}", syn::ext::IdentExt::unraw(name))
}

fn vjp_adj(name: &Ident) -> Ident {
    format_ident!("__deltad_vjp_adj_{}", syn::ext::IdentExt::unraw(name))
}

const JVP_FWD: &str = "__deltad_jvp_fwd";
const JVP_ADJ: &str = "__deltad_jvp_adj";

/// The entries' modules, next to the function's markers (`impl_module`
/// holds the entries).
pub(crate) fn entry_modules(signature: &Signature, impl_module: &Ident) -> TokenStream {
    if !has_nested_entries(signature) {
        return TokenStream::new();
    }
    let count = signature.params.len();
    let markers: Vec<Ident> = (0..count).map(|i| format_ident!("__P{}", i)).collect();
    let extra_marker = format_ident!("__P{}", count);
    let keeps = super::compiled::keeps_exports_false();
    let module = |module: Ident, extra: TokenStream, fwd: Ident, adj: Ident, out: TokenStream| {
        quote! {
            #[doc(hidden)]
            pub mod #module {
                #[doc(hidden)]
                pub use super::{#(#markers),*};
                #[doc(hidden)]
                pub type #extra_marker = #extra;
                #[doc(hidden)]
                pub use super::#impl_module::{#fwd as __fwd, #adj as __adj};
                #[doc(hidden)]
                pub type __Out<S> = #out;
                #keeps
            }
        }
    };
    let vjps = signature
        .params
        .iter()
        .filter(|param| param.kind.is_active())
        .map(|param| {
            let out = match &param.kind {
                ParamKind::Real => quote!(S),
                // (An array's too: its length may be a const parameter,
                // which the module cannot name.)
                _ => quote!(::std::vec::Vec<S>),
            };
            module(
                crate::names::vjp_entry_module(&param.name),
                quote!(::deltad::__private::RealParam),
                vjp_fwd(&param.name),
                vjp_adj(&param.name),
                out,
            )
        });
    let jvp = module(
        ident(crate::names::JVP_ENTRY_MODULE),
        quote!(::deltad::__private::PlainParam),
        ident(JVP_FWD),
        ident(JVP_ADJ),
        quote!(S),
    );
    quote!(#(#vjps)* #jvp)
}

/// Which entry.
#[derive(Clone, Copy)]
enum Entry {
    /// The field of parameter `k` of a `vjp`.
    Vjp(usize),
    /// The tangent of a `jvp` along a constant tangent.
    Jvp,
}

/// Names shared by an entry's two passes.
struct Names {
    s: Ident,
    a: Ident,
    stack: Ident,
    rec: Ident,
    out: Ident,
    lane: Ident,
    extra: Ident,
    value: Ident,
}

impl Names {
    fn new() -> Names {
        let local = |name: &str| Ident::new(name, Span::mixed_site());
        Names {
            s: ident("__DeltadS"),
            a: ident("__DeltadA"),
            stack: local("__deltad_stack"),
            rec: local("__deltad_rec"),
            out: local("__deltad_out"),
            lane: local("__deltad_lane"),
            extra: local("__deltad_extra"),
            value: local("__deltad_value"),
        }
    }
}

impl Generator<'_> {
    /// The entries themselves, in the module of the generated items.
    pub(super) fn nested_entries(&self, stub: bool) -> TokenStream {
        if !has_nested_entries(self.signature) {
            return TokenStream::new();
        }
        let mut out = TokenStream::new();
        for (k, param) in self.signature.params.iter().enumerate() {
            if param.kind.is_active() {
                out.extend(self.entry(Entry::Vjp(k), stub));
            }
        }
        out.extend(self.entry(Entry::Jvp, stub));
        out
    }

    /// The forward pass and the adjoint of `entry`.
    fn entry(&self, entry: Entry, stub: bool) -> TokenStream {
        let n = Names::new();
        let (s, a, prim) = (&n.s, &n.a, &self.prim);
        let params = &self.signature.params;
        let generics: Vec<TokenStream> =
            self.signature.generics.iter().map(|g| quote!(#g)).collect();
        let where_clause = &self.signature.where_clause;
        // The parameters as the compiled passes take them, and the extra
        // one: the seed, or the tangent.
        let mut declared: Vec<TokenStream> = params
            .iter()
            .map(|param| {
                let (name, ty) = (&param.name, flat_param_type(param, s));
                quote!(#name: #ty)
            })
            .collect();
        let extra = &n.extra;
        let (fwd_name, adj_name, out_type, out_adjoint) = match entry {
            Entry::Vjp(k) => {
                declared.push(quote!(#extra: #s));
                let name = &params[k].name;
                let (out_type, out_adjoint) = match &params[k].kind {
                    ParamKind::Real => (quote!(#s), quote!(#a)),
                    _ => (quote!(::std::vec::Vec<#s>), quote!(::std::vec::Vec<#a>)),
                };
                (vjp_fwd(name), vjp_adj(name), out_type, out_adjoint)
            }
            Entry::Jvp => {
                let grad = ident(items::GRAD);
                let consts = self.const_names();
                declared.push(quote!(#extra: &#grad<#(#consts,)* #prim>));
                (ident(JVP_FWD), ident(JVP_ADJ), quote!(#s), quote!(#a))
            }
        };
        let sink_types: Vec<Ident> = (0..=params.len())
            .map(|i| format_ident!("__DeltadK{}", i))
            .collect();
        let sink_names: Vec<Ident> = (0..=params.len())
            .map(|i| format_ident!("__deltad_sink{}", i, span = Span::mixed_site()))
            .collect();
        let extra_bound = match entry {
            Entry::Vjp(_) => quote!(: ::deltad::__private::ScalarSink<#a>),
            Entry::Jvp => TokenStream::new(),
        };
        let sink_bounds = params
            .iter()
            .map(|param| flat_sink_bound(&param.kind, a))
            .chain(std::iter::once(extra_bound))
            .zip(&sink_types)
            .map(|(bound, ty)| quote!(#ty #bound));
        let sinks_declared = sink_names
            .iter()
            .zip(&sink_types)
            .map(|(name, ty)| quote!(mut #name: #ty));
        let (stack, rec, out) = (&n.stack, &n.rec, &n.out);
        let attrs = quote! {
            #[doc(hidden)]
            #[inline]
            #[allow(unused_mut, unused_variables, unused_parens, clippy::all)]
        };
        let (fwd_body, adj_body) = if stub {
            (
                quote!(::core::unreachable!()),
                quote!(::core::unreachable!()),
            )
        } else {
            match entry {
                Entry::Vjp(k) => (
                    self.vjp_forward(k, &n),
                    self.vjp_adjoint(k, &n, &sink_names),
                ),
                Entry::Jvp => (self.jvp_forward(&n), self.jvp_adjoint(&n, &sink_names)),
            }
        };
        quote! {
            #attrs
            pub fn #fwd_name<#(#generics,)* #s: ::deltad::__private::Scalar<Prim = #prim>, __DeltadR: ::deltad::__private::Record<#s>>(
                #rec: &mut __DeltadR,
                #(#declared),*
            ) -> #out_type #where_clause {
                #fwd_body
            }
            #attrs
            pub fn #adj_name<#(#generics,)* #s: ::deltad::__private::Scalar<Prim = #prim>, #a: ::deltad::__private::Cotangent<#s>, #(#sink_bounds),*>(
                #stack: &mut ::deltad::__private::Stack<#s>,
                #(#declared,)*
                #out: #out_adjoint,
                #(#sinks_declared),*
            ) #where_clause {
                #adj_body
            }
        }
    }

    /// The parameters passed on to this function's passes: `taken_again`
    /// (cloned if plain and not borrowed) or not.
    fn passed_on(&self, taken_again: bool) -> Vec<TokenStream> {
        self.signature
            .params
            .iter()
            .map(|param| super::plain_argument(param, param.kind.is_active() || !taken_again))
            .collect()
    }

    /// `vjp`'s forward pass: s·∇f on the caller's scalars, the field of
    /// parameter `k` kept.
    fn vjp_forward(&self, k: usize, n: &Names) -> TokenStream {
        let (s, stack, rec, seed) = (&n.s, &n.stack, &n.rec, &n.extra);
        let (fwd, adj, keeps) = (ident(FWD_FN), ident(ADJ_FN), keeps_const());
        let params = &self.signature.params;
        let name_k = &params[k].name;
        let zero = quote!(<#s as ::deltad::__private::Scalar>::zero());
        let gradient = Ident::new("__deltad_gradient", Span::mixed_site());
        let make_gradient = match &params[k].kind {
            ParamKind::Real => quote!(let mut #gradient: #s = #zero;),
            _ => {
                quote!(let mut #gradient: ::std::vec::Vec<#s> = ::std::vec![#zero; #name_k.len()];)
            }
        };
        let sinks = params.iter().enumerate().map(|(j, param)| {
            if j != k {
                quote!(::deltad::__private::Discard::<#s>::new())
            } else if matches!(param.kind, ParamKind::Real) {
                quote!(&mut #gradient)
            } else {
                quote!(&mut #gradient[..])
            }
        });
        let (again, last) = (self.passed_on(true), self.passed_on(false));
        quote! {
            let _ = #rec;
            #make_gradient
            ::deltad::__private::with_stack::<#s, _>(|#stack| {
                // (A forward pass that keeps nothing is not needed: the
                // adjoint reads only the arguments.)
                if #keeps {
                    let _ = #fwd(&mut *#stack, #(#again),*);
                }
                #adj(&mut *#stack, #(#last,)* #seed, #(#sinks),*);
            });
            #gradient
        }
    }

    /// `vjp`'s adjoint: forward over reverse along the field's adjoint, one
    /// run per lane.
    fn vjp_adjoint(&self, k: usize, n: &Names, sinks: &[Ident]) -> TokenStream {
        let (s, a, lane, out, seed, value) = (&n.s, &n.a, &n.lane, &n.out, &n.extra, &n.value);
        let zero = quote!(<#s as ::deltad::__private::Scalar>::zero());
        let tangent = |j: usize, at: Option<TokenStream>| {
            if j != k {
                return zero.clone();
            }
            let adjoint = match at {
                Some(at) => quote!(#out[#at]),
                None => quote!(#out),
            };
            quote!(::deltad::__private::Cotangent::<#s>::lane(#adjoint, #lane))
        };
        let dual_seed = quote!(::deltad::__private::Dual::new(#seed, #zero));
        let gives = |adjoint: TokenStream| quote!(<#a as ::deltad::__private::Cotangent<#s>>::from_lane(#lane, #adjoint.tangent));
        // (The value's tangent ∇ₓf·v is the seed's adjoint: the forward
        // pass runs where the seed's adjoint is wanted.)
        let seed_sink = &sinks[self.signature.params.len()];
        let wanted = quote!(!::deltad::__private::ScalarSink::discards(&#seed_sink));
        let run = self.entry_forward_over_reverse(n, &tangent, &dual_seed, wanted, sinks, &gives);
        let to_seed = gives(quote!(#value));
        let stack = &n.stack;
        quote! {
            let _ = &mut *#stack;
            for #lane in 0..<#a as ::deltad::__private::Cotangent<#s>>::LANES {
                #run
                ::deltad::__private::ScalarSink::add(&mut #seed_sink, #to_seed);
            }
        }
    }

    /// `jvp`'s forward pass: this function's on dual numbers along the
    /// constant tangent, the result's tangent kept.
    fn jvp_forward(&self, n: &Names) -> TokenStream {
        let (s, rec) = (&n.s, &n.rec);
        let fwd = ident(FWD_FN);
        let (inputs, args, _) = self.entry_dual_inputs(n, &|j, at| self.tangent_of(n, j, at), None);
        quote! {
            let _ = #rec;
            #(#inputs)*
            let __deltad_result: ::deltad::__private::Dual<#s> =
                #fwd(&mut ::deltad::__private::NoRecord, #(#args),*);
            __deltad_result.tangent
        }
    }

    /// `jvp`'s adjoint: u·Ht into the arguments' adjoints, by one forward
    /// over reverse run along the tangent.
    fn jvp_adjoint(&self, n: &Names, sinks: &[Ident]) -> TokenStream {
        let (s, out) = (&n.s, &n.out);
        let one = quote!(<::deltad::__private::Dual<#s> as ::deltad::__private::Scalar>::one());
        let gives = |adjoint: TokenStream| quote!(#out * #adjoint.tangent);
        let run = self.entry_forward_over_reverse(
            n,
            &|j, at| self.tangent_of(n, j, at),
            &one,
            quote!(false),
            sinks,
            &gives,
        );
        let stack = &n.stack;
        quote! {
            let _ = &mut *#stack;
            #run
        }
    }

    /// The tangent the `jvp` entry gives element `at` (or the real) of
    /// parameter `j`: the constant tangent's, as a scalar.
    fn tangent_of(&self, n: &Names, j: usize, at: Option<TokenStream>) -> TokenStream {
        let (s, extra) = (&n.s, &n.extra);
        let name = &self.signature.params[j].name;
        let at = at.map(|at| quote!([#at]));
        quote!(<#s as ::deltad::__private::Scalar>::from_prim(#extra.#name #at))
    }

    /// The dual inputs of this function's passes: each differentiated
    /// parameter with the tangents `tangent(j, element)` gives; and the
    /// arguments passing them (plain parameters cloned: passes may take
    /// them again).
    /// With `spares` (a stack of dual numbers), the inputs of slices are
    /// made in its spare buffers, and the statements giving them back are
    /// returned too.
    fn entry_dual_inputs(
        &self,
        n: &Names,
        tangent: &dyn Fn(usize, Option<TokenStream>) -> TokenStream,
        spares: Option<&Ident>,
    ) -> (Vec<TokenStream>, Vec<TokenStream>, Vec<TokenStream>) {
        let s = &n.s;
        let dual = quote!(::deltad::__private::Dual<#s>);
        let mut inputs = Vec::new();
        let mut args = Vec::new();
        let mut give_back = Vec::new();
        for (j, param) in self.signature.params.iter().enumerate() {
            let name = &param.name;
            let input = format_ident!("__deltad_input{}", j, span = Span::mixed_site());
            match &param.kind {
                ParamKind::Real => {
                    let t = tangent(j, None);
                    inputs.push(
                        quote!(let #input: #dual = ::deltad::__private::Dual::new(#name, #t);),
                    );
                    args.push(quote!(#input));
                }
                ParamKind::Array { len } | ParamKind::ArrayRef { len, .. } => {
                    let t = tangent(j, Some(quote!(__deltad_i)));
                    inputs.push(quote!(let #input: [#dual; #len] = ::core::array::from_fn(|__deltad_i| ::deltad::__private::Dual::new(#name[__deltad_i], #t));));
                    args.push(quote!(&#input));
                }
                kind if kind.is_active() => {
                    let t = tangent(j, Some(quote!(__deltad_i)));
                    match spares {
                        Some(stack) => {
                            let spare = spare_duals(&dual, stack, quote!(#name.len()));
                            inputs.push(quote! {
                                let mut #input: ::std::vec::Vec<#dual> = #spare;
                                for __deltad_i in 0..#name.len() {
                                    #input[__deltad_i] = ::deltad::__private::Dual::new(#name[__deltad_i], #t);
                                }
                            });
                            give_back.push(give_back_duals(&dual, stack, &input));
                        }
                        None => inputs.push(quote!(let #input: ::std::vec::Vec<#dual> = (0..#name.len()).map(|__deltad_i| ::deltad::__private::Dual::new(#name[__deltad_i], #t)).collect();)),
                    }
                    args.push(quote!(&#input[..]));
                }
                _ => args.push(super::plain_argument(param, false)),
            }
        }
        (inputs, args, give_back)
    }

    /// One forward over reverse run of this function's passes on dual
    /// numbers (`tangent`s as in `dual_inputs`, the adjoint seeded with
    /// `seed`), the forward pass run where it keeps something or `wanted`
    /// (its result in `__deltad_value`), then each differentiated
    /// parameter's adjoint tangents given to its sink (`gives` of the dual
    /// adjoint).
    fn entry_forward_over_reverse(
        &self,
        n: &Names,
        tangent: &dyn Fn(usize, Option<TokenStream>) -> TokenStream,
        seed: &TokenStream,
        wanted: TokenStream,
        sinks: &[Ident],
        gives: &dyn Fn(TokenStream) -> TokenStream,
    ) -> TokenStream {
        let (s, stack, value) = (&n.s, &n.stack, &n.value);
        let (fwd, adj, keeps) = (ident(FWD_FN), ident(ADJ_FN), keeps_const());
        let dual = quote!(::deltad::__private::Dual<#s>);
        let dual_zero = quote!(<#dual as ::deltad::__private::Scalar>::zero());
        let (inputs, args, mut give_back) = self.entry_dual_inputs(n, tangent, Some(stack));
        let mut adjoints = Vec::new();
        let mut dual_sinks = Vec::new();
        let mut given = Vec::new();
        for (j, param) in self.signature.params.iter().enumerate() {
            let adjoint = format_ident!("__deltad_adjoint{}", j, span = Span::mixed_site());
            let sink = &sinks[j];
            match &param.kind {
                ParamKind::Real => {
                    adjoints.push(quote!(let mut #adjoint: #dual = #dual_zero;));
                    dual_sinks.push(quote!(&mut #adjoint));
                    let to = gives(quote!(#adjoint));
                    given.push(quote!(::deltad::__private::ScalarSink::add(&mut #sink, #to);));
                }
                kind if kind.is_active() => {
                    adjoints.push(match kind {
                        ParamKind::Array { len } | ParamKind::ArrayRef { len, .. } => {
                            quote!(let mut #adjoint: [#dual; #len] = [#dual_zero; #len];)
                        }
                        _ => {
                            let name = &param.name;
                            give_back.push(give_back_duals(&dual, stack, &adjoint));
                            let spare = spare_duals(&dual, stack, quote!(#name.len()));
                            quote!(let mut #adjoint: ::std::vec::Vec<#dual> = #spare;)
                        }
                    });
                    dual_sinks.push(quote!(&mut #adjoint[..]));
                    let to = gives(quote!((*__deltad_a)));
                    given.push(quote! {
                        for (__deltad_i, __deltad_a) in #adjoint.iter().enumerate() {
                            *::deltad::__private::SliceSink::at(&mut #sink, __deltad_i) += #to;
                        }
                    });
                }
                _ => dual_sinks.push(quote!(::deltad::__private::Discard::<#dual>::new())),
            }
        }
        // (The dual inputs and adjoints of slices in the dual stack's spare
        // buffers, given back after.)
        quote! {
            let mut #value: #dual = #dual_zero;
            <#s as ::deltad::__private::Scalar>::with_dual_stack(|#stack| {
                #(#inputs)*
                #(#adjoints)*
                if #keeps || #wanted {
                    #value = #fwd(&mut *#stack, #(#args),*);
                }
                #adj(&mut *#stack, #(#args,)* #seed, #(#dual_sinks),*);
                #(#given)*
                #(#give_back)*
            });
        }
    }
}

/// A buffer of `len` dual numbers (type `dual`, zeros) from the spare
/// buffers of the dual stack `stack`.
fn spare_duals(dual: &TokenStream, stack: &Ident, len: TokenStream) -> TokenStream {
    quote!(<#dual as ::deltad::__private::Cotangent<#dual>>::zeros_on(&mut *#stack, #len))
}

/// Gives `buffer`, from `spare_duals`, back to the spares of `stack`.
fn give_back_duals(dual: &TokenStream, stack: &Ident, buffer: &Ident) -> TokenStream {
    quote!(<#dual as ::deltad::__private::Cotangent<#dual>>::give_back(&mut *#stack, #buffer);)
}
