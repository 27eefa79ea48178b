//! `bank-inspect`'s subcommands, one module each (its flags and a short `run`), and what they
//! share: the bank flags and opening the bank read-only.

pub mod diff;
pub mod list;
pub mod show;
pub mod stats;
pub mod verify;
pub mod why;

pub use crate::entry::{bank_soc, BankArgs};
use anyhow::{bail, Result};
use tunebank::bank::Bank;
use tunebank::key::RecordKind;

/// Opens the bank read-only: `--bank` and `--builtin-bank`, or the custom bank the environment
/// names for the SoC of the ATC options. A bank that does not exist is bad input.
pub fn open_bank(args: &BankArgs, atc: &[String]) -> Result<Bank> {
    open_bank_with(args, atc, false)
}

/// [`open_bank`]; with `recover`, a custom bank left by a crashed writer is recovered first
/// (`verify` only: the other commands never write).
pub fn open_bank_with(args: &BankArgs, atc: &[String], recover: bool) -> Result<Bank> {
    open_bank_of_kind(args, atc, recover, RecordKind::Op)
}

/// [`open_bank_with`] for the bank of `kind` (its default file when no `--bank` is given).
pub fn open_bank_of_kind(
    args: &BankArgs,
    atc: &[String],
    recover: bool,
    kind: RecordKind,
) -> Result<Bank> {
    for p in args.bank.iter().chain(&args.builtin) {
        if !tunebank::bank::paths::bank_exists(p) {
            bail!("bank file {} does not exist", p.display());
        }
    }
    let soc = bank_soc(args, atc)?;
    let mut b = Bank::builder(kind, &soc)
        .read_only(true)
        .recover_custom(recover)
        .no_default_builtin();
    if let Some(p) = &args.bank {
        b = b.custom_path(p);
    }
    for p in &args.builtin {
        b = b.builtin_path(p);
    }
    let bank = b.open()?;
    if bank.layer_paths().is_empty() {
        bail!(
            "no bank found at {}: give --bank FILE",
            bank.custom_file()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "the default location".into())
        );
    }
    Ok(bank)
}
