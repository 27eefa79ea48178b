//! SGAT of ResNet-50 at batch 32 on the simulated Ascend910B2 and Ascend310P3: the whole
//! driver (look-ups, spaces, the ensemble's search at 64 candidates per subgraph, decisions,
//! graph-bank writes) into a fresh bank per iteration, and the plan (ONNX import, inference,
//! fusion, partition, keys) alone.
//!
//! Run with `cargo bench --bench sgat`; it also prints, once per SoC, the candidates measured
//! and the share of the time outside the subgraph model (figures in BENCHMARKS.md).

use std::hint::black_box;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use tunebank::bank::Bank;
use tunebank::key::{FsReader, RecordKind, ResolvedOptions};
use tunebank::model::load_onnx;
use tunebank::tune::sgat::{run_sgat, sgat_plan, SgatPlan};
use tunebank::tune::TuneSettings;

const MODEL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/models/resnet50.onnx");

fn plan(soc: &str) -> SgatPlan {
    let options = ResolvedOptions::from_args(
        [
            format!("--soc_version={soc}"),
            "--input_shape=input:32,3,224,224".to_string(),
        ],
        &FsReader,
    )
    .expect("options");
    let model = load_onnx(MODEL).expect("the ResNet-50 fixture loads");
    sgat_plan(&model, &options, &options.soc().expect("soc")).expect("plan")
}

fn tune_once(plan: &SgatPlan, soc: &str) -> tunebank::tune::sgat::SgatSummary {
    let dir = tempfile::tempdir().expect("tempdir");
    let bank = Bank::builder(RecordKind::Graph, soc)
        .custom_path(dir.path().join("graph.redb"))
        .no_default_builtin()
        .open()
        .expect("bank");
    let settings = TuneSettings {
        runner: "sim".parse().unwrap(),
        ..TuneSettings::default()
    };
    run_sgat(
        plan,
        &bank,
        None,
        &settings,
        "resnet50",
        None,
        &AtomicBool::new(false),
        &mut (),
    )
    .expect("sgat")
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("sgat_resnet50_b32");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    for soc in ["Ascend910B2", "Ascend310P3"] {
        let p = plan(soc);
        let s = tune_once(&p, soc);
        let st = s.stats;
        println!(
            "{soc}: {} subgraphs ({} unique), {} candidates, wall {:.3} s, in the model {:.3} s, outside {:.1} %, model {:.3} -> {:.3} ms",
            p.subgraphs.len(),
            p.tasks.len(),
            st.trials,
            st.wall.as_secs_f64(),
            st.measure.as_secs_f64(),
            100.0 * (1.0 - st.measure.as_secs_f64() / st.wall.as_secs_f64().max(1e-9)),
            s.report.baseline_ms,
            s.report.result_ms
        );
        g.bench_function(format!("tune_{soc}"), |b| {
            b.iter(|| black_box(tune_once(&p, soc)))
        });
        g.bench_function(format!("plan_{soc}"), |b| b.iter(|| black_box(plan(soc))));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
