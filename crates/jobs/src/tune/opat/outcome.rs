//! What a tuning job produces, and the calling thread's bookkeeping of it.
//!
//! A task's [`TaskOutcome`] carries its [`Decision`], times and the record it offers the bank;
//! [`TaskOutcome::store`] writes the record and settles the decision (the drivers' one
//! decision function, `tune::decide`). [`Progress`] takes finished outcomes in order: it counts
//! them into the AOE report ([`Decision::count`], [`TaskOutcome::modified_ops`]), rewrites the
//! result file, tells the job's observer (`job::Observer`), accounts time in [`TuneStats`] and
//! finally gives the [`TuneSummary`], its result by the one outcome rule (`tune::job_result`).

use std::time::{Duration, Instant};
use tunebank_key::StrategyMap;

use search_strategies::StopReason;

use crate::tune::report::{ModifiedOp, OpSeeded, OpatReport, ResultFile, SeededBy, TuneMode};
use tunebank_bank::policy::{Verdict, WritePolicy};
use tunebank_bank::{Bank, BankError, Record};

use crate::tune::{decide, job_result, Findings, Finished, Observer, TaskCounts};
use crate::tune::{Decision, TuneError, TunePlan, TuneTask};

/// The result of one finished task.
#[derive(Clone, Debug)]
pub struct TaskOutcome {
    /// Index into [`TunePlan::tasks`].
    pub task: usize,
    /// The decision: `reserved` (a hit) or `unsatisfied` (a miss) until the bank has stored
    /// the winner this task offers (`TaskOutcome::store`), `add` or `update` after.
    pub decision: Decision,
    /// Baseline median re-measured side by side, µs (`None` when nothing was measured).
    pub before_us: Option<f64>,
    /// Best strategy's median re-measured side by side, µs.
    pub after_us: Option<f64>,
    /// Candidates measured by the search.
    pub trials: u64,
    /// Why the search stopped, if one ran.
    pub stop: Option<StopReason>,
    /// Why the op could not be tuned (the runner's task-level error), if so. Such ops are
    /// listed in `tuning_failed_operators`.
    pub failure: Option<String>,
    /// Why the runner does not tune this op at all (`MeasureError::Unsupported`), if so: a
    /// clear skip, counted as unsatisfied (or reserved on a hit), not a failure.
    pub unsupported: Option<String>,
    /// The record offered the bank: the winner, or the default confirmed by a full search
    /// without a clear win on a miss (see `TaskOutcome::default_confirmed`). Whether the bank
    /// stored it is [`TaskOutcome::bank_verdict`]'s.
    pub record: Option<Record>,
    /// The strategy the search's best was compared against: the bank entry on a hit, else
    /// the runner's default (`None` when no search ran).
    pub baseline: Option<StrategyMap>,
    /// How the bank-write policy (`WritePolicy`) judged `record` against what the key held
    /// when it was written (`None` when there was no record). A verdict that does not replace
    /// means the record was not stored: another process stored a record for the key since this
    /// job looked it up, and the policy kept that one; the task is then reported `reserved` (a
    /// hit) or `unsatisfied` (a miss), as nothing of it was added or updated.
    pub bank_verdict: Option<Verdict>,
    /// The related bank records whose strategies seeded the search (transfer, see
    /// [`super::transfer`]), in the order proposed; empty when the search started cold.
    pub seeded_by: Vec<SeededBy>,
    /// Time inside `Measure::measure` for this task.
    pub measure_time: Duration,
    /// Time inside the runner's `space` and `default_strategy` for this task.
    pub setup_time: Duration,
    /// Time of the whole task on its worker.
    pub task_time: Duration,
    /// What the search and the win rule found, for the decision (`None`: no decision was
    /// made, the task is left as its look-up found it).
    pub(crate) findings: Option<Findings>,
}

impl TaskOutcome {
    /// Whether the bank stored the default as confirmed (a miss, or a confirmed default
    /// searched again, whose full search found no clear win; the decision is `unsatisfied` or
    /// `reserved`).
    pub fn default_confirmed(&self) -> bool {
        self.findings
            .is_some_and(|f| decide(&f, self.bank_verdict).default_confirmed)
    }

    /// Task `task` left as it was: `reserved` on a hit, else `unsatisfied`; nothing measured,
    /// nothing written. Tuning fills in what it does.
    pub(crate) fn untouched(task: usize, hit: bool) -> Self {
        TaskOutcome {
            task,
            decision: if hit {
                Decision::Reserved
            } else {
                Decision::Unsatisfied
            },
            before_us: None,
            after_us: None,
            trials: 0,
            stop: None,
            failure: None,
            unsupported: None,
            record: None,
            baseline: None,
            bank_verdict: None,
            seeded_by: Vec::new(),
            measure_time: Duration::ZERO,
            setup_time: Duration::ZERO,
            task_time: Duration::ZERO,
            findings: None,
        }
    }

    /// Task `task` whose runner broke down (`why`) after `task_time`: nothing written, listed
    /// in `tuning_failed_operators`.
    pub(crate) fn failed(task: usize, hit: bool, why: String, task_time: Duration) -> Self {
        TaskOutcome {
            failure: Some(why),
            task_time,
            ..TaskOutcome::untouched(task, hit)
        }
    }

    /// Writes the outcome's record, if any, under the bank-write policy with the baseline it
    /// beat ([`WritePolicy::after_tuning`]), keeps the verdict in
    /// [`TaskOutcome::bank_verdict`] and settles the decision on it (`tune::decide`).
    pub(crate) fn store(&mut self, bank: &Bank) -> Result<(), BankError> {
        if let Some(r) = &self.record {
            let policy = WritePolicy::after_tuning(self.baseline.as_ref());
            self.bank_verdict = Some(policy.write(bank, r)?);
        }
        if let Some(f) = &self.findings {
            self.decision = decide(f, self.bank_verdict).decision;
        }
        Ok(())
    }

    /// The observer's view of this finished task, named `name`: `done` of `total` finished.
    pub(crate) fn finished<'a>(&'a self, name: &'a str, done: usize, total: usize) -> Finished<'a> {
        Finished {
            name,
            decision: self.decision.as_str(),
            before_us: self.before_us,
            after_us: self.after_us,
            failure: self.failure.as_deref(),
            unsupported: self.unsupported.as_deref(),
            default_confirmed: self.default_confirmed(),
            done,
            total,
        }
    }

    /// The result file's `repo_modified_operators` entries of this outcome: one per op name of
    /// `task` for an add or update with both times, else none.
    pub(crate) fn modified_ops(&self, task: &TuneTask) -> Vec<ModifiedOp> {
        let (Some(mode), Some(b), Some(a)) =
            (self.decision.update_mode(), self.before_us, self.after_us)
        else {
            return Vec::new();
        };
        task.op_names
            .iter()
            .map(|name| ModifiedOp {
                op_name: name.clone(),
                op_types: task.op_types.clone(),
                mode: TuneMode::Schedule,
                before_us: b,
                after_us: a,
                update_mode: mode,
            })
            .collect()
    }

    /// The result file's `tunebank_transfer` entries of this outcome: one per op name of `task`
    /// when related records seeded its search, else none.
    pub(crate) fn seeded_ops(&self, task: &TuneTask) -> Vec<OpSeeded> {
        if self.seeded_by.is_empty() {
            return Vec::new();
        }
        task.op_names
            .iter()
            .map(|name| OpSeeded {
                op_name: name.clone(),
                seeded_by: self.seeded_by.clone(),
            })
            .collect()
    }
}

/// Time accounting of a job. Thread times are summed over threads, so with several workers
/// they exceed the wall time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TuneStats {
    /// Wall time of [`super::run`].
    pub wall: Duration,
    /// Time inside `Measure::measure`.
    pub measure: Duration,
    /// Time inside the runner's other methods (`space`: enumerating the valid strategies;
    /// `default_strategy`).
    pub runner_setup: Duration,
    /// Everything else, the driver's own work: search strategy, look-ups, bank writes,
    /// result-file writes (`search + bank_report`).
    pub outside: Duration,
    /// The part of `outside` on the workers: the search strategy and search bookkeeping.
    pub search: Duration,
    /// The part of `outside` on the calling thread: look-ups, bank writes, result files.
    pub bank_report: Duration,
    /// Candidates measured in searches.
    pub trials: u64,
}

impl TuneStats {
    /// `outside / (outside + runner_setup + measure)`: the share of the job's work that is
    /// neither measurement nor the runner's own preparation.
    pub(crate) fn outside_share(&self) -> f64 {
        let total = (self.outside + self.runner_setup + self.measure).as_secs_f64();
        if total > 0.0 {
            self.outside.as_secs_f64() / total
        } else {
            0.0
        }
    }

    /// Adds a task's worker times and trials: what it spent measuring and preparing, and the
    /// rest of its time as search.
    pub(crate) fn add_task(&mut self, o: &TaskOutcome) {
        self.measure += o.measure_time;
        self.runner_setup += o.setup_time;
        self.trials += o.trials;
        self.search += o.task_time.saturating_sub(o.measure_time + o.setup_time);
    }
}

/// What [`super::run`] returns.
#[derive(Clone, Debug)]
pub struct TuneSummary {
    /// The final report (also written to the result file).
    pub report: OpatReport,
    /// Every finished task, in the order finished.
    pub outcomes: Vec<TaskOutcome>,
    /// Whether the job was cancelled or ran out of total time/trials before every task ran.
    pub interrupted: bool,
    /// Time accounting.
    pub stats: TuneStats,
}

/// How the tasks of a job of `total` tasks ended, from the outcomes of those that finished.
pub(crate) fn task_counts(outcomes: &[TaskOutcome], total: usize) -> TaskCounts {
    let failed = outcomes.iter().filter(|o| o.failure.is_some()).count();
    let unsupported = outcomes
        .iter()
        .filter(|o| o.failure.is_none() && o.unsupported.is_some())
        .count();
    TaskCounts {
        unfinished: total.saturating_sub(outcomes.len()),
        failed,
        tuned: outcomes.len() - failed - unsupported,
    }
}

/// The calling thread's record of a job: the report as it grows, the finished outcomes, the
/// time accounting, the result file and the observer.
pub(crate) struct Progress<'a> {
    plan: &'a TunePlan,
    result_file: Option<&'a ResultFile>,
    observer: &'a mut dyn Observer,
    report: OpatReport,
    outcomes: Vec<TaskOutcome>,
    /// Time accounting so far.
    pub(crate) stats: TuneStats,
}

impl<'a> Progress<'a> {
    /// Starts the job's record and writes the empty report (`tuning incomplete`).
    pub(crate) fn start(
        plan: &'a TunePlan,
        tuning_name: &str,
        result_file: Option<&'a ResultFile>,
        observer: &'a mut dyn Observer,
    ) -> Result<Self, TuneError> {
        let progress = Progress {
            plan,
            result_file,
            observer,
            report: OpatReport {
                tuned_shapes: plan.shapes.clone(),
                ..OpatReport::new(tuning_name)
            },
            outcomes: Vec::with_capacity(plan.tasks.len()),
            stats: TuneStats::default(),
        };
        progress.write_file()?;
        Ok(progress)
    }

    /// Rewrites the result file (atomically), if the job has one.
    pub(crate) fn write_file(&self) -> Result<(), TuneError> {
        if let Some(f) = self.result_file {
            f.write(&self.report).map_err(|source| TuneError::Report {
                path: f.path.display().to_string(),
                source,
            })?;
        }
        Ok(())
    }

    /// Records a finished task whose record, if any, is already in the bank: counts it, lists
    /// its modified or failed ops, rewrites the result file when `write` (reused hits are
    /// written once, together) and tells the observer.
    pub(crate) fn record(&mut self, o: TaskOutcome, write: bool) -> Result<(), TuneError> {
        let task = &self.plan.tasks[o.task];
        o.decision.count(&mut self.report.summary);
        self.report.modified.extend(o.modified_ops(task));
        self.report.transfer.extend(o.seeded_ops(task));
        if o.failure.is_some() {
            self.report.failed_ops.extend(task.op_names.iter().cloned());
        }
        if write {
            self.write_file()?;
        }
        self.outcomes.push(o);
        let done = self.outcomes.len();
        let last = self.outcomes.last().expect("just pushed");
        let name = &self.plan.tasks[last.task].op_names[0];
        self.observer
            .finished(&last.finished(name, done, self.plan.tasks.len()));
        Ok(())
    }

    /// Ends the job begun at `start`: the result (the one outcome rule, `tune::job_result`),
    /// the tuning time of a complete job, the final result file and the summary.
    pub(crate) fn finish(mut self, start: Instant) -> Result<TuneSummary, TuneError> {
        let counts = task_counts(&self.outcomes, self.plan.tasks.len());
        let interrupted = counts.unfinished > 0;
        self.report.result = job_result(counts);
        let t = Instant::now();
        if !interrupted {
            self.report.tuning_time_s = Some(start.elapsed().as_secs_f64());
        }
        self.write_file()?;
        let mut stats = self.stats;
        stats.bank_report += t.elapsed();
        stats.wall = start.elapsed();
        stats.outside = stats.bank_report + stats.search;
        Ok(TuneSummary {
            report: self.report,
            outcomes: self.outcomes,
            interrupted,
            stats,
        })
    }
}
