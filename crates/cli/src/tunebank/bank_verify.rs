//! `tunebank bank verify`: every record's checksum and decoding and the index, per layer.

use std::process::ExitCode;

use anyhow::Result;

use super::{bank_soc, BankArgs};
use crate::entry::{failed_if, print_report};
use tunebank_bank::{Access, Bank};
use tunebank_key::{Environment, RecordKind};

/// Verifies every layer; exit 1 on damage. A custom bank left by a crashed writer is recovered
/// first (records are never rewritten), so verifying after a crash works.
pub fn run(args: BankArgs, atc: &[String]) -> Result<ExitCode> {
    let soc = bank_soc(&args, atc)?;
    let request = args.request(RecordKind::Op, &soc, Access::ReadOnlyRecovering);
    let report = Bank::open(&Environment::process(), &request)?.verification();
    print_report(&report, false)?;
    Ok(failed_if(!report.is_clean()))
}
