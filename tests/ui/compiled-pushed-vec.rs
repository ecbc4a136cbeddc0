use deltad::differentiate;

// A `Vec` built by pushing takes the compiled path when one loop pushes an
// element in every iteration; here some iterations push none.
#[differentiate(compiled)]
fn f(x: &[f64]) -> f64 {
    let mut kept = Vec::new();
    for i in 0..x.len() {
        if x[i] < 0.0 {
            continue;
        }
        kept.push(2.0 * x[i]);
    }
    kept.iter().sum()
}

fn main() {}
