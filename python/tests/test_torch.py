"""Tuning from PyTorch: ``tunebank.torch.backend()`` in a real ``torch.compile`` training loop
and ``tunebank.torch.tune`` on a small CNN (torch CPU). With ``AOE_MODE=2`` the first call's
step (forward, backward, the optimizer's update) is captured and tuned — its result file names
the backward and optimizer ops, the bank holds them and the captured step is all hits on a
second look-up — and training goes on with the numerics of an uncompiled model; with
``AOE_MODE=4`` the gradient job finds one gradient per parameter; without ``AOE_MODE`` nothing is
written. torch is the package's optional ``torch`` extra: missing, the tests skip, and fail under
``CI=true``."""

import json
import logging
import os

import pytest

import tunebank
from conftest import require, step_env


@pytest.fixture(scope="module")
def torch():
    torch = require("torch", "pip install ./python[torch]")
    import tunebank.torch  # noqa: F401  (the submodule, imported with torch present)

    return torch


def small_cnn(torch):
    nn = torch.nn
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1, bias=False),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, 10),
    )


def op_types(result):
    (entries,) = result.report.values()
    opat = next(e["OPAT"] for e in entries if "OPAT" in e)
    types = set()
    for op in opat["repo_modified_operators"]:
        t = op["op_type"]
        types.update(t if isinstance(t, list) else [t])
    return types


def train(torch, model, steps, opt):
    torch.manual_seed(1)
    losses = []
    for _ in range(steps):
        x, y = torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses


def test_the_compile_backend_tunes_the_step_and_training_goes_on_untouched(
    torch, tmp_path, monkeypatch, caplog
):
    work = step_env(monkeypatch, tmp_path)
    bank = tmp_path / "bank"
    bank.mkdir()
    monkeypatch.setenv("AOE_MODE", "2")
    monkeypatch.setenv("TUNE_BANK_PATH", str(bank))
    model, twin = small_cnn(torch), small_cnn(torch)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    twin_opt = torch.optim.Adam(twin.parameters(), lr=1e-2)
    backend = tunebank.torch.backend(name="cnn", optimizer=opt, budget=4)
    compiled = torch.compile(model, backend=backend)
    with caplog.at_level(logging.INFO, logger="tunebank"):
        losses = train(torch, compiled, 3, opt)
    assert "in tune mode, training graph handled by tools." in caplog.text
    assert "Aoe tuning graph." in caplog.text
    # Training went on, with the numerics of the same model trained uncompiled.
    assert losses == pytest.approx(train(torch, twin, 3, twin_opt), rel=1e-5)
    assert len(backend.results) == 1
    result = backend.results[0]
    assert result.job_type == 2 and result.result == "tuning successful", result
    assert os.path.dirname(result.result_file) == str(work)
    step = work / "cnn_step.pt2"
    assert step.stat().st_size > 0
    types = op_types(result)
    for op in ("Conv2DBackpropFilter", "ReluGrad", "BNTrainingReduceGrad", "AssignAdd"):
        assert any(op in t for t in types), (op, sorted(types))
    # The captured step, looked up as the training run compiles it (GE's training default on
    # the 910B2, whose cube computes float32 in high precision: must_keep_origin_dtype):
    # every op the job tuned is a hit (the backward ops among them).
    assert tunebank.training_precision_mode("torch", "Ascend910B2") == "must_keep_origin_dtype"
    (entries,) = result.report.values()
    opat = next(e["OPAT"] for e in entries if "OPAT" in e)
    tuned = {m["op_name"] for m in opat["repo_modified_operators"]}
    keys = tunebank.model_keys(step, soc_version="Ascend910B2",
                               precision_mode="must_keep_origin_dtype")
    rows = [r for r in keys if r["op_name"] in tuned]
    assert any("Backprop" in r["ir_type"] for r in rows), rows
    with tunebank.Bank.open(soc_version="Ascend910B2", read_only=True) as b:
        misses = [r["op_name"] for r in rows if b.lookup(r["key"]) is None]
    assert misses == [], misses


def test_gradient_tuning_finds_one_gradient_per_parameter(torch, tmp_path, monkeypatch):
    step_env(monkeypatch, tmp_path)
    monkeypatch.setenv("AOE_MODE", "4")
    monkeypatch.setenv("RANK_SIZE", "8")
    monkeypatch.setenv("TUNE_BANK_PATH", str(tmp_path / "bank"))
    (tmp_path / "bank").mkdir()
    model = small_cnn(torch)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))
    result = tunebank.torch.tune(model, (x,), loss_fn=torch.nn.functional.cross_entropy,
                                 target=y, optimizer=opt, name="cnn", budget=8)
    assert result is not None and result.job_type == 4, result
    assert result.result == "tuning successful"
    (entries,) = result.report.values()
    gdat = next(e["GDAT"] for e in entries if "GDAT" in e)
    params = list(model.parameters())
    assert gdat["gradient_num"] == len(params), gdat
    assert gdat["rank_size"] == 8


def test_without_aoe_mode_nothing_is_tuned(torch, tmp_path, monkeypatch):
    work = step_env(monkeypatch, tmp_path)
    model = small_cnn(torch)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    backend = tunebank.torch.backend(optimizer=opt)
    train(torch, torch.compile(model, backend=backend), 2, opt)
    assert backend.results == []
    assert list(work.iterdir()) == []
    x = torch.randn(2, 3, 16, 16)
    assert tunebank.torch.tune(model, (x,)) is None


def test_an_optimizer_tunebank_cannot_replay_is_named(torch, tmp_path, monkeypatch):
    step_env(monkeypatch, tmp_path)
    model = small_cnn(torch)
    opt = torch.optim.Adagrad(model.parameters())
    with pytest.raises(ValueError, match="optimizer Adagrad: expected torch.optim.SGD, Adam or AdamW"):
        tunebank.torch.capture(model, (torch.randn(2, 3, 16, 16),), optimizer=opt)
