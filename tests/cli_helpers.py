"""Running vfab-bench in this process, for tests that need no subprocess."""

from __future__ import annotations

import dataclasses

import pytest

from scenarios.cli import main


@dataclasses.dataclass
class Outcome:
    status: int
    out: str
    err: str


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> Outcome:
    """vfab-bench *args* in-process: exit status, stdout, stderr."""
    capsys.readouterr()
    try:
        status = main(list(args))
    except SystemExit as e:  # argparse errors
        status = int(e.code or 0)
    captured = capsys.readouterr()
    return Outcome(status, captured.out, captured.err)


def assert_bad_input(outcome: Outcome, fragment: str) -> None:
    """One line on stderr containing *fragment*, exit status 2, no stdout."""
    assert outcome.status == 2, outcome
    lines = outcome.err.strip().splitlines()
    assert len(lines) == 1, outcome.err
    assert fragment in lines[0], outcome.err
    assert outcome.out == ""
