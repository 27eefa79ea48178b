//! `tunebank`'s subcommands, one module each (its flags and a short `run`), and what they share:
//! the op-file and bank flags, this invocation's ATC options ([`Conversion`]), and opening the
//! layered bank from the flags.

pub mod bank_add;
pub mod bank_export;
pub mod bank_import;
pub mod bank_merge;
pub mod bank_stats;
pub mod bank_verify;
pub mod convert;
pub mod key;
pub mod lookup;
mod progress;
pub mod tune;
mod tune_config;

use std::path::PathBuf;

use anyhow::{Context, Result};
use tunebank::bank::Bank;
use tunebank::key::{FsReader, RecordKind, ResolvedOptions, SocSpec};

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

/// Which bank files make the layered bank.
#[derive(clap::Args, Debug)]
pub struct BankArgs {
    /// Custom bank file; overrides TUNE_BANK_PATH / ASCEND_CACHE_PATH / the $HOME default.
    #[arg(long)]
    pub bank: Option<PathBuf>,
    /// Extra read-only built-in bank file (repeatable), consulted after the custom bank.
    #[arg(long = "builtin-bank")]
    pub builtin: Vec<PathBuf>,
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
    /// Resolves the ATC options (file-valued ones read from disk); `--soc_version` is required.
    pub fn from_atc(atc: &[String]) -> Result<Conversion> {
        let options = ResolvedOptions::from_args(atc, &FsReader)?;
        let soc = options.soc()?;
        Ok(Conversion { options, soc })
    }
}

/// Opens the layered bank of `args` for `soc`: `--bank` or the custom bank the environment
/// names, over `--builtin-bank` files and the default built-in bank.
pub fn open_bank(args: &BankArgs, soc: &str, read_only: bool) -> Result<Bank> {
    let mut b = Bank::builder(RecordKind::Op, soc).read_only(read_only);
    if let Some(p) = &args.bank {
        b = b.custom_path(p);
    }
    for p in &args.builtin {
        b = b.builtin_path(p);
    }
    Ok(b.open()?)
}

/// The SoC to resolve the bank path with: none needed with an explicit `--bank`.
pub fn bank_soc(args: &BankArgs, atc: &[String]) -> Result<String> {
    if args.bank.is_some() {
        // An explicit file needs no SoC to be found; the name only labels the bank.
        return Ok(Conversion::from_atc(atc)
            .map(|c| c.soc.version)
            .unwrap_or_else(|_| "any".to_owned()));
    }
    Ok(Conversion::from_atc(atc)
        .context("no --bank given: the bank is found by --soc_version")?
        .soc
        .version)
}

/// Seconds since 1970 (0 if the clock is before it): the write time of hand-made records.
pub fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
