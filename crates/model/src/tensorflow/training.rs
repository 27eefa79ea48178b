//! The ops a training step adds: variables, shape arithmetic folded at import, backward ops
//! and optimizer updates, as Ascend IR nodes (the names ATC gives them; ONNX has no such ops).
//!
//! | TensorFlow | graph IR |
//! |---|---|
//! | VarHandleOp, VariableV2, Variable (a resource Placeholder when its reader states `_output_shapes`) | initializer of the variable's dims |
//! | ReadVariableOp | the variable |
//! | Shape, ShapeN, Size, Rank of a tensor of known dims; Pack, Slice (of any rank), ConcatV2, Sub, AddV2, Mul, FloorDiv, FloorMod of integer constants | folded into integer constants |
//! | Shape, ShapeN of other tensors | `Shape` (its values tracked by inference) |
//! | Conv2DBackpropFilter, Conv2DBackpropInput | `Conv2DBackpropFilter` (attr `filter_size`, OIHW), `Conv2DBackpropInput` (input 0 the NCHW or NHWC sizes, attr `size_format`) |
//! | DepthwiseConv2dNativeBackpropFilter, …BackpropInput | `DepthwiseConv2DBackpropFilter`, `DepthwiseConv2DBackpropInput` (groups = channels) |
//! | FusedBatchNorm/V2/V3 with `is_training` | `BNTrainingReduce` (sum, square sum) + `BNTrainingUpdate` |
//! | FusedBatchNormGrad/V2/V3 | `BNTrainingUpdateGrad` (scale and offset gradients) + `BNTrainingReduceGrad` (input gradient) |
//! | BiasAddGrad | `BiasAddGrad` (`data_format` NCHW when its input is held in NCHW) |
//! | ReluGrad, Relu6Grad, EluGrad, SeluGrad, LeakyReluGrad, SigmoidGrad, TanhGrad, SoftplusGrad, SoftsignGrad, RsqrtGrad, SqrtGrad, ReciprocalGrad | the same names, element-wise |
//! | MaxPoolGrad, AvgPoolGrad | `MaxPoolGrad`, `AvgPoolGrad` (NCHW `ksize`, `strides`, `padding`) |
//! | SoftmaxCrossEntropyWithLogits, SparseSoftmaxCrossEntropyWithLogits, LogSoftmax | the same names (two outputs: loss, backprop); `LogSoftmax` |
//! | (Resource)ApplyAdam, ApplyMomentum, ApplyKerasMomentum, ApplyGradientDescent, ApplyRMSProp, ApplyAdagrad | `ApplyAdam` … (outputs: the updated variable and slots) |
//! | AssignVariableOp, AssignAddVariableOp, AssignSubVariableOp | `Assign`, `AssignAdd`, `AssignSub` |
//! | Select/SelectV2; StatelessRandomUniform(V2), StatelessRandomNormal(V2), RandomUniform, RandomStandardNormal | `Where`; `StatelessRandomUniformV2`, `StatelessRandomNormalV2` (input 0 the sizes; seeds dropped) |
//! | Tile, ZerosLike, OnesLike, AddN, Fill, FloorDiv, FloorMod | `Tile`, `ZerosLike`, `OnesLike`, `AddN`, `Fill` (sizes input 0, value input 1), `FloorDiv`, `FloorMod` |
//!
//! An optimizer update's gradient input is `APPLY_OPS``.grad`; GDAT reads a step's gradients
//! from there.

use super::proto::NodeDef;
use super::{Builder, Layout, Val};
use crate::graph::{Attr, ElemType};
use crate::optimizer::APPLY_OPS;
use crate::ModelError;

use std::collections::BTreeMap;

pub(super) type Attrs = BTreeMap<String, Attr>;

/// Activation gradients: element-wise over their two inputs, named alike in both.
const ACTIVATION_GRADS: &[&str] = &[
    "EluGrad",
    "LeakyReluGrad",
    "ReciprocalGrad",
    "Relu6Grad",
    "ReluGrad",
    "RsqrtGrad",
    "SeluGrad",
    "SigmoidGrad",
    "SoftplusGrad",
    "SoftsignGrad",
    "SqrtGrad",
    "TanhGrad",
];

pub(super) fn attrs<const N: usize>(list: [(&str, Attr); N]) -> Attrs {
    list.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

pub(super) fn attr_str(node: &NodeDef, name: &str) -> Option<String> {
    node.attr
        .get(name)
        .and_then(|a| a.s.as_ref())
        .map(|s| String::from_utf8_lossy(s).into_owned())
}

pub(super) fn attr_ints(node: &NodeDef, name: &str) -> Option<Vec<i64>> {
    node.attr
        .get(name)
        .and_then(|a| a.list.as_ref())
        .map(|l| l.i.clone())
        .filter(|l| !l.is_empty())
}

pub(super) fn is_nhwc(node: &NodeDef) -> bool {
    attr_str(node, "data_format").is_none_or(|f| f == "NHWC")
}

/// A 4-entry NHWC attribute in NCHW order.
pub(super) fn to_nchw(v: &[i64], nhwc: bool) -> Vec<i64> {
    if nhwc && v.len() == 4 {
        vec![v[0], v[3], v[1], v[2]]
    } else {
        v.to_vec()
    }
}

/// The output tensor name of output `k` of a node named `name`.
pub(super) fn out_name(name: &str, k: usize) -> String {
    if k == 0 {
        name.to_string()
    } else {
        format!("{name}:{k}")
    }
}

impl Builder<'_> {
    /// Maps `node` when it is a training or shape op of the module table; `false` when it
    /// is none.
    pub(super) fn training(&mut self, node: &NodeDef) -> Result<bool, ModelError> {
        let op = node.op.as_str();
        if self.fold(node)? || self.fold_float(node)? {
            return Ok(true);
        }
        let base = op.strip_prefix("Resource").unwrap_or(op);
        if let Some(apply) = APPLY_OPS.iter().find(|a| a.tf == Some(base)) {
            self.apply(node, apply)?;
            return Ok(true);
        }
        match op {
            "VarHandleOp" | "VariableV2" | "Variable" => {
                let shape = node.attr.get("shape").and_then(|a| a.shape.as_ref());
                let dims = shape.and_then(super::shape_dims);
                let dtype = node.attr.get("dtype").and_then(|a| a.r#type).unwrap_or(1);
                match dims.filter(|d| d.iter().all(|&x| x >= 0)) {
                    Some(dims) => self.variable(node, super::elem_type(dtype), dims),
                    None => self.unknown(node, &format!("{op} (no shape)"))?,
                }
            }
            "ReadVariableOp" => self.read_variable(node)?,
            "Shape" | "ShapeN" => {
                for k in 0..Self::arity(node) {
                    let v = self.input(node, k)?;
                    if let Some(dims) = self.constant(&v).map(|c| c.dims.clone()) {
                        let len = dims.len() as i64;
                        let name = out_name(&node.name, k);
                        let ir = self.constant_tensor(name, ElemType::INT64, vec![len], Some(dims));
                        self.set(
                            node,
                            k,
                            Val {
                                ir,
                                layout: Layout::Plain,
                            },
                        );
                        continue;
                    }
                    let out = self.push(
                        out_name(&node.name, k),
                        "Shape",
                        "",
                        vec![v.ir],
                        vec![out_name(&node.name, k)],
                        Attrs::new(),
                    );
                    self.shape_orders.insert(out.clone(), v.layout);
                    self.set(
                        node,
                        k,
                        Val {
                            ir: out,
                            layout: Layout::Plain,
                        },
                    );
                }
            }
            "Conv2DBackpropFilter" | "DepthwiseConv2dNativeBackpropFilter" => {
                self.conv_backprop(node, true)?
            }
            "Conv2DBackpropInput" | "DepthwiseConv2dNativeBackpropInput" => {
                self.conv_backprop(node, false)?
            }
            "FusedBatchNorm" | "FusedBatchNormV2" | "FusedBatchNormV3" => {
                return self.bn_training(node)
            }
            "FusedBatchNormGrad" | "FusedBatchNormGradV2" | "FusedBatchNormGradV3" => {
                self.bn_grad(node)?
            }
            "BiasAddGrad" => {
                let x = self.input(node, 0)?;
                let nchw = x.layout == Layout::Nchw || !is_nhwc(node);
                let f = if nchw { "NCHW" } else { "NHWC" };
                let a = attrs([("data_format", Attr::Str(f.into()))]);
                self.emit_n(node, "BiasAddGrad", vec![x.ir], a, &[Layout::Plain]);
            }
            "MaxPoolGrad" | "AvgPoolGrad" => self.pool_grad(node)?,
            "SoftmaxCrossEntropyWithLogits" | "SparseSoftmaxCrossEntropyWithLogits" => {
                let ins = self.plain_inputs(node, 2)?;
                self.emit_n(node, op, ins, Attrs::new(), &[Layout::Plain, Layout::Plain]);
            }
            "LogSoftmax" => {
                let x = self.input(node, 0)?;
                let axis = if x.layout == Layout::Nchw { 1 } else { -1 };
                let a = attrs([("axis", Attr::Int(axis))]);
                self.emit_n(node, "LogSoftmax", vec![x.ir], a, &[x.layout]);
            }
            _ => return self.elementwise_training(node),
        }
        Ok(true)
    }

    /// The element-wise ops of a training step: assignments, activation gradients, AddN,
    /// Fill, FloorDiv, ZerosLike/OnesLike, Tile; `false` for any other op.
    fn elementwise_training(&mut self, node: &NodeDef) -> Result<bool, ModelError> {
        let op = node.op.as_str();
        match op {
            "AssignVariableOp" | "AssignAddVariableOp" | "AssignSubVariableOp" => {
                let ir = match op {
                    "AssignVariableOp" => "Assign",
                    "AssignAddVariableOp" => "AssignAdd",
                    _ => "AssignSub",
                };
                let ins = vec![self.input(node, 0)?.ir, self.input(node, 1)?.ir];
                self.emit_n(node, ir, ins, Attrs::new(), &[Layout::Plain]);
            }
            "AddN" => {
                let vals = (0..Self::arity(node))
                    .map(|i| self.input(node, i))
                    .collect::<Result<Vec<_>, _>>()?;
                let layout = match vals.first() {
                    Some(v) if vals.iter().all(|x| x.layout == v.layout) => v.layout,
                    _ => Layout::Plain,
                };
                let ins = vals.iter().map(|v| self.in_layout(v, layout)).collect();
                self.emit_n(node, "AddN", ins, Attrs::new(), &[layout]);
            }
            "Fill" => {
                let ins = vec![self.input(node, 0)?.ir, self.input(node, 1)?.ir];
                self.emit_n(node, "Fill", ins, Attrs::new(), &[Layout::Plain]);
            }
            "FloorDiv" | "FloorMod" => {
                let ins = self.plain_inputs(node, 2)?;
                self.emit_n(node, op, ins, Attrs::new(), &[Layout::Plain]);
            }
            "Select" | "SelectV2" => {
                let vals = (0..3)
                    .map(|i| self.input(node, i))
                    .collect::<Result<Vec<_>, _>>()?;
                let layout = if vals.iter().all(|v| v.layout == vals[0].layout) {
                    vals[0].layout
                } else {
                    Layout::Plain
                };
                let ins = vals.iter().map(|v| self.in_layout(v, layout)).collect();
                self.emit_n(node, "Where", ins, Attrs::new(), &[layout]);
            }
            // Random tensors of the sizes at input 0 (the seeds and algorithm inputs do not
            // change the work).
            "StatelessRandomUniformV2"
            | "StatelessRandomNormalV2"
            | "RandomUniform"
            | "RandomStandardNormal"
            | "StatelessRandomUniform"
            | "StatelessRandomNormal" => {
                let ins = vec![self.input(node, 0)?.ir];
                let ir = if op.contains("Normal") {
                    "StatelessRandomNormalV2"
                } else {
                    "StatelessRandomUniformV2"
                };
                self.emit_n(node, ir, ins, Attrs::new(), &[Layout::Plain]);
            }
            "ZerosLike" | "OnesLike" => {
                let x = self.input(node, 0)?;
                self.emit_n(node, op, vec![x.ir], Attrs::new(), &[x.layout]);
            }
            "Tile" => {
                let x = self.input(node, 0)?;
                let Some(reps) = self.const_ints_of(node, 1)? else {
                    self.unknown(node, "Tile")?;
                    return Ok(true);
                };
                let xi = self.in_layout(&x, Layout::Plain);
                let r = self.ints_const(node, "repeats", reps);
                self.emit_n(node, "Tile", vec![xi, r], Attrs::new(), &[Layout::Plain]);
            }
            _ if ACTIVATION_GRADS.contains(&op) => {
                let (a, b) = (self.input(node, 0)?, self.input(node, 1)?);
                let layout = if a.layout == b.layout {
                    a.layout
                } else {
                    Layout::Plain
                };
                let ins = vec![self.in_layout(&a, layout), self.in_layout(&b, layout)];
                self.emit_n(node, op, ins, Attrs::new(), &[layout]);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// A node of `layouts.len()` outputs, named `name`, `name:1` … as TensorFlow's.
    pub(super) fn emit_n(
        &mut self,
        node: &NodeDef,
        op: &str,
        ins: Vec<String>,
        a: Attrs,
        layouts: &[Layout],
    ) {
        let outs: Vec<String> = (0..layouts.len())
            .map(|k| out_name(&node.name, k))
            .collect();
        self.push(node.name.clone(), op, "", ins, outs.clone(), a);
        for (k, (ir, &layout)) in outs.into_iter().zip(layouts).enumerate() {
            self.set(node, k, Val { ir, layout });
        }
    }

    /// The first `n` data inputs in TensorFlow's layout.
    fn plain_inputs(&mut self, node: &NodeDef, n: usize) -> Result<Vec<String>, ModelError> {
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let v = self.input(node, i)?;
            out.push(self.in_layout(&v, Layout::Plain));
        }
        Ok(out)
    }

    pub(super) fn const_ints_of(
        &self,
        node: &NodeDef,
        i: usize,
    ) -> Result<Option<Vec<i64>>, ModelError> {
        let v = self.input(node, i)?;
        Ok(self.constant(&v).and_then(|c| c.ints.clone()))
    }

    pub(super) fn ints_const(&mut self, node: &NodeDef, what: &str, values: Vec<i64>) -> String {
        self.constant_tensor(
            format!("{}/{what}", node.name),
            ElemType::INT64,
            vec![values.len() as i64],
            Some(values),
        )
    }

    /// A variable: an initializer of its dims (what the importer reads of weights), named
    /// by its `shared_name` (the variable's own name) when it has one, else by the node.
    fn variable(&mut self, node: &NodeDef, elem_type: ElemType, dims: Vec<i64>) {
        let name = attr_str(node, "shared_name")
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| node.name.clone());
        let ir = self.constant_tensor(name, elem_type, dims, None);
        self.variables.insert(ir.clone());
        self.set(
            node,
            0,
            Val {
                ir,
                layout: Layout::Plain,
            },
        );
    }

    /// `ReadVariableOp`: the variable itself; a resource placeholder (no shape) becomes a
    /// variable of the reader's `_output_shapes`, else the read is an unknown op.
    fn read_variable(&mut self, node: &NodeDef) -> Result<(), ModelError> {
        let v = self.input(node, 0)?;
        if self.constant(&v).is_some() {
            self.set(node, 0, v);
            return Ok(());
        }
        let stated = node
            .attr
            .get("_output_shapes")
            .and_then(|a| a.list.as_ref())
            .and_then(|l| l.shape.first())
            .and_then(super::shape_dims)
            .filter(|d| d.iter().all(|&x| x >= 0));
        match stated {
            Some(dims) => {
                let dtype = node.attr.get("dtype").and_then(|a| a.r#type).unwrap_or(1);
                self.variable(node, super::elem_type(dtype), dims);
                Ok(())
            }
            None => self.unknown(node, "ReadVariableOp (a variable of unknown shape)"),
        }
    }

    /// Integer shape arithmetic whose inputs are all known at import: folded into a constant.
    fn fold(&mut self, node: &NodeDef) -> Result<bool, ModelError> {
        let op = node.op.as_str();
        let n = Self::arity(node);
        if !matches!(
            op,
            "Shape"
                | "ShapeN"
                | "Size"
                | "Rank"
                | "Pack"
                | "Slice"
                | "ConcatV2"
                | "Sub"
                | "AddV2"
                | "Add"
                | "Mul"
                | "FloorDiv"
                | "FloorMod"
        ) || n == 0
        {
            return Ok(false);
        }
        let mut ins = Vec::with_capacity(n);
        for i in 0..n {
            let v = self.input(node, i)?;
            match self.constant(&v) {
                Some(c) => ins.push(c.clone()),
                None => return Ok(false),
            }
        }
        let ints = |i: usize| ins[i].ints.clone();
        if op == "Slice" && ins[0].dims.len() != 1 {
            // A slice of a constant matrix (a Pad's paddings in its gradient): row-major.
            let (Some(x), Some(b), Some(s)) = (ints(0), ints(1), ints(2)) else {
                return Ok(false);
            };
            let Some((dims, v)) = slice_nd(&x, &ins[0].dims, &b, &s) else {
                return Ok(false);
            };
            let ir = self.constant_tensor(out_name(&node.name, 0), ElemType::INT64, dims, Some(v));
            let layout = Layout::Plain;
            self.set(node, 0, Val { ir, layout });
            return Ok(true);
        }
        let outs: Vec<Vec<i64>> = match op {
            "Shape" | "ShapeN" => ins.iter().map(|c| c.dims.clone()).collect(),
            "Size" => vec![vec![ins[0].dims.iter().product()]],
            "Rank" => vec![vec![ins[0].dims.len() as i64]],
            _ => {
                let Some(vals) = (0..n).map(ints).collect::<Option<Vec<_>>>() else {
                    return Ok(false);
                };
                match fold_ints(op, &vals) {
                    Some(v) => vec![v],
                    None => return Ok(false),
                }
            }
        };
        let scalar = matches!(op, "Size" | "Rank")
            || (matches!(
                op,
                "Sub" | "AddV2" | "Add" | "Mul" | "FloorDiv" | "FloorMod"
            ) && ins.iter().all(|c| c.dims.is_empty()));
        for (k, v) in outs.into_iter().enumerate() {
            let dims = if scalar { vec![] } else { vec![v.len() as i64] };
            let name = out_name(&node.name, k);
            let ir = self.constant_tensor(name, ElemType::INT64, dims, Some(v));
            self.set(
                node,
                k,
                Val {
                    ir,
                    layout: Layout::Plain,
                },
            );
        }
        Ok(true)
    }
}

/// Element-wise ops a converter computes once when every input is a constant (GE's constant
/// folding): Keras writes an inference batch norm as this arithmetic on its constants.
const FLOAT_FOLDED: &[&str] = &[
    "Add",
    "AddV2",
    "Maximum",
    "Minimum",
    "Mul",
    "Neg",
    "Pow",
    "RealDiv",
    "Reciprocal",
    "Rsqrt",
    "Sqrt",
    "Square",
    "SquaredDifference",
    "Sub",
];

impl Builder<'_> {
    /// An element-wise op over float constants only (no variable, no integer of known values),
    /// folded into a constant of the broadcast dims (float values are not kept, so neither are
    /// its); `false` for anything else.
    fn fold_float(&mut self, node: &NodeDef) -> Result<bool, ModelError> {
        let n = Self::arity(node);
        if node.op == "Reshape" && n == 2 {
            return self.fold_reshape(node);
        }
        if !FLOAT_FOLDED.contains(&node.op.as_str()) || n == 0 {
            return Ok(false);
        }
        let mut dims: Vec<Vec<i64>> = Vec::with_capacity(n);
        let mut elem = None;
        for i in 0..n {
            let v = self.input(node, i)?;
            // A variable's value changes as training runs: never folded. An integer constant
            // of known values is shape arithmetic, which inference evaluates (values kept).
            match self
                .constant(&v)
                .filter(|c| c.ints.is_none() && !self.variables.contains(&v.ir))
            {
                Some(c) => {
                    elem.get_or_insert(c.elem_type);
                    dims.push(c.dims.clone());
                }
                None => return Ok(false),
            }
        }
        // Numpy broadcasting of the operands' dims.
        let rank = dims.iter().map(Vec::len).max().unwrap_or(0);
        let mut out = vec![1i64; rank];
        for d in &dims {
            for (k, &x) in d.iter().enumerate() {
                let at = rank - d.len() + k;
                out[at] = match (out[at], x) {
                    (1, x) => x,
                    (o, 1) => o,
                    (o, x) if o == x => o,
                    _ => return Ok(false),
                };
            }
        }
        let ir = self.constant_tensor(out_name(&node.name, 0), elem.expect("one input"), out, None);
        let layout = Layout::Plain;
        self.set(node, 0, Val { ir, layout });
        Ok(true)
    }
}

impl Builder<'_> {
    /// A `Reshape` of a float constant to a constant shape (Keras reshapes a batch norm's
    /// statistics so), folded into a constant of the new dims; `false` otherwise.
    fn fold_reshape(&mut self, node: &NodeDef) -> Result<bool, ModelError> {
        let v = self.input(node, 0)?;
        let Some(c) = self
            .constant(&v)
            .filter(|c| c.ints.is_none() && !self.variables.contains(&v.ir))
            .cloned()
        else {
            return Ok(false);
        };
        let Some(target) = self.const_ints_of(node, 1)? else {
            return Ok(false);
        };
        let count: i64 = c.dims.iter().product();
        let known: i64 = target.iter().filter(|&&d| d != -1).product();
        let dims: Vec<i64> = match target.iter().filter(|&&d| d == -1).count() {
            0 if known == count => target,
            1 if known > 0 && count % known == 0 => target
                .iter()
                .map(|&d| if d == -1 { count / known } else { d })
                .collect(),
            _ => return Ok(false),
        };
        let ir = self.constant_tensor(out_name(&node.name, 0), c.elem_type, dims, None);
        let layout = Layout::Plain;
        self.set(node, 0, Val { ir, layout });
        Ok(true)
    }
}

/// The values of an integer op over constant inputs (`None` when it cannot be folded).
fn fold_ints(op: &str, v: &[Vec<i64>]) -> Option<Vec<i64>> {
    match op {
        "Pack" => v.iter().map(|x| (x.len() == 1).then(|| x[0])).collect(),
        "ConcatV2" => Some(v[..v.len() - 1].concat()),
        "Slice" => {
            let (x, begin, size) = (v.first()?, v.get(1)?, v.get(2)?);
            let b = usize::try_from(*begin.first()?).ok()?;
            let end = match size.first()? {
                -1 => x.len(),
                &s => b.checked_add(usize::try_from(s).ok()?)?,
            };
            x.get(b..end).map(<[i64]>::to_vec)
        }
        _ => {
            let (a, b) = (v.first()?, v.get(1)?);
            let len = a.len().max(b.len());
            if !(a.len() == len || a.len() == 1) || !(b.len() == len || b.len() == 1) {
                return None;
            }
            (0..len)
                .map(|i| {
                    let (x, y) = (a[i.min(a.len() - 1)], b[i.min(b.len() - 1)]);
                    match op {
                        "Sub" => x.checked_sub(y),
                        "Mul" => x.checked_mul(y),
                        "FloorDiv" => floor_div(x, y),
                        // TensorFlow's FloorMod takes the divisor's sign.
                        "FloorMod" => x.checked_rem(y).map(|r| {
                            if r != 0 && (r < 0) != (y < 0) {
                                r + y
                            } else {
                                r
                            }
                        }),
                        _ => x.checked_add(y),
                    }
                })
                .collect()
        }
    }
}

/// TensorFlow's `Slice` of a row-major constant of `dims`: `begin` and `size` (-1: to the
/// end) per dim; the result's dims and values, `None` when they do not fit.
fn slice_nd(x: &[i64], dims: &[i64], begin: &[i64], size: &[i64]) -> Option<(Vec<i64>, Vec<i64>)> {
    if begin.len() != dims.len() || size.len() != dims.len() {
        return None;
    }
    let mut out_dims = Vec::with_capacity(dims.len());
    for ((&d, &b), &s) in dims.iter().zip(begin).zip(size) {
        let n = if s == -1 { d - b } else { s };
        if b < 0 || n < 0 || b + n > d {
            return None;
        }
        out_dims.push(n);
    }
    let count: i64 = out_dims.iter().product();
    let mut values = Vec::with_capacity(usize::try_from(count).ok()?);
    let mut idx = vec![0i64; dims.len()];
    for _ in 0..count {
        let mut flat = 0i64;
        for (k, &d) in dims.iter().enumerate() {
            flat = flat * d + begin[k] + idx[k];
        }
        values.push(*x.get(usize::try_from(flat).ok()?)?);
        for k in (0..dims.len()).rev() {
            idx[k] += 1;
            if idx[k] < out_dims[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    Some((out_dims, values))
}

/// `x / y` rounded toward negative infinity, as TensorFlow's FloorDiv; `None` for a zero
/// divisor or an overflow.
fn floor_div(x: i64, y: i64) -> Option<i64> {
    let q = x.checked_div(y)?;
    Some(if x % y != 0 && ((x < 0) != (y < 0)) {
        q - 1
    } else {
        q
    })
}
