//! A zero `Pad` of H and W before a convolution becomes the convolution's padding, as
//! tf2onnx's optimizer and GE's `PadConv2dFusionPass` compile Keras's `ZeroPadding2D` before a
//! stride-2 stem (ResNet's 7×7, MobileNetV2's depthwise convolutions): the convolution pads
//! by its own pads plus the Pad's (ONNX order top, left, bottom, right).
//!
//! A fold needs: a `Pad` of mode `constant` with no fill value input (zeros) and constant
//! pads touching only the last two dims of a 4-D tensor, read by a `Conv` alone (as its data
//! input) whose padding is explicit (`pads`, or `auto_pad` NOTSET/VALID), and the Pad's
//! output not a graph output.

use crate::graph::{Attr, Graph};

/// Folds every zero spatial `Pad` before a `Conv` into it; returns how many were folded.
pub(crate) fn fold_pad(graph: &mut Graph) -> usize {
    let mut folded = 0;
    loop {
        let readers = super::readers(graph);
        let found = (0..graph.nodes.len()).find_map(|p| {
            let n = &graph.nodes[p];
            if n.op_type != "Pad" || !n.domain.is_empty() || n.inputs.len() != 2 {
                return None;
            }
            if !matches!(n.attrs.get("mode"), None | Some(Attr::Str(_))) {
                return None;
            }
            if let Some(Attr::Str(m)) = n.attrs.get("mode") {
                if m != "constant" {
                    return None;
                }
            }
            let pads = graph.initializers.get(&n.inputs[1])?.ints.as_deref()?;
            let [0, 0, t, l, 0, 0, b, r] = <[i64; 8]>::try_from(pads).ok()? else {
                return None;
            };
            let out = n.outputs.first()?;
            if readers.get(out.as_str()) != Some(&1) || graph.outputs.iter().any(|o| &o.name == out)
            {
                return None;
            }
            let conv = graph
                .nodes
                .iter()
                .position(|c| c.inputs.first() == Some(out))?;
            let c = &graph.nodes[conv];
            if c.op_type != "Conv" || !c.domain.is_empty() {
                return None;
            }
            let own = match (c.attrs.get("auto_pad"), c.attrs.get("pads")) {
                (Some(Attr::Str(a)), _) if a != "NOTSET" && a != "VALID" => return None,
                (_, Some(Attr::Ints(v))) if v.len() == 4 => v.clone(),
                (_, None) => vec![0; 4],
                _ => return None,
            };
            let sum = vec![own[0] + t, own[1] + l, own[2] + b, own[3] + r];
            (t >= 0 && l >= 0 && b >= 0 && r >= 0).then_some((p, conv, sum))
        });
        let Some((p, conv, pads)) = found else {
            return folded;
        };
        let x = graph.nodes[p].inputs[0].clone();
        let c = &mut graph.nodes[conv];
        c.inputs[0] = x;
        c.attrs.remove("auto_pad");
        c.attrs.insert("pads".into(), Attr::Ints(pads));
        graph.nodes.remove(p);
        folded += 1;
    }
}

/// Moves a layout `Transpose` that reads a `Pad` alone above it (the Pad's pads permuted), so
/// that a Pad an NHWC graph applies before its input transpose meets the convolution after
/// it: `x → Pad → Transpose → Conv` becomes `x → Transpose → Pad → Conv`. Returns how many
/// were moved.
pub(crate) fn push_transpose_above_pad(graph: &mut Graph) -> usize {
    let mut moved = 0;
    loop {
        let readers = super::readers(graph);
        let found = (0..graph.nodes.len()).find_map(|p| {
            let n = &graph.nodes[p];
            if n.op_type != "Pad" || !n.domain.is_empty() || n.inputs.len() != 2 {
                return None;
            }
            let pads = graph.initializers.get(&n.inputs[1])?.ints.clone()?;
            let out = n.outputs.first()?;
            if readers.get(out.as_str()) != Some(&1) || graph.outputs.iter().any(|o| &o.name == out)
            {
                return None;
            }
            let t = graph
                .nodes
                .iter()
                .position(|c| c.inputs.first() == Some(out))?;
            let tn = &graph.nodes[t];
            let Some(Attr::Ints(perm)) = tn.attrs.get("perm") else {
                return None;
            };
            let r = perm.len();
            if tn.op_type != "Transpose" || !tn.domain.is_empty() || pads.len() != 2 * r || t < p {
                return None;
            }
            let mut sorted = perm.clone();
            sorted.sort_unstable();
            if sorted != (0..r as i64).collect::<Vec<_>>() {
                return None;
            }
            let permuted: Vec<i64> = (0..2 * r)
                .map(|i| pads[(i / r) * r + perm[i % r] as usize])
                .collect();
            Some((p, t, permuted))
        });
        let Some((p, t, permuted)) = found else {
            return moved;
        };
        let pads_name = format!("{}/pads_after_transpose", graph.nodes[p].name);
        let mut pads_t = graph.initializers[&graph.nodes[p].inputs[1]].clone();
        pads_t.ints = Some(permuted);
        graph.initializers.insert(pads_name.clone(), pads_t);
        let x = graph.nodes[p].inputs[0].clone();
        let mid = graph.nodes[p].outputs[0].clone();
        let out = graph.nodes[t].outputs[0].clone();
        graph.nodes[t].inputs[0] = x;
        graph.nodes[t].outputs[0] = mid.clone();
        graph.nodes[p].inputs = vec![mid, pads_name];
        graph.nodes[p].outputs[0] = out;
        graph.nodes.swap(p, t);
        moved += 1;
    }
}
