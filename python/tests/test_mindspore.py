"""Tuning during MindSpore training: ``tunebank.mindspore.tune_step`` and ``TuneCallback`` on a
small CNN trained by ``Model.train`` (MindSpore's CPU backend). With ``AOE_MODE=2`` the
``TrainOneStepCell`` is exported and tuned under MindSpore's training default for the SoC, and
the training run's look-ups under that default hit every tuned op; without ``AOE_MODE``
nothing is written. MindSpore is not a dependency of the package: missing, the tests skip,
and fail under ``CI=true``."""

import logging

import numpy as np
import pytest

import tunebank
from conftest import require, step_env


@pytest.fixture(scope="module")
def ms():
    mindspore = require("mindspore", "pip install ./python[mindspore]")
    mindspore.set_context(mode=mindspore.GRAPH_MODE)
    return mindspore


def small_cnn(ms):
    from mindspore import nn

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, pad_mode="pad", padding=1, has_bias=True)
            self.bn = nn.BatchNorm2d(8)
            self.relu = nn.ReLU()
            self.pool = nn.MaxPool2d(2, 2)
            self.flatten = nn.Flatten()
            self.fc = nn.Dense(8 * 8 * 8, 10)

        def construct(self, x):
            return self.fc(self.flatten(self.pool(self.relu(self.bn(self.conv(x))))))

    net = Net()
    # Dense (one-hot) labels: MindSpore's dataset pipeline cannot hand a row that is a numpy
    # scalar to NumPy 2 (its `np.array(x, copy=False)`), so sparse labels would not train here.
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=False, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), 0.01, 0.9)
    x = ms.Tensor(np.random.default_rng(0).standard_normal((4, 3, 16, 16)).astype("float32"))
    y = ms.Tensor(np.eye(10, dtype="float32")[np.arange(4)])
    return net, loss, opt, (x, y)


def test_each_framework_has_its_training_default_per_soc():
    """The defaults the adapters tune under: TF Adapter's on every SoC; MindSpore's and GE's
    (torchair) per SoC; an unknown run or SoC is an InputError naming it."""
    mode = tunebank.training_precision_mode
    assert mode("tensorflow", "Ascend910B2") == "allow_fp32_to_fp16"
    assert mode("mindspore", "Ascend910A") == "allow_fp32_to_fp16"
    assert mode("mindspore", "Ascend910B2") == "must_keep_origin_dtype"
    assert mode("torch", "Ascend910B2") == "must_keep_origin_dtype"
    assert mode("torch", "Ascend910A") == "allow_fp32_to_fp16"
    with pytest.raises(tunebank.InputError, match="caffe"):
        mode("caffe", "Ascend910B2")
    with pytest.raises(tunebank.InputError, match="Ascend920"):
        mode("mindspore", "Ascend920")


def test_a_step_tuned_with_the_defaults_is_hit_under_the_training_runs_defaults(
    ms, tmp_path, monkeypatch, caplog
):
    """``Model.train`` with the callback and ``AOE_MODE=2``: the training network is exported
    as ``<name>_step.mindir``, tuned (its result file names the backward ops) under MindSpore's
    default on the 910B2, ``must_keep_origin_dtype``, and training goes on; converted under
    that default every tuned op hits the bank ``TUNE_BANK_PATH`` names, where under ATC's
    inference default (``force_fp16``) the fp32 vector ops key apart."""
    from mindspore.train import Model

    work = step_env(monkeypatch, tmp_path)
    (tmp_path / "bank").mkdir()
    monkeypatch.setenv("AOE_MODE", "2")
    monkeypatch.setenv("TUNE_BANK_PATH", str(tmp_path / "bank"))
    net, loss, opt, batch = small_cnn(ms)
    callback = tunebank.mindspore.TuneCallback(batch, name="cnn", budget=4)
    data = ms.dataset.NumpySlicesDataset(
        {"x": batch[0].asnumpy(), "y": batch[1].asnumpy()}, shuffle=False
    ).batch(4)
    with caplog.at_level(logging.INFO, logger="tunebank"):
        Model(net, loss, opt).train(1, data, callbacks=[callback], dataset_sink_mode=False)
    assert "Aoe tuning graph." in caplog.text
    result = callback.result
    assert result is not None and result.result == "tuning successful", result
    step = work / "cnn_step.mindir"
    assert step.stat().st_size > 0
    (entries,) = result.report.values()
    opat = next(e["OPAT"] for e in entries if "OPAT" in e)
    tuned = {m["op_name"] for m in opat["repo_modified_operators"]}
    run = tunebank.model_keys(step, framework=1, soc_version="Ascend910B2",
                              precision_mode="must_keep_origin_dtype")
    rows = [r for r in run if r["op_name"] in tuned]
    assert any("Backprop" in r["ir_type"] for r in rows), rows
    assert any(r["ir_type"] == "ApplyMomentum" for r in rows), rows
    with tunebank.Bank.open(soc_version="Ascend910B2", read_only=True) as bank:
        misses = [r["op_name"] for r in rows if bank.lookup(r["key"]) is None]
    assert misses == [], misses
    inference = {r["op_name"]: r["key"] for r in tunebank.model_keys(
        step, framework=1, soc_version="Ascend910B2")}
    differ = {r["ir_type"] for r in rows if inference.get(r["op_name"]) not in (None, r["key"])}
    assert {"ReluGrad", "ApplyMomentum"} <= differ, sorted(differ)


def test_without_aoe_mode_nothing_is_written(ms, tmp_path, monkeypatch):
    work = step_env(monkeypatch, tmp_path)
    net, loss, opt, batch = small_cnn(ms)
    assert tunebank.mindspore.tune_step(net, loss, opt, batch, name="cnn") is None
    assert list(work.iterdir()) == []


def test_gradient_tuning_finds_one_gradient_per_parameter(ms, tmp_path, monkeypatch):
    """``AOE_MODE=4`` with ``RANK_SIZE``: GDAT on the exported step, trained by ``nn.SGD``
    (CANN's ``SGD`` update) with momentum, finds one gradient per trainable parameter (conv
    weight and bias, batch-norm scale and offset, dense weight and bias: six), all float32
    under MindSpore's 910B2 default."""
    from mindspore import nn

    step_env(monkeypatch, tmp_path)
    monkeypatch.setenv("AOE_MODE", "4")
    monkeypatch.setenv("RANK_SIZE", "8")
    monkeypatch.setenv("TUNE_BANK_PATH", str(tmp_path / "bank"))
    (tmp_path / "bank").mkdir()
    net, loss, _, batch = small_cnn(ms)
    opt = nn.SGD(net.trainable_params(), 0.01, momentum=0.9)
    result = tunebank.mindspore.tune_step(net, loss, opt, batch, name="cnn", budget=4)
    assert result is not None and result.job_type == 4, result
    (entries,) = result.report.values()
    gdat = next(e["GDAT"] for e in entries if "GDAT" in e)
    params = net.trainable_params()
    assert gdat["gradient_num"] == len(params) == 6, gdat
    assert gdat["gradient_bytes"] == 4 * sum(int(np.prod(p.shape)) for p in params), gdat
