//! `tunebank tune`: operator tuning (OPAT) of an ONNX model. The job is validated
//! ([`tune_config`](super::tune_config)), the custom bank and the result file are opened, the
//! library's driver runs with the progress display, and its summary is printed.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::SystemTime;

use anyhow::{Context, Result};
use tunebank::bank::{Bank, BankError};
use tunebank::key::RecordKind;
use tunebank::report::{OpatResult, ResultFile, TuneTable};
use tunebank::tune::{self, TuneSummary};

use super::progress::{install_signal_handlers, Progress, CANCEL};
use super::tune_config::{
    aoe_short_flags, configure, env_nonempty, job_type, normalise_job_type, JobType, TuneJob,
};

/// tunebank's own flags of `tune` (the model, job type, framework, SoC and every ATC option
/// are ATC-style flags: `--model=m.onnx --job_type=2 --soc_version=Ascend910B2 ...`).
#[derive(clap::Args, Debug)]
pub struct TuneArgs {
    /// Runner: sim, sim:SEED (simulator with seeded noise), cpu, or exec:COMMAND.
    #[arg(long, default_value = "sim")]
    pub runner: String,
    /// Search strategy: ensemble, bayes_opt, tpe, genetic, annealing, random, exhaustive.
    #[arg(long, default_value = "ensemble")]
    pub strategy: String,
    /// Candidates measured per op at most.
    #[arg(long, default_value_t = 64)]
    pub budget: usize,
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
    /// Search every miss cold. By default a miss's search starts from the winners of related
    /// bank records (the same IR op type with other shapes, or on other SoCs), read once when
    /// the job starts; the result file names them (`tunebank_transfer`).
    #[arg(long = "no-transfer")]
    pub no_transfer: bool,
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
    /// AOE's -f: --framework (5: ONNX, the only one supported).
    #[arg(short = 'f', value_name = "FRAMEWORK")]
    pub short_framework: Option<String>,
    /// AOE's -m: --model.
    #[arg(short = 'm', value_name = "MODEL")]
    pub short_model: Option<String>,
    /// AOE's -w: --weight (a Caffe model's weight file; Caffe is not supported).
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
    let atc = normalise_job_type(&aoe_short_flags(&args, atc)?);
    if let Some(url) = &args.queue {
        if job_type(&atc)? != JobType::Op {
            anyhow::bail!("--queue: only operator tuning (--job_type=2) is queued");
        }
        return super::tune_queue::run(&args, &atc, url);
    }
    match job_type(&atc)? {
        JobType::Subgraph => return super::tune_sgat::run(args, &atc),
        JobType::Gradient => return super::tune_gdat::run(&args, &atc),
        JobType::Op => {}
    }
    let job = configure(&args, &atc)?;
    // Nothing is written before this point.
    let bank = open_bank(&args, &job)?;
    let result = result_file(&args, job.work_path.as_deref())?;
    announce(&job, &bank, &result);
    install_signal_handlers();
    let mut progress = Progress::new(std::io::stderr().is_terminal() && !args.quiet);
    let (plan, settings) = (&job.loaded.plan, &job.settings);
    let name = tuning_name(&job.loaded.model_path);
    let summary = tune::run(
        plan,
        &bank,
        settings,
        &name,
        Some(&result),
        &CANCEL,
        &mut progress,
    )?;
    let table = TuneTable {
        plan,
        summary: &summary,
        result_file: &result.path,
        workers: settings.workers,
    };
    write!(
        std::io::stdout().lock(),
        "{}",
        table.render(crate::entry::stdout_width())
    )?;
    // `--svg` (declared with the GDAT flags): the per-op before/after picture.
    if let Some(path) = &args.gdat.svg {
        let svg = tunebank::report::plot::before_after_svg(&table.op_times(), &name);
        std::fs::write(path, svg).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(exit_code(&summary))
}

/// The custom bank, opened for writing (created if needed).
pub(super) fn open_bank(args: &TuneArgs, job: &TuneJob) -> Result<Bank, BankError> {
    let mut builder = Bank::builder(RecordKind::Op, &job.loaded.soc.version).read_only(false);
    if let Some(p) = &args.bank {
        builder = builder.custom_path(p);
    }
    builder.open()
}

/// The result file's directory: `--output-dir`, else `$ASCEND_WORK_PATH`, else aoe.ini's
/// `WORK_PATH` (`ini_work_path`), else the working directory (created if needed). Every job type
/// writes its result file there.
pub(super) fn result_dir(args: &TuneArgs, ini_work_path: Option<&Path>) -> Result<PathBuf> {
    let dir = match (
        &args.output_dir,
        env_nonempty("ASCEND_WORK_PATH"),
        ini_work_path,
    ) {
        (Some(d), _, _) => d.clone(),
        (None, Some(w), _) => PathBuf::from(w),
        (None, None, Some(w)) => w.to_path_buf(),
        (None, None, None) => std::env::current_dir()?,
    };
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the result directory {}", dir.display()))?;
    Ok(dir)
}

/// The OPAT result file in [`result_dir`].
pub(super) fn result_file(args: &TuneArgs, ini_work_path: Option<&Path>) -> Result<ResultFile> {
    Ok(ResultFile::opat(
        &result_dir(args, ini_work_path)?,
        SystemTime::now(),
        std::process::id(),
    ))
}

/// The job's name in the result file: the model file's stem.
pub(super) fn tuning_name(model_path: &str) -> String {
    Path::new(model_path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into())
}

/// Says on standard error what is tuned, how, and where it goes.
fn announce(job: &TuneJob, bank: &Bank, result: &ResultFile) {
    let (loaded, settings) = (&job.loaded, &job.settings);
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
        if settings.repeat_tune { ", REPEAT_TUNE" } else { "" }
    );
    if let Some((files, applied)) = &loaded.graph {
        let before: usize = applied.subgraphs.iter().map(|s| s.units_before).sum();
        eprintln!(
            "tunebank: graph bank {files} applied first: {}/{} subgraphs hit, {before} fused units → {} post-SGAT units",
            applied.hits(),
            applied.subgraphs.len(),
            applied.units.len()
        );
    }
    eprintln!(
        "tunebank: bank {}; result file {}",
        bank.custom_file()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        result.path.display()
    );
}

/// 130 when interrupted by a signal, 0 when the total budget ran out (both said on standard
/// error) or every op finished and at least one was tuned, 1 when some op failed or none was
/// tuned.
fn exit_code(summary: &TuneSummary) -> ExitCode {
    if summary.interrupted && CANCEL.load(Ordering::SeqCst) {
        eprintln!("tunebank: interrupted; finished ops are in the bank, a rerun continues");
        ExitCode::from(130)
    } else if summary.interrupted {
        eprintln!("tunebank: the job's total budget ran out; a rerun continues");
        ExitCode::SUCCESS
    } else if summary.report.result == OpatResult::Successful {
        ExitCode::SUCCESS
    } else if summary.report.failed_ops.is_empty() {
        eprintln!("tunebank: nothing was tuned: the runner tunes none of the selected ops");
        ExitCode::from(1)
    } else {
        ExitCode::from(1)
    }
}
