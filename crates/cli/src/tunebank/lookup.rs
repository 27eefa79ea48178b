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
    /// Exit with status 1 if any op misses.
    #[arg(long)]
    pub error_on_miss: bool,
}

/// Looks every profile of every op up; exit 1 on a miss with `--error-on-miss`.
pub fn run(args: LookupArgs, atc: &[String]) -> Result<ExitCode> {
    let (options, soc) = options_of(atc)?;
    let templates = read_templates(&args.ops.op)?;
    let bank = Bank::open(
        &Environment::process(),
        &args
            .bank
            .request(RecordKind::Op, &soc.version, Access::ReadOnly),
    )?;
    let report = LookupReport::run(&bank, &templates, &options, &soc)?;
    print_report(&report, args.ops.json)?;
    Ok(failed_if(args.error_on_miss && report.missed()))
}
