"""vfab-bench choose through its command line: bad sources refused (one
line, exit 2, nothing changed), and the verdict on real servers (runzeo;
PostgreSQL where installed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios.errors import EXIT_BAD_INPUT
from tests.choose.sources import digest, verdict, write_source
from tests.conftest import factory_or_skip
from tests.support.damaged_databases import damage_fs
from tests.support.served import ROOT, env


def vfab(*args: str, timeout: float = 400) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scenarios.cli", *args],
        capture_output=True, text=True, timeout=timeout, env=env(), cwd=ROOT,
    )  # fmt: skip


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "src" / "Data.fs"
    path.parent.mkdir()
    write_source(path, transactions=5, per=4)
    return path


def refused(path: Path, *words: str) -> str:
    """choose --from *path*: exit 2, one line naming it, no traceback,
    every file beside it unchanged byte for byte."""
    before = digest(path.parent)
    proc = vfab("choose", "--storage", "file", "--quick", "--from", str(path), "-q")
    assert proc.returncode == EXIT_BAD_INPUT, proc.stdout + proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert all(w in lines[0] for w in words), lines[0]
    assert digest(path.parent) == before
    return lines[0]


@pytest.mark.subprocess
def test_a_damaged_source_is_refused(source: Path) -> None:
    damage_fs(source, "data record byte")
    refused(source, str(source))


@pytest.mark.subprocess
def test_a_foreign_source_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes" / "Data.fs"
    path.parent.mkdir()
    path.write_text("not a database\n")
    refused(path, str(path))


@pytest.mark.subprocess
def test_a_locked_source_is_refused(source: Path) -> None:
    from ZODB.FileStorage import FileStorage

    held = FileStorage(str(source))  # this process writes it: locked
    try:
        refused(source, "locked")
    finally:
        held.close()


@pytest.mark.subprocess
@pytest.mark.server
def test_choose_on_the_mix_ranks_and_writes_its_kind(tmp_path: Path) -> None:
    """file (one process) and zeo on the mix: zeo is recommended for the
    clients asked, file is said to be one process only; the JSON is kind
    choose and report reads it back, page included."""
    out, page = tmp_path / "c.json", tmp_path / "c.html"
    proc = vfab("choose", "--storage", "file,zeo", "--clients", "1,2",
                "--duration", "1", "--windows", "2", "-q",
                "--json", str(out), "--html", str(page))  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first, rows = verdict(proc.stdout)
    assert first == "choose: zeo for up to 2 clients", proc.stdout
    assert rows["zeo"].endswith("; right"), rows
    assert "at 2 clients" in rows["zeo"]
    assert "one process only" in rows["file"], rows
    assert "when it changes:" in proc.stdout
    doc = json.loads(out.read_text())
    assert (doc["kind"], doc["schema_version"]) == ("choose", 1)
    # its own 2 clients and runzeo, not another's load
    assert doc["metadata"]["environment"]["own_tasks"] == 3
    zeo = next(c for c in doc["candidates"] if c["storage"] == "zeo")
    assert [p["clients"] for p in zeo["points"]] == [1, 2]
    assert [p["clients"] for p in zeo["contended"]] == [2]
    assert zeo["size_bytes"] > 0
    html = page.read_text()
    assert html.index("choose: zeo") < html.index("<svg")
    assert '<ol class="notes"><li>zeo: ' in html  # the ranking, in order
    again = vfab("report", str(out))
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0] == first


@pytest.mark.subprocess
@pytest.mark.server
@pytest.mark.parametrize("name", ["zeo", "relstorage-sqlite", "relstorage-pg"])
def test_from_a_source_into_a_server(name: str, source: Path, tmp_path: Path) -> None:
    """--from a database of unimportable classes into a served storage:
    every record checked; a known upstream bug keeps a right storage from
    being recommended, and is named."""
    factory_or_skip(name)
    before = digest(source.parent)
    out = tmp_path / "c.json"
    proc = vfab("choose", "--storage", name, "--from", str(source),
                "--clients", "1,2", "-q", "--json", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert digest(source.parent) == before
    first, rows = verdict(proc.stdout)
    (candidate,) = json.loads(out.read_text())["candidates"]
    assert candidate["verdict"] == "right", candidate["why"]
    assert candidate["copy"]["checked"] > 0
    assert [(r["clients"], r["cold"]) for r in candidate["copy"]["reads"]] == [
        (1, True), (1, False), (2, True), (2, False)
    ]  # fmt: skip
    if candidate["known_bug"]:
        assert first.startswith("choose: none recommended"), proc.stdout
        assert "for one writer only; not recommended" in rows[name]
    else:
        assert first == f"choose: {name} for up to 2 clients", proc.stdout
