use deltad::{differentiate, Differentiable};

#[derive(Differentiable, Clone, Copy)]
struct Spring {
    k: f64,
    #[no_grad]
    rest: f64,
}

#[differentiate]
fn energy(s: &Spring, x: f64) -> f64 {
    s.k * (x - s.rest).powi(2)
}

// `rest` takes no derivative: a value depending on `x` cannot go there
// (it would lose its derivative).
#[differentiate]
fn stretched(x: f64) -> f64 {
    let s = Spring { k: 2.0, rest: x * 0.5 };
    energy(&s, x)
}

fn main() {}
