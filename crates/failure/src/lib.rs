//! What kind of failure an error is: bad input, an I/O failure, a busy bank, a damaged bank or
//! an unreachable bank server; and what each front end answers for each kind ([`TABLE`]).
//!
//! This crate is a leaf: every public error type of the library has a `kind()` beside its
//! definition, each an exhaustive match without a catch-all arm, so a new variant is classified
//! when it is added (`classify::library_kind` finds the kind of any of them behind a
//! `dyn Error`, `classify::error_kind` the kind of a whole cause chain). A caller (the
//! binaries' exit codes, the C ABI's statuses, Python's exceptions, a service's retry policy)
//! tells failures apart by type, never by message text. Wrapping errors answer for what they
//! wrap (a `#[error(transparent)]` wrapper hides the wrapped error from the `source()` chain,
//! so only its own `kind()` can see it); an `std::io::Error` is classified by [`io_kind`].
#![deny(missing_docs)]
#![warn(unnameable_types)]

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

impl FailureKind {
    /// Every kind, in the order of [`TABLE`].
    pub const ALL: [FailureKind; 5] = [
        FailureKind::Input,
        FailureKind::Io,
        FailureKind::Busy,
        FailureKind::Damaged,
        FailureKind::Unreachable,
    ];

    /// What the front ends answer for a failure of this kind: its row of [`TABLE`].
    pub const fn answer(self) -> FailureAnswer {
        // Exhaustive, so a new kind does not compile until it has its row.
        TABLE[match self {
            FailureKind::Input => 0,
            FailureKind::Io => 1,
            FailureKind::Busy => 2,
            FailureKind::Damaged => 3,
            FailureKind::Unreachable => 4,
        }]
    }
}

/// What every front end answers for one [`FailureKind`]: the command lines' exit code, the C
/// ABI's status and the Python package's exception class. A row of [`TABLE`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FailureAnswer {
    /// The kind this row answers for.
    pub kind: FailureKind,
    /// The exit code of `tunebank` and `bank-inspect` when a command fails with this kind.
    /// Distinct per kind, and never one of the codes the command lines keep for outcomes that
    /// are not failures (0 success, 1 a negative answer, 130 interrupted).
    pub exit_code: u8,
    /// The numeric value of the C ABI's `TunebankStatus` for this kind: the value C callers
    /// compare against, part of the C ABI (it never changes for a kind).
    pub c_status: i32,
    /// The C header's name of that status (`TUNEBANK_STATUS_…`, what `tunebank_status_name`
    /// returns for [`FailureAnswer::c_status`]).
    pub c_status_name: &'static str,
    /// The class the Python package raises for this kind, defined in `tunebank.errors` (and
    /// exported by `tunebank`), a subclass of `tunebank.TunebankError`.
    pub python_exception: &'static str,
}

/// The one error table: for each [`FailureKind`] (in the order of [`FailureKind::ALL`]), the
/// exit code, C status and Python exception every front end gives a failure of that kind. The
/// command lines' exit codes, the C ABI's statuses and the Python package's exceptions are read
/// from here, each after finding the failure's kind by the error's type.
///
/// The C ABI's statuses predate [`FailureKind::Unreachable`]: an unreachable bank server is
/// `TUNEBANK_STATUS_IO_ERROR` there (two kinds share that status), while the command lines and
/// Python tell it apart.
pub const TABLE: [FailureAnswer; 5] = [
    FailureAnswer {
        kind: FailureKind::Input,
        exit_code: 2,
        c_status: 3,
        c_status_name: "TUNEBANK_STATUS_BAD_INPUT",
        python_exception: "InputError",
    },
    FailureAnswer {
        kind: FailureKind::Io,
        exit_code: 3,
        c_status: 5,
        c_status_name: "TUNEBANK_STATUS_IO_ERROR",
        python_exception: "BankIOError",
    },
    FailureAnswer {
        kind: FailureKind::Busy,
        exit_code: 4,
        c_status: 6,
        c_status_name: "TUNEBANK_STATUS_BUSY",
        python_exception: "BankBusyError",
    },
    FailureAnswer {
        kind: FailureKind::Damaged,
        exit_code: 5,
        c_status: 4,
        c_status_name: "TUNEBANK_STATUS_DAMAGED_RECORD",
        python_exception: "BankDamagedError",
    },
    FailureAnswer {
        kind: FailureKind::Unreachable,
        exit_code: 6,
        c_status: 5,
        c_status_name: "TUNEBANK_STATUS_IO_ERROR",
        python_exception: "BankUnreachableError",
    },
];

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Error, ErrorKind};

    #[test]
    fn the_table_has_one_row_per_kind_in_order() {
        assert_eq!(TABLE.len(), FailureKind::ALL.len());
        for (row, kind) in TABLE.iter().zip(FailureKind::ALL) {
            assert_eq!(row.kind, kind);
            assert_eq!(kind.answer(), *row);
        }
    }

    #[test]
    fn each_kind_has_its_own_exit_code_and_python_class() {
        for (i, a) in TABLE.iter().enumerate() {
            assert!(![0, 1, 130].contains(&a.exit_code), "{a:?}");
            for b in &TABLE[i + 1..] {
                assert_ne!(a.exit_code, b.exit_code, "{a:?} {b:?}");
                assert_ne!(a.python_exception, b.python_exception, "{a:?} {b:?}");
            }
            assert!(a.python_exception.ends_with("Error"), "{a:?}");
        }
    }

    #[test]
    fn a_c_status_has_one_name_and_only_io_is_shared() {
        for a in &TABLE {
            assert!(a.c_status_name.starts_with("TUNEBANK_STATUS_"), "{a:?}");
            // 0 (OK), 1 (MISS) and 2 (REJECTED_HIT) are look-up answers, not failures.
            assert!(a.c_status > 2, "{a:?}");
            for b in &TABLE {
                assert_eq!(
                    a.c_status == b.c_status,
                    a.c_status_name == b.c_status_name,
                    "{a:?} {b:?}"
                );
                if a.kind != b.kind && a.c_status == b.c_status {
                    let shared = [a.kind, b.kind];
                    assert!(
                        shared.contains(&FailureKind::Io)
                            && shared.contains(&FailureKind::Unreachable),
                        "{a:?} {b:?}"
                    );
                }
            }
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
}
