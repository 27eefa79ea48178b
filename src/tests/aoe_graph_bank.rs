//! AOE's graph (fusion-strategy) bank read by the library: the subgraphs of the committed sample
//! (`fixtures/ascend/ascend910b2_l2cache.sample.json`) map to device formats and edges. Import,
//! export and calibration on the command line are `tests/it/aoe_graph_bank.rs`.

use std::path::{Path, PathBuf};

use tunebank::bank::interchange::aoe_graph::{self};
use tunebank::key::{Format, TensorSource};

fn sample_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/ascend/ascend910b2_l2cache.sample.json")
}

#[test]
fn sample_subgraphs_map_to_device_formats_and_edges() {
    let file = aoe_graph::read_aoe_graph_file(&sample_path()).unwrap();
    let soc = tunebank::key::SocSpec::from_version("Ascend910B2").unwrap();
    let densenet = file.graphs.iter().find(|g| g.line == 7).unwrap();
    let mapped = densenet.map(&soc);
    assert_eq!(mapped.subgraphs.len(), 4);
    // Subgraph 1 of DenseNet: ConcatD → BNInferenceD → Relu → Conv2D, chained port 0 to
    // output 0; the BN's scale and offset are graph inputs in NC1HWC0.
    let (g, strategy) = mapped.subgraphs[1].mapped.clone().unwrap();
    let types: Vec<&str> = g.nodes.iter().map(|n| n.op_type.as_str()).collect();
    assert_eq!(types[..4], ["ConcatD", "BNInferenceD", "Relu", "Conv2D"]);
    for i in 1..4 {
        assert_eq!(
            g.nodes[i].inputs[0],
            TensorSource::Node {
                node: i as u32 - 1,
                output: 0
            }
        );
    }
    let TensorSource::GraphInput { index } = g.nodes[1].inputs[1] else {
        panic!("the BN scale is a graph input")
    };
    assert_eq!(g.inputs[index as usize].format, Format::NC1HWC0);
    assert!(strategy.contains_key("cut"));
    let bert = file
        .graphs
        .iter()
        .find(|g| g.text.contains("GatherV2"))
        .unwrap();
    let (g, _) = bert.map(&soc).subgraphs[0].mapped.clone().unwrap();
    let bmm = g
        .nodes
        .iter()
        .find(|n| n.op_type == "BatchMatMulV2")
        .unwrap();
    let TensorSource::GraphInput { index } = bmm.inputs[1] else {
        panic!("a weight is a graph input")
    };
    assert_eq!(g.inputs[index as usize].format, Format::FractalNz);
}
