//! `tunebank calibrate --aoe FILE --soc_version=SOC`: the simulator against the board on the
//! records of an AOE unified_bank file (stored tiling, default, best of N sampled tilings);
//! `--aoe-graph FILE`: the subgraph model against the board on an AOE graph bank (stored
//! strategies, unfused default, the simulator's own SGAT best, per graph line);
//! `--cann-repository FILE`: CANN's MatMul repository held back one record at a time and
//! answered by its nearest record's tiling.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, Context, Result};
use tunebank_bank::interchange::aoe_graph::read_aoe_graph_file;
use tunebank_bank::read_aoe_file;
use tunebank_jobs::inspect::calibrate::calibrate;
use tunebank_jobs::inspect::calibrate::graph::calibrate_graphs;
use tunebank_jobs::inspect::calibrate::repository::leave_one_out;
use tunebank_jobs::job::options_of;
use tunebank_jobs::tune::TuneSettings;
use tunebank_key::platform::{self, PlatformSearch};
use tunebank_key::Environment;

use crate::entry::print_report;

/// Flags of `tunebank calibrate`.
#[derive(clap::Args, Debug)]
pub struct CalibrateArgs {
    /// The AOE unified_bank file whose records (board times, tuned tilings) calibrate against;
    /// a file named in AOE's pattern <SoC>_<N>_AiCore_<op>.json must name --soc_version's SoC.
    #[arg(
        long,
        required_unless_present_any = ["aoe_graph", "cann_repository"],
        conflicts_with_all = ["aoe_graph", "cann_repository"]
    )]
    pub aoe: Option<PathBuf>,
    /// CANN's MatMul tiling repository (repository_<SoC>_matmul.json, JSON lines, .gz read
    /// too): how well its records predict each other, each held back in turn and answered by
    /// its nearest neighbour's tiling (simulated; see `inspect::calibrate::repository`).
    #[arg(long, conflicts_with = "aoe_graph")]
    pub cann_repository: Option<PathBuf>,
    /// An AOE graph-bank file (`ascend910b2_l2cache.json` format) whose graph lines (board
    /// `end2EndTime`, stored subgraph strategies) calibrate the subgraph model against.
    #[arg(long)]
    pub aoe_graph: Option<PathBuf>,
    /// The core count the `--aoe` file was tuned on, for a copy whose name no longer says it
    /// (AOE names its files `<SoC>_<N>_AiCore_<op>.json`); the simulator then runs the records
    /// on that many cores.
    #[arg(long, requires = "aoe")]
    pub aoe_core_count: Option<std::num::NonZeroU32>,
    /// Tilings sampled per record from the simulator's space (seeded; the default is added);
    /// `--aoe` only.
    #[arg(long, default_value_t = 200)]
    pub samples: usize,
    /// Print JSON (`{"records": [...], "summary": {...}}`) instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Prints the calibration; with `--aoe`, entries whose md5 does not verify are left out and
/// named on standard error; with `--aoe-graph`, a malformed line is bad input (exit 2) and a
/// graph line without times is listed with its reason.
pub fn run(args: CalibrateArgs, atc: &[String]) -> Result<ExitCode> {
    let (_, soc) = options_of(atc).context("calibrate needs --soc_version")?;
    // The simulator models the SoC from the files this host's toolkit roots hold.
    let search = PlatformSearch::new(None, &Environment::process());
    platform::select(&soc.version, &search).map_err(|c| anyhow!("{c}"))?;
    if let Some(path) = &args.cann_repository {
        let repo = tunebank_bank::read_repository_file(path, &soc)?;
        for (line, why) in repo.rejected.iter().chain(&repo.skipped) {
            eprintln!("tunebank: left out line {line}: {why}");
        }
        let report = leave_one_out(&repo, &soc);
        print_report(&report, args.json)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(path) = &args.aoe_graph {
        let file = read_aoe_graph_file(path)?;
        // One graph line per thread at a time, on every core (the report does not depend on it).
        let settings = TuneSettings {
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            ..TuneSettings::default()
        };
        let report = calibrate_graphs(&file, &soc, &settings);
        print_report(&report, args.json)?;
        return Ok(ExitCode::SUCCESS);
    }
    let path = args
        .aoe
        .context("calibrate needs --aoe FILE or --aoe-graph FILE")?;
    let parsed = read_aoe_file(&path, &soc, args.aoe_core_count)?;
    for r in &parsed.rejected {
        eprintln!("tunebank: left out {}[{}]: {}", r.md5, r.index, r.reason);
    }
    // The board's cores: the bank file's count when known (a 25-core part's bank simulated on
    // 25 cores), else the SoC spec's.
    let mut soc = soc.clone();
    if let Some(n) = parsed.core_count {
        soc.core_count = n;
    }
    let report = calibrate(&parsed, &soc, args.samples, 0);
    print_report(&report, args.json)?;
    Ok(ExitCode::SUCCESS)
}
