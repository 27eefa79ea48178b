"""One job, four front doors: after an SGAT run has filled a graph bank, the CLI (``convert
--json``), Python (``model_keys``), the queue (the tasks ``tune --queue`` enqueues) and the C ABI
(``tunebank_model_keys``) give the same units and keys for the same model and ATC options; and
for each job type (OPAT, SGAT, GDAT) the result files the CLI and Python write are equal apart
from the report id and the job's wall-clock duration: the simulated times included."""

import ctypes
import json

import pytest

import tunebank
from conftest import FIXTURES, REPO, in_ci

RESNET = FIXTURES / "models" / "resnet50.onnx"
SOC = "Ascend910B2"
# Batch 32: SGAT's winning strategies merge scopes and slice the batch, so the post-SGAT units
# differ from the fused ones.
OPTIONS = {"soc_version": SOC, "input_shape": "input:32,3,224,224"}
FIELDS = ("op_name", "op_type", "ir_type", "profile", "key")


def args_of(options):
    return [f"--{k}={v}" for k, v in options.items()]


def rows(units):
    return [{f: u[f] for f in FIELDS} for u in units]


def capi():
    """The C API's shared library the suite's release build made."""
    path = REPO / "target" / "release" / "libtunebank_capi.so"
    if not path.exists():
        if in_ci():
            pytest.fail(f"the C API library is required under CI=true: {path} does not exist")
        pytest.skip(f"no C API library at {path} (build it: cargo build --release -p tunebank-capi)")
    lib = ctypes.CDLL(str(path))
    f = lib.tunebank_model_keys
    f.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                  ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]
    f.restype = ctypes.c_int
    lib.tunebank_last_error.restype = ctypes.c_char_p
    lib.tunebank_status_name.restype = ctypes.c_char_p
    return lib


def capi_model_keys(lib, model, options, graph_bank=None):
    """``tunebank_model_keys`` with the required-size protocol: ask the length, then read."""
    args = (str(model).encode(), json.dumps(options).encode(),
            None if graph_bank is None else str(graph_bank).encode())
    needed = ctypes.c_size_t(0)
    status = lib.tunebank_model_keys(*args, None, 0, ctypes.byref(needed))
    assert lib.tunebank_status_name(status) == b"TUNEBANK_STATUS_BUFFER_TOO_SMALL", \
        lib.tunebank_last_error()
    buf = ctypes.create_string_buffer(needed.value + 1)
    status = lib.tunebank_model_keys(*args, buf, len(buf), ctypes.byref(needed))
    assert status == 0, lib.tunebank_last_error()
    return json.loads(buf.value.decode())


@pytest.fixture
def sgat_banks(tmp_path, cli, clean_env):
    """A TUNE_BANK_PATH directory whose graph bank an SGAT run of ResNet-50 filled."""
    banks = tmp_path / "banks"
    banks.mkdir()
    cli("tune", "--job_type=1", f"--model={RESNET}", *args_of(OPTIONS), "--budget", 8,
        "--output-dir", tmp_path / "sgat", home=tmp_path / "home", env={"TUNE_BANK_PATH": banks})
    (graph_file,) = banks.rglob("tunebank_graph.redb")
    return banks, graph_file


def test_every_front_door_gives_the_post_sgat_units(tmp_path, cli, sgat_banks, monkeypatch, pg_database):
    sgat_banks, graph_file = sgat_banks
    env = {"TUNE_BANK_PATH": sgat_banks}
    home = tmp_path / "home"
    report = json.loads(cli("convert", f"--model={RESNET}", "--json", *args_of(OPTIONS),
                            home=home, env=env))
    assert report["graph_hits"] > 0, "the SGAT run's winners are applied"
    converted = rows(report["ops"])

    # Without any graph bank the same model gives other units: the comparison below is not
    # between two plans that could not differ.
    fused = rows(tunebank.model_keys(RESNET, **OPTIONS))
    assert fused != converted

    # Python: the graph bank the environment names, as convert found it, and the same file given
    # explicitly.
    monkeypatch.setenv("TUNE_BANK_PATH", str(sgat_banks))
    assert rows(tunebank.model_keys(RESNET, **OPTIONS)) == converted
    explicit = json.loads(cli("convert", f"--model={RESNET}", "--json", *args_of(OPTIONS),
                              "--graph-bank", graph_file, home=home))
    assert rows(explicit["ops"]) == converted
    assert rows(tunebank.model_keys(RESNET, graph_bank=graph_file, **OPTIONS)) == converted

    # The C ABI, in this process (so under the same TUNE_BANK_PATH), both ways.
    lib = capi()
    assert rows(capi_model_keys(lib, RESNET, OPTIONS)) == converted
    assert rows(capi_model_keys(lib, RESNET, OPTIONS, graph_file)) == converted

    # The queue: the tasks `tune --queue` enqueues are the converter's unique keys, under the
    # op names that share them.
    job_id = int(cli("tune", f"--model={RESNET}", *args_of(OPTIONS), "--queue", pg_database,
                     "--detach", "--bank", tmp_path / "op.redb", "--output-dir", tmp_path / "q",
                     home=home, env=env).strip())
    status = json.loads(cli("job", "status", job_id, "--queue", pg_database, "--json", home=home))
    assert status["reused"] == 0
    tasks = {t["key"]: sorted(t["op_names"]) for t in status["tasks"]}
    by_key = {}
    for r in converted:
        by_key.setdefault(r["key"], []).append(r["op_name"])
    assert tasks == {k: sorted(v) for k, v in by_key.items()}


FRAMEWORKS = FIXTURES / "models" / "frameworks"


@pytest.mark.parametrize("model,flags", [
    (FRAMEWORKS / "small_net.prototxt", {"framework": 0, "weight": FRAMEWORKS / "small_net.caffemodel"}),
    (FRAMEWORKS / "small_net.pb", {"framework": 3}),
    (FIXTURES / "models" / "pytorch" / "small_cnn_step.pt2", {}),
], ids=["caffe", "tensorflow", "pytorch"])
def test_caffe_tensorflow_and_pytorch_models_enter_every_front_door(clean_env, cli, model, flags):
    """The CLI's ``convert``, Python's ``model_keys`` and the C ABI take a Caffe prototxt with
    its ``weight``, a frozen TensorFlow graph and a PyTorch ``.pt2`` (a captured training step)
    alike, with the same units and keys."""
    path = model
    options = {"soc_version": SOC, **{k: str(v) for k, v in flags.items()}}
    converted = rows(json.loads(cli("convert", f"--model={path}", *args_of(options), "--json"))["ops"])
    assert any(r["ir_type"].startswith("Conv2D") for r in converted), converted
    assert rows(tunebank.model_keys(path, **options)) == converted
    assert rows(capi_model_keys(capi(), path, options)) == converted


def normalised(doc):
    """A result file's document without what a rerun changes: the report id (a timestamp and a
    thread or process id, the document's one key) and the job's wall-clock duration,
    ``basic.tuning_time(s)``. Every other time in the file is the deterministic simulator's (op,
    subgraph and model times before and after tuning, GDAT's tails, segments and step times), so
    it is compared like any other field."""
    (entries,) = doc.values()
    out = json.loads(json.dumps(entries))
    basics = [e["basic"] for e in out if "basic" in e]
    assert len(basics) == 1 and "tuning_time(s)" in basics[0], entries
    del basics[0]["tuning_time(s)"]
    return out


def simulated_times(v, path=""):
    """Every time the simulator gave in a result file (keys with a `(us)` or `(ms)` unit), by
    path."""
    if isinstance(v, dict):
        return {p: t for k, x in v.items() for p, t in simulated_times(x, f"{path}/{k}").items()}
    if isinstance(v, list):
        return {p: t for i, x in enumerate(v) for p, t in simulated_times(x, f"{path}[{i}]").items()}
    return {path: v} if path.endswith(("(us)", "(ms)")) else {}


@pytest.mark.parametrize("job_type,extra,pyextra", [
    (2, [], {}),
    (1, [], {}),
    (4, ["--rank_size", 8], {"rank_size": 8}),
], ids=["opat", "sgat", "gdat"])
def test_cli_and_python_write_the_same_result_file(tmp_path, cli, clean_env, monkeypatch,
                                                   job_type, extra, pyextra):
    # One worker each, so tasks finish in plan order on both sides.
    monkeypatch.setenv("TUNING_PARALLEL_NUM", "1")
    options = {"soc_version": SOC}
    cli_out, py_out = tmp_path / "cli", tmp_path / "py"
    cli("tune", f"--job_type={job_type}", f"--model={RESNET}", *args_of(options), *extra,
        "--budget", 8, "--seed", 4, "--bank", tmp_path / "cli.redb", "--output-dir", cli_out,
        home=tmp_path / "home", env={"TUNING_PARALLEL_NUM": 1})
    (cli_file,) = cli_out.glob("aoe_result_*.json")
    result = tunebank.tune(RESNET, job_type=job_type, bank=tmp_path / "py.redb",
                           output_dir=py_out, budget=8, seed=4, **pyextra, **options)
    assert result.job_type == job_type
    (py_file,) = py_out.glob("aoe_result_*.json")
    cli_doc = json.loads(cli_file.read_text())
    py_doc = json.loads(py_file.read_text())
    assert py_doc == result.report
    assert normalised(cli_doc) == normalised(py_doc)
    assert normalised(py_doc), "the comparison has content"
    # The simulated times are among what is compared: the job's before and after times are
    # there and not negative, and equal on both sides to the written three or six decimals.
    times = simulated_times(normalised(py_doc))
    assert any("before_tune" in p for p in times) and any("after_tune" in p for p in times), times
    assert all(isinstance(t, (int, float)) and t >= 0 for t in times.values()), times
    assert times == simulated_times(normalised(cli_doc))
