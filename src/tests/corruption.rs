//! Bytes flipped inside stored values on disk: the look-up names the key, verify lists exactly the
//! damaged records.

use crate::common;

use std::collections::BTreeSet;

use common::{entries, key, op_record, Owned};
use tunebank::bank::store::{RedbStore, Store, StructureCheck};
use tunebank::bank::verify_store;
use tunebank::bank::{decode, decode_answer, Damage, RecordError};
use tunebank::key::BankKey;

const RECORDS: usize = 40;

/// A marker unique to record `i` and to the section it sits in.
fn marker(section: &str, i: usize) -> String {
    format!("{section}-MARK-{i:04}-7f3c9e1d")
}

fn records() -> Vec<Owned> {
    (0..RECORDS)
        .map(|i| {
            let mut rec = op_record("Ascend910B2", "MatMul", i as u64, 0, 1);
            rec.strategy
                .insert("marker".into(), serde_json::json!(marker("ANSWER", i)));
            rec.options.insert("marker".into(), marker("DETAILS", i));
            Owned::new(key(&format!("c{i}")), &rec)
        })
        .collect()
}

fn find_unique(haystack: &[u8], needle: &[u8]) -> usize {
    let hits: Vec<usize> = haystack
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(at, _)| at)
        .collect();
    assert_eq!(
        hits.len(),
        1,
        "marker {} must occur exactly once in the file",
        String::from_utf8_lossy(needle)
    );
    hits[0]
}

fn lookup(store: &dyn Store, k: &BankKey) -> Vec<u8> {
    let mut out = None;
    assert!(store.get_with(k, &mut |v| out = Some(v.to_vec())).unwrap());
    out.unwrap()
}

#[test]
fn flipped_bytes_in_values_name_their_keys() {
    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path().join("bank.redb");
    let batch = records();
    {
        let store = RedbStore::open(&bank).unwrap();
        store.put_batch(&entries(&batch)).unwrap();
    }

    // Damage the answer section of some records and the details section of others, by flipping
    // a byte in the middle of a marker only that record's value contains (so redb's own pages
    // headers and branch structures are untouched).
    let answer_victims = [3usize, 17];
    let details_victims = [8usize, 29, 39];
    let mut file = std::fs::read(&bank).unwrap();
    for &i in &answer_victims {
        let at = find_unique(&file, marker("ANSWER", i).as_bytes());
        file[at + 8] ^= 0x20;
    }
    for &i in &details_victims {
        let at = find_unique(&file, marker("DETAILS", i).as_bytes());
        file[at + 9] ^= 0x01;
    }
    std::fs::write(&bank, &file).unwrap();

    let damaged: BTreeSet<BankKey> = answer_victims
        .iter()
        .chain(&details_victims)
        .map(|&i| batch[i].key)
        .collect();

    let store = RedbStore::open(&bank).unwrap();
    for (i, o) in batch.iter().enumerate() {
        let value = lookup(&store, &o.key);
        if damaged.contains(&o.key) {
            // A hit verifies what it returns (header and answer section); damage confined to
            // the details is found when the whole record is decoded (`Hit::record`, verify).
            let mut errors = vec![decode(&o.key, &value).unwrap_err()];
            if answer_victims.contains(&i) {
                errors.push(decode_answer(&o.key, &value).unwrap_err());
            } else {
                assert_eq!(
                    decode_answer(&o.key, &value).unwrap(),
                    decode_answer(&o.key, &o.value).unwrap()
                );
            }
            for err in errors {
                assert_eq!(
                    err,
                    RecordError::Damaged {
                        key: o.key,
                        reason: Damage::ChecksumMismatch
                    }
                );
                assert!(err.to_string().contains(&o.key.to_string()), "{err}");
            }
        } else {
            assert_eq!(value, o.value);
            decode(&o.key, &value).unwrap();
        }
    }

    let report = verify_store(&store);
    let listed: BTreeSet<BankKey> = report.damaged_keys().into_iter().collect();
    assert_eq!(
        listed, damaged,
        "verify lists every damaged key and no clean one"
    );
    assert_eq!(report.damaged.len(), damaged.len());
    assert_eq!(report.records, RECORDS as u64);
    assert!(!report.is_clean());
    assert!(report.index.is_empty(), "{:?}", report.index);
    // redb notices the altered page too, and leaves the bank as it was.
    assert!(
        matches!(report.structure, Some(StructureCheck::Damaged(_))),
        "{:?} {:?}",
        report.structure,
        report.errors
    );
    assert_eq!(lookup(&store, &batch[0].key), batch[0].value);
    drop(store);
    let store = RedbStore::open(&bank).unwrap();
    assert_eq!(lookup(&store, &batch[1].key), batch[1].value);
    assert_eq!(verify_store(&store).damaged_keys().len(), damaged.len());
    drop(store);
    listing_names_the_first_damaged_key(&bank, &damaged);
}

/// `bank-inspect list` over the damaged bank: an error naming the first damaged key it meets, by
/// the full scan (key order) and by the index (a SoC filter), never a list without them.
fn listing_names_the_first_damaged_key(file: &std::path::Path, damaged: &BTreeSet<BankKey>) {
    use tunebank::bank::Bank;
    use tunebank::inspect::{Filter, InspectError, ListReport};
    use tunebank::key::RecordKind;
    let bank = Bank::builder(RecordKind::Op, "Ascend910B2")
        .custom_path(file)
        .no_default_builtin()
        .read_only(true)
        .open()
        .unwrap();
    let first = damaged.iter().next().unwrap();
    for filter in [
        Filter::default(),
        Filter {
            soc: Some("Ascend910B2".into()),
            ..Filter::default()
        },
    ] {
        let err = ListReport::of(&bank, &filter).unwrap_err();
        assert!(
            matches!(&err, InspectError::Record(RecordError::Damaged { key, .. }) if damaged.contains(key)),
            "{filter:?}: {err}"
        );
        if filter.soc.is_none() {
            assert!(err.to_string().contains(&first.to_string()), "{err}");
        }
    }
}

#[test]
fn a_value_moved_under_another_key_is_damage() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(dir.path().join("bank.redb")).unwrap();
    let batch = records();
    let mut moved = batch[1].entry();
    moved.value = &batch[0].value;
    store.put_batch(&[batch[0].entry(), moved]).unwrap();
    let value = lookup(&store, &batch[1].key);
    assert_eq!(
        decode_answer(&batch[1].key, &value).unwrap_err(),
        RecordError::Damaged {
            key: batch[1].key,
            reason: Damage::ChecksumMismatch
        }
    );
    let report = verify_store(&store);
    assert_eq!(report.damaged_keys(), vec![batch[1].key]);
}

/// Index tables edited behind the store's back: the index check names each disagreement.
#[test]
fn index_inconsistencies_are_reported() {
    use ::redb::{ConcurrencyMode, Database, ReadableTableMetadata};
    use tunebank::bank::store::IndexProblem;
    use tunebank::bank::store::{INDEX, INDEX_OF};
    use tunebank::bank::IndexMismatch;

    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path().join("bank.redb");
    let batch = records();
    {
        let store = RedbStore::open(&bank).unwrap();
        store.put_batch(&entries(&batch)).unwrap();
        assert!(store.check_index().unwrap().is_empty());
    }
    let unindexed = batch[4].key;
    let no_reverse = batch[6].key;
    let dangling = key("no such record");
    {
        let db = Database::builder()
            .set_concurrency_mode(ConcurrencyMode::MultiWriter)
            .open(&bank)
            .unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut index = txn.open_table(INDEX).unwrap();
            assert!(index
                .remove(("Ascend910B2", 0u8, "matmul", &unindexed.0))
                .unwrap()
                .is_some());
            index
                .insert(("Ascend910B2", 0u8, "matmul", &dangling.0), ())
                .unwrap();
            let mut index_of = txn.open_table(INDEX_OF).unwrap();
            assert!(index_of.remove(&no_reverse.0).unwrap().is_some());
            assert_eq!(index_of.len().unwrap(), RECORDS as u64 - 1);
        }
        txn.commit().unwrap();
    }

    let store = RedbStore::open(&bank).unwrap();
    let ik = common::op_index("Ascend910B2", "MatMul");
    let mut problems = store.check_index().unwrap();
    problems.sort_by_key(|p| format!("{p:?}"));
    let mut expected = vec![
        IndexProblem::MissingIndexEntry(unindexed, ik.clone()),
        IndexProblem::StaleIndexEntry(dangling, ik.clone()),
        IndexProblem::RecordNotIndexed(no_reverse),
        // The entry of a record without a reverse entry cannot be told from a stale one.
        IndexProblem::StaleIndexEntry(no_reverse, ik.clone()),
    ];
    expected.sort_by_key(|p| format!("{p:?}"));
    assert_eq!(problems, expected);

    let report = verify_store(&store);
    assert!(report.damaged.is_empty());
    assert!(!report.is_clean());
    assert!(report.index.contains(&IndexMismatch::Unindexed(unindexed)));
    assert!(report
        .index
        .contains(&IndexMismatch::Dangling(dangling, ik.clone())));
    for m in &report.index {
        assert!(!m.to_string().is_empty());
    }
}

/// A file that is not a bank is refused with an error naming it, not a panic.
#[test]
fn a_file_that_is_not_a_bank_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("not-a-bank.redb");
    std::fs::write(&path, vec![0x5a; 8192]).unwrap();
    for result in [RedbStore::open(&path), RedbStore::open_read_only(&path)] {
        let err = result.unwrap_err();
        assert!(
            err.to_string().contains(&path.display().to_string()),
            "{err}"
        );
    }
    let missing = dir.path().join("missing.redb");
    let err = RedbStore::open_read_only(&missing).unwrap_err();
    assert!(err.to_string().contains("missing.redb"), "{err}");
}
