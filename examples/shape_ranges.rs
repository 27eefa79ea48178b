//! Shapes that change, on the simulator: a decoder layer of GPT-2 small's sizes
//! (fixtures/models/pytorch/gpt2_layer_dyn.onnx, dynamic batch and sequence) tuned once over a
//! range (`--input_shape=x:1~32,1~2048,768`: its ends and the powers of two between, 6 × 12 = 72
//! shapes) and served at shapes drawn from the range, against the simulator's default tiling and
//! against tuning each drawn shape exactly.
//!
//! For each drawn shape (batch uniform in 1–32, sequence uniform in 1–2048, seeded), every unit
//! of the layer (each op as often as the layer runs it) is timed on the simulator three ways:
//! at its default tiling; at the range bank's answer (an exact hit, else the nearest tuned shape
//! of its family fitted to the shape, else the default); and at the answer of a bank tuned at
//! that shape alone (`--budget` per op, transfer off; the range is tuned with `--range-budget`,
//! default the same). A shape's time is the sum over its
//! units. Reported: the share of the exact per-shape gain the range bank keeps (Σ over shapes of
//! default − range, over Σ default − exact), the measurements each spent (the range's include
//! its members' strategies measured at their neighbours' shapes), and the shapes where the range
//! bank's answer is slower than the default.
//!
//! ```text
//! cargo run --release --example shape_ranges -- [--shapes 200] [--budget 32] [--seed 1] \
//!     [--range-shapes 100] [--range-budget BUDGET]
//! ```

use std::path::{Path, PathBuf};

use tunebank::bank::{Bank, Lookup};
use tunebank::inspect::nearest::NearestIndex;
use tunebank::job::{Environment, JobSpec};
use tunebank::measure::sim::{splitmix_next, SimRunner};
use tunebank::measure::{Measure, TuningTask};
use tunebank::model::ResolvedUnit;

const SOC: &str = "--soc_version=Ascend910B2";
const RANGE: &str = "--input_shape=x:1~32,1~2048,768";

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}

type Error = Box<dyn std::error::Error>;

/// The value after `flag` in `args` (removed), or `default`.
fn flag(args: &mut Vec<String>, name: &str, default: u64) -> Result<u64, Error> {
    match args.iter().position(|a| a == name) {
        None => Ok(default),
        Some(i) => {
            let v = args
                .get(i + 1)
                .ok_or(format!("{name}: expected a number"))?;
            let v = v.parse()?;
            args.drain(i..i + 2);
            Ok(v)
        }
    }
}

fn model() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/models/pytorch/gpt2_layer_dyn.onnx")
}

/// Tunes `shape` (an `--input_shape` option) into `bank`, a range at `range_shapes` shapes at
/// most; returns the measurements it took.
fn tune(
    bank: &Path,
    dir: &Path,
    shape: &str,
    budget: u64,
    range_shapes: Option<usize>,
) -> Result<u64, Error> {
    let mut spec = JobSpec::new(vec![
        format!("--model={}", model().display()),
        "--job_type=2".into(),
        SOC.into(),
        shape.into(),
    ]);
    spec.budget = budget as usize;
    spec.transfer = false;
    spec.range_shapes = range_shapes;
    spec.bank = Some(bank.to_path_buf());
    spec.output_dir = Some(dir.to_path_buf());
    let job = spec.resolve(&Environment::empty())?;
    let report = job.run(&mut ())?;
    let (_, summary) = report.opat().ok_or("not an operator-tuning job")?;
    Ok(summary.stats.trials)
}

/// The units of the layer at `shape`, as a converter resolves them.
fn units(shape: &str) -> Result<Vec<ResolvedUnit>, Error> {
    let spec = JobSpec::new(vec![
        format!("--model={}", model().display()),
        SOC.into(),
        shape.into(),
    ]);
    Ok(spec.conversion(&Environment::empty())?.plan.units)
}

/// The simulated time of `task` at `strategy`, or `None` when the simulator refuses it.
fn time(task: &TuningTask, strategy: &tunebank::key::StrategyMap) -> Option<f64> {
    SimRunner::simulate(task, strategy).ok()?.ok()
}

/// Per shape: (default, range bank, exact bank) times in µs, and how the range bank answered.
#[derive(Default)]
struct Totals {
    default: f64,
    range: f64,
    exact: f64,
    exact_hits: usize,
    nearest: usize,
    unserved: usize,
}

fn run() -> Result<(), Error> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let shapes = flag(&mut args, "--shapes", 200)?;
    let budget = flag(&mut args, "--budget", 32)?;
    let mut seed = flag(&mut args, "--seed", 1)?;
    let range_shapes = flag(&mut args, "--range-shapes", 100)? as usize;
    let range_budget = flag(&mut args, "--range-budget", budget)?;
    if let Some(a) = args.first() {
        return Err(format!(
            "unexpected argument {a:?}: expected --shapes N, --budget N, --seed N, --range-shapes N, --range-budget N"
        )
        .into());
    }
    let dir = tempfile::tempdir()?;
    let range_bank = dir.path().join("range.redb");
    let started = std::time::Instant::now();
    let range_trials = tune(
        &range_bank,
        dir.path(),
        RANGE,
        range_budget,
        Some(range_shapes),
    )?;
    println!(
        "range {RANGE} at {range_shapes} shapes at most: tuned in {:.1} s, {range_trials} measurements (budget {range_budget}/op)",
        started.elapsed().as_secs_f64()
    );
    let mut sim = SimRunner::new();
    let mut rows = Vec::new();
    let mut exact_trials = 0;
    for i in 0..shapes {
        let b = 1 + splitmix_next(&mut seed) % 32;
        let s = 1 + splitmix_next(&mut seed) % 2048;
        let shape = format!("--input_shape=x:{b},{s},768");
        let exact_bank = dir.path().join(format!("exact{i}.redb"));
        exact_trials += tune(&exact_bank, dir.path(), &shape, budget, None)?;
        let units = units(&shape)?;
        let range = Bank::builder(tunebank::key::RecordKind::Op, "Ascend910B2")
            .custom_path(&range_bank)
            .no_default_builtin()
            .open()?;
        let exact = Bank::builder(tunebank::key::RecordKind::Op, "Ascend910B2")
            .custom_path(&exact_bank)
            .no_default_builtin()
            .open()?;
        let index = NearestIndex::read(&range, units.iter().map(|u| &u.resolved.descriptor))?;
        let mut t = Totals::default();
        for u in &units {
            let task = TuningTask::new(u.resolved.descriptor.clone());
            let Ok(default) = sim.default_strategy(&task) else {
                continue; // not modelled by the simulator: no tiling to choose
            };
            let Some(before) = time(&task, &default) else {
                continue;
            };
            let served = match range.lookup(&u.resolved.key)? {
                Lookup::Hit(h) => {
                    t.exact_hits += 1;
                    Some(h.answer.strategy)
                }
                Lookup::Miss { .. } => {
                    match index.answer(&u.resolved.descriptor, &u.resolved.key) {
                        Ok(n) => {
                            t.nearest += 1;
                            Some(n.strategy)
                        }
                        Err(_) => {
                            t.unserved += 1;
                            None
                        }
                    }
                }
            };
            let range_us = served.and_then(|s| time(&task, &s)).unwrap_or(before);
            let exact_us = match exact.lookup(&u.resolved.key)? {
                Lookup::Hit(h) => time(&task, &h.answer.strategy).unwrap_or(before),
                Lookup::Miss { .. } => before,
            };
            t.default += before;
            t.range += range_us;
            t.exact += exact_us;
        }
        std::fs::remove_file(&exact_bank).ok();
        rows.push((b, s, t));
    }
    report(&rows, range_trials, exact_trials, budget);
    Ok(())
}

fn report(rows: &[(u64, u64, Totals)], range_trials: u64, exact_trials: u64, budget: u64) {
    let sum = |f: &dyn Fn(&Totals) -> f64| rows.iter().map(|(_, _, t)| f(t)).sum::<f64>();
    let (default, range, exact) = (sum(&|t| t.default), sum(&|t| t.range), sum(&|t| t.exact));
    let slower = rows
        .iter()
        .filter(|(_, _, t)| t.range > t.default * 1.0005)
        .count();
    let worse_than_exact = rows
        .iter()
        .filter(|(_, _, t)| t.range > t.exact * 1.05)
        .count();
    let units: usize = rows
        .iter()
        .map(|(_, _, t)| t.exact_hits + t.nearest + t.unserved)
        .sum();
    let (hits, nearest): (usize, usize) = rows.iter().fold((0, 0), |(h, n), (_, _, t)| {
        (h + t.exact_hits, n + t.nearest)
    });
    println!(
        "{} shapes drawn from batch 1–32 × sequence 1–2048 (budget {budget}/op):",
        rows.len()
    );
    println!("  layer time summed over the shapes: default {default:.0} µs, range bank {range:.0} µs, exact per shape {exact:.0} µs");
    println!(
        "  speed-up over the default: range bank {:.3}×, exact per shape {:.3}×",
        default / range,
        default / exact
    );
    println!(
        "  share of the exact per-shape gain kept: {:.1} %",
        100.0 * (default - range) / (default - exact)
    );
    println!(
        "  measurements: range {range_trials}, exact per shape {exact_trials} ({:.1} % of them)",
        100.0 * range_trials as f64 / exact_trials as f64
    );
    println!(
        "  units: {units}; range bank answered {hits} exact, {nearest} nearest, {} by nothing (default)",
        units - hits - nearest
    );
    println!(
        "  shapes where the range bank is slower than the default: {slower} ({:.1} %); more than 5 % slower than exact: {worse_than_exact}",
        100.0 * slower as f64 / rows.len() as f64
    );
    for (b, s, t) in rows.iter().filter(|(_, _, t)| t.range > t.default * 1.0005) {
        println!(
            "    batch {b} × sequence {s}: {:.3}× the default's time",
            t.range / t.default
        );
    }
}
