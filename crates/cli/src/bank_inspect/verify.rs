//! `bank-inspect verify`: checksums, decoding and index consistency of every layer.

use std::process::ExitCode;

use anyhow::Result;

use super::{open_bank_with, BankArgs};
use crate::entry::{failed_if, print_report};

/// Flags of `bank-inspect verify`.
#[derive(clap::Args, Debug)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub bank: BankArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Verifies every layer; exit 1 on damage.
pub fn run(args: VerifyArgs, atc: &[String]) -> Result<ExitCode> {
    let report = open_bank_with(&args.bank, atc, true)?.verification();
    print_report(&report, args.json)?;
    Ok(failed_if(!report.is_clean()))
}
