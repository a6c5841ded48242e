"""Shared fixtures.  Names avoid 'session' and 'fastsession', which locust's
pytest plugin owns once locust is installed.  The tiers (a plain run is the
quick one; --all runs every tier) are tests/support/tiers.py's."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import shutil
import signal
import ssl
import threading
import urllib.request
import uuid
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

import storages
from tests.benchmarks import options as benchmark_options
from tests.support.cli_helpers import process_hooks_restored, run_quietly

pytest_plugins = ("tests.support.tiers", "pytester")
# A plugin module imported here first must be marked for pytest's rewriting.
pytest.register_assert_rewrite("tests.support.tiers")
from tests.support import tiers  # noqa: E402

# Every process this test session starts inherits this token, so the leak
# check counts (and kills) only our own servers, never those of another test
# session or a user's run on the same machine.
TOKEN_VAR = "VFAB_TEST_SESSION"
#: The pytest-xdist worker (gw0, gw1, ...) whose token TOKEN_VAR holds.
TOKEN_WORKER_VAR = "VFAB_TEST_SESSION_WORKER"


def session_token(environ: MutableMapping[str, str]) -> str:
    """The token of the process whose environment is *environ*, set in it:
    the one inherited from the test run that started the process (a pytest
    inside a test counts as that test's), except in a pytest-xdist worker,
    which inherits its controller's and takes one of its own, so that two
    workers never take each other's servers (or network namespaces,
    tests/support/netns.py) for theirs."""
    worker = environ.get("PYTEST_XDIST_WORKER")
    token = environ.get(TOKEN_VAR) or uuid.uuid4().hex
    if worker and environ.get(TOKEN_WORKER_VAR) != worker:
        # Derived, not drawn: the controller's token is already random.
        token = hashlib.sha256(f"{token}/{worker}".encode()).hexdigest()[:32]
        environ[TOKEN_WORKER_VAR] = worker
    environ[TOKEN_VAR] = token
    return token


session_token(os.environ)
# What a worker starts is no pytest-xdist worker: pytest-benchmark reads
# PYTEST_XDIST_WORKER as xdist on and refuses --benchmark-only in any pytest
# a test starts (a release's micro part, tox's benchmark run, the harness's
# own tests), and a child's copy of it was removed in each of them by hand
# until one was missed.  The worker's name stays in TOKEN_WORKER_VAR;
# pytest-xdist itself reads its worker's input, not these.
for _name in [k for k in os.environ if k.startswith("PYTEST_XDIST_")]:
    del os.environ[_name]
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


#: Result files the suite wrote, checked in for the tests of the views that
#: read them (tests/data/README.md says which command wrote each).
DATA = Path(__file__).resolve().parent / "data"


def checked_in(name: str, into: Path, as_name: str | None = None) -> Path:
    """A copy in *into* of the checked-in result file *name*: a test may
    change or overwrite its copy, never the file itself."""
    into.mkdir(parents=True, exist_ok=True)
    copy = into / (as_name or name)
    shutil.copyfile(DATA / name, copy)
    return copy


def storage_params(params: Iterable[Any]) -> list[Any]:
    """*params* (storage names, or pytest.param()s whose first value is
    one) with those of storages that start a server (runzeo, PostgreSQL,
    MariaDB) marked `server`."""
    out = []
    for param in params:
        if isinstance(param, str):
            param = pytest.param(param, id=param)
        factory = storages.REGISTRY.get(param.values[0])
        if factory is not None and factory.starts_server:
            marks = [*param.marks, pytest.mark.server]
            param = pytest.param(*param.values, id=param.id, marks=marks)
        out.append(param)
    return out


#: Debian's chromium, which Playwright drives (it never downloads a browser
#: here), and the flags it runs headless with in a container.
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
]


@pytest.fixture
@tiers.starts("browser")
def playwright() -> Iterator[Any]:
    """Playwright's sync API, to launch CHROMIUM; skip, saying why, without
    chromium or the playwright package (the 'test' extra)."""
    if not CHROMIUM.exists():
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("the playwright package is not installed (the 'test' extra)")
    with sync_playwright() as p:
        yield p


@pytest.fixture
def empty_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty directory made the working directory: a refused command
    must leave it empty."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@contextlib.contextmanager
def offline_page(
    playwright: Any, width: int = 1200, height: int = 900
) -> Iterator[tuple[Any, list[str]]]:
    """A tab of headless Chromium and the URLs it requests (a page that
    loads anything but itself is not offline); the browser closed after."""
    browser = playwright.chromium.launch(
        executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
    )
    try:
        page = browser.new_page(viewport={"width": width, "height": height})
        requests: list[str] = []
        page.on("request", lambda req: requests.append(req.url))
        yield page, requests
    finally:
        browser.close()


#: The index pip installs from unless PIP_INDEX_URL names another.
PACKAGE_INDEX = "https://pypi.org/simple/"


def index_unreachable(timeout: float = 10.0) -> str | None:
    """Why the package index does not answer now (None: it does): one
    request for pip's own page, bounded by *timeout* seconds in all (name
    resolution included, which urllib's timeout does not bound)."""
    url = os.environ.get("PIP_INDEX_URL") or PACKAGE_INDEX
    where = urlsplit(url).hostname or url  # no credentials in a skip reason
    page = url.rstrip("/") + "/pip/"
    answer: list[str | None] = []

    def probe() -> None:
        context = ssl.create_default_context(cafile=os.environ.get("PIP_CERT"))
        try:
            with urllib.request.urlopen(page, timeout=timeout, context=context) as r:
                r.read(1)
        except Exception as e:  # any failure is the reason to skip
            answer.append(f"{where}: {getattr(e, 'reason', e)}")
        else:
            answer.append(None)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout)
    return answer[0] if answer else f"{where} did not answer within {timeout:.0f} s"


@pytest.fixture(scope="session")
def package_index() -> None:
    """Skip, saying why, unless the package index answers (tests marked
    `pypi` install from it)."""
    reason = index_unreachable()
    if reason is not None:
        pytest.skip(f"the package index is unreachable: {reason}")


@pytest.fixture(scope="session")
def populated_sets(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """Storage name -> the small data set `vfab-bench populate --storage NAME`
    wrote, in this process, once per session: tests read and copy it, never
    change it."""
    made: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in made:
            path = tmp_path_factory.mktemp(name.replace("+", "-")) / "data"
            run_quietly("populate", "--storage", name, "--path", str(path))
            made[name] = path
        return made[name]

    return get


@pytest.fixture
def frozen_heap() -> Iterator[None]:
    """For a test that runs trials in this process itself: what runner.run
    does after its warmups, so that the full collection before each phase
    walks the trial's objects, not the whole test session's (measured: 131
    ms a collection, 48 of the 58 s of test_runner's answers test, late in
    a full session)."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


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


#: Tests that one pytest-xdist worker runs, all of them (node id prefixes):
#: their module fixture, outcomes, runs every case the session selected at
#: once (two at a time), so on both workers each would run every case.
ONE_WORKER = (
    "tests/cli/test_routes.py::test_route[",
    "tests/cli/test_failure_cases.py::test_handled[",
)


def one_worker_scope(nodeid: str) -> str:
    """The unit of work *nodeid* goes to a worker in: its ONE_WORKER prefix,
    else the test alone."""
    return next((prefix for prefix in ONE_WORKER if nodeid.startswith(prefix)), nodeid)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """-n's distribution ("load": each test to whichever worker is free),
    with the tests of one ONE_WORKER prefix sent together, the largest of
    those units first.  (xdist_group and --dist loadgroup cannot: under
    pytest 9 pytest-xdist no longer renames the node ids they rely on.)"""
    if config.getvalue("dist") != "load":
        return None  # another --dist, asked for by name
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return one_worker_scope(nodeid)

    return Scheduling(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # Before pytest-benchmark's own (trylast) pytest_configure reads options.
    benchmark_options.enable_benchmarks_when_asked(config)
    benchmark_options.run_the_storages_named(config)
