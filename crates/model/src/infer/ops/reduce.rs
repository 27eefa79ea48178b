//! Reductions: the `Reduce*` family (axes from the input or the attribute, sorted and made
//! non-negative, `keepdims` explicit) and `ArgMax` / `ArgMin` (int64 indices).

use super::Ctx;
use crate::graph::ElemType;
use crate::infer::attrs::{attr_int, attr_ints, Attrs};
use crate::infer::error::InferError;
use crate::infer::shape::{const_values, info, input, norm_axis, opt_input};
use crate::infer::TensorInfo;
use tunebank_key::AttrValue;

/// A `Reduce*` op: the reduced axes become 1 (`keepdims`) or disappear; no axes reduce all,
/// or none under `noop_with_empty_axes`.
pub(super) fn reduce(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let (node, ins) = (cx.node, cx.ins);
    let x = input(ins, 0)?;
    let r = x.shape.len();
    let axes = match opt_input(ins, 1) {
        Some(_) => Some(const_values(ins, 1, "axes")?),
        None => attr_ints(node, "axes"),
    };
    let keep = attr_int(node, "keepdims").unwrap_or(1) != 0;
    let noop = attr_int(node, "noop_with_empty_axes").unwrap_or(0) != 0;
    let axes: Vec<usize> = match axes {
        Some(a) if !a.is_empty() => {
            let mut a = a
                .iter()
                .map(|&v| norm_axis(v, r))
                .collect::<Result<Vec<_>, _>>()?;
            a.sort_unstable();
            a.dedup();
            a
        }
        _ if noop => vec![],
        _ => (0..r).collect(),
    };
    attrs.insert(
        "axes".into(),
        AttrValue::Ints(axes.iter().map(|&a| a as i64).collect()),
    );
    attrs.insert("keepdims".into(), AttrValue::Int(i64::from(keep)));
    // The axes are explicit now, so whether an empty list meant none or all says nothing more.
    attrs.remove("noop_with_empty_axes");
    let shape: Vec<i64> = (0..r)
        .filter_map(|i| match (axes.contains(&i), keep) {
            (true, true) => Some(1),
            (true, false) => None,
            (false, _) => Some(x.shape[i]),
        })
        .collect();
    // Shape arithmetic: the product (or sum, max, min) of a known shape vector's values, as
    // tf_keras's LayerNormalization computes its Reshape target.
    let value = match (&x.value, r, axes.as_slice()) {
        (Some(v), 1, [0]) => fold_values(&node.op_type, v).map(|y| vec![y]),
        (Some(v), 0, []) => Some(v.clone()),
        _ => None,
    };
    Ok(vec![TensorInfo {
        value,
        ..info(x.elem_type, shape)
    }])
}

/// A reduction of integer values: `None` for another op or on overflow.
fn fold_values(op: &str, v: &[i64]) -> Option<i64> {
    match op {
        "ReduceProd" => v.iter().try_fold(1i64, |a, &b| a.checked_mul(b)),
        "ReduceSum" => v.iter().try_fold(0i64, |a, &b| a.checked_add(b)),
        "ReduceMax" => v.iter().copied().max(),
        "ReduceMin" => v.iter().copied().min(),
        _ => None,
    }
}

/// `ArgMax`, `ArgMin`: int64 indices with `axis` reduced (kept as 1 under `keepdims`).
pub(super) fn arg_reduce(cx: &Ctx<'_>, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    let axis = norm_axis(attr_int(cx.node, "axis").unwrap_or(0), x.shape.len())?;
    let keep = attr_int(cx.node, "keepdims").unwrap_or(1) != 0;
    attrs.insert("axis".into(), AttrValue::Int(axis as i64));
    attrs.insert("keepdims".into(), AttrValue::Int(i64::from(keep)));
    let mut shape = x.shape.clone();
    if keep {
        shape[axis] = 1;
    } else {
        shape.remove(axis);
    }
    Ok(vec![info(ElemType::INT64, shape)])
}
