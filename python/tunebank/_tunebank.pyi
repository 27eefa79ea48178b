"""Type stubs of the native module behind :mod:`tunebank` (built from ``python/src``)."""

from os import PathLike
from typing import Any, Callable, Dict, Iterable, List, Optional, Protocol, Sequence, Tuple, Union

_Path = Union[str, "PathLike[str]"]
_Value = Union[int, float, str, bool]
Config = Dict[str, _Value]

__version__: str
KEY_SCHEMA_VERSION: int

class Hit:
    """One look-up hit: the answering layer, the strategy and its measured times."""

    key: str
    """The key looked up (64 hex digits)."""
    layer: str
    """The answering layer: ``"custom"``, ``"built-in"``, ``"built-in#N"``."""
    tuned_us: float
    """The stored strategy's time, µs."""
    baseline_us: float
    """The baseline (default strategy) time, µs."""
    default_confirmed: bool
    """The strategy is the runner's default, confirmed by a finished search."""
    shadowed: List[str]
    """Lower layers that also hold the key and were shadowed by ``layer``."""
    rejected_above: List[str]
    """Higher layers whose entry was rejected (another key schema version or kind)."""
    @property
    def strategy(self) -> Dict[str, Any]:
        """The strategy (parameter name → value), decoded on each access."""
    @property
    def strategy_json(self) -> str:
        """The strategy as compact JSON, parameters in name order (the C API's form)."""

class Bank:
    """An opened layered op bank, usable from several threads; a context manager."""

    @staticmethod
    def open(
        path: Optional[_Path] = None,
        *,
        soc_version: str,
        builtin: Sequence[_Path] = ...,
        read_only: bool = False,
        default_builtin: bool = True,
    ) -> "Bank":
        """Opens the op bank for ``soc_version``: the custom layer ``path`` (created unless
        ``read_only``; ``None`` = AOE's path rules), the ``builtin`` files, then the default
        built-in bank unless ``default_builtin=False``. Raises :class:`tunebank.InputError`,
        :class:`tunebank.BankIOError`, :class:`tunebank.BankBusyError`,
        :class:`tunebank.BankDamagedError` or :class:`tunebank.BankUnreachableError`."""
    @property
    def soc_version(self) -> str:
        """The SoC the bank was opened for."""
    def lookup(self, key: str) -> Optional[Hit]:
        """Looks one hex key up, custom layer first: a :class:`Hit`, or ``None`` on a miss."""
    def lookup_many(self, keys: Sequence[str]) -> List[Optional[Hit]]:
        """Looks many keys up, one read per layer: one hit or ``None`` per key, in order."""
    def lookup_ops(
        self, ops: Sequence[Dict[str, Any]], *, strict: bool = False, **atc_options: Any
    ) -> Dict[str, Any]:
        """Looks op templates up as ``tunebank lookup --json`` does: each row's ``result`` is
        ``hit`` (tuned at this exact shape), ``nearest`` (the nearest tuned shape of the op's
        family, with ``source``, ``distance``, ``tuned_shapes``, ``adapted`` and a ``strategy``
        that fits this shape) or ``miss`` (with ``not_served``). ``strict=True`` answers exact
        hits only and raises :class:`tunebank.errors.NotExactError` otherwise."""
    def why(
        self,
        ops: Optional[Sequence[Dict[str, Any]]] = None,
        *,
        model: Optional[_Path] = None,
        graph_bank: Optional[_Path] = None,
        nearest: int = 3,
        **atc_options: Any,
    ) -> Dict[str, Any]:
        """``bank-inspect why`` for op templates or a model, as the ``--json`` dict. A model's
        units are a converter's (``input_format``'s framework default, the graph bank
        ``graph_bank``, else AOE's resolution, applied first), as ``why --model``."""
    def why_text(
        self,
        ops: Optional[Sequence[Dict[str, Any]]] = None,
        *,
        model: Optional[_Path] = None,
        graph_bank: Optional[_Path] = None,
        nearest: int = 3,
        **atc_options: Any,
    ) -> str:
        """``bank-inspect why`` for op templates or a model, as printed."""
    def close(self) -> None:
        """Closes the bank; look-ups in flight finish first, later calls raise."""
    def __enter__(self) -> "Bank": ...
    def __exit__(self, *exc: Any) -> bool: ...

def training_precision_mode(run: str, soc_version: str) -> str:
    """The ``precision_mode`` a training run (``"tensorflow"``, ``"torch"``, ``"mindspore"``)
    compiles a step under on ``soc_version`` when its script sets none (TF Adapter's, GE's and
    MindSpore's own defaults, per SoC); ``InputError`` for an unknown run or SoC."""

def key(op: Dict[str, Any], **atc_options: Any) -> List[str]:
    """The bank keys (hex) of one op template under the ATC options, one per dynamic profile
    (``soc_version`` required), exactly as ``tunebank key`` derives them."""

def model_keys(
    path: _Path, *, graph_bank: Optional[_Path] = None, **atc_options: Any
) -> List[Dict[str, Any]]:
    """Every unit of an ONNX model as a converter resolves it, the graph bank applied first
    (``graph_bank``, else AOE's resolution of the custom graph bank and the built-in one):
    ``{"op_name", "op_type", "ir_type", "profile", "key"}`` (the rows of ``tunebank convert
    --json``)."""

class TuneResult:
    """What a tuning job did."""

    job_type: int
    """1 (SGAT), 2 (OPAT) or 4 (GDAT)."""
    result_file: str
    """The AOE result file written."""
    result: str
    """``tuning successful``, ``tuning failed`` or ``tuning incomplete``."""
    tasks: int
    """Unique keys in the job (1 for GDAT)."""
    units: int
    """Ops (OPAT, across profiles), subgraphs (SGAT) or gradients (GDAT) the model gives."""
    interrupted: bool
    """The job stopped before every task ran."""
    @property
    def report(self) -> Dict[str, Any]:
        """The result file's content."""
    @property
    def summary(self) -> Dict[str, int]:
        """``repo_summary``: ``repo_add_num``, ``repo_hit_num``, …"""

def tune(
    model: _Path,
    job_type: Optional[int] = None,
    *,
    bank: Optional[_Path] = None,
    graph_bank: Optional[_Path] = None,
    op_bank: Optional[_Path] = None,
    output_dir: Optional[_Path] = None,
    config: Optional[_Path] = None,
    platform_config: Optional[_Path] = None,
    runner: str = "sim",
    strategy: str = "ensemble",
    budget: int = 64,
    seed: int = 1,
    workers: Optional[int] = None,
    repeat_tune: Optional[bool] = None,
    transfer: bool = True,
    range_shapes: Optional[int] = None,
    shape_samples: Optional[_Path] = None,
    rank_size: Optional[int] = None,
    devices_per_server: int = 8,
    cluster: Optional[_Path] = None,
    max_segments: int = 8,
    progress: Optional[Callable[[Dict[str, Any]], None]] = None,
    **atc_options: Any,
) -> TuneResult:
    """Tunes an ONNX model as ``tunebank tune --job_type=N`` does, through the same job API:
    2 operator tuning into the op bank (the graph bank ``graph_bank``, else AOE's resolution,
    applied first), 1 subgraph tuning (simulator; node strategies from ``op_bank``) into the
    graph bank, 4 gradient tuning of a ``rank_size``-device data-parallel job into the gradient
    bank; ``None`` takes ``AOE_MODE``, else 2. ``workers`` (measurement slots, dealt out among the
    ops searched as batch widths; ``--tuning_parallel_num``), ``repeat_tune`` and ``output_dir``
    default to ``TUNING_PARALLEL_NUM``, ``REPEAT_TUNE`` and ``ASCEND_WORK_PATH`` (then aoe.ini,
    ``config`` or AOE's locations), as for the CLI. ``range_shapes`` and ``shape_samples``: as
    ``--range-shapes`` and ``--shape-samples`` (a range in ``input_shape`` tuned at at most that
    many shapes, or at the samples that serve the others best). ``transfer`` (operator tuning): a miss's
    search starts from the winners of related bank records. ``platform_config`` is the
    simulator's SoC description file (or a folder of ``<SoC>.ini`` files), as
    ``--platform-config``. ``progress`` is called with
    ``{"name", "decision", "before_us", "after_us", "failure", "done", "total"}`` after each
    task."""

# tunebank.search (re-exported there)

class Space:
    """Parameters with value lists and the valid configurations (Kernel Tuner restrictions)."""

    def __init__(
        self,
        params: Dict[str, List[_Value]],
        restrictions: Sequence[str] = ...,
        constants: Optional[Dict[str, _Value]] = None,
    ) -> None: ...
    @staticmethod
    def from_cache(path: _Path) -> "Space":
        """The space of a Kernel Tuner cache file, with its measurements."""
    def __len__(self) -> int: ...
    @property
    def names(self) -> List[str]:
        """Parameter names, in order."""
    def config(self, i: int) -> Config:
        """The ``i``-th valid configuration."""
    def index(self, config: Config) -> Optional[int]:
        """The index of a configuration among the valid ones, ``None`` if not valid."""
    def measure(self, config: Config) -> Optional[float]:
        """A replayed space's measurement of ``config`` (``None`` = failed)."""
    @property
    def optimum(self) -> Optional[float]:
        """A replayed space's best measured objective."""

class Strategy:
    """A built-in strategy in ask/tell form over one space, seeded."""

    def __init__(self, name: str, space: Space, seed: int = 0) -> None: ...
    @property
    def name(self) -> str: ...
    def ask(self, n: int = 1) -> List[Config]:
        """Up to ``n`` unmeasured configurations to measure next."""
    def tell(self, config: Config, value: Optional[float]) -> None:
        """Records a measurement (lower is better; ``None`` = failed)."""
    def expected_gain(self, horizon: int = 20) -> Optional[float]:
        """The model's expected gain of the next ``horizon`` measurements, as a fraction of the
        best (``None``: no model, or too little data); asking it changes no proposal."""
    @property
    def evaluations(self) -> int: ...
    @property
    def best(self) -> Optional[Tuple[Config, float]]: ...

class AskTell(Protocol):
    """What a Python strategy object offers to :func:`compare`."""

    def ask(self, n: int) -> Iterable[Config]: ...
    def tell(self, config: Config, value: Optional[float]) -> None: ...

class Comparison:
    """Scores of every strategy on every space."""

    traces: Dict[str, Dict[str, List[List[Optional[float]]]]]
    @property
    def rows(self) -> List[Dict[str, Any]]:
        """``space``, ``strategy``, ``score``, ``runs``, ``frac@K`` per row."""
    @property
    def means(self) -> List[Tuple[str, Dict[str, Any]]]:
        """Mean over spaces per strategy, best first."""

def compare(
    caches: Sequence[_Path],
    strategies: Sequence[Union[str, Callable[[Space, int], AskTell]]],
    *,
    seeds: int = 10,
    seed_base: int = 0,
    budget: int = 200,
    peers: Sequence[_Path] = ...,
) -> Comparison:
    """Replays the strategies on the caches through ``search-bench``'s driver and scores them
    beside the ``peers`` trace files."""

def score(
    traces: Sequence[Sequence[Optional[float]]], cache: _Path, budget: int = 200
) -> Dict[str, float]:
    """Standardised score and fractions of the optimum of ``traces`` on a cache's space."""

def strategies() -> List[str]:
    """The built-in strategy names, the default first."""
