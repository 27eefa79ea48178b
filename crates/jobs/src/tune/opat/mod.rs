//! OPAT, the operator tuning driver: plan, search, decide, write, report.
//!
//! [`plan`] turns a model and the user's options into [`TuneTask`]s: the fused tuning units of
//! every dynamic profile, resolved into keys, one task per unique key (identical keys in one
//! model are tuned once and reported under every op name). [`run`] then handles each task as
//! DESIGN §8 says:
//!
//! - look the key up; a hit without `REPEAT_TUNE` is reused: counted as hit and reserved,
//!   nothing measured;
//! - otherwise search the runner's [`TaskSpace`](tunebank_measure::TaskSpace) with a
//!   `search-strategies` strategy within the per-op budget (trials and time, both also capped
//!   by the job's overall budget), then re-measure the best strategy and the baseline (the bank
//!   entry on a hit, else the runner's default strategy) side by side in at least
//!   `WinRule::min_rounds` rounds and judge them with `WinRule::judge` (the signed-rank test
//!   over rounds). OPAT does so for every runner, the noiseless simulator included: the stored
//!   record keeps every round's samples, so judging one exact pair instead would change what
//!   is stored. The win rule is the one rule of the three drivers: SGAT and GDAT judge their
//!   models' exact times with `WinRule::judge_deterministic`, and all three report the same
//!   [`Decision`];
//! - the drivers' one decision function (`tune::decide`) turns the verdict into the record to
//!   offer and the decision: only a clear win is offered as a tuned strategy
//!   ([`Record::tuned`](tunebank_bank::Record::tuned)), reported `add` (no entry before) or
//!   `update` (entry before) once the bank stored it; otherwise the task is `reserved` (hit) or
//!   `unsatisfied` (miss). So `hit = update + reserved` and `total = add + hit + unsatisfied`
//!   always hold, also for a job stopped part way;
//! - a miss whose search was full (its whole per-op budget, or the whole space) without a clear
//!   win stores the default strategy, re-measured, as *confirmed*
//!   (`Performance::default_confirmed`, [`Record::confirmed`](tunebank_bank::Record::confirmed)).
//!   The task is still reported `unsatisfied` and never listed as modified, but from then on it
//!   is a hit: a rerun measures nothing and a converter finds every tuned op. `REPEAT_TUNE`
//!   searches it again and replaces it only on a clear win (`update`). A search cut short (by
//!   the job's overall budget or time, the per-op time or a strategy that stopped proposing),
//!   a runner failure or an unsupported op confirms nothing;
//! - a bank shared by several processes may change between a task's look-up and its write, so
//!   the write decides inside its transaction (`Bank::write_batch_if`) against what the key
//!   holds then, under the bank-write policy ([`tunebank_bank::policy`]): a winner replaces the
//!   baseline it beat, a confirmed default, a damaged record, a record whose time comes from a
//!   weaker measurement source, or a slower one from the same source; a confirmed default only
//!   fills an empty key or replaces a damaged one. A better record another process stored
//!   meanwhile stays, and this task is then reported `reserved` or `unsatisfied`: nothing of it
//!   was added or updated.
//!
//! Tasks run on `workers` threads (`std::thread::scope`; at most one per task searched), each
//! with its own runner built from the runner spec (runners need not be `Sync`). `workers` is
//! also the job's measurement slots: each search measures `TuneSettings::round_width`
//! candidates per round, so that a model with fewer distinct ops than slots still fills them
//! (one op: all the slots in one batch). Results come back to the calling thread, which
//! writes each finished task's bank record *before* it adds the task to the result file, so a
//! rerun after a kill at any instant finds every reported winner as a hit. Cancellation is
//! cooperative: setting the `cancel` flag stops the search loops at their next batch; tasks not
//! finished are left out, and the report says `tuning incomplete`.
//!
//! The parts: the shared plumbing in [`crate::tune`] (`plan.rs`: [`plan`], `settings.rs`:
//! [`TuneSettings`], `pool.rs`: the worker pool, `decision.rs`: [`WinRule`], `Judgement`,
//! `decide`, [`Decision`] and the outcome rule `job_result`, `observe.rs`: the observer,
//! `transfer/`) and, here, `task.rs` (one OPAT task: search, side-by-side re-measurement, win
//! rule, the record to offer), `outcome.rs` ([`TaskOutcome`], [`TuneStats`], [`TuneSummary`],
//! and the calling thread's bookkeeping: report counts, result file, observer), `memory.rs`
//! (the worker cap) and `transfer/` (a search seeded from related bank records, read once when
//! the job starts; see [`transfer`]).
//!
//! Time spent inside [`Measure::measure`](tunebank_measure::Measure::measure) is accounted separately from everything else
//! (strategy, space building, bank, report), see [`TuneStats`].
//!
//! ```
//! use std::collections::BTreeSet;
//! use std::sync::atomic::AtomicBool;
//! use tunebank_bank::Bank;
//! use tunebank_key::{FsReader, RecordKind, ResolvedOptions};
//! use tunebank_model::load_onnx;
//! use tunebank_jobs::tune::{self, TuneSettings};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! let model = load_onnx(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/models/resnet50.onnx"))?;
//! let options = ResolvedOptions::from_args(["--soc_version=Ascend910B2"], &FsReader)?;
//! let only: BTreeSet<String> = ["Gemm".to_string()].into(); // AOE's tune_ops_file
//! let plan = tune::plan(&model, &options, &options.soc()?, Some(&only))?;
//! let bank = Bank::builder(RecordKind::Op, "Ascend910B2")
//!     .custom_path(dir.path().join("op.redb"))
//!     .no_default_builtin()
//!     .open()?;
//! let settings = TuneSettings {
//!     runner: "sim".parse()?,
//!     trials_per_op: 16,
//!     options_given: options.given().clone(),
//!     ..TuneSettings::default()
//! };
//! let cancel = AtomicBool::new(false); // a signal handler may set it
//! let first = tune::opat::run(&plan, &bank, &settings, "resnet50", None, &cancel, &mut ())?;
//! let s = first.report.summary;
//! assert_eq!((s.total, s.add), (1, 1)); // the default Gemm tiling is beaten clearly
//!
//! // A rerun finds the winner in the bank and measures nothing.
//! let again = tune::opat::run(&plan, &bank, &settings, "resnet50", None, &cancel, &mut ())?;
//! assert_eq!((again.report.summary.hit, again.stats.trials), (1, 0));
//! # Ok(())
//! # }
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::tune::pool::{Budget, Pool, TimedRunner};
use crate::tune::range_record;
use crate::tune::report::ResultFile;
use crate::tune::{
    check_settings, check_soc, transfer, Observer, TuneError, TunePlan, TuneSettings, TuneTask,
};
#[cfg(doc)]
use crate::tune::{plan, Decision, WinRule};
use outcome::Progress;
pub(crate) use task::look_up;
use task::{Job, Opat};
use tunebank_bank::Bank;

mod outcome;
mod table;
mod task;
#[cfg(test)]
mod tests;

pub(crate) use outcome::task_counts;
pub use outcome::TuneStats;

pub use outcome::TuneSummary;

pub use outcome::TaskOutcome;
pub(crate) use table::converged_line;
pub use table::{shorten, TuneTable};

/// Tunes every task of `plan` against `bank` (see the module docs for the rules), rewriting
/// `result_file` after every finished task, and returns the summary. `cancel` stops the job
/// cooperatively; the bank is then consistent and the report says `tuning incomplete`.
///
/// Contract: a tuned strategy is written only for a clear win, and a miss whose full search
/// found none stores its default as confirmed (see the module docs); each finished task's
/// record is written before the task appears in the result file; the report's summary counts
/// only finished tasks and always satisfies AOE's invariants.
pub fn run(
    plan: &TunePlan,
    bank: &Bank,
    settings: &TuneSettings,
    tuning_name: &str,
    result_file: Option<&ResultFile>,
    cancel: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<TuneSummary, TuneError> {
    check_settings(settings)?;
    if let Some(t) = plan.tasks.first() {
        check_soc(settings, &t.descriptor.soc.version)?;
    }
    let start = Instant::now();
    let mut progress = Progress::start(plan, tuning_name, result_file, observer)?;
    // Look-ups first: hits without REPEAT_TUNE are decided without any measurement. They
    // write nothing to the bank, so their report lines are written once, together.
    let (jobs, reused) = task::look_up(
        plan,
        bank,
        settings.repeat_tune,
        settings.trials_per_op as u64,
    )?;
    for o in reused {
        progress.record(o, false)?;
    }
    progress.write_file()?;
    // The related records of the tasks to search, read once now: what this job writes is
    // never used.
    let snapshot = job_snapshot(bank, plan, &jobs, settings)?;
    progress.stats.bank_report += start.elapsed();

    let budget = Budget::new(
        settings.total_trials,
        settings.total_time.map(|d| start + d),
    );
    // The slots dealt out in the order the tasks are searched (the pool's order).
    let mut widths = vec![1; plan.tasks.len()];
    for (i, j) in jobs.iter().enumerate() {
        widths[j.task] = settings.round_width(i, jobs.len());
    }
    let pool = Pool {
        workers: settings.workers,
        trials_per_job: settings.trials_per_op as u64,
        budget: &budget,
        cancel,
    };
    let opat = Opat {
        plan,
        settings,
        budget: &budget,
        cancel,
        transfer: &snapshot,
        widths: &widths,
    };
    pool.run(
        &jobs,
        &|| Ok(TimedRunner::new(settings.runner.build(settings.timing)?)),
        &|job, runner, granted| opat.tune_one(job, runner, granted),
        &|job, what, took| {
            let why = format!("runner {} panicked: {what}", settings.runner);
            TaskOutcome::failed(job.task, job.hit.is_some(), why, took)
        },
        &mut |mut o| {
            let t = Instant::now();
            progress.stats.add_task(&o);
            o.store(bank)?; // in the bank before it is in the result file
            progress.record(o, true)?;
            progress.stats.bank_report += t.elapsed();
            Ok(())
        },
    )?;
    if plan.ranged {
        // After every shape's record: a range record lists the shapes the bank holds, and
        // each member's strategy measured at its adjacent members' shapes, what a look-up
        // between them interpolates (`tune::range_transfer`), within the job's budget.
        let t = Instant::now();
        let mut runner = settings.runner.build(settings.timing).ok();
        let runner = runner
            .as_deref_mut()
            .map(|r| r as &mut dyn tunebank_measure::Measure);
        let allow = || !cancel.load(Ordering::Relaxed) && budget.reserve(1) == 1;
        let (_, trials) = range_record::write_range_records(plan, bank, runner, &allow)?;
        progress.stats.trials += trials;
        progress.stats.measure += t.elapsed();
    }
    progress.finish(start)
}

/// One task tuned on its own, as one task of a local OPAT job is tuned (a queued job's task on
/// a worker): its key and descriptor, the bank entry it had when the job was submitted, and
/// the related records read then.
#[derive(Clone, Debug)]
pub(crate) struct SingleTask {
    /// The task.
    pub(crate) task: TuneTask,
    /// The bank entry a `REPEAT_TUNE` hit had: the baseline to beat.
    pub(crate) hit: Option<(tunebank_key::StrategyMap, f64)>,
    /// The hit is a default confirmed under a smaller budget (searched again).
    pub(crate) reconfirm: bool,
    /// Related records for transfer, read when the job was submitted.
    pub(crate) related: Vec<transfer::Related>,
}

/// Tunes `single` exactly as [`run`] tunes one task (same task function, settings and seed),
/// on a fresh runner; a runner that cannot be built, or a panic, is the error. The outcome's
/// record is not stored: the caller stores it ([`TaskOutcome::store`]) before it reports it.
pub(crate) fn run_task(
    single: &SingleTask,
    settings: &TuneSettings,
    cancel: &AtomicBool,
) -> Result<TaskOutcome, String> {
    let plan = TunePlan {
        tasks: vec![single.task.clone()],
        units: Vec::new(),
        skipped: Vec::new(),
        shapes: Vec::new(),
        ranged: false,
    };
    let budget = Budget::new(None, None);
    let transfer = transfer::Snapshot::single(0, single.related.clone());
    let opat = Opat {
        plan: &plan,
        settings,
        budget: &budget,
        cancel,
        transfer: &transfer,
        widths: &[settings.round_width(0, 1)],
    };
    let job = Job {
        task: 0,
        hit: single.hit.clone(),
        reconfirm: single.reconfirm,
    };
    let inner = (settings.runner)
        .build(settings.timing)
        .map_err(|e| e.to_string())?;
    let mut runner = TimedRunner::new(inner);
    let granted = settings.trials_per_op as u64;
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        opat.tune_one(&job, &mut runner, granted)
    }))
    .map_err(|p| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        format!("runner {} panicked: {what}", settings.runner)
    })
}

/// The related records of every task `jobs` will search ([`transfer::snapshot`]: misses,
/// `REPEAT_TUNE` hits and reconfirmed defaults alike), or none when transfer is off: what
/// [`run`] and a queued job's enqueuer read before any task runs.
pub(crate) fn job_snapshot(
    bank: &Bank,
    plan: &TunePlan,
    jobs: &[Job],
    settings: &TuneSettings,
) -> Result<transfer::Snapshot, TuneError> {
    if !settings.transfer {
        return Ok(transfer::Snapshot::default());
    }
    Ok(transfer::snapshot(bank, plan, jobs.iter().map(|j| j.task))?)
}
