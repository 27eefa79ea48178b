"""Tuning during training: ``tunebank.tf.TuneCallback`` in a real ``model.fit`` of a tiny Keras
model on tensorflow-cpu. With ``AOE_MODE=2`` the first batch's step is traced and tuned (its
result file names backward ops, the bank holds the records, AOE's two log lines are logged) and
training goes on; without ``AOE_MODE`` nothing is written. TensorFlow is the package's optional
``tf`` extra: missing, the tests skip, and fail under ``CI=true``."""

import json
import logging
import os

import numpy as np
import pytest

import tunebank
from conftest import require, step_env


@pytest.fixture(scope="module")
def tf():
    return require("tensorflow", "pip install ./python[tf]")


def tiny_model(tf):
    tf.random.set_seed(0)
    model = tf.keras.Sequential(
        [
            tf.keras.Input((16, 16, 3)),
            tf.keras.layers.Conv2D(8, 3, padding="same", activation="relu"),
            tf.keras.layers.MaxPooling2D(2),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(10),
        ],
        name="tiny",
    )
    model.compile(
        optimizer=tf.keras.optimizers.Adam(1e-3),
        loss=tf.keras.losses.CategoricalCrossentropy(from_logits=True),
    )
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 16, 16, 3)).astype("float32")
    y = np.eye(10, dtype="float32")[rng.integers(0, 10, 16)]
    return model, x, y


def test_the_callback_tunes_the_first_step_and_training_goes_on(tf, tmp_path, monkeypatch, caplog):
    work = step_env(monkeypatch, tmp_path)
    bank = tmp_path / "bank"
    bank.mkdir()
    monkeypatch.setenv("AOE_MODE", "2")
    monkeypatch.setenv("TUNE_BANK_PATH", str(bank))
    model, x, y = tiny_model(tf)
    before = [w.copy() for w in model.get_weights()]
    callback = tunebank.tf.TuneCallback((x[:8], y[:8]), budget=4)
    with caplog.at_level(logging.INFO, logger="tunebank"):
        history = model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[callback])
    assert "in tune mode, training graph handled by tools." in caplog.text
    assert "Aoe tuning graph." in caplog.text
    # Training went on: both batches ran and moved the weights.
    assert len(history.history["loss"]) == 1
    assert any(not np.array_equal(a, b) for a, b in zip(before, model.get_weights()))

    result = callback.result
    assert isinstance(result, tunebank.TuneResult) and result.job_type == 2
    assert os.path.dirname(result.result_file) == str(work)
    assert (work / "tiny_step.pb").stat().st_size > 0
    report = json.loads(open(result.result_file).read())
    opat = list(report.values())[0][1]["OPAT"]
    types = set()
    for op in opat["repo_modified_operators"]:
        t = op["op_type"]
        types.update(t if isinstance(t, list) else [t])
    for backward in ("Conv2DBackpropFilter", "ReluGrad", "MaxPoolGrad"):
        assert backward in types, (backward, sorted(types))
    # The records are in the bank TUNE_BANK_PATH names (AOE's <path>/<soc_version>/ layout).
    assert any(p.is_file() for p in (bank / "Ascend910B2").rglob("*"))


def test_without_aoe_mode_nothing_is_tuned(tf, tmp_path, monkeypatch):
    work = step_env(monkeypatch, tmp_path)
    model, x, y = tiny_model(tf)
    callback = tunebank.tf.TuneCallback((x[:8], y[:8]))
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[callback])
    assert callback.result is None
    assert list(work.iterdir()) == []
    assert tunebank.tf.tune_step(model, model.loss, model.optimizer, (x[:8], y[:8])) is None


def test_gradient_tuning_reads_the_gradients_of_keras_element_wise_adam(tf, tmp_path, monkeypatch):
    """AOE_MODE=4 through the callback: Keras 3 writes Adam element-wise (no ApplyAdam), and
    the GDAT job still finds one gradient per trainable variable, each the size of its
    variable, in the result file."""
    work = step_env(monkeypatch, tmp_path)
    monkeypatch.setenv("AOE_MODE", "4")
    monkeypatch.setenv("RANK_SIZE", "8")
    monkeypatch.setenv("TUNE_BANK_PATH", str(tmp_path / "bank"))
    (tmp_path / "bank").mkdir()
    model, x, y = tiny_model(tf)
    callback = tunebank.tf.TuneCallback((x[:8], y[:8]), budget=8)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[callback])
    result = callback.result
    assert result is not None and result.job_type == 4, result
    assert result.result == "tuning successful"
    assert os.path.dirname(result.result_file) == str(work)
    (entries,) = result.report.values()
    gdat = next(e["GDAT"] for e in entries if "GDAT" in e)
    trainable = model.trainable_variables
    assert gdat["gradient_num"] == len(trainable), gdat
    assert gdat["rank_size"] == 8
    # Under the training run's precision mode (allow_fp32_to_fp16, TF Adapter's default for a
    # training graph) the cube backprops that give the kernels' gradients compute in float16
    # (two bytes an element) and the vector op that gives a bias's (BiasAddGrad) keeps float32
    # (four).
    kernels = sum(int(np.prod(v.shape)) for v in trainable if len(v.shape) > 1)
    biases = sum(int(np.prod(v.shape)) for v in trainable if len(v.shape) == 1)
    assert kernels and biases
    assert gdat["gradient_bytes"] == 2 * kernels + 4 * biases, gdat


def test_a_step_tuned_with_the_defaults_is_hit_under_the_training_runs_defaults(
    tf, tmp_path, monkeypatch
):
    """The step is keyed as the training run compiles it (TF Adapter's training default
    ``allow_fp32_to_fp16``), not as ATC's inference default (``force_fp16``): converted under
    the training run's defaults every tuned op hits; under ``force_fp16`` the fp32 vector ops
    of the step key differently (float16), so tuning under that default would miss them."""
    work = step_env(monkeypatch, tmp_path)
    bank_dir = tmp_path / "bank"
    bank_dir.mkdir()
    monkeypatch.setenv("AOE_MODE", "2")
    monkeypatch.setenv("TUNE_BANK_PATH", str(bank_dir))
    model, x, y = tiny_model(tf)
    result = tunebank.tf.tune_step(model, model.loss, model.optimizer, (x[:8], y[:8]), budget=4)
    assert result is not None and result.result == "tuning successful", result
    step = work / "tiny_step.pb"
    training = tunebank.model_keys(step, soc_version="Ascend910B2", precision_mode="allow_fp32_to_fp16")
    inference = tunebank.model_keys(step, soc_version="Ascend910B2", precision_mode="force_fp16")
    tuned = {m["op_name"] for m in list(result.report.values())[0][1]["OPAT"]["repo_modified_operators"]}
    # The bank AOE's path rules name (TUNE_BANK_PATH), as the job wrote it.
    with tunebank.Bank.open(soc_version="Ascend910B2", read_only=True) as bank:
        rows = [r for r in training if r["op_name"] in tuned]
        assert rows, (sorted(tuned), [r["op_name"] for r in training])
        misses = [r["op_name"] for r in rows if bank.lookup(r["key"]) is None]
        assert misses == [], misses
    by_name = {r["op_name"]: r["key"] for r in inference}
    differ = {r["ir_type"] for r in training if by_name.get(r["op_name"]) not in (None, r["key"])}
    assert any("ReluGrad" in t or "Apply" in t or "Relu" in t for t in differ), sorted(differ)
