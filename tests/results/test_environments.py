"""What differs between two results' environments, said first: package
versions, implementations, the project's commit and patched tree, Python
(scenarios.results.metadata.differences), in compare of run files too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scenarios.results.metadata import differences
from tests.support.cli_helpers import run_cli

DATA = Path(__file__).resolve().parents[1] / "data"


def test_each_kind_of_difference_is_named_once() -> None:
    old = {
        "versions": {"ZODB": "6.4", "ZEO": "6.2"},
        "implementations": {"persistent": "C", "BTrees": "C"},
        "code": {"project": {"commit": "a" * 40, "dirty": False}},
        "python": {"version": "3.11.7", "implementation": "CPython"},
    }
    new = {
        "versions": {"ZODB": "6.2", "ZEO": "6.2"},
        "implementations": {"persistent": "Python", "BTrees": "C"},
        "code": {"project": {"commit": "b" * 40, "dirty": True, "diff": "d1"}},
        "python": {"version": "3.12.1", "implementation": "CPython"},
    }
    assert differences(old, new) == [
        "ZODB 6.4 -> 6.2",
        "persistent C -> Python",
        f"commit {'a' * 10} -> {'b' * 10}",
        "the new side's tree patched (d1)",
        "Python 3.11.7 -> 3.12.1",
    ]
    assert differences(old, old) == []
    # What one side does not record (files written before) is left out.
    assert differences({"versions": {"ZODB": "6.4"}}, new) == ["ZODB 6.4 -> 6.2"]


def test_compare_of_run_files_opens_with_the_environments(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = json.loads((DATA / "run-3.json").read_text())
    data["metadata"]["versions"]["ZODB"] = "6.2"
    new = tmp_path / "new.json"
    new.write_text(json.dumps(data))
    page = tmp_path / "c.html"
    r = run_cli(capsys, "compare", str(DATA / "run-3.json"), str(new),
                "--html", str(page))  # fmt: skip
    assert r.status == 0, r.err
    assert r.out.startswith("Environments differ: ZODB 6.4 -> 6.2.\n"), r.out
    html = page.read_text()
    assert html.index("Environments differ") < html.index("wall time")
