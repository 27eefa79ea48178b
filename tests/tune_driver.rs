//! The OPAT driver through the library API: budgets, cancellation, noise, invariants.

use std::collections::BTreeSet;
use std::sync::atomic::AtomicBool;

use tunebank::bank::{Bank, Descriptor};
use tunebank::key::{FsReader, RecordKind, ResolvedOptions};
use tunebank::model::load_onnx;
use tunebank::report::{OpatResult, ResultFile};
use tunebank::tune::{self, Decision, TunePlan, TuneSettings};

fn resnet_plan(only: Option<&[&str]>) -> (TunePlan, ResolvedOptions) {
    let model = load_onnx(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/models/resnet50.onnx"
    ))
    .unwrap();
    let options = ResolvedOptions::from_args(["--soc_version=Ascend910B2"], &FsReader).unwrap();
    let soc = options.soc().unwrap();
    let only: Option<BTreeSet<String>> = only.map(|o| o.iter().map(|s| s.to_string()).collect());
    (
        tune::plan(&model, &options, &soc, only.as_ref()).unwrap(),
        options,
    )
}

fn bank(dir: &tempfile::TempDir) -> Bank {
    Bank::builder(RecordKind::Op, "Ascend910B2")
        .custom_path(dir.path().join("op.redb"))
        .no_default_builtin()
        .open()
        .unwrap()
}

fn settings(options: &ResolvedOptions) -> TuneSettings {
    TuneSettings {
        strategy: "random".into(),
        trials_per_op: 8,
        workers: 2,
        options_given: options.given().clone(),
        ..TuneSettings::default()
    }
}

#[test]
fn identical_keys_are_tuned_once() {
    let (plan, _) = resnet_plan(None);
    assert_eq!(plan.units.len(), 72);
    assert_eq!(plan.tasks.len(), 30);
    let names: usize = plan.tasks.iter().map(|t| t.op_names.len()).sum();
    assert_eq!(names, 72, "every op is reported under its key's task");
}

#[test]
fn a_cancelled_job_writes_nothing_and_says_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    let (plan, options) = resnet_plan(None);
    let bank = bank(&dir);
    let file = ResultFile::opat(dir.path(), std::time::SystemTime::now(), 1);
    let cancel = AtomicBool::new(true);
    let s = tune::run(
        &plan,
        &bank,
        &settings(&options),
        "resnet50",
        Some(&file),
        &cancel,
        &mut (),
    )
    .unwrap();
    assert!(s.interrupted);
    assert!(s.outcomes.is_empty());
    assert_eq!(s.report.result, OpatResult::Incomplete);
    assert_eq!(s.report.tuning_time_s, None);
    assert_eq!(
        bank.layer_store(tunebank::bank::LayerId::Custom)
            .unwrap()
            .len()
            .unwrap(),
        0
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&file.path).unwrap()).unwrap();
    assert_eq!(
        v[&file.report_id][1]["OPAT"]["opat_tuning_result"],
        "tuning incomplete"
    );
}

#[test]
fn the_total_trial_budget_is_never_exceeded() {
    let dir = tempfile::tempdir().unwrap();
    let (plan, options) = resnet_plan(None);
    let bank = bank(&dir);
    let settings = TuneSettings {
        total_trials: Some(20),
        ..settings(&options)
    };
    let s = tune::run(
        &plan,
        &bank,
        &settings,
        "resnet50",
        None,
        &AtomicBool::new(false),
        &mut (),
    )
    .unwrap();
    assert!(s.stats.trials <= 20, "{}", s.stats.trials);
    assert!(s.interrupted, "30 ops cannot all be tuned with 20 trials");
    assert!(s.report.summary.is_consistent());
    assert_eq!(s.report.summary.total as usize, s.outcomes.len());
}

/// Under measurement noise, only clear wins are written, and each written record's samples
/// are clearly below its baseline.
#[test]
fn under_noise_only_clear_wins_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let (plan, options) = resnet_plan(Some(&["Gemm", "MaxPool", "GlobalAveragePool"]));
    assert_eq!(plan.tasks.len(), 3);
    let bank = bank(&dir);
    let settings = TuneSettings {
        runner: "sim:7".into(),
        trials_per_op: 32,
        ..settings(&options)
    };
    let s = tune::run(
        &plan,
        &bank,
        &settings,
        "resnet50",
        None,
        &AtomicBool::new(false),
        &mut (),
    )
    .unwrap();
    assert!(s.report.summary.is_consistent());
    assert_eq!(s.report.result, OpatResult::Successful);
    let mut wins = 0;
    for o in &s.outcomes {
        match o.decision {
            Decision::Add => {
                wins += 1;
                let r = o.record.as_ref().unwrap();
                let med = tunebank::measure::median(&r.performance.samples_us).unwrap();
                assert!(med <= r.performance.baseline_us * 0.99, "{o:?}");
                let Descriptor::Op(d) = &r.descriptor else {
                    panic!("op record")
                };
                assert_eq!(d, &plan.tasks[o.task].descriptor);
            }
            Decision::Unsatisfied => assert!(o.record.is_none()),
            other => panic!("no hit was possible: {other:?}"),
        }
    }
    assert!(wins >= 1, "the Gemm default is far from optimal");

    // REPEAT_TUNE with the same noisy runner and seed: the search finds the stored strategy
    // again, which is never a clear win over itself.
    let again = tune::run(
        &plan,
        &bank,
        &TuneSettings {
            repeat_tune: true,
            ..settings.clone()
        },
        "resnet50",
        None,
        &AtomicBool::new(false),
        &mut (),
    )
    .unwrap();
    let sum = again.report.summary;
    assert!(sum.is_consistent());
    assert_eq!(sum.hit, wins);
    assert_eq!(sum.add, 0);
}
