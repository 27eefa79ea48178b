#!/usr/bin/env bash
# Runs the cargo-fuzz targets under libFuzzer (stable toolchain, RUSTC_BOOTSTRAP=1):
#  1. every kept regression input, fuzz/regressions/<target>/* (a past crash must stay fixed);
#  2. SECONDS of fuzzing per target, starting from the committed seeds (fuzz/seeds/<target>/,
#     made by `cargo run --release --example make_fuzz_seeds`) and the local, uncommitted
#     corpus fuzz/corpus/<target>/.
# A crash stops the script with libFuzzer's report; the input is under fuzz/artifacts/<target>/.
# Fix the bug, then keep the input: copy it to fuzz/regressions/<target>/.
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   (default: 600 s, every target)
# FUZZ_BUILD_FLAGS: extra `cargo fuzz` build flags. The default build is cargo-fuzz's own: release
# optimisation with debug assertions and overflow checks, under AddressSanitizer. CI runs
# `FUZZ_BUILD_FLAGS="--dev --sanitizer none" scripts/fuzz.sh 10`: the regressions plus 10 s of
# each target, in a debug build (overflow checks and debug assertions on) that compiles in about
# the time the plain build of the fuzz crate took, with no sanitizer runtime to build.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-600}"
shift || true
if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  targets=(decode_record load_onnx parse_options parse_response parse_restriction)
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
export RUSTC_BOOTSTRAP=1
read -r -a build_flags <<<"${FUZZ_BUILD_FLAGS:-}"
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t"
  shopt -s nullglob
  regressions=(fuzz/regressions/"$t"/*)
  shopt -u nullglob
  if [ "${#regressions[@]}" -gt 0 ]; then
    echo "fuzz: $t: ${#regressions[@]} regression inputs"
    cargo fuzz run "${build_flags[@]}" "$t" "${regressions[@]}"
  fi
  echo "fuzz: $t: ${secs} s"
  cargo fuzz run "${build_flags[@]}" "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
    -max_total_time="$secs" -rss_limit_mb=4096 -timeout=10 -print_final_stats=1
done
