//! A dilated convolution as one op. TensorFlow writes `tf.nn.convolution` with a dilation
//! rate (Keras's `Conv2D(dilation_rate=…)`, DeepLab's atrous pyramid) as `SpaceToBatchND` →
//! a VALID, stride-1 `Conv2D` → `BatchToSpaceND`; tf2onnx's dilation rewriter and GE's graph
//! fusion (CANN's `spacetobatch_conv2d_batchtospace_fusion_pass`) compile it as one
//! convolution whose `dilations` are the block shape. For stride 1
//! the convolution then pads by the space-to-batch paddings less the batch-to-space crops
//! (top `pt − ct`, bottom `pb − cb`, left `pl − cl`, right `pr − cr`), which gives the same
//! output.
//!
//! A fold needs: the block an initializer of two values equal in both ops, paddings and crops
//! initializers of four, no pad left negative; the convolution VALID (pads 0), stride 1 and
//! undilated; each intermediate tensor read by the next op alone and not a graph output.

use std::collections::HashMap;

use crate::graph::{Attr, Graph};

/// Folds every SpaceToBatchND → Conv → BatchToSpaceND chain into a dilated `Conv`; returns
/// how many were folded.
pub(crate) fn fold_atrous(graph: &mut Graph) -> usize {
    let mut folded = 0;
    loop {
        let readers = super::readers(graph);
        let Some(chain) = (0..graph.nodes.len()).find_map(|i| chain(graph, &readers, i)) else {
            return folded;
        };
        apply(graph, chain);
        folded += 1;
    }
}

/// A foldable chain: the three nodes, the new `dilations` and `pads` (ONNX order).
struct Chain {
    s2b: usize,
    conv: usize,
    b2s: usize,
    dilations: Vec<i64>,
    pads: Vec<i64>,
}

/// The integer values of an initializer input.
fn ints<'g>(graph: &'g Graph, name: Option<&String>) -> Option<&'g [i64]> {
    graph.initializers.get(name?)?.ints.as_deref()
}

/// The only node reading `tensor`, when it is read once and is not a graph output.
fn only_reader(graph: &Graph, readers: &HashMap<&str, usize>, tensor: &str) -> Option<usize> {
    if readers.get(tensor) != Some(&1) || graph.outputs.iter().any(|o| o.name == tensor) {
        return None;
    }
    graph
        .nodes
        .iter()
        .position(|n| n.inputs.iter().any(|i| i == tensor))
}

fn chain(graph: &Graph, readers: &HashMap<&str, usize>, s2b: usize) -> Option<Chain> {
    let s = &graph.nodes[s2b];
    if s.op_type != "SpaceToBatchND" || !s.domain.is_empty() || s.inputs.len() != 3 {
        return None;
    }
    let block =
        ints(graph, s.inputs.get(1)).filter(|b| b.len() == 2 && b.iter().all(|&v| v >= 1))?;
    let [pt, pb, pl, pr] = <[i64; 4]>::try_from(ints(graph, s.inputs.get(2))?).ok()?;
    let conv = only_reader(graph, readers, s.outputs.first()?)?;
    let c = &graph.nodes[conv];
    let ones = |name: &str| match c.attrs.get(name) {
        None => true,
        Some(Attr::Ints(v)) => v.iter().all(|&x| x == 1),
        Some(_) => false,
    };
    let valid = match (c.attrs.get("auto_pad"), c.attrs.get("pads")) {
        (Some(Attr::Str(p)), _) if p != "VALID" && p != "NOTSET" => false,
        (_, Some(Attr::Ints(p))) => p.iter().all(|&x| x == 0),
        (_, None) => true,
        _ => false,
    };
    if c.op_type != "Conv" || !c.domain.is_empty() || c.inputs.first() != s.outputs.first() {
        return None;
    }
    if !(ones("strides") && ones("dilations") && valid) {
        return None;
    }
    let b2s = only_reader(graph, readers, c.outputs.first()?)?;
    let b = &graph.nodes[b2s];
    if b.op_type != "BatchToSpaceND"
        || !b.domain.is_empty()
        || b.inputs.first() != c.outputs.first()
    {
        return None;
    }
    if ints(graph, b.inputs.get(1))? != block {
        return None;
    }
    let [ct, cb, cl, cr] = <[i64; 4]>::try_from(ints(graph, b.inputs.get(2))?).ok()?;
    let pads = vec![pt - ct, pl - cl, pb - cb, pr - cr];
    pads.iter().all(|&p| p >= 0).then(|| Chain {
        s2b,
        conv,
        b2s,
        dilations: block.to_vec(),
        pads,
    })
}

fn apply(graph: &mut Graph, ch: Chain) {
    let x = graph.nodes[ch.s2b].inputs[0].clone();
    let out = graph.nodes[ch.b2s].outputs[0].clone();
    let c = &mut graph.nodes[ch.conv];
    c.inputs[0] = x;
    c.outputs[0] = out;
    c.attrs.remove("auto_pad");
    c.attrs.insert("dilations".into(), Attr::Ints(ch.dilations));
    c.attrs.insert("pads".into(), Attr::Ints(ch.pads));
    let (hi, lo) = (ch.s2b.max(ch.b2s), ch.s2b.min(ch.b2s));
    graph.nodes.remove(hi);
    graph.nodes.remove(lo);
}
