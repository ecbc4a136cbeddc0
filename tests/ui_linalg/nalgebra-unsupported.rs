use deltad::differentiate;
use deltad::nalgebra::{DVector, Vector3};

#[differentiate]
fn angle(a: &Vector3<f64>, b: &Vector3<f64>) -> f64 {
    a.angle(b)
}

#[differentiate]
fn build(x: f64, y: f64) -> f64 {
    DVector::from_vec(vec![x, y]).norm()
}

fn main() {}
