//! One GDAT job: the plan (timeline, cluster, gradient key) and the run (look-up; on a miss or
//! under `REPEAT_TUNE` a search from the exact optimum and HCCL's default; the best re-measured
//! against the baseline — the bank's split on a hit, else HCCL's default — side by side; the
//! two times judged by the drivers' one win rule as exact times ([`WIN_RULE`]: more than 1 %
//! faster); then the drivers' one decision function, exactly as an op's tuning: a win written
//! under the bank-write policy, a miss whose full search found none storing the default as
//! confirmed). The outcome's [`Decision`] is the drivers' shared one. A job reads the drivers'
//! one [`TuneSettings`] and measures on the runner they name ([`GdatPlan::runner`]).

use tunebank_key::StrategyMap;

use serde::Serialize;

use crate::tune::{decide, Decision, Findings, GainBound, Offer, SearchEnd, TuneSettings, WinRule};
use tunebank_bank::policy::WritePolicy;
use tunebank_bank::{Bank, Descriptor, Lookup, Provenance, Record, Timing};
use tunebank_key::{BankKey, GradientDescriptor, GradientTopology, ResolvedOptions, SocSpec};
use tunebank_measure::{Measure, RunnerSpec, TimingSettings};
use tunebank_model::Model;

use super::cluster::{Cluster, LinearCost};
use super::search::{self, ModelRunner};
use super::split::{hccl_default, optimum, schedule, to_sizes, Schedule, MAX_SEGMENTS};
use super::timeline::{model_structure, resolved_units, timeline};
use super::{GdatError, Timeline};
use search_strategies::StopReason;

/// A tuned split must beat its baseline by more than this fraction to be written: the
/// `min_gain` of [`WIN_RULE`].
pub const MIN_IMPROVEMENT: f64 = 0.01;

/// GDAT's win rule: the one rule of every driver, judging the side-by-side times of the best
/// split and the baseline as exact times ([`WinRule::judge_deterministic`]), with a gain of
/// more than [`MIN_IMPROVEMENT`] (exclusive: a split exactly 1 % faster is not written, as
/// GDAT has always decided). `alpha` is not used by exact times. A runner given to [`run_job`]
/// instead of the cluster model is judged the same way, on the medians of its one side-by-side
/// measurement: GDAT measures no rounds.
pub const WIN_RULE: WinRule = WinRule {
    min_gain: MIN_IMPROVEMENT,
    alpha: 0.01,
    gain_bound: GainBound::Exclusive,
};

/// Everything a GDAT job needs before it opens the bank.
#[derive(Clone, Debug)]
pub struct GdatPlan {
    /// The model's backward timeline.
    pub timeline: Timeline,
    /// The topology and links.
    pub cluster: Cluster,
    /// The all-reduce model reduced to its linear form for this topology.
    pub cost: LinearCost,
    /// At most this many segments.
    pub max_segments: usize,
    /// The gradient key's preimage.
    pub descriptor: GradientDescriptor,
    /// The gradient key.
    pub key: BankKey,
}

/// One split and what it gives.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scenario {
    /// End indices in production order.
    pub split: Vec<usize>,
    /// Its schedule and tail.
    pub schedule: Schedule,
    /// Forward + backward + tail, µs.
    pub step_us: f64,
}

/// The result of a job.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GdatOutcome {
    /// What happened in the bank (AOE's counting: hit = update + reserved): add (a miss, the
    /// tuned split won and was added), update (a hit re-tuned under `REPEAT_TUNE` or a
    /// confirmed default searched again, the tuned split won and replaced the entry), reserved
    /// (a hit whose entry was kept: reused, or not beaten) or unsatisfied (a miss without a win;
    /// HCCL's default was stored as confirmed). A winner the bank-write policy refused (another
    /// process stored a better record since the look-up) is reserved or unsatisfied.
    /// Serialised as `add`, `update`, `reserved`, `unsatisfied`.
    pub decision: Decision,
    /// A full search found no win and the bank stored the baseline as a confirmed default.
    pub default_confirmed: bool,
    /// Whether a search ran (false: a hit reused).
    pub searched: bool,
    /// The split the job ends with (the bank's answer).
    pub tuned: Scenario,
    /// HCCL's default split.
    pub default: Scenario,
    /// The model's exact optimum.
    pub optimum: Scenario,
    /// One segment.
    pub one_segment: Scenario,
    /// One segment per gradient (beyond HCCL's limit; a reference).
    pub per_gradient: Scenario,
    /// Candidates measured.
    pub trials: usize,
    /// Splits in the searched space.
    pub space_size: usize,
    /// The search stopped before its budget by `--budget auto`'s rule: the model expected
    /// too little from more measurements.
    pub converged: bool,
    /// The runner's identity.
    pub runner: String,
}

/// Plans a job: the timeline of `model` under `options` on `soc` (backward problems at
/// `op_bank`'s strategies where it has them), the cluster's linear cost, and the gradient key.
pub fn plan_job(
    model: &Model,
    options: &ResolvedOptions,
    soc: &SocSpec,
    cluster: Cluster,
    max_segments: usize,
    op_bank: Option<&Bank>,
) -> Result<GdatPlan, GdatError> {
    if !(1..=MAX_SEGMENTS).contains(&max_segments) {
        return Err(GdatError::Segments(max_segments));
    }
    let units = resolved_units(model, options, soc)?;
    let timeline = timeline(model, &units, soc, op_bank)?;
    let structure = model_structure(model, &units, options, soc).key()?;
    let descriptor = GradientDescriptor {
        soc: soc.clone(),
        model_structure: structure,
        gradient_bytes: timeline.bytes(),
        world_size: cluster.rank_size,
        topology: Some(GradientTopology {
            devices_per_server: cluster.devices_per_server,
            intra_gbps: cluster.intra.bandwidth_gbps,
            intra_latency_us: cluster.intra.latency_us,
            inter_gbps: cluster.inter.bandwidth_gbps,
            inter_latency_us: cluster.inter.latency_us,
            per_segment_us: cluster.per_segment_us,
        }),
    };
    let key = descriptor.key()?;
    Ok(GdatPlan {
        cost: cluster.linear(),
        timeline,
        cluster,
        max_segments,
        descriptor,
        key,
    })
}

impl GdatPlan {
    /// The scenario of `split` under the model.
    pub fn scenario(&self, split: &[usize]) -> Scenario {
        let t = &self.timeline;
        let ready: Vec<f64> = t.gradients.iter().map(|g| g.ready_us).collect();
        let s = schedule(&t.bytes(), &ready, t.backward_end_us, self.cost, split);
        Scenario {
            split: split.to_vec(),
            step_us: t.forward_us + t.backward_end_us + s.tail_us,
            schedule: s,
        }
    }

    /// The model's exact optimum for at most `max_segments` segments.
    pub fn optimum(&self) -> Vec<usize> {
        let ready: Vec<f64> = self.timeline.gradients.iter().map(|g| g.ready_us).collect();
        optimum(&self.timeline.bytes(), &ready, self.cost, self.max_segments)
    }

    /// HCCL's default split of this model's gradients.
    pub fn default_split(&self) -> Vec<usize> {
        hccl_default(&self.timeline.bytes())
    }

    /// The runner `spec` names for this plan, timing candidates by `timing`: `sim` is the
    /// cluster model ([`GdatPlan::model_runner`]), `sim:SEED` that model with the simulator's
    /// seeded noise (`timing.repeats` samples per candidate); any other runner is the one
    /// `spec` builds (an `exec:` runner is given [`search::task`]'s `GradientSplit` task, and
    /// its space and times are its own).
    pub fn runner(
        &self,
        spec: &RunnerSpec,
        timing: TimingSettings,
    ) -> Result<Box<dyn Measure + Send>, GdatError> {
        Ok(match spec {
            RunnerSpec::Sim { noise_seed: None } => Box::new(self.model_runner()),
            RunnerSpec::Sim {
                noise_seed: Some(seed),
            } => Box::new(self.model_runner().with_noise(*seed, timing.repeats)),
            other => other.build(timing)?,
        })
    }

    /// The cluster model as a runner, its space centred on the optimum.
    pub fn model_runner(&self) -> ModelRunner {
        let t = &self.timeline;
        ModelRunner::new(
            t.bytes(),
            t.gradients.iter().map(|g| g.ready_us).collect(),
            t.backward_end_us,
            self.cost,
            self.max_segments,
            self.optimum(),
            self.default_split(),
        )
    }

    /// The bank strategy of `split`: `split` (end indices, production order), `split_by_size`
    /// (percentages), `segments`.
    pub fn strategy(&self, split: &[usize]) -> StrategyMap {
        let mut s = StrategyMap::new();
        s.insert("segments".into(), serde_json::json!(split.len()));
        s.insert("split".into(), serde_json::json!(split));
        s.insert(
            "split_by_size".into(),
            serde_json::json!(to_sizes(&self.timeline.bytes(), split)),
        );
        s
    }

    /// The split a stored strategy names, if valid for this plan.
    pub(crate) fn split_of(&self, s: &StrategyMap) -> Option<Vec<usize>> {
        let v: Vec<usize> = serde_json::from_value(s.get("split")?.clone()).ok()?;
        let n = self.timeline.gradients.len();
        super::split::is_valid(&v, n, self.max_segments).then_some(v)
    }
}

/// The strategy the gradient bank holds for the plan's key (if it is a split of this plan),
/// and whether it is a default confirmed by a smaller budget than `settings.trials_per_op`, which is
/// searched again, as for ops and subgraphs.
fn stored_split(
    plan: &GdatPlan,
    bank: &Bank,
    settings: &TuneSettings,
) -> Result<(Option<StrategyMap>, bool), GdatError> {
    Ok(match bank.lookup(&plan.key)? {
        Lookup::Hit(hit) => {
            let p = &hit.answer.performance;
            let reconfirm = p.default_confirmed
                && p.confirmed_budget.unwrap_or(0) < settings.trials_per_op as u64;
            (
                Some(hit.answer.strategy.clone()).filter(|s| plan.split_of(s).is_some()),
                reconfirm,
            )
        }
        Lookup::Miss { .. } => (None, false),
    })
}

impl GdatPlan {
    /// The outcome of a job that decided `decision` with `split` as the tuned split, after
    /// `searched` (trials, space size) on `runner`; the other scenarios are the plan's.
    fn outcome(
        &self,
        decision: Decision,
        searched: bool,
        split: &[usize],
        (trials, space_size): (usize, usize),
        runner: &str,
    ) -> GdatOutcome {
        let n = self.timeline.gradients.len();
        GdatOutcome {
            decision,
            default_confirmed: false,
            searched,
            tuned: self.scenario(split),
            default: self.scenario(&self.default_split()),
            optimum: self.scenario(&self.optimum()),
            one_segment: self.scenario(&[n]),
            per_gradient: self.scenario(&(1..=n).collect::<Vec<_>>()),
            trials,
            space_size,
            converged: false,
            runner: runner.to_owned(),
        }
    }
}

/// Runs the job against `bank` with `runner`, or when `None` the runner `settings.runner`
/// names ([`GdatPlan::runner`]: `sim`, the default, is the cluster model); see the module docs.
/// Of the settings it reads the runner and its timing, the strategy, seed and per-task budget
/// (`trials_per_op`: splits measured at most), `repeat_tune` and the options given; it decides
/// by [`WIN_RULE`]. The bank write decides inside its transaction under the bank-write policy,
/// and the decision follows what it said (`tune::decide`).
pub fn run_job(
    plan: &GdatPlan,
    bank: &Bank,
    settings: &TuneSettings,
    runner: Option<&mut dyn Measure>,
) -> Result<GdatOutcome, GdatError> {
    let n = plan.timeline.gradients.len();
    let max = plan.max_segments;
    let budget = settings.trials_per_op;
    let (stored, reconfirm) = stored_split(plan, bank, settings)?;
    let (default, opt) = (plan.default_split(), plan.optimum());
    let mut own;
    let runner: &mut dyn Measure = match runner {
        Some(r) => r,
        None => {
            own = plan.runner(&settings.runner, settings.timing)?;
            own.as_mut()
        }
    };
    let identity = runner.identity();
    let report = |decision, searched, split: &[usize], trials, space_size| {
        plan.outcome(decision, searched, split, (trials, space_size), &identity)
    };
    if let (Some(s), false) = (&stored, settings.repeat_tune || reconfirm) {
        let split = plan.split_of(s).unwrap_or_else(|| default.clone());
        return Ok(report(Decision::Reserved, false, &split, 0, 0));
    }
    let baseline = stored
        .as_ref()
        .and_then(|s| plan.split_of(s))
        .unwrap_or_else(|| default.clone());
    let task = search::task(
        &plan.descriptor.soc,
        &plan.timeline.bytes(),
        plan.cluster.rank_size,
        max,
    );
    let found = search::search(
        runner,
        &task,
        &[opt.clone(), default.clone(), baseline.clone()],
        n,
        max,
        &settings.strategy,
        settings.seed,
        (budget, settings.auto_stop),
    )?;
    // Side by side: the best and the baseline, measured again together.
    let pair = [
        search::to_strategy(&found.split, n, max),
        search::to_strategy(&baseline, n, max),
    ];
    let outs = runner.measure(&task, &pair)?;
    let (best_us, base_us) = match (outs[0].median_us(), outs[1].median_us()) {
        (Some(b), Some(a)) => (b, a),
        _ => return Err(GdatError::NothingMeasured),
    };
    let samples = match &outs[0] {
        tunebank_measure::Outcome::Measurement { samples_us } => samples_us.clone(),
        _ => vec![best_us],
    };
    let findings = Findings {
        hit: stored.is_some(),
        reconfirm,
        clear_win: WIN_RULE.judge_deterministic(base_us, best_us).clear && found.split != baseline,
        baseline_measured: true,
        search: SearchEnd::new(found.trials as u64, budget as u64, found.space_size as u64)
            .or_converged(found.stop == StopReason::Converged),
    };
    let provenance = || Provenance::tuned(&settings.strategy, found.trials as u64, settings.seed);
    let timing = |us, samples_us| Timing {
        us,
        samples_us,
        runner: identity.clone(),
    };
    let descriptor = || Descriptor::Gradient(plan.descriptor.clone());
    let verdict = match decide(&findings, None).offer {
        Offer::Winner => Some(WritePolicy::after_tuning(stored.as_ref()).write(
            bank,
            &Record::tuned(
                descriptor(),
                settings.options_given.clone(),
                plan.strategy(&found.split),
                base_us,
                timing(best_us, samples),
                provenance(),
            ),
        )?),
        // No win after a full search: the baseline (HCCL's default, or the confirmed default
        // searched again under a larger budget) is offered as confirmed with this budget.
        Offer::ConfirmedDefault => Some(WritePolicy::after_tuning(None).write(
            bank,
            &Record::confirmed(
                descriptor(),
                settings.options_given.clone(),
                plan.strategy(&baseline),
                timing(base_us, vec![base_us]),
                budget as u64,
                provenance(),
            ),
        )?),
        Offer::Nothing => None,
    };
    let decided = decide(&findings, verdict);
    let split = match decided.decision {
        Decision::Add | Decision::Update => &found.split,
        Decision::Reserved | Decision::Unsatisfied => &baseline,
    };
    let mut outcome = report(
        decided.decision,
        true,
        split,
        found.trials,
        found.space_size,
    );
    outcome.default_confirmed = decided.default_confirmed;
    outcome.converged = found.stop == StopReason::Converged;
    Ok(outcome)
}
