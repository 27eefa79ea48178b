//! The subgraph model's equations on constructed nodes.

use super::*;

/// A node the op model would give: `body` µs on top of the launch, `compute` of it cube.
fn node(soc: &SocModel, body: f64, compute: f64) -> NodeModel {
    NodeModel {
        op_us: soc.launch_us + body,
        roofline_us: soc.launch_us,
        compute_us: compute,
        working_set: 1 << 20,
        weight_bytes: 0,
        modelled: true,
    }
}

/// The fused kernel's equation (`crates/measure/src/README.md`, "Subgraph model"): a cube member
/// and a vector member take the longer of their bodies, two vector members their sum, each
/// less the traffic of the edge between them.
#[test]
fn a_fused_kernel_runs_its_cube_and_vector_members_in_one_pass() {
    let soc = SocModel::for_version("Ascend910B2").unwrap();
    let b = 4096u64;
    let ops = |first: NodeModel, second: NodeModel| GraphOps {
        soc,
        nodes: vec![first, second],
        edges: vec![Edge {
            from: 0,
            to: 1,
            bytes: b,
            transdata: false,
            direct: None,
        }],
        out_bytes: vec![b, b],
        graph_out_bytes: 0,
    };
    let fused = SgatStrategy {
        scope_id: vec![7, 7],
        ..SgatStrategy::unfused(2)
    };
    let w = b as f64 / soc.chip_write_bw(1 << 20) * 1e6;
    let r = b as f64 / soc.chip_read_bw(1 << 20) * 1e6;
    let l = soc.launch_us;
    // Conv → Relu: 100 µs of cube work (80 of it compute) and 30 µs of vector work.
    let conv_relu = ops(node(soc, 100.0, 80.0), node(soc, 30.0, 0.0));
    let t = conv_relu.time(&fused).unwrap();
    assert!(
        (t.total_us - (l + (100.0 - w).max(30.0 - r))).abs() < 1e-9,
        "{t:?}"
    );
    assert_eq!(t.launches, 1);
    // The vector side longer than the cube side: the kernel takes the vector side.
    let t = ops(node(soc, 20.0, 15.0), node(soc, 90.0, 0.0))
        .time(&fused)
        .unwrap();
    assert!(
        (t.total_us - (l + (90.0 - r).max(20.0 - w))).abs() < 1e-9,
        "{t:?}"
    );
    // Add → Relu: one pipeline, the sum.
    let t = ops(node(soc, 40.0, 0.0), node(soc, 30.0, 0.0))
        .time(&fused)
        .unwrap();
    assert!((t.total_us - (l + 70.0 - w - r)).abs() < 1e-9, "{t:?}");
    // Apart, each pays its launch and the edge at main-memory rates: slower than fused.
    let apart = conv_relu.time(&SgatStrategy::unfused(2)).unwrap();
    let hbm = b as f64 / soc.chip_mem_bw * 1e6;
    let want = 2.0 * l + (100.0 - w + hbm) + (30.0 - r + hbm);
    assert!((apart.total_us - want).abs() < 1e-9, "{apart:?} vs {want}");
}
