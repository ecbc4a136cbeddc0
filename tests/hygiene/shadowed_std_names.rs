//! A module that shadows the standard names the generated code could rely
//! on: `Vec`, `Option`, `Some`, `None`, `Box`, `String`, `Default`, `Clone`,
//! `Iterator`, `Fn`, the modules `std` and `core`, and the `vec!` macro.
#![allow(non_camel_case_types, dead_code, clippy::all)]

mod user {
    use deltad::differentiate;

    pub struct Vec;
    pub struct Option;
    pub struct Some;
    pub struct None;
    pub struct Box;
    pub struct String;
    pub struct Result;
    pub struct Ok;
    pub trait Default {}
    pub trait Clone {}
    pub trait Iterator {}
    pub trait IntoIterator {}
    pub trait Fn {}
    pub trait Into {}
    pub trait From {}
    pub fn drop() {}
    pub mod std {}
    pub mod core {}
    #[allow(unused_macros)]
    macro_rules! vec {
        () => {
            compile_error!("the user's vec! was used")
        };
    }

    #[differentiate]
    pub fn norm(v: &[f64], scale: f64) -> f64 {
        let mut s = 0.0;
        for x in v {
            s += x * x;
        }
        scale * s.sqrt()
    }

    #[differentiate]
    pub fn pair(a: (f64, f64), w: [f64; 2]) -> (f64, f64) {
        (a.0 * w[0], a.1.exp() * w[1])
    }

    #[differentiate]
    pub fn calls(v: &[f64], scale: f64) -> f64 {
        norm(v, scale) * scale
    }
}

fn main() {
    let v = [3.0, 4.0];
    let g = user::norm::grad(&v, 2.0);
    assert_eq!(user::norm(&v, 2.0), 10.0);
    assert!((g.v[0] - 2.0 * 3.0 / 5.0).abs() < 1e-15);
    assert!((g.v[1] - 2.0 * 4.0 / 5.0).abs() < 1e-15);
    assert!((g.scale - 5.0).abs() < 1e-15);

    let g = user::calls::grad(&v, 2.0);
    // calls = scale^2 * |v|
    assert!((g.scale - 2.0 * 2.0 * 5.0).abs() < 1e-12);
    assert!((g.v[0] - 4.0 * 3.0 / 5.0).abs() < 1e-12);

    let (out, rows) = user::pair::jacobian((2.0, 0.5), [3.0, -1.0]);
    assert_eq!(out, (6.0, -(0.5f64.exp())));
    assert_eq!(rows[0].a, (3.0, 0.0));
    assert_eq!(rows[0].w, [2.0, 0.0]);
    assert_eq!(rows[1].a, (0.0, -(0.5f64.exp())));
    assert_eq!(rows[1].w, [0.0, 0.5f64.exp()]);
    let h = user::norm::hessian(&v, 1.0);
    // ∂²|v|/∂v0² = v1² / |v|³
    assert!((h[0].v[0] - 16.0 / 125.0).abs() < 1e-14);
}
