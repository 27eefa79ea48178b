//! `tunebank lookup`: every op looked up in the layered bank, as a converter does.

use std::process::ExitCode;

use anyhow::Result;
use tunebank_bank::{Access, Bank};
use tunebank_jobs::inspect::LookupReport;
use tunebank_jobs::job::options_of;
use tunebank_key::{Environment, RecordKind};

use super::{BankArgs, OpArgs};
use crate::entry::{failed_if, print_report, read_templates};

/// Flags of `tunebank lookup`.
#[derive(clap::Args, Debug)]
pub struct LookupArgs {
    #[command(flatten)]
    pub ops: OpArgs,
    #[command(flatten)]
    pub bank: BankArgs,
    /// Exit with status 1 if any op misses (neither tuned exactly nor served by the nearest
    /// tuned shape).
    #[arg(long)]
    pub error_on_miss: bool,
    /// Strict: only a shape tuned exactly answers (no nearest tuned shape), and exit with
    /// status 1 if any op is not tuned exactly.
    #[arg(long)]
    pub strict: bool,
}

/// Looks every profile of every op up; exit 1 on a miss with `--error-on-miss`, on anything but
/// an exact hit with `--strict`.
pub fn run(args: LookupArgs, atc: &[String]) -> Result<ExitCode> {
    let (options, soc) = options_of(atc)?;
    let templates = read_templates(&args.ops.op)?;
    let bank = Bank::open(
        &Environment::process(),
        &args
            .bank
            .request(RecordKind::Op, &soc.version, Access::ReadOnly),
    )?;
    let mode = super::convert::match_mode(args.strict);
    let report = LookupReport::run(&bank, &templates, &options, &soc, mode)?;
    print_report(&report, args.ops.json)?;
    if args.strict && report.inexact() {
        eprintln!(
            "tunebank: strict: {} of {} look-ups not tuned at this exact shape (listed as miss)",
            report.total - report.hits,
            report.total
        );
    }
    Ok(failed_if(
        (args.error_on_miss && report.missed()) || (args.strict && report.inexact()),
    ))
}
