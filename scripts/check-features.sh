#!/usr/bin/env bash
# Checks what each build links (cargo tree, no compiling):
# - the C ABI library and the Python extension link no command-line crate (clap, indicatif,
#   console, comfy-table): those belong to tunebank-cli and search-bench alone;
# - the converter example links the key and the bank only: no importer, simulator, job crate,
#   PostgreSQL client or command-line crate;
# and compiles (cargo check) the two builds the workspace's all-features build never makes: the
# bank without PostgreSQL (the converter example), the model crate without its importers and the
# runners without the CPU runner.
# Then it checks that the Python wheel's build resolves every dependency with features the workspace
# build also has (see the note in python/Cargo.toml): `pip install ./python` (maturin builds the
# tunebank-python package alone, without dev-dependencies) then reuses the compiled dependencies
# of the workspace's release build with its tests (.ci/run) in target/release. A
# mismatch costs CI minutes, not correctness; this script names the packages to align.
set -euo pipefail
cd "$(dirname "$0")/.."

# `links PACKAGE PATTERN WHY`: fails when PACKAGE's normal dependency tree names a package
# matching the extended regex PATTERN.
links() {
  local found
  found=$(cargo tree --locked -e normal --prefix none -p "$1" | sed 's/ (\*)//' |
    awk '{print $1}' | grep -Ex "$2" | sort -u || true)
  if [ -n "$found" ]; then
    echo "check-features.sh: $1 links $(echo "$found" | paste -sd, -): $3" >&2
    exit 1
  fi
}
cli_crates='clap|indicatif|console|comfy-table'
links tunebank-capi "$cli_crates" "the C ABI library links no command-line crate"
links tunebank-python "$cli_crates" "the Python extension links no command-line crate"
links tunebank-converter-example \
  "$cli_crates|tunebank-(model|measure|jobs|cli)|tunebank|search-strategies|postgres|rustls|prost" \
  "a converter's look-ups need the key and the bank only"
cargo check --locked --quiet -p tunebank-converter-example
cargo check --locked --quiet -p tunebank-model --no-default-features
cargo check --locked --quiet -p tunebank-measure --no-default-features
echo "check-features.sh: the C ABI, the Python extension and the converter example link what they should"
tree() { cargo tree --locked -e features,normal,build --prefix none -f '{p} [{f}]' "$@" |
  sed 's/ (\*)//' | grep -v ' feature ' | sort -u; }
wheel=$(tree -p tunebank-python --features sled)
workspace=$(tree --workspace --all-features -e dev)
# Only dependencies from the registry: the workspace's own crates are built again for the wheel
# anyway where their features differ by design (the extension leaves out tunebank-jobs' `fit`).
registry() { grep -v ' (/' || true; }
missing=$(comm -23 <(echo "$wheel" | registry) <(echo "$workspace" | registry))
if [ -n "$missing" ]; then
  echo "check-features.sh: the wheel's build resolves these dependencies with features the" >&2
  echo "workspace build does not have, so pip install would compile them (and all that depends" >&2
  echo "on them) again; give python/Cargo.toml the workspace's features:" >&2
  echo "$missing" >&2
  exit 1
fi
echo "check-features.sh: the wheel's dependencies match the workspace build's features"
