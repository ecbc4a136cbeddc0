//! Regression tests for bugs found by the random-program fuzzer
//! (`fuzz/`, `cargo run -p deltad-fuzz --release -- --help`). Each case is
//! the fuzzer's failing program reduced to its core, checked against an
//! independent reference (central finite differences, `tests/common`).
//! Rejections of valid code the fuzzer found but that are not fixed yet are
//! listed in `tests/fuzz_regressions/known_rejections.md`.
#![allow(clippy::all, unused)]

mod common;
use common::*;
use deltad::{differentiate, Differentiable};

/// Found as program p2 of `--seed 3` (seed 15805594231727371010): `z.atan2(z)`
/// with `z = x - x`, identically 0, made the whole gradient NaN (the partials
/// of `atan2` at the origin were 0/0) while the function is just `x²` plus a
/// constant. `atan2` at (0, 0) now has derivative 0, like `hypot`.
#[differentiate]
fn angle_of_a_zero_difference(x: f64) -> f64 {
    let z = x - x;
    let angle = z.atan2(z);
    angle + x * x
}

#[test]
fn atan2_at_the_origin_has_derivative_zero() {
    for x in [-0.57, 0.3, 1.2] {
        let (value, g) = angle_of_a_zero_difference::value_and_grad(x);
        assert_eq!(value, angle_of_a_zero_difference(x));
        check_gradient(
            |p| angle_of_a_zero_difference(p[0]),
            &[x],
            &[g.x],
            "atan2 at the origin",
        );
    }
}

/// Found as program p9 of `--seed 1` (seed 14692463169588105120): an
/// iterator chain over a slice parameter inside a `#[preaccumulate]` loop was
/// rejected ("it writes the parameter `s`"): the macro took `map`, `sum`,
/// `enumerate`, ... for methods that may write their receiver.
#[differentiate]
fn chains_in_a_preaccumulated_loop(x: f64, s: &[f64]) -> f64 {
    let mut total = 0.0;
    #[preaccumulate]
    for i in 0..4 {
        let weighted = s
            .iter()
            .enumerate()
            .map(|(j, &u)| s[j] * u * x)
            .sum::<f64>();
        let folded = s.iter().fold(0.0, |acc, &u| acc * 0.5 + (u * x).tanh());
        total += (weighted + folded * i as f64).sin();
    }
    total
}

#[differentiate]
fn chains_in_a_plain_loop(x: f64, s: &[f64]) -> f64 {
    let mut total = 0.0;
    for i in 0..4 {
        let weighted = s
            .iter()
            .enumerate()
            .map(|(j, &u)| s[j] * u * x)
            .sum::<f64>();
        let folded = s.iter().fold(0.0, |acc, &u| acc * 0.5 + (u * x).tanh());
        total += (weighted + folded * i as f64).sin();
    }
    total
}

#[test]
fn iterator_chains_inside_preaccumulate_loops() {
    let s = [0.4, -1.1, 0.7];
    let x = 0.8;
    let (value, g) = chains_in_a_preaccumulated_loop::value_and_grad(x, &s);
    assert_eq!(value, chains_in_a_preaccumulated_loop(x, &s));
    let mut point = vec![x];
    point.extend(s);
    let mut got = vec![g.x];
    got.extend(&g.s);
    check_gradient(
        |p| chains_in_a_preaccumulated_loop(p[0], &p[1..]),
        &point,
        &got,
        "chains in #[preaccumulate]",
    );
    let plain = chains_in_a_plain_loop::grad(x, &s);
    let mut expected = vec![plain.x];
    expected.extend(&plain.s);
    assert_close(&got, &expected, "same as without #[preaccumulate]");
}

/// Found as program p409 of `--seed 1` (seed 4210025405527551822), shrunk by
/// the fuzzer to this: the value and gradient were those of the parameter
/// `x1` instead of the shadowing local `x1`. Fused statement runs cache the
/// leaves they load by their tokens, and `let mut x1 = 1.0` did not evict
/// the cached `x1` read by `let x0 = x1;`.
/// Replaying the fuzz programs with wrong values after this fix: 18 of 21
/// pass; p409 itself, p332 and p3170 still fail (ignored tests below).
#[differentiate]
fn shadowed_parameter(x1: f64) -> f64 {
    let x0 = x1;
    let mut x1: f64 = 1.0;
    let mut v1: f64 = 1.0;
    let v2: f64 = x0;
    v1 -= x1;
    x1 -= match 2 % 2 {
        0 => v1,
        _ => v2,
    };
    x1 * x0
}

#[test]
fn a_let_shadowing_a_parameter_read_in_the_same_run() {
    for x in [-0.46, 0.8] {
        let (value, g) = shadowed_parameter::value_and_grad(x);
        // x1 (the local) ends at 1 - (1 - 1) = 1, so f = x and f' = 1.
        assert_eq!(value, shadowed_parameter(x));
        assert_eq!(value, x);
        assert_eq!(g.x1, 1.0);
        check_gradient(|p| shadowed_parameter(p[0]), &[x], &[g.x1], "shadowing");
    }
}

// Found as program p332 of `--seed 1` (seed 8332864472066805743): the value
// (and so the gradient) of `value_and_grad` differs from the function's.
// Not reduced further: the automatic shrinker found no smaller failing
// candidate in its first round, and by hand the failure goes away when the
// first loop (a straight-line loop recorded as a whole) is removed, while
// that loop alone, and with the lines after it cut in several ways, is
// differentiated correctly. Not fixed yet.
#[differentiate]
fn p332_h0(x0: f64) -> f64 {
    let mut x0 = (((x0 + (-0.0)) - x0.ceil()).atan().to_degrees()
        / (1.0
            + (((x0 + (-0.0)) - x0.ceil()).atan().to_degrees()
                * ((x0 + (-0.0)) - x0.ceil()).atan().to_degrees())));
    let v1 = ((((x0.cos() * x0.cos()) + 0.5).sqrt() * ((x0.cos() * x0.cos()) + 0.5).sqrt()) + 0.5)
        .log(((x0.powi(4) * x0.powi(4)) + 2.0));
    let v2 = (f64::mul_add((-0.33), x0, x0) + f64::exp2((-1.82)));
    let mut b3 = vec![0.49_f64; 6];
    let mut n4 = 0;
    loop {
        n4 += 1;
        if n4 > 4 {
            break;
        }
    }
    x0.max((v1 - x0))
}

#[differentiate]
fn p332_h1(x2: f64, x1: f64, x0: f64) -> f64 {
    let c5 = |t6: f64| f64::ln_1p((f64::asinh(x2) * f64::asinh(x2)));
    let mut v7 = x2;
    let mut n8 = 0;
    while n8 < 4 {
        n8 += 1;
        let c9 = |t10: f64| (((x1 * x1) + 0.5).cbrt() / (1.0 + (x1.fract() * x1.fract())));
    }
    f64::min(((x2 + v7) - (x1 + (-1.97))), v7.clamp((-1.2), 0.84))
}

#[differentiate]
fn p332_f(x0: f64, x1: f64, x2: f64) -> f64 {
    let mut w11 = (((x2 * x2) + 0.5).sqrt().round() + x2).tanh();
    let mut w12: f64 = ((w11 - (w11 * w11)) + x2).atan();
    for _ in 0..7 {
        let v13 = (x1 + w11);
        w11 += (0.5 * ((f64::recip(((0.35 * 0.35) + 0.5)) + w12) + w11).tanh());
        w12 += (0.5 * ((w11 + w12) / (1.0 + ((w11 + w12) * (w11 + w12)))));
    }
    let mut x2 = ((p332_h0(w12.tanh()) * (w11 + x1)).atan()
        + ((-x1) / (1.0 + (x0.sin().tan() * x0.sin().tan()))));
    let x2 = (((-0.73) * x1).asinh()
        * ((x0 * x0)
            - (if w11.div_euclid(((x2 * x2) + 0.5)) > 0.3 {
                x2
            } else {
                x2
            })));
    let c14 = |t15: f64| (f64::sin((-0.83)) + t15.round()).tanh();
    let mut v16 = w12;
    let mut n17 = 0;
    loop {
        n17 += 1;
        if n17 > 2 {
            break;
        }
        let mut w12 = p332_h1(
            ((((n17 as f64) * x1) + (x0 - x1))
                / (1.0 + ((((n17 as f64) * x1) + (x0 - x1)) * (((n17 as f64) * x1) + (x0 - x1))))),
            (w11 * w11).tanh(),
            f64::log(
                ((x2.rem_euclid((((-0.36) * (-0.36)) + 0.5))
                    * x2.rem_euclid((((-0.36) * (-0.36)) + 0.5)))
                    + 0.5),
                ((1.32 * 1.32) + 2.0),
            ),
        );
    }
    w12 = x0;
    let mut w18 = (w12 + x1).tanh();
    for _ in 0..9 {
        w18 *= ((w11 / (1.0 + (w11 * w11))) * x2).tanh().sin();
        let v19 = (v16.fract().ceil().tanh() + w18);
        w18 = (1.71
            * ((-(f64::sin(0.52) * 0.9).asin())
                / (1.0 + ((-(f64::sin(0.52) * 0.9).asin()) * (-(f64::sin(0.52) * 0.9).asin())))));
        w18 += (0.5 * (w11 + w18).tanh());
    }
    let c20 = |t21: f64| (0.65 - x2).clamp((-1.04), 1.38);
    c20(v16)
        .rem_euclid(((f64::max(w12, w11) * f64::max(w12, w11)) + 0.5))
        .atan()
}

#[test]
fn fuzz_program_332_value_and_gradient() {
    let x = [
        0.5536399407623493,
        -0.23579632251819183,
        -0.9709950990957972,
    ];
    let (value, g) = p332_f::value_and_grad(x[0], x[1], x[2]);
    assert_eq!(value, p332_f(x[0], x[1], x[2]));
    check_gradient(
        |p| p332_f(p[0], p[1], p[2]),
        &x,
        &[g.x0, g.x1, g.x2],
        "fuzz program 332",
    );
}

// Found as program p3066 of `--seed 1` (seed 5768712615129652120): a run
// panicked with "a dual value of another tape was used". Its
// `#[preaccumulate]` loop did `acc9 -= ..` on a variable that the code after
// the loop also assigned a call's result: the check took `acc9` for a sum,
// but the accumulators only take variables known to be reals, so `acc9` kept
// a value of a forgotten iteration. Such a loop became a compile error;
// now a variable first bound to a real is known to stay one (a call's
// result assigned to it is a real too), so the accumulators take it
// (`sums_and_states_later_assigned_a_call` below).

// Found as program p409 of `--seed 1` (seed 4210025405527551822). The
// shrinker reduced it to `shadowed_parameter` above, which failed the same
// way; the whole program still failed until the second fix (see
// `a_statement_the_run_does_not_fuse_shadows_a_loaded_leaf`).
#[differentiate]
fn p409_f(x2: f64, x1: f64, x0: f64) -> f64 {
    let x0 = ((if (f64::round_ties_even(x1) < (x0 - x1) || x2.exp2() > (x0 * x2)) {
        x2.trunc()
    } else {
        (x0 + 0.24)
    }) / (1.0 + (((x1 * x1) + 1.0).powi(-2) * ((x1 * x1) + 1.0).powi(-2))));
    let mut x1: f64 = f64::to_radians(0.12);
    let mut v1 = (match 3 % 3 {
        0 => x0,
        1 => (f64::log(((0.78 * 0.78) + 0.5), ((0.37 * 0.37) + 2.0)) * (1.31 * x2)),
        _ => x1,
    });
    let v2: f64 = x0;
    v1 -= ((match x1.floor() >= (-0.05) {
        true => v1,
        false => x0,
    }) - x1);
    x1 -= (match 2 % 2 {
        0 => v1,
        _ => v2,
    })
    .min(v2);
    let mut n3 = 0;
    while n3 < 3 {
        n3 += 1;
        if (x1 > (-0.55)
            || (x1 - 1.55)
                >= (match (-1.12) >= v2 {
                    true => x1,
                    false => (n3 as f64),
                }))
        {
            if 4 >= 0 {
                break;
            }
        } else {
            let mut v4 = f64::copysign(
                (n3 as f64).to_radians(),
                (match n3 % 3 {
                    0 => v2,
                    1 => x2,
                    _ => x0,
                }),
            );
        }
        x1 *= f64::log10(((v2 * v2) + 0.5)).max(x1).tanh();
    }
    ((v2 * v2) + 0.5).log2().atan2(x1)
}

#[test]
fn fuzz_program_409_value() {
    let x = [
        -0.46296015060005535,
        -1.3832131687930067,
        -0.5355825213065534,
    ];
    let (value, g) = p409_f::value_and_grad(x[0], x[1], x[2]);
    assert_eq!(value, p409_f(x[0], x[1], x[2]));
    check_gradient(
        |p| p409_f(p[0], p[1], p[2]),
        &x,
        &[g.x2, g.x1, g.x0],
        "fuzz program 409",
    );
}

// Found as program p3170 of `--seed 1` (seed 3628324807390822429), after the
// shadowing fix: `value_and_grad` gives -0.269..., the function -0. Open.
#[differentiate]
fn p3170_h0(x0: f64) -> f64 {
    let mut w1 = ((f64::round((x0 - (-0.94))) + x0)
        / (1.0 + ((f64::round((x0 - (-0.94))) + x0) * (f64::round((x0 - (-0.94))) + x0))));
    let mut w2: f64 = (((x0 - x0) * (x0 + w1)) + x0).tanh();
    #[checkpoint]
    for _ in 0..40 {
        if w2 > 0.71 {
            break;
        }
        w1 += (0.5
            * ((((x0 * x0) + 0.5).powf(w1.atan()) / ((w1 / (1.0 + (w2 * w2))).abs() + 0.5)) + w1)
                .tanh());
        w2 += (0.5 * ((((w2 * w2) + 0.5).cbrt() - (-w2)) + w2).atan());
    }
    let v3 = (((((x0 * x0) + 0.5).log2()
        + (if (match w1 > (-0.49) {
            true => w1,
            false => w2,
        }) > 0.27
        {
            w1
        } else {
            x0
        }))
        * x0)
        / (1.0
            + (((((x0 * x0) + 0.5).log2()
                + (if (match w1 > (-0.49) {
                    true => w1,
                    false => w2,
                }) > 0.27
                {
                    w1
                } else {
                    x0
                }))
                * x0)
                * ((((x0 * x0) + 0.5).log2()
                    + (if (match w1 > (-0.49) {
                        true => w1,
                        false => w2,
                    }) > 0.27
                    {
                        w1
                    } else {
                        x0
                    }))
                    * x0))));
    let mut v4: f64 = ((-(w1 + v3)) - (-((w1 * w2) / (1.0 + ((w1 * w2) * (w1 * w2)))))).tanh();
    v4 += (match 3 % 2 {
        0 => v3,
        _ => x0,
    });
    let w2 = f64::recip((((-0.68) * (-0.68)) + 0.5));
    match 4 % 2 {
        0 => {}
        _ => {}
    }
    v4
}

#[differentiate]
fn p3170_h1(x0: f64) -> f64 {
    let mut w5: f64 = (((-x0) * (-x0)) + x0).atan();
    for _ in 0..7 {
        w5 *= (f64::cosh(w5.atan()) + (w5 / (1.0 + ((-1.0) * (-1.0))))).atan();
        w5 += ((-(w5 / (1.0 + (w5 * w5)))).atan() * 0.5);
        w5 += (0.5
            * ((((w5.sin() * 0.9).asin() * (w5.sin() * 0.9).asin()) + 0.5).log2() + w5).atan());
    }
    let c6 = |t7: f64| x0;
    let mut v8: f64 = (f64::atan2(w5.signum(), x0) - (x0 + (x0 + x0)));
    match 2 % 3 {
        0 => {
            if p3170_h0(v8.tanh()) >= (v8 / (1.0 + (x0 * x0))) {
                return (-x0).clamp((-1.19), 0.2);
            }
        }
        1 => {}
        _ => {}
    }
    (match 4 % 2 {
        0 => (p3170_h0((w5 / (1.0 + (w5 * w5)))) / (c6(x0).abs() + 0.5)),
        _ => {
            ((x0.cos().to_degrees() * (v8 + w5))
                / (1.0
                    + ((x0.cos().to_degrees() * (v8 + w5)) * (x0.cos().to_degrees() * (v8 + w5)))))
        }
    })
}

#[differentiate]
fn p3170_f(x0: f64, s0: &[f64], s1: &[f64]) -> f64 {
    if (s0[3 % s0.len()] + (-0.92)) > s0[4 % s0.len()] {
        let v9 = ((x0 * (s0[2 % s0.len()] + s0[1 % s0.len()])) + p3170_h1(x0.floor()));
        if x0 >= (v9 * s1[0 % s1.len()]).tanh() {
            let v10 = ((s1[4 % s1.len()] / (f64::abs((-1.58)) + 0.5)) + s1[4 % s1.len()]).cos();
            let v10 = (s1[3 % s1.len()].sin_cos().1 * s1[0 % s1.len()].max(v10))
                .min(s1.iter().copied().fold(f64::NEG_INFINITY, f64::max));
        }
        if s1[1 % s1.len()] <= x0 {
            let mut v12 = v9.sin().exp2();
            if v12.tanh() <= v9.signum() {
                return (v9 - (s0[0 % s0.len()] + s1[0 % s1.len()]));
            }
        }
    }
    s1.iter()
        .fold(
            f64::log(((x0 * x0) + 0.5), ((x0 * x0) + 2.0)),
            |a14, &u13| ((a14 * 0.5) + u13).tanh(),
        )
        .ceil()
}

#[test]
fn fuzz_program_3170_value() {
    // The fuzz harness's points for this program.
    let mut rng = Rng::new(3628324807390822429);
    for _ in 0..3 {
        let x = rng.vec(10, -1.5, 1.5);
        let value = p3170_f(x[0], &x[1..6], &x[6..10]);
        let (v, _) = p3170_f::value_and_grad(x[0], &x[1..6], &x[6..10]);
        assert_eq!(v, value, "at {x:?}");
        // The harness draws a tangent and a seed after each point.
        rng.vec(10, -1.0, 1.0);
        rng.uniform(0.5, 1.5);
    }
}

/// Reduced by hand from p409 / p332 / p3170 (all three failed this way): a
/// fused run loads the parameter `x1` as a leaf, a `let` the run does not
/// fuse (here a lifted constant) shadows `x1` while the run goes on, and the
/// next fused statement read the cached leaf of the *parameter*. Statements
/// a run does not fuse now clear its cache of evaluated leaves.
#[differentiate]
fn unfused_let_shadows_a_loaded_parameter(x1: f64, x0: f64) -> f64 {
    let x0 = x0 / (1.0 + x1 * x1);
    let mut x1: f64 = f64::to_radians(0.12);
    let mut v1 = x0;
    let v2: f64 = x0;
    v1 -= v1 - x1;
    x1 -= v1 * v2;
    x1
}

#[test]
fn a_statement_the_run_does_not_fuse_shadows_a_loaded_leaf() {
    for (a, b) in [(-1.38, -0.54), (0.3, 0.7), (2.0, -1.5)] {
        let (value, g) = unfused_let_shadows_a_loaded_parameter::value_and_grad(a, b);
        assert_eq!(value, unfused_let_shadows_a_loaded_parameter(a, b));
        check_gradient(
            |p| unfused_let_shadows_a_loaded_parameter(p[0], p[1]),
            &[a, b],
            &[g.x1, g.x0],
            "unfused let shadowing a loaded parameter",
        );
    }
}

/// Found as program p278 of `--seed 2` (seed 17844741377278687293): an
/// iterator sum over an empty filter is -0.0 in the standard library (its
/// float `Sum` starts from -0.0), but deltad's sum of dual values started
/// from +0.0, so `atan2` of two empty sums gave 0 instead of the primal's -π.
#[differentiate]
fn angle_of_empty_sums(x: f64, s: &[f64]) -> f64 {
    let up = s.iter().filter(|v| **v > 10.0).map(|v| v * x).sum::<f64>();
    let across = s.iter().filter(|v| **v > 10.0).map(|v| v + x).sum::<f64>();
    up.atan2(across) + x
}

#[test]
fn sums_of_dual_values_start_from_negative_zero() {
    let s = [1.0, 2.0];
    let x = 0.7;
    let (value, g) = angle_of_empty_sums::value_and_grad(x, &s);
    assert_eq!(value, angle_of_empty_sums(x, &s));
    assert_eq!(value, -std::f64::consts::PI + x);
    assert_eq!(g.x, 1.0); // the empty sums are constants: only `+ x` remains
    assert_eq!(deltad::sum(&[] as &[f64]).to_bits(), (-0.0f64).to_bits());
}

/// Found as program p111 of `--seed 11` (seed 12951795380338728159) on the
/// compiled path: the forward pass dropped the annotation of a constant
/// buffer (`let b: Vec<f64> = vec![0.72; 2];`), so a method on an element
/// (`b[1].tanh()`) was ambiguous (`{float}`) and the crate did not compile.
#[differentiate(compiled)]
fn annotated_constant_buffer(x: f64) -> f64 {
    let b: Vec<f64> = vec![0.72; 2];
    x * b[1].tanh() + b[0].abs()
}

/// Found as program p125 of `--seed 11` (seed 13057114306034206001) on the
/// compiled path: a variable the adjoint needs after it changes (`x`, read
/// by the derivative of `x * x`) is pushed when its block ends, by name; a
/// later `let x` hid the name, so the forward pass pushed the wrong value (a
/// compile error here; a wrong derivative had the types matched). The
/// variable is now kept under a name of its own before it is hidden.
#[differentiate(compiled)]
fn hidden_before_the_block_ends(x: f64, y: f64) -> f64 {
    let mut x = x * y;
    x += (x * x).tanh();
    let w = x.sin() * y;
    let x = 0.5 * y;
    w * x
}

/// Found as program p104 of `--seed 7` (seed 193579200847519953) on the
/// compiled path: an iterator chain lowered into a loop summed into an
/// accumulator without a type, so when every term was a constant
/// (`.map(|_| -0.84)`) the sum was an ambiguous `{float}` and a method
/// called on it (`.clamp(..)`) did not compile. The accumulator now has the
/// type of the `sum::<f64>()`.
#[differentiate(compiled)]
fn constant_terms_of_a_chain(x: f64, s: &[f64]) -> f64 {
    let c = s.iter().map(|_| -0.84).sum::<f64>().clamp(-0.53, 0.35);
    x * c + s.iter().map(|&u| u * x).sum::<f64>().sin()
}

/// Found as program p423 of `--seed 12` (seed 7188728768067849345) on the
/// compiled path: a constant buffer whose element the adjoint reads (`b[0]`
/// in the derivative of `max`) is overwritten later, so the write keeps the
/// old value and the adjoint puts it back at the write's index; the index
/// (`at`, a `let` of the block) was not among the values the adjoint reads,
/// so it was not there (a compile error: cannot find value `at`). The
/// indices of element writes of restored buffers are now read.
#[differentiate(compiled)]
fn restored_constant_buffer(x: f64) -> f64 {
    let mut b = vec![-0.5_f64; 3];
    let v = x * x.max(b[0]);
    {
        let at = 2 % b.len() - 2;
        b[at] = 2.0;
    }
    v + b[0] * x
}

#[test]
fn compiled_path_regressions() {
    let s = [0.4, -1.1, 0.25];
    for x in [-0.8, 0.3, 1.1] {
        let (value, g) = constant_terms_of_a_chain::value_and_grad(x, &s);
        assert_eq!(value, constant_terms_of_a_chain(x, &s));
        let mut point = vec![x];
        point.extend(s);
        let mut got = vec![g.x];
        got.extend(&g.s);
        check_gradient(
            |p| constant_terms_of_a_chain(p[0], &p[1..]),
            &point,
            &got,
            "chain of constants",
        );
        let (value, g) = annotated_constant_buffer::value_and_grad(x);
        assert_eq!(value, annotated_constant_buffer(x));
        check_gradient(|p| annotated_constant_buffer(p[0]), &[x], &[g.x], "buffer");
        let (value, g) = restored_constant_buffer::value_and_grad(x);
        assert_eq!(value, restored_constant_buffer(x));
        check_gradient(|p| restored_constant_buffer(p[0]), &[x], &[g.x], "restored");
        let (value, g) = hidden_before_the_block_ends::value_and_grad(x, 0.7);
        assert_eq!(value, hidden_before_the_block_ends(x, 0.7));
        check_gradient(
            |p| hidden_before_the_block_ends(p[0], p[1]),
            &[x, 0.7],
            &[g.x, g.y],
            "hidden",
        );
    }
}

/// Found as program p503 of `--seed 13` (seed 16882758029005098817), and the
/// cause of the "about 1%" of known rejection 2: on the tape, a checkpointed
/// loop whose update reads `w.sin_cos().0` was rejected as not straight-line
/// (the pair's field is not arithmetic the loop takes). In checkpointed
/// bodies `e.sin_cos().0` is now `e.sin()` (and `.1` is `e.cos()`), the same
/// bits.
#[differentiate(tape)]
fn checkpointed_sin_cos(x: f64, y: f64) -> f64 {
    let mut w = x;
    let mut v = y;
    #[checkpoint]
    for _ in 0..10 {
        w += 0.5 * (w.sin_cos().0 + v).cos();
        v += 0.25 * (x * v.sin_cos().1).tanh();
    }
    w * v
}

#[test]
fn checkpointed_sin_cos_on_the_tape() {
    for (x, y) in [(0.3, -0.7), (-1.2, 0.4)] {
        let (value, g) = checkpointed_sin_cos::value_and_grad(x, y);
        assert_eq!(value, checkpointed_sin_cos(x, y));
        check_gradient(
            |p| checkpointed_sin_cos(p[0], p[1]),
            &[x, y],
            &[g.x, g.y],
            "checkpointed sin_cos",
        );
    }
}

/// Found by the fuzzer (program p905 of `--seed 13`, and earlier as a
/// `tests/ui` case that pinned the rejection): a `#[preaccumulate]` sum `b`
/// assigned a differentiated call's result after the loop was not taken as a
/// real (a call's result has an unknown structure), so the loop was rejected.
/// One variable has one type: a real assigned a call's result stays a real,
/// and the loop sums into it. The same cause rejected checkpointed loops
/// whose state is later assigned a call's result (p605 of `--seed 13`).
#[differentiate]
fn doubled(x: f64) -> f64 {
    x * 2.0
}

macro_rules! sum_later_assigned_a_call {
    ($name:ident, $engine:meta) => {
        #[$engine]
        fn $name(x: f64) -> f64 {
            let mut a = 0.0;
            let mut b = 0.0;
            #[preaccumulate]
            for _ in 0..2 {
                a += (x * 3.0).cos();
                b -= x * x;
            }
            let mut w = x.atan();
            #[checkpoint]
            for _ in 0..10 {
                w += 0.5 * (w.atan().exp() + w).sin();
            }
            if b < 0.0 {
                b = doubled(a);
            }
            w = doubled(w) + x;
            a * b + w
        }
    };
}
sum_later_assigned_a_call!(sum_assigned_a_call, differentiate);
sum_later_assigned_a_call!(sum_assigned_a_call_tape, differentiate(tape));

#[test]
fn sums_and_states_later_assigned_a_call() {
    for x in [0.3, -0.7, 1.1] {
        // x ≠ 0: b = -2x² < 0, so b = 2a with a = 2cos(3x): a·b = 8cos²(3x).
        let g = sum_assigned_a_call::grad(x).x;
        let t = sum_assigned_a_call_tape::grad(x).x;
        assert_eq!(
            sum_assigned_a_call::value_and_grad(x).0,
            sum_assigned_a_call(x)
        );
        assert_eq!(
            sum_assigned_a_call_tape::value_and_grad(x).0,
            sum_assigned_a_call(x)
        );
        check_gradient(|p| sum_assigned_a_call(p[0]), &[x], &[g], "compiled");
        check_gradient(|p| sum_assigned_a_call(p[0]), &[x], &[t], "tape");
    }
}

/// Found as program p270 of `--seed 14` (seed 17221088654484614402) on the
/// compiled path: a call whose argument is plain (`match x > s[1] + 0.5 {
/// true => 1.69, false => -1.4 }`: a constant, chosen by differentiated
/// values) was emitted as written, so the comparison ran again on the
/// pass's scalars next to an unlifted `0.5` (a compile error). Plain calls
/// now take their arguments as lowered (the `match` ran once, before).
#[differentiate(compiled)]
fn plain_call_of_a_chosen_constant(x: f64, s: &[f64]) -> f64 {
    let k = doubled(match x > s[1] + 0.5 {
        true => 1.69,
        false => -1.4,
    });
    if x.exp2() > s[0] {
        return doubled(match x.exp2() > (s[1] / (s[0].abs() + 0.5)) {
            true => 1.5,
            false => -0.5,
        }) * x;
    }
    k * x * s[0]
}

#[test]
fn plain_calls_take_their_arguments_as_lowered() {
    // x < 1.585 (2^x < 3): the `k` path, with k = 2·1.69 for x > 0.2 and
    // 2·(-1.4) below; x = 1.7 returns early.
    let s = [3.0, -0.3];
    for x in [-2.0, 0.1, 0.9, 1.7] {
        let (value, g) = plain_call_of_a_chosen_constant::value_and_grad(x, &s);
        assert_eq!(value, plain_call_of_a_chosen_constant(x, &s));
        let mut point = vec![x];
        point.extend(s);
        let mut got = vec![g.x];
        got.extend(&g.s);
        check_gradient(
            |p| plain_call_of_a_chosen_constant(p[0], &p[1..]),
            &point,
            &got,
            "plain call",
        );
    }
}

/// Found as programs p115 and p169 of `--seed 99` (seeds 12264636879021262602
/// and 10627250768657965471), the rest of known rejection 2: on the tape, a
/// checkpointed loop reading a real it does not change whose type the
/// analysis cannot see (`let v5 = pt.a;`, a field of a struct parameter, or
/// `let v8 = h0(..);`, a call's result) was rejected as not straight-line.
/// Such an operand of real arithmetic is a real, read once before the loop;
/// one that reads what the loop changes (`pt.a * (i as f64)`) is not.
#[derive(Differentiable, Clone, Debug)]
pub struct Pt {
    pub a: f64,
    pub b: f64,
}

macro_rules! opaque_invariants {
    ($name:ident, $engine:meta) => {
        #[$engine]
        fn $name(x0: f64, pt: &Pt, s: &[f64]) -> f64 {
            let v5 = pt.a;
            let v8 = doubled(x0 * pt.b.sin());
            let mut w9 = x0 * 0.5;
            let mut w10 = x0.cos();
            #[checkpoint]
            for _ in 0..7 {
                w9 += 0.5 * (((-v5) + w9) / (1.0 + ((-v5) + w9) * ((-v5) + w9)));
                w10 += 0.25 * ((v8 * w10).tanh() + pt.b * w9);
            }
            let mut acc = 0.0;
            for i in 0..s.len() {
                acc = acc * 0.5 + pt.a * (i as f64) + v8 * acc.sin();
            }
            w9 * w10 + acc
        }
    };
}
opaque_invariants!(opaque_invariants_default, differentiate);
opaque_invariants!(opaque_invariants_tape, differentiate(tape));

#[test]
fn invariants_of_unseen_types_in_checkpointed_loops() {
    let s = [0.1, 0.2, 0.3];
    for (x, a, b) in [(0.4, 0.3, -0.7), (-1.1, 1.2, 0.5)] {
        let pt = Pt { a, b };
        let f = |p: &[f64]| opaque_invariants_default(p[0], &Pt { a: p[1], b: p[2] }, &s);
        let g = opaque_invariants_default::grad(x, &pt, &s);
        check_gradient(f, &[x, a, b], &[g.x0, g.pt.a, g.pt.b], "opaque invariants");
        let g = opaque_invariants_tape::grad(x, &pt, &s);
        check_gradient(
            f,
            &[x, a, b],
            &[g.x0, g.pt.a, g.pt.b],
            "opaque invariants, tape",
        );
        assert_eq!(
            opaque_invariants_tape::value_and_grad(x, &pt, &s).0,
            opaque_invariants_default(x, &pt, &s)
        );
    }
}

/// Found as program p246 of `--seed 22` (seed 2734516487247777569), on the
/// compiled path: an early `return` from inside a block that shadows a
/// variable of an enclosing block (`let v10` inside the `if` hiding the
/// loop body's `v10`) pushed, for the enclosing block the exit leaves, the
/// value of the inner variable (a plain `f64`: a compile error, and
/// otherwise the wrong value). The enclosing variable is now kept under a
/// name of its own before the inner `let`, as for shadowing in one block.
#[differentiate]
fn identity_callee(x0: f64) -> f64 {
    x0
}

macro_rules! shadowed_then_returned {
    ($name:ident, $engine:meta) => {
        #[$engine]
        fn $name(x1: f64, x0: f64, x2: f64, #[no_grad] c: f64, s0: &[f64]) -> f64 {
            let mut n8 = 0;
            loop {
                n8 += 1;
                if n8 > 1 {
                    break;
                }
                let v10 = s0[n8] / x0;
                if v10 < 0.5 {
                    let v10 = c.sin();
                    let mut n11 = 0;
                    loop {
                        n11 += 1;
                        if n11 > 5 {
                            break;
                        }
                        let v13 = identity_callee(v10.atan()) + v10 * x1;
                        if c >= 0.09 {
                            return x2 * v13;
                        }
                    }
                }
            }
            x0 * x1
        }
    };
}
shadowed_then_returned!(shadowed_then_returned_compiled, differentiate(compiled));
shadowed_then_returned!(shadowed_then_returned_tape, differentiate(tape));

#[test]
fn an_exit_leaves_a_block_whose_variable_an_inner_block_shadows() {
    let s0 = [0.3, 0.2, 0.9];
    for (x0, c) in [(1.5, 0.5), (1.5, 0.01), (0.1, 0.5)] {
        let (x1, x2) = (0.7, -1.3);
        let (value, g) = shadowed_then_returned_compiled::value_and_grad(x1, x0, x2, c, &s0);
        let (tape_value, t) = shadowed_then_returned_tape::value_and_grad(x1, x0, x2, c, &s0);
        assert_eq!(value, tape_value);
        assert_eq!(value, shadowed_then_returned_compiled(x1, x0, x2, c, &s0));
        let got = [vec![g.x1, g.x0, g.x2], g.s0.clone()].concat();
        let expected = [vec![t.x1, t.x0, t.x2], t.s0.clone()].concat();
        assert_close_tol(&got, &expected, 1e-12, "compiled against the tape");
        let point = [vec![x1, x0, x2], s0.to_vec()].concat();
        check_gradient(
            |p| shadowed_then_returned_compiled(p[0], p[1], p[2], c, &p[3..]),
            &point,
            &got,
            "shadowed then returned",
        );
    }
}

/// Fuzz seed 1450947366068361816 (quick batch p10, the first batch with
/// helpers returning user types): a function of one real returning a user
/// type took the one-input forward-mode gradient meant for real results (a
/// compile error in its `jacobian`).
mod one_real_input_and_a_result_of_a_user_type {
    use deltad::{differentiate, Differentiable};

    #[derive(Differentiable, Clone, Debug, PartialEq)]
    pub struct Pt {
        pub a: f64,
        pub b: f64,
    }

    #[differentiate]
    pub fn h0(x0: f64) -> Pt {
        Pt {
            a: 1.0,
            b: -(x0 * f64::copysign(-0.3, -1.8)),
        }
    }

    #[test]
    fn its_jacobian_has_a_row_per_field() {
        let (value, rows) = h0::jacobian(2.0);
        // copysign(-0.3, -1.8) = -0.3, so b = 0.3 x.
        assert_eq!(value, Pt { a: 1.0, b: 0.6 });
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].x0, 0.0);
        assert_eq!(rows[1].x0, 0.3);
        assert!(h0::tape_stats(2.0).compiled);
    }
}

/// Fuzz seed 30 p278 (seed 9382957541248409122): a local built by a struct
/// literal whose field is a bare float literal (`Pt { a: 2.0, .. }`) became a
/// local of type `{float}`, on which `(q.a * q.a + 0.5).recip()` is an
/// ambiguous method call (a compile error); the field's variable now has the
/// function's float type.
mod literal_field_of_a_bare_float {
    use deltad::{differentiate, Differentiable};

    #[derive(Differentiable, Clone, Debug)]
    pub struct Pt {
        pub a: f64,
        pub b: f64,
    }

    #[differentiate]
    pub fn h0(x2: f64) -> f64 {
        let q8 = Pt {
            a: 2.0,
            b: x2.to_radians().atan(),
        };
        ((q8.a * q8.a) + 0.5).recip() * q8.b
    }

    #[test]
    fn the_field_has_the_functions_float_type() {
        let x = 0.7_f64;
        let g = h0::grad(x);
        // f = atan(x·π/180) / 4.5.
        let r = x.to_radians();
        let expected = (1.0 / (1.0 + r * r)) * (std::f64::consts::PI / 180.0) / 4.5;
        assert!((g.x2 - expected).abs() < 1e-15);
    }
}

/// Fuzz seed 31 p33 (seed 3705029910871559202): fields of results of calls
/// read inline (`h0(..).b`) several times in one block gave each call's
/// local the same name, and the adjoint of a shadowing local of a user type
/// was emitted outside the scope its adjoint twin was declared in (a compile
/// error); the twin is declared with the block's other adjoints now.
mod calls_results_of_user_types_shadowed {
    use deltad::{differentiate, Differentiable};

    #[derive(Differentiable, Clone, Debug)]
    pub struct Pt {
        pub a: f64,
        pub b: f64,
    }

    #[differentiate]
    pub fn h0(x0: f64, x1: f64) -> Pt {
        Pt {
            a: x0 * x1,
            b: x1.sin(),
        }
    }

    #[differentiate(compiled)]
    pub fn f(x0: f64, x1: f64) -> f64 {
        let w = (x0 + h0(-0.83, x1.tanh()).b).atan() + h0(x0, x1).a;
        let r = h0(w, x0);
        let a: f64 = r.a;
        let r = h0(a, x1);
        w * r.b + h0(r.a * 1.0, 0.5).b
    }

    #[test]
    fn each_call_has_its_own_adjoint() {
        let (x0, x1) = (0.3, -0.7);
        let g = f::grad(x0, x1);
        // Central differences, h = 1e-6: truncation O(h²) ≈ 1e-12 on
        // O(1) third derivatives, rounding ≈ 1e-16 / 1e-6 = 1e-10.
        let h = 1e-6;
        let dx0 = (f(x0 + h, x1) - f(x0 - h, x1)) / (2.0 * h);
        let dx1 = (f(x0, x1 + h) - f(x0, x1 - h)) / (2.0 * h);
        assert!((g.x0 - dx0).abs() < 1e-8, "{} {dx0}", g.x0);
        assert!((g.x1 - dx1).abs() < 1e-8, "{} {dx1}", g.x1);
    }
}

/// Fuzz seed 31 p64 (seed 4249160059947021608): a variable restored only
/// because a checkpointed loop keeps it as state (`w4`, useless for the
/// result) made a later element loop's `if` adjoint work, whose condition
/// reads the loop's index: the reads that restoration adds were
/// established once, not to a fixed point, so the reverse loop did not bind
/// the index (a compile error).
mod restoration_needs_a_loop_index {
    use deltad::differentiate;

    #[differentiate(compiled)]
    pub fn f(x1: f64, x0: f64, s0: &[f64], s1: &[f64]) -> f64 {
        let mut w3 = x0;
        let mut w4 = x1;
        #[checkpoint]
        for _ in 0..7 {
            w3 += 0.5 * w3.tanh();
            w4 += 0.5 * (w3 + w4).atan();
        }
        for _ in 0..s1.len() {
            for (j, _) in s0.iter().enumerate() {
                if j < 1 {
                    w4 += x1 * 0.5;
                }
            }
        }
        w3 * w3
    }

    #[differentiate(tape)]
    pub fn f_tape(x1: f64, x0: f64, s0: &[f64], s1: &[f64]) -> f64 {
        let mut w3 = x0;
        let mut w4 = x1;
        #[checkpoint]
        for _ in 0..7 {
            w3 += 0.5 * w3.tanh();
            w4 += 0.5 * (w3 + w4).atan();
        }
        for _ in 0..s1.len() {
            for (j, _) in s0.iter().enumerate() {
                if j < 1 {
                    w4 += x1 * 0.5;
                }
            }
        }
        w3 * w3
    }

    #[test]
    fn the_reverse_loop_binds_its_index() {
        let (s0, s1) = ([0.3, 0.2, -0.4], [1.0, 2.0]);
        let g = f::grad(0.4, 0.3, &s0, &s1);
        let t = f_tape::grad(0.4, 0.3, &s0, &s1);
        assert!((g.x0 - t.x0).abs() <= 1e-12 * t.x0.abs().max(1.0));
        assert_eq!(g.x1, t.x1);
        f::check_derivatives(0.4, 0.3, &s0, &s1).assert_within(1e-6);
    }
}

/// Fuzz seed 31 p575 (seed 14435220787399740368): an element's field of
/// unknown type compared with a differentiated call's result was read as
/// plain data (its twin's `Active` leaf) and compared with a scalar of the
/// pass (a compile error); types and activity now inform each other to a
/// fixed point, so the field is a real.
mod field_compared_with_a_call {
    use deltad::{differentiate, Differentiable};

    #[derive(Differentiable, Clone, Debug)]
    pub struct Pt {
        pub a: f64,
        pub b: f64,
    }

    #[differentiate]
    pub fn h0(x0: f64) -> f64 {
        x0 * 0.5
    }

    #[differentiate(compiled)]
    pub fn f(x1: f64, ps: &[Pt], k: usize) -> f64 {
        if ps[(k + 3) % ps.len()].b > h0(x1) {
            return x1 * 2.0;
        }
        x1 * x1
    }

    #[test]
    fn both_branches() {
        let ps = [Pt { a: 0.0, b: 0.5 }];
        assert_eq!(f::grad(0.5, &ps, 0).x1, 2.0);
        assert_eq!(f::grad(2.0, &ps, 0).x1, 4.0);
    }
}

/// Fuzz seed 32 p516 (seed 3275444800637285533): a field of a result given a
/// constant whose type the macro cannot tell (a fold over a buffer of
/// constants) was put into the result's twin as it was, where the field is a
/// differentiated real (a compile error); every constant now goes through
/// the field's own conversion (lifted into a differentiated real field, as it
/// is elsewhere).
mod constant_of_unknown_type_in_a_result {
    use deltad::{differentiate, Differentiable};

    #[derive(Differentiable, Clone, Debug, PartialEq)]
    pub struct Pt {
        pub a: f64,
        pub b: f64,
    }

    #[differentiate(compiled)]
    pub fn h0(x0: f64) -> Pt {
        let b1 = vec![-0.36_f64; 3];
        Pt {
            a: x0 * 2.0,
            b: b1.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }

    #[test]
    fn the_constant_field_has_no_derivative() {
        let (value, rows) = h0::jacobian(1.5);
        assert_eq!(value, Pt { a: 3.0, b: -0.36 });
        assert_eq!((rows[0].x0, rows[1].x0), (2.0, 0.0));
    }
}

/// Fuzz seed 33 p524 (seed 17157730273646072993) and p1162 (seed
/// 17184169857020953247): the adjoint recomputed a call of a user type whose
/// arguments are all constant (`h0(c / 2.0)`) with the callee's
/// differentiated forward pass, so the local's fields were differentiated
/// leaves where the adjoint expected the plain numbers the forward pass had
/// (a compile error); the adjoint now calls the function itself, as the
/// forward pass does.
mod constant_call_of_a_user_type_in_the_adjoint {
    use deltad::{differentiate, Differentiable};

    #[derive(Differentiable, Clone, Debug)]
    pub struct Pt {
        pub a: f64,
        pub b: f64,
    }

    #[differentiate]
    pub fn h0(x0: f64) -> Pt {
        Pt {
            a: x0.sin(),
            b: x0 * x0 + 1.0,
        }
    }

    #[differentiate(compiled)]
    pub fn f(x0: f64, #[no_grad] c: f64, x2: f64) -> f64 {
        let mut acc = 0.0;
        #[preaccumulate]
        for _ in 0..3 {
            acc += (h0(c / 2.0).b * x0).tanh();
        }
        let r = h0(c);
        acc * r.a + h0(0.5 * x2).a
    }

    #[test]
    fn the_constant_call_runs_as_written() {
        let (x0, c, x2) = (0.4, 0.9, -0.3);
        let g = f::grad(x0, c, x2);
        // d/dx0 of 3 tanh(b x0) sin(c), with b = (c/2)² + 1; d/dx2 of
        // sin(x2 / 2).
        let b = (c / 2.0) * (c / 2.0) + 1.0;
        let t = (b * x0).tanh();
        let dx0 = 3.0 * (1.0 - t * t) * b * c.sin();
        let dx2 = 0.5 * (0.5 * x2).cos();
        assert!((g.x0 - dx0).abs() < 1e-12, "{} {dx0}", g.x0);
        assert!((g.x2 - dx2).abs() < 1e-12, "{} {dx2}", g.x2);
    }
}

/// Fuzz seed 43 p493 (seed 2272732358393725231): the result of a call of a
/// user type that the rest of the body only borrows (`h0(s, &r, ..)`, no
/// field read) was taken for a buffer by the compiled path, whose passes
/// then measured and indexed it (a compile error). A value only borrowed
/// after its `let` could be either, so the function takes the tape; its
/// derivative is checked against the engine-independent closed form.
mod result_of_a_user_type_only_borrowed {
    use deltad::{differentiate, Differentiable};

    #[derive(Differentiable, Clone, Debug)]
    pub struct Pt {
        pub a: f64,
        pub b: f64,
    }

    #[differentiate]
    pub fn h0(q: &Pt, x0: f64) -> Pt {
        Pt {
            a: q.a * x0,
            b: q.b + x0 * x0,
        }
    }

    #[differentiate]
    pub fn f(x0: f64, pt: &Pt) -> f64 {
        let r = h0(pt, x0.sin());
        h0(&r, x0).a + h0(&r, 2.0).b
    }

    #[test]
    fn the_borrowed_result_is_differentiated() {
        let (x0, pt) = (0.7, Pt { a: 1.5, b: -0.5 });
        let (value, g) = f::value_and_grad(x0, &pt);
        // r = (a sin x, b + sin² x); f = r.a x + r.b + 4 = a x sin x + b + sin² x + 4.
        let s = x0.sin();
        assert!((value - (pt.a * x0 * s + pt.b + s * s + 4.0)).abs() < 1e-12);
        let dx = pt.a * (s + x0 * x0.cos()) + 2.0 * s * x0.cos();
        assert!((g.x0 - dx).abs() < 1e-12, "{} {dx}", g.x0);
        assert!((g.pt.a - x0 * s).abs() < 1e-12);
        assert!((g.pt.b - 1.0).abs() < 1e-12);
    }
}

/// Fuzz seed 44 p311 (seed 14517023472309324612): an array local (here one
/// written in place as an argument) kept when an early exit leaves its
/// block came back in the adjoint as a `Vec` (a compile error where it is
/// passed to an array parameter); it is popped into an array now. Checked
/// on both engines against the closed form.
mod array_kept_at_an_early_exit {
    use deltad::differentiate;

    #[differentiate]
    pub fn h0(arr: [f64; 2]) -> f64 {
        arr[0] * arr[1]
    }

    macro_rules! exits {
        ($name:ident, $attr:meta) => {
            #[$attr]
            pub fn $name(x0: f64, s0: &[f64]) -> f64 {
                let mut n = 0;
                loop {
                    n += 1;
                    if n > 2 {
                        break;
                    }
                    let kept = [x0, 3.0];
                    let constant = [2.0, 0.5];
                    if s0[n % s0.len()] > 0.0 {
                        return h0([s0[n % s0.len()], x0]) + h0(kept) + h0(constant);
                    }
                }
                x0
            }
        };
    }
    exits!(f, differentiate);
    exits!(f_tape, differentiate(tape));

    #[test]
    fn the_kept_array_is_an_array_again() {
        for s in [[0.5, 1.5, -1.0], [0.5, -1.5, 2.0], [1.0, -1.0, -2.0]] {
            let x = 0.75;
            let (value, g) = f::value_and_grad(x, &s);
            let (tape_value, t) = f_tape::value_and_grad(x, &s);
            assert_eq!(value.to_bits(), tape_value.to_bits());
            // The first n in 1..=2 with s[n % 3] > 0 returns s[n] x + 3x + 1.
            let hit = (1..=2).find(|&n| s[n % 3] > 0.0);
            let (dx, ds) = match hit {
                Some(n) => {
                    let mut ds = [0.0; 3];
                    ds[n % 3] = x;
                    (s[n % 3] + 3.0, ds)
                }
                None => (1.0, [0.0; 3]),
            };
            assert!(
                (g.x0 - dx).abs() < 1e-12 && (t.x0 - dx).abs() < 1e-12,
                "{} {} {dx}",
                g.x0,
                t.x0
            );
            for k in 0..3 {
                assert!((g.s0[k] - ds[k]).abs() < 1e-12, "{:?} {ds:?}", g.s0);
            }
        }
        assert!(f::tape_stats(0.75, &[0.5, 1.5, -1.0]).compiled);
    }
}

/// Fuzz seed 54 p167 (seed 10031434016445931140): a call with constant
/// arguments (computed as written, on plain values) whose array argument
/// calls a closure of the body was emitted with the array as written; the
/// compiled path inlines closures instead of defining them, so the call
/// named a closure that did not exist (a compile error). The call now takes
/// the array the lowering built of the elements. Checked on both engines
/// against the closed form.
mod constant_call_with_a_closure_in_an_array {
    use deltad::differentiate;

    #[differentiate]
    pub fn h0(arr: [f64; 3]) -> f64 {
        arr[0] * arr[1] - arr[2]
    }

    macro_rules! closure_in_array {
        ($name:ident, $engine:meta) => {
            #[$engine]
            pub fn $name(x1: f64) -> f64 {
                let c10 = |t11: f64| t11 * 2.0;
                let v14 = h0([-1.5, c10(1.25), 1.0]);
                x1 * v14 + h0([x1, c10(x1), 0.5])
            }
        };
    }
    closure_in_array!(f, differentiate);
    closure_in_array!(f_tape, differentiate(tape));

    #[test]
    fn the_call_takes_the_array_built_of_its_elements() {
        // v14 = -1.5 * 2.5 - 1 = -4.75; h0([x, 2x, 0.5]) = 2x² - 0.5.
        for x in [-1.0, 0.25, 2.0] {
            let expected = -4.75 * x + 2.0 * x * x - 0.5;
            let derivative = -4.75 + 4.0 * x;
            assert!((f(x) - expected).abs() < 1e-12);
            let (value, g) = f::value_and_grad(x);
            let (_, t) = f_tape::value_and_grad(x);
            assert_eq!(value.to_bits(), f(x).to_bits());
            assert!((g.x1 - derivative).abs() < 1e-12, "{} {derivative}", g.x1);
            assert!((t.x1 - derivative).abs() < 1e-12, "{} {derivative}", t.x1);
        }
        assert!(f::tape_stats(0.5).compiled);
    }
}

/// Front-end fuzz (seed 0xf022de17, after the corpus grew): a function with
/// an empty `where` clause (`-> f64 where { .. }`, valid Rust) expanded to
/// `where , ..` in the items a checkpointed call of it uses, which do not
/// parse. Each predicate now comes with its own comma.
mod empty_where_clause {
    use deltad::differentiate;

    #[differentiate]
    pub fn pow_of(x: f64, y: f64) -> f64
where {
        x.powf(y)
    }

    #[test]
    fn the_function_and_its_derivatives_compile() {
        let (x, y) = (1.5_f64, 2.5_f64);
        let g = pow_of::grad(x, y);
        assert!((g.x - y * x.powf(y - 1.0)).abs() < 1e-12);
        assert!((g.y - x.powf(y) * x.ln()).abs() < 1e-12);
    }
}

/// Fuzz seed 62, program 241 (seed 913832638248970690, the first batch with
/// derivatives of helpers taken inside the entry function): the tangent of
/// a nested `jvp` mixing a differentiated field and a constant buffer,
/// `&h0::Grad { x0: s0[4], s0: vec![v9; s0.len()] }` with `v9: f64` a
/// constant, did not compile (`expected Vec<Real<..>>, found Vec<f64>`): an
/// owned buffer of constants is now lifted to dual values like a constant
/// real is (a `Vec` and an array).
mod nested_jvp_with_a_constant_buffer_tangent {
    use deltad::differentiate;

    #[differentiate]
    pub fn g(a: f64, s: &[f64], w: [f64; 2]) -> f64 {
        a * s[0] * s[1] + w[0] * w[1] * a
    }

    #[differentiate]
    pub fn f(x: f64, s: &[f64]) -> f64 {
        let c: f64 = 1.5;
        let d = [0.25, -2.0];
        g::jvp(
            x,
            s,
            [x, 1.0],
            &g::Grad {
                a: x,
                s: vec![c; s.len()],
                w: d,
            },
        )
        .1
    }

    #[test]
    fn its_gradient_matches_the_closed_form() {
        // f = x·s0·s1 + x·c·(s0 + s1) + x(0.25 + (-2)·x)  (w = [x, 1]):
        // g's partials along (x, [c, c], [0.25, -2]) with a = x.
        let (x, s) = (0.5, [2.0, 3.0]);
        let c = 1.5;
        let value =
            x * s[0] * s[1] + x * c * (s[0] + s[1]) + x * (0.25 * 1.0 + x * -2.0) + x * 1.0 * x;
        let (got, grad) = f::value_and_grad(x, &s);
        assert!((got - value).abs() < 1e-12, "{got} vs {value}");
        let dx = s[0] * s[1] + c * (s[0] + s[1]) + 0.25 - 4.0 * x + 2.0 * x;
        assert!((grad.x - dx).abs() < 1e-12, "{} vs {dx}", grad.x);
        assert!((grad.s[0] - x * (s[1] + c)).abs() < 1e-12);
        assert!((grad.s[1] - x * (s[0] + c)).abs() < 1e-12);
    }
}

/// Fuzz seed 99 p143 (seed 8267933994943436091): a local copied from a real
/// field of a differentiated parameter that nothing derives from (`v1`
/// feeds nothing the result depends on) was a copy of the twin's field, a
/// scalar of the pass wrapped for the twin, so `v1 -= v1` did not compile.
/// Such reads now give the machine value (and any other field a copy); also
/// a read of a field of a call's result. Checked against the closed form
/// and central differences, compiled and on the tape.
mod unused_copy_of_a_differentiated_field {
    use super::common::*;
    use deltad::{differentiate, Differentiable};

    #[derive(Differentiable, Clone, Debug)]
    pub struct Pt {
        pub a: f64,
        pub b: f64,
        pub n: usize,
    }

    #[differentiate]
    pub fn swap(q: &Pt) -> Pt {
        Pt {
            a: q.b,
            b: q.a,
            n: q.n,
        }
    }

    #[differentiate]
    pub fn h0(x0: f64, q: &Pt) -> f64 {
        if x0 > 0.0 {
            let mut v1 = q.b;
            v1 -= v1;
            let mut k = q.n;
            k += 1;
            let r = swap(q);
            let mut w = r.a;
            w *= 2.0;
        }
        x0 * q.a
    }

    #[differentiate(tape)]
    pub fn h0_tape(x0: f64, q: &Pt) -> f64 {
        if x0 > 0.0 {
            let mut v1 = q.b;
            v1 -= v1;
        }
        x0 * q.a
    }

    #[test]
    fn the_copy_is_a_plain_value() {
        let q = Pt {
            a: 1.5,
            b: -0.5,
            n: 3,
        };
        for x0 in [0.7, -0.4] {
            let (value, g) = h0::value_and_grad(x0, &q);
            assert_eq!(value, x0 * q.a);
            assert_eq!((g.x0, g.q.a, g.q.b), (q.a, x0, 0.0));
            let tape = h0_tape::grad(x0, &q);
            assert_eq!((tape.x0, tape.q.a, tape.q.b), (g.x0, g.q.a, g.q.b));
            let fd = finite_difference(
                |p| {
                    h0(
                        p[0],
                        &Pt {
                            a: p[1],
                            b: p[2],
                            n: 3,
                        },
                    )
                },
                &[x0, q.a, q.b],
            );
            assert_close(&[g.x0, g.q.a, g.q.b], &fd, "central differences");
        }
    }
}

/// Fuzz (the quick batch's seed 5, p9, seed 3002602994801539148, the first
/// batch with whole buffers replaced): an array parameter's `.to_vec()`
/// assigned to a `Vec` local did not compile on the compiled path (the copy
/// was made as the array's type), nor did a `.to_vec()` of an array that a
/// later `vec![..]` of another length replaces.
mod array_copied_into_a_vec {
    use super::*;

    macro_rules! copies {
        ($name:ident, $engine:ident) => {
            #[differentiate($engine)]
            pub fn $name(arr: [f64; 3], x0: f64, s0: &[f64]) -> f64 {
                let mut b1: Vec<f64> = vec![-0.36; 6];
                b1 = arr.to_vec();
                b1[2] = b1[2] * x0;
                let mut b2 = arr.to_vec();
                b2[0] = b2[0] * s0[1];
                let t = b1[0] * b1[2] + b2[0] * b2[2];
                b2 = vec![0.5; 4];
                b2[3] = b2[3] * x0;
                t + b2[3] * b1[b1.len() - 1] + b2.len() as f64
            }
        };
    }
    copies!(h0, compiled);
    copies!(h0_tape, tape);

    #[test]
    fn the_copy_is_a_vec() {
        let (arr, x0, s0) = ([0.3, -1.2, 0.8], 0.7, [1.5, -0.4]);
        let (value, g) = h0::value_and_grad(arr, x0, &s0);
        assert_eq!(value, h0(arr, x0, &s0));
        let tape = h0_tape::grad(arr, x0, &s0);
        assert_close(&g.arr, &tape.arr, "the tape: arr");
        near(g.x0, tape.x0, 1e-12, "the tape: x0");
        assert_close(&g.s0, &tape.s0, "the tape: s0");
        let mut point = arr.to_vec();
        point.push(x0);
        point.extend(s0);
        let fd = finite_difference(|p| h0([p[0], p[1], p[2]], p[3], &p[4..]), &point);
        let mut got = g.arr.to_vec();
        got.push(g.x0);
        got.extend(&g.s0);
        assert_close(&got, &fd, "central differences");
    }
}

/// Fuzz (seed 120, p3, seed 505653342327433742): a buffer whose length a
/// whole assignment changes (`b2 = b1.to_vec()`, 5 → 6 elements) and whose
/// values the adjoint does not have was taken, in the adjoint, to keep the
/// length of its `let`: a loop over a buffer made from `b2.len()` ran back
/// one iteration short and took its values off the stack out of step, so
/// the derivative read the wrong kept partial (without the early return,
/// never taken, the adjoint had `b2`'s values and the bug did not show).
/// The adjoint now
/// starts from the length the buffer ends with, kept, and the reverse of
/// each whole assignment sets it back.
mod length_changed_by_a_whole_assignment {
    use super::*;

    macro_rules! lengths {
        ($name:ident, $engine:ident) => {
            #[differentiate($engine)]
            pub fn $name(x0: f64, x1: f64, x2: f64, k: usize) -> f64 {
                let b1: Vec<f64> = vec![-0.76; 6];
                let mut b2 = vec![0.75_f64; 5];
                for _ in 0..b1.len() {
                    b2 = b1.to_vec();
                }
                if x1 > 5.0 {
                    return b2[0];
                }
                let x0 = x0.sin();
                {
                    let mut t5 = vec![0.0; b2.len()];
                    for i4 in 0..t5.len() {
                        t5[i4] = (match k % 3 {
                            0 => b2[k % b2.len()],
                            1 => {
                                if i4 >= 2 {
                                    b1[3 % b1.len()]
                                } else {
                                    x0
                                }
                            }
                            _ => f64::ln_1p(-0.96 * -0.96),
                        })
                        .atan();
                    }
                    b2 = t5;
                }
                (x0 + x2).atan()
            }
        };
    }
    lengths!(h0, compiled);
    lengths!(h0_tape, tape);

    #[test]
    fn the_adjoint_follows_the_lengths() {
        let (x0, x1, x2) = (-0.7297240330295137, 0.406299420534882, 0.8795925034279111);
        for k in 0..4 {
            assert!(h0::tape_stats(x0, x1, x2, k).compiled);
            let (value, g) = h0::value_and_grad(x0, x1, x2, k);
            assert_eq!(value, h0(x0, x1, x2, k));
            let tape = h0_tape::grad(x0, x1, x2, k);
            let (got, on_tape) = ([g.x0, g.x1, g.x2], [tape.x0, tape.x1, tape.x2]);
            assert_close(&got, &on_tape, "the tape");
            let fd = finite_difference(|p| h0(p[0], p[1], p[2], k), &[x0, x1, x2]);
            assert_close(&got, &fd, "central differences");
        }
    }
}

/// Found reading the fix above: a buffer the adjoint does not need but
/// whose length it reads (`t5`'s `let` takes `b2.len()`), assigned whole in
/// a loop with no other adjoint work, had its old lengths kept by the
/// forward pass while the adjoint, finding nothing to do in that loop,
/// never took them back: called from a loop of another differentiated
/// function, the caller's adjoint then read them as its own (a panic, or
/// values out of step). Such an assignment now has a reverse, which takes
/// the length back.
mod length_tracked_in_a_loop_without_other_work {
    use super::*;

    macro_rules! pair {
        ($inner:ident, $outer:ident, $engine:ident) => {
            #[differentiate($engine)]
            pub fn $inner(x0: f64, x1: f64) -> f64 {
                let c: Vec<f64> = vec![0.5; 6];
                let mut b2 = vec![0.75_f64; 5];
                for _ in 0..2 {
                    b2 = c.to_vec();
                }
                if x1 > 5.0 {
                    return x0;
                }
                let y = x0.sin();
                let mut t5 = vec![0.0; b2.len()];
                for i in 0..t5.len() {
                    t5[i] = (y * (i as f64 + 1.0)).atan();
                }
                t5[t5.len() - 1] * x1.exp() + y
            }

            #[differentiate($engine)]
            pub fn $outer(x0: f64, x1: f64, n: usize) -> f64 {
                let mut s = 0.0;
                for k in 0..n {
                    if x0 > 0.1 * k as f64 {
                        s += $inner(x0 * (k as f64 + 1.0), x1) * x0;
                    } else {
                        s += x1 * x1;
                    }
                }
                s
            }
        };
    }
    pair!(inner, outer, compiled);
    pair!(inner_tape, outer_tape, tape);

    #[test]
    fn the_callers_adjoint_reads_its_own_values() {
        let (x0, x1) = (0.25, 0.3);
        for n in [1, 3, 5] {
            assert!(outer::tape_stats(x0, x1, n).compiled);
            let (value, g) = outer::value_and_grad(x0, x1, n);
            assert_eq!(value, outer(x0, x1, n));
            let tape = outer_tape::grad(x0, x1, n);
            let got = [g.x0, g.x1];
            assert_close(&got, &[tape.x0, tape.x1], "the tape");
            let fd = finite_difference(|p| outer(p[0], p[1], n), &[x0, x1]);
            assert_close(&got, &fd, "central differences");
        }
    }
}

/// Found as program p298 of `--seed 136` (seed 11550866158826476570): a
/// local `Vec` assigned whole with a longer buffer (`b = s1.to_vec()`) after
/// loops over its old length. Its old values were not needed, so the adjoint
/// put back only its adjoint's length, not the buffer's: the reversed loops
/// read the new length and indexed past the old adjoint ("range end index 4
/// out of range for slice of length 1"). The buffer the adjoint holds now
/// gets its old length back too.
mod regrown {
    use super::*;

    macro_rules! regrown {
        ($name:ident, $engine:ident) => {
            #[differentiate($engine)]
            pub fn $name(x0: f64, s0: &[f64], s1: &[f64], k: usize) -> f64 {
                let mut b: Vec<f64> = s0.iter().map(|&u| u * x0).collect();
                for _ in 0..2 {
                    for i in 0..b.len() {
                        b[i] = (x0 * x0 + 0.5).tanh();
                    }
                }
                b = s1.to_vec();
                b[k % b.len()] * x0 + b[(k + 1) % b.len()].atan()
            }
        };
    }
    regrown!(regrown, compiled);
    regrown!(regrown_tape, tape);

    #[test]
    fn a_buffer_assigned_a_longer_one_gets_its_old_length_back() {
        let flat = |g: regrown::Grad| [vec![g.x0], g.s0, g.s1].concat();
        for (s0, s1) in [
            (vec![0.4], vec![0.3, -0.2, 0.9, 0.5]),
            (vec![0.4, -0.6, 0.2], vec![0.3]),
            (vec![0.1, 0.2], vec![0.7, -0.4]),
        ] {
            for k in 0..4 {
                let x0 = 0.7;
                assert!(regrown::tape_stats(x0, &s0, &s1, k).compiled);
                let (value, g) = regrown::value_and_grad(x0, &s0, &s1, k);
                assert_eq!(value, regrown(x0, &s0, &s1, k));
                let got = flat(g);
                let tape = regrown_tape::grad(x0, &s0, &s1, k);
                let tape = [vec![tape.x0], tape.s0, tape.s1].concat();
                assert_close(&got, &tape, "the tape");
                let (n0, n1) = (s0.len(), s1.len());
                let fd = finite_difference(
                    |p| regrown(p[0], &p[1..1 + n0], &p[1 + n0..1 + n0 + n1], k),
                    &[vec![x0], s0.clone(), s1.clone()].concat(),
                );
                assert_close(&got, &fd, "central differences");
            }
        }
    }
}

/// Found as program p44 of `--seed 137` (seed 1366232389236752169): a loop
/// over `0..b.len()` whose body assigns `b` a buffer of another length. The
/// loop was reversed with its range read again in the adjoint, where `b`
/// had the length of the last assignment: one iteration fewer than the
/// forward pass ran ("the adjoint left values its forward pass kept"). A
/// range reading the length of a buffer assigned whole inside the loop is
/// not settled now.
mod reassigned_in_its_loop {
    use super::*;

    macro_rules! reassigned {
        ($name:ident $(, $engine:ident)?) => {
            #[differentiate$(($engine))?]
            pub fn $name(x0: f64, s0: &[f64], k: usize) -> f64 {
                let mut b = vec![-0.31_f64; 6];
                let mut total = 0.0;
                for i in 0..b.len() {
                    let at = i % b.len();
                    b[at] = (x0 * (i as f64 + 1.0)).sin();
                    total += b[at] * b[(at + 1) % b.len()];
                    b = s0.to_owned();
                }
                total + b[k % b.len()].tanh() * x0
            }
        };
    }
    // (Compiled: such a loop, whose variable the adjoint reads, keeps its
    // bounds with its trip count.)
    reassigned!(reassigned, compiled);
    reassigned!(reassigned_tape, tape);

    #[test]
    fn a_loop_over_a_buffer_it_reassigns_runs_back_as_often_as_forward() {
        let s0 = [0.3, -0.2, 0.9, 0.5, 0.1];
        for k in 0..4 {
            let x0 = 0.7;
            let (value, g) = reassigned::value_and_grad(x0, &s0, k);
            assert_eq!(value, reassigned(x0, &s0, k));
            let got = [vec![g.x0], g.s0].concat();
            let tape = reassigned_tape::grad(x0, &s0, k);
            assert_close(&got, &[vec![tape.x0], tape.s0].concat(), "the tape");
            let fd = finite_difference(
                |p| reassigned(p[0], &p[1..6], k),
                &[vec![x0], s0.to_vec()].concat(),
            );
            assert_close(&got, &fd, "central differences");
        }
    }
}

/// Found as program p256 of `--seed 149` (seed 15153312722411091129) and in
/// CI's fixed batch: a `Vec` pushed by a loop over `1..4`, a range from one
/// literal to another, did not compile (`(end).saturating_sub(1usize)` on a
/// temporary holding the literal end, an integer of no type yet). The length
/// is now `usize::saturating_sub(end, 1)`.
mod pushed_between_literals {
    use super::*;

    macro_rules! between {
        ($name:ident $(, $engine:ident)?) => {
            #[differentiate$(($engine))?]
            pub fn $name(x0: f64, s0: &[f64]) -> f64 {
                let mut b = Vec::new();
                for i in 1..4 {
                    b.push((x0 * s0[i % s0.len()]).sin());
                }
                let mut none: Vec<f64> = Vec::new();
                for i in 3..2 {
                    none.push(x0 * i as f64);
                }
                b[0] * b[2] + b[1] * x0 + none.len() as f64
            }
        };
    }
    between!(between, compiled);
    between!(between_tape, tape);

    #[test]
    fn a_vec_pushed_between_literals_has_their_difference_as_length() {
        let s0 = [0.3, -0.2, 0.9, 0.5];
        let x0 = 0.7;
        let (value, g) = between::value_and_grad(x0, &s0);
        assert_eq!(value, between(x0, &s0));
        let got = [vec![g.x0], g.s0].concat();
        let tape = between_tape::grad(x0, &s0);
        assert_close(&got, &[vec![tape.x0], tape.s0].concat(), "the tape");
        let fd = finite_difference(
            |p| between(p[0], &p[1..5]),
            &[vec![x0], s0.to_vec()].concat(),
        );
        assert_close(&got, &fd, "central differences");
    }
}

/// Found as programs p40, p60, p139, p172 and p248 of `--seed 158` (seed
/// 9677112799807690642 and others): a closure whose value is a constant
/// real (`|t: f64| 0.5`, `|t: f64| (1.7f64.sin() * 0.9).acos()`) given to a
/// function parameter did not compile on the tape (its constant was not
/// lifted to the dual value the callee takes); then as p90 and p273 of
/// `--seed 160` (seeds 4541974061967229492, 8496042867689982412): a
/// constant parameter (`|t: f64| c`) and `f64::sin_cos(..).0`; then as p166
/// and p25 of `--seed 161` (seeds 9132132048088919912, 4040815837598400064):
/// a local declared `f64` and `x.sin_cos().0`.
mod constant_closure_given_to_a_function {
    use super::*;

    #[differentiate]
    pub fn sum_over<F: Fn(f64) -> f64>(x0: f64, func: F) -> f64 {
        func(x0) * x0 + func(0.5 * x0).sin()
    }

    macro_rules! constant {
        ($name:ident $(, $engine:ident)?) => {
            #[differentiate$(($engine))?]
            pub fn $name(x0: f64, x1: f64, #[no_grad] c: f64) -> f64 {
                let local: f64 = -0.27;
                sum_over(x0, |t: f64| 0.5) + sum_over(x1, |t: f64| (1.7f64.sin() * 0.9).acos().sin())
                    + sum_over(x0, |t: f64| t * x1)
                    + sum_over(x1, |t: f64| c)
                    + sum_over(x0, |t: f64| f64::sin_cos(-1.83).0)
                    + sum_over(x1, |t: f64| local)
                    + sum_over(x0, |t: f64| c.sin_cos().1)
            }
        };
    }
    constant!(constant_default);
    constant!(constant_tape, tape);
    constant!(constant_compiled, compiled);

    #[test]
    fn a_constant_closure_is_lifted() {
        let (x0, x1, k): (f64, f64, f64) = (0.7, -0.4, 1.3);
        let c = (1.7f64.sin() * 0.9).acos().sin();
        let s = (-1.83f64).sin();
        // d/dx0 [0.5 x0 + sin 0.5 + c x1 + sin c + x0² x1 + sin(0.5 x0 x1)
        // + k x1 + sin k + s x0 + sin s], and d/dx1.
        // + l x1 + sin l + k' x0 + sin k', l = -0.27, k' = cos k.
        let expected = [
            0.5 + 2.0 * x0 * x1 + 0.5 * x1 * (0.5 * x0 * x1).cos() + s + k.cos(),
            c + x0 * x0 + 0.5 * x0 * (0.5 * x0 * x1).cos() + k - 0.27,
        ];
        let default = constant_default::grad(x0, x1, k);
        let tape = constant_tape::grad(x0, x1, k);
        let compiled = constant_compiled::grad(x0, x1, k);
        for (what, g) in [
            ("default", [default.x0, default.x1]),
            ("tape", [tape.x0, tape.x1]),
            ("compiled", [compiled.x0, compiled.x1]),
        ] {
            assert_close(&g, &expected, what);
        }
    }
}

/// Found as programs p80, p131, p142, p153 and p243 of `--seed 158` (seed
/// 6017304522860327214 and others): a function taking a function and
/// returning a user type did not compile (its result's type for compiled
/// callers was not emitted).
mod function_parameter_and_a_result_of_a_user_type {
    use super::*;

    #[derive(Differentiable, Clone, Debug)]
    pub struct Pair {
        pub a: f64,
        pub b: f64,
    }

    #[differentiate]
    pub fn pair_of<F: Fn(f64) -> f64>(x0: f64, func: F) -> Pair {
        Pair {
            a: func(x0) * x0,
            b: func(-x0),
        }
    }

    macro_rules! reads {
        ($name:ident $(, $engine:ident)?) => {
            #[differentiate$(($engine))?]
            pub fn $name(x0: f64, x1: f64) -> f64 {
                let p = pair_of(x0, |t: f64| (t * x1).sin());
                p.a + p.b * x1
            }
        };
    }
    reads!(reads_compiled, compiled);
    reads!(reads_tape, tape);

    #[test]
    fn its_fields_are_differentiated() {
        let (x0, x1) = (0.7, -0.4);
        let g = reads_compiled::grad(x0, x1);
        let t = reads_tape::grad(x0, x1);
        assert_close(&[g.x0, g.x1], &[t.x0, t.x1], "the tape");
        let fd = finite_difference(|p| reads_compiled(p[0], p[1]), &[x0, x1]);
        assert_close(&[g.x0, g.x1], &fd, "central differences");
    }
}
