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
//! [`Space`]: crate::Space

use std::collections::VecDeque;

use rand_chacha::ChaCha8Rng;

use crate::space::ConfigId;
use crate::strategies::{random_unmeasured, seeded_rng};
use crate::strategy::{Observation, SearchContext, Strategy};

mod breed;
mod select;

pub use select::{adaptive_rates, draw_two, elites, parent_pool, scores, selection_weights};

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

    /// The registry's AOE GA called `name`, seeded: `aoe-ga` (AOE's default settings) or
    /// `aoe-ga-hp` (the high-performance settings on 910); `None` for any other name. What
    /// [`by_name`](crate::strategies::by_name) builds for these names, as the concrete type (so
    /// a caller can add [`AoeGa::with_seeds`]).
    pub fn by_name(name: &str, seed: u64) -> Option<Self> {
        match name {
            "aoe-ga" => Some(Self::new(seed, AoeGaConfig::default())),
            "aoe-ga-hp" => {
                Some(Self::new(seed, AoeGaConfig::high_performance_910()).named("aoe-ga-hp"))
            }
            _ => None,
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
    use crate::space::{Parameter, Space};
    use crate::strategy::Driver;

    pub(super) fn space() -> Space {
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

    pub(super) fn objective(space: &Space, id: ConfigId) -> Option<f64> {
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
}
