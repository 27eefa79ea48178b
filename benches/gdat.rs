//! GDAT of the ResNet-50 fixture at rank size 64 on the simulated Ascend910B2 (8 devices per
//! server): `plan` (ONNX import, fusion, the backward timeline on the simulator, the gradient
//! key), `optimum` (the exact dynamic program over ≤ 8 segments, 161 gradients), and `search`
//! (the ensemble strategy over the optimum's neighbourhood through the `Measure` trait, 64
//! candidates, seeded from the optimum and HCCL's default). Run with `cargo bench --bench gdat`;
//! figures in BENCHMARKS.md.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use tunebank::key::{FsReader, ResolvedOptions};
use tunebank::model::load_onnx;
use tunebank::tune::gdat::{plan_job, search, Cluster, GdatPlan};

const MODEL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/models/resnet50.onnx");

fn plan() -> GdatPlan {
    let options =
        ResolvedOptions::from_args(["--soc_version=Ascend910B2"], &FsReader).expect("options");
    let soc = options.soc().expect("soc");
    let model = load_onnx(MODEL).expect("the ResNet-50 fixture loads");
    let cluster = Cluster::for_soc(&soc.version, 64, 8).expect("cluster");
    plan_job(&model, &options, &soc, cluster, 8, None).expect("plan")
}

fn gdat(c: &mut Criterion) {
    let mut g = c.benchmark_group("gdat_resnet50_rank64");
    g.sample_size(20);
    g.bench_function("plan", |b| b.iter(|| black_box(plan())));
    let p = plan();
    g.bench_function("optimum", |b| b.iter(|| black_box(p.optimum())));
    let n = p.timeline.gradients.len();
    let task = search::task(&p.descriptor.soc, &p.timeline.bytes(), 64, 8);
    let seeds = [p.optimum(), p.default_split()];
    g.bench_function("search", |b| {
        b.iter(|| {
            let mut runner = p.model_runner();
            black_box(
                search::search(&mut runner, &task, &seeds, n, 8, "ensemble", 1, (64, false))
                    .expect("search"),
            )
        })
    });
    g.finish();
}

criterion_group!(benches, gdat);
criterion_main!(benches);
