use deltad::differentiate;

#[differentiate]
fn pair_sum<F: Fn(f64) -> [f64; 2]>(f: F, a: f64) -> f64 {
    let v = f(a);
    v[0] + v[1]
}

// A closure given to a function on the compiled path returns a real or a
// `Vec` of reals: the function's passes take no other function values.
#[differentiate(compiled)]
fn both(k: f64) -> f64 {
    pair_sum(|t: f64| [t * k, t.sin()], k)
}

fn main() {}
