//! Bank look-up benchmarks on a bank of 1,000,000 op records (DESIGN.md §5, issue "Bank core").
//!
//! Baselines measured in the same run: a raw redb get of the same key (for the hit look-up), the
//! key derivation alone, and for the batch look-up two hundred single look-ups of the same
//! model's ops. Run with `cargo bench --bench bank`; the bank is built once under
//! `target/bench-banks/` (a few minutes) and reused. Set `TUNEBANK_BENCH_RECORDS` to use another
//! size.

mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use rand::{Rng, SeedableRng};
use redb::{ConcurrencyMode, ReadableDatabase, TableDefinition};
use tunebank::bank::{Bank, Found};
use tunebank::key::RecordKind;

const RECORDS: TableDefinition<&[u8; 32], &[u8]> = TableDefinition::new("records");

fn records() -> u64 {
    std::env::var("TUNEBANK_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

fn open_bank(path: &std::path::Path) -> Bank {
    Bank::builder(RecordKind::Op, common::SOC)
        .custom_path(path)
        .no_default_builtin()
        .read_only(true)
        .open()
        .expect("open bench bank")
}

fn lookups(c: &mut Criterion) {
    let n = records();
    let path = common::ensure_bank(n);
    let bank = open_bank(&path);
    let raw = redb::Builder::new()
        .set_concurrency_mode(ConcurrencyMode::MultiWriter)
        .set_cache_size(tunebank::bank::store::DEFAULT_CACHE_BYTES)
        .open_read_only(&path)
        .expect("raw redb open");

    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let picks: Vec<u64> = (0..4096).map(|_| rng.gen_range(0..n)).collect();
    let ops: Vec<_> = picks.iter().map(|&i| common::op(i)).collect();
    let keys: Vec<_> = ops.iter().map(|o| o.key().unwrap()).collect();
    let absent: Vec<_> = (0..4096).map(|i| common::op(n + i)).collect();

    let mut g = c.benchmark_group(format!("bank_{n}"));
    let mut i = 0usize;
    g.bench_function("key_derivation", |b| {
        b.iter(|| {
            i = (i + 1) % ops.len();
            black_box(ops[i].key().unwrap())
        })
    });
    g.bench_function("raw_redb_get", |b| {
        b.iter(|| {
            i = (i + 1) % keys.len();
            let txn = raw.begin_read().unwrap();
            let table = txn.open_table(RECORDS).unwrap();
            let v = table.get(&keys[i].0).unwrap().unwrap();
            black_box(v.value().len())
        })
    });
    let store = bank
        .layer_store(tunebank::bank::LayerId::Custom)
        .expect("custom layer");
    g.bench_function("store_get_with", |b| {
        b.iter(|| {
            i = (i + 1) % keys.len();
            let mut len = 0;
            store.get_with(&keys[i], &mut |v| len = v.len()).unwrap();
            black_box(len)
        })
    });
    g.bench_function("hit_lookup_derive_get_verify_decode", |b| {
        b.iter(|| {
            i = (i + 1) % ops.len();
            let key = ops[i].key().unwrap();
            let hit = bank.lookup(&key).unwrap();
            black_box(hit.hit().expect("hit").answer.strategy.len())
        })
    });
    g.bench_function("hit_lookup_in_place_derive_get_verify", |b| {
        b.iter(|| {
            i = (i + 1) % ops.len();
            let key = ops[i].key().unwrap();
            let found = bank
                .lookup_with(&key, |_| true, |hit| hit.answer.strategy.len())
                .unwrap();
            let tunebank::bank::Found::Hit(len) = found else {
                panic!("hit expected")
            };
            black_box(len)
        })
    });
    let mut json = Vec::with_capacity(256);
    g.bench_function("hit_lookup_in_place_as_json", |b| {
        b.iter(|| {
            i = (i + 1) % ops.len();
            let key = ops[i].key().unwrap();
            let found = bank
                .lookup_with(
                    &key,
                    |_| true,
                    |hit| {
                        json.clear();
                        hit.answer.strategy.write_json(&mut json);
                        json.len()
                    },
                )
                .unwrap();
            black_box(found)
        })
    });
    let values: Vec<Vec<u8>> = keys
        .iter()
        .map(|k| {
            let mut v = Vec::new();
            store.get_with(k, &mut |b| v = b.to_vec()).unwrap();
            v
        })
        .collect();
    g.bench_function("answer_verify_decode_in_memory", |b| {
        b.iter(|| {
            i = (i + 1) % keys.len();
            let a = tunebank::bank::decode_answer(&keys[i], &values[i]).unwrap();
            black_box(a.strategy.len())
        })
    });
    g.bench_function("answer_verify_in_place_in_memory", |b| {
        b.iter(|| {
            i = (i + 1) % keys.len();
            let a = tunebank::bank::decode_answer_ref(&keys[i], &values[i]).unwrap();
            black_box(a.strategy.len())
        })
    });
    g.bench_function("miss_lookup_derive_get", |b| {
        b.iter(|| {
            i = (i + 1) % absent.len();
            let key = absent[i].key().unwrap();
            black_box(bank.lookup(&key).unwrap().hit().is_none())
        })
    });
    g.bench_function("open_and_first_lookup", |b| {
        b.iter_batched(
            || (),
            |()| {
                i = (i + 1) % ops.len();
                let bank = open_bank(&path);
                let key = ops[i].key().unwrap();
                black_box(bank.lookup(&key).unwrap().hit().is_some())
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
    batch(c, n, &bank, &ops);
    report_probe(&path, &ops[0]);
}

/// A converter's look-up of a 200-op model: derive the 200 keys, then look them up one by one
/// (the baseline) or in one batch (one read transaction per layer, keys sorted). Successive
/// iterations take successive 200-op windows of the random picks.
fn batch(c: &mut Criterion, n: u64, bank: &Bank, ops: &[tunebank::key::OpDescriptor]) {
    const MODEL: usize = 200;
    let models: Vec<&[tunebank::key::OpDescriptor]> = ops.chunks_exact(MODEL).collect();
    let mut g = c.benchmark_group(format!("bank_{n}_model_{MODEL}_ops"));
    let mut m = 0usize;
    g.bench_function("singles", |b| {
        b.iter(|| {
            m = (m + 1) % models.len();
            let mut hits = 0;
            for op in models[m] {
                let key = op.key().unwrap();
                hits += usize::from(bank.lookup(&key).unwrap().hit().is_some());
            }
            assert_eq!(hits, MODEL);
            black_box(hits)
        })
    });
    g.bench_function("batch", |b| {
        b.iter(|| {
            m = (m + 1) % models.len();
            let keys: Vec<_> = models[m].iter().map(|op| op.key().unwrap()).collect();
            let answers = bank.lookup_batch(&keys).unwrap();
            let hits = answers.iter().filter(|a| a.hit().is_some()).count();
            assert_eq!(hits, MODEL);
            black_box(hits)
        })
    });
    // What the C API's batch does: hits read in place, each strategy written as JSON.
    let mut json = Vec::with_capacity(MODEL * 128);
    g.bench_function("singles_in_place_as_json", |b| {
        b.iter(|| {
            m = (m + 1) % models.len();
            json.clear();
            let mut hits = 0;
            for op in models[m] {
                let key = op.key().unwrap();
                let found = bank
                    .lookup_with(&key, |_| true, |h| h.answer.strategy.write_json(&mut json))
                    .unwrap();
                hits += usize::from(matches!(found, Found::Hit(())));
            }
            assert_eq!(hits, MODEL);
            black_box(json.len())
        })
    });
    g.bench_function("batch_in_place_as_json", |b| {
        b.iter(|| {
            m = (m + 1) % models.len();
            json.clear();
            let keys: Vec<_> = models[m].iter().map(|op| op.key().unwrap()).collect();
            let answers = bank
                .lookup_many_with(
                    &keys,
                    |_| true,
                    |_, h| h.answer.strategy.write_json(&mut json),
                )
                .unwrap();
            let hits = answers
                .iter()
                .filter(|a| matches!(a, Ok(Found::Hit(()))))
                .count();
            assert_eq!(hits, MODEL);
            black_box(json.len())
        })
    });
    g.finish();
}

/// Opens the bank in a fresh process (the `open_probe` example) and prints its open time, first
/// look-up time and resident memory: the figures a converter process sees.
fn report_probe(path: &std::path::Path, op: &tunebank::key::OpDescriptor) {
    let exe = std::env::current_exe().expect("bench exe");
    let probe = exe
        .parent()
        .and_then(|d| d.parent())
        .map(|d| d.join("examples/open_probe"));
    let Some(probe) = probe.filter(|p| p.exists()) else {
        eprintln!("open_probe example not built; run `cargo build --release --examples` first");
        return;
    };
    let key = op.key().unwrap().to_string();
    let t = Instant::now();
    let out = std::process::Command::new(&probe)
        .arg(path)
        .arg(&key)
        .output()
        .expect("run open_probe");
    let _: Duration = t.elapsed();
    println!(
        "open_probe (fresh process): {}",
        String::from_utf8_lossy(&out.stdout).trim()
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_secs(1));
    targets = lookups
}
criterion_main!(benches);
