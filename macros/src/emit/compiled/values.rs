//! The value of an expression, in the forward pass and when the adjoint
//! evaluates it again: differentiated values computed on `S`, plain values
//! as written, constants lifted where they meet differentiated ones.

use proc_macro2::TokenStream;
use quote::quote;

use super::Passes;
use crate::analyze::activity::is_active;
use crate::analyze::Establish;
use crate::ir::math::Rule;
use crate::ir::{ArithOp, BufferRef, Expr, ExprKind, VarId};

/// Where an expression is evaluated.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Forward,
    Adjoint,
}

impl Passes<'_> {
    pub(crate) fn is_active(&self, expr: &Expr) -> bool {
        is_active(expr, &self.analysis.active)
    }

    /// The value of `expr`, its subexpressions' values given by `child`.
    pub(crate) fn value_with(
        &self,
        expr: &Expr,
        side: Side,
        child: &mut dyn FnMut(&Expr) -> TokenStream,
    ) -> TokenStream {
        let active = self.is_active(expr);
        match &expr.kind {
            ExprKind::Lit(lit) => quote!(#lit),
            // A field of a value of a user type that is not differentiated:
            // its value (a copy: the value stays the parameter's).
            ExprKind::Var(var)
                if !self.active(*var)
                    && matches!(self.function.vars[*var].origin, crate::ir::Origin::Field(_)) =>
            {
                let place = self.field_place(*var);
                self.plain_field(place)
            }
            ExprKind::Var(var) => {
                let name = self.name(*var);
                quote!(#name)
            }
            ExprKind::Neg(a) => {
                let a = child(a);
                quote!((-#a))
            }
            ExprKind::Not(a) => {
                let a = child(a);
                quote!((!#a))
            }
            ExprKind::Arith(op, a, b) => {
                let (va, vb) = if active {
                    (self.scalar_with(a, child), self.scalar_with(b, child))
                } else {
                    (child(a), child(b))
                };
                let op = match op {
                    ArithOp::Add => quote!(+),
                    ArithOp::Sub => quote!(-),
                    ArithOp::Mul => quote!(*),
                    ArithOp::Div => quote!(/),
                    ArithOp::Rem => quote!(%),
                };
                quote!((#va #op #vb))
            }
            ExprKind::Compare(op, a, b) => {
                let lifted = self.is_active(a) || self.is_active(b);
                let (va, vb) = if lifted {
                    (self.scalar_with(a, child), self.scalar_with(b, child))
                } else {
                    (child(a), child(b))
                };
                quote!((#va #op #vb))
            }
            ExprKind::Logic(op, a, b) => {
                let (va, vb) = (child(a), child(b));
                quote!((#va #op #vb))
            }
            ExprKind::Math {
                math,
                args,
                path_style,
            } => {
                if !active {
                    let values: Vec<TokenStream> = args.iter().map(&mut *child).collect();

                    let name = syn::Ident::new(math.name, expr.span);
                    return match path_style {
                        Some(path) => quote!(#path(#(#values),*)),
                        None => {
                            let receiver = &values[0];
                            let rest = &values[1..];
                            quote!(#receiver.#name(#(#rest),*))
                        }
                    };
                }
                let values: Vec<TokenStream> = args
                    .iter()
                    .enumerate()
                    .map(|(i, a)| {
                        if math.real_arg(i) {
                            self.scalar_with(a, child)
                        } else {
                            child(a)
                        }
                    })
                    .collect();
                let name = syn::Ident::new(math.name, proc_macro2::Span::call_site());
                let s = &self.scalar;
                if math.scalar_method() {
                    quote!(<#s as ::deltad::__private::Scalar>::#name(#(#values),*))
                } else {
                    debug_assert!(matches!(math.rule, Rule::Multi { .. }));
                    quote!(::deltad::__private::multi_rules::#name(#(#values),*).0)
                }
            }
            ExprKind::Elem(buffer, index) => {
                let name = self.name(*buffer);
                let index = self
                    .view_index(*buffer, index, false)
                    .unwrap_or_else(|| child(index));
                quote!(#name[#index])
            }
            ExprKind::Len(buffer) => self.length(*buffer, side),
            ExprKind::Cast(inner, ty) => {
                let value = child(inner);
                if self.is_active(inner) {
                    if crate::analyze::activity::is_float_type(ty) {
                        value
                    } else {
                        quote!((::deltad::__private::machine_value(#value) as #ty))
                    }
                } else {
                    quote!((#value as #ty))
                }
            }
            ExprKind::Primitive(primitive, buffers) => {
                let name = syn::Ident::new(
                    match primitive {
                        crate::ir::Primitive::Sum => "sum",
                        crate::ir::Primitive::Dot => "dot",
                        crate::ir::Primitive::LogSumExp => "log_sum_exp",
                    },
                    proc_macro2::Span::call_site(),
                );
                if !active {
                    let slices = buffers.iter().map(|b| self.slice(b, child));
                    return quote!(::deltad::#name(#(#slices),*));
                }
                let slices = buffers.iter().map(|b| self.scalar_slice(b, child));
                quote!(::deltad::__private::vector::#name(#(#slices),*))
            }
            ExprKind::Opaque { expr, .. } => quote!(#expr),
            ExprKind::Field { .. } => {
                unreachable!("a field of a call's result is the value of its `let` (`field_value`)")
            }
            ExprKind::Call(_) | ExprKind::NewBuffer(_) => {
                unreachable!("calls and new buffers are emitted by their `let`")
            }
        }
    }

    /// The value of `expr` as a scalar of the pass (lifted if constant).
    pub(crate) fn scalar_with(
        &self,
        expr: &Expr,
        child: &mut dyn FnMut(&Expr) -> TokenStream,
    ) -> TokenStream {
        let value = child(expr);
        if self.is_active(expr) {
            value
        } else {
            self.lift(value)
        }
    }

    /// The value of `expr`, computed in one piece.
    pub(crate) fn value(&self, expr: &Expr, side: Side) -> TokenStream {
        self.value_with(expr, side, &mut |e| self.value(e, side))
    }

    /// The value of `expr` as a scalar of the pass.
    pub(crate) fn scalar_value(&self, expr: &Expr, side: Side) -> TokenStream {
        self.scalar_with(expr, &mut |e| self.value(e, side))
    }

    /// The length of a buffer: `v.len()`, or in the adjoint the local that
    /// holds it when the buffer itself is not there.
    pub(crate) fn length(&self, buffer: VarId, side: Side) -> TokenStream {
        if side == Side::Adjoint
            && !self.is_param(buffer)
            && self.analysis.plan.establish[buffer] == Establish::None
        {
            let local = self.length_local(buffer);
            return quote!(#local);
        }
        let name = self.name(buffer);
        quote!(#name.len())
    }

    /// The bounds of a buffer reference: (start, end).
    pub(crate) fn bounds(
        &self,
        buffer: &BufferRef,
        side: Side,
        child: &mut dyn FnMut(&Expr) -> TokenStream,
    ) -> (TokenStream, TokenStream) {
        let whole = self.length(buffer.var, side);
        match &buffer.range {
            None => (quote!(0usize), whole),
            Some((start, end)) => {
                let start = match start {
                    Some(start) => child(start),
                    None => quote!(0usize),
                };
                let end = match end {
                    Some(end) => child(end),
                    None => whole,
                };
                (start, end)
            }
        }
    }

    /// `&v[a..b]` as written (its elements as they are).
    pub(crate) fn slice(
        &self,
        buffer: &BufferRef,
        child: &mut dyn FnMut(&Expr) -> TokenStream,
    ) -> TokenStream {
        let name = self.name(buffer.var);
        match &buffer.range {
            None => quote!(&#name[..]),
            Some((start, end)) => {
                let start = start.as_ref().map(|s| child(s));
                let end = end.as_ref().map(|e| child(e));
                quote!(&#name[#start..#end])
            }
        }
    }

    /// A buffer passed to a call: a reference to the whole buffer as it is
    /// (a slice, `&Vec`, `&[_; N]`), or to a range of it.
    pub(crate) fn buffer_arg(&self, buffer: &BufferRef, side: Side) -> TokenStream {
        if buffer.range.is_some() {
            return self.slice(buffer, &mut |e| self.value(e, side));
        }
        let name = self.name(buffer.var);
        let info = &self.function.vars[buffer.var];
        let by_reference = match info.origin {
            crate::ir::Origin::Param(index) => {
                let param = &self.signature.params[index];
                match &param.kind {
                    crate::signature::ParamKind::Real => false,
                    kind if kind.is_active() => true,
                    _ => matches!(param.ty, syn::Type::Reference(_)),
                }
            }
            _ => false,
        };
        if by_reference {
            quote!(#name)
        } else {
            quote!(&#name)
        }
    }

    /// The elements of a buffer reference as scalars of the pass.
    pub(crate) fn scalar_slice(
        &self,
        buffer: &BufferRef,
        child: &mut dyn FnMut(&Expr) -> TokenStream,
    ) -> TokenStream {
        let slice = self.slice(buffer, child);
        if self.active(buffer.var) {
            slice
        } else {
            let s = &self.scalar;
            quote!(&*<#s as ::deltad::__private::Scalar>::lift_slice(#slice))
        }
    }
}
