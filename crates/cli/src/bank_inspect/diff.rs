//! `bank-inspect diff`: two bank files (either backend) compared record by record.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use tunebank_jobs::inspect::DiffReport;

use crate::entry::{failed_if, print_report};

/// Flags of `bank-inspect diff`.
#[derive(clap::Args, Debug)]
pub struct DiffArgs {
    /// First bank file.
    pub bank_a: PathBuf,
    /// Second bank file.
    pub bank_b: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Compares the banks; exit 1 when they differ.
pub fn run(args: DiffArgs, _atc: &[String]) -> Result<ExitCode> {
    let report = DiffReport::compare(&args.bank_a, &args.bank_b)?;
    print_report(&report, args.json)?;
    Ok(failed_if(!report.diff.is_empty()))
}
