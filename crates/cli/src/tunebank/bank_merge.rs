//! `tunebank bank merge`: bank files (either backend) or export files merged into the custom
//! bank, one atomic write per source; a key held by both keeps the faster strategy.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use tunebank_bank::{Access, Bank, MergeRun, MergeSource};
use tunebank_key::{Environment, RecordKind};

use super::{bank_soc, kind_of_sources, BankArgs};
use crate::entry::{failed_if, print_report};

/// Flags of `tunebank bank merge`.
#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// Bank files (redb) or `bank export` files to merge in, in order.
    #[arg(required = true)]
    pub sources: Vec<PathBuf>,
    #[command(flatten)]
    pub bank: BankArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Reads every source before writing anything (bad input writes nothing), then merges them in
/// order into the bank of their kind (sources of mixed kinds are refused), printing each merge's text as it is done; exit 1 if a source bank held damaged
/// records, which are left out and named on standard error.
pub fn run(args: MergeArgs, atc: &[String]) -> Result<ExitCode> {
    let soc = bank_soc(&args.bank, atc)?;
    let mut sources = Vec::new();
    for path in &args.sources {
        let source = MergeSource::read(path, RecordKind::Op)?;
        for d in &source.damaged {
            eprintln!("tunebank: {}: skipped {d}", path.display());
        }
        sources.push(source);
    }
    let kind = kind_of_sources(&sources.iter().collect::<Vec<_>>())?;
    let bank = Bank::open(
        &Environment::process(),
        &args.bank.request(kind, &soc, Access::Writable),
    )?;
    let mut merged = MergeRun::default();
    for source in sources {
        let done = merged.merge(&bank, source)?;
        if !args.json {
            print_report(done, false)?;
        }
    }
    if args.json {
        print_report(&merged, true)?;
    }
    Ok(failed_if(!merged.is_complete()))
}
