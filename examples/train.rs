//! Training a small neural network with gradients from `#[differentiate]`:
//! a 2-8-1 perceptron (tanh hidden layer, logistic output) classifies a
//! generated, seeded "two moons" data set by full-batch gradient descent with
//! momentum. The gradient is checked against central finite differences
//! before training; a progress bar shows the loss; the loss curve is drawn
//! to `target/train/loss.png` and the learned decision regions with the data
//! to `target/train/decision.png`.
//!
//! Run with `cargo run --release --example train` (`-- --quick` for a few
//! epochs, as CI does).

use std::path::Path;

use deltad::differentiate;
use indicatif::{ProgressBar, ProgressStyle};
use plotters::prelude::*;

const HIDDEN: usize = 8;
/// Parameters, in one slice: hidden weights (2 per unit), hidden biases,
/// output weights, output bias.
const PARAMS: usize = 4 * HIDDEN + 1;

/// The network's output before the logistic function, for one point.
fn logit(p: &[f64], x0: f64, x1: f64) -> f64 {
    let mut z = p[4 * HIDDEN];
    for h in 0..HIDDEN {
        let a = (p[2 * h] * x0 + p[2 * h + 1] * x1 + p[2 * HIDDEN + h]).tanh();
        z += p[3 * HIDDEN + h] * a;
    }
    z
}

/// The mean logistic loss log(1 + exp(-y z)) over the data set (labels
/// y = ±1), written stably as max(t, 0) + log(1 + exp(-|t|)), t = -y z.
#[differentiate]
fn loss(p: &[f64], #[no_grad] xs: &[f64], #[no_grad] ys: &[f64]) -> f64 {
    let mut total = 0.0;
    for s in 0..ys.len() {
        let (x0, x1) = (xs[2 * s], xs[2 * s + 1]);
        let mut z = p[4 * HIDDEN];
        for h in 0..HIDDEN {
            let a = (p[2 * h] * x0 + p[2 * h + 1] * x1 + p[2 * HIDDEN + h]).tanh();
            z += p[3 * HIDDEN + h] * a;
        }
        let t = -ys[s] * z;
        total += t.max(0.0) + (-t.abs()).exp().ln_1p();
    }
    total / ys.len() as f64
}

/// SplitMix64: a seeded generator, so every run sees the same data.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f64 {
        let u = 1.0 - self.uniform();
        let v = self.uniform();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// Two interleaving half circles with Gaussian noise: points (x0, x1)
/// flattened into `xs`, labels ±1 in `ys`.
fn two_moons(per_class: usize, noise: f64, rng: &mut Rng) -> (Vec<f64>, Vec<f64>) {
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for class in [1.0, -1.0] {
        for _ in 0..per_class {
            let angle = std::f64::consts::PI * rng.uniform();
            let (x0, x1) = if class > 0.0 {
                (angle.cos(), angle.sin())
            } else {
                (1.0 - angle.cos(), 0.5 - angle.sin())
            };
            xs.push(x0 + noise * rng.normal());
            xs.push(x1 + noise * rng.normal());
            ys.push(class);
        }
    }
    (xs, ys)
}

/// Checks the gradient at `p` against central finite differences.
fn check_gradient(p: &[f64], xs: &[f64], ys: &[f64]) -> f64 {
    let g = loss::grad(p, xs, ys).p;
    let mut worst: f64 = 0.0;
    let mut q = p.to_vec();
    for i in 0..p.len() {
        // h = 1e-6 (parameters are O(1)): truncation O(h²) and rounding
        // O(ε/h) errors near 1e-10, far below the 1e-6 tolerance.
        let h = 1e-6;
        q[i] = p[i] + h;
        let up = loss(&q, xs, ys);
        q[i] = p[i] - h;
        let down = loss(&q, xs, ys);
        q[i] = p[i];
        let fd = (up - down) / (2.0 * h);
        worst = worst.max((g[i] - fd).abs() / fd.abs().max(1e-3));
    }
    worst
}

fn accuracy(p: &[f64], xs: &[f64], ys: &[f64]) -> f64 {
    let right = ys
        .iter()
        .enumerate()
        .filter(|&(s, &y)| logit(p, xs[2 * s], xs[2 * s + 1]) * y > 0.0)
        .count();
    right as f64 / ys.len() as f64
}

/// Registers a font for the plots' text if the system has one. plotters is
/// built with its pure-Rust `ab_glyph` text rendering (no system font
/// library needed to build); without a font file the plots have no text.
fn register_font() -> bool {
    let candidates = [
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/TTF/DejaVuSans.ttf",
        "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
        "/System/Library/Fonts/Supplemental/Arial.ttf",
        "/Library/Fonts/Arial.ttf",
    ];
    for path in candidates {
        if let Ok(bytes) = std::fs::read(path) {
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                return true;
            }
        }
    }
    false
}

type PlotResult = Result<(), Box<dyn std::error::Error>>;

fn plot_loss(path: &Path, losses: &[f64], text: bool) -> PlotResult {
    let root = BitMapBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let (lo, hi) = losses.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &l| {
        (lo.min(l), hi.max(l))
    });
    let mut builder = ChartBuilder::on(&root);
    builder.margin(20);
    if text {
        builder
            .caption(
                "training loss (mean logistic loss, log scale)",
                ("sans-serif", 22),
            )
            .x_label_area_size(40)
            .y_label_area_size(60);
    }
    let mut chart =
        builder.build_cartesian_2d(0f64..losses.len() as f64, (lo * 0.8..hi * 1.2).log_scale())?;
    let mut mesh = chart.configure_mesh();
    if text {
        mesh.x_desc("epoch")
            .y_desc("loss")
            .x_label_formatter(&|epoch| format!("{epoch:.0}"));
    } else {
        mesh.x_labels(0).y_labels(0);
    }
    mesh.draw()?;
    chart.draw_series(LineSeries::new(
        losses.iter().enumerate().map(|(i, &l)| (i as f64, l)),
        BLUE.stroke_width(2),
    ))?;
    root.present()?;
    Ok(())
}

fn plot_decision(path: &Path, p: &[f64], xs: &[f64], ys: &[f64], text: bool) -> PlotResult {
    let root = BitMapBackend::new(path, (600, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let (x_range, y_range) = (-1.5f64..2.5f64, -1.0f64..1.5f64);
    let mut builder = ChartBuilder::on(&root);
    builder.margin(20);
    if text {
        builder
            .caption("decision regions and data", ("sans-serif", 22))
            .x_label_area_size(30)
            .y_label_area_size(40);
    }
    let mut chart = builder.build_cartesian_2d(x_range.clone(), y_range.clone())?;
    let mut mesh = chart.configure_mesh();
    if !text {
        mesh.x_labels(0).y_labels(0);
    }
    mesh.disable_mesh().draw()?;
    let cells = 120;
    let (dx, dy) = (
        (x_range.end - x_range.start) / cells as f64,
        (y_range.end - y_range.start) / cells as f64,
    );
    chart.draw_series((0..cells * cells).map(|k| {
        let (i, j) = (k % cells, k / cells);
        let x0 = x_range.start + i as f64 * dx;
        let x1 = y_range.start + j as f64 * dy;
        let positive = logit(p, x0 + dx / 2.0, x1 + dy / 2.0) > 0.0;
        let colour = if positive {
            RGBColor(198, 219, 239)
        } else {
            RGBColor(253, 208, 162)
        };
        Rectangle::new([(x0, x1), (x0 + dx, x1 + dy)], colour.filled())
    }))?;
    chart.draw_series(ys.iter().enumerate().map(|(s, &y)| {
        let colour = if y > 0.0 { BLUE } else { RED };
        Circle::new((xs[2 * s], xs[2 * s + 1]), 3, colour.filled())
    }))?;
    root.present()?;
    Ok(())
}

fn main() -> PlotResult {
    let quick = std::env::args().any(|a| a == "--quick");
    let epochs = if quick { 60 } else { 3000 };
    let mut rng = Rng(2024);
    let (xs, ys) = two_moons(200, 0.12, &mut rng);
    let mut p: Vec<f64> = (0..PARAMS).map(|_| rng.normal() * 0.8).collect();

    let worst = check_gradient(&p, &xs, &ys);
    println!(
        "gradient vs central finite differences: worst relative error {worst:.1e} over {PARAMS} parameters"
    );
    assert!(
        worst < 1e-6,
        "the gradient disagrees with finite differences"
    );

    let bar = ProgressBar::new(epochs as u64);
    bar.set_style(ProgressStyle::with_template(
        "{bar:40.cyan/blue} {pos:>5}/{len} epochs  {msg}",
    )?);
    let (rate, momentum) = (0.5, 0.9);
    let mut velocity = vec![0.0; PARAMS];
    let mut losses = Vec::with_capacity(epochs);
    for epoch in 0..epochs {
        let (value, g) = loss::value_and_grad(&p, &xs, &ys);
        losses.push(value);
        for ((v, pi), gi) in velocity.iter_mut().zip(p.iter_mut()).zip(&g.p) {
            *v = momentum * *v - rate * gi;
            *pi += *v;
        }
        if epoch % 20 == 0 {
            bar.set_message(format!("loss {value:.5}"));
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let last = *losses.last().expect("at least one epoch");
    let accuracy = accuracy(&p, &xs, &ys);
    println!(
        "{epochs} epochs: loss {:.4} → {last:.4}, training accuracy {:.1}%",
        losses[0],
        100.0 * accuracy
    );
    assert!(last < losses[0], "training did not lower the loss");
    if !quick {
        assert!(accuracy > 0.95, "the network did not learn the two moons");
    }

    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/train");
    std::fs::create_dir_all(&out)?;
    let text = register_font();
    if !text {
        println!("(no font file found: the plots are drawn without text)");
    }
    let loss_png = out.join("loss.png");
    plot_loss(&loss_png, &losses, text)?;
    println!("wrote {}", loss_png.display());
    let decision_png = out.join("decision.png");
    plot_decision(&decision_png, &p, &xs, &ys, text)?;
    println!("wrote {}", decision_png.display());
    Ok(())
}
