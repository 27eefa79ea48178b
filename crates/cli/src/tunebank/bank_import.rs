//! `tunebank bank import`: a `bank export` file, an AOE `unified_bank` file, CANN's MatMul
//! tiling repository, or an AOE graph-bank file (into the graph bank), merged into the custom
//! bank atomically under the merge rule.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use tunebank_bank::interchange::aoe::AoeEntry;
use tunebank_bank::interchange::tbe::repository::{self, RepositoryImportReport};
use tunebank_bank::interchange::{aoe, aoe_graph, merge_into};
use tunebank_bank::{read_aoe_file, read_export_file, read_repository_file};
use tunebank_bank::{Access, Bank, ImportReport, Origin};
use tunebank_jobs::inspect::calibrate::repository::estimated_baseline;
use tunebank_jobs::job::options_of;
use tunebank_key::{Environment, RecordKind};

use super::{bank_soc, BankArgs};
use crate::entry::{failed_if, print_report};
use tunebank_bank::now_unix;

/// Flags of `tunebank bank import`.
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// The file to import.
    pub file: PathBuf,
    #[command(flatten)]
    pub bank: BankArgs,
    /// The file is an AOE unified_bank file (needs --soc_version). A file named in AOE's
    /// pattern <SoC>_<N>_AiCore_<op>.json must name --soc_version's SoC; N, the core count it was
    /// tuned on, is recorded in each record (keys stay the SoC's core count).
    #[arg(long)]
    pub aoe: bool,
    /// With --aoe: the core count the bank file was tuned on, for a copy whose name no longer
    /// says it (AOE's Ascend910B1_25_AiCore_matmul.json renamed); wins over the name's.
    #[arg(long, value_name = "N", requires = "aoe")]
    pub aoe_core_count: Option<std::num::NonZeroU32>,
    /// The file is an AOE graph (fusion-strategy) bank file, e.g. ascend910b2_l2cache.json
    /// (needs --soc_version): its subgraphs become graph-bank records.
    #[arg(long, conflicts_with = "aoe")]
    pub aoe_graph: bool,
    /// The file is CANN's MatMul dynamic-tiling repository (repository_<SoC>_matmul.json, JSON
    /// lines, .gz read too; needs --soc_version): each shape's tiling and board time becomes a
    /// record, its default-tiling time estimated on the simulator so that it can serve nearest
    /// answers for shapes nobody tuned.
    #[arg(long, conflicts_with_all = ["aoe", "aoe_graph"])]
    pub cann_repository: bool,
    /// Mark imported records as built-in (for a bank that will serve as a built-in layer).
    #[arg(long)]
    pub as_builtin: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Imports the file; exit 1 if AOE entries failed their md5 check.
pub fn run(args: ImportArgs, atc: &[String]) -> Result<ExitCode> {
    if args.cann_repository {
        let report = import_repository(&args, atc)?;
        print_report(&report, args.json)?;
        return Ok(failed_if(!report.is_complete()));
    }
    if args.aoe_graph {
        let report = import_aoe_graph(&args, atc)?;
        print_report(&report, args.json)?;
        return Ok(failed_if(!report.is_complete()));
    }
    let report = if args.aoe {
        import_aoe(&args, atc)?
    } else {
        import_export(&args, atc)?
    };
    print_report(&report, args.json)?;
    Ok(failed_if(!report.is_complete()))
}

/// The bank of `kind` on `soc` opened for writing, and the origin imported records take
/// (built-in with `--as-builtin`).
fn writable(args: &ImportArgs, kind: RecordKind, soc: &str) -> Result<(Bank, Origin)> {
    let bank = Bank::open(
        &Environment::process(),
        &args.bank.request(kind, soc, Access::Writable),
    )?;
    let origin = if args.as_builtin {
        Origin::BuiltIn
    } else {
        Origin::Imported
    };
    Ok((bank, origin))
}

/// An AOE `unified_bank` file, for the SoC of `--soc_version`.
fn import_aoe(args: &ImportArgs, atc: &[String]) -> Result<ImportReport> {
    let (_, soc) = options_of(atc).context("an AOE import needs --soc_version")?;
    let parsed = read_aoe_file(&args.file, &soc, args.aoe_core_count)?;
    let (bank, origin) = writable(args, RecordKind::Op, &soc.version)?;
    let report = aoe::import_aoe(&bank, &parsed, &soc, origin, now_unix())?;
    Ok(ImportReport::Aoe(report))
}

/// CANN's MatMul repository, read whole (and checked) before the bank is opened for writing.
fn import_repository(args: &ImportArgs, atc: &[String]) -> Result<RepositoryImportReport> {
    let (_, soc) = options_of(atc).context("a CANN repository import needs --soc_version")?;
    let repo = read_repository_file(&args.file, &soc)?;
    let (bank, origin) = writable(args, RecordKind::Op, &soc.version)?;
    let baseline = |e: &AoeEntry| estimated_baseline(e, &soc);
    Ok(repository::import_repository(
        &bank,
        &repo,
        &soc,
        origin,
        now_unix(),
        &baseline,
    )?)
}

/// An AOE graph-bank file, read whole and checked before the graph bank is opened for writing.
fn import_aoe_graph(args: &ImportArgs, atc: &[String]) -> Result<aoe_graph::AoeGraphImportReport> {
    let (_, soc) = options_of(atc).context("an AOE graph-bank import needs --soc_version")?;
    let parsed = aoe_graph::read_aoe_graph_file(&args.file)?;
    let (bank, origin) = writable(args, RecordKind::Graph, &soc.version)?;
    Ok(aoe_graph::import_aoe_graph(
        &bank,
        &parsed,
        &soc,
        origin,
        now_unix(),
    )?)
}

/// A `bank export` file, read whole before the bank is opened for writing.
fn import_export(args: &ImportArgs, atc: &[String]) -> Result<ImportReport> {
    let soc = bank_soc(&args.bank, atc)?;
    let records = read_export_file(&args.file)?;
    let bank = Bank::open(
        &Environment::process(),
        &args.bank.request(RecordKind::Op, &soc, Access::Writable),
    )?;
    Ok(ImportReport::Export(merge_into(&bank, records)?))
}
