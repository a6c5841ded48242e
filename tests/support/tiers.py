"""The test tiers: a plain `pytest` runs the quick tier, in-process tests
only; markers named after what a test starts select the rest, and --all
(or any -m expression) runs them (ZODB's test levels: a plain run is
level 1, --all runs every level).

The markers are checked, not trusted, in every run: while a test sets up
and runs, child processes and listening sockets are watched (an audit
hook, and wrappers around the two calls that start a process or listen
without one), and a test that starts one without the marker it needs
fails, naming that marker; a fixture that starts something says so with
starts(), checked before any fixture is set up.  So a slow test cannot
hide in the quick tier.  Teardown is not watched: a module or session
fixture ends in whichever test comes last, marked or not.
"""

from __future__ import annotations

import contextlib
import os
import platform
import shlex
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

#: The markers of the tiers beyond the quick one, by what a test starts.
#: pyproject.toml registers each (--strict-markers refuses any other name).
TIERS: dict[str, str] = {
    "server": "starts runzeo, PostgreSQL or MariaDB",
    "subprocess": "runs vfab-bench, locust, python or a compiler as a child process",
    "browser": "drives Chromium (through Playwright)",
    "valgrind": "runs valgrind or strace",
    "netns": "creates network namespaces",
    "pypi": "needs the package index (skipped, saying why, when it is unreachable)",
}

#: Programs by the marker a test that starts them needs; any other child
#: process needs `subprocess`.  Checked in this order, each word of the
#: command line by its base name, so that `valgrind python ...` is
#: valgrind and `runuser -u postgres -- initdb` a server.
PROGRAMS: tuple[tuple[str, frozenset[str]], ...] = (
    ("valgrind", frozenset({"valgrind", "strace"})),
    ("netns", frozenset({"unshare", "nsenter", "netns"})),
    ("browser", frozenset({"chromium", "chrome", "headless_shell"})),
    (
        "server",
        frozenset(
            {
                "ZEO.runzeo",
                "runzeo",
                "postgres",
                "pg_ctl",
                "initdb",
                "mariadbd",
                "mysqld",
                "mariadb-install-db",
                "mysql_install_db",
                "mariadb-admin",
                "mysqladmin",
            }
        ),
    ),
    ("pypi", frozenset({"pip"})),
)


def marker_for(argv: list[str]) -> str:
    """The marker a test that starts a process with *argv* needs."""
    words = {os.path.basename(arg) for arg in argv}
    # Playwright starts Chromium through its driver, `.../playwright/driver/node`.
    if argv and "playwright" in Path(argv[0]).parts:
        return "browser"
    for marker, programs in PROGRAMS:
        if words & programs:
            return marker
    return "subprocess"


#: Fixture name -> the markers a test that uses it needs (starts()).
FIXTURES: dict[str, tuple[str, ...]] = {}

F = TypeVar("F", bound=Callable[..., Any])


def starts(*markers: str) -> Callable[[F], F]:
    """Declare what a fixture starts (under its @pytest.fixture): a test
    that uses it, however indirectly, must carry *markers*.  Checked before
    any fixture is set up, so that an unmarked test fails whether or not an
    earlier test already started what a session fixture holds."""
    unknown = set(markers) - set(TIERS)
    if unknown:
        raise ValueError(f"not a tier: {sorted(unknown)}")

    def declare(function: F) -> F:
        FIXTURES[function.__name__] = markers
        return function

    return declare


class Watch:
    """What the current test started: (marker needed, description)."""

    def __init__(self) -> None:
        self.started: list[tuple[str, str]] = []
        self.allowed = 0


_lock = threading.Lock()
_watch: Watch | None = None


def _seen(marker: str, what: str) -> None:
    with _lock:
        if _watch is not None and not _watch.allowed:
            _watch.started.append((marker, what))


def _argv(args: Any) -> list[str]:
    if isinstance(args, (str, bytes)):
        text = os.fsdecode(args)
        try:
            return shlex.split(text)
        except ValueError:
            return text.split()
    try:
        return [os.fsdecode(a) for a in args]
    except TypeError:
        return [repr(args)]


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _watch is None:
        return
    if event == "subprocess.Popen":  # (executable, args, cwd, env)
        argv = _argv(args[1])
    elif event == "os.posix_spawn":  # (path, argv, env)
        argv = _argv(args[1])
    elif event == "os.spawn":  # (mode, path, args, env)
        argv = _argv(args[2])
    elif event == "os.system":  # (command,)
        argv = _argv(args[0])
    elif event in ("os.fork", "os.forkpty"):
        argv = [f"{event}()"]
    else:
        return
    _seen(marker_for(argv), shlex.join(argv)[:300])


def _wrap_fork_exec() -> None:
    """multiprocessing's spawn and forkserver start their processes through
    _posixsubprocess.fork_exec without an audit event; watch that call too
    (subprocess calls it after its own event, seen twice but the same)."""
    import _posixsubprocess

    real: Callable[..., int] = _posixsubprocess.fork_exec

    def fork_exec(*args: Any, **kwargs: Any) -> int:
        argv = _argv(args[0]) if args and args[0] is not None else ["fork_exec()"]
        _seen(marker_for(argv), shlex.join(argv)[:300])
        return real(*args, **kwargs)

    _posixsubprocess.fork_exec = fork_exec


def _wrap_listen() -> None:
    """A listening socket is a server, even in-process (no audit event)."""
    real = socket.socket.listen

    def listen(self: socket.socket, *args: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):
                _seen("server", f"a socket listening on {self.getsockname()}")
        real(self, *args)

    socket.socket.listen = listen  # type: ignore[method-assign]


@contextlib.contextmanager
def unwatched() -> Iterator[None]:
    """Start a process or listen without it counting against the test: for
    the harness's own doing (a port held busy for a test, not a server)."""
    with _lock:
        watch = _watch
        if watch is not None:
            watch.allowed += 1
    try:
        yield
    finally:
        with _lock:
            if watch is not None:
                watch.allowed -= 1


_installed = False


def _install() -> None:
    """Once per process (a pytest run inside a test configures again)."""
    global _installed
    if _installed:
        return
    _installed = True
    # platform.platform() runs `uname -p` once per process and caches it;
    # run it here so that no test is charged with it.
    platform.platform()
    sys.addaudithook(_audit)
    _wrap_fork_exec()
    _wrap_listen()


@contextlib.contextmanager
def _watching() -> Iterator[Watch]:
    """Watch what starts until the block ends (nested: a pytest run inside
    a test watches its own tests, and the outer watch resumes after)."""
    global _watch
    watch = Watch()
    with _lock:
        outer, _watch = _watch, watch
    try:
        yield watch
    finally:
        with _lock:
            _watch = outer


def _check(item: pytest.Item, watch: Watch) -> None:
    """Fail *item* if it started what a marker it lacks stands for."""
    marked = {m.name for m in item.iter_markers()}
    missing: dict[str, str] = {}
    for marker, what in watch.started:
        if marker not in marked:
            missing.setdefault(marker, what)
    if missing:
        lines = [
            f"started {what!r} without @pytest.mark.{marker} ({TIERS[marker]})"
            for marker, what in missing.items()
        ]
        pytest.fail(
            "an unmarked test runs in-process (the quick tier); mark what this "
            "one starts (tests/support/tiers.py):\n  " + "\n  ".join(lines),
            pytrace=False,
        )


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port on 127.0.0.1 that a socket of this test listens on, for the
    'port in use' tests: held by the harness, not a server the test starts."""
    with socket.socket() as busy, unwatched():
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        yield busy.getsockname()[1]


# -- the plugin ---------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--all",
        action="store_true",
        dest="vfab_all",
        help="run every tier: also the tests marked "
        + ", ".join(TIERS)
        + " (a plain run leaves them out; an -m expression selects by itself)",
    )


def pytest_configure(config: pytest.Config) -> None:
    _install()


_LEFT_OUT = pytest.StashKey[int]()


def quick_tier(config: pytest.Config) -> bool:
    """True when this run leaves out the marked tiers: no --all, no -m."""
    return not config.getoption("vfab_all") and not config.option.markexpr


def pytest_report_header(config: pytest.Config) -> str:
    if quick_tier(config):
        return (
            "tier: quick (leaves out the tests marked "
            + ", ".join(TIERS)
            + "; --all runs every tier)"
        )
    if config.getoption("vfab_all"):
        return "tier: all"
    return f"tier: as -m {config.option.markexpr!r} selects"


def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> None:
    if not quick_tier(config):
        return
    keep, left_out = [], []
    for item in items:
        if any(item.get_closest_marker(name) for name in TIERS):
            left_out.append(item)
        else:
            keep.append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = keep
    config.stash[_LEFT_OUT] = len(left_out)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """On a pytest-xdist worker (pytest -n), hand the count to the
    controller, which collects nothing itself."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["vfab_left_out"] = session.config.stash.get(_LEFT_OUT, 0)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist's controller: a worker's count (each collects the whole
    run, so each counts the same tests)."""
    left_out = getattr(node, "workeroutput", {}).get("vfab_left_out", 0)
    config = node.config
    config.stash[_LEFT_OUT] = max(config.stash.get(_LEFT_OUT, 0), left_out)


def pytest_terminal_summary(
    terminalreporter: Any, exitstatus: int, config: pytest.Config
) -> None:
    left_out = config.stash.get(_LEFT_OUT, 0)
    if left_out:
        terminalreporter.write_line(
            f"tier: quick; {left_out} tests marked "
            + ", ".join(TIERS)
            + " left out (--all runs them)"
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    declared = Watch()
    for name in getattr(item, "fixturenames", ()):
        for marker in FIXTURES.get(name, ()):
            declared.started.append((marker, f"the fixture {name}"))
    _check(item, declared)
    with _watching() as watch:
        result = yield
    _check(item, watch)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with _watching() as watch:
        result = yield
    _check(item, watch)
    return result
