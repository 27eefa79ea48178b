//! GDAT, gradient-split tuning for data-parallel training (AOE job type 4): where to cut a
//! model's gradient list into all-reduce segments (at most 8, HCCL style) so that communication
//! overlaps backward compute and the iteration's tail — from the last backward op to the end of
//! the last all-reduce — is shortest.
//!
//! The parts: `timeline` (the model's backward timeline, [`Timeline`]: gradients in production
//! order, their bytes and ready times, from the model import and the op simulator; `step` for a
//! training step graph; `clock` times their problems), `cluster` (the α–β
//! all-reduce model of a topology, linear in bytes), `split` (splits, their schedule and tail,
//! the exact dynamic program, HCCL's default, index ⇄ size), [`search`] (the search through the
//! `Measure` trait, started from the optimum and the default), `job` (look-up, search,
//! decision and bank write under the gradient key; the decision is the drivers' one win rule
//! on exact times, `job::WIN_RULE`, and their shared [`Decision`](crate::tune::Decision)),
//! [`report`] (the AOE-style result file, the lines to paste into a training script,
//! `--timeline-out`), `render` (text and SVG Gantt) and `why` (a gradient-key miss
//! explained by the nearest stored records).

mod clock;
pub(crate) mod cluster;
pub(crate) mod job;
pub mod render;
pub mod report;
pub mod search;
pub(crate) mod split;
mod step;
pub(crate) mod timeline;
mod updates;
pub(crate) mod why;

pub use cluster::{Cluster, LinearCost, Link};
pub use job::*;
use serde::Serialize;
pub use split::{is_valid, optimum, schedule, Schedule, Segment};
use tunebank_failure::FailureKind;
pub use why::{why_gradient, GradientNearMiss, GradientWhy};

/// One gradient, as backward produces it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Gradient {
    /// The parameter's initializer name.
    pub name: String,
    /// Its size in bytes (elements × the resolved dtype's size).
    pub bytes: u64,
    /// When backward has finished it, µs after backward starts.
    pub ready_us: f64,
    /// The graph op that produces it, for a training step graph (its backward op); `None`
    /// when the backward pass is estimated from the forward one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub producer: Option<String>,
}

/// One fused unit's backward span, for the Gantt picture.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BackwardOp {
    /// The unit's name (AOE's op name).
    pub name: String,
    /// Start, µs after backward starts.
    pub start_us: f64,
    /// End, µs after backward starts.
    pub end_us: f64,
}

/// A model's training-step timeline: forward time, backward spans and gradients.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Timeline {
    /// Gradients in production order; `ready_us` is non-decreasing.
    pub gradients: Vec<Gradient>,
    /// When the last backward op ends, µs after backward starts.
    pub backward_end_us: f64,
    /// The forward pass (sum of the units' simulated times), µs.
    pub forward_us: f64,
    /// Backward spans, in backward order.
    pub ops: Vec<BackwardOp>,
}

impl Timeline {
    /// The gradients' sizes in production order.
    pub fn bytes(&self) -> Vec<u64> {
        self.gradients.iter().map(|g| g.bytes).collect()
    }

    /// Total gradient bytes.
    pub fn total_bytes(&self) -> u64 {
        self.gradients.iter().map(|g| g.bytes).sum()
    }
}

/// Why a GDAT job cannot run. Every variant but [`GdatError::Bank`] is the request's fault.
#[derive(Debug, thiserror::Error)]
pub enum GdatError {
    /// The model has no trainable parameter (no initializer feeding a Conv/MatMul/Gemm weight or
    /// bias or a normalisation scale).
    #[error("the model has no trainable parameters (initializers feeding Conv/MatMul/Gemm weights and biases or normalisation scales): there is nothing to all-reduce")]
    NoParameters,
    /// A training step graph with backward ops but no variable update computed from a
    /// gradient: the gradients to all-reduce are not known.
    #[error("the graph has backward ops ({}) but no optimizer update (ApplyAdam, ApplyMomentum, ApplyGradientDescent …, or an assignment of a variable: AssignVariableOp, AssignSubVariableOp …) computed from a gradient: GDAT splits the gradients a step's updates read; expected a training step with its optimizer's updates", backward.join(", "))]
    NoGradients {
        /// Some of its backward units.
        backward: Vec<String>,
    },
    /// The topology or the links are not usable.
    #[error("cluster: {0}")]
    Cluster(String),
    /// The `--cluster` file cannot be read or parsed.
    #[error("--cluster {path}: {problem}")]
    ClusterFile {
        /// The file.
        path: String,
        /// What is wrong (the I/O or parse error's text).
        problem: String,
    },
    /// More segments asked than HCCL allows, or fewer than one.
    #[error("max segments {0}: expected 1 to 8 (HCCL splits gradients into at most 8 segments)")]
    Segments(usize),
    /// A backward problem the simulator cannot time.
    #[error("timing the backward pass: {0}")]
    Simulator(String),
    /// The runner failed on the task as a whole.
    #[error(transparent)]
    Measure(#[from] tunebank_measure::MeasureError),
    /// The model could not be planned (import, shapes, keys).
    #[error(transparent)]
    Tune(#[from] crate::tune::TuneError),
    /// The search strategy name is unknown.
    #[error("unknown search strategy {0:?}")]
    Strategy(String),
    /// The search measured no candidate successfully.
    #[error("the search measured no split successfully")]
    NothingMeasured,
    /// The gradient key could not be derived.
    #[error(transparent)]
    Key(#[from] tunebank_key::KeyError),
    /// The bank failed.
    #[error(transparent)]
    Bank(#[from] tunebank_bank::BankError),
}

impl GdatError {
    /// The kind of the measurement, tuning, key or bank error it wraps (a busy, damaged or
    /// unreachable gradient bank is that); a model without parameters, a bad cluster or
    /// segment count, an unknown strategy, a backward pass the simulator cannot time and a
    /// search that measured nothing are the request's (its model, flags or runner).
    pub fn kind(&self) -> FailureKind {
        match self {
            GdatError::Measure(e) => e.kind(),
            GdatError::Tune(e) => e.kind(),
            GdatError::Key(e) => e.kind(),
            GdatError::Bank(e) => e.kind(),
            GdatError::NoParameters
            | GdatError::NoGradients { .. }
            | GdatError::Cluster(_)
            | GdatError::ClusterFile { .. }
            | GdatError::Segments(_)
            | GdatError::Simulator(_)
            | GdatError::Strategy(_)
            | GdatError::NothingMeasured => FailureKind::Input,
        }
    }
}
