"""What the training adapters (``tunebank.tf``, ``tunebank.torch``, ``tunebank.mindspore``)
share: where a captured step is written and the options it is tuned with, read from the
environment as ``tunebank tune`` reads it."""

import os

from ._tunebank import training_precision_mode

def aoe_mode():
    """``AOE_MODE``, stripped (``""`` when unset: nothing is to be tuned)."""
    return os.environ.get("AOE_MODE", "").strip()


def write(data, name):
    """Writes ``data`` to ``$ASCEND_WORK_PATH/<name>`` (default the working directory),
    atomically; returns the path."""
    out = os.environ.get("ASCEND_WORK_PATH") or os.getcwd()
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, name)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return path


def options(training, options, run, soc_version):
    """``options`` for a step captured by ``run`` (``"tensorflow"``, ``"torch"``,
    ``"mindspore"``) for ``soc_version``: a training step without ``precision_mode`` (or
    ``precision_mode_v2``) under the precision mode that run compiles it with on that SoC
    (:func:`tunebank.training_precision_mode`); a gradient job (``AOE_MODE=4``) without
    ``rank_size`` with ``RANK_SIZE``."""
    if training and "precision_mode" not in options and "precision_mode_v2" not in options:
        options["precision_mode"] = training_precision_mode(run, soc_version)
    if aoe_mode() == "4" and "rank_size" not in options and os.environ.get("RANK_SIZE"):
        options["rank_size"] = int(os.environ["RANK_SIZE"])
    return options
