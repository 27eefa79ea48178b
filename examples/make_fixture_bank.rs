//! Writes the backward-compatibility fixture banks `fixtures/banks/v1.redb` and `v2.redb` (see
//! the README in that folder). Their content is fixed; `src/tests/backward_compatibility.rs` states
//! what they hold. The format is taken from the file name: `v1.redb` is written in record format
//! 1 (`encode_v1`) under key schema 1, `v2.redb` in record format 2 (`encode`) under key schema
//! 2, as the tunebank versions that first wrote them did, so a regenerated file holds the same
//! values. In `v2.redb`, record 1 is a confirmed default (`default_confirmed`).
//!
//! Usage: `cargo run --example make_fixture_bank -- fixtures/banks/v1.redb`

use std::collections::BTreeMap;

use tunebank::bank::store::{IndexKey, RedbStore, Store, StoreEntry};
use tunebank::bank::{encode, encode_v1, Descriptor, Origin, Performance, Provenance, Record};
use tunebank::key::StrategyMap;
use tunebank::key::{
    BankKey, DType, Format, ImplMode, OpDescriptor, RecordKind, SocSpec, TensorDesc,
};

/// Number of records in the fixture.
const RECORDS: u64 = 6;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: make_fixture_bank <output.redb>")?;
    let format = match std::path::Path::new(&path)
        .file_name()
        .and_then(|n| n.to_str())
    {
        Some("v1.redb") => 1,
        Some("v2.redb") => 2,
        _ => return Err("the output file must be named v1.redb or v2.redb".into()),
    };
    if std::path::Path::new(&path).exists() {
        return Err(format!("{path} exists; remove it first").into());
    }
    let store = RedbStore::open(&path)?;
    let mut owned = Vec::new();
    for i in 0..RECORDS {
        let soc = if i.is_multiple_of(2) {
            "Ascend910B2"
        } else {
            "Ascend310P3"
        };
        let op_type = if i < 4 { "MatMul" } else { "Add" };
        let key = BankKey(
            *blake3::hash(format!("tunebank fixture v{format} record {i}").as_bytes()).as_bytes(),
        );
        let record = record(i, soc, op_type, format);
        let value = if format == 1 {
            encode_v1(&key, &record)
        } else {
            encode(&key, &record)
        };
        owned.push((
            key,
            value,
            IndexKey {
                soc: soc.to_owned(),
                kind: RecordKind::Op,
                op_type: op_type.to_lowercase(),
            },
        ));
    }
    let entries: Vec<StoreEntry<'_>> = owned
        .iter()
        .map(|(key, value, index)| StoreEntry {
            key: *key,
            value,
            index: index.clone(),
        })
        .collect();
    store.put_batch(&entries)?;
    println!(
        "wrote {} records (record format {format}) to {path}",
        store.len()?
    );
    Ok(())
}

fn record(i: u64, soc: &str, op_type: &str, format: u32) -> Record {
    let tensor = |shape: Vec<i64>| TensorDesc {
        shape: shape.clone(),
        ori_shape: shape,
        dtype: DType::Float16,
        format: Format::ND,
        ori_format: Format::ND,
    };
    let m = 16 * (i as i64 + 1);
    let mut strategy = StrategyMap::new();
    strategy.insert("baseM".into(), serde_json::json!(16 * (i + 1)));
    strategy.insert("baseN".into(), serde_json::json!(256));
    strategy.insert("impl".into(), serde_json::json!("mmad"));
    strategy.insert("dbL0C".into(), serde_json::json!(i.is_multiple_of(2)));
    Record {
        // Key schema 1 went with record format 1, schema 2 with format 2.
        key_schema_version: format,
        kind: RecordKind::Op,
        descriptor: Descriptor::Op(OpDescriptor {
            op_type: op_type.to_owned(),
            fused_ops: Vec::new(),
            inputs: vec![tensor(vec![m, 64]), tensor(vec![64, 256])],
            outputs: vec![tensor(vec![m, 256])],
            attrs: BTreeMap::new(),
            impl_mode: ImplMode::HighPerformance,
            cube_math: Default::default(),
            soc: SocSpec {
                version: soc.to_owned(),
                core_count: if soc == "Ascend910B2" { 24 } else { 8 },
                core_type: "AiCore".to_owned(),
            },
            origin: None,
        }),
        options: BTreeMap::from([("precision_mode".to_owned(), "force_fp16".to_owned())]),
        strategy,
        performance: Performance {
            baseline_us: 100.0 + i as f64,
            tuned_us: 50.0 + i as f64,
            samples_us: vec![50.0 + i as f64, 50.5 + i as f64],
            runner: "sim:fixture".to_owned(),
            default_confirmed: format == 2 && i == 1,
            confirmed_budget: None,
        },
        provenance: Provenance {
            tool_version: "0.1.0".to_owned(),
            algorithm: "exhaustive".to_owned(),
            trials: 10 + i,
            seed: i,
            unix_time: 1_764_000_000,
            origin: if i == 5 {
                Origin::Imported
            } else {
                Origin::Tuned
            },
        },
    }
}
