//! `tunebank bank verify`: every record's checksum and decoding and the index, per layer; the
//! same check as `bank-inspect verify` ([`crate::entry::verify`]).

use std::process::ExitCode;

use anyhow::Result;

use super::{bank_soc, BankArgs};
use tunebank_bank::Access;
use tunebank_key::RecordKind;

/// Verifies every layer; exit 1 on damage. A custom bank left by a crashed writer is recovered
/// first (records are never rewritten), so verifying after a crash works.
pub fn run(args: BankArgs, atc: &[String]) -> Result<ExitCode> {
    let soc = bank_soc(&args, atc)?;
    let request = args.request(RecordKind::Op, &soc, Access::ReadOnlyRecovering);
    crate::entry::verify(&request, false)
}
