//! The built-in strategies (except Bayesian optimisation, in [`crate::bayes`]) and the registry.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::aoe_ga::AoeGa;
#[cfg(doc)]
use crate::aoe_ga::AoeGaConfig;
use crate::bayes::{BayesConfig, BayesOpt};
use crate::space::{Config, ConfigId, Neighbourhood};
use crate::strategy::{Observation, SearchContext, Strategy};

/// Names accepted by [`by_name`], the default first. `aoe-ga` is AOE's operator-tuner genetic
/// algorithm with AOE's default settings ([`AoeGaConfig::default`]: population 50, early stop
/// on; AOE runs it for 500 trials), `aoe-ga-hp` the same with AOE's high-performance settings
/// on 910 ([`AoeGaConfig::high_performance_910`]: population 150, no early stop; 1500 trials).
/// The budget is always the caller's.
pub const STRATEGY_NAMES: [&str; 9] = [
    "ensemble",
    "bayes_opt",
    "tpe",
    "genetic",
    "annealing",
    "random",
    "exhaustive",
    "aoe-ga",
    "aoe-ga-hp",
];

/// Builds a built-in strategy by name, seeded; `None` for an unknown name.
pub fn by_name(name: &str, seed: u64) -> Option<Box<dyn Strategy>> {
    configured(name, seed, &BayesConfig::default())
}

/// [`by_name`] with the Bayesian model of `bayes_opt` and `ensemble` configured by `bayes`
/// (other strategies have none); the public way in is
/// [`transfer::build`](crate::transfer::build).
pub(crate) fn configured(name: &str, seed: u64, bayes: &BayesConfig) -> Option<Box<dyn Strategy>> {
    if let Some(ga) = AoeGa::by_name(name, seed) {
        return Some(Box::new(ga));
    }
    Some(match name {
        "random" => Box::new(RandomSearch::new(seed)),
        "exhaustive" => Box::new(Exhaustive::new(seed)),
        "annealing" => Box::new(Annealing::new(seed)),
        "genetic" => Box::new(Genetic::new(seed)),
        "bayes_opt" => Box::new(BayesOpt::with_config(seed, bayes.clone())),
        "tpe" => Box::new(crate::tpe::Tpe::new(seed)),
        "ensemble" => Box::new(crate::ensemble::Ensemble::with_bayes(seed, None, bayes)),
        _ => return None,
    })
}

/// A seeded RNG for strategy `salt` under `seed`, so that arms of an ensemble draw independently.
pub fn seeded_rng(seed: u64, salt: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// A uniformly drawn unmeasured configuration not in `exclude`, or `None` if there is none.
pub fn random_unmeasured(
    ctx: &SearchContext<'_>,
    rng: &mut ChaCha8Rng,
    exclude: &[ConfigId],
) -> Option<ConfigId> {
    let n = ctx.space.len();
    if ctx.history.remaining() <= exclude.len() {
        return None;
    }
    for _ in 0..64 {
        let id = ctx.space.sample(rng);
        if !ctx.history.is_measured(id) && !exclude.contains(&id) {
            return Some(id);
        }
    }
    let free: Vec<ConfigId> = (0..n as ConfigId)
        .filter(|&id| !ctx.history.is_measured(id) && !exclude.contains(&id))
        .collect();
    free.choose(rng).copied()
}

/// Fills `out` up to `n` with random unmeasured configurations.
fn fill_random(ctx: &SearchContext<'_>, rng: &mut ChaCha8Rng, n: usize, out: &mut Vec<ConfigId>) {
    while out.len() < n {
        match random_unmeasured(ctx, rng, out) {
            Some(id) => out.push(id),
            None => break,
        }
    }
}

/// Uniform random sampling without repeats.
#[derive(Debug, Clone)]
pub struct RandomSearch {
    rng: ChaCha8Rng,
}

impl RandomSearch {
    /// A random search with its own seed.
    pub fn new(seed: u64) -> Self {
        Self {
            rng: seeded_rng(seed, 1),
        }
    }
}

impl Strategy for RandomSearch {
    fn name(&self) -> &str {
        "random"
    }

    fn ask(&mut self, ctx: &SearchContext<'_>, n: usize) -> Vec<ConfigId> {
        let mut out = Vec::with_capacity(n);
        fill_random(ctx, &mut self.rng, n, &mut out);
        out
    }

    fn tell(&mut self, _: &SearchContext<'_>, _: &[Observation]) {}
}

/// Every configuration once, in an order that spreads early samples over the whole valid set:
/// a stride through the (lexicographically ordered) valid set that is coprime with its size
/// and close to the golden ratio of it, from a seeded start.
#[derive(Debug, Clone)]
pub struct Exhaustive {
    seed: u64,
    next: u64,
    start: u64,
    step: u64,
}

impl Exhaustive {
    /// An exhaustive search whose start point depends on `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            next: 0,
            start: 0,
            step: 0,
        }
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl Strategy for Exhaustive {
    fn name(&self) -> &str {
        "exhaustive"
    }

    fn ask(&mut self, ctx: &SearchContext<'_>, n: usize) -> Vec<ConfigId> {
        let len = ctx.space.len() as u64;
        if len == 0 {
            return Vec::new();
        }
        if self.step == 0 {
            let mut step = ((len as f64) * 0.618_033_988_7).round().max(1.0) as u64;
            while gcd(step, len) != 1 {
                step += 1;
            }
            self.step = step;
            self.start = seeded_rng(self.seed, 2).gen_range(0..len);
        }
        let mut out = Vec::with_capacity(n);
        while out.len() < n && self.next < len {
            let id = ((self.start + self.next * self.step) % len) as ConfigId;
            self.next += 1;
            if !ctx.history.is_measured(id) {
                out.push(id);
            }
        }
        out
    }

    fn tell(&mut self, _: &SearchContext<'_>, _: &[Observation]) {}
}

/// Simulated annealing over the valid neighbourhood graph, restarted as an iterated local
/// search: when every neighbour of the current point is measured, it kicks the best point
/// found by a short random walk and continues from there.
#[derive(Debug, Clone)]
pub struct Annealing {
    rng: ChaCha8Rng,
    current: Option<(ConfigId, f64)>,
    temperature: f64,
    cooling: f64,
}

impl Annealing {
    /// An annealer with its own seed (initial temperature 0.5 in relative objective units,
    /// cooling 3 % per measurement).
    pub fn new(seed: u64) -> Self {
        Self {
            rng: seeded_rng(seed, 3),
            current: None,
            temperature: 0.5,
            cooling: 0.97,
        }
    }

    fn kick(
        &mut self,
        ctx: &SearchContext<'_>,
        from: ConfigId,
        taken: &[ConfigId],
    ) -> Option<ConfigId> {
        for _ in 0..8 {
            let mut at = from;
            let steps = self.rng.gen_range(2..=4);
            for _ in 0..steps {
                let ns = ctx.space.neighbours(at, Neighbourhood::Hamming);
                if let Some(&n) = ns.choose(&mut self.rng) {
                    at = n;
                }
            }
            if !ctx.history.is_measured(at) && !taken.contains(&at) {
                return Some(at);
            }
        }
        None
    }
}

impl Strategy for Annealing {
    fn name(&self) -> &str {
        "annealing"
    }

    fn ask(&mut self, ctx: &SearchContext<'_>, n: usize) -> Vec<ConfigId> {
        let mut out = Vec::with_capacity(n);
        let Some((cur, _)) = self.current else {
            fill_random(ctx, &mut self.rng, n, &mut out);
            return out;
        };
        let mut free: Vec<ConfigId> = ctx
            .space
            .neighbours(cur, Neighbourhood::Hamming)
            .into_iter()
            .filter(|&id| !ctx.history.is_measured(id))
            .collect();
        free.shuffle(&mut self.rng);
        out.extend(free.into_iter().take(n));
        while out.len() < n {
            let from = ctx.history.best().map(|b| b.id).unwrap_or(cur);
            match self.kick(ctx, from, &out) {
                Some(id) => out.push(id),
                None => match random_unmeasured(ctx, &mut self.rng, &out) {
                    Some(id) => out.push(id),
                    None => break,
                },
            }
        }
        out
    }

    fn tell(&mut self, _ctx: &SearchContext<'_>, results: &[Observation]) {
        for r in results {
            let Some(v) = r.value else { continue };
            match self.current {
                None => self.current = Some((r.id, v)),
                Some((_, cv)) => {
                    let delta = (v - cv) / cv.abs().max(f64::MIN_POSITIVE);
                    let accept = delta <= 0.0
                        || self.rng.gen::<f64>() < (-delta / self.temperature.max(1e-9)).exp();
                    if accept {
                        self.current = Some((r.id, v));
                    }
                }
            }
            self.temperature *= self.cooling;
        }
    }
}

/// A genetic algorithm: tournament selection from the best measured configurations, uniform
/// crossover, per-gene mutation, and repair of children that violate restrictions (genes are
/// reverted to a parent's until the child is valid, then nudged to an unmeasured neighbour).
#[derive(Debug, Clone)]
pub struct Genetic {
    rng: ChaCha8Rng,
    population: usize,
}

impl Genetic {
    /// A genetic search with its own seed and a population of 20.
    pub fn new(seed: u64) -> Self {
        Self {
            rng: seeded_rng(seed, 4),
            population: 20,
        }
    }

    fn child(
        &mut self,
        ctx: &SearchContext<'_>,
        pop: &[(ConfigId, f64)],
        taken: &[ConfigId],
    ) -> Option<ConfigId> {
        let space = ctx.space;
        let pick = |rng: &mut ChaCha8Rng| {
            let a = pop[rng.gen_range(0..pop.len())];
            let b = pop[rng.gen_range(0..pop.len())];
            if a.1 <= b.1 {
                a.0
            } else {
                b.0
            }
        };
        let pa = pick(&mut self.rng);
        let pb = pick(&mut self.rng);
        let ca = space.config(pa);
        let cb = space.config(pb);
        let d = ca.len();
        let mut c: Config = ca
            .iter()
            .zip(cb)
            .map(|(&x, &y)| if self.rng.gen_bool(0.5) { x } else { y })
            .collect();
        let pm = 1.0 / d.max(1) as f64;
        for (j, g) in c.iter_mut().enumerate() {
            if self.rng.gen::<f64>() < pm {
                let k = space.params()[j].values.len() as u16;
                *g = if self.rng.gen_bool(0.5) {
                    self.rng.gen_range(0..k)
                } else if self.rng.gen_bool(0.5) {
                    g.saturating_add(1).min(k - 1)
                } else {
                    g.saturating_sub(1)
                };
            }
        }
        // Repair: revert differing genes to parent a's, in random order, until valid.
        let mut id = space.id_of(&c);
        if id.is_none() {
            let mut genes: Vec<usize> = (0..d).filter(|&j| c[j] != ca[j]).collect();
            genes.shuffle(&mut self.rng);
            for j in genes {
                c[j] = ca[j];
                id = space.id_of(&c);
                if id.is_some() {
                    break;
                }
            }
        }
        let id = id.unwrap_or(pa);
        if !ctx.history.is_measured(id) && !taken.contains(&id) {
            return Some(id);
        }
        let free: Vec<ConfigId> = space
            .neighbours(id, Neighbourhood::Hamming)
            .into_iter()
            .filter(|&n| !ctx.history.is_measured(n) && !taken.contains(&n))
            .collect();
        free.choose(&mut self.rng).copied()
    }
}

impl Strategy for Genetic {
    fn name(&self) -> &str {
        "genetic"
    }

    fn ask(&mut self, ctx: &SearchContext<'_>, n: usize) -> Vec<ConfigId> {
        let mut out = Vec::with_capacity(n);
        let mut pop: Vec<(ConfigId, f64)> = ctx
            .history
            .observations()
            .iter()
            .filter_map(|o| o.value.map(|v| (o.id, v)))
            .collect();
        if pop.len() < self.population / 2 {
            fill_random(ctx, &mut self.rng, n, &mut out);
            return out;
        }
        pop.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        pop.truncate(self.population);
        let mut tries = 0;
        while out.len() < n && tries < 50 * n {
            tries += 1;
            if let Some(id) = self.child(ctx, &pop, &out) {
                out.push(id);
            }
        }
        fill_random(ctx, &mut self.rng, n, &mut out);
        out
    }

    fn tell(&mut self, _: &SearchContext<'_>, _: &[Observation]) {}
}
