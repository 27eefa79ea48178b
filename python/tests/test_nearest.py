"""``Bank.lookup_ops``: a shape inside the tuned range answered by the nearest tuned shape (with
its source, distance and a fitted strategy), the strict mode raising ``NotExactError``, and a
shape outside the range a miss naming the dim."""

import json
import math

import pytest

import tunebank
from tunebank.errors import NotExactError

# fc1: x [batch, 64] · [64, 32] in float16; the batch is the graph input's dim.
MATMUL = {
    "node_name": "fc1",
    "op_type": "MatMul",
    "inputs": [
        {"shape": [-1, 64], "dtype": "float16", "graph_input": "x"},
        {"shape": [64, 32], "dtype": "float16"},
    ],
    "outputs": [{"shape": [-1, 32], "dtype": "float16"}],
    "attrs": {"transpose_x1": {"bool": False}, "transpose_x2": {"bool": False}},
}


@pytest.fixture
def bank_at_1_and_8(cli, tmp_path):
    """A bank holding fc1 tuned at batch 1 and 8 (a hand-measured strategy, `tunebank bank add`)."""
    ops = tmp_path / "ops.jsonl"
    ops.write_text(json.dumps(MATMUL) + "\n")
    path = tmp_path / "bank.db"
    cli("bank", "add", "--op", ops, "--bank", path, "--strategy", '{"baseM": 16, "baseN": 32}',
        "--time-us", "3", "--baseline-us", "4", "--soc_version=Ascend910B2",
        "--input_shape=x:-1,64", "--dynamic_batch_size=1,8", home=tmp_path)
    return path


def test_a_shape_inside_the_range_is_answered_by_the_nearest_tuned_shape(bank_at_1_and_8):
    with tunebank.Bank.open(bank_at_1_and_8, soc_version="Ascend910B2") as bank:
        exact = bank.lookup_ops([MATMUL], input_shape="x:8,64")
        assert (exact["hits"], exact["ops"][0]["result"]) == (1, "hit")
        near = bank.lookup_ops([MATMUL], input_shape="x:3,64")
        assert (near["hits"], near["nearest"]) == (0, 1)
        row = near["ops"][0]
        assert row["result"] == "nearest"
        # Batch 3 is nearer 8 (|ln 3/8| = 0.98) than 1 (|ln 3| = 1.10).
        assert row["source"] == exact["ops"][0]["key"]
        assert row["tuned_shapes"][0] == [8, 64]
        assert math.isclose(row["distance"], math.log(8 / 3), rel_tol=1e-9)
        # The stored values survive where they fit; the rest is filled to a valid tiling.
        assert row["strategy"]["baseM"] == 16 and row["strategy"]["baseN"] == 32
        assert row["adapted"] is True


def test_strict_raises_on_anything_but_an_exact_hit(bank_at_1_and_8):
    with tunebank.Bank.open(bank_at_1_and_8, soc_version="Ascend910B2") as bank:
        with pytest.raises(NotExactError, match=r"strict: 1 of 1 .*fc1"):
            bank.lookup_ops([MATMUL], strict=True, input_shape="x:3,64")
        assert isinstance(NotExactError("x"), LookupError)
        assert bank.lookup_ops([MATMUL], strict=True, input_shape="x:8,64")["hits"] == 1


def test_a_shape_outside_the_range_is_a_miss_naming_the_dim(bank_at_1_and_8):
    with tunebank.Bank.open(bank_at_1_and_8, soc_version="Ascend910B2") as bank:
        row = bank.lookup_ops([MATMUL], input_shape="x:16,64")["ops"][0]
        assert row["result"] == "miss"
        assert row["not_served"] == {
            "reason": "outside_range", "input": 0, "dim": 0, "value": 16, "min": 1, "max": 8,
        }
