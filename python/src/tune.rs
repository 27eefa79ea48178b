//! `tunebank.tune`: an operator-tuning job (AOE's OPAT, `tunebank tune --job_type=2`) from
//! Python, through the same library calls as the CLI: the model planned under the ATC options,
//! every unique key looked up and the misses searched and measured by the runner, winners
//! written to the custom bank, and AOE's result file written after every finished op. The GIL
//! is released for the whole job.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::SystemTime;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tunebank::bank::Bank as RustBank;
use tunebank::key::RecordKind;
use tunebank::report::ResultFile;
use tunebank::tune::{self as rust_tune, TuneSettings};

use crate::convert::{atc_args, from_json};
use crate::errors::{self, to_py};

/// What a tuning job did: AOE's result-file report, its path, and the counts the CLI prints.
#[pyclass(frozen, module = "tunebank")]
pub struct TuneResult {
    /// The AOE result file written (`aoe_result_opat_<timestamp>_pid<pid>.json`).
    #[pyo3(get)]
    result_file: String,
    report: serde_json::Value,
    repo_summary: serde_json::Value,
    /// `opat_tuning_result`: `tuning successful`, `tuning failed` or `tuning incomplete`.
    #[pyo3(get)]
    result: String,
    /// Unique keys (tasks) in the job.
    #[pyo3(get)]
    tasks: usize,
    /// Ops the model gives (units, across profiles).
    #[pyo3(get)]
    units: usize,
    /// The job stopped before every task ran (total budget or time).
    #[pyo3(get)]
    interrupted: bool,
}

#[pymethods]
impl TuneResult {
    /// The result file's content as a dict (`{report_id: [{"basic": …}, {"OPAT": …}]}`).
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

/// Tunes the ops of the ONNX `model`: `job_type=2` (operator tuning; 1 and 4 are the CLI's
/// for now). `bank` is the custom bank file (created if needed; `None` = AOE's path rules),
/// the result file goes to `output_dir`; `runner` is `sim`, `sim:SEED`, `cpu` or
/// `exec:COMMAND`; `budget` candidates per op; every other keyword is an ATC option
/// (`soc_version` required).
#[pyfunction]
#[pyo3(signature = (model, job_type=2, *, bank=None, output_dir=None, runner="sim".to_owned(), strategy="ensemble".to_owned(), budget=64, seed=1, workers=1, repeat_tune=false, **atc_options))]
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
    atc_options: Option<&Bound<'_, PyDict>>,
) -> PyResult<TuneResult> {
    if job_type != 2 {
        return Err(errors::input(format!(
            "job_type={job_type}: from Python only operator tuning (2) runs; subgraph (1) and gradient (4) tuning are the CLI's (`tunebank tune --job_type={job_type}`)"
        )));
    }
    if budget == 0 || workers == 0 {
        return Err(errors::input(
            "budget and workers: expected at least 1 each",
        ));
    }
    let mut args = atc_args(atc_options)?;
    args.push(format!("--model={}", model.display()));
    let options = tunebank::key::ResolvedOptions::from_args(&args, &tunebank::key::FsReader)
        .map_err(to_py)?;
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
        ..TuneSettings::default()
    };
    rust_tune::check_settings(&settings).map_err(to_py)?;
    rust_tune::check_soc(&settings, &soc.version).map_err(to_py)?;
    let name = model
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    py.detach(|| {
        let loaded = tunebank::model::load_onnx(&model).map_err(to_py)?;
        let plan = rust_tune::plan(&loaded, &options, &soc, None).map_err(to_py)?;
        let mut builder = RustBank::builder(RecordKind::Op, &soc.version);
        if let Some(p) = &bank {
            builder = builder.custom_path(p);
        }
        let bank = builder.open().map_err(to_py)?;
        std::fs::create_dir_all(&dir).map_err(|e| {
            errors::raise(
                tunebank::failure::io_kind(&e),
                format!("output_dir {}: {e}", dir.display()),
            )
        })?;
        let result = ResultFile::opat(&dir, SystemTime::now(), std::process::id());
        let cancel = AtomicBool::new(false);
        let summary = rust_tune::run(
            &plan,
            &bank,
            &settings,
            &name,
            Some(&result),
            &cancel,
            &mut (),
        )
        .map_err(to_py)?;
        Ok(TuneResult {
            result_file: result.path.display().to_string(),
            report: summary.report.to_json(&result.report_id),
            repo_summary: summary.report.summary.to_json(),
            result: summary.report.result.as_str().to_owned(),
            tasks: plan.tasks.len(),
            units: plan.units.len(),
            interrupted: summary.interrupted,
        })
    })
}

/// Adds `tune` and `TuneResult` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TuneResult>()?;
    m.add_function(wrap_pyfunction!(tune, m)?)?;
    Ok(())
}
