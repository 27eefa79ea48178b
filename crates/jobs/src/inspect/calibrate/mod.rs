//! `calibrate --aoe`: how far the simulator agrees with the board on which tiling is best. For
//! every record of an AOE `unified_bank` file: the board's `cost_time`, the simulated time of
//! the record's own tiling (its `knowledge` mapped as `tbe::tiling_of` maps it), of the
//! simulator's default tiling, of the best of N tilings sampled from the simulator's space
//! (uniformly, seeded, plus the default), and of the best of N drawn from TBE's own tiling
//! space (`tbe::space`, the space AOE searched; whether the stored tiling is a point of it is
//! reported). The summary gives, for each simulated time, the Spearman rank correlation with
//! the board's times and the quantiles of simulated / real; the share of records whose stored
//! tiling the simulator places within 10 % of each best (`stored_us ≤ 1.1 · best_us`), and the
//! median share of the cube's peak (the problem's
//! useful FLOPs at the simulated cores' peak, `peak_us`) that the board's stored tiling and the
//! simulator's best reach. [`graph`] does the same for the subgraph model on AOE's graph bank
//! (`calibrate --aoe-graph`), with the same Spearman and quantiles and a fitted board factor.

use serde::Serialize;
use tunebank_key::StrategyMap;

pub mod graph;
pub mod repository;
pub(crate) mod view;

use tunebank_bank::interchange::aoe::AoeBank;
use tunebank_bank::interchange::tbe;
use tunebank_bank::interchange::tbe::space;
use tunebank_key::SocSpec;
use tunebank_measure::sim::ops::OpModel;
use tunebank_measure::sim::{splitmix_next, SimRunner};
use tunebank_measure::{Measure, MeasureError, TuningTask};

/// One record's times, µs. `None` where the simulator has no time, with the reason.
#[derive(Clone, Debug, Serialize)]
pub struct CalibrationRow {
    /// The record's md5.
    pub md5: String,
    /// The board's `cost_time`.
    pub real_us: f64,
    /// The simulated time of the record's own tiling.
    pub stored_us: Option<f64>,
    /// The simulated time of the simulator's default tiling.
    pub default_us: Option<f64>,
    /// The best simulated time of the sampled tilings (and the default).
    pub best_us: Option<f64>,
    /// The best simulated time of as many tilings sampled from TBE's own tiling space, the
    /// one AOE searched (`tbe::space`; the stored tiling is not among them).
    pub tbe_best_us: Option<f64>,
    /// The rule of TBE's space the stored tiling breaks, if any (none of AOE's own do).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stored_outside_tbe_space: Option<String>,
    /// The cube's peak time for the problem's useful FLOPs on the simulated cores, µs: the
    /// board's `real_us` and the simulator's `best_us` over it say what share of the peak each
    /// reaches (`peak_us / real_us`).
    pub peak_us: Option<f64>,
    /// Why a time is missing (the record did not map, or its tiling is invalid on the
    /// simulated SoC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Agreement of one simulated time with the board's.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Agreement {
    /// Records with this time.
    pub records: usize,
    /// Spearman rank correlation with `real_us` (ties averaged); `None` below 3 records.
    pub spearman: Option<f64>,
    /// Quantiles 0.1, 0.5, 0.9 of simulated / real.
    pub ratio_p10: Option<f64>,
    /// Median of simulated / real.
    pub ratio_p50: Option<f64>,
    /// Quantile 0.9 of simulated / real.
    pub ratio_p90: Option<f64>,
}

/// The summary over every record.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CalibrationSummary {
    /// Records in the file (accepted entries).
    pub records: usize,
    /// Records whose descriptor and tiling mapped and whose tiling the simulator accepts.
    pub mapped: usize,
    /// Tilings sampled per record.
    pub samples: usize,
    /// The stored tiling's simulated time against the board.
    pub stored: Agreement,
    /// The default tiling's.
    pub default: Agreement,
    /// The sampled best's.
    pub best: Agreement,
    /// The best of TBE's space's.
    pub tbe_best: Agreement,
    /// Share of mapped records whose stored tiling is within 10 % of the simulator's best.
    pub stored_within_10pct_of_best: Option<f64>,
    /// Mapped records whose stored tiling is a point of TBE's space.
    pub stored_in_tbe_space: usize,
    /// Share of mapped records whose stored tiling is within 10 % of the simulator's best
    /// among TBE's tilings (the tilings the board chose from).
    pub stored_within_10pct_of_tbe_best: Option<f64>,
    /// Median over records of the share of the cube's peak the board reaches with the stored
    /// tiling (`peak_us / real_us`).
    pub board_peak_share_p50: Option<f64>,
    /// The same for the simulator's best tiling (`peak_us / best_us`).
    pub best_peak_share_p50: Option<f64>,
}

/// The calibration: `{"records": [row], "summary": {…}}`.
#[derive(Clone, Debug, Serialize)]
pub struct CalibrationReport {
    /// Per record, in file order.
    pub records: Vec<CalibrationRow>,
    /// The summary.
    pub summary: CalibrationSummary,
}

fn sim_us(task: &TuningTask, s: &StrategyMap) -> Result<Result<f64, String>, MeasureError> {
    SimRunner::simulate(task, s)
}

/// The simulated times of one record: stored, default, best of `samples` (seeded by `seed`).
fn row(
    entry: &tunebank_bank::interchange::aoe::AoeEntry,
    soc: &SocSpec,
    samples: usize,
    seed: u64,
) -> CalibrationRow {
    let mut row = CalibrationRow {
        md5: entry.md5.clone(),
        real_us: entry.cost_time,
        stored_us: None,
        default_us: None,
        best_us: None,
        tbe_best_us: None,
        stored_outside_tbe_space: None,
        peak_us: None,
        reason: None,
    };
    let task = match tbe::matmul_descriptor(&entry.info_dict, soc) {
        Ok(d) => TuningTask::new(d),
        Err(e) => {
            row.reason = Some(format!("no descriptor: {}", e.reason));
            return row;
        }
    };
    let mut tbe_space = None;
    if let Ok((
        OpModel::Cube {
            problem,
            useful_flops,
            ..
        },
        sim_soc,
        cores,
        _,
    )) = SimRunner::model(&task)
    {
        row.peak_us = Some(useful_flops / sim_soc.cube_peak_flops(problem.in_bytes, cores) * 1e6);
        let buffers = space::Buffers {
            l0a: sim_soc.l0a as i64,
            l0b: sim_soc.l0b as i64,
            l0c: sim_soc.l0c as i64,
            l1: sim_soc.l1 as i64,
        };
        tbe_space = tbe::gemm_of(&entry.info_dict).ok().map(|g| {
            let space =
                space::TbeSpace::new(&g, i64::from(cores), problem.in_bytes as i64, buffers);
            (space, g)
        });
    }
    let mut sim = SimRunner::new();
    let times = (|| -> Result<(), MeasureError> {
        let default = sim.default_strategy(&task)?;
        row.default_us = sim_us(&task, &default)?.ok();
        let space = sim.space(&task)?;
        let mut best = row.default_us;
        let mut state = seed ^ u64::from_str_radix(&entry.md5[..16], 16).unwrap_or(0);
        for _ in 0..samples.min(space.len()) {
            let id = (splitmix_next(&mut state) % space.len() as u64) as u32;
            if let Ok(us) = sim_us(&task, &space.strategy(id))? {
                best = Some(best.map_or(us, |b: f64| b.min(us)));
            }
        }
        row.best_us = best;
        if let Some((space, g)) = &tbe_space {
            row.tbe_best_us = tbe_best(space, g, &task, samples, &mut state)?;
            row.stored_outside_tbe_space = space.broken_rule(&entry.knowledge);
        }
        match tbe::entry_tiling(&entry.info_dict, &entry.knowledge) {
            Some(Ok(tiling)) => match sim_us(&task, &tiling)? {
                Ok(us) => row.stored_us = Some(us),
                Err(why) => {
                    row.reason = Some(format!("stored tiling invalid on the simulator: {why}"))
                }
            },
            Some(Err(why)) => row.reason = Some(format!("tiling not mapped: {}", why.reason)),
            None => row.reason = Some("not a TBE MatMul entry".into()),
        }
        Ok(())
    })();
    if let Err(e) = times {
        row.reason = Some(format!("simulator: {e}"));
    }
    row
}

/// The best simulated time of `samples` tilings drawn from TBE's space (each drawn in up to 50
/// tries, mapped as a stored tiling is); `None` when none maps and runs.
fn tbe_best(
    space: &space::TbeSpace,
    g: &tbe::TbeGemm,
    task: &TuningTask,
    samples: usize,
    state: &mut u64,
) -> Result<Option<f64>, MeasureError> {
    let mut best: Option<f64> = None;
    let mut next = || splitmix_next(state);
    for _ in 0..samples {
        let Some(k) = space.sample(&mut next, 50) else {
            continue;
        };
        if let Ok(tiling) = tbe::tiling_of(&k, g) {
            if let Ok(us) = sim_us(task, &tiling)? {
                best = Some(best.map_or(us, |b| b.min(us)));
            }
        }
    }
    Ok(best)
}

/// Spearman's rank correlation (Pearson over average ranks); `None` below 3 pairs or with no
/// spread. The one implementation is the simulator calibration's.
pub use tunebank_measure::sim::calibration::spearman_checked as spearman;

/// The `q` quantile (linear interpolation) of `v`.
pub(crate) fn quantile(v: &[f64], q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let pos = q * (s.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    Some(s[lo] + (s[hi] - s[lo]) * (pos - lo as f64))
}

fn agreement(rows: &[CalibrationRow], sim: impl Fn(&CalibrationRow) -> Option<f64>) -> Agreement {
    let pairs: Vec<(f64, f64)> = rows
        .iter()
        .filter_map(|r| sim(r).map(|s| (s, r.real_us)))
        .collect();
    agreement_of(&pairs)
}

/// The agreement of (simulated, real) pairs: their count, Spearman, quantiles of the ratio.
fn agreement_of(pairs: &[(f64, f64)]) -> Agreement {
    let (s, real): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
    let ratios: Vec<f64> = pairs.iter().map(|(s, r)| s / r).collect();
    Agreement {
        records: pairs.len(),
        spearman: spearman(&s, &real),
        ratio_p10: quantile(&ratios, 0.1),
        ratio_p50: quantile(&ratios, 0.5),
        ratio_p90: quantile(&ratios, 0.9),
    }
}

/// Calibrates the simulator on every accepted entry of `bank` for `soc` (see the module docs),
/// sampling `samples` tilings per record from a generator seeded with `seed`.
pub fn calibrate(bank: &AoeBank, soc: &SocSpec, samples: usize, seed: u64) -> CalibrationReport {
    let records: Vec<CalibrationRow> = bank
        .accepted
        .iter()
        .map(|e| row(e, soc, samples, seed))
        .collect();
    let mapped: Vec<&CalibrationRow> = records.iter().filter(|r| r.stored_us.is_some()).collect();
    let within = |best: fn(&CalibrationRow) -> Option<f64>| {
        let n = (mapped.iter())
            .filter(|r| matches!((r.stored_us, best(r)), (Some(s), Some(b)) if s <= 1.1 * b))
            .count();
        (!mapped.is_empty()).then(|| n as f64 / mapped.len() as f64)
    };
    let summary = CalibrationSummary {
        records: records.len(),
        mapped: mapped.len(),
        samples,
        stored: agreement(&records, |r| r.stored_us),
        default: agreement(&records, |r| r.default_us),
        best: agreement(&records, |r| r.best_us),
        tbe_best: agreement(&records, |r| r.tbe_best_us),
        stored_within_10pct_of_best: within(|r| r.best_us),
        stored_within_10pct_of_tbe_best: within(|r| r.tbe_best_us),
        stored_in_tbe_space: (mapped.iter())
            .filter(|r| r.tbe_best_us.is_some() && r.stored_outside_tbe_space.is_none())
            .count(),
        board_peak_share_p50: peak_share(&mapped, |r| Some(r.real_us)),
        best_peak_share_p50: peak_share(&mapped, |r| r.best_us),
    };
    CalibrationReport { records, summary }
}

/// Median over `rows` of `peak_us / time(row)`, where both are known.
fn peak_share(
    rows: &[&CalibrationRow],
    time: impl Fn(&CalibrationRow) -> Option<f64>,
) -> Option<f64> {
    let shares: Vec<f64> = (rows.iter())
        .filter_map(|r| Some(r.peak_us? / time(r)?))
        .collect();
    quantile(&shares, 0.5)
}

impl std::fmt::Display for CalibrationReport {
    /// One line per record (times in µs, `-` for none, the reason), then the summary.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.3}"));
        writeln!(
            f,
            "md5\treal_us\tstored_us\tdefault_us\tbest_us\ttbe_best_us"
        )?;
        for r in &self.records {
            write!(
                f,
                "{}\t{:.3}\t{}\t{}\t{}\t{}",
                r.md5,
                r.real_us,
                t(r.stored_us),
                t(r.default_us),
                t(r.best_us),
                t(r.tbe_best_us)
            )?;
            match &r.reason {
                Some(why) => writeln!(f, "\t{why}")?,
                None => writeln!(f)?,
            }
        }
        let s = &self.summary;
        writeln!(
            f,
            "{} records, {} with a stored tiling the simulator runs; {} sampled tilings each",
            s.records, s.mapped, s.samples
        )?;
        let o = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.3}"));
        for (name, a) in [
            ("stored", &s.stored),
            ("default", &s.default),
            ("best", &s.best),
            ("tbe_best", &s.tbe_best),
        ] {
            writeln!(
                f,
                "{name:<9} vs board: {} records, Spearman {}, sim/real p10 {} p50 {} p90 {}",
                a.records,
                o(a.spearman),
                o(a.ratio_p10),
                o(a.ratio_p50),
                o(a.ratio_p90)
            )?;
        }
        let pct = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{:.1}%", 100.0 * v));
        writeln!(
            f,
            "stored tiling within 10% of the simulator's best: {} (among TBE's tilings: {}; \
             {} of {} stored tilings are points of TBE's space)",
            pct(s.stored_within_10pct_of_best),
            pct(s.stored_within_10pct_of_tbe_best),
            s.stored_in_tbe_space,
            s.mapped
        )?;
        writeln!(
            f,
            "share of the cube's peak (median): the board's stored tiling {}, the simulator's best {}",
            pct(s.board_peak_share_p50),
            pct(s.best_peak_share_p50)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_averages_ties_and_needs_spread() {
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), Some(1.0));
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), Some(-1.0));
        // scipy.stats.spearmanr([1, 2, 2, 4], [1, 3, 2, 4]).correlation
        let r = spearman(&[1.0, 2.0, 2.0, 4.0], &[1.0, 3.0, 2.0, 4.0]).unwrap();
        assert!((r - 0.9486832980505138).abs() < 1e-12, "{r}");
        assert_eq!(spearman(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]), None);
        assert_eq!(quantile(&[4.0, 1.0, 3.0, 2.0], 0.5), Some(2.5));
    }
}
