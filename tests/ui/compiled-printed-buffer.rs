use deltad::differentiate;

// A buffer a format string prints inline is read as a buffer passed as an
// argument is.
#[differentiate(compiled)]
fn f(x: &[f64]) -> f64 {
    let mut r = vec![0.0; x.len()];
    for i in 0..x.len() {
        r[i] = 2.0 * x[i];
    }
    println!("{r:?}");
    r[0]
}

fn main() {}
