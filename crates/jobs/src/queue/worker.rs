//! A queue worker: claim a task it can measure (`FOR UPDATE SKIP LOCKED`), hold its lease with
//! a heartbeat thread, tune the op with the OPAT task function, write the record into the shared
//! bank under the bank-write policy, then mark the task done.
//!
//! The bank write comes first and the task row second: a worker killed between the two leaves
//! the task running with a lease that expires; the worker that claims it again tunes it again
//! from the same seed and offers the same record, which the bank-write policy keeps once. Every
//! row update after the claim names the claim (task, worker, attempt), so a worker whose lease
//! was taken over changes nothing.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tunebank_key::StrategyMap;

use serde::Serialize;

use crate::tune::opat::{run_task, SingleTask, TaskOutcome};
use crate::tune::TuneTask;
use tunebank_bank::Bank;
use tunebank_key::{BankKey, OpDescriptor};
use tunebank_measure::RunnerSpec;

use super::status::StoredOutcome;
use super::{connect, from_json, migrate, to_json, Client, QueueError, QueuedJob};

/// Test hook: a worker with this variable set (seconds) sleeps that long after claiming its
/// first task, holding the task (and renewing its lease) — so a test can kill it while it holds
/// one. The front end reads it from its environment snapshot ([`tunebank_key::Var`]).
pub const HOLD_FIRST_TASK_ENV: &str = tunebank_key::Var::WorkerHoldFirst.name();

/// How a worker runs.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// The queue database URL.
    pub url: String,
    /// This worker's name in the task rows (default: host and process id).
    pub worker_id: String,
    /// The SoC it measures: it claims only tasks of this SoC.
    pub soc: String,
    /// Its runner: it claims only tasks queued for this runner (its text).
    pub runner: RunnerSpec,
    /// The lease a claim holds; the heartbeat renews it every third of it.
    pub lease: Duration,
    /// A task whose attempts reach this many failures is marked failed.
    pub max_attempts: i32,
    /// Stop after this many claimed tasks.
    pub max_tasks: Option<usize>,
    /// Stop after this long without a task to claim (`None`: wait for ever).
    pub idle_exit: Option<Duration>,
    /// How often an idle worker looks for a task.
    pub poll: Duration,
    /// Test hook ([`HOLD_FIRST_TASK_ENV`]): hold the first task this long before tuning it.
    pub hold_first: Option<Duration>,
}

/// What happened to one claimed task.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum TaskResult {
    /// Tuned; the record (if any) is in the bank and the task is done.
    Done {
        /// `add`, `update`, `reserved` or `unsatisfied`.
        decision: String,
    },
    /// The attempt failed; `final_` when the task is now marked failed.
    Failed {
        /// The error kept in the task row.
        error: String,
        /// No attempt is left.
        final_: bool,
    },
    /// The lease was taken over by another worker meanwhile: this worker changed no row.
    LeaseLost,
    /// The worker was stopped during the task: the task is queued again.
    Released,
}

/// One claimed task and what became of it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskEvent {
    /// The job.
    pub job_id: i64,
    /// The task.
    pub task_id: i64,
    /// The first op name of the task.
    pub op_name: String,
    /// This claim's attempt number (1 = first).
    pub attempt: i32,
    /// The result.
    pub result: TaskResult,
}

impl fmt::Display for TaskEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "job {} task {} ({}) attempt {}: ",
            self.job_id, self.task_id, self.op_name, self.attempt
        )?;
        match &self.result {
            TaskResult::Done { decision } => write!(f, "done, {decision}"),
            TaskResult::Failed { error, final_ } => {
                let what = if *final_ { "failed for good" } else { "failed" };
                write!(f, "{what}: {error}")
            }
            TaskResult::LeaseLost => write!(f, "lease lost to another worker; nothing changed"),
            TaskResult::Released => write!(f, "stopped; queued again"),
        }
    }
}

/// What a worker did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WorkerReport {
    /// Tasks claimed.
    pub claimed: usize,
    /// Tasks it marked done.
    pub done: usize,
    /// Failed attempts (of which `failed` marked a task failed).
    pub failed_attempts: usize,
    /// Tasks it marked failed.
    pub failed: usize,
    /// Claims lost to an expired lease.
    pub lease_lost: usize,
}

/// A claimed task: the row's fields a worker needs.
struct Claim {
    task_id: i64,
    job_id: i64,
    attempt: i32,
    task: TuneTask,
    hit: Option<(StrategyMap, f64)>,
    reconfirm: bool,
    /// The task's ordinal: its index in the job's plan.
    ordinal: i32,
    /// The job's settings as submitted.
    job: QueuedJob,
}

/// A worker: its configuration and its queue connection.
pub struct Worker {
    config: WorkerConfig,
    client: Client,
    held: bool,
}

impl Worker {
    /// Connects to the queue (creating or migrating its tables).
    pub fn connect(config: WorkerConfig) -> Result<Worker, QueueError> {
        let mut client = connect(&config.url)?;
        migrate(&mut client, &config.url)?;
        Ok(Worker {
            config,
            client,
            held: false,
        })
    }

    /// Claims and handles tasks until `cancel` is set, `max_tasks` were claimed, or no task came
    /// for `idle_exit`; tells `on_task` about each. Database and bank errors outside a task's
    /// attempt stop the worker.
    pub fn run(
        &mut self,
        bank: &Bank,
        cancel: &AtomicBool,
        on_task: &mut dyn FnMut(&TaskEvent),
    ) -> Result<WorkerReport, QueueError> {
        let mut report = WorkerReport::default();
        let mut idle_since = Instant::now();
        while !cancel.load(Ordering::Relaxed)
            && self.config.max_tasks.is_none_or(|m| report.claimed < m)
        {
            match self.run_one(bank, cancel)? {
                Some(e) => {
                    report.claimed += 1;
                    match &e.result {
                        TaskResult::Done { .. } => report.done += 1,
                        TaskResult::Failed { final_, .. } => {
                            report.failed_attempts += 1;
                            report.failed += usize::from(*final_);
                        }
                        TaskResult::LeaseLost => report.lease_lost += 1,
                        TaskResult::Released => {}
                    }
                    on_task(&e);
                    idle_since = Instant::now();
                }
                None => {
                    if self
                        .config
                        .idle_exit
                        .is_some_and(|d| idle_since.elapsed() >= d)
                    {
                        break;
                    }
                    std::thread::sleep(self.config.poll);
                }
            }
        }
        Ok(report)
    }

    /// Claims one task and handles it; `None` when no task is there to claim.
    pub fn run_one(
        &mut self,
        bank: &Bank,
        cancel: &AtomicBool,
    ) -> Result<Option<TaskEvent>, QueueError> {
        let Some(claim) = self.claim()? else {
            return Ok(None);
        };
        let (stop, beat) = self.heartbeat(&claim);
        if let (false, Some(hold)) = (self.held, self.config.hold_first) {
            self.held = true;
            std::thread::sleep(hold);
        }
        let result = self.handle(&claim, bank, cancel);
        drop(stop);
        let _ = beat.join();
        Ok(Some(TaskEvent {
            job_id: claim.job_id,
            task_id: claim.task_id,
            op_name: claim.task.op_names.first().cloned().unwrap_or_default(),
            attempt: claim.attempt,
            result: result?,
        }))
    }

    /// In one transaction: tasks of this SoC and runner whose lease expired with no attempt
    /// left (or whose job was cancelled) are closed, then the first claimable task (queued, or
    /// running with an expired lease) of an open job is taken, skipping rows other workers
    /// lock.
    fn claim(&mut self) -> Result<Option<Claim>, QueueError> {
        let c = &self.config;
        let runner = c.runner.to_string();
        let lease = c.lease.as_secs_f64();
        let mut tx = self.client.transaction()?;
        tx.execute(
            "UPDATE tunebank_queue_tasks t SET
                 state = CASE WHEN s.job_state = 'cancelled' THEN 'cancelled' ELSE 'failed' END,
                 errors = t.errors || to_jsonb(format('attempt %s: the lease of worker %s expired', t.attempts, t.worker)),
                 lease_until = NULL, updated = now()
             FROM (SELECT t2.id, j.state AS job_state
                   FROM tunebank_queue_tasks t2 JOIN tunebank_queue_jobs j ON j.id = t2.job_id
                   WHERE t2.soc = $1 AND t2.runner = $2 AND t2.state = 'running'
                     AND t2.lease_until < now() AND (t2.attempts >= $3 OR j.state = 'cancelled')
                   FOR UPDATE OF t2 SKIP LOCKED) s
             WHERE t.id = s.id",
            &[&c.soc, &runner, &c.max_attempts],
        )?;
        let Some(row) = tx.query_opt(
            "SELECT t.id FROM tunebank_queue_tasks t JOIN tunebank_queue_jobs j ON j.id = t.job_id
             WHERE t.soc = $1 AND t.runner = $2 AND j.state = 'open'
               AND (t.state = 'queued' OR (t.state = 'running' AND t.lease_until < now()))
             ORDER BY t.job_id, t.ordinal LIMIT 1
             FOR UPDATE OF t SKIP LOCKED",
            &[&c.soc, &runner],
        )?
        else {
            tx.commit()?;
            return Ok(None);
        };
        let task_id: i64 = row.get(0);
        let r = tx.query_one(
            "UPDATE tunebank_queue_tasks SET
                 errors = CASE WHEN state = 'running'
                     THEN errors || to_jsonb(format('attempt %s: the lease of worker %s expired', attempts, worker))
                     ELSE errors END,
                 state = 'running', worker = $2, attempts = attempts + 1,
                 lease_until = now() + $3::float8 * interval '1 second', updated = now()
             WHERE id = $1
             RETURNING job_id, attempts, key_hex, descriptor, op_names, op_types,
                       hit_strategy, hit_tuned_us, reconfirm, ordinal",
            &[&task_id, &c.worker_id, &lease],
        )?;
        let job_id: i64 = r.get(0);
        let job_row = tx.query_one(
            "SELECT settings, runner FROM tunebank_queue_jobs WHERE id = $1",
            &[&job_id],
        )?;
        tx.commit()?;
        let job_runner: String = job_row.get(1);
        let what = |col: &str| format!("task {task_id} {col}");
        let key_hex: String = r.get(2);
        let key: BankKey = key_hex.parse().map_err(|e| QueueError::Row {
            what: what("key_hex"),
            detail: format!("{e}"),
        })?;
        let descriptor: OpDescriptor = from_json(r.get(3), &what("descriptor"))?;
        let hit_strategy: Option<serde_json::Value> = r.get(6);
        let hit_us: Option<f64> = r.get(7);
        let hit = match (hit_strategy, hit_us) {
            (Some(s), Some(us)) => Some((from_json(s, &what("hit_strategy"))?, us)),
            _ => None,
        };
        Ok(Some(Claim {
            task_id,
            job_id,
            attempt: r.get(1),
            task: TuneTask {
                key,
                descriptor,
                op_names: from_json(r.get(4), &what("op_names"))?,
                op_types: from_json(r.get(5), &what("op_types"))?,
            },
            hit,
            reconfirm: r.get(8),
            ordinal: r.get(9),
            job: QueuedJob::from_row(
                job_row.get(0),
                &job_runner,
                &format!("job {job_id} settings"),
            )?,
        }))
    }

    /// Starts the heartbeat of `claim` on a connection of its own: the lease is renewed every
    /// third of it until the returned sender is dropped.
    fn heartbeat(&self, claim: &Claim) -> (mpsc::Sender<()>, std::thread::JoinHandle<()>) {
        let (tx, rx) = mpsc::channel::<()>();
        let url = self.config.url.clone();
        let (id, worker, attempt) = (claim.task_id, self.config.worker_id.clone(), claim.attempt);
        let lease = self.config.lease;
        let beat = std::thread::spawn(move || {
            let Ok(mut client) = connect(&url) else {
                return; // the lease then expires; a re-run is idempotent
            };
            while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(lease / 3) {
                let _ = client.execute(
                    "UPDATE tunebank_queue_tasks
                     SET lease_until = now() + $4::float8 * interval '1 second'
                     WHERE id = $1 AND worker = $2 AND attempts = $3 AND state = 'running'",
                    &[&id, &worker, &attempt, &lease.as_secs_f64()],
                );
            }
        });
        (tx, beat)
    }

    /// Tunes the claimed task and settles its row: bank first, then the task.
    fn handle(
        &mut self,
        claim: &Claim,
        bank: &Bank,
        cancel: &AtomicBool,
    ) -> Result<TaskResult, QueueError> {
        let mut outcome = match tune(claim, cancel) {
            Ok(o) => o,
            Err(why) => return self.attempt_failed(claim, why, None),
        };
        if cancel.load(Ordering::Relaxed) {
            self.settle(
                claim,
                "state = 'queued', worker = NULL, lease_until = NULL",
                None,
            )?;
            return Ok(TaskResult::Released);
        }
        if let Some(why) = outcome.failure.clone() {
            return self.attempt_failed(claim, why, Some(&outcome));
        }
        if let Err(e) = outcome.store(bank) {
            return self.attempt_failed(claim, format!("writing the bank: {e}"), None);
        }
        let stored = to_json(&stored_outcome(&outcome));
        if self.settle(claim, "state = 'done', lease_until = NULL", Some(&stored))? {
            Ok(TaskResult::Done {
                decision: outcome.decision.as_str().to_owned(),
            })
        } else {
            Ok(TaskResult::LeaseLost)
        }
    }

    /// A failed attempt: its error appended to the task's errors; the task queued again, or
    /// failed (keeping `outcome`) when it has had `max_attempts` attempts.
    fn attempt_failed(
        &mut self,
        claim: &Claim,
        error: String,
        outcome: Option<&TaskOutcome>,
    ) -> Result<TaskResult, QueueError> {
        let final_ = claim.attempt >= self.config.max_attempts;
        let text = format!(
            "attempt {} on {}: {error}",
            claim.attempt, self.config.worker_id
        );
        let stored = outcome.map(|o| to_json(&stored_outcome(o)));
        let n = self.client.execute(
            "UPDATE tunebank_queue_tasks SET errors = errors || to_jsonb($4::text),
                 state = CASE WHEN $5 THEN 'failed' ELSE 'queued' END,
                 worker = CASE WHEN $5 THEN worker ELSE NULL END,
                 outcome = CASE WHEN $5 THEN $6::jsonb ELSE NULL END, lease_until = NULL, updated = now()
             WHERE id = $1 AND worker = $2 AND attempts = $3 AND state = 'running'",
            &[
                &claim.task_id,
                &self.config.worker_id,
                &claim.attempt,
                &text,
                &final_,
                &stored,
            ],
        )?;
        if n == 0 {
            return Ok(TaskResult::LeaseLost);
        }
        Ok(TaskResult::Failed { error, final_ })
    }

    /// Applies `set` (and the outcome, if given) to the claimed task's row if this worker still
    /// holds the claim; whether it did.
    fn settle(
        &mut self,
        claim: &Claim,
        set: &str,
        outcome: Option<&serde_json::Value>,
    ) -> Result<bool, QueueError> {
        let sql = format!(
            "UPDATE tunebank_queue_tasks SET {set}, outcome = coalesce($4, outcome), updated = now()
             WHERE id = $1 AND worker = $2 AND attempts = $3 AND state = 'running'"
        );
        let n = self.client.execute(
            sql.as_str(),
            &[
                &claim.task_id,
                &self.config.worker_id,
                &claim.attempt,
                &outcome,
            ],
        )?;
        Ok(n == 1)
    }
}

/// Tunes the claimed op exactly as a local OPAT job does ([`crate::tune::opat::run_task`]: same
/// task function, and the settings the job was submitted with, its runner, seed and win rule
/// included), on a fresh runner, with the related records the enqueuer read for this task.
fn tune(claim: &Claim, cancel: &AtomicBool) -> Result<TaskOutcome, String> {
    let settings = claim.job.task_settings();
    let related = usize::try_from(claim.ordinal)
        .map(|o| claim.job.related.get(o).to_vec())
        .unwrap_or_default();
    let task = SingleTask {
        task: claim.task.clone(),
        hit: claim.hit.clone(),
        reconfirm: claim.reconfirm,
        related,
    };
    run_task(&task, &settings, cancel)
}

/// The outcome column of a finished task.
fn stored_outcome(o: &TaskOutcome) -> StoredOutcome {
    StoredOutcome {
        decision: o.decision.as_str().to_owned(),
        before_us: o.before_us,
        after_us: o.after_us,
        trials: o.trials,
        failure: o.failure.clone(),
        unsupported: o.unsupported.clone(),
        default_confirmed: o.default_confirmed(),
        bank_replaced: o.bank_verdict.map(|v| v.replace),
        bank_reason: o.bank_verdict.map(|v| to_json(&v.reason)),
        seeded_by: o.seeded_by.clone(),
    }
}
