//! The simulator's view of a subgraph mapped from AOE's graph bank. AOE records device shapes
//! only (the mapping sets `ori_shape` = shape and `ori_format` = format) and no attributes,
//! while the op model reads logical shapes and a Conv2D's strides and pads. [`simulator_view`]
//! fills them in by fixed layout rules, never from times:
//!
//! - an NC1HWC0 tensor `[N, C1, H, W, C0]` reads as NCHW `[N, C1·C0, H, W]`;
//! - a FRACTAL_NZ tensor `[…, N1, M1, 16, C0]` reads as ND `[…, M1·16, N1·C0]`;
//! - a Conv2D's FRACTAL_Z weight `[C1·kh·kw, N1, 16, C0]` reads as NCHW `[N1·16, C1·C0, kh, kw]`
//!   with C1 from the input, kh = kw when kh·kw is a square (else 1 × kh·kw); its strides are
//!   ⌈H / Ho⌉ when the node's output (its consumer's view) gives Ho, Wo, else 1, and its pads
//!   the smallest symmetric ones that give that output size (`(k − 1) / 2` without an output);
//! - a MatMulV2/BatchMatMulV2 gets the transpose flags under which its logical shapes agree.
//!
//! The view is for timing only: its descriptor's key is not the record's.

use tunebank_key::{AttrValue, Format, GraphDescriptor, TensorDesc, TensorSource};

/// The logical form of a device-format tensor whose original form is its device form.
fn logical(t: &mut TensorDesc) {
    if t.ori_format != t.format || t.ori_shape != t.shape {
        return;
    }
    let s = &t.shape;
    match t.format {
        Format::NC1HWC0 if s.len() == 5 => {
            t.ori_shape = vec![s[0], s[1] * s[4], s[2], s[3]];
            t.ori_format = Format::NCHW;
        }
        Format::FractalNz if s.len() >= 4 => {
            let r = s.len();
            let mut o = s[..r - 4].to_vec();
            o.extend([s[r - 3] * s[r - 2], s[r - 4] * s[r - 1]]);
            t.ori_shape = o;
            t.ori_format = Format::ND;
        }
        _ => {}
    }
}

/// The tensor a source names, mutably.
fn tensor_mut<'g>(g: &'g mut GraphDescriptor, s: &TensorSource) -> Option<&'g mut TensorDesc> {
    match *s {
        TensorSource::GraphInput { index } => g.inputs.get_mut(index as usize),
        TensorSource::Node { node, output } => g
            .nodes
            .get_mut(node as usize)?
            .outputs
            .get_mut(output as usize),
    }
}

/// The view of `g` the op model can time (see the module docs).
pub fn simulator_view(g: &GraphDescriptor) -> GraphDescriptor {
    let mut v = g.clone();
    for i in 0..v.nodes.len() {
        if v.nodes[i].op_type == "Conv2D" {
            conv_view(&mut v, i);
        }
    }
    v.inputs.iter_mut().for_each(logical);
    for n in &mut v.nodes {
        n.outputs.iter_mut().for_each(logical);
    }
    for i in 0..v.nodes.len() {
        if matches!(v.nodes[i].op_type.as_str(), "MatMulV2" | "BatchMatMulV2") {
            matmul_view(&mut v, i);
        }
    }
    v
}

/// MatMulV2/BatchMatMulV2 node `i`: the transpose flags its logical shapes imply (AOE records
/// no attributes): none when the inner dimensions agree, else the first of x2, x1, both that
/// makes them agree.
fn matmul_view(v: &mut GraphDescriptor, i: usize) {
    let shape = |v: &GraphDescriptor, j: usize| {
        let s = v.nodes[i].inputs.get(j)?;
        let t = v.source(s)?;
        let s = if t.ori_shape.is_empty() {
            &t.shape
        } else {
            &t.ori_shape
        };
        (s.len() >= 2).then(|| (s[s.len() - 2], s[s.len() - 1]))
    };
    let (Some((a0, a1)), Some((b0, b1))) = (shape(v, 0), shape(v, 1)) else {
        return;
    };
    let (ta, tb) = if a1 == b0 {
        (false, false)
    } else if a1 == b1 {
        (false, true)
    } else if a0 == b0 {
        (true, false)
    } else if a0 == b1 {
        (true, true)
    } else {
        return;
    };
    let names = if v.nodes[i].op_type == "BatchMatMulV2" {
        ["adj_x1", "adj_x2"]
    } else {
        ["transpose_x1", "transpose_x2"]
    };
    let attrs = &mut v.nodes[i].attrs;
    attrs.insert(names[0].into(), AttrValue::Bool(ta));
    attrs.insert(names[1].into(), AttrValue::Bool(tb));
}

/// Conv2D node `i`: its weight's logical shape, strides and pads (module docs).
fn conv_view(v: &mut GraphDescriptor, i: usize) {
    let n = &v.nodes[i];
    let (Some(xs), Some(ws)) = (n.inputs.first().cloned(), n.inputs.get(1).cloned()) else {
        return;
    };
    let Some(x) = tensor_mut(v, &xs).map(|t| t.clone()) else {
        return;
    };
    if x.format != Format::NC1HWC0 || x.shape.len() != 5 {
        return;
    }
    let (c1, h, w, c0) = (x.shape[1].max(1), x.shape[2], x.shape[3], x.shape[4]);
    let out = v.nodes[i].outputs.first().map(|t| t.shape.clone());
    let Some(wt) = tensor_mut(v, &ws) else {
        return;
    };
    if wt.format != Format::FractalZ || wt.shape.len() != 4 || wt.ori_shape != wt.shape {
        return;
    }
    let khw = (wt.shape[0] / c1).max(1);
    let root = (khw as f64).sqrt().round() as i64;
    let (kh, kw) = if root * root == khw {
        (root, root)
    } else {
        (1, khw)
    };
    wt.ori_shape = vec![wt.shape[1] * 16, c1 * c0, kh, kw];
    wt.ori_format = Format::NCHW;
    let geometry = |size: i64, k: i64, o: Option<i64>| -> (i64, i64, i64) {
        match o.filter(|&o| o > 0) {
            Some(o) => {
                let s = (size + o - 1) / o;
                let total = ((o - 1) * s + k - size).max(0);
                (s, total / 2, total - total / 2)
            }
            None => (1, (k - 1) / 2, (k - 1) / 2),
        }
    };
    let o5 = out.filter(|s| s.len() == 5);
    let (sh, pt, pb) = geometry(h, kh, o5.as_ref().map(|s| s[2]));
    let (sw, pl, pr) = geometry(w, kw, o5.as_ref().map(|s| s[3]));
    let attrs = &mut v.nodes[i].attrs;
    attrs.insert("strides".into(), AttrValue::Ints(vec![1, 1, sh, sw]));
    attrs.insert("pads".into(), AttrValue::Ints(vec![pt, pb, pl, pr]));
    attrs.insert("dilations".into(), AttrValue::Ints(vec![1, 1, 1, 1]));
}
