//! The `tunebank` command line.
fn main() {}
