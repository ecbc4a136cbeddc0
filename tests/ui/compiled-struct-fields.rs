use deltad::{differentiate, Differentiable};

#[derive(Differentiable, Clone, Copy)]
struct Spring {
    k: f64,
    coils: u32,
}

// The macro infers a field's type from its uses; here nothing says
// whether `coils` is a real, so the compiled path cannot take the cast.
#[differentiate(compiled)]
fn stretch(s: &Spring, x: f64) -> f64 {
    s.k * x * s.coils as f64
}

// A parameter of a user type returned whole.
#[differentiate(compiled)]
fn returned(s: &Spring) -> Spring {
    *s
}

fn main() {}
