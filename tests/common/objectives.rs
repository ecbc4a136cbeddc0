//! What the tests of generic code share: the two-dimensional objectives of
//! `argmin_testfunctions` 0.3 that stay in their number type (all but
//! `cross_in_tray`), each with the crate's hand-written derivative and
//! Hessian, given to a checking macro (`objectives_2d!(check)` expands to
//! `check! { beale, tf::beale_derivative, tf::beale_hessian; ... }`, with
//! `tf` the crate); the points they are checked at; the comparison; and the
//! Hessian by central differences of a gradient.
#![allow(dead_code)]

macro_rules! objectives_2d {
    ($then:ident) => {
        $then! {
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
    };
}

/// Points away from every two-dimensional objective's kinks (`abs`, `sqrt`
/// at 0).
pub const POINTS_2D: [[f64; 2]; 3] = [[0.7, -1.3], [1.9, 0.4], [-2.2, 2.7]];

/// A point in n dimensions, inside every objective's usual domain.
pub fn point(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| 0.6 * (1.3 * i as f64 + 0.4).sin() + 0.1)
        .collect()
}

/// Agreement to `tol · max(1, |expected|)` per entry: the crate's formulas
/// and deltad's arithmetic round differently, nothing more.
#[track_caller]
pub fn assert_near<P: Into<f64> + Copy>(actual: &[P], expected: &[P], tol: f64, what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: lengths");
    for (i, (&a, &e)) in actual.iter().zip(expected).enumerate() {
        let (a, e): (f64, f64) = (a.into(), e.into());
        assert!(
            (a - e).abs() <= tol * e.abs().max(1.0),
            "{what}[{i}]: deltad {a} vs hand-written {e}"
        );
    }
}

/// The Hessian of a function whose gradient is `gradient`, row by row, by
/// central differences with step `step` (row i: the gradient's change
/// along x_i).
pub fn hessian_by_differences(
    gradient: impl Fn(&[f64]) -> Vec<f64>,
    x: &[f64],
    step: f64,
) -> Vec<Vec<f64>> {
    (0..x.len())
        .map(|i| {
            let shifted = |s: f64| {
                let mut y = x.to_vec();
                y[i] += s;
                gradient(&y)
            };
            shifted(step)
                .iter()
                .zip(shifted(-step))
                .map(|(u, d)| (u - d) / (2.0 * step))
                .collect()
        })
        .collect()
}
