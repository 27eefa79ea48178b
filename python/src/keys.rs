//! `tunebank.key` and `tunebank.model_keys`: the bank keys of an op template and of a model,
//! derived by the same library calls as the CLI's `tunebank key` and `tunebank convert`.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tunebank::job::{Environment, JobSpec};
use tunebank::key::{derive_op_keys, FsReader, OpTemplate, ResolvedOptions, SocSpec};

use crate::convert::{atc_args, from_json, to_json_text};
use crate::errors::{self, to_py};

/// The resolved ATC options of keyword arguments and the SoC they name (`soc_version` is
/// required, as for the CLI).
pub fn options_of(atc: Option<&Bound<'_, PyDict>>) -> PyResult<(ResolvedOptions, SocSpec)> {
    let args = atc_args(atc)?;
    let options = ResolvedOptions::from_args(&args, &FsReader).map_err(to_py)?;
    let soc = options.soc().map_err(to_py)?;
    Ok((options, soc))
}

/// An op template from a Python dict (the OpTemplate JSON shape).
pub fn template_of(op: &Bound<'_, PyAny>) -> PyResult<OpTemplate> {
    let text = to_json_text(op, "op")?;
    serde_json::from_str(&text).map_err(|e| {
        errors::input(format!(
            "op: expected an op template {{node_name, op_type, inputs: [{{shape, dtype, ...}}], outputs, attrs}}: {e}"
        ))
    })
}

/// The bank keys (hex) of one op template under the ATC options, one per dynamic profile.
#[pyfunction]
#[pyo3(signature = (op, **atc_options))]
fn key(
    py: Python<'_>,
    op: &Bound<'_, PyAny>,
    atc_options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<String>> {
    let template = template_of(op)?;
    let (options, soc) = options_of(atc_options)?;
    let resolved = py
        .detach(|| derive_op_keys(&template, &options, &soc))
        .map_err(to_py)?;
    Ok(resolved.iter().map(|r| r.key.to_string()).collect())
}

/// Every unit of an ONNX model under the ATC options, as a converter resolves it (inferred,
/// fused, the graph bank applied first when one exists — `graph_bank`, else AOE's resolution
/// of the custom graph bank plus the built-in one), one row per unit and dynamic profile:
/// `{"op_name", "op_type", "ir_type", "profile", "key"}`, the fields of
/// `tunebank convert --json`'s rows ([`tunebank::job::JobSpec::conversion`]).
#[pyfunction]
#[pyo3(signature = (path, *, graph_bank=None, **atc_options))]
fn model_keys<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
    graph_bank: Option<std::path::PathBuf>,
    atc_options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut args = atc_args(atc_options)?;
    args.push(format!("--model={}", path.display()));
    let mut spec = JobSpec::new(args);
    spec.graph_bank = graph_bank;
    let rows = py.detach(|| -> PyResult<serde_json::Value> {
        let conversion = spec.conversion(&Environment::process()).map_err(to_py)?;
        serde_json::to_value(conversion.unit_keys())
            .map_err(|e| errors::input(format!("model_keys: {e}")))
    })?;
    from_json(py, &rows)
}

/// Adds the key functions to the module.
/// The `precision_mode` a training run (`"tensorflow"`, `"torch"`, `"mindspore"`) compiles a
/// step under on SoC `soc_version` when its script sets none
/// ([`tunebank::key::platform::TrainingRun`]): what the training adapters tune a captured step
/// under. An unknown run or SoC raises `InputError` naming it.
#[pyfunction]
fn training_precision_mode(run: &str, soc_version: &str) -> PyResult<&'static str> {
    use tunebank::key::platform::{training_precision_mode, TrainingRun};
    let r = TrainingRun::parse(run).ok_or_else(|| {
        errors::input(format!(
            "run {run:?}: expected tensorflow, torch or mindspore"
        ))
    })?;
    training_precision_mode(r, soc_version).map_err(|e| errors::input(format!("soc_version: {e}")))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(training_precision_mode, m)?)?;
    m.add_function(wrap_pyfunction!(key, m)?)?;
    m.add_function(wrap_pyfunction!(model_keys, m)?)?;
    Ok(())
}
