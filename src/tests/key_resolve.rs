//! Resolution of op templates: shapes per dynamic profile, dtypes per precision options, impl
//! modes, formats, and the SoC table.

use std::collections::BTreeMap;

use tunebank::key::{
    derive_op_keys, resolve_op, CubeMath, DType, Format, ImplMode, MemFiles, OpDescriptor,
    OpTemplate, Profile, ResolveError, ResolvedOptions, SocSpec, TemplateTensor,
};

fn tt(shape: &[i64], dtype: DType) -> TemplateTensor {
    TemplateTensor {
        shape: shape.to_vec(),
        dtype,
        ori_format: None,
        format: None,
        graph_input: None,
        producer_dtype: None,
    }
}

fn fed(shape: &[i64], input: &str) -> TemplateTensor {
    TemplateTensor {
        graph_input: Some(input.to_string()),
        ..tt(shape, DType::Float32)
    }
}

fn op(name: &str, ty: &str, inputs: Vec<TemplateTensor>, out: &[i64]) -> OpTemplate {
    OpTemplate {
        node_name: name.into(),
        op_type: ty.into(),
        fused_ops: vec![],
        inputs,
        outputs: vec![tt(out, DType::Float32)],
        attrs: BTreeMap::new(),
    }
}

fn opts(args: &[&str]) -> ResolvedOptions {
    let files = MemFiles::default()
        .with(
            "hf32.ini",
            "[ByOpType]\nMatMul=enable_hi_float_32_execution\n",
        )
        .with(
            "byname.ini",
            "[ByNodeName]\ngelu_7=super_performance\n[ByOpType]\nGelu=high_precision\n",
        )
        .with("keep.cfg", "# keep these\nOpType::Softmax\nmm\n")
        .with(
            "mix.json",
            r#"{"gray-list": {"to-add": ["Softmax"]}, "white-list": {"to-remove": ["MatMul"]}}"#,
        );
    ResolvedOptions::from_args(args, &files).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn soc(v: &str) -> SocSpec {
    SocSpec::from_version(v).unwrap()
}

fn one(t: &OpTemplate, args: &[&str], soc_v: &str) -> OpDescriptor {
    let r = derive_op_keys(t, &opts(args), &soc(soc_v)).unwrap();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].profile, Profile::Static);
    assert_eq!(r[0].key, r[0].descriptor.key().unwrap());
    r.into_iter().next().unwrap().descriptor
}

fn matmul() -> OpTemplate {
    op(
        "mm",
        "MatMul",
        vec![fed(&[-1, 64], "data"), tt(&[64, 32], DType::Float32)],
        &[-1, 32],
    )
}

#[test]
fn dynamic_batch_gives_one_static_descriptor_per_profile() {
    let r = derive_op_keys(
        &matmul(),
        &opts(&["--input_shape=data:-1,64", "--dynamic_batch_size=1,4,8"]),
        &soc("Ascend910B2"),
    )
    .unwrap();
    let profiles: Vec<&Profile> = r.iter().map(|r| &r.profile).collect();
    assert_eq!(
        profiles,
        [&Profile::Batch(1), &Profile::Batch(4), &Profile::Batch(8)]
    );
    assert_eq!(r[1].descriptor.inputs[0].shape, [4, 64]);
    assert_eq!(r[1].descriptor.outputs[0].shape, [4, 32]);
    assert_eq!(r[2].descriptor.inputs[0].ori_shape, [8, 64]);
    assert_ne!(r[0].key, r[1].key);
    // A profile's key is the key of the same static shape: tuned once, hit either way.
    let fixed = one(&matmul(), &["--input_shape=data:4,64"], "Ascend910B2");
    assert_eq!(fixed.key().unwrap(), r[1].key);
}

#[test]
fn dynamic_image_size_fills_h_and_w_by_format() {
    let conv = op(
        "conv",
        "Conv2D",
        vec![
            fed(&[1, -1, -1, 3], "img"),
            tt(&[8, 3, 3, 3], DType::Float32),
        ],
        &[1, -1, -1, 8],
    );
    let r = derive_op_keys(
        &conv,
        &opts(&[
            "--input_format=NHWC",
            "--input_shape=img:1,-1,-1,3",
            "--dynamic_image_size=32,48;64,96",
        ]),
        &soc("Ascend910B2"),
    )
    .unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!(
        r[1].profile,
        Profile::ImageSize {
            height: 64,
            width: 96
        }
    );
    let d = &r[1].descriptor;
    assert_eq!(d.inputs[0].ori_shape, [1, 64, 96, 3]);
    assert_eq!(d.inputs[0].ori_format, Format::NHWC);
    assert_eq!(d.outputs[0].ori_shape, [1, 64, 96, 8]);
}

#[test]
fn dynamic_dims_fill_in_input_shape_order() {
    let add = op(
        "add",
        "Add",
        vec![fed(&[-1, 5], "a"), fed(&[-1, -1], "b")],
        &[-1, -1],
    );
    let r = derive_op_keys(
        &add,
        &opts(&[
            "--input_format=ND",
            "--input_shape=a:-1,5;b:-1,-1",
            "--dynamic_dims=2,3,4;6,7,8",
        ]),
        &soc("Ascend910B2"),
    )
    .unwrap();
    let d = &r[1].descriptor;
    assert_eq!(r[1].profile, Profile::Dims(vec![6, 7, 8]));
    assert_eq!(d.inputs[0].shape, [6, 5]);
    assert_eq!(d.inputs[1].shape, [7, 8]);
    assert_eq!(
        d.outputs[0].shape,
        [6, 7],
        "other tensors take the values in order"
    );
}

#[test]
fn unresolved_dynamic_dim_names_the_node() {
    let e = derive_op_keys(&matmul(), &opts(&[]), &soc("Ascend910B2")).unwrap_err();
    assert!(
        matches!(e, ResolveError::UnresolvedDim { dim: 0, .. }),
        "{e:?}"
    );
    let m = e.to_string();
    assert!(
        m.contains("\"mm\"") && m.contains("input 0") && m.contains("--input_shape"),
        "{m}"
    );
}

#[test]
fn input_shape_rank_must_match() {
    let e = derive_op_keys(
        &matmul(),
        &opts(&["--input_shape=data:1,2,3"]),
        &soc("Ascend910B2"),
    )
    .unwrap_err();
    assert!(
        matches!(e, ResolveError::RankMismatch { rank: 2, .. }),
        "{e:?}"
    );
}

/// Input and output dtypes of a descriptor.
type Dtypes = (Vec<DType>, Vec<DType>);

fn dtypes(d: &OpDescriptor) -> Dtypes {
    (
        d.inputs.iter().map(|t| t.dtype).collect(),
        d.outputs.iter().map(|t| t.dtype).collect(),
    )
}

const S: &str = "--input_shape=data:4,64";
use DType::{Bfloat16 as BF, Float16 as H, Float32 as F};

#[test]
fn precision_modes_pick_dtypes() {
    let gelu = op("gelu_7", "Gelu", vec![tt(&[4, 32], F)], &[4, 32]);
    let cases: &[(&str, &str, &OpTemplate, Dtypes)] = &[
        (
            "force_fp16",
            "Ascend910B2",
            &matmul(),
            (vec![H, H], vec![H]),
        ),
        (
            "force_fp32",
            "Ascend910B2",
            &matmul(),
            (vec![F, F], vec![F]),
        ),
        (
            "force_fp32",
            "Ascend310P3",
            &matmul(),
            (vec![H, H], vec![H]),
        ),
        (
            "cube_fp16in_fp32out",
            "Ascend910B2",
            &matmul(),
            (vec![H, H], vec![F]),
        ),
        (
            "cube_fp16in_fp32out",
            "Ascend310P3",
            &matmul(),
            (vec![H, H], vec![F]),
        ),
        (
            "cube_fp16in_fp32out",
            "Ascend910B2",
            &gelu,
            (vec![F], vec![F]),
        ),
        (
            "must_keep_origin_dtype",
            "Ascend910B2",
            &matmul(),
            (vec![F, F], vec![F]),
        ),
        (
            "must_keep_origin_dtype",
            "Ascend310P3",
            &matmul(),
            (vec![H, H], vec![H]),
        ),
        (
            "allow_fp32_to_fp16",
            "Ascend910B2",
            &matmul(),
            (vec![H, H], vec![H]),
        ),
        (
            "allow_fp32_to_fp16",
            "Ascend910B2",
            &gelu,
            (vec![F], vec![F]),
        ),
        (
            "allow_fp32_to_bf16",
            "Ascend910B2",
            &matmul(),
            (vec![BF, BF], vec![BF]),
        ),
        (
            "allow_fp32_to_bf16",
            "Ascend310P3",
            &matmul(),
            (vec![H, H], vec![H]),
        ),
        (
            "allow_mix_precision",
            "Ascend910B2",
            &matmul(),
            (vec![H, H], vec![H]),
        ),
        (
            "allow_mix_precision_bf16",
            "Ascend910B2",
            &matmul(),
            (vec![BF, BF], vec![BF]),
        ),
        (
            "allow_mix_precision",
            "Ascend910B2",
            &gelu,
            (vec![F], vec![F]),
        ),
    ];
    for (mode, soc_v, t, want) in cases {
        let d = one(t, &[S, &format!("--precision_mode={mode}")], soc_v);
        assert_eq!(&dtypes(&d), want, "{mode} on {soc_v} for {}", t.op_type);
    }
}

#[test]
fn mixed_precision_lists() {
    let softmax = op("sm", "Softmax", vec![tt(&[4, 32], F)], &[4, 32]);
    let log = op("lg", "Log", vec![tt(&[4, 32], F)], &[4, 32]);
    let mut add = op(
        "add",
        "Add",
        vec![tt(&[4, 32], F), tt(&[4, 32], F)],
        &[4, 32],
    );
    let mix = "--precision_mode=allow_mix_precision";
    let fed_fp16 = |t: &OpTemplate| {
        let mut t = t.clone();
        t.inputs[0].producer_dtype = Some(H);
        t
    };
    // On 910B2 the classes are CANN's op information for the 910B family: Log's
    // `precision_reduce` is false (black: keeps fp32 even after an fp16 producer) ...
    assert_eq!(
        dtypes(&one(&fed_fp16(&log), &[mix], "Ascend910B2")),
        (vec![F], vec![F]),
        "black keeps fp32"
    );
    assert_eq!(
        dtypes(&one(&add, &[mix], "Ascend910B2")),
        (vec![F, F], vec![F]),
        "gray with no producer keeps"
    );
    add.inputs[0].producer_dtype = Some(H);
    assert_eq!(
        dtypes(&one(&add, &[mix], "Ascend910B2")),
        (vec![H, H], vec![H]),
        "gray follows producer"
    );
    // ... and SoftmaxV2 has no flag there (gray: follows its producer), where the built-in
    // lists, which SoCs without op information use (Ascend610), make Softmax black.
    assert_eq!(
        dtypes(&one(&fed_fp16(&softmax), &[mix], "Ascend910B2")),
        (vec![H], vec![H]),
        "SoftmaxV2 is gray in the 910B op information"
    );
    assert_eq!(
        dtypes(&one(&softmax, &[mix], "Ascend910B2")),
        (vec![F], vec![F]),
        "gray with no producer keeps"
    );
    assert_eq!(
        dtypes(&one(&fed_fp16(&softmax), &[mix], "Ascend610")),
        (vec![F], vec![F]),
        "built-in black list without op information"
    );
    // ATC compiles an optimizer update as its `D` kernel, which the op information marks
    // black: Adam's update keeps fp32 after an fp16 gradient. ReduceSum's IR is ReduceSumD,
    // gray there (though ReduceSum itself is black).
    let adam = op(
        "adam",
        "ApplyAdam",
        vec![tt(&[4, 32], F), tt(&[4, 32], F)],
        &[4, 32],
    );
    let mut adam_fed = adam.clone();
    adam_fed.inputs[1].producer_dtype = Some(H);
    assert_eq!(
        dtypes(&one(&adam_fed, &[mix], "Ascend910B2")),
        (vec![F, F], vec![F]),
        "ApplyAdamD is black"
    );
    let sum = op("sum", "ReduceSum", vec![tt(&[4, 32], F)], &[4]);
    assert_eq!(
        dtypes(&one(&fed_fp16(&sum), &[mix], "Ascend910B2")),
        (vec![H], vec![H]),
        "ReduceSumD is gray"
    );
    // modify_mixlist: Softmax to gray, MatMul out of white (gray: no producer, keeps). The
    // patch names the framework type; it applies to the op whatever its IR spelling.
    let patched = [mix, "--modify_mixlist=mix.json", S];
    assert_eq!(
        dtypes(&one(&matmul(), &patched, "Ascend910B2")),
        (vec![F, F], vec![F])
    );
    assert_eq!(
        dtypes(&one(&matmul(), &[mix, S], "Ascend910B2")),
        (vec![H, H], vec![H]),
        "MatMulV2 is white in the 910B op information"
    );
    assert_eq!(
        dtypes(&one(&fed_fp16(&softmax), &patched, "Ascend610")),
        (vec![H], vec![H]),
        "the patch's gray wins over the built-in black"
    );
}

#[test]
fn keep_dtype_and_op_precision_mode() {
    let softmax = op("sm", "Softmax", vec![tt(&[4, 32], F)], &[4, 32]);
    let keep = "--keep_dtype=keep.cfg";
    assert_eq!(
        dtypes(&one(&matmul(), &[S, keep], "Ascend910B2")),
        (vec![F, F], vec![F]),
        "by name"
    );
    assert_eq!(
        dtypes(&one(&softmax, &[keep], "Ascend910B2")),
        (vec![F], vec![F]),
        "by type"
    );
    let d = one(
        &matmul(),
        &[S, "--op_precision_mode=hf32.ini"],
        "Ascend910B2",
    );
    assert_eq!(
        (dtypes(&d), d.cube_math),
        ((vec![F, F], vec![F]), CubeMath::Hf32)
    );
    let d = one(
        &matmul(),
        &[S, "--op_precision_mode=hf32.ini"],
        "Ascend310P3",
    );
    assert_eq!(
        (dtypes(&d), d.cube_math),
        ((vec![H, H], vec![H]), CubeMath::Native)
    );
    let gelu7 = op("gelu_7", "Gelu", vec![tt(&[4, 32], F)], &[4, 32]);
    let gelu8 = op("gelu_8", "Gelu", vec![tt(&[4, 32], F)], &[4, 32]);
    let by_name = "--op_precision_mode=byname.ini";
    assert_eq!(
        one(&gelu7, &[by_name], "Ascend910B2").impl_mode,
        ImplMode::SuperPerformance
    );
    assert_eq!(
        one(&gelu8, &[by_name], "Ascend910B2").impl_mode,
        ImplMode::HighPrecision
    );
}

#[test]
fn impl_modes() {
    let gelu = op("g", "Gelu", vec![tt(&[4, 32], F)], &[4, 32]);
    let im = |t: &OpTemplate, a: &[&str]| one(t, &[&[S][..], a].concat(), "Ascend910B2").impl_mode;
    use ImplMode::{HighPerformance as P, HighPrecision as HP};
    assert_eq!(im(&gelu, &[]), P);
    assert_eq!(im(&gelu, &["--op_select_implmode=high_precision"]), HP);
    assert_eq!(
        im(&matmul(), &["--op_select_implmode=high_precision"]),
        P,
        "not in the impl list"
    );
    assert_eq!(
        im(&matmul(), &["--op_select_implmode=high_precision_for_all"]),
        HP
    );
    let only_mm = [
        "--op_select_implmode=high_precision",
        "--optypelist_for_implmode=matmul",
    ];
    assert_eq!(im(&matmul(), &only_mm), HP);
    assert_eq!(im(&gelu, &only_mm), P);
}

#[test]
fn input_fp16_nodes_and_formats() {
    let keep = "--precision_mode=must_keep_origin_dtype";
    let d = one(
        &matmul(),
        &[S, keep, "--input_fp16_nodes=data"],
        "Ascend910B2",
    );
    assert_eq!(dtypes(&d), (vec![H, F], vec![F]));

    let mut conv = op(
        "conv",
        "Conv2D",
        vec![fed(&[2, 20, 7, 7], "x"), tt(&[33, 20, 3, 3], F)],
        &[2, 33, 5, 5],
    );
    conv.inputs[0].format = Some(Format::NC1HWC0);
    conv.inputs[1].format = Some(Format::FractalZ);
    conv.outputs[0].format = Some(Format::NC1HWC0);
    let d = one(&conv, &[], "Ascend910B2");
    assert_eq!(d.inputs[0].ori_format, Format::NCHW);
    assert_eq!(d.inputs[0].shape, [2, 2, 7, 7, 16]);
    assert_eq!(d.inputs[1].shape, [2 * 3 * 3, 3, 16, 16]);
    assert_eq!(d.outputs[0].shape, [2, 3, 5, 5, 16]);
    let d2 = one(&conv, &["--input_format=NHWC"], "Ascend910B2");
    assert_eq!(
        d2.inputs[0].ori_format,
        Format::NHWC,
        "input_format decides graph inputs"
    );
    assert_eq!(
        d2.inputs[0].shape,
        [2, 1, 20, 7, 16],
        "NHWC [2,20,7,7] has C = 7"
    );
    assert_ne!(d.key().unwrap(), d2.key().unwrap());
}

#[test]
fn fractal_nz_layout() {
    let mut mm = matmul();
    mm.outputs[0].format = Some(Format::FractalNz);
    let d = one(&mm, &["--input_shape=data:100,64"], "Ascend910B2");
    assert_eq!(d.outputs[0].ori_shape, [100, 32]);
    assert_eq!(d.outputs[0].shape, [2, 7, 16, 16]);
}

#[test]
fn resolve_op_is_what_derive_uses() {
    let o = opts(&[S]);
    let s = soc("Ascend910B2");
    let d = resolve_op(&matmul(), &o, &s, &Profile::Static).unwrap();
    assert_eq!(derive_op_keys(&matmul(), &o, &s).unwrap()[0].descriptor, d);
}

#[test]
fn soc_table() {
    assert_eq!(soc("Ascend910B2").core_count, 24);
    assert_eq!(soc("Ascend310P3").core_count, 8);
    assert_eq!(soc("Ascend910B4").core_count, 20);
    assert_eq!(soc("Ascend910B2").core_type, "AiCore");
    let e = SocSpec::from_version("Ascend920").unwrap_err().to_string();
    assert!(
        e.contains("Ascend920") && e.contains("Ascend910B1") && e.contains("Ascend310B1"),
        "{e}"
    );
}

#[test]
fn node_names_never_enter_op_keys() {
    let o = opts(&[S, "--precision_mode=allow_mix_precision"]);
    let mut a = matmul();
    let k = derive_op_keys(&a, &o, &soc("Ascend910B2")).unwrap()[0].key;
    a.node_name = "/encoder/layer.3/MatMul_17".into();
    assert_eq!(
        k,
        derive_op_keys(&a, &o, &soc("Ascend910B2")).unwrap()[0].key
    );
}

#[test]
fn op_descriptor_json_minimal_form() {
    let json = r#"{"op_type": "Relu",
        "inputs": [{"shape": [2, 3], "ori_shape": [2, 3], "dtype": "float16", "format": "ND", "ori_format": "ND"}],
        "outputs": [{"shape": [2, 3], "ori_shape": [2, 3], "dtype": "float16", "format": "FRACTAL_NZ", "ori_format": "ND"}],
        "impl_mode": "high_performance",
        "soc": {"version": "Ascend910B2", "core_count": 24, "core_type": "AiCore"}}"#;
    let d: OpDescriptor = serde_json::from_str(json).unwrap();
    assert!(d.fused_ops.is_empty() && d.attrs.is_empty());
    assert_eq!(d.cube_math, CubeMath::Native);
    assert_eq!(d.outputs[0].format, Format::FractalNz);
    d.key().unwrap();
}

#[test]
fn a_matmul_bias_takes_its_dtype_by_cann_s_matmulv2_rule_on_each_soc() {
    // An fp32 model's Gemm with a bias of one value per output column.
    let gemm = op(
        "fc",
        "Gemm",
        vec![fed(&[-1, 64], "data"), tt(&[64, 32], F), tt(&[32], F)],
        &[-1, 32],
    );
    let keep = "--precision_mode=must_keep_origin_dtype";
    let force = "--precision_mode=force_fp16";
    type Dtypes = (Vec<DType>, Vec<DType>);
    let cases: &[(&str, &str, Dtypes)] = &[
        // 910B: fp32 cube and the fixpipe: everything keeps fp32; force_fp16 lowers the bias too.
        ("Ascend910B2", keep, (vec![F, F, F], vec![F])),
        ("Ascend910B2", force, (vec![H, H, H], vec![H])),
        // 310B: the fixpipe without an fp32 cube: fp16 operands, and the fp32 bias the
        // fixpipe accepts stays fp32.
        ("Ascend310B1", keep, (vec![H, H, F], vec![H])),
        // 310P and 910A: no fixpipe: the bias has the operands' dtype.
        ("Ascend310P3", keep, (vec![H, H, H], vec![H])),
        ("Ascend910A", keep, (vec![H, H, H], vec![H])),
    ];
    for (soc_v, mode, want) in cases {
        let d = one(&gemm, &[S, mode], soc_v);
        assert_eq!(&dtypes(&d), want, "{mode} on {soc_v}");
        assert_eq!(
            d.inputs[2].shape,
            [32],
            "{soc_v}: the bias input of MatMulV2"
        );
    }
    // An addend that is not a bias row (a whole [4, 32] matrix added after the MatMul) is not
    // the op's bias: on 310B it follows the cube's support like the operands.
    let mut residual = op(
        "mm_add",
        "MatMul",
        vec![fed(&[-1, 64], "data"), tt(&[64, 32], F), tt(&[4, 32], F)],
        &[-1, 32],
    );
    residual.fused_ops = vec!["MatMul".into(), "Add".into()];
    let d = one(&residual, &[S, keep], "Ascend310B1");
    assert_eq!(dtypes(&d).0, [H, H, H]);
}
