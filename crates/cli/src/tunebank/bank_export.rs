//! `tunebank bank export`: every record of the custom bank as JSON lines, keys ascending.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use super::{bank_soc, BankArgs};
use crate::entry::failed_if;
use tunebank_bank::{Access, Bank};
use tunebank_key::{Environment, RecordKind};

/// Flags of `tunebank bank export`.
#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    pub bank: BankArgs,
    /// Output file (default: standard output).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write an AOE unified_bank file for ATC (the ops with a TBE MatMul form) instead of
    /// JSON lines.
    #[arg(long)]
    pub aoe: bool,
    /// Write the graph bank as an AOE graph (fusion-strategy) bank file, as AOE writes
    /// ascend910b2_l2cache.json (the graphs imported with `bank import --aoe-graph`).
    #[arg(long, conflicts_with = "aoe")]
    pub aoe_graph: bool,
}

/// Exports the custom layer; damaged records are left out, named on standard error, and make
/// the exit status 1.
pub fn run(args: ExportArgs, atc: &[String]) -> Result<ExitCode> {
    let soc = bank_soc(&args.bank, atc)?;
    if args.aoe_graph {
        let bank = Bank::open(
            &Environment::process(),
            &args.bank.request(RecordKind::Graph, &soc, Access::ReadOnly),
        )?;
        return export_aoe_graph(&args, bank.custom_layer()?);
    }
    let bank = Bank::open(
        &Environment::process(),
        &args.bank.request(RecordKind::Op, &soc, Access::ReadOnly),
    )?;
    let layer = bank.custom_layer()?;
    if args.aoe {
        return export_aoe(&args, layer);
    }
    let report = match &args.out {
        Some(path) => {
            let f = std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            layer.export(&mut std::io::BufWriter::new(f))?
        }
        None => layer.export(&mut std::io::stdout().lock())?,
    };
    for d in &report.damaged {
        eprintln!("tunebank: left out of the export: {d}");
    }
    eprintln!("exported {} records", report.records);
    Ok(failed_if(!report.damaged.is_empty()))
}

/// The custom layer as an AOE unified_bank file; records without a TBE form are named on
/// standard error; damaged records make the exit status 1.
fn export_aoe(args: &ExportArgs, layer: tunebank_bank::LayerView<'_>) -> Result<ExitCode> {
    let read = layer.records()?;
    let (text, report) = tunebank_bank::interchange::aoe_export::export_aoe(&read.records);
    write_out(args, &text)?;
    for d in &read.damaged {
        eprintln!("tunebank: left out of the export: {d}");
    }
    eprint!("{report}");
    Ok(failed_if(!read.damaged.is_empty()))
}

/// The graph bank's custom layer as an AOE graph-bank file; graphs missing a subgraph and
/// records without AOE occurrences are named on standard error; damaged records make the exit
/// status 1.
fn export_aoe_graph(args: &ExportArgs, layer: tunebank_bank::LayerView<'_>) -> Result<ExitCode> {
    let read = layer.records()?;
    let (text, report) = tunebank_bank::interchange::aoe_graph::export_aoe_graph(&read.records);
    write_out(args, &text)?;
    for d in &read.damaged {
        eprintln!("tunebank: left out of the export: {d}");
    }
    eprint!("{report}");
    Ok(failed_if(!read.damaged.is_empty()))
}

/// `text` to `--out` or standard output.
fn write_out(args: &ExportArgs, text: &str) -> Result<()> {
    match &args.out {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => {
            use std::io::Write;
            std::io::stdout().lock().write_all(text.as_bytes())?;
        }
    }
    Ok(())
}
