//! Independent references for gradient tests: central finite differences.
#![allow(dead_code)]

/// Central finite-difference gradient of `f` at `x`.
///
/// Step `h = 1e-6 * max(1, |x_i|)`: the truncation error is O(h² |f'''|) and
/// the rounding error O(ε |f| / h) with ε = 2.2e-16, so both stay near 1e-10
/// for functions whose values and third derivatives are O(1)–O(100); the
/// tolerance of `assert_close` (1e-6 relative to the larger of 1 and the
/// gradient's magnitude) leaves four orders of magnitude of margin.
pub fn finite_difference(f: impl Fn(&[f64]) -> f64, x: &[f64]) -> Vec<f64> {
    let mut point = x.to_vec();
    (0..x.len())
        .map(|i| {
            let h = 1e-6 * x[i].abs().max(1.0);
            point[i] = x[i] + h;
            let up = f(&point);
            point[i] = x[i] - h;
            let down = f(&point);
            point[i] = x[i];
            (up - down) / (2.0 * h)
        })
        .collect()
}

/// Central differences `(f(h) - f(-h)) / 2h` of a vector-valued function of
/// one step `t`, such as a function's values or its gradient at `x + t·v`:
/// their derivative along `v` (J·v, or H·v for a gradient). The caller
/// chooses `h` for the function's smoothness and scale.
pub fn central_difference(f: impl Fn(f64) -> Vec<f64>, h: f64) -> Vec<f64> {
    let (up, down) = (f(h), f(-h));
    up.iter()
        .zip(&down)
        .map(|(u, d)| (u - d) / (2.0 * h))
        .collect()
}

/// Central difference `(f(x + h) - f(x - h)) / 2h` with h = 1e-6: for the
/// O(1) functions of one real the tests take, truncation ~h²|f'''|/6 and
/// rounding ~1e-16|f|/h stay below 1e-8, far below the 1e-6 the tests allow.
pub fn central(f: impl Fn(f64) -> f64, x: f64) -> f64 {
    let h = 1e-6;
    (f(x + h) - f(x - h)) / (2.0 * h)
}

/// Asserts one real agrees to `tol * max(1, |expected|)`.
#[track_caller]
pub fn near(actual: f64, expected: f64, tol: f64, what: &str) {
    assert!(
        (actual - expected).abs() <= tol * expected.abs().max(1.0),
        "{what}: deltad {actual} vs reference {expected}"
    );
}

/// Asserts `actual` and `expected` agree to `1e-6 * max(1, |expected|)` per entry.
#[track_caller]
pub fn assert_close(actual: &[f64], expected: &[f64], what: &str) {
    assert_close_tol(actual, expected, 1e-6, what);
}

/// Asserts agreement to `tol * max(1, |expected|)` per entry.
#[track_caller]
pub fn assert_close_tol(actual: &[f64], expected: &[f64], tol: f64, what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: lengths differ");
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        let scale = e.abs().max(1.0);
        assert!(
            (a - e).abs() <= tol * scale,
            "{what}[{i}]: deltad {a} vs reference {e} (|diff| {} > {})\n  deltad:    {actual:?}\n  reference: {expected:?}",
            (a - e).abs(),
            tol * scale
        );
    }
}

/// Checks a gradient against central finite differences of `f`.
#[track_caller]
pub fn check_gradient(f: impl Fn(&[f64]) -> f64, x: &[f64], gradient: &[f64], what: &str) {
    let reference = finite_difference(f, x);
    assert_close(gradient, &reference, what);
}

/// A deterministic pseudo-random generator (SplitMix64) for test inputs.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }
    pub fn vec(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n).map(|_| self.uniform(lo, hi)).collect()
    }
}
