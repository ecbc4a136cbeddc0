//! The adjoint of one expression: given the adjoint of its value, add to
//! the adjoints of the differentiated variables and elements it reads.
//! The values of subexpressions are evaluated once each, bottom-up, into
//! locals; the adjoints then flow top-down through the partials of each
//! operation (the rules of the runtime's `unary_rules`/`multi_rules`).

use std::collections::HashMap;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

use super::kept::KeptPartials;
use super::values::Side;
use super::Passes;
use crate::ir::math::Rule;
use crate::ir::{ArithOp, Expr, ExprKind, Primitive};

pub(crate) struct ExprAdjoint<'p, 'a> {
    passes: &'p Passes<'a>,
    statements: Vec<TokenStream>,
    /// The local holding each evaluated subexpression, by node.
    values: HashMap<*const Expr, TokenStream>,
    next: usize,
    /// The partials the forward pass kept, popped into locals, by math
    /// node (`kept.rs`).
    kept: KeptPartials,
}

impl<'p, 'a> ExprAdjoint<'p, 'a> {
    pub(crate) fn new(passes: &'p Passes<'a>) -> Self {
        ExprAdjoint {
            passes,
            statements: Vec::new(),
            values: HashMap::new(),
            next: 0,
            kept: KeptPartials::new(),
        }
    }

    /// Uses the partials in `kept` (popped by the caller) for their math
    /// nodes instead of computing them.
    pub(crate) fn with_kept(mut self, kept: KeptPartials) -> Self {
        for (node, (_, value)) in &kept {
            if let Some(value) = value {
                self.values.insert(*node, quote!(#value));
            }
        }
        self.kept = kept;
        self
    }

    pub(crate) fn push(&mut self, statement: TokenStream) {
        self.statements.push(statement);
    }

    pub(crate) fn finish(self) -> TokenStream {
        let statements = self.statements;
        quote!(#(#statements)*)
    }

    fn fresh(&mut self, prefix: &str) -> syn::Ident {
        self.next += 1;
        format_ident!(
            "__deltad_{}{}",
            prefix,
            self.next,
            span = Span::mixed_site()
        )
    }

    /// The value of `expr` (a local, or the expression itself for leaves).
    pub(crate) fn value_of(&mut self, expr: &Expr) -> TokenStream {
        if let Some(value) = self.values.get(&(expr as *const Expr)) {
            return value.clone();
        }
        let passes = self.passes;
        let value = match &expr.kind {
            ExprKind::Lit(_) | ExprKind::Var(_) => passes.value(expr, Side::Adjoint),
            _ => {
                let value = passes.value_with(expr, Side::Adjoint, &mut |e| self.value_of(e));
                let local = self.fresh("v");
                self.statements.push(quote!(let #local = #value;));
                quote!(#local)
            }
        };
        self.values.insert(expr as *const Expr, value.clone());
        value
    }

    /// The value of `expr` as a scalar of the pass.
    pub(crate) fn scalar_value_of(&mut self, expr: &Expr) -> TokenStream {
        let value = self.value_of(expr);
        if self.passes.is_active(expr) {
            value
        } else {
            self.passes.lift(value)
        }
    }

    /// The adjoint of a math method's value into its operands, through the
    /// kept partials or its rule.
    fn propagate_math(&mut self, expr: &Expr, adjoint: TokenStream) {
        let ExprKind::Math { math, args, .. } = &expr.kind else {
            return;
        };
        if math.rule == Rule::Constant {
            return;
        }
        let real_args: Vec<usize> = (0..args.len()).filter(|&i| math.real_arg(i)).collect();
        if let Some((partials, _)) = self.kept.get(&(expr as *const Expr)).cloned() {
            let adjoint = self.bind(adjoint);
            for (&i, partial) in real_args.iter().zip(&partials) {
                self.propagate(&args[i], quote!((#adjoint * #partial)));
            }
            return;
        }
        let values: Vec<TokenStream> = args
            .iter()
            .enumerate()
            .map(|(i, arg)| {
                if math.real_arg(i) {
                    self.scalar_value_of(arg)
                } else {
                    self.value_of(arg)
                }
            })
            .collect();
        let name = syn::Ident::new(math.name, Span::call_site());
        let partials: Vec<syn::Ident> = real_args.iter().map(|_| self.fresh("d")).collect();
        let module = match math.rule {
            Rule::Unary => quote!(unary_rules),
            _ => quote!(multi_rules),
        };
        self.statements.push(quote! {
            let (_, #(#partials),*) = ::deltad::__private::#module::#name(#(#values),*);
        });
        let adjoint = self.bind(adjoint);
        for (&i, partial) in real_args.iter().zip(&partials) {
            self.propagate(&args[i], quote!((#adjoint * #partial)));
        }
    }

    /// Binds `adjoint` to a local unless it is already one.
    fn bind(&mut self, adjoint: TokenStream) -> TokenStream {
        let simple = adjoint.clone().into_iter().count() == 1;
        if simple {
            return adjoint;
        }
        let local = self.fresh("a");
        let a = &self.passes.cotangent;
        self.statements.push(quote!(let #local: #a = #adjoint;));
        quote!(#local)
    }

    /// Adds `adjoint` (the adjoint of `expr`'s value) into the adjoints of
    /// what `expr` reads.
    pub(crate) fn propagate(&mut self, expr: &Expr, adjoint: TokenStream) {
        let passes = self.passes;
        if !passes.is_active(expr) {
            return;
        }
        match &expr.kind {
            ExprKind::Var(var) => {
                let target = passes.adjoint(*var);
                self.statements.push(quote!(#target += #adjoint;));
            }
            // A field of a call's result: into the result's adjoint twin; of
            // an element of a buffer parameter: into its sink's element.
            ExprKind::Field {
                base,
                index,
                members,
                elem,
            } => {
                let a = &passes.cotangent;
                let accumulate = quote!(::deltad::__private::RealLeaf::<#a>::accumulate);
                // An element of a buffer field of a parameter: into the
                // parameter's sink, as its fields read whole go at the end.
                if let Some(elem) = elem {
                    let crate::ir::Origin::Param(param) = passes.function.vars[*base].origin else {
                        unreachable!("only a parameter's buffer fields are read by element")
                    };
                    let (sink, elem) = (super::sink(param), self.value_of(elem));
                    let twin = crate::emit::compiled::names::ident("__deltad_twin");
                    self.statements.push(quote! {
                        ::deltad::__private::TwinSink::with(&mut #sink, |#twin| {
                            #accumulate(&mut #twin #(.#members)* [#elem], #adjoint);
                        });
                    });
                    return;
                }
                let target = passes.adjoint(*base);
                match index {
                    Some(index) => {
                        let index = self.value_of(index);
                        let twin = crate::emit::compiled::names::ident("__deltad_twin");
                        self.statements.push(quote! {
                            ::deltad::__private::TwinsSink::with_at(&mut #target, #index, |#twin| {
                                #accumulate(&mut #twin #(.#members)*, #adjoint);
                            });
                        });
                    }
                    None => self.statements.push(quote! {
                        #accumulate(&mut #target #(.#members)*, #adjoint);
                    }),
                }
            }
            ExprKind::Elem(var, index) => {
                if let Some(local) = passes.promoted(*var, index) {
                    self.statements.push(quote!(#local += #adjoint;));
                    return;
                }
                let index = match passes.view_index(*var, index, true) {
                    Some(at) => at,
                    None => self.value_of(index),
                };
                let target = passes.adjoint(*var);
                if passes.is_param(*var) {
                    self.statements.push(quote! {
                        *::deltad::__private::SliceSink::at(&mut #target, #index) += #adjoint;
                    });
                } else {
                    self.statements.push(quote!(#target[#index] += #adjoint;));
                }
            }
            ExprKind::Neg(a) => self.propagate(a, quote!((-#adjoint))),
            ExprKind::Cast(a, _) => self.propagate(a, adjoint),
            ExprKind::Arith(ArithOp::Add, a, b) => {
                let adjoint = self.bind(adjoint);
                self.propagate(a, adjoint.clone());
                self.propagate(b, adjoint);
            }
            ExprKind::Arith(ArithOp::Sub, a, b) => {
                let adjoint = self.bind(adjoint);
                self.propagate(a, adjoint.clone());
                self.propagate(b, quote!((-#adjoint)));
            }
            ExprKind::Arith(ArithOp::Mul, a, b) => {
                let adjoint = self.bind(adjoint);
                if passes.is_active(a) {
                    let vb = self.scalar_value_of(b);
                    self.propagate(a, quote!((#adjoint * #vb)));
                }
                if passes.is_active(b) {
                    let va = self.scalar_value_of(a);
                    self.propagate(b, quote!((#adjoint * #va)));
                }
            }
            ExprKind::Arith(ArithOp::Div, a, b) => {
                let vb = self.scalar_value_of(b);
                let quotient = self.fresh("q");
                let cotangent = &passes.cotangent;
                self.statements
                    .push(quote!(let #quotient: #cotangent = #adjoint / #vb;));
                if passes.is_active(a) {
                    self.propagate(a, quote!(#quotient));
                }
                if passes.is_active(b) {
                    let va = self.scalar_value_of(a);
                    self.propagate(b, quote!((-(#quotient * (#va / #vb)))));
                }
            }
            ExprKind::Arith(ArithOp::Rem, a, b) => {
                let (va, vb) = (self.scalar_value_of(a), self.scalar_value_of(b));
                let (da, db) = (self.fresh("d"), self.fresh("d"));
                self.statements.push(quote! {
                    let (_, #da, #db) = ::deltad::__private::multi_rules::rem(#va, #vb);
                });
                let adjoint = self.bind(adjoint);
                self.propagate(a, quote!((#adjoint * #da)));
                self.propagate(b, quote!((#adjoint * #db)));
            }
            ExprKind::Math { math, .. } if math.singular() => {
                // A partial that can be infinite where the value is finite
                // (`sqrt` at 0): the contributions are skipped when the
                // adjoint is exactly zero, as the tape skips a binding
                // whose adjoint is zero (`0.0 * x.sqrt()` has derivative 0
                // at 0, not NaN). Values evaluated inside the test are not
                // reused outside it.
                let adjoint = self.bind(adjoint);
                let (start, values) = (self.statements.len(), self.values.clone());
                self.propagate_math(expr, adjoint.clone());
                let guarded = self.statements.split_off(start);
                self.values = values;
                if !guarded.is_empty() {
                    self.statements.push(quote! {
                        if !::deltad::__private::Scalar::is_zero(&#adjoint) {
                            #(#guarded)*
                        }
                    });
                }
            }
            ExprKind::Math { .. } => self.propagate_math(expr, adjoint),
            ExprKind::Primitive(primitive, buffers) => {
                let adjoint = self.bind(adjoint);
                let a = &passes.cotangent;
                let mut sinks = Vec::new();
                let mut slices = Vec::new();
                for buffer in buffers {
                    let sink = if passes.active(buffer.var) {
                        passes.buffer_sink(buffer)
                    } else {
                        quote!(::deltad::__private::Discard::<#a>::new())
                    };
                    sinks.push(sink);
                    slices
                        .push(passes.scalar_slice(buffer, &mut |e| passes.value(e, Side::Adjoint)));
                }
                let call = match primitive {
                    Primitive::Sum => {
                        let (start, end) = passes.bounds(&buffers[0], Side::Adjoint, &mut |e| {
                            passes.value(e, Side::Adjoint)
                        });
                        let sink = &sinks[0];
                        quote!(::deltad::__private::vector::sum_adjoint((#end) - (#start), &mut #sink, #adjoint);)
                    }
                    // (`dot(&x, &x)`: one sink at a time, both borrowing
                    // the one adjoint.)
                    Primitive::Dot
                        if buffers[0].var == buffers[1].var && passes.active(buffers[0].var) =>
                    {
                        let (x, y) = (&slices[0], &slices[1]);
                        let (sx, sy) = (&sinks[0], &sinks[1]);
                        let discard = quote!(::deltad::__private::Discard::<#a>::new());
                        quote! {
                            ::deltad::__private::vector::dot_adjoint(#x, #y, &mut #sx, &mut #discard, #adjoint);
                            ::deltad::__private::vector::dot_adjoint(#x, #y, &mut #discard, &mut #sy, #adjoint);
                        }
                    }
                    Primitive::Dot => {
                        let (a, b) = (&slices[0], &slices[1]);
                        let (sa, sb) = (&sinks[0], &sinks[1]);
                        quote!(::deltad::__private::vector::dot_adjoint(#a, #b, &mut #sa, &mut #sb, #adjoint);)
                    }
                    Primitive::LogSumExp => {
                        let (v, sink) = (&slices[0], &sinks[0]);
                        quote!(::deltad::__private::vector::log_sum_exp_adjoint(#v, &mut #sink, #adjoint);)
                    }
                };
                self.statements.push(call);
            }
            ExprKind::Lit(_)
            | ExprKind::Len(_)
            | ExprKind::Opaque { .. }
            | ExprKind::Not(_)
            | ExprKind::Compare(..)
            | ExprKind::Logic(..) => {}
            ExprKind::Call(_) | ExprKind::NewBuffer(_) => {
                unreachable!("calls and new buffers are reversed by their `let`")
            }
        }
    }
}
