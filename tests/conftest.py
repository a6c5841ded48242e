"""Shared fixtures.  Names avoid 'session' and 'fastsession', which locust's
pytest plugin owns once locust is installed."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest


def runzeo_pids() -> set[int]:
    """Pids of runzeo processes on this machine (from /proc)."""
    pids = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if b"ZEO.runzeo" in cmd:
            pids.add(int(entry))
    return pids


@pytest.fixture
def no_leaked_servers() -> Iterator[None]:
    """Fail a test that leaves a runzeo it started running (and kill it)."""
    before = runzeo_pids()
    yield
    leaked = runzeo_pids() - before
    for pid in leaked:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert not leaked, f"runzeo processes left running: {sorted(leaked)}"
