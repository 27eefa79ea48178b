//! Each TensorFlow op as graph-IR nodes, with the layout rules of the module docs.

use std::collections::BTreeMap;

use super::proto::{AttrValue, NodeDef};
use super::{elem_type, shape_dims, tensor_ints, Builder, Layout, Val};
use crate::graph::{Attr, ElemType};
use crate::ModelError;

pub(super) type Attrs = BTreeMap<String, Attr>;

/// NHWC axis → its position in NCHW.
pub(super) const NHWC_TO_NCHW: [i64; 4] = [0, 2, 3, 1];

pub(super) fn attrs<const N: usize>(list: [(&str, Attr); N]) -> Attrs {
    list.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

pub(super) fn attr<'n>(node: &'n NodeDef, name: &str) -> Option<&'n AttrValue> {
    node.attr.get(name)
}

pub(super) fn attr_str(node: &NodeDef, name: &str) -> Option<String> {
    attr(node, name)
        .and_then(|a| a.s.as_ref())
        .map(|s| String::from_utf8_lossy(s).into_owned())
}

pub(super) fn attr_ints(node: &NodeDef, name: &str) -> Option<Vec<i64>> {
    attr(node, name)
        .and_then(|a| a.list.as_ref())
        .map(|l| l.i.clone())
        .filter(|l| !l.is_empty())
}

pub(super) fn attr_bool(node: &NodeDef, name: &str) -> bool {
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
        self.opaque(node, op, "tensorflow", Attrs::new())
    }

    /// A node the importer does not map, of `domain`, reading the node's inputs in
    /// TensorFlow's layout and giving as many outputs as the graph reads: inference skips it
    /// (and what depends on it), the rest of the graph is imported.
    pub(super) fn opaque(
        &mut self,
        node: &NodeDef,
        op: &str,
        domain: &str,
        a: Attrs,
    ) -> Result<(), ModelError> {
        let mut inputs = Vec::new();
        for i in 0..Self::arity(node) {
            let v = self.input(node, i)?;
            inputs.push(self.in_layout(&v, Layout::Plain));
        }
        let n = self.outputs.get(node.name.as_str()).copied().unwrap_or(1);
        let outs: Vec<String> = (0..n)
            .map(|k| super::training::out_name(&node.name, k))
            .collect();
        self.push(node.name.clone(), op, domain, inputs, outs.clone(), a);
        for (k, ir) in outs.into_iter().enumerate() {
            let layout = Layout::Plain;
            self.set(node, k, Val { ir, layout });
        }
        Ok(())
    }

    /// The integer values of constant input `i` (axes, shapes, paddings).
    pub(super) fn const_ints(
        &self,
        node: &NodeDef,
        i: usize,
    ) -> Result<Option<Vec<i64>>, ModelError> {
        let v = self.input(node, i)?;
        Ok(self.constant(&v).and_then(|c| c.ints.clone()))
    }

    /// An int64 initializer for an ONNX axes/shape/pads input.
    pub(super) fn ints_input(&mut self, node: &NodeDef, what: &str, values: Vec<i64>) -> String {
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
            ("Conv3D", _) => self.conv3d(node)?,
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
        // An NDHWC Conv3D (`conv3d`: Transpose → Conv → Transpose back): the bias goes into the
        // convolution before the transpose back, as tf2onnx exports it.
        if let Some(conv) = producer
            .filter(|&p| only_reader && self.nodes[p].op_type == "Transpose")
            .and_then(|p| {
                let input = self.nodes[p].inputs.first()?;
                self.nodes
                    .iter()
                    .rposition(|n| n.outputs.first() == Some(input))
            })
            .filter(|&c| {
                let n = &self.nodes[c];
                n.op_type == "Conv" && n.inputs.len() == 2 && n.name.ends_with(super::CONV3D_NCDHW)
            })
        {
            let bias = self.reshaped_constant(&b.ir).unwrap_or(b.ir);
            self.nodes[conv].inputs.push(bias);
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

    /// The initializer behind `t` when `t` is a constant only reshaped on its way (Keras 3's
    /// Conv3D bias: `Reshape` then `Squeeze` of the variable's value): a 1-D initializer of its
    /// element count, named after `t`; `None` for anything else.
    fn reshaped_constant(&mut self, t: &str) -> Option<String> {
        let mut cur = t.to_string();
        for _ in 0..8 {
            if let Some(c) = self.initializers.get(&cur) {
                let count: i64 = c.dims.iter().product();
                let (elem_type, ints) = (c.elem_type, c.ints.clone());
                if cur == t {
                    return Some(cur);
                }
                let name = format!("{t}/constant");
                return Some(self.constant_tensor(name, elem_type, vec![count], ints));
            }
            let n = self
                .nodes
                .iter()
                .rfind(|n| n.outputs.first() == Some(&cur))?;
            if !matches!(n.op_type.as_str(), "Reshape" | "Squeeze" | "Identity") {
                return None;
            }
            cur = n.inputs.first()?.clone();
        }
        None
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
                // A per-channel constant: `[C]`, or `[1, 1, 1, C]` as Keras reshapes a batch
                // norm's statistics (a scalar needs no change).
                let channels = |c: &crate::graph::ConstTensor| match c.dims.as_slice() {
                    [ch] | [1, 1, 1, ch] => Some(*ch),
                    _ => None,
                };
                let small = self
                    .constant(other)
                    .filter(|c| c.dims.is_empty() || channels(c).is_some())
                    .cloned();
                match small {
                    Some(c) => {
                        let o = match channels(&c) {
                            Some(ch) => self.constant_tensor(
                                format!("{}/{}", node.name, if nchw_first { "b" } else { "a" }),
                                c.elem_type,
                                vec![ch, 1, 1],
                                c.ints,
                            ),
                            None => other.ir.clone(),
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
            // The adjoints as Ascend IR's BatchMatMulV2 attributes, which inference reads.
            (true, false) => self.emit(
                node,
                "MatMul",
                vec![ai, bi],
                attrs([
                    ("adj_x1", Attr::Int(i64::from(ta))),
                    ("adj_x2", Attr::Int(i64::from(tb))),
                ]),
                Layout::Plain,
            ),
        }
        Ok(())
    }
}
