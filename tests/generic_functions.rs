//! `#[differentiate]` on functions generic over their number type, written
//! as num-traits code is (bounds inline and in `where` clauses,
//! `T::from_f64(..).unwrap()`, `T::from(..)`, `T::one()`, `T::PI()`,
//! iterator sums, loops): the 26 objectives of `argmin_testfunctions` 0.3,
//! written here from their formulas, their derivatives (which take `f64`)
//! checked against the crate's hand-written `*_derivative` and `*_hessian`
//! functions (an independent implementation), and the functions themselves
//! still generic (called on `f32`).
#![allow(clippy::all)]

use argmin_testfunctions as tf;

#[macro_use]
#[path = "common/objectives.rs"]
mod objectives;
use deltad::differentiate;
use num_traits::{Float, FloatConst, FromPrimitive};
use objectives::{hessian_by_differences, point, POINTS_2D};
use std::iter::Sum;

/// Agreement with the crate's hand-written derivatives to rounding.
#[track_caller]
fn assert_near(actual: &[f64], expected: &[f64], what: &str) {
    objectives::assert_near(actual, expected, 1e-10, what);
}

// ---- two-dimensional objectives ------------------------------------------

#[differentiate]
fn beale<T: Float + FromPrimitive>(p: &[T; 2]) -> T {
    let (x, y) = (p[0], p[1]);
    let c = |v: f64| T::from_f64(v).unwrap();
    (c(1.5) - x + x * y).powi(2)
        + (c(2.25) - x + x * y * y).powi(2)
        + (c(2.625) - x + x * y.powi(3)).powi(2)
}

#[differentiate]
fn booth<T>(p: &[T; 2]) -> T
where
    T: Float + FromPrimitive,
{
    let two = T::from_f64(2.0).unwrap();
    (p[0] + two * p[1] - T::from_f64(7.0).unwrap()).powi(2)
        + (two * p[0] + p[1] - T::from_f64(5.0).unwrap()).powi(2)
}

#[differentiate]
fn bukin_n6<T: Float + FromPrimitive>(p: &[T; 2]) -> T {
    let hundredth = T::from_f64(0.01).unwrap();
    T::from_f64(100.0).unwrap() * (p[1] - hundredth * p[0] * p[0]).abs().sqrt()
        + hundredth * (p[0] + T::from_f64(10.0).unwrap()).abs()
}

#[differentiate]
fn cross_in_tray<T: Float + FromPrimitive + FloatConst>(p: &[T; 2]) -> T {
    let radius = (p[0] * p[0] + p[1] * p[1]).sqrt();
    let inner = (T::from_f64(100.0).unwrap() - radius / T::PI()).abs().exp();
    -T::from_f64(0.0001).unwrap()
        * ((p[0].sin() * p[1].sin() * inner).abs() + T::one()).powf(T::from_f64(0.1).unwrap())
}

#[differentiate]
fn easom<T: Float + FloatConst>(p: &[T; 2]) -> T {
    let (a, b) = (p[0] - T::PI(), p[1] - T::PI());
    -p[0].cos() * p[1].cos() * (-a * a - b * b).exp()
}

#[differentiate]
fn eggholder<T: Float + FromPrimitive>(p: &[T; 2]) -> T {
    let shifted = p[1] + T::from_f64(47.0).unwrap();
    -shifted
        * (shifted + p[0] / T::from_f64(2.0).unwrap())
            .abs()
            .sqrt()
            .sin()
        - p[0] * (p[0] - shifted).abs().sqrt().sin()
}

/// The Goldstein–Price product, which `picheny` rescales: a generic
/// function calling another.
#[differentiate]
fn goldstein_price_product<T: Float + FromPrimitive>(x: T, y: T) -> T {
    let n = |v: f64| T::from_f64(v).unwrap();
    let a = T::one()
        + (x + y + T::one()).powi(2)
            * (n(19.0) - n(14.0) * x + n(3.0) * x * x - n(14.0) * y
                + n(6.0) * x * y
                + n(3.0) * y * y);
    let b = n(30.0)
        + (n(2.0) * x - n(3.0) * y).powi(2)
            * (n(18.0) - n(32.0) * x + n(12.0) * x * x + n(48.0) * y - n(36.0) * x * y
                + n(27.0) * y * y);
    a * b
}

#[differentiate]
fn goldsteinprice<T: Float + FromPrimitive>(p: &[T; 2]) -> T {
    goldstein_price_product(p[0], p[1])
}

#[differentiate]
fn himmelblau<T: Float + FromPrimitive>(p: &[T; 2]) -> T {
    let (x, y) = (p[0], p[1]);
    (x * x + y - T::from(11.0).unwrap()).powi(2) + (x + y * y - T::from(7.0).unwrap()).powi(2)
}

#[differentiate]
fn holder_table<T: Float + FloatConst>(p: &[T; 2]) -> T {
    let radius = (p[0] * p[0] + p[1] * p[1]).sqrt();
    -(p[0].sin() * p[1].cos() * (T::one() - radius / T::PI()).abs().exp()).abs()
}

/// As the crate computes it: the last factor is 1 + sin²(2πx₂).
#[differentiate]
fn levy_n13<T: Float + FromPrimitive + FloatConst>(p: &[T; 2]) -> T {
    let pi = T::PI();
    let (x, y) = (p[0], p[1]);
    (T::from_f64(3.0).unwrap() * pi * x).sin().powi(2)
        + (x - T::one()).powi(2) * (T::one() + (T::from_f64(3.0).unwrap() * pi * y).sin().powi(2))
        + (y - T::one()).powi(2) * (T::one() + (T::from_f64(2.0).unwrap() * pi * y).sin().powi(2))
}

#[differentiate]
fn matyas<T: Float + FromPrimitive>(p: &[T; 2]) -> T {
    T::from_f64(0.26).unwrap() * (p[0] * p[0] + p[1] * p[1])
        - T::from_f64(0.48).unwrap() * p[0] * p[1]
}

#[differentiate]
fn mccormick<T: Float + FromPrimitive>(p: &[T; 2]) -> T {
    let (x, y) = (p[0], p[1]);
    (x + y).sin() + (x - y).powi(2) - T::from_f64(1.5).unwrap() * x
        + T::from_f64(2.5).unwrap() * y
        + T::one()
}

#[differentiate]
fn picheny<T: Float + FromPrimitive>(p: &[T; 2]) -> T {
    let n = |v: f64| T::from_f64(v).unwrap();
    let product = goldstein_price_product(n(4.0) * p[0] - n(2.0), n(4.0) * p[1] - n(2.0));
    (product.log10() - n(8.693)) / n(2.427)
}

#[differentiate]
fn schaffer_n2<T: Float + FromPrimitive>(p: &[T; 2]) -> T {
    let half = T::from_f64(0.5).unwrap();
    let (x2, y2) = (p[0] * p[0], p[1] * p[1]);
    let scale = T::one() + T::from_f64(0.001).unwrap() * (x2 + y2);
    half + ((x2 - y2).sin().powi(2) - half) / (scale * scale)
}

#[differentiate]
fn schaffer_n4<T: Float + FromPrimitive>(p: &[T; 2]) -> T {
    let half = T::from_f64(0.5).unwrap();
    let (x2, y2) = (p[0] * p[0], p[1] * p[1]);
    let scale = T::one() + T::from_f64(0.001).unwrap() * (x2 + y2);
    half + ((x2 - y2).abs().sin().cos().powi(2) - half) / scale.powi(2)
}

#[differentiate]
fn threehumpcamel<T: Float + FromPrimitive>(p: &[T; 2]) -> T {
    let (x, y) = (p[0], p[1]);
    T::from_f64(2.0).unwrap() * x * x - T::from_f64(1.05).unwrap() * x.powi(4)
        + x.powi(6) / T::from_f64(6.0).unwrap()
        + x * y
        + y * y
}

macro_rules! check_2d {
    ($($f:ident, $derivative:path, $hessian:path;)*) => {$({
        for p in POINTS_2D {
            let what = format!("{} at {p:?}", stringify!($f));
            let (value, g) = $f::value_and_grad(&p);
            assert!((value - tf::$f(&p)).abs() <= 1e-12 * value.abs().max(1.0), "{what}: value");
            assert_near(&g.p, &$derivative(&p), &format!("{what}: gradient"));
            let h = $f::hessian(&p);
            for (row, expected) in h.iter().zip($hessian(&p)) {
                assert_near(&row.p, &expected, &format!("{what}: Hessian"));
            }
        }
    })*};
}

#[test]
fn two_dimensional_objectives() {
    check_2d! {
        cross_in_tray, tf::cross_in_tray_derivative, tf::cross_in_tray_hessian;
    }
    objectives_2d!(check_2d);
}

// ---- objectives of any dimension -----------------------------------------

#[differentiate]
pub fn ackley<T>(x: &[T]) -> T
where
    T: Float + FromPrimitive + FloatConst + Sum,
{
    ackley_abc(
        x,
        T::from_f64(20.0).unwrap(),
        T::from_f64(0.2).unwrap(),
        T::from_f64(2.0).unwrap() * T::PI(),
    )
}

#[differentiate]
pub fn ackley_abc<T>(x: &[T], a: T, b: T, c: T) -> T
where
    T: Float + FromPrimitive + FloatConst + Sum,
{
    let n = T::from_usize(x.len()).unwrap();
    let squares = x.iter().map(|&v| v * v).sum::<T>();
    let cosines = x.iter().map(|&v| (c * v).cos()).sum::<T>();
    -a * (-b * (squares / n).sqrt()).exp() - (cosines / n).exp() + a + T::E()
}

/// As the crate computes it: the middle sum runs from the second element
/// (its docs' formula from the first).
#[differentiate]
pub fn levy<T: Float + FromPrimitive + FloatConst>(x: &[T]) -> T {
    let four = T::from_f64(4.0).unwrap();
    let w = |v: T| T::one() + (v - T::one()) / four;
    let d = x.len();
    let mut total = (T::PI() * w(x[0])).sin().powi(2);
    for i in 1..d - 1 {
        let wi = w(x[i]);
        total = total
            + (wi - T::one()).powi(2)
                * (T::one() + T::from_f64(10.0).unwrap() * (T::PI() * wi + T::one()).sin().powi(2));
    }
    let last = w(x[d - 1]);
    total
        + (last - T::one()).powi(2)
            * (T::one() + (T::from(2.0).unwrap() * T::PI() * last).sin().powi(2))
}

#[differentiate]
pub fn rastrigin<T: Float + FromPrimitive + FloatConst>(x: &[T]) -> T {
    rastrigin_a(x, T::from_f64(10.0).unwrap())
}

#[differentiate]
pub fn rastrigin_a<T: Float + FromPrimitive + FloatConst>(x: &[T], a: T) -> T {
    let mut total = a * T::from_usize(x.len()).unwrap();
    for &v in x {
        total = total + v * v - a * (T::from_f64(2.0).unwrap() * T::PI() * v).cos();
    }
    total
}

#[differentiate]
pub fn rosenbrock<T: Float + FromPrimitive>(x: &[T]) -> T {
    rosenbrock_ab(x, T::one(), T::from_f64(100.0).unwrap())
}

#[differentiate]
pub fn rosenbrock_ab<T: Float>(x: &[T], a: T, b: T) -> T {
    let mut total = T::zero();
    for i in 0..x.len() - 1 {
        total = total + (a - x[i]).powi(2) + b * (x[i + 1] - x[i] * x[i]).powi(2);
    }
    total
}

#[differentiate]
pub fn sphere<T: Float + Sum>(x: &[T]) -> T {
    x.iter().map(|v| v.powi(2)).sum()
}

#[differentiate]
pub fn styblinski_tang<T: Float + FromPrimitive>(x: &[T]) -> T {
    let mut total = T::zero();
    for &v in x {
        total = total + v.powi(4) - T::from_i32(16).unwrap() * v * v + T::from_i32(5).unwrap() * v;
    }
    total / T::from_f64(2.0).unwrap()
}

#[differentiate]
pub fn zero<T: Float>(x: &[T]) -> T {
    let _ = x;
    T::zero()
}

#[test]
fn objectives_of_any_dimension() {
    for n in [2, 10, 100] {
        let x = point(n);
        macro_rules! check {
            ($f:ident ($($arg:expr),*), $derivative:expr, $hessian:expr) => {{
                let what = format!("{}, n = {n}", stringify!($f));
                let (value, g) = $f::value_and_grad(&x $(, $arg)*);
                let expected = tf::$f(&x $(, $arg)*);
                assert!(
                    (value - expected).abs() <= 1e-12 * expected.abs().max(1.0),
                    "{what}: value {value} vs {expected}"
                );
                assert_near(&g.x, &$derivative(&x $(, $arg)*), &what);
                let h = $f::hessian(&x $(, $arg)*);
                for (row, expected) in h.iter().zip($hessian(&x $(, $arg)*)) {
                    assert_near(&row.x, &expected, &format!("{what}: Hessian"));
                }
            }};
        }
        check!(ackley(), tf::ackley_derivative, tf::ackley_hessian);
        check!(
            ackley_abc(18.0, 0.3, 5.0),
            tf::ackley_abc_derivative,
            tf::ackley_abc_hessian
        );
        check!(levy(), tf::levy_derivative, tf::levy_hessian);
        check!(rastrigin(), tf::rastrigin_derivative, tf::rastrigin_hessian);
        check!(
            rastrigin_a(7.5),
            tf::rastrigin_a_derivative,
            tf::rastrigin_a_hessian
        );
        check!(
            rosenbrock(),
            tf::rosenbrock_derivative,
            tf::rosenbrock_hessian
        );
        // The crate's `rosenbrock_ab_hessian` holds for a = 1 only.
        check!(
            rosenbrock_ab(1.0, 80.0),
            tf::rosenbrock_ab_derivative,
            tf::rosenbrock_ab_hessian
        );
        check!(sphere(), tf::sphere_derivative, tf::sphere_hessian);
        check!(
            styblinski_tang(),
            tf::styblinski_tang_derivative,
            tf::styblinski_tang_hessian
        );
        check!(zero(), tf::zero_derivative, tf::zero_hessian);
    }
}

/// With a ≠ 1, `rosenbrock_ab`'s Hessian against central differences of the
/// crate's gradient (h = 1e-5: truncation about h² times the third
/// derivative, 1e-7 here; rounding 1e-16 · |f'| / h), and the derivatives
/// with respect to a and b against their closed forms.
#[test]
fn rosenbrock_with_parameters() {
    let x = point(10);
    let (a, b) = (1.5, 80.0);
    let g = rosenbrock_ab::grad(&x, a, b);
    assert_near(&g.x, &tf::rosenbrock_ab_derivative(&x, a, b), "gradient");
    let da: f64 = (0..9).map(|i| 2.0 * (a - x[i])).sum();
    let db: f64 = (0..9).map(|i| (x[i + 1] - x[i] * x[i]).powi(2)).sum();
    assert_near(&[g.a, g.b], &[da, db], "parameters");
    // The rows of x (the Hessian also has rows for a and b).
    let fd = hessian_by_differences(|y| tf::rosenbrock_ab_derivative(y, a, b), &x, 1e-5);
    for (i, (row, fd)) in rosenbrock_ab::hessian(&x, a, b).iter().zip(&fd).enumerate() {
        objectives::assert_near(&row.x, fd, 1e-5, &format!("Hessian row {i}"));
    }
}

/// The functions stay generic: `f32` runs them as written.
#[test]
fn the_functions_stay_generic() {
    let x: Vec<f32> = point(10).iter().map(|&v| v as f32).collect();
    assert!((rosenbrock(&x) - tf::rosenbrock(&x)).abs() <= 1e-4 * tf::rosenbrock(&x));
    assert!((ackley(&x) - tf::ackley(&x)).abs() <= 1e-4);
    assert_eq!(beale(&[1.0f32, 0.5]), tf::beale(&[1.0f32, 0.5]));
}

/// A method generic over its number type, on a differentiated receiver.
#[derive(deltad::Differentiable, Clone, Debug, PartialEq)]
pub struct Spring {
    pub stiffness: f64,
    pub rest: f64,
}

#[differentiate]
impl Spring {
    pub fn energy<T: Float + FromPrimitive>(&self, x: T) -> T {
        let stretch = x - T::from_f64(self.rest).unwrap();
        T::from_f64(0.5).unwrap() * T::from_f64(self.stiffness).unwrap() * stretch.powi(2)
    }
}

#[test]
fn generic_methods() {
    let s = Spring {
        stiffness: 3.0,
        rest: 0.5,
    };
    let g = spring_energy::grad(&s, 2.0);
    // E = ½ k (x − r)²: ∂E/∂k = ½(x − r)², ∂E/∂r = −k(x − r), ∂E/∂x = k(x − r).
    assert_eq!(g.x, 3.0 * 1.5);
    assert_eq!(
        g.self_,
        Spring {
            stiffness: 0.5 * 1.5 * 1.5,
            rest: -3.0 * 1.5
        }
    );
    assert_eq!(s.energy(2.0f32), 0.5 * 3.0 * 1.5 * 1.5);
}

// ---- other shapes of generic code ---------------------------------------

/// Const generics next to the number type (argmin's `*_const` style).
#[differentiate]
fn sphere_const<const N: usize, T: Float + Sum>(x: &[T; N]) -> T {
    x.iter().map(|v| *v * *v).sum()
}

/// A generic function calling another, inferring its parameters.
#[differentiate]
fn norm_const<T: Float + Sum>(x: &[T; 3]) -> T {
    sphere_const(x).sqrt()
}

/// A buffer result.
#[differentiate]
fn doubled<T: Float + FromPrimitive>(x: &[T]) -> Vec<T> {
    x.iter().map(|&v| v * T::from_f64(2.0).unwrap()).collect()
}

/// A function parameter over the number type, called with a closure from
/// another generic function.
#[differentiate]
fn midpoint_rule<T: Float + FromPrimitive, F: Fn(T) -> T>(f: F, a: T, b: T, n: usize) -> T {
    let h = (b - a) / T::from_usize(n).unwrap();
    let mut total = T::zero();
    for i in 0..n {
        let x = a + (T::from_usize(i).unwrap() + T::from_f64(0.5).unwrap()) * h;
        total = total + f(x) * h;
    }
    total
}

#[differentiate]
fn area_under<T: Float + FromPrimitive>(c: T, b: T) -> T {
    midpoint_rule(|x: T| c * x * x, T::zero(), b, 64)
}

#[test]
fn other_shapes_of_generic_code() {
    assert_eq!(sphere_const::grad(&[1.0, 2.0, 3.0]).x, [2.0, 4.0, 6.0]);
    let g = norm_const::grad(&[1.0, 2.0, 2.0]).x;
    assert_near(&g, &[1.0 / 3.0, 2.0 / 3.0, 2.0 / 3.0], "norm");
    let (value, g) = doubled::vjp(&[1.0, 2.0], &vec![1.0, 0.5]);
    assert_eq!((value, g.x), (vec![2.0, 4.0], vec![2.0, 1.0]));
    // The derivatives are the midpoint rule's own: ∂/∂c = Σ h·x_i² in
    // closed form; ∂/∂b against central differences (h = 1e-6 on a cubic in
    // b: truncation c·h²·... below 1e-11, rounding ~1e-16·|f|/h ≈ 1e-10).
    let (c, b) = (3.0, 1.5);
    let g = area_under::grad(c, b);
    let h = b / 64.0;
    let dc: f64 = (0..64).map(|i| h * ((i as f64 + 0.5) * h).powi(2)).sum();
    assert_near(&[g.c], &[dc], "derivative in c");
    let step = 1e-6;
    let db = (area_under(c, b + step) - area_under(c, b - step)) / (2.0 * step);
    assert!((g.b - db).abs() <= 1e-7 * db.abs(), "{} vs {db}", g.b);
    // Still generic: on f32, the same value to f32's precision.
    let single = f64::from(area_under(3.0f32, 1.5));
    assert!((single - area_under(3.0, 1.5)).abs() <= 1e-6 * single.abs());
}

/// `#[differentiate(f32)]`: the derivatives of a generic function take
/// `f32` (its constants and conversions written for `f32`).
#[differentiate(f32)]
fn damped<T: Float + FloatConst + FromPrimitive>(x: &[T], k: T) -> T {
    let mut total = T::zero();
    for &v in x {
        total = total + (-k * v * v).exp() * (T::PI() * v).cos() + T::from_f64(0.25).unwrap() * v;
    }
    total
}

#[test]
fn derivatives_in_single_precision() {
    let (x, k) = ([0.3f32, -0.7, 1.1], 0.8f32);
    let g = damped::grad(&x, k);
    let pi = std::f32::consts::PI;
    for (i, &v) in x.iter().enumerate() {
        let e = (-k * v * v).exp();
        let expected = e * (-2.0 * k * v * (pi * v).cos() - pi * (pi * v).sin()) + 0.25;
        assert!(
            (g.x[i] - expected).abs() <= 1e-5,
            "{} vs {expected}",
            g.x[i]
        );
    }
    let dk: f32 = x
        .iter()
        .map(|&v| -v * v * (-k * v * v).exp() * (pi * v).cos())
        .sum();
    assert!((g.k - dk).abs() <= 1e-5, "{} vs {dk}", g.k);
    // The function itself is still generic.
    assert!((damped(&[0.3f64, -0.7, 1.1], 0.8) - f64::from(damped(&x, k))).abs() < 1e-5);
}
