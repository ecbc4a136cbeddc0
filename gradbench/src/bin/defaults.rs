//! Runs every eval on inputs of GradBench's default sizes (generated here
//! with a fixed seed; GradBench's own data comes from numpy, ADBench's data
//! files for ba and ht) through the tool's protocol, and prints the mean
//! time per run of the primal and of the derivative, and their ratio.
//!     cargo run --release -p deltad-gradbench --bin defaults [eval or workload ...] [--quick]
//! `--quick` keeps the smaller workloads of each eval; `ht hand12_t26_c100000`
//! names evals and single workloads.

use deltad_gradbench::protocol;
use serde_json::{json, Value};

/// SplitMix64: uniform numbers in [0, 1) and standard normals.
struct Random(u64);

impl Random {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform().max(1e-300), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
    fn uniforms(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.uniform()).collect()
    }
    fn normals(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.normal()).collect()
    }
    fn rows(&mut self, rows: usize, columns: usize, normal: bool) -> Value {
        let rows: Vec<Vec<f64>> = (0..rows)
            .map(|_| {
                if normal {
                    self.normals(columns)
                } else {
                    self.uniforms(columns)
                }
            })
            .collect();
        Value::from(rows)
    }
}

/// One workload: a description, the functions (primal first) and the input.
struct Workload {
    eval: &'static str,
    description: String,
    functions: [&'static str; 2],
    input: Value,
}

fn runs(mut input: Value) -> Value {
    input["min_runs"] = json!(1);
    input["min_seconds"] = json!(0.5);
    input
}

fn workloads(quick: bool) -> Vec<Workload> {
    let mut rng = Random(31337);
    let mut all = Vec::new();
    let mut push = |eval, description: String, functions, input| {
        all.push(Workload {
            eval,
            description,
            functions,
            input: runs(input),
        })
    };
    let pick = |sizes: &[usize]| -> Vec<usize> {
        if quick {
            sizes[..sizes.len().min(2)].to_vec()
        } else {
            sizes.to_vec()
        }
    };
    for n in pick(&[
        2500, 5000, 10000, 20000, 40000, 80000, 160000, 320000, 640000, 1280000,
    ]) {
        push(
            "lse",
            format!("n={n}"),
            ["primal", "gradient"],
            json!({"x": rng.uniforms(n)}),
        );
    }
    for n in pick(&[16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8196, 16392]) {
        push(
            "llsq",
            format!("n={n},m=128"),
            ["primal", "gradient"],
            json!({"x": rng.uniforms(128), "n": n}),
        );
    }
    for ell in pick(&[5, 6, 7, 8, 9, 10, 11]) {
        push(
            "det",
            format!("{ell}"),
            ["primal", "gradient"],
            json!({"A": rng.uniforms(ell * ell), "ell": ell}),
        );
    }
    let mut shapes: Vec<(usize, usize)> = [2, 10, 20, 32, 64]
        .iter()
        .flat_map(|&d| [5, 10, 25, 50, 100].map(move |k| (d, k)))
        .collect();
    shapes.sort_by_key(|&(d, k)| d * k);
    if quick {
        shapes.truncate(3);
    }
    for (d, k) in shapes {
        let n = 1000;
        let tri = d * (d - 1) / 2;
        push(
            "gmm",
            format!("{d}_{k}_{n}"),
            ["objective", "jacobian"],
            json!({
                "d": d, "k": k, "n": n, "m": 0, "gamma": 1.0,
                "x": rng.rows(n, d, true), "mu": rng.rows(k, d, false), "q": rng.rows(k, d, true),
                "l": rng.rows(k, tri, true), "alpha": rng.normals(k),
            }),
        );
    }
    let mut kmeans: Vec<(usize, usize, usize)> = [10, 100, 1000]
        .iter()
        .flat_map(|&k| {
            [1000, 10000]
                .iter()
                .flat_map(move |&n| [8, 16].map(move |d| (k, n, d)))
        })
        .collect();
    kmeans.sort_by_key(|&(k, n, d)| k * n * d);
    if quick {
        kmeans.truncate(2);
    }
    for (k, n, d) in kmeans {
        let points: Vec<Vec<f64>> = (0..n).map(|_| rng.uniforms(d)).collect();
        let centroids = points[n - k..].to_vec();
        push(
            "kmeans",
            format!("k={k},n={n},d={d}"),
            ["cost", "dir"],
            json!({"points": points, "centroids": centroids}),
        );
    }
    let mut odes: Vec<(usize, usize)> = [1000, 10000, 100000]
        .iter()
        .flat_map(|&n| [1, 10, 100].map(move |s| (n, s)))
        .collect();
    odes.sort_by_key(|&(n, s)| n * s);
    if quick {
        odes.truncate(2);
    }
    for (n, s) in odes {
        push(
            "ode",
            format!("n={n},s={s}"),
            ["primal", "gradient"],
            json!({"x": rng.uniforms(n), "s": s}),
        );
    }
    let mut lstms: Vec<(usize, usize)> = [2, 4, 6]
        .iter()
        .flat_map(|&l| [1024, 4096, 8192].map(move |c| (l, c)))
        .collect();
    lstms.sort_by_key(|&(l, c)| l * c);
    if quick {
        lstms.truncate(2);
    }
    for (l, c) in lstms {
        let b = 14;
        let sequence: Vec<Vec<f64>> = (0..c)
            .map(|_| (0..b).map(|_| (rng.uniform() < 0.5) as u8 as f64).collect())
            .collect();
        push(
            "lstm",
            format!("l={l},c={c}"),
            ["objective", "jacobian"],
            json!({"main_params": rng.rows(2 * l, 4 * b, false), "extra_params": rng.rows(3, b, false), "state": rng.rows(2 * l, b, false), "sequence": sequence}),
        );
    }
    let ba_sizes = [
        (49, 7776, 31843),
        (21, 11315, 36455),
        (161, 48126, 182072),
        (372, 47423, 204472),
        (257, 65132, 225911),
        (539, 65220, 277273),
        (93, 61203, 287451),
        (88, 64298, 383937),
        (810, 88814, 393775),
        (1197, 126327, 563734),
        (1723, 156502, 678718),
        (253, 163691, 899155),
        (245, 198739, 1091386),
        (356, 226730, 1255268),
    ];
    let ba_count = if quick { 2 } else { ba_sizes.len() };
    for (i, &(n, m, p)) in ba_sizes.iter().enumerate().take(ba_count) {
        let cam: Vec<f64> = (0..11)
            .map(|j| {
                [
                    0.01, -0.02, 0.015, 0.1, 0.2, -5.0, 500.0, 0.0, 0.0, 1e-7, -1e-13,
                ][j] * (1.0 + 0.1 * rng.normal())
            })
            .collect();
        push(
            "ba",
            format!("ba{}_n{n}_m{m}_p{p}", i + 1),
            ["objective", "jacobian"],
            json!({"n": n, "m": m, "p": p, "cam": cam, "x": [rng.normal(), rng.normal(), 3.0 + rng.uniform()], "w": 0.5 + rng.uniform(), "feat": [rng.normal(), rng.normal()]}),
        );
    }
    let hand_sizes = [
        100, 192, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200, 100000,
    ];
    let model = synthetic_hand(&mut rng, 544);
    let hand_count = if quick { 2 } else { hand_sizes.len() };
    for (i, &n) in hand_sizes.iter().enumerate().take(hand_count) {
        let triangles = model["triangles"].as_array().unwrap().len();
        let correspondences: Vec<usize> = (0..n)
            .map(|_| (rng.next_u64() % triangles as u64) as usize)
            .collect();
        let us: Vec<Vec<f64>> = (0..n)
            .map(|_| {
                let u = rng.uniform() * 0.5;
                vec![u, rng.uniform() * 0.5]
            })
            .collect();
        let theta: Vec<f64> = (0..26).map(|_| 0.2 * rng.normal()).collect();
        push(
            "ht",
            format!("hand{}_t26_c{n}", i + 1),
            ["objective", "jacobian"],
            json!({"theta": theta, "us": us, "data": {"correspondences": correspondences, "points": rng.rows(n, 3, true), "model": model}}),
        );
    }
    push(
        "saddle",
        "w=0".into(),
        ["rr", "ff"],
        json!({"start": [1.0, 1.0]}),
    );
    push(
        "saddle",
        "w=0".into(),
        ["fr", "rf"],
        json!({"start": [1.0, 1.0]}),
    );
    push("particle", "w=0".into(), ["rr", "ff"], json!({"w": 0.0}));
    push("particle", "w=0".into(), ["fr", "rf"], json!({"w": 0.0}));
    all
}

/// A hand-like model: 22 bones (wrist, 5 fingers of 4, forearm), `vertices`
/// vertices skinned to 2–3 bones each, a strip of triangles.
fn synthetic_hand(rng: &mut Random, vertices: usize) -> Value {
    let bones = 22usize;
    let parents: Vec<i64> = (0..bones as i64)
        .map(|b| {
            if b == 0 {
                -1
            } else if b == 21 || (b - 1) % 4 == 0 {
                0
            } else {
                b - 1
            }
        })
        .collect();
    let translation = |x: f64, y: f64, z: f64| {
        vec![
            vec![1.0, 0.0, 0.0, x],
            vec![0.0, 1.0, 0.0, y],
            vec![0.0, 0.0, 1.0, z],
            vec![0.0, 0.0, 0.0, 1.0],
        ]
    };
    let relatives: Vec<Vec<Vec<f64>>> = (0..bones)
        .map(|b| translation(0.02 * (b % 5) as f64, 0.03, 0.001 * b as f64))
        .collect();
    // With pure translations, the inverse base absolute is minus the summed offsets.
    let mut offsets = vec![[0.0; 3]; bones];
    for b in 0..bones {
        let own = [0.02 * (b % 5) as f64, 0.03, 0.001 * b as f64];
        offsets[b] = match parents[b] {
            -1 => own,
            p => [
                offsets[p as usize][0] + own[0],
                offsets[p as usize][1] + own[1],
                offsets[p as usize][2] + own[2],
            ],
        };
    }
    let inverses: Vec<Vec<Vec<f64>>> = offsets
        .iter()
        .map(|o| translation(-o[0], -o[1], -o[2]))
        .collect();
    let positions: Vec<Vec<f64>> = (0..vertices)
        .map(|_| {
            vec![
                rng.normal() * 0.05,
                rng.normal() * 0.05,
                rng.normal() * 0.05,
                1.0,
            ]
        })
        .collect();
    let weights: Vec<Vec<f64>> = (0..vertices)
        .map(|v| {
            let mut row = vec![0.0; bones];
            row[v % bones] = 0.7;
            row[(v + 1) % bones] = 0.3;
            row
        })
        .collect();
    let triangles: Vec<[usize; 3]> = (0..vertices - 2).map(|t| [t, t + 1, t + 2]).collect();
    json!({
        "bone_count": bones, "bone_names": (0..bones).map(|b| format!("bone{b}")).collect::<Vec<_>>(),
        "parents": parents, "base_relatives": relatives, "inverse_base_absolutes": inverses,
        "base_positions": positions, "weights": weights, "triangles": triangles, "is_mirrored": false
    })
}

/// The mean evaluate time (seconds) of `function` on the workload's input.
fn time(workload: &Workload, function: &str) -> Result<f64, String> {
    let message = json!({"id": 1, "kind": "evaluate", "module": workload.eval, "function": function, "input": workload.input});
    let answer = protocol::answer(&message.to_string());
    if answer["success"] != true {
        return Err(answer["error"].to_string());
    }
    let timings = answer["timings"].as_array().ok_or("no timings")?;
    let total: u64 = timings
        .iter()
        .filter_map(|t| t["nanoseconds"].as_u64())
        .sum();
    Ok(total as f64 / timings.len() as f64 * 1e-9)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let wanted: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    println!("| eval | workload | primal | derivative | derivative / primal |");
    println!("|---|---|---:|---:|---:|");
    for workload in workloads(quick) {
        let named = |w: &&String| **w == workload.eval || **w == workload.description;
        if !wanted.is_empty() && !wanted.iter().any(named) {
            continue;
        }
        let [primal, derivative] = workload.functions;
        match (time(&workload, primal), time(&workload, derivative)) {
            (Ok(p), Ok(d)) => println!(
                "| {} | {} | {primal}: {} | {derivative}: {} | {:.2} |",
                workload.eval,
                workload.description,
                seconds(p),
                seconds(d),
                d / p
            ),
            (p, d) => println!(
                "| {} | {} | {p:?} | {d:?} | - |",
                workload.eval, workload.description
            ),
        }
    }
}

fn seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}
