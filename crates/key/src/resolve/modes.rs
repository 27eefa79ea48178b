//! What the precision and impl-mode options make of one op: the dtype each float input and
//! output asks for (`precision_mode`, the mixlists, `op_precision_mode`, `keep_dtype`), the
//! dtype it gets on the SoC ([`choose`]), the cube math mode and the impl mode
//! (`op_select_implmode`, `optypelist_for_implmode`, `op_precision_mode`).

use crate::options::{ImplModeOption, OpPrecision, PrecisionMode};
use crate::precision::{supports, MixClass, IMPL_MODE_LIST};
use crate::soc::SocFacts;
use crate::{CubeMath, DType, ImplMode, OpTemplate, ResolvedOptions};

/// Whether the dtype is a float type the precision options act on (fp16, bf16, fp32).
pub(super) fn is_float(d: DType) -> bool {
    matches!(d, DType::Float16 | DType::Bfloat16 | DType::Float32)
}

/// What the precision options ask of a float tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Want {
    /// This dtype if supported, else the original, else fp16.
    Prefer(DType),
    /// The original if supported, else this dtype, else fp16.
    OrigThen(DType),
}

/// The dtype a tensor of the model's dtype `orig` gets when it asks for `want`, on an op of
/// case-folded type `t` (on the cube or not) on the SoC with `facts`; non-float dtypes stay.
pub(super) fn choose(
    orig: DType,
    want: Want,
    t: &str,
    cube: bool,
    facts: Option<&SocFacts>,
) -> DType {
    if !is_float(orig) {
        return orig;
    }
    let ok = |d: DType| supports(t, cube, d, facts);
    let (first, second) = match want {
        Want::Prefer(d) => (d, orig),
        Want::OrigThen(d) => (orig, d),
    };
    if ok(first) {
        first
    } else if ok(second) {
        second
    } else {
        DType::Float16
    }
}

/// The original dtype if supported, else fp16 (what keeping the dtype asks).
const KEEP: Want = Want::OrigThen(DType::Float16);

/// The reduced float type: bf16 or fp16.
fn reduced(bf16: bool) -> DType {
    if bf16 {
        DType::Bfloat16
    } else {
        DType::Float16
    }
}

/// What `precision_mode` (with the mixlist under mixed precision) asks of the op's float
/// inputs and outputs. `t` is the case-folded op type; `cube` whether it runs on the cube.
fn mode_wants(
    template: &OpTemplate,
    options: &ResolvedOptions,
    t: &str,
    cube: bool,
    facts: Option<&SocFacts>,
) -> (Want, Want) {
    match options.precision_mode {
        PrecisionMode::ForceFp16 => (Want::Prefer(DType::Float16), Want::Prefer(DType::Float16)),
        PrecisionMode::ForceFp32 => (Want::Prefer(DType::Float32), Want::Prefer(DType::Float32)),
        PrecisionMode::CubeFp16InFp32Out if cube => {
            (Want::Prefer(DType::Float16), Want::Prefer(DType::Float32))
        }
        PrecisionMode::CubeFp16InFp32Out => {
            (Want::Prefer(DType::Float32), Want::Prefer(DType::Float32))
        }
        PrecisionMode::Fp32ToFp16 | PrecisionMode::Fp32ToBf16 => {
            let r = reduced(options.precision_mode == PrecisionMode::Fp32ToBf16);
            if cube {
                (Want::Prefer(r), Want::Prefer(r))
            } else {
                (Want::OrigThen(r), Want::OrigThen(r))
            }
        }
        PrecisionMode::KeepOrigin => (KEEP, KEEP),
        PrecisionMode::MixFp16 | PrecisionMode::MixBf16 => {
            let r = reduced(options.precision_mode == PrecisionMode::MixBf16);
            let ir = ir_name(template);
            let w = match options.mixlist.class(&ir, t, facts) {
                MixClass::White => Want::Prefer(r),
                MixClass::Black => KEEP,
                MixClass::Gray => template
                    .inputs
                    .iter()
                    .filter_map(|i| i.producer_dtype)
                    .find(|d| is_float(*d))
                    .map_or(KEEP, Want::Prefer),
            };
            (w, w)
        }
    }
}

/// The op's Ascend IR type, case-folded (`crate::ir::ir_type`: `softmaxv2` for an ONNX
/// `Softmax`; a type ATC does not rename, or one already in IR, as it is).
fn ir_name(template: &OpTemplate) -> String {
    let rank = |i: usize| template.inputs.get(i).map_or(0, |t| t.shape.len());
    crate::ir::ir_type(&template.op_type, (rank(0), rank(1)))
        .unwrap_or(&template.op_type)
        .to_lowercase()
}

/// The precision an op resolves to: what its float inputs and outputs ask for, its cube math
/// mode (before checking that an input is fp32), and whether its outputs follow the cube's
/// dtype support.
pub(super) struct Precision {
    /// What the float inputs ask for.
    pub(super) want_in: Want,
    /// What the float outputs ask for.
    pub(super) want_out: Want,
    /// The cube math mode, `Hf32` only where the op's entry asks for it and the SoC has it.
    pub(super) cube_math: CubeMath,
    /// Whether the outputs' dtypes follow the cube's support table.
    pub(super) out_cube: bool,
}

/// `precision_mode` (or `precision_mode_v2`), then the op's `op_precision_mode` entry, then
/// `keep_dtype`, in that order of precedence from weakest to strongest; `allow_hf32` decides
/// the cube math mode over an entry by op type, under one by node name.
pub(super) fn precision(
    template: &OpTemplate,
    options: &ResolvedOptions,
    t: &str,
    cube: bool,
    facts: Option<&SocFacts>,
    op_precision: Option<OpPrecision>,
) -> Precision {
    let (mut want_in, mut want_out) = mode_wants(template, options, t, cube, facts);
    let mut cube_math = CubeMath::Native;
    match op_precision {
        Some(OpPrecision::KeepFp16) => {
            want_in = Want::Prefer(DType::Float16);
            want_out = want_in;
        }
        Some(OpPrecision::Fp32) | Some(OpPrecision::Hf32) => {
            want_in = Want::Prefer(DType::Float32);
            want_out = want_in;
            if op_precision == Some(OpPrecision::Hf32)
                && cube
                && supports(t, cube, DType::Float32, facts)
            {
                cube_math = CubeMath::Hf32;
            }
        }
        _ => {}
    }
    // allow_hf32 ranks between an entry by node name (stronger) and one by op type.
    if let Some(hf32) = options.allow_hf32 {
        if !options
            .op_precision
            .by_name
            .contains_key(&template.node_name)
        {
            cube_math = if hf32 && cube && supports(t, cube, DType::Float32, facts) {
                CubeMath::Hf32
            } else {
                CubeMath::Native
            };
        }
    }
    if options.keep_dtype.keeps(&template.node_name, t) {
        want_in = KEEP;
        want_out = KEEP;
        cube_math = CubeMath::Native;
    }
    // cube_fp16in_fp32out writes fp32 from the cube's fp32 accumulator on every SoC.
    let out_cube = cube
        && !(options.precision_mode == PrecisionMode::CubeFp16InFp32Out
            && want_out == Want::Prefer(DType::Float32));
    Precision {
        want_in,
        want_out,
        cube_math,
        out_cube,
    }
}

/// The impl mode: the op's `op_precision_mode` entry if it names one, else
/// `op_select_implmode` restricted to `optypelist_for_implmode` (or, without that list, to
/// the built-in impl-mode list unless `high_precision_for_all`).
pub(super) fn impl_mode(
    options: &ResolvedOptions,
    t: &str,
    op_precision: Option<OpPrecision>,
) -> ImplMode {
    match op_precision {
        Some(OpPrecision::HighPrecision) => ImplMode::HighPrecision,
        Some(OpPrecision::HighPerformance) => ImplMode::HighPerformance,
        Some(OpPrecision::SuperPerformance) => ImplMode::SuperPerformance,
        Some(OpPrecision::SupportOutOfBoundIndex) => ImplMode::SupportOutOfBoundIndex,
        _ => {
            let chosen = match options.impl_mode {
                ImplModeOption::HighPrecision | ImplModeOption::HighPrecisionForAll => {
                    ImplMode::HighPrecision
                }
                _ => ImplMode::HighPerformance,
            };
            if !options.impl_op_types.is_empty() {
                if options.impl_op_types.contains(t) {
                    chosen
                } else {
                    ImplMode::HighPerformance
                }
            } else {
                match options.impl_mode {
                    ImplModeOption::HighPrecisionForAll => ImplMode::HighPrecision,
                    ImplModeOption::HighPrecision if IMPL_MODE_LIST.contains(&t) => {
                        ImplMode::HighPrecision
                    }
                    _ => ImplMode::HighPerformance,
                }
            }
        }
    }
}
