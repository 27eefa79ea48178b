//! `tunebank key`: the bank key of every op, one per dynamic profile.

use std::process::ExitCode;

use anyhow::Result;
use tunebank_jobs::inspect::KeyListing;
use tunebank_jobs::job::options_of;

use super::OpArgs;
use crate::entry::{print_report, read_templates};

/// Derives and prints the keys of the op file's templates.
pub fn run(args: OpArgs, atc: &[String]) -> Result<ExitCode> {
    let (options, soc) = options_of(atc)?;
    let templates = read_templates(&args.op)?;
    let listing = KeyListing::derive(&templates, &options, &soc)?;
    print_report(&listing, args.json)?;
    Ok(ExitCode::SUCCESS)
}
