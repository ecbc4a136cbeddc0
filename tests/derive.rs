//! `#[derive(Differentiable)]`: the trait's operations on user types.
use deltad::{differentiate, Differentiable, Tape};

#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Vec3 {
    pub x: f64,
    pub y: f64,
    pub z: f64,
}

#[derive(Differentiable, Clone, Debug, PartialEq)]
struct Body {
    position: Vec3,
    weights: Vec<f64>,
    #[no_grad]
    label: String,
    count: usize,
}

#[derive(Differentiable, Clone, Debug, PartialEq)]
enum Shape {
    Circle(f64),
    Rect { w: f64, h: f64 },
    Empty,
}

#[test]
fn inputs_and_adjoints_round_trip() {
    let body = Body {
        position: Vec3 {
            x: 1.0,
            y: 2.0,
            z: 3.0,
        },
        weights: vec![0.5, 0.25],
        label: "b".into(),
        count: 7,
    };
    let tape = Tape::<f64>::new();
    let dual = body.input(&tape);
    assert_eq!(tape.len(), 5);
    let adjoints: Vec<f64> = (0..5).map(|i| i as f64 * 10.0).collect();
    let g = Body::from_twin(Body::adjoint(&dual, &adjoints));
    assert_eq!(
        g.position,
        Vec3 {
            x: 0.0,
            y: 10.0,
            z: 20.0
        }
    );
    assert_eq!(g.weights, vec![30.0, 40.0]);
    assert_eq!(g.label, "b");
    assert_eq!(g.count, 7);
    let value = Body::from_twin(Body::value(&dual));
    assert_eq!(value, body);
    let shape = Shape::Rect { w: 2.0, h: 3.0 };
    let tape = Tape::<f64>::new();
    let dual = shape.input(&tape);
    assert_eq!(tape.len(), 2);
    assert_eq!(
        format!("{:?}", Shape::value(&dual)),
        "Shape::Rect { w: 2.0, h: 3.0 }"
    );
    let _ = Shape::Circle(1.0).input(&tape);
    let _ = Shape::Empty.input(&tape);
}

/// Two values are shaped alike when their buffers have the same lengths
/// and their variants are the same; `#[no_grad]` fields and discrete ones
/// do not count.
#[test]
fn shapes_compare_leaf_by_leaf() {
    let body = |weights: usize, label: &str, count: usize| Body {
        position: Vec3 {
            x: 1.0,
            y: 2.0,
            z: 3.0,
        },
        weights: vec![0.5; weights],
        label: label.into(),
        count,
    };
    assert!(body(2, "a", 1).same_shape(&body(2, "b", 9)));
    assert!(!body(2, "a", 1).same_shape(&body(3, "a", 1)));
    let (circle, rect) = (Shape::Circle(1.0), Shape::Rect { w: 2.0, h: 3.0 });
    assert!(circle.same_shape(&Shape::Circle(-4.0)));
    assert!(!circle.same_shape(&rect));
    assert!(!rect.same_shape(&Shape::Empty));
    assert!(Shape::Empty.same_shape(&Shape::Empty));
    // Nested buffers: the same 4 reals, split 2 + 2 or 1 + 3.
    let rows = |a: usize, b: usize| vec![vec![0.0; a], vec![0.0; b]];
    assert!(Differentiable::<f64>::same_shape(&rows(2, 2), &rows(2, 2)));
    assert!(!Differentiable::<f64>::same_shape(&rows(2, 2), &rows(1, 3)));
    let some = |n: usize| Some((vec![1.0; n], 2.0));
    assert!(Differentiable::<f64>::same_shape(&some(2), &some(2)));
    assert!(!Differentiable::<f64>::same_shape(&some(2), &some(3)));
    assert!(!Differentiable::<f64>::same_shape(&some(0), &None));
}

// Types named like the generated code's type parameters (issue: the derive
// named its own parameters `S` and `T`, so these did not compile).
mod single_letter_names {
    use deltad::{differentiate, Differentiable};

    #[derive(Differentiable, Clone, Debug)]
    pub struct T {
        pub e: f64,
    }

    #[derive(Differentiable, Clone, Debug)]
    pub struct S {
        pub e: f64,
        pub w: Vec<f64>,
    }

    #[differentiate]
    pub fn f(t: &T, s: &S) -> f64 {
        t.e * s.e + s.w.iter().map(|w| w * t.e).sum::<f64>()
    }

    #[test]
    fn structs_named_s_and_t() {
        let g = f::grad(
            &T { e: 2.0 },
            &S {
                e: 3.0,
                w: vec![0.5, 1.5],
            },
        );
        // ∂/∂t.e = s.e + Σw = 5, ∂/∂s.e = t.e = 2, ∂/∂w_i = t.e = 2.
        assert_eq!(g.t.e, 5.0);
        assert_eq!(g.s.e, 2.0);
        assert_eq!(g.s.w, vec![2.0, 2.0]);
    }
}

/// An array field whose length is an associated constant, `Self::N`
/// (issue 19 item 4: the twin is another type, where `Self` means it).
#[derive(Differentiable, Clone, Debug, PartialEq)]
struct Rotor {
    v: [f64; Self::N],
}

impl Rotor {
    const N: usize = 4;
}

#[differentiate]
fn rotor_product(r: &Rotor) -> f64 {
    r.v[0] * r.v[3] + r.v[1].sin()
}

#[test]
fn array_length_named_through_self() {
    let r = Rotor {
        v: [1.5, 0.25, -2.0, 4.0],
    };
    let g = rotor_product::grad(&r);
    assert_eq!(g.r.v, [4.0, 0.25f64.cos(), 0.0, 1.5]);
}

/// `&self` methods of a derived type that is not `Clone` (issue 19 item 3):
/// differentiated directly and called from another differentiated function
/// on a constant receiver.
#[derive(Debug, Differentiable)]
struct Solver {
    e: f64,
}

#[differentiate]
impl Solver {
    fn energy(&self, x: f64) -> f64 {
        self.e * x * x
    }
}

#[differentiate]
fn energy_twice(x: f64, #[no_grad] s: &Solver) -> f64 {
    s.energy(x) + s.energy(2.0 * x)
}

#[test]
fn methods_of_a_type_that_is_not_clone() {
    let s = Solver { e: 1.5 };
    let g = solver_energy::grad(&s, 3.0);
    assert_eq!((g.self_.e, g.x), (9.0, 9.0));
    // e x² + 4 e x² = 5 e x².
    assert_eq!(energy_twice::grad(3.0, &s).x, 10.0 * 1.5 * 3.0);
}

/// A method on the tape reading an integer field as a real (`self.n as
/// f64`): the recording pass cannot see the field's type, so the cast
/// converts either (it dropped the cast, and `usize` did not compile); the
/// same function on the compiled path for reference.
#[derive(Debug, Differentiable)]
struct Midpoint {
    n: usize,
    w: f64,
}

#[differentiate(tape)]
impl Midpoint {
    fn weighted(&self, x: f64) -> f64 {
        x * self.n as f64 * self.w + (self.n as f64).sqrt() * x * x
    }
}

#[differentiate]
fn weighted_compiled(x: f64, m: &Midpoint) -> f64 {
    x * m.n as f64 * m.w + (m.n as f64).sqrt() * x * x
}

#[test]
fn an_integer_field_cast_to_a_real_on_the_tape() {
    let m = Midpoint { n: 9, w: 0.5 };
    let (x, g) = (1.25, midpoint_weighted::grad(&m, 1.25));
    // n w x + √n x²: ∂x = n w + 2 √n x, ∂w = n x.
    assert_eq!(g.x, 9.0 * 0.5 + 2.0 * 3.0 * x);
    assert_eq!(g.self_.w, 9.0 * x);
    assert!(!midpoint_weighted::tape_stats(&m, x).compiled);
    let g_c = weighted_compiled::grad(x, &m);
    assert_eq!((g_c.x, g_c.m.w), (g.x, g.self_.w));
}
