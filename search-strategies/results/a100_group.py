#!/usr/bin/env python3
"""How fast do strategies reach the optimum's group on convolution_milo_A100? Reads search-bench
trace files (ours and peers'), maps each measured objective back to its configuration through
the Kernel Tuner cache (the traces hold objectives only), and prints per strategy:

  first     median evaluation (1-based) at which a configuration of the optimum's group is first
            measured (the group: configurations with the optimum's values of the --group
            parameters; 999 when a run never gets there)
  in group  mean number of evaluations spent in the group (of 200)
  optimum   runs that measure the optimum, and runs that measure the optimum or the runner-up
  1-20, 21-60  share of evaluations with all of the group's values in evaluations 1-20 and 21-60

usage: a100_group.py DATA_REPLAY_DIR TRACES.json [MORE.json[.gz] ...]
         [--space=benchmark_hub/convolution_milo_A100.json.gz]
         [--group=tile_size_x,tile_size_y,use_shmem,read_only,use_padding]
"""
import gzip, json, statistics, sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def main():
    opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    space = opts.get("space", "benchmark_hub/convolution_milo_A100.json.gz")
    group = opts.get("group", "tile_size_x,tile_size_y,use_shmem,read_only,use_padding").split(",")
    data, files = args[0], [load(p) for p in args[1:]]
    cache = load(f"{data}/{space}")
    keys = cache["tune_params_keys"]
    by_time = {}
    for v in cache["cache"].values():
        t = v.get("time")
        if isinstance(t, (int, float)) and t < 1e20:
            by_time[round(t, 9)] = {k: v[k] for k in keys}
    ranked = sorted(by_time)
    opt, second = ranked[0], ranked[1]
    want = {k: by_time[opt][k] for k in group}
    in_group = lambda c: c is not None and all(c[k] == v for k, v in want.items())
    size = sum(in_group(c) for c in by_time.values())
    print(f"== {space}: group {want}, {size} of {len(by_time)} valid configurations")
    print(f"{'strategy':28} {'first':>6} {'in group':>9} {'optimum':>8} {'<=2nd':>6} {'1-20':>6} {'21-60':>6}")
    for f in files:
        key = next((k for k in f if k.endswith(space)), None)
        if key is None:
            continue
        for strategy, runs in f[key].items():
            first, count, hit, hit2, early, mid = [], [], 0, 0, [], []
            for run in runs:
                configs = [by_time.get(round(v, 9)) if v is not None else None for v in run[:200]]
                g = [i + 1 for i, c in enumerate(configs) if in_group(c)]
                first.append(g[0] if g else 999)
                count.append(len(g))
                vals = [v for v in run[:200] if v is not None]
                hit += any(abs(v - opt) < 1e-9 for v in vals)
                hit2 += any(v <= second + 1e-9 for v in vals)
                early.append(sum(in_group(c) for c in configs[:20]) / 20)
                mid.append(sum(in_group(c) for c in configs[20:60]) / 40)
            n = len(runs)
            print(
                f"{strategy:28} {statistics.median(first):>6.0f} {sum(count) / n:>9.1f} "
                f"{hit:>4}/{n:<3} {hit2:>3}/{n:<3} {sum(early) / n:>6.3f} {sum(mid) / n:>6.3f}"
            )


if __name__ == "__main__":
    main()
