//! `bank-inspect show`: the record under a key in every layer that holds it.

use std::process::ExitCode;

use anyhow::Result;
use tunebank_bank::{Access, Bank};
use tunebank_jobs::inspect::ShowReport;
use tunebank_key::{BankKey, Environment, RecordKind};

use super::{request, BankArgs};
use crate::entry::{failed_if, print_report};

/// Flags of `bank-inspect show`.
#[derive(clap::Args, Debug)]
pub struct ShowArgs {
    /// 64 hex digits.
    pub key: String,
    #[command(flatten)]
    pub bank: BankArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Shows the key's records; exit 1 when no layer holds it or a layer holds it damaged.
pub fn run(args: ShowArgs, atc: &[String]) -> Result<ExitCode> {
    let key: BankKey = args.key.parse()?;
    let bank = Bank::open(
        &Environment::process(),
        &request(&args.bank, atc, RecordKind::Op, Access::ReadOnly)?,
    )?;
    let report = ShowReport::find(&bank, &key)?;
    print_report(&report, args.json)?;
    Ok(failed_if(!report.is_clean()))
}
