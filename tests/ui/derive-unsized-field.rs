use deltad::Differentiable;

// A struct whose last field is a trait object is valid Rust (unsized), but
// not a type whose reals deltad can hold.
#[derive(Differentiable)]
struct Weighted {
    w: f64,
    rest: dyn Fn(f64) -> f64,
}

fn main() {}
