//! Code written generically over num-traits and not annotated, called on
//! deltad's dual values through the closure entry points (`deltad::gradient`,
//! `jvp`, `hvp`, `hessian`): every objective of `argmin_testfunctions` 0.3
//! as the crate ships it, checked against the crate's own hand-written
//! derivatives and Hessians (independent of deltad), at n = 2, 10 and 100
//! where an objective takes a dimension, in f64 and f32.
//!
//! `cross_in_tray` is the one objective left out: it converts its inputs to
//! `f64` (`param[0].into()`) and computes on those, so no dual number can
//! follow it; deltad's dual types do not implement `Into<f64>`, so the call
//! is a compile error rather than a zero derivative
//! (tests/ui/generic_code_leaving_its_number_type.rs).

use argmin_testfunctions as tf;
use deltad::Real;

/// Agreement to `tol · max(1, |expected|)` per entry: the crate's formulas
/// and the dual numbers' arithmetic round differently, nothing more.
#[track_caller]
fn assert_near<P: Into<f64> + Copy>(actual: &[P], expected: &[P], tol: f64, what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: lengths");
    for (i, (&a, &e)) in actual.iter().zip(expected).enumerate() {
        let (a, e): (f64, f64) = (a.into(), e.into());
        assert!(
            (a - e).abs() <= tol * e.abs().max(1.0),
            "{what}[{i}]: deltad {a} vs hand-written {e}"
        );
    }
}

const TOL: f64 = 1e-10;

/// Points away from every objective's kinks (`abs`, `sqrt` at 0).
const POINTS_2D: [[f64; 2]; 3] = [[0.7, -1.3], [1.9, 0.4], [-2.2, 2.7]];

/// Checks a two-dimensional objective (`&[T; 2]`): gradient, Hessian, and
/// jvp/hvp along a direction against them.
macro_rules! check_2d {
    ($($f:ident, $derivative:path, $hessian:path;)*) => {$({
        for p in POINTS_2D {
            let what = format!("{} at {p:?}", stringify!($f));
            let g = deltad::gradient(|x| tf::$f(&[x[0], x[1]]), &p);
            assert_near(&g, &$derivative(&p), TOL, &format!("{what}: gradient"));
            let h = deltad::hessian(|x| tf::$f(&[x[0], x[1]]), &p);
            let expected = $hessian(&p);
            for (row, expected) in h.iter().zip(&expected) {
                assert_near(row, expected, TOL, &format!("{what}: Hessian"));
            }
            let v = [0.3, -0.8];
            let (_, along) = deltad::jvp(|x| tf::$f(&[x[0], x[1]]), &p, &v);
            let expected_along = g[0] * v[0] + g[1] * v[1];
            assert_near(&[along], &[expected_along], TOL, &format!("{what}: jvp"));
            let hv = deltad::hvp(|x| tf::$f(&[x[0], x[1]]), &p, &v);
            let expected_hv: Vec<f64> =
                expected.iter().map(|r| r[0] * v[0] + r[1] * v[1]).collect();
            assert_near(&hv, &expected_hv, TOL, &format!("{what}: hvp"));
        }
    })*};
}

#[test]
fn two_dimensional_objectives_match_their_hand_written_derivatives() {
    check_2d! {
        beale, tf::beale_derivative, tf::beale_hessian;
        booth, tf::booth_derivative, tf::booth_hessian;
        bukin_n6, tf::bukin_n6_derivative, tf::bukin_n6_hessian;
        easom, tf::easom_derivative, tf::easom_hessian;
        eggholder, tf::eggholder_derivative, tf::eggholder_hessian;
        goldsteinprice, tf::goldsteinprice_derivative, tf::goldsteinprice_hessian;
        himmelblau, tf::himmelblau_derivative, tf::himmelblau_hessian;
        holder_table, tf::holder_table_derivative, tf::holder_table_hessian;
        levy_n13, tf::levy_n13_derivative, tf::levy_n13_hessian;
        matyas, tf::matyas_derivative, tf::matyas_hessian;
        mccormick, tf::mccormick_derivative, tf::mccormick_hessian;
        picheny, tf::picheny_derivative, tf::picheny_hessian;
        schaffer_n2, tf::schaffer_n2_derivative, tf::schaffer_n2_hessian;
        schaffer_n4, tf::schaffer_n4_derivative, tf::schaffer_n4_hessian;
        threehumpcamel, tf::threehumpcamel_derivative, tf::threehumpcamel_hessian;
    }
}

/// A point in n dimensions, inside every objective's usual domain.
fn point(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| 0.6 * (1.3 * i as f64 + 0.4).sin() + 0.1)
        .collect()
}

#[track_caller]
fn check_rows(actual: &[Vec<f64>], expected: &[Vec<f64>], what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: rows");
    for (row, expected) in actual.iter().zip(expected) {
        assert_near(row, expected, TOL, what);
    }
}

#[test]
fn objectives_of_any_dimension_match_their_hand_written_derivatives() {
    for n in [2, 10, 100] {
        let p = point(n);
        let what = |f: &str| format!("{f}, n = {n}");
        macro_rules! check {
            ($name:literal, $f:expr, $derivative:expr, $hessian:expr) => {{
                let g = deltad::gradient($f, &p);
                assert_near(&g, &$derivative(&p), TOL, &what($name));
                check_rows(&deltad::hessian($f, &p), &$hessian(&p), &what($name));
            }};
        }
        check!(
            "ackley",
            |x| tf::ackley(x),
            tf::ackley_derivative,
            tf::ackley_hessian
        );
        check!(
            "levy",
            |x| tf::levy(x),
            tf::levy_derivative,
            tf::levy_hessian
        );
        check!(
            "rastrigin",
            |x| tf::rastrigin(x),
            tf::rastrigin_derivative,
            tf::rastrigin_hessian
        );
        check!(
            "rosenbrock",
            |x| tf::rosenbrock(x),
            tf::rosenbrock_derivative,
            tf::rosenbrock_hessian
        );
        check!(
            "sphere",
            |x| tf::sphere(x),
            tf::sphere_derivative,
            tf::sphere_hessian
        );
        check!(
            "styblinski_tang",
            |x| tf::styblinski_tang(x),
            tf::styblinski_tang_derivative,
            tf::styblinski_tang_hessian
        );
        check!(
            "zero",
            |x| tf::zero(x),
            tf::zero_derivative,
            tf::zero_hessian
        );
        // The variants with parameters, as constants of the closure.
        check!(
            "ackley_abc",
            |x| tf::ackley_abc(
                x,
                Real::from_prim(18.0),
                Real::from_prim(0.3),
                Real::from_prim(5.0)
            ),
            |p: &[f64]| tf::ackley_abc_derivative(p, 18.0, 0.3, 5.0),
            |p: &[f64]| tf::ackley_abc_hessian(p, 18.0, 0.3, 5.0)
        );
        check!(
            "rastrigin_a",
            |x| tf::rastrigin_a(x, Real::from_prim(7.5)),
            |p: &[f64]| tf::rastrigin_a_derivative(p, 7.5),
            |p: &[f64]| tf::rastrigin_a_hessian(p, 7.5)
        );
    }
}

/// `rosenbrock_ab_hessian` is right only for `a = 1`; with `a = 1.5` the
/// Hessian is checked against central differences of the crate's gradient
/// (h = 1e-5: truncation ~h²·|f'''| ≈ 1e-7 here, rounding ~1e-16·|f'|/h).
#[test]
fn rosenbrock_with_parameters() {
    for n in [2, 10, 100] {
        let p = point(n);
        let (a, b) = (1.5, 80.0);
        let g = deltad::gradient(
            |x| tf::rosenbrock_ab(x, Real::from_prim(a), Real::from_prim(b)),
            &p,
        );
        assert_near(&g, &tf::rosenbrock_ab_derivative(&p, a, b), TOL, "gradient");
        let h = deltad::hessian(
            |x| tf::rosenbrock_ab(x, Real::from_prim(a), Real::from_prim(b)),
            &p,
        );
        let step = 1e-5;
        for (i, row) in h.iter().enumerate() {
            let shifted = |s: f64| {
                let mut q = p.clone();
                q[i] += s;
                tf::rosenbrock_ab_derivative(&q, a, b)
            };
            let fd: Vec<f64> = shifted(step)
                .iter()
                .zip(shifted(-step))
                .map(|(u, d)| (u - d) / (2.0 * step))
                .collect();
            assert_near(row, &fd, 1e-5, &format!("Hessian row {i}, n = {n}"));
        }
        // With a = 1 the crate's Hessian holds: exact agreement to rounding.
        let h1 = deltad::hessian(
            |x| tf::rosenbrock_ab(x, Real::from_prim(1.0), Real::from_prim(b)),
            &p,
        );
        check_rows(&h1, &tf::rosenbrock_ab_hessian(&p, 1.0, b), "a = 1");
    }
}

/// The same objectives in f32, against the crate's f32 derivatives.
#[test]
fn single_precision() {
    let p: Vec<f32> = point(10).iter().map(|&v| v as f32).collect();
    let tol = 1e-4;
    let g = deltad::gradient(|x| tf::rosenbrock(x), &p);
    assert_near(&g, &tf::rosenbrock_derivative(&p), tol, "rosenbrock");
    let g = deltad::gradient(|x| tf::ackley(x), &p);
    assert_near(&g, &tf::ackley_derivative(&p), tol, "ackley");
    let h = deltad::hessian(|x| tf::styblinski_tang(x), &p);
    for (row, expected) in h.iter().zip(tf::styblinski_tang_hessian(&p)) {
        assert_near(row, &expected, tol, "styblinski_tang Hessian");
    }
    let q = [0.7f32, -1.3];
    let g = deltad::gradient(|x| tf::himmelblau(&[x[0], x[1]]), &q);
    assert_near(&g, &tf::himmelblau_derivative(&q), tol, "himmelblau");
}
