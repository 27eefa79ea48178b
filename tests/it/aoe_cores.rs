//! The core count an AOE bank file was tuned on (`Ascend910B1_25_AiCore_matmul.json`: 25 cores,
//! while the SoC's description file says 24) is recorded as provenance: `bank-inspect show`
//! and the import report say it, the keys stay the SoC's (a converter with default options
//! still hits the records), and a file named for another SoC is refused before anything is
//! written.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{json, Value};
use tunebank::key::SocSpec;

use super::aoe_bank::{inspect, model, sample_path, text, tunebank, OPS, SOC};

/// The core count of AOE's shared Ascend910B1 MatMul bank, as its upstream file name says.
const FILE_CORES: u32 = 25;

/// The core count the records are keyed for: the SoC spec's, never the file's.
fn keyed() -> u32 {
    let keyed = SocSpec::from_version(SOC).unwrap().core_count;
    assert_ne!(keyed, FILE_CORES, "the test needs the two counts to differ");
    keyed
}

/// The sample bank file copied into `dir` as `name`.
fn copy_as(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::copy(sample_path(), &path).unwrap();
    path
}

/// `tunebank bank import --aoe FILE --as-builtin --bank BANK --soc_version=SOC EXTRA…`.
fn import(file: &Path, bank: &Path, extra: &[&str]) -> Output {
    let soc = format!("--soc_version={SOC}");
    let mut args = vec![
        "bank",
        "import",
        "--aoe",
        file.to_str().unwrap(),
        "--as-builtin",
        "--bank",
        bank.to_str().unwrap(),
        &soc,
    ];
    args.extend_from_slice(extra);
    tunebank(&args)
}

/// [`import`] with `--json`, which must succeed: the report.
fn import_json(file: &Path, bank: &Path, extra: &[&str]) -> Value {
    let o = import(file, bank, &[extra, &["--json"]].concat());
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The keys `bank-inspect list` shows.
fn keys(bank: &Path) -> BTreeSet<String> {
    let list: Value = serde_json::from_str(&inspect(bank, &["list", "--json"])).unwrap();
    let keys: BTreeSet<String> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["record"]["key"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(keys.len(), 8, "the sample's eight records");
    keys
}

/// `bank-inspect show KEY --json`: the one layer's entry.
fn show_json(bank: &Path, key: &str) -> Value {
    let v: Value = serde_json::from_str(&inspect(bank, &["show", key, "--json"])).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1, "{v}");
    v[0].clone()
}

/// Every record of `bank` shows `cores` as the bank file's core count, in text and JSON.
fn assert_shows_cores(bank: &Path, cores: u32) {
    let keyed = keyed();
    for key in keys(bank) {
        let show = inspect(bank, &["show", &key]);
        let line = format!("tuned on {cores} AiCore (bank file); keyed for {keyed}");
        assert!(show.contains(&line), "{show}");
        let entry = show_json(bank, &key);
        assert_eq!(
            entry["cores"],
            json!({"bank_file": cores, "core_type": "AiCore", "keyed": keyed}),
            "{entry}"
        );
        assert_eq!(
            entry["record"]["options"]["aoe_core_count"],
            cores.to_string(),
            "{entry}"
        );
        assert_eq!(
            entry["record"]["descriptor"]["op"]["soc"]["core_count"],
            keyed
        );
    }
}

/// The look-ups of a conversion with default options hit `bank` as a built-in layer: an ONNX
/// MatMul of record 141843de's shape through `convert`, and the sample's op templates through
/// `lookup`.
fn assert_conversions_hit(dir: &Path, bank: &Path) {
    let onnx = dir.join("mm.onnx");
    model(&onnx, "MatMul", &[51200, 16], &[16, 32], None, &[51200, 32]);
    let custom = dir.join("custom.redb");
    let soc = format!("--soc_version={SOC}");
    let common = [
        "--builtin-bank",
        bank.to_str().unwrap(),
        "--bank",
        custom.to_str().unwrap(),
        &soc,
        "--json",
    ];
    let o = tunebank(
        &[
            &["convert", &format!("--model={}", onnx.display())],
            &common[..],
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", text(&o));
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["ops"][0]["result"], "hit", "{report}");
    let ops = dir.join("ops.json");
    std::fs::write(&ops, OPS).unwrap();
    let o = tunebank(&[&["lookup", "--op", ops.to_str().unwrap()], &common[..]].concat());
    assert!(o.status.success(), "{}", text(&o));
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    let results: Vec<&str> = (report["ops"].as_array().unwrap().iter())
        .map(|r| r["result"].as_str().unwrap())
        .collect();
    // mm_n, a shape not in the file: an imported record's win is unknown (no baseline), so
    // it serves no other shape.
    assert_eq!(results, ["hit", "hit", "miss", "miss"], "{report}");
}

#[test]
fn a_bank_file_named_for_its_cores_records_them_under_the_same_keys() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.redb");
    let o = import(&sample_path(), &plain, &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!text(&o).contains("bank file tuned on"), "{}", text(&o));

    let file = copy_as(
        dir.path(),
        &format!("{SOC}_{FILE_CORES}_AiCore_matmul.json"),
    );
    let named = dir.path().join("named.redb");
    let report = import_json(&file, &named, &[]);
    let keyed = keyed();
    assert_eq!(
        report["cores"],
        json!({"bank_file": FILE_CORES, "core_type": "AiCore", "keyed": keyed}),
        "{report}"
    );
    assert_eq!(report["mapped"], 8, "{report}");
    let o = import(&file, &dir.path().join("again.redb"), &[]);
    assert!(o.status.success(), "{}", text(&o));
    let said = format!("bank file tuned on {FILE_CORES} AiCore; records keyed for {keyed} AiCore");
    assert!(text(&o).contains(&said), "{}", text(&o));

    // The same keys as the import that did not know the count; only the provenance differs.
    assert_eq!(keys(&named), keys(&plain));
    assert_shows_cores(&named, FILE_CORES);
    for key in keys(&plain) {
        let entry = show_json(&plain, &key);
        assert!(entry.get("cores").is_none(), "{entry}");
        assert!(entry["record"]["options"].get("aoe_core_count").is_none());
        assert!(!inspect(&plain, &["show", &key]).contains("(bank file)"));
    }
    assert_conversions_hit(dir.path(), &named);
}

#[test]
fn a_renamed_copy_takes_its_core_count_from_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.redb");
    assert!(import(&sample_path(), &plain, &[]).status.success());

    let renamed = copy_as(dir.path(), &format!("{SOC}_matmul_unified_bank.dev.json"));
    let bank = dir.path().join("renamed.redb");
    let cores = FILE_CORES.to_string();
    let report = import_json(&renamed, &bank, &["--aoe-core-count", &cores]);
    assert_eq!(report["cores"]["bank_file"], FILE_CORES, "{report}");
    assert_eq!(keys(&bank), keys(&plain));
    assert_shows_cores(&bank, FILE_CORES);
    assert_conversions_hit(dir.path(), &bank);

    // Without the flag the renamed copy says nothing of its cores.
    let report = import_json(&renamed, &dir.path().join("bare.redb"), &[]);
    assert!(report.get("cores").is_none(), "{report}");

    // The flag wins over the name.
    let named = copy_as(
        dir.path(),
        &format!("{SOC}_{FILE_CORES}_AiCore_matmul.json"),
    );
    let given = dir.path().join("given.redb");
    let report = import_json(&named, &given, &["--aoe-core-count", "20"]);
    assert_eq!(report["cores"]["bank_file"], 20, "{report}");
    assert_shows_cores(&given, 20);
}

#[test]
fn a_bank_file_named_for_another_soc_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path().join("b.redb");
    assert!(import(&sample_path(), &bank, &[]).status.success());
    let before = inspect(&bank, &["list", "--json"]);
    let fresh = dir.path().join("fresh.redb");
    let cases: [(&str, &[&str], &str); 5] = [
        (
            "Ascend910B2_24_AiCore_matmul.json",
            &[],
            "SoC \"Ascend910B2\"",
        ),
        // Another SoC is refused even with the count given.
        (
            "Ascend910B2_24_AiCore_matmul.json",
            &["--aoe-core-count", "24"],
            "SoC \"Ascend910B2\"",
        ),
        ("Ascend910B1_0_AiCore_matmul.json", &[], "core count \"0\""),
        ("Ascend910B1_x_AiCore_matmul.json", &[], "core count \"x\""),
        (
            "Ascend910B1_25_VectorCore_add.json",
            &[],
            "core type VectorCore",
        ),
    ];
    for (name, extra, says) in cases {
        let file = copy_as(dir.path(), name);
        for target in [&bank, &fresh] {
            let o = import(&file, target, extra);
            let t = text(&o);
            assert_eq!(o.status.code(), Some(2), "{name}: {t}");
            assert!(t.contains(name) && t.contains(says), "{name}: {t}");
            assert!(t.contains("expected"), "{name}: {t}");
        }
        assert!(!fresh.exists(), "{name}: a refused import creates no bank");
        assert_eq!(inspect(&bank, &["list", "--json"]), before, "{name}");
    }
    let o = import(&sample_path(), &bank, &["--aoe-core-count", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(inspect(&bank, &["list", "--json"]), before);
}

/// `bank-inspect why` re-resolves the options a record was tuned with: the bank file's core
/// count beside them is not an option, so a miss near such a record still compares the
/// options by their resolved values (an explicit default is no difference).
#[test]
fn why_compares_the_options_of_a_record_that_has_a_bank_file_core_count() {
    let dir = tempfile::tempdir().unwrap();
    let file = copy_as(
        dir.path(),
        &format!("{SOC}_{FILE_CORES}_AiCore_matmul.json"),
    );
    let bank = dir.path().join("named.redb");
    import_json(&file, &bank, &[]);
    // The sample's MatMul with another N: a miss whose nearest entry is that record.
    let templates: Value = serde_json::from_str(OPS).unwrap();
    let ops = dir.path().join("mm_n.json");
    std::fs::write(&ops, templates[3].to_string()).unwrap();
    let soc = format!("--soc_version={SOC}");
    let why = inspect(
        &bank,
        &[
            "why",
            "--ops",
            ops.to_str().unwrap(),
            &soc,
            "--precision_mode=force_fp16",
            "--json",
        ],
    );
    let why: Value = serde_json::from_str(&why).unwrap();
    let op = &why["ops"][0];
    assert_eq!(op["result"], "miss", "{why}");
    let nearest = op["nearest"].as_array().unwrap();
    assert!(!nearest.is_empty(), "{why}");
    for n in nearest {
        assert_eq!(n["option_differences"], json!([]), "{n}");
    }
    assert_eq!(op["cause"]["cause"], "fields", "{why}");
}
