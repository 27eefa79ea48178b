//! The distributed tuning queue: OPAT jobs spread over worker processes on any number of hosts,
//! through PostgreSQL (the same database as a team bank).
//!
//! A job is planned as a local OPAT tune plans it ([`crate::job::Job::enqueue`]) and looked up as it
//! looks up (hits without `REPEAT_TUNE` are decided at once, `reserved`); [`enqueue`] writes
//! one job row and one task row per key that still needs tuning. A worker ([`Worker`]) claims a
//! task whose SoC and runner it serves with `SELECT … FOR UPDATE SKIP LOCKED`, holds a lease
//! that a heartbeat thread renews, tunes the one op with the OPAT task function
//! ([`crate::tune`]'s search, side-by-side re-measurement and win rule), writes the record
//! through the bank-write policy ([`tunebank_bank::policy`]) into the shared bank and only then
//! marks the task done. A task whose lease expired (its worker died) is claimed again; a task
//! that failed `max_attempts` times is marked failed with every error kept. [`job_status`],
//! [`job_report`] and `cancel_job` read and steer a job; the report is the AOE result file
//! a local tune would write ([`crate::tune::report::OpatReport`]).
//!
//! Every connection goes through [`connect`] ([`tunebank_pg`]); the queue's tables are component
//! `tunebank_pg::schema::QUEUE` of the database's versioned schema ([`tunebank_pg::schema`]): `tunebank bank init`
//! creates them with the bank's, and [`migrate`] creates or migrates them on first use.

mod enqueue;
mod schema;
pub(crate) mod status;
mod worker;

use serde::{Deserialize, Serialize};

use crate::tune::transfer::Snapshot;
use crate::tune::{TuneError, TuneSettings};
use tunebank_bank::BankError;
use tunebank_failure::FailureKind;
use tunebank_pg::PgError;

pub use enqueue::{enqueue, Enqueued, Submission};
pub use schema::migrate;
pub use status::{cancel_job, Cancelled};
pub use status::{job_report, job_status, JobStatus, StateCounts, TaskStatus};
pub use worker::{TaskEvent, TaskResult, Worker, WorkerConfig, WorkerReport, HOLD_FIRST_TASK_ENV};

/// A queue database connection.
pub use tunebank_pg::Client;

/// Why a queue operation failed.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// Connecting, or the queue schema ([`tunebank_pg`]'s typed errors; the URL is redacted).
    #[error(transparent)]
    Pg(#[from] PgError),
    /// A statement failed on the server or the connection broke.
    #[error("queue database: {0}")]
    Db(#[from] postgres::Error),
    /// No job has this id.
    #[error("job {id}: no such job in the queue")]
    UnknownJob {
        /// The id asked for.
        id: i64,
    },
    /// A stored row does not decode (a descriptor, settings or outcome of another shape).
    #[error("queue row {what}: {detail}")]
    Row {
        /// Which row and column.
        what: String,
        /// What is wrong.
        detail: String,
    },
    /// Tuning could not be set up (runner, strategy).
    #[error(transparent)]
    Tune(#[from] TuneError),
    /// The shared bank failed.
    #[error(transparent)]
    Bank(#[from] BankError),
    /// The result file could not be written.
    #[error("writing the result file {path}: {source}")]
    Report {
        /// The file.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
}

impl QueueError {
    /// A connection error answers for itself ([`PgError::kind`]: an unreachable server is
    /// [`FailureKind::Unreachable`]); a statement whose connection broke is unreachable too,
    /// any other server error and a result file that cannot be written are I/O failures; an
    /// unknown job is the request's; undecodable rows are damage; tuning and bank errors answer
    /// for themselves.
    pub fn kind(&self) -> FailureKind {
        match self {
            QueueError::Pg(e) => e.kind(),
            QueueError::Db(e) if e.as_db_error().is_none() => FailureKind::Unreachable,
            QueueError::Db(_) | QueueError::Report { .. } => FailureKind::Io,
            QueueError::UnknownJob { .. } => FailureKind::Input,
            QueueError::Row { .. } => FailureKind::Damaged,
            QueueError::Tune(e) => e.kind(),
            QueueError::Bank(e) => e.kind(),
        }
    }
}

/// Opens a read-write connection to the queue database at `url`: the one place the queue
/// connects, through [`tunebank_pg::connect`] (TLS, timeouts, redacted errors).
pub fn connect(url: &str) -> Result<Client, QueueError> {
    Ok(tunebank_pg::connect(url)?)
}

/// A job's settings column: the job's own [`TuneSettings`] as it was submitted (their stored
/// form, flat), with the related records of its tasks. A worker runs each task with exactly
/// these settings (the job-wide trial and time budgets and the worker count apply to a local
/// run; a task is one op on one worker thread, [`QueuedJob::task_settings`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct QueuedJob {
    /// How the job tunes.
    #[serde(flatten)]
    pub settings: TuneSettings,
    /// The related bank records of each queued task (by its ordinal, the plan's task index),
    /// read when the job was enqueued: a worker seeds its search from them and from no record
    /// written since, so each task is tuned as a local tune of the job would tune it (absent
    /// when no task has any, or transfer is off).
    #[serde(default, skip_serializing_if = "Snapshot::is_empty")]
    pub related: Snapshot,
}

impl QueuedJob {
    /// Decodes a job row's settings column `v`; `runner` is the row's runner column, the
    /// runner of a column written before the settings carried their own.
    pub fn from_row(
        mut v: serde_json::Value,
        runner: &str,
        what: &str,
    ) -> Result<Self, QueueError> {
        if let Some(m) = v.as_object_mut() {
            m.entry("runner").or_insert_with(|| runner.into());
        }
        from_json(v, what)
    }

    /// The settings a worker tunes one task of the job with: the job's, on one worker thread
    /// whose search has all the job's measurement slots (a worker tunes one op at a time),
    /// without the job-wide trial and time budgets (they bound a local run of the whole job).
    pub fn task_settings(&self) -> TuneSettings {
        TuneSettings {
            workers: 1,
            batch: Some(self.settings.round_width(0, 1)),
            total_trials: None,
            total_time: None,
            ..self.settings.clone()
        }
    }
}

/// A JSON column decoded into `T`, or [`QueueError::Row`] naming `what`.
fn from_json<T: serde::de::DeserializeOwned>(
    v: serde_json::Value,
    what: &str,
) -> Result<T, QueueError> {
    serde_json::from_value(v).map_err(|e| QueueError::Row {
        what: what.to_owned(),
        detail: e.to_string(),
    })
}

/// `v` as a JSON column value.
fn to_json<T: Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).expect("queue values serialise to JSON")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::{GainBound, WinRule};
    use std::time::Duration;
    use tunebank_measure::RunnerSpec;

    /// A job's settings survive its row (the win rule included); a task runs them on one
    /// thread without the job-wide budgets.
    #[test]
    fn settings_round_trip_through_a_job_row() {
        let s = TuneSettings {
            runner: RunnerSpec::parse("sim:3").unwrap(),
            strategy: "random".into(),
            seed: 7,
            trials_per_op: 8,
            repeat_tune: true,
            total_trials: Some(5),
            total_time: Some(Duration::from_secs(9)),
            workers: 4,
            win: WinRule {
                min_gain: 0.5,
                alpha: 0.05,
                gain_bound: GainBound::Exclusive,
            },
            ..TuneSettings::default()
        };
        let j = QueuedJob {
            settings: s.clone(),
            related: Snapshot::default(),
        };
        let back = QueuedJob::from_row(to_json(&j), "sim:3", "job").unwrap();
        assert_eq!(back, j);
        let t = back.task_settings();
        assert_eq!((t.workers, t.total_trials, t.total_time), (1, None, None));
        // One op at a time on a worker: its search has the job's 4 slots.
        assert_eq!((t.batch, t.round_width(0, 1)), (Some(4), 4));
        assert_eq!(
            TuneSettings {
                workers: 4,
                batch: None,
                total_trials: Some(5),
                total_time: Some(Duration::from_secs(9)),
                ..t
            },
            s
        );
    }

    /// A settings column of the earlier form (no runner, no win rule) reads with the row's
    /// runner and the default win rule, which is what a worker then ran it with.
    #[test]
    fn an_earlier_settings_column_reads_with_the_rows_runner() {
        let old = serde_json::json!({
            "strategy": "random", "seed": 7, "trials_per_op": 8, "time_per_op_s": 2.5,
            "repeat_tune": true, "batch": 8, "confirm_rounds": 7, "warmup": 2,
            "repeats": 10, "timeout_ms": 10000, "options_given": {"soc_version": "Ascend910B2"}
        });
        let j = QueuedJob::from_row(old, "exec:./r.sh", "job 1 settings").unwrap();
        let s = &j.settings;
        assert_eq!(s.runner.to_string(), "exec:./r.sh");
        assert_eq!(s.win, WinRule::default());
        assert_eq!(s.time_per_op, Some(Duration::from_millis(2500)));
        assert!(s.repeat_tune && s.transfer);
        assert!(j.related.is_empty());
        let bad = QueuedJob::from_row(serde_json::json!({"seed": 1}), "sim", "job 2 settings");
        assert!(matches!(bad, Err(QueueError::Row { what, .. }) if what == "job 2 settings"));
    }
}
