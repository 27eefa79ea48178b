//! `bank-inspect`: why an expected bank hit did not happen, and what a bank holds.
//!
//! Exit codes: the table in `cli/exit.rs` (`--help` prints it): 0 success; 1 the answer is
//! negative (`verify` found damage, `show` found no or a damaged record, `diff` found
//! differences); 2 bad input (malformed JSON, unknown option value, missing bank …); 3 I/O
//! failure; 4 bank busy; 5 bank damaged.
//!
//! This file is the argument wiring only: each subcommand is a module of `cli/bank_inspect/`.

#[path = "cli/cluster_args.rs"]
mod cluster_args;
#[path = "cli/bank_inspect/mod.rs"]
mod cmd;
#[path = "cli/entry.rs"]
mod entry;
#[path = "cli/exit.rs"]
mod exit;

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use cmd::{diff, list, show, stats, verify, why};

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

fn main() -> ExitCode {
    entry::main::<Cli>("bank-inspect", &["model"], run)
}
