//! The ask/tell [`Strategy`] trait, the shared [`History`], and the [`Driver`] that owns the loop.

use std::time::{Duration, Instant};

use crate::space::{ConfigId, Space};

/// The outcome of measuring one configuration: its objective (lower is better), or `None` when
/// it failed to compile or run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observation {
    /// Which configuration.
    pub id: ConfigId,
    /// Its objective, or `None` for a failure.
    pub value: Option<f64>,
}

/// Everything measured so far in one search, in the order first measured.
#[derive(Debug, Clone)]
pub struct History {
    measured: Vec<bool>,
    observations: Vec<Observation>,
    best: Option<Observation>,
    worst: Option<f64>,
}

impl History {
    /// An empty history for a space of `n` configurations.
    pub fn new(n: usize) -> Self {
        Self {
            measured: vec![false; n],
            observations: Vec::new(),
            best: None,
            worst: None,
        }
    }

    /// True when `id` has been measured (successfully or not).
    pub fn is_measured(&self, id: ConfigId) -> bool {
        self.measured[id as usize]
    }

    /// Observations in the order measured.
    pub fn observations(&self) -> &[Observation] {
        &self.observations
    }

    /// Number of unique configurations measured, failures included.
    pub fn len(&self) -> usize {
        self.observations.len()
    }

    /// True when nothing has been measured.
    pub fn is_empty(&self) -> bool {
        self.observations.is_empty()
    }

    /// Number of configurations not yet measured.
    pub fn remaining(&self) -> usize {
        self.measured.len() - self.observations.len()
    }

    /// The best successful observation so far.
    pub fn best(&self) -> Option<Observation> {
        self.best
    }

    /// The worst successful objective so far.
    pub fn worst(&self) -> Option<f64> {
        self.worst
    }

    /// Records an observation. Returns false (and records nothing) if `id` was already measured.
    pub fn record(&mut self, obs: Observation) -> bool {
        let slot = &mut self.measured[obs.id as usize];
        if *slot {
            return false;
        }
        *slot = true;
        self.observations.push(obs);
        if let Some(v) = obs.value {
            if self.best.and_then(|b| b.value).is_none_or(|b| v < b) {
                self.best = Some(obs);
            }
            if self.worst.is_none_or(|w| v > w) {
                self.worst = Some(v);
            }
        }
        true
    }
}

/// What a strategy sees when asked: the space and everything measured so far.
#[derive(Debug, Clone, Copy)]
pub struct SearchContext<'a> {
    /// The space searched.
    pub space: &'a Space,
    /// All measurements so far, whoever proposed them.
    pub history: &'a History,
}

/// A search strategy in ask/tell form.
///
/// Contract:
/// - [`Strategy::ask`] returns at most `n` distinct ids of the space that are not yet measured
///   (`!ctx.history.is_measured(id)`); fewer, or none, only when it has nothing left to propose.
///   The driver discards anything else, but such proposals are bugs.
/// - [`Strategy::tell`] receives the results of the previous ask — in any order, possibly only
///   some of them, failures as `value: None` — after they were recorded in the history. It
///   may also receive results it did not propose (an ensemble shares them).
/// - Given the same seed at construction and the same sequence of calls, a strategy makes the
///   same proposals: no clocks, no thread-dependent state, no unseeded randomness.
pub trait Strategy {
    /// A short stable name, used in traces and reports.
    fn name(&self) -> &str;

    /// Proposes up to `n` unmeasured configurations to measure next (a batch, for parallel
    /// measurement).
    fn ask(&mut self, ctx: &SearchContext<'_>, n: usize) -> Vec<ConfigId>;

    /// Learns from measured results.
    fn tell(&mut self, ctx: &SearchContext<'_>, results: &[Observation]);

    /// What the strategy's model expects the next `horizon` measurements to gain: the sum of
    /// the `horizon` largest expected improvements of the best objective over the
    /// configurations it would consider next, as a fraction of the best (0.01: they are
    /// expected to make the best 1 % faster). `None` when it has no model or too little data
    /// for one (the default): a [`StopRule`] never stops such a strategy early. Must not change
    /// what the strategy proposes next: a search that asks this is, proposal for proposal, the
    /// one that does not.
    fn expected_gain(&mut self, ctx: &SearchContext<'_>, horizon: usize) -> Option<f64> {
        let _ = (ctx, horizon);
        None
    }
}

/// Something that measures configurations: a replay table, a simulator or real hardware.
pub trait Objective {
    /// Measures each id of `batch`, returning one result per id in the same order (`None` for
    /// a failure).
    fn measure(&mut self, space: &Space, batch: &[ConfigId]) -> Vec<Option<f64>>;
}

impl<F: FnMut(&Space, ConfigId) -> Option<f64>> Objective for F {
    fn measure(&mut self, space: &Space, batch: &[ConfigId]) -> Vec<Option<f64>> {
        batch.iter().map(|&id| self(space, id)).collect()
    }
}

/// Why a search stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The budget of unique measured configurations was used up.
    BudgetExhausted,
    /// Every valid configuration has been measured.
    SpaceExhausted,
    /// The time limit passed.
    TimeLimit,
    /// The strategy proposed nothing new.
    StrategyExhausted,
    /// The [`StopRule`] held: the strategy's model expected less than the rule's threshold
    /// from one more measurement, for the rule's patience of rounds in a row.
    Converged,
}

impl StopReason {
    /// A short stable name for reports: `budget`, `space_exhausted`, `time_limit`,
    /// `strategy_exhausted`, `converged`.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::BudgetExhausted => "budget",
            StopReason::SpaceExhausted => "space_exhausted",
            StopReason::TimeLimit => "time_limit",
            StopReason::StrategyExhausted => "strategy_exhausted",
            StopReason::Converged => "converged",
        }
    }
}

/// `--budget auto`: stop before the budget when the strategy's model expects little from more
/// measurements ([`Strategy::expected_gain`]) and the measurements agree: the best has not
/// improved by the threshold over the last `stall` of them. The model alone is not enough: a
/// GP fitted to few points can be sure of itself while the optimum is a step away. The budget
/// stays the cap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StopRule {
    /// Stop when the expected gain of the next `horizon` measurements is below this fraction
    /// of the best.
    pub threshold: f64,
    /// The measurements whose expected gain is summed ([`Strategy::expected_gain`]).
    pub horizon: usize,
    /// Never stop before this many configurations are measured.
    pub min_evaluations: usize,
    /// The gain must stay below the threshold this many rounds in a row.
    pub patience: usize,
    /// And the best must not have improved by more than the threshold (as a fraction of it)
    /// over this many of the last measurements.
    pub stall: usize,
}

/// A search's budget as users write it: `N` measurements, or `auto` / `auto:N` for a
/// [`StopRule`] under a cap of 200 (N). The one parser of `--budget` for `tunebank tune`,
/// `search-bench` and Python's `tune(budget=…)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Measurements at most.
    pub cap: usize,
    /// `auto`: a [`StopRule`] may end the search before `cap`.
    pub auto: bool,
}

impl Budget {
    /// The cap of a bare `auto`.
    pub const AUTO_CAP: usize = 200;

    /// The stop rule this budget asks for (`None` for a plain number).
    pub fn stop_rule(self) -> Option<StopRule> {
        self.auto.then(StopRule::default)
    }
}

impl std::str::FromStr for Budget {
    type Err = String;

    /// `N`, `auto` or `auto:N`; the error names the text and the accepted forms. A cap of 0 is
    /// accepted here and left to the caller, which knows what it needs.
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        let (auto, cap) = match t.strip_prefix("auto") {
            Some("") => {
                return Ok(Budget {
                    cap: Self::AUTO_CAP,
                    auto: true,
                })
            }
            Some(rest) => match rest.strip_prefix(':') {
                Some(n) => (true, n),
                None => (false, t),
            },
            None => (false, t),
        };
        cap.parse::<usize>()
            .map(|cap| Budget { cap, auto })
            .map_err(|_| {
                format!("expected a number of measurements, `auto` or `auto:N`, got `{s}`")
            })
    }
}

impl Default for StopRule {
    /// Less than 1 % of the best expected from the next 20 measurements, 3 rounds in a row,
    /// after at least 20 measurements, with no improvement of 1 % over the last 80 (chosen on
    /// the dev spaces' design seeds: search-strategies/README.md, "Stopping by the model").
    fn default() -> Self {
        Self {
            threshold: 0.01,
            horizon: 20,
            min_evaluations: 20,
            patience: 3,
            stall: 80,
        }
    }
}

/// True when the best of `history` is within `rule.threshold` (a fraction) of the best before
/// its last `rule.stall` measurements: no real improvement lately. False while fewer than
/// `rule.stall` measurements were made or nothing succeeded before them.
fn stalled(history: &History, rule: StopRule) -> bool {
    let obs = history.observations();
    let Some(cut) = obs.len().checked_sub(rule.stall.max(1)) else {
        return false;
    };
    let best_then = (obs[..cut].iter())
        .filter_map(|o| o.value)
        .fold(f64::INFINITY, f64::min);
    let best_now = history
        .best()
        .and_then(|b| b.value)
        .unwrap_or(f64::INFINITY);
    best_then.is_finite() && best_now >= best_then * (1.0 - rule.threshold)
}

/// The result of a search.
#[derive(Debug, Clone)]
pub struct SearchOutcome {
    /// Everything measured, in order.
    pub history: History,
    /// Why the loop ended.
    pub stop: StopReason,
    /// Proposals the driver discarded (invalid ids, repeats); zero for a correct strategy.
    pub discarded: usize,
    /// With a [`StopRule`]: the last expected gain the strategy reported before the search
    /// ended (`None` without a rule, or when it never reported one).
    pub expected_gain: Option<f64>,
}

/// Owns the search loop: the budget, batch size, time limit and the stop reason.
#[derive(Debug, Clone)]
pub struct Driver {
    /// Maximum number of unique configurations measured, failures included (Kernel Tuner's
    /// `max_fevals`).
    pub budget: usize,
    /// Configurations asked for per round.
    pub batch: usize,
    /// Wall-clock limit for the whole search, if any (makes runs non-reproducible when hit).
    pub time_limit: Option<Duration>,
    /// Stop early when the strategy's model expects little more (`None`: run to the budget).
    pub stop_rule: Option<StopRule>,
}

impl Driver {
    /// A driver with the given budget, batch size 1 and no time limit.
    pub fn new(budget: usize) -> Self {
        Self {
            budget,
            batch: 1,
            time_limit: None,
            stop_rule: None,
        }
    }

    /// Runs `strategy` on `space`, measuring with `objective`, until a stop reason applies.
    /// Never measures more than `budget` configurations, nor any configuration twice.
    pub fn run(
        &self,
        space: &Space,
        strategy: &mut dyn Strategy,
        objective: &mut dyn Objective,
    ) -> SearchOutcome {
        let start = Instant::now();
        let mut history = History::new(space.len());
        let mut discarded = 0;
        let mut expected_gain = None;
        let mut quiet_rounds = 0;
        let stop = loop {
            if history.len() >= self.budget {
                break StopReason::BudgetExhausted;
            }
            if history.remaining() == 0 {
                break StopReason::SpaceExhausted;
            }
            if self.time_limit.is_some_and(|t| start.elapsed() >= t) {
                break StopReason::TimeLimit;
            }
            if let Some(rule) = self
                .stop_rule
                .filter(|r| history.len() >= r.min_evaluations)
            {
                let ctx = SearchContext {
                    space,
                    history: &history,
                };
                let gain = strategy.expected_gain(&ctx, rule.horizon);
                expected_gain = gain.or(expected_gain);
                quiet_rounds = match gain {
                    Some(g) if g < rule.threshold => quiet_rounds + 1,
                    _ => 0,
                };
                if quiet_rounds >= rule.patience.max(1) && stalled(&history, rule) {
                    break StopReason::Converged;
                }
            }
            let want = self
                .batch
                .max(1)
                .min(self.budget - history.len())
                .min(history.remaining());
            let proposed = strategy.ask(
                &SearchContext {
                    space,
                    history: &history,
                },
                want,
            );
            let mut batch: Vec<ConfigId> = Vec::with_capacity(want);
            for id in proposed {
                if batch.len() < want
                    && (id as usize) < space.len()
                    && !history.is_measured(id)
                    && !batch.contains(&id)
                {
                    batch.push(id);
                } else {
                    discarded += 1;
                }
            }
            if batch.is_empty() {
                break StopReason::StrategyExhausted;
            }
            let values = objective.measure(space, &batch);
            let results: Vec<Observation> = batch
                .iter()
                .zip(values)
                .map(|(&id, value)| Observation {
                    id,
                    value: value.filter(|v| v.is_finite()),
                })
                .collect();
            for &r in &results {
                history.record(r);
            }
            strategy.tell(
                &SearchContext {
                    space,
                    history: &history,
                },
                &results,
            );
        };
        SearchOutcome {
            history,
            stop,
            discarded,
            expected_gain,
        }
    }
}
