//! `tunebank.Bank` and `tunebank.Hit`: the layered op bank from Python.
//!
//! A `Bank` is one opened [`tunebank::bank::Bank`] (custom layer, built-in layers, the default
//! built-in bank), shared by every Python thread that holds it: look-ups take a read lock and
//! run with the GIL released, `close` takes the write lock, so a close waits for look-ups in
//! flight and later calls raise. A look-up accepts a stored answer only if it was written under
//! this build's key schema version and for the bank's kind, as the C API does; anything else is
//! a rejected hit.

use std::path::PathBuf;
use std::sync::RwLock;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tunebank::bank::AnswerRef;
use tunebank::bank::{Access, Bank as RustBank, BankRequest, Found, HitRef, LayerId};
use tunebank::inspect::nearest::MatchMode;
use tunebank::inspect::{why_resolved, why_templates, LookupAnswer, LookupReport, WhyConfig};
use tunebank::job::JobSpec;
use tunebank::key::{BankKey, Environment, OpTemplate, RecordKind, KEY_SCHEMA_VERSION};

use crate::convert::{atc_args, from_json};
use crate::errors::{self, to_py};
use crate::keys::{options_of, template_of};

/// An opened layered op bank.
#[pyclass(frozen, module = "tunebank")]
pub struct Bank {
    inner: RwLock<Option<RustBank>>,
    soc_version: String,
}

/// One look-up hit: which layer answered, the strategy and its measured times.
#[pyclass(frozen, module = "tunebank")]
pub struct Hit {
    /// The key looked up (64 hex digits).
    #[pyo3(get)]
    key: String,
    /// The answering layer: `"custom"`, `"built-in"`, `"built-in#N"`.
    #[pyo3(get)]
    layer: String,
    strategy_json: String,
    /// The stored strategy's time, µs.
    #[pyo3(get)]
    tuned_us: f64,
    /// The baseline (default strategy) time, µs.
    #[pyo3(get)]
    baseline_us: f64,
    /// The strategy is the runner's default, confirmed by a finished search.
    #[pyo3(get)]
    default_confirmed: bool,
    /// Lower layers that also hold the key and were shadowed by `layer`.
    #[pyo3(get)]
    shadowed: Vec<String>,
    /// Higher layers whose entry was rejected (another key schema version or kind).
    #[pyo3(get)]
    rejected_above: Vec<String>,
}

impl Hit {
    fn from_ref(hit: HitRef<'_>) -> Hit {
        let mut json = Vec::with_capacity(256);
        hit.answer.strategy.write_json(&mut json);
        let names = |layers: &[LayerId]| layers.iter().map(ToString::to_string).collect();
        Hit {
            key: hit.key.to_string(),
            layer: hit.layer.to_string(),
            strategy_json: String::from_utf8(json).expect("the strategy JSON writer emits UTF-8"),
            tuned_us: hit.answer.performance.tuned_us,
            baseline_us: hit.answer.performance.baseline_us,
            default_confirmed: hit.answer.performance.default_confirmed,
            shadowed: names(&hit.shadowed),
            rejected_above: names(&hit.rejected_above),
        }
    }
}

#[pymethods]
impl Hit {
    /// The strategy as a dict (parameter name → value), decoded on each access.
    #[getter]
    fn strategy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::convert::from_json_text(py, &self.strategy_json)
    }

    /// The strategy as compact JSON, parameters in name order (the C API's form).
    #[getter]
    fn strategy_json(&self) -> &str {
        &self.strategy_json
    }

    fn __repr__(&self) -> String {
        format!(
            "Hit(key='{}', layer='{}', tuned_us={}, baseline_us={}, default_confirmed={})",
            self.key,
            self.layer,
            self.tuned_us,
            self.baseline_us,
            if self.default_confirmed {
                "True"
            } else {
                "False"
            }
        )
    }
}

/// The validity check of every look-up: written under this build's key schema and for `kind`.
fn accepts(kind: RecordKind) -> impl Fn(&AnswerRef<'_>) -> bool {
    move |a| a.key_schema_version == KEY_SCHEMA_VERSION && a.kind == kind
}

/// A hex key from Python, or an `InputError` naming it.
fn parse_key(text: &str) -> PyResult<BankKey> {
    text.parse().map_err(|_| {
        errors::input(format!(
            "key {text:?}: expected 64 hexadecimal digits (a bank key as tunebank.key returns it)"
        ))
    })
}

impl Bank {
    /// Runs `f` on the open bank with the GIL released; `ValueError`-class error when closed.
    fn with<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&RustBank) -> PyResult<R> + Send,
    ) -> PyResult<R> {
        py.detach(|| {
            let guard = self.inner.read().unwrap_or_else(|p| p.into_inner());
            match guard.as_ref() {
                Some(bank) => f(bank),
                None => Err(errors::input("the bank is closed")),
            }
        })
    }
}

#[pymethods]
impl Bank {
    /// Opens the op bank for `soc_version`: the custom layer `path` (created unless
    /// `read_only`; `None` = the path AOE's rules choose from TUNE_BANK_PATH /
    /// ASCEND_CACHE_PATH / $HOME), then the `builtin` bank files in order, then the default
    /// built-in bank unless `default_builtin=False`.
    #[staticmethod]
    #[pyo3(signature = (path=None, *, soc_version, builtin=Vec::new(), read_only=false, default_builtin=true))]
    fn open(
        py: Python<'_>,
        path: Option<PathBuf>,
        soc_version: String,
        builtin: Vec<PathBuf>,
        read_only: bool,
        default_builtin: bool,
    ) -> PyResult<Bank> {
        tunebank::key::SocSpec::from_version(&soc_version)
            .map_err(|e| errors::input(format!("soc_version: {e}")))?;
        let bank = py
            .detach(|| {
                let request = BankRequest {
                    custom: path.clone().into(),
                    builtin: builtin.clone(),
                    default_builtin,
                    access: if read_only {
                        Access::ReadOnly
                    } else {
                        Access::Writable
                    },
                    ..BankRequest::new(RecordKind::Op, &soc_version)
                };
                RustBank::open(&Environment::process(), &request)
            })
            .map_err(to_py)?;
        Ok(Bank {
            inner: RwLock::new(Some(bank)),
            soc_version,
        })
    }

    /// The SoC the bank was opened for.
    #[getter]
    fn soc_version(&self) -> &str {
        &self.soc_version
    }

    /// Looks one hex key up, custom layer first: a `Hit`, or `None` on a miss.
    fn lookup(&self, py: Python<'_>, key: &str) -> PyResult<Option<Hit>> {
        let key = parse_key(key)?;
        self.with(py, |bank| {
            match bank
                .lookup_with(&key, accepts(bank.kind()), Hit::from_ref)
                .map_err(to_py)?
            {
                Found::Hit(hit) => Ok(Some(hit)),
                Found::Miss { .. } => Ok(None),
            }
        })
    }

    /// Looks many hex keys up in one read per layer: one `Hit` or `None` per key, in order.
    fn lookup_many(&self, py: Python<'_>, keys: Vec<String>) -> PyResult<Vec<Option<Hit>>> {
        let keys = keys
            .iter()
            .map(|k| parse_key(k))
            .collect::<PyResult<Vec<_>>>()?;
        self.with(py, |bank| {
            let mut hits: Vec<Option<Hit>> = (0..keys.len()).map(|_| None).collect();
            let found = bank
                .lookup_many_with(&keys, accepts(bank.kind()), |i, hit| {
                    hits[i] = Some(Hit::from_ref(hit))
                })
                .map_err(to_py)?;
            for f in found {
                f.map_err(to_py)?;
            }
            Ok(hits)
        })
    }

    /// Explains hits and misses, as `bank-inspect why` does: for `ops` (a list of op-template
    /// dicts) or `model` (an ONNX, Caffe, TensorFlow or MindIR model), under the ATC options
    /// (`soc_version` defaults to the bank's). A model's units are a converter's
    /// ([`tunebank::job::JobSpec::conversion`]): the framework's `input_format` default, and
    /// the graph bank applied first (`graph_bank`, else AOE's resolution of the custom graph
    /// bank plus the built-in one), as `bank-inspect why --model [--graph-bank]`. Returns the
    /// report as a dict (the `--json` form); `str()` of `why_text(...)` is the printed form.
    #[pyo3(signature = (ops=None, *, model=None, graph_bank=None, nearest=3, **atc_options))]
    fn why<'py>(
        &self,
        py: Python<'py>,
        ops: Option<Vec<Bound<'py, PyAny>>>,
        model: Option<PathBuf>,
        graph_bank: Option<PathBuf>,
        nearest: usize,
        atc_options: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let input = WhyInput::of(ops, model, graph_bank)?;
        let (json, _) = self.why_report(py, input, nearest, atc_options)?;
        from_json(py, &json)
    }

    /// Looks `ops` (a list of op-template dicts) up under the ATC options (`soc_version`
    /// defaults to the bank's), as `tunebank lookup --json` does: returns `{"hits", "nearest",
    /// "ops": [row], "total"}`, each row's `result` `hit` (tuned at this exact shape),
    /// `nearest` (not tuned; the nearest tuned shape of the op's family answers, with its
    /// `source` key, `distance`, `tuned_shapes` and a `strategy` that fits this shape) or `miss`
    /// (with `not_served`, why no tuned shape answers). `strict=True` answers exact hits only
    /// and raises `tunebank.errors.NotExactError` naming the ops that are not.
    #[pyo3(signature = (ops, *, strict=false, **atc_options))]
    fn lookup_ops<'py>(
        &self,
        py: Python<'py>,
        ops: Vec<Bound<'py, PyAny>>,
        strict: bool,
        atc_options: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let with_soc = self.with_soc(py, atc_options)?;
        let (options, soc) = options_of(Some(&with_soc))?;
        let templates = ops
            .iter()
            .map(template_of)
            .collect::<PyResult<Vec<OpTemplate>>>()?;
        let mode = if strict {
            MatchMode::Exact
        } else {
            MatchMode::Nearest
        };
        let report = self.with(py, move |bank| {
            LookupReport::run(bank, &templates, &options, &soc, mode).map_err(to_py)
        })?;
        if strict && report.inexact() {
            let names: Vec<String> = report
                .ops
                .iter()
                .filter(|r| !matches!(r.answer, LookupAnswer::Hit { .. }))
                .map(|r| format!("{} (key {})", r.node, r.key))
                .collect();
            return Err(errors::not_exact(format!(
                "strict: {} of {} look-ups not tuned at this exact shape: {}",
                names.len(),
                report.total,
                names.join(", ")
            )));
        }
        let json = serde_json::to_value(&report).map_err(|e| {
            errors::input(format!("lookup_ops: the report does not serialise: {e}"))
        })?;
        from_json(py, &json)
    }

    /// The `why` report as `bank-inspect why` prints it (text).
    #[pyo3(signature = (ops=None, *, model=None, graph_bank=None, nearest=3, **atc_options))]
    fn why_text<'py>(
        &self,
        py: Python<'py>,
        ops: Option<Vec<Bound<'py, PyAny>>>,
        model: Option<PathBuf>,
        graph_bank: Option<PathBuf>,
        nearest: usize,
        atc_options: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<String> {
        let input = WhyInput::of(ops, model, graph_bank)?;
        Ok(self.why_report(py, input, nearest, atc_options)?.1)
    }

    /// Benchmark support: seconds taken by `n` look-ups of `key` in Rust alone (the C API's
    /// look-up: the hit read in place and its strategy written as JSON), for the Python-vs-Rust
    /// comparison of `python/benches/lookup.py`.
    fn _time_rust_lookups(&self, py: Python<'_>, key: &str, n: usize) -> PyResult<f64> {
        let key = parse_key(key)?;
        self.with(py, |bank| {
            let valid = accepts(bank.kind());
            let start = std::time::Instant::now();
            for _ in 0..n {
                let found = bank
                    .lookup_with(&key, &valid, |hit| {
                        let mut json = Vec::with_capacity(256);
                        hit.answer.strategy.write_json(&mut json);
                        json.len()
                    })
                    .map_err(to_py)?;
                std::hint::black_box(found);
            }
            Ok(start.elapsed().as_secs_f64())
        })
    }

    /// Closes the bank: look-ups in flight finish first; later calls raise.
    fn close(&self, py: Python<'_>) {
        py.detach(|| {
            let mut guard = self.inner.write().unwrap_or_else(|p| p.into_inner());
            guard.take();
        });
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close(py);
        false
    }

    fn __repr__(&self) -> String {
        let open = self.inner.read().map(|g| g.is_some()).unwrap_or(false);
        format!(
            "Bank(soc_version='{}', {})",
            self.soc_version,
            if open { "open" } else { "closed" }
        )
    }
}

/// What a `why` explains: op-template dicts, or a model (with the graph bank applied first).
enum WhyInput<'py> {
    Ops(Vec<Bound<'py, PyAny>>),
    Model {
        path: PathBuf,
        graph_bank: Option<PathBuf>,
    },
}

impl<'py> WhyInput<'py> {
    /// Exactly one of `ops` or `model`; `graph_bank` only with `model`.
    fn of(
        ops: Option<Vec<Bound<'py, PyAny>>>,
        model: Option<PathBuf>,
        graph_bank: Option<PathBuf>,
    ) -> PyResult<WhyInput<'py>> {
        match (ops, model, graph_bank) {
            (Some(ops), None, None) => Ok(WhyInput::Ops(ops)),
            (None, Some(path), graph_bank) => Ok(WhyInput::Model { path, graph_bank }),
            (Some(_), None, Some(_)) => Err(errors::input(
                "why: graph_bank applies to a model; give model=PATH with it",
            )),
            _ => Err(errors::input(
                "why: expected exactly one of ops=[...] (op templates) or model=PATH",
            )),
        }
    }
}

impl Bank {
    /// The ATC options with `soc_version` defaulting to the bank's.
    fn with_soc<'py>(
        &self,
        py: Python<'py>,
        atc_options: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        Ok(match atc_options {
            Some(d) if d.contains("soc_version")? => d.copy()?,
            Some(d) => {
                let d = d.copy()?;
                d.set_item("soc_version", &self.soc_version)?;
                d
            }
            None => {
                let d = PyDict::new(py);
                d.set_item("soc_version", &self.soc_version)?;
                d
            }
        })
    }

    /// The why report of the ops or the model: (JSON, text).
    fn why_report(
        &self,
        py: Python<'_>,
        input: WhyInput<'_>,
        nearest: usize,
        atc_options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<(serde_json::Value, String)> {
        let with_soc = self.with_soc(py, atc_options)?;
        let (options, _) = options_of(Some(&with_soc))?;
        let what = match input {
            WhyInput::Ops(list) => Explained::Ops(
                list.iter()
                    .map(template_of)
                    .collect::<PyResult<Vec<OpTemplate>>>()?,
            ),
            WhyInput::Model { path, graph_bank } => {
                let mut atc = atc_args(Some(&with_soc))?;
                atc.push(format!("--model={}", path.display()));
                let mut spec = JobSpec::new(atc);
                spec.graph_bank = graph_bank;
                Explained::Model(Box::new(spec))
            }
        };
        let config = WhyConfig {
            nearest,
            ..WhyConfig::default()
        };
        self.with(py, move |bank| {
            let all = |_: &_| true;
            let report = match what {
                Explained::Ops(t) => {
                    why_templates(bank, &t, &options, &config, &all).map_err(to_py)?
                }
                Explained::Model(spec) => {
                    let conversion = spec.conversion(&Environment::process()).map_err(to_py)?;
                    let resolved: Vec<_> = conversion
                        .plan
                        .units
                        .into_iter()
                        .map(|u| (u.unit.template, u.resolved))
                        .collect();
                    why_resolved(bank, &resolved, &options, &config, &all).map_err(to_py)?
                }
            };
            let json = serde_json::to_value(&report)
                .map_err(|e| errors::input(format!("why: the report does not serialise: {e}")))?;
            Ok((json, report.to_string()))
        })
    }
}

/// A why request read from Python, ready to run without the GIL.
enum Explained {
    Ops(Vec<OpTemplate>),
    Model(Box<JobSpec>),
}

/// Adds `Bank` and `Hit` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Bank>()?;
    m.add_class::<Hit>()?;
    Ok(())
}
