//! What the caller gives a job ([`JobSpec`]) and its resolution into a [`Job`]: AOE's
//! precedence (explicit, environment, aoe.ini, default), the checks, the plan, the worker cap.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::tune::gdat::{self, Cluster};
use crate::tune::sgat::sgat_plan;
use crate::tune::{self, memory, TuneSettings};
use tunebank_key::platform::{self, PlatformSearch};
use tunebank_key::{
    derive_op_keys, Environment, FsReader, OpTemplate, ResolvedOp, ResolvedOptions, SocSpec, Var,
};
use tunebank_measure::{RunnerSpec, TimingSettings};
use tunebank_model::{Framework, ModelFiles};

use super::conversion::{open_op_bank, plan_units, Conversion};
use super::{
    env, ini, job_type, normalise_job_type, ops_file, AoeIni, Job, JobError, JobPlan, JobType,
    OutputDir,
};

/// A gradient job's cluster (GDAT only).
#[derive(Clone, Debug, PartialEq)]
pub struct GradientSpec {
    /// Devices in the data-parallel job (required for GDAT, at least 2).
    pub rank_size: Option<u32>,
    /// Devices per server.
    pub devices_per_server: u32,
    /// JSON file overriding the cluster model's links.
    pub cluster: Option<PathBuf>,
    /// At most this many segments (1 to 8).
    pub max_segments: usize,
}

impl Default for GradientSpec {
    fn default() -> Self {
        GradientSpec {
            rank_size: None,
            devices_per_server: 8,
            cluster: None,
            max_segments: 8,
        }
    }
}

/// What the caller gives a job explicitly; every `None` is left to the environment, aoe.ini
/// and the defaults ([`JobSpec::resolve`]). [`JobSpec::new`] takes the defaults of
/// `tunebank tune`.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    /// ATC-style options: `--model=m.onnx --soc_version=Ascend910B2 --job_type=2 …`
    /// (`--job-type op|subgraph|gradient` too).
    pub atc: Vec<String>,
    /// The job type; `None`: `--job_type` of `JobSpec::atc`, else `AOE_MODE`, else OPAT.
    pub job_type: Option<JobType>,
    /// The runner, parsed by the front end (`sim`, `sim:SEED`, `cpu` or `exec:COMMAND`:
    /// [`RunnerSpec::parse`]). SGAT runs on `sim`; GDAT on its cluster model (`sim`, `sim:SEED`
    /// with seeded noise) or an external runner (`exec:`).
    pub runner: RunnerSpec,
    /// Search strategy name.
    pub strategy: String,
    /// Candidates measured per op (subgraph, job) at most.
    pub budget: usize,
    /// `--budget auto` (OPAT): an op's search may stop before `budget` (then the cap) when the
    /// strategy's model expects less than 1 % from one more measurement, three rounds in a
    /// row after at least 20 ([`search_strategies::StopRule::default`]). Strategies without a
    /// model (`random`, `genetic`, `annealing`, `aoe-ga`) run to the cap.
    pub auto_stop: bool,
    /// Search time per op at most.
    pub time_budget: Option<Duration>,
    /// Candidates measured over the whole job at most.
    pub total_budget: Option<u64>,
    /// Time of the whole job at most.
    pub total_time: Option<Duration>,
    /// Seed of the searches.
    pub seed: u64,
    /// A miss's search starts from the winners of related bank records.
    pub transfer: bool,
    /// `--range-shapes`: a range in `--input_shape` is tuned at this many shapes at most (its
    /// ends and powers of two, thinned geometrically; `None`: all of them, at most 100).
    pub range_shapes: Option<usize>,
    /// `--shape-samples`: shapes seen in service (a file, `job/shape_samples.rs`); a range is
    /// tuned at the ones that serve the others best (at most `range_shapes`).
    pub shape_samples: Option<PathBuf>,
    /// Measurement slots (`--tuning_parallel_num`); `None`: `TUNING_PARALLEL_NUM`, else
    /// aoe.ini's, else the cores (at most 8). Either way capped by available memory. OPAT tunes
    /// up to this many ops at once and deals the slots out among them as batch widths unless
    /// `TE_PARALLEL_COMPILER` fixes the width (`TuneSettings::round_width`).
    pub workers: Option<usize>,
    /// `REPEAT_TUNE`; `None`: the environment's.
    pub repeat_tune: Option<bool>,
    /// The custom bank file of the job's kind (SGAT: the graph bank written, unless
    /// [`JobSpec::graph_bank`] names it); `None`: AOE's path rules.
    pub bank: Option<PathBuf>,
    /// OPAT and conversion: the graph bank applied first (must exist); SGAT: the graph bank
    /// written. `None`: AOE's resolution of the custom graph bank plus the built-in one.
    pub graph_bank: Option<PathBuf>,
    /// SGAT and GDAT: the op bank read for node strategies; `None`: the custom op bank AOE's
    /// path rules name, when it exists. (The CLI passes `--bank` here when `--graph-bank` is
    /// given for SGAT.)
    pub op_bank: Option<PathBuf>,
    /// Extra read-only built-in op banks a conversion consults after the custom bank.
    pub builtin_banks: Vec<PathBuf>,
    /// Directory of the result file; `None`: `ASCEND_WORK_PATH`, else aoe.ini's `WORK_PATH`,
    /// else the working directory.
    pub output_dir: Option<PathBuf>,
    /// aoe.ini; `None`: the first of `ini::locations` that exists.
    pub config: Option<PathBuf>,
    /// The simulator's SoC description file (CANN's `platform_config/<SoC>.ini`), or a folder
    /// of such files (`--platform-config`); `None`, or a folder without the SoC's file: the
    /// installed toolkit's under the environment's toolkit roots (AOE's order, as for
    /// aoe.ini), else the copy of CANN 8.1's built in ([`PlatformSearch`]).
    pub platform_config: Option<PathBuf>,
    /// GDAT's cluster.
    pub gradient: GradientSpec,
}

impl JobSpec {
    /// A job of the ATC-style options `atc`, with `tunebank tune`'s defaults: runner `sim`,
    /// strategy `ensemble`, budget 64, seed 1, transfer on, everything else left to the
    /// environment and aoe.ini.
    pub fn new<I, S>(atc: I) -> JobSpec
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        JobSpec {
            atc: atc.into_iter().map(Into::into).collect(),
            job_type: None,
            runner: RunnerSpec::default(),
            strategy: "ensemble".into(),
            budget: 64,
            auto_stop: false,
            time_budget: None,
            total_budget: None,
            total_time: None,
            seed: 1,
            transfer: true,
            range_shapes: None,
            shape_samples: None,
            workers: None,
            repeat_tune: None,
            bank: None,
            graph_bank: None,
            op_bank: None,
            builtin_banks: Vec::new(),
            output_dir: None,
            config: None,
            platform_config: None,
            gradient: GradientSpec::default(),
        }
    }

    /// The ATC options with `--job-type` spellings normalised, and ATC's framework default
    /// of `--input_format` (NHWC for TensorFlow) added when it is not given.
    fn atc(&self) -> Vec<String> {
        let mut atc = normalise_job_type(&self.atc);
        let value = |name: &str| {
            atc.iter()
                .rev()
                .find_map(|a| a.strip_prefix(name)?.strip_prefix('=').map(str::to_owned))
        };
        let framework = value("--framework")
            .and_then(|f| Framework::from_code(&f))
            .or_else(|| value("--model").and_then(|m| Framework::of_file(Path::new(&m))))
            .or_else(|| value("--model_path").and_then(|d| folder_framework(Path::new(&d))));
        if let (Some(f), None) = (framework, value("--input_format")) {
            if f.default_input_format() != "NCHW" {
                atc.push(format!("--input_format={}", f.default_input_format()));
            }
        }
        atc
    }

    /// The job type: [`JobSpec::job_type`], else `job_type` of the options and `env`.
    pub fn job_type(&self, env: &Environment) -> Result<JobType, JobError> {
        let from_args = job_type(&self.atc(), env)?;
        Ok(self.job_type.unwrap_or(from_args))
    }

    /// The converter's view of the model: options, model, the graph bank applied when one
    /// exists. Reads neither aoe.ini nor the tuning variables: what `convert` and the key
    /// listings resolve.
    pub fn conversion(&self, env: &Environment) -> Result<Conversion, JobError> {
        let (options, soc) = options_of(&self.atc())?;
        let model_path = model_path(&options)?;
        let model = ModelFiles::from_options(&options)?.load()?;
        let (plan, graph) = plan_units(self, env, &model, &options, &soc, None)?;
        Ok(Conversion {
            options,
            soc,
            model_path,
            plan,
            graph,
            bank: self.bank.clone(),
            builtin_banks: self.builtin_banks.clone(),
            env: env.clone(),
        })
    }

    /// Validates the job (job type, options, aoe.ini, environment, settings, model) in the
    /// order AOE users meet the errors, loads and plans the model, and caps the workers by
    /// available memory. Writes nothing.
    pub fn resolve(&self, env: &Environment) -> Result<Job, JobError> {
        let job_type = self.job_type(env)?;
        let (mut options, soc) = options_of(&self.atc())?;
        self.choose_range_shapes(&mut options)?;
        let platform = self.select_platform(&soc.version, env)?;
        let files = ModelFiles::from_options(&options)?;
        let ini = ini::find(self.config.as_deref(), env)?;
        let mut settings = self.settings(job_type, env, &options, ini.as_ref())?;
        match job_type {
            JobType::Op | JobType::Subgraph => {
                tune::check_settings(&settings)?;
                tune::check_soc(&settings, &soc.version)?;
            }
            JobType::Gradient => {}
        }
        check_runner(job_type, &settings.runner)?;
        let model_path = model_path(&options)?;
        let requested = self.requested_workers(env, ini.as_ref())?;
        let per_worker = worker_memory_bytes(&settings.runner, env)?;
        let ops_file = match job_type {
            JobType::Op => options
                .given()
                .get("tune_ops_file")
                .filter(|f| !f.is_empty())
                .cloned(),
            _ => None,
        };
        let only = ops_file.as_deref().map(ops_file::read).transpose()?;
        let cluster = match job_type {
            JobType::Gradient => Some(self.cluster(&soc)?),
            _ => None,
        };
        let model = files.load()?;
        let plan = match job_type {
            JobType::Op => {
                let (plan, graph) = plan_units(self, env, &model, &options, &soc, only.as_ref())?;
                if let Some(f) = &ops_file {
                    if plan.units.is_empty() {
                        return Err(JobError::invalid(
                            format!("--tune_ops_file {f}: selects no op of {model_path}"),
                            "names and types of the model's ops, as ONNX or Ascend IR spellings, e.g. Conv or Conv2D",
                        ));
                    }
                }
                JobPlan::Op { plan, graph }
            }
            JobType::Subgraph => JobPlan::Subgraph(sgat_plan(&model, &options, &soc)?),
            JobType::Gradient => {
                let op_bank = open_op_bank(&soc.version, self.op_bank.as_deref(), env)?;
                let cluster = cluster.expect("set for gradient jobs");
                let plan = gdat::plan_job(
                    &model,
                    &options,
                    &soc,
                    cluster,
                    self.gradient.max_segments,
                    op_bank.as_ref(),
                )?;
                settings
                    .options_given
                    .insert("rank_size".into(), plan.cluster.rank_size.to_string());
                settings.options_given.insert(
                    "devices_per_server".into(),
                    plan.cluster.devices_per_server.to_string(),
                );
                JobPlan::Gradient(Box::new(plan))
            }
        };
        let workers = match job_type {
            // OPAT's threads each hold a runner; SGAT's one thread measures this many at once.
            JobType::Op | JobType::Subgraph => {
                WorkerCap::new(requested, per_worker, memory::available_memory())
            }
            // GDAT's model measures one cut at a time.
            JobType::Gradient => WorkerCap::new(1, per_worker, None),
        };
        settings.workers = workers.workers;
        let output_dir = match (&self.output_dir, env.path(Var::AscendWorkPath), &ini) {
            (Some(d), _, _) => OutputDir::Given(d.clone()),
            (None, Some(w), _) => OutputDir::Given(w.to_path_buf()),
            (
                None,
                None,
                Some(AoeIni {
                    work_path: Some(w), ..
                }),
            ) => OutputDir::Given(w.clone()),
            _ => OutputDir::WorkingDirectory,
        };
        Ok(Job {
            job_type,
            name: tuning_name(&model_path),
            options,
            soc,
            model_path,
            settings,
            workers,
            output_dir,
            ini: ini.map(|i| i.path),
            spec: self.clone(),
            env: env.clone(),
            platform,
            plan,
        })
    }

    /// The search for the SoC's description file under [`JobSpec::platform_config`] and
    /// `env`, and what it finds for `soc` made what the simulator uses ([`platform::select`])
    /// before anything models the SoC. A file that cannot be used is reported where the
    /// simulator is asked for the SoC (the runner's SoC check), as an unmodelled SoC; other
    /// facts already in this process's simulator are [`JobError::Unsupported`].
    fn select_platform(&self, soc: &str, env: &Environment) -> Result<PlatformSearch, JobError> {
        let search = PlatformSearch::new(self.platform_config.as_deref(), env);
        platform::select(soc, &search).map_err(|conflict| JobError::Unsupported {
            input: match &self.platform_config {
                Some(p) => format!("--platform-config {}", p.display()),
                None => format!("the SoC description file of {soc}"),
            },
            reason: conflict.to_string(),
        })?;
        Ok(search)
    }

    /// The settings from the spec, the environment and aoe.ini (one worker; [`WorkerCap`]
    /// sets the rest). aoe.ini's `RUN_LOOP` is the runner's timed repeats per measurement.
    fn settings(
        &self,
        job_type: JobType,
        env: &Environment,
        options: &ResolvedOptions,
        ini: Option<&AoeIni>,
    ) -> Result<TuneSettings, JobError> {
        let repeat_tune = match self.repeat_tune {
            Some(r) => r,
            None => env::repeat_tune(env)?,
        };
        let mut timing = TimingSettings::default();
        if let Some(r) = ini.and_then(|i| i.run_loop) {
            timing.repeats = r;
        }
        let batch = env::positive(env, Var::TeParallelCompiler)?;
        env::check_device_id(env)?;
        if self.budget == 0 {
            let per = match job_type {
                JobType::Op => "per op",
                JobType::Subgraph => "per subgraph",
                JobType::Gradient => "for the job",
            };
            return Err(JobError::invalid(
                "--budget 0",
                format!("at least one candidate {per}"),
            ));
        }
        for (flag, d) in [
            ("--time-budget-s", self.time_budget),
            ("--total-time-s", self.total_time),
        ] {
            if d.is_some_and(|d| d.is_zero()) {
                return Err(JobError::invalid(
                    format!("{flag} 0"),
                    "a positive number of seconds",
                ));
            }
        }
        Ok(TuneSettings {
            runner: self.runner.clone(),
            strategy: self.strategy.clone(),
            seed: self.seed,
            trials_per_op: self.budget,
            auto_stop: self.auto_stop,
            time_per_op: self.time_budget,
            total_trials: self.total_budget,
            total_time: self.total_time,
            repeat_tune,
            workers: 1,
            batch,
            options_given: options.given().clone(),
            timing,
            transfer: self.transfer,
            ..TuneSettings::default()
        })
    }

    /// The workers asked for: the spec's, else `TUNING_PARALLEL_NUM` of the environment, else
    /// of aoe.ini, else the cores (at most 8).
    fn requested_workers(
        &self,
        env: &Environment,
        ini: Option<&AoeIni>,
    ) -> Result<usize, JobError> {
        if let Some(0) = self.workers {
            return Err(JobError::invalid("workers 0", "at least 1"));
        }
        let from_env = env::positive(env, Var::TuningParallelNum)?;
        Ok(
            match (self.workers, from_env, ini.and_then(|i| i.parallel)) {
                (Some(n), _, _) | (None, Some(n), _) | (None, None, Some(n)) => n,
                (None, None, None) => std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(1)
                    .min(8),
            },
        )
    }

    /// `--range-shapes` and `--shape-samples` applied to the ranges of `options`.
    fn choose_range_shapes(&self, options: &mut ResolvedOptions) -> Result<(), JobError> {
        if self.range_shapes.is_none() && self.shape_samples.is_none() {
            return Ok(());
        }
        let samples = match &self.shape_samples {
            Some(p) => Some(super::shape_samples::read(&p.display().to_string())?),
            None => None,
        };
        options.choose_range_shapes(self.range_shapes, samples.as_deref())?;
        Ok(())
    }

    /// GDAT's cluster for `soc`.
    fn cluster(&self, soc: &SocSpec) -> Result<Cluster, JobError> {
        let g = &self.gradient;
        let Some(rank_size) = g.rank_size else {
            return Err(JobError::invalid(
                "--rank_size",
                "the number of devices of the data-parallel job GDAT tunes for, e.g. --rank_size 16",
            ));
        };
        Ok(Cluster::from_flags(
            &soc.version,
            rank_size,
            g.devices_per_server,
            g.cluster.as_deref(),
        )?)
    }
}

/// The resolved options of `atc` and the SoC they name (`--soc_version` is required): what
/// every op of a conversion is resolved under.
pub fn options_of(atc: &[String]) -> Result<(ResolvedOptions, SocSpec), JobError> {
    let options = ResolvedOptions::from_args(atc, &FsReader)?;
    let soc = options.soc()?;
    Ok((options, soc))
}

/// The keys of one op template under ATC options given as `(name, value)` pairs, one per
/// dynamic profile: what the C ABI and `tunebank key` derive.
pub fn op_keys(
    template: &OpTemplate,
    options: &ResolvedOptions,
) -> Result<Vec<ResolvedOp>, JobError> {
    let soc = options.soc()?;
    Ok(derive_op_keys(template, options, &soc)?)
}

/// The one framework of a `--model_path` folder's model files, when they share one.
fn folder_framework(dir: &Path) -> Option<Framework> {
    let mut kinds = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| Framework::of_file(&e.ok()?.path()));
    let first = kinds.next()?;
    kinds.all(|k| k == first).then_some(first)
}

/// `--model` (or `--singleop`, `--model_path`) as given; a job needs one.
fn model_path(options: &ResolvedOptions) -> Result<String, JobError> {
    let given = options.given();
    given
        .get("model")
        .filter(|m| !m.is_empty())
        .or_else(|| given.get("singleop"))
        .or_else(|| given.get("model_path"))
        .cloned()
        .filter(|m| !m.is_empty())
        .ok_or_else(|| {
            JobError::invalid(
                "--model",
                "the model to tune: an .onnx file, a Caffe .prototxt (with --weight=….caffemodel), a TensorFlow .pb or a MindSpore .mindir, e.g. --model=resnet50.onnx (or --singleop=ops.json, ATC's single-operator description)",
            )
        })
}

/// The job's name in its result file: the model file's stem.
pub(crate) fn tuning_name(model_path: &str) -> String {
    Path::new(model_path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into())
}

/// The runners a job type runs on: SGAT on the simulator (`sim`, `sim:SEED`), GDAT on its
/// cluster model (`sim`, `sim:SEED`) or an external runner (`exec:`), which it gives the
/// gradient split to measure; anything else is [`JobError::Unsupported`] naming the runner.
fn check_runner(job_type: JobType, runner: &RunnerSpec) -> Result<(), JobError> {
    let refused = match (job_type, runner) {
        (JobType::Subgraph, r) if !r.is_simulator() => {
            "subgraph tuning (--job_type=1) runs on the simulator (--runner sim)"
        }
        (JobType::Gradient, RunnerSpec::Cpu) => {
            "gradient tuning (--job_type=4) runs on the cluster model (--runner sim or sim:SEED) or an external runner (--runner exec:COMMAND)"
        }
        _ => return Ok(()),
    };
    Err(JobError::Unsupported {
        input: format!("--runner {runner}"),
        reason: refused.into(),
    })
}

/// Per-worker memory estimate by runner: a simulator is small; host kernels and device
/// compilations are not. `TUNEBANK_WORKER_MEMORY_MB` overrides it.
fn worker_memory_bytes(runner: &RunnerSpec, env: &Environment) -> Result<u64, JobError> {
    if let Some(mb) = env::positive(env, Var::WorkerMemoryMb)? {
        return Ok(mb as u64 * (1 << 20));
    }
    Ok(runner.worker_memory_bytes())
}

/// The workers a job runs with: the request, capped by available memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkerCap {
    /// Workers asked for.
    pub requested: usize,
    /// Workers the job runs with.
    pub workers: usize,
    /// Memory estimate per worker, bytes.
    pub per_worker: u64,
    /// Available memory when the cap applied, bytes (`None`: not capped).
    pub available: Option<u64>,
}

impl WorkerCap {
    fn new(requested: usize, per_worker: u64, available: Option<memory::MemoryAvailable>) -> Self {
        let (workers, capped) = memory::cap_workers(requested, per_worker, available);
        WorkerCap {
            requested,
            workers,
            per_worker,
            available: capped.then(|| available.map_or(0, |a| a.bytes)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tunebank_key::platform::PlatformSource;
    use tunebank_measure::sim::SocModel;

    /// CANN 8.1's description of the Ascend910B1 (cube clock 1850 MHz).
    const B1: &str = include_str!("../../../key/src/platform/cann81/Ascend910B1.ini");

    /// An OPAT job of the BERT layer fixture on `soc`, results in `out`.
    fn spec(soc: &str, out: &Path, platform_config: Option<&Path>) -> JobSpec {
        let model =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/models/bert_layer.onnx");
        let mut spec = JobSpec::new([
            format!("--model={}", model.display()),
            format!("--soc_version={soc}"),
        ]);
        spec.output_dir = Some(out.to_path_buf());
        spec.platform_config = platform_config.map(Path::to_path_buf);
        spec
    }

    /// `JobSpec::platform_config` is the job's: the job names the file, and the simulator
    /// models the SoC from it (half the clock, half the GHz); the same file again is fine,
    /// another file or the built-in copy for the SoC in the same process is refused, naming
    /// the flag and both origins.
    #[test]
    fn platform_config_reaches_the_simulator_through_the_job() {
        const SOC: &str = "Ascend910B1";
        let d = tempfile::tempdir().unwrap();
        let env = Environment::empty().with("HOME", d.path());
        assert!(B1.contains("cube_freq=1850"));
        let slow = d.path().join("slow.ini");
        std::fs::write(&slow, B1.replace("cube_freq=1850", "cube_freq=925")).unwrap();
        let job = spec(SOC, d.path(), Some(&slow)).resolve(&env).unwrap();
        assert_eq!(
            job.platform_source().unwrap(),
            PlatformSource::Given(slow.clone())
        );
        let model = SocModel::resolve(SOC).unwrap();
        assert!(
            (model.clock_ghz - 0.925).abs() < 1e-12,
            "{}",
            model.clock_ghz
        );

        spec(SOC, d.path(), Some(&slow)).resolve(&env).unwrap();
        let other = d.path().join("other.ini");
        std::fs::write(&other, B1).unwrap();
        for (config, wanted) in [
            (Some(other.as_path()), other.display().to_string()),
            (None, PlatformSource::Embedded.to_string()),
        ] {
            match spec(SOC, d.path(), config).resolve(&env).unwrap_err() {
                JobError::Unsupported { input, reason } => {
                    let flag = config
                        .map_or("the SoC description file of Ascend910B1".into(), |c| {
                            format!("--platform-config {}", c.display())
                        });
                    assert_eq!(input, flag);
                    assert!(reason.contains(&slow.display().to_string()), "{reason}");
                    assert!(reason.contains(&wanted), "{reason}");
                }
                e => panic!("expected Unsupported, got {e:?}"),
            }
        }
        assert!((SocModel::resolve(SOC).unwrap().clock_ghz - 0.925).abs() < 1e-12);
    }

    /// A `platform_config` describing another SoC is refused before anything runs, as the
    /// simulator's SoC check (bad input naming the file).
    #[test]
    fn a_platform_config_of_another_soc_is_bad_input_naming_it() {
        let d = tempfile::tempdir().unwrap();
        let env = Environment::empty().with("HOME", d.path());
        let b1 = d.path().join("b1.ini");
        std::fs::write(&b1, B1).unwrap();
        let e = spec("Ascend310P3", d.path(), Some(&b1))
            .resolve(&env)
            .unwrap_err();
        assert_eq!(e.kind(), tunebank_failure::FailureKind::Input, "{e}");
        let message = tunebank_failure::error_chain(&e);
        assert!(message.contains(&b1.display().to_string()), "{message}");
        assert!(message.contains("Ascend910B1"), "{message}");
    }
}
