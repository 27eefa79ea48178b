//! The default backend: one redb file per bank, shared by any number of processes.
//!
//! The file is opened in redb's `ConcurrencyMode::MultiWriter`: every process may read and write,
//! write transactions are serialised across processes by a file lock, and every commit is made
//! durable with a two-phase commit before it becomes visible. Tables and their types are listed in
//! ARCHITECTURE.md ("Bank storage format").

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use ::redb::{
    ConcurrencyMode, Database, Durability, ReadOnlyDatabase, ReadTransaction, ReadableDatabase,
    ReadableTable, ReadableTableMetadata, TableDefinition, TableError,
};

use super::{
    BackendCheck, IndexKey, IndexPrefix, IndexProblem, Store, StoreEntry, StoreError,
    StructureCheck,
};
use crate::record::{kind_byte, kind_from_byte};
use tunebank_key::BankKey;

/// Record table: key bytes → encoded record (`bank::record`).
pub(crate) const RECORDS: TableDefinition<&[u8; 32], &[u8]> = TableDefinition::new("records");

/// Secondary index: (SoC, kind byte, op type, key) → nothing.
pub const INDEX: TableDefinition<(&str, u8, &str, &[u8; 32]), ()> = TableDefinition::new("index");

/// Reverse of [`INDEX`]: key → its current (SoC, kind byte, op type), so that replacing a record
/// can remove its old index entry.
pub const INDEX_OF: TableDefinition<&[u8; 32], (&str, u8, &str)> = TableDefinition::new("index_of");

/// Bank metadata: name → value. Holds [`LAYOUT_KEY`].
pub const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// Name of the metadata entry holding the table layout version.
pub const LAYOUT_KEY: &str = "layout_version";

/// Version of the table layout above; a bank with a higher one is refused.
pub const LAYOUT_VERSION: u64 = 1;

/// Default page-cache budget: small, so that a converter linking the library stays lean.
pub const DEFAULT_CACHE_BYTES: usize = 8 << 20;

/// A bank stored in one redb file, shared between processes.
///
/// Opening does a constant amount of work (no scan), so a first look-up is fast on any bank size;
/// [`Store::len`] reads a count redb keeps with the table.
pub struct RedbStore {
    path: PathBuf,
    db: Handle,
}

enum Handle {
    /// A read-write handle. An I/O error during a write leaves redb's handle unusable (it no
    /// longer trusts its own state), so the store closes it and opens the file again at once
    /// ([`RedbStore::reopen_after_io_error`]), which runs redb's recovery as a new process would.
    /// `None` when that open failed (the disk still full, say): every later call is an I/O error
    /// saying to reopen the bank.
    ReadWrite {
        db: RwLock<Option<Database>>,
        cache_bytes: usize,
    },
    ReadOnly(ReadOnlyDatabase),
}

impl Handle {
    fn read_write(db: Database, cache_bytes: usize) -> Handle {
        Handle::ReadWrite {
            db: RwLock::new(Some(db)),
            cache_bytes,
        }
    }
}

fn backend(path: &Path, e: impl Into<::redb::Error>) -> StoreError {
    let e: ::redb::Error = e.into();
    match e {
        ::redb::Error::Io(source) => StoreError::Io {
            path: path.to_owned(),
            source,
        },
        ::redb::Error::Corrupted(detail) => StoreError::Corrupted {
            path: path.to_owned(),
            detail,
        },
        ::redb::Error::DatabaseAlreadyOpen => StoreError::Busy {
            path: path.to_owned(),
            reason: "that process holds the file exclusively (it opened it without \
                     multi-process sharing, e.g. a redb tool); retry once it has closed the bank",
        },
        ::redb::Error::LockProtocolMismatch => StoreError::Busy {
            path: path.to_owned(),
            reason: "that process runs a storage engine with another multi-process locking \
                     protocol (another tunebank version); retry once it has closed the bank",
        },
        ::redb::Error::PreviousIo => StoreError::Io {
            path: path.to_owned(),
            source: std::io::Error::other(
                "an earlier I/O error left this handle unusable; reopen the bank",
            ),
        },
        other => StoreError::Backend {
            path: path.to_owned(),
            detail: other.to_string(),
        },
    }
}

/// The handle in `lock`, whatever a panic elsewhere left in the lock (the handle is either
/// whole or taken).
fn read_lock(lock: &RwLock<Option<Database>>) -> std::sync::RwLockReadGuard<'_, Option<Database>> {
    lock.read().unwrap_or_else(|p| p.into_inner())
}

fn builder(cache_bytes: usize) -> ::redb::Builder {
    let mut b = Database::builder();
    b.set_cache_size(cache_bytes);
    b.set_concurrency_mode(ConcurrencyMode::MultiWriter);
    b
}

impl RedbStore {
    /// Opens the bank at `path` for reading and writing, creating an empty bank if the file does
    /// not exist. Other processes may have the same bank open, read-write or read-only.
    ///
    /// After a crash, the first open repairs redb's allocator state (proportional to the file
    /// size); a clean open does constant work.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with_cache(path, DEFAULT_CACHE_BYTES)
    }

    /// [`Self::open`] with a page-cache budget of `cache_bytes`.
    pub(crate) fn open_with_cache(
        path: impl AsRef<Path>,
        cache_bytes: usize,
    ) -> Result<Self, StoreError> {
        let path = path.as_ref().to_owned();
        let db = builder(cache_bytes)
            .create(&path)
            .map_err(|e| backend(&path, e))?;
        let store = RedbStore {
            path,
            db: Handle::read_write(db, cache_bytes),
        };
        store.check_layout()?;
        Ok(store)
    }

    /// [`Self::open`] over `backend` instead of the file at `path` (which then names the bank in
    /// messages, and is what the store opens again after an I/O error), so that a test can
    /// observe or fail the storage's writes and syncs under the very commit path a bank uses.
    #[cfg(test)]
    pub(crate) fn create_with_backend(
        path: impl AsRef<Path>,
        storage: impl ::redb::StorageBackend,
    ) -> Result<Self, StoreError> {
        let path = path.as_ref().to_owned();
        let db = builder(DEFAULT_CACHE_BYTES)
            .create_with_backend(storage)
            .map_err(|e| backend(&path, e))?;
        let store = RedbStore {
            path,
            db: Handle::read_write(db, DEFAULT_CACHE_BYTES),
        };
        store.check_layout()?;
        Ok(store)
    }

    /// Opens the existing bank at `path` for reading only. Writes through the handle fail with
    /// [`StoreError::ReadOnly`]; the handle follows commits made by other processes.
    ///
    /// Never writes to the file. If the bank's last writer crashed and no writer has opened it
    /// since, redb must recover it before anyone can read it; this open then fails with
    /// [`StoreError::NeedsRecovery`] and leaves the file untouched. A caller that may write the
    /// bank and wants the recovery says so with [`Self::open_read_only_recovering`].
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_owned();
        let db = match builder(DEFAULT_CACHE_BYTES).open_read_only(&path) {
            Err(::redb::DatabaseError::RepairAborted) => {
                return Err(StoreError::NeedsRecovery { path })
            }
            other => other.map_err(|e| backend(&path, e))?,
        };
        Self::read_only_handle(path, db)
    }

    /// [`Self::open_read_only`] for a caller that may write the bank: when the last writer
    /// crashed, a brief read-write open runs redb's recovery first (it rewrites allocator state,
    /// never records), then the bank is opened read-only. Fails with
    /// [`StoreError::NeedsRecovery`] when the file cannot be opened for writing.
    pub fn open_read_only_recovering(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_owned();
        match Self::open_read_only(&path) {
            Err(StoreError::NeedsRecovery { .. }) => {
                match builder(DEFAULT_CACHE_BYTES).open(&path) {
                    Ok(writer) => drop(writer),
                    Err(_) => return Err(StoreError::NeedsRecovery { path }),
                }
                Self::open_read_only(path)
            }
            other => other,
        }
    }

    fn read_only_handle(path: PathBuf, db: ReadOnlyDatabase) -> Result<Self, StoreError> {
        let store = RedbStore {
            path,
            db: Handle::ReadOnly(db),
        };
        store.check_layout()?;
        Ok(store)
    }

    /// Whether writes through this handle are refused.
    pub(crate) fn is_read_only(&self) -> bool {
        matches!(self.db, Handle::ReadOnly(_))
    }

    fn err(&self, e: impl Into<::redb::Error>) -> StoreError {
        backend(&self.path, e)
    }

    fn begin_read(&self) -> Result<ReadTransaction, StoreError> {
        match &self.db {
            Handle::ReadWrite { db, .. } => match read_lock(db).as_ref() {
                Some(db) => db.begin_read(),
                None => return Err(self.unusable()),
            },
            Handle::ReadOnly(db) => db.begin_read(),
        }
        .map_err(|e| self.err(e))
    }

    /// The error of a handle whose reopen after an I/O error failed.
    fn unusable(&self) -> StoreError {
        self.err(::redb::Error::PreviousIo)
    }

    /// After an I/O error in a write: closes redb's handle (it trusts nothing after one, and its
    /// close leaves the file marked for recovery) and opens the file again, which recovers it
    /// as the next process would, so that this handle serves on (a long-lived tuner goes on once
    /// space is freed). The file stays marked for recovery, which read-only openers refuse,
    /// until a handle closes cleanly, and a clean close records the allocator state, which needs
    /// free space. When the open fails, the handle stays closed ([`Handle::ReadWrite`]).
    fn reopen_after_io_error(&self) {
        let Handle::ReadWrite { db, cache_bytes } = &self.db else {
            return;
        };
        let mut slot = db.write().unwrap_or_else(|p| p.into_inner());
        drop(slot.take());
        *slot = builder(*cache_bytes).open(&self.path).ok();
    }

    /// Refuses a bank written with a newer table layout.
    fn check_layout(&self) -> Result<(), StoreError> {
        let txn = self.begin_read()?;
        let meta = match txn.open_table(META) {
            Ok(t) => t,
            Err(TableError::TableDoesNotExist(_)) => return Ok(()),
            Err(e) => return Err(self.err(e)),
        };
        match meta.get(LAYOUT_KEY).map_err(|e| self.err(e))? {
            Some(v) if v.value() > LAYOUT_VERSION => Err(StoreError::Backend {
                path: self.path.clone(),
                detail: format!(
                    "bank table layout version {} is newer than the supported {LAYOUT_VERSION}; \
                     upgrade tunebank to open it",
                    v.value()
                ),
            }),
            _ => Ok(()),
        }
    }

    /// Checks redb's own structures: the checksum of every page of every committed tree.
    ///
    /// On a read-write handle this runs redb's `check_integrity` on a second handle of the same
    /// file. It holds the bank's writer lock meanwhile, so writers in other processes wait. When
    /// the check fails, redb repairs what it can, which may roll the bank back to its previous
    /// commit if the latest commit's pages are damaged ([`StructureCheck::Repaired`]); damage it
    /// cannot repair is reported as [`StructureCheck::Damaged`] and changes nothing. On a
    /// read-only handle it can only traverse every table ([`StructureCheck::Traversed`]).
    pub(crate) fn verify_structure(&self) -> Result<StructureCheck, StoreError> {
        match &self.db {
            Handle::ReadWrite { .. } => {
                let mut db = builder(DEFAULT_CACHE_BYTES)
                    .open(&self.path)
                    .map_err(|e| self.err(e))?;
                match db.check_integrity() {
                    Ok(true) => Ok(StructureCheck::Clean),
                    Ok(false) => Ok(StructureCheck::Repaired),
                    Err(e) => match self.err(e) {
                        StoreError::Corrupted { detail, .. } => Ok(StructureCheck::Damaged(detail)),
                        other => Err(other),
                    },
                }
            }
            Handle::ReadOnly(_) => {
                let txn = self.begin_read()?;
                if let Some(t) = self.open_read(&txn, RECORDS)? {
                    for e in t.iter().map_err(|e| self.err(e))? {
                        e.map_err(|e| self.err(e))?;
                    }
                }
                if let Some(t) = self.open_read(&txn, INDEX)? {
                    for e in t.iter().map_err(|e| self.err(e))? {
                        e.map_err(|e| self.err(e))?;
                    }
                }
                if let Some(t) = self.open_read(&txn, INDEX_OF)? {
                    for e in t.iter().map_err(|e| self.err(e))? {
                        e.map_err(|e| self.err(e))?;
                    }
                }
                Ok(StructureCheck::Traversed)
            }
        }
    }

    /// Checks that the record table, the index and the reverse index agree, within one snapshot:
    /// every record has exactly one index entry, and no index entry outlives its record.
    pub fn check_index(&self) -> Result<Vec<IndexProblem>, StoreError> {
        let txn = self.begin_read()?;
        let mut problems = Vec::new();
        let records = self.open_read(&txn, RECORDS)?;
        let index = self.open_read(&txn, INDEX)?;
        let index_of = self.open_read(&txn, INDEX_OF)?;
        let has_record = |k: &[u8; 32]| -> Result<bool, StoreError> {
            match &records {
                Some(t) => Ok(t.get(k).map_err(|e| self.err(e))?.is_some()),
                None => Ok(false),
            }
        };
        let reverse = |k: &[u8; 32]| -> Result<Option<(String, u8, String)>, StoreError> {
            match &index_of {
                Some(t) => Ok(t.get(k).map_err(|e| self.err(e))?.map(|g| {
                    let (s, b, o) = g.value();
                    (s.to_owned(), b, o.to_owned())
                })),
                None => Ok(None),
            }
        };
        let to_index_key = |k: &BankKey, soc: &str, b: u8, op: &str| match kind_from_byte(b) {
            Some(kind) => Ok(IndexKey {
                soc: soc.to_owned(),
                kind,
                op_type: op.to_owned(),
            }),
            None => Err(IndexProblem::BadKindByte(*k, b)),
        };
        // Records → reverse index → index.
        if let Some(t) = &records {
            for e in t.iter().map_err(|e| self.err(e))? {
                let (k, _) = e.map_err(|e| self.err(e))?;
                let raw = *k.value();
                let key = BankKey(raw);
                match reverse(&raw)? {
                    None => problems.push(IndexProblem::RecordNotIndexed(key)),
                    Some((soc, b, op)) => {
                        let present = match &index {
                            Some(ix) => ix
                                .get((soc.as_str(), b, op.as_str(), &raw))
                                .map_err(|e| self.err(e))?
                                .is_some(),
                            None => false,
                        };
                        if !present {
                            match to_index_key(&key, &soc, b, &op) {
                                Ok(ik) => problems.push(IndexProblem::MissingIndexEntry(key, ik)),
                                Err(p) => problems.push(p),
                            }
                        }
                    }
                }
            }
        }
        // Index → record and reverse index.
        if let Some(ix) = &index {
            for e in ix.iter().map_err(|e| self.err(e))? {
                let (k, _) = e.map_err(|e| self.err(e))?;
                let (soc, b, op, raw) = k.value();
                let key = BankKey(*raw);
                let ik = match to_index_key(&key, soc, b, op) {
                    Ok(ik) => ik,
                    Err(p) => {
                        problems.push(p);
                        continue;
                    }
                };
                let agrees = has_record(raw)?
                    && reverse(raw)?.is_some_and(|(s, rb, o)| s == soc && rb == b && o == op);
                if !agrees {
                    problems.push(IndexProblem::StaleIndexEntry(key, ik));
                }
            }
        }
        // Reverse index → record.
        if let Some(t) = &index_of {
            for e in t.iter().map_err(|e| self.err(e))? {
                let (k, _) = e.map_err(|e| self.err(e))?;
                let raw = *k.value();
                if !has_record(&raw)? {
                    problems.push(IndexProblem::OrphanReverseEntry(BankKey(raw)));
                }
            }
        }
        Ok(problems)
    }

    /// Opens a table for reading; a table never written yet reads as absent.
    fn open_read<K: ::redb::Key + 'static, V: ::redb::Value + 'static>(
        &self,
        txn: &ReadTransaction,
        def: TableDefinition<K, V>,
    ) -> Result<Option<::redb::ReadOnlyTable<K, V>>, StoreError> {
        match txn.open_table(def) {
            Ok(t) => Ok(Some(t)),
            Err(TableError::TableDoesNotExist(_)) => Ok(None),
            Err(e) => Err(self.err(e)),
        }
    }
}

impl std::fmt::Debug for RedbStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbStore")
            .field("path", &self.path)
            .field("read_only", &self.is_read_only())
            .finish()
    }
}

impl RedbStore {
    /// One durable write transaction for `entries`; with `replace`, an entry whose key holds
    /// a value (read inside the same transaction) is written only if `replace` says so.
    /// Returns the number written.
    ///
    /// An I/O error (a full disk, a failed sync) fails the batch, which is then not in the bank,
    /// and the handle is opened again ([`Self::reopen_after_io_error`]).
    fn write(
        &self,
        entries: &[StoreEntry<'_>],
        replace: Option<&crate::store::Replace<'_>>,
    ) -> Result<usize, StoreError> {
        let db = match &self.db {
            Handle::ReadWrite { db, .. } => db,
            Handle::ReadOnly(_) => {
                return Err(StoreError::ReadOnly {
                    path: self.path.clone(),
                })
            }
        };
        if entries.is_empty() {
            return Ok(0);
        }
        let result = match read_lock(db).as_ref() {
            Some(db) => self.write_in(db, entries, replace),
            None => return Err(self.unusable()),
        };
        if let Err(StoreError::Io { .. }) = &result {
            self.reopen_after_io_error();
        }
        result
    }

    /// [`Self::write`] on `db`.
    fn write_in(
        &self,
        db: &Database,
        entries: &[StoreEntry<'_>],
        replace: Option<&crate::store::Replace<'_>>,
    ) -> Result<usize, StoreError> {
        let mut written = 0;
        let mut txn = db.begin_write().map_err(|e| self.err(e))?;
        txn.set_durability(Durability::Immediate)
            .map_err(|e| StoreError::Backend {
                path: self.path.clone(),
                detail: e.to_string(),
            })?;
        {
            let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
            if meta.get(LAYOUT_KEY).map_err(|e| self.err(e))?.is_none() {
                meta.insert(LAYOUT_KEY, LAYOUT_VERSION)
                    .map_err(|e| self.err(e))?;
            }
            let mut records = txn.open_table(RECORDS).map_err(|e| self.err(e))?;
            let mut index = txn.open_table(INDEX).map_err(|e| self.err(e))?;
            let mut index_of = txn.open_table(INDEX_OF).map_err(|e| self.err(e))?;
            for entry in entries {
                let raw = &entry.key.0;
                if let Some(replace) = replace {
                    let keep_old = match records.get(raw).map_err(|e| self.err(e))? {
                        Some(old) => !replace(&entry.key, old.value()),
                        None => false,
                    };
                    if keep_old {
                        continue;
                    }
                }
                written += 1;
                records.insert(raw, entry.value).map_err(|e| self.err(e))?;
                let kind = kind_byte(entry.index.kind);
                let new = (entry.index.soc.as_str(), kind, entry.index.op_type.as_str());
                let old = index_of
                    .insert(raw, new)
                    .map_err(|e| self.err(e))?
                    .map(|g| {
                        let (s, b, o) = g.value();
                        (s.to_owned(), b, o.to_owned())
                    });
                if let Some((s, b, o)) = old {
                    index
                        .remove((s.as_str(), b, o.as_str(), raw))
                        .map_err(|e| self.err(e))?;
                }
                index
                    .insert((new.0, new.1, new.2, raw), ())
                    .map_err(|e| self.err(e))?;
            }
        }
        txn.commit().map_err(|e| self.err(e))?;
        Ok(written)
    }
}

impl RedbStore {
    /// [`Store::scan`] within `txn`.
    fn scan_in(
        &self,
        txn: &ReadTransaction,
        f: &mut dyn FnMut(&BankKey, &[u8]) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        let Some(table) = self.open_read(txn, RECORDS)? else {
            return Ok(());
        };
        for e in table.iter().map_err(|e| self.err(e))? {
            let (k, v) = e.map_err(|e| self.err(e))?;
            if f(&BankKey(*k.value()), v.value()).is_break() {
                break;
            }
        }
        Ok(())
    }

    /// [`Store::scan_index`] within `txn`.
    fn scan_index_in(
        &self,
        txn: &ReadTransaction,
        prefix: &IndexPrefix<'_>,
        f: &mut dyn FnMut(&IndexKey, &BankKey) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        let Some(table) = self.open_read(txn, INDEX)? else {
            return Ok(());
        };
        // Later fields only count when the earlier ones are set (see `IndexPrefix`).
        let soc = prefix.soc;
        let kind = soc.and(prefix.kind.map(kind_byte));
        let op_type = kind.and(prefix.op_type);
        let zero = [0u8; 32];
        let start = (
            soc.unwrap_or(""),
            kind.unwrap_or(0),
            op_type.unwrap_or(""),
            &zero,
        );
        for e in table.range(start..).map_err(|e| self.err(e))? {
            let (k, _) = e.map_err(|e| self.err(e))?;
            let (s, b, o, raw) = k.value();
            if soc.is_some_and(|x| x != s)
                || kind.is_some_and(|x| x != b)
                || op_type.is_some_and(|x| x != o)
            {
                break;
            }
            let Some(kind) = kind_from_byte(b) else {
                return Err(StoreError::Corrupted {
                    path: self.path.clone(),
                    detail: format!("index entry of {} has kind byte {b}", BankKey(*raw)),
                });
            };
            let ik = IndexKey {
                soc: s.to_owned(),
                kind,
                op_type: o.to_owned(),
            };
            if f(&ik, &BankKey(*raw)).is_break() {
                break;
            }
        }
        Ok(())
    }
}

impl Store for RedbStore {
    fn path(&self) -> &Path {
        &self.path
    }

    fn get_with(&self, key: &BankKey, f: &mut dyn FnMut(&[u8])) -> Result<bool, StoreError> {
        let txn = self.begin_read()?;
        let Some(table) = self.open_read(&txn, RECORDS)? else {
            return Ok(false);
        };
        match table.get(&key.0).map_err(|e| self.err(e))? {
            Some(v) => {
                f(v.value());
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn get_many_with(
        &self,
        keys: &[BankKey],
        f: &mut dyn FnMut(&BankKey, &[u8]),
    ) -> Result<(), StoreError> {
        let txn = self.begin_read()?;
        let Some(table) = self.open_read(&txn, RECORDS)? else {
            return Ok(());
        };
        for key in keys {
            if let Some(v) = table.get(&key.0).map_err(|e| self.err(e))? {
                f(key, v.value());
            }
        }
        Ok(())
    }

    fn put_batch(&self, entries: &[StoreEntry<'_>]) -> Result<(), StoreError> {
        self.write(entries, None).map(|_| ())
    }

    fn put_batch_if(
        &self,
        entries: &[StoreEntry<'_>],
        replace: &crate::store::Replace<'_>,
    ) -> Result<usize, StoreError> {
        self.write(entries, Some(replace))
    }

    fn scan(
        &self,
        f: &mut dyn FnMut(&BankKey, &[u8]) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        self.scan_in(&self.begin_read()?, f)
    }

    fn scan_index(
        &self,
        prefix: &IndexPrefix<'_>,
        f: &mut dyn FnMut(&IndexKey, &BankKey) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        self.scan_index_in(&self.begin_read()?, prefix, f)
    }

    /// One read transaction serves both passes: redb's snapshot isolation.
    fn scan_snapshot(
        &self,
        index: &mut dyn FnMut(&IndexKey, &BankKey) -> ControlFlow<()>,
        records: &mut dyn FnMut(&BankKey, &[u8]) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        let txn = self.begin_read()?;
        self.scan_index_in(&txn, &IndexPrefix::default(), index)?;
        self.scan_in(&txn, records)
    }

    fn check_backend(&self) -> Result<BackendCheck, StoreError> {
        Ok(BackendCheck {
            structure: self.verify_structure()?,
            index_problems: self.check_index()?,
        })
    }

    fn len(&self) -> Result<u64, StoreError> {
        let txn = self.begin_read()?;
        match self.open_read(&txn, RECORDS)? {
            Some(t) => t.len().map_err(|e| self.err(e)),
            None => Ok(0),
        }
    }
}
