//! Durability of a committed batch, apart from its atomicity. The SIGKILL tests of
//! `tests/it/multiprocess.rs` keep the page cache, so they would pass if commits were never
//! synced; these tests observe the storage under every commit path of the [`Store`] trait instead:
//! - redb: the bank is opened over a storage backend that wraps redb's own file backend and
//!   records every write and sync (`test_backend.rs`), so a commit that returns with its writes not yet synced (all
//!   but redb's final clearing of a header mark, see the test), a commit that syncs nothing, or a
//!   commit acknowledged although its sync failed is caught;
//! - sled: the bank is opened with sled's background flush off, and after each commit sled is
//!   asked to flush what is not yet durable: it must find nothing (a write past the store
//!   shows that it does find what the store left unflushed).
//!
//! What no test here shows: that the disk honours the sync (power loss). The banks rely on
//! `fsync` as the engines document it.

use std::sync::atomic::Ordering;

use super::test_backend::redb_with_faults;
use super::{IndexKey, RedbStore, Store, StoreEntry, StoreError};
use tunebank_failure::FailureKind;
use tunebank_key::{BankKey, RecordKind};

/// Every way to commit a batch, by name. Each writes or replaces one record.
const COMMIT_PATHS: [&str; 4] = [
    "put_batch",
    "put_batch_if (new key)",
    "put_batch_if_absent",
    "put_batch_if (replacing a record)",
];

/// The value commit path `which` writes.
fn value_of(which: usize) -> Vec<u8> {
    vec![0xA0 + which as u8; 96]
}

/// The key commit path `which` writes (the replacing path replaces path 0's record).
fn key_of(which: usize) -> BankKey {
    BankKey([if which == 3 { 0 } else { which as u8 }; 32])
}

/// Commits through path `which` of [`COMMIT_PATHS`].
fn commit(store: &dyn Store, which: usize) -> Result<(), StoreError> {
    let value = value_of(which);
    let batch = [StoreEntry {
        key: key_of(which),
        value: &value,
        index: IndexKey {
            soc: "Ascend910B2".into(),
            kind: RecordKind::Op,
            op_type: "matmul".into(),
        },
    }];
    let written = match which {
        0 => store.put_batch(&batch).map(|()| 1)?,
        1 => store.put_batch_if(&batch, &|_, _| false)?,
        2 => store.put_batch_if_absent(&batch)?,
        _ => store.put_batch_if(&batch, &|_, _| true)?,
    };
    assert_eq!(written, 1, "{}", COMMIT_PATHS[which]);
    Ok(())
}

/// Checks that `store` holds what every commit path wrote last under each key.
fn assert_holds_every_commit(store: &dyn Store) {
    for (which, name) in COMMIT_PATHS.iter().enumerate().skip(1) {
        let mut got = None;
        store
            .get_with(&key_of(which), &mut |v| got = Some(v.to_vec()))
            .unwrap();
        assert_eq!(got, Some(value_of(which)), "{name}");
    }
}

/// Each commit path writes, syncs, and returns with nothing unsynced but, at most, one rewrite of
/// the file header (offset 0): in the multi-process modes redb marks the new primary commit slot
/// "unflushed", syncs (which makes the commit durable), then clears the mark without a sync. A
/// header whose mark survives a power loss is recovered with the commit kept (redb flushes, then
/// clears it, at the next open).
#[test]
fn redb_commits_sync_everything_they_wrote_before_returning() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bank.redb");
    let (store, faults) = redb_with_faults(&path);
    let log = faults.log;
    for (which, name) in COMMIT_PATHS.iter().enumerate() {
        let before = log.lock().unwrap().clone();
        commit(&store, which).unwrap();
        let after = log.lock().unwrap().clone();
        assert!(after.writes > before.writes, "{name}: wrote nothing");
        assert!(
            after.syncs > before.syncs,
            "{name}: returned without a sync"
        );
        assert!(
            after.unsynced.len() <= 1 && after.unsynced.iter().all(|&(at, _)| at == 0),
            "{name}: returned with writes not yet synced: {:?}",
            after.unsynced
        );
    }
    drop(store);
    // A fresh handle on the file, sharing no cache with the writer, reads every batch.
    assert_holds_every_commit(&RedbStore::open_read_only(&path).unwrap());
}

#[test]
fn redb_commit_whose_sync_fails_is_an_io_error_not_an_acknowledgement() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bank.redb");
    for (which, name) in COMMIT_PATHS.iter().enumerate().skip(1) {
        // A fresh handle each time: after an I/O error the store opens the file again, over
        // redb's own backend, whose syncs do not fail.
        let (store, faults) = redb_with_faults(&path);
        let fail_syncs = faults.fail_syncs;
        commit(&store, 0).unwrap();
        fail_syncs.store(true, Ordering::SeqCst);
        let err = commit(&store, which).unwrap_err();
        assert_eq!(err.kind(), FailureKind::Io, "{name}: {err}");
        // The batch whose sync failed is not acknowledged; the reopened handle serves the bank.
        let mut got = None;
        store
            .get_with(&key_of(0), &mut |v| got = Some(v.to_vec()))
            .unwrap();
        assert!(
            got.is_some(),
            "{name}: the reopened handle lost an earlier commit"
        );
    }
}

#[cfg(feature = "sled")]
#[test]
fn sled_commits_flush_before_returning() {
    use super::SledStore;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bank.sled");
    let store = SledStore::open_without_background_flush(&path).unwrap();
    for (which, name) in COMMIT_PATHS.iter().enumerate() {
        commit(&store, which).unwrap();
        assert_eq!(
            store.flush_pending().unwrap(),
            0,
            "{name}: returned with bytes sled had not made durable"
        );
    }
    // The check can fail: a write past the store leaves bytes for the flush to find.
    store
        .records_tree()
        .insert([0xEE; 32], &[1u8; 96][..])
        .unwrap();
    assert!(store.flush_pending().unwrap() > 0);
    assert_holds_every_commit(&store);
}
