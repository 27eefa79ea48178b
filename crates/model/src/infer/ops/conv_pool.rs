//! Convolution and pooling: `Conv`, `ConvTranspose`, `MaxPool` / `AveragePool` / `LpPool` and
//! the global pools. Window attributes are normalised: `kernel_shape`, `strides`, `dilations`
//! and explicit `pads` are always present, `auto_pad` is turned into `pads` (kept only when a
//! dynamic dim decides the pads).

use super::Ctx;
use crate::graph::{ElemType, Node};
use crate::infer::attrs::{attr_int, attr_ints, attr_str, Attrs};
use crate::infer::error::InferError;
use crate::infer::shape::{info, input, product};
use crate::infer::TensorInfo;
use tunebank_key::AttrValue;

/// Output size of one spatial dim of a convolution or pooling window.
fn window(
    input: i64,
    k: i64,
    s: i64,
    d: i64,
    pads: (i64, i64),
    ceil: bool,
) -> Result<i64, InferError> {
    if input < 0 {
        return Ok(-1);
    }
    if k <= 0 || s <= 0 || d <= 0 {
        return Err(InferError::WindowNotPositive {
            kernel: k,
            stride: s,
            dilation: d,
        });
    }
    let overflow = || InferError::Overflow {
        what: "window size",
    };
    let eff = (k - 1)
        .checked_mul(d)
        .and_then(|v| v.checked_add(1))
        .ok_or_else(overflow)?;
    let span = input
        .checked_add(pads.0)
        .and_then(|v| v.checked_add(pads.1))
        .and_then(|v| v.checked_sub(eff))
        .ok_or_else(overflow)?;
    if span < 0 {
        return Err(InferError::WindowTooLarge {
            window: eff,
            padded: span + eff,
        });
    }
    let mut out = if ceil {
        span.div_euclid(s) + i64::from(span % s != 0)
    } else {
        span / s
    } + 1;
    // ONNX: the last window must start inside the input or the left padding.
    if ceil && (out - 1) * s >= input + pads.0 {
        out -= 1;
    }
    Ok(out)
}

/// The explicit pads of `SAME_UPPER` (`upper`) or `SAME_LOWER`; `None` when a spatial dim of
/// `x` is dynamic, so the pads depend on a dim no profile fixes.
fn same_pads(
    x: &[i64],
    kernel: &[i64],
    strides: &[i64],
    dilations: &[i64],
    upper: bool,
) -> Option<Vec<i64>> {
    let n = kernel.len();
    let mut p = vec![0; 2 * n];
    for i in 0..n {
        let input = x[i + 2];
        if input < 0 {
            return None;
        }
        let out = input / strides[i] + i64::from(input % strides[i] != 0);
        let eff = (kernel[i] - 1)
            .saturating_mul(dilations[i])
            .saturating_add(1);
        let total = (out - 1)
            .saturating_mul(strides[i])
            .saturating_add(eff)
            .saturating_sub(input)
            .max(0);
        let small = total / 2;
        let (b, e) = if upper {
            (small, total - small)
        } else {
            (total - small, small)
        };
        p[i] = b;
        p[i + n] = e;
    }
    Some(p)
}

/// Shared by Conv and pooling: spatial output dims and normalised `pads`.
fn spatial(
    node: &Node,
    x: &[i64],
    kernel: &[i64],
    ceil: bool,
    attrs: &mut Attrs,
) -> Result<Vec<i64>, InferError> {
    let n = kernel.len();
    if x.len() != n + 2 {
        return Err(InferError::KernelRank {
            input: x.to_vec(),
            rank: x.len(),
            expected: n + 2,
            kernel: kernel.to_vec(),
        });
    }
    let strides = attr_ints(node, "strides").unwrap_or_else(|| vec![1; n]);
    let dilations = attr_ints(node, "dilations").unwrap_or_else(|| vec![1; n]);
    if strides.len() != n || dilations.len() != n {
        return Err(InferError::StridesKernel {
            strides,
            dilations,
            kernel: kernel.to_vec(),
        });
    }
    if kernel
        .iter()
        .chain(&strides)
        .chain(&dilations)
        .any(|&v| v <= 0)
    {
        return Err(InferError::WindowsNotPositive {
            kernel: kernel.to_vec(),
            strides,
            dilations,
        });
    }
    let auto_pad = attr_str(node, "auto_pad").unwrap_or_else(|| "NOTSET".into());
    let pads = match auto_pad.as_str() {
        "NOTSET" | "" => attr_ints(node, "pads").unwrap_or_else(|| vec![0; 2 * n]),
        "VALID" => vec![0; 2 * n],
        "SAME_UPPER" | "SAME_LOWER" => {
            let upper = auto_pad == "SAME_UPPER";
            match same_pads(x, kernel, &strides, &dilations, upper) {
                Some(p) => p,
                // Pads depend on a dim no profile fixes: keep auto_pad in the key.
                None => return Ok(vec![-1; n]),
            }
        }
        other => {
            return Err(InferError::AutoPad {
                value: other.to_string(),
            })
        }
    };
    if pads.len() != 2 * n {
        return Err(InferError::PadsKernel {
            pads,
            kernel: kernel.to_vec(),
        });
    }
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        out.push(window(
            x[i + 2],
            kernel[i],
            strides[i],
            dilations[i],
            (pads[i], pads[i + n]),
            ceil,
        )?);
    }
    attrs.remove("auto_pad");
    attrs.insert("pads".into(), AttrValue::Ints(pads));
    attrs.insert("strides".into(), AttrValue::Ints(strides));
    attrs.insert("dilations".into(), AttrValue::Ints(dilations));
    attrs.insert("kernel_shape".into(), AttrValue::Ints(kernel.to_vec()));
    Ok(out)
}

/// `Conv`: N, the weight's output channels, then the spatial dims of the window.
pub(super) fn conv(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let (node, ins) = (cx.node, cx.ins);
    let (x, w) = (input(ins, 0)?, input(ins, 1)?);
    if w.shape.len() < 3 {
        return Err(InferError::Rank {
            expected: "a weight of rank ≥ 3",
            shape: w.shape.clone(),
        });
    }
    let kernel = attr_ints(node, "kernel_shape").unwrap_or_else(|| w.shape[2..].to_vec());
    let group = attr_int(node, "group").unwrap_or(1);
    if x.shape.len() >= 2
        && x.shape[1] >= 0
        && w.shape[1] >= 0
        && (group <= 0 || w.shape[1].checked_mul(group) != Some(x.shape[1]))
    {
        return Err(InferError::Channels {
            channels: x.shape[1],
            weight: w.shape.clone(),
            group,
        });
    }
    let sp = spatial(node, &x.shape, &kernel, false, attrs)?;
    let mut shape = vec![x.shape[0], w.shape[0]];
    shape.extend(sp);
    Ok(vec![info(x.elem_type, shape)])
}

/// `ConvTranspose`: N, weight channels × `group`, then the spatial dims `output_shape` (ONNX's
/// spatial form, or MindSpore's export's N, C, H, W) or `auto_pad` SAME (input × stride) asks
/// for, else those the strides, pads (`VALID`: none) and `output_padding` give. The attributes
/// are left in one form whichever way the file said it: explicit `pads` (when an output size
/// was asked for, the given pads if they give it, else ONNX's rule), `kernel_shape`, `strides`, `dilations`,
/// `output_padding`; no `auto_pad`, no `output_shape`.
pub(super) fn conv_transpose(
    cx: &Ctx<'_>,
    attrs: &mut Attrs,
) -> Result<Vec<TensorInfo>, InferError> {
    let (node, ins) = (cx.node, cx.ins);
    let (x, w) = (input(ins, 0)?, input(ins, 1)?);
    if w.shape.len() < 3 || x.shape.len() != w.shape.len() {
        return Err(InferError::Ranks {
            expected: "input and weight of one rank ≥ 3",
            first: x.shape.clone(),
            second: w.shape.clone(),
        });
    }
    let n = w.shape.len() - 2;
    let kernel = attr_ints(node, "kernel_shape").unwrap_or_else(|| w.shape[2..].to_vec());
    let strides = attr_ints(node, "strides").unwrap_or_else(|| vec![1; n]);
    let dilations = attr_ints(node, "dilations").unwrap_or_else(|| vec![1; n]);
    let out_pad = attr_ints(node, "output_padding").unwrap_or_else(|| vec![0; n]);
    let pads = attr_ints(node, "pads").unwrap_or_else(|| vec![0; 2 * n]);
    let group = attr_int(node, "group").unwrap_or(1);
    if [kernel.len(), strides.len(), dilations.len(), out_pad.len()] != [n; 4]
        || pads.len() != 2 * n
    {
        return Err(InferError::ConvTransposeRank);
    }
    if kernel
        .iter()
        .chain(&strides)
        .chain(&dilations)
        .any(|&v| v <= 0)
        || group <= 0
    {
        return Err(InferError::ConvTransposeNotPositive);
    }
    let auto_pad = attr_str(node, "auto_pad").unwrap_or_else(|| "NOTSET".into());
    if !["NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"].contains(&auto_pad.as_str()) {
        return Err(InferError::ConvTransposeAutoPad { auto_pad });
    }
    // ONNX's output_shape is spatial; MindSpore's ONNX export writes N and C before it.
    let output_shape = match attr_ints(node, "output_shape") {
        Some(o) if o.len() == n => Some(o),
        Some(o) if o.len() == n + 2 => Some(o[2..].to_vec()),
        Some(o) => return Err(InferError::OutputShapeRank { output_shape: o }),
        None => None,
    };
    let mut pads = if auto_pad == "VALID" {
        vec![0; 2 * n]
    } else {
        pads
    };
    let channels = product(&[w.shape[1], group])?;
    let mut shape = vec![x.shape[0], channels];
    for i in 0..n {
        let input = x.shape[i + 2];
        if input < 0 {
            shape.push(output_shape.as_ref().map_or(-1, |o| o[i]));
            continue;
        }
        // The output without padding: stride·(in − 1) + output_padding + the dilated kernel.
        let full = (kernel[i] - 1)
            .checked_mul(dilations[i])
            .and_then(|e| strides[i].checked_mul(input - 1)?.checked_add(e + 1))
            .and_then(|v| v.checked_add(out_pad[i]))
            .ok_or(InferError::OutputDim { dim: i })?;
        let wanted = match (&output_shape, auto_pad.starts_with("SAME")) {
            (Some(o), _) => Some(o[i]),
            (None, true) => Some(
                input
                    .checked_mul(strides[i])
                    .ok_or(InferError::OutputDim { dim: i })?,
            ),
            (None, false) => None,
        };
        let out = match wanted {
            // ONNX's rule: the padding that gives that output, split evenly, the odd one at
            // the end for SAME_UPPER and at the beginning otherwise.
            Some(out) => {
                let total = full - out;
                if total < 0 || out <= 0 {
                    return Err(InferError::OutputDim { dim: i });
                }
                // Explicit pads that already give it are kept (MindIR's computed pad_list).
                if auto_pad != "NOTSET" || pads[i] + pads[i + n] != total {
                    let begin = if auto_pad == "SAME_UPPER" {
                        total / 2
                    } else {
                        total - total / 2
                    };
                    pads[i] = begin;
                    pads[i + n] = total - begin;
                }
                out
            }
            None => Some(full - pads[i] - pads[i + n])
                .filter(|&v| v >= 0)
                .ok_or(InferError::OutputDim { dim: i })?,
        };
        shape.push(out);
    }
    attrs.remove("output_shape");
    attrs.remove("auto_pad");
    attrs.insert("kernel_shape".into(), AttrValue::Ints(kernel));
    attrs.insert("strides".into(), AttrValue::Ints(strides));
    attrs.insert("dilations".into(), AttrValue::Ints(dilations));
    attrs.insert("pads".into(), AttrValue::Ints(pads));
    attrs.insert("output_padding".into(), AttrValue::Ints(out_pad));
    Ok(vec![info(x.elem_type, shape)])
}

/// `MaxPool`, `AveragePool`, `LpPool`: N, C, then the window's spatial dims (`ceil_mode`
/// honoured); a second int64 output of the same shape (MaxPool's indices).
pub(super) fn pool(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    let kernel = attr_ints(cx.node, "kernel_shape").ok_or(InferError::MissingAttr {
        op: "pooling",
        attr: "kernel_shape",
    })?;
    let ceil = attr_int(cx.node, "ceil_mode").unwrap_or(0) != 0;
    let sp = spatial(cx.node, &x.shape, &kernel, ceil, attrs)?;
    let mut shape = x.shape[..2].to_vec();
    shape.extend(sp);
    let y = info(x.elem_type, shape.clone());
    Ok(vec![y, info(ElemType::INT64, shape)])
}

/// The global pools: N, C, then 1 per spatial dim.
pub(super) fn global_pool(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    if x.shape.len() < 3 {
        return Err(InferError::Rank {
            expected: "an N,C,spatial input",
            shape: x.shape.clone(),
        });
    }
    let mut s = x.shape[..2].to_vec();
    s.resize(x.shape.len(), 1);
    Ok(vec![info(x.elem_type, s)])
}
