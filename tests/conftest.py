"""Shared fixtures.  Names avoid 'session' and 'fastsession', which locust's
pytest plugin owns once locust is installed."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator

import pytest

import storages
from tests.benchmarks import options as benchmark_options
from tests.cli_helpers import process_hooks_restored

# Every process this test session starts inherits this token, so the leak
# check counts (and kills) only our own servers, never those of another test
# session or a user's run on the same machine.
TOKEN_VAR = "VFAB_TEST_SESSION"
os.environ.setdefault(TOKEN_VAR, uuid.uuid4().hex)
_TOKEN = f"{TOKEN_VAR}={os.environ[TOKEN_VAR]}".encode()


def runzeo_pids() -> set[int]:
    """Pids of the runzeo processes this test session started (from /proc)."""
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
                environ = f.read().split(b"\0")
        except OSError:
            continue
        if _TOKEN in environ:
            pids.add(int(entry))
    return pids


def factory_or_skip(
    name: str, options: storages.StorageOptions | None = None
) -> storages.StorageFactory:
    """The factory of storage *name*, or skip the test saying why it cannot
    run here (a missing server binary or driver)."""
    factory = storages.get(name, options)
    reason = factory.unavailable()
    if reason:
        pytest.skip(f"{name} unavailable: {reason}")
    return factory


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


@pytest.fixture(autouse=True)
def _restore_process_hooks() -> Iterator[None]:
    """A test that runs vfab-bench in this process (scenarios.cli.main)
    installs its SIGINT handler, sys.unraisablehook and a logging.lastResort
    filter; put back what the test found, so that no later test runs with
    them."""
    with process_hooks_restored():
        yield


def pytest_addoption(parser: pytest.Parser) -> None:
    # Here rather than in tests/benchmarks/conftest.py: pytest only takes
    # options from initial conftests, and that one is not initial for a bare
    # `pytest` or `pytest --storage zeo`.
    benchmark_options.add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # Before pytest-benchmark's own (trylast) pytest_configure reads options.
    benchmark_options.enable_benchmarks_when_asked(config)
