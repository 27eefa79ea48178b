//! `tunebank worker --queue postgres://… --soc_version=SOC --runner R`: a queue worker on this
//! host. It claims the tasks of its SoC and runner, tunes them and writes their records into the
//! shared bank (`--bank`, else the bank AOE's resolution finds), one progress line per task.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use tunebank_bank::{Access, Bank, BankRequest};
use tunebank_jobs::queue::{Worker, WorkerConfig, HOLD_FIRST_TASK_ENV};
use tunebank_key::platform::{self, PlatformSearch};
use tunebank_key::{Environment, FsReader, RecordKind, ResolvedOptions, Var};

use super::progress::{install_signal_handlers, CANCEL};

/// `tunebank worker`'s flags (`--soc_version=SOC` is the ATC option).
#[derive(clap::Args, Debug)]
pub struct WorkerArgs {
    /// The queue database (postgres://user@host/db).
    #[arg(long, value_name = "URL")]
    pub queue: String,
    /// Runner of this host: sim, sim:SEED, cpu or exec:COMMAND; only tasks queued for this
    /// runner are claimed.
    #[arg(long, default_value = "sim")]
    pub runner: tunebank_measure::RunnerSpec,
    /// The shared bank; default TUNE_BANK_PATH / ASCEND_CACHE_PATH / the $HOME default.
    #[arg(long)]
    pub bank: Option<PathBuf>,
    /// Seconds a claim is held without a heartbeat (renewed every third of it).
    #[arg(long, default_value_t = 30.0)]
    pub lease: f64,
    /// A task failing this many times is marked failed, with every error kept.
    #[arg(long = "max-attempts", default_value_t = 3)]
    pub max_attempts: i32,
    /// Handle one task, then exit (exit at once when there is none).
    #[arg(long)]
    pub once: bool,
    /// Exit after this many tasks.
    #[arg(long = "max-tasks")]
    pub max_tasks: Option<usize>,
    /// Exit after this many seconds without a task to claim (default: wait for ever).
    #[arg(long = "idle-exit", value_name = "SECS")]
    pub idle_exit: Option<f64>,
    /// This worker's name in the queue (default: host name and process id).
    #[arg(long = "worker-id")]
    pub worker_id: Option<String>,
    /// Milliseconds between looks for a task when idle.
    #[arg(long = "poll-ms", default_value_t = 500)]
    pub poll_ms: u64,
}

fn positive_seconds(v: f64, flag: &str) -> Result<Duration> {
    if !(v.is_finite() && v > 0.0) {
        bail!("{flag} {v}: expected a positive number of seconds");
    }
    Ok(Duration::from_secs_f64(v))
}

/// The host's name, for worker ids.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "host".into())
}

/// Runs the worker until it is stopped (SIGINT/SIGTERM: the task in hand is queued again) or
/// an exit condition holds; exit 0, 130 when stopped by a signal.
pub fn run(args: WorkerArgs, atc: &[String]) -> Result<ExitCode> {
    let soc = ResolvedOptions::from_args(atc, &FsReader)?.soc()?.version;
    args.runner.available()?;
    if args.max_attempts < 1 {
        bail!("--max-attempts {}: expected at least 1", args.max_attempts);
    }
    let env = Environment::process();
    let hold_first = match env.text(Var::WorkerHoldFirst) {
        Some(v) => Some(positive_seconds(
            v.parse().unwrap_or(f64::NAN),
            HOLD_FIRST_TASK_ENV,
        )?),
        None => None,
    };
    // The simulator models the SoC from the files this host's toolkit roots hold.
    platform::select(&soc, &PlatformSearch::new(None, &env)).map_err(|c| anyhow!("{c}"))?;
    let config = WorkerConfig {
        url: args.queue.clone(),
        worker_id: args
            .worker_id
            .clone()
            .unwrap_or_else(|| format!("{}:{}", host_name(), std::process::id())),
        soc: soc.clone(),
        runner: args.runner.clone(),
        lease: positive_seconds(args.lease, "--lease")?,
        max_attempts: args.max_attempts,
        max_tasks: if args.once { Some(1) } else { args.max_tasks },
        idle_exit: match (args.once, args.idle_exit) {
            (true, _) => Some(Duration::ZERO),
            (false, Some(s)) => Some(positive_seconds(s, "--idle-exit")?),
            (false, None) => None,
        },
        poll: Duration::from_millis(args.poll_ms.max(10)),
        hold_first,
    };
    let request = BankRequest {
        custom: args.bank.clone().into(),
        access: Access::Writable,
        ..BankRequest::new(RecordKind::Op, &soc)
    };
    let bank = Bank::open(&env, &request)?;
    let mut worker = Worker::connect(config.clone())?;
    install_signal_handlers();
    eprintln!(
        "tunebank: worker {} on {}: {} tasks with runner {}",
        config.worker_id,
        tunebank_pg::redact(&config.url),
        soc,
        config.runner
    );
    let report = worker.run(&bank, &CANCEL, &mut |e| eprintln!("tunebank: {e}"))?;
    eprintln!(
        "tunebank: worker {}: {} tasks claimed, {} done, {} failed attempts ({} failed for good), {} leases lost",
        config.worker_id, report.claimed, report.done, report.failed_attempts, report.failed, report.lease_lost
    );
    if CANCEL.load(std::sync::atomic::Ordering::SeqCst) {
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}
