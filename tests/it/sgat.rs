//! `tunebank tune --job_type=1` end to end: the result file's schema, SGAT then OPAT then
//! `convert`, budgets, and a run killed or stopped midway. The library's side of SGAT (partition,
//! subgraph model, search, driver) is `src/tests/sgat.rs`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_tunebank");

fn fixture(name: &str) -> String {
    format!("{}/fixtures/models/{name}", env!("CARGO_MANIFEST_DIR"))
}

// --- the command line -----------------------------------------------------------------

fn cmd(home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .env("HOME", home)
        .env_remove("TUNE_BANK_PATH")
        .env_remove("ASCEND_CACHE_PATH")
        .env_remove("TUNEBANK_BUILTIN_PATH")
        .env_remove("AOE_MODE")
        .env_remove("REPEAT_TUNE")
        .env("TUNING_PARALLEL_NUM", "2")
        .stdin(Stdio::null());
    c
}

fn sgat_file(dir: &Path) -> Value {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.starts_with("aoe_result_sgat_") && n.contains("_pid") && n.ends_with(".json")
        })
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap()
}

/// Checks the SGAT result file's schema (DESIGN §9); returns the SGAT section.
fn check_schema(v: &Value) -> Value {
    let obj = v.as_object().unwrap();
    assert_eq!(obj.len(), 1);
    let (id, parts) = obj.iter().next().unwrap();
    assert!(id.starts_with("report_"));
    let basic = &parts[0]["basic"];
    assert!(basic["tuning_name"].is_string());
    assert!(basic["tuning_time(s)"].is_number());
    let s = parts[1]["SGAT"].clone();
    for k in [
        "model_baseline_performance(ms)",
        "model_result_performance(ms)",
    ] {
        assert!(s[k].as_f64().unwrap() > 0.0, "{k}");
    }
    check_improvement(
        &s["model_performance_improvement"],
        &s["model_baseline_performance(ms)"],
        &s["model_result_performance(ms)"],
    );
    for list in ["add_repo_subgraphs", "update_repo_subgraphs"] {
        for e in s["repo_modified_subgraphs"][list].as_array().unwrap() {
            check_improvement(
                &e["performance_improvement"],
                &e["performance_before_tune(ms)"],
                &e["performance_after_tune(ms)"],
            );
            assert_eq!(e["repo_key"].as_str().unwrap().len(), 64);
        }
    }
    let r = &s["repo_summary"];
    let n = |k: &str| r[k].as_u64().unwrap();
    assert_eq!(
        n("repo_hit_num"),
        n("repo_update_num") + n("repo_reserved_num")
    );
    assert_eq!(
        n("total_num"),
        n("repo_add_num") + n("repo_hit_num") + n("repo_unsatisfied_num")
    );
    assert_eq!(s["sgat_tuning_result"], "tuning successful");
    s
}

/// An improvement string (`"17.71%"`) is AOE's `before / after - 1` in per cent, two decimals,
/// of the times beside it, recomputed here: within the string's rounding plus what rounding
/// the times to the file's 6 decimals (ms) can move it by.
fn check_improvement(imp: &Value, before: &Value, after: &Value) {
    let (b, a) = (before.as_f64().unwrap(), after.as_f64().unwrap());
    assert!(b > 0.0 && a > 0.0, "{before} {after}");
    let text = imp.as_str().unwrap();
    let pct: f64 = text
        .strip_suffix('%')
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{text:?} is not a percentage"));
    assert_eq!(text, format!("{pct:.2}%"), "two decimals");
    let want = (b / a - 1.0) * 100.0;
    let slack = 0.005 + 100.0 * (b / a) * (0.5e-6 / b + 0.5e-6 / a) + 1e-9;
    assert!(
        (pct - want).abs() <= slack,
        "{text} for {b} ms -> {a} ms: want {want:.4}%"
    );
}

fn run_ok(c: &mut Command) -> Output {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// SGAT on the command line (ResNet-50 at batch 32 and BERT, each on 910B2 and 310P3), a rerun
/// that is all hits, then OPAT and convert with every op a hit.
#[test]
fn cli_sgat_then_opat_then_convert() {
    let cases = [
        (
            "resnet50.onnx",
            "Ascend910B2",
            Some("--input_shape=input:32,3,224,224"),
        ),
        (
            "resnet50.onnx",
            "Ascend310P3",
            Some("--input_shape=input:32,3,224,224"),
        ),
        ("bert_layer.onnx", "Ascend910B2", None),
        ("bert_layer.onnx", "Ascend310P3", None),
    ];
    for (model, soc, shape) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let banks = tmp.path().join("banks");
        std::fs::create_dir_all(&banks).unwrap();
        let model = fixture(model);
        let m = format!("--model={model}");
        let s = format!("--soc_version={soc}");
        let mut common = vec![m.as_str(), s.as_str()];
        common.extend(shape);
        let tune = |job: &str, out: &Path| {
            let o = out.to_str().unwrap().to_owned();
            let mut args = vec!["tune", job, "--budget", "16", "--output-dir", &o];
            args.extend(common.iter().copied());
            let mut c = cmd(tmp.path(), &args);
            c.env("TUNE_BANK_PATH", &banks);
            run_ok(&mut c)
        };
        let (o1, o2, o3) = (
            tmp.path().join("o1"),
            tmp.path().join("o2"),
            tmp.path().join("o3"),
        );
        tune("--job_type=1", &o1);
        let first = check_schema(&sgat_file(&o1));
        assert!(
            first["model_result_performance(ms)"].as_f64()
                < first["model_baseline_performance(ms)"].as_f64(),
            "{model} {soc}"
        );
        assert!(!first["repo_modified_subgraphs"]["add_repo_subgraphs"]
            .as_array()
            .unwrap()
            .is_empty());
        assert!(banks.join("tunebank_graph.redb").exists());
        tune("--job_type=1", &o2);
        let second = check_schema(&sgat_file(&o2));
        let r = &second["repo_summary"];
        assert_eq!(
            r["repo_hit_num"], r["total_num"],
            "{model} {soc}: rerun all hits"
        );
        assert_eq!(
            second["model_result_performance(ms)"],
            first["model_result_performance(ms)"]
        );
        // OPAT afterwards, then the converter's view: every op a hit.
        tune("--job_type=2", &o3);
        let mut args = vec!["convert", "--json"];
        args.extend(common.iter().copied());
        let mut c = cmd(tmp.path(), &args);
        c.env("TUNE_BANK_PATH", &banks);
        let out = run_ok(&mut c);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            v["hits"], v["total"],
            "{model} {soc}: convert after SGAT and OPAT"
        );
    }
}

/// Polls `dir` until the SGAT result file reports a finished subgraph while `child` runs;
/// returns that result file.
fn wait_for_finished_subgraphs(dir: &Path, child: &mut std::process::Child) -> Value {
    let start = std::time::Instant::now();
    loop {
        let found = std::fs::read_dir(dir).ok().and_then(|d| {
            d.filter_map(|e| e.ok()).find(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("aoe_result_sgat_")
            })
        });
        if let Some(v) = found
            .and_then(|e| std::fs::read(e.path()).ok())
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        {
            let sgat = &v.as_object().unwrap().values().next().unwrap()[1]["SGAT"];
            if sgat["repo_summary"]["total_num"].as_u64().unwrap_or(0) >= 1 {
                return v;
            }
        }
        assert!(child.try_wait().unwrap().is_none(), "tuner ended early");
        assert!(
            start.elapsed() < crate::common::timing::scale(std::time::Duration::from_secs(120)),
            "no subgraph finished"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// An SGAT job long enough to stop midway: ResNet-50 at four dynamic batch sizes (some forty
/// subgraph tasks, the result file rewritten after each).
fn spawn_long_sgat(home: &Path, banks: &Path, out: &Path) -> std::process::Child {
    let model = format!("--model={}", fixture("resnet50.onnx"));
    let o = out.to_str().unwrap();
    let mut c = cmd(
        home,
        &[
            "tune",
            "--job_type=1",
            &model,
            "--soc_version=Ascend910B2",
            "--input_shape=input:-1,3,224,224",
            "--dynamic_batch_size=1,2,4,8",
            "--output-dir",
            o,
        ],
    );
    c.env("TUNE_BANK_PATH", banks)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c.spawn().unwrap()
}

/// Reruns the long job to the end; returns its SGAT section (checked against the schema).
fn rerun_long_sgat(home: &Path, banks: &Path, out: &Path) -> Value {
    std::fs::create_dir_all(out).unwrap();
    let mut child = spawn_long_sgat(home, banks, out);
    assert!(child.wait().unwrap().success());
    check_schema(&sgat_file(out))
}

/// `tune --job_type=1` killed with SIGKILL mid-job leaves a graph bank that verifies and a
/// valid result file ("tuning incomplete"); a rerun continues: every subgraph reported before
/// the kill is a hit.
#[test]
fn sgat_killed_with_sigkill_leaves_a_sound_graph_bank_and_a_rerun_continues() {
    let tmp = tempfile::tempdir().unwrap();
    let banks = tmp.path().join("banks");
    let out = tmp.path().join("killed");
    std::fs::create_dir_all(&banks).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    let mut child = spawn_long_sgat(tmp.path(), &banks, &out);
    wait_for_finished_subgraphs(&out, &mut child);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let v = sgat_file(&out);
    let sgat = &v.as_object().unwrap().values().next().unwrap()[1]["SGAT"];
    assert_eq!(sgat["sgat_tuning_result"], "tuning incomplete");
    let killed = sgat["repo_summary"]["total_num"].as_u64().unwrap();
    let bank = banks.join("tunebank_graph.redb");
    let verify = cmd(
        tmp.path(),
        &[
            "bank",
            "verify",
            "--bank",
            bank.to_str().unwrap(),
            "--soc_version=Ascend910B2",
        ],
    )
    .output()
    .unwrap();
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
    let rerun = rerun_long_sgat(tmp.path(), &banks, &tmp.path().join("rerun"));
    let r = &rerun["repo_summary"];
    assert!(
        r["repo_hit_num"].as_u64().unwrap() >= killed,
        "every subgraph reported before the kill is a hit: {killed} then {r}"
    );
    assert!(r["total_num"].as_u64().unwrap() > killed);
}

/// SIGTERM stops SGAT cleanly: exit 130, "tuning incomplete" without a tuning time; a rerun
/// completes and continues where it stopped.
#[test]
fn sgat_stopped_with_sigterm_exits_130_and_a_rerun_completes() {
    let tmp = tempfile::tempdir().unwrap();
    let banks = tmp.path().join("banks");
    let out = tmp.path().join("stopped");
    std::fs::create_dir_all(&banks).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    let mut child = spawn_long_sgat(tmp.path(), &banks, &out);
    wait_for_finished_subgraphs(&out, &mut child);
    // SAFETY: sending a signal to our own child process.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let v = sgat_file(&out);
    let parts = v.as_object().unwrap().values().next().unwrap();
    assert!(parts[0]["basic"].get("tuning_time(s)").is_none());
    let sgat = &parts[1]["SGAT"];
    assert_eq!(sgat["sgat_tuning_result"], "tuning incomplete");
    let stopped = sgat["repo_summary"]["total_num"].as_u64().unwrap();
    let rerun = rerun_long_sgat(tmp.path(), &banks, &tmp.path().join("rerun"));
    let r = &rerun["repo_summary"];
    assert!(
        r["repo_hit_num"].as_u64().unwrap() >= stopped,
        "{stopped} then {r}"
    );
    assert!(r["total_num"].as_u64().unwrap() > stopped);
}
