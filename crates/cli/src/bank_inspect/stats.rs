//! `bank-inspect stats`: record counts per layer by SoC, kind, op type and origin.

use std::process::ExitCode;

use anyhow::Result;
use tunebank_bank::Access;
use tunebank_key::RecordKind;

use super::{request, BankArgs};

/// Flags of `bank-inspect stats`.
#[derive(clap::Args, Debug)]
pub struct StatsArgs {
    #[command(flatten)]
    pub bank: BankArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Counts every layer ([`crate::entry::stats`], as `tunebank bank stats`).
pub fn run(args: StatsArgs, atc: &[String]) -> Result<ExitCode> {
    let request = request(&args.bank, atc, RecordKind::Op, Access::ReadOnly)?;
    crate::entry::stats(&request, args.json)
}
