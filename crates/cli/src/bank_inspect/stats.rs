//! `bank-inspect stats`: record counts per layer by SoC, kind, op type and origin.

use std::process::ExitCode;

use anyhow::Result;
use tunebank_bank::{Access, Bank};
use tunebank_jobs::inspect::StatsReport;
use tunebank_key::{Environment, RecordKind};

use super::{request, BankArgs};
use crate::entry::print_report;

/// Flags of `bank-inspect stats`.
#[derive(clap::Args, Debug)]
pub struct StatsArgs {
    #[command(flatten)]
    pub bank: BankArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Counts every layer.
pub fn run(args: StatsArgs, atc: &[String]) -> Result<ExitCode> {
    let bank = Bank::open(
        &Environment::process(),
        &request(&args.bank, atc, RecordKind::Op, Access::ReadOnly)?,
    )?;
    print_report(&StatsReport::of(&bank)?, args.json)?;
    Ok(ExitCode::SUCCESS)
}
