#!/usr/bin/env bash
# Reproducible timing of the tuning driver (README main job):
#   1. the main job: ResNet-50 on the simulated Ascend910B2, budget 64 per op, fresh bank;
#   2. the bank-warm rerun of the same job (every op is a hit, nothing is measured);
#   3. BERT layer on the host CPU runner, where measurement takes real time, for the share of
#      work spent outside the runner (strategy, bank, result file).
# Each run prints its own time accounting ("time: ..."); wall times come from the shell.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --bin tunebank
bin=target/release/tunebank
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME="$tmp/home" ASCEND_WORK_PATH="$tmp/work"
unset TUNE_BANK_PATH ASCEND_CACHE_PATH REPEAT_TUNE AOE_MODE
mkdir -p "$HOME" "$ASCEND_WORK_PATH"
run() {
  local label=$1
  shift
  local t0 t1
  t0=$(date +%s.%N)
  "$bin" "$@" 2>/dev/null | grep -E '^(tuning |time:)'
  t1=$(date +%s.%N)
  printf '%s: wall %.2f s\n\n' "$label" "$(echo "$t1 - $t0" | bc)"
}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
run "main job (cold bank)" tune --model fixtures/models/resnet50.onnx --job_type=2 \
  --soc_version=Ascend910B2 --budget 64
run "main job rerun (warm bank)" tune --model fixtures/models/resnet50.onnx --job_type=2 \
  --soc_version=Ascend910B2 --budget 64
run "BERT layer, cpu runner" tune --model fixtures/models/bert_layer.onnx --job_type=2 \
  --soc_version=Ascend910B2 --budget 16 --runner cpu --bank "$tmp/cpu.redb"
