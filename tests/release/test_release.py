"""vfab-bench release: one command, one directory, one page.

The end-to-end test runs the real command in its --quick form (every part,
each cut to seconds) on mapping and zeo; the plan and the exit status are
checked on their own."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from scenarios.bench.config import ROWS
from scenarios.errors import EXIT_FAILED, EXIT_INVARIANTS, EXIT_OK, EXIT_VIOLATIONS
from scenarios.release import plan as release_plan
from scenarios.release.make import FILES, exit_status
from scenarios.release.parts import PartResult
from scenarios.results import power
from scenarios.results.significance import DEFAULT_STATISTIC
from tests.cli.test_failure_paths import assert_one_line, tree_digest, vfab_bench
from tests.support import slowstore


@pytest.mark.subprocess
@pytest.mark.server
@pytest.mark.valgrind
def test_quick_release_writes_every_part_into_one_directory(
    tmp_path: Path, no_leaked_servers: None
) -> None:
    needs_count_tools()
    out = tmp_path / "release"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")  # --force never touches it
    proc = vfab_bench(
        "release", "--quick", "--storage", "mapping,zeo", "--out", str(out),
        "--force", timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    # What was cut, said before the work.
    assert "release: 2000 table: the 2000 rows" in proc.stderr
    assert "release: counts (the gate): the 2000 rows of every storage" in proc.stderr
    assert "million: medium" in proc.stderr and "--quick: not a million" in proc.stderr
    # A line per part as it starts and ends, with the release's ETA, in a
    # log (no terminal) as on one; the micro counts beside the 2000 rows'.
    for i, name in enumerate(("table", "counts", "micro", "scale", "million"), 1):
        assert f"release: {name} ({i} of 5) starts: about " in proc.stderr
        assert re.search(rf"release: {name} ended in \d+:\d\d", proc.stderr)
    assert proc.stderr.count("the release's ETA") >= 8
    assert re.search(r"release: million ended in .*; the release took", proc.stderr)
    assert "the micro-benchmarks counted in" in proc.stderr
    # The verdict first (no last release named), then a line per part.
    assert proc.stdout.startswith("Verdict: no last release named")
    assert "zeo, 2 clients: consistency: 0 violations" in proc.stdout
    assert proc.stdout.rstrip().endswith(f"release: {out / 'index.html'}")
    assert "(s)" not in proc.stdout
    assert (out / "notes.txt").read_text() == "mine\n"

    summary = json.loads((out / "release.json").read_text())
    assert summary["schema_version"] == 1 and summary["kind"] == "release"
    names = [p["name"] for p in summary["parts"]]
    assert names == ["table", "counts", "micro", "scale", "million"]
    assert all(p["status"] == "ok" for p in summary["parts"]), summary["parts"]
    assert summary["exit_status"] == 0 and summary["metadata"]["quick"] is True
    env = summary["metadata"]["environment"]
    assert env["load_average_start"] and env["speed_probes_s"]
    for name in ("table.json", "micro.json", "scale.json", "million.json"):
        assert json.loads((out / name).read_text()), name
    table = json.loads((out / "table.json").read_text())
    assert table["metadata"]["config"]["rows"] == "2000"
    assert table["metadata"]["config"]["storages"] == ["mapping", "zeo"]
    counts = json.loads((out / "counts.json").read_text())
    assert counts["kind"] == "counts"
    assert {r["storage"] for r in counts["results"]} == {"mapping", "zeo"}
    assert len({r["phase"] for r in counts["results"]}) == len(ROWS["2000"])
    micro_counts = json.loads((out / "counts-micro.json").read_text())
    counted = {b["name"] for b in micro_counts["benchmarks"]}
    assert counted == {"test_new_oid[mapping]", "test_hot_read[mapping]"}
    million = json.loads((out / "million.json").read_text())
    assert million["metadata"]["config"]["size"] == "medium"
    micro = json.loads((out / "micro.json").read_text())
    ran = {
        (b["name"].split("[")[0], b["params"]["storage"]) for b in micro["benchmarks"]
    }
    assert ("test_new_oid", "zeo") in ran and ("test_hot_read", "mapping") in ran
    scale = json.loads((out / "scale.json").read_text())
    assert [p["clients"] for p in scale["points"]] == [1, 2]
    assert all(len(p["windows"]) >= 6 for p in scale["points"])
    # scale.svg: drawn as every chart of the pages, a file of its own.
    svg = (out / "scale.svg").read_text()
    assert 'xmlns="http://www.w3.org/2000/svg"' in svg and 'class="chart"' in svg

    page = (out / "index.html").read_text()
    assert page.index('id="verdict"') < page.index("<h2>Shortened to fit</h2>")
    for part in ("The 2000 table", "Counts", "Micro-benchmarks", "Concurrency"):
        assert part in page, part
    assert "<iframe" not in page and page.count("<svg") >= 3
    assert "zeo, 1 client: consistency: 0 violations" in page
    assert "Shortened to fit" in page and "--quick: not a million" in page
    # Nothing beyond the release's own files (and the user's).
    assert {p.name for p in out.iterdir()} <= {*FILES, "notes.txt"}


def needs_count_tools() -> None:
    import shutil

    for tool in ("valgrind", "vgdb", "strace"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (apt-get install valgrind strace)")


def _release(tmp_path: Path, name: str, extra: int, *more: str) -> Path:
    """A --quick release of mapping and the configured column "slow" (a
    FileStorage, fresh, whose store() spins *extra* iterations)."""
    db = tmp_path / f"db-{name}"
    db.mkdir()
    config = tmp_path / f"{name}.conf"
    config.write_text(
        slowstore.CONFIG.format(name="slow", path=db / "Data.fs", extra=extra)
    )
    out = tmp_path / f"release-{name}"
    proc = vfab_bench(
        "release", "--quick", "--storage", "mapping", "--storage-config",
        str(config), "--out", str(out), *more, timeout=900,
        VFAB_AB_CACHE=str(tmp_path / "ab-cache"),
    )  # fmt: skip
    (tmp_path / f"{name}.stdout").write_text(proc.stdout)
    (tmp_path / f"{name}.stderr").write_text(proc.stderr)
    (tmp_path / f"{name}.status").write_text(str(proc.returncode))
    assert "Traceback" not in proc.stderr, proc.stderr
    return out


@pytest.mark.subprocess
@pytest.mark.valgrind
def test_release_against_the_last_gates_on_counts(tmp_path: Path) -> None:
    """Two releases of the same code, the second beside a CPU hog: exit 0,
    no change in any count cell.  (A storage slowed by about 5% in store():
    exit 1, its commit rows named, first on the page, is
    tests/release/test_verdict.py's, on releases this command made:
    tests/data/releases.)"""
    import subprocess
    import sys

    needs_count_tools()
    first = _release(tmp_path, "a", 0)
    assert (tmp_path / "a.status").read_text() == "0"
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        same = _release(tmp_path, "b", 0, "--against", str(first))
    finally:
        hog.kill()
        hog.wait()
    out = (tmp_path / "b.stdout").read_text()
    assert (tmp_path / "b.status").read_text() == "0", out
    assert "NO REGRESSION" in out.splitlines()[0]
    # The wall time measured together with the first release's environment
    # (rebuilt from its versions), or said in one line why not.
    err = (tmp_path / "b.stderr").read_text()
    unpaired = [line for line in err.splitlines() if "compared unpaired" in line]
    assert "cells measured together with" in out or len(unpaired) == 1, (out, err)
    data = json.loads((same / "release.json").read_text())["against"]["verdict"]
    cells = [
        c
        for part in ("counts", "micro_counts")
        for c in data[part]["cells"]
        if c["what"] != "recv"  # receives depend on timing: never compared
    ]
    assert cells and all(c["verdict"].startswith("no change") for c in cells), [
        (c["column"], c["row"], c["verdict"])
        for c in cells
        if not c["verdict"].startswith("no change")
    ]


@pytest.mark.subprocess
def test_an_out_directory_that_holds_files_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "release"
    out.mkdir()
    (out / "table.json").write_text("{}\n")
    before = tree_digest(tmp_path)
    proc = vfab_bench("release", "--quick", "--storage", "mapping", "--out", str(out))
    assert_one_line(proc, "is not empty")
    assert tree_digest(tmp_path) == before

    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    proc = vfab_bench("release", "--out", str(not_a_dir))
    assert_one_line(proc, "is not a directory")

    proc = vfab_bench("release", "--out", str(tmp_path / "no" / "such"))
    assert_one_line(proc, "does not exist")


@pytest.mark.subprocess
def test_a_database_under_a_release_name_is_refused_even_with_force(
    tmp_path: Path,
) -> None:
    out = tmp_path / "release"
    out.mkdir()
    (out / "million.json").write_bytes(b"FS21" + b"\0" * 64)  # a FileStorage
    before = tree_digest(tmp_path)
    proc = vfab_bench(
        "release", "--quick", "--storage", "mapping", "--out", str(out), "--force"
    )
    assert_one_line(proc, "is a FileStorage")
    assert tree_digest(tmp_path) == before


@pytest.mark.subprocess
def test_bad_storages_are_one_line(tmp_path: Path) -> None:
    out = str(tmp_path / "r")
    assert_one_line(
        vfab_bench("release", "--storage", "zoe", "--out", out), "unknown storage"
    )
    assert_one_line(
        vfab_bench("release", "--storage", "file,file", "--out", out), "twice"
    )
    assert not (tmp_path / "r").exists()


def test_the_plan_says_what_it_cut() -> None:
    plan = release_plan.plan(("mapping", "file", "zeo"), quick=False)
    assert plan.table.rows == "2000" and plan.table.budget_s == 0
    assert plan.scale is not None and plan.scale.storages == ("zeo",)
    assert max(plan.scale.clients) <= 4 and plan.scale.check
    # Enough sub-windows to decide a change of one point's measure.
    tests = 2 * len(plan.scale.clients)
    assert power.decidable(plan.scale.windows, plan.scale.windows, "median", tests)
    assert plan.counts is not None
    assert plan.counts.table.storages == plan.storages
    assert plan.counts.table.rows == "2000" and plan.counts.table.repeat == 1
    assert plan.counts.micro_storages == ("file",)
    lines = plan.shortened()
    assert len(lines) == 5
    assert lines[0].startswith("2000 table:") and "run's default" in lines[0]
    assert lines[1].startswith("counts (the gate): the 2000 rows of every storage")
    assert "pytest-benchmark's default" in lines[2]
    assert "scale's default" in lines[3]
    assert "(s)" not in " ".join(lines)
    if plan.million is not None:  # a machine with the memory for it
        objects = release_plan.expected_objects(plan.million.scale)
        assert abs(objects - release_plan.MILLION) < 1000
        assert plan.million.storages == ("file",)
        assert plan.million.batch_size > 0
        assert f"--scale {plan.million.scale:,}" in lines[4]
    else:
        assert lines[4].startswith("million: not run")


def test_the_count_children_get_the_release_configuration(tmp_path: Path) -> None:
    """The count children read the very RunConfig the release planned, its
    storage options included (no command line rebuilt and parsed again)."""
    from scenarios.counts.child import read_job
    from scenarios.counts.runner import write_job
    from storages.base import DBOptions

    plan = release_plan.plan(("mapping", "zeo"), quick=True)
    assert plan.counts is not None
    config = dataclasses.replace(
        plan.counts.table,
        options=plan.counts.table.options.replace(DBOptions(cache_size=5000)),
    )
    write_job(config, tmp_path / "job.pickle", progress=False)
    job, progress = read_job(tmp_path / "job.pickle")
    assert job == config and progress is False
    assert job.storages == ("mapping", "zeo") and job.rows == "2000"
    assert (job.repeat, job.warmups) == (1, 0)
    assert job.storage_options.cache_size == 5000


@pytest.mark.parametrize("count", [1, 3, 6])
def test_two_releases_tables_can_be_compared(count: int) -> None:
    """The 2000 table has enough rounds for compare to call a change of one
    cell among all of two releases' cells significant (3 rounds made every
    cell inconclusive)."""
    names = ("mapping", "file", "zeo", "memory", "bdb", "zeo+bdb")[:count]
    plan = release_plan.plan(names, quick=False)
    cells = len(ROWS["2000"]) * len(names)
    n = plan.table.repeat
    assert power.decidable(n, n, DEFAULT_STATISTIC, cells), (n, cells)
    twelve = release_plan.table_rounds(12)
    assert power.decidable(twelve, twelve, DEFAULT_STATISTIC, 12 * cells // count)


def test_no_shared_storage_means_no_concurrency_part() -> None:
    plan = release_plan.plan(("mapping", "file"), quick=True)
    assert plan.scale is None
    assert "can be shared" in plan.shortened()[3]


@pytest.mark.parametrize(
    ("statuses", "code"),
    [
        (["ok", "ok", "ok", "ok", "ok"], EXIT_OK),
        (["ok", "not run", "ok", "ok", "not run"], EXIT_OK),
        (["ok", "ok", "ok", "violations", "ok"], EXIT_VIOLATIONS),
        (["failed", "ok", "ok", "not checked", "ok"], EXIT_FAILED),
        (["ok", "ok", "ok", "not checked", "ok"], EXIT_INVARIANTS),
    ],
)
def test_exit_status_keeps_the_consistency_verdict(
    statuses: list[str], code: int
) -> None:
    parts = [PartResult(f"p{i}", "t", s) for i, s in enumerate(statuses)]
    assert exit_status(parts) == code
