//! Which storage backend holds a bank path, and opening it: a `postgres://` URL is a PostgreSQL
//! bank, an existing directory is a sled bank (cargo feature `sled`), anything else a redb file
//! (new banks are redb files). [`Bank`] opens
//! every layer through here, so a bank of either backend serves look-ups, export, merge, verify
//! and diff alike.
//!
//! [`Bank`]: crate::Bank

use std::fmt;
use std::path::Path;

use crate::layered::BankError;
#[cfg(feature = "postgres")]
use crate::store::PgStore;
use crate::store::{RedbStore, Store};

/// A storage backend of a bank (ARCHITECTURE.md, "Bank storage format").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// One redb file, shared by many processes (the default).
    Redb,
    /// A sled directory, one process at a time (cargo feature `sled`).
    Sled,
    /// A bank in a PostgreSQL database, named by a `postgres://` URL.
    Postgres,
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Redb => "redb",
            Backend::Sled => "sled",
            Backend::Postgres => "postgres",
        })
    }
}

impl Backend {
    /// The backend of the bank at `path`: PostgreSQL for a `postgres://` URL, sled for an
    /// existing directory, redb otherwise (an existing file, or nothing yet).
    pub fn of(path: &Path) -> Backend {
        if tunebank_pg::is_url_path(path) {
            Backend::Postgres
        } else if path.is_dir() {
            Backend::Sled
        } else {
            Backend::Redb
        }
    }

    /// Whether this build can open banks of this backend.
    #[cfg(test)]
    pub(crate) fn available(self) -> bool {
        match self {
            Backend::Redb => true,
            Backend::Postgres => cfg!(feature = "postgres"),
            Backend::Sled => cfg!(feature = "sled"),
        }
    }
}

/// Opens the bank at `path` with the backend that holds it: read-only (the bank must exist), or
/// read-write (a missing bank is created as a redb file). A read-only open never writes unless
/// `recover` says the caller may: then a redb bank left by a crashed writer is recovered first
/// ([`RedbStore::open_read_only_recovering`]).
pub(crate) fn open_store(
    path: &Path,
    read_only: bool,
    recover: bool,
) -> Result<Box<dyn Store>, BankError> {
    let backend = Backend::of(path);
    match backend {
        #[cfg(feature = "postgres")]
        Backend::Postgres => {
            let url = path.to_str().unwrap_or_default();
            Ok(Box::new(if read_only {
                PgStore::open_read_only(url)?
            } else {
                PgStore::open(url)?
            }))
        }
        Backend::Redb if read_only && recover => {
            Ok(Box::new(RedbStore::open_read_only_recovering(path)?))
        }
        Backend::Redb if read_only => Ok(Box::new(RedbStore::open_read_only(path)?)),
        Backend::Redb => {
            crate::netfs::check(path, crate::netfs::allowed_by_env(), crate::netfs::fs_magic)?;
            Ok(Box::new(RedbStore::open(path)?))
        }
        #[cfg(feature = "sled")]
        Backend::Sled if read_only => Ok(Box::new(crate::store::SledStore::open_read_only(path)?)),
        #[cfg(feature = "sled")]
        Backend::Sled => Ok(Box::new(crate::store::SledStore::open(path)?)),
        #[cfg(not(feature = "postgres"))]
        Backend::Postgres => Err(BankError::Unavailable {
            path: path.to_owned(),
            backend,
        }),
        #[cfg(not(feature = "sled"))]
        Backend::Sled => Err(BankError::Unavailable {
            path: path.to_owned(),
            backend,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_is_a_sled_bank_and_anything_else_redb() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Backend::of(dir.path()), Backend::Sled);
        let file = dir.path().join("op.redb");
        assert_eq!(Backend::of(&file), Backend::Redb);
        std::fs::write(&file, b"").unwrap();
        assert_eq!(Backend::of(&file), Backend::Redb);
        assert!(Backend::Redb.available());
        assert_eq!(Backend::Sled.available(), cfg!(feature = "sled"));
    }

    #[cfg(not(feature = "sled"))]
    #[test]
    fn a_sled_bank_without_the_feature_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = open_store(dir.path(), true, false)
            .err()
            .expect("no sled backend");
        assert!(matches!(
            err,
            BankError::Unavailable {
                backend: Backend::Sled,
                ..
            }
        ));
        let message = err.to_string();
        assert!(
            message.contains("sled bank") && message.contains("`sled`"),
            "{message}"
        );
    }
}
