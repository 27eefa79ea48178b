//! Opening one layer's store with the backend that holds its path ([`Backend::of`]), and
//! refusing a read-write redb bank on a network filesystem ([`crate::netfs`]).

use std::path::Path;

#[cfg(feature = "postgres")]
use crate::store::PgStore;
use crate::store::{RedbStore, Store};

use super::BankError;
use crate::backend::Backend;
use crate::netfs;

/// Opens the bank at `path` with the backend that holds it: read-only (the bank must exist), or
/// read-write (a missing bank is created as a redb file). A read-only open never writes unless
/// `recover` says the caller may: then a redb bank left by a crashed writer is recovered first
/// ([`RedbStore::open_read_only_recovering`]). A read-write redb bank on a network filesystem
/// is [`BankError::NetworkFilesystem`] unless `allow_network_fs`.
pub(super) fn open_store(
    path: &Path,
    read_only: bool,
    recover: bool,
    allow_network_fs: bool,
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
            if let Some(fs) = netfs::refusal(path, allow_network_fs, netfs::fs_magic) {
                return Err(BankError::NetworkFilesystem {
                    path: path.to_owned(),
                    fs,
                });
            }
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

    #[cfg(not(feature = "sled"))]
    #[test]
    fn a_sled_bank_without_the_feature_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = open_store(dir.path(), true, false, false)
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

    /// The refusal of a network filesystem names the way out: a PostgreSQL bank, or the
    /// variable that allows it.
    #[test]
    fn a_network_filesystem_refusal_names_postgres_and_the_variable() {
        let err = BankError::NetworkFilesystem {
            path: "/mnt/team/op.redb".into(),
            fs: "NFS",
        };
        let message = err.to_string();
        assert!(
            message.contains("postgres://")
                && message.contains(tunebank_key::Var::AllowNetworkFs.name()),
            "{message}"
        );
        assert_eq!(err.kind(), tunebank_failure::FailureKind::Input);
    }
}
