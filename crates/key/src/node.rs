//! The way back from a node of a subgraph's [`GraphDescriptor`] to the op descriptor the op
//! bank and the simulator know, and the tensor a [`TensorSource`] names: the node vocabulary
//! the model's partition writes and the simulator, the drivers and `bank-inspect` read.

use super::{
    AttrValue, CubeMath, DType, Format, GraphDescriptor, ImplMode, OpDescriptor, TensorDesc,
    TensorSource,
};
use tunebank_failure::FailureKind;

/// A node reference or node fact of a graph descriptor is inconsistent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("subgraph node {node}: {what}")]
pub struct NodeError {
    /// Node index.
    pub node: usize,
    /// What is wrong.
    pub what: String,
}

impl NodeError {
    /// A node that cannot be read back is the request's (its model or bank record).
    pub fn kind(&self) -> FailureKind {
        FailureKind::Input
    }
}

/// A unit enum from its serde spelling.
fn enum_from<T: serde::de::DeserializeOwned>(s: &str, node: usize) -> Result<T, NodeError> {
    serde_json::from_value(serde_json::Value::String(s.to_owned())).map_err(|_| NodeError {
        node,
        what: format!("unknown value {s:?}"),
    })
}

impl GraphDescriptor {
    /// The op descriptor of node `node` of `g`, as the op bank and the simulator know it: its
    /// inputs from the graph inputs and producers (or the consumer's own view, `_in<j>_*`), its
    /// outputs, and its attributes without the `_`-prefixed node facts, which fill `fused_ops`,
    /// `impl_mode` (default high_performance) and `cube_math`. For a node built by the model's
    /// partition (SGAT's subgraphs) this is the unit's resolved descriptor exactly (same op key). Errors on a dangling
    /// reference or an unreadable node fact.
    pub fn node_op(&self, node: usize) -> Result<OpDescriptor, NodeError> {
        let g = self;
        let err = |what: String| NodeError { node, what };
        let n = g
            .nodes
            .get(node)
            .ok_or_else(|| err(format!("no such node ({} nodes)", g.nodes.len())))?;
        let mut inputs = Vec::with_capacity(n.inputs.len());
        for (j, s) in n.inputs.iter().enumerate() {
            let t = g
                .source(s)
                .ok_or_else(|| err(format!("input {j}: dangling {s:?}")))?;
            let mut t = t.clone();
            if let Some(AttrValue::Ints(shape)) = n.attrs.get(&format!("_in{j}_shape")) {
                t.shape = shape.clone();
            }
            if let Some(AttrValue::Ints(shape)) = n.attrs.get(&format!("_in{j}_ori_shape")) {
                t.ori_shape = shape.clone();
            }
            if let Some(AttrValue::Str(s)) = n.attrs.get(&format!("_in{j}_dtype")) {
                t.dtype = enum_from::<DType>(s, node)?;
            }
            if let Some(AttrValue::Str(s)) = n.attrs.get(&format!("_in{j}_format")) {
                t.format = enum_from::<Format>(s, node)?;
            }
            if let Some(AttrValue::Str(s)) = n.attrs.get(&format!("_in{j}_ori_format")) {
                t.ori_format = enum_from::<Format>(s, node)?;
            }
            inputs.push(t);
        }
        let fused_ops = match n.attrs.get("_fused_ops") {
            Some(AttrValue::Strs(v)) => v.clone(),
            _ => Vec::new(),
        };
        let impl_mode = match n.attrs.get("_impl_mode") {
            Some(AttrValue::Str(s)) => enum_from::<ImplMode>(s, node)?,
            _ => ImplMode::HighPerformance,
        };
        let cube_math = match n.attrs.get("_cube_math") {
            Some(AttrValue::Str(s)) => enum_from::<CubeMath>(s, node)?,
            _ => CubeMath::Native,
        };
        Ok(OpDescriptor {
            op_type: n.op_type.clone(),
            fused_ops,
            inputs,
            outputs: n.outputs.clone(),
            attrs: n
                .attrs
                .iter()
                .filter(|(k, _)| !k.starts_with('_'))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            impl_mode,
            cube_math,
            soc: g.soc.clone(),
            origin: None,
        })
    }

    /// The tensor a source names, if it exists.
    pub fn source(&self, s: &TensorSource) -> Option<&TensorDesc> {
        match *s {
            TensorSource::GraphInput { index } => self.inputs.get(index as usize),
            TensorSource::Node { node, output } => self
                .nodes
                .get(node as usize)
                .and_then(|n| n.outputs.get(output as usize)),
        }
    }
}
