//! A tree-structured Parzen estimator (TPE) over the valid set: every parameter is categorical,
//! good and bad observations each get a mixture of per-parameter categorical kernels, and the
//! candidate drawn from the good mixture with the best density ratio is proposed.
//!
//! It follows Optuna's multivariate TPE (the same startup, split, kernels and mixture weights),
//! with two differences that the valid set allows: candidates that violate a restriction or
//! were already measured are redrawn instead of being proposed, and failures count as bad
//! observations, so the model learns to avoid failing regions.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::space::{Config, ConfigId, Space};
use crate::strategies::{random_unmeasured, seeded_rng};
use crate::strategy::{Observation, SearchContext, Strategy};

/// Tuning knobs of [`Tpe`]; the defaults are Optuna's.
#[derive(Debug, Clone)]
pub struct TpeConfig {
    /// Uniformly random valid configurations before the model is used.
    pub startup: usize,
    /// Valid unmeasured candidates drawn from the good mixture per proposal.
    pub candidates: usize,
    /// The fraction of observations counted as good (rounded up) ...
    pub gamma: f64,
    /// ... but never more than this many.
    pub max_good: usize,
    /// Weight of the uniform prior, both as a mixture component and inside each kernel.
    pub prior_weight: f64,
}

impl Default for TpeConfig {
    fn default() -> Self {
        Self {
            startup: 10,
            candidates: 24,
            gamma: 0.1,
            max_good: 25,
            prior_weight: 1.0,
        }
    }
}

/// A mixture of product-categorical kernels, one component per observation plus a uniform
/// prior component (Optuna's categorical Parzen estimator).
#[derive(Debug, Clone)]
pub(crate) struct Parzen {
    /// The observations' configurations (value indices), one per component.
    centres: Vec<Config>,
    /// Mixture weights of the components, the prior last; they sum to 1.
    weights: Vec<f64>,
    /// Per parameter: (kernel mass on the centre's value, mass on each other value).
    kernel: Vec<(f64, f64)>,
    /// Per parameter: number of values.
    arity: Vec<usize>,
}

impl Parzen {
    /// The estimator of `centres` (oldest first) in `space`.
    pub(crate) fn new(space: &Space, centres: Vec<Config>, prior_weight: f64) -> Self {
        let n = centres.len();
        let arity: Vec<usize> = space.params().iter().map(|p| p.values.len()).collect();
        let fill = prior_weight / (n + 1) as f64;
        let kernel = arity
            .iter()
            .map(|&k| {
                let total = 1.0 + k as f64 * fill;
                ((1.0 + fill) / total, fill / total)
            })
            .collect();
        // Optuna's default weights: the 25 most recent count fully, older ones ramp up.
        let mut weights: Vec<f64> = if n < 25 {
            vec![1.0; n]
        } else {
            let ramp = n - 25;
            (0..n)
                .map(|i| {
                    if i >= ramp {
                        1.0
                    } else if ramp == 1 {
                        1.0 / n as f64
                    } else {
                        1.0 / n as f64 + (1.0 - 1.0 / n as f64) * i as f64 / (ramp - 1) as f64
                    }
                })
                .collect()
        };
        weights.push(prior_weight);
        let sum: f64 = weights.iter().sum();
        weights.iter_mut().for_each(|w| *w /= sum);
        Self {
            centres,
            weights,
            kernel,
            arity,
        }
    }

    /// The mixture density at `c`.
    pub(crate) fn density(&self, c: &[u16]) -> f64 {
        let prior: f64 = self.arity.iter().map(|&k| 1.0 / k as f64).product();
        let mut total = prior * self.weights[self.centres.len()];
        for (centre, w) in self.centres.iter().zip(&self.weights) {
            let mut p = *w;
            for ((a, b), (hit, miss)) in centre.iter().zip(c).zip(&self.kernel) {
                p *= if a == b { *hit } else { *miss };
            }
            total += p;
        }
        total
    }

    /// One configuration drawn from the mixture (not necessarily valid).
    pub(crate) fn sample(&self, rng: &mut ChaCha8Rng) -> Config {
        let u: f64 = rng.gen();
        let mut acc = 0.0;
        let mut comp = self.centres.len();
        for (i, w) in self.weights.iter().enumerate() {
            acc += w;
            if u < acc {
                comp = i;
                break;
            }
        }
        let mut out = Config::new();
        for (j, &k) in self.arity.iter().enumerate() {
            let v = match self.centres.get(comp) {
                // A kernel puts `hit` on the centre's value and `miss` on each other one.
                Some(centre) if rng.gen::<f64>() < self.kernel[j].0 - self.kernel[j].1 => centre[j],
                _ => rng.gen_range(0..k) as u16,
            };
            out.push(v);
        }
        out
    }
}

/// Optuna-style multivariate TPE restricted to the valid set. Deterministic per seed.
#[derive(Debug, Clone)]
pub struct Tpe {
    rng: ChaCha8Rng,
    cfg: TpeConfig,
}

impl Tpe {
    /// TPE with default (Optuna's) settings.
    pub fn new(seed: u64) -> Self {
        Self::with_config(seed, TpeConfig::default())
    }

    /// TPE with explicit settings.
    pub fn with_config(seed: u64, cfg: TpeConfig) -> Self {
        Self {
            rng: seeded_rng(seed, 7),
            cfg,
        }
    }

    /// The good and bad estimators of the history: the best `gamma` share of the successes is
    /// good, the other successes and all failures are bad.
    fn split(&self, ctx: &SearchContext<'_>) -> (Parzen, Parzen) {
        let space = ctx.space;
        let obs = ctx.history.observations();
        let n_good = ((self.cfg.gamma * obs.len() as f64).ceil() as usize)
            .min(self.cfg.max_good)
            .max(1);
        let mut ranked: Vec<(usize, f64)> = obs
            .iter()
            .enumerate()
            .map(|(i, o)| (i, o.value.unwrap_or(f64::INFINITY)))
            .collect();
        ranked.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        let mut good: Vec<usize> = ranked.iter().take(n_good).map(|r| r.0).collect();
        let mut bad: Vec<usize> = ranked.iter().skip(n_good).map(|r| r.0).collect();
        good.sort_unstable();
        bad.sort_unstable();
        let configs = |ix: &[usize]| -> Vec<Config> {
            ix.iter()
                .map(|&i| Config::from_slice(space.config(obs[i].id)))
                .collect()
        };
        (
            Parzen::new(space, configs(&good), self.cfg.prior_weight),
            Parzen::new(space, configs(&bad), self.cfg.prior_weight),
        )
    }

    /// The valid unmeasured candidate with the best density ratio, drawn from `good`.
    fn propose(
        &mut self,
        ctx: &SearchContext<'_>,
        good: &Parzen,
        bad: &Parzen,
        taken: &[ConfigId],
    ) -> Option<ConfigId> {
        let space = ctx.space;
        let mut best: Option<(f64, ConfigId)> = None;
        let mut found = 0;
        for _ in 0..self.cfg.candidates * 20 {
            if found >= self.cfg.candidates {
                break;
            }
            let c = good.sample(&mut self.rng);
            let Some(id) = space.id_of(&c) else {
                continue;
            };
            if ctx.history.is_measured(id) || taken.contains(&id) {
                continue;
            }
            found += 1;
            let ratio = good.density(&c).ln() - bad.density(&c).ln();
            if best.is_none_or(|(r, _)| ratio > r) {
                best = Some((ratio, id));
            }
        }
        match best {
            Some((_, id)) => Some(id),
            None => random_unmeasured(ctx, &mut self.rng, taken),
        }
    }
}

impl Strategy for Tpe {
    fn name(&self) -> &str {
        "tpe"
    }

    fn ask(&mut self, ctx: &SearchContext<'_>, n: usize) -> Vec<ConfigId> {
        let mut out: Vec<ConfigId> = Vec::with_capacity(n);
        let n_ok = ctx
            .history
            .observations()
            .iter()
            .filter(|o| o.value.is_some())
            .count();
        let model = (ctx.history.len() >= self.cfg.startup && n_ok > 0).then(|| self.split(ctx));
        while out.len() < n {
            let next = match &model {
                Some((good, bad)) => self.propose(ctx, good, bad, &out),
                None => random_unmeasured(ctx, &mut self.rng, &out),
            };
            match next {
                Some(id) => out.push(id),
                None => break,
            }
        }
        out
    }

    fn tell(&mut self, _: &SearchContext<'_>, _: &[Observation]) {}
}
