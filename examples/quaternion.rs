//! The paper's Fig. 12 (Krawiec et al., "Provably correct, asymptotically
//! efficient, higher-order reverse-mode automatic differentiation", POPL
//! 2022): rotating a vector by a quaternion, written with user structs and
//! helper functions that are themselves differentiated. Prints the Delta
//! bindings deltad records for e = λ q v. (rotate_vec_by_quat v q).x at the
//! paper's q₀ = (1.1, 2.2, 3.3, 4.4), v₀ = (5.5, 6.6, 7.7), then the seven
//! derivatives next to the hand-derived ones.
//!
//! The paper's Delta for this run has 40 `Let`s; deltad's is shorter
//! because each helper's arithmetic is fused into one binding per real it
//! returns (paper §8.7). The adjoints printed with each binding are the
//! reverse sweep's values: those of the seven inputs are the derivatives.
//!
//! Run with `cargo run --release --example quaternion`.

use deltad::{differentiate, Differentiable};

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
fn q_to_vec(q: &Quaternion) -> Vec3 {
    Vec3 {
        x: q.x,
        y: q.y,
        z: q.z,
    }
}

#[differentiate]
fn dot(p: &Vec3, q: &Vec3) -> f64 {
    p.x * q.x + p.y * q.y + p.z * q.z
}

#[differentiate]
fn add(p: &Vec3, q: &Vec3) -> Vec3 {
    Vec3 {
        x: p.x + q.x,
        y: p.y + q.y,
        z: p.z + q.z,
    }
}

#[differentiate]
fn scale(k: f64, v: &Vec3) -> Vec3 {
    Vec3 {
        x: k * v.x,
        y: k * v.y,
        z: k * v.z,
    }
}

#[differentiate]
fn cross(a: &Vec3, b: &Vec3) -> Vec3 {
    Vec3 {
        x: a.y * b.z - a.z * b.y,
        y: a.z * b.x - a.x * b.z,
        z: a.x * b.y - a.y * b.x,
    }
}

/// As in the paper: u = vec(q), s = q.w,
/// r = 2(u·v) u + (s² - u·u) v + 2s (u × v).
#[differentiate]
fn rotate_vec_by_quat(v: &Vec3, q: &Quaternion) -> Vec3 {
    let u = q_to_vec(q);
    let s = q.w;
    add(
        &add(&scale(2.0 * dot(&u, v), &u), &scale(s * s - dot(&u, &u), v)),
        &scale(2.0 * s, &cross(&u, v)),
    )
}

/// The paper's e = λ q v. (rotate_vec_by_quat v q).x
#[differentiate]
fn rotated_x(q: &Quaternion, v: &Vec3) -> f64 {
    rotate_vec_by_quat(v, q).x
}

/// The seven derivatives of r.x, derived by hand from
/// r.x = 2(u·v)u_x + (s² - |u|²)v_x + 2s(u_y v_z - u_z v_y).
fn hand_derivatives(q: &Quaternion, v: &Vec3) -> [f64; 7] {
    let (ux, uy, uz, s) = (q.x, q.y, q.z, q.w);
    let uv = ux * v.x + uy * v.y + uz * v.z;
    let uu = ux * ux + uy * uy + uz * uz;
    [
        2.0 * uv,
        2.0 * v.y * ux - 2.0 * uy * v.x + 2.0 * s * v.z,
        2.0 * v.z * ux - 2.0 * uz * v.x - 2.0 * s * v.y,
        2.0 * s * v.x + 2.0 * (uy * v.z - uz * v.y),
        2.0 * ux * ux + (s * s - uu),
        2.0 * uy * ux - 2.0 * s * uz,
        2.0 * uz * ux + 2.0 * s * uy,
    ]
}

fn main() {
    let q0 = Quaternion {
        x: 1.1,
        y: 2.2,
        z: 3.3,
        w: 4.4,
    };
    let v0 = Vec3 {
        x: 5.5,
        y: 6.6,
        z: 7.7,
    };

    // The recorded bindings (q[0..4] are qx qy qz qw, v[0..3] are vx vy vz).
    let graph = rotated_x::tape_graph(&q0, &v0);
    println!("{graph}");

    let (value, g) = rotated_x::value_and_grad(&q0, &v0);
    let computed = [g.q.x, g.q.y, g.q.z, g.q.w, g.v.x, g.v.y, g.v.z];
    let hand = hand_derivatives(&q0, &v0);
    let from_graph: Vec<f64> = graph
        .inputs()
        .map(|n| n.adjoint.unwrap_or(f64::NAN))
        .collect();
    println!("e(q₀, v₀) = {value}\n");
    println!(
        "{:>6}  {:>12}  {:>12}  {:>14}",
        "input", "deltad", "by hand", "graph adjoint"
    );
    let names = ["qx", "qy", "qz", "qw", "vx", "vy", "vz"];
    for i in 0..7 {
        println!(
            "{:>6}  {:>12.6}  {:>12.6}  {:>14.6}",
            names[i], computed[i], hand[i], from_graph[i]
        );
        let scale = hand[i].abs().max(1.0);
        assert!(
            (computed[i] - hand[i]).abs() <= 1e-12 * scale,
            "∂e/∂{} differs from the hand-derived value",
            names[i]
        );
        assert_eq!(computed[i], from_graph[i]);
    }
    println!(
        "\nThe paper's Delta for this run has 40 `Let`s after the 7 inputs (two of them \
         `Zero`); deltad recorded {} bindings after its {}.",
        graph.len() - graph.inputs().count(),
        graph.inputs().count()
    );
}
