//! Caffe's detection layers (SSD's `PriorBox`, `DetectionOutput`, `Normalize`; YOLO's `Yolo`
//! and `Region`) as the Ascend IR ops ATC makes of them; dispatched from `vision.rs`.

use std::collections::BTreeMap;

use super::layers::squeeze_to;
use super::params::Params;
use super::{Builder, Layer};
use crate::graph::Attr;
use crate::ModelError;

type Attrs = BTreeMap<String, Attr>;

fn int(v: i64) -> Attr {
    Attr::Int(v)
}

fn flag(v: bool) -> Attr {
    Attr::Int(i64::from(v))
}

impl Builder<'_> {
    pub(super) fn prior_box(&mut self, layer: &Layer<'_>) -> Result<(), ModelError> {
        let p = Params::of(layer, "prior_box_param");
        let e = |r: String| self.invalid(r);
        let pair = |one: &'static str, h: &'static str, w: &'static str| {
            let v = p.float(one)?;
            let (hv, wv) = (p.float(h)?, p.float(w)?);
            if v.is_some() && (hv.is_some() || wv.is_some()) {
                return Err(format!(
                    "{}: prior_box_param.{one} with {h}/{w}: expected one or the other",
                    layer.describe()
                ));
            }
            Ok((hv.or(v).unwrap_or(0.0), wv.or(v).unwrap_or(0.0)))
        };
        let (img_h, img_w) = pair("img_size", "img_h", "img_w").map_err(e)?;
        let (step_h, step_w) = pair("step", "step_h", "step_w").map_err(e)?;
        let mut attrs = Attrs::from([
            (
                "min_size".into(),
                Attr::Floats(p.floats("min_size").map_err(e)?),
            ),
            (
                "max_size".into(),
                Attr::Floats(p.floats("max_size").map_err(e)?),
            ),
            (
                "aspect_ratio".into(),
                Attr::Floats(p.floats("aspect_ratio").map_err(e)?),
            ),
            (
                "flip".into(),
                flag(p.bool("flip").map_err(e)?.unwrap_or(true)),
            ),
            (
                "clip".into(),
                flag(p.bool("clip").map_err(e)?.unwrap_or(false)),
            ),
            (
                "offset".into(),
                Attr::Float(p.float("offset").map_err(e)?.unwrap_or(0.5)),
            ),
            ("img_h".into(), int(img_h as i64)),
            ("img_w".into(), int(img_w as i64)),
            ("step_h".into(), Attr::Float(step_h)),
            ("step_w".into(), Attr::Float(step_w)),
        ]);
        let variance = p.floats("variance").map_err(e)?;
        if !matches!(variance.len(), 0 | 1 | 4) {
            return Err(self.invalid(format!(
                "{}: {} prior_box_param.variance values: expected 1 or 4",
                layer.describe(),
                variance.len()
            )));
        }
        attrs.insert("variance".into(), Attr::Floats(variance));
        let inputs = (0..layer.bottoms.len().min(2))
            .map(|i| self.bottom(layer, i))
            .collect::<Result<_, _>>()?;
        self.node(layer, "PriorBox", inputs, attrs);
        Ok(())
    }

    /// Caffe SSD's `DetectionOutput` (`detection_output_param`, NMS in `nms_param`) and ATC's
    /// own `SSDDetectionOutput` (`ssddetectionoutput_param`) as one `SSDDetectionOutput`:
    /// inputs loc, conf, priors; its two outputs the box count (a fresh tensor) and the boxes
    /// (the layer's top).
    pub(super) fn detection_output(&mut self, layer: &Layer<'_>) -> Result<(), ModelError> {
        let e = |r: String| self.invalid(r);
        let ssd = layer.ty == "SSDDetectionOutput";
        let p = Params::of(
            layer,
            if ssd {
                "ssddetectionoutput_param"
            } else {
                "detection_output_param"
            },
        );
        let num_classes = p.int("num_classes").map_err(e)?.ok_or_else(|| {
            self.invalid(format!(
                "{}: no {}.num_classes: expected the class count",
                layer.describe(),
                p.name
            ))
        })?;
        let (iou, top_k, eta, code) = if ssd {
            (
                p.float("iou_threshold").map_err(e)?.unwrap_or(0.3),
                p.int("top_k").map_err(e)?.unwrap_or(200),
                p.float("eta").map_err(e)?.unwrap_or(1.0),
                p.int("code_type").map_err(e)?.unwrap_or(1),
            )
        } else {
            let code = p
                .enum_("code_type", &["", "CORNER", "CENTER_SIZE", "CORNER_SIZE"])
                .map_err(e)?
                .unwrap_or("CENTER_SIZE");
            let code = ["", "CORNER", "CENTER_SIZE", "CORNER_SIZE"]
                .iter()
                .position(|c| *c == code)
                .unwrap_or(2) as i64;
            let nms = p.nested("nms_param", "detection_output_param.nms_param");
            (
                nms.float("nms_threshold")
                    .map_err(e)?
                    .or(p.float("nms_threshold").map_err(e)?)
                    .unwrap_or(0.3),
                nms.int("top_k")
                    .map_err(e)?
                    .or(p.int("top_k").map_err(e)?)
                    .unwrap_or(-1),
                nms.float("eta").map_err(e)?.unwrap_or(1.0),
                code,
            )
        };
        let attrs = Attrs::from([
            ("num_classes".into(), int(num_classes)),
            (
                "share_location".into(),
                flag(p.bool("share_location").map_err(e)?.unwrap_or(true)),
            ),
            (
                "background_label_id".into(),
                int(p.int("background_label_id").map_err(e)?.unwrap_or(0)),
            ),
            ("iou_threshold".into(), Attr::Float(iou)),
            ("top_k".into(), int(top_k)),
            ("eta".into(), Attr::Float(eta)),
            (
                "variance_encoded_in_target".into(),
                flag(
                    p.bool("variance_encoded_in_target")
                        .map_err(e)?
                        .unwrap_or(!ssd),
                ),
            ),
            ("code_type".into(), int(code)),
            (
                "keep_top_k".into(),
                int(p.int("keep_top_k").map_err(e)?.unwrap_or(-1)),
            ),
            (
                "confidence_threshold".into(),
                Attr::Float(p.float("confidence_threshold").map_err(e)?.unwrap_or(0.0)),
            ),
        ]);
        let inputs = (0..3)
            .map(|i| self.bottom(layer, i))
            .collect::<Result<_, _>>()?;
        let count = self.temp(layer, "box_num");
        let boxes: Vec<String> = layer.tops.iter().map(|t| self.top(layer, t)).collect();
        let mut outputs = vec![count];
        outputs.extend(boxes.into_iter().take(1));
        self.push(
            layer.name.clone(),
            "SSDDetectionOutput",
            inputs,
            outputs,
            attrs,
        );
        Ok(())
    }

    /// SSD's `Normalize` as GE splits it: `NormalizeSum` (squares summed per sample or per
    /// position) and `NormalizeScale` (the input over its norm, times the learned scale).
    pub(super) fn normalize(&mut self, layer: &Layer<'_>) -> Result<(), ModelError> {
        let p = Params::of(layer, "norm_param");
        let e = |r: String| self.invalid(r);
        let across = p.bool("across_spatial").map_err(e)?.unwrap_or(true);
        let shared = p.bool("channel_shared").map_err(e)?.unwrap_or(true);
        let eps = p.float("eps").map_err(e)?.unwrap_or(1e-10);
        let blobs = self.blobs(layer)?;
        let scale = match blobs {
            [s] => squeeze_to(s, 1),
            _ => {
                return Err(self.weights_error(
                    layer,
                    format!("{} blobs: expected the one scale blob", blobs.len()),
                ))
            }
        };
        if scale.len() != 1 || (shared && scale[0] != 1) {
            return Err(self.weights_error(
                layer,
                format!(
                    "scale blob shape {:?}: expected {}",
                    blobs[0],
                    if shared {
                        "[1] (channel_shared)"
                    } else {
                        "[channels]"
                    }
                ),
            ));
        }
        let x = self.bottom(layer, 0)?;
        let s = self.weight_tensor(format!("{}.scale", layer.name), scale);
        let sum = self.step(
            layer,
            "sum",
            "NormalizeSum",
            vec![x.clone()],
            Attrs::from([("across_spatial".into(), flag(across))]),
        );
        let attrs = Attrs::from([
            ("across_spatial".into(), flag(across)),
            ("channel_shared".into(), flag(shared)),
            ("eps".into(), Attr::Float(eps)),
        ]);
        self.node(layer, "NormalizeScale", vec![x, s, sum], attrs);
        Ok(())
    }

    /// `Yolo` (YOLOv3's head, `yolo_param`) and `Region` (YOLOv2's, `region_param`) as the
    /// Ascend `Yolo` op with its version.
    pub(super) fn yolo(&mut self, layer: &Layer<'_>) -> Result<(), ModelError> {
        let e = |r: String| self.invalid(r);
        let region = layer.ty == "Region";
        let p = Params::of(layer, if region { "region_param" } else { "yolo_param" });
        let (boxes, classes) = if region { (1, 20) } else { (3, 80) };
        let version = if region {
            "V2".to_string()
        } else {
            p.string("yolo_version")
                .map_err(e)?
                .unwrap_or_else(|| "V3".into())
        };
        let attrs = Attrs::from([
            (
                "boxes".into(),
                int(p.int("boxes").map_err(e)?.unwrap_or(boxes)),
            ),
            (
                "coords".into(),
                int(p.int("coords").map_err(e)?.unwrap_or(4)),
            ),
            (
                "classes".into(),
                int(p.int("classes").map_err(e)?.unwrap_or(classes)),
            ),
            ("yolo_version".into(), Attr::Str(version)),
            (
                "softmax".into(),
                flag(p.bool("softmax").map_err(e)?.unwrap_or(false)),
            ),
            (
                "background".into(),
                flag(p.bool("background").map_err(e)?.unwrap_or(false)),
            ),
        ]);
        let input = self.bottom(layer, 0)?;
        self.node(layer, "Yolo", vec![input], attrs);
        Ok(())
    }
}
