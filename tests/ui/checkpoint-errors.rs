use deltad::differentiate;

#[differentiate]
fn step(x: f64) -> f64 {
    x * 0.5
}

// The tape checkpoints loops it records as a whole (the compiled path
// checkpoints any `for` loop):
//
// A call in the body: the loop is not straight-line arithmetic.
#[differentiate(tape)]
fn calls(x: f64, steps: usize) -> f64 {
    let mut s = x;
    #[checkpoint]
    for _ in 0..steps {
        s = step(s);
    }
    s
}

// Each iteration reads a different element: they would have to be kept.
#[differentiate(tape)]
fn elements(x: f64, w: &[f64], steps: usize) -> f64 {
    let mut s = x;
    #[checkpoint]
    for i in 0..steps {
        s += w[i] * s;
    }
    s
}

// A plain value changing in the loop: the re-run could not reproduce it.
#[differentiate]
fn counts(x: f64, steps: usize) -> f64 {
    let mut s = x;
    let mut count = 0;
    #[checkpoint]
    for _ in 0..steps {
        s *= 1.01;
        count += 1;
    }
    s + count as f64
}

// Only the call of a differentiated function can be checkpointed.
#[differentiate]
fn not_a_call(x: f64) -> f64 {
    #[checkpoint]
    let y = x * 2.0;
    y
}

fn main() {}
