"""SQLite for RelStorage: no server, the database files in a directory.

check_sqlite_dir() is relstorage-sqlite's read-only check: each SQLite file
RelStorage wrote is opened immutable (no lock, no journal, no -wal or -shm
file created) and checked with SQLite's own integrity_check.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from storages.base import DamagedStorage, StorageError

#: How a damaged SQLite file is repaired; on a copy, the original kept.
SQLITE_REPAIR = "sqlite3 {path} .recover | sqlite3 {path}.recovered"


def check_sqlite_file(path: Path) -> None:
    """Check the SQLite database *path* whole without writing anything:
    DamagedStorage when SQLite finds it malformed or not a database."""
    try:
        connection = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    except sqlite3.Error as e:
        raise StorageError(f"cannot read {path}: {e}") from None
    try:
        rows = connection.execute("PRAGMA integrity_check").fetchall()
    except sqlite3.DatabaseError as e:
        what = str(e).splitlines()[0] if str(e) else type(e).__name__
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


def check_sqlite_dir(data_dir: Path) -> None:
    """Check every SQLite database RelStorage keeps in *data_dir* (none
    there: nothing to check)."""
    if not data_dir.is_dir():
        return
    for path in sorted(data_dir.glob("*.sqlite3")):
        check_sqlite_file(path)
