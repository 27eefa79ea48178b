"""Kernel Tuner's strategies and tunebank's, on the same Kernel Tuner cache files, in one process.

Kernel Tuner runs in its own simulation mode (``simulation_mode=True``: every measurement is read
from the cache file, nothing is compiled); its valid set is the cache's configurations, as in
Kernel Tuner's published comparisons. tunebank's strategies are replayed on the same caches by
``tunebank.search.compare``, and a strategy written here in Python (``Greedy``, a hill climber)
runs in the same Rust driver. All runs are scored by the same code (``tunebank.search.score``):
the standardised score of Willemsen et al. (2024), 0 = random search, 1 = the optimum at once,
and the fraction of the optimum reached after 20 and 50 evaluations.

    python python/examples/kernel_tuner_compare.py [--seeds N] [--budget B] [CACHE ...]

Defaults: the two replay fixtures of the repository, 5 seeds, budget 100.
"""

import argparse
import gzip
import json
import pathlib
import random
import tempfile
import time
import warnings

import numpy as np
from kernel_tuner import tune_kernel

import tunebank
from tunebank import search

REPLAY = pathlib.Path(__file__).resolve().parents[2] / "search-strategies" / "fixtures" / "replay"
DEFAULT_CACHES = [
    REPLAY / "schoonhoven2022" / "convolution_P100.json.gz",
    REPLAY / "benchmark_hub" / "convolution_milo_A100.json.gz",
]
KT_STRATEGIES = ["random_sample", "genetic_algorithm", "simulated_annealing", "pso", "greedy_ils"]
OURS = ["ensemble", "bayes_opt", "random"]


class Greedy:
    """A researcher's idea in pure Python: start random, then try unmeasured neighbours
    (one parameter changed) of the best configuration so far."""

    name = "greedy"

    def __init__(self, space, seed):
        self.space, self.rng = space, random.Random(seed)
        self.told, self.best = set(), None
        self.values = {n: sorted({space.config(i)[n] for i in range(len(space))}, key=str)
                       for n in space.names}

    def ask(self, n):
        out = []
        if self.best is not None:
            config, _ = self.best
            for name in self.rng.sample(self.space.names, len(self.space.names)):
                for v in self.values[name]:
                    c = dict(config, **{name: v})
                    i = self.space.index(c)
                    if i is not None and i not in self.told and c not in out:
                        out.append(c)
                    if len(out) >= n:
                        return out
        while len(out) < n and len(self.told) + len(out) < len(self.space):
            c = self.space.config(self.rng.randrange(len(self.space)))
            if self.space.index(c) not in self.told and c not in out:
                out.append(c)
        return out

    def tell(self, config, value):
        self.told.add(self.space.index(config))
        if value is not None and (self.best is None or value < self.best[1]):
            self.best = (config, value)


def kernel_tuner_trace(cache_path, strategy, seed, budget):
    """One Kernel Tuner run in simulation mode: objectives of the unique configurations in the
    order first measured (None for a failed one), at most `budget`."""
    cache = json.load(gzip.open(cache_path)) if cache_path.suffix == ".gz" else json.load(open(cache_path))
    names = cache["tune_params_keys"]
    params = cache["tune_params"]
    # Kernel Tuner returns the cache entries it read; give each entry its configuration, typed
    # as tune_params has it, so runs can be told apart.
    by_text = {n: {str(v): v for v in params[n]} for n in names}
    for k, entry in cache["cache"].items():
        if isinstance(entry, dict):
            entry.update({n: by_text[n][t] for n, t in zip(names, k.split(","))})
    valid = set(cache["cache"])
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cache, f)

    def in_cache(p):
        # A named function, not a lambda: Kernel Tuner parses a lambda's source text.
        return ",".join(str(p[n]) for n in names) in valid

    random.seed(seed)
    np.random.seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, _ = tune_kernel(
            cache["kernel_name"], "__global__ void kernel() {}", cache["problem_size"], [], params,
            restrictions=in_cache,
            cache=f.name, simulation_mode=True, strategy=strategy,
            strategy_options={"max_fevals": budget}, verbose=False, quiet=True)
    pathlib.Path(f.name).unlink()
    seen, trace = set(), []
    for r in results:
        config = tuple(r.get(n) for n in names)
        if config in seen:
            continue
        seen.add(config)
        t = r.get("time")
        trace.append(float(t) if isinstance(t, (int, float)) and np.isfinite(t) else None)
    return trace[:budget]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("caches", nargs="*", type=pathlib.Path, default=DEFAULT_CACHES)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--budget", type=int, default=100)
    args = ap.parse_args()

    rows = {}
    for cache in args.caches:
        start = time.perf_counter()
        ours = search.compare([cache], OURS + [Greedy], seeds=args.seeds, budget=args.budget)
        (key,) = ours.traces
        for name, traces in ours.traces[key].items():
            rows.setdefault(name, []).append(search.score(traces, cache, budget=args.budget))
        t_ours = time.perf_counter() - start
        start = time.perf_counter()
        for s in KT_STRATEGIES:
            traces = [kernel_tuner_trace(cache, s, seed, args.budget) for seed in range(args.seeds)]
            rows.setdefault(f"kt:{s}", []).append(search.score(traces, cache, budget=args.budget))
        t_kt = time.perf_counter() - start
        print(f"{cache.name}: {len(search.Space.from_cache(cache))} configurations; "
              f"tunebank {t_ours:.1f} s, Kernel Tuner {t_kt:.1f} s")

    print(f"\nmean over {len(args.caches)} spaces, {args.seeds} seeds, budget {args.budget} "
          f"(tunebank {tunebank.__version__})")
    print(f"{'strategy':<24}{'score':>8}{'frac@20':>9}{'frac@50':>9}")
    table = sorted(rows.items(), key=lambda kv: -np.mean([r["score"] for r in kv[1]]))
    for name, scores in table:
        mean = lambda f: np.mean([r[f] for r in scores])  # noqa: E731
        print(f"{name:<24}{mean('score'):>8.3f}{mean('frac@20'):>9.3f}{mean('frac@50'):>9.3f}")
    return table


if __name__ == "__main__":
    main()
