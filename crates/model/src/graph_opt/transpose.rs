//! A layout `Transpose` pair around an element-wise op cancelled: `Transpose(p)` → op →
//! `Transpose(p⁻¹)` is the op on the untransposed tensor, as tf2onnx's transpose optimizer
//! writes it. TensorFlow's Conv3D in an NDHWC graph is imported as Transpose → `Conv` →
//! Transpose back, so an activation between two of them sat between a Transpose and its
//! inverse; cancelled, it follows the convolution directly and fuses with it, as in the
//! tf2onnx export.
//!
//! A cancellation needs: the op element-wise and layout-blind (`ELEMENTWISE`) with its other
//! inputs initializers (a `Clip`'s bounds), each intermediate tensor read by the next op alone
//! and not a graph output, and the second permutation the inverse of the first.

use crate::graph::{Attr, Graph};

/// Unary ops that act on each element alone, whatever the layout.
const ELEMENTWISE: &[&str] = &[
    "Abs",
    "Ceil",
    "Clip",
    "Cos",
    "Elu",
    "Erf",
    "Exp",
    "Floor",
    "Gelu",
    "HardSigmoid",
    "HardSwish",
    "LeakyRelu",
    "Log",
    "Mish",
    "Neg",
    "Reciprocal",
    "Relu",
    "Round",
    "Rsqrt",
    "Selu",
    "Sigmoid",
    "Sign",
    "Sin",
    "Softplus",
    "Softsign",
    "Sqrt",
    "Square",
    "Tanh",
];

fn perm(graph: &Graph, i: usize) -> Option<&Vec<i64>> {
    let n = &graph.nodes[i];
    match n.attrs.get("perm") {
        Some(Attr::Ints(p)) if n.op_type == "Transpose" && n.domain.is_empty() => Some(p),
        _ => None,
    }
}

/// Cancels every such pair; returns how many.
pub(crate) fn cancel_transposes_around_elementwise(graph: &mut Graph) -> usize {
    let mut cancelled = 0;
    loop {
        let readers = super::readers(graph);
        let alone =
            |t: &str| readers.get(t) == Some(&1) && !graph.outputs.iter().any(|o| o.name == t);
        let reader = |t: &str| {
            graph
                .nodes
                .iter()
                .position(|n| n.inputs.iter().any(|i| i == t))
        };
        let found = (0..graph.nodes.len()).find_map(|t1| {
            let p = perm(graph, t1)?;
            let out1 = graph.nodes[t1].outputs.first()?;
            let e = reader(out1)?;
            let en = &graph.nodes[e];
            let others_constant = en.inputs[1..]
                .iter()
                .all(|i| i.is_empty() || graph.initializers.contains_key(i));
            if !ELEMENTWISE.contains(&en.op_type.as_str())
                || !en.domain.is_empty()
                || en.inputs.first() != Some(out1)
                || !others_constant
                || en.outputs.len() != 1
                || !alone(out1)
                || !alone(&en.outputs[0])
            {
                return None;
            }
            let t2 = reader(&en.outputs[0])?;
            let q = perm(graph, t2)?;
            let inverse = p.len() == q.len()
                && (0..q.len()).all(|i| {
                    usize::try_from(q[i]).ok().and_then(|k| p.get(k)) == Some(&(i as i64))
                });
            inverse.then_some((t1, e, t2))
        });
        let Some((t1, e, t2)) = found else {
            return cancelled;
        };
        let x = graph.nodes[t1].inputs[0].clone();
        let out = graph.nodes[t2].outputs[0].clone();
        graph.nodes[e].inputs[0] = x;
        graph.nodes[e].outputs[0] = out;
        let (hi, lo) = (t1.max(t2), t1.min(t2));
        graph.nodes.remove(hi);
        graph.nodes.remove(lo);
        cancelled += 1;
    }
}
