//! What kind of failure an error is: bad input, an I/O failure, a busy bank, a damaged bank or
//! an unreachable bank server. This module is a leaf: every public error type of the library
//! has a `kind()` beside its definition, each an exhaustive match without a catch-all arm, so a
//! new variant is classified when it is added (`classify::library_kind` finds the kind
//! of any of them behind a `dyn Error`). A caller (the binaries' exit codes, a service's retry
//! policy) tells failures apart by type, never by message text. Wrapping errors answer for what
//! they wrap (a `#[error(transparent)]` wrapper hides the wrapped error from the `source()`
//! chain, so only its own `kind()` can see it); an `std::io::Error` is classified by
//! `io_kind`.
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
