use super::map::{dsize_of, ABSENT_INPUTS};
use super::*;
use tunebank_key::{AttrValue, DType, Format, SocSpec, TensorSource};

fn soc() -> SocSpec {
    SocSpec::from_version("Ascend910B2").unwrap()
}

fn op(name: &str, ports: &[(&[i64], i64)]) -> AoeOp {
    AoeOp {
        op: name.into(),
        inputs: ports
            .iter()
            .map(|(s, d)| AoePort {
                shape: s.to_vec(),
                dsize: *d,
            })
            .collect(),
    }
}

const ABSENT: (&[i64], i64) = (&[-1], 0);

#[test]
fn a_conv_output_feeds_the_concat_port_whose_channels_it_makes() {
    // DenseNet: a 3x3 Conv2D making 2 C1 blocks, concatenated after the previous features.
    let ops = [
        op(
            "Conv2D",
            &[
                (&[32, 8, 56, 56, 16], 2),
                (&[72, 2, 16, 16], 2),
                ABSENT,
                ABSENT,
            ],
        ),
        op(
            "ConcatD",
            &[(&[32, 4, 56, 56, 16], 2), (&[32, 2, 56, 56, 16], 2)],
        ),
        op("Relu", &[(&[32, 6, 56, 56, 16], 2)]),
    ];
    let g = map_subgraph(&ops, &soc()).unwrap();
    assert_eq!(
        g.nodes[1].inputs,
        [
            TensorSource::GraphInput { index: 2 },
            TensorSource::Node { node: 0, output: 0 }
        ]
    );
    assert_eq!(
        g.nodes[2].inputs,
        [TensorSource::Node { node: 1, output: 0 }]
    );
    assert_eq!(g.nodes[0].outputs[0].shape, [32, 2, 56, 56, 16]);
    assert_eq!(g.nodes[0].attrs[ABSENT_INPUTS], AttrValue::Ints(vec![2, 3]));
    assert_eq!(g.inputs[0].format, Format::NC1HWC0);
    assert_eq!(g.inputs[1].format, Format::FractalZ);
    // Relu keeps its shape: its output is known, and it is the graph's output.
    assert_eq!(g.nodes[2].outputs[0].shape, [32, 6, 56, 56, 16]);
    assert_eq!(g.outputs, [TensorSource::Node { node: 2, output: 0 }]);
}

#[test]
fn parallel_convs_are_not_chained_and_the_add_takes_the_second() {
    // ResNet's downsampling block: two convs on different inputs, then the residual Add.
    let ops = [
        op(
            "Conv2D",
            &[
                (&[256, 8, 28, 28, 16], 2),
                (&[8, 32, 16, 16], 2),
                (&[512], 2),
                ABSENT,
            ],
        ),
        op(
            "Conv2D",
            &[
                (&[256, 16, 56, 56, 16], 2),
                (&[16, 32, 16, 16], 2),
                (&[512], 2),
                ABSENT,
            ],
        ),
        op(
            "Add",
            &[(&[256, 32, 28, 28, 16], 2), (&[256, 32, 28, 28, 16], 2)],
        ),
    ];
    let g = map_subgraph(&ops, &soc()).unwrap();
    assert!(g.nodes[1]
        .inputs
        .iter()
        .all(|s| matches!(s, TensorSource::GraphInput { .. })));
    assert_eq!(
        g.nodes[2].inputs[0],
        TensorSource::Node { node: 1, output: 0 }
    );
    // The first conv's output is not consumed and its H and W are unknown: no output listed.
    assert!(g.nodes[0].outputs.is_empty());
    assert_eq!(g.inputs.len(), 7);
}

#[test]
fn dsize_maps_to_dtypes_and_back() {
    let ops = [op("GatherV2", &[(&[30522, 768], 2), (&[], 8), (&[], 4)])];
    let g = map_subgraph(&ops, &soc()).unwrap();
    let dtypes: Vec<DType> = g.inputs.iter().map(|t| t.dtype).collect();
    assert_eq!(dtypes, [DType::Float16, DType::Int64, DType::Int32]);
    let cast = map_subgraph(&[op("Cast", &[(&[4, 4], 4)])], &soc()).unwrap();
    assert_eq!(cast.inputs[0].dtype, DType::Float32);
    for d in [1, 2, 4, 8] {
        let g = map_subgraph(&[op("Relu", &[(&[2], d)])], &soc()).unwrap();
        assert_eq!(dsize_of(g.inputs[0].dtype), d);
    }
}

#[test]
fn ops_that_do_not_map_are_named_with_the_reason() {
    let three = map_subgraph(
        &[op("Relu", &[(&[2], 2)]), op("Relu", &[(&[2], 3)])],
        &soc(),
    );
    let e = three.unwrap_err();
    assert_eq!((e.op, e.op_type.as_str()), (1, "Relu"));
    assert!(e.reason.contains("dsize 3"), "{e}");
    let dynamic = map_subgraph(&[op("Relu", &[(&[-1, 4], 2)])], &soc()).unwrap_err();
    assert!(dynamic.reason.contains("dynamic dim"), "{dynamic}");
    let sized_absent = map_subgraph(&[op("Relu", &[(&[4], 0)])], &soc()).unwrap_err();
    assert!(sized_absent.reason.contains("dsize 0"), "{sized_absent}");
}

#[test]
fn struct_of_rebuilds_the_ops() {
    let ops = [
        op("TransData", &[(&[32, 3, 224, 224], 2)]),
        op(
            "Conv2D",
            &[
                (&[32, 1, 224, 224, 16], 2),
                (&[49, 4, 16, 16], 2),
                (&[64], 2),
                ABSENT,
            ],
        ),
        op("FixPipe", &[(&[32, 4, 112, 112, 16], 2), ABSENT, ABSENT]),
    ];
    let g = map_subgraph(&ops, &soc()).unwrap();
    assert_eq!(
        struct_of(&g).unwrap().dumps_compact(),
        concat!(
            r#"[{"dsize":[2],"in":[[32,3,224,224]],"op":"TransData"},"#,
            r#"{"dsize":[2,2,2,0],"in":[[32,1,224,224,16],[49,4,16,16],[64],[-1]],"op":"Conv2D"},"#,
            r#"{"dsize":[2,0,0],"in":[[32,4,112,112,16],[-1],[-1]],"op":"FixPipe"}]"#
        )
    );
    assert_eq!(
        g.nodes[1].inputs[0],
        TensorSource::Node { node: 0, output: 0 }
    );
    assert_eq!(
        g.nodes[2].inputs[0],
        TensorSource::Node { node: 1, output: 0 }
    );
}

const LINE: &str = r#"{"feature":{"feature":[{"struct":[{"dsize":[2],"in":[[4,4]],"op":"Relu"}]}]},"graphID":"7","strategy":{"end2EndTime":1500,"group":[{"cut":[2,1],"fusionType":[false],"scopeId":[-1],"ubPass":{}}],"modelName":"m"}}"#;

#[test]
fn a_line_maps_to_descriptors_with_the_group_entry_as_strategy() {
    let g = parse_graph_line(LINE, 2).unwrap();
    let mapped = g.map(&soc());
    assert_eq!(
        (mapped.graph_id.as_str(), mapped.model_name.as_str()),
        ("7", "m")
    );
    assert_eq!(mapped.end2end_time_ns, 1500.0);
    let (d, strategy) = mapped.subgraphs[0].mapped.clone().unwrap();
    assert_eq!(d.nodes[0].op_type, "Relu");
    assert_eq!(
        serde_json::to_string(&strategy).unwrap(),
        r#"{"cut":[2,1],"fusionType":[false],"scopeId":[-1],"ubPass":{}}"#
    );
}

#[test]
fn malformed_lines_are_named() {
    let bad = |text: &str| match parse_graph_file(text) {
        Err(AoeGraphError::Line { line, detail }) => (line, detail),
        other => panic!("{other:?}"),
    };
    let header = "{\"version\": \"2.1\"}\n";
    assert_eq!(bad(&format!("{header}{LINE}\nnot json\n")).0, 3);
    let two_groups = LINE.replace(r#""group":[{"#, r#""group":[{},{"#);
    let (line, detail) = bad(&format!("{header}{two_groups}\n"));
    assert_eq!(line, 2);
    assert!(
        detail.contains("1 subgraphs in feature.feature but 2 entries"),
        "{detail}"
    );
    let uneven = LINE.replace(r#""dsize":[2]"#, r#""dsize":[2,2]"#);
    assert!(bad(&format!("{header}{uneven}\n")).1.contains("2 sizes"));
    assert_eq!(bad(&format!("{header}\n{LINE}\n")).0, 2, "an empty line");
    assert_eq!(bad("{}\n").0, 1, "no version");
    let ok = parse_graph_file(&format!("{header}{LINE}\n")).unwrap();
    assert_eq!(
        (ok.header.as_str(), ok.graphs.len()),
        (header.trim_end(), 1)
    );
}
