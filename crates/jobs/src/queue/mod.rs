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
pub mod status;
mod worker;

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::tune::transfer::Snapshot;
use crate::tune::{TuneError, TuneSettings};
use tunebank_bank::BankError;
use tunebank_failure::FailureKind;
use tunebank_measure::TimingSettings;
use tunebank_pg::PgError;

pub use enqueue::{enqueue, Enqueued, Submission};
pub use schema::migrate;
pub use status::cancel_job;
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

/// How a job tunes, as stored in its row: what a worker needs to tune each task exactly as a
/// local OPAT tune of the same job would (the runner is the task's, see [`TaskStatus`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct JobSettings {
    /// Search strategy name.
    pub strategy: String,
    /// Seed of the searches.
    pub seed: u64,
    /// Candidates per op at most.
    pub trials_per_op: usize,
    /// Seconds of search per op at most.
    pub time_per_op_s: Option<f64>,
    /// `REPEAT_TUNE`.
    pub repeat_tune: bool,
    /// Candidates per search round.
    pub batch: usize,
    /// Side-by-side rounds.
    pub confirm_rounds: usize,
    /// Untimed runs before timing.
    pub warmup: u32,
    /// Timed runs per candidate.
    pub repeats: u32,
    /// Wall-clock limit per candidate, ms.
    pub timeout_ms: u64,
    /// The options as the user gave them (stored in records).
    pub options_given: BTreeMap<String, String>,
    /// The related bank records of each queued task (by its ordinal, the plan's task index),
    /// read when the job was enqueued: a worker seeds its search from them and from no record
    /// written since, so each task is tuned as a local tune of the job would tune it (absent
    /// when no task has any, or transfer is off).
    #[serde(default, skip_serializing_if = "Snapshot::is_empty")]
    pub related: Snapshot,
}

impl JobSettings {
    /// What a job stores of `s` (the job-wide trial and time budgets and the worker count are
    /// the submitter's and do not apply to a queue).
    pub fn from_settings(s: &TuneSettings) -> Self {
        JobSettings {
            strategy: s.strategy.clone(),
            seed: s.seed,
            trials_per_op: s.trials_per_op,
            time_per_op_s: s.time_per_op.map(|d| d.as_secs_f64()),
            repeat_tune: s.repeat_tune,
            batch: s.batch,
            confirm_rounds: s.confirm_rounds,
            warmup: s.timing.warmup,
            repeats: s.timing.repeats,
            timeout_ms: s.timing.timeout_ms,
            options_given: s.options_given.clone(),
            related: Snapshot::default(),
        }
    }

    /// The tuning settings a worker runs a task of this job with, on `runner`: one worker
    /// thread, no job-wide budget.
    pub fn to_settings(&self, runner: &str) -> TuneSettings {
        TuneSettings {
            runner: runner.to_owned(),
            strategy: self.strategy.clone(),
            seed: self.seed,
            trials_per_op: self.trials_per_op,
            time_per_op: self.time_per_op_s.map(Duration::from_secs_f64),
            total_trials: None,
            total_time: None,
            repeat_tune: self.repeat_tune,
            workers: 1,
            batch: self.batch,
            confirm_rounds: self.confirm_rounds,
            options_given: self.options_given.clone(),
            timing: TimingSettings {
                warmup: self.warmup,
                repeats: self.repeats,
                timeout_ms: self.timeout_ms,
            },
            ..TuneSettings::default()
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

    #[test]
    fn settings_round_trip_through_a_job_row() {
        let s = TuneSettings {
            strategy: "random".into(),
            seed: 7,
            trials_per_op: 8,
            repeat_tune: true,
            ..TuneSettings::default()
        };
        let j = JobSettings::from_settings(&s);
        let back: JobSettings = from_json(to_json(&j), "job").unwrap();
        let t = back.to_settings("sim");
        assert_eq!(
            (t.strategy.as_str(), t.seed, t.trials_per_op, t.repeat_tune),
            ("random", 7, 8, true)
        );
        assert_eq!(t.timing.repeats, s.timing.repeats);
    }
}
