//! Model-level look-ups: every unit of a model as a converter resolves it, through the
//! library's job API (`tunebank::job::JobSpec::conversion`).

use std::ffi::c_char;

use crate::args::{check_buffer, deliver, text};
use crate::resolve;
use crate::status::{guard, Fail, TunebankStatus};

/// Resolves every unit of an ONNX model as a converter does — shape inference, fusion, the
/// graph bank applied first (`graph_bank`, else AOE's resolution of the custom graph bank plus
/// the built-in one; none found: the fused units as they are) — and returns, as a JSON array,
/// one entry per unit and dynamic profile: `{"op_name", "op_type", "ir_type", "profile",
/// "key"}`, the rows of `tunebank convert --json`. `options_json` as for
/// `tunebank_derive_keys` (`soc_version` required). Text is delivered with the required-size
/// protocol.
///
/// # Safety
/// `model_path` and `options_json` are NUL-terminated strings; `graph_bank` is NULL or a
/// NUL-terminated string; `out` is valid for `capacity` bytes of writes (or NULL with capacity
/// 0); `out_len` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tunebank_model_keys(
    model_path: *const c_char,
    options_json: *const c_char,
    graph_bank: *const c_char,
    out: *mut c_char,
    capacity: usize,
    out_len: *mut usize,
) -> TunebankStatus {
    guard(|| {
        if out_len.is_null() {
            return Err(Fail::bad_input("out_len is NULL"));
        }
        check_buffer(out, capacity, "out")?;
        // SAFETY: `model_path` and `options_json` are NUL-terminated strings and `graph_bank`
        // is NULL or one (this function's contract).
        let (model_path, options_json, graph_bank) = unsafe {
            (
                text(model_path, "model_path")?,
                text(options_json, "options_json")?,
                if graph_bank.is_null() {
                    None
                } else {
                    Some(text(graph_bank, "graph_bank")?)
                },
            )
        };
        let units = resolve::model_units(model_path, options_json, graph_bank)?;
        let json = serde_json::to_string(&units).expect("unit keys serialise");
        // SAFETY: `out` is valid for `capacity` bytes of writes (or NULL with capacity 0) and
        // `out_len` for a write (this function's contract), as `deliver` requires.
        unsafe { deliver(json.as_bytes(), out, capacity, out_len, "the model's units") }
    })
}
