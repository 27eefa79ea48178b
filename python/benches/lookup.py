"""A look-up from Python against the same look-up in Rust alone, in one run.

Tunes ResNet-50 on the simulated Ascend910B2 into a temporary bank (small budget), then times,
for a hit and for a miss: ``Bank.lookup(key)`` from Python (timeit; the key parsed from hex, the
GIL released, a ``Hit`` built) and the Rust look-up it wraps (``Bank._time_rust_lookups``: the
hit read in place and its strategy written as JSON, as the C API does), each the best of 7
repeats of N calls. Prints per-call times and the ratio Python / Rust.

    python python/benches/lookup.py [N]
"""

import pathlib
import sys
import tempfile
import timeit

import tunebank

REPO = pathlib.Path(__file__).resolve().parents[2]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    with tempfile.TemporaryDirectory() as d:
        model = REPO / "fixtures" / "models" / "resnet50.onnx"
        tunebank.tune(model, bank=f"{d}/bank.db", output_dir=d, soc_version="Ascend910B2", budget=4)
        rows = tunebank.model_keys(model, soc_version="Ascend910B2")
        with tunebank.Bank.open(f"{d}/bank.db", soc_version="Ascend910B2", read_only=True) as bank:
            hit, miss = rows[0]["key"], "00" * 32
            assert bank.lookup(hit) is not None and bank.lookup(miss) is None
            print(f"{'look-up':<8}{'python':>12}{'rust':>12}{'ratio':>8}")
            for name, key in (("hit", hit), ("miss", miss)):
                py = min(timeit.repeat(lambda: bank.lookup(key), number=n, repeat=7)) / n
                rust = min(bank._time_rust_lookups(key, n) for _ in range(7)) / n
                print(f"{name:<8}{py * 1e9:>10.0f}ns{rust * 1e9:>10.0f}ns{py / rust:>7.2f}x")


if __name__ == "__main__":
    main()
