//! argmin's solvers driven by a `#[differentiate]` function: the
//! n-dimensional Rosenbrock function minimised by L-BFGS (More-Thuente line
//! search) with deltad's gradient, and by Newton's method with deltad's
//! gradient and Hessian, through the adaptor `deltad::argmin_support`.
//!
//! Run with `cargo run --release --features argmin --example argmin`.

use argmin::core::observers::{Observe, ObserverMode};
use argmin::core::{Error, Executor, Gradient, IterState, State, KV};
use argmin::solver::linesearch::MoreThuenteLineSearch;
use argmin::solver::newton::Newton;
use argmin::solver::quasinewton::LBFGS;
use deltad::differentiate;

/// Σ 100 (x_{i+1} - x_i²)² + (1 - x_i)²: minimum 0 at (1, 1, ..., 1).
#[differentiate]
fn rosenbrock(x: &[f64]) -> f64 {
    let mut total = 0.0;
    for i in 0..x.len() - 1 {
        let a = x[i + 1] - x[i] * x[i];
        let b = 1.0 - x[i];
        total += 100.0 * a * a + b * b;
    }
    total
}

/// Prints the iteration number, f(x) and |∇f(x)| at the solver's current
/// parameters (evaluated here: Newton's method never asks for the cost),
/// until the gradient is exactly zero.
#[derive(Default)]
struct Progress {
    converged: bool,
}

impl<H> Observe<IterState<Vec<f64>, Vec<f64>, (), H, (), f64>> for Progress {
    fn observe_iter(
        &mut self,
        state: &IterState<Vec<f64>, Vec<f64>, (), H, (), f64>,
        _kv: &KV,
    ) -> Result<(), Error> {
        let Some(x) = state.get_param() else {
            return Ok(());
        };
        if self.converged {
            return Ok(());
        }
        let (value, g) = rosenbrock::value_and_grad(x);
        let norm = norm(&g.x);
        println!("{:>5}  {value:>24.16e}  {norm:>10.3e}", state.get_iter());
        if norm == 0.0 {
            println!("       (the gradient is exactly zero: later iterations stay here)");
            self.converged = true;
        }
        Ok(())
    }
}

/// The distance of `x` from the minimum (1, ..., 1), in the max norm.
fn distance_to_ones(x: &[f64]) -> f64 {
    x.iter().map(|v| (v - 1.0).abs()).fold(0.0, f64::max)
}

fn main() -> Result<(), Error> {
    let n = 10;
    // The classic start (-1.2, 1) repeated.
    let start: Vec<f64> = (0..n)
        .map(|i| if i % 2 == 0 { -1.2 } else { 1.0 })
        .collect();
    let problem = deltad::argmin_problem!(rosenbrock, x);
    let g = problem.gradient(&start)?;
    println!(
        "n = {n}, start f = {}, |∇f| = {:.3e}",
        rosenbrock(&start),
        norm(&g)
    );

    println!("\nL-BFGS (m = 7, More-Thuente line search)");
    println!("{:>5}  {:>24}  {:>10}", "iter", "f(x)", "|∇f(x)|");
    let lbfgs = LBFGS::new(MoreThuenteLineSearch::new(), 7)
        .with_tolerance_grad(1e-10)?
        .with_tolerance_cost(0.0)?;
    let result = Executor::new(problem, lbfgs)
        .configure(|state| state.param(start.clone()).max_iters(500).counting(true))
        .add_observer(Progress::default(), ObserverMode::Always)
        .run()?;
    let state = result.state();
    let best = state.get_best_param().expect("a best parameter");
    println!(
        "L-BFGS: {} iterations, f = {:.3e}, max |x_i - 1| = {:.3e}, cost evaluations {}, \
         gradient evaluations {} ({:?})",
        state.get_iter(),
        state.get_best_cost(),
        distance_to_ones(best),
        state
            .get_func_counts()
            .get("cost_count")
            .copied()
            .unwrap_or(0),
        state
            .get_func_counts()
            .get("gradient_count")
            .copied()
            .unwrap_or(0),
        state.get_termination_status(),
    );
    assert!(
        distance_to_ones(best) < 1e-6,
        "L-BFGS did not reach (1, ..., 1)"
    );
    assert!(state.get_best_cost() < 1e-12);

    println!("\nNewton's method, deltad's Hessian (inverted by the adaptor's HessianMatrix)");
    println!("{:>5}  {:>24}  {:>10}", "iter", "f(x)", "|∇f(x)|");
    // argmin's Newton takes full steps and has no stopping test of its own:
    // a fixed number of iterations, then the result is checked.
    let iterations = 50;
    let problem = deltad::argmin_problem!(rosenbrock, x);
    let result = Executor::new(problem, Newton::new())
        .configure(|state| {
            state
                .param(start.clone())
                .max_iters(iterations)
                .counting(true)
        })
        .add_observer(Progress::default(), ObserverMode::Always)
        .run()?;
    let state = result.state();
    let best = state.get_param().expect("the last parameters");
    println!(
        "Newton: {} iterations, f = {:.3e}, max |x_i - 1| = {:.3e}, Hessian evaluations {} ({:?})",
        state.get_iter(),
        rosenbrock(best),
        distance_to_ones(best),
        state
            .get_func_counts()
            .get("hessian_count")
            .copied()
            .unwrap_or(0),
        state.get_termination_status(),
    );
    assert!(
        distance_to_ones(best) < 1e-6,
        "Newton did not reach (1, ..., 1)"
    );
    assert!(rosenbrock(best) < 1e-12);
    Ok(())
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}
