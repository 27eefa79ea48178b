//! Tuning: the three AOE jobs over shared plumbing.
//!
//! - [`opat`]: operator tuning (a model's ops, one bank record per op key);
//! - [`sgat`]: subgraph tuning (the fusion and layout strategy of each subgraph);
//! - [`gdat`]: gradient tuning (where a data-parallel training step cuts its gradients).
//!
//! The plumbing they share: [`plan`] (a model's tuning units and tasks), [`TuneSettings`] and
//! their checks, the worker pool (`pool.rs`: one runner per worker, the job's budget of trials
//! and time, the cancel flag, panics contained per job), the one win rule, the one decision
//! function and [`Decision`], and the one outcome rule of a job (`decision.rs`), the one
//! progress observer (`observe.rs`, public as `job::Observer`), [`transfer`] (a search seeded
//! from related bank records), `memory` (the worker cap) and [`report`] (AOE's result file and
//! its tables).

use tunebank_bank::BankError;
use tunebank_failure::FailureKind;
use tunebank_measure::MeasureError;
use tunebank_model::ModelError;

pub(crate) mod decision;
pub mod gdat;
pub(crate) mod memory;
pub(crate) mod observe;
pub mod opat;
mod plan;
mod pool;
pub(crate) mod range_record;
pub(crate) mod range_transfer;
pub mod report;
mod settings;
pub mod sgat;
pub mod transfer;

pub(crate) use decision::{decide, job_result, Findings, Offer, Round, SearchEnd, TaskCounts};
pub use decision::{Decision, GainBound, Judgement, WinRule};
pub(crate) use observe::{Finished, Observer};
pub use plan::{plan, TunePlan, TuneTask};
pub(crate) use plan::{task_seed, unit_selected};
pub use settings::TuneSettings;
pub(crate) use settings::{check_settings, check_soc};

/// Why a tuning job could not start or go on. Per-op problems are not errors: they are
/// [`opat::TaskOutcome::failure`]s and end up in `tuning_failed_operators`.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    /// The model could not be imported or its shapes not set up.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// An op could not be resolved into a key.
    #[error(transparent)]
    Resolve(#[from] tunebank_key::ResolveError),
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
    /// The runner cannot tune the job's SoC at all: refused before any work, since every op
    /// would come out unsatisfied.
    #[error("--soc_version={soc}: runner {runner} does not support this SoC ({why}); it supports {}", supported.join(", "))]
    UnsupportedSoc {
        /// The SoC version of the job.
        soc: String,
        /// The runner spec.
        runner: String,
        /// Why (for the simulator: what its SoC description file lacks).
        why: String,
        /// The SoC versions the runner supports.
        supported: Vec<String>,
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

impl TuneError {
    /// The kind of the model or bank error it wraps; a result file that cannot be written is an
    /// I/O failure; resolution, runner and strategy errors are the request's.
    pub fn kind(&self) -> FailureKind {
        match self {
            TuneError::Model(e) => e.kind(),
            TuneError::Bank(e) => e.kind(),
            TuneError::Report { .. } => FailureKind::Io,
            TuneError::Resolve(e) => e.kind(),
            TuneError::Runner(e) => e.kind(),
            TuneError::UnknownStrategy { .. } | TuneError::UnsupportedSoc { .. } => {
                FailureKind::Input
            }
        }
    }
}
