//! The kind of any of the library's errors behind a `dyn Error`: [`library_kind`] knows every
//! public error type (each classifies itself with its own `kind()`, beside its definition), and
//! [`error_kind`] classifies a whole cause chain (the command lines' exit codes). It sits above
//! every module, since it names their error types; [`tunebank_failure`] below them holds the
//! vocabulary ([`FailureKind`], `failure::io_kind`) and the one table of what each front end
//! answers for each kind (`failure::TABLE`: exit code, C status, Python exception).

use crate::inspect::InspectError;
use crate::job::JobError;
use crate::queue::QueueError;
use crate::tune::gdat::GdatError;
use crate::tune::sgat::{ApplyError, SgatBestError, SgatError, SpaceBuildError};
use crate::tune::TuneError;
use tunebank_bank::interchange::aoe::NotMapped;
use tunebank_bank::interchange::aoe_graph::AoeGraphError;
use tunebank_bank::interchange::InterchangeError;
use tunebank_bank::migrate::MigrateError;
use tunebank_bank::paths::PathError;
use tunebank_bank::store::StoreError;
use tunebank_bank::{BankError, MaintenanceError, RecordError};
use tunebank_failure::FailureKind;
use tunebank_key::platform::PlatformError;
use tunebank_key::{KeyError, NodeError, OptionError, ParseKeyError, ResolveError, UnknownSoc};
use tunebank_measure::cpu::{InvalidTiling, OutputMismatch};
use tunebank_measure::exec::{CommandLineError, ProtocolError};
use tunebank_measure::sim::cube::TooLarge;
use tunebank_measure::sim::graph::GraphModelError;
use tunebank_measure::sim::SocModelError;
use tunebank_measure::MeasureError;
use tunebank_model::partition::PartitionError;
use tunebank_model::ModelError;
use tunebank_pg::PgError;

/// The kind of `e` when it is one of the library's public error types (each answers for what it
/// wraps), else `None`: a plain message, an `std::io::Error` ([`tunebank_failure::io_kind`]) or another crate's
/// error is the caller's to classify. The list names every public error type of the library;
/// `src/tests/error_kinds.rs` (`every_library_error_variant_has_its_kind`) holds it complete.
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
        CommandLineError,
        NotMapped,
        MigrateError,
        InvalidTiling,
        OutputMismatch,
        TooLarge,
        PartitionError,
        NodeError,
        ResolveError,
        OptionError,
        KeyError,
        ParseKeyError,
        UnknownSoc,
        PlatformError,
        SocModelError,
    );
    None
}

/// The kind of a failure whose error is `e`: the first kind other than bad input met walking
/// `e`'s cause chain (`source()`) from the outside in, else bad input. Each link is classified
/// by its type: a library error by its own kind ([`library_kind`]; it answers for what it
/// wraps, so a context message around a busy bank is still busy), an `std::io::Error` by
/// [`tunebank_failure::io_kind`]; a link that is neither (a plain message, another crate's
/// error) is bad input. For a library error this is its own `kind()` (the kind the C ABI and
/// the Python package answer by); `src/tests/error_kinds.rs` holds the two equal for every
/// variant.
pub fn error_kind(e: &(dyn std::error::Error + 'static)) -> FailureKind {
    let mut link = Some(e);
    while let Some(l) = link {
        let kind = library_kind(l).unwrap_or_else(|| match l.downcast_ref::<std::io::Error>() {
            Some(io) => tunebank_failure::io_kind(io),
            None => FailureKind::Input,
        });
        if kind != FailureKind::Input {
            return kind;
        }
        link = l.source();
    }
    FailureKind::Input
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

    /// A plain message around `inner`, as a caller's context adds one.
    #[derive(Debug)]
    struct Context(Box<dyn std::error::Error + 'static>);

    impl std::fmt::Display for Context {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("while doing something")
        }
    }

    impl std::error::Error for Context {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&*self.0)
        }
    }

    #[test]
    fn a_chain_is_its_first_kind_other_than_bad_input() {
        let busy = StoreError::Busy {
            path: PathBuf::from("b"),
            reason: "held",
        };
        assert_eq!(error_kind(&Context(Box::new(busy))), FailureKind::Busy);
        let full = Context(Box::new(Context(Box::new(Error::from(
            ErrorKind::StorageFull,
        )))));
        assert_eq!(error_kind(&full), FailureKind::Io);
        assert_eq!(
            error_kind(&Context(Box::new(Error::from(ErrorKind::NotFound)))),
            FailureKind::Input
        );
        assert_eq!(
            error_kind(&Context(Box::new(BankError::NotWritable))),
            FailureKind::Input
        );
        assert_eq!(error_kind(&store_io(ErrorKind::Other)), FailureKind::Io);
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
            key: tunebank_key::BankKey([7; 32]),
            reason: tunebank_bank::Damage::ChecksumMismatch,
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
