//! A small Gaussian process: Matérn 5/2 kernel with one length scale per feature (ARD),
//! optionally mixed with an overlap ("same value") kernel that sees each feature as categorical,
//! Cholesky solve, marginal-likelihood fit of the hyperparameters with argmin's L-BFGS on the
//! analytic gradient, and expected improvement.

use std::cell::{Cell, RefCell};

use argmin::core::{CostFunction, Error as ArgminError, Executor, Gradient};
use argmin::solver::linesearch::MoreThuenteLineSearch;
use argmin::solver::quasinewton::LBFGS;

/// Kernel hyperparameters (the signal variance is 1: targets are standardised).
#[derive(Debug, Clone, PartialEq)]
pub struct Hyper {
    /// Length scale per feature, in feature units (features live in `[0, 1]`).
    pub lengthscales: Vec<f64>,
    /// Observation noise variance, relative to the signal variance.
    pub noise: f64,
    /// Per-feature rates `θ_j` of the overlap term; empty: no overlap term (pure Matérn).
    pub overlap: Vec<f64>,
    /// Weight `w` of the overlap term in `[0, 1]`: the kernel is
    /// `(1 − w)·Matérn(r) + w·exp(−Σ_j θ_j·[x_j ≠ x'_j])`, so two configurations that share a
    /// parameter value correlate whatever the ranks in between. Ignored without `overlap`.
    pub overlap_weight: f64,
}

impl Hyper {
    /// Equal length scales `l` for `d` features, and noise `noise`.
    pub fn isotropic(d: usize, l: f64, noise: f64) -> Self {
        Self {
            lengthscales: vec![l; d],
            noise,
            overlap: Vec::new(),
            overlap_weight: 0.0,
        }
    }

    /// [`Hyper::isotropic`] plus an overlap term with equal rates `theta` and weight `w`.
    pub fn with_overlap(d: usize, l: f64, noise: f64, theta: f64, w: f64) -> Self {
        Self {
            overlap: vec![theta; d],
            overlap_weight: w,
            ..Self::isotropic(d, l, noise)
        }
    }
}

/// The kernel of a [`Hyper`] in the form evaluated: inverse length scales and overlap rates.
#[derive(Debug, Clone)]
struct Kernel {
    inv_l: Vec<f64>,
    theta: Vec<f64>,
    w: f64,
}

impl Kernel {
    fn new(h: &Hyper) -> Self {
        Self {
            inv_l: h.lengthscales.iter().map(|l| 1.0 / l).collect(),
            theta: h.overlap.clone(),
            w: if h.overlap.is_empty() {
                0.0
            } else {
                h.overlap_weight
            },
        }
    }

    /// `Σ_j θ_j·[a_j ≠ b_j]` (features are value ranks, so equal features mean equal values).
    fn mismatch(&self, a: &[f64], b: &[f64]) -> f64 {
        a.iter()
            .zip(b)
            .zip(&self.theta)
            .filter(|((x, y), _)| x != y)
            .map(|(_, t)| t)
            .sum()
    }

    /// The correlation of `a` and `b` (1 when equal). One pass over the features: the same
    /// sums in the same order as `scaled_dist` and `mismatch`, so the same values.
    fn eval(&self, a: &[f64], b: &[f64]) -> f64 {
        if self.theta.is_empty() {
            return matern52(scaled_dist(a, b, &self.inv_l));
        }
        let (mut r2, mut miss) = (0.0, 0.0);
        // Branch-free: whether two values match is unpredictable, and adding 0 is exact.
        for ((x, y), (il, th)) in a.iter().zip(b).zip(self.inv_l.iter().zip(&self.theta)) {
            let t = (x - y) * il;
            r2 += t * t;
            miss += th * f64::from(u8::from(x != y));
        }
        (1.0 - self.w) * matern52(r2.sqrt()) + self.w * (-miss).exp()
    }
}

const SQRT5: f64 = 2.236_067_977_499_79;

/// Matérn 5/2 correlation at scaled distance `r` (distance over length scale).
pub fn matern52(r: f64) -> f64 {
    (1.0 + SQRT5 * r + 5.0 / 3.0 * r * r) * (-SQRT5 * r).exp()
}

/// Scaled distance: `sqrt(sum_j ((a_j - b_j) * inv_l_j)^2)`.
fn scaled_dist(a: &[f64], b: &[f64], inv_l: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .zip(inv_l)
        .map(|((x, y), il)| {
            let t = (x - y) * il;
            t * t
        })
        .sum::<f64>()
        .sqrt()
}

/// In-place Cholesky of an `n × n` row-major symmetric matrix (lower triangle). False if not
/// positive definite.
fn cholesky(a: &mut [f64], n: usize) -> bool {
    for j in 0..n {
        let mut s = a[j * n + j];
        for k in 0..j {
            s -= a[j * n + k] * a[j * n + k];
        }
        if s <= 0.0 || !s.is_finite() {
            return false;
        }
        let d = s.sqrt();
        a[j * n + j] = d;
        for i in j + 1..n {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= a[i * n + k] * a[j * n + k];
            }
            a[i * n + j] = s / d;
        }
    }
    true
}

/// Solves `L z = b` in place (forward substitution).
fn forward(l: &[f64], n: usize, b: &mut [f64]) {
    for i in 0..n {
        let mut s = b[i];
        for k in 0..i {
            s -= l[i * n + k] * b[k];
        }
        b[i] = s / l[i * n + i];
    }
}

/// Solves `Lᵀ z = b` in place (back substitution).
fn backward(l: &[f64], n: usize, b: &mut [f64]) {
    for i in (0..n).rev() {
        let mut s = b[i];
        for k in i + 1..n {
            s -= l[k * n + i] * b[k];
        }
        b[i] = s / l[i * n + i];
    }
}

/// `K^-1` from the Cholesky factor `L` of `K`: `L^-1` by forward substitution, then
/// `L^-T L^-1` (only the lower triangle is computed, then mirrored).
fn inverse_from_cholesky(l: &[f64], n: usize) -> Vec<f64> {
    // m = L^-1, lower triangular, row-major.
    let mut m = vec![0.0; n * n];
    for c in 0..n {
        m[c * n + c] = 1.0 / l[c * n + c];
        for i in c + 1..n {
            let mut s = 0.0;
            for k in c..i {
                s -= l[i * n + k] * m[k * n + c];
            }
            m[i * n + c] = s / l[i * n + i];
        }
    }
    // K^-1[i][j] = sum_{k >= max(i, j)} m[k][i] * m[k][j].
    let mut out = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let mut s = 0.0;
            for k in i..n {
                s += m[k * n + i] * m[k * n + j];
            }
            out[i * n + j] = s;
            out[j * n + i] = s;
        }
    }
    out
}

/// A Gaussian process conditioned on standardised observations.
#[derive(Debug, Clone)]
pub struct Gp {
    x: Vec<f64>,
    d: usize,
    n: usize,
    chol: Vec<f64>,
    alpha: Vec<f64>,
    hyper: Hyper,
    kern: Kernel,
    log_det: f64,
    fit_term: f64,
}

impl Gp {
    /// Conditions a GP on `n` points (`x` row-major, `d` columns) with targets `y` (already
    /// standardised). `None` when the kernel matrix is not positive definite even with jitter.
    pub fn fit(x: &[f64], d: usize, y: &[f64], hyper: Hyper) -> Option<Self> {
        let n = y.len();
        let kern = Kernel::new(&hyper);
        for jitter in [0.0, 1e-6, 1e-4, 1e-2] {
            let mut k = vec![0.0; n * n];
            for i in 0..n {
                for j in 0..=i {
                    let v = kern.eval(&x[i * d..(i + 1) * d], &x[j * d..(j + 1) * d]);
                    k[i * n + j] = v;
                    k[j * n + i] = v;
                }
                k[i * n + i] += hyper.noise + jitter;
            }
            if cholesky(&mut k, n) {
                let mut alpha = y.to_vec();
                forward(&k, n, &mut alpha);
                let fit_term: f64 = alpha.iter().map(|a| a * a).sum();
                backward(&k, n, &mut alpha);
                let log_det = (0..n).map(|i| k[i * n + i].ln()).sum::<f64>() * 2.0;
                return Some(Self {
                    x: x.to_vec(),
                    d,
                    n,
                    chol: k,
                    alpha,
                    hyper,
                    kern,
                    log_det,
                    fit_term,
                });
            }
        }
        None
    }

    /// Negative log marginal likelihood of the training data (up to a constant).
    pub fn nll(&self) -> f64 {
        0.5 * (self.fit_term + self.log_det)
    }

    /// The hyperparameters in use.
    pub fn hyper(&self) -> &Hyper {
        &self.hyper
    }

    /// Posterior mean at point `q` alone (no variance: `O(n·d)` instead of `O(n²)`).
    pub fn mean(&self, q: &[f64]) -> f64 {
        (0..self.n)
            .map(|i| self.kern.eval(q, &self.x[i * self.d..(i + 1) * self.d]) * self.alpha[i])
            .sum()
    }

    /// Appends to `row` the kernel values between `q` and the training points from
    /// `row.len()` on, so that `row` holds them for every training point: a row kept for a
    /// candidate serves a later GP whose training set extends this one's (a batch's pending
    /// picks appended), paying only for the new points.
    pub fn extend_row(&self, q: &[f64], row: &mut Vec<f64>) {
        for i in row.len()..self.n {
            row.push(self.kern.eval(q, &self.x[i * self.d..(i + 1) * self.d]));
        }
    }

    /// [`Gp::mean`] from `row`, the kernel values against every training point
    /// ([`Gp::extend_row`]): the same sum in the same order, so the same value.
    pub fn mean_from_row(&self, row: &[f64]) -> f64 {
        debug_assert_eq!(row.len(), self.n);
        row.iter().zip(&self.alpha).map(|(k, a)| k * a).sum()
    }

    /// [`Gp::predict`] from `row` (see [`Gp::mean_from_row`]); `scratch` is reused storage.
    pub fn predict_from_row(&self, row: &[f64], scratch: &mut Vec<f64>) -> (f64, f64) {
        let mean = self.mean_from_row(row);
        scratch.clear();
        scratch.extend_from_slice(row);
        forward(&self.chol, self.n, scratch);
        let explained: f64 = scratch.iter().map(|v| v * v).sum();
        (mean, (1.0 - explained).max(1e-12))
    }

    /// Posterior mean and variance at point `q` (length `d`); `scratch` is reused storage.
    /// The variance never exceeds the prior variance, 1.
    pub fn predict(&self, q: &[f64], scratch: &mut Vec<f64>) -> (f64, f64) {
        scratch.clear();
        let mut mean = 0.0;
        for i in 0..self.n {
            let k = self.kern.eval(q, &self.x[i * self.d..(i + 1) * self.d]);
            mean += k * self.alpha[i];
            scratch.push(k);
        }
        forward(&self.chol, self.n, scratch);
        let explained: f64 = scratch.iter().map(|v| v * v).sum();
        (mean, (1.0 - explained).max(1e-12))
    }
}

struct Likelihood<'a> {
    x: &'a [f64],
    d: usize,
    /// Whether the kernel has the overlap term (then `p` holds `2d + 2` values, else `d + 1`).
    overlap: bool,
    y: &'a [f64],
    /// Evaluations so far, and the best `(cost, params)` seen: the fit stops with an error
    /// after [`MAX_EVALS`] evaluations and keeps the best point, so it always terminates.
    evals: &'a Cell<usize>,
    best: &'a RefCell<Option<(f64, Vec<f64>)>>,
}

type BestPoint = RefCell<Option<(f64, Vec<f64>)>>;

/// Ranges of the log length scales and log noise. The optimiser works on unbounded `u` with
/// `log θ = lo + (hi − lo)·sigmoid(u)`, so every point it tries is inside the box.
const LOG_L: (f64, f64) = (-4.0, 3.0);
const LOG_NOISE: (f64, f64) = (-11.0, 0.0);
const LOG_THETA: (f64, f64) = (-4.0, 3.0);
const LOG_W: (f64, f64) = (-5.0, 0.0);
/// Weak priors on the overlap term: log rates ~ N(0, 1.5²), log weight ~ N(ln 0.3, 1.5²).
const THETA_PRIOR_MEAN: f64 = 0.0;
const W_PRIOR_MEAN: f64 = -1.204;
/// A weak prior that keeps the fit sane with few points: log length scales ~ N(ln 0.5, 1.5²).
const PRIOR_MEAN: f64 = -0.693;
const PRIOR_VAR: f64 = 2.25;
const MAX_EVALS: usize = 150;

fn sigmoid(u: f64) -> f64 {
    1.0 / (1.0 + (-u).exp())
}

/// Layout of the log hyperparameters `p`: `d` log length scales, the log noise, then with the
/// overlap term `d` log rates and the log weight.
fn bounds(j: usize, d: usize) -> (f64, f64) {
    if j < d {
        LOG_L
    } else if j == d {
        LOG_NOISE
    } else if j <= 2 * d {
        LOG_THETA
    } else {
        LOG_W
    }
}

/// Unbounded optimiser coordinates → log hyperparameters.
fn to_log(u: &[f64], d: usize) -> Vec<f64> {
    u.iter()
        .enumerate()
        .map(|(j, &v)| {
            let (lo, hi) = bounds(j, d);
            lo + (hi - lo) * sigmoid(v)
        })
        .collect()
}

/// Log hyperparameters → unbounded optimiser coordinates.
fn from_log(p: &[f64], d: usize) -> Vec<f64> {
    p.iter()
        .enumerate()
        .map(|(j, &v)| {
            let (lo, hi) = bounds(j, d);
            let t = ((v - lo) / (hi - lo)).clamp(1e-6, 1.0 - 1e-6);
            (t / (1.0 - t)).ln()
        })
        .collect()
}

fn hyper_from(p: &[f64], d: usize) -> Hyper {
    let overlap = p.len() > d + 1;
    Hyper {
        lengthscales: p[..d].iter().map(|v| v.exp()).collect(),
        noise: p[d].exp(),
        overlap: if overlap {
            p[d + 1..2 * d + 1].iter().map(|v| v.exp()).collect()
        } else {
            Vec::new()
        },
        overlap_weight: if overlap { p[2 * d + 1].exp() } else { 0.0 },
    }
}

/// The log hyperparameters of `h` for features of dimension `d` (the inverse of `hyper_from`).
fn log_params(h: &Hyper, d: usize) -> Vec<f64> {
    let mut p: Vec<f64> = h.lengthscales.iter().map(|l| l.ln()).collect();
    p.push(h.noise.ln());
    if h.overlap.len() == d && d > 0 {
        p.extend(h.overlap.iter().map(|t| t.ln()));
        p.push(h.overlap_weight.max(1e-6).ln());
    }
    p
}

impl Likelihood<'_> {
    fn new<'a>(
        x: &'a [f64],
        d: usize,
        overlap: bool,
        y: &'a [f64],
        evals: &'a Cell<usize>,
        best: &'a BestPoint,
    ) -> Likelihood<'a> {
        Likelihood {
            x,
            d,
            overlap,
            y,
            evals,
            best,
        }
    }

    /// The prior mean of log hyperparameter `j` (`None`: flat prior, the noise).
    fn prior_mean(&self, j: usize) -> Option<f64> {
        let d = self.d;
        if j < d {
            Some(PRIOR_MEAN)
        } else if j == d {
            None
        } else if j <= 2 * d {
            Some(THETA_PRIOR_MEAN)
        } else {
            Some(W_PRIOR_MEAN)
        }
    }

    fn prior(&self, p: &[f64]) -> f64 {
        p.iter()
            .enumerate()
            .filter_map(|(j, v)| {
                self.prior_mean(j)
                    .map(|m| 0.5 * (v - m) * (v - m) / PRIOR_VAR)
            })
            .sum()
    }

    fn note(&self, cost: f64, u: &[f64]) -> Result<(), ArgminError> {
        if cost.is_finite() && self.best.borrow().as_ref().is_none_or(|b| cost < b.0) {
            *self.best.borrow_mut() = Some((cost, u.to_vec()));
        }
        let n = self.evals.get() + 1;
        self.evals.set(n);
        if n > MAX_EVALS || u.iter().any(|v| !v.is_finite()) {
            return Err(ArgminError::msg("hyperparameter fit stopped"));
        }
        Ok(())
    }

    /// Penalised negative log marginal likelihood at log hyperparameters `p` (one Cholesky).
    fn value(&self, p: &[f64]) -> f64 {
        Gp::fit(self.x, self.d, self.y, hyper_from(p, self.d)).map_or(1e12, |g| g.nll())
            + self.prior(p)
    }

    /// Penalised negative log marginal likelihood and its gradient, both in log-parameter space.
    fn value_and_gradient(&self, p: &[f64]) -> (f64, Vec<f64>) {
        let d = self.d;
        let n = self.y.len();
        let h = hyper_from(p, d);
        let mut grad: Vec<f64> = p
            .iter()
            .enumerate()
            .map(|(j, v)| self.prior_mean(j).map_or(0.0, |m| (v - m) / PRIOR_VAR))
            .collect();
        let Some(gp) = Gp::fit(self.x, d, self.y, h.clone()) else {
            return (1e12, grad);
        };
        // W = K^-1 - alpha alpha^T; dNLL/dθ = 0.5 tr(W dK/dθ).
        let kinv = inverse_from_cholesky(&gp.chol, n);
        let mut trace_noise = 0.0;
        for i in 0..n {
            trace_noise += kinv[i * n + i] - gp.alpha[i] * gp.alpha[i];
        }
        grad[d] += 0.5 * trace_noise * h.noise;
        let kern = &gp.kern;
        let w = if self.overlap { kern.w } else { 0.0 };
        for i in 0..n {
            let xi = &self.x[i * d..(i + 1) * d];
            for k in 0..i {
                let xk = &self.x[k * d..(k + 1) * d];
                let r = scaled_dist(xi, xk, &kern.inv_l);
                let e = (-SQRT5 * r).exp();
                // Both (i, k) and (k, i): factor 2, times 0.5 from the formula.
                let wik = kinv[i * n + k] - gp.alpha[i] * gp.alpha[k];
                let f = wik * (1.0 - w) * 5.0 / 3.0 * (1.0 + SQRT5 * r) * e;
                for j in 0..d {
                    let t = (xi[j] - xk[j]) * kern.inv_l[j];
                    grad[j] += f * t * t;
                }
                if self.overlap {
                    let m = (1.0 + SQRT5 * r + 5.0 / 3.0 * r * r) * e;
                    let c = (-kern.mismatch(xi, xk)).exp();
                    for j in 0..d {
                        if xi[j] != xk[j] {
                            grad[d + 1 + j] -= wik * w * kern.theta[j] * c;
                        }
                    }
                    grad[2 * d + 1] += wik * w * (c - m);
                }
            }
        }
        (gp.nll() + self.prior(p), grad)
    }
}

impl CostFunction for Likelihood<'_> {
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, u: &Self::Param) -> Result<f64, ArgminError> {
        let c = if u.iter().all(|v| v.is_finite()) {
            self.value(&to_log(u, self.d))
        } else {
            f64::INFINITY
        };
        self.note(c, u)?;
        Ok(c)
    }
}

impl Gradient for Likelihood<'_> {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;

    fn gradient(&self, u: &Self::Param) -> Result<Vec<f64>, ArgminError> {
        if u.iter().any(|v| !v.is_finite()) {
            return Err(ArgminError::msg("non-finite hyperparameters"));
        }
        let p = to_log(u, self.d);
        let (c, g) = self.value_and_gradient(&p);
        self.note(c, u)?;
        let d = self.d;
        // Chain rule through log θ = lo + (hi − lo)·sigmoid(u).
        Ok(g.iter()
            .zip(u)
            .enumerate()
            .map(|(j, (gj, &uj))| {
                let (lo, hi) = bounds(j, d);
                let s = sigmoid(uj);
                gj * (hi - lo) * s * (1.0 - s)
            })
            .collect())
    }
}

/// Fits the length scales and noise (and, when `start` has an overlap term, its rates and
/// weight) by maximising the (weakly regularised) marginal likelihood with L-BFGS from `start`.
/// Deterministic; at most `max_iters` iterations and a bounded number of likelihood
/// evaluations; returns the best point seen, or `start` if nothing improved on it.
pub fn fit_hyper(x: &[f64], d: usize, y: &[f64], start: &Hyper, max_iters: u64) -> Hyper {
    let p0 = log_params(start, d);
    let overlap = p0.len() > d + 1;
    let u0 = from_log(&p0, d);
    let evals = Cell::new(0);
    let best: BestPoint = RefCell::new(None);
    let problem = Likelihood::new(x, d, overlap, y, &evals, &best);
    let f0 = problem.value(&to_log(&u0, d));
    let solver = LBFGS::new(MoreThuenteLineSearch::new(), 7);
    // Whether the solver finishes or is stopped, the best point seen is kept.
    let _ = Executor::new(problem, solver)
        .configure(|s| s.param(u0).max_iters(max_iters))
        .run();
    match best.into_inner() {
        Some((c, u)) if c < f0 => hyper_from(&to_log(&u, d), d),
        _ => start.clone(),
    }
}

/// Expected improvement below `best` of a normal with mean `mu` and variance `var`, less a
/// margin `xi` (minimisation).
pub fn expected_improvement(mu: f64, var: f64, best: f64, xi: f64) -> f64 {
    let s = var.sqrt();
    if s < 1e-12 {
        return (best - xi - mu).max(0.0);
    }
    let z = (best - xi - mu) / s;
    (best - xi - mu) * norm_cdf(z) + s * norm_pdf(z)
}

fn norm_pdf(z: f64) -> f64 {
    (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// Standard normal CDF via a rational erfc approximation (relative error below 1.2e-7).
pub fn norm_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests;
