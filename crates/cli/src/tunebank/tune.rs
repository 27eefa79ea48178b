//! `tunebank tune`: operator (OPAT), subgraph (SGAT) or gradient (GDAT) tuning of an ONNX
//! model. The flags become a [`JobSpec`]; the library validates and plans it
//! ([`JobSpec::resolve`]) and runs it ([`tunebank_jobs::job::Job::run_until`]); this module draws
//! the progress, prints the summary and writes the pictures.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tunebank_jobs::job::{
    normalise_job_type, Environment, Finished, Job, JobOutcome, JobReport, JobSpec, JobType,
    Observer, Started,
};
use tunebank_jobs::tune::opat::TuneTable;
use tunebank_measure::RunnerSpec;

use super::progress::{install_signal_handlers, Progress, CANCEL};
/// tunebank's own flags of `tune` (the model, job type, framework, SoC and every ATC option
/// are ATC-style flags: `--model=m.onnx --job_type=2 --soc_version=Ascend910B2 ...`).
#[derive(clap::Args, Debug)]
pub struct TuneArgs {
    /// Runner: sim, sim:SEED (simulator with seeded noise), cpu, or exec:COMMAND.
    #[arg(long, default_value = "sim")]
    pub runner: RunnerSpec,
    /// The simulator's SoC description: a CANN `platform_config/<SoC>.ini` file, or a folder
    /// of them; it takes precedence over the installed toolkit's file (under the first of
    /// $ASCEND_TOOLKIT_HOME, $ASCEND_HOME_PATH, $HOME/Ascend/ascend-toolkit/latest and
    /// /usr/local/Ascend/ascend-toolkit/latest holding it, as for aoe.ini) and the built-in
    /// CANN 8.1 copy.
    /// Keys never read it: they use the built-in files.
    #[arg(long = "platform-config", value_name = "FILE|DIR")]
    pub platform_config: Option<PathBuf>,
    /// Search strategy: ensemble, bayes_opt, tpe, genetic, annealing, random, exhaustive,
    /// aoe-ga (AOE's operator-tuner genetic algorithm, its default settings), aoe-ga-hp (its
    /// high-performance settings on 910).
    #[arg(long, default_value = "ensemble")]
    pub strategy: String,
    /// Candidates measured per op at most. AOE's genetic tuner measures up to 500; the default
    /// strategy matches its 500-trial result after a median of 26 measurements on the dev
    /// spaces (README, "Budgets against AOE's"). `auto` (`auto:N`): a search (an op's, a
    /// subgraph's, GDAT's split search) stops when the strategy's model expects less than 1 %
    /// from one more measurement, three rounds in a row after at least 20, and at 200 (N) at
    /// most; the summary says how many stopped so.
    #[arg(long, default_value = "64")]
    pub budget: search_strategies::Budget,
    /// Seconds of search per op at most.
    #[arg(long = "time-budget-s")]
    pub time_budget_s: Option<f64>,
    /// Candidates measured over the whole job at most.
    #[arg(long = "total-budget")]
    pub total_budget: Option<u64>,
    /// Seconds for the whole job at most; ops not started by then are left for a rerun.
    #[arg(long = "total-time-s")]
    pub total_time_s: Option<f64>,
    /// Seed of the searches.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Measurement slots: candidates the runners measure at once (AOE's TUNING_PARALLEL_NUM,
    /// which it takes when this is not given, then aoe.ini's, then the cores up to 8; capped by
    /// available memory). Operator tuning searches up to this many ops at a time and deals the
    /// slots out among them as batch widths (one op: all of them per round) unless
    /// TE_PARALLEL_COMPILER fixes the width.
    #[arg(long = "tuning_parallel_num", value_name = "N", value_parser = clap::value_parser!(u64).range(1..=64))]
    pub tuning_parallel_num: Option<u64>,
    /// Search every miss cold. By default a miss's search starts from the winners of related
    /// bank records (the same IR op type with other shapes, or on other SoCs), read once when
    /// the job starts; the result file names them (`tunebank_transfer`).
    #[arg(long = "no-transfer")]
    pub no_transfer: bool,
    /// A range in --input_shape (x:1~2048,768) is tuned at N shapes at most: its ends and the
    /// powers of two between, thinned to powers of four, sixteen … until they fit (default:
    /// all of them, at most 100).
    #[arg(long = "range-shapes", value_name = "N")]
    pub range_shapes: Option<usize>,
    /// Shapes the model is seen with in service, one a line: the ranged dims' values and how
    /// often ("3,777 12"); a range is tuned at the ones that serve the others best (at most
    /// --range-shapes).
    #[arg(long = "shape-samples", value_name = "FILE")]
    pub shape_samples: Option<PathBuf>,
    /// Custom bank file; overrides TUNE_BANK_PATH / ASCEND_CACHE_PATH / the $HOME default.
    #[arg(long)]
    pub bank: Option<PathBuf>,
    /// Graph bank file. Subgraph tuning (`--job_type=1`) writes its winners there (default:
    /// `--bank`, else TUNE_BANK_PATH / ASCEND_CACHE_PATH/aoe_data / the $HOME default; with
    /// `--graph-bank`, `--bank` names the op bank read for node strategies); operator tuning
    /// applies it first and tunes the post-SGAT ops (default: the same resolution; none found:
    /// the fused ops as they are).
    #[arg(long = "graph-bank", value_name = "FILE")]
    pub graph_bank: Option<PathBuf>,
    /// Directory of the result file; default $ASCEND_WORK_PATH, else aoe.ini's WORK_PATH, else
    /// the working directory.
    #[arg(long = "output-dir")]
    pub output_dir: Option<PathBuf>,
    /// AOE's aoe.ini (WORK_PATH, TUNING_PARALLEL_NUM, RUN_LOOP); default: the first that
    /// exists of $ASCEND_TOOLKIT_HOME, $ASCEND_HOME_PATH, $HOME/Ascend/ascend-toolkit/latest,
    /// /usr/local/Ascend/ascend-toolkit/latest, each + /tools/aoe/conf/aoe.ini.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// AOE's -j: --job_type (1: subgraph, 2: operator, 4: gradient tuning).
    #[arg(short = 'j', value_name = "JOB_TYPE")]
    pub short_job_type: Option<String>,
    /// AOE's -f: --framework (0: Caffe, 1: MindSpore MindIR, 3: TensorFlow, 5: ONNX).
    #[arg(short = 'f', value_name = "FRAMEWORK")]
    pub short_framework: Option<String>,
    /// AOE's -m: --model.
    #[arg(short = 'm', value_name = "MODEL")]
    pub short_model: Option<String>,
    /// AOE's -w: --weight (a Caffe model's .caffemodel weight file).
    #[arg(short = 'w', value_name = "WEIGHT")]
    pub short_weight: Option<String>,
    /// Distributed tuning (operator jobs): the PostgreSQL queue (postgres://…) to submit the
    /// job to; `tunebank worker`s on any host tune its tasks into the shared `--bank`.
    #[arg(long, value_name = "URL")]
    pub queue: Option<String>,
    /// With --queue: print the job's id and exit without waiting (`tunebank job status`).
    #[arg(long, requires = "queue")]
    pub detach: bool,
    /// No live progress bar, even on a terminal: one plain line per finished op.
    #[arg(long)]
    pub quiet: bool,
    /// Gradient tuning (`--job_type=4`) flags.
    #[command(flatten)]
    pub gdat: super::tune_gdat::GdatArgs,
}

/// Tunes the model; exit 0 done, 1 some op failed or none tuned, 130 interrupted (a rerun continues).
pub fn run(args: TuneArgs, atc: &[String]) -> Result<ExitCode> {
    let spec = job_spec(&args, atc)?;
    let env = Environment::process();
    if let Some(url) = &args.queue {
        if spec.job_type(&env)? != JobType::Op {
            bail!("--queue: only operator tuning (--job_type=2) is queued");
        }
        let job = resolve(&spec, &env)?;
        return super::tune_queue::run(args.detach, &job, url);
    }
    let job = resolve(&spec, &env)?;
    // Nothing is written before this point.
    install_signal_handlers();
    let mut shown = Shown {
        job: &job,
        progress: Progress::new(std::io::stderr().is_terminal() && !args.quiet),
        per_task: false,
    };
    let report = job.run_until(&CANCEL, &mut shown)?;
    write!(
        std::io::stdout().lock(),
        "{}",
        report.render(crate::entry::stdout_width())
    )?;
    pictures(&args, &report)?;
    Ok(exit_code(&report))
}

/// The job the flags and ATC options describe: AOE's short flags and `--job-type` spellings
/// rewritten, the durations checked.
fn job_spec(args: &TuneArgs, atc: &[String]) -> Result<JobSpec> {
    let atc = normalise_job_type(&aoe_short_flags(args, atc)?);
    let mut spec = JobSpec::new(atc);
    spec.runner = args.runner.clone();
    spec.strategy = args.strategy.clone();
    spec.budget = args.budget.cap;
    spec.auto_stop = args.budget.auto;
    spec.time_budget = seconds(args.time_budget_s, "--time-budget-s")?;
    spec.total_budget = args.total_budget;
    spec.total_time = seconds(args.total_time_s, "--total-time-s")?;
    spec.seed = args.seed;
    spec.workers = args.tuning_parallel_num.map(|n| n as usize);
    spec.transfer = !args.no_transfer;
    spec.range_shapes = args.range_shapes;
    spec.shape_samples = args.shape_samples.clone();
    spec.bank = args.bank.clone();
    spec.graph_bank = args.graph_bank.clone();
    // SGAT with `--graph-bank`: `--bank` names the op bank read for node strategies.
    spec.op_bank = args.graph_bank.as_ref().and(args.bank.clone());
    spec.output_dir = args.output_dir.clone();
    spec.config = args.config.clone();
    spec.platform_config = args.platform_config.clone();
    let g = &args.gdat;
    spec.gradient.rank_size = g.cluster.rank_size;
    spec.gradient.devices_per_server = g.cluster.devices_per_server;
    spec.gradient.cluster = g.cluster.cluster.clone();
    spec.gradient.max_segments = g.max_segments;
    Ok(spec)
}

/// The job resolved, with what the library decided that users should hear on standard error:
/// the ops left out, and workers capped by memory.
pub(super) fn resolve(spec: &JobSpec, env: &Environment) -> Result<Job> {
    let job = spec.resolve(env)?;
    report_skipped(job.skipped());
    let w = job.workers();
    if let Some(available) = w.available {
        eprintln!(
            "tunebank: TUNING_PARALLEL_NUM={} capped to {} worker(s): {} MiB available, about {} MiB needed per worker",
            w.requested,
            w.workers,
            available >> 20,
            w.per_worker >> 20
        );
    }
    Ok(job)
}

/// Tells standard error of the ops left out: one line per op skipped for its own reason, with
/// how many ops depending on it were cut off with it (not a line for each of those).
pub(super) fn report_skipped(skipped: &[tunebank_model::SkippedOp]) {
    for s in skipped.iter().filter(|s| s.cause.is_none()) {
        let cut = skipped
            .iter()
            .filter(|o| o.cause.as_ref() == Some(&s.node_name))
            .count();
        let behind = match cut {
            0 => String::new(),
            n => format!("; {n} op(s) depending on it skipped too"),
        };
        eprintln!(
            "tunebank: skipped {} ({}): {}{behind}",
            s.node_name, s.op_type, s.reason
        );
    }
}

/// Rewrites AOE's short flags `-j -f -m -w` (given to `tune` as its own flags) into the ATC
/// options they stand for (`--job_type --framework --model --weight`), appended to `atc`; a
/// short flag and its long form both given is an error.
fn aoe_short_flags(args: &TuneArgs, atc: &[String]) -> Result<Vec<String>> {
    let mut out = atc.to_vec();
    for (short, name, value) in [
        ('j', "job_type", &args.short_job_type),
        ('f', "framework", &args.short_framework),
        ('m', "model", &args.short_model),
        ('w', "weight", &args.short_weight),
    ] {
        let Some(v) = value else { continue };
        let long = format!("--{name}");
        let given_long = atc.iter().any(|a| {
            a.strip_prefix("--")
                .and_then(|b| b.split('=').next())
                .is_some_and(|n| n.replace('-', "_") == name)
        });
        if given_long {
            bail!("-{short} {v} and {long} both given: give one");
        }
        out.push(format!("{long}={v}"));
    }
    Ok(out)
}

/// A `--*-s` flag as a duration, which must be positive.
fn seconds(s: Option<f64>, flag: &str) -> Result<Option<Duration>> {
    match s {
        None => Ok(None),
        Some(v) if v.is_finite() && v > 0.0 => Ok(Some(Duration::from_secs_f64(v))),
        Some(v) => bail!("{flag} {v}: expected a positive number of seconds"),
    }
}

/// What `tune` shows while `job` runs: where it goes when it starts, then OPAT's progress.
struct Shown<'j> {
    job: &'j Job,
    progress: Progress,
    /// Per-task progress is OPAT's (SGAT and GDAT report at the end).
    per_task: bool,
}

/// Which SoC description file the simulator's figures come from.
fn soc_facts(job: &Job) {
    let version = &job.soc().version;
    if let Ok(source) = job.platform_source() {
        eprintln!("tunebank: SoC facts of {version}: {source}");
    }
}

impl Observer for Shown<'_> {
    fn started(&mut self, start: &Started<'_>) {
        let job = self.job;
        let s = job.settings();
        let repeat = if s.repeat_tune { ", REPEAT_TUNE" } else { "" };
        let bank = start
            .bank_file
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let result = start.result_file.display();
        self.per_task = job.plan().is_some();
        if let Some(plan) = job.plan() {
            eprintln!(
                "tunebank: tuning {} ({} ops, {} unique keys) on {} with runner {}, strategy {}, budget {}/op, {} worker(s){repeat}",
                job.model_path(),
                plan.units.len(),
                plan.tasks.len(),
                job.soc().version,
                s.runner,
                s.strategy,
                s.trials_per_op,
                s.workers,
            );
            soc_facts(job);
            if let Some(g) = job.graph_applied() {
                let a = &g.applied;
                let before: usize = a.subgraphs.iter().map(|s| s.units_before).sum();
                eprintln!(
                    "tunebank: graph bank {} applied first: {}/{} subgraphs hit, {before} fused units → {} post-SGAT units",
                    g.files,
                    a.hits(),
                    a.subgraphs.len(),
                    a.units.len()
                );
            }
            eprintln!("tunebank: bank {bank}; result file {result}");
        } else if let Some(plan) = job.sgat_plan() {
            eprintln!(
                "tunebank: SGAT of {} ({} subgraphs, {} unique) on {} with strategy {}, budget {}/subgraph{repeat}",
                job.model_path(),
                plan.subgraphs.len(),
                plan.tasks.len(),
                job.soc().version,
                s.strategy,
                s.trials_per_op,
            );
            soc_facts(job);
            eprintln!("tunebank: graph bank {bank}; result file {result}");
        }
    }

    fn finished(&mut self, task: &Finished<'_>) {
        if self.per_task {
            self.progress.finished(task);
        }
    }
}

/// `--svg` (OPAT: each op's time before and after; GDAT: the Gantt) and `--timeline-out`.
fn pictures(args: &TuneArgs, report: &JobReport<'_>) -> Result<()> {
    let g = &args.gdat;
    if let Some((plan, summary)) = report.opat() {
        if let Some(path) = &g.svg {
            let table = TuneTable {
                plan,
                summary,
                result_file: report.result_file(),
                workers: report.job().settings().workers,
            };
            let svg = tunebank_jobs::tune::report::plot::before_after_svg(
                &table.op_times(),
                report.job().name(),
            );
            std::fs::write(path, svg)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    if let Some((plan, outcome)) = report.gdat() {
        if let Some(p) = &g.timeline_out {
            let doc = tunebank_jobs::tune::gdat::report::timeline_json(plan, outcome);
            std::fs::write(p, serde_json::to_string_pretty(&doc)? + "\n")
                .with_context(|| format!("--timeline-out {}", p.display()))?;
        }
        if let Some(p) = &g.svg {
            std::fs::write(
                p,
                tunebank_jobs::tune::gdat::render::gantt_svg(plan, outcome),
            )
            .with_context(|| format!("--svg {}", p.display()))?;
        }
    }
    Ok(())
}

/// 130 when interrupted by a signal, 0 when the total budget ran out (both said on standard
/// error) or every task finished and at least one was tuned, 1 when a task failed or none was
/// tuned.
fn exit_code(report: &JobReport<'_>) -> ExitCode {
    let what = match report.job().job_type() {
        JobType::Subgraph => "subgraphs are in the graph bank",
        _ => "ops are in the bank",
    };
    match report.status() {
        JobOutcome::Incomplete if CANCEL.load(Ordering::SeqCst) => {
            eprintln!(
                "tunebank: interrupted (tuning incomplete); finished {what}, a rerun continues"
            );
            ExitCode::from(130)
        }
        JobOutcome::Incomplete => {
            eprintln!("tunebank: the job's total budget ran out; a rerun continues");
            ExitCode::SUCCESS
        }
        JobOutcome::Successful => ExitCode::SUCCESS,
        JobOutcome::Failed => {
            if report.job().job_type() == JobType::Op && report.failed_ops().is_empty() {
                eprintln!("tunebank: nothing was tuned: the runner tunes none of the selected ops");
            }
            ExitCode::from(1)
        }
    }
}
