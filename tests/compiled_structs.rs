//! Parameters of user types on the compiled path: fields read as reals or
//! plain data, against the tape (the same function under
//! `#[differentiate(tape)]`), closed forms and finite differences.

// The bodies index buffers on purpose: that is the form under test.
#![allow(clippy::needless_range_loop)]

mod common;

use deltad::{differentiate, Differentiable};

#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Pt {
    pub a: f64,
    pub b: f64,
}

#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Body {
    pub position: Pt,
    pub mass: f64,
    #[no_grad]
    pub drag: f64,
    pub steps: usize,
    #[no_grad]
    pub name: String,
}

#[differentiate(compiled)]
fn energy(p: &Pt, x: f64) -> f64 {
    p.a * x * x + p.b.sin() * x
}

#[differentiate(tape)]
fn energy_tape(p: &Pt, x: f64) -> f64 {
    p.a * x * x + p.b.sin() * x
}

#[differentiate(compiled)]
fn by_value(p: Pt, x: f64) -> f64 {
    let s = p.a * p.b;
    if p.a > p.b {
        s * x
    } else {
        s.exp() - x
    }
}

#[differentiate(compiled)]
fn nested(body: &Body, v: f64) -> f64 {
    let mut total = 0.0;
    for k in 0..body.steps {
        let t = k as f64 * 0.5;
        total += body.mass * (body.position.a + v * t).powi(2) - body.drag * body.position.b * t;
    }
    total / body.name.len() as f64
}

#[differentiate(tape)]
fn nested_tape(body: &Body, v: f64) -> f64 {
    let mut total = 0.0;
    for k in 0..body.steps {
        let t = k as f64 * 0.5;
        total += body.mass * (body.position.a + v * t).powi(2) - body.drag * body.position.b * t;
    }
    total / body.name.len() as f64
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn fields_of_a_reference_are_reals() {
    let p = Pt { a: 1.5, b: -0.3 };
    let x = 0.7;
    let (value, g) = energy::value_and_grad(&p, x);
    assert_eq!(value, energy(&p, x));
    assert!(close(g.p.a, x * x));
    assert!(close(g.p.b, p.b.cos() * x));
    assert!(close(g.x, 2.0 * p.a * x + p.b.sin()));
    let t = energy_tape::grad(&p, x);
    assert!(close(t.p.a, g.p.a) && close(t.p.b, g.p.b) && close(t.x, g.x));
    assert!(energy::tape_stats(&p, x).compiled);
}

#[test]
fn fields_of_a_value_and_a_branch() {
    for p in [Pt { a: 0.9, b: 0.2 }, Pt { a: 0.1, b: 0.4 }] {
        let x = 1.3;
        let g = by_value::grad(p, x);
        let s = p.a * p.b;
        let (da, db, dx) = if p.a > p.b {
            (p.b * x, p.a * x, s)
        } else {
            (s.exp() * p.b, s.exp() * p.a, -1.0)
        };
        assert!(
            close(g.p.a, da) && close(g.p.b, db) && close(g.x, dx),
            "{g:?}"
        );
    }
}

#[test]
fn nested_fields_no_grad_fields_and_plain_fields() {
    let body = Body {
        position: Pt { a: 0.4, b: 1.1 },
        mass: 2.5,
        drag: 0.75,
        steps: 6,
        name: "probe".into(),
    };
    let v = 0.3;
    let (value, g) = nested::value_and_grad(&body, v);
    assert_eq!(value, nested(&body, v));
    let t = nested_tape::grad(&body, v);
    assert_eq!(g.body.drag, body.drag, "a #[no_grad] field keeps its value");
    assert_eq!(g.body.name, body.name);
    assert!(close(g.body.mass, t.body.mass));
    assert!(close(g.body.position.a, t.body.position.a));
    assert!(close(g.body.position.b, t.body.position.b));
    assert!(close(g.v, t.v));
    nested::check_derivatives(&body, v).assert_within(1e-6);
    // Second order through the compiled passes on dual numbers.
    let h = nested::hessian(&body, v);
    let ht = nested_tape::hessian(&body, v);
    for (row, row_t) in h.iter().zip(&ht) {
        assert!(close(row.body.mass, row_t.body.mass) && close(row.v, row_t.v));
        assert!(close(row.body.position.a, row_t.body.position.a));
    }
}

#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Weights(pub f32, pub f32);

/// `f32`, a tuple struct, a vector result.
#[differentiate(compiled)]
fn affine(w: Weights, x: &[f32]) -> Vec<f32> {
    let mut out = vec![0.0; x.len()];
    for i in 0..x.len() {
        out[i] = w.0 * x[i] + w.1;
    }
    out
}

#[test]
fn a_tuple_struct_in_f32_with_a_vector_result() {
    let w = Weights(1.5, -0.5);
    let x = [1.0_f32, 2.0, 3.0];
    let (value, rows) = affine::jacobian(w, &x);
    assert_eq!(value, affine(w, &x));
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row.w, Weights(x[i], 1.0));
        for (j, dx) in row.x.iter().enumerate() {
            assert_eq!(*dx, if i == j { w.0 } else { 0.0 });
        }
    }
    let seed = [1.0_f32, 0.5, 0.25];
    let (_, g) = affine::vjp(w, &x, &seed.to_vec());
    assert_eq!(g.w, Weights(1.0 + 1.0 + 0.75, 1.75));
    // jvp against vjp by the dot-product identity.
    let tangent = affine::Grad {
        w: Weights(0.3, -0.2),
        x: vec![0.1, -0.4, 0.7],
    };
    let (_, jv) = affine::jvp(w, &x, &tangent);
    let lhs: f32 = jv.iter().zip(&seed).map(|(a, b)| a * b).sum();
    let rhs = g.w.0 * 0.3 + g.w.1 * -0.2 + g.x[0] * 0.1 + g.x[1] * -0.4 + g.x[2] * 0.7;
    assert!((lhs - rhs).abs() < 1e-5, "{lhs} {rhs}");
}

/// A tape function calling a compiled function of a user type (one node
/// whose partials the compiled adjoint computes), and a compiled function
/// passing it constant data.
#[differentiate(tape)]
fn tape_caller(p: &Pt, x: f64) -> f64 {
    energy(p, x) * x
}

#[differentiate(compiled)]
fn constant_pt(x: f64, #[no_grad] p: &Pt) -> f64 {
    energy(p, x) + x
}

#[test]
fn callers_on_the_tape_and_with_constants() {
    let p = Pt { a: 0.8, b: 0.3 };
    let x = -1.2;
    let g = tape_caller::grad(&p, x);
    let e = energy::grad(&p, x);
    assert!(close(g.p.a, e.p.a * x) && close(g.p.b, e.p.b * x));
    assert!(close(g.x, e.x * x + energy(&p, x)));
    tape_caller::check_derivatives(&p, x).assert_within(1e-6);
    let c = constant_pt::grad(x, &p);
    assert!(close(c.x, e.x + 1.0));
    // Forward over reverse through the tape node: row 2 (of x) against
    // central differences of the gradient (h = 1e-5: truncation error
    // ~1e-10 times the third derivative, which is O(1) here).
    let h = tape_caller::hessian(&p, x);
    assert_eq!(h.len(), 3);
    let step = 1e-5;
    let (up, down) = (
        tape_caller::grad(&p, x + step),
        tape_caller::grad(&p, x - step),
    );
    assert!((h[2].x - (up.x - down.x) / (2.0 * step)).abs() < 1e-6);
    assert!((h[2].p.a - (up.p.a - down.p.a) / (2.0 * step)).abs() < 1e-6);
    assert!((h[2].p.b - (up.p.b - down.p.b) / (2.0 * step)).abs() < 1e-6);
}

#[test]
fn grad_into_adds_to_a_user_type() {
    let p = Pt { a: 1.0, b: 2.0 };
    let mut sum = energy::Grad {
        p: Pt { a: 10.0, b: 20.0 },
        x: 0.0,
    };
    let v1 = energy::grad_into(&p, 0.5, &mut sum);
    let v2 = energy::grad_into(&p, 0.25, &mut sum);
    assert_eq!(v1, energy(&p, 0.5));
    assert_eq!(v2, energy(&p, 0.25));
    let (g1, g2) = (energy::grad(&p, 0.5), energy::grad(&p, 0.25));
    assert!(close(sum.p.a, 10.0 + g1.p.a + g2.p.a));
    assert!(close(sum.p.b, 20.0 + g1.p.b + g2.p.b));
}

/// Locals built by struct literals: their fields are variables, read,
/// assigned and rebuilt by name.
#[differentiate(compiled)]
fn literals(x: f64, y: f64, p: &Pt) -> f64 {
    let q = Pt {
        a: x * y,
        b: if x > 0.0 { x.sin() } else { y },
    };
    let mut r = Body {
        position: Pt { a: q.b, b: p.a },
        mass: 2.0,
        drag: 0.5,
        steps: 3,
        name: String::new(),
    };
    for _ in 0..r.steps {
        r.position.a += r.mass * q.a;
        r.mass *= 0.5 + p.b;
    }
    let s = q;
    r = Body {
        position: Pt {
            a: r.position.b,
            b: r.position.a,
        },
        mass: r.mass,
        drag: r.drag,
        steps: r.steps,
        name: String::new(),
    };
    s.a * r.position.b + r.mass - r.drag * r.position.a
}

/// The same computation with scalars, on the tape (the tape does not take
/// `mut` locals built by struct literals).
#[differentiate(tape)]
fn literals_tape(x: f64, y: f64, p: &Pt) -> f64 {
    let (qa, qb) = (x * y, if x > 0.0 { x.sin() } else { y });
    let (mut ra, rb, mut mass) = (qb, p.a, 2.0);
    for _ in 0..3 {
        ra += mass * qa;
        mass *= 0.5 + p.b;
    }
    let (ra, rb) = (rb, ra);
    qa * rb + mass - 0.5 * ra
}

#[test]
fn struct_literals_are_their_fields() {
    let p = Pt { a: 0.3, b: -0.1 };
    for (x, y) in [(0.7, 1.1), (-0.4, 0.9)] {
        let (value, g) = literals::value_and_grad(x, y, &p);
        assert_eq!(value, literals(x, y, &p));
        let t = literals_tape::grad(x, y, &p);
        assert!(close(g.x, t.x) && close(g.y, t.y), "{g:?} {t:?}");
        assert!(close(g.p.a, t.p.a) && close(g.p.b, t.p.b), "{g:?} {t:?}");
        literals::check_derivatives(x, y, &p).assert_within(1e-6);
    }
}

/// A type that does not derive `Differentiable`, built and read by its
/// fields: on the compiled path it is just its fields.
struct Plain {
    x: f64,
    k: i32,
}

#[differentiate(compiled)]
fn plain_literal(a: f64, b: f64) -> f64 {
    let mut p = Plain { x: a * b, k: 2 };
    p.x += a.powi(p.k);
    p.x / b
}

#[test]
fn a_literal_of_a_type_without_the_derive() {
    let (a, b) = (1.5, -0.5);
    let g = plain_literal::grad(a, b);
    // f = a + a²/b: ∂f/∂a = 1 + 2a/b, ∂f/∂b = -a²/b².
    assert!(close(g.a, 1.0 + 2.0 * a / b) && close(g.b, -a * a / (b * b)));
}

/// Results of user types: the fields of the result are variables, the
/// passes return its twin.
#[differentiate(compiled)]
#[allow(clippy::let_and_return)] // a local built by a literal, returned
fn combine(p: &Pt, q: &Pt, t: f64) -> Pt {
    if t > 0.0 {
        return Pt {
            a: p.a * t + q.a,
            b: (p.b - q.b).exp(),
        };
    }
    let r = Pt {
        a: q.a * q.b,
        b: 1.5,
    };
    r
}

#[differentiate(tape)]
fn combine_tape(p: &Pt, q: &Pt, t: f64) -> Pt {
    if t > 0.0 {
        return Pt {
            a: p.a * t + q.a,
            b: (p.b - q.b).exp(),
        };
    }
    Pt {
        a: q.a * q.b,
        b: 1.5,
    }
}

#[differentiate(compiled)]
fn launch(p: &Pt, speed: f64) -> Body {
    Body {
        position: Pt {
            a: p.a + speed,
            b: p.b * speed,
        },
        mass: speed * speed,
        drag: 0.25,
        steps: 4,
        name: "launched".to_string(),
    }
}

#[differentiate(tape)]
fn launch_tape(p: &Pt, speed: f64) -> Body {
    Body {
        position: Pt {
            a: p.a + speed,
            b: p.b * speed,
        },
        mass: speed * speed,
        drag: 0.25,
        steps: 4,
        name: "launched".to_string(),
    }
}

/// A tape function calling compiled functions that return user types.
#[differentiate(tape)]
fn energy_after_launch(p: &Pt, speed: f64) -> f64 {
    let body = launch(p, speed);
    let c = combine(&body.position, p, speed);
    body.mass * c.a + c.b * body.drag
}

#[test]
fn results_of_user_types() {
    let (p, q) = (Pt { a: 0.5, b: -0.25 }, Pt { a: 1.25, b: 0.75 });
    for t in [0.8, -0.6] {
        let (value, rows) = combine::jacobian(&p, &q, t);
        let (value_t, rows_t) = combine_tape::jacobian(&p, &q, t);
        assert_eq!(value, combine(&p, &q, t));
        assert_eq!(value, value_t);
        assert_eq!(rows.len(), 2);
        for (row, row_t) in rows.iter().zip(&rows_t) {
            assert!(close(row.p.a, row_t.p.a) && close(row.p.b, row_t.p.b));
            assert!(close(row.q.a, row_t.q.a) && close(row.q.b, row_t.q.b));
            assert!(close(row.t, row_t.t));
        }
        let seed = Pt { a: 0.3, b: -1.1 };
        let (_, g) = combine::vjp(&p, &q, t, &seed);
        let tangent = combine::Grad {
            p: Pt { a: 0.2, b: -0.7 },
            q: Pt { a: 1.1, b: 0.4 },
            t: 0.9,
        };
        let (value_j, jv) = combine::jvp(&p, &q, t, &tangent);
        assert_eq!(value_j, value);
        let lhs = seed.a * jv.a + seed.b * jv.b;
        let rhs = g.p.a * 0.2 + g.p.b * -0.7 + g.q.a * 1.1 + g.q.b * 0.4 + g.t * 0.9;
        assert!(close(lhs, rhs), "{lhs} {rhs}");
        combine::check_derivatives(&p, &q, t).assert_within(1e-6);
    }
    let (body, rows) = launch::jacobian(&p, 1.5);
    let (body_t, rows_t) = launch_tape::jacobian(&p, 1.5);
    assert_eq!(body, body_t);
    assert_eq!(body.name, "launched");
    // The reals of a `Body`: position.a, position.b, mass (`drag` is
    // `#[no_grad]`).
    assert_eq!(rows.len(), 3);
    for (row, row_t) in rows.iter().zip(&rows_t) {
        assert!(close(row.p.a, row_t.p.a) && close(row.p.b, row_t.p.b));
        assert!(close(row.speed, row_t.speed));
    }
    let g = energy_after_launch::grad(&p, 1.5);
    energy_after_launch::check_derivatives(&p, 1.5).assert_within(1e-6);
    assert!(g.speed.is_finite());
}

/// A result whose fields are copies of a parameter's fields of unknown
/// type: each copied as it is, its adjoint going back to the parameter's
/// field where that is a differentiated real (and nowhere for a plain or a
/// `#[no_grad]` one).
#[differentiate(compiled)]
fn swapped(p: &Pt) -> Pt {
    Pt { a: p.b, b: p.a }
}

#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Tagged {
    pub value: f64,
    pub id: usize,
    #[no_grad]
    pub scale: f64,
    pub weight: f64,
}

#[differentiate(compiled)]
fn bump(t: &Tagged, x: f64) -> Tagged {
    Tagged {
        value: t.value * x,
        id: t.id,
        scale: t.scale,
        weight: t.weight,
    }
}

#[test]
fn copies_of_fields_into_a_result_keep_their_derivatives() {
    let p = Pt { a: 0.5, b: -2.0 };
    let (value, rows) = swapped::jacobian(&p);
    assert_eq!(value, Pt { a: -2.0, b: 0.5 });
    assert_eq!(rows[0].p, Pt { a: 0.0, b: 1.0 });
    assert_eq!(rows[1].p, Pt { a: 1.0, b: 0.0 });
    let t = Tagged {
        value: 2.0,
        id: 7,
        scale: 0.25,
        weight: -1.5,
    };
    let (value, rows) = bump::jacobian(&t, 3.0);
    assert_eq!(value, bump(&t, 3.0));
    // The reals of a `Tagged`: value, weight (`scale` is `#[no_grad]`).
    assert_eq!(rows.len(), 2);
    let zero = |value, weight| Tagged {
        value,
        id: 7,
        scale: 0.25,
        weight,
    };
    assert_eq!(rows[0].t, zero(3.0, 0.0));
    assert_eq!(rows[0].x, 2.0);
    assert_eq!(rows[1].t, zero(0.0, 1.0));
    assert_eq!(rows[1].x, 0.0);
    let seed = zero(1.0, 1.0);
    let (_, g) = bump::vjp(&t, 3.0, &seed);
    assert_eq!(g.t, zero(3.0, 1.0));
}

/// Values of user types passed whole to compiled callees and returned by
/// them: the quaternion rotation of the paper's Fig. 12, batched.
#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Quat {
    pub x: f64,
    pub y: f64,
    pub z: f64,
    pub w: f64,
}

#[differentiate(compiled)]
fn rotate(v: &Pt3, q: &Quat) -> Pt3 {
    let (ux, uy, uz, s) = (q.x, q.y, q.z, q.w);
    let uv: f64 = ux * v.x + uy * v.y + uz * v.z;
    let uu: f64 = ux * ux + uy * uy + uz * uz;
    let a: f64 = 2.0 * uv;
    let b: f64 = s * s - uu;
    let c: f64 = 2.0 * s;
    Pt3 {
        x: a * ux + b * v.x + c * (uy * v.z - uz * v.y),
        y: a * uy + b * v.y + c * (uz * v.x - ux * v.z),
        z: a * uz + b * v.z + c * (ux * v.y - uy * v.x),
    }
}

#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Pt3 {
    pub x: f64,
    pub y: f64,
    pub z: f64,
}

#[differentiate(compiled)]
fn rotated_dot(v: &Pt3, q: &Quat, w: f64) -> f64 {
    let r = rotate(v, q);
    let twice = rotate(&r, q);
    (r.x * w + r.y * r.z) * twice.x
}

#[differentiate(tape)]
fn rotated_dot_tape(v: &Pt3, q: &Quat, w: f64) -> f64 {
    let r = rotate(v, q);
    let twice = rotate(&r, q);
    (r.x * w + r.y * r.z) * twice.x
}

#[test]
fn values_of_user_types_passed_to_and_returned_by_callees() {
    let v = Pt3 {
        x: 0.3,
        y: -1.2,
        z: 0.8,
    };
    let q = Quat {
        x: 0.1,
        y: 0.7,
        z: -0.2,
        w: 0.6,
    };
    let (value, g) = rotated_dot::value_and_grad(&v, &q, 1.7);
    assert_eq!(value, rotated_dot(&v, &q, 1.7));
    let t = rotated_dot_tape::grad(&v, &q, 1.7);
    assert!(close(g.w, t.w));
    for (a, b) in [(g.v.x, t.v.x), (g.v.y, t.v.y), (g.v.z, t.v.z)] {
        assert!(close(a, b), "{g:?} {t:?}");
    }
    for (a, b) in [
        (g.q.x, t.q.x),
        (g.q.y, t.q.y),
        (g.q.z, t.q.z),
        (g.q.w, t.q.w),
    ] {
        assert!(close(a, b), "{g:?} {t:?}");
    }
    rotated_dot::check_derivatives(&v, &q, 1.7).assert_within(1e-6);
    // Forward over reverse through both calls.
    let h = rotated_dot::hessian(&v, &q, 1.7);
    let ht = rotated_dot_tape::hessian(&v, &q, 1.7);
    for (row, row_t) in h.iter().zip(&ht) {
        assert!(close(row.w, row_t.w) && close(row.q.w, row_t.q.w) && close(row.v.x, row_t.v.x));
    }
}

/// Buffers of values of a user type: elements read by index, by a loop and
/// by a `let`, passed to callees.
#[differentiate(compiled)]
fn batch(qs: &[Quat], vs: &[Pt3], #[no_grad] w: &Pt3) -> f64 {
    let mut total = 0.0;
    for i in 0..qs.len() {
        let r = rotate(&vs[i], &qs[i]);
        total += r.x * w.x + r.y * w.y + r.z * w.z;
    }
    for (q, v) in qs.iter().zip(vs) {
        total += q.w * v.x - rotate(v, q).z * 0.5;
    }
    let last = &vs[vs.len() - 1];
    total * last.y + qs[0].x
}

#[differentiate(tape)]
fn batch_tape(qs: &[Quat], vs: &[Pt3], #[no_grad] w: &Pt3) -> f64 {
    let mut total = 0.0;
    for i in 0..qs.len() {
        let r = rotate(&vs[i], &qs[i]);
        total += r.x * w.x + r.y * w.y + r.z * w.z;
    }
    for (q, v) in qs.iter().zip(vs) {
        total += q.w * v.x - rotate(v, q).z * 0.5;
    }
    let last = &vs[vs.len() - 1];
    total * last.y + qs[0].x
}

/// A compiled function calling functions that stay on the tape with
/// values of user types (their compiled passes record them on a tape of
/// their own).
#[differentiate(compiled)]
fn calls_the_tape(qs: &[Quat], p: &Pt, x: f64) -> f64 {
    let vs = [
        Pt3 {
            x: 1.0,
            y: 2.0,
            z: 3.0,
        },
        Pt3 {
            x: -1.0,
            y: 0.5,
            z: 0.0,
        },
    ];
    energy_tape(p, x)
        + batch_tape(
            qs,
            &vs,
            &Pt3 {
                x: 0.5,
                y: 0.5,
                z: 0.5,
            },
        )
}

#[test]
fn buffers_of_user_types() {
    let qs: Vec<Quat> = (0..4)
        .map(|k| {
            let t = k as f64 * 0.3;
            Quat {
                x: t.sin(),
                y: 0.2 + t,
                z: -0.4 * t,
                w: t.cos(),
            }
        })
        .collect();
    let vs: Vec<Pt3> = (0..4)
        .map(|k| Pt3 {
            x: 1.0 - k as f64,
            y: 0.5 * k as f64,
            z: 0.25,
        })
        .collect();
    let w = Pt3 {
        x: 0.3,
        y: -0.6,
        z: 0.9,
    };
    let (value, g) = batch::value_and_grad(&qs, &vs, &w);
    assert_eq!(value, batch(&qs, &vs, &w));
    let t = batch_tape::grad(&qs, &vs, &w);
    for (a, b) in g.qs.iter().zip(&t.qs) {
        for (x, y) in [(a.x, b.x), (a.y, b.y), (a.z, b.z), (a.w, b.w)] {
            assert!(close(x, y), "{a:?} {b:?}");
        }
    }
    for (a, b) in g.vs.iter().zip(&t.vs) {
        for (x, y) in [(a.x, b.x), (a.y, b.y), (a.z, b.z)] {
            assert!(close(x, y), "{a:?} {b:?}");
        }
    }
    batch::check_derivatives(&qs, &vs, &w).assert_within(1e-6);
    // grad_into a reused, empty-at-first Grad.
    let mut sum = batch::Grad::default();
    batch::grad_into(&qs, &vs, &w, &mut sum);
    batch::grad_into(&qs, &vs, &w, &mut sum);
    assert!(close(sum.qs[2].w, 2.0 * g.qs[2].w));
    // Hessian-vector product on dual numbers through the element loops.
    let v = batch::Grad {
        qs: qs.clone(),
        vs: vs.clone(),
    };
    let hv = batch::hvp(&qs, &vs, &w, &v);
    let hv_t = batch_tape::hvp(
        &qs,
        &vs,
        &w,
        &batch_tape::Grad {
            qs: qs.clone(),
            vs: vs.clone(),
        },
    );
    assert!(close(hv.qs[1].y, hv_t.qs[1].y) && close(hv.vs[3].x, hv_t.vs[3].x));

    let p = Pt { a: 0.2, b: 0.4 };
    let c = calls_the_tape::grad(&qs[..2], &p, 0.7);
    let e = energy_tape::grad(&p, 0.7);
    assert!(close(c.p.a, e.p.a) && close(c.p.b, e.p.b) && close(c.x, e.x));
    calls_the_tape::check_derivatives(&qs[..2], &p, 0.7).assert_within(1e-6);
    assert!(batch::tape_stats(&qs, &vs, &w).compiled);
}

/// A field of a literal given a bare float literal has the field's type,
/// which methods need (`q.a.recip()`).
#[differentiate(compiled)]
fn literal_field_methods(x: f64) -> f64 {
    let q = Pt { a: 1.5, b: x };
    let r = Pt {
        a: -0.5 * 2.0,
        b: q.b.exp(),
    };
    q.a.recip() * q.b + r.a.abs() * r.b
}

#[test]
fn float_literals_in_struct_literals() {
    let x = 0.4;
    let (value, g) = literal_field_methods::value_and_grad(x);
    assert_eq!(value, literal_field_methods(x));
    // f = x / 1.5 + exp(x).
    assert!(close(g.x, 1.0 / 1.5 + x.exp()));
}

/// Methods on the compiled path: `&self` is a parameter of a user type.
#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Spring {
    pub k: f64,
    pub rest: f64,
}

#[differentiate]
impl Spring {
    fn energy(&self, x: f64) -> f64 {
        let d = x - self.rest;
        0.5 * self.k * d * d
    }

    fn stiffer(&self, factor: f64) -> Spring {
        Spring {
            k: self.k * factor,
            rest: self.rest + 0.0 * factor,
        }
    }
}

#[test]
fn methods_take_the_compiled_path() {
    let s = Spring { k: 3.0, rest: 0.5 };
    let x = 1.25;
    let (value, g) = spring_energy::value_and_grad(&s, x);
    assert_eq!(value, s.energy(x));
    let d = x - s.rest;
    assert!(close(g.self_.k, 0.5 * d * d) && close(g.self_.rest, -s.k * d) && close(g.x, s.k * d));
    assert!(spring_energy::tape_stats(&s, x).compiled);
    let (value, rows) = spring_stiffer::jacobian(&s, 2.0);
    assert_eq!(value, s.stiffer(2.0));
    assert_eq!(rows[0].self_, Spring { k: 2.0, rest: 0.0 });
    assert_eq!(rows[0].factor, 3.0);
    assert_eq!(rows[1].self_, Spring { k: 0.0, rest: 1.0 });
    assert!(spring_stiffer::tape_stats(&s, 2.0).compiled);
}

/// A field of an element copied into a result: of unknown type, so the
/// function stays on the tape (the derivative is kept).
#[differentiate]
fn first_swapped(ps: &[Pt]) -> Pt {
    Pt {
        a: ps[0].b,
        b: ps[0].a,
    }
}

#[test]
fn copies_of_element_fields_keep_their_derivatives() {
    let ps = [Pt { a: 0.5, b: -2.0 }, Pt { a: 1.0, b: 1.0 }];
    let (_, rows) = first_swapped::jacobian(&ps);
    assert_eq!(rows[0].ps[0], Pt { a: 0.0, b: 1.0 });
    assert_eq!(rows[1].ps[0], Pt { a: 1.0, b: 0.0 });
    assert_eq!(rows[1].ps[1], Pt { a: 0.0, b: 0.0 });
}

#[differentiate]
fn halve(v: f64) -> f64 {
    0.5 * v
}

#[differentiate]
fn scaled(p: &Pt, s: f64) -> Pt {
    Pt {
        a: p.a * s,
        b: p.b * s,
    }
}

/// Reads of one field of one type have one type. Nothing where `p.b`,
/// `ps[0].b` and `scaled(p, x).a` are read says they are reals (they are
/// passed on); `ps[1].b.sin()` says the field `b` of `Pt` is, and
/// `scaled(p, 2.0).a.cos()` that the field `a` of `scaled`'s result is.
#[differentiate(compiled)]
fn one_type_per_field(p: &Pt, ps: &[Pt], x: f64) -> f64 {
    halve(p.b) * x + halve(ps[0].b) + ps[1].b.sin() + halve(scaled(p, x).a) - scaled(p, 2.0).a.cos()
}

#[test]
fn a_fields_type_shows_at_any_read_of_it() {
    let p = Pt { a: 0.8, b: -1.1 };
    let ps = [Pt { a: 0.3, b: 0.6 }, Pt { a: -0.2, b: 1.4 }];
    let x = 0.9;
    assert!(one_type_per_field::tape_stats(&p, &ps, x).compiled);
    let (value, g) = one_type_per_field::value_and_grad(&p, &ps, x);
    assert_eq!(value, one_type_per_field(&p, &ps, x));
    // f = p.b x / 2 + ps₀.b / 2 + sin ps₁.b + p.a x / 2 − cos 2p.a
    assert!(close(g.p.a, 0.5 * x + 2.0 * (2.0 * p.a).sin()), "{g:?}");
    assert!(close(g.p.b, 0.5 * x), "{g:?}");
    assert_eq!(g.ps[0], Pt { a: 0.0, b: 0.5 });
    assert!(g.ps[1].a == 0.0 && close(g.ps[1].b, ps[1].b.cos()), "{g:?}");
    assert!(close(g.x, 0.5 * p.b + 0.5 * p.a), "{g:?}");
}

/// Locals built by struct literals passed whole to callees: by reference,
/// by value, written in place, with a constant field, and with no
/// differentiated field at all (the call as written). The callee adds into
/// an adjoint twin of the literal, whose leaves go back to the fields.
#[differentiate(compiled)]
fn literals_passed_whole(x: f64, y: f64, p: &Pt) -> f64 {
    let mut q = Pt { a: x * y, b: 2.0 };
    let first = energy(&q, y);
    q.b = p.a + x;
    let second = by_value(q, 0.5);
    let third = energy(
        &Pt {
            a: y.sin(),
            b: p.b * 0.5,
        },
        x,
    );
    let fixed = Pt { a: 1.5, b: -0.25 };
    let fourth = energy(&fixed, 2.0);
    first * second + third - fourth * x
}

#[differentiate(tape)]
fn literals_passed_whole_tape(x: f64, y: f64, p: &Pt) -> f64 {
    // (The tape takes no assignment to a literal's field.)
    let q = Pt { a: x * y, b: 2.0 };
    let first = energy(&q, y);
    let q = Pt { a: q.a, b: p.a + x };
    let second = by_value(q, 0.5);
    let third = energy(
        &Pt {
            a: y.sin(),
            b: p.b * 0.5,
        },
        x,
    );
    let fixed = Pt { a: 1.5, b: -0.25 };
    let fourth = energy(&fixed, 2.0);
    first * second + third - fourth * x
}

#[test]
fn literals_passed_whole_to_callees() {
    let p = Pt { a: 0.4, b: -0.9 };
    // Both branches of `by_value` (a > b and a ≤ b).
    for (x, y) in [(0.7, 1.3), (-0.6, 0.8), (1.1, -0.4)] {
        let (value, g) = literals_passed_whole::value_and_grad(x, y, &p);
        assert_eq!(value, literals_passed_whole(x, y, &p));
        assert_eq!(value, literals_passed_whole_tape(x, y, &p));
        let t = literals_passed_whole_tape::grad(x, y, &p);
        for (a, b) in [(g.x, t.x), (g.y, t.y), (g.p.a, t.p.a), (g.p.b, t.p.b)] {
            assert!(close(a, b), "{g:?} {t:?}");
        }
        literals_passed_whole::check_derivatives(x, y, &p).assert_within(1e-6);
        // Forward over reverse through the literals' twins.
        let h = literals_passed_whole::hessian(x, y, &p);
        let ht = literals_passed_whole_tape::hessian(x, y, &p);
        for (row, row_t) in h.iter().zip(&ht) {
            assert!(close(row.x, row_t.x) && close(row.y, row_t.y) && close(row.p.a, row_t.p.a));
        }
    }
    assert!(literals_passed_whole::tape_stats(0.7, 1.3, &p).compiled);
}

#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Probe {
    pub position: Pt,
    pub mass: f64,
    #[no_grad]
    pub drag: f64,
    pub steps: usize,
}

#[differentiate]
fn probe(body: &Probe, v: f64) -> f64 {
    let mut total = 0.0;
    for k in 0..body.steps {
        let t = k as f64 * 0.5;
        total += body.mass * (body.position.a + v * t).powi(2) - body.drag * body.position.b * t;
    }
    total / 5.0
}

/// A literal with nested, `#[no_grad]` and plain fields passed whole.
#[differentiate(compiled)]
fn nested_literal_passed_whole(x: f64, y: f64) -> f64 {
    let body = Probe {
        position: Pt { a: x * y, b: 0.5 },
        mass: y.exp(),
        drag: 2.0,
        steps: 3,
    };
    probe(&body, x) + body.mass * 3.0
}

#[differentiate(tape)]
fn nested_literal_passed_whole_tape(x: f64, y: f64) -> f64 {
    let body = Probe {
        position: Pt { a: x * y, b: 0.5 },
        mass: y.exp(),
        drag: 2.0,
        steps: 3,
    };
    probe(&body, x) + body.mass * 3.0
}

#[test]
fn nested_and_no_grad_fields_of_a_literal_passed_whole() {
    for (x, y) in [(0.3, -0.7), (1.2, 0.4)] {
        let (value, g) = nested_literal_passed_whole::value_and_grad(x, y);
        assert_eq!(value, nested_literal_passed_whole_tape(x, y));
        let t = nested_literal_passed_whole_tape::grad(x, y);
        assert!(close(g.x, t.x) && close(g.y, t.y), "{g:?} {t:?}");
        // By hand: with m = e^y, a = xy, t_k = k/2 (k < 3):
        // f = Σ_k (m (a + x t_k)² - 2 · 0.5 t_k)/5 + 3m.
        let m = y.exp();
        let (mut dx, mut dy) = (0.0, 3.0 * m);
        for k in 0..3 {
            let t = k as f64 * 0.5;
            let u = x * y + x * t;
            dx += m * 2.0 * u * (y + t) / 5.0;
            dy += (m * u * u + m * 2.0 * u * x) / 5.0;
        }
        assert!(close(g.x, dx) && close(g.y, dy), "{g:?} {dx} {dy}");
    }
    assert!(nested_literal_passed_whole::tape_stats(0.3, -0.7).compiled);
}

/// A layer of a small network: weights in a `Vec`, constants and indices
/// in fields of their own.
#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Layer {
    pub w: Vec<f64>,
    pub b: f64,
    #[no_grad]
    pub scale: Vec<f64>,
    pub idx: Vec<usize>,
}

#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Net {
    pub first: Layer,
    pub out: [f64; 3],
}

// The same body on both engines.
macro_rules! net_fn {
    ($name:ident ($engine:ident)) => {
        #[differentiate($engine)]
        fn $name(n: &Net, x: &[f64]) -> f64 {
            let mut s = n.first.b;
            for i in 0..n.first.w.len() {
                let j = n.first.idx[i];
                s += n.first.w[i] * x[j] * n.first.scale[i];
            }
            let mut t = 0.0;
            for k in 0..3 {
                t += n.out[k] * (s * (k + 1) as f64).sin() * n.first.w[k] * n.first.w[k];
            }
            // The field's elements walked as a buffer's.
            for (wi, xi) in n.first.w.iter().zip(x) {
                t += wi * xi * 0.1;
            }
            for (k, &wk) in n.first.w.iter().enumerate().rev() {
                t += wk * wk * k as f64 * 0.05;
            }
            // And as iterator chains' sources.
            let dot: f64 = n.first.w.iter().zip(x).map(|(a, b)| a * b).sum();
            let folded = n
                .first
                .w
                .iter()
                .fold(n.first.b, |acc, &a| acc * 0.5 + a.sin());
            let scaled: Vec<f64> = n.first.w.iter().map(|a| a * 3.0).collect();
            t + dot.tanh() + folded * scaled[1]
        }
    };
}

net_fn!(net(compiled));
net_fn!(net_tape(tape));

#[differentiate(compiled)]
impl Layer {
    fn response(&self, x: &[f64]) -> f64 {
        let mut s = self.b;
        for i in 0..self.w.len() {
            s += self.w[i] * x[i];
        }
        s.tanh() * self.w[0]
    }
}

/// The network's parameters flattened (the differentiated ones: `w`, `b`,
/// `out`) and back.
fn net_params(n: &Net) -> Vec<f64> {
    let mut p = n.first.w.clone();
    p.push(n.first.b);
    p.extend(n.out);
    p
}

fn net_from(n: &Net, p: &[f64]) -> Net {
    let len = n.first.w.len();
    let mut m = n.clone();
    m.first.w = p[..len].to_vec();
    m.first.b = p[len];
    m.out = [p[len + 1], p[len + 2], p[len + 3]];
    m
}

#[test]
fn buffer_fields_of_parameters_read_by_element() {
    let n = Net {
        first: Layer {
            w: vec![0.3, -0.2, 0.5, 0.25],
            b: 0.1,
            scale: vec![1.0, 2.0, 0.5, -1.5],
            idx: vec![2, 0, 1, 1],
        },
        out: [0.4, 0.7, -0.3],
    };
    let x = [1.0, 2.0, 3.0];
    let (value, g) = net::value_and_grad(&n, &x);
    assert_eq!(value, net(&n, &x));
    assert!(net::tape_stats(&n, &x).compiled);
    // Against the tape, entry by entry (the constants' and indices' fields
    // keep their values).
    let t = net_tape::grad(&n, &x);
    assert_eq!(g.n.first.scale, n.first.scale);
    assert_eq!(g.n.first.idx, n.first.idx);
    common::assert_close_tol(&net_params(&g.n), &net_params(&t.n), 1e-12, "net vs tape");
    common::assert_close_tol(&g.x, &t.x, 1e-12, "x vs tape");
    // Against central differences of the function itself.
    let p = net_params(&n);
    let fd = common::finite_difference(|q| net(&net_from(&n, q), &x), &p);
    common::assert_close(&net_params(&g.n), &fd, "net vs central differences");
    let fd_x = common::finite_difference(|y| net(&n, y), &x);
    common::assert_close(&g.x, &fd_x, "x vs central differences");
    // Forward mode by the dot product: jvp along v equals <grad, v>.
    let v = net::Grad {
        n: Net {
            first: Layer {
                w: vec![0.1, -0.4, 0.2, 0.3],
                b: 0.5,
                scale: n.first.scale.clone(),
                idx: n.first.idx.clone(),
            },
            out: [0.1, 0.0, 0.2],
        },
        x: vec![0.3, -0.1, 0.2],
    };
    let along: f64 = net_params(&g.n)
        .iter()
        .zip(net_params(&v.n))
        .map(|(a, b)| a * b)
        .chain(g.x.iter().zip(&v.x).map(|(a, b)| a * b))
        .sum();
    common::near(net::jvp(&n, &x, &v).1, along, 1e-12, "jvp vs <grad, v>");
    // Second order: the compiled forward-over-reverse against the tape's.
    let tape_v = net_tape::Grad {
        n: v.n.clone(),
        x: v.x.clone(),
    };
    let (h, h_tape) = (net::hvp(&n, &x, &v), net_tape::hvp(&n, &x, &tape_v));
    common::assert_close_tol(&net_params(&h.n), &net_params(&h_tape.n), 1e-12, "hvp");
    common::assert_close_tol(&h.x, &h_tape.x, 1e-12, "hvp x");
    // A method reading its receiver's buffer field.
    let layer = &n.first;
    let x4 = [1.0, 2.0, 3.0, 0.5];
    let s: f64 = layer.b + (0..4).map(|i| layer.w[i] * x4[i]).sum::<f64>();
    let r4 = layer_response::grad(layer, &x4);
    let dt = 1.0 - s.tanh() * s.tanh();
    let expected: Vec<f64> = (0..4)
        .map(|i| dt * x4[i] * layer.w[0] + if i == 0 { s.tanh() } else { 0.0 })
        .collect();
    common::assert_close_tol(&r4.self_.w, &expected, 1e-12, "method's buffer field");
    common::near(r4.self_.b, dt * layer.w[0], 1e-12, "method's real field");
    assert!(layer_response::tape_stats(layer, &x4).compiled);
}
