//! Canonical encoding: what must and must not change a key, and the text forms of `BankKey`.

use std::collections::BTreeMap;

use tunebank::key::{
    AttrValue, BankKey, CubeMath, DType, Format, GradientDescriptor, GraphDescriptor, GraphNode,
    ImplMode, KeyError, OpDescriptor, SocSpec, TensorDesc, TensorSource,
};

fn t(shape: &[i64], dtype: DType) -> TensorDesc {
    TensorDesc {
        shape: shape.to_vec(),
        ori_shape: shape.to_vec(),
        dtype,
        format: Format::ND,
        ori_format: Format::ND,
    }
}

fn matmul() -> OpDescriptor {
    let mut attrs = BTreeMap::new();
    attrs.insert("transpose_x1".to_string(), AttrValue::Bool(false));
    attrs.insert("transpose_x2".to_string(), AttrValue::Bool(true));
    attrs.insert("offset_x".to_string(), AttrValue::Int(0));
    attrs.insert("alpha".to_string(), AttrValue::Float(1.0));
    OpDescriptor {
        op_type: "MatMul".into(),
        fused_ops: vec![],
        inputs: vec![
            t(&[128, 256], DType::Float16),
            t(&[512, 256], DType::Float16),
        ],
        outputs: vec![t(&[128, 512], DType::Float16)],
        attrs,
        impl_mode: ImplMode::HighPerformance,
        cube_math: CubeMath::Native,
        soc: SocSpec::from_version("Ascend910B2").unwrap(),
        origin: None,
    }
}

fn key(d: &OpDescriptor) -> BankKey {
    d.key().unwrap()
}

#[test]
fn same_descriptor_same_key_through_clone_and_json() {
    let d = matmul();
    assert_eq!(key(&d), key(&d.clone()));
    let json = serde_json::to_string(&d).unwrap();
    let back: OpDescriptor = serde_json::from_str(&json).unwrap();
    assert_eq!(key(&d), key(&back));
}

#[test]
fn attribute_order_in_json_does_not_matter() {
    let a = r#"{"op_type":"Add","inputs":[],"outputs":[],"fused_ops":[],
        "attrs":{"a":{"int":1},"b":{"str":"x"},"c":{"floats":[0.5]}},
        "impl_mode":"high_performance","soc":{"version":"Ascend910B2","core_count":24,"core_type":"AiCore"}}"#;
    let b = r#"{"soc":{"core_type":"AiCore","core_count":24,"version":"Ascend910B2"},
        "attrs":{"c":{"floats":[0.5]},"a":{"int":1},"b":{"str":"x"}},
        "impl_mode":"high_performance","outputs":[],"inputs":[],"fused_ops":[],"op_type":"Add"}"#;
    let a: OpDescriptor = serde_json::from_str(a).unwrap();
    let b: OpDescriptor = serde_json::from_str(b).unwrap();
    assert_eq!(key(&a), key(&b));
}

#[test]
fn op_type_is_case_folded() {
    let mut d = matmul();
    let k = key(&d);
    d.op_type = "MATMUL".into();
    assert_eq!(k, key(&d));
    d.op_type = "matmul".into();
    assert_eq!(k, key(&d));
    d.fused_ops = vec!["MatMul".into(), "Relu".into()];
    let f = key(&d);
    d.fused_ops = vec!["matmul".into(), "RELU".into()];
    assert_eq!(f, key(&d));
}

#[test]
fn negative_zero_is_zero_and_nan_is_rejected() {
    let mut d = matmul();
    d.attrs.insert("beta".into(), AttrValue::Float(0.0));
    let k = key(&d);
    d.attrs.insert("beta".into(), AttrValue::Float(-0.0));
    assert_eq!(k, key(&d));
    d.attrs
        .insert("beta".into(), AttrValue::Floats(vec![1.0, -0.0]));
    let k2 = key(&d);
    d.attrs
        .insert("beta".into(), AttrValue::Floats(vec![1.0, 0.0]));
    assert_eq!(k2, key(&d));
    d.attrs.insert("beta".into(), AttrValue::Float(f64::NAN));
    let e = d.key().unwrap_err();
    assert_eq!(
        e,
        KeyError::NanAttr {
            attr: "beta".into()
        }
    );
    assert!(e.to_string().contains("\"beta\""), "{e}");
    d.attrs
        .insert("beta".into(), AttrValue::Floats(vec![1.0, f64::NAN]));
    assert!(matches!(d.key(), Err(KeyError::NanAttr { attr }) if attr == "beta"));
}

#[test]
fn dynamic_dim_has_no_key() {
    let mut d = matmul();
    d.inputs[0].shape[0] = -1;
    let e = d.key().unwrap_err();
    assert!(
        matches!(
            e,
            KeyError::DynamicDim {
                dim: 0,
                value: -1,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("input 0"), "{e}");
}

#[test]
fn every_field_changes_the_key() {
    let base = matmul();
    let k = key(&base);
    let mut variants: Vec<(&str, OpDescriptor)> = Vec::new();
    let mut v = |name, f: &dyn Fn(&mut OpDescriptor)| {
        let mut d = base.clone();
        f(&mut d);
        variants.push((name, d));
    };
    v("op_type", &|d| d.op_type = "BatchMatMul".into());
    v("fused_ops", &|d| {
        d.fused_ops = vec!["MatMul".into(), "Add".into()]
    });
    v("shape", &|d| d.inputs[0].shape = vec![128, 257]);
    v("ori_shape", &|d| d.inputs[0].ori_shape = vec![256, 128]);
    v("dtype", &|d| d.inputs[1].dtype = DType::Bfloat16);
    v("format", &|d| d.outputs[0].format = Format::FractalNz);
    v("ori_format", &|d| d.outputs[0].ori_format = Format::NCHW);
    v("extra output", &|d| d.outputs.push(t(&[1], DType::Float16)));
    v("input moved to outputs", &|d| {
        let x = d.inputs.pop().unwrap();
        d.outputs.insert(0, x);
    });
    v("attr value", &|d| {
        d.attrs.insert("offset_x".into(), AttrValue::Int(1));
    });
    v("attr type", &|d| {
        d.attrs.insert("offset_x".into(), AttrValue::Float(0.0));
    });
    v("attr name", &|d| {
        let x = d.attrs.remove("offset_x").unwrap();
        d.attrs.insert("offset_y".into(), x);
    });
    v("attr removed", &|d| {
        d.attrs.remove("alpha");
    });
    v("impl_mode", &|d| d.impl_mode = ImplMode::HighPrecision);
    v("cube_math", &|d| d.cube_math = CubeMath::Hf32);
    v("soc version", &|d| d.soc.version = "Ascend910B3".into());
    v("core_count", &|d| d.soc.core_count = 20);
    v("core_type", &|d| d.soc.core_type = "VectorCore".into());
    for (name, d) in &variants {
        assert_ne!(k, key(d), "changing {name} must change the key");
    }
    let mut keys: Vec<BankKey> = variants.iter().map(|(_, d)| key(d)).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(
        keys.len(),
        variants.len(),
        "variants must have distinct keys"
    );
}

#[test]
fn lengths_are_prefixed() {
    let mut a = matmul();
    let mut b = matmul();
    a.attrs
        .insert("s".into(), AttrValue::Strs(vec!["ab".into(), "c".into()]));
    b.attrs
        .insert("s".into(), AttrValue::Strs(vec!["a".into(), "bc".into()]));
    assert_ne!(key(&a), key(&b));
    a.inputs[0].shape = vec![1, 2];
    a.inputs[0].ori_shape = vec![3];
    b.attrs = a.attrs.clone();
    b.inputs[0].shape = vec![1];
    b.inputs[0].ori_shape = vec![2, 3];
    assert_ne!(key(&a), key(&b));
}

fn relu_add_graph() -> GraphDescriptor {
    // x -> relu -> add(relu, x) -> out; x -> sigmoid (second output)
    let f = t(&[8, 16], DType::Float16);
    let node = |name: &str, ty: &str, inputs: Vec<TensorSource>| GraphNode {
        name: name.into(),
        op_type: ty.into(),
        inputs,
        outputs: vec![f.clone()],
        attrs: BTreeMap::new(),
    };
    GraphDescriptor {
        soc: SocSpec::from_version("Ascend910B2").unwrap(),
        inputs: vec![f.clone()],
        nodes: vec![
            node(
                "relu_1",
                "Relu",
                vec![TensorSource::GraphInput { index: 0 }],
            ),
            node(
                "add_1",
                "Add",
                vec![
                    TensorSource::Node { node: 0, output: 0 },
                    TensorSource::GraphInput { index: 0 },
                ],
            ),
            node(
                "sig",
                "Sigmoid",
                vec![TensorSource::GraphInput { index: 0 }],
            ),
        ],
        outputs: vec![
            TensorSource::Node { node: 1, output: 0 },
            TensorSource::Node { node: 2, output: 0 },
        ],
        options: BTreeMap::new(),
    }
}

/// Reorders nodes by `perm` (new position i holds old node perm[i]) and renames them.
fn permuted(g: &GraphDescriptor, perm: &[usize]) -> GraphDescriptor {
    let mut inv = vec![0; perm.len()];
    for (new, &old) in perm.iter().enumerate() {
        inv[old] = new;
    }
    let remap = |s: &TensorSource| match *s {
        TensorSource::Node { node, output } => TensorSource::Node {
            node: inv[node as usize] as u32,
            output,
        },
        other => other,
    };
    let mut h = g.clone();
    h.nodes = perm
        .iter()
        .map(|&old| {
            let mut n = g.nodes[old].clone();
            n.name = format!("renamed_{old}_{}", n.name.len() * 7);
            n.inputs = n.inputs.iter().map(remap).collect();
            n
        })
        .collect();
    h.outputs = g.outputs.iter().map(remap).collect();
    h
}

#[test]
fn graph_key_ignores_node_order_and_names() {
    let g = relu_add_graph();
    let k = g.key().unwrap();
    for perm in [[0, 1, 2], [1, 0, 2], [2, 1, 0], [1, 2, 0]] {
        assert_eq!(k, permuted(&g, &perm).key().unwrap(), "perm {perm:?}");
    }
}

#[test]
fn graph_key_sees_structure() {
    let g = relu_add_graph();
    let k = g.key().unwrap();
    let mut swapped_ports = g.clone();
    swapped_ports.nodes[1].inputs.reverse();
    assert_ne!(k, swapped_ports.key().unwrap());
    let mut outputs_reordered = g.clone();
    outputs_reordered.outputs.reverse();
    assert_ne!(k, outputs_reordered.key().unwrap());
    let mut retyped = g.clone();
    retyped.nodes[2].op_type = "Tanh".into();
    assert_ne!(k, retyped.key().unwrap());
    let mut reshaped = g.clone();
    reshaped.nodes[0].outputs[0].shape = vec![8, 17];
    assert_ne!(k, reshaped.key().unwrap());
    let mut attr = g.clone();
    attr.nodes[0]
        .attrs
        .insert("alpha".into(), AttrValue::Float(0.1));
    assert_ne!(k, attr.key().unwrap());
    let mut optioned = g.clone();
    optioned
        .options
        .insert("precision_mode".into(), "force_fp32".into());
    assert_ne!(k, optioned.key().unwrap());
    let mut soc = g.clone();
    soc.soc = SocSpec::from_version("Ascend310P3").unwrap();
    assert_ne!(k, soc.key().unwrap());
    // Sharing one producer differs from two identical producers.
    let mut shared = g.clone();
    shared.nodes[1].inputs[1] = TensorSource::Node { node: 0, output: 0 };
    let mut dup = shared.clone();
    dup.nodes.push(dup.nodes[0].clone());
    dup.nodes[1].inputs[1] = TensorSource::Node { node: 3, output: 0 };
    assert_ne!(shared.key().unwrap(), dup.key().unwrap());
}

#[test]
fn graph_key_errors() {
    let mut cyc = relu_add_graph();
    cyc.nodes[0].inputs[0] = TensorSource::Node { node: 1, output: 0 };
    assert!(matches!(cyc.key(), Err(KeyError::Cycle { .. })));
    let mut dangling = relu_add_graph();
    dangling.nodes[1].inputs[0] = TensorSource::Node { node: 9, output: 0 };
    let e = dangling.key().unwrap_err();
    assert!(e.to_string().contains("node 9"), "{e}");
    let mut bad_out = relu_add_graph();
    bad_out
        .outputs
        .push(TensorSource::Node { node: 0, output: 3 });
    assert!(matches!(bad_out.key(), Err(KeyError::DanglingEdge { .. })));
    let mut opt = relu_add_graph();
    opt.options.insert("log".into(), "debug".into());
    let e = opt.key().unwrap_err();
    assert!(
        e.to_string().contains("\"log\"") && e.to_string().contains("precision_mode"),
        "{e}"
    );
}

#[test]
fn gradient_key() {
    let g = GradientDescriptor {
        soc: SocSpec::from_version("Ascend910B2").unwrap(),
        model_structure: relu_add_graph().key().unwrap(),
        gradient_bytes: vec![4096, 1 << 20, 512],
        world_size: 8,
        topology: None,
    };
    let k = g.key().unwrap();
    let mut h = g.clone();
    h.world_size = 16;
    assert_ne!(k, h.key().unwrap());
    let mut h = g.clone();
    h.gradient_bytes.swap(0, 2);
    assert_ne!(k, h.key().unwrap());
    let json = serde_json::to_string(&g).unwrap();
    assert!(
        json.contains(&format!("\"{}\"", g.model_structure)),
        "{json}"
    );
    let back: GradientDescriptor = serde_json::from_str(&json).unwrap();
    assert_eq!(k, back.key().unwrap());
}

#[test]
fn kinds_are_domain_separated() {
    // An empty graph and an empty gradient descriptor on one SoC still differ.
    let soc = SocSpec::from_version("Ascend910B2").unwrap();
    let g = GraphDescriptor {
        soc: soc.clone(),
        inputs: vec![],
        nodes: vec![],
        outputs: vec![],
        options: BTreeMap::new(),
    };
    let gr = GradientDescriptor {
        soc,
        model_structure: BankKey([0; 32]),
        gradient_bytes: vec![],
        world_size: 0,
        topology: None,
    };
    assert_ne!(g.key().unwrap(), gr.key().unwrap());
}

#[test]
fn bank_key_text_forms() {
    let k = key(&matmul());
    let hex = k.to_string();
    assert_eq!(hex.len(), 64);
    assert_eq!(hex.parse::<BankKey>().unwrap(), k);
    assert_eq!(hex.to_uppercase().parse::<BankKey>().unwrap(), k);
    let e = "abc".parse::<BankKey>().unwrap_err().to_string();
    assert!(
        e.contains("64 hex digits") && e.contains("3 characters"),
        "{e}"
    );
    let mut bad = hex.clone();
    bad.replace_range(10..11, "g");
    let e = bad.parse::<BankKey>().unwrap_err().to_string();
    assert!(e.contains("position 10"), "{e}");
    assert_eq!(serde_json::to_string(&k).unwrap(), format!("\"{hex}\""));
    assert_eq!(
        serde_json::from_str::<BankKey>(&format!("\"{hex}\"")).unwrap(),
        k
    );
    let packed = rmp_serde::to_vec(&k).unwrap();
    assert_eq!(packed.len(), 34, "msgpack bin8: marker, length, 32 bytes");
    assert_eq!(rmp_serde::from_slice::<BankKey>(&packed).unwrap(), k);
    assert_eq!(format!("{k:?}"), format!("BankKey({hex})"));
}

#[test]
fn descriptors_round_trip_msgpack() {
    let d = matmul();
    let bytes = rmp_serde::to_vec(&d).unwrap();
    let back: OpDescriptor = rmp_serde::from_slice(&bytes).unwrap();
    assert_eq!(d, back);
    let g = relu_add_graph();
    let back: GraphDescriptor = rmp_serde::from_slice(&rmp_serde::to_vec(&g).unwrap()).unwrap();
    assert_eq!(g.key().unwrap(), back.key().unwrap());
}

/// The worked example of ARCHITECTURE.md ("Key encoding"), rebuilt byte by byte from the document.
#[test]
fn worked_example_matches_the_documented_bytes() {
    let hex =
        "0b74756e6562616e6b2f6f70 03 0472656c75 00 0102020300010303 0102020300010303 00 0200 \
               0b417363656e643931304232 18 06416943 6f7265";
    let hex: String = hex.split_whitespace().collect();
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    assert_eq!(bytes.len(), 58);
    let relu = OpDescriptor {
        op_type: "Relu".into(),
        fused_ops: vec![],
        inputs: vec![t(&[2, 3], DType::Float16)],
        outputs: vec![t(&[2, 3], DType::Float16)],
        attrs: BTreeMap::new(),
        impl_mode: ImplMode::HighPerformance,
        cube_math: CubeMath::Native,
        soc: SocSpec::from_version("Ascend910B2").unwrap(),
        origin: None,
    };
    assert_eq!(relu.key().unwrap().0, *blake3::hash(&bytes).as_bytes());
}

/// Attribute encodings from ARCHITECTURE.md ("Key encoding"): tags, zigzag LEB128 ints, f64 bits, sorted names.
#[test]
fn attribute_bytes_match_the_document() {
    let mut relu = OpDescriptor {
        op_type: "RELU".into(),
        fused_ops: vec!["A".into()],
        inputs: vec![],
        outputs: vec![],
        attrs: BTreeMap::new(),
        impl_mode: ImplMode::HighPrecision,
        cube_math: CubeMath::Hf32,
        soc: SocSpec {
            version: "X".into(),
            core_count: 300,
            core_type: "C".into(),
        },
        origin: None,
    };
    relu.attrs
        .insert("b".into(), AttrValue::Ints(vec![-3, 300]));
    relu.attrs.insert("a".into(), AttrValue::Float(-0.0));
    relu.attrs
        .insert("c".into(), AttrValue::Strs(vec!["x".into()]));
    let mut b: Vec<u8> = vec![11];
    b.extend(b"tunebank/op");
    b.push(3);
    b.extend([4, b'r', b'e', b'l', b'u', 1, 1, b'a', 0, 0, 3]);
    b.extend([1, b'a', 2]);
    b.extend(0.0f64.to_le_bytes());
    b.extend([1, b'b', 4, 2, 5, 0xd8, 0x04]); // -3 → 5; 300 → zigzag 600 → d8 04
    b.extend([1, b'c', 6, 1, 1, b'x']);
    b.extend([1, 1, 1, b'X', 0xac, 0x02, 1, b'C']);
    assert_eq!(relu.key().unwrap().0, *blake3::hash(&b).as_bytes());
}

/// The graph-level option order in ARCHITECTURE.md ("Key encoding") is the order the code hashes.
#[test]
fn graph_option_order_matches_the_document() {
    let names: Vec<&str> = tunebank::key::graph_option_specs()
        .iter()
        .map(|s| s.name)
        .collect();
    let doc = include_str!("../../ARCHITECTURE.md");
    let start = doc.find("in this order:").unwrap() + "in this order:".len();
    let end = start + doc[start..].find("```").unwrap();
    let documented: Vec<&str> = doc[start..end]
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .collect();
    assert_eq!(names, documented);
    assert!(doc.contains(&format!("`uvar {}`", names.len())));
}
