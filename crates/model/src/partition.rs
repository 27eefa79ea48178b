//! Partition of a profile's fused tuning units into subgraphs (SGAT's tuning problems), each a
//! [`GraphDescriptor`] whose key is the subgraph key (the way back from a subgraph node to the
//! op descriptor the op bank and the simulator know is `GraphDescriptor::node_op`, in `key`).
//!
//! **Rule** (deterministic, over the units in their topological order): a subgraph grows unit
//! by unit and is closed after a unit when at most one tensor produced so far is still needed
//! later (a *single-tensor boundary*: the block's output, as after a ResNet bottleneck's
//! residual `Add`+`Relu` or a BERT layer's `LayerNorm`) and it holds at least
//! `MIN_SUBGRAPH_NODES` units, or when it reaches `MAX_SUBGRAPH_NODES` units. Liveness
//! follows each input's origin (through relabelling ops such as `Reshape`); graph inputs and
//! weights are never counted as live.
//!
//! **Nodes.** One node per unit, in unit order: op type = the unit's IR type, outputs = its
//! resolved outputs, attributes = its resolved attributes plus the descriptor facts a node has
//! no field for: `_fused_ops` (strs, when fused), `_impl_mode` (str), `_cube_math` (only when
//! not native). An input fed by a unit of the subgraph is an edge; when the consumer sees the
//! tensor in another shape, dtype or format than the producer wrote it (a relabelling op or a
//! layout change between them), the consumer's view is kept in `_in<j>_shape` (ints),
//! `_in<j>_dtype` and `_in<j>_format` (strs). Every other input is a graph input (one per
//! distinct tensor and view, in first-use order). Graph outputs: tensors produced here and read
//! after the subgraph or by nobody (model outputs), in production order. So
//! `GraphDescriptor::node_op` gives back exactly the unit's resolved descriptor, hence its op
//! key.

use std::collections::{BTreeMap, HashMap};

use tunebank_key::{
    AttrValue, BankKey, CubeMath, GraphDescriptor, GraphNode, KeyError, SocSpec, TensorDesc,
    TensorSource,
};

use super::ResolvedUnit;
use tunebank_failure::FailureKind;

/// The fewest units a subgraph is closed with at a single-tensor boundary.
pub(crate) const MIN_SUBGRAPH_NODES: usize = 2;

/// The most units one subgraph holds.
pub(crate) const MAX_SUBGRAPH_NODES: usize = 12;

/// One subgraph of a profile: which units, its descriptor and its key.
#[derive(Clone, Debug, PartialEq)]
pub struct Subgraph {
    /// For people: `<first unit name>..<last unit name>` (or the one unit's name).
    pub name: String,
    /// Indices of its units in the slice given to `partition`, in order; node `i` of the
    /// descriptor is unit `units[i]`.
    pub units: Vec<usize>,
    /// The descriptor (the subgraph key's preimage).
    pub descriptor: GraphDescriptor,
    /// Its key.
    pub key: BankKey,
}

/// Why a subgraph could not be built or read back.
#[derive(Debug, thiserror::Error)]
pub enum PartitionError {
    /// The descriptor has no key.
    #[error("subgraph {name}: {source}")]
    Key {
        /// Subgraph name.
        name: String,
        /// Cause.
        source: KeyError,
    },
}

/// Partitions `units` (the resolved units of ONE profile, in topological order) by the rule in
/// the module docs. `graph_options` are [`ResolvedOptions::graph_options`](tunebank_key::ResolvedOptions::graph_options);
/// every subgraph carries them. Deterministic; node names never enter the keys.
pub fn partition(
    units: &[ResolvedUnit],
    graph_options: &BTreeMap<String, String>,
    soc: &SocSpec,
) -> Result<Vec<Subgraph>, PartitionError> {
    let producer: HashMap<&str, usize> = units
        .iter()
        .enumerate()
        .flat_map(|(i, u)| u.unit.output_tensors.iter().map(move |t| (t.as_str(), i)))
        .collect();
    let mut last_use: HashMap<&str, usize> = HashMap::new();
    for (i, u) in units.iter().enumerate() {
        for t in &u.unit.input_origins {
            if producer.contains_key(t.as_str()) {
                let e = last_use.entry(t.as_str()).or_insert(i);
                *e = (*e).max(i);
            }
        }
    }
    let mut out = Vec::new();
    let mut start = 0;
    for i in 0..units.len() {
        let live = units[..=i]
            .iter()
            .flat_map(|u| &u.unit.output_tensors)
            .filter(|t| last_use.get(t.as_str()).is_some_and(|&l| l > i))
            .count();
        let len = i + 1 - start;
        if (live <= 1 && len >= MIN_SUBGRAPH_NODES)
            || len >= MAX_SUBGRAPH_NODES
            || i + 1 == units.len()
        {
            out.push(build(units, start..i + 1, &last_use, graph_options, soc)?);
            start = i + 1;
        }
    }
    Ok(out)
}

/// The subgraph of `units[range]`.
fn build(
    units: &[ResolvedUnit],
    range: std::ops::Range<usize>,
    last_use: &HashMap<&str, usize>,
    graph_options: &BTreeMap<String, String>,
    soc: &SocSpec,
) -> Result<Subgraph, PartitionError> {
    let mut produced: HashMap<&str, (u32, u32, &TensorDesc)> = HashMap::new();
    let mut inputs: Vec<TensorDesc> = Vec::new();
    let mut input_ids: HashMap<(&str, usize), u32> = HashMap::new();
    let mut nodes = Vec::new();
    for (n, ui) in range.clone().enumerate() {
        let u = &units[ui];
        let d = &u.resolved.descriptor;
        let mut attrs = d.attrs.clone();
        if !d.fused_ops.is_empty() {
            attrs.insert("_fused_ops".into(), AttrValue::Strs(d.fused_ops.clone()));
        }
        attrs.insert("_impl_mode".into(), AttrValue::Str(enum_str(&d.impl_mode)));
        if d.cube_math != CubeMath::Native {
            attrs.insert("_cube_math".into(), AttrValue::Str(enum_str(&d.cube_math)));
        }
        let mut srcs = Vec::new();
        for (j, (origin, want)) in u.unit.input_origins.iter().zip(&d.inputs).enumerate() {
            match produced.get(origin.as_str()) {
                Some(&(node, output, have)) => {
                    if have != want {
                        attrs.insert(format!("_in{j}_shape"), AttrValue::Ints(want.shape.clone()));
                        attrs.insert(
                            format!("_in{j}_dtype"),
                            AttrValue::Str(enum_str(&want.dtype)),
                        );
                        attrs.insert(
                            format!("_in{j}_format"),
                            AttrValue::Str(enum_str(&want.format)),
                        );
                        attrs.insert(
                            format!("_in{j}_ori_shape"),
                            AttrValue::Ints(want.ori_shape.clone()),
                        );
                        attrs.insert(
                            format!("_in{j}_ori_format"),
                            AttrValue::Str(enum_str(&want.ori_format)),
                        );
                    }
                    srcs.push(TensorSource::Node { node, output });
                }
                None => {
                    let pos = inputs
                        .iter()
                        .position(|t| t == want)
                        .unwrap_or(inputs.len());
                    let index = *input_ids.entry((origin.as_str(), pos)).or_insert_with(|| {
                        inputs.push(want.clone());
                        (inputs.len() - 1) as u32
                    });
                    srcs.push(TensorSource::GraphInput { index });
                }
            }
        }
        for (o, (name, t)) in u.unit.output_tensors.iter().zip(&d.outputs).enumerate() {
            produced.insert(name.as_str(), (n as u32, o as u32, t));
        }
        nodes.push(GraphNode {
            name: u.unit.name.clone(),
            op_type: d.op_type.clone(),
            inputs: srcs,
            outputs: d.outputs.clone(),
            attrs,
        });
    }
    let end = range.end;
    let mut outputs = Vec::new();
    for (n, ui) in range.clone().enumerate() {
        for (o, name) in units[ui].unit.output_tensors.iter().enumerate() {
            if last_use.get(name.as_str()).is_none_or(|&l| l >= end) {
                outputs.push(TensorSource::Node {
                    node: n as u32,
                    output: o as u32,
                });
            }
        }
    }
    let first = &units[range.start].unit.name;
    let last = &units[end - 1].unit.name;
    let name = if range.len() == 1 {
        first.clone()
    } else {
        format!("{first}..{last}")
    };
    let descriptor = GraphDescriptor {
        soc: soc.clone(),
        inputs,
        nodes,
        outputs,
        options: graph_options.clone(),
    };
    let key = descriptor.key().map_err(|source| PartitionError::Key {
        name: name.clone(),
        source,
    })?;
    Ok(Subgraph {
        name,
        units: range.collect(),
        descriptor,
        key,
    })
}

/// The serde (snake_case or GE) spelling of a unit enum.
fn enum_str<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

impl PartitionError {
    /// A subgraph that cannot be keyed or partitioned is the request's (its model).
    pub fn kind(&self) -> FailureKind {
        match self {
            PartitionError::Key { source, .. } => source.kind(),
        }
    }
}
