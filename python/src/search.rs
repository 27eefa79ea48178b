//! `tunebank.search`: spaces, the built-in strategies in ask/tell form, Kernel Tuner cache
//! replay, the scorer, and the comparison driver, which runs built-in strategies with the GIL
//! released and strategies written in Python (objects with `ask(n)` / `tell(config, value)`)
//! through the same Rust [`Driver`] loop, so both are held to the same rules: a budget of unique
//! measured configurations, failures included; invalid or repeated proposals discarded.
//!
//! Configurations cross the boundary as dicts `{parameter: value}`; values are Python ints,
//! floats, strings or bools, as Kernel Tuner's `tune_params` lists have them.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};
use search_strategies::bench::{run_one, Table};
use search_strategies::replay::{read_json, ReplaySpace};
use search_strategies::score::{summarise, Baseline, Trace, TraceFile, FRACTION_AT};
use search_strategies::strategies::{by_name, STRATEGY_NAMES};
use search_strategies::{
    ConfigId, Driver, History, Observation, Parameter, SearchContext, Space as RustSpace,
    Strategy as RustStrategy, Value,
};

use crate::errors::{self, to_py};

/// A space: parameters with value lists, the valid configurations, and — for a space replayed
/// from a Kernel Tuner cache — the measured objective of each.
#[pyclass(frozen, module = "tunebank.search")]
pub struct Space {
    inner: Arc<RustSpace>,
    /// `table[id]` for a replayed space.
    table: Option<Arc<Vec<Option<f64>>>>,
}

fn value_of(v: &Bound<'_, PyAny>, param: &str) -> PyResult<Value> {
    if let Ok(b) = v.cast::<PyBool>() {
        Ok(Value::Bool(b.is_true()))
    } else if v.is_instance_of::<PyInt>() {
        Ok(Value::Int(v.extract()?))
    } else if v.is_instance_of::<PyFloat>() {
        Ok(Value::Float(v.extract()?))
    } else if v.is_instance_of::<PyString>() {
        Ok(Value::Str(v.extract()?))
    } else {
        Err(errors::input(format!(
            "parameter {param}: value {} is not an int, float, str or bool",
            v.repr()?
        )))
    }
}

fn py_value<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(f) => f.into_pyobject(py)?.into_any(),
        Value::Str(s) => s.into_pyobject(py)?.into_any(),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
    })
}

/// Whether a value given in Python equals a parameter's value (an int equals the same float).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Int(x), Value::Float(y)) | (Value::Float(y), Value::Int(x)) => *x as f64 == *y,
        _ => a == b,
    }
}

impl Space {
    /// The configuration `id` as a dict.
    fn config_dict<'py>(&self, py: Python<'py>, id: ConfigId) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (p, &i) in self.inner.params().iter().zip(self.inner.config(id)) {
            d.set_item(&p.name, py_value(py, &p.values[usize::from(i)])?)?;
        }
        Ok(d)
    }

    /// The id of a configuration dict, `None` when it is not a valid configuration; an
    /// `InputError` when it names unknown parameters or misses some.
    fn id_of(&self, config: &Bound<'_, PyAny>) -> PyResult<Option<ConfigId>> {
        let d = config.cast::<PyDict>().map_err(|_| {
            errors::input("a configuration is a dict {parameter: value}".to_owned())
        })?;
        let params = self.inner.params();
        if d.len() != params.len() {
            return Err(errors::input(format!(
                "configuration {}: expected exactly the parameters {}",
                d.repr()?,
                params
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let mut indices = Vec::with_capacity(params.len());
        for p in params {
            let Some(v) = d.get_item(&p.name)? else {
                return Err(errors::input(format!(
                    "configuration {}: parameter {} is missing",
                    d.repr()?,
                    p.name
                )));
            };
            let v = value_of(&v, &p.name)?;
            match p.values.iter().position(|x| same(x, &v)) {
                Some(i) => indices.push(i as u16),
                None => return Ok(None),
            }
        }
        Ok(self.inner.id_of(&indices))
    }
}

#[pymethods]
impl Space {
    /// A space from `params` (name → list of values, in order) and Kernel Tuner restriction
    /// strings (`"block_size_x * block_size_y <= 1024"`), with optional named constants.
    #[new]
    #[pyo3(signature = (params, restrictions=Vec::new(), constants=None))]
    fn new(
        py: Python<'_>,
        params: &Bound<'_, PyDict>,
        restrictions: Vec<String>,
        constants: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Space> {
        let mut ps = Vec::with_capacity(params.len());
        for (name, values) in params.iter() {
            let name: String = name.extract()?;
            let list: Vec<Bound<'_, PyAny>> = values.extract().map_err(|_| {
                errors::input(format!("parameter {name}: expected a list of values"))
            })?;
            if list.is_empty() {
                return Err(errors::input(format!("parameter {name}: no values")));
            }
            let vals = list
                .iter()
                .map(|v| value_of(v, &name))
                .collect::<PyResult<Vec<_>>>()?;
            ps.push(Parameter::new(name, vals));
        }
        let mut consts = HashMap::new();
        if let Some(c) = constants {
            for (k, v) in c.iter() {
                let k: String = k.extract()?;
                let v = value_of(&v, &k)?;
                consts.insert(k, v);
            }
        }
        let space = py
            .detach(|| RustSpace::enumerate(ps, &restrictions, &consts))
            .map_err(to_py)?;
        Ok(Space {
            inner: Arc::new(space),
            table: None,
        })
    }

    /// The space of a Kernel Tuner cache file (`.json` or `.json.gz`), with its measurements:
    /// the valid set is `tune_params` filtered by the restrictions found beside the cache, else
    /// the cache's configurations (as `search-bench` replays it).
    #[staticmethod]
    fn from_cache(py: Python<'_>, path: PathBuf) -> PyResult<Space> {
        let r = py.detach(|| ReplaySpace::load_auto(&path)).map_err(to_py)?;
        Ok(Space {
            inner: Arc::new(r.space),
            table: Some(Arc::new(r.table)),
        })
    }

    /// Number of valid configurations.
    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// Parameter names, in order.
    #[getter]
    fn names(&self) -> Vec<String> {
        self.inner.params().iter().map(|p| p.name.clone()).collect()
    }

    /// The `i`-th valid configuration as a dict.
    fn config<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyDict>> {
        if i >= self.inner.len() {
            return Err(errors::input(format!(
                "configuration {i}: the space has {} configurations",
                self.inner.len()
            )));
        }
        self.config_dict(py, i as ConfigId)
    }

    /// The index of a configuration dict among the valid ones, `None` if it is not valid.
    fn index(&self, config: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
        Ok(self.id_of(config)?.map(|i| i as usize))
    }

    /// For a replayed space: the measured objective of a configuration (`None` for a failed
    /// one). An `InputError` for a space without measurements or an invalid configuration.
    fn measure(&self, config: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
        let table = self.table.as_ref().ok_or_else(|| {
            errors::input("measure: this space has no measurements (use Space.from_cache)")
        })?;
        let id = self.id_of(config)?.ok_or_else(|| {
            errors::input("measure: not a valid configuration of this space".to_owned())
        })?;
        Ok(table[id as usize])
    }

    /// For a replayed space: the best measured objective.
    #[getter]
    fn optimum(&self) -> Option<f64> {
        self.table
            .as_ref()?
            .iter()
            .flatten()
            .copied()
            .fold(None, |m, x| Some(m.map_or(x, |m: f64| m.min(x))))
    }
}

/// A built-in strategy in ask/tell form over one space, with its own history: `ask(n)`
/// proposes up to `n` unmeasured configurations, `tell(config, value)` records a measurement
/// (`None` = failed). Same seed and same calls: same proposals.
#[pyclass(unsendable, module = "tunebank.search")]
pub struct Strategy {
    inner: Box<dyn RustStrategy>,
    space: Py<Space>,
    history: History,
}

#[pymethods]
impl Strategy {
    /// The strategy `name` (see `strategies()`) over `space`, seeded.
    #[new]
    #[pyo3(signature = (name, space, seed=0))]
    fn new(name: &str, space: Py<Space>, seed: u64, py: Python<'_>) -> PyResult<Strategy> {
        let inner = by_name(name, seed).ok_or_else(|| {
            errors::input(format!(
                "strategy {name:?}: expected one of {}",
                STRATEGY_NAMES.join(", ")
            ))
        })?;
        let n = space.bind(py).get().inner.len();
        Ok(Strategy {
            inner,
            space,
            history: History::new(n),
        })
    }

    /// The strategy's name.
    #[getter]
    fn name(&self) -> String {
        self.inner.name().to_owned()
    }

    /// Up to `n` unmeasured configurations to measure next (fewer only when the space is
    /// exhausted).
    #[pyo3(signature = (n=1))]
    fn ask<'py>(&mut self, py: Python<'py>, n: usize) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let space = self.space.bind(py).get();
        let ctx = SearchContext {
            space: &space.inner,
            history: &self.history,
        };
        let ids = self.inner.ask(&ctx, n);
        ids.into_iter()
            .take(n)
            .map(|id| space.config_dict(py, id))
            .collect()
    }

    /// Records the measurement of `config`: its objective (lower is better) or `None` for a
    /// failure. A configuration not in the space or already told is an `InputError`.
    #[pyo3(signature = (config, value))]
    fn tell(
        &mut self,
        py: Python<'_>,
        config: &Bound<'_, PyAny>,
        value: Option<f64>,
    ) -> PyResult<()> {
        let space = self.space.bind(py).get();
        let id = space.id_of(config)?.ok_or_else(|| {
            errors::input(format!(
                "tell: {} is not a valid configuration of the space",
                config.repr().map(|r| r.to_string()).unwrap_or_default()
            ))
        })?;
        if self.history.is_measured(id) {
            return Err(errors::input(format!(
                "tell: {} was already told",
                config.repr()?
            )));
        }
        let obs = Observation {
            id,
            value: value.filter(|v| v.is_finite()),
        };
        self.history.record(obs);
        let ctx = SearchContext {
            space: &space.inner,
            history: &self.history,
        };
        self.inner.tell(&ctx, &[obs]);
        Ok(())
    }

    /// What the strategy's model expects the next `horizon` measurements to gain: the sum of
    /// the `horizon` largest expected improvements of the best value, as a fraction of it
    /// (0.01: 1 % lower). `None` when the strategy has no model (random, exhaustive, the
    /// genetic and annealing searches) or too little data for one. Asking it changes nothing
    /// the strategy proposes next. `tune --budget auto` stops on this estimate.
    #[pyo3(signature = (horizon=20))]
    fn expected_gain(&mut self, py: Python<'_>, horizon: usize) -> PyResult<Option<f64>> {
        if horizon == 0 {
            return Err(errors::input(
                "expected_gain: horizon 0; expected at least 1 measurement",
            ));
        }
        let space = self.space.bind(py).get();
        let ctx = SearchContext {
            space: &space.inner,
            history: &self.history,
        };
        Ok(self.inner.expected_gain(&ctx, horizon))
    }

    /// Configurations told so far.
    #[getter]
    fn evaluations(&self) -> usize {
        self.history.len()
    }

    /// The best told configuration and its value, or `None` before the first success.
    #[getter]
    fn best<'py>(&self, py: Python<'py>) -> PyResult<Option<(Bound<'py, PyDict>, f64)>> {
        let space = self.space.bind(py).get();
        match self.history.best() {
            Some(Observation { id, value: Some(v) }) => Ok(Some((space.config_dict(py, id)?, v))),
            _ => Ok(None),
        }
    }
}

/// A Python strategy object (`ask(n) -> list[dict]`, `tell(config, value)`) as a Rust
/// strategy, for the [`Driver`]. The first Python exception stops the search (an empty ask)
/// and is kept to be raised after the run.
struct PyStrategy<'a, 'py> {
    obj: Bound<'py, PyAny>,
    name: String,
    space: &'a Space,
    error: Option<PyErr>,
}

impl PyStrategy<'_, '_> {
    fn try_ask(&self, n: usize) -> PyResult<Vec<ConfigId>> {
        let proposals = self.obj.call_method1("ask", (n,))?;
        let mut ids = Vec::new();
        for c in proposals.try_iter()? {
            // An invalid proposal costs nothing (Kernel Tuner's simulation rule): the driver
            // sees only valid ids; it discards repeats itself.
            if let Some(id) = self.space.id_of(&c?)? {
                ids.push(id);
            }
        }
        Ok(ids)
    }
}

impl RustStrategy for PyStrategy<'_, '_> {
    fn name(&self) -> &str {
        &self.name
    }

    fn ask(&mut self, _ctx: &SearchContext<'_>, n: usize) -> Vec<ConfigId> {
        if self.error.is_some() {
            return Vec::new();
        }
        match self.try_ask(n) {
            Ok(ids) => ids,
            Err(e) => {
                self.error = Some(e);
                Vec::new()
            }
        }
    }

    fn tell(&mut self, _ctx: &SearchContext<'_>, results: &[Observation]) {
        let py = self.obj.py();
        for r in results {
            if self.error.is_some() {
                return;
            }
            let told = self
                .space
                .config_dict(py, r.id)
                .and_then(|c| self.obj.call_method1("tell", (c, r.value)));
            if let Err(e) = told {
                self.error = Some(e);
            }
        }
    }
}

/// One strategy of a comparison: a built-in name or a Python factory `factory(space, seed)`.
enum Contender<'py> {
    BuiltIn(String),
    Python {
        name: String,
        factory: Bound<'py, PyAny>,
    },
}

impl<'py> Contender<'py> {
    fn of(s: &Bound<'py, PyAny>) -> PyResult<Contender<'py>> {
        if let Ok(name) = s.extract::<String>() {
            if !STRATEGY_NAMES.contains(&name.as_str()) {
                return Err(errors::input(format!(
                    "strategy {name:?}: expected one of {} or a Python class/factory taking (space, seed)",
                    STRATEGY_NAMES.join(", ")
                )));
            }
            return Ok(Contender::BuiltIn(name));
        }
        if !s.is_callable() {
            return Err(errors::input(format!(
                "strategy {}: expected a built-in name or a callable (space, seed) -> object with ask/tell",
                s.repr()?
            )));
        }
        let name: String = match s.getattr("name") {
            Ok(n) if n.is_instance_of::<PyString>() => n.extract()?,
            _ => s.getattr("__name__")?.extract()?,
        };
        Ok(Contender::Python {
            name: format!("py:{name}"),
            factory: s.clone(),
        })
    }

    fn name(&self) -> &str {
        match self {
            Contender::BuiltIn(n) => n,
            Contender::Python { name, .. } => name,
        }
    }

    /// One run of this strategy with `seed` on `space` for `budget` evaluations.
    fn run(
        &self,
        py: Python<'py>,
        space: &Bound<'py, Space>,
        replay: &ReplaySpace,
        seed: u64,
        budget: usize,
    ) -> PyResult<Trace> {
        match self {
            Contender::BuiltIn(name) => Ok(py
                .detach(|| run_one(replay, name, seed, budget))
                .unwrap_or_default()),
            Contender::Python { name, factory } => {
                let obj = factory.call1((space.clone(), seed))?;
                let mut strategy = PyStrategy {
                    obj,
                    name: name.clone(),
                    space: space.get(),
                    error: None,
                };
                let mut objective = replay.objective();
                let out = Driver::new(budget).run(&replay.space, &mut strategy, &mut objective);
                if let Some(e) = strategy.error {
                    return Err(e);
                }
                Ok(out.history.observations().iter().map(|o| o.value).collect())
            }
        }
    }
}

/// The result of `compare`: per space and strategy the standardised score and the fraction of
/// the optimum at 20/25/50/100/200 evaluations, the means over spaces, and the traces.
#[pyclass(frozen, module = "tunebank.search")]
pub struct Comparison {
    table: Table,
    /// Traces: space → strategy → one list of objectives (None = failure) per seed.
    #[pyo3(get)]
    traces: Py<PyAny>,
}

fn summary_dict<'py>(
    py: Python<'py>,
    s: &search_strategies::score::Summary,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("score", s.score)?;
    d.set_item("runs", s.runs)?;
    for (k, f) in FRACTION_AT.iter().zip(s.fractions) {
        d.set_item(format!("frac@{k}"), f)?;
    }
    Ok(d)
}

#[pymethods]
impl Comparison {
    /// One dict per (space, strategy): `space`, `strategy`, `score`, `runs`, `frac@K`.
    #[getter]
    fn rows<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.table
            .rows
            .iter()
            .map(|(space, strategy, s)| {
                let d = summary_dict(py, s)?;
                d.set_item("space", space)?;
                d.set_item("strategy", strategy)?;
                Ok(d)
            })
            .collect()
    }

    /// Mean over spaces per strategy (strategies present on every space), best first.
    #[getter]
    fn means<'py>(&self, py: Python<'py>) -> PyResult<Vec<(String, Bound<'py, PyDict>)>> {
        self.table
            .means()
            .iter()
            .map(|(name, s)| Ok((name.clone(), summary_dict(py, s)?)))
            .collect()
    }

    /// The table as `search-bench` prints it.
    fn __str__(&self) -> String {
        self.table.render()
    }
}

/// Replays every strategy (built-in names, or Python factories `f(space, seed)` returning an
/// object with `ask(n)` and `tell(config, value)`) on every Kernel Tuner cache for `seeds`
/// seeds (`seed_base`, `seed_base + 1`, …) and `budget` evaluations, through the same driver as
/// `search-bench`; `peers` are trace files of other tuners (Kernel Tuner's, Optuna's), scored
/// on the same baselines and labelled `<label>:<strategy>` (label: the file name's stem).
#[pyfunction]
#[pyo3(signature = (caches, strategies, *, seeds=10, seed_base=0, budget=200, peers=Vec::new()))]
fn compare(
    py: Python<'_>,
    caches: Vec<PathBuf>,
    strategies: Vec<Bound<'_, PyAny>>,
    seeds: u64,
    seed_base: u64,
    budget: usize,
    peers: Vec<PathBuf>,
) -> PyResult<Comparison> {
    if budget == 0 {
        return Err(errors::input("budget 0: expected at least one evaluation"));
    }
    let contenders = strategies
        .iter()
        .map(Contender::of)
        .collect::<PyResult<Vec<_>>>()?;
    let mut file: TraceFile = BTreeMap::new();
    let mut baselines = Vec::new();
    for path in &caches {
        let replay = py.detach(|| ReplaySpace::load_auto(path)).map_err(to_py)?;
        let key = path.display().to_string();
        let space = Bound::new(
            py,
            Space {
                inner: Arc::new(replay.space.clone()),
                table: Some(Arc::new(replay.table.clone())),
            },
        )?;
        for c in &contenders {
            let mut runs = Vec::new();
            for seed in seed_base..seed_base + seeds {
                runs.push(c.run(py, &space, &replay, seed, budget)?);
            }
            file.entry(key.clone())
                .or_default()
                .insert(c.name().to_owned(), runs);
        }
        if let Some(b) = Baseline::new(&replay.table, budget) {
            baselines.push((key, b));
        }
    }
    let mut table = Table::score(&file, &baselines, budget, "");
    for p in &peers {
        let json = read_json(p).map_err(to_py)?;
        let other: TraceFile = serde_json::from_value(json).map_err(|e| {
            errors::input(format!(
                "{}: not a trace file (space → strategy → list of traces): {e}",
                p.display()
            ))
        })?;
        let stem = p
            .file_name()
            .and_then(|s| s.to_str())
            .and_then(|s| s.split('.').next())
            .unwrap_or("peer")
            .to_owned();
        table
            .rows
            .extend(Table::score(&other, &baselines, budget, &format!("{stem}:")).rows);
    }
    let traces =
        crate::convert::from_json(py, &serde_json::to_value(&file).expect("traces serialise"))?
            .unbind();
    Ok(Comparison { table, traces })
}

/// The standardised score and fractions of the optimum of `traces` (one list of objectives
/// per run, `None` = failure) on the space of Kernel Tuner cache `cache`, over `budget`.
#[pyfunction]
#[pyo3(signature = (traces, cache, budget=200))]
fn score<'py>(
    py: Python<'py>,
    traces: Vec<Vec<Option<f64>>>,
    cache: PathBuf,
    budget: usize,
) -> PyResult<Bound<'py, PyDict>> {
    if budget == 0 {
        return Err(errors::input("budget 0: expected at least one evaluation"));
    }
    let replay = py
        .detach(|| ReplaySpace::load_auto(&cache))
        .map_err(to_py)?;
    let base = Baseline::new(&replay.table, budget).ok_or_else(|| {
        errors::input(format!(
            "{}: no successful measurement to score against",
            cache.display()
        ))
    })?;
    summary_dict(py, &summarise(&base, &traces, budget))
}

/// The names of the built-in strategies, the default first.
#[pyfunction]
fn strategies() -> Vec<&'static str> {
    STRATEGY_NAMES.to_vec()
}

/// Adds the search names to the module (re-exported by `tunebank.search`).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Space>()?;
    m.add_class::<Strategy>()?;
    m.add_class::<Comparison>()?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(score, m)?)?;
    m.add_function(wrap_pyfunction!(strategies, m)?)?;
    Ok(())
}
