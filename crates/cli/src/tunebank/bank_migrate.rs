//! `tunebank bank migrate`: records of a bank (or export file) written under an older key
//! schema, re-keyed to the current one and merged into the custom bank.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use tunebank_bank::migrate::migrate_into;
use tunebank_bank::{Access, Bank, MergeSource};
use tunebank_key::{Environment, RecordKind};

use super::{bank_soc, kind_of_sources, BankArgs};
use crate::entry::{failed_if, print_report};

/// Flags of `tunebank bank migrate`.
#[derive(clap::Args, Debug)]
pub struct MigrateArgs {
    /// The old bank file (redb or sled) or `bank export` file.
    pub source: PathBuf,
    #[command(flatten)]
    pub bank: BankArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Reads the source whole, then writes the migrated records in one atomic merge into the bank
/// of their kind (an op bank, or with subgraph records a graph bank: `--bank` names it); exit 1
/// if a record could not be migrated or the source held damaged records (named on standard
/// error).
pub fn run(args: MigrateArgs, atc: &[String]) -> Result<ExitCode> {
    let soc = bank_soc(&args.bank, atc)?;
    let source = MergeSource::read(&args.source, RecordKind::Op)?;
    for d in &source.damaged {
        eprintln!("tunebank: {}: skipped {d}", args.source.display());
    }
    let kind = kind_of_sources(&[&source])?;
    let bank = Bank::open(
        &Environment::process(),
        &args.bank.request(kind, &soc, Access::Writable),
    )?;
    let report = migrate_into(&bank, source.records)?;
    print_report(&report, args.json)?;
    Ok(failed_if(
        !report.is_complete() || !source.damaged.is_empty(),
    ))
}
