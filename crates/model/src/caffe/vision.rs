//! The layers of ATC's Caffe schema (CANN's `caffe.proto`, package `domi.caffe`) beyond BVLC's
//! core set: the detection, segmentation and mobile layers, as the graph-IR nodes whose Ascend
//! IR is what ATC makes of them, and the layers refused by name with the reason (the table in
//! the module docs of `caffe`). Shape inference of the Ascend-only ops is in
//! `infer/ops/vision.rs`.

use std::collections::BTreeMap;

use super::layers::squeeze_to;
use super::params::Params;
use super::{Builder, Layer};
use crate::graph::Attr;
use crate::infer::REFUSED_DOMAIN;
use crate::ModelError;

type Attrs = BTreeMap<String, Attr>;

/// Layer types dropped on import, as ATC drops them from a deploy net: training-time layers
/// whose tops feed nothing an inference graph computes.
pub(super) const DROPPED: &[&str] = &[
    "Accuracy",
    "ContrastiveLoss",
    "EuclideanLoss",
    "HDF5Output",
    "HingeLoss",
    "InfogainLoss",
    "MultinomialLogisticLoss",
    "SigmoidCrossEntropyLoss",
    "Silence",
    "SmoothL1Loss",
    "SoftmaxWithLoss",
];

/// Layer types of ATC's schema refused by name, with the reason (the rest of the net is still
/// imported; what depends on one is skipped, naming it).
pub(super) const REFUSED: &[(&str, &str)] = &[
    ("BatchMatMul", "BatchMatMul with adj_x1/adj_x2 is not mapped yet (ATC: BatchMatMul); without them it imports as MatMul"),
    ("CondTake", "CondTake's output size depends on the data (ATC: CondTake on AI CPU), so nothing after it has a static shape"),
    ("ContinuationIndicator", "ContinuationIndicator is not mapped yet (ATC: ContinuationIndicator, for recurrent nets)"),
    ("Data", "a data layer reads a database at training time: expected a deploy net whose inputs are `Input` layers or `input:` with `input_shape`"),
    ("Dequant", "quantised nets (AMCT's Quant/Dequant layers) are not mapped yet (ATC: AscendQuant, AscendDequant)"),
    ("FreespaceExtract", "FreespaceExtract is not mapped yet (ATC: FreespaceExtract)"),
    ("FSRDetectionOutput", "FSRDetectionOutput is not mapped yet (ATC: FSRDetectionOutput)"),
    ("HDF5Data", "a data layer reads HDF5 files at training time: expected a deploy net whose inputs are `Input` layers"),
    ("ImageData", "a data layer reads image files at training time: expected a deploy net whose inputs are `Input` layers"),
    ("LSTM", "recurrent layers are not mapped yet (ATC: DynamicRNN)"),
    ("MatrixInverse", "MatrixInverse is not mapped yet (ATC: MatrixInverse)"),
    ("MemoryData", "a data layer fed by the training program: expected a deploy net whose inputs are `Input` layers"),
    ("Postprocess", "Postprocess is not mapped yet (ATC: a detection post-processing op)"),
    ("Proposal", "Proposal is not mapped yet (ATC: ProposalD, Faster R-CNN's region proposals)"),
    ("Python", "a Python layer runs the user's code, which neither ATC nor tunebank can compile"),
    ("Quant", "quantised nets (AMCT's Quant/Dequant layers) are not mapped yet (ATC: AscendQuant, AscendDequant)"),
    ("RNN", "recurrent layers are not mapped yet (ATC: DynamicRNN)"),
    ("SPP", "spatial pyramid pooling is not mapped yet (ATC: SPP, as pyramid_height poolings)"),
    ("SpatialTransform", "SpatialTransform is not mapped yet (ATC: SpatialTransformD)"),
    ("SpatialTransformer", "SpatialTransformer is not mapped yet (ATC: SpatialTransformD)"),
    ("WarpPerspective", "WarpPerspective is not mapped yet (ATC: WarpPerspective)"),
    ("WindowData", "a data layer reads image windows at training time: expected a deploy net whose inputs are `Input` layers"),
    ("YoloV2DetectionOutput", "YoloV2DetectionOutput is not mapped yet (ATC: YoloV2DetectionOutputD)"),
    ("YoloV3DetectionOutput", "YoloV3DetectionOutput is not mapped yet (ATC: YoloV3DetectionOutputD)"),
    ("YoloV3DetectionOutputV2", "YoloV3DetectionOutputV2 is not mapped yet (ATC: YoloV3DetectionOutputV2D)"),
];

fn int(v: i64) -> Attr {
    Attr::Int(v)
}

fn flag(v: bool) -> Attr {
    Attr::Int(i64::from(v))
}

impl Builder<'_> {
    /// The nodes of `layer` when its type is one this module imports or [`REFUSED`]; `Ok(false)`
    /// for any other type.
    pub(super) fn vision_layer(&mut self, layer: &Layer<'_>) -> Result<bool, ModelError> {
        if let Some((_, why)) = REFUSED.iter().find(|(t, _)| *t == layer.ty) {
            if layer.ty == "BatchMatMul" {
                return self.batch_matmul(layer, why).map(|()| true);
            }
            self.refused(layer, why)?;
            return Ok(true);
        }
        Ok(self.movement_layer(layer)?
            || self.math_layer(layer)?
            || self.pooling_layer(layer)?
            || self.blob_layer(layer)?)
    }

    /// The detection, resizing and data-movement layers; `Ok(false)` for any other type.
    fn movement_layer(&mut self, layer: &Layer<'_>) -> Result<bool, ModelError> {
        let e = |r: String| self.invalid(r);
        let x = |b: &Self| b.bottom(layer, 0);
        match layer.ty.as_str() {
            "Permute" => {
                let order = Params::of(layer, "permute_param")
                    .uints("order")
                    .map_err(e)?;
                let input = x(self)?;
                if order.is_empty() {
                    for t in &layer.tops {
                        self.alias(t, input.clone());
                    }
                } else {
                    let attrs = Attrs::from([
                        ("perm".into(), Attr::Ints(order)),
                        ("complete_perm".into(), int(1)),
                    ]);
                    self.node(layer, "Transpose", vec![input], attrs);
                }
            }
            "PriorBox" => self.prior_box(layer)?,
            "DetectionOutput" | "SSDDetectionOutput" => self.detection_output(layer)?,
            "Normalize" => self.normalize(layer)?,
            "Upsample" => {
                let p = Params::of(layer, "upsample_param");
                let both = p.int("stride").map_err(e)?;
                let sh = p.int("stride_h").map_err(e)?.or(both).unwrap_or(2);
                let sw = p.int("stride_w").map_err(e)?.or(both).unwrap_or(2);
                let scale = p.float("scale").map_err(e)?.unwrap_or(1.0);
                let input = x(self)?;
                let attrs = Attrs::from([
                    ("stride_h".into(), int(sh)),
                    ("stride_w".into(), int(sw)),
                    ("scale".into(), Attr::Float(scale)),
                ]);
                self.node(layer, "Upsample", vec![input], attrs);
            }
            "Interp" => {
                let p = Params::of(layer, "interp_param");
                let mut attrs = Attrs::new();
                for f in [
                    "height",
                    "width",
                    "zoom_factor",
                    "shrink_factor",
                    "pad_beg",
                    "pad_end",
                ] {
                    if let Some(v) = p.int(f).map_err(e)? {
                        attrs.insert(f.into(), int(v));
                    }
                }
                let mut inputs = vec![x(self)?];
                if layer.bottoms.len() > 1 {
                    inputs.push(self.bottom(layer, 1)?);
                }
                self.node(layer, "ResizeBilinearV2", inputs, attrs);
            }
            "ShuffleChannel" => {
                let g = Params::of(layer, "shuffle_channel_param")
                    .uint("group")
                    .map_err(e)?
                    .unwrap_or(1);
                let input = x(self)?;
                self.node(
                    layer,
                    "ShuffleChannel",
                    vec![input],
                    Attrs::from([("group".into(), int(g))]),
                );
            }
            "Slice" => self.slice(layer)?,
            "Crop" => {
                let p = Params::of(layer, "crop_param");
                let axis = p.int("axis").map_err(e)?.unwrap_or(2);
                let offsets = p.uints("offset").map_err(e)?;
                let inputs = vec![x(self)?, self.bottom(layer, 1)?];
                let attrs = Attrs::from([
                    ("axis".into(), int(axis)),
                    ("offsets".into(), Attr::Ints(offsets)),
                ]);
                self.node(layer, "Crop", inputs, attrs);
            }
            "Axpy" => {
                // SE-ResNet's fused scale-and-add: top = a · x + y, with a [N,C,1,1].
                let (a, xx, y) = (x(self)?, self.bottom(layer, 1)?, self.bottom(layer, 2)?);
                let ax = self.step(layer, "mul", "Mul", vec![a, xx], Attrs::new());
                self.node(layer, "Add", vec![ax, y], Attrs::new());
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The element-wise and reduction layers; `Ok(false)` for any other type.
    fn math_layer(&mut self, layer: &Layer<'_>) -> Result<bool, ModelError> {
        let e = |r: String| self.invalid(r);
        let x = |b: &Self| b.bottom(layer, 0);
        match layer.ty.as_str() {
            "Power" => {
                let p = Params::of(layer, "power_param");
                let attrs = Attrs::from([
                    (
                        "power".into(),
                        Attr::Float(p.float("power").map_err(e)?.unwrap_or(1.0)),
                    ),
                    (
                        "scale".into(),
                        Attr::Float(p.float("scale").map_err(e)?.unwrap_or(1.0)),
                    ),
                    (
                        "shift".into(),
                        Attr::Float(p.float("shift").map_err(e)?.unwrap_or(0.0)),
                    ),
                ]);
                let input = x(self)?;
                self.node(layer, "Power", vec![input], attrs);
            }
            "Exp" | "Log" => self.exp_log(layer)?,
            "Threshold" => {
                let t = Params::of(layer, "threshold_param")
                    .float("threshold")
                    .map_err(e)?
                    .unwrap_or(0.0);
                let input = x(self)?;
                self.node(
                    layer,
                    "Threshold",
                    vec![input],
                    Attrs::from([("threshold".into(), Attr::Float(t))]),
                );
            }
            "Bias" => self.bias(layer)?,
            "Tile" => {
                let p = Params::of(layer, "tile_param");
                let axis = p.int("axis").map_err(e)?.unwrap_or(1);
                let tiles = p.int("tiles").map_err(e)?.ok_or_else(|| {
                    self.invalid(format!(
                        "{}: no tile_param.tiles: expected the number of copies",
                        layer.describe()
                    ))
                })?;
                let input = x(self)?;
                let attrs = Attrs::from([("axis".into(), int(axis)), ("tiles".into(), int(tiles))]);
                self.node(layer, "TileWithAxis", vec![input], attrs);
            }
            "ArgMax" => {
                let p = Params::of(layer, "argmax_param");
                let mut attrs = Attrs::from([
                    ("topk".into(), int(p.uint("top_k").map_err(e)?.unwrap_or(1))),
                    (
                        "out_max_val".into(),
                        flag(p.bool("out_max_val").map_err(e)?.unwrap_or(false)),
                    ),
                ]);
                if let Some(a) = p.int("axis").map_err(e)? {
                    attrs.insert("axis".into(), int(a));
                }
                let input = x(self)?;
                self.node(layer, "ArgMaxWithK", vec![input], attrs);
            }
            "Reduction" => {
                let p = Params::of(layer, "reduction_param");
                let op = p
                    .enum_("operation", &["", "SUM", "ASUM", "SUMSQ", "MEAN"])
                    .map_err(e)?
                    .unwrap_or("SUM");
                let attrs = Attrs::from([
                    ("operation".into(), Attr::Str(op.into())),
                    ("axis".into(), int(p.int("axis").map_err(e)?.unwrap_or(0))),
                    (
                        "coeff".into(),
                        Attr::Float(p.float("coeff").map_err(e)?.unwrap_or(1.0)),
                    ),
                ]);
                let input = x(self)?;
                self.node(layer, "Reduction", vec![input], attrs);
            }
            "MVN" => {
                let p = Params::of(layer, "mvn_param");
                let attrs = Attrs::from([
                    (
                        "normalize_variance".into(),
                        flag(p.bool("normalize_variance").map_err(e)?.unwrap_or(true)),
                    ),
                    (
                        "across_channels".into(),
                        flag(p.bool("across_channels").map_err(e)?.unwrap_or(false)),
                    ),
                    (
                        "eps".into(),
                        Attr::Float(p.float("eps").map_err(e)?.unwrap_or(1e-9)),
                    ),
                ]);
                let input = x(self)?;
                self.node(layer, "MVN", vec![input], attrs);
            }
            "Reverse" => {
                let axes = Params::of(layer, "reverse_param")
                    .uints("axis")
                    .map_err(e)?;
                let input = x(self)?;
                self.node(
                    layer,
                    "ReverseV2",
                    vec![input],
                    Attrs::from([("axis".into(), Attr::Ints(axes))]),
                );
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// `Exp`, `Log`: the framework op itself for the natural function, else Ascend's with its
    /// `base`, `scale`, `shift`.
    fn exp_log(&mut self, layer: &Layer<'_>) -> Result<(), ModelError> {
        let e = |r: String| self.invalid(r);
        let x = |b: &Self| b.bottom(layer, 0);
        let field = if layer.ty == "Exp" {
            "exp_param"
        } else {
            "log_param"
        };
        let p = Params::of(layer, field);
        let base = p.float("base").map_err(e)?.unwrap_or(-1.0);
        let scale = p.float("scale").map_err(e)?.unwrap_or(1.0);
        let shift = p.float("shift").map_err(e)?.unwrap_or(0.0);
        if base != -1.0 && base <= 0.0 {
            return Err(self.invalid(format!(
                "{}: {field}.base {base}: expected -1 (e) or a positive base",
                layer.describe()
            )));
        }
        // The natural function without parameters is the framework op itself.
        let attrs = if (base, scale, shift) == (-1.0, 1.0, 0.0) {
            Attrs::new()
        } else {
            Attrs::from([
                ("base".into(), Attr::Float(base)),
                ("scale".into(), Attr::Float(scale)),
                ("shift".into(), Attr::Float(shift)),
            ])
        };
        let input = x(self)?;
        self.node(layer, &layer.ty, vec![input], attrs);
        Ok(())
    }

    /// The ROI and YOLOv2 pooling layers; `Ok(false)` for any other type.
    fn pooling_layer(&mut self, layer: &Layer<'_>) -> Result<bool, ModelError> {
        let e = |r: String| self.invalid(r);
        let x = |b: &Self| b.bottom(layer, 0);
        match layer.ty.as_str() {
            "ROIPooling" | "ROIAlign" => {
                let field = if layer.ty == "ROIPooling" {
                    "roi_pooling_param"
                } else {
                    "roi_align_param"
                };
                let p = Params::of(layer, field);
                let mut attrs = Attrs::new();
                for f in ["pooled_h", "pooled_w"] {
                    let v = p.uint(f).map_err(e)?.ok_or_else(|| {
                        self.invalid(format!(
                            "{}: no {field}.{f}: expected the pooled size",
                            layer.describe()
                        ))
                    })?;
                    attrs.insert(f.into(), int(v));
                }
                let scale = p.float("spatial_scale").map_err(e)?;
                let default = if layer.ty == "ROIPooling" {
                    0.0625
                } else {
                    1.0
                };
                attrs.insert(
                    "spatial_scale".into(),
                    Attr::Float(scale.unwrap_or(default)),
                );
                let inputs = vec![x(self)?, self.bottom(layer, 1)?];
                self.node(layer, &layer.ty, inputs, attrs);
            }
            "PSROIPooling" => {
                let p = Params::of(layer, "psroi_pooling_param");
                let mut attrs = Attrs::new();
                for f in ["output_dim", "group_size"] {
                    let v = p.int(f).map_err(e)?.ok_or_else(|| {
                        self.invalid(format!(
                            "{}: no psroi_pooling_param.{f}: expected it (required)",
                            layer.describe()
                        ))
                    })?;
                    attrs.insert(f.into(), int(v));
                }
                let scale = p.float("spatial_scale").map_err(e)?.unwrap_or(1.0);
                attrs.insert("spatial_scale".into(), Attr::Float(scale));
                let inputs = vec![x(self)?, self.bottom(layer, 1)?];
                self.node(layer, "PSROIPooling", inputs, attrs);
            }
            "Reorg" => {
                let p = Params::of(layer, "reorg_param");
                let attrs = Attrs::from([
                    (
                        "stride".into(),
                        int(p.uint("stride").map_err(e)?.unwrap_or(2)),
                    ),
                    (
                        "reverse".into(),
                        flag(p.bool("reverse").map_err(e)?.unwrap_or(false)),
                    ),
                ]);
                let input = x(self)?;
                self.node(layer, "Reorg", vec![input], attrs);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// YOLO heads and the layers that make blobs (Parameter, DummyData, Embed); `Ok(false)` for any other type.
    fn blob_layer(&mut self, layer: &Layer<'_>) -> Result<bool, ModelError> {
        let e = |r: String| self.invalid(r);
        match layer.ty.as_str() {
            "Yolo" | "Region" => self.yolo(layer)?,
            "Parameter" => {
                let blobs = self.blobs(layer)?;
                let [shape] = blobs else {
                    return Err(self.weights_error(
                        layer,
                        format!("{} blobs: expected the one parameter blob", blobs.len()),
                    ));
                };
                let t = self.weight_tensor(format!("{}.blob", layer.name), shape.clone());
                for top in &layer.tops {
                    self.alias(top, t.clone());
                }
            }
            "Embed" => self.embed(layer)?,
            "DummyData" => {
                // Constant blobs of the given shapes: initializers, like a Parameter's.
                let p = Params::of(layer, "dummy_data_param");
                let shapes = p.messages("shape");
                let legacy: Vec<Vec<i64>> = ["num", "channels", "height", "width"]
                    .iter()
                    .map(|f| p.uints(f))
                    .collect::<Result<_, _>>()
                    .map_err(e)?;
                let n = layer.tops.len();
                let mut all = Vec::with_capacity(n);
                for i in 0..n {
                    all.push(if !shapes.is_empty() && (shapes.len() == 1 || shapes.len() == n) {
                        p.dims_of(shapes[i.min(shapes.len() - 1)]).map_err(e)?
                    } else if legacy.iter().all(|v| v.len() == 1 || v.len() == n) {
                        legacy.iter().map(|v| v[i.min(v.len() - 1)]).collect()
                    } else {
                        return Err(self.invalid(format!(
                            "{}: dummy_data_param for {n} top(s): expected one shape (or num/channels/height/width) for all, or one per top",
                            layer.describe()
                        )));
                    });
                }
                for (i, (top, dims)) in layer.tops.iter().zip(all).enumerate() {
                    let t = self.weight_tensor(format!("{}.{i}", layer.name), dims);
                    self.alias(top, t);
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// A layer refused by name: a node of the refused domain whose `reason` inference reports
    /// as the skipped op's reason; layers that do not depend on it are still imported.
    pub(super) fn refused(&mut self, layer: &Layer<'_>, reason: &str) -> Result<(), ModelError> {
        let attrs = Attrs::from([("reason".into(), Attr::Str(reason.into()))]);
        self.opaque(layer, &layer.ty, REFUSED_DOMAIN, attrs)
    }

    /// `BatchMatMul` of two bottoms: `MatMul` without adjoints; refused with them.
    fn batch_matmul(&mut self, layer: &Layer<'_>, why: &str) -> Result<(), ModelError> {
        let p = Params::of(layer, "batch_matmul_param");
        let e = |r: String| self.invalid(r);
        let adj = p.bool("adj_x1").map_err(e)?.unwrap_or(false)
            || p.bool("adj_x2").map_err(e)?.unwrap_or(false);
        if adj {
            return self.refused(layer, why);
        }
        let inputs = vec![self.bottom(layer, 0)?, self.bottom(layer, 1)?];
        self.node(layer, "MatMul", inputs, Attrs::new());
        Ok(())
    }

    /// `Slice` along `axis` (or the legacy `slice_dim`): one `Slice` per top between the
    /// `slice_point`s (one fewer than the tops, increasing), or an equal `Split` without them.
    fn slice(&mut self, layer: &Layer<'_>) -> Result<(), ModelError> {
        let p = Params::of(layer, "slice_param");
        let e = |r: String| self.invalid(r);
        let axis = match p.int("axis").map_err(e)? {
            Some(a) => a,
            None => p.uint("slice_dim").map_err(e)?.unwrap_or(1),
        };
        let points = p.uints("slice_point").map_err(e)?;
        let x = self.bottom(layer, 0)?;
        let n = layer.tops.len();
        if points.is_empty() {
            self.node(
                layer,
                "Split",
                vec![x],
                Attrs::from([("axis".into(), int(axis))]),
            );
            return Ok(());
        }
        if points.len() + 1 != n || points.windows(2).any(|w| w[0] >= w[1]) || points[0] == 0 {
            return Err(self.invalid(format!(
                "{}: slice_param.slice_point {points:?} for {n} top(s): expected {} increasing positive points",
                layer.describe(),
                n.saturating_sub(1)
            )));
        }
        let axes = self.int_tensor(format!("{}.axes", layer.name), vec![axis]);
        for (i, top) in layer.tops.iter().enumerate() {
            let start = if i == 0 { 0 } else { points[i - 1] };
            let end = points.get(i).copied().unwrap_or(i64::MAX);
            let s = self.int_tensor(format!("{}.starts{i}", layer.name), vec![start]);
            let en = self.int_tensor(format!("{}.ends{i}", layer.name), vec![end]);
            let out = self.top(layer, top);
            self.push(
                format!("{}/{i}", layer.name),
                "Slice",
                vec![x.clone(), s, en, axes.clone()],
                vec![out],
                Attrs::new(),
            );
        }
        Ok(())
    }

    /// `Bias`: `Add` of two bottoms, or of the learned `[C]` bias (as `[C,1,1]`).
    fn bias(&mut self, layer: &Layer<'_>) -> Result<(), ModelError> {
        let x = self.bottom(layer, 0)?;
        if layer.bottoms.len() > 1 {
            let b = self.bottom(layer, 1)?;
            self.node(layer, "Add", vec![x, b], Attrs::new());
            return Ok(());
        }
        let blobs = self.blobs(layer)?;
        let b = match blobs {
            [b] => squeeze_to(b, 1),
            _ => {
                return Err(self.weights_error(
                    layer,
                    format!("{} blobs: expected the one bias blob", blobs.len()),
                ))
            }
        };
        if b.len() != 1 {
            return Err(self.weights_error(
                layer,
                format!("bias blob shape {:?}: expected [channels]", blobs[0]),
            ));
        }
        let t = self.weight_tensor(format!("{}.bias", layer.name), vec![b[0], 1, 1]);
        self.node(layer, "Add", vec![x, t], Attrs::new());
        Ok(())
    }

    /// `Embed`: a `Gather` of the `[input_dim, num_output]` table's rows (plus the bias).
    fn embed(&mut self, layer: &Layer<'_>) -> Result<(), ModelError> {
        let p = Params::of(layer, "embed_param");
        let e = |r: String| self.invalid(r);
        let bias = p.bool("bias_term").map_err(e)?.unwrap_or(true);
        let blobs = self.weight_and_bias_blobs(layer, bias, "table", "bias")?;
        let w = blobs[0].clone();
        if w.len() != 2 {
            return Err(self.weights_error(
                layer,
                format!("table blob shape {w:?}: expected [input_dim, num_output]"),
            ));
        }
        let x = self.bottom(layer, 0)?;
        let table = self.weight_tensor(format!("{}.table", layer.name), w.clone());
        let attrs = Attrs::from([("axis".into(), int(0))]);
        if !bias {
            self.node(layer, "Gather", vec![table, x], attrs);
            return Ok(());
        }
        let rows = self.step(layer, "gather", "Gather", vec![table, x], attrs);
        let b = self.weight_tensor(format!("{}.bias", layer.name), vec![w[1]]);
        self.node(layer, "Add", vec![rows, b], Attrs::new());
        Ok(())
    }
}
