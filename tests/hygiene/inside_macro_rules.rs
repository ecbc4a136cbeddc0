//! Differentiated functions written by the user's own `macro_rules!`: the
//! parameters and locals then carry the macro's hygiene, and the generated
//! code must refer to them by the identifiers the user wrote (not new ones
//! of the same name): a loop invariant the tape hoists, the scratch
//! variables of a `#[preaccumulate]` loop, on both engines.
#![allow(clippy::all)]

use deltad::differentiate;

macro_rules! define {
    ($name:ident, $engine:ident, fn ($($params:tt)*) -> $ret:ty $body:block) => {
        #[differentiate($engine)]
        fn $name($($params)*) -> $ret $body
    };
}

// t_{i+1} = tanh(t_i / 2) + x_i^y; the result is the sum of the t's.
define!(invariant_tape, tape, fn(x: &[f64], y: f64) -> f64 {
    let mut s = 0.0;
    let mut t = y;
    for i in 0..x.len() {
        t = (t * 0.5).tanh() + x[i].powf(y);
        s += t;
    }
    s
});
define!(invariant_compiled, compiled, fn(x: &[f64], y: f64) -> f64 {
    let mut s = 0.0;
    let mut t = y;
    for i in 0..x.len() {
        t = (t * 0.5).tanh() + x[i].powf(y);
        s += t;
    }
    s
});

// Σ_i (x_i y)² through a scratch buffer.
define!(scratch_tape, tape, fn(x: &[f64], y: f64) -> f64 {
    let mut scratch = vec![0.0; 1];
    let mut total = 0.0;
    #[preaccumulate]
    for i in 0..x.len() {
        scratch[0] = x[i] * y;
        total += scratch[0] * scratch[0];
    }
    total
});

fn main() {
    // Hand-derived: with u_i = x_i^y and t_{i+1} = tanh(t_i / 2) + u_i,
    // dt_{i+1} = (1 - tanh²(t_i / 2)) / 2 · dt_i + du_i.
    let (x, y): ([f64; 2], f64) = ([0.5, 1.5], 0.8);
    let t0 = y;
    let a0 = (t0 * 0.5).tanh();
    let t1 = a0 + x[0].powf(y);
    let a1 = (t1 * 0.5).tanh();
    let dt1_dt0 = (1.0 - a0 * a0) * 0.5;
    let dt2_dt1 = (1.0 - a1 * a1) * 0.5;
    // s = t1 + t2: ds/dt1 = 1 + dt2/dt1.
    let ds_dt1 = 1.0 + dt2_dt1;
    let dt1_dy = dt1_dt0 + x[0].powf(y) * x[0].ln();
    let dy = ds_dt1 * dt1_dy + x[1].powf(y) * x[1].ln();
    let dx = [ds_dt1 * y * x[0].powf(y - 1.0), y * x[1].powf(y - 1.0)];
    let tape = invariant_tape::grad(&x, y);
    let compiled = invariant_compiled::grad(&x, y);
    for (gx, gy) in [(tape.x, tape.y), (compiled.x, compiled.y)] {
        assert!((gy - dy).abs() < 1e-12, "{} vs {}", gy, dy);
        for (got, want) in gx.iter().zip(dx) {
            assert!((got - want).abs() < 1e-12, "{} vs {}", got, want);
        }
    }
    let g = scratch_tape::grad(&x, y);
    let want_y: f64 = x.iter().map(|xi| 2.0 * xi * xi * y).sum();
    assert!((g.y - want_y).abs() < 1e-12);
    for (got, xi) in g.x.iter().zip(x) {
        assert!((got - 2.0 * xi * y * y).abs() < 1e-12);
    }
}
