//! A small Gaussian process: Matérn 5/2 kernel, Cholesky solve, marginal-likelihood fit of the
//! length scale and noise with argmin's Nelder–Mead, and expected improvement.

use argmin::core::{CostFunction, Error as ArgminError, Executor};
use argmin::solver::neldermead::NelderMead;

/// Kernel hyperparameters (the signal variance is 1: targets are standardised).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hyper {
    /// Length scale, in feature units (features live in `[0, 1]`).
    pub lengthscale: f64,
    /// Observation noise variance, relative to the signal variance.
    pub noise: f64,
}

impl Default for Hyper {
    fn default() -> Self {
        Self {
            lengthscale: 0.3,
            noise: 1e-3,
        }
    }
}

const SQRT5: f64 = 2.236_067_977_499_79;

/// Matérn 5/2 correlation at squared distance `d2` for length scale `l`.
pub fn matern52(d2: f64, l: f64) -> f64 {
    let r = d2.max(0.0).sqrt() / l;
    (1.0 + SQRT5 * r + 5.0 / 3.0 * r * r) * (-SQRT5 * r).exp()
}

fn sqdist(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
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

/// A Gaussian process conditioned on standardised observations.
#[derive(Debug, Clone)]
pub struct Gp {
    x: Vec<f64>,
    d: usize,
    n: usize,
    chol: Vec<f64>,
    alpha: Vec<f64>,
    hyper: Hyper,
    log_det: f64,
    fit_term: f64,
}

impl Gp {
    /// Conditions a GP on `n` points (`x` row-major, `d` columns) with targets `y` (already
    /// standardised). `None` when the kernel matrix is not positive definite even with jitter.
    pub fn fit(x: &[f64], d: usize, y: &[f64], hyper: Hyper) -> Option<Self> {
        let n = y.len();
        for jitter in [0.0, 1e-6, 1e-4, 1e-2] {
            let mut k = vec![0.0; n * n];
            for i in 0..n {
                for j in 0..=i {
                    let v = matern52(
                        sqdist(&x[i * d..(i + 1) * d], &x[j * d..(j + 1) * d]),
                        hyper.lengthscale,
                    );
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
    pub fn hyper(&self) -> Hyper {
        self.hyper
    }

    /// Posterior mean and variance at point `q` (length `d`). `scratch` must hold `n` values.
    pub fn predict(&self, q: &[f64], scratch: &mut Vec<f64>) -> (f64, f64) {
        scratch.clear();
        let mut mean = 0.0;
        for i in 0..self.n {
            let k = matern52(
                sqdist(q, &self.x[i * self.d..(i + 1) * self.d]),
                self.hyper.lengthscale,
            );
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
    y: &'a [f64],
}

fn hyper_from(p: &[f64]) -> Hyper {
    Hyper {
        lengthscale: p[0].clamp(-3.5, 1.5).exp(),
        noise: p[1].clamp(-12.0, -0.5).exp(),
    }
}

impl CostFunction for Likelihood<'_> {
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, p: &Self::Param) -> Result<f64, ArgminError> {
        let h = hyper_from(p);
        // Penalise leaving the box so Nelder–Mead stays inside it.
        let out = (p[0] - p[0].clamp(-3.5, 1.5)).abs() + (p[1] - p[1].clamp(-12.0, -0.5)).abs();
        Ok(Gp::fit(self.x, self.d, self.y, h).map_or(1e12, |g| g.nll()) + 10.0 * out)
    }
}

/// Fits the length scale and noise by maximising the marginal likelihood with Nelder–Mead,
/// starting from `start`. Deterministic; at most `max_iters` iterations.
pub fn fit_hyper(x: &[f64], d: usize, y: &[f64], start: Hyper, max_iters: u64) -> Hyper {
    let p0 = vec![start.lengthscale.ln(), start.noise.ln()];
    let simplex = vec![
        p0.clone(),
        vec![p0[0] + 0.7, p0[1]],
        vec![p0[0], p0[1] + 2.0],
    ];
    let Ok(solver) = NelderMead::new(simplex).with_sd_tolerance(1e-3) else {
        return start;
    };
    let problem = Likelihood { x, d, y };
    match Executor::new(problem, solver)
        .configure(|s| s.max_iters(max_iters))
        .run()
    {
        Ok(res) => res
            .state()
            .best_param
            .as_ref()
            .map_or(start, |p| hyper_from(p)),
        Err(_) => start,
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
mod tests {
    use super::*;

    #[test]
    fn interpolates_training_points() {
        let x: Vec<f64> = (0..10).map(|i| i as f64 / 9.0).collect();
        let y: Vec<f64> = x.iter().map(|v| (6.0 * v).sin()).collect();
        let g = Gp::fit(
            &x,
            1,
            &y,
            Hyper {
                lengthscale: 0.3,
                noise: 1e-6,
            },
        )
        .unwrap();
        let mut s = Vec::new();
        for i in 0..10 {
            let (m, v) = g.predict(&x[i..i + 1], &mut s);
            assert!((m - y[i]).abs() < 1e-3, "{m} vs {}", y[i]);
            assert!(v < 1e-3);
        }
        let (_, v) = g.predict(&[3.0], &mut s);
        assert!(v > 0.9, "far away the prior variance returns");
    }

    #[test]
    fn hyper_fit_improves_likelihood() {
        let x: Vec<f64> = (0..30).map(|i| i as f64 / 29.0).collect();
        let y: Vec<f64> = x.iter().map(|v| (3.0 * v).sin()).collect();
        let start = Hyper {
            lengthscale: 0.05,
            noise: 0.1,
        };
        let before = Gp::fit(&x, 1, &y, start).unwrap().nll();
        let h = fit_hyper(&x, 1, &y, start, 60);
        let after = Gp::fit(&x, 1, &y, h).unwrap().nll();
        assert!(after < before, "{after} !< {before}");
    }

    #[test]
    fn ei_and_cdf_are_sane() {
        assert!((norm_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((norm_cdf(1.96) - 0.975).abs() < 1e-3);
        assert!(expected_improvement(0.0, 1.0, 0.0, 0.0) > 0.39);
        assert!(expected_improvement(5.0, 1e-20, 0.0, 0.0) == 0.0);
    }
}
