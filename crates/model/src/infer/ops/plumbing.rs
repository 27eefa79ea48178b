//! TensorFlow's shape plumbing as the Ascend IR ops ATC makes of it (`StridedSlice`, `Pack`,
//! `Unpack`, `ConcatOffset`, `BroadcastGradientArgs`, `InvertPermutation`, `Range`, `TopKV2`)
//! and the NCHW space/depth moves (`DepthToSpace`, `SpaceToDepth`): each output shape as
//! TensorFlow's op defines it, and the values of small integer tensors tracked through them,
//! so that a training step's shape arithmetic (`tf.shape(x)[0]`, the gradient of a `Concat`
//! or of a broadcast) folds and everything behind it keeps a static shape.

use super::Ctx;
use crate::graph::ElemType;
use crate::infer::attrs::Attrs;
use crate::infer::error::InferError;
use crate::infer::shape::{const_values, info, input, norm_axis, product};
use crate::infer::{TensorInfo, MAX_DIM};
use tunebank_key::AttrValue;

fn int(attrs: &Attrs, name: &str, default: i64) -> i64 {
    match attrs.get(name) {
        Some(AttrValue::Int(v)) => *v,
        _ => default,
    }
}

fn invalid(op: &'static str, reason: String) -> InferError {
    InferError::Invalid { op, reason }
}

/// A 1-D integer tensor of known values.
fn ints(values: Vec<i64>) -> TensorInfo {
    TensorInfo {
        elem_type: ElemType::INT64,
        shape: vec![values.len() as i64],
        value: Some(values),
    }
}

/// A scalar (`[]`) or 1-D tensor with values, with the values of `t` when it has them.
fn with_values(mut t: TensorInfo, values: Option<Vec<i64>>) -> TensorInfo {
    t.value = values;
    t
}

/// One dim of a strided slice: where it starts, how many elements it keeps, its stride.
struct Span {
    start: i64,
    len: i64,
    stride: i64,
}

/// TensorFlow's `StridedSlice`: `begin`, `end`, `strides` (constant inputs 1–3) over the dims
/// of input 0, with the five masks (`begin_mask`, `end_mask`: that bound is the dim's end;
/// `ellipsis_mask`: that entry stands for every dim the others leave; `new_axis_mask`: a new
/// dim of 1; `shrink_axis_mask`: the one element at `begin`, its dim removed), as
/// TensorFlow's `ValidateStridedSliceOp`. A 1-D input of known values (a shape) is sliced too.
pub(super) fn strided_slice(
    cx: &Ctx<'_>,
    attrs: &mut Attrs,
) -> Result<Vec<TensorInfo>, InferError> {
    const OP: &str = "StridedSlice";
    let x = input(cx.ins, 0)?;
    let begin = const_values(cx.ins, 1, "begin")?;
    let end = const_values(cx.ins, 2, "end")?;
    let strides = const_values(cx.ins, 3, "strides")?;
    let k = begin.len();
    if end.len() != k || strides.len() != k || k > 64 {
        return Err(invalid(
            OP,
            format!("begin {begin:?}, end {end:?}, strides {strides:?}: expected one entry each per sliced dim"),
        ));
    }
    let (shape, spans) = slice_spec(x, &begin, &end, &strides, attrs)?;
    for m in [
        "begin_mask",
        "end_mask",
        "ellipsis_mask",
        "new_axis_mask",
        "shrink_axis_mask",
    ] {
        attrs.entry(m.into()).or_insert(AttrValue::Int(0));
    }
    // The values of a sliced shape vector.
    let value = match (&x.value, x.shape.len(), spans.first()) {
        (Some(v), 1, Some(Some(sp))) if sp.len >= 0 => (0..sp.len)
            .map(|j| {
                let at = sp.start + j * sp.stride;
                usize::try_from(at).ok().and_then(|a| v.get(a).copied())
            })
            .collect::<Option<Vec<i64>>>(),
        (Some(v), 1, Some(None)) => Some(v.clone()),
        _ => None,
    };
    Ok(vec![with_values(info(x.elem_type, shape), value)])
}

/// The output shape of a `StridedSlice` and, per input dim, the span it keeps (`None`: all of
/// it): TensorFlow's dense spec of the sparse one the masks describe.
fn slice_spec(
    x: &TensorInfo,
    begin: &[i64],
    end: &[i64],
    strides: &[i64],
    attrs: &Attrs,
) -> Result<(Vec<i64>, Vec<Option<Span>>), InferError> {
    const OP: &str = "StridedSlice";
    let k = begin.len();
    let mask = |name: &str| int(attrs, name, 0);
    let (bm, em, ellipsis, new_axis, shrink) = (
        mask("begin_mask"),
        mask("end_mask"),
        mask("ellipsis_mask"),
        mask("new_axis_mask"),
        mask("shrink_axis_mask"),
    );
    let bit = |m: i64, i: usize| m >> i & 1 == 1;
    if ellipsis.count_ones() > 1 {
        return Err(invalid(
            OP,
            format!("ellipsis_mask {ellipsis}: expected at most one ellipsis"),
        ));
    }
    let r = x.shape.len();
    // Dims of the input the spec names, the ellipsis aside.
    let named = (0..k)
        .filter(|&i| !bit(ellipsis, i) && !bit(new_axis, i))
        .count();
    if named > r {
        return Err(invalid(
            OP,
            format!("{named} sliced dims on an input of rank {r}"),
        ));
    }
    let mut shape = Vec::new();
    let mut spans: Vec<Option<Span>> = Vec::new(); // per input dim, None: kept whole
    let mut dim = 0usize;
    let whole = |dim: &mut usize, shape: &mut Vec<i64>, spans: &mut Vec<Option<Span>>| {
        shape.push(x.shape[*dim]);
        spans.push(None);
        *dim += 1;
    };
    for i in 0..k {
        if bit(ellipsis, i) {
            for _ in 0..r - named {
                whole(&mut dim, &mut shape, &mut spans);
            }
            continue;
        }
        if bit(new_axis, i) {
            shape.push(1);
            continue;
        }
        let d = x.shape[dim];
        let s = strides[i];
        if s == 0 {
            return Err(invalid(OP, format!("stride 0 at entry {i}")));
        }
        if bit(shrink, i) {
            let b = if begin[i] < 0 && d >= 0 {
                begin[i] + d
            } else {
                begin[i]
            };
            if d >= 0 && !(0..d).contains(&b) {
                return Err(invalid(
                    OP,
                    format!("entry {i}: index {} out of dim {d}", begin[i]),
                ));
            }
            spans.push(Some(Span {
                start: b,
                len: 1,
                stride: 1,
            }));
            dim += 1;
            continue;
        }
        if d < 0 {
            shape.push(-1);
            spans.push(Some(Span {
                start: 0,
                len: -1,
                stride: s,
            }));
            dim += 1;
            continue;
        }
        let Span { start: b, len, .. } = span(d, begin[i], end[i], s, bit(bm, i), bit(em, i));
        shape.push(len);
        spans.push(Some(Span {
            start: b,
            len,
            stride: s,
        }));
        dim += 1;
    }
    while dim < r {
        whole(&mut dim, &mut shape, &mut spans);
    }
    Ok((shape, spans))
}

/// The span a strided slice keeps of a dim of size `d` (known): TensorFlow's clamping of
/// `begin` and `end` (negative ones from the end; masked ones the dim's end for the stride's
/// direction) and the element count at stride `s`.
fn span(d: i64, begin: i64, end: i64, s: i64, begin_masked: bool, end_masked: bool) -> Span {
    let fix = |v: i64| if v < 0 { v + d } else { v };
    let (lo, hi) = if s > 0 { (0, d) } else { (-1, d - 1) };
    let b = match (begin_masked, s > 0) {
        (true, true) => 0,
        (true, false) => d - 1,
        _ => fix(begin).clamp(lo, hi),
    };
    let e = match (end_masked, s > 0) {
        (true, true) => d,
        (true, false) => -1,
        _ => fix(end).clamp(lo, hi),
    };
    let len = if s > 0 {
        if e > b {
            (e - b - 1) / s + 1
        } else {
            0
        }
    } else if b > e {
        (b - e - 1) / (-s) + 1
    } else {
        0
    };
    Span {
        start: b,
        len,
        stride: s,
    }
}

/// TensorFlow's `Pack` (`tf.stack`): the inputs, all of one shape, stacked along a new dim
/// `axis` (of rank + 1); scalars of known values pack into a vector of them.
pub(super) fn pack(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    const OP: &str = "Pack";
    let n = cx.ins.len();
    let first = input(cx.ins, 0)?;
    for i in 1..n {
        let t = input(cx.ins, i)?;
        if t.shape != first.shape {
            return Err(invalid(
                OP,
                format!(
                    "input {i} of shape {:?}: expected {:?} like input 0",
                    t.shape, first.shape
                ),
            ));
        }
    }
    let axis = norm_axis(int(attrs, "axis", 0), first.shape.len() + 1)?;
    attrs.insert("axis".into(), AttrValue::Int(axis as i64));
    attrs.insert("N".into(), AttrValue::Int(n as i64));
    let mut shape = first.shape.clone();
    shape.insert(axis, n as i64);
    let value = if first.shape.is_empty() {
        (0..n)
            .map(|i| {
                input(cx.ins, i)
                    .ok()
                    .and_then(|t| t.value.as_ref().and_then(|v| v.first().copied()))
            })
            .collect::<Option<Vec<i64>>>()
    } else {
        None
    };
    Ok(vec![with_values(info(first.elem_type, shape), value)])
}

/// TensorFlow's `Unpack` (`tf.unstack`): `num` outputs, dim `axis` removed; a vector of
/// known values unpacks into its scalars.
pub(super) fn unpack(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    let axis = norm_axis(int(attrs, "axis", 0), x.shape.len())?;
    attrs.insert("axis".into(), AttrValue::Int(axis as i64));
    let n = x.shape[axis];
    if !(0..=4096).contains(&n) {
        return Err(invalid(
            "Unpack",
            format!(
                "dim {axis} of {:?}: expected a static count of at most 4096",
                x.shape
            ),
        ));
    }
    attrs.insert("num".into(), AttrValue::Int(n));
    let mut shape = x.shape.clone();
    shape.remove(axis);
    Ok((0..n as usize)
        .map(|i| {
            let v = x
                .value
                .as_ref()
                .filter(|_| x.shape.len() == 1)
                .and_then(|v| v.get(i).map(|&e| vec![e]));
            with_values(info(x.elem_type, shape.clone()), v)
        })
        .collect())
}

/// TensorFlow's `ConcatOffset` (the gradient of a `Concat`): input 0 the concat dim, then
/// the N input shapes; output i is where input i starts (the earlier inputs' sizes along the
/// dim summed, 0 elsewhere).
pub(super) fn concat_offset(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    const OP: &str = "ConcatOffset";
    let dim = const_values(cx.ins, 0, "concat_dim")?;
    let shapes: Vec<Vec<i64>> = (1..cx.ins.len())
        .map(|i| const_values(cx.ins, i, "shape"))
        .collect::<Result<_, _>>()?;
    let Some(first) = shapes.first() else {
        return Err(invalid(
            OP,
            "no shape inputs: expected the concatenated shapes".into(),
        ));
    };
    let d = norm_axis(*dim.first().unwrap_or(&0), first.len())?;
    let mut at = 0i64;
    let mut out = Vec::with_capacity(shapes.len());
    for s in &shapes {
        if s.len() != first.len() {
            return Err(invalid(OP, format!("shapes {shapes:?}: expected one rank")));
        }
        let mut o = vec![0; s.len()];
        o[d] = at;
        at = at
            .checked_add(s[d])
            .filter(|v| *v <= MAX_DIM)
            .ok_or(InferError::Overflow {
                what: "a ConcatOffset offset",
            })?;
        out.push(ints(o));
    }
    Ok(out)
}

/// TensorFlow's `BroadcastGradientArgs`: for shapes s0, s1 (known values), the dims each
/// input's gradient is summed over: the shorter shape padded with leading 1s, a dim where an
/// input has 1 (and the broadcast result may not) is reduced for it, as TensorFlow's `BCast`.
pub(super) fn broadcast_gradient_args(
    cx: &Ctx<'_>,
    _: &mut Attrs,
) -> Result<Vec<TensorInfo>, InferError> {
    let s0 = const_values(cx.ins, 0, "s0")?;
    let s1 = const_values(cx.ins, 1, "s1")?;
    let n = s0.len().max(s1.len());
    let pad = |s: &[i64]| -> Vec<i64> {
        let mut v = vec![1; n - s.len()];
        v.extend_from_slice(s);
        v
    };
    let (a, b) = (pad(&s0), pad(&s1));
    let (mut r0, mut r1) = (Vec::new(), Vec::new());
    for i in 0..n {
        match (a[i], b[i]) {
            (1, 1) => {
                r0.push(i as i64);
                r1.push(i as i64);
            }
            (1, _) => r0.push(i as i64),
            (_, 1) => r1.push(i as i64),
            (x, y) if x == y => {}
            (x, y) => {
                return Err(invalid(
                    "BroadcastGradientArgs",
                    format!("shapes {s0:?} and {s1:?} do not broadcast (dim {i}: {x} against {y})"),
                ))
            }
        }
    }
    Ok(vec![ints(r0), ints(r1)])
}

/// TensorFlow's `InvertPermutation`: the inverse of a permutation of known values.
pub(super) fn invert_permutation(
    cx: &Ctx<'_>,
    _: &mut Attrs,
) -> Result<Vec<TensorInfo>, InferError> {
    let p = const_values(cx.ins, 0, "permutation")?;
    let mut inv = vec![-1; p.len()];
    for (i, &v) in p.iter().enumerate() {
        match usize::try_from(v)
            .ok()
            .filter(|&v| v < p.len() && inv[v] < 0)
        {
            Some(v) => inv[v] = i as i64,
            None => {
                return Err(invalid(
                    "InvertPermutation",
                    format!("{p:?}: expected a permutation of 0..{}", p.len()),
                ))
            }
        }
    }
    Ok(vec![ints(inv)])
}

/// `Range` (TensorFlow's and ONNX's): scalars start, limit, delta of known values give
/// `ceil((limit - start) / delta)` elements (values kept when few).
pub(super) fn range(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let scalar = |i, what| -> Result<i64, InferError> {
        const_values(cx.ins, i, what)?
            .first()
            .copied()
            .ok_or(InferError::NotConstant { index: i, what })
    };
    let (start, limit, delta) = (
        scalar(0, "start")?,
        scalar(1, "limit")?,
        scalar(2, "delta")?,
    );
    if delta == 0 {
        return Err(invalid("Range", "delta 0".into()));
    }
    let span = limit - start;
    let n = if (span > 0) == (delta > 0) && span != 0 {
        (span.abs() + delta.abs() - 1) / delta.abs()
    } else {
        0
    };
    let t = input(cx.ins, 0)?.elem_type;
    let values = (n <= 4096).then(|| (0..n).map(|i| start + i * delta).collect());
    Ok(vec![with_values(info(t, vec![n]), values)])
}

/// `TopKV2`: the last dim becomes `k` (a constant input 1, at most the dim) for the values and
/// the indices.
pub(super) fn top_k(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    let k = *const_values(cx.ins, 1, "k")?.first().unwrap_or(&-1);
    let Some(&last) = x.shape.last() else {
        return Err(invalid(
            "TopKV2",
            "a scalar input: expected at least one dim".into(),
        ));
    };
    if k < 0 || (last >= 0 && k > last) {
        return Err(invalid("TopKV2", format!("k {k}: expected 0 to {last}")));
    }
    let mut shape = x.shape.clone();
    *shape.last_mut().expect("checked") = k;
    Ok(vec![
        info(x.elem_type, shape.clone()),
        info(ElemType::INT32, shape),
    ])
}

/// `DepthToSpace` / `SpaceToDepth` on an NCHW input (the importer reads NHWC graphs in NCHW):
/// `[N, C/b², H·b, W·b]` and `[N, C·b², H/b, W/b]`; what is divided must divide.
pub(super) fn depth_space(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    let op = if cx.node.op_type == "DepthToSpace" {
        "DepthToSpace"
    } else {
        "SpaceToDepth"
    };
    let [n, c, h, w] = <[i64; 4]>::try_from(x.shape.as_slice())
        .map_err(|_| invalid(op, format!("input {:?}: expected N,C,H,W", x.shape)))?;
    let b = int(attrs, "block_size", 0);
    let b2 = product(&[b, b])?;
    let shape = match op {
        "DepthToSpace" if b >= 2 && c % b2 == 0 => Some(vec![n, c / b2, h * b, w * b]),
        "SpaceToDepth" if b >= 2 && h % b == 0 && w % b == 0 => Some(vec![n, c * b2, h / b, w / b]),
        _ => None,
    };
    let shape = shape.ok_or_else(|| {
        invalid(
            op,
            format!(
                "block_size {b} on N,C,H,W {:?}: expected at least 2, dividing",
                x.shape
            ),
        )
    })?;
    Ok(vec![info(x.elem_type, shape)])
}

/// `SpaceToBatchND` / `BatchToSpaceND` with a 2-D block on an NCHW input (the importer reads
/// NHWC graphs in NCHW), TensorFlow's definition: `[N·bh·bw, C, (H+pt+pb)/bh, (W+pl+pr)/bw]`
/// from the paddings, and `[N/(bh·bw), C, H·bh−ct−cb, W·bw−cl−cr]` from the crops; what is
/// divided must divide.
pub(super) fn space_batch(cx: &Ctx<'_>, _attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let op = if cx.node.op_type == "SpaceToBatchND" {
        "SpaceToBatchND"
    } else {
        "BatchToSpaceND"
    };
    let x = input(cx.ins, 0)?;
    let block = const_values(cx.ins, 1, "block_shape")?;
    let pads = const_values(
        cx.ins,
        2,
        if op == "SpaceToBatchND" {
            "paddings"
        } else {
            "crops"
        },
    )?;
    let ([n, c, h, w], [bh, bw], [p0, p1, p2, p3]) = (
        <[i64; 4]>::try_from(x.shape.as_slice())
            .map_err(|_| invalid(op, format!("input {:?}: expected N,C,H,W", x.shape)))?,
        <[i64; 2]>::try_from(block.as_slice()).map_err(|_| {
            invalid(
                op,
                format!("block_shape {block:?}: expected 2 values (height, width)"),
            )
        })?,
        <[i64; 4]>::try_from(pads.as_slice()).map_err(|_| {
            invalid(
                op,
                format!("paddings {pads:?}: expected [[top, bottom], [left, right]]"),
            )
        })?,
    );
    let bb = product(&[bh, bw])?;
    let shape = if bh < 1 || bw < 1 || pads.iter().any(|&p| p < 0) {
        None
    } else if op == "SpaceToBatchND" {
        let (hp, wp) = (h + p0 + p1, w + p2 + p3);
        (hp % bh == 0 && wp % bw == 0).then(|| vec![n * bb, c, hp / bh, wp / bw])
    } else {
        let (hc, wc) = (h * bh - p0 - p1, w * bw - p2 - p3);
        (n % bb == 0 && hc >= 0 && wc >= 0).then(|| vec![n / bb, c, hc, wc])
    };
    let shape = shape.ok_or_else(|| {
        invalid(op, format!("block {block:?}, paddings or crops {pads:?} on N,C,H,W {:?}: expected positive blocks dividing the padded dims", x.shape))
    })?;
    Ok(vec![info(x.elem_type, shape)])
}
