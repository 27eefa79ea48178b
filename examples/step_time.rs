//! A training step's time on the simulator before and after OPAT: the step graph is tuned
//! through the job API into a fresh bank, then every unit of the step (each op as often as
//! the step runs it, not once per key) is timed at the simulator's default tiling and at the
//! bank's; the sums are the step's default and tuned times. Split into forward, backward and
//! optimizer units (backward: a `…Grad`/`…Backprop…` op or what the loss's gradient feeds;
//! here simply the op types a gradient adds, the loss and the updates named as such).
//!
//! ```text
//! cargo run --release --example step_time -- fixtures/models/training/small_cnn_step.pb \
//!     --soc_version=Ascend910B2 [--budget 64]
//! ```

use std::collections::BTreeMap;

use tunebank::bank::Lookup;
use tunebank::job::{Environment, JobSpec};
use tunebank::measure::sim::SimRunner;
use tunebank::measure::{Measure, TuningTask};

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}

/// The part of a step an IR op type belongs to.
fn part(ir: &str) -> &'static str {
    if ir.starts_with("Apply") || ir.starts_with("Assign") {
        "optimizer"
    } else if ir.ends_with("Grad") || ir.contains("Backprop") || ir.contains("CrossEntropy") {
        "backward"
    } else {
        "forward and the rest"
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        eprintln!("usage: step_time STEP.pb [--soc_version=SOC] [--budget N] [ATC options]");
        std::process::exit(2);
    }
    let mut budget = 64;
    if let Some(i) = args.iter().position(|a| a == "--budget") {
        budget = args
            .get(i + 1)
            .ok_or("--budget: expected a count")?
            .parse()?;
        args.drain(i..i + 2);
    }
    let model = args.remove(0);
    let dir = tempfile::tempdir()?;
    let mut atc = vec![format!("--model={model}"), "--job_type=2".to_string()];
    if !args.iter().any(|a| a.starts_with("--soc_version")) {
        atc.push("--soc_version=Ascend910B2".into());
    }
    atc.extend(args);
    let mut spec = JobSpec::new(atc);
    spec.budget = budget;
    spec.bank = Some(dir.path().join("bank.redb"));
    spec.output_dir = Some(dir.path().to_path_buf());
    let job = spec.resolve(&Environment::empty())?;
    let started = std::time::Instant::now();
    let report = job.run(&mut ())?;
    let wall = started.elapsed().as_secs_f64();
    println!("{report}");
    drop(report);
    let bank = job.open_bank()?;
    let plan = job.plan().ok_or("not an operator-tuning job")?;
    let mut sim = SimRunner::new();
    let mut sums: BTreeMap<&str, (f64, f64, usize)> = BTreeMap::new();
    for u in &plan.units {
        let task = TuningTask::new(u.resolved.descriptor.clone());
        let Ok(default) = sim.default_strategy(&task) else {
            continue; // not modelled: reported by the tune above
        };
        let Ok(Ok(before)) = SimRunner::simulate(&task, &default) else {
            continue;
        };
        let after = match bank.lookup(&u.resolved.key)? {
            Lookup::Hit(hit) => SimRunner::simulate(&task, &hit.answer.strategy)?.unwrap_or(before),
            _ => before,
        };
        let e = sums
            .entry(part(&u.resolved.descriptor.op_type))
            .or_default();
        e.0 += before;
        e.1 += after;
        e.2 += 1;
    }
    println!("\n{model}: tuned in {wall:.1} s (budget {budget}/op)");
    println!(
        "{:<22} {:>6} {:>12} {:>12} {:>8}",
        "part", "ops", "default µs", "tuned µs", "ratio"
    );
    let (mut b, mut a, mut n) = (0.0, 0.0, 0);
    for (p, (before, after, count)) in &sums {
        println!(
            "{p:<22} {count:>6} {before:>12.1} {after:>12.1} {:>7.3}×",
            before / after
        );
        b += before;
        a += after;
        n += count;
    }
    println!("{:<22} {n:>6} {b:>12.1} {a:>12.1} {:>7.3}×", "step", b / a);
    Ok(())
}
