//! `tunebank tune` as an AOE user drives it: every SoC of the key table either tunes or is
//! refused up front, AOE's JSON `--tune_ops_file` selects ops by ONNX or Ascend IR name and
//! type, and the simulator reads the SoC file ATC would. The driver's own refusal to report
//! success with nothing tuned is `src/tests/tune_aoe.rs`.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use tunebank::key::socs;
use tunebank::measure::sim::SocModel;

const BIN: &str = env!("CARGO_BIN_EXE_tunebank");

fn fixture(name: &str) -> String {
    format!("{}/fixtures/models/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `tune` on `model` for `soc` in a fresh sandbox; returns the output, the result file's
/// JSON if one was written, and the sandbox.
fn tune(model: &str, soc: &str, extra: &[&str]) -> (Output, Option<Value>, tempfile::TempDir) {
    tune_env(model, soc, extra, &[])
}

/// [`tune`] with environment variables set.
fn tune_env(
    model: &str,
    soc: &str,
    extra: &[&str],
    envs: &[(&str, &std::path::Path)],
) -> (Output, Option<Value>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(dir.path().join("home")).unwrap();
    let bank: PathBuf = dir.path().join("bank/op.redb");
    let soc_flag = format!("--soc_version={soc}");
    let mut args = vec![
        "tune",
        "--model",
        model,
        "--job_type=2",
        &soc_flag,
        "--budget",
        "4",
        "--strategy",
        "random",
        "--bank",
        bank.to_str().unwrap(),
        "--output-dir",
        work.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = Command::new(BIN)
        .args(&args)
        .env("HOME", dir.path().join("home"))
        .env("TUNING_PARALLEL_NUM", "2")
        .env_remove("ASCEND_WORK_PATH")
        .env_remove("TUNE_BANK_PATH")
        .env_remove("ASCEND_CACHE_PATH")
        .env_remove("TUNEBANK_BUILTIN_PATH")
        .env_remove("AOE_MODE")
        .env_remove("REPEAT_TUNE")
        .env_remove("TUNEBANK_WORKER_MEMORY_MB")
        .env_remove("ASCEND_HOME_PATH")
        .env_remove("ASCEND_TOOLKIT_HOME")
        .envs(envs.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let json = std::fs::read_dir(&work).ok().and_then(|rd| {
        let f = rd
            .flatten()
            .find(|e| e.file_name().to_string_lossy().ends_with(".json"))?;
        serde_json::from_str(&std::fs::read_to_string(f.path()).ok()?).ok()
    });
    (out, json, dir)
}

/// The OPAT part of a result file.
fn opat(v: &Value) -> &Value {
    let parts = v.as_object().unwrap().values().next().unwrap();
    parts
        .as_array()
        .unwrap()
        .iter()
        .find_map(|p| p.get("OPAT"))
        .unwrap()
}

fn count(opat: &Value, name: &str) -> u64 {
    opat["repo_summary"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("{name} in {opat}"))
}

/// The SoCs whose CANN 8.1 description file gives the simulator nothing to model: the
/// Ascend035 family has no cube buffers (`l0_a_size=0`), the Hi3796CV300CS and SD3403 no L2,
/// the Hi3796CV300ES no L2 rates.
const UNMODELLED: [&str; 6] = [
    "Ascend035",
    "Ascend035A",
    "Ascend035B",
    "Hi3796CV300CS",
    "Hi3796CV300ES",
    "SD3403",
];

/// Every SoC of the key table (one per SoC description file of CANN 8.1) tunes the BERT layer
/// (every op searched: added or confirmed, "tuning successful", exit 0), or is refused before
/// any work with exit 2, a message naming the SoC, the runner, what its file lacks and the
/// SoCs it supports, and no result file. Exactly the SoCs whose file lacks a figure the
/// simulator needs are refused.
#[test]
fn every_soc_tunes_bert_or_is_refused() {
    let (mut tuned, mut refused) = (Vec::new(), Vec::new());
    for soc in socs() {
        let (out, json, dir) = tune(&fixture("bert_layer.onnx"), soc.version, &[]);
        let err = text(&out.stderr);
        match out.status.code() {
            Some(0) => {
                let o = opat(json.as_ref().expect("a result file"));
                assert_eq!(
                    o["opat_tuning_result"], "tuning successful",
                    "{}",
                    soc.version
                );
                // Searched: winners added, the rest stored as confirmed defaults.
                assert!(count(o, "total_num") > 0, "{}: {o}", soc.version);
                assert_eq!(
                    count(o, "repo_add_num") + count(o, "repo_unsatisfied_num"),
                    count(o, "total_num"),
                    "{}: {o}",
                    soc.version
                );
                assert!(dir.path().join("bank/op.redb").exists(), "{}", soc.version);
                assert!(
                    !err.contains("does not support this SoC"),
                    "{}: {err}",
                    soc.version
                );
                tuned.push(soc.version);
            }
            Some(2) => {
                assert!(err.contains(soc.version), "{}: {err}", soc.version);
                assert!(err.contains("runner sim"), "{}: {err}", soc.version);
                assert!(
                    err.contains("in its SoC description file"),
                    "says what the file lacks: {err}"
                );
                assert!(
                    err.contains("Ascend910B2"),
                    "names the supported SoCs: {err}"
                );
                assert!(json.is_none(), "{}: refused before any work", soc.version);
                assert!(!dir.path().join("bank/op.redb").exists());
                refused.push(soc.version);
            }
            c => panic!("{}: exit {c:?}\n{err}", soc.version),
        }
    }
    assert_eq!(refused, UNMODELLED, "tuned: {tuned:?}");
    assert_eq!(tuned.len() + refused.len(), 45);
    for v in &tuned {
        assert!(SocModel::for_version(v).is_some(), "{v}");
    }
}

/// Runs `tune` on the BERT layer with `content` as `--tune_ops_file`.
fn tune_with_ops_file(content: &str) -> (Output, Option<Value>, String) {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("ops.json");
    std::fs::write(&list, content).unwrap();
    let flag = format!("--tune_ops_file={}", list.display());
    let (out, json, _sb) = tune(&fixture("bert_layer.onnx"), "Ascend910B2", &[&flag]);
    (out, json, list.display().to_string())
}

fn total(json: &Option<Value>) -> u64 {
    count(opat(json.as_ref().expect("a result file")), "total_num")
}

/// AOE's JSON `tune_ops_file` selects by op type in ONNX or Ascend IR spelling alike.
#[test]
fn aoe_json_tune_ops_file_selects_onnx_and_ir_types() {
    let (onnx, onnx_json, _) = tune_with_ops_file(r#"{"tune_ops_type": ["LayerNormalization"]}"#);
    assert!(onnx.status.success(), "{}", text(&onnx.stderr));
    let (ir, ir_json, _) = tune_with_ops_file(r#"{"tune_ops_type": ["LayerNorm"]}"#);
    assert!(ir.status.success(), "{}", text(&ir.stderr));
    assert!(total(&onnx_json) >= 1);
    assert_eq!(total(&onnx_json), total(&ir_json));
    let (both, both_json, _) =
        tune_with_ops_file(r#"{"tune_ops_name": [], "tune_ops_type": ["LayerNorm", "SoftmaxV2"]}"#);
    assert!(both.status.success(), "{}", text(&both.stderr));
    assert!(total(&both_json) > total(&ir_json), "Softmax adds a task");
}

/// A `tune_ops_file` that selects nothing is bad input naming the file; nothing is written.
#[test]
fn tune_ops_file_selecting_nothing_is_exit_2() {
    for content in [r#"{"tune_ops_name": ["no_such_op"]}"#, "NoSuchType\n"] {
        let (out, json, path) = tune_with_ops_file(content);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{content}: {err}");
        assert!(err.contains(&path), "names the file: {err}");
        assert!(json.is_none());
    }
    let (out, _, path) = tune_with_ops_file(r#"{"tune_ops_types": ["Conv2D"]}"#);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains(&path));
}

/// The summed default-tiling time of a result file's ops (µs).
/// The sum of the ops' times before tuning, added in ascending order: the result file lists the
/// ops in the order their tasks finished, which varies from run to run, and a floating-point sum
/// depends on its order.
fn before_us(v: &Value) -> f64 {
    let mut times: Vec<f64> = opat(v)["repo_modified_operators"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            o["tune_performance"]["Schedule"]["performance_before_tune(us)"]
                .as_f64()
                .unwrap_or(0.0)
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times.iter().sum()
}

/// The simulator reads the SoC description file ATC would: the built-in CANN 8.1 copy by
/// default, the installed toolkit's under `$ASCEND_HOME_PATH/<arch>-linux/data/platform_config/`,
/// and a file named by `--platform-config` before either; `tune` says which. A file with half
/// the cube clock makes the same ops slower; a missing file or another SoC's file is refused
/// (exit 2, the file named, nothing written).
#[test]
fn the_simulator_reads_the_soc_file_atc_would() {
    let model = fixture("bert_layer.onnx");
    let soc = "Ascend910B2";
    let (out, built_in, _d) = tune(&model, soc, &[]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("SoC facts of Ascend910B2: CANN 8.1's file, built in"),
        "{err}"
    );
    let base = before_us(&built_in.unwrap());

    let ini = std::fs::read_to_string(format!(
        "{}/crates/key/src/platform/cann81/Ascend910B2.ini",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    assert!(ini.contains("cube_freq=1800"));
    let slow = ini.replace("cube_freq=1800", "cube_freq=900");
    let files = tempfile::tempdir().unwrap();
    let given = files.path().join("slow.ini");
    std::fs::write(&given, &slow).unwrap();
    let flag = format!("--platform-config={}", given.display());
    let (out, json, _d) = tune(&model, soc, &[&flag]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!("{} (--platform-config)", given.display())),
        "{err}"
    );
    let slowed = before_us(&json.unwrap());
    assert!(
        slowed > 1.2 * base,
        "half the clock: {slowed} us against {base} us"
    );

    let root = files.path().join("toolkit");
    let arch = if cfg!(target_arch = "aarch64") {
        "aarch64"
    } else {
        "x86_64"
    };
    let dir = root.join(format!("{arch}-linux/data/platform_config"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("Ascend910B2.ini"), &slow).unwrap();
    let (out, json, _d) = tune_env(&model, soc, &[], &[("ASCEND_HOME_PATH", &root)]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("(installed CANN)"), "{err}");
    assert_eq!(
        before_us(&json.unwrap()),
        slowed,
        "the same file, the same model"
    );

    let missing = files.path().join("nope.ini");
    let other = files.path().join("Ascend310P3.ini");
    std::fs::write(
        &other,
        std::fs::read_to_string(format!(
            "{}/crates/key/src/platform/cann81/Ascend310P3.ini",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap(),
    )
    .unwrap();
    for (path, needle) in [(&missing, "cannot read"), (&other, "describes SoC_version")] {
        let flag = format!("--platform-config={}", path.display());
        let (out, json, dir) = tune(&model, soc, &[&flag]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&path.display().to_string()) && err.contains(needle),
            "{err}"
        );
        assert!(json.is_none() && !dir.path().join("bank/op.redb").exists());
    }
}
