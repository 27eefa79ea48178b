//! `tunebank key`: the bank key of every op, one per dynamic profile.

use std::process::ExitCode;

use anyhow::Result;
use tunebank_jobs::inspect::KeyListing;

use super::{Conversion, OpArgs};
use crate::entry::{print_report, read_templates};

/// Derives and prints the keys of the op file's templates.
pub fn run(args: OpArgs, atc: &[String]) -> Result<ExitCode> {
    let ctx = Conversion::from_atc(atc)?;
    let templates = read_templates(&args.op)?;
    let listing = KeyListing::derive(&templates, &ctx.options, &ctx.soc)?;
    print_report(&listing, args.json)?;
    Ok(ExitCode::SUCCESS)
}
