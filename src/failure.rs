//! What kind of failure an error is: bad input, an I/O failure, a busy bank or a damaged bank.
//! Every library error type a command line can meet has a `kind()` here, so a caller (the
//! binaries' exit codes, a service's retry policy) tells them apart by type, never by message
//! text. Wrapping errors answer for what they wrap; an `std::io::Error` is classified by
//! [`io_kind`].

use crate::bank::interchange::aoe_graph::AoeGraphError;
use crate::bank::interchange::InterchangeError;
use crate::bank::paths::PathError;
use crate::bank::store::StoreError;
use crate::bank::{BankError, MaintenanceError, RecordError};
use crate::inspect::InspectError;
use crate::model::ModelError;
use crate::tune::TuneError;

/// The kind of a failure, as far as the caller can act on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// The request is at fault: an argument, option or environment value, a file that does not
    /// parse or does not exist, a bank of a newer format. Retrying the same request fails the
    /// same way. Nothing was written.
    Input,
    /// The operating system failed a read, write, sync or directory creation (disk full,
    /// permission denied, an I/O error); the request itself may be sound.
    Io,
    /// Another process holds the bank in a way that excludes this open; retrying later may work.
    Busy,
    /// The bank is damaged: a record fails its checksum or does not decode, the storage
    /// engine's structures are corrupt, or a bank left by a crashed writer needs a recovery this
    /// open may not run.
    Damaged,
    /// The bank server (PostgreSQL) cannot be reached or did not answer in time; retrying
    /// later may work.
    Unreachable,
}

/// The message of `e` and of every error it wraps, joined by ": " (a cause whose text the message
/// already contains is not repeated): the one form every caller outside the binaries (the
/// Python package, the PostgreSQL client's errors) gives an error chain.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

/// The kind of an I/O error: a path that does not exist and data that is not what was expected
/// (e.g. a file that is not UTF-8) are the request's fault ([`FailureKind::Input`]); every
/// other error is the operating system's ([`FailureKind::Io`]).
pub fn io_kind(e: &std::io::Error) -> FailureKind {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::NotFound | K::InvalidData | K::InvalidInput => FailureKind::Input,
        _ => FailureKind::Io,
    }
}

impl StoreError {
    /// What kind of failure this is: `Busy` is busy; `Corrupted` and `NeedsRecovery` are
    /// damage; `Io` is an I/O failure unless the bank does not exist; `Backend` (a newer table
    /// layout, an engine error with no better class) and `ReadOnly` are the request's; a
    /// PostgreSQL error answers for itself ([`crate::pg::PgError::kind`]).
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

impl RecordError {
    /// A damaged record is damage; a record of a newer format is the request's (upgrade).
    pub fn kind(&self) -> FailureKind {
        match self {
            RecordError::Damaged { .. } => FailureKind::Damaged,
            RecordError::UnsupportedVersion { .. } => FailureKind::Input,
        }
    }
}

impl PathError {
    /// A `TUNE_BANK_PATH` without permission is an I/O failure; every other path error is a
    /// bad environment value or SoC name.
    pub fn kind(&self) -> FailureKind {
        match self {
            PathError::TuneBankPathPermission { .. } => FailureKind::Io,
            PathError::TuneBankPathMissing { .. }
            | PathError::TuneBankPathNotDir { .. }
            | PathError::NoLocation
            | PathError::BadSoc { .. } => FailureKind::Input,
        }
    }
}

impl BankError {
    /// The kind of the store, record or path error it wraps; a directory that cannot be created
    /// is an I/O failure; the rest (a miss under error-on-miss, a missing bank file, a bank
    /// without a writable layer …) are the request's.
    pub fn kind(&self) -> FailureKind {
        match self {
            BankError::Path(e) => e.kind(),
            BankError::Store(e) => e.kind(),
            BankError::Record(e) => e.kind(),
            BankError::CreateDir { .. } => FailureKind::Io,
            BankError::Key(_)
            | BankError::Miss { .. }
            | BankError::NotWritable
            | BankError::WrongKind { .. }
            | BankError::NotFound { .. }
            | BankError::Unavailable { .. }
            | BankError::NetworkFilesystem { .. }
            | BankError::NoCustomLayer { .. } => FailureKind::Input,
        }
    }
}

impl InterchangeError {
    /// Reading or writing a file is classified by [`io_kind`]; bank errors by what they wrap;
    /// a line, key or AOE entry that is not what the format says is the request's.
    pub fn kind(&self) -> FailureKind {
        match self {
            InterchangeError::Io { source, .. } => io_kind(source),
            InterchangeError::Store(e) => e.kind(),
            InterchangeError::Bank(e) => e.kind(),
            InterchangeError::Line { .. }
            | InterchangeError::KeyMismatch { .. }
            | InterchangeError::WrongKind { .. }
            | InterchangeError::Aoe { .. } => FailureKind::Input,
        }
    }
}

impl AoeGraphError {
    /// Reading the file is classified by [`io_kind`]; a malformed line is the request's.
    pub fn kind(&self) -> FailureKind {
        match self {
            AoeGraphError::Read { source, .. } => io_kind(source),
            AoeGraphError::File { source, .. } => source.kind(),
            AoeGraphError::Line { .. } => FailureKind::Input,
        }
    }
}

impl MaintenanceError {
    /// The kind of what it wraps; an op that cannot be resolved is the request's.
    pub fn kind(&self) -> FailureKind {
        match self {
            MaintenanceError::Read { source, .. } => io_kind(source),
            MaintenanceError::ExportFile { source, .. }
            | MaintenanceError::AoeFile { source, .. } => source.kind(),
            MaintenanceError::Interchange(e) => e.kind(),
            MaintenanceError::Bank(e) => e.kind(),
            MaintenanceError::Resolve(_) => FailureKind::Input,
        }
    }
}

impl InspectError {
    /// The kind of the bank, store or record error it wraps; options, resolution and keys are
    /// the request's.
    pub fn kind(&self) -> FailureKind {
        match self {
            InspectError::Bank(e) => e.kind(),
            InspectError::Store(e) => e.kind(),
            InspectError::Record(e) => e.kind(),
            InspectError::Options(_) | InspectError::Resolve(_) | InspectError::Key(_) => {
                FailureKind::Input
            }
        }
    }
}

impl ModelError {
    /// Reading the file is classified by [`io_kind`] (a missing model is bad input); a file that
    /// is not a usable model is the request's.
    pub fn kind(&self) -> FailureKind {
        match self {
            ModelError::Read { source, .. } => io_kind(source),
            ModelError::NotOnnx { .. }
            | ModelError::Truncated { .. }
            | ModelError::UnsupportedOpset { .. }
            | ModelError::Invalid { .. }
            | ModelError::InputShape { .. }
            | ModelError::Dynamic { .. }
            | ModelError::OutNodes { .. } => FailureKind::Input,
        }
    }
}

impl TuneError {
    /// The kind of the model or bank error it wraps; a result file that cannot be written is an
    /// I/O failure; resolution, runner and strategy errors are the request's.
    pub fn kind(&self) -> FailureKind {
        match self {
            TuneError::Model(e) => e.kind(),
            TuneError::Bank(e) => e.kind(),
            TuneError::Report { .. } => FailureKind::Io,
            TuneError::Resolve(_)
            | TuneError::Runner(_)
            | TuneError::UnknownStrategy { .. }
            | TuneError::UnsupportedSoc { .. } => FailureKind::Input,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Error, ErrorKind};
    use std::path::PathBuf;

    fn store_io(kind: ErrorKind) -> StoreError {
        StoreError::Io {
            path: PathBuf::from("b.redb"),
            source: Error::from(kind),
        }
    }

    #[test]
    fn io_errors_are_input_only_when_the_request_names_what_is_not_there() {
        assert_eq!(
            io_kind(&Error::from(ErrorKind::NotFound)),
            FailureKind::Input
        );
        assert_eq!(
            io_kind(&Error::from(ErrorKind::InvalidData)),
            FailureKind::Input
        );
        for k in [
            ErrorKind::PermissionDenied,
            ErrorKind::StorageFull,
            ErrorKind::NotADirectory,
            ErrorKind::Other,
        ] {
            assert_eq!(io_kind(&Error::from(k)), FailureKind::Io, "{k:?}");
        }
    }

    #[test]
    fn wrappers_answer_for_what_they_wrap() {
        let busy = || StoreError::Busy {
            path: PathBuf::from("b"),
            reason: "held",
        };
        assert_eq!(BankError::Store(busy()).kind(), FailureKind::Busy);
        assert_eq!(InspectError::Store(busy()).kind(), FailureKind::Busy);
        let damaged = RecordError::Damaged {
            key: crate::key::BankKey([7; 32]),
            reason: crate::bank::record::Damage::ChecksumMismatch,
        };
        assert_eq!(
            TuneError::Bank(BankError::Record(damaged.clone())).kind(),
            FailureKind::Damaged
        );
        assert_eq!(
            MaintenanceError::ExportFile {
                path: PathBuf::from("e.jsonl"),
                source: InterchangeError::Bank(BankError::Store(store_io(ErrorKind::StorageFull))),
            }
            .kind(),
            FailureKind::Io
        );
        assert_eq!(
            InterchangeError::Store(StoreError::NeedsRecovery {
                path: PathBuf::from("b")
            })
            .kind(),
            FailureKind::Damaged
        );
        assert_eq!(
            BankError::Store(store_io(ErrorKind::NotFound)).kind(),
            FailureKind::Input
        );
        assert_eq!(
            BankError::Path(PathError::TuneBankPathMissing {
                path: PathBuf::from("/x")
            })
            .kind(),
            FailureKind::Input
        );
        assert_eq!(
            BankError::CreateDir {
                path: PathBuf::from("/x"),
                source: Error::from(ErrorKind::NotADirectory),
            }
            .kind(),
            FailureKind::Io
        );
    }
}
