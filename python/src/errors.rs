//! Rust errors as the exceptions of `tunebank.errors`, chosen by
//! [`tunebank::failure::FailureKind`] (the library's classification by type): the class is the
//! kind's row of the library's error table (`tunebank::failure::TABLE`, `python_exception`,
//! which also gives the command lines' exit code and the C ABI's status for the kind), with
//! the whole source chain in the message.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use tunebank::failure::FailureKind;

/// A library error that knows its failure kind (each library error type has a `kind()`).
pub trait Classified: std::error::Error {
    /// The kind of failure.
    fn failure_kind(&self) -> FailureKind;
}

macro_rules! classified {
    ($($t:ty),* $(,)?) => {
        $(impl Classified for $t {
            fn failure_kind(&self) -> FailureKind {
                self.kind()
            }
        })*
    };
}

classified!(
    tunebank::job::JobError,
    tunebank::bank::BankError,
    tunebank::inspect::InspectError,
    tunebank::model::ModelError,
    tunebank::tune::TuneError,
    tunebank::tune::gdat::GdatError,
    tunebank::tune::sgat::SgatError,
    tunebank::key::OptionError,
    tunebank::key::ResolveError,
    tunebank::key::KeyError,
);

impl Classified for search_strategies::replay::ReplayError {
    fn failure_kind(&self) -> FailureKind {
        FailureKind::Input
    }
}

impl Classified for search_strategies::space::SpaceError {
    fn failure_kind(&self) -> FailureKind {
        FailureKind::Input
    }
}

/// The `tunebank.errors` class for `kind`: the one the error table names.
fn class_of(py: Python<'_>, kind: FailureKind) -> PyResult<Bound<'_, PyType>> {
    static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    let module = MODULE.get_or_try_init(py, || py.import("tunebank.errors").map(Bound::unbind))?;
    let name = kind.answer().python_exception;
    Ok(module.bind(py).getattr(name)?.cast_into::<PyType>()?)
}

/// The exception of `kind` with `message`.
pub fn raise(kind: FailureKind, message: impl Into<String>) -> PyErr {
    let message = message.into();
    Python::attach(|py| match class_of(py, kind) {
        Ok(class) => PyErr::from_type(class, message),
        Err(e) => e,
    })
}

/// `tunebank.errors.NotExactError`: a strict look-up found an op not tuned at its exact shape
/// (a policy of the call, not a failure of the library, so not in the error table).
pub fn not_exact(message: impl Into<String>) -> PyErr {
    let message = message.into();
    Python::attach(|py| {
        let class = py
            .import("tunebank.errors")
            .and_then(|m| m.getattr("NotExactError"))
            .and_then(|c| Ok(c.cast_into::<PyType>()?));
        match class {
            Ok(class) => PyErr::from_type(class, message),
            Err(e) => e,
        }
    })
}

/// An [`FailureKind::Input`] exception: the request named bad input.
pub fn input(message: impl Into<String>) -> PyErr {
    raise(FailureKind::Input, message)
}

/// `e` as the exception of its failure kind.
pub fn to_py<E: Classified>(e: E) -> PyErr {
    raise(e.failure_kind(), tunebank::failure::error_chain(&e))
}
