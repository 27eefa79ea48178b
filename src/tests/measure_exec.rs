//! The external runner against `fixtures/runners/replay_runner.py`: correct answers, and a
//! runner that hangs, crashes mid-batch, exits early, prints garbage or answers with the wrong
//! number of results — each classified, none stopping the tuning.

use crate::common::timing::scale;

use std::collections::BTreeMap;
use std::time::Duration;

use search_strategies::strategies::by_name;
use search_strategies::{Driver, StopReason};
use tunebank::key::{CubeMath, DType, Format, ImplMode, OpDescriptor, SocSpec, TensorDesc};
use tunebank::measure::exec::{parse_response, split_command, ExecRunner, ProtocolError, Response};
use tunebank::measure::{
    CandidateFailure, Measure, MeasureError, Outcome, RunnerObjective, TimingSettings, TuningTask,
};

fn task() -> TuningTask {
    let t = |s: &[i64]| TensorDesc {
        shape: s.to_vec(),
        ori_shape: s.to_vec(),
        dtype: DType::Float16,
        format: Format::ND,
        ori_format: Format::ND,
    };
    TuningTask::new(OpDescriptor {
        op_type: "MatMul".into(),
        fused_ops: vec![],
        inputs: vec![t(&[256, 512]), t(&[512, 256])],
        outputs: vec![t(&[256, 256])],
        attrs: BTreeMap::new(),
        impl_mode: ImplMode::HighPerformance,
        cube_math: CubeMath::Native,
        soc: SocSpec::from_version("Ascend910B2").unwrap(),
        origin: None,
    })
}

fn runner(mode: &str, row: usize) -> ExecRunner {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/runners");
    let cmd = format!(
        "python3 '{dir}/replay_runner.py' '{dir}/replay_matmul.json' --mode {mode} --on-row {row}"
    );
    ExecRunner::new(&cmd)
        .unwrap()
        .with_timing(TimingSettings {
            warmup: 1,
            repeats: 5,
            timeout_ms: scale(Duration::from_millis(400)).as_millis() as u64,
        })
        .with_startup_timeout(scale(Duration::from_secs(2)))
}

/// Whether `python3` runs. Where it does not, the test that needs it is skipped with a line
/// saying so — except under `CI=true`, where a missing interpreter fails the test.
fn python_available() -> bool {
    let ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        crate::common::skip_or_fail(
            "python3 is not on PATH (the external runner fixture is a Python script)",
        );
    }
    ok
}

/// Measures the whole replayed space in one batch; returns outcomes in table row order.
fn measure_all(r: &mut ExecRunner) -> Vec<Outcome> {
    let task = task();
    let space = r.space(&task).unwrap();
    assert_eq!(space.len(), 8);
    let cands: Vec<_> = (0..8).map(|i| space.strategy(i)).collect();
    r.measure(&task, &cands).unwrap()
}

#[test]
fn a_well_behaved_runner_describes_and_measures() {
    if !python_available() {
        return;
    }
    let mut r = runner("normal", 0);
    let task = task();
    let d = r.default_strategy(&task).unwrap();
    assert_eq!(d["baseM"], 64);
    let outs = measure_all(&mut r);
    // Space ids follow value order: row 7 (128, 128, 2) is the invalid tiling.
    assert_eq!(outs[7].failure().unwrap().kind, CandidateFailure::BuildFail);
    for o in &outs[..7] {
        let Outcome::Measurement { samples_us } = o else {
            panic!("{o:?}")
        };
        assert_eq!(samples_us.len(), 5);
    }
    assert!(outs[6].median_us().unwrap() < outs[0].median_us().unwrap());
    assert_eq!(r.device["soc_version"], "Ascend910B2");
    assert_eq!(r.starts, 1, "one process served every request");
    // A candidate the table does not know.
    let mut odd = d.clone();
    odd.insert("baseM".into(), 96.into());
    let o = r.measure(&task, &[odd]).unwrap().remove(0);
    assert_eq!(o.failure().unwrap().kind, CandidateFailure::Unsupported);
}

fn check_misbehaviour(mode: &str, row: usize, kind: CandidateFailure, reason: &str) {
    if !python_available() {
        return;
    }
    let mut r = runner(mode, row);
    let outs = measure_all(&mut r);
    for (i, o) in outs.iter().enumerate() {
        if i == row {
            let f = o
                .failure()
                .unwrap_or_else(|| panic!("{mode}: row {i} {o:?}"));
            assert_eq!(f.kind, kind, "{mode}: {}", f.reason);
            assert!(f.reason.contains(reason), "{mode}: {}", f.reason);
        } else if i == 7 {
            assert_eq!(o.failure().unwrap().kind, CandidateFailure::BuildFail);
        } else {
            assert!(
                o.median_us().is_some(),
                "{mode}: row {i} was not measured: {o:?}"
            );
        }
    }
    assert!(r.starts >= 2, "{mode}: the runner was restarted");

    // Tuning goes on: a search over the space finishes with every configuration measured.
    let mut r = runner(mode, row);
    let task = task();
    let space = r.space(&task).unwrap();
    let mut strategy = by_name("random", 3).unwrap();
    let mut d = Driver::new(8);
    d.batch = 3;
    let mut obj = RunnerObjective::new(&mut r, &task);
    let out = d.run(&space.space, strategy.as_mut(), &mut obj);
    assert!(matches!(
        out.stop,
        StopReason::BudgetExhausted | StopReason::SpaceExhausted
    ));
    assert_eq!(out.history.len(), 8);
    assert!(obj.error.is_none(), "{:?}", obj.error);
    assert_eq!(
        obj.outcomes
            .values()
            .filter(|o| o.median_us().is_some())
            .count(),
        6,
        "{mode}: all but the culprit and the invalid tiling measured"
    );
}

#[test]
fn a_hanging_runner_is_a_run_timeout_and_tuning_continues() {
    check_misbehaviour("hang", 2, CandidateFailure::RunTimeout, "no answer");
}

#[test]
fn a_runner_crashing_mid_batch_is_a_run_crash_and_tuning_continues() {
    check_misbehaviour("crash", 3, CandidateFailure::RunCrash, "exited with");
}

#[test]
fn a_runner_exiting_early_is_a_run_crash() {
    check_misbehaviour("exit", 1, CandidateFailure::RunCrash, "exited early");
}

#[test]
fn a_runner_printing_garbage_is_an_env_exception_and_tuning_continues() {
    check_misbehaviour(
        "garbage",
        4,
        CandidateFailure::EnvException,
        "not a JSON object",
    );
}

#[test]
fn a_runner_answering_the_wrong_count_is_an_env_exception_and_tuning_continues() {
    check_misbehaviour(
        "wrong_count",
        5,
        CandidateFailure::EnvException,
        "results for",
    );
}

#[test]
fn a_missing_command_is_a_task_level_error() {
    let mut r = ExecRunner::new("/nonexistent/runner --flag").unwrap();
    match r.space(&task()) {
        Err(MeasureError::Runner { problem, .. }) => assert!(problem.contains("cannot start")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn response_parsing_checks_version_id_type_and_count() {
    let ok = r#"{"version":1,"id":3,"type":"measure","results":[{"status":"ok","samples_us":[1.5,2]},{"status":"aicore_error","reason":"x"},{"status":"ok","samples_us":[-1]},{"status":"weird"}]}"#;
    let Response::Measure { results, .. } = parse_response(ok, 3, "measure", 4).unwrap() else {
        panic!()
    };
    assert_eq!(results[0].median_us(), Some(1.75));
    assert_eq!(
        results[1].failure().unwrap().kind,
        CandidateFailure::AicoreError
    );
    assert_eq!(
        results[2].failure().unwrap().kind,
        CandidateFailure::EnvException
    );
    assert_eq!(
        results[3].failure().unwrap().kind,
        CandidateFailure::EnvException
    );
    assert!(matches!(
        parse_response(ok, 4, "measure", 4),
        Err(ProtocolError::WrongId { .. })
    ));
    assert!(matches!(
        parse_response(ok, 3, "measure", 3),
        Err(ProtocolError::WrongCount {
            got: 4,
            expected: 3
        })
    ));
    assert!(matches!(
        parse_response(
            &ok.replace("\"version\":1", "\"version\":2"),
            3,
            "measure",
            4
        ),
        Err(ProtocolError::Version(_))
    ));
    assert!(matches!(
        parse_response("hello", 1, "measure", 0),
        Err(ProtocolError::NotJson(_))
    ));
    assert!(matches!(
        parse_response("[1]", 1, "measure", 0),
        Err(ProtocolError::NotJson(_))
    ));
    let err = r#"{"version":1,"id":9,"type":"error","message":"no device"}"#;
    assert_eq!(
        parse_response(err, 9, "measure", 2).unwrap(),
        Response::Error {
            message: "no device".into()
        }
    );
}

#[test]
fn commands_split_like_a_shell_without_one() {
    assert_eq!(
        split_command(r#"python3 'a b.py' "c \"d\"" e\ f"#).unwrap(),
        ["python3", "a b.py", "c \"d\"", "e f"]
    );
    assert!(split_command("  ").is_err());
    assert!(split_command("'open").is_err());
}
