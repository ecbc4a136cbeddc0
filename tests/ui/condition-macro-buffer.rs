use deltad::differentiate;

macro_rules! all_small {
    ($v:expr) => {
        $v.iter().all(|e| e.abs() < 1.0)
    };
}

#[differentiate]
fn f(x: &[f64], y: f64) -> f64 {
    if all_small!(x) {
        y * x[0]
    } else {
        y
    }
}

fn main() {}
