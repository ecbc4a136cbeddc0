//! `gmm`: the log-posterior of a Gaussian mixture with a Wishart prior on
//! the precision matrices (GradBench's eval, following its C++ reference):
//! K components in D dimensions with precision factors
//! Q_k = diag(exp(q_k)) + L_k (L_k strictly lower triangular, given column by
//! column), N points:
//!
//! f = -ND/2 ln 2π + Σ_i lse_k(α_k + Σ_j q_kj - ½‖Q_k(x_i - μ_k)‖²)
//!     - N lse(α) - Σ_k (½γ²(‖exp(q_k)‖² + ‖l_k‖²) - m Σ_j q_kj) + K·C(γ, m, D)
//!
//! `jacobian` is the gradient with respect to α, μ, q and l.

use deltad::differentiate;
use serde_json::{json, Value};

use super::{unknown, Evaluated};
use crate::input;
use crate::protocol::{timed, Runs};

/// ln Γ(z) for z > 0 (Lanczos, g = 7, nine coefficients; |error| < 1e-15
/// relative), for the prior's constant.
pub fn ln_gamma(z: f64) -> f64 {
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if z < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * z).sin()).ln() - ln_gamma(1.0 - z);
    }
    let z = z - 1.0;
    let mut series = COEFFICIENTS[0];
    for (i, c) in COEFFICIENTS.iter().enumerate().skip(1) {
        series += c / (z + i as f64);
    }
    let t = z + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (z + 0.5) * t.ln() - t + series.ln()
}

/// The constants of the objective: -ND/2 ln 2π + K·C(γ, m, D), where C is
/// the Wishart normaliser (ln of the multivariate gamma function included).
pub fn constant_terms(d: usize, k: usize, n: usize, gamma: f64, m: usize) -> f64 {
    let dof = (d + m + 1) as f64;
    let df = d as f64;
    let ln_multigamma = 0.25 * df * (df - 1.0) * std::f64::consts::PI.ln()
        + (1..=d)
            .map(|j| ln_gamma(0.5 * dof + (1.0 - j as f64) / 2.0))
            .sum::<f64>();
    let c = dof * df * (gamma.ln() - 0.5 * 2f64.ln()) - ln_multigamma;
    -(n as f64) * df * 0.5 * (2.0 * std::f64::consts::PI).ln() + k as f64 * c
}

/// The objective, written the way GradBench's C++ reference computes it
/// (with deltad's log-sum-exp primitive for its `logsumexp` helper); the
/// loop over points carries the attributes given.
macro_rules! gmm_objective {
    ($name:ident $(($engine:ident))? $(#[$point_loop:meta])*) => {
        #[differentiate$(($engine))?]
        #[allow(clippy::too_many_arguments)]
        pub fn $name(
            alpha: &[f64],
            mu: &[f64],
            q: &[f64],
            l: &[f64],
            #[no_grad] x: &[f64],
            #[no_grad] gamma: f64,
            m: usize,
            d: usize,
        ) -> f64 {
            let k = alpha.len();
            let n = x.len() / d;
            let l_size = d * (d - 1) / 2;
            let mut q_diag = vec![0.0; d * k];
            let mut sum_q = vec![0.0; k];
            for c in 0..k {
                let mut s = 0.0;
                for j in 0..d {
                    q_diag[c * d + j] = q[c * d + j].exp();
                    s += q[c * d + j];
                }
                sum_q[c] = s;
            }
            let mut centered = vec![0.0; d];
            let mut transformed = vec![0.0; d];
            let mut main_term = vec![0.0; k];
            let mut total = 0.0;
            $(#[$point_loop])*
            for i in 0..n {
                for c in 0..k {
                    for j in 0..d {
                        centered[j] = x[i * d + j] - mu[c * d + j];
                        transformed[j] = q_diag[c * d + j] * centered[j];
                    }
                    let mut index = c * l_size;
                    for a in 0..d {
                        for b in a + 1..d {
                            transformed[b] += l[index] * centered[a];
                            index += 1;
                        }
                    }
                    let mut squares = 0.0;
                    for j in 0..d {
                        squares += transformed[j] * transformed[j];
                    }
                    main_term[c] = alpha[c] + sum_q[c] - 0.5 * squares;
                }
                total += deltad::log_sum_exp(&main_term);
            }
            let mut prior = 0.0;
            for c in 0..k {
                let mut frobenius = 0.0;
                for j in 0..d {
                    frobenius += q_diag[c * d + j] * q_diag[c * d + j];
                }
                for j in 0..l_size {
                    frobenius += l[c * l_size + j] * l[c * l_size + j];
                }
                prior += 0.5 * gamma * gamma * frobenius - m as f64 * sum_q[c];
            }
            let constant = constant_terms(d, k, n, gamma, m);
            constant + total - n as f64 * deltad::log_sum_exp(alpha) - prior
        }
    };
}

gmm_objective!(objective #[preaccumulate]);
// The same function without `#[preaccumulate]`, and on the tape (the engine
// before the compiled path), which the benchmark suite compares with.
gmm_objective!(objective_plain_loops);
gmm_objective!(objective_tape (tape) #[preaccumulate]);

/// The parameters and data of one evaluation (matrices flattened row by row).
pub struct Gmm {
    pub d: usize,
    pub k: usize,
    pub alpha: Vec<f64>,
    pub mu: Vec<f64>,
    pub q: Vec<f64>,
    pub l: Vec<f64>,
    pub x: Vec<f64>,
    pub gamma: f64,
    pub m: usize,
}

impl Gmm {
    pub fn parse(input: &Value) -> input::Result<Gmm> {
        let (d, k, n) = (
            input::count(input, "d")?,
            input::count(input, "k")?,
            input::count(input, "n")?,
        );
        if d == 0 || k == 0 || n == 0 {
            return Err("`d`, `k` and `n` must be positive".into());
        }
        let alpha = input::vector(input, "alpha")?;
        input::expect_len("alpha", alpha.len(), k)?;
        Ok(Gmm {
            d,
            k,
            alpha,
            mu: input::matrix(input, "mu", k, d)?,
            q: input::matrix(input, "q", k, d)?,
            l: input::matrix(input, "l", k, d * (d - 1) / 2)?,
            x: input::matrix(input, "x", n, d)?,
            gamma: input::number(input, "gamma")?,
            m: input::count(input, "m")?,
        })
    }

    pub fn objective(&self) -> f64 {
        objective(
            &self.alpha,
            &self.mu,
            &self.q,
            &self.l,
            &self.x,
            self.gamma,
            self.m,
            self.d,
        )
    }

    pub fn gradient(&self) -> objective::Grad {
        objective::grad(
            &self.alpha,
            &self.mu,
            &self.q,
            &self.l,
            &self.x,
            self.gamma,
            self.m,
            self.d,
        )
    }
}

pub fn evaluate(function: &str, input: &Value) -> Evaluated {
    let gmm = Gmm::parse(input)?;
    let runs = Runs::of(input)?;
    match function {
        "objective" => {
            let (value, times) = timed(runs, || gmm.objective());
            Ok((Value::from(value), times))
        }
        "jacobian" => {
            let (g, times) = timed(runs, || gmm.gradient());
            let (d, tri) = (gmm.d, gmm.d * (gmm.d - 1) / 2);
            let output = json!({
                "alpha": g.alpha,
                "mu": input::to_rows(&g.mu, d),
                "q": input::to_rows(&g.q, d),
                "l": input::to_rows(&g.l, tri),
            });
            Ok((output, times))
        }
        _ => Err(unknown("gmm", function)),
    }
}
