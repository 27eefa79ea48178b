//! `calibrate --aoe-graph`: the subgraph model against the board on AOE's graph bank (the
//! `ascend910b2_l2cache.json` format). Every graph line is a record with the board's
//! `end2EndTime` (ns, reported in µs as `real_us`); each of its subgraphs is mapped
//! ([`AoeGraphLine::map`]), read in its logical form (`simulator_view`: AOE records device
//! shapes only) and simulated with every node at the op model's default under
//! three strategies, summed over the graph's subgraphs: the record's own `group` entry
//! (`stored_us`), the unfused strategy (`default_us`) and the simulator's own SGAT best
//! (`best_us`: `sgat_best` with the given settings, exhaustive where the space is no larger
//! than the per-subgraph budget; never above the unfused time, as SGAT keeps the default when
//! it finds nothing better). A record with a subgraph that does not map or that the model
//! cannot time has no times and says why; one whose space is too large to search (see
//! `crate::tune::sgat::MAX_RAW_CONFIGS`) has no `best_us` and says why. The summary gives Spearman(stored, real) and the
//! quantiles of stored / real, the same for the default and the best, and how often the stored
//! strategy is within 10 % of the simulator's best or faster than the unfused default.

use serde::Serialize;
use tunebank_key::StrategyMap;

use super::view::simulator_view;
use super::{agreement_of, Agreement};
use crate::tune::sgat::sgat_best;
use crate::tune::TuneSettings;
use tunebank_bank::interchange::aoe_graph::SubgraphUnmapped;
use tunebank_bank::interchange::aoe_graph::{AoeGraphFile, AoeGraphLine};
use tunebank_key::{GraphDescriptor, SocSpec};
use tunebank_measure::sim::graph::{GraphOps, SgatStrategy};

/// One graph line's times, µs; `None` with the reason where the simulator has none.
#[derive(Clone, Debug, Serialize)]
pub struct GraphCalibrationRow {
    /// `graphID`.
    pub graph_id: String,
    /// `strategy.modelName`.
    pub model_name: String,
    /// 1-based line in the file.
    pub line: usize,
    /// The board's `end2EndTime`, in µs.
    pub real_us: f64,
    /// Subgraphs of the graph.
    pub subgraphs: usize,
    /// The stored strategies' simulated time, summed over the subgraphs.
    pub stored_us: Option<f64>,
    /// The unfused strategy's.
    pub default_us: Option<f64>,
    /// The simulator's own SGAT best's.
    pub best_us: Option<f64>,
    /// Candidates the SGAT searches timed, over the subgraphs.
    pub candidates: u64,
    /// Subgraphs whose best came from every configuration of their space.
    pub exhaustive: usize,
    /// Why there are no times (the first subgraph that did not map or could not be timed), or
    /// no best (the first subgraph whose space could not be searched).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The summary over every graph line.
#[derive(Clone, Debug, Default, Serialize)]
pub struct GraphCalibrationSummary {
    /// Graph lines in the file.
    pub records: usize,
    /// Lines whose every subgraph mapped and was timed.
    pub mapped: usize,
    /// Lines without times (listed with their reason).
    pub unmapped: usize,
    /// Subgraphs timed.
    pub subgraphs: usize,
    /// Of those, subgraphs whose best came from every configuration of their space.
    pub exhaustive: usize,
    /// Spearman rank correlation of `stored_us` with `real_us`; `None` below 3 records.
    pub spearman_stored_real: Option<f64>,
    /// Quantile 0.1 of `stored_us / real_us`.
    pub ratio_p10: Option<f64>,
    /// Median of `stored_us / real_us`.
    pub ratio_p50: Option<f64>,
    /// Quantile 0.9 of `stored_us / real_us`.
    pub ratio_p90: Option<f64>,
    /// The unfused strategy against the board.
    pub default: Agreement,
    /// The simulator's SGAT best against the board.
    pub best: Agreement,
    /// How far the stored strategies' times are from the board: the median over mapped records
    /// of |ln(stored / real)|, with no constant fitted.
    pub stored_median_abs_ln: Option<f64>,
    /// One board factor fitted on these records: `exp(median ln(real / stored))`, the single
    /// constant by which the model's times best match the board's in the median.
    pub fitted_scale: Option<f64>,
    /// Median of |ln(fitted_scale · stored / real)| over the records the factor was fitted on.
    pub fitted_median_abs_ln: Option<f64>,
    /// The same, leave-one-out: each record against the factor fitted on all the others.
    pub loo_median_abs_ln: Option<f64>,
    /// Share of mapped records whose stored strategies are within 10 % of the simulator's best.
    pub stored_within_10pct_of_best: Option<f64>,
    /// Share of mapped records whose stored strategies the model times below the unfused ones.
    pub stored_faster_than_default: Option<f64>,
}

/// The calibration: `{"records": [row], "summary": {…}}`.
#[derive(Clone, Debug, Serialize)]
pub struct GraphCalibrationReport {
    /// Per graph line, in file order.
    pub records: Vec<GraphCalibrationRow>,
    /// The summary.
    pub summary: GraphCalibrationSummary,
}

/// One subgraph's times: stored, default, and the best with its candidates and whether it
/// was exhaustive (or why the search could not run).
type SubgraphTimes = (f64, f64, Result<(f64, u64, bool), String>);

/// The times of one subgraph, or why it has none.
fn subgraph_times(
    mapped: &Result<(GraphDescriptor, StrategyMap), SubgraphUnmapped>,
    settings: &TuneSettings,
) -> Result<SubgraphTimes, String> {
    let (g, stored) = mapped
        .as_ref()
        .map_err(|why| format!("not mapped: {why}"))?;
    let n = g.nodes.len();
    let g = &simulator_view(g);
    let ops = GraphOps::prepare(g, &[]).map_err(|e| e.to_string())?;
    let s = SgatStrategy::from_strategy(stored, n).map_err(|e| e.to_string())?;
    let stored_us = ops.time(&s).map_err(|e| e.to_string())?.total_us;
    let default_us = (ops.time(&SgatStrategy::unfused(n)))
        .map_err(|e| e.to_string())?
        .total_us;
    let best = sgat_best(g, &ops, settings)
        .map(|b| (b.us.min(default_us), b.candidates, b.exhaustive))
        .map_err(|e| format!("SGAT search: {e}"));
    Ok((stored_us, default_us, best))
}

/// The times of one graph line (see the module docs).
fn row(line: &AoeGraphLine, soc: &SocSpec, settings: &TuneSettings) -> GraphCalibrationRow {
    let m = line.map(soc);
    let mut row = GraphCalibrationRow {
        graph_id: m.graph_id,
        model_name: m.model_name,
        line: m.line,
        real_us: m.end2end_time_ns / 1e3,
        subgraphs: m.subgraphs.len(),
        stored_us: None,
        default_us: None,
        best_us: None,
        candidates: 0,
        exhaustive: 0,
        reason: None,
    };
    let (mut stored, mut default, mut best) = (0.0, 0.0, Some(0.0));
    for sub in &m.subgraphs {
        match subgraph_times(&sub.mapped, settings) {
            Ok((s, d, b)) => {
                (stored, default) = (stored + s, default + d);
                match b {
                    Ok((us, candidates, exhaustive)) => {
                        best = best.map(|b| b + us);
                        row.candidates += candidates;
                        row.exhaustive += usize::from(exhaustive);
                    }
                    Err(why) => {
                        best = None;
                        let why = format!("subgraph {}: {why}", sub.index);
                        row.reason.get_or_insert(why);
                    }
                }
            }
            Err(why) => {
                row.reason = Some(format!("subgraph {}: {why}", sub.index));
                return row;
            }
        }
    }
    row.stored_us = Some(stored);
    row.default_us = Some(default);
    row.best_us = best;
    row
}

/// `f` of every item, in order, computed on `threads` threads (at least one) that each take
/// the next item as they finish one (graph lines differ in cost: a graph's SGAT search grows
/// with its subgraphs).
fn map_in_parallel<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let threads = threads.clamp(1, items.len().max(1));
    if threads == 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, R)>> = Mutex::new(Vec::with_capacity(items.len()));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(item);
                done.lock().unwrap_or_else(|e| e.into_inner()).push((i, r));
            });
        }
    });
    let mut done = done.into_inner().unwrap_or_else(|e| e.into_inner());
    done.sort_by_key(|p| p.0);
    done.into_iter().map(|p| p.1).collect()
}

/// Share of `rows` for which `holds`; `None` for no rows.
fn share(
    rows: &[&GraphCalibrationRow],
    holds: impl Fn(&GraphCalibrationRow) -> bool,
) -> Option<f64> {
    (!rows.is_empty()).then(|| rows.iter().filter(|r| holds(r)).count() as f64 / rows.len() as f64)
}

/// The fit of one board factor to `(simulated, real)` pairs: the factor (`exp` of the median of
/// ln(real / simulated)), the median |ln| error with it in sample, and leave-one-out (each pair
/// against the factor of the other pairs). `None` below 2 pairs.
pub(crate) fn fit_scale(pairs: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    if pairs.len() < 2 {
        return None;
    }
    let logs: Vec<f64> = pairs.iter().map(|(s, r)| (r / s).ln()).collect();
    let median = |v: &[f64]| super::quantile(v, 0.5).expect("non-empty");
    let ln_scale = median(&logs);
    let in_sample: Vec<f64> = logs.iter().map(|l| (l - ln_scale).abs()).collect();
    let loo: Vec<f64> = (0..logs.len())
        .map(|i| {
            let rest: Vec<f64> = (logs.iter().enumerate())
                .filter(|&(j, _)| j != i)
                .map(|(_, &l)| l)
                .collect();
            (logs[i] - median(&rest)).abs()
        })
        .collect();
    Some((ln_scale.exp(), median(&in_sample), median(&loo)))
}

/// Calibrates the subgraph model on every graph line of `file` for `soc`, the simulator's own
/// best found with `settings` (strategy, `trials_per_op`, batch, seed); see the module docs.
/// Graph lines are calibrated on `settings.workers` threads (at least one); each line's row
/// depends on that line alone, so the report is the same for any number of threads.
pub fn calibrate_graphs(
    file: &AoeGraphFile,
    soc: &SocSpec,
    settings: &TuneSettings,
) -> GraphCalibrationReport {
    let records = map_in_parallel(&file.graphs, settings.workers, |l| row(l, soc, settings));
    let mapped: Vec<&GraphCalibrationRow> =
        records.iter().filter(|r| r.stored_us.is_some()).collect();
    let pairs = |sim: fn(&GraphCalibrationRow) -> Option<f64>| -> Vec<(f64, f64)> {
        mapped
            .iter()
            .filter_map(|r| sim(r).map(|s| (s, r.real_us)))
            .collect()
    };
    // Spearman and the quantiles through the one implementation (`agreement_of`, `spearman`).
    let stored_pairs = pairs(|r| r.stored_us);
    let stored = agreement_of(&stored_pairs);
    let fit = fit_scale(&stored_pairs);
    let abs_ln: Vec<f64> = stored_pairs
        .iter()
        .map(|(s, r)| (s / r).ln().abs())
        .collect();
    let summary = GraphCalibrationSummary {
        records: records.len(),
        mapped: mapped.len(),
        unmapped: records.len() - mapped.len(),
        subgraphs: mapped.iter().map(|r| r.subgraphs).sum(),
        exhaustive: mapped.iter().map(|r| r.exhaustive).sum(),
        spearman_stored_real: stored.spearman,
        ratio_p10: stored.ratio_p10,
        ratio_p50: stored.ratio_p50,
        ratio_p90: stored.ratio_p90,
        stored_median_abs_ln: super::quantile(&abs_ln, 0.5),
        fitted_scale: fit.map(|f| f.0),
        fitted_median_abs_ln: fit.map(|f| f.1),
        loo_median_abs_ln: fit.map(|f| f.2),
        default: agreement_of(&pairs(|r| r.default_us)),
        best: agreement_of(&pairs(|r| r.best_us)),
        stored_within_10pct_of_best: share(
            &mapped,
            |r| matches!((r.stored_us, r.best_us), (Some(s), Some(b)) if s <= 1.1 * b),
        ),
        stored_faster_than_default: share(
            &mapped,
            |r| matches!((r.stored_us, r.default_us), (Some(s), Some(d)) if s < d),
        ),
    };
    GraphCalibrationReport { records, summary }
}

impl std::fmt::Display for GraphCalibrationReport {
    /// One line per graph (times in µs, `-` for none, the reason), then the summary.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.1}"));
        let o = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.3}"));
        writeln!(
            f,
            "{:<21} {:<24} {:>4} {:>12} {:>12} {:>12} {:>12}",
            "graph_id", "model", "subg", "real_us", "stored_us", "default_us", "best_us"
        )?;
        for r in &self.records {
            write!(
                f,
                "{:<21} {:<24} {:>4} {:>12.1} {:>12} {:>12} {:>12}",
                r.graph_id,
                crate::tune::opat::shorten(&r.model_name, 24),
                r.subgraphs,
                r.real_us,
                t(r.stored_us),
                t(r.default_us),
                t(r.best_us)
            )?;
            match &r.reason {
                Some(why) => writeln!(f, "  {why}")?,
                None => writeln!(f)?,
            }
        }
        let s = &self.summary;
        writeln!(
            f,
            "{} records, {} mapped ({} subgraphs, {} searched exhaustively), {} without times",
            s.records, s.mapped, s.subgraphs, s.exhaustive, s.unmapped
        )?;
        writeln!(
            f,
            "stored   vs board: Spearman {}, sim/real p10 {} p50 {} p90 {}",
            o(s.spearman_stored_real),
            o(s.ratio_p10),
            o(s.ratio_p50),
            o(s.ratio_p90)
        )?;
        for (name, a) in [("default", &s.default), ("best", &s.best)] {
            writeln!(
                f,
                "{name:<8} vs board: Spearman {}, sim/real p10 {} p50 {} p90 {}",
                o(a.spearman),
                o(a.ratio_p10),
                o(a.ratio_p50),
                o(a.ratio_p90)
            )?;
        }
        writeln!(
            f,
            "stored   median |ln(sim/real)| {}; one board factor fitted on these records: {} \
             (median |ln| {} in sample, {} leave-one-out)",
            o(s.stored_median_abs_ln),
            o(s.fitted_scale),
            o(s.fitted_median_abs_ln),
            o(s.loo_median_abs_ln)
        )?;
        let pct = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{:.1}%", 100.0 * v));
        writeln!(
            f,
            "stored within 10% of the simulator's best: {}; stored faster than unfused: {}",
            pct(s.stored_within_10pct_of_best),
            pct(s.stored_faster_than_default)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::{fit_scale, map_in_parallel};

    #[test]
    fn the_board_factor_is_the_median_ratio_and_leave_one_out_refits_without_the_record() {
        // Real = 3 × simulated for four records, one outlier at 30 ×.
        let pairs = [
            (1.0, 3.0),
            (2.0, 6.0),
            (4.0, 12.0),
            (8.0, 24.0),
            (1.0, 30.0),
        ];
        let (scale, in_sample, loo) = fit_scale(&pairs).unwrap();
        assert!((scale - 3.0).abs() < 1e-12, "{scale}");
        assert!(in_sample.abs() < 1e-12, "{in_sample}");
        // Leaving a 3× record out moves the median of the other four (3, 3, 3, 30) to 3 still:
        // 4 records at 0, the outlier at ln 10.
        assert!(loo.abs() < 1e-12, "{loo}");
        // Two records 2× apart: each left out is judged by the other, |ln 2| both.
        let (_, _, loo) = fit_scale(&[(1.0, 1.0), (1.0, 2.0)]).unwrap();
        assert!((loo - 2f64.ln()).abs() < 1e-12, "{loo}");
        assert!(fit_scale(&[(1.0, 1.0)]).is_none());
    }

    #[test]
    fn map_in_parallel_keeps_the_order_and_maps_every_item_once_on_any_thread_count() {
        // Uneven costs, so threads finish out of order.
        let items: Vec<u64> = (0..57).collect();
        let f = |&x: &u64| {
            std::thread::sleep(std::time::Duration::from_micros((x * 37) % 11 * 50));
            (x, std::thread::current().id())
        };
        let serial: Vec<u64> = map_in_parallel(&items, 1, f).iter().map(|p| p.0).collect();
        assert_eq!(serial, items);
        for threads in [0, 2, 3, 8, 100] {
            let out = map_in_parallel(&items, threads, f);
            let xs: Vec<u64> = out.iter().map(|p| p.0).collect();
            assert_eq!(xs, items, "{threads} threads");
            let mut ids: Vec<_> = out.iter().map(|p| p.1).collect();
            ids.sort_by_key(|id| format!("{id:?}"));
            ids.dedup();
            if threads >= 2 {
                assert!(
                    ids.len() >= 2,
                    "{threads} threads ran on {} thread(s)",
                    ids.len()
                );
            }
        }
        assert!(map_in_parallel(&[] as &[u64], 4, |&x| x).is_empty());
    }
}
