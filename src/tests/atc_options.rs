//! What ATC options do to key resolution and planning, through the library: `precision_mode` and
//! `precision_mode_v2` together refused, `hifloat8` not modelled; options added after key schema
//! 2 entering subgraph keys only when set; fusion switches turning rules off; `out_nodes`
//! pruning the graph. The option list and its command line are `tests/it/atc_options.rs`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use tunebank::key::{GraphDescriptor, MemFiles, OptionError, ResolvedOptions};
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
