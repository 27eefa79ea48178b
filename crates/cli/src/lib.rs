//! The command lines, `tunebank` and `bank-inspect`: flag parsing, printing, the progress bar and
//! exit codes over the library crates. The root package's binaries (`src/bin/`, behind its
//! default `cli` feature) are one call each into this crate. It is the top of the crate graph and
//! the only crate that depends on the terminal's crates (clap, indicatif, console, comfy-table
//! through tunebank-jobs' `fit`): an embedder that leaves the `cli` feature off links none of them.
//! Its modules stay private; its public API is the two entry points below.
//!
//! Exit codes: the table in `exit.rs` (`--help` prints it), from `tunebank_failure::TABLE`.
#![deny(missing_docs)]
#![warn(unnameable_types)]

mod bank_inspect;
mod cluster_args;
mod entry;
mod exit;
mod tunebank;

use std::process::ExitCode;

/// Runs the `tunebank` command on the process's arguments and returns its exit code: 0 success,
/// 1 a negative answer, 2 bad input (nothing written), 3 I/O failure, 4 bank busy, 5 bank
/// damaged, 6 bank server unreachable, 130 `tune` interrupted (`tunebank --help` prints the
/// table). Prints to stdout and stderr.
pub fn tunebank() -> ExitCode {
    tunebank::main()
}

/// Runs the `bank-inspect` command on the process's arguments and returns its exit code (the
/// same table as [`tunebank()`], without 130). Prints to stdout and stderr.
pub fn bank_inspect() -> ExitCode {
    bank_inspect::main()
}
