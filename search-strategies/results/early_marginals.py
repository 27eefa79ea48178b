#!/usr/bin/env python3
"""Where do strategies spend evaluations 11-20? Reads search-bench trace files (ours and peers'),
maps each measured objective back to its configuration through the Kernel Tuner cache (the
traces hold objectives only; times are unique up to a handful of ties), and prints per space:

  frac@10, frac@20    mean fraction of the optimum after 10 and 20 evaluations
  edge                share of (proposal, parameter) pairs in evaluations 11-20 at the first or
                      last value of a parameter with at least three values (the valid set's own
                      share is the `valid set` row)
  tv(top2%)           total-variation distance between the per-parameter value histogram of
                      evaluations 11-20 and that of the space's best 2 % (0 = the same
                      marginals as the good region, 1 = disjoint), mean over parameters

usage: early_marginals.py DATA_REPLAY_DIR TRACES.json [MORE.json[.gz] ...] [--spaces a,b,...]
"""
import collections, gzip, json, sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--spaces")]
    spaces = "benchmark_hub/convolution_milo_A100.json.gz,benchmark_hub/convolution_milo_A4000.json.gz,benchmark_hub/convolution_milo_MI250X.json.gz"
    for a in sys.argv[1:]:
        if a.startswith("--spaces="):
            spaces = a.split("=", 1)[1]
    data, files = args[0], [load(p) for p in args[1:]]
    for space in spaces.split(","):
        cache = load(f"{data}/{space}")
        keys, tp = cache["tune_params_keys"], cache["tune_params"]
        rows = {}
        for k, v in cache["cache"].items():
            t = v.get("time")
            rows[k] = t if isinstance(t, (int, float)) and t < 1e20 else None
        by_value = {}
        for k, t in rows.items():
            if t is not None:
                by_value.setdefault(t, k.split(","))
        ok = sorted(t for t in rows.values() if t is not None)
        opt = ok[0]
        free = [i for i, k in enumerate(keys) if len(tp[k]) > 1]
        wide = [i for i in free if len(tp[keys[i]]) >= 3]
        top = [k.split(",") for k, t in rows.items() if t is not None and t <= ok[len(ok) // 50]]

        def hist(configs, i):
            c = collections.Counter(x[i] for x in configs)
            n = max(1, len(configs))
            return [c.get(str(v), 0) / n for v in tp[keys[i]]]

        def edge(configs):
            ends = sum(x[i] in (str(tp[keys[i]][0]), str(tp[keys[i]][-1])) for x in configs for i in wide)
            return ends / max(1, len(configs) * len(wide))

        def tv(configs):
            return sum(0.5 * sum(abs(a - b) for a, b in zip(hist(configs, i), hist(top, i))) for i in free) / len(free)

        def frac(trace, k):
            b = [t for t in trace[:k] if t is not None]
            return opt / min(b) if b else 0.0

        valid = [k.split(",") for k in rows]
        print(f"== {space} (best 2 %: {len(top)} configurations)")
        print(f"  {'strategy':<22} {'frac@10':>8} {'frac@20':>8} {'edge':>6} {'tv(top2%)':>10} {'runs':>5}")
        print(f"  {'valid set':<22} {'':>8} {'':>8} {edge(valid):6.2f} {tv(valid):10.2f}")
        for f in files:
            by = next((v for k, v in f.items() if k.endswith(space) or space.endswith(k)), {})
            for name, runs in by.items():
                mid = [by_value[t] for r in runs for t in r[10:20] if t is not None and t in by_value]
                f10 = sum(frac(r, 10) for r in runs) / len(runs)
                f20 = sum(frac(r, 20) for r in runs) / len(runs)
                print(f"  {name:<22} {f10:8.3f} {f20:8.3f} {edge(mid):6.2f} {tv(mid):10.2f} {len(runs):5}")


if __name__ == "__main__":
    main()
