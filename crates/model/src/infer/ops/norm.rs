//! Normalisation ops with statistics outputs: `BatchNormalization` (per-channel running mean
//! and variance) and `LayerNormalization` (mean and inverse std-dev over the normalised axes,
//! `axis` made non-negative).

use super::Ctx;
use crate::graph::ElemType;
use crate::infer::attrs::{normalise_axis, Attrs};
use crate::infer::error::InferError;
use crate::infer::shape::{info, input};
use crate::infer::TensorInfo;

/// `BatchNormalization`: input 0's shape, then per-channel statistics, as many as the node
/// has outputs; no values tracked.
pub(super) fn batch_norm(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    if x.shape.len() < 2 {
        return Err(InferError::Rank {
            expected: "an N,C,… input",
            shape: x.shape.clone(),
        });
    }
    let c = info(x.elem_type, vec![x.shape[1]]);
    Ok(vec![x.clone(), c.clone(), c]
        .into_iter()
        .take(cx.node.outputs.len().max(1))
        .map(|mut t| {
            t.value = None;
            t
        })
        .collect())
}

/// `LayerNormalization`: input 0's shape, then float mean and inverse std-dev shaped like the
/// input with 1 from `axis` on.
pub(super) fn layer_norm(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    let axis = normalise_axis(attrs, "axis", x.shape.len())?;
    let mut stat = x.shape[..axis].to_vec();
    stat.resize(x.shape.len(), 1);
    Ok(vec![
        info(x.elem_type, x.shape.clone()),
        info(ElemType::FLOAT, stat.clone()),
        info(ElemType::FLOAT, stat),
    ])
}
