//! Why transfer from another SoC gains what it gains on the simulator: per cube op of the
//! ResNet-50 and BERT fixtures on Ascend910B2, how good the nearest related record's projected
//! winner (the first seed) is against the cold search's best, what its one- and two-step
//! neighbourhood holds, and what a plain hill-climb from it would cost.
//!
//! ```text
//! cargo run --release --example transfer_seeds -- [--other-soc Ascend310P3] [--budget 64] [--seed 1]
//! ```
//!
//! The bank holds each model's own records on the other SoC (tuned cold by `tune::opat::run`, seed 1,
//! the same budget), in a temporary directory. Per op, `tune::transfer::compare` gives the cold
//! search's best and candidates (batch 8, as `tunebank tune` measures) and the seeded
//! ensemble's; the rest is computed here on the noiseless simulator:
//!
//! - `seed`: the first seed's time over the cold best;
//! - `1-step`, `2-step`: the best time over the cold best among the seed's one-step moves
//!   (one parameter, one step in its value list), and among those and its two-step moves
//!   (`search_strategies::bayes::local_moves`); `reach`: how many of them are within 1 %;
//! - `climb`: candidates a hill-climb needs to reach 99 % of the cold best: the seed first in
//!   a batch whose other candidates do not count, then batches of the incumbent's next local
//!   moves in `local_moves` order (the whole budget when it never gets there).

#[path = "common/sim_fixture.rs"]
mod sim_fixture;

use std::collections::BTreeSet;

use search_strategies::bayes::{local_moves, BayesConfig};
use search_strategies::{ConfigId, History, Neighbourhood, Observation, SearchContext};
use sim_fixture::{fill, plan, settings, Error};
use tunebank::bank::Bank;
use tunebank::key::RecordKind;
use tunebank::measure::sim::SimRunner;
use tunebank::measure::{Measure, TaskSpace, TuningTask};
use tunebank::tune::transfer::compare::{compare, REACH};
use tunebank::tune::transfer::{self, snapshot, Related};
use tunebank::tune::TuneSettings;

struct Args {
    other_soc: String,
    budget: usize,
    seed: u64,
}

fn args() -> Result<Args, Error> {
    let mut a = Args {
        other_soc: "Ascend310P3".into(),
        budget: 64,
        seed: 1,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag}: expected a value"));
        match flag.as_str() {
            "--other-soc" => a.other_soc = value()?,
            "--budget" => a.budget = value()?.parse()?,
            "--seed" => a.seed = value()?.parse()?,
            _ => return Err(format!("unknown flag {flag}").into()),
        }
    }
    Ok(a)
}

/// What the seed and its neighbourhood hold for one op.
struct Seeded {
    seed: f64,
    one_step: f64,
    two_step: f64,
    reach: usize,
    climb: usize,
}

/// The first seed of the prior built from `related` over `space`, its neighbourhood and a
/// hill-climb from it (with `search`'s budget and batch), against the cold search's best
/// `cold_best` (µs); `None` when nothing
/// projects.
fn examine(
    task: &TuningTask,
    space: &TaskSpace,
    related: &[Related],
    cold_best: f64,
    search: &TuneSettings,
) -> Option<Seeded> {
    let prior = transfer::prior(space, related, &task.op.soc.version);
    let seed = prior.seeds().first()?.id;
    let time = |id: ConfigId| {
        SimRunner::simulate(task, &space.strategy(id))
            .ok()
            .and_then(Result::ok)
    };
    let target = cold_best / REACH;
    let mut history = History::new(space.len());
    history.record(Observation {
        id: seed,
        value: time(seed),
    });
    let ctx = SearchContext {
        space: &space.space,
        history: &history,
    };
    let mut adjacent = BTreeSet::new();
    space
        .space
        .for_each_neighbour(seed, Neighbourhood::Adjacent, |m| {
            adjacent.insert(m);
        });
    let (mut one_step, mut two_step, mut reach) = (f64::INFINITY, f64::INFINITY, 0);
    for m in local_moves(&ctx, &[]) {
        let t = time(m).unwrap_or(f64::INFINITY);
        two_step = two_step.min(t);
        if adjacent.contains(&m) {
            one_step = one_step.min(t);
        }
        reach += usize::from(t <= target);
    }
    Some(Seeded {
        seed: time(seed).unwrap_or(f64::INFINITY) / cold_best,
        one_step: one_step / cold_best,
        two_step: two_step / cold_best,
        reach,
        climb: climb(&space.space, history, &time, target, search),
    })
}

/// Candidates a hill-climb in `search`'s batches from the seed (the only observation in
/// `history`) needs to reach `target`; `search`'s budget when it never does.
fn climb(
    space: &search_strategies::Space,
    mut history: History,
    time: &dyn Fn(ConfigId) -> Option<f64>,
    target: f64,
    search: &TuneSettings,
) -> usize {
    let (budget, batch) = (search.trials_per_op, search.batch.unwrap_or(1));
    let reached = |h: &History| h.best().and_then(|b| b.value).is_some_and(|v| v <= target);
    if reached(&history) {
        return 1;
    }
    let mut spent = batch;
    while spent < budget {
        let ctx = SearchContext {
            space,
            history: &history,
        };
        let moves: Vec<ConfigId> = local_moves(&ctx, &[]).into_iter().take(batch).collect();
        if moves.is_empty() {
            break;
        }
        for id in moves {
            spent += 1;
            history.record(Observation {
                id,
                value: time(id),
            });
            if reached(&history) {
                return spent;
            }
        }
    }
    budget
}

fn main() -> Result<(), Error> {
    let a = args()?;
    let dir = tempfile::tempdir()?;
    let (mut cold_sum, mut warm_sum, mut climb_sum) = (0, 0, 0);
    println!(
        "Ascend910B2 from {}, budget {}, seed {}; cube ops (ratios: time / cold best)",
        a.other_soc, a.budget, a.seed
    );
    for model in ["bert_layer", "resnet50"] {
        let bank = Bank::builder(RecordKind::Op, "Ascend910B2")
            .custom_path(dir.path().join(format!("{model}.redb")))
            .no_default_builtin()
            .open()?;
        fill(&bank, model, &a.other_soc, "ensemble", a.budget, 1)?;
        let (target, options) = plan(model, "Ascend910B2")?;
        let snap = snapshot(&bank, &target, 0..target.tasks.len())?;
        let s = settings(&options, "ensemble", a.seed, a.budget);
        let c = compare(&target, &snap, &s, &BayesConfig::default())?;
        println!("\n## {model}");
        println!(
            "{:<14} {:>7} {:>6} {:>6} {:>6} {:>5} {:>5} {:>5} {:>5}",
            "op type", "space", "seed", "1-step", "2-step", "reach", "cold", "warm", "climb"
        );
        let mut runner = SimRunner::new();
        for (i, t) in target.tasks.iter().enumerate() {
            let Some(op) = c.ops.iter().find(|o| o.op_name == t.op_names[0]) else {
                continue;
            };
            if !matches!(op.op_type.as_str(), "Conv2D" | "BatchMatMulV2" | "MatMulV2") {
                continue;
            }
            let task = TuningTask::new(t.descriptor.clone());
            let space = runner.space(&task)?;
            let Some(s) = examine(&task, &space, snap.get(i), op.cold_best_us, &s) else {
                continue;
            };
            let warm = op.warm_to_reach.unwrap_or(a.budget);
            println!(
                "{:<14} {:>7} {:>6.3} {:>6.3} {:>6.3} {:>5} {:>5} {:>5} {:>5}",
                op.op_type,
                op.space,
                s.seed,
                s.one_step,
                s.two_step,
                s.reach,
                op.cold_to_reach,
                warm,
                s.climb
            );
            cold_sum += op.cold_to_reach;
            warm_sum += warm;
            climb_sum += s.climb;
        }
    }
    let ratio = |x: usize| x as f64 / cold_sum.max(1) as f64;
    println!(
        "\ncube ops: cold {cold_sum}, seeded ensemble {warm_sum} ({:.2}), hill-climb {climb_sum} ({:.2})",
        ratio(warm_sum),
        ratio(climb_sum)
    );
    Ok(())
}
