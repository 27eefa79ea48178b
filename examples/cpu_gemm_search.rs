//! Searches the CPU runner's GEMM space for 1024×1024×1024 fp32 and compares the default, the
//! best found and the `matrixmultiply` crate's sgemm, timed the same way (median of repeats).
//! Writes the best strategy to `benches/cpu_gemm_best.json`, which `benches/cpu_gemm.rs` reads.
//!
//! `cargo run --release --example cpu_gemm_search -- [BUDGET] [STRATEGY]` (defaults 40,
//! ensemble, seed 1).

use std::collections::BTreeMap;
use std::time::Instant;

use search_strategies::stats::median;
use search_strategies::strategies::by_name;
use search_strategies::Driver;
use tunebank::key::{CubeMath, DType, Format, ImplMode, OpDescriptor, SocSpec, TensorDesc};
use tunebank::measure::cpu::CpuRunner;
use tunebank::measure::{Measure, RunnerObjective, TimingSettings, TuningTask};

fn task(m: i64, k: i64, n: i64) -> TuningTask {
    let t = |s: &[i64]| TensorDesc {
        shape: s.to_vec(),
        ori_shape: s.to_vec(),
        dtype: DType::Float32,
        format: Format::ND,
        ori_format: Format::ND,
    };
    TuningTask::new(OpDescriptor {
        op_type: "MatMul".into(),
        fused_ops: vec![],
        inputs: vec![t(&[m, k]), t(&[k, n])],
        outputs: vec![t(&[m, n])],
        attrs: BTreeMap::new(),
        impl_mode: ImplMode::HighPerformance,
        cube_math: CubeMath::Native,
        soc: SocSpec::from_version("Ascend910B2").expect("known"),
        origin: None,
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let budget: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(40);
    let strategy = args.get(2).cloned().unwrap_or_else(|| "ensemble".into());
    let task = task(1024, 1024, 1024);
    let mut cpu = CpuRunner::new().with_timing(TimingSettings {
        warmup: 1,
        repeats: 3,
        timeout_ms: 5_000,
    });
    let space = cpu.space(&task)?;
    let default = cpu.default_strategy(&task)?;
    let start = Instant::now();
    let mut strat = by_name(&strategy, 1).ok_or("unknown strategy")?;
    let (best_id, searched) = {
        let mut obj = RunnerObjective::new(&mut cpu, &task);
        let out = Driver::new(budget).run(&space.space, strat.as_mut(), &mut obj);
        let best = out.history.best().ok_or("nothing measured")?;
        (best.id, out.history.len())
    };
    let best = space.strategy(best_id);
    eprintln!(
        "searched {searched} of {} strategies in {:.1} s",
        space.len(),
        start.elapsed().as_secs_f64()
    );
    // Side by side: rounds interleave default, best and matrixmultiply, so that the load of a
    // shared machine hits all three alike.
    let mut cpu = cpu.with_timing(TimingSettings {
        warmup: 1,
        repeats: 1,
        timeout_ms: 10_000,
    });
    let rounds = 15;
    let (mut ds, mut bs, mut ms) = (Vec::new(), Vec::new(), Vec::new());
    let mut mm = MatrixMultiply::new(1024);
    for _ in 0..rounds {
        let outs = cpu.measure(&task, &[default.clone(), best.clone()])?;
        ds.push(outs[0].median_us().ok_or("default failed")?);
        bs.push(outs[1].median_us().ok_or("best failed")?);
        ms.push(mm.time_us());
    }
    let (d, b, mm) = (
        median(&ds).unwrap(),
        median(&bs).unwrap(),
        median(&ms).unwrap(),
    );
    println!("default: {d:.0} µs  {}", serde_json::to_string(&default)?);
    println!("best:    {b:.0} µs  {}", serde_json::to_string(&best)?);
    println!("matrixmultiply sgemm: {mm:.0} µs");
    println!(
        "best vs default: {:.2}x; best vs matrixmultiply: {:.2}x",
        d / b,
        mm / b
    );
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/cpu_gemm_best.json");
    std::fs::write(path, serde_json::to_string_pretty(&best)? + "\n")?;
    Ok(())
}

/// `matrixmultiply::sgemm` on n × n inputs, timed one call at a time.
struct MatrixMultiply {
    n: usize,
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
}

impl MatrixMultiply {
    fn new(n: usize) -> Self {
        MatrixMultiply {
            n,
            a: vec![0.5; n * n],
            b: vec![0.25; n * n],
            c: vec![0.0; n * n],
        }
    }

    fn time_us(&mut self) -> f64 {
        let n = self.n;
        let mut run = || unsafe {
            matrixmultiply::sgemm(
                n,
                n,
                n,
                1.0,
                self.a.as_ptr(),
                n as isize,
                1,
                self.b.as_ptr(),
                n as isize,
                1,
                0.0,
                self.c.as_mut_ptr(),
                n as isize,
                1,
            )
        };
        run();
        let t = Instant::now();
        run();
        t.elapsed().as_secs_f64() * 1e6
    }
}
