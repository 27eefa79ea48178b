//! The layered bank: custom over built-in, shadowing, rejected hits, error-on-miss, counters,
//! read-only opens, atomic batches, and AOE path resolution end to end.

use crate::common;

use std::path::Path;

use tunebank::bank::paths::BankEnv;
use tunebank::bank::{descriptor_key, Bank, BankError, Found, LayerId, Lookup, Record};
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
    let fits = |a: &tunebank::bank::Answer| a.strategy["baseM"].as_i64() <= Some(256);
    let Lookup::Hit(hit) = bank.lookup_checked(&key_of(&record(1)), fits).unwrap() else {
        panic!("expected the built-in entry");
    };
    assert_eq!(hit.layer, LayerId::BuiltIn(0));
    assert_eq!(hit.rejected_above, vec![LayerId::Custom]);
    let none = |_: &tunebank::bank::Answer| false;
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

/// Writes raw values (already encoded, possibly damaged or of an older format) into a bank file.
fn put_raw(path: &Path, values: &[(tunebank::key::BankKey, Vec<u8>)]) {
    use tunebank::bank::store::{RedbStore, Store, StoreEntry};
    let store = RedbStore::open(path).unwrap();
    let entries: Vec<StoreEntry<'_>> = values
        .iter()
        .map(|(key, value)| StoreEntry {
            key: *key,
            value,
            index: common::op_index(SOC, "MatMul"),
        })
        .collect();
    store.put_batch(&entries).unwrap();
}

/// The batch look-up gives, key by key, what the single look-up gives — across three layers,
/// with shadowed, rejected, damaged (answer and details), format-1, missing and repeated keys
/// in no particular order — and moves the counters the same way, in both miss modes.
#[test]
fn batch_lookup_equals_single_lookups_key_by_key() {
    use tunebank::bank::{encode, encode_v1};
    let dir = tempfile::tempdir().unwrap();
    let custom = dir.path().join("custom.redb");
    let b0 = dir.path().join("b0.redb");
    let b1 = dir.path().join("b1.redb");
    let wide = |t: u64| {
        let mut r = record(t);
        r.strategy.insert("baseM".into(), serde_json::json!(4096));
        r
    };
    make_bank(&b1, &(1..=6).map(record).collect::<Vec<_>>());
    let damaged_answer = {
        let r = record(8);
        let mut v = encode(&key_of(&r), &r);
        v[48 + 4 + 3] ^= 0x10;
        (key_of(&r), v)
    };
    let damaged_details = {
        let r = record(9);
        let mut v = encode(&key_of(&r), &r);
        *v.last_mut().unwrap() ^= 0x01;
        (key_of(&r), v)
    };
    let old = (
        key_of(&record(7)),
        encode_v1(&key_of(&record(7)), &record(7)),
    );
    put_raw(&b1, &[damaged_answer, damaged_details, old]);
    make_bank(&b0, &[record(2), record(4), wide(5)]);
    make_bank(&custom, &[record(1), record(2), wide(3), record(10)]);

    let keys: Vec<_> = [10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 1, 8, 3, 12]
        .iter()
        .map(|&t| key_of(&record(t)))
        .collect();
    let fits = |a: &tunebank::bank::Answer| a.strategy["baseM"].as_i64() <= Some(256);
    for error_on_miss in [false, true] {
        let open = || {
            bank_at(&custom)
                .builtin_path(&b0)
                .builtin_path(&b1)
                .read_only(true)
                .error_on_miss(error_on_miss)
                .open()
                .unwrap()
        };
        let (singles, batched) = (open(), open());
        let one_by_one: Vec<_> = keys
            .iter()
            .map(|k| singles.lookup_checked(k, fits))
            .collect();
        let batch = batched.lookup_many_checked(&keys, fits).unwrap();
        assert_eq!(batch.len(), keys.len());
        for (n, (a, b)) in one_by_one.iter().zip(&batch).enumerate() {
            match (a, b) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "key #{n}"),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "key #{n}"),
                _ => panic!("key #{n}: single {a:?}, batch {b:?}"),
            }
        }
        assert_eq!(singles.counters(), batched.counters());
        // The in-place look-up walks the layers the same way and sees the same answers.
        let inplace = open();
        let fits_in_place = |a: &tunebank::bank::AnswerRef<'_>| {
            a.strategy.get("baseM").and_then(|v| v.as_i64()) <= Some(256)
        };
        for (n, (k, single)) in keys.iter().zip(&one_by_one).enumerate() {
            let seen = inplace.lookup_with(k, fits_in_place, |h| {
                let record = tunebank::bank::decode(&h.key, h.value);
                (
                    h.layer,
                    h.shadowed,
                    h.rejected_above,
                    h.answer.to_answer(),
                    record,
                )
            });
            match (single, seen) {
                (Ok(Lookup::Hit(a)), Ok(Found::Hit((layer, shadowed, above, answer, record)))) => {
                    assert_eq!(
                        (a.layer, &a.shadowed, &a.rejected_above, &a.answer),
                        (layer, &shadowed, &above, &answer),
                        "key #{n}"
                    );
                    assert_eq!(a.record().ok(), record.ok(), "key #{n}");
                }
                (Ok(Lookup::Miss { rejected: a }), Ok(Found::Miss { rejected: b })) => {
                    assert_eq!(a, &b, "key #{n}")
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "key #{n}"),
                (a, b) => panic!("key #{n}: single {a:?}, in place {b:?}"),
            }
        }
        assert_eq!(singles.counters(), inplace.counters());
        // The in-place batch: per position what the in-place single look-up saw (keys 1, 8 and
        // 3 are given twice), the same counters.
        let many = open();
        let mut seen: Vec<Vec<_>> = vec![Vec::new(); keys.len()];
        let found = many
            .lookup_many_with(&keys, fits_in_place, |p, h| {
                seen[p].push((
                    h.key,
                    h.layer,
                    h.shadowed,
                    h.rejected_above,
                    h.answer.to_answer(),
                    h.value.len(),
                ))
            })
            .unwrap();
        let again = open();
        for (n, k) in keys.iter().enumerate() {
            let single = again.lookup_with(k, fits_in_place, |h| {
                (
                    h.key,
                    h.layer,
                    h.shadowed,
                    h.rejected_above,
                    h.answer.to_answer(),
                    h.value.len(),
                )
            });
            match (single, &found[n]) {
                (Ok(Found::Hit(one)), Ok(Found::Hit(()))) => {
                    assert_eq!(seen[n], vec![one], "key #{n}")
                }
                (Ok(Found::Miss { rejected: a }), Ok(Found::Miss { rejected: b })) => {
                    assert_eq!(&a, b, "key #{n}");
                    assert!(seen[n].is_empty(), "key #{n}");
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "key #{n}"),
                (a, b) => panic!("key #{n}: single {a:?}, batch in place {b:?}"),
            }
        }
        assert_eq!(again.counters(), many.counters());
        // The answers themselves: the custom layer shadows both built-ins, a rejected entry
        // falls through, damage in the answer is an error, damage in the details is found
        // when the whole record is decoded, format 1 still reads.
        let hit = |n: usize| batch[n].as_ref().unwrap().hit().unwrap();
        assert_eq!(hit(2).layer, LayerId::Custom);
        assert_eq!(
            hit(2).shadowed,
            vec![LayerId::BuiltIn(0), LayerId::BuiltIn(1)]
        );
        assert_eq!(hit(3).layer, LayerId::BuiltIn(1));
        assert_eq!(hit(3).rejected_above, vec![LayerId::Custom]);
        assert_eq!(hit(7).record().unwrap(), record(7));
        assert!(matches!(batch[8], Err(BankError::Record(_))));
        assert!(hit(9).record().is_err());
        assert_eq!(batch[10].is_err(), error_on_miss);
    }
}
