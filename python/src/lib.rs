//! `tunebank._tunebank`: the Python extension module behind the `tunebank` package.
//!
//! What it exposes (the Python names are documented in `tunebank/_tunebank.pyi`):
//! - `bank`: `Bank` (open by path, layered look-ups, `why`) and its `Hit` objects;
//! - `keys`: `key` (an op template's keys) and `model_keys` (a model's units and keys), the
//!   same keys the CLI's `tunebank key` and `tunebank convert` derive;
//! - `tune`: `tune`, an operator-tuning job as `tunebank tune --job_type=2` runs it;
//! - `search`: spaces, the built-in strategies with ask/tell, Kernel Tuner cache replay, the
//!   scorer, and the comparison driver that also runs strategies written in Python.
//!
//! Errors are the exception classes of `tunebank.errors` (`errors`), chosen by the library's
//! failure kind, never by message text. Every call that does I/O, tuning or a search runs with
//! the GIL released.

#![forbid(unsafe_code)]

use pyo3::prelude::*;

mod bank;
mod convert;
mod errors;
mod keys;
mod search;
mod tune;

/// The extension module.
#[pymodule]
fn _tunebank(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("KEY_SCHEMA_VERSION", tunebank::key::KEY_SCHEMA_VERSION)?;
    bank::register(m)?;
    keys::register(m)?;
    tune::register(m)?;
    search::register(m)?;
    m.add_function(wrap_pyfunction!(_overflow_probe, m)?)?;
    Ok(())
}

/// `a + b` in this crate's own code, unchecked: a test hook (python/tests/test_errors.py) showing
/// that the wheel is built with overflow checks on (root `Cargo.toml`,
/// `[profile.release.package.tunebank-python]`), so that an overflow raises pyo3's
/// `PanicException` instead of wrapping to a wrong number.
#[pyfunction]
fn _overflow_probe(a: u32, b: u32) -> u32 {
    a + b
}
