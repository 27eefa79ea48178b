//! The TensorFlow ops whose axes or paddings follow the layout a tensor is held in: the
//! reductions, `Pad`, `ConcatV2` and the reshaping moves (`Reshape`, `Squeeze`, `ExpandDims`,
//! `Transpose`, `Cast`); dispatched from `ops.rs`.

use super::elem_type;
use super::ops::{attr, attr_bool, attr_ints, attr_str, attrs, Attrs, NHWC_TO_NCHW};
use super::proto::NodeDef;
use super::{Builder, Layout};
use crate::graph::Attr;
use crate::ModelError;

impl Builder<'_> {
    pub(super) fn reduce(&mut self, node: &NodeDef) -> Result<(), ModelError> {
        let x = self.input(node, 0)?;
        let keep = attr_bool(node, "keep_dims");
        // TensorFlow reduces over no axis when the list is empty (ONNX would reduce them all).
        let tf_axes = [
            ("keepdims", Attr::Int(i64::from(keep))),
            ("noop_with_empty_axes", Attr::Int(1)),
        ];
        let Some(mut axes) = self.const_ints(node, 1)? else {
            // Axes computed in the graph (a gradient's BroadcastGradientArgs): tracked values.
            let xi = self.in_layout(&x, Layout::Plain);
            let a = self.shape_value(node, 1)?;
            let op = format!("Reduce{}", node.op);
            self.emit(node, &op, vec![xi, a], attrs(tf_axes), Layout::Plain);
            return Ok(());
        };
        let mut layout = Layout::Plain;
        let mut xi = x.ir.clone();
        if x.layout == Layout::Nchw {
            let norm: Vec<i64> = axes
                .iter()
                .map(|&a| if a < 0 { a + 4 } else { a })
                .collect();
            // Reducing H and W (and not C) leaves [N, C] in either layout.
            let hw = norm.contains(&1) && norm.contains(&2) && !norm.contains(&3);
            if norm.iter().all(|a| (0..4).contains(a)) && (keep || hw) {
                axes = norm.iter().map(|&a| NHWC_TO_NCHW[a as usize]).collect();
                layout = if keep { Layout::Nchw } else { Layout::Plain };
            } else {
                xi = self.in_layout(&x, Layout::Plain);
            }
        }
        let op = format!("Reduce{}", node.op);
        let mut a = attrs(tf_axes);
        let mut inputs = vec![xi];
        if op == "ReduceSum" {
            inputs.push(self.ints_input(node, "axes", axes));
        } else {
            a.insert("axes".into(), Attr::Ints(axes));
        }
        self.emit(node, &op, inputs, a, layout);
        Ok(())
    }

    pub(super) fn pad(&mut self, node: &NodeDef) -> Result<(), ModelError> {
        let x = self.input(node, 0)?;
        let Some(p) = self.const_ints(node, 1)?.filter(|p| p.len() % 2 == 0) else {
            return self.unknown(node, &node.op);
        };
        let rank = p.len() / 2;
        let (rows, xi, layout): (Vec<usize>, String, Layout) =
            if x.layout == Layout::Nchw && rank == 4 {
                (vec![0, 3, 1, 2], x.ir.clone(), Layout::Nchw)
            } else {
                (
                    (0..rank).collect(),
                    self.in_layout(&x, Layout::Plain),
                    Layout::Plain,
                )
            };
        let pads: Vec<i64> = rows
            .iter()
            .map(|&r| p[2 * r])
            .chain(rows.iter().map(|&r| p[2 * r + 1]))
            .collect();
        let mode = match (node.op.as_str(), attr_str(node, "mode").as_deref()) {
            ("MirrorPad", Some("SYMMETRIC")) => return self.unknown(node, "MirrorPad(SYMMETRIC)"),
            ("MirrorPad", _) => "reflect",
            _ => "constant",
        };
        let pi = self.ints_input(node, "pads", pads);
        let mut inputs = vec![xi, pi];
        if node.op == "PadV2" {
            inputs.push(self.input(node, 2)?.ir);
        }
        self.emit(
            node,
            "Pad",
            inputs,
            attrs([("mode", Attr::Str(mode.into()))]),
            layout,
        );
        Ok(())
    }

    pub(super) fn concat(&mut self, node: &NodeDef) -> Result<(), ModelError> {
        let n = Self::arity(node);
        if n < 2 {
            return Err(self.invalid(node, "expected the values and an axis"));
        }
        let Some(axis) = self
            .const_ints(node, n - 1)?
            .and_then(|v| v.first().copied())
        else {
            return self.unknown(node, "ConcatV2");
        };
        let vals = (0..n - 1)
            .map(|i| self.input(node, i))
            .collect::<Result<Vec<_>, _>>()?;
        let all_nchw = vals.iter().all(|v| v.layout == Layout::Nchw);
        let (inputs, axis, layout) = if all_nchw && (-4..4).contains(&axis) {
            let a = if axis < 0 { axis + 4 } else { axis };
            (
                vals.iter().map(|v| v.ir.clone()).collect(),
                NHWC_TO_NCHW[a as usize],
                Layout::Nchw,
            )
        } else {
            (
                vals.iter()
                    .map(|v| self.in_layout(v, Layout::Plain))
                    .collect(),
                axis,
                Layout::Plain,
            )
        };
        self.emit(
            node,
            "Concat",
            inputs,
            attrs([("axis", Attr::Int(axis))]),
            layout,
        );
        Ok(())
    }

    pub(super) fn movement(&mut self, node: &NodeDef) -> Result<(), ModelError> {
        let x = self.input(node, 0)?;
        if node.op == "Squeeze" && x.layout == Layout::Nchw {
            let dims = attr_ints(node, "squeeze_dims").unwrap_or_default();
            let norm: Vec<i64> = dims
                .iter()
                .map(|&a| if a < 0 { a + 4 } else { a })
                .collect();
            if norm.len() == 2 && norm.contains(&1) && norm.contains(&2) {
                let axes = self.ints_input(node, "axes", vec![2, 3]);
                self.emit(
                    node,
                    "Squeeze",
                    vec![x.ir, axes],
                    Attrs::new(),
                    Layout::Plain,
                );
                return Ok(());
            }
        }
        if node.op == "Cast" {
            let to = elem_type(attr(node, "DstT").and_then(|a| a.r#type).unwrap_or(0));
            self.emit(
                node,
                "Cast",
                vec![x.ir],
                attrs([("to", Attr::Int(i64::from(to.0)))]),
                x.layout,
            );
            return Ok(());
        }
        let xi = self.in_layout(&x, Layout::Plain);
        match node.op.as_str() {
            "Reshape" => {
                // A shape computed in the graph is read from inference's tracked values.
                let s = match self.const_ints(node, 1)? {
                    Some(shape) => self.ints_input(node, "shape", shape),
                    None => self.shape_value(node, 1)?,
                };
                self.emit(node, "Reshape", vec![xi, s], Attrs::new(), Layout::Plain);
            }
            "Squeeze" => {
                let dims = attr_ints(node, "squeeze_dims").unwrap_or_default();
                let mut inputs = vec![xi];
                if !dims.is_empty() {
                    inputs.push(self.ints_input(node, "axes", dims));
                }
                self.emit(node, "Squeeze", inputs, Attrs::new(), Layout::Plain);
            }
            "ExpandDims" => {
                let a = match self.const_ints(node, 1)? {
                    Some(axis) => self.ints_input(node, "axes", axis),
                    None => self.shape_value(node, 1)?,
                };
                self.emit(node, "Unsqueeze", vec![xi, a], Attrs::new(), Layout::Plain);
            }
            _ => {
                let Some(perm) = self.const_ints(node, 1)? else {
                    // A permutation computed in the graph (a gradient's InvertPermutation).
                    let p = self.shape_value(node, 1)?;
                    self.emit(node, "Transpose", vec![xi, p], Attrs::new(), Layout::Plain);
                    return Ok(());
                };
                self.emit(
                    node,
                    "Transpose",
                    vec![xi],
                    attrs([("perm", Attr::Ints(perm))]),
                    Layout::Plain,
                );
            }
        }
        Ok(())
    }
}

impl Builder<'_> {
    /// Conv3D (NDHWC, or NCDHW by `data_format`; filter `[kd, kh, kw, in, out]`): an ONNX
    /// `Conv` over the NCDHW transpose of its input with an OIDHW filter, its output transposed
    /// back to NDHWC (the importer's layouts are 4-D; ATC keys Conv3D in NCDHW as well).
    pub(super) fn conv3d(&mut self, node: &NodeDef) -> Result<(), ModelError> {
        let ncdhw = matches!(attr_str(node, "data_format").as_deref(), Some("NCDHW"));
        let x = self.input(node, 0)?;
        let w = self.input(node, 1)?;
        let Some(wd) = self
            .constant(&w)
            .map(|c| c.dims.clone())
            .filter(|d| d.len() == 5)
        else {
            return self.unknown(node, &node.op);
        };
        let spatial = |v: Option<Vec<i64>>, what: &str| -> Result<Vec<i64>, ModelError> {
            match v {
                None => Ok(vec![1; 3]),
                Some(v) if v.len() == 5 => Ok(if ncdhw {
                    v[2..].to_vec()
                } else {
                    v[1..4].to_vec()
                }),
                Some(v) => Err(self.invalid(node, format!("{what} {v:?}: expected 5 values"))),
            }
        };
        let strides = spatial(attr_ints(node, "strides"), "strides")?;
        let dilations = spatial(attr_ints(node, "dilations"), "dilations")?;
        let mut a = attrs([
            ("kernel_shape", Attr::Ints(wd[..3].to_vec())),
            ("strides", Attr::Ints(strides)),
            ("dilations", Attr::Ints(dilations)),
            ("group", Attr::Int(1)),
        ]);
        match attr_str(node, "padding").as_deref() {
            Some("SAME") => a.insert("auto_pad".into(), Attr::Str("SAME_UPPER".into())),
            Some("VALID") | None => a.insert("pads".into(), Attr::Ints(vec![0; 6])),
            Some(p) => {
                return Err(self.invalid(node, format!("padding {p:?}: expected SAME or VALID")))
            }
        };
        let xi = self.in_layout(&x, Layout::Plain);
        let weight = self.constant_tensor(
            format!("{}/weight", node.name),
            crate::graph::ElemType::FLOAT,
            vec![wd[4], wd[3], wd[0], wd[1], wd[2]],
            None,
        );
        if ncdhw {
            self.emit(node, "Conv", vec![xi, weight], a, Layout::Plain);
            return Ok(());
        }
        let perm = |p: [i64; 5]| attrs([("perm", Attr::Ints(p.to_vec()))]);
        let (to, out) = (
            format!("{}/to_ncdhw", node.name),
            format!("{}{}", node.name, super::CONV3D_NCDHW),
        );
        self.push(
            to.clone(),
            "Transpose",
            "",
            vec![xi],
            vec![to.clone()],
            perm([0, 4, 1, 2, 3]),
        );
        self.push(
            out.clone(),
            "Conv",
            "",
            vec![to, weight],
            vec![out.clone()],
            a,
        );
        self.emit(
            node,
            "Transpose",
            vec![out],
            perm([0, 2, 3, 4, 1]),
            Layout::Plain,
        );
        Ok(())
    }
}
