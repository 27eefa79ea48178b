"""Keys from Python equal the CLI's: every fixture op template and model under several ATC
option sets, and the golden template cases."""

import json

import pytest

import tunebank
from conftest import FIXTURES

OPTION_SETS = [
    {"soc_version": "Ascend910B2"},
    {"soc_version": "Ascend910B2", "precision_mode": "must_keep_origin_dtype"},
    {"soc_version": "Ascend910B2", "precision_mode": "allow_fp32_to_fp16", "op_select_implmode": "high_precision"},
    {"soc_version": "Ascend310P3", "precision_mode": "force_fp32"},
    {"soc_version": "Ascend910B3", "precision_mode_v2": "origin", "allow_hf32": "true"},
]


def args_of(options):
    return [f"--{k}={v}" for k, v in options.items()]


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: "-".join(o.values()))
def test_op_keys_equal_the_cli(cli, options):
    path = FIXTURES / "ops" / "one_matmul.json"
    templates = json.loads(path.read_text())
    from_cli = json.loads(cli("key", "--op", path, "--json", *args_of(options)))
    from_python = [k for t in templates for k in tunebank.key(t, **options)]
    assert from_python == [row["key"] for row in from_cli]
    assert len(set(from_python)) == len(templates)


def test_golden_template_cases():
    golden = json.loads((FIXTURES / "keys" / "golden.json").read_text())
    cases = [c for c in golden["cases"] if "template" in c]
    assert cases, "the golden file has template cases"
    for case in cases:
        options = dict(a[2:].split("=", 1) for a in case["args"])
        expected = [k["key"] for k in case["keys"]]
        assert tunebank.key(case["template"], **options) == expected, case["name"]


def test_dynamic_profiles_give_one_key_each():
    t = json.loads((FIXTURES / "ops" / "one_matmul.json").read_text())[0]
    keys = tunebank.key(t, soc_version="Ascend910B2", input_shape="x:-1,768", dynamic_batch_size="1,8,32")
    assert len(keys) == 3 and len(set(keys)) == 3


@pytest.mark.parametrize("model", ["resnet50", "bert_layer"])
@pytest.mark.parametrize("options", OPTION_SETS[:4], ids=lambda o: "-".join(o.values()))
def test_model_keys_equal_convert(cli, tmp_path, model, options):
    path = FIXTURES / "models" / f"{model}.onnx"
    report = json.loads(cli("convert", f"--model={path}", "--json", "--bank", tmp_path / "none.db",
                            *args_of(options), home=tmp_path))
    rows = tunebank.model_keys(path, **options)
    fields = ("op_name", "op_type", "ir_type", "profile", "key")
    assert [{f: r[f] for f in fields} for r in rows] == [{f: r[f] for f in fields} for r in report["ops"]]
    assert len(rows) > 10
