//! `Option`s built inside differentiated code: `None` takes its type from
//! where it goes, `Some(..)` of a differentiated value is not fused as a real,
//! and variables holding either are carried through loops and matches.
// The matches below are what the tests are about.
#![allow(
    clippy::manual_unwrap_or,
    clippy::manual_unwrap_or_default,
    clippy::unnecessary_literal_unwrap
)]

use deltad::differentiate;

#[differentiate]
fn positive_square(x: f64) -> Option<f64> {
    if x > 0.0 {
        Some(x * x)
    } else {
        None
    }
}

#[differentiate]
fn last_positive_square(x: &[f64]) -> f64 {
    let mut best = None;
    for v in x {
        if *v > 0.0 {
            best = Some(v * v);
        }
        if *v < -10.0 {
            best = None;
        }
    }
    match best {
        Some(b) => b,
        None => 0.0,
    }
}

#[differentiate]
fn annotated(x: f64, y: f64) -> f64 {
    let first: Option<f64> = if x > y { Some(x.sin()) } else { Option::None };
    let second = Some(y * x);
    first.unwrap_or(1.0) * second.unwrap_or(0.0)
}

#[test]
fn option_output_follows_the_branch() {
    let (value, rows) = positive_square::jacobian(2.0);
    assert_eq!(value, Some(4.0));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].x, 4.0); // d(x²)/dx
    let (value, rows) = positive_square::jacobian(-2.0);
    assert_eq!(value, None);
    assert!(rows.is_empty()); // no output reals, no rows
    let (value, tangent) = positive_square::jvp(3.0, &positive_square::Grad { x: 1.0 });
    assert_eq!((value, tangent), (Some(9.0), Some(6.0)));
}

#[test]
fn option_variable_reassigned_in_a_loop() {
    let x = [1.0, 3.0, -1.0];
    assert_eq!(last_positive_square(&x), 9.0);
    assert_eq!(last_positive_square::grad(&x).x, vec![0.0, 6.0, 0.0]);
    // reset to None by the last element: constant 0, zero gradient
    let x = [1.0, 3.0, -20.0];
    assert_eq!(
        last_positive_square::value_and_grad(&x),
        (0.0, last_positive_square::Grad { x: vec![0.0; 3] })
    );
}

#[test]
fn annotated_and_mixed_options() {
    let (x, y) = (1.3_f64, 0.4_f64);
    let g = annotated::grad(x, y);
    // f = sin(x) · x·y on this branch
    let dx = x.cos() * x * y + x.sin() * y;
    let dy = x.sin() * x;
    assert!(
        (g.x - dx).abs() < 1e-14 && (g.y - dy).abs() < 1e-14,
        "{g:?}"
    );
    // other branch: f = 1 · y·x
    let g = annotated::grad(0.2, 0.5);
    assert_eq!((g.x, g.y), (0.5, 0.2));
}
