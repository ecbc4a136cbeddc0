//! What the activity analysis knows about a value: which parts of it are
//! differentiated reals.
//!
//! The macro does not know types; rustc does. A shape records only what the
//! generated code needs: where a plain value must be lifted into a dual value
//! (a constant), and which calls need the recording pass. Everything else is
//! left to rustc's type inference over the runtime's operator impls.

/// The activity of a value, structurally.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// Does not return (return, break, panic): joins as nothing.
    Never,
    /// Plain data: integers, bools, and reals that do not depend on a
    /// differentiated input.
    Inactive,
    /// A value whose element type adapts to its use (`Vec::new()`, `vec![]`):
    /// never needs lifting.
    Any,
    /// A real that depends on a differentiated input (a dual value).
    Real,
    /// A slice, `Vec`, array, iterator or `Option` of elements of this shape.
    Elems(Box<Shape>),
    /// A tuple, component by component.
    Tuple(Vec<Shape>),
    /// Depends on a differentiated input, structure unknown (the result of a
    /// call between differentiated functions).
    Opaque,
}

impl Shape {
    pub(crate) fn elems(inner: Shape) -> Shape {
        Shape::Elems(Box::new(inner))
    }

    /// The least shape covering both (values assigned to one variable).
    pub(crate) fn join(&self, other: &Shape) -> Shape {
        use Shape::*;
        match (self, other) {
            (Never, x) | (x, Never) => x.clone(),
            // One variable has one type: a real assigned the result of a
            // call between differentiated functions stays a real.
            (Real, Opaque) | (Opaque, Real) => Real,
            (Opaque, _) | (_, Opaque) => Opaque,
            (Any, x) | (x, Any) => x.clone(),
            (Inactive, Inactive) => Inactive,
            (Real, Real) | (Real, Inactive) | (Inactive, Real) => Real,
            (Elems(a), Elems(b)) => Shape::elems(a.join(b)),
            (Elems(a), Inactive) | (Inactive, Elems(a)) => Shape::elems(a.join(&Inactive)),
            (Tuple(a), Tuple(b)) if a.len() == b.len() => {
                Tuple(a.iter().zip(b).map(|(x, y)| x.join(y)).collect())
            }
            (Tuple(a), Inactive) | (Inactive, Tuple(a)) => {
                Tuple(a.iter().map(|x| x.join(&Inactive)).collect())
            }
            // Incompatible structures cannot both be right; rustc will say
            // which is wrong. Keep the value active so nothing is dropped.
            _ => Opaque,
        }
    }

    /// True if some part of the value is a dual value.
    pub(crate) fn is_active(&self) -> bool {
        match self {
            Shape::Real | Shape::Opaque => true,
            Shape::Elems(inner) => inner.is_active(),
            Shape::Tuple(parts) => parts.iter().any(Shape::is_active),
            Shape::Never | Shape::Inactive | Shape::Any => false,
        }
    }

    /// The shape of one element (indexing, iterating, unwrapping).
    pub(crate) fn elem(&self) -> Shape {
        match self {
            Shape::Elems(inner) => (**inner).clone(),
            Shape::Never | Shape::Inactive | Shape::Any => self.clone(),
            other if other.is_active() => Shape::Opaque,
            _ => Shape::Inactive,
        }
    }

    /// Component `index` of a tuple-shaped value.
    pub(crate) fn component(&self, index: usize) -> Shape {
        match self {
            Shape::Tuple(parts) => parts.get(index).cloned().unwrap_or(Shape::Opaque),
            Shape::Never | Shape::Inactive | Shape::Any => self.clone(),
            _ => Shape::Opaque,
        }
    }

    /// Active or not, without structure: the result of arithmetic.
    pub(crate) fn scalar(&self) -> Shape {
        match self {
            Shape::Opaque => Shape::Opaque,
            Shape::Never => Shape::Never,
            other if other.is_active() => Shape::Real,
            _ => Shape::Inactive,
        }
    }

    /// The shape of a buffer a recorded call writes dual values into: every
    /// real part becomes a dual real.
    pub(crate) fn activated(&self) -> Shape {
        match self {
            Shape::Inactive | Shape::Never => Shape::Real,
            Shape::Elems(inner) => Shape::elems(inner.activated()),
            Shape::Tuple(parts) => Shape::Tuple(parts.iter().map(Shape::activated).collect()),
            Shape::Any => Shape::Opaque,
            Shape::Real | Shape::Opaque => self.clone(),
        }
    }

    /// True if a value of shape `self` must be lifted (made a dual value)
    /// before it can be stored where a value of shape `want` is expected.
    pub(crate) fn needs_lift_to(&self, want: &Shape) -> bool {
        if !want.is_active() {
            return false;
        }
        match (self, want) {
            (Shape::Never | Shape::Any | Shape::Real | Shape::Opaque, _) => false,
            (Shape::Inactive, _) => true,
            (Shape::Elems(have), Shape::Elems(want)) => have.needs_lift_to(want),
            (Shape::Elems(have), Shape::Opaque) => have.needs_lift_to(&Shape::Opaque),
            (Shape::Tuple(have), Shape::Tuple(want)) => {
                have.iter().zip(want).any(|(h, w)| h.needs_lift_to(w))
            }
            (Shape::Tuple(have), Shape::Opaque) => {
                have.iter().any(|h| h.needs_lift_to(&Shape::Opaque))
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Shape::*;
    use super::*;

    #[test]
    fn join_makes_a_variable_active_if_any_assignment_is() {
        assert_eq!(Inactive.join(&Real), Real);
        assert_eq!(
            Shape::elems(Any).join(&Shape::elems(Real)),
            Shape::elems(Real)
        );
        assert_eq!(Never.join(&Inactive), Inactive);
        assert_eq!(
            Tuple(vec![Inactive, Real]).join(&Tuple(vec![Real, Inactive])),
            Tuple(vec![Real, Real])
        );
        assert_eq!(Real.join(&Shape::elems(Real)), Opaque);
        assert_eq!(Real.join(&Opaque), Real);
        assert_eq!(Opaque.join(&Inactive), Opaque);
    }

    #[test]
    fn lifting_is_needed_exactly_where_plain_data_meets_active_slots() {
        assert!(Inactive.needs_lift_to(&Real));
        assert!(!Real.needs_lift_to(&Real));
        assert!(!Any.needs_lift_to(&Shape::elems(Real)));
        assert!(Shape::elems(Inactive).needs_lift_to(&Shape::elems(Real)));
        assert!(!Shape::elems(Any).needs_lift_to(&Shape::elems(Real)));
        assert!(!Inactive.needs_lift_to(&Inactive));
        assert!(Tuple(vec![Inactive, Real]).needs_lift_to(&Tuple(vec![Real, Real])));
        assert!(!Never.needs_lift_to(&Real));
    }
}
