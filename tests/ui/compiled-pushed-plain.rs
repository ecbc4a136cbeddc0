use deltad::differentiate;

// A `Vec` built by pushing values that do not show they are reals (here
// integers: the function belongs on the tape).
#[differentiate(compiled)]
fn f(x: &[f64], n: usize) -> f64 {
    let mut counts = Vec::new();
    for i in 0..n {
        counts.push(i);
    }
    x[0] * counts.len() as f64
}

fn main() {}
