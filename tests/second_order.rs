//! Second order by forward-over-reverse: Hessians, Hessian-vector products,
//! diagonals and Laplacians, against analytic Hessians and against central
//! finite differences of the (reverse-mode) gradient.
#![allow(clippy::all)]

mod common;
use common::*;
use deltad::differentiate;

/// The Hessian by central differences of the gradient `grad` (step 1e-5:
/// the gradient is smooth, truncation error O(h²) ~ 1e-10 relative, rounding
/// O(ε/h) ~ 1e-11; the tolerance 1e-5 below is generous).
fn hessian_by_differences(grad: impl Fn(&[f64]) -> Vec<f64>, x: &[f64]) -> Vec<Vec<f64>> {
    let h = 1e-5;
    (0..x.len())
        .map(|i| {
            let (mut up, mut down) = (x.to_vec(), x.to_vec());
            up[i] += h;
            down[i] -= h;
            let (gu, gd) = (grad(&up), grad(&down));
            gu.iter()
                .zip(&gd)
                .map(|(a, b)| (a - b) / (2.0 * h))
                .collect()
        })
        .collect()
}

#[differentiate]
fn rosenbrock(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = x[i + 1] - x[i] * x[i];
        let b = 1.0 - x[i];
        s += 100.0 * a * a + b * b;
    }
    s
}

/// The Rosenbrock Hessian, derived by hand.
fn rosenbrock_hessian(x: &[f64]) -> Vec<Vec<f64>> {
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

#[test]
fn rosenbrock_hessian_is_exact() {
    let x = [1.2, -0.7, 0.4, 2.0, -1.1];
    let rows = rosenbrock::hessian(&x);
    let expected = rosenbrock_hessian(&x);
    for (i, row) in rows.iter().enumerate() {
        assert_close(&row.x, &expected[i], &format!("row {i}"));
    }
    let diagonal = rosenbrock::hessian_diagonal(&x);
    let expected_diagonal: Vec<f64> = (0..x.len()).map(|i| expected[i][i]).collect();
    assert_close(&diagonal.x, &expected_diagonal, "diagonal");
    let trace: f64 = expected_diagonal.iter().sum();
    assert_close(&[rosenbrock::laplacian(&x)], &[trace], "laplacian");
    let v = [0.5, -1.0, 0.25, 2.0, -0.5];
    let hv = rosenbrock::hvp(&x, &rosenbrock::Grad { x: v.to_vec() });
    let expected_hv: Vec<f64> = expected
        .iter()
        .map(|row| row.iter().zip(&v).map(|(a, b)| a * b).sum())
        .collect();
    assert_close(&hv.x, &expected_hv, "H v");
    // The gradient and H v from one pass: the same H v, and the gradient
    // `grad` computes (to rounding: dual arithmetic adds the same terms).
    let (gradient, hv_too) = rosenbrock::grad_and_hvp(&x, &rosenbrock::Grad { x: v.to_vec() });
    assert_eq!(hv_too.x, hv.x);
    assert_close_tol(&gradient.x, &rosenbrock::grad(&x).x, 1e-14, "gradient");
}

/// The same on the tape.
#[differentiate(tape)]
fn rosenbrock_tape(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = x[i + 1] - x[i] * x[i];
        let b = 1.0 - x[i];
        s += 100.0 * a * a + b * b;
    }
    s
}

#[test]
fn gradient_and_hessian_vector_product_in_one_pass_on_the_tape() {
    let x = [1.2, -0.7, 0.4, 2.0, -1.1];
    let v = rosenbrock_tape::Grad {
        x: vec![0.5, -1.0, 0.25, 2.0, -0.5],
    };
    let (gradient, hv) = rosenbrock_tape::grad_and_hvp(&x, &v);
    assert_eq!(hv.x, rosenbrock_tape::hvp(&x, &v).x);
    let expected: Vec<f64> = rosenbrock_hessian(&x)
        .iter()
        .map(|row| row.iter().zip(&v.x).map(|(a, b)| a * b).sum())
        .collect();
    assert_close(&hv.x, &expected, "H v");
    assert_close_tol(&gradient.x, &rosenbrock_tape::grad(&x).x, 1e-14, "gradient");
}

/// ½ xᵀ A x + bᵀ x with A given by its rows: Hessian (A + Aᵀ)/2.
#[differentiate]
fn quadratic(x: &[f64], #[no_grad] a: &[Vec<f64>], #[no_grad] b: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        for j in 0..x.len() {
            s += 0.5 * x[i] * a[i][j] * x[j];
        }
        s += b[i] * x[i];
    }
    s
}

#[test]
fn a_quadratic_form_has_a_constant_hessian() {
    let a = vec![
        vec![2.0, 1.0, 0.0],
        vec![3.0, 4.0, -1.0],
        vec![0.0, 1.0, 5.0],
    ];
    let b = [1.0, -2.0, 0.5];
    for x in [[0.0, 0.0, 0.0], [1.0, -3.0, 2.0]] {
        let rows = quadratic::hessian(&x, &a, &b);
        for i in 0..3 {
            let expected: Vec<f64> = (0..3).map(|j| 0.5 * (a[i][j] + a[j][i])).collect();
            assert_eq!(rows[i].x, expected, "row {i} at {x:?}");
        }
    }
}

#[differentiate]
fn logsumexp(x: &[f64]) -> f64 {
    let m = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let mut s = 0.0;
    for v in x {
        s += (v - m).exp();
    }
    m + s.ln()
}

#[test]
fn logsumexp_hessian_is_diag_p_minus_p_pt() {
    let x = [0.3, -1.2, 2.0, 0.0];
    let total = logsumexp(&x);
    let p: Vec<f64> = x.iter().map(|v| (v - total).exp()).collect();
    let rows = logsumexp::hessian(&x);
    for i in 0..4 {
        let expected: Vec<f64> = (0..4)
            .map(|j| {
                if i == j {
                    p[i] - p[i] * p[j]
                } else {
                    -p[i] * p[j]
                }
            })
            .collect();
        assert_close(&rows[i].x, &expected, &format!("row {i}"));
    }
}

/// A 2-layer network's squared error: Σ (w2 · tanh(W1 x + b1) - y)².
#[differentiate]
fn network(params: &[f64], #[no_grad] inputs: &[Vec<f64>], #[no_grad] targets: &[f64]) -> f64 {
    let hidden = 3;
    let d = inputs[0].len();
    let mut loss = 0.0;
    for (x, y) in inputs.iter().zip(targets) {
        let mut out = params[hidden * d + hidden + hidden];
        for h in 0..hidden {
            let mut z = params[hidden * d + h];
            for k in 0..d {
                z += params[h * d + k] * x[k];
            }
            out += params[hidden * d + hidden + h] * z.tanh();
        }
        loss += (out - y) * (out - y);
    }
    loss
}

#[test]
fn network_hessian_matches_differences_of_the_gradient() {
    let mut rng = Rng::new(7);
    let inputs: Vec<Vec<f64>> = (0..4).map(|_| rng.vec(2, -1.0, 1.0)).collect();
    let targets = rng.vec(4, -1.0, 1.0);
    let params = rng.vec(3 * 2 + 3 + 3 + 1, -0.8, 0.8);
    let rows = network::hessian(&params, &inputs, &targets);
    let reference = hessian_by_differences(|p| network::grad(p, &inputs, &targets).params, &params);
    for (i, row) in rows.iter().enumerate() {
        assert_close_tol(&row.params, &reference[i], 1e-5, &format!("row {i}"));
    }
    // Symmetric, as a Hessian is.
    for i in 0..params.len() {
        for j in 0..i {
            assert!(
                (rows[i].params[j] - rows[j].params[i]).abs()
                    <= 1e-12 * rows[i].params[j].abs().max(1.0)
            );
        }
    }
}

#[differentiate]
fn mixed_params(a: f64, v: [f64; 2], w: &[f64]) -> f64 {
    a * a * v[0] + (v[1] * w[0]).sin() + w[1].exp() * a
}

#[test]
fn hessian_rows_span_all_parameters_in_order() {
    let (a, v, w) = (0.5, [1.5, -0.5], [0.25, 0.75]);
    let rows = mixed_params::hessian(a, v, &w);
    assert_eq!(rows.len(), 5);
    // Row of a: (2 v0, 2a, 0, 0, e^w1).
    assert_close(
        &[
            rows[0].a,
            rows[0].v[0],
            rows[0].v[1],
            rows[0].w[0],
            rows[0].w[1],
        ],
        &[2.0 * v[0], 2.0 * a, 0.0, 0.0, w[1].exp()],
        "row a",
    );
    // Row of w1: (e^w1, 0, 0, 0, a e^w1).
    assert_close(
        &[
            rows[4].a,
            rows[4].v[0],
            rows[4].v[1],
            rows[4].w[0],
            rows[4].w[1],
        ],
        &[w[1].exp(), 0.0, 0.0, 0.0, a * w[1].exp()],
        "row w1",
    );
}

#[differentiate]
fn rosenbrock32(x: &[f32]) -> f32 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = x[i + 1] - x[i] * x[i];
        let b = 1.0 - x[i];
        s += 100.0 * a * a + b * b;
    }
    s
}

#[test]
fn second_order_in_f32() {
    let x = [1.2f32, -0.7, 0.4];
    let rows = rosenbrock32::hessian(&x);
    let expected = rosenbrock_hessian(&[1.2, -0.7, 0.4]);
    for (i, row) in rows.iter().enumerate() {
        for j in 0..3 {
            let e = expected[i][j];
            assert!(
                (f64::from(row.x[j]) - e).abs() <= 1e-5 * e.abs().max(1.0),
                "({i}, {j}): {} vs {e}",
                row.x[j]
            );
        }
    }
    let lap = rosenbrock32::laplacian(&x);
    let trace: f64 = (0..3).map(|i| expected[i][i]).sum();
    assert!((f64::from(lap) - trace).abs() <= 1e-5 * trace);
}

/// A by-value constant of the user's own type (not `Clone` by its spelling,
/// `Clone` by its derive): the second-order functions and
/// `check_derivatives` exist, their `Clone` requirement left to rustc.
#[derive(Clone, Copy)]
enum OptionType {
    Call,
    Put,
}

#[differentiate]
fn payoff(#[no_grad] kind: OptionType, s: f64, k: f64) -> f64 {
    match kind {
        OptionType::Call => s * s * k,
        OptionType::Put => k * k * s,
    }
}

#[test]
fn second_order_with_a_by_value_constant_of_a_user_type() {
    let (s, k) = (2.0, 3.0);
    // Call: s²k, Hessian [[2k, 2s], [2s, 0]]; Put: k²s, [[0, 2k], [2k, 2s]].
    let call = payoff::hessian(OptionType::Call, s, k);
    assert_eq!(
        [call[0].s, call[0].k, call[1].s, call[1].k],
        [2.0 * k, 2.0 * s, 2.0 * s, 0.0]
    );
    let put = payoff::hessian(OptionType::Put, s, k);
    assert_eq!(
        [put[0].s, put[0].k, put[1].s, put[1].k],
        [0.0, 2.0 * k, 2.0 * k, 2.0 * s]
    );
    let v = payoff::Grad { s: 1.0, k: -2.0 };
    let hv = payoff::hvp(OptionType::Call, s, k, &v);
    assert_eq!([hv.s, hv.k], [2.0 * k - 4.0 * s, 2.0 * s]);
    assert_eq!(payoff::laplacian(OptionType::Put, s, k), 2.0 * s);
    payoff::check_derivatives(OptionType::Put, s, k).assert_within(1e-6);
}
