//! The look-up of a shape nobody tuned: an exact hit, else the nearest tuned shape of the op's
//! family fitted to the shape (`tunebank::inspect::nearest`), and the answer says which.

use std::ffi::c_char;
use std::ptr;

use tunebank::bank::Lookup;
use tunebank::inspect::nearest::NearestIndex;
use tunebank::key::BankKey;

use crate::args::{check_buffer, deliver, text};
use crate::resolve::resolve_profile;
use crate::status::{guard, Fail, TunebankStatus};
use crate::{layer_number, registry, TUNEBANK_KEY_LEN, TUNEBANK_LAYER_NONE};

/// `tunebank_lookup_shape` mode: an exact hit, else the nearest tuned shape.
pub const TUNEBANK_MATCH_NEAREST: i32 = 0;
/// `tunebank_lookup_shape` mode: only an exact hit (the strict mode); anything else is
/// `TUNEBANK_STATUS_MISS`.
pub const TUNEBANK_MATCH_EXACT: i32 = 1;

/// `TunebankMatchInfo::kind` when nothing answered.
pub const TUNEBANK_ANSWER_NONE: i32 = -1;
/// `TunebankMatchInfo::kind` of an exact hit: the shape was tuned.
pub const TUNEBANK_ANSWER_EXACT: i32 = 0;
/// `TunebankMatchInfo::kind` of a nearest answer: another tuned shape's strategy, fitted.
pub const TUNEBANK_ANSWER_NEAREST: i32 = 1;

/// What answered a `tunebank_lookup_shape`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TunebankMatchInfo {
    /// `TUNEBANK_ANSWER_EXACT`, `TUNEBANK_ANSWER_NEAREST` or `TUNEBANK_ANSWER_NONE`.
    pub kind: i32,
    /// The layer of the record that answered (as `TunebankHitInfo::layer`), or
    /// `TUNEBANK_LAYER_NONE`.
    pub layer: i32,
    /// 1 when the nearest shape's strategy did not fit this shape and was moved to the nearest
    /// one that does; else 0.
    pub adapted: u32,
    /// The transfer distance from the answering record's shape (0 for an exact hit).
    pub distance: f64,
    /// The key of the record that answered (the op's own key for an exact hit); zeros when
    /// nothing answered.
    pub source_key: [u8; TUNEBANK_KEY_LEN],
}

impl TunebankMatchInfo {
    const NONE: TunebankMatchInfo = TunebankMatchInfo {
        kind: TUNEBANK_ANSWER_NONE,
        layer: TUNEBANK_LAYER_NONE,
        adapted: 0,
        distance: 0.0,
        source_key: [0; TUNEBANK_KEY_LEN],
    };
}

/// Derives the key of profile `profile` of an op (as `tunebank_lookup_op`) and looks it up;
/// when no layer holds it and `mode` is `TUNEBANK_MATCH_NEAREST`, the nearest tuned shape of
/// the op's family (the same key but the dims, inside the range its tuned shapes cover)
/// answers with its strategy fitted to this shape — never a strategy that does not fit.
///
/// Returns `TUNEBANK_STATUS_OK` on an exact or a nearest answer (`info->kind` says which), the
/// strategy (compact JSON) delivered with the required-size protocol if `strategy_len` is not
/// NULL; `TUNEBANK_STATUS_MISS` when nothing answers, `tunebank_last_error()` naming why (in
/// the strict mode `TUNEBANK_MATCH_EXACT`, any shape not tuned exactly; else no tuned shape of
/// the family, or the dim outside the tuned range). A `mode` of another value is
/// `TUNEBANK_STATUS_BAD_INPUT`.
///
/// # Safety
/// As `tunebank_lookup_op` for the JSON arguments and the strategy buffer; `info` is NULL or
/// valid for a write.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn tunebank_lookup_shape(
    bank: crate::TunebankBank,
    op_json: *const c_char,
    options_json: *const c_char,
    profile: usize,
    mode: i32,
    strategy: *mut c_char,
    capacity: usize,
    strategy_len: *mut usize,
    info: *mut TunebankMatchInfo,
) -> TunebankStatus {
    guard(|| {
        if !info.is_null() {
            // SAFETY: a non-NULL `info` is valid for a write (this function's contract).
            unsafe { *info = TunebankMatchInfo::NONE };
        }
        check_buffer(strategy, capacity, "strategy")?;
        let exact_only = match mode {
            TUNEBANK_MATCH_NEAREST => false,
            TUNEBANK_MATCH_EXACT => true,
            other => {
                return Err(Fail::bad_input(format!(
                    "mode {other}: expected TUNEBANK_MATCH_NEAREST (0) or TUNEBANK_MATCH_EXACT (1)"
                )))
            }
        };
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
        let (answer, strategy_map) = match crate::lookup(&open.bank, &r.key)? {
            Lookup::Hit(h) => (
                TunebankMatchInfo {
                    kind: TUNEBANK_ANSWER_EXACT,
                    layer: layer_number(h.layer),
                    adapted: 0,
                    distance: 0.0,
                    source_key: r.key.0,
                },
                h.answer.strategy,
            ),
            Lookup::Miss { .. } if exact_only => {
                return Err(Fail::new(
                    TunebankStatus::Miss,
                    format!("key {}: not tuned at this exact shape (strict mode)", r.key),
                ))
            }
            Lookup::Miss { .. } => {
                let index = NearestIndex::read(&open.bank, [&r.descriptor])?;
                match index.answer(&r.descriptor, &r.key) {
                    Ok(n) => (
                        TunebankMatchInfo {
                            kind: TUNEBANK_ANSWER_NEAREST,
                            layer: layer_number(n.layer),
                            adapted: u32::from(n.adapted),
                            distance: n.distance,
                            source_key: n.source.0,
                        },
                        n.strategy,
                    ),
                    Err(why) => {
                        return Err(Fail::new(TunebankStatus::Miss, not_served(&r.key, &why)))
                    }
                }
            }
        };
        if !info.is_null() {
            // SAFETY: a non-NULL `info` is valid for a write (this function's contract).
            unsafe { ptr::write(info, answer) };
        }
        if strategy_len.is_null() {
            return Ok(());
        }
        // Compact, parameters in name order (a `BTreeMap`), as every look-up delivers it.
        let json = serde_json::to_vec(&strategy_map)
            .map_err(|e| Fail::bad_input(format!("the strategy as JSON: {e}")))?;
        // SAFETY: `strategy`, `capacity` and `strategy_len` are the caller's, under the
        // contract `deliver` requires.
        unsafe { deliver(&json, strategy, capacity, strategy_len, "the strategy") }
    })
}

fn not_served(key: &BankKey, why: &impl std::fmt::Display) -> String {
    format!("key {key}: not tuned, and no tuned shape answers: {why}")
}
