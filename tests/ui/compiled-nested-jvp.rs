use deltad::differentiate;

#[differentiate]
fn inner(x: &[f64], w: f64) -> f64 {
    w * x[0] * x[1]
}

// Gradients read by their fields take the compiled path inside
// differentiated code; a `jvp` taken inside does not yet.
#[differentiate(compiled)]
fn f(x: &[f64], w: f64) -> f64 {
    let force = inner::grad(x, w).x;
    let slope = inner::jvp(x, w, &inner::Grad { x: vec![1.0, 0.0], w: 0.0 }).1;
    force[0] * slope
}

fn main() {}
