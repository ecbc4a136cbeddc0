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

pub struct Spring {
    pub k: f64,
}

// A method generic over its number type (free functions may be).
#[differentiate]
impl Spring {
    pub fn energy<T: num_traits::Float>(&self, x: T) -> T {
        x * x
    }
}

fn main() {}
