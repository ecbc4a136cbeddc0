use deltad::differentiate;

fn pick(i: usize) -> usize {
    i / 2
}

// The factor is the value of an `if` the macro names itself: it changes at
// every iteration, and nothing says its type, so the adjoint cannot keep it.
#[differentiate(compiled)]
fn sum_picked(x: &[f64], n: usize) -> f64 {
    let mut s: f64 = 0.0;
    for i in 0..n {
        s += (if i > 2 { pick(i) } else { 0 }) as f64 * x[i] * s.sin();
    }
    s
}

fn main() {}
