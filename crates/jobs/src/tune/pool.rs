//! The worker pool a tuning driver runs its jobs on: one runner per worker thread, a shared
//! budget of trials and time, and a cooperative cancel flag.
//!
//! The pool knows nothing of OPAT: it hands each job, with the trials it was granted, to a task
//! function on a worker's own runner (runners need not be `Sync`), and gives every result back
//! on the calling thread in the order finished. A task function that panics fails its job only:
//! the worker builds a fresh runner and goes on. Subgraph and gradient drivers plug their own
//! task functions into the same pool.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tunebank_key::StrategyMap;

use search_strategies::{ConfigId, Observation, SearchContext, Strategy};

use tunebank_measure::{Measure, MeasureError, Outcome, TaskSpace, TuningTask};

use super::TuneError;

/// The job-wide budget: trials left (if limited) and a deadline (if any), shared by every worker.
#[derive(Debug)]
pub(crate) struct Budget {
    trials_left: Option<AtomicU64>,
    deadline: Option<Instant>,
}

impl Budget {
    /// A budget of `total_trials` candidates (unlimited when `None`) until `deadline`.
    pub(crate) fn new(total_trials: Option<u64>, deadline: Option<Instant>) -> Self {
        Budget {
            trials_left: total_trials.map(AtomicU64::new),
            deadline,
        }
    }

    /// Whether the deadline, if any, is still ahead.
    pub(crate) fn time_left(&self) -> bool {
        self.deadline.is_none_or(|d| Instant::now() < d)
    }

    /// The time limit of one job: `per_job`, capped by what is left until the deadline.
    pub(crate) fn job_time_limit(&self, per_job: Option<Duration>) -> Option<Duration> {
        match (per_job, self.deadline) {
            (a, Some(d)) => {
                let left = d.saturating_duration_since(Instant::now());
                Some(a.map_or(left, |a| a.min(left)))
            }
            (a, None) => a,
        }
    }

    /// Reserves up to `want` trials; 0 when the job's trials or time are used up.
    pub(crate) fn reserve(&self, want: u64) -> u64 {
        if !self.time_left() {
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

    /// Gives back `n` reserved trials that were not used.
    pub(crate) fn refund(&self, n: u64) {
        if let Some(left) = &self.trials_left {
            left.fetch_add(n, Ordering::AcqRel);
        }
    }
}

/// A runner that times its calls: `spent` inside `measure`, `setup` inside `space` and
/// `default_strategy`.
pub(crate) struct TimedRunner {
    inner: Box<dyn Measure + Send>,
    /// Time inside `measure` so far.
    pub(crate) spent: Duration,
    /// Time inside `space` and `default_strategy` so far.
    pub(crate) setup: Duration,
}

impl TimedRunner {
    /// Wraps `inner` with zeroed clocks.
    pub(crate) fn new(inner: Box<dyn Measure + Send>) -> Self {
        TimedRunner {
            inner,
            spent: Duration::ZERO,
            setup: Duration::ZERO,
        }
    }
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

/// A search strategy that stops asking as soon as the cancel flag is set (the search driver
/// then stops with `StrategyExhausted`, and the pool discards the job).
pub(crate) struct Cancellable<'a> {
    /// The strategy asked while the flag is clear.
    pub(crate) inner: Box<dyn Strategy>,
    /// The job's cancel flag.
    pub(crate) cancel: &'a AtomicBool,
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
    fn expected_gain(&mut self, ctx: &SearchContext<'_>, horizon: usize) -> Option<f64> {
        self.inner.expected_gain(ctx, horizon)
    }
}

/// What a job's result tells the pool: how many of its granted trials it used (the rest go
/// back to the budget).
pub(crate) trait JobResult: Send {
    /// Candidates the job measured.
    fn trials_used(&self) -> u64;
}

/// A pool of `workers` threads sharing one budget and one cancel flag.
pub(crate) struct Pool<'a> {
    /// Worker threads (at least 1, at most one per job).
    pub(crate) workers: usize,
    /// Trials each job asks the budget for.
    pub(crate) trials_per_job: u64,
    /// The job-wide budget.
    pub(crate) budget: &'a Budget,
    /// Cooperative cancellation: set, no new job starts and a job running is discarded.
    pub(crate) cancel: &'a AtomicBool,
}

impl Pool<'_> {
    /// Runs `jobs` in order on the workers, each worker on its own runner from `new_runner`.
    /// `work(job, runner, granted)` handles one job with the `granted` trials; when it panics,
    /// `on_panic(job, message, elapsed)` gives the job's result and the worker gets a fresh
    /// runner. Every result reaches `finished` on the calling thread, in the order finished.
    ///
    /// A worker stops when the cancel flag is set (a result finished after that is discarded),
    /// when the budget grants no trial, or when the jobs run out. The first error (a runner
    /// that cannot be built, or one `finished` returns) sets the cancel flag, is returned, and
    /// later results are not passed on.
    pub(crate) fn run<J, R, O>(
        &self,
        jobs: &[J],
        new_runner: &(dyn Fn() -> Result<R, TuneError> + Sync),
        work: &(dyn Fn(&J, &mut R, u64) -> O + Sync),
        on_panic: &(dyn Fn(&J, String, Duration) -> O + Sync),
        finished: &mut dyn FnMut(O) -> Result<(), TuneError>,
    ) -> Result<(), TuneError>
    where
        J: Sync,
        O: JobResult,
    {
        let next = AtomicUsize::new(0);
        let workers = self.workers.clamp(1, jobs.len().max(1));
        let (tx, rx) = mpsc::channel::<Result<O, TuneError>>();
        let mut first_error = None;
        std::thread::scope(|scope| {
            for _ in 0..workers {
                let tx = tx.clone();
                let next = &next;
                scope.spawn(move || self.worker(jobs, next, new_runner, work, on_panic, &tx));
            }
            drop(tx);
            for msg in rx {
                let result = msg.and_then(|o| match first_error {
                    None => finished(o),
                    Some(_) => Ok(()),
                });
                if let Err(e) = result {
                    first_error.get_or_insert(e);
                    self.cancel.store(true, Ordering::Relaxed);
                }
            }
        });
        first_error.map_or(Ok(()), Err)
    }

    /// One worker's loop (see [`Pool::run`]).
    fn worker<J, R, O>(
        &self,
        jobs: &[J],
        next: &AtomicUsize,
        new_runner: &(dyn Fn() -> Result<R, TuneError> + Sync),
        work: &(dyn Fn(&J, &mut R, u64) -> O + Sync),
        on_panic: &(dyn Fn(&J, String, Duration) -> O + Sync),
        tx: &mpsc::Sender<Result<O, TuneError>>,
    ) where
        O: JobResult,
    {
        let mut runner = match new_runner() {
            Ok(r) => r,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        loop {
            if self.cancel.load(Ordering::Relaxed) {
                return;
            }
            let Some(job) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) else {
                return;
            };
            let granted = self.budget.reserve(self.trials_per_job);
            if granted == 0 {
                return; // the job's trials or time are used up
            }
            let started = Instant::now();
            let out = match catch_unwind(AssertUnwindSafe(|| work(job, &mut runner, granted))) {
                Ok(out) => out,
                Err(payload) => {
                    if let Ok(fresh) = new_runner() {
                        runner = fresh;
                    }
                    on_panic(job, panic_message(payload.as_ref()), started.elapsed())
                }
            };
            if self.cancel.load(Ordering::Relaxed) {
                return; // an interrupted job is discarded, never passed on
            }
            self.budget
                .refund(granted.saturating_sub(out.trials_used()));
            if tx.send(Ok(out)).is_err() {
                return;
            }
        }
    }
}

/// The text of a panic's payload (`&str` or `String`), else `unknown panic`.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
