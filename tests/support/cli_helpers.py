"""Running vfab-bench in this process, for tests that need no subprocess."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import logging
import signal
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from scenarios.cli import main


@dataclasses.dataclass
class Outcome:
    status: int
    out: str
    err: str


#: The signals whose handlers main() installs (scenarios.interrupts).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def process_hooks() -> tuple[Any, Any, list[Any], list[Any]]:
    """What vfab-bench's main() changes for the whole process
    (scenarios.interrupts.defer_interrupts): the SIGINT handler,
    sys.unraisablehook, the filters of logging.lastResort, and the SIGTERM
    and SIGHUP handlers."""
    last_resort = logging.lastResort
    filters = list(last_resort.filters) if last_resort is not None else []
    others = [signal.getsignal(s) for s in STOP_SIGNALS[1:]]
    return signal.getsignal(signal.SIGINT), sys.unraisablehook, filters, others


@contextlib.contextmanager
def process_hooks_restored() -> Iterator[None]:
    """Put back on exit the process hooks found on entry, whatever ran in
    between (tests/conftest.py does this around every test)."""
    on_sigint, unraisablehook, filters, others = process_hooks()
    last_resort = logging.lastResort
    handlers = list(logging.getLogger().handlers)
    try:
        yield
    finally:
        for signum, handler in zip(STOP_SIGNALS, (on_sigint, *others), strict=True):
            signal.signal(signum, handler)
        logging.getLogger().handlers[:] = handlers
        sys.unraisablehook = unraisablehook
        if last_resort is not None:
            last_resort.filters[:] = filters
        logging.lastResort = last_resort


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


def run_quietly(*args: str) -> None:
    """vfab-bench *args* in this process, its output discarded, exit status 0
    asserted: for fixtures, which run outside the per-test restoring fixture,
    so the process hooks main() installs are put back here."""
    with process_hooks_restored(), contextlib.redirect_stdout(io.StringIO()):
        with contextlib.redirect_stderr(io.StringIO()) as err:
            status = main(list(args))
    assert status == 0, err.getvalue()
