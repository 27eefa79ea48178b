//! The bank-warm rerun of the README main job (issue "OPAT end to end": under 1 s), measured
//! in one process against its unavoidable part.
//!
//! Setup tunes the ResNet-50 fixture once on the simulated Ascend910B2 (16 candidates per op) so
//! that every one of its 30 keys is in the bank: a winner, or a default the search confirmed.
//! Then, per iteration:
//!
//! - `lookups_only` (the baseline): one `Bank::lookup` per key, what any rerun must do;
//! - `rerun`: `tune::opat::run` over the same plan, every task a reused hit, no result file;
//! - `rerun_with_result_file`: the same, also writing the AOE result file (atomic replace with
//!   fsync, twice: at the start and at the end);
//! - `import_plan_rerun`: ONNX import, inference, fusion, key derivation and the rerun: all of
//!   `tunebank tune` on a warm bank except process start-up and opening the bank.
//!
//! Run with `cargo bench --bench tune`; the ratios against `lookups_only` are in BENCHMARKS.md.

use std::collections::BTreeSet;
use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, SystemTime};

use criterion::{criterion_group, criterion_main, Criterion};
use tunebank::bank::Bank;
use tunebank::key::{FsReader, RecordKind, ResolvedOptions};
use tunebank::model::load_onnx;
use tunebank::tune::report::ResultFile;
use tunebank::tune::{self, TunePlan, TuneSettings};

const MODEL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/models/resnet50.onnx");

fn options() -> ResolvedOptions {
    ResolvedOptions::from_args(["--soc_version=Ascend910B2"], &FsReader).expect("options")
}

fn import_and_plan(options: &ResolvedOptions) -> TunePlan {
    let model = load_onnx(MODEL).expect("the ResNet-50 fixture loads");
    let soc = options.soc().expect("soc");
    tune::plan(&model, options, &soc, None::<&BTreeSet<String>>).expect("plan")
}

fn open(path: &Path) -> Bank {
    Bank::builder(RecordKind::Op, "Ascend910B2")
        .custom_path(path)
        .no_default_builtin()
        .open()
        .expect("open the bench bank")
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let options = options();
    let plan = import_and_plan(&options);
    let bank = open(&dir.path().join("op.redb"));
    let settings = TuneSettings {
        trials_per_op: 16,
        workers: 2,
        options_given: options.given().clone(),
        ..TuneSettings::default()
    };
    let cancel = AtomicBool::new(false);
    let cold = tune::opat::run(&plan, &bank, &settings, "resnet50", None, &cancel, &mut ())
        .expect("the cold run");
    let warm = tune::opat::run(&plan, &bank, &settings, "resnet50", None, &cancel, &mut ())
        .expect("a warm run");
    let s = warm.report.summary;
    assert_eq!(
        (s.total, s.hit, warm.stats.trials),
        (30, 30, 0),
        "every key is a hit after the cold run ({:?})",
        cold.report.summary
    );
    let keys: Vec<_> = plan.tasks.iter().map(|t| t.key).collect();

    let mut g = c.benchmark_group("warm_rerun_resnet50");
    g.measurement_time(Duration::from_secs(4));
    g.bench_function("lookups_only", |b| {
        b.iter(|| {
            for k in &keys {
                black_box(bank.lookup(k).expect("lookup"));
            }
        })
    });
    g.bench_function("rerun", |b| {
        b.iter(|| {
            black_box(
                tune::opat::run(&plan, &bank, &settings, "resnet50", None, &cancel, &mut ())
                    .expect("rerun"),
            )
        })
    });
    let out = dir.path().join("work");
    std::fs::create_dir_all(&out).expect("work dir");
    g.bench_function("rerun_with_result_file", |b| {
        b.iter(|| {
            let file = ResultFile::opat(&out, SystemTime::now(), std::process::id());
            black_box(
                tune::opat::run(
                    &plan,
                    &bank,
                    &settings,
                    "resnet50",
                    Some(&file),
                    &cancel,
                    &mut (),
                )
                .expect("rerun"),
            )
        })
    });
    g.bench_function("import_plan_rerun", |b| {
        b.iter(|| {
            let plan = import_and_plan(&options);
            black_box(
                tune::opat::run(&plan, &bank, &settings, "resnet50", None, &cancel, &mut ())
                    .expect("rerun"),
            )
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
