// Generic code that converts its number to `f64` and computes on that (as
// argmin_testfunctions' `cross_in_tray` does) cannot be followed by a dual
// number: deltad's dual types do not implement `Into<f64>`, so the call is a
// compile error instead of a derivative that silently comes out 0.
use num_traits::{Float, FromPrimitive};

fn bump<T: Float + FromPrimitive + Into<f64>>(x: &[T]) -> T {
    let v: f64 = x[0].into();
    T::from_f64(v.sin()).unwrap()
}

fn main() {
    let _ = deltad::gradient(|x| bump(x), &[0.5]);
}
