//! `tunebank tune` and `tunebank convert`: flags, environment, progress and summary printing
//! over `tunebank::tune` and `tunebank::report`.

use std::collections::BTreeSet;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, Context, Result};
use tunebank::bank::{Bank, Lookup};
use tunebank::key::{FsReader, RecordKind, ResolvedOptions};
use tunebank::model::load_onnx;
use tunebank::report::ResultFile;
use tunebank::tune::{self, memory, TaskOutcome, TuneObserver, TunePlan, TuneSettings};

/// Set by SIGINT/SIGTERM; the driver stops cooperatively when it is set.
static CANCEL: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    CANCEL.store(true, Ordering::SeqCst);
}

fn install_signal_handlers() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe; the sigaction
    // struct is fully initialised before use.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
}

/// tunebank's own flags of `tune` (the model, job type, framework, SoC and every ATC option
/// are ATC-style flags: `--model=m.onnx --job_type=2 --soc_version=Ascend910B2 ...`).
#[derive(clap::Args, Debug)]
pub struct TuneArgs {
    /// Runner: sim, sim:SEED (simulator with seeded noise), cpu, or exec:COMMAND.
    #[arg(long, default_value = "sim")]
    runner: String,
    /// Search strategy: ensemble, bayes_opt, genetic, annealing, random, exhaustive.
    #[arg(long, default_value = "ensemble")]
    strategy: String,
    /// Candidates measured per op at most.
    #[arg(long, default_value_t = 64)]
    budget: usize,
    /// Seconds of search per op at most.
    #[arg(long = "time-budget-s")]
    time_budget_s: Option<f64>,
    /// Candidates measured over the whole job at most.
    #[arg(long = "total-budget")]
    total_budget: Option<u64>,
    /// Seconds for the whole job at most; ops not started by then are left for a rerun.
    #[arg(long = "total-time-s")]
    total_time_s: Option<f64>,
    /// Seed of the searches.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Custom bank file; overrides TUNE_BANK_PATH / ASCEND_CACHE_PATH / the $HOME default.
    #[arg(long)]
    bank: Option<PathBuf>,
    /// Directory of the result file; default $ASCEND_WORK_PATH, else the working directory.
    #[arg(long = "output-dir")]
    output_dir: Option<PathBuf>,
}

/// tunebank's own flags of `convert`.
#[derive(clap::Args, Debug)]
pub struct ConvertArgs {
    /// Custom bank file; overrides TUNE_BANK_PATH / ASCEND_CACHE_PATH / the $HOME default.
    #[arg(long)]
    bank: Option<PathBuf>,
    /// Extra read-only built-in bank file (repeatable), consulted after the custom bank.
    #[arg(long = "builtin-bank")]
    builtin: Vec<PathBuf>,
    /// Exit with status 1 if any op misses.
    #[arg(long)]
    error_on_miss: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Rewrites `--job-type op|subgraph|gradient` into AOE's `--job_type=2|1|4`.
fn normalise_job_type(atc: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(atc.len());
    let mut it = atc.iter();
    while let Some(a) = it.next() {
        let Some(body) = a.strip_prefix("--") else {
            out.push(a.clone());
            continue;
        };
        let (name, value) = match body.split_once('=') {
            Some((n, v)) => (n.replace('-', "_"), Some(v.to_owned())),
            None => (body.replace('-', "_"), None),
        };
        if name != "job_type" {
            out.push(a.clone());
            continue;
        }
        let value = value.or_else(|| it.next().cloned()).unwrap_or_default();
        let mapped = match value.as_str() {
            "op" => "2",
            "subgraph" => "1",
            "gradient" => "4",
            v => v,
        };
        out.push(format!("--job_type={mapped}"));
    }
    out
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn env_positive(name: &str) -> Result<Option<usize>> {
    match env_nonempty(name) {
        None => Ok(None),
        Some(v) => match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(Some(n)),
            _ => bail!("environment variable {name}={v:?}: expected a positive integer"),
        },
    }
}

fn repeat_tune() -> Result<bool> {
    match env_nonempty("REPEAT_TUNE") {
        None => Ok(false),
        Some(v) => match v.trim().to_ascii_lowercase().as_str() {
            "true" | "1" => Ok(true),
            "false" | "0" => Ok(false),
            _ => bail!("environment variable REPEAT_TUNE={v:?}: expected True or False"),
        },
    }
}

struct Loaded {
    soc: tunebank::key::SocSpec,
    model_path: String,
    plan: TunePlan,
}

/// Options, model, plan: everything that can be bad input, before anything is opened for write.
fn load(atc: &[String], only: Option<&BTreeSet<String>>) -> Result<Loaded> {
    let options = ResolvedOptions::from_args(atc, &FsReader)?;
    let soc = options.soc()?;
    let model_path = options
        .given()
        .get("model")
        .cloned()
        .filter(|m| !m.is_empty())
        .context("--model: expected the ONNX model to tune, e.g. --model=resnet50.onnx")?;
    let model = load_onnx(&model_path)?;
    let plan = tune::plan(&model, &options, &soc, only)?;
    Ok(Loaded {
        soc,
        model_path,
        plan,
    })
}

fn print_skipped(plan: &TunePlan) {
    for s in &plan.skipped {
        eprintln!(
            "tunebank: skipped {} ({}): {}",
            s.node_name, s.op_type, s.reason
        );
    }
}

fn read_tune_ops_file(path: &str) -> Result<BTreeSet<String>> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!("--tune_ops_file {path}: cannot read it; expected a file with one op name or op type per line")
    })?;
    Ok(text
        .lines()
        .flat_map(|l| l.split(','))
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect())
}

/// Per-worker memory estimate by runner: a simulator is small; host kernels and device
/// compilations are not. `TUNEBANK_WORKER_MEMORY_MB` overrides it.
fn worker_memory_bytes(runner: &str) -> Result<u64> {
    if let Some(mb) = env_positive("TUNEBANK_WORKER_MEMORY_MB")? {
        return Ok(mb as u64 * (1 << 20));
    }
    Ok(if runner.starts_with("sim") {
        256 << 20
    } else if runner == "cpu" {
        1 << 30
    } else {
        4 << 30
    })
}

struct Progress {
    tty: bool,
    start: Instant,
    started: bool,
}

impl TuneObserver for Progress {
    fn finished(&mut self, plan: &TunePlan, o: &TaskOutcome, done: usize, total: usize) {
        let name = &plan.tasks[o.task].op_names[0];
        let mut err = std::io::stderr().lock();
        if self.tty {
            if !self.started {
                self.start = Instant::now();
                self.started = true;
            }
            let frac = done as f64 / total.max(1) as f64;
            let width = 30;
            let filled = (frac * width as f64).round() as usize;
            let el = self.start.elapsed().as_secs_f64();
            let eta = if done > 0 && done < total {
                format!("ETA {:.0}s", el / frac - el)
            } else {
                String::new()
            };
            let _ = write!(
                err,
                "\r\x1b[2K[{}{}] {done}/{total} ops  {eta}  {}",
                "=".repeat(filled),
                " ".repeat(width - filled),
                short(name, 40)
            );
            if done == total {
                let _ = writeln!(err);
            }
        } else {
            let times = match (o.before_us, o.after_us) {
                (Some(b), Some(a)) => format!("  {b:.3} -> {a:.3} us"),
                _ => String::new(),
            };
            let fail = match (&o.failure, &o.unsupported) {
                (Some(f), _) => format!("  (failed: {f})"),
                (None, Some(u)) => format!("  (not tuned: {u})"),
                _ if o.default_confirmed() => "  (default confirmed, stored)".to_owned(),
                _ => String::new(),
            };
            let _ = writeln!(
                err,
                "[{done}/{total}] {:<11} {}{times}{fail}",
                o.decision.as_str(),
                short(name, 60)
            );
        }
    }
}

fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        let tail: String = s
            .chars()
            .rev()
            .take(n - 1)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        format!("…{tail}")
    }
}

/// `tunebank tune`.
pub fn tune(args: TuneArgs, atc: &[String]) -> Result<ExitCode> {
    let atc = normalise_job_type(atc);
    if let Some(mode) = env_nonempty("AOE_MODE") {
        if mode.trim() != "2" {
            bail!("AOE_MODE={mode}: only operator tuning (2, OPAT) is supported yet; subgraph (1) and gradient (4) tuning are not supported yet");
        }
    }
    // Options first: the job type must be checked before anything else happens.
    let options = ResolvedOptions::from_args(&atc, &FsReader)?;
    let job = options.canonical("job_type").unwrap_or("2").to_owned();
    if job != "2" {
        bail!("--job_type={job}: only operator tuning (--job_type=2, --job-type op) is supported yet; subgraph and gradient tuning are not supported yet");
    }
    let only = match options
        .given()
        .get("tune_ops_file")
        .filter(|s| !s.is_empty())
    {
        Some(f) => Some(read_tune_ops_file(f)?),
        None => None,
    };
    let repeat = repeat_tune()?;
    let requested = match env_positive("TUNING_PARALLEL_NUM")? {
        Some(n) => n,
        None => std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(8),
    };
    let batch = env_positive("TE_PARALLEL_COMPILER")?.unwrap_or(8);
    if let Some(d) = env_nonempty("ASCEND_DEVICE_ID") {
        if d.trim().parse::<u32>().is_err() {
            bail!("environment variable ASCEND_DEVICE_ID={d:?}: expected a device number");
        }
    }
    let secs = |s: Option<f64>, flag: &str| -> Result<Option<Duration>> {
        match s {
            None => Ok(None),
            Some(v) if v.is_finite() && v > 0.0 => Ok(Some(Duration::from_secs_f64(v))),
            Some(v) => bail!("{flag} {v}: expected a positive number of seconds"),
        }
    };
    if args.budget == 0 {
        bail!("--budget 0: expected at least one candidate per op");
    }
    let mut settings = TuneSettings {
        runner: args.runner.clone(),
        strategy: args.strategy.clone(),
        seed: args.seed,
        trials_per_op: args.budget,
        time_per_op: secs(args.time_budget_s, "--time-budget-s")?,
        total_trials: args.total_budget,
        total_time: secs(args.total_time_s, "--total-time-s")?,
        repeat_tune: repeat,
        workers: 1,
        batch,
        options_given: options.given().clone(),
        ..TuneSettings::default()
    };
    tune::check_settings(&settings)?;
    let loaded = load(&atc, only.as_ref())?;
    print_skipped(&loaded.plan);
    let per_worker = worker_memory_bytes(&settings.runner)?;
    let available = memory::available_memory();
    let (workers, capped) = memory::cap_workers(requested, per_worker, available);
    if capped {
        let a = available.map(|a| a.bytes >> 20).unwrap_or(0);
        eprintln!(
            "tunebank: TUNING_PARALLEL_NUM={requested} capped to {workers} worker(s): {a} MiB available, about {} MiB needed per worker",
            per_worker >> 20
        );
    }
    settings.workers = workers;

    // Nothing is written before this point.
    let mut builder = Bank::builder(RecordKind::Op, &loaded.soc.version).read_only(false);
    if let Some(p) = &args.bank {
        builder = builder.custom_path(p);
    }
    let bank = builder.open()?;
    let dir = match (&args.output_dir, env_nonempty("ASCEND_WORK_PATH")) {
        (Some(d), _) => d.clone(),
        (None, Some(w)) => PathBuf::from(w),
        (None, None) => std::env::current_dir()?,
    };
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the result directory {}", dir.display()))?;
    let result = ResultFile::opat(&dir, SystemTime::now(), std::process::id());
    let name = Path::new(&loaded.model_path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    eprintln!(
        "tunebank: tuning {} ({} ops, {} unique keys) on {} with runner {}, strategy {}, budget {}/op, {} worker(s){}",
        loaded.model_path,
        loaded.plan.units.len(),
        loaded.plan.tasks.len(),
        loaded.soc.version,
        settings.runner,
        settings.strategy,
        settings.trials_per_op,
        settings.workers,
        if repeat { ", REPEAT_TUNE" } else { "" }
    );
    eprintln!(
        "tunebank: bank {}; result file {}",
        bank.custom_file()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        result.path.display()
    );
    install_signal_handlers();
    let mut progress = Progress {
        tty: std::io::stderr().is_terminal(),
        start: Instant::now(),
        started: false,
    };
    let summary = tune::run(
        &loaded.plan,
        &bank,
        &settings,
        &name,
        Some(&result),
        &CANCEL,
        &mut progress,
    )?;
    print_summary(&loaded.plan, &summary, &result, settings.workers)?;
    Ok(if summary.interrupted && CANCEL.load(Ordering::SeqCst) {
        eprintln!("tunebank: interrupted; finished ops are in the bank, a rerun continues");
        ExitCode::from(130)
    } else if summary.interrupted {
        eprintln!("tunebank: the job's total budget ran out; a rerun continues");
        ExitCode::SUCCESS
    } else if summary.report.failed_ops.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn print_summary(
    plan: &TunePlan,
    summary: &tune::TuneSummary,
    result: &ResultFile,
    workers: usize,
) -> Result<()> {
    let mut out = std::io::stdout().lock();
    let s = &summary.report.summary;
    writeln!(
        out,
        "\n{:<56} {:<11} {:>11} {:>11} {:>8} {:>6}",
        "op", "decision", "before(us)", "after(us)", "gain", "trials"
    )?;
    for o in &summary.outcomes {
        let t = &plan.tasks[o.task];
        let f = |x: Option<f64>| x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".into());
        let gain = match (o.before_us, o.after_us) {
            _ if o.default_confirmed() => "default".into(),
            (Some(b), Some(a)) if o.record.is_some() => tunebank::report::improvement(b, a),
            _ => "-".into(),
        };
        let mut label = short(&t.op_names[0], 52);
        if t.op_names.len() > 1 {
            label = format!("{label} ×{}", t.op_names.len());
        }
        let decision = if o.failure.is_some() {
            "failed"
        } else {
            o.decision.as_str()
        };
        writeln!(
            out,
            "{label:<56} {decision:<11} {:>11} {:>11} {gain:>8} {:>6}",
            f(o.before_us),
            f(o.after_us),
            o.trials
        )?;
    }
    writeln!(
        out,
        "\n{}: total {}  add {}  hit {}  update {}  reserved {}  unsatisfied {}",
        summary.report.result.as_str(),
        s.total,
        s.add,
        s.hit,
        s.update,
        s.reserved,
        s.unsatisfied
    )?;
    let confirmed = summary
        .outcomes
        .iter()
        .filter(|o| o.default_confirmed())
        .count();
    if confirmed > 0 {
        writeln!(
            out,
            "{confirmed} unsatisfied op(s) kept the default strategy, now stored as confirmed: reruns and convert hit it; REPEAT_TUNE=True searches again"
        )?;
    }
    let st = &summary.stats;
    writeln!(
        out,
        "time: wall {:.2} s; {} candidates measured; thread time: runner measuring {:.3} s, runner building spaces {:.3} s, outside the runner {:.3} s = search strategy {:.3} s + bank and result file {:.3} s ({:.2}% of work, {} worker(s))",
        st.wall.as_secs_f64(),
        st.trials,
        st.measure.as_secs_f64(),
        st.runner_setup.as_secs_f64(),
        st.outside.as_secs_f64(),
        st.search.as_secs_f64(),
        st.bank_report.as_secs_f64(),
        100.0 * st.outside_share(),
        workers
    )?;
    writeln!(out, "result file: {}", result.path.display())?;
    Ok(())
}

/// `tunebank convert`.
pub fn convert(args: ConvertArgs, atc: &[String]) -> Result<ExitCode> {
    let atc = normalise_job_type(atc);
    let loaded = load(&atc, None)?;
    print_skipped(&loaded.plan);
    let mut builder = Bank::builder(RecordKind::Op, &loaded.soc.version).read_only(true);
    if let Some(p) = &args.bank {
        builder = builder.custom_path(p);
    }
    for p in &args.builtin {
        builder = builder.builtin_path(p);
    }
    let bank = builder.open()?;
    let mut out = std::io::stdout().lock();
    let (mut hits, mut defaults, mut rows) = (0u64, 0u64, Vec::new());
    for u in &loaded.plan.units {
        let r = &u.resolved;
        let answer = bank.lookup(&r.key)?;
        let (result, layer, default_confirmed) = match &answer {
            Lookup::Hit(h) => {
                hits += 1;
                let d = h.answer.performance.default_confirmed;
                defaults += u64::from(d);
                ("hit", Some(h.layer.to_string()), d)
            }
            Lookup::Miss { .. } => ("miss", None, false),
        };
        if args.json {
            rows.push(serde_json::json!({
                "op_name": u.unit.name,
                "op_type": u.unit.op_types,
                "profile": r.profile,
                "key": r.key.to_string(),
                "result": result,
                "layer": layer,
                "default_confirmed": default_confirmed,
            }));
        } else {
            let how = match &layer {
                Some(l) if default_confirmed => format!("hit ({l}, default)"),
                Some(l) => format!("hit ({l})"),
                None => "miss".to_owned(),
            };
            writeln!(
                out,
                "{how:<26}{}\t{}\t{}",
                r.key,
                u.unit.op_types.join("+"),
                u.unit.name
            )?;
        }
    }
    let total = loaded.plan.units.len() as u64;
    if args.json {
        let doc = serde_json::json!({
            "model": loaded.model_path,
            "soc_version": loaded.soc.version,
            "ops": rows,
            "hits": hits,
            "default_confirmed_hits": defaults,
            "misses": total - hits,
            "total": total,
            "skipped": loaded.plan.skipped.iter().map(|s| serde_json::json!({
                "node_name": s.node_name, "op_type": s.op_type, "reason": s.reason,
            })).collect::<Vec<_>>(),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        let pct = if total > 0 {
            100.0 * hits as f64 / total as f64
        } else {
            100.0
        };
        writeln!(out, "{hits}/{total} ops hit ({pct:.1}%)")?;
        if defaults > 0 {
            writeln!(
                out,
                "{defaults} of the hits are a default strategy confirmed by tuning (no clear win found)"
            )?;
        }
    }
    Ok(if args.error_on_miss && hits < total {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
