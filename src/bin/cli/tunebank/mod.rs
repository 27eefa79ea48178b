//! `tunebank`'s subcommands, one module each (its flags and a short `run`), and what they share:
//! the op-file and bank flags, this invocation's ATC options ([`Conversion`]), and opening the
//! layered bank from the flags.

pub mod bank_add;
pub mod bank_export;
pub mod bank_import;
pub mod bank_init;
pub mod bank_merge;
pub mod bank_migrate;
pub mod bank_stats;
pub mod bank_verify;
pub mod calibrate;
pub mod convert;
pub mod job;
pub mod key;
pub mod lookup;
mod progress;
pub mod tune;
mod tune_gdat;
mod tune_queue;
pub mod worker;

use std::path::PathBuf;

pub use crate::entry::{bank_soc, BankArgs};
use anyhow::Result;
use tunebank::bank::Bank;
use tunebank::key::{RecordKind, ResolvedOptions, SocSpec};

/// The op file and the output form.
#[derive(clap::Args, Debug)]
pub struct OpArgs {
    /// JSON file with one op template or a list of them (see ARCHITECTURE.md, "Op templates").
    #[arg(long)]
    pub op: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// This invocation's ATC options, validated with their defaults, and the SoC they name: what
/// every op is resolved under, as a converter with these options would resolve it.
pub struct Conversion {
    /// The resolved options.
    pub options: ResolvedOptions,
    /// The SoC of `--soc_version`.
    pub soc: SocSpec,
}

impl Conversion {
    /// Resolves the ATC options ([`tunebank::job::options_of`]); `--soc_version` is required.
    pub fn from_atc(atc: &[String]) -> Result<Conversion> {
        let (options, soc) = tunebank::job::options_of(atc)?;
        Ok(Conversion { options, soc })
    }
}

/// Opens the layered bank of `args` for `soc`: `--bank` or the custom bank the environment
/// names, over `--builtin-bank` files and the default built-in bank.
pub fn open_bank(args: &BankArgs, soc: &str, read_only: bool) -> Result<Bank> {
    open_bank_with(args, soc, read_only, false)
}

/// [`open_bank`]; with `recover`, a read-only custom bank left by a crashed writer is recovered
/// first (the maintenance commands may write the user's own bank; built-in banks never are).
pub fn open_bank_with(args: &BankArgs, soc: &str, read_only: bool, recover: bool) -> Result<Bank> {
    let mut b = Bank::builder(RecordKind::Op, soc)
        .read_only(read_only)
        .recover_custom(recover);
    if let Some(p) = &args.bank {
        b = b.custom_path(p);
    }
    for p in &args.builtin {
        b = b.builtin_path(p);
    }
    Ok(b.open()?)
}

/// Opens the layered bank of `args` for `soc` holding records of `kind` (the graph bank of an
/// AOE graph-bank import or export; [`open_bank`] is the op bank).
pub fn open_bank_of_kind(
    args: &BankArgs,
    kind: RecordKind,
    soc: &str,
    read_only: bool,
) -> Result<Bank> {
    let mut b = Bank::builder(kind, soc).read_only(read_only);
    if let Some(p) = &args.bank {
        b = b.custom_path(p);
    }
    for p in &args.builtin {
        b = b.builtin_path(p);
    }
    Ok(b.open()?)
}

/// Seconds since 1970 (0 if the clock is before it): the write time of hand-made records.
pub fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
