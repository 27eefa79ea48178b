//! `tunebank.tune`: a tuning job from Python — operator (OPAT), subgraph (SGAT) or gradient
//! (GDAT) tuning — through the library's job API ([`tunebank::job`]), the same front door as
//! `tunebank tune --job_type=N`: the same environment and aoe.ini rules, the graph bank applied
//! before OPAT, `tune_ops_file`, memory-capped workers and the same result file. The GIL is
//! released for the whole job; a `progress` callback is called (with the GIL) after each task.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyDictMethods};
use tunebank::job::{Environment, Finished, JobSpec, JobType, Observer};

use crate::convert::{atc_args, from_json};
use crate::errors::to_py;

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

/// Tunes the ONNX `model` as `tunebank tune --job_type=N` does, through the library's job API:
/// `job_type=2` operator tuning (OPAT) into the op bank, `1` subgraph tuning (SGAT, simulator
/// only) into the graph bank (reading node strategies from `op_bank` when given), `4` gradient
/// tuning (GDAT) of a data-parallel job of `rank_size` devices into the gradient bank;
/// `job_type=None` takes `AOE_MODE`, else 2. `bank` is the custom bank file of the job's kind
/// (created if needed; `None` = AOE's path rules); `graph_bank` is the graph bank OPAT applies
/// first (SGAT: the one it writes); the result file goes to `output_dir` (default:
/// `ASCEND_WORK_PATH`, else aoe.ini's `WORK_PATH`, else the working directory); `config` is
/// aoe.ini; `platform_config` is the simulator's SoC description file (CANN's
/// `platform_config/<SoC>.ini`) or a folder of them, before the installed toolkit's and the
/// built-in copy (`tunebank tune --platform-config`); `workers` (the measurement slots,
/// dealt out among the ops searched as batch widths: `--tuning_parallel_num`) and `repeat_tune`
/// default to `TUNING_PARALLEL_NUM` and `REPEAT_TUNE`; `runner` is `sim`, `sim:SEED`, `cpu` or
/// `exec:COMMAND`; `budget` candidates per op (subgraph, job), or `"auto"` / `"auto:N"` (OPAT:
/// an op's search stops when the model expects less than 1 % from one more measurement, at
/// 200 (N) at most; `tunebank tune --budget auto`); `transfer` (OPAT): a miss's
/// search starts from the winners of related bank records; `progress`, if given, is called
/// with a dict per finished task; every other keyword is an ATC option (`soc_version`
/// required).
/// `tune(budget=…)`: a number of candidates, or the text `tunebank tune --budget` takes.
#[derive(FromPyObject)]
pub(crate) enum BudgetArg {
    /// Candidates per op.
    Count(usize),
    /// `"auto"`, `"auto:N"` or a number as text.
    Text(String),
}

impl BudgetArg {
    fn resolve(self) -> PyResult<search_strategies::Budget> {
        match self {
            BudgetArg::Count(cap) => Ok(search_strategies::Budget { cap, auto: false }),
            BudgetArg::Text(t) => t
                .parse()
                .map_err(|e: String| crate::errors::input(format!("budget: {e}"))),
        }
    }
}

#[pyfunction]
#[pyo3(signature = (model, job_type=None, *, bank=None, graph_bank=None, op_bank=None, output_dir=None, config=None, platform_config=None, runner="sim".to_owned(), strategy="ensemble".to_owned(), budget=BudgetArg::Count(64), seed=1, workers=None, repeat_tune=None, transfer=true, range_shapes=None, shape_samples=None, rank_size=None, devices_per_server=8, cluster=None, max_segments=8, progress=None, **atc_options))]
#[allow(clippy::too_many_arguments)]
fn tune(
    py: Python<'_>,
    model: PathBuf,
    job_type: Option<u32>,
    bank: Option<PathBuf>,
    graph_bank: Option<PathBuf>,
    op_bank: Option<PathBuf>,
    output_dir: Option<PathBuf>,
    config: Option<PathBuf>,
    platform_config: Option<PathBuf>,
    runner: String,
    strategy: String,
    budget: BudgetArg,
    seed: u64,
    workers: Option<usize>,
    repeat_tune: Option<bool>,
    transfer: bool,
    range_shapes: Option<usize>,
    shape_samples: Option<PathBuf>,
    rank_size: Option<u32>,
    devices_per_server: u32,
    cluster: Option<PathBuf>,
    max_segments: usize,
    progress: Option<Py<PyAny>>,
    atc_options: Option<&Bound<'_, PyDict>>,
) -> PyResult<TuneResult> {
    let mut args = atc_args(atc_options)?;
    args.push(format!("--model={}", model.display()));
    let mut spec = JobSpec::new(args);
    spec.job_type = job_type
        .map(|j| JobType::parse("job_type", &j.to_string()))
        .transpose()
        .map_err(to_py)?;
    spec.runner = runner
        .parse()
        .map_err(|e| to_py(tunebank::tune::TuneError::from(e)))?;
    spec.strategy = strategy;
    let budget = budget.resolve()?;
    spec.budget = budget.cap;
    spec.auto_stop = budget.auto;
    spec.seed = seed;
    spec.workers = workers;
    spec.repeat_tune = repeat_tune;
    spec.transfer = transfer;
    spec.range_shapes = range_shapes;
    spec.shape_samples = shape_samples;
    spec.bank = bank;
    spec.graph_bank = graph_bank;
    spec.op_bank = op_bank;
    spec.output_dir = output_dir;
    spec.config = config;
    spec.platform_config = platform_config;
    spec.gradient.rank_size = rank_size;
    spec.gradient.devices_per_server = devices_per_server;
    spec.gradient.cluster = cluster;
    spec.gradient.max_segments = max_segments;
    let mut observer = Callback {
        callback: progress,
        error: None,
    };
    let result = py.detach(|| -> PyResult<TuneResult> {
        let job = spec.resolve(&Environment::process()).map_err(to_py)?;
        let report = job.run(&mut observer).map_err(to_py)?;
        Ok(TuneResult {
            job_type: job.job_type().code(),
            result_file: report.result_file().display().to_string(),
            report: report.document().clone(),
            repo_summary: report.repo_summary(),
            result: report.result().to_owned(),
            tasks: report.tasks(),
            units: report.units(),
            interrupted: report.interrupted(),
        })
    })?;
    match observer.error {
        Some(e) => Err(e),
        None => Ok(result),
    }
}

/// A Python progress callback as a job observer: called with
/// `{"name", "decision", "before_us", "after_us", "done", "total"}` after each task; the first
/// exception it raises is raised when the job ends (the job itself goes on).
struct Callback {
    callback: Option<Py<PyAny>>,
    error: Option<PyErr>,
}

impl Observer for Callback {
    fn finished(&mut self, t: &Finished<'_>) {
        let Some(cb) = &self.callback else { return };
        if self.error.is_some() {
            return;
        }
        let called = Python::attach(|py| -> PyResult<()> {
            let d = PyDict::new(py);
            d.set_item("name", t.name)?;
            d.set_item("decision", t.decision)?;
            d.set_item("before_us", t.before_us)?;
            d.set_item("after_us", t.after_us)?;
            d.set_item("failure", t.failure)?;
            d.set_item("done", t.done)?;
            d.set_item("total", t.total)?;
            cb.call1(py, (d,))?;
            Ok(())
        });
        if let Err(e) = called {
            self.error = Some(e);
        }
    }
}

/// Adds `tune` and `TuneResult` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TuneResult>()?;
    m.add_function(wrap_pyfunction!(tune, m)?)?;
    Ok(())
}
