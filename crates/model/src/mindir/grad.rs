//! MindSpore's training primitives → the Ascend IR ops a TensorFlow or PyTorch step gets
//! (`tensorflow/backward.rs`, `torch/grad.rs`), as MindSpore's Ascend backend compiles a
//! `TrainOneStepCell` exported by `mindspore.export`: batch norm split in two (its `BnSplit`
//! and `BnGradSplit` passes), dropout as a generated mask and its application
//! (`DropoutUnifyMindIR`), the optimizer primitives as the fused updates they name.
//!
//! | MindSpore | graph IR |
//! |---|---|
//! | Conv2DBackpropFilter (dout, x, filter_size) | `Conv2DBackpropFilter` (x, dy; `filter_size` OIHW, `groups`); `Depthwise…` when each group is one channel |
//! | Conv2DBackpropInput (dout, weight, input_size) | `Conv2DBackpropInput` (sizes, filter, dy); `Depthwise…` likewise |
//! | ReluGrad, ReLU6Grad, SiLUGrad (dy, x); SigmoidGrad, TanhGrad (y, dy); GeLUGrad (dy, x, y); SoftmaxBackward, LogSoftmaxGrad | `ReluGrad`, `Relu6Grad`, `SiluGrad`, `SigmoidGrad`, `TanhGrad`, `GeluGrad`; `SoftmaxGrad`, `LogSoftmaxGrad` (dy, y) |
//! | MaxPoolGrad (x, y, dy); AvgPoolGrad (x, y, dy) | `MaxPoolGrad` (x, y, dy); `AvgPoolGrad` (the input's sizes, dy); `ksize`, `strides` NCHW, `padding` SAME/VALID |
//! | BiasAddGrad | `BiasAddGrad` (`data_format` NCHW: one value per dim 1) |
//! | BatchNorm (`is_training`) | `BNTrainingReduce` + `BNTrainingUpdate` (`factor` = MindSpore's momentum) |
//! | BatchNormGrad | `BNTrainingUpdateGrad` (scale and offset gradients) + `BNTrainingReduceGrad` (the input gradient) |
//! | LayerNormGrad (x, dy, variance, mean, gamma) | `LayerNormGrad` (dy, x, mean, variance, gamma; `normalized_shape`) |
//! | Dropout (x, keep_prob); DropoutGrad (dy, mask) | `DropOutGenMask` (x's sizes, keep_prob) + `DropOutDoMask` (x, mask, keep_prob); `DropOutDoMask` (dy, mask, keep_prob) |
//! | StridedSliceGrad (dy, shape, begin, end, strides; masks) | `StridedSliceGrad` (shape, begin, end, strides, dy; masks) |
//! | SoftmaxCrossEntropyWithLogits; SparseSoftmaxCrossEntropyWithLogits (`is_grad`) | the same op, loss and backprop; the sparse one's loss or backprop as `is_grad` says |
//! | ApplyMomentum, Adam, AdamWeightDecay, SGD | `ApplyMomentum`, `ApplyAdam`, `AdamWeightDecay`, `SGD` (inputs in MindSpore's order, which is the IR's and CANN's) |
//! | Assign, AssignAdd, AssignSub; AddN; PowTensorScalar | the same; `AddN`; `Pow` by a float constant |

use super::ops::{attrs, Attrs};
use super::{flatten_tensors, Builder, Call, Value};
use crate::batch_norm::{BnGrad, BnTraining};
use crate::graph::ElemType;
use crate::optimizer::apply_op;
use crate::{Attr, ModelError};

/// MindSpore's optimizer primitives: the IR update each is and how many inputs it reads (the
/// rest are `use_locking` and the side-effect monad).
const UPDATES: &[(&str, &str, usize)] = &[
    ("ApplyMomentum", "ApplyMomentum", 5),
    ("Adam", "ApplyAdam", 10),
    ("AdamWeightDecay", "AdamWeightDecay", 9),
    ("SGD", "SGD", 6),
];

/// The activation gradients: MindSpore's primitive, the IR op, and the positions of its
/// tensor inputs in the IR op's order.
const ACT_GRADS: &[(&str, &str, &[usize])] = &[
    ("ReluGrad", "ReluGrad", &[0, 1]),
    ("ReLU6Grad", "Relu6Grad", &[0, 1]),
    ("SiLUGrad", "SiluGrad", &[0, 1]),
    ("SigmoidGrad", "SigmoidGrad", &[0, 1]),
    ("TanhGrad", "TanhGrad", &[0, 1]),
    ("GeLUGrad", "GeluGrad", &[0, 1, 2]),
    ("SoftmaxBackward", "SoftmaxGrad", &[0, 1]),
    ("LogSoftmaxGrad", "LogSoftmaxGrad", &[1, 0]),
];

impl Builder<'_> {
    /// The value of a training primitive (`Some`); `None` for any other primitive.
    pub(super) fn training(&mut self, c: &Call<'_>) -> Result<Option<Value>, ModelError> {
        if let Some(&(_, ir, order)) = ACT_GRADS.iter().find(|(ms, _, _)| *ms == c.op) {
            let ins = order
                .iter()
                .map(|&i| self.tensor(c, i))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Some(self.emit(c, ir, ins, Attrs::new())));
        }
        if let Some(&(_, ir, arity)) = UPDATES.iter().find(|(ms, _, _)| *ms == c.op) {
            return self.update(c, ir, arity).map(Some);
        }
        Ok(Some(match c.op {
            "Conv2DBackpropFilter" | "Conv2DBackpropInput" => self.conv_backprop(c)?,
            "MaxPoolGrad" | "AvgPoolGrad" => self.pool_grad(c)?,
            "BiasAddGrad" => {
                let dy = self.tensor(c, 0)?;
                self.nchw(c, 1)?;
                let a = attrs([("data_format", Attr::Str("NCHW".into()))]);
                self.emit(c, "BiasAddGrad", vec![dy], a)
            }
            "BatchNorm" if self.bool_arg(c, 5, "is_training") => self.bn_training(c)?,
            "BatchNormGrad" => self.bn_grad(c)?,
            "LayerNormGrad" => self.layer_norm_grad(c)?,
            "Dropout" => self.dropout(c)?,
            "DropoutGrad" => {
                let (dy, mask) = (self.tensor(c, 0)?, self.tensor(c, 1)?);
                let keep = self.keep_prob(c, 2)?;
                self.emit(c, "DropOutDoMask", vec![dy, mask, keep], Attrs::new())
            }
            "StridedSliceGrad" => self.strided_slice_grad(c)?,
            "SoftmaxCrossEntropyWithLogits" | "SparseSoftmaxCrossEntropyWithLogits" => {
                let (logits, labels) = (self.tensor(c, 0)?, self.tensor(c, 1)?);
                let outs = vec![format!("{}:0", c.name), format!("{}:1", c.name)];
                self.push(
                    &c.name,
                    c.op,
                    "",
                    vec![logits, labels],
                    outs.clone(),
                    Attrs::new(),
                );
                let mut vals: Vec<Value> = outs.into_iter().map(Value::Tensor).collect();
                if c.op == "SoftmaxCrossEntropyWithLogits" {
                    Value::Tuple(vals)
                } else {
                    vals.swap_remove(usize::from(self.bool_arg(c, usize::MAX, "is_grad")))
                }
            }
            "Assign" | "AssignAdd" | "AssignSub" => {
                let (var, value) = (self.tensor(c, 0)?, self.operand(c, 1)?);
                self.emit(c, c.op, vec![var, value], Attrs::new())
            }
            "AddN" => {
                let mut ins = Vec::new();
                flatten_tensors(&c.args, &mut ins);
                if ins.is_empty() {
                    return Err(self.bad_arg(c, 0, "a tuple of tensors"));
                }
                self.emit(c, "AddN", ins, Attrs::new())
            }
            "PowTensorScalar" => {
                let x = self.tensor(c, 0)?;
                if self.float_arg(c, 1, "exponent").is_none() {
                    return Err(self.bad_arg(c, 1, "a scalar exponent"));
                }
                let e = self.constant(
                    format!("{}/exponent", c.name),
                    ElemType::FLOAT,
                    vec![],
                    None,
                );
                self.emit(c, "Pow", vec![x, e], Attrs::new())
            }
            _ => return Ok(None),
        }))
    }

    /// The dims of output `k` of the node as its abstract value states them.
    fn out_dims(c: &Call<'_>, k: usize) -> Option<Vec<i64>> {
        let a = c.abstract_out?;
        let t = if a.r#type == Some(super::proto::attr_type::TUPLE) {
            a.values.get(k)?.tensors.first()?
        } else {
            a.tensors.get(k)?
        };
        Some(t.dims.clone())
    }

    /// An int64 constant of `values`, named after the node.
    fn ints_const(&mut self, c: &Call<'_>, what: &str, values: Vec<i64>) -> String {
        let n = values.len() as i64;
        self.constant(
            format!("{}/{what}", c.name),
            ElemType::INT64,
            vec![n],
            Some(values),
        )
    }

    /// Conv2DBackpropFilter / Conv2DBackpropInput: the forward convolution's window, from
    /// the primitive's attributes (`stride`, `dilation` as 2 or 4 values, `pad_mode`,
    /// `pad_list` top, bottom, left, right, `group`).
    fn conv_backprop(&mut self, c: &Call<'_>) -> Result<Value, ModelError> {
        let filter = c.op == "Conv2DBackpropFilter";
        let (s, d) = (
            self.spatial(c, "stride", self.ints_arg(c, usize::MAX, "stride"))?,
            self.spatial(c, "dilation", self.ints_arg(c, usize::MAX, "dilation"))?,
        );
        self.nchw(c, usize::MAX)?;
        let group = self.int_arg(c, usize::MAX, "group").unwrap_or(1);
        let mut a = attrs([
            ("strides", Attr::Ints(vec![1, 1, s[0], s[1]])),
            ("dilations", Attr::Ints(vec![1, 1, d[0], d[1]])),
            ("groups", Attr::Int(group)),
            ("data_format", Attr::Str("NCHW".into())),
        ]);
        let mode = self
            .enum_arg(c, usize::MAX, "pad_mode", &["PAD", "SAME", "VALID"])
            .unwrap_or_else(|| "VALID".into());
        match mode.as_str() {
            "SAME" | "VALID" => a.insert("padding".into(), Attr::Str(mode)),
            "PAD" => {
                let pads = self
                    .ints_arg(c, usize::MAX, "pad_list")
                    .or_else(|| self.ints_arg(c, usize::MAX, "pad"));
                let pads = match pads.as_deref() {
                    Some(&[p]) => vec![p; 4],
                    Some(p) if p.len() == 4 => p.to_vec(),
                    p => {
                        return Err(self.invalid(
                            &c.name,
                            c.op,
                            format!("pad_list {p:?}: expected top, bottom, left, right"),
                        ))
                    }
                };
                a.insert("pads".into(), Attr::Ints(pads));
                a.insert("padding".into(), Attr::Str("EXPLICIT".into()))
            }
            m => {
                return Err(self.invalid(
                    &c.name,
                    c.op,
                    format!("pad_mode {m:?}: expected pad, same or valid"),
                ))
            }
        };
        let dy = self.tensor(c, 0)?;
        let Some(sizes) = self.ints_arg(c, 2, "").filter(|v| v.len() == 4) else {
            let what = if filter {
                "the filter's O, C, H, W"
            } else {
                "the input's N, C, H, W"
            };
            return Err(self.bad_arg(c, 2, what));
        };
        // One channel per group: a depthwise convolution, as TensorFlow and PyTorch name it.
        let depthwise = |per_group: i64| group > 1 && per_group == 1;
        if filter {
            let x = self.tensor(c, 1)?;
            let ir = if depthwise(sizes[1]) {
                "DepthwiseConv2DBackpropFilter"
            } else {
                "Conv2DBackpropFilter"
            };
            a.insert("filter_size".into(), Attr::Ints(sizes));
            return Ok(self.emit(c, ir, vec![x, dy], a));
        }
        let w = self.tensor(c, 1)?;
        let per_group = self
            .initializers
            .get(&w)
            .and_then(|t| t.dims.get(1).copied());
        let ir = if per_group.is_some_and(depthwise) {
            "DepthwiseConv2DBackpropInput"
        } else {
            "Conv2DBackpropInput"
        };
        a.insert("size_format".into(), Attr::Str("NCHW".into()));
        let sizes = self.ints_const(c, "sizes", sizes);
        Ok(self.emit(c, ir, vec![sizes, w, dy], a))
    }

    /// MaxPoolGrad, AvgPoolGrad (x, y, dy, then kernel_size, strides, pad_mode, data_format as
    /// arguments or attributes).
    fn pool_grad(&mut self, c: &Call<'_>) -> Result<Value, ModelError> {
        let k = self.spatial(c, "kernel_size", self.ints_arg(c, 3, "kernel_size"))?;
        let s = self.spatial(c, "strides", self.ints_arg(c, 4, "strides"))?;
        let padding = self
            .enum_arg(c, 5, "pad_mode", &["PAD", "SAME", "VALID"])
            .unwrap_or_else(|| "VALID".into());
        if padding != "SAME" && padding != "VALID" {
            return Err(self.invalid(
                &c.name,
                c.op,
                format!("pad_mode {padding:?}: expected same or valid"),
            ));
        }
        self.nchw(c, 6)?;
        let mut a = attrs([
            ("ksize", Attr::Ints(vec![1, 1, k[0], k[1]])),
            ("strides", Attr::Ints(vec![1, 1, s[0], s[1]])),
            ("padding", Attr::Str(padding)),
            ("data_format", Attr::Str("NCHW".into())),
        ]);
        let (x, y, dy) = (self.tensor(c, 0)?, self.tensor(c, 1)?, self.tensor(c, 2)?);
        if c.op == "MaxPoolGrad" {
            return Ok(self.emit(c, "MaxPoolGrad", vec![x, y, dy], a));
        }
        let Some(dims) = Self::out_dims(c, 0).filter(|d| d.len() == 4) else {
            return Err(self.invalid(
                &c.name,
                c.op,
                "no 4-D output shape stated (the forward input's sizes)",
            ));
        };
        a.insert("size_format".into(), Attr::Str("NCHW".into()));
        let sizes = self.ints_const(c, "sizes", dims);
        Ok(self.emit(c, "AvgPoolGrad", vec![sizes, dy], a))
    }

    /// BatchNorm in training mode (x, scale, bias, mean, variance, is_training, epsilon,
    /// momentum): MindSpore's outputs are y, the batch mean and variance, and the saved mean
    /// and variance its gradient reads (BNTrainingUpdate's outputs 0, 3, 4, 3, 4).
    fn bn_training(&mut self, c: &Call<'_>) -> Result<Value, ModelError> {
        self.nchw(c, 8)?;
        let x = self.tensor(c, 0)?;
        let (scale, offset) = (self.tensor(c, 1)?, self.tensor(c, 2)?);
        let eps = self.float_arg(c, 6, "epsilon").unwrap_or(1e-5) as f32;
        let momentum = self.float_arg(c, 7, "momentum").unwrap_or(0.1) as f32;
        let outs: Vec<String> = (0..5).map(|k| format!("{}:{k}", c.name)).collect();
        let bn = BnTraining {
            x,
            scale,
            offset,
            epsilon: eps,
            factor: momentum,
        };
        self.nodes.extend(bn.nodes(&c.name, outs.clone()));
        Ok(Value::Tuple(
            [0, 3, 4, 3, 4]
                .iter()
                .map(|&k| Value::Tensor(outs[k].clone()))
                .collect(),
        ))
    }

    /// BatchNormGrad (dy, x, scale, saved mean, saved variance, reserve, is_training,
    /// epsilon): the input, scale and offset gradients.
    fn bn_grad(&mut self, c: &Call<'_>) -> Result<Value, ModelError> {
        if !self.bool_arg(c, 6, "is_training") {
            return self.opaque(c);
        }
        self.nchw(c, 8)?;
        let (dy, x, scale) = (self.tensor(c, 0)?, self.tensor(c, 1)?, self.tensor(c, 2)?);
        let (mean, var) = (self.tensor(c, 3)?, self.tensor(c, 4)?);
        let eps = self.float_arg(c, 7, "epsilon").unwrap_or(1e-5) as f32;
        let grads = BnGrad::update_outputs(&c.name);
        let bn = BnGrad {
            dy,
            x,
            scale,
            mean,
            variance: var,
            epsilon: eps,
        };
        self.nodes
            .extend(bn.nodes(&c.name, grads.clone(), c.name.clone()));
        let dx = c.name.clone();
        let mut vals = vec![Value::Tensor(dx)];
        vals.extend(grads.into_iter().map(Value::Tensor));
        Ok(Value::Tuple(vals))
    }

    /// LayerNormGrad (x, dy, variance, mean, gamma, begin_norm_axis, begin_params_axis): the
    /// input, gamma and beta gradients; the normalized shape is gamma's.
    fn layer_norm_grad(&mut self, c: &Call<'_>) -> Result<Value, ModelError> {
        let (x, dy) = (self.tensor(c, 0)?, self.tensor(c, 1)?);
        let (var, mean, gamma) = (self.tensor(c, 2)?, self.tensor(c, 3)?, self.tensor(c, 4)?);
        let Some(norm) = Self::out_dims(c, 1) else {
            return Err(self.invalid(&c.name, c.op, "no gamma gradient shape stated (output 1)"));
        };
        let outs: Vec<String> = (0..3).map(|k| format!("{}:{k}", c.name)).collect();
        let a = attrs([("normalized_shape", Attr::Ints(norm))]);
        self.push(
            &c.name,
            "LayerNormGrad",
            "",
            vec![dy, x, mean, var, gamma],
            outs.clone(),
            a,
        );
        Ok(Value::Tuple(outs.into_iter().map(Value::Tensor).collect()))
    }

    /// The keep probability at argument `i` (or the `keep_prob` attribute) as a float constant.
    fn keep_prob(&mut self, c: &Call<'_>, i: usize) -> Result<String, ModelError> {
        match self.float_arg(c, i, "keep_prob") {
            Some(p) if p > 0.0 && p <= 1.0 => Ok(self.constant(
                format!("{}/keep_prob", c.name),
                ElemType::FLOAT,
                vec![],
                None,
            )),
            _ => Err(self.bad_arg(c, i, "a keep probability in (0, 1]")),
        }
    }

    /// Dropout (x, keep_prob, seed0, seed1): a training dropout (an inference cell has none):
    /// the mask is generated for x's sizes and applied.
    fn dropout(&mut self, c: &Call<'_>) -> Result<Value, ModelError> {
        let x = self.tensor(c, 0)?;
        let Some(dims) = Self::out_dims(c, 0) else {
            return Err(self.invalid(&c.name, c.op, "no output shape stated (x's sizes)"));
        };
        let keep = self.keep_prob(c, 1)?;
        let sizes = self.ints_const(c, "sizes", dims);
        let mask = format!("{}/mask", c.name);
        self.push(
            &mask,
            "DropOutGenMask",
            "",
            vec![sizes, keep.clone()],
            vec![mask.clone()],
            Attrs::new(),
        );
        let y = self.emit(
            c,
            "DropOutDoMask",
            vec![x, mask.clone(), keep],
            Attrs::new(),
        );
        Ok(Value::Tuple(vec![y, Value::Tensor(mask)]))
    }

    /// StridedSliceGrad (dy, shape, begin, end, strides; the five masks as attributes).
    fn strided_slice_grad(&mut self, c: &Call<'_>) -> Result<Value, ModelError> {
        let dy = self.tensor(c, 0)?;
        let mut ins = Vec::with_capacity(5);
        for (i, what) in [(1, "shape"), (2, "begin"), (3, "end"), (4, "strides")] {
            let Some(v) = self.ints_arg(c, i, "") else {
                return Err(self.bad_arg(c, i, &format!("the constant {what} (integers)")));
            };
            ins.push(self.ints_const(c, what, v));
        }
        ins.push(dy);
        let a = self.slice_masks(c, 5);
        Ok(self.emit(c, "StridedSliceGrad", ins, a))
    }

    /// The five masks of a strided slice (`begin_mask` … `shrink_axis_mask`), arguments
    /// `first..first + 5` or attributes of those names (0 when absent).
    pub(super) fn slice_masks(&self, c: &Call<'_>, first: usize) -> Attrs {
        [
            "begin_mask",
            "end_mask",
            "ellipsis_mask",
            "new_axis_mask",
            "shrink_axis_mask",
        ]
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            (
                m.to_string(),
                Attr::Int(self.int_arg(c, first + i, m).unwrap_or(0)),
            )
        })
        .collect()
    }

    /// An optimizer update: its first `arity` arguments in MindSpore's order (scalar
    /// hyper-parameters as constants); the variable and its slots as outputs.
    fn update(&mut self, c: &Call<'_>, ir: &str, arity: usize) -> Result<Value, ModelError> {
        let apply = apply_op(ir).expect("every MindSpore update is an ApplyOp");
        let mut ins = Vec::with_capacity(arity);
        for i in 0..arity {
            ins.push(self.operand(c, i)?);
        }
        // `use_nesterov` as TensorFlow's updates carry it: whenever the primitive has it.
        let mut a = Attrs::new();
        if let Some(v) = self.int_arg(c, usize::MAX, "use_nesterov") {
            a.insert("use_nesterov".into(), Attr::Int(i64::from(v != 0)));
        }
        // SGD's own attributes, under CANN's names.
        if let Some(v) = self.int_arg(c, usize::MAX, "nesterov") {
            a.insert("nesterov".into(), Attr::Int(i64::from(v != 0)));
        }
        for f in ["dampening", "weight_decay"] {
            if let Some(v) = self.float_arg(c, usize::MAX, f) {
                a.insert(f.into(), Attr::Float(v as f32));
            }
        }
        let outs: Vec<String> = (0..apply.state)
            .map(|k| format!("{}:{k}", c.name))
            .collect();
        self.push(&c.name, ir, "", ins, outs.clone(), a);
        let tuple = c
            .abstract_out
            .is_some_and(|a| a.r#type == Some(super::proto::attr_type::TUPLE));
        Ok(if tuple {
            Value::Tuple(outs.into_iter().map(Value::Tensor).collect())
        } else {
            Value::Tensor(outs[0].clone())
        })
    }
}

/// A training step's nodes in breadth-first topological order (Kahn's algorithm with a FIFO
/// queue, ties in the file's order), as GE's BFS topological sort schedules a graph on one
/// stream. MindSpore writes a `TrainOneStepCell` depth-first from the tuple of gradients, in
/// parameter order, so the file's order computes the first layer's weight gradient before the
/// last layer's; in breadth-first order each gradient comes as soon as its inputs are ready,
/// the last layer's first, which is the order the gradients' all-reduce sees. A graph without
/// an optimizer update (an inference graph) keeps the file's order.
pub(super) fn step_order(nodes: &mut Vec<crate::graph::Node>) {
    use crate::graph::{topological_order, TopoOrder};
    if !nodes.iter().any(|n| apply_op(&n.op_type).is_some()) {
        return;
    }
    let order = topological_order(nodes, TopoOrder::Breadth);
    if order.len() != nodes.len() {
        return; // a cycle the import named already; keep the file's order
    }
    let mut slots: Vec<Option<crate::graph::Node>> =
        std::mem::take(nodes).into_iter().map(Some).collect();
    *nodes = order.into_iter().filter_map(|i| slots[i].take()).collect();
}
