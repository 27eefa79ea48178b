"""Shared fixtures: the repository's fixture files and the CLI binary the parity tests compare
against (``$TUNEBANK_BIN``, else ``target/release/tunebank`` of the workspace; missing is a
failure under ``CI=true`` and a skip elsewhere)."""

import os
import pathlib
import shutil
import subprocess
import uuid

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
REPLAY = REPO / "search-strategies" / "fixtures" / "replay"


def in_ci():
    """Whether this run is CI's: ``CI`` is ``true`` or ``1``, the Rust tests' one rule
    (``tests/it/common/ci.rs``; ``ci_rule`` there checks that the two answer alike). Under CI a
    missing tool fails the test needing it instead of skipping it."""
    return os.environ.get("CI") in ("true", "1")


def require(module, install):
    """``module`` imported; missing, the test fails under CI (``install`` says how to get it)
    and is skipped elsewhere."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        if in_ci():
            pytest.fail(f"{module} is required under CI=true ({install}): {e}")
        pytest.skip(f"no {module} ({e}): {install}")


def step_env(monkeypatch, tmp_path):
    """The training adapters' environment for one test: no AOE variables from the caller,
    ``ASCEND_WORK_PATH`` a fresh ``work`` folder of ``tmp_path`` (returned), HOME ``tmp_path``."""
    for var in ("AOE_MODE", "TUNE_BANK_PATH", "ASCEND_CACHE_PATH", "REPEAT_TUNE", "RANK_SIZE"):
        monkeypatch.delenv(var, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("ASCEND_WORK_PATH", str(work))
    monkeypatch.setenv("HOME", str(tmp_path))
    return work


@pytest.fixture(scope="session")
def repo():
    return REPO


@pytest.fixture(scope="session")
def cli():
    """A function running the ``tunebank`` CLI with a clean environment (no AOE bank or work
    path variables; ``home`` as HOME, ``env`` added); returns stdout."""
    path = pathlib.Path(os.environ.get("TUNEBANK_BIN", REPO / "target" / "release" / "tunebank"))
    if not path.exists():
        if in_ci():
            pytest.fail(f"the tunebank CLI is required under CI=true: {path} does not exist")
        pytest.skip(f"no tunebank CLI at {path} (build it: cargo build --release)")

    def run(*args, home=None, env=None):
        extra = env or {}
        env = {k: v for k, v in os.environ.items()
               if k not in ("TUNE_BANK_PATH", "ASCEND_CACHE_PATH", "ASCEND_WORK_PATH")}
        if home is not None:
            env["HOME"] = str(home)
        env.update({k: str(v) for k, v in extra.items()})
        out = subprocess.run([str(path), *map(str, args)], capture_output=True, text=True, env=env)
        assert out.returncode == 0, f"tunebank {' '.join(map(str, args))}: {out.stderr}"
        return out.stdout

    return run


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No AOE bank variables and a fresh HOME: nothing outside the test's own files is read."""
    for v in ("TUNE_BANK_PATH", "ASCEND_CACHE_PATH", "ASCEND_WORK_PATH", "REPEAT_TUNE"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    return tmp_path


@pytest.fixture(scope="session")
def tuned_resnet(tmp_path_factory):
    """A bank tuned with ResNet-50 on the simulated Ascend910B2 (small budget), and the result."""
    import tunebank

    d = tmp_path_factory.mktemp("tuned")
    old = {v: os.environ.pop(v, None) for v in ("TUNE_BANK_PATH", "ASCEND_CACHE_PATH", "REPEAT_TUNE")}
    os.environ["HOME"], home = str(d), os.environ.get("HOME")
    try:
        result = tunebank.tune(
            FIXTURES / "models" / "resnet50.onnx",
            job_type=2,
            bank=d / "bank.db",
            output_dir=d,
            soc_version="Ascend910B2",
            budget=8,
            seed=3,
        )
    finally:
        for k, v in old.items():
            if v is not None:
                os.environ[k] = v
        if home is not None:
            os.environ["HOME"] = home
    return d / "bank.db", result


def copy_bank(src, dst):
    shutil.copy(src, dst)
    return dst


def unavailable(why):
    if in_ci():
        pytest.fail(f"a PostgreSQL server is required under CI=true: {why}")
    pytest.skip(f"no PostgreSQL server: {why}")


@pytest.fixture
def pg_database(tmp_path):
    """The URL of a fresh database on the server ``.ci/run`` started (``TUNEBANK_TEST_PG_URL``),
    else on a cluster of the test's own (``scripts/pg-cluster.sh``); without PostgreSQL's
    server binaries the test is skipped, except under ``CI=true``, where it fails."""
    script = REPO / "scripts" / "pg-cluster.sh"
    own = None
    admin = os.environ.get("TUNEBANK_TEST_PG_URL")
    if not admin:
        own = tmp_path / "pg"
        out = subprocess.run(["bash", str(script), "start", str(own)], capture_output=True, text=True)
        if out.returncode != 0:
            unavailable(out.stderr.strip())
        admin = out.stdout.strip()
    name = "py_" + uuid.uuid4().hex[:12]
    out = subprocess.run(["bash", str(script), "createdb", admin, name], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    yield out.stdout.strip()
    if own is not None:
        subprocess.run(["bash", str(script), "stop", str(own)], capture_output=True)
