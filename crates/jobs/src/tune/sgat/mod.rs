//! The SGAT driver (`--job_type=1`): subgraph tuning on the simulated SoC, with a graph bank.
//!
//! [`sgat_plan`] partitions every profile's fused units into subgraphs
//! ([`tunebank_model::partition`]), one [`SgatTask`] per unique subgraph key. [`run_sgat`] then
//! handles each task as OPAT handles an op, on the same worker pool, budget, win rule and
//! bank-write policy: a hit without `REPEAT_TUNE` is reused (hit, reserved); otherwise the
//! subgraph's space (`SgatSpace`) is searched with a `search-strategies` strategy, each
//! candidate timed by the subgraph model (`GraphOps::time`) with every node at its op-bank
//! strategy (a hit in the op bank) or its default; the model's times of the best and of the
//! baseline (the bank entry on a hit, else the unfused strategy) are judged by the win rule as
//! exact times (`WinRule::judge_deterministic`: the
//! model is deterministic, so one time per side decides, without rounds and without the
//! significance test); the drivers' one decision function (`tune::decide`) makes the rest as
//! for ops: a clear win is offered (add/update once the bank stored it, [`Record::tuned`]), a
//! miss whose full search found none stores the unfused strategy as confirmed (unsatisfied,
//! then a hit on reruns; [`Record::confirmed`]). Records are
//! [`RecordKind::Graph`](tunebank_key::RecordKind::Graph) with the strategy in the agreed schema
//! (ARCHITECTURE.md, "SGAT strategy schema").
//!
//! The result file ([`SgatReport`]) is rewritten after every finished task; the model's
//! baseline and result times sum every subgraph instance (tasks not finished count at their
//! baseline). Its result is the jobs' one outcome rule (`tune::job_result`), and the job's
//! observer (`job::Observer`) is told of every subgraph as it finishes.

mod apply;
mod report;
pub(crate) mod search;
mod space;

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use tunebank_key::StrategyMap;

use search_strategies::strategies::by_name;
use search_strategies::StopReason;

pub use apply::PostSgat;

pub use apply::post_sgat_plan;
pub use apply::{AppliedSubgraph, ApplyError};
pub use report::{SgatReport, SubgraphChange};
pub use search::{search_subgraph, sgat_best, SgatBest, SgatBestError, SubgraphSearch};
pub use space::{SgatSpace, SpaceBuildError};

use super::pool::{Budget, Pool};
use super::{check_settings, check_soc, plan, TuneError, TunePlan, TuneSettings};
use crate::tune::opat::{task_counts, TaskOutcome, TuneStats};
use crate::tune::report::ResultFile;
use crate::tune::{decide, job_result, task_seed, Decision, Findings, Observer, Offer, SearchEnd};
use tunebank_bank::{Bank, Descriptor, Lookup, Provenance, Record, Timing};
use tunebank_failure::FailureKind;
use tunebank_key::{BankKey, GraphDescriptor, ResolvedOptions, SocSpec};
use tunebank_measure::sim::graph::{GraphModelError, GraphOps, SgatStrategy, SGAT_MODEL_VERSION};
use tunebank_measure::sim::SocModel;
use tunebank_model::partition::{partition, PartitionError, Subgraph};
use tunebank_model::{Model, SkippedOp};

/// The runner identity of graph records: the simulator's subgraph model.
pub(crate) fn sgat_runner_identity() -> String {
    format!("sim-sgat-v{SGAT_MODEL_VERSION}")
}

/// Why an SGAT job could not start or go on. Per-subgraph problems are outcomes, not errors.
#[derive(Debug, thiserror::Error)]
pub enum SgatError {
    /// The shared tuning plumbing failed (model, bank, settings, result file).
    #[error(transparent)]
    Tune(#[from] TuneError),
    /// A subgraph could not be built.
    #[error(transparent)]
    Partition(#[from] PartitionError),
    /// The graph bank's strategies could not be applied.
    #[error(transparent)]
    Apply(#[from] ApplyError),
    /// SGAT runs on the simulator only.
    #[error("runner {0}: subgraph tuning (--job_type=1) runs on the simulator (--runner sim)")]
    Runner(String),
}

/// One unique subgraph to tune.
#[derive(Clone, Debug)]
pub struct SgatTask {
    /// The subgraph key.
    pub key: BankKey,
    /// Its descriptor.
    pub descriptor: GraphDescriptor,
    /// Every subgraph name with this key, in model order.
    pub names: Vec<String>,
    /// Op key of every node (op-bank look-ups).
    pub op_keys: Vec<BankKey>,
    /// How many subgraph instances of the model have this key.
    pub instances: usize,
}

/// The SGAT plan of a model.
#[derive(Clone, Debug, Default)]
pub struct SgatPlan {
    /// Unique subgraphs, in order of first appearance.
    pub tasks: Vec<SgatTask>,
    /// Every subgraph of every profile, in model order.
    pub subgraphs: Vec<Subgraph>,
    /// Ops left out (not inferable, no key dtype).
    pub skipped: Vec<SkippedOp>,
    /// Units partitioned, over all profiles.
    pub units: usize,
    /// The graph inputs' shapes of each dynamic profile (a range's or a gear's), in order;
    /// empty for a static model. The result file lists them (`tunebank_tuned_shapes`).
    pub shapes: Vec<Vec<(String, Vec<i64>)>>,
}

/// Partitions `model` under `options` into subgraphs (every dynamic profile), one task per key.
pub fn sgat_plan(
    model: &Model,
    options: &ResolvedOptions,
    soc: &SocSpec,
) -> Result<SgatPlan, SgatError> {
    partition_plan(&plan(model, options, soc, None)?, options, soc)
}

/// Partitions the units of `p` (every profile's, in plan order) into subgraphs, one task per
/// key; the subgraphs' unit indices index `p.units`.
pub(crate) fn partition_plan(
    p: &TunePlan,
    options: &ResolvedOptions,
    soc: &SocSpec,
) -> Result<SgatPlan, SgatError> {
    let graph_options = options.graph_options();
    let mut out = SgatPlan {
        skipped: p.skipped.clone(),
        units: p.units.len(),
        shapes: p.shapes.clone(),
        ..SgatPlan::default()
    };
    let mut start = 0;
    let mut by_key: HashMap<BankKey, usize> = HashMap::new();
    while start < p.units.len() {
        let profile = &p.units[start].resolved.profile;
        let len = p.units[start..]
            .iter()
            .take_while(|u| &u.resolved.profile == profile)
            .count();
        let chunk = &p.units[start..start + len];
        for mut sg in partition(chunk, &graph_options, soc)? {
            let t = *by_key.entry(sg.key).or_insert_with(|| {
                out.tasks.push(SgatTask {
                    key: sg.key,
                    descriptor: sg.descriptor.clone(),
                    names: Vec::new(),
                    op_keys: sg.units.iter().map(|&u| chunk[u].resolved.key).collect(),
                    instances: 0,
                });
                out.tasks.len() - 1
            });
            out.tasks[t].names.push(sg.name.clone());
            out.tasks[t].instances += 1;
            sg.units.iter_mut().for_each(|u| *u += start);
            out.subgraphs.push(sg);
        }
        start += len;
    }
    Ok(out)
}

/// A finished SGAT job: the report, one outcome per finished task, per-task model times.
#[derive(Clone, Debug)]
pub struct SgatSummary {
    /// The report as written last.
    pub report: SgatReport,
    /// Finished tasks' outcomes, in the order finished (`task` indexes [`SgatPlan::tasks`]).
    pub outcomes: Vec<TaskOutcome>,
    /// Per task: (baseline µs, result µs) with the bank's decisions now (baseline twice
    /// for a task not finished or not modelled).
    pub times_us: Vec<(f64, f64)>,
    /// Whether the job stopped before every task finished.
    pub interrupted: bool,
    /// Time accounting (`measure` = time inside the subgraph model).
    pub stats: TuneStats,
}

/// A job: one task not decided by its look-up.
struct Job {
    task: usize,
    hit: Option<StrategyMap>,
    /// The hit is a default confirmed under a smaller budget: no win confirms it anew.
    reconfirm: bool,
}

/// Per-task setup shared by the look-up and the search.
struct Prepared {
    ops: GraphOps,
    baseline_us: f64,
}

/// Tunes every task of `plan` into the graph bank `bank`, with node op strategies from
/// `op_bank` (hits) when given; rewrites `result_file` after each finished task and then tells
/// `observer` of it, named by its first subgraph (reused hits first, before any search).
/// Contract as [`crate::tune::opat::run`]: only clear wins are written as tuned, a finished
/// task's record is in the bank before it is in the result file, the summary satisfies AOE's
/// invariants.
#[allow(clippy::too_many_arguments)]
pub fn run_sgat(
    plan: &SgatPlan,
    bank: &Bank,
    op_bank: Option<&Bank>,
    settings: &TuneSettings,
    tuning_name: &str,
    result_file: Option<&ResultFile>,
    cancel: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<SgatSummary, SgatError> {
    check_settings(settings)?;
    if !settings.runner.is_simulator() {
        return Err(SgatError::Runner(settings.runner.to_string()));
    }
    if let Some(t) = plan.tasks.first() {
        check_soc(settings, &t.descriptor.soc.version)?;
    }
    let start = Instant::now();
    let mut prepared = Vec::with_capacity(plan.tasks.len());
    let mut st = State {
        plan,
        report: SgatReport {
            tuned_shapes: plan.shapes.clone(),
            ..SgatReport::new(tuning_name)
        },
        times_us: vec![(0.0, 0.0); plan.tasks.len()],
        outcomes: Vec::new(),
        result_file,
        stats: TuneStats::default(),
    };
    let mut jobs = Vec::new();
    for (i, t) in plan.tasks.iter().enumerate() {
        let p = prepare(t, op_bank).map_err(TuneError::from)?;
        // A default confirmed by a smaller per-subgraph budget is searched again, as for ops.
        let (hit, reconfirm) = match bank.lookup(&t.key).map_err(TuneError::from)? {
            Lookup::Hit(h) => {
                let p = &h.answer.performance;
                let reconfirm = p.default_confirmed
                    && p.confirmed_budget.unwrap_or(0) < settings.trials_per_op as u64;
                (Some(h.answer.strategy.clone()), reconfirm)
            }
            Lookup::Miss { .. } => (None, false),
        };
        let base = p.as_ref().map_or(0.0, |p| p.baseline_us);
        let now = match (&p, &hit) {
            (Some(p), Some(h)) => strategy_time(&p.ops, h, t).unwrap_or(base),
            _ => base,
        };
        st.times_us[i] = (base, now);
        match (hit, settings.repeat_tune || reconfirm) {
            (Some(_), false) => st.outcomes.push(TaskOutcome::untouched(i, true)),
            (hit, _) => jobs.push(Job {
                task: i,
                hit,
                reconfirm,
            }),
        }
        prepared.push(p);
    }
    st.write(None)?;
    let total = plan.tasks.len();
    let name = |o: &TaskOutcome| plan.tasks[o.task].names[0].as_str();
    for (k, o) in st.outcomes.iter().enumerate() {
        observer.finished(&o.finished(name(o), k + 1, total));
    }
    let budget = Budget::new(
        settings.total_trials,
        settings.total_time.map(|d| start + d),
    );
    let pool = Pool {
        workers: settings.workers,
        trials_per_job: settings.trials_per_op as u64,
        budget: &budget,
        cancel,
    };
    let ctx = Ctx {
        plan,
        settings,
        prepared: &prepared,
        budget: &budget,
        cancel,
    };
    let run = pool.run(
        &jobs,
        &|| Ok(()),
        &|job, _, granted| ctx.tune_one(job, granted),
        &|job, what, took| {
            let why = format!("subgraph model panicked: {what}");
            TaskOutcome::failed(job.task, job.hit.is_some(), why, took)
        },
        &mut |o| {
            let t = Instant::now();
            st.finish_task(o, bank, &prepared)?;
            st.stats.bank_report += t.elapsed();
            let (done, o) = (st.outcomes.len(), st.outcomes.last().expect("just pushed"));
            observer.finished(&o.finished(name(o), done, total));
            Ok(())
        },
    );
    run?;
    let interrupted = st.outcomes.len() < plan.tasks.len();
    st.stats.wall = start.elapsed();
    st.write(Some((start, interrupted)))?;
    Ok(SgatSummary {
        report: st.report,
        outcomes: st.outcomes,
        times_us: st.times_us,
        interrupted,
        stats: st.stats,
    })
}

/// The time of `strategy` on a prepared subgraph, if it reads.
fn strategy_time(ops: &GraphOps, strategy: &StrategyMap, t: &SgatTask) -> Option<f64> {
    let s = SgatStrategy::from_strategy(strategy, t.descriptor.nodes.len()).ok()?;
    ops.time(&s).ok().map(|g| g.total_us)
}

/// Node op strategies from the op bank, the op model run per node, the baseline time. `None`
/// when the subgraph model cannot time this subgraph (its task then fails).
fn prepare(
    t: &SgatTask,
    op_bank: Option<&Bank>,
) -> Result<Option<Prepared>, tunebank_bank::BankError> {
    let mut strategies = Vec::with_capacity(t.op_keys.len());
    for k in &t.op_keys {
        let s = match op_bank {
            Some(b) => match b.lookup(k)? {
                Lookup::Hit(h) => Some(h.answer.strategy.clone()),
                Lookup::Miss { .. } => None,
            },
            None => None,
        };
        strategies.push(s);
    }
    let Ok(ops) = GraphOps::prepare(&t.descriptor, &strategies) else {
        return Ok(None);
    };
    let Ok(base) = ops.time(&SgatStrategy::unfused(t.descriptor.nodes.len())) else {
        return Ok(None);
    };
    Ok(Some(Prepared {
        ops,
        baseline_us: base.total_us,
    }))
}

/// The calling thread's bookkeeping: report, per-task times, result file.
struct State<'a> {
    plan: &'a SgatPlan,
    report: SgatReport,
    times_us: Vec<(f64, f64)>,
    outcomes: Vec<TaskOutcome>,
    result_file: Option<&'a ResultFile>,
    stats: TuneStats,
}

impl State<'_> {
    /// Takes a finished task: its times counted, its record offered the bank (in the bank
    /// before it is in the result file), the model's time now of the strategy the bank stored,
    /// the result file rewritten.
    fn finish_task(
        &mut self,
        mut o: TaskOutcome,
        bank: &Bank,
        prepared: &[Option<Prepared>],
    ) -> Result<(), TuneError> {
        self.stats.add_task(&o);
        o.store(bank)?;
        let stored = o.bank_verdict.is_some_and(|v| v.replace);
        if let (Some(r), Some(p), true) = (&o.record, &prepared[o.task], stored) {
            let now = strategy_time(&p.ops, &r.strategy, &self.plan.tasks[o.task]);
            self.times_us[o.task].1 = now.unwrap_or(self.times_us[o.task].1);
        }
        self.outcomes.push(o);
        self.write(None)
    }

    /// Rebuilds the report from the outcomes so far and rewrites the result file; `done`
    /// (start, interrupted) finishes it.
    fn write(&mut self, done: Option<(Instant, bool)>) -> Result<(), TuneError> {
        let r = &mut self.report;
        r.summary = Default::default();
        r.added.clear();
        r.updated.clear();
        r.failed.clear();
        for o in &self.outcomes {
            o.decision.count(&mut r.summary);
            let key = self.plan.tasks[o.task].key.to_string();
            if let (Some(before_us), Some(after_us)) = (o.before_us, o.after_us) {
                let c = SubgraphChange {
                    repo_key: key,
                    before_us,
                    after_us,
                };
                match o.decision {
                    Decision::Add => r.added.push(c),
                    Decision::Update => r.updated.push(c),
                    _ => {}
                }
            }
            if o.failure.is_some() {
                r.failed
                    .extend(self.plan.tasks[o.task].names.iter().cloned());
            }
        }
        let inst = |i: usize| self.plan.tasks[i].instances as f64;
        r.baseline_ms = (0..self.times_us.len())
            .map(|i| self.times_us[i].0 * inst(i))
            .sum::<f64>()
            / 1e3;
        r.result_ms = (0..self.times_us.len())
            .map(|i| self.times_us[i].1 * inst(i))
            .sum::<f64>()
            / 1e3;
        if let Some((start, interrupted)) = done {
            r.result = job_result(task_counts(&self.outcomes, self.plan.tasks.len()));
            r.tuning_time_s = (!interrupted).then(|| start.elapsed().as_secs_f64());
        }
        if let Some(f) = self.result_file {
            f.write_json(&r.to_json(&f.report_id))
                .map_err(|source| TuneError::Report {
                    path: f.path.display().to_string(),
                    source,
                })?;
        }
        Ok(())
    }
}

/// What a worker needs to tune one job.
struct Ctx<'a> {
    plan: &'a SgatPlan,
    settings: &'a TuneSettings,
    prepared: &'a [Option<Prepared>],
    budget: &'a Budget,
    cancel: &'a AtomicBool,
}

impl Ctx<'_> {
    /// Searches, compares side by side, decides; the record to offer in the outcome.
    fn tune_one(&self, job: &Job, granted: u64) -> TaskOutcome {
        let began = Instant::now();
        let t = &self.plan.tasks[job.task];
        let mut out = TaskOutcome::untouched(job.task, job.hit.is_some());
        let Some(p) = &self.prepared[job.task] else {
            out.unsupported = Some("the subgraph model cannot time this subgraph".into());
            return out;
        };
        let soc = match SocModel::for_version(&t.descriptor.soc.version) {
            Some(s) => s,
            None => {
                out.unsupported =
                    Some(GraphModelError::Soc(t.descriptor.soc.version.clone()).to_string());
                return out;
            }
        };
        let space = match SgatSpace::build(&t.descriptor, &p.ops, soc) {
            Ok(s) => s,
            Err(e) => {
                return TaskOutcome::failed(
                    job.task,
                    job.hit.is_some(),
                    e.to_string(),
                    began.elapsed(),
                )
            }
        };
        let n = t.descriptor.nodes.len();
        let baseline = match &job.hit {
            Some(h) => {
                SgatStrategy::from_strategy(h, n).unwrap_or_else(|_| SgatStrategy::unfused(n))
            }
            None => SgatStrategy::unfused(n),
        };
        let (best, search, measure) = self.search(&mut out, t, &space, &p.ops, granted);
        out.measure_time = measure;
        let base_us = p.ops.time(&baseline).map(|g| g.total_us).ok();
        let best_us = best
            .as_ref()
            .and_then(|b| p.ops.time(b).ok())
            .map(|g| g.total_us);
        self.decide(
            &mut out,
            t,
            job,
            search,
            (baseline, base_us),
            best.zip(best_us),
        );
        out.task_time = began.elapsed();
        out
    }

    /// Runs the search within `granted` trials; the best strategy, how the search ended
    /// (full: the per-subgraph budget or the space used up), and the time inside the model.
    fn search(
        &self,
        out: &mut TaskOutcome,
        t: &SgatTask,
        space: &SgatSpace,
        ops: &GraphOps,
        granted: u64,
    ) -> (Option<SgatStrategy>, SearchEnd, Duration) {
        let seed = task_seed(self.settings.seed, &t.key);
        let budget = self.settings.trials_per_op as u64;
        let Some(inner) = by_name(&self.settings.strategy, seed) else {
            out.failure = Some(format!("unknown strategy {}", self.settings.strategy));
            return (None, SearchEnd::new(0, budget, 0), Duration::ZERO);
        };
        let limits = (
            granted,
            self.settings.round_width(0, 1),
            self.budget.job_time_limit(self.settings.time_per_op),
            self.settings.auto_stop,
        );
        let res = search_subgraph(space, ops, inner, limits, self.cancel);
        out.trials = res.trials;
        out.stop = Some(res.stop);
        let search = SearchEnd::new(out.trials, budget, space.len() as u64)
            .or_converged(res.stop == StopReason::Converged);
        (res.best.map(|b| b.0), search, res.in_model)
    }

    /// The win rule on the model's exact times
    /// ([`WinRule::judge_deterministic`](super::WinRule::judge_deterministic): the model is
    /// deterministic, so one time per side decides, no rounds), then the drivers' one decision
    /// function (`tune::decide`): the decision (settled once the bank has answered) and the
    /// record to offer.
    fn decide(
        &self,
        out: &mut TaskOutcome,
        t: &SgatTask,
        job: &Job,
        search: SearchEnd,
        (baseline, base_us): (SgatStrategy, Option<f64>),
        best: Option<(SgatStrategy, f64)>,
    ) {
        let Some(base_us) = base_us else {
            out.failure = Some("the baseline strategy does not fit the subgraph".into());
            return;
        };
        out.baseline = Some(baseline.to_strategy());
        let j = self
            .settings
            .win
            .judge_deterministic(base_us, best.as_ref().map_or(base_us, |x| x.1));
        out.before_us = Some(base_us);
        let winner = best.filter(|_| j.clear);
        let findings = Findings {
            hit: job.hit.is_some(),
            reconfirm: job.reconfirm,
            clear_win: winner.is_some(),
            baseline_measured: true,
            search,
        };
        out.findings = Some(findings);
        let decided = decide(&findings, None);
        out.decision = decided.decision;
        out.after_us = Some(winner.as_ref().map_or(base_us, |w| w.1));
        let (trials, unfused) = (out.trials, baseline.to_strategy());
        out.record = match (decided.offer, winner) {
            (Offer::Winner, Some((s, us))) => {
                Some(self.record(t, s.to_strategy(), base_us, us, trials, false))
            }
            (Offer::ConfirmedDefault, _) => {
                Some(self.record(t, unfused, base_us, base_us, trials, true))
            }
            _ => None,
        };
    }

    /// A graph record of `t` with `strategy` at `us` against a baseline at `base_us`: the
    /// winner ([`Record::tuned`]), or with `confirmed` the unfused default ([`Record::confirmed`],
    /// `us` = `base_us`).
    fn record(
        &self,
        t: &SgatTask,
        strategy: StrategyMap,
        base_us: f64,
        us: f64,
        trials: u64,
        confirmed: bool,
    ) -> Record {
        let settings = self.settings;
        let descriptor = Descriptor::Graph(t.descriptor.clone());
        let options = settings.options_given.clone();
        let provenance = Provenance::tuned(&settings.strategy, trials, settings.seed);
        let timing = Timing {
            us,
            samples_us: vec![us],
            runner: sgat_runner_identity(),
        };
        if confirmed {
            let budget = settings.trials_per_op as u64;
            Record::confirmed(descriptor, options, strategy, timing, budget, provenance)
        } else {
            Record::tuned(descriptor, options, strategy, base_us, timing, provenance)
        }
    }
}

impl SgatError {
    /// The kind of the tuning, partition or apply error it wraps (a busy or damaged bank under
    /// SGAT is busy or damaged); a runner other than the simulator is the request's.
    pub fn kind(&self) -> FailureKind {
        match self {
            SgatError::Tune(e) => e.kind(),
            SgatError::Partition(e) => e.kind(),
            SgatError::Apply(e) => e.kind(),
            SgatError::Runner(_) => FailureKind::Input,
        }
    }
}
