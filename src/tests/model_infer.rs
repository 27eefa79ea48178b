//! Shape inference: agrees with ONNX's own inference tensor by tensor; options decide the
//! graph inputs' shapes; one static pass per dynamic profile reaches deep into the graph.

use std::collections::BTreeMap;
use std::path::PathBuf;

use tunebank::key::{AttrValue, FsReader, Profile, ResolvedOptions};
use tunebank::model::{load_onnx, InferredGraph, Model, ModelError};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/models")
        .join(name)
}

fn model(name: &str) -> Model {
    load_onnx(fixture(name)).unwrap()
}

fn options(args: &[&str]) -> ResolvedOptions {
    let mut all = vec!["--soc_version=Ascend910B2"];
    all.extend_from_slice(args);
    ResolvedOptions::from_args(all, &FsReader).unwrap()
}

fn single(model: &Model, args: &[&str]) -> InferredGraph {
    let mut graphs = model.infer(&options(args)).unwrap();
    assert_eq!(graphs.len(), 1);
    graphs.pop().unwrap()
}

/// Shapes ONNX's reference shape inference gives (written by make_models.py).
fn golden(name: &str) -> BTreeMap<String, Vec<i64>> {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn assert_matches_golden(g: &InferredGraph, golden: &BTreeMap<String, Vec<i64>>) {
    assert!(g.skipped.is_empty(), "{:?}", g.skipped);
    for (tensor, shape) in golden {
        assert_eq!(g.shape(tensor), Some(shape.as_slice()), "{tensor}");
    }
}

#[test]
fn resnet50_shapes_agree_with_onnx_inference_and_the_output_is_1x1000() {
    let g = single(&model("resnet50.onnx"), &[]);
    let golden = golden("resnet50.shapes.json");
    assert_eq!(golden.len(), 175);
    assert_matches_golden(&g, &golden);
    assert_eq!(g.shape("output"), Some(&[1, 1000][..]));
    assert_eq!(g.shape("pool_out"), Some(&[1, 64, 56, 56][..]));
    assert_eq!(g.shape("gap"), Some(&[1, 2048, 1, 1][..]));
}

#[test]
fn bert_layer_shapes_agree_with_onnx_inference() {
    let g = single(&model("bert_layer.onnx"), &[]);
    assert_matches_golden(&g, &golden("bert_layer.shapes.json"));
    let p = "/bert/encoder/layer.0/attention/self";
    assert_eq!(
        g.shape(&format!("{p}/scores")),
        Some(&[1, 12, 128, 128][..])
    );
    assert_eq!(
        g.shape(&format!("{p}/key/Transpose_out")),
        Some(&[1, 12, 64, 128][..])
    );
    // The Shape → Gather → Unsqueeze → Concat chain is folded into Reshape's target.
    assert_eq!(
        g.tensors[&format!("{p}/new_shape")].value,
        Some(vec![1, 128, 768])
    );
    assert_eq!(
        g.shape(&format!("{p}/context_2d")),
        Some(&[1, 128, 768][..])
    );
    assert_eq!(g.shape("last_hidden_state"), Some(&[1, 128, 768][..]));
}

#[test]
fn input_shape_replaces_the_declared_shapes_before_inference() {
    let g = single(
        &model("resnet50.onnx"),
        &["--input_shape=input:4,3,160,160"],
    );
    assert_eq!(g.input_shapes[0].1.as_deref(), Some(&[4, 3, 160, 160][..]));
    assert_eq!(g.shape("pool_out"), Some(&[4, 64, 40, 40][..]));
    assert_eq!(g.shape("layer4.2_add"), Some(&[4, 2048, 5, 5][..]));
    assert_eq!(g.shape("output"), Some(&[4, 1000][..]));

    let g = single(
        &model("bert_layer.onnx"),
        &["--input_shape=hidden_states:2,64,768;attention_mask:2,1,1,64"],
    );
    let p = "/bert/encoder/layer.0/attention/self";
    assert_eq!(g.shape(&format!("{p}/probs")), Some(&[2, 12, 64, 64][..]));
    assert_eq!(g.shape(&format!("{p}/context_2d")), Some(&[2, 64, 768][..]));
}

#[test]
fn input_shape_errors_name_the_input_and_what_was_expected() {
    let m = model("resnet50.onnx");
    let err = m
        .infer(&options(&["--input_shape=input:1,3,224"]))
        .unwrap_err();
    assert!(matches!(err, ModelError::InputShape { .. }), "{err:?}");
    assert!(err.to_string().contains("expected rank 4"), "{err}");
    let err = m
        .infer(&options(&["--input_shape=data:1,3,224,224"]))
        .unwrap_err();
    assert!(err.to_string().contains("no graph input"), "{err}");
    assert!(err.to_string().contains("\"input\""), "{err}");
}

#[test]
fn dynamic_batch_size_gives_one_static_pass_per_profile_deep_into_the_graph() {
    let m = model("resnet50.onnx");
    let opts = options(&[
        "--input_shape=input:-1,3,224,224",
        "--dynamic_batch_size=1,4,8",
    ]);
    let graphs = m.infer(&opts).unwrap();
    let batches: Vec<Profile> = graphs.iter().map(|g| g.profile.clone()).collect();
    assert_eq!(
        batches,
        [Profile::Batch(1), Profile::Batch(4), Profile::Batch(8)]
    );
    for (g, b) in graphs.iter().zip([1, 4, 8]) {
        assert!(g.skipped.is_empty());
        assert_eq!(g.shape("layer4.2.conv3_out"), Some(&[b, 2048, 7, 7][..]));
        assert_eq!(g.shape("output"), Some(&[b, 1000][..]));
        assert!(g.tensors.values().all(|t| t.shape.iter().all(|&d| d >= 0)));
    }
}

#[test]
fn dynamic_image_size_fills_h_and_w_per_profile() {
    let m = model("resnet50.onnx");
    let opts = options(&[
        "--input_shape=input:1,3,-1,-1",
        "--dynamic_image_size=224,224;160,192",
    ]);
    let graphs = m.infer(&opts).unwrap();
    assert_eq!(graphs.len(), 2);
    assert_eq!(graphs[0].shape("layer4.2_add"), Some(&[1, 2048, 7, 7][..]));
    assert_eq!(graphs[1].shape("layer4.2_add"), Some(&[1, 2048, 5, 6][..]));
    assert_eq!(graphs[1].shape("output"), Some(&[1, 1000][..]));
}

#[test]
fn dynamic_dims_fill_minus_ones_in_input_shape_order() {
    let m = model("bert_layer.onnx");
    let opts = options(&[
        "--input_format=ND",
        "--input_shape=hidden_states:1,-1,768;attention_mask:1,1,1,-1",
        "--dynamic_dims=64,64;128,128",
    ]);
    let graphs = m.infer(&opts).unwrap();
    assert_eq!(graphs.len(), 2);
    let p = "/bert/encoder/layer.0/attention/self";
    for (g, s) in graphs.iter().zip([64, 128]) {
        assert!(g.skipped.is_empty(), "{:?}", g.skipped);
        assert_eq!(g.profile, Profile::Dims(vec![s, s]));
        assert_eq!(g.shape(&format!("{p}/masked")), Some(&[1, 12, s, s][..]));
        assert_eq!(g.shape(&format!("{p}/context_2d")), Some(&[1, s, 768][..]));
    }
}

#[test]
fn dynamic_dims_without_options_stay_minus_one_in_the_ir() {
    // unknown_op.onnx declares x as [batch, 3, 32, 32].
    let m = model("unknown_op.onnx");
    assert_eq!(
        m.graph.inputs[0].shape.as_deref(),
        Some(&[-1, 3, 32, 32][..])
    );
    let g = single(&m, &[]);
    assert_eq!(g.shape("c1"), Some(&[-1, 8, 32, 32][..]));
    assert_eq!(g.shape("c2"), Some(&[-1, 16, 16, 16][..]));
}

#[test]
fn an_unknown_op_is_skipped_and_reported_while_the_rest_is_imported() {
    let m = model("unknown_op.onnx");
    let g = single(&m, &["--input_shape=x:2,3,32,32"]);
    assert_eq!(g.skipped.len(), 1, "{:?}", g.skipped);
    let s = &g.skipped[0];
    assert_eq!(
        (s.node_name.as_str(), s.op_type.as_str()),
        ("fancy", "FancyNorm")
    );
    assert!(s.reason.contains("FancyNorm"), "{}", s.reason);
    // Its output's declared shape ([batch, 8, 32, 32], batch bound by the input) lets the
    // Sigmoid after it be inferred; the other branch is untouched.
    assert_eq!(g.shape("out_a"), Some(&[2, 8, 32, 32][..]));
    assert_eq!(g.shape("out_b"), Some(&[2, 16, 1, 1][..]));
    assert_eq!(g.order.len(), 6);

    // Without a binding for `batch`, the declaration is not static: the Sigmoid is skipped
    // too, with a reason naming the producer.
    let g = single(&m, &[]);
    let names: Vec<&str> = g.skipped.iter().map(|s| s.node_name.as_str()).collect();
    assert_eq!(names, ["fancy", "sigmoid"]);
    assert!(
        g.skipped[1].reason.contains("\"fancy\" was skipped"),
        "{}",
        g.skipped[1].reason
    );
}

#[test]
fn attributes_are_normalised_so_absent_and_default_agree() {
    let m = model("unknown_op.onnx");
    let g = single(&m, &["--input_shape=x:1,3,32,32"]);
    let conv2 = m
        .graph
        .nodes
        .iter()
        .position(|n| n.name == "conv2")
        .unwrap();
    let a = &g.attrs[&conv2];
    // SAME_UPPER on 32 with stride 2 and kernel 3: output 16, one pad row/col at the end.
    assert_eq!(a["pads"], AttrValue::Ints(vec![0, 0, 1, 1]));
    assert!(!a.contains_key("auto_pad"));
    assert_eq!(a["group"], AttrValue::Int(1));
    assert_eq!(a["dilations"], AttrValue::Ints(vec![1, 1]));

    let m = model("bert_layer.onnx");
    let g = single(&m, &[]);
    let softmax = m
        .graph
        .nodes
        .iter()
        .position(|n| n.op_type == "Softmax")
        .unwrap();
    assert_eq!(g.attrs[&softmax]["axis"], AttrValue::Int(3));
}
