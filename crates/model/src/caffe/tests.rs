//! The Caffe importer on small hand-written nets: the legacy spellings, in-place layers, the
//! BatchNorm + Scale fold, Caffe's ceil pooling, and each kind of bad input.

use prost::Message as _;

use super::proto::{BlobProto, BlobShape, LayerParameter, NetParameter, V1LayerParameter};
use super::*;
use crate::Attr;
use tunebank_key::{FsReader, ResolvedOptions};

/// A caffemodel holding `layers` (name, blob shapes), in the modern or the legacy list.
pub(super) fn caffemodel(layers: &[(&str, &[&[i64]])], legacy: bool) -> Vec<u8> {
    let blobs = |shapes: &[&[i64]]| {
        shapes
            .iter()
            .map(|d| BlobProto {
                shape: Some(BlobShape { dim: d.to_vec() }),
                ..Default::default()
            })
            .collect::<Vec<_>>()
    };
    let mut net = NetParameter {
        name: "t".into(),
        ..Default::default()
    };
    for (name, shapes) in layers {
        if legacy {
            net.layers.push(V1LayerParameter {
                name: (*name).into(),
                r#type: 0,
                blobs: blobs(shapes),
            });
        } else {
            net.layer.push(LayerParameter {
                name: (*name).into(),
                r#type: String::new(),
                blobs: blobs(shapes),
            });
        }
    }
    net.encode_to_vec()
}

pub(super) fn shapes(model: &Model) -> crate::InferredGraph {
    let options = ResolvedOptions::from_args(["--soc_version=Ascend910B2"], &FsReader).unwrap();
    model.infer(&options).unwrap().remove(0)
}

const LEGACY: &str = r#"
name: "legacy"
input: "data"
input_dim: 1 input_dim: 3 input_dim: 224 input_dim: 224
layers { name: "conv1" type: CONVOLUTION bottom: "data" top: "conv1"
  convolution_param { num_output: 8 kernel_size: 7 stride: 2 pad: 3 bias_term: false } }
layers { name: "bn1" type: "BatchNorm" bottom: "conv1" top: "conv1" batch_norm_param { eps: 1e-3 } }
layers { name: "sc1" type: "Scale" bottom: "conv1" top: "conv1" scale_param { bias_term: true } }
layers { name: "relu1" type: RELU bottom: "conv1" top: "conv1" }
layers { name: "pool1" type: POOLING bottom: "conv1" top: "pool1"
  pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
layers { name: "split" type: SPLIT bottom: "pool1" top: "a" top: "b" }
layers { name: "drop" type: DROPOUT bottom: "a" top: "a" include { phase: TEST } }
layers { name: "train_only" type: DROPOUT bottom: "b" top: "gone" include { phase: TRAIN } }
layers { name: "sum" type: ELTWISE bottom: "a" bottom: "b" bottom: "a" top: "sum" }
layers { name: "pool2" type: POOLING bottom: "sum" top: "pool2" pooling_param { pool: AVE global_pooling: true } }
layers { name: "fc" type: INNER_PRODUCT bottom: "pool2" top: "fc" inner_product_param { num_output: 10 } }
layers { name: "prob" type: SOFTMAX bottom: "fc" top: "prob" }
"#;

fn legacy_weights() -> Vec<u8> {
    caffemodel(
        &[
            ("conv1", &[&[8, 3, 7, 7]]),
            ("bn1", &[&[8], &[8], &[1]]),
            ("sc1", &[&[8], &[8]]),
            ("fc", &[&[1, 1, 10, 8], &[1, 1, 1, 10]]),
            ("data_layer_of_training", &[]),
        ],
        true,
    )
}

#[test]
fn a_legacy_net_imports_with_in_place_layers_folds_and_caffe_rounding() {
    let model = load_caffe_bytes(
        LEGACY.as_bytes(),
        &legacy_weights(),
        "legacy.prototxt",
        "legacy.caffemodel",
    )
    .unwrap();
    let ops: Vec<&str> = model
        .graph
        .nodes
        .iter()
        .map(|n| n.op_type.as_str())
        .collect();
    assert_eq!(
        ops,
        ["Conv", "BatchNormalization", "Relu", "MaxPool", "Add", "Add", "GlobalAveragePool", "Flatten", "Gemm", "Softmax"],
        "BatchNorm + Scale fold into one op; Split and Dropout are no ops; the train-only layer is dropped"
    );
    let g = shapes(&model);
    // Conv 7x7/2 pad 3: 112; MaxPool 3/2 with Caffe's ceil: ceil(109/2)+1 = 56 (floor gives 55).
    assert_eq!(g.tensors["conv1"].shape, [1, 8, 112, 112]);
    assert_eq!(g.tensors["pool1"].shape, [1, 8, 56, 56]);
    assert_eq!(g.tensors["sum"].shape, [1, 8, 56, 56]);
    assert_eq!(g.tensors["prob"].shape, [1, 10]);
    // In-place tops get the layer's name: conv1 → sc1 (the folded pair's output) → relu1.
    let relu = model
        .graph
        .nodes
        .iter()
        .find(|n| n.name == "relu1")
        .unwrap();
    assert_eq!(
        (relu.inputs[0].as_str(), relu.outputs[0].as_str()),
        ("sc1", "relu1")
    );
    let bn = model
        .graph
        .nodes
        .iter()
        .find(|n| n.op_type == "BatchNormalization")
        .unwrap();
    assert_eq!(
        bn.inputs[1..],
        ["sc1.gamma", "sc1.beta", "bn1.mean", "bn1.var"],
        "Scale's blobs are the fold's gamma and beta"
    );
    assert_eq!(
        model
            .graph
            .outputs
            .iter()
            .map(|o| o.name.as_str())
            .collect::<Vec<_>>(),
        ["prob"]
    );
    // The legacy [1,1,10,8] weight and [1,1,1,10] bias are the 2-D and 1-D shapes Gemm wants.
    assert_eq!(model.graph.initializers["fc.weight"].dims, [10, 8]);
    assert_eq!(model.graph.initializers["fc.bias"].dims, [10]);
    assert!(g.skipped.is_empty(), "{:?}", g.skipped);
}

const MODERN: &str = r#"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 4 dim: 9 dim: 9 } } }
layer { name: "dw" type: "Convolution" bottom: "data" top: "dw"
  convolution_param { num_output: 4 group: 4 kernel_h: 3 kernel_w: 1 pad_h: 1 pad_w: 0 dilation: 2 } }
layer { name: "odd" type: "FancyNorm" bottom: "dw" top: "odd" }
layer { name: "after" type: "ReLU" bottom: "odd" top: "after" }
layer { name: "up" type: "Deconvolution" bottom: "data" top: "up"
  convolution_param { num_output: 6 group: 2 kernel_size: 2 stride: 2 } }
layer { name: "p" type: "Pooling" bottom: "up" top: "p" pooling_param { pool: AVE kernel_size: 3 stride: 2 pad: 1 round_mode: FLOOR } }
layer { name: "cat" type: "Concat" bottom: "up" bottom: "up" top: "cat" concat_param { axis: 1 } }
layer { name: "r" type: "Reshape" bottom: "cat" top: "r" reshape_param { shape { dim: 0 dim: -1 } } }
"#;

#[test]
fn a_modern_net_maps_every_spelling_and_reports_the_unknown_layer() {
    let weights = caffemodel(
        &[
            ("dw", &[&[4, 1, 3, 1], &[4]]),
            ("up", &[&[4, 3, 2, 2], &[6]]),
        ],
        false,
    );
    let model =
        load_caffe_bytes(MODERN.as_bytes(), &weights, "m.prototxt", "m.caffemodel").unwrap();
    let g = shapes(&model);
    // Dilation 2 on a 3x1 kernel with pad (1, 0): H 9 + 2 - 5 + 1 = 7, W 9.
    assert_eq!(g.tensors["dw"].shape, [1, 4, 7, 9]);
    // Deconvolution 2/2 with group 2: 18x18 and 3 x 2 = 6 channels.
    assert_eq!(g.tensors["up"].shape, [1, 6, 18, 18]);
    // FLOOR rounding: floor((18 + 2 - 3) / 2) + 1 = 9 (ceil would also give 9, so check the attr).
    let pool = model.graph.nodes.iter().find(|n| n.name == "p").unwrap();
    assert_eq!(pool.attrs["ceil_mode"], Attr::Int(0));
    assert_eq!(g.tensors["r"].shape, [1, 12 * 18 * 18]);
    let skipped: Vec<(&str, &str)> = g
        .skipped
        .iter()
        .map(|s| (s.node_name.as_str(), s.op_type.as_str()))
        .collect();
    assert!(
        skipped.contains(&("odd", "FancyNorm")),
        "the unknown layer is reported by name: {skipped:?}"
    );
    assert!(
        g.skipped.iter().any(|s| s.reason.contains("caffe")),
        "{:?}",
        g.skipped
    );
    assert!(
        !g.tensors.contains_key("after"),
        "what the unknown layer feeds is left out"
    );
}

fn err(prototxt: &str, weights: &[u8]) -> ModelError {
    load_caffe_bytes(prototxt.as_bytes(), weights, "n.prototxt", "n.caffemodel").unwrap_err()
}

#[test]
fn bad_input_is_named_with_the_file_the_layer_and_the_expectation() {
    let w = legacy_weights();
    let e = err("layer {\n  name: \"x\"\n  type \"ReLU\"\n}", &w);
    assert!(
        matches!(
            e,
            ModelError::Syntax {
                line: 3,
                column: 8,
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string().starts_with("n.prototxt:3:8: syntax error"),
        "{e}"
    );

    let e = err(LEGACY, &w[..w.len() / 2]);
    assert!(matches!(e, ModelError::TruncatedFile { .. }), "{e}");
    let e = err(LEGACY, b"\xff\xfe not protobuf at all");
    assert!(
        matches!(e, ModelError::Malformed { .. }) && e.to_string().contains("n.caffemodel"),
        "{e}"
    );
    let e = err(LEGACY, b"");
    assert!(e.to_string().contains("empty"), "{e}");

    let e = err(LEGACY, &caffemodel(&[("conv1", &[&[8, 3, 5, 5]])], true));
    assert!(
        matches!(&e, ModelError::Weights { layer, .. } if layer == "conv1"),
        "{e}"
    );
    assert!(
        e.to_string().contains("[8, 3, 5, 5]") && e.to_string().contains("kernel [7, 7]"),
        "{e}"
    );
    let e = err(LEGACY, &caffemodel(&[("conv1", &[&[8, 3, 7, 7]])], true));
    assert!(
        matches!(&e, ModelError::Weights { layer, .. } if layer == "bn1")
            && e.to_string().contains("no layer of that name"),
        "{e}"
    );

    let e = err(&LEGACY.replace("kernel_size: 7", "kernel_size: seven"), &w);
    assert!(
        e.to_string().contains("layer \"conv1\" (Convolution)")
            && e.to_string()
                .contains("expected a non-negative integer, found seven"),
        "{e}"
    );
    let e = err(
        &LEGACY.replace("bottom: \"pool2\"", "bottom: \"nowhere\""),
        &w,
    );
    assert!(
        e.to_string()
            .contains("bottom \"nowhere\" is made by no earlier layer"),
        "{e}"
    );
    let e = err(
        &LEGACY.replace("input_dim: 224 input_dim: 224", "input_dim: 224"),
        &w,
    );
    assert!(
        e.to_string()
            .contains("expected four (N, C, H, W) per input"),
        "{e}"
    );
    let e = err(&LEGACY.replace("pool: MAX", "pool: MIN"), &w);
    assert!(
        e.to_string()
            .contains("expected one of MAX, AVE, STOCHASTIC, found MIN"),
        "{e}"
    );
    assert!(err("name: \"empty\"", &w).to_string().contains("no layer"));
    assert!(matches!(
        load_caffe_bytes(b"\xff\xff", &w, "n.prototxt", "w"),
        Err(ModelError::Malformed { .. })
    ));
}
