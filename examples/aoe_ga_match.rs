//! Measurements tunebank's default search needs to match AOE's genetic tuner, per op of the
//! ResNet-50 and BERT-base shapes in `fixtures/ops/`, on the simulator for Ascend910B2 (the
//! replay-space version is `search-bench --match-aoe-ga`).
//!
//! `cargo run --release --example aoe_ga_match -- [SEEDS] [BUDGET] [AOE_TRIALS] [--no-warp]
//! [--no-alignment]` (defaults: 10, 200, 500; the flags turn a part of the Bayesian model off, as
//! `search-bench`'s do, for attribution runs). For every op, `aoe-ga` runs `AOE_TRIALS` evaluations
//! (a space smaller than that is measured whole) with seeds 1000 … 1000 + SEEDS − 1, once with
//! AOE's default settings (early stop on) and once with the early stop off; the target is the
//! median over seeds of its best time. The default strategy (the registry's first name, `ensemble`)
//! then runs `BUDGET` evaluations with the same seeds; for each seed, the measurements to match are
//! the first evaluation whose best-so-far is at most the target
//! (`search_strategies::bench::MatchRow`). Printed per op: the space size, AOE-GA's median best
//! (and the evaluations it used), the default's median measurements to match (`>BUDGET` when the
//! median run does not get there) and the share of seeds that get there within the budget; then per
//! model the median over ops of the per-op median, the worst op and the share over all runs. The
//! simulator is noiseless and every search seeded, so the output is the same on every run.

use std::time::Instant;

use search_strategies::aoe_ga::{AoeGa, AoeGaConfig};
use search_strategies::bayes::BayesConfig;
use search_strategies::bench::MatchRow;
use search_strategies::score::Trace;
use search_strategies::stats::median;
use search_strategies::strategies::STRATEGY_NAMES;
use search_strategies::transfer::build;
use search_strategies::{Driver, Strategy};
use tunebank::key::{OpDescriptor, SocSpec};
use tunebank::measure::sim::SimRunner;
use tunebank::measure::{Measure, RunnerObjective, TaskSpace, TimingSettings, TuningTask};

const SOC: &str = "Ascend910B2";
const FIRST_SEED: u64 = 1000;

/// One op's rows: its label, space size, and a [`MatchRow`] per AOE-GA variant.
struct OpRows {
    label: String,
    space: usize,
    rows: Vec<MatchRow>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let all: Vec<String> = std::env::args().collect();
    let (flags, args): (Vec<&String>, Vec<&String>) = all.iter().partition(|a| a.starts_with("--"));
    let mut bayes = BayesConfig::default();
    for f in flags {
        match f.as_str() {
            "--no-warp" => bayes.warp = false,
            "--no-alignment" => bayes.alignment = false,
            other => {
                return Err(format!(
                    "unknown flag `{other}`: expected `--no-warp` or `--no-alignment`"
                )
                .into())
            }
        }
    }
    let arg = |i: usize, default: usize| -> Result<usize, String> {
        args.get(i).map_or(Ok(default), |s| {
            s.parse()
                .map_err(|_| format!("argument {i}: expected a count, got `{s}`"))
        })
    };
    let (n_seeds, budget, aoe_trials) = (arg(1, 10)?, arg(2, 200)?, arg(3, 500)?);
    let seeds: Vec<u64> = (FIRST_SEED..).take(n_seeds).collect();
    let default = STRATEGY_NAMES[0];
    let variants = [
        ("AOE's defaults", AoeGaConfig::default()),
        ("no early stop", AoeGaConfig::default().without_early_stop()),
    ];
    let root = env!("CARGO_MANIFEST_DIR");
    let start = Instant::now();
    println!(
        "{default} (budget {budget}) vs aoe-ga ({aoe_trials} trials) on the simulator, {SOC}, \
         seeds {FIRST_SEED}..{}",
        FIRST_SEED + n_seeds as u64 - 1
    );
    if !bayes.warp || !bayes.alignment {
        let on = |b: bool| if b { "on" } else { "off" };
        println!(
            "Bayesian models: output warping {}, alignment coordinates {} (not the default)",
            on(bayes.warp),
            on(bayes.alignment)
        );
    }
    let mut summaries = Vec::new();
    for (model, file) in [
        ("ResNet-50", "resnet50_ops.json"),
        ("BERT-base", "bert_base_ops.json"),
    ] {
        let text = std::fs::read_to_string(format!("{root}/fixtures/ops/{file}"))?;
        let ops: Vec<OpDescriptor> = serde_json::from_str(&text)?;
        println!("\n## {model}\n");
        print!("| op | space |");
        for (label, _) in &variants {
            print!(
                " AOE-GA best µs, {label} (evals) | {default}: median to match | within {budget} |"
            );
        }
        println!();
        println!("|---|---:|{}", "---:|---:|---:|".repeat(variants.len()));
        let mut per_op = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            let mut op = op.clone();
            op.soc = SocSpec::from_version(SOC)?;
            let task = TuningTask::new(op);
            let mut sim = SimRunner::new().with_timing(TimingSettings {
                warmup: 0,
                repeats: 1,
                timeout_ms: 0,
            });
            let space = sim.space(&task)?;
            let ours: Vec<Trace> = (seeds.iter())
                .map(|&s| {
                    let mut strategy = build(default, s, None, &bayes).ok_or("unknown strategy")?;
                    Ok(trace(&mut sim, &task, &space, strategy.as_mut(), budget))
                })
                .collect::<Result<_, Box<dyn std::error::Error>>>()?;
            let label = format!("{i} {}{}", task.op.op_type, shape(&task.op));
            let mut rows = Vec::new();
            for (_, config) in &variants {
                let theirs: Vec<Trace> = (seeds.iter())
                    .map(|&s| {
                        let mut ga = AoeGa::new(s, config.clone());
                        trace(&mut sim, &task, &space, &mut ga, aoe_trials)
                    })
                    .collect();
                rows.push(MatchRow::new(&label, &ours, &theirs).ok_or("AOE-GA measured nothing")?);
            }
            print!("| {label} | {} |", space.len());
            for r in &rows {
                print!(
                    " {:.3} ({}) | {} | {:.2} |",
                    r.target,
                    r.reference_evaluations,
                    to_match(r.median_evaluations(), budget),
                    r.share_reached()
                );
            }
            println!();
            per_op.push(OpRows {
                label,
                space: space.len(),
                rows,
            });
        }
        summaries.push((model, per_op));
    }
    println!("\n## Per model\n");
    println!(
        "| model | AOE-GA | ops | median over ops of the per-op median | worst op (space): median, share | share of all runs within {budget} |"
    );
    println!("|---|---|---:|---:|---|---:|");
    for (model, per_op) in &summaries {
        for (v, (label, _)) in variants.iter().enumerate() {
            summary(model, label, per_op, v, budget);
        }
    }
    eprintln!("done in {:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}

/// One search of `strategy` on the simulator: the objective of each evaluation, in order.
fn trace(
    sim: &mut SimRunner,
    task: &TuningTask,
    space: &TaskSpace,
    strategy: &mut dyn Strategy,
    budget: usize,
) -> Trace {
    let mut objective = RunnerObjective::new(sim, task);
    let out = Driver::new(budget).run(&space.space, strategy, &mut objective);
    out.history.observations().iter().map(|o| o.value).collect()
}

/// The first two inputs' shapes, as `[a,b]·[c,d]`.
fn shape(op: &OpDescriptor) -> String {
    let s: Vec<String> = (op.inputs.iter().take(2))
        .map(|t| format!("{:?}", t.ori_shape).replace(' ', ""))
        .collect();
    format!(" {}", s.join("·"))
}

/// A median number of measurements, `>budget` when not reached.
fn to_match(m: Option<f64>, budget: usize) -> String {
    m.map_or(format!(">{budget}"), |m| format!("{m}"))
}

/// Prints variant `v`'s summary line for a model: the median over ops of the per-op medians (an
/// op whose median run does not match counting as infinitely many), the worst op (the largest
/// median, then the lowest share) and the share of all runs that match within the budget.
fn summary(model: &str, label: &str, per_op: &[OpRows], v: usize, budget: usize) {
    let key = |o: &OpRows| {
        let r = &o.rows[v];
        (
            r.median_evaluations().unwrap_or(f64::INFINITY),
            -r.share_reached(),
        )
    };
    let medians: Vec<f64> = per_op.iter().map(|o| key(o).0).collect();
    let Some(worst) = per_op.iter().max_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        ka.0.total_cmp(&kb.0).then(ka.1.total_cmp(&kb.1))
    }) else {
        return;
    };
    let all: Vec<Option<usize>> = per_op
        .iter()
        .flat_map(|o| o.rows[v].reached.clone())
        .collect();
    let share = all.iter().filter(|r| r.is_some()).count() as f64 / all.len().max(1) as f64;
    let m = median(&medians).filter(|m| m.is_finite());
    let w = &worst.rows[v];
    println!(
        "| {model} | {label} | {} | {} | {} ({}): {}, {:.2} | {share:.3} ({} runs) |",
        per_op.len(),
        to_match(m, budget),
        worst.label,
        worst.space,
        to_match(w.median_evaluations(), budget),
        w.share_reached(),
        all.len()
    );
}
