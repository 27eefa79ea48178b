//! A full disk under a redb bank: the storage backend is redb's own file backend with a byte
//! budget (`test_backend.rs`): a write the budget cannot cover fails with `ENOSPC`, having
//! written nothing. Budgets from nothing to the batch's whole size strike the commit at every
//! point where it allocates.
//!
//! For each: the batch fails with an I/O error naming the bank and the cause, or succeeds; once
//! space is freed the bank opens, verifies, holds every earlier batch, holds the failed batch not
//! at all (or the acknowledged one whole), and takes the next write.
//! `tests/it/full_disk.rs` does the same through the command line on a real, size-limited tmpfs.

use std::sync::atomic::Ordering;

use super::test_backend::redb_with_faults;
use super::{IndexKey, RedbStore, Store, StoreEntry, StoreError};
use tunebank_failure::FailureKind;
use tunebank_key::{BankKey, RecordKind};

/// Batch `tag`: `n` encoded records of about 2 KiB each (so a batch spans many pages and grows
/// the file), under keys of their own.
fn batch(tag: u8, n: usize) -> Vec<(BankKey, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let mut key = [tag; 32];
            key[..8].copy_from_slice(&(i as u64).to_le_bytes());
            let key = BankKey(key);
            let (_, mut record) = crate::record::tests::sample();
            record.strategy.insert("tag".into(), i.into());
            record.provenance.seed = u64::from(tag);
            record
                .strategy
                .insert("pad".into(), "x".repeat(1800).into());
            (key, crate::encode(&key, &record))
        })
        .collect()
}

fn put(store: &dyn Store, batch: &[(BankKey, Vec<u8>)]) -> Result<(), StoreError> {
    let entries: Vec<StoreEntry<'_>> = batch
        .iter()
        .map(|(key, value)| StoreEntry {
            key: *key,
            value,
            index: IndexKey {
                soc: "Ascend910B2".into(),
                kind: RecordKind::Op,
                op_type: "matmul".into(),
            },
        })
        .collect();
    store.put_batch(&entries)
}

/// How many records of `batch` `store` holds, each checked byte for byte.
fn held(store: &dyn Store, batch: &[(BankKey, Vec<u8>)]) -> usize {
    batch
        .iter()
        .filter(|(key, value)| {
            let mut got = None;
            store
                .get_with(key, &mut |v| got = Some(v.to_vec()))
                .unwrap();
            got.inspect(|g| assert_eq!(g, value, "a record of {key} changed"))
                .is_some()
        })
        .count()
}

#[test]
fn a_batch_that_fills_the_disk_fails_naming_the_bank_and_leaves_the_bank_whole() {
    let (mut failed, mut fitted) = (0, 0);
    // From no free byte to more than the batch needs, in uneven steps so that the budget runs
    // out in the data pages, the tree pages, the allocator state and the header.
    let budgets: Vec<u64> = (0..40).map(|i| i * i * 1499).collect();
    for &budget in &budgets {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bank.redb");
        let first = batch(1, 20);
        let big = batch(2, 150);
        let next = batch(3, 5);
        let (store, faults) = redb_with_faults(&path);
        let free = faults.free;
        put(&store, &first).unwrap();
        free.store(budget, Ordering::SeqCst);
        let outcome = put(&store, &big);
        // The same handle serves on: after an I/O error the store opened the file again (over
        // redb's own backend, as if space had been freed).
        assert_eq!(held(&store, &first), first.len(), "budget {budget}");
        put(&store, &next).unwrap();
        drop(store);
        let acknowledged = match &outcome {
            Ok(()) => {
                fitted += 1;
                true
            }
            Err(e) => {
                failed += 1;
                assert_eq!(e.kind(), FailureKind::Io, "budget {budget}: {e}");
                let text = e.to_string();
                assert!(
                    text.contains(&path.display().to_string()),
                    "budget {budget}: the error does not name the bank: {text}"
                );
                assert!(
                    text.contains("No space left on device"),
                    "budget {budget}: the error does not name the cause: {text}"
                );
                match e {
                    StoreError::Io { source, .. } => {
                        assert_eq!(source.raw_os_error(), Some(libc::ENOSPC), "budget {budget}")
                    }
                    other => panic!("budget {budget}: expected an I/O error, got {other:?}"),
                }
                false
            }
        };
        // Space freed: the bank opens, verifies, and holds what was acknowledged, all of it.
        let store = RedbStore::open(&path).unwrap();
        let report = crate::verify_store(&store);
        assert!(report.is_clean(), "budget {budget}: {report:?}");
        assert_eq!(held(&store, &first), first.len(), "budget {budget}");
        let expected = if acknowledged { big.len() } else { 0 };
        assert_eq!(
            held(&store, &big),
            expected,
            "budget {budget}: the batch that met the full disk (acknowledged: {acknowledged})"
        );
        assert_eq!(held(&store, &next), next.len(), "budget {budget}");
        put(&store, &big).unwrap();
        assert_eq!(held(&store, &big), big.len(), "budget {budget}");
    }
    // The budgets struck the batch and also let it through: both answers were checked.
    assert!(
        failed >= 10 && fitted >= 2,
        "{failed} failed, {fitted} fitted"
    );
}
