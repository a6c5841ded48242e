"""Every text view of every result kind within 100 columns (issue 36's
limit): report of each kind, compare of two of each kind (and of one file's
storages against one), trend of several, on the checked-in result files
(tests/data), as a user types them from the project's root.  A table whose
columns are storages is no exception to the width: it wraps by groups of
whole columns (scenarios.results.table), shown here on a run of twelve
storages, every storage and every value still there."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from scenarios.census import runner
from scenarios.census.report import text as census_text
from scenarios.census.sources import open_path
from scenarios.results.table import WIDTH
from tests.support.cli_helpers import run_cli

ROOT = Path(__file__).resolve().parent.parent
D = "tests/data"
R = "tests/data/releases"

#: Every text view of the checked-in files: (command, arguments).
VIEWS = [
    ("report", f"{D}/run-3.json", "--all"),
    ("report", f"{D}/run-default.json"),
    ("report", f"{D}/sweep.json"),
    ("report", f"{D}/scale.json"),
    ("report", f"{D}/matrix.json"),
    ("report", f"{R}/a/counts.json"),
    ("report", f"{R}/a/million.json"),
    ("compare", f"{D}/run-3.json", f"{D}/run-16.json", "--pvalues"),
    ("compare", f"{D}/run-3.json", "--baseline", "mapping"),
    ("compare", f"{D}/sweep.json", f"{D}/sweep.json"),
    ("compare", f"{D}/sweep.json", "--baseline", "mapping", "--pvalues"),
    ("compare", f"{R}/a/scale.json", f"{R}/c/scale.json"),
    ("compare", f"{D}/scale.json", f"{D}/scale.json"),
    ("compare", f"{R}/a/counts.json", f"{R}/c/counts.json"),
    ("compare", f"{D}/matrix.json", f"{D}/matrix.json"),
    ("compare", f"{D}/matrix.json", "--baseline", "file"),
    ("compare", f"{R}/a/million.json", f"{R}/c/million.json"),
    ("compare", R + "/a", R + "/b"),
    ("compare", R + "/a", R + "/c"),
    ("trend", f"{D}/run-3.json", f"{D}/run-16.json", f"{D}/run-default.json"),
    ("trend", R + "/a", R + "/b", R + "/c"),
    ("trend", f"{D}/matrix.json", f"{D}/matrix.json"),
]


def too_wide(text: str) -> list[str]:
    return [line for line in text.splitlines() if len(line) > WIDTH]


@pytest.mark.parametrize("args", VIEWS, ids=[" ".join(v) for v in VIEWS])
def test_every_text_view_keeps_within_100_columns(
    args: tuple[str, ...],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    r = run_cli(capsys, *args)
    assert r.status in (0, 1), r.err  # 1: a release that regressed
    assert r.out.strip()
    assert too_wide(r.out) == []
    assert too_wide(r.err) == []


def wide_run(path: Path, storages: int = 12) -> Path:
    """tests/data/run-3.json with its two storages copied under more names,
    each a column of the report: far wider than 100 columns unwrapped."""
    data = json.loads((ROOT / D / "run-3.json").read_text())
    names = [f"relstorage-postgresql-{i}" for i in range(storages - 2)]
    results = list(data["results"])
    for i, name in enumerate(names):
        for r in data["results"]:
            if r["storage"] == ("mapping", "file")[i % 2]:
                results.append({**copy.deepcopy(r), "storage": name})
    data["results"] = results
    data["metadata"]["config"]["storages"] += names
    path.write_text(json.dumps(data))
    return path


def test_a_table_of_storages_wraps_by_column_groups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Twelve storages: the report's tables and trend's table come in groups
    of whole columns, each under the row labels; no line over 100 columns,
    no storage's name or value cut."""
    a, b = wide_run(tmp_path / "a.json"), wide_run(tmp_path / "b.json")
    storages = json.loads(a.read_text())["metadata"]["config"]["storages"]
    for args in (("report", str(a), "--all"), ("trend", str(a), str(b))):
        r = run_cli(capsys, *args)
        assert r.status == 0, r.err
        # A path is kept whole, to be copied, however long TMPDIR makes it.
        assert too_wide(r.out.replace(str(tmp_path), "TMP")) == []
        headers = [line for line in r.out.splitlines() if line.startswith("task")]
        assert len(headers) >= 2, headers  # in groups, not one wide line
        named = " ".join(headers).split()
        assert all(s in named for s in storages), (args, headers)
        # one row of the 2000 table: its twelve values, in its groups
        rows = [x for x in r.out.splitlines() if x.startswith("commit processes ")]
        values = [v for row in rows[: len(headers)] for v in row.split()[2:]]
        assert len([v for v in values if v[0].isdigit()]) >= len(storages), rows


def test_the_census_keeps_within_100_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "d"
    assert run_cli(capsys, "populate", "--path", str(target), "-q").status == 0
    source = open_path("file", target)
    try:
        census = runner.take(source.storage, source.name, source.directory)
    finally:
        source.close()
    text = census_text(census)
    assert "vfab.model.ProcessStep" in text
    assert too_wide(text) == []
