//! End-to-end tests of `tunebank tune` and `tunebank convert`, driving the binary on the
//! ResNet-50 fixture with the simulated Ascend910B2 runner.

use crate::common::timing::scale;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_tunebank");

fn fixture(name: &str) -> String {
    format!("{}/fixtures/models/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// A sandbox: HOME, ASCEND_WORK_PATH and a bank file inside one temporary directory.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        Sandbox { dir }
    }

    fn bank(&self) -> PathBuf {
        self.dir.path().join("bank/op.redb")
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .env("HOME", self.dir.path().join("home"))
            .env("ASCEND_WORK_PATH", self.dir.path().join("work"))
            .env("TUNING_PARALLEL_NUM", "2")
            .env_remove("TUNE_BANK_PATH")
            .env_remove("ASCEND_CACHE_PATH")
            .env_remove("TUNEBANK_BUILTIN_PATH")
            .env_remove("AOE_MODE")
            .env_remove("REPEAT_TUNE")
            .env_remove("TE_PARALLEL_COMPILER")
            .env_remove("TUNEBANK_WORKER_MEMORY_MB")
            .stdin(Stdio::null());
        c
    }

    /// `tune` on `model` with a small budget into this sandbox's bank and a fresh output dir;
    /// returns the process output and the result file's JSON.
    fn tune(&self, model: &str, extra: &[&str], env: &[(&str, &str)]) -> (Output, Option<Value>) {
        let out_dir = tempfile::tempdir_in(self.dir.path()).unwrap().keep();
        let bank = self.bank();
        let strategy: &[&str] = if extra.contains(&"--strategy") {
            &[]
        } else {
            &["--strategy", "random"]
        };
        let mut args = vec![
            "tune",
            "--model",
            model,
            "--job_type=2",
            "--soc_version=Ascend910B2",
            "--budget",
            "8",
        ];
        args.extend_from_slice(strategy);
        args.extend_from_slice(&[
            "--bank",
            bank.to_str().unwrap(),
            "--output-dir",
            out_dir.to_str().unwrap(),
        ]);
        args.extend_from_slice(extra);
        let mut c = self.cmd(&args);
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        (out, result_json(&out_dir))
    }

    fn convert(&self, extra: &[&str]) -> Output {
        let bank = self.bank();
        let model = fixture("resnet50.onnx");
        let mut args = vec![
            "convert",
            "--model",
            &model,
            "--soc_version=Ascend910B2",
            "--bank",
            bank.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        self.cmd(&args).output().unwrap()
    }
}

fn result_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    let n = p.file_name().unwrap().to_string_lossy().into_owned();
                    n.starts_with("aoe_result_opat_") && n.ends_with(".json")
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn result_json(dir: &Path) -> Option<Value> {
    let f = result_files(dir).pop()?;
    Some(serde_json::from_slice(&std::fs::read(f).unwrap()).expect("result file is JSON"))
}

/// (basic, OPAT) of a result file, checking its top-level shape.
fn parts(v: &Value) -> (&Value, &Value) {
    let obj = v.as_object().expect("object");
    assert_eq!(obj.len(), 1);
    let (k, list) = obj.iter().next().unwrap();
    assert!(k.starts_with("report_"), "{k}");
    let list = list.as_array().unwrap();
    (&list[0]["basic"], &list[1]["OPAT"])
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Summary {
    add: u64,
    hit: u64,
    reserved: u64,
    unsatisfied: u64,
    update: u64,
    total: u64,
}

fn summary(opat: &Value) -> Summary {
    let s = &opat["repo_summary"];
    let g = |k: &str| s[k].as_u64().unwrap_or_else(|| panic!("{k} in {s}"));
    let r = Summary {
        add: g("repo_add_num"),
        hit: g("repo_hit_num"),
        reserved: g("repo_reserved_num"),
        unsatisfied: g("repo_unsatisfied_num"),
        update: g("repo_update_num"),
        total: g("total_num"),
    };
    assert_eq!(
        r.hit,
        r.update + r.reserved,
        "hit = update + reserved: {r:?}"
    );
    assert_eq!(
        r.total,
        r.add + r.hit + r.unsatisfied,
        "total = add + hit + unsatisfied: {r:?}"
    );
    r
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn convert_hits(out: &Output) -> (u64, u64) {
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (v["hits"].as_u64().unwrap(), v["total"].as_u64().unwrap())
}

/// The whole cycle on ResNet-50: tune, rerun (hits only), REPEAT_TUNE (update/reserved), and
/// convert under the same and under another precision mode.
#[test]
fn tune_rerun_repeat_and_convert_resnet50() {
    let sb = Sandbox::new();
    let model = fixture("resnet50.onnx");

    let (out, json) = sb.tune(&model, &[], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json = json.expect("a result file");
    let (basic, opat) = parts(&json);
    assert_eq!(opat["opat_tuning_result"], "tuning successful");
    assert_eq!(basic["tuning_name"], "resnet50");
    assert!(basic["tuning_time(s)"].as_f64().is_some());
    let first = summary(opat);
    assert_eq!(first.total, 30, "ResNet-50 has 30 unique op keys");
    assert_eq!(first.hit, 0);
    assert!(first.add >= 10, "a clear win on many ops: {first:?}");
    let modified = opat["repo_modified_operators"].as_array().unwrap();
    assert!(
        modified.len() as u64 >= first.add,
        "every op of a key is listed"
    );
    for m in modified {
        let perf = &m["tune_performance"]["Schedule"];
        let (a, b) = (
            perf["performance_after_tune(us)"].as_f64().unwrap(),
            perf["performance_before_tune(us)"].as_f64().unwrap(),
        );
        assert!(a < b, "{m}");
        assert_eq!(perf["update_mode"], "add");
        let pct = perf["performance_improvement"].as_str().unwrap();
        assert!(pct.ends_with('%') && pct.contains('.'), "{pct}");
    }

    // Rerun: every op is now a hit and reused, nothing is measured. Added ops hit their
    // winner; unsatisfied ones hit the default their search confirmed.
    let (out, json) = sb.tune(&model, &[], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let second = summary(parts(json.as_ref().unwrap()).1);
    assert_eq!(second.total, first.total);
    assert_eq!(second.hit, first.total, "{second:?}");
    assert_eq!(second.reserved, first.total);
    assert!(
        text(&out.stdout).contains(" 0 candidates measured"),
        "{}",
        text(&out.stdout)
    );

    // REPEAT_TUNE: hits are tuned again against their bank entry; no hit is lost or added.
    // Without transfer the search is the first tune's (same seed; with transfer it would start
    // from the other ops' new records), so it re-finds each entry.
    let (out, json) = sb.tune(&model, &["--no-transfer"], &[("REPEAT_TUNE", "True")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let third = summary(parts(json.as_ref().unwrap()).1);
    assert_eq!(third.hit, first.total, "{third:?}");
    assert_eq!(third.add, 0, "same search, same seed: nothing new to add");
    assert_eq!(
        third.update, 0,
        "the same strategy re-found is not a clear win over itself"
    );

    // Convert with the same options: every op hits.
    let out = sb.convert(&["--json"]);
    let (hits, total) = convert_hits(&out);
    assert_eq!(total, 72, "ResNet-50 has 72 fused ops");
    assert_eq!(hits, total, "100% hits after tuning");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys = |default_confirmed: bool| -> std::collections::BTreeSet<String> {
        v["ops"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["result"] == "hit" && o["default_confirmed"] == default_confirmed)
            .map(|o| o["key"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(keys(false).len() as u64, first.add);
    assert_eq!(keys(true).len() as u64, first.unsatisfied);
    assert_eq!(
        v["default_confirmed_hits"].as_u64().unwrap(),
        v["ops"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["default_confirmed"] == true)
            .count() as u64
    );
    let out = sb.convert(&["--error-on-miss"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("72/72 ops hit (100.0%)"));

    // Another precision mode changes the dtypes of some ops only: they miss, the rest hit.
    let (other_hits, other_total) =
        convert_hits(&sb.convert(&["--json", "--precision_mode=allow_fp32_to_fp16"]));
    assert_eq!(other_total, total);
    assert!(other_hits < hits, "{other_hits} vs {hits}");
    assert!(other_hits > 0, "unaffected ops still hit");

    // The bank is sound.
    let out = sb
        .cmd(&[
            "bank",
            "verify",
            "--bank",
            sb.bank().to_str().unwrap(),
            "--soc_version=Ascend910B2",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stdout));
}

fn wait_for_finished_ops(dir: &Path, child: &mut std::process::Child) -> Value {
    let start = Instant::now();
    loop {
        if let Some(v) = result_json(dir) {
            let (_, opat) = parts(&v);
            if summary(opat).total >= 1 {
                return v;
            }
        }
        assert!(child.try_wait().unwrap().is_none(), "tuner ended early");
        assert!(
            start.elapsed() < scale(Duration::from_secs(60)),
            "no op finished"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn spawn_slow_tune(sb: &Sandbox, out_dir: &Path) -> std::process::Child {
    let model = fixture("resnet50.onnx");
    let bank = sb.bank();
    sb.cmd(&[
        "tune",
        "--model",
        &model,
        "--job-type",
        "op",
        "--soc_version=Ascend910B2",
        "--budget",
        "64",
        "--strategy",
        "random",
        "--bank",
        bank.to_str().unwrap(),
        "--output-dir",
        out_dir.to_str().unwrap(),
    ])
    .env("TUNING_PARALLEL_NUM", "1")
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap()
}

/// A tuner killed with SIGKILL mid-run leaves a sound bank and a valid result file; a rerun
/// completes and reuses what was finished.
#[test]
fn sigkill_mid_run_leaves_bank_and_result_file_valid() {
    let sb = Sandbox::new();
    let out_dir = sb.dir.path().join("killed");
    std::fs::create_dir_all(&out_dir).unwrap();
    let mut child = spawn_slow_tune(&sb, &out_dir);
    wait_for_finished_ops(&out_dir, &mut child);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let v = result_json(&out_dir).expect("result file still there");
    let (basic, opat) = parts(&v);
    let killed = summary(opat);
    assert_eq!(opat["opat_tuning_result"], "tuning incomplete");
    assert!(basic.get("tuning_time(s)").is_none());
    let out = sb
        .cmd(&[
            "bank",
            "verify",
            "--bank",
            sb.bank().to_str().unwrap(),
            "--soc_version=Ascend910B2",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stdout));

    let (out, json) = sb.tune(&fixture("resnet50.onnx"), &[], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rerun = summary(parts(json.as_ref().unwrap()).1);
    assert_eq!(rerun.total, 30);
    // Every op the result file reported finished (a winner or a confirmed default) had its
    // record written first, so it is a hit now.
    assert!(
        rerun.hit >= killed.total,
        "every op reported before the kill is a hit: {killed:?} then {rerun:?}"
    );
}

/// SIGINT stops the tuner cleanly: exit 130, "tuning incomplete", no tuning time; a rerun
/// completes.
#[test]
fn sigint_stops_cleanly_and_rerun_completes() {
    let sb = Sandbox::new();
    let out_dir = sb.dir.path().join("interrupted");
    std::fs::create_dir_all(&out_dir).unwrap();
    let mut child = spawn_slow_tune(&sb, &out_dir);
    wait_for_finished_ops(&out_dir, &mut child);
    // SAFETY: sending a signal to our own child process.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let v = result_json(&out_dir).unwrap();
    let (basic, opat) = parts(&v);
    assert_eq!(opat["opat_tuning_result"], "tuning incomplete");
    assert!(basic.get("tuning_time(s)").is_none());
    let stopped = summary(opat);
    assert!(stopped.total < 30, "{stopped:?}");

    let (out, json) = sb.tune(&fixture("resnet50.onnx"), &[], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (basic, opat) = parts(json.as_ref().unwrap());
    assert_eq!(opat["opat_tuning_result"], "tuning successful");
    assert!(basic["tuning_time(s)"].as_f64().is_some());
    let rerun = summary(opat);
    assert_eq!(rerun.total, 30);
    assert!(
        rerun.hit >= stopped.total,
        "the rerun continues where it stopped: {stopped:?} then {rerun:?}"
    );
}

fn assert_bad_input(sb: &Sandbox, out: &Output, needle: &str) {
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains(needle), "expected {needle:?} in: {err}");
    assert!(!sb.bank().exists(), "nothing written to the bank");
    assert!(result_files(&sb.dir.path().join("work")).is_empty());
}

#[test]
fn bad_models_and_options_are_clear_errors_and_write_nothing() {
    let sb = Sandbox::new();
    let (out, _) = sb.tune(&fixture("garbage.onnx"), &[], &[]);
    assert_bad_input(&sb, &out, "is not an ONNX model");
    let (out, _) = sb.tune(&fixture("truncated.onnx"), &[], &[]);
    assert_bad_input(&sb, &out, "truncated");
    let (out, _) = sb.tune(
        &fixture("resnet50.onnx"),
        &["--input_shape=input:1,3,224"],
        &[],
    );
    assert_bad_input(&sb, &out, "input_shape");
    let (out, _) = sb.tune(
        &fixture("resnet50.onnx"),
        &["--input_shape=nosuch:1,3,224,224"],
        &[],
    );
    assert_bad_input(&sb, &out, "input_shape");
    let (out, _) = sb.tune(&fixture("does-not-exist.onnx"), &[], &[]);
    assert_bad_input(&sb, &out, "does-not-exist.onnx");
    let (out, _) = sb.tune(&fixture("resnet50.onnx"), &["--runner", "gpu"], &[]);
    assert_bad_input(&sb, &out, "unknown runner");
    let (out, _) = sb.tune(&fixture("resnet50.onnx"), &["--strategy", "magic"], &[]);
    assert_bad_input(&sb, &out, "unknown search strategy");
    let (out, _) = sb.tune(&fixture("resnet50.onnx"), &[], &[("REPEAT_TUNE", "maybe")]);
    assert_bad_input(&sb, &out, "REPEAT_TUNE");
    let model = fixture("resnet50.onnx");
    // Subgraph tuning runs on the simulator only: another runner is bad input.
    for job in [&["--job_type=1"][..], &["--job-type", "subgraph"][..]] {
        let mut args = vec!["tune", "--model", &model, "--soc_version=Ascend910B2"];
        args.extend_from_slice(job);
        args.extend_from_slice(&["--runner", "cpu"]);
        let out = sb.cmd(&args).output().unwrap();
        assert_bad_input(&sb, &out, "runs on the simulator");
    }
    // A job type that is none of 1, 2, 4: from the flag or from AOE_MODE, named with its source.
    let (out, _) = sb.tune(&fixture("resnet50.onnx"), &[], &[("AOE_MODE", "3")]);
    assert_bad_input(&sb, &out, "AOE_MODE=3: expected 1");
    let (out, _) = sb.tune(&fixture("resnet50.onnx"), &["--job_type=5"], &[]);
    assert_bad_input(&sb, &out, "--job_type=5: expected 1");
    // AOE_MODE=4 without --job_type is GDAT, which needs the data-parallel job's size.
    let out = sb
        .cmd(&["tune", "--model", &model, "--soc_version=Ascend910B2"])
        .env("AOE_MODE", "4")
        .output()
        .unwrap();
    assert_bad_input(&sb, &out, "--rank_size");
    let missing = sb.dir.path().join("no-such-dir");
    let (out, _) = sb.tune(
        &fixture("resnet50.onnx"),
        &[],
        &[("TUNE_BANK_PATH", missing.to_str().unwrap())],
    );
    // --bank wins over TUNE_BANK_PATH, so this one runs; without --bank it must fail early.
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sb2 = Sandbox::new();
    let out = sb2
        .cmd(&[
            "tune",
            "--model",
            &fixture("resnet50.onnx"),
            "--soc_version=Ascend910B2",
            "--budget",
            "4",
        ])
        .env("TUNE_BANK_PATH", missing.to_str().unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("TUNE_BANK_PATH"),
        "{}",
        text(&out.stderr)
    );
}

/// An op no importer knows is a clear skip (named on stderr), never tuned or written; the rest
/// of the model is tuned.
#[test]
fn unknown_op_is_skipped_and_named() {
    let sb = Sandbox::new();
    let (out, json) = sb.tune(
        &fixture("unknown_op.onnx"),
        &["--input_shape=x:1,3,32,32"],
        &[],
    );
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("skipped") && err.contains("FancyNorm"),
        "{err}"
    );
    let (_, opat) = parts(json.as_ref().unwrap());
    let s = summary(opat);
    for m in opat["repo_modified_operators"].as_array().unwrap() {
        assert!(!m["op_type"].to_string().contains("FancyNorm"), "{m}");
    }
    assert!(s.total >= 1, "{s:?}");
}

/// Memory caps the worker count, with a message.
#[test]
fn workers_are_capped_by_memory_with_a_message() {
    let sb = Sandbox::new();
    let (out, json) = sb.tune(
        &fixture("unknown_op.onnx"),
        &["--input_shape=x:1,3,32,32"],
        &[
            ("TUNING_PARALLEL_NUM", "64"),
            ("TUNEBANK_WORKER_MEMORY_MB", "100000000"),
        ],
    );
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("TUNING_PARALLEL_NUM=64 capped to 1 worker"),
        "{err}"
    );
    assert!(json.is_some());
}

/// `--tune_ops_file` limits tuning to the named ops or op types.
#[test]
fn tune_ops_file_selects_ops() {
    let sb = Sandbox::new();
    let list = sb.dir.path().join("ops.txt");
    std::fs::write(&list, "# only the classifier\nGemm\n").unwrap();
    let (out, json) = sb.tune(
        &fixture("resnet50.onnx"),
        &[&format!("--tune_ops_file={}", list.display())],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let opat = parts(json.as_ref().unwrap()).1;
    // The one op tuned is ResNet-50's classifier, its only Gemm, and tuning it won.
    let modified = opat["repo_modified_operators"].as_array().unwrap();
    let named: Vec<(&str, &str)> = modified
        .iter()
        .map(|m| {
            (
                m["op_name"].as_str().unwrap(),
                m["op_type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(named, [("/fc/Gemm", "Gemm")], "{modified:?}");
    let s = summary(opat);
    assert_eq!((s.total, s.add), (1, 1), "{s:?}");
}

/// `convert` on a bad model is bad input too (exit 2), and on a sound one it never writes.
#[test]
fn convert_bad_model_is_exit_2_and_never_writes() {
    let sb = Sandbox::new();
    let bank = sb.bank();
    let out = sb
        .cmd(&[
            "convert",
            "--model",
            &fixture("garbage.onnx"),
            "--soc_version=Ascend910B2",
            "--bank",
            bank.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("garbage.onnx"));
    let out = sb.convert(&["--json", "--error-on-miss"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "everything misses in an empty bank"
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["hits"], 0);
    assert_eq!(v["misses"], 72);
    assert!(!bank.exists(), "convert opens the bank read-only");
}

/// The job's total time budget stops it between ops: the report is incomplete but valid, and
/// the ops it finished are counted consistently.
#[test]
fn total_time_budget_stops_between_ops() {
    let sb = Sandbox::new();
    let (out, json) = sb.tune(
        &fixture("resnet50.onnx"),
        &["--total-time-s", "0.3"],
        &[("TUNING_PARALLEL_NUM", "1")],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("total budget ran out"));
    let (basic, opat) = parts(json.as_ref().unwrap());
    assert_eq!(opat["opat_tuning_result"], "tuning incomplete");
    assert!(basic.get("tuning_time(s)").is_none());
    assert!(summary(opat).total < 30);
}

/// The per-op rows of `tune`'s summary table by op name: (after µs, trials), parsed from the
/// right (op names may contain spaces; rows come in the order the ops finished).
fn table_rows(out: &str) -> std::collections::BTreeMap<String, (f64, u64)> {
    out.lines()
        .skip_while(|l| !l.starts_with("op "))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let n = w.len();
            let name = w[..n - 5].join(" ");
            (name, (w[n - 3].parse().unwrap(), w[n - 1].parse().unwrap()))
        })
        .collect()
}

#[test]
fn budget_auto_stops_converged_searches_and_loses_little() {
    let run = |budget: &str| {
        let sb = Sandbox::new();
        let out_dir = sb.dir.path().join("out");
        let bank = sb.bank();
        let model = fixture("bert_layer.onnx");
        let out = sb
            .cmd(&[
                "tune",
                "--model",
                &model,
                "--job_type=2",
                "--soc_version=Ascend910B2",
                "--budget",
                budget,
                // Searches started from related records depend on which ops the two
                // workers finished first; cold, each op's search is the same in both runs.
                "--no-transfer",
                "--bank",
                bank.to_str().unwrap(),
                "--output-dir",
                out_dir.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{budget}: {out:?}");
        format!("{}{}", text(&out.stdout), text(&out.stderr))
    };
    let fixed = run("120");
    let auto = run("auto:120");
    let (f, a) = (table_rows(&fixed), table_rows(&auto));
    assert_eq!(
        f.keys().collect::<Vec<_>>(),
        a.keys().collect::<Vec<_>>(),
        "{fixed}\n{auto}"
    );
    // The fixed budget measures 120 or the whole space (LayerNorm's has 96).
    assert!(f.values().all(|r| r.1 <= 120), "{fixed}");
    assert!(f.values().filter(|r| r.1 == 120).count() >= 10, "{fixed}");
    assert!(a.iter().all(|(op, r)| r.1 <= f[op].1), "{auto}");
    // Some searches stopped by the rule, and the summary says so and how many.
    let stopped = a.iter().filter(|(op, r)| r.1 < f[*op].1).count();
    assert!(stopped >= 1, "{auto}");
    let line = (auto.lines())
        .find(|l| l.contains("stopped before the budget (--budget auto)"))
        .unwrap_or_else(|| panic!("{auto}"));
    assert!(line.starts_with(&format!("{stopped} op search")), "{line}");
    assert!(!fixed.contains("--budget auto"), "{fixed}");
    // A stopped search is a prefix of the full one (same seed): what it loses is what the
    // rest of the budget would have found. Over the layer, at most 2 % of the tuned time.
    let total = |rows: &std::collections::BTreeMap<String, (f64, u64)>| {
        rows.values().map(|r| r.0).sum::<f64>()
    };
    assert!(
        total(&a) <= 1.02 * total(&f),
        "{} vs {}",
        total(&a),
        total(&f)
    );
    let trials = |rows: &std::collections::BTreeMap<String, (f64, u64)>| {
        rows.values().map(|r| r.1).sum::<u64>()
    };
    assert!(trials(&a) < trials(&f));
}
