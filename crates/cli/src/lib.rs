//! The command lines, `tunebank` and `bank-inspect`: flag parsing, printing and exit codes over
//! the library. The binaries in `src/bin/` are one call each into this module; it lives in the
//! library so that what only the command line needs (its subcommands' wiring, its tables and
//! progress bar, the flags-to-job plumbing) stays crate-private instead of widening the public
//! API. Nothing else in the crate names this module: it is the top layer.
//!
//! Exit codes: the table in `cli/exit.rs` (`--help` prints it).
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
