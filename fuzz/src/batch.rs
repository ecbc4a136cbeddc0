//! A batch of programs as one generated crate: written, compiled once, run.
//!
//! The crate lives under `target/fuzz-programs/<dir>` with its own
//! `[workspace]`, depends on deltad by absolute path, and builds in its own
//! target directory (`target/fuzz-target`), so it never waits for the main
//! target directory's lock. Programs whose module fails to compile are
//! reported as compile errors and left out of the next build.

use crate::ast::Program;
use crate::emit;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The workspace root (where deltad's Cargo.toml is).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("fuzz/ is inside the workspace")
        .to_path_buf()
}

/// What happened to one program.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    /// Every check passed at every point.
    Passed,
    /// The program's module did not compile (first error message).
    CompileError(String),
    /// A check failed (the first failure).
    Failed(String),
    /// The program panicked while running.
    Panicked(String),
    /// The batch binary did not report it (it crashed before).
    Missing,
}

impl Status {
    /// A short class name: failures of the same class are "the same failure"
    /// while shrinking.
    pub fn class(&self) -> String {
        match self {
            Status::Passed => "passed".into(),
            Status::CompileError(m) => format!("compile: {}", first_line(m)),
            Status::Failed(m) => format!("failed: {}", m.split(':').next().unwrap_or("")),
            Status::Panicked(_) => "panic".into(),
            Status::Missing => "missing".into(),
        }
    }

    pub fn is_failure(&self) -> bool {
        !matches!(self, Status::Passed)
    }
}

fn first_line(m: &str) -> &str {
    m.lines().next().unwrap_or("")
}

/// Counts from the checks of one program.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counts {
    pub points: usize,
    pub checked: usize,
    pub skipped_fd: usize,
    pub skipped_range: usize,
    pub components: usize,
    pub components_skipped: usize,
    /// 1 if the program's entry function took the compiled path.
    pub compiled_path: usize,
}

#[derive(Clone, Debug)]
pub struct ProgramResult {
    pub name: String,
    pub status: Status,
    pub counts: Counts,
}

#[derive(Debug)]
pub struct BatchReport {
    pub results: Vec<ProgramResult>,
    pub compile_time: Duration,
    pub run_time: Duration,
    /// Builds needed (1 when everything compiled).
    pub builds: usize,
    /// A build failure no program could be blamed for.
    pub unattributed_error: Option<String>,
}

const CARGO_TOML: &str = r#"[package]
name = "NAME"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
deltad = { path = "ROOT" }
# Every buffer of the compiled passes goes through the stack's spares (the
# programs' buffers are shorter than the length from which users' do).
deltad-runtime = { path = "ROOT/runtime", features = ["spare-every-buffer"] }

# Not part of deltad's workspace.
[workspace]

[profile.dev]
debug = false
incremental = false

# The macro expands every program: an optimised deltad-macros (and syn)
# expands several times faster than a debug one.
[profile.dev.build-override]
opt-level = 3
"#;

/// Writes, builds and runs `programs` as one crate in `dir`, checking each
/// at `points` points.
pub fn run(dir: &Path, programs: &[Program], points: usize) -> std::io::Result<BatchReport> {
    let root = workspace_root();
    let src = dir.join("src");
    if src.exists() {
        fs::remove_dir_all(&src)?;
    }
    fs::create_dir_all(&src)?;
    // One package (and binary) name per directory, so runs in different
    // directories can share the target directory.
    let package: String = format!(
        "fuzz-{}",
        dir.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    )
    .chars()
    .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
    .collect();
    fs::write(
        dir.join("Cargo.toml"),
        CARGO_TOML
            .replace("ROOT", &root.display().to_string())
            .replace("NAME", &package),
    )?;
    fs::write(src.join("check.rs"), include_str!("../template/check.rs"))?;
    for p in programs {
        fs::write(src.join(format!("{}.rs", p.name)), emit::program(p))?;
    }
    let mut excluded: BTreeMap<String, String> = BTreeMap::new();
    let mut compile_time = Duration::ZERO;
    let mut builds = 0;
    let mut unattributed_error = None;
    // `DELTAD_FUZZ_TARGET_DIR` gives a run its own target directory (a
    // replay next to a long run, which would otherwise wait for its lock).
    let target = std::env::var_os("DELTAD_FUZZ_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target").join("fuzz-target"));
    loop {
        let included: Vec<&Program> = programs
            .iter()
            .filter(|p| !excluded.contains_key(&p.name))
            .collect();
        fs::write(src.join("main.rs"), main_rs(&included, points))?;
        let start = Instant::now();
        let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .arg("build")
            .arg("--message-format")
            .arg("short")
            .arg("--manifest-path")
            .arg(dir.join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", &target)
            .output()?;
        compile_time += start.elapsed();
        builds += 1;
        if output.status.success() {
            break;
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        let errors = attribute_errors(&stderr);
        let fresh: Vec<(String, String)> = errors
            .into_iter()
            .filter(|(name, _)| {
                programs.iter().any(|p| &p.name == name) && !excluded.contains_key(name)
            })
            .collect();
        if fresh.is_empty() || builds >= 6 {
            unattributed_error = Some(stderr.chars().take(4000).collect());
            for p in &included {
                excluded
                    .entry(p.name.clone())
                    .or_insert_with(|| "build failed (unattributed)".into());
            }
            break;
        }
        for (name, message) in fresh {
            excluded.insert(name, message);
        }
        if excluded.len() == programs.len() {
            break;
        }
    }
    let mut results: Vec<ProgramResult> = Vec::new();
    let mut run_time = Duration::ZERO;
    if excluded.len() < programs.len() && unattributed_error.is_none() {
        let start = Instant::now();
        let output = Command::new(target.join("debug").join(&package)).output()?;
        run_time = start.elapsed();
        let stdout = String::from_utf8_lossy(&output.stdout);
        results = parse_output(&stdout);
    }
    let mut by_name: BTreeMap<String, ProgramResult> =
        results.into_iter().map(|r| (r.name.clone(), r)).collect();
    let results = programs
        .iter()
        .map(|p| {
            if let Some(m) = excluded.get(&p.name) {
                ProgramResult {
                    name: p.name.clone(),
                    status: Status::CompileError(m.clone()),
                    counts: Counts::default(),
                }
            } else {
                by_name.remove(&p.name).unwrap_or(ProgramResult {
                    name: p.name.clone(),
                    status: Status::Missing,
                    counts: Counts::default(),
                })
            }
        })
        .collect();
    Ok(BatchReport {
        results,
        compile_time,
        run_time,
        builds,
        unattributed_error,
    })
}

fn main_rs(programs: &[&Program], points: usize) -> String {
    let mut s = String::from("#![allow(unused)]\nmod check;\n");
    for p in programs {
        s.push_str(&format!("mod {};\n", p.name));
    }
    s.push_str(
        r#"
fn one(name: &str, seed: u64, points: usize, run: fn(u64, usize, &mut check::Outcome)) {
    let mut out = check::Outcome::default();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(seed, points, &mut out)));
    let clean = |m: &str| m.replace('\n', " | ").replace('\t', " ");
    match result {
        Err(e) => {
            let message = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            println!("PANIC\t{name}\t{}", clean(&message));
        }
        Ok(()) => {
            println!(
                "RESULT\t{name}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                out.points, out.checked, out.skipped_fd, out.skipped_range, out.components, out.components_skipped,
                usize::from(out.compiled)
            );
            if let Some(f) = out.failures.first() {
                println!("FAIL\t{name}\t{}", clean(f));
            }
        }
    }
}

fn main() {
    std::panic::set_hook(Box::new(|_| {}));
"#,
    );
    for p in programs {
        s.push_str(&format!(
            "    one(\"{0}\", {1}, {points}, {0}::run);\n",
            p.name, p.seed
        ));
    }
    s.push_str("}\n");
    s
}

/// `src/p17.rs:3:5: error...` lines → (program, first error message).
fn attribute_errors(stderr: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in stderr.lines() {
        let Some(rest) = line.strip_prefix("src/") else {
            continue;
        };
        let Some((file, after)) = rest.split_once(".rs:") else {
            continue;
        };
        if !after.contains("error") {
            continue;
        }
        let message = after
            .split_once("error")
            .map(|(_, m)| format!("error{m}"))
            .unwrap_or_default();
        if !out.iter().any(|(f, _)| f == file) {
            out.push((file.to_string(), message));
        }
    }
    out
}

fn parse_output(stdout: &str) -> Vec<ProgramResult> {
    let mut results: Vec<ProgramResult> = Vec::new();
    for line in stdout.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        match fields.as_slice() {
            ["RESULT", name, rest @ ..] if rest.len() == 7 => {
                let n: Vec<usize> = rest.iter().map(|v| v.parse().unwrap_or(0)).collect();
                results.push(ProgramResult {
                    name: name.to_string(),
                    status: Status::Passed,
                    counts: Counts {
                        points: n[0],
                        checked: n[1],
                        skipped_fd: n[2],
                        skipped_range: n[3],
                        components: n[4],
                        components_skipped: n[5],
                        compiled_path: n[6],
                    },
                });
            }
            ["FAIL", name, message] => {
                if let Some(r) = results.iter_mut().find(|r| r.name == *name) {
                    r.status = Status::Failed(message.to_string());
                }
            }
            ["PANIC", name, message] => results.push(ProgramResult {
                name: name.to_string(),
                status: Status::Panicked(message.to_string()),
                counts: Counts::default(),
            }),
            _ => {}
        }
    }
    results
}
