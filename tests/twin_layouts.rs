//! Buffers of user types in compiled passes: read as their twins in place
//! where the type is laid out as its twin (`TWIN_LAYOUT`), copied where it
//! is not; gradients the same either way, against the tape and finite
//! differences, through `grad`, `value_and_grad` and `grad_into`.

// Written the way users write them, not the way clippy would.
#![allow(clippy::needless_range_loop)]

use deltad::{differentiate, Differentiable};

#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Pt {
    pub a: f64,
    pub b: f64,
}

/// Laid out as its twin: reals, a nested type that is, discrete and
/// constant fields (the twin has them as they are).
#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Probe {
    pub position: Pt,
    pub mass: f64,
    #[no_grad]
    pub drag: f64,
    pub steps: usize,
    #[no_grad]
    pub name: String,
}

/// Not known to be laid out as its twin: a tuple's twin is a tuple of
/// other types, which Rust does not promise to lay out alike.
#[derive(Differentiable, Clone, Debug, PartialEq)]
pub struct Cloud {
    pub weights: (f64, f64),
    pub scale: f64,
}

/// Each function twice: compiled, and on the tape (the reference).
macro_rules! both_engines {
    ($compiled:ident, $tape:ident, $($function:tt)*) => {
        #[differentiate(compiled)]
        fn $compiled $($function)*
        #[differentiate(tape)]
        fn $tape $($function)*
    };
}

both_engines!(probes, probes_tape, (ps: &[Probe], x: f64) -> f64 {
    let mut total = 0.0;
    for i in 0..ps.len() {
        let p = &ps[i];
        total += p.mass * (p.position.a * x).sin() + p.drag * p.position.b * p.position.b;
    }
    total
});

both_engines!(clouds, clouds_tape, (cs: &[Cloud], x: f64) -> f64 {
    let mut total = 0.0;
    for i in 0..cs.len() {
        total += cs[i].scale * cs[i].weights.0 * cs[i].weights.1 * x;
    }
    total
});

#[test]
fn layouts_are_checked() {
    assert!(<Pt as deltad::Differentiable<f64>>::TWIN_LAYOUT.is_some());
    assert!(<Probe as deltad::Differentiable<f64>>::TWIN_LAYOUT.is_some());
    assert!(<Cloud as deltad::Differentiable<f64>>::TWIN_LAYOUT.is_none());
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * (1.0 + a.abs().max(b.abs()))
}

fn probe_reals(p: &Probe) -> [f64; 3] {
    [p.position.a, p.position.b, p.mass]
}

fn cloud_reals(c: &Cloud) -> [f64; 3] {
    [c.weights.0, c.weights.1, c.scale]
}

/// `grad`, `value_and_grad` and `grad_into` (twice into one `Grad`, empty
/// at first) of `$f` against `$tape`'s gradient; each gradient's real
/// fields by `$reals`, its constant and discrete fields those of the
/// arguments.
macro_rules! same_gradients {
    ($f:ident, $tape:ident, $field:ident, $xs:expr, $x:expr, $reals:ident, $constants:expr) => {{
        let (xs, x) = (&$xs, $x);
        let reference = $tape::grad(xs, x);
        let alone = $f::grad(xs, x);
        let (value, both) = $f::value_and_grad(xs, x);
        assert_eq!(value.to_bits(), $f(xs, x).to_bits());
        let mut sum = $f::Grad::default();
        let first = $f::grad_into(xs, x, &mut sum);
        $f::grad_into(xs, x, &mut sum);
        assert_eq!(first.to_bits(), value.to_bits());
        assert!(close(alone.x, reference.x) && close(both.x, reference.x));
        assert!(close(sum.x, 2.0 * reference.x));
        for (i, r) in reference.$field.iter().enumerate() {
            let (a, b, s) = (&alone.$field[i], &both.$field[i], &sum.$field[i]);
            for (k, want) in $reals(r).into_iter().enumerate() {
                assert!(close($reals(a)[k], want), "grad, element {i}, real {k}");
                assert!(
                    close($reals(b)[k], want),
                    "value_and_grad, element {i}, real {k}"
                );
                assert!(
                    close($reals(s)[k], 2.0 * want),
                    "grad_into, element {i}, real {k}"
                );
            }
            let constants = $constants;
            assert!(constants(a, &xs[i]) && constants(b, &xs[i]) && constants(s, &xs[i]));
        }
        $f::check_derivatives(xs, x).assert_within(1e-6);
    }};
}

#[test]
fn buffers_read_in_place_and_copied_give_the_same_gradients() {
    let ps: Vec<Probe> = (0..5)
        .map(|i| Probe {
            position: Pt {
                a: 0.3 * i as f64 - 0.5,
                b: 1.0 - 0.2 * i as f64,
            },
            mass: 1.0 + 0.1 * i as f64,
            drag: 0.25 * i as f64,
            steps: i,
            name: format!("p{i}"),
        })
        .collect();
    same_gradients!(
        probes,
        probes_tape,
        ps,
        ps,
        0.7,
        probe_reals,
        |g: &Probe, p: &Probe| { g.drag == p.drag && g.steps == p.steps && g.name == p.name }
    );
    let cs: Vec<Cloud> = (0..4)
        .map(|i| Cloud {
            weights: (0.5 - 0.3 * i as f64, 0.2 * i as f64 + 0.1),
            scale: 1.5 - 0.25 * i as f64,
        })
        .collect();
    same_gradients!(
        clouds,
        clouds_tape,
        cs,
        cs,
        -0.4,
        cloud_reals,
        |_: &Cloud, _: &Cloud| true
    );
}
