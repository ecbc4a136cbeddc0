//! The programs of deltad's benchmark suite, each written several ways: as
//! plain Rust (the primal, annotated with `#[differentiate]`), with a
//! hand-written adjoint, and with the peer crates that can express it
//! (`reverse` and `ad_trait` reverse mode, `num-dual` forward mode).
//! `check()` in each module compares every gradient with the hand-written
//! one before anything is timed.
#![allow(clippy::all)]

pub mod branches;
pub mod call;
pub mod gmm;
pub mod jacobians;
pub mod quaternion;
pub mod rosenbrock;
pub mod taylor;

#[path = "../../support/report.rs"]
pub mod report;

use report::Row;

/// The ways each program is computed, as named in the benchmarks.
/// (`deltad-plain-loops`: GMM without its `#[preaccumulate]` attribute.)
/// (`deltad-tape`: the same function forced onto the tape, the engine deltad
/// had before its compiled path.)
pub const FUNCTIONS: [&str; 9] = [
    "primal",
    "hand-written",
    "deltad",
    "deltad-plain-loops",
    "deltad-generic",
    "deltad-tape",
    "reverse",
    "ad_trait",
    "num-dual",
];

/// The ratios the summary reports.
pub const RATIOS: [(&str, &str); 8] = [
    ("deltad", "primal"),
    ("deltad", "hand-written"),
    ("deltad-plain-loops", "hand-written"),
    ("deltad-generic", "deltad"),
    ("deltad-tape", "deltad"),
    ("reverse", "deltad"),
    ("ad_trait", "deltad"),
    ("num-dual", "deltad"),
];

/// Sizes: iterations of the Taylor series, dimensions of Rosenbrock, (D, K)
/// of GMM (N = 1000 points), samples of the quaternion batch.
pub const TAYLOR_ITERATIONS: [usize; 2] = [1_000, 100_000];
pub const ROSENBROCK_DIMENSIONS: [usize; 2] = [1_000, 100_000];
pub const GMM_SHAPES: [(usize, usize); 3] = [(2, 5), (10, 25), (20, 50)];
pub const GMM_POINTS: usize = 1000;
pub const QUATERNION_SAMPLES: usize = 10_000;

/// Criterion's parameter name for a GMM shape.
pub fn gmm_parameter((d, k): (usize, usize)) -> String {
    format!("d{d}-k{k}")
}

/// Every benchmark of the suite, as rows of the summary.
pub fn rows() -> Vec<Row> {
    let row = |group: &str, parameter: String, label: String| Row {
        group: group.to_string(),
        parameter,
        label,
        per: 1.0,
    };
    let mut rows = Vec::new();
    for n in TAYLOR_ITERATIONS {
        rows.push(row(
            "taylor",
            n.to_string(),
            format!("Taylor 1/x, {n} terms"),
        ));
    }
    for n in ROSENBROCK_DIMENSIONS {
        rows.push(row(
            "rosenbrock",
            n.to_string(),
            format!("Rosenbrock, n = {n}"),
        ));
    }
    for shape in GMM_SHAPES {
        rows.push(row(
            "gmm",
            gmm_parameter(shape),
            format!("GMM, d = {}, k = {}, n = {GMM_POINTS}", shape.0, shape.1),
        ));
    }
    rows.push(row(
        "quaternion",
        QUATERNION_SAMPLES.to_string(),
        format!("quaternion rotation × {QUATERNION_SAMPLES}"),
    ));
    rows.push(row(
        "branches",
        branches::ITERATIONS.to_string(),
        format!("loop with branches, {} iterations", branches::ITERATIONS),
    ));
    rows.push(row(
        "call",
        "xy".to_string(),
        "one product x·y (per-call overhead)".to_string(),
    ));
    rows
}

/// Prints the suite's tables from criterion's latest results: median times
/// (µs) and the ratios, then the same ratios as Markdown.
pub fn print_summary() {
    let mut rows = rows();
    for row in &mut rows {
        row.per = 1000.0; // ns → µs
    }
    report::print_table(
        "deltad benchmark suite",
        "call in µs",
        &rows,
        &FUNCTIONS,
        &RATIOS,
    );
    println!();
    println!("{}", report::markdown_ratios(&rows, &FUNCTIONS, &RATIOS));
    print_memory();
}

/// Bytes the gradient's forward pass keeps for the adjoint per primal
/// floating-point operation (counted from the code as written), on the
/// compiled path, and the bytes the tape engine holds at the end of its
/// recording pass for the same function. Deterministic: no timing.
pub fn print_memory() {
    println!("== bytes kept per primal floating-point operation ==");
    println!(
        "{:>40} {:>14} {:>16} {:>14} {:>16}",
        "benchmark", "primal flops", "compiled bytes", "bytes/flop", "tape bytes"
    );
    for n in TAYLOR_ITERATIONS {
        // Per iteration: x - 1, the negation, the product and the sum.
        let flops = 4 * n;
        let kept = taylor::taylor::tape_stats(0.5, n).bytes_used;
        let tape = taylor::taylor_tape::tape_stats(0.5, n).bytes_used;
        println!(
            "{:>40} {flops:>14} {kept:>16} {:>14.2} {tape:>16}",
            format!("Taylor 1/x, {n} terms"),
            kept as f64 / flops as f64
        );
    }
    for (d, k) in GMM_SHAPES {
        let p = gmm::problem(d, k, GMM_POINTS);
        let flops = gmm::primal_flops(d, k, GMM_POINTS);
        let kept = gmm::objective::tape_stats(&p.alpha, &p.mu, &p.q, &p.l, &p.x, p.gamma, p.m, p.d)
            .bytes_used;
        // On the tape, #[preaccumulate] keeps one point at a time.
        let tape =
            gmm::objective_tape::tape_stats(&p.alpha, &p.mu, &p.q, &p.l, &p.x, p.gamma, p.m, p.d)
                .bytes_used;
        println!(
            "{:>40} {flops:>14} {kept:>16} {:>14.2} {tape:>16}",
            format!("GMM, d = {d}, k = {k}, n = {GMM_POINTS}"),
            kept as f64 / flops as f64
        );
    }
}

/// Asserts two gradients agree to `tolerance` relative to max(1, |hand|).
#[track_caller]
pub fn assert_gradient(what: &str, got: &[f64], hand: &[f64], tolerance: f64) {
    assert_eq!(got.len(), hand.len(), "{what}: lengths differ");
    for (i, (a, b)) in got.iter().zip(hand).enumerate() {
        assert!(
            (a - b).abs() <= tolerance * b.abs().max(1.0),
            "{what}[{i}]: {a} vs hand-written {b}"
        );
    }
}
