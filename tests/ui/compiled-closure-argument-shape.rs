use deltad::differentiate;

#[differentiate]
fn doubled_at<F: Fn(&f64) -> f64>(f: F, x: f64) -> f64 {
    f(&x) * 2.0
}

// A closure given to a function on the compiled path takes reals and slices
// of reals: the function's passes take no other function values.
#[differentiate(compiled)]
fn scaled(k: f64) -> f64 {
    doubled_at(|x: &f64| x * k, k)
}

fn main() {}
