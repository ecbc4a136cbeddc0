use deltad::differentiate;

#[differentiate]
fn f<T: Copy>(x: f64, tag: T) -> f64 {
    let _ = tag;
    x * x
}

#[differentiate]
fn g(x: f64, tag: impl Copy) -> f64 {
    let _ = tag;
    x * x
}

fn main() {}
