//! One subgraph's SGAT search, shared by the driver ([`super::run_sgat`]) and by callers that
//! want the simulator's own best strategy for a subgraph without a bank (`calibrate
//! --aoe-graph`): [`search_subgraph`] runs a `search-strategies` strategy over an
//! [`SgatSpace`], timing each candidate with the subgraph model; [`sgat_best`] is the search the
//! driver would run with given settings (strategy, per-subgraph budget, seed), or every
//! configuration when the space is no larger than the budget.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use search_strategies::{strategies::by_name, Driver, StopReason, StopRule, Strategy};

use super::{task_seed, SgatSpace, SpaceBuildError};
use crate::tune::pool::Cancellable;
use crate::tune::TuneSettings;
use tunebank_failure::FailureKind;
use tunebank_key::{GraphDescriptor, KeyError};
use tunebank_measure::sim::graph::{GraphModelError, GraphOps, SgatStrategy};
use tunebank_measure::sim::SocModel;

/// What one search found.
#[derive(Clone, Debug)]
pub struct SubgraphSearch {
    /// The best strategy measured and its time (µs), if any candidate could be timed.
    pub best: Option<(SgatStrategy, f64)>,
    /// Candidates measured.
    pub trials: u64,
    /// Why the search ended.
    pub stop: StopReason,
    /// Time spent inside the subgraph model.
    pub in_model: Duration,
}

/// Searches `space` (of the subgraph prepared as `ops`) with `strategy` for at most `budget`
/// candidates, `batch` per round, within `time_limit`, and with `auto_stop` (`--budget auto`)
/// until the strategy's model expects too little from more measurements
/// ([`StopRule::default`], [`StopReason::Converged`]); stops asking when `cancel` is set.
/// Deterministic for a deterministic strategy and no time limit.
pub fn search_subgraph(
    space: &SgatSpace,
    ops: &GraphOps,
    strategy: Box<dyn Strategy>,
    (budget, batch, time_limit, auto_stop): (u64, usize, Option<Duration>, bool),
    cancel: &AtomicBool,
) -> SubgraphSearch {
    let mut strategy = Cancellable {
        inner: strategy,
        cancel,
    };
    let mut driver = Driver::new(usize::try_from(budget).unwrap_or(usize::MAX));
    driver.batch = batch.max(1);
    driver.time_limit = time_limit;
    driver.stop_rule = auto_stop.then(StopRule::default);
    let mut in_model = Duration::ZERO;
    let mut objective = |_: &search_strategies::Space, id| {
        let s = space.strategy(id);
        let t0 = Instant::now();
        let r = ops.time(&s).ok().map(|g| g.total_us);
        in_model += t0.elapsed();
        r
    };
    let res = driver.run(&space.space, &mut strategy, &mut objective);
    let best = res
        .history
        .best()
        .and_then(|o| Some((space.strategy(o.id), o.value?)));
    SubgraphSearch {
        best,
        trials: res.history.len() as u64,
        stop: res.stop,
        in_model,
    }
}

/// Why `sgat_best` could not search a subgraph.
#[derive(Debug, thiserror::Error)]
pub enum SgatBestError {
    /// The subgraph has no key (its search seed).
    #[error(transparent)]
    Key(#[from] KeyError),
    /// The simulator has no model of the subgraph's SoC.
    #[error(transparent)]
    Model(#[from] GraphModelError),
    /// The space could not be built.
    #[error(transparent)]
    Space(#[from] SpaceBuildError),
    /// The settings name no known search strategy.
    #[error("unknown search strategy {0}")]
    Strategy(String),
    /// No candidate could be timed.
    #[error("no candidate of the SGAT space could be timed")]
    NoCandidate,
}

/// The simulator's own SGAT best for `g` (prepared as `ops`): the search `run_sgat` runs with
/// `settings` (strategy, per-subgraph budget `trials_per_op`, batch, the seed mixed with the
/// subgraph key), or every configuration when the space has no more than `trials_per_op`.
#[derive(Clone, Debug)]
pub struct SgatBest {
    /// The best strategy's time, µs.
    pub us: f64,
    /// Candidates timed.
    pub candidates: u64,
    /// Whether every configuration of the space was timed.
    pub exhaustive: bool,
}

/// See [`SgatBest`].
pub fn sgat_best(
    g: &GraphDescriptor,
    ops: &GraphOps,
    settings: &TuneSettings,
) -> Result<SgatBest, SgatBestError> {
    let soc = SocModel::for_version(&g.soc.version)
        .ok_or_else(|| GraphModelError::Soc(g.soc.version.clone()))?;
    let space = SgatSpace::build(g, ops, soc)?;
    let budget = settings.trials_per_op as u64;
    if space.len() as u64 <= budget {
        let best = (0..space.len() as u32)
            .filter_map(|id| {
                let s = space.strategy(id);
                ops.time(&s).ok().map(|t| (s, t.total_us))
            })
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .ok_or(SgatBestError::NoCandidate)?;
        return Ok(SgatBest {
            us: best.1,
            candidates: space.len() as u64,
            exhaustive: true,
        });
    }
    let seed = task_seed(settings.seed, &g.key()?);
    let strategy = by_name(&settings.strategy, seed)
        .ok_or_else(|| SgatBestError::Strategy(settings.strategy.clone()))?;
    let found = search_subgraph(
        &space,
        ops,
        strategy,
        (budget, settings.round_width(0, 1), None, settings.auto_stop),
        &AtomicBool::new(false),
    );
    let (_, us) = found.best.ok_or(SgatBestError::NoCandidate)?;
    Ok(SgatBest {
        us,
        candidates: found.trials,
        exhaustive: matches!(found.stop, StopReason::SpaceExhausted),
    })
}

impl SgatBestError {
    /// The kind of the key, model or space error it wraps; an unknown strategy and a subgraph
    /// none of whose candidates can be timed are the request's.
    pub fn kind(&self) -> FailureKind {
        match self {
            SgatBestError::Key(e) => e.kind(),
            SgatBestError::Model(e) => e.kind(),
            SgatBestError::Space(e) => e.kind(),
            SgatBestError::Strategy(_) | SgatBestError::NoCandidate => FailureKind::Input,
        }
    }
}
