#!/usr/bin/env python3
"""Side-by-side table of a `search-bench --transfer ...` run: per space, the standardised score
(from search-bench's printed table) and frac@10/20/50 (from its traces) of each strategy with and
without transfer, and the mean over spaces.

Usage: python3 transfer_table.py BENCH_OUTPUT.txt TRACES.json [STRATEGY]
BENCH_OUTPUT.txt is search-bench's standard output, TRACES.json its --traces file; STRATEGY
(default `ensemble`) is compared with `STRATEGY+transfer`. Fractions of the optimum are
optimum / best-so-far after k evaluations, as in the crate's scorer (a failure never improves
the best; before the first success the fraction is 0); the optimum is the best time in the cache.
"""
import gzip
import json
import math
import os
import sys


def read_json(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return json.loads(f.read())


def optimum(cache_path):
    times = [e.get("time") for e in read_json(cache_path)["cache"].values()]
    return min(t for t in times if isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t))


def frac_at(run, k, opt):
    best = min((v for v in run[:k] if v is not None), default=None)
    return 0.0 if best is None else opt / best


def scores(text):
    """(space, strategy) -> std score from search-bench's printed tables."""
    out, space = {}, None
    for line in text.splitlines():
        if line.startswith("== "):
            space = line[3:].strip()
        elif space and line and not line.startswith("strategy"):
            f = line.split()
            if len(f) == 8:
                out[(space, f[0])] = float(f[6])
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    text = open(sys.argv[1]).read()
    traces = read_json(sys.argv[2])
    cold = sys.argv[3] if len(sys.argv) > 3 else "ensemble"
    warm = cold + "+transfer"
    score = scores(text)
    cols = ["score", "frac@10", "frac@20", "frac@50"]
    print(f"| space | {' | '.join(c + ' cold' for c in cols)} | {' | '.join(c + ' transfer' for c in cols)} |")
    print("|---|" + "---:|" * (2 * len(cols)))
    sums = {s: [0.0] * len(cols) for s in (cold, warm)}
    n = 0
    for space, by in traces.items():
        if cold not in by or warm not in by:
            continue
        opt = optimum(space)
        row = []
        for s in (cold, warm):
            runs = by[s]
            vals = [score[(space, s)]] + [sum(frac_at(r, k, opt) for r in runs) / len(runs) for k in (10, 20, 50)]
            sums[s] = [a + b for a, b in zip(sums[s], vals)]
            row += vals
        n += 1
        name = os.path.basename(space).replace(".json.gz", "")
        print(f"| {name} | " + " | ".join(f"{v:.3f}" for v in row) + " |")
    mean = [v / n for s in (cold, warm) for v in sums[s]]
    print("| **mean** | " + " | ".join(f"**{v:.3f}**" for v in mean) + " |")


if __name__ == "__main__":
    main()
