//! The converter example end to end: a bank holding a tuned strategy for one op of the fixture
//! answers that op's look-up with the strategy and misses the other; bad input is named.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use tunebank_bank::{
    Access, Bank, BankRequest, CustomLayer, Descriptor, Origin, Performance, Provenance, Record,
};
use tunebank_key::{
    derive_op_keys, Environment, FsReader, OpTemplate, RecordKind, ResolvedOptions,
};

const OPS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/ops/one_matmul.json"
);
const SOC: &str = "--soc_version=Ascend910B2";

fn converter(args: &[&str]) -> std::process::Output {
    converter_in(args, None)
}

/// Runs the example with `TUNE_BANK_PATH` set to `tune_bank_path`, or unset; no built-in bank
/// and no `$HOME` bank.
fn converter_in(args: &[&str], tune_bank_path: Option<&Path>) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_converter-lookup"));
    cmd.args(args)
        .env_remove("TUNE_BANK_PATH")
        .env_remove("ASCEND_CACHE_PATH")
        .env("HOME", "/nonexistent")
        .env("TUNEBANK_BUILTIN_PATH", "/nonexistent");
    if let Some(d) = tune_bank_path {
        cmd.env("TUNE_BANK_PATH", d);
    }
    cmd.output().unwrap()
}

/// Writes a tuned record for the fixture's first op (`fc1`) into the bank `custom` names under
/// `env` and returns its key's text.
fn bank_with_fc1(env: &Environment, custom: CustomLayer) -> String {
    let options = ResolvedOptions::from_args([SOC], &FsReader).unwrap();
    let soc = options.soc().unwrap();
    let ops: Vec<OpTemplate> =
        serde_json::from_str(&std::fs::read_to_string(OPS).unwrap()).unwrap();
    let resolved = derive_op_keys(&ops[0], &options, &soc).unwrap();
    let mut strategy = BTreeMap::new();
    strategy.insert("baseM".to_owned(), serde_json::json!(128));
    let record = Record {
        key_schema_version: tunebank_key::KEY_SCHEMA_VERSION,
        kind: RecordKind::Op,
        descriptor: Descriptor::Op(resolved[0].descriptor.clone()),
        options: options.given().clone(),
        strategy,
        performance: Performance {
            baseline_us: 58.0,
            tuned_us: 27.0,
            samples_us: vec![27.0],
            runner: "sim:Ascend910B2".into(),
            default_confirmed: false,
            confirmed_budget: None,
        },
        provenance: Provenance {
            tool_version: "0.1.0".into(),
            algorithm: "ensemble".into(),
            trials: 10,
            seed: 1,
            unix_time: 0,
            origin: Origin::Tuned,
        },
    };
    let mut request = BankRequest::new(RecordKind::Op, &soc.version);
    request.custom = custom;
    request.default_builtin = false;
    request.access = Access::Writable;
    let bank = Bank::open(env, &request).unwrap();
    bank.write_batch(&[record]).unwrap();
    resolved[0].key.to_string()
}

#[test]
fn the_tuned_op_hits_with_its_strategy_and_the_other_misses() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("op.redb");
    let key = bank_with_fc1(&Environment::empty(), CustomLayer::Path(file.clone()));
    let out = converter(&["--bank", file.to_str().unwrap(), OPS, SOC]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert_eq!(lines[0], format!("hit fc1 {key} custom {{\"baseM\":128}}"));
    assert!(lines[1].starts_with("miss gelu1 "), "{stdout}");
    assert!(
        !lines[1].contains(&key),
        "gelu1 has a key of its own: {stdout}"
    );
}

/// Without `--bank`, the custom bank is the one AOE's rules name from `TUNE_BANK_PATH`.
#[test]
fn without_a_bank_flag_the_environment_names_the_bank() {
    let dir = tempfile::tempdir().unwrap();
    let env = Environment::empty().with("TUNE_BANK_PATH", dir.path());
    let key = bank_with_fc1(&env, CustomLayer::Resolved);
    let out = converter_in(&[OPS, SOC], Some(dir.path()));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.starts_with(&format!("hit fc1 {key} custom ")),
        "{stdout}"
    );
    // Unset, the same look-up misses: the bank came from the environment.
    let out = converter_in(&[OPS, SOC], None);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("miss fc1 "));
}

#[test]
fn bad_input_is_named_with_its_status() {
    let out = converter(&["no/such/ops.json", SOC]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no/such/ops.json"), "{err}");

    let out = converter(&[OPS, "--soc_version=NoSuchSoC"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("NoSuchSoC"));
}
