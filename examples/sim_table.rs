//! Default vs best-found simulated times for the ResNet-50 and BERT-base op shapes in
//! `fixtures/ops/`, on Ascend910B2 and Ascend310P3. Writes a markdown table to stdout.
//!
//! `cargo run --release --example sim_table -- [BUDGET] [STRATEGY]` (defaults: 400, ensemble).
//! Each op's space is searched with the named search-strategies strategy (seed 1) under the
//! budget; spaces no larger than the budget are measured exhaustively.

use std::time::Instant;

use search_strategies::strategies::by_name;
use search_strategies::Driver;
use tunebank::key::{OpDescriptor, SocSpec};
use tunebank::measure::sim::SimRunner;
use tunebank::measure::{Measure, RunnerObjective, TuningTask};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let budget: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(400);
    let strategy = args.get(2).cloned().unwrap_or_else(|| "ensemble".into());
    let root = env!("CARGO_MANIFEST_DIR");
    let start = Instant::now();
    println!("| model | op | shape | SoC | space | default µs | best µs | speed-up |");
    println!("|---|---|---|---|---:|---:|---:|---:|");
    let mut sums: Vec<(String, String, f64, f64)> = Vec::new();
    for (model, file) in [
        ("ResNet-50", "resnet50_ops.json"),
        ("BERT-base", "bert_base_ops.json"),
    ] {
        let text = std::fs::read_to_string(format!("{root}/fixtures/ops/{file}"))?;
        let ops: Vec<OpDescriptor> = serde_json::from_str(&text)?;
        for soc in ["Ascend910B2", "Ascend310P3"] {
            let (mut d_sum, mut b_sum) = (0.0, 0.0);
            for op in &ops {
                let mut op = op.clone();
                op.soc = SocSpec::from_version(soc)?;
                let task = TuningTask::new(op);
                let mut sim = SimRunner::new().with_timing(tunebank::measure::TimingSettings {
                    warmup: 0,
                    repeats: 1,
                    timeout_ms: 0,
                });
                let space = sim.space(&task)?;
                let default = sim.default_strategy(&task)?;
                let d = sim.measure(&task, std::slice::from_ref(&default))?[0]
                    .median_us()
                    .ok_or("default strategy failed")?;
                let name = if space.len() <= budget {
                    "exhaustive"
                } else {
                    strategy.as_str()
                };
                let mut strat = by_name(name, 1).ok_or("unknown strategy")?;
                let mut obj = RunnerObjective::new(&mut sim, &task);
                let out = Driver::new(budget).run(&space.space, strat.as_mut(), &mut obj);
                let best = out
                    .history
                    .best()
                    .and_then(|o| o.value)
                    .unwrap_or(f64::INFINITY)
                    .min(d);
                d_sum += d;
                b_sum += best;
                let shape: Vec<String> = task
                    .op
                    .inputs
                    .iter()
                    .take(2)
                    .map(|t| format!("{:?}", t.ori_shape))
                    .collect();
                println!(
                    "| {model} | {} | {} | {soc} | {} | {d:.2} | {best:.2} | {:.2}× |",
                    task.op.op_type,
                    shape.join(" · ").replace(' ', ""),
                    space.len(),
                    d / best
                );
            }
            sums.push((model.to_string(), soc.to_string(), d_sum, b_sum));
        }
    }
    println!();
    println!("| model | SoC | Σ default µs | Σ best µs | speed-up |");
    println!("|---|---|---:|---:|---:|");
    for (m, s, d, b) in sums {
        println!("| {m} | {s} | {d:.1} | {b:.1} | {:.2}× |", d / b);
    }
    eprintln!("done in {:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}
