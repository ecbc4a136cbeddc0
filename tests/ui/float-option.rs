// `f32` chooses the float of a generic function's derivatives; on a
// function written for a float it has nothing to choose.
use deltad::differentiate;

#[differentiate(f32)]
fn square(x: f64) -> f64 {
    x * x
}

fn main() {}
