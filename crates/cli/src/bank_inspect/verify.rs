//! `bank-inspect verify`: checksums, decoding and index consistency of every layer.

use std::process::ExitCode;

use anyhow::Result;

use super::{request, BankArgs};
use crate::entry::{failed_if, print_report};
use tunebank_bank::{Access, Bank};
use tunebank_key::{Environment, RecordKind};

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
    let request = request(&args.bank, atc, RecordKind::Op, Access::ReadOnlyRecovering)?;
    let report = Bank::open(&Environment::process(), &request)?.verification();
    print_report(&report, args.json)?;
    Ok(failed_if(!report.is_clean()))
}
