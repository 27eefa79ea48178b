//! Fusion into tuning units, AOE naming, resolution into keys per profile, and one task per
//! key.

use std::collections::BTreeMap;
use std::path::PathBuf;

use tunebank::key::{resolve_op, DType, FsReader, Profile, ResolvedOptions};
use tunebank::model::{group_by_key, load_onnx, resolve_units, Model, ProfileUnits, TuningUnit};

fn model(name: &str) -> Model {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/models")
        .join(name);
    load_onnx(path).unwrap()
}

fn options(args: &[&str]) -> ResolvedOptions {
    let mut all = vec!["--soc_version=Ascend910B2"];
    all.extend_from_slice(args);
    ResolvedOptions::from_args(all, &FsReader).unwrap()
}

fn kinds(units: &[TuningUnit]) -> BTreeMap<String, usize> {
    let mut k = BTreeMap::new();
    for u in units {
        *k.entry(u.op_types.join("+")).or_insert(0) += 1;
    }
    k
}

fn only(profiles: Vec<ProfileUnits>) -> ProfileUnits {
    assert_eq!(profiles.len(), 1);
    profiles.into_iter().next().unwrap()
}

#[test]
fn resnet50_fuses_into_53_conv_units_16_residual_units_and_3_others() {
    let p = only(model("resnet50.onnx").tuning_units(&options(&[])).unwrap());
    assert!(p.unkeyable.is_empty());
    let expected: BTreeMap<String, usize> = [
        ("Conv+BatchNormalization+Relu", 33),
        ("Conv+BatchNormalization", 20),
        ("Add+Relu", 16),
        ("MaxPool", 1),
        ("GlobalAveragePool", 1),
        ("Gemm", 1),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(kinds(&p.units), expected);
    assert_eq!(p.units.len(), 72);
    // Flatten only relabels: no unit.
    assert!(p.units.iter().all(|u| u.op_types != ["Flatten"]));

    let first = &p.units[0];
    assert_eq!(first.name, "/conv1/Conv/bn1/BatchNormalization/relu/Relu");
    assert_eq!(first.node_names.len(), 3);
    assert_eq!(first.template.node_name, first.name);
    assert_eq!(first.template.op_type, "Conv");
    assert_eq!(
        first.template.fused_ops,
        ["Conv", "BatchNormalization", "Relu"]
    );
    assert_eq!(first.template.inputs[0].shape, [1, 3, 224, 224]);
    assert_eq!(
        first.template.inputs[0].graph_input.as_deref(),
        Some("input")
    );
    assert_eq!(first.template.inputs[1].shape, [64, 3, 7, 7]);
    assert_eq!(first.template.inputs[1].graph_input, None);
    assert_eq!(first.template.outputs[0].shape, [1, 64, 112, 112]);
    assert!(first.template.attrs.contains_key("pads"));
    assert!(first.template.attrs.contains_key("1:epsilon"));

    let gemm = p.units.last().unwrap();
    assert_eq!(gemm.template.fused_ops, Vec::<String>::new());
    assert_eq!(gemm.template.outputs[0].shape, [1, 1000]);
    // Gemm reads through Flatten: its dtype comes from the pooling unit.
    assert_eq!(gemm.input_tensors[0], "flat");
    assert_eq!(gemm.input_origins[0], "gap");
}

#[test]
fn identical_keys_are_tuned_once_and_keep_every_name() {
    let opts = options(&[]);
    let p = only(model("resnet50.onnx").tuning_units(&opts).unwrap());
    let resolved = resolve_units(&p.units, &p.graph.profile, &opts, &opts.soc().unwrap()).unwrap();
    let groups = group_by_key(&resolved);
    assert_eq!(groups.len(), 30);
    assert_eq!(groups.iter().map(|g| g.op_names.len()).sum::<usize>(), 72);
    // The three 3×3 convs of layer1 share one key under three names.
    let g = groups
        .iter()
        .find(|g| g.op_names[0].starts_with("/layer1/layer1.0/conv2/Conv"))
        .unwrap();
    assert_eq!(g.op_names.len(), 3);
    assert!(g.op_names[2].starts_with("/layer1/layer1.2/conv2/Conv"));
    assert_eq!(resolved[g.first].unit.name, g.op_names[0]);
    assert_eq!(g.units.len(), 3);
    assert_eq!(g.units[0], g.first);
    assert!(g.units.iter().all(|&i| resolved[i].resolved.key == g.key));
}

#[test]
fn bert_layer_fuses_bias_adds_and_the_erf_gelu_chain() {
    let opts = options(&[]);
    let p = only(model("bert_layer.onnx").tuning_units(&opts).unwrap());
    let k = kinds(&p.units);
    assert_eq!(k["MatMul+Add"], 6);
    assert_eq!(k["MatMul"], 2);
    assert_eq!(k["Transpose"], 4);
    assert_eq!(k["Div+Add"], 1);
    assert_eq!(k["Softmax"], 1);
    assert_eq!(k["Add"], 2);
    assert_eq!(k["LayerNormalization"], 2);
    assert_eq!(k["Div+Erf+Add+Mul+Mul"], 1);
    assert_eq!(p.units.len(), 19);
    let gelu = p.units.iter().find(|u| u.op_types.len() == 5).unwrap();
    assert_eq!(gelu.template.inputs[0].shape, [1, 128, 3072]);
    assert_eq!(gelu.template.outputs.len(), 1);
    let ffn = p
        .units
        .iter()
        .find(|u| u.name.contains("intermediate.dense/MatMul"))
        .unwrap();
    assert_eq!(
        ffn.name,
        "/bert/encoder/layer.0/intermediate.dense/MatMul/bert/encoder/layer.0/intermediate.dense/Add"
    );
    assert_eq!(ffn.template.inputs[1].shape, [768, 3072]);

    let resolved = resolve_units(&p.units, &p.graph.profile, &opts, &opts.soc().unwrap()).unwrap();
    let groups = group_by_key(&resolved);
    assert_eq!(groups.len(), 13);
    // Q, K, V and the attention output projection are one 128×768×768 problem.
    let qkvo = groups.iter().find(|g| g.op_names.len() == 4).unwrap();
    assert!(qkvo.op_names[0].contains("attention.self.query"));
    assert!(qkvo.op_names[3].contains("attention.output.dense"));
}

#[test]
fn each_dynamic_profile_resolves_to_its_own_static_keys() {
    let opts = options(&[
        "--input_shape=input:-1,3,224,224",
        "--dynamic_batch_size=1,8",
    ]);
    let soc = opts.soc().unwrap();
    let profiles = model("resnet50.onnx").tuning_units(&opts).unwrap();
    assert_eq!(profiles.len(), 2);
    let mut keys = Vec::new();
    for (p, b) in profiles.iter().zip([1, 8]) {
        assert_eq!(p.graph.profile, Profile::Batch(b));
        assert_eq!(p.units.len(), 72);
        let resolved = resolve_units(&p.units, &p.graph.profile, &opts, &soc).unwrap();
        // Deep in the network, the batch is this profile's.
        let last_conv = resolved
            .iter()
            .rev()
            .find(|r| r.unit.op_types[0] == "Conv")
            .unwrap();
        assert_eq!(
            last_conv.resolved.descriptor.inputs[0].ori_shape,
            [b, 512, 7, 7]
        );
        assert_eq!(last_conv.resolved.profile, Profile::Batch(b));
        // The graph-fed conv: the resolver's own -1 filling agrees with inference.
        assert_eq!(
            resolved[0].resolved.descriptor.inputs[0].ori_shape,
            [b, 3, 224, 224]
        );
        keys.push(resolved.iter().map(|r| r.resolved.key).collect::<Vec<_>>());
    }
    assert!(keys[0].iter().zip(&keys[1]).all(|(a, b)| a != b));
}

#[test]
fn producer_dtypes_follow_resolved_producers_under_mixed_precision() {
    let opts = options(&["--precision_mode=allow_mix_precision"]);
    let soc = opts.soc().unwrap();
    let p = only(model("bert_layer.onnx").tuning_units(&opts).unwrap());
    let resolved = resolve_units(&p.units, &p.graph.profile, &opts, &soc).unwrap();
    // Graph inputs have no producer; everything else fed by a unit knows its producer's dtype.
    assert_eq!(resolved[0].unit.template.inputs[0].producer_dtype, None);
    let softmax = resolved
        .iter()
        .find(|r| r.unit.op_types == ["Softmax"])
        .unwrap();
    let producer = resolved
        .iter()
        .find(|r| r.unit.op_types == ["Div", "Add"])
        .unwrap();
    assert_eq!(
        softmax.unit.template.inputs[0].producer_dtype,
        Some(producer.resolved.descriptor.outputs[0].dtype)
    );
    // The templates are what the resolver consumes: resolving one by hand gives the same key.
    for r in &resolved {
        let d = resolve_op(&r.unit.template, &opts, &soc, &r.resolved.profile).unwrap();
        assert_eq!(d.key().unwrap(), r.resolved.key);
    }
    assert!(resolved.iter().all(|r| r
        .resolved
        .descriptor
        .inputs
        .iter()
        .all(|t| t.dtype != DType::Float64)));
}

#[test]
fn unfused_templates_cover_every_computing_node() {
    let m = model("resnet50.onnx");
    let g = m.infer(&options(&[])).unwrap().pop().unwrap();
    let ops = m.op_templates(&g);
    assert_eq!(ops.len(), 174); // 175 nodes less Flatten
    assert!(ops.iter().all(|o| o.fused_ops.is_empty()));
    assert!(ops.iter().all(|o| o
        .inputs
        .iter()
        .chain(&o.outputs)
        .all(|t| t.shape.iter().all(|&d| d > 0))));
}

#[test]
fn units_around_a_skipped_op_are_still_produced() {
    let opts = options(&["--input_shape=x:1,3,32,32"]);
    let p = only(model("unknown_op.onnx").tuning_units(&opts).unwrap());
    let names: Vec<&str> = p.units.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["conv1relu1", "sigmoid", "conv2relu2", "gap"]);
    assert_eq!(p.graph.skipped.len(), 1);
}

#[test]
fn folded_shape_arithmetic_is_not_an_op() {
    let m = model("bert_layer.onnx");
    let g = m.infer(&options(&[])).unwrap().pop().unwrap();
    let types: Vec<String> = m.op_templates(&g).into_iter().map(|o| o.op_type).collect();
    for folded in [
        "Shape",
        "Gather",
        "Unsqueeze",
        "Concat",
        "Constant",
        "Reshape",
    ] {
        assert!(!types.iter().any(|t| t == folded), "{folded} in {types:?}");
    }
    // 49 nodes less 8 Constants, the 6 other nodes of the Shape chain, 4 Reshapes and the
    // Identity: exactly the 30 members of the 19 tuning units.
    assert_eq!(types.len(), 30);
}

#[test]
fn input_format_decides_the_formats_of_graph_fed_tensors() {
    let m = model("resnet50.onnx");
    let soc = options(&[]).soc().unwrap();
    let mut formats = Vec::new();
    for args in [&[][..], &["--input_format=ND"][..]] {
        let opts = options(args);
        let p = only(m.tuning_units(&opts).unwrap());
        let r = resolve_units(&p.units[..1], &p.graph.profile, &opts, &soc).unwrap();
        formats.push(r[0].resolved.descriptor.inputs[0].ori_format);
    }
    use tunebank::key::Format;
    assert_eq!(formats, [Format::NCHW, Format::ND]);
}
