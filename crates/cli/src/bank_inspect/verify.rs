//! `bank-inspect verify`: checksums, decoding and index consistency of every layer.

use std::process::ExitCode;

use anyhow::Result;

use super::{request, BankArgs};
use tunebank_bank::Access;
use tunebank_key::RecordKind;

/// Flags of `bank-inspect verify`.
#[derive(clap::Args, Debug)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub bank: BankArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Verifies every layer; exit 1 on damage ([`crate::entry::verify`], as `tunebank bank verify`).
pub fn run(args: VerifyArgs, atc: &[String]) -> Result<ExitCode> {
    let request = request(&args.bank, atc, RecordKind::Op, Access::ReadOnlyRecovering)?;
    crate::entry::verify(&request, args.json)
}
