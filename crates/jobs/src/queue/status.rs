//! Reading and steering a job: its per-task status ([`job_status`], text and JSON), its AOE
//! result file built from the database ([`job_report`]) and cancellation ([`cancel_job`]).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::tune::report::{ModifiedOp, OpSeeded, OpatReport, SeededBy, TuneMode};
use crate::tune::{job_result, Decision, TaskCounts};

use super::{from_json, Client, QueueError};

/// What a finished task stored as its outcome (the `outcome` column).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredOutcome {
    /// `add`, `update`, `reserved` or `unsatisfied`.
    pub(crate) decision: String,
    /// Baseline median re-measured, µs.
    pub(crate) before_us: Option<f64>,
    /// Best median re-measured, µs.
    pub(crate) after_us: Option<f64>,
    /// Candidates measured.
    pub(crate) trials: u64,
    /// The runner's task-level failure, if any.
    pub(crate) failure: Option<String>,
    /// Why the runner does not tune the op, if so.
    pub(crate) unsupported: Option<String>,
    /// The record written stores the default as confirmed.
    pub default_confirmed: bool,
    /// Whether the bank-write policy wrote the record (`None`: no record).
    pub(crate) bank_replaced: Option<bool>,
    /// The policy's rule, if a record was offered.
    pub(crate) bank_reason: Option<serde_json::Value>,
    /// The related bank records that seeded the search (transfer); absent when it ran cold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) seeded_by: Vec<SeededBy>,
}

impl StoredOutcome {
    fn decision(&self) -> Decision {
        match self.decision.as_str() {
            "add" => Decision::Add,
            "update" => Decision::Update,
            "reserved" => Decision::Reserved,
            _ => Decision::Unsatisfied,
        }
    }
}

/// Tasks of a job by state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StateCounts {
    /// Waiting for a worker.
    pub queued: usize,
    /// Held by a worker (its lease may have expired).
    pub running: usize,
    /// Tuned, the outcome in the bank.
    pub done: usize,
    /// Failed `max_attempts` times.
    pub failed: usize,
    /// Cancelled before a worker took them.
    pub cancelled: usize,
}

impl StateCounts {
    /// Tasks no worker will take any more (done, failed, cancelled).
    pub fn finished(&self) -> usize {
        self.done + self.failed + self.cancelled
    }

    /// Tasks in all.
    pub fn total(&self) -> usize {
        self.finished() + self.queued + self.running
    }
}

/// One task of a job as the queue holds it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskStatus {
    /// The task's id.
    pub id: i64,
    /// Its position in the job's plan.
    pub ordinal: i32,
    /// The bank key, hex.
    pub key: String,
    /// The op names sharing the key.
    pub op_names: Vec<String>,
    /// `queued`, `running`, `done`, `failed` or `cancelled`.
    pub state: String,
    /// The worker holding or last holding it.
    pub worker: Option<String>,
    /// Claims so far.
    pub attempts: i32,
    /// Every failed attempt's error, oldest first.
    pub errors: Vec<String>,
    /// The decision of a done task.
    pub decision: Option<String>,
}

/// A job and its tasks.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobStatus {
    /// The job's id.
    pub job_id: i64,
    /// Its name (the model's stem).
    pub tuning_name: String,
    /// The model as given.
    pub model: String,
    /// Its SoC.
    pub soc: String,
    /// The runner its workers need.
    pub runner: String,
    /// `open` or `cancelled`.
    pub state: String,
    /// Unique keys in the plan.
    pub plan_tasks: i32,
    /// Keys decided at submission as bank hits (nothing queued).
    pub reused: i32,
    /// Queued tasks by state.
    pub counts: StateCounts,
    /// Every queued task, in plan order.
    pub tasks: Vec<TaskStatus>,
}

impl JobStatus {
    /// Whether no task will change any more (every task done, failed or cancelled).
    pub fn settled(&self) -> bool {
        self.counts.queued == 0 && self.counts.running == 0
    }
}

impl fmt::Display for JobStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.counts;
        writeln!(
            f,
            "job {} {} ({}, runner {}): {}; {} keys, {} bank hits reused, {} tasks: {} done, {} failed, {} running, {} queued, {} cancelled",
            self.job_id, self.tuning_name, self.soc, self.runner, self.state, self.plan_tasks,
            self.reused, c.total(), c.done, c.failed, c.running, c.queued, c.cancelled
        )?;
        if self.tasks.is_empty() {
            return Ok(());
        }
        writeln!(
            f,
            "{:>8}  {:<9}  {:>8}  {:<24}  {:<11}  op",
            "task", "state", "attempts", "worker", "decision"
        )?;
        for t in &self.tasks {
            writeln!(
                f,
                "{:>8}  {:<9}  {:>8}  {:<24}  {:<11}  {}",
                t.id,
                t.state,
                t.attempts,
                t.worker.as_deref().unwrap_or("-"),
                t.decision.as_deref().unwrap_or("-"),
                t.op_names.first().map(String::as_str).unwrap_or("")
            )?;
            if let Some(e) = t.errors.last() {
                writeln!(f, "{:>8}  last error: {e}", "")?;
            }
        }
        Ok(())
    }
}

/// The job row's fields [`job_status`] and [`job_report`] read.
struct JobRow {
    tuning_name: String,
    model: String,
    soc: String,
    runner: String,
    state: String,
    plan_tasks: i32,
    reused: i32,
    created_s: f64,
}

fn job_row(client: &mut Client, job_id: i64) -> Result<JobRow, QueueError> {
    let row = client
        .query_opt(
            "SELECT tuning_name, model, soc, runner, state, plan_tasks, reused,
                    extract(epoch FROM created)::float8
             FROM tunebank_queue_jobs WHERE id = $1",
            &[&job_id],
        )?
        .ok_or(QueueError::UnknownJob { id: job_id })?;
    Ok(JobRow {
        tuning_name: row.get(0),
        model: row.get(1),
        soc: row.get(2),
        runner: row.get(3),
        state: row.get(4),
        plan_tasks: row.get(5),
        reused: row.get(6),
        created_s: row.get(7),
    })
}

/// Job `job_id` and every task of it, in plan order; [`QueueError::UnknownJob`] when there is
/// no such job.
pub fn job_status(client: &mut Client, job_id: i64) -> Result<JobStatus, QueueError> {
    let job = job_row(client, job_id)?;
    let mut counts = StateCounts::default();
    let mut tasks = Vec::new();
    for r in client.query(
        "SELECT id, ordinal, key_hex, op_names, state, worker, attempts, errors, outcome
         FROM tunebank_queue_tasks WHERE job_id = $1 ORDER BY ordinal",
        &[&job_id],
    )? {
        let id: i64 = r.get(0);
        let state: String = r.get(4);
        match state.as_str() {
            "queued" => counts.queued += 1,
            "running" => counts.running += 1,
            "done" => counts.done += 1,
            "failed" => counts.failed += 1,
            _ => counts.cancelled += 1,
        }
        let outcome: Option<serde_json::Value> = r.get(8);
        let decision = match outcome {
            Some(v) => Some(from_json::<StoredOutcome>(v, &format!("task {id} outcome"))?.decision),
            None => None,
        };
        tasks.push(TaskStatus {
            id,
            ordinal: r.get(1),
            key: r.get(2),
            op_names: from_json(r.get(3), &format!("task {id} op_names"))?,
            state,
            worker: r.get(5),
            attempts: r.get(6),
            errors: from_json(r.get(7), &format!("task {id} errors"))?,
            decision,
        });
    }
    Ok(JobStatus {
        job_id,
        tuning_name: job.tuning_name,
        model: job.model,
        soc: job.soc,
        runner: job.runner,
        state: job.state,
        plan_tasks: job.plan_tasks,
        reused: job.reused,
        counts,
        tasks,
    })
}

/// The AOE OPAT report of job `job_id` as the database holds it now, as a local tune of the
/// same job would write it: the reused hits counted `reserved`, each done task by its decision
/// (add and update listed as modified, in plan order), each failed task as a failed op (counted
/// `reserved` on a hit, else `unsatisfied`). Its result is the jobs' one outcome rule
/// (`tune::job_result`): a job with a task not finished (queued, running, cancelled) is
/// `tuning incomplete`; else successful when no task failed and at least one was tuned or
/// found, with the time from submission to the last task's end.
pub fn job_report(client: &mut Client, job_id: i64) -> Result<OpatReport, QueueError> {
    let job = job_row(client, job_id)?;
    let mut report = OpatReport::new(job.tuning_name);
    for _ in 0..job.reused {
        Decision::Reserved.count(&mut report.summary);
    }
    let mut counts = TaskCounts {
        tuned: job.reused as usize,
        ..TaskCounts::default()
    };
    let rows = client.query(
        "SELECT id, state, op_names, op_types, outcome, hit_strategy IS NOT NULL,
                extract(epoch FROM updated)::float8
         FROM tunebank_queue_tasks WHERE job_id = $1 ORDER BY ordinal",
        &[&job_id],
    )?;
    let mut last_s = job.created_s;
    for r in &rows {
        let id: i64 = r.get(0);
        let state: &str = r.get(1);
        let op_names: Vec<String> = from_json(r.get(2), &format!("task {id} op_names"))?;
        let op_types: Vec<String> = from_json(r.get(3), &format!("task {id} op_types"))?;
        let outcome: Option<serde_json::Value> = r.get(4);
        let hit: bool = r.get(5);
        last_s = last_s.max(r.get(6));
        match (state, outcome) {
            ("done", Some(v)) => {
                let o: StoredOutcome = from_json(v, &format!("task {id} outcome"))?;
                let d = o.decision();
                d.count(&mut report.summary);
                if let (Some(mode), Some(b), Some(a)) = (d.update_mode(), o.before_us, o.after_us) {
                    report.modified.extend(op_names.iter().map(|n| ModifiedOp {
                        op_name: n.clone(),
                        op_types: op_types.clone(),
                        mode: TuneMode::Schedule,
                        before_us: b,
                        after_us: a,
                        update_mode: mode,
                    }));
                }
                if !o.seeded_by.is_empty() {
                    report.transfer.extend(op_names.iter().map(|n| OpSeeded {
                        op_name: n.clone(),
                        seeded_by: o.seeded_by.clone(),
                    }));
                }
                if o.failure.is_some() {
                    counts.failed += 1;
                    report.failed_ops.extend(op_names);
                } else if o.unsupported.is_none() {
                    counts.tuned += 1;
                }
            }
            ("failed", _) => {
                let d = if hit {
                    Decision::Reserved
                } else {
                    Decision::Unsatisfied
                };
                d.count(&mut report.summary);
                counts.failed += 1;
                report.failed_ops.extend(op_names);
            }
            _ => counts.unfinished += 1,
        }
    }
    report.result = job_result(counts);
    if counts.unfinished == 0 {
        report.tuning_time_s = Some((last_s - job.created_s).max(0.0));
    }
    Ok(report)
}

/// What [`cancel_job`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Cancelled {
    /// The job.
    pub job_id: i64,
    /// Queued tasks now cancelled.
    pub cancelled: usize,
    /// Tasks still held by workers: they finish, or are cancelled when their lease expires.
    pub running: usize,
}

/// Cancels job `job_id`: the job is marked cancelled, so no worker claims its tasks any more,
/// and its queued tasks become `cancelled`; running tasks finish (or, abandoned, are cancelled
/// when their lease expires). Cancelling twice is harmless.
pub fn cancel_job(client: &mut Client, job_id: i64) -> Result<Cancelled, QueueError> {
    let mut tx = client.transaction()?;
    let n = tx.execute(
        "UPDATE tunebank_queue_jobs SET state = 'cancelled' WHERE id = $1",
        &[&job_id],
    )?;
    if n == 0 {
        return Err(QueueError::UnknownJob { id: job_id });
    }
    let cancelled = tx.execute(
        "UPDATE tunebank_queue_tasks SET state = 'cancelled', updated = now()
         WHERE job_id = $1 AND state = 'queued'",
        &[&job_id],
    )?;
    let running: i64 = tx
        .query_one(
            "SELECT count(*) FROM tunebank_queue_tasks WHERE job_id = $1 AND state = 'running'",
            &[&job_id],
        )?
        .get(0);
    tx.commit()?;
    Ok(Cancelled {
        job_id,
        cancelled: cancelled as usize,
        running: running as usize,
    })
}
