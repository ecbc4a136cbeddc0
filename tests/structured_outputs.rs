//! Structured outputs: tuples, arrays, `Vec`s, structs and `&mut` output
//! parameters, with `vjp` (checked by the dot-product identity
//! <δt, J δs> = <Jᵀ δt, δs>, J δs by central differences along δs) and
//! `jacobian` (checked entry by entry against finite differences).
#![allow(clippy::all)]

mod common;
use common::*;
use deltad::{differentiate, Differentiable};

/// J δs by central differences of `f` along `direction` at `x`.
fn directional(f: impl Fn(&[f64]) -> Vec<f64>, x: &[f64], direction: &[f64]) -> Vec<f64> {
    let h = 1e-6;
    let at = |t: f64| -> Vec<f64> {
        let moved: Vec<f64> = x.iter().zip(direction).map(|(a, d)| a + t * d).collect();
        f(&moved)
    };
    central_difference(at, h)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

// ----- a vector function of a slice ---------------------------------------

/// Pairwise products and a running sum: R^n -> R^(n-1) × R.
#[differentiate]
fn features(x: &[f64]) -> (Vec<f64>, f64) {
    let mut products = Vec::new();
    let mut total = 0.0;
    for i in 1..x.len() {
        products.push(x[i - 1] * x[i].sin());
        total += x[i] * x[i];
    }
    (products, total.sqrt())
}

fn features_flat(x: &[f64]) -> Vec<f64> {
    let (mut p, t) = features(x);
    p.push(t);
    p
}

#[test]
fn vjp_of_a_tuple_output_satisfies_the_dot_product_identity() {
    let mut rng = Rng::new(31);
    let x = rng.vec(5, -2.0, 2.0);
    for _ in 0..5 {
        let ds = rng.vec(5, -1.0, 1.0);
        let dt_products = rng.vec(4, -1.0, 1.0);
        let dt_total = rng.uniform(-1.0, 1.0);
        let (value, g) = features::vjp(&x, &(dt_products.clone(), dt_total));
        assert_eq!(value, features(&x));
        let mut dt = dt_products.clone();
        dt.push(dt_total);
        let forward = dot(&dt, &directional(features_flat, &x, &ds));
        let reverse = dot(&g.x, &ds);
        assert_close(&[reverse], &[forward], "<δt, J δs> = <Jᵀ δt, δs>");
    }
}

#[test]
fn jacobian_rows_are_output_reals_in_leaf_order() {
    let x = [0.3, -1.2, 2.0, 0.7];
    let (value, rows) = features::jacobian(&x);
    assert_eq!(value, features(&x));
    assert_eq!(rows.len(), 4);
    for (i, row) in rows.iter().enumerate() {
        let reference = finite_difference(|p| features_flat(p)[i], &x);
        assert_close(&row.x, &reference, &format!("row {i}"));
    }
    features::check_derivatives(&x).assert_within(1e-6);
}

// ----- arrays and structs --------------------------------------------------

#[differentiate]
fn rotation(angle: f64, v: [f64; 2]) -> [f64; 2] {
    let (s, c) = angle.sin_cos();
    [c * v[0] - s * v[1], s * v[0] + c * v[1]]
}

#[test]
fn array_outputs() {
    let (value, rows) = rotation::jacobian(0.4, [1.0, 2.0]);
    assert_eq!(value, rotation(0.4, [1.0, 2.0]));
    let (s, c) = 0.4f64.sin_cos();
    // Hand-written Jacobian of the rotation.
    assert_close(
        &[rows[0].angle, rows[0].v[0], rows[0].v[1]],
        &[-s * 1.0 - c * 2.0, c, -s],
        "row 0",
    );
    assert_close(
        &[rows[1].angle, rows[1].v[0], rows[1].v[1]],
        &[c * 1.0 - s * 2.0, s, c],
        "row 1",
    );
    let (_, g) = rotation::vjp(0.4, [1.0, 2.0], &[0.5, -1.0]);
    assert_close(
        &[g.angle],
        &[0.5 * rows[0].angle - rows[1].angle],
        "vjp = δtᵀ J",
    );
}

#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Stats {
    pub mean: f64,
    pub variance: f64,
    pub count: usize,
}

#[differentiate]
fn stats(samples: &[f64]) -> Stats {
    let n = samples.len();
    let mean = samples.iter().sum::<f64>() / n as f64;
    let mut variance = 0.0;
    for s in samples {
        variance += (s - mean) * (s - mean);
    }
    Stats {
        mean,
        variance: variance / n as f64,
        count: n,
    }
}

#[test]
fn struct_outputs_with_discrete_fields() {
    let samples = [1.0, 4.0, 2.5, -0.5];
    let (value, rows) = stats::jacobian(&samples);
    assert_eq!(value, stats(&samples));
    assert_eq!(rows.len(), 2, "the count is not a real");
    let mean = value.mean;
    // Hand-written: ∂mean/∂s_i = 1/n, ∂var/∂s_i = 2(s_i - mean)/n.
    let n = samples.len() as f64;
    assert_close(&rows[0].samples, &[1.0 / n; 4], "∂mean");
    let dvar: Vec<f64> = samples.iter().map(|s| 2.0 * (s - mean) / n).collect();
    assert_close(&rows[1].samples, &dvar, "∂variance");
    let seed = Stats {
        mean: 1.0,
        variance: 2.0,
        count: 0,
    };
    let (_, g) = stats::vjp(&samples, &seed);
    let expected: Vec<f64> = dvar.iter().map(|d| 1.0 / n + 2.0 * d).collect();
    assert_close(&g.samples, &expected, "vjp");
}

// ----- `&mut` output parameters ---------------------------------------------

/// y ← A x + y, the BLAS way.
#[differentiate]
fn gemv(a: &[f64], x: &[f64], y: &mut [f64]) {
    let n = x.len();
    for i in 0..y.len() {
        let mut s = 0.0;
        for j in 0..n {
            s += a[i * n + j] * x[j];
        }
        y[i] += s;
    }
}

#[test]
fn output_parameters_are_results_and_their_contents_inputs() {
    let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let x = [0.5, -1.0, 2.0];
    let y0 = [0.25, -0.75];
    let mut y = y0;
    let ((), rows) = gemv::jacobian(&a, &x, &mut y);
    let mut expected = y0;
    gemv(&a, &x, &mut expected);
    assert_eq!(
        y, expected,
        "the wrapper writes the results like the function"
    );
    // Hand-written: ∂y_i/∂a_ij = x_j, ∂y_i/∂x_j = a_ij, ∂y_i/∂y0_k = δ_ik.
    for i in 0..2 {
        for j in 0..3 {
            assert_eq!(rows[i].a[i * 3 + j], x[j]);
            assert_eq!(rows[i].x[j], a[i * 3 + j]);
        }
        assert_eq!(
            rows[i].y,
            if i == 0 {
                vec![1.0, 0.0]
            } else {
                vec![0.0, 1.0]
            }
        );
    }
    let mut y = y0;
    let ((), g) = gemv::vjp(&a, &x, &mut y, &vec![1.0, -2.0]);
    assert_eq!(g.y, vec![1.0, -2.0]);
    assert_close(&g.x, &[1.0 - 8.0, 2.0 - 10.0, 3.0 - 12.0], "Aᵀ δt");
}

#[differentiate]
fn normalized(v: &[f64]) -> f64 {
    let mut unit = vec![0.0; v.len()];
    normalize_into(v, &mut unit);
    unit[0] + 2.0 * unit[1]
}

#[differentiate]
fn normalize_into(v: &[f64], out: &mut [f64]) {
    let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    for (o, x) in out.iter_mut().zip(v) {
        *o = x / norm;
    }
}

#[test]
fn output_parameters_written_by_callees() {
    let v = [3.0, 4.0, 12.0];
    let (value, g) = normalized::value_and_grad(&v);
    assert_eq!(value, normalized(&v));
    let reference = finite_difference(|p| normalized(p), &v);
    assert_close(&g.v, &reference, "through an output parameter");
}

// ----- `Result` results and `?` ----------------------------------------------

#[derive(Debug, Clone, PartialEq)]
pub enum DomainError {
    Negative(usize),
    TooLarge,
}

/// x^1.5, or an error below 0 (as statrs' checked functions do).
#[differentiate]
fn checked_power(x: f64, #[no_grad] index: usize) -> Result<f64, DomainError> {
    if x < 0.0 {
        return Err(DomainError::Negative(index));
    }
    Ok(x.sqrt() * x)
}

/// Σ y_i · x_i^1.5 through `?`, and an error of its own.
#[differentiate]
fn weighted_powers(x: &[f64], y: f64) -> Result<f64, DomainError> {
    let mut total = 0.0;
    for i in 0..x.len() {
        total += checked_power(x[i], i)? * y;
    }
    if total > 1e6 {
        Err(DomainError::TooLarge)
    } else {
        Ok(total)
    }
}

#[test]
fn result_outputs_and_the_question_mark() {
    let (x, y) = ([4.0, 0.25, 1.0], 2.0);
    let g = weighted_powers::grad(&x, y).expect("no error at this point");
    let expected: Vec<f64> = x.iter().map(|v| 1.5 * v.sqrt() * y).collect();
    assert_close_tol(&g.x, &expected, 1e-15, "Result grad x");
    let sum: f64 = x.iter().map(|v| v.sqrt() * v).sum();
    assert_eq!(g.y, sum);
    let (value, _) = weighted_powers::value_and_grad(&x, y).unwrap();
    assert_eq!(Ok(value), weighted_powers(&x, y));
    assert_eq!(
        weighted_powers::grad(&[1.0, -2.0], y),
        Err(DomainError::Negative(1))
    );
    assert_eq!(weighted_powers::grad(&[1e5], y), Err(DomainError::TooLarge));
    // vjp and jacobian return the `Result`; an error has no rows.
    let (value, rows) = weighted_powers::jacobian(&x, y);
    assert_eq!(value, Ok(2.0 * sum));
    assert_eq!(rows[0].x, g.x);
    let (value, rows) = weighted_powers::jacobian(&[-1.0], y);
    assert_eq!((value, rows.len()), (Err(DomainError::Negative(0)), 0));
    let (value, tangent) = weighted_powers::jvp(
        &x,
        y,
        &weighted_powers::Grad {
            x: vec![1.0, 0.0, 0.0],
            y: 0.0,
        },
    );
    assert_eq!(value, Ok(2.0 * sum));
    assert_eq!(tangent, Ok(g.x[0]));
}
