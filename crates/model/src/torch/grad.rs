//! Normalizations, the backward ops AOTAutograd traces and in-place updates, as the Ascend IR
//! ops the TensorFlow importer gives a training step (`tensorflow/training.rs`), so a step of
//! either framework keys alike where ATC compiles the same op.
//!
//! | aten | graph IR |
//! |---|---|
//! | batch norm in training (`training=True`) | `BNTrainingReduce` + `BNTrainingUpdate` (y, running mean, running variance, saved mean, saved inverse std) |
//! | native_batch_norm_backward (training) | `BNTrainingUpdateGrad` (weight and bias gradients) + `BNTrainingReduceGrad` (input gradient) |
//! | convolution_backward (2-D, not transposed) | `Conv2DBackpropInput` (input sizes, weight, dy), `Conv2DBackpropFilter` (x, dy; `filter_size` OIHW), `BiasAddGrad` (NCHW), each as `output_mask` asks; `Depthwise…` when groups = input channels |
//! | threshold_backward; hardtanh_backward (0, 6); sigmoid_backward; tanh_backward | `ReluGrad` (dy, features); `Relu6Grad`; `SigmoidGrad` (y, dy); `TanhGrad` (y, dy) |
//! | max_pool2d_with_indices_backward; avg_pool2d_backward | `MaxPoolGrad` (x, the forward's values, dy); `AvgPoolGrad` (input sizes, dy); `ksize`, `strides` NCHW, `pads` explicit |
//!
//! The backward convolutions and poolings carry `data_format` NCHW, as the TensorFlow importer
//! gives the same ops of an NHWC graph it holds in NCHW.
//! | `op_` in place on a parameter or buffer: add_/sub_ (`alpha`), addcdiv_, addcmul_, lerp_, copy_, any other mapped op | `AssignAdd`/`AssignSub` of the scaled operand; `AssignAdd` of the scaled product or quotient; `AssignAdd` of the step; `Assign`; the op then `Assign` |
//! | `op_` in place on any other tensor | the op, its result relabelled |
//! | `_foreach_op` / `_foreach_op_` (tensor lists, scalar lists) | `op` / `op_` once per tensor of the list |

use std::collections::BTreeMap;

use super::aten::{attrs, spread};
use super::program::Arg;
use super::{Builder, Call};
use crate::batch_norm::{BnGrad, BnTraining};
use crate::{Attr, ModelError};

type Attrs = BTreeMap<String, Attr>;

/// aten ops the importer does not infer, by the Ascend IR op torchair compiles them to: an
/// unmapped node carries that name (inference names it when it skips it), so a backward op
/// is seen as one (GDAT seeds a step's backward pass at its gradient ops).
pub(super) const ASCEND_NAMES: &[(&str, &str)] = &[
    ("_adaptive_avg_pool2d_backward", "AdaptiveAvgPool2dGrad"),
    ("_scaled_dot_product_flash_attention", "FlashAttentionScore"),
    (
        "_scaled_dot_product_flash_attention_backward",
        "FlashAttentionScoreGrad",
    ),
    (
        "_scaled_dot_product_flash_attention_for_cpu",
        "FlashAttentionScore",
    ),
    (
        "_scaled_dot_product_flash_attention_for_cpu_backward",
        "FlashAttentionScoreGrad",
    ),
    ("_log_softmax_backward_data", "LogSoftmaxGrad"),
    ("_softmax_backward_data", "SoftmaxGrad"),
    ("embedding_dense_backward", "EmbeddingDenseGrad"),
    ("gelu_backward", "GeluGrad"),
    ("mse_loss", "MseLoss"),
    ("mse_loss_backward", "MseLossGrad"),
    ("native_layer_norm_backward", "LayerNormGrad"),
    ("nll_loss_backward", "NLLLossGrad"),
    ("nll_loss_forward", "NLLLoss"),
    ("silu_backward", "SiluGrad"),
];

impl Builder<'_> {
    /// Maps `c` when it is a backward op, an in-place op or a `_foreach_` op (`Some(mapped)`);
    /// `None` otherwise.
    pub(super) fn backward(&mut self, c: &Call) -> Result<Option<bool>, ModelError> {
        let op = c.op.as_str();
        if let Some(base) = op.strip_prefix("_foreach_") {
            return self.foreach(c, base).map(Some);
        }
        if let Some(base) = op
            .strip_suffix('_')
            .filter(|b| !b.is_empty() && !b.ends_with('_'))
        {
            return self.in_place(c, base).map(Some);
        }
        let mapped = match op {
            "convolution_backward" => self.conv_backward(c),
            "native_batch_norm_backward" => self.bn_backward(c),
            "threshold_backward" => self.act_grad(c, "ReluGrad", true),
            "sigmoid_backward" => self.act_grad(c, "SigmoidGrad", false),
            "tanh_backward" => self.act_grad(c, "TanhGrad", false),
            "hardtanh_backward" => {
                let relu6 =
                    c.float(2, "min_val") == Some(0.0) && c.float(3, "max_val") == Some(6.0);
                relu6 && self.act_grad(c, "Relu6Grad", true)
            }
            "max_pool2d_with_indices_backward" | "avg_pool2d_backward" => self.pool_grad(c),
            _ => return Ok(None),
        };
        Ok(Some(mapped))
    }

    /// `grad_output` and the forward tensor (input `self` or `output`), in TensorFlow's order:
    /// (dy, features) when `dy_first`, else (y, dy).
    fn act_grad(&mut self, c: &Call, ir: &str, dy_first: bool) -> bool {
        let dy = self.input(c, 0, "grad_output");
        let x = match c
            .tensor_arg(1, "self")
            .or_else(|| c.tensor_arg(1, "output"))
        {
            Some(t) => self.t(&t),
            None => return false,
        };
        let ins = if dy_first { vec![dy, x] } else { vec![x, dy] };
        self.emit(c, ir, ins, Attrs::new());
        true
    }

    /// Batch norm: inference `BatchNormalization`, training the two Ascend ops.
    pub(super) fn batch_norm(&mut self, c: &Call) -> bool {
        let Some(xt) = c.tensor_arg(0, "input") else {
            return false;
        };
        let Some(channels) = self.dims(&xt).and_then(|d| d.get(1).copied()) else {
            return false;
        };
        let training = c.op != "_native_batch_norm_legit_no_training"
            && c.bool(5, "training").unwrap_or(false);
        let eps = c
            .float(7, "eps")
            .or_else(|| c.float(6, "eps"))
            .unwrap_or(1e-5) as f32;
        let x = self.t(&xt);
        let per_channel = |b: &mut Self, i: usize, name: &str| -> String {
            let v = b.input(c, i, name);
            if v.is_empty() {
                b.constant(&format!("{}/{name}", c.name), vec![channels], None)
            } else {
                v
            }
        };
        let (scale, offset) = (per_channel(self, 1, "weight"), per_channel(self, 2, "bias"));
        if !training {
            let mean = per_channel(self, 3, "running_mean");
            let var = per_channel(self, 4, "running_var");
            let outs = vec![c.out(0)];
            self.push(
                &c.name,
                "BatchNormalization",
                "",
                vec![x, scale, offset, mean, var],
                outs,
                attrs([("epsilon", Attr::Float(eps))]),
            );
            return true;
        }
        // torch's outputs: y, saved mean, saved inverse std (then, functional, the new
        // running mean and variance); BNTrainingUpdate's: y, mean, variance, batch mean,
        // batch variance.
        let mut outs: Vec<String> = (0..5)
            .map(|k| format!("{}/BNTrainingUpdate:{k}", c.name))
            .collect();
        for (torch, ir) in [(0, 0), (1, 3), (2, 4), (3, 1), (4, 2)] {
            if let Some(Some(o)) = c.outs.get(torch) {
                outs[ir] = o.clone();
            }
        }
        let momentum = c.float(6, "momentum").unwrap_or(0.1) as f32;
        let bn = BnTraining {
            x,
            scale,
            offset,
            epsilon: eps,
            factor: momentum,
        };
        self.nodes.extend(bn.nodes(&c.name, outs));
        true
    }

    /// `native_batch_norm_backward` of a training batch norm.
    fn bn_backward(&mut self, c: &Call) -> bool {
        if !c.bool(7, "train").unwrap_or(false) {
            return false;
        }
        let Some(xt) = c.tensor_arg(1, "input") else {
            return false;
        };
        let Some(channels) = self.dims(&xt).and_then(|d| d.get(1).copied()) else {
            return false;
        };
        let (dy, x) = (self.input(c, 0, "grad_out"), self.t(&xt));
        let (mean, invstd) = (
            self.input(c, 5, "save_mean"),
            self.input(c, 6, "save_invstd"),
        );
        let mut scale = self.input(c, 2, "weight");
        if scale.is_empty() {
            scale = self.constant(&format!("{}/weight", c.name), vec![channels], None);
        }
        let eps = c.float(8, "eps").unwrap_or(1e-5) as f32;
        let upd = format!("{}/BNTrainingUpdateGrad", c.name);
        let grad = |k: usize| {
            c.outs
                .get(k)
                .cloned()
                .flatten()
                .unwrap_or_else(|| format!("{upd}:{}", k - 1))
        };
        let grads = [grad(1), grad(2)];
        let gi = c
            .outs
            .first()
            .cloned()
            .flatten()
            .unwrap_or_else(|| self.fresh(&c.name));
        let bn = BnGrad {
            dy,
            x,
            scale,
            mean,
            variance: invstd,
            epsilon: eps,
        };
        self.nodes.extend(bn.nodes(&c.name, grads, gi));
        true
    }

    pub(super) fn layer_norm(&mut self, c: &Call) -> bool {
        let Some(shape) = c.ints(1, "normalized_shape") else {
            return false;
        };
        let x = self.input(c, 0, "input");
        let per = |b: &mut Self, i: usize, name: &str| -> String {
            let v = b.input(c, i, name);
            if v.is_empty() {
                b.constant(&format!("{}/{name}", c.name), shape.clone(), None)
            } else {
                v
            }
        };
        let (scale, bias) = (per(self, 2, "weight"), per(self, 3, "bias"));
        let eps = c.float(4, "eps").unwrap_or(1e-5) as f32;
        let a = attrs([
            ("axis", Attr::Int(-(shape.len() as i64))),
            ("epsilon", Attr::Float(eps)),
        ]);
        self.emit(c, "LayerNormalization", vec![x, scale, bias], a);
        true
    }

    fn conv_backward(&mut self, c: &Call) -> bool {
        let (Some(xt), Some(wt)) = (c.tensor_arg(1, "input"), c.tensor_arg(2, "weight")) else {
            return false;
        };
        let (Some(xd), Some(wd)) = (self.dims(&xt), self.dims(&wt)) else {
            return false;
        };
        if wd.len() != 4 || xd.len() != 4 || c.bool(7, "transposed").unwrap_or(false) {
            return false;
        }
        let s = spread(c.ints(4, "stride"), 2, 1);
        let p = spread(c.ints(5, "padding"), 2, 0);
        let d = spread(c.ints(6, "dilation"), 2, 1);
        let groups = c.int(9, "groups").unwrap_or(1);
        let mask = match c.arg(10, "output_mask") {
            Some(Arg::Bools(m)) if m.len() == 3 => m.clone(),
            _ => (0..3)
                .map(|k| c.outs.get(k).is_some_and(Option::is_some))
                .collect(),
        };
        let depthwise = groups > 1 && groups == xd[1];
        let window = || {
            attrs([
                ("strides", Attr::Ints(vec![1, 1, s[0], s[1]])),
                ("dilations", Attr::Ints(vec![1, 1, d[0], d[1]])),
                ("padding", Attr::Str("EXPLICIT".into())),
                ("pads", Attr::Ints(vec![p[0], p[0], p[1], p[1]])),
                ("groups", Attr::Int(groups)),
                ("data_format", Attr::Str("NCHW".into())),
            ])
        };
        let dy = self.input(c, 0, "grad_output");
        let out = |b: &mut Self, k: usize| {
            c.outs
                .get(k)
                .cloned()
                .flatten()
                .unwrap_or_else(|| b.fresh(&c.name))
        };
        if mask[0] {
            let sizes = self.ints_const(&format!("{}/sizes", c.name), xd.clone());
            let w = self.t(&wt);
            let mut a = window();
            a.insert("size_format".into(), Attr::Str("NCHW".into()));
            let ir = if depthwise {
                "DepthwiseConv2DBackpropInput"
            } else {
                "Conv2DBackpropInput"
            };
            let o = out(self, 0);
            self.push(
                &format!("{}/input", c.name),
                ir,
                "",
                vec![sizes, w, dy.clone()],
                vec![o],
                a,
            );
        }
        if mask[1] {
            let x = self.t(&xt);
            let mut a = window();
            a.insert("filter_size".into(), Attr::Ints(wd.clone()));
            let ir = if depthwise {
                "DepthwiseConv2DBackpropFilter"
            } else {
                "Conv2DBackpropFilter"
            };
            let o = out(self, 1);
            self.push(
                &format!("{}/filter", c.name),
                ir,
                "",
                vec![x, dy.clone()],
                vec![o],
                a,
            );
        }
        if mask[2] {
            let o = out(self, 2);
            let a = attrs([("data_format", Attr::Str("NCHW".into()))]);
            self.push(
                &format!("{}/bias", c.name),
                "BiasAddGrad",
                "",
                vec![dy],
                vec![o],
                a,
            );
        }
        true
    }

    fn pool_grad(&mut self, c: &Call) -> bool {
        let Some(xt) = c.tensor_arg(1, "self") else {
            return false;
        };
        let Some(xd) = self.dims(&xt) else {
            return false;
        };
        let Some(k) = c.ints(2, "kernel_size").map(|k| spread(Some(k), 2, 1)) else {
            return false;
        };
        let s = match c.ints(3, "stride") {
            Some(s) if !s.is_empty() => spread(Some(s), 2, 1),
            _ => k.clone(),
        };
        let p = spread(c.ints(4, "padding"), 2, 0);
        let mut a = attrs([
            ("ksize", Attr::Ints(vec![1, 1, k[0], k[1]])),
            ("strides", Attr::Ints(vec![1, 1, s[0], s[1]])),
            ("data_format", Attr::Str("NCHW".into())),
        ]);
        if p == [0, 0] {
            a.insert("padding".into(), Attr::Str("VALID".into()));
        } else {
            a.insert("padding".into(), Attr::Str("EXPLICIT".into()));
            a.insert("pads".into(), Attr::Ints(vec![p[0], p[0], p[1], p[1]]));
        }
        let dy = self.input(c, 0, "grad_output");
        if c.op == "avg_pool2d_backward" {
            let sizes = self.ints_const(&format!("{}/sizes", c.name), xd);
            a.insert("size_format".into(), Attr::Str("NCHW".into()));
            self.emit(c, "AvgPoolGrad", vec![sizes, dy], a);
            return true;
        }
        let Some(values) = c
            .tensor_arg(7, "indices")
            .and_then(|i| self.pool_values.get(&i).cloned())
        else {
            return false;
        };
        let (x, y) = (self.t(&xt), self.t(&values));
        self.emit(c, "MaxPoolGrad", vec![x, y, dy], a);
        true
    }

    /// `base_` in place on `self` (module doc).
    fn in_place(&mut self, c: &Call, base: &str) -> Result<bool, ModelError> {
        let Some(st) = c.tensor_arg(0, "self") else {
            return Ok(false);
        };
        let var = self.is_variable(&st);
        let me = self.t(&st);
        let name = |k: &str| format!("{}/{k}", c.name);
        let none = Attrs::new;
        // The value a write adds (`Some`), or the new value (`None` then `result`).
        let (added, result): (Option<String>, Option<String>) = match base {
            "add" | "sub" => {
                let Some(mut v) = self.operand(c, 1, "other") else {
                    return Ok(false);
                };
                if c.float(2, "alpha").is_some_and(|a| a != 1.0) {
                    let alpha = self.constant(&name("alpha"), vec![], None);
                    let m = self.fresh(&c.name);
                    self.push(&m, "Mul", "", vec![v, alpha], vec![m.clone()], none());
                    v = m;
                }
                if base == "sub" && !var {
                    (None, Some(self.op2(c, "Sub", me.clone(), v)))
                } else if base == "sub" {
                    let o = self.fresh(&c.name);
                    self.push(
                        &name("AssignSub"),
                        "AssignSub",
                        "",
                        vec![me.clone(), v],
                        vec![o.clone()],
                        none(),
                    );
                    self.alias(&c.out(0), o);
                    return Ok(true);
                } else {
                    (Some(v), None)
                }
            }
            "addcdiv" | "addcmul" => {
                let (Some(t1), Some(t2)) =
                    (self.operand(c, 1, "tensor1"), self.operand(c, 2, "tensor2"))
                else {
                    return Ok(false);
                };
                let ir = if base == "addcdiv" { "Div" } else { "Mul" };
                let mut v = self.op2(c, ir, t1, t2);
                if c.float(3, "value").is_some_and(|a| a != 1.0) {
                    let k = self.constant(&name("value"), vec![], None);
                    v = self.op2(c, "Mul", v, k);
                }
                (Some(v), None)
            }
            "lerp" => {
                let (Some(end), Some(w)) =
                    (self.operand(c, 1, "end"), self.operand(c, 2, "weight"))
                else {
                    return Ok(false);
                };
                let d = self.op2(c, "Sub", end, me.clone());
                (Some(self.op2(c, "Mul", d, w)), None)
            }
            "copy" => (None, Some(self.input(c, 1, "src"))),
            _ => {
                let fresh = self.fresh(&c.name);
                let functional = Call {
                    name: c.name.clone(),
                    op: base.to_string(),
                    args: c.args.clone(),
                    outs: vec![Some(fresh.clone())],
                };
                if !self.aten(&functional)? {
                    return Ok(false);
                }
                (None, Some(self.t(&fresh)))
            }
        };
        // A variable written in place is read on as the variable (TensorFlow's
        // ReadVariableOp after an assignment), so the update ops GDAT walks see its writes.
        let out = match (var, added, result) {
            (true, Some(v), _) => {
                let o = self.fresh(&c.name);
                self.push(
                    &name("AssignAdd"),
                    "AssignAdd",
                    "",
                    vec![me.clone(), v],
                    vec![o],
                    none(),
                );
                me
            }
            (true, None, Some(r)) => {
                let o = self.fresh(&c.name);
                self.push(
                    &name("Assign"),
                    "Assign",
                    "",
                    vec![me.clone(), r],
                    vec![o],
                    none(),
                );
                me
            }
            (false, Some(v), _) => self.op2(c, "Add", me, v),
            (false, None, Some(r)) => r,
            (_, None, None) => return Ok(false),
        };
        self.alias(&c.out(0), out);
        Ok(true)
    }

    /// A binary IR op on two IR tensors; its fresh output.
    fn op2(&mut self, c: &Call, ir: &str, a: String, b: String) -> String {
        let o = self.fresh(&c.name);
        self.push(&o, ir, "", vec![a, b], vec![o.clone()], Attrs::new());
        o
    }

    /// `_foreach_base(_)`: the op once per tensor of the `self` list.
    fn foreach(&mut self, c: &Call, base: &str) -> Result<bool, ModelError> {
        let Some(Arg::Tensors(list)) = c.arg(0, "self") else {
            return Ok(false);
        };
        let n = list.len();
        for k in 0..n {
            let args = c
                .args
                .iter()
                .map(|(name, a)| {
                    let one = match a {
                        Arg::Tensors(ts) if ts.len() == n => {
                            ts[k].clone().map_or(Arg::None, Arg::Tensor)
                        }
                        Arg::Floats(fs) if fs.len() == n => Arg::Float(fs[k]),
                        Arg::Ints(is) if is.len() == n => Arg::Int(is[k]),
                        other => other.clone(),
                    };
                    (name.clone(), one)
                })
                .collect();
            let outs = if c.outs.len() == n {
                vec![c.outs[k].clone()]
            } else {
                vec![None]
            };
            let one = Call {
                name: format!("{}/{k}", c.name),
                op: base.to_string(),
                args,
                outs,
            };
            if !self.aten(&one)? {
                self.unmapped(&Call {
                    op: format!("_foreach_{base}"),
                    ..one
                });
            }
        }
        Ok(true)
    }
}
