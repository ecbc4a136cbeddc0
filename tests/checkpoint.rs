//! Checkpointed loops give the derivatives of the loop without checkpoints,
//! from much less memory.
//!
//! The adjoints of the state are carried exactly, so they agree to the last
//! bit; the adjoints of values the loop only reads (invariants) are summed
//! segment by segment instead of in one running sum, so they agree to
//! rounding: relative 1e-12 (the sums have at most 10⁵ terms of one sign
//! pattern, each rounded once, ε ≈ 1.1e-16).
#![allow(clippy::all)]

use deltad::differentiate;

/// Explicit Euler for x'' = -k x - c x'. On the tape, as the checkpointed
/// loops below are: the state adjoints agree to the last bit.
#[differentiate(tape)]
fn oscillator(x0: f64, v0: f64, k: f64, c: f64, #[no_grad] dt: f64, steps: usize) -> f64 {
    let mut x = x0;
    let mut v = v0;
    for _ in 0..steps {
        let a = -k * x - c * v;
        x += dt * v;
        v += dt * a;
    }
    x * x + v
}

#[differentiate]
fn oscillator_checkpointed(
    x0: f64,
    v0: f64,
    k: f64,
    c: f64,
    #[no_grad] dt: f64,
    steps: usize,
) -> f64 {
    let mut x = x0;
    let mut v = v0;
    #[checkpoint]
    for _ in 0..steps {
        let a = -k * x - c * v;
        x += dt * v;
        v += dt * a;
    }
    x * x + v
}

/// The same, compiled.
#[differentiate]
fn oscillator_compiled(x0: f64, v0: f64, k: f64, c: f64, #[no_grad] dt: f64, steps: usize) -> f64 {
    let mut x = x0;
    let mut v = v0;
    for _ in 0..steps {
        let a = -k * x - c * v;
        x += dt * v;
        v += dt * a;
    }
    x * x + v
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(1.0)
}

/// The same checkpointed loop on the tape (whole-loop recording).
#[differentiate(tape)]
fn oscillator_checkpointed_tape(
    x0: f64,
    v0: f64,
    k: f64,
    c: f64,
    #[no_grad] dt: f64,
    steps: usize,
) -> f64 {
    let mut x = x0;
    let mut v = v0;
    #[checkpoint]
    for _ in 0..steps {
        let a = -k * x - c * v;
        x += dt * v;
        v += dt * a;
    }
    x * x + v
}

#[test]
fn checkpointed_loops_give_the_same_derivatives() {
    for steps in [0, 1, 2, 3, 7, 10, 31, 100, 1000, 4097, 100_000] {
        let args = (1.0, 0.5, 2.0, 0.1, 1e-3, steps);
        // Compiled: the checkpointed loop runs each iteration's forward
        // and adjoint code exactly as the plain loop does, so every
        // derivative is the same to the last bit.
        let (value, g) =
            oscillator_compiled::value_and_grad(args.0, args.1, args.2, args.3, args.4, args.5);
        let (value_c, g_c) =
            oscillator_checkpointed::value_and_grad(args.0, args.1, args.2, args.3, args.4, args.5);
        assert_eq!(value, value_c, "{steps} steps");
        assert_eq!(
            (g.x0, g.v0, g.k, g.c),
            (g_c.x0, g_c.v0, g_c.k, g_c.c),
            "{steps} steps"
        );
        // On the tape: the state adjoints to the last bit, the others to
        // rounding (summed segment by segment).
        let (value_t, g_t) =
            oscillator::value_and_grad(args.0, args.1, args.2, args.3, args.4, args.5);
        let (value_tc, g_tc) = oscillator_checkpointed_tape::value_and_grad(
            args.0, args.1, args.2, args.3, args.4, args.5,
        );
        assert_eq!(value_t, value_tc, "{steps} steps");
        assert_eq!(
            (g_t.x0, g_t.v0),
            (g_tc.x0, g_tc.v0),
            "{steps} steps: state adjoints"
        );
        assert!(
            close(g_t.k, g_tc.k) && close(g_t.c, g_tc.c),
            "{steps} steps: {g_t:?} vs {g_tc:?}"
        );
        // Between the engines: equal to rounding (relative 1e-12 as above;
        // the state's adjoints are products of `steps` Jacobians, each
        // rounded once, in another order).
        assert_eq!(value, value_t, "{steps} steps");
        for (tape, compiled) in [(g_t.x0, g.x0), (g_t.v0, g.v0), (g_t.k, g.k), (g_t.c, g.c)] {
            assert!(close(tape, compiled), "{steps} steps: {g_t:?} vs {g:?}");
        }
    }
}

#[test]
fn checkpointing_keeps_about_the_square_root_of_the_loop() {
    let plain = oscillator::tape_stats(1.0, 0.5, 2.0, 0.1, 1e-3, 100_000);
    let checkpointed = oscillator_checkpointed_tape::tape_stats(1.0, 0.5, 2.0, 0.1, 1e-3, 100_000);
    // Without checkpoints the loop keeps its partials for every iteration.
    assert!(plain.bytes_used > 100_000 * 8, "{plain:?}");
    // With them: ~√(2n) states of 2 reals plus a segment of ~√(n/2)
    // iterations of partials, a few kilobytes.
    assert!(
        checkpointed.bytes_used * 100 < plain.bytes_used,
        "{checkpointed:?} vs {plain:?}"
    );
}

#[test]
fn compiled_checkpointing_keeps_memory_of_the_square_root() {
    let peak = |steps| {
        let plain = oscillator_compiled::tape_stats(1.0, 0.5, 2.0, 0.1, 1e-3, steps);
        let checkpointed = oscillator_checkpointed::tape_stats(1.0, 0.5, 2.0, 0.1, 1e-3, steps);
        assert!(plain.compiled && checkpointed.compiled);
        (plain.peak_bytes as f64, checkpointed.peak_bytes as f64)
    };
    let (plain_small, small) = peak(10_000);
    let (plain_large, large) = peak(1_000_000);
    // The plain loop keeps a value per iteration: 100 times the steps,
    // 100 times the memory.
    assert!(
        plain_large > 50.0 * plain_small,
        "{plain_small} -> {plain_large}"
    );
    // Checkpointed: √(2n) snapshots of the state and one segment of
    // √(n/2) iterations at a time, so 100 times the steps take about 10
    // times the memory (the stacks' buffers grow by doubling: up to 2x).
    assert!(large < 25.0 * small, "{small} -> {large}");
    assert!(large * 50.0 < plain_large, "{large} vs {plain_large}");
}

/// Falls from `h0` until the ground, then reports t·v: an early return from
/// the checkpointed loop.
#[differentiate]
fn landing(h0: f64, v0: f64, t0: f64, #[no_grad] dt: f64, checkpoint: bool) -> f64 {
    let mut h = h0;
    let mut v = v0;
    let mut t = t0;
    if checkpoint {
        #[checkpoint]
        for _ in 0..1_000_000 {
            if h < 0.0 {
                return t * v;
            }
            h += dt * v;
            v -= dt * 9.81;
            t += dt;
        }
    } else {
        for _ in 0..1_000_000 {
            if h < 0.0 {
                return t * v;
            }
            h += dt * v;
            v -= dt * 9.81;
            t += dt;
        }
    }
    h
}

/// Stops when the state crosses a threshold: a `break` out of the loop.
#[differentiate]
fn until_large(x0: f64, rate: f64, checkpoint: bool) -> f64 {
    let mut x = x0;
    if checkpoint {
        #[checkpoint]
        for _ in 0..10_000 {
            if x > 100.0 {
                break;
            }
            x *= 1.0 + rate;
        }
    } else {
        for _ in 0..10_000 {
            if x > 100.0 {
                break;
            }
            x *= 1.0 + rate;
        }
    }
    x.ln()
}

#[test]
fn early_exits_out_of_a_checkpointed_loop() {
    let plain = landing::value_and_grad(10.0, 1.0, 0.0, 1e-4, false);
    let checkpointed = landing::value_and_grad(10.0, 1.0, 0.0, 1e-4, true);
    assert_eq!(plain.0, checkpointed.0);
    assert_eq!(plain.1, checkpointed.1);
    let plain = until_large::value_and_grad(1.0, 0.01, false);
    let checkpointed = until_large::value_and_grad(1.0, 0.01, true);
    assert_eq!(plain.0, checkpointed.0);
    assert!(close(plain.1.rate, checkpointed.1.rate) && plain.1.x0 == checkpointed.1.x0);
}

/// The README's example with a leading early exit and a `let` in the body,
/// on both engines, checkpointed or not.
macro_rules! stopped_oscillator {
    ($name:ident, $engine:meta, $marker:meta) => {
        #[$engine]
        fn $name(x0: f64, k: f64, #[no_grad] dt: f64, steps: usize) -> f64 {
            let mut x = x0;
            let mut v = 0.0;
            #[$marker]
            for _ in 0..steps {
                if x < 0.0 {
                    break;
                }
                let a = -k * x;
                x += dt * v;
                v += dt * a;
            }
            x
        }
    };
}
stopped_oscillator!(stopped, differentiate, checkpoint);
stopped_oscillator!(stopped_plain, differentiate, allow(unused));
stopped_oscillator!(stopped_tape, differentiate(tape), checkpoint);
stopped_oscillator!(stopped_tape_plain, differentiate(tape), allow(unused));

#[test]
fn leading_exit_and_a_let_in_a_checkpointed_loop() {
    // 10 steps: no exit; 1,000 and 5,000: x crosses 0 and the loop stops.
    for steps in [10, 1_000, 5_000] {
        let plain = stopped_plain::value_and_grad(1.0, 2.0, 0.01, steps);
        let checkpointed = stopped::value_and_grad(1.0, 2.0, 0.01, steps);
        // The compiled path: the same code runs, every bit the same.
        assert_eq!(plain.0.to_bits(), checkpointed.0.to_bits());
        assert_eq!(
            (plain.1.x0.to_bits(), plain.1.k.to_bits()),
            (checkpointed.1.x0.to_bits(), checkpointed.1.k.to_bits())
        );
        // The tape: the state's adjoint to the last bit, the adjoint of the
        // value the loop reads up to summation order.
        let tape_plain = stopped_tape_plain::value_and_grad(1.0, 2.0, 0.01, steps);
        let tape = stopped_tape::value_and_grad(1.0, 2.0, 0.01, steps);
        assert_eq!(tape.0, plain.0);
        assert_eq!(tape.1.x0, tape_plain.1.x0);
        assert!(close(tape.1.k, tape_plain.1.k) && close(tape.1.k, plain.1.k));
        // Against central differences (h = 1e-6: the exit is not crossed
        // by such a step at these points; truncation O(h²), rounding O(ε/h)).
        let h = 1e-6;
        let dx =
            (stopped(1.0 + h, 2.0, 0.01, steps) - stopped(1.0 - h, 2.0, 0.01, steps)) / (2.0 * h);
        let dk =
            (stopped(1.0, 2.0 + h, 0.01, steps) - stopped(1.0, 2.0 - h, 0.01, steps)) / (2.0 * h);
        assert!(
            (dx - plain.1.x0).abs() < 1e-7 && (dk - plain.1.k).abs() < 1e-7,
            "{dx} {dk} {:?}",
            plain.1
        );
    }
}

/// Checkpointed loops inside another loop, and in a called function.
#[differentiate]
fn relax(x: f64, k: f64, rounds: usize) -> f64 {
    let mut y = x;
    for _ in 0..rounds {
        y = oscillator_checkpointed(y, 0.0, k, 0.5, 1e-2, 300) + y.sin();
    }
    y
}

#[differentiate]
fn relax_plain(x: f64, k: f64, rounds: usize) -> f64 {
    let mut y = x;
    for _ in 0..rounds {
        y = oscillator(y, 0.0, k, 0.5, 1e-2, 300) + y.sin();
    }
    y
}

#[test]
fn in_loops_and_called_functions() {
    let (value, g) = relax::value_and_grad(0.3, 1.5, 4);
    let (value_plain, g_plain) = relax_plain::value_and_grad(0.3, 1.5, 4);
    assert_eq!(value, value_plain);
    assert!(
        close(g.x, g_plain.x) && close(g.k, g_plain.k),
        "{g:?} vs {g_plain:?}"
    );
}

#[test]
fn forward_mode_and_hessians_through_a_checkpointed_loop() {
    let tangent = oscillator::Grad {
        x0: 1.0,
        v0: -0.5,
        k: 0.25,
        c: 0.0,
    };
    let (_, d) = oscillator::jvp(1.0, 0.5, 2.0, 0.1, 1e-3, 500, &tangent);
    let tangent_c = oscillator_checkpointed::Grad {
        x0: 1.0,
        v0: -0.5,
        k: 0.25,
        c: 0.0,
    };
    let (_, d_c) = oscillator_checkpointed::jvp(1.0, 0.5, 2.0, 0.1, 1e-3, 500, &tangent_c);
    assert!(close(d, d_c));
    let h = oscillator::hessian(1.0, 0.5, 2.0, 0.1, 1e-3, 500);
    let h_c = oscillator_checkpointed::hessian(1.0, 0.5, 2.0, 0.1, 1e-3, 500);
    for (row, row_c) in h.iter().zip(&h_c) {
        for (a, b) in [
            (row.x0, row_c.x0),
            (row.v0, row_c.v0),
            (row.k, row_c.k),
            (row.c, row_c.c),
        ] {
            assert!(close(a, b), "{row:?} vs {row_c:?}");
        }
    }
}

#[differentiate]
fn cell(h: f64, x: f64, w: &[f64], #[no_grad] scale: f64) -> f64 {
    (w[0] * h + w[1] * x).tanh() * scale
}

/// A recurrence whose cell calls are checkpointed: each call keeps only its
/// arguments, and is re-run during the sweep.
#[differentiate]
fn recurrence(w: &[f64], #[no_grad] xs: &[f64], checkpoint: bool) -> f64 {
    let mut h = 0.0;
    for x in xs {
        if checkpoint {
            #[checkpoint]
            let next = cell(h, *x, w, 1.5);
            h = next;
        } else {
            let next = cell(h, *x, w, 1.5);
            h = next;
        }
    }
    h * h
}

/// A checkpointed call whose callee checkpoints a loop: scopes nest.
#[differentiate]
fn nested_scopes(x0: f64, k: f64) -> f64 {
    #[checkpoint]
    let y = oscillator_checkpointed(x0, 0.5, k, 0.1, 1e-3, 2000);
    #[checkpoint]
    let z = oscillator_checkpointed(y, x0, k, 0.2, 1e-3, 500);
    y * z
}

#[differentiate]
fn nested_plain(x0: f64, k: f64) -> f64 {
    let y = oscillator(x0, 0.5, k, 0.1, 1e-3, 2000);
    let z = oscillator(y, x0, k, 0.2, 1e-3, 500);
    y * z
}

#[test]
fn checkpointed_calls_in_loops_and_nested() {
    let w = [0.7, -1.3];
    let xs: Vec<f64> = (0..50).map(|i| (i as f64 * 0.3).sin()).collect();
    let plain = recurrence::value_and_grad(&w, &xs, false);
    let checkpointed = recurrence::value_and_grad(&w, &xs, true);
    assert_eq!(plain.0, checkpointed.0);
    for (a, b) in plain.1.w.iter().zip(&checkpointed.1.w) {
        assert!(close(*a, *b), "{plain:?} vs {checkpointed:?}");
    }
    let plain = nested_plain::value_and_grad(0.8, 1.7);
    let checkpointed = nested_scopes::value_and_grad(0.8, 1.7);
    assert_eq!(plain.0, checkpointed.0);
    assert!(
        close(plain.1.x0, checkpointed.1.x0) && close(plain.1.k, checkpointed.1.k),
        "{plain:?} vs {checkpointed:?}"
    );
}

/// A recurrent cell with its weights, called at every step: the issue of a
/// checkpointed call keeping more than it saves.
#[differentiate]
fn gated_cell(h: f64, x: f64, w: &[f64]) -> f64 {
    let mut s = w[0] * h + w[1] * x;
    for k in 2..w.len() {
        s = (s * w[k]).tanh() + h;
    }
    s
}

macro_rules! gated_run {
    ($name:ident, $engine:meta, $marker:meta) => {
        #[$engine]
        fn $name(w: &[f64], #[no_grad] xs: &[f64]) -> f64 {
            let mut h = 0.0;
            for t in 0..xs.len() {
                #[$marker]
                let next = gated_cell(h, xs[t], w);
                h = next;
            }
            h
        }
    };
}
gated_run!(gated_checkpointed, differentiate, checkpoint);
gated_run!(gated_plain, differentiate, allow(unused));
gated_run!(gated_checkpointed_tape, differentiate(tape), checkpoint);
gated_run!(gated_plain_tape, differentiate(tape), allow(unused));

#[test]
fn what_a_checkpointed_call_keeps() {
    let w: Vec<f64> = (0..8).map(|i| 0.1 * i as f64 - 0.3).collect();
    let xs: Vec<f64> = (0..500).map(|i| (i as f64 * 0.01).sin()).collect();
    // The compiled path keeps nothing of the call: the state, one real per
    // step, against the cell's kept values per step without the attribute.
    let checkpointed = gated_checkpointed::tape_stats(&w, &xs);
    let plain = gated_plain::tape_stats(&w, &xs);
    assert!(checkpointed.compiled && plain.compiled);
    assert!(
        checkpointed.bytes_used * 5 < plain.bytes_used,
        "{checkpointed:?} vs {plain:?}"
    );
    // On the tape the call keeps its arguments, but the weights, the same
    // bindings at every step, only once: what it keeps per step does not
    // grow with the number of weights (8 → 64 weights adds, once, the 56 new
    // weights' values and ids in the call and their input bindings' ends,
    // 8 + 4 + 4 bytes each), and is less than the cell records.
    let checkpointed_tape = gated_checkpointed_tape::tape_stats(&w, &xs);
    let plain_tape = gated_plain_tape::tape_stats(&w, &xs);
    assert!(
        checkpointed_tape.bytes_used < plain_tape.bytes_used,
        "{checkpointed_tape:?} vs {plain_tape:?}"
    );
    let more_weights: Vec<f64> = (0..64).map(|i| 0.01 * i as f64 - 0.3).collect();
    let grown = gated_checkpointed_tape::tape_stats(&more_weights, &xs);
    assert_eq!(
        grown.bytes_used - checkpointed_tape.bytes_used,
        56 * (8 + 4 + 4),
        "{grown:?} vs {checkpointed_tape:?}"
    );
    // Every engine and marker gives the same gradient.
    let g = gated_plain::grad(&w, &xs);
    for other in [
        gated_checkpointed::grad(&w, &xs).w,
        gated_checkpointed_tape::grad(&w, &xs).w,
        gated_plain_tape::grad(&w, &xs).w,
    ] {
        for (a, b) in g.w.iter().zip(&other) {
            assert!(close(*a, *b), "{:?} vs {other:?}", g.w);
        }
    }
}

/// Second order through checkpointed calls on the tape: their re-runs
/// record on dual numbers (forward over reverse), and calls sharing their
/// weights give the plain loop's Hessian-vector product.
#[test]
fn hessian_vector_products_through_checkpointed_calls() {
    let w: Vec<f64> = (0..8).map(|i| 0.1 * i as f64 - 0.3).collect();
    let xs: Vec<f64> = (0..40).map(|i| (i as f64 * 0.1).sin()).collect();
    let direction: Vec<f64> = (0..w.len()).map(|i| 0.5 - 0.1 * i as f64).collect();
    let plain_hv = gated_plain::hvp(
        &w,
        &xs,
        &gated_plain::Grad {
            w: direction.clone(),
        },
    );
    let tape_hv =
        gated_checkpointed_tape::hvp(&w, &xs, &gated_checkpointed_tape::Grad { w: direction });
    for (a, b) in plain_hv.w.iter().zip(&tape_hv.w) {
        assert!(close(*a, *b), "{:?} vs {:?}", plain_hv.w, tape_hv.w);
    }
}
