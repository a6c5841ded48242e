"""Outputs that would destroy an input, a database, or hang (issue 21, item
2): refused before the work, --force or not, in one line, exit 2, every
file pointed at byte-identical and its directory listing unchanged; a FIFO
as an input of report or compare is refused rather than waited on.

Real subprocesses (a FIFO nobody opens would hang an in-process test), each
with a timeout that a hang would hit."""

from __future__ import annotations

import os
import socket
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.test_failure_paths import assert_one_line, tree_digest, vfab_bench
from tests.conftest import checked_in


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A run result and a sweep result, written by the commands themselves
    (tests/data/run-3.json, sweep.json), copied."""
    directory = tmp_path / "results"
    checked_in("run-3.json", directory, "run.json")
    checked_in("sweep.json", directory)
    return directory


@pytest.fixture
def data_set(populated_sets: Callable[[str], Path]) -> Path:
    return populated_sets("file")


def listing(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


def refused(
    args: list[str], fragment: str, *watched: Path, cwd: Path | None = None
) -> None:
    """`vfab-bench ARGS` refuses in one line with *fragment*, within its
    timeout, and leaves every directory in *watched* as it was."""
    before = [(tree_digest(d), listing(d)) for d in watched]
    proc = vfab_bench(*args, cwd=cwd, timeout=60)
    assert_one_line(proc, fragment)
    assert [(tree_digest(d), listing(d)) for d in watched] == before


# Each case: (name, make(tmp, results, data_set) -> (args, fragment)).
Case = Callable[[Path, Path, Path], tuple[list[str], str]]


def _copy(src: Path, dst: Path) -> Path:
    dst.write_bytes(src.read_bytes())
    return dst


def compare_json_is_its_old(t: Path, r: Path, d: Path) -> tuple[list[str], str]:
    old = _copy(r / "run.json", t / "old.json")
    new = _copy(r / "run.json", t / "new.json")
    return ["compare", str(old), str(new), "--json", str(old), "--force"], "inputs"


def compare_markdown_is_its_new(t: Path, r: Path, d: Path) -> tuple[list[str], str]:
    old = _copy(r / "run.json", t / "old.json")
    new = _copy(r / "run.json", t / "new.md")
    return ["compare", str(old), str(new), "--markdown", str(new), "--force"], "inputs"


def compare_json_through_a_symlink(t: Path, r: Path, d: Path) -> tuple[list[str], str]:
    old = _copy(r / "run.json", t / "old.json")
    (t / "link.json").symlink_to(old)
    return (
        ["compare", str(old), "--baseline", "mapping", "--json", str(t / "link.json")]
        + ["--force"],
        "inputs",
    )


def report_html_is_its_input(t: Path, r: Path, d: Path) -> tuple[list[str], str]:
    page = _copy(r / "run.json", t / "run.html")
    return ["report", str(page), "--html", str(page), "--force"], "inputs"


def report_html_is_its_sweep(t: Path, r: Path, d: Path) -> tuple[list[str], str]:
    run = _copy(r / "run.json", t / "run.json")
    sweep = _copy(r / "sweep.json", t / "sweep.html")
    return (
        ["report", str(run), "--sweep", str(sweep), "--html", str(sweep), "--force"],
        "inputs",
    )


def census_json_is_its_data_fs(t: Path, r: Path, d: Path) -> tuple[list[str], str]:
    fs = d / "Data.fs"
    return ["census", f"file://{fs}", "--json", str(fs), "--force"], "FileStorage"


def census_json_inside_its_path(t: Path, r: Path, d: Path) -> tuple[list[str], str]:
    return ["census", "--path", str(d), "--json", str(d / "census.json")], "inside"


def census_json_is_its_index(t: Path, r: Path, d: Path) -> tuple[list[str], str]:
    fs = d / "Data.fs"
    return (
        ["census", f"file://{fs}", "--json", str(d / "Data.fs.index"), "--force"],
        "FileStorage",
    )


def json_over_another_filestorage(t: Path, r: Path, d: Path) -> tuple[list[str], str]:
    other = _copy(d / "Data.fs", t / "other.json")
    return (
        ["compare", str(r / "run.json"), "--baseline", "mapping", "--json", str(other)]
        + ["--force"],
        "a FileStorage",
    )


def json_over_a_sqlite_database(t: Path, r: Path, d: Path) -> tuple[list[str], str]:
    db = t / "app.json"
    with sqlite3.connect(db) as c:
        c.execute("create table t (x)")
    return (
        ["compare", str(r / "run.json"), "--baseline", "mapping", "--json", str(db)]
        + ["--force"],
        "SQLite",
    )


def output_is_a_fifo(t: Path, r: Path, d: Path) -> tuple[list[str], str]:
    os.mkfifo(t / "out.json")
    return (
        ["compare", str(r / "run.json"), "--baseline", "mapping"]
        + ["--json", str(t / "out.json"), "--force"],
        "FIFO",
    )


def html_is_a_fifo(t: Path, r: Path, d: Path) -> tuple[list[str], str]:
    os.mkfifo(t / "page.html")
    return ["report", str(r / "run.json"), "--html", str(t / "page.html")], "FIFO"


def output_is_a_socket(t: Path, r: Path, d: Path) -> tuple[list[str], str]:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(t / "out.md"))
    s.close()
    return (
        ["compare", str(r / "run.json"), "--baseline", "mapping"]
        + ["--markdown", str(t / "out.md"), "--force"],
        "socket",
    )


def output_is_a_directory(t: Path, r: Path, d: Path) -> tuple[list[str], str]:
    (t / "out.json").mkdir()
    return (
        ["compare", str(r / "run.json"), "--baseline", "mapping"]
        + ["--json", str(t / "out.json"), "--force"],
        "directory",
    )


def report_of_a_fifo(t: Path, r: Path, d: Path) -> tuple[list[str], str]:
    os.mkfifo(t / "run.json")
    return ["report", str(t / "run.json")], "FIFO"


def report_sweep_of_a_fifo(t: Path, r: Path, d: Path) -> tuple[list[str], str]:
    os.mkfifo(t / "sweep.json")
    return (
        ["report", str(r / "run.json"), "--sweep", str(t / "sweep.json")]
        + ["--html", str(t / "p.html")],
        "FIFO",
    )


def compare_of_a_fifo(t: Path, r: Path, d: Path) -> tuple[list[str], str]:
    os.mkfifo(t / "new.json")
    return ["compare", str(r / "run.json"), str(t / "new.json")], "FIFO"


def report_of_a_directory(t: Path, r: Path, d: Path) -> tuple[list[str], str]:
    (t / "run.json").mkdir()
    return ["report", str(t / "run.json")], "directory"


def run_json_is_its_config(t: Path, r: Path, d: Path) -> tuple[list[str], str]:
    config = t / "zodb.json"
    config.write_text(
        f"<zodb mine>\n<filestorage>\npath {d / 'Data.fs'}\n</filestorage>\n</zodb>\n"
    )
    return (
        ["run", "--storage-config", str(config), "--preset", "quick", "-q"]
        + ["--json", str(config), "--force"],
        "inputs",
    )


CASES: list[Case] = [
    compare_json_is_its_old,
    compare_markdown_is_its_new,
    compare_json_through_a_symlink,
    report_html_is_its_input,
    report_html_is_its_sweep,
    census_json_is_its_data_fs,
    census_json_inside_its_path,
    census_json_is_its_index,
    json_over_another_filestorage,
    json_over_a_sqlite_database,
    output_is_a_fifo,
    html_is_a_fifo,
    output_is_a_socket,
    output_is_a_directory,
    report_of_a_fifo,
    report_sweep_of_a_fifo,
    compare_of_a_fifo,
    report_of_a_directory,
    run_json_is_its_config,
]


@pytest.mark.subprocess
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_an_output_or_input_that_must_not_be_used_is_refused(
    case: Case, results: Path, data_set: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    args, fragment = case(work, results, data_set)
    refused(args, fragment, work, results, data_set)


@pytest.mark.subprocess
def test_force_still_replaces_an_old_output(results: Path, tmp_path: Path) -> None:
    """What --force is for: an output of an earlier run, not an input."""
    out = tmp_path / "cells.json"
    out.write_text("{}\n")
    proc = vfab_bench(
        *("compare", str(results / "run.json"), "--baseline", "mapping"),
        *("--json", str(out), "--force"),
    )
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() != "{}\n"


@pytest.mark.subprocess
def test_stdout_and_dev_null_stay_outputs(results: Path) -> None:
    """A character device, and this process's own stdout when it is a pipe
    (/dev/stdout), are written directly, as before."""
    for target in ("/dev/null", "/dev/stdout"):
        proc = vfab_bench(
            *("compare", str(results / "run.json"), "--baseline", "mapping"),
            *("--markdown", target),
            timeout=60,
        )
        assert proc.returncode == 0, (target, proc.stderr)
    assert "mapping" in proc.stdout


@pytest.mark.subprocess
@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600)])
def test_outputs_get_the_users_umask(
    results: Path, tmp_path: Path, umask: int, mode: int
) -> None:
    """An output is written through a temporary file and a rename, and gets
    the mode a new file gets under the user's umask (not mkstemp's 0600):
    a published report is readable by others under umask 022."""
    import subprocess
    import sys

    from tests.cli.test_failure_paths import ROOT

    html, cells = tmp_path / "page.html", tmp_path / "cells.json"
    for args in (
        ["report", str(results / "run.json"), "--html", str(html)],
        ["compare", str(results / "run.json"), "--baseline", "mapping"]
        + ["--json", str(cells)],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "scenarios.cli", *args],
            capture_output=True,
            text=True,
            timeout=300,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            preexec_fn=lambda: os.umask(umask),
        )
        assert proc.returncode == 0, proc.stderr
    for path in (html, cells):
        assert path.stat().st_mode & 0o777 == mode, oct(path.stat().st_mode)
