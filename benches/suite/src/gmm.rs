//! The GMM log-posterior of GradBench's `gmm` eval (ADBench §4.1 with
//! GradBench's fixes): K Gaussian components in D dimensions with precision
//! factors Q_k = diag(exp(q_k)) + L_k (L_k strictly lower triangular, stored
//! column by column), N data points, and a Wishart prior:
//!
//! f = -ND/2 ln 2π + Σ_i lse_k(α_k + Σ_j q_kj - ½‖Q_k(x_i - μ_k)‖²)
//!     - N lse(α) - Σ_k (½γ²(‖exp(q_k)‖² + ‖l_k‖²) - m Σ_j q_kj) + K·C(γ, m, D)

use ad_trait::reverse_ad::adr::adr;
use ad_trait::AD;
use num_dual::{Dual64, DualNum};

/// One problem: the parameters (differentiated) and the data, as the
/// GradBench tool holds them.
pub use deltad_gradbench::evals::gmm::Gmm as Problem;

/// The gradient, in the layout of the parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Gradient {
    pub alpha: Vec<f64>,
    pub mu: Vec<f64>,
    pub q: Vec<f64>,
    pub l: Vec<f64>,
}

impl Gradient {
    fn zeros(p: &Problem) -> Self {
        Gradient {
            alpha: vec![0.0; p.alpha.len()],
            mu: vec![0.0; p.mu.len()],
            q: vec![0.0; p.q.len()],
            l: vec![0.0; p.l.len()],
        }
    }

    pub fn flat(&self) -> Vec<f64> {
        [&self.alpha[..], &self.mu, &self.q, &self.l].concat()
    }
}

/// Deterministic data: a fixed pseudo-random sequence, parameters of the
/// scale ADBench's generator uses.
pub fn problem(d: usize, k: usize, n: usize) -> Problem {
    let mut state = 0x2545_f491_4f6c_dd1d_u64 ^ ((d as u64) << 32 | k as u64);
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let mut draw =
        |count: usize, scale: f64| -> Vec<f64> { (0..count).map(|_| scale * next()).collect() };
    Problem {
        d,
        k,
        alpha: draw(k, 1.0),
        mu: draw(k * d, 1.0),
        q: draw(k * d, 0.5),
        l: draw(k * d * (d - 1) / 2, 0.5),
        x: draw(n * d, 1.0),
        gamma: 1.0,
        m: 0,
    }
}

pub use deltad_gradbench::evals::gmm::{
    constant_terms, objective, objective_plain_loops, objective_tape,
};

pub fn deltad_gradient(p: &Problem) -> (f64, Gradient) {
    let (value, g) =
        objective::value_and_grad(&p.alpha, &p.mu, &p.q, &p.l, &p.x, p.gamma, p.m, p.d);
    (
        value,
        Gradient {
            alpha: g.alpha,
            mu: g.mu,
            q: g.q,
            l: g.l,
        },
    )
}

/// deltad on the tape (with `#[preaccumulate]`, the tape's fastest form).
pub fn deltad_tape_gradient(p: &Problem) -> (f64, Gradient) {
    let (value, g) =
        objective_tape::value_and_grad(&p.alpha, &p.mu, &p.q, &p.l, &p.x, p.gamma, p.m, p.d);
    (
        value,
        Gradient {
            alpha: g.alpha,
            mu: g.mu,
            q: g.q,
            l: g.l,
        },
    )
}

/// deltad on the function without `#[preaccumulate]`.
pub fn deltad_plain_loops_gradient(p: &Problem) -> (f64, Gradient) {
    let (value, g) =
        objective_plain_loops::value_and_grad(&p.alpha, &p.mu, &p.q, &p.l, &p.x, p.gamma, p.m, p.d);
    (
        value,
        Gradient {
            alpha: g.alpha,
            mu: g.mu,
            q: g.q,
            l: g.l,
        },
    )
}

/// Primal floating-point operations of one objective evaluation, counted
/// from the code as written (each +, -, *, /, exp, ln once).
pub fn primal_flops(d: usize, k: usize, n: usize) -> usize {
    let per_component = 2 * d + d * (d - 1) + 2 * d + 3;
    let per_point = k * per_component + 3 * k + 2;
    let prior = k * (2 * d + d * (d - 1) / 2 * 2 + 5);
    n * per_point + prior + 3 * k + 8 * d * k
}

pub fn primal(p: &Problem) -> f64 {
    objective(&p.alpha, &p.mu, &p.q, &p.l, &p.x, p.gamma, p.m, p.d)
}

/// The adjoint by hand. Per point i and component c, with z = x_i - μ_c and
/// t = Q_c z, the main term is s_c = α_c + Σq_c - ½‖t‖² and ∂f/∂s_c is the
/// softmax weight w_c of the point's terms; then
/// ∂s/∂q_cj = 1 - t_j z_j e^(q_cj), ∂s/∂L_ba = -t_b z_a (b > a),
/// ∂s/∂μ_c = Q_cᵀ t. The prior adds -(γ² e^(2q) - m) and -γ² l; the
/// normaliser adds -N softmax(α).
pub fn hand(p: &Problem) -> (f64, Gradient) {
    let (d, k) = (p.d, p.k);
    let n = p.x.len() / d;
    let l_size = d * (d - 1) / 2;
    let mut g = Gradient::zeros(p);
    let q_diag: Vec<f64> = p.q.iter().map(|q| q.exp()).collect();
    let sum_q: Vec<f64> = p.q.chunks(d).map(|q| q.iter().sum()).collect();
    let mut centered = vec![0.0; k * d];
    let mut transformed = vec![0.0; k * d];
    let mut main_term = vec![0.0; k];
    let mut total = 0.0;
    for i in 0..n {
        let point = &p.x[i * d..(i + 1) * d];
        for c in 0..k {
            let z = &mut centered[c * d..(c + 1) * d];
            let t = &mut transformed[c * d..(c + 1) * d];
            let qd = &q_diag[c * d..(c + 1) * d];
            let l = &p.l[c * l_size..(c + 1) * l_size];
            for j in 0..d {
                z[j] = point[j] - p.mu[c * d + j];
                t[j] = qd[j] * z[j];
            }
            let mut index = 0;
            for a in 0..d {
                for b in a + 1..d {
                    t[b] += l[index] * z[a];
                    index += 1;
                }
            }
            let squares: f64 = t.iter().map(|v| v * v).sum();
            main_term[c] = p.alpha[c] + sum_q[c] - 0.5 * squares;
        }
        let largest = main_term.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = main_term.iter().map(|s| (s - largest).exp()).sum();
        total += sum.ln() + largest;
        for c in 0..k {
            let w = (main_term[c] - largest).exp() / sum;
            let z = &centered[c * d..(c + 1) * d];
            let t = &transformed[c * d..(c + 1) * d];
            let qd = &q_diag[c * d..(c + 1) * d];
            let l = &p.l[c * l_size..(c + 1) * l_size];
            g.alpha[c] += w;
            let g_mu = &mut g.mu[c * d..(c + 1) * d];
            let g_q = &mut g.q[c * d..(c + 1) * d];
            for j in 0..d {
                g_q[j] += w * (1.0 - t[j] * z[j] * qd[j]);
                g_mu[j] += w * qd[j] * t[j];
            }
            let g_l = &mut g.l[c * l_size..(c + 1) * l_size];
            let mut index = 0;
            for a in 0..d {
                for b in a + 1..d {
                    g_l[index] -= w * t[b] * z[a];
                    g_mu[a] += w * l[index] * t[b];
                    index += 1;
                }
            }
        }
    }
    let largest = p.alpha.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = p.alpha.iter().map(|a| (a - largest).exp()).sum();
    let lse_alpha = sum.ln() + largest;
    let gamma2 = p.gamma * p.gamma;
    let mut prior = 0.0;
    for c in 0..k {
        g.alpha[c] -= n as f64 * (p.alpha[c] - lse_alpha).exp();
        let qd = &q_diag[c * d..(c + 1) * d];
        let l = &p.l[c * l_size..(c + 1) * l_size];
        let frobenius: f64 =
            qd.iter().map(|v| v * v).sum::<f64>() + l.iter().map(|v| v * v).sum::<f64>();
        prior += 0.5 * gamma2 * frobenius - p.m as f64 * sum_q[c];
        for j in 0..d {
            g.q[c * d + j] -= gamma2 * qd[j] * qd[j] - p.m as f64;
        }
        for j in 0..l_size {
            g.l[c * l_size + j] -= gamma2 * l[j];
        }
    }
    let value = constant_terms(d, k, n, p.gamma, p.m) + total - n as f64 * lse_alpha - prior;
    (value, g)
}

/// The objective on any number type: `zero` is the number 0 (accumulators
/// start from it), `lift` makes a constant operand (a plain `f64` where the
/// type mixes with `f64` natively), `value` reads a number's value (for the
/// log-sum-exp shift, which is not differentiated).
macro_rules! objective_on {
    ($T:ty, $alpha:expr, $mu:expr, $q:expr, $l:expr, $p:expr, $zero:expr, $lift:expr, $value:expr) => {{
        let (alpha, mu, q, l, p): (&[$T], &[$T], &[$T], &[$T], &Problem) = ($alpha, $mu, $q, $l, $p);
        let zero: $T = $zero;
        let lift = $lift;
        let value = $value;
        let (d, k) = (p.d, p.k);
        let n = p.x.len() / d;
        let l_size = d * (d - 1) / 2;
        let q_diag: Vec<$T> = q.iter().map(|&v| v.exp()).collect();
        let sum_q: Vec<$T> = q
            .chunks(d)
            .map(|qs| qs.iter().fold(zero, |s, &v| s + v))
            .collect();
        let mut centered = vec![zero; d];
        let mut transformed = vec![zero; d];
        let mut main_term = vec![zero; k];
        let mut total = zero;
        for i in 0..n {
            for c in 0..k {
                for j in 0..d {
                    centered[j] = lift(p.x[i * d + j]) - mu[c * d + j];
                    transformed[j] = q_diag[c * d + j] * centered[j];
                }
                let mut index = c * l_size;
                for a in 0..d {
                    for b in a + 1..d {
                        transformed[b] = transformed[b] + l[index] * centered[a];
                        index += 1;
                    }
                }
                let mut squares = zero;
                for j in 0..d {
                    squares = squares + transformed[j] * transformed[j];
                }
                main_term[c] = alpha[c] + sum_q[c] - lift(0.5) * squares;
            }
            total = total + objective_on!(@log_sum_exp &main_term, zero, lift, value);
        }
        let mut prior = zero;
        for c in 0..k {
            let mut frobenius = zero;
            for j in 0..d {
                frobenius = frobenius + q_diag[c * d + j] * q_diag[c * d + j];
            }
            for j in 0..l_size {
                frobenius = frobenius + l[c * l_size + j] * l[c * l_size + j];
            }
            prior = prior + lift(0.5 * p.gamma * p.gamma) * frobenius - lift(p.m as f64) * sum_q[c];
        }
        lift(constant_terms(d, k, n, p.gamma, p.m)) + total - lift(n as f64) * objective_on!(@log_sum_exp alpha, zero, lift, value) - prior
    }};
    (@log_sum_exp $v:expr, $zero:expr, $lift:expr, $value:expr) => {{
        let v = $v;
        let largest = v.iter().map(|&e| $value(e)).fold(f64::NEG_INFINITY, f64::max);
        let mut total = $zero;
        for &e in v.iter() {
            total = total + (e - $lift(largest)).exp();
        }
        total.ln() + $lift(largest)
    }};
}

fn split<T: Copy>(p: &Problem, flat: &[T]) -> (Vec<T>, Vec<T>, Vec<T>, Vec<T>) {
    let (a, rest) = flat.split_at(p.alpha.len());
    let (m, rest) = rest.split_at(p.mu.len());
    let (q, l) = rest.split_at(p.q.len());
    (a.to_vec(), m.to_vec(), q.to_vec(), l.to_vec())
}

fn flat_parameters(p: &Problem) -> Vec<f64> {
    [&p.alpha[..], &p.mu, &p.q, &p.l].concat()
}

pub fn with_reverse(p: &Problem) -> Vec<f64> {
    use reverse::{Gradient, Var};
    let tape = reverse::Tape::new();
    let vars = tape.add_vars(&flat_parameters(p));
    let (alpha, mu, q, l) = split(p, &vars);
    let y = objective_on!(
        Var,
        &alpha,
        &mu,
        &q,
        &l,
        p,
        tape.add_var(0.0),
        |c: f64| c,
        |v: Var| v.val()
    );
    y.grad().wrt(&vars)
}

/// ad_trait's numbers get their methods from the `AD` bound.
fn generic<T: AD>(p: &Problem, parameters: &[T]) -> T {
    let (alpha, mu, q, l) = split(p, parameters);
    objective_on!(
        T,
        &alpha,
        &mu,
        &q,
        &l,
        p,
        T::constant(0.0),
        T::constant,
        |v: T| v.to_constant()
    )
}

pub fn with_ad_trait(p: &Problem) -> Vec<f64> {
    let vars: Vec<adr> = flat_parameters(p)
        .iter()
        .enumerate()
        .map(|(i, &v)| adr::new_variable(v, i == 0))
        .collect();
    let y = generic(p, &vars);
    let grad = y.get_backwards_mode_grad();
    vars.iter().map(|v| grad.wrt(v)).collect()
}

/// Forward mode, one pass per parameter.
pub fn with_num_dual(p: &Problem) -> Vec<f64> {
    let parameters = flat_parameters(p);
    (0..parameters.len())
        .map(|seeded| {
            let duals: Vec<Dual64> = parameters
                .iter()
                .enumerate()
                .map(|(i, &v)| Dual64::new(v, if i == seeded { 1.0 } else { 0.0 }))
                .collect();
            let (alpha, mu, q, l) = split(p, &duals);
            let y = objective_on!(
                Dual64,
                &alpha,
                &mu,
                &q,
                &l,
                p,
                Dual64::from(0.0),
                Dual64::from,
                |v: Dual64| v.re
            );
            y.eps
        })
        .collect()
}

/// Central finite differences of the plain objective at a few parameters:
/// an independent check of the hand-written adjoint itself.
fn check_hand_by_finite_differences(p: &Problem, hand_grad: &[f64]) {
    let parameters = flat_parameters(p);
    let value_at = |flat: &[f64]| {
        let (a, m, q, l) = split(p, flat);
        objective(&a, &m, &q, &l, &p.x, p.gamma, p.m, p.d)
    };
    for index in (0..parameters.len()).step_by(7) {
        let h = 1e-5 * parameters[index].abs().max(1.0);
        let mut plus = parameters.clone();
        plus[index] += h;
        let mut minus = parameters.clone();
        minus[index] -= h;
        let estimate = (value_at(&plus) - value_at(&minus)) / (2.0 * h);
        // Truncation error O(h² f''') plus rounding O(ε |f| / h): the
        // objective is O(10³) here, so about 1e-7 absolute; 1e-5 relative to
        // max(1, |g|) leaves two orders of margin.
        crate::assert_gradient(
            "gmm hand-written vs finite differences",
            &[estimate],
            &[hand_grad[index]],
            1e-5,
        );
    }
}

pub fn check() {
    for (d, k, n) in [(2, 5, 50), (5, 3, 40)] {
        let p = problem(d, k, n);
        let (value, hand_grad) = hand(&p);
        let hand_flat = hand_grad.flat();
        check_hand_by_finite_differences(&p, &hand_flat);
        assert!((primal(&p) - value).abs() <= 1e-10 * value.abs());
        let (deltad_value, g) = deltad_gradient(&p);
        assert!((deltad_value - value).abs() <= 1e-10 * value.abs());
        crate::assert_gradient("gmm deltad", &g.flat(), &hand_flat, 1e-10);
        let (plain_value, plain) = deltad_plain_loops_gradient(&p);
        assert_eq!(plain_value.to_bits(), deltad_value.to_bits());
        crate::assert_gradient("gmm deltad (plain loops)", &plain.flat(), &hand_flat, 1e-10);
        let (tape_value, tape) = deltad_tape_gradient(&p);
        assert_eq!(tape_value.to_bits(), deltad_value.to_bits());
        crate::assert_gradient("gmm deltad-tape", &tape.flat(), &hand_flat, 1e-10);
        crate::assert_gradient("gmm reverse", &with_reverse(&p), &hand_flat, 1e-10);
        crate::assert_gradient("gmm ad_trait", &with_ad_trait(&p), &hand_flat, 1e-10);
        crate::assert_gradient("gmm num-dual", &with_num_dual(&p), &hand_flat, 1e-10);
    }
}
