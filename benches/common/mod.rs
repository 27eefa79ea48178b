//! Shared set-up of the bank benches: a deterministic bank of synthetic op records, built once
//! and cached under the target directory.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use tunebank::bank::Bank;
use tunebank::bank::{Descriptor, Origin, Performance, Provenance, Record};
use tunebank::key::{
    CubeMath, DType, Format, ImplMode, OpDescriptor, RecordKind, SocSpec, TensorDesc,
};

/// SoC of every bench record.
pub const SOC: &str = "Ascend910B2";

/// Directory for cached bench banks (`$CARGO_TARGET_DIR` or `target/`, then `bench-banks/`).
pub fn bench_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("bench-banks")
}

fn tensor(shape: Vec<i64>, dtype: DType) -> TensorDesc {
    TensorDesc {
        ori_shape: shape.clone(),
        shape,
        dtype,
        format: Format::ND,
        ori_format: Format::ND,
    }
}

/// The i-th synthetic op: a MatMul / BatchMatMul / Add with shapes derived from `i`, so that every
/// `i` gives a distinct descriptor.
pub fn op(i: u64) -> OpDescriptor {
    let m = 16 * (1 + (i % 997) as i64);
    let n = 16 * (1 + ((i / 997) % 1009) as i64);
    let k = 16 * (1 + (i / (997 * 1009)) as i64);
    let (op_type, inputs, outputs) = match i % 3 {
        0 => (
            "MatMul",
            vec![
                tensor(vec![m, k], DType::Float16),
                tensor(vec![k, n], DType::Float16),
            ],
            vec![tensor(vec![m, n], DType::Float16)],
        ),
        1 => (
            "BatchMatMul",
            vec![
                tensor(vec![8, m, k], DType::Float16),
                tensor(vec![8, k, n], DType::Float16),
            ],
            vec![tensor(vec![8, m, n], DType::Float16)],
        ),
        _ => (
            "Add",
            vec![
                tensor(vec![m, n, k], DType::Float32),
                tensor(vec![m, n, k], DType::Float32),
            ],
            vec![tensor(vec![m, n, k], DType::Float32)],
        ),
    };
    let mut attrs = BTreeMap::new();
    if op_type != "Add" {
        attrs.insert(
            "transpose_x1".to_owned(),
            tunebank::key::AttrValue::Bool(false),
        );
        attrs.insert(
            "transpose_x2".to_owned(),
            tunebank::key::AttrValue::Bool(false),
        );
    }
    OpDescriptor {
        op_type: op_type.to_owned(),
        fused_ops: Vec::new(),
        inputs,
        outputs,
        attrs,
        impl_mode: ImplMode::HighPerformance,
        cube_math: CubeMath::Native,
        soc: SocSpec {
            version: SOC.to_owned(),
            core_count: 24,
            core_type: "AiCore".to_owned(),
        },
        origin: None,
    }
}

/// A record for `op(i)` with a realistic tiling strategy.
pub fn record(i: u64) -> Record {
    let mut strategy = BTreeMap::new();
    for (name, v) in [
        ("baseM", 128),
        ("baseN", 256),
        ("baseK", 64),
        ("depthA1", 2),
        ("depthB1", 2),
        ("stepKa", 1),
        ("stepKb", 1),
        ("iterateOrder", (i % 2) as i64),
        ("dbL0A", 2),
        ("dbL0B", 2),
        ("dbL0C", 1),
    ] {
        strategy.insert(name.to_owned(), serde_json::json!(v));
    }
    let mut options = BTreeMap::new();
    options.insert("precision_mode".to_owned(), "force_fp16".to_owned());
    options.insert("soc_version".to_owned(), SOC.to_owned());
    Record {
        key_schema_version: tunebank::key::KEY_SCHEMA_VERSION,
        kind: RecordKind::Op,
        descriptor: Descriptor::Op(op(i)),
        options,
        strategy,
        performance: Performance {
            baseline_us: 58.781,
            tuned_us: 26.876,
            samples_us: vec![26.9, 26.8, 26.9, 26.85, 26.88],
            runner: "sim:Ascend910B2".to_owned(),
            default_confirmed: false,
            confirmed_budget: None,
        },
        provenance: Provenance {
            tool_version: env!("CARGO_PKG_VERSION").to_owned(),
            algorithm: "bench".to_owned(),
            trials: 200,
            seed: i,
            unix_time: 1_790_000_000,
            origin: Origin::Tuned,
        },
    }
}

/// Path of a cached bench bank holding records `0..n` in the current record format; built (in
/// batches of 100,000, into a temporary file renamed into place) the first time it is asked
/// for. The file name carries the record format version, so a bank of an older format is
/// never measured by mistake.
pub fn ensure_bank(n: u64) -> PathBuf {
    let dir = bench_dir();
    std::fs::create_dir_all(&dir).expect("create bench-banks directory");
    let v = tunebank::bank::RECORD_FORMAT_VERSION;
    let path = dir.join(format!("op_{n}_f{v}.redb"));
    if path.exists() {
        return path;
    }
    let tmp = dir.join(format!("op_{n}_f{v}.redb.building"));
    let _ = std::fs::remove_file(&tmp);
    eprintln!(
        "building bench bank of {n} records at {} ...",
        path.display()
    );
    let bank = Bank::builder(RecordKind::Op, SOC)
        .custom_path(&tmp)
        .no_default_builtin()
        .open()
        .expect("open bench bank");
    let batch = 100_000;
    let mut start = 0;
    while start < n {
        let end = (start + batch).min(n);
        let records: Vec<Record> = (start..end).map(record).collect();
        bank.write_batch(&records).expect("write bench batch");
        start = end;
    }
    drop(bank);
    std::fs::rename(&tmp, &path).expect("rename bench bank into place");
    path
}
