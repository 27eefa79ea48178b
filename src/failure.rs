//! What kind of failure an error is: bad input, an I/O failure, a busy bank, a damaged bank or
//! an unreachable bank server. Every public error type of the library has a `kind()` (here, or
//! beside the type for [`crate::pg::PgError`] and [`crate::queue::QueueError`]), each an
//! exhaustive match without a catch-all arm, so a new variant is classified when it is added;
//! [`library_kind`] finds the kind of any of them behind a `dyn Error`. A caller (the binaries'
//! exit codes, a service's retry policy) tells failures apart by type, never by message text.
//! Wrapping errors answer for what they wrap (a `#[error(transparent)]` wrapper hides the
//! wrapped error from the `source()` chain, so only its own `kind()` can see it); an
//! `std::io::Error` is classified by [`io_kind`].

use crate::bank::interchange::aoe_graph::AoeGraphError;
use crate::bank::interchange::InterchangeError;
use crate::bank::paths::PathError;
use crate::bank::store::StoreError;
use crate::bank::{BankError, MaintenanceError, RecordError};
use crate::gdat::GdatError;
use crate::inspect::InspectError;
use crate::job::JobError;
use crate::key::{KeyError, OptionError, ParseKeyError, ResolveError, UnknownSoc};
use crate::measure::exec::ProtocolError;
use crate::measure::sim::graph::GraphModelError;
use crate::measure::MeasureError;
use crate::model::partition::PartitionError;
use crate::model::ModelError;
use crate::pg::PgError;
use crate::queue::QueueError;
use crate::tune::sgat::{ApplyError, SgatBestError, SgatError, SpaceBuildError};
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

/// The kind of `e` when it is one of the library's public error types (each answers for what it
/// wraps), else `None`: a plain message, an `std::io::Error` ([`io_kind`]) or another crate's
/// error is the caller's to classify. The list names every public error type of the library;
/// `tests/it/cli_exit_codes.rs` (`every_library_error_variant_has_its_kind`) holds it complete.
pub fn library_kind(e: &(dyn std::error::Error + 'static)) -> Option<FailureKind> {
    macro_rules! by_type {
        ($($t:ty),* $(,)?) => {
            $(if let Some(x) = e.downcast_ref::<$t>() {
                return Some(x.kind());
            })*
        };
    }
    by_type!(
        BankError,
        StoreError,
        RecordError,
        PathError,
        InterchangeError,
        AoeGraphError,
        MaintenanceError,
        InspectError,
        ModelError,
        TuneError,
        PgError,
        QueueError,
        SgatError,
        SgatBestError,
        ApplyError,
        SpaceBuildError,
        GdatError,
        JobError,
        MeasureError,
        GraphModelError,
        ProtocolError,
        PartitionError,
        ResolveError,
        OptionError,
        KeyError,
        ParseKeyError,
        UnknownSoc,
    );
    None
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
            BankError::Key(e) => e.kind(),
            BankError::CreateDir { .. } => FailureKind::Io,
            BankError::Miss { .. }
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
            MaintenanceError::Resolve(e) => e.kind(),
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
            InspectError::Options(e) => e.kind(),
            InspectError::Resolve(e) => e.kind(),
            InspectError::Key(e) => e.kind(),
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
            TuneError::Resolve(e) => e.kind(),
            TuneError::Runner(e) => e.kind(),
            TuneError::UnknownStrategy { .. } | TuneError::UnsupportedSoc { .. } => {
                FailureKind::Input
            }
        }
    }
}

impl SgatError {
    /// The kind of the tuning, partition or apply error it wraps (a busy or damaged bank under
    /// SGAT is busy or damaged); a runner other than the simulator is the request's.
    pub fn kind(&self) -> FailureKind {
        match self {
            SgatError::Tune(e) => e.kind(),
            SgatError::Partition(e) => e.kind(),
            SgatError::Apply(e) => e.kind(),
            SgatError::Runner(_) => FailureKind::Input,
        }
    }
}

impl SgatBestError {
    /// The kind of the key, model or space error it wraps; an unknown strategy and a subgraph
    /// none of whose candidates can be timed are the request's.
    pub fn kind(&self) -> FailureKind {
        match self {
            SgatBestError::Key(e) => e.kind(),
            SgatBestError::Model(e) => e.kind(),
            SgatBestError::Space(e) => e.kind(),
            SgatBestError::Strategy(_) | SgatBestError::NoCandidate => FailureKind::Input,
        }
    }
}

impl ApplyError {
    /// The kind of the bank or key error it wraps; a subgraph the bank's strategy does not fit
    /// is the request's.
    pub fn kind(&self) -> FailureKind {
        match self {
            ApplyError::Bank(e) => e.kind(),
            ApplyError::Key { source, .. } => source.kind(),
            ApplyError::Subgraph { .. } => FailureKind::Input,
        }
    }
}

impl SpaceBuildError {
    /// A subgraph whose SGAT space cannot be built (too large) is the request's.
    pub fn kind(&self) -> FailureKind {
        FailureKind::Input
    }
}

impl GdatError {
    /// The kind of the measurement, tuning, key or bank error it wraps (a busy, damaged or
    /// unreachable gradient bank is that); a model without parameters, a bad cluster or
    /// segment count, an unknown strategy, a backward pass the simulator cannot time and a
    /// search that measured nothing are the request's (its model, flags or runner).
    pub fn kind(&self) -> FailureKind {
        match self {
            GdatError::Measure(e) => e.kind(),
            GdatError::Tune(e) => e.kind(),
            GdatError::Key(e) => e.kind(),
            GdatError::Bank(e) => e.kind(),
            GdatError::NoParameters
            | GdatError::Cluster(_)
            | GdatError::ClusterFile { .. }
            | GdatError::Segments(_)
            | GdatError::Simulator(_)
            | GdatError::Strategy(_)
            | GdatError::NothingMeasured => FailureKind::Input,
        }
    }
}

impl MeasureError {
    /// Runner errors are the request's: an unknown or unsupported runner, a task or space it
    /// cannot take, an external runner that fails or breaks its protocol.
    pub fn kind(&self) -> FailureKind {
        match self {
            MeasureError::Unsupported { .. }
            | MeasureError::InvalidTask(_)
            | MeasureError::Space(_)
            | MeasureError::Runner { .. }
            | MeasureError::TooLarge(_)
            | MeasureError::UnknownRunner(_) => FailureKind::Input,
        }
    }
}

impl GraphModelError {
    /// The kind of the partition or op error it wraps; a strategy or SoC the subgraph model
    /// does not take is the request's.
    pub fn kind(&self) -> FailureKind {
        match self {
            GraphModelError::Node(e) => e.kind(),
            GraphModelError::Op { source, .. } => source.kind(),
            GraphModelError::Strategy(_) | GraphModelError::Soc(_) => FailureKind::Input,
        }
    }
}

impl ProtocolError {
    /// An external runner's answer that breaks the protocol is the request's (its runner).
    pub fn kind(&self) -> FailureKind {
        match self {
            ProtocolError::NotJson(_)
            | ProtocolError::Version(_)
            | ProtocolError::WrongId { .. }
            | ProtocolError::Malformed(_)
            | ProtocolError::WrongCount { .. } => FailureKind::Input,
        }
    }
}

impl PartitionError {
    /// A subgraph that cannot be keyed or partitioned is the request's (its model).
    pub fn kind(&self) -> FailureKind {
        match self {
            PartitionError::Key { source, .. } => source.kind(),
            PartitionError::Node { .. } => FailureKind::Input,
        }
    }
}

impl ResolveError {
    /// An op that cannot be resolved into a key is the request's (its model or options).
    pub fn kind(&self) -> FailureKind {
        match self {
            ResolveError::Options(e) => e.kind(),
            ResolveError::Key { source, .. } => source.kind(),
            ResolveError::UnresolvedDim { .. }
            | ResolveError::RankMismatch { .. }
            | ResolveError::Layout { .. } => FailureKind::Input,
        }
    }
}

impl OptionError {
    /// Every option error is the request's, an option file that cannot be read included (the
    /// option names it).
    pub fn kind(&self) -> FailureKind {
        match self {
            OptionError::Unknown { .. }
            | OptionError::InvalidValue { .. }
            | OptionError::Duplicate { .. }
            | OptionError::MissingValue { .. }
            | OptionError::UnexpectedArgument { .. }
            | OptionError::Conflict { .. }
            | OptionError::FileUnreadable { .. }
            | OptionError::FileContent { .. }
            | OptionError::NotModelled { .. }
            | OptionError::MissingSoc => FailureKind::Input,
        }
    }
}

impl KeyError {
    /// A descriptor without a canonical key is the request's (its model or options).
    pub fn kind(&self) -> FailureKind {
        match self {
            KeyError::NanAttr { .. }
            | KeyError::DynamicDim { .. }
            | KeyError::DanglingEdge { .. }
            | KeyError::Cycle { .. }
            | KeyError::UnknownGraphOption { .. } => FailureKind::Input,
        }
    }
}

impl ParseKeyError {
    /// A key that is not 64 hex digits is the request's.
    pub fn kind(&self) -> FailureKind {
        FailureKind::Input
    }
}

impl UnknownSoc {
    /// A SoC version that is not known is the request's.
    pub fn kind(&self) -> FailureKind {
        FailureKind::Input
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
