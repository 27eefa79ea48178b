//! Each TensorFlow op as graph-IR nodes, with the layout rules of the module docs.

use std::collections::BTreeMap;

use super::proto::{AttrValue, NodeDef};
use super::{elem_type, shape_dims, tensor_ints, Builder, Layout, Val};
use crate::graph::{Attr, ElemType};
use crate::ModelError;

type Attrs = BTreeMap<String, Attr>;

/// NHWC axis → its position in NCHW.
const NHWC_TO_NCHW: [i64; 4] = [0, 2, 3, 1];

fn attrs<const N: usize>(list: [(&str, Attr); N]) -> Attrs {
    list.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

fn attr<'n>(node: &'n NodeDef, name: &str) -> Option<&'n AttrValue> {
    node.attr.get(name)
}

fn attr_str(node: &NodeDef, name: &str) -> Option<String> {
    attr(node, name)
        .and_then(|a| a.s.as_ref())
        .map(|s| String::from_utf8_lossy(s).into_owned())
}

fn attr_ints(node: &NodeDef, name: &str) -> Option<Vec<i64>> {
    attr(node, name)
        .and_then(|a| a.list.as_ref())
        .map(|l| l.i.clone())
        .filter(|l| !l.is_empty())
}

fn attr_bool(node: &NodeDef, name: &str) -> bool {
    attr(node, name).and_then(|a| a.b).unwrap_or(false)
}

fn attr_float(node: &NodeDef, name: &str) -> Option<f32> {
    attr(node, name).and_then(|a| a.f)
}

/// Whether the op's `data_format` is channels-last (the default).
fn nhwc(node: &NodeDef) -> Result<bool, String> {
    match attr_str(node, "data_format").as_deref() {
        None | Some("NHWC") => Ok(true),
        Some("NCHW") => Ok(false),
        Some(other) => Err(format!("data_format {other:?}: expected NHWC or NCHW")),
    }
}

/// The spatial pair (H, W) of a 4-entry attribute in the op's data format.
fn spatial(v: &[i64], nhwc: bool) -> Option<[i64; 2]> {
    (v.len() == 4).then(|| if nhwc { [v[1], v[2]] } else { [v[2], v[3]] })
}

impl<'a> Builder<'a> {
    fn plain(&mut self, node: &NodeDef, ir: String) {
        self.set(
            node,
            0,
            Val {
                ir,
                layout: Layout::Plain,
            },
        );
    }

    /// A one-output node named as the TensorFlow node.
    pub(super) fn emit(
        &mut self,
        node: &NodeDef,
        op: &str,
        inputs: Vec<String>,
        a: Attrs,
        layout: Layout,
    ) {
        let out = self.push(
            node.name.clone(),
            op,
            "",
            inputs,
            vec![node.name.clone()],
            a,
        );
        self.set(node, 0, Val { ir: out, layout });
    }

    /// An op the importer does not map: a `tensorflow`-domain node reading its inputs in
    /// TensorFlow's layout, which inference reports as unsupported.
    pub(super) fn unknown(&mut self, node: &NodeDef, op: &str) -> Result<(), ModelError> {
        let mut inputs = Vec::new();
        for i in 0..Self::arity(node) {
            let v = self.input(node, i)?;
            inputs.push(self.in_layout(&v, Layout::Plain));
        }
        let n = self.outputs.get(node.name.as_str()).copied().unwrap_or(1);
        let outs: Vec<String> = (0..n)
            .map(|k| match k {
                0 => node.name.clone(),
                k => format!("{}:{k}", node.name),
            })
            .collect();
        self.push(
            node.name.clone(),
            op,
            "tensorflow",
            inputs,
            outs.clone(),
            Attrs::new(),
        );
        for (k, ir) in outs.into_iter().enumerate() {
            let layout = Layout::Plain;
            self.set(node, k, Val { ir, layout });
        }
        Ok(())
    }

    /// The integer values of constant input `i` (axes, shapes, paddings).
    fn const_ints(&self, node: &NodeDef, i: usize) -> Result<Option<Vec<i64>>, ModelError> {
        let v = self.input(node, i)?;
        Ok(self.constant(&v).and_then(|c| c.ints.clone()))
    }

    /// An int64 initializer for an ONNX axes/shape/pads input.
    fn ints_input(&mut self, node: &NodeDef, what: &str, values: Vec<i64>) -> String {
        self.constant_tensor(
            format!("{}/{what}", node.name),
            ElemType::INT64,
            vec![values.len() as i64],
            Some(values),
        )
    }

    /// One TensorFlow node.
    pub(super) fn node(&mut self, node: &NodeDef) -> Result<(), ModelError> {
        if self.training(node)? || self.plumbing(node)? {
            return Ok(());
        }
        let op = node.op.as_str();
        let unary = match op {
            "Relu" | "Sigmoid" | "Tanh" | "Elu" | "Selu" | "Softplus" | "Softsign" | "Abs"
            | "Neg" | "Exp" | "Log" | "Sqrt" | "Floor" | "Ceil" | "Erf" | "Reciprocal"
            | "LeakyRelu" | "Rsqrt" | "Square" | "Erfc" => Some(op.to_string()),
            _ => None,
        };
        match (op, unary) {
            (_, Some(o)) => {
                let x = self.input(node, 0)?;
                let a = if o == "LeakyRelu" {
                    attrs([(
                        "alpha",
                        Attr::Float(attr_float(node, "alpha").unwrap_or(0.2)),
                    )])
                } else {
                    Attrs::new()
                };
                self.emit(node, &o, vec![x.ir], a, x.layout);
            }
            ("Placeholder", _) => {
                let shape = attr(node, "shape")
                    .and_then(|a| a.shape.as_ref())
                    .and_then(shape_dims);
                let t = elem_type(attr(node, "dtype").and_then(|a| a.r#type).unwrap_or(1));
                self.add_input(&node.name, t, shape);
                self.plain(node, node.name.clone());
            }
            ("Const", _) => self.constant_node(node)?,
            ("Identity" | "StopGradient" | "Snapshot" | "PreventGradient", _) => {
                let x = self.input(node, 0)?;
                self.set(node, 0, x);
            }
            ("IdentityN", _) => {
                for k in 0..Self::arity(node) {
                    let x = self.input(node, k)?;
                    self.set(node, k, x);
                }
            }
            ("NoOp" | "Assert", _) => {}
            ("Relu6", _) => {
                let x = self.input(node, 0)?;
                let lo = self.constant_tensor(
                    format!("{}/min", node.name),
                    ElemType::FLOAT,
                    vec![],
                    None,
                );
                let hi = self.constant_tensor(
                    format!("{}/max", node.name),
                    ElemType::FLOAT,
                    vec![],
                    None,
                );
                self.emit(node, "Clip", vec![x.ir, lo, hi], Attrs::new(), x.layout);
            }
            ("Conv2D" | "DepthwiseConv2dNative", _) => self.conv(node)?,
            ("BiasAdd" | "BiasAddV1", _) => self.bias_add(node)?,
            ("FusedBatchNorm" | "FusedBatchNormV2" | "FusedBatchNormV3", _) => {
                let is_nhwc = nhwc(node).map_err(|r| self.invalid(node, r))?;
                let x = self.input(node, 0)?;
                let layout = if is_nhwc { Layout::Nchw } else { Layout::Plain };
                let xi = self.in_layout(&x, layout);
                let mut inputs = vec![xi];
                for i in 1..5 {
                    inputs.push(self.input(node, i)?.ir);
                }
                let eps = attr_float(node, "epsilon").unwrap_or(1e-4);
                self.emit(
                    node,
                    "BatchNormalization",
                    inputs,
                    attrs([("epsilon", Attr::Float(eps))]),
                    layout,
                );
            }
            (
                "AddV2" | "Add" | "Mul" | "Sub" | "RealDiv" | "Maximum" | "Minimum" | "Pow"
                | "DivNoNan" | "SquaredDifference" | "Greater" | "GreaterEqual" | "Less"
                | "LessEqual" | "Equal",
                _,
            ) => self.binary(node)?,
            ("MaxPool" | "AvgPool", _) => self.pool(node)?,
            ("MatMul" | "BatchMatMul" | "BatchMatMulV2" | "BatchMatMulV3", _) => {
                self.matmul(node)?
            }
            ("Mean" | "Sum" | "Max" | "Min" | "Prod", _) => self.reduce(node)?,
            ("Pad" | "PadV2" | "MirrorPad", _) => self.pad(node)?,
            ("ConcatV2", _) => self.concat(node)?,
            ("Softmax", _) => {
                let x = self.input(node, 0)?;
                let axis = if x.layout == Layout::Nchw { 1 } else { -1 };
                self.emit(
                    node,
                    "Softmax",
                    vec![x.ir],
                    attrs([("axis", Attr::Int(axis))]),
                    x.layout,
                );
            }
            ("Reshape" | "Squeeze" | "ExpandDims" | "Transpose" | "Cast", _) => {
                self.movement(node)?
            }
            _ => self.unknown(node, op)?,
        }
        Ok(())
    }

    /// A `Const`: an initializer with its dims (and its values, for a small integer one).
    fn constant_node(&mut self, node: &NodeDef) -> Result<(), ModelError> {
        let Some(t) = attr(node, "value").and_then(|a| a.tensor.as_ref()) else {
            return Err(self.invalid(node, "no tensor in attr `value`: expected a constant"));
        };
        let dims = t
            .tensor_shape
            .as_ref()
            .and_then(shape_dims)
            .unwrap_or_default();
        if dims.iter().any(|d| *d < 0) {
            return Err(self.invalid(
                node,
                format!("constant of shape {dims:?}: expected known dims"),
            ));
        }
        let count = dims
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d as usize));
        let ints = count.and_then(|c| tensor_ints(t, c));
        self.constant_tensor(node.name.clone(), elem_type(t.dtype), dims, ints);
        self.plain(node, node.name.clone());
        Ok(())
    }

    fn conv(&mut self, node: &NodeDef) -> Result<(), ModelError> {
        let is_nhwc = nhwc(node).map_err(|r| self.invalid(node, r))?;
        let x = self.input(node, 0)?;
        let w = self.input(node, 1)?;
        let Some(wd) = self
            .constant(&w)
            .map(|c| c.dims.clone())
            .filter(|d| d.len() == 4)
        else {
            return self.unknown(node, &node.op);
        };
        let (kh, kw) = (wd[0], wd[1]);
        let (weight, group) = if node.op == "Conv2D" {
            // HWIO → OIHW.
            (vec![wd[3], wd[2], kh, kw], 1)
        } else {
            // [kh, kw, C, multiplier] → [C·m, 1, kh, kw], one group per channel.
            (vec![wd[2] * wd[3], 1, kh, kw], wd[2])
        };
        let strides = attr_ints(node, "strides").unwrap_or_else(|| vec![1; 4]);
        let dilations = attr_ints(node, "dilations").unwrap_or_else(|| vec![1; 4]);
        let (Some(s), Some(d)) = (spatial(&strides, is_nhwc), spatial(&dilations, is_nhwc)) else {
            return Err(self.invalid(
                node,
                format!("strides {strides:?}, dilations {dilations:?}: expected 4 values each"),
            ));
        };
        let mut a = attrs([
            ("kernel_shape", Attr::Ints(vec![kh, kw])),
            ("strides", Attr::Ints(s.to_vec())),
            ("dilations", Attr::Ints(d.to_vec())),
            ("group", Attr::Int(group)),
        ]);
        match attr_str(node, "padding").as_deref() {
            Some("SAME") => {
                a.insert("auto_pad".into(), Attr::Str("SAME_UPPER".into()));
            }
            Some("VALID") | None => {
                a.insert("pads".into(), Attr::Ints(vec![0; 4]));
            }
            Some("EXPLICIT") => {
                let p = attr_ints(node, "explicit_paddings").unwrap_or_default();
                if p.len() != 8 {
                    return Err(
                        self.invalid(node, format!("explicit_paddings {p:?}: expected 8 values"))
                    );
                }
                let (h, w) = if is_nhwc { (2, 4) } else { (4, 6) };
                a.insert(
                    "pads".into(),
                    Attr::Ints(vec![p[h], p[w], p[h + 1], p[w + 1]]),
                );
            }
            Some(other) => {
                return Err(self.invalid(
                    node,
                    format!("padding {other:?}: expected SAME, VALID or EXPLICIT"),
                ))
            }
        }
        let layout = if is_nhwc { Layout::Nchw } else { Layout::Plain };
        let xi = self.in_layout(&x, layout);
        let wi = self.constant_tensor(
            format!("{}/weight", node.name),
            ElemType::FLOAT,
            weight,
            None,
        );
        self.emit(node, "Conv", vec![xi, wi], a, layout);
        Ok(())
    }

    /// BiasAdd: folded into the convolution it follows when that is its only reader, else an
    /// `Add` with the bias shaped for the layout.
    fn bias_add(&mut self, node: &NodeDef) -> Result<(), ModelError> {
        let x = self.input(node, 0)?;
        let b = self.input(node, 1)?;
        let producer = self
            .nodes
            .iter()
            .rposition(|n| n.outputs.first() == Some(&x.ir));
        let src = node
            .input
            .first()
            .and_then(|i| super::edge(i))
            .map(|(n, _)| n);
        let only_reader = src.is_some_and(|s| self.readers.get(s) == Some(&1));
        if let Some(p) = producer.filter(|&p| {
            only_reader && self.nodes[p].op_type == "Conv" && self.nodes[p].inputs.len() == 2
        }) {
            self.nodes[p].inputs.push(b.ir);
            self.set(node, 0, x);
            return Ok(());
        }
        let channels_first =
            x.layout == Layout::Nchw || !nhwc(node).map_err(|r| self.invalid(node, r))?;
        let bias = match self.constant(&b).cloned() {
            Some(c) if channels_first && c.dims.len() == 1 => self.constant_tensor(
                format!("{}/bias", node.name),
                c.elem_type,
                vec![c.dims[0], 1, 1],
                c.ints,
            ),
            _ => b.ir,
        };
        self.emit(node, "Add", vec![x.ir, bias], Attrs::new(), x.layout);
        Ok(())
    }

    fn binary(&mut self, node: &NodeDef) -> Result<(), ModelError> {
        let op = match node.op.as_str() {
            "AddV2" | "Add" => "Add",
            "Mul" => "Mul",
            "Sub" => "Sub",
            "RealDiv" => "Div",
            "Maximum" => "Max",
            "Minimum" => "Min",
            "Pow" => "Pow",
            "Greater" => "Greater",
            "GreaterEqual" => "GreaterOrEqual",
            "Less" => "Less",
            "LessEqual" => "LessOrEqual",
            "Equal" => "Equal",
            // Ascend IR names; ONNX has no such op.
            "DivNoNan" => "DivNoNan",
            _ => "SquaredDifference",
        };
        let (a, b) = (self.input(node, 0)?, self.input(node, 1)?);
        let (ai, bi, layout) = match (a.layout, b.layout) {
            (l, r) if l == r => (a.ir, b.ir, l),
            _ => {
                let (nchw, other, nchw_first) = if a.layout == Layout::Nchw {
                    (&a, &b, true)
                } else {
                    (&b, &a, false)
                };
                let small = self.constant(other).filter(|c| c.dims.len() <= 1).cloned();
                match small {
                    Some(c) => {
                        let o = match c.dims.len() {
                            1 => self.constant_tensor(
                                format!("{}/{}", node.name, if nchw_first { "b" } else { "a" }),
                                c.elem_type,
                                vec![c.dims[0], 1, 1],
                                c.ints,
                            ),
                            _ => other.ir.clone(),
                        };
                        if nchw_first {
                            (nchw.ir.clone(), o, Layout::Nchw)
                        } else {
                            (o, nchw.ir.clone(), Layout::Nchw)
                        }
                    }
                    None => (
                        self.in_layout(&a, Layout::Plain),
                        self.in_layout(&b, Layout::Plain),
                        Layout::Plain,
                    ),
                }
            }
        };
        self.emit(node, op, vec![ai, bi], Attrs::new(), layout);
        Ok(())
    }

    fn pool(&mut self, node: &NodeDef) -> Result<(), ModelError> {
        let is_nhwc = nhwc(node).map_err(|r| self.invalid(node, r))?;
        let k = attr_ints(node, "ksize").unwrap_or_default();
        let s = attr_ints(node, "strides").unwrap_or_default();
        let (Some(k), Some(s)) = (spatial(&k, is_nhwc), spatial(&s, is_nhwc)) else {
            return Err(self.invalid(
                node,
                format!("ksize {k:?}, strides {s:?}: expected 4 values each"),
            ));
        };
        let mut a = attrs([
            ("kernel_shape", Attr::Ints(k.to_vec())),
            ("strides", Attr::Ints(s.to_vec())),
        ]);
        match attr_str(node, "padding").as_deref() {
            Some("SAME") => a.insert("auto_pad".into(), Attr::Str("SAME_UPPER".into())),
            _ => a.insert("pads".into(), Attr::Ints(vec![0; 4])),
        };
        let x = self.input(node, 0)?;
        let layout = if is_nhwc { Layout::Nchw } else { Layout::Plain };
        let xi = self.in_layout(&x, layout);
        self.emit(
            node,
            if node.op == "MaxPool" {
                "MaxPool"
            } else {
                "AveragePool"
            },
            vec![xi],
            a,
            layout,
        );
        Ok(())
    }

    fn matmul(&mut self, node: &NodeDef) -> Result<(), ModelError> {
        let a = self.input(node, 0)?;
        let b = self.input(node, 1)?;
        let (ai, bi) = (
            self.in_layout(&a, Layout::Plain),
            self.in_layout(&b, Layout::Plain),
        );
        let (ta, tb) = if node.op == "MatMul" {
            (
                attr_bool(node, "transpose_a"),
                attr_bool(node, "transpose_b"),
            )
        } else {
            (attr_bool(node, "adj_x"), attr_bool(node, "adj_y"))
        };
        match (ta || tb, node.op == "MatMul") {
            (false, _) => self.emit(node, "MatMul", vec![ai, bi], Attrs::new(), Layout::Plain),
            (true, true) => self.emit(
                node,
                "Gemm",
                vec![ai, bi],
                attrs([
                    ("transA", Attr::Int(i64::from(ta))),
                    ("transB", Attr::Int(i64::from(tb))),
                ]),
                Layout::Plain,
            ),
            (true, false) => return self.unknown(node, &format!("{}(adj_x/adj_y)", node.op)),
        }
        Ok(())
    }

    fn reduce(&mut self, node: &NodeDef) -> Result<(), ModelError> {
        let x = self.input(node, 0)?;
        let Some(mut axes) = self.const_ints(node, 1)? else {
            return self.unknown(node, &node.op);
        };
        let keep = attr_bool(node, "keep_dims");
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
        let mut a = attrs([("keepdims", Attr::Int(i64::from(keep)))]);
        let mut inputs = vec![xi];
        if op == "ReduceSum" {
            inputs.push(self.ints_input(node, "axes", axes));
        } else {
            a.insert("axes".into(), Attr::Ints(axes));
        }
        self.emit(node, &op, inputs, a, layout);
        Ok(())
    }

    fn pad(&mut self, node: &NodeDef) -> Result<(), ModelError> {
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

    fn concat(&mut self, node: &NodeDef) -> Result<(), ModelError> {
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

    fn movement(&mut self, node: &NodeDef) -> Result<(), ModelError> {
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
