"""Tuning from MindSpore, as MindSpore hands a training graph to AOE
(``set_context(aoe_tune_mode="online")``): the network, its loss and its optimizer as one
``nn.TrainOneStepCell`` — forward, the gradients MindSpore's autodiff writes
(``Conv2DBackpropFilter``, ``BatchNormGrad``, ``ReluGrad`` …) and the optimizer's update
(``ApplyMomentum``, ``Adam``, ``AdamWeightDecay``) — exported by ``mindspore.export`` as a
MindIR file (``<name>_step.mindir`` in ``ASCEND_WORK_PATH``) and tuned with
``--framework=1``; the network then trains on untouched. One call in a script::

    tunebank.mindspore.tune_step(net, loss_fn, optimizer, (x, y))

or a callback of ``Model.train``::

    model.train(epochs, dataset, callbacks=[tunebank.mindspore.TuneCallback((x, y))])

Both read the environment as ``tunebank tune``, ``tunebank.tf`` and ``tunebank.torch`` do:
``AOE_MODE`` (2 operator tuning, 1 subgraph tuning, 4 gradient tuning; unset: nothing is
done), ``TUNE_BANK_PATH``, ``ASCEND_CACHE_PATH``, ``REPEAT_TUNE``, ``ASCEND_WORK_PATH`` (where the
result file and the MindIR are written; default the working directory) and ``RANK_SIZE``.

A step without ``precision_mode`` is tuned under the precision MindSpore compiles it with when
the script sets none: ``allow_fp32_to_fp16`` on the Atlas training series (the 910A family),
``must_keep_origin_dtype`` on Atlas A2 and every other product
(:func:`tunebank.training_precision_mode`). ``mindspore`` is not a dependency of the package:
install it beside it.
"""

import logging
import os
import tempfile

from . import _step
from . import tune as _tune

__all__ = ["TuneCallback", "capture", "tune_step"]

log = logging.getLogger("tunebank")


def capture(train_network, inputs, *, name="model"):
    """The MindIR bytes of ``train_network`` (a ``TrainOneStepCell``, or any cell whose call
    is one training step) traced for ``inputs`` (a tuple of tensors of the batch's shapes:
    the network's inputs, then the labels), as ``mindspore.export`` writes them. Nothing
    runs: the weights and the optimizer's state are untouched."""
    import mindspore

    train_network.set_train(True)
    with tempfile.TemporaryDirectory() as d:
        base = os.path.join(d, name)
        mindspore.export(train_network, *inputs, file_name=base, file_format="MINDIR")
        with open(base + ".mindir", "rb") as f:
            return f.read()


def train_step(network, loss_fn, optimizer):
    """The ``TrainOneStepCell`` MindSpore's ``Model.train`` builds of a network, its loss and
    its optimizer (``nn.WithLossCell`` then ``nn.TrainOneStepCell``)."""
    from mindspore import nn

    return nn.TrainOneStepCell(nn.WithLossCell(network, loss_fn), optimizer)


def _tune_cell(train_network, inputs, name, soc_version, options):
    log.info("in tune mode, training graph handled by tools.")
    path = _step.write(capture(train_network, inputs, name=name), f"{name}_step.mindir")
    log.info("Aoe tuning graph.")
    options = _step.options(True, options, "mindspore", soc_version)
    return _tune(path, framework=1, soc_version=soc_version, **options)


def tune_step(network, loss_fn, optimizer, inputs, *, name=None, soc_version="Ascend910B2",
              **options):
    """Tunes one training step of ``network`` with ``loss_fn`` and ``optimizer`` when
    ``AOE_MODE`` is set (else returns ``None`` and does nothing): writes
    ``<name>_step.mindir`` to ``ASCEND_WORK_PATH`` (or the working directory), tunes it with
    ``tunebank.tune`` (``--framework=1``, the job type from ``AOE_MODE``, the gradient job's
    ``rank_size`` from ``RANK_SIZE``) and returns the :class:`tunebank.TuneResult`.
    ``inputs`` is one batch ``(x, labels)`` of the training's shapes; ``options`` are further
    ATC options or ``tune`` keywords."""
    if not _step.aoe_mode():
        return None
    name = name or type(network).__name__.lower()
    cell = train_step(network, loss_fn, optimizer)
    return _tune_cell(cell, inputs, name, soc_version, dict(options))


_callback = None


def _callback_class():
    """The ``mindspore.train.Callback`` subclass, made once, when first asked for (MindSpore
    is imported then, not with tunebank)."""
    global _callback
    if _callback is not None:
        return _callback
    from mindspore.train import Callback

    class TuneCallback(Callback):
        """A ``Model.train`` callback that tunes the training network at the start of
        training when ``AOE_MODE`` is set (see :func:`tune_step`), then lets training go on;
        ``callback.result`` is the :class:`tunebank.TuneResult` (``None`` without
        ``AOE_MODE``). The callback is not handed a batch, so ``inputs`` is one batch
        ``(x, labels)`` of the dataset's shapes; ``options`` go to the tuning job."""

        def __init__(self, inputs, name="model", soc_version="Ascend910B2", **options):
            super().__init__()
            self._inputs = inputs
            self._name = name
            self._soc = soc_version
            self._options = options
            self.result = None

        def on_train_begin(self, run_context):
            if self.result is not None or not _step.aoe_mode():
                return
            cell = run_context.original_args().train_network
            self.result = _tune_cell(cell, self._inputs, self._name, self._soc,
                                     dict(self._options))

    _callback = TuneCallback
    return _callback


def __getattr__(name):
    if name == "TuneCallback":
        return _callback_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
