"""What reaches a terminal or a text file whatever a result holds (issue 28):
escape sequences from a file shown, never acted on; an ASCII stdout and a
file name that is not UTF-8 cost a character, never the command; a closed
stdout (`| head`) costs the text, never the files."""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from scenarios import printable
from scenarios.errors import EXIT_PIPE_CLOSED
from scenarios.outputs import write_text
from scenarios.results.table import Table
from tests.conftest import checked_in
from tests.support.cli_helpers import run_cli

ESCAPES = "map\x1b]0;pwned\x07\x1b[2J\x1b[31mping"


def renamed(source: Path, name: str, into: Path) -> Path:
    """A copy of run file *source* whose storage 'mapping' is called *name*."""
    data = json.loads(source.read_text())
    for row in data["results"] + data["trials"]:
        if row["storage"] == "mapping":
            row["storage"] = name
    path = into / "renamed.json"
    path.write_text(json.dumps(data))
    return path


@pytest.fixture
def run_file(tmp_path: Path) -> Path:
    return checked_in("run-3.json", tmp_path / "in", "r.json")


def test_control_characters_are_shown_escaped() -> None:
    text = "a\x1b[2Jb\rc\x07\x9b\u202edone\n\ttabbed"
    shown = "a\\x1b[2Jb\\x0dc\\x07\\x9b\\u202edone\n\ttabbed"
    assert printable.shown(text) == shown
    assert printable.shown("275 µs ± 3%") == "275 µs ± 3%"  # printable: kept


def test_the_table_renderer_escapes_before_it_aligns() -> None:
    table = Table("t\x1b[2J", ["task", ESCAPES, "b"], [["x", "1", "2"]])
    text = table.text()
    assert "\x1b" not in text and "\x07" not in text
    header, row = text.splitlines()[1:]
    assert len(header) == len(row)  # the escaped name's column is as wide
    assert "\x1b" not in table.markdown()


@pytest.mark.parametrize(
    "command",
    [
        ["report", "{file}"],
        ["report", "{file}", "--all"],
        ["report", "{file}", "--markdown"],
        ["compare", "{file}", "{file}"],
        ["history", "{file}", "{copy}"],
    ],
    ids=" ".join,
)
def test_escape_sequences_in_a_file_are_never_printed_raw(
    run_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: list[str],
) -> None:
    path = renamed(run_file, ESCAPES, tmp_path)
    copy = tmp_path / "copy.json"
    copy.write_bytes(path.read_bytes())
    args = [a.format(file=path, copy=copy) for a in command]
    r = run_cli(capsys, *args)
    assert r.status == 0, r.err
    assert "\x1b" not in r.out + r.err and "\x07" not in r.out + r.err
    assert "map\\x1b]0;pwned\\x07" in r.out


def test_an_ascii_stream_replaces_what_it_cannot_encode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")  # strict, as LC_ALL=C's
    monkeypatch.setattr("sys.stdout", stream)
    printable.prepare_streams()
    print("275 µs ± 3% ▲ b-\udcff.json \u4e2d", file=stream, flush=True)
    assert raw.getvalue() == b"275 us +/- 3% ^ b-\\xff.json \\u4e2d\n"


def test_a_text_file_keeps_a_name_that_is_not_utf8(tmp_path: Path) -> None:
    """A lone surrogate (a file name's byte that is not UTF-8, PEP 383)
    is written as that byte's escape; UTF-8 would refuse it."""
    page = tmp_path / "page.html"
    write_text(page, "<td>b-\udcff.json</td> µs", force=False)
    assert page.read_text(encoding="utf-8") == "<td>b-\\xff.json</td> µs"


def test_report_html_of_a_storage_with_a_lone_surrogate(
    run_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = renamed(run_file, "map\udc80ping", tmp_path)
    page = tmp_path / "page.html"
    r = run_cli(capsys, "report", str(path), "--html", str(page))
    assert r.status == 0, r.err
    assert "map\\x80ping" in page.read_text(encoding="utf-8")


@pytest.fixture
def closed_pipe() -> Iterator[io.TextIOWrapper]:
    """A pipe whose reading end is closed (`| true`), buffered as stdout is
    on a pipe; a test makes it sys.stdout (capture sets its own before the
    test runs)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    stream = open(write_end, "w", encoding="utf-8")  # noqa: SIM115
    yield stream
    with contextlib.suppress(BrokenPipeError):  # the test failed: not silenced
        stream.close()


def test_stdout_closed_is_told_from_an_open_one(
    closed_pipe: io.TextIOWrapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdout", closed_pipe)
    assert printable.stdout_closed()
    read_end, write_end = os.pipe()
    with open(read_end, "rb"), open(write_end, "w") as open_one:
        monkeypatch.setattr("sys.stdout", open_one)
        assert not printable.stdout_closed()


def test_a_closed_stdout_costs_the_text_never_the_files(
    closed_pipe: io.TextIOWrapper,
    run_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sys.stdout", closed_pipe)
    out = tmp_path / "history.json"
    other = checked_in("run-3.json", tmp_path / "in", "s.json")
    status = _main("history", str(run_file), str(other), "--json", str(out))
    assert status == 0
    assert json.loads(out.read_text())["runs"]
    assert capsys.readouterr().err == ""  # quietly
    print("more", file=closed_pipe, flush=True)  # /dev/null now: no error


def test_a_closed_stdout_before_the_results_ends_quietly(
    closed_pipe: io.TextIOWrapper,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A command that prints without emit() (storages) meets the closed
    pipe and ends as a program SIGPIPE ends would, without a line."""
    monkeypatch.setattr("sys.stdout", closed_pipe)
    assert _main("storages") == EXIT_PIPE_CLOSED
    assert capsys.readouterr().err == ""


def _main(*args: str) -> int:
    from scenarios.cli import main

    return main(list(args))
