//! `ba`: bundle adjustment (ADBench). A camera has 11 parameters: an
//! angle-axis rotation r (3), a centre C (3), a focal length f, a principal
//! point (2) and radial distortion k1, k2. Observation i of point X by a
//! camera, weighted by w_i, has the residuals w_i·(proj(cam, X) - feat_i)
//! (2) and 1 - w_i² (1). The eval sends one camera, point, weight and
//! feature and the counts n, m, p: observation i uses camera i mod n and
//! point i mod m. All p observations are computed; the Jacobian (3p rows,
//! 11n + 3m + p columns, CSR) is sent as its first 30 and last entries.

use deltad::differentiate;
use serde_json::{json, Value};

use super::{unknown, Evaluated};
use crate::input;
use crate::protocol::{timed, Runs};

/// `x` rotated by the angle-axis vector `r` (Rodrigues' formula; the
/// first-order formula at r = 0).
#[differentiate]
pub fn rotate(r: &[f64; 3], x: &[f64; 3]) -> [f64; 3] {
    let theta_squared = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
    if theta_squared != 0.0 {
        let theta = theta_squared.sqrt();
        let (cos, sin) = (theta.cos(), theta.sin());
        let w = [r[0] / theta, r[1] / theta, r[2] / theta];
        let w_cross_x = [
            w[1] * x[2] - w[2] * x[1],
            w[2] * x[0] - w[0] * x[2],
            w[0] * x[1] - w[1] * x[0],
        ];
        let w_dot_x = w[0] * x[0] + w[1] * x[1] + w[2] * x[2];
        let tmp = w_dot_x * (1.0 - cos);
        [
            x[0] * cos + w_cross_x[0] * sin + w[0] * tmp,
            x[1] * cos + w_cross_x[1] * sin + w[1] * tmp,
            x[2] * cos + w_cross_x[2] * sin + w[2] * tmp,
        ]
    } else {
        [
            x[0] + r[1] * x[2] - r[2] * x[1],
            x[1] + r[2] * x[0] - r[0] * x[2],
            x[2] + r[0] * x[1] - r[1] * x[0],
        ]
    }
}

/// The weighted reprojection error of point `x` seen by `cam` at `feat`.
#[differentiate]
pub fn reprojection(cam: &[f64; 11], x: &[f64; 3], w: f64, #[no_grad] feat: &[f64; 2]) -> [f64; 2] {
    let centred = [x[0] - cam[3], x[1] - cam[4], x[2] - cam[5]];
    let rotated = rotate(&[cam[0], cam[1], cam[2]], &centred);
    let (px, py) = (rotated[0] / rotated[2], rotated[1] / rotated[2]);
    let radius_squared = px * px + py * py;
    let distortion = 1.0 + cam[9] * radius_squared + cam[10] * radius_squared * radius_squared;
    let projected_x = cam[6] * distortion * px + cam[7];
    let projected_y = cam[6] * distortion * py + cam[8];
    [w * (projected_x - feat[0]), w * (projected_y - feat[1])]
}

/// The weight error 1 - w².
#[differentiate]
pub fn weight_error(w: f64) -> f64 {
    1.0 - w * w
}

struct Problem {
    n: usize,
    m: usize,
    p: usize,
    cams: Vec<[f64; 11]>,
    points: Vec<[f64; 3]>,
    weights: Vec<f64>,
    features: Vec<[f64; 2]>,
}

impl Problem {
    fn parse(input: &Value) -> input::Result<Problem> {
        let (n, m, p) = (
            input::count(input, "n")?,
            input::count(input, "m")?,
            input::count(input, "p")?,
        );
        if n == 0 || m == 0 || p == 0 {
            return Err("`n`, `m` and `p` must be positive".into());
        }
        let largest_index = (31usize.saturating_mul(p)).max(
            11usize
                .saturating_mul(n)
                .saturating_add(3usize.saturating_mul(m))
                .saturating_add(p),
        );
        if u32::try_from(largest_index).is_err() {
            return Err("`n`, `m` and `p` are too large for 32-bit Jacobian indices".into());
        }
        let cam: [f64; 11] = input::vector(input, "cam")?
            .try_into()
            .map_err(|_| "`cam` must have 11 entries".to_string())?;
        let x: [f64; 3] = input::vector(input, "x")?
            .try_into()
            .map_err(|_| "`x` must have 3 entries".to_string())?;
        let feat: [f64; 2] = input::vector(input, "feat")?
            .try_into()
            .map_err(|_| "`feat` must have 2 entries".to_string())?;
        let w = input::number(input, "w")?;
        // The data the eval describes: every camera, point, weight and
        // feature a copy of the one sent.
        Ok(Problem {
            n,
            m,
            p,
            cams: vec![cam; n],
            points: vec![x; m],
            weights: vec![w; p],
            features: vec![feat; p],
        })
    }

    /// Every residual: 2p reprojection errors, then p weight errors.
    fn objective(&self) -> (Vec<f64>, Vec<f64>) {
        let mut reprojection_errors = Vec::with_capacity(2 * self.p);
        let mut weight_errors = Vec::with_capacity(self.p);
        for i in 0..self.p {
            let (cam, point) = (&self.cams[i % self.n], &self.points[i % self.m]);
            reprojection_errors.extend(reprojection(
                cam,
                point,
                self.weights[i],
                &self.features[i],
            ));
            weight_errors.push(weight_error(self.weights[i]));
        }
        (reprojection_errors, weight_errors)
    }

    /// The Jacobian in compressed sparse rows: (row starts, columns, values),
    /// with 32-bit indices as the reference implementation's (`parse` checks
    /// that they fit).
    fn jacobian(&self) -> (Vec<u32>, Vec<u32>, Vec<f64>) {
        let (n, m, p) = (self.n, self.m, self.p);
        let mut rows = Vec::with_capacity(3 * p + 1);
        let mut cols = Vec::with_capacity(31 * p);
        let mut vals = Vec::with_capacity(31 * p);
        let index = |i: usize| i as u32;
        rows.push(0);
        for i in 0..p {
            let (camera, point) = (i % n, i % m);
            let (_, derivatives) = reprojection::jacobian(
                &self.cams[camera],
                &self.points[point],
                self.weights[i],
                &self.features[i],
            );
            for row in &derivatives {
                cols.extend((0..11).map(|k| index(11 * camera + k)));
                vals.extend(row.cam);
                cols.extend((0..3).map(|k| index(11 * n + 3 * point + k)));
                vals.extend(row.x);
                cols.push(index(11 * n + 3 * m + i));
                vals.push(row.w);
                rows.push(index(cols.len()));
            }
        }
        for i in 0..p {
            cols.push(index(11 * n + 3 * m + i));
            vals.push(weight_error::grad(self.weights[i]).w);
            rows.push(index(cols.len()));
        }
        (rows, cols, vals)
    }
}

/// The first 30 entries and the last one.
fn sample<T: Copy>(full: &[T]) -> Vec<T> {
    let mut sample: Vec<T> = full.iter().take(30).copied().collect();
    sample.extend(full.last());
    sample
}

pub fn evaluate(function: &str, input: &Value) -> Evaluated {
    let problem = Problem::parse(input)?;
    let runs = Runs::of(input)?;
    match function {
        "objective" => {
            let ((reprojection_errors, weight_errors), times) = timed(runs, || problem.objective());
            let output = json!({
                "reproj_error": {"elements": reprojection_errors[..2], "repeated": problem.p},
                "w_err": {"element": weight_errors[0], "repeated": problem.p},
            });
            Ok((output, times))
        }
        "jacobian" => {
            let ((rows, cols, vals), times) = timed(runs, || problem.jacobian());
            let output =
                json!({"rows": sample(&rows), "cols": sample(&cols), "vals": sample(&vals)});
            Ok((output, times))
        }
        _ => Err(unknown("ba", function)),
    }
}
