//! C ABI over tunebank's look-up API, for converters written in C and C++.
//!
//! Built as `libtunebank_capi.so` and `libtunebank_capi.a`; the header is
//! `capi/include/tunebank.h` (generated from this crate by cbindgen, see `cbindgen.toml`).
//! `capi/README.md` shows how to build and link; `capi/examples/convert.cpp` is a complete
//! converter-style program.
//!
//! Contracts that hold for every function:
//!
//! - **Status and messages.** Every function returns a `TunebankStatus`. A status other than
//!   `TUNEBANK_STATUS_OK` leaves a message on the calling thread, read with
//!   `tunebank_last_error`; `TUNEBANK_STATUS_OK` clears it.
//! - **Ownership.** The library never hands out memory for the caller to free. Text comes back
//!   in caller-provided buffers with a required-size protocol: the length out-param receives the
//!   text's length without its NUL; if the capacity is not at least that plus one, the call
//!   returns `TUNEBANK_STATUS_BUFFER_TOO_SMALL` and writes nothing to the buffer, and the caller
//!   retries with a larger one. Input pointers are only read during the call. A bank handle is
//!   released by `tunebank_close`, exactly once.
//! - **Threads.** One handle may be used by any number of threads at once, including a
//!   `tunebank_close` racing with look-ups: calls that already hold the bank finish normally,
//!   later ones get `TUNEBANK_STATUS_INVALID_HANDLE`. The last-error message is per thread.
//! - **Handles.** A handle is an opaque `uint64_t` naming a slot in a registry together with the
//!   slot's generation, so a closed (or never issued) handle is detected and refused, never
//!   dereferenced. 0 is never a valid handle.
//! - **Panics.** No Rust panic crosses the boundary: every function catches unwinding and
//!   returns `TUNEBANK_STATUS_INTERNAL` instead.
//!
//! The Rust functions `lookup` and `strategy_json` are exactly what the C look-ups perform,
//! so Rust programs (and the tests) can compare answers byte for byte.
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod args;
mod model;
mod registry;
mod resolve;
mod shape;
mod status;

pub use model::tunebank_model_keys;
pub use shape::{
    tunebank_lookup_shape, TunebankMatchInfo, TUNEBANK_ANSWER_EXACT, TUNEBANK_ANSWER_NEAREST,
    TUNEBANK_ANSWER_NONE, TUNEBANK_MATCH_EXACT, TUNEBANK_MATCH_NEAREST,
};

use std::ffi::c_char;
use std::ptr;

use tunebank::bank::AnswerRef;
use tunebank::bank::{Access, Bank, BankRequest, CustomLayer, Found, Lookup, Record};
use tunebank::key::StrategyMap;
use tunebank::key::{BankKey, Environment, RecordKind, KEY_SCHEMA_VERSION};

use crate::args::{check_buffer, deliver, key_arg, text};
use crate::registry::OpenBank;
use crate::resolve::{resolve, resolve_profile};
pub use crate::status::TunebankStatus;
use crate::status::{guard, Fail};

/// An open bank: an opaque handle from `tunebank_open`. 0 is never a valid handle.
pub type TunebankBank = u64;

/// Length of a bank key in bytes (blake3).
pub const TUNEBANK_KEY_LEN: usize = 32;

/// `tunebank_open` flag: open the custom bank read-only (a converter's mode). Nothing is
/// created; a bank file that does not exist yet is an empty layer; writes fail.
pub const TUNEBANK_OPEN_READ_ONLY: u32 = 1;

/// `tunebank_open` flag: do not add the default built-in bank
/// (`$TUNEBANK_BUILTIN_PATH/op/<soc>/…` or the `$HOME/Ascend/…/built-in` default).
pub const TUNEBANK_OPEN_NO_DEFAULT_BUILTIN: u32 = 2;

/// `TunebankHitInfo::layer` when the look-up did not hit.
pub const TUNEBANK_LAYER_NONE: i32 = -1;

/// `TunebankHitInfo::layer` of the custom (user's writable) bank. Built-in bank `n` (in the
/// order given to `tunebank_open`, the default built-in bank last) is `1 + n`.
pub const TUNEBANK_LAYER_CUSTOM: i32 = 0;

/// `tunebank_lookup_batch` offset of a key that did not hit (`SIZE_MAX`).
pub const TUNEBANK_NO_OFFSET: usize = usize::MAX;

/// Facts about a hit besides its strategy.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TunebankHitInfo {
    /// The layer that answered: `TUNEBANK_LAYER_CUSTOM`, `1 + n` for built-in bank `n`, or
    /// `TUNEBANK_LAYER_NONE`.
    pub layer: i32,
    /// How many lower layers also hold the key (shadowed by `layer`).
    pub shadowed: u32,
    /// Measured time of the stored strategy, µs.
    pub tuned_us: f64,
    /// Measured time of the baseline it was compared with, µs.
    pub baseline_us: f64,
    /// 1 when the stored strategy is the default, confirmed by a tuning search that found no
    /// clear win (then `tuned_us` equals `baseline_us`); 0 for a tuned winner or a miss.
    pub default_confirmed: u32,
}

impl TunebankHitInfo {
    const NONE: TunebankHitInfo = TunebankHitInfo {
        layer: TUNEBANK_LAYER_NONE,
        shadowed: 0,
        tuned_us: 0.0,
        baseline_us: 0.0,
        default_confirmed: 0,
    };
}

// ---------------------------------------------------------------------------------------------
// The look-up the C API performs, as Rust.
// ---------------------------------------------------------------------------------------------

/// The look-up every C look-up function performs: `Bank::lookup_checked` that accepts a
/// stored answer only if it was written under this build's key schema version and for the
/// bank's kind (anything else is a rejected hit).
pub fn lookup(bank: &Bank, key: &BankKey) -> Result<Lookup, tunebank::bank::BankError> {
    let kind = bank.kind();
    bank.lookup_checked(key, |a| {
        a.key_schema_version == KEY_SCHEMA_VERSION && a.kind == kind
    })
}

/// The validity check of every C look-up: a stored answer counts only if it was written under
/// this build's key schema version and for `kind` (the bank's); anything else is a rejected hit.
fn accepts(kind: RecordKind) -> impl Fn(&AnswerRef<'_>) -> bool {
    move |a| a.key_schema_version == KEY_SCHEMA_VERSION && a.kind == kind
}

/// The strategy as the C API returns it: compact JSON, parameters in name order.
pub fn strategy_json(strategy: &StrategyMap) -> String {
    serde_json::to_string(strategy).expect("a strategy map always serialises")
}

// ---------------------------------------------------------------------------------------------
// Look-up answers through the C out-params.
// ---------------------------------------------------------------------------------------------

/// "no bank layer holds key <hex>", built without the formatting machinery: a miss is a
/// normal answer on a converter's hot path.
fn miss_message(key: &BankKey) -> String {
    const PREFIX: &str = "no bank layer holds key ";
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(PREFIX.len() + 2 * TUNEBANK_KEY_LEN);
    out.push_str(PREFIX);
    for b in key.0 {
        out.push(HEX[usize::from(b >> 4)] as char);
        out.push(HEX[usize::from(b & 15)] as char);
    }
    out
}

fn layer_number(layer: tunebank::bank::LayerId) -> i32 {
    match layer {
        tunebank::bank::LayerId::Custom => TUNEBANK_LAYER_CUSTOM,
        tunebank::bank::LayerId::BuiltIn(n) => i32::try_from(n + 1).unwrap_or(i32::MAX),
    }
}

/// Looks `key` up in `open` and delivers the answer through the C out-params.
///
/// # Safety
/// As `tunebank_lookup_key`'s out-params.
unsafe fn lookup_into(
    open: &OpenBank,
    key: &BankKey,
    strategy: *mut c_char,
    capacity: usize,
    strategy_len: *mut usize,
    info: *mut TunebankHitInfo,
) -> Result<(), Fail> {
    if !info.is_null() {
        // SAFETY: `info` is not NULL, so it is valid for a write (the caller's contract).
        unsafe { *info = TunebankHitInfo::NONE };
    }
    // The hit is read in place: the strategy goes from the stored bytes to JSON in the
    // caller's buffer without an intermediate map (`Bank::lookup_with`).
    let found = open
        .bank
        .lookup_with(key, accepts(open.bank.kind()), |hit| {
            if !info.is_null() {
                let hit_info = TunebankHitInfo {
                    layer: layer_number(hit.layer),
                    shadowed: u32::try_from(hit.shadowed.len()).unwrap_or(u32::MAX),
                    tuned_us: hit.answer.performance.tuned_us,
                    baseline_us: hit.answer.performance.baseline_us,
                    default_confirmed: u32::from(hit.answer.performance.default_confirmed),
                };
                // SAFETY: `info` is not NULL, so it is valid for a write (the caller's contract).
                unsafe { *info = hit_info };
            }
            if strategy_len.is_null() {
                return Ok(());
            }
            let mut json = Vec::with_capacity(256);
            hit.answer.strategy.write_json(&mut json);
            // SAFETY: `strategy`, `capacity` and `strategy_len` are the caller's, under the
            // contract `deliver` requires.
            unsafe { deliver(&json, strategy, capacity, strategy_len, "the strategy") }
        })?;
    match found {
        Found::Hit(delivered) => delivered,
        Found::Miss { rejected } if rejected.is_empty() => {
            Err(Fail::new(TunebankStatus::Miss, miss_message(key)))
        }
        Found::Miss { rejected } => Err(Fail::new(
            TunebankStatus::RejectedHit,
            format!(
                "key {key}: the entries in layer(s) {} were written under another key schema \
                 version or kind and are not valid here; no other layer holds the key",
                rejected
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

// ---------------------------------------------------------------------------------------------
// Entry points.
// ---------------------------------------------------------------------------------------------

/// Opens the op bank (op records only; subgraph banks are not served here) for `soc_version` (e.g. `"Ascend910B2"`) and stores its handle in
/// `*out_bank`.
///
/// The custom (writable) layer is the file `bank_path` if it is not NULL, else the file AOE's
/// rules choose: `$TUNE_BANK_PATH/<soc>/`, else `$ASCEND_CACHE_PATH/aoe_data/<soc>/`, else
/// `$HOME/Ascend/latest/data/aoe/custom/op/<soc>/` (a `TUNE_BANK_PATH` that does not exist or
/// lacks rwx permission is `TUNEBANK_STATUS_IO_ERROR`). `builtin_paths` lists
/// `builtin_count` read-only built-in bank files consulted after the custom layer, in order
/// (a missing file is an absent layer); the default built-in bank comes last unless `flags`
/// has `TUNEBANK_OPEN_NO_DEFAULT_BUILTIN`. With `TUNEBANK_OPEN_READ_ONLY` nothing is
/// created. Release the handle with `tunebank_close`.
///
/// # Safety
/// `bank_path` is NULL or a NUL-terminated string; `soc_version` is a NUL-terminated string;
/// `builtin_paths` points to `builtin_count` NUL-terminated strings (or is NULL with a count of
/// 0); `out_bank` is valid for a write. All are only used during the call.
#[no_mangle]
pub unsafe extern "C" fn tunebank_open(
    bank_path: *const c_char,
    soc_version: *const c_char,
    builtin_paths: *const *const c_char,
    builtin_count: usize,
    flags: u32,
    out_bank: *mut TunebankBank,
) -> TunebankStatus {
    guard(|| {
        if out_bank.is_null() {
            return Err(Fail::bad_input("out_bank is NULL"));
        }
        // SAFETY: `out_bank` is not NULL, so it is valid for a write (this function's contract).
        unsafe { *out_bank = 0 };
        // SAFETY: `soc_version` is a NUL-terminated string (this function's contract).
        let soc = unsafe { text(soc_version, "soc_version") }?;
        if flags & !(TUNEBANK_OPEN_READ_ONLY | TUNEBANK_OPEN_NO_DEFAULT_BUILTIN) != 0 {
            return Err(Fail::bad_input(format!(
                "flags {flags:#x}: unknown bits; expected TUNEBANK_OPEN_* flags"
            )));
        }
        if builtin_paths.is_null() && builtin_count > 0 {
            return Err(Fail::bad_input(
                "builtin_paths is NULL but builtin_count > 0",
            ));
        }
        let mut request = BankRequest {
            access: if flags & TUNEBANK_OPEN_READ_ONLY != 0 {
                Access::ReadOnly
            } else {
                Access::Writable
            },
            default_builtin: flags & TUNEBANK_OPEN_NO_DEFAULT_BUILTIN == 0,
            ..BankRequest::new(RecordKind::Op, soc)
        };
        if !bank_path.is_null() {
            // SAFETY: a non-NULL `bank_path` is a NUL-terminated string (this function's
            // contract).
            request.custom = CustomLayer::Path(unsafe { text(bank_path, "bank_path") }?.into());
        }
        for i in 0..builtin_count {
            // SAFETY: `builtin_paths` is not NULL here (checked above for a non-zero count) and
            // points to `builtin_count` NUL-terminated strings (this function's contract).
            let path = unsafe { text(*builtin_paths.add(i), "builtin_paths[i]") }?;
            request.builtin.push(path.into());
        }
        let bank = Bank::open(&Environment::process(), &request)?;
        let handle = registry::insert(OpenBank {
            bank,
            soc: soc.to_owned(),
        })?;
        // SAFETY: as above, `out_bank` is valid for a write.
        unsafe { *out_bank = handle };
        Ok(())
    })
}

/// Closes a bank handle. Later uses of it return `TUNEBANK_STATUS_INVALID_HANDLE`, as does
/// closing it again. Calls on other threads that are already using the bank finish first.
#[no_mangle]
pub extern "C" fn tunebank_close(bank: TunebankBank) -> TunebankStatus {
    guard(|| registry::remove(bank))
}

/// Derives the bank keys of one op: `op_json` is an op template as a converter has it
/// (`{"node_name", "op_type", "fused_ops"?, "inputs": [{"shape", "dtype", "ori_format"?,
/// "format"?, "graph_input"?, "producer_dtype"?}], "outputs", "attrs"?}`), `options_json` the
/// ATC options as given, either a JSON object `{"soc_version": "Ascend910B2",
/// "precision_mode": "allow_fp32_to_fp16", ...}` (string values; numbers and booleans are taken
/// as their text) or an argument array `["--soc_version=Ascend910B2", ...]`; `soc_version` is
/// required here.
///
/// Writes one 32-byte key per dynamic profile (one for static options) into `keys_out`, in
/// profile order, and their number into `*key_count`. If `keys_capacity` (in keys) is smaller,
/// returns `TUNEBANK_STATUS_BUFFER_TOO_SMALL` with the number needed in `*key_count`.
///
/// # Safety
/// `op_json` and `options_json` are NUL-terminated strings; `keys_out` is valid for
/// `keys_capacity * 32` bytes of writes (or NULL with capacity 0); `key_count` is valid for a
/// write.
#[no_mangle]
pub unsafe extern "C" fn tunebank_derive_keys(
    op_json: *const c_char,
    options_json: *const c_char,
    keys_out: *mut u8,
    keys_capacity: usize,
    key_count: *mut usize,
) -> TunebankStatus {
    guard(|| {
        if key_count.is_null() {
            return Err(Fail::bad_input("key_count is NULL"));
        }
        check_buffer(keys_out, keys_capacity, "keys_out")?;
        // SAFETY: `op_json` and `options_json` are NUL-terminated strings (this function's
        // contract).
        let (op_json, options_json) = unsafe {
            (
                text(op_json, "op_json")?,
                text(options_json, "options_json")?,
            )
        };
        let resolved = resolve(op_json, options_json, None)?;
        // SAFETY: `key_count` is not NULL (checked above), so it is valid for a write.
        unsafe { *key_count = resolved.len() };
        if keys_capacity < resolved.len() {
            return Err(Fail::new(
                TunebankStatus::BufferTooSmall,
                format!(
                    "the op has {} profiles; keys_out holds {keys_capacity} keys",
                    resolved.len()
                ),
            ));
        }
        for (i, r) in resolved.iter().enumerate() {
            // SAFETY: `i < resolved.len() ≤ keys_capacity`, and `keys_out` is valid for
            // `keys_capacity * 32` bytes of writes (this function's contract; not NULL, since
            // a NULL buffer has capacity 0 and the loop then has no iteration); the key is
            // memory of this library, so the two do not overlap.
            unsafe {
                ptr::copy_nonoverlapping(
                    r.key.0.as_ptr(),
                    keys_out.add(i * TUNEBANK_KEY_LEN),
                    TUNEBANK_KEY_LEN,
                )
            };
        }
        Ok(())
    })
}

/// Resolves one op (arguments as `tunebank_derive_keys`) and returns, as a JSON array with
/// one entry per dynamic profile, `{"profile", "descriptor", "key"}`: the static descriptor
/// each key is derived from. A record for `tunebank_write_record` takes that descriptor.
/// Text is delivered with the required-size protocol.
///
/// # Safety
/// `op_json` and `options_json` are NUL-terminated strings; `out` is valid for `capacity` bytes
/// of writes (or NULL with capacity 0); `out_len` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tunebank_resolve_op(
    op_json: *const c_char,
    options_json: *const c_char,
    out: *mut c_char,
    capacity: usize,
    out_len: *mut usize,
) -> TunebankStatus {
    guard(|| {
        if out_len.is_null() {
            return Err(Fail::bad_input("out_len is NULL"));
        }
        check_buffer(out, capacity, "out")?;
        // SAFETY: `op_json` and `options_json` are NUL-terminated strings (this function's
        // contract).
        let (op_json, options_json) = unsafe {
            (
                text(op_json, "op_json")?,
                text(options_json, "options_json")?,
            )
        };
        let resolved = resolve(op_json, options_json, None)?;
        let json = serde_json::to_string(&resolved).expect("resolved ops serialise");
        // SAFETY: `out` is valid for `capacity` bytes of writes (or NULL with capacity 0) and
        // `out_len` for a write (this function's contract), as `deliver` requires.
        unsafe { deliver(json.as_bytes(), out, capacity, out_len, "the resolved op") }
    })
}

/// Looks a 32-byte key up, custom layer first, then the built-in layers.
///
/// Returns `TUNEBANK_STATUS_OK` on a hit, `TUNEBANK_STATUS_MISS` when no layer holds the key,
/// `TUNEBANK_STATUS_REJECTED_HIT` when only entries written under another key schema version
/// hold it, `TUNEBANK_STATUS_DAMAGED_RECORD` when the stored record fails its checksum.
/// On a hit, the strategy (compact JSON, parameters in name order) is delivered with the
/// required-size protocol if `strategy_len` is not NULL, and `*info` (if not NULL) says which
/// layer answered; on any other status `info->layer` is `TUNEBANK_LAYER_NONE`.
///
/// # Safety
/// `key` points to 32 readable bytes; `strategy` is valid for `capacity` bytes of writes (or
/// NULL with capacity 0); `strategy_len` and `info` are NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tunebank_lookup_key(
    bank: TunebankBank,
    key: *const u8,
    strategy: *mut c_char,
    capacity: usize,
    strategy_len: *mut usize,
    info: *mut TunebankHitInfo,
) -> TunebankStatus {
    guard(|| {
        check_buffer(strategy, capacity, "strategy")?;
        // SAFETY: `key` points to 32 readable bytes (this function's contract).
        let key = unsafe { key_arg(key) }?;
        let open = registry::get(bank)?;
        // SAFETY: the out-params are this function's, under the contract `lookup_into` takes.
        unsafe { lookup_into(&open, &key, strategy, capacity, strategy_len, info) }
    })
}

/// Derives the key of profile `profile` (0 for static options) of an op and looks it up:
/// `tunebank_derive_keys` then `tunebank_lookup_key` in one call. `options_json` may omit
/// `soc_version` (the bank's SoC is used); a different one is `TUNEBANK_STATUS_BAD_INPUT`, as
/// is a profile index past the last profile. If `key_out` is not NULL it receives the key
/// (whenever the key could be derived, hit or not).
///
/// # Safety
/// As `tunebank_derive_keys` for the JSON arguments and `tunebank_lookup_key` for the
/// out-params; `key_out` is NULL or valid for 32 bytes of writes.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn tunebank_lookup_op(
    bank: TunebankBank,
    op_json: *const c_char,
    options_json: *const c_char,
    profile: usize,
    strategy: *mut c_char,
    capacity: usize,
    strategy_len: *mut usize,
    info: *mut TunebankHitInfo,
    key_out: *mut u8,
) -> TunebankStatus {
    guard(|| {
        if !info.is_null() {
            // SAFETY: a non-NULL `info` is valid for a write (this function's contract).
            unsafe { *info = TunebankHitInfo::NONE };
        }
        check_buffer(strategy, capacity, "strategy")?;
        // SAFETY: `op_json` and `options_json` are NUL-terminated strings (this function's
        // contract).
        let (op_json, options_json) = unsafe {
            (
                text(op_json, "op_json")?,
                text(options_json, "options_json")?,
            )
        };
        let open = registry::get(bank)?;
        let r = resolve_profile(op_json, options_json, &open.soc, profile)?;
        if !key_out.is_null() {
            // SAFETY: a non-NULL `key_out` is valid for 32 bytes of writes (this function's
            // contract); the key is memory of this library, so the two do not overlap.
            unsafe { ptr::copy_nonoverlapping(r.key.0.as_ptr(), key_out, TUNEBANK_KEY_LEN) };
        }
        // SAFETY: the out-params are this function's, under the contract `lookup_into` takes.
        unsafe { lookup_into(&open, &r.key, strategy, capacity, strategy_len, info) }
    })
}

/// Looks up `count` keys (`keys` holds them back to back, 32 bytes each).
///
/// `statuses[i]` receives key i's outcome: `TUNEBANK_STATUS_OK` (hit), `_MISS`,
/// `_REJECTED_HIT` or `_DAMAGED_RECORD`. The hits' strategies are delivered in `strategies`,
/// each followed by a NUL, in key order; `offsets[i]` (if `offsets` is not NULL) is where key
/// i's strategy starts, or `TUNEBANK_NO_OFFSET`. `*strategies_len` (if not NULL) receives the
/// total bytes, NULs included; if `capacity` is smaller the call returns
/// `TUNEBANK_STATUS_BUFFER_TOO_SMALL` (statuses and offsets are still filled, the buffer is
/// not). With `strategies_len` NULL no strategy is delivered. The call itself returns
/// `TUNEBANK_STATUS_OK` when every key was looked up, whatever their outcomes; an I/O error
/// ends the batch with that status.
///
/// # Safety
/// `keys` points to `count * 32` readable bytes (or is NULL with count 0); `statuses` is valid
/// for `count` writes; `offsets` is NULL or valid for `count` writes; `strategies` is valid for
/// `capacity` bytes of writes (or NULL with capacity 0); `strategies_len` is NULL or valid for a
/// write.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn tunebank_lookup_batch(
    bank: TunebankBank,
    keys: *const u8,
    count: usize,
    statuses: *mut TunebankStatus,
    offsets: *mut usize,
    strategies: *mut c_char,
    capacity: usize,
    strategies_len: *mut usize,
) -> TunebankStatus {
    guard(|| {
        if count > 0 && (keys.is_null() || statuses.is_null()) {
            return Err(Fail::bad_input("keys or statuses is NULL but count > 0"));
        }
        if count.checked_mul(TUNEBANK_KEY_LEN).is_none() {
            return Err(Fail::bad_input(format!("count {count} is too large")));
        }
        check_buffer(strategies, capacity, "strategies")?;
        let open = registry::get(bank)?;
        let mut batch = Vec::with_capacity(count);
        for i in 0..count {
            // SAFETY: `keys` is not NULL (count > 0) and points to `count * 32` readable bytes
            // (this function's contract), so key `i < count` is inside it.
            batch.push(unsafe { key_arg(keys.add(i * TUNEBANK_KEY_LEN)) }?);
        }
        // Hits arrive in the bank's read order; their JSON goes to `scratch`, then into `text`
        // in key order.
        let mut scratch: Vec<u8> = Vec::new();
        let mut spans = vec![(0usize, 0usize); count];
        // One read transaction per layer (`Bank::lookup_many_with`), hits read in place.
        let answers = open
            .bank
            .lookup_many_with(&batch, accepts(open.bank.kind()), |i, hit| {
                let at = scratch.len();
                hit.answer.strategy.write_json(&mut scratch);
                scratch.push(0);
                spans[i] = (at, scratch.len());
            })?;
        let mut text: Vec<u8> = Vec::with_capacity(scratch.len());
        for (i, answer) in answers.into_iter().enumerate() {
            let (status, offset) = match answer {
                Ok(Found::Hit(())) => {
                    let at = text.len();
                    text.extend_from_slice(&scratch[spans[i].0..spans[i].1]);
                    (TunebankStatus::Ok, at)
                }
                Ok(Found::Miss { rejected }) if rejected.is_empty() => {
                    (TunebankStatus::Miss, TUNEBANK_NO_OFFSET)
                }
                Ok(Found::Miss { .. }) => (TunebankStatus::RejectedHit, TUNEBANK_NO_OFFSET),
                Err(e) => match status::bank_status(&e) {
                    TunebankStatus::DamagedRecord => {
                        (TunebankStatus::DamagedRecord, TUNEBANK_NO_OFFSET)
                    }
                    _ => return Err(e.into()),
                },
            };
            // SAFETY: `statuses` is not NULL (count > 0) and valid for `count` writes (this
            // function's contract); `i < count`.
            unsafe { *statuses.add(i) = status };
            if !offsets.is_null() {
                // SAFETY: a non-NULL `offsets` is valid for `count` writes; `i < count`.
                unsafe { *offsets.add(i) = offset };
            }
        }
        if strategies_len.is_null() {
            return Ok(());
        }
        // SAFETY: a non-NULL `strategies_len` is valid for a write (this function's contract).
        unsafe { *strategies_len = text.len() };
        if capacity < text.len() {
            return Err(Fail::new(
                TunebankStatus::BufferTooSmall,
                format!(
                    "the strategies need {} bytes; the buffer holds {capacity}",
                    text.len()
                ),
            ));
        }
        if !text.is_empty() {
            // SAFETY: `0 < text.len() ≤ capacity`, so `strategies` is not NULL and valid for
            // `capacity` bytes of writes (this function's contract); `text` is this library's
            // memory, so the two do not overlap.
            unsafe { ptr::copy_nonoverlapping(text.as_ptr(), strategies.cast::<u8>(), text.len()) };
        }
        Ok(())
    })
}

/// Writes one record to the bank's custom layer, atomically and durably, under the key derived
/// from its own descriptor, and stores that key in `key_out` (if not NULL).
///
/// `record_json` is the record in tunebank's JSON form: `{"key_schema_version", "kind": "op",
/// "descriptor": {"op": <descriptor from tunebank_resolve_op>}, "options": {name: value},
/// "strategy": {...}, "performance": {"baseline_us", "tuned_us", "samples_us", "runner"},
/// "provenance": {"tool_version", "algorithm", "trials", "seed", "unix_time", "origin"}}`.
/// A handle opened with `TUNEBANK_OPEN_READ_ONLY` gives `TUNEBANK_STATUS_BAD_INPUT`.
///
/// # Safety
/// `record_json` is a NUL-terminated string; `key_out` is NULL or valid for 32 bytes of writes.
#[no_mangle]
pub unsafe extern "C" fn tunebank_write_record(
    bank: TunebankBank,
    record_json: *const c_char,
    key_out: *mut u8,
) -> TunebankStatus {
    guard(|| {
        // SAFETY: `record_json` is a NUL-terminated string (this function's contract).
        let json = unsafe { text(record_json, "record_json") }?;
        let open = registry::get(bank)?;
        let record: Record = serde_json::from_str(json).map_err(|e| {
            Fail::bad_input(format!(
                "record_json: {e}; expected a tunebank record (see tunebank_write_record)"
            ))
        })?;
        let keys = open.bank.write_batch(std::slice::from_ref(&record))?;
        if !key_out.is_null() {
            // SAFETY: a non-NULL `key_out` is valid for 32 bytes of writes (this function's
            // contract); the key is memory of this library, so the two do not overlap.
            unsafe { ptr::copy_nonoverlapping(keys[0].0.as_ptr(), key_out, TUNEBANK_KEY_LEN) };
        }
        Ok(())
    })
}

/// The calling thread's message for its last call that did not return `TUNEBANK_STATUS_OK`
/// (the empty string after a success). Owned by the library: do not free it; it stays valid
/// until this thread next calls a function that returns a `TunebankStatus`.
#[no_mangle]
pub extern "C" fn tunebank_last_error() -> *const c_char {
    status::last_error_ptr()
}

/// The name of a status value (e.g. `"TUNEBANK_STATUS_MISS"`), or `"TUNEBANK_STATUS_UNKNOWN"`.
/// The string is static.
#[no_mangle]
pub extern "C" fn tunebank_status_name(status: i32) -> *const c_char {
    TunebankStatus::from_i32(status)
        .map(|s| s.name().as_ptr())
        .unwrap_or(c"TUNEBANK_STATUS_UNKNOWN".as_ptr())
}

/// The build this crate's tests run under (CI's release suite): overflow checks are on for this
/// crate (root `Cargo.toml`, `[profile.release.package.*]`), so an integer overflow in its code
/// panics instead of wrapping to a wrong number.
#[cfg(test)]
mod build_checks {
    #[test]
    fn this_crate_is_built_with_overflow_checks() {
        let wrapped = std::panic::catch_unwind(|| std::hint::black_box(u32::MAX) + 1);
        assert!(
            wrapped.is_err(),
            "u32::MAX + 1 gave {wrapped:?}: overflow checks are off"
        );
    }
}
