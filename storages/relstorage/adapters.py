"""Open a RelStorage on SQLite, PostgreSQL or MySQL/MariaDB.

open_relstorage() builds RelStorage's adapter for one backend and opens the
storage (creating the schema), and turns what a user can fix (driver
missing, server unreachable, wrong password, a database of the other
history mode) into a one-line StorageError.

RelStorage 4.3 fails twice on MariaDB 10.11 (the only MySQL Debian 12
ships); both are worked around here, for MySQL adapters only, and each has
a test in tests/storages/relstorage/test_mariadb_workarounds.py that fails the day
RelStorage no longer needs the workaround:

1. MariaDBVersionDetector: RelStorage reads "10.11.x-MariaDB" as MySQL
   >= 8.0.19 and sends ``INSERT ... VALUES (...) AS EXCLUDED ON DUPLICATE
   KEY UPDATE``, which MariaDB rejects (error 1064 on every commit).
2. MariaDB's history-preserving schema: object_state's inline
   ``REFERENCES "transaction"`` has no column list; MySQL parses inline
   REFERENCES and ignores them, MariaDB (10.5+) enforces them and fails
   with errno 150.  The table is created without those two clauses, which
   on MySQL is exactly what it already got.

Backends are imported inside the functions: importing this module needs
neither RelStorage nor a driver.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from storages.base import StorageError
from storages.errors import one_line
from storages.relstorage.drivers import (
    DRIVER_ALIASES,
    DRIVER_MODULES,
    DRIVERS,
    all_modules,
)

BACKENDS = ("sqlite3", "postgresql", "mysql")

# Workaround 2: the two inline foreign keys of the history-preserving
# object_state table ("REFERENCES "transaction"" with no column list).
_INLINE_REFERENCES = re.compile(r'\s+REFERENCES\s+"transaction"')


def mariadb_object_state_template(template: str) -> str:
    """RelStorage's history-preserving CREATE TABLE object_state without the
    inline REFERENCES clauses MariaDB refuses (errno 150).  StorageError if
    the template no longer has them: RelStorage changed, and the
    workaround must be looked at again."""
    patched, count = _INLINE_REFERENCES.subn("", template)
    if count != 2:
        raise StorageError(
            "RelStorage's object_state schema changed (expected 2 inline "
            f'REFERENCES "transaction", found {count}): review the MariaDB '
            "workaround in storages/relstorage/adapters.py"
        )
    return patched


def mariadb_version_detector() -> Any:
    """Workaround 1: a MySQLVersionDetector that knows MariaDB never takes
    the ``VALUES (...) AS alias`` upsert (its version is not MySQL's)."""
    from relstorage.adapters.mysql.schema import MySQLVersionDetector

    class MariaDBVersionDetector(MySQLVersionDetector):  # type: ignore[misc]
        def is_mariadb(self, cursor: Any) -> bool:
            return "mariadb" in self.get_version(cursor).lower()

        def requires_values_upsert_alias(self, cursor: Any) -> bool:
            if self.is_mariadb(cursor):
                return False
            return bool(super().requires_values_upsert_alias(cursor))

    return MariaDBVersionDetector()


def mysql_adapter(
    options: Any, params: Mapping[str, Any], workarounds: bool = True
) -> Any:
    """RelStorage's MySQLAdapter, with the MariaDB workarounds unless
    *workarounds* is False (the tests use that to see RelStorage fail)."""
    from relstorage.adapters.mysql import MySQLAdapter

    if not workarounds:
        return MySQLAdapter(options=options, **params)
    adapter = MySQLAdapter(
        options=options, version_detector=mariadb_version_detector(), **params
    )
    schema = adapter.schema
    if schema.keep_history:
        # Looked up by name on the instance (relstorage's tmpl_property), so
        # an instance attribute overrides the class's pair of templates.
        history_preserving, history_free = schema.CREATE_OBJECT_STATE_TMPLS
        schema.CREATE_OBJECT_STATE_TMPLS = (
            mariadb_object_state_template(history_preserving),
            history_free,
        )
    return adapter


def available_drivers(backend: str) -> list[str]:
    """The drivers of *backend* installed here, preferred first."""
    import importlib.util

    return [
        name
        for name in DRIVERS[backend]
        if importlib.util.find_spec(DRIVER_MODULES[name]) is not None
    ]


def choose_driver(backend: str, driver: str | None) -> str:
    """RelStorage's driver option: *driver* checked, or for None the first
    installed of DRIVERS[backend] (the compiled one unless its build
    failed); StorageError naming what is missing."""
    if driver is None:
        installed = available_drivers(backend)
        if not installed:
            raise StorageError(
                f"no {backend} driver installed (one of "
                + ", ".join(DRIVERS[backend])
                + "): pip install 'vfab-loadtest[relstorage]'"
            )
        return installed[0]
    driver = DRIVER_ALIASES.get(driver, driver)
    if driver not in DRIVERS[backend]:
        raise StorageError(
            f"unknown {backend} driver {driver!r}: choose one of "
            + ", ".join(DRIVERS[backend])
        )
    return driver


def driver_name(storage: Any) -> str:
    """The driver an open RelStorage uses, for the results' metadata."""
    return str(storage._adapter.driver.__name__)


def open_relstorage(
    backend: str,
    *,
    keep_history: bool = False,
    driver: str | None = None,
    data_dir: Path | str | None = None,
    dsn: str | None = None,
    params: Mapping[str, Any] | None = None,
    mariadb_workarounds: bool = True,
    **options: Any,
) -> Any:
    """An open relstorage.storage.RelStorage.

    backend: "sqlite3" (needs *data_dir*, created if missing; use a fresh
        one per trial), "postgresql" (needs *dsn*, a key=value libpq DSN
        naming the database) or "mysql" (needs *params*: host, port, user,
        passwd, database; MySQLAdapter's keywords, passed to the driver).
    keep_history: history-preserving (True) or history-free (False) schema.
        One database per mode: a database created in the other mode is
        refused with a StorageError.
    driver: "psycopg2" / "MySQLdb" (mysqlclient), compiled, or "pg8000" /
        "PyMySQL", pure Python; None: the first of those installed (see
        driver_name() for the one used).
    options: more relstorage.options.Options keywords (cache_local_mb,
        commit_lock_timeout, blob_dir, ...).  cache_local_dir is left unset
        unless given: it would make cold reads warm.
    """
    if backend not in BACKENDS:
        raise StorageError(
            f"unknown RelStorage backend {backend!r}: choose one of "
            + ", ".join(BACKENDS)
        )
    try:
        from relstorage.adapters.interfaces import DriverNotAvailableError
        from relstorage.options import Options
        from relstorage.storage import RelStorage
    except ImportError:
        raise StorageError(
            "RelStorage is not installed: pip install 'vfab-loadtest[relstorage]'"
        ) from None

    opts = Options(
        keep_history=keep_history,
        driver=choose_driver(backend, driver),
        **options,
    )
    try:
        if backend == "sqlite3":
            if data_dir is None:
                raise StorageError("RelStorage on sqlite3 needs a data directory")
            from relstorage.adapters.sqlite.adapter import Sqlite3Adapter

            Path(data_dir).mkdir(parents=True, exist_ok=True)
            adapter = Sqlite3Adapter(data_dir=str(data_dir), pragmas={}, options=opts)
            where = f"sqlite3 in {data_dir}"
        elif backend == "postgresql":
            if not dsn:
                raise StorageError("RelStorage on postgresql needs a DSN")
            from relstorage.adapters.postgresql import PostgreSQLAdapter

            adapter = PostgreSQLAdapter(dsn=dsn, options=opts)
            where = _pg_where(dsn)
        else:
            if not params:
                raise StorageError("RelStorage on mysql needs connection parameters")
            adapter = mysql_adapter(opts, params, mariadb_workarounds)
            where = (
                f"MySQL at {params.get('host', 'localhost')}:{params.get('port', 3306)}"
                f"/{params.get('database', params.get('db', ''))}"
            )
        return RelStorage(adapter, options=opts)
    except DriverNotAvailableError as e:
        raise StorageError(
            f"RelStorage {backend} driver not available: {one_line(e, with_type=False)}"
        ) from None
    except StorageError:
        raise
    except Exception as e:
        reason = _user_error(e)
        if reason is None:
            raise
        if keep_history and _is_driver_error(e, "IntegrityError", "ProgrammingError"):
            # What opening a history-free database history-preserving gives
            # (the other way round RelStorage says "Schema mismatch").
            reason += (
                " (if this database was created history-free: one database"
                " per history mode)"
            )
        raise StorageError(f"RelStorage cannot open {where}: {reason}") from None


def _pg_where(dsn: str) -> str:
    from storages.relstorage.dsn import parse_dsn

    parts = parse_dsn(dsn)
    return (
        f"PostgreSQL at {parts.get('host', 'local socket')}:{parts.get('port', 5432)}"
        f"/{parts.get('dbname', '')}"
    )


def _is_driver_error(error: BaseException, *names: str) -> bool:
    """True if *error* comes from a database driver and is (a subclass of)
    one of the DB-API exceptions *names*."""
    if type(error).__module__.split(".")[0] not in all_modules():
        return False
    return any(cls.__name__ in names for cls in type(error).__mro__)


def _user_error(error: BaseException) -> str | None:
    """The one-line reason for an error the user can fix, or None for a bug
    (which keeps its traceback)."""
    # Drivers' connection and authentication errors, a schema that is not
    # RelStorage's, and RelStorage's refusal of the other history mode.
    if _is_driver_error(
        error,
        "OperationalError",
        "InterfaceError",
        "ProgrammingError",
        "IntegrityError",
    ):
        return one_line(error, with_type=False)
    if isinstance(error, OSError):
        return error.strerror or str(error)
    if type(error).__module__ == "ZODB.POSException" and "mismatch" in str(error):
        return one_line(error, with_type=False)
    return None
