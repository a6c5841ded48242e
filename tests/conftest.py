"""Shared fixtures.  Names avoid 'session' and 'fastsession', which locust's
pytest plugin owns once locust is installed."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator

import pytest

#: Every runzeo this test run starts inherits this variable (ZEOServer copies
#: os.environ; test_cli passes it to vfab-bench), so runzeo_pids() sees only
#: this run's servers: other test runs on the same machine are neither
#: blamed for a leak nor killed.
RUN_TOKEN_VAR = "VFAB_TEST_RUN"
RUN_TOKEN = os.environ.setdefault(RUN_TOKEN_VAR, uuid.uuid4().hex)


def runzeo_pids() -> set[int]:
    """Pids of the runzeo processes this test run started (from /proc)."""
    mark = f"{RUN_TOKEN_VAR}={RUN_TOKEN}".encode()
    pids = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
            if b"ZEO.runzeo" not in cmd:
                continue
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if mark in env:
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
