use deltad::differentiate;

#[differentiate]
fn integrate<F: FnMut(f64) -> f64>(mut f: F, a: f64, b: f64) -> f64 {
    let h = (b - a) / 10.0;
    let mut total = 0.0;
    for i in 0..10 {
        total += f(a + h * (i as f64 + 0.5)) * h;
    }
    total
}

// A closure given to a function on the compiled path is a function of its
// own taking the caller's variables as arguments: it cannot write them.
#[differentiate(compiled)]
fn counted(k: f64) -> f64 {
    let mut calls = 0.0;
    let v = integrate(
        |t: f64| {
            calls += 1.0;
            t * k
        },
        0.0,
        1.0,
    );
    v + calls
}

fn main() {}
