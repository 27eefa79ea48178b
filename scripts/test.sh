#!/usr/bin/env bash
# The project's test command (README "Tests"): format, lint, build benches and fuzz targets,
# the doc tests, then the whole suite under cargo-nextest (cargo test where nextest is absent).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --all-features -- -D warnings
cargo build --workspace --release --all-targets --all-features
cargo build --manifest-path fuzz/Cargo.toml
cargo test --workspace --all-features --release --doc
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --all-features --release --no-fail-fast
else
  cargo test --workspace --all-features --release --no-fail-fast
fi
