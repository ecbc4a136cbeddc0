// Type errors of the user's own: only rustc's messages about the user's
// code, none about what deltad generates.
use deltad::differentiate;

#[differentiate]
fn sum_in_other_precision(x: &[f64]) -> f64 {
    let s: f32 = x.iter().sum();
    s as f64
}

#[differentiate]
fn real_into_an_index(x: f64) -> f64 {
    let k: usize = x * 2.0;
    k as f64
}

#[differentiate]
fn closure_annotated_wrongly(v: &[f64]) -> f64 {
    v.iter().map(|u: &f32| *u as f64).sum::<f64>()
}

fn main() {}
