//! Status codes, the thread-local last-error message, and the guard every entry point runs in.

use std::cell::RefCell;
use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use tunebank::bank::store::StoreError;
use tunebank::bank::BankError;

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
    /// An argument is unusable: a NULL pointer where one is required, invalid UTF-8, malformed
    /// JSON, an unknown option value, a profile index out of range, a write to a read-only
    /// handle. Nothing was changed.
    BadInput = 3,
    /// A stored record (or the bank file's structure) is damaged; no part of it was used.
    DamagedRecord = 4,
    /// The operating system or the storage engine failed (missing or unreadable bank path,
    /// permission denied, disk full …).
    IoError = 5,
    /// The bank is held exclusively by another process (a sled bank, served to one process at a
    /// time, or a redb file another program opened exclusively; tunebank's own redb opens share).
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

/// The status a bank error maps to.
pub(crate) fn bank_status(e: &BankError) -> TunebankStatus {
    match e {
        BankError::Path(tunebank::bank::paths::PathError::BadSoc { .. }) => {
            TunebankStatus::BadInput
        }
        BankError::Path(_)
        | BankError::CreateDir { .. }
        | BankError::NotFound { .. }
        | BankError::Unavailable { .. } => TunebankStatus::IoError,
        BankError::Store(StoreError::Busy { .. }) => TunebankStatus::Busy,
        BankError::Store(StoreError::Corrupted { .. }) | BankError::Record(_) => {
            TunebankStatus::DamagedRecord
        }
        BankError::Store(_) => TunebankStatus::IoError,
        BankError::Key(_)
        | BankError::NotWritable
        | BankError::NoCustomLayer { .. }
        | BankError::NetworkFilesystem { .. }
        | BankError::WrongKind { .. } => TunebankStatus::BadInput,
        BankError::Miss { .. } => TunebankStatus::Miss,
    }
}

impl From<BankError> for Fail {
    fn from(e: BankError) -> Fail {
        Fail::new(bank_status(&e), e.to_string())
    }
}

impl From<tunebank::job::JobError> for Fail {
    /// By the error's failure kind; the message is the whole source chain.
    fn from(e: tunebank::job::JobError) -> Fail {
        use tunebank::failure::FailureKind as K;
        let status = match e.kind() {
            K::Input => TunebankStatus::BadInput,
            K::Io | K::Unreachable => TunebankStatus::IoError,
            K::Busy => TunebankStatus::Busy,
            K::Damaged => TunebankStatus::DamagedRecord,
        };
        Fail::new(status, tunebank::failure::error_chain(&e))
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
