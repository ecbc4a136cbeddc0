//! Jacobians at the cost of their structure: a tridiagonal system of
//! n residuals (a discretised 1-D reaction–diffusion operator), its
//! Jacobian by colouring (`sparse_jacobian`: three colours at every n, so
//! one forward pass on dual numbers carrying 8 tangents), and forward mode
//! along 8 tangents in one pass (`jvps`) against one `jvp`.

use deltad::differentiate;

/// Sizes of the tridiagonal system.
pub const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

/// r[i] = x[i-1] - 2 x[i] + x[i+1] + h² (x[i]³ - sin x[i]) (ends held at 0).
#[differentiate]
pub fn residuals(x: &[f64]) -> Vec<f64> {
    let n = x.len();
    let h2 = 1.0 / ((n + 1) * (n + 1)) as f64;
    let mut r = vec![0.0; n];
    for i in 0..n {
        let left = if i > 0 { x[i - 1] } else { 0.0 };
        let right = if i + 1 < n { x[i + 1] } else { 0.0 };
        r[i] = left - 2.0 * x[i] + right + h2 * (x[i] * x[i] * x[i] - x[i].sin());
    }
    r
}

/// The Jacobian's three diagonals written by hand: (sub, main, super).
pub fn hand(x: &[f64]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let n = x.len();
    let h2 = 1.0 / ((n + 1) * (n + 1)) as f64;
    let main = x
        .iter()
        .map(|&v| -2.0 + h2 * (3.0 * v * v - v.cos()))
        .collect();
    (
        vec![1.0; n.saturating_sub(1)],
        main,
        vec![1.0; n.saturating_sub(1)],
    )
}

pub fn input(n: usize) -> Vec<f64> {
    (0..n).map(|i| (i as f64 * 0.37).sin()).collect()
}

/// Eight tangents over n inputs.
pub fn tangents(n: usize) -> Vec<residuals::Grad> {
    (0..8)
        .map(|k| residuals::Grad {
            x: (0..n).map(|i| ((i * 3 + k * 5) % 7) as f64 - 3.0).collect(),
        })
        .collect()
}

/// The sparse Jacobian against the hand-written diagonals, and `jvps`
/// against one `jvp` per tangent.
pub fn check() {
    let x = input(50);
    let pattern = residuals::jacobian_pattern(&x);
    assert_eq!(pattern.colours(), 3);
    let (_, jacobian) = residuals::sparse_jacobian(&x, &pattern);
    let (sub, main, sup) = hand(&x);
    for i in 0..x.len() {
        let close =
            |a: f64, b: f64| assert!((a - b).abs() <= 1e-14 * b.abs().max(1.0), "{a} vs {b}");
        close(jacobian.get(i, i), main[i]);
        if i > 0 {
            close(jacobian.get(i, i - 1), sub[i - 1]);
        }
        if i + 1 < x.len() {
            close(jacobian.get(i, i + 1), sup[i]);
        }
    }
    let ts = tangents(x.len());
    let (_, many) = residuals::jvps(&x, &ts);
    for (t, d) in ts.iter().zip(&many) {
        assert_eq!(d, &residuals::jvp(&x, t).1);
    }
}

/// Sizes of the Hessian benchmarks: a dense Hessian by rows, and the
/// tridiagonal Hessian of the Rosenbrock chain by colours.
pub const DENSE_HESSIAN_SIZES: [usize; 2] = [16, 64];
pub const SPARSE_HESSIAN_SIZES: [usize; 2] = [1_000, 10_000];

/// Every pair of inputs interacts: a dense Hessian.
#[differentiate]
pub fn pairwise(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        for j in 0..i {
            s += (x[i] - x[j]).powi(2) / (1.0 + x[i] * x[j] * 0.1).exp();
        }
    }
    s
}

/// The Rosenbrock chain: a tridiagonal Hessian.
#[differentiate]
pub fn chain(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        s += 100.0 * (x[i + 1] - x[i] * x[i]).powi(2) + (1.0 - x[i]).powi(2);
    }
    s
}

/// The Hessian as before chunks: one forward-over-reverse pass (`hvp`)
/// per row.
pub fn hessian_by_rows(x: &[f64]) -> Vec<pairwise::Grad> {
    (0..x.len())
        .map(|i| {
            let mut unit = vec![0.0; x.len()];
            unit[i] = 1.0;
            pairwise::hvp(x, &pairwise::Grad { x: unit })
        })
        .collect()
}

/// The chunked Hessian against one `hvp` per row, and the sparse Hessian
/// of the chain against its dense one.
pub fn check_hessians() {
    let x = input(11);
    let (chunked, rows) = (pairwise::hessian(&x), hessian_by_rows(&x));
    for (a, b) in chunked.iter().zip(&rows) {
        for (u, v) in a.x.iter().zip(&b.x) {
            assert!((u - v).abs() <= 1e-12 * v.abs().max(1.0), "{u} vs {v}");
        }
    }
    let pattern = chain::hessian_pattern(&x);
    assert_eq!(pattern.colours(), 3);
    let sparse = chain::sparse_hessian(&x, &pattern).to_dense();
    for (a, b) in sparse.iter().zip(chain::hessian(&x)) {
        for (u, v) in a.iter().zip(&b.x) {
            assert!((u - v).abs() <= 1e-12 * v.abs().max(1.0), "{u} vs {v}");
        }
    }
}
