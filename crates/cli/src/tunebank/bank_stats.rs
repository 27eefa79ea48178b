//! `tunebank bank stats`: record counts per layer, and the layers' files.

use std::process::ExitCode;

use anyhow::Result;
use tunebank_bank::LayerCounts;

use super::{bank_soc, open_bank, BankArgs};
use crate::entry::print_report;

/// Counts and prints every layer's records.
pub fn run(args: BankArgs, atc: &[String]) -> Result<ExitCode> {
    let soc = bank_soc(&args, atc)?;
    let bank = open_bank(&args, &soc, true)?;
    print_report(&LayerCounts::of(&bank)?, false)?;
    Ok(ExitCode::SUCCESS)
}
