//! The measurement slots (`--tuning_parallel_num`, `TUNING_PARALLEL_NUM`): how many
//! candidates each op's search asks a board runner to measure at once. Driven through the
//! binary with the replay runner (`fixtures/runners/replay_runner.py --log`), which writes one
//! line per measure request: the request's task and its candidate count.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_tunebank");

/// Whether `python3` runs (the runner is a Python script); where it does not, the test is
/// skipped with a line saying so, except under `CI=true`, where that fails it.
fn python_available() -> bool {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        crate::common::skip_or_fail(
            "python3 is not on PATH (the replay runner is a Python script)",
        );
    }
    ok
}

/// Runs OPAT on the BERT layer's MatMul units (five distinct keys; `--tune_ops_file`) with
/// the replay runner, `slots` as `--tuning_parallel_num` (none: `TUNING_PARALLEL_NUM=2` from the
/// environment) and `fixed` as `TE_PARALLEL_COMPILER`; returns, per task, the candidate counts
/// of its measure requests in order.
fn request_sizes(
    dir: &Path,
    slots: Option<&str>,
    fixed: Option<&str>,
) -> BTreeMap<String, Vec<usize>> {
    let root = env!("CARGO_MANIFEST_DIR");
    let log = dir.join(format!(
        "requests-{}-{}.log",
        slots.unwrap_or("-"),
        fixed.unwrap_or("-")
    ));
    let runner = format!(
        "exec:python3 '{root}/fixtures/runners/replay_runner.py' '{root}/fixtures/runners/replay_matmul.json' --log '{}'",
        log.display()
    );
    let ops = dir.join("ops.txt");
    std::fs::write(&ops, "MatMul\n").unwrap();
    let out_dir = tempfile::tempdir_in(dir).unwrap();
    let mut args = vec![
        "tune".to_owned(),
        format!("--model={root}/fixtures/models/bert_layer.onnx"),
        "--job_type=2".into(),
        "--soc_version=Ascend910B2".into(),
        format!("--tune_ops_file={}", ops.display()),
        "--runner".into(),
        runner,
        "--strategy".into(),
        "random".into(),
        "--budget".into(),
        "8".into(),
        "--no-transfer".into(),
        "--bank".into(),
        dir.join(format!(
            "bank-{}.redb",
            log.file_stem().unwrap().to_str().unwrap()
        ))
        .display()
        .to_string(),
        "--output-dir".into(),
        out_dir.path().display().to_string(),
        "--quiet".into(),
    ];
    if let Some(n) = slots {
        args.extend(["--tuning_parallel_num".into(), n.into()]);
    }
    let mut c = Command::new(BIN);
    c.args(&args)
        .env("HOME", dir)
        .env("TUNING_PARALLEL_NUM", "2")
        .env_remove("TUNE_BANK_PATH")
        .env_remove("ASCEND_CACHE_PATH")
        .env_remove("ASCEND_WORK_PATH")
        // Memory never caps the slots here (the exec runner's estimate is a model's worth).
        .env("TUNEBANK_WORKER_MEMORY_MB", "1")
        .env_remove("REPEAT_TUNE")
        .env_remove("AOE_MODE")
        .env_remove("TE_PARALLEL_COMPILER")
        .stdin(Stdio::null());
    if let Some(b) = fixed {
        c.env("TE_PARALLEL_COMPILER", b);
    }
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut per_task: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for line in std::fs::read_to_string(&log).unwrap().lines() {
        let (task, n) = line.split_once(' ').unwrap();
        per_task
            .entry(task.to_owned())
            .or_default()
            .push(n.parse().unwrap());
    }
    per_task
}

/// The width of each task's first search round, sorted.
fn first_rounds(per_task: &BTreeMap<String, Vec<usize>>) -> Vec<usize> {
    let mut v: Vec<usize> = per_task.values().map(|r| r[0]).collect();
    v.sort_unstable();
    v
}

/// Eight slots over the layer's five distinct MatMuls: five searches at once, the slots dealt
/// out 2, 2, 2, 1, 1, so the board measures eight candidates at a time; one slot each with
/// as many slots as ops; `TE_PARALLEL_COMPILER` fixes the width whatever the slots; two
/// slots from `TUNING_PARALLEL_NUM` when the flag is not given.
#[test]
fn the_slots_are_dealt_out_among_the_ops_searched() {
    if !python_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let eight = request_sizes(dir.path(), Some("8"), None);
    assert_eq!(eight.len(), 5, "{eight:?}");
    assert_eq!(first_rounds(&eight), [1, 1, 2, 2, 2], "{eight:?}");
    // Every round of a task's search of 8 has its width, but the last, which the budget may
    // cut (the side-by-side re-measurement after it asks for the baseline and the best).
    for (task, sizes) in &eight {
        let w = sizes[0];
        let full = (8 - 1) / w;
        assert!(sizes[..full].iter().all(|&n| n == w), "{task}: {sizes:?}");
    }
    let five = request_sizes(dir.path(), Some("5"), None);
    assert_eq!(first_rounds(&five), [1; 5], "{five:?}");
    let fixed = request_sizes(dir.path(), Some("8"), Some("3"));
    assert_eq!(first_rounds(&fixed), [3; 5], "{fixed:?}");
    let from_env = request_sizes(dir.path(), None, None);
    assert_eq!(first_rounds(&from_env), [1; 5], "{from_env:?}");
}

/// `--tuning_parallel_num` out of AOE's range [1, 64] is refused by the command line.
#[test]
fn tuning_parallel_num_out_of_range_is_refused() {
    for bad in ["0", "65", "x"] {
        let out = Command::new(BIN)
            .args([
                "tune",
                "--model=m.onnx",
                "--soc_version=Ascend910B2",
                "--tuning_parallel_num",
                bad,
            ])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--tuning_parallel_num"), "{bad}: {err}");
    }
}
