//! MindSpore's training primitives (`grad.rs`) on graphs built as MindSpore 2.x exports a
//! `TrainOneStepCell`: output shapes as MindSpore's documentation and its Ascend passes define
//! them (worked out in the comments), and bad arguments named with node, primitive and
//! argument.

use super::proto::{attr_type as at, AttributeProto, NodeProto, PrimitiveProto, ValueInfoProto};
use super::tests::{
    attr, bytes, constant, float, func, graph, infer, int, node, prim, shape_of, string, tensor,
    tuple,
};
use super::*;

/// The abstract value MindSpore writes on a node (`shape`): one tensor, or a tuple of them.
fn shaped(mut n: NodeProto, outs: &[&[i64]]) -> NodeProto {
    let one = |dims: &[i64]| AttributeProto {
        tensors: vec![tensor("", dims)],
        ..attr("", at::TENSORS)
    };
    let value = if outs.len() == 1 {
        AttributeProto {
            name: Some("shape".into()),
            ..one(outs[0])
        }
    } else {
        AttributeProto {
            values: outs.iter().map(|d| one(d)).collect(),
            ..attr("shape", at::TUPLE)
        }
    };
    n.attribute.push(value);
    n
}

/// A backward convolution primitive as MindSpore writes it (attributes, not inputs).
fn backprop(name: &str, op: &str, mode: &str, pad_list: &[i64], group: i64) -> PrimitiveProto {
    prim(
        name,
        op,
        vec![
            tuple("kernel_size", &[3, 3]),
            string("pad_mode", mode),
            tuple("pad_list", pad_list),
            tuple("stride", &[1, 1, 1, 1]),
            tuple("dilation", &[1, 1, 1, 1]),
            int("group", group),
            string("format", "NCHW"),
        ],
    )
}

/// The second input of the step graphs below: the gradient arriving at a 3×3, pad-1
/// convolution's output.
fn with_dout(mut g: GraphProto, dims: &[i64]) -> GraphProto {
    g.input.push(ValueInfoProto {
        name: Some("main:dout".into()),
        tensor: vec![tensor("", dims)],
    });
    g
}

/// Shapes of the backward primitives, as MindSpore's operator documentation states them: x
/// [2, 3, 8, 8] through a 3×3 convolution (4 filters, pad 1, stride 1) gives [2, 4, 8, 8], so
/// Conv2DBackpropFilter's output is its `filter_size` [4, 3, 3, 3] and Conv2DBackpropInput's
/// its `input_size` [2, 3, 8, 8]; MaxPoolGrad's is x's; a training BatchNorm's y is x's and
/// its saved mean one per channel [4]; Dropout's y is x's and, as MindSpore's Ascend pass
/// `DropoutUnifyMindIR` compiles it, its mask is ceil(2·3·8·8 / 128)·16 = 48 bytes;
/// StridedSliceGrad's is its `shape` argument [2, 4, 8, 8].
#[test]
fn training_primitives_have_mindspores_shapes() {
    let g = with_dout(
        graph(
            "main",
            ("main:x", &[2, 3, 8, 8]),
            &[
                ("main:w", &[4, 3, 3, 3]),
                ("main:g", &[4]),
                ("main:b", &[4]),
            ],
            vec![
                constant("U", attr("", at::UMONAD)),
                constant("fsize", tuple("", &[4, 3, 3, 3])),
                constant("isize", tuple("", &[2, 3, 8, 8])),
                constant("k", tuple("", &[1, 1, 2, 2])),
                constant(
                    "yes",
                    AttributeProto {
                        i: Some(1),
                        ..attr("", at::BOOL)
                    },
                ),
                constant("eps", float("", 1e-3)),
                constant("mom", float("", 0.1)),
                constant("nchw", int("", 0)),
                constant("keep", float("", 0.9)),
                constant("seed", int("", 0)),
                constant("full", tuple("", &[2, 4, 8, 8])),
                constant("begin", tuple("", &[0])),
                constant("end", tuple("", &[1])),
                constant("one", tuple("", &[1])),
                node("REF::Load", &["main:w", "U"], "main:w1"),
                node("REF::Filter", &["main:dout", "main:x", "fsize"], "main:dw"),
                node("REF::Input", &["main:dout", "main:w1", "isize"], "main:dx"),
                node("REF::MaxPool", &["main:x"], "main:y"),
                node(
                    "REF::MaxPoolGrad",
                    &["main:x", "main:y", "main:y"],
                    "main:dpool",
                ),
                shaped(
                    node(
                        "REF::BatchNorm",
                        &[
                            "main:dout",
                            "main:g",
                            "main:b",
                            "main:g",
                            "main:b",
                            "yes",
                            "eps",
                            "mom",
                            "nchw",
                        ],
                        "main:bn",
                    ),
                    &[&[2, 4, 8, 8], &[4], &[4], &[4], &[4]],
                ),
                node("REF::TupleGetItem", &["main:bn", "zero"], "main:bn_y"),
                node("REF::TupleGetItem", &["main:bn", "three"], "main:bn_mean"),
                shaped(
                    node(
                        "REF::Dropout",
                        &["main:x", "keep", "seed", "seed"],
                        "main:drop",
                    ),
                    &[&[2, 3, 8, 8], &[2, 3, 8, 8]],
                ),
                node("REF::TupleGetItem", &["main:drop", "zero"], "main:drop_y"),
                node("REF::TupleGetItem", &["main:drop", "onei"], "main:mask"),
                node(
                    "REF::StridedSliceGrad",
                    &["main:dout", "full", "begin", "end", "one"],
                    "main:dslice",
                ),
                node(
                    "REF::MakeTuple",
                    &[
                        "main:dw",
                        "main:dx",
                        "main:dpool",
                        "main:bn_y",
                        "main:bn_mean",
                        "main:drop_y",
                        "main:mask",
                        "main:dslice",
                    ],
                    "main:out",
                ),
                constant("zero", int("", 0)),
                constant("three", int("", 3)),
                constant("onei", int("", 1)),
            ],
            "main:out",
        ),
        &[2, 4, 8, 8],
    );
    let prims = shape_test_primitives();
    let inferred = infer(&bytes(g, prims, vec![]));
    assert_eq!(shape_of(&inferred, "dw"), [4, 3, 3, 3]);
    assert_eq!(shape_of(&inferred, "dx"), [2, 3, 8, 8]);
    assert_eq!(shape_of(&inferred, "dpool"), [2, 3, 8, 8]);
    assert_eq!(shape_of(&inferred, "bn:0"), [2, 4, 8, 8]);
    assert_eq!(shape_of(&inferred, "bn:3"), [4]);
    assert_eq!(shape_of(&inferred, "drop"), [2, 3, 8, 8]);
    assert_eq!(shape_of(&inferred, "drop/mask"), [48]);
    assert_eq!(shape_of(&inferred, "dslice"), [2, 4, 8, 8]);
}

/// The primitives of `training_primitives_have_mindspores_shapes`' graph.
fn shape_test_primitives() -> Vec<PrimitiveProto> {
    vec![
        prim("Load", "Load", vec![]),
        prim("MakeTuple", "MakeTuple", vec![]),
        func("TupleGetItem", "TupleGetItem"),
        backprop("Filter", "Conv2DBackpropFilter", "PAD", &[1, 1, 1, 1], 1),
        backprop("Input", "Conv2DBackpropInput", "PAD", &[1, 1, 1, 1], 1),
        prim(
            "MaxPool",
            "MaxPool",
            vec![
                tuple("kernel_size", &[1, 1, 2, 2]),
                tuple("strides", &[1, 1, 2, 2]),
                string("pad_mode", "VALID"),
            ],
        ),
        prim(
            "MaxPoolGrad",
            "MaxPoolGrad",
            vec![
                tuple("kernel_size", &[1, 1, 2, 2]),
                tuple("strides", &[1, 1, 2, 2]),
                string("pad_mode", "VALID"),
                string("data_format", "NCHW"),
            ],
        ),
        func("BatchNorm", "BatchNorm"),
        func("Dropout", "Dropout"),
        prim(
            "StridedSliceGrad",
            "StridedSliceGrad",
            vec![int("begin_mask", 0)],
        ),
    ]
}

/// Bad arguments of the training primitives are named with node, primitive and argument: a
/// filter size of three values, an undefined pad mode, a keep probability above 1.
#[test]
fn bad_training_arguments_are_named() {
    let one = |nodes: Vec<NodeProto>, prims: Vec<PrimitiveProto>| {
        load_mindir_bytes(
            &bytes(
                with_dout(
                    graph("main", ("main:x", &[2, 3, 8, 8]), &[], nodes, "main:y"),
                    &[2, 4, 8, 8],
                ),
                prims,
                vec![],
            ),
            "step.mindir",
        )
        .unwrap_err()
        .to_string()
    };
    let e = one(
        vec![
            constant("fsize", tuple("", &[4, 3, 3])),
            node("REF::Filter", &["main:dout", "main:x", "fsize"], "main:y"),
        ],
        vec![backprop(
            "Filter",
            "Conv2DBackpropFilter",
            "PAD",
            &[1; 4],
            1,
        )],
    );
    assert!(
        e.contains("step.mindir")
            && e.contains("Conv2DBackpropFilter")
            && e.contains("argument 2")
            && e.contains("the filter's O, C, H, W"),
        "{e}"
    );
    let e = one(
        vec![
            constant("fsize", tuple("", &[4, 3, 3, 3])),
            node("REF::Filter", &["main:dout", "main:x", "fsize"], "main:y"),
        ],
        vec![backprop(
            "Filter",
            "Conv2DBackpropFilter",
            "CIRCULAR",
            &[1; 4],
            1,
        )],
    );
    assert!(
        e.contains("pad_mode \"CIRCULAR\"") && e.contains("expected pad, same or valid"),
        "{e}"
    );
    let e = one(
        vec![
            constant("keep", float("", 1.5)),
            constant("seed", int("", 0)),
            shaped(
                node(
                    "REF::Dropout",
                    &["main:x", "keep", "seed", "seed"],
                    "main:y",
                ),
                &[&[2, 3, 8, 8], &[2, 3, 8, 8]],
            ),
        ],
        vec![func("Dropout", "Dropout")],
    );
    assert!(
        e.contains("Dropout")
            && e.contains("argument 1")
            && e.contains("a keep probability in (0, 1]"),
        "{e}"
    );
}

/// A two-layer step written as MindSpore writes it — the first layer's weight gradient
/// before the second's — is scheduled breadth-first: the second layer's gradient, ready first,
/// comes first; an inference graph keeps the file's order.
#[test]
fn a_steps_gradients_come_in_breadth_first_order() {
    let g = with_dout(
        graph(
            "main",
            ("main:x", &[2, 3, 8, 8]),
            &[
                ("main:w1", &[4, 3, 3, 3]),
                ("main:w2", &[4, 4, 3, 3]),
                ("main:m1", &[4, 3, 3, 3]),
                ("main:m2", &[4, 4, 3, 3]),
            ],
            vec![
                constant("U", attr("", at::UMONAD)),
                constant("f1", tuple("", &[4, 3, 3, 3])),
                constant("f2", tuple("", &[4, 4, 3, 3])),
                constant("i1", tuple("", &[2, 4, 8, 8])),
                constant("lr", float("", 0.1)),
                node("REF::Load", &["main:w2", "U"], "main:w2r"),
                // The first layer's gradient needs the input gradient of the second.
                node("REF::Input", &["main:dout", "main:w2r", "i1"], "main:d1"),
                node("REF::Filter1", &["main:d1", "main:x", "f1"], "main:g1"),
                node("REF::Filter2", &["main:dout", "main:x2", "f2"], "main:g2"),
                node(
                    "REF::ApplyMomentum",
                    &["main:w1", "main:m1", "lr", "main:g1", "lr"],
                    "main:u1",
                ),
                node(
                    "REF::ApplyMomentum",
                    &["main:w2", "main:m2", "lr", "main:g2", "lr"],
                    "main:u2",
                ),
                node("REF::MakeTuple", &["main:u1", "main:u2"], "main:y"),
            ],
            "main:y",
        ),
        &[2, 4, 8, 8],
    );
    let mut g = g;
    g.input.push(ValueInfoProto {
        name: Some("main:x2".into()),
        tensor: vec![tensor("", &[2, 4, 8, 8])],
    });
    let prims = vec![
        prim("Load", "Load", vec![]),
        prim("MakeTuple", "MakeTuple", vec![]),
        backprop("Input", "Conv2DBackpropInput", "PAD", &[1; 4], 1),
        backprop("Filter1", "Conv2DBackpropFilter", "PAD", &[1; 4], 1),
        backprop("Filter2", "Conv2DBackpropFilter", "PAD", &[1; 4], 1),
        prim("ApplyMomentum", "ApplyMomentum", vec![]),
    ];
    let model = load_mindir_bytes(&bytes(g, prims, vec![]), "step.mindir").unwrap();
    let at = |name: &str| {
        model
            .graph
            .nodes
            .iter()
            .position(|n| n.name == name)
            .unwrap()
    };
    assert!(
        at("g2") < at("g1"),
        "{:?}",
        model
            .graph
            .nodes
            .iter()
            .map(|n| &n.name)
            .collect::<Vec<_>>()
    );
    assert!(at("d1") < at("g1") && at("g1") < at("u1"));
}

/// `nn.SGD`'s primitive, SGD (parameters, gradient, learning rate, accum, momentum, stat; its
/// attributes `nesterov`, `dampening`, `weight_decay`), is CANN's `SGD`: the updated
/// parameters shaped as themselves, the gradient its input 1 (what GDAT reads), the attributes
/// kept under CANN's names.
#[test]
fn sgd_is_canns_sgd_update() {
    let g = graph(
        "main",
        ("main:grad", &[4, 8]),
        &[
            ("main:w", &[4, 8]),
            ("main:acc", &[4, 8]),
            ("main:stat", &[4, 8]),
        ],
        vec![
            constant("lr", float("", 0.1)),
            node(
                "REF::SGD",
                &["main:w", "main:grad", "lr", "main:acc", "lr", "main:stat"],
                "main:upd",
            ),
        ],
        "main:upd",
    );
    let prims = vec![prim(
        "SGD",
        "SGD",
        vec![
            AttributeProto {
                i: Some(1),
                ..attr("nesterov", at::BOOL)
            },
            float("dampening", 0.0),
            float("weight_decay", 0.0),
        ],
    )];
    let b = bytes(g, prims, vec![]);
    assert_eq!(shape_of(&infer(&b), "upd:0"), [4, 8]);
    let model = load_mindir_bytes(&b, "step.mindir").unwrap();
    let n = model
        .graph
        .nodes
        .iter()
        .find(|n| n.op_type == "SGD")
        .unwrap();
    assert_eq!(n.inputs[1], "grad");
    assert_eq!(n.attrs["nesterov"], crate::Attr::Int(1));
    assert!(n.attrs.contains_key("dampening") && n.attrs.contains_key("weight_decay"));
    assert_eq!(
        crate::optimizer::apply_op("SGD").map(|a| (a.state, a.grad)),
        Some((1, 1))
    );
}
