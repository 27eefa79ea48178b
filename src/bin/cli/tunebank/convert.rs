//! `tunebank convert`: the converter's view of a model under the given ATC options: the graph
//! bank applied first when there is one (subgraph fusion and slicing decide the ops), then every
//! resulting unit looked up in the layered op bank.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use tunebank::bank::Bank;
use tunebank::inspect::ConvertReport;
use tunebank::key::RecordKind;

use super::tune_config::{load, normalise_job_type};
use crate::entry::{failed_if, print_report};

/// tunebank's own flags of `convert`.
#[derive(clap::Args, Debug)]
pub struct ConvertArgs {
    /// Custom bank file; overrides TUNE_BANK_PATH / ASCEND_CACHE_PATH / the $HOME default.
    #[arg(long)]
    pub bank: Option<PathBuf>,
    /// Extra read-only built-in bank file (repeatable), consulted after the custom bank.
    #[arg(long = "builtin-bank")]
    pub builtin: Vec<PathBuf>,
    /// Graph bank file applied before the op look-ups (subgraph fusion decides the ops looked
    /// up); default: TUNE_BANK_PATH / ASCEND_CACHE_PATH/aoe_data / the $HOME default and the
    /// built-in graph bank; none found: the fused ops as they are.
    #[arg(long = "graph-bank", value_name = "FILE")]
    pub graph_bank: Option<PathBuf>,
    /// Exit with status 1 if any op misses.
    #[arg(long)]
    pub error_on_miss: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Loads and plans the model, then looks every unit up; exit 1 on a miss with
/// `--error-on-miss`.
pub fn run(args: ConvertArgs, atc: &[String]) -> Result<ExitCode> {
    let loaded = load(&normalise_job_type(atc), None, args.graph_bank.as_deref())?;
    let soc = &loaded.soc.version;
    let mut builder = Bank::builder(RecordKind::Op, soc).read_only(true);
    if let Some(p) = &args.bank {
        builder = builder.custom_path(p);
    }
    for p in &args.builtin {
        builder = builder.builtin_path(p);
    }
    let bank = builder.open()?;
    let plan = &loaded.plan;
    let mut report =
        ConvertReport::run(&bank, &loaded.model_path, soc, &plan.units, &plan.skipped)?;
    if let Some((files, applied)) = loaded.graph {
        report = report.with_graph_bank(files, applied.subgraphs);
    }
    print_report(&report, args.json)?;
    Ok(failed_if(args.error_on_miss && report.misses > 0))
}
