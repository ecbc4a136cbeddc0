use deltad::differentiate;

// No sum: the loop writes a differentiated variable, but nothing would
// carry the iterations' contributions (on the tape; the compiled path
// differentiates the loop as it is).
#[differentiate(tape)]
#[allow(unused_assignments)]
fn no_sum(w: &[f64]) -> f64 {
    let mut scratch = 0.0;
    #[preaccumulate]
    for i in 0..w.len() {
        scratch = w[i] * 2.0;
        println!("{scratch}");
    }
    w[0]
}

// A value carried from one iteration to the next.
#[differentiate]
fn carried(w: &[f64]) -> f64 {
    let mut last = 0.0;
    let mut total = 0.0;
    #[preaccumulate]
    for i in 0..w.len() {
        last = w[i] * 2.0 + last;
        total += last;
    }
    total + last
}

// A scratch buffer read after the loop.
#[differentiate]
fn used_after(w: &[f64]) -> f64 {
    let mut buffer = vec![0.0; 2];
    let mut total = 0.0;
    #[preaccumulate]
    for i in 0..w.len() {
        buffer[i % 2] = w[i].sin();
        total += buffer[i % 2];
    }
    total + buffer[0]
}

// The loop writes a `&mut` parameter, whose contents are results.
#[differentiate]
fn writes_parameter(w: &[f64], out: &mut [f64]) -> f64 {
    let mut total = 0.0;
    #[preaccumulate]
    for i in 0..w.len() {
        out[i] = w[i] * 3.0;
        total += out[i];
    }
    total
}

// An early exit.
#[differentiate]
fn returns_early(w: &[f64]) -> f64 {
    let mut total = 0.0;
    #[preaccumulate]
    for i in 0..w.len() {
        if w[i] > 10.0 {
            return w[i];
        }
        total += w[i] * w[i];
    }
    total
}

// Not a `for` loop.
#[differentiate]
fn on_a_while_loop(w: &[f64]) -> f64 {
    let mut total = 0.0;
    let mut i = 0;
    #[preaccumulate]
    while i < w.len() {
        total += w[i];
        i += 1;
    }
    total
}

fn main() {}
