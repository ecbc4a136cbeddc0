//! In steady state a gradient call allocates nothing but its result, and
//! `grad_into` nothing at all: tapes, their scratch buffers and the input
//! buffers of slice parameters are reused (per thread). Counted with a
//! global allocator that counts this thread's allocations.
#![allow(clippy::all)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use deltad::differentiate;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|count| count.set(count.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|count| count.set(count.get() + 1));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by `f` on this thread.
fn allocations(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

/// A reduction (an accumulator) over a slice parameter.
#[differentiate]
fn rosenbrock(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = x[i + 1] - x[i] * x[i];
        let b = 1.0 - x[i];
        s += 100.0 * a * a + b * b;
    }
    s
}

/// A loop recorded as a whole.
#[differentiate]
fn taylor(x: f64, iters: usize) -> f64 {
    let mut prev = 1.0;
    let mut acc = 1.0;
    for _ in 0..iters {
        prev = prev * -(x - 1.0);
        acc = prev + acc;
    }
    acc
}

/// Vector primitives inside a `#[preaccumulate]` loop.
#[differentiate]
fn logistic_loss(w: &[f64], #[no_grad] x: &[f64], d: usize) -> f64 {
    let mut total = 0.0;
    #[preaccumulate]
    for i in 0..x.len() / d {
        let z = deltad::dot(w, &x[i * d..(i + 1) * d]);
        total += z.exp().ln_1p();
    }
    total + 0.5 * deltad::sum(w)
}

#[test]
fn grad_into_allocates_nothing_in_steady_state() {
    let x: Vec<f64> = (0..1000).map(|i| (i as f64 * 0.1).sin()).collect();
    let mut grad = rosenbrock::Grad::default();
    for _ in 0..3 {
        rosenbrock::grad_into(&x, &mut grad);
    }
    assert_eq!(
        allocations(|| {
            for _ in 0..10 {
                rosenbrock::grad_into(&x, &mut grad);
            }
        }),
        0
    );

    let mut grad = taylor::Grad::default();
    taylor::grad_into(0.5, 1000, &mut grad);
    assert_eq!(
        allocations(|| {
            taylor::grad_into(0.5, 1000, &mut grad);
        }),
        0
    );

    let w = [0.1, -0.2, 0.3];
    let data: Vec<f64> = (0..300).map(|i| (i as f64 * 0.37).cos()).collect();
    let mut grad = logistic_loss::Grad::default();
    for _ in 0..3 {
        logistic_loss::grad_into(&w, &data, 3, &mut grad);
    }
    assert_eq!(
        allocations(|| {
            logistic_loss::grad_into(&w, &data, 3, &mut grad);
        }),
        0
    );
}

#[test]
fn value_and_grad_allocates_only_its_result() {
    let x: Vec<f64> = (0..1000).map(|i| (i as f64 * 0.1).sin()).collect();
    let _ = rosenbrock::value_and_grad(&x);
    // The result's one `Vec`.
    assert_eq!(allocations(|| drop(rosenbrock::value_and_grad(&x))), 1);
}

/// A compiled function of a real and a slice.
#[differentiate]
fn spring(k: f64, x: &[f64]) -> f64 {
    k * (x[0] - x[1]) * (x[0] - x[1])
}

/// A compiled function of one real.
#[differentiate]
fn bump(x: f64) -> f64 {
    x.sin() * x
}

/// On the tape, calling the compiled functions (each call one binding, its
/// arguments and partials in buffers the tape lends) and taking a nested
/// gradient of one (preaccumulated: one binding, no inner tape).
#[differentiate(tape)]
fn chain_on_the_tape(x: &[f64], k: f64) -> f64 {
    let mut total = 0.0;
    for i in 0..x.len() - 1 {
        total += spring(k, &x[i..i + 2]) + bump::grad(x[i]).x * k;
    }
    total
}

#[test]
fn calls_of_compiled_functions_from_the_tape_allocate_nothing_in_steady_state() {
    let x: Vec<f64> = (0..200).map(|i| (i as f64 * 0.3).cos()).collect();
    let mut grad = chain_on_the_tape::Grad::default();
    for _ in 0..3 {
        chain_on_the_tape::grad_into(&x, 0.7, &mut grad);
    }
    assert_eq!(
        allocations(|| {
            chain_on_the_tape::grad_into(&x, 0.7, &mut grad);
        }),
        0
    );
    // The gradient itself, against the closed form: ∂/∂k = Σ (x_i − x_{i+1})²
    // + Σ (sin x_i + x_i cos x_i).
    let expected: f64 = (0..x.len() - 1)
        .map(|i| (x[i] - x[i + 1]).powi(2) + x[i].sin() + x[i] * x[i].cos())
        .sum();
    let g = chain_on_the_tape::grad(&x, 0.7);
    assert!(
        (g.k - expected).abs() < 1e-12 * expected.abs().max(1.0),
        "{} vs {expected}",
        g.k
    );
}

#[derive(deltad::Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Charge {
    pub x: f64,
    pub y: f64,
    pub q: f64,
}

#[differentiate]
fn field_energy(charges: &[Charge], px: f64, py: f64) -> f64 {
    let mut total = 0.0;
    for i in 0..charges.len() {
        let c = &charges[i];
        let (dx, dy) = (c.x - px, c.y - py);
        total += c.q / (dx * dx + dy * dy + 1.0).sqrt();
    }
    total
}

/// A buffer of a user type laid out as its twin is read in place and its
/// gradient written in place: `grad_into` allocates nothing, and
/// `value_and_grad` only its result.
#[test]
fn buffers_of_user_types_are_not_copied() {
    let charges: Vec<Charge> = (0..200)
        .map(|i| Charge {
            x: (i as f64 * 0.3).sin(),
            y: (i as f64 * 0.7).cos(),
            q: 1.0 + 0.01 * i as f64,
        })
        .collect();
    let mut grad = field_energy::Grad::default();
    for _ in 0..3 {
        field_energy::grad_into(&charges, 0.2, -0.1, &mut grad);
    }
    assert_eq!(
        allocations(|| {
            field_energy::grad_into(&charges, 0.2, -0.1, &mut grad);
        }),
        0
    );
    let _ = field_energy::value_and_grad(&charges, 0.2, -0.1);
    // The result's one `Vec`.
    assert_eq!(
        allocations(|| drop(field_energy::value_and_grad(&charges, 0.2, -0.1))),
        1
    );
}

/// A type not laid out as its twin (a tuple field): its buffers are copied
/// into twins, in buffers the per-thread pool keeps between calls.
#[derive(deltad::Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Spring {
    pub ends: (f64, f64),
    pub stiffness: f64,
}

#[differentiate]
fn spring_energy(springs: &[Spring], rest: f64) -> f64 {
    let mut total = 0.0;
    for s in springs {
        let stretch = s.ends.1 - s.ends.0 - rest;
        total += 0.5 * s.stiffness * stretch * stretch;
    }
    total
}

/// `grad_into` of a buffer of such a type allocates nothing in steady
/// state either; the gradient against the hand-derived one.
#[test]
fn buffers_of_types_not_laid_out_as_twins_reuse_pooled_buffers() {
    let springs: Vec<Spring> = (0..50)
        .map(|i| Spring {
            ends: ((i as f64 * 0.3).sin(), 1.0 + (i as f64 * 0.7).cos()),
            stiffness: 1.0 + 0.1 * i as f64,
        })
        .collect();
    let mut grad = spring_energy::Grad::default();
    for _ in 0..3 {
        spring_energy::grad_into(&springs, 0.4, &mut grad);
    }
    assert_eq!(
        allocations(|| {
            spring_energy::grad_into(&springs, 0.4, &mut grad);
        }),
        0
    );
    // Four calls added into the gradient: 4 × ∂E/∂·.
    for (g, s) in grad.springs.iter().zip(&springs) {
        let stretch = s.ends.1 - s.ends.0 - 0.4;
        let expected = Spring {
            ends: (-4.0 * s.stiffness * stretch, 4.0 * s.stiffness * stretch),
            stiffness: 4.0 * 0.5 * stretch * stretch,
        };
        for (a, e) in [
            (g.ends.0, expected.ends.0),
            (g.ends.1, expected.ends.1),
            (g.stiffness, expected.stiffness),
        ] {
            assert!((a - e).abs() <= 1e-12 * e.abs().max(1.0), "{a} vs {e}");
        }
    }
}
