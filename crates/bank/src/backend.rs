//! Which storage backend holds a bank path: a `postgres://` URL is a PostgreSQL bank, an
//! existing directory is a sled bank (cargo feature `sled`), anything else a redb file (new
//! banks are redb files). The layered bank opens each layer with the backend named here, so a
//! bank of any backend serves look-ups, export, merge, verify and diff alike.

use std::fmt;
use std::path::Path;

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
}
