"""The two MariaDB workarounds in storages/relstorage/adapters.py.

Each test here checks that RelStorage, *without* the workaround, still
fails on MariaDB.  The day one of them fails, RelStorage has fixed the
problem: remove the workaround it names (and this test)."""

from __future__ import annotations

from typing import Any

import pytest

from storages.base import StorageError
from storages.relstorage.adapters import (
    mariadb_object_state_template,
    mariadb_version_detector,
    mysql_adapter,
    open_relstorage,
)
from storages.relstorage.mysql import MariaDBServer, MySQLDatabases, connect_params

pytest.importorskip("relstorage", reason="RelStorage is not installed")

REMOVE = "RelStorage no longer needs MariaDB workaround {n} ({what}): remove it"


def server_cursor(server: MariaDBServer) -> Any:
    conn = connect_params(server.params())
    return conn, conn.cursor()


@pytest.mark.server
def test_stock_version_detector_misreads_mariadb(mariadb_server: MariaDBServer) -> None:
    from relstorage.adapters.mysql.schema import MySQLVersionDetector

    conn, cursor = server_cursor(mariadb_server)
    try:
        stock = MySQLVersionDetector().requires_values_upsert_alias(cursor)
        ours = mariadb_version_detector().requires_values_upsert_alias(cursor)
    finally:
        conn.close()
    assert not ours
    assert stock, REMOVE.format(n=1, what="MariaDBVersionDetector")


@pytest.mark.server
def test_commit_fails_without_the_version_detector(
    mysql_databases: MySQLDatabases,
) -> None:
    import transaction
    import ZODB
    from relstorage.options import Options
    from relstorage.storage import RelStorage

    params = mysql_databases.adapter_params(mysql_databases.create())
    options = Options(keep_history=False, driver="MySQLdb")
    storage = RelStorage(
        mysql_adapter(options, params, workarounds=False), options=options
    )
    try:
        # ZODB.DB commits the root object: the first commit.
        ZODB.DB(storage).close()
    except Exception as e:
        # MariaDB's syntax error on "VALUES (...) AS excluded".
        assert "1064" in str(e), e
    else:
        pytest.fail(REMOVE.format(n=1, what="MariaDBVersionDetector"))
    finally:
        # The failed commit left a transaction open: until its connection
        # closes, DROP DATABASE waits on the metadata lock.
        transaction.abort()
        storage.close()


def test_template_patch_finds_relstorage_references() -> None:
    from relstorage.adapters.mysql.schema import MySQLSchemaInstaller

    history_preserving = MySQLSchemaInstaller.CREATE_OBJECT_STATE_TMPLS[0]
    patched = mariadb_object_state_template(history_preserving)
    assert "REFERENCES" not in patched.split("CREATE INDEX")[0]
    with pytest.raises(StorageError, match="review the MariaDB workaround"):
        mariadb_object_state_template(patched)


@pytest.mark.server
def test_history_preserving_schema_fails_without_the_patch(
    mysql_databases: MySQLDatabases,
) -> None:
    params = mysql_databases.adapter_params(mysql_databases.create())
    try:
        storage = open_relstorage(
            "mysql", keep_history=True, params=params, mariadb_workarounds=False
        )
    except Exception as e:
        # errno 150: "Foreign key constraint is incorrectly formed".
        assert "150" in str(e), e
    else:
        storage.close()
        pytest.fail(REMOVE.format(n=2, what="object_state without inline REFERENCES"))
