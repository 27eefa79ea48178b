"""A team bank on PostgreSQL from Python: ``Bank.open`` and ``tune`` take a ``postgres://`` URL
wherever a bank path goes. The server is the one ``.ci/run`` started (``TUNEBANK_TEST_PG_URL``),
else a cluster of the test's own (``scripts/pg-cluster.sh``); without PostgreSQL's server
binaries the test is skipped, except under ``CI=true``, where it fails."""

import os
import subprocess
import uuid

import pytest

import tunebank
from conftest import FIXTURES, REPO

SCRIPT = REPO / "scripts" / "pg-cluster.sh"
RESNET = FIXTURES / "models" / "resnet50.onnx"


def unavailable(why):
    if os.environ.get("CI") == "true":
        pytest.fail(f"a PostgreSQL server is required under CI=true: {why}")
    pytest.skip(f"no PostgreSQL server: {why}")


@pytest.fixture
def pg_database(tmp_path):
    """The URL of a fresh database."""
    own = None
    admin = os.environ.get("TUNEBANK_TEST_PG_URL")
    if not admin:
        own = tmp_path / "pg"
        out = subprocess.run(["bash", str(SCRIPT), "start", str(own)], capture_output=True, text=True)
        if out.returncode != 0:
            unavailable(out.stderr.strip())
        admin = out.stdout.strip()
    name = "py_" + uuid.uuid4().hex[:12]
    out = subprocess.run(["bash", str(SCRIPT), "createdb", admin, name], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    yield out.stdout.strip()
    if own is not None:
        subprocess.run(["bash", str(SCRIPT), "stop", str(own)], capture_output=True)


def test_tune_into_a_postgres_bank_and_look_up_from_python(pg_database, cli, tmp_path, clean_env):
    cli("bank", "init", pg_database, home=tmp_path)
    result = tunebank.tune(RESNET, bank=pg_database, output_dir=tmp_path, soc_version="Ascend910B2",
                           budget=4, seed=5)
    assert result.result == "tuning successful"
    rows = tunebank.model_keys(RESNET, soc_version="Ascend910B2")
    with tunebank.Bank.open(pg_database, soc_version="Ascend910B2", read_only=True) as bank:
        hits = bank.lookup_many([r["key"] for r in rows])
    assert all(h is not None and h.layer == "custom" for h in hits)
    again = tunebank.tune(RESNET, bank=pg_database, output_dir=tmp_path, soc_version="Ascend910B2",
                          budget=4, seed=5)
    assert again.summary["repo_hit_num"] == result.tasks


def test_an_unreachable_server_is_a_typed_error_without_the_password():
    with pytest.raises(tunebank.TunebankError) as e:
        tunebank.Bank.open("postgres://tuner:s3cret-pw@127.0.0.1:1/bank", soc_version="Ascend910B2")
    assert "s3cret-pw" not in str(e.value)
    assert isinstance(e.value, tunebank.BankUnreachableError)
