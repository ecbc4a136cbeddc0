use deltad::differentiate;

#[differentiate]
fn inner(a: f64, w: f64) -> f64 {
    w * a * a
}

// Gradients read by their fields and `jvp`s along tangents written in place
// (or held in a local the next statement alone uses) take the compiled path
// inside differentiated code; a tangent local used twice does not yet.
#[differentiate(compiled)]
fn f(a: f64, w: f64) -> f64 {
    let force = inner::grad(a, w).a;
    let direction = inner::Grad { a: 1.0, w: 0.0 };
    let slope = inner::jvp(a, w, &direction).1 + inner::jvp(w, a, &direction).1;
    force * slope
}

fn main() {}
