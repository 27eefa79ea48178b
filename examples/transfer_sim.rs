//! What transfer from the bank gains on the simulator (issue 19's measurement): the ResNet-50
//! and BERT fixtures on Ascend910B2, each tuned with and without transfer from a bank holding
//! the other model's records (same SoC), and then also the same model's records on another SoC.
//! Per op: a cold and a warm search on the same space, seed and budget; the cold search's final
//! best is the target; each is charged the candidates it measured until it reached 99 % of it.
//!
//! ```text
//! cargo run --release --example transfer_sim -- [--budget 64] [--seeds 5] [--strategy ensemble] [--other-soc Ascend310P3] [--per-op] [--no-warp] [--no-alignment]
//! ```
//!
//! The banks are built by `tunebank::tune::opat::run` (transfer off, seed 1, the same budget) into a
//! temporary directory; nothing outside it is written.

#[path = "common/sim_fixture.rs"]
mod sim_fixture;

use search_strategies::bayes::BayesConfig;
use sim_fixture::{fill, plan, settings, Error};
use tunebank::bank::Bank;
use tunebank::key::RecordKind;
use tunebank::tune::transfer::compare::{compare, Comparison};
use tunebank::tune::transfer::snapshot;

struct Args {
    budget: usize,
    seeds: u64,
    strategy: String,
    other_soc: String,
    per_op: bool,
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
            "--no-warp" => a.bayes.warp = false,
            "--no-alignment" => a.bayes.alignment = false,
            _ => return Err(format!("unknown flag {flag}").into()),
        }
    }
    Ok(a)
}

/// Compares cold and warm for `target` on Ascend910B2 with the related records `bank` holds,
/// over every seed; prints the first seed's ops (with `--per-op`) and each seed's totals.
fn measure(a: &Args, target: &str, bank: &Bank, what: &str) -> Result<(usize, usize), Error> {
    let (p, options) = plan(target, "Ascend910B2")?;
    let snap = snapshot(bank, &p, 0..p.tasks.len())?;
    let (mut cold, mut warm) = (0, 0);
    println!("\n## {target} on Ascend910B2, bank: {what}");
    for seed in 1..=a.seeds {
        let c: Comparison = compare(
            &p,
            &snap,
            &settings(&options, &a.strategy, seed, a.budget),
            &a.bayes,
        )?;
        if a.per_op && seed == 1 {
            print!("{c}");
        }
        let (tc, tw) = c.totals();
        println!(
            "seed {seed}: {} ops, {} seeded: cold {tc}, warm {tw} (warm/cold {:.2}; {} warm never reached)",
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
    Ok((cold, warm))
}

fn main() -> Result<(), Error> {
    let a = args()?;
    let dir = tempfile::tempdir()?;
    println!(
        "strategy {}, budget {}/op, seeds 1..={}, other SoC {}",
        a.strategy, a.budget, a.seeds, a.other_soc
    );
    let (mut cold, mut warm) = (0, 0);
    for (target, other) in [("bert_layer", "resnet50"), ("resnet50", "bert_layer")] {
        let open = |name: &str| {
            Bank::builder(RecordKind::Op, "Ascend910B2")
                .custom_path(dir.path().join(format!("{target}-{name}.redb")))
                .no_default_builtin()
                .open()
        };
        let only_other = open("other-model")?;
        fill(&only_other, other, "Ascend910B2", &a.strategy, a.budget)?;
        measure(&a, target, &only_other, &format!("{other} on Ascend910B2"))?;
        let both = open("other-model-and-soc")?;
        fill(&both, other, "Ascend910B2", &a.strategy, a.budget)?;
        fill(&both, target, &a.other_soc, &a.strategy, a.budget)?;
        let what = format!("{other} on Ascend910B2 + {target} on {}", a.other_soc);
        let (c, w) = measure(&a, target, &both, &what)?;
        cold += c;
        warm += w;
    }
    println!(
        "\nboth fixtures, other model + other SoC, all seeds: cold {cold}, warm {warm}, warm/cold {:.2}",
        warm as f64 / cold.max(1) as f64
    );
    Ok(())
}
