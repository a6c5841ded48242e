"""One truth in every view: for one real run, the text table, the HTML page
and compare show the same number of the same statistic; compare says
"inconclusive" where the trials cannot decide; report reads every file the
suite writes; a run exports to pyperf and pyperf's own CLI reads it."""

from __future__ import annotations

import contextlib
import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios.clients import histogram
from scenarios.results import compare_runs, formatter, power, significance
from scenarios.results.model import RunResult
from tests.conftest import checked_in
from tests.support.cli_helpers import assert_bad_input, run_cli


@pytest.fixture
def run_file(tmp_path: Path) -> Path:
    """A run of 3 trials on mapping and file (tests/data/run-3.json)."""
    return checked_in("run-3.json", tmp_path / "views", "r.json")


def _floats(text: str) -> list[str]:
    out = []
    for token in text.split():
        with contextlib.suppress(ValueError):
            float(token)
            out.append(token)
    return out


def test_every_view_shows_the_same_number_of_the_same_statistic(
    run_file: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = RunResult.load(run_file)
    stat = significance.statistic(significance.recorded(run.metadata))
    assert stat.name == "min"  # the run's default, recorded in its file
    page = tmp_path / "r.html"
    written = run_cli(capsys, "report", str(run_file), "--html", str(page))
    assert written.status == 0 and written.out == "", written.err  # the page only
    text = run_cli(capsys, "report", str(run_file), "--all")
    assert text.status == 0, text.err
    same = run_cli(capsys, "compare", str(run_file), str(run_file))
    assert same.status == 0, same.err
    html = page.read_text().replace("&#x27;", "'")

    block = text.out.split(f"wall time, size small, {stat.label} of")[1]
    block = block.split("\n\n")[0]
    html_block = html.split(f"wall time, size small, {stat.label} of")[1]
    html_block = html_block.split("</table>")[0]
    assert f"the {stat.label} of each cell's trials" in same.out
    assert f"today, size small ({stat.label} of" in html
    checked = 0
    for phase in run.phases:
        # The number of "1.05 ms": every view writes the unit that suits.
        expected = [
            formatter.duration(stat(r.wall_values)).split()[0]
            for storage in run.storages
            if (r := run.get(storage, phase)) is not None
        ]
        line = next(x for x in block.splitlines() if x.startswith(phase + "  "))
        assert _floats(line[len(phase) :]) == expected, (phase, line)
        row = re.search(rf"<td>{re.escape(phase)}</td>(.*?)</tr>", html_block)
        assert row is not None, phase
        cells = re.findall(r"<td[^>]*>(?:<span[^>]*>)?([^ <]+)", row.group(1))
        assert cells == expected, (phase, cells)
        for storage in run.storages:
            r = run.get(storage, phase)
            assert r is not None
            v = formatter.duration(stat(r.wall_values))
            assert re.search(
                rf"{re.escape(phase)}\s.*{re.escape(f'{v} -> {v}')}", same.out
            )
            checked += 1
    assert checked >= 40

    # told otherwise, every view follows
    median = run_cli(capsys, "report", str(run_file), "--statistic", "median")
    assert "wall time of the 2000 rows, size small, median of" in median.out
    r = run.get("file", "commit processes")
    assert r is not None
    assert (
        formatter.duration(significance.statistic("median")(r.wall_values))
        in median.out
    )


def flat(text: str) -> str:
    """*text*'s words on one line: what a wrapped paragraph says."""
    return " ".join(text.split())


def _one_cell_file(path: Path, values: list[float], statistic: str | None) -> None:
    config = {} if statistic is None else {"statistic": statistic}
    samples = [{"wall_s": v, "cpu_s": v} for v in values]
    results = [
        {"storage": "file", "size": "small", "phase": f"row {i}", "samples": samples}
        for i in range(1)
    ]
    data = {
        "schema_version": 2,
        "metadata": {"config": config},
        "results": results,
        "trials": [],
    }
    path.write_text(json.dumps(data))


def _file_of(path: Path, rows: dict[str, list[float]]) -> None:
    results = [
        {
            "storage": "file",
            "size": "small",
            "phase": phase,
            "samples": [{"wall_s": v, "cpu_s": v} for v in values],
        }
        for phase, values in rows.items()
    ]
    data = {"schema_version": 2, "metadata": {}, "results": results, "trials": []}
    path.write_text(json.dumps(data))


def test_a_19x_difference_with_5_trials_is_never_not_significant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = [0.00273, 0.00280, 0.00291, 0.00300, 0.00310]
    same = {f"same {i}": [0.01 + 0.0001 * j for j in range(5)] for i in range(30)}
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    _file_of(old, {"query": base, **same})
    _file_of(new, {"query": [v * 19 for v in base], **copy.deepcopy(same)})
    for stat in significance.STATISTICS:
        r = run_cli(capsys, "compare", str(old), str(new), "--statistic", stat)
        assert r.status == 0, r.err
        line = next(x for x in r.out.splitlines() if x.strip().startswith("query"))
        assert "not significant" not in line, (stat, line)
        assert "5 vs 5" in line
        # inconclusive: the trials needed said once, under the cells
        assert "19.00x slower" in line or (
            "19.00x, inconclusive" in line
            and re.search(r"(at least|more than) \d+ a side needed", flat(r.out))
        )
        # the changed-only view keeps it, and drops the cells that did not move
        changed = run_cli(
            capsys, "compare", str(old), str(new), "--statistic", stat,
            "--changed", "--pvalues",
        )  # fmt: skip
        assert "query" in changed.out and "same 3" not in changed.out
        assert re.search(r"\(p [0-9.e-]+, q [0-9.e-]+\)", changed.out)
    # 31 cells at 5 a side: the minimum cannot call a lone change
    result = compare_runs.compare_files(RunResult.load(old), RunResult.load(new))
    cell = next(c for c in result.cells if c.row == "query")
    assert cell.inconclusive and not cell.difference.significant
    assert cell.verdict == "inconclusive (5 vs 5 trials; at least 7 needed)"
    assert power.trials_needed("min", 31) == 7
    # alone, the same 5 vs 5 decide it
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    _file_of(a, {"query": base})
    _file_of(b, {"query": [v * 19 for v in base]})
    alone = compare_runs.compare_files(RunResult.load(a), RunResult.load(b))
    assert alone.cells[0].verdict == "19.00x slower (+1800%)"
    # summaries per storage, never a mean across them
    assert (
        "Summary:\n  file: 31 cells;"
        in run_cli(capsys, "compare", str(old), str(new)).out
    )
    assert "geometric" not in result.text()


def test_files_recording_different_statistics_need_a_choice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    _one_cell_file(a, [1.0, 1.1, 1.2], "min")
    _one_cell_file(b, [1.0, 1.1, 1.2], "median")
    assert_bad_input(run_cli(capsys, "compare", str(a), str(b)), "--statistic")
    r = run_cli(capsys, "compare", str(a), str(b), "--statistic", "median")
    assert r.status == 0 and "median" in r.out


def test_compare_help_shows_percent_signs_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    r = run_cli(capsys, "compare", "--help")
    assert "(+25%)" in r.out and "%%" not in r.out


@pytest.mark.subprocess
def test_pyperf_reads_an_exported_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pyperf")
    # run --pyperf exports as it writes its file: a run of its own
    exported = tmp_path / "r.pyperf.json"
    run_file = tmp_path / "r.json"
    r = run_cli(
        capsys, "run", "--storage", "mapping,file", "--preset", "quick",
        "--json", str(run_file), "--pyperf", str(exported), "--quiet",
    )  # fmt: skip
    assert r.status == 0, r.err
    a, b = tmp_path / "a.pyperf.json", tmp_path / "b.pyperf.json"
    r = run_cli(capsys, "report", str(run_file), "--pyperf", str(a))
    assert r.status == 0, r.err
    slow = json.loads(run_file.read_text())
    for res in slow["results"]:
        for s in res["samples"]:
            s["wall_s"] *= 3
    slow_file = tmp_path / "slow.json"
    slow_file.write_text(json.dumps(slow))
    assert run_cli(capsys, "report", str(slow_file), "--pyperf", str(b)).status == 0
    data = json.loads(a.read_text())
    # run --pyperf wrote the same suite report --pyperf writes from its file
    assert json.loads(exported.read_text()) == data
    names = [bench["metadata"]["name"] for bench in data["benchmarks"]]
    assert "file: commit processes" in names and "mapping: query sequences" in names

    def pyperf(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "pyperf", *args],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    compared = pyperf("compare_to", str(a), str(b))
    assert "file: commit processes" in compared and "slower" in compared
    assert "Total duration" in pyperf("stats", str(a))
    assert pyperf("hist", str(a)).strip()
    # a count run has no times
    assert_bad_input(
        run_cli(capsys, "run", "--counts", "--pyperf", str(tmp_path / "c.json")),
        "--pyperf",
    )


@pytest.fixture
def scale_file(tmp_path: Path) -> Path:
    """A scale run of 1 and 2 clients (tests/data/scale.json)."""
    return checked_in("scale.json", tmp_path / "scale")


def test_report_reads_scale_and_sweep_files(
    scale_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scale, sweep = tmp_path / "scale.json", tmp_path / "sweep.json"
    shutil.copy(scale_file, scale)
    data = json.loads(scale.read_text())
    assert data["schema_version"] == 4
    summary = data["points"][0]["summary"]
    assert summary["ops_per_s"] > 0 and summary["p99_ms"] >= summary["p50_ms"] > 0
    assert {"commits_per_s", "p95_ms", "max_ms", "client_cpu_s"} <= set(summary)
    # The window cut into sub-windows (scale's default), none empty of work.
    windows = data["points"][0]["windows"]
    assert len(windows) == data["metadata"]["config"]["windows"] == 10
    ops = sum(
        histogram.merged([w["hist"]]).get_total_count() for w in windows
    )  # every operation of the window is in one sub-window
    assert ops == summary["ops"]
    env = data["metadata"]["environment"]
    assert env["load_average_start"] and len(env["speed_probes_s"]) == 10
    page = tmp_path / "scale.html"
    r = run_cli(capsys, "report", str(scale), "--html", str(page))
    assert r.status == 0 and r.out == "", r.err
    text = run_cli(capsys, "report", str(scale)).out
    assert "throughput and latency by client count" in text
    assert "Load average (1 min)" in text and re.search(r"\d ±\d+%", text)
    assert page.read_text().count('<svg class="chart"') == 2
    assert "Load average (1 min)" in page.read_text()
    # a version-2 file (no summaries, no windows) still reads
    old = {**data, "schema_version": 2}
    old["points"] = [
        {k: v for k, v in p.items() if k not in ("summary", "windows")}
        for p in data["points"]
    ]
    scale.write_text(json.dumps(old))
    assert run_cli(capsys, "report", str(scale)).status == 0

    checked_in("sweep.json", tmp_path)
    r = run_cli(capsys, "report", str(sweep))
    assert r.status == 0, r.err
    assert "commit wall time per object (µs), minimum of 3" in r.out
    census = tmp_path / "census.json"
    census.write_text(json.dumps({"schema_version": 1, "kind": "census"}))
    assert_bad_input(run_cli(capsys, "report", str(census)), "kind 'census'")


def test_compare_scale_files_tests_sub_windows(
    scale_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    slower = json.loads(scale_file.read_text())
    for p in slower["points"]:
        p["window_s"] *= 2  # half the operations per second, in every window
    new = tmp_path / "new.json"
    new.write_text(json.dumps(slower))
    out = tmp_path / "c.json"
    r = run_cli(capsys, "compare", str(scale_file), str(new), "--json", str(out))
    assert r.status == 0, r.err
    assert "Tested sub-window against sub-window" in flat(r.out)
    lines = [
        x
        for x in r.out.splitlines()
        if x.startswith("  ") and "ops/s" in x and "->" in x
    ]
    assert len(lines) == 2, r.out
    assert all("0.50x (-50%): fewer ops/s, significant" in x for x in lines), lines
    assert "client(s)" not in r.out
    data = json.loads(out.read_text())
    assert [p["ops_ratio"] for p in data["points"]] == [0.5, 0.5]
    same = run_cli(capsys, "compare", str(scale_file), str(scale_file))
    assert "significant" in same.out and "fewer" not in same.out, same.out

    # A file of format 3 kept no sub-windows: ratios alone, no verdict.
    old = json.loads(scale_file.read_text())
    for data in (old, slower):
        data["schema_version"] = 3
        for p in data["points"]:
            del p["windows"]
    old_path = tmp_path / "old3.json"
    old_path.write_text(json.dumps(old))
    new.write_text(json.dumps(slower))
    r = run_cli(capsys, "compare", str(old_path), str(new))
    assert r.status == 0, r.err
    assert "no test of significance is possible" in r.out
    assert "significant" not in r.out.replace("no test of significance", "")
    lines = [x for x in r.out.splitlines() if x.startswith("  ") and "ops/s" in x]
    assert len(lines) == 2 and all("0.50x (no sub-windows" in x for x in lines)

    r = run_cli(capsys, "compare", str(scale_file), str(new), "--fail-above", "5%")
    assert_bad_input(r, "--fail-above does not apply to scale files")
    other = json.loads(scale_file.read_text())
    other["metadata"]["config"]["seed"] = 7
    new.write_text(json.dumps(other))
    assert_bad_input(
        run_cli(capsys, "compare", str(scale_file), str(new)), "differ in seed"
    )


def test_compare_html_page(
    run_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c.html"
    r = run_cli(capsys, "compare", str(run_file), str(run_file), "--html", str(out))
    assert r.status == 0, r.err
    text = out.read_text()
    assert text.count('<svg class="chart"') == 2  # mapping, file
    assert 'class="trial"' in text  # each trial drawn
    assert "<script" not in text and "http" not in text.split("<main>")[1]


@pytest.mark.browser
def test_chromium_draws_the_compare_and_scale_views(
    run_file: Path,
    scale_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        pytest.skip(f"no chromium at {chromium}")
    sync = pytest.importorskip("playwright.sync_api")
    out, whole = tmp_path / "c.html", tmp_path / "r.html"
    r = run_cli(capsys, "compare", str(run_file), str(run_file), "--html", str(out))
    assert r.status == 0, r.err
    r = run_cli(
        capsys, "report", str(run_file), "--html", str(whole),
        "--scale", str(scale_file),
    )  # fmt: skip
    assert r.status == 0, r.err
    run = RunResult.load(run_file)
    with sync.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(chromium), args=["--no-sandbox"]
        )
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            requests: list[str] = []
            page.on("request", lambda req: requests.append(req.url))
            page.goto(out.resolve().as_uri())
            charts = page.locator("svg.chart")
            assert charts.count() == 2
            box = charts.first.bounding_box()
            assert box is not None and box["width"] > 300
            assert page.locator("line.trial").count() == 2 * sum(
                len(r.samples) for r in run.results
            )
            page.screenshot(path=str(tmp_path / "compare.png"), full_page=True)
            page.goto(whole.resolve().as_uri())
            curves = page.locator("h2:has-text('Concurrent clients') + div svg.chart")
            assert curves.count() == 2
            for i in range(2):
                box = curves.nth(i).bounding_box()
                assert box is not None and box["height"] > 100
            # every trial of every cell drawn in the run's charts
            trials = sum(len(r.samples) for r in run.results)
            assert page.locator("line.trial").count() == trials
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
            assert all(u.startswith("file:") for u in requests), requests
        finally:
            browser.close()
