//! The narrow storage seam: a transactional map from [`BankKey`] to encoded record bytes, plus a
//! secondary index by (SoC, kind, op type). Nothing here knows about tuning.
//!
//! Backends: [`RedbStore`] (the default; one file shared by many processes), `PgStore` (a
//! bank in a PostgreSQL database, for a team) and, behind the `sled` cargo feature, `SledStore`
//! (one process at a time). Their tables are specified in
//! ARCHITECTURE.md ("Bank storage format"); `src/tests/store_conformance.rs` holds both to the
//! [`Store`] contract.

use std::ops::ControlFlow;
use std::path::PathBuf;

use tunebank_failure::{io_kind, FailureKind};
use tunebank_key::{BankKey, RecordKind};

#[cfg(feature = "postgres")]
pub(crate) mod postgres;
pub(crate) mod redb;
#[cfg(feature = "sled")]
pub(crate) mod sled;

#[cfg(test)]
mod durability_tests;
#[cfg(test)]
mod full_disk_tests;
#[cfg(test)]
mod test_backend;

#[cfg(feature = "postgres")]
pub use self::postgres::{PgConnections, PgStore};
pub use self::redb::*;
#[cfg(feature = "sled")]
pub use self::sled::SledStore;

/// Secondary-index entry of a record: what near-miss search filters by.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IndexKey {
    /// SoC version, e.g. `Ascend910B2`.
    pub soc: String,
    /// Record kind.
    pub kind: RecordKind,
    /// Op type, case-folded (for graphs and gradients: a kind-specific label).
    pub op_type: String,
}

/// A prefix of [`IndexKey`] for index scans; `None` fields and everything after them match all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IndexPrefix<'a> {
    /// SoC to match, or all.
    pub soc: Option<&'a str>,
    /// Kind to match (only when `soc` is set), or all.
    pub kind: Option<RecordKind>,
    /// Op type to match (only when `kind` is set), or all.
    pub op_type: Option<&'a str>,
}

/// One write of a batch.
#[derive(Clone, Debug)]
pub struct StoreEntry<'a> {
    /// The record's key.
    pub key: BankKey,
    /// The encoded record (see `bank::record`).
    pub value: &'a [u8],
    /// Its index entry.
    pub index: IndexKey,
}

/// Errors of a storage backend. Each names the bank path.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Another process holds the bank in a way that excludes this open: a sled bank is held by
    /// one process at a time; a redb bank is refused while a process holds the file exclusively
    /// (opened without multi-process sharing) or speaks another version of redb's locking
    /// protocol. Retrying once the other process has let go works.
    #[error("bank {path} is in use by another process; {reason}")]
    Busy {
        /// Bank path.
        path: PathBuf,
        /// Why the other process excludes this one, and what to do.
        reason: &'static str,
    },
    /// An I/O error from the operating system.
    #[error("bank {path}: {source}")]
    Io {
        /// Bank path.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The backend's own structures are damaged.
    #[error("bank {path} is damaged: {detail}")]
    Corrupted {
        /// Bank path.
        path: PathBuf,
        /// What the backend reported.
        detail: String,
    },
    /// Any other backend error.
    #[error("bank {path}: {detail}")]
    Backend {
        /// Bank path.
        path: PathBuf,
        /// What the backend reported.
        detail: String,
    },
    /// The bank's last writer crashed, or closed after a write of its failed (a full disk), and
    /// the bank must be recovered before it can be read, but this open may not write it (a
    /// read-only open never does) or cannot (the recovery writes, so it needs free space).
    #[error("bank {path} was left by a writer that crashed or whose write failed (a full disk) and must be recovered before it can be read; a read-only open never writes, so open it once with write access to recover it (a tuning run or `tunebank bank verify` on that bank does; the recovery needs free space on the bank's disk)")]
    NeedsRecovery {
        /// Bank path.
        path: PathBuf,
    },
    /// The PostgreSQL server of a `PgStore` failed: unreachable, timed out, refused the
    /// login or a privilege, or any other server error. Names the server by its redacted URL.
    #[error(transparent)]
    Postgres(tunebank_pg::PgError),
    /// A write was attempted on a read-only handle.
    #[error("bank {path} is opened read-only")]
    ReadOnly {
        /// Bank path.
        path: PathBuf,
    },
}

/// Outcome of a backend's structure check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StructureCheck {
    /// Every page of every committed tree passed its checksum.
    Clean,
    /// The backend found damage in its own structures and repaired them; records may still be
    /// lost or damaged, so verify them.
    Repaired,
    /// Every table was traversed without error, which proves the trees are walkable but not that
    /// every page is intact (the only check a read-only handle can run).
    Traversed,
    /// The backend's structures are damaged beyond its own repair; the detail is its report.
    /// Records that still read may be verified and exported.
    Damaged(String),
    /// The backend has no structure check.
    Unsupported,
}

/// One disagreement between the records and a backend's index tables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexProblem {
    /// A record has no entry in the reverse index.
    RecordNotIndexed(BankKey),
    /// The reverse index names an entry the index does not hold.
    MissingIndexEntry(BankKey, IndexKey),
    /// An index entry whose key has no record, or whose reverse entry disagrees.
    StaleIndexEntry(BankKey, IndexKey),
    /// A reverse-index entry whose key has no record.
    OrphanReverseEntry(BankKey),
    /// An index entry has a kind byte that names no kind.
    BadKindByte(BankKey, u8),
}

impl std::fmt::Display for IndexProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IndexProblem::RecordNotIndexed(k) => write!(f, "record {k} has no index entry"),
            IndexProblem::MissingIndexEntry(k, i) => {
                write!(f, "record {k}: index entry {i} is missing")
            }
            IndexProblem::StaleIndexEntry(k, i) => {
                write!(f, "index entry {i} → {k} does not match the records")
            }
            IndexProblem::OrphanReverseEntry(k) => {
                write!(f, "reverse index names {k}, which has no record")
            }
            IndexProblem::BadKindByte(k, b) => write!(f, "index entry of {k} has kind byte {b}"),
        }
    }
}

impl std::fmt::Display for IndexKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            RecordKind::Op => "op",
            RecordKind::Graph => "graph",
            RecordKind::Gradient => "gradient",
        };
        write!(f, "({}, {kind}, {})", self.soc, self.op_type)
    }
}

/// What [`Store::check_backend`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendCheck {
    /// The structure check's outcome.
    pub structure: StructureCheck,
    /// Disagreements between the records and the backend's index tables.
    pub index_problems: Vec<IndexProblem>,
}

/// The decision of a conditional write ([`Store::put_batch_if`]): given a key and the value it
/// holds inside the write transaction, whether the new entry replaces it.
pub(crate) type Replace<'a> = dyn Fn(&BankKey, &[u8]) -> bool + 'a;

/// A transactional key-value store holding encoded records.
///
/// Contract, checked by the conformance suite in `src/tests/store_conformance.rs` for every
/// backend:
/// - `put_batch` is all-or-nothing and durable when it returns `Ok`: after a crash, either every
///   entry of the batch is readable or none is, and a concurrent reader sees one or the other.
/// - A `put` of an existing key replaces its value and its index entry.
/// - `get` returns exactly the bytes last put; backends do not verify record checksums.
/// - Scans visit keys in ascending byte order and stop when the visitor returns `Break`. Each
///   scan sees one consistent state; a visitor must not write to the store it is scanning.
/// - An empty batch writes nothing and succeeds (except on a read-only handle).
pub trait Store: Send + Sync {
    /// The path this store was opened from (for messages).
    fn path(&self) -> &std::path::Path;

    /// Calls `f` with the value stored under `key`, if any, and returns its result.
    /// The slice is only valid during the call, which lets backends avoid a copy.
    fn get_with(&self, key: &BankKey, f: &mut dyn FnMut(&[u8])) -> Result<bool, StoreError>;

    /// Calls `f` with each of `keys` that the store holds and its value, in the order given,
    /// all read from one consistent state. Meant for reading many records at once (near-miss
    /// search); the default calls [`Store::get_with`] per key, backends may share one read
    /// transaction.
    fn get_many_with(
        &self,
        keys: &[BankKey],
        f: &mut dyn FnMut(&BankKey, &[u8]),
    ) -> Result<(), StoreError> {
        for key in keys {
            self.get_with(key, &mut |v| f(key, v))?;
        }
        Ok(())
    }

    /// Writes all entries atomically and durably.
    fn put_batch(&self, entries: &[StoreEntry<'_>]) -> Result<(), StoreError>;

    /// Like [`Store::put_batch`], but an entry whose key already holds a value when the batch
    /// commits is written only if `replace(key, current value)` says so; an absent key is
    /// always written. The reads and the writes are one transaction, so the decision sees what
    /// other writers (processes) committed up to that moment, and nothing can slip in between.
    /// Within a batch a later entry sees an earlier entry's value. `replace` may be called more
    /// than once for an entry (a backend may retry a conflicting transaction) and must answer
    /// the same for the same input. Returns the number of entries written.
    fn put_batch_if(
        &self,
        entries: &[StoreEntry<'_>],
        replace: &Replace<'_>,
    ) -> Result<usize, StoreError>;

    /// [`Store::put_batch_if`] that never replaces: only keys holding nothing are written.
    fn put_batch_if_absent(&self, entries: &[StoreEntry<'_>]) -> Result<usize, StoreError> {
        self.put_batch_if(entries, &|_, _| false)
    }

    /// Visits every (key, value) in ascending key order.
    fn scan(&self, f: &mut dyn FnMut(&BankKey, &[u8]) -> ControlFlow<()>)
        -> Result<(), StoreError>;

    /// Visits the index entries matching `prefix`, in index order.
    fn scan_index(
        &self,
        prefix: &IndexPrefix<'_>,
        f: &mut dyn FnMut(&IndexKey, &BankKey) -> ControlFlow<()>,
    ) -> Result<(), StoreError>;

    /// Visits the whole index (as [`Store::scan_index`] with an empty prefix), then every record
    /// (as [`Store::scan`]), both from one snapshot of the bank: a batch committed by another
    /// handle or process during the call is seen by both passes or by neither. This is what lets
    /// `bank verify` compare the index with the records on a bank that is being written to.
    fn scan_snapshot(
        &self,
        index: &mut dyn FnMut(&IndexKey, &BankKey) -> ControlFlow<()>,
        records: &mut dyn FnMut(&BankKey, &[u8]) -> ControlFlow<()>,
    ) -> Result<(), StoreError>;

    /// Number of records.
    fn len(&self) -> Result<u64, StoreError>;

    /// Runs the backend's own consistency checks: its storage structures, and the agreement of
    /// its internal index tables with the records. May be slow (proportional to the bank size)
    /// and may briefly block writers; meant for `bank verify`, not for look-ups.
    fn check_backend(&self) -> Result<BackendCheck, StoreError>;

    /// Whether the store holds no record.
    fn is_empty(&self) -> Result<bool, StoreError> {
        Ok(self.len()? == 0)
    }
}

impl StoreError {
    /// What kind of failure this is: `Busy` is busy; `Corrupted` and `NeedsRecovery` are
    /// damage; `Io` is an I/O failure unless the bank does not exist; `Backend` (a newer table
    /// layout, an engine error with no better class) and `ReadOnly` are the request's; a
    /// PostgreSQL error answers for itself ([`tunebank_pg::PgError::kind`]).
    pub fn kind(&self) -> FailureKind {
        match self {
            StoreError::Busy { .. } => FailureKind::Busy,
            StoreError::Io { source, .. } => io_kind(source),
            StoreError::Corrupted { .. } | StoreError::NeedsRecovery { .. } => FailureKind::Damaged,
            StoreError::Backend { .. } | StoreError::ReadOnly { .. } => FailureKind::Input,
            StoreError::Postgres(e) => e.kind(),
        }
    }
}
