"""A release against the last one, on release directories kept as files
(tests/data/releases, pyperf's habit of checked-in result files): the
verdict of `compare OLD_DIR NEW_DIR`, `history` over three releases, the
page in Chromium, and every bad --against refused before any work.

The three releases (tests/data/releases/README.md says how they were
made): a and b of the same code, c with the configured column "slow"
doing about 5% more work in each store() (tests/support/slowstore)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from scenarios.release import model, page, verdict
from scenarios.release import trend as release_history
from scenarios.results.files import ResultsError
from tests.conftest import offline_page
from tests.support.cli_helpers import assert_bad_input, run_cli

RELEASES = Path(__file__).resolve().parents[1] / "data" / "releases"
A, B, C = (RELEASES / name for name in ("a", "b", "c"))
COMMIT_ROWS = ("commit users/groups", "commit processes", "commit sequences")


def test_two_releases_of_the_same_code_change_no_count_cell(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "v.json"
    r = run_cli(capsys, "compare", str(A), str(B), "--json", str(out))
    assert r.status == 0, r.out + r.err
    assert r.out.startswith(f"Verdict against {A} (")
    assert "NO REGRESSION" in r.out.splitlines()[0]
    data = json.loads(out.read_text())
    assert data["regression"] is False and data["exit_status"] == 0
    cells = [
        c
        for part in ("counts", "micro_counts")
        for c in data[part]["cells"]
        if c["what"] != "recv"  # receives depend on timing: never compared
    ]
    assert len(cells) > 100
    assert all(c["verdict"].startswith("no change") for c in cells), [
        c for c in cells if not c["verdict"].startswith("no change")
    ]


def _keys(data: Any, where: str = "") -> set[str]:
    """Every key path of *data* (a list's items under "[]")."""
    if isinstance(data, dict):
        return {f"{where}.{k}" for k in data} | {
            p for k, v in data.items() for p in _keys(v, f"{where}.{k}")
        }
    if isinstance(data, list):
        return {p for item in data for p in _keys(item, f"{where}[]")}
    return set()


def test_the_verdict_json_a_release_kept_reads_with_the_same_keys(
    tmp_path: Path,
) -> None:
    """release --against keeps its verdict in release.json: the JSON derived
    from the comparison dataclasses still writes every key that file holds
    (written by the hand-written to_json before them), the counts', the
    wall time's, the curve's and the million run's included (the two
    releases as if run idle: busy, the timed parts are not compared)."""
    kept = json.loads((B / "release.json").read_text())["against"]["verdict"]
    a, b = (_at_load(r, tmp_path / r.name, 0.2) for r in (A, B))
    now = verdict.compare(model.load(a), model.load(b)).to_json()
    assert _keys(kept) - _keys(now) == set()
    for part in ("counts", "wall", "curve"):
        assert now[part]["kind"] == kept[part]["kind"]
    assert len(now["million"]) == len(kept["million"]) == 1


def test_a_storage_slowed_by_five_percent_is_the_first_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    r = run_cli(capsys, "compare", str(A), str(C))
    assert r.status == 1, r.out + r.err
    head, first = entries(r.out)[:2]
    assert "REGRESSION" in head and "NO REGRESSION" not in head
    assert first.startswith("  counts: 3 of ") and "grew above 2%" in first
    # Grouped by storage, the storage first, each cell with its change,
    # the largest change first.
    assert "grew above 2%: slow: 3 cells +" in first, first
    named = first.split("(", 1)[1]
    changes = [float(x) for x in re.findall(r" \+(\d+\.\d)%", named)]
    assert len(changes) == 3 and changes == sorted(changes, reverse=True), first
    for row in COMMIT_ROWS:
        assert f"{row} +" in named, first
    assert "query processes" not in first
    # The cells that did not move: their own line, next to it.
    second = entries(r.out)[2]
    assert second.startswith("  counts: ") and "no change" in second, r.out


def entries(out: str) -> list[str]:
    """The verdict's lines with their wrapped continuations joined (the
    text is wrapped at 100 columns under a hanging indent)."""
    lines: list[str] = []
    for line in out.splitlines():
        if line.startswith("      ") and lines:
            lines[-1] += " " + line.strip()
        else:
            lines.append(line)
    return lines


def test_the_verdict_reads_in_100_columns(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "compare", str(A), str(C))
    verdict_part = r.out.split("\n\n", 1)[0].splitlines()
    assert all(len(line) <= 100 for line in verdict_part), verdict_part
    last = entries("\n".join(verdict_part))[-1]
    assert last.startswith("  gate: a count cell grown above 2%"), last


def test_the_verdict_model(tmp_path: Path) -> None:
    old, new = model.load(A), model.load(C)
    v = verdict.compare(old, new)
    grew = v.count_regressions()
    assert sorted(c.row for c in grew) == sorted(COMMIT_ROWS)
    assert {c.column for c in grew} == {"slow"}
    assert all(0.02 < (c.change or 0) < 0.12 for c in grew)
    assert v.regression and v.exit_status == 1
    # A threshold above the change: no regression.
    assert not verdict.compare(old, new, fail_above=0.20).regression
    # The same machine, both busy: the timed parts not compared at all.
    assert v.same_machine and v.wall is None and v.curve is None
    assert v.million and v.consistency.newly_wrong() == []
    # Idle, they are.
    idle = [_at_load(r, tmp_path / r.name, 0.2) for r in (A, C)]
    v = verdict.compare(*map(model.load, idle))
    assert v.wall is not None and v.curve is not None


def test_what_the_verdict_calls_not_comparable_nothing_calls_significant(
    tmp_path: Path,
) -> None:
    """b and c, both run busy: c's p99 at 2 clients halved, a change the
    curve's own test calls significant; the verdict says not comparable,
    so its details, its JSON and its page hold no such cell (issue 45)."""
    v = verdict.compare(model.load(B), model.load(C))
    assert "not comparable" in {x.part: x.text for x in v.lines()}["concurrency"]
    said = [v.details(), v.text(), json.dumps(v.to_json()), page.page(v.new, v)]
    for text in said:
        assert not re.search(r"(?<!not )significant", text.replace("\n", " ")), [
            line for line in text.splitlines() if "significant" in line
        ]
    # Idle, the same change is called significant.
    idle = [_at_load(r, tmp_path / r.name, 0.2) for r in (B, C)]
    assert "lower, significant" in verdict.compare(*map(model.load, idle)).details()


def test_trend_marks_no_step_the_verdict_calls_not_comparable(
    tmp_path: Path,
) -> None:
    """The same change across a busy step is no step in trend; idle, it is."""
    busy = release_history.build([model.load(B), model.load(C)])
    assert all(m == [release_history.SAME] * 2 for *_, m in busy.curve), busy.curve
    assert any("no step marked at 2: not comparable" in n for n in busy.notes)
    idle = [_at_load(r, tmp_path / r.name, 0.2) for r in (B, C)]
    marked = release_history.build([model.load(r) for r in idle]).curve
    assert ("zeo, 2 clients: p99", release_history.DOWN) in [
        (n, m[1]) for n, _, m in marked
    ]


def test_a_new_wrong_is_the_first_line(tmp_path: Path) -> None:
    """A storage right in the last release and WRONG now gates (exit 1)
    and comes first, before any count line."""
    new = tmp_path / "wrong"
    shutil.copytree(C, new)
    scale = json.loads((new / "scale.json").read_text())
    one_violation(scale, "lost write")
    (new / "scale.json").write_text(json.dumps(scale))
    v = verdict.compare(model.load(B), model.load(new))
    first = v.lines()[0]
    assert first.part == "consistency" and first.text.startswith("NEW WRONG: zeo")
    assert "1 violation (lost write)" in first.text
    assert v.exit_status == 1


def one_violation(scale: dict[str, Any], kind: str) -> None:
    """The last point of *scale* (a scale.json) found one violation of *kind*."""
    point = scale["points"][-1]
    point["invariants"] = {
        **point["invariants"],
        "ok": False,
        "summary": f"consistency: 1 violation ({kind})",
        "counts": {kind: 1},
    }


@pytest.mark.parametrize(("version", "gated"), [("4.3.0", False), ("4.3.1", True)])
def test_a_wrong_a_known_upstream_bug_explains_is_said_not_gated(
    tmp_path: Path, version: str, gated: bool
) -> None:
    """RelStorage 4.3.0's SQLite adapter shows its bug now and then, whatever
    the code under test does: a release that met it says so, and its
    verdict does not fail on it; another version of RelStorage is gated."""
    new = tmp_path / "sqlite"
    shutil.copytree(B, new)
    scale = json.loads((new / "scale.json").read_text())
    scale["metadata"]["versions"]["RelStorage"] = version
    for point in scale["points"]:
        point["storage"] = "relstorage-sqlite"
    old_scale = json.loads((A / "scale.json").read_text())
    for point in old_scale["points"]:
        point["storage"] = "relstorage-sqlite"
    one_violation(scale, "phantom write")
    (new / "scale.json").write_text(json.dumps(scale))
    old = tmp_path / "old"
    shutil.copytree(A, old)
    (old / "scale.json").write_text(json.dumps(old_scale))
    v = verdict.compare(model.load(old), model.load(new))
    text = "\n".join(line.text for line in v.lines())
    if gated:
        assert v.exit_status == 1 and "NEW WRONG: relstorage-sqlite" in text
    else:
        assert v.exit_status == 0, text
        assert "NEW WRONG" not in text
        assert "now WRONG, a known upstream bug" in text
        assert "RelStorage 4.3.0" in text and "docs/relstorage-sqlite.md" in text


def test_history_over_three_releases(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "h.json"
    page_path = tmp_path / "h.html"
    r = run_cli(
        capsys, "history", str(C), str(A), str(B), "--json", str(out),
        "--html", str(page_path),
    )  # fmt: skip
    assert r.status == 0, r.err
    # In date order (same ZODB version), whatever order they were named in.
    lines = [x for x in r.out.splitlines() if x.startswith("  ")]
    assert [x.split()[-1] for x in lines[:3]] == [str(A), str(B), str(C)]
    # Every part's trend.
    assert "The 2000 table (table.json of each release)" in r.out
    assert "Concurrency curve: ops/s and p99 per point" in r.out
    assert "Million run: per object built" in r.out
    assert "Micro-benchmarks: median per round" in r.out
    assert "Consistency" in r.out and "right" in r.out
    # The counts moved once, from b to c, on the slow column's commits.
    moved = [x for x in r.out.splitlines() if x.startswith("slow commit")]
    assert len(moved) == 3 and all(x.rstrip().endswith("▲") for x in moved), moved
    data = json.loads(out.read_text())
    assert [x["directory"] for x in data["releases"]] == [str(A), str(B), str(C)]
    assert {x["cell"] for x in data["counts"]["moved"]} == {
        f"slow {row}" for row in COMMIT_ROWS
    }
    assert "<h2>The 2000 table</h2>" in page_path.read_text()


def test_history_of_a_release_directory_leaves_other_files_out(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A directory of run files that also holds pytest-benchmark's JSON (as a
    release directory does): that file is left out with a note, never exit 2."""
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in ("a", "b"):
        shutil.copy(RELEASES / name / "table.json", runs / f"{name}.json")
    shutil.copy(A / "micro.json", runs / "micro.json")
    shutil.copy(A / "scale.json", runs / "scale.json")
    r = run_cli(capsys, "history", str(runs))
    assert r.status == 0, r.err
    said = " ".join(r.out.split())  # a paragraph, wrapped
    assert "micro.json (not a vfab-bench result)" in said
    assert "scale.json (a scale file)" in said


# -- bad --against: one line, exit 2, nothing written ---------------------------


def _release_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, against: Path, fragment: str,
    *more: str,
) -> None:  # fmt: skip
    out = tmp_path / "new-release"
    r = run_cli(
        capsys, "release", "--quick", "--storage", "mapping", "--out", str(out),
        "--against", str(against), *more,
    )  # fmt: skip
    assert_bad_input(r, fragment)
    assert not out.exists()


def test_bad_against_directories_are_refused_before_any_work(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    _release_refused(capsys, tmp_path, empty, "is not a release directory")
    _release_refused(capsys, tmp_path, tmp_path / "none", "does not exist")

    newer = tmp_path / "newer"
    shutil.copytree(A, newer)
    summary = json.loads((newer / "release.json").read_text())
    (newer / "release.json").write_text(json.dumps({**summary, "schema_version": 9}))
    _release_refused(capsys, tmp_path, newer, "written by a newer vfab-loadtest")

    damaged = tmp_path / "damaged"
    shutil.copytree(A, damaged)
    (damaged / "table.json").write_text('{"schema_version": 2, "results": [')
    _release_refused(capsys, tmp_path, damaged, "is damaged: ")
    (damaged / "table.json").unlink()
    _release_refused(capsys, tmp_path, damaged, "is damaged: table.json is missing")

    # Another storage set (a holds mapping, slow and zeo).
    _release_refused(capsys, tmp_path, A, "a release of another storage set")

    # The same storages, but a full release against a --quick one.
    out = tmp_path / "full"
    config = tmp_path / "slow.conf"
    config.write_text(
        "%import tests.support.slowstore\n<zodb slow>\n  <slowfilestorage>\n"
        f"    path {tmp_path / 'Data.fs'}\n  </slowfilestorage>\n</zodb>\n"
    )
    r = run_cli(
        capsys, "release", "--storage", "mapping,zeo", "--storage-config",
        str(config), "--out", str(out), "--against", str(A),
    )  # fmt: skip
    assert_bad_input(r, "--quick against a full release")
    assert not out.exists()


def test_compare_refuses_a_directory_that_is_not_a_release(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_bad_input(
        run_cli(capsys, "compare", str(A), str(empty)), "is not a release directory"
    )
    assert_bad_input(
        run_cli(capsys, "compare", str(A), str(A / "table.json")),
        "is a release directory and",
    )
    assert_bad_input(
        run_cli(capsys, "compare", str(A), str(B), "--cpu"),
        "--cpu does not apply to release directories",
    )


def test_load_names_what_is_wrong(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "release.json").write_text('{"kind": "scale", "schema_version": 4}')
    with pytest.raises(ResultsError, match="is of kind 'scale'"):
        model.load(other)
    old = tmp_path / "v0"
    shutil.copytree(A, old)
    summary = json.loads((old / "release.json").read_text())
    del summary["schema_version"]  # a release of the previous format
    summary["parts"] = [p for p in summary["parts"] if p["name"] != "counts"]
    (old / "release.json").write_text(json.dumps(summary))
    v = verdict.compare(model.load(old), model.load(B))
    assert v.counts is None and not v.regression
    assert "no counts of the 2000 rows in" in v.lines()[0].text


# -- the page ---------------------------------------------------------------------


@pytest.mark.browser
def test_the_release_page_opens_with_the_verdict_and_fits_1280_px(
    playwright: Any, tmp_path: Path
) -> None:
    new = model.load(C)
    v = verdict.compare(model.load(A), new)
    path = tmp_path / "index.html"
    path.write_text(page.page(new, v))
    with offline_page(playwright, width=1280) as (tab, requests):
        tab.goto(path.resolve().as_uri())
        first = tab.locator("main > section, main > h2").first
        assert first.get_attribute("id") == "verdict"
        heading = tab.locator("#verdict h2").inner_text()
        assert "REGRESSION" in heading and "NO REGRESSION" not in heading
        first_line = tab.locator("#verdict li").first.inner_text()
        assert first_line.startswith("counts: 3 of "), first_line
        assert "slow: 3 cells" in first_line, first_line
        for row in COMMIT_ROWS:
            assert f"{row} +" in first_line
        width = tab.evaluate("document.documentElement.scrollWidth")
        assert width <= 1280, width  # no horizontal scroll
        # No element of the page overflows its box (SVG's inner elements
        # have no box of their own: the chart is checked as one).
        over = tab.evaluate(
            """() => [...document.querySelectorAll('body *:not(svg *)')]
              .filter(e => e.scrollWidth > e.clientWidth
                           && getComputedStyle(e).display !== 'inline')
              .map(e => [e.tagName, e.scrollWidth, e.clientWidth,
                         e.textContent.slice(0, 50)])"""
        )
        assert over == [], over
        # No empty section: each heading has something under it.
        empty = tab.evaluate(
            """() => [...document.querySelectorAll('main h2, main h3')]
              .filter(h => { let e = h.nextElementSibling;
                 while (e && !/^H[1-3]$/.test(e.tagName)) {
                   if (e.textContent.trim() && e.textContent.trim() !== '{}')
                     return false;
                   if (e.querySelector('svg')) return false;
                   e = e.nextElementSibling; }
                 return !(e && e.tagName > h.tagName); })
              .map(h => h.innerText)"""
        )
        assert empty == [], empty
        assert tab.locator("ul:not(:has(li))").count() == 0
        text = tab.locator("main").inner_text()
        assert "±?" not in text and "1 trial" in text
        # The 2000 table whole, in the page (no frame); every chart SVG.
        assert tab.locator("iframe").count() == 0
        box = tab.locator("#table ~ div.scroll").first
        assert box.locator("table").is_visible()
        wide, shown = box.evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert wide <= shown, (wide, shown)  # whole, not clipped
        assert tab.locator("svg.chart").count() >= 3
        assert requests == [path.resolve().as_uri()], requests
        shot = tmp_path / "release.png"
        tab.screenshot(path=str(shot), full_page=True)
        if os.environ.get("VFAB_SCREENSHOTS"):
            target = Path(os.environ["VFAB_SCREENSHOTS"]) / "release.png"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(shot, target)


def test_the_history_model_orders_by_version_then_date() -> None:
    h = release_history.build([model.load(p) for p in (B, C, A)])
    assert [r.path for r in h.releases] == [A, B, C]
    assert h.count_cells > 100 and len(h.counts) == 3
    states = dict(h.consistency)
    assert states["zeo"] == ["right", "right", "right"]


def test_releases_of_two_machines_compare_their_counts_only(tmp_path: Path) -> None:
    other = tmp_path / "other-machine"
    shutil.copytree(C, other)
    summary = json.loads((other / "release.json").read_text())
    summary["metadata"]["host"]["hostname"] = "elsewhere"
    (other / "release.json").write_text(json.dumps(summary))
    v = verdict.compare(model.load(A), model.load(other))
    assert not v.same_machine and v.wall is None and v.curve is None
    assert v.regression  # the counts still gate
    words = {x.part: x.text for x in v.lines()}
    assert "wall figures not comparable" in words["machines"]
    assert "not comparable" in words["wall time"]


def _at_load(source: Path, dest: Path, load: float) -> Path:
    """A copy of release *source* that recorded *load* (1-minute load
    average) at its start and end, in release.json and every part."""
    shutil.copytree(source, dest)
    for path in dest.glob("*.json"):
        data = json.loads(path.read_text())
        meta = data.get("metadata") if isinstance(data, dict) else None
        if isinstance(meta, dict) and isinstance(meta.get("environment"), dict):
            meta["environment"]["load_average_start"] = [load, load, load]
            meta["environment"]["load_average_end"] = [load, load, load]
            path.write_text(json.dumps(data))
    return dest


def test_wall_time_of_a_busy_release_is_not_compared(tmp_path: Path) -> None:
    """Two releases of the same code, one run at load 10 on 2 CPUs: the
    timed parts say why they cannot be compared and call nothing faster or
    slower; the counts, which do not depend on load, still gate."""
    idle_a = _at_load(A, tmp_path / "idle-a", 0.2)
    idle_b = _at_load(B, tmp_path / "idle-b", 0.3)
    busy_b = _at_load(B, tmp_path / "busy-b", 10.3)
    quiet = verdict.compare(model.load(idle_a), model.load(idle_b))
    assert quiet.timing_not_comparable() is None
    assert "not comparable" not in {x.part: x.text for x in quiet.lines()}["wall time"]
    v = verdict.compare(model.load(idle_a), model.load(busy_b))
    why = v.timing_not_comparable()
    assert why is not None and "ran at load 0.2" in why and "at load 10.3" in why
    words = {x.part: x.text for x in v.lines()}
    for part in ("wall time", "concurrency"):
        assert "not comparable" in words[part], words[part]
        assert "significant" not in words[part] and "better" not in words[part]
    assert "faster" not in words["wall time"].split("no cell")[0]
    assert not v.regression and v.exit_status == 0


def _tree(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes() for p in path.rglob("*") if p.is_file()
    }


def _never_written(
    capsys: pytest.CaptureFixture[str], prev: Path, out: Path, fragment: str
) -> None:
    """release --out OUT --against PREV --force is refused in one line and
    PREV is left byte for byte."""
    before = _tree(prev)
    r = run_cli(
        capsys, "release", "--quick", "--storage", "mapping,zeo", "--out", str(out),
        "--against", str(prev), "--force",
    )  # fmt: skip
    assert_bad_input(r, fragment)
    assert _tree(prev) == before


def test_a_release_never_writes_into_the_one_it_is_compared_with(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Through another name for the same directory (a link), or one inside
    the other: refused before any work, the last release unchanged."""
    prev = tmp_path / "prev"
    shutil.copytree(A, prev)
    alias = tmp_path / "alias"
    alias.symlink_to(prev)
    _never_written(capsys, prev, alias, "a release never writes into the one")
    _never_written(capsys, prev, prev / "sub", "a release never writes into the one")
    outer = tmp_path / "outer"
    inner = outer / "prev"
    shutil.copytree(A, inner)
    _never_written(capsys, inner, outer, "--force would replace it")


@pytest.mark.subprocess
def test_a_bind_mount_of_the_last_release_is_seen_through(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """mount --bind PREV ALIAS: the same device and inode, refused."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mount --bind needs root and mount(8)")
    prev, alias = tmp_path / "prev", tmp_path / "alias"
    shutil.copytree(A, prev)
    alias.mkdir()
    done = subprocess.run(
        ["mount", "--bind", str(prev), str(alias)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"mount --bind failed here: {done.stderr.strip()}")
    try:
        _never_written(capsys, prev, alias, "a release never writes into the one")
    finally:
        subprocess.run(["umount", str(alias)], check=True)


def _edited(source: Path, dest: Path, name: str, edit: Any) -> Path:
    """A copy of release *source* whose JSON file *name* *edit* changed
    (edit(data) mutates it in place)."""
    shutil.copytree(source, dest)
    data = json.loads((dest / name).read_text())
    edit(data)
    (dest / name).write_text(json.dumps(data))
    return dest


def _drop_part(name: str) -> Any:
    def edit(summary: dict[str, Any]) -> None:
        summary["parts"] = [p for p in summary["parts"] if p["name"] != name]

    return edit


def test_a_verdict_that_could_not_read_what_the_gate_needs_is_not_a_pass(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """No counts in the new release (valgrind missing, or the part left
    out), or no parts at all: NOT FULLY CHECKED, exit 3, saying what is
    missing; never NO REGRESSION."""
    cases = {
        "no-counts": _drop_part("counts"),
        "no-parts": lambda s: s.update(parts=[]),
        "no-curve": _drop_part("scale"),
    }
    for case, edit in cases.items():
        new = _edited(B, tmp_path / case, "release.json", edit)
        r = run_cli(capsys, "compare", str(A), str(new))
        head = r.out.splitlines()[0] if r.out else ""
        assert r.status == 3, (case, r.out, r.err)
        assert "NOT FULLY CHECKED" in head and "NO REGRESSION" not in r.out, case
        v = verdict.compare(model.load(A), model.load(new))
        assert v.unchecked() and v.exit_status == 3, case
    v = verdict.compare(model.load(A), model.load(tmp_path / "no-curve"))
    assert any("zeo's consistency not checked" in u for u in v.unchecked())
    # Both whole: the gate saw everything.
    assert verdict.compare(model.load(A), model.load(B)).unchecked() == []


def test_a_release_that_contradicts_itself_is_damaged(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """What release reads from a directory is checked, not trusted: each
    lie below is one line, exit 2, naming the directory."""

    def files_as_text(s: dict[str, Any]) -> None:
        s["parts"][1]["files"] = "counts.json"

    def storages_not_names(s: dict[str, Any]) -> None:
        s["metadata"]["storages"] = ["mapping", 7, "slow"]

    def cell_twice(c: dict[str, Any]) -> None:
        copy = json.loads(json.dumps(c["results"][0]))
        for sample in copy["samples"]:
            sample["instructions"] = int(sample["instructions"] * 1.1)
        c["results"].append(copy)

    def served_lie(c: dict[str, Any]) -> None:
        c["metadata"]["counts"]["served"].append("mapping")

    def right_with_violations(s: dict[str, Any]) -> None:
        inv = s["points"][0]["invariants"]
        inv["counts"]["lost write"] = 3

    cases = [
        ("release.json", files_as_text, "lists its files as something other"),
        ("release.json", storages_not_names, "metadata.storages is not a list"),
        ("counts.json", cell_twice, "is listed twice"),
        ("counts.json", served_lie, "says mapping talks to a server"),
        ("scale.json", right_with_violations, "says right while listing violations"),
    ]
    for i, (name, edit, fragment) in enumerate(cases):
        new = _edited(B, tmp_path / f"case{i}", name, edit)
        r = run_cli(capsys, "compare", str(A), str(new))
        assert_bad_input(r, fragment)
        assert str(new) in r.err


def test_an_incomplete_point_that_found_violations_is_wrong(tmp_path: Path) -> None:
    """A point a lost host cut short still says what it found: WRONG (the
    gate), never "right on every point"."""

    def cut_and_wrong(s: dict[str, Any]) -> None:
        point = s["points"][0]
        point["incomplete"] = "a host was lost mid-point"
        point["invariants"].update(ok=False, summary="consistency: 1 violation")
        point["invariants"]["counts"]["lost write"] = 1

    new = _edited(B, tmp_path / "cut", "scale.json", cut_and_wrong)
    v = verdict.compare(model.load(A), model.load(new))
    assert v.consistency.new["zeo"][0] == "WRONG"
    assert v.regression and v.exit_status == 1


def test_a_plain_release_names_a_known_bug_on_every_line(tmp_path: Path) -> None:
    """Without --against, the curve's lines that show RelStorage 4.3.0's
    known SQLite bug name it, as verify and release --against do."""
    from scenarios.release import parts
    from scenarios.scale.model import ScaleRun

    scale = json.loads((B / "scale.json").read_text())
    scale["metadata"]["versions"]["RelStorage"] = "4.3.0"
    for point in scale["points"]:
        point["storage"] = "relstorage-sqlite"
    one_violation(scale, "phantom write")
    path = tmp_path / "scale.json"
    path.write_text(json.dumps(scale))
    part = parts.PartResult("scale", "curve", data=ScaleRun.load(path))
    lines = parts.verdicts(part)
    wrong = [line for line in lines if "violation (" in line or "1 violation" in line]
    assert wrong and all(
        "WRONG, a known upstream bug: RelStorage 4.3.0" in line for line in wrong
    ), lines
    assert not any("bug: known upstream bug" in line for line in lines), lines


def test_the_release_text_keeps_within_100_columns(tmp_path: Path) -> None:
    """A part's line with a long detail (the curve's known bug) wraps, no
    word broken (issue 36's limit)."""
    from scenarios.release import parts
    from scenarios.release.make import Outcome, ReleaseFile

    detail = (
        "WRONG, a known upstream bug, not this release's: relstorage-sqlite: "
        "4 clients: consistency: 2 violations (1 phantom write, 1 inconsistent "
        "read); RelStorage 4.3.0: its SQLite adapter commits the rows of a "
        "transaction that failed at vote (docs/relstorage-sqlite.md)"
    )
    part = parts.PartResult("scale", "Concurrency curve", status="ok", detail=detail)
    part.files = ["scale.json", "scale.txt", "scale.svg"]
    own = ["zeo, 1 client: consistency: 0 violations"]
    file = ReleaseFile({}, [], [part], own, against=None, exit_status=0)
    out = Outcome(file, None, tmp_path).text()
    # The page's path is kept whole on its line, to be copied, however long
    # TMPDIR is (with spaces or not): the prose around it wraps.
    path_line = f"release: {tmp_path / 'index.html'}"
    assert path_line in out.splitlines(), out
    prose = [line for line in out.splitlines() if line != path_line]
    assert max(map(len, prose)) <= 100, out
    assert " ".join(out.split()).count("docs/relstorage-sqlite.md") == 1
