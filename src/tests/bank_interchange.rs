//! Export, import and merge of bank files and AOE unified_bank files, through the library:
//! byte-identical round trips, refused edits, the merge rule, md5 checks, batched reads, and
//! `PyJson::dumps` against CPython. The command lines over them are `tests/it/inspect_interchange.rs`.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use crate::common::interchange::{descriptor, open, record, soc, SOC};
use tunebank::bank::interchange::aoe::{self, info_dict_md5, AoeReject};
use tunebank::bank::interchange::pyjson::PyJson;
use tunebank::bank::interchange::{self, export_store, merge_into, read_export, Side};
use tunebank::bank::store::{RedbStore, Store};
use tunebank::bank::{descriptor_key, Bank, LayerId, Lookup};
use tunebank::bank::{Descriptor, Origin};
use tunebank::key::{derive_op_keys, BankKey, FsReader, OpTemplate, RecordKind, ResolvedOptions};

fn export(bank: &Bank) -> Vec<u8> {
    let mut out = Vec::new();
    let report = export_store(bank.layer_store(LayerId::Custom).unwrap(), &mut out).unwrap();
    assert!(report.damaged.is_empty());
    out
}

#[test]
fn export_import_export_is_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let a = open(&dir.path().join("a.redb"));
    a.write_batch(
        &(1..=40)
            .map(|i| {
                let mut r = record(i, 10.0 + i as f64, "ensemble");
                // Every fifth is a default confirmed by tuning; the flag must survive too.
                r.performance.default_confirmed = i % 5 == 0;
                r
            })
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let first = export(&a);
    let text = String::from_utf8(first.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 40);
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains(r#""default_confirmed":true"#))
            .count(),
        8
    );
    assert!(!text.contains(r#""default_confirmed":false"#));
    // Keys ascend, one record a line, fields in declaration order.
    let keys: Vec<String> = lines.iter().map(|l| l[8..72].to_owned()).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    assert!(lines[0].starts_with(r#"{"key":""#));
    assert!(
        lines[0].contains(r#","record":{"key_schema_version":3,"kind":"op","descriptor":{"op":"#)
    );

    let b = open(&dir.path().join("b.redb"));
    let report = merge_into(&b, read_export(first.as_slice()).unwrap()).unwrap();
    assert_eq!(report.added, 40);
    assert_eq!(export(&b), first);
    // The records themselves are equal, floats included.
    for (key, rec) in read_export(first.as_slice()).unwrap() {
        assert_eq!(b.get_record(LayerId::Custom, &key).unwrap().unwrap(), rec);
    }
}

#[test]
fn import_refuses_edited_lines_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let a = open(&dir.path().join("a.redb"));
    a.write_batch(&[record(1, 10.0, "x"), record(2, 10.0, "x")])
        .unwrap();
    let text = String::from_utf8(export(&a)).unwrap();
    let edited = text.replacen("\"MatMul\"", "\"BatchMatMul\"", 1);
    let err = read_export(edited.as_bytes()).unwrap_err().to_string();
    assert!(err.starts_with("line "), "{err}");
    assert!(
        err.contains("is not the key of the record's descriptor"),
        "{err}"
    );
    let err = read_export(format!("{text}{{\"key\": 1}}\n").as_bytes())
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("line 3:"), "{err}");
}

#[test]
fn merge_keeps_the_faster_strategy_and_reports_both_sides() {
    let dir = tempfile::tempdir().unwrap();
    let target = open(&dir.path().join("t.redb"));
    // Target: 1..=4; source: 3..=6. Key 3: source faster; key 4: target faster.
    target
        .write_batch(&[
            record(1, 10.0, "t"),
            record(2, 10.0, "t"),
            record(3, 30.0, "t"),
            record(4, 5.0, "t"),
        ])
        .unwrap();
    let source_bank = open(&dir.path().join("s.redb"));
    source_bank
        .write_batch(&[
            record(3, 20.0, "s"),
            record(4, 9.0, "s"),
            record(5, 1.0, "s"),
            record(6, 1.0, "s"),
        ])
        .unwrap();
    let read = interchange::read_store(source_bank.layer_store(LayerId::Custom).unwrap()).unwrap();
    assert!(read.damaged.is_empty());
    let report = merge_into(&target, read.records).unwrap();
    assert_eq!(
        (
            report.target_before,
            report.added,
            report.source_won,
            report.target_won
        ),
        (4, 2, 1, 1)
    );
    assert_eq!(report.target_after(), 6);
    let key = |i| descriptor_key(&Descriptor::Op(descriptor(i))).unwrap();
    let get = |i| {
        target
            .get_record(LayerId::Custom, &key(i))
            .unwrap()
            .unwrap()
    };
    assert_eq!(get(3).performance.tuned_us, 20.0);
    assert_eq!(get(4).performance.tuned_us, 5.0);
    assert_eq!(get(5).provenance.algorithm, "s");
    let c3 = report.conflicts.iter().find(|c| c.key == key(3)).unwrap();
    assert_eq!(c3.winner, Side::Source);
    assert_eq!(
        (
            c3.winner_provenance.algorithm.as_str(),
            c3.loser_provenance.algorithm.as_str()
        ),
        ("s", "t")
    );
    let c4 = report.conflicts.iter().find(|c| c.key == key(4)).unwrap();
    assert_eq!(c4.winner, Side::Target);
    assert_eq!(c4.loser_us, 9.0);
    let summary = report.summary();
    assert!(
        summary.contains("contributed 2 new and won 1 conflicts"),
        "{summary}"
    );
    // Merging the same again changes nothing.
    let again = merge_into(
        &target,
        interchange::read_store(source_bank.layer_store(LayerId::Custom).unwrap())
            .unwrap()
            .records,
    )
    .unwrap();
    assert_eq!(
        (
            again.added,
            again.source_won,
            again.target_won,
            again.identical
        ),
        (0, 0, 1, 3)
    );
}

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/aoe/unified_bank.json")
}

#[test]
fn aoe_md5s_are_verified_and_mismatches_rejected() {
    let text = std::fs::read_to_string(fixture()).unwrap();
    let parsed = aoe::parse_unified_bank(&text).unwrap();
    assert_eq!(parsed.accepted.len(), 5);
    assert_eq!(parsed.rejected.len(), 2);
    for r in &parsed.rejected {
        assert!(matches!(r.reason, AoeReject::Md5Mismatch { .. }), "{r:?}");
    }
    let rejected_ops: BTreeSet<String> = parsed
        .rejected
        .iter()
        .map(|r| {
            let root = PyJson::parse(&text).unwrap();
            let entry = &root.get(&r.md5).unwrap();
            let PyJson::List(items) = entry else { panic!() };
            items[r.index]
                .get("info_dict")
                .unwrap()
                .get("op_type")
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        rejected_ops,
        BTreeSet::from(["Relu".to_owned(), "Gelu".to_owned()])
    );
    for e in &parsed.accepted {
        assert_eq!(info_dict_md5(&e.info_dict), e.md5);
    }
    // Not an object of lists: bad input.
    assert!(aoe::parse_unified_bank("[1, 2]").is_err());
}

#[test]
fn aoe_import_keeps_entries_verbatim_findable_and_usable_as_a_builtin_layer() {
    let dir = tempfile::tempdir().unwrap();
    let builtin = dir.path().join("builtin.redb");
    let text = std::fs::read_to_string(fixture()).unwrap();
    let parsed = aoe::parse_unified_bank(&text).unwrap();
    let report = aoe::import_aoe(&open(&builtin), &parsed, &soc(), Origin::BuiltIn, 0).unwrap();
    // Two MatMul entries share a key (the faster is kept); the Softmax has a dynamic dim.
    assert_eq!(report.merge.added, 4);
    assert_eq!(report.unmapped.len(), 1);
    assert!(
        report.unmapped[0].1.contains("not a static dim"),
        "{:?}",
        report.unmapped
    );

    let bank = Bank::builder(RecordKind::Op, SOC)
        .custom_path(dir.path().join("custom.redb"))
        .builtin_path(&builtin)
        .no_default_builtin()
        .open()
        .unwrap();
    for e in &parsed.accepted {
        let (layer, rec) = aoe::find_by_info_dict(&bank, &e.info_dict, &soc())
            .unwrap()
            .unwrap();
        assert_eq!(layer, LayerId::BuiltIn(0));
        assert_eq!(rec.provenance.origin, Origin::BuiltIn);
        let stored_info = rec.strategy["aoe_info_dict"].as_str().unwrap();
        assert_eq!(stored_info, e.info_dict.dumps());
        assert_eq!(
            tunebank::bank::interchange::md5_hex(stored_info.as_bytes()),
            e.md5
        );
        assert_eq!(rec.strategy["aoe_md5"], e.md5.as_str());
        let knowledge = PyJson::parse(rec.strategy["aoe_knowledge"].as_str().unwrap()).unwrap();
        if e.md5 == parsed.accepted[0].md5 {
            // The faster of the two MatMul entries, key order as AOE wrote it.
            assert_eq!(rec.performance.tuned_us, 26.876);
            assert_eq!(
                knowledge.dumps(),
                r#"{"tiling": {"baseN": 256, "baseM": 128, "baseK": 64}, "dbL0C": 1}"#
            );
        } else {
            assert_eq!(knowledge, e.knowledge);
        }
    }
    // A converter resolving the same MatMul from a model hits the built-in layer.
    let op: OpTemplate = serde_json::from_value(serde_json::json!({
        "node_name": "fc1", "op_type": "MatMul",
        "inputs": [{"shape": [128, 768], "dtype": "float16"}, {"shape": [768, 3072], "dtype": "float16"}],
        "outputs": [{"shape": [128, 3072], "dtype": "float16"}],
        "attrs": {"transpose_x1": {"bool": false}, "transpose_x2": {"bool": false}}
    }))
    .unwrap();
    let options = ResolvedOptions::from_args([format!("--soc_version={SOC}")], &FsReader).unwrap();
    let key = derive_op_keys(&op, &options, &options.soc().unwrap()).unwrap()[0].key;
    let Lookup::Hit(hit) = bank.lookup(&key).unwrap() else {
        panic!("the imported MatMul must answer a converter's look-up");
    };
    assert_eq!(hit.layer, LayerId::BuiltIn(0));
}

#[test]
fn get_many_reads_the_keys_held_in_the_order_given() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.redb");
    let keys = open(&path)
        .write_batch(&[
            record(1, 1.0, "g"),
            record(2, 1.0, "g"),
            record(3, 1.0, "g"),
        ])
        .unwrap();
    let store = RedbStore::open_read_only(&path).unwrap();
    let absent = BankKey([0; 32]);
    let asked = [keys[2], absent, keys[0]];
    let mut seen = Vec::new();
    store
        .get_many_with(&asked, &mut |k, v| {
            let mut single = Vec::new();
            store.get_with(k, &mut |s| single = s.to_vec()).unwrap();
            assert_eq!(v, single.as_slice());
            seen.push(*k);
        })
        .unwrap();
    assert_eq!(seen, [keys[2], keys[0]]);
}

/// A random JSON document in Python's text form (PyJson::dumps), for the cross-check below.
fn random_doc(rng: &mut rand::rngs::StdRng, depth: u32) -> PyJson {
    use rand::Rng;
    let pick = if depth == 0 {
        rng.gen_range(0..5)
    } else {
        rng.gen_range(0..7)
    };
    match pick {
        0 => PyJson::Null,
        1 => PyJson::Bool(rng.gen()),
        2 => PyJson::Int(
            rng.gen_range(-1_000_000_000_000i64..1_000_000_000_000)
                .into(),
        ),
        3 => {
            let mantissa: f64 = rng.gen_range(-10.0..10.0);
            let exp = rng.gen_range(-30..30);
            PyJson::Float(mantissa * 10f64.powi(exp))
        }
        4 => {
            let alphabet = [
                'a', 'Z', ' ', '"', '\\', '\n', '\t', '\u{1}', '\u{7f}', 'é', '层', '𝄞',
            ];
            let n = rng.gen_range(0..8);
            PyJson::Str(
                (0..n)
                    .map(|_| alphabet[rng.gen_range(0..alphabet.len())])
                    .collect(),
            )
        }
        5 => PyJson::List(
            (0..rng.gen_range(0..4))
                .map(|_| random_doc(rng, depth - 1))
                .collect(),
        ),
        _ => {
            let mut entries: Vec<(String, PyJson)> = Vec::new();
            for i in 0..rng.gen_range(0..5) {
                // Keys deliberately out of sorted order.
                entries.push((format!("{}k{i}", 9 - i), random_doc(rng, depth - 1)));
            }
            PyJson::Dict(entries)
        }
    }
}

/// `PyJson::dumps` must be byte-identical to CPython's `json.dumps(json.loads(text))`; run when a
/// `python3` is on the PATH (the fixture's md5s check the same thing without Python), and
/// required under `CI=true`.
#[test]
fn dumps_matches_cpython_byte_for_byte() {
    use rand::SeedableRng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let docs: Vec<String> = (0..300).map(|_| random_doc(&mut rng, 4).dumps()).collect();
    let script =
        "import json, sys\nfor line in sys.stdin:\n    print(json.dumps(json.loads(line)))\n";
    let child = Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        crate::common::skip_or_fail("python3 is not on PATH (the json.dumps cross-check)");
        return;
    };
    use std::io::Write;
    let mut stdin = child.stdin.take().unwrap();
    let input = docs.join("\n") + "\n";
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success());
    let python = String::from_utf8(out.stdout).unwrap();
    for (ours, theirs) in docs.iter().zip(python.lines()) {
        assert_eq!(ours, theirs);
        // And our parse of Python's text dumps back to it.
        assert_eq!(PyJson::parse(theirs).unwrap().dumps(), theirs);
    }
    assert_eq!(python.lines().count(), docs.len());
}
