//! The Ascend IR ops of detection and mobile networks that ATC makes of Caffe layers with no
//! ONNX twin (`PriorBox`, `SSDDetectionOutput`, `NormalizeSum`/`NormalizeScale`, `Upsample`,
//! `ShuffleChannel`, `Reorg`, `Crop`, `TileWithAxis`, `ArgMaxWithK`, `Reduction`,
//! `ROIPooling`, `PSROIPooling`, `Yolo`, `FlattenV2`, and the interpolation `Interp` as
//! `ResizeBilinearV2`). Each output shape follows the framework's own definition (Caffe's
//! layer `Reshape`, or CANN's op prototype where ATC fixes a data-dependent Caffe shape),
//! cited per function.

use super::Ctx;
use crate::graph::ElemType;
use crate::infer::attrs::Attrs;
use crate::infer::error::InferError;
use crate::infer::shape::{info, input, norm_axis, product};
use crate::infer::TensorInfo;
use tunebank_key::AttrValue;

/// Integer attribute `name`, `default` when absent.
fn int(attrs: &Attrs, name: &str, default: i64) -> i64 {
    match attrs.get(name) {
        Some(AttrValue::Int(v)) => *v,
        _ => default,
    }
}

/// Float-list attribute `name` (empty when absent).
fn floats(attrs: &Attrs, name: &str) -> Vec<f64> {
    match attrs.get(name) {
        Some(AttrValue::Floats(v)) => v.clone(),
        Some(AttrValue::Float(v)) => vec![*v],
        _ => Vec::new(),
    }
}

/// Input `i` as N,C,H,W.
fn nchw(cx: &Ctx<'_>, i: usize, op: &'static str) -> Result<[i64; 4], InferError> {
    let x = input(cx.ins, i)?;
    <[i64; 4]>::try_from(x.shape.as_slice()).map_err(|_| InferError::Invalid {
        op,
        reason: format!("input {i} has shape {:?}: expected N,C,H,W", x.shape),
    })
}

fn invalid(op: &'static str, reason: String) -> InferError {
    InferError::Invalid { op, reason }
}

/// Caffe `PriorBox` (SSD): one box per cell of the feature map (input 0, N,C,H,W) per prior:
/// the aspect ratios are 1, then each `aspect_ratio` not yet listed (within 1e-6) and, with
/// `flip`, its inverse; a prior per ratio and `min_size`, plus one per `max_size`. The output
/// is `[1, 2, H·W·priors·4]` (boxes and variances), as Caffe's `PriorBoxLayer::Reshape`.
pub(super) fn prior_box(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    const OP: &str = "PriorBox";
    let [_, _, h, w] = nchw(cx, 0, OP)?;
    let min = floats(attrs, "min_size");
    let max = floats(attrs, "max_size");
    if min.is_empty() || min.iter().any(|&m| m <= 0.0) {
        return Err(invalid(
            OP,
            format!("min_size {min:?}: expected one or more positive sizes"),
        ));
    }
    if !max.is_empty() && (max.len() != min.len() || max.iter().zip(&min).any(|(a, b)| a <= b)) {
        return Err(invalid(
            OP,
            format!("max_size {max:?}: expected one per min_size {min:?}, each larger"),
        ));
    }
    let flip = int(attrs, "flip", 1) != 0;
    let mut ratios = vec![1.0f64];
    for &ar in &floats(attrs, "aspect_ratio") {
        if ar <= 0.0 {
            return Err(invalid(
                OP,
                format!("aspect_ratio {ar}: expected positive ratios"),
            ));
        }
        if ratios.iter().any(|&r| (r - ar).abs() < 1e-6) {
            continue;
        }
        ratios.push(ar);
        if flip {
            ratios.push(1.0 / ar);
        }
    }
    let priors = (ratios.len() * min.len() + max.len()) as i64;
    let len = product(&[h, w, priors, 4])?;
    Ok(vec![info(ElemType::FLOAT, vec![1, 2, len])])
}

/// `SSDDetectionOutput` (Caffe `DetectionOutput`): inputs loc `[N, boxes·4]`, conf and the
/// priors. Caffe's output holds as many rows as detections survive, which ATC fixes: CANN's
/// prototype gives the box count `[N, 8]` and the boxes `[N, keep_top_k, 8]`, `keep_top_k`
/// -1 meaning 1024.
pub(super) fn ssd_detection_output(
    cx: &Ctx<'_>,
    attrs: &mut Attrs,
) -> Result<Vec<TensorInfo>, InferError> {
    const OP: &str = "SSDDetectionOutput";
    let loc = input(cx.ins, 0)?;
    for i in 1..3 {
        input(cx.ins, i)?;
    }
    let Some(&n) = loc.shape.first() else {
        return Err(invalid(
            OP,
            "a scalar loc input: expected [N, boxes·4]".into(),
        ));
    };
    if int(attrs, "num_classes", 0) < 1 {
        return Err(invalid(
            OP,
            "num_classes: expected a positive class count".into(),
        ));
    }
    let keep = match int(attrs, "keep_top_k", -1) {
        -1 => 1024,
        k if k > 0 => k,
        k => {
            return Err(invalid(
                OP,
                format!("keep_top_k {k}: expected -1 or a positive count"),
            ))
        }
    };
    Ok(vec![
        info(ElemType::INT32, vec![n, 8]),
        info(loc.elem_type, vec![n, keep, 8]),
    ])
}

/// `NormalizeSum` (the first half of Caffe `Normalize`, as GE splits it): the sum of squares
/// per sample (`across_spatial`, `[N,1,1,1]`) or per position (`[N,1,H,W]`).
pub(super) fn normalize_sum(
    cx: &Ctx<'_>,
    attrs: &mut Attrs,
) -> Result<Vec<TensorInfo>, InferError> {
    let [n, _, h, w] = nchw(cx, 0, "NormalizeSum")?;
    let x = input(cx.ins, 0)?;
    let shape = if int(attrs, "across_spatial", 1) != 0 {
        vec![n, 1, 1, 1]
    } else {
        vec![n, 1, h, w]
    };
    Ok(vec![info(x.elem_type, shape)])
}

/// `NormalizeScale` (the second half of Caffe `Normalize`): input 0 scaled by its norm (input
/// 2) and the per-channel or shared scale (input 1: `[C]`, or `[1]` with `channel_shared`).
pub(super) fn normalize_scale(
    cx: &Ctx<'_>,
    attrs: &mut Attrs,
) -> Result<Vec<TensorInfo>, InferError> {
    const OP: &str = "NormalizeScale";
    let [_, c, _, _] = nchw(cx, 0, OP)?;
    let scale = input(cx.ins, 1)?;
    let want = if int(attrs, "channel_shared", 1) != 0 {
        1
    } else {
        c
    };
    if scale.shape.iter().product::<i64>() != want {
        return Err(invalid(
            OP,
            format!("scale of shape {:?}: expected {want} value(s)", scale.shape),
        ));
    }
    input(cx.ins, 2)?;
    Ok(vec![info(
        input(cx.ins, 0)?.elem_type,
        input(cx.ins, 0)?.shape.clone(),
    )])
}

/// `Upsample` (Caffe `Upsample`, ATC's schema): H and W times `stride_h`/`stride_w`.
pub(super) fn upsample(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    const OP: &str = "Upsample";
    let [n, c, h, w] = nchw(cx, 0, OP)?;
    let (sh, sw) = (int(attrs, "stride_h", 2), int(attrs, "stride_w", 2));
    if sh < 1 || sw < 1 {
        return Err(invalid(
            OP,
            format!("strides {sh}×{sw}: expected positive strides"),
        ));
    }
    Ok(vec![info(
        input(cx.ins, 0)?.elem_type,
        vec![n, c, product(&[h, sh])?, product(&[w, sw])?],
    )])
}

/// Caffe `Interp` as `ResizeBilinearV2` (align_corners): the output size is input 1's H and W
/// when there is one, else `height`/`width` when given, else the padded input (`pad_beg`, `pad_end`) shrunk then zoomed:
/// `(s - 1) / shrink + 1`, then `s + (s - 1)(zoom - 1)`, as Caffe's `InterpLayer::Reshape`
/// (PSPNet's Caffe). The Caffe parameters are replaced by the `size` they give.
pub(super) fn interp(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    const OP: &str = "Interp";
    let [n, c, h, w] = nchw(cx, 0, OP)?;
    let (zoom, shrink) = (int(attrs, "zoom_factor", 1), int(attrs, "shrink_factor", 1));
    let pads = int(attrs, "pad_beg", 0) + int(attrs, "pad_end", 0);
    let (ho, wo) = (int(attrs, "height", 0), int(attrs, "width", 0));
    if zoom < 1 || shrink < 1 || pads > 0 {
        return Err(invalid(
            OP,
            format!(
                "zoom_factor {zoom}, shrink_factor {shrink}, pad_beg + pad_end {pads}: expected factors of at least 1 and pads of at most 0"
            ),
        ));
    }
    let size = |s: i64| {
        let mut s = s + pads;
        if shrink > 1 {
            s = (s - 1) / shrink + 1;
        }
        if zoom > 1 {
            s += (s - 1) * (zoom - 1);
        }
        s
    };
    let reference = match crate::infer::shape::opt_input(cx.ins, 1) {
        Some(r) => match (r.shape.as_slice(), r.value.as_deref()) {
            // Caffe's reference blob, or TensorFlow's size vector (new height, width).
            ([_, _, rh, rw], _) => Some((*rh, *rw)),
            ([2], Some([sh, sw])) => Some((*sh, *sw)),
            (s, _) => {
                return Err(invalid(
                    OP,
                    format!("input 1 of shape {s:?}: expected N,C,H,W to take H and W from, or the known (height, width)"),
                ))
            }
        },
        None => None,
    };
    let (oh, ow) = if let Some(size) = reference {
        size
    } else if ho > 0 && wo > 0 {
        (ho, wo)
    } else {
        (size(h), size(w))
    };
    if oh < 1 || ow < 1 {
        return Err(invalid(
            OP,
            format!("output size {oh}×{ow}: expected positive"),
        ));
    }
    for k in [
        "zoom_factor",
        "shrink_factor",
        "pad_beg",
        "pad_end",
        "height",
        "width",
    ] {
        attrs.remove(k);
    }
    attrs.insert("size".into(), AttrValue::Ints(vec![oh, ow]));
    // Caffe's Interp aligns corners; TensorFlow's resize ops say how they align.
    attrs
        .entry("align_corners".into())
        .or_insert(AttrValue::Bool(true));
    attrs
        .entry("half_pixel_centers".into())
        .or_insert(AttrValue::Bool(false));
    Ok(vec![info(input(cx.ins, 0)?.elem_type, vec![n, c, oh, ow])])
}

/// `ShuffleChannel`: the input's shape; its channels must split into `group` groups.
pub(super) fn shuffle_channel(
    cx: &Ctx<'_>,
    attrs: &mut Attrs,
) -> Result<Vec<TensorInfo>, InferError> {
    const OP: &str = "ShuffleChannel";
    let x = input(cx.ins, 0)?;
    let g = int(attrs, "group", 1);
    match x.shape.get(1) {
        Some(&c) if g >= 1 && c % g == 0 => Ok(vec![info(x.elem_type, x.shape.clone())]),
        _ => Err(invalid(
            OP,
            format!(
                "group {g} on shape {:?}: expected channels divisible by the group",
                x.shape
            ),
        )),
    }
}

/// Caffe `Reorg` (YOLOv2's passthrough): `[N, C·s², H/s, W/s]`, or with `reverse` the inverse
/// `[N, C/s², H·s, W·s]`; the divided dims must divide.
pub(super) fn reorg(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    const OP: &str = "Reorg";
    let [n, c, h, w] = nchw(cx, 0, OP)?;
    let s = int(attrs, "stride", 2);
    let s2 = product(&[s, s])?;
    let shape = if int(attrs, "reverse", 0) != 0 {
        (s >= 1 && c % s2 == 0).then(|| vec![n, c / s2, h * s, w * s])
    } else {
        (s >= 1 && h % s == 0 && w % s == 0).then(|| vec![n, c * s2, h / s, w / s])
    };
    let shape = shape.ok_or_else(|| {
        invalid(
            OP,
            format!(
                "stride {s} on N,C,H,W {:?}: expected dims that divide",
                [n, c, h, w]
            ),
        )
    })?;
    Ok(vec![info(input(cx.ins, 0)?.elem_type, shape)])
}

/// Caffe `Crop`: input 0 cut to input 1's dims from `axis` on (earlier dims kept), each
/// cropped dim shifted by its `offsets` entry (one for all, or one per cropped dim), which must
/// fit.
pub(super) fn crop(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    const OP: &str = "Crop";
    let (x, r) = (input(cx.ins, 0)?, input(cx.ins, 1)?);
    if x.shape.len() != r.shape.len() {
        return Err(invalid(
            OP,
            format!(
                "inputs {:?} and {:?}: expected the same rank",
                x.shape, r.shape
            ),
        ));
    }
    let axis = norm_axis(int(attrs, "axis", 2), x.shape.len())?;
    attrs.insert("axis".into(), AttrValue::Int(axis as i64));
    let offsets = match attrs.get("offsets") {
        Some(AttrValue::Ints(v)) => v.clone(),
        _ => Vec::new(),
    };
    let cropped = x.shape.len() - axis;
    if !(offsets.is_empty() || offsets.len() == 1 || offsets.len() == cropped) {
        return Err(invalid(
            OP,
            format!(
                "{} offsets: expected 1 or {cropped} (one per cropped dim)",
                offsets.len()
            ),
        ));
    }
    let mut shape = x.shape[..axis].to_vec();
    for d in axis..x.shape.len() {
        let off = match offsets.len() {
            0 => 0,
            1 => offsets[0],
            _ => offsets[d - axis],
        };
        if off < 0 || off + r.shape[d] > x.shape[d] {
            return Err(invalid(
                OP,
                format!(
                    "dim {d}: offset {off} + size {} exceeds {} of input 0",
                    r.shape[d], x.shape[d]
                ),
            ));
        }
        shape.push(r.shape[d]);
    }
    Ok(vec![info(x.elem_type, shape)])
}

/// `TileWithAxis` (Caffe `Tile`): dim `axis` times `tiles`.
pub(super) fn tile_with_axis(
    cx: &Ctx<'_>,
    attrs: &mut Attrs,
) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    let axis = norm_axis(int(attrs, "axis", 1), x.shape.len())?;
    attrs.insert("axis".into(), AttrValue::Int(axis as i64));
    let tiles = int(attrs, "tiles", 0);
    if tiles < 1 {
        return Err(invalid(
            "TileWithAxis",
            format!("tiles {tiles}: expected at least 1"),
        ));
    }
    let mut shape = x.shape.clone();
    shape[axis] = product(&[shape[axis], tiles])?;
    Ok(vec![info(x.elem_type, shape)])
}

/// `ArgMaxWithK` (Caffe `ArgMax`): with `axis`, that dim becomes `top_k`; without, each sample
/// is flattened and the output is `[N, 1 or 2 (out_max_val), top_k]`, as Caffe's
/// `ArgMaxLayer::Reshape`. `top_k` must not exceed what it selects from.
pub(super) fn arg_max_with_k(
    cx: &Ctx<'_>,
    attrs: &mut Attrs,
) -> Result<Vec<TensorInfo>, InferError> {
    const OP: &str = "ArgMaxWithK";
    let x = input(cx.ins, 0)?;
    let k = int(attrs, "topk", 1);
    let r = x.shape.len();
    let (shape, from) = match attrs.get("axis") {
        Some(AttrValue::Int(a)) => {
            let a = norm_axis(*a, r)?;
            let mut s = x.shape.clone();
            s[a] = k;
            attrs.insert("axis".into(), AttrValue::Int(a as i64));
            (s, x.shape[a])
        }
        _ => {
            let Some((&n, rest)) = x.shape.split_first() else {
                return Err(invalid(
                    OP,
                    "a scalar input: expected N and more dims".into(),
                ));
            };
            let pairs = 1 + i64::from(int(attrs, "out_max_val", 0) != 0);
            (vec![n, pairs, k], product(rest)?)
        }
    };
    if k < 1 || k > from {
        return Err(invalid(OP, format!("top_k {k}: expected 1 to {from}")));
    }
    Ok(vec![info(ElemType::FLOAT, shape)])
}

/// `Reduction` (Caffe): every dim from `axis` on reduced away (`axis` 0: a scalar).
pub(super) fn reduction(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    let axis = norm_axis(int(attrs, "axis", 0), x.shape.len())?;
    attrs.insert("axis".into(), AttrValue::Int(axis as i64));
    Ok(vec![info(x.elem_type, x.shape[..axis].to_vec())])
}

/// Rows of a Caffe ROI input (`[R, 5]`, or `[R, 5, 1, 1]`).
fn rois(cx: &Ctx<'_>, op: &'static str) -> Result<i64, InferError> {
    let r = input(cx.ins, 1)?;
    match r.shape.as_slice() {
        [n, 5] | [n, 5, 1, 1] => Ok(*n),
        s => Err(invalid(op, format!("rois of shape {s:?}: expected [R, 5]"))),
    }
}

/// `ROIPooling`: `[R, C, pooled_h, pooled_w]`.
pub(super) fn roi_pooling(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    const OP: &str = "ROIPooling";
    let [_, c, _, _] = nchw(cx, 0, OP)?;
    let r = rois(cx, OP)?;
    let (ph, pw) = (int(attrs, "pooled_h", 0), int(attrs, "pooled_w", 0));
    if ph < 1 || pw < 1 {
        return Err(invalid(
            OP,
            format!("pooled {ph}×{pw}: expected a positive size"),
        ));
    }
    Ok(vec![info(input(cx.ins, 0)?.elem_type, vec![r, c, ph, pw])])
}

/// `PSROIPooling`: `[R, output_dim, group_size, group_size]`; the input's channels must be
/// `output_dim · group_size²`.
pub(super) fn psroi_pooling(
    cx: &Ctx<'_>,
    attrs: &mut Attrs,
) -> Result<Vec<TensorInfo>, InferError> {
    const OP: &str = "PSROIPooling";
    let [_, c, _, _] = nchw(cx, 0, OP)?;
    let r = rois(cx, OP)?;
    let (d, g) = (int(attrs, "output_dim", 0), int(attrs, "group_size", 0));
    if d < 1 || g < 1 || product(&[d, g, g])? != c {
        return Err(invalid(
            OP,
            format!("output_dim {d}, group_size {g}: expected positive values with output_dim·group_size² = {c} channels"),
        ));
    }
    Ok(vec![info(input(cx.ins, 0)?.elem_type, vec![r, d, g, g])])
}

/// `Yolo` (Caffe `Yolo`, and `Region` as YOLOv2): input `[N, boxes·(coords+1+classes), H, W]`
/// split into coordinates `[N, boxes·coords, H·W]`, objectness `[N, boxes·H·W]` and classes
/// `[N, classes, boxes·H·W]`, as CANN's `Yolo` prototype.
pub(super) fn yolo(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    const OP: &str = "Yolo";
    let [n, c, h, w] = nchw(cx, 0, OP)?;
    let (boxes, coords, classes) = (
        int(attrs, "boxes", 3),
        int(attrs, "coords", 4),
        int(attrs, "classes", 80),
    );
    if boxes < 1 || coords < 1 || classes < 1 || product(&[boxes, coords + 1 + classes])? != c {
        return Err(invalid(
            OP,
            format!("boxes {boxes}, coords {coords}, classes {classes}: expected boxes·(coords+1+classes) = {c} channels"),
        ));
    }
    let t = input(cx.ins, 0)?.elem_type;
    let hw = product(&[h, w])?;
    Ok(vec![
        info(t, vec![n, boxes * coords, hw]),
        info(t, vec![n, product(&[boxes, hw])?]),
        info(t, vec![n, classes, product(&[boxes, hw])?]),
    ])
}

/// `FlattenV2` (Caffe `Flatten` with any `axis`/`end_axis`): dims `axis..=end_axis` made one,
/// the others kept, as Caffe's `FlattenLayer::Reshape`.
pub(super) fn flatten_v2(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    let r = x.shape.len();
    let a = norm_axis(int(attrs, "axis", 1), r)?;
    let e = norm_axis(int(attrs, "end_axis", -1), r)?;
    if e < a {
        return Err(invalid(
            "FlattenV2",
            format!("end_axis {e} before axis {a}"),
        ));
    }
    attrs.insert("axis".into(), AttrValue::Int(a as i64));
    attrs.insert("end_axis".into(), AttrValue::Int(e as i64));
    let mut shape = x.shape[..a].to_vec();
    shape.push(product(&x.shape[a..=e])?);
    shape.extend_from_slice(&x.shape[e + 1..]);
    Ok(vec![info(x.elem_type, shape)])
}

/// ONNX `Resize` (opset 10+: X, roi, scales, sizes): the output is `sizes` when given, else
/// each dim times its scale, rounded down (ONNX's definition); the constant scales come from
/// the `scales` attribute the importer reads them into.
pub(super) fn resize(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let op = "Resize";
    let x = crate::infer::shape::input(cx.ins, 0)?;
    let r = x.shape.len();
    let sizes = crate::infer::shape::opt_input(cx.ins, 3);
    let shape: Vec<i64> = match (sizes, floats(attrs, "scales")) {
        (Some(s), _) => match s.value.as_deref() {
            Some(v) if v.len() == r => v.to_vec(),
            _ => {
                return Err(invalid(
                    op,
                    format!("sizes {:?}: expected {r} known values", s.value),
                ))
            }
        },
        (None, sc) if sc.len() == r && sc.iter().all(|&f| f.is_finite() && f > 0.0) => x
            .shape
            .iter()
            .zip(&sc)
            .map(|(&d, &f)| (d as f64 * f).floor() as i64)
            .collect(),
        (None, sc) => {
            return Err(invalid(
                op,
                format!("scales {sc:?}: expected {r} positive constants (or sizes)"),
            ))
        }
    };
    Ok(vec![info(x.elem_type, shape)])
}
