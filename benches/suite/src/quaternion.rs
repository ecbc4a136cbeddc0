//! The quaternion rotation of seed 004 Fig. 12, batched: the gradient of
//! Σ_i rotate(v_i, q_i) · w with respect to every q_i and v_i (7 reals per
//! sample), written with user structs and differentiated helper functions.

use ad_trait::reverse_ad::adr::adr;
use ad_trait::AD;
use deltad::{differentiate, Differentiable};
use num_dual::DualSVec64;

#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Vec3 {
    pub x: f64,
    pub y: f64,
    pub z: f64,
}

#[derive(Differentiable, Clone, Copy, Debug, PartialEq)]
pub struct Quaternion {
    pub x: f64,
    pub y: f64,
    pub z: f64,
    pub w: f64,
}

#[differentiate]
pub fn rotate(v: &Vec3, q: &Quaternion) -> Vec3 {
    let (ux, uy, uz, s) = (q.x, q.y, q.z, q.w);
    let uv: f64 = ux * v.x + uy * v.y + uz * v.z;
    let uu: f64 = ux * ux + uy * uy + uz * uz;
    let a: f64 = 2.0 * uv;
    let b: f64 = s * s - uu;
    let c: f64 = 2.0 * s;
    Vec3 {
        x: a * ux + b * v.x + c * (uy * v.z - uz * v.y),
        y: a * uy + b * v.y + c * (uz * v.x - ux * v.z),
        z: a * uz + b * v.z + c * (ux * v.y - uy * v.x),
    }
}

#[differentiate]
pub fn batch(qs: &[Quaternion], vs: &[Vec3], #[no_grad] w: &Vec3) -> f64 {
    let mut total = 0.0;
    for i in 0..qs.len() {
        let r = rotate(&vs[i], &qs[i]);
        total += r.x * w.x + r.y * w.y + r.z * w.z;
    }
    total
}

/// The same batch on the tape.
#[differentiate(tape)]
pub fn batch_tape(qs: &[Quaternion], vs: &[Vec3], #[no_grad] w: &Vec3) -> f64 {
    let mut total = 0.0;
    for i in 0..qs.len() {
        let r = rotate(&vs[i], &qs[i]);
        total += r.x * w.x + r.y * w.y + r.z * w.z;
    }
    total
}

/// The gradient by hand: with u = vec(q), s = q.w and
/// f = r · w = 2(u·v)(u·w) + (s² - u·u)(v·w) + 2s u·(v × w),
/// ∂f/∂u = 2(u·w)v + 2(u·v)w - 2(v·w)u + 2s(v × w),
/// ∂f/∂s = 2s(v·w) + 2u·(v × w),
/// ∂f/∂v = 2(u·w)u + (s² - u·u)w + 2s(w × u).
pub fn hand(qs: &[Quaternion], vs: &[Vec3], w: &Vec3) -> (f64, Vec<Quaternion>, Vec<Vec3>) {
    let mut total = 0.0;
    let mut gq = Vec::with_capacity(qs.len());
    let mut gv = Vec::with_capacity(vs.len());
    for (q, v) in qs.iter().zip(vs) {
        let (ux, uy, uz, s) = (q.x, q.y, q.z, q.w);
        let uv = ux * v.x + uy * v.y + uz * v.z;
        let uw = ux * w.x + uy * w.y + uz * w.z;
        let vw = v.x * w.x + v.y * w.y + v.z * w.z;
        let uu = ux * ux + uy * uy + uz * uz;
        let vxw = [
            v.y * w.z - v.z * w.y,
            v.z * w.x - v.x * w.z,
            v.x * w.y - v.y * w.x,
        ];
        let wxu = [
            w.y * uz - w.z * uy,
            w.z * ux - w.x * uz,
            w.x * uy - w.y * ux,
        ];
        let triple = ux * vxw[0] + uy * vxw[1] + uz * vxw[2];
        total += 2.0 * uv * uw + (s * s - uu) * vw + 2.0 * s * triple;
        let u = [ux, uy, uz];
        let vv = [v.x, v.y, v.z];
        let ww = [w.x, w.y, w.z];
        let du: [f64; 3] = core::array::from_fn(|k| {
            2.0 * uw * vv[k] + 2.0 * uv * ww[k] - 2.0 * vw * u[k] + 2.0 * s * vxw[k]
        });
        gq.push(Quaternion {
            x: du[0],
            y: du[1],
            z: du[2],
            w: 2.0 * s * vw + 2.0 * triple,
        });
        let dv: [f64; 3] =
            core::array::from_fn(|k| 2.0 * uw * u[k] + (s * s - uu) * ww[k] + 2.0 * s * wxu[k]);
        gv.push(Vec3 {
            x: dv[0],
            y: dv[1],
            z: dv[2],
        });
    }
    (total, gq, gv)
}

/// The rotation on any number type with the operations it needs.
macro_rules! rotate_dot {
    ($q:expr, $v:expr, $w:expr, $two:expr) => {{
        let (ux, uy, uz, s) = $q;
        let (vx, vy, vz) = $v;
        let (wx, wy, wz) = $w;
        let uv = ux * vx + uy * vy + uz * vz;
        let uu = ux * ux + uy * uy + uz * uz;
        let a = $two * uv;
        let b = s * s - uu;
        let c = $two * s;
        let rx = a * ux + b * vx + c * (uy * vz - uz * vy);
        let ry = a * uy + b * vy + c * (uz * vx - ux * vz);
        let rz = a * uz + b * vz + c * (ux * vy - uy * vx);
        rx * wx + ry * wy + rz * wz
    }};
}

pub fn with_reverse(qs: &[Quaternion], vs: &[Vec3], w: &Vec3) -> Vec<f64> {
    use reverse::Gradient;
    let tape = reverse::Tape::new();
    let mut vars = Vec::with_capacity(qs.len() * 7);
    let mut total = tape.add_var(0.0) * 0.0;
    for (q, v) in qs.iter().zip(vs) {
        let x = tape.add_vars(&[q.x, q.y, q.z, q.w, v.x, v.y, v.z]);
        let term = rotate_dot!(
            (x[0], x[1], x[2], x[3]),
            (x[4], x[5], x[6]),
            (w.x, w.y, w.z),
            2.0
        );
        total = total + term;
        vars.extend(x);
    }
    total.grad().wrt(&vars)
}

pub fn with_ad_trait(qs: &[Quaternion], vs: &[Vec3], w: &Vec3) -> Vec<f64> {
    let c = adr::constant;
    let mut vars = Vec::with_capacity(qs.len() * 7);
    let mut total = c(0.0);
    for (i, (q, v)) in qs.iter().zip(vs).enumerate() {
        let x: Vec<adr> = [q.x, q.y, q.z, q.w, v.x, v.y, v.z]
            .iter()
            .enumerate()
            .map(|(j, &value)| adr::new_variable(value, i == 0 && j == 0))
            .collect();
        if i == 0 {
            total = c(0.0);
        }
        let term = rotate_dot!(
            (x[0], x[1], x[2], x[3]),
            (x[4], x[5], x[6]),
            (c(w.x), c(w.y), c(w.z)),
            c(2.0)
        );
        total = total + term;
        vars.extend(x);
    }
    let grad = total.get_backwards_mode_grad();
    vars.iter().map(|v| grad.wrt(v)).collect()
}

/// Forward mode with the 7 directions of one sample at once (the terms are
/// independent, so each sample's gradient is one 7-direction pass).
pub fn with_num_dual(qs: &[Quaternion], vs: &[Vec3], w: &Vec3) -> Vec<f64> {
    let mut gradient = Vec::with_capacity(qs.len() * 7);
    for (q, v) in qs.iter().zip(vs) {
        let x: Vec<DualSVec64<7>> = [q.x, q.y, q.z, q.w, v.x, v.y, v.z]
            .iter()
            .enumerate()
            .map(|(j, &value)| DualSVec64::<7>::from_re(value).derivative(j))
            .collect();
        let two = DualSVec64::<7>::from_re(2.0);
        let term = rotate_dot!(
            (x[0], x[1], x[2], x[3]),
            (x[4], x[5], x[6]),
            (w.x, w.y, w.z),
            two
        );
        let eps = term.eps.unwrap_generic(nalgebra::Const::<7>, nalgebra::U1);
        gradient.extend(eps.iter().copied());
    }
    gradient
}

/// `n` samples from a fixed pseudo-random sequence.
pub fn input(n: usize) -> (Vec<Quaternion>, Vec<Vec3>, Vec3) {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let qs = (0..n)
        .map(|_| Quaternion {
            x: next(),
            y: next(),
            z: next(),
            w: next(),
        })
        .collect();
    let vs = (0..n)
        .map(|_| Vec3 {
            x: next(),
            y: next(),
            z: next(),
        })
        .collect();
    (
        qs,
        vs,
        Vec3 {
            x: 0.3,
            y: -0.5,
            z: 0.8,
        },
    )
}

fn flatten(gq: &[Quaternion], gv: &[Vec3]) -> Vec<f64> {
    gq.iter()
        .zip(gv)
        .flat_map(|(q, v)| [q.x, q.y, q.z, q.w, v.x, v.y, v.z])
        .collect()
}

pub fn check() {
    let (qs, vs, w) = input(100);
    let (value, gq, gv) = hand(&qs, &vs, &w);
    let expected = flatten(&gq, &gv);
    let (deltad_value, g) = batch::value_and_grad(&qs, &vs, &w);
    assert!((deltad_value - value).abs() <= 1e-12 * value.abs().max(1.0));
    crate::assert_gradient(
        "quaternion deltad",
        &flatten(&g.qs, &g.vs),
        &expected,
        1e-12,
    );
    let g_tape = batch_tape::grad(&qs, &vs, &w);
    crate::assert_gradient(
        "quaternion deltad-tape",
        &flatten(&g_tape.qs, &g_tape.vs),
        &expected,
        1e-12,
    );
    crate::assert_gradient(
        "quaternion reverse",
        &with_reverse(&qs, &vs, &w),
        &expected,
        1e-12,
    );
    crate::assert_gradient(
        "quaternion ad_trait",
        &with_ad_trait(&qs, &vs, &w),
        &expected,
        1e-12,
    );
    crate::assert_gradient(
        "quaternion num-dual",
        &with_num_dual(&qs, &vs, &w),
        &expected,
        1e-12,
    );
}
