//! `tunebank bank stats`: record counts per layer, and the layers' files.

use std::process::ExitCode;

use anyhow::Result;
use tunebank_bank::{Access, Bank, LayerCounts};
use tunebank_key::{Environment, RecordKind};

use super::{bank_soc, BankArgs};
use crate::entry::print_report;

/// Counts and prints every layer's records.
pub fn run(args: BankArgs, atc: &[String]) -> Result<ExitCode> {
    let soc = bank_soc(&args, atc)?;
    let bank = Bank::open(
        &Environment::process(),
        &args.request(RecordKind::Op, &soc, Access::ReadOnly),
    )?;
    print_report(&LayerCounts::of(&bank)?, false)?;
    Ok(ExitCode::SUCCESS)
}
