//! The optional sled backend (cargo feature `sled`): one directory per bank, one process at a time.
//!
//! sled locks its directory exclusively, so a second process opening the same bank gets
//! [`StoreError::Busy`]. Trees and their key encodings are listed in ARCHITECTURE.md ("Bank storage format").

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use ::sled::transaction::{ConflictableTransactionError, TransactionError};
use ::sled::Transactional;

use super::{BackendCheck, IndexKey, IndexPrefix, Store, StoreEntry, StoreError, StructureCheck};
use crate::record::{kind_byte, kind_from_byte};
use tunebank_key::BankKey;

/// Tree of records: key bytes → encoded record.
pub const RECORDS_TREE: &str = "records";
/// Tree of index entries: `index_prefix(soc, kind, op_type) ‖ key` → empty.
pub const INDEX_TREE: &str = "index";
/// Reverse index: key bytes → `index_prefix(soc, kind, op_type)` of its current entry.
pub const INDEX_OF_TREE: &str = "index_of";

/// Default page-cache budget.
pub const DEFAULT_CACHE_BYTES: u64 = 8 << 20;

/// A bank stored in a sled directory, held exclusively by this process.
pub struct SledStore {
    path: PathBuf,
    db: ::sled::Db,
    records: ::sled::Tree,
    index: ::sled::Tree,
    index_of: ::sled::Tree,
    read_only: bool,
    /// sled applies a multi-tree transaction key by key, and reads outside a transaction can see
    /// it half applied. Writers hold this exclusively and readers shared, so that a reader sees a
    /// batch whole or not at all (sled's lock already confines the bank to this process).
    batch_lock: std::sync::RwLock<()>,
}

/// Appends `s` so that byte-wise order of the encodings is the order of the strings and the
/// encoding ends unambiguously: 0x00 becomes 0x00 0xFF, and 0x00 0x01 terminates.
fn push_escaped(out: &mut Vec<u8>, s: &str) {
    for &b in s.as_bytes() {
        out.push(b);
        if b == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0, 1]);
}

/// Reads a string written by [`push_escaped`]; returns it and the rest.
fn take_escaped(bytes: &[u8]) -> Option<(String, &[u8])> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        let b = *bytes.get(i)?;
        if b == 0 {
            match *bytes.get(i + 1)? {
                0xFF => out.push(0),
                1 => return Some((String::from_utf8(out).ok()?, &bytes[i + 2..])),
                _ => return None,
            }
            i += 2;
        } else {
            out.push(b);
            i += 1;
        }
    }
}

/// The order-preserving encoding of (SoC, kind, op type) that prefixes an index key.
fn index_prefix(ik: &IndexKey) -> Vec<u8> {
    let mut out = Vec::with_capacity(ik.soc.len() + ik.op_type.len() + 8);
    push_escaped(&mut out, &ik.soc);
    out.push(kind_byte(ik.kind));
    push_escaped(&mut out, &ik.op_type);
    out
}

fn parse_index_key(bytes: &[u8]) -> Option<(IndexKey, BankKey)> {
    let (soc, rest) = take_escaped(bytes)?;
    let (&kind, rest) = rest.split_first()?;
    let kind = kind_from_byte(kind)?;
    let (op_type, rest) = take_escaped(rest)?;
    let key: [u8; 32] = rest.try_into().ok()?;
    Some((IndexKey { soc, kind, op_type }, BankKey(key)))
}

/// Period of sled's background flush (its default). Durability never relies on it: every
/// batch is flushed before it is acknowledged.
const BACKGROUND_FLUSH_MS: u64 = 500;

/// How long an open waits for the directory lock before reporting [`StoreError::Busy`].
pub const BUSY_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl SledStore {
    /// Opens (creating if needed) the bank directory at `path` for reading and writing.
    ///
    /// Fails with [`StoreError::Busy`] while another process has it open.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_inner(path.as_ref(), false)
    }

    /// Opens the existing bank directory at `path`; writes through the handle fail with
    /// [`StoreError::ReadOnly`]. sled has no shared mode: this still excludes other processes.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref();
        if !path.exists() {
            return Err(StoreError::Io {
                path: path.to_owned(),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "no bank at this path"),
            });
        }
        Self::open_inner(path, true)
    }

    /// Opens the directory, waiting up to [`BUSY_WAIT`] for its lock: sled releases the lock of
    /// a dropped handle asynchronously (its flusher thread holds the last reference), so a reopen
    /// right after a drop in the same process would otherwise see its own old handle as busy.
    fn open_inner(path: &Path, read_only: bool) -> Result<Self, StoreError> {
        Self::open_config(path, read_only, Some(BACKGROUND_FLUSH_MS))
    }

    /// [`Self::open_inner`] with sled's background flush every `flush_every_ms`, or none.
    fn open_config(
        path: &Path,
        read_only: bool,
        flush_every_ms: Option<u64>,
    ) -> Result<Self, StoreError> {
        let err = |e: ::sled::Error| map_err(path, e);
        let deadline = std::time::Instant::now() + BUSY_WAIT;
        let db = loop {
            match ::sled::Config::new()
                .path(path)
                .cache_capacity(DEFAULT_CACHE_BYTES)
                .flush_every_ms(flush_every_ms)
                .open()
                .map_err(err)
            {
                Err(StoreError::Busy { .. }) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => break other?,
            }
        };
        Ok(SledStore {
            path: path.to_owned(),
            records: db.open_tree(RECORDS_TREE).map_err(err)?,
            index: db.open_tree(INDEX_TREE).map_err(err)?,
            index_of: db.open_tree(INDEX_OF_TREE).map_err(err)?,
            db,
            read_only,
            batch_lock: std::sync::RwLock::new(()),
        })
    }

    fn err(&self, e: ::sled::Error) -> StoreError {
        map_err(&self.path, e)
    }

    /// Opens the bank with no background flush, so that only the store's own flushes make
    /// writes durable: what a test of the commit path's durability needs.
    #[cfg(test)]
    pub(crate) fn open_without_background_flush(path: &Path) -> Result<Self, StoreError> {
        Self::open_config(path, false, None)
    }

    /// Flushes whatever sled has not yet made durable and returns how many bytes that was
    /// (0: every write so far was already durable).
    #[cfg(test)]
    pub(crate) fn flush_pending(&self) -> Result<usize, StoreError> {
        self.db.flush().map_err(|e| self.err(e))
    }

    /// The record tree, for a test to write past the store (and its flush).
    #[cfg(test)]
    pub(crate) fn records_tree(&self) -> &::sled::Tree {
        &self.records
    }

    fn read_guard(&self) -> std::sync::RwLockReadGuard<'_, ()> {
        // The lock guards no data, so a writer's panic cannot leave anything inconsistent.
        self.batch_lock.read().unwrap_or_else(|e| e.into_inner())
    }
}

fn map_err(path: &Path, e: ::sled::Error) -> StoreError {
    match e {
        ::sled::Error::Io(io) if io.to_string().contains("could not acquire lock") => {
            StoreError::Busy {
                path: path.to_owned(),
                reason: "this backend serves one process at a time (use the default redb backend \
                         to share a bank)",
            }
        }
        ::sled::Error::Io(source) => StoreError::Io {
            path: path.to_owned(),
            source,
        },
        ::sled::Error::Corruption { .. } => StoreError::Corrupted {
            path: path.to_owned(),
            detail: e.to_string(),
        },
        other => StoreError::Backend {
            path: path.to_owned(),
            detail: other.to_string(),
        },
    }
}

impl std::fmt::Debug for SledStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SledStore")
            .field("path", &self.path)
            .field("read_only", &self.read_only)
            .finish()
    }
}

impl SledStore {
    /// One transaction for `entries`, then a flush; with `replace`, an entry whose key holds
    /// a value (read inside the same transaction) is written only if `replace` says so.
    /// Returns the number written.
    fn write(
        &self,
        entries: &[StoreEntry<'_>],
        replace: Option<&crate::store::Replace<'_>>,
    ) -> Result<usize, StoreError> {
        if self.read_only {
            return Err(StoreError::ReadOnly {
                path: self.path.clone(),
            });
        }
        if entries.is_empty() {
            return Ok(0);
        }
        let _batch = self.batch_lock.write().unwrap_or_else(|e| e.into_inner());
        let prefixes: Vec<Vec<u8>> = entries.iter().map(|e| index_prefix(&e.index)).collect();
        let written = (&self.records, &self.index, &self.index_of)
            .transaction(|(records, index, index_of)| {
                let mut written = 0;
                for (entry, prefix) in entries.iter().zip(&prefixes) {
                    if let Some(replace) = replace {
                        if let Some(old) = records.get(entry.key.0)? {
                            if !replace(&entry.key, &old) {
                                continue;
                            }
                        }
                    }
                    written += 1;
                    records.insert(&entry.key.0, entry.value)?;
                    if let Some(old) = index_of.insert(&entry.key.0, prefix.as_slice())? {
                        let mut old_key = old.to_vec();
                        old_key.extend_from_slice(&entry.key.0);
                        index.remove(old_key)?;
                    }
                    let mut new_key = prefix.clone();
                    new_key.extend_from_slice(&entry.key.0);
                    index.insert(new_key, &[][..])?;
                }
                Ok::<usize, ConflictableTransactionError<()>>(written)
            })
            .map_err(|e| match e {
                TransactionError::Storage(e) => self.err(e),
                TransactionError::Abort(()) => StoreError::Backend {
                    path: self.path.clone(),
                    detail: "transaction aborted".to_owned(),
                },
            })?;
        self.db.flush().map_err(|e| self.err(e))?;
        Ok(written)
    }
}

impl SledStore {
    /// [`Store::scan`]; the caller holds the batch lock.
    fn scan_unlocked(
        &self,
        f: &mut dyn FnMut(&BankKey, &[u8]) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        for e in self.records.iter() {
            let (k, v) = e.map_err(|e| self.err(e))?;
            let key: [u8; 32] = k.as_ref().try_into().map_err(|_| StoreError::Corrupted {
                path: self.path.clone(),
                detail: format!("record key of {} bytes", k.len()),
            })?;
            if f(&BankKey(key), &v).is_break() {
                break;
            }
        }
        Ok(())
    }

    /// [`Store::scan_index`]; the caller holds the batch lock.
    fn scan_index_unlocked(
        &self,
        prefix: &IndexPrefix<'_>,
        f: &mut dyn FnMut(&IndexKey, &BankKey) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        let mut p = Vec::new();
        if let Some(soc) = prefix.soc {
            push_escaped(&mut p, soc);
            if let Some(kind) = prefix.kind {
                p.push(kind_byte(kind));
                if let Some(op) = prefix.op_type {
                    push_escaped(&mut p, op);
                }
            }
        }
        for e in self.index.scan_prefix(&p) {
            let (k, _) = e.map_err(|e| self.err(e))?;
            let (ik, key) = parse_index_key(&k).ok_or_else(|| StoreError::Corrupted {
                path: self.path.clone(),
                detail: "malformed index entry".to_owned(),
            })?;
            if f(&ik, &key).is_break() {
                break;
            }
        }
        Ok(())
    }
}

impl Store for SledStore {
    fn path(&self) -> &Path {
        &self.path
    }

    fn get_with(&self, key: &BankKey, f: &mut dyn FnMut(&[u8])) -> Result<bool, StoreError> {
        let _batch = self.read_guard();
        match self.records.get(key.0).map_err(|e| self.err(e))? {
            Some(v) => {
                f(&v);
                Ok(true)
            }
            None => Ok(false),
        }
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
        let _batch = self.read_guard();
        self.scan_unlocked(f)
    }

    fn scan_index(
        &self,
        prefix: &IndexPrefix<'_>,
        f: &mut dyn FnMut(&IndexKey, &BankKey) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        let _batch = self.read_guard();
        self.scan_index_unlocked(prefix, f)
    }

    /// sled has no snapshot across trees; this backend serves one process, whose batches all
    /// take the batch lock for writing, so holding it for reading over both passes is one.
    fn scan_snapshot(
        &self,
        index: &mut dyn FnMut(&IndexKey, &BankKey) -> ControlFlow<()>,
        records: &mut dyn FnMut(&BankKey, &[u8]) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        let _batch = self.read_guard();
        self.scan_index_unlocked(&IndexPrefix::default(), index)?;
        self.scan_unlocked(records)
    }
    /// sled has no structure check; the index is checked against the records by
    /// `bank::verify` through the [`Store`] scans.
    fn check_backend(&self) -> Result<BackendCheck, StoreError> {
        Ok(BackendCheck {
            structure: StructureCheck::Unsupported,
            index_problems: Vec::new(),
        })
    }

    fn len(&self) -> Result<u64, StoreError> {
        // sled counts by traversal; this backend is for small, single-process banks.
        let _batch = self.read_guard();
        Ok(self.records.len() as u64)
    }
}
