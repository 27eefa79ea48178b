//! `tunebank.tune`: a tuning job from Python — operator (OPAT), subgraph (SGAT) or gradient
//! (GDAT) tuning — through the same library calls as `tunebank tune --job_type=N`: the model
//! planned under the ATC options, every unique key looked up and the misses searched and
//! measured, winners written to the custom bank of the job's kind, and AOE's result file
//! written. The GIL is released for the whole job. What the CLI adds around it (aoe.ini,
//! `--tune_ops_file`, the graph bank applied before OPAT, memory-capped workers, the printed
//! table) stays the CLI's.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::{Instant, SystemTime};

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tunebank::bank::Bank as RustBank;
use tunebank::gdat::{self, Cluster, GdatSettings};
use tunebank::key::{FsReader, RecordKind, ResolvedOptions, SocSpec};
use tunebank::report::ResultFile;
use tunebank::tune::sgat::{run_sgat, sgat_plan};
use tunebank::tune::{self as rust_tune, TuneSettings};

use crate::convert::{atc_args, from_json};
use crate::errors::{self, to_py};

/// What a tuning job did: AOE's result-file report, its path, and the counts the CLI prints.
#[pyclass(frozen, module = "tunebank")]
pub struct TuneResult {
    /// 1 (SGAT), 2 (OPAT) or 4 (GDAT).
    #[pyo3(get)]
    job_type: u32,
    /// The AOE result file written (`aoe_result_opat_<timestamp>_pid<pid>.json`).
    #[pyo3(get)]
    result_file: String,
    report: serde_json::Value,
    repo_summary: serde_json::Value,
    /// The job's result: `tuning successful`, `tuning failed` or `tuning incomplete`.
    #[pyo3(get)]
    result: String,
    /// Unique keys (tasks) in the job (1 for GDAT).
    #[pyo3(get)]
    tasks: usize,
    /// What the model gives: ops (OPAT, across profiles), subgraphs (SGAT) or gradients (GDAT).
    #[pyo3(get)]
    units: usize,
    /// The job stopped before every task ran (total budget or time).
    #[pyo3(get)]
    interrupted: bool,
}

#[pymethods]
impl TuneResult {
    /// The result file's content as a dict (`{report_id: [{"basic": …}, {"OPAT": …}]}` and the
    /// SGAT and GDAT forms).
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        from_json(py, &self.report)
    }

    /// `repo_summary`: `repo_add_num`, `repo_hit_num`, `repo_unsatisfied_num`, ….
    #[getter]
    fn summary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        from_json(py, &self.repo_summary)
    }

    fn __repr__(&self) -> String {
        format!(
            "TuneResult(result='{}', result_file='{}', tasks={}, units={}, summary={}, interrupted={})",
            self.result,
            self.result_file,
            self.tasks,
            self.units,
            self.repo_summary,
            if self.interrupted { "True" } else { "False" }
        )
    }
}

/// Tunes the ONNX `model` as `tunebank tune --job_type=N` does, through the same library calls:
/// `job_type=2` operator tuning (OPAT) into the op bank, `1` subgraph tuning (SGAT, simulator
/// only) into the graph bank (reading node strategies from `op_bank` when given), `4` gradient
/// tuning (GDAT) of a data-parallel job of `rank_size` devices into the gradient bank. `bank` is
/// the custom bank file of the job's kind (created if needed; `None` = AOE's path rules); the
/// result file goes to `output_dir` (default: the working directory); `runner` is `sim`,
/// `sim:SEED`, `cpu` or `exec:COMMAND`; `budget` candidates per op (subgraph, job); `transfer`
/// (OPAT): a miss's search starts from the winners of related bank records, as `tunebank tune`
/// does unless `--no-transfer`; every other keyword is an ATC option (`soc_version` required).
#[pyfunction]
#[pyo3(signature = (model, job_type=2, *, bank=None, output_dir=None, runner="sim".to_owned(), strategy="ensemble".to_owned(), budget=64, seed=1, workers=1, repeat_tune=false, transfer=true, op_bank=None, rank_size=None, devices_per_server=8, cluster=None, max_segments=8, **atc_options))]
#[allow(clippy::too_many_arguments)]
fn tune(
    py: Python<'_>,
    model: PathBuf,
    job_type: u32,
    bank: Option<PathBuf>,
    output_dir: Option<PathBuf>,
    runner: String,
    strategy: String,
    budget: usize,
    seed: u64,
    workers: usize,
    repeat_tune: bool,
    transfer: bool,
    op_bank: Option<PathBuf>,
    rank_size: Option<u32>,
    devices_per_server: u32,
    cluster: Option<PathBuf>,
    max_segments: usize,
    atc_options: Option<&Bound<'_, PyDict>>,
) -> PyResult<TuneResult> {
    if budget == 0 || workers == 0 {
        return Err(errors::input(
            "budget and workers: expected at least 1 each",
        ));
    }
    let mut args = atc_args(atc_options)?;
    args.push(format!("--model={}", model.display()));
    let options = ResolvedOptions::from_args(&args, &FsReader).map_err(to_py)?;
    let soc = options.soc().map_err(to_py)?;
    let dir = match output_dir {
        Some(d) => d,
        None => std::env::current_dir()
            .map_err(|e| errors::raise(tunebank::failure::io_kind(&e), e.to_string()))?,
    };
    let settings = TuneSettings {
        runner,
        strategy,
        seed,
        trials_per_op: budget,
        repeat_tune,
        workers,
        options_given: options.given().clone(),
        transfer,
        ..TuneSettings::default()
    };
    rust_tune::check_settings(&settings).map_err(to_py)?;
    rust_tune::check_soc(&settings, &soc.version).map_err(to_py)?;
    let job = Job {
        name: model
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "model".into()),
        model,
        options,
        soc,
        dir,
        bank,
        settings,
    };
    match job_type {
        2 => py.detach(|| job.opat()),
        1 => py.detach(|| job.sgat(op_bank)),
        4 => {
            let rank_size = rank_size.ok_or_else(|| {
                errors::input("rank_size: gradient tuning (job_type=4) needs the number of devices of the data-parallel job, e.g. rank_size=16")
            })?;
            py.detach(|| job.gdat(rank_size, devices_per_server, cluster, max_segments))
        }
        other => Err(errors::input(format!(
            "job_type={other}: expected 1 (subgraph tuning), 2 (operator tuning) or 4 (gradient tuning)"
        ))),
    }
}

/// A validated job: the model, options, settings and where its outputs go.
struct Job {
    model: PathBuf,
    name: String,
    options: ResolvedOptions,
    soc: SocSpec,
    dir: PathBuf,
    bank: Option<PathBuf>,
    settings: TuneSettings,
}

impl Job {
    /// The custom bank of `kind`, opened for writing.
    fn open_bank(&self, kind: RecordKind) -> PyResult<RustBank> {
        let mut builder = RustBank::builder(kind, &self.soc.version);
        if let Some(p) = &self.bank {
            builder = builder.custom_path(p);
        }
        builder.open().map_err(to_py)
    }

    fn load(&self) -> PyResult<tunebank::model::Model> {
        std::fs::create_dir_all(&self.dir).map_err(|e| {
            errors::raise(
                tunebank::failure::io_kind(&e),
                format!("output_dir {}: {e}", self.dir.display()),
            )
        })?;
        tunebank::model::load_onnx(&self.model).map_err(to_py)
    }

    fn opat(&self) -> PyResult<TuneResult> {
        let model = self.load()?;
        let plan = rust_tune::plan(&model, &self.options, &self.soc, None).map_err(to_py)?;
        let bank = self.open_bank(RecordKind::Op)?;
        let result = ResultFile::opat(&self.dir, SystemTime::now(), std::process::id());
        let cancel = AtomicBool::new(false);
        let s = rust_tune::run(
            &plan,
            &bank,
            &self.settings,
            &self.name,
            Some(&result),
            &cancel,
            &mut (),
        )
        .map_err(to_py)?;
        Ok(TuneResult {
            job_type: 2,
            result_file: result.path.display().to_string(),
            report: s.report.to_json(&result.report_id),
            repo_summary: s.report.summary.to_json(),
            result: s.report.result.as_str().to_owned(),
            tasks: plan.tasks.len(),
            units: plan.units.len(),
            interrupted: s.interrupted,
        })
    }

    fn sgat(&self, op_bank: Option<PathBuf>) -> PyResult<TuneResult> {
        if !self.settings.runner.starts_with("sim") {
            return Err(errors::input(format!(
                "runner {}: subgraph tuning (job_type=1) runs on the simulator (runner=\"sim\")",
                self.settings.runner
            )));
        }
        let model = self.load()?;
        let plan = sgat_plan(&model, &self.options, &self.soc).map_err(to_py)?;
        let bank = self.open_bank(RecordKind::Graph)?;
        let op_bank = match op_bank {
            Some(p) => Some(
                RustBank::builder(RecordKind::Op, &self.soc.version)
                    .no_default_builtin()
                    .custom_path(p)
                    .read_only(true)
                    .open()
                    .map_err(to_py)?,
            ),
            None => None,
        };
        let settings = TuneSettings {
            workers: 1,
            ..self.settings.clone()
        };
        let result = ResultFile::sgat(&self.dir, SystemTime::now(), std::process::id());
        let cancel = AtomicBool::new(false);
        let s = run_sgat(
            &plan,
            &bank,
            op_bank.as_ref(),
            &settings,
            &self.name,
            Some(&result),
            &cancel,
        )
        .map_err(to_py)?;
        Ok(TuneResult {
            job_type: 1,
            result_file: result.path.display().to_string(),
            report: s.report.to_json(&result.report_id),
            repo_summary: s.report.summary.to_json(),
            result: s.report.result.as_str().to_owned(),
            tasks: plan.tasks.len(),
            units: plan.subgraphs.len(),
            interrupted: s.interrupted,
        })
    }

    fn gdat(
        &self,
        rank_size: u32,
        devices_per_server: u32,
        cluster: Option<PathBuf>,
        max_segments: usize,
    ) -> PyResult<TuneResult> {
        let started = (Instant::now(), SystemTime::now());
        let cluster = Cluster::from_flags(
            &self.soc.version,
            rank_size,
            devices_per_server,
            cluster.as_deref(),
        )
        .map_err(to_py)?;
        let model = self.load()?;
        let plan = gdat::plan_job(
            &model,
            &self.options,
            &self.soc,
            cluster,
            max_segments,
            None,
        )
        .map_err(to_py)?;
        let bank = self.open_bank(RecordKind::Gradient)?;
        let result = gdat::report::result_file(&self.dir, started.1, std::process::id());
        let mut given = self.options.given().clone();
        given.insert("rank_size".into(), rank_size.to_string());
        given.insert(
            "devices_per_server".into(),
            plan.cluster.devices_per_server.to_string(),
        );
        let settings = GdatSettings {
            strategy: self.settings.strategy.clone(),
            budget: self.settings.trials_per_op,
            seed: self.settings.seed,
            repeat_tune: self.settings.repeat_tune,
            options_given: given,
        };
        let outcome = gdat::run_job(&plan, &bank, &settings, None).map_err(to_py)?;
        let doc = gdat::report::result_json(
            &result.report_id,
            &self.name,
            started.0.elapsed().as_secs_f64(),
            &plan,
            &outcome,
        );
        result.write_json(&doc).map_err(|e| {
            errors::raise(
                tunebank::failure::io_kind(&e),
                format!("writing {}: {e}", result.path.display()),
            )
        })?;
        let found = |name: &str| find(&doc, name).cloned().unwrap_or(serde_json::Value::Null);
        Ok(TuneResult {
            job_type: 4,
            result_file: result.path.display().to_string(),
            repo_summary: found("repo_summary"),
            result: found("gdat_tuning_result")
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            report: doc,
            tasks: 1,
            units: plan.timeline.gradients.len(),
            interrupted: false,
        })
    }
}

/// The first value under key `name` anywhere in `v` (depth first).
fn find<'a>(v: &'a serde_json::Value, name: &str) -> Option<&'a serde_json::Value> {
    match v {
        serde_json::Value::Object(m) => m
            .get(name)
            .or_else(|| m.values().find_map(|x| find(x, name))),
        serde_json::Value::Array(a) => a.iter().find_map(|x| find(x, name)),
        _ => None,
    }
}

/// Adds `tune` and `TuneResult` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TuneResult>()?;
    m.add_function(wrap_pyfunction!(tune, m)?)?;
    Ok(())
}
