"""Bad input raises the exception class of its failure kind, naming the input."""

import json

import pytest

import tunebank
from conftest import FIXTURES

OP = json.loads((FIXTURES / "ops" / "one_matmul.json").read_text())[0]


def test_the_hierarchy():
    assert issubclass(tunebank.InputError, ValueError)
    assert issubclass(tunebank.BankIOError, OSError)
    for cls in (tunebank.InputError, tunebank.BankIOError, tunebank.BankBusyError, tunebank.BankDamagedError):
        assert issubclass(cls, tunebank.TunebankError)


def test_bad_options_and_templates():
    with pytest.raises(tunebank.InputError, match="soc_version"):
        tunebank.key(OP, soc_version="Ascend999")
    with pytest.raises(tunebank.InputError, match="precision_mode"):
        tunebank.key(OP, soc_version="Ascend910B2", precision_mode="fastest")
    with pytest.raises(tunebank.InputError, match="op template"):
        tunebank.key({"op_type": "MatMul"}, soc_version="Ascend910B2")
    with pytest.raises(tunebank.InputError, match="JSON-shaped"):
        tunebank.key({"node_name": object()}, soc_version="Ascend910B2")


def test_bad_models(tmp_path):
    with pytest.raises(tunebank.InputError, match="garbage.onnx"):
        tunebank.model_keys(FIXTURES / "models" / "garbage.onnx", soc_version="Ascend910B2")
    with pytest.raises(tunebank.InputError, match="nosuch.onnx"):
        tunebank.model_keys(tmp_path / "nosuch.onnx", soc_version="Ascend910B2")
    with pytest.raises(tunebank.InputError, match="job_type=3"):
        tunebank.tune(FIXTURES / "models" / "resnet50.onnx", job_type=3, soc_version="Ascend910B2")
    with pytest.raises(tunebank.InputError, match="rank_size"):
        tunebank.tune(FIXTURES / "models" / "resnet50.onnx", job_type=4, soc_version="Ascend910B2")
    with pytest.raises(tunebank.InputError, match="simulator"):
        tunebank.tune(FIXTURES / "models" / "resnet50.onnx", job_type=1, runner="cpu", soc_version="Ascend910B2")
    with pytest.raises(tunebank.InputError, match='unknown runner "gpu"'):
        tunebank.tune(FIXTURES / "models" / "resnet50.onnx", runner="gpu", soc_version="Ascend910B2")
    with pytest.raises(tunebank.InputError, match="--runner cpu"):
        tunebank.tune(FIXTURES / "models" / "resnet50.onnx", job_type=4, rank_size=8, runner="cpu", soc_version="Ascend910B2")


def test_bad_keys_and_banks(tmp_path):
    bank = tunebank.Bank.open(tmp_path / "b.db", soc_version="Ascend910B2", default_builtin=False)
    with pytest.raises(tunebank.InputError, match="64 hexadecimal"):
        bank.lookup("xyz")
    assert bank.lookup("00" * 32) is None
    bank.close()
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a bank" * 1000)
    with pytest.raises(tunebank.TunebankError) as e:
        tunebank.Bank.open(garbage, soc_version="Ascend910B2", read_only=True)
    assert "garbage.db" in str(e.value)
    assert isinstance(e.value, (tunebank.InputError, tunebank.BankDamagedError))
    with pytest.raises(tunebank.InputError):
        tunebank.Bank.open(tmp_path / "b.db", soc_version="Ascend999")


def test_search_bad_input(tmp_path):
    with pytest.raises(tunebank.InputError, match="no values"):
        tunebank.search.Space({"a": []})
    with pytest.raises(tunebank.InputError):
        tunebank.search.Space({"a": [1, 2]}, ["b >"])
    with pytest.raises(tunebank.InputError):
        tunebank.search.Space.from_cache(tmp_path / "nosuch.json")
    with pytest.raises(tunebank.InputError, match="expected one of"):
        tunebank.search.compare([], ["nosuch"])


def test_the_extension_is_built_with_overflow_checks():
    """An integer overflow in the extension's own code is a panic (pyo3's PanicException), not a
    wrapped-around number: the wheel's release build has overflow checks on (root Cargo.toml)."""
    from tunebank import _tunebank

    assert _tunebank._overflow_probe(2**32 - 2, 1) == 2**32 - 1
    with pytest.raises(BaseException) as caught:
        _tunebank._overflow_probe(2**32 - 1, 1)
    assert type(caught.value).__name__ == "PanicException", caught.value
    assert "overflow" in str(caught.value)


def test_budget_takes_a_number_or_auto(tmp_path):
    model = FIXTURES / "models" / "bert_layer.onnx"
    for bad in ["lots", "auto:x", "-1", "auto60"]:
        with pytest.raises(tunebank.InputError, match="auto:N"):
            tunebank.tune(model, budget=bad, bank=tmp_path / "never.db", soc_version="Ascend910B2")
    assert not (tmp_path / "never.db").exists()
    # `tunebank tune --budget auto:60`: the searches stop by the model's rule or at 60.
    r = tunebank.tune(model, budget="auto:60", bank=tmp_path / "b.db", output_dir=tmp_path,
                      soc_version="Ascend910B2")
    assert r.result == "tuning successful", r
    assert r.summary["repo_add_num"] + r.summary["repo_unsatisfied_num"] == r.tasks, r
