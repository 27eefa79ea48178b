//! Each Caffe layer type as graph-IR nodes (the table in the module docs of `caffe`).

use std::collections::BTreeMap;

use super::params::Params;
use super::{Builder, Layer};
use crate::graph::{Attr, Node};
use crate::ModelError;

type Attrs = BTreeMap<String, Attr>;

fn ints(v: &[i64]) -> Attr {
    Attr::Ints(v.to_vec())
}

/// Per-spatial-dim values of a Caffe window parameter: `x_h`/`x_w` (2-D only), else the
/// repeated `x` (one value for every dim, or one per dim), else `default`.
fn spatial(
    p: &Params<'_>,
    x: &'static str,
    h: &'static str,
    w: &'static str,
    dims: usize,
    default: i64,
) -> Result<Vec<i64>, String> {
    let (hv, wv) = (p.uint(h)?, p.uint(w)?);
    if hv.is_some() || wv.is_some() {
        if dims != 2 {
            return Err(format!(
                "{}: {}.{h}/{w} are for 2-D windows; this one has {dims} spatial dims",
                p.layer.describe(),
                p.name
            ));
        }
        let (Some(hv), Some(wv)) = (hv, wv) else {
            return Err(format!(
                "{}: {}.{h} and {}.{w} go together: expected both",
                p.layer.describe(),
                p.name,
                p.name
            ));
        };
        return Ok(vec![hv, wv]);
    }
    let v = p.uints(x)?;
    match v.len() {
        0 => Ok(vec![default; dims]),
        1 => Ok(vec![v[0]; dims]),
        n if n == dims => Ok(v),
        n => Err(format!(
            "{}: {n} values of {}.{x}: expected 1 or {dims} (one per spatial dim)",
            p.layer.describe(),
            p.name
        )),
    }
}

/// Drops leading 1s of a legacy 4-D blob shape down to `rank` (`[1,1,1,N]` bias → `[N]`).
pub(super) fn squeeze_to(dims: &[i64], rank: usize) -> Vec<i64> {
    let mut d = dims;
    while d.len() > rank && d[0] == 1 {
        d = &d[1..];
    }
    d.to_vec()
}

impl<'a> Builder<'a> {
    /// Adds one node named after the layer (or `name`), its outputs the layer's tops.
    pub(super) fn node(
        &mut self,
        layer: &Layer<'_>,
        op: &str,
        inputs: Vec<String>,
        attrs: Attrs,
    ) -> Vec<String> {
        let outputs: Vec<String> = layer
            .tops
            .clone()
            .iter()
            .map(|t| self.top(layer, t))
            .collect();
        self.push(layer.name.clone(), op, inputs, outputs.clone(), attrs);
        outputs
    }

    pub(super) fn push(
        &mut self,
        name: String,
        op: &str,
        inputs: Vec<String>,
        outputs: Vec<String>,
        attrs: Attrs,
    ) {
        self.nodes.push(Node {
            name,
            op_type: op.into(),
            domain: String::new(),
            inputs,
            outputs,
            attrs,
        });
    }

    /// An intermediate node of a multi-op layer; returns its one output.
    pub(super) fn step(
        &mut self,
        layer: &Layer<'_>,
        what: &str,
        op: &str,
        inputs: Vec<String>,
        attrs: Attrs,
    ) -> String {
        let out = self.temp(layer, what);
        self.push(
            format!("{}/{what}", layer.name),
            op,
            inputs,
            vec![out.clone()],
            attrs,
        );
        out
    }

    /// The layer's blobs when there are as many as `bias` implies: the `weight` blob, and the
    /// `bias` blob after it (Convolution, InnerProduct, Scale); a named error otherwise.
    pub(super) fn weight_and_bias_blobs(
        &self,
        layer: &Layer<'_>,
        bias: bool,
        weight: &str,
        bias_name: &str,
    ) -> Result<&'a [Vec<i64>], ModelError> {
        let blobs = self.blobs(layer)?;
        let expect = 1 + usize::from(bias);
        if blobs.len() != expect {
            let what = if bias {
                format!("the {weight} and the {bias_name} (bias_term is true)")
            } else {
                format!("the {weight} only (bias_term: false)")
            };
            return Err(self.weights_error(
                layer,
                format!("{} blob(s): expected {expect}, {what}", blobs.len()),
            ));
        }
        Ok(blobs)
    }

    /// A bias blob (legacy `[1,1,1,N]` squeezed) as a `[num_output]` initializer.
    fn bias_tensor(
        &mut self,
        layer: &Layer<'_>,
        blob: &[i64],
        num_output: i64,
    ) -> Result<String, ModelError> {
        let b = squeeze_to(blob, 1);
        if b != [num_output] {
            return Err(self.weights_error(
                layer,
                format!("bias blob shape {blob:?}: expected [{num_output}]"),
            ));
        }
        Ok(self.weight_tensor(format!("{}.bias", layer.name), b))
    }

    /// The nodes of one layer; `true` when the next layer was folded into it (BatchNorm +
    /// Scale).
    pub(super) fn layer_ops(
        &mut self,
        layer: &Layer<'_>,
        next: Option<&Layer<'_>>,
    ) -> Result<bool, ModelError> {
        let x = |b: &Self| b.bottom(layer, 0);
        let plain = |op: &str| (op.to_string(), Attrs::new());
        let unary = match layer.ty.as_str() {
            "Sigmoid" => Some(plain("Sigmoid")),
            "TanH" => Some(plain("Tanh")),
            "AbsVal" => Some(plain("Abs")),
            "BNLL" => Some(plain("Softplus")),
            "ReLU" => {
                let slope = Params::of(layer, "relu_param")
                    .float("negative_slope")
                    .map_err(|r| self.invalid(r))?;
                Some(match slope.filter(|s| *s != 0.0) {
                    Some(a) => (
                        "LeakyRelu".into(),
                        Attrs::from([("alpha".into(), Attr::Float(a))]),
                    ),
                    None => plain("Relu"),
                })
            }
            "ELU" => {
                let a = Params::of(layer, "elu_param")
                    .float("alpha")
                    .map_err(|r| self.invalid(r))?;
                Some((
                    "Elu".into(),
                    Attrs::from([("alpha".into(), Attr::Float(a.unwrap_or(1.0)))]),
                ))
            }
            _ => None,
        };
        if let Some((op, attrs)) = unary {
            let input = x(self)?;
            self.node(layer, &op, vec![input], attrs);
            return Ok(false);
        }
        match layer.ty.as_str() {
            "Input" => self.input_layer(layer)?,
            "Convolution" | "Deconvolution" | "ConvolutionDepthwise" | "DepthwiseConvolution" => {
                self.convolution(layer)?
            }
            "Pooling" => self.pooling(layer)?,
            "InnerProduct" => self.inner_product(layer)?,
            "BatchNorm" => return self.batch_norm(layer, next),
            "Scale" => self.scale(layer)?,
            "PReLU" => self.prelu(layer)?,
            "Eltwise" => self.eltwise(layer)?,
            "Concat" => {
                let p = Params::of(layer, "concat_param");
                let axis = match p.int("axis").map_err(|r| self.invalid(r))? {
                    Some(a) => a,
                    None => p
                        .uint("concat_dim")
                        .map_err(|r| self.invalid(r))?
                        .unwrap_or(1),
                };
                let inputs = (0..layer.bottoms.len())
                    .map(|i| self.bottom(layer, i))
                    .collect::<Result<_, _>>()?;
                self.node(
                    layer,
                    "Concat",
                    inputs,
                    Attrs::from([("axis".into(), Attr::Int(axis))]),
                );
            }
            "Softmax" => {
                let axis = Params::of(layer, "softmax_param")
                    .int("axis")
                    .map_err(|r| self.invalid(r))?
                    .unwrap_or(1);
                let input = x(self)?;
                self.node(
                    layer,
                    "Softmax",
                    vec![input],
                    Attrs::from([("axis".into(), Attr::Int(axis))]),
                );
            }
            "LRN" => self.lrn(layer)?,
            "Flatten" => {
                let p = Params::of(layer, "flatten_param");
                let axis = p.int("axis").map_err(|r| self.invalid(r))?.unwrap_or(1);
                let end = p
                    .int("end_axis")
                    .map_err(|r| self.invalid(r))?
                    .unwrap_or(-1);
                let input = x(self)?;
                if (axis, end) == (1, -1) {
                    self.node(
                        layer,
                        "Flatten",
                        vec![input],
                        Attrs::from([("axis".into(), Attr::Int(1))]),
                    );
                } else {
                    // Caffe keeps the dims outside axis..=end_axis: Ascend's FlattenV2.
                    let attrs = Attrs::from([
                        ("axis".into(), Attr::Int(axis)),
                        ("end_axis".into(), Attr::Int(end)),
                    ]);
                    self.node(layer, "FlattenV2", vec![input], attrs);
                }
            }
            "Reshape" => self.reshape(layer)?,
            "Dropout" | "Split" => {
                let input = x(self)?;
                for t in &layer.tops {
                    self.alias(t, input.clone());
                }
            }
            _ if self.vision_layer(layer)? => {}
            other => self.unknown(layer, other)?,
        }
        Ok(false)
    }

    /// A layer type tunebank does not map: a `caffe`-domain node, which inference reports.
    fn unknown(&mut self, layer: &Layer<'_>, op: &str) -> Result<(), ModelError> {
        self.opaque(layer, op, "caffe", Attrs::new())
    }

    /// A node the importer does not map, of `domain`, wired to the layer's bottoms and tops:
    /// inference skips it (and what depends on it), the rest of the net is imported.
    pub(super) fn opaque(
        &mut self,
        layer: &Layer<'_>,
        op: &str,
        domain: &str,
        attrs: Attrs,
    ) -> Result<(), ModelError> {
        let inputs = (0..layer.bottoms.len())
            .map(|i| self.bottom(layer, i))
            .collect::<Result<_, _>>()?;
        let outputs: Vec<String> = layer.tops.iter().map(|t| self.top(layer, t)).collect();
        self.nodes.push(Node {
            name: layer.name.clone(),
            op_type: op.into(),
            domain: domain.into(),
            inputs,
            outputs,
            attrs,
        });
        Ok(())
    }

    fn input_layer(&mut self, layer: &Layer<'_>) -> Result<(), ModelError> {
        let p = Params::of(layer, "input_param");
        let shapes = p.messages("shape");
        if shapes.is_empty() || !(shapes.len() == 1 || shapes.len() == layer.tops.len()) {
            return Err(self.invalid(format!(
                "{}: {} input_param.shape entries for {} top(s): expected one shape, or one per top",
                layer.describe(),
                shapes.len(),
                layer.tops.len()
            )));
        }
        for (i, top) in layer.tops.iter().enumerate() {
            let dims = p
                .dims_of(shapes[i.min(shapes.len() - 1)])
                .map_err(|r| self.invalid(r))?;
            self.add_input(top.clone(), dims);
        }
        Ok(())
    }

    fn convolution(&mut self, layer: &Layer<'_>) -> Result<(), ModelError> {
        let transposed = layer.ty == "Deconvolution";
        let p = Params::of(layer, "convolution_param");
        let e = |r: String| self.invalid(r);
        let num_output = p.uint("num_output").map_err(e)?.ok_or_else(|| {
            self.invalid(format!(
                "{}: no convolution_param.num_output: expected the number of output channels",
                layer.describe()
            ))
        })?;
        // MobileNet/ShuffleNet ports' depthwise layer: one group per channel.
        let depthwise = matches!(
            layer.ty.as_str(),
            "ConvolutionDepthwise" | "DepthwiseConvolution"
        );
        let group = if depthwise {
            num_output
        } else {
            p.uint("group").map_err(e)?.unwrap_or(1).max(1)
        };
        let bias = p.bool("bias_term").map_err(e)?.unwrap_or(true);
        if p.int("axis").map_err(e)?.is_some_and(|a| a != 1) {
            return self.unknown(layer, &format!("{}(axis≠1)", layer.ty));
        }
        let blobs = self.weight_and_bias_blobs(layer, bias, "weight", "bias")?;
        let w = blobs[0].clone();
        if w.len() < 3 || w.iter().any(|d| *d <= 0) {
            return Err(self.weights_error(
                layer,
                format!(
                    "weight blob shape {w:?}: expected [out, in/group, kernel…] with positive dims"
                ),
            ));
        }
        let dims = w.len() - 2;
        let kernel = spatial(&p, "kernel_size", "kernel_h", "kernel_w", dims, 0).map_err(e)?;
        let pads = spatial(&p, "pad", "pad_h", "pad_w", dims, 0).map_err(e)?;
        let strides = spatial(&p, "stride", "stride_h", "stride_w", dims, 1).map_err(e)?;
        let dilations = spatial(&p, "dilation", "dilation_h", "dilation_w", dims, 1).map_err(e)?;
        if kernel.contains(&0) || strides.contains(&0) || dilations.contains(&0) {
            return Err(self.invalid(format!("{}: kernel {kernel:?}, stride {strides:?}, dilation {dilations:?}: expected positive values", layer.describe())));
        }
        let (out_dim, out_channels) = if transposed {
            (1, w[1] * group)
        } else {
            (0, w[0])
        };
        if out_channels != num_output || w[2..] != kernel[..] || num_output % group != 0 {
            return Err(self.weights_error(
                layer,
                format!(
                    "weight blob shape {w:?} does not fit num_output {num_output}, group {group}, kernel {kernel:?}: expected dim {out_dim} to give {num_output} output channels and the last {dims} dims to be the kernel"
                ),
            ));
        }
        let mut inputs = vec![
            self.bottom(layer, 0)?,
            self.weight_tensor(format!("{}.weight", layer.name), w),
        ];
        if bias {
            inputs.push(self.bias_tensor(layer, &blobs[1], num_output)?);
        }
        let attrs = Attrs::from([
            ("kernel_shape".into(), ints(&kernel)),
            ("strides".into(), ints(&strides)),
            ("pads".into(), ints(&[pads.clone(), pads].concat())),
            ("dilations".into(), ints(&dilations)),
            ("group".into(), Attr::Int(group)),
        ]);
        self.node(
            layer,
            if transposed { "ConvTranspose" } else { "Conv" },
            inputs,
            attrs,
        );
        Ok(())
    }

    fn pooling(&mut self, layer: &Layer<'_>) -> Result<(), ModelError> {
        let p = Params::of(layer, "pooling_param");
        let e = |r: String| self.invalid(r);
        let pool = p
            .enum_("pool", &["MAX", "AVE", "STOCHASTIC"])
            .map_err(e)?
            .unwrap_or("MAX");
        let input = self.bottom(layer, 0)?;
        if pool == "STOCHASTIC" {
            return self.refused(
                layer,
                "Pooling STOCHASTIC samples activations at random, which ATC does not compile: expected MAX or AVE",
            );
        }
        if p.bool("global_pooling").map_err(e)?.unwrap_or(false) {
            let op = if pool == "MAX" {
                "GlobalMaxPool"
            } else {
                "GlobalAveragePool"
            };
            self.node(layer, op, vec![input], Attrs::new());
            return Ok(());
        }
        let kernel = spatial(&p, "kernel_size", "kernel_h", "kernel_w", 2, 0).map_err(e)?;
        let pads = spatial(&p, "pad", "pad_h", "pad_w", 2, 0).map_err(e)?;
        let strides = spatial(&p, "stride", "stride_h", "stride_w", 2, 1).map_err(e)?;
        if kernel.contains(&0) || strides.contains(&0) {
            return Err(self.invalid(format!(
                "{}: kernel {kernel:?}, stride {strides:?}: expected pooling_param.kernel_size (or global_pooling: true) and positive strides",
                layer.describe()
            )));
        }
        let ceil = p
            .enum_("round_mode", &["CEIL", "FLOOR"])
            .map_err(e)?
            .unwrap_or("CEIL")
            == "CEIL";
        let mut attrs = Attrs::from([
            ("kernel_shape".into(), ints(&kernel)),
            ("strides".into(), ints(&strides)),
            ("pads".into(), ints(&[pads.clone(), pads.clone()].concat())),
            ("ceil_mode".into(), Attr::Int(i64::from(ceil))),
        ]);
        if pool == "AVE" && pads.iter().any(|p| *p > 0) {
            // Caffe averages over the padded window.
            attrs.insert("count_include_pad".into(), Attr::Int(1));
        }
        self.node(
            layer,
            if pool == "MAX" {
                "MaxPool"
            } else {
                "AveragePool"
            },
            vec![input],
            attrs,
        );
        Ok(())
    }

    fn inner_product(&mut self, layer: &Layer<'_>) -> Result<(), ModelError> {
        let p = Params::of(layer, "inner_product_param");
        let e = |r: String| self.invalid(r);
        let num_output = p.uint("num_output").map_err(e)?.ok_or_else(|| {
            self.invalid(format!(
                "{}: no inner_product_param.num_output: expected the number of outputs",
                layer.describe()
            ))
        })?;
        let bias = p.bool("bias_term").map_err(e)?.unwrap_or(true);
        let transpose = p.bool("transpose").map_err(e)?.unwrap_or(false);
        let axis = p.int("axis").map_err(e)?.unwrap_or(1);
        let blobs = self.weight_and_bias_blobs(layer, bias, "weight", "bias")?;
        let w = squeeze_to(&blobs[0], 2);
        let out_at = usize::from(transpose);
        if w.len() != 2 || w[out_at] != num_output || w.iter().any(|d| *d <= 0) {
            return Err(self.weights_error(
                layer,
                format!(
                    "weight blob shape {:?}: expected [{num_output}, inputs]{}",
                    blobs[0],
                    if transpose {
                        " transposed (transpose: true)"
                    } else {
                        ""
                    }
                ),
            ));
        }
        let mut input = self.bottom(layer, 0)?;
        if axis != 1 {
            // The dims before `axis` stay (a sequence's steps): flatten from `axis` on, then a
            // MatMul by the [inputs, num_output] matrix (only its shape is read) and the bias.
            let flat = self.step(
                layer,
                "flatten",
                "FlattenV2",
                vec![input],
                Attrs::from([
                    ("axis".into(), Attr::Int(axis)),
                    ("end_axis".into(), Attr::Int(-1)),
                ]),
            );
            let k = w[1 - out_at];
            let m = self.weight_tensor(format!("{}.weight", layer.name), vec![k, num_output]);
            if !bias {
                self.node(layer, "MatMul", vec![flat, m], Attrs::new());
                return Ok(());
            }
            let mm = self.step(layer, "matmul", "MatMul", vec![flat, m], Attrs::new());
            let b = self.bias_tensor(layer, &blobs[1], num_output)?;
            self.node(layer, "Add", vec![mm, b], Attrs::new());
            return Ok(());
        }
        // Caffe flattens from axis 1 itself; a Flatten is added unless the input is flat.
        let flat = self
            .nodes
            .iter()
            .rev()
            .find(|n| n.outputs.contains(&input))
            .is_some_and(|n| matches!(n.op_type.as_str(), "Flatten" | "Gemm"));
        if !flat {
            input = self.step(
                layer,
                "flatten",
                "Flatten",
                vec![input],
                Attrs::from([("axis".into(), Attr::Int(1))]),
            );
        }
        let mut inputs = vec![
            input,
            self.weight_tensor(format!("{}.weight", layer.name), w),
        ];
        if bias {
            inputs.push(self.bias_tensor(layer, &blobs[1], num_output)?);
        }
        let attrs = Attrs::from([("transB".into(), Attr::Int(i64::from(!transpose)))]);
        self.node(layer, "Gemm", inputs, attrs);
        Ok(())
    }

    fn eltwise(&mut self, layer: &Layer<'_>) -> Result<(), ModelError> {
        let p = Params::of(layer, "eltwise_param");
        let op = match p
            .enum_("operation", &["PROD", "SUM", "MAX"])
            .map_err(|r| self.invalid(r))?
            .unwrap_or("SUM")
        {
            "PROD" => "Mul",
            "SUM" => "Add",
            _ => "Max",
        };
        let coeff = p.floats("coeff").map_err(|r| self.invalid(r))?;
        let n = layer.bottoms.len();
        if n < 2 || !(coeff.is_empty() || coeff.len() == n) || (op != "Add" && !coeff.is_empty()) {
            return Err(self.invalid(format!(
                "{}: {n} bottom(s) and {} coeff(s): expected at least 2 bottoms, and one coeff per bottom only for SUM",
                layer.describe(),
                coeff.len()
            )));
        }
        let mut inputs = Vec::with_capacity(n);
        for i in 0..n {
            let mut t = self.bottom(layer, i)?;
            if coeff.get(i).is_some_and(|c| *c != 1.0) {
                let k = self.weight_tensor(format!("{}.coeff{i}", layer.name), vec![]);
                t = self.step(layer, &format!("coeff{i}"), "Mul", vec![t, k], Attrs::new());
            }
            inputs.push(t);
        }
        let mut acc = inputs[0].clone();
        for (i, t) in inputs.iter().enumerate().skip(1).take(n - 2) {
            acc = self.step(
                layer,
                &format!("{}{i}", op.to_lowercase()),
                op,
                vec![acc, t.clone()],
                Attrs::new(),
            );
        }
        self.node(layer, op, vec![acc, inputs[n - 1].clone()], Attrs::new());
        Ok(())
    }

    fn lrn(&mut self, layer: &Layer<'_>) -> Result<(), ModelError> {
        let p = Params::of(layer, "lrn_param");
        let e = |r: String| self.invalid(r);
        let region = p
            .enum_("norm_region", &["ACROSS_CHANNELS", "WITHIN_CHANNEL"])
            .map_err(e)?;
        let mut attrs = Attrs::from([
            (
                "size".into(),
                Attr::Int(p.uint("local_size").map_err(e)?.unwrap_or(5)),
            ),
            (
                "alpha".into(),
                Attr::Float(p.float("alpha").map_err(e)?.unwrap_or(1.0)),
            ),
            (
                "beta".into(),
                Attr::Float(p.float("beta").map_err(e)?.unwrap_or(0.75)),
            ),
            (
                "bias".into(),
                Attr::Float(p.float("k").map_err(e)?.unwrap_or(1.0)),
            ),
        ]);
        if region == Some("WITHIN_CHANNEL") {
            // Ascend's LRN normalises within a channel by this attribute (ONNX's never does).
            attrs.insert("norm_region".into(), Attr::Str("WITHIN_CHANNEL".into()));
        }
        let x = self.bottom(layer, 0)?;
        self.node(layer, "LRN", vec![x], attrs);
        Ok(())
    }

    fn reshape(&mut self, layer: &Layer<'_>) -> Result<(), ModelError> {
        let p = Params::of(layer, "reshape_param");
        let e = |r: String| self.invalid(r);
        let axis = p.int("axis").map_err(e)?.unwrap_or(0);
        let num_axes = p.int("num_axes").map_err(e)?.unwrap_or(-1);
        let Some(shape) = p.message("shape") else {
            return Err(self.invalid(format!(
                "{}: no reshape_param.shape: expected shape {{ dim: … }}",
                layer.describe()
            )));
        };
        let dims = p.dims_of(shape).map_err(e)?;
        let x = self.bottom(layer, 0)?;
        let s = self.int_tensor(format!("{}.shape", layer.name), dims);
        // A partial reshape keeps the dims outside axis..axis+num_axes (ATC's Reshape attrs).
        let attrs = if (axis, num_axes) == (0, -1) {
            Attrs::new()
        } else {
            Attrs::from([
                ("axis".into(), Attr::Int(axis)),
                ("num_axes".into(), Attr::Int(num_axes)),
            ])
        };
        self.node(layer, "Reshape", vec![x, s], attrs);
        Ok(())
    }
}
