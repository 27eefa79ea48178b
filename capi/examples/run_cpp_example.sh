#!/usr/bin/env bash
# Builds the C library and the C++ example converter, fills a scratch bank through the tunebank
# CLI, and looks the ops up from C++. Usage: capi/examples/run_cpp_example.sh [OPS.jsonl]
# (default: a two-op model written here). Needs cargo and g++; prints the converter's output.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
cargo build -q --release -p tunebank-capi -p tunebank --bin tunebank
lib="$root/target/release"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
ops="${1:-$work/ops.jsonl}"
if [ $# -eq 0 ]; then
  cat >"$ops" <<'OPS'
{"node_name":"fc1","op_type":"MatMul","inputs":[{"shape":[-1,64],"dtype":"float32","graph_input":"x"},{"shape":[64,32],"dtype":"float32"}],"outputs":[{"shape":[-1,32],"dtype":"float32"}]}
{"node_name":"relu1","op_type":"Relu","inputs":[{"shape":[-1,64],"dtype":"float32","graph_input":"x"}],"outputs":[{"shape":[-1,64],"dtype":"float32"}]}
OPS
fi
atc=(--soc_version=Ascend910B2 --input_shape=x:-1,64 --dynamic_batch_size=1,8)
# Tune "fc1" only (first line), so the converter sees hits and misses.
head -n 1 "$ops" >"$work/first.jsonl"
"$lib/tunebank" bank add --op "$work/first.jsonl" --bank "$work/bank.redb" \
  --strategy '{"baseM":128,"baseN":32}' --time-us 3.5 --baseline-us 7 "${atc[@]}" >/dev/null
g++ -std=c++17 -pthread -O2 -Wall -Wextra -I capi/include capi/examples/convert.cpp \
  -L"$lib" -ltunebank_capi -Wl,-rpath,"$lib" -o "$work/convert"
"$work/convert" --ops "$ops" --bank "$work/bank.redb" "${atc[@]}"
