"""One real failure of each kind raises the exception the library's error table names for that
kind (``TABLE`` in ``crates/failure/src/lib.rs``, which also gives the command lines' exit code
and the C ABI's status): bad input, an I/O failure, a busy bank, a damaged bank and an
unreachable bank server, each met through the package as a caller meets it."""

import re
import shutil
import socket

import pytest

import tunebank
from conftest import FIXTURES, REPO

RESNET = FIXTURES / "models" / "resnet50.onnx"
SOC = "Ascend910B2"

ROW = re.compile(
    r"FailureAnswer \{\s*kind: FailureKind::(\w+),\s*exit_code: (\d+),\s*c_status: (\d+),"
    r"\s*c_status_name: \"(\w+)\",\s*python_exception: \"(\w+)\",\s*\}"
)


def error_table():
    """The library's error table as written: kind -> Python exception class name."""
    source = (REPO / "crates" / "failure" / "src" / "lib.rs").read_text()
    rows = {m.group(1): m.group(5) for m in ROW.finditer(source)}
    assert set(rows) == {"Input", "Io", "Busy", "Damaged", "Unreachable"}, rows
    return rows


def raised(call):
    """The exception `call` raises (it must raise one of tunebank's)."""
    with pytest.raises(tunebank.TunebankError) as caught:
        call()
    return caught.value


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def damaged_copy(tuned_resnet, tmp_path):
    """A copy of the tuned bank whose stored strategies naming one parameter have that name
    changed on disk, and the key of one of their records."""
    bank_path, _ = tuned_resnet
    rows = tunebank.model_keys(RESNET, soc_version=SOC)
    with tunebank.Bank.open(bank_path, soc_version=SOC, read_only=True) as bank:
        hits = [(r["key"], bank.lookup(r["key"])) for r in rows]
    key, name = max(((k, n) for k, h in hits for n in h.strategy), key=lambda kn: len(kn[1]))
    assert len(name) >= 4, name
    data = bank_path.read_bytes()
    old = name.encode()
    new = bytes([old[0] ^ 0x20]) + old[1:]
    assert old in data and new not in data
    copy = tmp_path / "damaged.db"
    copy.write_bytes(data.replace(old, new))
    return copy, key


def failures(tuned_resnet, tmp_path):
    """One real failure per kind: kind -> a call that fails so."""
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("a file where the bank's directory would be")
    sled = tmp_path / "sled-bank"
    sled.mkdir()
    held = tunebank.Bank.open(sled, soc_version=SOC, default_builtin=False)
    damaged, damaged_key = damaged_copy(tuned_resnet, tmp_path)

    def busy():
        # A sled bank is served to one open at a time; `held` keeps it.
        tunebank.Bank.open(sled, soc_version=SOC, default_builtin=False)

    def damage():
        with tunebank.Bank.open(damaged, soc_version=SOC, read_only=True, default_builtin=False) as b:
            b.lookup(damaged_key)

    calls = {
        "Input": lambda: tunebank.Bank.open(tmp_path / "b.db", soc_version="Ascend999"),
        "Io": lambda: tunebank.Bank.open(not_a_dir / "sub" / "b.db", soc_version=SOC,
                                         default_builtin=False),
        "Busy": busy,
        "Damaged": damage,
        "Unreachable": lambda: tunebank.Bank.open(
            f"postgres://tuner@127.0.0.1:{free_port()}/bank", soc_version=SOC),
    }
    return calls, held


def test_every_failure_kind_raises_the_tables_class(tuned_resnet, tmp_path, clean_env):
    table = error_table()
    calls, held = failures(tuned_resnet, tmp_path)
    try:
        for kind, call in calls.items():
            e = raised(call)
            expected = getattr(tunebank.errors, table[kind])
            assert type(e) is expected, f"{kind}: {type(e).__name__}: {e}"
            assert getattr(tunebank, table[kind]) is expected
    finally:
        held.close()


def test_the_tables_classes_are_the_packages():
    table = error_table()
    # Besides the table's classes: their base, and NotExactError, the answer of a strict look-up
    # (``Bank.lookup_ops(strict=True)``), not a failure of the library (the CLI's ``--strict``
    # exits 1, the C ABI's strict mode returns MISS).
    not_failures = ("TunebankError", "NotExactError")
    assert sorted(table.values()) == sorted(n for n in tunebank.errors.__all__ if n not in not_failures)
    assert issubclass(tunebank.NotExactError, LookupError)
    for name in table.values():
        assert issubclass(getattr(tunebank.errors, name), tunebank.TunebankError)


def test_a_copy_of_a_bank_is_not_damaged_by_copying(tuned_resnet, tmp_path):
    """The damaged copy above is damaged by the changed byte, not by the copy itself."""
    bank_path, _ = tuned_resnet
    copy = shutil.copy(bank_path, tmp_path / "copy.db")
    rows = tunebank.model_keys(RESNET, soc_version=SOC)
    with tunebank.Bank.open(copy, soc_version=SOC, read_only=True, default_builtin=False) as b:
        assert all(b.lookup(r["key"]) is not None for r in rows)
