"""`vfab-bench verify`, and the history and check options of `scale`: the
verdicts, the exit statuses, the files, and bad input refused before any
work."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios.load.consistency import KINDS
from scenarios.results.files import VERIFY
from tests.conftest import factory_or_skip
from tests.served import ROOT, env

QUICK = ["--clients", "2", "--budget", "2", "--size", "small"]


def vfab(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scenarios.cli", *args],
        capture_output=True, text=True, timeout=timeout, env=env(), cwd=ROOT,
    )  # fmt: skip


@pytest.mark.subprocess
def test_verify_calls_relstorage_sqlite_wrong(tmp_path: Path) -> None:
    """RelStorage 4.3.0 on SQLite fails the readCurrent scenario
    (tests/test_verify_scenarios.py says why): exit 1, WRONG, the JSON
    holds the verdicts; zeo beside it is right."""
    factory_or_skip("relstorage-sqlite")
    out, history = tmp_path / "v.json", tmp_path / "h.jsonl"
    proc = vfab("verify", "--storage", "relstorage-sqlite,zeo", *QUICK,
                "--json", str(out), "--history", str(history), "-q")  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "relstorage-sqlite: WRONG" in proc.stdout
    assert "zeo: right" in proc.stdout
    assert "readcurrent-then-commit: violation" in proc.stdout
    doc = json.loads(out.read_text())
    assert (doc["kind"], doc["schema_version"]) == (VERIFY.kind, VERIFY.version)
    sqlite, zeo = doc["storages"]
    assert sqlite["ok"] is False and zeo["ok"] is True
    verdicts = {s["name"]: s["verdict"] for s in sqlite["scenarios"]}
    assert verdicts["readcurrent-then-commit"] == "violation"
    assert set(sqlite["violations"]) == set(KINDS)
    (point,) = zeo["points"]
    assert point["invariants"]["checked"] and point["invariants"]["ok"]
    assert point["invariants"]["tally"]["ok"] > 0
    lines = [json.loads(line) for line in history.read_text().splitlines()]
    contexts = [line for line in lines if "history" in line]
    assert [c["storage"] for c in contexts] == ["relstorage-sqlite", "zeo"]
    events = [line for line in lines if "history" not in line]
    assert events and {e["outcome"] for e in events} <= {"ok", "failed", "unknown"}


@pytest.mark.subprocess
def test_scale_without_the_check_says_so(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    proc = vfab("scale", "--clients", "1", "--duration", "1", "--warmup", "0.2",
                "--no-check", "--json", str(out), "-q")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "consistency not checked: --no-check" in proc.stdout
    (point,) = json.loads(out.read_text())["points"]
    assert point["invariants"]["checked"] is False


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["scale", "--no-check", "--history", "h.jsonl"], "--history needs the check"),
        (["scale", "--history", "/nonexistent/h.jsonl"], "does not exist"),
        (["verify", "--history", "/nonexistent/h.jsonl"], "does not exist"),
        (["verify", "--storage", "file"], "shared by processes"),
        (["verify", "--budget", "0"], "--budget"),
        (["zeoloop", "--history", "/nonexistent/h.jsonl"], "does not exist"),
    ],
)
def test_bad_input_is_one_line_before_any_work(
    args: list[str], message: str, tmp_path: Path
) -> None:
    proc = vfab(*args, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
    assert proc.stdout == ""
