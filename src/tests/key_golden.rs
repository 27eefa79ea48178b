//! Golden keys: `fixtures/keys/golden.json` pins the keys (and the JSON form) of a few
//! descriptors, and of a few op templates resolved under given options. An accidental change to
//! the encoding, the JSON form or the resolution semantics fails here.
//!
//! After a deliberate change (which must bump `KEY_SCHEMA_VERSION` if keys move), regenerate:
//! `TUNEBANK_BLESS=1 cargo test --test it key_golden`, and review the diff. Under CI (`CI=true`
//! or `CI=1`) a set `TUNEBANK_BLESS` fails the test and writes nothing.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{json, Value};
use tunebank::key::{
    derive_op_keys, AttrValue, BankKey, CubeMath, DType, Format, GradientDescriptor,
    GraphDescriptor, GraphNode, ImplMode, MemFiles, OpDescriptor, OpTemplate, ResolvedOptions,
    SocSpec, TemplateTensor, TensorDesc, TensorSource, KEY_SCHEMA_VERSION,
};

fn td(shape: &[i64], ori: &[i64], dtype: DType, format: Format, ori_format: Format) -> TensorDesc {
    TensorDesc {
        shape: shape.to_vec(),
        ori_shape: ori.to_vec(),
        dtype,
        format,
        ori_format,
    }
}

fn soc(v: &str) -> SocSpec {
    SocSpec::from_version(v).unwrap()
}

fn op_cases() -> Vec<(&'static str, OpDescriptor)> {
    let nd = |s: &[i64], d| td(s, s, d, Format::ND, Format::ND);
    let mut attrs = BTreeMap::new();
    attrs.insert("transpose_x1".into(), AttrValue::Bool(false));
    attrs.insert("transpose_x2".into(), AttrValue::Bool(true));
    let matmul = OpDescriptor {
        op_type: "MatMulV2".into(),
        fused_ops: vec![],
        inputs: vec![
            nd(&[1024, 4096], DType::Float16),
            nd(&[11008, 4096], DType::Float16),
        ],
        outputs: vec![nd(&[1024, 11008], DType::Float16)],
        attrs,
        impl_mode: ImplMode::HighPerformance,
        cube_math: CubeMath::Native,
        soc: soc("Ascend910B2"),
        origin: None,
    };
    let mut attrs = BTreeMap::new();
    attrs.insert("strides".into(), AttrValue::Ints(vec![1, 1, 2, 2]));
    attrs.insert("pads".into(), AttrValue::Ints(vec![1, 1, 1, 1]));
    attrs.insert("data_format".into(), AttrValue::Str("NCHW".into()));
    attrs.insert("offset_x".into(), AttrValue::Int(-3));
    attrs.insert("alpha".into(), AttrValue::Float(-0.0));
    attrs.insert("scales".into(), AttrValue::Floats(vec![0.5, 1e-3, -2.25]));
    attrs.insert(
        "tags".into(),
        AttrValue::Strs(vec!["a".into(), "".into(), "ü".into()]),
    );
    let conv = OpDescriptor {
        op_type: "Conv2D".into(),
        fused_ops: vec!["Conv2D".into(), "Relu".into()],
        inputs: vec![
            td(
                &[8, 4, 56, 56, 16],
                &[8, 64, 56, 56],
                DType::Float16,
                Format::NC1HWC0,
                Format::NCHW,
            ),
            td(
                &[36, 8, 16, 16],
                &[128, 64, 3, 3],
                DType::Float16,
                Format::FractalZ,
                Format::NCHW,
            ),
        ],
        outputs: vec![td(
            &[8, 8, 28, 28, 16],
            &[8, 128, 28, 28],
            DType::Float16,
            Format::NC1HWC0,
            Format::NCHW,
        )],
        attrs,
        impl_mode: ImplMode::HighPrecision,
        cube_math: CubeMath::Native,
        soc: soc("Ascend910B2"),
        origin: None,
    };
    let softmax = OpDescriptor {
        op_type: "SoftmaxV2".into(),
        fused_ops: vec![],
        inputs: vec![nd(&[32, 12, 128, 128], DType::Float32)],
        outputs: vec![nd(&[32, 12, 128, 128], DType::Float32)],
        attrs: [("axes".to_string(), AttrValue::Ints(vec![-1]))]
            .into_iter()
            .collect(),
        impl_mode: ImplMode::HighPerformance,
        cube_math: CubeMath::Native,
        soc: SocSpec {
            version: "Ascend310P3".into(),
            core_count: 7,
            core_type: "VectorCore".into(),
        },
        origin: None,
    };
    let mut hf32 = matmul.clone();
    hf32.inputs
        .iter_mut()
        .chain(hf32.outputs.iter_mut())
        .for_each(|t| t.dtype = DType::Float32);
    hf32.cube_math = CubeMath::Hf32;
    vec![
        ("matmul_fp16_910b2", matmul),
        ("conv_relu_fused_nc1hwc0", conv),
        ("softmax_310p3_vector", softmax),
        ("matmul_hf32", hf32),
    ]
}

fn graph_case() -> GraphDescriptor {
    let t = td(&[8, 16], &[8, 16], DType::Float16, Format::ND, Format::ND);
    let node = |name: &str, ty: &str, inputs: Vec<TensorSource>| GraphNode {
        name: name.into(),
        op_type: ty.into(),
        inputs,
        outputs: vec![t.clone()],
        attrs: BTreeMap::new(),
    };
    let mut options = BTreeMap::new();
    options.insert(
        "precision_mode".to_string(),
        "allow_mix_precision".to_string(),
    );
    options.insert("input_shape".to_string(), "x:8,16".to_string());
    GraphDescriptor {
        soc: soc("Ascend910B2"),
        inputs: vec![t.clone()],
        nodes: vec![
            node("relu", "Relu", vec![TensorSource::GraphInput { index: 0 }]),
            node(
                "add",
                "Add",
                vec![
                    TensorSource::Node { node: 0, output: 0 },
                    TensorSource::GraphInput { index: 0 },
                ],
            ),
        ],
        outputs: vec![TensorSource::Node { node: 1, output: 0 }],
        options,
    }
}

fn gradient_case() -> GradientDescriptor {
    GradientDescriptor {
        soc: soc("Ascend910B2"),
        model_structure: graph_case().key().unwrap(),
        gradient_bytes: vec![4 << 20, 16 << 20, 1 << 10],
        world_size: 8,
        topology: None,
    }
}

fn template_cases() -> Vec<(&'static str, OpTemplate, Vec<&'static str>)> {
    let t = |shape: &[i64], dtype, input: Option<&str>| TemplateTensor {
        shape: shape.to_vec(),
        dtype,
        ori_format: None,
        format: None,
        graph_input: input.map(str::to_string),
        producer_dtype: None,
    };
    let matmul = OpTemplate {
        node_name: "fc1".into(),
        op_type: "MatMul".into(),
        fused_ops: vec![],
        inputs: vec![
            t(&[-1, 768], DType::Float32, Some("tokens")),
            t(&[768, 3072], DType::Float32, None),
        ],
        outputs: vec![t(&[-1, 3072], DType::Float32, None)],
        attrs: BTreeMap::new(),
    };
    let gelu = OpTemplate {
        node_name: "act".into(),
        op_type: "Gelu".into(),
        fused_ops: vec![],
        inputs: vec![t(&[16, 3072], DType::Float32, None)],
        outputs: vec![t(&[16, 3072], DType::Float32, None)],
        attrs: BTreeMap::new(),
    };
    vec![
        (
            "matmul_dynamic_batch_mixed",
            matmul,
            vec![
                "--soc_version=Ascend910B2",
                "--input_shape=tokens:-1,768",
                "--dynamic_batch_size=1,8,32",
                "--precision_mode=allow_mix_precision",
            ],
        ),
        (
            "gelu_high_precision_310p3",
            gelu,
            vec![
                "--soc_version=Ascend310P3",
                "--op_select_implmode=high_precision",
                "--precision_mode=force_fp32",
            ],
        ),
    ]
}

fn hex(k: BankKey) -> Value {
    Value::String(k.to_string())
}

fn generate() -> Value {
    let mut cases = Vec::new();
    for (name, d) in op_cases() {
        cases.push(
            json!({"name": name, "kind": "op", "descriptor": d, "key": hex(d.key().unwrap())}),
        );
    }
    let g = graph_case();
    cases.push(json!({"name": "relu_add_graph", "kind": "graph", "descriptor": g, "key": hex(g.key().unwrap())}));
    let gr = gradient_case();
    cases.push(json!({"name": "gradient_8_ranks", "kind": "gradient", "descriptor": gr, "key": hex(gr.key().unwrap())}));
    for (name, tpl, args) in template_cases() {
        let opts = ResolvedOptions::from_args(&args, &MemFiles::default()).unwrap();
        let keys: Vec<Value> = derive_op_keys(&tpl, &opts, &opts.soc().unwrap())
            .unwrap()
            .into_iter()
            .map(|r| json!({"profile": r.profile, "key": hex(r.key)}))
            .collect();
        cases.push(
            json!({"name": name, "kind": "template", "template": tpl, "args": args, "keys": keys}),
        );
    }
    json!({
        "key_schema_version": KEY_SCHEMA_VERSION,
        "regenerate": "TUNEBANK_BLESS=1 cargo test --test it key_golden",
        "cases": cases,
    })
}

fn fixture_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/keys/golden.json")
}

fn key_of(kind: &str, descriptor: &Value) -> BankKey {
    match kind {
        "op" => serde_json::from_value::<OpDescriptor>(descriptor.clone())
            .unwrap()
            .key(),
        "graph" => serde_json::from_value::<GraphDescriptor>(descriptor.clone())
            .unwrap()
            .key(),
        "gradient" => serde_json::from_value::<GradientDescriptor>(descriptor.clone())
            .unwrap()
            .key(),
        other => panic!("unknown kind {other}"),
    }
    .unwrap()
}

#[test]
fn golden_keys() {
    let generated = generate();
    if std::env::var_os("TUNEBANK_BLESS").is_some() {
        assert!(
            !crate::common::in_ci(),
            "TUNEBANK_BLESS is set under CI: CI checks the golden keys, it never rewrites them"
        );
        let text = serde_json::to_string_pretty(&generated).unwrap() + "\n";
        std::fs::write(fixture_path(), text).unwrap();
        return;
    }
    let text = std::fs::read_to_string(fixture_path()).expect("fixtures/keys/golden.json");
    let stored: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        stored["key_schema_version"],
        json!(KEY_SCHEMA_VERSION),
        "schema version moved: regenerate the fixture"
    );
    let stored_cases = stored["cases"].as_array().unwrap();
    assert!(stored_cases.len() >= 8);
    // Keys recomputed from the stored JSON descriptors match the stored keys.
    for c in stored_cases {
        let name = c["name"].as_str().unwrap();
        if c["kind"] == "template" {
            let tpl: OpTemplate = serde_json::from_value(c["template"].clone()).unwrap();
            let args: Vec<String> = serde_json::from_value(c["args"].clone()).unwrap();
            let opts = ResolvedOptions::from_args(&args, &MemFiles::default()).unwrap();
            let got: Vec<String> = derive_op_keys(&tpl, &opts, &opts.soc().unwrap())
                .unwrap()
                .iter()
                .map(|r| r.key.to_string())
                .collect();
            let want: Vec<String> = c["keys"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| k["key"].as_str().unwrap().to_string())
                .collect();
            assert_eq!(got, want, "case {name}: resolution or encoding changed");
        } else {
            let key = key_of(c["kind"].as_str().unwrap(), &c["descriptor"]);
            assert_eq!(
                key.to_string(),
                c["key"].as_str().unwrap(),
                "case {name}: encoding changed"
            );
        }
    }
    // The in-code descriptors still serialise to the stored JSON and give the stored keys.
    assert_eq!(
        generated, stored,
        "JSON form or keys changed; if deliberate, regenerate (see header)"
    );
}
