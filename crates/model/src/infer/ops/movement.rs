//! Data movement: `Transpose` (explicit `perm`), `Tile`, `Expand`, `Pad` and `Gather` (values
//! tracked through a 1-D gather, as in `Shape` → `Gather` chains).

use super::Ctx;
use crate::infer::attrs::{attr_ints, normalise_axis, Attrs};
use crate::infer::error::InferError;
use crate::infer::shape::{
    broadcast, check_dims, const_values, info, input, norm_axis, opt_input, product,
};
use crate::infer::TensorInfo;
use tunebank_key::AttrValue;

/// `Transpose`: input 0's dims permuted by `perm` (reversed when absent, then made explicit).
/// A node with `complete_perm` (Caffe's `Permute`, whose `order` may name only the leading
/// axes) has the axes it does not name appended in order; the marker leaves the attributes.
pub(super) fn transpose(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    let r = x.shape.len();
    // The permutation: the attribute, else a second input of known values (TensorFlow's),
    // else the dims reversed.
    let mut perm = match (
        attr_ints(cx.node, "perm"),
        crate::infer::shape::opt_input(cx.ins, 1),
    ) {
        (Some(p), _) => p,
        (None, Some(t)) => t.value.clone().ok_or(InferError::NotConstant {
            index: 1,
            what: "perm",
        })?,
        (None, None) => (0..r as i64).rev().collect(),
    };
    if attrs.remove("complete_perm").is_some() {
        let rest: Vec<i64> = (0..r as i64).filter(|a| !perm.contains(a)).collect();
        perm.extend(rest);
    }
    let mut seen = vec![false; r];
    let mut shape = Vec::with_capacity(r);
    for &p in &perm {
        let p = usize::try_from(p).ok().filter(|&p| p < r && !seen[p]);
        let Some(p) = p else {
            return Err(InferError::Perm { perm, rank: r });
        };
        seen[p] = true;
        shape.push(x.shape[p]);
    }
    if perm.len() != r {
        return Err(InferError::Perm { perm, rank: r });
    }
    attrs.insert("perm".into(), AttrValue::Ints(perm));
    Ok(vec![info(x.elem_type, shape)])
}

/// `Tile`: each dim times its repeat (one non-negative constant repeat per dim).
pub(super) fn tile(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    let reps = const_values(cx.ins, 1, "repeats")?;
    if reps.len() != x.shape.len() || reps.iter().any(|&r| r < 0) {
        return Err(InferError::Repeats {
            repeats: reps,
            shape: x.shape.clone(),
        });
    }
    let shape = x
        .shape
        .iter()
        .zip(&reps)
        .map(|(&d, &r)| product(&[d, r]))
        .collect::<Result<_, _>>()?;
    Ok(vec![info(x.elem_type, shape)])
}

/// `Expand`: input 0 broadcast with the constant shape input.
pub(super) fn expand(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    let s = const_values(cx.ins, 1, "shape")?;
    check_dims(&s)?;
    Ok(vec![info(x.elem_type, broadcast(&[&x.shape, &s])?)])
}

/// `Pad`: each padded axis grows by its begin and end pads (input from opset 11, attribute
/// before; optional constant `axes` input).
pub(super) fn pad(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let ins = cx.ins;
    let x = input(ins, 0)?;
    let pads = if cx.opset >= 11 {
        const_values(ins, 1, "pads")?
    } else {
        attr_ints(cx.node, "pads").ok_or(InferError::MissingAttr {
            op: "Pad",
            attr: "pads",
        })?
    };
    let r = x.shape.len();
    let axes: Vec<usize> = match opt_input(ins, 3) {
        Some(_) => const_values(ins, 3, "axes")?
            .iter()
            .map(|&a| norm_axis(a, r))
            .collect::<Result<_, _>>()?,
        None => (0..r).collect(),
    };
    if pads.len() != 2 * axes.len() {
        return Err(InferError::PadsRank { pads, rank: r });
    }
    let mut shape = x.shape.clone();
    for (k, &a) in axes.iter().enumerate() {
        if shape[a] >= 0 {
            shape[a] = shape[a]
                .checked_add(pads[k])
                .and_then(|v| v.checked_add(pads[k + axes.len()]))
                .ok_or(InferError::Overflow { what: "padded dim" })?;
            if shape[a] < 0 {
                return Err(InferError::NegativePad { pads });
            }
        }
    }
    Ok(vec![info(x.elem_type, shape)])
}

/// `Gather`: data dims before `axis`, the indices' dims, data dims after `axis`; values
/// tracked when both 1-D data and indices are known.
pub(super) fn gather(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let (data, idx) = (input(cx.ins, 0)?, input(cx.ins, 1)?);
    let axis = normalise_axis(attrs, "axis", data.shape.len())?;
    let mut shape = data.shape[..axis].to_vec();
    shape.extend(&idx.shape);
    shape.extend(&data.shape[axis + 1..]);
    let value = match (&data.value, &idx.value) {
        (Some(d), Some(ix)) if data.shape.len() == 1 => ix
            .iter()
            .map(|&i| {
                let i = if i < 0 { i + d.len() as i64 } else { i };
                usize::try_from(i).ok().and_then(|i| d.get(i).copied())
            })
            .collect(),
        _ => None,
    };
    Ok(vec![TensorInfo {
        elem_type: data.elem_type,
        shape,
        value,
    }])
}
