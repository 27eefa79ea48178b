//! The layered bank: custom over built-in, shadowing, rejected hits, error-on-miss, counters,
//! read-only opens, atomic batches, and AOE path resolution end to end.

mod common;

use std::path::Path;

use tunebank::bank::paths::BankEnv;
use tunebank::bank::{descriptor_key, Bank, BankError, LayerId, Lookup, Record};
use tunebank::key::RecordKind;

const SOC: &str = "Ascend910B2";

fn record(tag: u64) -> Record {
    common::op_record(SOC, "MatMul", tag, 0, 1)
}

fn key_of(r: &Record) -> tunebank::key::BankKey {
    descriptor_key(&r.descriptor).unwrap()
}

fn bank_at(custom: &Path) -> tunebank::bank::BankBuilder {
    Bank::builder(RecordKind::Op, SOC)
        .env(BankEnv::default())
        .custom_path(custom)
        .no_default_builtin()
}

/// Writes `records` into a fresh bank file at `path` (used as a built-in layer afterwards).
fn make_bank(path: &Path, records: &[Record]) {
    bank_at(path).open().unwrap().write_batch(records).unwrap();
}

#[test]
fn custom_layer_answers_first_and_reports_what_it_shadows() {
    let dir = tempfile::tempdir().unwrap();
    let builtin = dir.path().join("builtin.redb");
    let custom = dir.path().join("custom.redb");
    let mut shared_builtin = record(1);
    shared_builtin
        .strategy
        .insert("who".into(), "builtin".into());
    let mut shared_custom = record(1);
    shared_custom.strategy.insert("who".into(), "custom".into());
    make_bank(&builtin, &[shared_builtin, record(2)]);
    make_bank(&custom, &[shared_custom.clone()]);

    let bank = bank_at(&custom).builtin_path(&builtin).open().unwrap();
    let Lookup::Hit(hit) = bank.lookup(&key_of(&shared_custom)).unwrap() else {
        panic!("expected a hit");
    };
    assert_eq!(hit.layer, LayerId::Custom);
    assert_eq!(hit.shadowed, vec![LayerId::BuiltIn(0)]);
    assert_eq!(hit.answer.strategy["who"], "custom");
    assert_eq!(hit.record().unwrap(), shared_custom);

    let Lookup::Hit(hit) = bank.lookup(&key_of(&record(2))).unwrap() else {
        panic!("expected a built-in hit");
    };
    assert_eq!(hit.layer, LayerId::BuiltIn(0));
    assert!(hit.shadowed.is_empty());

    assert!(matches!(
        bank.lookup(&key_of(&record(3))).unwrap(),
        Lookup::Miss { .. }
    ));
    let c = bank.counters();
    assert_eq!((c.hits, c.misses, c.rejected), (2, 1, 0));
}

#[test]
fn rejected_hit_falls_through_to_the_next_layer_and_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let builtin = dir.path().join("builtin.redb");
    let custom = dir.path().join("custom.redb");
    let mut stale = record(1);
    stale
        .strategy
        .insert("baseM".into(), serde_json::json!(4096));
    make_bank(&custom, &[stale]);
    make_bank(&builtin, &[record(1)]);
    let bank = bank_at(&custom).builtin_path(&builtin).open().unwrap();
    // The caller's validity check: baseM must fit the target.
    let fits = |a: &tunebank::bank::record::Answer| a.strategy["baseM"].as_i64() <= Some(256);
    let Lookup::Hit(hit) = bank.lookup_checked(&key_of(&record(1)), fits).unwrap() else {
        panic!("expected the built-in entry");
    };
    assert_eq!(hit.layer, LayerId::BuiltIn(0));
    assert_eq!(hit.rejected_above, vec![LayerId::Custom]);
    let none = |_: &tunebank::bank::record::Answer| false;
    assert_eq!(
        bank.lookup_checked(&key_of(&record(1)), none).unwrap(),
        Lookup::Miss {
            rejected: vec![LayerId::Custom, LayerId::BuiltIn(0)]
        }
    );
    let c = bank.counters();
    assert_eq!((c.hits, c.misses, c.rejected), (1, 1, 3));
}

#[test]
fn error_on_miss_names_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let custom = dir.path().join("custom.redb");
    make_bank(&custom, &[record(1)]);
    let bank = bank_at(&custom).error_on_miss(true).open().unwrap();
    assert!(bank.lookup(&key_of(&record(1))).is_ok());
    let missing = key_of(&record(9));
    let err = bank.lookup(&missing).unwrap_err();
    assert!(matches!(err, BankError::Miss { key } if key == missing));
    assert!(err.to_string().contains(&missing.to_string()));
    let err = bank
        .lookup_batch(&[key_of(&record(1)), missing])
        .unwrap_err();
    assert!(matches!(err, BankError::Miss { .. }));
}

#[test]
fn batch_lookup_answers_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let custom = dir.path().join("custom.redb");
    make_bank(&custom, &[record(1), record(3)]);
    let bank = bank_at(&custom).read_only(true).open().unwrap();
    let keys: Vec<_> = (1..=4).map(|t| key_of(&record(t))).collect();
    let hits: Vec<bool> = bank
        .lookup_batch(&keys)
        .unwrap()
        .iter()
        .map(|l| l.hit().is_some())
        .collect();
    assert_eq!(hits, vec![true, false, true, false]);
}

#[test]
fn read_only_open_creates_nothing_and_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    let custom = dir.path().join("sub/custom.redb");
    let bank = bank_at(&custom).read_only(true).open().unwrap();
    assert!(bank.layer_paths().is_empty());
    assert!(matches!(
        bank.lookup(&key_of(&record(1))).unwrap(),
        Lookup::Miss { .. }
    ));
    assert!(matches!(
        bank.write_batch(&[record(1)]),
        Err(BankError::NotWritable)
    ));
    assert!(!dir.path().join("sub").exists());
}

#[test]
fn write_batch_is_all_or_nothing_and_keys_come_from_descriptors() {
    let dir = tempfile::tempdir().unwrap();
    let custom = dir.path().join("custom.redb");
    let bank = bank_at(&custom).open().unwrap();
    let mut graph = record(2);
    graph.kind = RecordKind::Graph;
    let err = bank.write_batch(&[record(1), graph]).unwrap_err();
    assert!(matches!(err, BankError::WrongKind { .. }));
    assert!(bank.lookup(&key_of(&record(1))).unwrap().hit().is_none());
    let keys = bank.write_batch(&[record(1), record(2)]).unwrap();
    assert_eq!(keys, vec![key_of(&record(1)), key_of(&record(2))]);
    assert!(bank.verify().iter().all(|(_, r)| r.is_clean()));
}

#[test]
fn tune_bank_path_decides_the_op_bank_per_soc() {
    let dir = tempfile::tempdir().unwrap();
    let env = BankEnv {
        tune_bank_path: Some(dir.path().into()),
        ascend_cache_path: Some("/nonexistent/cache".into()),
        home: Some("/nonexistent/home".into()),
        builtin_path: None,
    };
    let bank = Bank::builder(RecordKind::Op, SOC)
        .env(env.clone())
        .no_default_builtin()
        .open()
        .unwrap();
    bank.write_batch(&[record(1)]).unwrap();
    assert!(dir.path().join("Ascend910B2/tunebank_op.redb").is_file());
    drop(bank);

    let mut bad = env;
    bad.tune_bank_path = Some(dir.path().join("missing").into());
    let err = Bank::builder(RecordKind::Op, SOC)
        .env(bad)
        .no_default_builtin()
        .open()
        .unwrap_err();
    assert!(err.to_string().contains("TUNE_BANK_PATH="), "{err}");
    assert!(!dir.path().join("missing").exists());
}
