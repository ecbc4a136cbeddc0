// Found by the fuzzer: `b` looks like a sum inside the loop, but after the
// loop it is assigned a call's result, so it is not a plain real the
// accumulators can take. The loop must not keep it across iterations.
use deltad::differentiate;

#[differentiate]
fn h(x: f64) -> f64 {
    x * 2.0
}

#[differentiate]
fn f(x: f64) -> f64 {
    let mut a = 0.0;
    let mut b = 0.0;
    #[preaccumulate]
    for _ in 0..2 {
        a += (x * 3.0).cos();
        b -= x * x;
    }
    if b < 0.0 {
        b = h(a);
    }
    a * b
}

fn main() {}
