//! Subgraph keys under key schema 3 (ARCHITECTURE.md, "Subgraph key"): a node hashes the
//! attributes CANN's op information lists in `sgatKeyAttr` (typed and defaulted as it declares
//! them), never the declared attributes the list leaves out, and every attribute it does not
//! declare; a framework Conv's defaulted attributes are filled. Checked on constructed nodes
//! and on the ResNet-50 fixture's SGAT partition, with the migration of its schema-2 records.

use std::collections::BTreeMap;

use serde_json::json;
use tunebank::bank::migrate::migrate_record;
use tunebank::bank::{descriptor_key, Descriptor};
use tunebank::key::{
    AttrValue, DType, Format, GraphDescriptor, GraphNode, SocSpec, TensorDesc, TensorSource,
    KEY_SCHEMA_VERSION,
};
use tunebank::model::{load_onnx, Attr};
use tunebank::tune::sgat::sgat_plan;

use crate::common::sgat_fixture;

fn td(shape: &[i64], format: Format) -> TensorDesc {
    TensorDesc {
        shape: shape.to_vec(),
        ori_shape: shape.to_vec(),
        dtype: DType::Float16,
        format,
        ori_format: format,
    }
}

/// Attributes from `(name, value)` pairs.
type Attrs = Vec<(String, AttrValue)>;

/// `base` with each of `extra` set (replacing a value `base` has).
fn with(base: &[(&str, AttrValue)], extra: &[(&str, AttrValue)]) -> Attrs {
    let mut v: Attrs = base
        .iter()
        .map(|(k, a)| ((*k).to_owned(), a.clone()))
        .collect();
    for (k, a) in extra {
        v.retain(|(n, _)| n != k);
        v.push(((*k).to_owned(), a.clone()));
    }
    v
}

/// One node of `op_type` with `attrs` on `soc`, fed by the graph's one input.
fn one_node(soc: &str, op_type: &str, attrs: &[(String, AttrValue)]) -> GraphDescriptor {
    GraphDescriptor {
        soc: SocSpec::from_version(soc).unwrap(),
        inputs: vec![td(&[1, 16, 8, 8], Format::NCHW)],
        nodes: vec![GraphNode {
            name: "n".into(),
            op_type: op_type.into(),
            inputs: vec![TensorSource::GraphInput { index: 0 }],
            outputs: vec![td(&[1, 16, 8, 8], Format::NCHW)],
            attrs: attrs.iter().cloned().collect::<BTreeMap<_, _>>(),
        }],
        outputs: vec![TensorSource::Node { node: 0, output: 0 }],
        options: BTreeMap::new(),
    }
}

fn ints(v: &[i64]) -> AttrValue {
    AttrValue::Ints(v.to_vec())
}

fn key(g: &GraphDescriptor) -> String {
    g.key().unwrap().to_string()
}

/// The Conv2D attributes every variant below shares, with `extra` set.
fn conv(extra: &[(&str, AttrValue)]) -> Attrs {
    let base = [
        ("strides", ints(&[1, 1, 1, 1])),
        ("pads", ints(&[1, 1, 1, 1])),
        ("_impl_mode", AttrValue::Str("high_performance".into())),
    ];
    with(&base, extra)
}

#[test]
fn a_conv2d_node_hashes_its_sgat_key_attributes_typed_and_defaulted() {
    let soc = "Ascend910B2";
    let base = key(&one_node(soc, "Conv2D", &conv(&[])));
    // Stated defaults (dilations, groups, offset_x) key as absent ones.
    let stated = conv(&[
        ("dilations", ints(&[1, 1, 1, 1])),
        ("groups", AttrValue::Int(1)),
        ("offset_x", AttrValue::Int(0)),
    ]);
    assert_eq!(key(&one_node(soc, "Conv2D", &stated)), base);
    // A groups written as a bool (int-typed in the op information) is read as its int.
    let as_bool = conv(&[("groups", AttrValue::Bool(true))]);
    assert_eq!(key(&one_node(soc, "Conv2D", &as_bool)), base);
    // data_format is declared and not listed: left out (the tensors carry the format).
    let fmt = conv(&[("data_format", AttrValue::Str("NHWC".into()))]);
    assert_eq!(key(&one_node(soc, "Conv2D", &fmt)), base);
    // A listed attribute that differs, a non-default value, an undeclared attribute and a
    // node fact each move the key.
    for moved in [
        conv(&[("strides", ints(&[1, 1, 2, 2]))]),
        conv(&[("pads", ints(&[0, 0, 0, 0]))]),
        conv(&[("dilations", ints(&[1, 1, 2, 2]))]),
        conv(&[("groups", AttrValue::Int(2))]),
        conv(&[("auto_pad", AttrValue::Str("SAME_UPPER".into()))]),
        conv(&[("_impl_mode", AttrValue::Str("high_precision".into()))]),
    ] {
        assert_ne!(key(&one_node(soc, "Conv2D", &moved)), base, "{moved:?}");
    }
}

#[test]
fn the_rule_follows_the_socs_family_and_the_op_type() {
    // MatMulV2 on 910B: its transposes, as bools, defaulted false; offset_x left out.
    let mm = |a: &[(&str, AttrValue)]| key(&one_node("Ascend910B2", "MatMulV2", &with(a, &[])));
    let plain = mm(&[]);
    assert_eq!(mm(&[("transpose_x1", AttrValue::Int(0))]), plain);
    assert_eq!(mm(&[("transpose_x2", AttrValue::Bool(false))]), plain);
    assert_eq!(mm(&[("offset_x", AttrValue::Int(3))]), plain);
    assert_ne!(mm(&[("transpose_x1", AttrValue::Bool(true))]), plain);
    assert_eq!(
        mm(&[("transpose_x1", AttrValue::Int(1))]),
        mm(&[("transpose_x1", AttrValue::Bool(true))])
    );
    // An op type without a list (Relu) hashes every attribute.
    let relu = |a: &[(&str, AttrValue)]| key(&one_node("Ascend910B2", "Relu", &with(a, &[])));
    assert_ne!(
        relu(&[("data_format", AttrValue::Str("NCHW".into()))]),
        relu(&[])
    );
    // A SoC whose family has no op information (Ascend610) hashes every attribute too.
    let c610 = |attrs: &[(String, AttrValue)]| key(&one_node("Ascend610", "Conv2D", attrs));
    assert_ne!(
        c610(&conv(&[("data_format", AttrValue::Str("NHWC".into()))])),
        c610(&conv(&[]))
    );
    assert_ne!(
        c610(&conv(&[("dilations", ints(&[1, 1, 1, 1]))])),
        c610(&conv(&[]))
    );
}

#[test]
fn a_fused_members_attributes_follow_the_members_own_list() {
    // A Conv2D fused with an AvgPoolV2: member 1's attributes are `1:<name>`.
    let fused = |extra: &[(&str, AttrValue)]| {
        let attrs = conv(&[
            (
                "_fused_ops",
                AttrValue::Strs(vec!["Conv2D".into(), "AvgPoolV2".into()]),
            ),
            ("1:ksize", ints(&[1, 1, 2, 2])),
            ("1:strides", ints(&[1, 1, 2, 2])),
        ]);
        let attrs: Vec<(&str, AttrValue)> =
            attrs.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        key(&one_node("Ascend910B2", "Conv2D", &with(&attrs, extra)))
    };
    let base = fused(&[]);
    assert_eq!(fused(&[("1:ceil_mode", AttrValue::Int(0))]), base);
    assert_eq!(fused(&[("1:exclusive", AttrValue::Bool(true))]), base);
    assert_eq!(
        fused(&[("1:data_format", AttrValue::Str("NHWC".into()))]),
        base
    );
    assert_ne!(fused(&[("1:ksize", ints(&[1, 1, 3, 3]))]), base);
    assert_ne!(fused(&[("1:exclusive", AttrValue::Bool(false))]), base);
}

/// Flips every default ResNet-50's Convs may state or omit (`dilations`, `group`, `strides`
/// of 1): present ones are removed, absent ones written.
fn flip_conv_defaults(model: &mut tunebank::model::Model) -> usize {
    let mut flipped = 0;
    for node in model.graph.nodes.iter_mut().filter(|n| n.op_type == "Conv") {
        for (name, default) in [
            ("dilations", Attr::Ints(vec![1, 1])),
            ("group", Attr::Int(1)),
            ("strides", Attr::Ints(vec![1, 1])),
        ] {
            match node.attrs.get(name) {
                Some(v) if *v == default => {
                    node.attrs.remove(name);
                    flipped += 1;
                }
                None => {
                    node.attrs.insert(name.to_owned(), default);
                    flipped += 1;
                }
                Some(_) => {}
            }
        }
    }
    flipped
}

#[test]
fn resnet50s_subgraph_keys_do_not_depend_on_stated_defaults_and_schema_2_records_migrate() {
    let model = load_onnx(sgat_fixture::model_path()).unwrap();
    let options = sgat_fixture::options();
    let soc = options.soc().unwrap();
    let plan = sgat_plan(&model, &options, &soc).unwrap();
    let mut flipped = model.clone();
    assert!(flip_conv_defaults(&mut flipped) > 50);
    let other = sgat_plan(&flipped, &options, &soc).unwrap();
    let keys =
        |p: &tunebank::tune::sgat::SgatPlan| p.subgraphs.iter().map(|s| s.key).collect::<Vec<_>>();
    assert_eq!(keys(&plan), keys(&other));

    // Every Conv2D node holds its listed attributes.
    let convs: Vec<&GraphNode> = plan
        .subgraphs
        .iter()
        .flat_map(|s| &s.descriptor.nodes)
        .filter(|n| n.op_type == "Conv2D")
        .collect();
    assert!(convs.len() >= 53, "{} Conv2D nodes", convs.len());
    for n in &convs {
        for a in ["strides", "pads", "dilations", "groups"] {
            assert!(n.attrs.contains_key(a), "{}: {a} missing", n.name);
        }
    }

    // A schema-2 record of each subgraph, its Conv2D nodes without the defaults schema 2 left
    // absent, migrates to the key the partition gives now.
    let mut migrated = 0;
    for s in &plan.subgraphs {
        let mut old = s.descriptor.clone();
        for n in old.nodes.iter_mut().filter(|n| n.op_type == "Conv2D") {
            for a in ["dilations", "groups"] {
                n.attrs.remove(a);
            }
        }
        let mut record = sgat_fixture::graph_record(&plan, 0, json!({"cut": [1]}));
        record.key_schema_version = 2;
        record.descriptor = Descriptor::Graph(old);
        let m = migrate_record(&record).unwrap();
        assert_eq!(m.key_schema_version, KEY_SCHEMA_VERSION);
        assert_eq!(descriptor_key(&m.descriptor).unwrap(), s.key, "{}", s.name);
        migrated += 1;
    }
    assert_eq!(migrated, plan.subgraphs.len());
}
