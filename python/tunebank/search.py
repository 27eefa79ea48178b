"""Search from Python: spaces, the built-in strategies in ask/tell form, Kernel Tuner cache
replay, the scorer, and the comparison driver.

- :class:`Space` — ``Space(params, restrictions)`` enumerates the valid configurations;
  ``Space.from_cache(path)`` replays a Kernel Tuner cache file (with its measurements).
- :class:`Strategy` — ``Strategy(name, space, seed)``; ``ask(n)`` returns configuration dicts,
  ``tell(config, value_or_None)`` records a measurement. Same seed, same calls: same proposals.
- :func:`compare` — built-in strategies and strategies written in Python (a class or factory
  ``f(space, seed)`` whose objects have ``ask(n)`` and ``tell(config, value)``) replayed by the
  same Rust driver as ``search-bench``, scored beside other tuners' trace files.
- :func:`score` — the standardised score and fractions of the optimum of traces on a cache.
- :func:`strategies` — the built-in strategy names, the default first.
"""

from ._tunebank import Comparison, Space, Strategy, compare, score, strategies

__all__ = ["Comparison", "Space", "Strategy", "compare", "score", "strategies"]
