//! `tunebank bank stats`: every layer's counts and file; the same report as `bank-inspect
//! stats` ([`crate::entry::stats`]).

use std::process::ExitCode;

use anyhow::Result;
use tunebank_bank::Access;
use tunebank_key::RecordKind;

use super::{bank_soc, BankArgs};

/// Counts and prints every layer's records.
pub fn run(args: BankArgs, atc: &[String]) -> Result<ExitCode> {
    let soc = bank_soc(&args, atc)?;
    crate::entry::stats(&args.request(RecordKind::Op, &soc, Access::ReadOnly), false)
}
