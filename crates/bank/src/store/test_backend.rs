//! The storage backend of the engine-level fault tests (`durability_tests.rs`,
//! `full_disk_tests.rs`): redb's own file backend with every write and sync recorded, syncs that
//! fail on demand, and a disk of limited free space, as redb's own tests inject faults.
//!
//! Free space: bytes written past the file's written extent allocate from the budget (the file's
//! growth by `set_len` is sparse, as on ext4 or tmpfs); a write the budget cannot cover fails
//! with `ENOSPC`, having written nothing.

use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ::redb::backends::FileBackend;
use ::redb::{BackendError, StorageBackend};

use super::RedbStore;

/// What the backend has seen.
#[derive(Clone, Debug, Default)]
pub(super) struct IoLog {
    /// Writes, in all.
    pub writes: u64,
    /// Successful syncs.
    pub syncs: u64,
    /// (offset, length) of each write since the last successful sync.
    pub unsynced: Vec<(u64, usize)>,
}

/// The test's handles on a [`TestFile`]: what it saw, and its faults.
#[derive(Clone)]
pub(super) struct Faults {
    pub log: Arc<Mutex<IoLog>>,
    /// Every sync fails while set.
    pub fail_syncs: Arc<AtomicBool>,
    /// Bytes the disk can still allocate; `u64::MAX` (the start) for plenty.
    pub free: Arc<AtomicU64>,
}

#[derive(Debug)]
struct TestFile {
    file: FileBackend,
    log: Arc<Mutex<IoLog>>,
    fail_syncs: Arc<AtomicBool>,
    free: Arc<AtomicU64>,
    /// The end of the furthest write so far: bytes below it are allocated.
    written_to: AtomicU64,
}

/// A redb bank at `path` over a [`TestFile`] on that file, and the test's handles on it.
pub(super) fn redb_with_faults(path: &Path) -> (RedbStore, Faults) {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .unwrap();
    let written_to = file.metadata().unwrap().len();
    let faults = Faults {
        log: Arc::new(Mutex::new(IoLog::default())),
        fail_syncs: Arc::new(AtomicBool::new(false)),
        free: Arc::new(AtomicU64::new(u64::MAX)),
    };
    let backend = TestFile {
        file: FileBackend::new(file).unwrap(),
        log: faults.log.clone(),
        fail_syncs: faults.fail_syncs.clone(),
        free: faults.free.clone(),
        written_to: AtomicU64::new(written_to),
    };
    (
        RedbStore::create_with_backend(path, backend).unwrap(),
        faults,
    )
}

impl StorageBackend for TestFile {
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
        if self.fail_syncs.load(Ordering::SeqCst) {
            return Err(std::io::Error::other("injected sync failure"));
        }
        self.file.sync_data()?;
        let mut log = self.log.lock().unwrap();
        log.unsynced.clear();
        log.syncs += 1;
        Ok(())
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
        let mut log = self.log.lock().unwrap();
        log.writes += 1;
        log.unsynced.push((offset, data.len()));
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
