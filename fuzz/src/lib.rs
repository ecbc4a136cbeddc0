//! Differential testing of deltad on random programs.
//!
//! `generate` draws programs from the language `#[differentiate]` supports,
//! `emit` prints them with a checking harness, `batch` compiles a batch of
//! them as one crate and runs it (gradients against finite differences,
//! forward mode against reverse mode by the dot-product identity, values
//! against the plain function), and `shrink` reduces a failing program to a
//! small reproducer. `cargo run -p deltad-fuzz --release -- --help` for the
//! command line.

pub mod ast;
pub mod batch;
pub mod emit;
pub mod generate;
pub mod rng;
pub mod shrink;
pub mod validate;

use batch::{BatchReport, Status};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A fuzzing run.
#[derive(Clone, Debug)]
pub struct Config {
    pub seed: u64,
    pub programs: usize,
    /// Programs per generated crate (one compile each).
    pub batch: usize,
    /// Random points per program.
    pub points: usize,
    /// Shrink failing programs and write reproducers.
    pub shrink: bool,
    /// Directory name under `target/fuzz-programs/`.
    pub dir: String,
    /// Check only the program with this program seed (as printed with each
    /// failure), instead of `programs` programs from `seed`.
    pub replay: Option<u64>,
}

/// The seed of program `index` of a run seeded `seed`.
pub fn program_seed(seed: u64, index: usize) -> u64 {
    rng::Rng::new(seed ^ (index as u64).wrapping_mul(0xA24B_AED4_963E_E407)).next_u64()
}

/// A failing program.
#[derive(Clone, Debug)]
pub struct Failure {
    pub name: String,
    pub seed: u64,
    pub status: Status,
    /// The reproducer file, when shrunk.
    pub reproducer: Option<PathBuf>,
}

#[derive(Debug, Default)]
pub struct Summary {
    pub generated: usize,
    pub compiled: usize,
    /// Programs that ran with every check passing.
    pub passed: usize,
    pub points: usize,
    pub checked: usize,
    pub skipped_fd: usize,
    pub skipped_range: usize,
    pub components: usize,
    pub components_skipped: usize,
    /// Programs whose entry function took the compiled path.
    pub compiled_path: usize,
    pub failures: Vec<Failure>,
    pub builds: usize,
    pub compile_time: Duration,
    pub run_time: Duration,
    pub wall_time: Duration,
}

/// Where generated crates are written.
pub fn programs_dir() -> PathBuf {
    batch::workspace_root().join("target").join("fuzz-programs")
}

/// Generates, compiles and checks `config.programs` programs.
pub fn run(config: &Config, log: &mut dyn FnMut(&str)) -> std::io::Result<Summary> {
    let start = Instant::now();
    let mut summary = Summary::default();
    let dir = programs_dir().join(&config.dir);
    let mut index = 0;
    while index < config.programs {
        let n = config.batch.min(config.programs - index);
        let programs: Vec<ast::Program> = match config.replay {
            Some(seed) => vec![generate::program("replay", seed)],
            None => (index..index + n)
                .map(|i| generate::program(&format!("p{i}"), program_seed(config.seed, i)))
                .collect(),
        };
        let n = programs.len();
        let report = batch::run(&dir, &programs, config.points)?;
        add(&mut summary, &report);
        log(&format!(
            "programs {}..{}: compiled in {:.1?} ({} build{}), ran in {:.1?}, {} failing so far; \
             so far {} compiled ({} on the compiled path), {} points, {} fully checked, {} skipped (finite differences), \
             {} out of range",
            index,
            index + n,
            report.compile_time,
            report.builds,
            if report.builds == 1 { "" } else { "s" },
            report.run_time,
            summary.failures.len() + failures_of(&report).len(),
            summary.compiled,
            summary.compiled_path,
            summary.points,
            summary.checked,
            summary.skipped_fd,
            summary.skipped_range,
        ));
        if let Some(e) = &report.unattributed_error {
            log(&format!("build error not attributed to a program:\n{e}"));
        }
        for (program, status) in failures_of(&report) {
            let p = programs
                .iter()
                .find(|p| p.name == program)
                .expect("a program of this batch");
            log(&format!(
                "FAILURE {} (seed {}): {:?}",
                p.name, p.seed, status
            ));
            let reproducer = if config.shrink {
                let shrunk = shrink::shrink(p, &status, config.points, log)?;
                Some(shrink::write_reproducer(&shrunk, &status)?)
            } else {
                None
            };
            if let Some(r) = &reproducer {
                log(&format!("  reproducer: {}", r.display()));
            }
            summary.failures.push(Failure {
                name: p.name.clone(),
                seed: p.seed,
                status,
                reproducer,
            });
        }
        index += n;
        if config.replay.is_some() {
            break;
        }
    }
    summary.generated = index;
    summary.wall_time = start.elapsed();
    Ok(summary)
}

fn failures_of(report: &BatchReport) -> Vec<(String, Status)> {
    report
        .results
        .iter()
        .filter(|r| r.status.is_failure())
        .map(|r| (r.name.clone(), r.status.clone()))
        .collect()
}

fn add(summary: &mut Summary, report: &BatchReport) {
    summary.builds += report.builds;
    summary.compile_time += report.compile_time;
    summary.run_time += report.run_time;
    for r in &report.results {
        if !matches!(r.status, Status::CompileError(_)) {
            summary.compiled += 1;
        }
        if r.status == Status::Passed {
            summary.passed += 1;
        }
        let c = &r.counts;
        summary.points += c.points;
        summary.checked += c.checked;
        summary.skipped_fd += c.skipped_fd;
        summary.skipped_range += c.skipped_range;
        summary.components += c.components;
        summary.components_skipped += c.components_skipped;
        summary.compiled_path += c.compiled_path;
    }
}

impl Summary {
    pub fn report(&self) -> String {
        format!(
            "programs generated {}, compiled {}, passed every check {}, failing {}\n\
             entry functions on the compiled path {} (the rest on the tape)\n\
             points {}: fully checked {}, partly skipped (untrustworthy finite difference) {}, \
             out of range {}\n\
             gradient components compared {}, skipped {}\n\
             builds {}, compile time {:.1?}, run time {:.1?}, wall time {:.1?}",
            self.generated,
            self.compiled,
            self.passed,
            self.failures.len(),
            self.compiled_path,
            self.points,
            self.checked,
            self.skipped_fd,
            self.skipped_range,
            self.components,
            self.components_skipped,
            self.builds,
            self.compile_time,
            self.run_time,
            self.wall_time
        )
    }
}
