//! CPU runner GEMM at 1024×1024×1024 fp32: the default strategy, the best strategy found by
//! search (`benches/cpu_gemm_best.json`, written by
//! `cargo run --release --example cpu_gemm_search`), and the `matrixmultiply` crate's sgemm, in
//! one criterion run. Run with `cargo bench --bench cpu_gemm`. When the recorded best cannot run
//! on this host, a small search (24 strategies) runs first.

use std::hint::black_box;
use std::time::Duration;
use tunebank::key::StrategyMap;

use criterion::{criterion_group, criterion_main, Criterion};
use tunebank::measure::cpu::gemm::{sgemm, GemmTiling};
use tunebank::measure::cpu::{gemm_tiling_of, CpuRunner};
use tunebank::measure::{Measure, RunnerObjective, TimingSettings, TuningTask};

const N: usize = 1024;

fn task() -> TuningTask {
    serde_json::from_value(serde_json::json!({
        "op_type": "MatMul",
        "inputs": [
            {"shape": [N, N], "ori_shape": [N, N], "dtype": "float32", "format": "ND", "ori_format": "ND"},
            {"shape": [N, N], "ori_shape": [N, N], "dtype": "float32", "format": "ND", "ori_format": "ND"}
        ],
        "outputs": [{"shape": [N, N], "ori_shape": [N, N], "dtype": "float32", "format": "ND", "ori_format": "ND"}],
        "impl_mode": "high_performance",
        "soc": {"version": "Ascend910B2", "core_count": 24, "core_type": "AiCore"}
    }))
    .expect("valid task")
}

fn best_tiling() -> GemmTiling {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/cpu_gemm_best.json");
    let task = task();
    let mut cpu = CpuRunner::new().with_timing(TimingSettings {
        warmup: 1,
        repeats: 3,
        timeout_ms: 10_000,
    });
    let space = cpu.space(&task).expect("space");
    if let Ok(text) = std::fs::read_to_string(path) {
        if let Ok(s) = serde_json::from_str::<StrategyMap>(&text) {
            if space.config_of(&s).is_some() {
                eprintln!("best strategy (recorded): {text}");
                return gemm_tiling_of(&s).expect("valid");
            }
        }
    }
    let mut strategy = search_strategies::strategies::by_name("ensemble", 1).expect("known");
    let mut obj = RunnerObjective::new(&mut cpu, &task);
    let out = search_strategies::Driver::new(24).run(&space.space, strategy.as_mut(), &mut obj);
    let s = space.strategy(out.history.best().expect("measured").id);
    eprintln!(
        "best strategy (searched now): {}",
        serde_json::to_string(&s).unwrap()
    );
    gemm_tiling_of(&s).expect("valid")
}

fn bench(c: &mut Criterion) {
    let a: Vec<f32> = (0..N * N)
        .map(|i| ((i * 7 % 11) as f32 - 5.0) / 5.0)
        .collect();
    let b: Vec<f32> = (0..N * N)
        .map(|i| ((i * 5 % 13) as f32 - 6.0) / 6.0)
        .collect();
    let mut out = vec![0f32; N * N];
    let default = CpuRunner::default_gemm();
    let best = best_tiling();
    let mut g = c.benchmark_group("gemm_1024_f32");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    g.bench_function("default", |bch| {
        bch.iter(|| {
            sgemm(
                &default,
                N,
                N,
                N,
                black_box(&a),
                N,
                black_box(&b),
                N,
                &mut out,
                N,
            )
        })
    });
    g.bench_function("best_found", |bch| {
        bch.iter(|| {
            sgemm(
                &best,
                N,
                N,
                N,
                black_box(&a),
                N,
                black_box(&b),
                N,
                &mut out,
                N,
            )
        })
    });
    let single = GemmTiling { threads: 1, ..best };
    g.bench_function("best_found_1_thread", |bch| {
        bch.iter(|| {
            sgemm(
                &single,
                N,
                N,
                N,
                black_box(&a),
                N,
                black_box(&b),
                N,
                &mut out,
                N,
            )
        })
    });
    g.bench_function("matrixmultiply_sgemm", |bch| {
        bch.iter(|| unsafe {
            matrixmultiply::sgemm(
                N,
                N,
                N,
                1.0,
                a.as_ptr(),
                N as isize,
                1,
                b.as_ptr(),
                N as isize,
                1,
                0.0,
                out.as_mut_ptr(),
                N as isize,
                1,
            )
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
