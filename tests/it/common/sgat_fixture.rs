//! The ResNet-50 SGAT plan and graph-bank records the post-SGAT tests (`tests/it/sgat_convert.rs`,
//! `src/tests/sgat_convert.rs`) share.

use std::path::Path;

use serde_json::Value;
use tunebank::bank::{Bank, Descriptor, Origin, Performance, Provenance, Record};
use tunebank::key::{FsReader, RecordKind, ResolvedOptions};
use tunebank::model::load_onnx;
use tunebank::tune::sgat::{sgat_plan, SgatPlan};
use tunebank::tune::{self, TunePlan};

pub const SOC: &str = "Ascend910B2";

pub const SHAPE: &str = "--input_shape=input:32,3,224,224";

pub fn model_path() -> String {
    format!(
        "{}/fixtures/models/resnet50.onnx",
        env!("CARGO_MANIFEST_DIR")
    )
}

pub fn options() -> ResolvedOptions {
    ResolvedOptions::from_args(
        [format!("--soc_version={SOC}"), SHAPE.to_owned()],
        &FsReader,
    )
    .unwrap()
}

pub fn plans() -> (TunePlan, SgatPlan) {
    let model = load_onnx(model_path()).unwrap();
    let o = options();
    let soc = o.soc().unwrap();
    (
        tune::plan(&model, &o, &soc, None).unwrap(),
        sgat_plan(&model, &o, &soc).unwrap(),
    )
}

pub fn graph_record(plan: &SgatPlan, sg: usize, strategy: Value) -> Record {
    Record {
        key_schema_version: tunebank::key::KEY_SCHEMA_VERSION,
        kind: RecordKind::Graph,
        descriptor: Descriptor::Graph(plan.subgraphs[sg].descriptor.clone()),
        options: Default::default(),
        strategy: serde_json::from_value(strategy).unwrap(),
        performance: Performance {
            baseline_us: 2.0,
            tuned_us: 1.0,
            samples_us: vec![1.0],
            runner: "sim-sgat-v1".into(),
            default_confirmed: false,
            confirmed_budget: None,
        },
        provenance: Provenance {
            tool_version: "test".into(),
            algorithm: "manual".into(),
            trials: 0,
            seed: 0,
            unix_time: 0,
            origin: Origin::Imported,
        },
    }
}

pub fn graph_bank(file: &Path, records: &[Record]) -> Bank {
    let bank = Bank::builder(RecordKind::Graph, SOC)
        .custom_path(file)
        .no_default_builtin()
        .open()
        .unwrap();
    bank.write_batch(records).unwrap();
    bank
}
