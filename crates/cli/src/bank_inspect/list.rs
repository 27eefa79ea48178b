//! `bank-inspect list`: the records of every layer, filtered.

use std::process::ExitCode;

use anyhow::{Context, Result};
use tunebank_bank::{Access, Bank, Origin};
use tunebank_jobs::inspect::{Filter, ListReport};
use tunebank_key::{Environment, RecordKind};

use super::{request, BankArgs};
use crate::entry::print_report;

/// Flags of `bank-inspect list`.
#[derive(clap::Args, Debug)]
pub struct ListArgs {
    #[command(flatten)]
    pub bank: BankArgs,
    /// Only this SoC (uses the index).
    #[arg(long)]
    pub soc: Option<String>,
    /// Only this kind: op, graph, gradient.
    #[arg(long)]
    pub kind: Option<String>,
    /// Only this op type (case-insensitive).
    #[arg(long)]
    pub op_type: Option<String>,
    /// Only this origin: tuned, imported, built_in.
    #[arg(long)]
    pub origin: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

impl ListArgs {
    /// The filter the flags describe.
    fn filter(&self) -> Result<Filter> {
        Ok(Filter {
            soc: self.soc.clone(),
            kind: (self.kind.as_deref())
                .map(|k| parse_enum::<RecordKind>("kind", k, "op, graph, gradient"))
                .transpose()?,
            op_type: self.op_type.clone(),
            origin: (self.origin.as_deref())
                .map(|o| parse_enum::<Origin>("origin", o, "tuned, imported, built_in"))
                .transpose()?,
        })
    }
}

/// A flag value as one of the names `T` serialises to.
fn parse_enum<T: serde::de::DeserializeOwned>(flag: &str, v: &str, expected: &str) -> Result<T> {
    serde_json::from_value(serde_json::Value::String(v.to_owned()))
        .with_context(|| format!("--{flag} {v:?}: expected one of {expected}"))
}

/// Lists the matching records.
pub fn run(args: ListArgs, atc: &[String]) -> Result<ExitCode> {
    let filter = args.filter()?;
    let bank = Bank::open(
        &Environment::process(),
        &request(&args.bank, atc, RecordKind::Op, Access::ReadOnly)?,
    )?;
    print_report(&ListReport::of(&bank, &filter)?, args.json)?;
    Ok(ExitCode::SUCCESS)
}
