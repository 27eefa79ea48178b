//! Elementwise ops: unary ops (output shaped and typed like input 0), `Softmax` and its kin
//! (axis normalised), `Identity` (values kept), `Dropout`, `Cast` (integer values kept), and
//! the broadcasting ops: arithmetic (integer values folded for `Add`/`Sub`/`Mul`/`Div`),
//! comparisons (bool output) and `Where`.

use super::Ctx;
use crate::graph::ElemType;
use crate::infer::attrs::{attr_int, normalise_axis, Attrs};
use crate::infer::error::InferError;
use crate::infer::shape::{broadcast, info, input, int_binary, Inputs};
use crate::infer::TensorInfo;

/// `Identity`: input 0, values included.
pub(super) fn identity(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    Ok(vec![input(cx.ins, 0)?.clone()])
}

/// A unary op: input 0's shape and type, values dropped.
pub(super) fn unary(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let mut out = input(cx.ins, 0)?.clone();
    out.value = None;
    Ok(vec![out])
}

/// `Trilu` (ONNX opset 14): input 0's shape and type, the triangle of its last two dims kept;
/// a rank below 2 is refused.
pub(super) fn trilu(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    if x.shape.len() < 2 {
        return Err(InferError::Rank {
            expected: "a Trilu input of rank 2 or more (a batch of matrices)",
            shape: x.shape.clone(),
        });
    }
    let mut out = x.clone();
    out.value = None;
    Ok(vec![out])
}

/// `Softmax`, `LogSoftmax`, `Hardmax`: a unary op whose `axis` is made non-negative.
pub(super) fn softmax(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    normalise_axis(attrs, "axis", x.shape.len())?;
    let mut out = x.clone();
    out.value = None;
    Ok(vec![out])
}

/// `Dropout`: input 0 and a bool mask of its shape.
pub(super) fn dropout(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    Ok(vec![x.clone(), info(ElemType::BOOL, x.shape.clone())])
}

/// `Cast`: input 0's shape in the `to` type; integer values survive a cast to an integer type.
pub(super) fn cast(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    let to = ElemType(attr_int(cx.node, "to").ok_or(InferError::MissingCastTo)? as i32);
    let value = if to.is_integer() {
        x.value.clone()
    } else {
        None
    };
    Ok(vec![TensorInfo {
        elem_type: to,
        shape: x.shape.clone(),
        value,
    }])
}

/// The present inputs and their broadcast shape.
fn broadcast_present(ins: &Inputs) -> Result<(Vec<&TensorInfo>, Vec<i64>), InferError> {
    let present: Vec<&TensorInfo> = ins.iter().flatten().collect();
    if present.is_empty() {
        return Err(InferError::NoInput);
    }
    let shapes: Vec<&[i64]> = present.iter().map(|t| t.shape.as_slice()).collect();
    let shape = broadcast(&shapes)?;
    Ok((present, shape))
}

/// A broadcasting arithmetic or logic op: the first present input's type; values folded for
/// `Add`, `Sub`, `Mul` and `Div` of two tracked integer inputs.
pub(super) fn arithmetic(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let (present, shape) = broadcast_present(cx.ins)?;
    let op = cx.node.op_type.as_str();
    let value = match (present.as_slice(), op) {
        ([a, b], "Add" | "Sub" | "Mul" | "Div") => a
            .value
            .as_ref()
            .zip(b.value.as_ref())
            .and_then(|(x, y)| int_binary(op, x, y)),
        _ => None,
    };
    Ok(vec![TensorInfo {
        elem_type: present[0].elem_type,
        shape,
        value,
    }])
}

/// A broadcasting comparison: bool output.
pub(super) fn compare(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let (_, shape) = broadcast_present(cx.ins)?;
    Ok(vec![info(ElemType::BOOL, shape)])
}

/// `Where`: the broadcast of all three inputs, typed like input 1.
pub(super) fn where_(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let (_, shape) = broadcast_present(cx.ins)?;
    Ok(vec![info(input(cx.ins, 1)?.elem_type, shape)])
}
