"""SQLite for RelStorage: no server, the database files in a directory.

relstorage-sqlite and relstorage-sqlite-hp (their factories), and
check_sqlite_dir(), their read-only check: each SQLite file
RelStorage wrote is opened immutable (no lock, no journal, no -wal or -shm
file created) and checked with SQLite's own integrity_check.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from storages.base import DamagedStorage, Shared, StorageError, Store, URIScheme
from storages.errors import one_line
from storages.file import directory_size
from storages.relstorage.factory import RelStorageStore, _RelStorageFactory
from storages.relstorage.options import relstorage_missing

#: How a damaged SQLite file is repaired; on a copy, the original kept.
SQLITE_REPAIR = "sqlite3 {path} .recover | sqlite3 {path}.recovered"

#: The table each file RelStorage keeps in its data_dir holds: a file of
#: that name with tables but not this one is another application's.
RELSTORAGE_TABLES = {"main.sqlite3": "object_state", "oids.sqlite3": "new_oid"}


def check_sqlite_file(path: Path) -> None:
    """Check the SQLite database *path* whole without writing anything:
    DamagedStorage when SQLite finds it malformed or not a database."""
    try:
        connection = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    except sqlite3.Error as e:
        raise StorageError(f"cannot read {path}: {e}") from None
    try:
        rows = connection.execute("PRAGMA integrity_check").fetchall()
        tables = [
            str(name)
            for (name,) in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
            )
        ]
    except sqlite3.DatabaseError as e:
        what = one_line(e, with_type=False)
        raise DamagedStorage(
            str(path), "as SQLite reads it", what, SQLITE_REPAIR.format(path=path)
        ) from None
    finally:
        connection.close()
    if rows != [("ok",)]:
        first = str(rows[0][0]).splitlines()[0] if rows else "no answer"
        raise DamagedStorage(
            str(path),
            f"({len(rows)} problem(s))",
            f"integrity_check: {first}",
            SQLITE_REPAIR.format(path=path),
        )
    expected = RELSTORAGE_TABLES.get(path.name)
    if expected and tables and expected not in tables:
        raise StorageError(
            f"{path} is not a RelStorage database (it holds the tables "
            f"{', '.join(sorted(tables)[:5])}, not {expected}): another "
            "application's file, left as it is"
        )


def check_sqlite_dir(data_dir: Path, must_exist: bool = False) -> None:
    """Check every SQLite database RelStorage keeps in *data_dir* (none
    there: nothing to check).  *must_exist*: the directory must (RelStorage
    makes its files in an existing one: an empty one is a new database)."""
    if data_dir.exists() and not data_dir.is_dir():
        raise StorageError(f"{data_dir} is not a directory (RelStorage's data_dir)")
    if must_exist and not data_dir.is_dir():
        raise StorageError(f"no RelStorage SQLite data directory {data_dir}")
    if not data_dir.is_dir():
        return
    for path in sorted(data_dir.glob("*.sqlite3")):
        check_sqlite_file(path)


class RelStorageSQLiteFactory(_RelStorageFactory):
    name = "relstorage-sqlite"
    description = "RelStorage on SQLite files (sqlite3, no server), history-free"
    backend = "sqlite3"
    uri_schemes = (URIScheme("sqlite", read_only=True),)
    # Several processes share it through SQLite's file locking.
    keeps_directory = True

    def unavailable(self) -> str | None:
        return relstorage_missing()

    @classmethod
    def file_kind(cls, path: Path, head: bytes) -> str | None:
        return "a SQLite database" if head == b"SQLite format 3\0" else None

    @classmethod
    def check_at(
        cls, path: Path, must_exist: bool = False, read_only: bool = False
    ) -> None:
        """*path*: the data_dir a sqlite:// URI or a <sqlite3> section names."""
        check_sqlite_dir(path, must_exist)

    def check_existing(self, directory: Path, recover: bool = False) -> str | None:
        check_sqlite_dir(Path(directory) / "relstorage")
        return None  # SQLite recovers its own journal: nothing for --recover

    def open(self, directory: Path) -> Store:
        data_dir = Path(directory) / "relstorage"
        store = RelStorageStore(
            self.name,
            self._open(data_dir=data_dir),
            self.options,
            size=lambda: directory_size(data_dir, ()),
        )
        store.info = {"backend": self.backend, "history": self.history}
        return store

    @contextlib.contextmanager
    def _share(self, directory: Path) -> Iterator[Shared]:
        """SQLite files in *directory*, shared through SQLite's locking; no
        server: the clients do the storage's work."""
        from storages.relstorage.uri import relstorage_uri

        data_dir = directory / "relstorage"
        data_dir.mkdir(parents=True, exist_ok=True)
        yield Shared(
            relstorage_uri(
                self.backend, self.keep_history, "sqlite3", data_dir=data_dir
            )
        )


class RelStorageSQLiteHPFactory(RelStorageSQLiteFactory):
    name = "relstorage-sqlite-hp"
    description = "RelStorage on SQLite files (sqlite3, no server), history-preserving"
    keep_history = True


#: This backend's storages, history-free first (backends.py orders them).
FACTORIES = (RelStorageSQLiteFactory, RelStorageSQLiteHPFactory)
