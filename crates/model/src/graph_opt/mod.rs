//! Graph optimizations ATC makes before it cuts a graph into kernels, applied to every imported
//! model whatever its framework, so that a unit is what ATC compiles: a per-channel affine
//! after a convolution (a `Mul` by a constant, then an `Add` or `Sub` of one: Keras 3 writes
//! an inference batch norm so, on constants the importer has folded) is folded into the
//! convolution's weights and bias, as GE's graph fusion folds a batch norm or scale into the
//! convolution before it: CANN's `AConv2dMulFusion` (`a_conv2d_mul_fusion_pass`: Conv2D → Mul
//! by a per-channel constant into one Conv2D) and, for the `Add`/`Sub`, the bias fold of
//! `AABiasaddConvFusion`. Only shapes are tracked, so the fold changes no dim: the weights keep
//! theirs and the convolution gains a `[C]` bias when it had none.
//!
//! A dilated convolution TensorFlow writes as SpaceToBatchND, Conv2D and BatchToSpaceND is one
//! dilated `Conv` first (`atrous.rs`), so that its bias and batch norm fold too, and a zero
//! spatial `Pad` before a convolution becomes its padding (`pad.rs`; a layout `Transpose`
//! after a Pad is moved above it first, so an NHWC graph's input Pad meets its convolution).
//! A layout `Transpose` pair around an element-wise op is cancelled (`transpose.rs`), so an
//! activation between TensorFlow's Conv3D transposes follows its convolution.
//!
//! A fold needs: the convolution's output read by that op alone (and not a graph output), the
//! other operand an initializer of one value per output channel (`[C,1,1]`, `[1,C,1,1]`) or a
//! single value (`[]`, `[1]`), and the convolution's weights an initializer of known dims.

use std::collections::HashMap;

use crate::graph::{ConstTensor, Graph};

mod atrous;
mod pad;
#[cfg(test)]
mod tests;
mod transpose;
pub(crate) use atrous::fold_atrous;
pub(crate) use pad::{fold_pad, push_transpose_above_pad};
pub(crate) use transpose::cancel_transposes_around_elementwise;

/// Folds every per-channel `Mul`/`Add`/`Sub` by a constant that follows a `Conv` into it;
/// returns how many ops were folded away.
pub(crate) fn fold_affine(graph: &mut Graph) -> usize {
    let mut folded = 0;
    loop {
        let readers = readers(graph);
        let Some((conv, op)) = (0..graph.nodes.len()).find_map(|i| foldable(graph, &readers, i))
        else {
            return folded;
        };
        fold(graph, conv, op);
        folded += 1;
    }
}

/// How many node inputs read each tensor.
fn readers(graph: &Graph) -> HashMap<&str, usize> {
    let mut r = HashMap::new();
    for n in &graph.nodes {
        for i in n.inputs.iter().filter(|i| !i.is_empty()) {
            *r.entry(i.as_str()).or_insert(0) += 1;
        }
    }
    r
}

/// The output channels of a `Conv` whose weights are an initializer.
fn channels(graph: &Graph, conv: usize) -> Option<i64> {
    let n = &graph.nodes[conv];
    if n.op_type != "Conv" || !n.domain.is_empty() {
        return None;
    }
    let w = graph.initializers.get(n.inputs.get(1)?)?;
    (w.dims.len() >= 3).then(|| w.dims[0])
}

/// Whether an initializer holds one value per channel of `c`, or one value.
fn per_channel(t: &ConstTensor, c: i64) -> bool {
    matches!(t.dims.as_slice(), [] | [1] | [1, 1, 1] | [1, 1, 1, 1])
        || t.dims == [c, 1, 1]
        || t.dims == [1, c, 1, 1]
}

/// `(conv, op)` when node `conv` is a convolution whose only reader `op` folds into it.
fn foldable(graph: &Graph, readers: &HashMap<&str, usize>, conv: usize) -> Option<(usize, usize)> {
    let c = channels(graph, conv)?;
    let out = graph.nodes[conv].outputs.first()?;
    if readers.get(out.as_str()) != Some(&1) || graph.outputs.iter().any(|o| &o.name == out) {
        return None;
    }
    let op = graph
        .nodes
        .iter()
        .position(|n| n.inputs.iter().any(|i| i == out))?;
    let n = &graph.nodes[op];
    if !n.domain.is_empty() || n.inputs.len() != 2 || n.outputs.len() != 1 {
        return None;
    }
    let other = match (n.op_type.as_str(), n.inputs[0] == *out) {
        ("Mul" | "Add", true) => &n.inputs[1],
        ("Mul" | "Add", false) => &n.inputs[0],
        ("Sub", true) => &n.inputs[1],
        _ => return None,
    };
    let t = graph.initializers.get(other)?;
    (per_channel(t, c) && !graph.inputs.iter().any(|i| &i.name == other)).then_some((conv, op))
}

/// Folds `op` into `conv`: an additive op gives the convolution a `[C]` bias if it had none;
/// `conv` then writes `op`'s output and `op` is gone.
fn fold(graph: &mut Graph, conv: usize, op: usize) {
    let additive = graph.nodes[op].op_type != "Mul";
    let out = graph.nodes[op].outputs[0].clone();
    if additive && graph.nodes[conv].inputs.get(2).is_none_or(String::is_empty) {
        let c = channels(graph, conv).expect("checked by foldable");
        let name = format!("{}.folded_bias", graph.nodes[conv].name);
        let elem_type = graph.initializers[&graph.nodes[conv].inputs[1]].elem_type;
        graph.initializers.insert(
            name.clone(),
            ConstTensor {
                elem_type,
                dims: vec![c],
                ints: None,
                external: false,
            },
        );
        let inputs = &mut graph.nodes[conv].inputs;
        inputs.resize(2, String::new());
        inputs.push(name);
    }
    graph.nodes[conv].outputs[0] = out;
    graph.nodes.remove(op);
}

#[cfg(test)]
mod affine_tests {
    use super::*;
    use crate::graph::{ElemType, Node, ValueDecl};
    use std::collections::BTreeMap;

    fn node(name: &str, op: &str, inputs: &[&str]) -> Node {
        Node {
            name: name.into(),
            op_type: op.into(),
            domain: String::new(),
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            outputs: vec![name.into()],
            attrs: BTreeMap::new(),
        }
    }

    fn init(dims: &[i64]) -> ConstTensor {
        ConstTensor {
            elem_type: ElemType::FLOAT,
            dims: dims.to_vec(),
            ints: None,
            external: false,
        }
    }

    fn graph(nodes: Vec<Node>, inits: &[(&str, &[i64])]) -> Graph {
        Graph {
            name: "g".into(),
            inputs: vec![ValueDecl {
                name: "x".into(),
                elem_type: ElemType::FLOAT,
                shape: Some(vec![1, 3, 8, 8]),
                dim_params: vec![None; 4],
            }],
            outputs: vec![],
            value_info: BTreeMap::new(),
            initializers: inits
                .iter()
                .map(|(n, d)| (n.to_string(), init(d)))
                .collect(),
            nodes,
        }
    }

    /// Keras's batch norm arithmetic after a convolution folds: the Mul by the scale and the
    /// Add of the shift are gone, the convolution gains a bias of its channels and writes the
    /// Add's output, which the Relu still reads.
    #[test]
    fn a_per_channel_scale_and_shift_fold_into_the_convolution() {
        let mut g = graph(
            vec![
                node("conv", "Conv", &["x", "w"]),
                node("scale", "Mul", &["conv", "s"]),
                node("shift", "Add", &["scale", "b"]),
                node("relu", "Relu", &["shift"]),
            ],
            &[
                ("w", &[16, 3, 3, 3]),
                ("s", &[16, 1, 1]),
                ("b", &[16, 1, 1]),
            ],
        );
        assert_eq!(fold_affine(&mut g), 2);
        let ops: Vec<&str> = g.nodes.iter().map(|n| n.op_type.as_str()).collect();
        assert_eq!(ops, ["Conv", "Relu"]);
        assert_eq!(g.nodes[0].inputs, ["x", "w", "conv.folded_bias"]);
        assert_eq!(g.nodes[0].outputs, ["shift"]);
        assert_eq!(g.initializers["conv.folded_bias"].dims, [16]);
    }

    /// Nothing folds when the constant is not per channel, when the convolution's output has
    /// another reader, or when it is a graph output.
    #[test]
    fn only_a_sole_reader_by_a_per_channel_constant_folds() {
        let cases: Vec<(Graph, &str)> = vec![
            (
                graph(
                    vec![
                        node("conv", "Conv", &["x", "w"]),
                        node("m", "Mul", &["conv", "s"]),
                    ],
                    &[("w", &[16, 3, 3, 3]), ("s", &[8])],
                ),
                "a constant along W, not the channels",
            ),
            (
                graph(
                    vec![
                        node("conv", "Conv", &["x", "w"]),
                        node("m", "Mul", &["conv", "s"]),
                        node("r", "Relu", &["conv"]),
                    ],
                    &[("w", &[16, 3, 3, 3]), ("s", &[16, 1, 1])],
                ),
                "a second reader",
            ),
            (
                graph(
                    vec![
                        node("conv", "Conv", &["x", "w"]),
                        node("m", "Sub", &["s", "conv"]),
                    ],
                    &[("w", &[16, 3, 3, 3]), ("s", &[16, 1, 1])],
                ),
                "a constant minus the convolution (a negation, not a shift)",
            ),
        ];
        for (mut g, why) in cases {
            let before = g.nodes.len();
            assert_eq!(fold_affine(&mut g), 0, "{why}");
            assert_eq!(g.nodes.len(), before, "{why}");
        }
    }
}
