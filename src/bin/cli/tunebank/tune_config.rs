//! Flags and environment of `tunebank tune` and `tunebank convert`, validated into what the
//! library runs: the job type, AOE's environment variables, budgets, workers capped by memory,
//! and the loaded model's plan. Everything here can be bad input; nothing here writes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tunebank::key::{FsReader, ResolvedOptions, SocSpec};
use tunebank::measure::TimingSettings;
use tunebank::model::load_onnx;
use tunebank::tune::sgat::{post_sgat_plan, PostSgat};
use tunebank::tune::{self, memory, TunePlan, TuneSettings};

use super::aoe_ini::AoeIni;
use super::tune::TuneArgs;

/// Rewrites `--job-type op|subgraph|gradient` into AOE's `--job_type=2|1|4`.
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

/// The three AOE job types `tune` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobType {
    /// 1: subgraph tuning (SGAT).
    Subgraph,
    /// 2: operator tuning (OPAT), the default.
    Op,
    /// 4: gradient-split tuning (GDAT).
    Gradient,
}

/// The job type of a `tune`: `--job_type` (after [`normalise_job_type`]), else `AOE_MODE`, else
/// operator tuning. A value that is not 1, 2 or 4 is bad input naming where it came from;
/// `AOE_MODE` is checked even when `--job_type` overrides it.
pub fn job_type(atc: &[String]) -> Result<JobType> {
    let parse = |from: &str, value: &str| {
        match value.trim() {
        "1" => Ok(JobType::Subgraph),
        "2" => Ok(JobType::Op),
        "4" => Ok(JobType::Gradient),
        _ => bail!("{from}={value}: expected 1 (subgraph tuning, SGAT), 2 (operator tuning, OPAT) or 4 (gradient tuning, GDAT); --job-type also takes subgraph, op or gradient"),
    }
    };
    let env = match env_nonempty("AOE_MODE") {
        Some(m) => Some(parse("AOE_MODE", &m)?),
        None => None,
    };
    match atc.iter().rev().find_map(|a| a.strip_prefix("--job_type=")) {
        Some(j) => parse("--job_type", j),
        None => Ok(env.unwrap_or(JobType::Op)),
    }
}

/// Rewrites AOE's short flags `-j -f -m -w` (given to `tune` as its own flags) into the ATC
/// options they stand for (`--job_type --framework --model --weight`), appended to `atc`; a
/// short flag and its long form both given is an error.
pub fn aoe_short_flags(args: &TuneArgs, atc: &[String]) -> Result<Vec<String>> {
    let mut out = atc.to_vec();
    for (short, name, value) in [
        ('j', "job_type", &args.short_job_type),
        ('f', "framework", &args.short_framework),
        ('m', "model", &args.short_model),
        ('w', "weight", &args.short_weight),
    ] {
        let Some(v) = value else { continue };
        let long = format!("--{name}");
        let given_long = atc.iter().any(|a| {
            a.strip_prefix("--")
                .and_then(|b| b.split('=').next())
                .is_some_and(|n| n.replace('-', "_") == name)
        });
        if given_long {
            bail!("-{short} {v} and {long} both given: give one");
        }
        out.push(format!("{long}={v}"));
    }
    Ok(out)
}

/// AOE's `--framework` codes and the model files each takes.
const FRAMEWORKS: &[(&str, &str, &[&str])] = &[
    ("0", "Caffe", &["prototxt", "caffemodel"]),
    ("1", "MindSpore", &["air", "mindir"]),
    ("3", "TensorFlow", &["pb"]),
    ("5", "ONNX", &["onnx"]),
];

/// `--framework` (default 5) must agree with the model file's kind, and only ONNX (5) is
/// supported: any other framework, a model file of another framework, or a `--weight` (a Caffe
/// model's) is an error naming the flag and the file.
pub(super) fn check_framework(options: &ResolvedOptions) -> Result<()> {
    let given = options.given();
    let model = given.get("model").map(String::as_str).unwrap_or("");
    let ext = Path::new(model)
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let of_file = FRAMEWORKS.iter().find(|f| f.2.contains(&ext.as_str()));
    let framework = given.get("framework").map(|f| f.trim().to_owned());
    let named = |code: &str| {
        FRAMEWORKS
            .iter()
            .find(|f| f.0 == code)
            .map_or("unknown", |f| f.1)
    };
    if let (Some(f), Some(file)) = (&framework, of_file) {
        if f != file.0 {
            bail!("--framework={f} ({}) does not agree with --model={model} (a {} model file, --framework={}); only ONNX models (--framework=5) are supported", named(f), file.1, file.0);
        }
    }
    if let Some(f) = framework.as_deref().filter(|f| *f != "5") {
        bail!("--framework={f} ({}) with --model={model}: only ONNX models (--framework=5) are supported", named(f));
    }
    if let Some(file) = of_file.filter(|f| f.0 != "5") {
        bail!("--model={model} is a {} model file (--framework={}): only ONNX models (--framework=5) are supported", file.1, file.0);
    }
    if let Some(w) = given.get("weight").filter(|w| !w.is_empty()) {
        bail!("--weight={w}: a weight file belongs to a Caffe model (--framework=0); --model={model} is ONNX (--framework=5), which has none");
    }
    Ok(())
}

/// The variable's value, unless unset or blank.
pub fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The variable as a positive integer, if set.
fn env_positive(name: &str) -> Result<Option<usize>> {
    match env_nonempty(name) {
        None => Ok(None),
        Some(v) => match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(Some(n)),
            _ => bail!("environment variable {name}={v:?}: expected a positive integer"),
        },
    }
}

/// `REPEAT_TUNE`: True/1 or False/0 (default false).
pub fn repeat_tune() -> Result<bool> {
    match env_nonempty("REPEAT_TUNE") {
        None => Ok(false),
        Some(v) => match v.trim().to_ascii_lowercase().as_str() {
            "true" | "1" => Ok(true),
            "false" | "0" => Ok(false),
            _ => bail!("environment variable REPEAT_TUNE={v:?}: expected True or False"),
        },
    }
}

/// A model loaded and planned under the options.
pub struct Loaded {
    /// The SoC of `--soc_version`.
    pub soc: SocSpec,
    /// `--model` as given.
    pub model_path: String,
    /// The tasks and units to tune or look up.
    pub plan: TunePlan,
    /// With a graph bank: its files and what it made of each subgraph (the plan's units are then
    /// the post-SGAT units).
    pub graph: Option<(String, PostSgat)>,
}

/// Options, model, plan: everything that can be bad input, before anything is opened for write.
/// Skipped ops are named on standard error. The graph bank (`graph_bank`, else AOE's resolution
/// of the custom graph bank, plus the built-in one) is applied first when one exists: the plan's
/// units are then the post-SGAT units (`tunebank::tune::sgat::post_sgat_plan`).
pub fn load(
    atc: &[String],
    only: Option<&BTreeSet<String>>,
    graph_bank: Option<&Path>,
) -> Result<Loaded> {
    let options = ResolvedOptions::from_args(atc, &FsReader)?;
    let soc = options.soc()?;
    let model_path = options
        .given()
        .get("model")
        .cloned()
        .filter(|m| !m.is_empty())
        .context("--model: expected the ONNX model to tune, e.g. --model=resnet50.onnx")?;
    let model = load_onnx(&model_path)?;
    let graph_bank = super::graph_bank::open_read(graph_bank, &soc.version)?;
    let (plan, graph) = match graph_bank {
        None => (tune::plan(&model, &options, &soc, only)?, None),
        Some(bank) => {
            let (plan, applied) = post_sgat_plan(&model, &options, &soc, &bank, only)?;
            let files = super::graph_bank::describe(&bank);
            (plan, Some((files, applied)))
        }
    };
    for s in &plan.skipped {
        eprintln!(
            "tunebank: skipped {} ({}): {}",
            s.node_name, s.op_type, s.reason
        );
    }
    Ok(Loaded {
        soc,
        model_path,
        plan,
        graph,
    })
}

/// The op names or op types of a `--tune_ops_file`: AOE's JSON
/// (`{"tune_ops_name": [...], "tune_ops_type": [...]}`, either list optional), or one name or
/// type per line (or comma-separated, `#` comments). Names and types may be ONNX or Ascend IR
/// spellings.
fn read_tune_ops_file(path: &str) -> Result<BTreeSet<String>> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!("--tune_ops_file {path}: cannot read it; expected AOE's JSON {{\"tune_ops_name\": [...], \"tune_ops_type\": [...]}} or one op name or op type per line")
    })?;
    if text.trim_start().starts_with('{') {
        return aoe_tune_ops(path, &text);
    }
    Ok(text
        .lines()
        .flat_map(|l| l.split(','))
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect())
}

/// The names and types of AOE's JSON `tune_ops_file`.
fn aoe_tune_ops(path: &str, text: &str) -> Result<BTreeSet<String>> {
    let expected = "expected AOE's JSON {\"tune_ops_name\": [\"name\", ...], \"tune_ops_type\": [\"Conv2D\", ...]}";
    let v: serde_json::Value = serde_json::from_str(text)
        .with_context(|| format!("--tune_ops_file {path}: not valid JSON; {expected}"))?;
    let obj = v
        .as_object()
        .with_context(|| format!("--tune_ops_file {path}: {expected}"))?;
    let mut out = BTreeSet::new();
    for (field, list) in obj {
        if field != "tune_ops_name" && field != "tune_ops_type" {
            bail!("--tune_ops_file {path}: unknown field {field:?}; {expected}");
        }
        let items = list.as_array().with_context(|| {
            format!("--tune_ops_file {path}: {field} must be a list of strings")
        })?;
        for i in items {
            let s = i.as_str().with_context(|| {
                format!("--tune_ops_file {path}: {field} must be a list of strings, found {i}")
            })?;
            if !s.trim().is_empty() {
                out.insert(s.trim().to_owned());
            }
        }
    }
    Ok(out)
}

/// Per-worker memory estimate by runner: a simulator is small; host kernels and device
/// compilations are not. `TUNEBANK_WORKER_MEMORY_MB` overrides it.
fn worker_memory_bytes(runner: &str) -> Result<u64> {
    if let Some(mb) = env_positive("TUNEBANK_WORKER_MEMORY_MB")? {
        return Ok(mb as u64 * (1 << 20));
    }
    Ok(if runner.starts_with("sim") {
        256 << 20
    } else if runner == "cpu" {
        1 << 30
    } else {
        4 << 30
    })
}

/// A `--*-s` flag as a duration, which must be positive.
fn seconds(s: Option<f64>, flag: &str) -> Result<Option<Duration>> {
    match s {
        None => Ok(None),
        Some(v) if v.is_finite() && v > 0.0 => Ok(Some(Duration::from_secs_f64(v))),
        Some(v) => bail!("{flag} {v}: expected a positive number of seconds"),
    }
}

/// A tuning job, validated: the plan and the settings to run it with.
pub struct TuneJob {
    /// The model and its plan.
    pub loaded: Loaded,
    /// The settings, workers included.
    pub settings: TuneSettings,
    /// aoe.ini's `WORK_PATH`, if it sets one.
    pub work_path: Option<PathBuf>,
}

/// Validates the job (job type, environment, flags, options, model) in the order AOE users
/// meet the errors, and caps the workers by available memory (said on standard error).
pub fn configure(args: &TuneArgs, atc: &[String]) -> Result<TuneJob> {
    if job_type(atc)? != JobType::Op {
        bail!("configure: an operator-tuning job was expected (--job_type=2)");
    }
    let options = ResolvedOptions::from_args(atc, &FsReader)?;
    check_framework(&options)?;
    let ini = super::aoe_ini::find(args.config.as_deref())?;
    let ops_file = options
        .given()
        .get("tune_ops_file")
        .filter(|f| !f.is_empty())
        .cloned();
    let only = match &ops_file {
        Some(f) => Some(read_tune_ops_file(f)?),
        None => None,
    };
    let (mut settings, requested) = settings(args, &options, ini.as_ref())?;
    tune::check_settings(&settings)?;
    tune::check_soc(&settings, &options.soc()?.version)?;
    let loaded = load(atc, only.as_ref(), args.graph_bank.as_deref())?;
    if let Some(f) = &ops_file {
        if loaded.plan.units.is_empty() {
            bail!("--tune_ops_file {f}: selects no op of {} (names and types are matched as ONNX or Ascend IR spellings, e.g. Conv or Conv2D)", loaded.model_path);
        }
    }
    settings.workers = cap_workers(requested, &settings.runner)?;
    let work_path = ini.and_then(|i| i.work_path);
    Ok(TuneJob {
        loaded,
        settings,
        work_path,
    })
}

/// The settings from the environment, aoe.ini and the flags (one worker), and the workers
/// requested (`TUNING_PARALLEL_NUM` of the environment, else of aoe.ini, default: the cores, at
/// most 8). aoe.ini's `RUN_LOOP` is the runner's timed repeats per measurement.
pub(super) fn settings(
    args: &TuneArgs,
    options: &ResolvedOptions,
    ini: Option<&AoeIni>,
) -> Result<(TuneSettings, usize)> {
    let repeat_tune = repeat_tune()?;
    let requested = match env_positive("TUNING_PARALLEL_NUM")? {
        Some(n) => n,
        None => match ini.and_then(|i| i.parallel) {
            Some(n) => n,
            None => std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
                .min(8),
        },
    };
    let mut timing = TimingSettings::default();
    if let Some(r) = ini.and_then(|i| i.run_loop) {
        timing.repeats = r;
    }
    let batch = env_positive("TE_PARALLEL_COMPILER")?.unwrap_or(8);
    if let Some(d) = env_nonempty("ASCEND_DEVICE_ID") {
        if d.trim().parse::<u32>().is_err() {
            bail!("environment variable ASCEND_DEVICE_ID={d:?}: expected a device number");
        }
    }
    if args.budget == 0 {
        bail!("--budget 0: expected at least one candidate per op");
    }
    let settings = TuneSettings {
        runner: args.runner.clone(),
        strategy: args.strategy.clone(),
        seed: args.seed,
        trials_per_op: args.budget,
        time_per_op: seconds(args.time_budget_s, "--time-budget-s")?,
        total_trials: args.total_budget,
        total_time: seconds(args.total_time_s, "--total-time-s")?,
        repeat_tune,
        workers: 1,
        batch,
        options_given: options.given().clone(),
        timing,
        transfer: !args.no_transfer,
        ..TuneSettings::default()
    };
    Ok((settings, requested))
}

/// The `requested` workers, capped by available memory for `runner`'s estimate.
fn cap_workers(requested: usize, runner: &str) -> Result<usize> {
    let per_worker = worker_memory_bytes(runner)?;
    let available = memory::available_memory();
    let (workers, capped) = memory::cap_workers(requested, per_worker, available);
    if capped {
        let a = available.map(|a| a.bytes >> 20).unwrap_or(0);
        eprintln!(
            "tunebank: TUNING_PARALLEL_NUM={requested} capped to {workers} worker(s): {a} MiB available, about {} MiB needed per worker",
            per_worker >> 20
        );
    }
    Ok(workers)
}
