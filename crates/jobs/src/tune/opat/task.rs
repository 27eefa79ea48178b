//! One OPAT task on a worker: search the runner's space, re-measure best and baseline side by
//! side in rounds, judge them with [`WinRule::judge`](super::WinRule::judge), and build the
//! record to offer the bank ([`Record::tuned`] for a winner, [`Record::confirmed`] for a
//! confirmed default).
//!
//! [`look_up`] splits a plan into reused hits and [`Job`]s; [`Opat::tune_one`] is the task
//! function the worker pool (`tune::pool`) runs for each job.

use std::sync::atomic::AtomicBool;
use std::time::Instant;
use tunebank_key::StrategyMap;

use search_strategies::bayes::BayesConfig;
use search_strategies::{ConfigId, Driver, History, StopReason, StopRule};

use tunebank_bank::{Bank, Descriptor, Lookup, Provenance, Record, Timing};
use tunebank_measure::{Measure, MeasureError, Outcome, RunnerObjective, TaskSpace, TuningTask};

use super::outcome::TaskOutcome;
use crate::tune::pool::{Budget, Cancellable, JobResult, TimedRunner};
use crate::tune::transfer::{transfer_strategy, Related, Snapshot};
use crate::tune::{decide, Findings, Offer, Round, SearchEnd};
use crate::tune::{task_seed, TuneError, TunePlan, TuneSettings, TuneTask};

/// A queued task: its index and the bank entry it had (strategy, stored time), if any.
pub struct Job {
    /// Index into [`TunePlan::tasks`].
    pub(crate) task: usize,
    /// The entry a `REPEAT_TUNE` hit had: the baseline to beat.
    pub(crate) hit: Option<(StrategyMap, f64)>,
    /// The hit is a default confirmed by a smaller per-op budget than this job's: it is
    /// searched again, and a search of the whole budget without a clear win confirms it anew
    /// with this job's budget.
    pub(crate) reconfirm: bool,
}

impl JobResult for TaskOutcome {
    fn trials_used(&self) -> u64 {
        self.trials
    }
}

/// Looks every task up: a hit without `repeat_tune` is reused (an untouched outcome, decided
/// without any measurement), unless it is a default confirmed by a per-op budget smaller than
/// `budget` (`confirmed_budget`, absent = 0); every other task becomes a job, in plan order.
pub(crate) fn look_up(
    plan: &TunePlan,
    bank: &Bank,
    repeat_tune: bool,
    budget: u64,
) -> Result<(Vec<Job>, Vec<TaskOutcome>), TuneError> {
    let mut jobs = Vec::new();
    let mut reused = Vec::new();
    for (i, t) in plan.tasks.iter().enumerate() {
        match bank.lookup(&t.key)? {
            Lookup::Hit(h) => {
                let p = &h.answer.performance;
                let reconfirm = p.default_confirmed && p.confirmed_budget.unwrap_or(0) < budget;
                if repeat_tune || reconfirm {
                    jobs.push(Job {
                        task: i,
                        hit: Some((h.answer.strategy.clone(), p.tuned_us)),
                        reconfirm,
                    });
                } else {
                    reused.push(TaskOutcome::untouched(i, true));
                }
            }
            Lookup::Miss { .. } => jobs.push(Job {
                task: i,
                hit: None,
                reconfirm: false,
            }),
        }
    }
    Ok((jobs, reused))
}

/// Why a task ended early: the runner does not tune the op (a clear skip) or failed it.
enum Early {
    Unsupported(String),
    Failure(String),
}

impl From<MeasureError> for Early {
    fn from(e: MeasureError) -> Self {
        match e {
            e @ MeasureError::Unsupported { .. } => Early::Unsupported(e.to_string()),
            e => Early::Failure(e.to_string()),
        }
    }
}

/// Best and baseline, re-measured side by side.
struct SideBySide {
    /// Each round's baseline samples, in round order.
    base: Vec<Vec<f64>>,
    /// Each round's candidate samples (empty rounds when the baseline was measured alone).
    best: Vec<Vec<f64>>,
}

impl SideBySide {
    fn rounds(&self) -> Vec<Round<'_>> {
        self.base
            .iter()
            .zip(&self.best)
            .map(|(b, c)| Round {
                baseline: b,
                candidate: c,
            })
            .collect()
    }
}

/// A strategy with its measured times, to be stored.
struct Measured {
    strategy: StrategyMap,
    baseline_us: f64,
    tuned_us: f64,
    samples_us: Vec<f64>,
    default_confirmed: bool,
}

/// What every OPAT task of a job shares.
pub(crate) struct Opat<'a> {
    /// The plan the jobs index.
    pub(crate) plan: &'a TunePlan,
    /// How the job tunes.
    pub(crate) settings: &'a TuneSettings,
    /// The job-wide budget.
    pub(crate) budget: &'a Budget,
    /// The job's cancel flag.
    pub(crate) cancel: &'a AtomicBool,
    /// The related records of the job's misses, read when the job started (empty: every
    /// search starts cold).
    pub(crate) transfer: &'a Snapshot,
    /// Candidates each task's search measures per round, by task index
    /// (`TuneSettings::round_width`; a task not listed: 1).
    pub(crate) widths: &'a [usize],
}

impl Opat<'_> {
    /// Searches and decides one job on this worker's runner with `granted` trials; the outcome
    /// carries the task's times.
    pub(crate) fn tune_one(
        &self,
        job: &Job,
        runner: &mut TimedRunner,
        granted: u64,
    ) -> TaskOutcome {
        let started = Instant::now();
        let (measured_before, setup_before) = (runner.spent, runner.setup);
        let mut out = TaskOutcome::untouched(job.task, job.hit.is_some());
        match self.tune_into(&mut out, job, runner, granted) {
            Ok(()) => {}
            Err(Early::Unsupported(why)) => out.unsupported = Some(why),
            Err(Early::Failure(why)) => out.failure = Some(why),
        }
        out.measure_time = runner.spent - measured_before;
        out.setup_time = runner.setup - setup_before;
        out.task_time = started.elapsed();
        out
    }

    /// The steps of [`Opat::tune_one`], filling `out` as they go.
    fn tune_into(
        &self,
        out: &mut TaskOutcome,
        job: &Job,
        runner: &mut TimedRunner,
        granted: u64,
    ) -> Result<(), Early> {
        let t = &self.plan.tasks[job.task];
        let task = TuningTask::new(t.descriptor.clone());
        let hit = job.hit.is_some();
        let space = runner.space(&task)?;
        let default = runner.default_strategy(&task)?;
        // What AOE's GA puts first in its first generation: the bank's old tiling for the
        // shape, then the default tiling (those in the space).
        let first: Vec<ConfigId> = (job.hit.iter().map(|(s, _)| s))
            .chain([&default])
            .filter_map(|s| space.config_of(s))
            .collect();
        let baseline = match &job.hit {
            Some((s, _)) => s.clone(),
            None => default,
        };
        out.baseline = Some(baseline.clone());
        // A REPEAT_TUNE or reconfirming search starts from related records too (never its own
        // entry): the side-by-side against that entry still decides what is stored.
        let related = self.transfer.get(job.task);
        let history = self.search(out, t, &task, &space, related, &first, runner, granted)?;
        let Some(best) = history.best() else {
            // Every candidate failed (none fits the core, say): nothing to write, and the
            // report says why the op is left untuned.
            let soc = &t.descriptor.soc.version;
            return Err(Early::Unsupported(match out.trials {
                0 => format!(
                    "no tiling fits {soc}: the op's tiling space is empty under the core's limits"
                ),
                n => format!("none of the {n} tilings tried ran on {soc}"),
            }));
        };
        let best_strategy = space.strategy(best.id);
        let same = best_strategy == baseline;
        let search = SearchEnd::new(
            out.trials,
            self.settings.trials_per_op as u64,
            space.len() as u64,
        )
        .or_converged(out.stop == Some(StopReason::Converged));
        // The best is the baseline itself: no win, so unless the decision would confirm the
        // baseline (measured), there is nothing to compare and nothing to store.
        let unbeaten = Findings {
            hit,
            reconfirm: job.reconfirm,
            clear_win: false,
            baseline_measured: true,
            search,
        };
        if same && decide(&unbeaten, None).offer == Offer::Nothing {
            return Ok(());
        }
        let best = (!same).then_some(best_strategy);
        let measured = self.side_by_side(runner, &task, &baseline, best.as_ref())?;
        let stored = self.decide(out, job, search, baseline, best, measured);
        out.record = stored.map(|m| self.record(t, runner.identity(), out.trials, m));
        Ok(())
    }

    /// Searches the task's space within the `granted` trials and the per-op time (capped by
    /// the job's deadline), starting from the `related` records' winners when any projects onto
    /// the space (AOE's GA: after `first`, see [`transfer_strategy`]); sets the outcome's
    /// trials, stop reason and the records that seeded it.
    #[allow(clippy::too_many_arguments)]
    fn search(
        &self,
        out: &mut TaskOutcome,
        t: &TuneTask,
        task: &TuningTask,
        space: &TaskSpace,
        related: &[Related],
        first: &[ConfigId],
        runner: &mut TimedRunner,
        granted: u64,
    ) -> Result<History, Early> {
        let settings = self.settings;
        let seed = task_seed(settings.seed, &t.key);
        let Some((inner, seeded_by)) = transfer_strategy(
            &settings.strategy,
            seed,
            space,
            related,
            &t.descriptor.soc.version,
            first,
            &BayesConfig::default(),
        ) else {
            return Err(Early::Failure(format!(
                "unknown strategy {}",
                settings.strategy
            )));
        };
        out.seeded_by = seeded_by;
        let mut strategy = Cancellable {
            inner,
            cancel: self.cancel,
        };
        let mut driver = Driver::new(usize::try_from(granted).unwrap_or(usize::MAX));
        driver.batch = self.widths.get(out.task).copied().unwrap_or(1).max(1);
        driver.time_limit = self.budget.job_time_limit(settings.time_per_op);
        driver.stop_rule = settings.auto_stop.then(StopRule::default);
        let mut objective = RunnerObjective::new(runner, task);
        let search = driver.run(&space.space, &mut strategy, &mut objective);
        out.trials = search.history.len() as u64;
        out.stop = Some(search.stop);
        match objective.error {
            Some(e) => Err(e.into()),
            None => Ok(search.history),
        }
    }

    /// Re-measures the baseline and `best` side by side: each round measures both in one
    /// batch (the baseline alone when `best` is `None`, the search's best being the baseline
    /// itself), for at least as many rounds as the win rule needs to be able to decide
    /// ([`WinRule::min_rounds`](super::WinRule::min_rounds)). Any runner error fails the task.
    fn side_by_side(
        &self,
        runner: &mut TimedRunner,
        task: &TuningTask,
        baseline: &StrategyMap,
        best: Option<&StrategyMap>,
    ) -> Result<SideBySide, Early> {
        let mut batch = vec![baseline.clone()];
        batch.extend(best.cloned());
        let mut m = SideBySide {
            base: Vec::new(),
            best: Vec::new(),
        };
        let samples = |o: Option<&Outcome>| match o {
            Some(Outcome::Measurement { samples_us }) => samples_us.clone(),
            _ => Vec::new(),
        };
        let rounds = self
            .settings
            .confirm_rounds
            .max(self.settings.win.min_rounds());
        for _ in 0..rounds {
            let o = runner
                .measure(task, &batch)
                .map_err(|e| Early::Failure(e.to_string()))?;
            m.base.push(samples(o.first()));
            m.best.push(samples(o.get(1)));
        }
        Ok(m)
    }

    /// Applies the win rule to the side-by-side samples and the drivers' one decision
    /// function to its verdict (`tune::decide`): sets the outcome's times, findings and
    /// decision (settled once the bank has answered) and returns what to offer the bank — the
    /// winner on a clear win, or the default (the baseline), measured just now, as confirmed.
    fn decide(
        &self,
        out: &mut TaskOutcome,
        job: &Job,
        search: SearchEnd,
        baseline: StrategyMap,
        best: Option<StrategyMap>,
        m: SideBySide,
    ) -> Option<Measured> {
        let hit = job.hit.is_some();
        let judgement = self.settings.win.judge(&m.rounds());
        let base_median = judgement.baseline_us;
        let after = match best {
            None => base_median,
            Some(_) => judgement.candidate_us,
        };
        out.after_us = after;
        // A baseline that no longer builds or runs (a stale bank entry) loses to any working
        // candidate; its stored time stands in for the report.
        let (before, clear) = match base_median {
            Some(b) => (Some(b), best.is_some() && judgement.clear),
            None => (
                job.hit.as_ref().map(|h| h.1),
                best.is_some() && after.is_some(),
            ),
        };
        out.before_us = before;
        let winner = match (clear, before, after, best) {
            (true, Some(b), Some(a), Some(best)) => Some((b, a, best)),
            _ => None,
        };
        let findings = Findings {
            hit,
            reconfirm: job.reconfirm,
            clear_win: winner.is_some(),
            baseline_measured: base_median.is_some(),
            search,
        };
        out.findings = Some(findings);
        let decided = decide(&findings, None);
        out.decision = decided.decision;
        match (decided.offer, winner, base_median) {
            (Offer::Winner, Some((b, a, best)), _) => Some(Measured {
                strategy: best,
                baseline_us: b,
                tuned_us: a,
                samples_us: m.best.concat(),
                default_confirmed: false,
            }),
            // No clear win over the default, after a full search: the default is offered as
            // confirmed (reported unsatisfied on a miss, reserved when a confirmed default is
            // confirmed anew), so the task is a hit from now on.
            (Offer::ConfirmedDefault, _, Some(b)) => Some(Measured {
                strategy: baseline,
                baseline_us: b,
                tuned_us: b,
                samples_us: m.base.concat(),
                default_confirmed: true,
            }),
            _ => None,
        }
    }

    /// The record of task `t` storing `m`, measured by `runner` after `trials` searched: the
    /// winner ([`Record::tuned`]) or the confirmed default ([`Record::confirmed`]).
    fn record(&self, t: &TuneTask, runner: String, trials: u64, m: Measured) -> Record {
        let settings = self.settings;
        let descriptor = Descriptor::Op(t.descriptor.clone());
        let options = settings.options_given.clone();
        let provenance =
            Provenance::tuned(&settings.strategy, trials, task_seed(settings.seed, &t.key));
        let timing = Timing {
            us: m.tuned_us,
            samples_us: m.samples_us,
            runner,
        };
        if m.default_confirmed {
            let budget = settings.trials_per_op as u64;
            Record::confirmed(descriptor, options, m.strategy, timing, budget, provenance)
        } else {
            Record::tuned(
                descriptor,
                options,
                m.strategy,
                m.baseline_us,
                timing,
                provenance,
            )
        }
    }
}
