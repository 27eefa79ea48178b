//! What "related" means between two op descriptors, and how far apart they are: the one place
//! that defines it (see [`transfer_distance`] for the rule and its constants). Transfer picks the
//! records a search starts from by [`transfer_distance`]; `bank-inspect why` ranks the stored
//! entries nearest to a miss by [`descriptor_distance`], the same sum over any two descriptors.

use std::collections::BTreeSet;

use tunebank_key::{DType, OpDescriptor, TensorDesc};

/// Added for a record of another SoC of the same family ([`soc_family`]): about as far as one
/// dim e ≈ 2.7 times larger. The family shares buffer sizes and the cube, so winning tilings
/// carry over well; core counts and clocks differ.
pub(crate) const OTHER_SOC_SAME_FAMILY: f64 = 1.0;
/// Added for a record of a SoC of another family: other buffer sizes (L0C, L1, UB), another cube
/// data path (ND on 910B, FRACTAL_NZ elsewhere), other memory.
pub(crate) const OTHER_SOC_FAMILY: f64 = 3.0;
/// Added once when the dtypes differ; between related ops, whose dtypes are all float, that is
/// another float width (float16 against float32 or bfloat16): the tiling's alignment (C0) and
/// every buffer's capacity in elements change with the element size.
pub(crate) const FLOAT_WIDTH: f64 = 1.0;
/// Added once when a tensor's runtime format differs (ND against FRACTAL_NZ, …).
pub(crate) const FORMAT: f64 = 0.5;
/// Added once when the impl mode or the cube math mode differs.
pub(crate) const MODE: f64 = 0.5;
/// Added once when the fused op types differ (a MatMul with or without a fused activation).
pub(crate) const FUSED: f64 = 0.5;
/// Added per attribute whose value differs or that only one side has (transpose flags,
/// strides, pads, axes …).
pub(crate) const ATTR: f64 = 0.5;
/// Added per input that only one side has (a MatMul with and without a bias input): ln 2.
pub(crate) const UNMATCHED_INPUT: f64 = std::f64::consts::LN_2;
/// Added by [`descriptor_distance`] when the two are not related (another IR op type or another
/// dtype class): as far as one dim e¹⁰⁰ ≈ 2.7 · 10⁴³ times larger, so the related come first.
pub(crate) const UNRELATED: f64 = 100.0;

/// The distance from the task `target` to the stored op `source`, or `None` when they are not
/// related. The rule, all of it:
///
/// - **Related** only when both have the same IR op type (ASCII case-insensitive: the bank
///   indexes op types case-folded) and the same dtype class: the sets of dtypes of their inputs
///   and outputs are equal, or both hold float types only. A float op is never related to an integer
///   (quantised) or boolean one, whose tilings mean other things.
/// - **Distance** = the shape term + the penalties, ≥ 0, 0 only for equal shapes on the same SoC
///   with nothing else different. The shape term is the sum, over the inputs both have (by
///   index) and over their logical dims (`ori_shape`, aligned from the right as broadcasting
///   aligns them, a missing leading dim counting as 1, a dim 0 as 1), of |ln(a / b)|: shapes
///   twice as large in one dim of one input are ln 2 ≈ 0.69 apart. Outputs are not counted (they
///   follow from inputs and attributes). Penalties: `UNMATCHED_INPUT` per input only one side
///   has; `ATTR` per differing attribute; `FUSED` when the fused op types differ; [`MODE`]
///   when the impl or cube math mode differs; `FORMAT` when any runtime format differs;
///   `FLOAT_WIDTH` when the (float) dtypes differ; `OTHER_SOC_SAME_FAMILY` or
///   `OTHER_SOC_FAMILY` for another SoC version.
///
/// So a neighbouring shape on the same SoC (one dim of two inputs doubled: 1.39) is nearer than
/// the same shape on another SoC family (3.0), and a shape 16 times larger in one dim (5.5)
/// is farther than the same shape on another SoC of the family (1.0).
pub(crate) fn transfer_distance(target: &OpDescriptor, source: &OpDescriptor) -> Option<f64> {
    let (related, same_dtypes) = relation(target, source);
    related.then(|| terms(target, source, same_dtypes))
}

/// The distance between any two op descriptors: [`transfer_distance`] when they are related,
/// else [`UNRELATED`] plus the same terms ([`FLOAT_WIDTH`] counting whenever the dtype sets
/// differ). Symmetric, ≥ 0, and 0 only where [`transfer_distance`] is.
pub(crate) fn descriptor_distance(a: &OpDescriptor, b: &OpDescriptor) -> f64 {
    let (related, same_dtypes) = relation(a, b);
    let d = terms(a, b, same_dtypes);
    if related {
        d
    } else {
        d + UNRELATED
    }
}

/// Whether the two are related (the same op type, ASCII case-insensitive, and the same dtype
/// class), and whether their sets of dtypes are equal.
fn relation(target: &OpDescriptor, source: &OpDescriptor) -> (bool, bool) {
    let dtypes = |d: &OpDescriptor| -> BTreeSet<DType> {
        d.inputs.iter().chain(&d.outputs).map(|t| t.dtype).collect()
    };
    let (td, sd) = (dtypes(target), dtypes(source));
    let all_float = |v: &BTreeSet<DType>| v.iter().all(|d| is_float(*d));
    let same_dtypes = td == sd;
    let both_float = all_float(&td) && all_float(&sd);
    let same_type = target.op_type.eq_ignore_ascii_case(&source.op_type);
    (same_type && (same_dtypes || both_float), same_dtypes)
}

/// The shape term and the penalties of [`transfer_distance`], summed in its order.
fn terms(target: &OpDescriptor, source: &OpDescriptor, same_dtypes: bool) -> f64 {
    let mut d = 0.0;
    for (a, b) in target.inputs.iter().zip(&source.inputs) {
        d += shape_distance(&a.ori_shape, &b.ori_shape);
    }
    d += UNMATCHED_INPUT * target.inputs.len().abs_diff(source.inputs.len()) as f64;
    let attrs_differing = target
        .attrs
        .iter()
        .filter(|(k, v)| source.attrs.get(*k) != Some(v))
        .count()
        + source
            .attrs
            .keys()
            .filter(|k| !target.attrs.contains_key(*k))
            .count();
    d += ATTR * attrs_differing as f64;
    if !same_fused(&target.fused_ops, &source.fused_ops) {
        d += FUSED;
    }
    if target.impl_mode != source.impl_mode || target.cube_math != source.cube_math {
        d += MODE;
    }
    if formats_differ(target, source) {
        d += FORMAT;
    }
    if !same_dtypes {
        d += FLOAT_WIDTH;
    }
    d += soc_distance(&target.soc.version, &source.soc.version);
    d
}

/// The SoC term of [`transfer_distance`]: 0 for the same version (ASCII case-insensitive),
/// [`OTHER_SOC_SAME_FAMILY`] within a family, [`OTHER_SOC_FAMILY`] otherwise.
pub(crate) fn soc_distance(a: &str, b: &str) -> f64 {
    if a.eq_ignore_ascii_case(b) {
        0.0
    } else if soc_family(a) == soc_family(b) {
        OTHER_SOC_SAME_FAMILY
    } else {
        OTHER_SOC_FAMILY
    }
}

/// The family of a SoC version: `Ascend910B` (910B1, B2, B2C, B3, B4), `Ascend910A` (910A,
/// ProA, PremiumA), `Ascend310P` (P1, P3), `Ascend310B` (B1), `Ascend310`; another version is
/// its own family. Versions of one family share the core's buffers and data paths; they differ
/// in core counts, clocks and memory.
pub(crate) fn soc_family(version: &str) -> String {
    let v = version.to_ascii_lowercase();
    let family = if v.starts_with("ascend910b") {
        "Ascend910B"
    } else if v.starts_with("ascend910") {
        "Ascend910A"
    } else if v.starts_with("ascend310p") {
        "Ascend310P"
    } else if v.starts_with("ascend310b") {
        "Ascend310B"
    } else if v == "ascend310" {
        "Ascend310"
    } else {
        return version.to_owned();
    };
    family.to_owned()
}

fn is_float(d: DType) -> bool {
    matches!(
        d,
        DType::Float16 | DType::Bfloat16 | DType::Float32 | DType::Float64
    )
}

/// Σ |ln(a / b)| over the dims aligned from the right; missing dims and 0 count as 1.
fn shape_distance(a: &[i64], b: &[i64]) -> f64 {
    let n = a.len().max(b.len());
    let dim = |s: &[i64], i: usize| -> f64 {
        // The i-th dim from the right.
        let d = if i < s.len() { s[s.len() - 1 - i] } else { 1 };
        d.max(1) as f64
    };
    (0..n).map(|i| (dim(a, i) / dim(b, i)).ln().abs()).sum()
}

fn same_fused(a: &[String], b: &[String]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.eq_ignore_ascii_case(y))
}

fn formats_differ(a: &OpDescriptor, b: &OpDescriptor) -> bool {
    let pairs = |x: &[TensorDesc], y: &[TensorDesc]| {
        x.iter()
            .zip(y)
            .any(|(s, t)| s.format != t.format || s.ori_format != t.ori_format)
    };
    pairs(&a.inputs, &b.inputs) || pairs(&a.outputs, &b.outputs)
}
