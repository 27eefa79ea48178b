"""Tuning during training, as AOE's TFAdapter does it: the training script runs, the step's
graph (forward, backward and the optimizer's updates) is handed to the tuner once, at the first
batch, and training goes on.

One line in a Keras script::

    model.fit(x, y, callbacks=[tunebank.tf.TuneCallback()])

or, in a custom loop, before the first step::

    tunebank.tf.tune_step(model, loss_fn, optimizer, (x, y))

Both read the environment as ``tunebank tune`` does: ``AOE_MODE`` (2 operator tuning, 1 subgraph
tuning, 4 gradient tuning; unset: nothing is done), ``TUNE_BANK_PATH``, ``ASCEND_CACHE_PATH``,
``REPEAT_TUNE``, ``ASCEND_WORK_PATH`` (where the result file and the step graph,
``<name>_step.pb``, are written; default the working directory) and ``RANK_SIZE`` (the devices of
a data-parallel job, for gradient tuning). They log the two lines AOE's guide shows
(``in tune mode, training graph handled by tools.`` and ``Aoe tuning graph.``) on the
``tunebank`` logger.

The step graph is a ``tf.function`` of one step traced with the batch's shapes (nothing runs:
the model's weights and the optimizer's state are untouched), its variables frozen to their
shapes. TensorFlow is an optional dependency: ``pip install ./python[tf]``.
"""

import logging

from . import _step
from . import tune as _tune

__all__ = ["step_graph", "tune_step", "TuneCallback"]

log = logging.getLogger("tunebank")

_RESOURCE = 20  # DT_RESOURCE


def _variables(model, optimizer):
    """Every tf.Variable the step may read (Keras 3 variables hold theirs in `.value`)."""
    found = []
    for v in list(getattr(model, "variables", [])) + list(getattr(optimizer, "variables", [])):
        v = getattr(v, "value", v)
        if hasattr(v, "handle"):
            found.append(v)
    return found


def _freeze_to_shapes(concrete, variables):
    """The traced step's GraphDef with each resource placeholder turned into the VarHandleOp
    of its variable (dtype and shape), so the graph carries what the tuner reads."""
    import tensorflow as tf
    from tensorflow.python.ops import handle_data_util

    by_handle = {id(v.handle): v for v in variables}
    shapes = {}
    for external, internal in concrete.graph.captures:
        if internal.dtype != tf.resource:
            continue
        v = by_handle.get(id(external))
        if v is not None:
            shapes[internal.op.name] = (v.dtype, v.shape, v.name.split(":")[0])
            continue
        data = handle_data_util.get_resource_handle_data(internal)
        if data.shape_and_type:
            st = data.shape_and_type[0]
            shapes[internal.op.name] = (
                tf.dtypes.as_dtype(st.dtype),
                tf.TensorShape(st.shape),
                internal.op.name,
            )
    gd = concrete.graph.as_graph_def()
    for n in gd.node:
        if n.op != "Placeholder" or n.attr["dtype"].type != _RESOURCE:
            continue
        if n.name not in shapes:
            raise ValueError(
                f"step graph: the resource input {n.name!r} is no variable of the model or the "
                "optimizer and carries no shape: expected every variable the step reads to be "
                "the model's or the optimizer's"
            )
        dtype, shape, name = shapes[n.name]
        n.op = "VarHandleOp"
        n.ClearField("attr")
        n.attr["dtype"].type = dtype.as_datatype_enum
        n.attr["shape"].shape.CopyFrom(shape.as_proto())
        n.attr["shared_name"].s = name.encode()
    del gd.library.function[:]
    return gd


def step_graph(model, loss, optimizer, batch):
    """The GraphDef (bytes) of one training step of ``model`` on ``batch`` = ``(x, y)``:
    ``loss(y, model(x, training=True))``, its gradient with respect to the trainable
    variables, and ``optimizer.apply_gradients``. Traced, not run."""
    import tensorflow as tf

    x, y = batch
    variables = list(model.trainable_variables)
    if not getattr(optimizer, "built", True) and hasattr(optimizer, "build"):
        optimizer.build(variables)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            value = loss(y, model(x, training=True))
        grads = tape.gradient(value, variables)
        optimizer.apply_gradients(zip(grads, variables))
        return value

    concrete = step.get_concrete_function(
        tf.TensorSpec(x.shape, x.dtype, name="input"),
        tf.TensorSpec(y.shape, y.dtype, name="labels"),
    )
    gd = _freeze_to_shapes(concrete, _variables(model, optimizer))
    return gd.SerializeToString(deterministic=True)


#: The ``precision_mode`` a TensorFlow training run compiles under when the script sets none:
#: TF Adapter's training default, the same on every SoC (:func:`tunebank.training_precision_mode`).
TRAINING_PRECISION_MODE = _step.training_precision_mode("tensorflow", "Ascend910B2")


def tune_step(model, loss, optimizer, batch, *, name=None, soc_version="Ascend910B2", **options):
    """Tunes one training step when ``AOE_MODE`` is set (else returns ``None`` and does
    nothing): writes ``<name>_step.pb`` to ``ASCEND_WORK_PATH`` (or the working directory),
    tunes it with ``tunebank.tune`` (``--framework=3``, the job type from ``AOE_MODE``, the
    gradient job's ``rank_size`` from ``RANK_SIZE``) and returns the
    :class:`tunebank.TuneResult`. ``options`` are further ATC options or ``tune`` keywords.

    Without ``precision_mode`` (or ``precision_mode_v2``) the step is tuned under
    ``allow_fp32_to_fp16``, the precision the training run compiles it with: TF Adapter's
    ``NpuOptimizer`` sets that default for a graph run in training mode (``graph_run_mode`` 1),
    on every SoC, where ATC's inference default is ``force_fp16``. Tuned under ATC's default,
    an fp32 step's vector ops (``ReluGrad``, ``BNTrainingUpdate``, ``ApplyAdam`` …) would be
    keyed float16 while the run compiles them float32, and never hit."""
    if not _step.aoe_mode():
        return None
    log.info("in tune mode, training graph handled by tools.")
    name = name or getattr(model, "name", None) or "model"
    path = _step.write(step_graph(model, loss, optimizer, batch), f"{name}_step.pb")
    log.info("Aoe tuning graph.")
    options = _step.options(True, options, "tensorflow", soc_version)
    return _tune(path, framework=3, soc_version=soc_version, **options)


_callback = None


def _callback_class():
    """The Keras callback class, made once, when first asked for (TensorFlow is imported
    then, not with tunebank)."""
    global _callback
    if _callback is not None:
        return _callback
    import tensorflow as tf

    class TuneCallback(tf.keras.callbacks.Callback):
        """A Keras callback that tunes the training step at the first batch when
        ``AOE_MODE`` is set (see :func:`tune_step`), then lets training go on;
        ``callback.result`` is the :class:`tunebank.TuneResult` (``None`` without
        ``AOE_MODE``). Keras does not hand callbacks the batch, so ``batch`` is one batch
        ``(x, y)`` of the fit's shapes (for example ``(x[:32], y[:32])`` for
        ``batch_size=32``). ``loss`` defaults to the compiled model's loss; ``options`` go
        to :func:`tune_step`."""

        def __init__(self, batch, loss=None, soc_version="Ascend910B2", **options):
            super().__init__()
            self._batch = batch
            self._loss = loss
            self._soc = soc_version
            self._options = options
            self.result = None

        def on_train_batch_begin(self, batch, logs=None):
            if batch != 0 or self.result is not None or not _step.aoe_mode():
                return
            model = self.model
            loss = self._loss or getattr(model, "loss", None)
            if isinstance(loss, str):
                loss = tf.keras.losses.get(loss)
            if loss is None:
                raise ValueError("TuneCallback: the model is not compiled with a loss: pass loss=")
            self.result = tune_step(
                model, loss, model.optimizer, self._batch, soc_version=self._soc, **self._options
            )

    _callback = TuneCallback
    return _callback


def __getattr__(name):
    if name == "TuneCallback":
        return _callback_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
