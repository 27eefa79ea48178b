#!/usr/bin/env bash
# Checks that the Python wheel's build resolves every dependency with features the workspace
# build also has (see the note in python/Cargo.toml): `pip install ./python` (maturin builds the
# tunebank-python package alone, without dev-dependencies) then reuses the compiled dependencies
# of the workspace's release build with its tests (.ci/run) in target/release. A
# mismatch costs CI minutes, not correctness; this script names the packages to align.
set -euo pipefail
cd "$(dirname "$0")/.."
tree() { cargo tree --locked -e features,normal,build --prefix none -f '{p} [{f}]' "$@" |
  sed 's/ (\*)//' | grep -v ' feature ' | sort -u; }
wheel=$(tree -p tunebank-python --features sled)
workspace=$(tree --workspace --all-features -e dev)
missing=$(comm -23 <(echo "$wheel") <(echo "$workspace"))
if [ -n "$missing" ]; then
  echo "check-features.sh: the wheel's build resolves these dependencies with features the" >&2
  echo "workspace build does not have, so pip install would compile them (and all that depends" >&2
  echo "on them) again; give python/Cargo.toml the workspace's features:" >&2
  echo "$missing" >&2
  exit 1
fi
echo "check-features.sh: the wheel's dependencies match the workspace build's features"
