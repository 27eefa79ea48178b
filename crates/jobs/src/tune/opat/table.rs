//! The summary of a tuning job as `tunebank tune` prints it at the end: one row per task
//! (decision, times before and after, gain, trials), the AOE totals, the confirmed defaults, the
//! ops seeded from related bank records (transfer), the time accounting and the result file.

use std::fmt;
use std::path::Path;

use search_strategies::stats::median;
use search_strategies::{StopReason, StopRule};

use super::TuneSummary;
use crate::tune::report::improvement;
use crate::tune::report::plot::OpTimes;
use crate::tune::report::text::{name_width, shorten_middle, text_table, Align};
use crate::tune::TunePlan;

/// A finished (or interrupted) tuning job, rendered as its summary text (`Display`; every line
/// ends in a newline, and a blank line precedes the table and the totals).
#[derive(Clone, Copy, Debug)]
pub struct TuneTable<'a> {
    /// The plan that was run.
    pub plan: &'a TunePlan,
    /// What the run returned.
    pub summary: &'a TuneSummary,
    /// The result file written.
    pub result_file: &'a Path,
    /// Workers the job ran with.
    pub workers: usize,
}

/// `s` if it has at most `n` characters, else `…` and its last `n - 1` characters (`n` ≥ 1).
pub fn shorten(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        let tail: String = s
            .chars()
            .rev()
            .take(n - 1)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        format!("…{tail}")
    }
}

/// Terminal columns the table's columns other than the op name take (with separators).
const OTHER_COLUMNS: usize = 62;

impl TuneTable<'_> {
    /// The per-task table: op names shortened in the middle to fit `width` terminal columns
    /// (`None`: 56 columns for the name, as on a pipe).
    pub(crate) fn rows_text(&self, width: Option<u16>) -> String {
        let name_cols = match width {
            Some(w) => name_width(usize::from(w), OTHER_COLUMNS, 24),
            None => 56,
        };
        let mut rows = Vec::new();
        for o in &self.summary.outcomes {
            let t = &self.plan.tasks[o.task];
            let us = |x: Option<f64>| x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".into());
            let gain = match (o.before_us, o.after_us) {
                _ if o.default_confirmed() => "default".into(),
                (Some(b), Some(a)) if o.record.is_some() => improvement(b, a),
                _ => "-".into(),
            };
            let count = if t.op_names.len() > 1 {
                format!(" ×{}", t.op_names.len())
            } else {
                String::new()
            };
            let label = format!(
                "{}{count}",
                shorten_middle(&t.op_names[0], name_cols.saturating_sub(count.len()))
            );
            let decision = if o.failure.is_some() {
                "failed"
            } else {
                o.decision.as_str()
            };
            rows.push(vec![
                label,
                decision.to_owned(),
                us(o.before_us),
                us(o.after_us),
                gain,
                o.trials.to_string(),
            ]);
        }
        let (l, r) = (Align::Left, Align::Right);
        text_table(
            &[
                "op",
                "decision",
                "before(us)",
                "after(us)",
                "gain",
                "trials",
            ],
            &[l, l, r, r, r, r],
            rows,
            width,
        )
    }

    /// Each task's first op with its time before tuning and the time it runs in now: the tuned
    /// time when a better strategy was stored, else the default's (tasks without a measured
    /// default are left out); plan order, ×N appended for tasks of several ops.
    pub fn op_times(&self) -> Vec<OpTimes> {
        let mut out = Vec::new();
        for o in &self.summary.outcomes {
            let t = &self.plan.tasks[o.task];
            let Some(before) = o.before_us else {
                continue;
            };
            let improved = o.record.is_some() && !o.default_confirmed() && o.failure.is_none();
            let after = match o.after_us {
                Some(a) if improved => a,
                _ => before,
            };
            let mut name = t.op_names[0].clone();
            if t.op_names.len() > 1 {
                name.push_str(&format!(" ×{}", t.op_names.len()));
            }
            out.push(OpTimes {
                name,
                before_us: before,
                after_us: after,
            });
        }
        out
    }

    /// The whole summary text with the table fitted to `width` terminal columns.
    pub fn render(&self, width: Option<u16>) -> String {
        let mut out = format!("\n{}", self.rows_text(width));
        // Writing into a String cannot fail.
        let _ = self.totals(&mut out);
        out
    }

    /// The totals, confirmed defaults, time accounting and result file lines.
    fn totals(&self, f: &mut String) -> fmt::Result {
        use std::fmt::Write as _;
        let summary = self.summary;
        let s = &summary.report.summary;
        writeln!(
            f,
            "\n{}: total {}  add {}  hit {}  update {}  reserved {}  unsatisfied {}",
            summary.report.result.as_str(),
            s.total,
            s.add,
            s.hit,
            s.update,
            s.reserved,
            s.unsatisfied
        )?;
        let confirmed = (summary.outcomes.iter())
            .filter(|o| o.default_confirmed())
            .count();
        if confirmed > 0 {
            writeln!(
                f,
                "{confirmed} unsatisfied op(s) kept the default strategy, now stored as confirmed: reruns and convert hit it; REPEAT_TUNE=True searches again"
            )?;
        }
        let stops = summary.outcomes.iter().map(|o| (o.stop, o.trials));
        if let Some(line) = converged_line("op", stops) {
            writeln!(f, "{line}")?;
        }
        self.transfer_lines(f)?;
        let st = &summary.stats;
        writeln!(
            f,
            "time: wall {:.2} s; {} candidates measured; thread time: runner measuring {:.3} s, runner building spaces {:.3} s, outside the runner {:.3} s = search strategy {:.3} s + bank and result file {:.3} s ({:.2}% of work, {} worker(s))",
            st.wall.as_secs_f64(),
            st.trials,
            st.measure.as_secs_f64(),
            st.runner_setup.as_secs_f64(),
            st.outside.as_secs_f64(),
            st.search.as_secs_f64(),
            st.bank_report.as_secs_f64(),
            100.0 * st.outside_share(),
            self.workers
        )?;
        writeln!(f, "result file: {}", self.result_file.display())
    }
}

impl TuneTable<'_> {
    /// When related bank records seeded some op's search: a line saying how many, then per such
    /// task its first op name and the records (key prefix, SoC, distance), in the order the ops
    /// finished; nothing otherwise.
    fn transfer_lines(&self, f: &mut String) -> fmt::Result {
        use std::fmt::Write as _;
        let seeded: Vec<_> = (self.summary.outcomes.iter())
            .filter(|o| !o.seeded_by.is_empty())
            .collect();
        if seeded.is_empty() {
            return Ok(());
        }
        writeln!(
            f,
            "transfer: {} op(s) searched from the winners of related bank records (`bank-inspect show KEY`; --no-transfer searches cold):",
            seeded.len()
        )?;
        for o in seeded {
            let name = shorten_middle(&self.plan.tasks[o.task].op_names[0], 48);
            let by: Vec<String> = (o.seeded_by.iter())
                .map(|s| {
                    let key = s.key.to_string();
                    format!("{} ({}, distance {:.2})", &key[..12], s.soc, s.distance)
                })
                .collect();
            writeln!(f, "  {name}: {}", by.join(", "))?;
        }
        Ok(())
    }
}

/// The summary as on a pipe: [`TuneTable::render`] without a terminal width.
/// The summary line of the searches `--budget auto` stopped before their budget (`what`
/// names them: `op`, `subgraph`), from each search's stop reason and measurements: how many,
/// the rule ([`StopRule::default`]) and their median length; `None` when none stopped so.
pub(crate) fn converged_line(
    what: &str,
    searches: impl Iterator<Item = (Option<StopReason>, u64)>,
) -> Option<String> {
    let converged: Vec<f64> = searches
        .filter(|(stop, _)| *stop == Some(StopReason::Converged))
        .map(|(_, trials)| trials as f64)
        .collect();
    let m = median(&converged)?;
    let rule = StopRule::default();
    Some(format!(
        "{} {what} search(es) stopped before the budget (--budget auto): the model expected less than {}% from the next {} measurements and the best had not improved by as much over the last {}; median {m} measurements",
        converged.len(),
        rule.threshold * 100.0,
        rule.horizon,
        rule.stall
    ))
}

impl fmt::Display for TuneTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(None))
    }
}
