//! CANN's MatMul repository as knowledge (`bank import --cann-repository`,
//! `calibrate --cann-repository`): the gain each record's tiling is estimated to have over the
//! default at its own shape, and how well the repository's records predict each other.
//!
//! **Baseline.** The file holds one board time per shape, the stored tiling's, and no default:
//! the gain a nearest answer needs ([`crate::inspect::nearest::GAIN_MARGIN`]) is estimated as
//! the simulated default over the simulated stored tiling at the record's shape, times the
//! board time ([`estimated_baseline`]). A record the simulator sees no gain in keeps its board
//! time as baseline (gain 1: it answers its own shape only).
//!
//! **Leave one out** ([`leave_one_out`]). Each record in turn is held back; the nearest other
//! record of its family (the look-up's own rule: same dtypes, bias and formats, the transfer
//! distance over the input dims) gives its tiling, fitted to the held-back shape's space as
//! the look-up fits it, and simulated there; against the held-back record's own stored tiling
//! simulated at its shape, and the simulator's default. The same is done under the look-up's
//! serving rule ([`NearestIndex::answer`]: inside the family's range and a clear estimated
//! win), where a shape not served runs the default. A purely board-side figure needs no
//! simulator: how often the nearest record stored the same tiling (split, L0 tiles) as the
//! held-back one.

use std::collections::HashMap;

use serde::Serialize;
use tunebank_bank::interchange::aoe::AoeEntry;
use tunebank_bank::interchange::tbe::repository::Repository;
use tunebank_bank::interchange::tbe::{self};
use tunebank_bank::LayerId;
use tunebank_key::{BankKey, OpDescriptor, SocSpec, StrategyMap};
use tunebank_measure::sim::SimRunner;
use tunebank_measure::{Measure, TuningTask};

use super::quantile;
use crate::inspect::nearest::{Member, NearestIndex};
use crate::tune::range_transfer::fit;

/// The simulated default and stored-tiling times of `entry` at its own shape, µs, or `None`
/// when it does not map or the simulator refuses either.
fn sim_default_and_stored(entry: &AoeEntry, soc: &SocSpec) -> Option<(f64, f64, StrategyMap)> {
    let task = TuningTask::new(tbe::matmul_descriptor(&entry.info_dict, soc).ok()?);
    let stored = tbe::entry_tiling(&entry.info_dict, &entry.knowledge)?.ok()?;
    let default = SimRunner::new().default_strategy(&task).ok()?;
    let d = SimRunner::simulate(&task, &default).ok()?.ok()?;
    let s = SimRunner::simulate(&task, &stored).ok()?.ok()?;
    Some((d, s, stored))
}

/// The estimated default-tiling time of `entry` on the board: its `cost_time` × simulated
/// default / simulated stored tiling, both at its shape on `soc`; `None` when the simulator
/// has no time for either or sees no gain.
pub fn estimated_baseline(entry: &AoeEntry, soc: &SocSpec) -> Option<f64> {
    let (d, s, _) = sim_default_and_stored(entry, soc)?;
    (d > s && s > 0.0).then(|| entry.cost_time * d / s)
}

/// One held-back record, simulated times µs.
#[derive(Clone, Debug, Serialize)]
pub struct LooRow {
    /// Its 1-based line.
    pub line: usize,
    /// Its own stored tiling at its shape.
    pub own_us: f64,
    /// The simulator's default at its shape.
    pub default_us: f64,
    /// The nearest other record's tiling, fitted to its shape; `None` when its family has no
    /// other record.
    pub nearest_us: Option<f64>,
    /// The nearest record's line and distance.
    pub nearest_line: Option<usize>,
    /// Its transfer distance.
    pub distance: Option<f64>,
    /// The nearest record stored the same split and L0 tiles (board data only).
    pub same_tiling: Option<bool>,
    /// What the look-up answers under its serving rule (served: the nearest tiling; not
    /// served: the default).
    pub served_us: f64,
    /// Whether the look-up served a nearest answer.
    pub served: bool,
}

/// The leave-one-out summary (ratios are simulated times over the held-back record's own).
#[derive(Clone, Debug, Default, Serialize)]
pub struct LooSummary {
    /// Lines whose record mapped and ran on the simulator (the rows).
    pub records: usize,
    /// Rows with a nearest record.
    pub with_nearest: usize,
    /// Quantiles 0.5 / 0.9 of nearest / own.
    pub nearest_over_own_p50: Option<f64>,
    /// Quantile 0.9 of nearest / own.
    pub nearest_over_own_p90: Option<f64>,
    /// Share of rows with a nearest whose nearest tiling is within 10 % of the own one.
    pub nearest_within_10pct: Option<f64>,
    /// Share of rows with a nearest whose nearest tiling is slower than the default.
    pub nearest_slower_than_default: Option<f64>,
    /// Median default / own: what the stored tilings win over the default (the ceiling).
    pub default_over_own_p50: Option<f64>,
    /// Share of rows the look-up served.
    pub served: Option<f64>,
    /// Median of the look-up's answer (served or default) / own.
    pub answer_over_own_p50: Option<f64>,
    /// Share of rows where the look-up's answer is slower than the default.
    pub answer_slower_than_default: Option<f64>,
    /// Share of rows with a nearest whose nearest record stored the same split and L0 tiles.
    pub same_tiling: Option<f64>,
}

/// The leave-one-out report: `{"rows": [...], "summary": {...}}`.
#[derive(Clone, Debug, Serialize)]
pub struct LooReport {
    /// Per mapped record, in file order.
    pub rows: Vec<LooRow>,
    /// The summary.
    pub summary: LooSummary,
}

/// A mapped record of the repository.
struct Item<'a> {
    entry: &'a AoeEntry,
    op: OpDescriptor,
    member: Member,
    own_us: f64,
    default_us: f64,
}

/// The fields of a stored tiling that say what the board ran: split and L0 tiles.
fn tiling_core(entry: &AoeEntry) -> Vec<String> {
    ["block_dim", "AL0_matrix", "BL0_matrix", "CL0_matrix"]
        .iter()
        .map(|f| {
            entry
                .knowledge
                .get(f)
                .map(|v| v.dumps())
                .unwrap_or_default()
        })
        .collect()
}

/// Holds back each record of `repo` in turn (see the module docs) on `soc`.
pub fn leave_one_out(repo: &Repository, soc: &SocSpec) -> LooReport {
    let items: Vec<Item<'_>> = repo
        .entries
        .iter()
        .filter_map(|entry| {
            let op = tbe::matmul_descriptor(&entry.info_dict, soc).ok()?;
            let (default_us, own_us, stored) = sim_default_and_stored(entry, soc)?;
            let speedup = (default_us / own_us).max(1.0);
            let member = Member {
                key: op.key().ok()?,
                layer: LayerId::Custom,
                op: op.clone(),
                strategy: stored,
                speedup,
            };
            Some(Item {
                entry,
                op,
                member,
                own_us,
                default_us,
            })
        })
        .collect();
    let index = NearestIndex::from_members(items.iter().map(|i| i.member.clone()));
    let mut by_key: HashMap<BankKey, &Item<'_>> = HashMap::new();
    for i in &items {
        by_key.entry(i.member.key).or_insert(i); // the first of a key, as the index keeps it
    }
    let rows: Vec<LooRow> = items.iter().map(|it| row(it, &by_key, &index)).collect();
    let summary = summarise(&rows);
    LooReport { rows, summary }
}

/// One held-back record's row.
fn row(it: &Item<'_>, by_key: &HashMap<BankKey, &Item<'_>>, index: &NearestIndex) -> LooRow {
    let task = TuningTask::new(it.op.clone());
    let sim = |s: &StrategyMap| SimRunner::simulate(&task, s).ok().and_then(|r| r.ok());
    let space = SimRunner::new().space(&task).ok();
    // The nearest other record of the family, as the look-up ranks them.
    let nearest = index
        .ranked(&it.op, &it.member.key)
        .first()
        .and_then(|&(d, m)| Some((d, *by_key.get(&m.key)?)));
    let fitted = |s: &StrategyMap| space.as_ref().and_then(|sp| fit(sp, s)).map(|f| f.0);
    let nearest_us = nearest.and_then(|(_, o)| fitted(&o.member.strategy).and_then(|s| sim(&s)));
    let answer = index.answer(&it.op, &it.member.key).ok();
    let served_us = answer
        .as_ref()
        .and_then(|a| sim(&a.strategy))
        .unwrap_or(it.default_us);
    LooRow {
        line: it.entry.index,
        own_us: it.own_us,
        default_us: it.default_us,
        nearest_us,
        nearest_line: nearest.map(|(_, o)| o.entry.index),
        distance: nearest.map(|(d, _)| d),
        same_tiling: nearest.map(|(_, o)| tiling_core(o.entry) == tiling_core(it.entry)),
        served_us,
        served: answer.is_some(),
    }
}

fn share(rows: &[&LooRow], test: impl Fn(&LooRow) -> bool) -> Option<f64> {
    (!rows.is_empty()).then(|| rows.iter().filter(|r| test(r)).count() as f64 / rows.len() as f64)
}

fn summarise(rows: &[LooRow]) -> LooSummary {
    let all: Vec<&LooRow> = rows.iter().collect();
    let with: Vec<&LooRow> = rows.iter().filter(|r| r.nearest_us.is_some()).collect();
    let ratio = |r: &LooRow| r.nearest_us.unwrap_or(f64::NAN) / r.own_us;
    let nn: Vec<f64> = with.iter().map(|r| ratio(r)).collect();
    let def: Vec<f64> = rows.iter().map(|r| r.default_us / r.own_us).collect();
    let ans: Vec<f64> = rows.iter().map(|r| r.served_us / r.own_us).collect();
    LooSummary {
        records: rows.len(),
        with_nearest: with.len(),
        nearest_over_own_p50: quantile(&nn, 0.5),
        nearest_over_own_p90: quantile(&nn, 0.9),
        nearest_within_10pct: share(&with, |r| ratio(r) <= 1.1),
        nearest_slower_than_default: share(&with, |r| {
            r.nearest_us.is_some_and(|n| n > r.default_us)
        }),
        default_over_own_p50: quantile(&def, 0.5),
        served: share(&all, |r| r.served),
        answer_over_own_p50: quantile(&ans, 0.5),
        answer_slower_than_default: share(&all, |r| r.served_us > r.default_us),
        same_tiling: share(&with, |r| r.same_tiling == Some(true)),
    }
}

impl std::fmt::Display for LooReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = &self.summary;
        let x = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.3}"));
        let pct = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{:.1} %", 100.0 * v));
        writeln!(
            f,
            "{} records held back one at a time ({} with a nearest record of their family)",
            s.records, s.with_nearest
        )?;
        writeln!(
            f,
            "nearest record's tiling / own stored tiling (simulated): median {}, p90 {}; within 10 %: {}; slower than the default: {}",
            x(s.nearest_over_own_p50),
            x(s.nearest_over_own_p90),
            pct(s.nearest_within_10pct),
            pct(s.nearest_slower_than_default)
        )?;
        writeln!(
            f,
            "default / own stored tiling: median {}",
            x(s.default_over_own_p50)
        )?;
        writeln!(
            f,
            "look-up under its serving rule: {} served; answer / own median {}; slower than the default: {}",
            pct(s.served),
            x(s.answer_over_own_p50),
            pct(s.answer_slower_than_default)
        )?;
        writeln!(
            f,
            "board data: the nearest record stored the same split and L0 tiles for {}",
            pct(s.same_tiling)
        )
    }
}
