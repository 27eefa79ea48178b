//! The folds of `atrous.rs` and `pad.rs` on graphs built here: each leaves the shapes
//! inference gives the unfolded graph (TensorFlow's and ONNX's definitions) unchanged, and
//! nothing folds outside its conditions.

use std::collections::BTreeMap;

use super::*;
use crate::graph::{Attr, ElemType, Model, Node, ValueDecl};
use tunebank_key::{FsReader, ResolvedOptions};

fn node(name: &str, op: &str, inputs: &[&str], attrs: &[(&str, Attr)]) -> Node {
    Node {
        name: name.into(),
        op_type: op.into(),
        domain: String::new(),
        inputs: inputs.iter().map(|s| s.to_string()).collect(),
        outputs: vec![name.into()],
        attrs: attrs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    }
}

fn ints(v: &[i64]) -> Attr {
    Attr::Ints(v.to_vec())
}

/// A graph over input `x` of `shape`, with float weights (dims) and int64 constants (values).
fn graph(
    shape: &[i64],
    nodes: Vec<Node>,
    weights: &[(&str, &[i64])],
    consts: &[(&str, &[i64])],
) -> Graph {
    let mut initializers = BTreeMap::new();
    for (n, d) in weights {
        initializers.insert(
            n.to_string(),
            ConstTensor {
                elem_type: ElemType::FLOAT,
                dims: d.to_vec(),
                ints: None,
                external: false,
            },
        );
    }
    for (n, v) in consts {
        initializers.insert(
            n.to_string(),
            ConstTensor {
                elem_type: ElemType::INT64,
                dims: vec![v.len() as i64],
                ints: Some(v.to_vec()),
                external: false,
            },
        );
    }
    Graph {
        name: "g".into(),
        inputs: vec![ValueDecl {
            name: "x".into(),
            elem_type: ElemType::FLOAT,
            shape: Some(shape.to_vec()),
            dim_params: vec![None; shape.len()],
        }],
        outputs: vec![],
        value_info: BTreeMap::new(),
        initializers,
        nodes,
    }
}

/// The inferred shape of `tensor`.
fn shape(g: &Graph, tensor: &str) -> Vec<i64> {
    let model = Model {
        source: "g".into(),
        ir_version: 8,
        opset: 17,
        producer: "test".into(),
        graph: g.clone(),
        ir_format: None,
    };
    let options = ResolvedOptions::from_args(["--soc_version=Ascend910B2"], &FsReader).unwrap();
    let inferred = model.infer(&options).unwrap().remove(0);
    assert!(inferred.skipped.is_empty(), "{:?}", inferred.skipped);
    inferred.shape(tensor).unwrap().to_vec()
}

fn atrous(stride: i64) -> Graph {
    graph(
        &[1, 8, 16, 16],
        vec![
            node("s2b", "SpaceToBatchND", &["x", "block", "pads"], &[]),
            node(
                "conv",
                "Conv",
                &["s2b", "w"],
                &[
                    ("kernel_shape", ints(&[3, 3])),
                    ("strides", ints(&[stride, stride])),
                    ("pads", ints(&[0; 4])),
                ],
            ),
            node("b2s", "BatchToSpaceND", &["conv", "block", "crops"], &[]),
            node("relu", "Relu", &["b2s"], &[]),
        ],
        &[("w", &[4, 8, 3, 3])],
        &[
            ("block", &[2, 2]),
            ("pads", &[2, 2, 2, 2]),
            ("crops", &[0, 0, 0, 0]),
        ],
    )
}

/// `tf.nn.atrous_conv2d(rate=2, SAME)` on 16×16: SpaceToBatchND (pads 2), a VALID 3×3 conv,
/// BatchToSpaceND give [1,4,16,16]; folded, one Conv with dilations 2 and pads 2 gives the
/// same. A stride-2 convolution between them does not fold.
#[test]
fn a_space_to_batch_convolution_folds_into_a_dilated_one_of_the_same_shape() {
    let mut g = atrous(1);
    let before = shape(&g, "relu");
    assert_eq!(before, [1, 4, 16, 16]);
    assert_eq!(fold_atrous(&mut g), 1);
    let ops: Vec<&str> = g.nodes.iter().map(|n| n.op_type.as_str()).collect();
    assert_eq!(ops, ["Conv", "Relu"]);
    let c = &g.nodes[0];
    assert_eq!((c.inputs[0].as_str(), c.outputs[0].as_str()), ("x", "b2s"));
    assert_eq!(c.attrs["dilations"], ints(&[2, 2]));
    assert_eq!(c.attrs["pads"], ints(&[2, 2, 2, 2]));
    assert_eq!(shape(&g, "relu"), before);
    let mut strided = atrous(2);
    assert_eq!(fold_atrous(&mut strided), 0);
}

/// ResNet's stem: ZeroPadding2D(3) then a 7×7 stride-2 VALID conv on 224×224 is 112×112; the
/// Pad becomes the conv's pads [3,3,3,3]. Written NHWC (Pad, then the input Transpose), the
/// Transpose moves above the Pad first. A Pad of the channels, or a reflecting one, stays.
#[test]
fn a_zero_spatial_pad_becomes_the_convolutions_padding() {
    let conv = |input: &str| {
        node(
            "conv",
            "Conv",
            &[input, "w"],
            &[
                ("kernel_shape", ints(&[7, 7])),
                ("strides", ints(&[2, 2])),
                ("pads", ints(&[0; 4])),
            ],
        )
    };
    let mut g = graph(
        &[1, 3, 224, 224],
        vec![node("pad", "Pad", &["x", "p"], &[]), conv("pad")],
        &[("w", &[64, 3, 7, 7])],
        &[("p", &[0, 0, 3, 3, 0, 0, 3, 3])],
    );
    assert_eq!(shape(&g, "conv"), [1, 64, 112, 112]);
    assert_eq!(fold_pad(&mut g), 1);
    assert_eq!(g.nodes.len(), 1);
    assert_eq!(g.nodes[0].attrs["pads"], ints(&[3, 3, 3, 3]));
    assert_eq!(shape(&g, "conv"), [1, 64, 112, 112]);

    let nhwc = vec![
        node("pad", "Pad", &["x", "p"], &[]),
        node("t", "Transpose", &["pad"], &[("perm", ints(&[0, 3, 1, 2]))]),
        conv("t"),
    ];
    let mut g = graph(
        &[1, 224, 224, 3],
        nhwc,
        &[("w", &[64, 3, 7, 7])],
        &[("p", &[0, 3, 3, 0, 0, 3, 3, 0])],
    );
    assert_eq!(shape(&g, "conv"), [1, 64, 112, 112]);
    assert_eq!(push_transpose_above_pad(&mut g), 1);
    assert_eq!(fold_pad(&mut g), 1);
    let ops: Vec<&str> = g.nodes.iter().map(|n| n.op_type.as_str()).collect();
    assert_eq!(ops, ["Transpose", "Conv"]);
    assert_eq!(g.nodes[1].attrs["pads"], ints(&[3, 3, 3, 3]));
    assert_eq!(shape(&g, "conv"), [1, 64, 112, 112]);

    for (pads, mode, why) in [
        (
            vec![0, 1, 3, 3, 0, 0, 3, 3],
            "constant",
            "the channels padded",
        ),
        (vec![0, 0, 3, 3, 0, 0, 3, 3], "reflect", "a reflecting pad"),
    ] {
        let mut g = graph(
            &[1, 3, 224, 224],
            vec![
                node(
                    "pad",
                    "Pad",
                    &["x", "p"],
                    &[("mode", Attr::Str(mode.into()))],
                ),
                conv("pad"),
            ],
            &[("w", &[64, 3, 7, 7])],
            &[("p", &pads)],
        );
        assert_eq!(fold_pad(&mut g), 0, "{why}");
    }
}

/// A `Relu` between a Transpose and its inverse (TensorFlow's Conv3D activation between the
/// layout transposes) runs on the untransposed tensor: both transposes go, the shape is the
/// same; a pair that is not inverse, a non-element-wise op (`Softmax`, which has an axis) or a
/// transposed tensor read twice cancels nothing.
#[test]
fn a_transpose_pair_around_an_elementwise_op_cancels() {
    let pair = |op: &str, back: &[i64], extra_reader: bool| {
        let mut nodes = vec![
            node(
                "t1",
                "Transpose",
                &["x"],
                &[("perm", ints(&[0, 2, 3, 4, 1]))],
            ),
            node("act", op, &["t1"], &[]),
            node("t2", "Transpose", &["act"], &[("perm", ints(back))]),
            node("out", "Relu", &["t2"], &[]),
        ];
        if extra_reader {
            nodes.push(node("other", "Relu", &["t1"], &[]));
        }
        graph(&[1, 8, 4, 16, 16], nodes, &[], &[])
    };
    let mut g = pair("Relu", &[0, 4, 1, 2, 3], false);
    assert_eq!(shape(&g, "out"), [1, 8, 4, 16, 16]);
    assert_eq!(cancel_transposes_around_elementwise(&mut g), 1);
    let ops: Vec<&str> = g.nodes.iter().map(|n| n.op_type.as_str()).collect();
    assert_eq!(ops, ["Relu", "Relu"]);
    assert_eq!(g.nodes[0].inputs, ["x"]);
    assert_eq!(shape(&g, "out"), [1, 8, 4, 16, 16]);

    for (op, back, extra, why) in [
        ("Relu", &[0, 2, 3, 4, 1][..], false, "not the inverse"),
        ("Softmax", &[0, 4, 1, 2, 3][..], false, "an op with an axis"),
        (
            "Relu",
            &[0, 4, 1, 2, 3][..],
            true,
            "the transposed tensor read twice",
        ),
    ] {
        let mut g = pair(op, back, extra);
        assert_eq!(cancel_transposes_around_elementwise(&mut g), 0, "{why}");
    }
}
