//! What transfer from the bank gains on the simulator (issue 19's measurement): the ResNet-50
//! and BERT fixtures on Ascend910B2, each tuned with and without transfer from a bank holding
//! the other model's records (same SoC), and then also the same model's records on another SoC.
//! Per op: a cold and a warm search on the same space, seed and budget; the cold search's final
//! best is the target; each is charged the candidates it measured until it reached 99 % of it.
//!
//! ```text
//! cargo run --release --example transfer_sim -- [--budget 64] [--seeds 5] [--strategy ensemble] [--other-soc Ascend310P3] [--per-op] [--fixed-bank] [--no-warp] [--no-alignment]
//! ```
//!
//! Each seed builds its own banks with `tunebank::tune::opat::run` (transfer off, the seed's
//! own draw, the same budget) into a temporary directory, so the seeds average over the banks'
//! winners as well as over the searches; nothing outside the directory is written. With
//! `--fixed-bank` every seed's banks are tuned with seed 1: one draw of winners that every seed
//! shares, which the seed count does not average out.

#[path = "common/sim_fixture.rs"]
mod sim_fixture;

use search_strategies::bayes::BayesConfig;
use sim_fixture::{fill, plan, settings, Error};
use tunebank::bank::Bank;
use tunebank::key::{RecordKind, ResolvedOptions};
use tunebank::tune::transfer::compare::{compare, Comparison};
use tunebank::tune::transfer::snapshot;
use tunebank::tune::TunePlan;

struct Args {
    budget: usize,
    seeds: u64,
    strategy: String,
    other_soc: String,
    per_op: bool,
    /// Every seed's banks tuned with seed 1 (`--fixed-bank`), as BENCHMARKS.md's older figures
    /// were taken: the banks' draw is then shared by every seed (the tune is deterministic, so
    /// each seed re-tunes the same banks; this mode only reproduces those figures).
    fixed_bank: bool,
    /// The searches' Bayesian models (`--no-warp`, `--no-alignment` turn their parts off for
    /// attribution runs; the banks are still built by a default tune).
    bayes: BayesConfig,
}

fn args() -> Result<Args, Error> {
    let mut a = Args {
        budget: 64,
        seeds: 5,
        strategy: "ensemble".into(),
        other_soc: "Ascend310P3".into(),
        per_op: false,
        fixed_bank: false,
        bayes: BayesConfig::default(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag}: expected a value"));
        match flag.as_str() {
            "--budget" => a.budget = value()?.parse()?,
            "--seeds" => a.seeds = value()?.parse()?,
            "--strategy" => a.strategy = value()?,
            "--other-soc" => a.other_soc = value()?,
            "--per-op" => a.per_op = true,
            "--fixed-bank" => a.fixed_bank = true,
            "--no-warp" => a.bayes.warp = false,
            "--no-alignment" => a.bayes.alignment = false,
            _ => return Err(format!("unknown flag {flag}").into()),
        }
    }
    if a.seeds == 0 {
        return Err("--seeds: expected at least 1".into());
    }
    Ok(a)
}

/// One seed's comparison of cold and warm for the target `p` (its plan and options on
/// Ascend910B2) with the related records `bank` holds.
fn measure(
    a: &Args,
    (p, options): &(TunePlan, ResolvedOptions),
    bank: &Bank,
    seed: u64,
) -> Result<Comparison, Error> {
    let snap = snapshot(bank, p, 0..p.tasks.len())?;
    let settings = settings(options, &a.strategy, seed, a.budget);
    Ok(compare(p, &snap, &settings, &a.bayes)?)
}

/// Prints one bank's comparisons, one per seed (the first seed's ops with `--per-op`), and
/// returns their cold and warm totals.
fn report(a: &Args, target: &str, what: &str, runs: &[Comparison]) -> (usize, usize) {
    let (mut cold, mut warm) = (0, 0);
    println!("\n## {target} on Ascend910B2, bank: {what}");
    for (i, c) in runs.iter().enumerate() {
        if a.per_op && i == 0 {
            print!("{c}");
        }
        let (tc, tw) = c.totals();
        println!(
            "seed {}: {} ops, {} seeded: cold {tc}, warm {tw} (warm/cold {:.2}; {} warm never reached)",
            i + 1,
            c.ops.len(),
            c.seeded_ops(),
            tw as f64 / tc.max(1) as f64,
            c.warm_misses()
        );
        cold += tc;
        warm += tw;
    }
    println!(
        "all seeds: cold {cold}, warm {warm}, warm/cold {:.2}",
        warm as f64 / cold.max(1) as f64
    );
    (cold, warm)
}

/// The per-seed ratios' mean, standard deviation, minimum and maximum.
fn spread(ratios: &[f64]) -> (f64, f64, f64, f64) {
    let n = ratios.len() as f64;
    let mean = ratios.iter().sum::<f64>() / n;
    let var = ratios.iter().map(|r| (r - mean) * (r - mean)).sum::<f64>() / (n - 1.0).max(1.0);
    let min = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let max = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, var.sqrt(), min, max)
}

fn main() -> Result<(), Error> {
    let a = args()?;
    let dir = tempfile::tempdir()?;
    println!(
        "strategy {}, budget {}/op, seeds 1..={}, other SoC {}, banks {}",
        a.strategy,
        a.budget,
        a.seeds,
        a.other_soc,
        if a.fixed_bank {
            "tuned once (seed 1)"
        } else {
            "tuned per seed"
        }
    );
    let (mut cold, mut warm) = (0, 0);
    let mut per_seed = vec![(0usize, 0usize); a.seeds as usize];
    for (target, other) in [("bert_layer", "resnet50"), ("resnet50", "bert_layer")] {
        let planned = plan(target, "Ascend910B2")?;
        let (mut only_other, mut both) = (Vec::new(), Vec::new());
        for seed in 1..=a.seeds {
            // The bank's own draw: the seed's (the default), or seed 1's for every seed.
            let bank_seed = if a.fixed_bank { 1 } else { seed };
            let bank = Bank::builder(RecordKind::Op, "Ascend910B2")
                .custom_path(dir.path().join(format!("{target}-{seed}.redb")))
                .no_default_builtin()
                .open()?;
            fill(
                &bank,
                other,
                "Ascend910B2",
                &a.strategy,
                a.budget,
                bank_seed,
            )?;
            only_other.push(measure(&a, &planned, &bank, seed)?);
            // The same bank with the target's records on the other SoC added.
            fill(
                &bank,
                target,
                &a.other_soc,
                &a.strategy,
                a.budget,
                bank_seed,
            )?;
            both.push(measure(&a, &planned, &bank, seed)?);
        }
        report(&a, target, &format!("{other} on Ascend910B2"), &only_other);
        let what = format!("{other} on Ascend910B2 + {target} on {}", a.other_soc);
        let (c, w) = report(&a, target, &what, &both);
        cold += c;
        warm += w;
        for (s, r) in per_seed.iter_mut().zip(&both) {
            let (tc, tw) = r.totals();
            s.0 += tc;
            s.1 += tw;
        }
    }
    println!(
        "\nboth fixtures, other model + other SoC, all seeds: cold {cold}, warm {warm}, warm/cold {:.2}",
        warm as f64 / cold.max(1) as f64
    );
    let ratios: Vec<f64> = (per_seed.iter())
        .map(|&(c, w)| w as f64 / c.max(1) as f64)
        .collect();
    let (mean, sd, min, max) = spread(&ratios);
    println!(
        "per seed, both fixtures: warm/cold {mean:.2} ± {sd:.2} (standard deviation over {} seeds; {min:.2}–{max:.2})",
        ratios.len()
    );
    Ok(())
}
