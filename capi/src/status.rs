//! Status codes, the thread-local last-error message, and the guard every entry point runs in.
//! A library error's status is its failure kind's row of the library's error table
//! (`tunebank::failure::TABLE`, which also gives the command lines' exit code and the Python
//! package's exception for the kind): [`TunebankStatus::of_kind`]. The statuses of outcomes
//! that are not failures of the library (a miss, a small buffer, a bad handle, a panic) are this
//! crate's own.

use std::cell::RefCell;
use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use tunebank::bank::BankError;
use tunebank::failure::FailureKind;

/// What a call did. Every entry point returns one of these; a status other than
/// `TUNEBANK_STATUS_OK` leaves a message for `tunebank_last_error` on the calling thread.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TunebankStatus {
    /// Success; for a look-up, a hit.
    Ok = 0,
    /// No layer holds a record for the key.
    Miss = 1,
    /// A layer holds a record for the key, but it is not valid under this build (its key schema
    /// version or kind differs), and no lower layer answered.
    RejectedHit = 2,
    /// The request is at fault (failure kind `Input`): a NULL pointer where one is required,
    /// invalid UTF-8, malformed JSON, an unknown option value, a profile index out of range, a
    /// write to a read-only handle, a `TUNE_BANK_PATH` that does not exist or is not a
    /// directory, a bank file that does not exist, is not a bank or is of a backend this build
    /// lacks, a bank or record of a newer format. Nothing was changed.
    BadInput = 3,
    /// The bank is damaged (failure kind `Damaged`): a stored record fails its checksum or does
    /// not decode, the bank file's structure is corrupt, or a bank left by a crashed writer
    /// needs a recovery a read-only open may not run; no part of it was used.
    DamagedRecord = 4,
    /// The operating system failed a read, write, sync or directory creation (failure kind
    /// `Io`: permission denied, a `TUNE_BANK_PATH` without rwx permission, disk full …), or a
    /// `postgres://` bank's server cannot be reached or did not answer in time (failure kind
    /// `Unreachable`); retrying later may work for the latter.
    IoError = 5,
    /// The bank is held by another process (failure kind `Busy`: a sled bank, served to one
    /// process at a time, or a redb file another program opened exclusively, tunebank's own
    /// redb opens share; a `postgres://` bank's transaction that kept conflicting with others);
    /// retrying later may work.
    Busy = 6,
    /// The caller's buffer is too small; the required size was stored in the length out-param
    /// and the buffer was not written.
    BufferTooSmall = 7,
    /// The handle was never opened, or was closed.
    InvalidHandle = 8,
    /// A bug in tunebank (a Rust panic, caught at the boundary). The handle stays usable.
    Internal = 9,
}

impl TunebankStatus {
    /// The status's stable name, e.g. `"TUNEBANK_STATUS_MISS"`.
    pub fn name(self) -> &'static CStr {
        match self {
            TunebankStatus::Ok => c"TUNEBANK_STATUS_OK",
            TunebankStatus::Miss => c"TUNEBANK_STATUS_MISS",
            TunebankStatus::RejectedHit => c"TUNEBANK_STATUS_REJECTED_HIT",
            TunebankStatus::BadInput => c"TUNEBANK_STATUS_BAD_INPUT",
            TunebankStatus::DamagedRecord => c"TUNEBANK_STATUS_DAMAGED_RECORD",
            TunebankStatus::IoError => c"TUNEBANK_STATUS_IO_ERROR",
            TunebankStatus::Busy => c"TUNEBANK_STATUS_BUSY",
            TunebankStatus::BufferTooSmall => c"TUNEBANK_STATUS_BUFFER_TOO_SMALL",
            TunebankStatus::InvalidHandle => c"TUNEBANK_STATUS_INVALID_HANDLE",
            TunebankStatus::Internal => c"TUNEBANK_STATUS_INTERNAL",
        }
    }

    /// The status with this numeric value, if any.
    pub fn from_i32(value: i32) -> Option<TunebankStatus> {
        use TunebankStatus::*;
        [
            Ok,
            Miss,
            RejectedHit,
            BadInput,
            DamagedRecord,
            IoError,
            Busy,
            BufferTooSmall,
            InvalidHandle,
            Internal,
        ]
        .into_iter()
        .find(|s| *s as i32 == value)
    }

    /// The status of a failure of this kind: its row of the library's error table
    /// (`tunebank::failure::TABLE`, `c_status`).
    pub fn of_kind(kind: FailureKind) -> TunebankStatus {
        let value = kind.answer().c_status;
        // The table's C statuses are values of this enum: `status_of_every_kind_is_the_tables`
        // holds the two equal, value and name.
        TunebankStatus::from_i32(value).expect("the error table names a status of the C ABI")
    }
}

/// A call that did not succeed: its status and a message for `tunebank_last_error`.
#[derive(Debug)]
pub(crate) struct Fail {
    pub status: TunebankStatus,
    pub message: String,
}

impl Fail {
    pub fn new(status: TunebankStatus, message: impl Into<String>) -> Fail {
        Fail {
            status,
            message: message.into(),
        }
    }

    pub fn bad_input(message: impl Into<String>) -> Fail {
        Fail::new(TunebankStatus::BadInput, message)
    }
}

/// The status of a bank error: its failure kind's ([`TunebankStatus::of_kind`]).
pub(crate) fn bank_status(e: &BankError) -> TunebankStatus {
    TunebankStatus::of_kind(e.kind())
}

impl From<BankError> for Fail {
    /// By the error's failure kind; the message is the error's.
    fn from(e: BankError) -> Fail {
        Fail::new(bank_status(&e), e.to_string())
    }
}

impl From<tunebank::job::JobError> for Fail {
    /// By the error's failure kind; the message is the whole source chain.
    fn from(e: tunebank::job::JobError) -> Fail {
        Fail::new(
            TunebankStatus::of_kind(e.kind()),
            tunebank::failure::error_chain(&e),
        )
    }
}

thread_local! {
    /// The message's bytes followed by one NUL; reused, so setting a message rarely allocates.
    static LAST_ERROR: RefCell<Vec<u8>> = RefCell::new(vec![0]);
}

fn set_last_error(message: &str) {
    // `try_with` fails only while the thread is being torn down; the message is then moot.
    let _ = LAST_ERROR.try_with(|slot| {
        let mut slot = slot.borrow_mut();
        slot.clear();
        // A message with an interior NUL is cut there; C could not read past it anyway.
        let bytes = message.as_bytes();
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        slot.extend_from_slice(&bytes[..end]);
        slot.push(0);
    });
}

/// The calling thread's last message; valid until the thread's next status-returning call.
pub(crate) fn last_error_ptr() -> *const c_char {
    LAST_ERROR
        .try_with(|slot| slot.borrow().as_ptr().cast::<c_char>())
        .unwrap_or(c"".as_ptr())
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_owned()
    }
}

/// Runs one entry point: a panic inside `body` is caught and becomes
/// `TunebankStatus::Internal`, so no unwind ever crosses the C boundary; the outcome's message
/// (or the empty string on success) becomes the thread's last error.
pub(crate) fn guard(body: impl FnOnce() -> Result<(), Fail>) -> TunebankStatus {
    let outcome = catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| {
        Err(Fail::new(
            TunebankStatus::Internal,
            format!(
                "internal error in tunebank (please report): {}",
                panic_message(payload.as_ref())
            ),
        ))
    });
    match outcome {
        Ok(()) => {
            set_last_error("");
            TunebankStatus::Ok
        }
        Err(fail) => {
            set_last_error(&fail.message);
            fail.status
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Error, ErrorKind};
    use std::path::PathBuf;
    use tunebank::bank::paths::PathError;
    use tunebank::bank::store::StoreError;
    use tunebank::bank::{Backend, Damage, RecordError};
    use tunebank::job::JobError;
    use tunebank::pg::PgError;

    /// A bank error of each failure kind, in the order of `FailureKind::ALL`.
    fn bank_error_of_each_kind() -> [(FailureKind, BankError); 5] {
        [
            (
                FailureKind::Input,
                BankError::NotFound {
                    path: PathBuf::from("b.redb"),
                },
            ),
            (
                FailureKind::Io,
                BankError::CreateDir {
                    path: PathBuf::from("/b"),
                    source: Error::from(ErrorKind::PermissionDenied),
                },
            ),
            (
                FailureKind::Busy,
                BankError::Store(StoreError::Busy {
                    path: PathBuf::from("b.redb"),
                    reason: "held",
                }),
            ),
            (
                FailureKind::Damaged,
                BankError::Record(RecordError::Damaged {
                    key: tunebank::key::BankKey([5; 32]),
                    reason: Damage::ChecksumMismatch,
                }),
            ),
            (
                FailureKind::Unreachable,
                BankError::Store(StoreError::Postgres(PgError::Unreachable {
                    url: "postgres://db.example/tunebank".into(),
                    detail: "connection refused".into(),
                })),
            ),
        ]
    }

    /// Every failure kind's status is the error table's, value and name, through both
    /// conversions the entry points use (a bank error, a job error).
    #[test]
    fn status_of_every_kind_is_the_tables() {
        let cases = bank_error_of_each_kind();
        assert_eq!(cases.each_ref().map(|c| c.0), FailureKind::ALL);
        for (kind, e) in cases {
            let answer = tunebank::failure::TABLE
                .iter()
                .find(|a| a.kind == kind)
                .expect("every kind has a row");
            let status = TunebankStatus::of_kind(kind);
            assert_eq!(status as i32, answer.c_status, "{kind:?}");
            assert_eq!(status.name().to_str(), Ok(answer.c_status_name), "{kind:?}");
            assert_eq!(e.kind(), kind, "{e}");
            let job = JobError::Bank(e);
            assert_eq!(job.kind(), kind, "{job}");
            assert_eq!(Fail::from(job).status, status, "{kind:?}");
        }
        for (kind, e) in bank_error_of_each_kind() {
            let message = e.to_string();
            let fail = Fail::from(e);
            assert_eq!(fail.status, TunebankStatus::of_kind(kind), "{message}");
            assert_eq!(fail.message, message);
        }
    }

    /// A missing or unavailable bank and a bad `TUNE_BANK_PATH` are bad input, as the library,
    /// the command lines' exit code and Python call them; a `TUNE_BANK_PATH` without permission
    /// stays an I/O failure.
    #[test]
    fn missing_banks_and_bad_bank_paths_are_bad_input() {
        let path = || PathBuf::from("/nonexistent/bank");
        let bad_input = [
            BankError::NotFound { path: path() },
            BankError::Unavailable {
                path: path(),
                backend: Backend::Sled,
            },
            BankError::Path(PathError::TuneBankPathMissing { path: path() }),
            BankError::Path(PathError::TuneBankPathNotDir { path: path() }),
            BankError::Path(PathError::NoLocation),
            BankError::Path(PathError::BadSoc { soc: "../x".into() }),
            BankError::Store(StoreError::Io {
                path: path(),
                source: Error::from(ErrorKind::NotFound),
            }),
        ];
        for e in bad_input {
            assert_eq!(bank_status(&e), TunebankStatus::BadInput, "{e}");
        }
        let e = BankError::Path(PathError::TuneBankPathPermission { path: path() });
        assert_eq!(bank_status(&e), TunebankStatus::IoError, "{e}");
        let e = BankError::Store(StoreError::NeedsRecovery { path: path() });
        assert_eq!(bank_status(&e), TunebankStatus::DamagedRecord, "{e}");
    }

    #[test]
    fn a_panic_becomes_internal_with_its_message() {
        let status = guard(|| panic!("boom {}", 7));
        assert_eq!(status, TunebankStatus::Internal);
        // SAFETY: the last-error pointer is a NUL-terminated string owned by this thread, valid
        // until its next status-returning call.
        let msg = unsafe { CStr::from_ptr(last_error_ptr()) }
            .to_str()
            .unwrap();
        assert!(msg.contains("boom 7"), "{msg}");
        assert_eq!(guard(|| Ok(())), TunebankStatus::Ok);
        // SAFETY: as above.
        assert_eq!(unsafe { CStr::from_ptr(last_error_ptr()) }.to_bytes(), b"");
    }

    #[test]
    fn status_values_round_trip() {
        for v in 0..10 {
            let s = TunebankStatus::from_i32(v).unwrap();
            assert_eq!(s as i32, v);
            assert!(s.name().to_str().unwrap().starts_with("TUNEBANK_STATUS_"));
        }
        assert_eq!(TunebankStatus::from_i32(10), None);
        assert_eq!(TunebankStatus::from_i32(-1), None);
    }
}
