//! `tunebank calibrate --aoe FILE --soc_version=SOC`: the simulator against the board on the
//! records of an AOE unified_bank file (stored tiling, default, best of N sampled tilings).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use tunebank::bank::maintenance::read_aoe_file;
use tunebank::inspect::calibrate::calibrate;

use super::Conversion;
use crate::entry::print_report;

/// Flags of `tunebank calibrate`.
#[derive(clap::Args, Debug)]
pub struct CalibrateArgs {
    /// The AOE unified_bank file whose records (board times, tuned tilings) calibrate against.
    #[arg(long)]
    pub aoe: PathBuf,
    /// Tilings sampled per record from the simulator's space (seeded; the default is added).
    #[arg(long, default_value_t = 200)]
    pub samples: usize,
    /// Print JSON (`{"records": [...], "summary": {...}}`) instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Prints the calibration; entries whose md5 does not verify are left out and named on standard
/// error.
pub fn run(args: CalibrateArgs, atc: &[String]) -> Result<ExitCode> {
    let ctx = Conversion::from_atc(atc).context("calibrate needs --soc_version")?;
    let parsed = read_aoe_file(&args.aoe)?;
    for r in &parsed.rejected {
        eprintln!("tunebank: left out {}[{}]: {}", r.md5, r.index, r.reason);
    }
    let report = calibrate(&parsed, &ctx.soc, args.samples, 0);
    print_report(&report, args.json)?;
    Ok(ExitCode::SUCCESS)
}
