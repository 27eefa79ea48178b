#!/usr/bin/env python3
"""How many runs of a `search-bench --traces` file reach one of a space's k best configurations,
and how soon: per strategy, the runs whose best-so-far is at most the k-th best time of the cache
within the budget, and the median evaluations those runs needed.

Usage: python3 reach_rank.py TRACES.json CACHE.json.gz K [K ...] [--budget N]
TRACES.json is search-bench's --traces file; CACHE is the Kernel Tuner cache of the space to read
(its path as given to search-bench: the traces are keyed by it); each K is a rank (1 = the
optimum). The budget defaults to 200. Used for pnpoly on RTX 2070 SUPER, where matching AOE-GA's
median needs one of the 6 best (search-strategies/README.md, "Under a trusted prior: alignment
later, a larger pool").
"""
import gzip
import json
import math
import statistics
import sys


def read_json(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return json.loads(f.read())


def kth_best(cache_path, k):
    times = sorted(
        t
        for t in (e.get("time") for e in read_json(cache_path)["cache"].values())
        if isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t)
    )
    if not 1 <= k <= len(times):
        sys.exit(f"{cache_path}: rank {k} is outside 1..{len(times)}")
    return times[k - 1]


def first_at_most(run, target, budget):
    """1-based evaluation at which the run's best-so-far first is at most `target`, or None."""
    for i, v in enumerate(run[:budget]):
        if isinstance(v, (int, float)) and v <= target:
            return i + 1
    return None


def main(argv):
    budget = 200
    if "--budget" in argv:
        i = argv.index("--budget")
        budget = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2 :]
    if len(argv) < 3:
        sys.exit(__doc__)
    traces_path, cache_path, ranks = argv[0], argv[1], [int(k) for k in argv[2:]]
    traces = read_json(traces_path)
    if cache_path not in traces:
        sys.exit(f"{traces_path}: no traces for {cache_path} (keys: {', '.join(traces)})")
    print(f"{'strategy':<22} {'rank':>5} {'time':>12} {'runs reaching':>14} {'median evals':>13}")
    for strategy, runs in traces[cache_path].items():
        for k in ranks:
            target = kth_best(cache_path, k)
            firsts = [f for f in (first_at_most(r, target, budget) for r in runs) if f is not None]
            median = statistics.median(firsts) if firsts else "-"
            print(f"{strategy:<22} {k:>5} {target:>12.6f} {len(firsts):>6} of {len(runs):<5} {median:>13}")


if __name__ == "__main__":
    main(sys.argv[1:])
