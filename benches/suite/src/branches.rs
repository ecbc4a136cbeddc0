//! The loop-with-branches program of seed 002 §4.2: 100 000 iterations, each
//! choosing among ten elementary functions by a comparison and by a value
//! computed from x. One input: forward mode is the natural hand-written
//! adjoint.

use ad_trait::reverse_ad::adr::adr;
use ad_trait::AD;
use deltad::differentiate;
use num_dual::{Dual64, DualNum};

pub const ITERATIONS: usize = 100_000;

#[differentiate]
pub fn branches(x0: f64, iterations: usize) -> f64 {
    let mut x = x0;
    for _ in 0..iterations {
        let s = ((x * 10.0) as i64).rem_euclid(4);
        x = if x > 100.0 {
            if s == 0 {
                1.0 + x.sin()
            } else if s == 1 {
                1.0 + x.cos()
            } else if s == 2 {
                x.ln_1p()
            } else if s == 3 {
                x.sqrt()
            } else {
                x / 13.0
            }
        } else if s == 0 {
            x + 10.0
        } else if s == 1 {
            x.powi(3)
        } else if s == 2 {
            (x / 10.0).exp()
        } else if s == 3 {
            x * 2.0 * x * 5.0
        } else {
            x * 1.3
        };
    }
    x
}

/// The same function on the tape.
#[differentiate(tape)]
pub fn branches_tape(x0: f64, iterations: usize) -> f64 {
    let mut x = x0;
    for _ in 0..iterations {
        let s = ((x * 10.0) as i64).rem_euclid(4);
        x = if x > 100.0 {
            if s == 0 {
                1.0 + x.sin()
            } else if s == 1 {
                1.0 + x.cos()
            } else if s == 2 {
                x.ln_1p()
            } else if s == 3 {
                x.sqrt()
            } else {
                x / 13.0
            }
        } else if s == 0 {
            x + 10.0
        } else if s == 1 {
            x.powi(3)
        } else if s == 2 {
            (x / 10.0).exp()
        } else if s == 3 {
            x * 2.0 * x * 5.0
        } else {
            x * 1.3
        };
    }
    x
}

/// The derivative carried along with the value.
pub fn hand(x0: f64, iterations: usize) -> (f64, f64) {
    let (mut x, mut d) = (x0, 1.0);
    for _ in 0..iterations {
        let s = ((x * 10.0) as i64).rem_euclid(4);
        let (value, slope) = if x > 100.0 {
            match s {
                0 => (1.0 + x.sin(), x.cos()),
                1 => (1.0 + x.cos(), -x.sin()),
                2 => (x.ln_1p(), 1.0 / (1.0 + x)),
                3 => (x.sqrt(), 0.5 / x.sqrt()),
                _ => (x / 13.0, 1.0 / 13.0),
            }
        } else {
            match s {
                0 => (x + 10.0, 1.0),
                1 => (x.powi(3), 3.0 * x * x),
                2 => ((x / 10.0).exp(), (x / 10.0).exp() / 10.0),
                3 => (x * 2.0 * x * 5.0, 20.0 * x),
                _ => (x * 1.3, 1.3),
            }
        };
        x = value;
        d *= slope;
    }
    (x, d)
}

pub fn with_reverse(x0: f64, iterations: usize) -> f64 {
    use reverse::Gradient;
    let tape = reverse::Tape::new();
    let input = tape.add_var(x0);
    let mut x = input;
    for _ in 0..iterations {
        let s = ((x.val() * 10.0) as i64).rem_euclid(4);
        x = if x.val() > 100.0 {
            match s {
                0 => 1.0 + x.sin(),
                1 => 1.0 + x.cos(),
                2 => (1.0 + x).ln(), // `reverse` has no ln_1p
                3 => x.sqrt(),
                _ => x / 13.0,
            }
        } else {
            match s {
                0 => x + 10.0,
                1 => x.powi(3),
                2 => (x / 10.0).exp(),
                3 => x * 2.0 * x * 5.0,
                _ => x * 1.3,
            }
        };
    }
    x.grad().wrt(&input)
}

fn generic<T: AD>(x0: T, iterations: usize) -> T {
    let mut x = x0;
    let c = T::constant;
    for _ in 0..iterations {
        let s = ((x.to_constant() * 10.0) as i64).rem_euclid(4);
        x = if x.to_constant() > 100.0 {
            match s {
                0 => c(1.0) + x.sin(),
                1 => c(1.0) + x.cos(),
                2 => x.ln_1p(),
                3 => x.sqrt(),
                _ => x / c(13.0),
            }
        } else {
            match s {
                0 => x + c(10.0),
                1 => x.powi(3),
                2 => (x / c(10.0)).exp(),
                3 => x * c(2.0) * x * c(5.0),
                _ => x * c(1.3),
            }
        };
    }
    x
}

pub fn with_ad_trait(x0: f64, iterations: usize) -> f64 {
    let x = adr::new_variable(x0, true);
    generic(x, iterations).get_backwards_mode_grad().wrt(&x)
}

pub fn with_num_dual(x0: f64, iterations: usize) -> f64 {
    let mut x = Dual64::new(x0, 1.0);
    for _ in 0..iterations {
        let s = ((x.re * 10.0) as i64).rem_euclid(4);
        x = if x.re > 100.0 {
            match s {
                0 => x.sin() + 1.0,
                1 => x.cos() + 1.0,
                2 => x.ln_1p(),
                3 => x.sqrt(),
                _ => x / 13.0,
            }
        } else {
            match s {
                0 => x + 10.0,
                1 => x.powi(3),
                2 => (x / 10.0).exp(),
                3 => x * 2.0 * x * 5.0,
                _ => x * 1.3,
            }
        };
    }
    x.eps
}

pub fn check() {
    for iterations in [10, 100, 1000, ITERATIONS] {
        // The branch taken depends on the digits of x, so every version must
        // compute exactly the primal's values for the gradients to be
        // comparable.
        let primal = branches(3.0, iterations);
        let (value, hand_grad) = hand(3.0, iterations);
        assert_eq!(value.to_bits(), primal.to_bits());
        let (deltad_value, g) = branches::value_and_grad(3.0, iterations);
        assert_eq!(deltad_value.to_bits(), primal.to_bits());
        // The derivative is a product of one slope per iteration: it
        // underflows to 0 long before 100 000 iterations, so the comparison
        // is relative. deltad's slopes are the hand-written ones to a few
        // ulps, so 1000 factors stay within 1e-9; ad_trait's rules for some
        // slopes round differently (1.5e-9 after 1000 iterations), so the
        // peers get 1e-6.
        assert!(iterations == ITERATIONS || hand_grad != 0.0);
        for (what, got, tolerance) in [
            ("deltad", g.x0, 1e-9),
            ("deltad-tape", branches_tape::grad(3.0, iterations).x0, 1e-9),
            ("reverse", with_reverse(3.0, iterations), 1e-6),
            ("ad_trait", with_ad_trait(3.0, iterations), 1e-6),
            ("num-dual", with_num_dual(3.0, iterations), 1e-6),
        ] {
            assert!(
                (got - hand_grad).abs() <= tolerance * hand_grad.abs(),
                "branches {what}, {iterations} iterations: {got} vs hand-written {hand_grad}"
            );
        }
    }
}
