//! `kmeans`: the k-means cost Σ_i min_j ‖c_j - p_i‖² and the Newton
//! direction J ⊘ H for the centroids, where H is the Hessian's diagonal.
//! The cost's Hessian with respect to the centroids is diagonal (each
//! coordinate of a centroid appears only in its own squared distances), so
//! its diagonal is H·1: one Hessian-vector product with the all-ones vector.

use deltad::differentiate;
use serde_json::Value;

use super::{unknown, Evaluated};
use crate::input;
use crate::protocol::{timed, Runs};

/// Σ over points of the squared distance to the nearest centroid (ties go
/// to the first). `centroids` and `points` are row-major with `d` columns.
#[differentiate]
pub fn cost(centroids: &[f64], #[no_grad] points: &[f64], d: usize) -> f64 {
    let k = centroids.len() / d;
    let n = points.len() / d;
    let mut total = 0.0;
    #[preaccumulate]
    for i in 0..n {
        let mut best = f64::INFINITY;
        for j in 0..k {
            let mut distance = 0.0;
            for c in 0..d {
                let difference = points[i * d + c] - centroids[j * d + c];
                distance += difference * difference;
            }
            if distance < best {
                best = distance;
            }
        }
        total += best;
    }
    total
}

/// The Newton direction J ⊘ diag(H), row-major like the centroids: the
/// gradient and H·1 from one forward-over-reverse pass.
pub fn direction(centroids: &[f64], points: &[f64], d: usize) -> Vec<f64> {
    let ones = cost::Grad {
        centroids: vec![1.0; centroids.len()],
    };
    let (gradient, diagonal) = cost::grad_and_hvp(centroids, points, d, &ones);
    gradient
        .centroids
        .iter()
        .zip(&diagonal.centroids)
        .map(|(g, h)| g / h)
        .collect()
}

pub fn evaluate(function: &str, input: &Value) -> Evaluated {
    let points = input::rows(input, "points")?;
    let centroids = input::rows(input, "centroids")?;
    let d = points.first().map_or(0, Vec::len);
    if d == 0 || centroids.is_empty() {
        return Err("`points` and `centroids` must be non-empty".into());
    }
    let points = input::matrix(input, "points", points.len(), d)?;
    let centroids = input::matrix(input, "centroids", centroids.len(), d)?;
    let runs = Runs::of(input)?;
    match function {
        "cost" => {
            let (value, times) = timed(runs, || cost(&centroids, &points, d));
            Ok((Value::from(value), times))
        }
        "dir" => {
            let (dir, times) = timed(runs, || direction(&centroids, &points, d));
            Ok((input::to_rows(&dir, d), times))
        }
        _ => Err(unknown("kmeans", function)),
    }
}
