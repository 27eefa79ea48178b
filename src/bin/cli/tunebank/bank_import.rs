//! `tunebank bank import`: a `bank export` file, or an AOE `unified_bank` file, merged into the
//! custom bank atomically under the merge rule.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use tunebank::bank::interchange::{aoe, merge_into};
use tunebank::bank::maintenance::{read_aoe_file, read_export_file};
use tunebank::bank::{ImportReport, Origin};

use super::{bank_soc, now_unix, open_bank, BankArgs, Conversion};
use crate::entry::{failed_if, print_report};

/// Flags of `tunebank bank import`.
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// The file to import.
    pub file: PathBuf,
    #[command(flatten)]
    pub bank: BankArgs,
    /// The file is an AOE unified_bank file (needs --soc_version).
    #[arg(long)]
    pub aoe: bool,
    /// Mark imported records as built-in (for a bank that will serve as a built-in layer).
    #[arg(long)]
    pub as_builtin: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Imports the file; exit 1 if AOE entries failed their md5 check.
pub fn run(args: ImportArgs, atc: &[String]) -> Result<ExitCode> {
    let report = if args.aoe {
        import_aoe(&args, atc)?
    } else {
        import_export(&args, atc)?
    };
    print_report(&report, args.json)?;
    Ok(failed_if(!report.is_complete()))
}

/// An AOE `unified_bank` file, for the SoC of `--soc_version`.
fn import_aoe(args: &ImportArgs, atc: &[String]) -> Result<ImportReport> {
    let ctx = Conversion::from_atc(atc).context("an AOE import needs --soc_version")?;
    let parsed = read_aoe_file(&args.file)?;
    let bank = open_bank(&args.bank, &ctx.soc.version, false)?;
    let origin = if args.as_builtin {
        Origin::BuiltIn
    } else {
        Origin::Imported
    };
    let report = aoe::import_aoe(&bank, &parsed, &ctx.soc, origin, now_unix())?;
    Ok(ImportReport::Aoe(report))
}

/// A `bank export` file, read whole before the bank is opened for writing.
fn import_export(args: &ImportArgs, atc: &[String]) -> Result<ImportReport> {
    let soc = bank_soc(&args.bank, atc)?;
    let records = read_export_file(&args.file)?;
    let bank = open_bank(&args.bank, &soc, false)?;
    Ok(ImportReport::Export(merge_into(&bank, records)?))
}
