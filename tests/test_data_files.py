"""The checked-in result files (tests/data/) are what their README says:
real outputs of the suite, each written by the command the README gives
(the one the file recorded), and each still read by the current code."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.conftest import DATA
from tests.support.cli_helpers import run_cli

FILES = sorted(DATA.glob("*.json"))


def test_the_views_have_their_files() -> None:
    names = {path.name for path in FILES}
    assert {"run-3.json", "run-16.json", "sweep.json", "scale.json"} <= names


@pytest.mark.parametrize("path", FILES, ids=[path.name for path in FILES])
def test_the_readme_gives_the_command_that_wrote_it(path: Path) -> None:
    recorded = json.loads(path.read_text())["metadata"]["command"]
    assert Path(recorded[0]).name == "vfab-bench", recorded
    command = shlex.join(["vfab-bench", *recorded[1:]])
    rows = [
        line
        for line in (DATA / "README.md").read_text().splitlines()
        if line.startswith(f"| {path.name} |")
    ]
    assert len(rows) == 1, f"tests/data/README.md has no row for {path.name}"
    assert f"`{command}`" in rows[0]


@pytest.mark.parametrize("path", FILES, ids=[path.name for path in FILES])
def test_report_still_reads_it(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "report", str(path))
    assert r.status == 0, r.err
    assert r.err == "" and r.out.strip()
