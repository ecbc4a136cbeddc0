//! Locals, shadowing, compound assignment, blocks, branches, matches, loops,
//! early returns: each gradient against central finite differences.
// The functions below are written the way users write them, not the way
// clippy would: deltad must accept all of them.
#![allow(clippy::all)]

mod common;
use common::*;
use deltad::differentiate;

#[differentiate]
fn locals_and_shadowing(x: f64, y: f64) -> f64 {
    let a = x * y;
    let a = a + x; // shadowing with a new active value
    let b: f64 = 2.0; // annotated inactive local
    let c: f64 = a * b; // annotated active local
    let mut d = 1.0; // inactive init, active later
    d *= c;
    d += x;
    d -= y * 0.5;
    d /= 1.0 + y * y;
    let e = {
        let t = d * d;
        t - x
    };
    e
}

#[differentiate]
fn branches(x: f64, y: f64, flag: bool) -> f64 {
    let mut s = if x > y { x * y } else { y - x };
    if flag && x < 1.0 || !flag {
        s += x.exp();
    } else if y > 0.0 {
        s -= y.sin();
    }
    let t = if s >= 0.0 { s } else { 0.0 }; // inactive branch lifted
    t + if y < 0.5 { 1.0 } else { y }
}

#[differentiate]
fn match_on_integers(x: f64, k: usize, positive: bool) -> f64 {
    let base = match k {
        0 => x,
        1 | 2 => x * x,
        n if n < 10 => x.powi(n as i32),
        _ => 0.0,
    };
    let sign = match positive {
        true => 1.0,
        false => -1.0,
    };
    base * sign
        + match k % 3 {
            0 => x.sin(),
            _ => 2.0,
        }
}

#[differentiate]
fn loops(w: &[f64], n: usize) -> f64 {
    let mut s = 0.0;
    for (i, wi) in w.iter().enumerate() {
        s += wi * (i as f64 + 1.0);
    }
    for (a, b) in w.iter().zip(w.iter().skip(1)) {
        s += a * b;
    }
    let mut i = 0;
    while i < n {
        s = s * 0.9 + w[i % w.len()];
        i += 1;
    }
    let mut j = 0;
    let last = loop {
        j += 1;
        if j % 2 == 0 {
            continue;
        }
        if j > 5 {
            break s * w[0];
        }
        s += 0.1 * w[1];
    };
    for wi in w {
        if *wi < 0.0 {
            continue;
        }
        s += wi.sqrt();
    }
    'outer: for a in 0..3 {
        for b in 0..3 {
            if a + b > 3 {
                break 'outer;
            }
            s += w[a] * w[b];
        }
    }
    s + last
}

#[differentiate]
fn early_return(x: f64, w: &[f64]) -> f64 {
    if x < 0.0 {
        return -x;
    }
    let mut s = 0.0;
    for i in 0..w.len() {
        s += w[i] * x;
        if s > 2.0 {
            return s * s;
        }
    }
    if s < 0.5 {
        return 0.5;
    }
    s
}

#[differentiate]
fn labeled_block(x: f64, k: u32) -> f64 {
    let y = 'found: {
        if k == 0 {
            break 'found 1.0;
        }
        if k == 1 {
            break 'found x * 3.0;
        }
        x.powi(k as i32)
    };
    y + x
}

#[differentiate]
fn tuples_and_destructuring(x: f64, y: f64) -> f64 {
    let (a, b) = (x * y, 2.0);
    let (mut c, n) = (0.0, 3);
    for _ in 0..n {
        c += a / b;
    }
    let pair = (c, y);
    let (p, q) = pair;
    let [u, v] = [p, q * 2.0];
    u * v + pair.0 - pair.1
}

#[differentiate]
fn while_let_and_if_let(w: &[f64]) -> f64 {
    let mut stack = w.to_vec();
    let mut s = 0.0;
    while let Some(top) = stack.pop() {
        s += top * top;
    }
    if let Some(first) = w.first() {
        s += first * 3.0;
    }
    if let [a, b, ..] = w {
        s += a * b;
    }
    s
}

#[test]
fn locals_and_compound_assignment() {
    for (x, y) in [(0.3, 1.2), (-1.1, 0.4)] {
        let (value, g) = locals_and_shadowing::value_and_grad(x, y);
        assert_eq!(value, locals_and_shadowing(x, y));
        check_gradient(
            |p| locals_and_shadowing(p[0], p[1]),
            &[x, y],
            &[g.x, g.y],
            "locals",
        );
    }
}

#[test]
fn if_else_in_all_positions() {
    for (x, y) in [(0.3, 1.2), (1.4, 0.2), (2.0, -0.3), (0.9, 0.3)] {
        for flag in [true, false] {
            let (value, g) = branches::value_and_grad(x, y, flag);
            assert_eq!(value, branches(x, y, flag));
            check_gradient(
                |p| branches(p[0], p[1], flag),
                &[x, y],
                &[g.x, g.y],
                "branches",
            );
        }
    }
}

#[test]
fn match_arms() {
    for k in [0, 1, 2, 5, 12] {
        for positive in [true, false] {
            let x = 0.8;
            let (value, g) = match_on_integers::value_and_grad(x, k, positive);
            assert_eq!(value, match_on_integers(x, k, positive));
            check_gradient(
                |p| match_on_integers(p[0], k, positive),
                &[x],
                &[g.x],
                "match",
            );
        }
    }
}

#[test]
fn for_while_loop_break_continue_labels() {
    let w = vec![0.3, 0.8, -0.4, 1.1];
    let (value, g) = loops::value_and_grad(&w, 7);
    assert_eq!(value, loops(&w, 7));
    check_gradient(|p| loops(p, 7), &w, &g.w, "loops");
}

#[test]
fn early_returns() {
    for (x, w) in [
        (-0.5, vec![1.0]),
        (1.5, vec![0.5, 1.0, 2.0]),
        (0.1, vec![0.5, 1.0]),
        (0.5, vec![0.5, 1.5]),
    ] {
        let (value, g) = early_return::value_and_grad(x, &w);
        assert_eq!(value, early_return(x, &w));
        let mut flat = vec![x];
        flat.extend(&w);
        let mut analytic = vec![g.x];
        analytic.extend(&g.w);
        check_gradient(
            |p| early_return(p[0], &p[1..]),
            &flat,
            &analytic,
            "early return",
        );
    }
}

#[test]
fn labeled_block_breaks() {
    for k in 0..4 {
        let g = labeled_block::grad(1.3, k).x;
        check_gradient(|p| labeled_block(p[0], k), &[1.3], &[g], "labeled block");
    }
}

#[test]
fn tuple_patterns() {
    let g = tuples_and_destructuring::grad(0.7, -1.3);
    check_gradient(
        |p| tuples_and_destructuring(p[0], p[1]),
        &[0.7, -1.3],
        &[g.x, g.y],
        "tuples",
    );
}

#[test]
fn while_let_if_let_slice_patterns() {
    let w = [0.5, -1.5, 2.5];
    let g = while_let_and_if_let::grad(&w);
    check_gradient(while_let_and_if_let, &w, &g.w, "let patterns");
}

// ----- a macro of the user's as a condition -----------------------------------

macro_rules! nearly_equal {
    ($a:expr, $b:expr) => {
        ($a - $b).abs() <= 1e-12 * f64::max($a.abs(), $b.abs())
    };
}

/// Conditions written with a macro deltad cannot see inside: it runs on the
/// machine values of its arguments (a condition carries no derivative).
#[differentiate]
fn macro_conditions(a: f64, x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        if !nearly_equal!(x[i], a) && (nearly_equal!(x[i] * 2.0, 2.0 * x[i]) || x[i] > 0.0) {
            s += x[i] * a;
        }
        let mut k = 0;
        while k < 3 && !nearly_equal!(x[i], a) {
            s += 0.5 * a;
            k += 1;
        }
        s += match i {
            0 if nearly_equal!(a, 2.0_f64) => a * a,
            _ => a,
        };
    }
    s
}

#[test]
fn macros_as_conditions() {
    let x = [1.0, 2.0, 3.0];
    for a in [2.0, 2.5] {
        let g = macro_conditions::grad(a, &x);
        let mut point = vec![a];
        point.extend(x);
        let mut got = vec![g.a];
        got.extend(&g.x);
        // (Central differences step by 1e-5 or so: the equalities stay as
        // they are at these points except at a = 2, where the derivative
        // is that of the branch taken.)
        if a != 2.0 {
            check_gradient(
                |p| macro_conditions(p[0], &p[1..]),
                &point,
                &got,
                "macro conditions",
            );
        } else {
            // x[1] = a is skipped: ∂a = x0 + x2 (the products) + 2 · 1.5
            // (the while loops of i = 0, 2) + 2a (the guard, i = 0) + 2.
            assert_eq!(got, vec![4.0 + 3.0 + 2.0 * a + 2.0, a, 0.0, a]);
        }
    }
}
