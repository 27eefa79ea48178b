//! The OPAT driver through the library API: budgets, cancellation, noise, invariants.

use std::collections::BTreeSet;
use std::sync::atomic::AtomicBool;

use tunebank::bank::{Bank, Descriptor};
use tunebank::key::{FsReader, RecordKind, ResolvedOptions};
use tunebank::model::load_onnx;
use tunebank::tune::report::{OpatResult, ResultFile};
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

/// The custom layer's records of the plan's tasks, by task index (checked independently of
/// the driver's own counts: read back from the bank).
fn stored(bank: &Bank, plan: &TunePlan) -> Vec<Option<tunebank::bank::Record>> {
    plan.tasks
        .iter()
        .map(|t| {
            bank.get_record(tunebank::bank::LayerId::Custom, &t.key)
                .unwrap()
        })
        .collect()
}

/// The noiseless simulator's time of `strategy` for task `i` of `plan`: the time the noisy
/// runner's samples scatter above.
fn true_us(plan: &TunePlan, i: usize, strategy: &tunebank::key::StrategyMap) -> f64 {
    let task = tunebank::measure::TuningTask::new(plan.tasks[i].descriptor.clone());
    tunebank::measure::sim::SimRunner::simulate(&task, strategy)
        .unwrap()
        .unwrap()
}

/// `tune::opat::run` of `plan` into `bank` under `settings`, as job "resnet50": no result file, never
/// cancelled, no observer.
fn run_tune(plan: &TunePlan, bank: &Bank, settings: &TuneSettings) -> tune::opat::TuneSummary {
    tune::opat::run(
        plan,
        bank,
        settings,
        "resnet50",
        None,
        &AtomicBool::new(false),
        &mut (),
    )
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
    let s = tune::opat::run(
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
    let s = run_tune(&plan, &bank, &settings);
    assert!(s.stats.trials <= 20, "{}", s.stats.trials);
    assert!(s.interrupted, "30 ops cannot all be tuned with 20 trials");
    assert_eq!(s.report.summary.total as usize, s.outcomes.len());
    // What the report counts as added is what the bank holds as winners.
    let winners = stored(&bank, &plan)
        .into_iter()
        .flatten()
        .filter(|r| !r.performance.default_confirmed)
        .count();
    assert_eq!(s.report.summary.add as usize, winners);
}

/// Under measurement noise, only clear wins are written: each winner, re-timed by a fresh
/// noiseless simulator, is at least 1 % faster than the runner's default, and the report's
/// counts agree with what the bank holds.
#[test]
fn under_noise_only_clear_wins_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let (plan, options) = resnet_plan(Some(&["Gemm", "MaxPool", "GlobalAveragePool"]));
    assert_eq!(plan.tasks.len(), 3);
    let bank = bank(&dir);
    let settings = TuneSettings {
        runner: "sim:7".parse().unwrap(),
        trials_per_op: 32,
        ..settings(&options)
    };
    let s = run_tune(&plan, &bank, &settings);
    assert_eq!(s.report.result, OpatResult::Successful);
    use tunebank::measure::Measure;
    let bank_now = stored(&bank, &plan);
    let mut wins = 0;
    for o in &s.outcomes {
        let task = tunebank::measure::TuningTask::new(plan.tasks[o.task].descriptor.clone());
        let default = tunebank::measure::sim::SimRunner::new()
            .default_strategy(&task)
            .unwrap();
        let r = bank_now[o.task]
            .as_ref()
            .expect("every task stores a record");
        let Descriptor::Op(d) = &r.descriptor else {
            panic!("op record")
        };
        assert_eq!(d, &plan.tasks[o.task].descriptor);
        match o.decision {
            Decision::Add => {
                wins += 1;
                assert!(!r.performance.default_confirmed);
                let (winner, base) = (
                    true_us(&plan, o.task, &r.strategy),
                    true_us(&plan, o.task, &default),
                );
                assert!(
                    winner <= base * 0.99,
                    "a written win is not a real win: {winner} µs vs the default's {base} µs"
                );
            }
            Decision::Unsatisfied => {
                // No clear win: the runner's default is stored as confirmed.
                assert!(o.default_confirmed() && r.performance.default_confirmed);
                assert_eq!(r.strategy, default);
            }
            other => panic!("no hit was possible: {other:?}"),
        }
    }
    assert!(wins >= 1, "the Gemm default is far from optimal");
    assert_eq!(
        (
            s.report.summary.add,
            s.report.summary.unsatisfied,
            s.report.summary.total
        ),
        (wins, 3 - wins, 3)
    );

    // REPEAT_TUNE with the same noisy runner and seed: the search finds the stored strategy
    // again, which is never a clear win over itself.
    let again = run_tune(
        &plan,
        &bank,
        &TuneSettings {
            repeat_tune: true,
            ..settings.clone()
        },
    );
    let sum = again.report.summary;
    assert_eq!(
        sum.hit, 3,
        "every task is a hit: its winner or its confirmed default"
    );
    assert_eq!(sum.add, 0);
    // What the report calls reserved is untouched in the bank; an update really replaced it.
    let bank_after = stored(&bank, &plan);
    let mut updated = 0;
    for o in &again.outcomes {
        match o.decision {
            Decision::Reserved => assert_eq!(bank_after[o.task], bank_now[o.task]),
            Decision::Update => {
                updated += 1;
                assert_ne!(bank_after[o.task], bank_now[o.task]);
            }
            other => panic!("every task was a hit: {other:?}"),
        }
    }
    assert_eq!((sum.update, sum.reserved), (updated, 3 - updated));
}

/// The sim's GlobalAveragePool default is the best of its space, so no search beats it.
fn gap_plan() -> (TunePlan, ResolvedOptions) {
    let (plan, options) = resnet_plan(Some(&["GlobalAveragePool"]));
    assert_eq!(plan.tasks.len(), 1);
    (plan, options)
}

fn custom_record(bank: &Bank, plan: &TunePlan) -> Option<tunebank::bank::Record> {
    bank.get_record(tunebank::bank::LayerId::Custom, &plan.tasks[0].key)
        .unwrap()
}

/// A miss whose search finds no clear win stores the runner's default as confirmed: reported
/// unsatisfied (never add), then a hit for reruns; REPEAT_TUNE searches again and leaves it.
#[test]
fn a_miss_without_a_win_stores_the_default_as_confirmed() {
    use tunebank::measure::{Measure, TuningTask};
    let dir = tempfile::tempdir().unwrap();
    let (plan, options) = gap_plan();
    let bank = bank(&dir);
    let settings = TuneSettings {
        trials_per_op: 32,
        ..settings(&options)
    };
    let run = |settings: &TuneSettings| run_tune(&plan, &bank, settings);
    let first = run(&settings);
    let sum = first.report.summary;
    assert_eq!((sum.total, sum.add, sum.unsatisfied), (1, 0, 1));
    assert!(first.report.modified.is_empty(), "not a modified op");
    let o = &first.outcomes[0];
    assert_eq!(o.decision, Decision::Unsatisfied);
    assert!(o.default_confirmed());
    assert!(o.trials > 0);
    let stored = custom_record(&bank, &plan).expect("the confirmed default is in the bank");
    let default = tunebank::measure::sim::SimRunner::new()
        .default_strategy(&TuningTask::new(plan.tasks[0].descriptor.clone()))
        .unwrap();
    assert_eq!(stored.strategy, default);
    assert!(stored.performance.default_confirmed);
    assert_eq!(stored.performance.baseline_us, stored.performance.tuned_us);
    assert!(!stored.performance.samples_us.is_empty());
    assert_eq!(stored.provenance.trials, o.trials);
    let hit = bank.lookup(&plan.tasks[0].key).unwrap();
    assert!(hit.hit().unwrap().answer.performance.default_confirmed);

    // A rerun reuses it: a hit, nothing measured.
    let second = run(&settings);
    assert_eq!(
        (second.report.summary.hit, second.report.summary.reserved),
        (1, 1)
    );
    assert_eq!(second.stats.trials, 0);

    // REPEAT_TUNE searches again; without a win the entry is reserved and left untouched.
    let third = run(&TuneSettings {
        repeat_tune: true,
        ..settings.clone()
    });
    assert_eq!(
        (third.report.summary.hit, third.report.summary.reserved),
        (1, 1)
    );
    assert!(third.stats.trials > 0);
    assert!(third.outcomes[0].record.is_none());
    assert_eq!(custom_record(&bank, &plan), Some(stored.clone()));

    // A confirmed default is written only where the key holds nothing at commit time, so a
    // winner another process stored after this one's look-up is never replaced by it.
    let other_process = Bank::builder(RecordKind::Op, "Ascend910B2")
        .custom_path(dir.path().join("op.redb"))
        .no_default_builtin()
        .open()
        .unwrap();
    let mut winner = stored.clone();
    winner.performance.default_confirmed = false;
    winner.performance.tuned_us = stored.performance.tuned_us / 2.0;
    winner
        .strategy
        .insert("marker".into(), serde_json::json!("winner"));
    other_process.write_batch(&[winner.clone()]).unwrap();
    assert_eq!(bank.write_batch_if_absent(&[stored]).unwrap(), 0);
    assert_eq!(custom_record(&bank, &plan), Some(winner));
}

/// A confirmed default records the per-op budget that confirmed it. A later run with a larger
/// per-op budget searches it again (reported as a hit: reserved without a win) and confirms
/// it anew with that budget; a run with a smaller or equal budget hits it without measuring.
#[test]
fn a_confirmed_default_is_searched_again_only_under_a_larger_budget() {
    let (plan, options) = gap_plan();
    let run = |bank: &Bank, budget: usize| {
        let settings = TuneSettings {
            trials_per_op: budget,
            ..settings(&options)
        };
        run_tune(&plan, bank, &settings)
    };
    let budget_of = |bank: &Bank| {
        let r = custom_record(bank, &plan).expect("a record");
        assert!(r.performance.default_confirmed);
        r.performance.confirmed_budget
    };

    // Budget 1, then 64: the second run searches again.
    let dir = tempfile::tempdir().unwrap();
    let small_first = bank(&dir);
    let first = run(&small_first, 1);
    assert_eq!(first.outcomes[0].decision, Decision::Unsatisfied);
    assert_eq!(budget_of(&small_first), Some(1));
    let second = run(&small_first, 64);
    assert!(
        second.stats.trials > 1,
        "searched again: {:?}",
        second.stats
    );
    let sum = second.report.summary;
    assert_eq!((sum.total, sum.hit, sum.reserved, sum.add), (1, 1, 1, 0));
    assert!(
        second.report.modified.is_empty(),
        "no win, nothing modified"
    );
    assert_eq!(budget_of(&small_first), Some(64), "confirmed anew");
    // Now 64 and anything smaller hit it without measuring.
    for budget in [64, 1] {
        let again = run(&small_first, budget);
        assert_eq!(again.stats.trials, 0, "budget {budget}");
        assert_eq!(again.report.summary.reserved, 1);
    }

    // Budget 64, then 1: a hit.
    let dir = tempfile::tempdir().unwrap();
    let large_first = bank(&dir);
    run(&large_first, 64);
    assert_eq!(budget_of(&large_first), Some(64));
    let then = run(&large_first, 1);
    assert_eq!(then.stats.trials, 0);
    assert_eq!(
        (then.report.summary.hit, then.report.summary.reserved),
        (1, 1)
    );
    assert_eq!(budget_of(&large_first), Some(64));
}

/// A search the job's overall budget cut short confirms nothing: the task stays a miss.
#[test]
fn a_search_cut_short_by_the_job_budget_confirms_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (plan, options) = gap_plan();
    let bank = bank(&dir);
    let s = run_tune(
        &plan,
        &bank,
        &TuneSettings {
            trials_per_op: 32,
            total_trials: Some(4),
            ..settings(&options)
        },
    );
    assert_eq!(s.report.summary.unsatisfied, 1);
    assert!(s.stats.trials > 0 && s.stats.trials <= 4);
    assert!(!s.outcomes[0].default_confirmed());
    assert_eq!(custom_record(&bank, &plan), None);
    assert!(bank.lookup(&plan.tasks[0].key).unwrap().hit().is_none());
}

/// `confirm_rounds` below the win rule's minimum is raised to it: with `confirm_rounds = 1` on
/// a noisy runner, a win is still decided on `WinRule::min_rounds` = 7 side-by-side rounds (one
/// round's p is ½, which never passes α = 0.01), and the stored record's samples are 7 rounds ×
/// `repeats`, read back from the bank. Above the minimum, `confirm_rounds` is honoured.
#[test]
fn a_win_is_decided_on_at_least_min_rounds_whatever_confirm_rounds_says() {
    let (plan, options) = resnet_plan(Some(&["Gemm", "MaxPool", "GlobalAveragePool"]));
    let repeats = 3;
    let min_rounds = tunebank::tune::WinRule::default().min_rounds();
    assert_eq!(min_rounds, 7);
    for (confirm_rounds, rounds) in [(1, min_rounds), (9, 9)] {
        let dir = tempfile::tempdir().unwrap();
        let bank = bank(&dir);
        let settings = TuneSettings {
            runner: "sim:7".parse().unwrap(),
            trials_per_op: 32,
            confirm_rounds,
            timing: tunebank::measure::TimingSettings {
                repeats,
                ..Default::default()
            },
            ..settings(&options)
        };
        let s = run_tune(&plan, &bank, &settings);
        let wins = s
            .outcomes
            .iter()
            .filter(|o| o.decision == Decision::Add)
            .count();
        assert!(
            wins >= 1,
            "confirm_rounds = {confirm_rounds}: the Gemm default is far from optimal, yet no win"
        );
        for (i, r) in stored(&bank, &plan).iter().enumerate() {
            let r = r.as_ref().expect("every task stores a record");
            assert_eq!(
                r.performance.samples_us.len(),
                rounds * repeats as usize,
                "task {i} (confirm_rounds = {confirm_rounds}): stored samples are not {rounds} \
                 rounds of {repeats}"
            );
        }
    }
}

/// SGAT measures no rounds: its deterministic model's two exact times are judged directly
/// (`WinRule::judge_deterministic`), so `confirm_rounds = 1` decides the same wins as the
/// default 7.
#[test]
fn sgat_decisions_do_not_depend_on_confirm_rounds() {
    use tunebank::tune::sgat::{run_sgat, sgat_plan};
    let model = load_onnx(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/models/bert_layer.onnx"
    ))
    .unwrap();
    let options = ResolvedOptions::from_args(["--soc_version=Ascend910B2"], &FsReader).unwrap();
    let plan = sgat_plan(&model, &options, &options.soc().unwrap()).unwrap();
    let adds = |confirm_rounds: usize| {
        let dir = tempfile::tempdir().unwrap();
        let bank = Bank::builder(RecordKind::Graph, "Ascend910B2")
            .custom_path(dir.path().join("graph.redb"))
            .no_default_builtin()
            .open()
            .unwrap();
        let settings = TuneSettings {
            runner: "sim".parse().unwrap(),
            trials_per_op: 16,
            confirm_rounds,
            ..TuneSettings::default()
        };
        let s = run_sgat(
            &plan,
            &bank,
            None,
            &settings,
            "bert",
            None,
            &AtomicBool::new(false),
            &mut (),
        )
        .unwrap();
        let adds: Vec<usize> = s
            .outcomes
            .iter()
            .filter(|o| o.decision == Decision::Add)
            .map(|o| o.task)
            .collect();
        assert_eq!(adds.len() as u64, s.report.summary.add);
        adds
    };
    let with_one = adds(1);
    assert!(!with_one.is_empty(), "bert's subgraphs have clear wins");
    assert_eq!(with_one, adds(7));
}
