//! `tunebank convert`: the converter's view of a model under the given ATC options: the graph
//! bank applied first when there is one (subgraph fusion and slicing decide the ops), then every
//! resulting unit looked up in the layered op bank ([`JobSpec::conversion`]).

use std::path::PathBuf;
use std::process::ExitCode;

use crate::entry::{failed_if, print_report};
use anyhow::Result;
use tunebank_jobs::inspect::nearest::MatchMode;
use tunebank_jobs::job::{normalise_job_type, Environment, JobSpec};

/// tunebank's own flags of `convert`.
#[derive(clap::Args, Debug)]
pub struct ConvertArgs {
    /// Custom bank file; overrides TUNE_BANK_PATH / ASCEND_CACHE_PATH / the $HOME default.
    #[arg(long)]
    pub bank: Option<PathBuf>,
    /// Extra read-only built-in bank file (repeatable), consulted after the custom bank.
    #[arg(long = "builtin-bank")]
    pub builtin: Vec<PathBuf>,
    /// Graph bank file applied before the op look-ups (subgraph fusion decides the ops looked
    /// up); default: TUNE_BANK_PATH / ASCEND_CACHE_PATH/aoe_data / the $HOME default and the
    /// built-in graph bank; none found: the fused ops as they are.
    #[arg(long = "graph-bank", value_name = "FILE")]
    pub graph_bank: Option<PathBuf>,
    /// Exit with status 1 if any op misses (neither tuned exactly nor served by the nearest
    /// tuned shape).
    #[arg(long)]
    pub error_on_miss: bool,
    /// Strict: only a shape tuned exactly answers (no nearest tuned shape), and exit with
    /// status 1 if any op is not tuned exactly.
    #[arg(long)]
    pub strict: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Resolves the model as a converter does, then looks every unit up; exit 1 on a miss with
/// `--error-on-miss`, on anything but an exact hit with `--strict`.
pub fn run(args: ConvertArgs, atc: &[String]) -> Result<ExitCode> {
    let mut spec = JobSpec::new(normalise_job_type(atc));
    spec.bank = args.bank;
    spec.builtin_banks = args.builtin;
    spec.graph_bank = args.graph_bank;
    let conversion = spec.conversion(&Environment::process())?;
    super::tune::report_skipped(&conversion.plan.skipped);
    let report = conversion.look_up(match_mode(args.strict))?;
    print_report(&report, args.json)?;
    let inexact = report.total - report.hits;
    if args.strict && inexact > 0 {
        eprintln!(
            "tunebank: strict: {inexact} of {} ops not tuned at this exact shape (listed as miss)",
            report.total
        );
    }
    Ok(failed_if(
        (args.error_on_miss && report.misses > 0) || (args.strict && inexact > 0),
    ))
}

/// The look-up mode of `--strict`.
pub(crate) fn match_mode(strict: bool) -> MatchMode {
    if strict {
        MatchMode::Exact
    } else {
        MatchMode::Nearest
    }
}
