//! The PostgreSQL team bank against redb, measured in one run on the same 10,000 op records: a
//! single look-up (hit), and a batch of 200 look-ups in one round trip against 200 single
//! look-ups. The bench starts its own PostgreSQL cluster on localhost (`scripts/pg-cluster.sh`)
//! and stops it at the end; without PostgreSQL server binaries it says so and measures nothing.
//! Run with `cargo bench --bench pg_bank`; `TUNEBANK_BENCH_PG_RECORDS` sets the bank size.

mod common;

use std::hint::black_box;
use std::path::Path;
use std::process::Command;

use criterion::{criterion_group, criterion_main, Criterion};
use tunebank::bank::Bank;
use tunebank::key::{BankKey, RecordKind};

fn script(args: &[&str]) -> Option<String> {
    let out = Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/pg-cluster.sh"))
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!(
            "pg-cluster.sh {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// A cluster of the bench's own, stopped on drop.
struct Cluster(tempfile::TempDir);

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = script(&["stop", self.0.path().to_str().unwrap()]);
    }
}

fn open(custom: &str) -> Bank {
    Bank::builder(RecordKind::Op, common::SOC)
        .custom_path(custom)
        .no_default_builtin()
        .open()
        .expect("open bench bank")
}

fn fill(bank: &Bank, n: u64) -> Vec<BankKey> {
    let mut keys = Vec::new();
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let records: Vec<_> = chunk.iter().map(|&i| common::record(i)).collect();
        keys.extend(bank.write_batch(&records).expect("fill"));
    }
    keys
}

fn lookups(c: &mut Criterion) {
    let n: u64 = std::env::var("TUNEBANK_BENCH_PG_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let dir = tempfile::Builder::new()
        .prefix("tunebank-pg-bench")
        .tempdir()
        .unwrap();
    let Some(admin) = script(&["start", dir.path().to_str().unwrap()]) else {
        eprintln!("pg_bank bench: no PostgreSQL server could start; nothing measured");
        return;
    };
    let _cluster = Cluster(dir);
    let url = script(&["createdb", &admin, "bench"]).expect("createdb");
    let mut client = tunebank::pg::connect(&url).expect("connect");
    tunebank::pg::schema::init(
        &mut client,
        &url,
        &tunebank::pg::schema::components(),
        false,
    )
    .expect("init");
    drop(client);
    let redb_dir = tempfile::tempdir().unwrap();
    let redb_path = redb_dir.path().join("op.redb");
    let redb = open(redb_path.to_str().unwrap());
    let pg = open(&url);
    let keys = fill(&redb, n);
    assert_eq!(fill(&pg, n), keys);
    let batch: Vec<BankKey> = keys
        .iter()
        .step_by(keys.len() / 200)
        .take(200)
        .copied()
        .collect();
    assert_eq!(batch.len(), 200);

    let mut g = c.benchmark_group("pg_bank");
    for (name, bank) in [("redb", &redb), ("postgres", &pg)] {
        let mut i = 0;
        g.bench_function(format!("{name}/single_lookup"), |b| {
            b.iter(|| {
                i = (i + 7919) % keys.len();
                black_box(bank.lookup(&keys[i]).unwrap())
            })
        });
        g.bench_function(format!("{name}/batch_200_one_call"), |b| {
            b.iter(|| black_box(bank.lookup_batch(&batch).unwrap()))
        });
        g.bench_function(format!("{name}/200_single_lookups"), |b| {
            b.iter(|| {
                for k in &batch {
                    black_box(bank.lookup(k).unwrap());
                }
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(3));
    targets = lookups
}
criterion_main!(benches);
