//! Transfer in `tunebank tune`: a miss's search seeded from related bank records. BERT tuned
//! into a bank holding ResNet-50's records and BERT's own on another SoC: the result file names
//! the seeding records, `--no-transfer` gives exactly the cold tune, the same seed and bank
//! give the same result file whatever the worker count; and on the simulator the seeded
//! searches reach 99 % of the cold best with fewer candidates in total.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;

use search_strategies::bayes::BayesConfig;
use serde_json::Value;
use tunebank::bank::{Bank, Lookup};
use tunebank::key::{BankKey, FsReader, RecordKind, ResolvedOptions};
use tunebank::model::load_onnx;
use tunebank::tune::transfer::compare::compare;
use tunebank::tune::transfer::snapshot;
use tunebank::tune::{self, TunePlan, TuneSettings};

const BIN: &str = env!("CARGO_BIN_EXE_tunebank");

fn fixture(name: &str) -> String {
    format!("{}/fixtures/models/{name}.onnx", env!("CARGO_MANIFEST_DIR"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `tunebank tune` of `model` on `soc` into `bank` with two workers, result file in `out`;
/// returns stdout.
fn tune_cli(dir: &Path, model: &str, soc: &str, bank: &Path, out: &Path, extra: &[&str]) -> String {
    tune_cli_env(dir, model, soc, bank, out, extra, &[])
}

/// [`tune_cli`] with environment variables `env` set (`TUNING_PARALLEL_NUM` is 2 unless
/// `env` sets it).
fn tune_cli_env(
    dir: &Path,
    model: &str,
    soc: &str,
    bank: &Path,
    out: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> String {
    let soc_flag = format!("--soc_version={soc}");
    let model = fixture(model);
    let mut args = vec![
        "tune",
        "--model",
        &model,
        "--job_type=2",
        &soc_flag,
        "--budget",
        "16",
        "--strategy",
        "ensemble",
        "--seed",
        "5",
        "--bank",
        bank.to_str().unwrap(),
        "--output-dir",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = Command::new(BIN)
        .args(&args)
        .env("HOME", dir.join("home"))
        .env("TUNING_PARALLEL_NUM", "2")
        .env_remove("TUNE_BANK_PATH")
        .env_remove("ASCEND_CACHE_PATH")
        .env_remove("ASCEND_WORK_PATH")
        .env_remove("TUNEBANK_BUILTIN_PATH")
        .env_remove("AOE_MODE")
        .env_remove("REPEAT_TUNE")
        .env_remove("TE_PARALLEL_COMPILER")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    text(&o.stdout)
}

/// The OPAT section of the only result file in `out`, its op lists sorted (ops finish in an
/// order that depends on the worker count and timing; each entry does not).
fn opat(out: &Path) -> Value {
    let files: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".json"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let v: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    let list = v.as_object().unwrap().values().next().unwrap().clone();
    let mut opat = list[1]["OPAT"].clone();
    assert_eq!(opat["opat_tuning_result"], "tuning successful");
    for field in ["repo_modified_operators", "tunebank_transfer"] {
        if let Some(a) = opat.get_mut(field).and_then(Value::as_array_mut) {
            a.sort_by_key(Value::to_string);
        }
    }
    opat
}

/// A bank holding ResNet-50's records on Ascend910B2 and BERT's on Ascend310P3.
fn source_bank(dir: &Path) -> PathBuf {
    let bank = dir.join("source.redb");
    for (model, soc) in [("resnet50", "Ascend910B2"), ("bert_layer", "Ascend310P3")] {
        let out = dir.join(format!("out-{model}"));
        tune_cli(dir, model, soc, &bank, &out, &["--no-transfer"]);
    }
    bank
}

/// A copy of `bank` named `name`.
fn copy(dir: &Path, bank: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    std::fs::copy(bank, &to).unwrap();
    to
}

#[test]
fn the_result_file_names_the_seeding_records_and_no_transfer_is_the_cold_tune() {
    let sb = tempfile::tempdir().unwrap();
    let dir = sb.path();
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let source = source_bank(dir);
    // Today's cold tune: an empty bank, so nothing is related.
    let cold_stdout = tune_cli(
        dir,
        "bert_layer",
        "Ascend910B2",
        &dir.join("empty.redb"),
        &dir.join("cold"),
        &[],
    );
    let cold = opat(&dir.join("cold"));
    assert!(cold.get("tunebank_transfer").is_none(), "{cold}");
    assert!(!cold_stdout.contains("transfer:"), "{cold_stdout}");
    // --no-transfer on the bank with related records: exactly the cold tune.
    let b = copy(dir, &source, "off.redb");
    tune_cli(
        dir,
        "bert_layer",
        "Ascend910B2",
        &b,
        &dir.join("off"),
        &["--no-transfer"],
    );
    assert_eq!(opat(&dir.join("off")), cold);
    // Transfer (the default): the seeding records are named, each a record of the source bank.
    let b = copy(dir, &source, "on.redb");
    let stdout = tune_cli(dir, "bert_layer", "Ascend910B2", &b, &dir.join("on"), &[]);
    let warm = opat(&dir.join("on"));
    let seeded = warm["tunebank_transfer"].as_array().expect("seeded ops");
    let names: BTreeSet<&str> = seeded
        .iter()
        .map(|o| o["op_name"].as_str().unwrap())
        .collect();
    assert!(
        names.iter().any(|n| n.ends_with("output/Add_1")),
        "ResNet-50's Add seeds BERT's Add: {names:?}"
    );
    assert!(
        names.iter().any(|n| n.contains("MatMul")),
        "BERT's MatMuls on Ascend310P3 seed them on Ascend910B2: {names:?}"
    );
    let src = Bank::open_file(RecordKind::Op, &source).unwrap();
    let mut socs = BTreeSet::new();
    for o in seeded {
        for s in o["seeded_by"].as_array().unwrap() {
            let key: BankKey = s["record"].as_str().unwrap().parse().unwrap();
            assert!(
                matches!(src.lookup(&key).unwrap(), Lookup::Hit(_)),
                "{key} is a record of the source bank"
            );
            assert!(s["distance"].as_f64().unwrap() > 0.0);
            socs.insert(s["soc"].as_str().unwrap().to_owned());
        }
    }
    assert_eq!(
        socs,
        ["Ascend310P3".to_owned(), "Ascend910B2".to_owned()].into()
    );
    assert!(stdout.contains("transfer: "), "{stdout}");
    // The same seed and bank give the same result file, whatever the worker count.
    let b = copy(dir, &source, "again.redb");
    let again = dir.join("again");
    let one_worker = [("TUNING_PARALLEL_NUM", "1")];
    tune_cli_env(
        dir,
        "bert_layer",
        "Ascend910B2",
        &b,
        &again,
        &[],
        &one_worker,
    );
    assert_eq!(opat(&dir.join("again")), warm);
    // REPEAT_TUNE searches every hit again, and those searches are seeded too: now also by
    // the records the warm tune wrote (BERT's other shapes on Ascend910B2), never by the op's
    // own entry (a search seeded by it would only find the entry it must beat).
    let written: BTreeSet<BankKey> = {
        let bank = Bank::open_file(RecordKind::Op, &b).unwrap();
        let records = bank.custom_layer().unwrap().records().unwrap().records;
        (records.into_iter().map(|(k, _)| k))
            .filter(|k| !matches!(src.lookup(k).unwrap(), Lookup::Hit(_)))
            .collect()
    };
    assert!(!written.is_empty());
    let repeat = dir.join("repeat");
    let stdout = tune_cli_env(
        dir,
        "bert_layer",
        "Ascend910B2",
        &b,
        &repeat,
        &[],
        &[("REPEAT_TUNE", "True")],
    );
    assert!(stdout.contains("transfer: "), "{stdout}");
    let reseeded = opat(&repeat)["tunebank_transfer"].clone();
    let by_written = (reseeded
        .as_array()
        .expect("REPEAT_TUNE searches are seeded"))
    .iter()
    .flat_map(|o| o["seeded_by"].as_array().unwrap())
    .filter(|s| written.contains(&s["record"].as_str().unwrap().parse().unwrap()))
    .count();
    assert!(by_written > 0, "{reseeded}");
}

fn plan(model: &str, soc: &str) -> (TunePlan, ResolvedOptions) {
    let m = load_onnx(fixture(model)).unwrap();
    let options = ResolvedOptions::from_args([format!("--soc_version={soc}")], &FsReader).unwrap();
    let p = tune::plan(&m, &options, &options.soc().unwrap(), None).unwrap();
    (p, options)
}

fn settings(options: &ResolvedOptions, budget: usize) -> TuneSettings {
    TuneSettings {
        runner: "sim".parse().unwrap(),
        strategy: "ensemble".into(),
        seed: 3,
        trials_per_op: budget,
        options_given: options.given().clone(),
        ..TuneSettings::default()
    }
}

/// The simulator measurement on a small case: BERT on Ascend910B2 from its records on another
/// SoC of the family. Seeded searches reach 99 % of the cold best with fewer candidates in
/// total; without related records the "warm" search is the cold one, candidate for candidate.
#[test]
fn seeded_searches_reach_the_cold_best_with_fewer_candidates() {
    let dir = tempfile::tempdir().unwrap();
    let bank = Bank::builder(RecordKind::Op, "Ascend910B3")
        .custom_path(dir.path().join("op.redb"))
        .no_default_builtin()
        .open()
        .unwrap();
    let (source, options) = plan("bert_layer", "Ascend910B3");
    let cancel = AtomicBool::new(false);
    let mut s = settings(&options, 32);
    s.transfer = false;
    tune::opat::run(&source, &bank, &s, "bert", None, &cancel, &mut ()).unwrap();
    let (target, options) = plan("bert_layer", "Ascend910B2");
    let snap = snapshot(&bank, &target, 0..target.tasks.len()).unwrap();
    let c = compare(
        &target,
        &snap,
        &settings(&options, 32),
        &BayesConfig::default(),
    )
    .unwrap();
    assert_eq!(c.seeded_ops(), c.ops.len(), "{c}");
    let (cold, warm) = c.totals();
    assert!(warm < cold, "{c}");
    // Nothing related: both searches are the same search.
    let none = compare(
        &target,
        &Default::default(),
        &settings(&options, 32),
        &BayesConfig::default(),
    )
    .unwrap();
    assert!(
        none.ops
            .iter()
            .all(|o| o.seeded == 0 && Some(o.cold_to_reach) == o.warm_to_reach),
        "{none}"
    );
}
