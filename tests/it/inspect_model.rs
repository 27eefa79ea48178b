//! `bank-inspect why --model`: the ResNet-50 fixture tuned (its records written through the
//! library) under one precision_mode, diagnosed under the same and under another.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use tunebank::bank::Bank;
use tunebank::bank::{Descriptor, Origin, Performance, Provenance, Record};
use tunebank::key::{FsReader, RecordKind, ResolvedOptions, KEY_SCHEMA_VERSION};

const MODEL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/models/resnet50.onnx");
const SOC: &str = "Ascend910B2";

fn tune(bank_file: &Path, precision_mode: &str) -> usize {
    let args = [
        format!("--soc_version={SOC}"),
        format!("--precision_mode={precision_mode}"),
    ];
    let options = ResolvedOptions::from_args(&args, &FsReader).unwrap();
    let soc = options.soc().unwrap();
    let model = tunebank::model::load_onnx(MODEL).unwrap();
    let mut records = Vec::new();
    for p in model.tuning_units(&options).unwrap() {
        for u in tunebank::model::resolve_units(&p.units, &p.graph.profile, &options, &soc).unwrap()
        {
            records.push(Record {
                key_schema_version: KEY_SCHEMA_VERSION,
                kind: RecordKind::Op,
                descriptor: Descriptor::Op(u.resolved.descriptor),
                options: options.given().clone(),
                strategy: BTreeMap::from([("baseM".to_owned(), serde_json::json!(128))]),
                performance: Performance {
                    baseline_us: 20.0,
                    tuned_us: 10.0,
                    samples_us: vec![10.0],
                    runner: "test".into(),
                    default_confirmed: false,
                    confirmed_budget: None,
                },
                provenance: Provenance {
                    tool_version: "0.1.0".into(),
                    algorithm: "test".into(),
                    trials: 1,
                    seed: 1,
                    unix_time: 0,
                    origin: Origin::Tuned,
                },
            });
        }
    }
    let bank = Bank::builder(RecordKind::Op, SOC)
        .custom_path(bank_file)
        .no_default_builtin()
        .open()
        .unwrap();
    bank.write_batch(&records).unwrap();
    records.len()
}

fn why(bank_file: &Path, precision_mode: &str) -> serde_json::Value {
    let o = Command::new(env!("CARGO_BIN_EXE_bank-inspect"))
        .args(["why", "--model", MODEL, "--json", "--bank"])
        .arg(bank_file)
        .arg(format!("--soc_version={SOC}"))
        .arg(format!("--precision_mode={precision_mode}"))
        .env("HOME", "/nonexistent-home-for-tests")
        .env_remove("TUNE_BANK_PATH")
        .env_remove("ASCEND_CACHE_PATH")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn why_model_hits_under_the_tuning_options_and_names_precision_mode_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path().join("bank.redb");
    let written = tune(&bank, "allow_fp32_to_fp16");
    assert!(written >= 30, "ResNet-50 has at least 30 unique units");

    let same = why(&bank, "allow_fp32_to_fp16");
    let ops = same["ops"].as_array().unwrap();
    assert!(
        ops.len() >= 70,
        "every tuning unit is reported: {}",
        ops.len()
    );
    let text = same.to_string();
    assert!(
        !text.contains("\"miss\""),
        "all hits under the tuning options"
    );

    let other = why(&bank, "must_keep_origin_dtype");
    let text = serde_json::to_string(&other).unwrap();
    assert!(text.contains("precision_mode"), "{text}");
    assert!(
        text.contains("float16") && text.contains("float32"),
        "{text}"
    );
    let misses = other["ops"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|op| !op["verdict"].to_string().contains("hit"))
        .count();
    assert!(
        misses > 0,
        "some ops change dtype under must_keep_origin_dtype"
    );
}
