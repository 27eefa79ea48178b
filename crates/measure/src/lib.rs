//! Runners: the [`Measure`] trait and its implementations.
//!
//! A runner turns a [`TuningTask`] and a batch of candidate strategies into measured times. It
//! gives the space of strategies valid on its target ([`Measure::space`]), the default strategy
//! a compiler picks with no bank ([`Measure::default_strategy`], the baseline), and per-candidate
//! [`Outcome`]s: time samples in µs, or a [`Failure`] classified in AOE's taxonomy
//! ([`CandidateFailure`]). A runner never decides: the tuning driver owns budgets and the loop.
//!
//! Runners:
//! - [`sim::SimRunner`] (`sim`): an analytic pipeline model of the Ascend DaVinci AI core
//!   (Ascend910B2, Ascend310P3), chosen by the task's SoC version.
//! - `cpu::CpuRunner` (`cpu`, cargo feature `cpu`, on by default): real kernels on the host whose
//!   tiling comes from the strategy.
//! - `exec::ExecRunner` (`exec:COMMAND`): a user's process speaking the JSON-lines protocol of
//!   docs/interfaces.md ("External runner protocol").
//!
//! Strategies travel as [`StrategyMap`]s, the form the bank stores; [`TaskSpace`] converts between a search space's
//! configurations and that map.
//!
//! ```
//! use tunebank_key::{DType, Format, OpDescriptor, SocSpec, TensorDesc, ImplMode, CubeMath};
//! use tunebank_measure::{Measure, TuningTask, sim::SimRunner};
//!
//! let t = |shape: &[i64]| TensorDesc {
//!     shape: shape.to_vec(), ori_shape: shape.to_vec(), dtype: DType::Float16,
//!     format: Format::ND, ori_format: Format::ND,
//! };
//! let task = TuningTask::new(OpDescriptor {
//!     op_type: "MatMul".into(), fused_ops: vec![],
//!     inputs: vec![t(&[128, 768]), t(&[768, 3072])], outputs: vec![t(&[128, 3072])],
//!     attrs: Default::default(), impl_mode: ImplMode::HighPerformance,
//!     cube_math: CubeMath::Native, soc: SocSpec::from_version("Ascend910B2").unwrap(),
//!     origin: None,
//! });
//! let mut sim = SimRunner::new();
//! let space = sim.space(&task)?;
//! let default = sim.default_strategy(&task)?;
//! assert!(space.config_of(&default).is_some(), "the default is in the space");
//! let outcomes = sim.measure(&task, &[default])?;
//! let us = outcomes[0].median_us().unwrap();
//! assert!(us > 3.0, "at least the launch overhead");
//! # Ok::<(), tunebank_measure::MeasureError>(())
//! ```
#![deny(missing_docs)]
#![warn(unnameable_types)]

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use tunebank_key::StrategyMap;

use search_strategies::{Config, ConfigId, Objective, Parameter, Space, SpaceError, Value};
use serde::{Deserialize, Serialize};

use tunebank_failure::FailureKind;
use tunebank_key::{DType, OpDescriptor};

#[cfg(feature = "cpu")]
pub mod cpu;
pub mod exec;
pub mod sim;
mod spec;

pub use spec::{runner_from_spec, RunnerSpec, SIM_NOISE_SIGMA};

/// AOE's failure taxonomy: why a candidate produced no time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CandidateFailure {
    /// The kernel could not be built (invalid tiling: buffer overflow, misalignment, …).
    BuildFail,
    /// Building took too long.
    BuildTimeout,
    /// Building ran out of memory.
    BuildOom,
    /// The runner cannot run this op or strategy at all.
    Unsupported,
    /// The kernel did not finish in time.
    RunTimeout,
    /// The kernel (or the process running it) crashed.
    RunCrash,
    /// The AI core reported an error.
    AicoreError,
    /// The output did not match the reference.
    PrecisionFail,
    /// The environment failed (device, driver, runner protocol).
    EnvException,
}

impl CandidateFailure {
    /// Every kind, in taxonomy order.
    pub const ALL: [CandidateFailure; 9] = [
        CandidateFailure::BuildFail,
        CandidateFailure::BuildTimeout,
        CandidateFailure::BuildOom,
        CandidateFailure::Unsupported,
        CandidateFailure::RunTimeout,
        CandidateFailure::RunCrash,
        CandidateFailure::AicoreError,
        CandidateFailure::PrecisionFail,
        CandidateFailure::EnvException,
    ];

    /// The snake_case name AOE's reports use, e.g. `build_fail`.
    pub fn as_str(self) -> &'static str {
        match self {
            CandidateFailure::BuildFail => "build_fail",
            CandidateFailure::BuildTimeout => "build_timeout",
            CandidateFailure::BuildOom => "build_oom",
            CandidateFailure::Unsupported => "unsupported",
            CandidateFailure::RunTimeout => "run_timeout",
            CandidateFailure::RunCrash => "run_crash",
            CandidateFailure::AicoreError => "aicore_error",
            CandidateFailure::PrecisionFail => "precision_fail",
            CandidateFailure::EnvException => "env_exception",
        }
    }

    /// The kind named `s` (as [`CandidateFailure::as_str`] spells it).
    pub fn parse(s: &str) -> Option<CandidateFailure> {
        CandidateFailure::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl fmt::Display for CandidateFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A classified failure of one candidate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// Its class.
    pub kind: CandidateFailure,
    /// What happened, for people (e.g. which buffer overflowed by how much).
    pub reason: String,
}

/// The result of measuring one candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// It ran; one time per timed repeat, in µs, all finite and positive.
    Measurement {
        /// Time samples in µs, in the order taken.
        samples_us: Vec<f64>,
    },
    /// It produced no time.
    Failure(Failure),
}

impl Outcome {
    /// A failure of `kind` with `reason`.
    pub fn fail(kind: CandidateFailure, reason: impl Into<String>) -> Outcome {
        Outcome::Failure(Failure {
            kind,
            reason: reason.into(),
        })
    }

    /// The median sample, or `None` for a failure (or an empty sample list).
    pub fn median_us(&self) -> Option<f64> {
        match self {
            Outcome::Measurement { samples_us } => search_strategies::stats::median(samples_us),
            Outcome::Failure(_) => None,
        }
    }

    /// The spread of the samples: first and third quartile (nearest rank), or `None` for a
    /// failure.
    pub fn quartiles_us(&self) -> Option<(f64, f64)> {
        match self {
            Outcome::Measurement { samples_us } if !samples_us.is_empty() => {
                let mut v = samples_us.clone();
                v.sort_by(f64::total_cmp);
                let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
                Some((q(0.25), q(0.75)))
            }
            _ => None,
        }
    }

    /// The failure, if this is one.
    pub fn failure(&self) -> Option<&Failure> {
        match self {
            Outcome::Failure(f) => Some(f),
            Outcome::Measurement { .. } => None,
        }
    }
}

/// How a runner times each candidate: warm-up runs, timed repeats, and a per-candidate limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimingSettings {
    /// Untimed runs before timing.
    pub warmup: u32,
    /// Timed runs (samples per candidate); at least 1.
    pub repeats: u32,
    /// Wall-clock limit for one candidate (build and runs), in milliseconds.
    pub timeout_ms: u64,
}

impl Default for TimingSettings {
    /// AOE's habit: a few warm-ups, ten timed runs; 10 s per candidate.
    fn default() -> Self {
        TimingSettings {
            warmup: 2,
            repeats: 10,
            timeout_ms: 10_000,
        }
    }
}

/// One tuning problem: a resolved op descriptor (op type, shapes, dtypes, formats, attrs, SoC).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TuningTask {
    /// The op.
    pub op: OpDescriptor,
}

impl TuningTask {
    /// The task of tuning `op`.
    pub fn new(op: OpDescriptor) -> Self {
        TuningTask { op }
    }

    /// The op type, ASCII-lowercased (as keys case-fold it).
    pub fn op_type(&self) -> String {
        self.op.op_type.to_ascii_lowercase()
    }

    /// Shape of input `i` as unsigned dims, or an error naming the problem.
    pub fn input_shape(&self, i: usize) -> Result<Vec<u64>, MeasureError> {
        let t = self.op.inputs.get(i).ok_or_else(|| {
            MeasureError::InvalidTask(format!("{} has no input {i}", self.op.op_type))
        })?;
        dims(&t.shape, &self.op.op_type)
    }

    /// Shape of output `i` as unsigned dims.
    #[cfg_attr(not(feature = "cpu"), allow(dead_code))]
    pub(crate) fn output_shape(&self, i: usize) -> Result<Vec<u64>, MeasureError> {
        let t = self.op.outputs.get(i).ok_or_else(|| {
            MeasureError::InvalidTask(format!("{} has no output {i}", self.op.op_type))
        })?;
        dims(&t.shape, &self.op.op_type)
    }

    /// Dtype of input `i` (float16 when there is none).
    pub(crate) fn input_dtype(&self, i: usize) -> DType {
        self.op
            .inputs
            .get(i)
            .map(|t| t.dtype)
            .unwrap_or(DType::Float16)
    }

    /// Dtype of output 0 (the first input's when there is none).
    pub(crate) fn output_dtype(&self) -> DType {
        self.op
            .outputs
            .first()
            .map(|t| t.dtype)
            .unwrap_or_else(|| self.input_dtype(0))
    }

    /// A boolean attribute (false when absent or not a boolean).
    pub(crate) fn attr_bool(&self, name: &str) -> bool {
        matches!(
            self.op.attrs.get(name),
            Some(tunebank_key::AttrValue::Bool(true))
        )
    }

    /// An integer-list attribute, if present.
    pub(crate) fn attr_ints(&self, name: &str) -> Option<Vec<i64>> {
        match self.op.attrs.get(name) {
            Some(tunebank_key::AttrValue::Ints(v)) => Some(v.clone()),
            Some(tunebank_key::AttrValue::Int(i)) => Some(vec![*i]),
            _ => None,
        }
    }

    /// An integer attribute, if present.
    pub(crate) fn attr_int(&self, name: &str) -> Option<i64> {
        match self.op.attrs.get(name) {
            Some(tunebank_key::AttrValue::Int(i)) => Some(*i),
            _ => None,
        }
    }
}

fn dims(shape: &[i64], op: &str) -> Result<Vec<u64>, MeasureError> {
    shape
        .iter()
        .map(|&d| {
            u64::try_from(d)
                .ok()
                .filter(|&d| d > 0)
                .ok_or_else(|| MeasureError::InvalidTask(format!("{op}: shape {shape:?} has a dimension that is not positive (dynamic dims must be resolved first)")))
        })
        .collect()
}

/// A task-level error: the runner could not consider the task at all. Per-candidate problems
/// are [`Failure`]s, never errors.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    /// The runner has no model or kernel for this op (on this target).
    #[error("runner {runner} does not support {what}")]
    Unsupported {
        /// The runner's identity.
        runner: String,
        /// What is unsupported (op type, dtype, SoC …).
        what: String,
    },
    /// The task is malformed (missing inputs, non-positive dims …).
    #[error("invalid tuning task: {0}")]
    InvalidTask(String),
    /// The strategy space could not be built.
    #[error("building the strategy space: {0}")]
    Space(#[from] SpaceError),
    /// An external runner could not be started or kept running, or broke the protocol while
    /// describing the task.
    #[error("external runner {command:?}: {problem}")]
    Runner {
        /// The command line.
        command: String,
        /// What went wrong.
        problem: String,
    },
    /// A size of the task (elements, bytes, work) overflows the runner's arithmetic or exceeds
    /// what it may allocate; the text names the op, its shapes and the size. A runner's
    /// [`Measure::measure`] gives each candidate a [`Failure`] with this text instead of
    /// returning it; `space` and `default_strategy` return it.
    #[error("too large to measure: {0}")]
    TooLarge(String),
    /// A runner specification (`sim`, `cpu`, `exec:COMMAND`) that is not understood.
    #[error("unknown runner {0:?}: expected sim, cpu or exec:COMMAND")]
    UnknownRunner(String),
}

/// A task's strategy space together with the conversions between its configurations and
/// [`StrategyMap`]s.
#[derive(Debug, Clone)]
pub struct TaskSpace {
    /// The enumerated space (parameters, restrictions, valid set).
    pub space: Space,
}

impl TaskSpace {
    /// Enumerates `params` under `restrictions` and `constants` (see [`Space::enumerate`]).
    pub fn enumerate(
        params: Vec<Parameter>,
        restrictions: &[String],
        constants: &HashMap<String, Value>,
    ) -> Result<TaskSpace, SpaceError> {
        Ok(TaskSpace {
            space: Space::enumerate(params, restrictions, constants)?,
        })
    }

    /// Number of valid strategies.
    pub fn len(&self) -> usize {
        self.space.len()
    }

    /// True when no strategy is valid.
    pub fn is_empty(&self) -> bool {
        self.space.is_empty()
    }

    /// The strategy of configuration `id`. Panics if `id` is out of range.
    pub fn strategy(&self, id: ConfigId) -> StrategyMap {
        config_to_strategy(&self.space, self.space.config(id))
    }

    /// The id of the valid configuration equal to `strategy`, or `None` when the map names
    /// other parameters, holds a value not in a parameter's list, or breaks a restriction.
    pub fn config_of(&self, strategy: &StrategyMap) -> Option<ConfigId> {
        let c = strategy_to_config(&self.space, strategy)?;
        self.space.id_of(&c)
    }
}

/// The strategy map of a configuration: each parameter's name and its value as JSON.
pub(crate) fn config_to_strategy(space: &Space, config: &[u16]) -> StrategyMap {
    space
        .params()
        .iter()
        .zip(config)
        .map(|(p, &i)| (p.name.clone(), value_to_json(&p.values[usize::from(i)])))
        .collect()
}

/// The configuration (value indices) a strategy map names, if every parameter of `space` is
/// present with one of its values and the map has no other keys. Restrictions are not checked.
pub(crate) fn strategy_to_config(space: &Space, strategy: &StrategyMap) -> Option<Config> {
    if strategy.len() != space.params().len() {
        return None;
    }
    let mut c = Config::new();
    for p in space.params() {
        let v = strategy.get(&p.name)?;
        let i = p.values.iter().position(|x| value_to_json(x) == *v)?;
        c.push(i as u16);
    }
    Some(c)
}

/// A space value as JSON (integers stay integers).
pub(crate) fn value_to_json(v: &Value) -> serde_json::Value {
    match v {
        Value::Int(i) => serde_json::Value::from(*i),
        Value::Float(f) => serde_json::Value::from(*f),
        Value::Str(s) => serde_json::Value::from(s.clone()),
        Value::Bool(b) => serde_json::Value::from(*b),
    }
}

/// A JSON scalar as a space value (`None` for arrays, objects, null).
pub fn json_to_value(v: &serde_json::Value) -> Option<Value> {
    match v {
        serde_json::Value::Bool(b) => Some(Value::Bool(*b)),
        serde_json::Value::Number(n) => n
            .as_i64()
            .map(Value::Int)
            .or_else(|| n.as_f64().map(Value::Float)),
        serde_json::Value::String(s) => Some(Value::Str(s.clone())),
        _ => None,
    }
}

/// Reads an integer strategy parameter, or explains what is wrong (for `build_fail` reasons).
pub(crate) fn get_int(strategy: &StrategyMap, name: &str) -> Result<i64, String> {
    match strategy.get(name) {
        Some(v) => v
            .as_i64()
            .ok_or_else(|| format!("parameter {name} = {v} is not an integer")),
        None => Err(format!("parameter {name} is missing")),
    }
}

/// Reads a string strategy parameter, or explains what is wrong.
#[cfg_attr(not(feature = "cpu"), allow(dead_code))]
pub(crate) fn get_str<'a>(strategy: &'a StrategyMap, name: &str) -> Result<&'a str, String> {
    match strategy.get(name) {
        Some(v) => v
            .as_str()
            .ok_or_else(|| format!("parameter {name} = {v} is not a string")),
        None => Err(format!("parameter {name} is missing")),
    }
}

/// Something that measures strategies for tuning tasks: a simulator, host kernels, or a real
/// board behind an external process.
///
/// Contract:
/// - [`Measure::space`] lists only strategies the target can build; [`Measure::default_strategy`]
///   is in that space whenever the space is not empty.
/// - [`Measure::measure`] returns exactly one [`Outcome`] per candidate, in order. A candidate
///   that cannot be built or run is a [`Failure`] (never an error, never a panic); `Err` means
///   the task as a whole cannot be measured by this runner.
/// - Successful outcomes hold at least one sample, every sample finite and positive, in µs.
/// - A runner never decides which strategy wins; it only measures.
pub trait Measure {
    /// A stable identity for records' provenance, e.g. `sim:Ascend910B2:v1`.
    fn identity(&self) -> String;

    /// The strategies valid for `task` on this runner's target.
    fn space(&mut self, task: &TuningTask) -> Result<TaskSpace, MeasureError>;

    /// What a compiler picks with no bank: the baseline.
    fn default_strategy(&mut self, task: &TuningTask) -> Result<StrategyMap, MeasureError>;

    /// Measures each candidate; one outcome per candidate, in order.
    fn measure(
        &mut self,
        task: &TuningTask,
        candidates: &[StrategyMap],
    ) -> Result<Vec<Outcome>, MeasureError>;
}

/// Adapts a runner and a task to the search crate's [`Objective`]: each configuration is
/// measured as its strategy map; the objective is the median time in µs, failures are `None`.
/// Every outcome is kept in [`RunnerObjective::outcomes`] by configuration id.
pub struct RunnerObjective<'a> {
    runner: &'a mut dyn Measure,
    task: &'a TuningTask,
    /// Every outcome so far, by configuration id.
    pub outcomes: BTreeMap<ConfigId, Outcome>,
    /// The first task-level error, if one happened (its batch then counts as failures).
    pub error: Option<MeasureError>,
}

impl<'a> RunnerObjective<'a> {
    /// An objective measuring `task` with `runner`.
    pub fn new(runner: &'a mut dyn Measure, task: &'a TuningTask) -> Self {
        RunnerObjective {
            runner,
            task,
            outcomes: BTreeMap::new(),
            error: None,
        }
    }
}

impl Objective for RunnerObjective<'_> {
    fn measure(&mut self, space: &Space, batch: &[ConfigId]) -> Vec<Option<f64>> {
        let strategies: Vec<StrategyMap> = batch
            .iter()
            .map(|&id| config_to_strategy(space, space.config(id)))
            .collect();
        match self.runner.measure(self.task, &strategies) {
            Ok(outs) => batch
                .iter()
                .zip(outs)
                .map(|(&id, o)| {
                    let m = o.median_us();
                    self.outcomes.insert(id, o);
                    m
                })
                .collect(),
            Err(e) => {
                if self.error.is_none() {
                    self.error = Some(e);
                }
                vec![None; batch.len()]
            }
        }
    }
}

impl MeasureError {
    /// Runner errors are the request's: an unknown or unsupported runner, a task or space it
    /// cannot take, an external runner that fails or breaks its protocol.
    pub fn kind(&self) -> FailureKind {
        match self {
            MeasureError::Unsupported { .. }
            | MeasureError::InvalidTask(_)
            | MeasureError::Space(_)
            | MeasureError::Runner { .. }
            | MeasureError::TooLarge(_)
            | MeasureError::UnknownRunner(_) => FailureKind::Input,
        }
    }
}
