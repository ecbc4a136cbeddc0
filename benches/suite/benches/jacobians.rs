//! Jacobians and Hessians at the cost of their structure: the primal, one
//! `jvp`, `jvps` along 8 tangents, the sparse Jacobian over a detected
//! pattern, and the hand-written diagonals; a dense Hessian by chunks of 8
//! rows against one `hvp` per row, and a tridiagonal one by colours.
//!     cargo bench --manifest-path benches/suite/Cargo.toml --bench jacobians

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, BenchmarkId, Criterion};
use deltad_bench_suite::jacobians::{
    self, chain, pairwise, residuals, DENSE_HESSIAN_SIZES, SIZES, SPARSE_HESSIAN_SIZES,
};
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

const HESSIAN_FUNCTIONS: [&str; 5] = ["primal", "hessian", "hvp-rows", "sparse-hessian", "hvp"];
const HESSIAN_RATIOS: [(&str, &str); 3] = [
    ("hessian", "hvp-rows"),
    ("sparse-hessian", "primal"),
    ("sparse-hessian", "hvp"),
];

fn bench_hessians(c: &mut Criterion) {
    jacobians::check_hessians();
    let mut g = c.benchmark_group("hessians");
    g.warm_up_time(Duration::from_millis(300));
    g.measurement_time(Duration::from_secs(2));
    g.sample_size(10);
    for n in DENSE_HESSIAN_SIZES {
        let x = jacobians::input(n);
        let id = format!("dense-{n}");
        g.bench_with_input(BenchmarkId::new("primal", &id), &x, |b, x| {
            b.iter(|| pairwise(black_box(x)))
        });
        g.bench_with_input(BenchmarkId::new("hessian", &id), &x, |b, x| {
            b.iter(|| pairwise::hessian(black_box(x)))
        });
        g.bench_with_input(BenchmarkId::new("hvp-rows", &id), &x, |b, x| {
            b.iter(|| jacobians::hessian_by_rows(black_box(x)))
        });
    }
    for n in SPARSE_HESSIAN_SIZES {
        let x = jacobians::input(n);
        let id = format!("chain-{n}");
        let pattern = chain::hessian_pattern(&x);
        let v = chain::Grad { x: vec![1.0; n] };
        g.bench_with_input(BenchmarkId::new("primal", &id), &x, |b, x| {
            b.iter(|| chain(black_box(x)))
        });
        g.bench_with_input(BenchmarkId::new("sparse-hessian", &id), &x, |b, x| {
            b.iter(|| chain::sparse_hessian(black_box(x), &pattern))
        });
        g.bench_with_input(BenchmarkId::new("hvp", &id), &x, |b, x| {
            b.iter(|| chain::hvp(black_box(x), &v))
        });
    }
    g.finish();
}

criterion_group!(suite, bench, bench_hessians);

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
    let row = |parameter: String, label: String| Row {
        group: "hessians".into(),
        parameter,
        label,
        per: 1000.0,
    };
    let mut rows: Vec<Row> = DENSE_HESSIAN_SIZES
        .iter()
        .map(|n| row(format!("dense-{n}"), format!("dense Hessian, n = {n}")))
        .collect();
    rows.extend(SPARSE_HESSIAN_SIZES.iter().map(|n| {
        row(
            format!("chain-{n}"),
            format!("Rosenbrock chain (tridiagonal), n = {n}"),
        )
    }));
    report::print_table(
        "Hessians",
        "call in µs",
        &rows,
        &HESSIAN_FUNCTIONS,
        &HESSIAN_RATIOS,
    );
    println!();
    println!(
        "{}",
        report::markdown_ratios(&rows, &HESSIAN_FUNCTIONS, &HESSIAN_RATIOS)
    );
}
