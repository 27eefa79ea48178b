//! The three jobs decide alike. OPAT, SGAT and GDAT, each run on the simulator over a small
//! fixture, report the same decision and leave the same thing in the bank when
//!
//! - the bank-write policy refuses the record a task offers (another process stored a record
//!   of stronger evidence for the key after the job looked it up): `unsatisfied` on a miss,
//!   the other record kept, nothing confirmed;
//! - a full search finds no clear win on a miss: the baseline is stored as a confirmed default
//!   with the job's budget, reported `unsatisfied`, and a rerun hits it (`reserved`);
//! - a search cut short by the job's overall trial budget finds no win: nothing is confirmed
//!   (OPAT and SGAT; GDAT has no overall budget).
//!
//! "Another process" is simulated deterministically: for OPAT and SGAT (one worker) an
//! observer writes the other records when the first task finishes, after every look-up and
//! before any later task's write; for GDAT's one task its runner writes it during the search.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use tunebank::bank::{Bank, Descriptor, LayerId, Provenance, Record, Timing};
use tunebank::job::{Finished, Observer};
use tunebank::key::{BankKey, FsReader, RecordKind, ResolvedOptions, StrategyMap};
use tunebank::measure::{Measure, MeasureError, Outcome, TaskSpace, TuningTask};
use tunebank::model::load_onnx;
use tunebank::tune::gdat::{plan_job, run_job, Cluster, GdatPlan};
use tunebank::tune::opat::TaskOutcome;
use tunebank::tune::sgat::{run_sgat, sgat_plan, SgatPlan};
use tunebank::tune::{self, Decision, TunePlan, TuneSettings, WinRule};

/// The runner of the records "another process" stores: a device time, stronger evidence than
/// the simulator's, so the bank-write policy keeps them against anything a job here offers.
const OTHER_RUNNER: &str = "exec:another-process";

/// What a task's decision came to, as the three jobs are compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seen {
    /// The decision reported.
    decision: Decision,
    /// The bank holds this job's record for the key (not another process's, not none).
    recorded: bool,
    /// The bank holds the job's confirmed default.
    default_confirmed: bool,
}

const REFUSED: Seen = Seen {
    decision: Decision::Unsatisfied,
    recorded: false,
    default_confirmed: false,
};
const CONFIRMED: Seen = Seen {
    decision: Decision::Unsatisfied,
    recorded: true,
    default_confirmed: true,
};
const CUT_SHORT: Seen = REFUSED;

fn fixture(name: &str) -> String {
    format!("{}/fixtures/models/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn options() -> ResolvedOptions {
    ResolvedOptions::from_args(["--soc_version=Ascend910B2"], &FsReader).unwrap()
}

fn bank(dir: &Path, kind: RecordKind) -> Bank {
    Bank::builder(kind, "Ascend910B2")
        .custom_path(dir.join("bank.redb"))
        .no_default_builtin()
        .open()
        .unwrap()
}

/// Another process's record for `descriptor`: a tuned strategy no job here proposes, timed on
/// the device.
fn other_record(descriptor: Descriptor) -> Record {
    let strategy: StrategyMap = [("another_process".to_owned(), serde_json::json!(true))].into();
    let timing = Timing {
        us: 1.0,
        samples_us: vec![1.0],
        runner: OTHER_RUNNER.into(),
    };
    let provenance = Provenance::tuned("other", 1, 0);
    Record::tuned(
        descriptor,
        BTreeMap::new(),
        strategy,
        2.0,
        timing,
        provenance,
    )
}

/// How a task of a job with `budget` trials per task ended up, read back from the bank.
fn seen(bank: &Bank, key: &BankKey, decision: Decision, budget: usize) -> Seen {
    let stored = bank.get_record(LayerId::Custom, key).unwrap();
    let recorded = stored
        .as_ref()
        .is_some_and(|r| r.performance.runner != OTHER_RUNNER);
    let default_confirmed = stored.as_ref().is_some_and(|r| {
        recorded
            && r.performance.default_confirmed
            && r.performance.confirmed_budget == Some(budget as u64)
    });
    Seen {
        decision,
        recorded,
        default_confirmed,
    }
}

/// What an OPAT or SGAT outcome says of itself, checked against what the bank holds.
fn outcome_seen(bank: &Bank, key: &BankKey, o: &TaskOutcome, budget: usize) -> Seen {
    let s = seen(bank, key, o.decision, budget);
    assert_eq!(o.default_confirmed(), s.default_confirmed, "{o:?}");
    s
}

/// An observer that, when the first task finishes, stores another process's record for every
/// other task (by first name), and keeps what it is told of each task.
struct Interloper<'b> {
    bank: &'b Bank,
    others: Vec<(String, Record)>,
    told: BTreeMap<String, (String, bool)>,
}

impl Observer for Interloper<'_> {
    fn finished(&mut self, t: &Finished<'_>) {
        if t.done == 1 {
            let others: Vec<Record> = (self.others.iter())
                .filter(|(name, _)| name != t.name)
                .map(|(_, r)| r.clone())
                .collect();
            self.bank.write_batch(&others).unwrap();
        }
        let told = (t.decision.to_owned(), t.default_confirmed);
        self.told.insert(t.name.to_owned(), told);
    }
}

// OPAT: the ResNet-50 fixture on the simulator.

fn opat_plan(only: Option<&[&str]>) -> TunePlan {
    let model = load_onnx(fixture("resnet50.onnx")).unwrap();
    let o = options();
    let only = only.map(|o| o.iter().map(|s| s.to_string()).collect());
    tune::plan(&model, &o, &o.soc().unwrap(), only.as_ref()).unwrap()
}

fn opat_settings(budget: usize) -> TuneSettings {
    TuneSettings {
        runner: "sim".parse().unwrap(),
        strategy: "random".into(),
        trials_per_op: budget,
        workers: 1,
        options_given: options().given().clone(),
        ..TuneSettings::default()
    }
}

/// No candidate can be `min_gain` = 100 % faster: no search finds a clear win.
fn never_wins(s: TuneSettings) -> TuneSettings {
    TuneSettings {
        win: WinRule {
            min_gain: 1.0,
            ..WinRule::default()
        },
        ..s
    }
}

fn run_opat(
    plan: &TunePlan,
    bank: &Bank,
    s: &TuneSettings,
    o: &mut dyn Observer,
) -> tune::opat::TuneSummary {
    let cancel = AtomicBool::new(false);
    tune::opat::run(plan, bank, s, "resnet50", None, &cancel, o).unwrap()
}

/// OPAT's tasks after the first, whose records another process's outran: each one's view,
/// and how many of them had offered a winner.
fn opat_refused() -> (Vec<Seen>, usize) {
    let dir = tempfile::tempdir().unwrap();
    let bank = bank(dir.path(), RecordKind::Op);
    let plan = opat_plan(None);
    let others = (plan.tasks.iter())
        .map(|t| {
            (
                t.op_names[0].clone(),
                other_record(Descriptor::Op(t.descriptor.clone())),
            )
        })
        .collect();
    let mut o = Interloper {
        bank: &bank,
        others,
        told: BTreeMap::new(),
    };
    let s = run_opat(&plan, &bank, &opat_settings(8), &mut o);
    let later = &s.outcomes[1..];
    let mut winners = 0;
    let mut out = Vec::new();
    for outcome in later {
        let t = &plan.tasks[outcome.task];
        let record = outcome
            .record
            .as_ref()
            .expect("every task offered a record");
        winners += usize::from(!record.performance.default_confirmed);
        assert_eq!(o.told[&t.op_names[0]].0, outcome.decision.as_str());
        out.push(outcome_seen(&bank, &t.key, outcome, 8));
    }
    let sum = s.report.summary;
    assert!(sum.add <= 1, "only the first task can be added: {sum:?}");
    assert!(s.report.modified.len() <= plan.tasks[s.outcomes[0].task].op_names.len());
    (out, winners)
}

// SGAT: the BERT layer's subgraphs on the simulator.

fn sgat_fixture() -> SgatPlan {
    let model = load_onnx(fixture("bert_layer.onnx")).unwrap();
    let o = options();
    sgat_plan(&model, &o, &o.soc().unwrap()).unwrap()
}

fn sgat_settings(budget: usize) -> TuneSettings {
    TuneSettings {
        trials_per_op: budget,
        ..opat_settings(budget)
    }
}

fn run_sgat_job(
    plan: &SgatPlan,
    bank: &Bank,
    s: &TuneSettings,
    o: &mut dyn Observer,
) -> tune::sgat::SgatSummary {
    let cancel = AtomicBool::new(false);
    run_sgat(plan, bank, None, s, "bert", None, &cancel, o).unwrap()
}

/// The outcomes the subgraph model could decide (not unsupported, not failed).
fn decided(outcomes: &[TaskOutcome]) -> impl Iterator<Item = &TaskOutcome> {
    (outcomes.iter()).filter(|o| o.failure.is_none() && o.unsupported.is_none())
}

fn sgat_refused() -> (Vec<Seen>, usize) {
    let dir = tempfile::tempdir().unwrap();
    let bank = bank(dir.path(), RecordKind::Graph);
    let plan = sgat_fixture();
    let others = (plan.tasks.iter())
        .map(|t| {
            (
                t.names[0].clone(),
                other_record(Descriptor::Graph(t.descriptor.clone())),
            )
        })
        .collect();
    let mut o = Interloper {
        bank: &bank,
        others,
        told: BTreeMap::new(),
    };
    let s = run_sgat_job(&plan, &bank, &sgat_settings(8), &mut o);
    let mut winners = 0;
    let mut out = Vec::new();
    for outcome in decided(&s.outcomes[1..]) {
        let t = &plan.tasks[outcome.task];
        let record = outcome
            .record
            .as_ref()
            .expect("every task offered a record");
        winners += usize::from(!record.performance.default_confirmed);
        assert_eq!(o.told[&t.names[0]].0, outcome.decision.as_str());
        out.push(outcome_seen(&bank, &t.key, outcome, 8));
    }
    assert!(s.report.summary.add <= 1, "{:?}", s.report.summary);
    assert!(s.report.added.len() <= 1 && s.report.updated.is_empty());
    (out, winners)
}

// GDAT: the ResNet-50 fixture's gradients on 16 ranks, timed by the cluster model.

fn gdat_fixture() -> GdatPlan {
    let o = options();
    let soc = o.soc().unwrap();
    let m = load_onnx(fixture("resnet50.onnx")).unwrap();
    let cluster = Cluster::for_soc(&soc.version, 16, 8).unwrap();
    plan_job(&m, &o, &soc, cluster, 8, None).unwrap()
}

fn gdat_settings(budget: usize) -> TuneSettings {
    TuneSettings {
        strategy: "ensemble".into(),
        trials_per_op: budget,
        seed: 1,
        repeat_tune: false,
        options_given: BTreeMap::new(),
        ..TuneSettings::default()
    }
}

/// The cluster model as GDAT's runner, with two twists: `other` (another process's record) is
/// stored in `bank` when the first batch is measured, and `flat` times every split alike.
struct GdatRunner<'b> {
    model: Box<dyn Measure>,
    bank: &'b Bank,
    other: Option<Record>,
    flat: bool,
}

impl Measure for GdatRunner<'_> {
    fn identity(&self) -> String {
        self.model.identity()
    }
    fn space(&mut self, task: &TuningTask) -> Result<TaskSpace, MeasureError> {
        self.model.space(task)
    }
    fn default_strategy(&mut self, task: &TuningTask) -> Result<StrategyMap, MeasureError> {
        self.model.default_strategy(task)
    }
    fn measure(
        &mut self,
        task: &TuningTask,
        candidates: &[StrategyMap],
    ) -> Result<Vec<Outcome>, MeasureError> {
        if let Some(r) = self.other.take() {
            self.bank.write_batch(&[r]).unwrap();
        }
        let outs = self.model.measure(task, candidates)?;
        Ok(match self.flat {
            false => outs,
            true => (outs.iter())
                .map(|_| Outcome::Measurement {
                    samples_us: vec![100.0],
                })
                .collect(),
        })
    }
}

/// GDAT's one task with its runner's twists: what it decided and what the bank holds (for a
/// task that searched, what the outcome says it confirmed is what the bank holds).
fn gdat_run(
    plan: &GdatPlan,
    bank: &Bank,
    budget: usize,
    other: bool,
    flat: bool,
) -> (tunebank::tune::gdat::GdatOutcome, Seen) {
    let mut runner = GdatRunner {
        model: Box::new(plan.model_runner()),
        bank,
        other: other.then(|| other_record(Descriptor::Gradient(plan.descriptor.clone()))),
        flat,
    };
    let o = run_job(plan, bank, &gdat_settings(budget), Some(&mut runner)).unwrap();
    let s = seen(bank, &plan.key, o.decision, budget);
    if o.searched {
        let d = o.decision;
        assert_eq!(o.default_confirmed, s.default_confirmed, "{d:?}");
    }
    (o, s)
}

#[test]
fn a_record_the_write_policy_refuses_is_reported_alike_by_the_three_jobs() {
    let (opat, opat_winners) = opat_refused();
    let (sgat, sgat_winners) = sgat_refused();
    assert!(!opat.is_empty() && !sgat.is_empty());
    assert!(opat_winners > 0, "an OPAT winner was refused");
    assert!(sgat_winners > 0, "an SGAT winner was refused");
    let dir = tempfile::tempdir().unwrap();
    let plan = gdat_fixture();
    let b = bank(dir.path(), RecordKind::Gradient);
    let (o, gdat) = gdat_run(&plan, &b, 8, true, false);
    assert!(o.searched);
    assert_eq!(
        o.tuned.split, o.default.split,
        "the bank keeps the other split"
    );
    // Without the other process the same job adds its winner: it was a winner refused.
    let dir = tempfile::tempdir().unwrap();
    let alone = gdat_run(
        &plan,
        &bank(dir.path(), RecordKind::Gradient),
        8,
        false,
        false,
    );
    assert_eq!(alone.0.decision, Decision::Add);
    for (job, s) in (opat.iter().map(|s| ("OPAT", s)))
        .chain(sgat.iter().map(|s| ("SGAT", s)))
        .chain([("GDAT", &gdat)])
    {
        assert_eq!(*s, REFUSED, "{job}");
    }
}

#[test]
fn a_default_is_confirmed_alike_by_the_three_jobs() {
    let budget = 8;
    // OPAT: the Gemm, searched in full with a win rule nothing meets.
    let dir = tempfile::tempdir().unwrap();
    let b = bank(dir.path(), RecordKind::Op);
    let plan = opat_plan(Some(&["Gemm"]));
    let s = never_wins(opat_settings(budget));
    let first = run_opat(&plan, &b, &s, &mut ());
    let o = &first.outcomes[0];
    assert_eq!(o.trials, budget as u64, "a full search");
    let opat = outcome_seen(&b, &plan.tasks[0].key, o, budget);
    let again = run_opat(&plan, &b, &s, &mut ());
    let rerun = [(again.outcomes[0].decision, again.stats.trials)];

    // SGAT: every subgraph of the BERT layer, likewise.
    let dir = tempfile::tempdir().unwrap();
    let gb = bank(dir.path(), RecordKind::Graph);
    let splan = sgat_fixture();
    let s = never_wins(sgat_settings(budget));
    let first = run_sgat_job(&splan, &gb, &s, &mut ());
    let sgat: Vec<Seen> = decided(&first.outcomes)
        .map(|o| outcome_seen(&gb, &splan.tasks[o.task].key, o, budget))
        .collect();
    assert!(!sgat.is_empty());
    let again = run_sgat_job(&splan, &gb, &s, &mut ());
    let sgat_rerun: Vec<(Decision, u64)> = decided(&again.outcomes)
        .map(|o| (o.decision, again.stats.trials))
        .collect();

    // GDAT: every split timed alike, so none beats HCCL's default.
    let dir = tempfile::tempdir().unwrap();
    let plan = gdat_fixture();
    let gdb = bank(dir.path(), RecordKind::Gradient);
    let (o, gdat) = gdat_run(&plan, &gdb, budget, false, true);
    assert_eq!(o.trials, budget, "a full search");
    assert_eq!(o.tuned.split, o.default.split);
    let (again, _) = gdat_run(&plan, &gdb, budget, false, true);
    let gdat_rerun = [(again.decision, again.trials as u64)];

    for (job, s) in [("OPAT", &opat), ("GDAT", &gdat)]
        .into_iter()
        .chain(sgat.iter().map(|s| ("SGAT", s)))
    {
        assert_eq!(*s, CONFIRMED, "{job}");
    }
    // A rerun with the same budget hits every confirmed default and measures nothing.
    for (job, r) in [
        ("OPAT", &rerun[..]),
        ("SGAT", &sgat_rerun),
        ("GDAT", &gdat_rerun),
    ] {
        assert!(!r.is_empty());
        assert!(
            r.iter().all(|&d| d == (Decision::Reserved, 0)),
            "{job}: {r:?}"
        );
    }
}

#[test]
fn a_search_cut_short_confirms_nothing_in_opat_and_sgat_alike() {
    // One task's worth of trials, fewer than its per-task budget: the job stops after it.
    let cut = |s: TuneSettings| TuneSettings {
        total_trials: Some(3),
        ..never_wins(s)
    };
    let dir = tempfile::tempdir().unwrap();
    let b = bank(dir.path(), RecordKind::Op);
    let plan = opat_plan(Some(&["Gemm"]));
    let s = run_opat(&plan, &b, &cut(opat_settings(8)), &mut ());
    let o = &s.outcomes[0];
    assert_eq!(o.trials, 3);
    let opat = outcome_seen(&b, &plan.tasks[0].key, o, 8);

    let dir = tempfile::tempdir().unwrap();
    let gb = bank(dir.path(), RecordKind::Graph);
    let splan = sgat_fixture();
    let s = run_sgat_job(&splan, &gb, &cut(sgat_settings(8)), &mut ());
    let o = decided(&s.outcomes)
        .find(|o| o.trials > 0)
        .expect("a subgraph searched");
    assert!(o.trials <= 3);
    let sgat = outcome_seen(&gb, &splan.tasks[o.task].key, o, 8);
    assert_eq!((opat, sgat), (CUT_SHORT, CUT_SHORT));
}
