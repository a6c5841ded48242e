"""Fixtures for RelStorage and its servers: one PostgreSQL and one MariaDB
for the whole test session (skipped, with the reason, where the binaries
are absent), a fresh database per test, and a check that no server
process outlives what started it."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from storages.relstorage import mysql, postgresql
from storages.relstorage.mysql import MariaDBServer, MySQLDatabases
from storages.relstorage.postgresql import PostgreSQLDatabases, PostgreSQLServer
from tests.support.tiers import starts


def process_tree(root_pids: set[int]) -> set[int]:
    """*root_pids* still alive and all their descendants (from /proc)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...; comm may hold spaces and parentheses.
        parents[int(entry)] = int(stat.rpartition(")")[2].split()[1])
    alive = {pid for pid in root_pids if pid in parents}
    grew = True
    while grew:
        children = {pid for pid, ppid in parents.items() if ppid in alive} - alive
        alive |= children
        grew = bool(children)
    return alive


def server_pids(directory: Path | str) -> set[int]:
    """Processes whose command line names *directory* (a server's data
    directory) and their descendants: only the servers of that directory,
    never anyone else's."""
    needle = str(directory).encode()
    roots = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if needle in f.read():
                    roots.add(int(entry))
        except OSError:
            continue
    roots.discard(os.getpid())
    return process_tree(roots)


def wait_gone(pids: set[int], timeout: float = 20.0) -> set[int]:
    """The pids of *pids* (and descendants) still alive after *timeout*."""
    deadline = time.monotonic() + timeout
    left = process_tree(pids)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = process_tree(pids)
    return left


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # RelStorage masks only "passwd" (not "password") in what it logs, so the
    # suite keeps the name mysqlclient calls deprecated.
    here = Path(__file__).parent
    quiet = pytest.mark.filterwarnings(
        "ignore:'passwd' is deprecated:DeprecationWarning"
    )
    for item in items:
        if here in Path(item.path).parents:
            item.add_marker(quiet)


def _skip_unless(reason: str | None, what: str) -> None:
    if reason:
        pytest.skip(f"{what}: {reason}")


@pytest.fixture(scope="session")
@starts("server")
def postgresql_server() -> Iterator[PostgreSQLServer]:
    _skip_unless(postgresql.available(), "no PostgreSQL server")
    server = PostgreSQLServer()
    with server:
        pids = process_tree({server.pid}) if server.pid else set()
        yield server
    assert not wait_gone(pids, 10), "PostgreSQL outlived the test session"


@pytest.fixture(scope="session")
@starts("server")
def mariadb_server() -> Iterator[MariaDBServer]:
    _skip_unless(mysql.available(), "no MariaDB server")
    server = MariaDBServer()
    with server:
        pids = process_tree({server.pid}) if server.pid else set()
        yield server
    assert not wait_gone(pids, 10), "MariaDB outlived the test session"


@pytest.fixture
def pg_databases(postgresql_server: PostgreSQLServer) -> Iterator[PostgreSQLDatabases]:
    with postgresql_server.databases() as databases:
        yield databases


@pytest.fixture
def mysql_databases(mariadb_server: MariaDBServer) -> Iterator[MySQLDatabases]:
    with mariadb_server.databases() as databases:
        yield databases
