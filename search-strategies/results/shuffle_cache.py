#!/usr/bin/env python3
"""Writes a copy of a Kernel Tuner cache whose measured times are shuffled among its valid
configurations: a source that binds every parameter of its kernel but whose order says nothing
(the stress case of "A misleading prior" in search-strategies/README.md).

    python3 search-strategies/results/shuffle_cache.py IN.json.gz OUT.json.gz SEED
"""
import gzip
import json
import random
import sys


def main() -> None:
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    src, dst, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with gzip.open(src, "rt") as f:
        d = json.load(f)
    cache = d["cache"]
    keys = [
        k
        for k, v in cache.items()
        if isinstance(v.get("time"), (int, float)) and 0 < v["time"] < 1e20
    ]
    times = [cache[k]["time"] for k in keys]
    random.Random(seed).shuffle(times)
    for k, t in zip(keys, times):
        cache[k]["time"] = t
    d["kernel_name"] = "shuffled_" + d["kernel_name"]
    with gzip.open(dst, "wt") as f:
        json.dump(d, f)


if __name__ == "__main__":
    main()
