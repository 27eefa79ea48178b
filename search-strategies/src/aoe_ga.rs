//! `aoe-ga`: the genetic algorithm of Huawei AOE's operator tuner (CANN 8.1, `auto_tune`'s GA
//! tuner), reimplemented from its description on any constrained [`Space`] (genes = the
//! space's parameters, a gene's alleles = the parameter's value indices), in ask/tell form.
//!
//! # Contract
//!
//! These are the rules the strategy follows; the tests in this module and in
//! `tests/it/aoe_ga.rs` check them.
//!
//! - **Settings** ([`AoeGaConfig`]): population 50 with AOE's default of 500 trials per operator
//!   ([`AoeGaConfig::default`]); the "high performance" settings are 100/1000 on 310P
//!   ([`AoeGaConfig::high_performance_310p`]) and 150/1500 on 910
//!   ([`AoeGaConfig::high_performance_910`]). Always 2 elites, crossover rates Pc1 = 0.6,
//!   Pc2 = 0.9, mutation rates Pm1 = 0.01, Pm2 = 0.1, and at most 200 breeding rounds per child.
//!   The trial count is *not* enforced here: the caller's budget (the [`Driver`]'s) is, and
//!   [`AoeGaConfig::trials`] is what a caller that wants AOE's behaviour passes as that budget.
//! - **Early stop** (optional, [`EarlyStop`]; on in the default settings, off in both
//!   high-performance ones): when a generation ends, the best measured time is compared with
//!   the best when the previous generation ended; after `generations` (3) consecutive
//!   generations that each changed it by less than `tolerance` (3 %) relative, the strategy
//!   stops: `ask` returns nothing from then on, and the driver ends with
//!   [`StopReason::StrategyExhausted`](crate::StopReason::StrategyExhausted). This is the only
//!   case in which it proposes nothing while unmeasured configurations are left.
//! - **First generation**: the seeds ([`AoeGa::with_seeds`]; AOE seeds the bank's old tiling for
//!   the shape and the default tiling, here any caller-given configurations, and through
//!   [`by_name_with_prior`](crate::transfer::by_name_with_prior) a transfer prior's seeds),
//!   first and in order, those not yet measured, then a uniform sample without repeats of the
//!   unmeasured valid configurations up to the population size.
//! - **No repeats**: no configuration is proposed twice, nor one already measured by anyone
//!   (every proposal is unmeasured, as the [`Strategy`] contract asks).
//! - **Parents**: when a generation is used up, the next one is bred from a parent pool made of
//!   the generation's members that were measured successfully plus the elites (the 2 best
//!   successful measurements so far, whoever proposed them), as a set (an elite that is also a
//!   member is in the pool once). Failed measurements are never parents. With
//!   `score = time / max(time)` over the pool, a parent is drawn with probability proportional
//!   to `1 − score / Σ score` ([`selection_weights`]); two are drawn, without replacement
//!   ([`draw_two`]). A pool of one is its only parent twice.
//! - **Adaptive rates** (Srinivas and Patnaik; [`adaptive_rates`]): with `s` the two parents'
//!   mean score and `avg`, `min` the mean and minimum score over the pool, if `s ≤ avg` then
//!   `pc = Pc2 − (Pc2 − Pc1)(s − avg)/(min − avg)` and `pm = Pm2 − (Pm2 − Pm1)(s − avg)/(min − avg)`,
//!   else `pc = Pc2` and `pm = Pm2`. When `min == avg` (every score equal; then `s == avg`) the
//!   ratio is taken as 0, so `pc = Pc2` and `pm = Pm2`: the limit of the `s ≤ avg` branch at
//!   `s = avg`, and the same rates as any pool whose parents are average.
//! - **Crossover**: with probability `pc`, a one-point crossover: the point is drawn uniformly
//!   among the `d − 1` positions between the `d` genes; the child is the first parent's head
//!   and the second's tail, or, if that is not a valid configuration, the other order; if both
//!   are invalid, another point is drawn among those not tried; if every point gives two invalid
//!   children (or `d < 2`), the better parent is copied. Without crossover, the better parent
//!   (the lower time) is copied.
//! - **Mutation**: then each gene, with probability `pm`, moves to another of its values, drawn
//!   uniformly among those that keep the configuration valid and unmeasured (and not already in
//!   the generation being bred); a gene with no such value stays.
//! - **Give up**: a round (selection, crossover, mutation) whose child is already measured or
//!   already in the generation being bred is retried; after 200 rounds without a new valid
//!   unmeasured configuration, a uniformly drawn unmeasured one is taken instead. A generation is
//!   shorter than the population only when the space has no unmeasured configuration left.
//! - **Batches**: a generation is proposed in order, over as many asks as it takes; an ask that
//!   needs more than the generation has left breeds the next generation at once, from the
//!   members measured so far (a member still being measured, asked in the same batch, is then
//!   not a parent). With a batch that divides the population, or a batch of 1, this never
//!   happens.
//! - **Determinism**: everything random comes from one seeded RNG; hash maps are only looked up.
//!
//! [`Driver`]: crate::Driver

use std::collections::VecDeque;

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::space::{Config, ConfigId, Space};
use crate::strategies::{random_unmeasured, seeded_rng};
use crate::strategy::{History, Observation, SearchContext, Strategy};

/// AOE's early stop: stop when the best time changed by less than `tolerance` (relative) in each
/// of `generations` consecutive generations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EarlyStop {
    /// Relative change of the best time below which a generation counts as flat (AOE: 0.03).
    pub tolerance: f64,
    /// Consecutive flat generations that stop the search (AOE: 3).
    pub generations: usize,
}

/// The settings of [`AoeGa`]; the presets are AOE's. See the module docs for what each does.
#[derive(Debug, Clone, PartialEq)]
pub struct AoeGaConfig {
    /// Configurations per generation (AOE: 50; high performance: 100 on 310P, 150 on 910).
    pub population: usize,
    /// AOE's trials per operator for these settings (500; 1000; 1500). Informational: the
    /// strategy never counts trials, the caller's budget does; a caller reproducing AOE passes
    /// this as the budget.
    pub trials: usize,
    /// How many best measurements join every parent pool (AOE: 2).
    pub elites: usize,
    /// Crossover rate for the best parents (AOE: 0.6).
    pub pc1: f64,
    /// Crossover rate for average or worse parents (AOE: 0.9).
    pub pc2: f64,
    /// Mutation rate per gene for the best parents (AOE: 0.01).
    pub pm1: f64,
    /// Mutation rate per gene for average or worse parents (AOE: 0.1).
    pub pm2: f64,
    /// The early stop, if on (AOE's default settings: 3 % over 3 generations; off in the
    /// high-performance settings).
    pub early_stop: Option<EarlyStop>,
    /// Breeding rounds per child before a random unmeasured configuration is taken (AOE: 200).
    pub max_rounds: usize,
}

impl Default for AoeGaConfig {
    /// AOE's default settings: population 50, 500 trials, early stop on.
    fn default() -> Self {
        Self {
            population: 50,
            trials: 500,
            elites: 2,
            pc1: 0.6,
            pc2: 0.9,
            pm1: 0.01,
            pm2: 0.1,
            early_stop: Some(EarlyStop {
                tolerance: 0.03,
                generations: 3,
            }),
            max_rounds: 200,
        }
    }
}

impl AoeGaConfig {
    /// AOE's high-performance settings on 310P: population 100, 1000 trials, no early stop.
    pub fn high_performance_310p() -> Self {
        Self {
            population: 100,
            trials: 1000,
            early_stop: None,
            ..Self::default()
        }
    }

    /// AOE's high-performance settings on 910: population 150, 1500 trials, no early stop.
    pub fn high_performance_910() -> Self {
        Self {
            population: 150,
            trials: 1500,
            early_stop: None,
            ..Self::default()
        }
    }

    /// These settings with the early stop off.
    pub fn without_early_stop(self) -> Self {
        Self {
            early_stop: None,
            ..self
        }
    }
}

/// The crossover and mutation rates `(pc, pm)` for parents of mean score `s` in a pool whose
/// scores have mean `avg` and minimum `min` (Srinivas and Patnaik's adaptive rates, as AOE
/// uses them; see the module docs): `(Pc1, Pm1)` at `s = min`, `(Pc2, Pm2)` at `s = avg` and
/// above, linear in between; `(Pc2, Pm2)` when `min == avg`.
pub fn adaptive_rates(config: &AoeGaConfig, s: f64, avg: f64, min: f64) -> (f64, f64) {
    if s > avg {
        return (config.pc2, config.pm2);
    }
    let ratio = if min < avg {
        (s - avg) / (min - avg)
    } else {
        0.0
    };
    (
        config.pc2 - (config.pc2 - config.pc1) * ratio,
        config.pm2 - (config.pm2 - config.pm1) * ratio,
    )
}

/// Each time's score, `time / max(time)` (all 1 when the maximum is not positive).
pub fn scores(times: &[f64]) -> Vec<f64> {
    let max = times.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if max > 0.0 && max.is_finite() {
        times.iter().map(|t| t / max).collect()
    } else {
        vec![1.0; times.len()]
    }
}

/// The selection weights of a parent pool with these times: `1 − score / Σ score`, with
/// `score = time / max(time)`. A parent is drawn with probability proportional to its weight.
pub fn selection_weights(times: &[f64]) -> Vec<f64> {
    let s = scores(times);
    let total: f64 = s.iter().sum();
    s.iter()
        .map(|x| if total > 0.0 { 1.0 - x / total } else { 1.0 })
        .collect()
}

/// Two distinct indices drawn without replacement with probability proportional to `weights`
/// (the second among the rest, by their weights); uniform when the weights left sum to 0. With
/// one weight, `(0, 0)`. Panics on an empty slice.
pub fn draw_two(weights: &[f64], rng: &mut ChaCha8Rng) -> (usize, usize) {
    assert!(!weights.is_empty(), "draw_two needs a parent");
    let first = draw(weights, None, rng);
    if weights.len() == 1 {
        return (first, first);
    }
    (first, draw(weights, Some(first), rng))
}

/// One index by weight, skipping `skip`; uniform over the others when their weights sum to 0.
fn draw(weights: &[f64], skip: Option<usize>, rng: &mut ChaCha8Rng) -> usize {
    let live = |i: usize| Some(i) != skip;
    let total: f64 = (0..weights.len())
        .filter(|&i| live(i))
        .map(|i| weights[i].max(0.0))
        .sum();
    let candidates: Vec<usize> = (0..weights.len()).filter(|&i| live(i)).collect();
    if total <= 0.0 || !total.is_finite() {
        return *candidates.choose(rng).expect("a candidate");
    }
    let mut x = rng.gen::<f64>() * total;
    for &i in &candidates {
        let w = weights[i].max(0.0);
        if x < w {
            return i;
        }
        x -= w;
    }
    // Rounding: the last candidate with a positive weight.
    *candidates
        .iter()
        .rev()
        .find(|&&i| weights[i] > 0.0)
        .expect("a positive weight")
}

/// The parent pool: `members` (a generation's successful measurements) plus `elites`, as a set
/// (by configuration, first occurrence kept), members first.
pub fn parent_pool(
    members: &[(ConfigId, f64)],
    elites: &[(ConfigId, f64)],
) -> Vec<(ConfigId, f64)> {
    let mut pool: Vec<(ConfigId, f64)> = Vec::with_capacity(members.len() + elites.len());
    for &m in members.iter().chain(elites) {
        if !pool.iter().any(|p| p.0 == m.0) {
            pool.push(m);
        }
    }
    pool
}

/// The `k` best successful measurements of `history` (ties by id), best first.
pub fn elites(history: &History, k: usize) -> Vec<(ConfigId, f64)> {
    let mut all: Vec<(ConfigId, f64)> = history
        .observations()
        .iter()
        .filter_map(|o| o.value.map(|v| (o.id, v)))
        .collect();
    all.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    all.truncate(k);
    all
}

/// AOE's operator-tuner genetic algorithm; see the module docs for its rules.
#[derive(Debug, Clone)]
pub struct AoeGa {
    name: &'static str,
    config: AoeGaConfig,
    rng: ChaCha8Rng,
    seeds: Vec<ConfigId>,
    /// The space size the seeds' ids belong to, when known (a prior's); other spaces ignore them.
    seeds_space_len: Option<usize>,
    /// The current generation's members, in the order proposed.
    members: Vec<ConfigId>,
    /// Members not yet proposed.
    plan: VecDeque<ConfigId>,
    /// Generations started (0 before the first ask).
    generation: usize,
    /// The best time when the last generation ended, for the early stop.
    last_best: Option<f64>,
    /// Consecutive flat generations.
    flat: usize,
    stopped: bool,
    /// The parent pool of the last generation bred (for tests and diagnostics).
    last_pool: Vec<(ConfigId, f64)>,
    /// Children taken at random after `max_rounds` failed rounds.
    random_children: usize,
}

impl AoeGa {
    /// An AOE GA with its own seed and these settings.
    pub fn new(seed: u64, config: AoeGaConfig) -> Self {
        Self {
            name: "aoe-ga",
            config,
            rng: seeded_rng(seed, 38),
            seeds: Vec::new(),
            seeds_space_len: None,
            members: Vec::new(),
            plan: VecDeque::new(),
            generation: 0,
            last_best: None,
            flat: 0,
            stopped: false,
            last_pool: Vec::new(),
            random_children: 0,
        }
    }

    /// The same strategy reporting `name` (`"aoe-ga-hp"` for the registry's high-performance
    /// preset).
    pub fn named(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    /// Puts `seeds` (ids of the space searched) first in the first generation, in order (AOE:
    /// the bank's old tiling for the shape, then the default tiling). Ids outside the space,
    /// repeats and configurations already measured are skipped; at most a population of them.
    pub fn with_seeds(mut self, seeds: impl IntoIterator<Item = ConfigId>) -> Self {
        self.seeds.extend(seeds);
        self
    }

    /// [`AoeGa::with_seeds`] for ids of a space of `space_len` configurations: the seeds are
    /// used only when the space searched has that size (a transfer prior built for another
    /// space is ignored).
    pub fn with_seeds_for(
        self,
        space_len: usize,
        seeds: impl IntoIterator<Item = ConfigId>,
    ) -> Self {
        let mut s = self.with_seeds(seeds);
        s.seeds_space_len = Some(space_len);
        s
    }

    /// The settings.
    pub fn config(&self) -> &AoeGaConfig {
        &self.config
    }

    /// Generations started so far (the first ask starts the first).
    pub fn generation(&self) -> usize {
        self.generation
    }

    /// True once the early stop has ended the search.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// The current generation's members, in the order proposed.
    pub fn members(&self) -> &[ConfigId] {
        &self.members
    }

    /// The parent pool the current generation was bred from (`(id, time)`; empty for the first
    /// generation, or when nothing had been measured successfully).
    pub fn last_pool(&self) -> &[(ConfigId, f64)] {
        &self.last_pool
    }

    /// How many children of the generations after the first were taken at random because
    /// `max_rounds` breeding rounds gave no new valid configuration (a diagnostic: breeding
    /// that works on a space keeps it small).
    pub fn random_children(&self) -> usize {
        self.random_children
    }

    /// The first generation: seeds, then a uniform sample of unmeasured configurations.
    fn first_generation(&mut self, ctx: &SearchContext<'_>, taken: &[ConfigId]) -> Vec<ConfigId> {
        let n = ctx.space.len();
        let pop = self.config.population.max(1);
        let mut out: Vec<ConfigId> = Vec::with_capacity(pop);
        if self.seeds_space_len.is_none_or(|l| l == n) {
            for &id in &self.seeds {
                if out.len() < pop
                    && (id as usize) < n
                    && !ctx.history.is_measured(id)
                    && !taken.contains(&id)
                    && !out.contains(&id)
                {
                    out.push(id);
                }
            }
        }
        let mut exclude: Vec<ConfigId> = taken.to_vec();
        exclude.extend(&out);
        while out.len() < pop {
            match random_unmeasured(ctx, &mut self.rng, &exclude) {
                Some(id) => {
                    out.push(id);
                    exclude.push(id);
                }
                None => break,
            }
        }
        out
    }

    /// Updates the early stop with the best time at the end of a generation; true to stop.
    fn early_stop(&mut self, best: Option<f64>) -> bool {
        let Some(rule) = self.config.early_stop else {
            return false;
        };
        if let (Some(prev), Some(now)) = (self.last_best, best) {
            let change = (prev - now).abs() / prev.abs().max(f64::MIN_POSITIVE);
            if change < rule.tolerance {
                self.flat += 1;
            } else {
                self.flat = 0;
            }
        }
        if best.is_some() {
            self.last_best = best;
        }
        self.flat >= rule.generations
    }

    /// Breeds the next generation (see the module docs); `taken` are ids proposed in this ask.
    fn next_generation(&mut self, ctx: &SearchContext<'_>, taken: &[ConfigId]) -> Vec<ConfigId> {
        let values: FxHashMap<ConfigId, f64> = ctx
            .history
            .observations()
            .iter()
            .filter_map(|o| o.value.map(|v| (o.id, v)))
            .collect();
        let members: Vec<(ConfigId, f64)> = self
            .members
            .iter()
            .filter_map(|id| values.get(id).map(|&v| (*id, v)))
            .collect();
        let elites = elites(ctx.history, self.config.elites);
        if self.early_stop(elites.first().map(|e| e.1)) {
            self.stopped = true;
            return Vec::new();
        }
        let pool = parent_pool(&members, &elites);
        let pop = self.config.population.max(1);
        let mut out: Vec<ConfigId> = Vec::with_capacity(pop);
        let mut planned: FxHashSet<ConfigId> = taken.iter().copied().collect();
        if !pool.is_empty() {
            let times: Vec<f64> = pool.iter().map(|p| p.1).collect();
            let sc = scores(&times);
            let weights = selection_weights(&times);
            let avg = sc.iter().sum::<f64>() / sc.len() as f64;
            let min = sc.iter().copied().fold(f64::INFINITY, f64::min);
            let breeding = Breeding {
                space: ctx.space,
                history: ctx.history,
                pool: &pool,
                scores: &sc,
                weights: &weights,
                avg,
                min,
            };
            while out.len() < pop && ctx.history.remaining() > planned.len() {
                let mut child = None;
                for _ in 0..self.config.max_rounds {
                    if let Some(id) = self.round(&breeding, &planned) {
                        child = Some(id);
                        break;
                    }
                }
                if child.is_none() {
                    self.random_children += 1;
                }
                let Some(id) = child.or_else(|| self.random_free(ctx, &planned)) else {
                    break;
                };
                planned.insert(id);
                out.push(id);
            }
        } else {
            // Nothing measured successfully yet: a uniform sample, as in the first generation.
            while out.len() < pop {
                let Some(id) = self.random_free(ctx, &planned) else {
                    break;
                };
                planned.insert(id);
                out.push(id);
            }
        }
        self.last_pool = pool;
        out
    }

    /// A uniformly drawn unmeasured configuration not in `planned`.
    fn random_free(
        &mut self,
        ctx: &SearchContext<'_>,
        planned: &FxHashSet<ConfigId>,
    ) -> Option<ConfigId> {
        // `random_unmeasured` takes a slice; keep its order deterministic.
        let mut exclude: Vec<ConfigId> = planned.iter().copied().collect();
        exclude.sort_unstable();
        random_unmeasured(ctx, &mut self.rng, &exclude)
    }

    /// One breeding round: selection, crossover, mutation. The child if it is valid, unmeasured
    /// and not planned.
    fn round(&mut self, b: &Breeding<'_>, planned: &FxHashSet<ConfigId>) -> Option<ConfigId> {
        let space = b.space;
        let free = |id: ConfigId| !b.history.is_measured(id) && !planned.contains(&id);
        let (i, j) = draw_two(b.weights, &mut self.rng);
        let s = (b.scores[i] + b.scores[j]) / 2.0;
        let (pc, pm) = adaptive_rates(&self.config, s, b.avg, b.min);
        let (a, c) = (b.pool[i], b.pool[j]);
        let better = if a.1 <= c.1 { a.0 } else { c.0 };
        let crossed = if self.rng.gen::<f64>() < pc {
            self.crossover(space, space.config(a.0), space.config(c.0))
        } else {
            None
        };
        let mut child = crossed.unwrap_or_else(|| Config::from_slice(space.config(better)));
        for g in 0..child.len() {
            if self.rng.gen::<f64>() >= pm {
                continue;
            }
            let orig = child[g];
            let k = space.params()[g].values.len() as u16;
            let mut options: Vec<u16> = Vec::new();
            for v in (0..k).filter(|&v| v != orig) {
                child[g] = v;
                if space.id_of(&child).is_some_and(free) {
                    options.push(v);
                }
            }
            child[g] = options.choose(&mut self.rng).copied().unwrap_or(orig);
        }
        space.id_of(&child).filter(|&id| free(id))
    }

    /// A valid one-point crossover child of `a` and `b` (see the module docs), or `None` when
    /// every point gives two invalid children or there are fewer than two genes.
    fn crossover(&mut self, space: &Space, a: &[u16], b: &[u16]) -> Option<Config> {
        let d = a.len();
        if d < 2 {
            return None;
        }
        let mut points: Vec<usize> = (1..d).collect();
        points.shuffle(&mut self.rng);
        for k in points {
            for (head, tail) in [(a, b), (b, a)] {
                let child: Config = head[..k].iter().chain(&tail[k..]).copied().collect();
                if space.id_of(&child).is_some() {
                    return Some(child);
                }
            }
        }
        None
    }
}

/// What a breeding round reads.
struct Breeding<'a> {
    space: &'a Space,
    history: &'a History,
    pool: &'a [(ConfigId, f64)],
    scores: &'a [f64],
    weights: &'a [f64],
    avg: f64,
    min: f64,
}

impl Strategy for AoeGa {
    fn name(&self) -> &str {
        self.name
    }

    fn ask(&mut self, ctx: &SearchContext<'_>, n: usize) -> Vec<ConfigId> {
        let mut out: Vec<ConfigId> = Vec::with_capacity(n);
        while out.len() < n && !self.stopped {
            if let Some(id) = self.plan.pop_front() {
                if !ctx.history.is_measured(id) && !out.contains(&id) {
                    out.push(id);
                }
                continue;
            }
            if ctx.history.remaining() <= out.len() {
                break;
            }
            let next = if self.generation == 0 {
                self.first_generation(ctx, &out)
            } else {
                self.next_generation(ctx, &out)
            };
            if next.is_empty() {
                break;
            }
            self.generation += 1;
            self.members = next.clone();
            self.plan = next.into();
        }
        out
    }

    fn tell(&mut self, _: &SearchContext<'_>, _: &[Observation]) {
        // Every result is in the history the next ask reads.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::Parameter;
    use crate::strategy::Driver;

    fn space() -> Space {
        Space::enumerate(
            vec![
                Parameter::ints("a", &[1, 2, 3, 4, 5, 6, 7, 8]),
                Parameter::ints("b", &[1, 2, 3, 4, 5, 6, 7, 8]),
                Parameter::ints("c", &[0, 1, 2, 3]),
                Parameter::ints("e", &[1, 2, 4]),
            ],
            &["a * b <= 40".to_string(), "c <= e".to_string()],
            &Default::default(),
        )
        .unwrap()
    }

    fn objective(space: &Space, id: ConfigId) -> Option<f64> {
        let c = space.config(id);
        if c[0] == 7 && c[1] == 0 {
            return None;
        }
        Some(
            1.0 + (f64::from(c[0]) - 5.0).powi(2)
                + (f64::from(c[1]) - 2.0).powi(2)
                + f64::from(c[2])
                + 0.5 * f64::from(c[3]),
        )
    }

    #[test]
    fn the_best_two_are_in_every_parent_pool() {
        let s = space();
        let mut ga = AoeGa::new(5, AoeGaConfig::default().without_early_stop());
        let mut history = History::new(s.len());
        let mut generation = 0;
        let mut checked = 0;
        let mut elite_from_earlier_generation = false;
        while history.len() < 400 {
            let before = elites(&history, 2);
            let previous_members = ga.members().to_vec();
            let batch = ga.ask(
                &SearchContext {
                    space: &s,
                    history: &history,
                },
                1,
            );
            let Some(&id) = batch.first() else { break };
            if ga.generation() != generation {
                generation = ga.generation();
                if generation > 1 {
                    let pool: Vec<ConfigId> = ga.last_pool().iter().map(|p| p.0).collect();
                    assert_eq!(before.len(), 2);
                    for e in &before {
                        assert!(
                            pool.contains(&e.0),
                            "generation {generation}: elite {e:?} not among the parents"
                        );
                        elite_from_earlier_generation |= !previous_members.contains(&e.0);
                    }
                    // The pool is exactly the measured members plus the elites.
                    let mut expected: Vec<ConfigId> = previous_members
                        .iter()
                        .copied()
                        .filter(|&m| objective(&s, m).is_some())
                        .collect();
                    for e in &before {
                        if !expected.contains(&e.0) {
                            expected.push(e.0);
                        }
                    }
                    assert_eq!(pool, expected, "generation {generation}");
                    checked += 1;
                }
            }
            let obs = Observation {
                id,
                value: objective(&s, id),
            };
            assert!(history.record(obs), "asked twice: {id}");
            ga.tell(
                &SearchContext {
                    space: &s,
                    history: &history,
                },
                &[obs],
            );
        }
        assert!(checked >= 5, "only {checked} generations bred");
        assert!(
            elite_from_earlier_generation,
            "no elite came from an earlier generation: the test did not exercise elitism"
        );
    }

    #[test]
    fn early_stop_after_three_flat_generations() {
        let mut ga = AoeGa::new(1, AoeGaConfig::default());
        assert!(!ga.early_stop(Some(100.0)), "first generation");
        assert!(!ga.early_stop(Some(98.0)), "flat 1");
        assert!(!ga.early_stop(Some(96.0)), "flat 2 (2.04 %)");
        assert!(!ga.early_stop(Some(90.0)), "6.25 % resets");
        assert!(!ga.early_stop(Some(89.0)), "flat 1");
        assert!(!ga.early_stop(Some(89.0)), "flat 2");
        assert!(ga.early_stop(Some(88.9)), "flat 3 stops");
        let mut hp = AoeGa::new(1, AoeGaConfig::high_performance_910());
        for _ in 0..10 {
            assert!(!hp.early_stop(Some(1.0)), "no early stop in the 910 preset");
        }
    }

    #[test]
    fn early_stop_ends_a_flat_search_and_hp_runs_on() {
        // A flat objective: every generation changes the best by 0 %.
        let s = space();
        let mut obj = |_: &Space, _: ConfigId| Some(1.0);
        let mut ga = AoeGa::new(2, AoeGaConfig::default());
        let out = Driver::new(s.len()).run(&s, &mut ga, &mut obj);
        assert!(ga.stopped());
        assert_eq!(out.stop, crate::StopReason::StrategyExhausted);
        // Ends after generation 1 (records the best) and 3 flat ones: 4 generations.
        assert_eq!(out.history.len(), 4 * 50);
        let mut ga = AoeGa::new(2, AoeGaConfig::default().without_early_stop());
        let out = Driver::new(s.len()).run(&s, &mut ga, &mut obj);
        assert_eq!(out.history.len(), s.len());
    }

    #[test]
    fn crossover_children_are_valid_one_point_mixes_and_none_only_when_no_mix_is() {
        let s = Space::enumerate(
            vec![
                Parameter::ints("bx", &[8, 16, 32, 64, 128, 256]),
                Parameter::ints("by", &[1, 2, 4, 8, 16]),
                Parameter::ints("tx", &[1, 2, 3, 4]),
                Parameter::ints("ty", &[1, 2, 3, 4]),
            ],
            // Every gene is bound to every other: a mix is valid only where the heads' products
            // agree, so both outcomes happen.
            &["bx * by * tx * ty == 1024".to_string()],
            &Default::default(),
        )
        .unwrap();
        let mut ga = AoeGa::new(8, AoeGaConfig::default());
        let mut rng = seeded_rng(8, 99);
        let (mut crossed, mut none) = (0, 0);
        for _ in 0..3000 {
            let (pa, pb) = (s.sample(&mut rng), s.sample(&mut rng));
            let (a, b) = (s.config(pa).to_vec(), s.config(pb).to_vec());
            let mixes: Vec<Vec<u16>> = (1..a.len())
                .flat_map(|k| {
                    [
                        a[..k].iter().chain(&b[k..]).copied().collect::<Vec<u16>>(),
                        b[..k].iter().chain(&a[k..]).copied().collect(),
                    ]
                })
                .collect();
            match ga.crossover(&s, &a, &b) {
                Some(child) => {
                    assert!(s.id_of(&child).is_some(), "invalid child {child:?}");
                    assert!(mixes.contains(&child.to_vec()), "not a one-point mix");
                    crossed += 1;
                }
                None => {
                    assert!(mixes.iter().all(|m| s.id_of(m).is_none()), "{a:?} × {b:?}");
                    none += 1;
                }
            }
        }
        assert!(
            crossed > 300 && none > 300,
            "{crossed} crossed, {none} none"
        );
    }

    #[test]
    fn crossover_tries_the_other_order_then_other_points() {
        // Only configurations with a small sum are valid.
        let s = Space::enumerate(
            vec![
                Parameter::ints("a", &[0, 1, 2, 3]),
                Parameter::ints("b", &[0, 1, 2, 3]),
                Parameter::ints("c", &[0, 1, 2, 3]),
            ],
            &["a + b + c <= 3".to_string()],
            &Default::default(),
        )
        .unwrap();
        let mut ga = AoeGa::new(3, AoeGaConfig::default());
        // a = (3,0,0), b = (0,0,3): heads of a with tails of b are (3,0,3) (k=1, 2): invalid;
        // the other order (0,0,0) at k=1 and k=2 is valid.
        for _ in 0..50 {
            let child = ga.crossover(&s, &[3, 0, 0], &[0, 0, 3]).unwrap();
            assert_eq!(child.as_slice(), &[0, 0, 0]);
        }
        // (3,0,0) × (0,3,0): at k=1, (3,3,0) is invalid and the other order (0,0,0) valid; at
        // k=2, (3,0,0) is valid. So the child depends on the point drawn, and both are drawn.
        let mut seen = FxHashSet::default();
        for _ in 0..200 {
            let child = ga.crossover(&s, &[3, 0, 0], &[0, 3, 0]).unwrap();
            assert!(s.id_of(&child).is_some());
            seen.insert(child.to_vec());
        }
        assert_eq!(seen.len(), 2, "both points are drawn: {seen:?}");
        // (1,2) × (2,1) where only the parents are valid: every point gives two invalid
        // children, so there is no crossover child (the caller copies the better parent).
        let s2 = Space::enumerate(
            vec![
                Parameter::ints("a", &[0, 1, 2, 3]),
                Parameter::ints("b", &[0, 1, 2, 3]),
            ],
            &["a + b == 3 and a != 0 and b != 0".to_string()],
            &Default::default(),
        )
        .unwrap();
        assert_eq!(ga.crossover(&s2, &[1, 2], &[2, 1]), None);
    }
}
