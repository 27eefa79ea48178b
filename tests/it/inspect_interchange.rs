//! The command lines of export, import, merge and AOE import, and the bank-inspect catalogue
//! commands (`show`, `list`, `stats`, `verify`, `diff`). The library under them is tested in
//! `src/tests/bank_interchange.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::interchange::{open, record, SOC};
use tunebank::bank::index_key;
use tunebank::bank::store::{RedbStore, Store, StoreEntry};
use tunebank::bank::Record;
use tunebank::key::BankKey;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/aoe/unified_bank.json")
}

fn bin(name: &str) -> Command {
    Command::new(match name {
        "tunebank" => env!("CARGO_BIN_EXE_tunebank"),
        _ => env!("CARGO_BIN_EXE_bank-inspect"),
    })
}

#[test]
fn cli_export_import_merge_and_aoe() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.redb");
    open(&a)
        .write_batch(&(1..=12).map(|i| record(i, 10.0, "a")).collect::<Vec<_>>())
        .unwrap();
    let export_of = |bank: &Path| {
        let out = bin("tunebank")
            .args(["bank", "export", "--bank"])
            .arg(bank)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let first = export_of(&a);
    let file = dir.path().join("a.jsonl");
    std::fs::write(&file, &first).unwrap();
    let b = dir.path().join("b.redb");
    let out = bin("tunebank")
        .args(["bank", "import"])
        .arg(&file)
        .arg("--bank")
        .arg(&b)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(export_of(&b), first);

    // Merge a faster copy of record 1 from a bank file.
    let c = dir.path().join("c.redb");
    open(&c)
        .write_batch(&[record(1, 2.0, "c"), record(99, 2.0, "c")])
        .unwrap();
    let out = bin("tunebank")
        .args(["bank", "merge"])
        .arg(&c)
        .arg("--bank")
        .arg(&b)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc[0]["report"]["added"], 1);
    assert_eq!(doc[0]["report"]["source_won"], 1);
    assert_eq!(
        doc[0]["report"]["conflicts"][0]["loser_provenance"]["algorithm"],
        "a"
    );

    // diff: b now differs from a in one changed and one added record.
    let out = bin("bank-inspect")
        .arg("diff")
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("0 only in") && text.contains("1 changed, 11 same"),
        "{text}"
    );
    let out = bin("bank-inspect")
        .arg("diff")
        .arg(&a)
        .arg(&a)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));

    // AOE import: the two bad md5s are reported, exit 1, the rest imported.
    let aoe_bank = dir.path().join("aoe.redb");
    let out = bin("tunebank")
        .args([
            "bank",
            "import",
            "--aoe",
            "--as-builtin",
            "--soc_version=Ascend910B2",
            "--bank",
        ])
        .arg(&aoe_bank)
        .arg(fixture())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("5 entries verified, 2 rejected"), "{text}");
    assert_eq!(text.matches("md5 mismatch").count(), 2, "{text}");

    // list / stats / show over the imported bank.
    let out = bin("bank-inspect")
        .args(["list", "--origin", "built_in", "--json", "--bank"])
        .arg(&aoe_bank)
        .output()
        .unwrap();
    assert!(out.status.success());
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 4);
    let out = bin("bank-inspect")
        .args([
            "list",
            "--soc",
            SOC,
            "--kind",
            "op",
            "--op-type",
            "matmulv2",
            "--bank",
        ])
        .arg(&aoe_bank)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 1);
    let key = listed[0]["record"]["key"].as_str().unwrap().to_owned();
    let out = bin("bank-inspect")
        .args(["show", &key, "--bank"])
        .arg(&aoe_bank)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .contains("aoe_knowledge"));
    let out = bin("bank-inspect")
        .args(["show", &"0".repeat(64), "--bank"])
        .arg(&aoe_bank)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let out = bin("bank-inspect")
        .args(["stats", "--json", "--bank"])
        .arg(&aoe_bank)
        .output()
        .unwrap();
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats[0]["stats"]["records"], 4);
    assert_eq!(stats[0]["stats"]["by_origin"]["built_in"], 4);

    // Bad input: a missing bank file is exit 2.
    let out = bin("bank-inspect")
        .args(["stats", "--bank"])
        .arg(dir.path().join("nope.redb"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Rewrites the stored values of `victims` with one byte flipped at a different place each.
fn corrupt(path: &Path, victims: &[BankKey], records: &BTreeMap<BankKey, Record>) {
    let store = RedbStore::open(path).unwrap();
    for (n, key) in victims.iter().enumerate() {
        let mut value = Vec::new();
        store.get_with(key, &mut |v| value = v.to_vec()).unwrap();
        let at = [0, 5, 8, 20, 60, value.len() / 2, value.len() - 1][n % 7];
        value[at] ^= 0x40;
        store
            .put_batch(&[StoreEntry {
                key: *key,
                value: &value,
                index: index_key(&records[key]),
            }])
            .unwrap();
    }
}

#[test]
fn verify_finds_every_damaged_record_and_none_in_a_clean_bank() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.redb");
    let records: Vec<Record> = (1..=60).map(|i| record(i, 10.0, "v")).collect();
    let keys = open(&path).write_batch(&records).unwrap();
    let by_key: BTreeMap<BankKey, Record> = keys.iter().copied().zip(records).collect();
    let verify = || {
        let out = bin("bank-inspect")
            .args(["verify", "--json", "--bank"])
            .arg(&path)
            .output()
            .unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let damaged: BTreeSet<String> = doc["layers"][0]["damaged_keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap().to_owned())
            .collect();
        (out.status.code(), damaged)
    };
    assert_eq!(verify(), (Some(0), BTreeSet::new()));
    let victims: Vec<BankKey> = keys.iter().copied().step_by(8).collect();
    corrupt(&path, &victims, &by_key);
    let expected: BTreeSet<String> = victims.iter().map(ToString::to_string).collect();
    assert_eq!(verify(), (Some(1), expected));
    // Export leaves the damaged records out and says so.
    let out = bin("tunebank")
        .args(["bank", "export", "--bank"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().lines().count(),
        60 - victims.len()
    );
}
