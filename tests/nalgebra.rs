//! nalgebra's vectors and matrices as differentiated parameters and results
//! (feature `nalgebra`).
//!
//! Gradients are checked against central finite differences of the plain
//! function (`common::check_gradient`: step 1e-6·max(1, |x|), tolerance
//! 1e-6·max(1, |g|); the module's doc derives the error budget: truncation
//! and rounding errors near 1e-10 for these O(1)–O(10) functions) and,
//! where short, against hand-written derivatives.
#![cfg(feature = "nalgebra")]

mod common;
use common::*;
use deltad::differentiate;
use deltad::nalgebra::{DMatrix, DVector, SMatrix, SVector, Vector3};

fn dvec(x: &[f64]) -> DVector<f64> {
    DVector::from_column_slice(x)
}

/// Concatenated entries (column-major for matrices).
fn flat<'a>(parts: impl IntoIterator<Item = &'a [f64]>) -> Vec<f64> {
    parts.into_iter().flatten().copied().collect()
}

#[differentiate]
fn vector_ops(v: &DVector<f64>, w: &DVector<f64>) -> f64 {
    let s = v.iter().map(|x| x.sin()).sum::<f64>();
    v.dot(w) + v.norm() * w.norm_squared() + v[0] * w[1] + v.sum() * v.len() as f64 + s
        - w.magnitude()
}

#[test]
fn dvector_dot_norm_sum_indexing_and_iteration() {
    let v = dvec(&[0.3, -1.2, 2.0]);
    let w = dvec(&[1.5, 0.7, -0.4]);
    let (value, g) = vector_ops::value_and_grad(&v, &w);
    assert_eq!(value, vector_ops(&v, &w));
    // The Grad fields are nalgebra vectors.
    let (gv, gw): (DVector<f64>, DVector<f64>) = (g.v, g.w);
    let f = |x: &[f64]| vector_ops(&dvec(&x[..3]), &dvec(&x[3..]));
    let x = flat([v.as_slice(), w.as_slice()]);
    check_gradient(f, &x, &flat([gv.as_slice(), gw.as_slice()]), "vector_ops");
}

/// ‖v‖² / 2 + v·w: ∇_v = v + w, ∇_w = v, exactly.
#[differentiate]
fn quadratic(v: DVector<f64>, w: &DVector<f64>) -> f64 {
    0.5 * v.norm_squared() + v.dot(w)
}

#[test]
fn by_value_parameters_and_hand_written_derivative() {
    let v = dvec(&[1.0, -2.0, 0.5, 4.0]);
    let w = dvec(&[0.25, 3.0, -1.0, 2.0]);
    let mut g = quadratic::grad(v.clone(), &w);
    assert_eq!(g.v, &v + &w);
    assert_eq!(g.w, v);
    // grad_into adds to a Grad of nalgebra fields.
    quadratic::grad_into(v.clone(), &w, &mut g);
    assert_eq!(g.v, 2.0 * (&v + &w));
    assert_eq!(g.w, 2.0 * &v);
}

#[differentiate]
fn matrix_ops(m: &DMatrix<f64>, v: &DVector<f64>) -> f64 {
    let y = m * v;
    let z = &y * 2.0 - v.component_mul(&y) + 0.5 * v;
    let t = m.transpose() * &y;
    let u = m.tr_mul(&z);
    z.norm_squared() + m[(0, 1)] * y.sum() + t.dot(&u) + (m * m).norm() + (-&z).mean()
}

#[test]
fn dmatrix_products_transpose_and_element_access() {
    let m = DMatrix::from_row_slice(3, 3, &[0.5, -1.0, 2.0, 1.5, 0.2, -0.7, 0.3, 0.9, 1.1]);
    let v = dvec(&[0.4, -0.6, 1.3]);
    let (value, g) = matrix_ops::value_and_grad(&m, &v);
    assert!((value - matrix_ops(&m, &v)).abs() <= 1e-12 * value.abs().max(1.0));
    let (gm, gv): (DMatrix<f64>, DVector<f64>) = (g.m, g.v);
    assert_eq!(gm.shape(), (3, 3));
    let f = |x: &[f64]| {
        let m = DMatrix::from_column_slice(3, 3, &x[..9]);
        matrix_ops(&m, &dvec(&x[9..]))
    };
    let x = flat([m.as_slice(), v.as_slice()]);
    check_gradient(f, &x, &flat([gm.as_slice(), gv.as_slice()]), "matrix_ops");
    // The generated finite-difference check agrees (its own tolerance
    // reasoning is in `DerivativeCheck`).
    matrix_ops::check_derivatives(&m, &v).assert_within(1e-6);
}

/// Rectangular matrices: element (i, j) of the gradient belongs to element
/// (i, j) of the parameter.
#[differentiate]
fn rectangular(m: &DMatrix<f64>, v: &DVector<f64>) -> f64 {
    let y = m * v;
    let mut s = 0.0;
    for i in 0..y.len() {
        s += (i as f64 + 1.0) * y[i] * y[i];
    }
    s + m[(1, 2)].powi(3)
}

#[test]
fn rectangular_matrix_gradient_is_shaped_like_the_matrix() {
    let m = DMatrix::from_row_slice(2, 3, &[1.0, 2.0, 3.0, -1.0, 0.5, 0.25]);
    let v = dvec(&[0.5, -1.0, 2.0]);
    let g = rectangular::grad(&m, &v);
    // Hand-written: y = M v, f = Σ (i+1) y_i² + M_12³;
    // ∂f/∂M_ij = 2 (i+1) y_i v_j (+ 3 M_12² at (1, 2)), ∇_v = Mᵀ (2 (i+1) y_i).
    let y = &m * &v;
    let weighted = DVector::from_fn(2, |i, _| 2.0 * (i as f64 + 1.0) * y[i]);
    let mut expected_m = &weighted * v.transpose();
    expected_m[(1, 2)] += 3.0 * m[(1, 2)].powi(2);
    let expected_v = m.transpose() * &weighted;
    assert_close(g.m.as_slice(), expected_m.as_slice(), "∇M");
    assert_close(g.v.as_slice(), expected_v.as_slice(), "∇v");
}

#[differentiate]
fn static_ops(a: Vector3<f64>, b: &SVector<f64, 3>, m: &SMatrix<f64, 3, 3>) -> f64 {
    // Static vectors are `Copy`, in the recording pass too.
    let n = a.normalize();
    let r = m * a;
    n.dot(b)
        + r.norm()
        + (a + b).component_mul(&r).sum()
        + a.scale(2.0).dot(&(b - a))
        + m[(2, 0)]
        + a.cross(b).norm_squared()
}

#[test]
fn static_vectors_and_matrices() {
    let a = Vector3::new(0.3, -0.8, 1.1);
    let b = SVector::<f64, 3>::new(1.0, 0.5, -0.25);
    let m = SMatrix::<f64, 3, 3>::from_row_slice(&[1.0, 0.2, 0.0, -0.5, 2.0, 0.3, 0.1, 0.0, 1.5]);
    let g = static_ops::grad(a, &b, &m);
    let (ga, gb, gm): (Vector3<f64>, SVector<f64, 3>, SMatrix<f64, 3, 3>) = (g.a, g.b, g.m);
    let f = |x: &[f64]| {
        static_ops(
            Vector3::from_column_slice(&x[..3]),
            &SVector::<f64, 3>::from_column_slice(&x[3..6]),
            &SMatrix::<f64, 3, 3>::from_column_slice(&x[6..]),
        )
    };
    let x = flat([a.as_slice(), b.as_slice(), m.as_slice()]);
    let grad = flat([ga.as_slice(), gb.as_slice(), gm.as_slice()]);
    check_gradient(f, &x, &grad, "static_ops");
}

/// Least squares with constant data; `y.dot(&r)` has a constant receiver.
#[differentiate]
fn least_squares(
    w: &DVector<f64>,
    #[no_grad] x: &DMatrix<f64>,
    #[no_grad] y: &DVector<f64>,
) -> f64 {
    let r = x * w - y;
    r.dot(&r) + 0.1 * y.dot(&r)
}

#[test]
fn constant_operands_mix_with_dual_ones() {
    let x = DMatrix::from_row_slice(4, 2, &[1.0, 0.5, 2.0, -1.0, 0.0, 1.0, -1.5, 0.3]);
    let y = dvec(&[1.0, -0.5, 2.0, 0.25]);
    let w = dvec(&[0.2, -0.4]);
    let g = least_squares::grad(&w, &x, &y);
    // ∇ = 2 Xᵀ (X w - y) + 0.1 Xᵀ y.
    let expected = 2.0 * x.transpose() * (&x * &w - &y) + 0.1 * x.transpose() * &y;
    assert_close(g.w.as_slice(), expected.as_slice(), "least squares");
}

#[differentiate]
fn squared_norm(v: &DVector<f64>) -> f64 {
    v.norm_squared()
}

/// A differentiated function calling another with a nalgebra argument.
#[differentiate]
fn calls_helper(v: &DVector<f64>, m: &DMatrix<f64>) -> f64 {
    let y = m * v;
    squared_norm(&y) + squared_norm(v)
}

#[test]
fn calls_between_differentiated_functions() {
    let v = dvec(&[1.0, 2.0]);
    let m = DMatrix::from_row_slice(2, 2, &[0.5, -1.0, 1.5, 2.0]);
    let g = calls_helper::grad(&v, &m);
    let y = &m * &v;
    let expected_v = 2.0 * m.transpose() * &y + 2.0 * &v;
    let expected_m = 2.0 * &y * v.transpose();
    assert_close(g.v.as_slice(), expected_v.as_slice(), "∇v");
    assert_close(g.m.as_slice(), expected_m.as_slice(), "∇M");
}

/// A nalgebra result: `jacobian`, `vjp` and `jvp` through `Differentiable`.
#[differentiate]
fn affine(m: &DMatrix<f64>, v: &DVector<f64>) -> DVector<f64> {
    let mut y = m * v;
    y += v;
    y * 2.0
}

#[test]
fn vector_results_jacobian_vjp_and_jvp() {
    let m = DMatrix::from_row_slice(2, 2, &[1.0, 2.0, -0.5, 3.0]);
    let v = dvec(&[0.7, -1.1]);
    let (value, rows) = affine::jacobian(&m, &v);
    assert_eq!(value, affine(&m, &v));
    // y = 2 (M v + v): ∂y_i/∂v = 2 (M_i· + e_i), ∂y_i/∂M_kj = 2 δ_ik v_j.
    for (i, row) in rows.iter().enumerate() {
        let mut expected_v = 2.0 * m.row(i).transpose();
        expected_v[i] += 2.0;
        assert_eq!(row.v, expected_v);
        let expected_m = DMatrix::from_fn(2, 2, |k, j| if k == i { 2.0 * v[j] } else { 0.0 });
        assert_eq!(row.m, expected_m);
    }
    let seed = dvec(&[0.5, -2.0]);
    let (_, g) = affine::vjp(&m, &v, &seed);
    let expected = 2.0 * (m.transpose() * &seed + &seed);
    assert_close(g.v.as_slice(), expected.as_slice(), "vjp");
    // jvp: the tangent is a Grad; <seed, J t> = <Jᵀ seed, t>.
    let tangent = affine::Grad {
        m: DMatrix::from_row_slice(2, 2, &[0.1, 0.0, -0.3, 0.2]),
        v: dvec(&[1.0, 0.5]),
    };
    let (value, derivative) = affine::jvp(&m, &v, &tangent);
    assert_eq!(value, affine(&m, &v));
    let left = seed.dot(&derivative);
    let right = g.m.dot(&tangent.m) + g.v.dot(&tangent.v);
    assert!((left - right).abs() <= 1e-12, "{left} vs {right}");
}

/// ½ vᵀ A v + ‖v‖: second order by forward over reverse.
#[differentiate]
fn energy(v: &DVector<f64>, #[no_grad] a: &DMatrix<f64>) -> f64 {
    0.5 * v.dot(&(a * v)) + v.norm()
}

#[test]
fn hessian_of_a_quadratic_form_plus_norm() {
    let a = DMatrix::from_row_slice(3, 3, &[2.0, 0.5, 0.0, 0.5, 1.0, -0.3, 0.0, -0.3, 3.0]);
    let v = dvec(&[0.6, -0.2, 1.0]);
    let rows = energy::hessian(&v, &a);
    // H = A + (I - u uᵀ) / ‖v‖ with u = v / ‖v‖.
    let n = v.norm();
    let u = &v / n;
    let expected = &a + (DMatrix::identity(3, 3) - &u * u.transpose()) / n;
    for (i, row) in rows.iter().enumerate() {
        assert_close(
            row.v.as_slice(),
            expected.column(i).as_slice(),
            "Hessian row",
        );
    }
}

/// Single precision: `DVector<f32>` parameters and gradients.
#[differentiate]
fn single(v: &DVector<f32>, m: &DMatrix<f32>) -> f32 {
    (m * v).norm_squared()
}

#[test]
fn single_precision() {
    let v = DVector::from_vec(vec![1.0f32, -0.5]);
    let m = DMatrix::from_row_slice(2, 2, &[2.0f32, 1.0, 0.0, 3.0]);
    let g = single::grad(&v, &m);
    let (gv, gm): (DVector<f32>, DMatrix<f32>) = (g.v, g.m);
    // ∇_v = 2 Mᵀ M v, ∇_M = 2 (M v) vᵀ: small integers, exact in f32.
    let y = &m * &v;
    assert_eq!(gv, 2.0 * m.transpose() * &y);
    assert_eq!(gm, 2.0 * &y * v.transpose());
}

/// Dot products and norms are recorded as one binding each.
#[differentiate]
fn one_binding(v: &DVector<f64>, w: &DVector<f64>) -> f64 {
    v.dot(w)
}

#[test]
fn dot_is_one_binding_with_a_term_per_element() {
    let v = DVector::from_fn(100, |i, _| i as f64 * 0.01);
    let w = DVector::from_fn(100, |i, _| 1.0 - i as f64 * 0.02);
    let stats = one_binding::tape_stats(&v, &w);
    // 200 inputs and one binding with 200 terms.
    assert_eq!(stats.bindings, 201, "{stats:?}");
    let g = one_binding::grad(&v, &w);
    assert_eq!(g.v, w);
    assert_eq!(g.w, v);
}

/// Unsupported operations are compile errors at their span.
#[test]
fn unsupported_operations_are_compile_errors() {
    trybuild::TestCases::new().compile_fail("tests/ui_linalg/nalgebra-*.rs");
}

/// A function written generically over nalgebra's `RealField`, as nalgebra
/// code is: its derivatives are made of its copy for `f64` (simba's
/// constants such as `T::pi()` become the `f64` ones), and it stays generic
/// (so it also runs on deltad's forward dual values, which are `RealField`s).
#[differentiate]
fn generic_energy<T: deltad::nalgebra::RealField + Copy>(
    x: &DVector<T>,
    #[no_grad] a: &DMatrix<T>,
) -> T {
    let ax = a * x;
    x.dot(&ax) * T::from_f64(0.5).unwrap() + (x.norm() / T::pi()).sin()
}

#[test]
fn functions_generic_over_real_field() {
    let x = DVector::from_vec(vec![0.5, -0.3, 1.2]);
    let a = DMatrix::from_row_slice(3, 3, &[2.0, 0.1, 0.0, 0.1, 3.0, 0.2, 0.0, 0.2, 1.5]);
    let g = generic_energy::grad(&x, &a).x;
    // ∇(½ xᵀAx + sin(|x|/π)) = A x + cos(|x|/π) x / (π |x|) for symmetric A.
    let norm = x.norm();
    let pi = std::f64::consts::PI;
    let expected = &a * &x + &x * ((norm / pi).cos() / (pi * norm));
    assert_close(g.as_slice(), expected.as_slice(), "gradient");
    let fd = finite_difference(
        |v| generic_energy(&DVector::from_column_slice(v), &a),
        x.as_slice(),
    );
    assert_close(g.as_slice(), &fd, "finite differences");
    // The same generic function run on forward dual values (nalgebra
    // numbers too): its derivative without the attribute's copy.
    let a_dual = a.map(deltad::DualVec::constant);
    let forward = deltad::gradient_fwd(
        |v| generic_energy(&DVector::from_column_slice(v), &a_dual),
        x.as_slice(),
    );
    assert_close(
        &forward,
        g.as_slice(),
        "forward mode on the generic function",
    );
    let small = generic_energy(&x.map(|v| v as f32), &a.map(|v| v as f32));
    assert!((f64::from(small) - generic_energy(&x, &a)).abs() < 1e-5);
}
