//! Ops that reshape or cut a tensor while keeping its elements: `Reshape`, `Flatten`,
//! `Unsqueeze`, `Squeeze`, `Concat`, `Split` and `Slice`. Integer values are tracked through
//! them where the result is still known (1-D `Concat` and `Slice`, reshapes), so shape
//! arithmetic folds.

use super::Ctx;
use crate::infer::attrs::{attr_int, attr_ints, normalise_axis, Attrs};
use crate::infer::error::InferError;
use crate::infer::shape::{const_values, info, input, norm_axis, opt_input, product};
use crate::infer::{TensorInfo, MAX_DIM};
use tunebank_key::AttrValue;

/// `Reshape`: the target shape (input from opset 5, attribute before), 0 copying the input's
/// dim (unless `allowzero`) and one -1 inferred from the element count.
pub(super) fn reshape(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    let target = if cx.opset >= 5 {
        const_values(cx.ins, 1, "shape")?
    } else {
        attr_ints(cx.node, "shape").ok_or(InferError::MissingAttr {
            op: "Reshape",
            attr: "shape",
        })?
    };
    let target = caffe_span(x, target, attrs)?;
    let allow_zero = attr_int(cx.node, "allowzero").unwrap_or(0) != 0;
    let mut shape = Vec::with_capacity(target.len());
    let mut infer_at = None;
    for (i, &t) in target.iter().enumerate() {
        shape.push(match t {
            0 if !allow_zero => *x.shape.get(i).ok_or_else(|| InferError::ReshapeCopy {
                target: target.clone(),
                dim: i,
                shape: x.shape.clone(),
            })?,
            -1 if infer_at.is_none() => {
                infer_at = Some(i);
                -1
            }
            t if t >= 0 => t,
            _ => {
                return Err(InferError::ReshapeTarget {
                    target: target.clone(),
                })
            }
        });
    }
    let total = product(&x.shape)?;
    let mismatch = || InferError::Reshape {
        shape: x.shape.clone(),
        target: target.clone(),
    };
    if let Some(i) = infer_at {
        let mut rest = shape.clone();
        rest.remove(i);
        let known = product(&rest)?;
        shape[i] = match (total, known) {
            (-1, _) | (_, -1) => -1,
            (_, 0) => {
                return Err(InferError::ReshapeZero {
                    target: target.clone(),
                })
            }
            (t, k) if t % k != 0 => return Err(mismatch()),
            (t, k) => t / k,
        };
    } else {
        let p = product(&shape)?;
        if total >= 0 && p >= 0 && total != p {
            return Err(mismatch());
        }
    }
    Ok(vec![TensorInfo {
        elem_type: x.elem_type,
        shape,
        value: x.value.clone(),
    }])
}

/// `Flatten`: 2-D, the dims before `axis` times each other, then the rest; `axis` made
/// non-negative (`rank` allowed).
pub(super) fn flatten(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    let r = x.shape.len();
    let axis = attr_int(cx.node, "axis").unwrap_or(1);
    let a = if axis < 0 { axis + r as i64 } else { axis };
    if !(0..=r as i64).contains(&a) {
        return Err(InferError::AxisOutOfRange { axis, rank: r });
    }
    attrs.insert("axis".into(), AttrValue::Int(a));
    let a = a as usize;
    Ok(vec![TensorInfo {
        elem_type: x.elem_type,
        shape: vec![product(&x.shape[..a])?, product(&x.shape[a..])?],
        value: x.value.clone(),
    }])
}

/// `Concat`: the inputs joined along `axis` (made non-negative); a -1 dim takes another
/// input's dim; 1-D values concatenated when all are known.
pub(super) fn concat(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let present: Vec<&TensorInfo> = cx.ins.iter().flatten().collect();
    let first = present.first().ok_or(InferError::NoInput)?;
    let r = first.shape.len();
    let axis = attr_int(cx.node, "axis").ok_or(InferError::MissingAttr {
        op: "Concat",
        attr: "axis",
    })?;
    let axis = norm_axis(axis, r)?;
    attrs.insert("axis".into(), AttrValue::Int(axis as i64));
    let mut shape = first.shape.clone();
    let mut total = 0i64;
    for t in &present {
        if t.shape.len() != r {
            return Err(InferError::ConcatRanks {
                shape: t.shape.clone(),
            });
        }
        total = match (total, t.shape[axis]) {
            (-1, _) | (_, -1) => -1,
            (a, b) => a.checked_add(b).ok_or(InferError::Overflow {
                what: "concat size",
            })?,
        };
        for (d, &v) in shape.iter_mut().zip(&t.shape) {
            if *d < 0 {
                *d = v;
            }
        }
    }
    shape[axis] = total;
    let value = if r == 1 {
        present
            .iter()
            .map(|t| t.value.clone())
            .collect::<Option<Vec<_>>>()
            .map(|v| v.concat())
    } else {
        None
    };
    Ok(vec![TensorInfo {
        elem_type: first.elem_type,
        shape,
        value,
    }])
}

/// The `Split` sizes: the `split` input (opset 13) or attribute, else even parts by
/// `num_outputs` (or the output count), the last one smaller.
fn split_sizes(cx: &Ctx<'_>, dim: i64) -> Result<Vec<i64>, InferError> {
    let n = cx.node.outputs.len();
    Ok(if cx.opset >= 13 && opt_input(cx.ins, 1).is_some() {
        const_values(cx.ins, 1, "split")?
    } else if let Some(s) = attr_ints(cx.node, "split") {
        s
    } else {
        let parts = attr_int(cx.node, "num_outputs").unwrap_or(n as i64);
        if parts <= 0 || parts as usize != n {
            return Err(InferError::NumOutputs { parts, outputs: n });
        }
        if dim < 0 {
            vec![-1; n]
        } else {
            let chunk = dim / parts + i64::from(dim % parts != 0);
            (0..parts)
                .map(|i| (dim - i * chunk).clamp(0, chunk))
                .collect()
        }
    })
}

/// `Split`: one output per size along `axis` (made non-negative); the sizes become an
/// explicit `split` attribute.
pub(super) fn split(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    let axis = normalise_axis(attrs, "axis", x.shape.len())?;
    let n = cx.node.outputs.len();
    let dim = x.shape[axis];
    let mut sizes = split_sizes(cx, dim)?;
    // One size of -1 (TensorFlow's SplitV) is what the others leave of a known dim.
    if dim >= 0 && sizes.iter().filter(|&&s| s == -1).count() == 1 {
        let rest: i64 = sizes.iter().filter(|&&s| s >= 0).sum();
        if let Some(s) = sizes.iter_mut().find(|s| **s == -1) {
            *s = dim - rest;
        }
    }
    if sizes.len() != n {
        return Err(InferError::SplitOutputs { sizes, outputs: n });
    }
    if sizes.iter().any(|&s| !(-1..=MAX_DIM).contains(&s)) {
        return Err(InferError::SplitRange { sizes });
    }
    if dim >= 0 && sizes.iter().all(|&s| s >= 0) && sizes.iter().sum::<i64>() != dim {
        return Err(InferError::SplitSum { sizes, dim });
    }
    attrs.insert("split".into(), AttrValue::Ints(sizes.clone()));
    attrs.remove("num_outputs");
    Ok(sizes
        .iter()
        .map(|&s| {
            let mut shape = x.shape.clone();
            shape[axis] = s;
            info(x.elem_type, shape)
        })
        .collect())
}

/// Caffe's partial reshape (ATC's `Reshape` attributes `axis`, `num_axes`): `target` replaces
/// only the input dims `axis..axis+num_axes` (`num_axes` -1: to the end; a negative `axis`
/// counts from after the last dim, -1 being the end), its 0s copying the replaced dims; the
/// result is the whole target, so the attributes leave. Without them, `target` as it is.
fn caffe_span(x: &TensorInfo, target: Vec<i64>, attrs: &mut Attrs) -> Result<Vec<i64>, InferError> {
    let get = |k: &str| match attrs.get(k) {
        Some(AttrValue::Int(v)) => Some(*v),
        _ => None,
    };
    let (axis, num_axes) = (get("axis"), get("num_axes"));
    attrs.remove("axis");
    attrs.remove("num_axes");
    let (axis, num_axes) = (axis.unwrap_or(0), num_axes.unwrap_or(-1));
    if (axis, num_axes) == (0, -1) {
        return Ok(target);
    }
    let r = x.shape.len() as i64;
    let start = if axis >= 0 { axis } else { r + axis + 1 };
    let end = if num_axes == -1 { r } else { start + num_axes };
    if start < 0 || num_axes < -1 || end > r {
        return Err(InferError::Invalid {
            op: "Reshape",
            reason: format!(
                "axis {axis}, num_axes {num_axes} do not fit the input {:?}",
                x.shape
            ),
        });
    }
    let (start, end) = (start as usize, end as usize);
    let mut full = x.shape[..start].to_vec();
    for (i, &t) in target.iter().enumerate() {
        full.push(match t {
            0 => *x
                .shape
                .get(start + i)
                .ok_or_else(|| InferError::ReshapeCopy {
                    target: target.clone(),
                    dim: start + i,
                    shape: x.shape.clone(),
                })?,
            t => t,
        });
    }
    full.extend_from_slice(&x.shape[end..]);
    Ok(full)
}

/// `Slice` parameters: starts, ends, axes, steps (axes and steps as given, if given).
type SliceParams = (Vec<i64>, Vec<i64>, Option<Vec<i64>>, Option<Vec<i64>>);

/// The `Slice` parameters from the inputs (opset 10) or the attributes (before).
fn slice_params(cx: &Ctx<'_>) -> Result<SliceParams, InferError> {
    let (node, ins) = (cx.node, cx.ins);
    Ok(if attr_int(node, "size_input") == Some(1) {
        // TensorFlow's Slice: begin and size (-1: to the end), every dim from 0.
        let starts = const_values(ins, 1, "begin")?;
        let sizes = const_values(ins, 2, "size")?;
        if sizes.len() != starts.len() {
            return Err(InferError::SliceLengths);
        }
        let ends = starts
            .iter()
            .zip(&sizes)
            .map(|(&b, &n)| if n < 0 { i64::MAX } else { b.saturating_add(n) })
            .collect();
        (starts, ends, None, None)
    } else if cx.opset >= 10 {
        let starts = const_values(ins, 1, "starts")?;
        let ends = const_values(ins, 2, "ends")?;
        let axes = match opt_input(ins, 3) {
            Some(_) => Some(const_values(ins, 3, "axes")?),
            None => None,
        };
        let steps = match opt_input(ins, 4) {
            Some(_) => Some(const_values(ins, 4, "steps")?),
            None => None,
        };
        (starts, ends, axes, steps)
    } else {
        let missing = |attr| InferError::MissingAttr { op: "Slice", attr };
        (
            attr_ints(node, "starts").ok_or_else(|| missing("starts"))?,
            attr_ints(node, "ends").ok_or_else(|| missing("ends"))?,
            attr_ints(node, "axes"),
            None,
        )
    })
}

/// `Slice`: each sliced axis gets the length ONNX's clamping gives; 1-D values are sliced too.
pub(super) fn slice(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    attrs.remove("size_input");
    let x = input(cx.ins, 0)?;
    let r = x.shape.len();
    let (starts, ends, axes, steps) = slice_params(cx)?;
    let k = starts.len();
    let axes = axes.unwrap_or_else(|| (0..k as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; k]);
    if ends.len() != k || axes.len() != k || steps.len() != k {
        return Err(InferError::SliceLengths);
    }
    let mut shape = x.shape.clone();
    let mut value = x.value.clone().filter(|_| r == 1);
    for i in 0..k {
        let a = norm_axis(axes[i], r)?;
        let d = x.shape[a];
        let s = steps[i];
        if s == 0 {
            return Err(InferError::SliceStepZero);
        }
        if d < 0 {
            shape[a] = -1;
            value = None;
            continue;
        }
        let fix = |v: i64| if v < 0 { v.saturating_add(d) } else { v };
        let (st, en) = (fix(starts[i]), fix(ends[i]));
        let (st, len) = if d == 0 {
            (0, 0)
        } else if s > 0 {
            let (st, en) = (st.clamp(0, d), en.clamp(0, d));
            (st, if en > st { (en - st - 1) / s + 1 } else { 0 })
        } else {
            let (st, en) = (st.clamp(0, d - 1), en.clamp(-1, d - 1));
            let back = s.checked_neg().ok_or(InferError::SliceStepRange)?;
            (st, if st > en { (st - en - 1) / back + 1 } else { 0 })
        };
        shape[a] = len;
        value = value.map(|v| {
            (0..len.min(v.len() as i64))
                .filter_map(|j| {
                    let at = j.checked_mul(s).and_then(|o| st.checked_add(o))?;
                    v.get(usize::try_from(at).ok()?).copied()
                })
                .collect()
        });
    }
    Ok(vec![TensorInfo {
        elem_type: x.elem_type,
        shape,
        value,
    }])
}

/// `Unsqueeze`: 1-dims inserted at `axes` (input from opset 13, attribute before), which
/// become a sorted, non-negative attribute.
pub(super) fn unsqueeze(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    let axes = if cx.opset >= 13 {
        const_values(cx.ins, 1, "axes")?
    } else {
        attr_ints(cx.node, "axes").ok_or(InferError::MissingAttr {
            op: "Unsqueeze",
            attr: "axes",
        })?
    };
    let r = x.shape.len() + axes.len();
    let mut axes = axes
        .iter()
        .map(|&a| norm_axis(a, r))
        .collect::<Result<Vec<_>, _>>()?;
    axes.sort_unstable();
    axes.dedup();
    let mut rest = x.shape.iter();
    let shape: Vec<i64> = (0..r)
        .map(|i| {
            if axes.binary_search(&i).is_ok() {
                1
            } else {
                rest.next().copied().unwrap_or(1)
            }
        })
        .collect();
    attrs.insert(
        "axes".into(),
        AttrValue::Ints(axes.iter().map(|&a| a as i64).collect()),
    );
    Ok(vec![TensorInfo {
        elem_type: x.elem_type,
        shape,
        value: x.value.clone(),
    }])
}

/// `Squeeze`: the dims at `axes` removed (input from opset 13, attribute before); without
/// axes every 1-dim, which needs a static shape.
pub(super) fn squeeze(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    let axes = if cx.opset >= 13 {
        match opt_input(cx.ins, 1) {
            Some(_) => Some(const_values(cx.ins, 1, "axes")?),
            None => None,
        }
    } else {
        attr_ints(cx.node, "axes")
    };
    let r = x.shape.len();
    let axes: Vec<usize> = match axes {
        Some(a) => a
            .iter()
            .map(|&a| norm_axis(a, r))
            .collect::<Result<_, _>>()?,
        None => {
            if x.shape.contains(&-1) {
                return Err(InferError::SqueezeDynamic);
            }
            (0..r).filter(|&i| x.shape[i] == 1).collect()
        }
    };
    let shape = (0..r)
        .filter(|i| !axes.contains(i))
        .map(|i| x.shape[i])
        .collect();
    Ok(vec![TensorInfo {
        elem_type: x.elem_type,
        shape,
        value: x.value.clone(),
    }])
}
