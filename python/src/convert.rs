//! Conversions at the Python boundary: JSON-shaped values through Python's own `json` module
//! (one well-tested converter, exact for every JSON value), and keyword ATC options as the
//! `--name=value` arguments the CLI takes.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict};

use crate::errors;

fn json_module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    static JSON: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    Ok(JSON
        .get_or_try_init(py, || py.import("json").map(Bound::unbind))?
        .bind(py))
}

/// A Python value (dict, list, str, number, bool, None) as JSON text; `what` names it in the
/// error when it is not JSON-shaped.
pub fn to_json_text(value: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    let py = value.py();
    json_module(py)?
        .call_method1("dumps", (value,))
        .and_then(|s| s.extract::<String>())
        .map_err(|e| {
            errors::input(format!(
                "{what}: expected JSON-shaped data (dict, list, str, number, bool, None): {e}"
            ))
        })
}

/// JSON text as a Python value.
pub fn from_json_text<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    json_module(py)?.call_method1("loads", (text,))
}

/// A serde value as a Python value.
pub fn from_json<'py>(py: Python<'py>, value: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    from_json_text(py, &value.to_string())
}

/// Keyword ATC options (`soc_version="Ascend910B2", precision_mode="force_fp16"`) as the CLI's
/// arguments (`--soc_version=Ascend910B2`, …), in the order given. Booleans are `true`/`false`;
/// other values are their `str()`; `None` leaves the option out.
pub fn atc_args(options: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<String>> {
    let mut args = Vec::new();
    let Some(options) = options else {
        return Ok(args);
    };
    for (name, value) in options.iter() {
        let name: String = name.extract()?;
        if value.is_none() {
            continue;
        }
        let text = if let Ok(b) = value.cast::<PyBool>() {
            if b.is_true() { "true" } else { "false" }.to_owned()
        } else {
            value.str()?.extract::<String>()?
        };
        args.push(format!("--{name}={text}"));
    }
    Ok(args)
}
