//! Transfer from the bank: a task to search (a miss, or a hit under `REPEAT_TUNE`) starts its
//! search from the winners of related records — the same IR op type with other shapes on the
//! same SoC, or the same op on other SoCs — instead of cold.
//!
//! "Related" and its distance are defined in one place, `transfer_distance` (shape log-ratios plus
//! documented penalties; another dtype class or IR type is never related). [`snapshot`] reads
//! the related records of a job's tasks to search from every layer of the bank once, before any task
//! runs, and keeps the `NEAREST` nearest per task: records the job writes while it runs are
//! never used, so a tune with a given seed and bank gives the same result whatever the worker
//! count or timing (a queued job stores its snapshot with its tasks at enqueue time for the
//! same reason). `transfer_strategy` turns a task's related records into
//! `search_strategies::transfer` sources (each record's stored strategy, by parameter name,
//! its core split carried to the task's SoC by `carry_core_split`, with its tuned time;
//! label = the record's key, as `bank-inspect show` takes it) and builds the search strategy
//! with the prior when anything projects onto the task's space, else the cold strategy,
//! exactly as without transfer. [`compare`] measures what transfer gains on the
//! simulator (candidates to reach 99 % of the cold search's best).

mod carry;
pub mod compare;
pub(crate) mod distance;
mod gather;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use tunebank_key::StrategyMap;

use serde::{Deserialize, Serialize};

use search_strategies::aoe_ga::AoeGa;
use search_strategies::bayes::BayesConfig;
use search_strategies::transfer::{build, Prior, Source, SourceRecord};
use search_strategies::{ConfigId, Strategy};

use crate::tune::report::SeededBy;
use tunebank_bank::{Bank, BankError};
use tunebank_key::BankKey;
use tunebank_measure::{json_to_value, TaskSpace};

pub(crate) use carry::carry_core_split;

use super::TunePlan;

/// How many related records a task's search gets at most: the nearest.
pub(crate) const NEAREST: usize = 8;

/// One related bank record as a task's search gets it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Related {
    /// The record's key (`bank-inspect show KEY` shows it).
    pub key: BankKey,
    /// Its SoC version.
    pub soc: String,
    /// Its `transfer_distance` to the task.
    pub distance: f64,
    /// Its stored strategy.
    pub strategy: StrategyMap,
    /// Its stored tuned time, µs.
    pub tuned_us: f64,
}

/// The related records of a job's tasks, fixed when the job starts: task index (into
/// [`TunePlan::tasks`]) → its related records, nearest first. Tasks without any are absent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Snapshot {
    per_task: BTreeMap<usize, Vec<Related>>,
}

impl Snapshot {
    /// No task has related records (also: transfer is off).
    pub fn is_empty(&self) -> bool {
        self.per_task.is_empty()
    }

    /// Task `task`'s related records, nearest first (empty when it has none).
    pub fn get(&self, task: usize) -> &[Related] {
        self.per_task.get(&task).map_or(&[], Vec::as_slice)
    }

    /// A snapshot of one task (index `task`) with `related`.
    pub(crate) fn single(task: usize, related: Vec<Related>) -> Snapshot {
        let mut per_task = BTreeMap::new();
        if !related.is_empty() {
            per_task.insert(task, related);
        }
        Snapshot { per_task }
    }
}

/// The related records of `tasks` (indices into `plan.tasks`: the tasks the job searches), read from
/// every layer of `bank` once: for each task, the `NEAREST` op records by `transfer_distance`
/// (nearest first, ties by key), never its own key. One read per op type, SoC and layer (the
/// secondary-index group, at most `GROUP_LIMIT` records each), whatever the number of tasks.
pub fn snapshot(
    bank: &Bank,
    plan: &TunePlan,
    tasks: impl IntoIterator<Item = usize>,
) -> Result<Snapshot, BankError> {
    let tasks: Vec<usize> = tasks.into_iter().collect();
    let op_types: BTreeSet<String> = tasks
        .iter()
        .map(|&i| plan.tasks[i].descriptor.op_type.to_lowercase())
        .collect();
    if op_types.is_empty() {
        return Ok(Snapshot::default());
    }
    let pool = gather::read_pool(bank, &op_types)?;
    let mut per_task = BTreeMap::new();
    for i in tasks {
        let t = &plan.tasks[i];
        let related = gather::nearest(&t.descriptor, &t.key, &pool, NEAREST);
        if !related.is_empty() {
            per_task.insert(i, related);
        }
    }
    Ok(Snapshot { per_task })
}

/// The search strategy `name` seeded with `seed` for a task on the SoC `soc` whose related
/// records are `related`, over `space`: with the transfer prior when at least one related
/// record projects onto the space (and the records whose projections seed the search, in the
/// order proposed, each once), else the cold strategy and no records — then exactly
/// `by_name(name, seed)` when `bayes` is the default, except for AOE's GA. `bayes` configures
/// the Bayesian models (`search_strategies::transfer::build`); a tune uses the default.
/// `aoe-ga` and `aoe-ga-hp` open their first generation as AOE does: `first` (ids in `space`:
/// the bank's old tiling for the shape and the default tiling), then the prior's seeds; other
/// strategies ignore `first`.
/// `None` for an unknown strategy name.
pub(crate) fn transfer_strategy(
    name: &str,
    seed: u64,
    space: &TaskSpace,
    related: &[Related],
    soc: &str,
    first: &[ConfigId],
    bayes: &BayesConfig,
) -> Option<(Box<dyn Strategy>, Vec<SeededBy>)> {
    let prior = (!related.is_empty())
        .then(|| prior(space, related, soc))
        .filter(|p| !p.is_empty());
    let seeded = prior
        .as_ref()
        .map_or_else(Vec::new, |p| seeded_by(p, related));
    if let Some(ga) = AoeGa::by_name(name, seed) {
        let from_prior = prior.iter().flat_map(|p| p.seeds().iter().map(|s| s.id));
        let seeds: Vec<ConfigId> = first.iter().copied().chain(from_prior).collect();
        return Some((Box::new(ga.with_seeds(seeds)), seeded));
    }
    let strategy = build(name, seed, prior.map(Arc::new), bayes)?;
    Some((strategy, seeded))
}

/// The records of `related` whose projections in `prior` seed the search, in the order the
/// seeds are proposed, each once.
fn seeded_by(prior: &Prior, related: &[Related]) -> Vec<SeededBy> {
    let mut seeded: Vec<SeededBy> = Vec::new();
    for s in prior.seeds() {
        // A seed names its source in the prior's own order; the label is the record's key.
        let label = prior.label(s.source);
        let Some(r) = related.iter().find(|r| r.key.to_string() == label) else {
            continue;
        };
        if !seeded.iter().any(|x| x.key == r.key) {
            seeded.push(SeededBy {
                key: r.key,
                soc: r.soc.clone(),
                distance: r.distance,
            });
        }
    }
    seeded
}

/// The transfer prior of `related` over `space`, for a task on the SoC `soc`: each record as a
/// source (`source`), projected onto the space (empty when none projects). What
/// `transfer_strategy` seeds its search from.
pub fn prior(space: &TaskSpace, related: &[Related], soc: &str) -> Prior {
    let sources: Vec<Source> = related.iter().map(|r| source(r, soc)).collect();
    Prior::new(&space.space, &sources)
}

/// A related record as a transfer source for a task on the SoC `soc`: one record (a winner),
/// its strategy's scalar values by parameter name, the core split carried from the record's
/// SoC to `soc` ([`carry_core_split`]).
fn source(r: &Related, soc: &str) -> Source {
    let mut values: Vec<_> = (r.strategy.iter())
        .filter_map(|(k, v)| json_to_value(v).map(|v| (k.clone(), v)))
        .collect();
    carry_core_split(&mut values, &r.soc, soc);
    Source {
        label: r.key.to_string(),
        distance: r.distance,
        records: vec![SourceRecord {
            values,
            objective: Some(r.tuned_us),
        }],
    }
}
