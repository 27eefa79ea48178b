use super::*;
use crate::{CubeMath, DType, ImplMode, SocSpec};

fn nd(shape: &[i64]) -> TensorDesc {
    TensorDesc {
        shape: shape.to_vec(),
        ori_shape: shape.to_vec(),
        dtype: DType::Float16,
        format: Format::ND,
        ori_format: Format::ND,
    }
}

fn nchw(shape: &[i64]) -> TensorDesc {
    TensorDesc {
        format: Format::NCHW,
        ori_format: Format::NCHW,
        ..nd(shape)
    }
}

fn op(
    op_type: &str,
    fused: &[&str],
    inputs: Vec<TensorDesc>,
    out: TensorDesc,
    soc: &str,
) -> OpDescriptor {
    OpDescriptor {
        op_type: op_type.into(),
        fused_ops: fused.iter().map(|s| s.to_string()).collect(),
        inputs,
        outputs: vec![out],
        attrs: BTreeMap::new(),
        impl_mode: ImplMode::HighPerformance,
        cube_math: CubeMath::Native,
        soc: SocSpec::from_version(soc).unwrap(),
        origin: None,
    }
}

#[test]
fn gemm_with_a_bias_row_and_matmul_plus_bias_add_map_to_one_ir_op() {
    let mut gemm = op(
        "Gemm",
        &[],
        vec![nd(&[64, 32]), nd(&[32, 48]), nd(&[48])],
        nd(&[64, 48]),
        "Ascend910B1",
    );
    for (k, v) in [("alpha", 1.0), ("beta", 1.0)] {
        gemm.attrs.insert(k.into(), AttrValue::Float(v));
    }
    gemm.attrs.insert("transA".into(), AttrValue::Int(0));
    gemm.attrs.insert("transB".into(), AttrValue::Int(0));
    let fused = op(
        "MatMul",
        &["MatMul", "Add"],
        vec![nd(&[64, 32]), nd(&[32, 48]), nd(&[1, 48])],
        nd(&[64, 48]),
        "Ascend910B1",
    );
    let (g, f) = (to_ir(gemm), to_ir(fused));
    assert_eq!(g.op_type, "MatMulV2");
    assert_eq!(g.origin.as_ref().unwrap().op_type, "Gemm");
    assert_eq!(f.origin.as_ref().unwrap().fused_ops, ["MatMul", "Add"]);
    assert!(f.fused_ops.is_empty());
    assert_eq!(f.inputs[2].shape, [48]);
    assert_eq!(g.key().unwrap(), f.key().unwrap());
    // 910B keeps ND operands (the cube loads ND on the fly).
    assert_eq!(g.inputs[0].format, Format::ND);
}

#[test]
fn matmul_operands_are_fractal_nz_where_the_cube_cannot_load_nd() {
    let d = to_ir(op(
        "MatMul",
        &[],
        vec![nd(&[64, 32]), nd(&[32, 48])],
        nd(&[64, 48]),
        "Ascend310P3",
    ));
    assert_eq!(d.op_type, "MatMulV2");
    assert_eq!(d.inputs[0].format, Format::FractalNz);
    assert_eq!(d.inputs[0].shape, [2, 4, 16, 16]);
    assert_eq!(d.outputs[0].shape, [3, 4, 16, 16]);
    let b = to_ir(op(
        "MatMul",
        &[],
        vec![nd(&[8, 64, 32]), nd(&[32, 48])],
        nd(&[8, 64, 48]),
        "Ascend910B2",
    ));
    assert_eq!(b.op_type, "BatchMatMulV2");
    assert_eq!(b.attrs["adj_x1"], AttrValue::Bool(false));
}

#[test]
fn conv_units_take_device_formats_and_four_d_attributes() {
    let mut conv = op(
        "Conv",
        &["Conv", "BatchNormalization", "Relu"],
        vec![nchw(&[1, 3, 224, 224]), nchw(&[64, 3, 7, 7]), nd(&[64])],
        nchw(&[1, 64, 112, 112]),
        "Ascend910B2",
    );
    conv.attrs
        .insert("strides".into(), AttrValue::Ints(vec![2, 2]));
    conv.attrs
        .insert("pads".into(), AttrValue::Ints(vec![3, 1, 2, 0]));
    conv.attrs.insert("group".into(), AttrValue::Int(1));
    conv.attrs
        .insert("kernel_shape".into(), AttrValue::Ints(vec![7, 7]));
    let d = to_ir(conv);
    assert_eq!(d.op_type, "Conv2D");
    assert_eq!(d.fused_ops, ["Conv2D", "BNInferenceD", "Relu"]);
    assert_eq!(d.inputs[0].format, Format::NC1HWC0);
    assert_eq!(d.inputs[0].shape, [1, 1, 224, 224, 16]);
    assert_eq!(d.inputs[1].format, Format::FractalZ);
    assert_eq!(d.inputs[1].shape, [49, 4, 16, 16]);
    assert_eq!(d.inputs[2].format, Format::ND);
    assert_eq!(d.outputs[0].format, Format::NC1HWC0);
    assert_eq!(d.attrs["strides"], AttrValue::Ints(vec![1, 1, 2, 2]));
    assert_eq!(d.attrs["pads"], AttrValue::Ints(vec![3, 2, 1, 0]));
    assert_eq!(d.attrs["groups"], AttrValue::Int(1));
    assert!(!d.attrs.contains_key("kernel_shape"));
    assert_eq!(d.attrs["data_format"], AttrValue::Str("NCHW".into()));
    // Idempotent, and the origin survives a second mapping.
    assert_eq!(to_ir(d.clone()), d);
}

#[test]
fn a_conv_or_pool_that_states_onnx_defaults_keys_as_one_that_omits_them() {
    let conv = |attrs: &[(&str, AttrValue)]| {
        let mut d = op(
            "Conv",
            &[],
            vec![nchw(&[1, 16, 8, 8]), nchw(&[16, 16, 3, 3])],
            nchw(&[1, 16, 6, 6]),
            "Ascend910B2",
        );
        for (k, v) in attrs {
            d.attrs.insert((*k).into(), v.clone());
        }
        to_ir(d)
    };
    let bare = conv(&[]);
    assert_eq!(bare.attrs["strides"], AttrValue::Ints(vec![1, 1, 1, 1]));
    assert_eq!(bare.attrs["dilations"], AttrValue::Ints(vec![1, 1, 1, 1]));
    assert_eq!(bare.attrs["pads"], AttrValue::Ints(vec![0, 0, 0, 0]));
    assert_eq!(bare.attrs["groups"], AttrValue::Int(1));
    let stated = conv(&[
        ("strides", AttrValue::Ints(vec![1, 1])),
        ("dilations", AttrValue::Ints(vec![1, 1])),
        ("pads", AttrValue::Ints(vec![0, 0, 0, 0])),
        ("group", AttrValue::Int(1)),
    ]);
    assert_eq!(stated.key().unwrap(), bare.key().unwrap());
    // Computed padding gets no `pads`; a stride that is not the default moves the key.
    let same = conv(&[("auto_pad", AttrValue::Str("SAME_UPPER".into()))]);
    assert!(!same.attrs.contains_key("pads"));
    let strided = conv(&[("strides", AttrValue::Ints(vec![2, 2]))]);
    assert_ne!(strided.key().unwrap(), bare.key().unwrap());
    // An IR Conv2D without them (written before they were filled) gets them too.
    let mut ir = bare.clone();
    for a in ["strides", "dilations", "pads", "groups"] {
        ir.attrs.remove(a);
    }
    assert_eq!(to_ir(ir).key().unwrap(), bare.key().unwrap());
    // Pooling: strides 1 and pads 0.
    let pool = |attrs: &[(&str, AttrValue)]| {
        let mut d = op(
            "MaxPool",
            &[],
            vec![nchw(&[1, 16, 8, 8])],
            nchw(&[1, 16, 7, 7]),
            "Ascend910B2",
        );
        d.attrs
            .insert("kernel_shape".into(), AttrValue::Ints(vec![2, 2]));
        for (k, v) in attrs {
            d.attrs.insert((*k).into(), v.clone());
        }
        to_ir(d).key().unwrap()
    };
    assert_eq!(pool(&[("strides", AttrValue::Ints(vec![1, 1]))]), pool(&[]));
    assert_eq!(
        pool(&[("pads", AttrValue::Ints(vec![0, 0, 0, 0]))]),
        pool(&[])
    );
}

#[test]
fn ops_spelled_alike_keep_their_name_and_no_origin() {
    let d = to_ir(op(
        "Relu",
        &[],
        vec![nd(&[4, 4])],
        nd(&[4, 4]),
        "Ascend910B2",
    ));
    assert_eq!(d.op_type, "Relu");
    assert_eq!(d.origin, None);
    assert_eq!(ir_type("Softmax", (2, 0)), Some("SoftmaxV2"));
    assert!(
        ONNX_TO_IR.windows(2).all(|w| w[0].0 < w[1].0),
        "sorted for binary search"
    );
}

/// ONNX `Resize` becomes what ATC's ONNX plugin makes of it (CANN's `resize_plugin.cc`): the
/// interpolation by `mode`, inputs x and an int32 `size`, `half_pixel_centers` only for
/// `pytorch_half_pixel` and `align_corners` only for `align_corners`; `cubic` stays `Resize`.
#[test]
fn onnx_resize_becomes_the_resize_op_atc_makes() {
    let resize = |mode: Option<&str>, ctm: Option<&str>| {
        let mut d = op(
            "Resize",
            &[],
            vec![nchw(&[1, 8, 16, 16]), nd(&[0]), nd(&[4])],
            nchw(&[1, 8, 32, 32]),
            "Ascend910B2",
        );
        d.attrs
            .insert("scales".into(), AttrValue::Floats(vec![1.0, 1.0, 2.0, 2.0]));
        for (k, v) in [("mode", mode), ("coordinate_transformation_mode", ctm)] {
            if let Some(v) = v {
                d.attrs.insert(k.into(), AttrValue::Str(v.into()));
            }
        }
        to_ir(d)
    };
    let flags = |d: &OpDescriptor| {
        (
            d.attrs["align_corners"].clone(),
            d.attrs["half_pixel_centers"].clone(),
        )
    };
    let (off, on) = (AttrValue::Int(0), AttrValue::Int(1));
    let nearest = resize(None, None);
    assert_eq!(nearest.op_type, "ResizeNearestNeighborV2");
    assert_eq!(flags(&nearest), (off.clone(), off.clone()));
    assert_eq!(nearest.attrs.len(), 2, "{:?}", nearest.attrs);
    assert_eq!(nearest.inputs.len(), 2);
    assert_eq!(nearest.inputs[0].ori_shape, [1, 8, 16, 16]);
    assert_eq!(
        (nearest.inputs[1].ori_shape.clone(), nearest.inputs[1].dtype),
        (vec![2], DType::Int32)
    );
    let linear = resize(Some("linear"), Some("pytorch_half_pixel"));
    assert_eq!(linear.op_type, "ResizeBilinearV2");
    assert_eq!(flags(&linear), (off.clone(), on.clone()));
    assert_eq!(
        flags(&resize(Some("linear"), Some("align_corners"))),
        (on, off.clone())
    );
    // ATC's plugin leaves both unset for plain half_pixel, as for every other mode.
    assert_eq!(
        flags(&resize(Some("linear"), Some("half_pixel"))),
        (off.clone(), off)
    );
    assert_eq!(resize(Some("cubic"), None).op_type, "Resize");
    assert_eq!(linear.origin.as_ref().unwrap().op_type, "Resize");
}

/// One resize keys alike from every framework: the `ResizeBilinearV2` the TensorFlow importer
/// writes (x, an int32 size, integer flags, the size also as an attribute) and the one Caffe's
/// `Interp` becomes (x alone or with its reference blob, boolean flags) take the form of ONNX's
/// `Resize` as ATC's plugin makes it. The flags still decide: TensorFlow's `half_pixel_centers`
/// is not ONNX's `half_pixel`, which ATC's plugin compiles with both flags unset.
#[test]
fn a_resize_keys_alike_from_every_framework() {
    let x = || nchw(&[1, 8, 16, 16]);
    let out = || nchw(&[1, 8, 32, 32]);
    let int32 = |shape: &[i64]| TensorDesc {
        dtype: DType::Int32,
        ..nd(shape)
    };
    let onnx = |mode: &str, ctm: &str| {
        let mut d = op(
            "Resize",
            &[],
            vec![x(), nd(&[0]), nd(&[4])],
            out(),
            "Ascend910B2",
        );
        d.attrs.insert("mode".into(), AttrValue::Str(mode.into()));
        d.attrs.insert(
            "coordinate_transformation_mode".into(),
            AttrValue::Str(ctm.into()),
        );
        to_ir(d).key().unwrap()
    };
    let ir = |op_type: &str, inputs: Vec<TensorDesc>, flags: [AttrValue; 2]| {
        let mut d = op(op_type, &[], inputs, out(), "Ascend910B2");
        let [align, half] = flags;
        d.attrs.insert("align_corners".into(), align);
        d.attrs.insert("half_pixel_centers".into(), half);
        d.attrs.insert("size".into(), AttrValue::Ints(vec![32, 32]));
        to_ir(d).key().unwrap()
    };
    let (on, off) = (AttrValue::Int(1), AttrValue::Int(0));
    let aligned = onnx("linear", "align_corners");
    let tf = ir(
        "ResizeBilinearV2",
        vec![x(), int32(&[2])],
        [on.clone(), off.clone()],
    );
    let caffe = ir(
        "ResizeBilinearV2",
        vec![x()],
        [AttrValue::Bool(true), AttrValue::Bool(false)],
    );
    let caffe_reference = ir(
        "ResizeBilinearV2",
        vec![x(), out()],
        [AttrValue::Bool(true), AttrValue::Bool(false)],
    );
    assert_eq!(tf, aligned);
    assert_eq!(caffe, aligned);
    assert_eq!(caffe_reference, aligned);
    let nearest = ir(
        "ResizeNearestNeighborV2",
        vec![x(), int32(&[2])],
        [off.clone(), off.clone()],
    );
    assert_eq!(nearest, onnx("nearest", "asymmetric"));
    // TensorFlow's half-pixel centres are a flag ATC's ONNX plugin never sets for half_pixel.
    let half = ir(
        "ResizeBilinearV2",
        vec![x(), int32(&[2])],
        [off.clone(), on],
    );
    assert_ne!(half, onnx("linear", "half_pixel"));
    assert_eq!(half, onnx("linear", "pytorch_half_pixel"));
    assert_ne!(
        tf,
        ir(
            "ResizeBilinearV2",
            vec![x(), int32(&[2])],
            [off.clone(), off]
        )
    );
}
