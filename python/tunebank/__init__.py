"""tunebank from Python: the content-addressed tuning-knowledge bank and its search strategies.

- :class:`Bank` — the layered op bank (``Bank.open(path, soc_version=...)``), look-ups
  (``lookup``, ``lookup_many``) and ``why``;
- :func:`key` and :func:`model_keys` — bank keys of an op template or of an ONNX model under
  ATC options given as keywords, exactly as the CLI derives them;
- :func:`tune` — an operator-tuning job (``tunebank tune --job_type=2``);
- :mod:`tunebank.tf` — tuning during training: a Keras callback or one call that tunes a
  TensorFlow training step when ``AOE_MODE`` is set (TensorFlow is the ``tf`` extra);
- :mod:`tunebank.torch` — the same for PyTorch: a ``torch.compile`` backend or one call that
  captures the forward, backward and optimizer update as a ``.pt2`` program and tunes it
  (torch is the ``torch`` extra);
- :mod:`tunebank.mindspore` — the same for MindSpore: the ``TrainOneStepCell`` of a network,
  loss and optimizer exported as MindIR and tuned (mindspore is not a dependency);
- :func:`training_precision_mode` — the precision a training run compiles a step under on a
  SoC when its script sets none (each framework's default, per SoC);
- :mod:`tunebank.search` — spaces, strategies with ask/tell, Kernel Tuner cache replay, the
  scorer and the comparison that also runs strategies written in Python;
- :mod:`tunebank.errors` — the exception classes.

The extension releases the GIL around look-ups, tuning and searches; a ``Bank`` may be used
from several threads at once.
"""

from . import errors
from ._tunebank import (
    KEY_SCHEMA_VERSION,
    Bank,
    Hit,
    TuneResult,
    __version__,
    key,
    model_keys,
    training_precision_mode,
    tune,
)
from . import search
from . import mindspore
from . import tf
from . import torch
from .errors import (
    BankBusyError,
    BankDamagedError,
    BankIOError,
    BankUnreachableError,
    InputError,
    NotExactError,
    TunebankError,
)

__all__ = [
    "KEY_SCHEMA_VERSION",
    "Bank",
    "Hit",
    "TuneResult",
    "__version__",
    "key",
    "model_keys",
    "training_precision_mode",
    "tune",
    "search",
    "mindspore",
    "tf",
    "errors",
    "TunebankError",
    "InputError",
    "BankIOError",
    "BankBusyError",
    "BankDamagedError",
    "BankUnreachableError",
    "NotExactError",
]
