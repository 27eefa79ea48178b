#!/usr/bin/env bash
# Runs the fuzz targets of fuzz/ (a cargo-fuzz project: libfuzzer-sys, `cargo fuzz` works on it
# too) under libFuzzer on the stable toolchain (RUSTC_BOOTSTRAP=1):
#  1. every kept regression input, fuzz/regressions/<target>/* (a past crash must stay fixed);
#  2. SECONDS of fuzzing per target, starting from the committed seeds (fuzz/seeds/<target>/,
#     made by `cargo run --release --example make_fuzz_seeds`) and the local, uncommitted
#     corpus fuzz/corpus/<target>/.
# A crash stops the script with libFuzzer's report; the input is under fuzz/artifacts/<target>/.
# Fix the bug, then keep the input: copy it to fuzz/regressions/<target>/.
#
# The targets are built by cargo itself with the flags cargo-fuzz 0.13 passes (sanitizer-coverage
# instrumentation, `--cfg fuzzing`, an explicit --target so build scripts stay uninstrumented),
# so neither a developer nor CI needs cargo-fuzz installed (building it takes minutes).
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   (default: 600 s, every target)
# FUZZ_PROFILE: `release` (the default, as `cargo fuzz run`: optimised, debug assertions on,
#   one codegen unit, AddressSanitizer) or `dev` (as `cargo fuzz run --dev --sanitizer none`: a
#   debug build, line tables only, with overflow checks and debug assertions, no sanitizer
#   runtime; it compiles in about the time the plain build of the fuzz crate takes). CI runs
#   `FUZZ_PROFILE=dev scripts/fuzz.sh 10`: the regressions plus 10 s of each target.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-600}"
shift || true
if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  targets=(decode_record load_caffe load_mindir load_onnx load_pt2 load_singleop load_tensorflow parse_options parse_response parse_restriction)
fi
profile="${FUZZ_PROFILE:-release}"
triple=$(rustc -vV | sed -n 's/^host: //p')
flags="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4"
flags+=" -Cllvm-args=-sanitizer-coverage-inline-8bit-counters"
flags+=" -Cllvm-args=-sanitizer-coverage-pc-table -Cllvm-args=-sanitizer-coverage-trace-compares"
flags+=" --cfg fuzzing -Cllvm-args=-simplifycfg-branch-fold-threshold=0 -Cdebug-assertions"
case "$triple" in *-linux-*) flags+=" -Cllvm-args=-sanitizer-coverage-stack-depth" ;; esac
case "$profile" in
  release)
    cargo_flags=(--release --config 'profile.release.debug="line-tables-only"')
    flags+=" -Zsanitizer=address -Ccodegen-units=1"
    out=release
    ;;
  dev)
    # Line tables only (not full debug info): crash backtraces keep file and line, and the
    # build of the fuzz crate's dependency tree is quicker.
    cargo_flags=(--config 'profile.dev.debug="line-tables-only"')
    out=debug
    ;;
  *)
    echo "fuzz.sh: FUZZ_PROFILE must be release or dev, not '$profile'" >&2
    exit 2
    ;;
esac
export RUSTC_BOOTSTRAP=1
bins=()
for t in "${targets[@]}"; do bins+=(--bin "$t"); done
RUSTFLAGS="$flags ${RUSTFLAGS:-}" cargo build --manifest-path fuzz/Cargo.toml --target "$triple" \
  "${cargo_flags[@]}" "${bins[@]}"
for t in "${targets[@]}"; do
  bin="fuzz/target/$triple/$out/$t"
  mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
  shopt -s nullglob
  regressions=(fuzz/regressions/"$t"/*)
  shopt -u nullglob
  if [ "${#regressions[@]}" -gt 0 ]; then
    echo "fuzz: $t: ${#regressions[@]} regression inputs"
    "$bin" -artifact_prefix="fuzz/artifacts/$t/" "${regressions[@]}"
  fi
  echo "fuzz: $t: ${secs} s"
  "$bin" -artifact_prefix="fuzz/artifacts/$t/" "fuzz/corpus/$t" "fuzz/seeds/$t" \
    -max_total_time="$secs" -rss_limit_mb=4096 -timeout=10 -print_final_stats=1
done
