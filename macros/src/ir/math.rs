//! The math methods of `f64`/`f32` the compiled path differentiates, and
//! where their rules live in the runtime (`unary_rules`, `constant_rules`,
//! `multi_rules`: each gives the value and the partial derivatives).

/// A math method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Math {
    pub name: &'static str,
    pub rule: Rule,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rule {
    /// `unary_rules::name(x) -> (value, derivative)`.
    Unary,
    /// Piecewise constant: `constant_rules::name(x) -> (value, 0)`.
    Constant,
    /// `multi_rules::name(x, ..) -> (value, partial per real operand..)`;
    /// `arity` values, receiver included.
    Multi { arity: usize },
    /// `multi_rules::powi(x, n) -> (value, derivative)`: `n` is an integer.
    Powi,
}

const UNARY: &[&str] = &[
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
    "exp", "exp2", "exp_m1", "ln", "log2", "log10", "ln_1p", "sqrt", "cbrt", "recip", "abs",
    "fract",
];
const CONSTANT: &[&str] = &[
    "floor",
    "ceil",
    "round",
    "round_ties_even",
    "trunc",
    "signum",
];
const MULTI: &[(&str, usize)] = &[
    ("to_degrees", 1),
    ("to_radians", 1),
    ("atan2", 2),
    ("powf", 2),
    ("hypot", 2),
    ("log", 2),
    ("copysign", 2),
    ("rem_euclid", 2),
    ("div_euclid", 2),
    ("max", 2),
    ("min", 2),
    ("clamp", 3),
    ("mul_add", 3),
];

impl Math {
    /// The method called `name`, if it is a math method with a rule.
    pub(crate) fn named(name: &str) -> Option<Math> {
        if let Some(&name) = UNARY.iter().find(|n| **n == name) {
            return Some(Math {
                name,
                rule: Rule::Unary,
            });
        }
        if let Some(&name) = CONSTANT.iter().find(|n| **n == name) {
            return Some(Math {
                name,
                rule: Rule::Constant,
            });
        }
        if name == "powi" {
            return Some(Math {
                name: "powi",
                rule: Rule::Powi,
            });
        }
        MULTI
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(name, arity)| Math {
                name,
                rule: Rule::Multi { arity },
            })
    }

    /// How many values the method takes, receiver included.
    pub(crate) fn arity(&self) -> usize {
        match self.rule {
            Rule::Unary | Rule::Constant => 1,
            Rule::Powi => 2,
            Rule::Multi { arity } => arity,
        }
    }

    /// True if argument `index` is a real (`powi`'s exponent is not).
    pub(crate) fn real_arg(&self, index: usize) -> bool {
        !(self.rule == Rule::Powi && index == 1)
    }

    /// True if a partial derivative can be infinite where the value is
    /// finite: `sqrt` and `cbrt` at 0, `asin`/`acos` at ±1, `acosh` at 1,
    /// `powf` at base 0. (Elsewhere an infinite partial comes with an
    /// infinite value: `ln` at 0, `recip` at 0, a division by 0.)
    pub(crate) fn singular(&self) -> bool {
        matches!(
            self.name,
            "sqrt" | "cbrt" | "asin" | "acos" | "acosh" | "powf"
        )
    }

    /// True if integer types have a method of this name too (so the
    /// receiver need not be a real).
    pub(crate) fn integers_have_it(&self) -> bool {
        matches!(
            self.name,
            "abs" | "signum" | "rem_euclid" | "div_euclid" | "max" | "min" | "clamp"
        )
    }

    /// True if the method has a `Scalar` method of the same name computing
    /// only the value.
    pub(crate) fn scalar_method(&self) -> bool {
        !matches!(self.name, "to_degrees" | "to_radians" | "log" | "clamp")
    }
}
