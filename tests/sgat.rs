//! SGAT end to end: partition, the subgraph model's properties, the strategy space, the driver
//! with its graph bank and result file.

use std::sync::atomic::AtomicBool;

use tunebank::bank::Bank;
use tunebank::key::{FsReader, RecordKind, ResolvedOptions};
use tunebank::measure::sim::graph::{GraphOps, SgatStrategy};
use tunebank::model::load_onnx;
use tunebank::model::partition::node_descriptor;
use tunebank::tune::sgat::{run_sgat, sgat_plan, SgatPlan};
use tunebank::tune::{Decision, TuneSettings};

fn resnet_plan(soc: &str, batch: u32) -> SgatPlan {
    let model = load_onnx(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/models/resnet50.onnx")).unwrap();
    let options = ResolvedOptions::from_args(
        [
            format!("--soc_version={soc}"),
            format!("--input_shape=input:{batch},3,224,224"),
        ],
        &FsReader,
    )
    .unwrap();
    sgat_plan(&model, &options, &options.soc().unwrap()).unwrap()
}

fn bert_plan(soc: &str) -> SgatPlan {
    let model = load_onnx(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/models/bert_layer.onnx")).unwrap();
    let options = ResolvedOptions::from_args([format!("--soc_version={soc}")], &FsReader).unwrap();
    sgat_plan(&model, &options, &options.soc().unwrap()).unwrap()
}

fn settings() -> TuneSettings {
    TuneSettings {
        runner: "sim".into(),
        ..TuneSettings::default()
    }
}

#[test]
fn debug_print() {
    for soc in ["Ascend910B2", "Ascend310P3"] {
        let plan = resnet_plan(soc, 32);
        eprintln!("{soc}: {} subgraphs, {} tasks, {} units", plan.subgraphs.len(), plan.tasks.len(), plan.units);
        for t in &plan.tasks {
            eprintln!("  {} nodes={} inst={}", t.names[0], t.descriptor.nodes.len(), t.instances);
        }
        let dir = tempfile::tempdir().unwrap();
        let bank = Bank::builder(RecordKind::Graph, soc)
            .custom_path(dir.path().join("g.redb"))
            .no_default_builtin()
            .open()
            .unwrap();
        let cancel = AtomicBool::new(false);
        let s = run_sgat(&plan, &bank, None, &settings(), "resnet50", None, &cancel).unwrap();
        eprintln!("{:?} base {} result {}", s.report.summary, s.report.baseline_ms, s.report.result_ms);
        for o in &s.outcomes {
            eprintln!("  {} {:?} {:?} {:?} {:?} {:?}", plan.tasks[o.task].names[0], o.decision, o.before_us, o.after_us, o.record.as_ref().map(|r| r.strategy.clone()), o.failure);
        }
    }
    let plan = bert_plan("Ascend910B2");
    for t in &plan.tasks {
        eprintln!("  {} nodes={} inst={}", t.names[0], t.descriptor.nodes.len(), t.instances);
    }
    let _ = (GraphOps::prepare, SgatStrategy::unfused, node_descriptor, Decision::Add);
}
