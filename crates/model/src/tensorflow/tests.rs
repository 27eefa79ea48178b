//! The TensorFlow importer on small graphs built here: NHWC ops in NCHW with one transpose at
//! the input, axis remapping, the BiasAdd fold, and bad input.

use std::collections::HashMap;

use prost::Message as _;

use super::proto::{AttrValue, Dim, GraphDef, ListValue, NodeDef, TensorProto, TensorShapeProto};
use super::*;
use tunebank_key::{FsReader, ResolvedOptions};

pub(super) fn shape(d: &[i64]) -> TensorShapeProto {
    TensorShapeProto {
        dim: d
            .iter()
            .map(|&size| Dim {
                size,
                name: String::new(),
            })
            .collect(),
        unknown_rank: false,
    }
}

pub(super) fn node(
    name: &str,
    op: &str,
    inputs: &[&str],
    attrs: Vec<(&str, AttrValue)>,
) -> NodeDef {
    NodeDef {
        name: name.into(),
        op: op.into(),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        attr: attrs
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect::<HashMap<_, _>>(),
    }
}

pub(super) fn s(v: &str) -> AttrValue {
    AttrValue {
        s: Some(v.as_bytes().to_vec()),
        ..Default::default()
    }
}

pub(super) fn ints(v: &[i64]) -> AttrValue {
    AttrValue {
        list: Some(ListValue {
            i: v.to_vec(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A float constant with dims only (weights stripped), or an int32 one with values.
pub(super) fn konst(name: &str, dims: &[i64], values: Option<&[i32]>) -> NodeDef {
    let t = TensorProto {
        dtype: if values.is_some() { 3 } else { 1 },
        tensor_shape: Some(shape(dims)),
        int_val: values.map(<[i32]>::to_vec).unwrap_or_default(),
        ..Default::default()
    };
    node(
        name,
        "Const",
        &[],
        vec![(
            "value",
            AttrValue {
                tensor: Some(t),
                ..Default::default()
            },
        )],
    )
}

fn net() -> Vec<u8> {
    let conv = |name: &str, x: &str, w: &str| {
        node(
            name,
            "Conv2D",
            &[x, w],
            vec![("strides", ints(&[1, 1, 1, 1])), ("padding", s("SAME"))],
        )
    };
    GraphDef {
        node: vec![
            node(
                "input",
                "Placeholder",
                &[],
                vec![
                    (
                        "dtype",
                        AttrValue {
                            r#type: Some(1),
                            ..Default::default()
                        },
                    ),
                    (
                        "shape",
                        AttrValue {
                            shape: Some(shape(&[1, 8, 8, 3])),
                            ..Default::default()
                        },
                    ),
                ],
            ),
            konst("w1", &[3, 3, 3, 16], None),
            konst("b1", &[16], None),
            conv("conv1", "input", "w1"),
            node("bias1", "BiasAdd", &["conv1", "b1", "^input"], vec![]),
            node("relu1", "Relu", &["bias1"], vec![]),
            konst("wd", &[3, 3, 16, 2], None),
            node(
                "dw",
                "DepthwiseConv2dNative",
                &["relu1", "wd"],
                vec![("strides", ints(&[1, 1, 1, 1])), ("padding", s("VALID"))],
            ),
            konst("axis", &[], Some(&[-1])),
            node("cat", "ConcatV2", &["dw", "dw", "axis"], vec![]),
            konst("hw", &[2], Some(&[1, 2])),
            node("gap", "Mean", &["cat:0", "hw"], vec![]),
            konst("fcw", &[64, 10], None),
            node("fc", "MatMul", &["gap", "fcw"], vec![]),
            node("prob", "Softmax", &["fc"], vec![]),
            node("odd", "FancyOp", &["relu1"], vec![]),
        ],
        versions: None,
    }
    .encode_to_vec()
}

#[test]
fn nhwc_ops_run_in_nchw_with_one_transpose_and_remapped_axes() {
    let model = load_tensorflow_bytes(&net(), "t.pb").unwrap();
    let ops: Vec<(&str, &str)> = model
        .graph
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.op_type.as_str()))
        .collect();
    assert_eq!(
        ops,
        [
            ("input/to_nchw", "Transpose"),
            ("conv1", "Conv"),
            ("relu1", "Relu"),
            ("dw", "Conv"),
            ("cat", "Concat"),
            ("gap", "ReduceMean"),
            ("fc", "MatMul"),
            ("prob", "Softmax"),
            ("relu1/to_nhwc", "Transpose"),
            ("odd", "FancyOp"),
        ],
        "BiasAdd folds into conv1; the control edge is ignored"
    );
    let options = ResolvedOptions::from_args(["--soc_version=Ascend910B2"], &FsReader).unwrap();
    let g = model.infer(&options).unwrap().remove(0);
    assert_eq!(
        g.tensors["conv1"].shape,
        [1, 16, 8, 8],
        "SAME keeps 8x8; NCHW in the IR"
    );
    assert_eq!(
        g.tensors["dw"].shape,
        [1, 32, 6, 6],
        "depthwise: 16 channels x 2, VALID"
    );
    assert_eq!(
        g.tensors["cat"].shape,
        [1, 64, 6, 6],
        "axis -1 (C in NHWC) is axis 1 in NCHW"
    );
    assert_eq!(
        g.tensors["gap"].shape,
        [1, 64],
        "Mean over H, W leaves [N, C] in either layout"
    );
    assert_eq!(g.tensors["prob"].shape, [1, 10]);
    assert_eq!(
        model.graph.initializers["conv1/weight"].dims,
        [16, 3, 3, 3],
        "HWIO → OIHW"
    );
    assert_eq!(
        model.graph.nodes[1].inputs[2], "b1",
        "the bias is the conv's third input"
    );
    assert!(
        g.skipped
            .iter()
            .any(|s| s.node_name == "odd" && s.reason.contains("tensorflow")),
        "{:?}",
        g.skipped
    );
}

#[test]
fn bad_graphs_are_named_errors() {
    let bytes = net();
    let e = load_tensorflow_bytes(&bytes[..bytes.len() / 2], "t.pb").unwrap_err();
    assert!(matches!(e, ModelError::TruncatedFile { .. }), "{e}");
    let e = load_tensorflow_bytes(b"\x08\x07garbage", "t.pb").unwrap_err();
    assert!(
        matches!(e, ModelError::Malformed { .. }) && e.to_string().contains("t.pb"),
        "{e}"
    );
    assert!(load_tensorflow_bytes(b"", "t.pb")
        .unwrap_err()
        .to_string()
        .contains("empty"));
    let dangling = GraphDef {
        node: vec![node("r", "Relu", &["missing"], vec![])],
        versions: None,
    }
    .encode_to_vec();
    let e = load_tensorflow_bytes(&dangling, "t.pb").unwrap_err();
    assert!(
        e.to_string()
            .contains("node \"r\" (Relu): input \"missing\" names no node"),
        "{e}"
    );
    let bad_format = GraphDef {
        node: vec![
            node("x", "Placeholder", &[], vec![]),
            node(
                "p",
                "MaxPool",
                &["x"],
                vec![
                    ("data_format", s("NDHWC")),
                    ("ksize", ints(&[1, 2, 2, 1])),
                    ("strides", ints(&[1, 2, 2, 1])),
                ],
            ),
        ],
        versions: None,
    }
    .encode_to_vec();
    let e = load_tensorflow_bytes(&bad_format, "t.pb").unwrap_err();
    assert!(
        e.to_string()
            .contains("data_format \"NDHWC\": expected NHWC or NCHW"),
        "{e}"
    );
}

pub(super) fn placeholder(name: &str, dims: &[i64]) -> NodeDef {
    node(
        name,
        "Placeholder",
        &[],
        vec![
            (
                "dtype",
                AttrValue {
                    r#type: Some(1),
                    ..Default::default()
                },
            ),
            (
                "shape",
                AttrValue {
                    shape: Some(shape(dims)),
                    ..Default::default()
                },
            ),
        ],
    )
}

/// A hand-made training step: a variable, a convolution and its two backprops (sizes from
/// ShapeN), a ReLU gradient, batch norm in training mode, shape arithmetic, an SGD update and
/// an op the importer does not know.
fn step() -> Vec<u8> {
    let same = || vec![("strides", ints(&[1, 1, 1, 1])), ("padding", s("SAME"))];
    let var = node(
        "w/resource",
        "VarHandleOp",
        &[],
        vec![
            (
                "shape",
                AttrValue {
                    shape: Some(shape(&[3, 3, 3, 4])),
                    ..Default::default()
                },
            ),
            ("shared_name", s("conv/kernel")),
        ],
    );
    let training = AttrValue {
        b: Some(true),
        ..Default::default()
    };
    GraphDef {
        node: vec![
            placeholder("input", &[2, 8, 8, 3]),
            placeholder("dy", &[2, 8, 8, 4]),
            var,
            node("w", "ReadVariableOp", &["w/resource"], vec![]),
            node("conv", "Conv2D", &["input", "w"], same()),
            node("relu", "Relu", &["conv"], vec![]),
            node("rg", "ReluGrad", &["dy", "relu"], vec![]),
            node("sn", "ShapeN", &["input", "w"], vec![]),
            node(
                "dw",
                "Conv2DBackpropFilter",
                &["input", "sn:1", "rg"],
                same(),
            ),
            node("dx", "Conv2DBackpropInput", &["sn", "w", "rg"], same()),
            konst("scale", &[4], None),
            konst("offset", &[4], None),
            konst("empty", &[0], None),
            node(
                "bn",
                "FusedBatchNormV3",
                &["conv", "scale", "offset", "empty", "empty"],
                vec![("is_training", training)],
            ),
            konst("two", &[], Some(&[2])),
            konst("three", &[], Some(&[3])),
            node("packed", "Pack", &["two", "three"], vec![]),
            konst("begin", &[1], Some(&[0])),
            konst("size", &[1], Some(&[1])),
            node("first", "Slice", &["packed", "begin", "size"], vec![]),
            konst("lr", &[], None),
            node(
                "sgd",
                "ResourceApplyGradientDescent",
                &["w/resource", "lr", "dw"],
                vec![],
            ),
            node("odd", "FooGrad", &["rg"], vec![]),
        ],
        versions: None,
    }
    .encode_to_vec()
}

#[test]
fn a_training_step_imports_as_ascend_ir_training_ops() {
    let model = load_tensorflow_bytes(&step(), "step.pb").unwrap();
    let op = |name: &str| {
        model
            .graph
            .nodes
            .iter()
            .find(|n| n.name == name)
            .map(|n| n.op_type.as_str())
    };
    assert_eq!(op("dw"), Some("Conv2DBackpropFilter"));
    assert_eq!(op("dx"), Some("Conv2DBackpropInput"));
    assert_eq!(op("rg"), Some("ReluGrad"));
    assert_eq!(op("bn/BNTrainingReduce"), Some("BNTrainingReduce"));
    assert_eq!(op("bn"), Some("BNTrainingUpdate"));
    assert_eq!(op("sgd"), Some("ApplyGradientDescent"));
    let init = &model.graph.initializers;
    assert_eq!(
        init["conv/kernel"].dims,
        [3, 3, 3, 4],
        "named by shared_name"
    );
    assert_eq!(
        init["packed"].ints.as_deref(),
        Some(&[2, 3][..]),
        "Pack folded"
    );
    assert_eq!(
        init["first"].ints.as_deref(),
        Some(&[2][..]),
        "Slice folded"
    );
    assert_eq!(
        init["sn:1"].ints.as_deref(),
        Some(&[3, 3, 3, 4][..]),
        "the variable's shape is known at import"
    );
    assert_eq!(op("sn"), Some("Shape"), "the placeholder's is inferred");

    let options = ResolvedOptions::from_args(["--soc_version=Ascend910B2"], &FsReader).unwrap();
    let g = model.infer(&options).unwrap().remove(0);
    assert_eq!(g.tensors["dw"].shape, [4, 3, 3, 3], "HWIO sizes → OIHW");
    assert_eq!(g.tensors["dx"].shape, [2, 3, 8, 8], "NHWC sizes → NCHW");
    assert_eq!(g.tensors["bn/BNTrainingReduce:1"].shape, [4]);
    assert_eq!(
        g.tensors["sgd"].shape,
        [3, 3, 3, 4],
        "the variable, updated"
    );
    let dw = model
        .graph
        .nodes
        .iter()
        .position(|n| n.name == "dw")
        .unwrap();
    let a = &g.attrs[&dw];
    assert_eq!(
        a.get("pads"),
        Some(&tunebank_key::AttrValue::Ints(vec![1, 1, 1, 1])),
        "SAME as explicit pads: {a:?}"
    );
    assert!(!a.contains_key("padding"), "{a:?}");
    let dx = model
        .graph
        .nodes
        .iter()
        .position(|n| n.name == "dx")
        .unwrap();
    assert!(!g.attrs[&dx].contains_key("size_format"));
    assert!(
        g.skipped
            .iter()
            .any(|s| s.node_name == "odd" && s.reason.contains("FooGrad")),
        "an unknown op is reported by name: {:?}",
        g.skipped
    );
    assert_eq!(g.skipped.len(), 1, "{:?}", g.skipped);
}

#[test]
fn a_backprop_whose_gradient_does_not_fit_is_skipped_with_the_reason() {
    let mut g = GraphDef::decode(&step()[..]).unwrap();
    // The gradient of a stride-2 convolution is 4x4, not 8x8.
    for n in &mut g.node {
        if n.name == "dw" {
            n.attr.insert("strides".into(), ints(&[1, 2, 2, 1]));
        }
    }
    let model = load_tensorflow_bytes(&g.encode_to_vec(), "step.pb").unwrap();
    let options = ResolvedOptions::from_args(["--soc_version=Ascend910B2"], &FsReader).unwrap();
    let inferred = model.infer(&options).unwrap().remove(0);
    let dw = inferred
        .skipped
        .iter()
        .find(|s| s.node_name == "dw")
        .unwrap();
    assert!(
        dw.reason.contains("Conv2DBackpropFilter") && dw.reason.contains("expected [2, 4, 4, 4]"),
        "{}",
        dw.reason
    );
}
