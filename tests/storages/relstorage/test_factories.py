"""The relstorage-* registry storages: capabilities, the server each run
starts and stops (on success, a failing trial and Ctrl-C), a user's server
(--pg-dsn, --mysql-dsn), sizes on disk, and bad input as one line.

Servers the suite starts live under the test's own temporary directory
(TMPDIR, tempfile.tempdir), so server_pids(tmp_path) counts only ours."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from persistent.mapping import PersistentMapping

import storages
from scenarios.bench import runner
from scenarios.bench.config import RunConfig
from storages import StorageOptions
from storages.ports import free_port
from storages.relstorage import mysql, postgresql
from storages.relstorage.mysql import MariaDBServer, MySQLOptions
from storages.relstorage.options import redact
from storages.relstorage.postgresql import PGOptions, PostgreSQLServer
from tests.conftest import factory_or_skip as usable_or_skip
from tests.conftest import storage_params
from tests.storages.relstorage.conftest import server_pids, wait_gone

ROOT = Path(__file__).resolve().parents[3]
NAMES = ("relstorage-sqlite", "relstorage-pg", "relstorage-mysql")
SERVER_NAMES = {"relstorage-pg": postgresql, "relstorage-mysql": mysql}


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A fresh TMPDIR for the servers of one test, that the postgres account
    can reach (pytest's tmp_path is private to root); no server may be left
    running below it."""
    directory = Path(tempfile.mkdtemp(prefix="vfab-test-"))
    directory.chmod(0o755)
    try:
        yield directory
        left = wait_gone(server_pids(directory), 20)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        assert not left, f"servers left running: {sorted(left)}"
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def private_tmp(scratch: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Servers started in this process during the test live below *scratch*."""
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    return scratch


def vfab_bench(
    *args: str, tmpdir: Path, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scenarios.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmpdir)),
    )


def assert_one_line(proc: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert fragment in lines[0], proc.stderr


def children(pids: set[int]) -> set[int]:
    """Those of *pids* that are children of this process (the servers, not
    their backends)."""
    mine = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rpartition(")")[2].split()[1])
        except OSError:
            continue
        if ppid == os.getpid():
            mine.add(pid)
    return mine


# -- registry and capabilities ------------------------------------------------


def test_registered_with_capabilities() -> None:
    for name in NAMES:
        for full in (name, f"{name}-hp"):
            factory = storages.REGISTRY[full]
            assert factory.has_database and factory.shared
            assert not factory.servable
            assert factory.keep_history is full.endswith("-hp")  # type: ignore[attr-defined]
    sqlite = storages.REGISTRY["relstorage-sqlite"]
    assert sqlite.keeps_directory and not sqlite.starts_server
    for name in SERVER_NAMES:
        factory = storages.REGISTRY[name]
        assert factory.starts_server and not factory.keeps_directory
    assert "relstorage-sqlite" in storages.DEFAULT_STORAGES
    assert not set(SERVER_NAMES) & set(storages.DEFAULT_STORAGES)


def test_the_report_note_comes_from_the_storage(tmp_path: Path) -> None:
    """registry.report_note(): what a trial's jar_stats say of a RelStorage
    (history mode, backend, driver), in the factory's words; nothing for a
    storage with nothing to say or a name the registry does not hold."""
    factory = usable_or_skip("relstorage-sqlite-hp")
    with factory.open(tmp_path) as store:
        stats = store.jar_stats()
    note = storages.registry.report_note("relstorage-sqlite-hp", stats)
    assert note == "history-preserving, sqlite3", stats
    assert storages.registry.report_note("file", {"history": "free"}) is None
    # A configured column (--storage-uri sqlite://...) is not in the
    # registry; its stats come from the same RelStorage classes.
    assert storages.registry.report_note("theirs", stats) == note
    assert storages.registry.report_note("theirs", {"size": 1}) is None


def test_passwords_stay_out_of_the_json() -> None:
    options = StorageOptions(
        PGOptions(pg_dsn="host=db user=me password=secret dbname=x"),
        MySQLOptions(mysql_dsn="mysql://me:secret@db:3306"),
    )
    text = json.dumps(storages.options_json(options))
    assert "pg_dsn" in text and "mysql_dsn" in text
    assert "secret" not in text
    assert redact("postgresql://me:pw@h:5/x") == "postgresql://me:***@h:5/x"


@pytest.mark.subprocess
def test_storages_lists_usable_and_why_not(tmp_path: Path) -> None:
    proc = vfab_bench("storages", tmpdir=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = {ln.split()[0]: ln for ln in proc.stdout.splitlines()}
    for name in (*NAMES, "file"):
        factory = storages.get(name)
        reason = factory.unavailable()
        if reason:
            assert (
                f"no     {factory.description} (unavailable: {reason})" in lines[name]
            )
        else:
            assert "yes" in lines[name] and "unavailable" not in lines[name]


def test_a_missing_driver_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from storages.relstorage import adapters

    monkeypatch.setattr(adapters, "available_drivers", lambda backend: [])
    reason = storages.get("relstorage-pg").unavailable()
    if reason and "RelStorage is not installed" in reason:
        pytest.skip(reason)
    assert reason is not None
    assert "no PostgreSQL driver installed (psycopg2 or pg8000)" in reason
    assert "vfab-loadtest[relstorage]" in reason


# -- stores -------------------------------------------------------------------


@pytest.mark.parametrize("name", storage_params([*NAMES, *(f"{n}-hp" for n in NAMES)]))
def test_size_grows_and_history_is_recorded(
    name: str, tmp_path: Path, private_tmp: Path
) -> None:
    factory = usable_or_skip(name)
    with factory.running():
        with factory.open(tmp_path) as store:
            store.reset()
            before = store.size_bytes()
            store.root()["blob"] = PersistentMapping(
                {i: "x" * 1000 for i in range(2000)}
            )
            store.commit()
            after = store.size_bytes()
            assert before is not None and after is not None and after > before
            stats = store.jar_stats()
    assert stats["history"] == ("preserving" if name.endswith("-hp") else "free")
    assert stats["driver"] in ("sqlite3", "psycopg2", "pg8000", "MySQLdb", "PyMySQL")


@pytest.mark.server
@pytest.mark.parametrize("name", list(SERVER_NAMES))
def test_one_server_per_run_a_database_per_trial(
    name: str, tmp_path: Path, private_tmp: Path
) -> None:
    factory = usable_or_skip(name)
    with factory.running():
        pids = server_pids(private_tmp)
        assert len(children(pids)) == 1, "not one server started in running()"
        databases = factory._databases  # type: ignore[attr-defined]
        with factory.open(tmp_path) as first:
            assert databases.created == [first.jar_stats()["database"]]
        assert databases.created == []
        with factory.open(tmp_path) as second:
            assert second.jar_stats()["database"] != first.jar_stats()["database"]
        assert children(pids) == children(server_pids(private_tmp))  # the same one
    assert not wait_gone(pids, 20)


@pytest.mark.server
@pytest.mark.parametrize("name", list(SERVER_NAMES))
def test_open_outside_running_starts_and_stops_its_own(
    name: str, tmp_path: Path, private_tmp: Path
) -> None:
    factory = usable_or_skip(name)
    with factory.open(tmp_path) as store:
        pids = server_pids(private_tmp)
        assert pids
        store.reset()
    assert not wait_gone(pids, 20)


@pytest.mark.server
@pytest.mark.parametrize("name", list(SERVER_NAMES))
def test_a_failing_trial_leaves_no_server(
    name: str, private_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    usable_or_skip(name)
    real = runner.run_trial
    seen: list[set[int]] = []

    def failing(*args: Any, **kwargs: Any) -> Any:
        seen.append(children(server_pids(private_tmp)))
        if len(seen) == 2:
            raise RuntimeError("boom")
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "run_trial", failing)
    with pytest.raises(RuntimeError, match="boom"):
        runner.run(RunConfig(storages=(name,), repeat=3, warmups=0, budget_s=0))
    assert len(seen[0]) == 1 and seen[0] == seen[1]  # one server for both
    assert not wait_gone(seen[0], 20)


# -- a user's server ----------------------------------------------------------


def _user_server_options(name: str, server: Any) -> StorageOptions:
    if name == "relstorage-pg":
        return StorageOptions(PGOptions(pg_dsn=server.dsn()))
    host, port = server.address
    return StorageOptions(MySQLOptions(mysql_dsn=f"mysql://root:@{host}:{port}"))


@pytest.mark.server
@pytest.mark.parametrize("name", list(SERVER_NAMES))
def test_a_users_server_keeps_what_is_not_ours(
    name: str,
    tmp_path: Path,
    private_tmp: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    usable_or_skip(name)
    server_class = PostgreSQLServer if name == "relstorage-pg" else MariaDBServer
    with server_class() as server:
        theirs = server.databases(prefix="theirs_")
        theirs.create("keep")
        factory = usable_or_skip(name, _user_server_options(name, server))
        factory.preflight()
        with factory.running():
            with factory.open(tmp_path) as store:
                database = store.jar_stats()["database"]
                assert database.startswith("vfab_") and len(database) > 14
                store.reset()
                store.root()["x"] = 1
                store.commit()
        err = capsys.readouterr().err
        assert err.count("creates and drops only databases named vfab_") == 1
        assert not theirs._exists(database)
        assert theirs._exists("theirs_keep")
        theirs.drop_all()
        theirs.close()


# -- bad input: one line, exit status 2, before the run -----------------------


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("option", "fragment"),
    [
        ("--pg-dsn=host=127.0.0.1 port={port} user=postgres", "cannot connect to"),
        ("--mysql-dsn=mysql://root:pw@127.0.0.1:{port}", "cannot connect to MySQL"),
    ],
)
def test_an_unreachable_server_is_one_line(
    option: str, fragment: str, tmp_path: Path
) -> None:
    name = "relstorage-pg" if "pg-dsn" in option else "relstorage-mysql"
    usable_or_skip(
        name, StorageOptions(PGOptions(pg_dsn="x"), MySQLOptions(mysql_dsn="x"))
    )
    port = free_port()
    proc = vfab_bench(
        "run",
        "--storage",
        name,
        "--preset",
        "quick",
        option.format(port=port),
        tmpdir=tmp_path,
    )
    assert_one_line(proc, fragment)


@pytest.mark.server
@pytest.mark.subprocess
@pytest.mark.parametrize("name", list(SERVER_NAMES))
def test_wrong_credentials_are_one_line(
    name: str, tmp_path: Path, private_tmp: Path
) -> None:
    usable_or_skip(name)
    server_class = PostgreSQLServer if name == "relstorage-pg" else MariaDBServer
    with server_class() as server:
        host, port = server.address
        if name == "relstorage-pg":
            option = f"--pg-dsn=host={host} port={port} user=nobody dbname=postgres"
            fragment = 'role "nobody" does not exist'
        else:
            option = f"--mysql-dsn=mysql://root:wrong@{host}:{port}"
            fragment = "Access denied for user 'root'"
        proc = vfab_bench(
            "run", "--storage", name, "--preset", "quick", option, tmpdir=private_tmp
        )
    assert_one_line(proc, fragment)


@pytest.mark.subprocess
@pytest.mark.parametrize("name", list(SERVER_NAMES))
def test_a_busy_port_is_one_line(name: str, scratch: Path, busy_port: int) -> None:
    usable_or_skip(name)
    flag = "--pg-port" if name == "relstorage-pg" else "--mysql-port"
    port = busy_port
    proc = vfab_bench(
        "run",
        "--storage",
        name,
        "--preset",
        "quick",
        f"{flag}={port}",
        tmpdir=scratch,
    )
    assert_one_line(proc, f"port {port} on 127.0.0.1 is already in use")


# -- whole runs in a subprocess -----------------------------------------------


@pytest.mark.subprocess
def test_a_quick_run_on_all_three_leaves_no_server(
    tmp_path: Path, scratch: Path
) -> None:
    out = tmp_path / "run.json"
    proc = vfab_bench(
        "run",
        "--storage",
        ",".join(NAMES),
        "--preset",
        "quick",
        "-q",
        "--all",  # every table, and the storages' notes
        "--json",
        str(out),
        tmpdir=scratch,
    )
    assert proc.returncode == 0, proc.stderr
    assert not server_pids(scratch)
    assert list(scratch.iterdir()) == []
    data = json.loads(out.read_text())
    ran = {r["storage"] for r in data["results"]}
    expected = {n for n in NAMES if storages.get(n).unavailable() is None}
    assert ran == expected
    assert "history-free" in proc.stdout  # the report names the mode
    for trial in data["trials"]:
        assert trial["stats"]["history"] == "free"


@pytest.mark.subprocess
def test_ctrl_c_during_a_run_leaves_no_server(scratch: Path) -> None:
    usable_or_skip("relstorage-pg")
    proc = subprocess.Popen(
        [sys.executable, "-m", "scenarios.cli", "run", "--storage", "relstorage-pg"]
        + ["--size", "medium", "--repeat", "5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(scratch)),
    )
    deadline = time.monotonic() + 60
    pids: set[int] = set()
    while time.monotonic() < deadline and not pids:
        time.sleep(0.1)
        pids = {p for p in server_pids(scratch) if p != proc.pid}
    assert pids, "the server never started"
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGINT, err
    assert "Traceback" not in err
    assert not wait_gone(pids, 20)
    assert list(scratch.iterdir()) == []
