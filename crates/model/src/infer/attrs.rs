//! Attribute normalisation: a node's ONNX attributes become the key's typed [`AttrValue`]s with
//! the op's defaults filled in (so "absent" and "explicit default" give one key), and typed
//! readers of the raw attributes the per-op inference uses.

use std::collections::BTreeMap;

use super::error::InferError;
use super::shape::norm_axis;
use crate::graph::{Attr, Node};
use tunebank_key::AttrValue;

/// A node's normalised attributes, by name.
pub(super) type Attrs = BTreeMap<String, AttrValue>;

/// Attribute defaults inserted when absent, per op type.
fn defaults(op: &str, opset: i64) -> Vec<(&'static str, AttrValue)> {
    let f = |v: f32| AttrValue::Float(f64::from(v));
    match op {
        "Conv" | "ConvTranspose" => vec![("group", AttrValue::Int(1))],
        "BatchNormalization" => vec![("epsilon", f(1e-5)), ("momentum", f(0.9))],
        "Gemm" => vec![
            ("alpha", f(1.0)),
            ("beta", f(1.0)),
            ("transA", AttrValue::Int(0)),
            ("transB", AttrValue::Int(0)),
        ],
        "LayerNormalization" => vec![
            ("axis", AttrValue::Int(-1)),
            ("epsilon", f(1e-5)),
            ("stash_type", AttrValue::Int(1)),
        ],
        "Softmax" | "LogSoftmax" | "Hardmax" => {
            vec![("axis", AttrValue::Int(if opset >= 13 { -1 } else { 1 }))]
        }
        "Flatten" => vec![("axis", AttrValue::Int(1))],
        "Split" | "Gather" => vec![("axis", AttrValue::Int(0))],
        "LeakyRelu" => vec![("alpha", f(0.01))],
        "Elu" => vec![("alpha", f(1.0))],
        "HardSigmoid" => vec![("alpha", f(0.2)), ("beta", f(0.5))],
        "Gelu" => vec![("approximate", AttrValue::Str("none".into()))],
        "AveragePool" => vec![
            ("ceil_mode", AttrValue::Int(0)),
            ("count_include_pad", AttrValue::Int(0)),
        ],
        "MaxPool" => vec![
            ("ceil_mode", AttrValue::Int(0)),
            ("storage_order", AttrValue::Int(0)),
        ],
        _ => vec![],
    }
}

/// The node's attributes as key attributes (tensor and other attributes dropped), with the
/// op's defaults (under `opset`) filled in where absent.
pub(super) fn convert_attrs(node: &Node, opset: i64) -> Attrs {
    let mut out = Attrs::new();
    for (k, v) in &node.attrs {
        let v = match v {
            Attr::Float(f) => AttrValue::Float(f64::from(*f)),
            Attr::Int(i) => AttrValue::Int(*i),
            Attr::Str(s) => AttrValue::Str(s.clone()),
            Attr::Floats(f) => AttrValue::Floats(f.iter().map(|&x| f64::from(x)).collect()),
            Attr::Ints(i) => AttrValue::Ints(i.clone()),
            Attr::Strs(s) => AttrValue::Strs(s.clone()),
            Attr::Tensor(_) | Attr::Other => continue,
        };
        out.insert(k.clone(), v);
    }
    for (k, v) in defaults(&node.op_type, opset) {
        out.entry(k.to_string()).or_insert(v);
    }
    out
}

/// The node's integer attribute `name`; `None` when absent or of another type.
pub(super) fn attr_int(node: &Node, name: &str) -> Option<i64> {
    match node.attrs.get(name) {
        Some(Attr::Int(i)) => Some(*i),
        _ => None,
    }
}

/// The node's integer-list attribute `name`; `None` when absent or of another type.
pub(super) fn attr_ints(node: &Node, name: &str) -> Option<Vec<i64>> {
    match node.attrs.get(name) {
        Some(Attr::Ints(i)) => Some(i.clone()),
        _ => None,
    }
}

/// The node's string attribute `name`; `None` when absent or of another type.
pub(super) fn attr_str(node: &Node, name: &str) -> Option<String> {
    match node.attrs.get(name) {
        Some(Attr::Str(s)) => Some(s.clone()),
        _ => None,
    }
}

/// Makes the integer axis attribute `name` of `attrs` non-negative for `rank` and returns it.
/// Errors: the attribute is absent or not an integer, or out of range for `rank`.
pub(super) fn normalise_axis(
    attrs: &mut Attrs,
    name: &str,
    rank: usize,
) -> Result<usize, InferError> {
    let axis = match attrs.get(name) {
        Some(AttrValue::Int(a)) => *a,
        _ => {
            return Err(InferError::IntAttr {
                attr: name.to_string(),
            })
        }
    };
    let a = norm_axis(axis, rank)?;
    attrs.insert(name.into(), AttrValue::Int(a as i64));
    Ok(a)
}
