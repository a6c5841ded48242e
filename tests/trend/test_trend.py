"""vfab-bench trend: run files in the order of the versions they recorded,
the steps exactly where compare finds them, the page, the input it refuses;
and in Chromium, the page over real runs made under ZODB 6.2, 6.3 and 6.4
installed in turn from PyPI (skipped, saying why, without chromium,
playwright or PyPI)."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from scenarios.results import compare_runs, formatter, significance
from scenarios.results.model import RunResult
from scenarios.trend import page as history_html
from scenarios.trend import table as history
from tests.conftest import DATA, offline_page
from tests.support.cli_helpers import assert_bad_input, run_cli
from tests.support.tiers import starts

ROOT = Path(__file__).resolve().parents[2]
ZODB_VERSIONS = ("6.2", "6.3", "6.4")


def part(data: dict[str, Any], start: int, step: int = 2) -> dict[str, Any]:
    """Every *step*-th trial of a run from *start*, as a run file of its own."""
    out = copy.deepcopy(data)
    for r in out["results"]:
        r["samples"] = r["samples"][start::step]
    out["trials"] = []
    return out


def recorded(data: dict[str, Any], zodb: str, date: str) -> dict[str, Any]:
    out = copy.deepcopy(data)
    out["metadata"]["versions"]["ZODB"] = zodb
    out["metadata"]["date"] = date
    return out


@pytest.fixture(scope="module")
def whole() -> dict[str, Any]:
    """One real run of 12 trials (mapping and file), to be split in two
    interleaved halves of the same code (test_compare says why halves): the
    first 12 rounds of tests/data/run-16.json, as a 12-trial run made them."""
    data: dict[str, Any] = json.loads((DATA / "run-16.json").read_text())
    for r in data["results"]:
        r["samples"] = r["samples"][:12]
    trials: dict[str, list[Any]] = {}
    for t in data["trials"]:
        trials.setdefault(t["storage"], []).append(t)
    data["trials"] = [t for ts in trials.values() for t in ts[:12]]
    data["metadata"]["config"]["repeat"] = 12
    return data


@pytest.fixture(scope="module")
def runs(
    whole: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    """Three run files recorded as ZODB 6.2, 6.9 and 6.10: the halves of one
    run, and the second half again with file's samples slowed by more than
    their spread (every slowed cell separable whatever the machine's load).
    Their names and dates are in another order than their versions."""
    d = tmp_path_factory.mktemp("runs")
    spread = max(
        max(s[k] for s in r["samples"]) / min(s[k] for s in r["samples"])
        for r in whole["results"]
        if r["storage"] == "file"
        for k in ("wall_s", "cpu_s")
    )
    slowed = part(whole, 1)
    for r in slowed["results"]:
        if r["storage"] == "file":
            for s in r["samples"]:
                s["wall_s"] *= max(2.0, spread * 1.01)
    files = {
        "6.10": (d / "a.json", recorded(slowed, "6.10", "2026-01-01T00:00:00Z")),
        "6.2": (d / "b.json", recorded(part(whole, 0), "6.2", "2026-03-01T00:00:00Z")),
        "6.9": (d / "c.json", recorded(part(whole, 1), "6.9", "2026-02-01T00:00:00Z")),
    }
    for path, data in files.values():
        path.write_text(json.dumps(data))
    return {version: path for version, (path, _) in files.items()}


def test_runs_are_in_version_order_not_name_or_date(runs: dict[str, Path]) -> None:
    h = history.build([runs["6.10"].parent])
    assert [p.label for p in h.points] == ["ZODB 6.2", "ZODB 6.9", "ZODB 6.10"]
    by_date = history.build([runs["6.10"].parent], by="date")
    assert [p.path for p in by_date.points] == [runs["6.10"], runs["6.9"], runs["6.2"]]
    # the label is the date: shown once, in the text and on the page
    # the path on the date's line or the next, whole, however long TMPDIR
    assert "2026-01-01 00:00:00 " + str(runs["6.10"]) in " ".join(
        by_date.text().split()
    )
    assert history_html.section(by_date).count("<th>date&nbsp;(UTC)</th>") == 1
    assert history_html.section(h).count("<th>date&nbsp;(UTC)</th>") == 1


def test_a_run_line_keeps_its_path_whole_however_long_with_spaces(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    """A path is copied from the run's line: never broken at its spaces,
    on the line of its label and date, whatever TMPDIR is."""
    d = tmp_path / ("a directory with spaces " * 4).strip()
    d.mkdir()
    for path in runs.values():
        shutil.copy(path, d / path.name)
    text = history.build([d], by="date").text()
    lines = [line.strip() for line in text.splitlines()]
    for name, date in (("a.json", "2026-01-01"), ("c.json", "2026-02-01")):
        # on the date's line, or alone on the next: whole either way
        at = next(
            i for i, line in enumerate(lines) if line.endswith(f"{date} 00:00:00")
        )
        assert lines[at + 1].startswith(str(d / name)), text
    assert max(len(line) for line in text.splitlines() if str(d) not in line) <= 100


def test_labels_name_what_else_changed_and_repeated_versions(
    whole: dict[str, Any], tmp_path: Path
) -> None:
    first = recorded(part(whole, 0), "6.4", "2026-01-01T00:00:00+00:00")
    second = recorded(part(whole, 1), "6.4", "2026-01-02T00:00:00+00:00")
    second["metadata"]["versions"]["ZEO"] = "9.9"
    for name, data in (("x.json", first), ("y.json", second)):
        (tmp_path / name).write_text(json.dumps(data))
    h = history.build([tmp_path])
    assert [p.label for p in h.points] == [
        "ZODB 6.4 (2026-01-01 00:00:00)",
        "ZODB 6.4 (2026-01-02 00:00:00)",
    ]
    zeo = whole["metadata"]["versions"]["ZEO"]
    assert h.points[1].changed == (f"ZEO {zeo} -> 9.9",)
    assert f"also changed: ZEO {zeo} -> 9.9" in " ".join(h.text().split())


def test_the_statistic_is_the_runs_own_unless_they_disagree(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    for version, path in runs.items():
        data = json.loads(path.read_text())
        data["metadata"]["config"]["statistic"] = "median"
        (tmp_path / f"{version}.json").write_text(json.dumps(data))
    recorded = history.build([tmp_path])
    assert recorded.statistic.name == "median"
    assert not recorded.notes
    assert history.build([tmp_path], stat="p10").statistic.name == "p10"
    (tmp_path / "6.2.json").write_text(runs["6.2"].read_text())
    recorded_there = json.loads(runs["6.2"].read_text())["metadata"]["config"]
    mixed = history.build([tmp_path])
    assert recorded_there["statistic"] != "median"
    assert mixed.statistic.name == significance.DEFAULT_STATISTIC
    assert "The runs recorded different statistics" in mixed.notes[0]
    assert not [n for n in mixed.notes if "different speeds" in n]
    slow = json.loads(runs["6.9"].read_text())
    probes = slow["metadata"]["environment"]["speed_probes_s"]
    slow["metadata"]["environment"]["speed_probes_s"] = [2 * p for p in probes]
    (tmp_path / "6.9.json").write_text(json.dumps(slow))
    speeds = [n for n in history.build([tmp_path]).notes if "different speeds" in n]
    assert len(speeds) == 2  # 6.2 -> 6.9 and 6.9 -> 6.10
    assert "the speed probe's median was" in speeds[0]
    assert "ZODB 6.2" in speeds[0] and "ZODB 6.10" in speeds[1]
    cpu = history.build([tmp_path], cpu=True)
    assert "CPU time" in cpu.text()
    cell = ("file", "commit processes")
    values = json.loads(runs["6.9"].read_text())["results"]
    cpu_s = [
        s["cpu_s"]
        for r in values
        if (r["storage"], r["phase"]) == cell
        for s in r["samples"]
    ]
    assert cpu.samples[cell][1] == tuple(cpu_s)


def test_steps_are_where_compare_finds_them(runs: dict[str, Path]) -> None:
    h = history.build([runs["6.10"].parent], stat="p25")
    order = [runs["6.2"], runs["6.9"], runs["6.10"]]
    for i in (1, 2):
        old, new = RunResult.load(order[i - 1]), RunResult.load(order[i])
        found = compare_runs.compare_files(old, new, stat="p25")
        by_compare = {
            (c.column, c.row) for c in found.cells if c.difference.significant
        }
        by_history = {s.cell for s in h.marked() if (s.before, s.after) == (i - 1, i)}
        assert by_history == by_compare, i
    # every file cell got slower into 6.10, and is marked so
    slowed = [s for s in h.marked() if s.after == 2 and s.cell[0] == "file"]
    assert len(slowed) == len(h.rows)
    assert all(s.mark == history.SLOWER for s in slowed)
    text = h.text()
    assert f"Steps ({len(h.marked())}):" in text
    assert "file  commit processes  ZODB 6.9 -> ZODB 6.10: " in text
    assert "x slower (+" in text


def test_too_few_trials_are_undecided_not_unchanged(
    whole: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for i, zodb in enumerate(("6.3", "6.4")):
        data = recorded(part(whole, i, 4), zodb, "2026-01-01T00:00:00+00:00")
        (tmp_path / f"{zodb}.json").write_text(json.dumps(data))
    r = run_cli(capsys, "history", str(tmp_path))
    assert r.status == 0, r.err
    assert f"{history.UNDECIDED}" in r.out
    # compare's power module: among 46 cells a change that moved alone
    # needs 7 trials a side for the minimum.
    assert (
        "Undecided: 46 changes between runs with too few trials (at least 7 a side"
        in r.out
    )


def test_html_page_shows_every_cell_and_step(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    d = runs["6.2"].parent
    page_path = d / "history.html"  # beside the runs it shows: allowed
    r = run_cli(
        capsys, "history", str(d), "--html", str(page_path), "--statistic", "p25"
    )
    assert r.status == 0, r.err
    text = page_path.read_text()
    assert text.startswith("<!DOCTYPE html>")
    for forbidden in ("http:", "https:", "<script", "<link", "src=", "href="):
        assert forbidden not in text, forbidden
    h = history.build([d], stat="p25")
    assert text.count('<figure class="cell-trend">') == len(h.rows)
    assert text.count('<polyline class="trend"') == len(h.cells())
    slower = [s for s in h.marked() if s.mark == history.SLOWER]
    assert text.count('class="step slower"') == len(slower) > 0
    table = text[text.index('<table class="runs">') :]
    assert table.index("ZODB 6.2") < table.index("ZODB 6.9") < table.index("ZODB 6.10")
    assert history_html.section(h) in text
    # the page is not a run file: a second history over the directory
    # leaves it out rather than failing
    again = run_cli(capsys, "history", str(d))
    assert again.status == 0, again.err


def test_json_holds_the_same_numbers_as_the_text_and_compare(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    d = runs["6.2"].parent
    out = d / "history.json"  # beside the runs: left out by the next history
    r = run_cli(capsys, "history", str(d), "--json", str(out), "--statistic", "p25")
    assert r.status == 0, r.err
    data = json.loads(out.read_text())
    assert data["kind"] == "history" and data["statistic"] == "p25"
    assert [run["label"] for run in data["runs"]] == [
        "ZODB 6.2", "ZODB 6.9", "ZODB 6.10"
    ]  # fmt: skip
    assert [run["run"] for run in data["runs"]] == [1, 2, 3]
    h = history.build([d], stat="p25")
    assert len(data["cells"]) == len(h.cells())
    order = [RunResult.load(runs[v]) for v in ("6.2", "6.9", "6.10")]
    pairs = {
        (i, i + 1): {
            (c.column, c.row): c.difference
            for c in compare_runs.compare_files(
                order[i - 1], order[i], stat="p25"
            ).cells
        }
        for i in (1, 2)
    }
    for cell in data["cells"]:
        key = (cell["storage"], cell["row"])
        # each value is the text's number, with its interval and samples
        shown = h.cell_values(key)
        for value in cell["values"]:
            i = value["run"] - 1
            assert formatter.duration(value["estimate"]) == shown[i].rstrip(
                "".join(history.MARK_WORDS)
            )
            assert value["low"] <= value["estimate"] <= value["high"]
            assert len(value["samples"]) == value["n"]
        # each step is compare's cell for that pair of runs
        for step in cell["steps"]:
            same = pairs[(step["from_run"], step["to_run"])][key]
            assert step["p_value"] == same.p_value
            assert step["q_value"] == same.q_value
            assert step["significant"] == same.significant
            assert step["mark"] in ("slower", "faster", "undecided", "same")
    marked = [s for c in data["cells"] for s in c["steps"] if s["significant"]]
    assert len(marked) == len(h.marked()) > 0
    assert {s["mark"] for s in marked} <= {"slower", "faster"}
    again = run_cli(capsys, "history", str(d))
    assert again.status == 0, again.err
    assert "(a history file)" in " ".join(again.out.split())
    # an output that is one of the inputs is refused before any work
    refused = run_cli(capsys, "history", str(runs["6.2"]), "--json", str(runs["6.2"]),
                      "--force")  # fmt: skip
    assert refused.status == 2 and refused.err.count("\n") == 1, refused.err


def bad(tmp_path: Path, name: str, data: Any) -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_bad_input_is_one_line(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = str(runs["6.2"]), str(runs["6.9"])
    base = json.loads(runs["6.2"].read_text())
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_bad_input(run_cli(capsys, "history"), "required: DIR_OR_FILE")
    assert_bad_input(run_cli(capsys, "history", str(empty)), "no run file")
    assert_bad_input(run_cli(capsys, "history", a), "two or more run files")
    assert_bad_input(
        run_cli(capsys, "history", a, str(tmp_path / "missing.json")), "cannot read"
    )
    assert_bad_input(
        run_cli(capsys, "history", a, str(bad(tmp_path, "x.json", "{oops"))),
        "is not JSON",
    )
    broken = copy.deepcopy(base)
    broken["results"][0]["samples"][0]["wall_s"] = "fast"
    assert_bad_input(
        run_cli(capsys, "history", a, str(bad(tmp_path, "y.json", broken))),
        "wall_s: expected seconds",
    )
    sweep = {"schema_version": 1, "kind": "sweep", "metadata": {}, "results": []}
    assert_bad_input(
        run_cli(capsys, "history", a, str(bad(tmp_path, "s.json", sweep))),
        "is a sweep file, not a run file",
    )
    other = copy.deepcopy(base)
    for r in other["results"]:  # each storage renamed: no two rows alike
        r["storage"] = f"elsewhere-{r['storage']}"
    assert_bad_input(
        run_cli(capsys, "history", a, str(bad(tmp_path, "o.json", other))),
        "no cell in common",
    )
    seeded = copy.deepcopy(base)
    seeded["metadata"]["config"]["seed"] = 7
    assert_bad_input(
        run_cli(capsys, "history", a, str(bad(tmp_path, "d.json", seeded))),
        "measured different data sets",
    )
    odd = recorded(base, "banana", "2026-01-01T00:00:00+00:00")
    assert_bad_input(
        run_cli(capsys, "history", a, str(bad(tmp_path, "v.json", odd))),
        "is not a version",
    )
    huge = recorded(base, "1" * 5000, "2026-01-01T00:00:00+00:00")
    assert_bad_input(
        run_cli(capsys, "trend", a, str(bad(tmp_path, "h.json", huge))),
        "is not a version (PEP 440, at most 100 characters)",
    )
    assert_bad_input(
        run_cli(capsys, "history", a, b, "--by", "nosuch"),
        "records no version of nosuch",
    )
    assert_bad_input(
        run_cli(capsys, "history", a, b, "--html", str(tmp_path / "no" / "h.html")),
        "does not exist",
    )
    existing = tmp_path / "old.html"
    existing.write_text("keep me")
    assert_bad_input(
        run_cli(capsys, "history", a, b, "--html", str(existing)), "exists; use --force"
    )
    assert existing.read_text() == "keep me"
    odd_name = tmp_path / "run.html"  # a run file, whatever its name
    shutil.copy(a, odd_name)
    assert_bad_input(
        run_cli(
            capsys, "history", str(odd_name), b, "--html", str(odd_name), "--force"
        ),
        "is one of this command's inputs",
    )
    assert odd_name.read_bytes() == runs["6.2"].read_bytes()


def test_a_directory_leaves_out_files_of_other_kinds(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for version in ("6.2", "6.9"):
        shutil.copy(runs[version], tmp_path / runs[version].name)
    sweep = {"schema_version": 1, "kind": "sweep", "metadata": {}, "results": []}
    (tmp_path / "sweep.json").write_text(json.dumps(sweep))
    r = run_cli(capsys, "history", str(tmp_path))
    assert r.status == 0, r.err
    assert (
        f"Left out (1, not run files): {tmp_path / 'sweep.json'} (a sweep file)"
        in " ".join(r.out.split())
    )


# -- real runs under three ZODB versions, drawn by Chromium ---------------------


def zodb_installed(version: str, cache: Path) -> Path:
    """A directory holding ZODB *version* alone (pip --target, no
    dependencies), installed once per cache; skip when pip cannot get it."""
    target = cache / f"ZODB-{version}"
    if (target / "ZODB" / "__init__.py").exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
             "--retries", "1", "--timeout", "30",
             "--target", str(target), f"ZODB=={version}"],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        shutil.rmtree(target, ignore_errors=True)
        pytest.skip(f"cannot install ZODB {version} from PyPI: pip took over 600 s")
    if done.returncode != 0:
        shutil.rmtree(target, ignore_errors=True)
        lines = [x for x in done.stderr.splitlines() if not x.startswith("WARNING")]
        reason = lines[-1] if lines else f"pip exited {done.returncode}"
        pytest.skip(f"cannot install ZODB {version} from PyPI: {reason}")
    return target


@pytest.fixture(scope="session")
@starts("subprocess", "pypi")
def zodb_runs(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    package_index: None,
) -> Path:
    """A directory of three real run files, one made under each of
    ZODB_VERSIONS (imported first through PYTHONPATH), newest first."""
    try:
        cache = Path(request.config.cache.mkdir("zodb-versions"))  # type: ignore[union-attr]
    except AttributeError:  # the cache provider is switched off
        cache = tmp_path_factory.mktemp("zodb-versions")
    out = tmp_path_factory.mktemp("zodb-runs")
    for version in reversed(ZODB_VERSIONS):
        target = zodb_installed(version, cache)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(target), *filter(None, [os.environ.get("PYTHONPATH")])]
        ))  # fmt: skip
        imported = subprocess.run(
            [sys.executable, "-c", "import ZODB; print(ZODB.__file__)"],
            capture_output=True, text=True, env=env, cwd=ROOT, check=True,
        ).stdout.strip()  # fmt: skip
        assert imported.startswith(str(target)), imported
        path = out / f"zodb-{version}.json"
        done = subprocess.run(
            [sys.executable, "-m", "scenarios.cli", "run", "--storage", "mapping,file",
             "--preset", "quick", "--repeat", "3", "--json", str(path), "--quiet"],
            capture_output=True, text=True, env=env, cwd=ROOT, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        # what ran is what the run recorded
        assert json.loads(path.read_text())["metadata"]["versions"]["ZODB"] == version
    return out


@pytest.mark.subprocess
@pytest.mark.browser
@pytest.mark.pypi
def test_chromium_draws_the_history_of_three_zodb_versions(
    playwright: Any,
    zodb_runs: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    page_path = tmp_path / "history.html"
    r = run_cli(capsys, "history", str(zodb_runs), "--html", str(page_path))
    assert r.status == 0, r.err
    labels = [f"ZODB {v}" for v in ZODB_VERSIONS]
    # the run list, numbered in version order (a note above it may name a
    # pair of runs whose machine speeds differed, in any order)
    for i, label in enumerate(labels, 1):
        assert re.search(rf"^ +{i}  {re.escape(label)} ", r.out, re.M), r.out
    h = history.build([zodb_runs])
    with offline_page(playwright) as (page, requests):
        url = page_path.resolve().as_uri()
        page.goto(url)
        # the runs in version order, in the table and on every chart's x axis
        runs_table = page.locator("table.runs tbody tr")
        assert runs_table.count() == 3
        for i, label in enumerate(labels):
            assert label in runs_table.nth(i).inner_text()
        charts = page.locator("figure.cell-trend svg.chart")
        assert charts.count() == len(h.rows) == 23
        for i in range(charts.count()):
            chart = charts.nth(i)
            assert chart.locator("text.version").all_text_contents() == labels
            box = chart.bounding_box()
            assert box is not None and box["width"] > 300 and box["height"] > 150
        # a line per cell, a point per cell and run
        assert page.locator("polyline.trend").count() == len(h.cells()) == 46
        points = page.locator("svg.chart g.mark")
        assert points.count() == 46 * 3
        for i in range(0, points.count(), 11):
            box = points.nth(i).bounding_box()
            assert box is not None and box["width"] > 0 and box["height"] > 0
        assert page.locator("table.values tbody tr").count() == 23
        assert requests == [url], requests  # nothing but the page itself
        shots = [tmp_path / "history.png"]
        if os.environ.get("VFAB_SCREENSHOTS"):
            shots.append(Path(os.environ["VFAB_SCREENSHOTS"]) / "history.png")
        for shot in shots:
            shot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000
