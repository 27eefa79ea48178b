//! Which storage backend holds a bank path, and opening it: an existing directory is a sled bank
//! (cargo feature `sled`), anything else a redb file (new banks are redb files). [`Bank`] opens
//! every layer through here, so a bank of either backend serves look-ups, export, merge, verify
//! and diff alike.
//!
//! [`Bank`]: crate::bank::Bank

use std::fmt;
use std::path::Path;

use crate::bank::layered::BankError;
use crate::bank::store::{RedbStore, Store};

/// A storage backend of a bank (ARCHITECTURE.md, "Bank storage format").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// One redb file, shared by many processes (the default).
    Redb,
    /// A sled directory, one process at a time (cargo feature `sled`).
    Sled,
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Redb => "redb",
            Backend::Sled => "sled",
        })
    }
}

impl Backend {
    /// The backend of the bank at `path`: sled for an existing directory, redb otherwise (an
    /// existing file, or nothing yet).
    pub fn of(path: &Path) -> Backend {
        if path.is_dir() {
            Backend::Sled
        } else {
            Backend::Redb
        }
    }

    /// Whether this build can open banks of this backend.
    pub fn available(self) -> bool {
        match self {
            Backend::Redb => true,
            Backend::Sled => cfg!(feature = "sled"),
        }
    }
}

/// Opens the bank at `path` with the backend that holds it: read-only (the bank must exist), or
/// read-write (a missing bank is created as a redb file).
pub(crate) fn open_store(path: &Path, read_only: bool) -> Result<Box<dyn Store>, BankError> {
    let backend = Backend::of(path);
    match backend {
        Backend::Redb if read_only => Ok(Box::new(RedbStore::open_read_only(path)?)),
        Backend::Redb => Ok(Box::new(RedbStore::open(path)?)),
        #[cfg(feature = "sled")]
        Backend::Sled if read_only => Ok(Box::new(crate::bank::store::SledStore::open_read_only(
            path,
        )?)),
        #[cfg(feature = "sled")]
        Backend::Sled => Ok(Box::new(crate::bank::store::SledStore::open(path)?)),
        #[cfg(not(feature = "sled"))]
        Backend::Sled => Err(BankError::Unavailable {
            path: path.to_owned(),
            backend,
        }),
    }
}
