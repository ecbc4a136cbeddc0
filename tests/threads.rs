//! Thread safety: gradients computed in parallel (rayon) equal the
//! sequential ones bit for bit, and the types users hold are `Send`/`Sync`
//! where they should be (checked at compile time).
//!
//! The runtime has no global mutable state: the only statics are the
//! per-thread tape pools (`runtime/src/pool.rs`, `thread_local!`), so
//! threads never share a tape, a buffer or a lock. The tape types are
//! deliberately neither `Send` nor `Sync`: a `Tape` appends through an
//! `UnsafeCell` (recording takes `&Tape`, so sharing it across threads would
//! be a data race) and keeps raw allocations for reuse, and a `Real` borrows
//! its tape. A recording therefore lives and dies on one thread; what
//! crosses threads is plain data (inputs, `Grad`s, values).

// Index loops are what deltad's loop handling is tested on.
#![allow(clippy::needless_range_loop)]

mod common;

use deltad::{differentiate, Differentiable};
use rayon::prelude::*;

#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Params {
    pub weights: Vec<f64>,
    pub bias: f64,
    #[no_grad]
    pub name: String,
}

/// A loss over data points with loops, branches and a derived type.
#[differentiate]
fn loss(p: &Params, #[no_grad] x: &[f64], #[no_grad] y: f64) -> f64 {
    let mut z = p.bias;
    for i in 0..x.len() {
        z += p.weights[i] * x[i];
    }
    let e = if z > 0.0 { z - y } else { z.exp() - 1.0 - y };
    e * e
}

/// A time integration with a checkpointed loop.
#[differentiate]
fn integrate(x0: f64, k: [f64; 2], steps: usize) -> f64 {
    let mut x = x0;
    let mut v = 0.0;
    #[checkpoint]
    for _ in 0..steps {
        let a = -k[0] * x - k[1] * v;
        x += 0.01 * v;
        v += 0.01 * a;
    }
    x * x + v * v
}

/// Iterator chains and a nested gradient.
#[differentiate]
fn inner(x: f64, y: f64) -> f64 {
    (x * y).sin() + x * x
}

#[differentiate]
fn chains(v: &[f64], s: f64) -> f64 {
    let norm: f64 = v.iter().map(|a| a * a).sum::<f64>().sqrt();
    norm * s + inner::grad(s, norm).x
}

fn inputs(n: usize) -> Vec<Vec<f64>> {
    (0..n)
        .map(|k| (0..4).map(|i| ((k * 4 + i) as f64 * 0.173).sin()).collect())
        .collect()
}

/// Bit-for-bit equality: `==` and the same `Debug` text (which tells
/// `-0.0` from `0.0`).
fn identical<T: PartialEq + std::fmt::Debug>(a: &[T], b: &[T]) {
    assert_eq!(a.len(), b.len());
    for (i, (a, b)) in a.iter().zip(b).enumerate() {
        assert!(
            a == b && format!("{a:?}") == format!("{b:?}"),
            "entry {i}: {a:?} vs {b:?}"
        );
    }
}

#[test]
fn parallel_gradients_equal_sequential_ones_bit_for_bit() {
    let data = inputs(1000);
    let params = Params {
        weights: vec![0.5, -0.25, 0.125, 1.0],
        bias: 0.1,
        name: "p".into(),
    };

    let run_loss = |x: &Vec<f64>| loss::value_and_grad(&params, x, x[0]);
    let sequential: Vec<_> = data.iter().map(run_loss).collect();
    let parallel: Vec<_> = data.par_iter().map(run_loss).collect();
    identical(&sequential, &parallel);

    let run_integrate = |x: &Vec<f64>| integrate::grad(x[0], [1.0 + x[1].abs(), 0.1], 200);
    let sequential: Vec<_> = data.iter().map(run_integrate).collect();
    let parallel: Vec<_> = data.par_iter().map(run_integrate).collect();
    identical(&sequential, &parallel);

    let run_chains = |x: &Vec<f64>| chains::value_and_grad(x, x[3]);
    let sequential: Vec<_> = data.iter().map(run_chains).collect();
    let parallel: Vec<_> = data.par_iter().map(run_chains).collect();
    identical(&sequential, &parallel);

    // Forward mode and Hessians too.
    let run_hvp = |x: &Vec<f64>| {
        chains::hvp(
            x,
            x[3],
            &chains::Grad {
                v: x.clone(),
                s: 1.0,
            },
        )
    };
    let sequential: Vec<_> = data.iter().map(run_hvp).collect();
    let parallel: Vec<_> = data.par_iter().map(run_hvp).collect();
    identical(&sequential, &parallel);

    // And the gradients are right (not only reproducible): finite
    // differences at a few points.
    for x in data.iter().step_by(250) {
        let g = integrate::grad(x[0], [1.0 + x[1].abs(), 0.1], 200);
        let f = |p: &[f64]| integrate(p[0], [p[1], p[2]], 200);
        let reference = common::finite_difference(f, &[x[0], 1.0 + x[1].abs(), 0.1]);
        common::assert_close(&[g.x0, g.k[0], g.k[1]], &reference, "integrate");
    }
}

// ----- compile-time Send/Sync checks ---------------------------------------

fn send_sync<T: Send + Sync>() {}

/// Compiles only if `T` is *not* `Send` (a second impl makes the call
/// ambiguous when `T: Send`).
trait AmbiguousIfSend<A> {
    fn check() {}
}
impl<T: ?Sized> AmbiguousIfSend<()> for T {}
impl<T: ?Sized + Send> AmbiguousIfSend<u8> for T {}

trait AmbiguousIfSync<A> {
    fn check() {}
}
impl<T: ?Sized> AmbiguousIfSync<()> for T {}
impl<T: ?Sized + Sync> AmbiguousIfSync<u8> for T {}

#[test]
fn types_users_hold_are_send_and_sync() {
    // Gradients, of every shape, and derivative reports.
    send_sync::<loss::Grad>();
    send_sync::<integrate::Grad>();
    send_sync::<chains::Grad>();
    send_sync::<inner::Grad>();
    send_sync::<deltad::DerivativeCheck>();
    send_sync::<deltad::TapeStats>();
    // Values returned by the wrappers.
    send_sync::<(f64, loss::Grad)>();
    send_sync::<(f64, Vec<chains::Grad>)>();
    // Derived types and their twins over plain floats.
    send_sync::<Params>();
    send_sync::<<Params as Differentiable<f64>>::Twin<f64>>();
    // The dual numbers of forward mode.
    send_sync::<deltad::__private::Dual<f64>>();
}

#[test]
fn tapes_and_dual_values_stay_on_their_thread() {
    // A tape is neither Send nor Sync, nor is a Real (it borrows its tape).
    <deltad::Tape<f64> as AmbiguousIfSend<_>>::check();
    <deltad::Tape<f64> as AmbiguousIfSync<_>>::check();
    <deltad::Real<'static, f64> as AmbiguousIfSend<_>>::check();
    <deltad::Real<'static, f64> as AmbiguousIfSync<_>>::check();
}
