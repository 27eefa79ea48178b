//! The `bank-inspect` command line: the crate `tunebank-cli` (`crates/cli/`: the flags, the
//! subcommands and the exit-code table that `bank-inspect --help` prints); this binary, built with the
//! root package's default `cli` feature, is its entry point.

fn main() -> std::process::ExitCode {
    tunebank::cli::bank_inspect()
}
