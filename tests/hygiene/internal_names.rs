//! User names that coincide with the names the generated code uses: the
//! tape parameter, the scalar and element type parameters, the generated
//! module's item names, the closure parameters and locals of the wrappers.
//! (Generated type parameters and items are `__Deltad*`/`__deltad_*` at the
//! call site; a user *type* of that name used inside the body would be
//! shadowed, so those prefixes are reserved. Locals of any name are safe:
//! generated locals are mixed-site hygienic.)
#![allow(non_snake_case, non_camel_case_types, clippy::all)]

use deltad::differentiate;

// Items named like generated ones, next to the differentiated functions.
struct __DeltadS;
struct __DeltadT;
#[allow(dead_code)]
fn __record() {}
#[allow(dead_code)]
struct Grad;
#[allow(dead_code)]
fn seed_and_sweep() {}

#[differentiate]
fn locals(__deltad_tape: f64, tape: f64, seed: &[f64]) -> f64 {
    let __deltad_s = __deltad_tape * tape;
    let adjoints = __deltad_s + 1.0;
    let output = adjoints * seed[0];
    let leaves = output.sin();
    let reader = leaves + seed[1] * seed[1];
    let (element, r, row, x, v, e) = (reader, 2.0, 3.0, 4.0, 5.0, 6.0);
    let __deltad_tail = element * r + row * x + v * e;
    let grad = __deltad_tail;
    let __deltad_c1 = grad * grad;
    __deltad_c1
}

#[differentiate]
fn sums(x: &[f64], grad: f64) -> f64 {
    let mut __deltad_acc2 = 0.0;
    for element in x {
        __deltad_acc2 += element * grad;
    }
    let mut __deltad_accv3 = 1.0;
    for (i, v) in x.iter().enumerate() {
        __deltad_accv3 *= v + i as f64;
    }
    __deltad_acc2 + __deltad_accv3
}

fn main() {
    let _ = (__DeltadS, __DeltadT);
    // locals = (((a*t + 1) * s0).sin() + s1^2) * 2 + 12 + 30 =: q, value q^2
    let (a, t, s0, s1): (f64, f64, f64, f64) = (0.3, -1.2, 0.7, 0.4);
    let inner = (a * t + 1.0) * s0;
    let q = (inner.sin() + s1 * s1) * 2.0 + 42.0;
    let g = locals::grad(a, t, &[s0, s1]);
    let dq_dinner = 2.0 * inner.cos();
    let close = |x: f64, y: f64| (x - y).abs() <= 1e-12 * y.abs().max(1.0);
    assert!(close(locals(a, t, &[s0, s1]), q * q));
    assert!(close(g.__deltad_tape, 2.0 * q * dq_dinner * t * s0));
    assert!(close(g.tape, 2.0 * q * dq_dinner * a * s0));
    assert!(close(g.seed[0], 2.0 * q * dq_dinner * (a * t + 1.0)));
    assert!(close(g.seed[1], 2.0 * q * 2.0 * 2.0 * s1));

    // sums = grad * Σx + Π(x_i + i)
    let x = [0.5, 1.5, -2.0];
    let w = 0.25;
    let g = sums::grad(&x, w);
    let p = [x[0], x[1] + 1.0, x[2] + 2.0];
    assert!(close(g.grad, x.iter().sum::<f64>()));
    for i in 0..3 {
        let others: f64 = (0..3).filter(|&j| j != i).map(|j| p[j]).product();
        assert!(close(g.x[i], w + others), "{i}");
    }
    let (value, tangent) = sums::jvp(
        &x,
        w,
        &sums::Grad {
            x: vec![1.0, 0.0, 0.0],
            grad: 0.0,
        },
    );
    assert!(close(value, sums(&x, w)));
    assert!(close(tangent, g.x[0]));
}
