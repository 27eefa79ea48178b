"""``tunebank.tune(platform_config=…)`` is ``tunebank tune --platform-config``: the job's own
SoC description file, which the simulator models the SoC from (the same times as the CLI's with
the same file, other times than the built-in file's), and a file of another SoC is bad input
naming it. The simulator keeps one model per SoC for the life of a process, so the job with its
own file runs in a Python process of its own."""

import json
import re
import subprocess
import sys

import pytest

import tunebank
from conftest import FIXTURES, REPO

BERT = FIXTURES / "models" / "bert_layer.onnx"
SOC_FILES = REPO / "crates" / "key" / "src" / "platform" / "cann81"


def before_us(doc):
    """The ops' summed default-tiling times of a result file, added in ascending order."""
    times = []

    def walk(v):
        if isinstance(v, dict):
            for k, x in v.items():
                if k == "performance_before_tune(us)":
                    times.append(x)
                else:
                    walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(doc)
    assert times, "the result file lists tuned ops"
    return sum(sorted(times))


def test_the_jobs_platform_config_is_the_simulators(tmp_path, cli, clean_env):
    soc = "Ascend910B4"
    text = (SOC_FILES / f"{soc}.ini").read_text()
    assert "cube_freq=1500" in text
    slow = tmp_path / "slow.ini"
    slow.write_text(text.replace("cube_freq=1500", "cube_freq=750"))
    kwargs = {"soc_version": soc, "budget": 2, "seed": 1, "output_dir": str(tmp_path / "py"),
              "bank": str(tmp_path / "py.redb"), "platform_config": str(slow)}
    script = ("import json, sys, tunebank\n"
              "r = tunebank.tune(sys.argv[1], **json.loads(sys.argv[2]))\n"
              "print(json.dumps(r.report))\n")
    done = subprocess.run([sys.executable, "-c", script, str(BERT), json.dumps(kwargs)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    python = before_us(json.loads(done.stdout))

    def cli_times(*flags):
        out = tmp_path / f"cli{len(flags)}"
        cli("tune", f"--model={BERT}", f"--soc_version={soc}", "--budget", 2, "--seed", 1,
            "--output-dir", out, "--bank", tmp_path / f"cli{len(flags)}.redb", *flags,
            home=clean_env / "home")
        (path,) = out.glob("*.json")
        return before_us(json.loads(path.read_text()))

    assert python == cli_times(f"--platform-config={slow}")
    assert python > 1.2 * cli_times()


def test_a_platform_config_of_another_soc_is_bad_input(tmp_path, clean_env):
    other = tmp_path / "Ascend910B4.ini"
    other.write_text((SOC_FILES / "Ascend910B4.ini").read_text())
    with pytest.raises(tunebank.InputError, match=re.escape(str(other))):
        tunebank.tune(BERT, output_dir=tmp_path, platform_config=other,
                      soc_version="Ascend310B1", budget=1)
