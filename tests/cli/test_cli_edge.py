"""What the machine refuses, in words (issue 28): a name or a path longer
than the file system takes, a working directory that is gone, memory that
runs out, even while the command line imports; one line, exit 2, never
Python's own text with the edge's "(--debug shows where)"."""

from __future__ import annotations

import argparse
import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios import argtypes
from scenarios.cli import edge
from scenarios.errors import EXIT_BAD_INPUT
from tests.conftest import checked_in
from tests.support.cli_helpers import assert_bad_input, run_cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def run_file(tmp_path: Path) -> Path:
    return checked_in("run-3.json", tmp_path / "in", "r.json")


def test_a_name_longer_than_the_file_system_takes_is_refused() -> None:
    assert argtypes.path("x" * 255) == Path("x" * 255)
    with pytest.raises(argparse.ArgumentTypeError, match="300 bytes long"):
        argtypes.path("/tmp/" + "x" * 300)
    with pytest.raises(argparse.ArgumentTypeError, match="a name in it"):
        argtypes.path("é" * 128)  # 256 bytes in UTF-8
    deep = "/".join(["y" * 200] * 21)
    with pytest.raises(argparse.ArgumentTypeError, match="the path is 4,220 bytes"):
        argtypes.path(deep)


@pytest.mark.parametrize(
    "args",
    [
        ["history", "{run}", "--json", "{long}.json"],
        ["history", "{run}", "--html", "{path}.html"],
        ["report", "{run}", "--pyperf", "{long}.json"],
        ["history", "{long}.json"],
    ],
    ids=" ".join,
)
def test_output_and_input_paths_too_long_are_one_line(
    run_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    names = {
        "run": str(run_file),
        "long": str(tmp_path / ("x" * 300)),
        "path": str(tmp_path / "/".join(["y" * 200] * 21)),
    }
    r = run_cli(capsys, *(a.format(**names) for a in args))
    assert_bad_input(r, "bytes long, more than")
    assert "(--debug shows where)" not in r.err
    assert os.listdir(tmp_path) == ["in"]  # nothing made


def test_a_path_inside_a_uri_too_long_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A path no option type sees (file:// in census's URI) reaches the
    file system, which refuses it: the edge says why in words."""
    deep = tmp_path / "/".join(["y" * 200] * 21)
    r = run_cli(capsys, "census", f"file://{deep}/Data.fs")
    assert_bad_input(r, "the path is")
    assert "(--debug shows where)" not in r.err


def test_the_edge_says_what_the_file_system_refused() -> None:
    name = "/tmp/" + "x" * 300
    said = edge.describe(OSError(errno.ENAMETOOLONG, "File name too long", name))
    assert "a name in it is 300 bytes long" in said
    assert edge.status_of(OSError(errno.ENAMETOOLONG, "x")) == EXIT_BAD_INPUT
    assert edge.describe(MemoryError()).startswith("out of memory")
    assert edge.status_of(MemoryError()) == EXIT_BAD_INPUT
    # what the import system raises when it cannot list a package's directory
    enomem = OSError(errno.ENOMEM, "Cannot allocate memory", "/x/scenarios/sweep")
    assert edge.describe(enomem).startswith("out of memory")
    assert edge.status_of(enomem) == EXIT_BAD_INPUT


def test_out_of_memory_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert edge.report(MemoryError(), debug=False) == EXIT_BAD_INPUT
    line = capsys.readouterr().err
    assert line.startswith("vfab-bench: error: out of memory")
    assert "--debug" not in line and len(line.splitlines()) == 1


def test_a_working_directory_that_is_gone_is_said(
    run_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    r = run_cli(capsys, "report", str(run_file))
    assert_bad_input(r, "the working directory no longer exists")
    # and when it goes while a command runs (multiprocessing's spawn asks)
    lost = FileNotFoundError(errno.ENOENT, "No such file or directory")
    assert edge.describe(lost) == edge.WORKING_DIRECTORY_GONE


#: (what start-up raises, with ulimit -v set in the child, exit status)
START_ERRORS = {
    "MemoryError": ("MemoryError", False, EXIT_BAD_INPUT),
    "ENOMEM": ("OSError(12, 'Cannot allocate memory', '/x/cli')", False, 2),
    "unmappable": (
        "ImportError('libsqlite3.so.0: failed to map segment from shared object')",
        False,
        EXIT_BAD_INPUT,
    ),
    "SystemError-limited": ("SystemError('error return')", True, EXIT_BAD_INPUT),
    # no limit: not an out of memory, Python's own report
    "SystemError": ("SystemError('error return')", False, 1),
}


@pytest.mark.subprocess
@pytest.mark.parametrize("name", START_ERRORS)
def test_out_of_memory_while_importing_is_one_line(name: str) -> None:
    """What escapes an import of the command line when memory is short
    (outside main(): the console script imports it first): MemoryError,
    the ENOMEM the import system raises listing a package, a library the
    loader cannot map, and under a memory limit the SystemError of an
    allocation that failed silently: one line, exit 2."""
    raised, limited, status = START_ERRORS[name]
    code = (
        "import resource, sys; sys.argv[0] = 'vfab-bench'\n"
        + (
            "resource.setrlimit(resource.RLIMIT_AS, (2**34, 2**34))\n"
            if limited
            else ""
        )
        + "from scenarios.cli import early\n"
        "early.prepare_program()\n"
        f"raise {raised}\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == status, done
    if status == EXIT_BAD_INPUT:
        assert done.stderr.startswith("vfab-bench: error: out of memory while starting")
        assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    else:
        assert done.stderr.startswith("Traceback"), done.stderr


@pytest.mark.subprocess
def test_report_under_every_tight_memory_limit_works_or_is_one_line(
    run_file: Path,
) -> None:
    """`report` under ulimit -v from 20 MB to 40 MB by 2 MB, then where
    numpy imports and beyond: it runs short in a different place at each
    (here: the loader mapping a library, the import system listing a
    directory, an allocation CPython does not name; OpenBLAS between 90
    and 130 MB) and each is one line, exit 2, or the report."""
    import resource

    outcomes = set()
    for mb in [*range(20, 42, 2), 60, 90, 100, 110, 120, 130, 200]:
        limit = mb * 2**20

        def limited(limit: int = limit) -> None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        done = subprocess.run(
            [sys.executable, "-m", "scenarios.cli", "report", str(run_file)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            preexec_fn=limited,
        )
        said = done.stderr.splitlines()
        assert "Traceback" not in done.stderr, (mb, done.stderr[-2000:])
        if done.returncode == 0:
            outcomes.add("report")
            continue
        assert done.returncode == EXIT_BAD_INPUT and len(said) == 1, (mb, said)
        assert said[0].startswith("vfab-bench: error: out of memory"), (mb, said)
        outcomes.add("out of memory")
    assert outcomes == {"report", "out of memory"}
