//! The `bank-inspect` command line. It lives in the library (`crates/cli/src/`, the flags, the
//! subcommands and the exit-code table that `bank-inspect --help` prints); this binary is its
//! entry point.

fn main() -> std::process::ExitCode {
    tunebank::cli::bank_inspect()
}
