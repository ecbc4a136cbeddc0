//! Code written generically over num-traits and not annotated, called on
//! deltad's dual values through the closure entry points (`deltad::gradient`,
//! `jvp`, `hvp`, `hessian`) and from differentiated functions through
//! `deltad::generic!`: every objective of `argmin_testfunctions` 0.3 as the
//! crate ships it, checked against the crate's own hand-written derivatives
//! and Hessians (independent of deltad), at n = 2, 10 and 100 where an
//! objective takes a dimension, in f64 and f32.
//!
//! `cross_in_tray` is the one objective left out: it converts its inputs to
//! `f64` (`param[0].into()`) and computes on those, so no dual number can
//! follow it; deltad's dual types do not implement `Into<f64>`, so the call
//! is a compile error rather than a zero derivative
//! (tests/ui/generic_code_leaving_its_number_type.rs).

use argmin_testfunctions as tf;

#[macro_use]
#[path = "common/objectives.rs"]
mod objectives;
use deltad::Real;
use objectives::{assert_near, hessian_by_differences, point, POINTS_2D};

const TOL: f64 = 1e-10;

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
    objectives_2d!(check_2d);
}

#[track_caller]
fn check_rows(actual: &[Vec<f64>], expected: &[Vec<f64>], what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: rows");
    for (row, expected) in actual.iter().zip(expected) {
        assert_near(row, expected, TOL, what);
    }
}

/// A constant of the closure's number type (on any tape).
fn c<'t, S: deltad::Scalar>(value: S::Prim) -> Real<'t, S> {
    Real::from_prim(value)
}

#[test]
fn objectives_of_any_dimension_match_their_hand_written_derivatives() {
    for n in [2, 10, 100] {
        let p = point(n);
        let what = |f: &str| format!("{f}, n = {n}");
        macro_rules! check {
            ($($f:ident, $derivative:path, $hessian:path;)*) => {$({
                let g = deltad::gradient(|x| tf::$f(x), &p);
                assert_near(&g, &$derivative(&p), TOL, &what(stringify!($f)));
                let h = deltad::hessian(|x| tf::$f(x), &p);
                check_rows(&h, &$hessian(&p), &what(stringify!($f)));
            })*};
        }
        check! {
            ackley, tf::ackley_derivative, tf::ackley_hessian;
            levy, tf::levy_derivative, tf::levy_hessian;
            rastrigin, tf::rastrigin_derivative, tf::rastrigin_hessian;
            rosenbrock, tf::rosenbrock_derivative, tf::rosenbrock_hessian;
            sphere, tf::sphere_derivative, tf::sphere_hessian;
            styblinski_tang, tf::styblinski_tang_derivative, tf::styblinski_tang_hessian;
            zero, tf::zero_derivative, tf::zero_hessian;
        }
        // The variants with parameters, as constants of the closure.
        let g = deltad::gradient(|x| tf::ackley_abc(x, c(18.0), c(0.3), c(5.0)), &p);
        assert_near(
            &g,
            &tf::ackley_abc_derivative(&p, 18.0, 0.3, 5.0),
            TOL,
            &what("ackley_abc"),
        );
        let h = deltad::hessian(|x| tf::ackley_abc(x, c(18.0), c(0.3), c(5.0)), &p);
        check_rows(
            &h,
            &tf::ackley_abc_hessian(&p, 18.0, 0.3, 5.0),
            &what("ackley_abc"),
        );
        let g = deltad::gradient(|x| tf::rastrigin_a(x, c(7.5)), &p);
        assert_near(
            &g,
            &tf::rastrigin_a_derivative(&p, 7.5),
            TOL,
            &what("rastrigin_a"),
        );
        let h = deltad::hessian(|x| tf::rastrigin_a(x, c(7.5)), &p);
        check_rows(&h, &tf::rastrigin_a_hessian(&p, 7.5), &what("rastrigin_a"));
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
        let fd = hessian_by_differences(|y| tf::rosenbrock_ab_derivative(y, a, b), &p, 1e-5);
        for (i, (row, fd)) in h.iter().zip(&fd).enumerate() {
            assert_near(row, fd, 1e-5, &format!("Hessian row {i}, n = {n}"));
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

// ---- the same, called from differentiated code through `deltad::generic!` ----

/// A differentiated function per two-dimensional objective, calling the
/// crate's function through `deltad::generic!` (on the tape's values) and
/// through `deltad::generic_fwd!` (in forward mode, on chunks of dual
/// values).
macro_rules! through_generic_2d {
    ($($f:ident, $derivative:path, $hessian:path;)*) => {
        mod via_2d {
            use super::*;
            $(
                #[deltad::differentiate]
                pub fn $f(p: &[f64; 2]) -> f64 {
                    deltad::generic!(tf::$f(p))
                }
            )*
        }

        mod via_2d_fwd {
            use super::*;
            $(
                #[deltad::differentiate]
                pub fn $f(p: &[f64; 2]) -> f64 {
                    deltad::generic_fwd!(tf::$f(p))
                }
            )*
        }

        #[test]
        fn two_dimensional_objectives_called_from_differentiated_code() {
            macro_rules! check {
                ($module:ident, $how:literal) => {$(
                    for p in POINTS_2D {
                        let what = format!("{} at {p:?} through {}", stringify!($f), $how);
                        let (value, g) = $module::$f::value_and_grad(&p);
                        assert_eq!(value, tf::$f(&p), "{what}: value");
                        assert_near(&g.p, &$derivative(&p), TOL, &format!("{what}: gradient"));
                        for (row, expected) in $module::$f::hessian(&p).iter().zip($hessian(&p)) {
                            assert_near(&row.p, &expected, TOL, &format!("{what}: Hessian"));
                        }
                    }
                )*};
            }
            check!(via_2d, "generic!");
            check!(via_2d_fwd, "generic_fwd!");
        }
    };
}

objectives_2d!(through_generic_2d);

/// Objectives of any dimension inside one differentiated function, with a
/// differentiated parameter and constants passed to them.
#[deltad::differentiate]
fn mixture(x: &[f64], a: f64) -> f64 {
    let shaped = deltad::generic!(tf::rosenbrock_ab(x, a, 100.0));
    let mut total = shaped + 0.5 * deltad::generic!(tf::ackley(x));
    total += deltad::generic!(tf::levy(x)) + deltad::generic!(tf::rastrigin_a(x, 7.5));
    total += deltad::generic!(tf::sphere(x)) * deltad::generic!(tf::styblinski_tang(x));
    total + deltad::generic!(tf::zero(x))
}

#[test]
fn objectives_of_any_dimension_called_from_differentiated_code() {
    for n in [2, 10, 100] {
        let x = point(n);
        let a = 1.0;
        let (sphere, tang) = (tf::sphere(&x), tf::styblinski_tang(&x));
        let (d_sphere, d_tang) = (
            tf::sphere_derivative(&x),
            tf::styblinski_tang_derivative(&x),
        );
        let parts = [
            tf::rosenbrock_ab_derivative(&x, a, 100.0),
            tf::ackley_derivative(&x).iter().map(|d| 0.5 * d).collect(),
            tf::levy_derivative(&x),
            tf::rastrigin_a_derivative(&x, 7.5),
            d_sphere.iter().map(|d| d * tang).collect(),
            d_tang.iter().map(|d| d * sphere).collect(),
        ];
        let expected: Vec<f64> = (0..n).map(|i| parts.iter().map(|p| p[i]).sum()).collect();
        let g = mixture::grad(&x, a);
        assert_near(&g.x, &expected, TOL, &format!("gradient, n = {n}"));
        let da: f64 = (0..n - 1).map(|i| 2.0 * (a - x[i])).sum();
        assert_near(&[g.a], &[da], TOL, &format!("derivative in a, n = {n}"));
        let tangent = mixture::Grad {
            x: (0..n).map(|i| (0.7 * i as f64).cos()).collect(),
            a: 0.3,
        };
        let (_, along) = mixture::jvp(&x, a, &tangent);
        let dot: f64 = g.x.iter().zip(&tangent.x).map(|(g, t)| g * t).sum::<f64>() + g.a * 0.3;
        assert_near(&[along], &[dot], TOL, &format!("jvp, n = {n}"));
        // Second order (on dual numbers): the Hessian's x block, with a = 1
        // where the crate's `rosenbrock_ab_hessian` holds.
        let h = mixture::hessian(&x, a);
        let blocks = [
            tf::rosenbrock_ab_hessian(&x, a, 100.0),
            tf::ackley_hessian(&x),
            tf::levy_hessian(&x),
            tf::rastrigin_a_hessian(&x, 7.5),
            tf::sphere_hessian(&x),
            tf::styblinski_tang_hessian(&x),
        ];
        for i in 0..n {
            let row: Vec<f64> = (0..n)
                .map(|j| {
                    blocks[0][i][j]
                        + 0.5 * blocks[1][i][j]
                        + blocks[2][i][j]
                        + blocks[3][i][j]
                        + blocks[4][i][j] * tang
                        + d_sphere[i] * d_tang[j]
                        + d_tang[i] * d_sphere[j]
                        + blocks[5][i][j] * sphere
                })
                .collect();
            assert_near(&h[i].x, &row, TOL, &format!("Hessian row {i}, n = {n}"));
        }
    }
}

/// A library's generic loss over parameters and data: the data (constant)
/// and a constant scale go to it as dual constants of the same type.
fn squared_error<T: num_traits::Float>(w: &[T], xs: &[T], ys: &[T], scale: T) -> T {
    xs.iter().zip(ys).fold(T::zero(), |total, (&x, &y)| {
        let r = w[0] + w[1] * x - y;
        total + scale * r * r
    })
}

#[deltad::differentiate]
#[allow(clippy::ptr_arg)] // a `&Vec` of constants is passed on as such
fn fit(w: &[f64], #[no_grad] xs: &[f64], #[no_grad] ys: &Vec<f64>, points: usize) -> f64 {
    deltad::generic!(squared_error(w, &xs[..points], ys, 0.5)) / points as f64
}

#[test]
fn constant_data_passed_to_generic_code() {
    let xs = [0.0, 1.0, 2.0, 3.0];
    let ys = vec![1.0, 2.5, 3.9, 6.1];
    let w = [0.8, 1.6];
    let g = fit::grad(&w, &xs, &ys, 4);
    // ∂/∂w of (1/n) Σ ½ r², r = w0 + w1 x - y.
    let r: Vec<f64> = xs
        .iter()
        .zip(&ys)
        .map(|(x, y)| w[0] + w[1] * x - y)
        .collect();
    let expected = [
        r.iter().sum::<f64>() / 4.0,
        r.iter().zip(&xs).map(|(r, x)| r * x).sum::<f64>() / 4.0,
    ];
    assert_near(&g.w, &expected, TOL, "gradient");
}

/// A library's generic function returning a buffer (here the crate's own
/// hand-written gradient), its result annotated: the gradient of ‖∇f‖²,
/// which is 2 H ∇f with the crate's Hessian.
#[deltad::differentiate]
fn gradient_norm_squared(x: &[f64]) -> f64 {
    let g: Vec<f64> = deltad::generic!(tf::rosenbrock_derivative(x));
    g.iter().map(|v| v * v).sum::<f64>()
}

#[test]
fn buffers_returned_by_generic_code() {
    for n in [2, 10] {
        let x = point(n);
        let (g, h) = (tf::rosenbrock_derivative(&x), tf::rosenbrock_hessian(&x));
        let expected: Vec<f64> = (0..n)
            .map(|i| 2.0 * (0..n).map(|j| h[i][j] * g[j]).sum::<f64>())
            .collect();
        assert_near(&gradient_norm_squared::grad(&x).x, &expected, TOL, "2 H g");
    }
}
