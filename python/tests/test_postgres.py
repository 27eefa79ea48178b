"""A team bank on PostgreSQL from Python: ``Bank.open`` and ``tune`` take a ``postgres://`` URL
wherever a bank path goes (the database: conftest's ``pg_database``)."""

import pytest

import tunebank
from conftest import FIXTURES

RESNET = FIXTURES / "models" / "resnet50.onnx"


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
