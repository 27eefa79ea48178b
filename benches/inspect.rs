//! `why` on a 200-op model against a bank of 1,000,000 op records (issue "bank-inspect": under
//! 1 s). The model: 150 MatMul / BatchMatMul ops stored in the bank (hits), 25 fp32 Add ops that
//! `force_fp16` turns into fp16 while the bank holds them in fp32 (misses whose nearest entries
//! the `precision_mode` probes find by point look-ups), and 25 MatMuls whose shapes are not in the bank (misses
//! answered by the index-group search, read up to the default candidate limit).
//!
//! Run with `cargo bench --bench inspect`; the bank is built once under `target/bench-banks/`
//! (shared with the `bank` bench). Set `TUNEBANK_BENCH_RECORDS` to use another size.

mod common;

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use tunebank::bank::Bank;
use tunebank::inspect::{why_templates, WhyConfig};
use tunebank::key::{
    DType, FsReader, OpDescriptor, OpTemplate, RecordKind, ResolvedOptions, TemplateTensor,
};

fn records() -> u64 {
    std::env::var("TUNEBANK_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

/// The template a model import would give for a stored bench op, with its dtypes as the model has
/// them (`model_dtype`).
fn template(i: u64, d: &OpDescriptor, model_dtype: DType) -> OpTemplate {
    let t = |shape: &[i64]| TemplateTensor {
        shape: shape.to_vec(),
        dtype: model_dtype,
        ori_format: None,
        format: None,
        graph_input: None,
        producer_dtype: None,
    };
    OpTemplate {
        node_name: format!("op{i}"),
        op_type: d.op_type.clone(),
        fused_ops: Vec::new(),
        inputs: d.inputs.iter().map(|x| t(&x.shape)).collect(),
        outputs: d.outputs.iter().map(|x| t(&x.shape)).collect(),
        attrs: d.attrs.clone(),
    }
}

fn model(n: u64) -> Vec<OpTemplate> {
    let mut ops = Vec::new();
    let step = (n / 400).max(1);
    let mut i = 0;
    while ops.len() < 150 {
        if i % 3 != 2 {
            ops.push(template(i, &common::op(i), DType::Float16));
        }
        i += step;
    }
    let mut i = 2;
    while ops.len() < 175 {
        // Stored as fp32 Adds; force_fp16 makes them fp16.
        ops.push(template(i, &common::op(i), DType::Float32));
        i += 3 * step;
    }
    for j in 0..25 {
        let mut d = common::op(3 * j);
        // m = 16 (j + 1) + 1: not a multiple of 16, so no stored entry has it.
        let m = 16 * (j as i64 + 1) + 1;
        d.inputs[0].shape[0] = m;
        d.outputs[0].shape[0] = m;
        ops.push(template(10_000 + j, &d, DType::Float16));
    }
    ops
}

fn why(c: &mut Criterion) {
    let n = records();
    let path = common::ensure_bank(n);
    let bank = Bank::builder(RecordKind::Op, common::SOC)
        .custom_path(&path)
        .no_default_builtin()
        .read_only(true)
        .open()
        .expect("open bench bank");
    let options =
        ResolvedOptions::from_args([format!("--soc_version={}", common::SOC)], &FsReader).unwrap();
    let model = model(n);
    let config = WhyConfig::default();
    let report = why_templates(&bank, &model, &options, &config, &|_| true).unwrap();
    eprintln!("bench model against {n} records: {}", report.summary);
    assert_eq!(report.summary.ops, 200);
    assert_eq!(report.summary.hits, 150);

    if std::env::var_os("TUNEBANK_BENCH_PROFILE").is_some() {
        for limit in [0, 2_000, 20_000] {
            let cfg = WhyConfig {
                candidate_limit: limit,
                ..WhyConfig::default()
            };
            let t = std::time::Instant::now();
            why_templates(&bank, &model, &options, &cfg, &|_| true).unwrap();
            eprintln!("limit {limit}: {:?}", t.elapsed());
        }
        let store = bank.layer_store(tunebank::bank::LayerId::Custom).unwrap();
        let keys: Vec<_> = (0..20_000u64)
            .map(|i| common::op(i).key().unwrap())
            .collect();
        let t = std::time::Instant::now();
        for k in &keys {
            store.get_with(k, &mut |_| {}).unwrap();
        }
        eprintln!("20k gets: {:?}", t.elapsed());
        let mut vals = Vec::new();
        for k in &keys[..2000] {
            store.get_with(k, &mut |v| vals.push(v.to_vec())).unwrap();
        }
        let t = std::time::Instant::now();
        for (k, v) in keys.iter().zip(&vals) {
            black_box(tunebank::bank::decode(k, v).unwrap());
        }
        eprintln!("2k decodes: {:?}", t.elapsed());
    }
    let mut g = c.benchmark_group(format!("inspect_{n}"));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    g.bench_function("why_200_ops", |b| {
        b.iter(|| black_box(why_templates(&bank, &model, &options, &config, &|_| true).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, why);
criterion_main!(benches);
