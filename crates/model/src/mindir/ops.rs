//! MindSpore primitives → graph IR. MindSpore names its primitives as Ascend IR does, and its
//! tensors are NCHW, so most map one to one. Arguments are read as `args.rs` says: by position
//! from the node's inputs or by name from the primitive's attributes; enumerated arguments
//! are MindSpore's enums (`pad_mode`: PAD 0, SAME 1, VALID 2; `data_format`: NCHW 0, NHWC 1)
//! or their strings.
//!
//! | MindSpore | graph IR |
//! |---|---|
//! | Conv2D (`pad_mode` pad/same/valid, `pad_list` top, bottom, left, right; `group`) | `Conv` |
//! | Conv2DTranspose (`pad_list` as MindSpore computed it, `input_sizes` the output) | `ConvTranspose` (`pads`, `output_shape`) |
//! | ResizeBilinearV2, ResizeNearestNeighborV2 (size, align_corners, half_pixel_centers) | the same, with an int32 size |
//! | BiasAdd | folded into the `Conv`, `ConvTranspose` or `Gemm` it follows when that is its only reader, else `Add` (per-channel `[C,1,1]` on 4-D) |
//! | MaxPool, AvgPool | `MaxPool`, `AveragePool` |
//! | AdaptiveAvgPool2D to 1×1 | `GlobalAveragePool` |
//! | BatchNorm (inference) | `BatchNormalization` (output 0; the statistics outputs are not readable) |
//! | LayerNorm | `LayerNormalization` (`begin_norm_axis`, `epsilon`; three outputs) |
//! | MatMul | `Gemm` (`transA`/`transB`; a BiasAdd after it becomes its `C`) |
//! | BatchMatMul | `MatMul` (transposes as `adj_x1`/`adj_x2`) |
//! | ReLU, ReLU6, Sigmoid, Tanh, GeLU, HSwish, HSigmoid, Elu, Softplus, Erf, Exp, Log, Sqrt, Rsqrt, Square, Neg, Abs, Reciprocal, Floor, Ceil, Sin, Cos | `Relu`, `Clip(0, 6)`, `Sigmoid`, `Tanh`, `Gelu`, `HardSwish`, `HardSigmoid`, … (same names) |
//! | LeakyReLU | `LeakyRelu` (`alpha`) |
//! | Add, Sub, Mul, Div/RealDiv, Maximum, Minimum, Pow, SquaredDifference, Greater, GreaterEqual, Less, LessEqual, Equal | `Add`, `Sub`, `Mul`, `Div`, `Max`, `Min`, `Pow`, … |
//! | Muls, Adds, Subs, Divs (tensor and scalar) | `Mul`, `Add`, `Sub`, `Div` with a scalar constant |
//! | Concat, Flatten, Reshape, Transpose, ExpandDims, Squeeze, Softmax, LogSoftmax, Gather, Cast | `Concat`, `Flatten`, `Reshape`, `Transpose`, `Unsqueeze`, `Squeeze`, `Softmax`, `LogSoftmax`, `Gather`, `Cast` (to the node's abstract dtype) |
//! | ReduceMean, ReduceSum, ReduceMax, ReduceMin | `ReduceMean` … (`axis`, `keep_dims`) |
//! | Pad (`paddings` per dim), StridedSlice (all five masks), BroadcastTo (-1 keeps a dim), Unstack, Tile (`multiples`) | `Pad`, `StridedSlice`, `Expand`, `Unpack`, `Tile` (repeats as an int64 input) |
//! | AddExt, InplaceAddExt (`mindspore.mint`'s `x + alpha·y`, alpha 1) | `Add` |
//! | Load, Depend, Identity, StopGradient | their first input |
//! | the training primitives (gradients, training batch norm, dropout, optimizer updates) | `grad.rs`'s table |
//! | MakeTuple, TupleGetItem, UpdateState, Return | tuples and side-effect tokens, no op |

use std::collections::BTreeMap;

use super::{flatten_tensors, Builder, Call, Value};
use crate::graph::ElemType;
use crate::{Attr, ModelError};

pub(super) type Attrs = BTreeMap<String, Attr>;

/// An attribute map of `list`.
pub(super) fn attrs<const N: usize>(list: [(&str, Attr); N]) -> Attrs {
    list.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

impl Builder<'_> {
    /// The value of one primitive application.
    pub(super) fn primitive(&mut self, c: &Call<'_>) -> Result<Value, ModelError> {
        let op = c.op;
        if let Some(v) = self.structural(c)? {
            return Ok(v);
        }
        if let Some(v) = self.training(c)? {
            return Ok(v);
        }
        let unary = match op {
            "ReLU" => Some("Relu"),
            "GeLU" => Some("Gelu"),
            "HSwish" => Some("HardSwish"),
            "HSigmoid" => Some("HardSigmoid"),
            "Sigmoid" | "Tanh" | "Elu" | "Softplus" | "Erf" | "Exp" | "Log" | "Sqrt" | "Rsqrt"
            | "Square" | "Neg" | "Abs" | "Reciprocal" | "Floor" | "Ceil" | "Sin" | "Cos" => {
                Some(op)
            }
            _ => None,
        };
        if let Some(o) = unary {
            let x = self.tensor(c, 0)?;
            return Ok(self.emit(c, o, vec![x], Attrs::new()));
        }
        let binary = match op {
            "Add" | "Adds" => Some("Add"),
            "Sub" | "Subs" => Some("Sub"),
            "Mul" | "Muls" => Some("Mul"),
            "Div" | "RealDiv" | "Divs" => Some("Div"),
            "Maximum" => Some("Max"),
            "Minimum" => Some("Min"),
            "GreaterEqual" => Some("GreaterOrEqual"),
            "LessEqual" => Some("LessOrEqual"),
            "Pow" | "SquaredDifference" | "Greater" | "Less" | "Equal" => Some(op),
            _ => None,
        };
        if let Some(o) = binary {
            let a = self.operand(c, 0)?;
            let b = self.operand(c, 1)?;
            return Ok(self.emit(c, o, vec![a, b], Attrs::new()));
        }
        self.mapped(c)
    }

    /// The primitives with arguments of their own (not structural, unary or binary).
    fn mapped(&mut self, c: &Call<'_>) -> Result<Value, ModelError> {
        let op = c.op;
        match op {
            "Conv2D" => self.conv(c),
            "Conv2DTranspose" => self.conv_transpose(c),
            "ResizeBilinearV2" | "ResizeNearestNeighborV2" => self.resize(c),
            "BiasAdd" => self.bias_add(c),
            "MaxPool" | "AvgPool" => self.pool(c),
            "AdaptiveAvgPool2D" => {
                let x = self.tensor(c, 0)?;
                match self.ints_arg(c, 1, "output_size").as_deref() {
                    Some([1, 1]) | Some([1]) => {
                        Ok(self.emit(c, "GlobalAveragePool", vec![x], Attrs::new()))
                    }
                    _ => self.opaque(c),
                }
            }
            "BatchNorm" => self.batch_norm(c),
            "LayerNorm" => {
                let inputs = vec![self.tensor(c, 0)?, self.tensor(c, 1)?, self.tensor(c, 2)?];
                let axis = self.int_arg(c, 3, "begin_norm_axis").unwrap_or(-1);
                let eps = self.float_arg(c, 5, "epsilon").unwrap_or(1e-7);
                let a = attrs([
                    ("axis", Attr::Int(axis)),
                    ("epsilon", Attr::Float(eps as f32)),
                ]);
                let outs: Vec<String> = (0..3).map(|k| format!("{}:{k}", c.name)).collect();
                self.push(&c.name, "LayerNormalization", "", inputs, outs.clone(), a);
                Ok(Value::Tuple(outs.into_iter().map(Value::Tensor).collect()))
            }
            "ReLU6" => {
                let x = self.tensor(c, 0)?;
                let lo = self.constant(format!("{}/min", c.name), ElemType::FLOAT, vec![], None);
                let hi = self.constant(format!("{}/max", c.name), ElemType::FLOAT, vec![], None);
                Ok(self.emit(c, "Clip", vec![x, lo, hi], Attrs::new()))
            }
            "LeakyReLU" => {
                let x = self.tensor(c, 0)?;
                let alpha = self.float_arg(c, 1, "alpha").unwrap_or(0.2) as f32;
                Ok(self.emit(
                    c,
                    "LeakyRelu",
                    vec![x],
                    attrs([("alpha", Attr::Float(alpha))]),
                ))
            }
            "MatMul" | "BatchMatMul" => self.matmul(c),
            "Softmax" | "LogSoftmax" => {
                let x = self.tensor(c, 0)?;
                let axis = self
                    .ints_arg(c, 1, "axis")
                    .and_then(|a| a.first().copied())
                    .unwrap_or(-1);
                Ok(self.emit(c, op, vec![x], attrs([("axis", Attr::Int(axis))])))
            }
            "Concat" => {
                let mut tensors = Vec::new();
                flatten_tensors(&c.args[..1.min(c.args.len())], &mut tensors);
                if tensors.is_empty() {
                    return Err(self.bad_arg(c, 0, "a tuple of tensors"));
                }
                let axis = self.int_arg(c, 1, "axis").unwrap_or(0);
                Ok(self.emit(c, "Concat", tensors, attrs([("axis", Attr::Int(axis))])))
            }
            "Flatten" => {
                let x = self.tensor(c, 0)?;
                Ok(self.emit(c, "Flatten", vec![x], attrs([("axis", Attr::Int(1))])))
            }
            "Reshape" | "Transpose" | "ExpandDims" | "Squeeze" => self.movement(c),
            "ReduceMean" | "ReduceSum" | "ReduceMax" | "ReduceMin" => self.reduce(c),
            "Gather" => {
                let (x, idx) = (self.tensor(c, 0)?, self.operand(c, 1)?);
                let axis = self.int_arg(c, 2, "axis").unwrap_or(0);
                Ok(self.emit(
                    c,
                    "Gather",
                    vec![x, idx],
                    attrs([("axis", Attr::Int(axis))]),
                ))
            }
            "Cast" => {
                let x = self.tensor(c, 0)?;
                let to = c
                    .abstract_out
                    .and_then(|a| a.tensors.first())
                    .and_then(|t| t.data_type)
                    .map(|t| super::elem_type(t).0)
                    .filter(|&t| t != 0);
                match to {
                    Some(t) => {
                        Ok(self.emit(c, "Cast", vec![x], attrs([("to", Attr::Int(i64::from(t)))])))
                    }
                    None => self.opaque(c),
                }
            }
            "Tile" => {
                let x = self.tensor(c, 0)?;
                let Some(reps) = self.ints_arg(c, 1, "multiples") else {
                    return Err(self.bad_arg(c, 1, "the multiples (integers)"));
                };
                let n = reps.len() as i64;
                let r = self.constant(
                    format!("{}/repeats", c.name),
                    ElemType::INT64,
                    vec![n],
                    Some(reps),
                );
                Ok(self.emit(c, "Tile", vec![x, r], Attrs::new()))
            }
            "Pad" | "StridedSlice" | "BroadcastTo" | "Unstack" | "AddExt" | "InplaceAddExt" => {
                self.plumbing(c)
            }
            _ => self.opaque(c),
        }
    }

    /// Padding, slicing, broadcasting, unstacking and the `alpha` adds of `mindspore.mint`.
    fn plumbing(&mut self, c: &Call<'_>) -> Result<Value, ModelError> {
        let x = self.tensor(c, 0)?;
        match c.op {
            "Pad" => {
                // paddings: ((before, after), …) per dim → ONNX [begins…, ends…].
                let pairs = match self.arg(c, 1, "paddings") {
                    Some(Value::Tuple(rows)) => rows
                        .iter()
                        .map(|r| r.ints(self).filter(|p| p.len() == 2))
                        .collect::<Option<Vec<_>>>(),
                    _ => None,
                };
                let Some(pairs) = pairs else {
                    return Err(self.bad_arg(c, 1, "paddings ((before, after) per dim)"));
                };
                let mut pads: Vec<i64> = pairs.iter().map(|p| p[0]).collect();
                pads.extend(pairs.iter().map(|p| p[1]));
                let n = pads.len() as i64;
                let p = self.constant(
                    format!("{}/pads", c.name),
                    ElemType::INT64,
                    vec![n],
                    Some(pads),
                );
                let a = attrs([("mode", Attr::Str("constant".into()))]);
                Ok(self.emit(c, "Pad", vec![x, p], a))
            }
            "StridedSlice" => {
                let mut ins = vec![x];
                for (i, what) in [(1, "begin"), (2, "end"), (3, "strides")] {
                    let v = self
                        .ints_arg(c, i, what)
                        .ok_or_else(|| self.bad_arg(c, i, &format!("the {what} (integers)")))?;
                    let n = v.len() as i64;
                    ins.push(self.constant(
                        format!("{}/{what}", c.name),
                        ElemType::INT64,
                        vec![n],
                        Some(v),
                    ));
                }
                let a = self.slice_masks(c, 4);
                Ok(self.emit(c, "StridedSlice", ins, a))
            }
            "BroadcastTo" => {
                // MindSpore's -1 keeps the input's dim; ONNX Expand's 1 does the same.
                let shape: Vec<i64> = self
                    .ints_arg(c, 1, "shape")
                    .ok_or_else(|| self.bad_arg(c, 1, "the shape (integers)"))?
                    .into_iter()
                    .map(|d| if d == -1 { 1 } else { d })
                    .collect();
                let n = shape.len() as i64;
                let t = self.constant(
                    format!("{}/shape", c.name),
                    ElemType::INT64,
                    vec![n],
                    Some(shape),
                );
                Ok(self.emit(c, "Expand", vec![x, t], Attrs::new()))
            }
            "Unstack" => {
                let axis = self.int_arg(c, 1, "axis").unwrap_or(0);
                let num = c
                    .abstract_out
                    .map(|a| a.values.len())
                    .filter(|&n| n > 0)
                    .or_else(|| {
                        self.int_arg(c, usize::MAX, "num")
                            .and_then(|n| usize::try_from(n).ok())
                    })
                    .filter(|n| (1..=4096).contains(n))
                    .ok_or_else(|| {
                        self.invalid(&c.name, c.op, "num: expected 1 to 4096 outputs")
                    })?;
                let outs: Vec<String> = (0..num).map(|k| format!("{}:{k}", c.name)).collect();
                let a = attrs([("axis", Attr::Int(axis))]);
                self.push(&c.name, "Unpack", "", vec![x], outs.clone(), a);
                Ok(Value::Tuple(outs.into_iter().map(Value::Tensor).collect()))
            }
            // AddExt/InplaceAddExt(x, y, alpha): x + alpha·y; the residual adds have alpha 1.
            _ => {
                let y = self.operand(c, 1)?;
                match self.float_arg(c, 2, "alpha") {
                    None | Some(1.0) => Ok(self.emit(c, "Add", vec![x, y], Attrs::new())),
                    Some(_) => self.opaque(c),
                }
            }
        }
    }

    /// Tuples, parameter reads and side-effect plumbing: their value, no IR op. `None` for
    /// any other primitive.
    fn structural(&mut self, c: &Call<'_>) -> Result<Option<Value>, ModelError> {
        Ok(Some(match c.op {
            "MakeTuple" | "MakeList" => Value::Tuple(c.args.clone()),
            "TupleGetItem" | "ListGetItem" | "tuple_getitem" => {
                let k = self
                    .int_arg(c, 1, "")
                    .ok_or_else(|| self.bad_arg(c, 1, "an integer index"))?;
                match c.args.first() {
                    Some(Value::Tuple(items)) => match usize::try_from(k).ok().and_then(|k| items.get(k)) {
                        Some(Value::None) => {
                            return Err(self.invalid(&c.name, c.op, format!("output {k} of the tuple is not imported (a statistics output of an inference op)")))
                        }
                        Some(v) => v.clone(),
                        None => return Err(self.bad_arg(c, 1, &format!("an index below {}", items.len()))),
                    },
                    _ => return Err(self.bad_arg(c, 0, "a tuple")),
                }
            }
            "UpdateState" => Value::Monad,
            "Load" | "Depend" | "Identity" | "StopGradient" | "stop_gradient" | "Return" => c
                .args
                .first()
                .cloned()
                .ok_or_else(|| self.bad_arg(c, 0, "a value"))?,
            _ => return Ok(None),
        }))
    }

    /// Output 0 of the node, named after it, with one IR op.
    pub(super) fn emit(&mut self, c: &Call<'_>, op: &str, inputs: Vec<String>, a: Attrs) -> Value {
        let out = c.name.clone();
        self.push(&c.name, op, "", inputs, vec![out.clone()], a);
        Value::Tensor(out)
    }

    /// A primitive the importer does not map: a `mindspore`-domain node reading the node's
    /// tensor inputs, with as many outputs as its abstract value has tensors; inference skips
    /// it (and what depends on it), the rest of the graph is imported.
    pub(super) fn opaque(&mut self, c: &Call<'_>) -> Result<Value, ModelError> {
        let mut inputs = Vec::new();
        flatten_tensors(&c.args, &mut inputs);
        let tuple = c
            .abstract_out
            .filter(|a| a.r#type == Some(super::proto::attr_type::TUPLE));
        let n = tuple.map_or(1, |a| a.values.len().max(1));
        let outs: Vec<String> = if tuple.is_some() {
            (0..n).map(|k| format!("{}:{k}", c.name)).collect()
        } else {
            vec![c.name.clone()]
        };
        self.push(
            &c.name,
            c.op,
            "mindspore",
            inputs,
            outs.clone(),
            Attrs::new(),
        );
        let mut vals: Vec<Value> = outs.into_iter().map(Value::Tensor).collect();
        Ok(if tuple.is_some() {
            Value::Tuple(vals)
        } else {
            vals.remove(0)
        })
    }

    fn conv(&mut self, c: &Call<'_>) -> Result<Value, ModelError> {
        let (x, w) = (self.tensor(c, 0)?, self.tensor(c, 1)?);
        let wd = self
            .initializers
            .get(&w)
            .map(|t| t.dims.clone())
            .filter(|d| d.len() == 4);
        let kernel = match wd {
            Some(d) => [d[2], d[3]],
            None => self.spatial(
                c,
                "kernel_size",
                self.ints_arg(c, usize::MAX, "kernel_size"),
            )?,
        };
        let strides = self.spatial(c, "stride", self.ints_arg(c, usize::MAX, "stride"))?;
        let dilations = self.spatial(c, "dilation", self.ints_arg(c, usize::MAX, "dilation"))?;
        self.nchw(c, usize::MAX)?;
        let pads = self
            .ints_arg(c, usize::MAX, "pad_list")
            .filter(|p| p.iter().any(|&v| v != 0))
            .or_else(|| self.ints_arg(c, usize::MAX, "pad"));
        let padding = self.padding(c, usize::MAX, pads)?;
        let group = self.int_arg(c, usize::MAX, "group").unwrap_or(1);
        let mut a = attrs([
            ("kernel_shape", Attr::Ints(kernel.to_vec())),
            ("strides", Attr::Ints(strides.to_vec())),
            ("dilations", Attr::Ints(dilations.to_vec())),
            ("group", Attr::Int(group)),
        ]);
        Self::set_padding(&mut a, padding);
        Ok(self.emit(c, "Conv", vec![x, w], a))
    }

    /// Conv2DTranspose (`nn.Conv2dTranspose`, a Conv2DBackpropInput): x, the weight (in, out /
    /// group, kh, kw: ONNX ConvTranspose's layout) and the output's N, C, H, W
    /// (`input_sizes`), as `ConvTranspose` with that `output_shape`. MindSpore has worked out
    /// the pads of every pad mode (`pad_list`: top, bottom, left, right); they are passed on,
    /// and shape inference keeps them when they give that output.
    fn conv_transpose(&mut self, c: &Call<'_>) -> Result<Value, ModelError> {
        let (x, w) = (self.tensor(c, 0)?, self.tensor(c, 1)?);
        let wd = self.initializers.get(&w).map(|t| t.dims.clone());
        let Some(&[_, _, kh, kw]) = wd.as_deref() else {
            return Err(self.bad_arg(c, 1, "a weight of 4 dims"));
        };
        let strides = self.spatial(c, "stride", self.ints_arg(c, usize::MAX, "stride"))?;
        let dilations = self.spatial(c, "dilation", self.ints_arg(c, usize::MAX, "dilation"))?;
        self.nchw(c, usize::MAX)?;
        let pads = match self.ints_arg(c, usize::MAX, "pad_list").as_deref() {
            None => vec![0; 4],
            Some(&[t, b, l, r]) => vec![t, l, b, r],
            Some(p) => {
                return Err(self.invalid(
                    &c.name,
                    c.op,
                    format!("pad_list {p:?}: expected top, bottom, left, right"),
                ))
            }
        };
        let Some(sizes) = self.ints_arg(c, 2, "input_sizes").filter(|s| s.len() == 4) else {
            return Err(self.bad_arg(c, 2, "the output's N, C, H, W"));
        };
        let group = self.int_arg(c, usize::MAX, "group").unwrap_or(1);
        let a = attrs([
            ("kernel_shape", Attr::Ints(vec![kh, kw])),
            ("strides", Attr::Ints(strides.to_vec())),
            ("dilations", Attr::Ints(dilations.to_vec())),
            ("group", Attr::Int(group)),
            ("pads", Attr::Ints(pads)),
            ("output_shape", Attr::Ints(sizes[2..].to_vec())),
        ]);
        Ok(self.emit(c, "ConvTranspose", vec![x, w], a))
    }

    /// ResizeBilinearV2, ResizeNearestNeighborV2: x, the output's (height, width), then
    /// `align_corners` and `half_pixel_centers`; the IR op of the same name with an int32 size.
    fn resize(&mut self, c: &Call<'_>) -> Result<Value, ModelError> {
        let x = self.tensor(c, 0)?;
        let Some(size) = self.ints_arg(c, 1, "size").filter(|s| s.len() == 2) else {
            return Err(self.bad_arg(c, 1, "a constant (height, width)"));
        };
        let size = self.constant(
            format!("{}/size", c.name),
            ElemType::INT32,
            vec![2],
            Some(size),
        );
        let flag = |b: &Self, i: usize, name: &str| Attr::Int(i64::from(b.bool_arg(c, i, name)));
        let a = attrs([
            ("align_corners", flag(self, 2, "align_corners")),
            ("half_pixel_centers", flag(self, 3, "half_pixel_centers")),
        ]);
        Ok(self.emit(c, c.op, vec![x, size], a))
    }

    /// BiasAdd: into the bias of the Conv or the `C` of the Gemm it follows when it is that
    /// op's only reader; else an `Add` (the bias `[C, 1, 1]` on a 4-D NCHW tensor).
    fn bias_add(&mut self, c: &Call<'_>) -> Result<Value, ModelError> {
        let (x, b) = (self.tensor(c, 0)?, self.tensor(c, 1)?);
        self.nchw(c, 2)?;
        let only_reader = c
            .arg_names
            .first()
            .is_some_and(|n| self.readers.get(n) == Some(&1));
        let producer = self
            .nodes
            .iter()
            .rposition(|n| n.outputs.first() == Some(&x));
        if let Some(p) = producer.filter(|_| only_reader) {
            let n = &mut self.nodes[p];
            if ["Conv", "ConvTranspose", "Gemm"].contains(&n.op_type.as_str())
                && n.inputs.len() == 2
                && n.domain.is_empty()
            {
                n.inputs.push(b);
                return Ok(Value::Tensor(x));
            }
        }
        let rank4 = c
            .abstract_out
            .and_then(|a| a.tensors.first())
            .is_some_and(|t| t.dims.len() == 4);
        let bias = match self.initializers.get(&b).cloned() {
            Some(t) if rank4 && t.dims.len() == 1 => self.constant(
                format!("{}/bias", c.name),
                t.elem_type,
                vec![t.dims[0], 1, 1],
                None,
            ),
            _ => b,
        };
        Ok(self.emit(c, "Add", vec![x, bias], Attrs::new()))
    }

    /// MaxPool, AvgPool: kernel, strides, pad mode and format as arguments 1–4 or attributes.
    fn pool(&mut self, c: &Call<'_>) -> Result<Value, ModelError> {
        let x = self.tensor(c, 0)?;
        let k = self.spatial(c, "kernel_size", self.ints_arg(c, 1, "kernel_size"))?;
        let s = self.spatial(c, "strides", self.ints_arg(c, 2, "strides"))?;
        let padding = self.padding(c, 3, None)?;
        self.nchw(c, 4)?;
        let mut a = attrs([
            ("kernel_shape", Attr::Ints(k.to_vec())),
            ("strides", Attr::Ints(s.to_vec())),
        ]);
        Self::set_padding(&mut a, padding);
        let op = if c.op == "MaxPool" {
            "MaxPool"
        } else {
            "AveragePool"
        };
        Ok(self.emit(c, op, vec![x], a))
    }

    /// BatchNorm in inference mode; a training-mode one (`is_training`) is left to inference
    /// to report, named.
    fn batch_norm(&mut self, c: &Call<'_>) -> Result<Value, ModelError> {
        if self.bool_arg(c, 5, "is_training") {
            return self.opaque(c);
        }
        let mut inputs = Vec::new();
        for i in 0..5 {
            inputs.push(self.tensor(c, i)?);
        }
        self.nchw(c, 8)?;
        let eps = self.float_arg(c, 6, "epsilon").unwrap_or(1e-5) as f32;
        let y = self.emit(
            c,
            "BatchNormalization",
            inputs,
            attrs([("epsilon", Attr::Float(eps))]),
        );
        Ok(Value::Tuple(vec![
            y,
            Value::None,
            Value::None,
            Value::None,
            Value::None,
        ]))
    }

    /// MatMul (2-D) → `Gemm`; BatchMatMul → `MatMul` with the adjoints as attributes.
    fn matmul(&mut self, c: &Call<'_>) -> Result<Value, ModelError> {
        let (a, b) = (self.tensor(c, 0)?, self.tensor(c, 1)?);
        let ta = self.bool_arg(c, 2, "transpose_a");
        let tb = self.bool_arg(c, 3, "transpose_b");
        if c.op == "MatMul" {
            let a_ = attrs([
                ("transA", Attr::Int(i64::from(ta))),
                ("transB", Attr::Int(i64::from(tb))),
            ]);
            return Ok(self.emit(c, "Gemm", vec![a, b], a_));
        }
        let a_ = if ta || tb {
            attrs([
                ("adj_x1", Attr::Int(i64::from(ta))),
                ("adj_x2", Attr::Int(i64::from(tb))),
            ])
        } else {
            Attrs::new()
        };
        Ok(self.emit(c, "MatMul", vec![a, b], a_))
    }

    /// Reshape, Transpose, ExpandDims, Squeeze: the shape, permutation or axes from argument 1.
    fn movement(&mut self, c: &Call<'_>) -> Result<Value, ModelError> {
        let x = self.tensor(c, 0)?;
        let attr = match c.op {
            "Reshape" => "shape",
            "Transpose" => "perm",
            _ => "axis",
        };
        let values = self.ints_arg(c, 1, attr);
        match (c.op, values) {
            ("Transpose", Some(perm)) => {
                Ok(self.emit(c, "Transpose", vec![x], attrs([("perm", Attr::Ints(perm))])))
            }
            ("Squeeze", None) | ("Squeeze", Some(_)) => {
                let axes = self.ints_arg(c, 1, attr).unwrap_or_default();
                let mut inputs = vec![x];
                if !axes.is_empty() {
                    inputs.push(self.constant(
                        format!("{}/axes", c.name),
                        ElemType::INT64,
                        vec![axes.len() as i64],
                        Some(axes),
                    ));
                }
                Ok(self.emit(c, "Squeeze", inputs, Attrs::new()))
            }
            (op, Some(v)) => {
                let (ir, what) = if op == "Reshape" {
                    ("Reshape", "shape")
                } else {
                    ("Unsqueeze", "axes")
                };
                let t = self.constant(
                    format!("{}/{what}", c.name),
                    ElemType::INT64,
                    vec![v.len() as i64],
                    Some(v),
                );
                Ok(self.emit(c, ir, vec![x, t], Attrs::new()))
            }
            // A shape computed in the graph.
            ("Reshape", None) => match c.args.get(1) {
                Some(Value::Tensor(s)) => {
                    let s = s.clone();
                    Ok(self.emit(c, "Reshape", vec![x, s], Attrs::new()))
                }
                _ => Err(self.bad_arg(c, 1, "a shape (a tuple of integers or a tensor)")),
            },
            _ => Err(self.bad_arg(c, 1, &format!("the {attr} (integers)"))),
        }
    }

    /// ReduceMean/Sum/Max/Min(x, axis, keep_dims): no axis reduces every one.
    fn reduce(&mut self, c: &Call<'_>) -> Result<Value, ModelError> {
        let x = self.tensor(c, 0)?;
        let keep = self.bool_arg(c, 2, "keep_dims");
        let axes = self.ints_arg(c, 1, "axis").unwrap_or_default();
        let mut a = attrs([("keepdims", Attr::Int(i64::from(keep)))]);
        let mut inputs = vec![x];
        if c.op == "ReduceSum" {
            if !axes.is_empty() {
                inputs.push(self.constant(
                    format!("{}/axes", c.name),
                    ElemType::INT64,
                    vec![axes.len() as i64],
                    Some(axes),
                ));
            }
        } else if !axes.is_empty() {
            a.insert("axes".into(), Attr::Ints(axes));
        }
        Ok(self.emit(c, c.op, inputs, a))
    }
}
