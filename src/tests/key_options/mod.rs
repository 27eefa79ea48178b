//! The option table, driven row by row: each option changes op keys iff it is classified as
//! op-affecting, subgraph keys iff graph-affecting; unset equals explicit default; bad values
//! give errors naming the option, the value and the expected form.

use std::collections::BTreeMap;

use tunebank::key::{
    derive_op_keys, AttrValue, BankKey, DType, Format, GraphDescriptor, GraphNode, MemFiles,
    OpTemplate, OptionError, ResolvedOptions, SocSpec, TemplateTensor, TensorDesc, TensorSource,
    OPTIONS,
};
use tunebank::key::{graph_option_specs, option_spec};

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

/// A small fp32 model: a MatMul fed by graph input `data`, a Conv2D fed by graph input `img`,
/// a Gelu, a Softmax and an Add.
fn model() -> Vec<OpTemplate> {
    let f = DType::Float32;
    let op = |name: &str, ty: &str, inputs: Vec<TemplateTensor>, out: &[i64]| OpTemplate {
        node_name: name.to_string(),
        op_type: ty.to_string(),
        fused_ops: vec![],
        inputs,
        outputs: vec![tt(out, f)],
        attrs: BTreeMap::new(),
    };
    let mut conv = op(
        "conv",
        "Conv2D",
        vec![fed(&[1, 3, 16, 16], "img"), tt(&[8, 3, 3, 3], f)],
        &[1, 8, 16, 16],
    );
    conv.attrs
        .insert("strides".into(), AttrValue::Ints(vec![1, 1, 1, 1]));
    vec![
        op(
            "mm",
            "MatMul",
            vec![fed(&[4, 64], "data"), tt(&[64, 32], f)],
            &[4, 32],
        ),
        conv,
        op("gelu", "Gelu", vec![tt(&[4, 32], f)], &[4, 32]),
        op("softmax", "Softmax", vec![tt(&[4, 32], f)], &[4, 32]),
        op(
            "add",
            "Add",
            vec![tt(&[4, 32], f), tt(&[4, 32], f)],
            &[4, 32],
        ),
    ]
}

fn files() -> MemFiles {
    MemFiles::default()
        .with("opp.ini", "[ByOpType]\nGelu=high_precision\n")
        .with(
            "opp_copy.ini",
            "# same content, other path\n[ByOpType]\nGelu = high_precision\n",
        )
        .with("keep.cfg", "mm\n")
        .with(
            "mix.json",
            r#"{"black-list": {"to-add": ["MatMul"], "to-remove": []}}"#,
        )
        .with("aipp.cfg", "aipp_op {\n  aipp_mode: static\n}\n")
        .with(
            "fusion.json",
            r#"{"Switch": {"GraphFusion": {"ConvToFullyConnectionFusionPass": "off"}}}"#,
        )
        .with(
            "fusion_copy.json",
            r#"{"Switch":{"GraphFusion":{"ConvToFullyConnectionFusionPass":"off"}}}"#,
        )
}

const BASE: &[(&str, &str)] = &[("soc_version", "Ascend910B2")];

fn options(base: &[(&str, &str)], extra: &[(&str, &str)]) -> Result<ResolvedOptions, OptionError> {
    let mut m: BTreeMap<&str, &str> = BASE.iter().copied().collect();
    m.extend(base.iter().copied());
    m.extend(extra.iter().copied());
    ResolvedOptions::from_pairs(m, &files())
}

fn op_keys(o: &ResolvedOptions) -> Vec<BankKey> {
    let soc = o.soc().expect("soc");
    let mut keys: Vec<BankKey> = model()
        .iter()
        .flat_map(|t| derive_op_keys(t, o, &soc).expect("resolves"))
        .map(|r| r.key)
        .collect();
    keys.sort();
    keys
}

fn graph_key(o: &ResolvedOptions) -> BankKey {
    let t = TensorDesc {
        shape: vec![4, 64],
        ori_shape: vec![4, 64],
        dtype: DType::Float16,
        format: Format::ND,
        ori_format: Format::ND,
    };
    GraphDescriptor {
        soc: o.soc().expect("soc"),
        inputs: vec![t.clone()],
        nodes: vec![GraphNode {
            name: "relu".into(),
            op_type: "Relu".into(),
            inputs: vec![TensorSource::GraphInput { index: 0 }],
            outputs: vec![t],
            attrs: BTreeMap::new(),
        }],
        outputs: vec![TensorSource::Node { node: 0, output: 0 }],
        options: o.graph_options(),
    }
    .key()
    .expect("graph key")
}

/// For each option: the options the comparison starts from, and the change (which includes
/// the option under test, set to a valid non-default value).
/// Option settings, as (name, value) pairs.
type Settings = Vec<(&'static str, &'static str)>;

fn cases() -> BTreeMap<&'static str, (Settings, Settings)> {
    let mut c = BTreeMap::new();
    let mut add = |n: &'static str, base: Settings, change: Settings| {
        assert!(
            change.iter().any(|(k, _)| *k == n),
            "case for {n} must set it"
        );
        c.insert(n, (base, change));
    };
    add("soc_version", vec![], vec![("soc_version", "Ascend310P3")]);
    add("core_type", vec![], vec![("core_type", "VectorCore")]);
    add("aicore_num", vec![], vec![("aicore_num", "8")]);
    add(
        "precision_mode",
        vec![],
        vec![("precision_mode", "force_fp32")],
    );
    add(
        "op_precision_mode",
        vec![],
        vec![("op_precision_mode", "opp.ini")],
    );
    add("keep_dtype", vec![], vec![("keep_dtype", "keep.cfg")]);
    add(
        "modify_mixlist",
        vec![("precision_mode", "allow_mix_precision")],
        vec![("modify_mixlist", "mix.json")],
    );
    add(
        "op_select_implmode",
        vec![],
        vec![("op_select_implmode", "high_precision")],
    );
    add(
        "optypelist_for_implmode",
        vec![("op_select_implmode", "high_precision")],
        vec![("optypelist_for_implmode", "Softmax")],
    );
    add("input_shape", vec![], vec![("input_shape", "data:8,64")]);
    add(
        "dynamic_batch_size",
        vec![],
        vec![("input_shape", "data:-1,64"), ("dynamic_batch_size", "1,2")],
    );
    add(
        "dynamic_image_size",
        vec![],
        vec![
            ("input_shape", "img:1,3,-1,-1"),
            ("dynamic_image_size", "16,16;32,32"),
        ],
    );
    add(
        "dynamic_dims",
        vec![("input_format", "ND")],
        vec![("input_shape", "data:-1,64"), ("dynamic_dims", "4;8")],
    );
    add("input_format", vec![], vec![("input_format", "NHWC")]);
    add(
        "input_fp16_nodes",
        vec![("precision_mode", "must_keep_origin_dtype")],
        vec![("input_fp16_nodes", "data")],
    );
    add("output_type", vec![], vec![("output_type", "FP16")]);
    add(
        "insert_op_conf",
        vec![],
        vec![("insert_op_conf", "aipp.cfg")],
    );
    add(
        "fusion_switch_file",
        vec![],
        vec![("fusion_switch_file", "fusion.json")],
    );
    add(
        "enable_scope_fusion_passes",
        vec![],
        vec![("enable_scope_fusion_passes", "ScopeLayerNormPass")],
    );
    add(
        "enable_small_channel",
        vec![],
        vec![("enable_small_channel", "1")],
    );
    add("out_nodes", vec![], vec![("out_nodes", "mm:0")]);
    add(
        "is_input_adjust_hw_layout",
        vec![],
        vec![("is_input_adjust_hw_layout", "true")],
    );
    add(
        "is_output_adjust_hw_layout",
        vec![],
        vec![("is_output_adjust_hw_layout", "false")],
    );
    add("model", vec![], vec![("model", "resnet50.onnx")]);
    add("weight", vec![], vec![("weight", "resnet50.caffemodel")]);
    add("framework", vec![], vec![("framework", "0")]);
    add("output", vec![], vec![("output", "out/resnet50")]);
    add("log", vec![], vec![("log", "debug")]);
    add("mode", vec![], vec![("mode", "3")]);
    add("job_type", vec![], vec![("job_type", "1")]);
    add("tune_ops_file", vec![], vec![("tune_ops_file", "ops.cfg")]);
    add("model_path", vec![], vec![("model_path", "models")]);
    add("singleop", vec![], vec![("singleop", "ops.json")]);
    add(
        "op_compiler_cache_mode",
        vec![],
        vec![("op_compiler_cache_mode", "enable")],
    );
    add(
        "op_compiler_cache_dir",
        vec![],
        vec![("op_compiler_cache_dir", "cache")],
    );
    add("debug_dir", vec![], vec![("debug_dir", "dbg")]);
    add("op_debug_level", vec![], vec![("op_debug_level", "1")]);
    add("host_env_os", vec![], vec![("host_env_os", "linux")]);
    add("host_env_cpu", vec![], vec![("host_env_cpu", "aarch64")]);
    add(
        "precision_mode_v2",
        vec![],
        vec![("precision_mode_v2", "origin")],
    );
    add(
        "allow_hf32",
        vec![("precision_mode", "must_keep_origin_dtype")],
        vec![("allow_hf32", "true")],
    );
    add("oo_level", vec![], vec![("oo_level", "O1")]);
    add(
        "buffer_optimize",
        vec![],
        vec![("buffer_optimize", "off_optimize")],
    );
    // ATC's deprecated range form: the range tuned as --input_shape's (its own test:
    // shape_ranges.rs).
    add(
        "input_shape_range",
        vec![],
        vec![("input_shape_range", "data:[1~8,64]")],
    );
    // Refused rows: the change is refused as not modelled.
    for (n, v) in [
        ("customize_dtypes", "dtypes.cfg"),
        ("input_hint_shape", "0:[8,64]"),
        ("shape_generalized_build_mode", "shape_generalized"),
        ("sparsity", "1"),
        ("enable_compress_weight", "true"),
        ("compress_weight_conf", "w.cfg"),
        ("compression_optimize_conf", "c.cfg"),
        ("cal_conf", "cal.cfg"),
    ] {
        add(n, vec![], vec![(n, v)]);
    }
    // Ignored rows added with CANN 8.x: any valid value.
    for (n, v) in [
        ("virtual_type", "1"),
        ("op_bank_path", "bank"),
        ("mdl_bank_path", "mdl"),
        ("is_weight_clip", "0"),
        ("op_name_map", "map.cfg"),
        ("external_weight", "1"),
        ("disable_reuse_memory", "1"),
        ("enable_single_stream", "true"),
        ("ac_parallel_enable", "1"),
        ("tiling_schedule_optimize", "1"),
        ("quant_dumpable", "1"),
        ("enable_attr_compression", "false"),
        ("om", "m.om"),
        ("check_report", "r.json"),
        ("target", "mini"),
        ("auto_tune_mode", "RL,GA"),
        ("device_id", "1"),
        ("save_original_model", "true"),
        ("dump_mode", "1"),
        ("display_model_info", "1"),
        ("status_check", "1"),
        ("op_debug_config", "dbg.cfg"),
        ("atomic_clean_policy", "1"),
        ("deterministic", "1"),
        ("deterministic_level", "2"),
        ("cluster_config", "cluster.json"),
    ] {
        add(n, vec![], vec![(n, v)]);
    }
    c
}

#[test]
fn every_option_has_a_case_and_every_case_an_option() {
    let cases = cases();
    for spec in OPTIONS {
        assert!(
            cases.contains_key(spec.name),
            "option {} has no key-effect case",
            spec.name
        );
    }
    for name in cases.keys() {
        assert!(option_spec(name).is_some(), "case {name} is not an option");
    }
}

#[test]
fn each_option_changes_keys_iff_classified_key_affecting() {
    let mut failures = Vec::new();
    for (name, (base, change)) in cases() {
        let effect = option_spec(name).unwrap().effect;
        let before = options(&base, &[]).unwrap_or_else(|e| panic!("{name} base: {e}"));
        if effect == tunebank::key::KeyEffect::Refused {
            match options(&base, &change) {
                Err(OptionError::NotModelled { name: n, .. }) if n == name => {}
                other => failures.push(format!("{name}: refused row gave {other:?}")),
            }
            continue;
        }
        let after = options(&base, &change).unwrap_or_else(|e| panic!("{name} change: {e}"));
        let op_changed = op_keys(&before) != op_keys(&after);
        let graph_changed = graph_key(&before) != graph_key(&after);
        if op_changed != effect.affects_op() {
            failures.push(format!(
                "{name}: op keys changed = {op_changed}, classified {effect:?}"
            ));
        }
        if graph_changed != effect.affects_graph() {
            failures.push(format!(
                "{name}: graph key changed = {graph_changed}, classified {effect:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn unset_and_explicit_default_give_one_key() {
    let plain = options(&[], &[]).unwrap();
    for spec in OPTIONS {
        if spec.name == "soc_version" {
            continue; // required; it has no default
        }
        let explicit = options(&[], &[(spec.name, spec.default)])
            .unwrap_or_else(|e| panic!("--{}={:?}: {e}", spec.name, spec.default));
        assert_eq!(
            op_keys(&plain),
            op_keys(&explicit),
            "op keys, --{}",
            spec.name
        );
        assert_eq!(
            graph_key(&plain),
            graph_key(&explicit),
            "graph key, --{}",
            spec.name
        );
        assert_eq!(explicit.canonical(spec.name), Some(spec.default));
    }
}

#[test]
fn graph_descriptor_without_options_equals_all_defaults() {
    let o = options(&[], &[]).unwrap();
    let with = graph_key(&o);
    let mut g = GraphDescriptor {
        soc: o.soc().unwrap(),
        inputs: vec![],
        nodes: vec![],
        outputs: vec![],
        options: o.graph_options(),
    };
    let k1 = g.key().unwrap();
    g.options.clear();
    assert_eq!(k1, g.key().unwrap());
    assert_ne!(with, k1);
    assert_eq!(graph_option_specs().len(), o.graph_options().len());
}

#[test]
fn file_options_act_by_content_not_path() {
    let a = options(
        &[],
        &[
            ("op_precision_mode", "opp.ini"),
            ("fusion_switch_file", "fusion.json"),
        ],
    )
    .unwrap();
    let b = options(
        &[],
        &[
            ("op_precision_mode", "opp_copy.ini"),
            ("fusion_switch_file", "fusion_copy.json"),
        ],
    )
    .unwrap();
    assert_eq!(graph_key(&a), graph_key(&b));
    assert_eq!(op_keys(&a), op_keys(&b));
    assert!(a
        .canonical("fusion_switch_file")
        .unwrap()
        .starts_with("blake3:"));
}

mod errors;
