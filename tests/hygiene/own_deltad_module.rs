//! The user's crate has its own modules called `deltad` (at the root and
//! next to the function), and a local named `deltad`: the generated code
//! names the runtime by the absolute path `::deltad::...`.
#![allow(dead_code, clippy::all)]

mod deltad {
    pub mod __private {}
    pub fn differentiate() {}
    pub struct Real;
    pub struct Tape;
}

mod inner {
    mod deltad {
        pub mod __private {
            pub fn lift() {}
        }
    }

    #[::deltad::differentiate]
    pub fn f(x: f64, y: &[f64]) -> f64 {
        let deltad = x * y[0];
        deltad.exp() + y[1] / x
    }

    #[derive(::deltad::Differentiable, Clone, Debug, PartialEq)]
    pub struct Point {
        pub x: f64,
        pub y: f64,
    }

    #[::deltad::differentiate]
    pub fn dist(p: &Point) -> f64 {
        (p.x * p.x + p.y * p.y).sqrt()
    }
}

fn main() {
    let _ = deltad::Real;
    let (x, y) = (0.5, [2.0, 3.0]);
    let g = inner::f::grad(x, &y);
    let e = (x * y[0]).exp();
    assert!((g.x - (y[0] * e - y[1] / (x * x))).abs() < 1e-12);
    assert!((g.y[0] - x * e).abs() < 1e-12);
    assert!((g.y[1] - 1.0 / x).abs() < 1e-12);
    let g = inner::dist::grad(&inner::Point { x: 3.0, y: 4.0 });
    assert!((g.p.x - 0.6).abs() < 1e-15 && (g.p.y - 0.8).abs() < 1e-15);
}
