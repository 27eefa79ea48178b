//! The layers of ATC's Caffe schema beyond BVLC's: small nets of the patterns the detection and
//! mobile model-zoo networks use (an SSD head, a YOLOv3 upsample head, a ShuffleNet v2 unit, an
//! SE block with `Axpy`), each output shape worked out by hand from the framework's documented
//! formula (Caffe's layer `Reshape` code, CANN's op prototypes) in the comments; per-layer
//! shapes; bad parameters named with layer and field; refused and dropped layers; and the walk
//! over every layer type of ATC's schema.

use super::tests::{caffemodel, shapes};
use super::*;
use crate::Attr;

/// Imports `net` with `blobs` (layer name, blob shapes; the caffemodel also lists the input
/// layer `x`, as Caffe writes every layer, so that it is never empty).
fn import(net: &str, blobs: &[(&str, &[&[i64]])]) -> Result<Model, ModelError> {
    let mut all: Vec<(&str, &[&[i64]])> = vec![("x", &[])];
    all.extend_from_slice(blobs);
    load_caffe_bytes(
        net.as_bytes(),
        &caffemodel(&all, false),
        "net.prototxt",
        "net.caffemodel",
    )
}

/// `Input` layers, one per `(top, dims)`.
fn inputs(list: &[(&str, &[i64])]) -> String {
    list.iter()
        .map(|(top, dims)| {
            let d: String = dims.iter().map(|d| format!(" dim: {d}")).collect();
            format!(
                "layer {{ name: \"{top}\" type: \"Input\" top: \"{top}\" input_param {{ shape {{{d} }} }} }}\n"
            )
        })
        .collect()
}

/// An SSD head on one 38×38 feature map (SSD300's conv4_3), as `deploy.prototxt` of Wei Liu's
/// SSD writes it: Normalize, loc/conf convolutions, Permute 0,2,3,1 + Flatten, PriorBox, the
/// conf Reshape + Softmax + Flatten, DetectionOutput.
const SSD_HEAD: &str = r#"
layer { name: "norm" type: "Normalize" bottom: "feat" top: "norm"
  norm_param { across_spatial: false scale_filler { type: "constant" value: 20 } channel_shared: false } }
layer { name: "loc" type: "Convolution" bottom: "norm" top: "loc"
  convolution_param { num_output: 16 pad: 1 kernel_size: 3 stride: 1 } }
layer { name: "loc_perm" type: "Permute" bottom: "loc" top: "loc_perm" permute_param { order: 0 order: 2 order: 3 order: 1 } }
layer { name: "loc_flat" type: "Flatten" bottom: "loc_perm" top: "loc_flat" flatten_param { axis: 1 } }
layer { name: "conf" type: "Convolution" bottom: "norm" top: "conf"
  convolution_param { num_output: 84 pad: 1 kernel_size: 3 stride: 1 } }
layer { name: "conf_perm" type: "Permute" bottom: "conf" top: "conf_perm" permute_param { order: 0 order: 2 order: 3 order: 1 } }
layer { name: "conf_flat" type: "Flatten" bottom: "conf_perm" top: "conf_flat" flatten_param { axis: 1 } }
layer { name: "priors" type: "PriorBox" bottom: "norm" bottom: "data" top: "priors"
  prior_box_param { min_size: 30.0 max_size: 60.0 aspect_ratio: 2 flip: true clip: false
    variance: 0.1 variance: 0.1 variance: 0.2 variance: 0.2 step: 8 offset: 0.5 } }
layer { name: "conf_reshape" type: "Reshape" bottom: "conf_flat" top: "conf_reshape"
  reshape_param { shape { dim: 0 dim: -1 dim: 21 } } }
layer { name: "conf_softmax" type: "Softmax" bottom: "conf_reshape" top: "conf_softmax" softmax_param { axis: 2 } }
layer { name: "conf_soft_flat" type: "Flatten" bottom: "conf_softmax" top: "conf_soft_flat" flatten_param { axis: 1 } }
layer { name: "detection_out" type: "DetectionOutput" bottom: "loc_flat" bottom: "conf_soft_flat" bottom: "priors"
  top: "detection_out" include { phase: TEST }
  detection_output_param { num_classes: 21 share_location: true background_label_id: 0
    nms_param { nms_threshold: 0.45 top_k: 400 } code_type: CENTER_SIZE keep_top_k: 200
    confidence_threshold: 0.01 } }
"#;

#[test]
fn an_ssd_head_imports_whole_with_caffe_shapes() {
    let net = inputs(&[("data", &[1, 3, 300, 300]), ("feat", &[1, 16, 38, 38])]) + SSD_HEAD;
    let model = import(
        &net,
        &[
            ("norm", &[&[16]]),
            ("loc", &[&[16, 16, 3, 3], &[16]]),
            ("conf", &[&[84, 16, 3, 3], &[84]]),
        ],
    )
    .unwrap();
    let g = shapes(&model);
    assert!(g.skipped.is_empty(), "{:?}", g.skipped);
    // NormalizeSum per position (across_spatial false), NormalizeScale back to the input.
    assert_eq!(g.tensors["norm/sum"].shape, [1, 1, 38, 38]);
    assert_eq!(g.tensors["norm"].shape, [1, 16, 38, 38]);
    // Permute 0,2,3,1 is NHWC; Flatten from axis 1: 38·38·16 = 23104.
    assert_eq!(g.tensors["loc_perm"].shape, [1, 38, 38, 16]);
    assert_eq!(g.tensors["loc_flat"].shape, [1, 23104]);
    // Ratios 1, 2, 1/2 (flip) with one min_size, plus one max_size: 4 priors a cell, 4
    // coordinates each: 38·38·4·4 = 23104, boxes and variances.
    assert_eq!(g.tensors["priors"].shape, [1, 2, 23104]);
    // 38·38·4 boxes × 21 classes.
    assert_eq!(g.tensors["conf_reshape"].shape, [1, 5776, 21]);
    assert_eq!(g.tensors["conf_soft_flat"].shape, [1, 121296]);
    // ATC's fixed-size detection output: keep_top_k boxes of 8 values, and the box count.
    assert_eq!(g.tensors["detection_out"].shape, [1, 200, 8]);
    assert_eq!(g.tensors["detection_out/box_num"].shape, [1, 8]);
    let ops: Vec<&str> = model
        .graph
        .nodes
        .iter()
        .map(|n| n.op_type.as_str())
        .collect();
    for op in [
        "NormalizeSum",
        "NormalizeScale",
        "Transpose",
        "PriorBox",
        "SSDDetectionOutput",
    ] {
        assert!(ops.contains(&op), "{op} in {ops:?}");
    }
}

/// YOLOv3's route-and-upsample (darknet2caffe's `Upsample` with `scale: 2`, which ATC's
/// schema reads as the default stride 2) and a `Yolo` head of 3 boxes and 80 classes.
#[test]
fn a_yolo_upsample_head_imports_whole() {
    let net = inputs(&[("deep", &[1, 32, 13, 13]), ("skip", &[1, 16, 26, 26])])
        + r#"
layer { name: "reduce" type: "Convolution" bottom: "deep" top: "reduce"
  convolution_param { num_output: 16 kernel_size: 1 bias_term: false } }
layer { name: "up" type: "Upsample" bottom: "reduce" top: "up" upsample_param { scale: 2 } }
layer { name: "route" type: "Concat" bottom: "up" bottom: "skip" top: "route" }
layer { name: "head" type: "Convolution" bottom: "route" top: "head"
  convolution_param { num_output: 255 kernel_size: 1 } }
layer { name: "yolo" type: "Yolo" bottom: "head" top: "coords" top: "obj" top: "classes"
  yolo_param { boxes: 3 coords: 4 classes: 80 yolo_version: "V3" } }
"#;
    let model = import(
        &net,
        &[
            ("reduce", &[&[16, 32, 1, 1]]),
            ("head", &[&[255, 32, 1, 1], &[255]]),
        ],
    )
    .unwrap();
    let g = shapes(&model);
    assert!(g.skipped.is_empty(), "{:?}", g.skipped);
    assert_eq!(g.tensors["up"].shape, [1, 16, 26, 26]);
    assert_eq!(g.tensors["route"].shape, [1, 32, 26, 26]);
    // 255 = 3 · (4 + 1 + 80); H·W = 676.
    assert_eq!(g.tensors["coords"].shape, [1, 12, 676]);
    assert_eq!(g.tensors["obj"].shape, [1, 2028]);
    assert_eq!(g.tensors["classes"].shape, [1, 80, 2028]);
}

/// A ShuffleNet v2 unit as its Caffe ports write it: Slice into halves, a 1×1 /
/// ConvolutionDepthwise 3×3 / 1×1 branch, Concat, ShuffleChannel.
#[test]
fn a_shufflenet_unit_imports_whole() {
    let net = inputs(&[("x", &[1, 24, 56, 56])])
        + r#"
layer { name: "split" type: "Slice" bottom: "x" top: "a" top: "b" slice_param { slice_point: 12 axis: 1 } }
layer { name: "pw1" type: "Convolution" bottom: "b" top: "pw1" convolution_param { num_output: 12 kernel_size: 1 bias_term: false } }
layer { name: "dw" type: "ConvolutionDepthwise" bottom: "pw1" top: "dw"
  convolution_param { num_output: 12 kernel_size: 3 stride: 1 pad: 1 bias_term: false } }
layer { name: "pw2" type: "Convolution" bottom: "dw" top: "pw2" convolution_param { num_output: 12 kernel_size: 1 bias_term: false } }
layer { name: "cat" type: "Concat" bottom: "a" bottom: "pw2" top: "cat" }
layer { name: "shuffle" type: "ShuffleChannel" bottom: "cat" top: "shuffle" shuffle_channel_param { group: 2 } }
"#;
    let model = import(
        &net,
        &[
            ("pw1", &[&[12, 12, 1, 1]]),
            ("dw", &[&[12, 1, 3, 3]]),
            ("pw2", &[&[12, 12, 1, 1]]),
        ],
    )
    .unwrap();
    let g = shapes(&model);
    assert!(g.skipped.is_empty(), "{:?}", g.skipped);
    assert_eq!(g.tensors["a"].shape, [1, 12, 56, 56]);
    assert_eq!(g.tensors["b"].shape, [1, 12, 56, 56]);
    assert_eq!(g.tensors["shuffle"].shape, [1, 24, 56, 56]);
    let dw = model.graph.nodes.iter().find(|n| n.name == "dw").unwrap();
    assert_eq!(
        dw.attrs.get("group"),
        Some(&Attr::Int(12)),
        "one group per channel"
    );
}

/// SE-ResNet's squeeze-and-excitation with its `Axpy` layer: a·x + y, a of shape [N,C,1,1].
#[test]
fn an_se_block_with_axpy_imports_whole() {
    let net = inputs(&[("x", &[1, 64, 8, 8])])
        + r#"
layer { name: "squeeze" type: "Pooling" bottom: "x" top: "squeeze" pooling_param { pool: AVE global_pooling: true } }
layer { name: "down" type: "Convolution" bottom: "squeeze" top: "down" convolution_param { num_output: 16 kernel_size: 1 } }
layer { name: "relu" type: "ReLU" bottom: "down" top: "down" }
layer { name: "upc" type: "Convolution" bottom: "down" top: "upc" convolution_param { num_output: 64 kernel_size: 1 } }
layer { name: "gate" type: "Sigmoid" bottom: "upc" top: "gate" }
layer { name: "axpy" type: "Axpy" bottom: "gate" bottom: "x" bottom: "x" top: "out" }
"#;
    let model = import(
        &net,
        &[
            ("down", &[&[16, 64, 1, 1], &[16]]),
            ("upc", &[&[64, 16, 1, 1], &[64]]),
        ],
    )
    .unwrap();
    let g = shapes(&model);
    assert!(g.skipped.is_empty(), "{:?}", g.skipped);
    assert_eq!(g.tensors["axpy/mul"].shape, [1, 64, 8, 8]);
    assert_eq!(g.tensors["out"].shape, [1, 64, 8, 8]);
}

/// One layer on `x` of `dims`; the inferred shape of each of `tops`, or the skip reason.
fn one_layer(
    dims: &[i64],
    layer: &str,
    blobs: &[(&str, &[&[i64]])],
    tops: &[&str],
) -> Result<Vec<Vec<i64>>, String> {
    let net = inputs(&[("x", dims)]) + layer;
    let model = import(&net, blobs).map_err(|e| e.to_string())?;
    let g = shapes(&model);
    if let Some(s) = g.skipped.first() {
        return Err(format!("{} ({}): {}", s.node_name, s.op_type, s.reason));
    }
    Ok(tops.iter().map(|t| g.tensors[*t].shape.clone()).collect())
}

#[test]
fn each_layer_has_its_frameworks_shape() {
    let one = |dims: &[i64], layer: &str, top: &str| {
        one_layer(dims, layer, &[], &[top]).map(|mut v| v.remove(0))
    };
    // Caffe Flatten keeps the dims outside axis..=end_axis.
    assert_eq!(
        one(
            &[2, 3, 4, 5],
            r#"layer { name: "f" type: "Flatten" bottom: "x" top: "y" flatten_param { axis: 1 end_axis: 2 } }"#,
            "y"
        ),
        Ok(vec![2, 12, 5])
    );
    // Permute naming only the leading axes keeps the rest in order.
    assert_eq!(
        one(
            &[2, 3, 4, 5],
            r#"layer { name: "p" type: "Permute" bottom: "x" top: "y" permute_param { order: 0 order: 2 } }"#,
            "y"
        ),
        Ok(vec![2, 4, 3, 5])
    );
    // PriorBox: ratios 1, 2, 3 without flip, the duplicate 2 ignored; two min sizes, no max:
    // 3·2 = 6 priors.
    assert_eq!(
        one(
            &[1, 8, 10, 10],
            r#"layer { name: "pb" type: "PriorBox" bottom: "x" top: "y"
          prior_box_param { min_size: 10 min_size: 20 aspect_ratio: 2 aspect_ratio: 2 aspect_ratio: 3 flip: false } }"#,
            "y"
        ),
        Ok(vec![1, 2, 10 * 10 * 6 * 4])
    );
    // PSPNet's Interp: zoom_factor 8 from 60: 60 + 59·7 = 473; shrink 2 from 97: 96/2+1 = 49.
    assert_eq!(
        one(
            &[1, 2, 60, 60],
            r#"layer { name: "i" type: "Interp" bottom: "x" top: "y" interp_param { zoom_factor: 8 } }"#,
            "y"
        ),
        Ok(vec![1, 2, 473, 473])
    );
    assert_eq!(
        one(
            &[1, 2, 97, 97],
            r#"layer { name: "i" type: "Interp" bottom: "x" top: "y" interp_param { shrink_factor: 2 } }"#,
            "y"
        ),
        Ok(vec![1, 2, 49, 49])
    );
    // YOLOv2's Reorg stride 2: 26×26×64 → 13×13×256.
    assert_eq!(
        one(
            &[1, 64, 26, 26],
            r#"layer { name: "r" type: "Reorg" bottom: "x" top: "y" reorg_param { stride: 2 } }"#,
            "y"
        ),
        Ok(vec![1, 256, 13, 13])
    );
    assert_eq!(
        one(
            &[2, 3, 4, 5],
            r#"layer { name: "t" type: "Tile" bottom: "x" top: "y" tile_param { axis: 2 tiles: 3 } }"#,
            "y"
        ),
        Ok(vec![2, 3, 12, 5])
    );
    // ArgMax without an axis: [N, 1 (2 with out_max_val), top_k]; with one: that dim is top_k.
    assert_eq!(
        one(
            &[2, 10, 3, 3],
            r#"layer { name: "a" type: "ArgMax" bottom: "x" top: "y" argmax_param { out_max_val: true top_k: 5 } }"#,
            "y"
        ),
        Ok(vec![2, 2, 5])
    );
    assert_eq!(
        one(
            &[2, 10, 3, 3],
            r#"layer { name: "a" type: "ArgMax" bottom: "x" top: "y" argmax_param { axis: 1 } }"#,
            "y"
        ),
        Ok(vec![2, 1, 3, 3])
    );
    // Reduction from axis 2 on: the leading dims remain.
    assert_eq!(
        one(
            &[2, 3, 4, 5],
            r#"layer { name: "r" type: "Reduction" bottom: "x" top: "y" reduction_param { operation: SUMSQ axis: 2 } }"#,
            "y"
        ),
        Ok(vec![2, 3])
    );
    // Slice without points: equal parts; with them: the pieces between.
    assert_eq!(
        one_layer(
            &[1, 9, 4, 4],
            r#"layer { name: "s" type: "Slice" bottom: "x" top: "p" top: "q" top: "r" slice_param { axis: 1 } }"#,
            &[],
            &["p", "q", "r"]
        ),
        Ok(vec![vec![1, 3, 4, 4]; 3])
    );
    assert_eq!(
        one_layer(
            &[1, 9, 4, 4],
            r#"layer { name: "s" type: "Slice" bottom: "x" top: "p" top: "q" top: "r" slice_param { slice_point: 2 slice_point: 7 } }"#,
            &[],
            &["p", "q", "r"]
        ),
        Ok(vec![vec![1, 2, 4, 4], vec![1, 5, 4, 4], vec![1, 2, 4, 4]])
    );
}

/// The forms of Reshape and InnerProduct that need the input's rank, and the element-wise
/// layers, which keep their input's shape.
#[test]
fn reshape_inner_product_and_element_wise_layers_have_their_frameworks_shape() {
    let one = |dims: &[i64], layer: &str, top: &str| {
        one_layer(dims, layer, &[], &[top]).map(|mut v| v.remove(0))
    };
    // Reshape with axis/num_axes replaces only that span (Caffe's own examples: 2×8 input).
    for (spec, want) in [
        ("shape { dim: 2 dim: 4 } axis: 1", vec![2, 2, 4]),
        ("shape { dim: 2 dim: 4 } axis: -2", vec![2, 2, 4]),
        ("shape { dim: 1 } axis: 1 num_axes: 0", vec![2, 1, 8]),
        ("shape { dim: 1 dim: 2 } num_axes: 1", vec![1, 2, 8]),
        ("shape { dim: 0 dim: -1 } axis: 1", vec![2, 8, 1]),
    ] {
        let layer = format!(
            r#"layer {{ name: "r" type: "Reshape" bottom: "x" top: "y" reshape_param {{ {spec} }} }}"#
        );
        assert_eq!(one(&[2, 8], &layer, "y"), Ok(want), "{spec}");
    }
    // InnerProduct from axis 2 keeps the steps: [N, T, D] → [N, T, num_output].
    assert_eq!(
        one_layer(
            &[2, 5, 6],
            r#"layer { name: "ip" type: "InnerProduct" bottom: "x" top: "y" inner_product_param { num_output: 3 axis: 2 } }"#,
            &[("ip", &[&[3, 6], &[3]])],
            &["y"],
        ),
        Ok(vec![vec![2, 5, 3]])
    );
    for layer in [
        r#"layer { name: "u" type: "Power" bottom: "x" top: "y" power_param { power: 2 scale: 0.5 shift: 1 } }"#,
        r#"layer { name: "u" type: "Exp" bottom: "x" top: "y" exp_param { base: 2 } }"#,
        r#"layer { name: "u" type: "Log" bottom: "x" top: "y" }"#,
        r#"layer { name: "u" type: "Threshold" bottom: "x" top: "y" threshold_param { threshold: 0.5 } }"#,
        r#"layer { name: "u" type: "MVN" bottom: "x" top: "y" mvn_param { across_channels: true } }"#,
        r#"layer { name: "u" type: "Reverse" bottom: "x" top: "y" reverse_param { axis: 2 } }"#,
        r#"layer { name: "u" type: "LRN" bottom: "x" top: "y" lrn_param { norm_region: WITHIN_CHANNEL local_size: 3 } }"#,
    ] {
        assert_eq!(
            one(&[1, 4, 6, 6], layer, "y"),
            Ok(vec![1, 4, 6, 6]),
            "{layer}"
        );
    }
}

#[test]
fn two_input_layers_have_their_frameworks_shape() {
    let net = inputs(&[
        ("x", &[1, 8, 20, 20]),
        ("ref", &[1, 8, 16, 12]),
        ("rois", &[5, 5]),
        ("ps", &[1, 18, 20, 20]),
    ]) + r#"
layer { name: "crop" type: "Crop" bottom: "x" bottom: "ref" top: "crop" crop_param { axis: 2 offset: 2 offset: 4 } }
layer { name: "roi" type: "ROIPooling" bottom: "x" bottom: "rois" top: "roi" roi_pooling_param { pooled_h: 7 pooled_w: 6 } }
layer { name: "psroi" type: "PSROIPooling" bottom: "ps" bottom: "rois" top: "psroi"
  psroi_pooling_param { spatial_scale: 0.0625 output_dim: 2 group_size: 3 } }
layer { name: "interp" type: "Interp" bottom: "x" bottom: "ref" top: "interp" }
"#;
    let g = shapes(&import(&net, &[]).unwrap());
    assert!(g.skipped.is_empty(), "{:?}", g.skipped);
    assert_eq!(g.tensors["crop"].shape, [1, 8, 16, 12]);
    assert_eq!(g.tensors["roi"].shape, [5, 8, 7, 6]);
    // 18 channels = output_dim 2 · group_size 3².
    assert_eq!(g.tensors["psroi"].shape, [5, 2, 3, 3]);
    assert_eq!(g.tensors["interp"].shape, [1, 8, 16, 12]);
    // A crop that does not fit: offset 5 + 16 > 20.
    let bad = inputs(&[("x", &[1, 8, 20, 20]), ("ref", &[1, 8, 16, 12])])
        + r#"layer { name: "crop" type: "Crop" bottom: "x" bottom: "ref" top: "crop" crop_param { offset: 5 } }"#;
    let g = shapes(&import(&bad, &[]).unwrap());
    assert!(
        g.skipped[0]
            .reason
            .contains("offset 5 + size 16 exceeds 20"),
        "{:?}",
        g.skipped
    );
}

/// Bad parameters are named with the layer and the field, where the importer reads them, and
/// with the op where inference checks them.
#[test]
fn bad_parameters_name_the_layer_and_field() {
    let err = |layer: &str| one_layer(&[1, 8, 6, 6], layer, &[], &["y"]).unwrap_err();
    let e = err(
        r#"layer { name: "s" type: "Slice" bottom: "x" top: "y" top: "z" slice_param { slice_point: 0 } }"#,
    );
    assert!(
        e.contains("layer \"s\" (Slice)") && e.contains("slice_param.slice_point [0]"),
        "{e}"
    );
    let e = err(r#"layer { name: "t" type: "Tile" bottom: "x" top: "y" }"#);
    assert!(
        e.contains("layer \"t\" (Tile)") && e.contains("tile_param.tiles"),
        "{e}"
    );
    let e = err(
        r#"layer { name: "pb" type: "PriorBox" bottom: "x" top: "y" prior_box_param { step: 8 step_h: 8 } }"#,
    );
    assert!(e.contains("prior_box_param.step with step_h/step_w"), "{e}");
    let e = err(
        r#"layer { name: "pb" type: "PriorBox" bottom: "x" top: "y" prior_box_param { min_size: 30 max_size: 20 } }"#,
    );
    assert!(
        e.contains("pb (PriorBox)") && e.contains("max_size [20.0]"),
        "{e}"
    );
    let e = err(
        r#"layer { name: "sc" type: "ShuffleChannel" bottom: "x" top: "y" shuffle_channel_param { group: 3 } }"#,
    );
    assert!(
        e.contains("sc (ShuffleChannel)") && e.contains("group 3"),
        "{e}"
    );
    let e = err(
        r#"layer { name: "p" type: "Power" bottom: "x" top: "y" power_param { power: "two" } }"#,
    );
    assert!(
        e.contains("layer \"p\" (Power)") && e.contains("power_param.power"),
        "{e}"
    );
    let e = err(
        r#"layer { name: "d" type: "DetectionOutput" bottom: "x" bottom: "x" bottom: "x" top: "y" }"#,
    );
    assert!(e.contains("detection_output_param.num_classes"), "{e}");
}

/// A refused layer is skipped with its reason, and so is what depends on it; an independent
/// branch is still imported. Training-time layers are dropped.
#[test]
fn refused_layers_cut_only_what_depends_on_them() {
    let net = inputs(&[("x", &[1, 4, 8, 8])])
        + r#"
layer { name: "py" type: "Python" bottom: "x" top: "p" python_param { module: "m" layer: "L" } }
layer { name: "after" type: "ReLU" bottom: "p" top: "after" }
layer { name: "pool" type: "Pooling" bottom: "x" top: "pool" pooling_param { pool: STOCHASTIC kernel_size: 2 stride: 2 } }
layer { name: "free" type: "Sigmoid" bottom: "x" top: "free" }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "free" bottom: "x" top: "loss" }
layer { name: "acc" type: "Accuracy" bottom: "free" bottom: "x" top: "acc" }
"#;
    let model = import(&net, &[]).unwrap();
    let g = shapes(&model);
    let skipped: Vec<(&str, &str)> = g
        .skipped
        .iter()
        .map(|s| (s.node_name.as_str(), s.reason.as_str()))
        .collect();
    assert_eq!(skipped.len(), 3, "{skipped:?}");
    assert!(
        skipped[0].0 == "py"
            && skipped[0]
                .1
                .contains("Python is not imported: a Python layer runs the user's code"),
        "{skipped:?}"
    );
    assert!(
        skipped
            .iter()
            .any(|(n, r)| *n == "after" && r.contains("\"p\"")),
        "{skipped:?}"
    );
    assert!(
        skipped
            .iter()
            .any(|(n, r)| *n == "pool" && r.contains("STOCHASTIC")),
        "{skipped:?}"
    );
    assert_eq!(g.tensors["free"].shape, [1, 4, 8, 8]);
    // The report counts what each refused layer cut off instead of listing it.
    let after = g.skipped.iter().find(|s| s.node_name == "after").unwrap();
    assert_eq!(after.cause.as_deref(), Some("py"));
    let cut_off = |root: &str| {
        g.skipped
            .iter()
            .filter(|s| s.cause.as_deref() == Some(root))
            .count()
    };
    assert_eq!((cut_off("py"), cut_off("pool")), (1, 0));
    let ops: Vec<&str> = model
        .graph
        .nodes
        .iter()
        .map(|n| n.op_type.as_str())
        .collect();
    assert!(
        !ops.iter().any(|o| o.contains("Loss") || *o == "Accuracy"),
        "{ops:?}"
    );
}

/// Every layer type of ATC's `caffe.proto` (CANN 8.1, `domi.caffe`): one per `*_param` field of
/// its `LayerParameter`, the layer types without parameters, and the V1 enum's. Each imports,
/// is dropped, or is refused by name; none falls through as an unknown layer.
const ATC_LAYER_TYPES: &[&str] = &[
    "AbsVal",
    "Accuracy",
    "ArgMax",
    "Axpy",
    "BNLL",
    "BatchMatMul",
    "BatchNorm",
    "Bias",
    "Concat",
    "CondTake",
    "ContinuationIndicator",
    "ContrastiveLoss",
    "Convolution",
    "ConvolutionDepthwise",
    "Crop",
    "Data",
    "Deconvolution",
    "Dequant",
    "DetectionOutput",
    "Dropout",
    "DummyData",
    "ELU",
    "Eltwise",
    "Embed",
    "EuclideanLoss",
    "Exp",
    "FSRDetectionOutput",
    "Flatten",
    "FreespaceExtract",
    "HDF5Data",
    "HDF5Output",
    "HingeLoss",
    "ImageData",
    "InfogainLoss",
    "InnerProduct",
    "Input",
    "Interp",
    "LRN",
    "LSTM",
    "Log",
    "MVN",
    "MatrixInverse",
    "MemoryData",
    "MultinomialLogisticLoss",
    "Normalize",
    "PReLU",
    "PSROIPooling",
    "Parameter",
    "Permute",
    "Pooling",
    "Postprocess",
    "Power",
    "PriorBox",
    "Proposal",
    "Python",
    "Quant",
    "RNN",
    "ROIAlign",
    "ROIPooling",
    "ReLU",
    "Reduction",
    "Region",
    "Reorg",
    "Reshape",
    "Reverse",
    "SPP",
    "SSDDetectionOutput",
    "Scale",
    "ShuffleChannel",
    "Sigmoid",
    "SigmoidCrossEntropyLoss",
    "Silence",
    "Slice",
    "SmoothL1Loss",
    "Softmax",
    "SoftmaxWithLoss",
    "SpatialTransform",
    "SpatialTransformer",
    "Split",
    "TanH",
    "Threshold",
    "Tile",
    "Upsample",
    "WarpPerspective",
    "WindowData",
    "Yolo",
    "YoloV2DetectionOutput",
    "YoloV3DetectionOutput",
    "YoloV3DetectionOutputV2",
];

#[test]
fn every_layer_type_of_atcs_schema_imports_or_is_refused_by_name() {
    let mut unknown = Vec::new();
    for ty in ATC_LAYER_TYPES {
        // The layer alone, without parameters or blobs: a layer that needs them is an import
        // error naming it, which is a known layer too.
        let net = inputs(&[
            ("x", &[1, 4, 8, 8]),
            ("x2", &[1, 4, 8, 8]),
            ("x3", &[1, 4, 8, 8]),
        ]) + &format!(
            r#"layer {{ name: "l" type: "{ty}" bottom: "x" bottom: "x2" bottom: "x3" top: "y" }}"#
        );
        match import(&net, &[]) {
            Ok(model) => {
                if let Some(n) = model.graph.nodes.iter().find(|n| n.domain == "caffe") {
                    unknown.push(format!("{ty}: imported as the unknown {}", n.op_type));
                }
                let g = shapes(&model);
                for s in &g.skipped {
                    if s.reason.contains("not supported by the importer")
                        || s.reason.contains("has no shape inference")
                    {
                        unknown.push(format!("{ty}: {}", s.reason));
                    }
                }
            }
            Err(e) => {
                let text = e.to_string();
                if !text.contains("layer \"l\"") {
                    unknown.push(format!(
                        "{ty}: an error that does not name the layer: {text}"
                    ));
                }
            }
        }
    }
    assert!(unknown.is_empty(), "{unknown:#?}");
    // The unknown is still told apart: a made-up type falls through.
    let net = inputs(&[("x", &[1, 4, 8, 8])])
        + r#"layer { name: "l" type: "NoSuchLayer" bottom: "x" top: "y" }"#;
    let model = import(&net, &[]).unwrap();
    assert!(model.graph.nodes.iter().any(|n| n.domain == "caffe"));
}
