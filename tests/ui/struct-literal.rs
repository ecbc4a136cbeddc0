use deltad::differentiate;

struct Point {
    x: f64,
    y: f64,
}

fn norm(p: &Point) -> f64 {
    (p.x * p.x + p.y * p.y).sqrt()
}

// A struct literal passed on whole needs the type's twin: the type must
// derive `Differentiable`. (Read only by its fields, it would not.)
#[differentiate]
fn f(a: f64) -> f64 {
    let p = Point { x: a, y: 2.0 };
    norm(&p)
}

fn main() {}
