//! Checking derivatives against central finite differences: what every
//! generated module's `check_derivatives` reports, and the helpers it is
//! written with.

use core::fmt;

use crate::differentiable::Differentiable;
use crate::scalar::Primitive;
use crate::wrapper::GradReader;

/// The reals of `value`, in leaf order.
pub fn flatten_value<P: Primitive, X: Differentiable<P>>(value: &X) -> Vec<P> {
    let mut out = Vec::new();
    X::flatten_twin(&value.to_twin(), &mut out);
    out
}

/// The number of reals of `value` (without making a list of them).
pub fn real_count<P: Primitive, X: Differentiable<P>>(value: &X) -> usize {
    let mut count = 0;
    let _ = value.build(&mut |_| count += 1);
    count
}

/// `template` with its reals replaced by `reals` (in leaf order).
pub fn unflatten_value<P: Primitive, X: Differentiable<P>>(template: &X, reals: &[P]) -> X {
    X::from_twin(template.gather(&mut GradReader::new(reals)))
}

/// Real number `leaf` of `value`.
pub fn leaf_of<P: Primitive, X: Differentiable<P>>(value: &X, leaf: usize) -> P {
    flatten_value(value)[leaf]
}

/// `base` with real `leaf` moved up and down by the central-difference step
/// h = ∛ε · max(1, |x|) (ε the machine epsilon), which balances truncation
/// error O(h²) against rounding error O(ε/h); also returns the step actually
/// taken (x + h - x, exact in floating point).
pub fn perturb<P: Primitive, X: Differentiable<P>>(
    base: &X,
    reals: &[P],
    leaf: usize,
) -> (X, X, P) {
    let x = reals[leaf].to_f64();
    let h = P::EPSILON.to_f64().cbrt() * x.abs().max(1.0);
    let up = P::from_f64(x + h);
    let down = P::from_f64(x - h);
    let mut moved = reals.to_vec();
    moved[leaf] = up;
    let plus = unflatten_value(base, &moved);
    moved[leaf] = down;
    let minus = unflatten_value(base, &moved);
    let step = P::from_f64((up.to_f64() - down.to_f64()) / 2.0);
    (plus, minus, step)
}

/// The largest disagreement between derivatives and central finite
/// differences, entry by entry (see `check_derivatives` in a generated
/// module).
///
/// ```
/// #[deltad::differentiate]
/// fn softplus(x: f64) -> f64 {
///     (1.0 + x.exp()).ln()
/// }
///
/// let check = softplus::check_derivatives(0.3);
/// assert_eq!(check.entries(), 1);
/// assert!(check.max_error() < 1e-8);
/// check.assert_within(1e-6); // panics with the worst entry if it fails
/// ```
#[derive(Clone, Debug)]
pub struct DerivativeCheck {
    function: &'static str,
    entries: usize,
    worst: Option<Mismatch>,
}

/// One compared entry of the Jacobian.
#[derive(Clone, Debug)]
pub struct Mismatch {
    /// The parameter whose real was moved.
    pub parameter: &'static str,
    /// Which real of the parameter (in leaf order).
    pub leaf: usize,
    /// Which real of the output (in leaf order).
    pub output: usize,
    /// ∂output/∂leaf from the derivative functions.
    pub derivative: f64,
    /// The central finite difference.
    pub finite_difference: f64,
    /// |derivative - finite difference| / max(1, |finite difference|).
    pub error: f64,
}

impl DerivativeCheck {
    /// An empty report for `function`.
    pub fn new(function: &'static str) -> Self {
        DerivativeCheck {
            function,
            entries: 0,
            worst: None,
        }
    }

    /// Compares one column: the outputs at x + h and x - h, the step, and
    /// the derivative of every output with respect to this real.
    pub fn column<P: Primitive>(
        &mut self,
        parameter: &'static str,
        leaf: usize,
        up: &[P],
        down: &[P],
        step: P,
        derivatives: &[P],
    ) {
        assert_eq!(
            up.len(),
            derivatives.len(),
            "deltad: the output changed shape when `{parameter}` moved"
        );
        for (output, ((u, d), derivative)) in up.iter().zip(down).zip(derivatives).enumerate() {
            let finite_difference = (u.to_f64() - d.to_f64()) / (2.0 * step.to_f64());
            let derivative = derivative.to_f64();
            let error = (derivative - finite_difference).abs() / finite_difference.abs().max(1.0);
            self.entries += 1;
            let worse = match &self.worst {
                Some(worst) => error > worst.error || error.is_nan(),
                None => true,
            };
            if worse {
                self.worst = Some(Mismatch {
                    parameter,
                    leaf,
                    output,
                    derivative,
                    finite_difference,
                    error,
                });
            }
        }
    }

    /// The largest relative error found (0 if nothing was compared).
    pub fn max_error(&self) -> f64 {
        self.worst.as_ref().map_or(0.0, |w| w.error)
    }

    /// The entry with the largest error.
    pub fn worst(&self) -> Option<&Mismatch> {
        self.worst.as_ref()
    }

    /// How many Jacobian entries were compared.
    pub fn entries(&self) -> usize {
        self.entries
    }

    /// Panics with the worst entry unless every entry agrees within `tolerance`
    /// (relative to max(1, |finite difference|)). Finite differences of `f64`
    /// functions are good to about 1e-9 for smooth functions of moderate
    /// size; 1e-6 is a safe tolerance.
    #[track_caller]
    pub fn assert_within(&self, tolerance: f64) {
        if self.max_error() <= tolerance {
            return;
        }
        panic!("{self}");
    }
}

impl fmt::Display for DerivativeCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.worst {
            None => write!(f, "`{}`: no derivatives to check", self.function),
            Some(w) => write!(
                f,
                "`{}`: {} entries checked; worst: ∂output[{}]/∂{}[{}] = {} by derivatives, {} by finite differences (relative error {:.3e})",
                self.function, self.entries, w.output, w.parameter, w.leaf, w.derivative, w.finite_difference, w.error
            ),
        }
    }
}
