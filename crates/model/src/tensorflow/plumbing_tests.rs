//! TensorFlow's shape plumbing on graphs built here: each op's shape as TensorFlow defines it
//! (worked out by hand in the comments), the values of shape vectors tracked through it so
//! that a `Reshape` behind `tf.shape(x)[k]` keeps a static shape, and the ops refused by name
//! cutting off only what depends on them.

use prost::Message as _;

use super::proto::{AttrValue, GraphDef, NodeDef};
use super::tests::{ints, konst, node, placeholder, s};
use super::*;
use tunebank_key::{FsReader, ResolvedOptions};

fn int_attr(v: i64) -> AttrValue {
    AttrValue {
        i: Some(v),
        ..Default::default()
    }
}

fn bool_attr(v: bool) -> AttrValue {
    AttrValue {
        b: Some(v),
        ..Default::default()
    }
}

/// The graph's inferred tensors (the one static profile) and what was skipped.
fn infer(nodes: Vec<NodeDef>) -> crate::InferredGraph {
    let bytes = GraphDef {
        node: nodes,
        ..Default::default()
    }
    .encode_to_vec();
    let model = load_tensorflow_bytes(&bytes, "g.pb").unwrap();
    let options = ResolvedOptions::from_args(["--soc_version=Ascend910B2"], &FsReader).unwrap();
    model.infer(&options).unwrap().remove(0)
}

fn shape_of<'g>(g: &'g crate::InferredGraph, t: &str) -> &'g [i64] {
    g.shape(t)
        .unwrap_or_else(|| panic!("{t} not inferred; skipped {:?}", g.skipped))
}

fn strided(name: &str, x: &str, b: &str, e: &str, st: &str, masks: &[(&str, i64)]) -> NodeDef {
    node(
        name,
        "StridedSlice",
        &[x, b, e, st],
        masks.iter().map(|(m, v)| (*m, int_attr(*v))).collect(),
    )
}

/// `tf.shape(conv)[3]` reads the channels although the convolution is held in NCHW, and a
/// Reshape to `[tf.shape(x)[0], -1]` gets a static shape.
#[test]
fn shape_arithmetic_through_strided_slice_and_pack_stays_static() {
    let g = infer(vec![
        placeholder("x", &[2, 8, 8, 3]),
        konst("w", &[3, 3, 3, 16], None),
        node(
            "conv",
            "Conv2D",
            &["x", "w"],
            vec![("strides", ints(&[1, 1, 1, 1])), ("padding", s("SAME"))],
        ),
        node("shape", "Shape", &["conv"], vec![]),
        // An all-zero constant as TensorFlow's optimizer writes it: no value at all (tf_keras's
        // frozen `Reshape` layers).
        konst("b0", &[1], Some(&[])),
        konst("e0", &[1], Some(&[1])),
        konst("b3", &[1], Some(&[3])),
        konst("e3", &[1], Some(&[4])),
        konst("one", &[1], Some(&[1])),
        strided(
            "batch",
            "shape",
            "b0",
            "e0",
            "one",
            &[("shrink_axis_mask", 1)],
        ),
        strided(
            "channels",
            "shape",
            "b3",
            "e3",
            "one",
            &[("shrink_axis_mask", 1)],
        ),
        konst("minus1", &[], Some(&[-1])),
        node(
            "target",
            "Pack",
            &["batch", "minus1"],
            vec![("axis", int_attr(0))],
        ),
        node("flat", "Reshape", &["conv", "target"], vec![]),
    ]);
    assert!(g.skipped.is_empty(), "{:?}", g.skipped);
    assert_eq!(g.tensors["batch"].value.as_deref(), Some(&[2][..]));
    // NHWC order: channels are dim 3 (16), not the NCHW-held tensor's dim 3 (8).
    assert_eq!(g.tensors["channels"].value.as_deref(), Some(&[16][..]));
    assert_eq!(g.tensors["target"].value.as_deref(), Some(&[2, -1][..]));
    assert_eq!(shape_of(&g, "flat"), [2, 8 * 8 * 16]);
}

#[test]
fn strided_slice_follows_every_mask() {
    let k = |name: &str, v: &[i32]| konst(name, &[v.len() as i64], Some(v));
    let g = infer(vec![
        placeholder("x", &[4, 6, 8]),
        k("b", &[1, 0, 0]),
        k("e", &[3, 0, -1]),
        k("st", &[1, 1, 2]),
        // x[1:3, :, 0:-1:2]: 2, 6 (begin and end masked), ceil(7/2) = 4.
        strided(
            "a",
            "x",
            "b",
            "e",
            "st",
            &[("begin_mask", 2), ("end_mask", 2)],
        ),
        k("b2", &[0, 0]),
        k("e2", &[0, 0]),
        k("st2", &[1, 1]),
        // x[..., tf.newaxis]: the ellipsis keeps all three dims, then a new one.
        strided(
            "n",
            "x",
            "b2",
            "e2",
            "st2",
            &[("ellipsis_mask", 1), ("new_axis_mask", 2)],
        ),
        k("b3", &[-1]),
        k("e3", &[0]),
        k("st3", &[1]),
        // x[-1]: the last row, its dim removed.
        strided("r", "x", "b3", "e3", "st3", &[("shrink_axis_mask", 1)]),
        k("b4", &[0, 5]),
        k("e4", &[0, 0]),
        k("st4", &[1, -2]),
        // x[:, 5::-2]: 5, 3, 1 (end masked with a negative stride runs to the start).
        strided(
            "rev",
            "x",
            "b4",
            "e4",
            "st4",
            &[("begin_mask", 1), ("end_mask", 3)],
        ),
    ]);
    assert!(g.skipped.is_empty(), "{:?}", g.skipped);
    assert_eq!(shape_of(&g, "a"), [2, 6, 4]);
    assert_eq!(shape_of(&g, "n"), [4, 6, 8, 1]);
    assert_eq!(shape_of(&g, "r"), [6, 8]);
    assert_eq!(shape_of(&g, "rev"), [4, 3, 8]);
}

#[test]
fn split_slice_gather_pack_and_unpack_have_tensorflows_shapes() {
    let k = |name: &str, v: &[i32]| konst(name, &[v.len() as i64], Some(v));
    let g = infer(vec![
        placeholder("x", &[4, 6]),
        konst("axis1", &[], Some(&[1])),
        node(
            "halves",
            "Split",
            &["axis1", "x"],
            vec![("num_split", int_attr(2))],
        ),
        k("sizes", &[2, -1]),
        node(
            "parts",
            "SplitV",
            &["x", "sizes", "axis1"],
            vec![("num_split", int_attr(2))],
        ),
        k("begin", &[1, 0]),
        k("size", &[2, -1]),
        node("sl", "Slice", &["x", "begin", "size"], vec![]),
        placeholder("idx", &[3]),
        konst("axis0", &[], Some(&[0])),
        node("rows", "GatherV2", &["x", "idx", "axis0"], vec![]),
        node(
            "cols",
            "Unpack",
            &["x"],
            vec![("num", int_attr(6)), ("axis", int_attr(1))],
        ),
        node(
            "back",
            "Pack",
            &["cols", "cols:1"],
            vec![("axis", int_attr(1))],
        ),
        konst("kk", &[], Some(&[3])),
        node(
            "top",
            "TopKV2",
            &["x", "kk"],
            vec![("sorted", bool_attr(true))],
        ),
    ]);
    assert!(g.skipped.is_empty(), "{:?}", g.skipped);
    assert_eq!(shape_of(&g, "halves"), [4, 3]);
    assert_eq!(shape_of(&g, "halves:1"), [4, 3]);
    assert_eq!(shape_of(&g, "parts"), [4, 2]);
    assert_eq!(shape_of(&g, "parts:1"), [4, 4]);
    assert_eq!(shape_of(&g, "sl"), [2, 6]);
    assert_eq!(shape_of(&g, "rows"), [3, 6]);
    assert_eq!(shape_of(&g, "cols:5"), [4]);
    assert_eq!(shape_of(&g, "back"), [4, 2]);
    assert_eq!(shape_of(&g, "top"), [4, 3]);
    assert_eq!(shape_of(&g, "top:1"), [4, 3]);
}

/// The gradient plumbing of a training step folds to known values.
#[test]
fn gradient_plumbing_values_are_tracked() {
    let k = |name: &str, v: &[i32]| konst(name, &[v.len() as i64], Some(v));
    let g = infer(vec![
        placeholder("a", &[2, 3]),
        placeholder("b", &[2, 5]),
        node("sa", "Shape", &["a"], vec![]),
        node("sb", "Shape", &["b"], vec![]),
        konst("dim", &[], Some(&[1])),
        node("off", "ConcatOffset", &["dim", "sa", "sb"], vec![]),
        placeholder("x", &[2, 1, 4]),
        placeholder("y", &[3, 1]),
        node("sx", "Shape", &["x"], vec![]),
        node("sy", "Shape", &["y"], vec![]),
        node("bga", "BroadcastGradientArgs", &["sx", "sy"], vec![]),
        k("perm", &[2, 0, 1]),
        node("inv", "InvertPermutation", &["perm"], vec![]),
        konst("start", &[], Some(&[0])),
        konst("limit", &[], Some(&[10])),
        konst("delta", &[], Some(&[3])),
        node("r", "Range", &["start", "limit", "delta"], vec![]),
    ]);
    assert!(g.skipped.is_empty(), "{:?}", g.skipped);
    let v = |t: &str| g.tensors[t].value.clone().unwrap_or_else(|| panic!("{t}"));
    assert_eq!((v("off"), v("off:1")), (vec![0, 0], vec![0, 3]));
    // [2,1,4] against [3,1] padded to [1,3,1]: x is reduced over dim 1, y over dims 0 and 2.
    assert_eq!((v("bga"), v("bga:1")), (vec![1], vec![0, 2]));
    assert_eq!(v("inv"), [1, 2, 0]);
    assert_eq!(v("r"), [0, 3, 6, 9]);
}

/// The NHWC image ops run in NCHW.
#[test]
fn depth_to_space_and_resize_run_in_nchw() {
    let g = infer(vec![
        placeholder("x", &[1, 4, 4, 8]),
        node(
            "d2s",
            "DepthToSpace",
            &["x"],
            vec![("block_size", int_attr(2))],
        ),
        konst("size", &[2], Some(&[16, 12])),
        node(
            "up",
            "ResizeBilinear",
            &["x", "size"],
            vec![("align_corners", bool_attr(false))],
        ),
        node("nn", "ResizeNearestNeighbor", &["x", "size"], vec![]),
    ]);
    assert!(g.skipped.is_empty(), "{:?}", g.skipped);
    assert_eq!(shape_of(&g, "d2s"), [1, 2, 8, 8]);
    assert_eq!(shape_of(&g, "up"), [1, 8, 16, 12]);
    assert_eq!(shape_of(&g, "nn"), [1, 8, 16, 12]);
}

/// Control flow and NMS are refused by name; only what depends on them is cut off, and the
/// cut-off ops name it as their cause.
#[test]
fn control_flow_is_refused_and_cuts_only_its_dependents() {
    let g = infer(vec![
        placeholder("x", &[2, 4]),
        placeholder("p", &[]),
        node("sw", "Switch", &["x", "p"], vec![]),
        node("after", "Relu", &["sw:1"], vec![]),
        node("free", "Sigmoid", &["x"], vec![]),
    ]);
    assert_eq!(shape_of(&g, "free"), [2, 4]);
    let sw = g.skipped.iter().find(|s| s.node_name == "sw").unwrap();
    assert!(
        sw.reason.contains("Switch is not imported: control flow"),
        "{sw:?}"
    );
    let after = g.skipped.iter().find(|s| s.node_name == "after").unwrap();
    assert_eq!(after.cause.as_deref(), Some("sw"));
}

/// Keras MultiHeadAttention's einsums become a (Batch)MatMul of the shapes GE's Einsum pass
/// gives, the output in the equation's order.
#[test]
fn einsum_is_a_matmul_between_transposes() {
    let eq = |v: &str| AttrValue {
        s: Some(v.as_bytes().to_vec()),
        ..Default::default()
    };
    let g = infer(vec![
        placeholder("x", &[2, 5, 16]),
        konst("kernel", &[16, 4, 8], None),
        // EinsumDense: [B, T, D] × [D, H, K] → [B, T, H, K].
        node(
            "q",
            "Einsum",
            &["x", "kernel"],
            vec![("equation", eq("abc,cde->abde"))],
        ),
        placeholder("k", &[2, 7, 4, 8]),
        // Attention scores: key [B, S, H, K], query [B, T, H, K] → [B, H, T, S].
        node(
            "scores",
            "Einsum",
            &["k", "q"],
            vec![("equation", eq("aecd,abcd->acbe"))],
        ),
        // A letter only one operand has is summed away: [B, T, D] → [B, D].
        node("sum", "Einsum", &["x"], vec![("equation", eq("abc->ac"))]),
        node(
            "diag",
            "Einsum",
            &["kernel"],
            vec![("equation", eq("aab->ab"))],
        ),
    ]);
    assert_eq!(shape_of(&g, "q"), [2, 5, 4, 8]);
    assert_eq!(shape_of(&g, "scores"), [2, 4, 5, 7]);
    assert_eq!(shape_of(&g, "sum"), [2, 16]);
    // The products: [B·T, D] × [D, H·K] has no batch; the scores batch over B and H.
    assert_eq!(shape_of(&g, "q/matmul"), [10, 32]);
    assert_eq!(shape_of(&g, "scores/matmul"), [2, 4, 7, 5]);
    let diag = g.skipped.iter().find(|s| s.node_name == "diag").unwrap();
    assert!(diag.reason.contains("repeats a letter"), "{diag:?}");
}

/// A BatchMatMul with adjoints (attention's gradient) multiplies the swapped operands.
#[test]
fn batch_matmul_adjoints_swap_the_last_two_dims() {
    let g = infer(vec![
        placeholder("a", &[2, 4, 5, 7]),
        placeholder("b", &[2, 4, 3, 7]),
        node(
            "ab",
            "BatchMatMulV2",
            &["a", "b"],
            vec![("adj_y", bool_attr(true))],
        ),
        placeholder("c", &[2, 4, 7, 5]),
        node(
            "cb",
            "BatchMatMulV2",
            &["c", "b"],
            vec![("adj_x", bool_attr(true)), ("adj_y", bool_attr(true))],
        ),
    ]);
    assert!(g.skipped.is_empty(), "{:?}", g.skipped);
    assert_eq!(shape_of(&g, "ab"), [2, 4, 5, 3]);
    assert_eq!(shape_of(&g, "cb"), [2, 4, 5, 3]);
}

/// Keras 3's frozen inference batch norm — `Reshape`d statistics, `Add`/`Rsqrt`/`Mul`/`Sub`
/// on constants, then `Mul` and `Add` on the convolution — folds as a converter folds it: the
/// constant arithmetic into constants, the per-channel `[1,1,1,C]` scale and shift into the
/// convolution (a `[C]` bias), no layout `Transpose` around them; one Conv + Relu remains.
#[test]
fn a_keras_inference_batch_norm_folds_into_the_convolution() {
    let k = |name: &str, dims: &[i64]| konst(name, dims, None);
    let bytes = GraphDef {
        node: vec![
            placeholder("x", &[1, 8, 8, 3]),
            k("w", &[3, 3, 3, 16]),
            node(
                "conv",
                "Conv2D",
                &["x", "w"],
                vec![("strides", ints(&[1, 1, 1, 1])), ("padding", s("SAME"))],
            ),
            k("var", &[16]),
            k("mean", &[16]),
            k("gamma", &[16]),
            k("beta", &[16]),
            konst("to4", &[4], Some(&[1, 1, 1, 16])),
            node("var4", "Reshape", &["var", "to4"], vec![]),
            k("eps", &[]),
            node("add", "AddV2", &["var4", "eps"], vec![]),
            node("rsqrt", "Rsqrt", &["add"], vec![]),
            node("scale", "Mul", &["rsqrt", "gamma"], vec![]),
            node("mean_scaled", "Mul", &["mean", "scale"], vec![]),
            node("shift", "Sub", &["beta", "mean_scaled"], vec![]),
            node("y", "Mul", &["conv", "scale"], vec![]),
            node("z", "AddV2", &["y", "shift"], vec![]),
            node("relu", "Relu", &["z"], vec![]),
        ],
        ..Default::default()
    }
    .encode_to_vec();
    let model = load_tensorflow_bytes(&bytes, "bn.pb").unwrap();
    let mut graph = model.graph.clone();
    crate::graph_opt::fold_affine(&mut graph);
    let ops: Vec<&str> = graph.nodes.iter().map(|n| n.op_type.as_str()).collect();
    assert_eq!(
        ops,
        ["Transpose", "Conv", "Relu"],
        "the input's one transpose, then {ops:?}"
    );
    let conv = graph.nodes.iter().find(|n| n.op_type == "Conv").unwrap();
    assert_eq!(conv.inputs.len(), 3, "{conv:?}");
    assert_eq!(graph.initializers[&conv.inputs[2]].dims, [16]);
}

/// An atrous convolution as `tf.nn.atrous_conv2d(rate=2, padding="SAME")` writes it:
/// SpaceToBatchND (block 2×2, paddings 2 on each side: [1,16,16,8] → [4, 20/2, 20/2, 8]),
/// a VALID 3×3 convolution ([4,8,8,4]), BatchToSpaceND (crops 0: [1,16,16,4]) — TensorFlow's
/// shapes, held NCHW. Paddings that do not divide (19 rows by 2) are named.
#[test]
fn space_to_batch_and_back_have_tensorflows_shapes() {
    let atrous = |pad: i32| {
        vec![
            placeholder("x", &[1, 16, 16, 8]),
            konst("block", &[2], Some(&[2, 2])),
            konst("pads", &[2, 2], Some(&[pad, 2, 2, 2])),
            konst("crops", &[2, 2], Some(&[0, 0, 0, 0])),
            node("s2b", "SpaceToBatchND", &["x", "block", "pads"], vec![]),
            konst("w", &[3, 3, 8, 4], None),
            node(
                "conv",
                "Conv2D",
                &["s2b", "w"],
                vec![("strides", ints(&[1, 1, 1, 1])), ("padding", s("VALID"))],
            ),
            node("b2s", "BatchToSpaceND", &["conv", "block", "crops"], vec![]),
        ]
    };
    let g = infer(atrous(2));
    assert!(g.skipped.is_empty(), "{:?}", g.skipped);
    assert_eq!(shape_of(&g, "s2b"), [4, 8, 10, 10]);
    assert_eq!(shape_of(&g, "conv"), [4, 4, 8, 8]);
    assert_eq!(shape_of(&g, "b2s"), [1, 4, 16, 16]);
    let g = infer(atrous(1));
    let s2b = g.skipped.iter().find(|s| s.node_name == "s2b").unwrap();
    assert!(
        s2b.reason.contains("SpaceToBatchND") && s2b.reason.contains("dividing"),
        "{s2b:?}"
    );
}

/// Conv3D (NDHWC, filter [3,3,3,3,6], strides 1,2,2, SAME) on [1,8,16,16,3]: TensorFlow's
/// [1, 8, 8, 8, 6], computed as a 5-D `Conv` over the NCDHW transpose ([1,6,8,8,8]).
#[test]
fn conv3d_is_a_five_d_conv_between_transposes() {
    let g = infer(vec![
        placeholder("x", &[1, 8, 16, 16, 3]),
        konst("w", &[3, 3, 3, 3, 6], None),
        node(
            "c3",
            "Conv3D",
            &["x", "w"],
            vec![("strides", ints(&[1, 1, 2, 2, 1])), ("padding", s("SAME"))],
        ),
    ]);
    assert!(g.skipped.is_empty(), "{:?}", g.skipped);
    assert_eq!(shape_of(&g, "c3/ncdhw"), [1, 6, 8, 8, 8]);
    assert_eq!(shape_of(&g, "c3"), [1, 8, 8, 8, 6]);
}

/// Keras 3's Conv3D bias — its `[6]` value reshaped to `[1,1,1,1,6]`, squeezed back and added
/// by `BiasAdd` after the convolution — becomes the 5-D `Conv`'s bias input (a `[6]` constant),
/// as tf2onnx exports it, so the convolution keys alike; the output keeps its shape.
#[test]
fn a_conv3d_bias_goes_into_the_convolution() {
    let bytes = GraphDef {
        node: vec![
            placeholder("x", &[1, 8, 16, 16, 3]),
            konst("w", &[3, 3, 3, 3, 6], None),
            konst("b", &[6], None),
            konst("to5", &[5], Some(&[1, 1, 1, 1, 6])),
            node(
                "c3",
                "Conv3D",
                &["x", "w"],
                vec![("strides", ints(&[1; 5])), ("padding", s("SAME"))],
            ),
            node("b5", "Reshape", &["b", "to5"], vec![]),
            node("b1", "Squeeze", &["b5"], vec![]),
            node("bias", "BiasAdd", &["c3", "b1"], vec![]),
        ],
        ..Default::default()
    }
    .encode_to_vec();
    let model = load_tensorflow_bytes(&bytes, "g.pb").unwrap();
    let conv = model
        .graph
        .nodes
        .iter()
        .find(|n| n.op_type == "Conv")
        .unwrap();
    assert_eq!(conv.inputs.len(), 3, "{conv:?}");
    assert_eq!(model.graph.initializers[&conv.inputs[2]].dims, [6]);
    assert!(model.graph.nodes.iter().all(|n| n.op_type != "Add"));
    let options = ResolvedOptions::from_args(["--soc_version=Ascend910B2"], &FsReader).unwrap();
    let g = model.infer(&options).unwrap().remove(0);
    assert_eq!(shape_of(&g, "c3"), [1, 8, 16, 16, 6]);
}

/// The inputs the op walk below feeds its ops: placeholders and integer constants.
fn walk_inputs() -> Vec<NodeDef> {
    vec![
        placeholder("x", &[2, 8, 8, 4]),
        placeholder("m1", &[4, 8]),
        placeholder("m2", &[8, 5]),
        placeholder("x5", &[1, 4, 8, 8, 3]),
        konst("w5", &[3, 3, 3, 3, 2], None),
        konst("b4", &[4], Some(&[0, 0, 0, 0])),
        konst("e4", &[4], Some(&[1, 8, 8, 4])),
        konst("s4", &[4], Some(&[1, 1, 1, 1])),
        konst("mult", &[4], Some(&[1, 1, 1, 2])),
        konst("shape4", &[4], Some(&[2, 8, 8, 4])),
        konst("perm", &[4], Some(&[0, 2, 1, 3])),
        konst("idx", &[1], Some(&[1])),
        konst("two", &[2], Some(&[2, 2])),
        konst("size", &[2], Some(&[16, 16])),
        konst("pads", &[2, 2], Some(&[0, 0, 0, 0])),
        konst("dims", &[2], Some(&[2, 2])),
        konst("axis3", &[], Some(&[3])),
        konst("zero", &[], Some(&[0])),
        konst("one", &[], Some(&[1])),
        konst("four", &[], Some(&[4])),
        konst("k", &[], Some(&[2])),
        konst("seed", &[2], Some(&[1, 2])),
    ]
}

/// Every TensorFlow op the model-coverage work lists — shape plumbing, detection and
/// segmentation ops, training-step ops — is mapped or refused by name: importing a graph of
/// the op never yields an op of the `tensorflow` domain (what an unknown op becomes).
#[test]
fn every_listed_tensorflow_op_is_mapped_or_refused_by_name() {
    let i = |v: i64| AttrValue {
        i: Some(v),
        ..Default::default()
    };
    type Case<'a> = (&'a str, Vec<&'a str>, Vec<(&'a str, AttrValue)>);
    let cases: Vec<Case> = vec![
        ("Shape", vec!["x"], vec![]),
        ("ShapeN", vec!["x", "x"], vec![("N", i(2))]),
        ("StridedSlice", vec!["x", "b4", "e4", "s4"], vec![]),
        ("Pack", vec!["x", "x"], vec![("axis", i(0))]),
        ("Unpack", vec!["x"], vec![("num", i(2)), ("axis", i(0))]),
        ("Slice", vec!["x", "b4", "e4"], vec![]),
        ("Split", vec!["axis3", "x"], vec![("num_split", i(2))]),
        (
            "SplitV",
            vec!["x", "two", "axis3"],
            vec![("num_split", i(2))],
        ),
        ("Gather", vec!["x", "idx"], vec![]),
        ("GatherV2", vec!["x", "idx", "zero"], vec![]),
        ("Fill", vec!["dims", "one"], vec![]),
        ("Range", vec!["zero", "four", "one"], vec![]),
        ("Tile", vec!["x", "mult"], vec![]),
        ("ResizeBilinear", vec!["x", "size"], vec![]),
        ("ResizeNearestNeighbor", vec!["x", "size"], vec![]),
        ("SpaceToBatchND", vec!["x", "two", "pads"], vec![]),
        ("BatchToSpaceND", vec!["x", "two", "pads"], vec![]),
        ("DepthToSpace", vec!["x"], vec![("block_size", i(2))]),
        ("SpaceToDepth", vec!["x"], vec![("block_size", i(2))]),
        (
            "Conv3D",
            vec!["x5", "w5"],
            vec![("strides", ints(&[1; 5])), ("padding", s("SAME"))],
        ),
        ("Square", vec!["x"], vec![]),
        ("Rsqrt", vec!["x"], vec![]),
        ("Pow", vec!["x", "x"], vec![]),
        ("TopKV2", vec!["x", "k"], vec![]),
        (
            "NonMaxSuppressionV3",
            vec!["m1", "m1", "k", "x", "x"],
            vec![],
        ),
        (
            "NonMaxSuppressionV5",
            vec!["m1", "m1", "k", "x", "x", "x"],
            vec![],
        ),
        ("While", vec!["x"], vec![]),
        ("Switch", vec!["x", "x"], vec![]),
        ("Merge", vec!["x", "x"], vec![]),
        (
            "ConcatOffset",
            vec!["axis3", "shape4", "shape4"],
            vec![("N", i(2))],
        ),
        ("BroadcastGradientArgs", vec!["shape4", "shape4"], vec![]),
        ("InvertPermutation", vec!["perm"], vec![]),
        (
            "Einsum",
            vec!["m1", "m2"],
            vec![("equation", s("ij,jk->ik")), ("N", i(2))],
        ),
        ("Erf", vec!["x"], vec![]),
        ("Erfc", vec!["x"], vec![]),
        ("StatelessRandomGetKeyCounter", vec!["seed"], vec![]),
        ("SelectV2", vec!["x", "x", "x"], vec![]),
    ];
    for (op, inputs, attrs) in cases {
        let mut nodes = walk_inputs();
        nodes.push(node("op", op, &inputs, attrs));
        let bytes = GraphDef {
            node: nodes,
            ..Default::default()
        }
        .encode_to_vec();
        let model = load_tensorflow_bytes(&bytes, "g.pb")
            .unwrap_or_else(|e| panic!("{op}: the graph imports: {e}"));
        let unknown: Vec<&str> = model
            .graph
            .nodes
            .iter()
            .filter(|n| n.domain == "tensorflow")
            .map(|n| n.op_type.as_str())
            .collect();
        assert!(
            unknown.is_empty(),
            "{op}: unknown to the importer: {unknown:?}"
        );
        let made = model.graph.nodes.iter().any(|n| n.name.starts_with("op"))
            || model.graph.initializers.keys().any(|k| k.starts_with("op"));
        assert!(made, "{op}: imported as nothing");
    }
}

/// The walk's check can fail: an op outside the tables is a `tensorflow`-domain node.
#[test]
fn an_op_outside_the_tables_is_a_tensorflow_domain_node() {
    let mut nodes = walk_inputs();
    nodes.push(node("op", "MysteryOp", &["x"], vec![]));
    let bytes = GraphDef {
        node: nodes,
        ..Default::default()
    }
    .encode_to_vec();
    let model = load_tensorflow_bytes(&bytes, "g.pb").unwrap();
    assert!(model.graph.nodes.iter().any(|n| n.domain == "tensorflow"));
}
