//! Forward aten ops → graph IR (ONNX-named ops in NCHW, as PyTorch holds its tensors).
//! torchair's converters name the Ascend IR op each becomes; the key layer names the IR ops the
//! same way for every framework.
//!
//! | aten | graph IR |
//! |---|---|
//! | conv1d/2d/3d, convolution, _convolution (`padding` ints or `same`/`valid`; `transposed`) | `Conv` (`group`), `ConvTranspose` |
//! | linear | `Gemm` (`transB`) on 2-D input, else `MatMul` by the transposed weight then `Add` |
//! | addmm, mm (an operand from `t`/`transpose(0, 1)`/`permute([1, 0])` read as `transA`/`transB`) | `Gemm`; `mm` of plain operands `MatMul` |
//! | bmm, matmul; baddbmm | `MatMul`; `MatMul` + `Add` |
//! | batch_norm, _native_batch_norm_legit_no_training, native_batch_norm / _native_batch_norm_legit(_functional) not training | `BatchNormalization` |
//! | the same in training | `BNTrainingReduce` + `BNTrainingUpdate` (`grad.rs`) |
//! | layer_norm, native_layer_norm | `LayerNormalization` (axis −len(normalized_shape), three outputs) |
//! | relu, gelu, sigmoid, tanh, hardswish, hardsigmoid, elu, exp, log, sqrt, rsqrt, neg, abs, reciprocal, erf, floor, ceil, sin, cos | the same ONNX ops |
//! | silu; hardtanh, relu6; leaky_relu | `Sigmoid` + `Mul`; `Clip`; `LeakyRelu` |
//! | add, sub (`alpha`), rsub, mul, div, pow, maximum, minimum, eq, gt, ge, lt, le (tensor or scalar) | `Add` … (a scalar a constant) |
//! | max_pool2d(_with_indices), avg_pool2d, adaptive_avg_pool2d to 1×1 | `MaxPool`, `AveragePool`, `GlobalAveragePool` |
//! | mean.dim, sum.dim_IntList, amax, mean, sum | `ReduceMean`, `ReduceSum`, `ReduceMax` |
//! | view, _unsafe_view, reshape, flatten, unflatten, squeeze, unsqueeze | `Reshape` to the program's sizes |
//! | expand; permute, transpose; cat; split, split_with_sizes | `Expand`; `Transpose`; `Concat`; `Split` |
//! | softmax, _softmax; log_softmax, _log_softmax | `Softmax`; `LogSoftmax` |
//! | embedding; slice; select | `Gather`; `Slice`; `Gather` of one index |
//! | scaled_dot_product_attention | torch's math decomposition: `Mul` of q and of kᵀ by √scale, `MatMul`, `Softmax`, `MatMul` (·v) |
//! | clone, detach, alias, contiguous, lift_fresh_copy, dropout (inference), _to_copy (same dtype) | relabelled, no op; `_to_copy` to another dtype `Cast` |
//! | zeros, ones, full, empty, …_like, new_… | constants of the program's sizes |

use std::collections::BTreeMap;

use super::program::Arg;
use super::{elem_type, Builder, Call};
use crate::{Attr, ModelError};

type Attrs = BTreeMap<String, Attr>;

pub(super) fn attrs<const N: usize>(list: [(&str, Attr); N]) -> Attrs {
    list.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// `v` repeated to `n` values when it has one (PyTorch's `stride=2` for `[2, 2]`).
pub(super) fn spread(v: Option<Vec<i64>>, n: usize, default: i64) -> Vec<i64> {
    match v {
        Some(v) if v.len() == 1 => vec![v[0]; n],
        Some(v) if v.len() == n => v,
        _ => vec![default; n],
    }
}

const UNARY: &[(&str, &str)] = &[
    ("relu", "Relu"),
    ("gelu", "Gelu"),
    ("sigmoid", "Sigmoid"),
    ("tanh", "Tanh"),
    ("hardswish", "HardSwish"),
    ("hardsigmoid", "HardSigmoid"),
    ("elu", "Elu"),
    ("exp", "Exp"),
    ("log", "Log"),
    ("sqrt", "Sqrt"),
    ("rsqrt", "Rsqrt"),
    ("neg", "Neg"),
    ("abs", "Abs"),
    ("reciprocal", "Reciprocal"),
    ("erf", "Erf"),
    ("floor", "Floor"),
    ("ceil", "Ceil"),
    ("sin", "Sin"),
    ("cos", "Cos"),
];

const BINARY: &[(&str, &str)] = &[
    ("add", "Add"),
    ("sub", "Sub"),
    ("mul", "Mul"),
    ("div", "Div"),
    ("pow", "Pow"),
    ("maximum", "Max"),
    ("minimum", "Min"),
    ("eq", "Equal"),
    ("gt", "Greater"),
    ("ge", "GreaterOrEqual"),
    ("lt", "Less"),
    ("le", "LessOrEqual"),
];

/// Ops that relabel their first input.
const IDENTITY: &[&str] = &[
    "clone",
    "detach",
    "alias",
    "contiguous",
    "lift_fresh_copy",
    "dropout",
    "feature_dropout",
];

/// Ops that make a new tensor of the program's sizes from nothing but sizes and a value.
const FACTORIES: &[&str] = &[
    "zeros",
    "ones",
    "full",
    "empty",
    "zeros_like",
    "ones_like",
    "full_like",
    "empty_like",
    "new_zeros",
    "new_ones",
    "new_full",
    "new_empty",
    "scalar_tensor",
    "empty_strided",
];

/// Ops whose output is their input with other sizes.
const RESHAPES: &[&str] = &[
    "view",
    "_unsafe_view",
    "reshape",
    "flatten",
    "unflatten",
    "squeeze",
    "unsqueeze",
    "view_copy",
];

impl Builder<'_> {
    /// Maps call `c`; `false` when the op (or this use of it) is not mapped.
    pub(super) fn aten(&mut self, c: &Call) -> Result<bool, ModelError> {
        let op = c.op.as_str();
        if let Some(mapped) = self.backward(c)? {
            return Ok(mapped);
        }
        if let Some(&(_, ir)) = UNARY.iter().find(|(a, _)| *a == op.trim_end_matches('_')) {
            if !op.ends_with('_') {
                let x = self.input(c, 0, "self");
                self.emit(c, ir, vec![x], Attrs::new());
                return Ok(true);
            }
        }
        if let Some(&(_, ir)) = BINARY.iter().find(|(a, _)| *a == op) {
            return Ok(self.binary(c, ir));
        }
        if IDENTITY.contains(&op) {
            let name = if c.arg(0, "self").is_some() {
                "self"
            } else {
                "input"
            };
            let x = self.input(c, 0, name);
            self.alias(&c.out(0), x);
            return Ok(true);
        }
        if FACTORIES.contains(&op) {
            let Some(dims) = self.dims(&c.out(0)).filter(|d| d.iter().all(|&x| x >= 0)) else {
                return Ok(false);
            };
            let k = self.constant(&c.name, dims, None);
            self.alias(&c.out(0), k);
            return Ok(true);
        }
        if RESHAPES.contains(&op) {
            return Ok(self.reshape(c));
        }
        self.by_name(c)
    }

    /// The ops of [`Builder::aten`] that are not in its tables.
    fn by_name(&mut self, c: &Call) -> Result<bool, ModelError> {
        let op = c.op.as_str();
        match op {
            "conv1d" | "conv2d" | "conv3d" | "convolution" | "_convolution" => self.conv(c),
            "linear" => Ok(self.linear(c)),
            "addmm" | "mm" => Ok(self.gemm(c)),
            "t" | "transpose" | "permute" => Ok(self.transpose(c)),
            "bmm" | "matmul" => {
                let (a, b) = (self.input(c, 0, "self"), self.input(c, 1, "mat2"));
                let b = if c.arg(1, "mat2").is_some() {
                    b
                } else {
                    self.input(c, 1, "other")
                };
                self.emit(c, "MatMul", vec![a, b], Attrs::new());
                Ok(true)
            }
            "batch_norm"
            | "_native_batch_norm_legit_no_training"
            | "native_batch_norm"
            | "_native_batch_norm_legit"
            | "_native_batch_norm_legit_functional" => Ok(self.batch_norm(c)),
            "layer_norm" | "native_layer_norm" => Ok(self.layer_norm(c)),
            "silu" | "hardtanh" | "relu6" | "leaky_relu" => Ok(self.activation(c)),
            "max_pool2d" | "max_pool2d_with_indices" | "avg_pool2d" => Ok(self.pool(c)),
            "adaptive_avg_pool2d" | "_adaptive_avg_pool2d" => {
                if c.ints(1, "output_size").as_deref() != Some(&[1, 1]) {
                    return Ok(false);
                }
                // torch decomposes the 1×1 adaptive pool into a mean over H and W, as
                // torch.onnx.export writes it.
                let x = self.input(c, 0, "self");
                let axes = self.ints_const(&c.name, vec![2, 3]);
                let a = attrs([("keepdims", Attr::Int(1))]);
                self.emit(c, "ReduceMean", vec![x, axes], a);
                Ok(true)
            }
            "mean" | "sum" | "amax" => Ok(self.reduce(c)),
            "expand" => {
                let x = self.input(c, 0, "self");
                let Some(dims) = self.dims(&c.out(0)) else {
                    return Ok(false);
                };
                let shape = self.ints_const(&c.name, dims);
                self.emit(c, "Expand", vec![x, shape], Attrs::new());
                Ok(true)
            }
            "cat" | "concat" => {
                let Some(Arg::Tensors(ts)) = c.arg(0, "tensors") else {
                    return Ok(false);
                };
                let ins = ts.iter().flatten().map(|t| self.t(t)).collect();
                let axis = c.int(1, "dim").unwrap_or(0);
                self.emit(c, "Concat", ins, attrs([("axis", Attr::Int(axis))]));
                Ok(true)
            }
            "softmax" | "_softmax" | "log_softmax" | "_log_softmax" => {
                let x = self.input(c, 0, "self");
                let axis = c.int(1, "dim").unwrap_or(-1);
                let ir = if op.contains("log") {
                    "LogSoftmax"
                } else {
                    "Softmax"
                };
                self.emit(c, ir, vec![x], attrs([("axis", Attr::Int(axis))]));
                Ok(true)
            }
            "embedding" => {
                let (w, i) = (self.input(c, 0, "weight"), self.input(c, 1, "indices"));
                self.emit(c, "Gather", vec![w, i], attrs([("axis", Attr::Int(0))]));
                Ok(true)
            }
            "slice" => Ok(self.slice(c)),
            "select" => {
                let x = self.input(c, 0, "self");
                let (Some(dim), Some(index)) = (c.int(1, "dim"), c.int(2, "index")) else {
                    return Ok(false);
                };
                let i = self.constant(&c.name, vec![], Some(vec![index]));
                self.emit(c, "Gather", vec![x, i], attrs([("axis", Attr::Int(dim))]));
                Ok(true)
            }
            "split" | "split_with_sizes" => Ok(self.split(c)),
            "_to_copy" | "to" => {
                let x = self.input(c, 0, "self");
                match c.arg(1, "dtype") {
                    Some(Arg::ScalarType(s)) => {
                        let to = i64::from(elem_type(*s).0);
                        self.emit(c, "Cast", vec![x], attrs([("to", Attr::Int(to))]));
                    }
                    _ => self.alias(&c.out(0), x),
                }
                Ok(true)
            }
            "scaled_dot_product_attention" => Ok(self.attention(c)),
            _ => Ok(false),
        }
    }

    /// silu, hardtanh/relu6, leaky_relu.
    fn activation(&mut self, c: &Call) -> bool {
        match c.op.as_str() {
            "silu" => {
                let x = self.input(c, 0, "self");
                let s = self.fresh(&c.name);
                self.push(
                    &s,
                    "Sigmoid",
                    "",
                    vec![x.clone()],
                    vec![s.clone()],
                    Attrs::new(),
                );
                self.emit(c, "Mul", vec![x, s], Attrs::new());
                true
            }
            "hardtanh" | "relu6" => {
                let x = self.input(c, 0, "self");
                let lo = self.constant(&format!("{}/min", c.name), vec![], None);
                let hi = self.constant(&format!("{}/max", c.name), vec![], None);
                self.emit(c, "Clip", vec![x, lo, hi], Attrs::new());
                true
            }
            "leaky_relu" => {
                let x = self.input(c, 0, "self");
                let alpha = c.float(1, "negative_slope").unwrap_or(0.01) as f32;
                self.emit(
                    c,
                    "LeakyRelu",
                    vec![x],
                    attrs([("alpha", Attr::Float(alpha))]),
                );
                true
            }
            _ => false,
        }
    }

    /// The IR tensor of tensor argument `name`/`i` (`""` when absent).
    pub(super) fn input(&mut self, c: &Call, i: usize, name: &str) -> String {
        match c.tensor_arg(i, name) {
            Some(t) => self.t(&t),
            None => String::new(),
        }
    }

    /// Emits `op` with the call's outputs.
    pub(super) fn emit(&mut self, c: &Call, op: &str, ins: Vec<String>, a: Attrs) {
        let outs = c
            .outs
            .iter()
            .map(|o| o.clone().unwrap_or_default())
            .collect();
        self.push(&c.name, op, "", ins, outs, a);
    }

    /// An operand: a tensor argument, or a scalar as a float constant.
    pub(super) fn operand(&mut self, c: &Call, i: usize, name: &str) -> Option<String> {
        match c.arg(i, name)? {
            Arg::Tensor(t) => Some(self.t(&t.clone())),
            Arg::Int(_) | Arg::Float(_) | Arg::Bool(_) => {
                Some(self.constant(&format!("{}/{name}", c.name), vec![], None))
            }
            _ => None,
        }
    }

    fn binary(&mut self, c: &Call, ir: &str) -> bool {
        let Some(a) = self.operand(c, 0, "self") else {
            return false;
        };
        let Some(mut b) = self
            .operand(c, 1, "other")
            .or_else(|| self.operand(c, 1, "exponent"))
        else {
            return false;
        };
        if c.float(2, "alpha").is_some_and(|x| x != 1.0) {
            let alpha = self.constant(&format!("{}/alpha", c.name), vec![], None);
            let scaled = self.fresh(&c.name);
            self.push(
                &scaled,
                "Mul",
                "",
                vec![b, alpha],
                vec![scaled.clone()],
                Attrs::new(),
            );
            b = scaled;
        }
        self.emit(c, ir, vec![a, b], Attrs::new());
        true
    }

    fn conv(&mut self, c: &Call) -> Result<bool, ModelError> {
        let Some(wt) = c.tensor_arg(1, "weight") else {
            return Ok(false);
        };
        let Some(wdims) = self.dims(&wt).filter(|d| d.len() >= 3) else {
            return Ok(false);
        };
        let n = wdims.len() - 2;
        let x = self.input(c, 0, "input");
        let w = self.t(&wt);
        let bias = self.input(c, 2, "bias");
        let strides = spread(c.ints(3, "stride"), n, 1);
        let dilations = spread(c.ints(5, "dilation"), n, 1);
        let transposed = c.bool(6, "transposed").unwrap_or(false);
        let groups = c
            .int(8, "groups")
            .or_else(|| c.int(6, "groups"))
            .unwrap_or(1);
        let mut a = attrs([
            ("strides", Attr::Ints(strides)),
            ("dilations", Attr::Ints(dilations)),
            ("group", Attr::Int(groups)),
            ("kernel_shape", Attr::Ints(wdims[2..].to_vec())),
        ]);
        match c.arg(4, "padding") {
            Some(Arg::Str(s)) if s == "same" => {
                a.insert("auto_pad".into(), Attr::Str("SAME_UPPER".into()));
            }
            Some(Arg::Str(s)) if s == "valid" => {
                a.insert("auto_pad".into(), Attr::Str("VALID".into()));
            }
            Some(Arg::Str(s)) => {
                return Err(super::program::malformed(
                    self.source,
                    format!(
                        "node {}: padding {s:?}: expected \"same\", \"valid\" or sizes",
                        c.name
                    ),
                ))
            }
            other => {
                let p = spread(
                    match other {
                        Some(Arg::Ints(v)) => Some(v.clone()),
                        Some(Arg::Int(v)) => Some(vec![*v]),
                        _ => None,
                    },
                    n,
                    0,
                );
                a.insert("pads".into(), Attr::Ints([p.clone(), p].concat()));
            }
        }
        let mut ins = vec![x, w];
        if !bias.is_empty() {
            ins.push(bias);
        }
        if transposed {
            let op = spread(c.ints(7, "output_padding"), n, 0);
            a.insert("output_padding".into(), Attr::Ints(op));
            self.emit(c, "ConvTranspose", ins, a);
        } else {
            self.emit(c, "Conv", ins, a);
        }
        Ok(true)
    }

    fn linear(&mut self, c: &Call) -> bool {
        let Some(xt) = c.tensor_arg(0, "input") else {
            return false;
        };
        let Some(wt) = c.tensor_arg(1, "weight") else {
            return false;
        };
        let (Some(xd), Some(wd)) = (self.dims(&xt), self.dims(&wt)) else {
            return false;
        };
        let (x, w) = (self.t(&xt), self.t(&wt));
        let bias = self.input(c, 2, "bias");
        if xd.len() == 2 {
            let mut ins = vec![x, w];
            if !bias.is_empty() {
                ins.push(bias);
            }
            self.emit(c, "Gemm", ins, attrs([("transB", Attr::Int(1))]));
            return true;
        }
        let wt_dims: Vec<i64> = wd.iter().rev().copied().collect();
        let w_t = self.constant(&format!("{w}/T"), wt_dims, None);
        if bias.is_empty() {
            self.emit(c, "MatMul", vec![x, w_t], Attrs::new());
            return true;
        }
        let mm = self.fresh(&c.name);
        self.push(
            &mm,
            "MatMul",
            "",
            vec![x, w_t],
            vec![mm.clone()],
            Attrs::new(),
        );
        self.emit(c, "Add", vec![mm, bias], Attrs::new());
        true
    }

    /// A 2-D operand of `mm`/`addmm`: the IR tensor and whether it is read transposed.
    fn mm_operand(&mut self, t: &str) -> (String, bool) {
        match self.transposed.get(t).cloned() {
            Some(src) => (self.t(&src), true),
            None => (self.t(t), false),
        }
    }

    fn gemm(&mut self, c: &Call) -> bool {
        let addmm = c.op == "addmm";
        let (ia, ib) = if addmm { (1, 2) } else { (0, 1) };
        let (na, nb) = if addmm {
            ("mat1", "mat2")
        } else {
            ("self", "mat2")
        };
        let (Some(at), Some(bt)) = (c.tensor_arg(ia, na), c.tensor_arg(ib, nb)) else {
            return false;
        };
        let (a, ta) = self.mm_operand(&at);
        let (b, tb) = self.mm_operand(&bt);
        if !addmm && !ta && !tb {
            self.emit(c, "MatMul", vec![a, b], Attrs::new());
            return true;
        }
        let mut ins = vec![a, b];
        let mut g = attrs([
            ("transA", Attr::Int(i64::from(ta))),
            ("transB", Attr::Int(i64::from(tb))),
        ]);
        if addmm {
            ins.push(self.input(c, 0, "self"));
            for (k, key) in [(3, "beta"), (4, "alpha")] {
                if let Some(v) = c.float(k, key).filter(|v| *v != 1.0) {
                    g.insert(key.into(), Attr::Float(v as f32));
                }
            }
        }
        self.emit(c, "Gemm", ins, g);
        true
    }

    fn pool(&mut self, c: &Call) -> bool {
        let x = self.input(c, 0, "self");
        let Some(kernel) = c.ints(1, "kernel_size") else {
            return false;
        };
        let kernel = spread(Some(kernel), 2, 1);
        let strides = match c.ints(2, "stride") {
            Some(s) if !s.is_empty() => spread(Some(s), 2, 1),
            _ => kernel.clone(),
        };
        let p = spread(c.ints(3, "padding"), 2, 0);
        let avg = c.op == "avg_pool2d";
        let ceil = c
            .bool(if avg { 4 } else { 5 }, "ceil_mode")
            .unwrap_or(false);
        let mut a = attrs([
            ("kernel_shape", Attr::Ints(kernel)),
            ("strides", Attr::Ints(strides)),
            ("pads", Attr::Ints([p.clone(), p].concat())),
            ("ceil_mode", Attr::Int(i64::from(ceil))),
        ]);
        if avg {
            let include = c.bool(5, "count_include_pad").unwrap_or(true);
            a.insert("count_include_pad".into(), Attr::Int(i64::from(include)));
            self.emit(c, "AveragePool", vec![x], a);
        } else {
            let d = spread(c.ints(4, "dilation"), 2, 1);
            if d != [1, 1] {
                a.insert("dilations".into(), Attr::Ints(d));
            }
            if let (Some(v), Some(i)) = (
                c.outs.first().cloned().flatten(),
                c.outs.get(1).cloned().flatten(),
            ) {
                self.pool_values.insert(i, v);
            }
            self.emit(c, "MaxPool", vec![x], a);
        }
        true
    }

    fn reduce(&mut self, c: &Call) -> bool {
        let xt = c.tensor_arg(0, "self");
        let Some(xd) = xt.as_deref().and_then(|t| self.dims(t)) else {
            return false;
        };
        let x = self.input(c, 0, "self");
        let axes = c
            .ints(1, "dim")
            .filter(|a| !a.is_empty())
            .unwrap_or_else(|| (0..xd.len() as i64).collect());
        let keep = c.bool(2, "keepdim").unwrap_or(false);
        let ir = match c.op.as_str() {
            "mean" => "ReduceMean",
            "sum" => "ReduceSum",
            _ => "ReduceMax",
        };
        // The axes as an input, as opset 18 has them (and torch.onnx.export writes them).
        let keep = attrs([("keepdims", Attr::Int(i64::from(keep)))]);
        let ax = self.ints_const(&c.name, axes);
        self.emit(c, ir, vec![x, ax], keep);
        true
    }

    /// `scaled_dot_product_attention(q, k, v)`: q·kᵀ scaled, softmax, ·v.
    fn attention(&mut self, c: &Call) -> bool {
        let Some(kt) = c.tensor_arg(1, "key") else {
            return false;
        };
        let Some(kd) = self.dims(&kt).filter(|d| d.len() >= 2) else {
            return false;
        };
        let (q, k, v) = (
            self.input(c, 0, "query"),
            self.t(&kt),
            self.input(c, 2, "value"),
        );
        let r = kd.len() as i64;
        let mut perm: Vec<i64> = (0..r).collect();
        perm.swap(r as usize - 1, r as usize - 2);
        let names: Vec<String> = (0..5).map(|_| self.fresh(&c.name)).collect();
        let none = Attrs::new;
        let scale = self.constant(&format!("{}/scale", c.name), vec![1], None);
        let perm = attrs([("perm", Attr::Ints(perm))]);
        self.push(
            &names[0],
            "Transpose",
            "",
            vec![k],
            vec![names[0].clone()],
            perm,
        );
        self.push(
            &names[1],
            "Mul",
            "",
            vec![q, scale.clone()],
            vec![names[1].clone()],
            none(),
        );
        self.push(
            &names[2],
            "Mul",
            "",
            vec![names[0].clone(), scale],
            vec![names[2].clone()],
            none(),
        );
        self.push(
            &names[3],
            "MatMul",
            "",
            vec![names[1].clone(), names[2].clone()],
            vec![names[3].clone()],
            none(),
        );
        self.push(
            &names[4],
            "Softmax",
            "",
            vec![names[3].clone()],
            vec![names[4].clone()],
            attrs([("axis", Attr::Int(-1))]),
        );
        self.emit(c, "MatMul", vec![names[4].clone(), v], none());
        true
    }
}
