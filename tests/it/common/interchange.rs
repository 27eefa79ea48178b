//! Records, descriptors and banks the interchange tests (`tests/it/inspect_interchange.rs`,
//! `src/tests/bank_interchange.rs`) build.

use std::collections::BTreeMap;
use std::path::Path;

use tunebank::bank::Bank;
use tunebank::bank::{Descriptor, Origin, Performance, Provenance, Record};
use tunebank::key::{
    AttrValue, CubeMath, DType, Format, ImplMode, OpDescriptor, RecordKind, SocSpec, TensorDesc,
    KEY_SCHEMA_VERSION,
};

pub const SOC: &str = "Ascend910B2";

pub fn soc() -> SocSpec {
    SocSpec {
        version: SOC.into(),
        core_count: 24,
        core_type: "AiCore".into(),
    }
}

pub fn descriptor(i: i64) -> OpDescriptor {
    let t = |shape: Vec<i64>, dtype| TensorDesc {
        ori_shape: shape.clone(),
        shape,
        dtype,
        format: Format::ND,
        ori_format: Format::ND,
    };
    OpDescriptor {
        op_type: if i % 2 == 0 { "MatMul" } else { "Add" }.into(),
        fused_ops: vec![],
        inputs: vec![
            t(vec![16 * i, 64], DType::Float16),
            t(vec![64, 32], DType::Float32),
        ],
        outputs: vec![t(vec![16 * i, 32], DType::Float16)],
        attrs: BTreeMap::from([
            ("alpha".to_owned(), AttrValue::Float(0.1 * i as f64)),
            ("axes".to_owned(), AttrValue::Ints(vec![-1, i])),
        ]),
        impl_mode: ImplMode::HighPerformance,
        cube_math: CubeMath::Native,
        soc: soc(),
        origin: None,
    }
}

pub fn record(i: i64, us: f64, algorithm: &str) -> Record {
    Record {
        key_schema_version: KEY_SCHEMA_VERSION,
        kind: RecordKind::Op,
        descriptor: Descriptor::Op(descriptor(i)),
        options: BTreeMap::from([
            ("precision_mode".to_owned(), "force_fp16".to_owned()),
            ("soc_version".to_owned(), SOC.to_owned()),
        ]),
        strategy: BTreeMap::from([
            ("baseM".to_owned(), serde_json::json!(128)),
            ("ratio".to_owned(), serde_json::json!(1.0 / 3.0 + i as f64)),
            (
                "nested".to_owned(),
                serde_json::json!({"z": [1, 2.5e-7, null], "a": {"k": "é"}}),
            ),
        ]),
        performance: Performance {
            baseline_us: 58.781,
            tuned_us: us,
            samples_us: vec![us, us * 1.01, 0.1 + us],
            runner: "sim:Ascend910B2".into(),
            default_confirmed: false,
            confirmed_budget: None,
        },
        provenance: Provenance {
            tool_version: "0.1.0".into(),
            algorithm: algorithm.into(),
            trials: 200,
            seed: i as u64,
            unix_time: 1_790_000_000 + i as u64,
            origin: Origin::Tuned,
        },
    }
}

pub fn open(path: &Path) -> Bank {
    Bank::builder(RecordKind::Op, SOC)
        .custom_path(path)
        .no_default_builtin()
        .open()
        .unwrap()
}
