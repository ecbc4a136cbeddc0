// Type errors of the user's own: rustc's messages about the user's code
// (and, where the body's value cannot be the declared real, one message
// of deltad's in the same terms), none about what deltad generates.
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

#[differentiate]
fn returns_a_vec_for_a_real(x: f64) -> f64 {
    vec![x, x]
}

#[differentiate]
fn slice_plus_a_real(v: &[f64], x: f64) -> f64 {
    v + x
}

fn main() {}
