//! Jacobians at the cost of their structure (issue: vector forward mode,
//! sparsity): the primal, one `jvp`, `jvps` along 8 tangents, the sparse
//! Jacobian over a detected pattern, and the hand-written diagonals.
//!     cargo bench --manifest-path benches/suite/Cargo.toml --bench jacobians

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, BenchmarkId, Criterion};
use deltad_bench_suite::jacobians::{self, residuals, SIZES};
use deltad_bench_suite::report::{self, Row};

const FUNCTIONS: [&str; 6] = [
    "primal",
    "jvp",
    "jvps-8",
    "sparse",
    "pattern",
    "hand-written",
];
const RATIOS: [(&str, &str); 5] = [
    ("jvps-8", "jvp"),
    ("jvp", "primal"),
    ("sparse", "primal"),
    ("sparse", "hand-written"),
    ("pattern", "primal"),
];

fn bench(c: &mut Criterion) {
    jacobians::check();
    let mut g = c.benchmark_group("jacobians");
    g.warm_up_time(Duration::from_millis(300));
    g.measurement_time(Duration::from_secs(2));
    g.sample_size(10);
    for n in SIZES {
        let x = jacobians::input(n);
        let tangents = jacobians::tangents(n);
        let pattern = residuals::jacobian_pattern(&x);
        g.bench_with_input(BenchmarkId::new("primal", n), &x, |b, x| {
            b.iter(|| residuals(black_box(x)))
        });
        g.bench_with_input(BenchmarkId::new("jvp", n), &x, |b, x| {
            b.iter(|| residuals::jvp(black_box(x), &tangents[0]))
        });
        g.bench_with_input(BenchmarkId::new("jvps-8", n), &x, |b, x| {
            b.iter(|| residuals::jvps(black_box(x), &tangents))
        });
        g.bench_with_input(BenchmarkId::new("sparse", n), &x, |b, x| {
            b.iter(|| residuals::sparse_jacobian(black_box(x), &pattern))
        });
        g.bench_with_input(BenchmarkId::new("pattern", n), &x, |b, x| {
            b.iter(|| residuals::jacobian_pattern(black_box(x)))
        });
        g.bench_with_input(BenchmarkId::new("hand-written", n), &x, |b, x| {
            b.iter(|| jacobians::hand(black_box(x)))
        });
    }
    g.finish();
}

criterion_group!(suite, bench);

fn main() {
    suite();
    Criterion::default().configure_from_args().final_summary();
    let rows: Vec<Row> = SIZES
        .iter()
        .map(|n| Row {
            group: "jacobians".into(),
            parameter: n.to_string(),
            label: format!("tridiagonal, n = {n}"),
            per: 1000.0,
        })
        .collect();
    report::print_table("Jacobians", "call in µs", &rows, &FUNCTIONS, &RATIOS);
    println!();
    println!("{}", report::markdown_ratios(&rows, &FUNCTIONS, &RATIOS));
}
