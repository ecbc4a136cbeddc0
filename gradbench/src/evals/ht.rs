//! `ht`: hand tracking (ADBench). A skinned hand model (22 bones, each
//! vertex a weighted sum of the bones' transforms) posed by 26 parameters
//! θ: a global angle-axis rotation, a global translation and 20 finger
//! angles. The residuals are the 3N differences between measured points and
//! their corresponding model points: vertices (the "simple" case), or
//! points inside triangles with barycentric coordinates `us` (the
//! "complicated" case, whose Jacobian also has the two columns ∂/∂u of each
//! point's own coordinates first).
//!
//! The Jacobian (3N rows, 26 or 28 columns) comes from forward mode, all
//! its directions in one `jvps` call (8 per pass) of the residuals with
//! every point's u shifted by a shared `shift` (zero): one direction per θ,
//! and, in the complicated case, two along `shift[0]` and `shift[1]`. Each
//! residual depends only on its own point's u, so those two directional
//! derivatives are exactly the two packed u columns. The columns are
//! written into memory kept between runs, as the hand-written tool keeps
//! its output.

use deltad::differentiate;
use serde_json::Value;

use super::{unknown, Evaluated};
use crate::input;
use crate::protocol::{timed, Runs};

/// The model and the data (all constant).
pub struct Hand {
    pub parents: Vec<i64>,
    /// Per bone, 16 row-major entries.
    pub base_relatives: Vec<f64>,
    pub inverse_base_absolutes: Vec<f64>,
    /// Per vertex, x y z w (homogeneous; w is 1 in the eval's data).
    pub base_positions: Vec<f64>,
    /// Per vertex, one weight per bone.
    pub weights: Vec<f64>,
    pub triangles: Vec<[usize; 3]>,
    pub is_mirrored: bool,
    pub correspondences: Vec<usize>,
    /// Per measured point, x y z.
    pub points: Vec<f64>,
}

/// m · [[r, 0], [0, 1]] for a 4×4 `m` and a 3×3 `r` (row-major).
#[differentiate]
fn times_rotation(#[no_grad] m: &[f64], r: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; 16];
    for i in 0..4 {
        for j in 0..3 {
            out[4 * i + j] = m[4 * i] * r[j] + m[4 * i + 1] * r[3 + j] + m[4 * i + 2] * r[6 + j];
        }
        out[4 * i + 3] = m[4 * i + 3];
    }
    out
}

/// a · b for 4×4 row-major matrices.
#[differentiate]
fn product(a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; 16];
    for i in 0..4 {
        for j in 0..4 {
            out[4 * i + j] = a[4 * i] * b[j]
                + a[4 * i + 1] * b[4 + j]
                + a[4 * i + 2] * b[8 + j]
                + a[4 * i + 3] * b[12 + j];
        }
    }
    out
}

/// Rz(z) Ry(y) Rx(x), row-major.
#[differentiate]
fn euler(x: f64, y: f64, z: f64) -> Vec<f64> {
    let (sx, cx) = (x.sin(), x.cos());
    let (sy, cy) = (y.sin(), y.cos());
    let (sz, cz) = (z.sin(), z.cos());
    vec![
        cz * cy,
        cz * sy * sx - sz * cx,
        cz * sy * cx + sz * sx,
        sz * cy,
        sz * sy * sx + cz * cx,
        sz * sy * cx - cz * sx,
        -sy,
        cy * sx,
        cy * cx,
    ]
}

/// The rotation by the angle-axis vector `a` (the identity below an angle
/// of 1e-4), row-major.
#[differentiate]
fn angle_axis(a: &[f64]) -> Vec<f64> {
    let theta = (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt();
    if theta < 1e-4 {
        return vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0];
    }
    let (x, y, z) = (a[0] / theta, a[1] / theta, a[2] / theta);
    let (s, c) = (theta.sin(), theta.cos());
    vec![
        x * x + (1.0 - x * x) * c,
        x * y * (1.0 - c) - z * s,
        x * z * (1.0 - c) + y * s,
        x * y * (1.0 - c) + z * s,
        y * y + (1.0 - y * y) * c,
        y * z * (1.0 - c) - x * s,
        x * z * (1.0 - c) - y * s,
        z * y * (1.0 - c) + x * s,
        z * z + (1.0 - z * z) * c,
    ]
}

/// The posed model's vertices in world coordinates (x y z per vertex).
#[differentiate(compiled)]
pub fn vertices(theta: &[f64], #[no_grad] hand: &Hand) -> Vec<f64> {
    let bones = hand.parents.len();
    // The finger angles of each bone (x then z angle); bones 4f + 2,
    // 4f + 3 and 4f + 4 of finger f take θ[6 + 4f], θ[7 + 4f] (x, z of the
    // first), θ[8 + 4f] and θ[9 + 4f].
    let mut angles = vec![0.0; 2 * bones];
    for finger in 0..5 {
        let first = 4 * finger + 2;
        if first + 2 < bones {
            angles[2 * first] = theta[6 + 4 * finger];
            angles[2 * first + 1] = theta[7 + 4 * finger];
            angles[2 * (first + 1)] = theta[8 + 4 * finger];
            angles[2 * (first + 2)] = theta[9 + 4 * finger];
        }
    }
    // Each bone's absolute transform and skinning transform, 16 entries
    // each, row-major.
    let mut absolutes = vec![0.0; 16 * bones];
    let mut transforms = vec![0.0; 16 * bones];
    for bone in 0..bones {
        let rotation: Vec<f64> = euler(angles[2 * bone], 0.0, angles[2 * bone + 1]);
        let relative: Vec<f64> =
            times_rotation(&hand.base_relatives[16 * bone..16 * bone + 16], &rotation);
        let parent = hand.parents[bone];
        if parent < 0 {
            for k in 0..16 {
                absolutes[16 * bone + k] = relative[k];
            }
        } else {
            let p = parent as usize;
            let absolute: Vec<f64> = product(&absolutes[16 * p..16 * p + 16], &relative);
            for k in 0..16 {
                absolutes[16 * bone + k] = absolute[k];
            }
        }
        let transform: Vec<f64> = product(
            &absolutes[16 * bone..16 * bone + 16],
            &hand.inverse_base_absolutes[16 * bone..16 * bone + 16],
        );
        for k in 0..16 {
            transforms[16 * bone + k] = transform[k];
        }
    }
    let global = angle_axis(&theta[0..3]);
    let count = hand.base_positions.len() / 4;
    let mut world = vec![0.0; 3 * count];
    for v in 0..count {
        let base = 4 * v;
        let mut position = [0.0; 3];
        for bone in 0..bones {
            let weight = hand.weights[v * bones + bone];
            if weight != 0.0 {
                let t = 16 * bone;
                for i in 0..3 {
                    position[i] += weight
                        * (transforms[t + 4 * i] * hand.base_positions[base]
                            + transforms[t + 4 * i + 1] * hand.base_positions[base + 1]
                            + transforms[t + 4 * i + 2] * hand.base_positions[base + 2]
                            + transforms[t + 4 * i + 3] * hand.base_positions[base + 3]);
                }
            }
        }
        if hand.is_mirrored {
            position[0] = -position[0];
        }
        for i in 0..3 {
            world[3 * v + i] = global[3 * i] * position[0]
                + global[3 * i + 1] * position[1]
                + global[3 * i + 2] * position[2]
                + theta[3 + i];
        }
    }
    world
}

/// The 3N residuals: measured point minus model point (a vertex, or a
/// point of a triangle with barycentric coordinates `us`, 2 per point).
pub fn residuals(theta: &[f64], us: &[f64], hand: &Hand) -> Vec<f64> {
    shifted_residuals(theta, [0.0; 2], us, hand)
}

/// The residuals with every point's coordinates shifted by the same
/// `shift` (zero for [`residuals`]), the `us` held constant (not
/// differentiated).
/// Each residual depends only on its own point's u, so the derivatives
/// along `shift[0]` and `shift[1]` are exactly the two packed u columns:
/// with θ, 28 inputs, whose forward-mode Jacobian is the whole output.
#[differentiate]
pub fn shifted_residuals(
    theta: &[f64],
    shift: [f64; 2],
    #[no_grad] us: &[f64],
    #[no_grad] hand: &Hand,
) -> Vec<f64> {
    let world = vertices(theta, hand);
    let n = hand.correspondences.len();
    let mut errors = vec![0.0; 3 * n];
    for i in 0..n {
        let target = hand.correspondences[i];
        for j in 0..3 {
            let model = if us.is_empty() {
                world[3 * target + j]
            } else {
                let [a, b, c] = hand.triangles[target];
                let (u0, u1) = (us[2 * i] + shift[0], us[2 * i + 1] + shift[1]);
                u0 * world[3 * a + j] + u1 * world[3 * b + j] + (1.0 - u0 - u1) * world[3 * c + j]
            };
            errors[3 * i + j] = hand.points[3 * i + j] - model;
        }
    }
    errors
}

/// The memory of [`jacobian_into`]'s results and tangents, kept between
/// calls (as the hand-written tool keeps its output between runs).
#[derive(Default)]
pub struct JacobianMemory {
    columns: Vec<Vec<f64>>,
    tangents: Vec<shifted_residuals::Grad>,
}

impl JacobianMemory {
    /// The columns [`jacobian_into`] wrote last.
    pub fn columns(&self) -> &[Vec<f64>] {
        &self.columns
    }
}

/// The Jacobian by columns (26, or 28 with the two u columns first; each
/// column holds the 3N rows), the layout GradBench's hand-written tool
/// computes (column-major). [`rows`] lays it out as the eval's output.
pub fn jacobian(theta: &[f64], us: &[f64], hand: &Hand) -> Vec<Vec<f64>> {
    let mut memory = JacobianMemory::default();
    jacobian_into(theta, us, hand, &mut memory);
    memory.columns
}

/// [`jacobian`] in `memory` (its columns rewritten in the memory they
/// hold): one `jvps` call of [`shifted_residuals`] along its unit
/// directions, the two shifts first (in the complicated case), then the 26
/// angles (a chunk of 8 per forward pass).
pub fn jacobian_into(theta: &[f64], us: &[f64], hand: &Hand, memory: &mut JacobianMemory) {
    let shifts = if us.is_empty() { 0 } else { 2 };
    let count = shifts + theta.len();
    memory.tangents.resize_with(count, Default::default);
    for (k, tangent) in memory.tangents.iter_mut().enumerate() {
        let unit = |i: usize| if i == k { 1.0 } else { 0.0 };
        tangent.shift = [0, 1].map(|i| if i < shifts { unit(i) } else { 0.0 });
        tangent.theta.clear();
        tangent
            .theta
            .extend((0..theta.len()).map(|i| unit(shifts + i)));
    }
    shifted_residuals::jvps_into(
        theta,
        [0.0; 2],
        us,
        hand,
        &memory.tangents,
        &mut memory.columns,
    );
}

/// The Jacobian's rows from its columns: the eval's output encoding (as
/// the hand-written tool, this is done after the timed computation).
pub fn rows(columns: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let count = columns.first().map_or(0, Vec::len);
    (0..count)
        .map(|r| columns.iter().map(|column| column[r]).collect())
        .collect()
}

fn matrices(value: &Value, what: &str) -> input::Result<Vec<f64>> {
    let list = value
        .as_array()
        .ok_or_else(|| format!("`{what}` must be an array of 4×4 matrices"))?;
    let mut flat = Vec::with_capacity(16 * list.len());
    for (b, matrix) in list.iter().enumerate() {
        let rows = matrix.as_array().filter(|r| r.len() == 4);
        let rows = rows.ok_or_else(|| format!("`{what}[{b}]` must have 4 rows"))?;
        for row in rows {
            let row = input::numbers(row, what)?;
            input::expect_len(what, row.len(), 4)?;
            flat.extend(row);
        }
    }
    Ok(flat)
}

fn indices(value: &Value, what: &str) -> input::Result<Vec<usize>> {
    let list = value
        .as_array()
        .ok_or_else(|| format!("`{what}` must be an array of indices"))?;
    list.iter()
        .map(|v| {
            v.as_u64()
                .map(|v| v as usize)
                .ok_or_else(|| format!("`{what}` must hold indices"))
        })
        .collect()
}

impl Hand {
    pub fn parse(input: &Value) -> input::Result<(Vec<f64>, Vec<f64>, Hand)> {
        let theta = input::vector(input, "theta")?;
        input::expect_len("theta", theta.len(), 26)?;
        let us: Vec<f64> = input::rows(input, "us")?.concat();
        let data = input.get("data").ok_or("the input has no `data`")?;
        let model = data.get("model").ok_or("`data` has no `model`")?;
        let field = |name: &str| {
            model
                .get(name)
                .ok_or_else(|| format!("the model has no `{name}`"))
        };
        let parents: Vec<i64> = field("parents")?
            .as_array()
            .ok_or("`parents` must be an array")?
            .iter()
            .map(|v| v.as_i64().ok_or("`parents` must hold integers"))
            .collect::<Result<_, _>>()?;
        let bones = parents.len();
        for (bone, &parent) in parents.iter().enumerate() {
            if parent >= bone as i64 {
                return Err(format!(
                    "bone {bone}'s parent {parent} does not come before it"
                ));
            }
        }
        if bones < 22 {
            return Err(format!("the hand model must have 22 bones, not {bones}"));
        }
        let base_relatives = matrices(field("base_relatives")?, "base_relatives")?;
        let inverse_base_absolutes =
            matrices(field("inverse_base_absolutes")?, "inverse_base_absolutes")?;
        input::expect_len("base_relatives", base_relatives.len(), 16 * bones)?;
        input::expect_len(
            "inverse_base_absolutes",
            inverse_base_absolutes.len(),
            16 * bones,
        )?;
        let positions = input::rows(model, "base_positions")?;
        if positions.iter().any(|p| p.len() != 4) {
            return Err("`base_positions` must hold homogeneous points (4 numbers)".into());
        }
        let base_positions: Vec<f64> = positions.concat();
        let vertex_count = positions.len();
        let weights = input::matrix(model, "weights", vertex_count, bones)?;
        let triangle_list = model
            .get("triangles")
            .and_then(Value::as_array)
            .ok_or("the model has no `triangles`")?;
        let mut triangles = Vec::with_capacity(triangle_list.len());
        for triangle in triangle_list {
            let corners = indices(triangle, "triangles")?;
            let [a, b, c] = corners[..] else {
                return Err("`triangles` must hold triples".into());
            };
            if a.max(b).max(c) >= vertex_count {
                return Err("a triangle has a vertex out of range".into());
            }
            triangles.push([a, b, c]);
        }
        let is_mirrored = model
            .get("is_mirrored")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let correspondences = indices(
            data.get("correspondences")
                .ok_or("`data` has no `correspondences`")?,
            "correspondences",
        )?;
        let n = correspondences.len();
        let points = input::matrix(data, "points", n, 3)?;
        let limit = if us.is_empty() {
            vertex_count
        } else {
            triangles.len()
        };
        if correspondences.iter().any(|&c| c >= limit) {
            return Err("a correspondence is out of range".into());
        }
        if !us.is_empty() {
            input::expect_len("us", us.len(), 2 * n)?;
        }
        Ok((
            theta,
            us,
            Hand {
                parents,
                base_relatives,
                inverse_base_absolutes,
                base_positions,
                weights,
                triangles,
                is_mirrored,
                correspondences,
                points,
            },
        ))
    }
}

pub fn evaluate(function: &str, input: &Value) -> Evaluated {
    let (theta, us, hand) = Hand::parse(input)?;
    let runs = Runs::of(input)?;
    match function {
        "objective" => {
            let (errors, times) = timed(runs, || residuals(&theta, &us, &hand));
            Ok((Value::from(errors), times))
        }
        "jacobian" => {
            let mut memory = JacobianMemory::default();
            let ((), times) = timed(runs, || {
                jacobian_into(&theta, &us, &hand, &mut memory);
            });
            Ok((Value::from(rows(memory.columns())), times))
        }
        _ => Err(unknown("ht", function)),
    }
}
