//! Throughput of the distributed tuning queue: one job of simulated tasks (the ResNet-50
//! fixture's 30 keys on the simulated Ascend910B2, 16 candidates per op, strategy random)
//! drained by 1, 2 and 4 `tunebank worker` processes on a PostgreSQL cluster this bench starts
//! itself (`scripts/pg-cluster.sh`, stopped at the end).
//!
//! Per iteration: a fresh bank and a fresh submission (not timed), then the workers are started
//! and the time until the last one exits with the queue drained is measured (each worker exits
//! as soon as it finds nothing to claim, `--idle-exit 0.001`). Process start-up and
//! the bank open are part of it, as they are for a real worker fleet's first job.
//!
//! Run with `cargo bench --bench queue`; the figures, as ratios against one worker, are in
//! BENCHMARKS.md. Without PostgreSQL server binaries the bench says so and measures nothing.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use tunebank::bank::Bank;
use tunebank::key::{FsReader, RecordKind, ResolvedOptions};
use tunebank::model::load_onnx;
use tunebank::queue::{self, Submission};
use tunebank::tune::{self, TunePlan, TuneSettings};

const MODEL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/models/resnet50.onnx");
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/pg-cluster.sh");
const BIN: &str = env!("CARGO_BIN_EXE_tunebank");

/// A cluster of the bench's own, stopped on drop.
struct Cluster {
    dir: tempfile::TempDir,
    url: String,
}

impl Cluster {
    fn start() -> Option<Cluster> {
        let dir = tempfile::tempdir().ok()?;
        let out = Command::new("bash")
            .args([SCRIPT, "start", dir.path().to_str()?])
            .output()
            .ok()?;
        if !out.status.success() {
            eprintln!(
                "queue bench skipped: no PostgreSQL cluster: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            return None;
        }
        let url = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        Some(Cluster { dir, url })
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .args([SCRIPT, "stop", self.dir.path().to_str().unwrap_or("")])
            .output();
    }
}

fn plan_and_settings() -> (TunePlan, TuneSettings) {
    let options =
        ResolvedOptions::from_args(["--soc_version=Ascend910B2"], &FsReader).expect("options");
    let model = load_onnx(MODEL).expect("the ResNet-50 fixture loads");
    let soc = options.soc().expect("soc");
    let plan = tune::plan(&model, &options, &soc, None::<&BTreeSet<String>>).expect("plan");
    let settings = TuneSettings {
        strategy: "random".into(),
        trials_per_op: 16,
        options_given: options.given().clone(),
        ..TuneSettings::default()
    };
    (plan, settings)
}

/// A fresh bank at `bank` and the job submitted against it; the tasks queued.
fn submit(url: &str, bank: &Path, plan: &TunePlan, settings: &TuneSettings) -> usize {
    let b = Bank::builder(RecordKind::Op, "Ascend910B2")
        .custom_path(bank)
        .no_default_builtin()
        .read_only(false)
        .open()
        .expect("bench bank");
    let mut client = queue::connect(url).expect("queue");
    queue::migrate(&mut client, url).expect("migrate");
    let spec = Submission {
        tuning_name: "resnet50",
        model: MODEL,
        plan,
        settings,
    };
    queue::enqueue(&mut client, &b, &spec)
        .expect("enqueue")
        .queued
}

/// `workers` worker processes draining the queue; the wall time until the last exits.
fn drain(url: &str, bank: &Path, workers: usize) -> Duration {
    let start = Instant::now();
    let children: Vec<_> = (0..workers)
        .map(|i| {
            Command::new(BIN)
                .args([
                    "worker",
                    "--queue",
                    url,
                    "--soc_version=Ascend910B2",
                    "--runner",
                    "sim",
                ])
                .args([
                    "--bank",
                    bank.to_str().expect("utf-8"),
                    "--idle-exit",
                    "0.001",
                ])
                .args(["--worker-id", &format!("bench{i}")])
                .env("HOME", bank.parent().expect("dir"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn a worker")
        })
        .collect();
    for mut c in children {
        assert!(c.wait().expect("worker").success(), "a worker failed");
    }
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let (plan, settings) = plan_and_settings();
    let dir = tempfile::tempdir().expect("temp dir");
    let mut group = c.benchmark_group("queue_workers");
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(1));
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Elements(plan.tasks.len() as u64));
    let mut n = 0;
    for workers in [1usize, 2, 4] {
        group.bench_with_input(BenchmarkId::from_parameter(workers), &workers, |b, &w| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    n += 1;
                    let bank = dir.path().join(format!("bank{n}/op.redb"));
                    std::fs::create_dir_all(bank.parent().expect("dir")).expect("bank dir");
                    let queued = submit(&cluster.url, &bank, &plan, &settings);
                    assert_eq!(queued, plan.tasks.len(), "a fresh bank misses every key");
                    total += drain(&cluster.url, &bank, w);
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
