use deltad::differentiate;

#[differentiate]
fn f(x: f32, y: f64) -> f64 {
    x as f64 * y
}

#[differentiate]
fn g(y: f64) -> f64 {
    let z = y as f32;
    z as f64
}

#[differentiate]
fn h(x: f64) -> f64 {
    let y = (x * 3.0) as f32;
    x * y as f64
}

fn main() {}
