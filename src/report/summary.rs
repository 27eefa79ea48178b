//! The summary of a tuning job as `tunebank tune` prints it at the end: one row per task
//! (decision, times before and after, gain, trials), the AOE totals, the confirmed defaults, the
//! time accounting and the result file.

use std::fmt;
use std::path::Path;

use crate::report::improvement;
use crate::tune::{TunePlan, TuneSummary};

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

impl TuneTable<'_> {
    /// The per-task rows.
    fn rows(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "\n{:<56} {:<11} {:>11} {:>11} {:>8} {:>6}",
            "op", "decision", "before(us)", "after(us)", "gain", "trials"
        )?;
        for o in &self.summary.outcomes {
            let t = &self.plan.tasks[o.task];
            let us = |x: Option<f64>| x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".into());
            let gain = match (o.before_us, o.after_us) {
                _ if o.default_confirmed() => "default".into(),
                (Some(b), Some(a)) if o.record.is_some() => improvement(b, a),
                _ => "-".into(),
            };
            let mut label = shorten(&t.op_names[0], 52);
            if t.op_names.len() > 1 {
                label = format!("{label} ×{}", t.op_names.len());
            }
            let decision = if o.failure.is_some() {
                "failed"
            } else {
                o.decision.as_str()
            };
            writeln!(
                f,
                "{label:<56} {decision:<11} {:>11} {:>11} {gain:>8} {:>6}",
                us(o.before_us),
                us(o.after_us),
                o.trials
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for TuneTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.rows(f)?;
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
