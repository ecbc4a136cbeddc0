use deltad::differentiate;

#[differentiate(tape)]
fn integrate<F: Fn(f64) -> f64>(f: F, a: f64, b: f64) -> f64 {
    let h = (b - a) / 10.0;
    let mut total = 0.0;
    for i in 0..10 {
        total += f(a + h * (i as f64 + 0.5)) * h;
    }
    total
}

// A closure that calls the function's own function parameter is given to
// its callee on the compiled path only: here the callee took the tape.
#[differentiate]
fn along<F: Fn(f64) -> f64>(f: F, x: f64) -> f64 {
    integrate(|t: f64| f(x + t), 0.0, 1.0)
}

fn main() {}
