//! [argmin](https://docs.rs/argmin) problems from `#[differentiate]`
//! functions (cargo feature `argmin`).
//!
//! argmin's solvers ask the problem for its cost ([`CostFunction`]), its
//! gradient ([`Gradient`]) and, for Newton methods, its Hessian
//! ([`Hessian`]). [`ArgminProblem`] provides the three for a function of a
//! vector of `f64` (argmin's `Vec<f64>` parameters and gradients; the
//! Hessian as a [`HessianMatrix`], which argmin's `Newton` can invert and
//! `NewtonCG` multiply), from the function itself and the derivatives
//! `#[differentiate]` generates for it:
//! `grad` (reverse mode) and `hessian` (forward-over-reverse). The macro
//! [`argmin_problem!`](crate::argmin_problem) builds one from the function's
//! name.
//!
//! ```
//! use argmin::core::{CostFunction, Executor, Gradient, Hessian, State};
//! use argmin::solver::linesearch::MoreThuenteLineSearch;
//! use argmin::solver::quasinewton::LBFGS;
//!
//! #[deltad::differentiate]
//! fn bowl(x: &[f64]) -> f64 {
//!     (x[0] - 1.0).powi(2) + 10.0 * (x[1] + 2.0).powi(2)
//! }
//!
//! # fn main() -> Result<(), argmin::core::Error> {
//! let problem = deltad::argmin_problem!(bowl, x);
//! assert_eq!(problem.gradient(&vec![0.0, 0.0])?, [-2.0, 40.0]);
//! assert_eq!(problem.hessian(&vec![0.0, 0.0])?.rows(), [[2.0, 0.0], [0.0, 20.0]]);
//!
//! let solver = LBFGS::new(MoreThuenteLineSearch::new(), 5);
//! let result = Executor::new(problem, solver)
//!     .configure(|state| state.param(vec![0.0, 0.0]).max_iters(50))
//!     .run()?;
//! let best = result.state().get_best_param().unwrap();
//! assert!((best[0] - 1.0).abs() < 1e-8 && (best[1] + 2.0).abs() < 1e-8);
//! # Ok(())
//! # }
//! ```

use argmin::core::{CostFunction, Error, Gradient, Hessian};
use argmin_math::{ArgminDot, ArgminInv};

/// A dense symmetric matrix by rows: the Hessian of an [`ArgminProblem`].
///
/// argmin's `Newton` inverts it ([`ArgminInv`], Gauss-Jordan elimination
/// with partial pivoting; a singular matrix is an error) and multiplies a
/// gradient by the inverse; `NewtonCG` multiplies it by vectors
/// ([`ArgminDot`]).
#[derive(Clone, Debug, PartialEq)]
pub struct HessianMatrix {
    rows: Vec<Vec<f64>>,
}

impl HessianMatrix {
    /// The matrix with these rows (all as long as there are rows).
    ///
    /// # Panics
    /// If the matrix is not square.
    pub fn from_rows(rows: Vec<Vec<f64>>) -> Self {
        let n = rows.len();
        assert!(
            rows.iter().all(|row| row.len() == n),
            "deltad: a Hessian must be square ({n} rows)"
        );
        HessianMatrix { rows }
    }

    /// The rows: `rows()[i][j]` = ∂²f/∂x_i∂x_j.
    pub fn rows(&self) -> &[Vec<f64>] {
        &self.rows
    }

    /// The rows, by value.
    pub fn into_rows(self) -> Vec<Vec<f64>> {
        self.rows
    }
}

impl ArgminDot<Vec<f64>, Vec<f64>> for HessianMatrix {
    /// The matrix-vector product.
    fn dot(&self, vector: &Vec<f64>) -> Vec<f64> {
        self.rows
            .iter()
            .map(|row| row.iter().zip(vector).map(|(a, b)| a * b).sum())
            .collect()
    }
}

impl ArgminInv<HessianMatrix> for HessianMatrix {
    /// The inverse, by Gauss-Jordan elimination with partial pivoting.
    fn inv(&self) -> Result<HessianMatrix, Error> {
        let n = self.rows.len();
        let mut a = self.rows.clone();
        let mut inverse: Vec<Vec<f64>> = (0..n)
            .map(|i| (0..n).map(|j| if i == j { 1.0 } else { 0.0 }).collect())
            .collect();
        let scale = a.iter().flatten().fold(0.0f64, |max, v| max.max(v.abs()));
        for col in 0..n {
            let pivot = (col..n)
                .max_by(|&r, &s| a[r][col].abs().total_cmp(&a[s][col].abs()))
                .unwrap_or(col);
            // (Written so that a NaN pivot is singular too.)
            let usable = a[pivot][col].abs() > scale * f64::EPSILON * n as f64;
            if !usable {
                return Err(Error::msg("deltad: the Hessian is singular"));
            }
            a.swap(col, pivot);
            inverse.swap(col, pivot);
            let p = a[col][col];
            for j in 0..n {
                a[col][j] /= p;
                inverse[col][j] /= p;
            }
            for row in 0..n {
                if row == col {
                    continue;
                }
                let factor = a[row][col];
                if factor == 0.0 {
                    continue;
                }
                for j in 0..n {
                    a[row][j] -= factor * a[col][j];
                    inverse[row][j] -= factor * inverse[col][j];
                }
            }
        }
        Ok(HessianMatrix { rows: inverse })
    }
}

/// The Hessian of an [`ArgminProblem`] built without one: such a problem
/// implements only [`CostFunction`] and [`Gradient`].
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHessian;

/// An argmin problem over `Vec<f64>` parameters: the cost, its gradient
/// and (optionally) its Hessian, each a function of the parameters as a
/// slice.
///
/// Built from a `#[differentiate]` function `f(x: &[f64]) -> f64` by
/// [`argmin_problem!`](crate::argmin_problem), or by hand:
///
/// ```
/// # #[deltad::differentiate]
/// # fn f(x: &[f64]) -> f64 { x[0] * x[0] * x[1] }
/// # fn main() {
/// use deltad::argmin_support::ArgminProblem;
/// let problem = ArgminProblem::new(f, |x: &[f64]| f::grad(x).x).with_hessian(|x: &[f64]| {
///     f::hessian(x).into_iter().map(|row| row.x).collect()
/// });
/// # let _ = problem;
/// # }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ArgminProblem<C, G, H = NoHessian> {
    cost: C,
    gradient: G,
    hessian: H,
}

impl<C, G> ArgminProblem<C, G, NoHessian>
where
    C: Fn(&[f64]) -> f64,
    G: Fn(&[f64]) -> Vec<f64>,
{
    /// A problem with the cost `cost` and its gradient `gradient` (for
    /// gradient methods: L-BFGS, BFGS, conjugate gradient, steepest descent).
    pub fn new(cost: C, gradient: G) -> Self {
        ArgminProblem {
            cost,
            gradient,
            hessian: NoHessian,
        }
    }

    /// The same problem with a Hessian (for Newton methods); row `i` of
    /// `hessian(x)` holds ∂²f/∂x_i∂x_j for every `j`.
    pub fn with_hessian<H>(self, hessian: H) -> ArgminProblem<C, G, H>
    where
        H: Fn(&[f64]) -> Vec<Vec<f64>>,
    {
        ArgminProblem {
            cost: self.cost,
            gradient: self.gradient,
            hessian,
        }
    }
}

impl<C, G, H> CostFunction for ArgminProblem<C, G, H>
where
    C: Fn(&[f64]) -> f64,
{
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, param: &Vec<f64>) -> Result<f64, Error> {
        Ok((self.cost)(param))
    }
}

impl<C, G, H> Gradient for ArgminProblem<C, G, H>
where
    G: Fn(&[f64]) -> Vec<f64>,
{
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;

    fn gradient(&self, param: &Vec<f64>) -> Result<Vec<f64>, Error> {
        let gradient = (self.gradient)(param);
        if gradient.len() != param.len() {
            return Err(Error::msg(format!(
                "deltad: the gradient has {} entries for {} parameters",
                gradient.len(),
                param.len()
            )));
        }
        Ok(gradient)
    }
}

impl<C, G, H> Hessian for ArgminProblem<C, G, H>
where
    H: Fn(&[f64]) -> Vec<Vec<f64>>,
{
    type Param = Vec<f64>;
    type Hessian = HessianMatrix;

    fn hessian(&self, param: &Vec<f64>) -> Result<HessianMatrix, Error> {
        let rows = (self.hessian)(param);
        let n = param.len();
        if rows.len() != n || rows.iter().any(|row| row.len() != n) {
            return Err(Error::msg(format!(
                "deltad: the Hessian is not {n} × {n} for {n} parameters"
            )));
        }
        Ok(HessianMatrix { rows })
    }
}

/// An [`ArgminProblem`](crate::argmin_support::ArgminProblem) with cost,
/// gradient and Hessian from a `#[differentiate]` function of one slice.
///
/// `argmin_problem!(f, x)` takes the function's path and the name of its
/// `&[f64]` parameter (the field of `f::Grad` holding the gradient), and
/// uses `f`, `f::grad` and `f::hessian`. Requires the cargo feature `argmin`.
#[macro_export]
macro_rules! argmin_problem {
    ($($function:ident)::+, $param:ident) => {
        $crate::argmin_support::ArgminProblem::new(
            |x: &[f64]| $($function)::+(x),
            |x: &[f64]| $($function)::+::grad(x).$param,
        )
        .with_hessian(|x: &[f64]| {
            $($function)::+::hessian(x)
                .into_iter()
                .map(|row| row.$param)
                .collect::<::std::vec::Vec<::std::vec::Vec<f64>>>()
        })
    };
}
