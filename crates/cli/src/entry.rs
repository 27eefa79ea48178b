//! The entry point both command lines share: split ATC options from the tool's own flags, parse
//! the flags, run, and map the outcome to an exit code (a usage error is 2; a failure prints the
//! whole cause chain and exits with the code of its kind, see `exit.rs`; a closed output pipe is
//! success). Also what every subcommand uses: reading an op file, printing a report as text or
//! `--json`, exit status 1 for a failed check.

use std::fmt::Display;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use clap::Parser;
use serde::Serialize;
use tunebank_key::split_atc_args;
use tunebank_key::OpTemplate;

/// Runs the tool `name`, whose own flags that share a name with an ATC option are `own_flags`.
pub fn main<C: Parser>(
    name: &str,
    own_flags: &[&str],
    run: impl FnOnce(C, Vec<String>) -> anyhow::Result<ExitCode>,
) -> ExitCode {
    let (own, atc) = split_atc_args(std::env::args().skip(1).collect(), own_flags);
    let cli = match C::try_parse_from(std::iter::once(name.to_owned()).chain(own)) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match run(cli, atc) {
        Ok(code) => code,
        Err(e) => {
            if crate::exit::is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            eprintln!("{name}: error: {}", render(&e));
            ExitCode::from(crate::exit::failure_code(&e))
        }
    }
}

/// The error and its causes, joined by `: ` as `{:#}` does, except that a cause whose text the
/// message already contains is not repeated (library errors that name their `#[source]` in
/// their own message would otherwise print it twice).
pub fn render(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.is_empty() {
            out = text;
        } else if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
    }
    out
}

/// Reads an op file: one op template (as a model import produces it) or a JSON list of them.
/// Errors name the file, the entry and the expected form.
pub fn read_templates(path: &Path) -> anyhow::Result<Vec<OpTemplate>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read op file {}", path.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text).with_context(|| {
        format!(
            "op file {}: not valid JSON; expected an op template object or a list of them",
            path.display()
        )
    })?;
    let list = match value {
        serde_json::Value::Array(items) => items,
        other => vec![other],
    };
    list.into_iter()
        .enumerate()
        .map(|(i, v)| {
            serde_json::from_value(v).with_context(|| {
                format!(
                    "op file {} entry {i}: expected an op template \
                     {{node_name, op_type, inputs: [{{shape, dtype, ...}}], outputs, attrs}}",
                    path.display()
                )
            })
        })
        .collect()
}

/// Prints `report` to standard output: its `--json` document (indented, then a newline) when
/// `json`, else its text (`Display`, whose lines end in newlines).
pub fn print_report<R: Serialize + Display>(report: &R, json: bool) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(report)?)?;
    } else {
        write!(out, "{report}")?;
    }
    Ok(())
}

/// Columns of the terminal standard output is, `None` when it is not a terminal (a pipe or a
/// file gets full-length lines).
pub fn stdout_width() -> Option<u16> {
    console::Term::stdout().size_checked().map(|(_, cols)| cols)
}

/// `tunebank bank verify` and `bank-inspect verify`: opens the bank `request` names (the
/// process environment resolving its paths) and checks every layer's records and index; prints
/// the report (`--json` when `json`) and exits 1 on damage.
pub fn verify(request: &tunebank_bank::BankRequest, json: bool) -> anyhow::Result<ExitCode> {
    let env = tunebank_key::Environment::process();
    let report = tunebank_bank::Bank::open(&env, request)?.verification();
    print_report(&report, json)?;
    Ok(failed_if(!report.is_clean()))
}

/// `tunebank bank stats` and `bank-inspect stats`: opens the bank `request` names and prints
/// every layer's counts (records, damaged, stale, by group and origin) and file.
pub fn stats(request: &tunebank_bank::BankRequest, json: bool) -> anyhow::Result<ExitCode> {
    let env = tunebank_key::Environment::process();
    let bank = tunebank_bank::Bank::open(&env, request)?;
    print_report(&tunebank_jobs::inspect::StatsReport::of(&bank)?, json)?;
    Ok(ExitCode::SUCCESS)
}

/// Exit status 1 (a check failed) when `failed`, else success.
pub fn failed_if(failed: bool) -> ExitCode {
    if failed {
        ExitCode::from(crate::exit::NEGATIVE)
    } else {
        ExitCode::SUCCESS
    }
}

/// Which bank files make the layered bank (both binaries take the same flags).
#[derive(clap::Args, Debug)]
pub struct BankArgs {
    /// Custom bank file; overrides TUNE_BANK_PATH / ASCEND_CACHE_PATH / the $HOME default.
    #[arg(long)]
    pub bank: Option<PathBuf>,
    /// Extra read-only built-in bank file (repeatable), consulted after the custom bank.
    #[arg(long = "builtin-bank")]
    pub builtin: Vec<PathBuf>,
}

/// The SoC to resolve the bank path with, from the ATC options. An explicit `--bank` needs none
/// (the name then only labels the bank: "any" when the options name no SoC); without it
/// `--soc_version` is required.
pub fn bank_soc(args: &BankArgs, atc: &[String]) -> anyhow::Result<String> {
    let soc = tunebank_key::ResolvedOptions::from_args(atc, &tunebank_key::FsReader)
        .map_err(anyhow::Error::from)
        .and_then(|o| Ok(o.soc()?.version));
    match (&args.bank, soc) {
        (Some(_), soc) => Ok(soc.unwrap_or_else(|_| "any".to_owned())),
        (None, soc) => soc.context("no --bank given: the bank is found by --soc_version"),
    }
}
