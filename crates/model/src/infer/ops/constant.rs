//! Ops whose outputs are constants the importer can track: `Constant` (its value attribute),
//! `ConstantOfShape` (a shape input) and `Shape` (the input's static dims as int64 values).

use super::Ctx;
use crate::graph::{Attr, ElemType};
use crate::infer::attrs::{attr_int, Attrs};
use crate::infer::error::InferError;
use crate::infer::shape::{check_dims, const_info, const_values, info, input};
use crate::infer::TensorInfo;

/// `Constant`: typed and shaped by its one value attribute; integer values tracked.
pub(super) fn constant(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let (name, attr) = cx
        .node
        .attrs
        .iter()
        .next()
        .ok_or(InferError::MissingConstantValue)?;
    Ok(vec![match (name.as_str(), attr) {
        ("value", Attr::Tensor(t)) => const_info(t),
        ("value_float", Attr::Float(_)) => info(ElemType::FLOAT, vec![]),
        ("value_floats", Attr::Floats(f)) => info(ElemType::FLOAT, vec![f.len() as i64]),
        ("value_int", Attr::Int(i)) => TensorInfo {
            elem_type: ElemType::INT64,
            shape: vec![],
            value: Some(vec![*i]),
        },
        ("value_ints", Attr::Ints(i)) => TensorInfo {
            elem_type: ElemType::INT64,
            shape: vec![i.len() as i64],
            value: Some(i.clone()),
        },
        ("value_string", _) => info(ElemType(8), vec![]),
        ("value_strings", Attr::Strs(s)) => info(ElemType(8), vec![s.len() as i64]),
        (other, _) => {
            return Err(InferError::ConstantAttr {
                attr: other.to_string(),
            })
        }
    }])
}

/// `ConstantOfShape`: the shape input's values, typed by the `value` tensor (float without).
pub(super) fn constant_of_shape(
    cx: &Ctx<'_>,
    _: &mut Attrs,
) -> Result<Vec<TensorInfo>, InferError> {
    let s = const_values(cx.ins, 0, "shape")?;
    check_dims(&s)?;
    let elem = match cx.node.attrs.get("value") {
        Some(Attr::Tensor(t)) => t.elem_type,
        _ => ElemType::FLOAT,
    };
    Ok(vec![info(elem, s)])
}

/// `Shape`: the dims `start..end` of input 0 as a 1-D int64 tensor, its values known when
/// none is dynamic.
pub(super) fn shape(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let x = input(cx.ins, 0)?;
    let r = x.shape.len() as i64;
    let clamp = |v: i64| if v < 0 { (v + r).max(0) } else { v.min(r) } as usize;
    let start = clamp(attr_int(cx.node, "start").unwrap_or(0));
    let end = clamp(attr_int(cx.node, "end").unwrap_or(r)).max(start);
    let dims = x.shape[start..end].to_vec();
    let value = (!dims.iter().any(|&d| d < 0)).then(|| dims.clone());
    Ok(vec![TensorInfo {
        elem_type: ElemType::INT64,
        shape: vec![dims.len() as i64],
        value,
    }])
}
