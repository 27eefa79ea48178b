//! `bank-inspect stats`: record counts per layer by SoC, kind, op type and origin.

use std::process::ExitCode;

use anyhow::Result;
use tunebank_jobs::inspect::StatsReport;

use super::{open_bank, BankArgs};
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
    let bank = open_bank(&args.bank, atc)?;
    print_report(&StatsReport::of(&bank)?, args.json)?;
    Ok(ExitCode::SUCCESS)
}
