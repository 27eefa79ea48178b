//! The `bank-inspect` command line.
fn main() {}
