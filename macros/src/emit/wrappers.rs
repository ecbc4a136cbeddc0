//! The public derivative functions: `grad`, `value_and_grad`, `vjp`,
//! `jacobian` (the paper's wrapper, seed 004 §9 and Fig. 16).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::Ident;

use super::{Generator, InputMode, Inputs};
use crate::names::items;
use crate::signature::{Output, ParamKind, Passing};

impl Generator<'_> {
    pub(super) fn wrapper_params(&self) -> Vec<TokenStream> {
        self.signature
            .params
            .iter()
            .map(|param| {
                let (name, ty) = (&param.name, &param.ty);
                quote!(#name: #ty)
            })
            .collect()
    }

    pub(super) fn wrappers(&self, stub: bool) -> TokenStream {
        let generics = self.fn_generics();
        let where_clause = &self.signature.where_clause;
        let params = self.wrapper_params();
        let prim = &self.prim;
        let grad_type = self.grad_type();
        let output_type = self.output_type();
        let names = |name: &str| Ident::new(name, Span::call_site());
        let (grad_fn, value_and_grad_fn, vjp_fn, jacobian_fn, jacobian_rev_fn) = (
            names(items::GRAD_FN),
            names(items::VALUE_AND_GRAD_FN),
            names(items::VJP_FN),
            names(items::JACOBIAN_FN),
            names(items::JACOBIAN_REV_FN),
        );
        let arg_names: Vec<&Ident> = self.signature.params.iter().map(|p| &p.name).collect();
        let fn_name = self.fn_name();
        let body = |body: TokenStream| {
            if stub {
                quote!(::core::unreachable!())
            } else {
                body
            }
        };

        let scalar_wrappers = self.seed_by_value().then(|| {
            let grad_doc = format!(
                "The gradient of `{fn_name}` at the given arguments, with respect to its \
                 differentiated parameters.\n\nTakes exactly the arguments of `{fn_name}`. \
                 Computed by reverse mode: one pass of `{fn_name}` that records the local \
                 derivative of each operation, then one reverse sweep; the cost is a small \
                 multiple of one call."
            );
            let value_and_grad_doc = format!(
                "The value of `{fn_name}` and its gradient, from one evaluation.\n\nThe value \
                 is exactly what `{fn_name}` returns for the same arguments."
            );
            let grad_into_doc = format!(
                "Adds the gradient of `{fn_name}` at the given arguments to `grad`, and returns \
                 the value.\n\nTakes the arguments of `{fn_name}`, then the `Grad` to add to: \
                 summing gradients over many calls (a mini-batch) needs no temporary, and a \
                 `Grad` reused across calls means the call allocates nothing. Its `Vec` fields \
                 must be empty (`Grad::default()`; they are sized on first use) or as long as \
                 the arguments; otherwise the call panics."
            );
            let grad_into_fn = names(items::GRAD_INTO_FN);
            let into = self.names.grad_into();
            let (grad_into_body, value_and_grad_body) = if self.compiled.is_some() {
                (
                    self.compiled_grad_into_body(),
                    self.compiled_value_and_grad_body(None),
                )
            } else {
                (self.grad_into_body(), self.value_and_grad_body())
            };
            let grad_body = body(
                self.compiled_grad_body()
                    .unwrap_or_else(|| quote!(#value_and_grad_fn(#(#arg_names),*).1)),
            );
            let grad_into_body = body(grad_into_body);
            let value_and_grad_body = body(value_and_grad_body);
            quote! {
                #[doc = #grad_into_doc]
                #[inline]
                pub fn #grad_into_fn #generics (#(#params,)* #into: &mut #grad_type) -> #prim #where_clause {
                    #grad_into_body
                }

                #[doc = #grad_doc]
                #[inline]
                pub fn #grad_fn #generics (#(#params),*) -> #grad_type #where_clause {
                    #grad_body
                }

                #[doc = #value_and_grad_doc]
                #[inline]
                pub fn #value_and_grad_fn #generics (#(#params),*) -> (#prim, #grad_type) #where_clause {
                    #value_and_grad_body
                }
            }
        });

        // A `Result<f64, E>` result: `grad` and `value_and_grad` of the `Ok`
        // value, or the error.
        let fallible_wrappers = self.signature.fallible_real().map(|error| {
            let grad_doc = format!(
                "The gradient of `{fn_name}`'s `Ok` value at the given arguments, with \
                 respect to its differentiated parameters, or the error `{fn_name}` returns.\
                 \n\nTakes exactly the arguments of `{fn_name}`. One recording pass and one \
                 reverse sweep."
            );
            let value_and_grad_doc = format!(
                "The `Ok` value of `{fn_name}` and its gradient, from one evaluation, or the \
                 error `{fn_name}` returns."
            );
            quote! {
                #[doc = #grad_doc]
                #[inline]
                pub fn #grad_fn #generics (#(#params),*) -> ::core::result::Result<#grad_type, #error> #where_clause {
                    #value_and_grad_fn(#(#arg_names),*).map(|(_, grad)| grad)
                }

                #[doc = #value_and_grad_doc]
                #[inline]
                pub fn #value_and_grad_fn #generics (#(#params),*) -> ::core::result::Result<(#prim, #grad_type), #error> #where_clause {
                    let (value, grad) = #vjp_fn(#(#arg_names,)* &::core::result::Result::Ok(<#prim as ::deltad::__private::Primitive>::ONE));
                    value.map(|value| (value, grad))
                }
            }
        });

        let seed = Ident::new("seed", Span::mixed_site());
        let results_type = self.results_type();
        let seed_type = if self.seed_by_value() {
            quote!(#prim)
        } else {
            quote!(&#results_type)
        };
        let vjp_doc = format!(
            "The vector-Jacobian product of `{fn_name}`: its value and the derivative of \
             ⟨seed, `{fn_name}`(..)⟩ with respect to the differentiated parameters.\n\nTakes the \
             arguments of `{fn_name}` and then `seed`, shaped like the output (every real of the \
             output weighted by the matching real of the seed). One recording pass and one \
             reverse sweep."
        );
        let rows_doc = "The reals of the output are numbered in the order of the output's \
             structure: elements in index order, tuple components and struct fields in \
             declaration order, depth first.";
        let jacobian_doc = if self.jacobian_chooses() {
            format!(
                "The Jacobian of `{fn_name}`: its value and one `Grad` per real of the output \
                 (row i is the gradient of output real i).\n\n{rows_doc} Picks its mode: \
                 one forward pass on the machine float, then, if the output has more reals \
                 than the input, forward mode by chunks of 8 input reals (`jacobian_fwd`), \
                 otherwise one reverse sweep per chunk of up to 8 output reals over what \
                 that pass kept, their adjoints carried together as lanes \
                 (`jacobian_rev`)."
            )
        } else {
            format!(
                "The Jacobian of `{fn_name}`: its value and one `Grad` per real of the output \
                 (row i is the gradient of output real i).\n\n{rows_doc} Reverse mode: one \
                 pass, then one reverse sweep per output real (as `jacobian_rev`)."
            )
        };
        let sweeps = if self.compiled.is_some() {
            "one reverse sweep per chunk of up to 8 output reals (vector reverse mode: the \
             adjoints of a chunk's outputs carried together as lanes, so the sweep's own \
             work is shared by its rows)"
        } else {
            "one reverse sweep per output real"
        };
        let jacobian_rev_doc = format!(
            "The Jacobian of `{fn_name}` by reverse mode, as `jacobian` returns it: one pass, \
             then {sweeps}. The mode of choice when the output has fewer reals than the input."
        );
        let (vjp_body, jacobian_rev_body) = if self.compiled.is_some() {
            (
                self.compiled_value_and_grad_body(Some(&seed)),
                self.compiled_jacobian_body(false),
            )
        } else {
            (self.vjp_body(&seed), self.jacobian_body())
        };
        let jacobian_body = if self.jacobian_chooses() {
            self.compiled_jacobian_body(true)
        } else {
            let args = &arg_names;
            quote!(#jacobian_rev_fn(#(#args),*))
        };
        let vjp_body = body(vjp_body);
        let jacobian_body = body(jacobian_body);
        let jacobian_rev_body = body(jacobian_rev_body);
        let check = self.check_fn(stub);
        let stats_fn = Ident::new(items::TAPE_STATS_FN, Span::call_site());
        let stats_doc = format!(
            "What one recording pass of `{fn_name}` keeps for the reverse sweep: bindings, \
             terms and bytes held (checkpointed loops included, with the buffer their \
             recomputation uses). For measuring memory."
        );
        let stats_body = body(if self.compiled.is_some() {
            self.compiled_stats_body()
        } else {
            self.evaluation_stats()
        });
        let graph_fn = Ident::new(items::TAPE_GRAPH_FN, Span::call_site());
        let graph_doc = format!(
            "The tape one recording pass of `{fn_name}` makes on the given arguments, as a \
             graph: a node per Delta binding with its coefficients (the local partial \
             derivatives), an edge per dependency, the inputs labelled with their parameter \
             (`x[3]`) and the outputs marked; for a real-valued result, each node's adjoint \
             too.\n\nPrint it for a listing of the bindings, or export it with `to_dot()` for \
             Graphviz (`dot -Tsvg`)."
        );
        let graph_body = body(self.evaluation_graph());
        quote! {
            #check

            #[doc = #stats_doc]
            #[inline]
            pub fn #stats_fn #generics (#(#params),*) -> ::deltad::__private::TapeStats #where_clause {
                #stats_body
            }

            #[doc = #graph_doc]
            #[inline]
            pub fn #graph_fn #generics (#(#params),*) -> ::deltad::__private::TapeGraph #where_clause {
                #graph_body
            }

            #scalar_wrappers
            #fallible_wrappers

            #[doc = #vjp_doc]
            #[inline]
            pub fn #vjp_fn #generics (#(#params,)* #seed: #seed_type) -> (#output_type, #grad_type) #where_clause {
                #vjp_body
            }

            #[doc = #jacobian_doc]
            #[inline]
            pub fn #jacobian_fn #generics (#(#params),*) -> (#output_type, ::std::vec::Vec<#grad_type>) #where_clause {
                #jacobian_body
            }

            #[doc = #jacobian_rev_doc]
            #[inline]
            pub fn #jacobian_rev_fn #generics (#(#params),*) -> (#output_type, ::std::vec::Vec<#grad_type>) #where_clause {
                #jacobian_rev_body
            }
        }
    }

    /// Inputs for every parameter, created in parameter order; the `Grad`
    /// fields read the adjoints back in the same order through `reader`.
    pub(super) fn inputs(&self, reader: &Ident) -> Inputs {
        self.inputs_in(reader, &InputMode::Reverse)
    }

    /// Inputs made as `mode` says (see [`InputMode`]).
    pub(super) fn inputs_in(&self, reader: &Ident, mode: &InputMode) -> Inputs {
        if let InputMode::Dual { .. } = mode {
            return self.dual_inputs(reader, mode);
        }
        let tape = &self.names.tape;
        let prim = &self.prim;
        let diff = quote!(::deltad::__private::Differentiable<#prim>);
        let mut inputs = Inputs {
            prepare: Vec::new(),
            record_args: Vec::new(),
            fields: Vec::new(),
            add_into: Vec::new(),
            recycle: Vec::new(),
            results: Vec::new(),
            write_back: Vec::new(),
        };
        let into = self.names.grad_into();
        for param in &self.signature.params {
            let name = &param.name;
            let input = format_ident!("__deltad_input_{}", name, span = Span::mixed_site());
            match &param.kind {
                ParamKind::Real => {
                    inputs
                        .prepare
                        .push(quote!(let #input = ::deltad::__private::input(#tape, #name);));
                    inputs.record_args.push(quote!(#input));
                    inputs.fields.push(quote!(#name: #reader.scalar()));
                    inputs
                        .add_into
                        .push(quote!(#into.#name += #reader.scalar();));
                }
                ParamKind::Slice { .. } | ParamKind::VecRef { .. } | ParamKind::Vec => {
                    inputs.prepare.push(quote! {
                        let #input = ::deltad::__private::input_slice(#tape, &#name[..]);
                    });
                    inputs.record_args.push(match &param.kind {
                        ParamKind::Slice { .. } => {
                            quote!(::deltad::__private::Cow::Borrowed(&#input[..]))
                        }
                        ParamKind::VecRef { .. } => {
                            quote!(::deltad::__private::Cow::Borrowed(&#input))
                        }
                        _ => quote!(#input),
                    });
                    if !matches!(param.kind, ParamKind::Vec) {
                        inputs
                            .recycle
                            .push(quote!(#tape.keep_input_buffer(#input);));
                    }
                    inputs.fields.push(quote!(#name: #reader.vec(#name.len())));
                    let field = syn::ext::IdentExt::unraw(name).to_string();
                    inputs
                        .add_into
                        .push(quote!(#reader.add_to_vec(&mut #into.#name, #name.len(), #field);));
                }
                ParamKind::Array { .. } | ParamKind::ArrayRef { .. } => {
                    let value = match param.kind {
                        ParamKind::Array { .. } => quote!(#name),
                        _ => quote!(*#name),
                    };
                    inputs.prepare.push(
                        quote!(let #input = ::deltad::__private::input_array(#tape, #value);),
                    );
                    inputs.record_args.push(match &param.kind {
                        ParamKind::Array { .. } => quote!(#input),
                        _ => quote!(::deltad::__private::Cow::Borrowed(&#input)),
                    });
                    inputs.fields.push(quote!(#name: #reader.array()));
                    inputs
                        .add_into
                        .push(quote!(#reader.add_to_slice(&mut #into.#name);));
                }
                ParamKind::Structured { value, passing } | ParamKind::InOut { value, passing } => {
                    let make = |ty: &dyn quote::ToTokens, source: TokenStream| quote!(<#ty as #diff>::input(#source, #tape));
                    self.structured_input(param, value, passing, &make, reader, &mut inputs);
                }
                ParamKind::Constant | ParamKind::Discrete | ParamKind::Function { .. } => {
                    inputs.record_args.push(quote!(#name))
                }
            }
        }
        inputs
    }

    /// Inputs whose values are dual numbers, their tangents taken from the
    /// `Seeds` local of `mode` in input leaf order.
    fn dual_inputs(&self, reader: &Ident, mode: &InputMode) -> Inputs {
        let InputMode::Dual {
            seeds,
            active,
            repeated,
        } = mode
        else {
            unreachable!("dual_inputs is called for dual modes")
        };
        let tape = &self.names.tape;
        let prim = &self.prim;
        let diff = quote!(::deltad::__private::Differentiable<#prim>);
        let x = Ident::new("machine", Span::mixed_site());
        let dual = quote!(::deltad::__private::Dual::new(#x, #seeds.next_tangent()));
        let leaf = if *active {
            quote!(|#x: #prim| ::deltad::__private::input(#tape, #dual))
        } else {
            quote!(|#x: #prim| ::deltad::__private::Real::constant(#dual))
        };
        let mut inputs = Inputs {
            prepare: Vec::new(),
            record_args: Vec::new(),
            fields: Vec::new(),
            add_into: Vec::new(),
            recycle: Vec::new(),
            results: Vec::new(),
            write_back: Vec::new(),
        };
        let e = Ident::new("element", Span::mixed_site());
        for param in &self.signature.params {
            let name = &param.name;
            let input = format_ident!("__deltad_input_{}", name, span = Span::mixed_site());
            match &param.kind {
                ParamKind::Real => {
                    inputs.prepare.push(quote!(let #input = (#leaf)(#name);));
                    inputs.record_args.push(quote!(#input));
                    inputs.fields.push(quote!(#name: #reader.scalar()));
                }
                ParamKind::Slice { .. } | ParamKind::VecRef { .. } | ParamKind::Vec => {
                    inputs.prepare.push(quote! {
                        let #input: ::std::vec::Vec<_> = #name.iter().map(|&#e| (#leaf)(#e)).collect();
                    });
                    inputs.record_args.push(match &param.kind {
                        ParamKind::Vec => quote!(#input),
                        _ => quote!(::deltad::__private::Cow::Owned(#input)),
                    });
                    inputs.fields.push(quote!(#name: #reader.vec(#name.len())));
                }
                ParamKind::Array { .. } | ParamKind::ArrayRef { .. } => {
                    let value = match param.kind {
                        ParamKind::Array { .. } => quote!(#name),
                        _ => quote!((*#name)),
                    };
                    inputs.prepare.push(quote!(let #input = #value.map(#leaf);));
                    inputs.record_args.push(match &param.kind {
                        ParamKind::Array { .. } => quote!(#input),
                        _ => quote!(::deltad::__private::Cow::Owned(#input)),
                    });
                    inputs.fields.push(quote!(#name: #reader.array()));
                }
                ParamKind::Structured { value, passing } | ParamKind::InOut { value, passing } => {
                    let make = |ty: &dyn quote::ToTokens, source: TokenStream| quote!(<#ty as #diff>::build(#source, &mut #leaf));
                    self.structured_input(param, value, passing, &make, reader, &mut inputs);
                }
                ParamKind::Constant | ParamKind::Discrete if *repeated => inputs
                    .record_args
                    .push(quote!(::core::clone::Clone::clone(&#name))),
                ParamKind::Constant | ParamKind::Discrete | ParamKind::Function { .. } => {
                    inputs.record_args.push(quote!(#name))
                }
            }
        }
        inputs
    }

    /// After the recording pass: the results as one twin (moved into the
    /// local `results`), the statements writing the `&mut` parameters' new
    /// contents back, and the returned value.
    /// A structured or `&mut` parameter's inputs: `make(type, source)`
    /// makes the dual twin of a value of `type` at `source` (a reference);
    /// the field reads the adjoints back in the parameter's own structure;
    /// `&mut` parameters are also results, written back after the pass.
    fn structured_input(
        &self,
        param: &crate::signature::Param,
        value: &syn::Type,
        passing: &Passing,
        make: &dyn Fn(&dyn quote::ToTokens, TokenStream) -> TokenStream,
        reader: &Ident,
        inputs: &mut Inputs,
    ) {
        let prim = &self.prim;
        let diff = quote!(::deltad::__private::Differentiable<#prim>);
        let name = &param.name;
        let input = format_ident!("__deltad_input_{}", name, span = Span::mixed_site());
        let e = Ident::new("element", Span::mixed_site());
        let in_out = matches!(param.kind, ParamKind::InOut { .. });
        let (made, gathered) = match passing {
            Passing::Slice { elem } => {
                let each = make(elem, quote!(#e));
                (
                    quote!(#name.iter().map(|#e| #each).collect::<::std::vec::Vec<_>>()),
                    quote! {
                        #name.iter()
                            .map(|#e| <#elem as #diff>::gather(#e, &mut #reader))
                            .collect::<::std::vec::Vec<_>>()
                    },
                )
            }
            Passing::Value => (
                make(value, quote!(&#name)),
                quote!(<#value as #diff>::gather(&#name, &mut #reader)),
            ),
            Passing::Ref => (
                make(value, quote!(&*#name)),
                quote!(<#value as #diff>::gather(&*#name, &mut #reader)),
            ),
            Passing::View => (
                make(value, quote!(&#name.to_owned())),
                quote!(<#value as #diff>::gather(&#name.to_owned(), &mut #reader)),
            ),
        };
        inputs.prepare.push(quote!(let mut #input = #made;));
        inputs
            .fields
            .push(quote!(#name: <#value as #diff>::from_twin(#gathered)));
        let into = self.names.grad_into();
        let field = syn::ext::IdentExt::unraw(name).to_string();
        let field_type = match passing {
            Passing::Slice { elem } => quote!(::std::vec::Vec<#elem>),
            _ => quote!(#value),
        };
        inputs.add_into.push(quote! {
            ::deltad::__private::add_gathered::<#prim, #field_type>(
                &mut #into.#name,
                <#field_type as #diff>::from_twin(#gathered),
                #field,
            );
        });
        if !in_out {
            inputs.record_args.push(quote!(#input));
            return;
        }
        inputs.record_args.push(match passing {
            Passing::Slice { .. } => quote!(&mut #input[..]),
            _ => quote!(&mut #input),
        });
        inputs.results.push(quote!(#input));
        inputs.write_back.push(match passing {
            Passing::Slice { elem } => quote! {
                for (slot, dual) in #name.iter_mut().zip(__deltad_part.iter()) {
                    *slot = <#elem as #diff>::from_twin(<#elem as #diff>::primal(dual));
                }
            },
            _ => quote! {
                *#name = <#value as #diff>::from_twin(<#value as #diff>::primal(__deltad_part));
            },
        });
    }

    /// `value_of` reads the machine value of the returned part (the path of
    /// `output_value`, or of `forward_value` for dual numbers).
    pub(super) fn results(
        &self,
        output: &Ident,
        inputs: &mut Inputs,
        value_of: &TokenStream,
    ) -> (TokenStream, TokenStream, TokenStream) {
        let prim = &self.prim;
        let results = self.names.local("results");
        let output_type = self.output_type();
        let mut parts = Vec::new();
        if !matches!(self.signature.output, Output::Unit) {
            parts.push(quote!(#output));
        }
        parts.append(&mut inputs.results);
        let single = parts.len() == 1;
        let bind = if single {
            quote!(let #results = #(#parts)*;)
        } else {
            quote!(let #results = (#(#parts,)*);)
        };
        let part = |index: usize| {
            if single {
                quote!(&#results)
            } else {
                let index = syn::Index::from(index);
                quote!(&#results.#index)
            }
        };
        let offset = usize::from(!matches!(self.signature.output, Output::Unit));
        let write_back = inputs
            .write_back
            .drain(..)
            .enumerate()
            .map(|(i, statements)| {
                let part = part(offset + i);
                quote! {{
                    let __deltad_part = #part;
                    #statements
                }}
            });
        let write_back = quote!(#(#write_back)*);
        let value = if matches!(self.signature.output, Output::Unit) {
            quote!(())
        } else {
            let part = part(0);
            quote!(#value_of::<#prim, #output_type>(#part))
        };
        (bind, write_back, value)
    }

    /// `Grad { fields }` read from the adjoint array.
    pub(super) fn grad_value(
        &self,
        reader: &Ident,
        adjoints: &TokenStream,
        fields: &[TokenStream],
    ) -> TokenStream {
        let grad = Ident::new(items::GRAD, Span::call_site());
        let phantom_init = (!self.signature.params.iter().any(|p| p.kind.is_active()))
            .then(|| quote!(__deltad_element: ::core::marker::PhantomData));
        quote! {{
            let mut #reader = ::deltad::__private::GradReader::new(#adjoints);
            let _ = &mut #reader;
            #grad { #(#fields,)* #phantom_init }
        }}
    }

    /// One evaluation: inputs, the recording pass, the results, then
    /// `derivative` (statements ending in an expression, given the results'
    /// name and type and the `Grad` expression reading the adjoints), then
    /// the `&mut` results written back; returns (value, derivative).
    fn evaluation(
        &self,
        derivative: impl FnOnce(&Ident, &TokenStream, &TokenStream) -> TokenStream,
    ) -> TokenStream {
        let prim = &self.prim;
        let tape = &self.names.tape;
        let adjoints = self.names.local("adjoints");
        let reader = self.names.local("reader");
        let output = self.names.local("output");
        let results = self.names.local("results");
        let record_fn = Ident::new(items::RECORD_FN, Span::call_site());
        let mut inputs = self.inputs(&reader);
        let (bind, write_back, value) = self.results(
            &output,
            &mut inputs,
            &quote!(::deltad::__private::output_value),
        );
        let Inputs {
            prepare,
            record_args,
            fields,
            recycle,
            ..
        } = inputs;
        let grad = self.grad_value(&reader, &quote!(&#adjoints[..]), &fields);
        let derivative = derivative(&results, &self.results_type(), &grad);
        quote! {
            <#prim as ::deltad::__private::Scalar>::with_tape(|#tape, #adjoints| {
                #(#prepare)*
                let #output = #record_fn(#tape, #(#record_args),*);
                #(#recycle)*
                #bind
                let __deltad_derivative = { #derivative };
                #write_back
                (#value, __deltad_derivative)
            })
        }
    }

    fn value_and_grad_body(&self) -> TokenStream {
        let (tape, adjoints) = (&self.names.tape, self.names.local("adjoints"));
        self.evaluation(|results, _, grad| {
            quote! {
                ::deltad::__private::sweep_from(#tape, &#results, #adjoints);
                #grad
            }
        })
    }

    /// `value_and_grad` adding into the caller's `Grad` instead of making one.
    fn grad_into_body(&self) -> TokenStream {
        let prim = &self.prim;
        let tape = &self.names.tape;
        let adjoints = self.names.local("adjoints");
        let reader = self.names.local("reader");
        let output = self.names.local("output");
        let record_fn = Ident::new(items::RECORD_FN, Span::call_site());
        let Inputs {
            prepare,
            record_args,
            add_into,
            recycle,
            ..
        } = self.inputs(&reader);
        quote! {
            <#prim as ::deltad::__private::Scalar>::with_tape(|#tape, #adjoints| {
                #(#prepare)*
                let #output = #record_fn(#tape, #(#record_args),*);
                #(#recycle)*
                ::deltad::__private::sweep_from(#tape, &#output, #adjoints);
                let mut #reader = ::deltad::__private::GradReader::new(&#adjoints[..]);
                #(#add_into)*
                ::deltad::__private::output_value::<#prim, #prim>(&#output)
            })
        }
    }

    fn vjp_body(&self, seed: &Ident) -> TokenStream {
        let (prim, tape, adjoints) = (&self.prim, &self.names.tape, self.names.local("adjoints"));
        let seed_ref = if self.seed_by_value() {
            quote!(&#seed)
        } else {
            quote!(#seed)
        };
        self.evaluation(|results, results_type, grad| {
            quote! {
                ::deltad::__private::seed_and_sweep::<#prim, #results_type>(#tape, &#results, #seed_ref, #adjoints);
                #grad
            }
        })
    }

    /// The statistics of the tape after one recording pass.
    fn evaluation_stats(&self) -> TokenStream {
        let prim = &self.prim;
        let tape = &self.names.tape;
        let adjoints = self.names.local("adjoints");
        let reader = self.names.local("reader");
        let record_fn = Ident::new(items::RECORD_FN, Span::call_site());
        let Inputs {
            prepare,
            record_args,
            ..
        } = self.inputs(&reader);
        quote! {
            <#prim as ::deltad::__private::Scalar>::with_tape(|#tape, #adjoints| {
                #(#prepare)*
                let _ = #record_fn(#tape, #(#record_args),*);
                #tape.stats()
            })
        }
    }

    /// The tape after one recording pass, as a graph: each parameter's
    /// inputs labelled with its name, the results' reals marked as outputs.
    fn evaluation_graph(&self) -> TokenStream {
        let prim = &self.prim;
        let tape = &self.names.tape;
        let adjoints = self.names.local("adjoints");
        let reader = self.names.local("reader");
        let output = self.names.local("output");
        let results = self.names.local("results");
        let labels = self.names.local("labels");
        let leaves = self.names.local("leaves");
        let record_fn = Ident::new(items::RECORD_FN, Span::call_site());
        let mut inputs = self.inputs(&reader);
        let (bind, _, _) = self.results(
            &output,
            &mut inputs,
            &quote!(::deltad::__private::output_value),
        );
        let Inputs {
            prepare,
            record_args,
            recycle,
            ..
        } = inputs;
        // Each differentiated parameter makes its inputs in one statement,
        // in parameter order: the tape's length around it gives its ids.
        let active: Vec<_> = (self.signature.params.iter())
            .filter(|param| param.kind.is_active())
            .collect();
        let prepare: Vec<TokenStream> = if active.len() == prepare.len() {
            let start = self.names.local("start");
            active
                .iter()
                .zip(prepare)
                .map(|(param, statement)| {
                    let name = syn::ext::IdentExt::unraw(&param.name).to_string();
                    let indexed = !matches!(param.kind, ParamKind::Real);
                    quote! {
                        let #start = #tape.len();
                        #statement
                        #labels.push(::deltad::__private::InputLabel {
                            name: #name,
                            bindings: #start..#tape.len(),
                            indexed: #indexed,
                        });
                    }
                })
                .collect()
        } else {
            prepare
        };
        let fn_name = self.fn_name();
        let results_type = self.results_type();
        quote! {
            <#prim as ::deltad::__private::Scalar>::with_tape(|#tape, #adjoints| {
                let _ = &#adjoints;
                #[allow(unused_mut)]
                let mut #labels: ::std::vec::Vec<::deltad::__private::InputLabel<'static>> =
                    ::std::vec::Vec::new();
                #(#prepare)*
                let #output = #record_fn(#tape, #(#record_args),*);
                #(#recycle)*
                #bind
                let #leaves =
                    ::deltad::__private::output_leaves::<#prim, #results_type>(&#results);
                ::deltad::__private::TapeGraph::from_tape(#tape, #fn_name, &#labels, &#leaves)
            })
        }
    }

    /// A real-valued function without `&mut` results takes its seed by value.
    pub(super) fn seed_by_value(&self) -> bool {
        matches!(self.signature.output, Output::Real) && !self.has_in_out()
    }

    fn jacobian_body(&self) -> TokenStream {
        let (prim, tape, adjoints) = (&self.prim, &self.names.tape, self.names.local("adjoints"));
        let (rows, leaf) = (self.names.local("rows"), self.names.local("leaf"));
        self.evaluation(|results, results_type, grad| {
            quote! {
                let mut #rows = ::std::vec::Vec::new();
                for #leaf in ::deltad::__private::output_leaves::<#prim, #results_type>(&#results) {
                    #tape.gradient_into(#leaf, <#prim as ::deltad::__private::Primitive>::ONE, #adjoints);
                    #rows.push(#grad);
                }
                #rows
            }
        })
    }

    /// `check_derivatives`: the Jacobian against central finite differences
    /// of the function itself, entry by entry. It requires the by-value
    /// parameters without derivatives to be `Clone` (they are passed to many
    /// calls).
    fn check_fn(&self, stub: bool) -> TokenStream {
        if !super::has_check(self.signature) {
            return TokenStream::new();
        }
        let generics = self.fn_generics();
        let where_clause = super::clone_where_clause(self.signature);
        let params = self.wrapper_params();
        let prim = &self.prim;
        let check_fn = Ident::new(items::CHECK_FN, Span::call_site());
        let jacobian_fn = Ident::new(items::JACOBIAN_FN, Span::call_site());
        let fn_name = self.fn_name();
        let doc = format!(
            "Checks the derivatives of `{fn_name}` at the given arguments against central \
             finite differences of `{fn_name}` itself: every entry of `jacobian` is compared \
             with (f(x + h) - f(x - h)) / 2h, h = ∛ε·max(1, |x|). Call `assert_within(tol)` on \
             the result in a test; for custom derivatives this checks the user's partials."
        );
        if stub {
            return quote! {
                #[doc = #doc]
                #[inline]
                pub fn #check_fn #generics (#(#params),*) -> ::deltad::__private::DerivativeCheck #where_clause {
                    ::core::unreachable!()
                }
            };
        }
        let primal = &self.target.primal;
        let output_type = self.output_type();
        let rows = self.names.local("rows");
        let report = self.names.local("report");
        let base = self.names.local("base");
        let flat = self.names.local("flat");
        let leaf = self.names.local("leaf");
        let row = self.names.local("row");
        // Each argument for one call of the primal function, with parameter
        // `replaced` (if any) given by the expression `with`.
        let call_args = |replaced: Option<(usize, &TokenStream)>| -> Vec<TokenStream> {
            self.signature
                .params
                .iter()
                .enumerate()
                .map(|(index, param)| {
                    let name = &param.name;
                    if let Some((at, with)) = replaced {
                        if at == index {
                            return match &param.kind {
                                ParamKind::Slice { .. } => quote!(&#with[..]),
                                ParamKind::VecRef { .. } | ParamKind::ArrayRef { .. } => {
                                    quote!(&#with)
                                }
                                ParamKind::Structured {
                                    passing: Passing::Ref,
                                    ..
                                } => quote!(&#with),
                                ParamKind::Structured {
                                    passing: Passing::View,
                                    ..
                                } => quote!(#with.view()),
                                ParamKind::Structured {
                                    passing: Passing::Slice { .. },
                                    ..
                                } => {
                                    quote!(&#with[..])
                                }
                                _ => quote!(#with),
                            };
                        }
                    }
                    match &param.kind {
                        ParamKind::Vec
                        | ParamKind::Structured {
                            passing: Passing::Value,
                            ..
                        }
                        | ParamKind::Constant
                        | ParamKind::Discrete => quote!(::core::clone::Clone::clone(&#name)),
                        _ => quote!(#name),
                    }
                })
                .collect()
        };
        let jacobian_args = call_args(None);
        let mut columns = Vec::new();
        for (index, param) in self.signature.params.iter().enumerate() {
            let Some(value_type) = self.value_type(&param.kind) else {
                continue;
            };
            let name = &param.name;
            let label = syn::ext::IdentExt::unraw(name).to_string();
            let owned = match &param.kind {
                ParamKind::Real | ParamKind::Array { .. } => quote!(#name),
                ParamKind::ArrayRef { .. } => quote!(*#name),
                ParamKind::Slice { .. } | ParamKind::VecRef { .. } | ParamKind::Vec => {
                    quote!(#name.to_vec())
                }
                ParamKind::Structured { passing, .. } => {
                    let d = quote!(<#value_type as ::deltad::__private::Differentiable<#prim>>);
                    match passing {
                        Passing::Value => quote!(#d::from_twin(#d::to_twin(&#name))),
                        Passing::Ref => quote!(#d::from_twin(#d::to_twin(#name))),
                        Passing::View => quote!(#name.to_owned()),
                        Passing::Slice { elem } => {
                            let e = quote!(<#elem as ::deltad::__private::Differentiable<#prim>>);
                            quote!(#name.iter().map(|x| #e::from_twin(#e::to_twin(x))).collect::<::std::vec::Vec<_>>())
                        }
                    }
                }
                _ => continue,
            };
            let plus = quote!(__deltad_plus);
            let minus = quote!(__deltad_minus);
            let up_args = call_args(Some((index, &plus)));
            let down_args = call_args(Some((index, &minus)));
            let field_leaf = match &param.kind {
                ParamKind::Real => quote!(#row.#name),
                ParamKind::Structured { .. } => quote! {
                    ::deltad::__private::leaf_of::<#prim, #value_type>(&#row.#name, #leaf)
                },
                _ => quote!(#row.#name[#leaf]),
            };
            columns.push(quote! {
                {
                    let #base: #value_type = #owned;
                    let #flat = ::deltad::__private::flatten_value::<#prim, #value_type>(&#base);
                    for #leaf in 0..#flat.len() {
                        let (__deltad_plus, __deltad_minus, __deltad_step) =
                            ::deltad::__private::perturb::<#prim, #value_type>(&#base, &#flat, #leaf);
                        let __deltad_up = ::deltad::__private::flatten_value::<#prim, #output_type>(&#primal(#(#up_args),*));
                        let __deltad_down = ::deltad::__private::flatten_value::<#prim, #output_type>(&#primal(#(#down_args),*));
                        let __deltad_analytic: ::std::vec::Vec<#prim> = #rows.iter().map(|#row| #field_leaf).collect();
                        #report.column(#label, #leaf, &__deltad_up, &__deltad_down, __deltad_step, &__deltad_analytic);
                    }
                }
            });
        }
        quote! {
            #[doc = #doc]
            #[inline]
            pub fn #check_fn #generics (#(#params),*) -> ::deltad::__private::DerivativeCheck #where_clause {
                let (_, #rows) = #jacobian_fn(#(#jacobian_args),*);
                let mut #report = ::deltad::__private::DerivativeCheck::new(#fn_name);
                #(#columns)*
                #report
            }
        }
    }
}
