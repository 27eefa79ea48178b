//! The GDAT search: a split is a strategy of boundary parameters `b1 … b{max−1}` (end indices
//! in production order; the value `N`, the number of gradients, means "no boundary"), searched
//! with a `search-strategies` strategy through the [`Measure`] trait, so a runner that measures
//! real training steps can replace [`ModelRunner`], the cluster model. The space is the
//! neighbourhood of the model's exact optimum (each of its boundaries moved by up to a window
//! that keeps the space under `SPACE_LIMIT` configurations) plus HCCL's default boundary; the
//! search measures the optimum and the default first.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use tunebank_key::StrategyMap;

use search_strategies::{
    strategies, ConfigId, Driver, Observation, Parameter, SearchContext, Space, StopReason,
    StopRule, Strategy, Value,
};

use tunebank_key::{AttrValue, CubeMath, ImplMode, OpDescriptor, SocSpec};
use tunebank_measure::sim::noisy_samples;
use tunebank_measure::{
    Measure, MeasureError, Outcome, RunnerObjective, TaskSpace, TuningTask, SIM_NOISE_SIGMA,
};

use super::cluster::LinearCost;
use super::split::{is_valid, schedule};
use super::GdatError;

/// Largest neighbourhood space enumerated.
pub(crate) const SPACE_LIMIT: usize = 200_000;

/// The task a GDAT runner is given: op type `GradientSplit`, attributes `gradient_bytes`
/// (production order), `world_size` and `max_segments`.
pub fn task(soc: &SocSpec, bytes: &[u64], world_size: u32, max_segments: usize) -> TuningTask {
    let mut attrs = BTreeMap::new();
    attrs.insert(
        "gradient_bytes".to_owned(),
        AttrValue::Ints(bytes.iter().map(|&b| b as i64).collect()),
    );
    attrs.insert(
        "world_size".to_owned(),
        AttrValue::Int(i64::from(world_size)),
    );
    attrs.insert(
        "max_segments".to_owned(),
        AttrValue::Int(max_segments as i64),
    );
    TuningTask::new(OpDescriptor {
        op_type: "GradientSplit".into(),
        fused_ops: vec![],
        inputs: vec![],
        outputs: vec![],
        attrs,
        impl_mode: ImplMode::HighPerformance,
        cube_math: CubeMath::Native,
        soc: soc.clone(),
        origin: None,
    })
}

/// A split as a strategy map: `b1 … b{max−1}`, unused boundaries `n`.
pub(crate) fn to_strategy(split: &[usize], n: usize, max: usize) -> StrategyMap {
    let inner = &split[..split.len() - 1];
    (1..max)
        .map(|j| {
            let v = inner.get(j - 1).copied().unwrap_or(n);
            (format!("b{j}"), serde_json::Value::from(v as u64))
        })
        .collect()
}

/// The split a strategy map names, if it is a valid one of `n` gradients.
pub fn from_strategy(s: &StrategyMap, n: usize, max: usize) -> Option<Vec<usize>> {
    let mut split = Vec::new();
    for j in 1..max {
        let v = s.get(&format!("b{j}"))?.as_u64()? as usize;
        if v < n {
            split.push(v);
        }
    }
    split.push(n);
    is_valid(&split, n, max).then_some(split)
}

/// The cluster model as a runner: a candidate's "time" is its tail in µs (one sample), or with
/// seeded noise ([`ModelRunner::with_noise`]: the runner `sim:SEED`) that many noisy samples
/// of it.
#[derive(Clone, Debug)]
pub struct ModelRunner {
    bytes: Vec<u64>,
    ready_us: Vec<f64>,
    backward_end_us: f64,
    cost: LinearCost,
    max: usize,
    center: Vec<usize>,
    default: Vec<usize>,
    /// The noise seed and samples per candidate.
    noise: Option<(u64, usize)>,
    /// Measure calls so far (the noise's stream).
    calls: u64,
}

impl ModelRunner {
    /// A runner over this timeline and cost; its space is centred on `center` (the model's
    /// optimum) and holds `default` (HCCL's split).
    pub fn new(
        bytes: Vec<u64>,
        ready_us: Vec<f64>,
        backward_end_us: f64,
        cost: LinearCost,
        max: usize,
        center: Vec<usize>,
        default: Vec<usize>,
    ) -> Self {
        ModelRunner {
            bytes,
            ready_us,
            backward_end_us,
            cost,
            max,
            center,
            default,
            noise: None,
            calls: 0,
        }
    }

    /// Adds the simulator's seeded noise (`sim:SEED`, [`noisy_samples`] with
    /// [`SIM_NOISE_SIGMA`]): `repeats` samples per candidate (at least 1), each the tail slowed
    /// by up to a few times 2 %, drawn from `seed`, the candidate and the calls so far.
    pub fn with_noise(mut self, seed: u64, repeats: u32) -> Self {
        self.noise = Some((seed, repeats.max(1) as usize));
        self
    }

    fn values(&self, window: usize) -> Vec<Vec<i64>> {
        let n = self.bytes.len();
        (1..self.max)
            .map(|j| {
                let mut v = BTreeSet::from([n]);
                if let Some(&c) = self.center.get(j - 1).filter(|&&c| c < n) {
                    for x in c.saturating_sub(window)..=(c + window).min(n) {
                        v.insert(x.max(1));
                    }
                }
                if j == 1 {
                    v.insert(self.default[0]);
                }
                v.into_iter().map(|x| x as i64).collect()
            })
            .collect()
    }
}

impl Measure for ModelRunner {
    fn identity(&self) -> String {
        match self.noise {
            None => "sim:gdat:v1".into(),
            Some((seed, _)) => format!("sim:gdat:v1:noise={SIM_NOISE_SIGMA}:seed={seed}"),
        }
    }

    fn space(&mut self, _task: &TuningTask) -> Result<TaskSpace, MeasureError> {
        let n = self.bytes.len() as i64;
        let mut window = 8;
        let values = loop {
            let v = self.values(window);
            let size: f64 = v.iter().map(|x| x.len() as f64).product();
            if size <= SPACE_LIMIT as f64 || window == 0 {
                break v;
            }
            window -= 1;
        };
        let params: Vec<Parameter> = values
            .iter()
            .enumerate()
            .map(|(j, v)| Parameter::ints(format!("b{}", j + 1), v))
            .collect();
        let restrictions: Vec<String> = (1..params.len())
            .map(|j| format!("b{j} < b{} or b{} == N", j + 1, j + 1))
            .collect();
        let constants = HashMap::from([("N".to_owned(), Value::Int(n))]);
        Ok(TaskSpace::enumerate(params, &restrictions, &constants)?)
    }

    fn default_strategy(&mut self, _task: &TuningTask) -> Result<StrategyMap, MeasureError> {
        Ok(to_strategy(&self.default, self.bytes.len(), self.max))
    }

    fn measure(
        &mut self,
        _task: &TuningTask,
        candidates: &[StrategyMap],
    ) -> Result<Vec<Outcome>, MeasureError> {
        let n = self.bytes.len();
        self.calls += 1;
        Ok(candidates
            .iter()
            .map(|c| match from_strategy(c, n, self.max) {
                Some(split) => {
                    let s = schedule(
                        &self.bytes,
                        &self.ready_us,
                        self.backward_end_us,
                        self.cost,
                        &split,
                    );
                    // The objective must be positive: the tail plus the backward it follows.
                    let us = s.tail_us.max(1e-9);
                    let samples_us = match self.noise {
                        None => vec![us],
                        Some((seed, repeats)) => {
                            noisy_samples(us, (seed, SIM_NOISE_SIGMA), self.calls, c, repeats)
                        }
                    };
                    Outcome::Measurement { samples_us }
                }
                None => Outcome::fail(
                    tunebank_measure::CandidateFailure::BuildFail,
                    "not an ascending split",
                ),
            })
            .collect())
    }
}

/// A strategy that proposes `first` before deferring to `inner` (which is told everything).
struct Seeded {
    first: Vec<ConfigId>,
    inner: Box<dyn Strategy>,
}

impl Strategy for Seeded {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn ask(&mut self, ctx: &SearchContext<'_>, n: usize) -> Vec<ConfigId> {
        self.first.retain(|&id| !ctx.history.is_measured(id));
        if !self.first.is_empty() {
            let k = n.min(self.first.len());
            return self.first.drain(..k).collect();
        }
        self.inner.ask(ctx, n)
    }

    fn tell(&mut self, ctx: &SearchContext<'_>, results: &[Observation]) {
        self.inner.tell(ctx, results);
    }

    fn expected_gain(&mut self, ctx: &SearchContext<'_>, horizon: usize) -> Option<f64> {
        self.inner.expected_gain(ctx, horizon)
    }
}

/// What the search found.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    /// The best measured split.
    pub split: Vec<usize>,
    /// Its measured time (the tail for the model runner), µs.
    pub measured_us: f64,
    /// Candidates measured.
    pub trials: usize,
    /// Size of the space searched.
    pub space_size: usize,
    /// Why the search ended.
    pub stop: StopReason,
}

/// Searches `runner`'s space for `task` with strategy `name` (seeded) for at most `budget`
/// candidates, measuring `seeds` (splits) first, and with `auto_stop` (`--budget auto`) until
/// the strategy's model expects too little from more measurements ([`StopRule::default`]).
/// `n` gradients, at most `max` segments.
#[allow(clippy::too_many_arguments)]
pub fn search(
    runner: &mut dyn Measure,
    task: &TuningTask,
    seeds: &[Vec<usize>],
    n: usize,
    max: usize,
    name: &str,
    seed: u64,
    (budget, auto_stop): (usize, bool),
) -> Result<Found, GdatError> {
    let space = runner.space(task)?;
    let inner = strategies::by_name(name, seed).ok_or_else(|| GdatError::Strategy(name.into()))?;
    let first: Vec<ConfigId> = seeds
        .iter()
        .filter_map(|s| space.config_of(&to_strategy(s, n, max)))
        .collect();
    let mut seeded = Seeded { first, inner };
    let mut objective = RunnerObjective::new(runner, task);
    let mut driver = Driver::new(budget.max(1));
    driver.stop_rule = auto_stop.then(StopRule::default);
    let out = driver.run(&space.space, &mut seeded, &mut objective);
    if let Some(e) = objective.error.take() {
        return Err(e.into());
    }
    let best = out.history.best().ok_or(GdatError::NothingMeasured)?;
    let split =
        from_strategy(&space.strategy(best.id), n, max).ok_or(GdatError::NothingMeasured)?;
    Ok(Found {
        split,
        measured_us: best.value.unwrap_or(f64::INFINITY),
        trials: out.history.len(),
        space_size: space_len(&space.space),
        stop: out.stop,
    })
}

fn space_len(s: &Space) -> usize {
    s.len()
}
