//! `bank-inspect`: why an expected bank hit did not happen, and what a bank holds.
//!
//! Exit codes: the table in `cli/exit.rs` (`--help` prints it): 0 success; 1 the answer is
//! negative (`verify` found damage, `show` found no or a damaged record, `diff` found
//! differences); 2 bad input (malformed JSON, unknown option value, missing bank …); 3 I/O
//! failure; 4 bank busy; 5 bank damaged.
//!
//! This module is the argument wiring: each subcommand is a child module (its flags and a short
//! `run`); here is what they share: the bank flags and the bank they name, read-only.

pub mod diff;
pub mod list;
pub mod show;
pub mod stats;
pub mod verify;
pub mod why;

pub(crate) use crate::entry::{bank_soc, BankArgs};
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::{entry, exit};
use tunebank_bank::{Access, BankRequest};
use tunebank_key::RecordKind;

/// bank-inspect: explain missed bank hits; show, list, count, verify and compare banks.
///
/// ATC options (`--precision_mode=...`, `--soc_version=...` …) may be given anywhere after the
/// subcommand: they are this conversion's options for `why`, and pick the bank by SoC when no
/// `--bank` is given.
#[derive(Parser, Debug)]
#[command(version, about, after_help = exit::help(&[]))]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Per op: hit (which layer, what it shadowed) or miss, with the nearest stored entries and
    /// the options that explain each difference; with `--rank_size`, the model's gradient key.
    Why(why::WhyArgs),
    /// Print the record under KEY in every layer that holds it.
    Show(show::ShowArgs),
    /// List records, filtered.
    List(list::ListArgs),
    /// Record counts per layer by SoC, kind, op type and origin.
    Stats(stats::StatsArgs),
    /// Check checksums, decoding and index consistency of every layer, from one snapshot; exit 1
    /// on damage. A custom bank left by a crashed writer is recovered first.
    Verify(verify::VerifyArgs),
    /// Compare two bank files record by record; exit 1 when they differ.
    Diff(diff::DiffArgs),
}

fn run(cli: Cli, atc: Vec<String>) -> Result<ExitCode> {
    match cli.command {
        Command::Why(args) => why::run(args, &atc),
        Command::Show(args) => show::run(args, &atc),
        Command::List(args) => list::run(args, &atc),
        Command::Stats(args) => stats::run(args, &atc),
        Command::Verify(args) => verify::run(args, &atc),
        Command::Diff(args) => diff::run(args, &atc),
    }
}

/// The `bank-inspect` command: parses the process's arguments, runs the subcommand, prints, and
/// returns the exit code.
pub(crate) fn main() -> ExitCode {
    entry::main::<Cli>("bank-inspect", &["model"], run)
}

/// bank-inspect's request for the bank of `kind` ([`BankArgs::request`]): `--bank` and
/// `--builtin-bank`, which must exist, or the custom bank the environment names for the SoC of
/// the ATC options; no default built-in bank; never written (`access`: read-only, or
/// recovering a bank left by a crashed writer for `verify`); a bank that does not exist is bad
/// input.
pub fn request(
    args: &BankArgs,
    atc: &[String],
    kind: RecordKind,
    access: Access,
) -> Result<BankRequest> {
    let soc = bank_soc(args, atc)?;
    Ok(BankRequest {
        default_builtin: false,
        must_exist: true,
        require_layer: true,
        ..args.request(kind, &soc, access)
    })
}
