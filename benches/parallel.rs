//! Batched gradients on 2 cores: the gradient of a small network's loss at
//! each of 1000 inputs (each gradient on its own tape, as a batch of
//! independent problems), sequentially and with rayon's `par_iter`.
//! Criterion measures both; `main` then prints the speedup measured in the
//! same run (median of repeated batches) and the number of rayon threads.
//!
//!     cargo bench --bench parallel

use criterion::{criterion_group, Criterion};
use deltad::differentiate;
use rayon::prelude::*;
use std::hint::black_box;
use std::time::{Duration, Instant};

const INPUTS: usize = 1000;
const WIDTH: usize = 16;

/// A two-layer tanh network's squared error at one input.
#[differentiate]
fn loss(w1: &[f64], w2: &[f64], #[no_grad] x: &[f64], #[no_grad] target: f64) -> f64 {
    let mut out = 0.0;
    for j in 0..WIDTH {
        let mut z = 0.0;
        for i in 0..WIDTH {
            z += w1[j * WIDTH + i] * x[i];
        }
        out += w2[j] * z.tanh();
    }
    let e = out - target;
    e * e
}

struct Batch {
    w1: Vec<f64>,
    w2: Vec<f64>,
    inputs: Vec<Vec<f64>>,
}

fn batch() -> Batch {
    let wave = |k: usize, s: f64| (k as f64 * s).sin() * 0.5;
    Batch {
        w1: (0..WIDTH * WIDTH).map(|k| wave(k, 0.37)).collect(),
        w2: (0..WIDTH).map(|k| wave(k, 1.3)).collect(),
        inputs: (0..INPUTS)
            .map(|n| (0..WIDTH).map(|i| wave(n * WIDTH + i, 0.011)).collect())
            .collect(),
    }
}

fn sequential(b: &Batch) -> Vec<loss::Grad> {
    b.inputs
        .iter()
        .map(|x| loss::grad(&b.w1, &b.w2, x, 0.5))
        .collect()
}

fn parallel(b: &Batch) -> Vec<loss::Grad> {
    b.inputs
        .par_iter()
        .map(|x| loss::grad(&b.w1, &b.w2, x, 0.5))
        .collect()
}

fn bench(c: &mut Criterion) {
    let b = batch();
    assert_eq!(sequential(&b), parallel(&b), "parallel gradients differ");
    let mut group = c.benchmark_group("parallel");
    group.warm_up_time(Duration::from_millis(300));
    group.measurement_time(Duration::from_secs(3));
    group.sample_size(20);
    group.bench_function("sequential", |bench| {
        bench.iter(|| sequential(black_box(&b)))
    });
    group.bench_function("rayon", |bench| bench.iter(|| parallel(black_box(&b))));
    group.finish();
}

criterion_group!(benches, bench);

/// Median wall time of `runs` calls of `f`.
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

fn main() {
    benches();
    criterion::Criterion::default()
        .configure_from_args()
        .final_summary();
    let b = batch();
    let seq = median(31, || {
        black_box(sequential(black_box(&b)));
    });
    let par = median(31, || {
        black_box(parallel(black_box(&b)));
    });
    println!(
        "\n== parallel: {INPUTS} gradients, {} rayon threads ({} cores available) ==",
        rayon::current_num_threads(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "sequential {seq:?}, rayon {par:?}: speedup {:.2}x",
        seq.as_secs_f64() / par.as_secs_f64()
    );
}
