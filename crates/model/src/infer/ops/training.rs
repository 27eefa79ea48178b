//! The Ascend IR training ops the TensorFlow importer emits (`model/tensorflow/training.rs`):
//! backward convolutions and pooling, batch-norm training and its gradients, the bias
//! gradient, the loss, optimizer updates and variable assignments. Window attributes are
//! NCHW with 4 values; `padding` of a backward convolution becomes explicit `pads`
//! (top, bottom, left, right) so SAME and its explicit equal give one key; `size_format`
//! (the order of a sizes input) is read and dropped.

use super::Ctx;
use crate::graph::ElemType;
use crate::infer::attrs::Attrs;
use crate::infer::error::InferError;
use crate::infer::shape::{const_values, info, input, product};
use crate::infer::TensorInfo;
use crate::optimizer::apply_op;
use tunebank_key::AttrValue;

fn bad(op: &str, reason: String) -> InferError {
    InferError::Training {
        op: op.to_string(),
        reason,
    }
}

fn ints(attrs: &Attrs, name: &str) -> Option<Vec<i64>> {
    match attrs.get(name) {
        Some(AttrValue::Ints(v)) => Some(v.clone()),
        _ => None,
    }
}

fn string(attrs: &Attrs, name: &str) -> Option<String> {
    match attrs.get(name) {
        Some(AttrValue::Str(s)) => Some(s.clone()),
        _ => None,
    }
}

/// A 4-D NCHW input.
fn nchw<'a>(cx: &'a Ctx<'_>, i: usize, what: &'static str) -> Result<&'a TensorInfo, InferError> {
    let t = input(cx.ins, i)?;
    if t.shape.len() != 4 {
        return Err(InferError::Rank {
            expected: what,
            shape: t.shape.clone(),
        });
    }
    Ok(t)
}

/// The NCHW sizes at input `i`, reordered by the `size_format` attribute (then dropped).
fn sizes(cx: &Ctx<'_>, i: usize, attrs: &mut Attrs) -> Result<Vec<i64>, InferError> {
    let v = const_values(cx.ins, i, "sizes")?;
    if v.len() != 4 {
        return Err(bad(
            &cx.node.op_type,
            format!("sizes {v:?}: expected 4 values"),
        ));
    }
    let nhwc = string(attrs, "size_format").as_deref() == Some("NHWC");
    attrs.remove("size_format");
    Ok(if nhwc {
        vec![v[0], v[3], v[1], v[2]]
    } else {
        v
    })
}

/// The output extent of one axis and its (begin, end) pads under the `padding` rule
/// (TensorFlow's SAME puts the odd pad at the end).
fn axis(
    op: &str,
    len: i64,
    k: i64,
    s: i64,
    d: i64,
    padding: &str,
    explicit: (i64, i64),
) -> Result<(i64, (i64, i64)), InferError> {
    if k <= 0 || s <= 0 || d <= 0 {
        return Err(InferError::WindowNotPositive {
            kernel: k,
            stride: s,
            dilation: d,
        });
    }
    let eff = (k - 1) * d + 1;
    let pads = match padding {
        "SAME" => {
            let out = (len + s - 1) / s;
            let total = ((out - 1) * s + eff - len).max(0);
            (total / 2, total - total / 2)
        }
        "EXPLICIT" => explicit,
        _ => (0, 0),
    };
    let span = len + pads.0 + pads.1 - eff;
    if span < 0 {
        return Err(bad(
            op,
            format!(
                "window {eff} larger than the padded extent {}",
                len + pads.0 + pads.1
            ),
        ));
    }
    Ok((span / s + 1, pads))
}

/// Checks a backward convolution's window against the forward input `x` (N, C, H, W), the
/// gradient `dy` and the filter (O, C/groups, kh, kw); writes explicit `pads`.
fn conv_window(
    cx: &Ctx<'_>,
    attrs: &mut Attrs,
    x: &[i64],
    dy: &[i64],
    filter: &[i64],
) -> Result<(), InferError> {
    let op = cx.node.op_type.as_str();
    let strides = ints(attrs, "strides").unwrap_or_else(|| vec![1; 4]);
    let dilations = ints(attrs, "dilations").unwrap_or_else(|| vec![1; 4]);
    if strides.len() != 4 || dilations.len() != 4 || filter.len() != 4 {
        return Err(bad(op, format!("strides {strides:?}, dilations {dilations:?}, filter {filter:?}: expected 4 values each")));
    }
    let groups = match attrs.get("groups") {
        Some(AttrValue::Int(g)) if *g > 0 => *g,
        _ => 1,
    };
    attrs.insert("groups".into(), AttrValue::Int(groups));
    if filter[1].checked_mul(groups) != Some(x[1]) && x[1] >= 0 {
        return Err(bad(
            op,
            format!(
                "input {x:?} does not have the filter's {} channels × {groups} groups",
                filter[1]
            ),
        ));
    }
    if x.iter().chain(dy).any(|&d| d < 0) {
        // A dim no profile fixes: the pads stay as the padding rule states them.
        return Ok(());
    }
    let padding = string(attrs, "padding").unwrap_or_else(|| "VALID".into());
    let explicit = ints(attrs, "pads")
        .filter(|p| p.len() == 4)
        .unwrap_or_else(|| vec![0; 4]);
    let (ho, ph) = axis(
        op,
        x[2],
        filter[2],
        strides[2],
        dilations[2],
        &padding,
        (explicit[0], explicit[1]),
    )?;
    let (wo, pw) = axis(
        op,
        x[3],
        filter[3],
        strides[3],
        dilations[3],
        &padding,
        (explicit[2], explicit[3]),
    )?;
    let expected = [x[0], filter[0], ho, wo];
    if dy != expected {
        return Err(bad(
            op,
            format!("gradient {dy:?} does not match input {x:?} and filter {filter:?}: expected {expected:?}"),
        ));
    }
    attrs.remove("padding");
    attrs.insert("pads".into(), AttrValue::Ints(vec![ph.0, ph.1, pw.0, pw.1]));
    Ok(())
}

/// `Conv2DBackpropFilter` (x, dy): the filter gradient, `filter_size` (OIHW), in float.
pub(super) fn conv_backprop_filter(
    cx: &Ctx<'_>,
    attrs: &mut Attrs,
) -> Result<Vec<TensorInfo>, InferError> {
    let x = nchw(cx, 0, "an NCHW input")?;
    let dy = nchw(cx, 1, "an NCHW gradient")?;
    let filter = ints(attrs, "filter_size").ok_or(InferError::MissingAttr {
        op: "Conv2DBackpropFilter",
        attr: "filter_size",
    })?;
    conv_window(cx, attrs, &x.shape, &dy.shape, &filter)?;
    Ok(vec![info(ElemType::FLOAT, filter)])
}

/// `Conv2DBackpropInput` (sizes, filter, dy): the input gradient, of the sizes.
pub(super) fn conv_backprop_input(
    cx: &Ctx<'_>,
    attrs: &mut Attrs,
) -> Result<Vec<TensorInfo>, InferError> {
    let size = sizes(cx, 0, attrs)?;
    let filter = nchw(cx, 1, "an OIHW filter")?.shape.clone();
    let dy = nchw(cx, 2, "an NCHW gradient")?;
    conv_window(cx, attrs, &size, &dy.shape, &filter)?;
    Ok(vec![info(dy.elem_type, size)])
}

/// `MaxPoolGrad` (x, y, dy): the input gradient, shaped as x.
pub(super) fn max_pool_grad(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = nchw(cx, 0, "an NCHW input")?;
    let dy = nchw(cx, 2, "an NCHW gradient")?;
    Ok(vec![info(dy.elem_type, x.shape.clone())])
}

/// `AvgPoolGrad` (sizes, dy): the input gradient, of the sizes.
pub(super) fn avg_pool_grad(
    cx: &Ctx<'_>,
    attrs: &mut Attrs,
) -> Result<Vec<TensorInfo>, InferError> {
    let size = sizes(cx, 0, attrs)?;
    let dy = nchw(cx, 1, "an NCHW gradient")?;
    Ok(vec![info(dy.elem_type, size)])
}

/// Per-channel float statistics of an N, C, … input.
fn channels(cx: &Ctx<'_>, i: usize) -> Result<TensorInfo, InferError> {
    let x = input(cx.ins, i)?;
    if x.shape.len() < 2 {
        return Err(InferError::Rank {
            expected: "an N,C,… input",
            shape: x.shape.clone(),
        });
    }
    Ok(info(ElemType::FLOAT, vec![x.shape[1]]))
}

/// `BNTrainingReduce` (x): sum and square sum per channel.
pub(super) fn bn_reduce(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let c = channels(cx, 0)?;
    Ok(vec![c.clone(), c])
}

/// `BNTrainingUpdate` (x, sum, square sum, scale, offset): y, then four per-channel tensors.
pub(super) fn bn_update(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    let c = channels(cx, 0)?;
    Ok(vec![
        info(x.elem_type, x.shape.clone()),
        c.clone(),
        c.clone(),
        c.clone(),
        c,
    ])
}

/// `BNTrainingUpdateGrad` (dy, x, mean, variance): scale and offset gradients.
pub(super) fn bn_update_grad(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let c = channels(cx, 1)?;
    Ok(vec![c.clone(), c])
}

/// `BNTrainingReduceGrad` (dy, x, …): the input gradient, shaped as x.
pub(super) fn bn_reduce_grad(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let dy = input(cx.ins, 0)?;
    let x = input(cx.ins, 1)?;
    Ok(vec![info(dy.elem_type, x.shape.clone())])
}

/// `BiasAddGrad` (dy): the bias gradient, one value per channel of `data_format`.
pub(super) fn bias_add_grad(
    cx: &Ctx<'_>,
    attrs: &mut Attrs,
) -> Result<Vec<TensorInfo>, InferError> {
    let dy = input(cx.ins, 0)?;
    if dy.shape.len() < 2 {
        return Err(InferError::Rank {
            expected: "a gradient of rank ≥ 2",
            shape: dy.shape.clone(),
        });
    }
    let nchw = string(attrs, "data_format").as_deref() == Some("NCHW");
    let c = if nchw {
        dy.shape[1]
    } else {
        dy.shape[dy.shape.len() - 1]
    };
    Ok(vec![info(dy.elem_type, vec![c])])
}

/// `SoftmaxCrossEntropyWithLogits` (logits, labels) and its sparse form: loss [N] and
/// backprop [N, C].
pub(super) fn softmax_cross_entropy(
    cx: &Ctx<'_>,
    _: &mut Attrs,
) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    if x.shape.len() != 2 {
        return Err(InferError::Rank {
            expected: "[batch, classes] logits",
            shape: x.shape.clone(),
        });
    }
    input(cx.ins, 1)?;
    Ok(vec![
        info(x.elem_type, vec![x.shape[0]]),
        info(x.elem_type, x.shape.clone()),
    ])
}

/// An optimizer update: the updated variable and slots, shaped as inputs `0..state`; the
/// gradient must have the variable's element count.
pub(super) fn apply(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let op = cx.node.op_type.as_str();
    let a = apply_op(op).ok_or_else(|| bad(op, "not an optimizer update".into()))?;
    let var = input(cx.ins, 0)?;
    let grad = input(cx.ins, a.grad)?;
    if var.shape.iter().all(|&d| d >= 0)
        && grad.shape.iter().all(|&d| d >= 0)
        && product(&var.shape)? != product(&grad.shape)?
    {
        return Err(bad(
            op,
            format!(
                "gradient {:?} does not have the {} elements of variable {:?}",
                grad.shape,
                product(&var.shape)?,
                var.shape
            ),
        ));
    }
    (0..a.state)
        .map(|i| input(cx.ins, i).map(|t| info(t.elem_type, t.shape.clone())))
        .collect()
}

/// `Fill` (sizes, value): a tensor of the sizes, of the value's type.
pub(super) fn fill(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let dims = const_values(cx.ins, 0, "dims")?;
    let value = input(cx.ins, 1)?;
    Ok(vec![info(value.elem_type, dims)])
}

/// `StatelessRandomUniformV2`, `StatelessRandomNormalV2` (sizes): a float tensor of the sizes.
pub(super) fn random(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    Ok(vec![info(
        ElemType::FLOAT,
        const_values(cx.ins, 0, "sizes")?,
    )])
}

/// `DropOutGenMask` (sizes, keep probability): the mask of bits, one per element, in bytes
/// padded to 128 elements (`ceil(count / 128) * 16`, the length MindSpore's
/// `DropoutUnifyMindIR` pass gives it).
pub(super) fn dropout_gen_mask(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let dims = const_values(cx.ins, 0, "sizes")?;
    input(cx.ins, 1)?;
    let count = dims
        .iter()
        .try_fold(1i64, |n, &d| (d >= 0).then(|| n.checked_mul(d)).flatten())
        .and_then(|n| n.checked_add(127));
    let Some(padded) = count else {
        return Err(bad(
            "DropOutGenMask",
            format!("sizes {dims:?}: expected non-negative dims"),
        ));
    };
    // uint8 (ONNX code 2)
    Ok(vec![info(ElemType(2), vec![padded / 128 * 16])])
}

/// `StridedSliceGrad` (shape, begin, end, strides, dy): the gradient of the sliced tensor,
/// of the constant `shape`, in dy's type.
pub(super) fn strided_slice_grad(
    cx: &Ctx<'_>,
    _: &mut Attrs,
) -> Result<Vec<TensorInfo>, InferError> {
    let shape = const_values(cx.ins, 0, "shape")?;
    if shape.iter().any(|&d| d < 0) {
        return Err(bad(
            "StridedSliceGrad",
            format!("shape {shape:?}: expected non-negative dims"),
        ));
    }
    let dy = input(cx.ins, 4)?;
    Ok(vec![info(dy.elem_type, shape)])
}

/// `Assign`, `AssignAdd`, `AssignSub` (variable, value): the variable's new value.
pub(super) fn assign(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let var = input(cx.ins, 0)?;
    input(cx.ins, 1)?;
    Ok(vec![info(var.elem_type, var.shape.clone())])
}

/// A gradient shaped as its forward tensor at input `i`, in the gradient's (input 0's) type:
/// `LogSoftmaxGrad`, `SoftmaxGrad`, `GeluGrad`, `SiluGrad` (dy, x or y: shaped as dy, i = 0),
/// `AdaptiveAvgPool2dGrad`, `NLLLossGrad` and `MseLossGrad` (dy, x …: shaped as x, i = 1).
fn like_input(cx: &Ctx<'_>, i: usize) -> Result<Vec<TensorInfo>, InferError> {
    let dy = input(cx.ins, 0)?;
    let x = input(cx.ins, i)?;
    Ok(vec![info(dy.elem_type, x.shape.clone())])
}

/// [`like_input`] of input 0.
pub(super) fn like_dy(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    input(cx.ins, 1)?;
    like_input(cx, 0)
}

/// [`like_input`] of input 1.
pub(super) fn like_x(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    like_input(cx, 1)
}

/// `MseLoss` (x, target; `reduction`): the loss — shaped as x under `reduction` 0 (none),
/// else a scalar.
pub(super) fn mse_loss(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    input(cx.ins, 1)?;
    let none = matches!(attrs.get("reduction"), Some(AttrValue::Int(0)));
    Ok(vec![info(
        x.elem_type,
        if none { x.shape.clone() } else { vec![] },
    )])
}

/// `NLLLoss` (log-probabilities [N, C] or [N, C, …], target …): the loss — per sample under
/// `reduction` 0 (none), else a scalar — and the total weight, a scalar.
pub(super) fn nll_loss(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    input(cx.ins, 1)?;
    let none = matches!(attrs.get("reduction"), Some(AttrValue::Int(0)));
    let loss = if none {
        let mut s = x.shape.clone();
        if s.len() >= 2 {
            s.remove(1);
        }
        s
    } else {
        vec![]
    };
    Ok(vec![info(x.elem_type, loss), info(x.elem_type, vec![])])
}

/// `FlashAttentionScore` (q [B, N, S, D], k, v [B, N, S', Dv] …): the attention output
/// [B, N, S, Dv] and the softmax's log-sum-exp [B, N, S] (PyTorch's flash-attention outputs).
pub(super) fn flash_attention(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let q = input(cx.ins, 0)?;
    input(cx.ins, 1)?;
    let v = input(cx.ins, 2)?;
    let (Some((_, rows)), Some(dv)) = (q.shape.split_last(), v.shape.last()) else {
        return Err(bad(
            "FlashAttentionScore",
            format!("query {:?}: expected a rank ≥ 1", q.shape),
        ));
    };
    let mut out = rows.to_vec();
    out.push(*dv);
    Ok(vec![
        info(q.elem_type, out),
        info(ElemType::FLOAT, rows.to_vec()),
    ])
}

/// `FlashAttentionScoreGrad` (dy, q, k, v, …): the gradients of q, k and v, shaped as they.
pub(super) fn flash_attention_grad(
    cx: &Ctx<'_>,
    _: &mut Attrs,
) -> Result<Vec<TensorInfo>, InferError> {
    let dy = input(cx.ins, 0)?;
    (1..4)
        .map(|i| input(cx.ins, i).map(|t| info(dy.elem_type, t.shape.clone())))
        .collect()
}

/// `LayerNormGrad` (dy, x, mean, rstd, [gamma, beta]; `normalized_shape`): the input gradient
/// shaped as x, and the gradients of gamma and beta, of the normalized shape.
pub(super) fn layer_norm_grad(
    cx: &Ctx<'_>,
    attrs: &mut Attrs,
) -> Result<Vec<TensorInfo>, InferError> {
    let dy = input(cx.ins, 0)?;
    let x = input(cx.ins, 1)?;
    let norm = ints(attrs, "normalized_shape").ok_or(InferError::MissingAttr {
        op: "LayerNormGrad",
        attr: "normalized_shape",
    })?;
    if !x.shape.ends_with(&norm) {
        return Err(bad(
            "LayerNormGrad",
            format!(
                "input {:?} does not end with the normalized shape {norm:?}",
                x.shape
            ),
        ));
    }
    Ok(vec![
        info(dy.elem_type, x.shape.clone()),
        info(dy.elem_type, norm.clone()),
        info(dy.elem_type, norm),
    ])
}

/// `EmbeddingDenseGrad` (dy [..., D], indices; `num_weights`): the table's gradient
/// [num_weights, D].
pub(super) fn embedding_grad(
    cx: &Ctx<'_>,
    attrs: &mut Attrs,
) -> Result<Vec<TensorInfo>, InferError> {
    let dy = input(cx.ins, 0)?;
    input(cx.ins, 1)?;
    let rows = match attrs.get("num_weights") {
        Some(AttrValue::Int(n)) if *n > 0 => *n,
        _ => {
            return Err(InferError::MissingAttr {
                op: "EmbeddingDenseGrad",
                attr: "num_weights",
            })
        }
    };
    let d = dy.shape.last().copied().unwrap_or(1);
    Ok(vec![info(dy.elem_type, vec![rows, d])])
}
