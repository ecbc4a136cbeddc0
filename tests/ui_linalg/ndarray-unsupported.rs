use deltad::differentiate;
use deltad::ndarray::{Array1, ArrayView1};

#[differentiate]
fn variance(a: &Array1<f64>) -> f64 {
    a.var(1.0) + a.sum()
}

#[differentiate]
fn build(x: f64, y: f64) -> f64 {
    Array1::from_vec(vec![x, y]).sum()
}

#[differentiate]
fn view<'a>(a: &ArrayView1<'a, f64>) -> f64 {
    a.sum()
}

fn main() {}
