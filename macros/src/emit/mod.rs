//! Emits the module generated next to the annotated function:
//!
//! ```text
//! mod loss {
//!     pub use self::__deltad_impl::{__DeltadGrad as Grad, __deltad_grad as grad,
//!                                   __deltad_value_and_grad as value_and_grad,
//!                                   __deltad_vjp as vjp, __deltad_jacobian as jacobian,
//!                                   __deltad_check as check_derivatives,
//!                                   __deltad_record as __record};
//!     mod __deltad_impl {
//!         use super::super::*;         // the user's module, as the function sees it
//!         pub struct __DeltadGrad<T = f64> { pub w: Vec<T>, pub b: T }
//!         pub fn __deltad_grad(..) -> __DeltadGrad { .. }
//!         ...
//!         pub fn __deltad_record<'t, S: Scalar<Prim = f64>>(tape: &'t Tape<S>, ..) -> Real<'t, S> { .. }
//!     }
//! }
//! ```
//!
//! The items are defined under `__deltad`-prefixed names inside a module that
//! sees exactly the user's names, so the user's body (copied into the recording
//! pass) resolves every name as it does in the original function.
//!
//! The pieces: `grad.rs` (the `Grad` struct), `wrappers.rs` (the public
//! derivative functions), `record.rs` (the recording pass, automatic or
//! custom), `forward.rs` (hidden methods through which differentiated code
//! calls differentiated methods).
//!
//! The public derivative functions are `#[inline]`: like generics, they are
//! compiled where they are called, so a library defining many annotated
//! functions pays (in build time) only for the derivatives its users call;
//! the recording pass itself is generic over the scalar.

use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};
use syn::{GenericParam, Ident, ItemFn};

use crate::names::{items, Names};
use crate::signature::{Output, ParamKind, Signature};

pub(crate) mod bridge;
mod checkpointed;
pub(crate) mod compiled;
mod compiled_nested;
mod compiled_node;
mod compiled_wrappers;
#[cfg(test)]
mod docs_check;
mod forward;
mod forward_chunks;
mod grad;
mod higher;
mod nested;
mod nested_entries;
mod nested_preaccumulated;
mod record;
mod sparse;
mod wrappers;

/// A parameter passed on as it was received (constant or discrete data):
/// moved where the call is the last to use it or it is a reference, else
/// cloned.
fn plain_argument(param: &crate::signature::Param, last: bool) -> TokenStream {
    let name = &param.name;
    if last || matches!(param.ty, syn::Type::Reference(_)) {
        quote!(#name)
    } else {
        quote!(::core::clone::Clone::clone(&#name))
    }
}

/// The recording pass as the rewrite produced it.
pub(crate) struct RecordingPass {
    pub body: syn::Block,
    /// Type aliases naming the dual twins of the user types the body builds.
    pub twin_aliases: Vec<TwinAlias>,
}

/// `type name<T> = <path as Differentiable<P>>::Twin<T>;`
pub(crate) struct TwinAlias {
    pub name: Ident,
    pub path: syn::Path,
}

/// What the generated recording pass does.
pub(crate) enum Bodies {
    /// The rewritten body of the function (the tape path).
    Real(RecordingPass),
    /// The function took the compiled path: its recording pass records it
    /// as one node whose partials its adjoint computes.
    Compiled,
    /// A custom primitive: the primal function and the user's derivative
    /// function at this path (relocated into the generated module).
    Custom(syn::Path),
    /// `unreachable!()` bodies with the right signatures, emitted next to
    /// compile errors so calls to the generated items do not cascade.
    Stub,
}

/// What is differentiated, and where its module goes.
pub(crate) struct Target<'a> {
    /// The function as the recording pass sees it (a method appears as a free
    /// function whose first parameter `self_` is the receiver).
    pub function: &'a ItemFn,
    /// The generated module's name.
    pub module: Ident,
    /// The generated module's visibility.
    pub vis: &'a syn::Visibility,
    /// What calls the primal function, from inside the generated module
    /// (the arguments follow in parentheses).
    pub primal: TokenStream,
    /// A copy of the function to emit inside the generated module, as what
    /// `primal` calls: a function declared in a block is not visible from
    /// modules declared there.
    pub primal_copy: Option<ItemFn>,
    /// For methods: where the hidden forwarding methods go.
    pub method: Option<MethodTarget>,
}

/// A method of a `#[differentiate] impl` block.
pub(crate) struct MethodTarget {
    pub name: Ident,
    /// The type of the `impl` block.
    pub self_type: syn::Type,
    /// The dual twin of the type (`__deltad_twin_Name`), when the method has
    /// a differentiated receiver.
    pub twin: Option<syn::Path>,
    pub has_receiver: bool,
}

pub(crate) use bridge::{compiled_path_signature, has_compiled_convention};

/// Which engine a function took, and why not the compiled one.
pub(crate) enum Engine<'a> {
    Compiled(&'a compiled::Compiled),
    /// On the tape, for this reason.
    Tape(String),
}

pub(crate) fn module(
    target: &Target,
    signature: Option<&Signature>,
    bodies: Bodies,
    engine: &Engine,
) -> TokenStream {
    let name = &target.module;
    let vis = target.vis;
    let cfgs = cfg_attrs(target.function);
    let impl_module = Ident::new(items::IMPL_MODULE, Span::call_site());
    let function_name = target.function.sig.ident.to_string();
    let module_doc = format!(
        "Derivatives of `{function_name}`, generated by `#[differentiate]`.\n\n\
         Reverse mode (one pass that records the local derivative of each operation, \
         then reverse sweeps): `grad`, `value_and_grad` and `grad_into` (for \
         real-valued functions), `vjp`, `jacobian` (which picks forward or reverse mode) \
         and `jacobian_rev`. Forward mode: `jvp`, `jvps` (many tangents per pass), \
         `jacobian_fwd`. Sparse Jacobians: `jacobian_pattern`, `sparse_jacobian`. Second \
         order, forward over reverse (real-valued functions): `hvp`, `hvps`, `hessian`, \
         `hessian_diagonal`, `laplacian`, `hessian_pattern`, `sparse_hessian`. `Grad` holds derivatives with respect to the \
         differentiated parameters, shaped like them. `check_derivatives` compares the \
         derivatives with central finite differences; `tape_stats` measures what one \
         recording keeps. Every function takes the same arguments as \
         `{function_name}` (plus a seed or tangent where it needs one)."
    );
    let engine_doc = match engine {
        Engine::Compiled(_) => {
            "\n\n**Engine: compiled.** The derivatives run a generated forward pass and \
             adjoint (no tape): `#[differentiate]` compiled the reverse sweep of this function."
                .to_string()
        }
        Engine::Tape(reason) => format!(
            "\n\n**Engine: tape.** The derivatives record the function's operations on a tape \
             and sweep it, because {reason}. (`#[differentiate(compiled)]` makes this a \
             compile error.)"
        ),
    };
    let module_doc = format!("{module_doc}{engine_doc}");
    let compiled = match engine {
        Engine::Compiled(compiled) => Some(*compiled),
        Engine::Tape(_) => None,
    };
    let contents = match signature {
        Some(signature) => Generator::new(target, signature, compiled).items(bodies),
        None => TokenStream::new(),
    };
    let exports = signature.map(|signature| exports(signature, &impl_module, compiled.is_some()));
    // (A function taking functions has the compiled convention, whose
    // passes on the tape path no caller can call: see
    // `compiled::tape_callee_passes`.)
    let convention = signature
        .filter(|signature| has_compiled_convention(signature) || signature.takes_functions());
    let markers = convention.map(compiled::Passes::markers);
    let output_alias = convention.map(compiled::Passes::output_alias);
    let entries = signature.map(|signature| nested_entries::entry_modules(signature, &impl_module));
    let closure_checks = compiled
        .map(compiled::closure_checks)
        .filter(|checks| !checks.is_empty())
        .map(|checks| quote!(#(#cfgs)* #checks));
    quote! {
        #closure_checks
        #(#cfgs)*
        #[doc = #module_doc]
        #[allow(warnings, unused, missing_docs, clippy::all, clippy::pedantic, clippy::nursery)]
        #vis mod #name {
            #exports
            #markers
            #entries
            mod #impl_module {
                use super::super::*;
                use ::deltad::__private::methods::*;
                // The prelude's traits, for the generated code's method
                // calls in `#[no_implicit_prelude]` modules (unnamed: no
                // name of the user's module is shadowed).
                use ::core::iter::{Iterator as _, IntoIterator as _, DoubleEndedIterator as _, ExactSizeIterator as _};
                use ::core::clone::Clone as _;
                #output_alias
                #contents
            }
        }
    }
}

/// The public names of the generated items.
fn exports(signature: &Signature, impl_module: &Ident, compiled: bool) -> TokenStream {
    let name_of = |name: &str| Ident::new(name, Span::call_site());
    let record_fn = name_of(items::RECORD_FN);
    let record = quote! {
        #[doc(hidden)]
        pub use self::#impl_module::#record_fn as __record;
    };
    let compiled_passes = |convention: bool| {
        convention.then(|| {
            let (fwd, adj) = (name_of(compiled::FWD_FN), name_of(compiled::ADJ_FN));
            let keeps = compiled::keeps_exports(impl_module);
            quote! {
                #[doc(hidden)]
                pub use self::#impl_module::#fwd as __fwd;
                #[doc(hidden)]
                pub use self::#impl_module::#adj as __adj;
                #keeps
            }
        })
    };
    if signature.takes_functions() {
        // For compiled callers passing closures: the passes and the
        // modules of the function parameters.
        let passes = compiled_passes(true);
        let modules = compiled::function_params(signature).map(|(index, _)| {
            let (module, export) = (
                crate::names::function_param_module(index),
                crate::names::function_param_export(index),
            );
            quote! {
                #[doc(hidden)]
                pub use self::#impl_module::#module as #export;
            }
        });
        // (Compiled callers passing it closures check this first: see
        // `compiled::closure_checks`. A compiled function has the
        // convention, and a function on the tape with it has the bridge.)
        let takes_closures = has_compiled_convention(signature);
        return quote! {
            #record
            #passes
            #(#modules)*
            #[doc(hidden)]
            pub const __TAKES_CLOSURES: bool = #takes_closures;
            #[doc(hidden)]
            pub const __COMPILED: bool = #compiled;
        };
    }
    let compiled_passes = compiled_passes(has_compiled_convention(signature));
    let (grad, grad_fn, value_and_grad_fn, vjp_fn, jacobian_fn, check_fn) = (
        name_of(items::GRAD),
        name_of(items::GRAD_FN),
        name_of(items::VALUE_AND_GRAD_FN),
        name_of(items::VJP_FN),
        name_of(items::JACOBIAN_FN),
        name_of(items::CHECK_FN),
    );
    let grad_into_fn = name_of(items::GRAD_INTO_FN);
    let has_in_out = signature.has_in_out();
    let scalar_exports = (matches!(signature.output, Output::Real) && !has_in_out).then(|| {
        quote! {
            #[doc(inline)]
            pub use self::#impl_module::#grad_fn as grad;
            #[doc(inline)]
            pub use self::#impl_module::#value_and_grad_fn as value_and_grad;
            #[doc(inline)]
            pub use self::#impl_module::#grad_into_fn as grad_into;
        }
    });
    let fallible_exports = signature.fallible_real().map(|_| {
        quote! {
            #[doc(inline)]
            pub use self::#impl_module::#grad_fn as grad;
            #[doc(inline)]
            pub use self::#impl_module::#value_and_grad_fn as value_and_grad;
        }
    });
    let second_order_exports = (matches!(signature.output, Output::Real)
        && !has_in_out
        && has_check(signature))
    .then(|| {
        let hvps = name_of(items::HVPS_FN);
        let (hessian_pattern, sparse_hessian) = (
            name_of(items::HESSIAN_PATTERN_FN),
            name_of(items::SPARSE_HESSIAN_FN),
        );
        let (hvp, grad_and_hvp, hessian, diagonal, laplacian) = (
            name_of(items::HVP_FN),
            name_of(items::GRAD_AND_HVP_FN),
            name_of(items::HESSIAN_FN),
            name_of(items::HESSIAN_DIAGONAL_FN),
            name_of(items::LAPLACIAN_FN),
        );
        quote! {
            #[doc(inline)]
            pub use self::#impl_module::#hvp as hvp;
            #[doc(inline)]
            pub use self::#impl_module::#hvps as hvps;
            #[doc(inline)]
            pub use self::#impl_module::#grad_and_hvp as grad_and_hvp;
            #[doc(inline)]
            pub use self::#impl_module::#hessian as hessian;
            #[doc(inline)]
            pub use self::#impl_module::#diagonal as hessian_diagonal;
            #[doc(inline)]
            pub use self::#impl_module::#laplacian as laplacian;
            #[doc(inline)]
            pub use self::#impl_module::#hessian_pattern as hessian_pattern;
            #[doc(inline)]
            pub use self::#impl_module::#sparse_hessian as sparse_hessian;
        }
    });
    let jvp_fn = name_of(items::JVP_FN);
    let jacobian_rev_fn = name_of(items::JACOBIAN_REV_FN);
    let forward_chunk_exports = (has_check(signature) && !matches!(signature.output, Output::Unit))
        .then(|| {
            let (jvps, jvps_into, jacobian_fwd) = (
                name_of(items::JVPS_FN),
                name_of(items::JVPS_INTO_FN),
                name_of(items::JACOBIAN_FWD_FN),
            );
            let (pattern, sparse) = (
                name_of(items::JACOBIAN_PATTERN_FN),
                name_of(items::SPARSE_JACOBIAN_FN),
            );
            quote! {
                #[doc(inline)]
                pub use self::#impl_module::#pattern as jacobian_pattern;
                #[doc(inline)]
                pub use self::#impl_module::#sparse as sparse_jacobian;
                #[doc(inline)]
                pub use self::#impl_module::#jvps as jvps;
                #[doc(inline)]
                pub use self::#impl_module::#jvps_into as jvps_into;
                #[doc(inline)]
                pub use self::#impl_module::#jacobian_fwd as jacobian_fwd;
            }
        });
    let checkpointed_export = signature.calls_can_be_checkpointed().then(|| {
        let (inner, public) = (
            name_of(items::CHECKPOINTED_FN),
            name_of(items::CHECKPOINTED_PUBLIC),
        );
        quote! {
            #[doc(hidden)]
            pub use self::#impl_module::#inner as #public;
        }
    });
    let tape_stats_fn = name_of(items::TAPE_STATS_FN);
    let tape_graph_fn = name_of(items::TAPE_GRAPH_FN);
    let scalar_only = ["grad", "value_and_grad"];
    let nested_exports = items::NESTED
        .iter()
        .filter_map(|(derivative, inner, public)| {
            let real_valued = matches!(signature.output, Output::Real) && !has_in_out;
            if scalar_only.contains(derivative) && !real_valued {
                return None;
            }
            let (inner, public) = (name_of(inner), name_of(public));
            Some(quote! {
                #[doc(hidden)]
                pub use self::#impl_module::#inner as #public;
            })
        });
    let check_export = has_check(signature).then(|| {
        quote! {
            #[doc(inline)]
            pub use self::#impl_module::#check_fn as check_derivatives;
        }
    });
    quote! {
        #[doc(inline)]
        pub use self::#impl_module::#grad as Grad;
        #scalar_exports
        #fallible_exports
        #[doc(inline)]
        pub use self::#impl_module::#vjp_fn as vjp;
        #[doc(inline)]
        pub use self::#impl_module::#jacobian_fn as jacobian;
        #[doc(inline)]
        pub use self::#impl_module::#jacobian_rev_fn as jacobian_rev;
        #[doc(inline)]
        pub use self::#impl_module::#jvp_fn as jvp;
        #forward_chunk_exports
        #[doc(inline)]
        pub use self::#impl_module::#tape_stats_fn as tape_stats;
        #[doc(inline)]
        pub use self::#impl_module::#tape_graph_fn as tape_graph;
        #second_order_exports
        #check_export
        #(#nested_exports)*
        #checkpointed_export
        #record
        #compiled_passes
    }
}

struct Generator<'a> {
    target: &'a Target<'a>,
    signature: &'a Signature,
    names: Names,
    prim: Ident,
    /// The compiled passes, when the function took the compiled path.
    compiled: Option<&'a compiled::Compiled>,
    /// The compiled passes' items (emitted once), and what the forward
    /// pass keeps: where nothing, its reverse-mode wrappers use a new empty
    /// stack, not the per-thread pool, and `grad` runs the adjoint alone.
    passes: Option<TokenStream>,
    keeps: compiled::Keeps,
}

/// How the inputs of an evaluation are made.
pub(super) enum InputMode<'a> {
    /// Fresh input bindings on a tape of machine floats (reverse mode).
    Reverse,
    /// Values are dual numbers whose tangents come from the `Seeds` local
    /// `seeds`: input bindings (`active`, forward-over-reverse) or constants
    /// (forward mode). `repeated`: the inputs are made again in a loop, so
    /// parameters passed by value are cloned.
    Dual {
        seeds: &'a Ident,
        active: bool,
        repeated: bool,
    },
}

/// The code that makes the inputs of one evaluation: statements creating
/// input bindings, the arguments of the recording pass, and the `Grad`
/// fields read back from an adjoint array.
struct Inputs {
    prepare: Vec<TokenStream>,
    record_args: Vec<TokenStream>,
    /// `field: value` initializers reading the adjoints through the reader.
    fields: Vec<TokenStream>,
    /// Statements adding the adjoints read through the reader to the fields
    /// of the `Grad` named by `Names::grad_into` (reverse mode only).
    add_into: Vec<TokenStream>,
    /// Statements giving the tape back the input buffers of slice
    /// parameters, once the recording pass has returned.
    recycle: Vec<TokenStream>,
    /// The dual contents of each `&mut` parameter after the pass.
    results: Vec<TokenStream>,
    /// For each `&mut` parameter: statements writing its new contents back
    /// from `__deltad_part` (a reference to its dual contents).
    write_back: Vec<TokenStream>,
}

impl<'a> Generator<'a> {
    fn new(
        target: &'a Target<'a>,
        signature: &'a Signature,
        compiled: Option<&'a compiled::Compiled>,
    ) -> Self {
        let names = Names::new(signature.precision);
        let (passes, keeps) = match compiled {
            Some(compiled) => {
                let record = |closure: &compiled::ClosurePasses| {
                    Generator::closure_node(target, closure).record(record::Body::Compiled)
                };
                let mut passes = compiled::Passes::new(compiled, signature);
                passes.closure_record = Some(&record);
                let (items, keeps) = passes.items();
                (Some(items), keeps)
            }
            None => (None, compiled::Keeps::Something),
        };
        Generator {
            target,
            signature,
            prim: signature.precision.ident(Span::call_site()),
            names,
            compiled,
            passes,
            keeps,
        }
    }

    /// The generator of a closure's recording pass: a compiled node of the
    /// closure's function (its parameters, then its captures).
    fn closure_node(target: &'a Target<'a>, closure: &'a compiled::ClosurePasses) -> Self {
        Generator {
            target,
            signature: &closure.signature,
            prim: closure.signature.precision.ident(Span::call_site()),
            names: Names::new(closure.signature.precision),
            compiled: Some(&closure.compiled),
            passes: None,
            keeps: compiled::Keeps::Something,
        }
    }

    fn items(&self, bodies: Bodies) -> TokenStream {
        let stub = matches!(bodies, Bodies::Stub);
        // With function parameters, only the recording pass exists.
        let (grad_struct, wrappers) = if self.signature.takes_functions() {
            (TokenStream::new(), TokenStream::new())
        } else {
            let wrappers = self.wrappers(stub);
            let higher = self.higher_order(stub);
            let nested = self.nested(stub);
            let entries = self.nested_entries(stub);
            let checkpointed = self.checkpointed(stub);
            (
                self.grad_struct(),
                quote!(#wrappers #higher #nested #entries #checkpointed),
            )
        };
        let forwarders = self.forwarders();
        let passes = match &self.passes {
            Some(passes) if !stub => passes.clone(),
            // (Passes that no compiled caller can call: the message says
            // why.)
            _ if self.signature.takes_functions() && !has_compiled_convention(self.signature) => {
                compiled::tape_callee_passes(self.signature)
            }
            _ => self.bridge(stub),
        };
        let (record, aliases) = match bodies {
            Bodies::Compiled => (self.record(record::Body::Compiled), Vec::new()),
            Bodies::Real(pass) => (
                self.record(record::Body::Rewritten(pass.body)),
                pass.twin_aliases,
            ),
            Bodies::Custom(derivative) => {
                (self.record(record::Body::Custom(derivative)), Vec::new())
            }
            Bodies::Stub => (self.record(record::Body::Stub), Vec::new()),
        };
        let prim = &self.prim;
        let aliases = aliases.iter().map(|alias| {
            let (name, path) = (&alias.name, &alias.path);
            quote! {
                type #name<__DeltadT> = <#path as ::deltad::__private::Differentiable<#prim>>::Twin<__DeltadT>;
            }
        });
        let primal_copy = self.target.primal_copy.as_ref().map(|copy| {
            quote! {
                #[doc(hidden)]
                #[allow(dead_code)]
                #[inline]
                #copy
            }
        });
        quote! {
            #grad_struct
            #wrappers
            #record
            #passes
            #forwarders
            #primal_copy
            #(#aliases)*
        }
    }

    fn fn_name(&self) -> String {
        self.target.function.sig.ident.to_string()
    }

    /// The function's lifetime and const parameters, for the wrappers.
    fn fn_generics(&self) -> TokenStream {
        let params = &self.signature.generics;
        if params.is_empty() {
            TokenStream::new()
        } else {
            quote!(<#(#params),*>)
        }
    }

    /// The const parameters as declared, for `Grad`.
    fn const_params(&self) -> Vec<&GenericParam> {
        self.signature
            .generics
            .iter()
            .filter(|p| matches!(p, GenericParam::Const(_)))
            .collect()
    }

    fn const_names(&self) -> Vec<&Ident> {
        self.const_params()
            .into_iter()
            .filter_map(|p| match p {
                GenericParam::Const(c) => Some(&c.ident),
                _ => None,
            })
            .collect()
    }

    /// `Grad<N, M>` (const arguments only; the element type defaults).
    fn grad_type(&self) -> TokenStream {
        let grad = Ident::new(items::GRAD, Span::call_site());
        let args = self.const_names();
        if args.is_empty() {
            quote!(#grad)
        } else {
            quote!(#grad<#(#args),*>)
        }
    }

    /// The output type as the wrappers return it.
    fn output_type(&self) -> TokenStream {
        match &self.signature.output {
            Output::Real => {
                let prim = &self.prim;
                quote!(#prim)
            }
            Output::Structured(ty) => quote!(#ty),
            Output::Unit => quote!(()),
        }
    }

    /// The function's results: its returned value (unless `()`), then the
    /// contents of each `&mut` parameter on return. `vjp` seeds and
    /// `jacobian` rows follow this order.
    fn result_types(&self) -> Vec<TokenStream> {
        let mut parts = Vec::new();
        if !matches!(self.signature.output, Output::Unit) {
            parts.push(self.output_type());
        }
        for param in &self.signature.params {
            if let ParamKind::InOut { value, .. } = &param.kind {
                parts.push(quote!(#value));
            }
        }
        parts
    }

    /// The results as one type: the single result, or a tuple.
    fn results_type(&self) -> TokenStream {
        let parts = self.result_types();
        if parts.len() == 1 {
            parts[0].clone()
        } else {
            quote!((#(#parts,)*))
        }
    }

    /// True if the function writes results into `&mut` parameters.
    fn has_in_out(&self) -> bool {
        self.signature.has_in_out()
    }

    /// The type of one `Grad` field, or `None` for parameters without one.
    fn field_type(&self, kind: &ParamKind) -> Option<TokenStream> {
        let element = Ident::new(items::GRAD_ELEMENT, Span::call_site());
        Some(match kind {
            ParamKind::Real => quote!(#element),
            ParamKind::Slice { .. } | ParamKind::VecRef { .. } | ParamKind::Vec => {
                quote!(::std::vec::Vec<#element>)
            }
            ParamKind::Array { len } | ParamKind::ArrayRef { len, .. } => quote!([#element; #len]),
            ParamKind::Structured { value, .. } | ParamKind::InOut { value, .. } => {
                quote!(<#element as ::deltad::__private::GradElement>::Of<#value>)
            }
            ParamKind::Constant | ParamKind::Discrete | ParamKind::Function { .. } => return None,
        })
    }

    /// The owned type a differentiated parameter's values live in, in the
    /// user's types (`Vec<f64>` for `&[f64]`), as a `Differentiable` type.
    fn value_type(&self, kind: &ParamKind) -> Option<TokenStream> {
        let prim = &self.prim;
        Some(match kind {
            ParamKind::Real => quote!(#prim),
            ParamKind::Slice { .. } | ParamKind::VecRef { .. } | ParamKind::Vec => {
                quote!(::std::vec::Vec<#prim>)
            }
            ParamKind::Array { len } | ParamKind::ArrayRef { len, .. } => quote!([#prim; #len]),
            ParamKind::Structured { value, .. } | ParamKind::InOut { value, .. } => quote!(#value),
            ParamKind::Constant | ParamKind::Discrete | ParamKind::Function { .. } => return None,
        })
    }
}

/// True if `check_derivatives` is generated: it calls the function many
/// times, so there must be no `&mut` results (which calls overwrite); its
/// by-value parameters without derivatives must be `Clone`, which
/// `clone_where_clause` leaves to rustc.
fn has_check(signature: &Signature) -> bool {
    signature
        .params
        .iter()
        .all(|p| !matches!(p.kind, ParamKind::InOut { .. }))
}

/// The where clause of the functions that pass a by-value parameter
/// without derivatives to many calls (`check_derivatives`, the second-order
/// functions): the function's own, plus `T: Clone` for each such parameter
/// type not surely `Clone` from its spelling, so rustc decides at the call
/// (the bound is higher-ranked, so a type that is not `Clone` makes those
/// functions uncallable rather than the module uncompilable).
fn clone_where_clause(signature: &Signature) -> TokenStream {
    let bounds: Vec<TokenStream> = signature
        .params
        .iter()
        .filter(|p| {
            !matches!(p.kind, ParamKind::Function { .. })
                && !p.kind.is_active()
                && !surely_clone(&p.ty)
        })
        .map(|p| {
            let ty = &p.ty;
            quote!(for<'__deltad_clone> #ty: ::core::clone::Clone)
        })
        .collect();
    if bounds.is_empty() {
        return signature.where_clause.to_token_stream();
    }
    let user = signature
        .where_clause
        .as_ref()
        .map(|clause| clause.predicates.iter().collect::<Vec<_>>())
        .unwrap_or_default();
    quote!(where #(#user,)* #(#bounds),*)
}

/// True for types that are surely `Clone`: primitives, references, strings,
/// and arrays, tuples, `Vec`s and `Option`s of them.
fn surely_clone(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Reference(reference) => reference.mutability.is_none(),
        syn::Type::Array(array) => surely_clone(&array.elem),
        syn::Type::Tuple(tuple) => tuple.elems.iter().all(surely_clone),
        syn::Type::Paren(paren) => surely_clone(&paren.elem),
        syn::Type::Path(path) if path.qself.is_none() => {
            let Some(last) = path.path.segments.last() else {
                return false;
            };
            let name = last.ident.to_string();
            if crate::types::is_discrete(ty) && name != "Cell" && name != "RefCell" {
                return true;
            }
            if matches!(name.as_str(), "f64" | "f32") {
                return true;
            }
            match &last.arguments {
                syn::PathArguments::AngleBracketed(args)
                    if matches!(name.as_str(), "Vec" | "Option") =>
                {
                    args.args.iter().all(|arg| match arg {
                        syn::GenericArgument::Type(inner) => surely_clone(inner),
                        _ => true,
                    })
                }
                _ => false,
            }
        }
        _ => false,
    }
}

/// The `#[cfg]` attributes of the function, repeated on every generated item
/// so the items exist exactly when the function does.
pub(crate) fn cfg_attrs(item: &ItemFn) -> Vec<&syn::Attribute> {
    item.attrs
        .iter()
        .filter(|attr| attr.path().is_ident("cfg"))
        .collect()
}

/// The function as the user wrote it, without `#[no_grad]` markers.
pub(crate) fn original(item: &ItemFn) -> TokenStream {
    item.to_token_stream()
}
