"""``Bank.why(model=…)`` and ``bank-inspect why --model`` explain the same units under the same
keys, because both resolve the model as a converter does (the job API's conversion): a
TensorFlow graph under its framework's ``input_format`` default (NHWC), and a model whose
subgraphs an SGAT run has tuned, with the graph bank applied first (found by the environment,
or named)."""

import json
import os
import pathlib
import subprocess

import pytest

import tunebank
from conftest import FIXTURES, REPO, in_ci

SOC = "Ascend910B2"
TF_NET = FIXTURES / "models" / "frameworks" / "small_net.pb"
RESNET = FIXTURES / "models" / "resnet50.onnx"
# Batch 32: SGAT's winning strategies merge scopes and slice the batch, so the post-SGAT units
# differ from the fused ones.
RESNET_OPTIONS = {"soc_version": SOC, "input_shape": "input:32,3,224,224"}


def args_of(options):
    return [f"--{k}={v}" for k, v in options.items()]


def keys(report):
    """Each op of a why report as (node, op type, profile, key), in report order."""
    return [(o["node"], o["op_type"], o["profile"], o["key"]) for o in report["ops"]]


@pytest.fixture(scope="session")
def tools():
    """The ``tunebank`` and ``bank-inspect`` binaries (``$TUNEBANK_BIN`` and its sibling, else
    the workspace's release build), each run with no AOE bank or work path variable, ``home`` as
    HOME and ``env`` added; returns stdout."""
    tunebank_bin = pathlib.Path(os.environ.get("TUNEBANK_BIN", REPO / "target" / "release" / "tunebank"))
    paths = {"tunebank": tunebank_bin, "bank-inspect": tunebank_bin.with_name("bank-inspect")}
    for path in paths.values():
        if not path.exists():
            if in_ci():
                pytest.fail(f"the CLI is required under CI=true: {path} does not exist")
            pytest.skip(f"no CLI at {path} (build it: cargo build --release)")

    def run(tool, *args, home, env=None):
        full = {k: v for k, v in os.environ.items()
                if k not in ("TUNE_BANK_PATH", "ASCEND_CACHE_PATH", "ASCEND_WORK_PATH")}
        full["HOME"] = str(home)
        full.update({k: str(v) for k, v in (env or {}).items()})
        out = subprocess.run([str(paths[tool]), *map(str, args)], capture_output=True, text=True,
                             env=full)
        assert out.returncode == 0, f"{tool} {' '.join(map(str, args))}: {out.stderr}"
        return out.stdout

    return run


@pytest.fixture
def op_bank(tmp_path):
    """An empty op bank (``bank-inspect`` explains against a bank that exists)."""
    path = tmp_path / "op.redb"
    tunebank.Bank.open(path, soc_version=SOC, default_builtin=False).close()
    return path


def test_a_tensorflow_model_is_explained_under_its_nhwc_default(tools, clean_env, op_bank):
    options = {"soc_version": SOC, "framework": 3}
    home = clean_env / "home"
    cli = json.loads(tools("bank-inspect", "why", f"--model={TF_NET}", *args_of(options),
                           "--bank", op_bank, "--json", home=home))
    with tunebank.Bank.open(op_bank, soc_version=SOC, read_only=True,
                            default_builtin=False) as bank:
        python = bank.why(model=TF_NET, **options)
        nchw = bank.why(model=TF_NET, input_format="NCHW", **options)
    assert any(op_type.startswith("Conv") for _, op_type, _, _ in keys(cli)), keys(cli)
    assert keys(python) == keys(cli)
    assert python == cli
    # The converter's keys are those; NCHW, which a TensorFlow graph is not, gives others.
    converted = [r["key"] for r in tunebank.model_keys(TF_NET, **options)]
    assert [k for _, _, _, k in keys(python)] == converted
    assert [k for _, _, _, k in keys(nchw)] != converted


@pytest.fixture
def sgat_banks(tmp_path, tools, clean_env):
    """A TUNE_BANK_PATH directory whose graph bank an SGAT run of ResNet-50 filled."""
    banks = tmp_path / "banks"
    banks.mkdir()
    tools("tunebank", "tune", "--job_type=1", f"--model={RESNET}", *args_of(RESNET_OPTIONS),
          "--budget", 8, "--output-dir", tmp_path / "sgat", home=clean_env / "home",
          env={"TUNE_BANK_PATH": banks})
    (graph_file,) = banks.rglob("tunebank_graph.redb")
    return banks, graph_file


def test_a_model_after_an_sgat_run_is_explained_with_the_graph_bank(tools, clean_env, op_bank,
                                                                      sgat_banks, monkeypatch):
    banks, graph_file = sgat_banks
    home = clean_env / "home"
    why = ("why", f"--model={RESNET}", *args_of(RESNET_OPTIONS), "--bank", op_bank, "--json")
    fused = json.loads(tools("bank-inspect", *why, home=home))
    found = json.loads(tools("bank-inspect", *why, home=home, env={"TUNE_BANK_PATH": banks}))
    named = json.loads(tools("bank-inspect", *why, "--graph-bank", graph_file, home=home))
    # The graph bank changes the units: the comparisons below could fail.
    assert keys(found) != keys(fused)
    assert keys(named) == keys(found)

    with tunebank.Bank.open(op_bank, soc_version=SOC, read_only=True,
                            default_builtin=False) as bank:
        assert keys(bank.why(model=RESNET, **RESNET_OPTIONS)) == keys(fused)
        explicit = bank.why(model=RESNET, graph_bank=graph_file, **RESNET_OPTIONS)
        monkeypatch.setenv("TUNE_BANK_PATH", str(banks))
        by_environment = bank.why(model=RESNET, **RESNET_OPTIONS)
    assert keys(explicit) == keys(named)
    assert keys(by_environment) == keys(found)
    assert by_environment == found
    assert [k for _, _, _, k in keys(found)] == [
        r["key"] for r in tunebank.model_keys(RESNET, graph_bank=graph_file, **RESNET_OPTIONS)
    ]
