"""vfab-bench release: one command, one directory, one page.

The end-to-end test runs the real command in its --quick form (every part,
each cut to seconds) on mapping and zeo; the plan and the exit status are
checked on their own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scenarios.bench.config import ROWS
from scenarios.cli.release import FILES, exit_status
from scenarios.errors import EXIT_FAILED, EXIT_INVARIANTS, EXIT_OK, EXIT_VIOLATIONS
from scenarios.release import plan as release_plan
from scenarios.release.parts import PartResult
from scenarios.results import power
from scenarios.results.significance import DEFAULT_STATISTIC
from tests.test_failure_paths import assert_one_line, tree_digest, vfab_bench


@pytest.mark.subprocess
def test_quick_release_writes_every_part_into_one_directory(
    tmp_path: Path, no_leaked_servers: None
) -> None:
    out = tmp_path / "release"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")  # --force never touches it
    proc = vfab_bench(
        "release", "--quick", "--storage", "mapping,zeo", "--out", str(out),
        "--force", timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    # What was cut, said before the work.
    assert "release: 2000 table: the 2000 rows" in proc.stderr
    assert "million: medium" in proc.stderr and "--quick: not a million" in proc.stderr
    assert "zeo, 2 client(s): consistency: 0 violations" in proc.stdout
    assert proc.stdout.rstrip().endswith(f"release: {out / 'index.html'}")
    assert (out / "notes.txt").read_text() == "mine\n"

    summary = json.loads((out / "release.json").read_text())
    names = [p["name"] for p in summary["parts"]]
    assert names == ["table", "micro", "scale", "million"]
    assert all(p["status"] == "ok" for p in summary["parts"]), summary["parts"]
    assert summary["exit_status"] == 0 and summary["metadata"]["quick"] is True
    for name in ("table.json", "micro.json", "scale.json", "million.json"):
        assert json.loads((out / name).read_text()), name
    table = json.loads((out / "table.json").read_text())
    assert table["metadata"]["config"]["rows"] == "2000"
    assert table["metadata"]["config"]["storages"] == ["mapping", "zeo"]
    million = json.loads((out / "million.json").read_text())
    assert million["metadata"]["config"]["size"] == "medium"
    micro = json.loads((out / "micro.json").read_text())
    ran = {
        (b["name"].split("[")[0], b["params"]["storage"]) for b in micro["benchmarks"]
    }
    assert ("test_new_oid", "zeo") in ran and ("test_hot_read", "mapping") in ran
    scale = json.loads((out / "scale.json").read_text())
    assert [p["clients"] for p in scale["points"]] == [1, 2]

    page = (out / "index.html").read_text()
    for part in ("The 2000 table", "Micro-benchmarks", "Concurrency curve", "million"):
        assert part in page, part
    assert '<iframe src="table.html"' in page and "<svg" in page
    assert "zeo, 1 client(s): consistency: 0 violations" in page
    assert "Shortened to fit" in page and "--quick: not a million" in page
    # Nothing beyond the release's own files (and the user's).
    assert {p.name for p in out.iterdir()} <= {*FILES, "notes.txt"}


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
    lines = plan.shortened()
    assert len(lines) == 4
    assert lines[0].startswith("2000 table:") and "run's default" in lines[0]
    assert "pytest-benchmark's default" in lines[1]
    assert "scale's default" in lines[2]
    if plan.million is not None:  # a machine with the memory for it
        objects = release_plan.expected_objects(plan.million.scale)
        assert abs(objects - release_plan.MILLION) < 1000
        assert plan.million.storages == ("file",)
        assert plan.million.batch_size > 0
        assert f"--scale {plan.million.scale:,}" in lines[3]
    else:
        assert lines[3].startswith("million: not run")


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
    assert "can be shared" in plan.shortened()[2]


@pytest.mark.parametrize(
    ("statuses", "code"),
    [
        (["ok", "ok", "ok", "ok"], EXIT_OK),
        (["ok", "not run", "ok", "not run"], EXIT_OK),
        (["ok", "ok", "violations", "ok"], EXIT_VIOLATIONS),
        (["failed", "ok", "not checked", "ok"], EXIT_FAILED),
        (["ok", "ok", "not checked", "ok"], EXIT_INVARIANTS),
    ],
)
def test_exit_status_keeps_the_consistency_verdict(
    statuses: list[str], code: int
) -> None:
    parts = [PartResult(f"p{i}", "t", s) for i, s in enumerate(statuses)]
    assert exit_status(parts) == code
