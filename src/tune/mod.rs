//! The OPAT tuning driver: plan, search, decide, write, report.
//!
//! [`plan`] turns a model and the user's options into [`TuneTask`]s: the fused tuning units of
//! every dynamic profile, resolved into keys, one task per unique key (identical keys in one
//! model are tuned once and reported under every op name). [`run`] then handles each task as
//! DESIGN §8 says:
//!
//! - look the key up; a hit without `REPEAT_TUNE` is reused: counted as hit and reserved,
//!   nothing measured;
//! - otherwise search the runner's [`TaskSpace`] with a `search-strategies` strategy within the
//!   per-op budget (trials and time, both also capped by the job's overall budget), then
//!   re-measure the best strategy and the baseline (the bank entry on a hit, else the runner's
//!   default strategy) side by side and apply the [`WinRule`];
//! - only a clear win is written as a tuned strategy: `add` (no entry before) or `update`
//!   (entry before); otherwise the task is `reserved` (hit) or `unsatisfied` (miss). So
//!   `hit = update + reserved` and `total = add + hit + unsatisfied` always hold, also for a job
//!   stopped part way;
//! - a miss whose search ran its whole per-op budget without a clear win stores the default
//!   strategy, re-measured, as *confirmed* (`Performance::default_confirmed`). The task is still
//!   reported `unsatisfied` and never listed as modified, but from then on it is a hit: a rerun
//!   measures nothing and a converter finds every tuned op. `REPEAT_TUNE` searches it again and
//!   replaces it only on a clear win (`update`). A search cut short by the job's overall budget,
//!   a runner failure or an unsupported op confirms nothing;
//! - a bank shared by several processes may change between a task's look-up and its write, so
//!   the write decides inside its transaction ([`Bank::write_batch_if`]) against what the key
//!   holds then: a winner replaces only the baseline it beat, a confirmed default, a damaged or
//!   a slower record; a confirmed default replaces only a damaged one. A faster record another
//!   process stored meanwhile stays (the report still says what this job found).
//!
//! Tasks run on `workers` threads (`std::thread::scope`), each with its own runner built from
//! the runner spec (runners need not be `Sync`). Results come back to the calling thread, which
//! writes each finished task's bank record *before* it adds the task to the result file, so a
//! rerun after a kill at any instant finds every reported winner as a hit. Cancellation is
//! cooperative: setting the `cancel` flag stops the search loops at their next batch; tasks not
//! finished are left out, and the report says `tuning incomplete`.
//!
//! Time spent inside [`Measure::measure`] is accounted separately from everything else
//! (strategy, space building, bank, report), see [`TuneStats`].
//!
//! ```
//! use std::collections::BTreeSet;
//! use std::sync::atomic::AtomicBool;
//! use tunebank::bank::Bank;
//! use tunebank::key::{FsReader, RecordKind, ResolvedOptions};
//! use tunebank::model::load_onnx;
//! use tunebank::tune::{self, TuneSettings};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! let model = load_onnx(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/models/resnet50.onnx"))?;
//! let options = ResolvedOptions::from_args(["--soc_version=Ascend910B2"], &FsReader)?;
//! let only: BTreeSet<String> = ["Gemm".to_string()].into(); // AOE's tune_ops_file
//! let plan = tune::plan(&model, &options, &options.soc()?, Some(&only))?;
//! let bank = Bank::builder(RecordKind::Op, "Ascend910B2")
//!     .custom_path(dir.path().join("op.redb"))
//!     .no_default_builtin()
//!     .open()?;
//! let settings = TuneSettings {
//!     runner: "sim".into(),
//!     trials_per_op: 16,
//!     options_given: options.given().clone(),
//!     ..TuneSettings::default()
//! };
//! let cancel = AtomicBool::new(false); // a signal handler may set it
//! let first = tune::run(&plan, &bank, &settings, "resnet50", None, &cancel, &mut ())?;
//! let s = first.report.summary;
//! assert_eq!((s.total, s.add), (1, 1)); // the default Gemm tiling is beaten clearly
//!
//! // A rerun finds the winner in the bank and measures nothing.
//! let again = tune::run(&plan, &bank, &settings, "resnet50", None, &cancel, &mut ())?;
//! assert_eq!((again.report.summary.hit, again.stats.trials), (1, 0));
//! # Ok(())
//! # }
//! ```

mod decision;
pub mod memory;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use search_strategies::{
    strategies::by_name, ConfigId, Driver, Observation, SearchContext, StopReason, Strategy,
};

pub use decision::{signed_rank_greater_p, Judgement, Round, WinRule};

use crate::bank::{Bank, BankError, Descriptor, Lookup, Origin, Performance, Provenance, Record};
use crate::key::{BankKey, OpDescriptor, RecordKind, ResolvedOptions, SocSpec};
use crate::measure::{
    runner_from_spec, Measure, MeasureError, Outcome, RunnerObjective, StrategyMap, TaskSpace,
    TuningTask,
};
use crate::model::{group_by_key, resolve_units, Model, ModelError, ResolvedUnit, SkippedOp};
use crate::report::{ModifiedOp, OpatReport, OpatResult, ResultFile, TuneMode, UpdateMode};

/// Why a tuning job could not start or go on. Per-op problems are not errors: they are
/// [`TaskOutcome::failure`]s and end up in `tuning_failed_operators`.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    /// The model could not be imported or its shapes not set up.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// An op could not be resolved into a key.
    #[error(transparent)]
    Resolve(#[from] crate::key::ResolveError),
    /// The bank failed (look-up or write).
    #[error(transparent)]
    Bank(#[from] BankError),
    /// The runner spec is not understood, or a runner could not be created.
    #[error(transparent)]
    Runner(#[from] MeasureError),
    /// The strategy name is not a built-in strategy.
    #[error("unknown search strategy {name:?}: expected one of {}", search_strategies::strategies::STRATEGY_NAMES.join(", "))]
    UnknownStrategy {
        /// The name given.
        name: String,
    },
    /// The result file could not be written.
    #[error("writing the result file {path}: {source}")]
    Report {
        /// The file.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
}

/// One unique key to tune, with every op that shares it.
#[derive(Clone, Debug, PartialEq)]
pub struct TuneTask {
    /// The key.
    pub key: BankKey,
    /// The op to tune (the first unit with this key).
    pub descriptor: OpDescriptor,
    /// Every unit name with this key (AOE `op_name`s), across profiles.
    pub op_names: Vec<String>,
    /// The first unit's member op types (AOE `op_type`).
    pub op_types: Vec<String>,
}

/// What a model gives to tune.
#[derive(Clone, Debug, Default)]
pub struct TunePlan {
    /// Unique keys, in order of first appearance.
    pub tasks: Vec<TuneTask>,
    /// Every resolved unit of every profile, in order (what a converter looks up).
    pub units: Vec<ResolvedUnit>,
    /// Ops left out (not inferable, unkeyable dtype), per profile, de-duplicated by node.
    pub skipped: Vec<SkippedOp>,
}

/// Imports nothing itself: takes a loaded `model`, infers and fuses it under `options` on
/// `soc`, resolves keys, and groups identical keys across all profiles. When `only` is given,
/// units are kept only if their name, one of their node names or one of their op types is in
/// it (AOE's `tune_ops_file`).
pub fn plan(
    model: &Model,
    options: &ResolvedOptions,
    soc: &SocSpec,
    only: Option<&BTreeSet<String>>,
) -> Result<TunePlan, TuneError> {
    let mut out = TunePlan::default();
    let mut seen_skips = BTreeSet::new();
    for profile in model.tuning_units(options)? {
        for s in profile.graph.skipped.iter().chain(&profile.unkeyable) {
            if seen_skips.insert(s.node_name.clone()) {
                out.skipped.push(s.clone());
            }
        }
        let units: Vec<_> = profile
            .units
            .into_iter()
            .filter(|u| {
                only.is_none_or(|set| {
                    set.contains(&u.name)
                        || u.node_names.iter().any(|n| set.contains(n))
                        || u.op_types.iter().any(|t| set.contains(t))
                })
            })
            .collect();
        out.units
            .extend(resolve_units(&units, &profile.graph.profile, options, soc)?);
    }
    for g in group_by_key(&out.units) {
        let first = &out.units[g.first];
        out.tasks.push(TuneTask {
            key: g.key,
            descriptor: first.resolved.descriptor.clone(),
            op_names: g.op_names,
            op_types: first.unit.op_types.clone(),
        });
    }
    Ok(out)
}

/// How a job tunes.
#[derive(Clone, Debug)]
pub struct TuneSettings {
    /// Runner spec for [`runner_from_spec`] (`sim`, `sim:SEED`, `cpu`, `exec:CMD`).
    pub runner: String,
    /// Search strategy name ([`search_strategies::strategies::by_name`]).
    pub strategy: String,
    /// Seed of the searches; each task's search is seeded from it and the task's key.
    pub seed: u64,
    /// Unique candidates measured per op at most (failures included).
    pub trials_per_op: usize,
    /// Wall-clock limit of one op's search.
    pub time_per_op: Option<Duration>,
    /// Candidates measured over the whole job at most.
    pub total_trials: Option<u64>,
    /// Wall-clock limit of the whole job; ops not started by then are left out.
    pub total_time: Option<Duration>,
    /// `REPEAT_TUNE`: tune hits again instead of reusing them.
    pub repeat_tune: bool,
    /// Worker threads (already capped by memory).
    pub workers: usize,
    /// Candidates measured per search round (`TE_PARALLEL_COMPILER`).
    pub batch: usize,
    /// Side-by-side re-measurement rounds of best and baseline; the driver runs at least
    /// [`WinRule::min_rounds`] whatever this says.
    pub confirm_rounds: usize,
    /// The win rule.
    pub win: WinRule,
    /// The options as the user gave them (stored in records).
    pub options_given: std::collections::BTreeMap<String, String>,
}

impl Default for TuneSettings {
    fn default() -> Self {
        TuneSettings {
            runner: "sim".into(),
            strategy: "ensemble".into(),
            seed: 1,
            trials_per_op: 64,
            time_per_op: None,
            total_trials: None,
            total_time: None,
            repeat_tune: false,
            workers: 1,
            batch: 8,
            confirm_rounds: 7,
            win: WinRule::default(),
            options_given: Default::default(),
        }
    }
}

/// The decision for one task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Miss, clear win: a record was added.
    Add,
    /// Hit, clear win: the record was replaced.
    Update,
    /// Hit, kept (reused, or no clear win).
    Reserved,
    /// Miss, no clear win (or the op could not be tuned).
    Unsatisfied,
}

impl Decision {
    /// `add`, `update`, `reserved` or `unsatisfied`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Add => "add",
            Decision::Update => "update",
            Decision::Reserved => "reserved",
            Decision::Unsatisfied => "unsatisfied",
        }
    }

    /// Whether the task had a bank entry before.
    pub fn was_hit(self) -> bool {
        matches!(self, Decision::Update | Decision::Reserved)
    }
}

/// The result of one finished task.
#[derive(Clone, Debug)]
pub struct TaskOutcome {
    /// Index into [`TunePlan::tasks`].
    pub task: usize,
    /// The decision.
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
    /// The record written: the winner (add/update), or the default confirmed by a search
    /// without a clear win on a miss (decision unsatisfied; see [`TaskOutcome::default_confirmed`]).
    pub record: Option<Record>,
    /// The strategy the search's best was compared against: the bank entry on a hit, else
    /// the runner's default (`None` when no search ran).
    pub baseline: Option<StrategyMap>,
    /// Time inside `Measure::measure` for this task.
    pub measure_time: Duration,
    /// Time inside the runner's `space` and `default_strategy` for this task.
    pub setup_time: Duration,
    /// Time of the whole task on its worker.
    pub task_time: Duration,
}

impl TaskOutcome {
    /// Whether the record written stores the default as confirmed (a miss without a clear
    /// win; the decision is `unsatisfied`).
    pub fn default_confirmed(&self) -> bool {
        self.record
            .as_ref()
            .is_some_and(|r| r.performance.default_confirmed)
    }

    /// Task `task` left as it was: `reserved` on a hit, else `unsatisfied`; nothing measured,
    /// nothing written. Tuning fills in what it does.
    fn untouched(task: usize, hit: bool) -> Self {
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
            measure_time: Duration::ZERO,
            setup_time: Duration::ZERO,
            task_time: Duration::ZERO,
        }
    }
}

/// Time accounting of a job. Thread times are summed over threads, so with several workers
/// they exceed the wall time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TuneStats {
    /// Wall time of [`run`].
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
    pub fn outside_share(&self) -> f64 {
        let total = (self.outside + self.runner_setup + self.measure).as_secs_f64();
        if total > 0.0 {
            self.outside.as_secs_f64() / total
        } else {
            0.0
        }
    }
}

/// What [`run`] returns.
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

/// Told about progress, on the calling thread of [`run`].
pub trait TuneObserver {
    /// A task finished (its record, if any, is already in the bank and it is in the result
    /// file). `done` of `total` tasks are finished.
    fn finished(&mut self, plan: &TunePlan, outcome: &TaskOutcome, done: usize, total: usize);
}

impl TuneObserver for () {
    fn finished(&mut self, _: &TunePlan, _: &TaskOutcome, _: usize, _: usize) {}
}

/// A runner that times its `measure` calls.
struct TimedRunner {
    inner: Box<dyn Measure + Send>,
    spent: Duration,
    setup: Duration,
}

impl Measure for TimedRunner {
    fn identity(&self) -> String {
        self.inner.identity()
    }
    fn space(&mut self, task: &TuningTask) -> Result<TaskSpace, MeasureError> {
        let t = Instant::now();
        let r = self.inner.space(task);
        self.setup += t.elapsed();
        r
    }
    fn default_strategy(&mut self, task: &TuningTask) -> Result<StrategyMap, MeasureError> {
        let t = Instant::now();
        let r = self.inner.default_strategy(task);
        self.setup += t.elapsed();
        r
    }
    fn measure(
        &mut self,
        task: &TuningTask,
        candidates: &[StrategyMap],
    ) -> Result<Vec<Outcome>, MeasureError> {
        let t = Instant::now();
        let r = self.inner.measure(task, candidates);
        self.spent += t.elapsed();
        r
    }
}

/// Stops asking as soon as the cancel flag is set (the driver then stops with
/// `StrategyExhausted`, and the task is discarded).
struct Cancellable<'a> {
    inner: Box<dyn Strategy>,
    cancel: &'a AtomicBool,
}

impl Strategy for Cancellable<'_> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn ask(&mut self, ctx: &SearchContext<'_>, n: usize) -> Vec<ConfigId> {
        if self.cancel.load(Ordering::Relaxed) {
            return Vec::new();
        }
        self.inner.ask(ctx, n)
    }
    fn tell(&mut self, ctx: &SearchContext<'_>, results: &[Observation]) {
        self.inner.tell(ctx, results)
    }
}

/// A queued task: its index and the bank entry it had (if any).
struct Job {
    task: usize,
    hit: Option<(StrategyMap, f64)>,
}

/// Shared budget state of a job.
struct Budget {
    trials_left: Option<AtomicU64>,
    deadline: Option<Instant>,
}

impl Budget {
    /// Reserves up to `want` trials; 0 when the job's trials or time are used up.
    fn reserve(&self, want: u64) -> u64 {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return 0;
        }
        match &self.trials_left {
            None => want,
            Some(left) => {
                let mut cur = left.load(Ordering::Relaxed);
                loop {
                    let take = cur.min(want);
                    match left.compare_exchange(
                        cur,
                        cur - take,
                        Ordering::AcqRel,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => return take,
                        Err(now) => cur = now,
                    }
                }
            }
        }
    }

    fn refund(&self, n: u64) {
        if let Some(left) = &self.trials_left {
            left.fetch_add(n, Ordering::AcqRel);
        }
    }
}

fn task_seed(seed: u64, key: &BankKey) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&key.0[..8]);
    seed ^ u64::from_le_bytes(b)
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Checks the runner spec and the strategy name without running anything, so a job with a
/// bad one fails before it opens the bank or writes a file.
pub fn check_settings(settings: &TuneSettings) -> Result<(), TuneError> {
    runner_from_spec(&settings.runner)?;
    if by_name(&settings.strategy, 0).is_none() {
        return Err(TuneError::UnknownStrategy {
            name: settings.strategy.clone(),
        });
    }
    Ok(())
}

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
    observer: &mut dyn TuneObserver,
) -> Result<TuneSummary, TuneError> {
    check_settings(settings)?;
    let start = Instant::now();
    let mut report = OpatReport::new(tuning_name);
    let write_report = |report: &OpatReport| -> Result<(), TuneError> {
        if let Some(f) = result_file {
            f.write(report).map_err(|source| TuneError::Report {
                path: f.path.display().to_string(),
                source,
            })?;
        }
        Ok(())
    };
    write_report(&report)?;

    let mut outcomes = Vec::with_capacity(plan.tasks.len());
    let mut main_outside = Duration::ZERO;
    let mut stats = TuneStats::default();

    // Look-ups first: hits without REPEAT_TUNE are decided without any measurement.
    let mut jobs = Vec::new();
    let mut reused = Vec::new();
    for (i, t) in plan.tasks.iter().enumerate() {
        match bank.lookup(&t.key)? {
            Lookup::Hit(h) => {
                if settings.repeat_tune {
                    jobs.push(Job {
                        task: i,
                        hit: Some((h.answer.strategy.clone(), h.answer.performance.tuned_us)),
                    });
                } else {
                    reused.push(TaskOutcome::untouched(i, true));
                }
            }
            Lookup::Miss { .. } => jobs.push(Job { task: i, hit: None }),
        }
    }
    let total = plan.tasks.len();
    // `write`: rewrite the result file now. Reused hits write nothing to the bank, so their
    // report lines are written once, together.
    let mut finish = |o: TaskOutcome,
                      report: &mut OpatReport,
                      outcomes: &mut Vec<TaskOutcome>,
                      write: bool|
     -> Result<(), TuneError> {
        if let Some(r) = &o.record {
            write_outcome(bank, r, o.baseline.as_ref())?;
        }
        let task = &plan.tasks[o.task];
        let s = &mut report.summary;
        s.total += 1;
        match o.decision {
            Decision::Add => s.add += 1,
            Decision::Update => {
                s.hit += 1;
                s.update += 1
            }
            Decision::Reserved => {
                s.hit += 1;
                s.reserved += 1
            }
            Decision::Unsatisfied => s.unsatisfied += 1,
        }
        if let (Some(mode), Some(b), Some(a)) = (
            match o.decision {
                Decision::Add => Some(UpdateMode::Add),
                Decision::Update => Some(UpdateMode::Update),
                _ => None,
            },
            o.before_us,
            o.after_us,
        ) {
            for name in &task.op_names {
                report.modified.push(ModifiedOp {
                    op_name: name.clone(),
                    op_types: task.op_types.clone(),
                    mode: TuneMode::Schedule,
                    before_us: b,
                    after_us: a,
                    update_mode: mode,
                });
            }
        }
        if o.failure.is_some() {
            report.failed_ops.extend(task.op_names.iter().cloned());
        }
        if write {
            write_report(report)?;
        }
        outcomes.push(o);
        observer.finished(
            plan,
            outcomes.last().expect("just pushed"),
            outcomes.len(),
            total,
        );
        Ok(())
    };
    for o in reused {
        finish(o, &mut report, &mut outcomes, false)?;
    }
    write_report(&report)?;
    main_outside += start.elapsed();

    let budget = Budget {
        trials_left: settings.total_trials.map(AtomicU64::new),
        deadline: settings.total_time.map(|d| start + d),
    };
    let next = AtomicUsize::new(0);
    let workers = settings.workers.clamp(1, jobs.len().max(1));
    let (tx, rx) = mpsc::channel::<Result<TaskOutcome, TuneError>>();
    let mut worker_outside = Duration::ZERO;
    let mut first_error = None;
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let tx = tx.clone();
            let (jobs, next, budget) = (&jobs, &next, &budget);
            scope.spawn(move || {
                let mut runner = match runner_from_spec(&settings.runner) {
                    Ok(r) => TimedRunner {
                        inner: r,
                        spent: Duration::ZERO,
                        setup: Duration::ZERO,
                    },
                    Err(e) => {
                        let _ = tx.send(Err(e.into()));
                        return;
                    }
                };
                loop {
                    if cancel.load(Ordering::Relaxed) {
                        return;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = jobs.get(i) else { return };
                    let granted = budget.reserve(settings.trials_per_op as u64);
                    if granted == 0 {
                        return; // the job's trials or time are used up
                    }
                    // A runner that panics fails this op only; the worker goes on with a
                    // fresh runner.
                    let started = Instant::now();
                    let out = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        tune_one(plan, job, &mut runner, settings, granted, budget, cancel)
                    })) {
                        Ok(out) => out,
                        Err(payload) => {
                            let what = payload
                                .downcast_ref::<&str>()
                                .map(|s| s.to_string())
                                .or_else(|| payload.downcast_ref::<String>().cloned())
                                .unwrap_or_else(|| "unknown panic".into());
                            if let Ok(fresh) = runner_from_spec(&settings.runner) {
                                runner.inner = fresh;
                            }
                            failed_outcome(
                                job,
                                format!("runner {} panicked: {what}", settings.runner),
                                started.elapsed(),
                            )
                        }
                    };
                    if cancel.load(Ordering::Relaxed) {
                        return; // an interrupted search is discarded, never written
                    }
                    budget.refund(granted.saturating_sub(out.trials));
                    if tx.send(Ok(out)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        for msg in rx {
            match msg {
                Ok(o) => {
                    let t = Instant::now();
                    stats.measure += o.measure_time;
                    stats.runner_setup += o.setup_time;
                    stats.trials += o.trials;
                    worker_outside += o.task_time.saturating_sub(o.measure_time + o.setup_time);
                    if first_error.is_none() {
                        if let Err(e) = finish(o, &mut report, &mut outcomes, true) {
                            first_error = Some(e);
                            cancel.store(true, Ordering::Relaxed);
                        }
                    }
                    main_outside += t.elapsed();
                }
                Err(e) => {
                    if first_error.is_none() {
                        first_error = Some(e);
                    }
                    cancel.store(true, Ordering::Relaxed);
                }
            }
        }
    });
    if let Some(e) = first_error {
        return Err(e);
    }
    let interrupted = outcomes.len() < total;
    report.result = if interrupted {
        OpatResult::Incomplete
    } else if report.failed_ops.is_empty() {
        OpatResult::Successful
    } else {
        OpatResult::Failed
    };
    let t = Instant::now();
    if !interrupted {
        report.tuning_time_s = Some(start.elapsed().as_secs_f64());
    }
    write_report(&report)?;
    main_outside += t.elapsed();
    stats.wall = start.elapsed();
    stats.outside = main_outside + worker_outside;
    stats.search = worker_outside;
    stats.bank_report = main_outside;
    Ok(TuneSummary {
        report,
        outcomes,
        interrupted,
        stats,
    })
}

/// Writes a finished task's record. Another process sharing the bank may have written the key
/// since this job looked it up, so the decision is taken inside the write transaction against
/// what the key holds then (an empty key is always written):
///
/// - a confirmed default replaces only a damaged record;
/// - a winner replaces a damaged record, the very baseline it beat (nobody else changed the
///   key), a confirmed default, or a record slower than itself (the merge rule); a faster
///   record another process stored meanwhile stays.
fn write_outcome(
    bank: &Bank,
    record: &Record,
    baseline: Option<&StrategyMap>,
) -> Result<usize, BankError> {
    bank.write_batch_if(std::slice::from_ref(record), &|new, current| {
        let Ok(current) = current else {
            return true; // damaged: anything sound is better
        };
        if new.performance.default_confirmed {
            return false;
        }
        baseline == Some(&current.strategy)
            || current.performance.default_confirmed
            || current.performance.tuned_us > new.performance.tuned_us
    })
}

/// The outcome of a task whose runner broke down.
fn failed_outcome(job: &Job, why: String, task_time: Duration) -> TaskOutcome {
    TaskOutcome {
        failure: Some(why),
        task_time,
        ..TaskOutcome::untouched(job.task, job.hit.is_some())
    }
}

/// Searches and decides one task on this worker's runner.
fn tune_one(
    plan: &TunePlan,
    job: &Job,
    runner: &mut TimedRunner,
    settings: &TuneSettings,
    granted: u64,
    budget: &Budget,
    cancel: &AtomicBool,
) -> TaskOutcome {
    let started = Instant::now();
    let measured_before = runner.spent;
    let setup_before = runner.setup;
    let t = &plan.tasks[job.task];
    let task = TuningTask::new(t.descriptor.clone());
    let hit = job.hit.is_some();
    let mut out = TaskOutcome::untouched(job.task, hit);
    let finish = |mut out: TaskOutcome, runner: &TimedRunner| {
        out.measure_time = runner.spent - measured_before;
        out.setup_time = runner.setup - setup_before;
        out.task_time = started.elapsed();
        out
    };
    let prepared = runner
        .space(&task)
        .and_then(|s| Ok((s, runner.default_strategy(&task)?)));
    let (space, default) = match prepared {
        Ok(x) => x,
        Err(e @ MeasureError::Unsupported { .. }) => {
            out.unsupported = Some(e.to_string());
            return finish(out, runner);
        }
        Err(e) => {
            out.failure = Some(e.to_string());
            return finish(out, runner);
        }
    };
    let baseline = match &job.hit {
        Some((s, _)) => s.clone(),
        None => default,
    };
    out.baseline = Some(baseline.clone());
    let Some(inner) = by_name(&settings.strategy, task_seed(settings.seed, &t.key)) else {
        out.failure = Some(format!("unknown strategy {}", settings.strategy));
        return finish(out, runner);
    };
    let mut strategy = Cancellable { inner, cancel };
    let mut driver = Driver::new(usize::try_from(granted).unwrap_or(usize::MAX));
    driver.batch = settings.batch.max(1);
    driver.time_limit = match (settings.time_per_op, budget.deadline) {
        (a, Some(d)) => {
            let left = d.saturating_duration_since(Instant::now());
            Some(a.map_or(left, |a| a.min(left)))
        }
        (a, None) => a,
    };
    let (search, error) = {
        let mut objective = RunnerObjective::new(runner, &task);
        let search = driver.run(&space.space, &mut strategy, &mut objective);
        (search, objective.error)
    };
    out.trials = search.history.len() as u64;
    out.stop = Some(search.stop);
    match error {
        Some(e @ MeasureError::Unsupported { .. }) => {
            out.unsupported = Some(e.to_string());
            return finish(out, runner);
        }
        Some(e) => {
            out.failure = Some(e.to_string());
            return finish(out, runner);
        }
        None => {}
    }
    let Some(best) = search.history.best() else {
        return finish(out, runner); // every candidate failed: nothing to write
    };
    let best_strategy = space.strategy(best.id);
    let same = best_strategy == baseline;
    // The search had the whole per-op budget it was given: the job's overall trials or time
    // did not cut it short. Only such a search may confirm the default.
    let full_search = granted >= settings.trials_per_op as u64
        && budget.deadline.is_none_or(|d| Instant::now() < d);
    if same && (hit || !full_search) {
        return finish(out, runner); // nothing to compare and nothing to store
    }
    // Side by side: each round measures baseline and candidate in one batch (the baseline
    // alone when the search's best is the baseline itself).
    // At least as many rounds as the win rule needs to be able to decide.
    let (mut base_rounds, mut best_rounds) = (Vec::new(), Vec::new());
    let batch = if same {
        vec![baseline.clone()]
    } else {
        vec![baseline.clone(), best_strategy.clone()]
    };
    let samples = |o: Option<&Outcome>| match o {
        Some(Outcome::Measurement { samples_us }) => samples_us.clone(),
        _ => Vec::new(),
    };
    for _ in 0..settings.confirm_rounds.max(settings.win.min_rounds()) {
        match runner.measure(&task, &batch) {
            Ok(o) => {
                base_rounds.push(samples(o.first()));
                best_rounds.push(samples(o.get(1)));
            }
            Err(e) => {
                out.failure = Some(e.to_string());
                return finish(out, runner);
            }
        }
    }
    let rounds: Vec<Round<'_>> = base_rounds
        .iter()
        .zip(&best_rounds)
        .map(|(b, c)| Round {
            baseline: b,
            candidate: c,
        })
        .collect();
    let judgement = settings.win.judge(&rounds);
    let base_samples: Vec<f64> = base_rounds.concat();
    let best_samples: Vec<f64> = best_rounds.concat();
    let base_median = judgement.baseline_us;
    let after = if same {
        base_median
    } else {
        judgement.candidate_us
    };
    out.after_us = after;
    // A baseline that no longer builds or runs (a stale bank entry) loses to any working
    // candidate; its stored time stands in for the report.
    let (before, clear) = match base_median {
        Some(b) => (Some(b), !same && judgement.clear),
        None => (job.hit.as_ref().map(|h| h.1), !same && after.is_some()),
    };
    out.before_us = before;
    let record =
        |strategy: StrategyMap, baseline_us: f64, tuned_us: f64, samples_us, confirmed| Record {
            key_schema_version: crate::key::KEY_SCHEMA_VERSION,
            kind: RecordKind::Op,
            descriptor: Descriptor::Op(t.descriptor.clone()),
            options: settings.options_given.clone(),
            strategy,
            performance: Performance {
                baseline_us,
                tuned_us,
                samples_us,
                runner: runner.identity(),
                default_confirmed: confirmed,
            },
            provenance: Provenance {
                tool_version: env!("CARGO_PKG_VERSION").to_owned(),
                algorithm: settings.strategy.clone(),
                trials: out.trials,
                seed: task_seed(settings.seed, &t.key),
                unix_time: unix_now(),
                origin: Origin::Tuned,
            },
        };
    match (clear, before, after) {
        (true, Some(b), Some(a)) => {
            out.decision = if hit { Decision::Update } else { Decision::Add };
            out.record = Some(record(best_strategy, b, a, best_samples, false));
        }
        // A miss whose finished search found no clear win over the default, measured just
        // now: the default is stored as confirmed (reported unsatisfied), so the task is a hit
        // from now on. A hit without a win keeps its entry untouched.
        (false, Some(b), _) if !hit && full_search => {
            out.record = Some(record(baseline, b, b, base_samples, true));
        }
        _ => {}
    }
    finish(out, runner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bank::store::StoreEntry;
    use crate::bank::{layered::index_key, LayerId};
    use crate::key::FsReader;

    /// A record for the ResNet-50 fixture's Gemm with strategy `{"v": tag}`.
    fn record(tag: i64, tuned_us: f64, default_confirmed: bool) -> Record {
        let model = crate::model::load_onnx(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/models/resnet50.onnx"
        ))
        .unwrap();
        let options = ResolvedOptions::from_args(["--soc_version=Ascend910B2"], &FsReader).unwrap();
        let only: BTreeSet<String> = ["Gemm".to_string()].into();
        let plan = plan(&model, &options, &options.soc().unwrap(), Some(&only)).unwrap();
        Record {
            key_schema_version: crate::key::KEY_SCHEMA_VERSION,
            kind: RecordKind::Op,
            descriptor: Descriptor::Op(plan.tasks[0].descriptor.clone()),
            options: options.given().clone(),
            strategy: [("v".to_owned(), serde_json::json!(tag))].into(),
            performance: Performance {
                baseline_us: 100.0,
                tuned_us,
                samples_us: vec![tuned_us],
                runner: "test".into(),
                default_confirmed,
            },
            provenance: Provenance {
                tool_version: "0".into(),
                algorithm: "test".into(),
                trials: 1,
                seed: 0,
                unix_time: 0,
                origin: Origin::Tuned,
            },
        }
    }

    /// An empty bank in a temporary directory (kept alive by the returned guard).
    fn fresh_bank() -> (tempfile::TempDir, Bank) {
        let dir = tempfile::tempdir().unwrap();
        let bank = Bank::builder(RecordKind::Op, "Ascend910B2")
            .custom_path(dir.path().join("op.redb"))
            .no_default_builtin()
            .open()
            .unwrap();
        (dir, bank)
    }

    /// What the key holds after `write_outcome(new)` over a bank holding `current`.
    fn after(current: Option<&Record>, new: &Record, baseline: Option<i64>) -> i64 {
        let (_dir, bank) = fresh_bank();
        if let Some(c) = current {
            bank.write_batch(std::slice::from_ref(c)).unwrap();
        }
        let baseline: Option<StrategyMap> =
            baseline.map(|b| [("v".to_owned(), serde_json::json!(b))].into());
        write_outcome(&bank, new, baseline.as_ref()).unwrap();
        let key = crate::bank::layered::descriptor_key(&new.descriptor).unwrap();
        let stored = bank.get_record(LayerId::Custom, &key).unwrap().unwrap();
        stored.strategy["v"].as_i64().unwrap()
    }

    #[test]
    fn a_write_judges_what_another_process_stored_since_the_look_up() {
        let win = |tag, us| record(tag, us, false);
        let confirmed = |tag, us| record(tag, us, true);
        // Empty key: always written.
        assert_eq!(after(None, &win(1, 5.0), Some(0)), 1);
        assert_eq!(after(None, &confirmed(1, 5.0), Some(1)), 1);
        // A winner replaces the baseline it beat, a confirmed default, or a slower record...
        assert_eq!(after(Some(&win(0, 1.0)), &win(1, 5.0), Some(0)), 1);
        assert_eq!(after(Some(&confirmed(9, 1.0)), &win(1, 5.0), Some(0)), 1);
        assert_eq!(after(Some(&win(9, 8.0)), &win(1, 5.0), Some(0)), 1);
        // ...but not a faster winner someone else stored meanwhile.
        assert_eq!(after(Some(&win(9, 4.0)), &win(1, 5.0), Some(0)), 9);
        // A confirmed default never replaces a sound record, even a slower one.
        assert_eq!(after(Some(&win(9, 8.0)), &confirmed(1, 5.0), Some(1)), 9);
        assert_eq!(
            after(Some(&confirmed(9, 8.0)), &confirmed(1, 5.0), Some(1)),
            9
        );
    }

    #[test]
    fn a_damaged_record_is_replaced_by_any_sound_one() {
        let (_dir, bank) = fresh_bank();
        let new = record(1, 5.0, true);
        let key = crate::bank::layered::descriptor_key(&new.descriptor).unwrap();
        bank.layer_store(LayerId::Custom)
            .unwrap()
            .put_batch(&[StoreEntry {
                key,
                value: b"not a record",
                index: index_key(&new),
            }])
            .unwrap();
        assert!(bank.get_record(LayerId::Custom, &key).is_err());
        assert_eq!(write_outcome(&bank, &new, None).unwrap(), 1);
        assert_eq!(bank.get_record(LayerId::Custom, &key).unwrap(), Some(new));
    }
}
