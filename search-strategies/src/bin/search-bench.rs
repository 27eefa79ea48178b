//! `search-bench`: replays strategies on measured spaces, writes traces, prints score tables
//! and draws the mean best-so-far curves.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use clap::Parser;
use search_strategies::aoe_ga::{AoeGa, AoeGaConfig};
use search_strategies::bayes::BayesConfig;
use search_strategies::bench::{
    curves, render_match, run_strategy, run_with, svg, MatchRow, Table,
};
use search_strategies::compare::{parse_peer_arg, render_versus, versus, Peer};
use search_strategies::replay::ReplaySpace;
use search_strategies::score::{Baseline, Trace, TraceFile};
use search_strategies::strategies::{by_name, STRATEGY_NAMES};
use search_strategies::strategy::{Budget, Driver};
use search_strategies::transfer::{Prior, Source};

/// Replays search strategies on Kernel Tuner cache files and scores them.
#[derive(Parser, Debug)]
#[command(name = "search-bench", version)]
struct Args {
    /// Kernel Tuner cache files (.json or .json.gz). A sibling `<prefix>.restrictions.json`
    /// is used as the restriction list; otherwise the cache's keys are the valid set.
    #[arg(required = true)]
    caches: Vec<PathBuf>,
    /// Comma-separated strategies.
    #[arg(long, default_value = "ensemble,bayes_opt,genetic,annealing,random")]
    strategies: String,
    /// Number of seeds per strategy and space.
    #[arg(long, default_value_t = 30)]
    seeds: u64,
    /// First seed.
    #[arg(long, default_value_t = 1000)]
    seed_base: u64,
    /// Unique configurations measured per run: a number, or `auto` (`auto:N`) to stop when
    /// the strategy's model expects less than 1 % from one more measurement, three rounds in a
    /// row after at least 20, capped at 200 (N). Scores and fractions are over the cap; a run
    /// that stopped keeps its best.
    #[arg(long, default_value = "200", value_parser = parse_budget)]
    budget: Budget,
    /// Configurations measured at once per round (a board's `TUNING_PARALLEL_NUM`): our
    /// strategies are asked for this many per round. With `--match-aoe-ga` the table adds
    /// the median rounds to match.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=4096))]
    batch: u64,
    /// Where to write the traces (JSON).
    #[arg(long)]
    traces: Option<PathBuf>,
    /// Where to draw the mean best-so-far curves (SVG).
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Trace files of other tuners to score side by side, `[LABEL=]PATH`, repeatable. Strategy
    /// names get the prefix `LABEL:`; without a label it is the file name up to its first `_`
    /// (`KT_TRACES_dev.json.gz` → `kt:`, `OPTUNA_TRACES_dev.json.gz` → `optuna:`).
    #[arg(long, num_args = 1..)]
    compare: Vec<String>,
    /// Our strategy whose per-space wins and losses against each peer's best are printed.
    #[arg(long, default_value = "ensemble")]
    versus: String,
    /// Also run each strategy with transfer (rows `NAME+transfer`), its sources for each target
    /// space drawn from the other given caches: `leave-one-out`, those of the same kernel (the
    /// same `kernel_name` and parameter names, never the target's own cache: other devices);
    /// `leave-kernel-out`, those of every other kernel (a kernel new to the bank).
    #[arg(long, value_parser = ["leave-one-out", "leave-kernel-out"])]
    transfer: Option<String>,
    /// Also run each strategy with transfer (rows `NAME+transfer`) from these caches, for every
    /// target space except a source's own file. Sources need not be the same kernel: values are
    /// matched by parameter name.
    #[arg(long, num_args = 1.., conflicts_with = "transfer")]
    transfer_from: Vec<PathBuf>,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Also print, per space, how many evaluations the default strategy (the registry's first,
    /// added to `--strategies` if missing) needs to match AOE's genetic tuner: the target is the
    /// median over the seeds of `aoe-ga`'s best after `--aoe-ga-budget` evaluations (or the
    /// whole space if smaller); per run of ours, the first evaluation whose best-so-far is at
    /// least as good; the median over seeds and the share of runs that get there within
    /// `--budget`. Printed twice: for AOE's default settings (early stop on) and for the same
    /// with the early stop off (every one of its trials used); with `--transfer` or
    /// `--transfer-from`, also for the default with transfer.
    #[arg(long)]
    match_aoe_ga: bool,
    /// AOE-GA's evaluations per run for `--match-aoe-ga` (AOE's default trials per operator).
    #[arg(long, default_value_t = AoeGaConfig::default().trials)]
    aoe_ga_budget: usize,
    /// Bayesian models (`bayes_opt`, the ensemble's Bayesian arms) fit the plain standardised
    /// log objectives, without output warping (`BayesConfig::warp`); for attribution runs.
    #[arg(long)]
    no_warp: bool,
    /// Bayesian models see each parameter's value rank only, without power-of-two alignment
    /// coordinates (`BayesConfig::alignment`); for attribution runs.
    #[arg(long)]
    no_alignment: bool,
}

/// `--budget`, with 0 refused: a run measures at least one configuration.
fn parse_budget(s: &str) -> Result<Budget, String> {
    let b: Budget = s.parse()?;
    if b.cap == 0 {
        return Err(format!(
            "expected at least one measurement (`N`, `auto` or `auto:N`), got `{s}`"
        ));
    }
    Ok(b)
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("search-bench: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Args) -> Result<(), String> {
    let mut strategies = strategy_names(&args.strategies)?;
    let spaces = load_spaces(&args.caches)?;
    let priors = priors(&args, &spaces)?;
    let default = STRATEGY_NAMES[0].to_string();
    if args.match_aoe_ga && !strategies.contains(&default) {
        strategies.push(default.clone());
    }
    if priors.iter().any(Option::is_some) {
        let warm: Vec<String> = strategies.iter().map(|s| format!("{s}+transfer")).collect();
        strategies.extend(warm);
    }
    let seeds: Vec<u64> = (args.seed_base..args.seed_base + args.seeds).collect();
    if args.no_warp || args.no_alignment {
        let on = |off: bool| if off { "off" } else { "on" };
        println!(
            "Bayesian models: output warping {}, alignment coordinates {} (not the default)",
            on(args.no_warp),
            on(args.no_alignment)
        );
    }
    let file = run_all(&args, &spaces, &priors, &strategies, &seeds)?;
    if let Some(p) = &args.traces {
        let text = serde_json::to_string(&file).map_err(|e| e.to_string())?;
        std::fs::write(p, text).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    }
    let baselines: Vec<(String, Baseline)> = spaces
        .iter()
        .filter_map(|(name, r)| Baseline::new(&r.table, args.budget.cap).map(|b| (name.clone(), b)))
        .collect();
    let mut table = Table::score(&file, &baselines, args.budget.cap, "");
    let mut lines = curves(&file, &baselines, args.budget.cap, "");
    let mut peers = Vec::new();
    for arg in &args.compare {
        let (label, path) = parse_peer_arg(arg);
        peers.push(Peer::load(&label, &path).map_err(|e| e.to_string())?);
    }
    add_peers(&peers, &baselines, args.budget.cap, &mut table, &mut lines);
    print!("{}", table.render());
    if strategies.contains(&args.versus) {
        for peer in &peers {
            let duels = versus(&file, &args.versus, peer, &baselines, args.budget.cap);
            print!("\n{}", render_versus(&args.versus, &duels));
        }
    }
    if args.match_aoe_ga {
        print_aoe_ga_match(&args, &spaces, &seeds, &file, &default)?;
    }
    if let Some(p) = &args.svg {
        let title = format!(
            "gap to the optimum over {} spaces, {} seeds (lower is better)",
            spaces.len(),
            args.seeds
        );
        std::fs::write(p, svg(&lines, &title))
            .map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    }
    Ok(())
}

/// The comma-separated strategy names of `--strategies`, each checked against the registry.
fn strategy_names(list: &str) -> Result<Vec<String>, String> {
    let strategies: Vec<String> = list
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    for s in &strategies {
        if by_name(s, 0).is_none() {
            return Err(format!(
                "unknown strategy `{s}`; expected one of {}",
                STRATEGY_NAMES.join(", ")
            ));
        }
    }
    Ok(strategies)
}

/// The replayable spaces of the given cache files, each named by its path, with a summary of
/// each printed to stderr.
fn load_spaces(caches: &[PathBuf]) -> Result<Vec<(String, ReplaySpace)>, String> {
    let mut spaces = Vec::new();
    for path in caches {
        let r = ReplaySpace::load_auto(path).map_err(|e| e.to_string())?;
        eprintln!(
            "loaded {}: {} valid configurations ({} failed, {:?})",
            path.display(),
            r.space.len(),
            r.table.iter().filter(|v| v.is_none()).count(),
            r.source
        );
        spaces.push((path.display().to_string(), r));
    }
    Ok(spaces)
}

/// Every strategy (a `NAME+transfer` one with its space's prior) on every space with every seed,
/// `args.budget` evaluations each, on `args.jobs` threads, with progress on stderr; the traces
/// by space and strategy, in seed order.
fn run_all(
    args: &Args,
    spaces: &[(String, ReplaySpace)],
    priors: &[Option<Arc<Prior>>],
    strategies: &[String],
    seeds: &[u64],
) -> Result<TraceFile, String> {
    let tasks: Vec<(usize, usize, u64)> = (0..spaces.len())
        .flat_map(|sp| {
            (0..strategies.len()).flat_map(move |st| seeds.iter().map(move |&s| (sp, st, s)))
        })
        .collect();
    let bayes = BayesConfig {
        warp: !args.no_warp,
        alignment: !args.no_alignment,
        ..BayesConfig::default()
    };
    let results: Mutex<Vec<Option<Trace>>> = Mutex::new(vec![None; tasks.len()]);
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let start = std::time::Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..args.jobs.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(sp, st, seed)) = tasks.get(i) else {
                    break;
                };
                let name = &strategies[st];
                let (base, prior) = match name.strip_suffix("+transfer") {
                    Some(base) => (base, priors[sp].clone()),
                    None => (name.as_str(), None),
                };
                let driver = Driver {
                    batch: args.batch as usize,
                    stop_rule: args.budget.stop_rule(),
                    ..Driver::new(args.budget.cap)
                };
                let trace = run_with(&spaces[sp].1, base, seed, &driver, prior, &bayes);
                if let Ok(mut r) = results.lock() {
                    r[i] = trace;
                }
                let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                if d.is_multiple_of(25) || d == tasks.len() {
                    eprintln!(
                        "[{d}/{}] {:.0}s  {} on {}",
                        tasks.len(),
                        start.elapsed().as_secs_f64(),
                        strategies[st],
                        spaces[sp].0
                    );
                }
            });
        }
    });
    let results = results
        .into_inner()
        .map_err(|_| "a worker panicked".to_string())?;
    let mut file: TraceFile = BTreeMap::new();
    for (&(sp, st, _), t) in tasks.iter().zip(results) {
        file.entry(spaces[sp].0.clone())
            .or_default()
            .entry(strategies[st].clone())
            .or_default()
            .push(t.unwrap_or_default());
    }
    Ok(file)
}

/// `--match-aoe-ga`: per space, the evaluations `default` (whose traces are in `file`) needs to
/// match AOE-GA's median best at `--aoe-ga-budget`, printed for AOE's default settings and for
/// the same without the early stop.
fn print_aoe_ga_match(
    args: &Args,
    spaces: &[(String, ReplaySpace)],
    seeds: &[u64],
    file: &TraceFile,
    default: &str,
) -> Result<(), String> {
    let variants = [
        ("aoe-ga (AOE's defaults)", AoeGaConfig::default()),
        (
            "aoe-ga without its early stop",
            AoeGaConfig::default().without_early_stop(),
        ),
    ];
    for (label, config) in variants {
        let reference = aoe_runs(spaces, seeds, args.aoe_ga_budget, args.jobs, &config)?;
        let label = format!("{label} at {}", args.aoe_ga_budget);
        let warm = format!("{default}+transfer");
        for ours in [default, warm.as_str()] {
            let rows: Vec<MatchRow> = spaces
                .iter()
                .zip(&reference)
                .filter_map(|((name, _), theirs)| {
                    let runs = file.get(name)?.get(ours)?;
                    let row = MatchRow::new(name, runs, theirs)?.with_batch(args.batch as usize);
                    Some(if args.budget.auto {
                        row.with_auto_stop()
                    } else {
                        row
                    })
                })
                .collect();
            if !rows.is_empty() {
                print!("\n{}", render_match(ours, &label, args.budget.cap, &rows));
            }
        }
    }
    Ok(())
}

/// `seeds.len()` runs of AOE's genetic tuner with `config` on each space, `budget` evaluations
/// each, on `jobs` threads; per space, the traces in seed order.
fn aoe_runs(
    spaces: &[(String, ReplaySpace)],
    seeds: &[u64],
    budget: usize,
    jobs: usize,
    config: &AoeGaConfig,
) -> Result<Vec<Vec<Trace>>, String> {
    let tasks: Vec<(usize, u64)> = (0..spaces.len())
        .flat_map(|sp| seeds.iter().map(move |&s| (sp, s)))
        .collect();
    let results: Mutex<Vec<Trace>> = Mutex::new(vec![Vec::new(); tasks.len()]);
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(sp, seed)) = tasks.get(i) else {
                    break;
                };
                let mut ga = AoeGa::new(seed, config.clone());
                let trace = run_strategy(&spaces[sp].1, &mut ga, budget);
                if let Ok(mut r) = results.lock() {
                    r[i] = trace;
                }
            });
        }
    });
    let results = results
        .into_inner()
        .map_err(|_| "a worker panicked".to_string())?;
    let mut out = vec![Vec::new(); spaces.len()];
    for (&(sp, _), t) in tasks.iter().zip(results) {
        out[sp].push(t);
    }
    Ok(out)
}

/// The transfer prior of each loaded space (`None` without `--transfer`/`--transfer-from`),
/// with the sources it uses printed to stderr.
fn priors(
    args: &Args,
    spaces: &[(String, ReplaySpace)],
) -> Result<Vec<Option<Arc<Prior>>>, String> {
    let mut from = Vec::new();
    for path in &args.transfer_from {
        let r = ReplaySpace::load_auto(path).map_err(|e| e.to_string())?;
        from.push((path.display().to_string(), r));
    }
    if args.transfer.is_none() && from.is_empty() {
        return Ok(vec![None; spaces.len()]);
    }
    let mut out = Vec::with_capacity(spaces.len());
    for (name, target) in spaces {
        let candidates: Vec<&(String, ReplaySpace)> = if let Some(mode) = &args.transfer {
            let same = mode == "leave-one-out";
            spaces
                .iter()
                .filter(|(n, r)| n != name && target.same_kernel(r) == same)
                .collect()
        } else {
            from.iter().filter(|(n, _)| !same_file(n, name)).collect()
        };
        let sources: Vec<Source> = candidates
            .iter()
            .map(|(n, r)| Source::from_replay(n.clone(), r, 1.0))
            .collect();
        let prior = Prior::new(&target.space, &sources);
        let labels: Vec<&str> = (0..prior.len()).map(|i| prior.label(i)).collect();
        eprintln!("transfer to {name}: from [{}]", labels.join(", "));
        out.push(Some(Arc::new(prior)));
    }
    Ok(out)
}

/// True when two paths name the same file.
fn same_file(a: &str, b: &str) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// Scores each peer's traces into `table` and adds its three best strategies' mean curves (by
/// mean standardised score) to `lines`.
fn add_peers(
    peers: &[Peer],
    baselines: &[(String, Baseline)],
    budget: usize,
    table: &mut Table,
    lines: &mut Vec<(String, Vec<f64>)>,
) {
    for peer in peers {
        let other = &peer.traces;
        let prefix = format!("{}:", peer.label);
        table
            .rows
            .extend(Table::score(other, baselines, budget, "").rows);
        // Draw the other tuner's three best strategies by mean standardised score.
        let best: Vec<String> = table
            .means()
            .into_iter()
            .map(|(name, _)| name)
            .filter(|n| n.starts_with(&prefix))
            .take(3)
            .collect();
        let theirs = curves(other, baselines, budget, "");
        for name in &best {
            if let Some(c) = theirs.iter().find(|c| &c.0 == name) {
                lines.push(c.clone());
            }
        }
    }
}
