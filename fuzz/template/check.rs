//! The checks the generated programs run (copied into each generated crate).
//!
//! At each point `x` of a program's entry function `f`:
//! - the value from `value_and_grad`, `jvp` and `vjp` equals `f(x)` bit for bit
//!   (all three run the function's own arithmetic);
//! - each gradient component equals the central finite difference, where the
//!   finite difference can be trusted (see `fd_component`);
//! - the dot-product identity `t · (J s) = <Jᵀ t, s>` holds between `jvp`
//!   (forward mode) and `vjp` (reverse mode) for a random tangent `s` and
//!   seed `t`;
//! - the gradient equals the one of the same program forced onto the tape
//!   (`#[differentiate(tape)]`) to rounding, and so do their values, bit for
//!   bit.
#![allow(dead_code)]

/// SplitMix64, as in the fuzz crate.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    pub fn vec(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n).map(|_| self.uniform(lo, hi)).collect()
    }
}

/// What the checks of one program found.
#[derive(Default)]
pub struct Outcome {
    pub points: usize,
    /// Points where every gradient component was compared with a trusted
    /// finite difference.
    pub checked: usize,
    /// Points where some component's finite difference was not trustworthy
    /// (a branch or kink within the step); the trusted components are still
    /// compared.
    pub skipped_fd: usize,
    /// Points where the value or a finite difference was not finite or huge.
    pub skipped_range: usize,
    /// Components compared / not trusted.
    pub components: usize,
    pub components_skipped: usize,
    /// The entry function took the compiled path.
    pub compiled: bool,
    /// The entry function's body takes derivatives of other functions
    /// (`g::grad(..)`), which each engine computes its own way.
    pub derivatives_inside: bool,
    pub failures: Vec<String>,
}

/// Equal values: IEEE equality (0.0 and -0.0 are the same value: the
/// recording pass may reach a zero with the other sign, which no derivative
/// or later comparison can tell apart) or both NaN.
fn same(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// Values beyond this are not checked: finite differences of huge values
/// lose all their digits to rounding.
const RANGE: f64 = 1e8;

/// The central difference of component `i` with step `h`.
fn central(eval: &dyn Fn(&[f64]) -> f64, x: &[f64], i: usize, h: f64) -> f64 {
    let mut p = x.to_vec();
    p[i] = x[i] + h;
    let up = eval(&p);
    p[i] = x[i] - h;
    let down = eval(&p);
    (up - down) / (2.0 * h)
}

/// The finite-difference derivative of component `i`, or `None` when it
/// cannot be trusted.
///
/// With `h = 1e-4·max(1, |x_i|)`, the central difference `d1` has truncation
/// error `h²/6·f'''` and rounding error about `ε|f|/h`; `d2` with `h/2` has a
/// quarter of the truncation error. Where `f` is smooth on `[x-h, x+h]`, `d1`
/// and `d2` agree to the truncation error; we trust them only when they agree
/// to `1e-6·max(1, |d2|)`. Then the error of the Richardson extrapolation
/// `(4·d2 - d1)/3` (O(h⁴)) is far below that, and a correct gradient lies
/// within `1e-5·max(1, |d2|)` of it: ten times the disagreement we accept,
/// a margin for rounding. A branch flip, jump or kink inside the step makes
/// `d1` and `d2` disagree by O(1), so the component is skipped instead of
/// failing. A wrong derivative rule or a lost term differs by O(1) relative
/// and is caught.
fn fd_component(eval: &dyn Fn(&[f64]) -> f64, x: &[f64], i: usize) -> Option<f64> {
    let h = 1e-4 * x[i].abs().max(1.0);
    let d1 = central(eval, x, i, h);
    let d2 = central(eval, x, i, h / 2.0);
    if !d1.is_finite() || !d2.is_finite() || d1.abs() > RANGE || d2.abs() > RANGE {
        return None;
    }
    if (d1 - d2).abs() > 1e-6 * d2.abs().max(1.0) {
        return None;
    }
    Some((4.0 * d2 - d1) / 3.0)
}

#[allow(clippy::too_many_arguments)]
pub fn check_point(
    x: &[f64],
    eval: &dyn Fn(&[f64]) -> f64,
    value_and_grad: &dyn Fn(&[f64]) -> (f64, Vec<f64>),
    grad: &dyn Fn(&[f64]) -> Vec<f64>,
    tape_value_and_grad: &dyn Fn(&[f64]) -> (f64, Vec<f64>),
    jvp: &dyn Fn(&[f64], &[f64]) -> (f64, f64),
    vjp: &dyn Fn(&[f64], f64) -> (f64, Vec<f64>),
    hvp: &dyn Fn(&[f64], &[f64]) -> Vec<f64>,
    tape_hvp: &dyn Fn(&[f64], &[f64]) -> Vec<f64>,
    rng: &mut Rng,
    out: &mut Outcome,
) {
    out.points += 1;
    let value = eval(x);
    if !value.is_finite() || value.abs() > RANGE {
        out.skipped_range += 1;
        return;
    }
    // Every derivative's value is the function's, bit for bit, except where
    // the body takes derivatives of other functions: each pass computes
    // those its own way (forward mode, a nested adjoint, the tape), equal
    // to rounding only.
    let value_tolerance = if out.derivatives_inside { 1e-9 } else { 0.0 };
    let (v, g) = value_and_grad(x);
    if disagreement(&[v], &[value], value_tolerance).is_some() {
        out.failures.push(format!(
            "value: value_and_grad gives {v:e}, the function {value:e} at x = {x:?}"
        ));
        return;
    }
    if g.len() != x.len() {
        out.failures.push(format!(
            "shape: gradient has {} components, expected {}",
            g.len(),
            x.len()
        ));
        return;
    }
    // `grad` (which may run the adjoint without the forward pass, when
    // that keeps nothing): the same adjoint, so the same bits.
    let alone = grad(x);
    if alone.len() != g.len() {
        out.failures.push(format!(
            "grad: {} components, value_and_grad {} at x = {x:?}",
            alone.len(),
            g.len()
        ));
        return;
    }
    if let Some(i) = disagreement(&alone, &g, 0.0) {
        out.failures.push(format!(
            "grad: component {i}: grad {:e}, value_and_grad {:e} at x = {x:?}",
            alone[i], g[i]
        ));
        return;
    }
    // The other engine: same value, same gradient to rounding. The engines
    // add the same partial products in different orders (each sum rounded
    // once per term), so they agree to a few ulps of the terms' magnitudes;
    // 1e-9 relative to max(1, |component|) leaves a wide margin below the
    // O(1) error of a wrong or missing partial.
    let (tv, tg) = tape_value_and_grad(x);
    if disagreement(&[tv], &[value], value_tolerance).is_some() {
        out.failures.push(format!(
            "value: the tape gives {tv:e}, the function {value:e} at x = {x:?}"
        ));
        return;
    }
    if let Some(i) = disagreement(&g, &tg, 1e-9) {
        out.failures.push(format!(
            "engines: component {i}: compiled {:e}, tape {:e} at x = {x:?}; gradients {g:?} vs {tg:?}",
            g[i], tg[i]
        ));
        return;
    }
    let mut all_trusted = true;
    for i in 0..x.len() {
        match fd_component(eval, x, i) {
            None => {
                all_trusted = false;
                out.components_skipped += 1;
            }
            Some(fd) => {
                out.components += 1;
                let tol = 1e-5 * fd.abs().max(1.0);
                if !((g[i] - fd).abs() <= tol) {
                    out.failures.push(format!(
                        "gradient: component {i}: deltad {:e}, finite differences {fd:e} at x = {x:?}; gradient {g:?}",
                        g[i]
                    ));
                    return;
                }
            }
        }
    }
    if all_trusted {
        out.checked += 1;
    } else {
        out.skipped_fd += 1;
    }
    // Forward against reverse mode. Both compute the same elementary partials
    // and differ only in the order of the floating-point sums and products,
    // so they agree to a small multiple of machine precision relative to the
    // size of the terms: 1e-9 of Σ|terms| leaves ~10⁶ ulps of margin while
    // any wrong or missing partial shows up at O(1). The terms seen here are
    // the final products; where the derivative is a cancellation of larger
    // intermediate terms (`atan2(v / c, v)` is constant in `v`: its
    // derivative is the rounding left of two equal partials) both sides are
    // rounding noise of those terms, so, as in the engines' check above,
    // the margin is at least 1e-9.
    let s = rng.vec(x.len(), -1.0, 1.0);
    let t = rng.uniform(0.5, 1.5);
    let (vf, directional) = jvp(x, &s);
    if disagreement(&[vf], &[value], value_tolerance).is_some() {
        out.failures.push(format!(
            "value: jvp gives {vf:e}, the function {value:e} at x = {x:?}"
        ));
        return;
    }
    let (vr, back) = vjp(x, t);
    if disagreement(&[vr], &[value], value_tolerance).is_some() {
        out.failures.push(format!(
            "value: vjp gives {vr:e}, the function {value:e} at x = {x:?}"
        ));
        return;
    }
    let lhs = t * directional;
    let rhs: f64 = back.iter().zip(&s).map(|(a, b)| a * b).sum();
    let scale: f64 = back.iter().zip(&s).map(|(a, b)| (a * b).abs()).sum::<f64>() + lhs.abs();
    if !((lhs - rhs).abs() <= 1e-9 * scale.max(1.0)) && !(lhs == rhs) {
        out.failures.push(format!(
            "dot product: t·(J s) = {lhs:e} but <Jᵀt, s> = {rhs:e} at x = {x:?}, s = {s:?}, t = {t}"
        ));
        return;
    }
    // Second order: H·s by forward-over-reverse on both engines (the
    // compiled path's forward pass drops the tangent of the value, and keeps
    // decisions as bits). As with the gradients, the engines add the same
    // products in different orders: 1e-8 of max(1, |component|).
    let (hv, tape_hv) = (hvp(x, &s), tape_hvp(x, &s));
    if let Some(i) = disagreement(&hv, &tape_hv, 1e-8) {
        out.failures.push(format!(
            "hvp: component {i}: compiled {:e}, tape {:e} at x = {x:?}, s = {s:?}; H·s {hv:?} vs {tape_hv:?}",
            hv[i], tape_hv[i]
        ));
    }
}

/// The output of a sparse Jacobian check: the value, the dense rows, and
/// the pattern's rows.
pub type Sparse = (f64, Vec<Vec<f64>>, Vec<Vec<usize>>);

/// The output of a sparse Hessian check: the dense rows and the pattern's
/// rows.
pub type SparseHessian = (Vec<Vec<f64>>, Vec<Vec<usize>>);

/// Vector forward mode and sparsity against the one-direction derivatives
/// `check_point` has checked: `jvps` along 11 tangents (a chunk and a
/// partial one) equal one `jvp` each; `hvps` equal one `hvp` each; the
/// forward-mode Jacobian (one row) and the sparse Jacobians of both
/// engines equal the gradient; every nonzero gradient component lies in
/// the detected pattern; the sparse Hessians of both engines equal one
/// `hvp` per unit vector, their nonzeros inside their patterns.
///
/// Each lane of a chunk runs the operations of a one-tangent pass, so the
/// values are equal bit for bit except where the body takes derivatives of
/// other functions (then 1e-9, as in `check_point`); the derivatives are
/// the same sums as the one-direction ones, in the same order in the
/// forward passes (0 tolerance, or 1e-9 with derivatives inside); the
/// chunked Hessian-vector products and the gradients from forward chunks
/// are the reverse sums computed in another order: 1e-9 relative to
/// max(1, |component|), as `check_point`'s engine comparison.
#[allow(clippy::too_many_arguments)]
pub fn check_chunks(
    x: &[f64],
    eval: &dyn Fn(&[f64]) -> f64,
    value_and_grad: &dyn Fn(&[f64]) -> (f64, Vec<f64>),
    jvp: &dyn Fn(&[f64], &[f64]) -> (f64, f64),
    jvps: &dyn Fn(&[f64], &[Vec<f64>]) -> (f64, Vec<f64>),
    hvp: &dyn Fn(&[f64], &[f64]) -> Vec<f64>,
    hvps: &dyn Fn(&[f64], &[Vec<f64>]) -> Vec<Vec<f64>>,
    jacobian_fwd: &dyn Fn(&[f64]) -> (f64, Vec<Vec<f64>>),
    sparse: &dyn Fn(&[f64]) -> Sparse,
    tape_sparse: &dyn Fn(&[f64]) -> Sparse,
    sparse_hessian: &dyn Fn(&[f64]) -> SparseHessian,
    tape_sparse_hessian: &dyn Fn(&[f64]) -> SparseHessian,
    rng: &mut Rng,
    out: &mut Outcome,
) {
    let value = eval(x);
    if !value.is_finite() || value.abs() > RANGE {
        return;
    }
    let exact = if out.derivatives_inside { 1e-9 } else { 0.0 };
    let directions: Vec<Vec<f64>> = (0..11).map(|_| rng.vec(x.len(), -1.0, 1.0)).collect();
    let (v, many) = jvps(x, &directions);
    if disagreement(&[v], &[value], exact).is_some() || many.len() != directions.len() {
        out.failures.push(format!(
            "jvps: value {v:e} (the function {value:e}), {} derivatives for {} tangents at x = {x:?}",
            many.len(),
            directions.len()
        ));
        return;
    }
    let one: Vec<f64> = directions.iter().map(|s| jvp(x, s).1).collect();
    if let Some(k) = disagreement(&many, &one, exact) {
        out.failures.push(format!(
            "jvps: tangent {k}: {:e} in a chunk, {:e} by jvp at x = {x:?}, s = {:?}",
            many[k], one[k], directions[k]
        ));
        return;
    }
    let (_, g) = value_and_grad(x);
    let (v, rows) = jacobian_fwd(x);
    if disagreement(&[v], &[value], exact).is_some() || rows.len() != 1 {
        out.failures.push(format!(
            "jacobian_fwd: value {v:e} (the function {value:e}), {} rows at x = {x:?}",
            rows.len()
        ));
        return;
    }
    if let Some(i) = disagreement(&rows[0], &g, 1e-9) {
        out.failures.push(format!(
            "jacobian_fwd: component {i}: {:e}, the gradient {:e} at x = {x:?}",
            rows[0][i], g[i]
        ));
        return;
    }
    for (engine, sparse) in [("compiled", sparse), ("tape", tape_sparse)] {
        let (v, dense, pattern) = sparse(x);
        if disagreement(&[v], &[value], exact).is_some() || dense.len() != 1 || pattern.len() != 1 {
            out.failures.push(format!(
                "sparse_jacobian ({engine}): value {v:e} (the function {value:e}), {} rows at x = {x:?}",
                dense.len()
            ));
            return;
        }
        if let Some(i) = disagreement(&dense[0], &g, 1e-9) {
            out.failures.push(format!(
                "sparse_jacobian ({engine}): component {i}: {:e}, the gradient {:e} at x = {x:?}; pattern {:?}",
                dense[0][i], g[i], pattern[0]
            ));
            return;
        }
        if let Some(i) = (0..g.len()).find(|&i| g[i] != 0.0 && !pattern[0].contains(&i)) {
            out.failures.push(format!(
                "jacobian_pattern ({engine}): gradient component {i} = {:e} outside the pattern {:?} at x = {x:?}",
                g[i], pattern[0]
            ));
            return;
        }
    }
    let few = &directions[..9];
    let chunked = hvps(x, few);
    for (k, s) in few.iter().enumerate() {
        let single = hvp(x, s);
        if let Some(i) = disagreement(&chunked[k], &single, 1e-9) {
            out.failures.push(format!(
                "hvps: direction {k}, component {i}: {:e} in a chunk, {:e} by hvp at x = {x:?}, s = {s:?}",
                chunked[k][i], single[i]
            ));
            return;
        }
    }
    let rows: Vec<Vec<f64>> = (0..x.len())
        .map(|i| {
            let unit: Vec<f64> = (0..x.len()).map(|j| if i == j { 1.0 } else { 0.0 }).collect();
            hvp(x, &unit)
        })
        .collect();
    for (engine, sparse_hessian) in [("compiled", sparse_hessian), ("tape", tape_sparse_hessian)] {
        let (dense, pattern) = sparse_hessian(x);
        if dense.len() != x.len() || pattern.len() != x.len() {
            out.failures.push(format!(
                "sparse_hessian ({engine}): {} rows for {} inputs at x = {x:?}",
                dense.len(),
                x.len()
            ));
            return;
        }
        for (i, row) in rows.iter().enumerate() {
            if let Some(j) = disagreement(&dense[i], row, 1e-9) {
                out.failures.push(format!(
                    "sparse_hessian ({engine}): H[{i}][{j}] = {:e}, by hvp {:e} at x = {x:?}; pattern row {:?}",
                    dense[i][j], row[j], pattern[i]
                ));
                return;
            }
            if let Some(j) = (0..x.len()).find(|&j| row[j] != 0.0 && !pattern[i].contains(&j)) {
                out.failures.push(format!(
                    "hessian_pattern ({engine}): H[{i}][{j}] = {:e} outside the pattern row {:?} at x = {x:?}",
                    row[j], pattern[i]
                ));
                return;
            }
        }
    }
}

/// Vector reverse mode against the gradient `check_point` has checked: the
/// Jacobian of `paired` (the function's value and twice it) takes one
/// sweep of the function's adjoint on two lanes of adjoints, seeded 1 and
/// 2; its rows are the gradient and twice it. (Doubling is exact in
/// floating point, so the lanes run the same operations as one adjoint;
/// the gradient may come from forward mode or another order of the same
/// sums: 1e-9 relative to max(1, |component|), as `check_point`'s engine
/// comparison.)
pub fn check_rows(
    x: &[f64],
    eval: &dyn Fn(&[f64]) -> f64,
    value_and_grad: &dyn Fn(&[f64]) -> (f64, Vec<f64>),
    paired: &dyn Fn(&[f64]) -> ([f64; 2], Vec<Vec<f64>>),
    out: &mut Outcome,
) {
    let value = eval(x);
    if !value.is_finite() || value.abs() > RANGE {
        return;
    }
    let (_, g) = value_and_grad(x);
    let (v, rows) = paired(x);
    let exact = if out.derivatives_inside { 1e-9 } else { 0.0 };
    if disagreement(&v, &[value, 2.0 * value], exact).is_some() || rows.len() != 2 {
        out.failures.push(format!(
            "jacobian_rev (two lanes): value {v:?} (the function {value:e}), {} rows at x = {x:?}",
            rows.len()
        ));
        return;
    }
    let twice: Vec<f64> = g.iter().map(|d| 2.0 * d).collect();
    for (row, reference, what) in [(&rows[0], &g, "the gradient"), (&rows[1], &twice, "twice the gradient")] {
        if let Some(i) = disagreement(row, reference, 1e-9) {
            out.failures.push(format!(
                "jacobian_rev (two lanes): component {i}: {:e}, {what} {:e} at x = {x:?}",
                row[i], reference[i]
            ));
            return;
        }
    }
}

/// The first component where `actual` and `reference` (one engine's and
/// the other's, or two paths of one engine) differ by more than `relative`
/// of max(1, |reference|) (equal values and two NaNs agree; with 0, only
/// they do).
fn disagreement(actual: &[f64], reference: &[f64], relative: f64) -> Option<usize> {
    (0..actual.len()).find(|&i| {
        let tol = relative * reference[i].abs().max(1.0);
        !((actual[i] - reference[i]).abs() <= tol) && !same(actual[i], reference[i])
    })
}
