//! Ascend IR: what ATC makes of a framework (ONNX) op before it selects a kernel, so that keys
//! speak the language of AOE, ATC and the real banks (`MatMulV2`, `Conv2D`, `BNInferenceD`,
//! NC1HWC0, FRACTAL_Z …). [`to_ir`] maps a resolved descriptor: the op type and fused op types
//! (ATC's ONNX parser names, [`ONNX_TO_IR`]), the attributes of the ops whose IR attributes
//! differ (MatMul/Gemm transposes, Conv2D and pooling windows in 4-D NCHW form), a constant bias
//! `Add` after a MatMul folded into the MatMul's bias input (ATC's fusion), and the device
//! formats (format selection): Conv2D feature maps NC1HWC0 and weights FRACTAL_Z, pooling and
//! BNInferenceD tensors NC1HWC0, MatMul operands FRACTAL_NZ on SoCs whose cube cannot load ND
//! (on 910B the cube converts ND on the fly and ATC keeps ND). A tensor whose format the
//! template already set (format ≠ original format) is left as it is. The framework names are
//! kept in [`OpDescriptor::origin`] for display; they never enter the key.
//!
//! The mapping is idempotent: an IR descriptor maps to itself.

use std::collections::BTreeMap;

use crate::{AttrValue, DType, Format, GraphNode, OpDescriptor, OpOrigin, TensorDesc};

/// ONNX op type → Ascend IR op type, as ATC's ONNX parser maps them (sorted by ONNX name). A
/// type not listed keeps its name (`Relu`, `Add`, `Gelu` … are spelled alike in both). `MatMul`
/// with an operand of rank above 2 becomes `BatchMatMulV2`, a 5-D `Conv` `Conv3D`.
pub const ONNX_TO_IR: &[(&str, &str)] = &[
    ("AveragePool", "AvgPoolV2"),
    ("BatchNormalization", "BNInferenceD"),
    ("Concat", "ConcatD"),
    ("Conv", "Conv2D"),
    ("ConvTranspose", "Conv2DTranspose"),
    ("Div", "RealDiv"),
    ("Gemm", "MatMulV2"),
    ("LayerNormalization", "LayerNorm"),
    ("MatMul", "MatMulV2"),
    ("MaxPool", "MaxPoolV3"),
    ("ReduceMean", "ReduceMeanD"),
    ("ReduceSum", "ReduceSumD"),
    ("Softmax", "SoftmaxV2"),
    ("Where", "Select"),
];

/// The IR type of one framework op type, given the ranks of the anchor's first two inputs (for
/// MatMul and Conv); `None` when the type keeps its name.
pub fn ir_type(op_type: &str, ranks: (usize, usize)) -> Option<&'static str> {
    let i = ONNX_TO_IR.binary_search_by(|(o, _)| o.cmp(&op_type)).ok()?;
    Some(match (op_type, ranks) {
        ("MatMul", (a, b)) if a > 2 || b > 2 => "BatchMatMulV2",
        ("Conv", (5, _)) => "Conv3D",
        _ => ONNX_TO_IR[i].1,
    })
}

/// The IR form of a resolved descriptor (module docs). The original op type and fused ops go to
/// `origin` when the mapping renames them; an `origin` already set is kept.
pub fn to_ir(d: OpDescriptor) -> OpDescriptor {
    let rank = |i: usize| d.inputs.get(i).map_or(0, |t| t.ori_shape.len());
    let ranks = (rank(0), rank(1));
    let members: Vec<String> = if d.fused_ops.is_empty() {
        vec![d.op_type.clone()]
    } else {
        d.fused_ops.clone()
    };
    let anchor_onnx = d.op_type.clone();
    let mut out = d.clone();
    let anchor = match resize_ir(&mut out) {
        Some(ir) => ir.to_owned(),
        None => ir_type(&anchor_onnx, ranks).map_or_else(|| d.op_type.clone(), str::to_owned),
    };
    out.op_type = anchor.clone();
    let mut kept: Vec<usize> = (0..members.len()).collect();

    match anchor_onnx.as_str() {
        "MatMul" | "Gemm" => {
            matmul_attrs(&mut out);
            if anchor_onnx == "MatMul" && fold_bias_add(&mut out, &members) {
                kept.retain(|&k| k != 1);
            } else if anchor_onnx == "Gemm" {
                squeeze_bias(&mut out);
            }
        }
        "Conv" if anchor == "Conv2D" => window_attrs(&mut out, "kernel_shape", None),
        "Conv2D" if ranks.0 == 4 => conv2d_defaults(&mut out.attrs),
        "MaxPool" | "AveragePool" => window_attrs(&mut out, "kernel_shape", Some("ksize")),
        _ => {}
    }
    if kept.len() < members.len() {
        out.attrs = reindex_member_attrs(&out.attrs, &kept);
    }
    let ir_members: Vec<String> = kept
        .iter()
        .enumerate()
        .map(|(pos, &k)| {
            if pos == 0 {
                anchor.clone()
            } else {
                ir_type(&members[k], (0, 0)).map_or_else(|| members[k].clone(), str::to_owned)
            }
        })
        .collect();
    out.fused_ops = if ir_members.len() > 1 {
        ir_members
    } else {
        Vec::new()
    };
    select_formats(&mut out);
    if out.op_type != d.op_type || out.fused_ops != d.fused_ops {
        out.origin = d.origin.clone().or(Some(OpOrigin {
            op_type: d.op_type.clone(),
            fused_ops: d.fused_ops.clone(),
        }));
    }
    out
}

/// An ONNX `Resize` (opsets 10–13) as ATC's ONNX plugin makes it (CANN's `resize_plugin.cc`):
/// `ResizeNearestNeighborV2` for `mode = nearest` (the default), `ResizeBilinearV2` for
/// `linear`, with inputs x and an int32 `size` of the two output spatial dims, and attributes
/// `half_pixel_centers` (set by `coordinate_transformation_mode = pytorch_half_pixel`) and
/// `align_corners` (set by `align_corners`; every other mode leaves both unset), as integers.
/// The IR ops themselves, as the TensorFlow, Caffe (`Interp`) and MindIR importers write them,
/// take the same form: x and the int32 `size` (Caffe's reference blob is only where H and W came
/// from; the output shape holds them), the two flags as integers, nothing else — so one resize
/// keys alike from every framework. Rewrites `d` and returns the IR type; `None` (nothing
/// changed) for another op, a `cubic` Resize (ATC refuses it), or one whose x is not 4-D.
fn resize_ir(d: &mut OpDescriptor) -> Option<&'static str> {
    if d.outputs.first()?.ori_shape.len() != 4 {
        return None;
    }
    let flag = |d: &OpDescriptor, name: &str| match d.attrs.get(name) {
        Some(AttrValue::Bool(b)) => *b,
        Some(AttrValue::Int(i)) => *i != 0,
        _ => false,
    };
    let (ir, align_corners, half_pixel_centers) = match d.op_type.as_str() {
        "Resize" => {
            let text = |name: &str, default: &str| match d.attrs.get(name) {
                Some(AttrValue::Str(s)) => s.clone(),
                _ => default.to_owned(),
            };
            let ir = match text("mode", "nearest").as_str() {
                "nearest" => "ResizeNearestNeighborV2",
                "linear" => "ResizeBilinearV2",
                _ => return None,
            };
            let mode = text("coordinate_transformation_mode", "half_pixel");
            (ir, mode == "align_corners", mode == "pytorch_half_pixel")
        }
        _ if !d.fused_ops.is_empty() => return None,
        "ResizeBilinearV2" => (
            "ResizeBilinearV2",
            flag(d, "align_corners"),
            flag(d, "half_pixel_centers"),
        ),
        "ResizeNearestNeighborV2" => (
            "ResizeNearestNeighborV2",
            flag(d, "align_corners"),
            flag(d, "half_pixel_centers"),
        ),
        _ => return None,
    };
    let x = d.inputs.first()?.clone();
    if x.ori_shape.len() != 4 {
        return None;
    }
    let size = TensorDesc {
        shape: vec![2],
        ori_shape: vec![2],
        dtype: DType::Int32,
        format: Format::ND,
        ori_format: Format::ND,
    };
    d.inputs = vec![x, size];
    d.attrs = BTreeMap::from([
        (
            "align_corners".to_owned(),
            AttrValue::Int(i64::from(align_corners)),
        ),
        (
            "half_pixel_centers".to_owned(),
            AttrValue::Int(i64::from(half_pixel_centers)),
        ),
    ]);
    Some(ir)
}

/// MatMul: `transpose_x1`/`transpose_x2` (`adj_x1`/`adj_x2` for BatchMatMulV2), false unless
/// the op states a transpose. Gemm: `transA`/`transB` become those; `alpha` and `beta` are dropped when
/// 1 (ATC's plain MatMulV2) and kept otherwise, so a scaled Gemm never hits a plain MatMul.
fn matmul_attrs(d: &mut OpDescriptor) {
    let (x1, x2) = if d.op_type == "BatchMatMulV2" {
        ("adj_x1", "adj_x2")
    } else {
        ("transpose_x1", "transpose_x2")
    };
    // A transpose the op already states (an IR spelling, or Gemm's transA/transB) is kept.
    let mut flag = |names: [&str; 3]| {
        names.iter().fold(false, |set, n| {
            let v = d.attrs.remove(*n);
            set || matches!(v, Some(AttrValue::Bool(true)) | Some(AttrValue::Int(1)))
        })
    };
    let t1 = flag(["transpose_x1", "adj_x1", "transA"]);
    let t2 = flag(["transpose_x2", "adj_x2", "transB"]);
    for name in ["alpha", "beta"] {
        if matches!(d.attrs.get(name), Some(AttrValue::Float(v)) if *v == 1.0) {
            d.attrs.remove(name);
        }
    }
    d.attrs.insert(x1.into(), AttrValue::Bool(t1));
    d.attrs.insert(x2.into(), AttrValue::Bool(t2));
}

/// Element count of a shape.
fn numel(s: &[i64]) -> i64 {
    s.iter().product()
}

/// The output's last dim (N of a MatMul).
fn out_n(d: &OpDescriptor) -> Option<i64> {
    d.outputs.first().and_then(|o| o.ori_shape.last().copied())
}

/// Reshapes input 2 to `[N]` when it holds exactly N elements (a bias row, `[N]` or `[1, N]`).
fn squeeze_bias(d: &mut OpDescriptor) -> bool {
    let Some(n) = out_n(d) else { return false };
    let Some(b) = d.inputs.get_mut(2) else {
        return false;
    };
    if numel(&b.ori_shape) != n || b.ori_shape.len() > 2 {
        return false;
    }
    b.ori_shape = vec![n];
    b.shape = vec![n];
    b.format = Format::ND;
    b.ori_format = Format::ND;
    true
}

/// A fused `MatMul → Add` whose added operand (input 2) is a bias row: ATC folds the Add into
/// MatMulV2's bias input. Returns whether it folded.
fn fold_bias_add(d: &mut OpDescriptor, members: &[String]) -> bool {
    members.len() >= 2 && members[1] == "Add" && d.inputs.len() == 3 && squeeze_bias(d)
}

/// Member attributes are named `k:name` for the k-th fused member (k ≥ 1); after members are
/// folded away, renumber the kept ones and drop the folded ones' attributes.
fn reindex_member_attrs(
    attrs: &BTreeMap<String, AttrValue>,
    kept: &[usize],
) -> BTreeMap<String, AttrValue> {
    attrs
        .iter()
        .filter_map(|(name, v)| match name.split_once(':') {
            Some((k, rest)) if k.parse::<usize>().is_ok() => {
                let k: usize = k.parse().ok()?;
                let pos = kept.iter().position(|&x| x == k)?;
                Some((format!("{pos}:{rest}"), v.clone()))
            }
            _ => Some((name.clone(), v.clone())),
        })
        .collect()
}

/// Conv2D and pooling attributes in ATC's 4-D form: `strides` and `dilations` `[1, 1, h, w]`
/// (NCHW; `[1, h, w, 1]` NHWC), `pads` `[top, bottom, left, right]` from ONNX's
/// `[top, left, bottom, right]`, `group` → `groups`, `data_format`; the window (`kernel_shape`)
/// is dropped for Conv2D (the weight holds it) and becomes 4-D `ksize` for pooling. A 2-D
/// window's attributes the op leaves to ONNX's defaults are filled first, as ATC's parser
/// fills them: `strides` 1, for Conv `dilations` 1 and `group` 1, and `pads` 0 unless
/// `auto_pad` asks for computed padding; so an op that states a default keys as one that
/// omits it.
fn window_attrs(d: &mut OpDescriptor, kernel: &str, ksize: Option<&str>) {
    let spatial = match d.attrs.get(kernel) {
        Some(AttrValue::Ints(k)) => k.len(),
        _ => d
            .inputs
            .first()
            .map_or(2, |t| t.ori_shape.len().saturating_sub(2)),
    };
    if spatial == 2 {
        let ones = || AttrValue::Ints(vec![1, 1]);
        d.attrs.entry("strides".into()).or_insert_with(ones);
        if ksize.is_none() {
            d.attrs.entry("dilations".into()).or_insert_with(ones);
            if !d.attrs.contains_key("groups") {
                d.attrs.entry("group".into()).or_insert(AttrValue::Int(1));
            }
        }
        if explicit_pads(&d.attrs) {
            d.attrs
                .entry("pads".into())
                .or_insert_with(|| AttrValue::Ints(vec![0; 4]));
        }
    }
    let nhwc = d
        .inputs
        .first()
        .is_some_and(|t| t.ori_format == Format::NHWC);
    let four = |v: &[i64]| -> Vec<i64> {
        if nhwc {
            vec![1, v[0], v[1], 1]
        } else {
            vec![1, 1, v[0], v[1]]
        }
    };
    for name in ["strides", "dilations"] {
        if let Some(AttrValue::Ints(v)) = d.attrs.get(name) {
            if v.len() == 2 {
                let v = four(v);
                d.attrs.insert(name.into(), AttrValue::Ints(v));
            }
        }
    }
    if let Some(AttrValue::Ints(p)) = d.attrs.get("pads") {
        if p.len() == 4 {
            let v = vec![p[0], p[2], p[1], p[3]];
            d.attrs.insert("pads".into(), AttrValue::Ints(v));
        }
    }
    if let Some(g) = d.attrs.remove("group") {
        d.attrs.insert("groups".into(), g);
    }
    match (d.attrs.remove(kernel), ksize) {
        (Some(AttrValue::Ints(k)), Some(to)) if k.len() == 2 => {
            d.attrs.insert(to.into(), AttrValue::Ints(four(&k)));
        }
        (Some(k), Some(_)) => {
            d.attrs.insert(kernel.into(), k);
        }
        _ => {}
    }
    let fmt = if nhwc { "NHWC" } else { "NCHW" };
    d.attrs
        .insert("data_format".into(), AttrValue::Str(fmt.into()));
}

/// An IR Conv2D's attributes left to their defaults, filled in their 4-D form as
/// [`window_attrs`] fills a framework Conv's (`strides`, `dilations` `[1, 1, 1, 1]`, `groups`
/// 1, `pads` `[0, 0, 0, 0]` unless `auto_pad` asks for computed padding): an IR descriptor
/// written before the defaults were filled maps to the key its framework op has now.
fn conv2d_defaults(attrs: &mut BTreeMap<String, AttrValue>) {
    let four = |v| AttrValue::Ints(vec![v; 4]);
    attrs.entry("strides".into()).or_insert_with(|| four(1));
    attrs.entry("dilations".into()).or_insert_with(|| four(1));
    attrs.entry("groups".into()).or_insert(AttrValue::Int(1));
    if explicit_pads(attrs) {
        attrs.entry("pads".into()).or_insert_with(|| four(0));
    }
}

/// A subgraph node's defaulted attributes, filled as [`to_ir`] fills its op's (a Conv2D of
/// 4-D outputs, the attributes `conv2d_defaults` names): a node of a schema-2 subgraph record
/// gets the attributes a node built now has.
pub fn node_defaults(node: &mut GraphNode) {
    if node.op_type == "Conv2D" && node.outputs.first().is_some_and(|t| t.ori_shape.len() == 4) {
        conv2d_defaults(&mut node.attrs);
    }
}

/// Whether the op's padding is the `pads` attribute (ONNX `auto_pad` absent or `NOTSET`), not
/// computed from the shapes.
fn explicit_pads(attrs: &BTreeMap<String, AttrValue>) -> bool {
    match attrs.get("auto_pad") {
        None => true,
        Some(AttrValue::Str(p)) => p == "NOTSET",
        Some(_) => false,
    }
}

/// The device format ATC selects for input `i` (or an output, `i = None`) of an IR op, if it
/// converts that tensor.
fn device_format(op: &str, input: Option<usize>, cube_nd: bool) -> Option<Format> {
    match (op, input) {
        ("Conv2D" | "Conv2DTranspose", Some(1)) => Some(Format::FractalZ),
        ("Conv2D" | "Conv2DTranspose", Some(0) | None) => Some(Format::NC1HWC0),
        ("MaxPoolV3" | "AvgPoolV2" | "BNInferenceD", _) => Some(Format::NC1HWC0),
        ("MatMulV2" | "BatchMatMulV2", Some(0 | 1) | None) if !cube_nd => Some(Format::FractalNz),
        _ => None,
    }
}

/// Applies [`device_format`] to every tensor still in its original format; a tensor the
/// conversion does not fit (a rank or original format it needs) is left as it is.
fn select_formats(d: &mut OpDescriptor) {
    let cube_nd = d.soc.facts().is_none_or(|f| f.cube_nd);
    let op = d.op_type.clone();
    let convert = |t: &mut TensorDesc, to: Format| {
        if t.format != t.ori_format || t.format == to {
            return;
        }
        let fits = match to {
            Format::FractalNz => t.ori_shape.len() >= 2,
            _ => t.ori_shape.len() == 4 && matches!(t.ori_format, Format::NCHW | Format::NHWC),
        };
        if !fits {
            return;
        }
        if let Ok(shape) = layout(&t.ori_shape, t.ori_format, to, t.dtype) {
            t.shape = shape;
            t.format = to;
        }
    };
    for (i, t) in d.inputs.iter_mut().enumerate() {
        if let Some(to) = device_format(&op, Some(i), cube_nd) {
            convert(t, to);
        }
    }
    for t in d.outputs.iter_mut() {
        if let Some(to) = device_format(&op, None, cube_nd) {
            convert(t, to);
        }
    }
}

fn ceil_div(a: i64, b: i64) -> i64 {
    a / b + i64::from(a % b != 0)
}

/// The runtime shape of a tensor laid out in `to`, from its shape `ori` in `from` (C0 is 32 for
/// 8-bit dtypes, else 16). A conversion that does not fit the tensor is an error saying what it
/// needs (an NCHW or NHWC 4-D original shape; a runtime format this knows).
pub(crate) fn layout(
    ori: &[i64],
    from: Format,
    to: Format,
    dtype: DType,
) -> Result<Vec<i64>, &'static str> {
    if from == to {
        return Ok(ori.to_vec());
    }
    let c0 = if matches!(dtype, DType::Int8 | DType::Uint8) {
        32
    } else {
        16
    };
    if to == Format::FractalNz {
        let r = ori.len();
        let (batch, m, n) = match r {
            0 => (&[][..], 1, 1),
            1 => (&[][..], 1, ori[0]),
            _ => (&ori[..r - 2], ori[r - 2], ori[r - 1]),
        };
        let mut s = batch.to_vec();
        s.extend([ceil_div(n, c0), ceil_div(m, 16), 16, c0]);
        return Ok(s);
    }
    let nchw = match (from, ori.len()) {
        (Format::NCHW, 4) => [ori[0], ori[1], ori[2], ori[3]],
        (Format::NHWC, 4) => [ori[0], ori[3], ori[1], ori[2]],
        _ => return Err("an NCHW or NHWC 4-D original shape for this conversion"),
    };
    let [n, c, h, w] = nchw;
    Ok(match to {
        Format::NCHW => vec![n, c, h, w],
        Format::NHWC => vec![n, h, w, c],
        Format::NC1HWC0 => vec![n, ceil_div(c, c0), h, w, c0],
        Format::FractalZ => vec![
            ceil_div(c, c0).saturating_mul(h).saturating_mul(w),
            ceil_div(n, 16),
            16,
            c0,
        ],
        _ => return Err("a runtime format NCHW, NHWC, NC1HWC0, FRACTAL_Z or FRACTAL_NZ"),
    })
}

#[cfg(test)]
#[path = "ir/tests.rs"]
mod tests;
