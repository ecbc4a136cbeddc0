//! The argmin adaptor (cargo feature `argmin`): its gradient and Hessian
//! against hand-written ones, the Hessian's inverse, errors, and argmin's
//! L-BFGS and Newton solvers converging to Rosenbrock's minimum.
//!
//! Run with `cargo test --features argmin --test argmin`.
#![cfg(feature = "argmin")]
#![allow(clippy::all)]

mod common;
use argmin::core::{CostFunction, Executor, Gradient, Hessian, State};
use argmin::solver::linesearch::{HagerZhangLineSearch, MoreThuenteLineSearch};
use argmin::solver::newton::Newton;
use argmin::solver::quasinewton::LBFGS;
use argmin_math::{ArgminDot, ArgminInv};
use common::*;
use deltad::argmin_support::{ArgminProblem, HessianMatrix};
use deltad::differentiate;

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

/// ∂f/∂x_i, written by hand.
fn hand_gradient(x: &[f64]) -> Vec<f64> {
    let n = x.len();
    let mut g = vec![0.0; n];
    for i in 0..n - 1 {
        let a = x[i + 1] - x[i] * x[i];
        g[i] += -400.0 * x[i] * a - 2.0 * (1.0 - x[i]);
        g[i + 1] += 200.0 * a;
    }
    g
}

/// ∂²f/∂x_i∂x_j, written by hand (tridiagonal).
fn hand_hessian(x: &[f64]) -> Vec<Vec<f64>> {
    let n = x.len();
    let mut h = vec![vec![0.0; n]; n];
    for i in 0..n - 1 {
        h[i][i] += 1200.0 * x[i] * x[i] - 400.0 * x[i + 1] + 2.0;
        h[i][i + 1] += -400.0 * x[i];
        h[i + 1][i] += -400.0 * x[i];
        h[i + 1][i + 1] += 200.0;
    }
    h
}

fn start(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| if i % 2 == 0 { -1.2 } else { 1.0 })
        .collect()
}

fn distance_to_ones(x: &[f64]) -> f64 {
    x.iter().map(|v| (v - 1.0).abs()).fold(0.0, f64::max)
}

#[test]
fn cost_gradient_and_hessian_match_the_hand_written_ones() {
    let problem = deltad::argmin_problem!(rosenbrock, x);
    let mut rng = Rng::new(7);
    for n in [2, 3, 6] {
        for _ in 0..5 {
            let x = rng.vec(n, -2.0, 2.0);
            assert_eq!(problem.cost(&x).unwrap(), rosenbrock(&x));
            assert_close(
                &problem.gradient(&x).unwrap(),
                &hand_gradient(&x),
                "gradient",
            );
            let h = problem.hessian(&x).unwrap();
            for (row, hand) in h.rows().iter().zip(hand_hessian(&x)) {
                assert_close(row, &hand, "Hessian row");
            }
        }
    }
}

#[test]
fn the_hessian_inverse_is_an_inverse() {
    let x = [0.3, -0.8, 1.4, 0.9];
    let h = HessianMatrix::from_rows(hand_hessian(&x));
    let inverse = h.inv().unwrap();
    for j in 0..x.len() {
        let e: Vec<f64> = (0..x.len())
            .map(|i| if i == j { 1.0 } else { 0.0 })
            .collect();
        // H (H⁻¹ e_j) = e_j.
        let column = inverse.dot(&e);
        assert_close(&h.dot(&column), &e, "H H⁻¹ e_j");
    }
    let singular = HessianMatrix::from_rows(vec![vec![1.0, 2.0], vec![2.0, 4.0]]);
    assert!(singular.inv().is_err());
}

#[test]
fn mis_sized_derivatives_are_errors() {
    let problem = ArgminProblem::new(|x: &[f64]| x[0], |_: &[f64]| vec![1.0])
        .with_hessian(|_: &[f64]| vec![vec![0.0]]);
    assert!(problem.gradient(&vec![1.0, 2.0]).is_err());
    assert!(problem.hessian(&vec![1.0, 2.0]).is_err());
    assert!(problem.gradient(&vec![1.0]).is_ok());
}

#[test]
fn lbfgs_converges_to_the_minimum_with_either_line_search() {
    for n in [2, 5, 10] {
        let problem = deltad::argmin_problem!(rosenbrock, x);
        let solver = LBFGS::new(MoreThuenteLineSearch::new(), 7)
            .with_tolerance_grad(1e-10)
            .unwrap()
            .with_tolerance_cost(0.0)
            .unwrap();
        let result = Executor::new(problem, solver)
            .configure(|state| state.param(start(n)).max_iters(500))
            .run()
            .unwrap();
        let best = result.state().get_best_param().unwrap();
        assert!(distance_to_ones(best) < 1e-6, "n = {n}: {best:?}");

        let problem = deltad::argmin_problem!(rosenbrock, x);
        let solver = LBFGS::new(HagerZhangLineSearch::new(), 7)
            .with_tolerance_grad(1e-10)
            .unwrap()
            .with_tolerance_cost(0.0)
            .unwrap();
        let result = Executor::new(problem, solver)
            .configure(|state| state.param(start(n)).max_iters(500))
            .run()
            .unwrap();
        let best = result.state().get_best_param().unwrap();
        assert!(
            distance_to_ones(best) < 1e-6,
            "n = {n} (Hager-Zhang): {best:?}"
        );
    }
}

#[test]
fn newton_converges_to_the_minimum() {
    for n in [2, 10] {
        let problem = deltad::argmin_problem!(rosenbrock, x);
        let result = Executor::new(problem, Newton::<f64>::new())
            .configure(|state| state.param(start(n)).max_iters(50))
            .run()
            .unwrap();
        let x = result.state().get_param().unwrap();
        assert!(distance_to_ones(x) < 1e-10, "n = {n}: {x:?}");
        assert!(rosenbrock(x) < 1e-20, "n = {n}");
    }
}
