//! The compiled passes of a function in the compiled subset:
//!
//! ```text
//! fn __deltad_fwd<S: Scalar, R: Record<S>>(rec: &mut R, params..) -> S
//! fn __deltad_adj<S: Scalar, K0.., Kn>(stack: &mut Stack<S>, params.., out: S, sinks: K0.., Kn)
//! ```
//!
//! `__deltad_fwd` is the body computing on `S`, pushing what the plan says
//! the adjoint needs (`forward.rs`); `__deltad_adj` is the statements in
//! reverse (`adjoint.rs`, expressions in `adjoint_expr.rs`), with scalar
//! adjoints in locals and buffer adjoints in the sinks the caller gives.
//! `values.rs` emits expression values for both.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::Ident;

use crate::analyze::Analysis;
use crate::ir::{Function, VarId, VarKind};
use crate::signature::{ParamKind, Signature};
use values::Side;

pub(crate) use functions::{
    closure_checks, function_generic, function_param_modules, function_params, tape_callee_passes,
};
pub(crate) use keeps::{
    exports as keeps_exports, exports_nothing as keeps_exports_false, keeps_const, keeps_something,
    Keeps,
};

mod adjoint;
mod adjoint_expr;
mod checkpoint;
mod forward;
mod functions;
mod keeps;
mod kept;
mod narrow;
mod promote;
mod reserve;
mod skip;
mod values;
mod whole;

/// Where the forward code being emitted keeps values (`checkpoint.rs`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Recording {
    /// The forward pass: on its record.
    Main,
    /// Inside a checkpointed loop of the forward pass: nothing.
    Silent,
    /// A checkpointed loop's iterations run again in the adjoint: on the
    /// adjoint's stack.
    Replay,
}

/// A lowered and analyzed function, ready to emit.
pub(crate) struct Compiled {
    pub function: Function,
    pub analysis: Analysis,
    /// The closures it passes to callees' function parameters, compiled
    /// (`Function::closures`, in order).
    pub closures: Vec<ClosurePasses>,
}

/// A closure passed to a callee, as a compiled function.
pub(crate) struct ClosurePasses {
    pub signature: Signature,
    pub compiled: Compiled,
}

/// The pieces shared by both passes.
pub(crate) struct Passes<'a> {
    pub function: &'a Function,
    pub analysis: &'a Analysis,
    pub signature: &'a Signature,
    /// The closures the body passes to callees, compiled.
    pub closures: &'a [ClosurePasses],
    /// The scalar type parameter.
    pub scalar: Ident,
    /// The adjoints' type parameter: the scalar itself, or several adjoints
    /// at once (vector reverse mode, `Cotangent`).
    pub cotangent: Ident,
    /// The machine float.
    pub prim: Ident,
    /// True while emitting a loop that reserved room for its pushes
    /// (`reserve.rs`): pushes go to the room instead of the record.
    pub in_room: std::cell::Cell<bool>,
    /// The element adjoints the blocks being emitted keep in locals
    /// (`promote.rs`), outermost first.
    pub promoted: std::cell::RefCell<Vec<promote::Promoted>>,
    /// The stencil windows of the loops being emitted (`promote.rs`).
    pub windows: std::cell::RefCell<Vec<promote::Window>>,
    /// The views of buffers the loops being emitted take (`narrow.rs`).
    pub views: std::cell::RefCell<Vec<narrow::View>>,
    /// A counter for generated locals unique in the function.
    pub next_local: std::cell::Cell<usize>,
    /// Where the forward code being emitted keeps values
    /// (`checkpoint.rs`).
    pub recording: std::cell::Cell<Recording>,
    /// The checkpointed loop whose iterations are being emitted for the
    /// adjoint to run again, if any.
    pub replaying: std::cell::Cell<Option<crate::ir::LoopId>>,
    /// Makes the recording pass of a closure the body passes (for callees
    /// on the tape: `functions.rs`); it lives with the tape's code.
    pub closure_record: Option<&'a dyn Fn(&ClosurePasses) -> TokenStream>,
}

/// Generated names (mixed-site: they never meet the user's).
pub(crate) mod names {
    use proc_macro2::Span;
    use syn::Ident;

    pub(crate) fn ident(name: &str) -> Ident {
        Ident::new(name, Span::mixed_site())
    }

    pub(crate) fn record() -> Ident {
        ident("__deltad_rec")
    }

    pub(crate) fn room() -> Ident {
        ident("__deltad_room")
    }

    pub(crate) fn stack() -> Ident {
        ident("__deltad_stack")
    }

    pub(crate) fn out() -> Ident {
        ident("__deltad_out")
    }

    /// The forward pass's [`ResultUse`](deltad::__private::ResultUse).
    pub(crate) fn result_use() -> Ident {
        ident("__deltad_use")
    }
}

pub(crate) const FWD_FN: &str = "__deltad_fwd";
/// The forward pass for a caller that reads only the result's machine
/// value (forward-over-reverse), see `ResultUse`.
pub(crate) const FWD_UNVALUED_FN: &str = "__deltad_fwd_unvalued";
/// The forward pass's body, which both forward passes call.
const FWD_BODY_FN: &str = "__deltad_fwd_body";
pub(crate) const ADJ_FN: &str = "__deltad_adj";

impl<'a> Passes<'a> {
    pub(crate) fn new(compiled: &'a Compiled, signature: &'a Signature) -> Passes<'a> {
        Passes {
            function: &compiled.function,
            analysis: &compiled.analysis,
            signature,
            closures: &compiled.closures,
            scalar: Ident::new("__DeltadS", Span::call_site()),
            cotangent: Ident::new("__DeltadA", Span::call_site()),
            prim: signature.precision.ident(Span::call_site()),
            in_room: std::cell::Cell::new(false),
            promoted: std::cell::RefCell::new(Vec::new()),
            windows: std::cell::RefCell::new(Vec::new()),
            views: std::cell::RefCell::new(Vec::new()),
            next_local: std::cell::Cell::new(0),
            recording: std::cell::Cell::new(Recording::Main),
            replaying: std::cell::Cell::new(None),
            closure_record: None,
        }
    }

    pub(crate) fn active(&self, var: VarId) -> bool {
        self.analysis.active[var]
    }

    pub(crate) fn useful(&self, var: VarId) -> bool {
        self.analysis.plan.useful[var]
    }

    pub(crate) fn is_buffer(&self, var: VarId) -> bool {
        self.function.vars[var].kind == VarKind::Buffer
    }

    pub(crate) fn is_param(&self, var: VarId) -> bool {
        matches!(self.function.vars[var].origin, crate::ir::Origin::Param(_))
    }

    /// The name of a variable in both passes.
    pub(crate) fn name(&self, var: VarId) -> &Ident {
        &self.function.vars[var].name
    }

    /// The adjoint of a variable: a local of the adjoint, or for a buffer
    /// parameter its sink.
    pub(crate) fn adjoint(&self, var: VarId) -> Ident {
        if let crate::ir::Origin::Param(index) = self.function.vars[var].origin {
            if self.is_buffer(var) || self.function.vars[var].kind == VarKind::Structs {
                return sink(index);
            }
        }
        let name = syn::ext::IdentExt::unraw(self.name(var)).to_string();
        format_ident!("__deltad_adj_{}_{}", name, var, span = Span::mixed_site())
    }

    /// The local holding a local buffer's length in the adjoint, when its
    /// values are not there.
    pub(crate) fn length_local(&self, var: VarId) -> Ident {
        let name = syn::ext::IdentExt::unraw(self.name(var)).to_string();
        format_ident!("__deltad_len_{}_{}", name, var, span = Span::mixed_site())
    }

    /// `lifted::<S>(value)`: a constant real as a scalar of the pass.
    pub(crate) fn lift(&self, value: TokenStream) -> TokenStream {
        let s = &self.scalar;
        quote!(::deltad::__private::lifted::<#s>(#value))
    }

    /// The type of a plain variable the passes push and pop.
    pub(crate) fn plain_type(&self, var: VarId) -> TokenStream {
        use crate::analyze::Ty;
        match &self.analysis.types[var] {
            Ty::Real => {
                let prim = &self.prim;
                quote!(#prim)
            }
            Ty::Bool => quote!(bool),
            Ty::Named(name) => {
                let ident = Ident::new(name, Span::call_site());
                quote!(#ident)
            }
            // `pushable` checked the type before planning a push.
            _ => quote!(_),
        }
    }

    /// The type of the forward pass's result: `S`, or `Vec<S>` / `[S; N]`
    /// for a buffer result.
    pub(crate) fn output_type(&self) -> TokenStream {
        self.result_of(&self.scalar)
    }

    /// The type of the adjoint of the result the adjoint takes: the
    /// result's type, of adjoints.
    pub(crate) fn output_adjoint_type(&self) -> TokenStream {
        self.result_of(&self.cotangent)
    }

    /// The result's type with reals of type `real`.
    fn result_of(&self, real: &Ident) -> TokenStream {
        if let Some(ty) = self.signature.struct_output() {
            return twin_of(ty, real);
        }
        match self.signature.buffer_output() {
            None => quote!(#real),
            Some(crate::signature::BufferOutput::Vec) => quote!(::std::vec::Vec<#real>),
            Some(crate::signature::BufferOutput::Array(len)) => quote!([#real; #len]),
        }
    }

    /// The compiled passes' parameter list: differentiated reals as `S`,
    /// differentiated buffers as `&[S]`, functions as objects with passes
    /// (`functions.rs`), others as written.
    fn params(&self, side: Side) -> Vec<TokenStream> {
        let s = &self.scalar;
        self.signature
            .params
            .iter()
            .zip(&self.function.params)
            .enumerate()
            .map(|(index, (param, &var))| {
                let name = self.name(var);
                match &param.kind {
                    kind if crate::types::user_elements(kind).is_some() => {
                        let elem = crate::types::user_elements(kind);
                        let twin = self.twin_type(elem.expect("a buffer of a user type"));
                        quote!(#name: &[#twin])
                    }
                    ParamKind::Structured { .. } => {
                        let borrowed = struct_generic(index);
                        quote!(#name: #borrowed)
                    }
                    ParamKind::Function { .. } => {
                        let generic = functions::function_generic(index);
                        match side {
                            Side::Forward => quote!(#name: &#generic),
                            Side::Adjoint => quote!(#name: &mut #generic),
                        }
                    }
                    _ => {
                        let ty = flat_param_type(param, s);
                        quote!(#name: #ty)
                    }
                }
            })
            .collect()
    }

    /// The function's lifetime and const parameters.
    fn user_generics(&self) -> Vec<TokenStream> {
        self.signature.generics.iter().map(|g| quote!(#g)).collect()
    }

    /// The twin type of a value of the user type `ty` in the passes.
    pub(crate) fn twin_type(&self, ty: &syn::Type) -> TokenStream {
        twin_of(ty, &self.scalar)
    }

    /// The twin type of the adjoints of a value of the user type `ty`.
    pub(crate) fn adjoint_twin_type(&self, ty: &syn::Type) -> TokenStream {
        twin_of(ty, &self.cotangent)
    }

    /// The type parameters through which the passes take parameters of
    /// user types (a borrowed twin, or one made for the call), with their
    /// bounds.
    fn struct_generics(&self) -> Vec<TokenStream> {
        self.struct_params()
            .map(|(index, value)| {
                let generic = struct_generic(index);
                let s = &self.scalar;
                quote!(#generic: ::deltad::__private::StructArg<#value, #s>)
            })
            .collect()
    }

    /// The parameters of user types: their index and value type.
    pub(crate) fn struct_params(&self) -> impl Iterator<Item = (usize, &syn::Type)> {
        self.signature
            .params
            .iter()
            .enumerate()
            .filter_map(|(index, param)| match &param.kind {
                ParamKind::Structured { value, .. }
                    if crate::emit::bridge::is_struct_param(&param.kind) =>
                {
                    Some((index, value))
                }
                _ => None,
            })
    }

    /// The start of both passes: each parameter of a user type borrowed as
    /// its twin, then the differentiated fields the body reads, as scalars
    /// of the pass.
    pub(crate) fn struct_prologue(&self) -> TokenStream {
        let s = &self.scalar;
        let borrows = self.struct_params().map(|(index, value)| {
            let name = self.name(self.function.params[index]);
            let twin = self.twin_type(value);
            quote!(let #name: &#twin = ::deltad::__private::StructArg::<#value, #s>::twin(&#name);)
        });
        let leaves = self.active_fields().map(|var| {
            let name = self.name(var);
            let place = self.field_place(var);
            quote!(let #name: #s = ::deltad::__private::RealLeaf::<#s>::scalar(&#place);)
        });
        quote!(#(#borrows)* #(#leaves)*)
    }

    /// The differentiated fields the body reads.
    pub(crate) fn active_fields(&self) -> impl Iterator<Item = VarId> + '_ {
        (0..self.function.vars.len()).filter(|&var| {
            matches!(self.function.vars[var].origin, crate::ir::Origin::Field(_))
                && self.active(var)
        })
    }

    /// A field's place: `base.a.b`, members with the user's spans.
    pub(crate) fn field_place(&self, var: VarId) -> TokenStream {
        let crate::ir::Origin::Field(id) = self.function.vars[var].origin else {
            unreachable!("a field variable");
        };
        let field = &self.function.fields[id];
        let base = self.name(field.base);
        let members = &field.members;
        quote!(#base #(.#members)*)
    }

    /// The passes' items (`__deltad_fwd`, `__deltad_adj`, the consts
    /// saying what the forward pass keeps), and what it keeps.
    pub(crate) fn items(&self) -> (TokenStream, Keeps) {
        let (s, a) = (&self.scalar, &self.cotangent);
        let prim = &self.prim;
        let params = self.params(Side::Forward);
        let adj_params = self.params(Side::Adjoint);
        let mut generics = self.user_generics();
        generics.extend(self.struct_generics());
        let mut adj_generics = generics.clone();
        generics.extend(self.function_generics(Side::Forward));
        adj_generics.extend(self.function_generics(Side::Adjoint));
        let where_clause = &self.signature.where_clause;
        let (fwd_fn, adj_fn) = (
            Ident::new(FWD_FN, Span::call_site()),
            Ident::new(ADJ_FN, Span::call_site()),
        );
        let rec = names::record();
        let stack = names::stack();
        let out = names::out();
        let forward = self.forward_body();
        let mut declares_items = !self.function.body.items.is_empty();
        self.function.body.each_stmt(&mut |stmt| {
            declares_items |= stmt.blocks().iter().any(|block| !block.items.is_empty());
        });
        let keeps = Keeps::of(&forward, &rec, !declares_items);
        let keeps_consts = keeps.consts();
        let adjoint = self.adjoint_body();
        let (output, output_adjoint) = (self.output_type(), self.output_adjoint_type());
        // (A function parameter has no sink: its adjoint adds into its
        // captures' own.)
        let sinks_of: Vec<usize> = (0..self.signature.params.len())
            .filter(|&i| !matches!(self.signature.params[i].kind, ParamKind::Function { .. }))
            .collect();
        let sink_types: Vec<Ident> = sinks_of
            .iter()
            .map(|i| format_ident!("__DeltadK{}", i))
            .collect();
        let sink_bounds = sinks_of
            .iter()
            .map(|&i| &self.signature.params[i])
            .zip(&sink_types)
            .map(|(param, ty)| match &param.kind {
                kind if crate::types::user_elements(kind).is_some() => {
                    let elem = crate::types::user_elements(kind);
                    let twin = self.adjoint_twin_type(elem.expect("a buffer of a user type"));
                    quote!(#ty: ::deltad::__private::TwinsSink<#twin>)
                }
                ParamKind::Structured { value, .. } => {
                    let twin = self.adjoint_twin_type(value);
                    quote!(#ty: ::deltad::__private::TwinSink<#twin>)
                }
                kind => {
                    let bound = flat_sink_bound(kind, a);
                    quote!(#ty #bound)
                }
            });
        let sinks = sinks_of.iter().zip(&sink_types).map(|(&i, ty)| {
            let name = sink(i);
            quote!(mut #name: #ty)
        });
        // A function with a loop is not inlined into its callers: alone,
        // its loops get the registers (inlined into a larger function, the
        // optimiser may keep loop variables in memory); its call costs
        // nothing next to the loop. Straight-line functions are inlined.
        let has_loop = {
            let mut found = false;
            self.function.body.each_stmt(&mut |s| {
                found |= matches!(
                    s.kind,
                    crate::ir::StmtKind::For { .. }
                        | crate::ir::StmtKind::While { .. }
                        | crate::ir::StmtKind::Loop { .. }
                )
            });
            found
        };
        let inline = if has_loop {
            quote!(#[inline(never)])
        } else {
            quote!(#[inline])
        };
        let (fwd_body_fn, fwd_unvalued_fn) = (
            Ident::new(FWD_BODY_FN, Span::call_site()),
            Ident::new(FWD_UNVALUED_FN, Span::call_site()),
        );
        let result_use = names::result_use();
        let param_names: Vec<&Ident> = self
            .function
            .params
            .iter()
            .map(|&var| self.name(var))
            .collect();
        // The two forward passes differ only in what they do with the
        // result: one body, given the `ResultUse` as an argument.
        let entry = |name: &Ident, used: TokenStream| {
            quote! {
                #[doc(hidden)]
                #[inline(always)]
                #[allow(unused_mut, clippy::all)]
                pub fn #name<#(#generics,)* #s: ::deltad::__private::Scalar<Prim = #prim>, __DeltadR: ::deltad::__private::Record<#s>>(
                    #rec: &mut __DeltadR,
                    #(#params),*
                ) -> #output #where_clause {
                    #fwd_body_fn(#rec, #used, #(#param_names),*)
                }
            }
        };
        let valued_entry = entry(&fwd_fn, quote!(::deltad::__private::Valued));
        let unvalued_entry = entry(&fwd_unvalued_fn, quote!(::deltad::__private::Unvalued));
        let function_modules = functions::function_param_modules(self.signature);
        let closure_items = self.closure_items();
        let passed_items = self.passed_items();
        let items = quote! {
            #keeps_consts
            #function_modules
            #closure_items
            #passed_items

            #[doc(hidden)]
            #inline
            #[allow(unused_mut, unused_variables, unused_parens, unreachable_code, clippy::all)]
            pub fn #fwd_body_fn<#(#generics,)* #s: ::deltad::__private::Scalar<Prim = #prim>, __DeltadR: ::deltad::__private::Record<#s>, __DeltadV: ::deltad::__private::ResultUse>(
                #rec: &mut __DeltadR,
                #result_use: __DeltadV,
                #(#params),*
            ) -> #output #where_clause {
                #forward
            }

            #valued_entry
            #unvalued_entry

            #[doc(hidden)]
            #inline
            #[allow(unused_mut, unused_variables, unused_parens, unreachable_code, clippy::all)]
            pub fn #adj_fn<#(#adj_generics,)* #s: ::deltad::__private::Scalar<Prim = #prim>, #a: ::deltad::__private::Cotangent<#s>, #(#sink_bounds),*>(
                #stack: &mut ::deltad::__private::Stack<#s>,
                #(#adj_params,)*
                #out: #output_adjoint,
                #(#sinks),*
            ) #where_clause {
                #adjoint
            }
        };
        (items, keeps)
    }

    /// The marker types of the parameters (`__P0`, ...), by which callers
    /// convert their arguments.
    pub(crate) fn markers(signature: &Signature) -> TokenStream {
        let markers = signature.params.iter().enumerate().map(|(i, param)| {
            let name = format_ident!("__P{}", i);
            let marker = match &param.kind {
                kind if crate::types::user_elements(kind).is_some() => {
                    quote!(::deltad::__private::StructsParam)
                }
                kind if crate::emit::bridge::is_opaque_param(kind) => {
                    quote!(::deltad::__private::OpaqueParam)
                }
                kind if crate::emit::bridge::is_struct_param(kind) => match kind {
                    ParamKind::Structured {
                        passing: crate::signature::Passing::Value,
                        ..
                    } => quote!(::deltad::__private::StructValueParam),
                    _ => quote!(::deltad::__private::StructParam),
                },
                ParamKind::Real => quote!(::deltad::__private::RealParam),
                ParamKind::Slice { .. } | ParamKind::VecRef { .. } | ParamKind::Vec => {
                    quote!(::deltad::__private::SliceParam)
                }
                ParamKind::Array { .. } | ParamKind::ArrayRef { .. } => {
                    quote!(::deltad::__private::ArrayParam)
                }
                _ => quote!(::deltad::__private::PlainParam),
            };
            quote! {
                #[doc(hidden)]
                pub type #name = #marker;
            }
        });
        // The type of the result on scalars `S` (callers declare the
        // adjoint of a buffer result with it).
        // (A user type is named in the module the function's body sees.)
        let output = match (signature.buffer_output(), signature.struct_output()) {
            (None, None) if signature.opaque_output().is_some() => {
                let impl_module = Ident::new(crate::names::items::IMPL_MODULE, Span::call_site());
                quote!(self::#impl_module::__DeltadOut<S>)
            }
            (_, Some(_)) => {
                let impl_module = Ident::new(crate::names::items::IMPL_MODULE, Span::call_site());
                quote!(self::#impl_module::__DeltadOut<S>)
            }
            (None, None) => quote!(S),
            (Some(crate::signature::BufferOutput::Vec), _) => quote!(::std::vec::Vec<S>),
            (Some(crate::signature::BufferOutput::Array(len)), _) => quote!([S; #len]),
        };
        let zeros_like = signature.struct_output().map(|_| {
            let impl_module = Ident::new(crate::names::items::IMPL_MODULE, Span::call_site());
            quote! {
                #[doc(hidden)]
                pub use self::#impl_module::__deltad_zeros_like as __zeros_like;
            }
        });
        quote! {
            #(#markers)*
            #[doc(hidden)]
            pub type __Out<S> = #output;
            #zeros_like
        }
    }

    /// In the module of the generated items: the type of a result of a
    /// user type (its twin) or of a type the macro cannot see into (its
    /// buffer), as callers hold it, for `__Out` (see `markers`).
    pub(crate) fn output_alias(signature: &Signature) -> TokenStream {
        let prim = signature.precision.ident(Span::call_site());
        if let Some(ty) = signature.opaque_output() {
            // (Of a type the macro cannot see into: with the type's own
            // shape, as callers hold it.)
            return quote! {
                #[doc(hidden)]
                pub type __DeltadOut<S> = <#ty as ::deltad::__private::Differentiable<#prim>>::Twin<S>;
            };
        }
        match signature.struct_output() {
            Some(ty) => quote! {
                #[doc(hidden)]
                pub type __DeltadOut<S> = <<#ty as ::deltad::__private::HeldAs>::Form as ::deltad::__private::HeldResult<#ty, S>>::Held;
                /// Adjoints `A` shaped like the result `like`, every one 0
                /// (the adjoint a caller of the compiled passes adds into).
                #[doc(hidden)]
                #[inline]
                pub fn __deltad_zeros_like<S: ::deltad::__private::Scalar<Prim = #prim>, A: ::deltad::__private::Cotangent<S>>(
                    like: &__DeltadOut<S>,
                ) -> __DeltadOut<A> {
                    <<#ty as ::deltad::__private::HeldAs>::Form as ::deltad::__private::HeldLanes<#ty, S, A>>::held_adjoint_zeros(like)
                }
            },
            None => TokenStream::new(),
        }
    }
}

/// The twin of the user type `ty` with reals of type `real`.
fn twin_of(ty: &syn::Type, real: &Ident) -> TokenStream {
    quote!(::deltad::__private::TwinOf<#ty, #real>)
}

/// The type parameter through which the passes take parameter `index`, of
/// a user type.
fn struct_generic(index: usize) -> Ident {
    format_ident!("__DeltadB{}", index)
}

/// The type through which the compiled passes take a flat parameter (a
/// real, a buffer of reals, plain data), their reals `s`.
pub(crate) fn flat_param_type(param: &crate::signature::Param, s: &Ident) -> TokenStream {
    match &param.kind {
        ParamKind::Real => quote!(#s),
        ParamKind::Array { len } | ParamKind::ArrayRef { len, .. } => quote!(&[#s; #len]),
        kind if kind.is_active() => quote!(&[#s]),
        _ => {
            let ty = &param.ty;
            quote!(#ty)
        }
    }
}

/// The bound of the adjoint's sink of a flat parameter (`: ScalarSink<A>`,
/// `: SliceSink<A>`, none for plain data), adjoints `a`.
pub(crate) fn flat_sink_bound(kind: &ParamKind, a: &Ident) -> TokenStream {
    match kind {
        ParamKind::Real => quote!(: ::deltad::__private::ScalarSink<#a>),
        kind if kind.is_active() => quote!(: ::deltad::__private::SliceSink<#a>),
        _ => TokenStream::new(),
    }
}

/// The sink parameter of parameter `index` in `__deltad_adj`.
pub(crate) fn sink(index: usize) -> Ident {
    format_ident!("__deltad_sink{}", index, span = Span::mixed_site())
}
