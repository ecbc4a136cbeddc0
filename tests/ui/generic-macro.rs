// `deltad::generic!` takes one call of a function generic over its number
// type.
use deltad::differentiate;

#[differentiate]
fn not_a_call(x: f64) -> f64 {
    deltad::generic!(x * 2.0)
}

fn main() {}

#[differentiate]
fn not_a_call_forward(x: f64) -> f64 {
    deltad::generic_fwd!(x.sin())
}
