//! The ATC options of CANN 8.x through the library: every option of ATC's own list accepted and
//! classified in the options table; `precision_mode_v2` values giving the keys of their
//! `precision_mode`; `allow_hf32`; `precision_mode` and `precision_mode_v2` together refused,
//! `hifloat8` not modelled; options added after key schema 2 entering subgraph keys only when
//! set; fusion switches turning rules off; `out_nodes` pruning the graph. The command line over
//! them is `tests/it/atc_options.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use tunebank::key::{
    derive_op_keys, CubeMath, DType, GraphDescriptor, MemFiles, OpTemplate, OptionError,
    ResolvedOptions, TemplateTensor,
};
use tunebank::key::{option_spec, KeyEffect, OPTIONS};
use tunebank::model::{load_onnx, Model, ModelError, TuningUnit};

fn files() -> MemFiles {
    MemFiles::default()
        .with("opp.ini", "[ByOpType]\nGelu=high_precision\n")
        .with("keep.cfg", "mm\n")
        .with("aipp.cfg", "aipp_op {\n  aipp_mode: static\n}\n")
        .with(
            "fusion.json",
            r#"{"Switch": {"GraphFusion": {"ALL": "off"}}}"#,
        )
        .with("fusion.cfg", "ConvBatchnormFusionPass:off\n")
        .with(
            "mix.json",
            r#"{"black-list": {"to-add": ["MatMul"], "to-remove": []}}"#,
        )
}

fn resolve(pairs: &[(&str, &str)]) -> Result<ResolvedOptions, OptionError> {
    let mut all = vec![("soc_version", "Ascend910B2")];
    all.extend_from_slice(pairs);
    ResolvedOptions::from_pairs(all, &files())
}

#[test]
fn precision_mode_and_v2_together_are_refused_and_hifloat8_is_not_modelled() {
    let both = resolve(&[
        ("precision_mode", "force_fp16"),
        ("precision_mode_v2", "fp16"),
    ]);
    assert!(
        matches!(&both, Err(OptionError::Conflict { first, second, .. })
            if first == "precision_mode" && second == "precision_mode_v2"),
        "{both:?}"
    );
    for v in ["mixed_hif8", "cube_hif8"] {
        let e = resolve(&[("precision_mode_v2", v)]).unwrap_err();
        assert!(matches!(e, OptionError::NotModelled { .. }), "{e:?}");
        assert!(e.to_string().contains("Ascend 950"), "{e}");
    }
}

#[test]
fn options_added_after_schema_2_enter_subgraph_keys_only_when_set() {
    let key = |pairs: &[(&str, &str)]| {
        let o = resolve(pairs).unwrap();
        GraphDescriptor {
            soc: o.soc().unwrap(),
            inputs: vec![],
            nodes: vec![],
            outputs: vec![],
            options: o.graph_options(),
        }
        .key()
        .unwrap()
    };
    let plain = key(&[]);
    assert_eq!(plain, key(&[("oo_level", "O3")]));
    assert_eq!(plain, key(&[("buffer_optimize", "l2_optimize")]));
    assert_ne!(plain, key(&[("oo_level", "O1")]));
    assert_ne!(plain, key(&[("buffer_optimize", "off_optimize")]));
    assert_ne!(plain, key(&[("allow_hf32", "true")]));
    assert_ne!(plain, key(&[("precision_mode_v2", "origin")]));
}

fn resnet() -> Model {
    load_onnx(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/models/resnet50.onnx"))
        .unwrap()
}

fn units(model: &Model, pairs: &[(&str, &str)]) -> Vec<TuningUnit> {
    let o = resolve(pairs).unwrap();
    let mut p = model.tuning_units(&o).unwrap();
    assert_eq!(p.len(), 1);
    p.remove(0).units
}

fn member_types(units: &[TuningUnit]) -> BTreeSet<Vec<String>> {
    units.iter().map(|u| u.op_types.clone()).collect()
}

#[test]
fn fusion_switches_turn_fusion_rules_off() {
    let m = resnet();
    let all = units(&m, &[]);
    let has = |u: &[TuningUnit], t: &[&str]| {
        member_types(u).contains(&t.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    };
    assert!(has(&all, &["Conv", "BatchNormalization", "Relu"]));
    // Conv+BN off (line form): convolutions still take their activation, BN stands alone.
    let no_bn = units(&m, &[("fusion_switch_file", "fusion.cfg")]);
    assert!(!no_bn.iter().any(|u| u
        .op_types
        .starts_with(&["Conv".into(), "BatchNormalization".into()])));
    assert!(no_bn.len() > all.len());
    // All graph fusion off (JSON "ALL"): same as Conv+BN off for this model.
    let graph_off = units(&m, &[("fusion_switch_file", "fusion.json")]);
    assert_eq!(member_types(&graph_off), member_types(&no_bn));
    // oo_level=O1: no pass at all, every computing op is its own unit.
    let o1 = units(&m, &[("oo_level", "O1")]);
    assert!(
        o1.iter().all(|u| u.node_names.len() == 1),
        "O1 fused something"
    );
    assert!(o1.len() > no_bn.len());
}

#[test]
fn out_nodes_prunes_the_graph_to_what_the_outputs_need() {
    let m = resnet();
    let all = units(&m, &[]);
    let first_conv = m
        .graph
        .nodes
        .iter()
        .find(|n| n.op_type == "Conv")
        .unwrap()
        .name
        .clone();
    let spec = format!("{first_conv}:0");
    let pruned = units(&m, &[("out_nodes", spec.as_str())]);
    // The first convolution is a graph output now: nothing fuses into it and nothing after it
    // is left.
    assert_eq!(pruned.len(), 1, "{:?}", member_types(&pruned));
    assert_eq!(pruned[0].node_names, vec![first_conv.clone()]);
    assert!(all.len() > 10);
    let o = resolve(&[("out_nodes", "no_such_node:0")]).unwrap();
    assert!(matches!(
        m.tuning_units(&o),
        Err(ModelError::OutNodes { node, .. }) if node == "no_such_node"
    ));
}

/// ATC's options in CANN 8.x: every `DEFINE_*` flag of ATC's gflags list
/// (`atc --help`), but `--help` and `--json` (mode 1's JSON output file), which are the
/// command line's own flags.
const ATC_8X: &[&str] = &[
    "model",
    "output",
    "framework",
    "weight",
    "input_shape",
    "input_hint_shape",
    "input_shape_range",
    "cal_conf",
    "insert_op_conf",
    "op_name_map",
    "target",
    "om",
    "mode",
    "out_nodes",
    "op_precision_mode",
    "allow_hf32",
    "precision_mode",
    "precision_mode_v2",
    "modify_mixlist",
    "keep_dtype",
    "input_format",
    "check_report",
    "input_fp16_nodes",
    "is_output_adjust_hw_layout",
    "is_input_adjust_hw_layout",
    "output_type",
    "op_select_implmode",
    "optypelist_for_implmode",
    "singleop",
    "disable_reuse_memory",
    "auto_tune_mode",
    "soc_version",
    "virtual_type",
    "core_type",
    "aicore_num",
    "buffer_optimize",
    "fusion_switch_file",
    "compression_optimize_conf",
    "customize_dtypes",
    "op_debug_config",
    "save_original_model",
    "dynamic_batch_size",
    "dynamic_image_size",
    "dynamic_dims",
    "enable_small_channel",
    "enable_compress_weight",
    "enable_attr_compression",
    "compress_weight_conf",
    "sparsity",
    "enable_single_stream",
    "ac_parallel_enable",
    "tiling_schedule_optimize",
    "log",
    "dump_mode",
    "op_debug_level",
    "enable_scope_fusion_passes",
    "debug_dir",
    "status_check",
    "op_compiler_cache_dir",
    "op_compiler_cache_mode",
    "mdl_bank_path",
    "op_bank_path",
    "display_model_info",
    "device_id",
    "shape_generalized_build_mode",
    "atomic_clean_policy",
    "external_weight",
    "deterministic",
    "deterministic_level",
    "host_env_os",
    "host_env_cpu",
    "cluster_config",
    "quant_dumpable",
    "is_weight_clip",
    "oo_level",
];

/// AOE's own options the table also holds.
const AOE: &[&str] = &["job_type", "tune_ops_file", "model_path"];

/// A valid value other than the default, for every option.
fn other_value(name: &str) -> &'static str {
    match name {
        "soc_version" => "Ascend310P3",
        "input_shape" => "data:8,64",
        "input_hint_shape" => "0:[8,64]",
        "input_shape_range" => "data:[1~8,64]",
        "dynamic_batch_size" | "dynamic_image_size" | "dynamic_dims" => "",
        "out_nodes" => "mm:0",
        "output_type" => "FP16",
        "input_fp16_nodes" | "optypelist_for_implmode" | "enable_scope_fusion_passes" => "Softmax",
        "is_input_adjust_hw_layout" | "is_output_adjust_hw_layout" => "true",
        "op_precision_mode" => "opp.ini",
        "keep_dtype" => "keep.cfg",
        "modify_mixlist" => "",
        "fusion_switch_file" => "fusion.json",
        "insert_op_conf" => "aipp.cfg",
        "aicore_num" => "8",
        "device_id" => "1",
        _ => "",
    }
}

/// A non-default value: `other_value`, else the first choice of a `OneOf` that is not the
/// default.
fn non_default(name: &str) -> Option<String> {
    let spec = option_spec(name)?;
    let v = other_value(name);
    if !v.is_empty() {
        return Some(v.to_string());
    }
    match spec.kind {
        tunebank::key::ValueKind::OneOf(values) => values
            .iter()
            .find(|v| **v != spec.default)
            .map(|v| v.to_string()),
        tunebank::key::ValueKind::Text => Some("some/path".to_string()),
        _ => None,
    }
}

#[test]
fn every_atc_8x_option_is_accepted_and_classified() {
    let listed: BTreeSet<&str> = ATC_8X.iter().chain(AOE).copied().collect();
    let rows: BTreeSet<&str> = OPTIONS.iter().map(|s| s.name).collect();
    let missing: Vec<_> = listed.difference(&rows).collect();
    let extra: Vec<_> = rows.difference(&listed).collect();
    assert!(missing.is_empty(), "ATC options without a row: {missing:?}");
    assert!(
        extra.is_empty(),
        "rows that are no ATC/AOE option: {extra:?}"
    );
    let mut failures = Vec::new();
    for &name in ATC_8X.iter().filter(|n| **n != "soc_version") {
        let spec = option_spec(name).unwrap();
        // Every option is accepted at its default.
        if let Err(e) = resolve(&[(name, spec.default)]) {
            failures.push(format!("{name} at its default: {e}"));
        }
        let Some(v) = non_default(name) else { continue };
        let got = resolve(&[(name, v.as_str())]);
        match (spec.effect, got) {
            (KeyEffect::Refused, Err(OptionError::NotModelled { name: n, .. })) if n == name => {}
            (KeyEffect::Refused, other) => {
                failures.push(format!("{name}={v}: refused row gave {other:?}"))
            }
            (_, Err(e)) => failures.push(format!("{name}={v}: {e}")),
            (_, Ok(_)) => {}
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    let count = |e: &[KeyEffect]| OPTIONS.iter().filter(|s| e.contains(&s.effect)).count();
    assert_eq!(
        count(&[KeyEffect::OpAndGraph, KeyEffect::Soc])
            + count(&[KeyEffect::Structure])
            + count(&[KeyEffect::Graph])
            + count(&[KeyEffect::Refused])
            + count(&[KeyEffect::Ignored]),
        OPTIONS.len()
    );
}

fn matmul(name: &str) -> OpTemplate {
    let tt = |shape: &[i64]| TemplateTensor {
        shape: shape.to_vec(),
        dtype: DType::Float32,
        ori_format: None,
        format: None,
        graph_input: None,
        producer_dtype: None,
    };
    OpTemplate {
        node_name: name.to_string(),
        op_type: "MatMul".to_string(),
        fused_ops: vec![],
        inputs: vec![tt(&[64, 128]), tt(&[128, 32])],
        outputs: vec![tt(&[64, 32])],
        attrs: BTreeMap::new(),
    }
}

fn softmax() -> OpTemplate {
    OpTemplate {
        op_type: "Softmax".to_string(),
        inputs: vec![matmul("x").outputs[0].clone()],
        ..matmul("sm")
    }
}

fn descriptors(pairs: &[(&str, &str)]) -> Vec<tunebank::key::OpDescriptor> {
    let o = resolve(pairs).unwrap();
    let soc = o.soc().unwrap();
    [matmul("mm"), softmax()]
        .iter()
        .flat_map(|t| derive_op_keys(t, &o, &soc).unwrap())
        .map(|r| r.descriptor)
        .collect()
}

#[test]
fn precision_mode_v2_values_give_the_keys_of_their_precision_mode() {
    for (v2, v1) in [
        ("fp16", "force_fp16"),
        ("origin", "must_keep_origin_dtype"),
        ("cube_fp16in_fp32out", "cube_fp16in_fp32out"),
        ("mixed_float16", "allow_mix_precision_fp16"),
        ("mixed_bfloat16", "allow_mix_precision_bf16"),
    ] {
        assert_eq!(
            descriptors(&[("precision_mode_v2", v2)]),
            descriptors(&[("precision_mode", v1)]),
            "precision_mode_v2={v2} against precision_mode={v1}"
        );
    }
    // origin keeps fp32 where fp16 (the default) casts.
    assert_ne!(
        descriptors(&[("precision_mode_v2", "origin")]),
        descriptors(&[])
    );
    // mixed_float16 takes a mixlist patch, as ATC allows.
    assert!(resolve(&[
        ("precision_mode_v2", "mixed_float16"),
        ("modify_mixlist", "mix.json")
    ])
    .is_ok());
}

fn mm_math(pairs: &[(&str, &str)]) -> CubeMath {
    descriptors(pairs)[0].cube_math
}

#[test]
fn allow_hf32_sets_hf32_on_fp32_cube_ops_below_a_node_entry() {
    let keep = ("precision_mode_v2", "origin");
    assert_eq!(mm_math(&[keep]), CubeMath::Native);
    assert_eq!(mm_math(&[keep, ("allow_hf32", "true")]), CubeMath::Hf32);
    assert_eq!(mm_math(&[keep, ("allow_hf32", "false")]), CubeMath::Native);
    // Under fp16 (the default mode) the MatMul has no fp32 input: HF32 does not apply.
    assert_eq!(mm_math(&[("allow_hf32", "true")]), CubeMath::Native);
    // The Softmax is no cube op.
    assert_eq!(
        descriptors(&[keep, ("allow_hf32", "true")])[1].cube_math,
        CubeMath::Native
    );
    let with = |ini: &str, hf32: &str| {
        let files = files().with("p.ini", ini);
        let o = ResolvedOptions::from_pairs(
            [
                ("soc_version", "Ascend910B2"),
                keep,
                ("op_precision_mode", "p.ini"),
                ("allow_hf32", hf32),
            ],
            &files,
        )
        .unwrap();
        let soc = o.soc().unwrap();
        derive_op_keys(&matmul("mm"), &o, &soc).unwrap()[0]
            .descriptor
            .cube_math
    };
    // By node name the entry wins; by op type allow_hf32 wins.
    assert_eq!(
        with("[ByNodeName]\nmm=enable_float_32_execution\n", "true"),
        CubeMath::Native
    );
    assert_eq!(
        with("[ByOpType]\nMatMul=enable_hi_float_32_execution\n", "false"),
        CubeMath::Native
    );
    assert_eq!(
        with("[ByOpType]\nMatMul=enable_float_32_execution\n", "true"),
        CubeMath::Hf32
    );
}
