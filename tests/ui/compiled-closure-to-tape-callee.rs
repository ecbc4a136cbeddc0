use deltad::differentiate;

#[differentiate(tape)]
fn integrate<F: Fn(f64) -> f64>(f: F, a: f64, b: f64, n: usize) -> f64 {
    let h = (b - a) / n as f64;
    let mut total = 0.0;
    for i in 0..n {
        total += f(a + (i as f64 + 0.5) * h);
    }
    total * h
}

// A function on the compiled path passes closures only to functions that
// took the compiled path too.
#[differentiate(compiled)]
fn mass(k: f64, upper: f64) -> f64 {
    integrate(|t: f64| (-k * t * t).exp(), 0.0, upper, 200)
}

fn main() {}
