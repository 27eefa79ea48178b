//! What transfer gains, measured: per op, a cold search and a search seeded from the op's
//! related records (`super::transfer_strategy`) on the same space, seed, budget and runner;
//! the cold search's final best is the target, and each search is charged the candidates it
//! measured until its best reached 99 % of it (time ≤ cold best / 0.99).

use std::fmt;

use search_strategies::bayes::BayesConfig;
use search_strategies::{Driver, History};

use crate::tune::task_seed;
use crate::tune::{TuneError, TunePlan, TuneSettings};
use tunebank_measure::{Measure, MeasureError, RunnerObjective, TimingSettings, TuningTask};

use super::{transfer_strategy, Snapshot};

/// The share of the cold best a search must reach: time ≤ cold best / `REACH`.
pub const REACH: f64 = 0.99;

/// One op: cold against warm.
#[derive(Clone, Debug, PartialEq)]
pub struct OpComparison {
    /// The task's first op name.
    pub op_name: String,
    /// Its IR op type.
    pub op_type: String,
    /// Valid strategies in its space.
    pub space: usize,
    /// Related records that seeded the warm search (0: it ran cold, the same search).
    pub seeded: usize,
    /// The cold search's final best, µs.
    pub cold_best_us: f64,
    /// The warm search's final best, µs (`None`: every candidate failed).
    pub warm_best_us: Option<f64>,
    /// Candidates the cold search measured until it reached 99 % of its final best.
    pub cold_to_reach: usize,
    /// Candidates the warm search measured until it reached 99 % of the cold best; `None`
    /// when it never did within the budget.
    pub warm_to_reach: Option<usize>,
}

/// Every op of a plan the runner tunes, compared.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Comparison {
    /// Per op, in plan order.
    pub ops: Vec<OpComparison>,
    /// The per-op budget both searches had.
    pub budget: usize,
}

impl Comparison {
    /// Total candidates to reach 99 % of the cold best: (cold, warm). A warm search that never
    /// reached it is charged the whole budget.
    pub fn totals(&self) -> (usize, usize) {
        let cold = self.ops.iter().map(|o| o.cold_to_reach).sum();
        let warm = (self.ops.iter())
            .map(|o| o.warm_to_reach.unwrap_or(self.budget))
            .sum();
        (cold, warm)
    }

    /// Ops whose warm search never reached 99 % of the cold best.
    pub fn warm_misses(&self) -> usize {
        self.ops
            .iter()
            .filter(|o| o.warm_to_reach.is_none())
            .count()
    }

    /// Ops seeded from related records.
    pub fn seeded_ops(&self) -> usize {
        self.ops.iter().filter(|o| o.seeded > 0).count()
    }
}

/// The candidates measured until the best so far was ≤ `target_us` (1-based), if ever.
pub(crate) fn trials_to_reach(history: &History, target_us: f64) -> Option<usize> {
    history
        .observations()
        .iter()
        .position(|o| o.value.is_some_and(|v| v <= target_us))
        .map(|i| i + 1)
}

/// Compares cold and warm searches for every task of `plan` on `settings.runner` (a fresh
/// runner; `settings.strategy`, `seed`, `trials_per_op` and `batch` as a tune uses them, each
/// task seeded as a tune seeds it), the warm one seeded from `snapshot`, both with their
/// Bayesian models configured by `bayes` (a tune's are `BayesConfig::default()`; other values
/// are for attribution runs). Tasks the runner does not tune, or whose cold search found
/// nothing, are left out.
pub fn compare(
    plan: &TunePlan,
    snapshot: &Snapshot,
    settings: &TuneSettings,
    bayes: &BayesConfig,
) -> Result<Comparison, TuneError> {
    let mut runner = settings.runner.build(TimingSettings::default())?;
    let mut out = Comparison {
        ops: Vec::new(),
        budget: settings.trials_per_op,
    };
    for (i, t) in plan.tasks.iter().enumerate() {
        let task = TuningTask::new(t.descriptor.clone());
        let space = match runner.space(&task) {
            Ok(s) => s,
            Err(MeasureError::Unsupported { .. } | MeasureError::TooLarge(_)) => continue,
            Err(e) => return Err(e.into()),
        };
        let seed = task_seed(settings.seed, &t.key);
        // As a tune seeds AOE's GA with the default tiling (a miss has no old tiling).
        let default = runner.default_strategy(&task)?;
        let first: Vec<_> = space.config_of(&default).into_iter().collect();
        let mut search = |related| -> Result<_, TuneError> {
            let Some((mut strategy, seeded)) = transfer_strategy(
                &settings.strategy,
                seed,
                &space,
                related,
                &t.descriptor.soc.version,
                &first,
                bayes,
            ) else {
                return Err(TuneError::UnknownStrategy {
                    name: settings.strategy.clone(),
                });
            };
            let mut driver = Driver::new(settings.trials_per_op);
            driver.batch = settings.round_width(0, 1);
            let mut objective = RunnerObjective::new(runner.as_mut() as &mut dyn Measure, &task);
            let history = driver
                .run(&space.space, strategy.as_mut(), &mut objective)
                .history;
            Ok((history, seeded.len()))
        };
        let (cold, _) = search(&[])?;
        let (warm, seeded) = search(snapshot.get(i))?;
        let Some(cold_best) = cold.best().and_then(|b| b.value) else {
            continue;
        };
        let target = cold_best / REACH;
        out.ops.push(OpComparison {
            op_name: t.op_names[0].clone(),
            op_type: t.descriptor.op_type.clone(),
            space: space.len(),
            seeded,
            cold_best_us: cold_best,
            warm_best_us: warm.best().and_then(|b| b.value),
            cold_to_reach: trials_to_reach(&cold, target).unwrap_or(settings.trials_per_op),
            warm_to_reach: trials_to_reach(&warm, target),
        });
    }
    Ok(out)
}

/// One line per op (type, space, seeding records, cold best, candidates to 99 % cold and warm),
/// then the totals.
impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<14} {:>7} {:>6} {:>12} {:>6} {:>6}  op",
            "op type", "space", "seeds", "cold best us", "cold", "warm"
        )?;
        for o in &self.ops {
            let warm = o
                .warm_to_reach
                .map_or_else(|| format!(">{}", self.budget), |w| w.to_string());
            writeln!(
                f,
                "{:<14} {:>7} {:>6} {:>12.3} {:>6} {:>6}  {}",
                o.op_type, o.space, o.seeded, o.cold_best_us, o.cold_to_reach, warm, o.op_name
            )?;
        }
        let (cold, warm) = self.totals();
        writeln!(
            f,
            "total: {} ops ({} seeded): cold {cold}, warm {warm} candidates to 99 % of the cold best (warm/cold {:.2}; {} warm searches never reached it, charged {} each)",
            self.ops.len(),
            self.seeded_ops(),
            if cold > 0 { warm as f64 / cold as f64 } else { 0.0 },
            self.warm_misses(),
            self.budget
        )
    }
}
