//! The derivatives of the edition-2018 functions against hand-written ones.

#![allow(clippy::needless_range_loop)]

use deltad_edition2018::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1.0)
}

#[test]
fn rotated_dot_matches_hand_derivative() {
    let (v, angle) = (Vec2 { x: 0.3, y: -1.1 }, 0.7f64);
    let (s, c) = (angle.sin(), angle.cos());
    let g = rotated_dot::grad(&v, angle);
    assert!(close(g.v.x, c + 2.0 * s));
    assert!(close(g.v.y, -s + 2.0 * c));
    assert!(close(
        g.angle,
        (-s * v.x - c * v.y) + 2.0 * (c * v.x - s * v.y)
    ));
    let (value, tangent) = rotated_dot::jvp(&v, angle, &g);
    assert!(close(value, rotated_dot(&v, angle)));
    assert!(close(
        tangent,
        g.v.x * g.v.x + g.v.y * g.v.y + g.angle * g.angle
    ));
}

#[test]
fn closures_match_hand_derivative() {
    let (w, t) = ([0.5, -0.25, 2.0], 0.8);
    let g = closures::grad(&w, t);
    let sech2 = |x: f64| 1.0 - (x * t).tanh().powi(2);
    for i in 0..3 {
        assert!(close(g.w[i], t * sech2(w[i])));
    }
    assert!(close(g.t, w.iter().map(|x| x * sech2(*x)).sum()));
}

#[test]
fn loops_match_hand_derivative() {
    let x = [0.5, -1.5, 2.0, 0.25];
    let n = 3;
    let g = loops::grad(&x, n);
    for i in 0..x.len() {
        let cube = if i < n && x[i] >= 0.0 {
            3.0 * x[i] * x[i]
        } else {
            0.0
        };
        assert!(
            close(g.x[i], cube + 2.0 * x[i] / (1.0 + x[i] * x[i])),
            "{}",
            i
        );
    }
}

#[test]
fn keyword_parameters() {
    let g = keywords::grad(1.5, &[2.0, 0.5]);
    assert!(close(g.r#try, 2.0));
    assert!(close(g.r#async[0], 1.5));
    assert!(close(g.r#async[1], 0.5f64.exp()));
}
