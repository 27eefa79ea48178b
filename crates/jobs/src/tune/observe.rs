//! A job's progress as it happens: the one observer trait of the drivers (OPAT, SGAT, GDAT)
//! and the job API. Its public path is `job::Observer` (with `job::Started` and
//! `job::Finished`), the job API's; the drivers here tell it of each finished task.

use std::path::Path;

/// What a job says before its first task: where its winners and its result file go.
#[derive(Clone, Debug)]
pub struct Started<'a> {
    /// The bank written.
    pub bank_file: Option<&'a Path>,
    /// The result file (rewritten as tasks finish).
    pub result_file: &'a Path,
}

/// A finished task (an op's key, a subgraph, the gradient split).
#[derive(Clone, Debug)]
pub struct Finished<'a> {
    /// The task's first name (op, subgraph or model).
    pub name: &'a str,
    /// What happened in the bank: `add`, `update`, `reserved` or `unsatisfied`
    /// ([`Decision::as_str`](crate::tune::Decision::as_str)).
    pub decision: &'a str,
    /// Time before, µs, when measured.
    pub before_us: Option<f64>,
    /// Time after, µs, when measured.
    pub after_us: Option<f64>,
    /// Why the task failed, if it did.
    pub failure: Option<&'a str>,
    /// Why the runner does not tune it, if it does not.
    pub unsupported: Option<&'a str>,
    /// The default strategy was confirmed and the bank stored it.
    pub default_confirmed: bool,
    /// Tasks finished so far, this one included.
    pub done: usize,
    /// Tasks in the job.
    pub total: usize,
}

/// Told about a job's progress, on the thread that runs the job: `started` once by the job
/// API (`Job::run`) when the bank is open and the result file named, then `finished` for each
/// task as it finishes — by OPAT (`tune::opat::run`) and SGAT (`tune::sgat::run_sgat`) for
/// each op key or subgraph (reused bank hits first), by the job API for GDAT's one task. When
/// `finished` is called, the task's record, if any, is in the bank and the task is in the
/// result file. Every method has a default that does nothing, so `&mut ()` observes nothing.
pub trait Observer {
    /// The bank is open and the result file named; no task has run.
    fn started(&mut self, _start: &Started<'_>) {}
    /// A task finished.
    fn finished(&mut self, _task: &Finished<'_>) {}
}

impl Observer for () {}
