//! Builds a large redb bank and measures what a converter pays to use it: the time to open it,
//! the time of a first look-up (checksum verified, answer decoded), and the peak resident memory.
//!
//! ```sh
//! cargo run --release --example bank_scale -- create big.redb 1000000
//! cargo run --release --example bank_scale -- probe big.redb 1000000
//! cargo run --release --example bank_scale -- probe-rw big.redb 1000000
//! ```
//!
//! `probe` opens read-only, `probe-rw` read-write; each runs in a fresh process so that its
//! resident memory is that of a cold open.

use std::collections::BTreeMap;
use std::time::Instant;

use tunebank::bank::store::{IndexKey, RedbStore, Store, StoreEntry};
use tunebank::bank::{decode_answer, encode, Descriptor, Origin, Performance, Provenance, Record};
use tunebank::key::StrategyMap;
use tunebank::key::{
    BankKey, DType, Format, ImplMode, OpDescriptor, RecordKind, SocSpec, TensorDesc,
};

const OPS: [&str; 8] = [
    "MatMul",
    "BatchMatMul",
    "Conv2D",
    "Add",
    "Mul",
    "SoftmaxV2",
    "LayerNorm",
    "Transpose",
];

fn key(i: u64) -> BankKey {
    BankKey(*blake3::hash(&i.to_le_bytes()).as_bytes())
}

fn record(i: u64) -> (Record, IndexKey) {
    let op_type = OPS[(i % OPS.len() as u64) as usize];
    let t = |shape: Vec<i64>| TensorDesc {
        shape: shape.clone(),
        ori_shape: shape,
        dtype: DType::Float16,
        format: Format::ND,
        ori_format: Format::ND,
    };
    let m = (i % 4096) as i64 + 1;
    let n = (i / 4096) as i64 + 1;
    let mut strategy = StrategyMap::new();
    strategy.insert("baseM".into(), serde_json::json!(128));
    strategy.insert("baseN".into(), serde_json::json!(256));
    strategy.insert("baseK".into(), serde_json::json!(64));
    let record = Record {
        key_schema_version: tunebank::key::KEY_SCHEMA_VERSION,
        kind: RecordKind::Op,
        descriptor: Descriptor::Op(OpDescriptor {
            op_type: op_type.into(),
            fused_ops: Vec::new(),
            inputs: vec![t(vec![m, 64]), t(vec![64, n])],
            outputs: vec![t(vec![m, n])],
            attrs: BTreeMap::new(),
            impl_mode: ImplMode::HighPerformance,
            cube_math: Default::default(),
            soc: SocSpec {
                version: "Ascend910B2".into(),
                core_count: 24,
                core_type: "AiCore".into(),
            },
            origin: None,
        }),
        options: BTreeMap::new(),
        strategy,
        performance: Performance {
            baseline_us: 40.0,
            tuned_us: 30.0,
            samples_us: vec![30.0, 30.1, 29.9],
            runner: "sim".into(),
            default_confirmed: false,
            confirmed_budget: None,
        },
        provenance: Provenance {
            tool_version: "0.1.0".into(),
            algorithm: "random".into(),
            trials: 100,
            seed: i,
            unix_time: 1_764_000_000,
            origin: Origin::Tuned,
        },
    };
    let index = IndexKey {
        soc: "Ascend910B2".into(),
        kind: RecordKind::Op,
        op_type: op_type.to_lowercase(),
    };
    (record, index)
}

fn status(field: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .map(|l| l.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "n/a".into())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: bank_scale create|probe|probe-rw <path> <records>";
    let (mode, path, n) = match args.as_slice() {
        [_, mode, path, n] => (mode.as_str(), path.as_str(), n.parse::<u64>()?),
        _ => return Err(usage.into()),
    };
    match mode {
        "create" => {
            let store = RedbStore::open(path)?;
            let start = Instant::now();
            let batch = 20_000;
            for first in (0..n).step_by(batch) {
                let owned: Vec<(BankKey, Vec<u8>, IndexKey)> = (first
                    ..(first + batch as u64).min(n))
                    .map(|i| {
                        let (r, ix) = record(i);
                        (key(i), encode(&key(i), &r), ix)
                    })
                    .collect();
                let entries: Vec<StoreEntry<'_>> = owned
                    .iter()
                    .map(|(k, v, ix)| StoreEntry {
                        key: *k,
                        value: v,
                        index: ix.clone(),
                    })
                    .collect();
                store.put_batch(&entries)?;
            }
            println!(
                "wrote {} records in {:?}; file {} bytes",
                store.len()?,
                start.elapsed(),
                std::fs::metadata(path)?.len()
            );
        }
        "probe" | "probe-rw" => {
            let t0 = Instant::now();
            let store = if mode == "probe" {
                RedbStore::open_read_only(path)?
            } else {
                RedbStore::open(path)?
            };
            let opened = t0.elapsed();
            let k = key(n / 2);
            let mut answer = None;
            store.get_with(&k, &mut |v| answer = Some(decode_answer(&k, v)))?;
            let first = t0.elapsed();
            let answer = answer.ok_or("record missing")??;
            let t1 = Instant::now();
            let mut hits = 0;
            for i in 0..1000 {
                let k = key(i * 7919 % n);
                store.get_with(&k, &mut |v| {
                    if decode_answer(&k, v).is_ok() {
                        hits += 1;
                    }
                })?;
            }
            let thousand = t1.elapsed();
            let t2 = Instant::now();
            let k = key(n / 2);
            for _ in 0..1000 {
                store.get_with(&k, &mut |v| {
                    if decode_answer(&k, v).is_ok() {
                        hits += 1;
                    }
                })?;
            }
            let same = t2.elapsed();
            println!(
                "open {opened:?}; open + first look-up {first:?} (baseM {}); 1000 random \
                 look-ups {thousand:?}; 1000 look-ups of one key {same:?} ({hits} hits); records {}; \
                 VmHWM {}; VmRSS {}",
                answer.strategy["baseM"],
                store.len()?,
                status("VmHWM:"),
                status("VmRSS:"),
            );
        }
        _ => return Err(usage.into()),
    }
    Ok(())
}
