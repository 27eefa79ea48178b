//! The comparison behind `search-bench`: strategies × replayed spaces × seeds, traces, score
//! tables and an SVG of best-so-far curves. The binary only parses flags and prints.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::bayes::BayesConfig;
use crate::plot::{gap_svg, Curve};
use crate::replay::ReplaySpace;
use crate::score::{mean_curve, summarise, Baseline, Summary, Trace, TraceFile, FRACTION_AT};
use crate::stats::median;
use crate::strategy::{Driver, Strategy};
use crate::transfer::build;

/// One replay run: `strategy` with `seed` on `replay` for `budget` evaluations. `None` for an
/// unknown strategy name.
pub fn run_one(replay: &ReplaySpace, strategy: &str, seed: u64, budget: usize) -> Option<Trace> {
    let cold = BayesConfig::default();
    run_with(replay, strategy, seed, &Driver::new(budget), None, &cold)
}

/// [`run_one`] with transfer from `prior` (built for `replay.space`), through
/// [`by_name_with_prior`](crate::transfer::by_name_with_prior).
pub fn run_one_with_prior(
    replay: &ReplaySpace,
    strategy: &str,
    seed: u64,
    budget: usize,
    prior: std::sync::Arc<crate::transfer::Prior>,
) -> Option<Trace> {
    let driver = Driver::new(budget);
    run_with(
        replay,
        strategy,
        seed,
        &driver,
        Some(prior),
        &BayesConfig::default(),
    )
}

/// One replay run of the registry's `strategy` under `driver` (its budget, batch width and
/// stopping rule), with transfer from `prior` when given, its Bayesian model (if it has one)
/// configured by `bayes` ([`build`]). The trace is in measurement order, so with a batch
/// width of `w` evaluation `k` (1-based) was measured in round `⌈k / w⌉`. `None` for an
/// unknown strategy name.
pub fn run_with(
    replay: &ReplaySpace,
    strategy: &str,
    seed: u64,
    driver: &Driver,
    prior: Option<std::sync::Arc<crate::transfer::Prior>>,
    bayes: &BayesConfig,
) -> Option<Trace> {
    let mut s = build(strategy, seed, prior, bayes)?;
    let mut objective = replay.objective();
    let out = driver.run(&replay.space, s.as_mut(), &mut objective);
    Some(out.history.observations().iter().map(|o| o.value).collect())
}

/// Scores of every strategy on every space, plus the mean over spaces.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// `(space, strategy) → summary`, spaces and strategies in insertion order.
    pub rows: Vec<(String, String, Summary)>,
}

impl Table {
    /// Scores `traces` (a trace file) against the baselines, for the spaces in `baselines`.
    /// `rename` maps a trace-file space key to the baseline key it belongs to (identity for our
    /// own traces; a suffix match for Kernel Tuner's relative paths).
    pub fn score(
        traces: &TraceFile,
        baselines: &[(String, Baseline)],
        budget: usize,
        prefix: &str,
    ) -> Self {
        let mut rows = Vec::new();
        for (space, base) in baselines {
            let Some(by_strategy) = traces.get(space).or_else(|| {
                traces
                    .iter()
                    .find(|(k, _)| space.ends_with(k.as_str()))
                    .map(|(_, v)| v)
            }) else {
                continue;
            };
            for (strategy, runs) in by_strategy {
                rows.push((
                    space.clone(),
                    format!("{prefix}{strategy}"),
                    summarise(base, runs, budget),
                ));
            }
        }
        Self { rows }
    }

    /// Mean over spaces per strategy (only strategies present on every space of the table).
    pub fn means(&self) -> Vec<(String, Summary)> {
        let spaces: Vec<&String> = dedup(self.rows.iter().map(|r| &r.0));
        let mut by: BTreeMap<&str, Vec<&Summary>> = BTreeMap::new();
        for (_, st, s) in &self.rows {
            by.entry(st.as_str()).or_default().push(s);
        }
        let mut out: Vec<(String, Summary)> = by
            .into_iter()
            .filter(|(_, v)| v.len() == spaces.len())
            .map(|(k, v)| {
                let n = v.len() as f64;
                let mut fractions = [0.0; FRACTION_AT.len()];
                for s in &v {
                    for (f, x) in fractions.iter_mut().zip(s.fractions) {
                        *f += x / n;
                    }
                }
                (
                    k.to_string(),
                    Summary {
                        fractions,
                        score: v.iter().map(|s| s.score).sum::<f64>() / n,
                        runs: v.iter().map(|s| s.runs).sum(),
                    },
                )
            })
            .collect();
        out.sort_by(|a, b| b.1.score.total_cmp(&a.1.score));
        out
    }

    /// The table as text: one block per space, then the means, best score first.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let header = |s: &mut String| {
            let _ = write!(s, "{:<28}", "strategy");
            for k in FRACTION_AT {
                let _ = write!(s, " {:>9}", format!("frac@{k}"));
            }
            let _ = writeln!(s, " {:>10} {:>6}", "std_score", "runs");
        };
        let line = |s: &mut String, name: &str, m: &Summary| {
            let _ = write!(s, "{name:<28}");
            for f in m.fractions {
                let _ = write!(s, " {f:>9.3}");
            }
            let _ = writeln!(s, " {:>10.3} {:>6}", m.score, m.runs);
        };
        for space in dedup(self.rows.iter().map(|r| &r.0)) {
            let _ = writeln!(s, "== {space}");
            header(&mut s);
            let mut rows: Vec<&(String, String, Summary)> =
                self.rows.iter().filter(|r| &r.0 == space).collect();
            rows.sort_by(|a, b| b.2.score.total_cmp(&a.2.score));
            for r in rows {
                line(&mut s, &r.1, &r.2);
            }
            s.push('\n');
        }
        let _ = writeln!(s, "== mean over spaces");
        header(&mut s);
        for (name, m) in self.means() {
            line(&mut s, &name, &m);
        }
        s
    }
}

fn dedup<'a>(it: impl Iterator<Item = &'a String>) -> Vec<&'a String> {
    let mut v: Vec<&String> = Vec::new();
    for x in it {
        if !v.contains(&x) {
            v.push(x);
        }
    }
    v
}

/// The comparison picture of mean best-so-far curves (each a ratio to the optimum, one per
/// strategy, averaged over spaces and seeds): [`crate::plot::gap_svg`], the gap to the optimum
/// on a log axis. A curve whose name has a prefix ending in `:` (`kt:`, another tuner's traces)
/// is a peer's and drawn dashed.
pub fn svg(curves: &[(String, Vec<f64>)], title: &str) -> String {
    let curves: Vec<Curve> = curves
        .iter()
        .map(|(name, c)| Curve::new(name.clone(), c.clone(), name.contains(':')))
        .collect();
    gap_svg(&curves, title)
}

/// Mean best-so-far curve per strategy over all spaces of `traces`, relative to each space's
/// optimum; strategies in first-seen order.
pub fn curves(
    traces: &TraceFile,
    baselines: &[(String, Baseline)],
    budget: usize,
    prefix: &str,
) -> Vec<(String, Vec<f64>)> {
    let mut acc: Vec<(String, Vec<f64>, usize)> = Vec::new();
    for (space, base) in baselines {
        let Some(by_strategy) = traces.get(space).or_else(|| {
            traces
                .iter()
                .find(|(k, _)| space.ends_with(k.as_str()))
                .map(|(_, v)| v)
        }) else {
            continue;
        };
        for (strategy, runs) in by_strategy {
            let name = format!("{prefix}{strategy}");
            let c = mean_curve(base, runs, budget);
            match acc.iter_mut().find(|a| a.0 == name) {
                Some(a) => {
                    for (x, y) in a.1.iter_mut().zip(c) {
                        *x += y;
                    }
                    a.2 += 1;
                }
                None => acc.push((name, c, 1)),
            }
        }
    }
    acc.into_iter()
        .map(|(n, c, k)| (n, c.into_iter().map(|v| v / k as f64).collect()))
        .collect()
}

/// One run of an already-built `strategy` on `replay` for `budget` evaluations (what
/// [`run_one`] does for a registry name).
pub fn run_strategy(replay: &ReplaySpace, strategy: &mut dyn Strategy, budget: usize) -> Trace {
    let mut objective = replay.objective();
    let out = Driver::new(budget).run(&replay.space, strategy, &mut objective);
    out.history.observations().iter().map(|o| o.value).collect()
}

/// The best successful value of a trace (`None` when every measurement failed).
pub fn trace_best(trace: &[Option<f64>]) -> Option<f64> {
    trace.iter().flatten().copied().reduce(f64::min)
}

/// The number of evaluations (1-based) after which `trace`'s best-so-far is at least as good as
/// `target` (`≤ target`); `None` when the trace never gets there.
pub fn evaluations_to_reach(trace: &[Option<f64>], target: f64) -> Option<usize> {
    trace
        .iter()
        .position(|v| v.is_some_and(|v| v <= target))
        .map(|i| i + 1)
}

/// "Measurements to match" a reference search on one space: the target is the median over the
/// reference's runs of its best value (AOE-GA's best after its trials, or after the whole space
/// when that is smaller); for each of our runs, the first evaluation whose best-so-far is at
/// least as good as the target.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchRow {
    /// The space.
    pub space: String,
    /// The median over the reference's runs of its best value.
    pub target: f64,
    /// The median number of evaluations the reference's runs used (fewer than its budget when it
    /// stopped early or measured the whole space).
    pub reference_evaluations: f64,
    /// Per run of ours, in order: evaluations to reach the target, `None` when not reached.
    pub reached: Vec<Option<usize>>,
    /// Our batch width: configurations measured at once per round (1: one at a time).
    pub batch: usize,
    /// Per run of ours, in order: the evaluations it used (its trace's length).
    pub used: Vec<usize>,
    /// Our runs stopped by a stop rule (`--budget auto`): the table adds the evaluations used.
    pub auto_stop: bool,
}

impl MatchRow {
    /// The row for `ours` against `reference` (traces of the same space). `None` when no
    /// reference run measured anything successfully.
    pub fn new(space: &str, ours: &[Trace], reference: &[Trace]) -> Option<Self> {
        let bests: Vec<f64> = reference.iter().filter_map(|t| trace_best(t)).collect();
        let target = median(&bests)?;
        let lens: Vec<f64> = reference.iter().map(|t| t.len() as f64).collect();
        Some(Self {
            space: space.to_string(),
            target,
            reference_evaluations: median(&lens).unwrap_or(0.0),
            reached: ours
                .iter()
                .map(|t| evaluations_to_reach(t, target))
                .collect(),
            batch: 1,
            used: ours.iter().map(Vec::len).collect(),
            auto_stop: false,
        })
    }

    /// The same row for runs that a stop rule may have ended before their budget.
    pub fn with_auto_stop(mut self) -> Self {
        self.auto_stop = true;
        self
    }

    /// The median over our runs of the evaluations they used.
    pub fn median_used(&self) -> Option<f64> {
        let xs: Vec<f64> = self.used.iter().map(|&k| k as f64).collect();
        median(&xs)
    }

    /// The same row for runs that measured `batch` configurations per round (at least 1).
    pub fn with_batch(mut self, batch: usize) -> Self {
        self.batch = batch.max(1);
        self
    }

    /// Per run of ours: the round in which the target was reached (`⌈evaluations / batch⌉`),
    /// `None` when not reached.
    pub fn rounds(&self) -> Vec<Option<usize>> {
        rounds_of(&self.reached, self.batch)
    }

    /// The median over our runs of the rounds to reach the target, as
    /// [`MatchRow::median_evaluations`] counts evaluations.
    pub fn median_rounds(&self) -> Option<f64> {
        median_reached(&self.rounds())
    }

    /// The median over our runs of the evaluations to reach the target, a run that never reaches
    /// it counting as infinitely many; `None` when that median is infinite (half or more of the
    /// runs, counting the middle pair, did not reach it) or there are no runs.
    pub fn median_evaluations(&self) -> Option<f64> {
        median_reached(&self.reached)
    }

    /// The share of our runs that reach the target (within their budget: a trace is never
    /// longer than it).
    pub fn share_reached(&self) -> f64 {
        share(&self.reached)
    }
}

fn rounds_of(reached: &[Option<usize>], batch: usize) -> Vec<Option<usize>> {
    let b = batch.max(1);
    reached.iter().map(|r| r.map(|k| k.div_ceil(b))).collect()
}

fn median_reached(reached: &[Option<usize>]) -> Option<f64> {
    let xs: Vec<f64> = reached
        .iter()
        .map(|r| r.map_or(f64::INFINITY, |k| k as f64))
        .collect();
    median(&xs).filter(|m| m.is_finite())
}

fn share(reached: &[Option<usize>]) -> f64 {
    if reached.is_empty() {
        return 0.0;
    }
    reached.iter().filter(|r| r.is_some()).count() as f64 / reached.len() as f64
}

/// The "measurements to match" table: one line per space, then every run of every space
/// pooled (median over all runs, share of all runs). `ours` and `reference` name the two
/// searches, `budget` is our budget.
pub fn render_match(ours: &str, reference: &str, budget: usize, rows: &[MatchRow]) -> String {
    let mut s = String::new();
    let all: Vec<Option<usize>> = rows.iter().flat_map(|r| r.reached.clone()).collect();
    let all_rounds: Vec<Option<usize>> = rows.iter().flat_map(|r| r.rounds()).collect();
    let all_used: Vec<f64> = (rows.iter().flat_map(|r| r.used.iter()))
        .map(|&k| k as f64)
        .collect();
    let auto = rows.iter().any(|r| r.auto_stop);
    // One width for the table: the rounds column is printed when it differs from evaluations.
    let batch = rows.iter().map(|r| r.batch).max().unwrap_or(1);
    let all_label = format!("all {} runs", all.len());
    let w = (rows.iter().map(|r| r.space.len()))
        .chain([all_label.len(), 5])
        .max()
        .unwrap_or(5);
    let _ = writeln!(
        s,
        "== measurements for {ours} to match {reference} (target: the median over seeds of its best)"
    );
    let _ = write!(
        s,
        "{:<w$} {:>10} {:>14} {:>12} {:>11}",
        "space",
        "ref_evals",
        "target",
        "ours_median",
        format!("within_{budget}")
    );
    if batch > 1 {
        let _ = write!(s, " {:>14}", format!("rounds_of_{batch}"));
    }
    if auto {
        let _ = write!(s, " {:>10}", "ours_used");
    }
    let _ = writeln!(s);
    let median_text = |m: Option<f64>| m.map_or(format!(">{budget}"), |m| format!("{m}"));
    let rounds_text =
        |m: Option<f64>| m.map_or(format!(">{}", budget.div_ceil(batch)), |m| format!("{m}"));
    for r in rows {
        let _ = write!(
            s,
            "{:<w$} {:>10} {:>14.6} {:>12} {:>11.3}",
            r.space,
            r.reference_evaluations,
            r.target,
            median_text(r.median_evaluations()),
            r.share_reached()
        );
        if batch > 1 {
            let _ = write!(s, " {:>14}", rounds_text(r.median_rounds()));
        }
        if auto {
            let _ = write!(s, " {:>10}", r.median_used().unwrap_or(0.0));
        }
        let _ = writeln!(s);
    }
    let _ = write!(
        s,
        "{:<w$} {:>10} {:>14} {:>12} {:>11.3}",
        all_label,
        "",
        "",
        median_text(median_reached(&all)),
        share(&all)
    );
    if batch > 1 {
        let _ = write!(s, " {:>14}", rounds_text(median_reached(&all_rounds)));
    }
    if auto {
        let _ = write!(s, " {:>10}", median(&all_used).unwrap_or(0.0));
    }
    let _ = writeln!(s);
    s
}
