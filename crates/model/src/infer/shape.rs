//! Shape helpers shared by the per-op inference: reading a node's inputs (present, optional,
//! constant values), building tensors, range checks on dims and axes, element counts, numpy
//! broadcasting, and the integer value tracking that lets shape arithmetic fold.

use super::error::InferError;
use super::{TensorInfo, MAX_DIM};
use crate::graph::{ConstTensor, ElemType};

/// A node's inputs in order; `None` for an absent optional input.
pub(super) type Inputs = Vec<Option<TensorInfo>>;

/// Input `i`, which must be present.
pub(super) fn input(ins: &Inputs, i: usize) -> Result<&TensorInfo, InferError> {
    ins.get(i)
        .and_then(Option::as_ref)
        .ok_or(InferError::MissingInput { index: i })
}

/// Input `i` when present.
pub(super) fn opt_input(ins: &Inputs, i: usize) -> Option<&TensorInfo> {
    ins.get(i).and_then(Option::as_ref)
}

/// The values of a constant integer input (shape, axes …); `what` names it in the error.
pub(super) fn const_values(
    ins: &Inputs,
    i: usize,
    what: &'static str,
) -> Result<Vec<i64>, InferError> {
    input(ins, i)?
        .value
        .clone()
        .ok_or(InferError::NotConstant { index: i, what })
}

/// A tensor of this type and shape whose values are not tracked.
pub(super) fn info(elem_type: ElemType, shape: Vec<i64>) -> TensorInfo {
    TensorInfo {
        elem_type,
        shape,
        value: None,
    }
}

/// A constant's tensor (initializer or `Constant` value), with its integer values if known.
pub(super) fn const_info(c: &ConstTensor) -> TensorInfo {
    TensorInfo {
        elem_type: c.elem_type,
        shape: c.dims.clone(),
        value: c.ints.clone(),
    }
}

/// Every dim is -1 or within `0..=MAX_DIM`.
pub(super) fn check_dims(shape: &[i64]) -> Result<(), InferError> {
    match shape.iter().find(|&&d| !(-1..=MAX_DIM).contains(&d)) {
        Some(&dim) => Err(InferError::DimOutOfRange {
            dim,
            shape: shape.to_vec(),
        }),
        None => Ok(()),
    }
}

/// `axis` made non-negative for `rank`; it must lie in `-rank..rank`.
pub(super) fn norm_axis(axis: i64, rank: usize) -> Result<usize, InferError> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    if (0..r).contains(&a) {
        Ok(a as usize)
    } else {
        Err(InferError::AxisOutOfRange { axis, rank })
    }
}

/// Product of dims; 0 if any is 0, else -1 if any is -1. Errors above [`MAX_DIM`].
pub(super) fn product(dims: &[i64]) -> Result<i64, InferError> {
    if dims.contains(&0) {
        return Ok(0);
    }
    if dims.iter().any(|&d| d < 0) {
        return Ok(-1);
    }
    dims.iter().try_fold(1i64, |acc, &d| {
        acc.checked_mul(d).filter(|&p| p <= MAX_DIM).ok_or_else(|| {
            InferError::ElementCountOverflow {
                dims: dims.to_vec(),
            }
        })
    })
}

/// The numpy broadcast of `shapes`; a -1 dim takes the other side's dim.
pub(super) fn broadcast(shapes: &[&[i64]]) -> Result<Vec<i64>, InferError> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1i64; rank];
    for s in shapes {
        let off = rank - s.len();
        for (i, &d) in s.iter().enumerate() {
            let o = &mut out[off + i];
            *o = match (*o, d) {
                (a, b) if a == b => a,
                (1, b) => b,
                (a, 1) => a,
                (-1, b) => b,
                (a, -1) => a,
                (a, b) => {
                    return Err(InferError::Broadcast {
                        shapes: shapes.iter().map(|s| s.to_vec()).collect(),
                        a,
                        b,
                    })
                }
            };
        }
    }
    Ok(out)
}

/// The values of `Add`, `Sub`, `Mul` or `Div` (Euclidean division) of two tracked integer
/// tensors of equal length or length 1; `None` for other ops, other lengths or on overflow.
pub(super) fn int_binary(op: &str, a: &[i64], b: &[i64]) -> Option<Vec<i64>> {
    let n = a.len().max(b.len());
    if !(a.len() == n || a.len() == 1) || !(b.len() == n || b.len() == 1) {
        return None;
    }
    (0..n)
        .map(|i| {
            let x = a[if a.len() == 1 { 0 } else { i }];
            let y = b[if b.len() == 1 { 0 } else { i }];
            match op {
                "Add" => x.checked_add(y),
                "Sub" => x.checked_sub(y),
                "Mul" => x.checked_mul(y),
                "Div" => x.checked_div_euclid(y),
                _ => None,
            }
        })
        .collect()
}
