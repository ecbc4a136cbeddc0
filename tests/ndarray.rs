//! ndarray's `Array1` and `Array2` as differentiated parameters and results
//! (feature `ndarray`).
//!
//! Gradients are checked against central finite differences of the plain
//! function (`common::check_gradient`: step 1e-6·max(1, |x|), tolerance
//! 1e-6·max(1, |g|); the module's doc derives the error budget: truncation
//! and rounding errors near 1e-10 for these O(1)–O(10) functions) and,
//! where short, against hand-written derivatives.
#![cfg(feature = "ndarray")]

mod common;
use common::*;
use deltad::differentiate;
use deltad::ndarray::{array, s, Array1, Array2, ArrayView1, ArrayView2, NewAxis};

fn flat<'a>(parts: impl IntoIterator<Item = &'a [f64]>) -> Vec<f64> {
    parts.into_iter().flatten().copied().collect()
}

#[differentiate]
fn vector_ops(a: &Array1<f64>, b: &Array1<f64>) -> f64 {
    let c = a * b + 2.0 * a - b / 4.0;
    let s = a.iter().map(|x| x.exp()).sum::<f64>();
    a.dot(b) + c.sum() * a[1] + s + (-&c).dot(&c) + a.mean().unwrap()
}

#[test]
fn array1_dot_sum_elementwise_indexing_and_iteration() {
    let a = array![0.3, -1.2, 0.8];
    let b = array![1.5, 0.7, -0.4];
    let (value, g) = vector_ops::value_and_grad(&a, &b);
    assert!((value - vector_ops(&a, &b)).abs() <= 1e-12 * value.abs().max(1.0));
    let (ga, gb): (Array1<f64>, Array1<f64>) = (g.a, g.b);
    let f = |x: &[f64]| {
        vector_ops(
            &Array1::from(x[..3].to_vec()),
            &Array1::from(x[3..].to_vec()),
        )
    };
    let x = flat([a.as_slice().unwrap(), b.as_slice().unwrap()]);
    let grad = flat([ga.as_slice().unwrap(), gb.as_slice().unwrap()]);
    check_gradient(f, &x, &grad, "vector_ops");
}

/// a·a / 2 + a·b: ∇_a = a + b, ∇_b = a, exactly.
#[differentiate]
fn quadratic(a: Array1<f64>, b: &Array1<f64>) -> f64 {
    0.5 * a.dot(&a) + a.dot(b)
}

#[test]
fn by_value_parameters_and_hand_written_derivative() {
    let a = array![1.0, -2.0, 0.5, 4.0];
    let b = array![0.25, 3.0, -1.0, 2.0];
    let g = quadratic::grad(a.clone(), &b);
    assert_eq!(g.a, &a + &b);
    assert_eq!(g.b, a);
}

#[differentiate]
fn matrix_ops(m: &Array2<f64>, v: &Array1<f64>) -> f64 {
    let y = m.dot(v);
    let z = v.dot(m);
    let p = m.dot(m);
    let q = &p * m - m.t() + 0.5;
    y.dot(&z) + m[[0, 1]] * y.sum() + q.sum() + p[(1, 0)] + (m * 2.0).dot(&y).sum()
}

#[test]
fn array2_products_transpose_and_element_access() {
    let m = array![[0.5, -1.0, 2.0], [1.5, 0.2, -0.7], [0.3, 0.9, 1.1]];
    let v = array![0.4, -0.6, 1.3];
    let (value, g) = matrix_ops::value_and_grad(&m, &v);
    assert!((value - matrix_ops(&m, &v)).abs() <= 1e-12 * value.abs().max(1.0));
    let (gm, gv): (Array2<f64>, Array1<f64>) = (g.m, g.v);
    assert_eq!(gm.dim(), (3, 3));
    let f = |x: &[f64]| {
        let m = Array2::from_shape_vec((3, 3), x[..9].to_vec()).unwrap();
        matrix_ops(&m, &Array1::from(x[9..].to_vec()))
    };
    // Both in row-major (logical) order.
    let x = flat([m.as_slice().unwrap(), v.as_slice().unwrap()]);
    let grad = flat([gm.as_slice().unwrap(), gv.as_slice().unwrap()]);
    check_gradient(f, &x, &grad, "matrix_ops");
    matrix_ops::check_derivatives(&m, &v).assert_within(1e-6);
}

/// Least squares with constant data: `x.dot(&w)` has a constant receiver,
/// and views are fine as constant operands.
#[differentiate]
fn least_squares(w: &Array1<f64>, #[no_grad] x: &Array2<f64>, #[no_grad] y: &Array1<f64>) -> f64 {
    let view: ArrayView1<f64> = y.view();
    let r = x.dot(w) - view;
    r.dot(&r) / 2.0
}

#[test]
fn constant_operands_mix_with_dual_ones() {
    let x = array![[1.0, 0.5], [2.0, -1.0], [0.0, 1.0], [-1.5, 0.3]];
    let y = array![1.0, -0.5, 2.0, 0.25];
    let w = array![0.2, -0.4];
    let g = least_squares::grad(&w, &x, &y);
    // ∇ = Xᵀ (X w - y).
    let expected = x.t().dot(&(x.dot(&w) - &y));
    assert_close(
        g.w.as_slice().unwrap(),
        expected.as_slice().unwrap(),
        "least squares",
    );
}

/// Rectangular matrix, loop over elements: the gradient is shaped like the
/// parameter.
#[differentiate]
fn rectangular(m: &Array2<f64>) -> f64 {
    let mut s = 0.0;
    for i in 0..m.nrows() {
        for j in 0..m.ncols() {
            s += (i + 2 * j) as f64 * m[[i, j]] * m[[i, j]];
        }
    }
    s
}

#[test]
fn rectangular_array_gradient_is_shaped_like_the_array() {
    let m = array![[1.0, 2.0, 3.0], [-1.0, 0.5, 0.25]];
    let g = rectangular::grad(&m);
    let expected = Array2::from_shape_fn((2, 3), |(i, j)| 2.0 * (i + 2 * j) as f64 * m[[i, j]]);
    assert_eq!(g.m, expected);
}

/// An array result: `jacobian`, `vjp` and `jvp` through `Differentiable`.
#[differentiate]
fn affine(m: &Array2<f64>, v: &Array1<f64>) -> Array1<f64> {
    let mut y = m.dot(v);
    y += v;
    y * 2.0
}

#[test]
fn array_results_jacobian_vjp_and_jvp() {
    let m = array![[1.0, 2.0], [-0.5, 3.0]];
    let v = array![0.7, -1.1];
    let (value, rows) = affine::jacobian(&m, &v);
    assert_eq!(value, affine(&m, &v));
    for (i, row) in rows.iter().enumerate() {
        let mut expected_v = 2.0 * &m.row(i);
        expected_v[i] += 2.0;
        assert_eq!(row.v, expected_v);
        let expected_m =
            Array2::from_shape_fn((2, 2), |(k, j)| if k == i { 2.0 * v[j] } else { 0.0 });
        assert_eq!(row.m, expected_m);
    }
    let seed = array![0.5, -2.0];
    let (_, g) = affine::vjp(&m, &v, &seed);
    let expected = 2.0 * (m.t().dot(&seed) + &seed);
    assert_close(g.v.as_slice().unwrap(), expected.as_slice().unwrap(), "vjp");
    let tangent = affine::Grad {
        m: array![[0.1, 0.0], [-0.3, 0.2]],
        v: array![1.0, 0.5],
    };
    let (_, derivative) = affine::jvp(&m, &v, &tangent);
    // <seed, J t> = <Jᵀ seed, t>.
    let left = seed.dot(&derivative);
    let right = (&g.m * &tangent.m).sum() + g.v.dot(&tangent.v);
    assert!((left - right).abs() <= 1e-12, "{left} vs {right}");
}

/// ½ aᵀ K a with constant K, plus Σ exp(a_i): H = K + diag(exp(a)).
#[differentiate]
fn energy(a: &Array1<f64>, #[no_grad] k: &Array2<f64>) -> f64 {
    0.5 * a.dot(&k.dot(a)) + a.map(|x| x.exp()).sum()
}

#[test]
fn hessian_by_forward_over_reverse() {
    let k = array![[2.0, 0.5, 0.0], [0.5, 1.0, -0.3], [0.0, -0.3, 3.0]];
    let a = array![0.6, -0.2, 1.0];
    let rows = energy::hessian(&a, &k);
    for (i, row) in rows.iter().enumerate() {
        let mut expected = k.row(i).to_owned();
        expected[i] += a[i].exp();
        assert_close(
            row.a.as_slice().unwrap(),
            expected.as_slice().unwrap(),
            "Hessian row",
        );
    }
}

/// A matrix-vector product records one binding per row.
#[differentiate]
fn matvec_sum(m: &Array2<f64>, v: &Array1<f64>) -> f64 {
    m.dot(v).sum()
}

#[test]
fn matrix_vector_product_is_one_binding_per_row() {
    let m = Array2::from_shape_fn((10, 20), |(i, j)| (i as f64 - j as f64) * 0.1);
    let v = Array1::from_shape_fn(20, |j| j as f64 * 0.05);
    let stats = matvec_sum::tape_stats(&m, &v);
    // 220 inputs, 10 rows (40 terms each), one sum (10 terms).
    assert_eq!(stats.bindings, 220 + 10 + 1, "{stats:?}");
    assert_eq!(stats.terms, 10 * 40 + 10, "{stats:?}");
    let g = matvec_sum::grad(&m, &v);
    // ∇_v = the column sums (summed in another order: rounding differs).
    let column_sums = m.sum_axis(deltad::ndarray::Axis(0));
    assert_close(
        g.v.as_slice().unwrap(),
        column_sums.as_slice().unwrap(),
        "∇v",
    );
    assert_eq!(g.m, Array2::from_shape_fn((10, 20), |(_, j)| v[j]));
}

/// Unsupported operations are compile errors at their span.
// ----- Element-wise maps, views, slices and reshaping -------------------------
// linfa-logistic's loss as it is written: `x.dot(w) * y`, then
// `mapv_inplace` with a differentiated function given by name.

#[differentiate]
fn log_logistic(x: f64) -> f64 {
    if x > 0.0 {
        -(1.0 + (-x).exp()).ln()
    } else {
        x - (1.0 + x.exp()).ln()
    }
}

#[differentiate]
fn logistic_loss(
    w: &Array1<f64>,
    #[no_grad] x: &Array2<f64>,
    #[no_grad] y: &Array1<f64>,
    alpha: f64,
) -> f64 {
    let mut yz = x.dot(w) * y;
    yz.mapv_inplace(log_logistic);
    -yz.sum() + 0.5 * alpha * w.dot(w)
}

/// The same loss taking a view of the parameters, through a column matrix
/// and back (`into_shape_with_order`).
#[differentiate]
fn logistic_loss_of_view<'a>(
    w: ArrayView1<'a, f64>,
    #[no_grad] x: &Array2<f64>,
    #[no_grad] y: &Array1<f64>,
    alpha: f64,
) -> f64 {
    let column = w.to_owned().into_shape_with_order((w.len(), 1)).unwrap();
    let z = x.dot(&column).into_shape_with_order(y.len()).unwrap();
    let mut yz = z * y;
    yz.mapv_inplace(log_logistic);
    -yz.sum() + 0.5 * alpha * w.dot(&w)
}

#[test]
fn logistic_loss_as_linfa_writes_it() {
    let x = array![[1.0, 2.0], [0.5, -1.0], [2.0, 0.0], [-0.3, 0.8]];
    let y = array![1.0, -1.0, 1.0, -1.0];
    let (w, alpha) = (array![0.5, -0.25], 0.1);
    let g = logistic_loss::grad(&w, &x, &y, alpha);
    // linfa's hand-written gradient: Xᵀ((σ(y ⊙ Xw) - 1) ⊙ y) + α w, and
    // ∂/∂α = ½ w·w.
    let sigmoid = |v: f64| 1.0 / (1.0 + (-v).exp());
    let yz = x.dot(&w) * &y;
    let weights = yz.mapv(|v| sigmoid(v) - 1.0) * &y;
    let expected = x.t().dot(&weights) + alpha * &w;
    assert_close(
        g.w.as_slice().unwrap(),
        expected.as_slice().unwrap(),
        "∂/∂w",
    );
    assert_close(&[g.alpha], &[0.5 * w.dot(&w)], "∂/∂α");
    let g = logistic_loss_of_view::grad(w.view(), &x, &y, alpha);
    assert_close(
        g.w.as_slice().unwrap(),
        expected.as_slice().unwrap(),
        "view: ∂/∂w",
    );
    assert_close(&[g.alpha], &[0.5 * w.dot(&w)], "view: ∂/∂α");
}

#[differentiate]
fn element_maps(w: &Array1<f64>, m: &Array2<f64>, k: f64) -> f64 {
    let e = w.mapv(|v| (k * v).exp());
    let f = m.clone().mapv_into(f64::sin);
    let mut g = m.mapv(|v| v * v);
    g.mapv_inplace(|v| v + k);
    let view = w.view();
    e.sum() + f.sum() * g.sum() + view.dot(&view)
}

#[test]
fn mapv_mapv_into_mapv_inplace_and_view() {
    let (w, m, k) = (
        array![0.5, -0.25, 1.0],
        array![[0.3, -1.2], [0.8, 0.1]],
        0.7,
    );
    let g = element_maps::grad(&w, &m, k);
    let point: Vec<f64> = w.iter().chain(m.iter()).copied().chain([k]).collect();
    let f = |p: &[f64]| {
        let w = Array1::from_vec(p[..3].to_vec());
        let m = Array2::from_shape_vec((2, 2), p[3..7].to_vec()).unwrap();
        element_maps(&w, &m, p[7])
    };
    let got: Vec<f64> = g.w.iter().chain(g.m.iter()).copied().chain([g.k]).collect();
    check_gradient(f, &point, &got, "element maps");
    // By hand: ∂/∂w_i = k e^{k w_i} + 2 w_i.
    let by_hand: Vec<f64> = w.iter().map(|&v| k * (k * v).exp() + 2.0 * v).collect();
    assert_close(g.w.as_slice().unwrap(), &by_hand, "∂/∂w");
}

#[differentiate]
fn slices_and_shapes(w: &Array1<f64>, m: &Array2<f64>) -> f64 {
    let head = w.slice(s![..2]);
    let tail = w.slice(s![2..]);
    let reversed = w.slice(s![..;-2]);
    let row = m.slice(s![1, ..]);
    let column = m.slice(s![.., -1isize]);
    let block = m.slice(s![.., 1..3]);
    let square = w.clone().into_shape_with_order((2, 2)).unwrap();
    let flat = m.clone().into_shape_with_order(6).unwrap();
    let lifted = w.slice(s![NewAxis, 1..3]);
    lifted[[0, 0]] * lifted[[0, 1]] * 3.0
        + head.dot(&tail)
        + reversed[0] * reversed[1]
        + row.sum() * block.sum()
        + column.dot(&column)
        + square[[1, 0]] * square[[0, 1]]
        + flat[4] * flat[5]
}

#[test]
fn slices_and_reshaping_of_differentiated_arrays() {
    let w = array![0.5, -0.25, 2.0, 1.5];
    let m = array![[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]];
    let g = slices_and_shapes::grad(&w, &m);
    let point: Vec<f64> = w.iter().chain(m.iter()).copied().collect();
    let f = |p: &[f64]| {
        let w = Array1::from_vec(p[..4].to_vec());
        let m = Array2::from_shape_vec((2, 3), p[4..].to_vec()).unwrap();
        slices_and_shapes(&w, &m)
    };
    let got: Vec<f64> = g.w.iter().chain(g.m.iter()).copied().collect();
    check_gradient(f, &point, &got, "slices");
    // By hand for w: head·tail = w0 w2 + w1 w3; `..;-2` takes w3, w1;
    // the square's [1, 0] and [0, 1] are w2 and w1; `NewAxis, 1..3` holds
    // w1, w2 in a 1×2 matrix.
    let expected_w = [
        w[2],
        w[3] + w[3] + w[2] + 3.0 * w[2],
        w[0] + w[1] + 3.0 * w[1],
        w[1] + w[1],
    ];
    assert_close(g.w.as_slice().unwrap(), &expected_w, "∂/∂w");
}

// Differentiated view parameters: the gradient field is the owned array.
#[differentiate]
fn viewed<'a>(w: ArrayView1<'a, f64>, m: ArrayView2<'a, f64>, k: f64) -> f64 {
    let v = m.dot(&w);
    v.dot(&v) * k + w.sum()
}

#[differentiate]
fn passes_views(w: &Array1<f64>, #[no_grad] m: &Array2<f64>) -> f64 {
    viewed(w.view(), m.view(), 2.0)
}

#[test]
fn differentiated_view_parameters() {
    let w = array![0.5, -0.25];
    let m = array![[1.0, 2.0], [0.5, -1.0], [2.0, 0.0]];
    let k = 1.5;
    let g = viewed::grad(w.view(), m.view(), k);
    // v = M w: ∂/∂w = 2k Mᵀv + 1, ∂/∂M = 2k v wᵀ, ∂/∂k = v·v.
    let v = m.dot(&w);
    let expected_w = 2.0 * k * m.t().dot(&v) + 1.0;
    assert_close(
        g.w.as_slice().unwrap(),
        expected_w.as_slice().unwrap(),
        "∂/∂w",
    );
    let expected_m = Array2::from_shape_fn((3, 2), |(i, j)| 2.0 * k * v[i] * w[j]);
    assert_close(
        g.m.as_slice().unwrap(),
        expected_m.as_slice().unwrap(),
        "∂/∂M",
    );
    assert_close(&[g.k], &[v.dot(&v)], "∂/∂k");
    viewed::check_derivatives(w.view(), m.view(), k).assert_within(1e-6);
    // Through a caller passing views of its own arrays.
    let g = passes_views::grad(&w, &m);
    let expected = 4.0 * m.t().dot(&v) + 1.0;
    assert_close(
        g.w.as_slice().unwrap(),
        expected.as_slice().unwrap(),
        "caller",
    );
}

#[test]
fn unsupported_operations_are_compile_errors() {
    trybuild::TestCases::new().compile_fail("tests/ui_linalg/ndarray-*.rs");
}
