//! Higher-order code inside differentiated functions: closures capturing
//! differentiated values, iterator chains, and functions generic over
//! `F: Fn(..)` called with closures. Checked against finite differences.
#![allow(clippy::all)]

mod common;
use common::*;
use deltad::differentiate;

#[differentiate]
fn closures_capture(w: &[f64], b: f64) -> f64 {
    let affine = |x: f64| x * b + 1.0;
    let mut calls = 0;
    let mut square_plus = |x| {
        calls += 1;
        x * x + b
    };
    let mut s = 0.0;
    for &x in w {
        s += affine(x) * square_plus(x);
    }
    assert_eq!(calls, w.len());
    s + affine(2.0)
}

#[test]
fn closures_defined_and_called_inside() {
    let w = [0.5, -1.5, 2.0];
    let b = 0.75;
    let (value, g) = closures_capture::value_and_grad(&w, b);
    assert_eq!(value, closures_capture(&w, b));
    let mut point = w.to_vec();
    point.push(b);
    let reference = finite_difference(|p| closures_capture(&p[..3], p[3]), &point);
    let mut got = g.w.clone();
    got.push(g.b);
    assert_close(&got, &reference, "closures");
}

#[differentiate]
fn iterator_chains(x: &[f64], y: &[f64], t: f64) -> f64 {
    let weighted: f64 = x.iter().zip(y).map(|(a, b)| a * b * t).sum();
    let indexed: f64 = x.iter().enumerate().map(|(i, v)| v * i as f64).sum();
    let product: f64 = y.iter().map(|v| 1.0 + v * t).product();
    let folded = x.iter().fold(0.0, |acc, v| acc * t + v);
    let largest = y
        .iter()
        .copied()
        .max_by(|a, b| a.partial_cmp(b).unwrap())
        .unwrap();
    let smallest = x
        .iter()
        .copied()
        .min_by(|a, b| a.partial_cmp(b).unwrap())
        .unwrap();
    let squares: Vec<f64> = x.iter().map(|v| v * v).collect();
    let peak = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let positive: f64 = x.iter().filter(|v| **v > 0.0).map(|v| v * t).sum();
    weighted + indexed + product + folded + largest * smallest + squares[1] + peak + positive
}

#[test]
fn map_zip_enumerate_filter_sum_product_fold_max_by_min_by_collect() {
    let x = [0.4, -1.1, 2.3, 0.9];
    let y = [1.5, 0.2, -0.6, 1.1];
    let t = 0.8;
    let (value, g) = iterator_chains::value_and_grad(&x, &y, t);
    assert_eq!(value, iterator_chains(&x, &y, t));
    let mut point = x.to_vec();
    point.extend(y);
    point.push(t);
    let reference = finite_difference(|p| iterator_chains(&p[..4], &p[4..8], p[8]), &point);
    let mut got = g.x.clone();
    got.extend(&g.y);
    got.push(g.t);
    assert_close(&got, &reference, "iterator chains");
}

/// The midpoint rule on [a, b] with n panels.
/// The midpoint rule; `integrate_on_tape` is the same function kept on the
/// tape, which compiled callers give their closures through its bridge.
macro_rules! integrator {
    ($name:ident $(, $engine:ident)?) => {
        #[differentiate$(($engine))?]
        fn $name<F: Fn(f64) -> f64>(f: F, a: f64, b: f64, n: usize) -> f64 {
            let h = (b - a) / n as f64;
            let mut total = 0.0;
            for i in 0..n {
                total += f(a + (i as f64 + 0.5) * h);
            }
            total * h
        }
    };
}
integrator!(integrate);
integrator!(integrate_on_tape, tape);

/// ∫₀^upper exp(-k t²) dt: the parameter is captured by the closure, the
/// bound is an argument of the integrator.
#[differentiate]
fn gaussian_mass(k: f64, upper: f64) -> f64 {
    integrate(|t| (-k * t * t).exp(), 0.0, upper, 200)
}

#[test]
fn a_closure_passed_to_a_generic_integrator() {
    let (k, upper) = (0.7, 1.3);
    let (value, g) = gaussian_mass::value_and_grad(k, upper);
    assert_eq!(value, gaussian_mass(k, upper));
    check_gradient(
        |p| gaussian_mass(p[0], p[1]),
        &[k, upper],
        &[g.k, g.upper],
        "through the integrator",
    );
    // The exact derivative in the bound is the integrand there (up to the
    // midpoint rule's O(h²) error, h = upper / 200).
    assert!((g.upper - (-k * upper * upper).exp()).abs() < 1e-4);
}

/// One gradient-descent step of `loss` from `x`, written with a generic
/// function argument.
#[differentiate]
fn descend<F: Fn(&[f64]) -> f64>(loss: F, x: &[f64], rate: f64) -> Vec<f64> {
    let mut next = Vec::new();
    let h = 1e-3;
    for i in 0..x.len() {
        let mut up = x.to_vec();
        up[i] = up[i] + h;
        let mut down = x.to_vec();
        down[i] = down[i] - h;
        let slope = (loss(&up) - loss(&down)) / (2.0 * h);
        next.push(x[i] - rate * slope);
    }
    next
}

/// The loss after one step, differentiated with respect to the step size
/// and the target (differentiating through the optimizer).
#[differentiate]
fn loss_after_step(x: &[f64], target: f64, rate: f64) -> f64 {
    let moved = descend(
        |p: &[f64]| p.iter().map(|v| (v - target) * (v - target)).sum::<f64>(),
        x,
        rate,
    );
    moved.iter().map(|v| (v - target) * (v - target)).sum()
}

#[test]
fn differentiating_through_an_optimizer_step() {
    let x = [1.0, -0.5, 2.0];
    let (target, rate) = (0.3, 0.1);
    let (value, g) = loss_after_step::value_and_grad(&x, target, rate);
    assert_eq!(value, loss_after_step(&x, target, rate));
    let mut point = x.to_vec();
    point.extend([target, rate]);
    let reference = finite_difference(|p| loss_after_step(&p[..3], p[3], p[4]), &point);
    let mut got = g.x.clone();
    got.extend([g.target, g.rate]);
    // The inner finite difference (h = 1e-3) is exact for a quadratic loss up
    // to rounding of order ε/h; the outer check's tolerance covers it.
    assert_close_tol(&got, &reference, 1e-5, "through the step");
}

/// A function parameter written `impl Fn(..)` (issue: the function did not
/// compile, even with no caller).
#[differentiate]
fn apply_twice(x: f64, f: impl Fn(f64) -> f64) -> f64 {
    f(f(x))
}

#[differentiate]
fn twice_scaled(x: f64, a: f64) -> f64 {
    apply_twice(x, |v| a * v * v)
}

#[test]
fn impl_fn_parameter_called_with_a_closure() {
    // f(v) = a v², f(f(x)) = a (a x²)² = a³ x⁴.
    let (x, a) = (0.7, 1.3);
    let g = twice_scaled::grad(x, a);
    assert_close_tol(
        &[g.x, g.a],
        &[4.0 * a.powi(3) * x.powi(3), 3.0 * a * a * x.powi(4)],
        1e-14,
        "impl Fn",
    );
    assert_eq!(apply_twice(x, |v| v + 1.0), x + 2.0);
}

/// Closure parameters annotated with the types the plain code has
/// (`|u: &f64|`, `|k: &Vec<f64>|`) over differentiated values.
#[differentiate]
fn typed_closure_parameters(x: &[f64], rows: &[Vec<f64>]) -> f64 {
    let a: f64 = x.iter().map(|u: &f64| u.tanh()).sum();
    let b: f64 = rows.iter().map(|k: &Vec<f64>| k[0] * k[1]).sum();
    let c = x.iter().fold(0.0, |acc: f64, v: &f64| acc + v * v);
    a + b * c
}

#[test]
fn closures_with_typed_parameters() {
    let x = [0.5, -0.2];
    let rows = vec![vec![1.5, 2.0], vec![-0.5, 0.25]];
    let g = typed_closure_parameters::grad(&x, &rows);
    let mut point = x.to_vec();
    point.extend(rows.iter().flatten());
    let mut got = g.x.clone();
    got.extend(g.rows.iter().flatten());
    check_gradient(
        |p| typed_closure_parameters(&p[..2], &[p[2..4].to_vec(), p[4..6].to_vec()]),
        &point,
        &got,
        "typed closure parameters",
    );
}

macro_rules! named_typed_closures {
    ($name:ident, $engine:meta) => {
        /// Named closures with typed parameters given to `map`, `fold` and
        /// `filter`.
        #[$engine]
        fn $name(v: &[f64], t: f64) -> f64 {
            let act = |u: &f64| (u * t).tanh();
            let add = |a: f64, b: &f64| a + b * b;
            let positive = |w: &&f64| **w > 0.0;
            let activated: f64 = v.iter().map(act).sum();
            let squares = v.iter().fold(0.0, add);
            let kept: f64 = v.iter().filter(positive).map(|w| w * t).sum();
            activated + squares * kept
        }
    };
}
named_typed_closures!(named_typed_closures_default, differentiate);
named_typed_closures!(named_typed_closures_tape, differentiate(tape));

#[test]
fn named_closures_with_typed_parameters_given_to_adaptors() {
    let (v, t) = ([0.5, -0.2, 1.25], 0.8);
    let (g, tape) = (
        named_typed_closures_default::grad(&v, t),
        named_typed_closures_tape::grad(&v, t),
    );
    for (mut got, gt, what) in [(g.v, g.t, "default"), (tape.v, tape.t, "tape")] {
        let mut point = v.to_vec();
        point.push(t);
        got.push(gt);
        let reference = finite_difference(|p| named_typed_closures_default(&p[..3], p[3]), &point);
        assert_close(&got, &reference, what);
    }
}

/// The integrator's caller on the compiled path: the closure, its parameter
/// typed, becomes a function of its own whose passes `integrate`'s passes
/// call (the captured `k` gets its adjoint through them).
#[differentiate(compiled)]
fn gaussian_mass_compiled(k: f64, upper: f64) -> f64 {
    integrate(|t: f64| (-k * t * t).exp(), 0.0, upper, 200)
}

/// The same closure given by a compiled caller to the integrator on the
/// tape: each call of the closure is one binding of the bridge's tape,
/// whose partials the closure's compiled passes compute, `k` an input of
/// that tape.
#[differentiate(compiled)]
fn gaussian_mass_bridged(k: f64, upper: f64) -> f64 {
    integrate_on_tape(|t: f64| (-k * t * t).exp(), 0.0, upper, 200)
}

/// The derivatives of `gaussian_mass_compiled` (or `_bridged`) against the
/// tape's and central differences, at three points.
macro_rules! check_gaussian_mass {
    ($f:ident) => {{
        for (k, upper) in [(0.7, 1.3), (2.0, 0.4), (0.1, 3.0)] {
            let (value, g) = $f::value_and_grad(k, upper);
            let (value_t, g_t) = gaussian_mass::value_and_grad(k, upper);
            assert_eq!(value, $f(k, upper));
            near(value, value_t, 1e-14, "value against the tape");
            assert_close_tol(
                &[g.k, g.upper],
                &[g_t.k, g_t.upper],
                1e-13,
                "against the tape",
            );
            check_gradient(
                |p| $f(p[0], p[1]),
                &[k, upper],
                &[g.k, g.upper],
                "against central differences",
            );
            // Forward over reverse through the closure's passes.
            let h = $f::hessian(k, upper);
            let h_t = gaussian_mass::hessian(k, upper);
            for (row, row_t) in h.iter().zip(&h_t) {
                assert_close_tol(
                    &[row.k, row.upper],
                    &[row_t.k, row_t.upper],
                    1e-12,
                    "hessian",
                );
            }
            let t = $f::jvp(
                k,
                upper,
                &$f::Grad {
                    k: 1.0,
                    upper: -0.5,
                },
            )
            .1;
            near(t, g.k - 0.5 * g.upper, 1e-12, "jvp against the gradient");
        }
    }};
}

#[test]
fn a_closure_given_to_a_compiled_function_parameter() {
    check_gaussian_mass!(gaussian_mass_compiled);
}

#[test]
fn a_closure_given_to_a_function_on_the_tape() {
    assert!(gaussian_mass_bridged::tape_stats(0.7, 1.3).compiled);
    check_gaussian_mass!(gaussian_mass_bridged);
}

/// Gradient descent with a fixed number of steps, a step accepted only
/// where it lowers `f`, else halved: an optimiser taking a function and
/// its gradient (`Vec` results, slice arguments), differentiated through;
/// `descent_on_tape` the same function kept on the tape.
macro_rules! descender {
    ($name:ident $(, $engine:ident)?) => {
        #[differentiate$(($engine))?]
        fn $name<F: Fn(&[f64]) -> f64, G: Fn(&[f64]) -> Vec<f64>>(
            f: F,
            gradient: G,
            start: &[f64],
            steps: usize,
        ) -> Vec<f64> {
            let mut x = start.to_vec();
            let mut fx = f(&x);
            let mut eta = 0.3;
            for _ in 0..steps {
                let g = gradient(&x);
                let mut next = vec![0.0; x.len()];
                for k in 0..x.len() {
                    next[k] = x[k] - eta * g[k];
                }
                let f_next = f(&next);
                if f_next < fx {
                    x = next;
                    fx = f_next;
                } else {
                    eta *= 0.5;
                }
            }
            x
        }
    };
}
descender!(descent);
descender!(descent_on_tape, tape);

/// A well with its bottom at `centre`, sharpness `s`.
#[differentiate]
fn well(x: &[f64], centre: &[f64], s: f64) -> f64 {
    let mut total = 0.0;
    for i in 0..x.len() {
        let d = x[i] - centre[i];
        total += s * d * d + 0.1 * d * d * d * d;
    }
    total
}

/// Where descent on the well ends, scored: its closures capture slices
/// and a real, one computes the well's gradient inside (a derivative
/// nested in the closure). On the compiled path and on the tape.
macro_rules! settled {
    ($name:ident, $engine:ident, $descent:ident) => {
        #[differentiate($engine)]
        fn $name(centre: &[f64], s: f64, #[no_grad] start: &[f64]) -> f64 {
            // (A local the closures read whose type its `let` does not say.)
            let damp = if s > 1.5 { 1.5 / s } else { 1.0 };
            let end: Vec<f64> = $descent(
                |x: &[f64]| well(x, centre, s) * damp,
                |x: &[f64]| {
                    let g = well::grad(x, centre, s).x;
                    let scaled: Vec<f64> = g.iter().map(|v| v * damp).collect();
                    scaled
                },
                start,
                12,
            );
            end[0] * end[0] + 3.0 * end[1] + s * end[0]
        }
    };
}
settled!(settled_compiled, compiled, descent);
settled!(settled_tape, tape, descent);
settled!(settled_bridged, compiled, descent_on_tape);

/// `$f`'s value and gradient against `settled_tape`'s and central
/// differences, at three points.
macro_rules! check_settled {
    ($f:ident) => {{
        let start = [2.0, -1.5];
        for (centre, s) in [([0.5, 0.25], 1.0), ([-1.0, 0.75], 0.6), ([0.1, -0.2], 2.5)] {
            let (value, g) = $f::value_and_grad(&centre, s, &start);
            let (value_t, g_t) = settled_tape::value_and_grad(&centre, s, &start);
            assert_eq!(value, $f(&centre, s, &start));
            near(value, value_t, 1e-13, "value against the tape");
            let mut got = g.centre.clone();
            got.push(g.s);
            let mut got_t = g_t.centre.clone();
            got_t.push(g_t.s);
            assert_close_tol(&got, &got_t, 1e-12, "against the tape");
            let mut point = centre.to_vec();
            point.push(s);
            check_gradient(
                |p| $f(&p[..2], p[2], &start),
                &point,
                &got,
                "against central differences",
            );
        }
    }};
}

#[test]
fn an_optimiser_given_closures_on_the_compiled_path() {
    check_settled!(settled_compiled);
}

#[test]
fn an_optimiser_on_the_tape_given_compiled_closures() {
    assert!(settled_bridged::tape_stats(&[0.5, 0.25], 1.0, &[2.0, -1.5]).compiled);
    check_settled!(settled_bridged);
}

/// A closure given to the integrator whose body gives a closure to it again
/// (a double integral), the inner call's path written relative to the
/// module: the closure inside the closure is compiled too.
macro_rules! double_mass {
    ($name:ident, $engine:ident, $integrate:ident) => {
        #[differentiate($engine)]
        fn $name(k: f64, upper: f64) -> f64 {
            $integrate(
                |s: f64| self::$integrate(|t: f64| (-k * s * t * t).exp(), 0.0, s, 20),
                0.0,
                upper,
                20,
            )
        }
    };
}
double_mass!(double_mass_compiled, compiled, integrate);
double_mass!(double_mass_tape, tape, integrate);
double_mass!(double_mass_bridged, compiled, integrate_on_tape);

/// `$f`'s value and gradient against `double_mass_tape`'s and central
/// differences.
macro_rules! check_double_mass {
    ($f:ident) => {{
        let (k, upper) = (0.6, 1.4);
        let (value, g) = $f::value_and_grad(k, upper);
        let (value_t, g_t) = double_mass_tape::value_and_grad(k, upper);
        assert_eq!(value, $f(k, upper));
        near(value, value_t, 1e-13, "value against the tape");
        assert_close_tol(
            &[g.k, g.upper],
            &[g_t.k, g_t.upper],
            1e-12,
            "against the tape",
        );
        check_gradient(
            |p| $f(p[0], p[1]),
            &[k, upper],
            &[g.k, g.upper],
            "against central differences",
        );
    }};
}

#[test]
fn a_closure_inside_a_closure_given_to_a_function() {
    check_double_mass!(double_mass_compiled);
}

#[test]
fn a_closure_inside_a_closure_given_to_a_function_on_the_tape() {
    check_double_mass!(double_mass_bridged);
}

/// Function parameters taking or giving other values than reals and
/// slices of reals have no compiled passes: their callers pass closures on
/// the tape (and so stay there), typed closures included.
#[differentiate]
fn pair_sum<F: Fn(f64) -> [f64; 2]>(f: F, a: f64) -> f64 {
    let v = f(a);
    v[0] + v[1]
}

#[differentiate]
fn doubled_at<F: Fn(&f64) -> f64>(f: F, x: f64) -> f64 {
    f(&x) * 2.0
}

#[differentiate]
fn indexed_sum<F: Fn(f64, usize) -> f64>(f: F, a: f64) -> f64 {
    f(a, 1) + f(a, 2)
}

#[differentiate]
fn through_other_shapes(k: f64) -> f64 {
    pair_sum(|t: f64| [t * k, t.sin()], k)
        + doubled_at(|x: &f64| x * k, k)
        + doubled_at(|x| x * k, k)
        + indexed_sum(|t: f64, i: usize| t * k * i as f64, k)
}

#[test]
fn closures_of_other_shapes_stay_on_the_tape() {
    let k = 0.7;
    assert!(!through_other_shapes::tape_stats(k).compiled);
    // k² + sin k + 2k² + 2k² + 3k² (an untyped closure taking `&f64`
    // given to the recording pass as written, so that its signature comes
    // from the bound; a closure's plain `usize` parameter stays plain on
    // the tape): derivative 16k + cos k.
    near(
        through_other_shapes(k),
        8.0 * k * k + k.sin(),
        1e-15,
        "value",
    );
    near(
        through_other_shapes::grad(k).k,
        16.0 * k + k.cos(),
        1e-14,
        "against the closed form",
    );
}

/// A function taking a function that passes it on, by reference and by
/// value, to a function on the compiled path and to one on the tape (each
/// given an adapter implementing the callee's traits by calling its own).
#[differentiate(compiled)]
fn mean_and_half<F: Fn(f64) -> f64>(f: F, a: f64, b: f64) -> f64 {
    let mean = integrate(&f, a, b, 40) / (b - a);
    let half = integrate_on_tape(&f, a, 0.5 * (a + b), 40);
    mean * mean + half * f(b) + integrate(f, b, 2.0 * b, 10)
}

macro_rules! passed_on {
    ($name:ident, $engine:ident) => {
        #[differentiate($engine)]
        fn $name(k: f64, upper: f64) -> f64 {
            mean_and_half(|t: f64| (k * t).sin() + k * t * t, 0.1, upper)
        }
    };
}
passed_on!(passed_on_compiled, compiled);
passed_on!(passed_on_tape, tape);

#[test]
fn a_function_parameter_passed_on() {
    for (k, upper) in [(0.7, 1.3), (-1.2, 0.6)] {
        let (value, g) = passed_on_compiled::value_and_grad(k, upper);
        let (value_t, g_t) = passed_on_tape::value_and_grad(k, upper);
        assert_eq!(value, passed_on_compiled(k, upper));
        near(value, value_t, 1e-13, "value against the tape");
        assert_close_tol(
            &[g.k, g.upper],
            &[g_t.k, g_t.upper],
            1e-12,
            "against the tape",
        );
        check_gradient(
            |p| passed_on_compiled(p[0], p[1]),
            &[k, upper],
            &[g.k, g.upper],
            "against central differences",
        );
        let h = passed_on_compiled::hessian(k, upper);
        let h_t = passed_on_tape::hessian(k, upper);
        for (row, row_t) in h.iter().zip(&h_t) {
            assert_close_tol(
                &[row.k, row.upper],
                &[row_t.k, row_t.upper],
                1e-11,
                "hessian",
            );
        }
    }
}

/// An integrator taking `mut f: F` with `F: FnMut`, and closures given to
/// it: one reading its captures (compiled), one writing them (its caller
/// stays on the tape, where the writes are seen after the call).
#[differentiate]
fn integrate_mut<F: FnMut(f64) -> f64>(mut f: F, a: f64, b: f64) -> f64 {
    let n = 10;
    let h = (b - a) / n as f64;
    let mut total = 0.0;
    for i in 0..n {
        total += f(a + h * (i as f64 + 0.5)) * h;
    }
    total
}

#[differentiate]
fn counted_integral(k: f64) -> f64 {
    let mut calls = 0.0;
    let mut sum = 0.0;
    let v = integrate_mut(
        |t: f64| {
            calls += 1.0;
            sum += t * k;
            t * k
        },
        0.0,
        1.0,
    );
    v + calls * k + sum + integrate_mut(|t: f64| (t * k).sin(), 0.0, 1.0)
}

#[differentiate(compiled)]
fn sine_integral(k: f64) -> f64 {
    integrate_mut(|t: f64| (t * k).sin(), 0.0, 1.0)
}

#[test]
fn a_function_taking_fn_mut() {
    let k = 0.7;
    assert!(!counted_integral::tape_stats(k).compiled);
    // ∫₀¹ kt dt by the midpoint rule is k/2 exactly; ten calls; Σ kt over
    // the midpoints is 5k; the last integral, by the same rule, is
    // Σ sin(k tᵢ)/10 with derivative Σ tᵢ cos(k tᵢ)/10.
    let midpoints = (0..10).map(|i| (i as f64 + 0.5) / 10.0);
    let sine: f64 = midpoints.clone().map(|t| (k * t).sin() / 10.0).sum();
    let d_sine: f64 = midpoints.map(|t| t * (k * t).cos() / 10.0).sum();
    near(
        counted_integral(k),
        0.5 * k + 10.0 * k + 5.0 * k + sine,
        1e-14,
        "value",
    );
    near(
        counted_integral::grad(k).k,
        0.5 + 10.0 + 5.0 + d_sine,
        1e-13,
        "against the closed form",
    );
    near(sine_integral(k), sine, 1e-15, "compiled value");
    near(
        sine_integral::grad(k).k,
        d_sine,
        1e-15,
        "compiled derivative",
    );
}

/// The mean of `f` on the segment from `x` along `d`: a closure calling
/// the function parameter `f`, given to the integrator (the closure takes
/// `f` through an adapter implementing its traits).
#[differentiate(compiled)]
fn mean_along<F: Fn(&[f64]) -> f64>(f: F, x: &[f64], d: &[f64]) -> f64 {
    integrate(
        |t: f64| {
            let p: Vec<f64> = x.iter().zip(d).map(|(a, b)| a + t * b).collect();
            f(&p)
        },
        0.0,
        1.0,
        20,
    )
}

macro_rules! along {
    ($name:ident, $engine:ident) => {
        #[differentiate($engine)]
        fn $name(k: f64, w: &[f64]) -> f64 {
            mean_along(
                |p: &[f64]| (k * p[0]).sin() + p[1] * p[1] * k,
                w,
                &[0.5, -0.25],
            )
        }
    };
}
along!(along_compiled, compiled);
along!(along_tape, tape);

#[test]
fn a_closure_calling_a_function_parameter() {
    for (k, w) in [(0.7, [1.5, 2.0]), (-0.4, [0.3, -1.1])] {
        let (value, g) = along_compiled::value_and_grad(k, &w);
        let (value_t, g_t) = along_tape::value_and_grad(k, &w);
        assert_eq!(value, along_compiled(k, &w));
        near(value, value_t, 1e-13, "value against the tape");
        let got = [g.k, g.w[0], g.w[1]];
        assert_close_tol(
            &got,
            &[g_t.k, g_t.w[0], g_t.w[1]],
            1e-12,
            "against the tape",
        );
        check_gradient(
            |p| along_compiled(p[0], &p[1..]),
            &[k, w[0], w[1]],
            &got,
            "against central differences",
        );
        let h = along_compiled::hessian(k, &w);
        let h_t = along_tape::hessian(k, &w);
        for (row, row_t) in h.iter().zip(&h_t) {
            assert_close_tol(
                &[row.k, row.w[0], row.w[1]],
                &[row_t.k, row_t.w[0], row_t.w[1]],
                1e-11,
                "hessian",
            );
        }
    }
}

/// A method taking a function, given closures (on the tape: a method call's
/// closures are not compiled yet), with an integer field read as a real.
#[derive(Debug, deltad::Differentiable)]
struct Midpoints {
    n: usize,
}

#[differentiate]
impl Midpoints {
    fn integrate<F: Fn(f64) -> f64>(&self, f: F, a: f64, b: f64) -> f64 {
        let h = (b - a) / self.n as f64;
        let mut total = 0.0;
        for i in 0..self.n {
            total += f(a + h * (i as f64 + 0.5)) * h;
        }
        total
    }
}

#[differentiate]
fn by_a_method(k: f64, #[no_grad] rule: &Midpoints) -> f64 {
    rule.integrate(|t: f64| (k * t).sin(), 0.0, 1.0) + rule.integrate(|t: f64| t * t, 0.0, k)
}

#[test]
fn closures_given_to_a_method() {
    let (k, rule) = (0.7, Midpoints { n: 10 });
    // The midpoint rule's sums: Σ sin(k tᵢ)/10 + k³ Σ tᵢ²/10 (tᵢ the
    // midpoints of [0, 1]); derivative Σ tᵢ cos(k tᵢ)/10 + 3k² Σ tᵢ²/10.
    let t = |i: usize| (i as f64 + 0.5) / 10.0;
    let sine: f64 = (0..10).map(|i| (k * t(i)).sin() / 10.0).sum();
    let d_sine: f64 = (0..10).map(|i| t(i) * (k * t(i)).cos() / 10.0).sum();
    let squares: f64 = (0..10).map(|i| t(i) * t(i) / 10.0).sum();
    near(
        by_a_method(k, &rule),
        sine + k.powi(3) * squares,
        1e-15,
        "value",
    );
    near(
        by_a_method::grad(k, &rule).k,
        d_sine + 3.0 * k * k * squares,
        1e-14,
        "against the closed form",
    );
}
