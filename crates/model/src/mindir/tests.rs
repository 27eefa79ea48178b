//! MindIR graphs built here as MindSpore 2.x writes them (primitives by `REF::`, arguments of
//! primitive functions as `Constant` inputs, `Load`/`UpdateState`/`Depend` plumbing): shapes
//! as MindSpore's documentation defines them (worked out in the comments), the bias fold,
//! graph calls, and bad input named with node, primitive and argument.

use prost::Message as _;

use super::proto::{
    attr_type as at, AttributeProto, GraphProto, ModelProto, NodeProto, PrimitiveProto,
    TensorProto, ValueInfoProto,
};
use super::*;
use tunebank_key::{FsReader, ResolvedOptions};

pub(super) fn attr(name: &str, ty: i32) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(ty),
        ..Default::default()
    }
}

pub(super) fn int(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        i: Some(v),
        ..attr(name, at::INT64)
    }
}

pub(super) fn float(name: &str, v: f32) -> AttributeProto {
    AttributeProto {
        f: Some(v),
        ..attr(name, at::FLOAT)
    }
}

pub(super) fn string(name: &str, v: &str) -> AttributeProto {
    AttributeProto {
        s: Some(v.as_bytes().to_vec()),
        ..attr(name, at::STRING)
    }
}

/// A tuple of integers as MindSpore writes it: one INT64 item per value, in `ints`.
pub(super) fn tuple(name: &str, vs: &[i64]) -> AttributeProto {
    AttributeProto {
        values: vs
            .iter()
            .map(|&v| AttributeProto {
                ints: vec![v],
                ..attr("", at::INT64)
            })
            .collect(),
        ..attr(name, at::TUPLE)
    }
}

pub(super) fn tensor(name: &str, dims: &[i64]) -> TensorProto {
    TensorProto {
        dims: dims.to_vec(),
        data_type: Some(1),
        name: Some(name.into()),
        ..Default::default()
    }
}

pub(super) fn node(op: &str, inputs: &[&str], out: &str) -> NodeProto {
    NodeProto {
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec![out.into()],
        name: Some(out.into()),
        op_type: Some(op.into()),
        ..Default::default()
    }
}

pub(super) fn constant(out: &str, mut value: AttributeProto) -> NodeProto {
    value.name = Some("value".into());
    NodeProto {
        attribute: vec![value],
        ..node("Constant", &[], out)
    }
}

pub(super) fn prim(name: &str, op: &str, attrs: Vec<AttributeProto>) -> PrimitiveProto {
    PrimitiveProto {
        name: Some(name.into()),
        op_type: Some(op.into()),
        attribute: attrs,
        prim_type: Some(1),
        ..Default::default()
    }
}

/// A primitive function (its arguments are node inputs).
pub(super) fn func(name: &str, op: &str) -> PrimitiveProto {
    PrimitiveProto {
        prim_type: Some(2),
        ..prim(name, op, vec![])
    }
}

pub(super) fn graph(
    name: &str,
    input: (&str, &[i64]),
    params: &[(&str, &[i64])],
    nodes: Vec<NodeProto>,
    out: &str,
) -> GraphProto {
    GraphProto {
        name: Some(name.into()),
        input: vec![ValueInfoProto {
            name: Some(input.0.into()),
            tensor: vec![tensor("", input.1)],
        }],
        parameter: params.iter().map(|(n, d)| tensor(n, d)).collect(),
        output: vec![ValueInfoProto {
            name: Some(out.into()),
            tensor: vec![],
        }],
        node: nodes,
    }
}

pub(super) fn bytes(
    g: GraphProto,
    primitives: Vec<PrimitiveProto>,
    functions: Vec<GraphProto>,
) -> Vec<u8> {
    ModelProto {
        ir_version: Some("1.1".into()),
        producer_name: Some("MindSpore".into()),
        producer_version: Some("2.10.0".into()),
        graph: Some(g),
        functions,
        primitives,
        mind_ir_version: Some(3),
    }
    .encode_to_vec()
}

pub(super) fn infer(b: &[u8]) -> crate::InferredGraph {
    let model = load_mindir_bytes(b, "m.mindir").unwrap();
    let options = ResolvedOptions::from_args(["--soc_version=Ascend910B2"], &FsReader).unwrap();
    model.infer(&options).unwrap().remove(0)
}

pub(super) fn shape_of<'g>(g: &'g crate::InferredGraph, t: &str) -> &'g [i64] {
    g.shape(t)
        .unwrap_or_else(|| panic!("{t} not inferred; skipped {:?}", g.skipped))
}

fn conv_prim(name: &str, mode: &str, pad_list: &[i64]) -> PrimitiveProto {
    prim(
        name,
        "Conv2D",
        vec![
            tuple("kernel_size", &[3, 3]),
            int("out_channel", 8),
            string("pad_mode", mode),
            tuple("pad_list", pad_list),
            tuple("stride", &[1, 1, 2, 2]),
            tuple("dilation", &[1, 1, 1, 1]),
            int("group", 1),
            string("format", "NCHW"),
        ],
    )
}

/// MindSpore's Conv2D output size (its `nn.Conv2d` documentation), H = 16, k = 3, stride 2:
/// `same` ceil(16 / 2) = 8; `valid` ceil((16 - (3 - 1)) / 2) = 7; `pad` with pad_list
/// (top 2, bottom 1, left 0, right 0): floor((16 + 2 + 1 - 3) / 2) + 1 = 9 rows and
/// floor((16 - 3) / 2) + 1 = 7 columns — pad_list is read as top, bottom, left, right.
#[test]
fn conv_shapes_follow_mindspores_formulas_for_each_pad_mode() {
    let g = graph(
        "main",
        ("main:x", &[1, 3, 16, 16]),
        &[("main:w", &[8, 3, 3, 3])],
        vec![
            constant("U", attr("", at::UMONAD)),
            node("REF::Load", &["main:w", "U"], "main:w1"),
            node("REF::Same", &["main:x", "main:w1"], "main:same"),
            node("REF::Valid", &["main:x", "main:w1"], "main:valid"),
            node("REF::Pad", &["main:x", "main:w1"], "main:pad"),
            node(
                "REF::MakeTuple",
                &["main:same", "main:valid", "main:pad"],
                "main:out",
            ),
        ],
        "main:out",
    );
    let prims = vec![
        prim("Load", "Load", vec![]),
        prim("MakeTuple", "MakeTuple", vec![]),
        conv_prim("Same", "same", &[0, 0, 0, 0]),
        conv_prim("Valid", "valid", &[0, 0, 0, 0]),
        conv_prim("Pad", "pad", &[2, 1, 0, 0]),
    ];
    let inferred = infer(&bytes(g, prims, vec![]));
    assert_eq!(shape_of(&inferred, "same"), [1, 8, 8, 8]);
    assert_eq!(shape_of(&inferred, "valid"), [1, 8, 7, 7]);
    assert_eq!(shape_of(&inferred, "pad"), [1, 8, 9, 7]);
}

/// A primitive-function pipeline as MindSpore 2.x exports `nn.Dense` → BatchNorm-free MLP
/// head: MatMul(x, w, False, True) → BiasAdd → Softmax(axis=(-1,)); AvgPool with its
/// arguments as inputs (kernel 2, stride 2, VALID = 2, NCHW = 0): 8×8 → 4×4.
#[test]
fn primitive_functions_read_their_arguments_from_inputs() {
    let g = graph(
        "main",
        ("main:x", &[2, 4, 8, 8]),
        &[("main:w", &[10, 64]), ("main:b", &[10])],
        vec![
            constant("k", tuple("", &[2, 2])),
            constant("valid", int("", 2)),
            constant("nchw", int("", 0)),
            constant(
                "no",
                AttributeProto {
                    i: Some(0),
                    ..attr("", at::BOOL)
                },
            ),
            constant(
                "yes",
                AttributeProto {
                    i: Some(1),
                    ..attr("", at::BOOL)
                },
            ),
            constant("shape", tuple("", &[2, 64])),
            constant("axis", tuple("", &[-1])),
            node(
                "REF::AvgPool",
                &["main:x", "k", "k", "valid", "nchw"],
                "main:pool",
            ),
            node("REF::Reshape", &["main:pool", "shape"], "main:flat"),
            node(
                "REF::MatMul",
                &["main:flat", "main:w", "no", "yes"],
                "main:mm",
            ),
            node("REF::BiasAdd", &["main:mm", "main:b", "nchw"], "main:fc"),
            node("REF::Softmax", &["main:fc", "axis"], "main:prob"),
        ],
        "main:prob",
    );
    let prims = ["AvgPool", "Reshape", "MatMul", "BiasAdd", "Softmax"]
        .iter()
        .map(|p| func(p, p))
        .collect();
    let b = bytes(g, prims, vec![]);
    let inferred = infer(&b);
    assert_eq!(shape_of(&inferred, "pool"), [2, 4, 4, 4]);
    assert_eq!(shape_of(&inferred, "mm"), [2, 10]);
    assert_eq!(shape_of(&inferred, "prob"), [2, 10]);
    // The BiasAdd became the Gemm's C (its only reader), as MindSpore's ONNX export writes it.
    let model = load_mindir_bytes(&b, "m.mindir").unwrap();
    let gemm = model
        .graph
        .nodes
        .iter()
        .find(|n| n.op_type == "Gemm")
        .unwrap();
    assert_eq!(gemm.inputs, ["flat", "w", "b"]);
    assert_eq!(gemm.attrs.get("transB"), Some(&Attr::Int(1)));
    assert!(!model.graph.nodes.iter().any(|n| n.op_type == "Add"));
}

/// A BiasAdd whose convolution is also read elsewhere stays an `Add` with a `[C, 1, 1]` bias.
#[test]
fn a_bias_add_folds_only_into_a_convolution_it_alone_reads() {
    let conv = node("REF::Conv", &["main:x", "main:w"], "main:conv");
    let mut bias = node("REF::BiasAdd", &["main:conv", "main:b"], "main:biased");
    bias.attribute.push(AttributeProto {
        tensors: vec![tensor("", &[1, 8, 7, 7])],
        ..attr("shape", at::TENSORS)
    });
    let g = graph(
        "main",
        ("main:x", &[1, 3, 16, 16]),
        &[("main:w", &[8, 3, 3, 3]), ("main:b", &[8])],
        vec![
            conv,
            bias,
            node("REF::ReLU", &["main:conv"], "main:relu"),
            node("REF::Add", &["main:biased", "main:relu"], "main:sum"),
        ],
        "main:sum",
    );
    let prims = vec![
        conv_prim("Conv", "valid", &[0; 4]),
        prim("BiasAdd", "BiasAdd", vec![string("format", "NCHW")]),
        func("ReLU", "ReLU"),
        func("Add", "Add"),
    ];
    let b = bytes(g, prims, vec![]);
    let model = load_mindir_bytes(&b, "m.mindir").unwrap();
    let conv = model
        .graph
        .nodes
        .iter()
        .find(|n| n.op_type == "Conv")
        .unwrap();
    assert_eq!(conv.inputs.len(), 2, "{conv:?}");
    assert_eq!(infer(&b).shape("sum"), Some(&[1, 8, 7, 7][..]));
    assert_eq!(model.graph.initializers["biased/bias"].dims, [8, 1, 1]);
}

/// A node that calls a graph of `functions` is inlined, its parameters bound to the call's
/// arguments; a graph that calls itself stops at the depth limit with an error, not a
/// stack overflow.
#[test]
fn graph_calls_are_inlined_and_recursion_is_bounded() {
    let cell = GraphProto {
        name: Some("cell".into()),
        input: vec![ValueInfoProto {
            name: Some("cell:a".into()),
            tensor: vec![],
        }],
        output: vec![ValueInfoProto {
            name: Some("cell:r".into()),
            tensor: vec![],
        }],
        node: vec![node("REF::ReLU", &["cell:a"], "cell:r")],
        parameter: vec![],
    };
    let g = graph(
        "main",
        ("main:x", &[1, 4, 8, 8]),
        &[],
        vec![
            node("REF::cell", &["main:x"], "main:c1"),
            node("REF::cell", &["main:c1"], "main:c2"),
        ],
        "main:c2",
    );
    let b = bytes(g.clone(), vec![func("ReLU", "ReLU")], vec![cell.clone()]);
    let model = load_mindir_bytes(&b, "m.mindir").unwrap();
    let relus: Vec<&str> = model.graph.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(relus, ["c1/r", "c2/r"]);
    assert_eq!(infer(&b).shape("c2/r"), Some(&[1, 4, 8, 8][..]));

    let mut selfish = cell;
    selfish.node = vec![node("REF::cell", &["cell:a"], "cell:r")];
    let e = load_mindir_bytes(&bytes(g, vec![], vec![selfish]), "m.mindir")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("m.mindir") && e.contains("graph calls nest deeper than 16"),
        "{e}"
    );
}

/// An unmapped primitive is kept as a `mindspore`-domain node: inference names it and what it
/// cuts off, and the ops that do not depend on it are still imported.
#[test]
fn an_unmapped_primitive_cuts_off_only_what_depends_on_it() {
    let g = graph(
        "main",
        ("main:x", &[1, 4, 8, 8]),
        &[],
        vec![
            node("REF::ReLU", &["main:x"], "main:a"),
            node("REF::Mystery", &["main:x"], "main:m"),
            node("REF::Sigmoid", &["main:m"], "main:b"),
            node("REF::MakeTuple", &["main:a", "main:b"], "main:out"),
        ],
        "main:out",
    );
    let prims = vec![
        func("ReLU", "ReLU"),
        func("Sigmoid", "Sigmoid"),
        func("Mystery", "MysteryOp"),
        prim("MakeTuple", "MakeTuple", vec![]),
    ];
    let inferred = infer(&bytes(g, prims, vec![]));
    assert_eq!(shape_of(&inferred, "a"), [1, 4, 8, 8]);
    let skipped: Vec<(&str, &str, Option<&str>)> = inferred
        .skipped
        .iter()
        .map(|s| (s.node_name.as_str(), s.op_type.as_str(), s.cause.as_deref()))
        .collect();
    assert_eq!(
        skipped,
        [("m", "MysteryOp", None), ("b", "Sigmoid", Some("m"))]
    );
    assert!(
        inferred.skipped[0].reason.contains("mindspore"),
        "{:?}",
        inferred.skipped
    );
}

/// Bad files and bad graphs are refused naming the file, the node, the primitive and the
/// argument; nothing panics.
#[test]
fn bad_input_is_named() {
    let err = |b: &[u8]| load_mindir_bytes(b, "bad.mindir").unwrap_err().to_string();
    assert!(err(b"").contains("the file is empty"), "{}", err(b""));
    assert!(err(b"\xff\xff\xff").contains("not a protobuf mind_ir.ModelProto"));
    let good = bytes(
        graph(
            "main",
            ("main:x", &[1]),
            &[],
            vec![node("REF::ReLU", &["main:x"], "main:y")],
            "main:y",
        ),
        vec![func("ReLU", "ReLU")],
        vec![],
    );
    let e = err(&good[..good.len() - 3]);
    assert!(e.contains("bad.mindir") && e.contains("truncated"), "{e}");
    let e = err(&bytes(GraphProto::default(), vec![], vec![]));
    assert!(e.contains("holds no graph with nodes"), "{e}");

    let one = |nodes: Vec<NodeProto>, prims: Vec<PrimitiveProto>| {
        err(&bytes(
            graph(
                "main",
                ("main:x", &[1, 3, 8, 8]),
                &[("main:w", &[4, 3, 1, 1])],
                nodes,
                "main:y",
            ),
            prims,
            vec![],
        ))
    };
    let e = one(
        vec![node("REF::ReLU", &["main:nope"], "main:y")],
        vec![func("ReLU", "ReLU")],
    );
    assert!(
        e.contains(r#"node "main:y" (REF::ReLU): input "main:nope" names no value"#),
        "{e}"
    );
    let e = one(vec![node("REF::Gone", &["main:x"], "main:y")], vec![]);
    assert!(
        e.contains(r#""Gone" names no primitive and no graph"#),
        "{e}"
    );
    let e = one(
        vec![
            constant("t", tuple("", &[1, 2])),
            node("REF::TupleGetItem", &["t", "t"], "main:y"),
        ],
        vec![func("TupleGetItem", "TupleGetItem")],
    );
    assert!(
        e.contains(
            r#"node "y" (TupleGetItem): argument 1 is a tuple of 2: expected an integer index"#
        ),
        "{e}"
    );
    let mut nhwc = conv_prim("Conv", "valid", &[0; 4]);
    nhwc.attribute
        .retain(|a| a.name.as_deref() != Some("format"));
    nhwc.attribute.push(string("format", "NHWC"));
    let e = one(
        vec![node("REF::Conv", &["main:x", "main:w"], "main:y")],
        vec![nhwc],
    );
    assert!(
        e.contains(r#"node "y" (Conv2D): data format NHWC: expected NCHW"#),
        "{e}"
    );
    let e = one(
        vec![
            constant("k", float("", 2.0)),
            node("REF::ReLU", &["k"], "main:y"),
        ],
        vec![func("ReLU", "ReLU")],
    );
    assert!(
        e.contains("argument 0 is the number 2: expected a tensor"),
        "{e}"
    );
    let e = one(
        vec![
            node("REF::A", &["main:z"], "main:y"),
            node("REF::A", &["main:y"], "main:z"),
        ],
        vec![func("A", "ReLU")],
    );
    assert!(e.contains("bad.mindir") && e.contains("on a cycle"), "{e}");
}

/// The plumbing of MindCV's networks, shapes as MindSpore documents them: DenseNet's `Pad`
/// ((0,0),(0,0),(1,1),(1,1)) pads 6×6 to 8×8; ShuffleNet's channel split
/// `StridedSlice(x, (0,0,0,0), (1,4,6,6), (1,2,1,1))` keeps every second of 8 channels (4);
/// ViT's class token `BroadcastTo((2,-1,-1))` of [1,1,5] is [2,1,5]; `Unstack` on axis 0 of
/// [3,2,5] gives three [2,5]; ResNet's residual `InplaceAddExt(x, y, 1)` is an Add.
#[test]
fn mindcv_plumbing_primitives_have_mindspores_shapes() {
    let pairs = AttributeProto {
        values: [[0, 0], [0, 0], [1, 1], [1, 1]]
            .iter()
            .map(|p| tuple("", p))
            .collect(),
        ..attr("paddings", at::TUPLE)
    };
    let three = AttributeProto {
        values: (0..3).map(|_| attr("", at::TENSORS)).collect(),
        ..attr("shape", at::TUPLE)
    };
    let mut unstack = node("REF::Unstack", &["main:t"], "main:u");
    unstack.attribute.push(three);
    let g = graph(
        "main",
        ("main:x", &[1, 8, 6, 6]),
        &[("main:cls", &[1, 1, 5]), ("main:t", &[3, 2, 5])],
        vec![
            node("REF::Pad", &["main:x"], "main:pad"),
            constant("b", tuple("", &[0, 0, 0, 0])),
            constant("e", tuple("", &[1, 8, 6, 6])),
            constant("s", tuple("", &[1, 2, 1, 1])),
            constant("zero", int("", 0)),
            node(
                "REF::StridedSlice",
                &[
                    "main:x", "b", "e", "s", "zero", "zero", "zero", "zero", "zero",
                ],
                "main:half",
            ),
            constant("to", tuple("", &[2, -1, -1])),
            node("REF::BroadcastTo", &["main:cls", "to"], "main:tokens"),
            unstack,
            constant("one", int("", 1)),
            node("REF::TupleGetItem", &["main:u", "one"], "main:u1"),
            constant("alpha", int("", 1)),
            node(
                "REF::InplaceAddExt",
                &["main:half", "main:half", "alpha"],
                "main:sum",
            ),
            node(
                "REF::MakeTuple",
                &["main:pad", "main:sum", "main:tokens", "main:u1"],
                "main:out",
            ),
        ],
        "main:out",
    );
    let mut prims: Vec<PrimitiveProto> = ["StridedSlice", "BroadcastTo", "InplaceAddExt"]
        .iter()
        .map(|p| func(p, p))
        .collect();
    prims.push(prim("Pad", "Pad", vec![pairs]));
    prims.push(prim(
        "Unstack",
        "Unstack",
        vec![int("axis", 0), int("num", 3)],
    ));
    prims.push(prim("TupleGetItem", "TupleGetItem", vec![]));
    prims.push(prim("MakeTuple", "MakeTuple", vec![]));
    let inferred = infer(&bytes(g, prims, vec![]));
    assert!(inferred.skipped.is_empty(), "{:?}", inferred.skipped);
    assert_eq!(shape_of(&inferred, "pad"), [1, 8, 8, 8]);
    assert_eq!(shape_of(&inferred, "half"), [1, 4, 6, 6]);
    assert_eq!(shape_of(&inferred, "sum"), [1, 4, 6, 6]);
    assert_eq!(shape_of(&inferred, "tokens"), [2, 1, 5]);
    assert_eq!(shape_of(&inferred, "u:1"), [2, 5]);
}
