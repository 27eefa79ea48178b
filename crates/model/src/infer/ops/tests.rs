//! Unit tests of the per-op inference and of the dispatch table.

use super::{infer_node, lookup, OPS};
use crate::graph::{Attr, ElemType, Node};
use crate::infer::error::InferError;
use crate::infer::shape::{info, Inputs};
use crate::infer::TensorInfo;

fn t(shape: &[i64]) -> Option<TensorInfo> {
    Some(info(ElemType::FLOAT, shape.to_vec()))
}

fn c(values: &[i64]) -> Option<TensorInfo> {
    Some(TensorInfo {
        elem_type: ElemType::INT64,
        shape: vec![values.len() as i64],
        value: Some(values.to_vec()),
    })
}

fn node(op: &str, outputs: usize, attrs: &[(&str, Attr)]) -> Node {
    Node {
        name: op.into(),
        op_type: op.into(),
        domain: String::new(),
        inputs: vec![],
        outputs: (0..outputs).map(|i| format!("y{i}")).collect(),
        attrs: attrs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    }
}

fn shapes(op: &str, outputs: usize, attrs: &[(&str, Attr)], ins: Inputs) -> Vec<Vec<i64>> {
    let (outs, _) = infer_node(&node(op, outputs, attrs), &ins, 17).unwrap();
    outs.into_iter().map(|o| o.shape).collect()
}

#[test]
fn slices_clamp_and_step_backwards() {
    let ins = vec![
        t(&[10, 20]),
        c(&[-3, 100]),
        c(&[i64::MAX, -100]),
        c(&[0, 1]),
        c(&[1, -2]),
    ];
    assert_eq!(shapes("Slice", 1, &[], ins), [vec![3, 10]]);
    let ins = vec![t(&[0, 4]), c(&[0]), c(&[-1]), None, c(&[-1])];
    assert_eq!(shapes("Slice", 1, &[], ins), [vec![0, 4]]);
}

#[test]
fn splits_by_sizes_or_evenly() {
    let a = [("axis", Attr::Int(-1))];
    assert_eq!(
        shapes("Split", 2, &a, vec![t(&[2, 10]), c(&[3, 7])]),
        [vec![2, 3], vec![2, 7]]
    );
    assert_eq!(
        shapes("Split", 3, &[], vec![t(&[9, 4])]),
        [vec![3, 4], vec![3, 4], vec![3, 4]]
    );
    let n = [("num_outputs", Attr::Int(3))];
    assert_eq!(
        shapes("Split", 3, &n, vec![t(&[7])]),
        [vec![3], vec![3], vec![1]]
    );
}

#[test]
fn reshape_copies_zeros_and_infers_minus_one() {
    assert_eq!(
        shapes(
            "Reshape",
            1,
            &[],
            vec![t(&[2, 128, 768]), c(&[0, 0, 12, -1])]
        ),
        [vec![2, 128, 12, 64]]
    );
    assert_eq!(
        shapes("Reshape", 1, &[], vec![t(&[-1, 128, 768]), c(&[0, -1])]),
        [vec![-1, -1]]
    );
    let bad = infer_node(&node("Reshape", 1, &[]), &vec![t(&[6]), c(&[4, -1])], 17);
    assert!(bad.is_err());
}

#[test]
fn matmul_promotes_vectors_and_broadcasts_batches() {
    assert_eq!(
        shapes("MatMul", 1, &[], vec![t(&[5]), t(&[5, 3])]),
        [vec![3]]
    );
    assert_eq!(
        shapes("MatMul", 1, &[], vec![t(&[2, 1, 4, 5]), t(&[3, 5, 6])]),
        [vec![2, 3, 4, 6]]
    );
    let bad = infer_node(&node("MatMul", 1, &[]), &vec![t(&[4, 5]), t(&[6, 3])], 17);
    assert!(
        matches!(bad, Err(InferError::MatMulInnerDims { .. })),
        "{bad:?}"
    );
}

#[test]
fn pooling_honours_ceil_mode() {
    let a = [
        ("kernel_shape", Attr::Ints(vec![3, 3])),
        ("strides", Attr::Ints(vec![2, 2])),
        ("ceil_mode", Attr::Int(1)),
    ];
    assert_eq!(
        shapes("MaxPool", 1, &a, vec![t(&[1, 8, 56, 56])]),
        [vec![1, 8, 28, 28]]
    );
    let a = [
        ("kernel_shape", Attr::Ints(vec![3, 3])),
        ("strides", Attr::Ints(vec![2, 2])),
    ];
    assert_eq!(
        shapes("AveragePool", 1, &a, vec![t(&[1, 8, 56, 56])]),
        [vec![1, 8, 27, 27]]
    );
}

#[test]
fn reductions_pads_and_squeezes() {
    let a = [("axes", Attr::Ints(vec![-1])), ("keepdims", Attr::Int(0))];
    assert_eq!(
        shapes("ReduceMean", 1, &a, vec![t(&[2, 3, 4])]),
        [vec![2, 3]]
    );
    assert_eq!(
        shapes("ReduceMean", 1, &[], vec![t(&[2, 3, 4])]),
        [vec![1, 1, 1]]
    );
    assert_eq!(
        shapes(
            "Pad",
            1,
            &[],
            vec![t(&[1, 3, 4, 4]), c(&[0, 0, 1, 1, 0, 0, 1, 1])]
        ),
        [vec![1, 3, 6, 6]]
    );
    assert_eq!(
        shapes("Squeeze", 1, &[], vec![t(&[1, 3, 1, 4])]),
        [vec![3, 4]]
    );
    assert_eq!(
        shapes("Unsqueeze", 1, &[], vec![t(&[3, 4]), c(&[0, -1])]),
        [vec![1, 3, 4, 1]]
    );
}

#[test]
fn gemm_transposes_and_broadcasting_errors() {
    let a = [("transA", Attr::Int(1)), ("transB", Attr::Int(1))];
    assert_eq!(
        shapes("Gemm", 1, &a, vec![t(&[5, 4]), t(&[3, 5])]),
        [vec![4, 3]]
    );
    let bad = infer_node(&node("Add", 1, &[]), &vec![t(&[2, 3]), t(&[4])], 17);
    assert!(
        matches!(bad, Err(InferError::Broadcast { a: 3, b: 4, .. })),
        "{bad:?}"
    );
}

#[test]
fn transposed_convolutions_argmax_and_tile() {
    let a = [
        ("strides", Attr::Ints(vec![2, 2])),
        ("pads", Attr::Ints(vec![1, 1, 1, 1])),
        ("output_padding", Attr::Ints(vec![1, 1])),
    ];
    let ins = vec![t(&[1, 16, 14, 14]), t(&[16, 8, 3, 3])];
    assert_eq!(shapes("ConvTranspose", 1, &a, ins), [vec![1, 8, 28, 28]]);
    let a = [("axis", Attr::Int(-1)), ("keepdims", Attr::Int(0))];
    assert_eq!(shapes("ArgMax", 1, &a, vec![t(&[2, 5, 7])]), [vec![2, 5]]);
    assert_eq!(
        shapes("Tile", 1, &[], vec![t(&[2, 3]), c(&[3, 1])]),
        [vec![6, 3]]
    );
}

/// ConvTranspose's padding forms, by ONNX's definitions: SAME_* asks for input × stride, the
/// padding that gives it split with the odd row at the end (SAME_UPPER) or at the beginning
/// (SAME_LOWER); VALID pads nothing; an `output_shape` (spatial, or MindSpore's export's N, C,
/// H, W) keeps explicit pads that give it, else splits as SAME_LOWER does. Every form is left
/// as explicit pads, with no `auto_pad` and no `output_shape`; an undefined auto_pad is named.
#[test]
fn transposed_convolutions_take_every_padding_form() {
    // 32 → stride 2, kernel 3: 2·31 + 3 = 65 rows before padding.
    let ins = || vec![t(&[1, 8, 32, 32]), t(&[8, 4, 3, 3])];
    let run = |a: &[(&str, Attr)]| {
        let mut a = a.to_vec();
        a.push(("strides", Attr::Ints(vec![2, 2])));
        let (outs, attrs) = infer_node(&node("ConvTranspose", 1, &a), &ins(), 17).unwrap();
        assert!(!attrs.contains_key("auto_pad") && !attrs.contains_key("output_shape"));
        let pads = match &attrs["pads"] {
            tunebank_key::AttrValue::Ints(p) => p.clone(),
            p => panic!("{p:?}"),
        };
        (outs[0].shape.clone(), pads)
    };
    let auto = |m: &str| ("auto_pad", Attr::Str(m.into()));
    assert_eq!(
        run(&[auto("SAME_UPPER")]),
        (vec![1, 4, 64, 64], vec![0, 0, 1, 1])
    );
    assert_eq!(
        run(&[auto("SAME_LOWER")]),
        (vec![1, 4, 64, 64], vec![1, 1, 0, 0])
    );
    assert_eq!(run(&[auto("VALID")]), (vec![1, 4, 65, 65], vec![0; 4]));
    let full = ("output_shape", Attr::Ints(vec![1, 4, 64, 64]));
    let end = ("pads", Attr::Ints(vec![0, 0, 1, 1]));
    assert_eq!(
        run(&[full.clone(), end]),
        (vec![1, 4, 64, 64], vec![0, 0, 1, 1])
    );
    let spatial = ("output_shape", Attr::Ints(vec![64, 64]));
    assert_eq!(run(&[spatial]), (vec![1, 4, 64, 64], vec![1, 1, 0, 0]));
    let bad = infer_node(&node("ConvTranspose", 1, &[auto("SAME")]), &ins(), 17);
    assert!(
        matches!(&bad, Err(InferError::ConvTransposeAutoPad { auto_pad }) if auto_pad == "SAME"),
        "{bad:?}"
    );
    let big = ("output_shape", Attr::Ints(vec![70, 70]));
    assert!(infer_node(&node("ConvTranspose", 1, &[big]), &ins(), 17).is_err());
}

#[test]
fn hostile_values_are_errors_not_panics() {
    let huge = [
        ("kernel_shape", Attr::Ints(vec![i64::MIN])),
        ("strides", Attr::Ints(vec![0])),
    ];
    assert!(infer_node(&node("MaxPool", 1, &huge), &vec![t(&[1, 1, 8])], 17).is_err());
    assert!(infer_node(&node("Expand", 1, &[]), &vec![t(&[1]), c(&[1 << 50])], 17).is_err());
    let ins = vec![c(&[i64::MIN]), c(&[-1])];
    let (outs, _) = infer_node(&node("Div", 1, &[]), &ins, 17).unwrap();
    assert_eq!(outs[0].value, None);
    let ins = vec![c(&[1, 2, 3]), c(&[0]), c(&[3]), None, c(&[i64::MIN])];
    assert!(infer_node(&node("Slice", 1, &[]), &ins, 17).is_err());
}

#[test]
fn the_table_is_sorted_and_dispatches_every_entry() {
    assert!(
        OPS.windows(2).all(|w| w[0].0 < w[1].0),
        "OPS must be sorted and unique"
    );
    for (op, _) in OPS {
        assert!(lookup(op).is_some(), "{op}");
    }
    assert!(lookup("FancyNorm").is_none());
    assert!(lookup("relu").is_none(), "op types are case-sensitive");
}

#[test]
fn unknown_ops_and_domains_keep_their_messages() {
    let err = infer_node(&node("FancyNorm", 1, &[]), &vec![t(&[1])], 17).unwrap_err();
    assert_eq!(
        err.to_string(),
        "op type FancyNorm has no shape inference in the importer"
    );
    let mut n = node("Relu", 1, &[]);
    n.domain = "com.microsoft".into();
    let err = infer_node(&n, &vec![t(&[1])], 17).unwrap_err();
    assert_eq!(
        err.to_string(),
        "op Relu of domain \"com.microsoft\" is not supported by the importer"
    );
    let err = infer_node(&node("Cast", 1, &[]), &vec![t(&[1])], 17).unwrap_err();
    assert_eq!(err.to_string(), "Cast without a `to` attribute");
    let err = infer_node(&node("Reshape", 1, &[]), &vec![t(&[1])], 4).unwrap_err();
    assert_eq!(err.to_string(), "Reshape without shape");
}

/// ONNX `Resize`: `sizes` when given; else each dim times its scale, rounded down (a
/// 1×64×15×15 map upsampled by 2.5 is 37×37: floor(37.5)); scales of the wrong length or not
/// positive are errors.
#[test]
fn onnx_resize_takes_sizes_or_floors_the_scaled_dims() {
    let scales = |v: &[f32]| ("scales", Attr::Floats(v.to_vec()));
    let x = t(&[1, 64, 15, 15]);
    assert_eq!(
        shapes(
            "Resize",
            1,
            &[scales(&[1.0, 1.0, 2.5, 2.5])],
            vec![x.clone(), None, None]
        ),
        [vec![1, 64, 37, 37]]
    );
    assert_eq!(
        shapes(
            "Resize",
            1,
            &[],
            vec![x.clone(), None, None, c(&[1, 64, 30, 40])]
        ),
        [vec![1, 64, 30, 40]]
    );
    for bad in [vec![2.0, 2.0], vec![1.0, 1.0, 0.0, 2.0]] {
        let r = infer_node(
            &node("Resize", 1, &[scales(&bad)]),
            &vec![x.clone(), None, None],
            17,
        );
        assert!(r.is_err(), "{bad:?}");
    }
}

/// The ONNX importer reads a Resize's constant float scales (`raw_data`, as tf2onnx writes
/// them) into its `scales` attribute, so a bilinear ×8 upsampling of 1×256×4×4 infers as
/// 1×256×32×32 and what follows it is not cut off.
#[test]
fn an_onnx_resize_with_constant_scales_infers() {
    use crate::proto::{
        Dimension, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
        TensorShapeProto, TypeProto, TypeProtoTensor, ValueInfoProto,
    };
    use prost::Message as _;
    let raw: Vec<u8> = [1.0f32, 1.0, 8.0, 8.0]
        .iter()
        .flat_map(|f| f.to_le_bytes())
        .collect();
    let dims = |d: &[i64]| TensorShapeProto {
        dim: d
            .iter()
            .map(|&v| Dimension {
                dim_value: Some(v),
                dim_param: None,
            })
            .collect(),
    };
    let graph = GraphProto {
        name: "g".into(),
        node: vec![
            NodeProto {
                input: vec!["x".into(), "".into(), "scales".into()],
                output: vec!["up".into()],
                name: "resize".into(),
                op_type: "Resize".into(),
                ..Default::default()
            },
            NodeProto {
                input: vec!["up".into()],
                output: vec!["y".into()],
                name: "relu".into(),
                op_type: "Relu".into(),
                ..Default::default()
            },
        ],
        initializer: vec![TensorProto {
            dims: vec![4],
            data_type: 1,
            name: "scales".into(),
            raw_data: raw,
            ..Default::default()
        }],
        input: vec![ValueInfoProto {
            name: "x".into(),
            r#type: Some(TypeProto {
                tensor_type: Some(TypeProtoTensor {
                    elem_type: 1,
                    shape: Some(dims(&[1, 256, 4, 4])),
                }),
            }),
        }],
        ..Default::default()
    };
    let bytes = ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 17,
        }],
        graph: Some(graph),
        ..Default::default()
    }
    .encode_to_vec();
    let model = crate::load_onnx_bytes(&bytes, "r.onnx").unwrap();
    let options = tunebank_key::ResolvedOptions::from_args(
        ["--soc_version=Ascend910B2"],
        &tunebank_key::FsReader,
    )
    .unwrap();
    let g = model.infer(&options).unwrap().remove(0);
    assert!(g.skipped.is_empty(), "{:?}", g.skipped);
    assert_eq!(g.shape("y"), Some(&[1, 256, 32, 32][..]));
}

/// ONNX `Trilu` (opset 14): "the output has the same shape as the input"; its optional `k`
/// input (the diagonal offset) changes values only. A vector has no triangle.
#[test]
fn trilu_keeps_the_shape_and_refuses_a_vector() {
    let k = c(&[1]);
    assert_eq!(
        shapes(
            "Trilu",
            1,
            &[("upper", Attr::Int(0))],
            vec![t(&[2, 12, 5, 7]), k]
        ),
        [vec![2, 12, 5, 7]]
    );
    let err = infer_node(&node("Trilu", 1, &[]), &vec![t(&[7])], 17).unwrap_err();
    assert!(matches!(err, InferError::Rank { .. }), "{err}");
}
