//! The `tunebank` command line: flag parsing, printing and exit codes over the library.
//!
//! Exit codes: the table in `cli/exit.rs` (`--help` prints it): 0 success; 1 the answer is
//! negative (`bank verify` found damage, `lookup`/`convert --error-on-miss` missed, `bank
//! export`/`merge` left damaged records out, `bank import --aoe` rejected entries whose md5 did
//! not verify, `bank import --aoe-graph` left subgraphs out, `tune`: some op failed); 2 bad input, nothing written; 3 I/O failure; 4 bank
//! busy; 5 bank damaged; 6 bank server unreachable; 130 `tune` interrupted.
//!
//! This module is the argument wiring: each subcommand is a child module (its flags and a short
//! `run`); here are what they share: the op-file and bank flags, this invocation's ATC options
//! ([`Conversion`]), and the bank the flags name ([`BankArgs::request`]).

pub mod bank_add;
pub mod bank_export;
pub mod bank_import;
pub mod bank_init;
pub mod bank_merge;
pub mod bank_migrate;
pub mod bank_stats;
pub mod bank_verify;
pub mod calibrate;
pub mod convert;
pub mod job;
pub mod key;
pub mod lookup;
mod progress;
pub mod tune;
mod tune_gdat;
mod tune_queue;
pub mod worker;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::{entry, exit};

pub(crate) use crate::entry::{bank_soc, BankArgs};
#[cfg(doc)]
use tunebank_bank::Bank;
use tunebank_bank::{Access, BankRequest, MergeSource};
use tunebank_key::RecordKind;

/// tunebank: a content-addressed tuning-knowledge bank for Ascend-style operator tuning.
///
/// ATC options (`--precision_mode=...`, `--soc_version=...`, `--input_shape=...` …) may be given
/// anywhere after the subcommand; they decide each op's effective dtypes, impl mode, shapes and
/// formats, and so its key.
#[derive(Parser, Debug)]
#[command(version, about, after_help = exit::help(&[TUNE_INTERRUPTED]))]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the bank key of every op (one per dynamic profile).
    Key(OpArgs),
    /// Look every op up in the layered bank (custom, then built-in), as a converter does.
    Lookup(lookup::LookupArgs),
    /// Bank maintenance.
    #[command(subcommand)]
    Bank(BankCommand),
    /// Tuning of a model (ONNX, Caffe prototxt with `--weight`, TensorFlow frozen graph,
    /// MindSpore MindIR, PyTorch `torch.export` program `.pt2`):
    /// operators (OPAT, `--job_type=2`, the default), subgraphs (SGAT, `--job_type=1`) or
    /// gradient splits (GDAT, `--job_type=4`), with `--model=m.onnx --soc_version=...` plus ATC
    /// options; winners go to the custom bank of the job's kind and
    /// an AOE result file is rewritten as the job goes. Exit 0 done, 1 some op failed, 130 interrupted (a
    /// rerun continues); failures as `tunebank --help` lists.
    #[command(before_long_help = tunebank_key::options_help())]
    #[command(
        after_help = "AOE/ATC flags: --model=FILE (required; or --singleop=FILE.json, ATC's single-operator description, or --model_path=DIR, AOE's folder of models), --job_type=1|2|4 | --job-type \
subgraph|op|gradient (SGAT, OPAT: the default, GDAT), --framework=0|1|3|5 (Caffe, MindSpore MindIR, TensorFlow, ONNX; default: the model file's), --weight=FILE (Caffe), --soc_version=SOC \
(required), --tune_ops_file=FILE (op names or op types, one per line), and every ATC option \
(--precision_mode, --input_shape, --dynamic_batch_size, ...).\n\nEnvironment: TUNE_BANK_PATH, \
ASCEND_CACHE_PATH (bank location), ASCEND_WORK_PATH (result file), REPEAT_TUNE=True|False, \
TUNING_PARALLEL_NUM (measurement slots, capped by available memory; --tuning_parallel_num), \
TE_PARALLEL_COMPILER (candidates per search round; default: the slots dealt out among the ops), AOE_MODE (the job type when --job_type is not given), ASCEND_DEVICE_ID."
    )]
    Tune(Box<tune::TuneArgs>),
    /// The converter's view: every op of `--model=FILE` (ONNX, Caffe, TensorFlow, MindIR, PyTorch .pt2) resolved against the bank under the
    /// given ATC options, hit or miss per op.
    #[command(before_long_help = tunebank_key::options_help())]
    #[command(
        after_help = "AOE/ATC flags: --model=FILE (required), --soc_version=SOC (required) \
and every ATC option; they must match those used for tuning for the ops to hit."
    )]
    Convert(convert::ConvertArgs),
    /// The simulator against the board on an AOE unified_bank file (`--aoe FILE
    /// --soc_version=SOC`): per record the board's time and the simulated time of its stored
    /// tiling, of the default, of the best of `--samples` sampled tilings and of the best of as
    /// many drawn from TBE's own tiling space (the one AOE searched); Spearman and ratio
    /// quantiles of each, the share of stored tilings within 10 % of each best, and the share of
    /// the cube's peak the board and the simulator's best reach.
    /// With `--aoe-graph FILE` instead: per graph line of an AOE graph bank, the board's
    /// end-to-end time and the subgraph model's time under the stored strategies, the unfused
    /// default and its own SGAT best, with the same summary.
    Calibrate(calibrate::CalibrateArgs),
    /// A worker of the distributed tuning queue (`--queue postgres://… --soc_version=SOC
    /// --runner R`): claims the tasks of its SoC and runner that `tune --queue` queued, tunes
    /// each as a local tune would and writes the records into the shared `--bank`.
    Worker(worker::WorkerArgs),
    /// A queued tuning job: per-task status, its AOE result file, cancellation.
    #[command(subcommand)]
    Job(JobCommand),
}

#[derive(Subcommand, Debug)]
enum JobCommand {
    /// Per task: state, worker, attempts, decision, last error (`--json`: everything).
    Status(job::JobArgs),
    /// Write the job's AOE result file from the database.
    Report(job::ReportArgs),
    /// Cancel the job's queued tasks; running ones finish or are abandoned on lease expiry.
    Cancel(job::JobArgs),
}

#[derive(Subcommand, Debug)]
enum BankCommand {
    /// Record counts per layer (damaged, stale, by SoC, kind, op type and origin) and the
    /// layers' files: `bank-inspect stats`'s report.
    Stats(BankArgs),
    /// Check every record's checksum and decoding and the index, from one snapshot; exit 1 on
    /// damage. A custom bank left by a crashed writer is recovered first (no record rewritten).
    Verify(BankArgs),
    /// Write one strategy for every op (all profiles) into the custom bank, atomically.
    Add(bank_add::AddArgs),
    /// Write every record of the custom bank as JSON lines, keys ascending (diffable); exit 1 if
    /// damaged records had to be left out.
    Export(bank_export::ExportArgs),
    /// Import a `bank export` file (or, with --aoe, an AOE unified_bank file; with --aoe-graph,
    /// an AOE graph-bank file into the graph bank) into the custom bank, atomically, under the
    /// merge rule; exit 1 if AOE entries failed their md5 check or AOE subgraphs did not map.
    Import(bank_import::ImportArgs),
    /// Merge bank files or export files into the custom bank: a key held by both is decided by
    /// the bank-write policy (a device time beats a simulated one, then the faster time within
    /// one source); the report says what each side contributed and which rule decided.
    Merge(bank_merge::MergeArgs),
    /// Re-key a bank (or export file) written under an older key schema (1: ONNX op types) to
    /// the current one (Ascend IR form) and merge it into the custom bank; exit 1 if records
    /// could not be migrated.
    Migrate(bank_migrate::MigrateArgs),
    /// Create or migrate the tunebank tables of a PostgreSQL database (a team bank:
    /// `postgres://…` wherever a bank path goes); idempotent, refuses a newer schema. With
    /// --roles, also the read-only and writer roles.
    Init(bank_init::InitArgs),
}

/// The exit code only `tune` gives, beside the shared table.
const TUNE_INTERRUPTED: (u8, &str) = (
    130,
    "tune was interrupted (SIGINT or SIGTERM); finished ops are in the bank and a rerun \
     continues",
);

fn run(cli: Cli, atc: Vec<String>) -> Result<ExitCode> {
    match cli.command {
        Command::Key(args) => key::run(args, &atc),
        Command::Lookup(args) => lookup::run(args, &atc),
        Command::Tune(args) => tune::run(*args, &atc),
        Command::Convert(args) => convert::run(args, &atc),
        Command::Calibrate(args) => calibrate::run(args, &atc),
        Command::Worker(args) => worker::run(args, &atc),
        Command::Job(JobCommand::Status(args)) => job::status(args),
        Command::Job(JobCommand::Report(args)) => job::report(args),
        Command::Job(JobCommand::Cancel(args)) => job::cancel(args),
        Command::Bank(BankCommand::Stats(args)) => bank_stats::run(args, &atc),
        Command::Bank(BankCommand::Verify(args)) => bank_verify::run(args, &atc),
        Command::Bank(BankCommand::Add(args)) => bank_add::run(args, &atc),
        Command::Bank(BankCommand::Export(args)) => bank_export::run(args, &atc),
        Command::Bank(BankCommand::Import(args)) => bank_import::run(args, &atc),
        Command::Bank(BankCommand::Merge(args)) => bank_merge::run(args, &atc),
        Command::Bank(BankCommand::Migrate(args)) => bank_migrate::run(args, &atc),
        Command::Bank(BankCommand::Init(args)) => bank_init::run(args, &atc),
    }
}

/// The `tunebank` command: parses the process's arguments, runs the subcommand, prints, and
/// returns the exit code.
pub(crate) fn main() -> ExitCode {
    entry::main::<Cli>("tunebank", &[], run)
}

/// The op file and the output form.
#[derive(clap::Args, Debug)]
pub struct OpArgs {
    /// JSON file with one op template or a list of them (see ARCHITECTURE.md, "Op templates").
    #[arg(long)]
    pub op: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

impl BankArgs {
    /// The bank these flags name for `soc`, holding records of `kind`: `--bank`, else the
    /// custom bank AOE's rules name from the environment, over the `--builtin-bank` files and
    /// the default built-in bank, opened with `access` (the one way to open it is
    /// [`Bank::open`], with the process's environment).
    pub fn request(&self, kind: RecordKind, soc: &str, access: Access) -> BankRequest {
        BankRequest {
            custom: self.bank.clone().into(),
            builtin: self.builtin.clone(),
            access,
            ..BankRequest::new(kind, soc)
        }
    }
}

/// The kind of record the sources hold, which the bank they are written into must hold: a
/// bank holds one kind (op, subgraph or gradient records, each in its own bank file). Sources
/// without records are op sources. Errors, naming the sources and the kinds, when they mix
/// kinds.
pub fn kind_of_sources(sources: &[&MergeSource]) -> Result<RecordKind> {
    let mut kinds: Vec<(RecordKind, &std::path::Path)> = Vec::new();
    for s in sources {
        for (_, r) in &s.records {
            if !kinds.iter().any(|(k, _)| *k == r.kind) {
                kinds.push((r.kind, &s.path));
            }
        }
    }
    match kinds[..] {
        [] => Ok(RecordKind::Op),
        [(k, _)] => Ok(k),
        _ => anyhow::bail!(
            "the sources mix record kinds ({}): expected one kind, since a bank holds op, \
             subgraph or gradient records, each kind in its own bank; migrate or merge each \
             kind into its own bank",
            kinds
                .iter()
                .map(|(k, p)| format!("{k:?} records in {}", p.display()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
