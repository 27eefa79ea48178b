//! Tuning writes judged against what another process stored since the look-up; what AOE's GA
//! measures first.

use std::collections::BTreeSet;
use tunebank_key::StrategyMap;

use super::*;
use crate::tune::plan;
use crate::tune::pool::TimedRunner;
use tunebank_bank::policy::Verdict;
use tunebank_bank::store::StoreEntry;
use tunebank_bank::testing::fresh_bank;
use tunebank_bank::{
    index_key, BankError, Descriptor, LayerId, Origin, Performance, Provenance, Record,
};
use tunebank_key::{FsReader, RecordKind, ResolvedOptions};
use tunebank_measure::{MeasureError, TaskSpace, TuningTask};

/// Offers `record`, compared side by side with `baseline`, to the bank as a finished task does.
fn write_outcome(
    bank: &Bank,
    record: &Record,
    baseline: Option<&StrategyMap>,
) -> Result<Verdict, BankError> {
    let mut o = TaskOutcome {
        record: Some(record.clone()),
        baseline: baseline.cloned(),
        ..TaskOutcome::untouched(0, false)
    };
    o.store(bank)?;
    Ok(o.bank_verdict.expect("a record was offered"))
}

/// The ResNet-50 fixture's plan restricted to its Gemm on Ascend910B2, with its options.
fn gemm_plan() -> (ResolvedOptions, crate::tune::TunePlan) {
    let model = tunebank_model::load_onnx(concat!(
        concat!(env!("CARGO_MANIFEST_DIR"), "/../.."),
        "/fixtures/models/resnet50.onnx"
    ))
    .unwrap();
    let options = ResolvedOptions::from_args(["--soc_version=Ascend910B2"], &FsReader).unwrap();
    let only: BTreeSet<String> = ["Gemm".to_string()].into();
    let plan = plan(&model, &options, &options.soc().unwrap(), Some(&only)).unwrap();
    (options, plan)
}

/// A record for the ResNet-50 fixture's Gemm with strategy `{"v": tag}`.
fn record(tag: i64, tuned_us: f64, default_confirmed: bool) -> Record {
    let (options, plan) = gemm_plan();
    Record {
        key_schema_version: tunebank_key::KEY_SCHEMA_VERSION,
        kind: RecordKind::Op,
        descriptor: Descriptor::Op(plan.tasks[0].descriptor.clone()),
        options: options.given().clone(),
        strategy: [("v".to_owned(), serde_json::json!(tag))].into(),
        performance: Performance {
            baseline_us: 100.0,
            tuned_us,
            samples_us: vec![tuned_us],
            runner: "test".into(),
            default_confirmed,
            confirmed_budget: None,
        },
        provenance: Provenance {
            tool_version: "0".into(),
            algorithm: "test".into(),
            trials: 1,
            seed: 0,
            unix_time: 0,
            origin: Origin::Tuned,
        },
    }
}

/// What the key holds after `write_outcome(new)` over a bank holding `current`.
fn after(current: Option<&Record>, new: &Record, baseline: Option<i64>) -> i64 {
    let (_dir, bank) = fresh_bank();
    if let Some(c) = current {
        bank.write_batch(std::slice::from_ref(c)).unwrap();
    }
    let baseline: Option<StrategyMap> =
        baseline.map(|b| [("v".to_owned(), serde_json::json!(b))].into());
    write_outcome(&bank, new, baseline.as_ref()).unwrap();
    let key = tunebank_bank::descriptor_key(&new.descriptor).unwrap();
    let stored = bank.get_record(LayerId::Custom, &key).unwrap().unwrap();
    stored.strategy["v"].as_i64().unwrap()
}

#[test]
fn a_write_judges_what_another_process_stored_since_the_look_up() {
    let win = |tag, us| record(tag, us, false);
    let confirmed = |tag, us| record(tag, us, true);
    // Empty key: always written.
    assert_eq!(after(None, &win(1, 5.0), Some(0)), 1);
    assert_eq!(after(None, &confirmed(1, 5.0), Some(1)), 1);
    // A winner replaces the baseline it beat, a confirmed default, or a slower record...
    assert_eq!(after(Some(&win(0, 1.0)), &win(1, 5.0), Some(0)), 1);
    assert_eq!(after(Some(&confirmed(9, 1.0)), &win(1, 5.0), Some(0)), 1);
    assert_eq!(after(Some(&win(9, 8.0)), &win(1, 5.0), Some(0)), 1);
    // ...but not a faster winner someone else stored meanwhile.
    assert_eq!(after(Some(&win(9, 4.0)), &win(1, 5.0), Some(0)), 9);
    // A confirmed default never replaces a sound record, even a slower one.
    assert_eq!(after(Some(&win(9, 8.0)), &confirmed(1, 5.0), Some(1)), 9);
    assert_eq!(
        after(Some(&confirmed(9, 8.0)), &confirmed(1, 5.0), Some(1)),
        9
    );
}

#[test]
fn a_damaged_record_is_replaced_by_any_sound_one() {
    let (_dir, bank) = fresh_bank();
    let new = record(1, 5.0, true);
    let key = tunebank_bank::descriptor_key(&new.descriptor).unwrap();
    bank.layer_store(LayerId::Custom)
        .unwrap()
        .put_batch(&[StoreEntry {
            key,
            value: b"not a record",
            index: index_key(&new),
        }])
        .unwrap();
    assert!(bank.get_record(LayerId::Custom, &key).is_err());
    assert!(write_outcome(&bank, &new, None).unwrap().replace);
    assert_eq!(bank.get_record(LayerId::Custom, &key).unwrap(), Some(new));
}

/// A simulator that keeps every batch of candidates it is asked to measure, in order.
struct Recording {
    inner: Box<dyn tunebank_measure::Measure + Send>,
    batches: std::sync::Arc<std::sync::Mutex<Vec<Vec<StrategyMap>>>>,
}

impl tunebank_measure::Measure for Recording {
    fn identity(&self) -> String {
        self.inner.identity()
    }
    fn space(&mut self, task: &TuningTask) -> Result<TaskSpace, MeasureError> {
        self.inner.space(task)
    }
    fn default_strategy(&mut self, task: &TuningTask) -> Result<StrategyMap, MeasureError> {
        self.inner.default_strategy(task)
    }
    fn measure(
        &mut self,
        task: &TuningTask,
        candidates: &[StrategyMap],
    ) -> Result<Vec<tunebank_measure::Outcome>, MeasureError> {
        self.batches.lock().unwrap().push(candidates.to_vec());
        self.inner.measure(task, candidates)
    }
}

/// The candidates `strategy`'s search measures first (its first batch, 8 wide) when OPAT tunes
/// the ResNet-50 fixture's Gemm on the simulator, with `hit` as its bank entry; and the task's
/// space and default tiling.
fn first_batch(
    strategy: &str,
    hit: Option<StrategyMap>,
) -> (Vec<StrategyMap>, TaskSpace, StrategyMap) {
    let (_, plan) = gemm_plan();
    let settings = TuneSettings {
        strategy: strategy.into(),
        trials_per_op: 16,
        ..TuneSettings::default()
    };
    let batches = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut sim = tunebank_measure::runner_from_spec("sim").unwrap();
    let task = TuningTask::new(plan.tasks[0].descriptor.clone());
    let (space, default) = (
        sim.space(&task).unwrap(),
        sim.default_strategy(&task).unwrap(),
    );
    let mut runner = TimedRunner::new(Box::new(Recording {
        inner: sim,
        batches: batches.clone(),
    }));
    let (budget, cancel) = (Budget::new(None, None), AtomicBool::new(false));
    let opat = Opat {
        plan: &plan,
        settings: &settings,
        budget: &budget,
        cancel: &cancel,
        transfer: &transfer::Snapshot::default(),
        widths: &[8],
    };
    let job = Job {
        task: 0,
        hit: hit.map(|s| (s, 1.0)),
        reconfirm: false,
    };
    let out = opat.tune_one(&job, &mut runner, 16);
    assert_eq!((out.failure, out.trials), (None, 16));
    let first = batches.lock().unwrap()[0].clone();
    (first, space, default)
}

#[test]
fn aoe_ga_measures_the_old_and_the_default_tiling_first() {
    // A miss: the default tiling opens the first generation.
    let (first, space, default) = first_batch("aoe-ga", None);
    assert!(space.len() > 1000, "a random first member is unlikely");
    assert_eq!(first.len(), 8);
    assert_eq!(first[0], default);
    // A REPEAT_TUNE hit: the bank's old tiling, then the default.
    let old = space.strategy(space.len() as u32 - 1);
    assert_ne!(old, default);
    let (first, ..) = first_batch("aoe-ga-hp", Some(old.clone()));
    assert_eq!(first[..2], [old, default.clone()]);
    // The other strategies are not seeded with it.
    let (first, ..) = first_batch("random", None);
    assert!(!first.contains(&default));
}
