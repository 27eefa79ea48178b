//! The job API: one front door for every AOE job — tune a model with OPAT, SGAT or GDAT, or
//! resolve it as a converter does.
//!
//! A [`JobSpec`] holds what the caller gives explicitly: the ATC-style options
//! (`--model=… --soc_version=… --job_type=…`), the runner, strategy and budgets, the bank files,
//! the output directory, aoe.ini. [`JobSpec::resolve`] fills in the rest by AOE's documented
//! precedence — an explicit value, else the [`Environment`] (`AOE_MODE`, `REPEAT_TUNE`,
//! `TUNING_PARALLEL_NUM`, `TE_PARALLEL_COMPILER`, `ASCEND_WORK_PATH`, the bank path
//! variables), else aoe.ini (`WORK_PATH`, `TUNING_PARALLEL_NUM`, `RUN_LOOP`), else the default —
//! validates everything that can be bad input (each error names the input and what was
//! expected: [`JobError`]), loads the model and plans it. Nothing is written before
//! [`Job::run`].
//!
//! - [`Job::plan`] (OPAT) is the set of units a converter compiles: the graph bank applied when
//!   one exists (AOE's order: SGAT, then OPAT, then ATC), then `--tune_ops_file` applied.
//!   [`JobSpec::conversion`] is the same plan without the tuning settings, for `convert` and
//!   every key listing ([`Conversion`]).
//! - [`Job::run`] runs the job's driver ([`crate::tune::opat::run`], [`crate::tune::sgat::run_sgat`],
//!   `crate::tune::gdat::run_job`), tells an [`Observer`] of its progress and returns a
//!   [`JobReport`] (`Serialize` for programs, `Display` for people) after writing AOE's result
//!   file.
//!
//! The CLI, the Python package, the queue's submission and the C ABI all come in here, so they
//! cannot disagree about a model's units or keys.

mod conversion;
mod env;
pub(crate) mod ini;
mod ops_file;
mod run;
mod shape_samples;
mod spec;

use std::path::{Path, PathBuf};

pub use conversion::{Conversion, GraphApplied, UnitKey};
pub(crate) use ini::AoeIni;
pub use run::{Finished, JobOutcome, JobReport, Observer, Started};
pub use spec::options_of;
pub use spec::{op_keys, GradientSpec, JobSpec, WorkerCap};
pub use tunebank_key::Environment;

use crate::tune::gdat::{GdatError, GdatPlan};
use crate::tune::sgat::{SgatError, SgatPlan};
use crate::tune::{TuneError, TunePlan, TuneSettings};
use tunebank_bank::{Access, Bank, BankError, BankRequest};
use tunebank_failure::{io_kind, FailureKind};
use tunebank_key::{OptionError, RecordKind, ResolveError, ResolvedOptions, SocSpec};
use tunebank_model::ModelError;

/// Why a job could not be set up or run. Bad input names the input and what was expected;
/// nothing is written before a job runs, so an input error leaves every bank and file as it was.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// A flag, option, environment variable or aoe.ini value is not what a job takes.
    #[error("{input}: expected {expected}")]
    Invalid {
        /// The input: the flag, variable or file and the value given.
        input: String,
        /// What it must be.
        expected: String,
    },
    /// The input is well-formed but names something tunebank does not do.
    #[error("{input}: {reason}")]
    Unsupported {
        /// The input.
        input: String,
        /// Why it is not supported, and what is.
        reason: String,
    },
    /// A file the job names could not be read (or the result directory not created).
    #[error("{input}: cannot read {what}")]
    Read {
        /// The input that names the file.
        input: String,
        /// What the file should hold.
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The result directory could not be created.
    #[error("cannot create the result directory {}", path.display())]
    ResultDir {
        /// The directory.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The result file could not be written.
    #[error("writing {}", path.display())]
    ResultFile {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// An ATC option is not valid.
    #[error(transparent)]
    Options(#[from] OptionError),
    /// An op could not be resolved into a key.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// The model could not be imported.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// A bank could not be opened or failed.
    #[error(transparent)]
    Bank(#[from] BankError),
    /// The OPAT driver failed.
    #[error(transparent)]
    Tune(#[from] TuneError),
    /// The SGAT driver (or the graph bank applied before OPAT) failed.
    #[error(transparent)]
    Sgat(#[from] SgatError),
    /// The GDAT driver failed.
    #[error(transparent)]
    Gdat(#[from] GdatError),
    /// A conversion's look-up failed.
    #[error(transparent)]
    Inspect(#[from] crate::inspect::InspectError),
    /// The queue refused the job or could not be reached.
    #[error(transparent)]
    Queue(#[from] crate::queue::QueueError),
}

impl JobError {
    /// An [`JobError::Invalid`].
    pub(crate) fn invalid(input: impl Into<String>, expected: impl Into<String>) -> JobError {
        JobError::Invalid {
            input: input.into(),
            expected: expected.into(),
        }
    }

    /// What kind of failure this is: bad input for the job's own checks, the operating
    /// system's for files it could not read or write, and the wrapped error's kind otherwise.
    pub fn kind(&self) -> FailureKind {
        match self {
            JobError::Invalid { .. } | JobError::Unsupported { .. } => FailureKind::Input,
            JobError::Read { source, .. } => io_kind(source),
            JobError::ResultDir { source, .. } | JobError::ResultFile { source, .. } => {
                io_kind(source)
            }
            JobError::Options(e) => e.kind(),
            JobError::Resolve(e) => e.kind(),
            JobError::Model(e) => e.kind(),
            JobError::Bank(e) => e.kind(),
            JobError::Tune(e) => e.kind(),
            JobError::Sgat(e) => e.kind(),
            JobError::Gdat(e) => e.kind(),
            JobError::Inspect(e) => e.kind(),
            JobError::Queue(e) => e.kind(),
        }
    }
}

/// The three AOE job types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum JobType {
    /// 1: subgraph tuning (SGAT).
    Subgraph,
    /// 2: operator tuning (OPAT), the default.
    Op,
    /// 4: gradient-split tuning (GDAT).
    Gradient,
}

impl JobType {
    /// AOE's code: 1, 2 or 4.
    pub fn code(self) -> u32 {
        match self {
            JobType::Subgraph => 1,
            JobType::Op => 2,
            JobType::Gradient => 4,
        }
    }

    /// The job type of AOE's code `value` (`1`, `2`, `4`; `subgraph`, `op`, `gradient` too),
    /// read from input `from` (named in the error).
    pub fn parse(from: &str, value: &str) -> Result<JobType, JobError> {
        match value.trim() {
            "1" | "subgraph" => Ok(JobType::Subgraph),
            "2" | "op" => Ok(JobType::Op),
            "4" | "gradient" => Ok(JobType::Gradient),
            _ => Err(JobError::invalid(
                format!("{from}={value}"),
                "1 (subgraph tuning, SGAT), 2 (operator tuning, OPAT) or 4 (gradient tuning, GDAT); --job-type also takes subgraph, op or gradient",
            )),
        }
    }

    /// The bank kind the job writes.
    pub(crate) fn record_kind(self) -> RecordKind {
        match self {
            JobType::Subgraph => RecordKind::Graph,
            JobType::Op => RecordKind::Op,
            JobType::Gradient => RecordKind::Gradient,
        }
    }
}

/// Rewrites `--job-type op|subgraph|gradient` (either spelling, `=` or a separate value) into
/// AOE's `--job_type=2|1|4`; every other argument is kept as it is.
pub fn normalise_job_type(atc: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(atc.len());
    let mut it = atc.iter();
    while let Some(a) = it.next() {
        let Some(body) = a.strip_prefix("--") else {
            out.push(a.clone());
            continue;
        };
        let (name, value) = match body.split_once('=') {
            Some((n, v)) => (n.replace('-', "_"), Some(v.to_owned())),
            None => (body.replace('-', "_"), None),
        };
        if name != "job_type" {
            out.push(a.clone());
            continue;
        }
        let value = value.or_else(|| it.next().cloned()).unwrap_or_default();
        let mapped = match value.as_str() {
            "op" => "2",
            "subgraph" => "1",
            "gradient" => "4",
            v => v,
        };
        out.push(format!("--job_type={mapped}"));
    }
    out
}

/// The job type of `atc` (after `--job-type` spellings are normalised): `--job_type`, else `AOE_MODE`, else
/// operator tuning. `AOE_MODE` is checked even when `--job_type` overrides it.
pub(crate) fn job_type(atc: &[String], env: &Environment) -> Result<JobType, JobError> {
    let from_env = match env.text(tunebank_key::Var::AoeMode) {
        Some(m) => Some(JobType::parse("AOE_MODE", &m)?),
        None => None,
    };
    match atc.iter().rev().find_map(|a| a.strip_prefix("--job_type=")) {
        Some(j) => JobType::parse("--job_type", j),
        None => Ok(from_env.unwrap_or(JobType::Op)),
    }
}

/// Where a job's result file goes.
#[derive(Clone, Debug, PartialEq, Eq)]
enum OutputDir {
    Given(PathBuf),
    WorkingDirectory,
}

/// What a job tunes.
#[derive(Debug)]
enum JobPlan {
    Op {
        plan: TunePlan,
        graph: Option<GraphApplied>,
    },
    Subgraph(SgatPlan),
    Gradient(Box<GdatPlan>),
}

/// A job validated and planned ([`JobSpec::resolve`]); [`Job::run`] runs it.
#[derive(Debug)]
pub struct Job {
    job_type: JobType,
    name: String,
    options: ResolvedOptions,
    soc: SocSpec,
    model_path: String,
    settings: TuneSettings,
    workers: WorkerCap,
    output_dir: OutputDir,
    ini: Option<PathBuf>,
    spec: JobSpec,
    env: Environment,
    platform: tunebank_key::platform::PlatformSearch,
    plan: JobPlan,
}

impl Job {
    /// The job type.
    pub fn job_type(&self) -> JobType {
        self.job_type
    }

    /// The job's name in its result file (the model file's stem).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `--model` as given.
    pub fn model_path(&self) -> &str {
        &self.model_path
    }

    /// The SoC of `--soc_version`.
    pub fn soc(&self) -> &SocSpec {
        &self.soc
    }

    /// The resolved ATC options.
    pub fn options(&self) -> &ResolvedOptions {
        &self.options
    }

    /// How the job tunes (workers already capped).
    pub fn settings(&self) -> &TuneSettings {
        &self.settings
    }

    /// The workers, and whether memory capped them.
    pub fn workers(&self) -> WorkerCap {
        self.workers
    }

    /// The aoe.ini read, if any.
    pub fn config_file(&self) -> Option<&Path> {
        self.ini.as_deref()
    }

    /// Which SoC description file the simulator's figures of the job's SoC come from (the
    /// job's `--platform-config`, the installed toolkit's, or the built-in copy), or why it
    /// cannot be used.
    pub fn platform_source(
        &self,
    ) -> Result<tunebank_key::platform::PlatformSource, tunebank_key::platform::PlatformError> {
        self.platform
            .resolve(&self.soc.version)
            .map(|p| p.source.clone())
    }

    /// OPAT: the units and tasks, exactly as a conversion resolves them (graph bank applied)
    /// with `--tune_ops_file` applied. `None` for SGAT and GDAT.
    pub fn plan(&self) -> Option<&TunePlan> {
        match &self.plan {
            JobPlan::Op { plan, .. } => Some(plan),
            _ => None,
        }
    }

    /// OPAT: what the graph bank applied first made of the model, when there was one.
    pub fn graph_applied(&self) -> Option<&GraphApplied> {
        match &self.plan {
            JobPlan::Op { graph, .. } => graph.as_ref(),
            _ => None,
        }
    }

    /// SGAT: the subgraphs and their tasks.
    pub fn sgat_plan(&self) -> Option<&SgatPlan> {
        match &self.plan {
            JobPlan::Subgraph(p) => Some(p),
            _ => None,
        }
    }

    /// GDAT: the gradients, the cluster and the key.
    pub fn gdat_plan(&self) -> Option<&GdatPlan> {
        match &self.plan {
            JobPlan::Gradient(p) => Some(p),
            _ => None,
        }
    }

    /// The ops the plan leaves out (the runner or the resolver cannot handle them), with why.
    pub fn skipped(&self) -> &[tunebank_model::SkippedOp] {
        match &self.plan {
            JobPlan::Op { plan, .. } => &plan.skipped,
            JobPlan::Subgraph(p) => &p.skipped,
            JobPlan::Gradient(_) => &[],
        }
    }

    /// The directory of the result file (not created yet).
    pub fn output_dir(&self) -> Result<PathBuf, JobError> {
        match &self.output_dir {
            OutputDir::Given(d) => Ok(d.clone()),
            OutputDir::WorkingDirectory => {
                std::env::current_dir().map_err(|source| JobError::ResultDir {
                    path: PathBuf::from("."),
                    source,
                })
            }
        }
    }

    /// The directory of the result file, created if needed.
    pub fn create_output_dir(&self) -> Result<PathBuf, JobError> {
        let dir = self.output_dir()?;
        std::fs::create_dir_all(&dir).map_err(|source| JobError::ResultDir {
            path: dir.clone(),
            source,
        })?;
        Ok(dir)
    }

    /// OPAT: submits the job to the tuning queue `client` is connected to, as a local run
    /// would start it: every task looked up in the job's bank (hits reused), the rest queued
    /// with the related records of the misses ([`crate::queue::enqueue`]). Other job types are
    /// not queued.
    pub fn enqueue(
        &self,
        client: &mut crate::queue::Client,
    ) -> Result<crate::queue::Enqueued, JobError> {
        let JobPlan::Op { plan, .. } = &self.plan else {
            return Err(JobError::Unsupported {
                input: "--queue".into(),
                reason: "only operator tuning (--job_type=2) is queued".into(),
            });
        };
        let bank = self.open_bank()?;
        let submission = crate::queue::Submission {
            tuning_name: &self.name,
            model: &self.model_path,
            plan,
            settings: &self.settings,
        };
        Ok(crate::queue::enqueue(client, &bank, &submission)?)
    }

    /// After a queued OPAT job over a shape range has settled (every task done on some
    /// worker): writes its range records (`tune::range_record`) to the job's bank, as a local
    /// range job does at its end; returns how many. 0, and nothing opened, for a job that is
    /// not over a range.
    pub fn write_range_records(&self) -> Result<usize, JobError> {
        let JobPlan::Op { plan, .. } = &self.plan else {
            return Ok(0);
        };
        if !plan.ranged {
            return Ok(0);
        }
        let bank = self.open_bank()?;
        // No measurements here: the board is the workers'; the stored transfers are kept.
        Ok(crate::tune::range_record::write_range_records(plan, &bank, None, &|| false)?.0)
    }

    /// The bank the job writes, opened for writing (created if needed): the custom bank of
    /// the job's kind (SGAT: `graph_bank`, else `bank`).
    pub fn open_bank(&self) -> Result<Bank, JobError> {
        let explicit = match self.job_type {
            JobType::Subgraph => self.spec.graph_bank.as_ref().or(self.spec.bank.as_ref()),
            _ => self.spec.bank.as_ref(),
        };
        let request = BankRequest {
            custom: explicit.cloned().into(),
            access: Access::Writable,
            ..BankRequest::new(self.job_type.record_kind(), &self.soc.version)
        };
        Ok(Bank::open(&self.env, &request)?)
    }
}
