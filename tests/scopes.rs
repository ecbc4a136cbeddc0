//! `#[differentiate]` works in any module: inline modules, `#[cfg(test)]`
//! modules, private and public items, and inside function bodies (with the
//! limitation documented in the README).
// The functions below are written the way users write them, not the way
// clippy would: deltad must accept all of them.
#![allow(clippy::all)]

mod common;
use deltad::differentiate;

const SCALE: f64 = 3.0;

fn plain_helper(k: usize) -> f64 {
    k as f64 * 0.5
}

mod physics {
    use deltad::differentiate;

    pub const G: f64 = 9.81;

    #[differentiate]
    pub fn potential(h: f64, m: f64) -> f64 {
        m * G * h
    }

    pub mod nested {
        use super::*;

        #[differentiate]
        pub(crate) fn energy(h: f64, v: f64, m: f64) -> f64 {
            // A call to a sibling module's differentiated function via `super`.
            super::potential(h, m) + 0.5 * m * v * v
        }
    }
}

#[differentiate]
fn uses_parent_items(x: f64, k: usize) -> f64 {
    x * SCALE + plain_helper(k) * x
}

#[test]
fn items_of_the_enclosing_module_are_visible() {
    assert_eq!(uses_parent_items::grad(1.0, 4).x, SCALE + 2.0);
    let g = physics::potential::grad(2.0, 3.0);
    assert_eq!((g.h, g.m), (3.0 * physics::G, physics::G * 2.0));
    let g = physics::nested::energy::grad(2.0, 1.5, 3.0);
    assert_eq!(g.v, 3.0 * 1.5);
    assert_eq!(g.h, 3.0 * physics::G);
}

#[test]
fn inside_a_function_body() {
    #[differentiate]
    fn local(x: f64) -> f64 {
        x * x * SCALE
    }
    assert_eq!(local::grad(2.0).x, 12.0);
    assert_eq!(local(2.0), 12.0);
}

#[cfg(test)]
mod cfg_test_module {
    use deltad::differentiate;

    #[differentiate]
    fn cube(x: f64) -> f64 {
        x * x * x
    }

    #[test]
    fn in_a_cfg_test_module() {
        assert_eq!(cube::grad(2.0).x, 12.0);
    }
}

// `use` items inside a differentiated body (they made the macro panic):
// absolute, `crate::`, relative to the module, `self::` and `super::` paths,
// renames and groups, on both engines.
mod with_uses {
    use deltad::differentiate;

    pub mod shapes {
        use deltad::differentiate;

        pub const TWO: f64 = 2.0;

        #[differentiate]
        pub fn sq(x: f64) -> f64 {
            x * x
        }
    }

    macro_rules! uses {
        ($name:ident, $engine:meta) => {
            #[$engine]
            pub fn $name(x: f64) -> f64 {
                use self::shapes::{sq, TWO};
                use super::SCALE as K;
                use crate::with_uses::shapes::sq as square;
                use shapes::TWO as T;
                use std::f64::consts::PI;
                sq(x) * TWO + square(x * T) + K * PI * x
            }
        };
    }
    uses!(compiled, differentiate);
    uses!(taped, differentiate(tape));
}

#[test]
fn use_items_in_the_body() {
    // f = 2x² + 4x² + 3πx, f' = 12x + 3π.
    for x in [-0.5, 1.25] {
        let want = 12.0 * x + SCALE * std::f64::consts::PI;
        assert!((with_uses::compiled::grad(x).x - want).abs() < 1e-12);
        assert!((with_uses::taped::grad(x).x - want).abs() < 1e-12);
        assert_eq!(
            with_uses::compiled::value_and_grad(x).0,
            with_uses::compiled(x)
        );
    }
}
