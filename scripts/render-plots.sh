#!/usr/bin/env bash
# Renders the README pictures to PNG:
#   docs/tune-before-after.png        `tunebank tune --svg` on the ResNet-50 fixture (simulator,
#                                      default options), per-op times before and after
#   search-strategies/results/gap.png the strategy comparison (`search-bench`'s picture): mean
#                                      gap to the optimum on the public replay spaces, ours solid,
#                                      Kernel Tuner's three best dashed
# The replay step runs our strategies ($SEEDS seeds, budget 200): minutes per seed on two cores.
# TRACES=FILE reuses a `search-bench --traces` file instead. Needs the replay data
# ($TUNEBANK_DATA, default ../shared/data).
set -euo pipefail
cd "$(dirname "$0")/.."
data=${TUNEBANK_DATA:-../shared/data}
seeds=${SEEDS:-10}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release -p tunebank --bin tunebank --example svg_to_png
cargo build --release -p search-strategies --bin search-bench --example plot_traces

# 1. tune: per-op before/after on ResNet-50.
mkdir -p "$work/home" docs
env -u TUNE_BANK_PATH -u ASCEND_CACHE_PATH -u REPEAT_TUNE HOME="$work/home" \
  target/release/tunebank tune --model fixtures/models/resnet50.onnx --job_type=2 \
  --soc_version=Ascend910B2 --bank "$work/bank.redb" --output-dir "$work" --quiet \
  --svg "$work/tune.svg" > /dev/null
target/release/examples/svg_to_png "$work/tune.svg" docs/tune-before-after.png

# 2. search-bench: the comparison against Kernel Tuner's traces.
caches=("$data"/replay/benchmark_hub/*.json.gz "$data"/replay/schoonhoven2022/*.json.gz)
traces=${TRACES:-}
if [ -z "$traces" ]; then
  traces="$work/traces.json"
  target/release/search-bench "${caches[@]}" --seeds "$seeds" --budget 200 \
    --strategies ensemble,bayes_opt,genetic,annealing,random --traces "$traces" > /dev/null
fi
target/release/examples/plot_traces "${caches[@]}" --traces "$traces" --budget 200 \
  --peer "kt:$data/replay/KT_TRACES_dev.json.gz" --top 3 \
  --title "gap to the optimum on 15 replay spaces, mean of ${seeds} seeds (lower is better)" \
  --png search-strategies/results/gap.png
echo "wrote docs/tune-before-after.png and search-strategies/results/gap.png"
