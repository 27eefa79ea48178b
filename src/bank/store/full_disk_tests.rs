//! A full disk under a redb bank: the storage backend is redb's own file backend with a byte
//! budget, as redb's own tests inject faults. Bytes written past the file's written extent
//! allocate from the budget (the file's growth by `set_len` is sparse, as on ext4 or tmpfs), and
//! a write the budget cannot cover fails with `ENOSPC`, having written nothing. Budgets from
//! nothing to the batch's whole size strike the commit at every point where it allocates.
//!
//! For each: the batch fails with an I/O error naming the bank and the cause, or succeeds; once
//! space is freed the bank opens, verifies, holds every earlier batch, holds the failed batch not
//! at all (or the acknowledged one whole), and takes the next write.
//! `tests/it/full_disk.rs` does the same through the command line on a real, size-limited tmpfs.

use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ::redb::backends::FileBackend;
use ::redb::{BackendError, StorageBackend};

use super::{IndexKey, RedbStore, Store, StoreEntry, StoreError};
use crate::failure::FailureKind;
use crate::key::{BankKey, RecordKind};

/// redb's file backend on a disk with `free` bytes left.
#[derive(Debug)]
struct Disk {
    file: FileBackend,
    /// Bytes the disk can still allocate; `u64::MAX` for plenty.
    free: Arc<AtomicU64>,
    /// The end of the furthest write so far: bytes below it are allocated.
    written_to: AtomicU64,
}

impl StorageBackend for Disk {
    fn len(&self) -> Result<u64, std::io::Error> {
        self.file.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), std::io::Error> {
        self.file.read(offset, out)
    }

    fn set_len(&self, len: u64) -> Result<(), std::io::Error> {
        self.file.set_len(len)
    }

    fn sync_data(&self) -> Result<(), std::io::Error> {
        self.file.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), std::io::Error> {
        let end = offset + data.len() as u64;
        let grows = end.saturating_sub(self.written_to.load(Ordering::SeqCst));
        let free = self.free.load(Ordering::SeqCst);
        if grows > free {
            return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
        }
        self.file.write(offset, data)?;
        if free != u64::MAX {
            self.free.store(free - grows, Ordering::SeqCst);
        }
        self.written_to.fetch_max(end, Ordering::SeqCst);
        Ok(())
    }

    fn close(&self) -> Result<(), std::io::Error> {
        self.file.close()
    }

    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.file.try_lock_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.file.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.file.lock_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.file.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.file.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.file.query_lock_range(start, end)
    }
}

/// A redb bank at `path` on a [`Disk`] whose free bytes the returned handle sets.
fn bank_on_disk(path: &Path) -> (RedbStore, Arc<AtomicU64>) {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .unwrap();
    let written_to = file.metadata().unwrap().len();
    let free = Arc::new(AtomicU64::new(u64::MAX));
    let disk = Disk {
        file: FileBackend::new(file).unwrap(),
        free: free.clone(),
        written_to: AtomicU64::new(written_to),
    };
    (RedbStore::create_with_backend(path, disk).unwrap(), free)
}

/// Batch `tag`: `n` encoded records of about 2 KiB each (so a batch spans many pages and grows
/// the file), under keys of their own.
fn batch(tag: u8, n: usize) -> Vec<(BankKey, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let mut key = [tag; 32];
            key[..8].copy_from_slice(&(i as u64).to_le_bytes());
            let key = BankKey(key);
            let mut record =
                crate::common::op_record("Ascend910B2", "MatMul", i as u64, u64::from(tag), 1);
            record
                .strategy
                .insert("pad".into(), "x".repeat(1800).into());
            (key, crate::bank::encode(&key, &record))
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
        let (store, free) = bank_on_disk(&path);
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
        let report = crate::bank::verify_store(&store);
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
