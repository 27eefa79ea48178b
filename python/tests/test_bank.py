"""The bank from Python: a tuned bank round trip, look-ups and batches against the result file
and the CLI, why, the context manager, and threads."""

import json
import threading

import pytest

import tunebank
from conftest import FIXTURES

RESNET = FIXTURES / "models" / "resnet50.onnx"


def test_tune_writes_the_result_file_and_the_bank(tuned_resnet):
    bank_path, result = tuned_resnet
    assert result.result == "tuning successful"
    report = json.loads(open(result.result_file).read())
    (entries,) = report.values()
    opat = entries[1]["OPAT"]
    assert opat["repo_summary"] == result.summary
    s = result.summary
    assert s["repo_add_num"] + s["repo_unsatisfied_num"] == result.tasks == 30
    assert result.units == 72 and not result.interrupted


def test_every_unit_hits_after_tuning_and_matches_the_cli(tuned_resnet, cli, tmp_path):
    bank_path, _ = tuned_resnet
    rows = tunebank.model_keys(RESNET, soc_version="Ascend910B2")
    with tunebank.Bank.open(bank_path, soc_version="Ascend910B2", read_only=True) as bank:
        hits = bank.lookup_many([r["key"] for r in rows])
        singles = [bank.lookup(r["key"]) for r in rows]
    assert all(h is not None and h.layer == "custom" for h in hits)
    assert [h.strategy for h in hits] == [h.strategy for h in singles]
    assert all(h.tuned_us <= h.baseline_us + 1e-9 for h in hits)
    convert = json.loads(cli("convert", f"--model={RESNET}", "--soc_version=Ascend910B2", "--json",
                             "--bank", bank_path, home=tmp_path))
    assert convert["hits"] == len(rows)
    assert [r["default_confirmed"] for r in convert["ops"]] == [h.default_confirmed for h in hits]


def test_a_second_tune_is_all_hits(tuned_resnet, tmp_path, clean_env):
    bank_path, first = tuned_resnet
    again = tunebank.tune(RESNET, bank=bank_path, output_dir=tmp_path, soc_version="Ascend910B2",
                          budget=8, seed=3)
    assert again.summary["repo_hit_num"] == first.tasks
    assert again.summary["repo_add_num"] == 0


def test_a_miss_is_none_and_why_names_the_option(tuned_resnet):
    bank_path, _ = tuned_resnet
    other = tunebank.model_keys(RESNET, soc_version="Ascend910B2", precision_mode="must_keep_origin_dtype")
    with tunebank.Bank.open(bank_path, soc_version="Ascend910B2", read_only=True) as bank:
        assert bank.lookup(other[0]["key"]) is None
        report = bank.why(model=RESNET, precision_mode="must_keep_origin_dtype")
        text = bank.why_text(model=RESNET, precision_mode="must_keep_origin_dtype")
    assert report["summary"]["misses"] == len(other) and report["summary"]["hits"] == 0
    assert "precision_mode" in text


def test_closed_bank_raises_and_context_manager_closes(tuned_resnet):
    bank_path, _ = tuned_resnet
    with tunebank.Bank.open(bank_path, soc_version="Ascend910B2", read_only=True) as bank:
        key = tunebank.model_keys(RESNET, soc_version="Ascend910B2")[0]["key"]
        assert bank.lookup(key) is not None
    with pytest.raises(tunebank.InputError, match="closed"):
        bank.lookup(key)


def test_one_bank_from_many_threads(tuned_resnet):
    bank_path, _ = tuned_resnet
    keys = [r["key"] for r in tunebank.model_keys(RESNET, soc_version="Ascend910B2")]
    bank = tunebank.Bank.open(bank_path, soc_version="Ascend910B2", read_only=True)
    expected = [bank.lookup(k).strategy_json for k in keys]
    errors, results = [], []

    def worker(i):
        try:
            for _ in range(20):
                got = [h.strategy_json for h in bank.lookup_many(keys[i:] + keys[:i])]
                results.append(got == expected[i:] + expected[:i])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bank.close()
    assert not errors and len(results) == 160 and all(results)


def test_subgraph_and_gradient_tuning_from_python(tmp_path, clean_env, cli):
    sgat = tunebank.tune(RESNET, job_type=1, bank=tmp_path / "graph.db", output_dir=tmp_path,
                         soc_version="Ascend910B2", budget=8)
    assert sgat.job_type == 1 and sgat.result == "tuning successful"
    assert sgat.units >= sgat.tasks >= 5
    assert sgat.summary["repo_add_num"] + sgat.summary["repo_unsatisfied_num"] == sgat.tasks
    assert json.loads(open(sgat.result_file).read()) == sgat.report
    again = tunebank.tune(RESNET, job_type=1, bank=tmp_path / "graph.db", output_dir=tmp_path,
                          soc_version="Ascend910B2", budget=8)
    assert again.summary["repo_hit_num"] == sgat.tasks

    gdat = tunebank.tune(RESNET, job_type=4, bank=tmp_path / "grad.db", output_dir=tmp_path,
                         soc_version="Ascend910B2", rank_size=8, budget=16)
    assert gdat.job_type == 4 and gdat.result == "tuning successful" and gdat.units > 50
    assert json.loads(open(gdat.result_file).read()) == gdat.report
    # The CLI's GDAT of the same job, same seed, finds the same split.
    out = tmp_path / "cli"
    cli("tune", f"--model={RESNET}", "--job_type=4", "--soc_version=Ascend910B2", "--rank_size", 8,
        "--budget", 16, "--bank", tmp_path / "cli_grad.db", "--output-dir", out, home=tmp_path)
    (cli_file,) = out.glob("*.json")
    cli_report = json.loads(cli_file.read_text())

    def gdat_part(report):
        (entries,) = report.values()
        part = next(e for e in entries if "basic" not in e)
        (body,) = part.values()
        return {k: v for k, v in body.items() if k in ("performance_after_tune(us)", "tuned", "repo_key")}

    assert gdat_part(cli_report) == gdat_part(gdat.report)
    assert gdat_part(gdat.report)["tuned"]
