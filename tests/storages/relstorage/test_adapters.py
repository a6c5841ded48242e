"""open_relstorage: a commit and a cold read on every backend, driver and
history mode, and the one-line errors a user can fix."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from storages.base import StorageError
from storages.ports import free_port
from storages.relstorage.adapters import (
    available_drivers,
    choose_driver,
    driver_name,
    open_relstorage,
)
from storages.relstorage.mysql import MariaDBServer, MySQLDatabases
from storages.relstorage.postgresql import PostgreSQLDatabases, PostgreSQLServer

pytest.importorskip("relstorage", reason="RelStorage is not installed")

OBJECTS = 200
HISTORY = pytest.mark.parametrize(
    "keep_history", [False, True], ids=["history-free", "history-preserving"]
)


def need(module: str, driver: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"driver {driver} is not installed")


def round_trip(open_storage: Any) -> None:
    """Commit OBJECTS persistent objects, then read them back through a new
    storage and a new DB (an empty cache: a cold read)."""
    import transaction
    import ZODB
    from persistent.mapping import PersistentMapping

    db = ZODB.DB(open_storage(), cache_size=OBJECTS * 2)
    try:
        tm = transaction.TransactionManager()
        conn = db.open(tm)
        root = conn.root()
        root["items"] = PersistentMapping(
            {
                i: PersistentMapping({"n": i, "name": f"item {i}"})
                for i in range(OBJECTS)
            }
        )
        tm.commit()
        conn.close()
    finally:
        db.close()

    db = ZODB.DB(open_storage(), cache_size=OBJECTS * 2)
    try:
        tm = transaction.TransactionManager()
        conn = db.open(tm)
        items = conn.root()["items"]
        assert sorted(items) == list(range(OBJECTS))
        assert all(items[i]["n"] == i for i in range(OBJECTS))
        assert conn.getTransferCounts()[0] >= OBJECTS  # really loaded
        tm.abort()
        conn.close()
    finally:
        db.close()


def driver_of(storage: Any) -> str:
    return driver_name(storage)


@HISTORY
def test_sqlite3_round_trip(tmp_path: Path, keep_history: bool) -> None:
    def open_storage() -> Any:
        return open_relstorage("sqlite3", keep_history=keep_history, data_dir=tmp_path)

    round_trip(open_storage)


@pytest.mark.server
@HISTORY
@pytest.mark.parametrize("driver", ["psycopg2", "pg8000"])
def test_postgresql_round_trip(
    pg_databases: PostgreSQLDatabases, keep_history: bool, driver: str
) -> None:
    need(driver, driver)
    dsn = pg_databases.dsn(pg_databases.create())

    def open_storage() -> Any:
        storage = open_relstorage(
            "postgresql", keep_history=keep_history, driver=driver, dsn=dsn
        )
        assert driver_of(storage) == driver
        return storage

    round_trip(open_storage)


@pytest.mark.server
@HISTORY
@pytest.mark.parametrize("driver", ["MySQLdb", "PyMySQL"])
def test_mariadb_round_trip(
    mysql_databases: MySQLDatabases, keep_history: bool, driver: str
) -> None:
    need({"MySQLdb": "MySQLdb", "PyMySQL": "pymysql"}[driver], driver)
    params = mysql_databases.adapter_params(mysql_databases.create())

    def open_storage() -> Any:
        storage = open_relstorage(
            "mysql", keep_history=keep_history, driver=driver, params=params
        )
        assert driver_of(storage) == driver
        return storage

    round_trip(open_storage)


def one_line(error: pytest.ExceptionInfo[StorageError]) -> str:
    text = str(error.value)
    assert "\n" not in text and text, text
    return text


def test_unknown_backend_and_driver(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="choose one of sqlite3, postgresql, mysql"):
        open_relstorage("oracle", data_dir=tmp_path)
    with pytest.raises(StorageError, match="choose one of psycopg2, pg8000") as e:
        open_relstorage("postgresql", driver="psycopg", dsn="host=x")
    one_line(e)


def test_postgresql_unreachable_dsn() -> None:
    need("psycopg2", "psycopg2")
    dsn = f"host=127.0.0.1 port={free_port()} user=postgres dbname=postgres"
    with pytest.raises(StorageError, match="cannot open PostgreSQL at 127.0.0.1") as e:
        open_relstorage("postgresql", dsn=dsn)
    assert "refused" in one_line(e)
    with pytest.raises(StorageError, match="cannot connect to PostgreSQL") as e:
        PostgreSQLDatabases(dsn).connect()
    one_line(e)


@pytest.mark.server
def test_postgresql_wrong_credentials(postgresql_server: PostgreSQLServer) -> None:
    # The suite's server trusts 127.0.0.1; an unknown role is still refused.
    dsn = postgresql_server.dsn().replace("user=postgres", "user=nobody_here")
    with pytest.raises(StorageError, match='role "nobody_here" does not exist') as e:
        open_relstorage("postgresql", dsn=dsn)
    one_line(e)
    with pytest.raises(StorageError, match="nobody_here") as e:
        PostgreSQLDatabases(dsn).connect()
    one_line(e)


@pytest.mark.server
def test_mariadb_wrong_credentials(mariadb_server: MariaDBServer) -> None:
    params = dict(mariadb_server.params("mysql"), passwd="wrong")
    with pytest.raises(StorageError, match=r"\(1045\) Access denied") as e:
        open_relstorage("mysql", params=params)
    one_line(e)
    with pytest.raises(StorageError, match="1045") as e:
        MySQLDatabases(params).connect()
    one_line(e)


def test_mariadb_unreachable() -> None:
    params = {"host": "127.0.0.1", "port": free_port(), "user": "root", "passwd": ""}
    with pytest.raises(StorageError, match="cannot open MySQL at 127.0.0.1") as e:
        open_relstorage("mysql", params=dict(params, database="x"))
    one_line(e)


def test_driver_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # RelStorage reports a driver it cannot import as not available.
    import sys

    monkeypatch.setitem(sys.modules, "pg8000", None)
    with pytest.raises(StorageError, match="driver not available") as e:
        open_relstorage("postgresql", driver="pg8000", dsn="host=127.0.0.1 port=1")
    one_line(e)


def test_default_driver_falls_back_to_pure_python(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A compiled driver that did not build leaves its pure-Python fallback
    as the default; none at all is a one-line error."""
    import importlib.util

    real = importlib.util.find_spec
    missing: set[str] = set()

    def find_spec(name: str, *args: Any) -> Any:
        return None if name in missing else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    need("pg8000", "pg8000")
    need("pymysql", "PyMySQL")
    missing |= {"psycopg2", "MySQLdb"}
    assert choose_driver("postgresql", None) == "pg8000"
    assert choose_driver("mysql", None) == "PyMySQL"
    assert available_drivers("sqlite3") == ["sqlite3"]
    missing |= {"pg8000"}
    with pytest.raises(StorageError, match="no postgresql driver installed") as e:
        choose_driver("postgresql", None)
    one_line(e)


def check_history_mode_mismatch(open_storage: Any) -> None:
    open_storage(False).close()
    with pytest.raises(StorageError, match="one database per history mode") as e:
        open_storage(True)
    one_line(e)


def test_sqlite3_history_mode_mismatch(tmp_path: Path) -> None:
    def open_storage(keep_history: bool) -> Any:
        return open_relstorage("sqlite3", keep_history=keep_history, data_dir=tmp_path)

    check_history_mode_mismatch(open_storage)
    # The other way round, RelStorage says so itself.
    open_relstorage("sqlite3", keep_history=True, data_dir=tmp_path / "hp").close()
    with pytest.raises(StorageError, match="Schema mismatch") as e:
        open_relstorage("sqlite3", keep_history=False, data_dir=tmp_path / "hp")
    one_line(e)


@pytest.mark.server
def test_postgresql_history_mode_mismatch(pg_databases: PostgreSQLDatabases) -> None:
    dsn = pg_databases.dsn(pg_databases.create())

    def open_storage(keep_history: bool) -> Any:
        return open_relstorage("postgresql", keep_history=keep_history, dsn=dsn)

    check_history_mode_mismatch(open_storage)
