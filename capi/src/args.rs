//! Pointer arguments of the entry points: reading C strings and 32-byte keys, checking output
//! buffers before any work, and delivering text with the required-size protocol (the length
//! out-param gets the text's length; the buffer is written only when it holds the text and
//! its NUL).

use std::ffi::{c_char, CStr};
use std::ptr;

use tunebank::key::BankKey;

use crate::status::{Fail, TunebankStatus};
use crate::TUNEBANK_KEY_LEN;

/// Reads a required NUL-terminated UTF-8 string argument.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string valid for the call.
pub(crate) unsafe fn text<'a>(p: *const c_char, what: &str) -> Result<&'a str, Fail> {
    if p.is_null() {
        return Err(Fail::bad_input(format!("{what} is NULL")));
    }
    // SAFETY: `p` is not NULL, so by the caller's contract it points to a NUL-terminated
    // string that stays valid for the call.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|e| Fail::bad_input(format!("{what} is not valid UTF-8 ({e})")))
}

/// Reads a required 32-byte key argument.
///
/// # Safety
/// `p` is NULL or points to at least 32 readable bytes.
pub(crate) unsafe fn key_arg(p: *const u8) -> Result<BankKey, Fail> {
    if p.is_null() {
        return Err(Fail::bad_input("key is NULL"));
    }
    let mut key = [0u8; TUNEBANK_KEY_LEN];
    // SAFETY: `p` is not NULL, so it points to 32 readable bytes (the caller's contract);
    // `key` is a local array of 32 bytes, so the two cannot overlap.
    unsafe { ptr::copy_nonoverlapping(p, key.as_mut_ptr(), TUNEBANK_KEY_LEN) };
    Ok(BankKey(key))
}

/// Checks an output buffer argument before any work: a non-zero capacity needs a buffer.
pub(crate) fn check_buffer<T>(buf: *mut T, capacity: usize, what: &str) -> Result<(), Fail> {
    if buf.is_null() && capacity > 0 {
        return Err(Fail::bad_input(format!(
            "{what} is NULL but its capacity is {capacity}; pass a buffer or capacity 0"
        )));
    }
    Ok(())
}

/// Delivers `bytes` with the required-size protocol. With `len` NULL nothing is delivered.
///
/// # Safety
/// `buf` is valid for `capacity` bytes of writes (or NULL with capacity 0); `len` is NULL or
/// valid for a write.
pub(crate) unsafe fn deliver(
    bytes: &[u8],
    buf: *mut c_char,
    capacity: usize,
    len: *mut usize,
    what: &str,
) -> Result<(), Fail> {
    if len.is_null() {
        return Ok(());
    }
    // SAFETY: `len` is not NULL, so it is valid for a write (the caller's contract).
    unsafe { *len = bytes.len() };
    if capacity <= bytes.len() {
        return Err(Fail::new(
            TunebankStatus::BufferTooSmall,
            format!(
                "{what} needs {} bytes plus the NUL; the buffer holds {capacity}",
                bytes.len()
            ),
        ));
    }
    // SAFETY: `capacity > bytes.len() ≥ 0`, so `buf` is not NULL and valid for
    // `bytes.len() + 1` bytes of writes (the caller's contract); `bytes` is memory owned by
    // this library, so it does not overlap the caller's buffer.
    unsafe {
        ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), bytes.len());
        *buf.add(bytes.len()) = 0;
    }
    Ok(())
}
