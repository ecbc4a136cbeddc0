//! Seeing the tape: records two small functions (a tiny network calling a
//! differentiated helper, and a loop recorded as a whole), prints their Delta
//! bindings, and writes each tape as Graphviz DOT to
//! `target/tape_graph/NAME.dot`. When the `dot` program is installed
//! (Debian/Ubuntu: `sudo apt-get install graphviz`; macOS: `brew install
//! graphviz`) it also renders `NAME.svg` and `NAME.png` next to it.
//!
//! Run with `cargo run --release --example tape_graph`.

use std::path::{Path, PathBuf};
use std::process::Command;

use deltad::{differentiate, TapeGraph};

/// The logistic function; its own recording pass is called from `net`.
#[differentiate]
fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// A two-unit network's squared error on one sample: each `sigmoid` call
/// records its own bindings, the arithmetic around them is fused.
#[differentiate]
fn net(w: &[f64], #[no_grad] x: &[f64], #[no_grad] y: f64) -> f64 {
    let h0 = sigmoid(w[0] * x[0] + w[1] * x[1]);
    let h1 = sigmoid(w[2] * x[0] + w[3] * x[1]);
    let e = w[4] * h0 + w[5] * h1 - y;
    e * e
}

/// A damped oscillator stepped 50 times: the loop is recorded as a whole
/// (one node reading x0, v0 and k, giving the two states after it).
#[differentiate]
fn oscillator(x0: f64, v0: f64, k: f64) -> f64 {
    let mut x = x0;
    let mut v = v0;
    for _ in 0..50 {
        let a = -k * x - 0.1 * v;
        x += 0.05 * v;
        v += 0.05 * a;
    }
    x * x + 0.5 * v * v
}

fn main() {
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tape_graph");
    std::fs::create_dir_all(&out).expect("create target/tape_graph");

    let w = [0.5, -1.0, 0.25, 0.8, 1.5, -0.7];
    let x = [1.0, 2.0];
    let net_graph = net::tape_graph(&w, &x, 0.3);
    // The graph's input adjoints are the gradient.
    let g = net::grad(&w, &x, 0.3);
    let adjoints: Vec<f64> = net_graph.inputs().filter_map(|n| n.adjoint).collect();
    assert_eq!(adjoints, g.w);

    let graphs = [
        ("net", net_graph),
        ("oscillator", oscillator::tape_graph(1.0, 0.0, 2.0)),
    ];
    let dot_installed = Command::new("dot").arg("-V").output().is_ok();
    for (name, graph) in &graphs {
        println!("{graph}");
        let dot_file = out.join(format!("{name}.dot"));
        graph.write_dot(&dot_file).expect("write the DOT file");
        println!("wrote {}", dot_file.display());
        if dot_installed {
            for format in ["svg", "png"] {
                let file = render(&dot_file, format);
                println!("wrote {}", file.display());
            }
        }
        println!();
    }
    show_edges(&graphs[0].1);
    if !dot_installed {
        println!(
            "The `dot` program (Graphviz) is not installed, so no SVG/PNG was drawn.\n\
             Install it with `sudo apt-get install graphviz` (Debian/Ubuntu) or\n\
             `brew install graphviz` (macOS), then run this example again, or draw\n\
             a file yourself: dot -Tsvg {0}/net.dot -o net.svg",
            out.display()
        );
    }
}

/// Runs `dot -T<format>` on `dot_file`; returns the file written.
fn render(dot_file: &Path, format: &str) -> PathBuf {
    let target = dot_file.with_extension(format);
    let status = Command::new("dot")
        .arg(format!("-T{format}"))
        .arg(dot_file)
        .arg("-o")
        .arg(&target)
        .status()
        .expect("run dot");
    assert!(
        status.success(),
        "dot -T{format} failed on {}",
        dot_file.display()
    );
    target
}

/// The dependencies of the output binding, read from the graph's API.
fn show_edges(graph: &TapeGraph) {
    let Some(output) = graph.outputs()[0] else {
        return;
    };
    println!("what the output of `{}` reads directly:", graph.function());
    for edge in graph.edges().iter().filter(|e| e.to == output) {
        let coefficient = edge.coefficient.unwrap_or(f64::NAN);
        println!("  ∂b{output}/∂b{} = {coefficient}", edge.from);
    }
}
