"""PostgreSQLServer and MariaDBServer: start, stop, per-trial databases,
clean shutdown on Ctrl-C, SIGTERM and SIGKILL of their parent and after a
failing test, and one-line errors for what a user can fix."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from storages.base import StorageError
from storages.relstorage import mysql, postgresql
from storages.relstorage.mysql import MariaDBServer, MySQLDatabases
from storages.relstorage.postgresql import PostgreSQLDatabases, PostgreSQLServer
from storages.relstorage.servers import ServerProcess, TrialDatabases
from tests.storages.relstorage.conftest import process_tree, server_pids, wait_gone

ROOT = Path(__file__).resolve().parents[3]
KINDS = {"postgresql": PostgreSQLServer, "mariadb": MariaDBServer}


def need(kind: str) -> None:
    reason = {"postgresql": postgresql, "mariadb": mysql}[kind].available()
    if reason:
        pytest.skip(f"no {kind} server: {reason}")


def one_line(error: pytest.ExceptionInfo[StorageError]) -> str:
    text = str(error.value)
    assert text and "\n" not in text, text
    return text


def env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT))


@pytest.mark.server
@pytest.mark.parametrize("kind", list(KINDS))
def test_start_stop_leaves_nothing(kind: str) -> None:
    need(kind)
    server: ServerProcess = KINDS[kind]()
    with server:
        assert server.running
        directory = server.directory
        assert directory is not None and directory.is_dir()
        pids = process_tree({server.pid or 0})
        assert pids
        with socket.create_connection(server.address, timeout=5):
            pass
    assert not server.running
    assert not wait_gone(pids, 10)
    assert not server_pids(directory)
    assert not directory.exists()
    print(f"{kind} timings (s):", {k: round(v, 3) for k, v in server.timings.items()})


@pytest.mark.server
def test_postgresql_databases(postgresql_server: PostgreSQLServer) -> None:
    check_databases(
        postgresql_server.databases(),
        lambda prefix: PostgreSQLDatabases(postgresql_server.dsn(), prefix),
    )


@pytest.mark.server
def test_mariadb_databases(mariadb_server: MariaDBServer) -> None:
    check_databases(
        mariadb_server.databases(),
        lambda prefix: MySQLDatabases(mariadb_server.params(), prefix),
    )


def check_databases(
    databases: TrialDatabases, other: Callable[[str], TrialDatabases]
) -> None:
    with databases:
        first, second = databases.create(), databases.create()
        assert first != second and first.startswith("vfab_trial_")
        assert databases._exists(first) and databases._exists(second)
        databases.drop(first)
        assert not databases._exists(first)
        # Only databases this object created are ever dropped.
        with pytest.raises(StorageError, match="not created by this run") as e:
            databases.drop(first)
        one_line(e)
        # A name that exists and is not ours is refused, never reused.
        with other("vfab_t_") as theirs:
            name = theirs.create("clash")
            with pytest.raises(StorageError, match="already exists") as e:
                other("vfab_t_").create("clash")
            one_line(e)
            assert name in theirs.created
    assert not databases._exists(second)
    assert not databases.created


@pytest.mark.server
def test_user_dsn_gets_a_unique_prefix(postgresql_server: PostgreSQLServer) -> None:
    a, b = (
        PostgreSQLDatabases(postgresql_server.dsn()),
        PostgreSQLDatabases(postgresql_server.dsn()),
    )
    assert a.prefix != b.prefix and a.prefix.startswith("vfab_")
    assert f"only databases named {a.prefix}*" in a.description
    with a:
        name = a.create()
        assert name.startswith(a.prefix)
        assert "dbname=" + name in a.dsn(name)


@pytest.mark.server
def test_user_mysql_url(mariadb_server: MariaDBServer) -> None:
    url = f"mysql://root@{mariadb_server.host}:{mariadb_server.port}"
    with MySQLDatabases.for_url(url) as databases:
        assert databases.prefix != "vfab_trial_"
        assert "only databases named vfab_" in databases.description
        name = databases.create()
        assert databases._exists(name)
    with pytest.raises(StorageError, match="expected mysql://") as e:
        MySQLDatabases.for_url("localhost:3306")
    one_line(e)


@pytest.mark.parametrize("kind", list(KINDS))
def test_port_in_use(kind: str, busy_port: int) -> None:
    need(kind)
    server = KINDS[kind](port=busy_port)
    with pytest.raises(StorageError, match="already in use") as e:
        server.start()
    one_line(e)
    assert not server.running and server.directory is None  # removed


@pytest.mark.server
def test_postgresql_directory_not_writable(tmp_path: Path) -> None:
    need("postgresql")
    if os.geteuid() == 0:
        # pytest's tmp_path lies under a 0700 directory of root's: the
        # postgres account cannot reach it, said before anything is made.
        directory = tmp_path / "pg"
        match = "cannot enter .* set TMPDIR to a directory postgres can reach"
    else:
        directory = tmp_path / "pg"
        directory.mkdir(mode=0o500)
        match = "not writable"
    server = PostgreSQLServer(directory)
    with pytest.raises(StorageError, match=match) as e:
        server.start()
    one_line(e)
    assert not server.running and not server_pids(directory)
    if os.geteuid() == 0:
        assert not directory.exists()


def test_mariadb_directory_not_writable(tmp_path: Path) -> None:
    need("mariadb")
    (tmp_path / "file").write_text("")
    server = MariaDBServer(tmp_path / "file" / "db")
    with pytest.raises(StorageError, match="cannot create MariaDB directory") as e:
        server.start()
    one_line(e)
    assert not server.running


def test_postgresql_binaries_missing(tmp_path: Path) -> None:
    server = PostgreSQLServer(bindir=tmp_path)
    with pytest.raises(StorageError, match="PostgreSQL binaries missing") as e:
        server.start()
    one_line(e)
    assert server.directory is None


def test_mariadb_binaries_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mysql.shutil, "which", lambda *a, **k: None)
    assert "mariadb-server" in (mysql.available() or "")
    server = MariaDBServer()
    with pytest.raises(StorageError, match="MariaDB server binaries not found") as e:
        server.start()
    one_line(e)
    assert server.directory is None


SCRIPT = """
import sys, time
from storages.relstorage.{module} import {cls}
with {cls}() as server:
    print(server.pid, server.directory, flush=True)
    time.sleep(600)
"""


@pytest.mark.subprocess
@pytest.mark.parametrize(
    "kind,signum",
    [
        ("postgresql", signal.SIGINT),
        ("postgresql", signal.SIGTERM),
        ("postgresql", signal.SIGKILL),
        ("mariadb", signal.SIGINT),
        ("mariadb", signal.SIGTERM),
    ],
    ids=lambda v: getattr(v, "name", v),
)
def test_server_dies_with_its_parent(kind: str, signum: signal.Signals) -> None:
    """Ctrl-C: the parent stops the server itself.  SIGTERM and SIGKILL (no
    cleanup in the parent): Linux's parent-death signal stops it."""
    need(kind)
    module, cls = ("postgresql", "PostgreSQLServer")
    if kind == "mariadb":
        module, cls = ("mysql", "MariaDBServer")
    parent = subprocess.Popen(
        [sys.executable, "-c", SCRIPT.format(module=module, cls=cls)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
        cwd=ROOT,
    )
    directory = None
    try:
        assert parent.stdout is not None
        line = parent.stdout.readline()
        assert line, parent.communicate(timeout=30)[1]
        pid_text, directory = line.split()
        pids = process_tree({int(pid_text)})
        assert pids
        parent.send_signal(signum)
        parent.wait(60)
        left = wait_gone(pids, 30) | server_pids(directory)
        assert not left, f"{kind} processes left after {signum.name}: {sorted(left)}"
        if signum == signal.SIGINT:
            assert not Path(directory).exists()
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if directory:
            for pid in server_pids(directory):  # only this test's server
                os.kill(pid, signal.SIGKILL)
            shutil.rmtree(directory, ignore_errors=True)


INNER_TEST = """
import time
import pytest
from storages.relstorage.postgresql import PostgreSQLServer

@pytest.fixture(scope="session")
def server():
    with PostgreSQLServer() as server:
        with open({marker!r}, "w") as f:
            f.write(f"{{server.pid}} {{server.directory}}")
        yield server

def test_fails(server):
    assert False, "a failing test"

def test_waits_for_ctrl_c(server):
    if {wait}:
        time.sleep(600)
"""


@pytest.mark.subprocess
@pytest.mark.parametrize("interrupt", [False, True], ids=["failing-test", "ctrl-c"])
def test_pytest_fixture_stops_server(tmp_path: Path, interrupt: bool) -> None:
    """A session fixture like conftest's stops its server after a failing
    test and when pytest gets Ctrl-C."""
    need("postgresql")
    marker = tmp_path / "server"
    test_file = tmp_path / "test_inner.py"
    test_file.write_text(INNER_TEST.format(marker=str(marker), wait=interrupt))
    inner = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            str(test_file),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env(),
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() or not marker.read_text():
            assert inner.poll() is None or marker.exists(), inner.communicate()[0]
            assert time.monotonic() < deadline
            time.sleep(0.1)
        pid_text, directory = marker.read_text().split()
        pids = process_tree({int(pid_text)})
        if interrupt:
            time.sleep(1)  # into test_waits_for_ctrl_c's sleep
            inner.send_signal(signal.SIGINT)
        output = inner.communicate(timeout=60)[0]
        assert ("KeyboardInterrupt" in output) if interrupt else ("1 failed" in output)
        assert not wait_gone(pids, 30)
        assert not server_pids(directory)
        assert not Path(directory).exists()
    finally:
        if inner.poll() is None:
            inner.kill()
            inner.wait()


@pytest.mark.server
@pytest.mark.subprocess
@pytest.mark.parametrize("kind", ["threads", "processes", "greenlets"])
def test_postgresql_runs_when_tmpdir_lies_under_a_private_directory(
    kind: str, tmp_path: Path
) -> None:
    """TMPDIR under a directory only root enters (what `mktemp -d` makes):
    PostgreSQL's programs, run as postgres, get a directory they can reach,
    and nothing is left in TMPDIR or beside it (issue 46)."""
    need("postgresql")
    if os.geteuid() != 0:
        pytest.skip("PostgreSQL runs as another user only when the suite is root")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    inner = private / "tmp"
    inner.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "scenarios.cli", "matrix", "--storage",
         "relstorage-pg", "--kind", kind, "--concurrency", "2", "--objects", "1",
         "--rounds", "1", "--transactions", "1", "--benchmark", "add", "-q",
         # greenlets need a driver that yields to gevent
         *(["--pg-driver", "pg8000"] if kind == "greenlets" else [])],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
        env=dict(env(), TMPDIR=str(inner)),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert list(inner.iterdir()) == []
