//! Running the `tunebank` binary from a test: the command in a directory of its own with AOE's
//! bank and job variables cleared, its output as one text, and the refusal check the model
//! importers' bad-input tests share.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

/// The SoC every importer test keys for.
pub const SOC: &str = "--soc_version=Ascend910B2";

/// A model fixture: `fixtures/models/<path>`.
pub fn model_fixture(path: &str) -> String {
    format!("{}/fixtures/models/{path}", env!("CARGO_MANIFEST_DIR"))
}

/// stdout then stderr.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `tunebank ARGS` run in `cwd` (also its HOME), without TUNE_BANK_PATH, ASCEND_CACHE_PATH,
/// ASCEND_WORK_PATH or AOE_MODE from the caller's environment.
pub fn tunebank(args: &[&str], cwd: &Path) -> Output {
    run(env!("CARGO_BIN_EXE_tunebank"), args, cwd)
}

/// `tunebank convert MODEL --soc_version=Ascend910B2 --json EXTRA` in `cwd`, which must
/// succeed: its report.
pub fn convert_report(model: &str, extra: &[&str], cwd: &Path) -> serde_json::Value {
    let mut args = vec!["convert", model, SOC, "--json"];
    args.extend_from_slice(extra);
    let o = tunebank(&args, cwd);
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// `tunebank tune MODEL --soc_version=Ascend910B2 --budget 4 --bank DIR/bank.redb EXTRA` in
/// `dir`: a short tuning job into a bank of the test's own.
pub fn tune_into(model: &str, extra: &[&str], dir: &Path) -> Output {
    let bank = dir.join("bank.redb");
    let mut args = vec!["tune", model, SOC, "--budget", "4", "--bank"];
    args.push(bank.to_str().unwrap());
    args.extend_from_slice(extra);
    tunebank(&args, dir)
}

/// A `convert --json` report's keys by IR type: IR type → the keys of its ops, sorted.
pub fn keys_by_type(report: &serde_json::Value) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in report["ops"].as_array().unwrap() {
        out.entry(r["ir_type"].as_str().unwrap().into())
            .or_default()
            .push(r["key"].as_str().unwrap().into());
    }
    out.values_mut().for_each(|v| v.sort());
    out
}

/// `bank-inspect ARGS` run in `cwd` (also its HOME), with the environment of [`tunebank`].
pub fn bank_inspect(args: &[&str], cwd: &Path) -> Output {
    run(env!("CARGO_BIN_EXE_bank-inspect"), args, cwd)
}

/// `binary ARGS` in `cwd` (also its HOME), without the AOE variables of the caller.
fn run(binary: &str, args: &[&str], cwd: &Path) -> Output {
    Command::new(binary)
        .args(args)
        .current_dir(cwd)
        .env("HOME", cwd)
        .env_remove("ASCEND_WORK_PATH")
        .env_remove("TUNE_BANK_PATH")
        .env_remove("ASCEND_CACHE_PATH")
        .env_remove("AOE_MODE")
        .output()
        .unwrap()
}

/// For each case (the model flags, the texts the error must hold): `tunebank tune
/// --job_type=2` with those flags and a bank in `dir` exits 2, names every text, and writes no
/// bank.
pub fn assert_refused(dir: &Path, cases: Vec<(Vec<String>, Vec<&str>)>) {
    for (flags, wants) in cases {
        let bank = dir.join("bank.redb");
        let mut args = vec![
            "tune".to_string(),
            "--job_type=2".into(),
            SOC.into(),
            "--bank".into(),
            bank.to_str().unwrap().into(),
        ];
        args.extend(flags.iter().cloned());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = tunebank(&args, dir);
        assert_eq!(o.status.code(), Some(2), "{flags:?}: {}", text(&o));
        for w in wants {
            assert!(
                text(&o).contains(w),
                "{flags:?}: expected {w:?} in: {}",
                text(&o)
            );
        }
        assert!(!bank.exists(), "{flags:?}: nothing written");
    }
}
